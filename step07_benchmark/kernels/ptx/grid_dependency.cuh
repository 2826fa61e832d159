// Programmatic dependent launch (sm_90): a kernel launched with the attribute
// cudaLaunchAttributeProgrammaticStreamSerialization may start before the kernel ahead of it in
// the stream has finished, once every block of that one has said so (allow_dependent_launch) or
// ended; before it reads what that kernel writes, a thread waits for it to have finished and its
// writes to be visible (wait_for_prior_grids). Both do nothing in a kernel launched the ordinary
// way, and compile to nothing for GPUs before sm_90.
#pragma once

namespace fa2::flash {

__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

}  // namespace fa2::flash
