/* fv_preprocess on the CPU backend against a naive reference written here
 * from fovea/preprocess.h's rule in double precision: every pixel format,
 * 1 and 3 channels, F32 and F16, stretch and letterbox, shrinking and
 * growing, B, G, R order, one batch item of several; the region helper;
 * bad arguments refused with a message. */
#include "fv_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double clamp255(double v) {
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* Pixel (x, y) as R, G, B doubles (or grey / luma in v[0] when channels is 1). */
static void ref_pixel(const fv_image *im, int x, int y, int channels, double v[3]) {
    const unsigned char *row = (const unsigned char *)im->data + (size_t)y * im->stride;
    double Y = 0, U = 0, V = 0;
    int yuv = 0;
    switch (im->format) {
    case FV_PIXEL_GRAY8:
        v[0] = v[1] = v[2] = row[x];
        return;
    case FV_PIXEL_RGB24:
        v[0] = row[3 * x], v[1] = row[3 * x + 1], v[2] = row[3 * x + 2];
        break;
    case FV_PIXEL_BGR24:
        v[2] = row[3 * x], v[1] = row[3 * x + 1], v[0] = row[3 * x + 2];
        break;
    case FV_PIXEL_RGBA32:
        v[0] = row[4 * x], v[1] = row[4 * x + 1], v[2] = row[4 * x + 2];
        break;
    case FV_PIXEL_YUYV:
        Y = row[2 * x], U = row[4 * (x / 2) + 1], V = row[4 * (x / 2) + 3], yuv = 1;
        break;
    case FV_PIXEL_UYVY:
        Y = row[2 * x + 1], U = row[4 * (x / 2)], V = row[4 * (x / 2) + 2], yuv = 1;
        break;
    case FV_PIXEL_NV12: {
        const unsigned char *uv = (const unsigned char *)im->uv + (size_t)(y / 2) * im->uv_stride;
        Y = row[x], U = uv[x / 2 * 2], V = uv[x / 2 * 2 + 1], yuv = 1;
        break;
    }
    }
    if (yuv && channels == 1) {
        v[0] = Y;
    } else if (yuv) {
        v[0] = clamp255(1.164 * (Y - 16) + 1.596 * (V - 128));
        v[1] = clamp255(1.164 * (Y - 16) - 0.392 * (U - 128) - 0.813 * (V - 128));
        v[2] = clamp255(1.164 * (Y - 16) + 2.017 * (U - 128));
    } else if (channels == 1) {
        v[0] = 0.299 * v[0] + 0.587 * v[1] + 0.114 * v[2];
    }
}

static size_t bpp(fv_pixel_format f) {
    return f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 ? 3
           : f == FV_PIXEL_RGBA32                     ? 4
           : f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY ? 2
                                                      : 1;
}

/* Random image with `extra` bytes past each row; NV12's UV plane after Y. */
static fv_image make_image(fv_pixel_format f, int w, int h, int extra) {
    fv_image im = {.format = f, .width = w, .height = h};
    im.stride = (size_t)w * bpp(f) + (size_t)extra;
    size_t bytes = im.stride * h + (f == FV_PIXEL_NV12 ? im.stride * (h / 2) : 0);
    im.data = malloc(bytes);
    assert_non_null(im.data);
    fv_test_fill_bytes(im.data, bytes);
    if (f == FV_PIXEL_NV12)
        im.uv = (unsigned char *)im.data + im.stride * h, im.uv_stride = im.stride;
    return im;
}

/* The documented rule in doubles. */
static void ref_region(int sw, int sh, int dw, int dh, int letterbox, int r[4]) {
    if (!letterbox) {
        r[0] = r[1] = 0, r[2] = dw, r[3] = dh;
        return;
    }
    double s = fmin((double)dw / sw, (double)dh / sh);
    long w = lround(sw * s), h = lround(sh * s);
    w = w < 1 ? 1 : w > dw ? dw : w;
    h = h < 1 ? 1 : h > dh ? dh : h;
    r[0] = (dw - (int)w) / 2, r[1] = (dh - (int)h) / 2, r[2] = (int)w, r[3] = (int)h;
}

static void ref_axis(int i, double f, int n, int *i0, int *i1, double *w) {
    double s = (i + 0.5) * f - 0.5;
    if (s < 0) s = 0;
    int a = (int)floor(s);
    if (a > n - 1) a = n - 1;
    *i0 = a, *i1 = a + 1 < n ? a + 1 : n - 1, *w = s - a < 0 ? 0 : s - a;
}

/* Tensor value of channel c at (x, y). */
static double ref_value(const fv_image *im, int dw, int dh, int C, const fv_preprocess_desc *d,
                        int x, int y, int c) {
    int r[4];
    ref_region(im->width, im->height, dw, dh, d->fit == FV_RESIZE_LETTERBOX, r);
    int from = C == 1 ? 0 : d->bgr ? 2 - c : c;
    double scale = d->scale ? d->scale : 1.0 / 255, sd = d->std[c] ? d->std[c] : 1.0;
    double v;
    if (x < r[0] || x >= r[0] + r[2] || y < r[1] || y >= r[1] + r[3]) {
        v = d->fill[from];
    } else {
        int x0, x1, y0, y1;
        double wx, wy, p[4][3];
        ref_axis(x - r[0], (double)im->width / r[2], im->width, &x0, &x1, &wx);
        ref_axis(y - r[1], (double)im->height / r[3], im->height, &y0, &y1, &wy);
        ref_pixel(im, x0, y0, C, p[0]);
        ref_pixel(im, x1, y0, C, p[1]);
        ref_pixel(im, x0, y1, C, p[2]);
        ref_pixel(im, x1, y1, C, p[3]);
        v = (p[0][from] * (1 - wx) + p[1][from] * wx) * (1 - wy) +
            (p[2][from] * (1 - wx) + p[3][from] * wx) * wy;
    }
    return (v * scale - d->mean[c]) / sd;
}

static float load(const fv_tensor_shape *s, const void *data, size_t i) {
    return s->dtype == FV_DTYPE_F16 ? fv_f16_to_f32(((const fv_half *)data)[i])
                                    : ((const float *)data)[i];
}

/* Runs one case into item 1 of a batch of 3 (items 0 and 2 poisoned and
 * checked untouched) and compares with the reference. */
static void run_case(fv_context *ctx, fv_pixel_format f, int sw, int sh, int dw, int dh, int C,
                     fv_dtype dt, const fv_preprocess_desc *d) {
    fv_image im = make_image(f, sw, sh, 5);
    fv_tensor *t = NULL;
    FV_ASSERT_OK(fv_tensor_create(
        ctx, &(fv_tensor_desc){.dtype = dt, .n = 3, .h = dh, .w = dw, .c = C}, &t));
    fv_tensor_shape s;
    FV_ASSERT_OK(fv_tensor_shape_get(t, &s));
    unsigned char *data = fv_tensor_data(t);
    memset(data, 0x7b, s.bytes);
    FV_ASSERT_OK(fv_preprocess(ctx, &im, t, 1, d));
    size_t item = s.stride[0] * s.elem_bytes;
    for (size_t i = 0; i < item; i++) {
        if (data[i] != 0x7b || data[2 * item + i] != 0x7b)
            fail_msg("%s %dx%d: byte %zu of another item was written", fv_pixel_format_name(f), sw,
                     sh, i);
    }
    double worst = 0;
    for (int y = 0; y < dh; y++)
        for (int x = 0; x < dw; x++)
            for (int c = 0; c < s.c_stored; c++) {
                size_t i = s.stride[0] + (size_t)y * s.stride[1] + (size_t)x * s.stride[2] + c;
                float got = load(&s, data, i);
                if (c >= C) {
                    if (got != 0.0f) fail_msg("padding channel %d is %g, not 0", c, (double)got);
                    continue;
                }
                double ref = ref_value(&im, dw, dh, C, d, x, y, c);
                /* float coordinates: a weight off by ~1e-6 moves a value by that
                 * times a neighbour's difference (up to 255 * scale / std) */
                double pix =
                    255.0 * (d->scale ? d->scale : 1.0 / 255) / (d->std[c] ? d->std[c] : 1);
                double tol = 1e-5 * fabs(ref) + 4e-6 * pix + 1e-6;
                if (dt == FV_DTYPE_F16) tol += 1e-3 * fabs(ref) + 1e-3;
                double err = fabs(got - ref);
                if (err > worst) worst = err;
                if (!(err <= tol))
                    fail_msg("%s %dx%d -> %dx%d C=%d %s %s: (%d, %d) channel %d is %.6f, reference "
                             "%.6f",
                             fv_pixel_format_name(f), sw, sh, dw, dh, C,
                             dt == FV_DTYPE_F16 ? "F16" : "F32",
                             d->fit == FV_RESIZE_LETTERBOX ? "letterbox" : "stretch", x, y, c,
                             (double)got, ref);
            }
    fv_tensor_destroy(t);
    free(im.data);
}

static const fv_pixel_format formats[] = {FV_PIXEL_GRAY8,  FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                          FV_PIXEL_RGBA32, FV_PIXEL_YUYV,  FV_PIXEL_UYVY,
                                          FV_PIXEL_NV12};

static void test_formats(void **state) {
    (void)state;
    fv_test_seed(16);
    fv_context *ctx = fv_test_cpu_context(0);
    const int sizes[][4] = {{38, 24, 16, 12}, {10, 6, 31, 17}, {64, 48, 20, 20}, {8, 30, 16, 16}};
    const fv_preprocess_desc descs[] = {
        {0},
        {.fit = FV_RESIZE_LETTERBOX,
         .mean = {0.485f, 0.456f, 0.406f},
         .std = {0.229f, 0.224f, 0.225f}},
        {.fit = FV_RESIZE_LETTERBOX,
         .fill = {114, 114, 114},
         .scale = 1.0f,
         .mean = {10, 20, 30},
         .bgr = 1},
    };
    for (size_t fi = 0; fi < sizeof formats / sizeof formats[0]; fi++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
            for (size_t di = 0; di < sizeof descs / sizeof descs[0]; di++)
                for (int C = 1; C <= 3; C += 2)
                    for (int dt = 0; dt < 2; dt++)
                        run_case(ctx, formats[fi], sizes[si][0], sizes[si][1], sizes[si][2],
                                 sizes[si][3], C, dt ? FV_DTYPE_F32 : FV_DTYPE_F16, &descs[di]);
    fv_context_destroy(ctx);
}

/* Same size, scale 1, no normalisation: the bytes themselves, exactly. */
static void test_identity(void **state) {
    (void)state;
    fv_test_seed(7);
    fv_context *ctx = fv_test_cpu_context(0);
    fv_image im = make_image(FV_PIXEL_RGB24, 13, 9, 0);
    fv_tensor *t = NULL;
    FV_ASSERT_OK(fv_tensor_create(
        ctx, &(fv_tensor_desc){.dtype = FV_DTYPE_F32, .h = 9, .w = 13, .c = 3}, &t));
    FV_ASSERT_OK(fv_preprocess(ctx, &im, t, 0, &(fv_preprocess_desc){.scale = 1.0f}));
    const float *v = fv_tensor_data(t);
    for (size_t i = 0; i < 13 * 9 * 3; i++)
        assert_true(v[i] == (float)((unsigned char *)im.data)[i]);
    fv_tensor_destroy(t);
    free(im.data);
    fv_context_destroy(ctx);
}

static void test_region(void **state) {
    (void)state;
    fv_region r;
    FV_ASSERT_OK(fv_preprocess_region(1920, 1080, 224, 224, FV_RESIZE_LETTERBOX, &r));
    assert_int_equal(r.x, 0), assert_int_equal(r.width, 224);
    assert_int_equal(r.height, 126), assert_int_equal(r.y, 49);
    FV_ASSERT_OK(fv_preprocess_region(480, 640, 320, 320, FV_RESIZE_LETTERBOX, &r));
    assert_int_equal(r.width, 240), assert_int_equal(r.x, 40);
    assert_int_equal(r.height, 320), assert_int_equal(r.y, 0);
    FV_ASSERT_OK(fv_preprocess_region(10000, 1, 8, 8, FV_RESIZE_LETTERBOX, &r));
    assert_int_equal(r.height, 1), assert_int_equal(r.width, 8);
    FV_ASSERT_OK(fv_preprocess_region(640, 480, 224, 224, FV_RESIZE_STRETCH, &r));
    assert_true(r.x == 0 && r.y == 0 && r.width == 224 && r.height == 224);
    FV_ASSERT_STATUS(fv_preprocess_region(0, 480, 224, 224, FV_RESIZE_STRETCH, &r),
                     FV_ERR_BAD_PARAM, ">= 1");
    FV_ASSERT_STATUS(fv_preprocess_region(640, 480, 224, 224, (fv_resize_fit)7, &r),
                     FV_ERR_BAD_PARAM, "fit=7");
    FV_ASSERT_STATUS(fv_preprocess_region(640, 480, 224, 224, FV_RESIZE_STRETCH, NULL),
                     FV_ERR_BAD_PARAM, "out");
}

static void test_bad_args(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_image im = make_image(FV_PIXEL_YUYV, 16, 8, 0);
    fv_tensor *t = NULL, *t2 = NULL, *u8 = NULL;
    FV_ASSERT_OK(fv_tensor_create(
        ctx, &(fv_tensor_desc){.dtype = FV_DTYPE_F32, .n = 2, .h = 4, .w = 4, .c = 3}, &t));
    FV_ASSERT_OK(fv_tensor_create(
        ctx, &(fv_tensor_desc){.dtype = FV_DTYPE_F32, .h = 4, .w = 4, .c = 2}, &t2));
    FV_ASSERT_OK(fv_tensor_create(
        ctx, &(fv_tensor_desc){.dtype = FV_DTYPE_U8, .h = 4, .w = 4, .c = 3}, &u8));
    FV_ASSERT_STATUS(fv_preprocess(NULL, &im, t, 0, NULL), FV_ERR_BAD_PARAM, "ctx");
    FV_ASSERT_STATUS(fv_preprocess(ctx, NULL, t, 0, NULL), FV_ERR_BAD_PARAM, "image is NULL");
    FV_ASSERT_STATUS(fv_preprocess(ctx, &im, NULL, 0, NULL), FV_ERR_BAD_PARAM, "dst is NULL");
    FV_ASSERT_STATUS(fv_preprocess(ctx, &im, t, 2, NULL), FV_ERR_BAD_PARAM, "index 2");
    FV_ASSERT_STATUS(fv_preprocess(ctx, &im, t, -1, NULL), FV_ERR_BAD_PARAM, "index -1");
    FV_ASSERT_STATUS(fv_preprocess(ctx, &im, t2, 0, NULL), FV_ERR_BAD_SHAPE, "C=2");
    FV_ASSERT_STATUS(fv_preprocess(ctx, &im, u8, 0, NULL), FV_ERR_BAD_SHAPE, "F16 or F32");
    FV_ASSERT_STATUS(fv_preprocess(ctx, &im, t, 0, &(fv_preprocess_desc){.std = {1, -1, 1}}),
                     FV_ERR_BAD_PARAM, "channel 1");
    FV_ASSERT_STATUS(fv_preprocess(ctx, &im, t, 0, &(fv_preprocess_desc){.mean = {NAN}}),
                     FV_ERR_BAD_PARAM, "finite");
    FV_ASSERT_STATUS(fv_preprocess(ctx, &im, t, 0, &(fv_preprocess_desc){.reserved = {0, 1}}),
                     FV_ERR_BAD_PARAM, "reserved[1]");
    FV_ASSERT_STATUS(fv_preprocess(ctx, &im, t, 0, &(fv_preprocess_desc){.bgr = 2}),
                     FV_ERR_BAD_PARAM, "bgr=2");
    FV_ASSERT_STATUS(fv_preprocess(ctx, &im, t, 0, &(fv_preprocess_desc){.fit = 3}),
                     FV_ERR_BAD_PARAM, "fit=3");
    fv_image odd = im;
    odd.width = 15;
    FV_ASSERT_STATUS(fv_preprocess(ctx, &odd, t, 0, NULL), FV_ERR_BAD_PARAM, "even");
    odd = im;
    odd.stride = 8;
    FV_ASSERT_STATUS(fv_preprocess(ctx, &odd, t, 0, NULL), FV_ERR_BAD_PARAM, "stride");
    fv_context *other = fv_test_cpu_context(0);
    FV_ASSERT_STATUS(fv_preprocess(other, &im, t, 0, NULL), FV_ERR_BAD_PARAM, "another context");
    fv_context_destroy(other);
    fv_tensor_destroy(t);
    fv_tensor_destroy(t2);
    fv_tensor_destroy(u8);
    free(im.data);
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_region),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
