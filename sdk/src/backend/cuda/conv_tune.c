/* Autotuning: run each candidate on random data and time it with CUDA
 * events (warm-up first, then the median of several runs). Scratch input and
 * output are carved from the device pool for the duration and returned. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv_engine.h"
#include "kernels/conv_epilogue.cuh"

#define TUNE_WARMUP 3
#define TUNE_RUNS   11
/* The finalists (within REFINE_SPAN of the best, at most REFINE_MAX) are
 * timed again: REFINE_ROUNDS rounds, each a block of REFINE_BLOCK runs of
 * every finalist in turn, after one untimed call (11 runs of a 7 us op, back
 * to back, can land in one mode of a spread that the op's later use does
 * not). Blocks, not single calls in turn: on the H100, cuDNN's runtime-fusion
 * plans run a call after another plan's at 0.049 ms instead of 0.014
 * (128x128x128->128 3x3), a cost of switching that timing would then pick
 * on. */
#define REFINE_MAX    4
#define REFINE_ROUNDS 4
#define REFINE_BLOCK  8
#define REFINE_SPAN   1.10f

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

cudnnStatus_t fv__conv_variant_pack(const void *x, const void *w, void *y, const void *b,
                                    const void *z, void *ws, fv__bdesc *vp) {
    int64_t uids[5] = {1, 2, 4}; /* X, W, Y, then B and Z when bound */
    void *ptrs[5] = {(void *)x, (void *)w, y};
    int64_t n = 3;
    if (b) uids[n] = 3, ptrs[n++] = (void *)b;
    if (z) uids[n] = 7, ptrs[n++] = (void *)z;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, vp);
    if (!s)
        s = cudnnBackendSetAttribute(*vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n,
                                     uids);
    if (!s)
        s = cudnnBackendSetAttribute(*vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                     CUDNN_TYPE_VOID_PTR, n, ptrs);
    if (!s)
        s = cudnnBackendSetAttribute(*vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                     &ws);
    if (!s) s = cudnnBackendFinalize(*vp);
    if (s && *vp) {
        cudnnBackendDestroyDescriptor(*vp);
        *vp = NULL;
    }
    return s;
}

fv_status fv__conv_run(fv_conv2d *op, const fv__conv_cand *c, const fv__conv_legacy *l,
                       fv__bdesc vp, const void *x, void *y, const void *z, const void *w,
                       const void *b, void *ws) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    cudnnHandle_t h = fv__cuda_cudnn(ctx);
    size_t pixels = (size_t)d->n * op->p * op->q;
    /* SM 9.0+: fovea's kernels and the epilogues launch as programmatic
     * dependents (no launch gap) */
    int early = fv__cuda_state_of(ctx)->pdl;
    if (c->path == FV__PATH_GRAPH_SPLIT) {
        FV_CUDNN_TRY(cudnnBackendExecute(h, c->plan, vp));
        return fv__cuda_conv_epilogue(fv__cuda_stream(ctx), y, pixels, c->f.kp, c->f.ys, d->k,
                                      op->has_bias ? b : NULL, z, d->activation,
                                      d->activation_alpha, early);
    }
    if (c->path == FV__PATH_GRAPH || c->path == FV__PATH_GRAPH_PW ||
        c->path == FV__PATH_GRAPH_PW16) {
        FV_CUDNN_TRY(cudnnBackendExecute(h, c->plan, vp));
        if (d->activation == FV_ACT_SIGMOID && c->f.kp > d->k)
            return fv__cuda_conv_epilogue(fv__cuda_stream(ctx), y, pixels, c->f.kp, c->f.ys, d->k,
                                          NULL, NULL, FV_ACT_IDENTITY, 0.0f, early);
        return FV_OK;
    }
    /* fovea's kernels: with a residual, the bias inside, then the add and
     * the activation in the epilogue */
    fv_activation kact = z ? FV_ACT_IDENTITY : d->activation;
    if (c->path == FV__PATH_DIRECT || c->path == FV__PATH_GEMM) {
        const void *bf = op->has_bias ? fv__conv_bias_f32(b, c->f.kp) : NULL;
        if (c->path == FV__PATH_DIRECT)
            FV_TRY(fv__conv_direct_run(fv__cuda_stream(ctx), &c->dg, x, y, w, bf, kact,
                                       d->activation_alpha, early));
        else
            FV_TRY(fv__conv_gemm_run(fv__cuda_stream(ctx), &c->gg, x, y, w, bf, kact,
                                     d->activation_alpha, ws, early));
        if (!z) return FV_OK;
        return fv__cuda_conv_epilogue(fv__cuda_stream(ctx), y, pixels, c->f.kp, c->f.ys, d->k, NULL,
                                      z, d->activation, d->activation_alpha, early);
    }
    float alpha = 1.0f, beta = 0.0f, alpha2 = z ? 1.0f : 0.0f;
    if (c->path == FV__PATH_LEGACY_FUSED) {
        /* y = act(1 * conv(x, w) + alpha2 * z + b); without a residual z is
         * y with alpha2 0 (cuDNN wants a z tensor even then) */
        FV_CUDNN_TRY(cudnnConvolutionBiasActivationForward(h, &alpha, l->x, x, l->w, w, l->c,
                                                           c->algo, ws, c->ws, &alpha2, l->y,
                                                           z ? z : y, l->b, b, l->act, l->y, y));
        if (d->activation == FV_ACT_SIGMOID && c->f.kp > d->k)
            return fv__cuda_conv_epilogue(fv__cuda_stream(ctx), y, pixels, c->f.kp, c->f.ys, d->k,
                                          NULL, NULL, FV_ACT_IDENTITY, 0.0f, early);
        return FV_OK;
    }
    FV_CUDNN_TRY(cudnnConvolutionForward(h, &alpha, l->x, x, l->w, w, l->c, c->algo, ws, c->ws,
                                         &beta, l->y, y));
    return fv__cuda_conv_epilogue(fv__cuda_stream(ctx), y, pixels, c->f.kp, c->f.ys, d->k,
                                  op->has_bias ? b : NULL, z, d->activation, d->activation_alpha,
                                  early);
}

/* Where autotuning runs a candidate: scratch tensors carved for it, the
 * weights and bias, the workspace, the L2 scrubber (NULL: timing warm) and
 * a pair of events. */
typedef struct tune_bench {
    const void *x, *w, *b, *z; /* z: the residual scratch (FV_CONV2D_RESIDUAL), else NULL */
    void *y, *ws, *scrub;
    size_t scrub_bytes;
    cudaEvent_t e0, e1;
} tune_bench;

/* The variant pack graph candidate c runs with on tb (*vp NULL for the
 * other paths). */
static cudnnStatus_t bench_pack(const fv_conv2d *op, const fv__conv_cand *c, const tune_bench *tb,
                                fv__bdesc *vp) {
    *vp = NULL;
    if (!fv__conv_uses_graph(c->path)) return CUDNN_STATUS_SUCCESS;
    return fv__conv_variant_pack(tb->x, tb->w, tb->y,
                                 fv__conv_graph_bias(c->path, op->has_bias, tb->b, c->f.kp),
                                 fv__conv_graph_z(c->path, tb->z), tb->ws, vp);
}

/* One timed run of c from a cold L2 (scrubbed with byte `fill` first, as a
 * frame in a pipeline sees it): *ms its event time. The main pass and the
 * refinement both time with this, so their figures compare. */
static fv_status timed_run(fv_conv2d *op, const fv__conv_cand *c, const fv__conv_legacy *l,
                           fv__bdesc vp, const tune_bench *tb, int fill, float *ms) {
    cudaStream_t stream = fv__cuda_stream(op->ctx);
    if (tb->scrub) cudaMemsetAsync(tb->scrub, fill, tb->scrub_bytes, stream);
    cudaEventRecord(tb->e0, stream);
    fv_status s = fv__conv_run(op, c, l, vp, tb->x, tb->y, tb->z, tb->w, tb->b, tb->ws);
    cudaEventRecord(tb->e1, stream);
    if (s == FV_OK && (cudaEventSynchronize(tb->e1) != cudaSuccess ||
                       cudaEventElapsedTime(ms, tb->e0, tb->e1) != cudaSuccess))
        s = fv__error(FV_ERR_CUDA, "autotune: reading %s's events failed", c->engine);
    return s;
}

/* The refinement (see REFINE_MAX): the finalists' ms become the medians of
 * their REFINE_ROUNDS x REFINE_BLOCK runs; each round starts at the next
 * finalist. Best effort: a failure leaves ms as the first pass measured it. */
static void refine(fv_conv2d *op, const fv__conv_cand *cands, const fv__conv_legacy *legacy, int n,
                   const tune_bench *tb, float *ms) {
    fv_context *ctx = op->ctx;
    cudaStream_t stream = fv__cuda_stream(ctx);
    /* the fastest REFINE_MAX within the span of the best */
    int fin[REFINE_MAX], k = 0;
    for (; k < REFINE_MAX; k++) {
        int pick = -1;
        for (int i = 0; i < n; i++) {
            int taken = 0;
            for (int j = 0; j < k; j++)
                taken |= fin[j] == i;
            if (!taken && isfinite(ms[i]) && (pick < 0 || ms[i] < ms[pick])) pick = i;
        }
        if (pick < 0 || (k > 0 && ms[pick] > REFINE_SPAN * ms[fin[0]])) break;
        fin[k] = pick;
    }
    if (k < 2) return;
    enum { RUNS = REFINE_ROUNDS * REFINE_BLOCK };
    fv__bdesc vp[REFINE_MAX] = {NULL};
    float t[REFINE_MAX][RUNS];
    int ok = 1;
    for (int j = 0; ok && j < k; j++)
        ok = bench_pack(op, &cands[fin[j]], tb, &vp[j]) == CUDNN_STATUS_SUCCESS;
    for (int r = 0; ok && r < REFINE_ROUNDS; r++)
        for (int q = 0; ok && q < k; q++) {
            const int j = (r + q) % k;
            const fv__conv_cand *c = &cands[fin[j]];
            ok = fv__conv_run(op, c, legacy, vp[j], tb->x, tb->y, tb->z, tb->w, tb->b, tb->ws) ==
                 FV_OK; /* untimed */
            for (int i = 0; ok && i < REFINE_BLOCK; i++)
                ok = timed_run(op, c, legacy, vp[j], tb, i, &t[j][r * REFINE_BLOCK + i]) == FV_OK;
        }
    if (ok) {
        for (int j = 0; j < k; j++) {
            qsort(t[j], RUNS, sizeof t[j][0], cmp_float);
            fv__log(ctx, FV_LOG_DEBUG, "autotune: refined %-28s %-12s %.4f -> %.4f ms",
                    cands[fin[j]].engine, fv__engine_path_name(cands[fin[j]].path),
                    (double)ms[fin[j]], (double)t[j][RUNS / 2]);
            ms[fin[j]] = t[j][RUNS / 2];
        }
    } else {
        cudaGetLastError();
        cudaStreamSynchronize(stream);
        fv__log(ctx, FV_LOG_DEBUG,
                "autotune: refining the finalists failed (%s); keeping the "
                "first timings",
                fv_last_error());
    }
    for (int j = 0; j < k; j++)
        if (vp[j]) cudnnBackendDestroyDescriptor(vp[j]);
}

fv_status fv__conv_time(fv_conv2d *op, fv__conv_cand *cands, fv__conv_legacy *legacy, int n,
                        const void *w, const void *b, float *ms) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    cudaStream_t stream = fv__cuda_stream(ctx);
    for (int i = 0; i < n; i++)
        ms[i] = INFINITY;
    if (n == 0) return FV_OK;
    size_t xb = (size_t)d->n * d->h * d->w * cands[0].f.cs * 2;
    size_t yb = (size_t)d->n * op->p * op->q * cands[0].f.ys * 2;
    size_t wsb = 0, cb = 0;
    for (int i = 0; i < n; i++) {
        if (cands[i].ws > wsb) wsb = cands[i].ws;
        if (cands[i].path == FV__PATH_GEMM && fv__conv_gemm_counter_bytes(&cands[i].gg) > cb)
            cb = fv__conv_gemm_counter_bytes(&cands[i].gg);
    }
    void *x = NULL, *y = NULL, *z = NULL, *ws = NULL, *counters = NULL;
    fv_status s = fv_pool_alloc(dev, xb, &x);
    if (s == FV_OK) s = fv_pool_alloc(dev, yb, &y);
    if (s == FV_OK && (d->flags & FV_CONV2D_RESIDUAL)) {
        s = fv_pool_alloc(dev, yb, &z);
        cudaError_t e = s == FV_OK ? cudaMemsetAsync(z, 0, yb, stream) : cudaSuccess;
        if (e != cudaSuccess) s = fv__cuda_fail(e, "autotune residual", __FILE__, __LINE__);
    }
    if (s == FV_OK && wsb) s = fv_pool_alloc(dev, wsb, &ws);
    /* the GEMM's tile counters: zero, and the kernel leaves them zero */
    if (s == FV_OK && cb) s = fv_pool_alloc(dev, cb, &counters);
    if (s == FV_OK && cb) {
        cudaError_t e = cudaMemsetAsync(counters, 0, cb, stream);
        if (e != cudaSuccess) s = fv__cuda_fail(e, "autotune counters", __FILE__, __LINE__);
        for (int i = 0; i < n; i++)
            if (cands[i].path == FV__PATH_GEMM) cands[i].gg.counters = counters;
    }
    /* an L2 scrubber of twice the cache, when the pool has room (else none) */
    int dev_id = fv__cuda_device(ctx), l2 = 0;
    void *scrub = NULL;
    size_t scrub_bytes = 0;
    if (s == FV_OK && cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev_id) == cudaSuccess &&
        l2 > 0) {
        scrub_bytes = 2 * (size_t)l2;
        char saved[512];
        snprintf(saved, sizeof saved, "%s", fv_last_error());
        if (fv_pool_alloc(dev, scrub_bytes, &scrub) != FV_OK) {
            scrub = NULL;
            fv__error(FV_OK, "%s", saved);
            fv__log(ctx, FV_LOG_DEBUG, "autotune: no room for an L2 scrubber; timing warm");
        }
    }
    fv_half *hx = s == FV_OK ? malloc(xb) : NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (s == FV_OK && !hx) s = fv__error(FV_ERR_OUT_OF_MEMORY, "autotune: out of host memory");
    if (s == FV_OK) {
        /* random inputs in [-1, 1), never zeros: zeros can run faster */
        uint64_t r = 0x9E3779B97F4A7C15ull;
        for (size_t i = 0; i < xb / 2; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            hx[i] = fv_f32_to_f16((float)((r >> 11) * (2.0 / 9007199254740992.0) - 1.0));
        }
        cudaError_t e = cudaMemcpy(x, hx, xb, cudaMemcpyHostToDevice);
        if (e == cudaSuccess) e = cudaEventCreate(&e0);
        if (e == cudaSuccess) e = cudaEventCreate(&e1);
        if (e != cudaSuccess) s = fv__cuda_fail(e, "autotune set-up", __FILE__, __LINE__);
    }
    const tune_bench tb = {.x = x,
                           .w = w,
                           .b = b,
                           .y = y,
                           .z = z,
                           .ws = ws,
                           .scrub = scrub,
                           .scrub_bytes = scrub_bytes,
                           .e0 = e0,
                           .e1 = e1};
    for (int i = 0; s == FV_OK && i < n; i++) {
        float t[TUNE_RUNS];
        fv_status rs = FV_OK;
        fv__bdesc vp = NULL;
        if (bench_pack(op, &cands[i], &tb, &vp) != CUDNN_STATUS_SUCCESS) continue;
        for (int k = 0; rs == FV_OK && k < TUNE_WARMUP; k++)
            rs = fv__conv_run(op, &cands[i], legacy, vp, x, y, z, w, b, ws);
        for (int k = 0; rs == FV_OK && k < TUNE_RUNS; k++)
            rs = timed_run(op, &cands[i], legacy, vp, &tb, k, &t[k]);
        if (vp) cudnnBackendDestroyDescriptor(vp);
        if (rs != FV_OK) {
            /* an engine that fails at run time is skipped, not fatal */
            cudaGetLastError();
            cudaStreamSynchronize(stream);
            fv__log(ctx, FV_LOG_DEBUG, "autotune: %s failed at run time: %s", cands[i].engine,
                    fv_last_error());
            continue;
        }
        qsort(t, TUNE_RUNS, sizeof t[0], cmp_float);
        ms[i] = t[TUNE_RUNS / 2];
        fv__log(ctx, FV_LOG_DEBUG, "autotune: %-28s %-12s %-44s %.4f ms", cands[i].engine,
                fv__engine_path_name(cands[i].path), cands[i].f.name, (double)ms[i]);
    }
    if (s == FV_OK) refine(op, cands, legacy, n, &tb, ms);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaStreamSynchronize(stream);
    free(hx);
    fv_pool_free(dev, x);
    fv_pool_free(dev, y);
    fv_pool_free(dev, z);
    fv_pool_free(dev, ws);
    fv_pool_free(dev, scrub);
    fv_pool_free(dev, counters);
    for (int i = 0; i < n; i++)
        if (cands[i].path == FV__PATH_GEMM) cands[i].gg.counters = NULL;
    return s;
}
