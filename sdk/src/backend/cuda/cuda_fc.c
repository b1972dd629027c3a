/* Fully connected layers through cuBLASLt: out (N, Kp) = act(W' x + bias),
 * one matmul with the bias (and ReLU) in cuBLASLt's epilogue.
 *
 * The input is an NHWC tensor read whole (a flatten folded into the fc):
 * N rows of H * W * Cs halves, Cs its stored channels. W' holds PyTorch's
 * K x C x H x W weights reordered to (h, w, c) with zero padding lanes, and
 * Kp = K rounded up to 8 rows (zero), so the output's padding lanes come out
 * act(0 + 0) = 0. In cuBLASLt's column-major terms: D (Kp x N, ld Kp) =
 * A^T (A: H*W*Cs x Kp, stored W' row by row) times B (H*W*Cs x N, the
 * input), FP32 accumulation, FP16 in and out. */
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../net_ops.h"
#include "cuda_internal.h"

struct fv__fc {
    cublasLtHandle_t lt; /* the context's (fv__cuda_state.lt) */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
    void *w, *bias; /* device pool: Kp x inner halves; Kp halves */
    size_t ws;      /* the algo's workspace (within the context's shared region) */
    int n, kp, inner;
    char engine[48];
};

static fv_status lt_fail(cublasStatus_t e, const char *call, int line) {
    return fv__error(FV_ERR_CUDA, "%s failed: cuBLASLt status %d at %s:%d", call, (int)e, __FILE__,
                     line);
}

#define LT_TRY(call)                                                                               \
    do {                                                                                           \
        cublasStatus_t lt__ = (call);                                                              \
        if (lt__ != CUBLAS_STATUS_SUCCESS) return lt_fail(lt__, #call, __LINE__);                  \
    } while (0)

void fv__cuda_fc_destroy(fv_context *ctx, fv__fc *fc) {
    if (!fc) return;
    fv_context_synchronize(ctx); /* nothing queued may still use the weights */
    if (fc->op) cublasLtMatmulDescDestroy(fc->op);
    if (fc->a) cublasLtMatrixLayoutDestroy(fc->a);
    if (fc->b) cublasLtMatrixLayoutDestroy(fc->b);
    if (fc->d) cublasLtMatrixLayoutDestroy(fc->d);
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    fv_pool_free(dev, fc->w);
    fv_pool_free(dev, fc->bias);
    free(fc);
}

/* ---- the context's handle, made in the background ------------------------- */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void *make_handle(void *arg) {
    fv__cuda_state *cs = arg;
    cublasLtHandle_t h = NULL;
    cublasStatus_t e = CUBLAS_STATUS_NOT_INITIALIZED;
    if (cudaSetDevice(cs->device) == cudaSuccess) e = cublasLtCreate(&h);
    if (e == CUBLAS_STATUS_SUCCESS) {
        /* a first heuristic query loads cuBLASLt's tables too */
        cublasLtMatmulDesc_t op = NULL;
        cublasLtMatrixLayout_t a = NULL;
        cublasLtMatmulPreference_t pref = NULL;
        cublasLtMatmulHeuristicResult_t hr[1];
        int found = 0;
        if (cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == 0 &&
            cublasLtMatrixLayoutCreate(&a, CUDA_R_16F, 64, 64, 64) == 0 &&
            cublasLtMatmulPreferenceCreate(&pref) == 0)
            (void)cublasLtMatmulAlgoGetHeuristic(h, op, a, a, a, a, pref, 1, hr, &found);
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (op) cublasLtMatmulDescDestroy(op);
    }
    cs->lt_made = h;
    cs->lt_made_error = (int)e;
    return NULL;
}

void fv__cuda_fc_prepare(fv_context *ctx) {
    fv__cuda_state *cs = fv__cuda_state_of(ctx);
    if (!cs || cs->lt || cs->lt_loading) return;
    /* "0": no helper thread, the first fc makes the handle (to measure what
     * the thread saves, or to keep CUDA calls on one thread under a tool) */
    const char *ahead = getenv("FV_CUBLASLT_AHEAD");
    if (ahead && strcmp(ahead, "0") == 0) return;
    cs->lt_made = NULL;
    if (pthread_create(&cs->lt_thread, NULL, make_handle, cs) == 0) cs->lt_loading = 1;
    /* else: the first fc makes the handle itself */
}

void fv__cuda_fc_join(fv_context *ctx) {
    fv__cuda_state *cs = fv__cuda_state_of(ctx);
    if (!cs || !cs->lt_loading) return;
    pthread_join(cs->lt_thread, NULL);
    cs->lt_loading = 0;
    if (cs->lt_made && !cs->lt)
        cs->lt = cs->lt_made;
    else if (cs->lt_made)
        cublasLtDestroy((cublasLtHandle_t)cs->lt_made);
    cs->lt_made = NULL;
}

/* W' and the bias, converted and uploaded once. */
static fv_status upload(fv_context *ctx, fv__fc *fc, const fv__view *in, int k,
                        const float *weights, const float *bias) {
    const int C = in->c, H = in->h, W = in->w, cs = in->ps;
    size_t nw = (size_t)fc->kp * (size_t)fc->inner;
    fv_half *hw = calloc(nw + (size_t)fc->kp, sizeof *hw);
    FV_REQUIRE(hw, FV_ERR_OUT_OF_MEMORY, "fc: out of host memory");
    fv_half *hb = hw + nw;
    for (int o = 0; o < k; o++) {
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    hw[(size_t)o * fc->inner + ((size_t)y * W + x) * cs + c] =
                        fv_f32_to_f16(weights[(((size_t)o * C + c) * H + y) * W + x]);
        if (bias) hb[o] = fv_f32_to_f16(bias[o]);
    }
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    fv_status s = fv_pool_alloc(dev, nw * 2, &fc->w);
    if (s == FV_OK) s = fv_pool_alloc(dev, (size_t)fc->kp * 2, &fc->bias);
    if (s == FV_OK) {
        cudaError_t e = cudaMemcpy(fc->w, hw, nw * 2, cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(fc->bias, hb, (size_t)fc->kp * 2, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) s = fv__cuda_fail(e, "cudaMemcpy(fc weights)", __FILE__, __LINE__);
    }
    free(hw);
    return s;
}

fv_status fv__cuda_fc_create(fv_context *ctx, const fv__view *in, const fv__view *out, int k,
                             const float *weights, const float *bias, int act, fv__fc **res) {
    *res = NULL;
    FV_REQUIRE(in->dtype == FV_DTYPE_F16 && out->dtype == FV_DTYPE_F16, FV_ERR_NOT_SUPPORTED,
               "fc: cuBLASLt runs F16 tensors here");
    FV_REQUIRE(act == FV_ACT_IDENTITY || act == FV_ACT_RELU, FV_ERR_NOT_SUPPORTED,
               "fc: cuBLASLt's epilogue runs identity or ReLU, not %s",
               fv_activation_name((fv_activation)act));
    FV_REQUIRE(out->h == 1 && out->w == 1 && out->c == k && out->ps == out->cw &&
                   out->cw % 8 == 0 && in->ps == in->cw && in->cw % 8 == 0,
               FV_ERR_NOT_SUPPORTED, "fc: cuBLASLt takes dense tensors (a channel slice here)");
    FV_TRY(fv__cuda_bind(ctx));
    fv__fc *fc = calloc(1, sizeof *fc);
    FV_REQUIRE(fc, FV_ERR_OUT_OF_MEMORY, "fc: out of host memory");
    fc->n = in->n;
    fc->kp = out->cw;
    fc->inner = in->h * in->w * in->ps;
    double t0 = now_ms();
    fv_status s = upload(ctx, fc, in, k, weights, bias);
    double t1 = now_ms();
    /* one cuBLASLt handle per context: made in the background
     * (fv__cuda_fc_prepare), else by its first fc */
    fv__cuda_state *cs = fv__cuda_state_of(ctx);
    fv__cuda_fc_join(ctx);
    cublasStatus_t e = CUBLAS_STATUS_SUCCESS;
    if (s == FV_OK && !cs->lt) {
        cublasLtHandle_t h = NULL;
        e = cublasLtCreate(&h);
        if (e == CUBLAS_STATUS_SUCCESS)
            cs->lt = h;
        else
            s = lt_fail(e, "cublasLtCreate", __LINE__);
    }
    fc->lt = (cublasLtHandle_t)cs->lt;
    double t2 = now_ms();
    if (s != FV_OK) {
        fv__cuda_fc_destroy(ctx, fc);
        return s;
    }
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epi =
        act == FV_ACT_RELU ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    const void *bp = fc->bias;
    uint64_t inner = (uint64_t)fc->inner, kp = (uint64_t)fc->kp, n = (uint64_t)fc->n;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t hr[8];
    int found = 0;
    /* the context's shared workspace, as it stands (it only grows) */
    size_t ws_max = fv__cuda_state_of(ctx)->ws_bytes;
#define STEP(call)                                                                                 \
    if (s == FV_OK && (e = (call)) != CUBLAS_STATUS_SUCCESS) s = lt_fail(e, #call, __LINE__)
    STEP(cublasLtMatmulDescCreate(&fc->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    STEP(cublasLtMatmulDescSetAttribute(fc->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    STEP(cublasLtMatmulDescSetAttribute(fc->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    STEP(cublasLtMatmulDescSetAttribute(fc->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    STEP(cublasLtMatmulDescSetAttribute(fc->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
    STEP(cublasLtMatrixLayoutCreate(&fc->a, CUDA_R_16F, inner, kp, (int64_t)inner));
    STEP(cublasLtMatrixLayoutCreate(&fc->b, CUDA_R_16F, inner, n, (int64_t)inner));
    STEP(cublasLtMatrixLayoutCreate(&fc->d, CUDA_R_16F, kp, n, (int64_t)kp));
    STEP(cublasLtMatmulPreferenceCreate(&pref));
    STEP(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &ws_max, sizeof ws_max));
    STEP(cublasLtMatmulAlgoGetHeuristic(fc->lt, fc->op, fc->a, fc->b, fc->d, fc->d, pref, 8, hr,
                                        &found));
#undef STEP
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (s == FV_OK && found < 1)
        s = fv__error(FV_ERR_NOT_SUPPORTED,
                      "fc: cuBLASLt has no algorithm for %d x %d -> %d within %zu bytes of "
                      "workspace",
                      fc->n, fc->inner, fc->kp, ws_max);
    if (s != FV_OK) {
        fv__cuda_fc_destroy(ctx, fc);
        return s;
    }
    fc->algo = hr[0].algo;
    fc->ws = hr[0].workspaceSize;
    int id = 0;
    size_t got = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&fc->algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &got);
    snprintf(fc->engine, sizeof fc->engine, "cublasLt-algo%d%s", id,
             act == FV_ACT_RELU ? "-relu-bias" : "-bias");
    fv__log(ctx, FV_LOG_INFO,
            "fc %d x %d -> %d: %s; create: weights %.1f ms, handle %.1f ms, heuristic %.1f ms",
            fc->n, fc->inner, fc->kp, fc->engine, t1 - t0, t2 - t1, now_ms() - t2);
    *res = fc;
    return FV_OK;
}

fv_status fv__cuda_fc_run(fv_context *ctx, fv__fc *fc, const fv__view *in, const fv__view *out) {
    const float alpha = 1.0f, beta = 0.0f;
    fv__cuda_state *st = fv__cuda_state_of(ctx);
    LT_TRY(cublasLtMatmul(fc->lt, fc->op, &alpha, fc->w, fc->a, in->data, fc->b, &beta, out->data,
                          fc->d, out->data, fc->d, &fc->algo, fc->ws ? st->ws : NULL, fc->ws,
                          st->stream));
    return FV_OK;
}

const char *fv__cuda_fc_engine(const fv__fc *fc) {
    return fc ? fc->engine : "";
}
