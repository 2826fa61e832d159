// What one program of a kernel did, recorded on the host for the trace viewer
// (common/viewer/trace_viewer.html): its loads and stores through tile pointers, with the mask of
// each, and the running softmax state after each key tile. trace_json.hpp writes it as JSON.
//   fa2::trace::Recorder rec;  { fa2::trace::Recording on(rec, {6, 1, 0});  fa2::flash_fwd_host(args); }
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fa2::trace {

// One load or store through a tile pointer, as step03's load_store.hpp notes it: the pointer
// (shape, strides, offsets, block shape of the tile), where the tile lives in the program, and
// which of its elements lay inside the tensor.
struct TileAccess {
  bool is_load = true;
  std::string tensor;  // the name Recorder::name_memory gave the memory it touches; "" when unnamed
  std::string place;   // where the tile lives in the program: "shared" or "registers"
  std::vector<std::int64_t> shape, strides, offsets, block;  // one entry per axis
  std::vector<int> checked;                                  // the boundary_check axes
  std::string padding;                                       // loads: "zero", "nan" or "none"; stores: ""
  // One string per row of the block ('1': inside the tensor on every checked axis, '0': masked).
  // A 1-D block is one row.
  std::vector<std::string> mask;
};

// One (query tile, key tile) step of step 2's tiled loop, as its KeyTileTrace reports it: the
// rows and columns of S_ij and which of its scores count (the causal mask).
struct KeyTile {
  std::int64_t batch = 0, q_start = 0, k_start = 0, rows = 0, cols = 0;
  std::vector<std::string> mask;  // `rows` strings of `cols` characters: '1' the score counts, '0' masked
};

// The running state of a query tile after key tile `key_tile`, one value per row. step05's kernel
// reports it with note_state (load_store.hpp), step 2 through its KeyTileTrace.
struct RowState {
  std::int64_t key_tile = 0;
  std::int64_t first_row = 0;       // the query index of row 0
  std::vector<double> m, l, alpha;  // m_i, l_i, and alpha = exp(m_old - m_new) of this key tile
};

using Event = std::variant<TileAccess, KeyTile, RowState>;

// The events of one program, in the order they happened, and names for the memory it reads.
class Recorder {
 public:
  // Accesses inside [first, first + bytes) are named `name` ("Q", "K", ...).
  void name_memory(const void* first, std::size_t bytes, std::string name) {
    const auto begin = reinterpret_cast<std::uintptr_t>(first);
    named_.push_back({begin, begin + bytes, std::move(name)});
  }
  std::string name_of(const void* address) const {
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    for (const auto& n : named_) {
      if (at >= n.begin && at < n.end) return n.name;
    }
    return "";
  }

  // Each kind of event is built in place in the list: no temporary Event to move from (GCC 13
  // warns, wrongly, that moving one may read an inactive alternative's vectors).
  void add(TileAccess event) { events_.emplace_back(std::in_place_type<TileAccess>, std::move(event)); }
  void add(KeyTile event) { events_.emplace_back(std::in_place_type<KeyTile>, std::move(event)); }
  void add(RowState event) { events_.emplace_back(std::in_place_type<RowState>, std::move(event)); }
  const std::vector<Event>& events() const { return events_; }
  std::vector<Event>& events() { return events_; }

 private:
  struct Named {
    std::uintptr_t begin, end;
    std::string name;
  };
  std::vector<Named> named_;
  std::vector<Event> events_;
};

// While a Recording lives, every HostProgram this thread creates with program id `program_id`
// carries `recorder` (step03's program.hpp asks recorder_for when it is made). So any host
// launch (step05's kernel, step06's twins, a demo's own program) can be recorded without a new
// entry point, like a profiler's range: switched on for a scope, off when it ends. Recordings
// nest; the innermost one that asks for a program wins.
class Recording {
 public:
  using ProgramId = std::array<std::int64_t, 3>;

  Recording(Recorder& recorder, const ProgramId& program_id)
      : recorder_(&recorder), program_id_(program_id), outer_(active_) {
    active_ = this;
  }
  ~Recording() { active_ = outer_; }
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  // The recorder asked for this program on this thread, or nullptr (the usual case).
  static Recorder* recorder_for(const ProgramId& program_id) {
    for (const Recording* r = active_; r != nullptr; r = r->outer_) {
      if (r->program_id_ == program_id) return r->recorder_;
    }
    return nullptr;
  }

 private:
  Recorder* recorder_;
  ProgramId program_id_;
  const Recording* outer_;
  static inline thread_local const Recording* active_ = nullptr;
};

}  // namespace fa2::trace
