/* Resize's coordinate rules (ONNX Resize), one definition for the CPU
 * reference and the CUDA kernels (usable from C and CUDA). */
#ifndef FOVEA_NET_MATH_H
#define FOVEA_NET_MATH_H

#include <math.h>
#include "fovea/net.h"

#ifndef FV_HD
#ifdef __CUDACC__
#define FV_HD __host__ __device__
#else
#define FV_HD
#endif
#endif

/* Source coordinate of output index x (coordinate_transformation_mode). */
FV_HD static inline float fv__resize_src(int coord, int x, int in, int out, float scale) {
    switch (coord) {
    case FV_NET_COORD_ALIGN_CORNERS:
        return out > 1 ? (float)x * (float)(in - 1) / (float)(out - 1) : 0.0f;
    case FV_NET_COORD_ASYMMETRIC:
        return (float)x / scale;
    case FV_NET_COORD_PYTORCH_HALF_PIXEL:
        if (out == 1) return 0.0f;
        return ((float)x + 0.5f) / scale - 0.5f;
    default:
        return ((float)x + 0.5f) / scale - 0.5f;
    }
}

/* Nearest input index of source coordinate f (nearest_mode), clamped to
 * [0, in) as a float first: a huge f must not overflow the int. */
FV_HD static inline int fv__resize_nearest(int mode, float f, int in) {
    const float fl = floorf(f), d = f - fl;
    float r;
    switch (mode) {
    case FV_NET_NEAREST_ROUND_PREFER_FLOOR:
        r = d <= 0.5f ? fl : fl + 1.0f;
        break;
    case FV_NET_NEAREST_ROUND_PREFER_CEIL:
        r = d < 0.5f ? fl : fl + 1.0f;
        break;
    case FV_NET_NEAREST_CEIL:
        r = ceilf(f);
        break;
    default:
        r = fl;
        break;
    }
    return (int)fminf(fmaxf(r, 0.0f), (float)(in - 1));
}

#endif
