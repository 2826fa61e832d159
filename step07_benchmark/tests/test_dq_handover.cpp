// The handover of dQ's shares in v6b's warp-specialised kernel with the dQ writer
// (kernels/sm90/backward_dq_writer.cuh), reduced to its protocol and checked on the host over
// every interleaving. Each step t, computing warpgroup wg waits on the named barrier
// dq_empty(wg, t % 2), writes its part into the staging tile of that stage and arrives on
// dq_full(wg, t % 2); the writer arrives once on each dq_empty at the start (for the stages the
// walk uses), then for each step and warpgroup (the higher first) waits on dq_full, reads the tile
// out and arrives on dq_empty, except after the tile's last use. With dQ split by columns or
// queries the two warpgroups also meet once per step (the dS^T barrier).
//
// A named barrier counts arrivals of either kind and completes when they reach its count; a
// thread that syncs waits for the phase it arrived in. Nothing tells one phase's arrivals from the
// next one's: an arrival that comes before the phase it is meant for has completed is counted in
// it. The model therefore flags an arrival that would take a barrier past its count in one phase,
// a tile written while the writer has not read its last part, a part read before it was written or
// twice, and a state where no actor can move before all are done.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace {

constexpr int kWarpgroup = 128, kWriter = 32, kCount = kWarpgroup + kWriter;

// A named barrier: arrivals so far in the open phase, and how many phases have completed.
struct NamedBarrier {
  int arrived = 0;
  int completed = 0;
  auto key() const { return std::tuple(arrived, completed); }
};

struct Handover {
  int steps = 3;
  bool block_meets = false;   // dQ split by columns or queries: the warpgroups meet once per step
  bool last_arrival = false;  // the bug: the writer also arrives after a tile's last use
  bool no_initial = false;    // the bug: the writer does not free both stages at the start
};

// The state of one interleaving: each computing warpgroup's and the writer's place, the barriers,
// which step's part each staging tile holds (-1: none) and what the writer has read.
struct State {
  // A warpgroup: step t, phase 0 (to wait on dq_empty), 1 (waiting), 2 (meet the other, if
  // block_meets), 3 (waiting there), 4 (write and arrive on dq_full); t == steps: done.
  int wg_step[2] = {}, wg_phase[2] = {};
  int wg_waits_for[2] = {};  // the completed count it waits to see
  // The writer: 0 (initial arrivals), then step t, warpgroup slot i (0: warpgroup 1, 1: warpgroup
  // 0), phase 0 (to wait on dq_full), 1 (waiting), 2 (read and arrive); done when t == steps.
  int w_init = 0, w_step = 0, w_slot = 0, w_phase = 0, w_waits_for = 0;
  NamedBarrier full[4] = {}, empty[4] = {};  // index 2 wg + stage
  int tile[4] = {-1, -1, -1, -1};            // the step whose part the tile holds
  int read[4] = {-1, -1, -1, -1};            // the last step the writer read from it
  NamedBarrier meet{};
  int meet_waits[2] = {0, 0};

  auto key() const {
    std::vector<int> k = {wg_step[0],      wg_step[1],   wg_phase[0],    wg_phase[1],   wg_waits_for[0],
                          wg_waits_for[1], w_init,       w_step,         w_slot,        w_phase,
                          w_waits_for,     meet.arrived, meet.completed, meet_waits[0], meet_waits[1]};
    for (int i = 0; i < 4; ++i) {
      for (int x : {full[i].arrived, full[i].completed, empty[i].arrived, empty[i].completed, tile[i], read[i]}) {
        k.push_back(x);
      }
    }
    return k;
  }
};

struct Outcome {
  std::string error;  // the first violation found, empty when none
  int states = 0;
};

// Arrivals of n threads; false (and an error) when they would take the phase past its count.
bool arrive(NamedBarrier& b, int n, int count, std::string& error, const char* what) {
  b.arrived += n;
  if (b.arrived > count) {
    error = std::string("arrivals past the count of ") + what;
    return false;
  }
  if (b.arrived == count) {
    b.arrived = 0;
    ++b.completed;
  }
  return true;
}

class Explorer {
 public:
  explicit Explorer(const Handover& h) : h_(h) {}

  Outcome run() {
    State s;
    s.w_init = h_.no_initial ? 1 : 0;
    visit(s);
    return {error_, static_cast<int>(seen_.size())};
  }

 private:
  const Handover& h_;
  std::set<std::vector<int>> seen_;
  std::string error_;

  bool done(const State& s) const {
    return s.wg_step[0] == h_.steps && s.wg_step[1] == h_.steps && s.w_init == 1 && s.w_step == h_.steps;
  }

  void visit(const State& s) {
    if (!error_.empty() || !seen_.insert(s.key()).second) return;
    if (done(s)) {
      for (const NamedBarrier* barriers : {s.full, s.empty}) {
        for (int i = 0; i < 4; ++i) {
          const NamedBarrier& b = barriers[i];
          if (b.arrived != 0) error_ = "a barrier ends with arrivals nobody waits for";
        }
      }
      return;
    }
    bool moved = false;
    for (int wg = 0; wg < 2; ++wg) {
      State n = s;
      if (step_warpgroup(n, wg)) {
        moved = true;
        visit(n);
      }
    }
    State n = s;
    if (step_writer(n)) {
      moved = true;
      visit(n);
    }
    if (!moved && error_.empty()) error_ = "deadlock";
  }

  // One move of warpgroup wg; false when it cannot move (done, or waiting).
  bool step_warpgroup(State& s, int wg) {
    const int t = s.wg_step[wg];
    if (t == h_.steps) return false;
    const int id = 2 * wg + t % 2;
    switch (s.wg_phase[wg]) {
      case 0:  // bar.sync dq_empty: arrive, then wait for this phase
        s.wg_waits_for[wg] = s.empty[id].completed + 1;
        if (!arrive(s.empty[id], kWarpgroup, kCount, error_, "dq_empty")) return true;
        s.wg_phase[wg] = 1;
        return true;
      case 1:
        if (s.empty[id].completed < s.wg_waits_for[wg]) return false;
        s.wg_phase[wg] = h_.block_meets ? 2 : 4;
        return true;
      case 2:  // the dS^T barrier of both warpgroups (bar.sync, 256 threads)
        s.meet_waits[wg] = s.meet.completed + 1;
        if (!arrive(s.meet, kWarpgroup, 2 * kWarpgroup, error_, "the dS^T barrier")) return true;
        s.wg_phase[wg] = 3;
        return true;
      case 3:
        if (s.meet.completed < s.meet_waits[wg]) return false;
        s.wg_phase[wg] = 4;
        return true;
      default:  // write the tile, bar.arrive dq_full
        if (s.tile[id] >= 0 && s.read[id] != s.tile[id]) {
          error_ = "a tile overwritten before the writer read it";
          return true;
        }
        s.tile[id] = t;
        arrive(s.full[id], kWarpgroup, kCount, error_, "dq_full");
        s.wg_phase[wg] = 0;
        ++s.wg_step[wg];
        return true;
    }
  }

  bool step_writer(State& s) {
    if (s.w_init == 0) {  // free both stages the walk uses
      for (int st = 0; st < 2 && st < h_.steps; ++st) {
        for (int wg = 0; wg < 2; ++wg) arrive(s.empty[2 * wg + st], kWriter, kCount, error_, "dq_empty");
      }
      s.w_init = 1;
      return true;
    }
    const int t = s.w_step;
    if (t == h_.steps) return false;
    const int wg = 1 - s.w_slot, id = 2 * wg + t % 2;
    switch (s.w_phase) {
      case 0:
        s.w_waits_for = s.full[id].completed + 1;
        if (!arrive(s.full[id], kWriter, kCount, error_, "dq_full")) return true;
        s.w_phase = 1;
        return true;
      case 1:
        if (s.full[id].completed < s.w_waits_for) return false;
        s.w_phase = 2;
        return true;
      default:
        if (s.tile[id] != t || s.read[id] == t) {
          error_ = "the writer read a part that is not its step's, or read it twice";
          return true;
        }
        s.read[id] = t;
        if (t + 2 < h_.steps || h_.last_arrival) arrive(s.empty[id], kWriter, kCount, error_, "dq_empty");
        s.w_phase = 0;
        if (++s.w_slot == 2) {
          s.w_slot = 0;
          ++s.w_step;
        }
        return true;
    }
  }
};

}  // namespace

TEST_SUITE("variants") {
  TEST_CASE("v6b's dQ handover: in every interleaving each part is written once, read once, never overwritten") {
    for (const bool block_meets : {false, true}) {
      for (int steps = 1; steps <= 5; ++steps) {
        Handover h;
        h.steps = steps;
        h.block_meets = block_meets;
        const Outcome o = Explorer(h).run();
        INFO("steps ", steps, block_meets ? ", warpgroups meet every step" : "", ": ", o.states, " states");
        CHECK_MESSAGE(o.error.empty(), o.error);
        CHECK(o.states > 10);
      }
    }
  }

  TEST_CASE("v6b's dQ handover: the model finds the two ways to break it") {
    // The writer also arriving after a tile's last use leaves arrivals that no warpgroup waits for.
    Handover extra;
    extra.steps = 3;
    extra.last_arrival = true;
    CHECK(Explorer(extra).run().error == "a barrier ends with arrivals nobody waits for");
    // Without the initial arrivals the warpgroups wait on dq_empty for a phase nobody opens.
    Handover none;
    none.steps = 3;
    none.no_initial = true;
    CHECK(Explorer(none).run().error == "deadlock");
  }
}
