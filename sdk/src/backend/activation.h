/* The activation functions, one definition for the CPU reference and the
 * CUDA kernels (usable from C and CUDA). alpha is already normalized
 * (fv__activation_alpha): the clip of CLIPPED_RELU, the slope of LEAKY_RELU. */
#ifndef FOVEA_ACTIVATION_H
#define FOVEA_ACTIVATION_H

#include <math.h>
#include "fovea/ops.h"

#ifndef FV_HD
#ifdef __CUDACC__
#define FV_HD __host__ __device__
#else
#define FV_HD
#endif
#endif

FV_HD static inline float fv__act(int act, float alpha, float x) {
    switch (act) {
    case FV_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case FV_ACT_CLIPPED_RELU:
        return x < 0.0f ? 0.0f : (x > alpha ? alpha : x);
    case FV_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case FV_ACT_TANH:
        return tanhf(x);
    case FV_ACT_LEAKY_RELU:
        return x >= 0.0f ? x : alpha * x;
    default:
        return x;
    }
}

#endif
