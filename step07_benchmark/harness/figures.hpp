// The figures of step07's GUIDE.md and APPENDIX.md, drawn from the kernels' own host-device formulas
// (kernels/device/layouts.hpp, tile_scheduler.hpp): the mma.sync m16n8k16 fragment layout,
// ldmatrix's addresses, the shared-memory layouts (plain, padded, XOR-swizzled) against the 32
// banks, the cp.async pipeline, the causal masks, v6's persistent schedule and a roofline from a
// results CSV. Host only; step07_figures writes them, step07_figures_tests checks them (ctest -L
// figures).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "step07_benchmark/harness/bench_problem.hpp"
#include "step07_benchmark/harness/bench_report.hpp"
#include "step07_benchmark/kernels/device/layouts.hpp"

namespace fa2::bench::figures {

// ---- mma.sync.m16n8k16 (bf16 in, fp32 accumulate): who holds which element ----------------------
// The inverse of layouts.hpp's mma_a_element, mma_b_element and mma_c_element (the PTX ISA's
// table, "matrix fragments for mma.m16n8k16").
struct FragmentSlot {
  int lane = 0;  // 0..31
  int reg = 0;   // index of the 32-bit register: a[0..3], b0/b1 (0/1), d[0..3]
  int half = 0;  // A and B pack two bf16 per register: 0 = low half; C and D hold one float (always 0)
};
bool operator==(const FragmentSlot& x, const FragmentSlot& y);

FragmentSlot mma_a_fragment_owner(int row, int k);    // A: 16 x 16 (rows x k)
FragmentSlot mma_b_fragment_owner(int k, int col);    // B: 16 x 8 (k x n)
FragmentSlot mma_c_fragment_owner(int row, int col);  // C and D: 16 x 8 (rows x n)

// ---- ldmatrix.x4: a warp loads four 8 x 8 bf16 matrices of a 16 x 16 block ----------------------
// Lane l gives the address of row l % 8 of matrix l / 8. sm80/forward.cuh takes the four matrices in
// two orders (layouts.hpp's ldmatrix_rows_then_chunks and ldmatrix_chunks_then_rows):
// addr_rows_then_chunks (the A operand: Q, P; and V with .trans) and addr_chunks_then_rows (two
// neighbouring 8-key B operands of K).
enum class LdmatrixOrder { rows_then_chunks, chunks_then_rows };
struct RowChunk {
  int row = 0;    // 0..15 inside the block
  int chunk = 0;  // 0..1: which 16-byte (8 x bf16) half of the block's row
};
RowChunk ldmatrix_address(LdmatrixOrder order, int lane);

// The element of the 16 x 16 block that lane `lane` receives in register r[matrix], half `half`:
// without .trans, row lane / 4 and column 2 (lane % 4) + half of that matrix; with .trans, row
// 2 (lane % 4) + half and column lane / 4.
struct BlockElement {
  int row = 0;
  int col = 0;
};
BlockElement ldmatrix_element(LdmatrixOrder order, bool transposed, int lane, int matrix, int half);

// ---- shared memory and its 32 banks ------------------------------------------------------------
inline constexpr int kBanks = 32;     // 4-byte banks; a request is served in one pass (wavefront)
inline constexpr int kBankBytes = 4;  // when no two of its addresses need different words of a bank
using fa2::flash::kChunkElems;        // a 16-byte chunk: what cp.async moves and what an ldmatrix row is
inline constexpr int kStep05Pad = 8;  // step05's kSmemPad (tile_dot.hpp): elements added to every row

enum class SmemLayout {
  plain,     // row r, chunk c at r * D + 8 c (v5.1)
  padded,    // rows of D + kStep05Pad elements (step05's tiles)
  swizzled,  // sm80/forward.cuh's tile_offset: chunk c ^ (r & 7), or c ^ ((r >> 1) & 3) for 4-chunk rows
};
std::string to_string(SmemLayout layout);

// Element offset (bf16) of chunk `chunk` of row `row` in a (rows, D) tile; D is 32, 64 or 128.
int tile_offset(int row, int chunk, int D, SmemLayout layout);
// The bank of the 4 bytes that hold bf16 element `element_offset`.
int bank_of(int element_offset);
// The eight rows row0 .. row0 + 7 at logical chunk `chunk` (one 8 x 8 matrix of an ldmatrix): how
// many of them need the same four banks. 1: one wavefront, conflict-free; 8: eight wavefronts.
int ldmatrix_conflict_ways(int row0, int chunk, int D, SmemLayout layout);

// ---- the cp.async pipeline of the key loop (sm80/forward.cuh), as a schematic schedule --------------
enum class Pipeline {
  one_stage,    // v5.1, v5.2: load tile j, wait, compute it, barrier, load tile j + 1 (key_loop_joint_wait)
  two_stages,   // v5.3, v5.4: tile j + 1 loads into the other stage while tile j computes
  split_waits,  // v5.5: K and V are separate cp.async groups (key_loop_split_waits)
};
enum class Track { copy, compute };
struct PipelineEvent {
  Track track = Track::copy;
  std::string label;  // "K1 V1", "S, softmax 1", "P V 1"
  int tile = 0;
  int stage = 0;                          // the shared-memory stage it writes (copy) or reads (compute)
  bool reads_k = false, reads_v = false;  // compute: which of the tile's K and V it needs
  bool has_k = false, has_v = false;      // copy: which it brings
  double t0 = 0.0, t1 = 0.0;              // schematic time units
};
struct Barrier {
  double t = 0.0;
  std::string label;  // "wait<0> + __syncthreads()"
};
struct PipelineSchedule {
  Pipeline pipeline = Pipeline::one_stage;
  std::vector<PipelineEvent> events;
  std::vector<Barrier> barriers;
  double end = 0.0;
};
// `n_tiles` key tiles; a K or V tile takes `load_half` units to land, QK^T + softmax `compute_s`,
// P V `compute_pv`. A load starts when it is issued and the copy track is free; compute starts at
// the barrier after the wait for its operands.
PipelineSchedule pipeline_schedule(Pipeline pipeline, int n_tiles, double load_half = 1.5, double compute_s = 2.5,
                                   double compute_pv = 1.5);

// ---- causal masks when N_q != N_k ----------------------------------------------------------------
enum class CausalAlign {
  top_left,      // ours and torch's is_causal: query q sees keys k <= q
  bottom_right,  // the flash-attn library (since 2.1): query q sees keys k <= q + N_k - N_q
};
bool causal_visible(int q, int k, int n_q, int n_k, CausalAlign align);

// ---- v6's persistent schedule (tile_scheduler.hpp) ---------------------------------------------------
// The key tiles each of `blocks` persistent blocks computes over the whole launch, when the items
// (query tiles of block_m rows of each of `heads` heads, N = n queries and keys) go as
// TileScheduler sends them and each counts key_tiles. GUIDE.md's milestone 4 quotes it.
struct ScheduleProblem {
  int n = 4096, heads = 32, blocks = 132, block_m = 128, block_n = 128;
  bool causal = true;
};
std::vector<int> persistent_block_tiles(const ScheduleProblem& sp);

// ---- one query row through the online softmax: the masked-row arithmetic (APPENDIX A.9) ---------
// Host copies in float32 of the two kernels' update (step05's flash_fwd_kernel.hpp with its -1e6
// sentinel and exp; v5's online_softmax with -inf, exp2 and the m_use guard), one key tile of
// `tile` keys at a time; head dim 1, so `values` holds one number per key.
enum class MaskStyle { step05_sentinel, v5_neg_inf, v5_neg_inf_without_guard };
struct RowState {
  float m = 0.0f;                               // running max (step05: natural units; v5: log2 units)
  float l = 0.0f;                               // running sum
  float o = 0.0f;                               // unnormalised output
  float out() const { return o * (1.0f / l); }  // what the kernels store: v5 multiplies by 1 / l
};
RowState online_softmax_row(const std::vector<float>& scores, const std::vector<bool>& keep,
                            const std::vector<float>& values, int tile, MaskStyle style);

// ---- the roofline -----------------------------------------------------------------------------
// The two ceilings of step07_bench's "ceilings:" line: measured on the device, and the datasheet's.
struct CeilingsLine {
  Ceilings measured;
  Ceilings datasheet;
};
// Reads "ceilings: bf16 GEMM 750 TFLOP/s, copy 4.25 TB/s (...); datasheet 989 TFLOP/s, 4.8 TB/s";
// std::invalid_argument when the text has no such line.
CeilingsLine parse_ceilings(const std::string& log_text);

// Bytes the napkin math charges an implementation: the least traffic (Q, K, V read once, O and L
// written once) for the fused kernels; cuBLAS standard attention also writes S and P to device
// memory and reads each back once (4 x score_matrix_bytes).
double napkin_bytes(const std::string& key, const Problem& p);

struct RooflinePoint {
  std::string key;
  double tflops = 0.0;                                // measured (the CSV's tflops column)
  double flops = 0.0;                                 // attention_flops
  double bytes = 0.0;                                 // napkin_bytes
  bool quoted = false;                                // a number copied from another harness, not run here
  double intensity() const { return flops / bytes; }  // FLOP per byte
};
// Every ok (or quoted) row of the CSV for problem `p`, in CSV order, except `sdpa`: SDPA's default
// backend, which is one of the forced ones (cuDNN on the H200), drawn under its own key.
std::vector<RooflinePoint> roofline_points(const std::vector<Measurement>& all, const Problem& p);

// ---- the figures ------------------------------------------------------------------------------
struct FigureInputs {
  std::vector<Measurement> results;  // from_csv of step07_results.csv
  CeilingsLine ceilings;             // parse_ceilings of the run's log
  Problem problem{4, 8, 4096, 64, false};
  std::string source;  // where the numbers come from, printed under the roofline's title
};
struct Figure {
  std::string file;  // "swizzle_banks.svg"
  std::string what;  // one line for the program's output
  std::string svg;
};
std::string fragment_layout_svg();
std::string ldmatrix_svg();
std::string swizzle_banks_svg();
// Its caption quotes v5.2-v5.5 from `results` at problem `p`, when they are there.
std::string cp_async_pipeline_svg(const std::vector<Measurement>& results, const Problem& p);
std::string causal_alignment_svg();
std::string split_kv_svg();
std::string packed_schedule_svg();
std::string roofline_svg(const std::vector<RooflinePoint>& points, const CeilingsLine& ceilings, const Problem& p,
                         const std::string& source);
// Reads a results CSV and the same run's log (for its "ceilings:" line); `source` names them by file
// and folder only, so the figures do not depend on where the repository is. std::runtime_error
// naming the path when a file cannot be read or parsed. The problem is left at its default.
FigureInputs read_inputs(const std::string& csv_path, const std::string& log_path);
// The CSV's problem with this N, D and mask (B and H from its first such row), if it has one.
std::optional<Problem> find_problem(const std::vector<Measurement>& results, int N, int D, bool causal);

// All of them, in the order of GUIDE.md and APPENDIX.md's part A. Throws std::invalid_argument when the results have no
// row for the problem.
std::vector<Figure> all_figures(const FigureInputs& in);

}  // namespace fa2::bench::figures
