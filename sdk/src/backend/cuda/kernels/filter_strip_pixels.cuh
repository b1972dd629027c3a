/* The strip kernel's pixel readers (filter_direct_strip.cu, its only
 * includer): a thread's staged input words -> the window values of its
 * pixels, for every input format, as exact floats (bytes; sums of three
 * bytes; YUV converted by pixel_math.h and put on fv__yuv_grid). Device
 * code only; everything here is compile-time indexed (template byte and
 * pixel positions), so the words stay in registers. */
#ifndef FOVEA_KERNELS_FILTER_STRIP_PIXELS_CUH
#define FOVEA_KERNELS_FILTER_STRIP_PIXELS_CUH

#include <cuda_runtime.h>
#include "../../pixel_math.h"

namespace {
const int MAGIC = 0x4B000000; /* the bits of 2^23: 2^23 + k for an integer 0 <= k < 2^23 */

/* Input formats of the kernel: bytes (GRAY8, RGB24, BGR24, RGBA32: BPP
 * bytes a pixel) or one of the YUV formats (4:2:2 pairs: U and V shared by
 * two pixels, from an even column). */
enum { F_BYTES = 0, F_YUYV = 1, F_UYVY = 2, F_NV12 = 3 };

/* Output pixels per thread along a row, N: 8 for one edge plane (a
 * thread's per-row work, its halo's 2 extra pixels included, shared by
 * more pixels), 4 for three (their windows' registers).
 * -DFV_FILTER_N1=M (an A/B knob) sets one plane's: 4 (twice the blocks)
 * was 1.05-1.39x the time, but 0.89-0.93x for RGBA32 at 1080p; 16,
 * 1.03-1.23x (H200, docs/bench/RESULTS.md, sessions 44 and 45). */
#ifndef FV_FILTER_N1
#define FV_FILTER_N1 8
#endif
template <int P> struct geo { static const int N = P == 1 ? FV_FILTER_N1 : 4; };
} // namespace

static __device__ __forceinline__ float magic_value(unsigned bits) {
    return __fadd_rn(__uint_as_float(bits), -8388608.0f); /* exact */
}

/* Byte B of the words d as an exact float. */
template <int B> static __device__ __forceinline__ float byte_value(const unsigned *d) {
    return magic_value(__byte_perm(d[B / 4], (unsigned)MAGIC, 0x7540 | (B % 4)));
}

/* Byte B of the words d minus O (O < 2^23), exact: 2^23 + byte - (2^23 + O)
 * in one operation. */
template <int B, int O> static __device__ __forceinline__ float byte_offset(const unsigned *d) {
    return __fadd_rn(__uint_as_float(__byte_perm(d[B / 4], (unsigned)MAGIC, 0x7540 | (B % 4))),
                     -(8388608.0f + (float)O));
}

/* Byte B of the words d as an integer, its bits in a float register (the
 * integer box form, see filter_direct_strip.cu's INT_BOX). */
template <int B> static __device__ __forceinline__ float byte_int(const unsigned *d) {
    return __uint_as_float(__byte_perm(d[B / 4], 0u, 0x7540 | (B % 4)));
}

/* Bytes B, B + 1, B + 2 of d summed (an edge channel of three packed
 * channels: the same integer as FUSED's exact sum), as a float: dp4a adds
 * the bytes selected by a 0/1 mask of each word to 2^23's bits. */
template <int B, bool I = false>
static __device__ __forceinline__ float sum3_value(const unsigned *d) {
    const int k0 = B / 4, k1 = (B + 2) / 4;
    unsigned m0 = 0, m1 = 0;
#pragma unroll
    for (int b = B; b < B + 3; b++) {
        if (b / 4 == k0)
            m0 |= 1u << 8 * (b % 4);
        else
            m1 |= 1u << 8 * (b % 4);
    }
    unsigned s = __dp4a(d[k0], m0, I ? 0u : (unsigned)MAGIC);
    if (k1 != k0) s = __dp4a(d[k1], m1, s);
    return I ? __uint_as_float(s) : magic_value(s); /* I: the integer's bits */
}

/* The Y, U, V bytes of the thread's staged pixel TP (TP = 0: column
 * x0 - 2) as exact floats, from the words of its Y row d (YUYV, UYVY: the
 * pairs) and of its UV row duv (NV12). */
template <int F, int TP> struct yuv_src;
template <int TP> struct yuv_src<F_YUYV, TP> { /* Y0 U Y1 V */
    enum { Y = 4 * (TP / 2) + 2 * (TP % 2), U = 4 * (TP / 2) + 1, V = 4 * (TP / 2) + 3 };
    static __device__ __forceinline__ void get(const unsigned *d, const unsigned *, float &y,
                                               float &u, float &v) {
        y = byte_value<Y>(d), u = byte_value<U>(d), v = byte_value<V>(d);
    }
    /* Y - 16, U - 128, V - 128 */
    static __device__ __forceinline__ void off(const unsigned *d, const unsigned *, float &y,
                                               float &u, float &v) {
        y = byte_offset<Y, 16>(d), u = byte_offset<U, 128>(d), v = byte_offset<V, 128>(d);
    }
};
template <int TP> struct yuv_src<F_UYVY, TP> { /* U Y0 V Y1 */
    enum { Y = 4 * (TP / 2) + 1 + 2 * (TP % 2), U = 4 * (TP / 2), V = 4 * (TP / 2) + 2 };
    static __device__ __forceinline__ void get(const unsigned *d, const unsigned *, float &y,
                                               float &u, float &v) {
        y = byte_value<Y>(d), u = byte_value<U>(d), v = byte_value<V>(d);
    }
    static __device__ __forceinline__ void off(const unsigned *d, const unsigned *, float &y,
                                               float &u, float &v) {
        y = byte_offset<Y, 16>(d), u = byte_offset<U, 128>(d), v = byte_offset<V, 128>(d);
    }
};
template <int TP> struct yuv_src<F_NV12, TP> { /* Y plane; U V pairs */
    enum { U = 2 * (TP / 2), V = 2 * (TP / 2) + 1 };
    static __device__ __forceinline__ void get(const unsigned *d, const unsigned *duv, float &y,
                                               float &u, float &v) {
        y = byte_value<TP>(d), u = byte_value<U>(duv), v = byte_value<V>(duv);
    }
    static __device__ __forceinline__ void off(const unsigned *d, const unsigned *duv, float &y,
                                               float &u, float &v) {
        y = byte_offset<TP, 16>(d), u = byte_offset<U, 128>(duv), v = byte_offset<V, 128>(duv);
    }
};

/* R, G, B of the thread's staged YUV pixel TP as the FUSED engine takes
 * them: pixel_math.h's conversion, then fv__yuv_grid. */
template <int F, int TP>
static __device__ __forceinline__ void yuv_rgb(const unsigned *d, const unsigned *duv, float c[3]) {
    float y, u, v;
    yuv_src<F, TP>::get(d, duv, y, u, v);
    fv__yuv_to_rgb(y, u, v, &c[0], &c[1], &c[2]);
#pragma unroll
    for (int i = 0; i < 3; i++)
        /* NV12: the FP16 route; measured 8-10% faster there than the
         * conversion-free form (H100), which the 4:2:2 formats keep */
        c[i] = F == F_NV12 ? fv__yuv_grid_f16(c[i]) : fv__yuv_grid(c[i]);
}

/* The values of a thread's N + 2 window pixels from its YUV words, two
 * pixels at a time, scaled by 2^-16 (fv__yuv_offsets_to_rgb_grid_scaled2; the
 * kernel's weights carry 2^16): P planes (R, G, B), or for P = 1 their sum
 * (v0 + v1) + v2 (exact: values on the 2^-24 grid). Window pixel J is
 * staged pixel J + 1. */
template <int F, int P, int J = 0, int END = geo<P>::N + 2> struct yuv_values {
    static __device__ __forceinline__ void get(const unsigned *d, const unsigned *duv,
                                               float (*v)[END]) {
        float y[2], u[2], w[2], c[2][3];
        yuv_src<F, J + 1>::off(d, duv, y[0], u[0], w[0]);
        yuv_src<F, J + 2>::off(d, duv, y[1], u[1], w[1]);
        fv__yuv_offsets_to_rgb_grid_scaled2(y, u, w, c);
#pragma unroll
        for (int k = 0; k < 2; k++) {
            if (P == 1) {
                v[0][J + k] = fv__add(fv__add(c[k][0], c[k][1]), c[k][2]);
            } else {
                v[0][J + k] = c[k][0];
                v[P > 1 ? 1 : 0][J + k] = c[k][1];
                v[P > 1 ? 2 : 0][J + k] = c[k][2];
            }
        }
        yuv_values<F, P, J + 2, END>::get(d, duv, v);
    }
};
template <int F, int P, int END> struct yuv_values<F, P, END, END> {
    static __device__ __forceinline__ void get(const unsigned *, const unsigned *, float (*)[END]) {
    }
};

/* The values of a thread's N + 2 pixels from its words d (the pixels' bytes
 * from byte 0): P planes, R, G, B order for colour. I (one plane): the
 * values as integers, their bits in the floats. */
template <int BPP, int P, bool I = false, int J = 0, int END = geo<P>::N + 2> struct pixel_values {
    static __device__ __forceinline__ void get(const unsigned *d, int rev, float (*v)[END]) {
        if (BPP == 1) {
            v[0][J] = I ? byte_int<J>(d) : byte_value<J>(d);
        } else if (P == 1) {
            v[0][J] = sum3_value<BPP * J, I>(d);
        } else {
            const float c0 = byte_value<BPP * J>(d), c2 = byte_value<BPP * J + 2>(d);
            v[0][J] = rev ? c2 : c0;
            v[P > 1 ? 1 : 0][J] = byte_value<BPP * J + 1>(d);
            v[P > 1 ? 2 : 0][J] = rev ? c0 : c2;
        }
        pixel_values<BPP, P, I, J + 1, END>::get(d, rev, v);
    }
};
template <int BPP, int P, bool I, int END> struct pixel_values<BPP, P, I, END, END> {
    static __device__ __forceinline__ void get(const unsigned *, int, float (*)[END]) {}
};

/* The input channel values (R, G, B) of the thread's pixel J (its N + 2
 * pixels from the left halo) from its words: overlay's base. */
template <int BPP, int J>
static __device__ __forceinline__ void pixel_rgb(const unsigned *d, int rev, float base[3]) {
    const float c0 = byte_value<BPP * J>(d), c2 = byte_value<BPP * J + 2>(d);
    base[0] = rev ? c2 : c0;
    base[1] = byte_value<BPP * J + 1>(d);
    base[2] = rev ? c0 : c2;
}

/* The window values of the thread's pixels (planes v) from the words of
 * the row: format F's reader. */
template <int BPP, int P, int F, bool I = false> struct window_values {
    static __device__ __forceinline__ void get(const unsigned *d, const unsigned *duv, int,
                                               float (*v)[geo<P>::N + 2]) {
        yuv_values<F, P>::get(d, duv, v);
    }
};
template <int BPP, int P, bool I> struct window_values<BPP, P, F_BYTES, I> {
    static __device__ __forceinline__ void get(const unsigned *d, const unsigned *, int rev,
                                               float (*v)[geo<P>::N + 2]) {
        pixel_values<BPP, P, I>::get(d, rev, v);
    }
};

/* R, G, B of the thread's window pixel J from the words of the row (d, and
 * NV12's duv): overlay's base where the window holds channel sums. */
template <int BPP, int F, int J> struct window_rgb {
    static __device__ __forceinline__ void get(const unsigned *d, const unsigned *duv, int,
                                               float base[3]) {
        yuv_rgb<F, J + 1>(d, duv, base);
    }
};
template <int BPP, int J> struct window_rgb<BPP, F_BYTES, J> {
    static __device__ __forceinline__ void get(const unsigned *d, const unsigned *, int rev,
                                               float base[3]) {
        pixel_rgb<BPP, J>(d, rev, base);
    }
};

/* window_rgb of the thread's window pixel j + 1 (j: 0 .. END - 1, known
 * where the caller's loop is unrolled). */
template <int BPP, int F, int J, int END> struct centre_rgb {
    static __device__ __forceinline__ void get(int j, const unsigned *d, const unsigned *duv,
                                               int rev, float base[3]) {
        if (j == J)
            window_rgb<BPP, F, J + 1>::get(d, duv, rev, base);
        else
            centre_rgb<BPP, F, J + 1, END>::get(j, d, duv, rev, base);
    }
};
template <int BPP, int F, int END> struct centre_rgb<BPP, F, END, END> {
    static __device__ __forceinline__ void get(int, const unsigned *, const unsigned *, int,
                                               float *) {}
};

#endif
