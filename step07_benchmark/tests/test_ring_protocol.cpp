// The K/V ring of v6's warp-specialised kernel (kernels/fast/fa2_hopper.cuh), reduced to its
// protocol and checked on the host over every interleaving. A producer fills stages with tiles
// 0, 1, 2, ... (tile r in stage r % STAGES); warpgroups wait for a tile on its stage's `full`
// barrier, read it, and hand the stage back on its `empty` barrier. An mbarrier counts arrivals
// without knowing which round they belong to, and a waiter names a phase by its parity only, so
// the protocol is safe only if every arrival lands in the phase it is meant for. With a causal
// mask a warpgroup skips the tiles past its rows, and must still release them: GUIDE.md's
// section 17 tells how releasing them before they had landed let the producer overwrite a stage
// that a slower warpgroup was still reading. The model finds that interleaving, and finds none
// once a skipped tile is released only after it has landed.
//
// The model keeps one `full` and one `empty` per stage (the kernel has one of each for K and one
// for V; each pair follows the same rules) and one arrival per warpgroup (the kernel: per warp).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace {

// An mbarrier: `expected` arrivals complete a phase; a wait for parity P passes once the latest
// phase of parity P has completed, i.e. while the number of completed phases has the other parity.
struct Barrier {
  int expected = 1;
  int pending = 1;
  int completed = 0;

  void arrive() {
    if (--pending == 0) {
      ++completed;
      pending = expected;
    }
  }
  bool passed(int parity) const { return (completed & 1) != parity; }
};

// v[i] with an int index (the model counts in ints).
template <class V>
auto& at(V& v, int i) {
  return v[static_cast<std::size_t>(i)];
}

enum class SkipRelease { at_once, after_landing };

struct Ring {
  int stages = 2;
  int tiles = 8;          // key tiles of the query tile
  std::vector<int> seen;  // per warpgroup: it computes tiles 0 .. seen - 1, skips the rest
  SkipRelease skip = SkipRelease::after_landing;
};

// Where everyone is. A warpgroup's step 2j waits for tile j (or skips it), step 2j + 1 holds
// tile j in its stage and reads it, step 2 * tiles is the end.
struct State {
  int produced = 0;       // tiles the producer has loaded
  std::vector<int> step;  // per warpgroup
  std::vector<Barrier> full, empty;
  std::vector<int> holds;  // per stage: the tile in it (-1: none yet)

  std::vector<int> key() const {
    std::vector<int> k{produced};
    k.insert(k.end(), step.begin(), step.end());
    for (const auto* bars : {&full, &empty})
      for (const Barrier& b : *bars) k.insert(k.end(), {b.pending, b.completed});
    k.insert(k.end(), holds.begin(), holds.end());
    return k;
  }
};

struct Outcome {
  bool overwrite = false;   // the producer loaded into a stage a warpgroup was still reading
  bool wrong_tile = false;  // a warpgroup's wait passed while its stage held another tile
  bool deadlock = false;    // nobody could move before everyone had finished
  std::size_t states = 0;
};

// Every state reachable from the start, each move one agent's next step.
Outcome explore(const Ring& ring) {
  const int S = ring.stages, T = ring.tiles, W = static_cast<int>(ring.seen.size());
  State start;
  start.step.assign(ring.seen.size(), 0);
  start.full.assign(static_cast<std::size_t>(S), Barrier{1, 1, 0});
  start.empty.assign(static_cast<std::size_t>(S), Barrier{W, W, 0});
  start.holds.assign(static_cast<std::size_t>(S), -1);

  Outcome out;
  std::set<std::vector<int>> visited;
  std::vector<State> todo{start};
  while (!todo.empty()) {
    State st = todo.back();
    todo.pop_back();
    if (!visited.insert(st.key()).second) continue;
    bool moved = false;
    const auto go = [&](State next) {
      moved = true;
      todo.push_back(std::move(next));
    };

    // The producer: tile r into stage r % S once the stage's previous round has been released.
    if (st.produced < T) {
      const int r = st.produced, s = r % S;
      if (r < S || at(st.empty, s).passed((r / S - 1) & 1)) {
        State next = st;
        for (int w = 0; w < W; ++w) {
          const int j = at(st.step, w) / 2;
          if (at(st.step, w) % 2 == 1 && j % S == s) out.overwrite = true;
        }
        at(next.holds, s) = r;
        at(next.full, s).arrive();
        ++next.produced;
        go(next);
      }
    }
    // The warpgroups.
    for (int w = 0; w < W; ++w) {
      const int step = at(st.step, w);
      if (step == 2 * T) continue;
      const int j = step / 2, s = j % S;
      const bool landed = at(st.full, s).passed((j / S) & 1);
      State next = st;
      if (step % 2 == 1) {  // done reading tile j: hand the stage back
        at(next.empty, s).arrive();
        at(next.step, w) = step + 1;
        go(next);
      } else if (j < at(ring.seen, w)) {  // a tile it computes: wait for it, then read it
        if (!landed) continue;
        if (at(st.holds, s) != j) out.wrong_tile = true;
        at(next.step, w) = step + 1;
        go(next);
      } else {  // a tile past its rows: release it, at once or once it has landed
        if (ring.skip == SkipRelease::after_landing && !landed) continue;
        at(next.empty, s).arrive();
        at(next.step, w) = step + 2;
        go(next);
      }
    }
    const bool finished =
        st.produced == T && std::all_of(st.step.begin(), st.step.end(), [&](int s) { return s == 2 * T; });
    if (!moved && !finished) out.deadlock = true;
  }
  out.states = visited.size();
  return out;
}

std::string describe(const Ring& r) {
  std::string seen;
  for (int s : r.seen) seen += (seen.empty() ? "" : ", ") + std::to_string(s);
  return std::to_string(r.stages) + " stages, " + std::to_string(r.tiles) + " tiles, warpgroups seeing {" + seen +
         "}, skipped tiles released " + (r.skip == SkipRelease::at_once ? "at once" : "after landing");
}

}  // namespace

TEST_SUITE("variants") {
  TEST_CASE("v6's K/V ring: a skipped tile released before it lands lets the producer overwrite a stage in use") {
    // Warpgroup 0 skips the last tile, or all but the first; warpgroup 1 sees them all. One
    // skipped tile is enough: released at once, warpgroup 0's arrival for it can land in the
    // phase of the tile STAGES earlier in that stage, which warpgroup 1 may still be reading.
    for (int stages : {2, 3, 4}) {
      const int tiles = 2 * stages + 2;
      for (int first_skipped : {tiles - 1, 1}) {
        const Ring ring{stages, tiles, {first_skipped, tiles}, SkipRelease::at_once};
        INFO(describe(ring));
        const Outcome o = explore(ring);
        CHECK(o.overwrite);
      }
    }
  }

  TEST_CASE("v6's K/V ring: released only after landing, no interleaving overwrites a stage in use") {
    for (int stages : {2, 3, 4}) {
      for (const std::vector<int>& seen :
           std::vector<std::vector<int>>{{1, 9}, {9, 1}, {3, 9}, {9, 9}, {5, 7}, {2, 5, 9}, {1, 1}}) {
        const Ring ring{stages, 9, seen, SkipRelease::after_landing};
        INFO(describe(ring));
        const Outcome o = explore(ring);
        CHECK_FALSE(o.overwrite);
        CHECK_FALSE(o.wrong_tile);
        CHECK_FALSE(o.deadlock);
        CHECK(o.states > 9);
      }
    }
  }

  TEST_CASE("v6's K/V ring: when no warpgroup skips, releasing at once and after landing are the same protocol") {
    for (int stages : {2, 4}) {
      const Ring ring{stages, 9, {9, 9}, SkipRelease::at_once};
      INFO(describe(ring));
      const Outcome o = explore(ring);
      CHECK_FALSE(o.overwrite);
      CHECK_FALSE(o.wrong_tile);
      CHECK_FALSE(o.deadlock);
    }
  }
}
