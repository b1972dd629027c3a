/* fv_net's CPU layer kernels (backend/cpu/cpu_net.c), called directly on
 * host buffers: hand-checked cases and naive references written another
 * way (NCHW-style loops, scatter for conv_transpose, PyTorch's pooling
 * formulas), on F16 views with padding lanes and F32 channel slices of
 * wider buffers. */
#include "fv_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fovea/net.h"
#include "backend/net_ops.h"

#define OPS      fv__net_ops_cpu
#define SENTINEL (-777.5f) /* lanes a kernel must not touch (exact in FP16) */

/* A view over its own buffer of n*h*w*ps elements; the view starts at
 * channel off of each pixel. Every lane starts as SENTINEL. */
typedef struct tv {
    fv__view v;
    void *base;
    int off;
} tv;

static size_t esize(fv_dtype dt) {
    return dt == FV_DTYPE_F16 ? 2 : 4;
}

static tv tv_make(fv_dtype dt, int n, int h, int w, int c, int cw, int ps, int off) {
    tv t = {.v = {.dtype = dt, .n = n, .h = h, .w = w, .c = c, .cw = cw, .ps = ps}, .off = off};
    size_t count = (size_t)n * h * w * ps;
    t.base = malloc(count * esize(dt));
    assert_non_null(t.base);
    for (size_t i = 0; i < count; i++) {
        if (dt == FV_DTYPE_F16)
            ((fv_half *)t.base)[i] = fv_f32_to_f16(SENTINEL);
        else
            ((float *)t.base)[i] = SENTINEL;
    }
    t.v.data = (char *)t.base + (size_t)off * esize(dt);
    return t;
}

/* A whole dense tensor: F16 gets cw = ps = c rounded up to 8. */
static tv tv_dense(fv_dtype dt, int n, int h, int w, int c) {
    int cw = dt == FV_DTYPE_F16 ? (c + 7) / 8 * 8 : c;
    return tv_make(dt, n, h, w, c, cw, cw, 0);
}

static void tv_free(tv *t) {
    free(t->base);
    t->base = NULL;
}

/* Raw lane l (0 .. ps-1) of pixel (b, y, x) of the whole buffer. */
static float raw(const tv *t, int b, int y, int x, int l) {
    size_t i = (((size_t)b * t->v.h + y) * t->v.w + x) * t->v.ps + l;
    if (t->v.dtype == FV_DTYPE_F16) return fv_f16_to_f32(((const fv_half *)t->base)[i]);
    return ((const float *)t->base)[i];
}

static float get(const tv *t, int b, int y, int x, int ch) {
    return raw(t, b, y, x, t->off + ch);
}

static void set(tv *t, int b, int y, int x, int ch, float v) {
    size_t i = (((size_t)b * t->v.h + y) * t->v.w + x) * t->v.ps + t->off + ch;
    if (t->v.dtype == FV_DTYPE_F16)
        ((fv_half *)t->base)[i] = fv_f32_to_f16(v);
    else
        ((float *)t->base)[i] = v;
}

/* Random values in channels [0, c) (exact FP16 values on F16 views). */
static void fill(tv *t, float lo, float hi) {
    for (int b = 0; b < t->v.n; b++)
        for (int y = 0; y < t->v.h; y++)
            for (int x = 0; x < t->v.w; x++)
                for (int ch = 0; ch < t->v.c; ch++)
                    set(t, b, y, x, ch, fv_test_rand_uniform(lo, hi));
}

/* Channels [0, c) as a dense NHWC double array (caller frees). */
static double *dense(const tv *t) {
    const fv__view *v = &t->v;
    double *d = malloc(sizeof(double) * (size_t)v->n * v->h * v->w * v->c);
    assert_non_null(d);
    size_t i = 0;
    for (int b = 0; b < v->n; b++)
        for (int y = 0; y < v->h; y++)
            for (int x = 0; x < v->w; x++)
                for (int ch = 0; ch < v->c; ch++)
                    d[i++] = get(t, b, y, x, ch);
    return d;
}

/* A dense copy of t's channels in another dtype (rounded to FP16 for F16). */
static tv clone(const tv *t, fv_dtype dt) {
    tv d = tv_dense(dt, t->v.n, t->v.h, t->v.w, t->v.c);
    for (int b = 0; b < t->v.n; b++)
        for (int y = 0; y < t->v.h; y++)
            for (int x = 0; x < t->v.w; x++)
                for (int ch = 0; ch < t->v.c; ch++)
                    set(&d, b, y, x, ch, get(t, b, y, x, ch));
    return d;
}

/* The output's lanes: [c, cw) zero, everything outside [off, off + cw)
 * still SENTINEL. */
static void check_lanes(const tv *t, const char *what) {
    const fv__view *v = &t->v;
    for (int b = 0; b < v->n; b++)
        for (int y = 0; y < v->h; y++)
            for (int x = 0; x < v->w; x++)
                for (int l = 0; l < v->ps; l++) {
                    float r = raw(t, b, y, x, l);
                    if (l >= t->off + v->c && l < t->off + v->cw && r != 0.0f)
                        fail_msg("%s: padding lane %d of (%d,%d,%d) is %g, not 0", what, l, b, y, x,
                                 r);
                    if ((l < t->off || l >= t->off + v->cw) && r != SENTINEL)
                        fail_msg("%s: lane %d of (%d,%d,%d) outside the view was written (%g)",
                                 what, l, b, y, x, r);
                }
}

/* Output against a dense NHWC reference: |got - ref| <= tol * (1 + |ref|);
 * also checks the lanes. */
static void expect(const tv *t, const double *ref, double tol, const char *what) {
    const fv__view *v = &t->v;
    size_t i = 0;
    for (int b = 0; b < v->n; b++)
        for (int y = 0; y < v->h; y++)
            for (int x = 0; x < v->w; x++)
                for (int ch = 0; ch < v->c; ch++, i++) {
                    double g = get(t, b, y, x, ch);
                    if (!(fabs(g - ref[i]) <= tol * (1.0 + fabs(ref[i]))))
                        fail_msg("%s: (%d,%d,%d,%d) = %.7g, expected %.7g", what, b, y, x, ch, g,
                                 ref[i]);
                }
    check_lanes(t, what);
}

static double tol_of(const tv *t) {
    return t->v.dtype == FV_DTYPE_F16 ? 1.5e-3 : 2e-6;
}

/* ---- act, affine ------------------------------------------------------- */
static double ref_act(int act, double a, double beta, double x) {
    switch (act) {
    case FV_ACT_RELU:
        return x < 0 ? 0 : x;
    case FV_ACT_CLIPPED_RELU:
        return fmin(fmax(x, 0), a);
    case FV_ACT_SIGMOID:
        return 1 / (1 + exp(-x));
    case FV_ACT_TANH:
        return tanh(x);
    case FV_ACT_LEAKY_RELU:
        return x < 0 ? a * x : x;
    case FV_ACT_HARD_SIGMOID:
        return fmax(0, fmin(1, a * x + beta));
    case FV_ACT_HARD_SWISH:
        return x * fmax(0, fmin(6, x + 3)) / 6;
    case FV_ACT_SILU:
        return x * (1 / (1 + exp(-x)));
    }
    return x;
}

static void test_act(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_test_seed(1);
    const float alpha[] = {0, 0, 6, 0, 0, 0.1f, 0.2f, 0, 0};
    for (int act = FV_ACT_IDENTITY; act <= FV_ACT_SILU; act++) {
        /* F16 with padding lanes, then an F32 slice of a wider buffer */
        for (int k = 0; k < 2; k++) {
            fv_dtype dt = k ? FV_DTYPE_F32 : FV_DTYPE_F16;
            tv in = k ? tv_make(dt, 2, 3, 2, 5, 5, 11, 4) : tv_dense(dt, 2, 3, 2, 5);
            tv out = k ? tv_make(dt, 2, 3, 2, 5, 5, 9, 2) : tv_dense(dt, 2, 3, 2, 5);
            fill(&in, -8, 8);
            double *x = dense(&in);
            FV_ASSERT_OK(OPS.act(ctx, &in.v, &out.v, act, alpha[act], 0.4f));
            for (size_t i = 0; i < 60; i++)
                x[i] = ref_act(act, alpha[act], 0.4, x[i]);
            expect(&out, x, tol_of(&out), fv_activation_name((fv_activation)act));
            free(x), tv_free(&in), tv_free(&out);
        }
    }
    fv_context_destroy(ctx);
}

static void test_affine(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    const float scale[3] = {2, -1, 0.5f}, shift[3] = {1, 0.25f, -3};
    tv in = tv_dense(FV_DTYPE_F32, 1, 1, 2, 3), out = tv_make(FV_DTYPE_F32, 1, 1, 2, 3, 3, 5, 1);
    const float v[6] = {1, 2, 3, -4, 5, 6};
    for (int i = 0; i < 6; i++)
        set(&in, 0, 0, i / 3, i % 3, v[i]);
    /* per channel, in place */
    FV_ASSERT_OK(OPS.affine(ctx, &in.v, &in.v, scale, shift, 3, FV_ACT_IDENTITY, 0, 0));
    const double per_ch[6] = {3, -1.75, -1.5, -7, -4.75, 0};
    expect(&in, per_ch, 0, "affine per channel (in place)");
    /* one value for every channel: 0.5 x - 3, then 2 x + 0.25 with ReLU */
    FV_ASSERT_OK(OPS.affine(ctx, &in.v, &out.v, scale + 2, shift + 2, 1, FV_ACT_IDENTITY, 0, 0));
    const double one[6] = {-1.5, -3.875, -3.75, -6.5, -5.375, -3};
    expect(&out, one, 0, "affine count 1");
    FV_ASSERT_OK(OPS.affine(ctx, &in.v, &out.v, scale, shift + 1, 1, FV_ACT_RELU, 0, 0));
    const double relu[6] = {6.25, 0, 0, 0, 0, 0.25};
    expect(&out, relu, 0, "affine count 1 + relu");
    tv_free(&in), tv_free(&out);
    fv_context_destroy(ctx);
}

/* ---- binary ------------------------------------------------------------- */
static double ref_bin(int op, double a, double b) {
    return op == FV_NET_ADD ? a + b : op == FV_NET_SUB ? a - b : op == FV_NET_MUL ? a * b : a / b;
}

static void test_binary_hand(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    /* a (1, C=2, H=1, W=2) op b (1, 2, 1, 1): b broadcast over W */
    tv a = tv_dense(FV_DTYPE_F32, 1, 1, 2, 2), b = tv_dense(FV_DTYPE_F32, 1, 1, 1, 2);
    tv out = tv_dense(FV_DTYPE_F32, 1, 1, 2, 2);
    set(&a, 0, 0, 0, 0, 1), set(&a, 0, 0, 0, 1, 2), set(&a, 0, 0, 1, 0, 3), set(&a, 0, 0, 1, 1, 4);
    set(&b, 0, 0, 0, 0, 10), set(&b, 0, 0, 0, 1, 4);
    const double want[4][4] = {
        {11, 6, 13, 8}, {-9, -2, -7, 0}, {10, 8, 30, 16}, {0.1, 0.5, 0.3, 1}};
    for (int op = FV_NET_ADD; op <= FV_NET_DIV; op++) {
        FV_ASSERT_OK(OPS.binary(ctx, op, &a.v, &b.v, &out.v, FV_ACT_IDENTITY, 0, 0));
        expect(&out, want[op], 1e-7, "binary hand");
    }
    /* b op a swaps the broadcast side; SUB with ReLU */
    FV_ASSERT_OK(OPS.binary(ctx, FV_NET_SUB, &b.v, &a.v, &out.v, FV_ACT_RELU, 0, 0));
    const double swapped[4] = {9, 2, 7, 0};
    expect(&out, swapped, 0, "binary b - a, relu");
    tv_free(&a), tv_free(&b), tv_free(&out);
    fv_context_destroy(ctx);
}

/* Random a, b of the given shapes (each dim out's or 1) against a naive
 * broadcast in NCHW order. */
static void binary_case(fv_context *ctx, int op, const int as[4], const int bs[4], fv_dtype dt,
                        int act) {
    const int N = 2, H = 3, W = 4, C = 5; /* out (N, H, W, C) */
    tv a = tv_make(dt, as[0], as[1], as[2], as[3], as[3], as[3] + 3, 1);
    tv b = tv_dense(dt, bs[0], bs[1], bs[2], bs[3]);
    tv out = dt == FV_DTYPE_F16 ? tv_dense(dt, N, H, W, C) : tv_make(dt, N, H, W, C, C, 8, 3);
    fill(&a, -2, 2);
    fill(&b, 0.5f, 2);
    double *ref = malloc(sizeof(double) * N * H * W * C);
    assert_non_null(ref);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    double va = get(&a, as[0] > 1 ? n : 0, as[1] > 1 ? y : 0, as[2] > 1 ? x : 0,
                                    as[3] > 1 ? c : 0);
                    double vb = get(&b, bs[0] > 1 ? n : 0, bs[1] > 1 ? y : 0, bs[2] > 1 ? x : 0,
                                    bs[3] > 1 ? c : 0);
                    ref[((n * H + y) * W + x) * C + c] = ref_act(act, 0, 0, ref_bin(op, va, vb));
                }
    FV_ASSERT_OK(OPS.binary(ctx, op, &a.v, &b.v, &out.v, act, 0, 0));
    expect(&out, ref, tol_of(&out), "binary broadcast");
    free(ref), tv_free(&a), tv_free(&b), tv_free(&out);
}

static void test_binary_broadcast(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_test_seed(2);
    const int full[4] = {2, 3, 4, 5}, se[4] = {2, 1, 1, 5}, scalar[4] = {1, 1, 1, 1};
    const int chan1[4] = {2, 3, 4, 1}, row[4] = {1, 1, 4, 5}, col[4] = {2, 3, 1, 1};
    for (int op = FV_NET_ADD; op <= FV_NET_DIV; op++)
        for (int k = 0; k < 2; k++) {
            fv_dtype dt = k ? FV_DTYPE_F16 : FV_DTYPE_F32;
            binary_case(ctx, op, full, full, dt, FV_ACT_IDENTITY);
            binary_case(ctx, op, full, se, dt, FV_ACT_IDENTITY); /* squeeze-and-excitation */
            binary_case(ctx, op, full, scalar, dt, FV_ACT_RELU);
            binary_case(ctx, op, chan1, full, dt, FV_ACT_IDENTITY);
            binary_case(ctx, op, row, col, dt, FV_ACT_IDENTITY); /* both broadcast */
            binary_case(ctx, op, scalar, se, dt, FV_ACT_IDENTITY);
        }
    fv_context_destroy(ctx);
}

static void test_binary_inplace(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_test_seed(3);
    for (int side = 0; side < 2; side++) {
        tv x = tv_dense(FV_DTYPE_F16, 2, 3, 3, 6), se = tv_dense(FV_DTYPE_F16, 2, 1, 1, 6);
        fill(&x, -1, 1);
        fill(&se, 1, 2);
        double *ref = dense(&x);
        for (int i = 0; i < 2 * 3 * 3 * 6; i++) {
            double s = get(&se, i / 54, 0, 0, i % 6);
            ref[i] = side ? s - ref[i] : ref[i] * s;
        }
        if (side)
            FV_ASSERT_OK(OPS.binary(ctx, FV_NET_SUB, &se.v, &x.v, &x.v, FV_ACT_IDENTITY, 0, 0));
        else
            FV_ASSERT_OK(OPS.binary(ctx, FV_NET_MUL, &x.v, &se.v, &x.v, FV_ACT_IDENTITY, 0, 0));
        /* x's padding lanes were SENTINEL: the kernel zeroes them */
        expect(&x, ref, 1.5e-3, side ? "in place (b)" : "in place (a)");
        free(ref), tv_free(&x), tv_free(&se);
    }
    /* out = a + a, all three the same buffer */
    tv x = tv_dense(FV_DTYPE_F32, 1, 2, 2, 3);
    fill(&x, -1, 1);
    double *ref = dense(&x);
    for (int i = 0; i < 12; i++)
        ref[i] *= 2;
    FV_ASSERT_OK(OPS.binary(ctx, FV_NET_ADD, &x.v, &x.v, &x.v, FV_ACT_IDENTITY, 0, 0));
    expect(&x, ref, 0, "x + x in place");
    free(ref), tv_free(&x);
    fv_context_destroy(ctx);
}

/* ---- pooling ------------------------------------------------------------- */
static void test_pool_hand(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    /* 1 x 4 row [1 2 3 4], window 1 x 3, stride 2, pad_left 1, 3 outputs
     * (ceil mode): windows at x = -1, 1, 3; the last covers 3..5, past the
     * padded input's end (4 + 1), so AVG_INCLUDE_PAD divides it by 2 */
    tv in = tv_dense(FV_DTYPE_F32, 1, 1, 4, 1), out = tv_dense(FV_DTYPE_F32, 1, 1, 3, 1);
    for (int x = 0; x < 4; x++)
        set(&in, 0, 0, x, 0, (float)(x + 1));
    fv__pool_params p = {.r = 1,
                         .s = 3,
                         .stride_h = 1,
                         .stride_w = 2,
                         .pad_left = 1,
                         .dilation_h = 1,
                         .dilation_w = 1};
    const double want[3][3] = {{2, 4, 4}, {1.5, 3, 4}, {1, 3, 2}};
    for (int mode = FV_NET_POOL_MAX; mode <= FV_NET_POOL_AVG_INCLUDE_PAD; mode++) {
        p.mode = mode;
        FV_ASSERT_OK(OPS.pool(ctx, &in.v, &out.v, &p));
        expect(&out, want[mode], 1e-7, "pool 1-D hand");
    }
    /* 3 x 3 of 1..9, window 3, stride 2, pad 1: 2 x 2 */
    tv sq = tv_dense(FV_DTYPE_F32, 1, 3, 3, 1), o2 = tv_dense(FV_DTYPE_F32, 1, 2, 2, 1);
    for (int i = 0; i < 9; i++)
        set(&sq, 0, i / 3, i % 3, 0, (float)(i + 1));
    fv__pool_params q = {.r = 3,
                         .s = 3,
                         .stride_h = 2,
                         .stride_w = 2,
                         .pad_top = 1,
                         .pad_left = 1,
                         .dilation_h = 1,
                         .dilation_w = 1};
    const double want2[3][4] = {{5, 6, 8, 9}, {3, 4, 6, 7}, {12 / 9., 16 / 9., 24 / 9., 28 / 9.}};
    for (int mode = FV_NET_POOL_MAX; mode <= FV_NET_POOL_AVG_INCLUDE_PAD; mode++) {
        q.mode = mode;
        FV_ASSERT_OK(OPS.pool(ctx, &sq.v, &o2.v, &q));
        expect(&o2, want2[mode], 1e-6, "pool 3x3 hand");
    }
    tv_free(&in), tv_free(&out), tv_free(&sq), tv_free(&o2);
    fv_context_destroy(ctx);
}

/* PyTorch's output size (floor or ceil mode). */
static int pool_dim(int in, int k, int stride, int pad, int dil, int ceil_mode) {
    int span = in + 2 * pad - dil * (k - 1) - 1;
    int o = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil_mode && (o - 1) * stride >= in + pad) o--;
    return o;
}

/* PyTorch's max_pool2d / avg_pool2d loops (avg without dilation). */
static void ref_pool(const fv__pool_params *p, const tv *in, int oh, int ow, double *ref) {
    const fv__view *v = &in->v;
    size_t i = 0;
    for (int b = 0; b < v->n; b++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++)
                for (int c = 0; c < v->c; c++, i++) {
                    int hs = oy * p->stride_h - p->pad_top, ws = ox * p->stride_w - p->pad_left;
                    if (p->mode == FV_NET_POOL_MAX) {
                        double m = -INFINITY;
                        for (int y = hs; y < hs + (p->r - 1) * p->dilation_h + 1;
                             y += p->dilation_h)
                            for (int x = ws; x < ws + (p->s - 1) * p->dilation_w + 1;
                                 x += p->dilation_w)
                                if (y >= 0 && y < v->h && x >= 0 && x < v->w)
                                    m = fmax(m, get(in, b, y, x, c));
                        ref[i] = m;
                        continue;
                    }
                    int he = hs + p->r < v->h + p->pad_top ? hs + p->r : v->h + p->pad_top;
                    int we = ws + p->s < v->w + p->pad_left ? ws + p->s : v->w + p->pad_left;
                    int size = (he - hs) * (we - ws);
                    hs = hs < 0 ? 0 : hs, ws = ws < 0 ? 0 : ws;
                    he = he > v->h ? v->h : he, we = we > v->w ? v->w : we;
                    double sum = 0;
                    for (int y = hs; y < he; y++)
                        for (int x = ws; x < we; x++)
                            sum += get(in, b, y, x, c);
                    if (p->mode == FV_NET_POOL_AVG) size = (he - hs) * (we - ws);
                    ref[i] = sum / size;
                }
}

static void pool_case(fv_context *ctx, fv__pool_params p, int ceil_mode, fv_dtype dt, int n, int h,
                      int w, int c) {
    int oh = pool_dim(h, p.r, p.stride_h, p.pad_top, p.dilation_h, ceil_mode);
    int ow = pool_dim(w, p.s, p.stride_w, p.pad_left, p.dilation_w, ceil_mode);
    tv in = tv_make(dt, n, h, w, c, c, c + 2, 1);
    tv out =
        dt == FV_DTYPE_F16 ? tv_dense(dt, n, oh, ow, c) : tv_make(dt, n, oh, ow, c, c, c + 5, 2);
    fill(&in, -4, 4);
    double *ref = malloc(sizeof(double) * n * oh * ow * c);
    assert_non_null(ref);
    ref_pool(&p, &in, oh, ow, ref);
    FV_ASSERT_OK(OPS.pool(ctx, &in.v, &out.v, &p));
    expect(&out, ref, tol_of(&out), "pool");
    free(ref), tv_free(&in), tv_free(&out);
}

static void test_pool_random(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_test_seed(4);
    for (int k = 0; k < 2; k++) {
        fv_dtype dt = k ? FV_DTYPE_F16 : FV_DTYPE_F32;
        /* ResNet's stem max pool; a dilated, anisotropic one; more channels
         * than one block of the kernel */
        pool_case(ctx, (fv__pool_params){FV_NET_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1}, 0, dt, 2, 8, 9,
                  3);
        pool_case(ctx, (fv__pool_params){FV_NET_POOL_MAX, 3, 2, 2, 1, 1, 1, 2, 1}, 1, dt, 1, 7, 6,
                  130);
        for (int mode = FV_NET_POOL_AVG; mode <= FV_NET_POOL_AVG_INCLUDE_PAD; mode++) {
            /* ceil mode: the last window passes the padded edge (H = 6) */
            pool_case(ctx, (fv__pool_params){mode, 3, 3, 2, 2, 1, 1, 1, 1}, 1, dt, 2, 6, 7, 5);
            pool_case(ctx, (fv__pool_params){mode, 2, 3, 2, 3, 1, 0, 1, 1}, 1, dt, 1, 5, 8, 130);
            pool_case(ctx, (fv__pool_params){mode, 2, 2, 2, 2, 0, 0, 1, 1}, 0, dt, 1, 4, 4, 9);
        }
    }
    fv_context_destroy(ctx);
}

static void test_global_pool(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_test_seed(5);
    for (int k = 0; k < 2; k++)
        for (int avg = 0; avg < 2; avg++) {
            fv_dtype dt = k ? FV_DTYPE_F16 : FV_DTYPE_F32;
            const int n = 2, h = 3, w = 5, c = 131;
            tv in = tv_make(dt, n, h, w, c, c, c + 1, 0);
            tv out =
                dt == FV_DTYPE_F16 ? tv_dense(dt, n, 1, 1, c) : tv_make(dt, n, 1, 1, c, c, 140, 4);
            fill(&in, -3, 3);
            double ref[2 * 131];
            for (int b = 0; b < n; b++)
                for (int ch = 0; ch < c; ch++) {
                    double s = 0, m = -INFINITY;
                    for (int y = 0; y < h; y++)
                        for (int x = 0; x < w; x++)
                            s += get(&in, b, y, x, ch), m = fmax(m, get(&in, b, y, x, ch));
                    ref[b * c + ch] = avg ? s / (h * w) : m;
                }
            FV_ASSERT_OK(OPS.global_pool(ctx, &in.v, &out.v, avg));
            expect(&out, ref, tol_of(&out), avg ? "global avg" : "global max");
            tv_free(&in), tv_free(&out);
        }
    fv_context_destroy(ctx);
}

/* ---- softmax, copy, pad ----------------------------------------------------- */
static void test_softmax(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    /* pixel 0: 1, 2, 3; pixel 1: 1000, 1001, 1000 (exp overflows unless the
     * max is subtracted) */
    const float v[6] = {1, 2, 3, 1000, 1001, 1000};
    double e = exp(1.0), s0 = 1 + e + e * e, s1 = 2 + e;
    const double want[6] = {1 / s0, e / s0, e * e / s0, 1 / s1, e / s1, 1 / s1};
    for (int k = 0; k < 2; k++) {
        fv_dtype dt = k ? FV_DTYPE_F16 : FV_DTYPE_F32;
        tv in = tv_dense(dt, 1, 1, 2, 3), out = tv_make(dt, 1, 1, 2, 3, 3, 8, 4);
        for (int i = 0; i < 6; i++)
            set(&in, 0, 0, i / 3, i % 3, v[i]);
        FV_ASSERT_OK(OPS.softmax(ctx, &in.v, &out.v));
        expect(&out, want, tol_of(&out), "softmax");
        FV_ASSERT_OK(OPS.softmax(ctx, &in.v, &in.v));
        expect(&in, want, tol_of(&in), "softmax in place");
        tv_free(&in), tv_free(&out);
    }
    fv_context_destroy(ctx);
}

static void test_copy_concat(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_test_seed(6);
    /* concat of a (c 3, dense) and b (c 4, a slice of a wider buffer) into
     * lanes [0, 3) and [3, 7) of a buffer of 9 lanes a pixel */
    tv a = tv_dense(FV_DTYPE_F32, 2, 2, 3, 3), b = tv_make(FV_DTYPE_F32, 2, 2, 3, 4, 4, 10, 5);
    tv out = tv_make(FV_DTYPE_F32, 2, 2, 3, 3, 3, 9, 0);
    fill(&a, -1, 1), fill(&b, -1, 1);
    double *ra = dense(&a);
    FV_ASSERT_OK(OPS.copy(ctx, &a.v, &out.v));
    expect(&out, ra, 0, "copy into lanes [0, 3)"); /* lanes 3..8 untouched */
    fv__view part = out.v;
    part.c = part.cw = 4;
    part.data = (float *)out.base + 3;
    FV_ASSERT_OK(OPS.copy(ctx, &b.v, &part));
    for (int px = 0; px < 12; px++)
        for (int l = 0; l < 9; l++) {
            float got = raw(&out, px / 6, px / 3 % 2, px % 3, l);
            float want = l < 3   ? get(&a, px / 6, px / 3 % 2, px % 3, l)
                         : l < 7 ? get(&b, px / 6, px / 3 % 2, px % 3, l - 3)
                                 : SENTINEL;
            if (got != want)
                fail_msg("concat: pixel %d lane %d = %g, expected %g", px, l, got, want);
        }
    /* F16 with padding lanes from an F16 slice */
    tv h = tv_make(FV_DTYPE_F16, 1, 2, 2, 5, 5, 16, 8), hd = tv_dense(FV_DTYPE_F16, 1, 2, 2, 5);
    fill(&h, -2, 2);
    double *rh = dense(&h);
    FV_ASSERT_OK(OPS.copy(ctx, &h.v, &hd.v));
    expect(&hd, rh, 0, "copy f16");
    free(ra), free(rh);
    tv_free(&a), tv_free(&b), tv_free(&out), tv_free(&h), tv_free(&hd);
    fv_context_destroy(ctx);
}

static void test_pad(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    /* 2 x 2 placed at (1, 2) in 4 x 5, value -1.5; channel 1 is channel 0 + 10 */
    const double grid[4][5] = {{-1.5, -1.5, -1.5, -1.5, -1.5},
                               {-1.5, -1.5, 1, 2, -1.5},
                               {-1.5, -1.5, 3, 4, -1.5},
                               {-1.5, -1.5, -1.5, -1.5, -1.5}};
    double want[40];
    for (int i = 0; i < 20; i++) {
        double g = grid[i / 5][i % 5];
        want[2 * i] = g, want[2 * i + 1] = g == -1.5 ? g : g + 10;
    }
    for (int k = 0; k < 2; k++) {
        fv_dtype dt = k ? FV_DTYPE_F16 : FV_DTYPE_F32;
        tv in = tv_dense(dt, 1, 2, 2, 2);
        tv out = k ? tv_dense(dt, 1, 4, 5, 2) : tv_make(dt, 1, 4, 5, 2, 2, 4, 1);
        for (int i = 0; i < 4; i++) {
            set(&in, 0, i / 2, i % 2, 0, (float)(i + 1));
            set(&in, 0, i / 2, i % 2, 1, (float)(i + 11));
        }
        FV_ASSERT_OK(OPS.pad(ctx, &in.v, &out.v, 1, 2, -1.5f));
        expect(&out, want, 0, "pad");
        tv_free(&in), tv_free(&out);
    }
    fv_context_destroy(ctx);
}

/* ---- resize -------------------------------------------------------------------- */
typedef struct resize_case {
    int coord, nearest, oh, ow;
    int iy[5], ix[5];    /* nearest: expected source indices */
    double sy[5], sx[5]; /* bilinear: expected source coordinates, unclamped */
} resize_case;

/* In 3 x 3; out 4 x 5 (scales 4/3, 5/3), or 1 x 5. */
#define ASYM_Y                                                                                     \
    { 0, .75, 1.5, 2.25 }
#define ASYM_X                                                                                     \
    { 0, .6, 1.2, 1.8, 2.4 }
#define HALF_Y                                                                                     \
    { -.125, .625, 1.375, 2.125 }
#define HALF_X                                                                                     \
    { -.2, .4, 1, 1.6, 2.2 }
#define ALIGN_Y                                                                                    \
    { 0, 2 / 3., 4 / 3., 2 }
#define ALIGN_X                                                                                    \
    { 0, .5, 1, 1.5, 2 }
/* clang-format off */
static const resize_case resize_cases[] = {
    {FV_NET_COORD_ASYMMETRIC, FV_NET_NEAREST_FLOOR,              4, 5, {0, 0, 1, 2}, {0, 0, 1, 1, 2}, ASYM_Y, ASYM_X},
    {FV_NET_COORD_ASYMMETRIC, FV_NET_NEAREST_CEIL,               4, 5, {0, 1, 2, 2}, {0, 1, 2, 2, 2}, ASYM_Y, ASYM_X},
    {FV_NET_COORD_ASYMMETRIC, FV_NET_NEAREST_ROUND_PREFER_FLOOR, 4, 5, {0, 1, 1, 2}, {0, 1, 1, 2, 2}, ASYM_Y, ASYM_X},
    {FV_NET_COORD_ASYMMETRIC, FV_NET_NEAREST_ROUND_PREFER_CEIL,  4, 5, {0, 1, 2, 2}, {0, 1, 1, 2, 2}, ASYM_Y, ASYM_X},
    {FV_NET_COORD_HALF_PIXEL, FV_NET_NEAREST_FLOOR,              4, 5, {0, 0, 1, 2}, {0, 0, 1, 1, 2}, HALF_Y, HALF_X},
    {FV_NET_COORD_HALF_PIXEL, FV_NET_NEAREST_CEIL,               4, 5, {0, 1, 2, 2}, {0, 1, 1, 2, 2}, HALF_Y, HALF_X},
    {FV_NET_COORD_HALF_PIXEL, FV_NET_NEAREST_ROUND_PREFER_FLOOR, 4, 5, {0, 1, 1, 2}, {0, 0, 1, 2, 2}, HALF_Y, HALF_X},
    {FV_NET_COORD_HALF_PIXEL, FV_NET_NEAREST_ROUND_PREFER_CEIL,  4, 5, {0, 1, 1, 2}, {0, 0, 1, 2, 2}, HALF_Y, HALF_X},
    {FV_NET_COORD_ALIGN_CORNERS, FV_NET_NEAREST_FLOOR,              4, 5, {0, 0, 1, 2}, {0, 0, 1, 1, 2}, ALIGN_Y, ALIGN_X},
    {FV_NET_COORD_ALIGN_CORNERS, FV_NET_NEAREST_CEIL,               4, 5, {0, 1, 2, 2}, {0, 1, 1, 2, 2}, ALIGN_Y, ALIGN_X},
    {FV_NET_COORD_ALIGN_CORNERS, FV_NET_NEAREST_ROUND_PREFER_FLOOR, 4, 5, {0, 1, 1, 2}, {0, 0, 1, 1, 2}, ALIGN_Y, ALIGN_X},
    {FV_NET_COORD_ALIGN_CORNERS, FV_NET_NEAREST_ROUND_PREFER_CEIL,  4, 5, {0, 1, 1, 2}, {0, 1, 1, 2, 2}, ALIGN_Y, ALIGN_X},
    /* out height 1: half pixel takes row 1 (1.5 * 1 - .5), pytorch_half_pixel row 0 */
    {FV_NET_COORD_HALF_PIXEL,         FV_NET_NEAREST_FLOOR, 1, 5, {1}, {0, 0, 1, 1, 2}, {1}, HALF_X},
    {FV_NET_COORD_PYTORCH_HALF_PIXEL, FV_NET_NEAREST_FLOOR, 1, 5, {0}, {0, 0, 1, 1, 2}, {0}, HALF_X},
    {FV_NET_COORD_PYTORCH_HALF_PIXEL, FV_NET_NEAREST_ROUND_PREFER_FLOOR, 4, 5, {0, 1, 1, 2}, {0, 0, 1, 2, 2}, HALF_Y, HALF_X},
};
/* clang-format on */

static void lin(double s, int n, int *i0, int *i1, double *l) {
    s = s < 0 ? 0 : (s > n - 1 ? n - 1 : s);
    *i0 = (int)floor(s), *i1 = *i0 + 1 > n - 1 ? n - 1 : *i0 + 1, *l = s - *i0;
}

static void test_resize(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_test_seed(7);
    const int n = 2, c = 3;
    tv in = tv_make(FV_DTYPE_F32, n, 3, 3, c, c, 7, 2);
    fill(&in, -5, 5);
    tv in16 = clone(&in, FV_DTYPE_F16);
    for (size_t k = 0; k < sizeof resize_cases / sizeof resize_cases[0]; k++)
        for (int mode = FV_NET_RESIZE_NEAREST; mode <= FV_NET_RESIZE_BILINEAR; mode++)
            for (int f16 = 0; f16 < 2; f16++) {
                const resize_case *rc = &resize_cases[k];
                const tv *src = f16 ? &in16 : &in;
                tv out = f16 ? tv_dense(FV_DTYPE_F16, n, rc->oh, rc->ow, c)
                             : tv_make(FV_DTYPE_F32, n, rc->oh, rc->ow, c, c, 6, 1);
                double ref[2 * 4 * 5 * 3];
                size_t i = 0;
                for (int b = 0; b < n; b++)
                    for (int y = 0; y < rc->oh; y++)
                        for (int x = 0; x < rc->ow; x++)
                            for (int ch = 0; ch < c; ch++, i++) {
                                if (mode == FV_NET_RESIZE_NEAREST) {
                                    ref[i] = get(src, b, rc->iy[y], rc->ix[x], ch);
                                    continue;
                                }
                                int y0, y1, x0, x1;
                                double ly, lx;
                                lin(rc->sy[y], 3, &y0, &y1, &ly), lin(rc->sx[x], 3, &x0, &x1, &lx);
                                ref[i] = (1 - ly) * (1 - lx) * get(src, b, y0, x0, ch) +
                                         (1 - ly) * lx * get(src, b, y0, x1, ch) +
                                         ly * (1 - lx) * get(src, b, y1, x0, ch) +
                                         ly * lx * get(src, b, y1, x1, ch);
                            }
                fv__resize_params p = {.mode = mode,
                                       .coord = rc->coord,
                                       .nearest = rc->nearest,
                                       .scale_h = (float)rc->oh / 3.0f,
                                       .scale_w = (float)rc->ow / 3.0f};
                FV_ASSERT_OK(OPS.resize(ctx, &src->v, &out.v, &p));
                char what[64];
                snprintf(what, sizeof what, "resize case %zu %s %s", k, mode ? "linear" : "nearest",
                         f16 ? "f16" : "f32");
                expect(&out, ref, tol_of(&out), what);
                tv_free(&out);
            }
    tv_free(&in), tv_free(&in16);
    fv_context_destroy(ctx);
}

/* ---- reshape ---------------------------------------------------------------------- */
/* Input (b, c, y, x) holds its own NCHW flat index; out (b, y, x, ch) must
 * hold ((b * oc + ch) * oh + y) * ow + x. */
static void reshape_case(fv_context *ctx, fv_dtype dt, const int is[4], const int os[4]) {
    tv in = tv_make(dt, is[0], is[2], is[3], is[1], is[1], is[1] + 3, 3);
    tv out = dt == FV_DTYPE_F16 ? tv_dense(dt, os[0], os[2], os[3], os[1])
                                : tv_make(dt, os[0], os[2], os[3], os[1], os[1], os[1] + 1, 1);
    int flat = 0;
    for (int b = 0; b < is[0]; b++)
        for (int c = 0; c < is[1]; c++)
            for (int y = 0; y < is[2]; y++)
                for (int x = 0; x < is[3]; x++)
                    set(&in, b, y, x, c, (float)flat++);
    double *ref = malloc(sizeof(double) * flat);
    assert_non_null(ref);
    size_t i = 0;
    for (int b = 0; b < os[0]; b++)
        for (int y = 0; y < os[2]; y++)
            for (int x = 0; x < os[3]; x++)
                for (int ch = 0; ch < os[1]; ch++)
                    ref[i++] = ((b * os[1] + ch) * os[2] + y) * os[3] + x;
    FV_ASSERT_OK(OPS.reshape(ctx, &in.v, &out.v));
    expect(&out, ref, 0, "reshape");
    free(ref), tv_free(&in), tv_free(&out);
}

static void test_reshape(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    for (int k = 0; k < 2; k++) {
        fv_dtype dt = k ? FV_DTYPE_F16 : FV_DTYPE_F32;
        /* flatten (2, 3, 2, 4) -> (2, 24, 1, 1) */
        reshape_case(ctx, dt, (const int[]){2, 3, 2, 4}, (const int[]){2, 24, 1, 1});
        /* across the batch: (2, 3, 2, 4) -> (3, 2, 4, 2) and back-ish */
        reshape_case(ctx, dt, (const int[]){2, 3, 2, 4}, (const int[]){3, 2, 4, 2});
        reshape_case(ctx, dt, (const int[]){4, 6, 1, 1}, (const int[]){2, 3, 2, 2});
    }
    /* hand: (1, 2, 2, 2) flattened: out channel 1 is input (c 0, y 0, x 1) */
    tv in = tv_dense(FV_DTYPE_F32, 1, 2, 2, 2), out = tv_dense(FV_DTYPE_F32, 1, 1, 1, 8);
    set(&in, 0, 0, 1, 0, 42.0f);
    FV_ASSERT_OK(OPS.reshape(ctx, &in.v, &out.v));
    assert_true(get(&out, 0, 0, 0, 1) == 42.0f);
    tv_free(&in), tv_free(&out);
    fv_context_destroy(ctx);
}

/* ---- conv_transpose --------------------------------------------------------------- */
static void test_convt_hand(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    /* 2 x 2 input, 2 x 2 kernel, stride 2: each input stamps the kernel */
    tv in = tv_dense(FV_DTYPE_F32, 1, 2, 2, 1), out = tv_dense(FV_DTYPE_F32, 1, 4, 4, 1);
    for (int i = 0; i < 4; i++)
        set(&in, 0, i / 2, i % 2, 0, (float)(i + 1));
    const float wt[4] = {1, 10, 100, 1000}, bias = 0.5f;
    fv__convt_params p = {.r = 2,
                          .s = 2,
                          .stride_h = 2,
                          .stride_w = 2,
                          .dilation_h = 1,
                          .dilation_w = 1,
                          .groups = 1};
    FV_ASSERT_OK(OPS.conv_transpose(ctx, &in.v, &out.v, &p, wt, &bias));
    double want[16];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            want[y * 4 + x] = (1 + (y / 2) * 2 + x / 2) * wt[(y % 2) * 2 + x % 2] + 0.5;
    expect(&out, want, 0, "conv_transpose stamp");
    /* pad 1 crops one cell each side: the centre 2 x 2 */
    tv crop = tv_dense(FV_DTYPE_F32, 1, 2, 2, 1);
    p.pad_top = p.pad_left = 1;
    FV_ASSERT_OK(OPS.conv_transpose(ctx, &in.v, &crop.v, &p, wt, NULL));
    const double centre[4] = {1000, 200, 30, 4};
    expect(&crop, centre, 0, "conv_transpose pad");
    tv_free(&in), tv_free(&out), tv_free(&crop);
    fv_context_destroy(ctx);
}

/* Scatter reference: every input value times every tap, added where it lands. */
static void convt_case(fv_context *ctx, fv_dtype dt, int n, int h, int w, int C, int K,
                       fv__convt_params p, int out_pad, int with_bias) {
    int oh = (h - 1) * p.stride_h - 2 * p.pad_top + p.dilation_h * (p.r - 1) + out_pad + 1;
    int ow = (w - 1) * p.stride_w - 2 * p.pad_left + p.dilation_w * (p.s - 1) + out_pad + 1;
    int cg = C / p.groups, kg = K / p.groups;
    tv in = tv_make(dt, n, h, w, C, C, C + 4, 2);
    tv out =
        dt == FV_DTYPE_F16 ? tv_dense(dt, n, oh, ow, K) : tv_make(dt, n, oh, ow, K, K, K + 3, 3);
    fill(&in, -1, 1);
    size_t nw = (size_t)C * kg * p.r * p.s;
    float *wt = malloc(nw * sizeof(float)), *bias = malloc(K * sizeof(float));
    double *ref = calloc((size_t)n * oh * ow * K, sizeof(double));
    assert_true(wt && bias && ref);
    fv_test_fill_uniform(wt, nw, -1, 1);
    fv_test_fill_uniform(bias, K, -1, 1);
    for (int b = 0; b < n; b++)
        for (int iy = 0; iy < h; iy++)
            for (int ix = 0; ix < w; ix++)
                for (int c = 0; c < C; c++)
                    for (int kk = 0; kk < kg; kk++)
                        for (int r = 0; r < p.r; r++)
                            for (int s = 0; s < p.s; s++) {
                                int oy = iy * p.stride_h - p.pad_top + r * p.dilation_h;
                                int ox = ix * p.stride_w - p.pad_left + s * p.dilation_w;
                                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                                int k = (c / cg) * kg + kk;
                                ref[((b * oh + oy) * ow + ox) * K + k] +=
                                    get(&in, b, iy, ix, c) *
                                    wt[((c * kg + kk) * p.r + r) * p.s + s];
                            }
    for (size_t i = 0; i < (size_t)n * oh * ow * K; i++)
        ref[i] = ref_act(p.act, p.alpha, p.beta, ref[i] + (with_bias ? bias[i % K] : 0));
    FV_ASSERT_OK(OPS.conv_transpose(ctx, &in.v, &out.v, &p, wt, with_bias ? bias : NULL));
    expect(&out, ref, dt == FV_DTYPE_F16 ? 3e-3 : 1e-5, "conv_transpose");
    free(wt), free(bias), free(ref), tv_free(&in), tv_free(&out);
}

static void test_convt_random(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_test_seed(8);
    static const struct {
        int n, h, w, c, k, out_pad, bias;
        fv__convt_params p;
    } cases[] = {
        /* stride 2, groups 2, pad 1, output padding 1, leaky ReLU */
        {2, 3, 4, 4, 6, 1, 1, {3, 3, 2, 2, 1, 1, 1, 1, 2, FV_ACT_LEAKY_RELU, 0.1f, 0}},
        /* anisotropic stride, dilation 2, pad only on the left, no bias */
        {1, 4, 3, 3, 5, 0, 0, {2, 3, 3, 2, 2, 2, 0, 2, 1, FV_ACT_IDENTITY, 0, 0}},
        /* more output channels per group than one block of the kernel */
        {1, 2, 2, 4, 260, 1, 1, {2, 2, 2, 2, 1, 1, 0, 0, 2, FV_ACT_RELU, 0, 0}},
    };
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            convt_case(ctx, k ? FV_DTYPE_F16 : FV_DTYPE_F32, cases[i].n, cases[i].h, cases[i].w,
                       cases[i].c, cases[i].k, cases[i].p, cases[i].out_pad, cases[i].bias);
    fv_context_destroy(ctx);
}

/* ---- FV_CONTEXT_CPU_ROUND_F16 ---------------------------------------------------- */
typedef void (*run_fn)(fv_context *ctx, const tv *in, const tv *in2, tv *out);

static void run_act(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    (void)in2;
    FV_ASSERT_OK(OPS.act(ctx, &in->v, &out->v, FV_ACT_SILU, 0, 0));
}
static void run_binary(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    FV_ASSERT_OK(OPS.binary(ctx, FV_NET_DIV, &in->v, &in2->v, &out->v, FV_ACT_IDENTITY, 0, 0));
}
static void run_affine(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    (void)in2;
    const float s = 1.2345678f, t = 0.1f;
    FV_ASSERT_OK(OPS.affine(ctx, &in->v, &out->v, &s, &t, 1, FV_ACT_IDENTITY, 0, 0));
}
static void run_pool(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    (void)in2;
    fv__pool_params p = {FV_NET_POOL_AVG, 3, 3, 1, 1, 1, 1, 1, 1};
    FV_ASSERT_OK(OPS.pool(ctx, &in->v, &out->v, &p));
}
static void run_softmax(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    (void)in2;
    FV_ASSERT_OK(OPS.softmax(ctx, &in->v, &out->v));
}
static void run_copy(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    (void)in2;
    FV_ASSERT_OK(OPS.copy(ctx, &in->v, &out->v));
}
static void run_resize(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    (void)in2;
    fv__resize_params p = {.mode = FV_NET_RESIZE_BILINEAR,
                           .coord = FV_NET_COORD_HALF_PIXEL,
                           .scale_h = 1,
                           .scale_w = 1};
    FV_ASSERT_OK(OPS.resize(ctx, &in->v, &out->v, &p));
}
static void run_pad(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    (void)in2;
    fv__view small = in->v;
    small.h = small.w = 2;
    FV_ASSERT_OK(OPS.pad(ctx, &small, &out->v, 1, 1, 0.3f));
}
static void run_reshape(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    (void)in2;
    FV_ASSERT_OK(OPS.reshape(ctx, &in->v, &out->v));
}
static void run_convt(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    (void)in2;
    float wt[4 * 4];
    for (int i = 0; i < 16; i++)
        wt[i] = 0.1f * (float)i + 0.01f;
    fv__convt_params p = {.r = 1,
                          .s = 1,
                          .stride_h = 1,
                          .stride_w = 1,
                          .dilation_h = 1,
                          .dilation_w = 1,
                          .groups = 1};
    FV_ASSERT_OK(OPS.conv_transpose(ctx, &in->v, &out->v, &p, wt, NULL));
}
static void run_global(fv_context *ctx, const tv *in, const tv *in2, tv *out) {
    (void)in2;
    fv__view o = out->v;
    o.h = o.w = 1;
    FV_ASSERT_OK(OPS.global_pool(ctx, &in->v, &o, 1));
}

/* With the flag, every F32 output is the FP16 rounding of the output
 * without it, and the inputs are such that some value differs. */
static void test_round_f16(void **state) {
    (void)state;
    fv_context *plain = fv_test_cpu_context(0);
    fv_context *round = fv_test_cpu_context(FV_CONTEXT_CPU_ROUND_F16);
    const run_fn runs[] = {run_act,    run_binary, run_affine,  run_pool,  run_softmax, run_copy,
                           run_resize, run_pad,    run_reshape, run_convt, run_global};
    fv_test_seed(9);
    tv in = tv_dense(FV_DTYPE_F32, 1, 3, 3, 4), in2 = tv_dense(FV_DTYPE_F32, 1, 3, 3, 4);
    fill(&in, -3, 3), fill(&in2, 1, 3);
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        tv a = tv_dense(FV_DTYPE_F32, 1, 3, 3, 4), b = tv_dense(FV_DTYPE_F32, 1, 3, 3, 4);
        runs[k](plain, &in, &in2, &a);
        runs[k](round, &in, &in2, &b);
        int differ = 0;
        int pixels = runs[k] == run_global ? 1 : 9;
        for (int i = 0; i < pixels * 4; i++) {
            float x = get(&a, 0, i / 12, i / 4 % 3, i % 4),
                  y = get(&b, 0, i / 12, i / 4 % 3, i % 4);
            if (y != fv_round_f16(x))
                fail_msg("op %zu value %d: %.9g, expected %.9g", k, i, y, fv_round_f16(x));
            differ |= x != y;
        }
        if (!differ) fail_msg("op %zu: no value changed by rounding", k);
        tv_free(&a), tv_free(&b);
    }
    tv_free(&in), tv_free(&in2);
    fv_context_destroy(plain), fv_context_destroy(round);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_act),
        cmocka_unit_test(test_affine),
        cmocka_unit_test(test_binary_hand),
        cmocka_unit_test(test_binary_broadcast),
        cmocka_unit_test(test_binary_inplace),
        cmocka_unit_test(test_pool_hand),
        cmocka_unit_test(test_pool_random),
        cmocka_unit_test(test_global_pool),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_copy_concat),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_convt_hand),
        cmocka_unit_test(test_convt_random),
        cmocka_unit_test(test_round_f16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
