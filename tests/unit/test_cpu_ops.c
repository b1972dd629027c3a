/* pooling2d and add on the CPU backend, through the public API, against
 * naive references; bad parameters refused. */
#include "fv_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes a tensor holding x (n values, rounded to FP16 first for F16). */
static fv_tensor *make(fv_context *ctx, fv_dtype dt, int n, int h, int w, int c, float *x) {
    fv_tensor_desc d = {.dtype = dt, .n = n, .h = h, .w = w, .c = c};
    fv_tensor *t = NULL;
    FV_ASSERT_OK(fv_tensor_create(ctx, &d, &t));
    size_t cnt = (size_t)n * h * w * c;
    if (dt == FV_DTYPE_F16) {
        fv_half *hb = malloc(cnt * 2);
        assert_non_null(hb);
        for (size_t i = 0; i < cnt; i++)
            x[i] = fv_round_f16(x[i]);
        fv_f32_to_f16_n(x, hb, cnt);
        FV_ASSERT_OK(fv_tensor_upload(ctx, t, hb, cnt * 2));
        free(hb);
    } else {
        FV_ASSERT_OK(fv_tensor_upload(ctx, t, x, cnt * 4));
    }
    return t;
}

/* Fills every element of t's storage, padding lanes included, with NaN. */
static void poison(fv_tensor *t) {
    fv_tensor_shape s;
    FV_ASSERT_OK(fv_tensor_shape_get(t, &s));
    if (s.dtype == FV_DTYPE_F16) {
        fv_half *h = fv_tensor_data(t);
        for (size_t i = 0; i < s.bytes / 2; i++)
            h[i] = 0x7e00;
    } else {
        float *f = fv_tensor_data(t);
        for (size_t i = 0; i < s.bytes / 4; i++)
            f[i] = NAN;
    }
}

/* Downloads t as floats; checks F16 padding lanes are zero. */
static void fetch(fv_context *ctx, const fv_tensor *t, float *x) {
    fv_tensor_shape s;
    FV_ASSERT_OK(fv_tensor_shape_get(t, &s));
    size_t cnt = (size_t)s.n * s.h * s.w * s.c;
    if (s.dtype == FV_DTYPE_F16) {
        fv_half *hb = malloc(cnt * 2);
        assert_non_null(hb);
        FV_ASSERT_OK(fv_tensor_download(ctx, t, hb, cnt * 2));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        fv_f16_to_f32_n(hb, x, cnt);
        free(hb);
        const fv_half *raw = fv_tensor_data(t);
        for (size_t px = 0; px < (size_t)s.n * s.h * s.w; px++)
            for (int c = s.c; c < s.c_stored; c++)
                if (raw[px * s.c_stored + c])
                    fail_msg("padding lane %d of pixel %zu not zero", c, px);
    } else {
        FV_ASSERT_OK(fv_tensor_download(ctx, t, x, cnt * 4));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
    }
}

static int pdim(int in, int k, int st, int pad) {
    int a = in + 2 * pad - k;
    return a < 0 ? 0 : a / st + 1;
}

static void ref_pool(const fv_pooling_desc *d, int n, int h, int w, int c, const float *in,
                     float *out) {
    int sh = d->stride_h ? d->stride_h : d->r, sw = d->stride_w ? d->stride_w : d->s;
    int P = pdim(h, d->r, sh, d->pad_h), Q = pdim(w, d->s, sw, d->pad_w);
    for (int b = 0; b < n; b++)
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++)
                for (int ch = 0; ch < c; ch++) {
                    double acc = d->mode == FV_POOLING_MAX ? -INFINITY : 0.0;
                    int cnt = 0;
                    for (int r = 0; r < d->r; r++)
                        for (int s = 0; s < d->s; s++) {
                            int ih = p * sh - d->pad_h + r, iw = q * sw - d->pad_w + s;
                            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                            double v = in[(((size_t)b * h + ih) * w + iw) * c + ch];
                            if (d->mode == FV_POOLING_MAX)
                                acc = v > acc ? v : acc;
                            else
                                acc += v;
                            cnt++;
                        }
                    if (d->mode == FV_POOLING_AVG) acc /= cnt;
                    if (d->mode == FV_POOLING_AVG_INCLUDE_PAD) acc /= d->r * d->s;
                    out[(((size_t)b * P + p) * Q + q) * c + ch] = (float)acc;
                }
}

static void run_pool(fv_pooling_mode mode, int r, int s, int sh, int sw, int ph, int pw, int n,
                     int h, int w, int c, fv_dtype dt, uint32_t flags) {
    fv_pooling_desc d = {
        .mode = mode, .r = r, .s = s, .stride_h = sh, .stride_w = sw, .pad_h = ph, .pad_w = pw};
    int P = pdim(h, r, sh ? sh : r, ph), Q = pdim(w, s, sw ? sw : s, pw);
    size_t nin = (size_t)n * h * w * c, nout = (size_t)n * P * Q * c;
    float *in = malloc(nin * 4), *out = malloc(nout * 4), *ref = malloc(nout * 4);
    assert_non_null(in && out && ref);
    fv_test_fill_uniform(in, nin, -2.0f, 2.0f);
    fv_context *ctx = fv_test_cpu_context(flags);
    fv_tensor *ti = make(ctx, dt, n, h, w, c, in);
    fv_tensor *to = NULL;
    fv_tensor_desc od = {.dtype = dt, .n = n, .h = P, .w = Q, .c = c};
    FV_ASSERT_OK(fv_tensor_create(ctx, &od, &to));
    poison(to);
    FV_ASSERT_OK(fv_pooling2d(ctx, &d, ti, to));
    fetch(ctx, to, out);
    ref_pool(&d, n, h, w, c, in, ref);
    int rounded = dt == FV_DTYPE_F16 || (flags & FV_CONTEXT_CPU_ROUND_F16);
    double err = fv_test_rel_l2(out, ref, nout), tol = rounded ? 1e-3 : 1e-6;
    if (mode == FV_POOLING_MAX) tol = 0; /* the max of stored values is exact */
    if (!(err <= tol))
        fail_msg("pool mode %d %dx%d stride %dx%d pad %dx%d N%d H%d W%d C%d %s flags %u: "
                 "rel err %.3g > %.1g",
                 mode, r, s, sh, sw, ph, pw, n, h, w, c, dt == FV_DTYPE_F16 ? "F16" : "F32", flags,
                 err, tol);
    fv_tensor_destroy(ti), fv_tensor_destroy(to);
    fv_context_destroy(ctx);
    free(in), free(out), free(ref);
}

static void test_pooling(void **state) {
    fv_test_seed(11);
    const fv_dtype dts[2] = {FV_DTYPE_F32, FV_DTYPE_F16};
    for (int m = FV_POOLING_MAX; m <= FV_POOLING_AVG_INCLUDE_PAD; m++)
        for (int t = 0; t < 2; t++) {
            fv_pooling_mode mode = (fv_pooling_mode)m;
            run_pool(mode, 2, 2, 0, 0, 0, 0, 1, 8, 10, 3, dts[t], 0);  /* stride = window */
            run_pool(mode, 3, 3, 2, 2, 1, 1, 2, 9, 11, 12, dts[t], 0); /* pad, N 2 */
            run_pool(mode, 3, 2, 1, 2, 2, 1, 1, 7, 6, 1, dts[t], 0);   /* pad 2 of 3 */
            run_pool(mode, 5, 3, 3, 1, 2, 0, 1, 12, 5, 5, dts[t], 0);  /* odd strides */
            run_pool(mode, 1, 1, 1, 1, 0, 0, 1, 4, 4, 9, dts[t], 0);   /* identity */
            run_pool(mode, 4, 4, 0, 0, 3, 3, 1, 5, 5, 2, dts[t], 0);   /* mostly padding */
        }
    run_pool(FV_POOLING_AVG, 3, 3, 1, 1, 1, 1, 1, 6, 6, 3, FV_DTYPE_F32, FV_CONTEXT_CPU_ROUND_F16);
}

/* AVG and AVG_INCLUDE_PAD differ exactly where the window covers padding. */
static void test_pooling_pad_modes(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    float in[4] = {1, 2, 3, 4}, out[3][4];
    fv_tensor *ti = make(ctx, FV_DTYPE_F32, 1, 2, 2, 1, in), *to = NULL;
    fv_tensor_desc od = {.dtype = FV_DTYPE_F32, .h = 2, .w = 2, .c = 1};
    FV_ASSERT_OK(fv_tensor_create(ctx, &od, &to));
    for (int m = 0; m < 3; m++) {
        /* 2x2 windows at stride 2 over the input padded by 1: one real cell each */
        fv_pooling_desc d = {.mode = (fv_pooling_mode)m, .r = 2, .s = 2, .pad_h = 1, .pad_w = 1};
        poison(to);
        FV_ASSERT_OK(fv_pooling2d(ctx, &d, ti, to));
        fetch(ctx, to, out[m]);
    }
    const float want_max[4] = {1, 2, 3, 4}, want_avg[4] = {1, 2, 3, 4};
    const float want_inc[4] = {0.25f, 0.5f, 0.75f, 1.0f};
    assert_memory_equal(out[0], want_max, sizeof want_max);
    assert_memory_equal(out[1], want_avg, sizeof want_avg);
    assert_memory_equal(out[2], want_inc, sizeof want_inc);
    fv_tensor_destroy(ti), fv_tensor_destroy(to);
    fv_context_destroy(ctx);
}

static double act_ref(fv_activation a, double alpha, double x) {
    switch (a) {
    case FV_ACT_IDENTITY:
        return x;
    case FV_ACT_RELU:
        return x > 0 ? x : 0;
    case FV_ACT_CLIPPED_RELU:
        return x < 0 ? 0 : (x > alpha ? alpha : x);
    case FV_ACT_SIGMOID:
        return 1 / (1 + exp(-x));
    case FV_ACT_TANH:
        return tanh(x);
    case FV_ACT_LEAKY_RELU:
        return x >= 0 ? x : alpha * x;
    case FV_ACT_HARD_SIGMOID: /* net layers only: conv2d and fv_add refuse these */
    case FV_ACT_HARD_SWISH:
    case FV_ACT_SILU:
        return NAN;
    }
    return NAN;
}

/* alias: 0 none, 1 out is a, 2 out is b */
static void run_add(fv_dtype dt, fv_activation act, float alpha, int alias, uint32_t flags) {
    const int n = 2, h = 5, w = 7, c = 5;
    const size_t cnt = (size_t)n * h * w * c;
    float a[2 * 5 * 7 * 5], b[2 * 5 * 7 * 5], out[2 * 5 * 7 * 5], ref[2 * 5 * 7 * 5];
    fv_test_fill_uniform(a, cnt, -8.0f, 8.0f);
    fv_test_fill_uniform(b, cnt, -8.0f, 8.0f);
    fv_context *ctx = fv_test_cpu_context(flags);
    fv_tensor *ta = make(ctx, dt, n, h, w, c, a), *tb = make(ctx, dt, n, h, w, c, b), *to = NULL;
    if (alias == 1)
        to = ta;
    else if (alias == 2)
        to = tb;
    else {
        fv_tensor_desc d = {.dtype = dt, .n = n, .h = h, .w = w, .c = c};
        FV_ASSERT_OK(fv_tensor_create(ctx, &d, &to));
        poison(to);
    }
    if (alias) { /* poison only the padding lanes of the aliased tensor */
        fv_tensor_shape s;
        FV_ASSERT_OK(fv_tensor_shape_get(to, &s));
        if (dt == FV_DTYPE_F16)
            for (size_t px = 0; px < (size_t)n * h * w; px++)
                for (int ch = c; ch < s.c_stored; ch++)
                    ((fv_half *)fv_tensor_data(to))[px * s.c_stored + ch] = 0x7e00;
    }
    FV_ASSERT_OK(fv_add(ctx, ta, tb, to, act, alpha));
    fetch(ctx, to, out);
    double al = alpha != 0.0f ? alpha : act == FV_ACT_CLIPPED_RELU ? 6.0 : 0.01;
    for (size_t i = 0; i < cnt; i++)
        ref[i] = (float)act_ref(act, al, (double)a[i] + b[i]);
    int rounded = dt == FV_DTYPE_F16 || (flags & FV_CONTEXT_CPU_ROUND_F16);
    double err = fv_test_rel_l2(out, ref, cnt), tol = rounded ? 1e-3 : 1e-6;
    if (!(err <= tol))
        fail_msg("add %s act %s alpha %g alias %d flags %u: rel err %.3g",
                 dt == FV_DTYPE_F16 ? "F16" : "F32", fv_activation_name(act), alpha, alias, flags,
                 err);
    if (rounded)
        for (size_t i = 0; i < cnt; i++)
            assert_true(fv_round_f16(out[i]) == out[i]);
    fv_tensor_destroy(ta), fv_tensor_destroy(tb);
    if (!alias) fv_tensor_destroy(to);
    fv_context_destroy(ctx);
}

static void test_add(void **state) {
    fv_test_seed(12);
    const fv_dtype dts[2] = {FV_DTYPE_F32, FV_DTYPE_F16};
    for (int t = 0; t < 2; t++)
        for (int a = FV_ACT_IDENTITY; a <= FV_ACT_LEAKY_RELU; a++)
            for (int alias = 0; alias < 3; alias++) {
                run_add(dts[t], (fv_activation)a, 0.0f, alias, 0);
                run_add(dts[t], (fv_activation)a, 1.5f, alias, 0);
            }
    run_add(FV_DTYPE_F32, FV_ACT_RELU, 0.0f, 0, FV_CONTEXT_CPU_ROUND_F16);
    run_add(FV_DTYPE_F32, FV_ACT_TANH, 0.0f, 1, FV_CONTEXT_CPU_ROUND_F16);
}

static void test_bad_params(void **state) {
    fv_context *ctx = fv_test_cpu_context(0), *other = fv_test_cpu_context(0);
    float x[4 * 4 * 3] = {0};
    fv_test_fill_uniform(x, 48, -1.0f, 1.0f);
    fv_tensor *in = make(ctx, FV_DTYPE_F32, 1, 4, 4, 3, x), *out = NULL, *wrong = NULL;
    fv_tensor *in16 = make(ctx, FV_DTYPE_F16, 1, 4, 4, 3, x), *u8 = NULL, *foreign = NULL;
    fv_tensor_desc d = {.dtype = FV_DTYPE_F32, .h = 2, .w = 2, .c = 3};
    FV_ASSERT_OK(fv_tensor_create(ctx, &d, &out));
    d.c = 2;
    FV_ASSERT_OK(fv_tensor_create(ctx, &d, &wrong));
    d.dtype = FV_DTYPE_U8, d.h = 4, d.w = 4, d.c = 3;
    FV_ASSERT_OK(fv_tensor_create(ctx, &d, &u8));
    d.dtype = FV_DTYPE_F32;
    FV_ASSERT_OK(fv_tensor_create(other, &d, &foreign));

    fv_pooling_desc p = {.mode = FV_POOLING_MAX, .r = 2, .s = 2};
    FV_ASSERT_OK(fv_pooling2d(ctx, &p, in, out));
    p.mode = (fv_pooling_mode)7;
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, in, out), FV_ERR_BAD_PARAM, "mode=7");
    p.mode = FV_POOLING_AVG, p.r = 0;
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, in, out), FV_ERR_BAD_PARAM, "window 0x2");
    p.r = 2, p.pad_h = 2;
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, in, out), FV_ERR_BAD_PARAM, "padding 2x0");
    p.pad_h = -1;
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, in, out), FV_ERR_BAD_PARAM, "padding -1x0");
    p.pad_h = 0, p.stride_w = -3;
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, in, out), FV_ERR_BAD_PARAM, "stride 2x-3");
    p.stride_w = 0, p.reserved[1] = 5;
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, in, out), FV_ERR_BAD_PARAM, "reserved[1]");
    p.reserved[1] = 0, p.r = 5;
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, in, out), FV_ERR_BAD_SHAPE, "does not fit");
    p.r = 2;
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, in, wrong), FV_ERR_BAD_SHAPE, "C=2");
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, in16, out), FV_ERR_BAD_SHAPE, "F32");
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, u8, out), FV_ERR_BAD_SHAPE, "U8");
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, in, NULL), FV_ERR_BAD_PARAM, "output");
    FV_ASSERT_STATUS(fv_pooling2d(ctx, NULL, in, out), FV_ERR_BAD_PARAM, "desc");
    FV_ASSERT_STATUS(fv_pooling2d(ctx, &p, foreign, out), FV_ERR_BAD_PARAM, "another context");

    FV_ASSERT_OK(fv_add(ctx, in, in, in, FV_ACT_RELU, 0.0f));
    FV_ASSERT_STATUS(fv_add(ctx, in, out, in, FV_ACT_IDENTITY, 0.0f), FV_ERR_BAD_SHAPE, "H=2");
    FV_ASSERT_STATUS(fv_add(ctx, in, in16, in, FV_ACT_IDENTITY, 0.0f), FV_ERR_BAD_SHAPE, "F16");
    FV_ASSERT_STATUS(fv_add(ctx, in, in, in16, FV_ACT_IDENTITY, 0.0f), FV_ERR_BAD_SHAPE, "F16");
    FV_ASSERT_STATUS(fv_add(ctx, u8, u8, u8, FV_ACT_IDENTITY, 0.0f), FV_ERR_BAD_SHAPE, "U8");
    FV_ASSERT_STATUS(fv_add(ctx, in, in, in, (fv_activation)99, 0.0f), FV_ERR_BAD_PARAM,
                     "activation=99");
    FV_ASSERT_STATUS(fv_add(ctx, in, NULL, in, FV_ACT_IDENTITY, 0.0f), FV_ERR_BAD_PARAM, "b");
    FV_ASSERT_STATUS(fv_add(ctx, NULL, in, in, FV_ACT_IDENTITY, 0.0f), FV_ERR_BAD_PARAM, "a");
    FV_ASSERT_STATUS(fv_add(ctx, in, foreign, in, FV_ACT_IDENTITY, 0.0f), FV_ERR_BAD_PARAM,
                     "another context");
    fv_tensor_destroy(in), fv_tensor_destroy(out), fv_tensor_destroy(wrong);
    fv_tensor_destroy(in16), fv_tensor_destroy(u8), fv_tensor_destroy(foreign);
    fv_context_destroy(ctx), fv_context_destroy(other);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pooling),
        cmocka_unit_test(test_pooling_pad_modes),
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
