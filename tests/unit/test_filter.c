/* fv_filter on the CPU backend (the FP32 reference: F32 tensors) against a
 * naive double-precision reference written here from the rule in
 * fovea/filter.h (input bytes / 255, the convolution, magnitude, gain,
 * threshold, overlay and unpack's rounding); bad descs and frames refused;
 * no pool allocation per frame. Bytes may differ by 1 where FP32 rounding
 * moves a value across a rounding boundary. */
#include "fv_test.h"
#include "backend/pixel_math.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double lap[9] = {1, 1, 1, 1, -8, 1, 1, 1, 1};
static const double sobel[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
static const double scharr[9] = {-3, 0, 3, -10, 0, 10, -3, 0, 3};
static const double prewitt[9] = {-1, 0, 1, -1, 0, 1, -1, 0, 1};

/* Reference output bytes (RGB24 image) of desc d on pixels in (GRAY8 or
 * RGB24); pre receives each byte's value before threshold (for margins). */
static void reference(const fv_filter_desc *d, const unsigned char *in, unsigned char *out,
                      double *pre) {
    const int W = d->width, H = d->height, in_c = d->format == FV_PIXEL_GRAY8 ? 1 : 3;
    const int m = d->output == FV_FILTER_OUT_COLOR ? in_c : 1;
    const int pairs =
        d->kind == FV_FILTER_SOBEL || d->kind == FV_FILTER_SCHARR || d->kind == FV_FILTER_PREWITT;
    const double gain = d->gain == 0 ? 1.0 : d->gain;
    int R = 3, S = 3;
    double k[2][FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL];
    const double *k0 = d->kind == FV_FILTER_SOBEL     ? sobel
                       : d->kind == FV_FILTER_SCHARR  ? scharr
                       : d->kind == FV_FILTER_PREWITT ? prewitt
                                                      : lap;
    if (d->kind == FV_FILTER_CUSTOM) {
        R = d->kernel_rows, S = d->kernel_cols;
        for (int i = 0; i < R * S; i++)
            k[0][i] = d->kernel[i];
    } else {
        for (int i = 0; i < 9; i++)
            k[0][i] = k0[i], k[1][i] = k0[(i % 3) * 3 + i / 3];
    }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double b[3];
            for (int e = 0; e < m; e++) {
                double g[2] = {0, 0};
                for (int kk = 0; kk < (pairs ? 2 : 1); kk++) {
                    double acc = 0;
                    for (int c = 0; c < in_c; c++) {
                        if (m > 1 && c != e) continue;
                        for (int r = 0; r < R; r++)
                            for (int s = 0; s < S; s++) {
                                int iy = y + r - (R - 1) / 2, ix = x + s - (S - 1) / 2;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                double v = in[((size_t)iy * W + ix) * in_c + c] / 255.0;
                                acc += k[kk][r * S + s] * v;
                            }
                    }
                    g[kk] = acc;
                }
                b[e] = (pairs ? sqrt(g[0] * g[0] + g[1] * g[1]) : fabs(g[0])) * 255.0 * gain;
            }
            for (int j = 0; j < 3; j++) {
                double v = b[m == 1 ? 0 : j];
                double p = v;
                if (d->threshold > 0) v = v >= d->threshold ? 255 : 0;
                if (d->overlay) {
                    double base = in[((size_t)y * W + x) * in_c + (in_c == 1 ? 0 : j)];
                    v = v > base ? v : base;
                    p = p > base ? p : base;
                }
                double t = floor(v + 0.5);
                out[((size_t)y * W + x) * 3 + j] = t <= 0 ? 0 : t >= 255 ? 255 : (unsigned char)t;
                pre[((size_t)y * W + x) * 3 + j] = p;
            }
        }
}

/* Runs d on a random image and compares with the reference. */
static void check_case(fv_context *ctx, const fv_filter_desc *d, const char *what) {
    const int W = d->width, H = d->height, in_c = d->format == FV_PIXEL_GRAY8 ? 1 : 3;
    size_t n = (size_t)W * H;
    unsigned char *in = malloc(n * in_c), *got = malloc(n * 3), *want = malloc(n * 3);
    double *pre = malloc(n * 3 * sizeof *pre);
    assert_true(in && got && want && pre);
    fv_test_fill_bytes(in, n * in_c);
    for (size_t i = 0; i < n * in_c; i += 7) /* some flat runs: small, unsaturated edges */
        in[i] = in[i / 2];
    fv_filter *f;
    FV_ASSERT_OK(fv_filter_create(ctx, d, &f));
    fv_image src = {
        .format = d->format ? d->format : FV_PIXEL_RGB24, .width = W, .height = H, .data = in};
    fv_image dst = {.format = FV_PIXEL_RGB24, .width = W, .height = H, .data = got};
    memset(got, 0xAB, n * 3);
    FV_ASSERT_OK(fv_filter_apply(f, &src, &dst));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    reference(d, in, want, pre);
    size_t off = 0, mid = 0;
    for (size_t i = 0; i < n * 3; i++) {
        int diff = abs((int)got[i] - (int)want[i]);
        if (d->threshold > 0 && fabs(pre[i] - d->threshold) < 0.5) continue; /* on the edge */
        if (diff > 1)
            fail_msg("%s: pixel %zu channel %zu: got %d, reference %d (%.3f)", what, i / 3, i % 3,
                     got[i], want[i], pre[i]);
        off += diff;
        mid += want[i] > 0 && want[i] < 255;
    }
    printf("%-34s %5zu of %zu bytes off by one, %zu not saturated\n", what, off, n * 3, mid);
    assert_true(off <= n * 3 / 50);
    assert_true(mid > n / 10 || d->threshold > 0); /* the test sees real values */
    if (d->threshold > 0 && !d->overlay) {         /* both sides of the threshold */
        size_t zeros = 0, full = 0;
        for (size_t i = 0; i < n * 3; i++)
            zeros += got[i] == 0, full += got[i] == 255;
        assert_true(zeros > n / 10 && full > n / 10 && zeros + full == n * 3);
    }
    fv_filter_destroy(f);
    free(in), free(got), free(want), free(pre);
}

static void every_kind_matches_the_reference(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_test_seed(11);
    float custom[5 * 3];
    fv_test_fill_uniform(custom, 15, -1.0f, 1.0f);
    const fv_filter_kind kinds[5] = {FV_FILTER_LAPLACIAN, FV_FILTER_SOBEL, FV_FILTER_SCHARR,
                                     FV_FILTER_PREWITT, FV_FILTER_CUSTOM};
    for (int ki = 0; ki < 5; ki++)
        for (int o = 0; o < 2; o++)
            for (int gray_in = 0; gray_in < 2; gray_in++) {
                fv_filter_desc d = {.kind = kinds[ki],
                                    .width = 37,
                                    .height = 29,
                                    .format = gray_in ? FV_PIXEL_GRAY8 : FV_PIXEL_RGB24,
                                    .output = o ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY,
                                    .gain = kinds[ki] == FV_FILTER_SCHARR ? 0.02f : 0.08f};
                if (kinds[ki] == FV_FILTER_CUSTOM)
                    d.kernel = custom, d.kernel_rows = 5, d.kernel_cols = 3, d.gain = 0.3f;
                char what[96];
                snprintf(what, sizeof what, "%s %s from %s", fv_filter_kind_name(kinds[ki]),
                         o ? "colour" : "grey", gray_in ? "GRAY8" : "RGB24");
                check_case(ctx, &d, what);
            }
    fv_context_destroy(ctx);
}

static void threshold_and_overlay_follow_the_rule(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_test_seed(12);
    const fv_filter_desc base = {.kind = FV_FILTER_SOBEL, .width = 40, .height = 24, .gain = 0.1f};
    fv_filter_desc d = base;
    d.threshold = 60;
    check_case(ctx, &d, "sobel threshold 60");
    d.overlay = 1;
    check_case(ctx, &d, "sobel threshold 60 + overlay");
    d = base;
    d.overlay = 1;
    d.output = FV_FILTER_OUT_COLOR;
    check_case(ctx, &d, "sobel colour overlay");
    d.format = FV_PIXEL_GRAY8;
    d.kind = FV_FILTER_LAPLACIAN;
    check_case(ctx, &d, "laplacian overlay from GRAY8");
    fv_context_destroy(ctx);
}

static void bad_descs_are_refused(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_filter *f = (fv_filter *)1;
    float k[16 * 16] = {0};
    const fv_filter_desc ok = {.width = 16, .height = 8};
    fv_filter_desc d = ok;
    d.width = 0;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "0x8");
    assert_null(f);
    d = ok, d.height = -3;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "16x-3");
    d = ok, d.format = FV_PIXEL_YUYV, d.width = 15;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "YUYV width 15");
    d = ok, d.format = FV_PIXEL_NV12, d.height = 7;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "NV12");
    d = ok, d.format = (fv_pixel_format)42;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "format=42");
    d = ok, d.kind = (fv_filter_kind)9;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "kind=9");
    d = ok, d.output = (fv_filter_output)2;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "output=2");
    d = ok, d.gain = -1;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "gain=-1");
    d = ok, d.threshold = 300;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "threshold=300");
    d = ok, d.overlay = 2;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "overlay=2");
    d = ok, d.conv_flags = 1u << 7;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "conv_flags 0x80");
    d = ok, d.reserved[3] = 1;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "reserved[3]");
    d = ok, d.kind = FV_FILTER_CUSTOM, d.kernel_rows = d.kernel_cols = 3;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "kernel is NULL");
    d.kernel = k, d.kernel_rows = 17;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "17x3");
    d.kernel_rows = 15, d.kernel_cols = 16;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "15x16");
    d.kernel_rows = 4, d.kernel_cols = 3;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "odd");
    d.kernel_rows = 3, k[4] = NAN;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "value 4");
    d = ok, d.kernel = k;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "CUSTOM only");
    FV_ASSERT_STATUS(fv_filter_create(NULL, &ok, &f), FV_ERR_BAD_PARAM, "ctx");
    FV_ASSERT_STATUS(fv_filter_create(ctx, NULL, &f), FV_ERR_BAD_PARAM, "desc");
    FV_ASSERT_STATUS(fv_filter_create(ctx, &ok, NULL), FV_ERR_BAD_PARAM, "out");
    d = ok, d.kind = FV_FILTER_CUSTOM, d.kernel = k, d.kernel_rows = d.kernel_cols = 15;
    k[4] = 0;
    FV_ASSERT_OK(fv_filter_create(ctx, &d, &f)); /* the largest kernel, bigger than the frame */
    fv_filter_destroy(f);
    fv_filter_destroy(NULL);
    fv_context_destroy(ctx);
}

static void wrong_frames_are_refused(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    unsigned char in[32 * 16 * 4] = {0}, out[32 * 16 * 4];
    fv_filter_desc d = {.kind = FV_FILTER_SOBEL, .width = 16, .height = 8};
    fv_filter *f;
    FV_ASSERT_OK(fv_filter_create(ctx, &d, &f));
    fv_image src = {.format = FV_PIXEL_RGB24, .width = 16, .height = 8, .data = in};
    fv_image dst = {.format = FV_PIXEL_GRAY8, .width = 16, .height = 8, .data = out};
    FV_ASSERT_OK(fv_filter_apply(f, &src, &dst));
    fv_image bad = src;
    bad.width = 17;
    FV_ASSERT_STATUS(fv_filter_apply(f, &bad, &dst), FV_ERR_BAD_PARAM, "17x8");
    bad = src, bad.format = FV_PIXEL_BGR24;
    FV_ASSERT_STATUS(fv_filter_apply(f, &bad, &dst), FV_ERR_BAD_PARAM, "BGR24");
    bad = dst, bad.height = 9;
    FV_ASSERT_STATUS(fv_filter_apply(f, &src, &bad), FV_ERR_BAD_PARAM, "16x9");
    bad = dst, bad.format = FV_PIXEL_YUYV;
    FV_ASSERT_STATUS(fv_filter_apply(f, &src, &bad), FV_ERR_NOT_SUPPORTED, "YUYV");
    bad = src, bad.data = NULL;
    FV_ASSERT_STATUS(fv_filter_apply(f, &bad, &dst), FV_ERR_BAD_PARAM, "NULL");
    FV_ASSERT_STATUS(fv_filter_apply(f, NULL, &dst), FV_ERR_BAD_PARAM, "input");
    FV_ASSERT_STATUS(fv_filter_apply(f, &src, NULL), FV_ERR_BAD_PARAM, "output");
    FV_ASSERT_STATUS(fv_filter_apply(NULL, &src, &dst), FV_ERR_BAD_PARAM, "filter");
    fv_filter_destroy(f);
    fv_context_destroy(ctx);
}

static void applying_allocates_nothing(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    enum { W = 64, H = 48 };
    static unsigned char in[W * H * 2], out[W * H * 4];
    fv_test_fill_bytes(in, sizeof in);
    fv_filter_desc d = {.kind = FV_FILTER_SCHARR,
                        .width = W,
                        .height = H,
                        .format = FV_PIXEL_YUYV,
                        .output = FV_FILTER_OUT_COLOR,
                        .threshold = 128,
                        .overlay = 1};
    fv_filter *f;
    FV_ASSERT_OK(fv_filter_create(ctx, &d, &f));
    fv_image src = {.format = FV_PIXEL_YUYV, .width = W, .height = H, .data = in};
    fv_image dst = {.format = FV_PIXEL_RGBA32, .width = W, .height = H, .data = out};
    const fv_pool_kind kinds[4] = {FV_POOL_DEVICE, FV_POOL_PINNED, FV_POOL_HOST};
    fv_pool_stats before[3], after[3];
    for (int p = 0; p < 3; p++)
        FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, kinds[p]), &before[p]));
    for (int i = 0; i < 100; i++)
        FV_ASSERT_OK(fv_filter_apply(f, &src, &dst));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    for (int p = 0; p < 3; p++) {
        FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, kinds[p]), &after[p]));
        assert_int_equal(before[p].backing_allocs, after[p].backing_allocs);
        assert_int_equal(before[p].carve_outs, after[p].carve_outs);
        assert_int_equal(before[p].in_use, after[p].in_use);
    }
    assert_true(before[0].in_use > 0); /* the tensors */
    fv_filter_destroy(f);
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_DEVICE), &after[0]));
    assert_int_equal(after[0].in_use, 0);
    fv_context_destroy(ctx);
}

static void engine_choice_on_the_cpu(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_filter *f = (fv_filter *)1;
    const fv_filter_desc ok = {.kind = FV_FILTER_SOBEL, .width = 16, .height = 8};
    fv_filter_desc d = ok;
    d.engine = FV_FILTER_ENGINE_FUSED; /* a CUDA kernel: no such thing here */
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_NOT_SUPPORTED, "not available");
    assert_null(f);
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_NOT_SUPPORTED, "cpu backend");
    d.engine = FV_FILTER_ENGINE_DIRECT; /* a CUDA kernel too */
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_NOT_SUPPORTED, "DIRECT");
    assert_null(f);
    d.engine = (fv_filter_engine)4;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "engine=4");
    d.engine = (fv_filter_engine)-1;
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "engine=-1");
    d = ok, d.reserved[4] = 7; /* the last one left after engine took one */
    FV_ASSERT_STATUS(fv_filter_create(ctx, &d, &f), FV_ERR_BAD_PARAM, "reserved[4]");
    assert_string_equal(fv_filter_engine_name(FV_FILTER_ENGINE_AUTO), "auto");
    assert_string_equal(fv_filter_engine_name(FV_FILTER_ENGINE_FUSED), "fused");
    assert_string_equal(fv_filter_engine_name(FV_FILTER_ENGINE_CONV), "conv");
    assert_string_equal(fv_filter_engine_name(FV_FILTER_ENGINE_DIRECT), "direct");
    assert_string_equal(fv_filter_engine_name((fv_filter_engine)9), "unknown");

    /* AUTO and CONV both take the conv path on the CPU. */
    for (int e = 0; e < 2; e++) {
        d = ok, d.engine = e ? FV_FILTER_ENGINE_CONV : FV_FILTER_ENGINE_AUTO;
        FV_ASSERT_OK(fv_filter_create(ctx, &d, &f));
        fv_filter_info fi;
        memset(&fi, 0x5A, sizeof fi);
        FV_ASSERT_OK(fv_filter_info_get(f, &fi));
        assert_int_equal(fi.engine, FV_FILTER_ENGINE_CONV);
        assert_string_equal(fi.path, "pack + conv + edge + unpack (CPU reference)");
        assert_int_equal(fi.tensor_cores, 0);
        assert_int_equal(fi.kernel_rows, 3);
        assert_int_equal(fi.kernel_cols, 3);
        assert_int_equal(fi.input_channels, 3);
        assert_int_equal(fi.edge_channels, 1);
        assert_int_equal(fi.conv_outputs, 2);                          /* gx, gy */
        assert_true(fi.timed_ms[0] == 0.0f && fi.timed_ms[1] == 0.0f); /* nothing timed */
        assert_int_equal(fi.direct_exact, 1);     /* RGB24 bytes, Sobel: exact sums */
        assert_int_equal(fi.direct_wave_less, 0); /* no DIRECT on the CPU */
        for (int i = 0; i < 4; i++)
            assert_int_equal(fi.reserved[i], 0);
        assert_non_null(fv_filter_conv(f)); /* the CONV engine has a convolution */
        FV_ASSERT_STATUS(fv_filter_info_get(f, NULL), FV_ERR_BAD_PARAM, "out");
        FV_ASSERT_STATUS(fv_filter_info_get(NULL, &fi), FV_ERR_BAD_PARAM, "filter");
        fv_filter_destroy(f);
    }
    float k[7 * 5] = {0};
    k[17] = 1;
    d = ok, d.kind = FV_FILTER_CUSTOM, d.kernel = k, d.kernel_rows = 7, d.kernel_cols = 5;
    d.output = FV_FILTER_OUT_COLOR;
    FV_ASSERT_OK(fv_filter_create(ctx, &d, &f));
    fv_filter_info fi;
    FV_ASSERT_OK(fv_filter_info_get(f, &fi));
    assert_int_equal(fi.kernel_rows, 7);
    assert_int_equal(fi.kernel_cols, 5);
    assert_int_equal(fi.edge_channels, 3);
    assert_int_equal(fi.conv_outputs, 3);
    fv_filter_destroy(f);
    d.format = FV_PIXEL_GRAY8;
    FV_ASSERT_OK(fv_filter_create(ctx, &d, &f));
    FV_ASSERT_OK(fv_filter_info_get(f, &fi));
    assert_int_equal(fi.input_channels, 1);
    assert_int_equal(fi.edge_channels, 1);
    fv_filter_destroy(f);
    assert_null(fv_filter_conv(NULL));
    fv_context_destroy(ctx);
}

/* YUV-converted values as FUSED and DIRECT take them (pixel_math.h's
 * fv__yuv_grid): FP16 values, multiples of 2^-8, FP16 rounding from 4 up,
 * within 2^-9 of the value below; over every (Y, U, V) triple's R, G, B. */
static void yuv_values_lie_on_the_exact_grid(void **state) {
    (void)state;
    size_t below = 0;
    for (int y = 0; y < 256; y++)
        for (int u = 0; u < 256; u++)
            for (int v = 0; v < 256; v++) {
                float c[3];
                fv__yuv_to_rgb((float)y, (float)u, (float)v, &c[0], &c[1], &c[2]);
                for (int i = 0; i < 3; i++) {
                    const float g = fv__yuv_grid(c[i]), h = fv_f16_to_f32(fv_f32_to_f16(c[i]));
                    const float lo = rintf(c[i] * 256.0f) / 256.0f; /* the rule below 4 */
                    if (fv_f16_to_f32(fv_f32_to_f16(g)) != g ||
                        ldexpf(g, 8) != floorf(ldexpf(g, 8)))
                        fail_msg("(%d,%d,%d)[%d]: %.9g -> %.9g: not an FP16 multiple of 2^-8", y, u,
                                 v, i, (double)c[i], (double)g);
                    if (c[i] >= 4.0f ? g != h : g != lo || fabsf(g - c[i]) > 1.0f / 512)
                        fail_msg("(%d,%d,%d)[%d]: %.9g -> %.9g (FP16 %.9g)", y, u, v, i,
                                 (double)c[i], (double)g, (double)h);
                    below += c[i] > 0.0f && c[i] < 4.0f;
                }
            }
    assert_true(below > 1000); /* the grid below 4 was reached */
    /* ties go to even, as FP16's rounding */
    assert_true(fv__yuv_grid(1.0f / 512) == 0.0f);
    assert_true(fv__yuv_grid(3.0f / 512) == 4.0f / 512);
    assert_true(fv__yuv_grid(255.0f) == 255.0f && fv__yuv_grid(0.0f) == 0.0f);
    assert_true(fv__yuv_grid(254.9375f) == 255.0f); /* step 1/8 from 128: a tie, to even */
}

/* The GPU's form of the grid (fv__yuv_grid_magic: no FP16 conversion) gives
 * the FP16 route's floats for every float from 2^-10 to 256, and for 0 and
 * the values below (which both take to 0). */
static void yuv_grid_without_conversions(void **state) {
    (void)state;
    unsigned lo, hi;
    const float flo = 1.0f / 1024, fhi = 256.0f;
    memcpy(&lo, &flo, sizeof lo);
    memcpy(&hi, &fhi, sizeof hi);
    size_t n = 0;
    for (unsigned b = lo; b <= hi; b++, n++) {
        float v;
        memcpy(&v, &b, sizeof v);
        const float want = fv_round_f16(v * 1.52587890625e-05f) * 65536.0f;
        const float got = fv__yuv_grid_magic(v);
        if (memcmp(&want, &got, sizeof got) != 0)
            fail_msg("%.9g: FP16 route %.9g, magic %.9g", (double)v, (double)want, (double)got);
    }
    assert_true(n > 100000000);
    const float small[] = {0.0f, 1e-30f, 1.0f / 2048, 1.0f / 1025};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        assert_true(fv__yuv_grid_magic(small[i]) == 0.0f && !signbit(fv__yuv_grid_magic(small[i])));
}

/* The DIRECT strip kernel's YUV reader (fv__yuv_to_rgb_grid_scaled2: the
 * constants scaled by 2^-16, FP16 rounding, the clamp after it) gives
 * fv__yuv_grid(fv__yuv_to_rgb(...)) times 2^-16 exactly, for every (Y, U, V)
 * triple in either slot of the pair. (The GPU's form, packed FP16, is
 * checked byte for byte against FUSED by test_gpu_filter.) */
static void yuv_scaled_conversion_is_the_grid(void **state) {
    (void)state;
    for (int y = 0; y < 256; y++)
        for (int u = 0; u < 256; u++)
            for (int v = 0; v < 256; v++) {
                const float ys[2] = {(float)y, (float)(255 - v)}, us[2] = {(float)u, (float)y},
                            vs[2] = {(float)v, (float)u};
                float c[2][3];
                fv__yuv_to_rgb_grid_scaled2(ys, us, vs, c);
                for (int k = 0; k < 2; k++) {
                    float want[3];
                    fv__yuv_to_rgb(ys[k], us[k], vs[k], &want[0], &want[1], &want[2]);
                    for (int i = 0; i < 3; i++) {
                        const float w = fv__yuv_grid(want[i]), got = c[k][i] * 65536.0f;
                        if (w != got)
                            fail_msg("(%g,%g,%g)[%d]: grid %.9g, scaled form %.9g", (double)ys[k],
                                     (double)us[k], (double)vs[k], i, (double)w, (double)got);
                    }
                }
            }
}

/* fv_filter_info.direct_exact: DIRECT's bytes provably FUSED's where every
 * sum is exact in FP32: values (bytes, or YUV on the 2^-8 grid) times FP16
 * weights (multiples of 2^-q), 255 * channels * sum |w| * 2^(q + qi) < 2^24. */
static void direct_exact_follows_the_sums(void **state) {
    (void)state;
    fv_context *ctx;
    FV_ASSERT_OK(fv_context_create(&(fv_context_desc){.backend = FV_BACKEND_CPU}, &ctx));
    float fine[9], half[9];
    for (int i = 0; i < 9; i++)
        fine[i] = 0.1f, half[i] = i == 4 ? -4.0f : 0.5f;
    const struct {
        fv_pixel_format fmt;
        fv_filter_kind kind;
        const float *k;
        int exact;
    } cases[] = {
        {FV_PIXEL_RGB24, FV_FILTER_SCHARR, NULL, 1},   {FV_PIXEL_YUYV, FV_FILTER_SCHARR, NULL, 1},
        {FV_PIXEL_NV12, FV_FILTER_LAPLACIAN, NULL, 1}, {FV_PIXEL_UYVY, FV_FILTER_SOBEL, NULL, 1},
        {FV_PIXEL_YUYV, FV_FILTER_CUSTOM, half, 1},    {FV_PIXEL_RGB24, FV_FILTER_CUSTOM, fine, 1},
        {FV_PIXEL_YUYV, FV_FILTER_CUSTOM, fine, 0}, /* 255*3*0.9*2^(14+8) >= 2^24 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fv_filter_desc d = {.kind = cases[i].kind,
                            .width = 64,
                            .height = 32,
                            .format = cases[i].fmt,
                            .output = FV_FILTER_OUT_GRAY,
                            .gain = 1.0f};
        if (cases[i].k) d.kernel = cases[i].k, d.kernel_rows = d.kernel_cols = 3;
        fv_filter *f;
        FV_ASSERT_OK(fv_filter_create(ctx, &d, &f));
        fv_filter_info fi;
        FV_ASSERT_OK(fv_filter_info_get(f, &fi));
        if (fi.direct_exact != cases[i].exact)
            fail_msg("case %zu: direct_exact %d, want %d", i, fi.direct_exact, cases[i].exact);
        fv_filter_destroy(f);
    }
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(engine_choice_on_the_cpu),
        cmocka_unit_test(yuv_values_lie_on_the_exact_grid),
        cmocka_unit_test(yuv_grid_without_conversions),
        cmocka_unit_test(yuv_scaled_conversion_is_the_grid),
        cmocka_unit_test(direct_exact_follows_the_sums),
        cmocka_unit_test(every_kind_matches_the_reference),
        cmocka_unit_test(threshold_and_overlay_follow_the_rule),
        cmocka_unit_test(bad_descs_are_refused),
        cmocka_unit_test(wrong_frames_are_refused),
        cmocka_unit_test(applying_allocates_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
