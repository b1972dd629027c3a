/* Asynchronous global -> shared copies (cp.async, SM 8.0+), with plain
 * loads and stores before SM 8.0 (the waits are then no-ops). Device code
 * only. */
#ifndef FOVEA_KERNELS_CP_ASYNC_CUH
#define FOVEA_KERNELS_CP_ASYNC_CUH

#include <cuda_runtime.h>

namespace fv_k {

/* Copies N (8 or 16) bytes, or writes N zero bytes when !valid (src is then
 * not read). */
template <int N>
__device__ __forceinline__ void copy_async(void *dst, const void *src, bool valid) {
    static_assert(N == 8 || N == 16, "copy_async copies 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    const int bytes = valid ? N : 0;
    if (N == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                     "r"(bytes));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(d), "l"(src),
                     "r"(bytes));
#else
    if (N == 16)
        *reinterpret_cast<uint4 *>(dst) =
            valid ? __ldg(reinterpret_cast<const uint4 *>(src)) : make_uint4(0u, 0u, 0u, 0u);
    else
        *reinterpret_cast<uint2 *>(dst) =
            valid ? __ldg(reinterpret_cast<const uint2 *>(src)) : make_uint2(0u, 0u);
#endif
}

/* Closes the group of copies issued since the last commit. */
__device__ __forceinline__ void copy_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* Waits until at most PENDING of this thread's groups are still in flight. */
template <int PENDING> __device__ __forceinline__ void copy_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
#endif
}

} // namespace fv_k

#endif
