/* Hopper's warpgroup MMA (wgmma, sm_90a) for the conv kernels built on it
 * (conv_wgmma.cu, conv_wgmma_px.cu): shared-memory matrix descriptors and
 * the fence / commit / wait of asynchronous MMAs. Device code only,
 * compiled where __CUDA_ARCH_FEAT_SM90_ALL is defined. */
#ifndef FOVEA_KERNELS_WGMMA_CUH
#define FOVEA_KERNELS_WGMMA_CUH

#include <stdint.h>
#include "tma.cuh"

#if FV_TMA && defined(__CUDA_ARCH_FEAT_SM90_ALL)
namespace fv_k {

/* A shared-memory matrix descriptor without swizzling: start address,
 * leading (K) and stride (M or N) byte offsets between core matrices (8
 * rows of 16 bytes). Offsets added later to the start count 16-byte units. */
__device__ __forceinline__ uint64_t wg_desc(const void *p, unsigned lbo, unsigned sbo) {
    return (uint64_t)((smem_u32(p) & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) |
           ((uint64_t)(sbo >> 4) << 32);
}
__device__ __forceinline__ void wg_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* Keeps the compiler from moving accumulator accesses across the
 * asynchronous MMAs. */
template <int M> __device__ __forceinline__ void wg_pin(float (&d)[M]) {
#pragma unroll
    for (int i = 0; i < M; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

} // namespace fv_k
#endif
#endif
