#include <cuda_fp16.h>
#include "conv_epilogue.cuh"
#include "../cuda_check.h"

static __device__ float activate(fv_activation act, float alpha, float x) {
    switch (act) {
    case FV_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case FV_ACT_CLIPPED_RELU: return x < 0.0f ? 0.0f : (x > alpha ? alpha : x);
    case FV_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case FV_ACT_TANH: return tanhf(x);
    case FV_ACT_LEAKY_RELU: return x >= 0.0f ? x : alpha * x;
    default: return x;
    }
}

static __global__ void epilogue_kernel(__half *y, size_t n, int kp, int k, const __half *bias,
                                       fv_activation act, float alpha, int pad_only) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int c = (int)(i % (size_t)kp);
    if (c >= k) {
        y[i] = __float2half_rn(0.0f);
        return;
    }
    if (pad_only) return;
    float v = __half2float(y[i]);
    if (bias) v += __half2float(bias[c]);
    y[i] = __float2half_rn(activate(act, alpha, v));
}

extern "C" fv_status fv__cuda_conv_epilogue(cudaStream_t stream, void *y, size_t pixels, int kp,
                                            int k, const void *bias, fv_activation act,
                                            float alpha) {
    FV_REQUIRE(y && kp >= k && k >= 1, FV_ERR_INTERNAL, "conv epilogue: bad arguments");
    int pad_only = bias == NULL && act == FV_ACT_IDENTITY;
    if (pad_only && kp == k) return FV_OK;
    size_t n = pixels * (size_t)kp;
    if (n == 0) return FV_OK;
    unsigned blocks = (unsigned)((n + 255) / 256);
    epilogue_kernel<<<blocks, 256, 0, stream>>>((__half *)y, n, kp, k, (const __half *)bias, act,
                                                alpha, pad_only);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}
