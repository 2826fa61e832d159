// The K/V ring of v6's warp-specialised kernel (kernels/sm90/), reduced to its protocol and
// checked on the host over every interleaving. A producer fills stages with tiles 0, 1, 2, ...;
// warpgroups wait for a tile on its stage's `full` barrier, read it, and hand the stage back on
// its `empty` barrier. Producer and warpgroups place each tile with the kernel's own
// PipelineState (sm90/pipeline.hpp: its stage, the phase a wait names, whether the producer
// must wait for a release and of which phase), and a causal warpgroup's share of the tiles is the
// kernel's causal_key_tiles (tile_scheduler.hpp). An mbarrier counts arrivals without knowing
// which round they belong to, and a waiter names a phase by its parity only, so the protocol is
// safe only if every arrival lands in the phase it is meant for. With a causal mask a warpgroup
// skips the tiles past its rows, and must still release them: step07's APPENDIX.md (D.4) tells how
// releasing them before they had landed let the producer overwrite a stage that a slower
// warpgroup was still reading. The model finds that interleaving, and finds none once a skipped
// tile is released only after it has landed (the order of sm90/consumer.cuh's last branch).
//
// The model keeps one `full` and one `empty` per stage (the kernel has one of each for K and one
// for V; each pair follows the same rules) and one arrival per warpgroup (the kernel: per warp).
// A second model walks the warpgroups' turns (named_barriers.hpp's rules, as consumer.cuh takes
// them) for two and three warpgroups; others check the tiles and items the schedules hand out.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/window.hpp"
#include "step07_benchmark/kernels/device/tile_scheduler.hpp"
#include "step07_benchmark/kernels/sm90/named_barriers.hpp"
#include "step07_benchmark/kernels/sm90/pipeline.hpp"

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

// Every state reachable from the start, each move one agent's next step. Ring tile r is
// PipelineState<STAGES>{r}, for the producer and the warpgroups alike.
template <int STAGES>
Outcome explore(const Ring& ring) {
  using State_ = fa2::flash::PipelineState<STAGES>;
  const int T = ring.tiles, W = static_cast<int>(ring.seen.size());
  State start;
  start.step.assign(ring.seen.size(), 0);
  start.full.assign(static_cast<std::size_t>(STAGES), Barrier{1, 1, 0});
  start.empty.assign(static_cast<std::size_t>(STAGES), Barrier{W, W, 0});
  start.holds.assign(static_cast<std::size_t>(STAGES), -1);

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

    // The producer (sm90/producer.cuh): tile r into its stage once, if the stage held a tile
    // before, that tile's release (the phase before this round's) has completed.
    if (st.produced < T) {
      const State_ tile{st.produced};
      const int s = tile.stage();
      if (!tile.refills() || at(st.empty, s).passed(static_cast<int>(tile.release_phase()))) {
        State next = st;
        for (int w = 0; w < W; ++w) {
          const State_ read{at(st.step, w) / 2};
          if (at(st.step, w) % 2 == 1 && read.stage() == s) out.overwrite = true;
        }
        at(next.holds, s) = tile.count;
        at(next.full, s).arrive();
        ++next.produced;
        go(next);
      }
    }
    // The warpgroups (sm90/consumer.cuh).
    for (int w = 0; w < W; ++w) {
      const int step = at(st.step, w);
      if (step == 2 * T) continue;
      const State_ tile{step / 2};
      const int j = tile.count, s = tile.stage();
      const bool landed = at(st.full, s).passed(static_cast<int>(tile.phase()));
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
        st.produced == T && std::all_of(st.step.begin(), st.step.end(), [&](int x) { return x == 2 * T; });
    if (!moved && !finished) out.deadlock = true;
  }
  out.states = visited.size();
  return out;
}

// The kernels' rings have 2, 3 or 4 stages (HopperConfig::STAGES).
Outcome explore(const Ring& ring) {
  switch (ring.stages) {
    case 2:
      return explore<2>(ring);
    case 3:
      return explore<3>(ring);
    case 4:
      return explore<4>(ring);
  }
  throw std::invalid_argument("the model takes 2, 3 or 4 stages, not " + std::to_string(ring.stages));
}

// What a causal block of `warpgroups` warpgroups of 64 rows gives each of them: the key tiles
// of block_n keys up to its last row (the kernel's n_seen), for the query tile from q0 with
// n_tiles key tiles.
std::vector<int> causal_seen(int q0, int warpgroups, int block_n, int n_tiles) {
  std::vector<int> seen;
  for (int wg = 0; wg < warpgroups; ++wg) {
    seen.push_back(fa2::flash::causal_key_tiles(q0 + 64 * wg + 63, block_n, n_tiles));
  }
  return seen;
}

std::string describe(const Ring& r) {
  std::string seen;
  for (int s : r.seen) seen += (seen.empty() ? "" : ", ") + std::to_string(s);
  return std::to_string(r.stages) + " stages, " + std::to_string(r.tiles) + " tiles, warpgroups seeing {" + seen +
         "}, skipped tiles released " + (r.skip == SkipRelease::at_once ? "at once" : "after landing");
}

// ---- the warpgroups' turns (consumer.cuh, named_barriers.hpp) ----------------------------------
// Each warpgroup runs, per work item: (the last one) open warpgroup 0's turn barrier; then for
// each of the item's tiles: wait on its own turn barrier, issue its products, pass to the next
// (unless passes_turn says not). A named barrier of two warpgroups completes a phase once two
// arrivals are in (a wait is an arrival that blocks until its phase completes). Every
// interleaving is walked; the issues must come in round-robin order and nobody may block forever.
struct TurnRules {
  std::function<bool(int, int)> opens_first = [](int wg, int wgs) { return fa2::flash::opens_first_turn(wg, wgs); };
  std::function<bool(int, int, int, int)> passes = [](int wg, int wgs, int j, int n) {
    return fa2::flash::passes_turn(wg, wgs, j, n);
  };
  std::function<int(int, int)> next = [](int wg, int wgs) { return fa2::flash::next_turn_barrier(wg, wgs); };
};

enum class TurnOp { arrive, wait, issue };
struct TurnStep {
  TurnOp op;
  int barrier = 0;  // arrive, wait
  int item = 0, tile = 0;
};

struct TurnOutcome {
  bool deadlock = false, out_of_order = false;
  long states = 0;
};

TurnOutcome explore_turns(int wgs, const std::vector<int>& tiles_per_item, const TurnRules& rules) {
  std::vector<std::vector<TurnStep>> program(static_cast<std::size_t>(wgs));
  for (int wg = 0; wg < wgs; ++wg) {
    auto& prog = program[static_cast<std::size_t>(wg)];
    for (int item = 0; item < static_cast<int>(tiles_per_item.size()); ++item) {
      const int n = tiles_per_item[static_cast<std::size_t>(item)];
      if (rules.opens_first(wg, wgs)) prog.push_back({TurnOp::arrive, fa2::flash::turn_barrier(0)});
      for (int j = 0; j < n; ++j) {
        prog.push_back({TurnOp::wait, fa2::flash::turn_barrier(wg)});
        prog.push_back({TurnOp::issue, 0, item, j});
        if (rules.passes(wg, wgs, j, n)) prog.push_back({TurnOp::arrive, rules.next(wg, wgs)});
      }
    }
  }
  // The expected order of issues: item by item, tile by tile, warpgroup 0 first.
  struct TurnState {
    std::vector<int> pc, waiting;                 // waiting: the phase a blocked wait needs completed, or -1
    std::map<int, std::pair<int, int>> barriers;  // id -> (arrivals in the phase, completed phases)
    int issued = 0;
    bool operator<(const TurnState& o) const {
      return std::tie(pc, waiting, barriers, issued) < std::tie(o.pc, o.waiting, o.barriers, o.issued);
    }
  };
  TurnOutcome out;
  std::set<TurnState> seen;
  const auto arrive = [](TurnState& st, int id) {
    auto& [count, phases] = st.barriers[id];
    if (++count == 2) count = 0, ++phases;
    return phases;
  };
  std::function<void(const TurnState&)> visit = [&](const TurnState& st) {
    if (out.deadlock || out.out_of_order || !seen.insert(st).second) return;
    ++out.states;
    bool done = true, moved = false;
    for (int wg = 0; wg < wgs; ++wg) {
      const auto w = static_cast<std::size_t>(wg);
      if (st.pc[w] == static_cast<int>(program[w].size())) continue;
      done = false;
      TurnState next = st;
      if (st.waiting[w] >= 0) {  // blocked until its phase completes
        const auto it = st.barriers.find(program[w][static_cast<std::size_t>(st.pc[w])].barrier);
        if (it == st.barriers.end() || it->second.second <= st.waiting[w]) continue;
        next.waiting[w] = -1, ++next.pc[w];
      } else {
        const TurnStep& step = program[w][static_cast<std::size_t>(st.pc[w])];
        if (step.op == TurnOp::arrive) {
          arrive(next, step.barrier);
          ++next.pc[w];
        } else if (step.op == TurnOp::wait) {
          const int before = next.barriers[step.barrier].second;
          arrive(next, step.barrier);
          next.waiting[w] = before;  // released once phase `before` has completed
        } else {
          int expected_item = 0, expected = next.issued;
          while (expected >= tiles_per_item[static_cast<std::size_t>(expected_item)] * wgs) {
            expected -= tiles_per_item[static_cast<std::size_t>(expected_item)] * wgs;
            ++expected_item;
          }
          if (step.item != expected_item || step.tile != expected / wgs || wg != expected % wgs) {
            out.out_of_order = true;
          }
          ++next.issued, ++next.pc[w];
        }
      }
      moved = true;
      visit(next);
    }
    if (!done && !moved) out.deadlock = true;
  };
  TurnState start;
  start.pc.assign(static_cast<std::size_t>(wgs), 0);
  start.waiting.assign(static_cast<std::size_t>(wgs), -1);
  visit(start);
  return out;
}

}  // namespace

TEST_SUITE("variants") {
  TEST_CASE("v6's PipelineState: tile r sits in stage r % STAGES and waits for the parity of its round") {
    using fa2::flash::PipelineState;
    constexpr PipelineState<3> first{0}, r7{7};
    static_assert(first.stage() == 0 && first.phase() == 0 && !first.refills());
    static_assert(r7.stage() == 1 && r7.phase() == 0 && r7.refills() && r7.release_phase() == 1);
    for (int r = 0; r < 40; ++r) {
      const PipelineState<4> s{r};
      CHECK(s.stage() == r % 4);
      CHECK(s.phase() == static_cast<unsigned>((r / 4) % 2));
      CHECK(s.refills() == (r >= 4));
      // The release the producer waits for is that of tile r - 4, in the same stage one round before.
      if (s.refills()) CHECK(s.release_phase() == (s + -4).phase());
      CHECK((PipelineState<4>{} + r).count == r);
    }
    // Q is a ring of one stage: item k waits for phase k % 2, and for item k - 1's release.
    CHECK(PipelineState<1>{5}.phase() == 1u);
    CHECK(PipelineState<1>{5}.release_phase() == 0u);
    CHECK_FALSE(PipelineState<1>{0}.refills());
  }

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

  TEST_CASE("v6's K/V ring: the kernel's causal shares of a query tile, released after landing, are safe") {
    // Query tiles on the diagonal of the kernel's causal configurations (2 warpgroups on 64-key
    // tiles, 3 on 128 and on 64), each warpgroup skipping what causal_key_tiles leaves it.
    struct Case {
      int warpgroups, block_n, q0;
    };
    for (const Case& c : {Case{2, 64, 384}, Case{3, 128, 384}, Case{3, 64, 192}}) {
      const int n_keys = c.q0 + 64 * c.warpgroups;  // N_KEYS = N_QUERIES, the query tile the last
      const int n_tiles = fa2::flash::key_tiles<true>(n_keys, c.block_n, c.q0, 64 * c.warpgroups, n_keys);
      const std::vector<int> seen = causal_seen(c.q0, c.warpgroups, c.block_n, n_tiles);
      REQUIRE(*std::min_element(seen.begin(), seen.end()) < n_tiles);  // some warpgroup skips a tile
      for (int stages : {2, 3, 4}) {
        const Ring safe{stages, n_tiles, seen, SkipRelease::after_landing};
        INFO(describe(safe));
        const Outcome o = explore(safe);
        CHECK_FALSE(o.overwrite);
        CHECK_FALSE(o.wrong_tile);
        CHECK_FALSE(o.deadlock);
      }
      const Ring racy{2, n_tiles, seen, SkipRelease::at_once};
      INFO(describe(racy));
      CHECK(explore(racy).overwrite);
    }
  }

  TEST_CASE("v6's key tiles under a sliding window: exactly the tiles its queries see, and at least one") {
    // Every work item of two warpgroups (128 rows) against the keys each query sees (window.hpp's
    // sees, with -1 for an unbounded side), for windows as the tests use them and the bounds the
    // launch gives the kernel (an unbounded side clamped to the lengths).
    using fa2::flash::KeyTileRange;
    const auto check = [](bool causal, fa2::Window window, int n_queries, int n_keys, int block_n) {
      const int left = window.left < 0 ? n_queries : static_cast<int>(std::min<fa2::index_t>(window.left, n_queries));
      const int right = window.right < 0 ? n_keys : static_cast<int>(std::min<fa2::index_t>(window.right, n_keys));
      const int key_tiles = (n_keys + block_n - 1) / block_n;
      for (int q0 = 0; q0 < n_queries; q0 += 128) {
        const KeyTileRange range =
            causal ? fa2::flash::window_key_tiles<true>(n_keys, block_n, q0, 128, n_queries, left, right)
                   : fa2::flash::window_key_tiles<false>(n_keys, block_n, q0, 128, n_queries, left, right);
        const KeyTileRange walked = fa2::flash::at_least_one_tile(range, n_keys, block_n);
        CHECK(walked.count() >= 1);
        CHECK(walked.first >= 0);
        CHECK(walked.end <= key_tiles);
        int lowest = key_tiles, highest = -1;  // the tiles the item's queries see
        for (int wg = 0; wg < 2; ++wg) {
          const int last = q0 + 64 * wg + 63;
          const int seen = causal ? fa2::flash::warpgroup_key_tiles<true, true>(walked, last, block_n, right)
                                  : fa2::flash::warpgroup_key_tiles<false, true>(walked, last, block_n, right);
          CHECK(seen >= 1);
          CHECK(seen <= walked.count());
          for (int q = q0 + 64 * wg; q <= last && q < n_queries; ++q) {
            for (int k = 0; k < n_keys; ++k) {
              if (!fa2::sees(causal, window, q, k)) continue;
              lowest = std::min(lowest, k / block_n);
              highest = std::max(highest, k / block_n);
              if (k / block_n < walked.first || k / block_n >= walked.first + seen) {
                FAIL_CHECK("query ", q, " (warpgroup ", wg, ") sees key ", k, " outside its tiles ", walked.first,
                           " .. ", walked.first + seen - 1);
              }
            }
          }
        }
        if (highest < 0) {
          CHECK(range.count() <= 1);  // no query sees a key: at most one tile, wholly masked
        } else {
          CHECK(range.first == lowest);  // not one tile more than the queries see
          CHECK(range.end == highest + 1);
        }
      }
    };
    for (const fa2::Window window :
         {fa2::Window{16, -1}, fa2::Window{-1, 7}, fa2::Window{3, 20}, fa2::Window{0, 0}, fa2::Window{1, 0},
          fa2::Window{40, 40}, fa2::Window{5000, -1}, fa2::Window{200, 100}}) {
      for (const int n_queries : {1, 70, 130, 300}) {
        for (const int n_keys : {1, 70, 129, 300}) {
          for (const int block_n : {64, 128}) {
            for (const bool causal : {false, true}) {
              INFO("window (", window.left, ", ", window.right, "), N_q ", n_queries, ", N_k ", n_keys, ", ", block_n,
                   "-key tiles, causal ", causal);
              check(causal, window, n_queries, n_keys, block_n);
            }
          }
        }
      }
    }
  }

  TEST_CASE("the backward's query tiles of a key tile: exactly the tiles whose queries see its keys") {
    // QueryWalk's range (v5's and v6b's backward, device/backward_params.cuh) against the keys
    // each query sees (window.hpp's sees), causal or not, with and without a window (the launch's
    // clamped bounds), for the kernels' tile shapes: a key tile must meet every query tile that sees
    // one of its keys, and no other.
    const auto check = [](bool causal, bool windowed, fa2::Window window, int n_queries, int n_keys, int block_m,
                          int block_n) {
      const int left = window.left < 0 ? n_queries : static_cast<int>(std::min<fa2::index_t>(window.left, n_queries));
      const int right = window.right < 0 ? n_keys : static_cast<int>(std::min<fa2::index_t>(window.right, n_keys));
      const auto range = [&](int k0) {
        using fa2::flash::key_tile_query_tiles;
        if (windowed) {
          return causal ? key_tile_query_tiles<true, true>(k0, n_keys, n_queries, block_m, block_n, left, right)
                        : key_tile_query_tiles<false, true>(k0, n_keys, n_queries, block_m, block_n, left, right);
        }
        return causal ? key_tile_query_tiles<true, false>(k0, n_keys, n_queries, block_m, block_n, left, right)
                      : key_tile_query_tiles<false, false>(k0, n_keys, n_queries, block_m, block_n, left, right);
      };
      for (int k0 = 0; k0 < n_keys; k0 += block_n) {
        const fa2::flash::QueryTileRange walked = range(k0);
        int lowest = n_queries, highest = -1;  // the query tiles that see one of the tile's keys
        for (int q = 0; q < n_queries; ++q) {
          for (int k = k0; k < k0 + block_n && k < n_keys; ++k) {
            if (fa2::sees(causal, window, q, k)) {
              lowest = std::min(lowest, q / block_m);
              highest = std::max(highest, q / block_m);
            }
          }
        }
        INFO("key tile from ", k0, ": walks ", walked.first, " .. ", walked.end - 1);
        if (highest < 0) {
          CHECK(walked.count() <= 1);  // no query sees its keys: at most one tile, wholly masked
        } else {
          CHECK(walked.first == lowest);  // not one tile more than the queries see
          CHECK(walked.end == highest + 1);
        }
      }
      // Deterministic dQ's turns (dq_turns.cuh): the key tiles that walk query tile m are
      // consecutive and end at last_key_tile(m), so that a key tile's turn (last - n) counts
      // exactly the key tiles after it that add to m: one more and it would wait forever.
      const int key_tiles = (n_keys + block_n - 1) / block_n;
      for (int m = 0; m * block_m < n_queries; ++m) {
        int first = -1, last = -1;
        for (int n = 0; n < key_tiles; ++n) {
          const fa2::flash::QueryTileRange walked = range(n * block_n);
          if (m < walked.first || m >= walked.end) continue;
          if (first < 0) first = n;
          const bool consecutive = last < 0 || last == n - 1;
          CHECK_MESSAGE(consecutive, "query tile ", m, ": key tiles ", last, " and ", n, " not consecutive");
          last = n;
        }
        INFO("query tile ", m, ": key tiles ", first, " .. ", last);
        if (last >= 0) {
          CHECK(last == fa2::flash::last_key_tile(m, key_tiles, block_m, block_n, causal, windowed ? right : -1));
        }
      }
    };
    for (const fa2::Window window :
         {fa2::Window{}, fa2::Window{16, -1}, fa2::Window{-1, 7}, fa2::Window{3, 20}, fa2::Window{0, 0},
          fa2::Window{1, 0}, fa2::Window{40, 40}, fa2::Window{5000, -1}, fa2::Window{200, 100}}) {
      for (const int n_queries : {1, 70, 130, 300}) {
        for (const int n_keys : {1, 70, 129, 300}) {
          for (const int block_m : {32, 64, 128}) {
            for (const bool causal : {false, true}) {
              INFO("window (", window.left, ", ", window.right, "), N_q ", n_queries, ", N_k ", n_keys, ", ", block_m,
                   "-query tiles, causal ", causal);
              check(causal, window.bounded(), window, n_queries, n_keys, block_m, 128);
              check(causal, window.bounded(), window, n_queries, n_keys, block_m, 64);
            }
          }
        }
      }
    }
  }

  TEST_CASE("v6's schedule without a mask: every item once, and consecutive heads on different K and V") {
    // Grouped-query attention: the heads of an order visit every kv head (head / kv_group) before
    // coming back to one, so the blocks of a round do not all read one head's K and V.
    for (const int heads : {1, 8, 24, 64}) {
      for (const int kv_group : {1, 2, 4, 8, 24}) {
        if (heads % kv_group != 0) continue;
        for (const int n_q_tiles : {1, 3, 32}) {
          INFO(heads, " heads, groups of ", kv_group, ", ", n_q_tiles, " query tiles");
          const fa2::flash::TileScheduler<false, true> sched{n_q_tiles, heads, kv_group};
          REQUIRE(sched.items() == heads * n_q_tiles);
          std::set<std::pair<int, int>> seen;
          for (int t = 0; t < sched.items(); ++t) {
            const fa2::flash::WorkTile w = sched.work_tile(t);
            REQUIRE(w.q_tile == t % n_q_tiles);  // a head's query tiles one after the other
            REQUIRE(w.bh >= 0);
            REQUIRE(w.bh < heads);
            seen.insert({w.q_tile, w.bh});
            if (kv_group == 1) CHECK(w.bh == t / n_q_tiles);  // without groups, the heads in order
          }
          CHECK(seen.size() == static_cast<std::size_t>(sched.items()));  // each item once
          const int kv_heads = heads / kv_group;
          std::set<int> kv_seen;  // the kv heads of the first kv_heads heads of the order
          for (int slot = 0; slot < kv_heads; ++slot) kv_seen.insert(sched.work_tile(slot * n_q_tiles).bh / kv_group);
          CHECK(kv_seen.size() == static_cast<std::size_t>(kv_heads));
        }
      }
    }
  }

  TEST_CASE("v6's causal L2 order: every item once, heaviest first within each group of heads, group by group") {
    for (const int heads : {1, 5, 8, 32}) {
      for (const int head_group : {1, 2, 4, 8}) {
        for (const int n_q_tiles : {1, 3, 32}) {
          INFO(heads, " heads in groups of ", head_group, ", ", n_q_tiles, " query tiles");
          const fa2::flash::TileScheduler<true, true> sched{n_q_tiles, heads, 1, head_group};
          std::set<std::pair<int, int>> seen;
          int previous_group = 0, previous_tile = n_q_tiles;
          for (int t = 0; t < sched.items(); ++t) {
            const fa2::flash::WorkTile w = sched.work_tile(t);
            REQUIRE(w.bh >= 0);
            REQUIRE(w.bh < heads);
            REQUIRE(w.q_tile >= 0);
            REQUIRE(w.q_tile < n_q_tiles);
            seen.insert({w.q_tile, w.bh});
            const int group = head_group > 1 ? w.bh / head_group : 0;
            CHECK(group >= previous_group);                                 // group after group
            if (group == previous_group) CHECK(w.q_tile <= previous_tile);  // heaviest (last) tiles first
            if (group != previous_group) previous_tile = n_q_tiles;
            previous_group = group, previous_tile = std::min(previous_tile, w.q_tile);
          }
          CHECK(seen.size() == static_cast<std::size_t>(sched.items()));
          if (head_group == 1) {  // one group: the order every causal v6 row has
            for (int t = 0; t < sched.items(); ++t) {
              const fa2::flash::WorkTile w = sched.work_tile(t);
              CHECK(w.q_tile == n_q_tiles - 1 - t / heads);
              CHECK(w.bh == t % heads);
            }
          }
        }
      }
    }
    // Groups whose K and V fit the L2: 2 x 16384 keys x 128 x 2 bytes = 8 MiB a head, 4 heads in 50
    // MiB (not 6: powers of two); a quarter of that per query head with 4 per kv head; never more
    // than the heads, never fewer than one.
    using fa2::flash::l2_head_group;
    CHECK(l2_head_group(50ll << 20, 16384, 128, 1, 32) == 4);
    CHECK(l2_head_group(50ll << 20, 16384, 128, 4, 32) == 16);
    CHECK(l2_head_group(50ll << 20, 4096, 64, 1, 3) == 2);
    CHECK(l2_head_group(50ll << 20, 1 << 22, 128, 1, 32) == 1);
  }

  TEST_CASE("v6's turns: two or three warpgroups issue in round-robin order and never block each other for good") {
    const std::vector<std::vector<int>> items = {{1}, {3}, {1, 2}, {2, 1, 3}};
    for (const int wgs : {2, 3}) {
      for (const auto& tiles : items) {
        INFO(wgs, " warpgroups, ", tiles.size(), " items");
        const TurnOutcome o = explore_turns(wgs, tiles, TurnRules{});
        CHECK(o.states > 0);
        CHECK_FALSE(o.deadlock);
        CHECK_FALSE(o.out_of_order);
      }
    }
    // Three planted breaks: warpgroup 0 opening its own first turn (two may issue at once), the
    // last warpgroup passing after its last tile too (the next item's first turn opens twice), and
    // three warpgroups passing as two do (warpgroup 1 back to 0: warpgroup 2 never starts).
    TurnRules own_opener;
    own_opener.opens_first = [](int wg, int) { return wg == 0; };
    CHECK(explore_turns(3, {2, 2}, own_opener).out_of_order);
    TurnRules always_pass;
    always_pass.passes = [](int, int, int, int) { return true; };
    const TurnOutcome extra = explore_turns(3, {1, 2}, always_pass);
    CHECK((extra.out_of_order || extra.deadlock));
    TurnRules two_way;
    two_way.next = [](int wg, int) { return fa2::flash::turn_barrier(1 - wg % 2); };
    const TurnOutcome stuck = explore_turns(3, {2}, two_way);
    CHECK((stuck.deadlock || stuck.out_of_order));
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
