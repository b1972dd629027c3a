#include <cuda_fp16.h>
#include "conv_epilogue.cuh"
#include "../cuda_check.h"
#include "../../activation.h"

static __device__ __forceinline__ float activate(fv_activation act, float alpha, float x) {
    return fv__act(act, alpha, x);
}

/* One thread per 8 channels of a pixel: kp is a multiple of 8, so each
 * thread moves one 16-byte vector in and out. */
static __global__ void epilogue_kernel(uint4 *y, size_t vecs, int kp, int k, const __half *bias,
                                       fv_activation act, float alpha, int pad_only) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* launched early (programmatic dependent launch): the convolution's
     * output must be complete and visible first; a no-op otherwise */
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= vecs) return;
    int c0 = (int)((i * 8) % (size_t)kp);
    if (pad_only && c0 + 8 <= k) return; /* nothing to clear in this vector */
    uint4 v = y[i];
    __half *h = reinterpret_cast<__half *>(&v);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        int c = c0 + j;
        if (c >= k) {
            h[j] = __float2half_rn(0.0f);
        } else if (!pad_only) {
            float x = __half2float(h[j]);
            if (bias) x += __half2float(bias[c]);
            h[j] = __float2half_rn(activate(act, alpha, x));
        }
    }
    y[i] = v;
}

extern "C" fv_status fv__cuda_conv_epilogue(cudaStream_t stream, void *y, size_t pixels, int kp,
                                            int k, const void *bias, fv_activation act, float alpha,
                                            int early) {
    FV_REQUIRE(y && kp >= k && k >= 1 && kp % 8 == 0 && ((uintptr_t)y % 16) == 0, FV_ERR_INTERNAL,
               "conv epilogue: bad arguments (kp=%d k=%d)", kp, k);
    int pad_only = bias == NULL && act == FV_ACT_IDENTITY;
    if (pad_only && kp == k) return FV_OK;
    size_t vecs = pixels * (size_t)kp / 8;
    if (vecs == 0) return FV_OK;
    unsigned blocks = (unsigned)((vecs + 255) / 256);
#if CUDART_VERSION >= 12030
    if (early) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(blocks);
        cfg.blockDim = dim3(256);
        cfg.stream = stream;
        cudaLaunchAttribute at[1] = {};
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        FV_CUDA_TRY(cudaLaunchKernelEx(&cfg, epilogue_kernel, (uint4 *)y, vecs, kp, k,
                                       (const __half *)bias, act, alpha, pad_only));
        return FV_OK;
    }
#else
    (void)early;
#endif
    epilogue_kernel<<<blocks, 256, 0, stream>>>((uint4 *)y, vecs, kp, k, (const __half *)bias, act,
                                                alpha, pad_only);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}
