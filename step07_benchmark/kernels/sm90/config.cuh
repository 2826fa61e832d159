// v6's configuration: HopperOptions, one field per idea of the ablation (product/forward_sm90.cu's table
// of configurations sets them), and HopperConfig, the constants every part of the kernel reads
// (tile sizes, threads and registers per role, the shared-memory budget).
#pragma once

#include <cuda_bf16.h>

#include <cstddef>

#include "step07_benchmark/kernels/device/forward_params.cuh"  // windowed_twin
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/ptx/mma.cuh"  // elem16, float16_twin

namespace fa2::flash {

struct HopperOptions {
  int warpgroups = 2;         // 64 query rows each; they share the K and V tiles of the block
  int block_n = 128;          // keys per tile (the N of S's wgmma): 64, 128, or 176 with TMA
  bool overlap = false;       // S_{j+1} and O += P_j V_j compute during the softmax of tile j + 1
  bool hold_softmax = false;  // (overlap, TMA) the wait for O += P_j V_j held after the softmax
                              // (wgmma_wait_after): a plain wait, ptxas lifts above it
  bool early_alpha = false;   // (overlap, TMA) O *= alpha between issuing S_{j+1} and O += P_j V_j,
                              // under S's product, not after the wait for O
  int stages = 2;             // K/V tiles in shared memory: the overlapped loop loads stages - 1 ahead
  int min_blocks = 1;         // blocks per SM the registers must leave room for
  bool tma = false;           // warp specialisation: a producer warpgroup (one thread of it) loads Q,
                              // K, V with TMA into a ring of stages guarded by mbarriers; the other
                              // warpgroups only compute, with the producer's registers
  bool pingpong = false;      // (TMA) the warpgroups take turns to issue their products, so that one's
                              // softmax runs while another's products do (with 3, a round robin)
  bool store_tma = false;     // (TMA) O leaves through shared memory: each warpgroup writes its rows
                              // there and one thread stores them with TMA, in the background
  bool persistent = false;    // (TMA) one block per SM, walking the query tiles heaviest first; the
                              // producer loads the next tile's Q and K/V during this one's epilogue
  bool lazy_rescale = false;  // skip O *= alpha in a warp whose rows all kept their maximum
  bool early_q = false;       // (persistent) each warp hands Q back after its last S, not after its
                              // last product: the next item's Q loads during this one's last tile
  int exp_fma_eighths = 0;    // of every 8 column groups of S (8 keys each), how many take 2^x
                              // from a cubic on the FMA units (exp2_fma.hpp) instead of MUFU
  bool cache_hints = false;   // (TMA) K and V loaded to stay in L2 (evict_last), Q to leave it
                              // first (evict_first): other query tiles read the same K and V
  bool l2_order = false;      // (persistent, causal) the heaviest-first order within groups of
                              // heads whose K and V fit in L2 together, group after group
  bool float16 = false;       // fp16 elements instead of bf16; not a row's choice: every
                              // configuration is built both ways (Cfg::Float16)
  bool window = false;        // (TMA, 2 warpgroups) a sliding window's key-tile range and masks; also
                              // built both ways (Cfg::Windowed)
  bool packed = false;        // (TMA) a packed batch of sequences of different lengths (Cfg::Packed,
                              // device/packed_schedule.hpp): work items from the schedule, ragged
                              // TMA views, each item's lengths and window its sequence's
};

// The twin of a configuration for packed batches (product/packed_sm90.cu builds it).
constexpr HopperOptions packed_twin(HopperOptions o) {
  o.packed = true;
  return o;
}

// A window's masks need registers that only the warp-specialised kernel's two warpgroups have (at
// three, its windowed twin spills): the configurations with other options take no window.
constexpr bool takes_window(const HopperOptions& o) {
  return o.tma && o.warpgroups == 2;
}

template <int D_, bool CAUSAL_, HopperOptions OPT>
struct HopperConfig {
  static constexpr int D = D_;
  static constexpr bool CAUSAL = CAUSAL_;
  static constexpr int WARPGROUPS = OPT.warpgroups;
  static constexpr bool FLOAT16 = OPT.float16;
  using Float16 = HopperConfig<D_, CAUSAL_, float16_twin(OPT)>;
  static constexpr bool WINDOW = OPT.window;
  using Windowed = HopperConfig<D_, CAUSAL_, windowed_twin(OPT)>;
  static constexpr bool PACKED = OPT.packed;
  using Packed = HopperConfig<D_, CAUSAL_, packed_twin(OPT)>;
  static constexpr bool TMA = OPT.tma;
  static constexpr int NUM_WARPS = 4 * WARPGROUPS;                     // the computing warps
  static constexpr int NUM_THREADS = 32 * NUM_WARPS;                   // what the cp.async loads split over
  static constexpr int BLOCK_THREADS = NUM_THREADS + (TMA ? 128 : 0);  // + the producer warpgroup
  // Registers after setmaxnreg (the block starts with 65536 / BLOCK_THREADS each, rounded down to
  // a multiple of 8): the producer keeps few, the computing warpgroups share the rest. Two
  // warpgroups: 40 and 232, or 24 and 240 for the larger S of 176-key tiles; three: 24 and 160.
  static constexpr int PRODUCER_REGS = WARPGROUPS == 2 && OPT.block_n != 176 ? 40 : 24;
  static constexpr int CONSUMER_REGS = WARPGROUPS == 2 ? (OPT.block_n == 176 ? 240 : 232) : 160;
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * NUM_THREADS <= 65536, "the register file");
  static constexpr int BLOCK_M = 64 * WARPGROUPS;
  // 176-key tiles are for the unmasked case: under the causal mask (or a window's) their extra
  // registers spill, and the configuration takes 128-key tiles instead (FlashAttention-3 does the
  // same).
  static constexpr int BLOCK_N = (CAUSAL || WINDOW) && OPT.block_n == 176 ? 128 : OPT.block_n;
  static constexpr bool OVERLAP = OPT.overlap;
  static constexpr bool HOLD_SOFTMAX = OPT.hold_softmax;
  static constexpr bool EARLY_ALPHA = OPT.early_alpha;
  // What v5's functions read (online_softmax, mask_scores, write_output): one 16-row tile per
  // warp, O stored straight from registers.
  static constexpr int WARP_M = 1;
  static constexpr bool O_VIA_SMEM = false;
  static constexpr int CHUNKS = D / kChunkElems;
  static constexpr int STAGES = OPT.stages;
  static constexpr int MIN_BLOCKS_PER_SM = OPT.min_blocks;
  static constexpr int TILE_ALIGN = 1024;  // a swizzle atom: 8 rows of 128 bytes
  static constexpr bool STORE_TMA = OPT.store_tma;
  static constexpr bool PERSISTENT = OPT.persistent;
  static constexpr bool LAZY_RESCALE = OPT.lazy_rescale;
  static constexpr int EXP_FMA_EIGHTHS = OPT.exp_fma_eighths;
  static constexpr bool EARLY_Q = OPT.early_q;
  static constexpr bool CACHE_HINTS = OPT.cache_hints;
  static constexpr bool L2_ORDER = OPT.l2_order && CAUSAL_;  // without the mask a head's tiles are consecutive
  // What SharedStorage (shared_storage.cuh, which checks these sums against its layout) holds:
  // Q, the K/V stages and (STORE_TMA) O's own tile, so that the next Q can land during the
  // epilogue; then (TMA) the mbarriers, 8 bytes each: Q full, Q empty, and per stage K full,
  // V full, K empty, V empty. The launch asks for TILE_ALIGN more, to start it on an atom.
  static constexpr std::size_t tiles_bytes =
      static_cast<std::size_t>((STORE_TMA ? 2 : 1) * BLOCK_M + 2 * STAGES * BLOCK_N) * D * sizeof(elem16);
  static constexpr std::size_t smem_bytes = tiles_bytes + (TMA ? (2 + 4 * STAGES) * 8 : 0) + TILE_ALIGN;
  static_assert(smem_bytes <= 227 * 1024, "an H100/H200 block has at most 227 KiB of shared memory");
  static_assert(TMA || (!STORE_TMA && !PERSISTENT), "the TMA store and the persistent loop need the producer");
  static_assert(D == 64 || D == 128, "head dims 64 and 128");
  static_assert(BLOCK_N == 64 || BLOCK_N == 128 || (BLOCK_N == 176 && TMA), "key tiles of 64, 128 or (TMA) 176");
  static_assert(WARPGROUPS == 2 || WARPGROUPS == 3, "two or three warpgroups");
  static_assert(!EARLY_Q || PERSISTENT, "handing Q back early pays only when a block loads another");
  static_assert(!OPT.cache_hints || TMA, "the cache hints ride on the TMA loads");
  static_assert(!OPT.l2_order || PERSISTENT, "the order of the items is the persistent blocks'");
  static_assert(EXP_FMA_EIGHTHS >= 0 && EXP_FMA_EIGHTHS <= 8, "a share of the exponentials in eighths");
  static_assert(TMA || (OVERLAP ? (STAGES == 3 || STAGES == 4) : STAGES == 2),
                "the overlapped loop keeps 3 or 4 K/V stages, the plain loop 2");
  static_assert(!TMA || (OVERLAP && STAGES >= 2), "the producer warp feeds the overlapped loop");
  static_assert(!HOLD_SOFTMAX || TMA, "hold_softmax: the warp-specialised kernel's overlapped loop");
  static_assert(!EARLY_ALPHA || TMA, "early_alpha: the warp-specialised kernel's overlapped loop");
  static constexpr bool PINGPONG = OPT.pingpong;
  // The consumer loop compiled once per warpgroup, its index a constant (the turn barriers' ids
  // immediates, not registers): under the mask three warpgroups taking turns need the registers
  // that frees (at head dim 64 they spill without it).
  static constexpr bool LOOP_PER_WARPGROUP = PINGPONG && WARPGROUPS == 3 && CAUSAL_;
  // Under a mask or a window, the count of key tiles a warpgroup sees, made from its index, read
  // from lane 0 as the index is for LOOP_PER_WARPGROUP (forward_kernel.cuh says why): the loop
  // branches on the count at every tile.
  static constexpr bool UNIFORM_SEEN = (CAUSAL_ || WINDOW) && !LOOP_PER_WARPGROUP;
  static_assert(!PINGPONG || TMA, "turns between the warpgroups of a TMA block");
  static constexpr bool TAKES_WINDOW = takes_window(OPT);
  static_assert(!WINDOW || TAKES_WINDOW, "a sliding window in the warp-specialised kernel of 2 warpgroups only");
  static_assert(!PACKED || (TMA && !L2_ORDER), "packed batches: the warp-specialised kernel, the schedule's order");
};

}  // namespace fa2::flash
