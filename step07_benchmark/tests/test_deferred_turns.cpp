// Deterministic dQ in v6b with the dQ writer (kernels/sm90/backward_dq_writer.cuh,
// kernels/device/dq_turns.cuh), reduced to its protocol between blocks and checked on the host
// over every interleaving: which block moves, when each reduce-add lands, and when the GPU starts
// the next block once one has ended.
//
// The blocks are the key tiles n = 0 .. T-1 of one head, started from the last (the deterministic
// grid) with at most `resident` of them on the GPU at a time. Each walks its query tiles, all of
// them, or causal (64-query and 64-key tiles) those m >= n. At each step its writer adds two
// parts, one per computing warpgroup, the higher keys' first: split by keys both go to the same
// elements, and the second's turn comes after the first's; split by columns they are disjoint
// and both take the same turn. A counter per query tile counts the parts whose adds have landed
// and been passed on; a part waits until it has counted every part before it in the order (the
// last key tile first). A reduce-add lands at any time after it is issued; the writer waits for
// landings the way bulk_wait<N> does (all but the N latest).
//
// Without deferral a part's turn passes as soon as its adds have landed. Deferred, a step's turns
// pass at the end of the next step, once at most that step's adds are in flight; split by keys
// the writer first lands and passes what it holds when the second part's turn would need it.
// Joint (split by columns or queries only), the writer waits for the step's turn once, issues
// both parts, and passes the turn for both once they have landed.
// The model flags adds that land out of the order (the sums would differ from run to run) and a
// state where nothing can move before every block is done (a deadlock). It also notes whether a
// writer ever waits for a turn while it still holds one of its own: deferred turns do, which is
// what chains the blocks' turns one after the other (backward_dq_writer.cuh).
#include <doctest/doctest.h>

#include "step07_benchmark/kernels/device/tile_scheduler.hpp"  // grouped_block

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace {

struct Turns {
  int key_tiles = 3, query_tiles = 3, resident = 3;
  bool causal = false;
  bool by_keys = true;  // the two parts of a step go to the same elements (head dim 64)
  bool defer = true;
  bool joint = false;  // split by columns: one wait and one pass for both parts of a step
  // Planted bugs.
  bool no_flush = false;        // split by keys, the second part waits without passing the first's
  bool early_pass = false;      // turns pass without waiting for their adds to land
  bool ascending_grid = false;  // the blocks start from key tile 0 instead of the last
};

// A writer's place: step t, part p (0: the higher keys' warpgroup, 1: the other), and where in the
// part it is; or at the end of a step, or at the end of the walk.
enum Phase { kFlush, kWait, kIssue, kLandAndPass, kStepEnd, kWalkEnd, kDone };

struct Block {
  int started = 0;  // 0: not yet on the GPU, 1: running, 2: ended
  int step = 0, part = 0, phase = kFlush;
  int held = -1, held_parts = 0;  // deferred: the previous step's query tile and its parts
  int now = -1, now_parts = 0;    // this step's
  int issued = 0;                 // reduce-add groups issued so far
  std::vector<int> in_flight;     // issued, not landed: (issue index) * 2 q + 2 m + part, oldest first
};

struct State {
  std::vector<Block> blocks;
  std::vector<int> counter;  // per query tile: parts passed on
  std::vector<int> landed;   // per query tile and order stream: adds landed so far
  std::vector<int> key() const {
    std::vector<int> k(counter);
    k.insert(k.end(), landed.begin(), landed.end());
    for (const Block& b : blocks) {
      for (int x : {b.started, b.step, b.part, b.phase, b.held, b.held_parts, b.now, b.now_parts, b.issued}) {
        k.push_back(x);
      }
      k.push_back(static_cast<int>(b.in_flight.size()));
      k.insert(k.end(), b.in_flight.begin(), b.in_flight.end());
    }
    return k;
  }
};

struct Outcome {
  std::string error;  // the first violation, empty when none
  long states = 0;
  bool waited_holding = false;  // some writer waited for a turn while it held one
};

class Explorer {
 public:
  explicit Explorer(const Turns& t) : t_(t) {}

  Outcome run() {
    State s;
    s.blocks.resize(static_cast<std::size_t>(t_.key_tiles));
    s.counter.assign(static_cast<std::size_t>(t_.query_tiles), 0);
    s.landed.assign(static_cast<std::size_t>(2 * t_.query_tiles), 0);
    visit(s);
    return {error_, static_cast<long>(seen_.size()), waited_holding_};
  }

 private:
  const Turns& t_;
  std::set<std::vector<int>> seen_;
  std::string error_;
  mutable bool waited_holding_ = false;

  // Block n's walk: the query tiles it meets, in order.
  std::vector<int> walk(int n) const {
    std::vector<int> w;
    for (int m = t_.causal ? n : 0; m < t_.query_tiles; ++m) w.push_back(m);
    return w;
  }
  // The last key tile in query tile m's order is the first to add.
  int last_key_tile(int m) const { return t_.causal ? std::min(m, t_.key_tiles - 1) : t_.key_tiles - 1; }
  // The parts counted before part p of key tile n may add to query tile m.
  int turn(int n, int p, int m) const { return 2 * (last_key_tile(m) - n) + (t_.by_keys ? p : 0); }
  // Split by keys every part of a query tile is one stream of adds to the same elements; split by
  // columns each warpgroup's parts are a stream of their own. The position an add must land at:
  int position(int n, int p, int m) const { return t_.by_keys ? 2 * (last_key_tile(m) - n) + p : last_key_tile(m) - n; }
  int stream(int m, int p) const { return t_.by_keys ? 2 * m : 2 * m + p; }
  // The order the GPU starts blocks in.
  int launched_at(int i) const { return t_.ascending_grid ? i : t_.key_tiles - 1 - i; }

  bool done(const State& s) const {
    for (const Block& b : s.blocks) {
      if (b.started != 2) return false;
    }
    return true;
  }

  void visit(const State& s) {
    if (!error_.empty() || !seen_.insert(s.key()).second) return;
    if (done(s)) return;
    bool moved = false;
    const auto try_move = [&](auto&& move) {
      State n = s;
      if (move(n)) {
        moved = true;
        visit(n);
      }
    };
    try_move([&](State& n) { return start_next(n); });
    for (int b = 0; b < t_.key_tiles; ++b) {
      try_move([&](State& n) { return step_writer(n, b); });
      for (std::size_t i = 0; i < s.blocks[static_cast<std::size_t>(b)].in_flight.size(); ++i) {
        try_move([&](State& n) { return land(n, b, i); });
      }
    }
    if (!moved && error_.empty()) error_ = "deadlock";
  }

  bool start_next(State& s) const {
    int running = 0;
    for (const Block& b : s.blocks) running += b.started == 1;
    if (running >= t_.resident) return false;
    for (int i = 0; i < t_.key_tiles; ++i) {
      Block& b = s.blocks[static_cast<std::size_t>(launched_at(i))];
      if (b.started == 0) {
        b.started = 1;
        return true;
      }
    }
    return false;
  }

  // Add i in flight of block n lands; it must be the next of its stream.
  bool land(State& s, int n, std::size_t i) {
    Block& b = s.blocks[static_cast<std::size_t>(n)];
    const int code = b.in_flight[i] % (2 * t_.query_tiles), m = code / 2, p = code % 2;
    int& count = s.landed[static_cast<std::size_t>(stream(m, p))];
    if (count != position(n, p, m)) {
      error_ = "adds landed out of order";
      return true;
    }
    ++count;
    b.in_flight.erase(b.in_flight.begin() + static_cast<std::ptrdiff_t>(i));
    return true;
  }

  static void pass(State& s, int& tile, int& parts) {
    if (tile >= 0) s.counter[static_cast<std::size_t>(tile)] += parts;
    tile = -1;
    parts = 0;
  }

  // One move of block n's writer; false when it cannot move.
  bool step_writer(State& s, int n) const {
    Block& b = s.blocks[static_cast<std::size_t>(n)];
    if (b.started != 1) return false;
    const std::vector<int> w = walk(n);
    const auto in_flight = static_cast<int>(b.in_flight.size());
    if (b.phase == kWalkEnd || (b.phase == kFlush && b.step == static_cast<int>(w.size()))) {
      if (in_flight > 0) return false;  // bulk_wait<0>
      pass(s, b.held, b.held_parts);
      b.phase = kDone;
      b.started = 2;
      return true;
    }
    const int m = w[static_cast<std::size_t>(b.step)];
    switch (b.phase) {
      case kFlush:
        if (t_.defer && t_.by_keys && !t_.no_flush && b.now >= 0) {
          if (in_flight > 0 && !t_.early_pass) return false;  // bulk_wait<0>
          pass(s, b.held, b.held_parts);
          pass(s, b.now, b.now_parts);
        }
        b.phase = kWait;
        return true;
      case kWait:
        // Joint, the second part's turn is the first's, already waited for.
        if (!(t_.joint && b.part == 1) && s.counter[static_cast<std::size_t>(m)] < turn(n, b.part, m)) {
          if (b.held >= 0 || b.now >= 0) waited_holding_ = true;
          return false;
        }
        b.phase = kIssue;
        return true;
      case kIssue:
        b.in_flight.push_back(b.issued++ * 2 * t_.query_tiles + 2 * m + b.part);
        if (t_.joint) {
          b.now = m;
          ++b.now_parts;
          if (b.part == 0) {
            b.part = 1;
            b.phase = kFlush;
          } else {
            b.phase = kLandAndPass;
          }
        } else if (t_.defer) {
          b.now = m;
          ++b.now_parts;
          next_part(b, w);
        } else {
          b.phase = kLandAndPass;
        }
        return true;
      case kLandAndPass: {
        if (in_flight > 0 && !t_.early_pass) return false;  // bulk_wait<0>, then the turn passes
        if (t_.joint) {
          pass(s, b.now, b.now_parts);
          b.part = 1;  // next_part moves on to the next step
          next_part(b, w);
          return true;
        }
        int tile = m, parts = 1;
        pass(s, tile, parts);
        next_part(b, w);
        return true;
      }
      case kStepEnd: {
        // bulk_wait<1> split by keys (only the second part may be in flight), else <2>: every
        // group but the latest one or two has landed.
        if (!t_.early_pass && older_in_flight(b, t_.by_keys ? 1 : 2)) return false;
        pass(s, b.held, b.held_parts);
        b.held = b.now;
        b.held_parts = b.now_parts;
        b.now = -1;
        b.now_parts = 0;
        b.phase = kFlush;
        ++b.step;
        return true;
      }
      default:
        return false;
    }
  }

  // Whether a group issued before the latest `latest` is still in flight.
  bool older_in_flight(const Block& b, int latest) const {
    for (int code : b.in_flight) {
      if (code / (2 * t_.query_tiles) < b.issued - latest) return true;
    }
    return false;
  }

  void next_part(Block& b, const std::vector<int>& w) const {
    if (++b.part < 2) {
      b.phase = kFlush;
      return;
    }
    b.part = 0;
    if (t_.defer) {
      b.phase = kStepEnd;
      return;
    }
    ++b.step;
    b.phase = b.step == static_cast<int>(w.size()) ? kWalkEnd : kFlush;
  }
};

// Joint turns as the kernels have them: split by columns (or queries), and not deferred.
Turns joint_turns() {
  Turns t;
  t.by_keys = false;
  t.defer = false;
  t.joint = true;
  return t;
}

// The launches the start orders are checked on: 1, 3 or 8 batch elements (slots) of 1 to 32 key
// tiles, taken 1, 2, 3 or all at a time (the last group smaller where it does not divide them).
struct Launch {
  int slots, tiles, group;
};
std::vector<Launch> launches() {
  std::vector<Launch> all;
  for (const int slots : {1, 3, 8}) {
    for (const int tiles : {1, 2, 5, 32}) {
      for (const int group : {1, 2, 3, slots}) {
        if (group <= slots) all.push_back({slots, tiles, group});
      }
    }
  }
  return all;
}

// The places of a launch's blocks in the order grouped_block gives them, each (batch element, key
// tile) once: started[slot * tiles + key tile] is the block's index in that order.
std::vector<int> start_order(int slots, int tiles, int group, bool last_first) {
  std::vector<int> started(static_cast<std::size_t>(slots * tiles), -1);
  for (int i = 0; i < slots * tiles; ++i) {
    const fa2::flash::BlockPlace at = fa2::flash::grouped_block(i, tiles, slots, group, last_first);
    REQUIRE(at.key_tile >= 0);
    REQUIRE(at.key_tile < tiles);
    REQUIRE(at.kv_slot >= 0);
    REQUIRE(at.kv_slot < slots);
    int& when = started[static_cast<std::size_t>(at.kv_slot * tiles + at.key_tile)];
    CHECK(when == -1);  // every (batch element, key tile) once
    when = i;
  }
  return started;
}

}  // namespace

TEST_SUITE("variants") {
  TEST_CASE("v6b's deterministic dQ turns, deferred or not: adds land in the fixed order and never deadlock") {
    for (const bool defer : {false, true}) {
      for (const bool by_keys : {true, false}) {
        for (const bool causal : {false, true}) {
          for (const int resident : {1, 2, 4}) {
            Turns t;
            t.key_tiles = 4;
            t.defer = defer;
            t.by_keys = by_keys;
            t.causal = causal;
            t.resident = resident;
            const Outcome o = Explorer(t).run();
            const std::string what = std::string(defer ? "deferred" : "passed at once") +
                                     (by_keys ? ", split by keys" : ", split by columns") + (causal ? ", causal" : "") +
                                     ", " + std::to_string(resident) + " resident: " + std::to_string(o.states) +
                                     " states";
            INFO(what);
            CHECK_MESSAGE(o.error.empty(), o.error);
            CHECK(o.states > 10);
          }
        }
      }
    }
  }

  TEST_CASE("v6b's joint dQ turns: in order, no deadlock, and no writer waits while it holds a turn") {
    for (const bool causal : {false, true}) {
      for (const int resident : {1, 2, 4}) {
        Turns t = joint_turns();
        t.key_tiles = 4;
        t.causal = causal;
        t.resident = resident;
        const Outcome o = Explorer(t).run();
        INFO("joint" << (causal ? ", causal" : "") << ", " << resident << " resident: " << o.states << " states");
        CHECK_MESSAGE(o.error.empty(), o.error);
        CHECK(o.states > 10);
        CHECK_FALSE(o.waited_holding);
      }
    }
    // Deferred, a writer waits for the next step's turn while it holds this one's: the turns of
    // blocks that run side by side pass one after the other. Passed at once, it never holds one.
    for (const bool by_keys : {true, false}) {
      Turns deferred;
      deferred.by_keys = by_keys;
      deferred.causal = true;
      deferred.resident = 2;
      CHECK(Explorer(deferred).run().waited_holding);
      Turns at_once = deferred;
      at_once.defer = false;
      CHECK_FALSE(Explorer(at_once).run().waited_holding);
    }
    // A joint turn passed before both parts have landed lets the next key tile's adds land first.
    Turns early = joint_turns();
    early.early_pass = true;
    CHECK(Explorer(early).run().error == "adds landed out of order");
  }

  TEST_CASE("v6b's deterministic blocks start after every block whose turn comes first, in groups of heads too") {
    // A block's turns at a query tile come after those of the higher key tiles of its batch
    // element: each of those must start before it, in the grid's order (group = slots: block
    // i = y slots + x takes key tile tiles - 1 - y of element x), head by head (group 1) and in
    // groups of every size, the last one smaller where it does not divide the slots.
    for (const auto [slots, tiles, group] : launches()) {
      INFO("slots " << slots << ", tiles " << tiles << ", group " << group);
      const std::vector<int> started = start_order(slots, tiles, group, true);
      for (int s = 0; s < slots; ++s) {
        for (int n = 0; n + 1 < tiles; ++n) {
          CHECK(started[static_cast<std::size_t>(s * tiles + n + 1)] <
                started[static_cast<std::size_t>(s * tiles + n)]);
        }
      }
      if (group == slots) {  // the grid's own order
        for (int i = 0; i < slots * tiles; ++i) {
          CHECK(started[static_cast<std::size_t>(i % slots * tiles + tiles - 1 - i / slots)] == i);
        }
      }
    }
  }

  TEST_CASE("v6b's default blocks in groups of heads: a group's blocks together, each head's from its first key tile") {
    // No turns to keep: the order only has to cover the grid once, start a group's blocks before the
    // next group's, and a head's key tiles from the first (with the causal mask, the longest walk).
    for (const auto [slots, tiles, group] : launches()) {
      INFO("slots " << slots << ", tiles " << tiles << ", group " << group);
      const std::vector<int> started = start_order(slots, tiles, group, false);
      for (int s = 0; s < slots; ++s) {
        const int first = s / group * group;  // its group's first element
        const int size = std::min(group, slots - first);
        for (int n = 0; n < tiles; ++n) {
          const int when = started[static_cast<std::size_t>(s * tiles + n)];
          CHECK(when >= first * tiles);  // inside its group's blocks
          CHECK(when < (first + size) * tiles);
          CHECK(when == first * tiles + n * size + (s - first));  // key tile by key tile, first first
        }
      }
    }
  }

  TEST_CASE("v6b's deterministic dQ turns: the model finds the three ways to break them") {
    // Split by keys, the second part's turn needs the first's, which the writer itself holds.
    Turns no_flush;
    no_flush.no_flush = true;
    CHECK(Explorer(no_flush).run().error == "deadlock");
    // A turn passed while its adds may still be in flight lets the next part's land first.
    for (const bool defer : {false, true}) {
      for (const bool by_keys : {true, false}) {
        Turns early;
        early.early_pass = true;
        early.defer = defer;
        early.by_keys = by_keys;
        CHECK(Explorer(early).run().error == "adds landed out of order");
      }
    }
    // Blocks that start from key tile 0 wait for key tiles that cannot start while they hold the GPU.
    Turns ascending;
    ascending.ascending_grid = true;
    ascending.resident = 2;
    CHECK(Explorer(ascending).run().error == "deadlock");
  }
}
