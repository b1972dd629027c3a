/* The fused epilogue of fovea's convolution kernels: FP32 sums of a
 * pixel's channels (two, act2, or 8, act8) -> + bias, activation, FP16; channels >= k (the padding
 * lanes) come out 0. Device code only. */
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

/* Bias, activation and FP16 for two sums v0, v1 of channels ch, ch + 1 (b0,
 * b1: their FP32 biases, zeros without a bias): the half2's bits. ACT: the
 * fv_activation, a compile-time constant (a switch per element cost ~25%
 * of the direct kernel's instructions). Channels >= k need no test but
 * for sigmoid: the padded weights and bias are zero, so their sums are 0 and
 * every other activation keeps 0 (the test and select per element cost a
 * low-channel direct conv ~5%), and ReLU rides on the conversion
 * (relu_pack): an instruction per output cost 512x512x8->32 3x3 5%. */
template <int ACT>
__device__ __forceinline__ unsigned act2(float v0, float v1, float b0, float b1, int ch, int k,
                                         float alpha) {
    float o0 = v0 + b0, o1 = v1 + b1;
    if (ACT != FV_ACT_RELU) o0 = fv__act(ACT, alpha, o0), o1 = fv__act(ACT, alpha, o1);
    if (ACT == FV_ACT_SIGMOID && ch >= k) o0 = 0.0f;
    if (ACT == FV_ACT_SIGMOID && ch + 1 >= k) o1 = 0.0f;
    const __half2 h = ACT == FV_ACT_RELU ? relu_pack(o0, o1) : __floats2half2_rn(o0, o1);
    return *reinterpret_cast<const unsigned *>(&h);
}

/* The same for 8 channels ch0.. of one pixel (b: their 8 biases): one
 * 16-byte vector. */
template <int ACT>
__device__ __forceinline__ uint4 act8(const float (&v)[8], const float (&b)[8], int ch0, int k,
                                      float alpha) {
    return make_uint4(act2<ACT>(v[0], v[1], b[0], b[1], ch0, k, alpha),
                      act2<ACT>(v[2], v[3], b[2], b[3], ch0 + 2, k, alpha),
                      act2<ACT>(v[4], v[5], b[4], b[5], ch0 + 4, k, alpha),
                      act2<ACT>(v[6], v[7], b[6], b[7], ch0 + 6, k, alpha));
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
