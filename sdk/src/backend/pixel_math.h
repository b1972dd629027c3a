/* Pixel arithmetic shared by the CPU and CUDA backends, which must agree bit
 * for bit: YUV (BT.601 limited range) -> RGB, luma weights, and the rounding
 * rule of unpack. Every helper is a fixed sequence of IEEE float operations,
 * each rounded to nearest even: fv__mul and fv__add are never fused into an
 * FMA (CUDA: __fmul_rn/__fadd_rn, which nvcc never contracts; C: plain
 * operators, which gcc does not contract in ISO C mode (-std=c11, as fovea
 * builds) and clang does not under the pragma below). Usable from C and CUDA. */
#ifndef FOVEA_PIXEL_MATH_H
#define FOVEA_PIXEL_MATH_H

#include <math.h>
#include <stddef.h>
#include <string.h>
#include "fovea/fp16.h" /* fv_round_f16 */
#include "fovea/ops.h"  /* fv_pixel_format */
#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif

#ifdef __CUDACC__
#define FV_HD          __host__ __device__
#define FV_FORCEINLINE __forceinline__ /* per-pixel helpers of kernels: never a call */
#else
#define FV_HD
#define FV_FORCEINLINE inline
#endif

#if defined(__clang__) && !defined(__CUDACC__)
#pragma STDC FP_CONTRACT OFF
#endif

FV_HD static inline float fv__mul(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

FV_HD static inline float fv__add(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

FV_HD static inline float fv__clamp255(float x) {
    return x < 0.0f ? 0.0f : (x > 255.0f ? 255.0f : x);
}

/* BT.601 limited range, from bytes given as floats (0..255):
 *   c = 1.164 (Y - 16), d = U - 128, e = V - 128
 *   R = clamp(c + 1.596 e)
 *   G = clamp((c - 0.392 d) - 0.813 e)
 *   B = clamp(c + 2.017 d)
 * clamped to [0, 255] (not rounded) before pack's scale and bias. */
FV_HD static inline void fv__yuv_to_rgb(float y, float u, float v, float *r, float *g, float *b) {
    float c = fv__mul(1.164f, fv__add(y, -16.0f));
    float d = fv__add(u, -128.0f);
    float e = fv__add(v, -128.0f);
    *r = fv__clamp255(fv__add(c, fv__mul(1.596f, e)));
    *g = fv__clamp255(fv__add(fv__add(c, fv__mul(-0.392f, d)), fv__mul(-0.813f, e)));
    *b = fv__clamp255(fv__add(c, fv__mul(2.017f, d)));
}

/* A YUV-converted value v (0..255, from fv__yuv_to_rgb) as the filter's
 * FUSED and DIRECT engines take it: rounded to nearest (ties to even) on
 * the FP16 values with steps of at least 2^-8, that is FP16 rounding from 4
 * up (steps 2^-8 .. 2^-3) and multiples of 2^-8 below 4. Every result is an
 * FP16 value and a multiple of 2^-8, so the convolution's sums of these
 * values times FP16 weights are exact in FP32 (core/filter.c's
 * direct_exact) and both engines give the same bytes; against plain FP16
 * rounding it differs only below 4, by at most 2^-9. Computed as FP16
 * rounding of v * 2^-16: FP16's subnormals (below 2^-14, steps of 2^-24)
 * are then exactly the values below 4 in steps of 2^-8, and above them the
 * relative steps are FP16's own; both scalings are exact. */
FV_HD static FV_FORCEINLINE float fv__yuv_grid_magic(float v);
/* The rule through FP16 itself. */
FV_HD static FV_FORCEINLINE float fv__yuv_grid_f16(float v) {
#ifdef __CUDA_ARCH__
    return __half2float(__float2half_rn(v * 1.52587890625e-05f)) * 65536.0f;
#else
    return fv_round_f16(v * 1.52587890625e-05f) * 65536.0f;
#endif
}
FV_HD static FV_FORCEINLINE float fv__yuv_grid(float v) {
#ifdef __CUDA_ARCH__
    return fv__yuv_grid_magic(v); /* the same floats, without conversions */
#else
    return fv__yuv_grid_f16(v);
#endif
}

/* fv__yuv_grid for v in [+0, 255], in full-rate float and integer
 * operations (GPUs convert FP32 to FP16 at a quarter of their add rate or
 * less): with 2^e <= v < 2^(e+1) and E = max(e, 2), the grid's step there is
 * 2^(E-10), and (v + C) - C with C = 2^(E+13) rounds v to a multiple of it,
 * to nearest, ties to even (floats from C to 2C step by 2^(E-10); C's own
 * significand is even). The same floats as the FP16 route for every such v
 * (tests/unit/test_filter.c checks every float from 2^-10 to 256). */
FV_HD static FV_FORCEINLINE float fv__yuv_grid_magic(float v) {
    unsigned e;
#ifdef __CUDA_ARCH__
    e = __float_as_uint(v) & 0x7F800000u;
#else
    memcpy(&e, &v, sizeof e);
    e &= 0x7F800000u;
#endif
    if (e < 0x40800000u) e = 0x40800000u; /* 4.0f: the 2^-8 steps below 4 */
    e += 13u << 23;                       /* 2^(E+13) */
    float c;
#ifdef __CUDA_ARCH__
    c = __uint_as_float(e);
#else
    memcpy(&c, &e, sizeof c);
#endif
    return fv__add(fv__add(v, c), -c);
}

/* 2^-16: the scale of fv__yuv_to_rgb_grid_scaled's values. */
#define FV__YUV_SCALE 1.52587890625e-05f

/* fv__yuv_offsets_to_rgb_grid_scaled2: fv__yuv_to_rgb then fv__yuv_grid
 * of each value, times 2^-16 (exactly:
 * c[i] * 65536 is fv__yuv_grid(R), ...), for two pixels (Y, U, V bytes as
 * floats: y[k], u[k], v[k]; values into c[k][0..2]), in fewer operations:
 * the conversion's constants carry the scale (every product and sum is then
 * the unscaled one times 2^-16: a power of two, and nothing comes near
 * FP32's subnormals), FP16 rounding of the scaled value is the grid (see
 * fv__yuv_grid), and clamping after rounding equals rounding after clamping
 * (0 and 255 * 2^-16 are FP16 values; rounding is monotone). On the GPU two
 * values a conversion, a min and a max (packed FP16): 2.5 operations a value
 * where fv__clamp255 and fv__yuv_grid_magic take 7 or 8. A negative value
 * may come out as -0 instead of +0 there: sums, magnitudes and unpack give
 * the same bytes for either. The DIRECT strip kernel's YUV reader (its
 * weights carry 2^16: products of the two are the unscaled ones, exactly).
 * This form takes the offsets Y - 16, U - 128, V - 128 (exact for bytes),
 * which the strip kernel reads straight from its magic-number bytes: one
 * operation a value fewer; fv__yuv_to_rgb_grid_scaled2 takes the bytes. */
FV_HD static FV_FORCEINLINE void fv__yuv_offsets_to_rgb_grid_scaled2(const float yo[2],
                                                                     const float uo[2],
                                                                     const float vo[2],
                                                                     float c[2][3]) {
    float x[2][3];
    for (int k = 0; k < 2; k++) {
        const float cy = fv__mul(1.164f * FV__YUV_SCALE, yo[k]);
        const float d = uo[k], e = vo[k];
        x[k][0] = fv__add(cy, fv__mul(1.596f * FV__YUV_SCALE, e));
        x[k][1] = fv__add(fv__add(cy, fv__mul(-0.392f * FV__YUV_SCALE, d)),
                          fv__mul(-0.813f * FV__YUV_SCALE, e));
        x[k][2] = fv__add(cy, fv__mul(2.017f * FV__YUV_SCALE, d));
    }
#ifdef __CUDA_ARCH__
    const __half2 lo = __float2half2_rn(0.0f), hi = __float2half2_rn(255.0f * FV__YUV_SCALE);
    const float2 rg0 =
        __half22float2(__hmin2(__hmax2(__floats2half2_rn(x[0][0], x[0][1]), lo), hi));
    const float2 rg1 =
        __half22float2(__hmin2(__hmax2(__floats2half2_rn(x[1][0], x[1][1]), lo), hi));
    const float2 bb = __half22float2(__hmin2(__hmax2(__floats2half2_rn(x[0][2], x[1][2]), lo), hi));
    c[0][0] = rg0.x, c[0][1] = rg0.y, c[0][2] = bb.x;
    c[1][0] = rg1.x, c[1][1] = rg1.y, c[1][2] = bb.y;
#else
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++) {
            const float t = fv_round_f16(x[k][i]);
            c[k][i] = t < 0.0f ? 0.0f : t > 255.0f * FV__YUV_SCALE ? 255.0f * FV__YUV_SCALE : t;
        }
#endif
}

/* fv__yuv_offsets_to_rgb_grid_scaled2 from Y, U, V bytes (as floats). */
FV_HD static FV_FORCEINLINE void fv__yuv_to_rgb_grid_scaled2(const float y[2], const float u[2],
                                                             const float v[2], float c[2][3]) {
    const float yo[2] = {fv__add(y[0], -16.0f), fv__add(y[1], -16.0f)};
    const float uo[2] = {fv__add(u[0], -128.0f), fv__add(u[1], -128.0f)};
    const float vo[2] = {fv__add(v[0], -128.0f), fv__add(v[1], -128.0f)};
    fv__yuv_offsets_to_rgb_grid_scaled2(yo, uo, vo, c);
}

/* Luma of R, G, B bytes (as floats): (0.299 R + 0.587 G) + 0.114 B. */
FV_HD static inline float fv__rgb_to_gray(float r, float g, float b) {
    return fv__add(fv__add(fv__mul(0.299f, r), fv__mul(0.587f, g)), fv__mul(0.114f, b));
}

/* Pack: value = byte * scale + bias. */
FV_HD static inline float fv__pack_value(float byte, float scale, float bias) {
    return fv__add(fv__mul(byte, scale), bias);
}

/* Unpack, the exact rule (x is the tensor value as float):
 *   t = floor((x * scale + bias) + 0.5)      each step a rounded float op
 *   byte = 0 if t <= 0 or t is NaN, 255 if t >= 255, else t.
 * (round half up, then clamp). Under desc.absolute, x is |x| first. */
FV_HD static inline unsigned char fv__unpack_byte(float x, float scale, float bias) {
    float t = floorf(fv__add(fv__add(fv__mul(x, scale), bias), 0.5f));
    if (!(t > 0.0f)) return 0;
    if (t >= 255.0f) return 255;
    return (unsigned char)t;
}

/* The value GRAY8 unpack takes from a tensor of 3 or more channels: the mean
 * of channels 0..2 (each already |x| under desc.absolute), as
 * ((c0 + c1) + c2) / 3 with a correctly rounded division. */
FV_HD static inline float fv__mean3(float c0, float c1, float c2) {
#ifdef __CUDA_ARCH__
    return __fdiv_rn(fv__add(fv__add(c0, c1), c2), 3.0f);
#else
    return fv__add(fv__add(c0, c1), c2) / 3.0f;
#endif
}

/* The values of pixel (x, y) before pack's scale (fv__pack_value):
 * channels 1 (GRAY8 as is; luma from colour: Y for YUV formats,
 * fv__rgb_to_gray otherwise) or 3 (R, G, B; YUV converted by
 * fv__yuv_to_rgb). row: the start of row y; uv, uv_stride: NV12's UV plane
 * and its bytes per row (unused for other formats, uv may be NULL there).
 * Unknown formats give zeros (all three values); GRAY8 writes v[0] only.
 * The one pixel reader of the CPU pack (cpu/cpu_pack.c), the CUDA pack
 * (cuda/kernels/pack.cu) and the fused filter (cuda/kernels/filter_fused.cu). */
FV_HD static FV_FORCEINLINE void fv__read_pixel(fv_pixel_format f, const unsigned char *row,
                                                const unsigned char *uv, size_t uv_stride, int x,
                                                int y, int channels, float v[3]) {
    float r, g, b, yy, u, w;
    switch (f) {
    case FV_PIXEL_GRAY8:
        v[0] = row[x];
        return;
    case FV_PIXEL_RGB24:
        r = row[3 * x], g = row[3 * x + 1], b = row[3 * x + 2];
        break;
    case FV_PIXEL_BGR24:
        b = row[3 * x], g = row[3 * x + 1], r = row[3 * x + 2];
        break;
    case FV_PIXEL_RGBA32:
        r = row[4 * x], g = row[4 * x + 1], b = row[4 * x + 2];
        break;
    case FV_PIXEL_YUYV: {
        const unsigned char *pair = row + (size_t)(x & ~1) * 2; /* Y0 U Y1 V */
        yy = pair[(x & 1) * 2], u = pair[1], w = pair[3];
        goto yuv;
    }
    case FV_PIXEL_UYVY: {
        const unsigned char *pair = row + (size_t)(x & ~1) * 2; /* U Y0 V Y1 */
        yy = pair[1 + (x & 1) * 2], u = pair[0], w = pair[2];
        goto yuv;
    }
    case FV_PIXEL_NV12: {
        const unsigned char *p = uv + (size_t)(y / 2) * uv_stride + (size_t)(x & ~1);
        yy = row[x], u = p[0], w = p[1];
        goto yuv;
    }
    default:
        v[0] = v[1] = v[2] = 0.0f;
        return;
    }
    if (channels == 1)
        v[0] = fv__rgb_to_gray(r, g, b);
    else
        v[0] = r, v[1] = g, v[2] = b;
    return;
yuv:
    if (channels == 1)
        v[0] = yy;
    else
        fv__yuv_to_rgb(yy, u, w, &v[0], &v[1], &v[2]);
}

#endif
