/* conv2d on the CPU backend, through the public API, against a naive direct
 * convolution in double precision; FP16 conversions; bad descriptors and
 * tensors; no allocation in forward. */
#include "fv_test.h"
#include "core/internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cfg {
    int n, h, w, c, k, r, s, sh, sw, ph, pw, dh, dw, groups;
    fv_activation act;
    float alpha;
    int bias;
    fv_dtype dt;
    uint32_t flags;
} cfg;

static void describe(const cfg *g, char *buf, size_t n) {
    snprintf(buf, n,
             "N%d H%d W%d C%d K%d %dx%d stride %dx%d pad %dx%d dil %dx%d groups %d act %s(%g) "
             "bias %d %s flags %u",
             g->n, g->h, g->w, g->c, g->k, g->r, g->s, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw,
             g->groups, fv_activation_name(g->act), g->alpha, g->bias,
             g->dt == FV_DTYPE_F16 ? "F16" : "F32", g->flags);
}

static double act_ref(fv_activation a, double alpha, double x) {
    switch (a) {
    case FV_ACT_IDENTITY:
        return x;
    case FV_ACT_RELU:
        return x > 0 ? x : 0;
    case FV_ACT_CLIPPED_RELU:
        return x < 0 ? 0 : (x > (alpha ? alpha : 6) ? (alpha ? alpha : 6) : x);
    case FV_ACT_SIGMOID:
        return 1 / (1 + exp(-x));
    case FV_ACT_TANH:
        return tanh(x);
    case FV_ACT_LEAKY_RELU:
        return x >= 0 ? x : (alpha ? alpha : 0.01) * x;
    case FV_ACT_HARD_SIGMOID: /* net layers only: conv2d and fv_add refuse these */
    case FV_ACT_HARD_SWISH:
    case FV_ACT_SILU:
        return NAN;
    }
    return NAN;
}

static int dim(int in, int k, int st, int pad, int dil) {
    int avail = in + 2 * pad - dil * (k - 1) - 1;
    return avail < 0 ? 0 : avail / st + 1;
}

/* The direct 7-loop convolution (NHWC input, KCRS weights), in double. */
static void ref_conv(const cfg *g, const float *in, const float *w, const float *b, float *out) {
    int P = dim(g->h, g->r, g->sh, g->ph, g->dh), Q = dim(g->w, g->s, g->sw, g->pw, g->dw);
    int cg = g->c / g->groups, kg = g->k / g->groups;
    for (int n = 0; n < g->n; n++)
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++)
                for (int k = 0; k < g->k; k++) {
                    double acc = b ? b[k] : 0.0;
                    for (int c = 0; c < cg; c++)
                        for (int r = 0; r < g->r; r++)
                            for (int s = 0; s < g->s; s++) {
                                int ih = p * g->sh - g->ph + r * g->dh;
                                int iw = q * g->sw - g->pw + s * g->dw;
                                if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w) continue;
                                double x = in[(((size_t)n * g->h + ih) * g->w + iw) * g->c +
                                              (k / kg) * cg + c];
                                acc += x * w[(((size_t)k * cg + c) * g->r + r) * g->s + s];
                            }
                    out[(((size_t)n * P + p) * Q + q) * g->k + k] =
                        (float)act_ref(g->act, g->alpha, acc);
                }
}

static void round_all(float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] = fv_round_f16(x[i]);
}

/* Runs one configuration and checks it against the reference. */
static void run_cfg(const cfg *g) {
    char what[256];
    describe(g, what, sizeof what);
    int P = dim(g->h, g->r, g->sh, g->ph, g->dh), Q = dim(g->w, g->s, g->sw, g->pw, g->dw);
    if (P < 1 || Q < 1) fail_msg("bad test config: %s", what);
    size_t nin = (size_t)g->n * g->h * g->w * g->c, nout = (size_t)g->n * P * Q * g->k;
    size_t nw = (size_t)g->k * (g->c / g->groups) * g->r * g->s;
    float *in = malloc(nin * 4), *w = malloc(nw * 4), *b = malloc((size_t)g->k * 4);
    float *out = malloc(nout * 4), *ref = malloc(nout * 4);
    fv_half *hbuf = malloc((nin > nout ? nin : nout) * 2);
    assert_non_null(in && w && b && out && ref && hbuf);
    fv_test_fill_uniform(in, nin, -1.0f, 1.0f);
    fv_test_fill_uniform(w, nw, -1.0f, 1.0f);
    fv_test_fill_uniform(b, (size_t)g->k, -1.0f, 1.0f);

    fv_context *ctx = fv_test_cpu_context(g->flags);
    fv_conv2d_desc d = {.n = g->n,
                        .h = g->h,
                        .w = g->w,
                        .c = g->c,
                        .k = g->k,
                        .r = g->r,
                        .s = g->s,
                        .stride_h = g->sh,
                        .stride_w = g->sw,
                        .pad_h = g->ph,
                        .pad_w = g->pw,
                        .dilation_h = g->dh,
                        .dilation_w = g->dw,
                        .groups = g->groups,
                        .activation = g->act,
                        .activation_alpha = g->alpha,
                        .dtype = g->dt,
                        .weights = w,
                        .bias = g->bias ? b : NULL};
    fv_conv2d *op = NULL;
    FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
    int on, oh, ow, oc;
    fv_conv2d_output_shape(op, &on, &oh, &ow, &oc);
    if (on != g->n || oh != P || ow != Q || oc != g->k) fail_msg("output shape: %s", what);
    fv_tensor *ti = NULL, *to = NULL;
    fv_tensor_desc tdi = {.dtype = g->dt, .n = g->n, .h = g->h, .w = g->w, .c = g->c};
    fv_tensor_desc tdo = {.dtype = g->dt, .n = g->n, .h = P, .w = Q, .c = g->k};
    FV_ASSERT_OK(fv_tensor_create(ctx, &tdi, &ti));
    FV_ASSERT_OK(fv_tensor_create(ctx, &tdo, &to));

    int f16 = g->dt == FV_DTYPE_F16;
    /* poison the output, padding lanes included */
    for (size_t i = 0; i < nout; i++)
        out[i] = NAN;
    if (f16) {
        fv_tensor_shape sh;
        FV_ASSERT_OK(fv_tensor_shape_get(to, &sh));
        fv_half *raw = fv_tensor_data(to);
        for (size_t i = 0; i < sh.bytes / 2; i++)
            raw[i] = 0x7e00;
        round_all(in, nin); /* the reference sees what the F16 tensor holds */
        fv_f32_to_f16_n(in, hbuf, nin);
        FV_ASSERT_OK(fv_tensor_upload(ctx, ti, hbuf, nin * 2));
    } else {
        FV_ASSERT_OK(fv_tensor_upload(ctx, to, out, nout * 4));
        FV_ASSERT_OK(fv_tensor_upload(ctx, ti, in, nin * 4));
    }
    FV_ASSERT_OK(fv_conv2d_forward(op, ti, to));
    if (f16) {
        FV_ASSERT_OK(fv_tensor_download(ctx, to, hbuf, nout * 2));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        fv_f16_to_f32_n(hbuf, out, nout);
        fv_tensor_shape sh;
        FV_ASSERT_OK(fv_tensor_shape_get(to, &sh));
        const fv_half *raw = fv_tensor_data(to);
        for (size_t px = 0; px < (size_t)g->n * P * Q; px++)
            for (int c = g->k; c < sh.c_stored; c++)
                if (raw[px * sh.c_stored + c] != 0)
                    fail_msg("padding lane %d of pixel %zu is 0x%04x: %s", c, px,
                             raw[px * sh.c_stored + c], what);
    } else {
        FV_ASSERT_OK(fv_tensor_download(ctx, to, out, nout * 4));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
    }
    int rounded = f16 || (g->flags & FV_CONTEXT_CPU_ROUND_F16);
    if (rounded) { /* the op stores FP16 weights */
        round_all(w, nw);
        round_all(b, (size_t)g->k);
    }
    ref_conv(g, in, w, g->bias ? b : NULL, ref);
    double err = fv_test_rel_l2(out, ref, nout), tol = rounded ? 2e-3 : 1e-5;
    if (!(err <= tol)) fail_msg("rel err %.3g > %.1g: %s", err, tol, what);
    if (rounded)
        for (size_t i = 0; i < nout; i++)
            if (fv_round_f16(out[i]) != out[i])
                fail_msg("output %zu = %.9g is not an FP16 value: %s", i, out[i], what);
    fv_tensor_destroy(ti);
    fv_tensor_destroy(to);
    fv_conv2d_destroy(op);
    fv_context_destroy(ctx);
    free(in), free(w), free(b), free(out), free(ref), free(hbuf);
}

static cfg base(int c, int k, int rs) {
    cfg g = {.n = 1,
             .h = 9,
             .w = 11,
             .c = c,
             .k = k,
             .r = rs,
             .s = rs,
             .sh = 1,
             .sw = 1,
             .ph = rs / 2,
             .pw = rs / 2,
             .dh = 1,
             .dw = 1,
             .groups = 1,
             .bias = 1,
             .dt = FV_DTYPE_F32};
    return g;
}

static void test_conv_table(void **state) {
    fv_test_seed(1);
    const fv_dtype dts[2] = {FV_DTYPE_F32, FV_DTYPE_F16};
    for (int t = 0; t < 2; t++) {
        cfg g;
        /* the image-filter (stencil) cases: C = K = 1, F32 */
        g = base(1, 1, 3), g.dt = dts[t], g.h = 37, g.w = 53, run_cfg(&g);
        g = base(1, 1, 3), g.dt = dts[t], g.ph = g.pw = 0, run_cfg(&g);
        g = base(1, 1, 5), g.dt = dts[t], g.dh = g.dw = 2, g.ph = 3, g.pw = 1, run_cfg(&g);
        g = base(1, 1, 3), g.dt = dts[t], g.sh = 2, g.ph = 3, g.pw = 3, g.n = 2, run_cfg(&g);
        g = base(1, 1, 1), g.dt = dts[t], g.ph = 2, g.pw = 3, run_cfg(&g);
        g = base(1, 1, 7), g.dt = dts[t], g.s = 1, g.pw = 0, g.h = 7, run_cfg(&g);
        g = base(1, 1, 3), g.dt = dts[t], g.w = 2, g.ph = 1, g.pw = 1, run_cfg(&g);
        /* 3 -> K small, the colour filter case */
        g = base(3, 3, 3), g.dt = dts[t], g.h = 31, g.w = 45, run_cfg(&g);
        g = base(3, 4, 3), g.dt = dts[t], g.sh = g.sw = 2, g.bias = 0, run_cfg(&g);
        g = base(5, 9, 5), g.dt = dts[t], g.sh = 3, g.sw = 3, g.ph = 2, g.pw = 0, run_cfg(&g);
        g = base(12, 4, 7), g.dt = dts[t], g.s = 1, g.pw = 0, g.n = 2, run_cfg(&g);
        g = base(12, 9, 3), g.dt = dts[t], g.dh = 2, g.dw = 2, g.ph = 2, g.pw = 2, run_cfg(&g);
        /* groups and depthwise */
        g = base(12, 4, 3), g.dt = dts[t], g.groups = 2, run_cfg(&g);
        g = base(12, 12, 3), g.dt = dts[t], g.groups = 12, run_cfg(&g);
        g = base(3, 9, 3), g.dt = dts[t], g.groups = 3, g.sw = 2, run_cfg(&g); /* multiplier 3 */
        g = base(5, 5, 5), g.dt = dts[t], g.groups = 5, g.dh = 2, g.ph = 3, run_cfg(&g);
        g = base(1, 4, 3), g.dt = dts[t], g.bias = 0, run_cfg(&g);
        g = base(4, 1, 3), g.dt = dts[t], run_cfg(&g);
        /* every activation, default and explicit alpha */
        for (int a = FV_ACT_IDENTITY; a <= FV_ACT_LEAKY_RELU; a++) {
            g = base(3, 4, 3), g.dt = dts[t], g.act = (fv_activation)a, run_cfg(&g);
            g.alpha = 0.25f, run_cfg(&g);
            g = base(1, 1, 3), g.dt = dts[t], g.act = (fv_activation)a, g.alpha = 0.3f;
            run_cfg(&g);
        }
    }
}

/* Random configurations over the whole parameter space. */
static void test_conv_random(void **state) {
    fv_test_seed(2);
    static const int ks[4][2] = {{1, 1}, {3, 3}, {5, 5}, {7, 1}};
    static const int cs[4] = {1, 3, 5, 12}, kks[3] = {1, 4, 9};
    int done = 0;
    while (done < 160) {
        cfg g = {0};
        int kk = (int)(fv_test_rand_u64() % 4);
        g.r = ks[kk][0], g.s = ks[kk][1];
        if (fv_test_rand_u64() % 2) g.r = ks[kk][1], g.s = ks[kk][0];
        g.c = cs[fv_test_rand_u64() % 4];
        g.k = kks[fv_test_rand_u64() % 3];
        int gm = (int)(fv_test_rand_u64() % 3);
        g.groups = 1;
        if (gm == 1 && g.c % 2 == 0) g.groups = 2, g.k = 2 * (1 + (int)(fv_test_rand_u64() % 3));
        if (gm == 2) g.groups = g.c, g.k = g.c * (1 + (int)(fv_test_rand_u64() % 2));
        g.n = 1 + (int)(fv_test_rand_u64() % 2);
        g.h = 1 + (int)(fv_test_rand_u64() % 14), g.w = 1 + (int)(fv_test_rand_u64() % 19);
        g.sh = 1 + (int)(fv_test_rand_u64() % 3), g.sw = 1 + (int)(fv_test_rand_u64() % 3);
        g.ph = (int)(fv_test_rand_u64() % 4), g.pw = (int)(fv_test_rand_u64() % 4);
        g.dh = 1 + (int)(fv_test_rand_u64() % 2), g.dw = 1 + (int)(fv_test_rand_u64() % 2);
        g.act = (fv_activation)(fv_test_rand_u64() % 6);
        g.alpha = fv_test_rand_u64() % 2 ? 0.0f : 0.5f;
        g.bias = (int)(fv_test_rand_u64() % 2);
        int mode = (int)(fv_test_rand_u64() % 3);
        g.dt = mode == 1 ? FV_DTYPE_F16 : FV_DTYPE_F32;
        g.flags = mode == 2 ? FV_CONTEXT_CPU_ROUND_F16 : 0;
        if (dim(g.h, g.r, g.sh, g.ph, g.dh) < 1 || dim(g.w, g.s, g.sw, g.pw, g.dw) < 1) continue;
        run_cfg(&g);
        done++;
    }
}

/* FV_CONTEXT_CPU_ROUND_F16 changes F32 results (to FP16 values; run_cfg
 * checks that every output is one). */
static void test_conv_round_flag(void **state) {
    fv_test_seed(3);
    cfg g = base(3, 4, 3);
    g.flags = FV_CONTEXT_CPU_ROUND_F16;
    run_cfg(&g);
    g = base(1, 1, 3), g.flags = FV_CONTEXT_CPU_ROUND_F16, g.h = 20, g.w = 40;
    run_cfg(&g);
    /* same inputs with and without the flag: some outputs must differ */
    float in[5 * 6], w[9] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f};
    fv_test_fill_uniform(in, 30, -1.0f, 1.0f);
    float out[2][30];
    for (int f = 0; f < 2; f++) {
        fv_context *ctx = fv_test_cpu_context(f ? FV_CONTEXT_CPU_ROUND_F16 : 0);
        fv_conv2d_desc d = {.h = 5,
                            .w = 6,
                            .c = 1,
                            .k = 1,
                            .r = 3,
                            .s = 3,
                            .pad_h = 1,
                            .pad_w = 1,
                            .dtype = FV_DTYPE_F32,
                            .weights = w};
        fv_conv2d *op;
        fv_tensor *ti, *to;
        fv_tensor_desc td = {.dtype = FV_DTYPE_F32, .h = 5, .w = 6, .c = 1};
        FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &ti));
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &to));
        FV_ASSERT_OK(fv_tensor_upload(ctx, ti, in, sizeof in));
        FV_ASSERT_OK(fv_conv2d_forward(op, ti, to));
        FV_ASSERT_OK(fv_tensor_download(ctx, to, out[f], sizeof out[f]));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        fv_tensor_destroy(ti), fv_tensor_destroy(to), fv_conv2d_destroy(op);
        fv_context_destroy(ctx);
    }
    int differ = 0;
    for (int i = 0; i < 30; i++)
        differ += out[0][i] != out[1][i];
    assert_true(differ > 0);
    assert_true(fv_test_rel_l2(out[1], out[0], 30) < 2e-3);
}

/* The op's own FP16 conversions agree bit for bit with fv_f32_to_f16 /
 * fv_f16_to_f32 on every half (1x1 conv, out = f16(0 + x * w)), and F32
 * outputs under the flag with fv_round_f16 over floats of every magnitude. */
static void test_conv_f16_bits(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    const float ws[6] = {1.0f, 1.0f / 3.0f, 1.0009765625f, 1.0e-4f, 3000.0f, -0.7f};
    fv_half *src = malloc(65536 * 2), *dst = malloc(65536 * 2);
    assert_non_null(src && dst);
    for (int i = 0; i < 65536; i++)
        src[i] = (fv_half)i;
    fv_tensor_desc td = {.dtype = FV_DTYPE_F16, .h = 256, .w = 256, .c = 1};
    fv_tensor *ti, *to;
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &ti));
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &to));
    FV_ASSERT_OK(fv_tensor_upload(ctx, ti, src, 65536 * 2));
    for (int k = 0; k < 6; k++) {
        fv_conv2d_desc d = {.h = 256,
                            .w = 256,
                            .c = 1,
                            .k = 1,
                            .r = 1,
                            .s = 1,
                            .dtype = FV_DTYPE_F16,
                            .weights = &ws[k]};
        fv_conv2d *op;
        FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
        FV_ASSERT_OK(fv_conv2d_forward(op, ti, to));
        FV_ASSERT_OK(fv_tensor_download(ctx, to, dst, 65536 * 2));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        float w = fv_round_f16(ws[k]);
        for (int i = 0; i < 65536; i++) {
            fv_half want = fv_f32_to_f16(0.0f + fv_f16_to_f32((fv_half)i) * w);
            int nan = (want & 0x7c00) == 0x7c00 && (want & 0x3ff);
            if (dst[i] != want && !(nan && (dst[i] & 0x7c00) == 0x7c00 && (dst[i] & 0x3ff)))
                fail_msg("w=%g: half 0x%04x gave 0x%04x, want 0x%04x", w, i, dst[i], want);
        }
        fv_conv2d_destroy(op);
    }
    fv_tensor_destroy(ti), fv_tensor_destroy(to);
    fv_context_destroy(ctx);

    /* F32 with FV_CONTEXT_CPU_ROUND_F16: out = round16(0 + x * 1) */
    ctx = fv_test_cpu_context(FV_CONTEXT_CPU_ROUND_F16);
    enum { N = 1 << 16 };
    float *x = malloc(N * 4), *y = malloc(N * 4);
    assert_non_null(x && y);
    fv_test_seed(4);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)(fv_test_rand_u64() >> 32);
        /* exponents around FP16's range: subnormals, overflow, ties */
        u = (u & 0x807fffffu) | ((uint32_t)(96 + (u >> 23) % 56) << 23);
        if (i % 7 == 0) u &= 0xffffe000u | 0x1000u; /* an exact tie */
        memcpy(&x[i], &u, 4);
    }
    x[0] = INFINITY, x[1] = -INFINITY, x[2] = 65504.0f, x[3] = 65520.0f, x[4] = 65519.99f;
    x[5] = 0x1p-25f, x[6] = 0x1.8p-25f, x[7] = -0.0f, x[8] = 0x1p-24f, x[9] = 0x1.ffcp-15f;
    fv_tensor_desc tf = {.dtype = FV_DTYPE_F32, .h = 256, .w = 256, .c = 1};
    FV_ASSERT_OK(fv_tensor_create(ctx, &tf, &ti));
    FV_ASSERT_OK(fv_tensor_create(ctx, &tf, &to));
    const float one = 1.0f;
    fv_conv2d_desc d = {
        .h = 256, .w = 256, .c = 1, .k = 1, .r = 1, .s = 1, .dtype = FV_DTYPE_F32, .weights = &one};
    fv_conv2d *op;
    FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
    FV_ASSERT_OK(fv_tensor_upload(ctx, ti, x, N * 4));
    FV_ASSERT_OK(fv_conv2d_forward(op, ti, to));
    FV_ASSERT_OK(fv_tensor_download(ctx, to, y, N * 4));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    for (int i = 0; i < N; i++) {
        float want = fv_round_f16(0.0f + x[i]);
        if (memcmp(&want, &y[i], 4) != 0)
            fail_msg("x=%a gave %a, want %a", (double)x[i], (double)y[i], (double)want);
    }
    fv_tensor_destroy(ti), fv_tensor_destroy(to), fv_conv2d_destroy(op);
    fv_context_destroy(ctx);
    free(src), free(dst), free(x), free(y);
}

static fv_conv2d_desc good_desc(const float *w) {
    fv_conv2d_desc d = {.h = 8,
                        .w = 8,
                        .c = 4,
                        .k = 2,
                        .r = 3,
                        .s = 3,
                        .pad_h = 1,
                        .pad_w = 1,
                        .dtype = FV_DTYPE_F32,
                        .weights = w};
    return d;
}

static void test_conv_bad_desc(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    float w[2 * 4 * 9], b[2] = {0.5f, INFINITY};
    fv_test_fill_uniform(w, 72, -1.0f, 1.0f);
    fv_conv2d *op = (fv_conv2d *)&op;
    fv_conv2d_desc d = good_desc(w);
    FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
    fv_conv2d_destroy(op);

    d = good_desc(w), d.c = 3, d.groups = 2;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "groups=2");
    assert_null(op);
    d = good_desc(w), d.groups = 2, d.k = 3;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "K=3");
    d = good_desc(w), d.r = 11, d.s = 11;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "11x11");
    d = good_desc(w), d.r = 4, d.pad_h = 0, d.dilation_h = 3;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "does not fit");
    d = good_desc(w), d.pad_h = -1, d.pad_w = 0;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "padding -1x0");
    d = good_desc(w), d.pad_w = -2;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "-2");
    d = good_desc(NULL);
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "weights are NULL");
    d = good_desc(w), d.reserved[3] = 1;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "reserved[3]");
    d = good_desc(w), d.stride_w = -1;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "stride");
    d = good_desc(w), d.k = 0;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "K=0");
    d = good_desc(w), d.activation = (fv_activation)17;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "activation=17");
    d = good_desc(w), d.activation_alpha = NAN;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "activation_alpha");
    d = good_desc(w), d.dtype = FV_DTYPE_U8;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "U8");
    d = good_desc(w), d.flags = 1u << 9;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "unknown flags 0x200");
    d = good_desc(w), d.flags = FV_CONV2D_DIRECT | FV_CONV2D_NO_DIRECT;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "exclude each other");
    /* engine flags are the CUDA backend's: the CPU backend accepts and ignores them */
    d = good_desc(w), d.flags = FV_CONV2D_DIRECT | FV_CONV2D_AUTOTUNE;
    FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
    fv_conv2d_info info;
    FV_ASSERT_OK(fv_conv2d_info_get(op, &info));
    assert_string_equal(info.path, "cpu");
    fv_conv2d_destroy(op);
    w[5] = NAN;
    d = good_desc(w);
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "weight 5 is not finite");
    w[5] = 0.5f, w[71] = -INFINITY;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "weight 71");
    w[71] = 0.5f, d.bias = b;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_BAD_PARAM, "bias 1 is not finite");
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, NULL, &op), FV_ERR_BAD_PARAM, "desc");
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, NULL), FV_ERR_BAD_PARAM, "out");
    fv_context_destroy(ctx);
}

static void test_conv_bad_tensors(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    float w[2 * 4 * 9];
    fv_test_fill_uniform(w, 72, -1.0f, 1.0f);
    fv_conv2d_desc d = good_desc(w);
    fv_conv2d *op;
    FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
    fv_tensor *in, *out, *in_h, *in_f16, *out_k, *out_f16;
    fv_tensor_desc t = {.dtype = FV_DTYPE_F32, .h = 8, .w = 8, .c = 4};
    FV_ASSERT_OK(fv_tensor_create(ctx, &t, &in));
    t.c = 2;
    FV_ASSERT_OK(fv_tensor_create(ctx, &t, &out));
    t.dtype = FV_DTYPE_F16;
    FV_ASSERT_OK(fv_tensor_create(ctx, &t, &out_f16));
    t.dtype = FV_DTYPE_F32, t.c = 3;
    FV_ASSERT_OK(fv_tensor_create(ctx, &t, &out_k));
    t.c = 4, t.h = 9;
    FV_ASSERT_OK(fv_tensor_create(ctx, &t, &in_h));
    t.h = 8, t.dtype = FV_DTYPE_F16;
    FV_ASSERT_OK(fv_tensor_create(ctx, &t, &in_f16));
    FV_ASSERT_OK(fv_conv2d_forward(op, in, out));
    FV_ASSERT_STATUS(fv_conv2d_forward(op, in_h, out), FV_ERR_BAD_SHAPE, "H=9");
    FV_ASSERT_STATUS(fv_conv2d_forward(op, in_f16, out), FV_ERR_BAD_SHAPE, "F16");
    FV_ASSERT_STATUS(fv_conv2d_forward(op, in, out_k), FV_ERR_BAD_SHAPE, "C=3");
    FV_ASSERT_STATUS(fv_conv2d_forward(op, in, out_f16), FV_ERR_BAD_SHAPE, "F16");
    FV_ASSERT_STATUS(fv_conv2d_forward(op, in, NULL), FV_ERR_BAD_PARAM, "output");
    FV_ASSERT_STATUS(fv_conv2d_forward(NULL, in, out), FV_ERR_BAD_PARAM, "op");
    /* bind checks exactly as forward does */
    FV_ASSERT_OK(fv_conv2d_bind(op, in, out));
    FV_ASSERT_STATUS(fv_conv2d_bind(op, in_h, out), FV_ERR_BAD_SHAPE, "H=9");
    FV_ASSERT_STATUS(fv_conv2d_bind(op, in, out_k), FV_ERR_BAD_SHAPE, "C=3");
    FV_ASSERT_STATUS(fv_conv2d_bind(op, in, in), FV_ERR_BAD_SHAPE, "output tensor");
    FV_ASSERT_STATUS(fv_conv2d_bind(NULL, in, out), FV_ERR_BAD_PARAM, "op");
    fv_tensor_destroy(in), fv_tensor_destroy(out), fv_tensor_destroy(in_h);
    fv_tensor_destroy(in_f16), fv_tensor_destroy(out_k), fv_tensor_destroy(out_f16);
    fv_conv2d_destroy(op);
    fv_context_destroy(ctx);
}

/* FV_CONV2D_RESIDUAL: act(conv + bias + z) against the double reference
 * computed without the activation, plus z, then activated; F32 and F16, a
 * C = K = 1 F32 op (which would take the stencil path), z the input itself;
 * the residual checked. */
static void test_conv_residual(void **state) {
    (void)state;
    fv_test_seed(99);
    const cfg cases[] = {
        {2, 9, 11, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, FV_DTYPE_F32, 0},
        {1, 12, 10, 5, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.2f, 0, FV_DTYPE_F16, 0},
        {1, 8, 8, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, FV_ACT_TANH, 0, 1, FV_DTYPE_F32, 0},
        {1, 8, 8, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 3, FV_ACT_CLIPPED_RELU, 0, 1, FV_DTYPE_F32, 0},
    };
    fv_context *ctx = fv_test_cpu_context(0);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const cfg *g = &cases[ci];
        int P = dim(g->h, g->r, g->sh, g->ph, g->dh), Q = dim(g->w, g->s, g->sw, g->pw, g->dw);
        size_t nin = (size_t)g->n * g->h * g->w * g->c, nout = (size_t)g->n * P * Q * g->k;
        size_t nw = (size_t)g->k * (g->c / g->groups) * g->r * g->s;
        float *in = malloc(nin * 4), *w = malloc(nw * 4), *b = malloc((size_t)g->k * 4);
        float *z = malloc(nout * 4), *out = malloc(nout * 4), *ref = malloc(nout * 4);
        fv_half *h = malloc((nin > nout ? nin : nout) * 2);
        assert_non_null(in && w && b && z && out && ref && h);
        fv_test_fill_uniform(in, nin, -1.0f, 1.0f);
        fv_test_fill_uniform(w, nw, -1.0f, 1.0f);
        fv_test_fill_uniform(b, (size_t)g->k, -1.0f, 1.0f);
        fv_test_fill_uniform(z, nout, -2.0f, 2.0f);
        if (g->dt == FV_DTYPE_F16) round_all(in, nin), round_all(w, nw), round_all(z, nout);
        cfg lin = *g;
        lin.act = FV_ACT_IDENTITY;
        ref_conv(&lin, in, w, g->bias ? b : NULL, ref);
        for (size_t i = 0; i < nout; i++)
            ref[i] = (float)act_ref(g->act, g->alpha, (double)ref[i] + z[i]);
        fv_conv2d_desc d = {.n = g->n,
                            .h = g->h,
                            .w = g->w,
                            .c = g->c,
                            .k = g->k,
                            .r = g->r,
                            .s = g->s,
                            .stride_h = g->sh,
                            .stride_w = g->sw,
                            .pad_h = g->ph,
                            .pad_w = g->pw,
                            .groups = g->groups,
                            .activation = g->act,
                            .activation_alpha = g->alpha,
                            .dtype = g->dt,
                            .weights = w,
                            .bias = g->bias ? b : NULL,
                            .flags = FV_CONV2D_RESIDUAL};
        fv_conv2d *op;
        FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
        fv_tensor *ti, *to, *tz;
        fv_tensor_desc td = {.dtype = g->dt, .n = g->n, .h = g->h, .w = g->w, .c = g->c};
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &ti));
        td.h = P, td.w = Q, td.c = g->k;
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &to));
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &tz));
        if (g->dt == FV_DTYPE_F16) {
            fv_f32_to_f16_n(in, h, nin);
            FV_ASSERT_OK(fv_tensor_upload(ctx, ti, h, nin * 2));
            fv_f32_to_f16_n(z, h, nout);
            FV_ASSERT_OK(fv_tensor_upload(ctx, tz, h, nout * 2));
        } else {
            FV_ASSERT_OK(fv_tensor_upload(ctx, ti, in, nin * 4));
            FV_ASSERT_OK(fv_tensor_upload(ctx, tz, z, nout * 4));
        }
        FV_ASSERT_STATUS(fv_conv2d_forward(op, ti, to), FV_ERR_BAD_PARAM, "FV_CONV2D_RESIDUAL");
        FV_ASSERT_STATUS(fv_conv2d_forward_residual(op, ti, to, to), FV_ERR_BAD_PARAM, "distinct");
        if (g->c == g->k && P == g->h && Q == g->w)
            FV_ASSERT_OK(fv_conv2d_forward_residual(op, ti, ti, to)); /* z: the input */
        else
            FV_ASSERT_STATUS(fv_conv2d_forward_residual(op, ti, ti, to), FV_ERR_BAD_SHAPE,
                             "residual");
        FV_ASSERT_OK(fv_conv2d_forward_residual(op, ti, tz, to));
        if (g->dt == FV_DTYPE_F16) {
            FV_ASSERT_OK(fv_tensor_download(ctx, to, h, nout * 2));
            fv_f16_to_f32_n(h, out, nout);
        } else {
            FV_ASSERT_OK(fv_tensor_download(ctx, to, out, nout * 4));
        }
        double e = fv_test_rel_l2(out, ref, nout);
        if (!(e <= (g->dt == FV_DTYPE_F16 ? 2e-3 : 1e-5))) fail_msg("case %zu: error %.3e", ci, e);
        fv_tensor_destroy(ti), fv_tensor_destroy(to), fv_tensor_destroy(tz);
        fv_conv2d_destroy(op);
        /* an op without the flag refuses a residual */
        d.flags = 0;
        FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
        td = (fv_tensor_desc){.dtype = g->dt, .n = g->n, .h = g->h, .w = g->w, .c = g->c};
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &ti));
        td.h = P, td.w = Q, td.c = g->k;
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &to));
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &tz));
        FV_ASSERT_STATUS(fv_conv2d_forward_residual(op, ti, tz, to), FV_ERR_BAD_PARAM,
                         "without FV_CONV2D_RESIDUAL");
        fv_tensor_destroy(ti), fv_tensor_destroy(to), fv_tensor_destroy(tz);
        fv_conv2d_destroy(op);
        free(in), free(w), free(b), free(z), free(out), free(ref), free(h);
    }
    fv_context_destroy(ctx);
}

/* An output written as channels [c0, c0 + K) of a wider tensor
 * (fv__conv2d_create_into: a net's concat without a copy): the values of
 * the dense reference, the other channels untouched; F32 with any K and c0
 * (C = K = 1 too, which would take the stencil path), F16 with multiples
 * of 8. The op refuses a dense output; what F16 cannot do is refused. */
static void test_conv_output_slice(void **state) {
    (void)state;
    fv_test_seed(77);
    const struct {
        cfg g;
        int c0, wide;
    } cases[] = {
        {{2, 9, 11, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, FV_DTYPE_F32, 0}, 3, 13},
        {{1, 8, 8, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, FV_ACT_TANH, 0, 1, FV_DTYPE_F32, 0}, 2, 4},
        {{1, 12, 10, 5, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 0, FV_DTYPE_F16, 0},
         8,
         24},
        {{2, 6, 7, 16, 16, 1, 1, 1, 1, 0, 0, 1, 1, 2, FV_ACT_LEAKY_RELU, 0.2f, 1, FV_DTYPE_F16, 0},
         0,
         24},
    };
    fv_context *ctx = fv_test_cpu_context(0);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const cfg *g = &cases[ci].g;
        const int c0 = cases[ci].c0, wc = cases[ci].wide, f16 = g->dt == FV_DTYPE_F16;
        int P = dim(g->h, g->r, g->sh, g->ph, g->dh), Q = dim(g->w, g->s, g->sw, g->pw, g->dw);
        size_t nin = (size_t)g->n * g->h * g->w * g->c, npx = (size_t)g->n * P * Q;
        size_t nw = (size_t)g->k * (g->c / g->groups) * g->r * g->s, nwide = npx * (size_t)wc;
        float *in = malloc(nin * 4), *w = malloc(nw * 4), *b = malloc((size_t)g->k * 4);
        float *ref = malloc(npx * (size_t)g->k * 4), *out = malloc(nwide * 4);
        fv_half *h = malloc((nin > nwide ? nin : nwide) * 2);
        assert_non_null(in && w && b && ref && out && h);
        fv_test_fill_uniform(in, nin, -1.0f, 1.0f);
        fv_test_fill_uniform(w, nw, -1.0f, 1.0f);
        fv_test_fill_uniform(b, (size_t)g->k, -1.0f, 1.0f);
        if (f16) round_all(in, nin), round_all(w, nw), round_all(b, (size_t)g->k);
        ref_conv(g, in, w, g->bias ? b : NULL, ref);
        fv_conv2d_desc d = {.n = g->n,
                            .h = g->h,
                            .w = g->w,
                            .c = g->c,
                            .k = g->k,
                            .r = g->r,
                            .s = g->s,
                            .stride_h = g->sh,
                            .stride_w = g->sw,
                            .pad_h = g->ph,
                            .pad_w = g->pw,
                            .groups = g->groups,
                            .activation = g->act,
                            .activation_alpha = g->alpha,
                            .dtype = g->dt,
                            .weights = w,
                            .bias = g->bias ? b : NULL};
        fv_conv2d *op;
        FV_ASSERT_OK(fv__conv2d_create_into(ctx, &d, wc, &op));
        fv_tensor *ti, *tw, *dense;
        fv_tensor_desc td = {.dtype = g->dt, .n = g->n, .h = g->h, .w = g->w, .c = g->c};
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &ti));
        td.h = P, td.w = Q, td.c = wc;
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &tw));
        td.c = g->k;
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &dense));
        /* the wider tensor holds 7.5 everywhere first */
        for (size_t i = 0; i < nwide; i++)
            out[i] = 7.5f;
        if (f16) {
            fv_f32_to_f16_n(in, h, nin);
            FV_ASSERT_OK(fv_tensor_upload(ctx, ti, h, nin * 2));
            fv_f32_to_f16_n(out, h, nwide);
            FV_ASSERT_OK(fv_tensor_upload(ctx, tw, h, nwide * 2));
        } else {
            FV_ASSERT_OK(fv_tensor_upload(ctx, ti, in, nin * 4));
            FV_ASSERT_OK(fv_tensor_upload(ctx, tw, out, nwide * 4));
        }
        size_t es = f16 ? 2 : 4;
        fv_tensor slice = *tw;
        slice.shape.c = g->k;
        slice.shape.dense_bytes = npx * (size_t)g->k * es;
        slice.data = (char *)tw->data + (size_t)c0 * es;
        slice.dev_data = (char *)tw->dev_data + (size_t)c0 * es;
        FV_ASSERT_STATUS(fv_conv2d_forward(op, ti, dense), FV_ERR_BAD_SHAPE, "pixel stride");
        FV_ASSERT_OK(fv_conv2d_forward(op, ti, &slice));
        if (f16) {
            FV_ASSERT_OK(fv_tensor_download(ctx, tw, h, nwide * 2));
            fv_f16_to_f32_n(h, out, nwide);
        } else {
            FV_ASSERT_OK(fv_tensor_download(ctx, tw, out, nwide * 4));
        }
        float *got = malloc(npx * (size_t)g->k * 4);
        for (size_t p = 0; p < npx; p++)
            for (int c = 0; c < wc; c++) {
                float v = out[p * (size_t)wc + (size_t)c];
                if (c >= c0 && c < c0 + g->k)
                    got[p * (size_t)g->k + (size_t)(c - c0)] = v;
                else if (v != 7.5f)
                    fail_msg("case %zu: pixel %zu channel %d outside the slice is %g", ci, p, c,
                             (double)v);
            }
        double e = fv_test_rel_l2(got, ref, npx * (size_t)g->k);
        if (!(e <= (f16 ? 2e-3 : 1e-5))) fail_msg("case %zu: error %.3e", ci, e);
        fv_tensor_destroy(ti), fv_tensor_destroy(tw), fv_tensor_destroy(dense);
        fv_conv2d_destroy(op);
        free(in), free(w), free(b), free(ref), free(out), free(h), free(got);
    }
    /* what F16 slices cannot be, and a fused residual */
    float w[16 * 8 * 9] = {0};
    fv_conv2d_desc d = {.h = 8, .w = 8, .c = 8, .k = 12, .r = 3, .s = 3, .weights = w};
    fv_conv2d *op = NULL;
    FV_ASSERT_STATUS(fv__conv2d_create_into(ctx, &d, 24, &op), FV_ERR_BAD_PARAM, "multiples of 8");
    FV_ASSERT_STATUS(fv__conv2d_create_into(ctx, &d, 8, &op), FV_ERR_BAD_PARAM, ">= K");
    d.dtype = FV_DTYPE_F32;
    FV_ASSERT_OK(fv__conv2d_create_into(ctx, &d, 13, &op));
    fv_conv2d_destroy(op);
    d.flags = FV_CONV2D_RESIDUAL;
    FV_ASSERT_STATUS(fv__conv2d_create_into(ctx, &d, 13, &op), FV_ERR_BAD_PARAM,
                     "FV_CONV2D_RESIDUAL");
    fv_context_destroy(ctx);
}

/* Forward allocates nothing: the pools' counters stand still over 50 runs,
 * on both paths (stencil: F32 C1 K1; planar: everything else). */
static void test_conv_no_alloc(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_pool *pools[2] = {fv_context_pool(ctx, FV_POOL_HOST), fv_context_pool(ctx, FV_POOL_DEVICE)};
    float w[3 * 3 * 9];
    fv_test_fill_uniform(w, 81, -1.0f, 1.0f);
    const struct {
        int c, k;
        fv_dtype dt;
    } cases[3] = {{1, 1, FV_DTYPE_F32}, {3, 3, FV_DTYPE_F16}, {3, 3, FV_DTYPE_F32}};
    for (int i = 0; i < 3; i++) {
        fv_conv2d_desc d = {.n = 2,
                            .h = 32,
                            .w = 48,
                            .c = cases[i].c,
                            .k = cases[i].k,
                            .r = 3,
                            .s = 3,
                            .pad_h = 1,
                            .pad_w = 1,
                            .dtype = cases[i].dt,
                            .weights = w};
        fv_conv2d *op;
        fv_tensor *in, *out;
        FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
        fv_tensor_desc t = {.dtype = d.dtype, .n = 2, .h = 32, .w = 48, .c = d.c};
        FV_ASSERT_OK(fv_tensor_create(ctx, &t, &in));
        t.c = d.k;
        FV_ASSERT_OK(fv_tensor_create(ctx, &t, &out));
        fv_pool_stats before[2], after[2];
        for (int p = 0; p < 2; p++)
            FV_ASSERT_OK(fv_pool_stats_get(pools[p], &before[p]));
        for (int it = 0; it < 50; it++)
            FV_ASSERT_OK(fv_conv2d_forward(op, in, out));
        for (int p = 0; p < 2; p++) {
            FV_ASSERT_OK(fv_pool_stats_get(pools[p], &after[p]));
            assert_int_equal(before[p].backing_allocs, after[p].backing_allocs);
            assert_int_equal(before[p].in_use, after[p].in_use);
            assert_int_equal(before[p].carve_outs, after[p].carve_outs);
        }
        /* the weights and row buffers live in the HOST pool */
        assert_true(before[0].in_use > 0);
        fv_tensor_destroy(in), fv_tensor_destroy(out), fv_conv2d_destroy(op);
        FV_ASSERT_OK(fv_pool_stats_get(pools[0], &after[0]));
        assert_int_equal(after[0].in_use, 0);
    }
    fv_context_destroy(ctx);
}

/* The weights and row buffers come from the HOST pool: when it is too small,
 * create fails cleanly with the pool named, and nothing stays carved. */
static void test_conv_host_pool_exhausted(void **state) {
    fv_context_desc cd = {.backend = FV_BACKEND_CPU,
                          .device_pool_bytes = 1u << 20,
                          .pinned_pool_bytes = 4096,
                          .host_pool_bytes = 4096};
    fv_context *ctx = NULL;
    FV_ASSERT_OK(fv_context_create(&cd, &ctx));
    static float w[16 * 16 * 9];
    fv_test_fill_uniform(w, 16 * 16 * 9, -1.0f, 1.0f);
    fv_conv2d_desc d = {.h = 64,
                        .w = 64,
                        .c = 16,
                        .k = 16,
                        .r = 3,
                        .s = 3,
                        .pad_h = 1,
                        .pad_w = 1,
                        .dtype = FV_DTYPE_F16,
                        .weights = w};
    fv_conv2d *op = (fv_conv2d *)&op;
    FV_ASSERT_STATUS(fv_conv2d_create(ctx, &d, &op), FV_ERR_OUT_OF_MEMORY, "conv2d");
    assert_null(op);
    fv_pool_stats st;
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_HOST), &st));
    assert_int_equal(st.in_use, 0);
    assert_true(st.failed > 0);
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_table),      cmocka_unit_test(test_conv_random),
        cmocka_unit_test(test_conv_round_flag), cmocka_unit_test(test_conv_f16_bits),
        cmocka_unit_test(test_conv_bad_desc),   cmocka_unit_test(test_conv_bad_tensors),
        cmocka_unit_test(test_conv_no_alloc),   cmocka_unit_test(test_conv_host_pool_exhausted),
        cmocka_unit_test(test_conv_residual),   cmocka_unit_test(test_conv_output_slice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
