/* CUDA add and pooling against the CPU backend on random inputs:
 * ||gpu - cpu|| / ||cpu|| <= 1e-3 for F16, 1e-6 for F32. GPU outputs are
 * poisoned (0xAB bytes, padding included) before each run, and F16 padding
 * lanes must come back zero. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

static fv_context *g_ctx; /* CUDA */
static fv_context *g_cpu; /* the reference */

static fv_tensor *make(fv_context *ctx, fv_dtype dt, int n, int h, int w, int c) {
    fv_tensor *t = NULL;
    fv_tensor_desc d = {.dtype = dt, .n = n, .h = h, .w = w, .c = c};
    FV_ASSERT_OK(fv_tensor_create(ctx, &d, &t));
    return t;
}

static fv_tensor_shape shape_of(const fv_tensor *t) {
    fv_tensor_shape s;
    FV_ASSERT_OK(fv_tensor_shape_get(t, &s));
    return s;
}

static fv_tensor *pinned_like(const fv_tensor *t) {
    fv_tensor_shape s = shape_of(t);
    fv_tensor *p = NULL;
    fv_tensor_desc d = {.dtype = s.dtype,
                        .n = s.n,
                        .h = s.h,
                        .w = s.w,
                        .c = s.c,
                        .pool = fv_context_pool(g_ctx, FV_POOL_PINNED)};
    FV_ASSERT_OK(fv_tensor_create(g_ctx, &d, &p));
    return p;
}

static void poison(fv_tensor *t) {
    fv_tensor *p = pinned_like(t);
    memset(fv_tensor_data(p), 0xab, shape_of(p).bytes);
    FV_ASSERT_OK(fv_tensor_copy(g_ctx, t, p));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    fv_tensor_destroy(p);
}

/* F16 padding lanes of a GPU tensor are zero. */
static void assert_padding_zero(fv_tensor *t, const char *what) {
    fv_tensor_shape s = shape_of(t);
    if (s.c == s.c_stored) return;
    fv_tensor *p = pinned_like(t);
    FV_ASSERT_OK(fv_tensor_copy(g_ctx, p, t));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    const fv_half *raw = fv_tensor_data(p);
    size_t pix = (size_t)s.n * s.h * s.w;
    for (size_t i = 0; i < pix; i++)
        for (int c = s.c; c < s.c_stored; c++)
            if (raw[i * s.c_stored + c] != 0)
                fail_msg("%s: padding lane %d of pixel %zu is 0x%04x", what, c, i,
                         raw[i * s.c_stored + c]);
    fv_tensor_destroy(p);
}

/* Uploads the same float values to a tensor (of its dtype). */
static void upload(fv_context *ctx, fv_tensor *t, const float *v) {
    fv_tensor_shape s = shape_of(t);
    size_t n = s.dense_bytes / s.elem_bytes;
    if (s.dtype == FV_DTYPE_F32) {
        FV_ASSERT_OK(fv_tensor_upload(ctx, t, v, n * 4));
        return;
    }
    fv_half *h = malloc(n * 2);
    assert_non_null(h);
    fv_f32_to_f16_n(v, h, n);
    FV_ASSERT_OK(fv_tensor_upload(ctx, t, h, n * 2));
    free(h);
}

/* Downloads a tensor as floats (malloc'd, dense). */
static float *download(fv_context *ctx, fv_tensor *t) {
    fv_tensor_shape s = shape_of(t);
    size_t n = s.dense_bytes / s.elem_bytes;
    float *v = malloc(n * sizeof(float));
    assert_non_null(v);
    if (s.dtype == FV_DTYPE_F32) {
        FV_ASSERT_OK(fv_tensor_download(ctx, t, v, n * 4));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        return v;
    }
    fv_half *h = malloc(n * 2);
    assert_non_null(h);
    FV_ASSERT_OK(fv_tensor_download(ctx, t, h, n * 2));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    fv_f16_to_f32_n(h, v, n);
    free(h);
    return v;
}

static void compare(fv_tensor *gpu, fv_tensor *cpu, const char *what) {
    fv_tensor_shape s = shape_of(gpu);
    size_t n = s.dense_bytes / s.elem_bytes;
    float *g = download(g_ctx, gpu), *r = download(g_cpu, cpu);
    double err = fv_test_rel_l2(g, r, n);
    double tol = s.dtype == FV_DTYPE_F16 ? 1e-3 : 1e-6;
    if (!(err <= tol)) {
        size_t worst = 0;
        for (size_t i = 0; i < n; i++)
            if (fabsf(g[i] - r[i]) > fabsf(g[worst] - r[worst]) || isnan(g[i])) worst = i;
        fail_msg("%s: rel L2 %.3g > %.0e (worst element %zu: GPU %.9g, CPU %.9g)", what, err, tol,
                 worst, g[worst], r[worst]);
    }
    free(g), free(r);
    assert_padding_zero(gpu, what);
}

static void add_matches_cpu(void **state) {
    const int cs[] = {1, 3, 8, 13};
    const float alphas[] = {0.0f, 0.3f};
    fv_test_seed(21);
    for (int dt = 0; dt < 2; dt++)
        for (int ci = 0; ci < 4; ci++)
            for (int act = FV_ACT_IDENTITY; act <= FV_ACT_LEAKY_RELU; act++)
                for (int ai = 0; ai < 2; ai++)
                    for (int alias = 0; alias < 2; alias++) {
                        fv_dtype t = dt ? FV_DTYPE_F32 : FV_DTYPE_F16;
                        const int n = 2, h = 9, w = 11, c = cs[ci];
                        size_t count = (size_t)n * h * w * c;
                        float *va = malloc(count * 4), *vb = malloc(count * 4);
                        assert_non_null(va);
                        assert_non_null(vb);
                        fv_test_fill_uniform(va, count, -4, 4);
                        fv_test_fill_uniform(vb, count, -4, 4);
                        fv_tensor *ga = make(g_ctx, t, n, h, w, c),
                                  *gb = make(g_ctx, t, n, h, w, c);
                        fv_tensor *go = make(g_ctx, t, n, h, w, c);
                        fv_tensor *ca = make(g_cpu, t, n, h, w, c),
                                  *cb = make(g_cpu, t, n, h, w, c);
                        fv_tensor *co = make(g_cpu, t, n, h, w, c);
                        upload(g_ctx, ga, va), upload(g_ctx, gb, vb);
                        upload(g_cpu, ca, va), upload(g_cpu, cb, vb);
                        poison(go);
                        fv_activation a = (fv_activation)act;
                        FV_ASSERT_OK(fv_add(g_cpu, ca, cb, co, a, alphas[ai]));
                        FV_ASSERT_OK(fv_add(g_ctx, ga, gb, alias ? ga : go, a, alphas[ai]));
                        char what[96];
                        snprintf(what, sizeof what, "add %s C=%d %s alpha %g%s", dt ? "F32" : "F16",
                                 c, fv_activation_name(a), alphas[ai], alias ? " (out = a)" : "");
                        compare(alias ? ga : go, co, what);
                        free(va), free(vb);
                        fv_tensor_destroy(ga), fv_tensor_destroy(gb), fv_tensor_destroy(go);
                        fv_tensor_destroy(ca), fv_tensor_destroy(cb), fv_tensor_destroy(co);
                    }
}

static void pooling_matches_cpu(void **state) {
    const fv_pooling_desc windows[] = {
        {.r = 2, .s = 2},
        {.r = 3, .s = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1},
        {.r = 3, .s = 2, .stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 0},
        {.r = 5, .s = 5, .stride_h = 2, .stride_w = 2, .pad_h = 2, .pad_w = 2},
        {.r = 1, .s = 4, .stride_h = 1, .stride_w = 3, .pad_h = 0, .pad_w = 3},
    };
    const int cs[] = {3, 8, 13};
    fv_test_seed(22);
    for (int dt = 0; dt < 2; dt++)
        for (int ci = 0; ci < 3; ci++)
            for (int wi = 0; wi < 5; wi++)
                for (int mode = FV_POOLING_MAX; mode <= FV_POOLING_AVG_INCLUDE_PAD; mode++) {
                    fv_dtype t = dt ? FV_DTYPE_F32 : FV_DTYPE_F16;
                    fv_pooling_desc pd = windows[wi];
                    pd.mode = (fv_pooling_mode)mode;
                    const int n = 2, h = 13, w = 17, c = cs[ci];
                    int sh = pd.stride_h ? pd.stride_h : pd.r,
                        sw = pd.stride_w ? pd.stride_w : pd.s;
                    int p = fv_conv_output_dim(h, pd.r, sh, pd.pad_h, 1);
                    int q = fv_conv_output_dim(w, pd.s, sw, pd.pad_w, 1);
                    assert_true(p >= 1 && q >= 1);
                    size_t count = (size_t)n * h * w * c;
                    float *v = malloc(count * 4);
                    assert_non_null(v);
                    fv_test_fill_uniform(v, count, -3, 5);
                    fv_tensor *gi = make(g_ctx, t, n, h, w, c), *go = make(g_ctx, t, n, p, q, c);
                    fv_tensor *ci_ = make(g_cpu, t, n, h, w, c), *co = make(g_cpu, t, n, p, q, c);
                    upload(g_ctx, gi, v), upload(g_cpu, ci_, v);
                    poison(go);
                    FV_ASSERT_OK(fv_pooling2d(g_cpu, &pd, ci_, co));
                    FV_ASSERT_OK(fv_pooling2d(g_ctx, &pd, gi, go));
                    char what[96];
                    snprintf(what, sizeof what,
                             "pooling mode %d %dx%d stride %dx%d pad %dx%d %s C=%d", mode, pd.r,
                             pd.s, sh, sw, pd.pad_h, pd.pad_w, dt ? "F32" : "F16", c);
                    compare(go, co, what);
                    free(v);
                    fv_tensor_destroy(gi), fv_tensor_destroy(go);
                    fv_tensor_destroy(ci_), fv_tensor_destroy(co);
                }
}

/* Larger than one launch's grid covers at once (grid-stride loops). */
static void large_add_matches_cpu(void **state) {
    const int n = 1, h = 1100, w = 1000, c = 16; /* 17.6 M elements, 2.2 M 8-lane vectors */
    fv_dtype t = FV_DTYPE_F32;
    size_t count = (size_t)n * h * w * c;
    float *va = malloc(count * 4), *vb = malloc(count * 4);
    assert_non_null(va);
    assert_non_null(vb);
    fv_test_seed(23);
    fv_test_fill_uniform(va, count, -1, 1);
    fv_test_fill_uniform(vb, count, -1, 1);
    fv_tensor *ga = make(g_ctx, t, n, h, w, c), *gb = make(g_ctx, t, n, h, w, c);
    upload(g_ctx, ga, va), upload(g_ctx, gb, vb);
    FV_ASSERT_OK(fv_add(g_ctx, ga, gb, ga, FV_ACT_RELU, 0));
    float *g = download(g_ctx, ga);
    for (size_t i = 0; i < count; i++) {
        float want = va[i] + vb[i];
        want = want > 0 ? want : 0;
        if (g[i] != want) fail_msg("element %zu: GPU %.9g, expected %.9g", i, g[i], want);
    }
    free(va), free(vb), free(g);
    fv_tensor_destroy(ga), fv_tensor_destroy(gb);
}

int main(void) {
    g_ctx = fv_test_gpu_context_or_skip();
    g_cpu = fv_test_cpu_context(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(add_matches_cpu),
        cmocka_unit_test(pooling_matches_cpu),
        cmocka_unit_test(large_add_matches_cpu),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(g_cpu);
    fv_context_destroy(g_ctx);
    return failed;
}
