/* fv_classify and fv_segment on the CPU backend against naive references
 * written here from fovea/postprocess.h: top-K with ties and softmax, the
 * per-pixel argmax, upsampled premultiplied colours blended over frames of
 * every format (and in place), mask only, regions; bad arguments refused. */
#include "fv_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fv_tensor *make(fv_context *ctx, fv_dtype dt, int n, int h, int w, int c) {
    fv_tensor *t = NULL;
    FV_ASSERT_OK(
        fv_tensor_create(ctx, &(fv_tensor_desc){.dtype = dt, .n = n, .h = h, .w = w, .c = c}, &t));
    return t;
}

/* Dense NHWC values into t (F16 rounds). */
static void put(fv_context *ctx, fv_tensor *t, const float *v, size_t n) {
    fv_tensor_shape s;
    FV_ASSERT_OK(fv_tensor_shape_get(t, &s));
    if (s.dtype == FV_DTYPE_F32) {
        FV_ASSERT_OK(fv_tensor_upload(ctx, t, v, n * sizeof(float)));
    } else {
        fv_half *h = malloc(n * sizeof *h);
        for (size_t i = 0; i < n; i++)
            h[i] = fv_f32_to_f16(v[i]);
        FV_ASSERT_OK(fv_tensor_upload(ctx, t, h, n * sizeof *h));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        free(h);
    }
    FV_ASSERT_OK(fv_context_synchronize(ctx));
}

/* ---- classification --------------------------------------------------------- */
/* aarch64-linux-gnu-gcc 12 crashes vectorizing this reference (an internal
 * compiler error in vect_transform_reduction): keep it scalar. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__aarch64__)
__attribute__((optimize("no-tree-vectorize"), noinline))
#endif
static void
check_topk(const float *x, int C, int k, int softmax, int f16, const fv_class_score *got) {
    double mx = -INFINITY, sum = 0;
    float *v = malloc(sizeof(float) * C);
    for (int c = 0; c < C; c++) {
        v[c] = f16 ? fv_round_f16(x[c]) : x[c];
        mx = fmax(mx, v[c]);
    }
    for (int c = 0; c < C; c++)
        sum += exp(v[c] - mx);
    int prev = -1;
    for (int r = 0; r < k; r++) {
        /* the best ranked after the previous pick: larger value, or equal at a higher index */
        int best = -1;
        for (int c = 0; c < C; c++) {
            if (prev >= 0 && !(v[c] < v[prev] || (v[c] == v[prev] && c > prev))) continue;
            if (best < 0 || v[c] > v[best]) best = c;
        }
        if (got[r].index != best)
            fail_msg("rank %d: class %d, reference %d (%g vs %g)", r, got[r].index, best,
                     (double)v[got[r].index], (double)v[best]);
        double want = softmax ? exp(v[best] - mx) / sum : v[best];
        if (fabs(got[r].score - want) > 1e-5 * fabs(want) + 1e-7)
            fail_msg("rank %d: score %.8g, reference %.8g", r, (double)got[r].score, want);
        prev = best;
    }
    free(v);
}

static void test_classify(void **state) {
    (void)state;
    fv_test_seed(3);
    fv_context *ctx = fv_test_cpu_context(0);
    const int shapes[][3] = {{1, 10, 5}, {4, 1000, 5}, {3, 7, 7}, {2, 40, 32}, {2, 3, 1}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int f16 = 0; f16 < 2; f16++)
            for (int softmax = 0; softmax < 2; softmax++) {
                const int N = shapes[si][0], C = shapes[si][1], K = shapes[si][2];
                float *x = malloc(sizeof(float) * N * C);
                fv_test_fill_uniform(x, (size_t)N * C, -8, 8);
                for (int i = 0; i < N * C; i += 3) /* ties: few distinct values */
                    x[i] = (float)((int)x[i]);
                fv_tensor *t = make(ctx, f16 ? FV_DTYPE_F16 : FV_DTYPE_F32, N, 1, 1, C);
                put(ctx, t, x, (size_t)N * C);
                fv_classify *op = NULL;
                FV_ASSERT_OK(fv_classify_create(
                    ctx, &(fv_classify_desc){.batch = N, .classes = C, .k = K, .softmax = softmax},
                    &op));
                FV_ASSERT_OK(fv_classify_run(op, t));
                FV_ASSERT_OK(fv_context_synchronize(ctx));
                for (int b = 0; b < N; b++) {
                    fv_class_score got[FV_CLASSIFY_MAX_K];
                    FV_ASSERT_OK(fv_classify_result(op, b, got, K));
                    check_topk(x + (size_t)b * C, C, K, softmax, f16, got);
                }
                fv_classify_destroy(op);
                fv_tensor_destroy(t);
                free(x);
            }
    fv_context_destroy(ctx);
}

static void test_classify_args(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_classify *op = NULL;
    FV_ASSERT_STATUS(fv_classify_create(ctx, &(fv_classify_desc){.batch = 0, .classes = 3}, &op),
                     FV_ERR_BAD_PARAM, "batch=0");
    assert_null(op);
    FV_ASSERT_STATUS(
        fv_classify_create(ctx, &(fv_classify_desc){.batch = 1, .classes = 3, .k = 33}, &op),
        FV_ERR_BAD_PARAM, "k=33");
    FV_ASSERT_STATUS(
        fv_classify_create(ctx, &(fv_classify_desc){.batch = 1, .classes = 3, .softmax = 2}, &op),
        FV_ERR_BAD_PARAM, "softmax=2");
    FV_ASSERT_STATUS(fv_classify_create(NULL, &(fv_classify_desc){.batch = 1, .classes = 3}, &op),
                     FV_ERR_BAD_PARAM, "ctx");
    FV_ASSERT_OK(fv_classify_create(ctx, &(fv_classify_desc){.batch = 2, .classes = 3}, &op));
    fv_class_score r[5];
    FV_ASSERT_STATUS(fv_classify_result(op, 0, r, 3), FV_ERR_BAD_STATE, "not been called");
    FV_ASSERT_STATUS(fv_classify_result(op, 0, r, 4), FV_ERR_BAD_PARAM, "count=4"); /* k clamped */
    fv_tensor *t = make(ctx, FV_DTYPE_F32, 2, 2, 1, 3);
    FV_ASSERT_STATUS(fv_classify_run(op, t), FV_ERR_BAD_SHAPE, "H=2");
    fv_tensor_destroy(t);
    t = make(ctx, FV_DTYPE_F32, 2, 1, 1, 3);
    FV_ASSERT_OK(fv_classify_run(op, t));
    FV_ASSERT_STATUS(fv_classify_result(op, 2, r, 1), FV_ERR_BAD_PARAM, "item 2");
    FV_ASSERT_OK(fv_classify_result(op, 1, r, 3));
    assert_int_equal(r[0].index, 0); /* all equal: the lower class first */
    assert_int_equal(r[2].index, 2);
    fv_tensor_destroy(t);
    fv_classify_destroy(op);
    fv_classify_destroy(NULL);
    fv_context_destroy(ctx);
}

/* ---- segmentation ----------------------------------------------------------- */
typedef struct seg_case {
    int N, C, H, W;     /* logits */
    int in_w, in_h;     /* net input (0: the logits') */
    int rx, ry, rw, rh; /* region (rw 0: NULL) */
    int fw, fh;         /* frame / out size */
    fv_pixel_format frame, out;
    int mask_only, in_place, f16, own_palette;
    float alpha;
} seg_case;

static void ref_rgb(const fv_image *im, int x, int y, double v[3]) {
    const unsigned char *row = (const unsigned char *)im->data + (size_t)y * im->stride;
    switch (im->format) {
    case FV_PIXEL_GRAY8:
        v[0] = v[1] = v[2] = row[x];
        return;
    case FV_PIXEL_RGB24:
        v[0] = row[3 * x], v[1] = row[3 * x + 1], v[2] = row[3 * x + 2];
        return;
    case FV_PIXEL_BGR24:
        v[2] = row[3 * x], v[1] = row[3 * x + 1], v[0] = row[3 * x + 2];
        return;
    case FV_PIXEL_RGBA32:
        v[0] = row[4 * x], v[1] = row[4 * x + 1], v[2] = row[4 * x + 2];
        return;
    default: {
        double Y, U, V;
        if (im->format == FV_PIXEL_NV12) {
            const unsigned char *uv =
                (const unsigned char *)im->uv + (size_t)(y / 2) * im->uv_stride;
            Y = row[x], U = uv[x / 2 * 2], V = uv[x / 2 * 2 + 1];
        } else if (im->format == FV_PIXEL_YUYV) {
            Y = row[2 * x], U = row[4 * (x / 2) + 1], V = row[4 * (x / 2) + 3];
        } else {
            Y = row[2 * x + 1], U = row[4 * (x / 2)], V = row[4 * (x / 2) + 2];
        }
        double c = 1.164 * (Y - 16);
        v[0] = fmin(255, fmax(0, c + 1.596 * (V - 128)));
        v[1] = fmin(255, fmax(0, c - 0.392 * (U - 128) - 0.813 * (V - 128)));
        v[2] = fmin(255, fmax(0, c + 2.017 * (U - 128)));
    }
    }
}

static size_t bpp(fv_pixel_format f) {
    return f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 ? 3
           : f == FV_PIXEL_RGBA32                     ? 4
           : f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY ? 2
                                                      : 1;
}

static void ref_axis(int i, double f, double o, double span, int n, int *i0, int *i1, double *w) {
    double s = (i + 0.5) * f + o - 0.5;
    double hi = span > 1 ? o + span - 1 : o;
    s = s > hi ? hi : s < o ? o : s; /* within the region's pixel centres */
    if (s < 0) s = 0;
    int a = (int)floor(s);
    if (a > n - 1) a = n - 1;
    *i0 = a, *i1 = a + 1 < n ? a + 1 : n - 1, *w = s - a < 0 ? 0 : s - a;
}

static void run_seg(fv_context *ctx, const seg_case *sc) {
    const int N = sc->N, C = sc->C, H = sc->H, W = sc->W;
    const int in_w = sc->in_w ? sc->in_w : W, in_h = sc->in_h ? sc->in_h : H;
    float *x = malloc(sizeof(float) * N * H * W * C);
    fv_test_fill_uniform(x, (size_t)N * H * W * C, -4, 4);
    for (size_t i = 0; i < (size_t)N * H * W * C; i += 5)
        x[i] = (float)(int)x[i]; /* ties */
    fv_tensor *t = make(ctx, sc->f16 ? FV_DTYPE_F16 : FV_DTYPE_F32, N, H, W, C);
    put(ctx, t, x, (size_t)N * H * W * C);
    uint8_t pal[4 * 256];
    for (int k = 0; k < C; k++) {
        if (sc->own_palette) {
            fv_test_fill_bytes(pal + 4 * k, 4);
        } else {
            fv_segment_palette_color(k, pal + 4 * k);
        }
    }
    fv_segment *op = NULL;
    FV_ASSERT_OK(fv_segment_create(ctx,
                                   &(fv_segment_desc){.batch = N,
                                                      .classes = C,
                                                      .height = H,
                                                      .width = W,
                                                      .input_width = sc->in_w,
                                                      .input_height = sc->in_h,
                                                      .palette = sc->own_palette ? pal : NULL,
                                                      .alpha = sc->alpha},
                                   &op));
    fv_image frame = {.format = sc->frame, .width = sc->fw, .height = sc->fh};
    frame.stride = (size_t)sc->fw * bpp(sc->frame) + 3;
    size_t fbytes = frame.stride * sc->fh * 2;
    frame.data = malloc(fbytes);
    fv_test_fill_bytes(frame.data, fbytes);
    if (sc->frame == FV_PIXEL_NV12)
        frame.uv = (unsigned char *)frame.data + frame.stride * sc->fh,
        frame.uv_stride = frame.stride;
    fv_image out = {.format = sc->out, .width = sc->fw, .height = sc->fh};
    out.stride = (size_t)sc->fw * bpp(sc->out) + 1;
    if (sc->in_place)
        out = frame;
    else
        out.data = malloc(out.stride * sc->fh);
    unsigned char *orig = malloc(fbytes);
    memcpy(orig, frame.data, fbytes);
    fv_image ref_frame = frame;
    ref_frame.data = orig;
    if (sc->frame == FV_PIXEL_NV12) ref_frame.uv = orig + frame.stride * sc->fh;
    fv_region reg = {sc->rx, sc->ry, sc->rw, sc->rh};
    const int item = N - 1;
    FV_ASSERT_OK(
        fv_segment_run(op, t, item, sc->rw ? &reg : NULL, sc->mask_only ? NULL : &frame, &out));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    if (!sc->rw) reg = (fv_region){0, 0, in_w, in_h};
    const double alpha = sc->alpha ? sc->alpha : 0.5;
    double sx = (double)W / in_w, sy = (double)H / in_h;
    for (int y = 0; y < sc->fh; y++)
        for (int xo = 0; xo < sc->fw; xo++) {
            int x0, x1, y0, y1;
            double wx, wy;
            ref_axis(xo, reg.width * sx / sc->fw, reg.x * sx, reg.width * sx, W, &x0, &x1, &wx);
            ref_axis(y, reg.height * sy / sc->fh, reg.y * sy, reg.height * sy, H, &y0, &y1, &wy);
            const int xs[4] = {x0, x1, x0, x1}, ys[4] = {y0, y0, y1, y1};
            const double ws[4] = {(1 - wx) * (1 - wy), wx * (1 - wy), (1 - wx) * wy, wx * wy};
            double col[4] = {0, 0, 0, 0};
            for (int j = 0; j < 4; j++) {
                const float *px = x + (((size_t)item * H + ys[j]) * W + xs[j]) * C;
                int best = 0;
                for (int c = 1; c < C; c++) {
                    float a = sc->f16 ? fv_round_f16(px[c]) : px[c];
                    float b = sc->f16 ? fv_round_f16(px[best]) : px[best];
                    if (a > b) best = c;
                }
                double a = pal[4 * best + 3] / 255.0 * alpha;
                for (int i = 0; i < 3; i++)
                    col[i] += ws[j] * pal[4 * best + i] * a;
                col[3] += ws[j] * a;
            }
            double f[3] = {0, 0, 0};
            if (!sc->mask_only) ref_rgb(&ref_frame, xo, y, f);
            const unsigned char *o = (const unsigned char *)out.data + (size_t)y * out.stride +
                                     (size_t)xo * bpp(sc->out);
            for (int i = 0; i < 3; i++) {
                double want = f[i] * (1 - col[3]) + col[i];
                int oi = sc->out == FV_PIXEL_BGR24 ? 2 - i : i;
                if (fabs(o[oi] - want) > 0.5 + 1e-3)
                    fail_msg("%s over %s: (%d, %d) channel %d is %d, reference %.3f",
                             fv_pixel_format_name(sc->out), fv_pixel_format_name(sc->frame), xo, y,
                             i, o[oi], want);
            }
            if (sc->out == FV_PIXEL_RGBA32) assert_int_equal(o[3], 255);
        }
    fv_segment_destroy(op);
    fv_tensor_destroy(t);
    if (!sc->in_place) free(out.data);
    free(frame.data);
    free(orig);
    free(x);
}

static void test_segment(void **state) {
    (void)state;
    fv_test_seed(21);
    fv_context *ctx = fv_test_cpu_context(0);
    const fv_pixel_format frames[] = {FV_PIXEL_GRAY8,  FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                      FV_PIXEL_RGBA32, FV_PIXEL_YUYV,  FV_PIXEL_UYVY,
                                      FV_PIXEL_NV12};
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
        seg_case sc = {.N = 2,
                       .C = 5,
                       .H = 6,
                       .W = 8,
                       .fw = 30,
                       .fh = 20,
                       .frame = frames[i],
                       .out = i % 3 == 0   ? FV_PIXEL_RGBA32
                              : i % 3 == 1 ? FV_PIXEL_RGB24
                                           : FV_PIXEL_BGR24,
                       .f16 = (int)i % 2};
        run_seg(ctx, &sc);
    }
    /* mask only; own palette and alpha; letterbox region of a bigger input */
    run_seg(ctx, &(seg_case){.N = 1,
                             .C = 21,
                             .H = 7,
                             .W = 7,
                             .fw = 50,
                             .fh = 28,
                             .frame = FV_PIXEL_RGB24,
                             .out = FV_PIXEL_RGB24,
                             .mask_only = 1});
    run_seg(ctx, &(seg_case){.N = 3,
                             .C = 3,
                             .H = 14,
                             .W = 14,
                             .in_w = 56,
                             .in_h = 56,
                             .rx = 0,
                             .ry = 12,
                             .rw = 56,
                             .rh = 32,
                             .fw = 64,
                             .fh = 36,
                             .frame = FV_PIXEL_RGB24,
                             .out = FV_PIXEL_RGB24,
                             .own_palette = 1,
                             .alpha = 0.8f});
    /* shrinking, and drawing in place */
    run_seg(ctx, &(seg_case){.N = 1,
                             .C = 2,
                             .H = 40,
                             .W = 60,
                             .fw = 13,
                             .fh = 9,
                             .frame = FV_PIXEL_RGBA32,
                             .out = FV_PIXEL_RGBA32,
                             .in_place = 1,
                             .alpha = 1.0f,
                             .own_palette = 1});
    run_seg(ctx, &(seg_case){.N = 1,
                             .C = 256,
                             .H = 3,
                             .W = 3,
                             .fw = 8,
                             .fh = 8,
                             .frame = FV_PIXEL_BGR24,
                             .out = FV_PIXEL_BGR24,
                             .in_place = 1});
    fv_context_destroy(ctx);
}

static void test_segment_args(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_segment *op = NULL;
    fv_segment_desc d = {.batch = 2, .classes = 4, .height = 4, .width = 4};
    fv_segment_desc bad = d;
    bad.classes = 257;
    FV_ASSERT_STATUS(fv_segment_create(ctx, &bad, &op), FV_ERR_BAD_PARAM, "classes=257");
    bad = d, bad.alpha = 1.5f;
    FV_ASSERT_STATUS(fv_segment_create(ctx, &bad, &op), FV_ERR_BAD_PARAM, "alpha");
    bad = d, bad.height = 0;
    FV_ASSERT_STATUS(fv_segment_create(ctx, &bad, &op), FV_ERR_BAD_PARAM, "height=0");
    FV_ASSERT_OK(fv_segment_create(ctx, &d, &op));
    fv_tensor *t = make(ctx, FV_DTYPE_F32, 2, 4, 4, 4), *t3 = make(ctx, FV_DTYPE_F32, 2, 4, 4, 3);
    unsigned char px[8 * 8 * 4], px2[8 * 8 * 4];
    fv_image out = {.format = FV_PIXEL_RGB24, .width = 8, .height = 8, .data = px};
    fv_image yuv = {.format = FV_PIXEL_YUYV, .width = 8, .height = 8, .data = px};
    fv_image small = {.format = FV_PIXEL_RGB24, .width = 4, .height = 8, .data = px2};
    fv_image rgba = {.format = FV_PIXEL_RGBA32, .width = 8, .height = 8, .data = px};
    FV_ASSERT_STATUS(fv_segment_run(op, t3, 0, NULL, NULL, &out), FV_ERR_BAD_SHAPE, "C=3");
    FV_ASSERT_STATUS(fv_segment_run(op, t, 2, NULL, NULL, &out), FV_ERR_BAD_PARAM, "index 2");
    FV_ASSERT_STATUS(fv_segment_run(op, t, 0, NULL, NULL, &yuv), FV_ERR_NOT_SUPPORTED, "YUYV");
    FV_ASSERT_STATUS(fv_segment_run(op, t, 0, &(fv_region){1, 0, 4, 4}, NULL, &out),
                     FV_ERR_BAD_PARAM, "region");
    FV_ASSERT_STATUS(fv_segment_run(op, t, 0, NULL, &small, &out), FV_ERR_BAD_PARAM, "one size");
    FV_ASSERT_STATUS(fv_segment_run(op, t, 0, NULL, &rgba, &out), FV_ERR_BAD_PARAM, "in place");
    FV_ASSERT_STATUS(fv_segment_run(NULL, t, 0, NULL, NULL, &out), FV_ERR_BAD_PARAM, "op");
    FV_ASSERT_OK(fv_segment_run(op, t, 1, &(fv_region){1, 1, 2, 3}, NULL, &out));
    fv_tensor_destroy(t);
    fv_tensor_destroy(t3);
    fv_segment_destroy(op);
    fv_segment_destroy(NULL);
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_classify_args),
        cmocka_unit_test(test_segment),
        cmocka_unit_test(test_segment_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
