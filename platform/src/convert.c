/* fv__host_convert: pixel format conversion on the host for sources (image
 * files, test://) that deliver a format other than their own. BT.601 limited
 * range, the same matrix as the SDK's unpack (sdk/src/backend/pixel_math.h,
 * whose constants are copied here: platform/ does not include sdk/src). */
#include <stdint.h>
#include <string.h>
#include "io_internal.h"

/* The RGB-like formats as byte offsets of R, G, B in a pixel; gray has one
 * byte, read as R = G = B. */
typedef struct rgb_layout {
    int bpp, r, g, b, gray, alpha;
} rgb_layout;

static int rgb_like(fv_pixel_format f, rgb_layout *l) {
    switch (f) {
    case FV_PIXEL_GRAY8:
        *l = (rgb_layout){1, 0, 0, 0, 1, -1};
        return 1;
    case FV_PIXEL_RGB24:
        *l = (rgb_layout){3, 0, 1, 2, 0, -1};
        return 1;
    case FV_PIXEL_BGR24:
        *l = (rgb_layout){3, 2, 1, 0, 0, -1};
        return 1;
    case FV_PIXEL_RGBA32:
        *l = (rgb_layout){4, 0, 1, 2, 0, 3};
        return 1;
    default:
        return 0;
    }
}

static int is_yuv(fv_pixel_format f) {
    return f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY || f == FV_PIXEL_NV12;
}

static inline uint8_t round_byte(float x) {
    if (!(x > 0.0f)) return 0;
    if (x >= 255.0f) return 255;
    return (uint8_t)(x + 0.5f);
}

/* 0.299 R + 0.587 G + 0.114 B, rounded (the SDK's luma weights). */
static inline uint8_t luma(int r, int g, int b) {
    return round_byte(0.299f * (float)r + 0.587f * (float)g + 0.114f * (float)b);
}

static inline void read_rgb(const uint8_t *p, const rgb_layout *l, int *r, int *g, int *b) {
    *r = p[l->r], *g = p[l->g], *b = p[l->b];
}

static inline void write_rgb(uint8_t *p, const rgb_layout *l, int r, int g, int b) {
    if (l->gray) {
        p[0] = luma(r, g, b);
        return;
    }
    p[l->r] = (uint8_t)r, p[l->g] = (uint8_t)g, p[l->b] = (uint8_t)b;
    if (l->alpha >= 0) p[l->alpha] = 255;
}

/* RGB -> BT.601 limited range (the inverse of the matrix below). */
static inline uint8_t rgb_y(int r, int g, int b) {
    return round_byte(16.0f + 0.257f * (float)r + 0.504f * (float)g + 0.098f * (float)b);
}
static inline uint8_t rgb_u(float r, float g, float b) {
    return round_byte(128.0f - 0.148f * r - 0.291f * g + 0.439f * b);
}
static inline uint8_t rgb_v(float r, float g, float b) {
    return round_byte(128.0f + 0.439f * r - 0.368f * g - 0.071f * b);
}

/* BT.601 limited range -> RGB, as pixel_math.h's fv__yuv_to_rgb, rounded. */
static inline void yuv_rgb(int y, int u, int v, int *r, int *g, int *b) {
    float c = 1.164f * ((float)y - 16.0f);
    float d = (float)u - 128.0f;
    float e = (float)v - 128.0f;
    *r = round_byte(c + 1.596f * e);
    *g = round_byte((c + -0.392f * d) + -0.813f * e);
    *b = round_byte(c + 2.017f * d);
}

static void rgb_to_rgb(const fv_image *s, const rgb_layout *sl, size_t ss, fv_image *d,
                       const rgb_layout *dl) {
    size_t ds = (size_t)d->width * (size_t)dl->bpp;
    for (int y = 0; y < s->height; y++) {
        const uint8_t *sp = (const uint8_t *)s->data + (size_t)y * ss;
        uint8_t *dp = (uint8_t *)d->data + (size_t)y * ds;
        if (s->format == d->format) {
            memcpy(dp, sp, ds);
            continue;
        }
        for (int x = 0; x < s->width; x++, sp += sl->bpp, dp += dl->bpp) {
            int r, g, b;
            read_rgb(sp, sl, &r, &g, &b);
            if (dl->gray && sl->gray)
                dp[0] = sp[0];
            else
                write_rgb(dp, dl, r, g, b);
        }
    }
}

/* Packed 4:2:2: byte offsets of Y0, U, Y1, V in a 4-byte pair. */
static void packed_offsets(fv_pixel_format f, int *y0, int *u, int *y1, int *v) {
    if (f == FV_PIXEL_YUYV)
        *y0 = 0, *u = 1, *y1 = 2, *v = 3;
    else
        *u = 0, *y0 = 1, *v = 2, *y1 = 3;
}

static void rgb_to_packed(const fv_image *s, const rgb_layout *sl, size_t ss, fv_image *d) {
    int oy0, ou, oy1, ov;
    packed_offsets(d->format, &oy0, &ou, &oy1, &ov);
    size_t ds = (size_t)d->width * 2;
    for (int y = 0; y < s->height; y++) {
        const uint8_t *sp = (const uint8_t *)s->data + (size_t)y * ss;
        uint8_t *dp = (uint8_t *)d->data + (size_t)y * ds;
        for (int x = 0; x < s->width; x += 2, sp += 2 * sl->bpp, dp += 4) {
            int r0, g0, b0, r1, g1, b1;
            read_rgb(sp, sl, &r0, &g0, &b0);
            read_rgb(sp + sl->bpp, sl, &r1, &g1, &b1);
            dp[oy0] = rgb_y(r0, g0, b0);
            dp[oy1] = rgb_y(r1, g1, b1);
            float r = 0.5f * (float)(r0 + r1), g = 0.5f * (float)(g0 + g1),
                  b = 0.5f * (float)(b0 + b1);
            dp[ou] = rgb_u(r, g, b);
            dp[ov] = rgb_v(r, g, b);
        }
    }
}

static void rgb_to_nv12(const fv_image *s, const rgb_layout *sl, size_t ss, fv_image *d) {
    size_t w = (size_t)d->width;
    uint8_t *yplane = d->data;
    uint8_t *uvplane = yplane + w * (size_t)d->height;
    for (int y = 0; y < s->height; y += 2) {
        const uint8_t *s0 = (const uint8_t *)s->data + (size_t)y * ss;
        const uint8_t *s1 = s0 + ss;
        uint8_t *y0 = yplane + (size_t)y * w, *y1 = y0 + w;
        uint8_t *uv = uvplane + (size_t)(y / 2) * w;
        for (int x = 0; x < s->width; x += 2) {
            int r[4], g[4], b[4];
            size_t o = (size_t)x * (size_t)sl->bpp;
            read_rgb(s0 + o, sl, &r[0], &g[0], &b[0]);
            read_rgb(s0 + o + sl->bpp, sl, &r[1], &g[1], &b[1]);
            read_rgb(s1 + o, sl, &r[2], &g[2], &b[2]);
            read_rgb(s1 + o + sl->bpp, sl, &r[3], &g[3], &b[3]);
            y0[x] = rgb_y(r[0], g[0], b[0]);
            y0[x + 1] = rgb_y(r[1], g[1], b[1]);
            y1[x] = rgb_y(r[2], g[2], b[2]);
            y1[x + 1] = rgb_y(r[3], g[3], b[3]);
            float rm = 0.25f * (float)(r[0] + r[1] + r[2] + r[3]);
            float gm = 0.25f * (float)(g[0] + g[1] + g[2] + g[3]);
            float bm = 0.25f * (float)(b[0] + b[1] + b[2] + b[3]);
            uv[x] = rgb_u(rm, gm, bm);
            uv[x + 1] = rgb_v(rm, gm, bm);
        }
    }
}

static void packed_to_rgb(const fv_image *s, size_t ss, fv_image *d, const rgb_layout *dl) {
    int oy0, ou, oy1, ov;
    packed_offsets(s->format, &oy0, &ou, &oy1, &ov);
    size_t ds = (size_t)d->width * (size_t)dl->bpp;
    for (int y = 0; y < s->height; y++) {
        const uint8_t *sp = (const uint8_t *)s->data + (size_t)y * ss;
        uint8_t *dp = (uint8_t *)d->data + (size_t)y * ds;
        for (int x = 0; x < s->width; x += 2, sp += 4, dp += 2 * dl->bpp) {
            int r, g, b;
            yuv_rgb(sp[oy0], sp[ou], sp[ov], &r, &g, &b);
            write_rgb(dp, dl, r, g, b);
            yuv_rgb(sp[oy1], sp[ou], sp[ov], &r, &g, &b);
            write_rgb(dp + dl->bpp, dl, r, g, b);
        }
    }
}

static void nv12_to_rgb(const fv_image *s, size_t ss, const uint8_t *uvp, size_t uvs, fv_image *d,
                        const rgb_layout *dl) {
    size_t ds = (size_t)d->width * (size_t)dl->bpp;
    for (int y = 0; y < s->height; y++) {
        const uint8_t *yp = (const uint8_t *)s->data + (size_t)y * ss;
        const uint8_t *uv = uvp + (size_t)(y / 2) * uvs;
        uint8_t *dp = (uint8_t *)d->data + (size_t)y * ds;
        for (int x = 0; x < s->width; x++, dp += dl->bpp) {
            int r, g, b;
            yuv_rgb(yp[x], uv[x & ~1], uv[(x & ~1) + 1], &r, &g, &b);
            write_rgb(dp, dl, r, g, b);
        }
    }
}

fv_status fv__host_convert(const fv_image *src, fv_image *dst) {
    const char *op = "convert";
    if (!src || !dst) return fv__error(FV_ERR_BAD_PARAM, "%s: %s is NULL", op, src ? "dst" : "src");
    if (!src->data || !dst->data)
        return fv__error(FV_ERR_BAD_PARAM, "%s: %s data is NULL", op, src->data ? "dst" : "src");
    if (src->width < 1 || src->height < 1 || src->width != dst->width || src->height != dst->height)
        return fv__error(FV_ERR_BAD_PARAM,
                         "%s: src is %dx%d and dst %dx%d: sizes must be equal and positive", op,
                         src->width, src->height, dst->width, dst->height);
    fv_pixel_format sf = src->format, df = dst->format;
    rgb_layout sl = {0, 0, 0, 0, 0, -1}, dl = sl;
    int s_rgb = rgb_like(sf, &sl), d_rgb = rgb_like(df, &dl);
    if (!((s_rgb && (d_rgb || is_yuv(df))) || (is_yuv(sf) && d_rgb)))
        return fv__error(
            FV_ERR_NOT_SUPPORTED,
            "%s: %s -> %s: supported are GRAY8/RGB24/BGR24/RGBA32 into any of "
            "those or YUYV/UYVY/NV12, and YUYV/UYVY/NV12 into GRAY8/RGB24/BGR24/RGBA32",
            op, fv_pixel_format_name(sf), fv_pixel_format_name(df));
    int w = src->width, h = src->height;
    int odd_w = (is_yuv(sf) || is_yuv(df)) && (w & 1);
    int odd_h = (sf == FV_PIXEL_NV12 || df == FV_PIXEL_NV12) && (h & 1);
    if (odd_w || odd_h)
        return fv__error(FV_ERR_BAD_PARAM, "%s: %s -> %s: size %dx%d: %s must be even", op,
                         fv_pixel_format_name(sf), fv_pixel_format_name(df), w, h,
                         odd_w ? "width" : "height");
    size_t row = fv_image_bytes(sf, w, 1);
    if (sf == FV_PIXEL_NV12) row = (size_t)w;
    size_t ss = src->stride ? src->stride : row;
    if (ss < row)
        return fv__error(FV_ERR_BAD_PARAM,
                         "%s: src stride %zu is less than a %d-pixel %s row (%zu)", op, src->stride,
                         w, fv_pixel_format_name(sf), row);
    size_t drow = df == FV_PIXEL_NV12 ? (size_t)w : fv_image_bytes(df, w, 1);
    if (dst->stride && dst->stride != drow)
        return fv__error(FV_ERR_BAD_PARAM,
                         "%s: dst stride %zu: dst must be dense (%zu bytes a row)", op, dst->stride,
                         drow);

    if (s_rgb && d_rgb) {
        rgb_to_rgb(src, &sl, ss, dst, &dl);
    } else if (s_rgb && df == FV_PIXEL_NV12) {
        rgb_to_nv12(src, &sl, ss, dst);
    } else if (s_rgb) {
        rgb_to_packed(src, &sl, ss, dst);
    } else if (sf == FV_PIXEL_NV12) {
        const uint8_t *uv = src->uv ? src->uv : (const uint8_t *)src->data + ss * (size_t)h;
        size_t uvs = src->uv_stride ? src->uv_stride : ss;
        if (uvs < (size_t)w)
            return fv__error(FV_ERR_BAD_PARAM, "%s: NV12 uv_stride %zu is less than the width %d",
                             op, uvs, w);
        nv12_to_rgb(src, ss, uv, uvs, dst, &dl);
    } else {
        packed_to_rgb(src, ss, dst, &dl);
    }
    return FV_OK;
}
