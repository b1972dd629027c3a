/* One benchmark case: a shape's data, its fovea tensors and FP32 reference,
 * and the runs of fovea and legacy cuDNN on it. Every run is checked
 * against the reference (output poisoned first) before it is timed; a run
 * that fails its check is not timed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_conv.h"

#if FV_BUILT_WITH_CUDA
#include <cudnn.h>

#define FAIL(what, s) bc_fv_fail(what, s)

void bc_case_destroy(bc_case *c) {
    for (int i = 0; i < c->nsets; i++) {
        if (c->x) free(c->x[i]);
        if (c->in) fv_tensor_destroy(c->in[i]);
        if (c->out) fv_tensor_destroy(c->out[i]);
    }
    free(c->x);
    free(c->in);
    free(c->out);
    free(c->w);
    free(c->bias);
    free(c->ref);
    free(c->y);
    free(c->want);
    free(c->hb);
    memset(c, 0, sizeof *c);
}

static int upload(const bc_env *e, bc_case *c, fv_tensor *t, const float *x, size_t n) {
    fv_f32_to_f16_n(x, c->hb, n);
    fv_status s = fv_tensor_upload(e->ctx, t, c->hb, n * 2);
    if (s == FV_OK) s = fv_context_synchronize(e->ctx); /* hb is reused */
    return s != FV_OK ? FAIL("fv_tensor_upload", s) : 0;
}

static int poison(const bc_env *e, bc_case *c, fv_tensor *t) {
    for (size_t i = 0; i < c->yn; i++)
        c->hb[i] = 0x7e00; /* NaN */
    fv_status s = fv_tensor_upload(e->ctx, t, c->hb, c->yn * 2);
    if (s == FV_OK) s = fv_context_synchronize(e->ctx);
    return s != FV_OK ? FAIL("fv_tensor_upload (poison)", s) : 0;
}

static int download(const bc_env *e, bc_case *c, const fv_tensor *t, float *y) {
    fv_status s = fv_tensor_download(e->ctx, t, c->hb, c->yn * 2);
    if (s == FV_OK) s = fv_context_synchronize(e->ctx);
    if (s != FV_OK) return FAIL("fv_tensor_download", s);
    fv_f16_to_f32_n(c->hb, y, c->yn);
    return 0;
}

int bc_device_ok(void) {
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess) err = cudaGetLastError();
    if (err == cudaSuccess) return 0;
    fprintf(stderr, "fovea-bench: the device is in error: %s (%s); stopping\n",
            cudaGetErrorName(err), cudaGetErrorString(err));
    return 1;
}

/* FP32, FMA math: NHWC float tensors, else NCHW; the heuristics' algorithms
 * in order until one runs. */
static int reference(const bc_env *e, bc_case *c) {
    for (int nchw = 0; nchw < 2; nchw++) {
        lc_desc d = {.shape = c->s, .f32 = 1, .nchw = nchw, .math = CUDNN_FMA_MATH, .nsets = 1};
        lc_conv *lc = NULL;
        int order[LC_ALGO_COUNT], n = 0, done = 0;
        if (!lc_create(&d, &lc) && !lc_upload(lc, 0, c->x[0], c->w))
            n = lc_heuristic_order(lc, order);
        for (int i = 0; i < n && !done; i++)
            if (lc_set_algo(lc, order[i]) == 0 && lc_forward(lc, 0) == 0 &&
                !lc_download(lc, 0, c->ref))
                done = 1;
        lc_destroy(lc);
        if (done) return 0;
        if (bc_device_ok()) return 1;
    }
    fprintf(stderr, "fovea-bench: %s: no FP32 reference: legacy cuDNN ran no algorithm\n",
            c->s.name);
    return 1;
}

int bc_case_create(const bc_env *e, const bc_shape *s, int with_ref, bc_case *c) {
    memset(c, 0, sizeof *c);
    c->s = *s;
    c->p = bc_out_dim(s->h, s->r, s->stride, s->pad);
    c->q = bc_out_dim(s->w, s->s, s->stride, s->pad);
    if (c->p <= 0 || c->q <= 0) {
        fprintf(stderr, "fovea-bench: %s: the window does not fit\n", s->name);
        return 1;
    }
    c->nsets = bc_nsets(e, s);
    c->xn = (size_t)s->n * s->h * s->w * s->c;
    c->yn = (size_t)s->n * c->p * c->q * s->k;
    c->wn = (size_t)s->k * s->c * s->r * s->s;
    size_t most = c->xn > c->yn ? c->xn : c->yn;
    c->x = calloc((size_t)c->nsets, sizeof *c->x);
    c->in = calloc((size_t)c->nsets, sizeof *c->in);
    c->out = calloc((size_t)c->nsets, sizeof *c->out);
    c->w = malloc(c->wn * 4);
    c->bias = malloc((size_t)s->k * 4);
    c->y = malloc(c->yn * 4);
    c->want = malloc(c->yn * 4);
    c->hb = malloc(most * 2);
    if (with_ref) c->ref = malloc(c->yn * 4);
    if (!c->x || !c->in || !c->out || !c->w || !c->bias || !c->y || !c->want || !c->hb ||
        (with_ref && !c->ref))
        goto oom;
    /* weights scaled so that outputs are O(1): far from FP16's range limits */
    float a = sqrtf(3.0f / (float)(s->c * s->r * s->s));
    bc_fill_random(c->w, c->wn, -a, a);
    bc_fill_random(c->bias, (size_t)s->k, -0.5f, 0.5f);
    fv_tensor_desc ti = {.dtype = FV_DTYPE_F16, .n = s->n, .h = s->h, .w = s->w, .c = s->c};
    fv_tensor_desc to = {.dtype = FV_DTYPE_F16, .n = s->n, .h = c->p, .w = c->q, .c = s->k};
    for (int i = 0; i < c->nsets; i++) {
        if (!(c->x[i] = malloc(c->xn * 4))) goto oom;
        bc_fill_random(c->x[i], c->xn, -1.0f, 1.0f);
        fv_status st = fv_tensor_create(e->ctx, &ti, &c->in[i]);
        if (st == FV_OK) st = fv_tensor_create(e->ctx, &to, &c->out[i]);
        if (st != FV_OK) return FAIL("fv_tensor_create", st);
        if (upload(e, c, c->in[i], c->x[i], c->xn)) return 1;
    }
    return with_ref ? reference(e, c) : 0;
oom:
    fprintf(stderr, "fovea-bench: %s: out of host memory\n", s->name);
    return 1;
}

/* ---- fovea ------------------------------------------------------------------- */
typedef struct fovea_arg {
    fv_conv2d *op;
    bc_case *c;
    fv_status s;
} fovea_arg;

static int fovea_fn(void *arg, int set) {
    fovea_arg *a = arg;
    a->s = fv_conv2d_forward(a->op, a->c->in[set], a->c->out[set]);
    return a->s != FV_OK ? FAIL("fv_conv2d_forward", a->s) : 0;
}

static void expected(const bc_case *c, int fused, float *want) {
    int k = c->s.k;
    for (size_t i = 0; i < c->yn; i++) {
        float v = c->ref[i];
        if (fused) {
            v += c->bias[i % (size_t)k];
            v = v > 0.0f ? v : 0.0f;
        }
        want[i] = v;
    }
}

int bc_run_fovea(const bc_env *e, bc_case *c, uint32_t flags, int fused, bc_result *r) {
    return bc_run_fovea_ex(e, c, flags, fused, NULL, NULL, r);
}

int bc_run_fovea_ex(const bc_env *e, bc_case *c, uint32_t flags, int fused, fv_conv2d *pair,
                    fv_conv2d **keep, bc_result *r) {
    const bc_shape *s = &c->s;
    if (keep) *keep = NULL;
    memset(r, 0, sizeof *r);
    r->ran = 1;
    r->err = -1;
    fv_conv2d_desc d = bc_desc(s, FV_DTYPE_F16, c->w);
    d.activation = fused ? FV_ACT_RELU : FV_ACT_IDENTITY;
    d.bias = fused ? c->bias : NULL;
    d.flags = flags;
    fv_conv2d *op = NULL;
    double t0 = bc_now_ms();
    fv_status st = fv_conv2d_create(e->ctx, &d, &op);
    r->create_ms = bc_now_ms() - t0;
    if (st != FV_OK) { /* reported, not fatal: the next variant or shape may work */
        snprintf(r->why, sizeof r->why, "create: %s: %s", fv_status_name(st), fv_last_error());
        fprintf(stderr, "fovea-bench: %s: fv_conv2d_create: %s\n", s->name, r->why);
        return 0;
    }
    fv_conv2d_info_get(op, &r->info);
    fovea_arg a = {.op = op, .c = c};
    int rc = 0;
    if (c->ref) {
        if ((rc = poison(e, c, c->out[0])) || (rc = fovea_fn(&a, 0)) ||
            (rc = download(e, c, c->out[0], c->y)))
            goto done;
        expected(c, fused, c->want);
        r->err = bc_rel_l2(c->y, c->want, c->yn);
        if (!(r->err <= e->tol)) {
            snprintf(r->why, sizeof r->why, "relative L2 error %.3g > %.3g: not timed", r->err,
                     e->tol);
            fprintf(stderr, "fovea-bench: %s: fovea (%s): %s\n", s->name, r->info.engine, r->why);
            goto done;
        }
    }
    if (pair) {
        fovea_arg b = {.op = pair, .c = c};
        if ((rc = bc_time_pair(e, c->nsets, fovea_fn, &a, fovea_fn, &b, &r->t, &r->pair)))
            goto done;
    } else if ((rc = bc_time(e, c->nsets, fovea_fn, &a, &r->t))) {
        goto done;
    }
    r->ok = 1;
done:
    if (rc) snprintf(r->why, sizeof r->why, "failed while running (see the log)");
    fv_context_synchronize(e->ctx);
    if (keep && r->ok) {
        *keep = op;
        return rc;
    }
    fv_conv2d_destroy(op);
    return rc;
}

/* ---- legacy cuDNN ------------------------------------------------------------ */
int bc_run_legacy_desc(const bc_env *e, bc_case *c, const lc_desc *d, double tol, bc_result *r) {
    memset(r, 0, sizeof *r);
    r->ran = 1;
    r->err = -1;
    r->algo = -1;
    lc_conv *lc = NULL;
    lc_algo_perf perf[LC_ALGO_COUNT];
    int order[LC_ALGO_COUNT], n = 0;
    size_t used = 0;
    int rc = lc_create(d, &lc);
    for (int i = 0; !rc && i < d->nsets; i++)
        rc = lc_upload(lc, i, c->x[i], i == 0 ? c->w : NULL);
    if (rc) goto done;
    double t0 = bc_now_ms();
    if (lc_find(lc, perf) || (n = lc_find_order(perf, order)) == 0) {
        snprintf(r->why, sizeof r->why, "Find found no algorithm");
        goto done;
    }
    r->create_ms = bc_now_ms() - t0;
    /* the fastest algorithm whose output is right */
    for (int i = 0; i < n && !r->ok; i++) {
        int a = order[i], st = lc_set_algo(lc, a);
        r->algo = a;
        r->math = perf[a].math;
        r->find_ms = perf[a].find_ms;
        r->workspace = lc_algo_workspace(lc);
        double err = -1;
        if (st == 0 && !c->ref) { /* nothing to check against */
            r->ok = 1;
            break;
        }
        if (st == 0 && (rc = lc_poison(lc, 0)) != 0) goto done;
        if (st == 0) st = lc_forward(lc, 0);
        if (st == 0) {
            if ((rc = lc_download(lc, 0, c->y)) != 0) goto done;
            err = bc_rel_l2(c->y, c->ref, c->yn);
            if (err <= tol) {
                r->err = err;
                r->ok = 1;
                break;
            }
        }
        int w = snprintf(r->why + used, sizeof r->why - used, "%s%s %s", used ? "; " : "",
                         lc_algo_name(a), st ? lc_status_name(st) : "");
        if (w > 0 && (size_t)w < sizeof r->why - used) used += (size_t)w;
        if (st == 0) {
            w = snprintf(r->why + used, sizeof r->why - used, "error %.3g > %.3g", err, tol);
            if (w > 0 && (size_t)w < sizeof r->why - used) used += (size_t)w;
        }
    }
    if (!r->ok) {
        fprintf(stderr, "fovea-bench: %s: legacy: no algorithm passed the check: %s\n", c->s.name,
                r->why);
        goto done;
    }
    if ((rc = bc_time(e, d->nsets, lc_forward_fn, lc, &r->t)) != 0) r->ok = 0;
done:
    if (rc) snprintf(r->why, sizeof r->why, "failed while running (see the log)");
    cudaStreamSynchronize(e->stream);
    lc_destroy(lc);
    return rc;
}

int bc_run_legacy(const bc_env *e, bc_case *c, bc_result *r) {
    lc_desc d = {.shape = c->s, .math = CUDNN_TENSOR_OP_MATH, .nsets = c->nsets};
    return bc_run_legacy_desc(e, c, &d, e->tol, r);
}

/* ---- self-test of the reference ------------------------------------------------ */
static int cpu_conv(const bc_case *c, float *y) {
    fv_context_desc cd = {.backend = FV_BACKEND_CPU};
    fv_context *ctx = NULL;
    fv_conv2d *op = NULL;
    fv_tensor *in = NULL, *out = NULL;
    const bc_shape *s = &c->s;
    fv_conv2d_desc d = bc_desc(s, FV_DTYPE_F32, c->w);
    fv_tensor_desc ti = {.dtype = FV_DTYPE_F32, .n = s->n, .h = s->h, .w = s->w, .c = s->c};
    fv_tensor_desc to = {.dtype = FV_DTYPE_F32, .n = s->n, .h = c->p, .w = c->q, .c = s->k};
    fv_status st = fv_context_create(&cd, &ctx);
    if (st == FV_OK) st = fv_conv2d_create(ctx, &d, &op);
    if (st == FV_OK) st = fv_tensor_create(ctx, &ti, &in);
    if (st == FV_OK) st = fv_tensor_create(ctx, &to, &out);
    if (st == FV_OK) st = fv_tensor_upload(ctx, in, c->x[0], c->xn * 4);
    if (st == FV_OK) st = fv_conv2d_forward(op, in, out);
    if (st == FV_OK) st = fv_tensor_download(ctx, out, y, c->yn * 4);
    if (st == FV_OK) st = fv_context_synchronize(ctx);
    int rc = st != FV_OK ? FAIL("CPU reference conv", st) : 0;
    fv_tensor_destroy(in);
    fv_tensor_destroy(out);
    fv_conv2d_destroy(op);
    fv_context_destroy(ctx);
    return rc;
}

int bc_selftest(const bc_env *e, char *summary, size_t n) {
    static const bc_shape shapes[] = {
        {"self 19x23x16->24 3x3", 1, 19, 23, 16, 24, 3, 3, 1, 1, -1},
        {"self 2x17x20x8->16 5x5/2", 2, 17, 20, 8, 16, 5, 5, 2, 2, -1},
        {"self 16x16x3->8 3x3", 1, 16, 16, 3, 8, 3, 3, 1, 1, -1},
    };
    int bad = 0;
    size_t used = 0;
    summary[0] = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        bc_case c;
        bc_result rf, rl;
        double cpu_err = INFINITY;
        int rc = bc_case_create(e, &shapes[i], 1, &c);
        float *cpu = rc ? NULL : malloc(c.yn * 4);
        if (!rc && cpu && !cpu_conv(&c, cpu)) cpu_err = bc_rel_l2(c.ref, cpu, c.yn);
        if (!rc) rc = bc_run_fovea(e, &c, FV_CONV2D_NO_PROFILE, 0, &rf);
        if (!rc) rc = bc_run_legacy(e, &c, &rl);
        /* the FP32 reference and the FP32 CPU backend compute the same sums */
        int ok = !rc && cpu_err <= 1e-4;
        bad |= !ok;
        int w = snprintf(summary + used, n - used,
                         "%s%s: reference vs CPU backend %.2g%s, fovea %.2g, legacy %.2g",
                         i ? "; " : "", shapes[i].name, cpu_err, ok ? "" : " (WRONG)",
                         rc ? -1.0 : rf.err, rc ? -1.0 : rl.err);
        if (w > 0 && (size_t)w < n - used) used += (size_t)w;
        free(cpu);
        bc_case_destroy(&c);
    }
    printf("self-test: %s\n", summary);
    if (bad)
        fprintf(stderr, "fovea-bench: the FP32 legacy-cuDNN reference disagrees with fovea's CPU "
                        "backend: no check of this benchmark would mean anything; stopping\n");
    return bad;
}
#endif /* FV_BUILT_WITH_CUDA */
