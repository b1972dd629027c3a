/* Convolution on the CUDA backend.
 *
 * One fused cuDNN graph per op: conv_fprop (FP16 NHWC in, FP32 compute) ->
 * bias add -> activation -> FP16 NHWC out (conv_graph.c). Channels are
 * stored padded to 8; padded weights and bias are zero, so padded output
 * lanes hold act(0): 0 for every activation but sigmoid, which a small
 * kernel fixes up.
 *
 * Engine choice at creation, in this order:
 *  1. the context's profile (fovea-calibrate, or earlier autotuning): the
 *     engine is rebuilt from its index and knobs, no heuristics, no timing;
 *  2. with FV_CONV2D_AUTOTUNE: every config of heuristics A and the fallback
 *     list, for each way of declaring the input channels (as they are,
 *     padded to 4, padded to 8), plus the legacy algorithms (each also
 *     through cudnnConvolutionBiasActivationForward when the op has a bias
 *     or an activation), plus fovea's direct kernel (kernels/conv_direct.cu:
 *     its block shapes and channel widths), timed; fastest kept;
 *  3. otherwise the direct kernel where it is known to win (direct_preferred),
 *     else heuristics A, then the fallback list, then the legacy API
 *     (cudnnConvolutionForward + an epilogue kernel), then the direct kernel.
 * FV_CONV2D_NO_DIRECT leaves the direct kernel out; FV_CONV2D_DIRECT takes
 * nothing else (and no profile).
 * Each op reports which (fv_conv2d_info). The choice goes into the
 * context's profile (fv_context_profile_save).
 *
 * The run path does no host work beyond the launches: variant packs are
 * cached per (input, output, workspace), and the workspace is one region of
 * the device pool shared by all ops of the context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv_engine.h"
#include "fovea/fovea_cuda.h"
#include "kernels/conv_epilogue.cuh"

#define VP_CACHE  4
#define MAX_FORMS 8
#define MAX_CFGS  48

typedef struct vp_entry {
    const void *x;
    void *y;
    void *ws;
    fv__bdesc vp;
} vp_entry;

typedef struct conv_state {
    fv__conv_cand c;   /* the chosen way to run (owns its plan) */
    fv__conv_legacy l; /* legacy descriptors (legacy and legacy-fused paths) */
    void *w, *b;       /* device FP16 weights [kp][r][s][wc], bias [kp] (or NULL) */
    vp_entry vps[VP_CACHE];
    int vp_next;
    float ms;
    int candidates;
} conv_state;

/* ---- the shared workspace ------------------------------------------------ */
static fv_status workspace_reserve(fv_context *ctx, size_t bytes) {
    fv__cuda_state *cs = fv__cuda_state_of(ctx);
    if (bytes <= cs->ws_bytes) return FV_OK;
    /* set-up time: the old region may be in use by queued work */
    FV_CUDA_TRY(cudaStreamSynchronize(cs->stream));
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    fv_pool_free(dev, cs->ws);
    cs->ws = NULL;
    cs->ws_bytes = 0;
    FV_TRY(fv_pool_alloc(dev, bytes, &cs->ws));
    cs->ws_bytes = bytes;
    return FV_OK;
}

/* ---- formulations -------------------------------------------------------- */
static int add_form(fv__conv_form *out, int n, int groups, int wc, int kp, int cs, int cd,
                    const char *what) {
    for (int i = 0; i < n; i++)
        if (!out[i].kr && out[i].groups == groups && out[i].cd == cd && out[i].wc == wc) return n;
    out[n] = (fv__conv_form){groups, wc, kp, cs, cd, 0, ""};
    if (cd == cs)
        snprintf(out[n].name, sizeof out[n].name, "%s, C padded to %d, K to %d", what, cs, kp);
    else
        snprintf(out[n].name, sizeof out[n].name, "%s, C stored as %d, read as %d, K %d", what, cs,
                 cd, kp);
    return n + 1;
}

/* fovea's direct kernel reading cm of the cp stored channels. */
static int add_direct_form(const fv_conv2d *op, fv__conv_form *out, int n, int cm) {
    const fv_conv2d_desc *d = &op->desc;
    int cp = FV_ROUND_UP(d->c, 8), kp = FV_ROUND_UP(d->k, 8);
    if (cm > cp || kp > 64) return n;
    out[n] = (fv__conv_form){1, cm, kp, cp, cm, FV_ROUND_UP(d->s * cm, 16), ""};
    snprintf(out[n].name, sizeof out[n].name, "direct, C stored as %d, read as %d, K %d", cp, cm,
             kp);
    return n + 1;
}

/* The direct kernel's forms: it reads 4, 8, 16 or 32 channels a pixel (4
 * needs an even horizontal stride). None when the op is outside its range. */
static int direct_forms(const fv_conv2d *op, fv__conv_form *out, int n) {
    const fv_conv2d_desc *d = &op->desc;
    if (d->groups != 1 || d->dilation_h != 1 || d->dilation_w != 1 || d->dtype != FV_DTYPE_F16)
        return n;
    if (d->c <= 4 && d->stride_w % 2 == 0) n = add_direct_form(op, out, n, 4);
    int cm = d->c <= 8 ? 8 : d->c <= 16 ? 16 : 32;
    return add_direct_form(op, out, n, cm);
}

/* The heuristic for the direct kernel without timing, from the H100
 * benchmark (docs/bench/RESULTS.md): at most 8 input channels and 32
 * outputs, where cuDNN's tiles are mostly padding (there it ran 1.0-2.0x
 * faster than cuDNN's best engine); with 32 input channels cuDNN's engines
 * were faster. */
static int direct_preferred(const fv_conv2d *op) {
    const fv_conv2d_desc *d = &op->desc;
    return d->c <= 8 && FV_ROUND_UP(d->k, 8) <= 32;
}

/* The ways to express the op, preferred first. all: include the declared-C
 * variants (autotuning and profile look-ups); else only the padded ones.
 * Forms of the direct kernel come first when it is preferred or forced,
 * else last (a fallback); none with FV_CONV2D_NO_DIRECT. */
static int cudnn_formulations(const fv_conv2d *op, fv__conv_form *out, int all, int n);
static int formulations(const fv_conv2d *op, fv__conv_form *out, int all) {
    uint32_t fl = op->desc.flags;
    int direct = !(fl & FV_CONV2D_NO_DIRECT),
        first = (fl & FV_CONV2D_DIRECT) || direct_preferred(op);
    int n = 0;
    if (direct && first) n = direct_forms(op, out, n);
    if (!(fl & FV_CONV2D_DIRECT)) n = cudnn_formulations(op, out, all, n);
    if (direct && !first) n = direct_forms(op, out, n);
    return n;
}

static int cudnn_formulations(const fv_conv2d *op, fv__conv_form *out, int all, int n) {
    const fv_conv2d_desc *d = &op->desc;
    int cp = FV_ROUND_UP(d->c, 8), kp = FV_ROUND_UP(d->k, 8);
    if (d->groups > 1 && d->groups == d->c && d->c == d->k) {
        n = add_form(out, n, cp, 1, cp, cp, cp, "depthwise");
    } else if (d->groups > 1 && d->c % 8 == 0 && d->k % 8 == 0 && (d->c / d->groups) % 8 == 0 &&
               (d->k / d->groups) % 8 == 0) {
        n = add_form(out, n, d->groups, d->c / d->groups, d->k, d->c, d->c, "grouped");
    }
    const char *dense = d->groups > 1 ? "groups as dense" : "dense";
    n = add_form(out, n, 1, cp, kp, cp, cp, dense);
    if (all && d->groups == 1) {
        int c4 = FV_ROUND_UP(d->c, 4);
        n = add_form(out, n, 1, c4, kp, cp, c4, dense);
        n = add_form(out, n, 1, d->c, kp, cp, d->c, dense);
    }
    return n;
}

/* Where weight (k, filter row r, position pos = s * wc + c in the row) goes;
 * row: the positions of a filter row (S * wc, or kr for the direct kernel). */
static size_t weight_index(const fv__conv_form *f, int rows, size_t row, int k, int r, size_t pos) {
    if (f->kr) return (((size_t)r * (f->kp / 8) + k / 8) * f->kr + pos) * 8 + k % 8;
    return ((size_t)k * rows + r) * row + pos;
}

/* KCRS FP32 -> FP16 [kp][r][s][wc] for form f (zero outside the op's groups
 * and in the padding); the direct kernel's forms: [r][kp / 8][kr][8]
 * (kernels/conv_direct.cuh). */
static void pack_weights(const fv_conv2d *op, const fv__conv_form *f, const float *w,
                         fv_half *out) {
    const fv_conv2d_desc *d = &op->desc;
    int cg = d->c / d->groups, kg = d->k / d->groups;
    size_t row = f->kr ? (size_t)f->kr : (size_t)d->s * f->wc; /* per (k, filter row) */
    memset(out, 0, (size_t)f->kp * d->r * row * sizeof *out);
    for (int k = 0; k < d->k; k++) {
        int g = k / kg;
        for (int c = 0; c < cg; c++) {
            int col = f->groups == 1 ? g * cg + c : f->wc == 1 ? 0 : c;
            for (int r = 0; r < d->r; r++)
                for (int s = 0; s < d->s; s++)
                    out[weight_index(f, d->r, row, k, r, (size_t)s * f->wc + col)] =
                        fv_f32_to_f16(w[(((size_t)k * cg + c) * d->r + r) * d->s + s]);
        }
    }
}

/* Uploads weights and bias for form f into device carve-outs (set-up). */
static fv_status upload_weights(fv_conv2d *op, const fv__conv_form *f, const float *weights,
                                const float *bias, void **w, void **b) {
    const fv_conv2d_desc *d = &op->desc;
    fv_pool *dev = op->ctx->pools[FV_POOL_DEVICE];
    size_t nw = (size_t)f->kp * d->r * (f->kr ? (size_t)f->kr : (size_t)d->s * f->wc);
    *w = *b = NULL;
    fv_half *hw = malloc((nw + (size_t)f->kp) * sizeof *hw);
    FV_REQUIRE(hw, FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory for the weights");
    pack_weights(op, f, weights, hw);
    fv_half *hb = hw + nw;
    memset(hb, 0, (size_t)f->kp * sizeof *hb);
    if (bias)
        for (int k = 0; k < d->k; k++)
            hb[k] = fv_f32_to_f16(bias[k]);
    fv_status s = fv_pool_alloc(dev, nw * sizeof *hw, w);
    if (s == FV_OK) s = fv_pool_alloc(dev, (size_t)f->kp * sizeof *hb, b);
    if (s == FV_OK) {
        cudaError_t e = cudaMemcpy(*w, hw, nw * sizeof *hw, cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(*b, hb, (size_t)f->kp * sizeof *hb, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) s = fv__cuda_fail(e, "cudaMemcpy(weights)", __FILE__, __LINE__);
    }
    free(hw);
    if (s != FV_OK) {
        fv_pool_free(dev, *w);
        fv_pool_free(dev, *b);
        *w = *b = NULL;
        return fv__error_prefix(s, "conv2d weights");
    }
    return FV_OK;
}

/* ---- candidates ------------------------------------------------------------ */
static void cand_free(fv__conv_cand *c) {
    if (c->plan) cudnnBackendDestroyDescriptor(c->plan);
    c->plan = NULL;
}

/* Graph candidates of form f from one heuristics mode into out[*n..]; stops
 * after the first when first_only. Returns how many configs were offered. */
static int graph_candidates(fv_conv2d *op, const fv__conv_form *f, fv__engine_path path,
                            fv__bdesc graph, cudnnBackendHeurMode_t mode, const char *mode_name,
                            int first_only, fv__conv_cand *out, int *n, int max, int *too_big) {
    fv_context *ctx = op->ctx;
    fv__bdesc cfgs[MAX_CFGS] = {0};
    int got = fv__conv_graph_configs(graph, mode, cfgs, MAX_CFGS);
    for (int i = 0; i < got; i++) {
        if (*n >= max || (first_only && *n > 0)) break;
        fv__conv_cand c;
        memset(&c, 0, sizeof c);
        int64_t ws = 0;
        if (fv__conv_plan(cfgs[i], fv__cuda_cudnn(ctx), &c.plan, &ws)) continue;
        if ((size_t)ws > ctx->workspace_limit) {
            (*too_big)++;
            cand_free(&c);
            continue;
        }
        fv__conv_cfg_describe(cfgs[i], &c.choice, &c.tensor_cores);
        int dup = 0; /* the fallback list repeats engines of list A */
        for (int j = 0; j < *n && !dup; j++)
            dup = out[j].path == path && out[j].f.cd == f->cd && out[j].f.groups == f->groups &&
                  out[j].choice.engine == c.choice.engine &&
                  out[j].choice.nknobs == c.choice.nknobs &&
                  !memcmp(out[j].choice.knob_value, c.choice.knob_value,
                          sizeof(int64_t) * (size_t)c.choice.nknobs);
        if (dup) {
            cand_free(&c);
            continue;
        }
        c.path = path;
        c.f = *f;
        c.ws = (size_t)ws;
        c.choice.path = path;
        c.choice.cdecl_ = f->cd;
        snprintf(c.engine, sizeof c.engine, "eng%lld", (long long)c.choice.engine);
        snprintf(c.how, sizeof c.how, "heuristics %s #%d of %d%s", mode_name, i, got,
                 path == FV__PATH_GRAPH_SPLIT ? ", bare conv + epilogue" : "");
        out[(*n)++] = c;
    }
    for (int i = 0; i < MAX_CFGS; i++)
        if (cfgs[i]) cudnnBackendDestroyDescriptor(cfgs[i]);
    return got;
}

/* Legacy candidates of form f (v7 heuristic order) into out[*n..]. */
static fv_status legacy_candidates(fv_conv2d *op, const fv__conv_form *f, fv__conv_legacy *l,
                                   int first_only, fv__conv_cand *out, int *n, int max) {
    fv_context *ctx = op->ctx;
    FV_TRY(fv__conv_legacy_init(op, f, l));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    FV_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(
        fv__cuda_cudnn(ctx), l->x, l->w, l->c, l->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
    for (int i = 0; i < got && *n < max; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ctx->workspace_limit)
            continue;
        fv__conv_cand c;
        memset(&c, 0, sizeof c);
        c.path = FV__PATH_LEGACY;
        c.f = *f;
        c.algo = perf[i].algo;
        c.ws = perf[i].memory;
        c.tensor_cores = perf[i].mathType == CUDNN_TENSOR_OP_MATH;
        c.choice.path = FV__PATH_LEGACY;
        c.choice.cdecl_ = f->cd;
        c.choice.engine = perf[i].algo;
        snprintf(c.engine, sizeof c.engine, "%s", fv__conv_algo_name(perf[i].algo));
        snprintf(c.how, sizeof c.how, "legacy v7 #%d of %d", i, got);
        out[(*n)++] = c;
        if (first_only) break;
    }
    return FV_OK;
}

/* For each legacy candidate in out[from..*n), a legacy-fused one with the
 * same algo and workspace (cudnnConvolutionBiasActivationForward takes the
 * workspace of cudnnConvolutionForward), where the fused call runs the op. */
static void legacy_fused_candidates(fv_conv2d *op, const fv__conv_legacy *l, int from,
                                    fv__conv_cand *out, int *n, int max) {
    if (!l->b || !l->act) return;
    for (int i = from, end = *n; i < end && *n < max; i++) {
        if (out[i].path != FV__PATH_LEGACY || !fv__conv_legacy_fusable(op, out[i].algo)) continue;
        fv__conv_cand c = out[i];
        c.path = FV__PATH_LEGACY_FUSED;
        c.choice.path = FV__PATH_LEGACY_FUSED;
        char how[sizeof c.how];
        snprintf(how, sizeof how, "%s", out[i].how);
        snprintf(c.how, sizeof c.how, "%.100s, fused bias and activation", how);
        out[(*n)++] = c;
    }
}

/* The direct kernel's geometry for form f: variant = th rows per block + 100
 * when persistent (the engine number profiles store). */
static fv__conv_direct_geom direct_geom(const fv_conv2d *op, const fv__conv_form *f, int variant) {
    const fv_conv2d_desc *d = &op->desc;
    return (fv__conv_direct_geom){.n = d->n,
                                  .h = d->h,
                                  .w = d->w,
                                  .cs = f->cs,
                                  .cm = f->cd,
                                  .p = op->p,
                                  .q = op->q,
                                  .kp = f->kp,
                                  .k = d->k,
                                  .r = d->r,
                                  .s = d->s,
                                  .sh = d->stride_h,
                                  .sw = d->stride_w,
                                  .ph = d->pad_h,
                                  .pw = d->pad_w,
                                  .th = variant % 100,
                                  .persistent = variant / 100};
}

/* A direct-kernel candidate of form f, variant as in direct_geom; 0 (why
 * set) when the kernel cannot run it here. */
static int direct_candidate(fv_conv2d *op, const fv__conv_form *f, int variant, fv__conv_cand *c,
                            char *why, size_t why_n) {
    memset(c, 0, sizeof *c);
    if (variant < 0 || variant > 199) {
        snprintf(why, why_n, "variant %d", variant);
        return 0;
    }
    c->dg = direct_geom(op, f, variant);
    int th = c->dg.th;
    size_t smem = 0;
    if (!fv__conv_direct_check(&c->dg, fv__cuda_device(op->ctx), &smem, why, why_n)) return 0;
    if (c->dg.kr != f->kr) {
        snprintf(why, why_n, "weights laid out for kr=%d, kernel wants %d", f->kr, c->dg.kr);
        return 0;
    }
    if (fv__conv_direct_prepare(&c->dg) != FV_OK) {
        snprintf(why, why_n, "%s", fv_last_error());
        return 0;
    }
    c->path = FV__PATH_DIRECT;
    c->f = *f;
    c->tensor_cores = 1;
    c->choice.path = FV__PATH_DIRECT;
    c->choice.cdecl_ = f->cd;
    c->choice.engine = variant;
    snprintf(c->engine, sizeof c->engine, "fovea-direct-%drows%s", th,
             c->dg.persistent ? "-persistent" : "");
    snprintf(c->how, sizeof c->how, "fovea direct kernel, %d rows a block%s, %zu B shared", th,
             c->dg.persistent ? ", persistent" : "", smem);
    return 1;
}

/* Direct candidates of form f (16, 8 and 4 rows a block, a block a tile
 * or persistent; the first only when first_only) into out[*n..]. Returns
 * how many were offered. The likely fastest first (H100): persistent for
 * outputs up to 600k pixels (a few waves of blocks), 16 rows for windows of
 * 25 taps or more, else 8. */
static int direct_candidates(fv_conv2d *op, const fv__conv_form *f, int first_only,
                             fv__conv_cand *out, int *n, int max, char *why, size_t why_n) {
    static const int big[] = {16, 8, 4}, small[] = {8, 4, 16};
    const fv_conv2d_desc *d = &op->desc;
    const int *ths = d->r * d->s >= 25 ? big : small;
    int first_persistent = (long)d->n * op->p * op->q <= 600000;
    int offered = 0;
    for (int i = 0; i < 6 && *n < max; i++) {
        int variant = ths[i % 3] + (first_persistent ^ (i >= 3)) * 100;
        if (!direct_candidate(op, f, variant, &out[*n], why, why_n)) continue;
        (*n)++;
        offered++;
        if (first_only) break;
    }
    return offered;
}

/* A candidate from a profile entry, or FV_ERR_NOT_SUPPORTED. */
static fv_status from_profile(fv_conv2d *op, const fv__engine_choice *e, const fv__conv_form *forms,
                              int nf, fv__conv_cand *out, fv__conv_legacy *l) {
    fv_context *ctx = op->ctx;
    cudnnHandle_t h = fv__cuda_cudnn(ctx);
    for (int i = 0; i < nf; i++) {
        if (forms[i].cd != e->cdecl_ || !forms[i].kr != (e->path != FV__PATH_DIRECT)) continue;
        if (e->path == FV__PATH_DIRECT) {
            char why[160];
            if (e->engine > 199 ||
                !direct_candidate(op, &forms[i], (int)e->engine, out, why, sizeof why))
                continue;
            out->choice = *e;
            snprintf(out->how, sizeof out->how, "profile (%s, %.4f ms)", e->how, (double)e->ms);
            return FV_OK;
        }
        memset(out, 0, sizeof *out);
        out->f = forms[i];
        out->choice = *e;
        out->path = e->path;
        if (e->path == FV__PATH_GRAPH || e->path == FV__PATH_GRAPH_SPLIT) {
            fv__conv_graph g;
            fv__bdesc cfg = NULL;
            int64_t ws = 0;
            cudnnStatus_t s =
                fv__conv_graph_build(op, &forms[i], e->path == FV__PATH_GRAPH_SPLIT, h, &g);
            if (!s) s = fv__conv_cfg_from_choice(g.graph, e, &cfg);
            if (!s) s = fv__conv_plan(cfg, h, &out->plan, &ws);
            if (!s) fv__conv_cfg_describe(cfg, &out->choice, &out->tensor_cores);
            if (cfg) cudnnBackendDestroyDescriptor(cfg);
            fv__conv_graph_destroy(&g);
            if (s || (size_t)ws > ctx->workspace_limit) {
                cand_free(out);
                continue;
            }
            out->ws = (size_t)ws;
            snprintf(out->engine, sizeof out->engine, "eng%lld", (long long)e->engine);
        } else {
            if (e->engine < 0 || e->engine >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT) continue;
            if (e->path == FV__PATH_LEGACY_FUSED &&
                !fv__conv_legacy_fusable(op, (cudnnConvolutionFwdAlgo_t)e->engine))
                continue;
            if (fv__conv_legacy_init(op, &forms[i], l) != FV_OK ||
                (e->path == FV__PATH_LEGACY_FUSED && (!l->b || !l->act))) {
                fv__conv_legacy_destroy(l);
                continue;
            }
            size_t ws = 0;
            out->algo = (cudnnConvolutionFwdAlgo_t)e->engine;
            if (cudnnGetConvolutionForwardWorkspaceSize(h, l->x, l->w, l->c, l->y, out->algo,
                                                        &ws) ||
                ws > ctx->workspace_limit) {
                fv__conv_legacy_destroy(l);
                continue;
            }
            out->ws = ws;
            out->tensor_cores = 1;
            snprintf(out->engine, sizeof out->engine, "%s", fv__conv_algo_name((int)e->engine));
        }
        snprintf(out->how, sizeof out->how, "profile (%s, %.4f ms)", e->how, (double)e->ms);
        return FV_OK;
    }
    return FV_ERR_NOT_SUPPORTED;
}

/* ---- create ---------------------------------------------------------------- */
/* One run on scratch buffers at creation: CUDA loads an engine's kernels
 * lazily at their first launch (tens of ms for some), and cuDNN finishes some
 * plans then; that must not land on the first frame. Skipped (with a debug
 * message) when the pool has no room for the scratch. */
static void warm_up(fv_conv2d *op, conv_state *st) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    size_t xb = (size_t)d->n * d->h * d->w * st->c.f.cs * 2;
    size_t yb = (size_t)d->n * op->p * op->q * st->c.f.kp * 2;
    void *x = NULL, *y = NULL, *ws = fv__cuda_state_of(ctx)->ws;
    fv__bdesc vp = NULL;
    char saved[512];
    snprintf(saved, sizeof saved, "%s", fv_last_error());
    if (fv_pool_alloc(dev, xb, &x) == FV_OK && fv_pool_alloc(dev, yb, &y) == FV_OK &&
        cudaMemsetAsync(x, 0, xb, fv__cuda_stream(ctx)) == cudaSuccess &&
        (!fv__conv_uses_graph(st->c.path) ||
         fv__conv_variant_pack(st->c.path == FV__PATH_GRAPH && op->has_bias, x, st->w, y, st->b, ws,
                               &vp) == CUDNN_STATUS_SUCCESS) &&
        fv__conv_run(op, &st->c, &st->l, vp, x, y, st->w, st->b, ws) == FV_OK) {
        cudaStreamSynchronize(fv__cuda_stream(ctx));
    } else {
        fv__log(ctx, FV_LOG_DEBUG, "conv2d: no warm-up run (%s)", fv_last_error());
        cudaStreamSynchronize(fv__cuda_stream(ctx));
        cudaGetLastError();
    }
    if (vp) cudnnBackendDestroyDescriptor(vp);
    fv_pool_free(dev, x);
    fv_pool_free(dev, y);
    fv__error(FV_OK, "%s", saved);
}

static fv_status choose(fv_conv2d *op, const float *weights, const float *bias, conv_state *st,
                        char *why, size_t why_n);

fv_status fv__cuda_conv2d_create(fv_conv2d *op, const float *weights, const float *bias) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    FV_REQUIRE(d->dtype == FV_DTYPE_F16, FV_ERR_NOT_SUPPORTED,
               "conv2d: the CUDA backend runs F16 tensors (the tensor-core path); F32 is "
               "supported on the CPU backend only");
    FV_TRY(fv__cuda_bind(ctx));
    conv_state *st = calloc(1, sizeof *st);
    FV_REQUIRE(st, FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory");
    char why[512] = "";
    fv_status s = choose(op, weights, bias, st, why, sizeof why);
    if (s == FV_OK) s = upload_weights(op, &st->c.f, weights, bias, &st->w, &st->b);
    if (s == FV_OK) s = workspace_reserve(ctx, st->c.ws);
    op->be_state = st;
    if (s == FV_OK) warm_up(op, st);
    if (s != FV_OK) {
        op->be_state = st;
        fv__cuda_conv2d_destroy(op);
        return s;
    }
    op->be_state = st;
    /* remember the choice: fv_context_profile_save persists it */
    fv__engine_choice e = st->c.choice;
    fv__conv2d_key(d, op->has_bias, e.key, sizeof e.key);
    e.workspace = st->c.ws;
    e.ms = isfinite(st->ms) ? st->ms : 0.0f;
    if (strncmp(st->c.how, "profile", 7) != 0) {
        snprintf(e.how, sizeof e.how, "%s",
                 (d->flags & FV_CONV2D_AUTOTUNE) ? "autotune" : "heuristics");
        fv__profile_put(ctx->profile, &e); /* a full profile only loses persistence */
    }
    fv__log(ctx, FV_LOG_INFO, "conv2d %dx%dx%d -> %dx%dx%d (%dx%d): %s %s, %s, %s, ws %zu, %s",
            d->h, d->w, d->c, op->p, op->q, d->k, d->r, d->s, fv__engine_path_name(st->c.path),
            st->c.engine, st->c.how, st->c.f.name, st->c.ws,
            st->c.tensor_cores ? "tensor cores" : "no tensor cores");
    return FV_OK;
}

/* cuDNN's candidates of form f into out[*n..]: the fused graph, then (when
 * there is an epilogue) the bare conv graph with fovea's epilogue kernel:
 * list A of each first, the fallback lists after (their engines are often
 * slow, without tensor cores); then the legacy API (always when tuning, else
 * when no graph runs), and when tuning each legacy algo again through the
 * fused legacy call. Appends what it found to why. */
static void cudnn_candidates(fv_conv2d *op, const fv__conv_form *f, int tune, fv__conv_cand *out,
                             int *n, int max, fv__conv_legacy *l, const char *sep, char *why,
                             size_t why_n) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    cudnnHandle_t h = fv__cuda_cudnn(ctx);
    int too_big = 0, offered = 0;
    int split = op->has_bias || d->activation != FV_ACT_IDENTITY;
    fv__conv_graph g, gb;
    cudnnStatus_t gs = fv__conv_graph_build(op, f, 0, h, &g);
    cudnnStatus_t bs = split ? fv__conv_graph_build(op, f, 1, h, &gb) : CUDNN_STATUS_NOT_SUPPORTED;
    for (int pass = 0; pass < 4; pass++) {
        int is_split = pass & 1;
        cudnnBackendHeurMode_t mode = pass < 2 ? CUDNN_HEUR_MODE_A : CUDNN_HEUR_MODE_FALLBACK;
        if ((is_split ? bs : gs) != CUDNN_STATUS_SUCCESS) continue;
        if (!tune && *n > 0) break;
        if (tune && mode == CUDNN_HEUR_MODE_FALLBACK && is_split) continue;
        offered += graph_candidates(op, f, is_split ? FV__PATH_GRAPH_SPLIT : FV__PATH_GRAPH,
                                    is_split ? gb.graph : g.graph, mode,
                                    pass < 2 ? "A" : "fallback", !tune, out, n, max, &too_big);
    }
    fv__conv_graph_destroy(&g);
    if (split) fv__conv_graph_destroy(&gb);
    int nlegacy_from = *n;
    if (tune || *n == 0) {
        fv_status ls = legacy_candidates(op, f, l, !tune, out, n, max);
        if (ls != FV_OK)
            fv__log(ctx, FV_LOG_DEBUG, "conv2d (%s): legacy API: %s", f->name, fv_last_error());
        else if (tune)
            legacy_fused_candidates(op, l, nlegacy_from, out, n, max);
    }
    snprintf(why, why_n, "%s[%s: graph %s, %d configs, %d over the workspace limit, %d legacy]",
             sep, f->name, gs ? cudnnGetErrorString(gs) : "built", offered, too_big,
             *n - nlegacy_from);
}

static fv_status choose(fv_conv2d *op, const float *weights, const float *bias, conv_state *st,
                        char *why, size_t why_n) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    int tune = (d->flags & FV_CONV2D_AUTOTUNE) != 0;
    fv__conv_form forms[MAX_FORMS];
    int nf = formulations(op, forms, 1);
    FV_REQUIRE(nf > 0, FV_ERR_NOT_SUPPORTED,
               "conv2d: FV_CONV2D_DIRECT: fovea's direct kernel runs groups 1, dilation 1 and "
               "K <= 64 only (this op: groups %d, dilation %dx%d, K %d)",
               d->groups, d->dilation_h, d->dilation_w, d->k);

    /* 1. the profile */
    if (!tune && !(d->flags & (FV_CONV2D_NO_PROFILE | FV_CONV2D_DIRECT))) {
        char key[FV__PROFILE_KEY];
        fv__conv2d_key(d, op->has_bias, key, sizeof key);
        const fv__engine_choice *e = fv__profile_find(ctx->profile, key);
        if (e && e->path == FV__PATH_DIRECT && (d->flags & FV_CONV2D_NO_DIRECT)) {
            fv__log(ctx, FV_LOG_DEBUG,
                    "conv2d: profile entry %s names fovea's direct kernel, which the op's flags "
                    "exclude; choosing anew",
                    key);
            e = NULL;
        }
        if (e) {
            if (from_profile(op, e, forms, nf, &st->c, &st->l) == FV_OK) {
                st->ms = e->ms;
                st->candidates = 1;
                return FV_OK;
            }
            fv__log(ctx, FV_LOG_WARN,
                    "conv2d: profile entry %s (%s engine %lld) no longer builds here; choosing "
                    "by heuristics",
                    key, fv__engine_path_name(e->path), (long long)e->engine);
        }
    }
    if (!tune) nf = formulations(op, forms, 0);

    /* 2./3. candidates per formulation */
    for (int fi = 0; fi < nf; fi++) {
        const fv__conv_form *f = &forms[fi];
        enum { MAXC = 64 };
        fv__conv_cand *c = calloc(MAXC, sizeof *c);
        FV_REQUIRE(c, FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory");
        int n = 0;
        fv__conv_legacy l;
        memset(&l, 0, sizeof l);
        size_t used = strlen(why);
        if (f->kr) { /* fovea's direct kernel */
            char dwhy[160] = "";
            int offered = direct_candidates(op, f, !tune, c, &n, MAXC, dwhy, sizeof dwhy);
            snprintf(why + used, why_n - used, "%s[%s: %d variants%s%s]", used ? " " : "", f->name,
                     offered, offered ? "" : ": ", offered ? "" : dwhy);
        } else {
            cudnn_candidates(op, f, tune, c, &n, MAXC, &l, used ? " " : "", why + used,
                             why_n - used);
        }
        int best = n ? 0 : -1;
        if (tune && n >= 1) {
            float *ms = calloc((size_t)n, sizeof *ms);
            void *w = NULL, *b = NULL;
            fv_status s = ms ? upload_weights(op, f, weights, bias, &w, &b)
                             : fv__error(FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory");
            if (s == FV_OK) s = fv__conv_time(op, c, &l, n, w, b, ms);
            fv_pool_free(ctx->pools[FV_POOL_DEVICE], w);
            fv_pool_free(ctx->pools[FV_POOL_DEVICE], b);
            if (s != FV_OK) {
                free(ms);
                for (int i = 0; i < n; i++)
                    cand_free(&c[i]);
                free(c);
                fv__conv_legacy_destroy(&l);
                return fv__error_prefix(s, "conv2d autotune");
            }
            best = -1;
            for (int i = 0; i < n; i++)
                if (isfinite(ms[i]) && (best < 0 || ms[i] < ms[best])) best = i;
            /* compare across formulations: keep the faster */
            if (best >= 0 && st->c.path && !(ms[best] < st->ms)) best = -1;
            if (best >= 0) {
                char from[48];
                snprintf(from, sizeof from, "%.40s", c[best].how);
                snprintf(c[best].how, sizeof c[best].how, "autotune: fastest, %.4f ms (%s)",
                         (double)ms[best], from);
                st->ms = ms[best];
            }
            free(ms);
        }
        st->candidates += n;
        if (best >= 0) {
            cand_free(&st->c);
            fv__conv_legacy_destroy(&st->l);
            st->c = c[best];
            c[best].plan = NULL;
            if (st->c.path == FV__PATH_LEGACY || st->c.path == FV__PATH_LEGACY_FUSED) {
                st->l = l;
                memset(&l, 0, sizeof l);
            }
        }
        for (int i = 0; i < n; i++)
            cand_free(&c[i]);
        free(c);
        fv__conv_legacy_destroy(&l);
        if (st->c.path && !tune) return FV_OK;
    }
    if (st->c.path) return FV_OK;
    return fv__error(FV_ERR_NOT_SUPPORTED,
                     "conv2d %dx%dx%d -> K=%d %dx%d: no engine runs it within the %zu-byte "
                     "workspace limit: %s",
                     d->h, d->w, d->c, d->k, d->r, d->s, ctx->workspace_limit, why);
}

void fv__cuda_conv2d_destroy(fv_conv2d *op) {
    conv_state *st = op->be_state;
    if (!st) return;
    fv_context_synchronize(op->ctx); /* nothing queued may still use the weights */
    for (int i = 0; i < VP_CACHE; i++)
        if (st->vps[i].vp) cudnnBackendDestroyDescriptor(st->vps[i].vp);
    cand_free(&st->c);
    fv__conv_legacy_destroy(&st->l);
    fv_pool *dev = op->ctx->pools[FV_POOL_DEVICE];
    fv_pool_free(dev, st->w);
    fv_pool_free(dev, st->b);
    free(st);
    op->be_state = NULL;
}

/* ---- forward --------------------------------------------------------------- */
static fv_status variant_pack(fv_conv2d *op, conv_state *st, const void *x, void *y, void *ws,
                              fv__bdesc *out) {
    for (int i = 0; i < VP_CACHE; i++)
        if (st->vps[i].vp && st->vps[i].x == x && st->vps[i].y == y && st->vps[i].ws == ws) {
            *out = st->vps[i].vp;
            return FV_OK;
        }
    vp_entry *e = &st->vps[st->vp_next];
    st->vp_next = (st->vp_next + 1) % VP_CACHE;
    if (e->vp) cudnnBackendDestroyDescriptor(e->vp);
    e->vp = NULL;
    FV_CUDNN_TRY(fv__conv_variant_pack(st->c.path == FV__PATH_GRAPH && op->has_bias, x, st->w, y,
                                       st->b, ws, &e->vp));
    e->x = x;
    e->y = y;
    e->ws = ws;
    *out = e->vp;
    return FV_OK;
}

fv_status fv__cuda_conv2d_forward(fv_conv2d *op, const fv_tensor *in, fv_tensor *out) {
    conv_state *st = op->be_state;
    void *ws = fv__cuda_state_of(op->ctx)->ws;
    const void *x = fv__tensor_ptr(in);
    void *y = fv__tensor_ptr(out);
    fv__bdesc vp = NULL;
    if (fv__conv_uses_graph(st->c.path)) FV_TRY(variant_pack(op, st, x, y, ws, &vp));
    return fv__conv_run(op, &st->c, &st->l, vp, x, y, st->w, st->b, ws);
}

fv_status fv__cuda_conv2d_bind(fv_conv2d *op, const fv_tensor *in, fv_tensor *out) {
    conv_state *st = op->be_state;
    fv__bdesc vp = NULL;
    void *ws = fv__cuda_state_of(op->ctx)->ws;
    if (fv__conv_uses_graph(st->c.path))
        FV_TRY(variant_pack(op, st, fv__tensor_ptr(in), fv__tensor_ptr(out), ws, &vp));
    /* one run with exactly these pointers: cuDNN finishes per-binding set-up
     * at the first execution */
    FV_TRY(fv__conv_run(op, &st->c, &st->l, vp, fv__tensor_ptr(in), fv__tensor_ptr(out), st->w,
                        st->b, ws));
    FV_CUDA_TRY(cudaStreamSynchronize(fv__cuda_stream(op->ctx)));
    return FV_OK;
}

void fv__cuda_conv2d_info(const fv_conv2d *op, fv_conv2d_info *out) {
    const conv_state *st = op->be_state;
    if (!st) return;
    snprintf(out->path, sizeof out->path, "%s", fv__engine_path_name(st->c.path));
    snprintf(out->engine, sizeof out->engine, "%s", st->c.engine);
    snprintf(out->choice, sizeof out->choice, "%.63s", st->c.how);
    snprintf(out->layout, sizeof out->layout, "%s", st->c.f.name);
    out->tensor_cores = st->c.tensor_cores;
    out->fused = st->c.path == FV__PATH_GRAPH || st->c.path == FV__PATH_DIRECT ||
                 st->c.path == FV__PATH_LEGACY_FUSED;
    out->workspace_bytes = st->c.ws;
    out->measured_ms = isfinite(st->ms) ? st->ms : 0.0f;
    out->candidates = st->candidates;
}

/* ---- fovea_cuda.h -------------------------------------------------------------- */
fv_status fv_context_cuda_stream(fv_context *ctx, cudaStream_t *out) {
    FV_REQUIRE(ctx && out, FV_ERR_BAD_PARAM, "fv_context_cuda_stream: %s is NULL",
               ctx ? "out" : "ctx");
    FV_REQUIRE(ctx->backend == FV_BACKEND_CUDA, FV_ERR_NOT_SUPPORTED,
               "fv_context_cuda_stream: the context runs on the CPU backend");
    *out = fv__cuda_stream(ctx);
    return FV_OK;
}
