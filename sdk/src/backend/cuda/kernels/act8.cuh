/* The fused epilogue of fovea's convolution kernels: 8 FP32 sums of one
 * pixel's channels ch0..ch0+7 -> + bias, activation, FP16, as one 16-byte
 * vector; channels >= k (the padding lanes) come out 0. Device code only. */
#ifndef FOVEA_KERNELS_ACT8_CUH
#define FOVEA_KERNELS_ACT8_CUH

#include <cuda_fp16.h>
#include "../../activation.h"

namespace fv_k {

/* max(x, 0) for two floats, rounded to FP16: on SM 8.0+ the conversion
 * clamps (cvt .relu: no instruction of its own; a NaN stays NaN there),
 * before it a max after the rounding (monotonic, it keeps the sign: the same
 * result). */
__device__ __forceinline__ __half2 relu_pack(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned u;
    asm("cvt.rn.relu.f16x2.f32 %0, %1, %2;\n" : "=r"(u) : "f"(hi), "f"(lo));
    return *reinterpret_cast<const __half2 *>(&u);
#else
    return __hmax2(__floats2half2_rn(lo, hi), __float2half2_rn(0.0f));
#endif
}

/* b: the 8 FP32 biases of ch0.. (zeros without a bias). ACT: the
 * fv_activation, a compile-time constant (a switch per element cost ~25%
 * of the direct kernel's instructions). Channels >= k need no test but
 * for sigmoid: the padded weights and bias are zero, so their sums are 0 and
 * every other activation keeps 0 (the test and select per element cost a
 * low-channel direct conv ~5%), and ReLU rides on the conversion
 * (relu_pack): an instruction per output cost 512x512x8->32 3x3 5%. */
template <int ACT>
__device__ __forceinline__ uint4 act8(const float (&v)[8], const float (&b)[8], int ch0, int k,
                                      float alpha) {
    float o[8];
#pragma unroll
    for (int c = 0; c < 8; c++) {
        o[c] = v[c] + b[c];
        if (ACT != FV_ACT_RELU) o[c] = fv__act(ACT, alpha, o[c]);
        if (ACT == FV_ACT_SIGMOID && ch0 + c >= k) o[c] = 0.0f;
    }
    __align__(16) __half2 h[4];
#pragma unroll
    for (int c = 0; c < 4; c++) {
        h[c] = ACT == FV_ACT_RELU ? relu_pack(o[2 * c], o[2 * c + 1])
                                  : __floats2half2_rn(o[2 * c], o[2 * c + 1]);
    }
    return *reinterpret_cast<const uint4 *>(h);
}

/* The activation as a compile-time constant: with_act(act, f) calls
 * f(act_c<ACT>()) for the runtime act, so a kernel's epilogue is compiled
 * once per activation and chosen once per tile, not per element. */
template <int A> struct act_c { static constexpr int value = A; };
template <class F> __device__ __forceinline__ void with_act(int act, F &&f) {
    switch (act) {
    case FV_ACT_RELU:
        f(act_c<FV_ACT_RELU>());
        break;
    case FV_ACT_CLIPPED_RELU:
        f(act_c<FV_ACT_CLIPPED_RELU>());
        break;
    case FV_ACT_SIGMOID:
        f(act_c<FV_ACT_SIGMOID>());
        break;
    case FV_ACT_TANH:
        f(act_c<FV_ACT_TANH>());
        break;
    case FV_ACT_LEAKY_RELU:
        f(act_c<FV_ACT_LEAKY_RELU>());
        break;
    default:
        f(act_c<FV_ACT_IDENTITY>());
        break;
    }
}

} // namespace fv_k

#endif
