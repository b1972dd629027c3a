/* Per-pixel arithmetic of the vision ops (fovea/preprocess.h,
 * fovea/postprocess.h), shared by the CPU and CUDA backends so that both
 * give the same bits: every step is one of pixel_math.h's rounded float
 * operations (never contracted into an FMA; the CUDA file that includes
 * this builds with --fmad=false). The parameter structs are filled by the
 * front end (core/preprocess.c, core/postprocess.c) and passed by value to
 * the kernels. Usable from C and CUDA. Not installed. */
#ifndef FOVEA_VISION_MATH_H
#define FOVEA_VISION_MATH_H

#include <stddef.h>
#include <stdint.h>
#include "pixel_math.h"

/* ---- pre-processing ------------------------------------------------------ */
typedef struct fv__pre_params {
    /* the source image, normalized (stride, uv, uv_stride filled) */
    fv_pixel_format format;
    int src_w, src_h;
    const unsigned char *data, *uv;
    size_t stride, uv_stride;
    /* the region [rx, rx+rw) x [ry, ry+rh) of the tensor's H x W the image is
     * resized to; fill elsewhere. fx = src_w / rw, fy = src_h / rh. */
    int rx, ry, rw, rh;
    float fx, fy;
    int read_channels; /* asked of fv__read_pixel: 1 (grey / luma) or 3 (R, G, B) */
    int channels;      /* the tensor's C: 1 or 3 */
    int src_ch[3];     /* tensor channel c takes read value src_ch[c] */
    float a[3], b[3];  /* tensor value = v * a[c] + b[c] (scale / std, -mean / std) */
    float fill[3];     /* tensor value outside the region (normalized already) */
} fv__pre_params;

/* The source coordinate of destination index i along one axis: half-pixel
 * centres, ((i + 0.5) * f + o) - 0.5, clamped to [lo, hi] (the source
 * pixels' centres that may be sampled) and to [0, n-1]; *i0, *i1 the two
 * taps and *w the weight of i1. */
FV_HD static inline void fv__axis(int i, float f, float o, float lo, float hi, int n, int *i0,
                                  int *i1, float *w) {
    float s = fv__add(fv__add(fv__mul(fv__add((float)i, 0.5f), f), o), -0.5f);
    if (s > hi) s = hi;
    if (s < lo) s = lo;
    if (s < 0.0f) s = 0.0f;
    float fl = floorf(s);
    int a = (int)fl;
    if (a > n - 1) a = n - 1, fl = (float)a;
    float t = fv__add(s, -fl);
    if (t < 0.0f) t = 0.0f;
    *i0 = a;
    *i1 = a + 1 < n ? a + 1 : n - 1;
    *w = t;
}

/* Linear interpolation p0 (1 - w) + p1 w. */
FV_HD static inline float fv__lerp(float p0, float p1, float w) {
    return fv__add(fv__mul(p0, fv__add(1.0f, -w)), fv__mul(p1, w));
}

/* The tensor values of destination pixel (x, y) of the H x W plane:
 * out[0 .. channels-1] (out[channels .. 2] are written too: ignore them). */
FV_HD static FV_FORCEINLINE void fv__pre_pixel(const fv__pre_params *p, int x, int y,
                                               float out[3]) {
    if (x < p->rx || x >= p->rx + p->rw || y < p->ry || y >= p->ry + p->rh) {
        for (int c = 0; c < 3; c++)
            out[c] = p->fill[c];
        return;
    }
    int x0, x1, y0, y1;
    float wx, wy;
    fv__axis(x - p->rx, p->fx, 0.0f, 0.0f, (float)(p->src_w - 1), p->src_w, &x0, &x1, &wx);
    fv__axis(y - p->ry, p->fy, 0.0f, 0.0f, (float)(p->src_h - 1), p->src_h, &y0, &y1, &wy);
    const unsigned char *r0 = p->data + (size_t)y0 * p->stride;
    const unsigned char *r1 = p->data + (size_t)y1 * p->stride;
    /* all three lanes always, and no indexing by a variable: the arrays
     * stay in registers on the GPU (unused lanes are zeros) */
    float v00[3] = {0.0f, 0.0f, 0.0f}, v01[3] = {0.0f, 0.0f, 0.0f};
    float v10[3] = {0.0f, 0.0f, 0.0f}, v11[3] = {0.0f, 0.0f, 0.0f};
    fv__read_pixel(p->format, r0, p->uv, p->uv_stride, x0, y0, p->read_channels, v00);
    fv__read_pixel(p->format, r0, p->uv, p->uv_stride, x1, y0, p->read_channels, v01);
    fv__read_pixel(p->format, r1, p->uv, p->uv_stride, x0, y1, p->read_channels, v10);
    fv__read_pixel(p->format, r1, p->uv, p->uv_stride, x1, y1, p->read_channels, v11);
    float v[3];
    for (int c = 0; c < 3; c++)
        v[c] = fv__lerp(fv__lerp(v00[c], v01[c], wx), fv__lerp(v10[c], v11[c], wx), wy);
    for (int c = 0; c < 3; c++) {
        const int k = p->src_ch[c];
        const float s = k == 0 ? v[0] : (k == 1 ? v[1] : v[2]);
        out[c] = fv__add(fv__mul(s, p->a[c]), p->b[c]);
    }
}

/* ---- segmentation overlay ------------------------------------------------ */
/* The colour image of a class map, bilinearly upsampled to the output and
 * blended over a frame. Colours are premultiplied by their opacity:
 * pal[k] = (R a, G a, B a, a) with a = palette alpha / 255 * desc alpha,
 * so a transparent class leaves the frame as it is and no dark fringe
 * appears at its border. */
typedef struct fv__seg_params {
    const unsigned char *classes; /* class map of the item: mh x mw bytes */
    int mw, mh;
    /* the part of the class map that covers the frame starts at (ox, oy) and
     * spans fx * out_w by fy * out_h class-map pixels; samples stay within
     * [x_lo, x_hi] x [y_lo, y_hi] (its pixels' centres: nothing of the
     * letterbox border bleeds in) */
    float ox, oy, fx, fy;
    float x_lo, x_hi, y_lo, y_hi;
    const float *pal; /* 4 floats per class (backend memory) */
    int classes_n;    /* entries in pal; larger class ids read entry 0 */
    /* the frame (same size as out), normalized; data NULL: mask only */
    fv_pixel_format frame_format;
    const unsigned char *frame, *frame_uv;
    size_t frame_stride, frame_uv_stride;
    /* the output: RGB24, BGR24 or RGBA32 */
    fv_pixel_format out_format;
    int out_w, out_h;
    unsigned char *out;
    size_t out_stride;
} fv__seg_params;

/* Output pixel (x, y) as R, G, B bytes. */
FV_HD static FV_FORCEINLINE void fv__seg_pixel(const fv__seg_params *p, int x, int y,
                                               unsigned char rgb[3]) {
    int x0, x1, y0, y1;
    float wx, wy;
    fv__axis(x, p->fx, p->ox, p->x_lo, p->x_hi, p->mw, &x0, &x1, &wx);
    fv__axis(y, p->fy, p->oy, p->y_lo, p->y_hi, p->mh, &y0, &y1, &wy);
    const unsigned char *m0 = p->classes + (size_t)y0 * p->mw;
    const unsigned char *m1 = p->classes + (size_t)y1 * p->mw;
    int k00 = m0[x0], k01 = m0[x1], k10 = m1[x0], k11 = m1[x1];
    k00 = k00 < p->classes_n ? k00 : 0, k01 = k01 < p->classes_n ? k01 : 0;
    k10 = k10 < p->classes_n ? k10 : 0, k11 = k11 < p->classes_n ? k11 : 0;
    float c[4];
    for (int i = 0; i < 4; i++)
        c[i] = fv__lerp(fv__lerp(p->pal[4 * k00 + i], p->pal[4 * k01 + i], wx),
                        fv__lerp(p->pal[4 * k10 + i], p->pal[4 * k11 + i], wx), wy);
    float f[3] = {0.0f, 0.0f, 0.0f};
    if (p->frame)
        fv__read_pixel(p->frame_format, p->frame + (size_t)y * p->frame_stride, p->frame_uv,
                       p->frame_uv_stride, x, y, 3, f);
    if (p->frame && p->frame_format == FV_PIXEL_GRAY8) f[1] = f[2] = f[0];
    const float keep = fv__add(1.0f, -c[3]);
    for (int i = 0; i < 3; i++)
        rgb[i] = fv__unpack_byte(fv__add(fv__mul(f[i], keep), c[i]), 1.0f, 0.0f);
}

/* Stores R, G, B at pixel x of an output row (RGBA32: alpha 255). */
FV_HD static inline void fv__seg_store(fv_pixel_format f, unsigned char *row, int x,
                                       const unsigned char rgb[3]) {
    if (f == FV_PIXEL_RGBA32) {
        unsigned char *o = row + 4 * (size_t)x;
        o[0] = rgb[0], o[1] = rgb[1], o[2] = rgb[2], o[3] = 255;
    } else {
        unsigned char *o = row + 3 * (size_t)x;
        const unsigned char r = rgb[0], b = rgb[2];
        const int bgr = f == FV_PIXEL_BGR24;
        o[0] = bgr ? b : r, o[1] = rgb[1], o[2] = bgr ? r : b;
    }
}

#endif
