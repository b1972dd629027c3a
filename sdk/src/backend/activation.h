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
    case FV_ACT_HARD_SIGMOID: /* beta 0.5: fv__act2 takes another */
        return fminf(fmaxf(alpha * x + 0.5f, 0.0f), 1.0f);
    case FV_ACT_HARD_SWISH:
        return x * fminf(fmaxf(x * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f);
    case FV_ACT_SILU:
        return x / (1.0f + expf(-x));
    default:
        return x;
    }
}

/* Every activation with both parameters (net layers): beta is HARD_SIGMOID's
 * offset (already normalized: 0.5 by default). */
FV_HD static inline float fv__act2(int act, float alpha, float beta, float x) {
    if (act == FV_ACT_HARD_SIGMOID) return fminf(fmaxf(alpha * x + beta, 0.0f), 1.0f);
    return fv__act(act, alpha, x);
}

#endif
