/* fv_filter: pack -> conv2d -> edge step -> unpack, planned once (see
 * fovea/filter.h for the exact rule). Gradient filters run both gradients
 * of every edge channel as one convolution (two output channels each). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

struct fv_filter {
    fv_context *ctx;
    fv_filter_desc desc; /* normalized; kernel NULL */
    int pairs;           /* 1: gradient pairs (gx, gy) and a magnitude */
    fv_conv2d *conv;
    fv_tensor *x; /* packed input, F16, 1 or 3 channels */
    fv_tensor *y; /* convolution output, F16, m or 2m channels */
    fv_tensor *e; /* edge values in output levels, F32, 1 or 3 channels */
};

const char *fv_filter_kind_name(fv_filter_kind k) {
    switch (k) {
    case FV_FILTER_LAPLACIAN:
        return "laplacian";
    case FV_FILTER_SOBEL:
        return "sobel";
    case FV_FILTER_SCHARR:
        return "scharr";
    case FV_FILTER_PREWITT:
        return "prewitt";
    case FV_FILTER_CUSTOM:
        return "custom";
    }
    return "unknown";
}

static int format_known(fv_pixel_format f) {
    return (int)f >= FV_PIXEL_GRAY8 && (int)f <= FV_PIXEL_UYVY;
}

static fv_status check_desc(const fv_filter_desc *d) {
    const char *op = "filter";
    FV_REQUIRE((int)d->kind >= FV_FILTER_LAPLACIAN && (int)d->kind <= FV_FILTER_CUSTOM,
               FV_ERR_BAD_PARAM, "%s: kind=%d is unknown", op, (int)d->kind);
    FV_REQUIRE(d->width >= 1 && d->height >= 1, FV_ERR_BAD_PARAM,
               "%s: frame size %dx%d, both must be >= 1", op, d->width, d->height);
    FV_REQUIRE(format_known(d->format), FV_ERR_BAD_PARAM, "%s: input format=%d is unknown", op,
               (int)d->format);
    if (d->format == FV_PIXEL_YUYV || d->format == FV_PIXEL_UYVY)
        FV_REQUIRE(d->width % 2 == 0, FV_ERR_BAD_PARAM, "%s: %s width %d must be even", op,
                   fv_pixel_format_name(d->format), d->width);
    if (d->format == FV_PIXEL_NV12)
        FV_REQUIRE(d->width % 2 == 0 && d->height % 2 == 0, FV_ERR_BAD_PARAM,
                   "%s: NV12 size %dx%d must be even in both dimensions", op, d->width, d->height);
    FV_REQUIRE(d->output == FV_FILTER_OUT_GRAY || d->output == FV_FILTER_OUT_COLOR,
               FV_ERR_BAD_PARAM, "%s: output=%d is unknown (GRAY 0 or COLOR 1)", op,
               (int)d->output);
    FV_REQUIRE(isfinite(d->gain) && d->gain > 0.0f, FV_ERR_BAD_PARAM,
               "%s: gain=%g must be > 0 and finite (0 means 1)", op, (double)d->gain);
    FV_REQUIRE(isfinite(d->threshold) && d->threshold >= 0.0f && d->threshold <= 255.0f,
               FV_ERR_BAD_PARAM, "%s: threshold=%g must be in [0, 255] (0: none)", op,
               (double)d->threshold);
    FV_REQUIRE(d->overlay == 0 || d->overlay == 1, FV_ERR_BAD_PARAM,
               "%s: overlay=%d must be 0 or 1", op, d->overlay);
    for (int i = 0; i < 6; i++)
        FV_REQUIRE(d->reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: reserved[%d] must be zero", op, i);
    if (d->kind != FV_FILTER_CUSTOM) {
        FV_REQUIRE(!d->kernel && d->kernel_rows == 0 && d->kernel_cols == 0, FV_ERR_BAD_PARAM,
                   "%s: kernel, kernel_rows, kernel_cols are for CUSTOM only (kind %s)", op,
                   fv_filter_kind_name(d->kind));
        return FV_OK;
    }
    FV_REQUIRE(d->kernel, FV_ERR_BAD_PARAM, "%s: CUSTOM kernel is NULL", op);
    const int mx = FV_FILTER_MAX_KERNEL;
    FV_REQUIRE(d->kernel_rows >= 1 && d->kernel_rows <= mx && d->kernel_rows % 2 == 1 &&
                   d->kernel_cols >= 1 && d->kernel_cols <= mx && d->kernel_cols % 2 == 1,
               FV_ERR_BAD_PARAM, "%s: CUSTOM kernel %dx%d: rows and cols must be odd, 1 to %d", op,
               d->kernel_rows, d->kernel_cols, mx);
    for (int i = 0; i < d->kernel_rows * d->kernel_cols; i++)
        FV_REQUIRE(isfinite(d->kernel[i]), FV_ERR_BAD_PARAM,
                   "%s: CUSTOM kernel value %d (row %d, col %d) is not finite", op, i,
                   i / d->kernel_cols, i % d->kernel_cols);
    return FV_OK;
}

/* The x-gradient kernel of a gradient filter (gy is its transpose). */
static const float *gradient_kernel(fv_filter_kind k) {
    static const float sobel[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
    static const float scharr[9] = {-3, 0, 3, -10, 0, 10, -3, 0, 3};
    static const float prewitt[9] = {-1, 0, 1, -1, 0, 1, -1, 0, 1};
    return k == FV_FILTER_SOBEL ? sobel : k == FV_FILTER_SCHARR ? scharr : prewitt;
}

/* Weights (KCRS) for m edge channels from in_c packed channels: output
 * channel k is edge channel k / g, kernel k % g (g 2 for pairs: gx, gy);
 * m 1 sums every input channel, m 3 takes only its own. */
static float *make_weights(const fv_filter_desc *d, int pairs, int m, int in_c, int *r, int *s) {
    static const float lap[9] = {1, 1, 1, 1, -8, 1, 1, 1, 1};
    float kern[2][FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL];
    const int g = pairs ? 2 : 1;
    if (d->kind == FV_FILTER_CUSTOM) {
        *r = d->kernel_rows, *s = d->kernel_cols;
        memcpy(kern[0], d->kernel, sizeof(float) * (size_t)(*r * *s));
    } else {
        *r = *s = 3;
        const float *k0 = pairs ? gradient_kernel(d->kind) : lap;
        for (int i = 0; i < 9; i++) {
            kern[0][i] = k0[i];
            kern[1][i] = k0[(i % 3) * 3 + i / 3]; /* transpose */
        }
    }
    const size_t rs = (size_t)*r * *s;
    float *w = calloc((size_t)m * g * in_c * rs, sizeof *w);
    if (!w) return NULL;
    for (int k = 0; k < m * g; k++)
        for (int c = 0; c < in_c; c++)
            if (m == 1 || c == k / g)
                memcpy(w + ((size_t)k * in_c + c) * rs, kern[k % g], rs * sizeof *w);
    return w;
}

static fv_status make_tensor(fv_context *ctx, fv_dtype dt, int h, int w, int c, fv_tensor **out) {
    fv_tensor_desc td = {.dtype = dt, .h = h, .w = w, .c = c};
    return fv_tensor_create(ctx, &td, out);
}

static fv_status plan(fv_filter *f) {
    const fv_filter_desc *d = &f->desc;
    const int in_c = d->format == FV_PIXEL_GRAY8 ? 1 : 3;
    const int m = d->output == FV_FILTER_OUT_COLOR ? in_c : 1;
    const int out_c = d->overlay && in_c > m ? in_c : m;
    const int k = m * (f->pairs ? 2 : 1);
    int r, s;
    float *w = make_weights(d, f->pairs, m, in_c, &r, &s);
    FV_REQUIRE(w, FV_ERR_OUT_OF_MEMORY, "filter: out of host memory");
    fv_conv2d_desc cd = {.h = d->height,
                         .w = d->width,
                         .c = in_c,
                         .k = k,
                         .r = r,
                         .s = s,
                         .pad_h = (r - 1) / 2,
                         .pad_w = (s - 1) / 2,
                         .dtype = FV_DTYPE_F16,
                         .weights = w,
                         .flags = d->conv_flags};
    fv_status st = fv_conv2d_create(f->ctx, &cd, &f->conv);
    free(w);
    FV_TRY(st);
    FV_TRY(make_tensor(f->ctx, FV_DTYPE_F16, d->height, d->width, in_c, &f->x));
    FV_TRY(make_tensor(f->ctx, FV_DTYPE_F16, d->height, d->width, k, &f->y));
    FV_TRY(make_tensor(f->ctx, FV_DTYPE_F32, d->height, d->width, out_c, &f->e));
    return fv_conv2d_bind(f->conv, f->x, f->y);
}

fv_status fv_filter_create(fv_context *ctx, const fv_filter_desc *desc, fv_filter **out) {
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_filter_create: out is NULL");
    *out = NULL;
    FV_REQUIRE(ctx && desc, FV_ERR_BAD_PARAM, "fv_filter_create: %s is NULL", ctx ? "desc" : "ctx");
    fv_filter_desc d = *desc;
    if (d.format == 0) d.format = FV_PIXEL_RGB24;
    if (d.gain == 0.0f) d.gain = 1.0f;
    FV_TRY(check_desc(&d));
    FV_REQUIRE((d.conv_flags & ~(uint32_t)(FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_PROFILE)) == 0,
               FV_ERR_BAD_PARAM, "filter: unknown conv_flags 0x%x", (unsigned)d.conv_flags);
    fv_filter *f = calloc(1, sizeof *f);
    FV_REQUIRE(f, FV_ERR_OUT_OF_MEMORY, "filter: out of host memory");
    f->ctx = ctx;
    f->pairs =
        d.kind == FV_FILTER_SOBEL || d.kind == FV_FILTER_SCHARR || d.kind == FV_FILTER_PREWITT;
    f->desc = d;
    fv_status s = plan(f);
    f->desc.kernel = NULL;
    if (s != FV_OK) {
        fv_filter_destroy(f);
        return fv__error_prefix(s, "fv_filter_create");
    }
    *out = f;
    return FV_OK;
}

void fv_filter_destroy(fv_filter *f) {
    if (!f) return;
    fv_tensor_destroy(f->e);
    fv_tensor_destroy(f->y);
    fv_tensor_destroy(f->x);
    fv_conv2d_destroy(f->conv);
    free(f);
}

const fv_conv2d *fv_filter_conv(const fv_filter *f) {
    return f ? f->conv : NULL;
}

fv_status fv_filter_apply(fv_filter *f, const fv_image *in, fv_image *out) {
    const char *op = "filter_apply";
    FV_REQUIRE(f, FV_ERR_BAD_PARAM, "%s: filter is NULL", op);
    FV_REQUIRE(in && out, FV_ERR_BAD_PARAM, "%s: %s image is NULL", op, in ? "output" : "input");
    const fv_filter_desc *d = &f->desc;
    FV_REQUIRE(in->format == d->format, FV_ERR_BAD_PARAM,
               "%s: input format %s, but the filter was made for %s", op,
               fv_pixel_format_name(in->format), fv_pixel_format_name(d->format));
    FV_REQUIRE(in->width == d->width && in->height == d->height, FV_ERR_BAD_PARAM,
               "%s: input frame %dx%d, but the filter was made for %dx%d", op, in->width,
               in->height, d->width, d->height);
    FV_REQUIRE(out->width == d->width && out->height == d->height, FV_ERR_BAD_PARAM,
               "%s: output frame %dx%d, but the filter was made for %dx%d", op, out->width,
               out->height, d->width, d->height);
    FV_REQUIRE(out->format == FV_PIXEL_GRAY8 || out->format == FV_PIXEL_RGB24 ||
                   out->format == FV_PIXEL_BGR24 || out->format == FV_PIXEL_RGBA32,
               FV_ERR_NOT_SUPPORTED,
               "%s: output format %s is not supported (GRAY8, RGB24, BGR24, RGBA32 are)", op,
               fv_pixel_format_name(out->format));
    fv_context *ctx = f->ctx;
    fv_unpack_desc ud = {.absolute = 0, .scale = 1.0f, .bias = 0.0f};
    FV_TRY(fv_image_pack(ctx, in, f->x, NULL));
    FV_TRY(fv_conv2d_forward(f->conv, f->x, f->y));
    fv_status s = ctx->be->edge(ctx, f->y, f->pairs, d->overlay ? f->x : NULL, 255.0f, f->e,
                                255.0f * d->gain, d->threshold);
    if (s != FV_OK) return fv__error_prefix(s, op);
    return fv_image_unpack(ctx, f->e, out, &ud);
}
