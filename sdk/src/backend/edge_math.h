/* The per-pixel rule of fv_filter's edge step (see fovea/filter.h), shared
 * by the CPU and CUDA backends. Usable from C and CUDA. */
#ifndef FOVEA_EDGE_MATH_H
#define FOVEA_EDGE_MATH_H

#include "pixel_math.h"

/* The edge value from a magnitude m: b = m * scale; threshold > 0: b = b
 * >= threshold ? 255 : 0 (fv__edge_value's second step; kernels that
 * compute m their own way, bit-identical, share it). */
FV_HD static inline float fv__edge_of_magnitude(float m, float scale, float threshold) {
    float b = fv__mul(m, scale);
    if (threshold > 0.0f) b = b >= threshold ? 255.0f : 0.0f;
    return b;
}

/* Edge value in output levels from one convolution output (g0; pairs 0) or
 * a gradient pair (g0, g1; pairs 1):
 *   m = pairs ? sqrt(g0^2 + g1^2) : |g0|;  b = m * scale;
 *   threshold > 0: b = b >= threshold ? 255 : 0. */
FV_HD static inline float fv__edge_value(float g0, float g1, int pairs, float scale,
                                         float threshold) {
    float m = pairs ? sqrtf(fv__add(fv__mul(g0, g0), fv__mul(g1, g1))) : fabsf(g0);
    return fv__edge_of_magnitude(m, scale, threshold);
}

/* Overlay: the edge lightens the input value (base * base_scale). */
FV_HD static inline float fv__edge_overlay(float b, float base, float base_scale) {
    float v = fv__mul(base, base_scale);
    return b > v ? b : v;
}

#endif
