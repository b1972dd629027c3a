/* Programmatic dependent launch (SM 9.0+, CUDA 12.3+): a kernel launched
 * "early" is scheduled while the kernel before it on the stream drains,
 * and waits in its first instructions until that kernel's results are
 * complete and visible (griddepcontrol.wait). What it hides is the launch
 * gap between two kernels of a stream or a CUDA graph (captured as a
 * programmatic edge), not any of either kernel's work. Where the launch
 * attribute is not given, or before SM 9.0, the wait is a no-op and the
 * launch an ordinary one. The context decides (fv__cuda_state.pdl; off
 * with FV_NO_PDL=1). */
#ifndef FOVEA_KERNELS_PDL_CUH
#define FOVEA_KERNELS_PDL_CUH

#include <cuda_runtime.h>

namespace fv_k {

/* Every thread, before its first global read or write: wait for the
 * kernels before this one on the stream. */
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Let the next early kernel be scheduled once every block of this one has
 * got here (so once its last block has started, where every block calls it
 * first): the next kernel's blocks then take the SM slots this one's leave,
 * and wait for its results in their own pdl_wait. Without it the next
 * kernel is scheduled when this one's last block exits. */
__device__ __forceinline__ void pdl_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* kernel<<<grid, block, smem, stream>>>(args...), as a programmatic
 * dependent of the kernel before it when early (the kernel must call
 * pdl_wait first). Returns the launch's error. */
template <typename... P, typename... A>
static inline cudaError_t launch(bool early, dim3 grid, dim3 block, size_t smem,
                                 cudaStream_t stream, void (*kernel)(P...), A... args) {
#if CUDART_VERSION >= 12030
    if (early) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = block;
        cfg.dynamicSmemBytes = smem;
        cfg.stream = stream;
        cudaLaunchAttribute at[1] = {};
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        return cudaLaunchKernelEx(&cfg, kernel, args...);
    }
#else
    (void)early;
#endif
    kernel<<<grid, block, smem, stream>>>(args...);
    return cudaGetLastError();
}

} // namespace fv_k

#endif
