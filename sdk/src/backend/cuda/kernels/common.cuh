/* Device helpers shared by the kernels (CUDA only): typed loads and stores
 * computing in FP32, and the launch geometry of grid-stride loops. */
#ifndef FOVEA_KERNELS_COMMON_CUH
#define FOVEA_KERNELS_COMMON_CUH

#include <cuda_fp16.h>
#include <stddef.h>
#include <stdint.h>

namespace fv_k {

__device__ __forceinline__ float load(const float *p, size_t i) {
    return p[i];
}
__device__ __forceinline__ float load(const __half *p, size_t i) {
    return __half2float(p[i]);
}
__device__ __forceinline__ float load(const unsigned char *p, size_t i) {
    return (float)p[i];
}
__device__ __forceinline__ void store(float *p, size_t i, float v) {
    p[i] = v;
}
/* Round to nearest, ties to even, as the CPU's fv_f32_to_f16. */
__device__ __forceinline__ void store(__half *p, size_t i, float v) {
    p[i] = __float2half_rn(v);
}

__device__ __forceinline__ size_t thread_index() {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ size_t thread_count() {
    return (size_t)gridDim.x * blockDim.x;
}

const unsigned threads = 256;

/* Blocks for n work items with grid-stride loops (capped; the loop covers
 * the rest). Never 0. */
static inline unsigned blocks_for(size_t n) {
    size_t b = (n + threads - 1) / threads;
    const size_t cap = (size_t)1 << 16;
    return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

} // namespace fv_k

#endif
