// Variant 6: v5's forward (sm80/forward.cuh) with its two products moved from mma.sync to Hopper's
// wgmma (ptx/wgmma.cuh). A warpgroup of four warps owns 64 query rows and multiplies them
// in one instruction per 16-deep slice, Q and K straight from shared memory; P stays in
// registers and feeds O += P V as the A operand. wgmma runs in the background, so the first
// change it allows is overlap: S_{j+1} = Q K_{j+1}^T is issued before the softmax of tile j and
// computes while the exponentials do. The online softmax, the masks and the epilogue are v5's
// functions: a warp's 16 rows of a wgmma accumulator have mma.sync's layout. bf16 or fp16, head dims 64
// and 128, sm_90a only (product/forward_sm90.cu; the kernel bodies are empty elsewhere).
//
// This header gathers the parts, each a file of sm90/ (FlashAttention-3's split):
//   config.cuh             HopperOptions (one field per idea) and HopperConfig (the constants)
//   shared_storage.cuh     SharedStorage: the tiles and mbarriers laid out in shared memory
//   pipeline.hpp           PipelineState: a tile's stage and phase in the ring (host and device)
//   named_barriers.hpp     the ids of the named barriers
//   ../tile_scheduler.hpp  which items a block computes, and the causal and window key-tile ranges (with v5)
//   key_tile.cuh           one key tile of a warpgroup: S and O += P V on wgmma, the softmax
//   lab/sm90_cp_async.cuh  v6.1 to v6.5: cp.async loads, the block in lockstep (hopper_fwd_kernel)
//   producer.cuh           v6.6 on: the producer warpgroup's TMA loads
//   consumer.cuh           v6.6 on: the computing warpgroups' main loop over the ring
//   epilogue.cuh           v6.6 on: O and L, from registers or by TMA
//   sm90/forward_kernel.cuh          v6.6 on: the warp-specialised kernel wiring them (hopper_ws_fwd_kernel)
#pragma once

#include "step07_benchmark/kernels/sm90/config.cuh"
#include "step07_benchmark/kernels/sm90/forward_kernel.cuh"
