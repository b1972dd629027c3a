/* The convolution engine's candidates: every runnable way to do an op
 * (cuDNN graph plans from the heuristics lists, legacy algorithms, plain
 * and fused, fovea's direct kernel), and the one a profile entry names.
 * conv_engine.c chooses among them (conv_tune.c times them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv_engine.h"

#define MAX_CFGS 48

void fv__conv_cand_free(fv__conv_cand *c) {
    if (c->plan) cudnnBackendDestroyDescriptor(c->plan);
    c->plan = NULL;
}

/* Whether out[0..n) already holds path's config e on form f. */
static int has_config(const fv__conv_cand *out, int n, fv__engine_path path, const fv__conv_form *f,
                      const fv__engine_choice *e) {
    for (int j = 0; j < n; j++)
        if (out[j].path == path && out[j].f.cd == f->cd && out[j].f.groups == f->groups &&
            out[j].choice.engine == e->engine && out[j].choice.nknobs == e->nknobs &&
            !memcmp(out[j].choice.knob_value, e->knob_value, sizeof(int64_t) * (size_t)e->nknobs))
            return 1;
    return 0;
}

/* Appends the candidate of graph config cfg (path, form f) to out[*n] unless
 * its plan does not finalize, its workspace is over the limit (counted in
 * *too_big) or out already holds it. how: its origin (a format taking the
 * engine name). Returns 1 when appended. */
static int add_graph_candidate(fv_conv2d *op, const fv__conv_form *f, fv__engine_path path,
                               fv__bdesc cfg, const char *how, fv__conv_cand *out, int *n,
                               int *too_big) {
    fv_context *ctx = op->ctx;
    fv__conv_cand c;
    memset(&c, 0, sizeof c);
    int64_t ws = 0;
    if (fv__conv_plan(cfg, fv__cuda_cudnn(ctx), &c.plan, &ws)) return 0;
    if ((size_t)ws > ctx->workspace_limit) {
        (*too_big)++;
        fv__conv_cand_free(&c);
        return 0;
    }
    fv__conv_cfg_describe(cfg, &c.choice, &c.tensor_cores);
    if (has_config(out, *n, path, f, &c.choice)) { /* the fallback list repeats list A's */
        fv__conv_cand_free(&c);
        return 0;
    }
    c.path = path;
    c.f = *f;
    c.ws = (size_t)ws;
    c.choice.path = path;
    c.choice.cdecl_ = f->cd;
    snprintf(c.engine, sizeof c.engine, "eng%lld", (long long)c.choice.engine);
    snprintf(c.how, sizeof c.how, "%s%s", how,
             path == FV__PATH_GRAPH_SPLIT  ? ", bare conv + epilogue"
             : path == FV__PATH_GRAPH_PW   ? ", runtime-fusion form"
             : path == FV__PATH_GRAPH_PW16 ? ", runtime-fusion form, FP16"
                                           : "");
    out[(*n)++] = c;
    return 1;
}

/* Graph candidates of form f from one heuristics mode into out[*n..]; stops
 * after the first when first_only. Returns how many configs were offered. */
static int graph_candidates(fv_conv2d *op, const fv__conv_form *f, fv__engine_path path,
                            fv__bdesc graph, cudnnBackendHeurMode_t mode, const char *mode_name,
                            int first_only, fv__conv_cand *out, int *n, int max, int *too_big) {
    fv__bdesc cfgs[MAX_CFGS] = {0};
    int got = fv__conv_graph_configs(graph, mode, cfgs, MAX_CFGS);
    for (int i = 0; i < got; i++) {
        if (*n >= max || (first_only && *n > 0)) break;
        char how[64];
        snprintf(how, sizeof how, "heuristics %s #%d of %d", mode_name, i, got);
        add_graph_candidate(op, f, path, cfgs[i], how, out, n, too_big);
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

/* The direct kernel's geometry for form f: variant = th rows per block, + 100
 * when persistent, + 200 with two rows a warp (both: + 300), + 400 with
 * packed taps; 800 + th: the warpgroup-MMA kernel's rows form
 * (conv_wgmma.cuh: persistent, th rows of 64 columns); 900 + wn: its
 * pixels-along-N form (segments of wn rows x 128 columns), 950 + wn with a
 * step's taps in pairs (the engine number profiles store). */
static fv__conv_direct_geom direct_geom(const fv_conv2d *op, const fv__conv_form *f, int variant) {
    const fv_conv2d_desc *d = &op->desc;
    const int wg = variant >= 900 ? 2 : variant >= 800, wn = wg == 2 ? variant % 50 : 0,
              wp = variant >= 950;
    variant = wg == 2 ? 100 : wg ? 100 + variant % 100 : variant % 400;
    return (fv__conv_direct_geom){.n = d->n,
                                  .h = d->h,
                                  .w = d->w,
                                  .cs = f->cs,
                                  .cm = f->cd,
                                  .pair = f->pair,
                                  .p = op->p,
                                  .q = op->q,
                                  .kp = f->kp,
                                  .ys = f->ys,
                                  .k = d->k,
                                  .r = d->r,
                                  .s = d->s,
                                  .sh = d->stride_h,
                                  .sw = d->stride_w,
                                  .ph = d->pad_h,
                                  .pw = d->pad_w,
                                  .th = variant % 100,
                                  .persistent = variant / 100 % 2,
                                  .two = variant / 100 >= 2,
                                  .pc = f->pc,
                                  .wg = wg,
                                  .wn = wn,
                                  .wp = wp};
}

/* A direct-kernel candidate of form f, variant as in direct_geom; 0 (why
 * set) when the kernel cannot run it here. */
static int direct_candidate(fv_conv2d *op, const fv__conv_form *f, int variant, fv__conv_cand *c,
                            char *why, size_t why_n) {
    memset(c, 0, sizeof *c);
    if (variant < 0 || variant > 999 || (variant >= 400 && variant < 800) != (f->pc != 0)) {
        snprintf(why, why_n, "variant %d%s", variant,
                 f->pc ? " (packed taps: 400-799)" : " (0-399 or 800-999 without packed taps)");
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
    if (c->dg.wg == 2) {
        snprintf(c->engine, sizeof c->engine, "fovea-wgmma-px-%drows%s", c->dg.wn,
                 c->dg.wp ? "-paired" : "");
        snprintf(c->how, sizeof c->how,
                 "fovea direct kernel on warpgroup MMA, pixels along N, warp-specialized, "
                 "%d x 128 segments%s, window by TMA, %zu B shared",
                 c->dg.wn, c->dg.wp ? ", taps in pairs across rows" : "", smem);
        return 1;
    }
    if (c->dg.wg) {
        snprintf(c->engine, sizeof c->engine, "fovea-wgmma-%drows", th);
        snprintf(c->how, sizeof c->how,
                 "fovea direct kernel on warpgroup MMA, %d x 64 tiles, persistent, window by "
                 "TMA, %zu B shared",
                 th, smem);
        return 1;
    }
    snprintf(c->engine, sizeof c->engine, "fovea-direct-%drows%s%s%s%s", th,
             c->dg.persistent ? "-persistent" : "", c->dg.two ? "-2w" : "",
             c->dg.pc ? "-packed" : "", c->dg.tma ? "-tma" : "");
    snprintf(c->how, sizeof c->how, "fovea direct kernel, %d rows a block%s%s%s%s, %zu B shared",
             th, c->dg.persistent ? ", persistent" : "", c->dg.two ? ", two rows a warp" : "",
             c->dg.pc ? ", packed taps" : "", c->dg.tma ? ", window by TMA" : "", smem);
    return 1;
}

/* Direct candidates of form f into out[*n..] (the first only when
 * first_only); returns how many were offered. The likely fastest first
 * (H100): where the kernel has them (8 channels read, 3x3 or 5x5, stride 1,
 * K <= 32), persistent blocks of 16 rows, two a warp (316: on
 * 1920x1080x8->32 5x5 0.095 ms against 0.128 for the next choice, on
 * 2048x2048x8->8 3x3 0.068 against 0.094); then 16, 8 and 4 rows a block,
 * a block a tile or persistent: persistent first for outputs up to 600k
 * pixels (a few waves of blocks), 16 rows first for windows of 25 taps or
 * more, else 8; then the other two-rows-a-warp variants. Wide pixels (16
 * or 32 channels read) have persistent two-rows variants only: 8 rows a
 * block first (1024x1024x32->32 3x3: 0.067 ms; 16 rows 0.077, 4 rows
 * 0.071, the best one-row variant 0.087); so has stride 2 (4 or 8 channels
 * read, 3x3, 5x5, 9x9): 8 rows first, which autotune took on all five
 * strided shapes measured (1920x1080x4->32 9x9 s2: 0.0449 ms, 16 rows
 * 0.0492, the best one-row variant 0.0661). Before all of them, on large
 * images (2^20 output pixels or more) where it runs (SM 9.0), the
 * warpgroup-MMA kernel's pixels-along-N form for 32 channels read, 3x3, K
 * 32 (902), and with taps in pairs for 8 read, 5x5, K 32 (958): H200,
 * 1024x1024x32->32 3x3 0.0494 ms against 0.0646 for 308;
 * 1920x1080x8->32 5x5 0.0690 against 0.0810 for 316 (RESULTS.md, session
 * 53). */
int fv__conv_direct_candidates(fv_conv2d *op, const fv__conv_form *f, int first_only,
                               fv__conv_cand *out, int *n, int max, char *why, size_t why_n) {
    static const int big[] = {16, 8, 4}, small[] = {8, 4, 16}, two[] = {316, 216, 208, 308, 312},
                     two_wide[] = {308, 304, 316, 312};
    const fv_conv2d_desc *d = &op->desc;
    /* wide pixels and stride 2: persistent two-rows variants only, 8 rows first */
    const int persistent_two = f->cd >= 16 || (d->stride_h == 2 && d->stride_w == 2);
    const int *ths = d->r * d->s >= 25 ? big : small;
    int first_persistent = (long)d->n * op->p * op->q <= 600000;
    int offered = 0;
    const int wg_first = (long)d->n * op->p * op->q < (1L << 20) || f->pc ? 0
                         : f->cd == 32                                    ? 902
                         : f->cd == 8 && f->kp == 32 && d->r == 5         ? 958
                                                                          : 0;
    if (wg_first && *n < max) {
        char why2[160]; /* refused off SM 9.0: not the reason */
        if (direct_candidate(op, f, wg_first, &out[*n], why2, sizeof why2)) {
            (*n)++;
            offered++;
            if (first_only) return offered;
        }
    }
    if (f->pc) { /* packed taps: persistent, two rows a warp (4-16 rows) where they
                    run, then one (4 or 8 rows: on the stems 4 ran 0.0059 and 0.0072 ms
                    against 8's 0.0062 and 0.0084, H100) */
        static const int packed[] = {708, 716, 712, 704, 504, 508};
        for (int i = 0; i < 6 && *n < max; i++) {
            char why2[160]; /* one row a warp runs more ops: its refusal is the reason */
            if (!direct_candidate(op, f, packed[i], &out[*n], i < 4 ? why2 : why,
                                  i < 4 ? sizeof why2 : why_n))
                continue;
            (*n)++;
            offered++;
            if (first_only) break;
        }
        return offered;
    }
    for (int i = 0; i < 11 && *n < max; i++) {
        /* i 0: 316 (wide pixels and stride 2: 308); 1-6: one row a warp;
         * 7-10: the other two-rows variants (wide pixels and stride 2: 304,
         * 316, 312, the only others they have) */
        const int one = i >= 1 && i <= 6;
        if (i == 10 && persistent_two) continue;
        int variant = one              ? ths[(i - 1) % 3] + (first_persistent ^ (i >= 4)) * 100
                      : persistent_two ? two_wide[i ? i - 6 : 0]
                                       : two[i ? i - 6 : 0];
        char why2[160]; /* two rows a warp fits few ops: its refusal is not the reason */
        if (!direct_candidate(op, f, variant, &out[*n], one ? why : why2,
                              one ? why_n : sizeof why2))
            continue;
        (*n)++;
        offered++;
        if (first_only) break;
    }
    /* the warpgroup-MMA kernel (SM 9.0 builds and devices; stride 1, K <=
     * 32): pixels along N, 8 channels (3x3 or 5x5), segments of 16 and 8
     * rows (K 32: also with taps in pairs), or 32 channels (3x3), segments
     * of 2; the rows form (8 channels), 8 rows, 16, 4 */
    static const int wgv[] = {916, 908, 902, 958, 966, 808, 816, 804};
    for (int i = 0; i < 8 && *n < max && !(first_only && offered); i++) {
        char why2[160];
        if (wgv[i] == wg_first || !direct_candidate(op, f, wgv[i], &out[*n], why2, sizeof why2))
            continue;
        (*n)++;
        offered++;
    }
    return offered;
}

/* ---- fovea's split-reduction GEMM ------------------------------------------ */
/* Variant = output channels a block x 100 + splits (the profile's engine). */
static fv__conv_gemm_geom gemm_geom(const fv_conv2d *op, const fv__conv_form *f, int variant) {
    const fv_conv2d_desc *d = &op->desc;
    return (fv__conv_gemm_geom){.n = d->n,
                                .h = d->h,
                                .w = d->w,
                                .cs = f->cs,
                                .p = op->p,
                                .q = op->q,
                                .kp = f->kp,
                                .ys = f->ys,
                                .k = d->k,
                                .r = d->r,
                                .s = d->s,
                                .sh = d->stride_h,
                                .sw = d->stride_w,
                                .ph = d->pad_h,
                                .pw = d->pad_w,
                                .dh = d->dilation_h,
                                .dw = d->dilation_w,
                                .bn = variant / 100,
                                .splits = variant % 100};
}

static int gemm_candidate(fv_conv2d *op, const fv__conv_form *f, int variant, fv__conv_cand *c,
                          char *why, size_t why_n) {
    memset(c, 0, sizeof *c);
    c->gg = gemm_geom(op, f, variant);
    if (variant < 0 || !fv__conv_gemm_check(&c->gg, why, why_n)) return 0;
    c->ws = fv__conv_gemm_workspace(&c->gg);
    if (c->ws > op->ctx->workspace_limit) {
        snprintf(why, why_n, "needs %zu bytes of workspace, the limit is %zu", c->ws,
                 op->ctx->workspace_limit);
        return 0;
    }
    c->path = FV__PATH_GEMM;
    c->f = *f;
    c->tensor_cores = 1;
    c->choice.path = FV__PATH_GEMM;
    c->choice.cdecl_ = f->cd;
    c->choice.engine = variant;
    snprintf(c->engine, sizeof c->engine, "fovea-gemm-64x%d-split%d", c->gg.bn, c->gg.splits);
    snprintf(c->how, sizeof c->how,
             "fovea implicit GEMM, 64 pixels x %d channels a block, reduction of %d steps split "
             "%d ways",
             c->gg.bn, c->gg.steps, c->gg.splits);
    return 1;
}

/* Whether the kernel runs op with form f's weights: groups 1, FP16, the
 * dense form reading every stored channel. */
static int gemm_form_ok(const fv_conv2d *op, const fv__conv_form *f) {
    const fv_conv2d_desc *d = &op->desc;
    return d->groups == 1 && d->dtype == FV_DTYPE_F16 && !f->kr && f->groups == 1 &&
           f->cd == f->cs && f->wc == f->cs;
}

int fv__conv_gemm_offered(const fv_conv2d *op, const fv__conv_form *f, int *preferred) {
    const fv_conv2d_desc *d = &op->desc;
    *preferred = 0;
    if (!gemm_form_ok(op, f)) return 0;
    long sms = op->ctx->info.multiprocessors > 0 ? op->ctx->info.multiprocessors : 1;
    long m = (long)d->n * op->p * op->q, steps = (long)d->r * d->s * ((f->cs + 31) / 32);
    if ((m + 63) / 64 * ((f->kp + 63) / 64) > 2 * sms) return 0;
    *preferred = (m + 63) / 64 * ((f->kp + 31) / 32) * 2 <= sms && steps >= 64;
    return 1;
}

/* The heuristic variant: 32 channels a block, the reduction split into the
 * most power-of-2 ways that keeps one wave of blocks and 4 steps a block. */
static int gemm_heuristic(const fv_conv2d *op, const fv__conv_form *f) {
    const fv_conv2d_desc *d = &op->desc;
    long sms = op->ctx->info.multiprocessors > 0 ? op->ctx->info.multiprocessors : 1;
    long tiles = ((long)d->n * op->p * op->q + 63) / 64 * ((f->kp + 31) / 32);
    long steps = (long)d->r * d->s * ((f->cs + 31) / 32);
    int splits = 1;
    while (splits < 64 && tiles * splits * 2 <= sms && steps / (splits * 2) >= 4)
        splits *= 2;
    return 3200 + splits;
}

int fv__conv_gemm_candidates(fv_conv2d *op, const fv__conv_form *f, int first_only,
                             fv__conv_cand *out, int *n, int max) {
    int offered = 0, preferred = 0;
    if (!fv__conv_gemm_offered(op, f, &preferred)) return 0;
    char why[160];
    int first = gemm_heuristic(op, f);
    if (*n < max && gemm_candidate(op, f, first, &out[*n], why, sizeof why)) {
        (*n)++;
        offered++;
    }
    if (first_only) return offered;
    long sms = op->ctx->info.multiprocessors > 0 ? op->ctx->info.multiprocessors : 1;
    for (int bn = 32; bn <= 64; bn += 32)
        for (int splits = 1; splits <= 64 && *n < max; splits *= 2) {
            int variant = bn * 100 + splits;
            if (variant == first) continue;
            fv__conv_cand c;
            if (!gemm_candidate(op, f, variant, &c, why, sizeof why)) continue;
            /* past two waves of blocks, or under 2 steps a block: slower */
            if ((long)c.gg.tiles * splits > 2 * sms || (splits > 1 && c.gg.steps / splits < 2))
                continue;
            out[(*n)++] = c;
            offered++;
        }
    return offered;
}

/* A candidate from a profile entry, or FV_ERR_NOT_SUPPORTED. */
fv_status fv__conv_from_profile(fv_conv2d *op, const fv__engine_choice *e,
                                const fv__conv_form *forms, int nf, int use_cached,
                                fv__conv_cand *out, fv__conv_legacy *l) {
    fv_context *ctx = op->ctx;
    cudnnHandle_t h = fv__cuda_cudnn(ctx);
    for (int i = 0; i < nf; i++) {
        if (forms[i].cd != e->cdecl_ || !forms[i].kr != (e->path != FV__PATH_DIRECT)) continue;
        if (e->path == FV__PATH_DIRECT) {
            char why[160];
            if (e->engine > 999 ||
                !direct_candidate(op, &forms[i], (int)e->engine, out, why, sizeof why))
                continue;
            out->choice = *e;
            snprintf(out->how, sizeof out->how, "profile (%s, %.4f ms)", e->how, (double)e->ms);
            return FV_OK;
        }
        if (e->path == FV__PATH_GEMM) {
            char why[160];
            if (e->engine > 6464 || !gemm_form_ok(op, &forms[i]) ||
                !gemm_candidate(op, &forms[i], (int)e->engine, out, why, sizeof why))
                continue;
            out->choice = *e;
            snprintf(out->how, sizeof out->how, "profile (%s, %.4f ms)", e->how, (double)e->ms);
            return FV_OK;
        }
        memset(out, 0, sizeof *out);
        out->f = forms[i];
        out->choice = *e;
        out->path = e->path;
        if (fv__conv_uses_graph(e->path) && use_cached &&
            fv__conv_plan_cache_load(op, e, &forms[i], out) == FV_OK) {
            snprintf(out->engine, sizeof out->engine, "eng%lld", (long long)e->engine);
            snprintf(out->how, sizeof out->how, "profile+plan (%s, %.4f ms)", e->how,
                     (double)e->ms);
            return FV_OK;
        }
        if (fv__conv_uses_graph(e->path)) {
            fv__conv_graph g;
            fv__bdesc cfg = NULL;
            int64_t ws = 0;
            cudnnStatus_t s = fv__conv_graph_build(op, &forms[i], e->path, h, &g);
            if (!s) s = fv__conv_cfg_from_choice(g.graph, e, &cfg);
            if (!s) s = fv__conv_plan(cfg, h, &out->plan, &ws);
            if (!s) fv__conv_cfg_describe(cfg, &out->choice, &out->tensor_cores);
            if (cfg) cudnnBackendDestroyDescriptor(cfg);
            fv__conv_graph_destroy(&g);
            if (s || (size_t)ws > ctx->workspace_limit) {
                fv__conv_cand_free(out);
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

/* cuDNN's candidates of form f into out[*n..]: the graph in the
 * runtime-fusion form (graph-pw, where it differs), the fused graph, then
 * (when there is an epilogue) the bare conv graph with fovea's epilogue
 * kernel: list A of each first, the fallback lists after (their engines are
 * often slow, without tensor cores); then the legacy API (always when
 * tuning, else when no graph runs), and when tuning each legacy algo again
 * through the fused legacy call. Appends what it found to why. */
void fv__conv_cudnn_candidates(fv_conv2d *op, const fv__conv_form *f, int tune, fv__conv_cand *out,
                               int *n, int max, fv__conv_legacy *l, const char *sep, char *why,
                               size_t why_n) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    cudnnHandle_t h = fv__cuda_cudnn(ctx);
    int too_big = 0, offered = 0;
    int split = op->has_bias || d->activation != FV_ACT_IDENTITY,
        pw = fv__conv_graph_pw_differs(op);
    /* graph-pw16 only when tuning and with a bias (H100, 128x128x128 -> 128
     * 3x3: bias + ReLU cost 1% over the bare conv on it vs 5% on graph-pw;
     * on other shapes either may win) */
    enum { NG = 4 };
    static const fv__engine_path paths[NG] = {FV__PATH_GRAPH_PW, FV__PATH_GRAPH,
                                              FV__PATH_GRAPH_PW16, FV__PATH_GRAPH_SPLIT};
    fv__conv_graph gr[NG];
    cudnnStatus_t gst[NG];
    for (int i = 0; i < NG; i++) {
        int want =
            i == 1 || (i == 0 && pw) || (i == 2 && tune && op->has_bias) || (i == 3 && split);
        gst[i] =
            want ? fv__conv_graph_build(op, f, paths[i], h, &gr[i]) : CUDNN_STATUS_NOT_SUPPORTED;
        if (!want) memset(&gr[i], 0, sizeof gr[i]);
    }
    cudnnStatus_t gs = gst[1];
    /* list A, the fallback list, and when tuning list B (more configs, a
     * slower query; repeats of A's are dropped) */
    static const cudnnBackendHeurMode_t modes[] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK,
                                                   CUDNN_HEUR_MODE_B};
    static const char *mode_names[] = {"A", "fallback", "B"};
    /* without timing, graph-pw's pick first for 64+ output channels (H100:
     * eng4 on 128x128x128 -> 128 3x3, 7x7, 11x11 and 512x512x32 -> 64 5x5/2
     * ran 1.0-1.6x faster than the plain graph's pick), else the plain
     * graph's (1024x1024x32 -> 32 3x3: 0.106 ms vs graph-pw's eng7 0.169) */
    static const int pw_first[NG] = {0, 1, 2, 3}, graph_first[NG] = {1, 0, 2, 3};
    const int *order = tune || f->kp >= 64 ? pw_first : graph_first;
    for (int pass = 0; pass < 3 * NG; pass++) {
        int gi = order[pass % NG], m = pass / NG;
        if (gst[gi] != CUDNN_STATUS_SUCCESS) continue;
        if (!tune && *n > 0) break;
        if (!tune && m == 2) continue;
        if (tune && modes[m] == CUDNN_HEUR_MODE_FALLBACK && paths[gi] == FV__PATH_GRAPH_SPLIT)
            continue;
        offered += graph_candidates(op, f, paths[gi], gr[gi].graph, modes[m], mode_names[m], !tune,
                                    out, n, max, &too_big);
    }
    for (int i = 0; i < NG; i++)
        fv__conv_graph_destroy(&gr[i]);
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
