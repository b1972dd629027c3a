/* The fused epilogue of fovea's convolution kernels: 8 FP32 sums of one
 * pixel's channels ch0..ch0+7 -> + bias, activation, FP16, as one 16-byte
 * vector; channels >= k (the padding lanes) become 0. Device code only. */
#ifndef FOVEA_KERNELS_ACT8_CUH
#define FOVEA_KERNELS_ACT8_CUH

#include <cuda_fp16.h>
#include "../../activation.h"

namespace fv_k {

/* bias8: the 8 FP16 biases of ch0.. (zeros without a bias). ACT: the
 * fv_activation, a compile-time constant (a switch per element cost ~25%
 * of the direct kernel's instructions). */
template <int ACT>
__device__ __forceinline__ uint4 act8(const float (&v)[8], uint4 bias8, int ch0, int k,
                                      float alpha) {
    __align__(16) __half b[8];
    *reinterpret_cast<uint4 *>(b) = bias8;
    float o[8];
#pragma unroll
    for (int c = 0; c < 8; c++)
        o[c] = ch0 + c < k ? fv__act(ACT, alpha, v[c] + __half2float(b[c])) : 0.0f;
    __align__(16) __half2 h[4];
#pragma unroll
    for (int c = 0; c < 4; c++)
        h[c] = __floats2half2_rn(o[2 * c], o[2 * c + 1]);
    return *reinterpret_cast<const uint4 *>(h);
}

} // namespace fv_k

#endif
