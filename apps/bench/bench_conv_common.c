/* Shared pieces of the GPU convolution benchmarks: timing with CUDA events,
 * error norms, random data, and one "case" (a shape with its host data,
 * fovea tensors and FP32 reference) run through fovea or legacy cuDNN with
 * the output checked before anything is timed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_conv.h"

#if FV_BUILT_WITH_CUDA
#include "fovea/fovea_cuda.h"

int bc_out_dim(int in, int kernel, int stride, int pad) {
    return fv_conv_output_dim(in, kernel, stride, pad, 1);
}

double bc_gflop(const bc_shape *s) {
    double p = bc_out_dim(s->h, s->r, s->stride, s->pad);
    double q = bc_out_dim(s->w, s->s, s->stride, s->pad);
    return 2.0 * s->n * p * q * s->k * s->c * s->r * s->s * 1e-9;
}

double bc_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

void bc_sleep_ms(double ms) {
    if (ms <= 0) return;
    struct timespec t = {(time_t)(ms / 1e3), (long)((ms - 1e3 * (double)(time_t)(ms / 1e3)) * 1e6)};
    while (nanosleep(&t, &t) != 0) {
    }
}

int bc_fv_fail(const char *what, fv_status s) {
    fprintf(stderr, "fovea-bench: %s: %s: %s\n", what, fv_status_name(s), fv_last_error());
    return 1;
}

static int cu_check(cudaError_t e, const char *call, int line) {
    if (e == cudaSuccess) return 0;
    fprintf(stderr, "fovea-bench: %s failed: %s (%s) at %s:%d\n", call, cudaGetErrorName(e),
            cudaGetErrorString(e), __FILE__, line);
    return 1;
}
#define CU(call) cu_check((call), #call, __LINE__)

int bc_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_sorted(const double *t, int n) {
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Median, min and mean of samples whose events are ev[2 * (i * stride +
 * off)] .. ev[... + 1], i < iters, of the turns i of parity `parity` only
 * when it is 0 or 1 (then only the median is set); t: scratch for iters
 * values. */
static int summarize(cudaEvent_t *ev, int iters, int stride, int off, int parity, double *t,
                     bc_timing *out) {
    double sum = 0;
    int n = 0;
    for (int i = 0; i < iters; i++) {
        if (parity >= 0 && (i & 1) != parity) continue;
        float ms = 0;
        int k = 2 * (i * stride + off);
        if (CU(cudaEventElapsedTime(&ms, ev[k], ev[k + 1]))) return 1;
        t[n++] = ms;
        sum += ms;
    }
    if (n == 0) return 1;
    qsort(t, (size_t)n, sizeof *t, bc_cmp_double);
    out->median_ms = median_sorted(t, n);
    if (parity >= 0) return 0;
    out->min_ms = t[0];
    out->mean_ms = sum / n;
    out->iters = n;
    return 0;
}

/* The timing loop of bc_time (nf 1) and bc_time_pair (nf 2): sample i of
 * function j runs between ev[2 (i nf + j)] and the next event; the L2
 * scrub (flush mode) runs before each, outside it. With nf 2 the odd turns
 * run the functions in reverse order, and each function's first_ms and
 * second_ms are the medians of its calls in each position. */
static int time_fns(const bc_env *e, int nsets, int nf, int (*const *fn)(void *, int),
                    void *const *arg, bc_timing *out) {
    int iters = e->iters, rc = 1, nev = 2 * iters * nf;
    for (int j = 0; j < nf; j++)
        memset(&out[j], 0, sizeof out[j]);
    cudaEvent_t *ev = calloc((size_t)nev, sizeof *ev);
    double *t = malloc(sizeof *t * (size_t)iters);
    if (!ev || !t) goto done;
    for (int i = 0; i < nev; i++)
        if (CU(cudaEventCreate(&ev[i]))) goto done;
    for (int i = 0; i < e->warmup; i++)
        for (int j = 0; j < nf; j++) {
            if (e->flush && CU(cudaMemsetAsync(e->flush, i & 0xff, e->flush_bytes, e->stream)))
                goto done;
            if (fn[j](arg[j], i % nsets)) goto done;
        }
    for (int i = 0; i < iters; i++)
        for (int pos = 0; pos < nf; pos++) {
            int j = nf == 2 && (i & 1) ? nf - 1 - pos : pos, k = 2 * (i * nf + j);
            if (e->flush && CU(cudaMemsetAsync(e->flush, i & 0xff, e->flush_bytes, e->stream)))
                goto done;
            if (CU(cudaEventRecord(ev[k], e->stream))) goto done;
            if (fn[j](arg[j], i % nsets)) goto done;
            if (CU(cudaEventRecord(ev[k + 1], e->stream))) goto done;
        }
    /* the stream, not ev[nev - 1]: in a reversed turn that event is not the
     * last one recorded */
    if (CU(cudaStreamSynchronize(e->stream))) goto done;
    for (int j = 0; j < nf; j++) {
        if (summarize(ev, iters, nf, j, -1, t, &out[j])) goto done;
        if (nf != 2 || iters < 2) continue;
        /* function j runs first in the turns of parity j */
        bc_timing pos;
        if (summarize(ev, iters, nf, j, j, t, &pos)) goto done;
        out[j].first_ms = pos.median_ms;
        if (summarize(ev, iters, nf, j, 1 - j, t, &pos)) goto done;
        out[j].second_ms = pos.median_ms;
    }
    rc = 0;
done:
    if (ev)
        for (int i = 0; i < nev; i++)
            if (ev[i]) cudaEventDestroy(ev[i]);
    free(ev);
    free(t);
    return rc;
}

int bc_time(const bc_env *e, int nsets, int (*fn)(void *arg, int set), void *arg, bc_timing *out) {
    int (*const fns[1])(void *, int) = {fn};
    void *const args[1] = {arg};
    return time_fns(e, nsets, 1, fns, args, out);
}

int bc_time_pair(const bc_env *e, int nsets, int (*fa)(void *arg, int set), void *aa,
                 int (*fb)(void *arg, int set), void *ab, bc_timing *out_a, bc_timing *out_b) {
    int (*const fns[2])(void *, int) = {fa, fb};
    void *const args[2] = {aa, ab};
    bc_timing out[2];
    int rc = time_fns(e, nsets, 2, fns, args, out);
    *out_a = out[0];
    *out_b = out[1];
    return rc;
}

double bc_pair_ratio(const bc_timing *a, const bc_timing *b) {
    if (a->first_ms > 0 && a->second_ms > 0 && b->first_ms > 0 && b->second_ms > 0)
        return sqrt(a->first_ms / b->first_ms * (a->second_ms / b->second_ms));
    return a->median_ms / b->median_ms;
}

double bc_rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) return INFINITY;
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
void bc_fill_random(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        double u = (double)(z >> 11) / 9007199254740992.0;
        float v = fv_round_f16((float)(lo + (hi - lo) * u));
        x[i] = v != 0.0f ? v : fv_round_f16(0.5f * hi); /* never zero */
    }
}

/* ---- the environment ------------------------------------------------------ */
/* --candidates: the context's debug messages that time autotune's
 * candidates, one line each on stderr. */
static void log_candidates(fv_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    if (!strncmp(msg, "autotune: ", 10)) fprintf(stderr, "  %s\n", msg);
}

int bc_env_open(bc_env *e, const bc_opts *o, const char *profile, size_t pool_bytes) {
    memset(e, 0, sizeof *e);
    e->warmup = o->warmup;
    e->iters = o->iters;
    e->tol = o->tol;
    e->ws_limit = o->ws_limit;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA,
                          .device_pool_bytes = pool_bytes,
                          .workspace_limit_bytes = o->ws_limit,
                          .profile_path = profile,
                          .log = o->candidates ? log_candidates : NULL,
                          .log_level = o->candidates ? FV_LOG_DEBUG : FV_LOG_ERROR};
    fv_status s = fv_context_create(&cd, &e->ctx);
    if (s == FV_ERR_NO_DEVICE) {
        fprintf(stderr, "fovea-bench: this benchmark needs a GPU: %s\n", fv_last_error());
        return 2;
    }
    if (s != FV_OK) return bc_fv_fail("fv_context_create (CUDA)", s);
    if ((s = fv_context_info_get(e->ctx, &e->info)) != FV_OK ||
        (s = fv_context_cuda_stream(e->ctx, &e->stream)) != FV_OK) {
        bc_fv_fail("context info", s);
        goto fail;
    }
    int l2 = 0;
    if (CU(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, e->info.device_index))) goto fail;
    e->l2_bytes = (size_t)l2;
    if (o->flush) { /* twice the L2: every line the conv touched before is gone */
        e->flush_bytes = 2 * e->l2_bytes;
        if (CU(cudaMalloc(&e->flush, e->flush_bytes))) goto fail;
    }
    if (lc_init(e->stream, o->ws_limit)) goto fail;
    e->cudnn_version = lc_cudnn_version();
    snprintf(e->cudnn_lib, sizeof e->cudnn_lib, "%s", lc_cudnn_library());
    return 0;
fail:
    bc_env_close(e);
    return 1;
}

void bc_env_close(bc_env *e) {
    lc_shutdown();
    if (e->flush) cudaFree(e->flush);
    fv_context_destroy(e->ctx);
    e->ctx = NULL;
    e->flush = NULL;
}

size_t bc_stored_bytes(const bc_shape *s, int out) {
    int p = bc_out_dim(s->h, s->r, s->stride, s->pad),
        q = bc_out_dim(s->w, s->s, s->stride, s->pad);
    size_t c = out ? (size_t)(s->k + 7) / 8 * 8 : (size_t)(s->c + 7) / 8 * 8;
    return out ? (size_t)s->n * p * q * c * 2 : (size_t)s->n * s->h * s->w * c * 2;
}

fv_conv2d_desc bc_desc(const bc_shape *s, fv_dtype dtype, const float *weights) {
    return (fv_conv2d_desc){.n = s->n,
                            .h = s->h,
                            .w = s->w,
                            .c = s->c,
                            .k = s->k,
                            .r = s->r,
                            .s = s->s,
                            .stride_h = s->stride,
                            .stride_w = s->stride,
                            .pad_h = s->pad,
                            .pad_w = s->pad,
                            .dtype = dtype,
                            .weights = weights};
}

int bc_nsets(const bc_env *e, const bc_shape *s) {
    if (e->flush) return 1;
    size_t b = bc_stored_bytes(s, 0) + bc_stored_bytes(s, 1);
    if (b >= 2 * e->l2_bytes) return 1;
    size_t n = (2 * e->l2_bytes + b - 1) / b + 1;
    return n > BC_MAX_SETS ? BC_MAX_SETS : (int)n;
}
#endif /* FV_BUILT_WITH_CUDA */
