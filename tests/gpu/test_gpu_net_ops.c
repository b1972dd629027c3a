/* fv_net's CUDA layer kernels (backend/cuda/cuda_net.c) against the CPU
 * reference (backend/cpu/cpu_net.c, on F32 views) on the same random
 * inputs: ||gpu - cpu|| / ||cpu|| within each op's bound over channels
 * [0, c); channels [c, cw) must come back zero and every lane outside
 * [off, off + cw) as it was. Every lane starts poisoned (a NaN), inputs
 * included, so a kernel that reads or leaves a lane it should not shows.
 * GPU views run on F16 (whole buffers take the 8-channel vector kernels,
 * odd channel slices the scalar ones) and on F32. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"
#include "fovea/net.h"
#include "backend/net_ops.h"
#include "core/internal.h"

#if FV_BUILT_WITH_CUDA

static fv_context *g_ctx; /* CUDA */
static fv_context *g_cpu; /* the reference */
static fv_dtype g_dt;     /* of the GPU views */

#define POISON_F16 0x7e5au     /* a NaN */
#define POISON_F32 0x7fc0deadu /* a NaN */

/* Bound on the relative L2 error of an op whose F16 result rounds once
 * (FP16 storage: about 2.4e-4 RMS); exact ops pass 0 (the CPU copies the
 * same FP16 values). */
static double tol(double f16) {
    return f16 == 0 ? 0 : g_dt == FV_DTYPE_F16 ? f16 : 1e-5;
}

/* A view: n x h x w x c at channel off of a buffer of ps channels a pixel.
 * cw 0: c rounded up to 8 (a whole buffer); ps 0: off + cw rounded up to 8. */
typedef struct vs {
    int n, h, w, c, off, cw, ps;
} vs;
#define WHOLE(n, h, w, c)                                                                          \
    { n, h, w, c, 0, 0, 0 }
/* channels [off, off + c) of a buffer of ps: cw = c */
#define SLICE(n, h, w, c, off, ps)                                                                 \
    { n, h, w, c, off, c, ps }

/* A view with its buffer on both sides: the GPU's (a tensor of C = ps
 * channels, so its storage is exactly the lanes) and the CPU's (F32). */
typedef struct tv {
    vs s;
    size_t count; /* n * h * w * ps lanes */
    size_t esize; /* of the GPU's lanes */
    fv_tensor *t;
    void *raw;   /* the GPU's lanes as uploaded */
    float *cpu;  /* the CPU's lanes */
    float *cpu0; /* ... as they were before the op */
} tv;

static tv *tv_new(vs s) {
    if (!s.cw) s.cw = (s.c + 7) / 8 * 8;
    if (!s.ps) s.ps = (s.off + s.cw + 7) / 8 * 8;
    assert_true(s.ps % 8 == 0 && s.off + s.cw <= s.ps && s.c <= s.cw);
    tv *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->s = s;
    t->count = (size_t)s.n * s.h * s.w * s.ps;
    t->esize = g_dt == FV_DTYPE_F16 ? 2 : 4;
    fv_tensor_desc d = {.dtype = g_dt, .n = s.n, .h = s.h, .w = s.w, .c = s.ps};
    FV_ASSERT_OK(fv_tensor_create(g_ctx, &d, &t->t));
    t->raw = malloc(t->count * t->esize);
    t->cpu = malloc(t->count * sizeof(float));
    t->cpu0 = malloc(t->count * sizeof(float));
    assert_true(t->raw && t->cpu && t->cpu0);
    for (size_t i = 0; i < t->count; i++) {
        if (g_dt == FV_DTYPE_F16)
            ((fv_half *)t->raw)[i] = POISON_F16;
        else
            ((uint32_t *)t->raw)[i] = POISON_F32;
        t->cpu[i] = NAN;
    }
    return t;
}

static void tv_free(tv *t) {
    if (!t) return;
    fv_tensor_destroy(t->t);
    free(t->raw), free(t->cpu), free(t->cpu0), free(t);
}

static void set_lane(tv *t, size_t i, float v) {
    if (g_dt == FV_DTYPE_F16) {
        fv_half h = fv_f32_to_f16(v);
        ((fv_half *)t->raw)[i] = h;
        t->cpu[i] = fv_f16_to_f32(h);
    } else {
        ((float *)t->raw)[i] = v;
        t->cpu[i] = v;
    }
}

static float gpu_lane(const tv *t, const void *raw, size_t i) {
    if (g_dt == FV_DTYPE_F16) return fv_f16_to_f32(((const fv_half *)raw)[i]);
    return ((const float *)raw)[i];
}

/* Random values in channels [0, c) (magnitude at least 0.5 with away: a
 * divisor), zeros in [c, cw): a whole buffer's padding, as the net keeps
 * it. The same values on both sides (exact FP16 values on F16). */
static void tv_fill(tv *t, float lo, float hi, int away) {
    const vs *s = &t->s;
    for (size_t p = 0; p < t->count / (size_t)s->ps; p++)
        for (int ch = 0; ch < s->cw; ch++) {
            float v = 0.0f;
            if (ch < s->c && away) {
                v = fv_test_rand_uniform(0.5f, 2.0f);
                if (fv_test_rand_u64() & 1) v = -v;
            } else if (ch < s->c) {
                v = fv_test_rand_uniform(lo, hi);
            }
            set_lane(t, p * (size_t)s->ps + (size_t)(s->off + ch), v);
        }
}

/* Uploads the GPU's lanes (poison included) and notes the CPU's. */
static void tv_sync(tv *t) {
    FV_ASSERT_OK(fv_tensor_upload(g_ctx, t->t, t->raw, t->count * t->esize));
    memcpy(t->cpu0, t->cpu, t->count * sizeof(float));
}

static fv__view view_of(const tv *t, int gpu) {
    const vs *s = &t->s;
    fv__view v = {.dtype = gpu ? g_dt : FV_DTYPE_F32,
                  .n = s->n,
                  .h = s->h,
                  .w = s->w,
                  .c = s->c,
                  .cw = s->cw,
                  .ps = s->ps};
    if (gpu)
        v.data = (char *)fv__tensor_ptr(t->t) + (size_t)s->off * t->esize;
    else
        v.data = t->cpu + s->off;
    return v;
}

static int same_bits(const void *a, const void *b, size_t size) {
    return memcmp(a, b, size) == 0;
}

/* The op's output: values, padding lanes, lanes outside the view. */
static void tv_check(tv *t, double bound, const char *what) {
    const vs *s = &t->s;
    const size_t pixels = t->count / (size_t)s->ps, n = pixels * (size_t)s->c;
    void *got = malloc(t->count * t->esize);
    float *g = malloc(n * sizeof(float)), *r = malloc(n * sizeof(float));
    assert_true(got && g && r);
    FV_ASSERT_OK(fv_tensor_download(g_ctx, t->t, got, t->count * t->esize));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    size_t k = 0;
    for (size_t p = 0; p < pixels; p++)
        for (int l = 0; l < s->ps; l++) {
            const size_t i = p * (size_t)s->ps + (size_t)l;
            const int ch = l - s->off;
            if (ch >= 0 && ch < s->c) {
                g[k] = gpu_lane(t, got, i), r[k] = t->cpu[i], k++;
            } else if (ch >= s->c && ch < s->cw) {
                if (gpu_lane(t, got, i) != 0.0f)
                    fail_msg("%s: GPU padding channel %d of pixel %zu is %g, not 0", what, ch, p,
                             gpu_lane(t, got, i));
                if (t->cpu[i] != 0.0f)
                    fail_msg("%s: CPU padding channel %d of pixel %zu is %g, not 0", what, ch, p,
                             t->cpu[i]);
            } else {
                const char *gb = (const char *)got + i * t->esize;
                if (!same_bits(gb, (const char *)t->raw + i * t->esize, t->esize))
                    fail_msg("%s: GPU wrote lane %d of pixel %zu, outside the view (%g)", what, l,
                             p, gpu_lane(t, got, i));
                if (!same_bits(&t->cpu[i], &t->cpu0[i], sizeof(float)))
                    fail_msg("%s: CPU wrote lane %d of pixel %zu, outside the view (%g)", what, l,
                             p, t->cpu[i]);
            }
        }
    const double err = fv_test_rel_l2(g, r, n);
    if (!(err <= bound)) {
        size_t worst = 0;
        for (size_t i = 0; i < n; i++)
            if (isnan(g[i]) || isnan(r[i])) {
                worst = i;
                break;
            } else if (fabsf(g[i] - r[i]) > fabsf(g[worst] - r[worst])) {
                worst = i;
            }
        fail_msg("%s: rel L2 %.3g > %.1e (element %zu = pixel %zu channel %d: GPU %.7g, CPU "
                 "%.7g)",
                 what, err, bound, worst, worst / (size_t)s->c, (int)(worst % (size_t)s->c),
                 g[worst], r[worst]);
    }
    free(got), free(g), free(r);
}

/* The CPU reference, then the GPU op (its result is read by tv_check). */
#define RUN_BOTH(call_cpu, call_gpu)                                                               \
    do {                                                                                           \
        FV_ASSERT_OK(call_cpu);                                                                    \
        FV_ASSERT_OK(call_gpu);                                                                    \
    } while (0)

static const char *dt_name(void) {
    return g_dt == FV_DTYPE_F16 ? "F16" : "F32";
}

static void describe(char *buf, size_t size, const char *op, const vs *in, const vs *out) {
    snprintf(buf, size,
             "%s %s in %dx%dx%dx%d (off %d cw %d ps %d) -> out %dx%dx%dx%d (off %d cw %d ps %d)",
             op, dt_name(), in->n, in->h, in->w, in->c, in->off, in->cw, in->ps, out->n, out->h,
             out->w, out->c, out->off, out->cw, out->ps);
}

/* A device copy of count floats (the net's constants live there). */
static fv_tensor *dev_floats(const float *v, int count) {
    fv_tensor *t = NULL;
    fv_tensor_desc d = {.dtype = FV_DTYPE_F32, .n = 1, .h = 1, .w = 1, .c = count};
    FV_ASSERT_OK(fv_tensor_create(g_ctx, &d, &t));
    FV_ASSERT_OK(fv_tensor_upload(g_ctx, t, v, (size_t)count * sizeof(float)));
    return t;
}

static void for_each_dtype(void (*body)(void)) {
    g_dt = FV_DTYPE_F16;
    body();
    g_dt = FV_DTYPE_F32;
    body();
}

/* ---- act, affine, copy --------------------------------------------------- */

/* Layouts of same-shape ops: in, out; inplace: out is in. */
typedef struct layout {
    vs in, out;
    int inplace;
} layout;

static const layout unary_layouts[] = {
    {WHOLE(2, 5, 7, 13), WHOLE(2, 5, 7, 13), 0},                /* padding lanes, vectors */
    {SLICE(2, 5, 7, 16, 8, 32), SLICE(2, 5, 7, 16, 16, 40), 0}, /* vector slices */
    {SLICE(2, 5, 7, 5, 3, 16), WHOLE(2, 5, 7, 5), 0},           /* odd slice -> whole */
    {WHOLE(2, 5, 7, 5), SLICE(2, 5, 7, 5, 11, 24), 0},          /* whole -> odd slice */
    {WHOLE(1, 3, 4, 24), WHOLE(1, 3, 4, 24), 1},                /* in place */
};
#define N_UNARY (int)(sizeof unary_layouts / sizeof unary_layouts[0])

/* Runs a same-shape op on every layout: op(ctx, in, out, gpu, arg). */
typedef fv_status (*unary_fn)(fv_context *ctx, const fv__view *in, const fv__view *out, int gpu,
                              const void *arg);

static void run_unary(const char *name, unary_fn fn, const void *arg, float lo, float hi,
                      double bound) {
    for (int li = 0; li < N_UNARY; li++) {
        const layout *L = &unary_layouts[li];
        tv *in = tv_new(L->in), *out = L->inplace ? in : tv_new(L->out);
        tv_fill(in, lo, hi, 0);
        tv_sync(in);
        if (out != in) tv_sync(out);
        fv__view ci = view_of(in, 0), co = view_of(out, 0);
        fv__view gi = view_of(in, 1), go = view_of(out, 1);
        RUN_BOTH(fn(g_cpu, &ci, &co, 0, arg), fn(g_ctx, &gi, &go, 1, arg));
        char what[256];
        describe(what, sizeof what, name, &in->s, &out->s);
        tv_check(out, bound, what);
        if (out != in) tv_free(out);
        tv_free(in);
    }
}

typedef struct act_arg {
    int act;
    float alpha, beta;
    const float *scale[2], *shift[2]; /* [gpu]; NULL: act */
    int count;
} act_arg;

static fv_status do_act(fv_context *ctx, const fv__view *in, const fv__view *out, int gpu,
                        const void *arg) {
    const act_arg *a = arg;
    const fv__net_ops *ops = gpu ? &fv__net_ops_cuda : &fv__net_ops_cpu;
    if (a->scale[gpu])
        return ops->affine(ctx, in, out, a->scale[gpu], a->shift[gpu], a->count, a->act, a->alpha,
                           a->beta);
    return ops->act(ctx, in, out, a->act, a->alpha, a->beta);
}

static void act_body(void) {
    const float alpha[] = {0, 0, 6, 0, 0, 0.1f, 0.2f, 0, 0};
    for (int act = FV_ACT_IDENTITY; act <= FV_ACT_SILU; act++) {
        act_arg a = {.act = act, .alpha = alpha[act], .beta = 0.4f};
        char name[64];
        snprintf(name, sizeof name, "act %s", fv_activation_name((fv_activation)act));
        run_unary(name, do_act, &a, -8, 8, tol(2e-3));
    }
}

static void act_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(31);
    for_each_dtype(act_body);
}

static void affine_body(void) {
    /* one table for every layout: 24 channels at most */
    float scale[24], shift[24];
    fv_test_fill_uniform(scale, 24, -2, 2);
    fv_test_fill_uniform(shift, 24, -1, 1);
    fv_tensor *ds = dev_floats(scale, 24), *dh = dev_floats(shift, 24);
    const int acts[] = {FV_ACT_IDENTITY, FV_ACT_RELU, FV_ACT_HARD_SWISH};
    for (int k = 0; k < 3; k++)
        for (int count1 = 0; count1 < 2; count1++) {
            act_arg a = {.act = acts[k],
                         .scale = {scale, fv__tensor_ptr(ds)},
                         .shift = {shift, fv__tensor_ptr(dh)},
                         .count = count1 ? 1 : 0};
            char name[64];
            snprintf(name, sizeof name, "affine %s count %s",
                     fv_activation_name((fv_activation)acts[k]), count1 ? "1" : "C");
            /* count C: the kernels take the view's c */
            for (int li = 0; li < N_UNARY; li++) {
                const layout *L = &unary_layouts[li];
                a.count = count1 ? 1 : L->out.c;
                tv *in = tv_new(L->in), *out = L->inplace ? in : tv_new(L->out);
                tv_fill(in, -4, 4, 0);
                tv_sync(in);
                if (out != in) tv_sync(out);
                fv__view ci = view_of(in, 0), co = view_of(out, 0);
                fv__view gi = view_of(in, 1), go = view_of(out, 1);
                RUN_BOTH(do_act(g_cpu, &ci, &co, 0, &a), do_act(g_ctx, &gi, &go, 1, &a));
                char what[256];
                describe(what, sizeof what, name, &in->s, &out->s);
                tv_check(out, tol(2e-3), what);
                if (out != in) tv_free(out);
                tv_free(in);
            }
        }
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    fv_tensor_destroy(ds), fv_tensor_destroy(dh);
}

static void affine_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(32);
    for_each_dtype(affine_body);
}

static fv_status do_copy(fv_context *ctx, const fv__view *in, const fv__view *out, int gpu,
                         const void *arg) {
    (void)arg;
    return (gpu ? &fv__net_ops_cuda : &fv__net_ops_cpu)->copy(ctx, in, out);
}

static void copy_body(void) {
    run_unary("copy", do_copy, NULL, -4, 4, 0);
    /* concat parts: 8-aligned (vectors) and odd (scalar) */
    const layout parts[] = {
        {WHOLE(1, 4, 6, 16), SLICE(1, 4, 6, 16, 16, 48), 0},
        {WHOLE(1, 4, 6, 13), SLICE(1, 4, 6, 13, 3, 24), 0},
        {SLICE(1, 4, 6, 8, 8, 24), SLICE(1, 4, 6, 8, 32, 48), 0},
    };
    for (int k = 0; k < 3; k++) {
        tv *in = tv_new(parts[k].in), *out = tv_new(parts[k].out);
        tv_fill(in, -4, 4, 0);
        tv_sync(in), tv_sync(out);
        fv__view ci = view_of(in, 0), co = view_of(out, 0);
        fv__view gi = view_of(in, 1), go = view_of(out, 1);
        RUN_BOTH(do_copy(g_cpu, &ci, &co, 0, NULL), do_copy(g_ctx, &gi, &go, 1, NULL));
        char what[256];
        describe(what, sizeof what, "copy", &in->s, &out->s);
        tv_check(out, 0, what);
        tv_free(in), tv_free(out);
    }
}

static void copy_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(33);
    for_each_dtype(copy_body);
}

static fv_status do_softmax(fv_context *ctx, const fv__view *in, const fv__view *out, int gpu,
                            const void *arg) {
    (void)arg;
    return (gpu ? &fv__net_ops_cuda : &fv__net_ops_cpu)->softmax(ctx, in, out);
}

static void softmax_body(void) {
    run_unary("softmax", do_softmax, NULL, -6, 6, tol(2e-3));
    const int cs[] = {1, 5, 21, 64, 1000};
    for (int k = 0; k < 5; k++) {
        const vs s = WHOLE(2, 3, 5, cs[k]);
        tv *in = tv_new(s), *out = tv_new(s);
        tv_fill(in, -6, 6, 0);
        tv_sync(in), tv_sync(out);
        fv__view ci = view_of(in, 0), co = view_of(out, 0);
        fv__view gi = view_of(in, 1), go = view_of(out, 1);
        RUN_BOTH(do_softmax(g_cpu, &ci, &co, 0, NULL), do_softmax(g_ctx, &gi, &go, 1, NULL));
        char what[256];
        describe(what, sizeof what, "softmax", &in->s, &out->s);
        tv_check(out, tol(2e-3), what);
        tv_free(in), tv_free(out);
    }
}

static void softmax_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(34);
    for_each_dtype(softmax_body);
}

/* ---- binary ----------------------------------------------------------------- */

typedef struct bcase {
    vs a, b, out;
    int inplace; /* 1: out is a, 2: out is b */
} bcase;

static const bcase bcases[] = {
    {WHOLE(2, 5, 7, 13), WHOLE(2, 5, 7, 13), WHOLE(2, 5, 7, 13), 0},
    {WHOLE(2, 5, 7, 24), WHOLE(2, 1, 1, 24), WHOLE(2, 5, 7, 24), 0}, /* squeeze-and-excitation */
    {WHOLE(2, 5, 7, 13), WHOLE(1, 5, 7, 1), WHOLE(2, 5, 7, 13), 0},  /* one channel, one image */
    {WHOLE(2, 5, 1, 16), WHOLE(1, 1, 7, 16), WHOLE(2, 5, 7, 16), 0}, /* both broadcast */
    {WHOLE(2, 5, 7, 13), WHOLE(1, 1, 1, 1), WHOLE(2, 5, 7, 13), 0},  /* a scalar */
    {WHOLE(1, 1, 1, 1), SLICE(2, 5, 7, 5, 3, 16), WHOLE(2, 5, 7, 5), 0},
    {SLICE(2, 5, 7, 16, 8, 32), SLICE(2, 5, 7, 16, 16, 40), SLICE(2, 5, 7, 16, 8, 24), 0},
    {SLICE(2, 5, 7, 16, 8, 32), SLICE(2, 5, 7, 16, 3, 24), WHOLE(2, 5, 7, 16), 0}, /* b unaligned */
    {WHOLE(2, 5, 7, 24), WHOLE(2, 1, 1, 24), WHOLE(2, 5, 7, 24), 1},
    {WHOLE(2, 5, 7, 13), WHOLE(2, 5, 7, 13), WHOLE(2, 5, 7, 13), 2},
};
#define N_BCASES (int)(sizeof bcases / sizeof bcases[0])

static void binary_body(void) {
    const char *names[] = {"add", "sub", "mul", "div"};
    for (int op = FV_NET_ADD; op <= FV_NET_DIV; op++)
        for (int k = 0; k < N_BCASES; k++)
            for (int ai = 0; ai < 2; ai++) {
                const bcase *B = &bcases[k];
                const int act = ai ? FV_ACT_RELU : FV_ACT_IDENTITY;
                tv *a = tv_new(B->a), *b = tv_new(B->b);
                tv *out = B->inplace == 1 ? a : B->inplace == 2 ? b : tv_new(B->out);
                tv_fill(a, -4, 4, 0);
                tv_fill(b, -4, 4, op == FV_NET_DIV);
                tv_sync(a), tv_sync(b);
                if (!B->inplace) tv_sync(out);
                fv__view ca = view_of(a, 0), cb = view_of(b, 0), co = view_of(out, 0);
                fv__view ga = view_of(a, 1), gb = view_of(b, 1), go = view_of(out, 1);
                RUN_BOTH(fv__net_ops_cpu.binary(g_cpu, op, &ca, &cb, &co, act, 0, 0),
                         fv__net_ops_cuda.binary(g_ctx, op, &ga, &gb, &go, act, 0, 0));
                char what[320];
                snprintf(what, sizeof what,
                         "%s%s %s a %dx%dx%dx%d (off %d ps %d) b %dx%dx%dx%d (off %d ps %d) -> "
                         "%dx%dx%dx%d (off %d cw %d ps %d)%s",
                         names[op], ai ? "+relu" : "", dt_name(), B->a.n, B->a.h, B->a.w, B->a.c,
                         a->s.off, a->s.ps, B->b.n, B->b.h, B->b.w, B->b.c, b->s.off, b->s.ps,
                         out->s.n, out->s.h, out->s.w, out->s.c, out->s.off, out->s.cw, out->s.ps,
                         B->inplace == 1   ? " out = a"
                         : B->inplace == 2 ? " out = b"
                                           : "");
                tv_check(out, tol(2e-3), what);
                if (!B->inplace) tv_free(out);
                tv_free(a), tv_free(b);
            }
}

static void binary_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(35);
    for_each_dtype(binary_body);
}

/* ---- pooling ------------------------------------------------------------------- */

/* PyTorch's output size (pads top/bottom), ceil_mode included. */
static int pool_out(int size, int k, int stride, int pad0, int pad1, int dil, int ceil_mode) {
    const int span = size + pad0 + pad1 - dil * (k - 1) - 1;
    int out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil_mode && (out - 1) * stride >= size + pad0) out--;
    return out;
}

typedef struct pcase {
    fv__pool_params p; /* mode set per run */
    int pad_bottom, pad_right, ceil_mode;
} pcase;

static const pcase pcases[] = {
    {{0, 3, 3, 2, 2, 1, 1, 1, 1}, 1, 1, 0}, /* ResNet's stem */
    {{0, 2, 2, 2, 2, 0, 0, 1, 1}, 0, 0, 0}, {{0, 3, 3, 1, 1, 1, 1, 1, 1}, 1, 1, 0},
    {{0, 3, 3, 2, 2, 1, 0, 1, 1}, 0, 1, 1}, /* asymmetric, ceil */
    {{0, 5, 4, 3, 2, 2, 1, 1, 1}, 2, 1, 1}, {{0, 3, 3, 1, 2, 2, 2, 2, 2}, 2, 2, 0}, /* dilation */
};
#define N_PCASES (int)(sizeof pcases / sizeof pcases[0])

static void pool_body(void) {
    const vs ins[] = {WHOLE(2, 13, 17, 13), WHOLE(1, 13, 17, 64), SLICE(2, 13, 17, 5, 3, 16)};
    for (int mode = FV_NET_POOL_MAX; mode <= FV_NET_POOL_AVG_INCLUDE_PAD; mode++)
        for (int k = 0; k < N_PCASES; k++)
            for (int li = 0; li < 3; li++) {
                fv__pool_params p = pcases[k].p;
                p.mode = mode;
                const vs si = ins[li];
                const vs so = WHOLE(si.n,
                                    pool_out(si.h, p.r, p.stride_h, p.pad_top, pcases[k].pad_bottom,
                                             p.dilation_h, pcases[k].ceil_mode),
                                    pool_out(si.w, p.s, p.stride_w, p.pad_left, pcases[k].pad_right,
                                             p.dilation_w, pcases[k].ceil_mode),
                                    si.c);
                tv *in = tv_new(si), *out = tv_new(so);
                tv_fill(in, -3, 5, 0);
                tv_sync(in), tv_sync(out);
                fv__view ci = view_of(in, 0), co = view_of(out, 0);
                fv__view gi = view_of(in, 1), go = view_of(out, 1);
                RUN_BOTH(fv__net_ops_cpu.pool(g_cpu, &ci, &co, &p),
                         fv__net_ops_cuda.pool(g_ctx, &gi, &go, &p));
                char op[128], what[320];
                snprintf(op, sizeof op, "pool mode %d %dx%d stride %dx%d pad %d,%d dil %dx%d", mode,
                         p.r, p.s, p.stride_h, p.stride_w, p.pad_top, p.pad_left, p.dilation_h,
                         p.dilation_w);
                describe(what, sizeof what, op, &in->s, &out->s);
                tv_check(out, mode == FV_NET_POOL_MAX ? 0 : tol(2e-3), what);
                tv_free(in), tv_free(out);
            }
}

static void pool_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(36);
    for_each_dtype(pool_body);
}

static void global_pool_body(void) {
    const vs ins[] = {
        WHOLE(1, 7, 7, 512),       WHOLE(1, 7, 7, 1280), WHOLE(2, 5, 3, 13),
        WHOLE(1, 56, 56, 64),      WHOLE(2, 1, 1, 24),   SLICE(3, 9, 11, 16, 8, 32),
        SLICE(3, 9, 11, 5, 3, 16),
    };
    const vs outs[] = {
        WHOLE(1, 1, 1, 512), WHOLE(1, 1, 1, 1280),      WHOLE(2, 1, 1, 13),      WHOLE(1, 1, 1, 64),
        WHOLE(2, 1, 1, 24),  SLICE(3, 1, 1, 16, 8, 24), SLICE(3, 1, 1, 5, 0, 8),
    };
    for (int avg = 0; avg < 2; avg++)
        for (int k = 0; k < 7; k++) {
            tv *in = tv_new(ins[k]), *out = tv_new(outs[k]);
            tv_fill(in, -3, 5, 0);
            tv_sync(in), tv_sync(out);
            fv__view ci = view_of(in, 0), co = view_of(out, 0);
            fv__view gi = view_of(in, 1), go = view_of(out, 1);
            RUN_BOTH(fv__net_ops_cpu.global_pool(g_cpu, &ci, &co, avg),
                     fv__net_ops_cuda.global_pool(g_ctx, &gi, &go, avg));
            char what[256];
            describe(what, sizeof what, avg ? "global_pool avg" : "global_pool max", &in->s,
                     &out->s);
            tv_check(out, avg ? tol(2e-3) : 0, what);
            tv_free(in), tv_free(out);
        }
}

static void global_pool_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(37);
    for_each_dtype(global_pool_body);
}

/* ---- resize, pad, reshape --------------------------------------------------------- */

static void resize_body(void) {
    const int sizes[][4] = {{5, 7, 10, 14}, {5, 7, 8, 11}, {6, 9, 3, 4}, {5, 7, 1, 1}};
    const vs ins[] = {WHOLE(2, 0, 0, 13), SLICE(2, 0, 0, 5, 3, 16)};
    for (int mode = FV_NET_RESIZE_NEAREST; mode <= FV_NET_RESIZE_BILINEAR; mode++)
        for (int coord = 0; coord <= FV_NET_COORD_PYTORCH_HALF_PIXEL; coord++)
            for (int round = 0; round <= (mode ? 0 : FV_NET_NEAREST_CEIL); round++)
                for (int k = 0; k < 4; k++)
                    for (int li = 0; li < 2; li++) {
                        vs si = ins[li];
                        si.h = sizes[k][0], si.w = sizes[k][1];
                        const vs so = WHOLE(si.n, sizes[k][2], sizes[k][3], si.c);
                        fv__resize_params p = {.mode = mode,
                                               .coord = coord,
                                               .nearest = round,
                                               .scale_h = (float)so.h / (float)si.h,
                                               .scale_w = (float)so.w / (float)si.w};
                        tv *in = tv_new(si), *out = tv_new(so);
                        tv_fill(in, -4, 4, 0);
                        tv_sync(in), tv_sync(out);
                        fv__view ci = view_of(in, 0), co = view_of(out, 0);
                        fv__view gi = view_of(in, 1), go = view_of(out, 1);
                        RUN_BOTH(fv__net_ops_cpu.resize(g_cpu, &ci, &co, &p),
                                 fv__net_ops_cuda.resize(g_ctx, &gi, &go, &p));
                        char op[96], what[320];
                        snprintf(op, sizeof op, "resize %s coord %d round %d",
                                 mode ? "bilinear" : "nearest", coord, round);
                        describe(what, sizeof what, op, &in->s, &out->s);
                        tv_check(out, tol(2e-3), what);
                        tv_free(in), tv_free(out);
                    }
}

static void resize_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(38);
    for_each_dtype(resize_body);
}

static void pad_body(void) {
    const vs ins[] = {WHOLE(2, 5, 7, 13), SLICE(2, 5, 7, 5, 3, 16), SLICE(1, 4, 4, 16, 8, 32)};
    const vs outs[] = {WHOLE(2, 9, 10, 13), SLICE(2, 9, 10, 5, 11, 24), SLICE(1, 5, 9, 16, 16, 40)};
    const int tl[][2] = {{1, 2}, {3, 0}, {0, 4}};
    const float values[] = {0.0f, 0.5f, -1.0f};
    for (int k = 0; k < 3; k++)
        for (int vi = 0; vi < 3; vi++) {
            tv *in = tv_new(ins[k]), *out = tv_new(outs[k]);
            tv_fill(in, -4, 4, 0);
            tv_sync(in), tv_sync(out);
            fv__view ci = view_of(in, 0), co = view_of(out, 0);
            fv__view gi = view_of(in, 1), go = view_of(out, 1);
            RUN_BOTH(fv__net_ops_cpu.pad(g_cpu, &ci, &co, tl[k][0], tl[k][1], values[vi]),
                     fv__net_ops_cuda.pad(g_ctx, &gi, &go, tl[k][0], tl[k][1], values[vi]));
            char op[64], what[320];
            snprintf(op, sizeof op, "pad top %d left %d value %g", tl[k][0], tl[k][1], values[vi]);
            describe(what, sizeof what, op, &in->s, &out->s);
            tv_check(out, 0, what);
            tv_free(in), tv_free(out);
        }
}

static void pad_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(39);
    for_each_dtype(pad_body);
}

static void reshape_body(void) {
    /* (N, C, H, W) views as n, h, w, c */
    const vs ins[] = {WHOLE(2, 3, 4, 12), WHOLE(2, 3, 4, 12), WHOLE(2, 3, 4, 12),
                      SLICE(2, 3, 4, 12, 3, 16), WHOLE(1, 1, 1, 96)};
    const vs outs[] = {WHOLE(2, 6, 4, 6), WHOLE(2, 1, 1, 144), WHOLE(4, 3, 4, 6),
                       SLICE(1, 2, 2, 72, 5, 80), WHOLE(1, 4, 3, 8)};
    for (int k = 0; k < 5; k++) {
        tv *in = tv_new(ins[k]), *out = tv_new(outs[k]);
        tv_fill(in, -4, 4, 0);
        tv_sync(in), tv_sync(out);
        fv__view ci = view_of(in, 0), co = view_of(out, 0);
        fv__view gi = view_of(in, 1), go = view_of(out, 1);
        RUN_BOTH(fv__net_ops_cpu.reshape(g_cpu, &ci, &co),
                 fv__net_ops_cuda.reshape(g_ctx, &gi, &go));
        char what[256];
        describe(what, sizeof what, "reshape", &in->s, &out->s);
        tv_check(out, 0, what);
        tv_free(in), tv_free(out);
    }
}

static void reshape_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(40);
    for_each_dtype(reshape_body);
}

/* ---- conv_transpose ----------------------------------------------------------------- */

typedef struct tcase {
    vs in;
    int k; /* output channels */
    fv__convt_params p;
    int out_pad, bias;
    int out_off, out_ps; /* 0, 0: a whole buffer; else an odd slice (cw = k) */
} tcase;

static const tcase tcases[] = {
    /* r s sh sw dh dw pt pl groups act alpha beta */
    {WHOLE(2, 5, 6, 16), 8, {3, 3, 2, 2, 1, 1, 1, 1, 1, FV_ACT_RELU, 0, 0}, 1, 1, 0, 0},
    {WHOLE(2, 5, 6, 6), 5, {4, 3, 2, 3, 1, 2, 1, 0, 1, FV_ACT_IDENTITY, 0, 0}, 0, 0, 0, 0},
    {WHOLE(2, 5, 6, 8), 8, {4, 4, 2, 2, 1, 1, 1, 1, 8, FV_ACT_IDENTITY, 0, 0}, 0, 1, 0, 0},
    {WHOLE(2, 5, 6, 16), 16, {2, 2, 2, 2, 1, 1, 0, 0, 2, FV_ACT_LEAKY_RELU, 0.1f, 0}, 0, 1, 0, 0},
    {WHOLE(2, 5, 6, 6), 9, {3, 3, 1, 1, 1, 1, 1, 1, 3, FV_ACT_SIGMOID, 0, 0}, 0, 1, 0, 0},
    {SLICE(2, 5, 6, 16, 8, 32), 5, {3, 3, 2, 2, 1, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 0}, 1, 1, 3, 16},
};
#define N_TCASES (int)(sizeof tcases / sizeof tcases[0])

static void conv_transpose_body(void) {
    for (int k = 0; k < N_TCASES; k++) {
        const tcase *T = &tcases[k];
        const fv__convt_params *p = &T->p;
        const int oh = (T->in.h - 1) * p->stride_h - 2 * p->pad_top + p->dilation_h * (p->r - 1) +
                       T->out_pad + 1;
        const int ow = (T->in.w - 1) * p->stride_w - 2 * p->pad_left + p->dilation_w * (p->s - 1) +
                       T->out_pad + 1;
        vs so = WHOLE(T->in.n, oh, ow, T->k);
        if (T->out_ps) so.off = T->out_off, so.cw = T->k, so.ps = T->out_ps;
        const int nw = T->in.c * (T->k / p->groups) * p->r * p->s;
        float *w = malloc((size_t)nw * sizeof(float)), bias[16];
        assert_non_null(w);
        fv_test_fill_uniform(w, (size_t)nw, -0.5f, 0.5f);
        fv_test_fill_uniform(bias, 16, -1, 1);
        fv_tensor *dw = dev_floats(w, nw), *db = dev_floats(bias, 16);
        tv *in = tv_new(T->in), *out = tv_new(so);
        tv_fill(in, -1, 1, 0);
        tv_sync(in), tv_sync(out);
        fv__view ci = view_of(in, 0), co = view_of(out, 0);
        fv__view gi = view_of(in, 1), go = view_of(out, 1);
        RUN_BOTH(fv__net_ops_cpu.conv_transpose(g_cpu, &ci, &co, p, w, T->bias ? bias : NULL),
                 fv__net_ops_cuda.conv_transpose(g_ctx, &gi, &go, p, fv__tensor_ptr(dw),
                                                 T->bias ? fv__tensor_ptr(db) : NULL));
        char op[128], what[320];
        snprintf(op, sizeof op,
                 "conv_transpose %dx%d stride %dx%d dil %dx%d pad %d,%d groups %d %s%s", p->r, p->s,
                 p->stride_h, p->stride_w, p->dilation_h, p->dilation_w, p->pad_top, p->pad_left,
                 p->groups, fv_activation_name((fv_activation)p->act), T->bias ? " bias" : "");
        describe(what, sizeof what, op, &in->s, &out->s);
        tv_check(out, tol(2e-3), what);
        tv_free(in), tv_free(out);
        fv_tensor_destroy(dw), fv_tensor_destroy(db);
        free(w);
    }
}

static void conv_transpose_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(41);
    for_each_dtype(conv_transpose_body);
}

/* Larger than one launch's grid covers at once: the grid-stride loops, and
 * softmax's pixel loop (a warp a pixel at C = 32 on F32). */
static void large_matches_cpu(void **state) {
    (void)state;
    g_dt = FV_DTYPE_F32;
    fv_test_seed(42);
    const vs s = WHOLE(1, 725, 725, 32); /* 16.8 M elements, 525 K pixels */
    tv *in = tv_new(s), *out = tv_new(s);
    tv_fill(in, -4, 4, 0);
    tv_sync(in);
    for (int k = 0; k < 2; k++) {
        tv_sync(out);
        fv__view ci = view_of(in, 0), co = view_of(out, 0);
        fv__view gi = view_of(in, 1), go = view_of(out, 1);
        if (k == 0)
            RUN_BOTH(fv__net_ops_cpu.softmax(g_cpu, &ci, &co),
                     fv__net_ops_cuda.softmax(g_ctx, &gi, &go));
        else
            RUN_BOTH(fv__net_ops_cpu.act(g_cpu, &ci, &co, FV_ACT_RELU, 0, 0),
                     fv__net_ops_cuda.act(g_ctx, &gi, &go, FV_ACT_RELU, 0, 0));
        char what[256];
        describe(what, sizeof what, k ? "large act relu" : "large softmax", &in->s, &out->s);
        tv_check(out, tol(2e-3), what);
    }
    tv_free(in), tv_free(out);
}

int main(void) {
    g_ctx = fv_test_gpu_context_or_skip();
    g_cpu = fv_test_cpu_context(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(act_matches_cpu),
        cmocka_unit_test(affine_matches_cpu),
        cmocka_unit_test(copy_matches_cpu),
        cmocka_unit_test(softmax_matches_cpu),
        cmocka_unit_test(binary_matches_cpu),
        cmocka_unit_test(pool_matches_cpu),
        cmocka_unit_test(global_pool_matches_cpu),
        cmocka_unit_test(resize_matches_cpu),
        cmocka_unit_test(pad_matches_cpu),
        cmocka_unit_test(reshape_matches_cpu),
        cmocka_unit_test(conv_transpose_matches_cpu),
        cmocka_unit_test(large_matches_cpu),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(g_cpu);
    fv_context_destroy(g_ctx);
    return failed;
}

#else

int main(void) {
    printf("SKIP: built without CUDA\n");
    return 77;
}

#endif
