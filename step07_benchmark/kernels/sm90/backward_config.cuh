// v6b's configuration (sm90/backward.cuh): the options its rows vary, the constants every part
// reads, where each tile lies in shared memory, the named barriers and the register tiles of a
// computing warpgroup.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "step07_benchmark/kernels/device/backward_params.cuh"  // QueryWalk
#include "step07_benchmark/kernels/device/dq_turns.cuh"         // deterministic_twin
#include "step07_benchmark/kernels/device/forward_params.cuh"   // windowed_twin
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/ptx/mma.cuh"  // elem16, float16_twin

namespace fa2::flash {

// The order in which a deterministic twin's blocks start (the head_major option,
// device/backward_params.cuh), and with head_major_default the default twin's too: key tile by key
// tile across the heads, as the grid has them (never); head by head (always); head by head only
// where a head has many key tiles (long_calls); or in groups of as many heads as the L2 holds the
// query side of (l2_groups). HopperBwdConfig::head_group says which, per call.
enum class HeadMajor { never, always, long_calls, l2_groups };

// What v6b's rows vary (product/kernels.def, lab/variants.def).
struct HopperBwdOptions {
  int block_m = 64;            // queries per step: the N of S^T and dP^T (64; 128 at head dim 64; 80 at
                               // head dim 128 without a mask, dQ's share then computed transposed)
  bool dq_tma = false;         // dQ's share leaves through shared memory by TMA reduce-add, not atomics
  bool producer = false;       // a producer warpgroup loads Q_i, dO_i (TMA), L_i and D_i into a ring of
                               // two stages on mbarriers: the computing warpgroups never meet to load
  bool overlap_p = false;      // S^T and dP^T issued back to back, and only S^T waited for: P^T's
                               // exponentials are written to run while dP^T is still on the tensor cores
  bool hold_p = false;         // (overlap_p) the wait for dP^T held after P^T's exponentials
                               // (wgmma_wait_after): a plain wait, ptxas lifts above them
  bool dq_writer = false;      // a warp of the producer's warpgroup adds dQ's shares (TMA reduce-adds,
                               // and deterministic, the turns); the computing warpgroups hand them
                               // over in shared memory (needs producer and dq_tma)
  bool defer_turns = false;    // deterministic, the dQ writer passes a step's turns only after it has
                               // issued the next step's adds: their landing overlaps that work
  bool joint_turns = false;    // deterministic, where the warpgroups' parts of a step are disjoint
                               // (split by queries or columns), the dQ writer issues both parts'
                               // adds, waits once for both to land and passes the step's turn at once;
                               // where they are not, defer_turns still holds
  bool masked_apart = false;   // the steps a mask may touch run one copy of the step, the others a
                               // copy without the mask's tests (the warp-specialised kernel)
  bool wide_windows = false;   // with masked_apart, the windowed twins keep 128-query steps too
  bool dq_chained = false;     // dQ's product issued right behind dV's and dK's, one wait for the three,
                               // where the warpgroup otherwise waits for dV and dK before its barrier
  bool pdl = false;            // programmatic dependent launch: the key-tile kernel may start while the
                               // preprocess still runs, and the dQ conversion while it does; each
                               // waits (griddepcontrol) only before it reads what the one before wrote
  bool deterministic = false;  // dQ's shares added in turns (dq_turns.cuh); not a row's choice:
                               // every configuration is built both ways (Cfg::Deterministic)
  bool float16 = false;        // fp16 elements instead of bf16; also built both ways (Cfg::Float16)
  bool window = false;         // a sliding window: the walk leaves out the query tiles no query of
                               // which sees the block's keys, the masks the rest; built both ways
                               // too (Cfg::Windowed)
  bool packed = false;         // a packed batch of sequences of different lengths (Cfg::Packed, the
                               // product's packed backward): a block per (sequence, key tile, kv
                               // head) of a schedule, ragged TMA views; needs the dQ writer
  // Deterministic, the blocks start head by head or in groups of heads (each head's key tiles from
  // the last), not key tile by key tile across all the heads: a head's blocks then run side by side
  // and share its query tiles in L2. Which calls, HeadMajor says.
  HeadMajor head_major = HeadMajor::never;
  // The default twin's blocks start so too, by head_major's rule for it (each head's key tiles from
  // the first): without the turns' order to keep, only the sharing of the query tiles in L2.
  bool head_major_default = false;
};

// The twin of a configuration for packed batches (product/packed_sm90.cu launches it).
constexpr HopperBwdOptions packed_twin(HopperBwdOptions o) {
  o.packed = true;
  return o;
}

template <int D_, bool CAUSAL_, HopperBwdOptions OPT = HopperBwdOptions{}>
struct HopperBwdConfig {
  static constexpr int D = D_;
  static constexpr bool CAUSAL = CAUSAL_;
  static constexpr int WARPGROUPS = 2;
  static constexpr int NUM_THREADS = 128 * WARPGROUPS;  // what the cp.async loads split over
  static constexpr int WG_KEYS = 64;                    // the M of every key-row product
  static constexpr int BLOCK_N = WG_KEYS * WARPGROUPS;  // keys per block
  // masked_apart is for the causal twin of 128-query steps, and with wide_windows for the windowed
  // twins too: without a mask or a window it spills (ptxas for sm_90a), and is built as without it.
  static constexpr bool MASKED_APART =
      OPT.masked_apart && OPT.block_m == 128 && (OPT.window ? OPT.wide_windows : CAUSAL_);
  // The windowed twin of a row of 128-query steps takes 64 unless its masked steps run apart: with
  // the window's masks beside S^T and dP^T, 128 spill. So does the causal twin of one with the
  // producer, in its 240 registers.
  static constexpr bool NARROWED_128 = OPT.block_m == 128 && (OPT.window || (CAUSAL_ && OPT.producer)) && !MASKED_APART;
  // 80-query steps are for the kernel without a mask: its causal, windowed and packed twins take 64.
  static constexpr bool NARROWED_80 = OPT.block_m == 80 && (CAUSAL_ || OPT.window || OPT.packed);
  static constexpr int BLOCK_M = NARROWED_128 || NARROWED_80 ? 64 : OPT.block_m;
  static_assert(!OPT.wide_windows || OPT.masked_apart, "wide_windows: the windowed steps' masks run apart");
  static constexpr bool DQ_TMA = OPT.dq_tma;
  static constexpr bool PRODUCER = OPT.producer;
  // At head dim 128 the window's masks leave no registers for the overlap (its twins spill 24 to 32
  // bytes): the windowed twin waits for both products.
  static constexpr bool OVERLAP_P = OPT.overlap_p && !(OPT.window && D_ == 128);
  static constexpr bool HOLD_P = OVERLAP_P && OPT.hold_p;  // hopper_bwd_ws_block remakes the thread's place
  static_assert(!OPT.hold_p || OPT.overlap_p, "hold_p holds P under dP's wait");
  static constexpr bool DQ_WRITER = OPT.dq_writer;
  static constexpr bool DQ_CHAINED = OPT.dq_chained;
  // Where the masked steps run apart, the thread's warpgroup is read from lane 0, so that the
  // compiler knows it is the same for a warp's lanes (BwdBlock::thread): the test that picks a
  // step's copy depends on it, and each copy then keeps its descriptors and addresses in uniform
  // registers. The thread's place is then remade at each step: held through both copies, two of
  // its registers spill at 128-query steps. (The other twins gain nothing measurable from it.)
  static constexpr bool UNIFORM_WG = MASKED_APART;
  static_assert(!DQ_WRITER || (PRODUCER && DQ_TMA),
                "the dQ writer is a warp of the producer's warpgroup, and adds by TMA reduce-add");
  static constexpr bool TURN_IN_PLACE = DQ_WRITER && OPT.deterministic && OPT.window;  // DqPlace::turn
  static_assert(!OPT.defer_turns || DQ_WRITER, "the dQ writer defers the turns");
  static_assert(!OPT.joint_turns || DQ_WRITER, "the dQ writer passes the joint turns");
  static_assert(!MASKED_APART || PRODUCER, "the warp-specialised kernel runs the masked steps apart");
  static constexpr bool PDL = OPT.pdl;
  static_assert(!PDL || OPT.dq_writer, "pdl: the producer's warpgroup alone reads what the preprocess writes");
  static constexpr bool DETERMINISTIC = OPT.deterministic;
  using Deterministic = HopperBwdConfig<D_, CAUSAL_, deterministic_twin(OPT)>;
  static constexpr bool FLOAT16 = OPT.float16;
  using Float16 = HopperBwdConfig<D_, CAUSAL_, float16_twin(OPT)>;
  static constexpr bool WINDOW = OPT.window;
  using Windowed = HopperBwdConfig<D_, CAUSAL_, windowed_twin(OPT)>;
  static constexpr bool PACKED = OPT.packed;
  // head_major is for the deterministic twin of the dense kernel, and with head_major_default for its
  // default twin too (the packed twins have their own order).
  static constexpr bool HEAD_MAJOR =
      OPT.head_major != HeadMajor::never && (OPT.deterministic || OPT.head_major_default) && !OPT.packed;
  static_assert(OPT.head_major == HeadMajor::never || OPT.producer, "head by head: the warp-specialised kernel");
  static_assert(!OPT.head_major_default || OPT.head_major != HeadMajor::never,
                "head_major_default: the default twin starts head by head where head_major says");
  // The batch elements (kv slots) per group of the start order (grouped_block) of a call of `slots`
  // of them with `key_tiles` key tiles each, the query tiles, dO and dQ's float32 accumulators that
  // one of them reads taking `slot_bytes`. HeadMajor::long_calls, as measured on an H100 at
  // B x H = 32 (step07's APPENDIX.md, G.10 and G.11): deterministic, head by head with the causal
  // mask from 32 key tiles (N = 4096); without it from 64 at head dim 128 and 128 at 64, where the
  // walks, all from the first query tile, otherwise wait the longer for their turns. The default
  // twin (head_major_default), head by head where every element's bytes overflow the L2
  // (`l2_bytes`), in the grid's order each head's blocks then reading them from memory again; with
  // the causal mask only from 128 key tiles, below which the grid's order, the longest walks of
  // every head first, ends the better balanced. HeadMajor::l2_groups: as many elements as the L2
  // holds the bytes of, at least one.
  static constexpr int head_group(index_t key_tiles, int slots, long long slot_bytes, long long l2_bytes) {
    if constexpr (OPT.head_major == HeadMajor::l2_groups) {
      const long long fit = l2_bytes / (slot_bytes > 0 ? slot_bytes : 1);
      return fit < 1 ? 1 : fit < slots ? static_cast<int>(fit) : slots;
    } else if constexpr (OPT.head_major == HeadMajor::long_calls) {
      if constexpr (OPT.deterministic) return key_tiles >= (CAUSAL_ ? 32 : D_ == 128 ? 64 : 128) ? 1 : slots;
      return slot_bytes * slots > l2_bytes && (!CAUSAL_ || key_tiles >= 128) ? 1 : slots;
    } else {
      return OPT.head_major == HeadMajor::always ? 1 : slots;
    }
  }
  using Packed = HopperBwdConfig<D_, CAUSAL_, packed_twin(OPT)>;
  static_assert(!PACKED || OPT.dq_writer, "packed batches: the producer's ragged loads and the dQ writer's adds");
  // With the producer, a block is the two computing warpgroups and the producer's; setmaxnreg
  // then moves registers from the producer (which only issues loads) to the others.
  static constexpr int BLOCK_THREADS = NUM_THREADS + (PRODUCER ? 128 : 0);
  // At head dim 64 the dQ writer spills in 24 registers (ptxas for sm_90a), and the computing
  // warpgroups need far fewer than 240: 32 and 232 there. The packed twins' producer and writer
  // read their sequence's rows and lengths too, and spill in 24 at head dim 128: 32 and 232 as well.
  // 128-query steps hold S^T and dP^T twice as wide, and spill in 232: 240 and 24 there. So do
  // 80-query steps at head dim 128 (in 232 ptxas serialises their wgmma instead of spilling).
  static constexpr bool WIDE_STEPS = BLOCK_M == 128;
  // ... and the producer's warp, in 24, no room for 4 rows of L_i and D_i per lane (3 at 80-query
  // steps): the warpgroup's two idle warps load them (backward_row_loader).
  static constexpr bool ROW_LOADERS = PRODUCER && BLOCK_M > 64;
  static constexpr int PRODUCER_REGS = DQ_WRITER && (D == 64 || OPT.packed) && !WIDE_STEPS ? 32 : 24;
  static constexpr int CONSUMER_REGS = DQ_WRITER && (D == 64 || OPT.packed) && !WIDE_STEPS ? 232 : 240;
  // setmaxnreg only moves registers between the block's warps: the sum may not exceed what the
  // launch gave the block, 168 a thread at one block of 384 threads per SM (65,536 / 384, rounded
  // down to a multiple of 8). Asking for more leaves setmaxnreg.inc waiting forever.
  static_assert(!PRODUCER ||
                    PRODUCER_REGS * 128 + CONSUMER_REGS * NUM_THREADS <= 65536 / BLOCK_THREADS / 8 * 8 * BLOCK_THREADS,
                "setmaxnreg: more registers than the launch gave the block");
  static constexpr int CHUNKS = D / kChunkElems;  // what the loader reads
  // dQ's share, BLOCK_M queries x D per step, split between the warpgroups three ways:
  //   by queries (128-query steps): each its 64 queries, all keys, all of D;
  //   by columns (head dim 128): each all queries and keys, its 64-column block of D; a whole
  //     share per warpgroup would cost 32 more registers than a thread has;
  //   by keys (otherwise): each its own 64 keys, all queries and D: a warpgroup then waits only
  //     for its own dS^T rows, but both add a whole share;
  //   transposed (80-query steps): by columns, but as dQ_i^T = K_j^T dS_i^T, 64 columns x 80
  //     queries, since wgmma's M is always 64 and 80 queries are not a multiple of it
  //     (FlashAttention-3's dQ_swapAB).
  // Every part is 64 columns wide and 64 queries long, or BLOCK_M transposed (DQ_ROWS).
  enum class DqSplit { by_queries, by_columns, by_keys, transposed };
  static constexpr DqSplit DQ_SPLIT = BLOCK_M == 128  ? DqSplit::by_queries
                                      : BLOCK_M == 80 ? DqSplit::transposed
                                      : D == 128      ? DqSplit::by_columns
                                                      : DqSplit::by_keys;
  static constexpr bool DQ_TRANSPOSED = DQ_SPLIT == DqSplit::transposed;
  static constexpr int DQ_ROWS = DQ_TRANSPOSED ? BLOCK_M : 64;  // queries in a part
  static_assert(!DQ_TRANSPOSED || DQ_TMA, "a transposed part leaves through shared memory");
  static constexpr int DQ_KEYS = DQ_SPLIT == DqSplit::by_keys ? WG_KEYS : BLOCK_N;
  static constexpr int DQ_COLS = 64;
  static constexpr bool DQ_NEEDS_BLOCK = DQ_SPLIT != DqSplit::by_keys;  // reads the other warpgroup's dS^T
  // Deterministic turns (backward_dq_writer.cuh): joint where the parts are disjoint and the row
  // asks for it, deferred where it asks for that and they are not.
  static constexpr bool JOINT_TURNS = OPT.joint_turns && DQ_SPLIT != DqSplit::by_keys;
  static constexpr bool DEFER_TURNS = OPT.defer_turns && !JOINT_TURNS;
  // dS^T in two stages when a warpgroup may write the next step's while the other still reads
  // this one's: with the producer nothing else keeps the warpgroups within a step of each other.
  static constexpr int DS_STAGES = PRODUCER && DQ_NEEDS_BLOCK ? 2 : 1;
  // Staging tiles of dQ's parts per warpgroup: two, so that a warpgroup stages a step's part while
  // the TMA (or the dQ writer) still reads the last one's. With the dQ writer and 128-query steps
  // only one fits beside two stages of 128-query dS^T (and at 80-query steps beside the 80-query
  // tiles at head dim 128): a warpgroup then waits, before it stages, for the writer to have read
  // its previous part out.
  static constexpr int DQ_STAGES = DQ_WRITER && (WIDE_STEPS || DQ_TRANSPOSED) ? 1 : 2;
  // dS^T's layout: rows of keys in the 128-byte swizzle, a 64-query column block after another;
  // at 80-query steps in the 32-byte swizzle, five blocks of 16 queries (wgmma's descriptors step
  // through whole blocks).
  static constexpr bool DS_SW32 = BLOCK_M == 80;
  static constexpr int TILE_ALIGN = 1024;  // a swizzle atom
  static constexpr std::size_t kv_elems = static_cast<std::size_t>(BLOCK_N) * D;
  static constexpr std::size_t q_elems = static_cast<std::size_t>(BLOCK_M) * D;
  static constexpr std::size_t ds_elems = static_cast<std::size_t>(BLOCK_N) * BLOCK_M;
  static constexpr std::size_t dq_part_bytes = static_cast<std::size_t>(DQ_ROWS) * DQ_COLS * sizeof(float);
  static_assert(D == 64 || D == 128, "head dims 64 and 128");
  static_assert(BLOCK_M == 64 || (BLOCK_M == 128 && D == 64) || (BLOCK_M == 80 && D == 128 && DQ_WRITER),
                "64-query steps, 128 at head dim 64, or 80 with the dQ writer at head dim 128");
  static_assert(D == 64 || DQ_SPLIT == DqSplit::by_columns || DQ_TRANSPOSED,
                "every part of dQ's share is 64 columns wide");
};

// Where each tile lies in a block's shared memory, in bytes from the first 1024-byte swizzle atom
// (the hardware swizzles by address bits; every tile is a whole number of atoms): K_j, V_j, two
// stages of Q_i and of dO_i, dS^T (BLOCK_N keys x BLOCK_M queries in column blocks, DS_STAGES
// stages), with dq_tma DQ_STAGES stages of each warpgroup's float32 part of dQ (DQ_ROWS queries x
// 64 columns, two boxes of 32 columns), two stages of L_i and of D_i, with the producer the
// mbarriers (K/V landed, and per stage Q_i's landed and handed back), where the last four steps' query tiles
// are (StepPlace, below) and, with the dQ writer, where each staged part of dQ goes (a DqPlace
// per warpgroup and stage).
template <class Cfg>
struct BwdLayout {
  static constexpr std::uint32_t kv_bytes = Cfg::kv_elems * 2, q_bytes = Cfg::q_elems * 2;
  static constexpr std::uint32_t ds_bytes = Cfg::ds_elems * 2, row_bytes = Cfg::BLOCK_M * 4;
  static constexpr std::uint32_t dq_bytes = Cfg::DQ_TMA ? Cfg::dq_part_bytes : 0;
  static constexpr std::uint32_t dq_box_bytes = Cfg::DQ_ROWS * 128;  // one box of 32 float columns
  static constexpr std::uint32_t k = 0, v = kv_bytes, q = 2 * kv_bytes, dO = q + 2 * q_bytes, dS = dO + 2 * q_bytes,
                                 dQ = dS + Cfg::DS_STAGES * ds_bytes,
                                 L = dQ + Cfg::DQ_STAGES * Cfg::WARPGROUPS * dq_bytes, D = L + 2 * row_bytes,
                                 bars = D + 2 * row_bytes;
  static constexpr int kBarriers = Cfg::PRODUCER ? 5 : 0;  // kv_full, full[2], empty[2]
  static constexpr std::uint32_t full_bars = bars + 8, empty_bars = bars + 24;
  static constexpr std::uint32_t steps = bars + kBarriers * 8;
  static constexpr std::uint32_t dq_places = (steps + 4 * 8 + 15) / 16 * 16;  // 16-byte stores
  static constexpr std::uint32_t end = dq_places + (Cfg::DQ_WRITER ? Cfg::DQ_STAGES * Cfg::WARPGROUPS * 16 : 0);
  static constexpr std::size_t smem_bytes = end + Cfg::TILE_ALIGN;
  static_assert(dS % Cfg::TILE_ALIGN == 0 && dQ % Cfg::TILE_ALIGN == 0, "tiles on swizzle atoms");
  static_assert(smem_bytes <= 227 * 1024, "an H100/H200 block has at most 227 KiB of shared memory");
};

// Where step t of a block's walk (QueryWalk) is: its query batch element and first query. Whoever
// loads the step's tiles writes it into slot t % 4 of the layout's `steps` with them (the cp.async
// kernel's thread 0, the producer's lane 0), and the computing warps read it there at each use
// rather than holding it, or recomputing it with a division, through the step: the kernels at the
// edge have no register to spare. Four slots, because the loads run at most two steps ahead and a
// step reads its slot after handing its stage back.
struct StepPlace {
  int bh, q0;
};
template <class Cfg>
__device__ __forceinline__ void store_step_place(std::uint32_t tiles, int t, StepPlace at) {
  asm volatile("st.shared.v2.s32 [%0], {%1, %2};\n" ::"r"(tiles + BwdLayout<Cfg>::steps + 8 * (t & 3)), "r"(at.bh),
               "r"(at.q0)
               : "memory");
}
// One field of it (0: bh, 1: q0), a register for one use.
template <class Cfg, int FIELD>
__device__ __forceinline__ int step_place_field(std::uint32_t tiles, int t) {
  int x;
  asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(x) : "r"(tiles + BwdLayout<Cfg>::steps + 8 * (t & 3) + 4 * FIELD));
  return x;
}
template <class Cfg>
__device__ __forceinline__ StepPlace step_place(std::uint32_t tiles, int t) {
  return {step_place_field<Cfg, 0>(tiles, t), step_place_field<Cfg, 1>(tiles, t)};
}

// Where a staged part of dQ goes, and, for a windowed twin with deterministic gradients, the count
// of its turn (dq_turn): written by the warpgroup's first thread with the part, read by the dQ
// writer. The writer works out the other turns itself; a window's is more than its 24 registers
// hold at head dim 128, and the computing warpgroups of the overlapped products have none to
// spare for the others.
struct DqPlace {
  int bh, q0, turn;
};
__device__ __forceinline__ void st_shared_dq_place(std::uint32_t address, DqPlace at) {
  asm volatile("st.shared.v4.s32 [%0], {%1, %2, %3, %3};\n" ::"r"(address), "r"(at.bh), "r"(at.q0), "r"(at.turn)
               : "memory");
}
__device__ __forceinline__ DqPlace ld_shared_dq_place(std::uint32_t address) {
  DqPlace at;
  asm volatile(
      "ld.shared.v2.s32 {%0, %1}, [%3];\n"
      "ld.shared.s32 %2, [%3 + 8];\n"
      : "=r"(at.bh), "=r"(at.q0), "=r"(at.turn)
      : "r"(address)
      : "memory");
  return at;
}

// The named barriers of v6b (0 is __syncthreads').
enum class BwdBarrier : int {
  block_ds = 1,  // the block's dS^T is in shared memory (dQ by queries or columns)
  wg_ds0 = 2,    // warpgroup wg's dS^T rows are (dQ by keys): wg_ds0 + wg
  wg_dq0 = 4,    // warpgroup wg's part of dQ is in shared memory (dq_tma): wg_dq0 + wg
  // With the dQ writer, per warpgroup wg and stage s (id + 2 wg + s), between the warpgroup's 128
  // threads and the writer's 32:
  dq_full0 = 6,   // the part is staged (the warpgroup arrives, the writer waits)
  dq_empty0 = 10  // the writer has read it out (the writer arrives, the warpgroup waits)
};
inline constexpr int kDqHandoverThreads = 128 + 32;

// Warpgroup wg's staging tile of dQ for step t (0 .. DQ_STAGES * WARPGROUPS - 1): which tile of
// the layout's dQ, which DqPlace, and which pair of the handover's barriers.
template <class Cfg>
__device__ __forceinline__ int dq_slot(int wg, int t) {
  static_assert(Cfg::DQ_STAGES == 1 || Cfg::DQ_STAGES == 2);
  return Cfg::DQ_STAGES == 2 ? 2 * wg + (t & 1) : wg;
}

// A warpgroup's key-row tiles, each warp its 16 rows in the accumulator layout of ptx/wgmma.cuh.
template <class Cfg>
using KeysByQueries = float[Cfg::BLOCK_M / 8][4];  // S^T, P^T, dP^T, dS^T
template <class Cfg>
using KeysByDims = float[Cfg::D / 8][4];  // dK_w, dV_w
// A warpgroup's part of dQ_i's share: 64 queries x 64 columns, or transposed 64 columns x BLOCK_M
// queries.
template <class Cfg>
using QueryShare = float[(Cfg::DQ_TRANSPOSED ? Cfg::BLOCK_M : Cfg::DQ_COLS) / 8][4];
template <class Cfg>
using KeyRowFrags = std::uint32_t[Cfg::BLOCK_M / 16][4];  // P^T or dS^T as bf16 A fragments

// Where a thread of a warpgroup stands.
struct BwdThread {
  int wg;    // its warpgroup: keys 64 wg .. 64 wg + 63 of the block
  int row;   // its first row inside the warpgroup's 64 (16 (warp % 4) + lane / 4); the other is row + 8
  int col;   // its first column inside an 8-column accumulator tile: 2 (lane % 4)
  int key0;  // the warpgroup's first key in the sequence
};

// A block's walk (QueryWalk): packed, its key tile and batch element of K and V are its copy of the
// parameters' (bwd_item_params in backward.cuh); head by head, head_major_place's.
template <class Cfg>
using BwdWalk =
    QueryWalk<Cfg::BLOCK_M, Cfg::BLOCK_N, Cfg::CAUSAL, Cfg::DETERMINISTIC, Cfg::WINDOW, Cfg::PACKED, Cfg::HEAD_MAJOR>;

}  // namespace fa2::flash
