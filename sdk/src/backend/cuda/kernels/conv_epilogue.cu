#include <cuda_fp16.h>
#include "conv_epilogue.cuh"
#include "pdl.cuh"
#include "../cuda_check.h"
#include "../../activation.h"

namespace {

constexpr int THREADS = 256;
constexpr int UNROLL = 4; /* 16-byte vectors a thread has in flight */

/* One 16-byte vector: 8 channels c0..c0+7 of a pixel (kp is a multiple of
 * 8). ACT < 0: only the padding lanes (c >= k) are cleared. */
template <int ACT>
__device__ __forceinline__ uint4 apply(uint4 v, int c0, int k, const __half *bias, const uint4 *zv,
                                       float alpha) {
    __half *h = reinterpret_cast<__half *>(&v);
    __align__(16) __half b[8];
    __align__(16) uint4 zz = {};
    const __half *z = reinterpret_cast<const __half *>(&zz);
    if (ACT >= 0 && bias)
        *reinterpret_cast<uint4 *>(b) = *reinterpret_cast<const uint4 *>(bias + c0);
    if (ACT >= 0 && zv) zz = *zv;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int c = c0 + j;
        if (c >= k) {
            h[j] = __float2half_rn(0.0f);
        } else if (ACT >= 0) {
            float x = __half2float(h[j]);
            if (bias) x += __half2float(b[j]);
            if (zv) x += __half2float(z[j]);
            h[j] = __float2half_rn(fv__act(ACT, alpha, x));
        }
    }
    return v;
}

/* Grid-stride over the vectors, UNROLL loads in flight per thread (the
 * output of a large convolution is read once: latency, not arithmetic). */
template <int ACT>
__global__ void __launch_bounds__(THREADS)
    epilogue_kernel(uint4 *y, size_t vecs, int kv, int yv, int k, const __half *bias,
                    const uint4 *z, float alpha) {
    /* launched early (pdl.cuh): the convolution's output must be complete
     * and visible first */
    fv_k::pdl_wait();
    const size_t stride = (size_t)gridDim.x * THREADS;
    for (size_t base = (size_t)blockIdx.x * THREADS + threadIdx.x; base < vecs;
         base += stride * UNROLL) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const size_t i = base + u * stride;
            if (i < vecs) v[u] = y[yv == kv ? i : i / kv * yv + i % kv];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const size_t i = base + u * stride;
            if (i < vecs) {
                const int c0 = (int)(i % (size_t)kv) * 8;
                if (ACT < 0 && c0 + 8 <= k) continue; /* nothing to clear */
                y[yv == kv ? i : i / kv * yv + i % kv] =
                    apply<ACT>(v[u], c0, k, bias, z ? z + i : nullptr, alpha);
            }
        }
    }
}

typedef void (*kernel_fn)(uint4 *, size_t, int, int, int, const __half *, const uint4 *, float);

kernel_fn pick(fv_activation act, int pad_only) {
    if (pad_only) return epilogue_kernel<-1>;
    switch (act) {
    case FV_ACT_RELU:
        return epilogue_kernel<FV_ACT_RELU>;
    case FV_ACT_CLIPPED_RELU:
        return epilogue_kernel<FV_ACT_CLIPPED_RELU>;
    case FV_ACT_SIGMOID:
        return epilogue_kernel<FV_ACT_SIGMOID>;
    case FV_ACT_TANH:
        return epilogue_kernel<FV_ACT_TANH>;
    case FV_ACT_LEAKY_RELU:
        return epilogue_kernel<FV_ACT_LEAKY_RELU>;
    default:
        return epilogue_kernel<FV_ACT_IDENTITY>;
    }
}

} // namespace

extern "C" fv_status fv__cuda_conv_epilogue(cudaStream_t stream, void *y, size_t pixels, int kp,
                                            int ys, int k, const void *bias, const void *z,
                                            fv_activation act, float alpha, int early) {
    FV_REQUIRE(y && kp >= k && k >= 1 && kp % 8 == 0 && ys >= kp && ys % 8 == 0 &&
                   ((uintptr_t)y % 16) == 0 && ((uintptr_t)bias % 16) == 0 &&
                   ((uintptr_t)z % 16) == 0,
               FV_ERR_INTERNAL, "conv epilogue: bad arguments (kp=%d k=%d)", kp, k);
    int pad_only = bias == NULL && z == NULL && act == FV_ACT_IDENTITY;
    if (pad_only && kp == k) return FV_OK;
    size_t vecs = pixels * (size_t)kp / 8;
    if (vecs == 0) return FV_OK;
    /* enough blocks for every SM several times over; each thread UNROLL
     * vectors a pass */
    size_t want = (vecs + (size_t)THREADS * UNROLL - 1) / ((size_t)THREADS * UNROLL);
    unsigned blocks = (unsigned)(want < 65535 ? want : 65535);
    kernel_fn f = pick(act, pad_only);
    uint4 *yv = static_cast<uint4 *>(y);
    const __half *bh = static_cast<const __half *>(bias);
    const uint4 *zv = static_cast<const uint4 *>(z);
    FV_CUDA_TRY(fv_k::launch(early != 0, dim3(blocks), dim3(THREADS), 0, stream, f, yv, vecs,
                             kp / 8, ys / 8, k, bh, zv, alpha));
    return FV_OK;
}
