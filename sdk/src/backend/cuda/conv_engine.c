/* Convolution on the CUDA backend.
 *
 * One fused cuDNN graph per op: conv_fprop (FP16 NHWC in, FP32 compute) ->
 * bias add -> activation -> FP16 NHWC out (conv_graph.c), in two forms: the
 * plain graph (FP16 bias) and graph-pw (FP32 bias; an identity tail when
 * there is nothing to fuse), the only form cuDNN's runtime-fusion engines
 * take (on the H100 its eng4 is the fastest engine for most deep layers,
 * bare or fused). Channels are
 * stored padded to 8; padded weights and bias are zero, so padded output
 * lanes hold act(0): 0 for every activation but sigmoid, which a small
 * kernel fixes up.
 *
 * Engine choice at creation, in this order:
 *  1. the context's profile (fovea-calibrate, or earlier autotuning): the
 *     engine is rebuilt from its index and knobs, no heuristics, no timing;
 *     a runtime-compiled engine's plan is deserialized from the entry's
 *     cached plan instead of compiled (conv_plan_cache.c: "profile+plan"),
 *     and compiled when that plan does not load or run;
 *  2. with FV_CONV2D_AUTOTUNE: every config of heuristics A, the fallback
 *     list and heuristics B, of each graph (graph-pw, plain, and bare +
 *     epilogue kernel), for each way of declaring the input channels (as they are,
 *     padded to 4, padded to 8), plus the legacy algorithms (each also
 *     through cudnnConvolutionBiasActivationForward when the op has a bias
 *     or an activation), plus fovea's direct kernel (kernels/conv_direct.cu:
 *     its block shapes and channel widths) and, for small outputs, its
 *     split-reduction GEMM (kernels/conv_gemm.cu: tile widths and splits),
 *     timed; fastest kept;
 *  3. otherwise the direct kernel where it is known to win (direct_preferred),
 *     or the GEMM (fv__conv_gemm_offered's preferred), else heuristics A,
 *     then the fallback list (graph-pw's configs first for 64+ output channels,
 *     else the plain graph's), then the legacy API (cudnnConvolutionForward +
 *     an epilogue kernel), then the direct kernel.
 * FV_CONV2D_NO_DIRECT leaves fovea's kernels out (cuDNN only);
 * FV_CONV2D_DIRECT takes the direct kernel and nothing else (and no
 * profile).
 * Each op reports which (fv_conv2d_info). The choice goes into the
 * context's profile (fv_context_profile_save), with the plan of a
 * runtime-compiled engine, serialized.
 *
 * The run path does no host work beyond the launches: variant packs are
 * cached per (input, output, workspace), and the workspace is one region of
 * the device pool shared by all ops of the context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "conv_engine.h"
#include "fovea/fovea_cuda.h"
#include "kernels/conv_epilogue.cuh"

#define VP_CACHE  4
#define MAX_FORMS 8

typedef struct vp_entry {
    const void *x, *z;
    void *y;
    void *ws;
    fv__bdesc vp;
} vp_entry;

typedef struct conv_state {
    fv__conv_cand c;   /* the chosen way to run (owns its plan) */
    fv__conv_legacy l; /* legacy descriptors (legacy and legacy-fused paths) */
    void *w, *b;       /* device FP16 weights [kp][r][s][wc], bias (fv__conv_bias_bytes) */
    vp_entry vps[VP_CACHE];
    int vp_next;
    void *counters; /* the gemm path's tile counters (device pool) */
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
static int add_form(const fv_conv2d *op, fv__conv_form *out, int n, int groups, int wc, int kp,
                    int cs, int cd, const char *what) {
    for (int i = 0; i < n; i++)
        if (!out[i].kr && out[i].groups == groups && out[i].cd == cd && out[i].wc == wc) return n;
    out[n] = (fv__conv_form){
        .groups = groups, .wc = wc, .kp = kp, .cs = cs, .cd = cd, .ys = op->ys ? op->ys : kp};
    if (cd == cs)
        snprintf(out[n].name, sizeof out[n].name, "%s, C padded to %d, K to %d", what, cs, kp);
    else
        snprintf(out[n].name, sizeof out[n].name, "%s, C stored as %d, read as %d, K %d", what, cs,
                 cd, kp);
    return n + 1;
}

/* fovea's direct kernel reading cm of the cp stored channels (pair: 4 in
 * pairs of pixels; pc: 4 read, the op's pc channels a tap packed). */
static int add_direct_form(const fv_conv2d *op, fv__conv_form *out, int n, int cm, int pair,
                           int pc) {
    const fv_conv2d_desc *d = &op->desc;
    int cp = FV_ROUND_UP(d->c, 8), kp = FV_ROUND_UP(d->k, 8);
    if (cm > cp || kp > 64) return n;
    int kr = pc     ? FV_ROUND_UP(d->s * pc, 16)
             : pair ? 16 * (d->s / 2 > 1 ? d->s / 2 : 1)
                    : FV_ROUND_UP(d->s * cm, 16);
    out[n] = (fv__conv_form){.groups = 1,
                             .wc = pc ? pc : cm,
                             .kp = kp,
                             .cs = cp,
                             .cd = cm,
                             .kr = kr,
                             .pair = pair,
                             .pc = pc,
                             .ys = op->ys ? op->ys : kp};
    if (pc)
        snprintf(out[n].name, sizeof out[n].name,
                 "direct, C stored as %d, taps of %d channels packed, K %d", cp, pc, kp);
    else
        snprintf(out[n].name, sizeof out[n].name, "direct, C stored as %d, read as %d%s, K %d", cp,
                 cm, pair ? " in pairs" : "", kp);
    return n + 1;
}

/* Whether the direct kernel's two-rows-a-warp variants fit d's geometry
 * (stride 1, 3x3 or 5x5); their channel and K rules: direct_forms,
 * direct_preferred, fv__conv_direct_check. */
static int two_rows_geometry(const fv_conv2d_desc *d) {
    return d->stride_h == 1 && d->stride_w == 1 && d->r == d->s && (d->r == 3 || d->r == 5);
}

/* Where packed taps run with one row a warp (conv_direct.cuh): C of 3 or 4,
 * square 3x3 to 7x7 filters (9x9 on 4 channels), strides 1-4, K of 16, 32
 * or 64 as stored. */
static int packed_one_geometry(const fv_conv2d_desc *d) {
    int kp = FV_ROUND_UP(d->k, 8);
    return (d->c == 3 || d->c == 4) && d->r == d->s &&
           (d->r == 3 || d->r == 5 || d->r == 7 || (d->r == 9 && d->c == 4)) && d->stride_h >= 1 &&
           d->stride_h <= 4 && d->stride_w >= 1 && d->stride_w <= 4 &&
           (kp == 16 || kp == 32 || kp == 64);
}

/* Where those come first: on 3 channels (4 read: a quarter of each filter
 * row's positions are padding; 7x7 s2 K 64, ResNet's stem, 0.0072 ms
 * against 0.0094 reading 4 and 0.0138 for cuDNN's best engine, H100), and
 * on 4 at an odd stride (4 read goes in pairs of pixels there). On 4 at an
 * even stride, 4 read is already a packed filter row, taken in place:
 * 1920x1080x4 -> 32 9x9 s2 ran 0.0661 ms that way against 0.0737 packed. */
static int packed_one_first(const fv_conv2d_desc *d) {
    return packed_one_geometry(d) && (d->c == 3 || d->stride_w % 2);
}

/* The direct kernel's forms: it reads 4, 8, 16 or 32 channels a pixel, all
 * of the op's; 4 (C <= 4) as they are with an even horizontal stride, else
 * in pairs of pixels. None when the op is outside its range (C > 32 among
 * others: reading the first 32 channels would compute another
 * convolution). With C <= 4 where two rows a warp run (stride 1, 3x3 or
 * 5x5, K <= 32): first packed taps (C of 1, 3 or 4: a filter row's taps in
 * one 16-wide step), then 8 channels read (the input is stored as 8
 * channels either way, so reading 8 moves the same sectors; on
 * 1920x1080x3->32 5x5 (H100) it ran 0.094 ms against 0.130 for the
 * 4-channel form's heuristic choice); but 8 channels read first for 5x5
 * K 32 on large images where the pixels-along-N kernel runs (below).
 * Elsewhere, where packed taps run one row a warp (strides up to 4, 7x7
 * and 9x9, K 64), they come first or after the 4-channel form
 * (packed_one_first). */
static int direct_forms(const fv_conv2d *op, fv__conv_form *out, int n) {
    const fv_conv2d_desc *d = &op->desc;
    if (d->groups != 1 || d->dilation_h != 1 || d->dilation_w != 1 || d->dtype != FV_DTYPE_F16 ||
        d->c > 32)
        return n;
    int cm = d->c <= 8 ? 8 : d->c <= 16 ? 16 : 32;
    int two = two_rows_geometry(d) && FV_ROUND_UP(d->k, 8) <= 32;
    int packed_first = ((d->c == 1 || d->c == 3 || d->c == 4) && two) || packed_one_first(d);
    /* Before packed taps, on large images where it runs (SM 9.0), the form
     * of the pixels-along-N kernel with taps in pairs (8 channels read, 5x5,
     * K 32): 1920x1080x3->32 5x5 0.0633 ms against packed taps' 0.0681
     * (H200, RESULTS.md, session 54) */
    int px_first = d->c <= 4 && two && d->r == 5 && FV_ROUND_UP(d->k, 8) == 32 &&
                   (long)d->n * op->p * op->q >= (1L << 20) &&
                   fv__conv_direct_seq_bytes(fv__cuda_device(op->ctx), 32, 5, 5, 1, 1, 8, 8) > 0;
    if (px_first) n = add_direct_form(op, out, n, 8, 0, 0);
    if (packed_first) n = add_direct_form(op, out, n, 4, 0, d->c);
    if (d->c <= 4 && two && !px_first) n = add_direct_form(op, out, n, 8, 0, 0);
    if (d->c <= 4) n = add_direct_form(op, out, n, 4, d->stride_w % 2 != 0, 0);
    if (!packed_first && packed_one_geometry(d)) n = add_direct_form(op, out, n, 4, 0, d->c);
    return d->c <= 4 && two ? n : add_direct_form(op, out, n, cm, 0, 0);
}

/* The heuristic for the direct kernel without timing, from the H100
 * benchmark (docs/bench/RESULTS.md): at most 8 input channels and 32
 * outputs, where cuDNN's tiles are mostly padding (there it ran 1.0-2.0x
 * faster than cuDNN's best engine); and 9-32 input channels (wide pixels)
 * where two rows a warp run (stride 1, 3x3 or 5x5, K of 16 or 32) on large
 * images (2^18 output pixels or more): 1024x1024x32->32 3x3 took 0.067 ms
 * against cuDNN's best 0.105. Other wide-pixel layers ran 0.72-0.99x of
 * cuDNN's best with one row a warp at stride 1 on three shapes but 1.9x at
 * 5x5 stride 2 with K 64: autotuning decides there. And RGB stems with K
 * 64 where packed taps come first: ResNet's 224x224x3 -> 64 7x7 s2 ran
 * 0.0072 ms packed against 0.0260 for cuDNN's heuristic pick and 0.0138
 * for its best engine (H100). */
static int direct_preferred(const fv_conv2d *op) {
    const fv_conv2d_desc *d = &op->desc;
    int kp = FV_ROUND_UP(d->k, 8);
    if (d->c <= 8) return kp <= 32 || (kp == 64 && packed_one_first(d));
    return d->c <= 32 && (kp == 16 || kp == 32) && two_rows_geometry(d) &&
           (long)d->n * op->p * op->q >= (1L << 18);
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
        n = add_form(op, out, n, cp, 1, cp, cp, cp, "depthwise");
    } else if (d->groups > 1 && d->c % 8 == 0 && d->k % 8 == 0 && (d->c / d->groups) % 8 == 0 &&
               (d->k / d->groups) % 8 == 0) {
        n = add_form(op, out, n, d->groups, d->c / d->groups, d->k, d->c, d->c, "grouped");
    }
    const char *dense = d->groups > 1 ? "groups as dense" : "dense";
    n = add_form(op, out, n, 1, cp, kp, cp, cp, dense);
    if (all && d->groups == 1) {
        int c4 = FV_ROUND_UP(d->c, 4);
        n = add_form(op, out, n, 1, c4, kp, cp, c4, dense);
        n = add_form(op, out, n, 1, d->c, kp, cp, d->c, dense);
    }
    return n;
}

/* Uploads weights and bias for form f into device carve-outs (set-up). */
static fv_status upload_weights(fv_conv2d *op, const fv__conv_form *f, const float *weights,
                                const float *bias, void **w, void **b) {
    const fv_conv2d_desc *d = &op->desc;
    fv_pool *dev = op->ctx->pools[FV_POOL_DEVICE];
    const fv__conv_wpack wp = {d->k,      d->c,  d->r,  d->s,  d->groups,
                               f->groups, f->wc, f->kp, f->kr, f->pair};
    size_t nw = fv__conv_wpack_count(&wp);
    /* the Hopper pixels-along-N kernels' weight sequences after a direct
     * form's weights, where those kernels run it (kernels/conv_direct.cuh) */
    size_t nseq = f->kr ? fv__conv_direct_seq_bytes(fv__cuda_device(op->ctx), f->kp, d->r, d->s,
                                                    d->stride_h, d->stride_w, f->cs, f->cd)
                        : 0;
    size_t wbytes =
        nseq ? FV_ROUND_UP(nw * sizeof(fv_half), FV_ALIGN) + nseq : nw * sizeof(fv_half);
    *w = *b = NULL;
    size_t bb = fv__conv_bias_bytes(f->kp); /* FP16, then FP32 (graph-pw) */
    /* converted once in bulk (the CPU's F16C/FCVT), then placed */
    size_t nsrc = (size_t)d->k * (d->c / d->groups) * d->r * d->s;
    /* packed straight into the PINNED pool where it has room: the copy is
     * then one DMA and the pages are already there (a pageable copy is
     * staged by the driver); else host memory */
    fv_pool *pin = op->ctx->pools[FV_POOL_PINNED];
    void *staged = NULL;
    char saved[512];
    snprintf(saved, sizeof saved, "%s", fv_last_error());
    if (!pin || fv_pool_alloc(pin, nw * sizeof(fv_half) + bb, &staged) != FV_OK) {
        staged = NULL;
        fv__error(FV_OK, "%s", saved); /* a full pool is no error here */
    }
    fv_half *hw = staged ? staged : malloc(nw * sizeof *hw + bb);
    fv_half *hsrc = malloc(nsrc * sizeof *hsrc);
    if (!hw || !hsrc) {
        if (staged)
            fv_pool_free(pin, staged);
        else
            free(hw);
        free(hsrc);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory for the weights");
    }
    fv_f32_to_f16_n(weights, hsrc, nsrc);
    fv__conv_wpack_run(&wp, hsrc, hw);
    free(hsrc);
    unsigned char *hb = (unsigned char *)(hw + nw);
    memset(hb, 0, bb);
    float *hb32 = (float *)(void *)(hb + FV_ROUND_UP((size_t)f->kp * 2, FV_ALIGN));
    if (bias)
        for (int k = 0; k < d->k; k++) {
            ((fv_half *)(void *)hb)[k] = fv_f32_to_f16(bias[k]);
            hb32[k] = bias[k];
        }
    fv_status s = fv_pool_alloc(dev, wbytes, w);
    if (s == FV_OK) s = fv_pool_alloc(dev, bb, b);
    if (s == FV_OK) {
        cudaError_t e = cudaMemcpy(*w, hw, nw * sizeof *hw, cudaMemcpyHostToDevice);
        if (e == cudaSuccess) e = cudaMemcpy(*b, hb, bb, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) s = fv__cuda_fail(e, "cudaMemcpy(weights)", __FILE__, __LINE__);
    }
    /* the sequences on the legacy stream, after the copies; then wait for
     * both (set-up only): a copy from pageable memory may still be in flight
     * when cudaMemcpy returns, and the op runs on the context's non-blocking
     * stream; on failure too, before *w goes back to the pool */
    if (s == FV_OK && nseq)
        s = fv__conv_direct_seq_build(cudaStreamLegacy, f->kp, d->r, f->cd, f->kr, *w);
    cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy);
    if (s == FV_OK && e != cudaSuccess)
        s = fv__cuda_fail(e, "cudaStreamSynchronize(weights)", __FILE__, __LINE__);
    if (staged)
        fv_pool_free(pin, staged);
    else
        free(hw);
    if (s != FV_OK) {
        fv_pool_free(dev, *w);
        fv_pool_free(dev, *b);
        *w = *b = NULL;
        return fv__error_prefix(s, "conv2d weights");
    }
    return FV_OK;
}

/* ---- create ---------------------------------------------------------------- */
/* One run on scratch buffers at creation: CUDA loads an engine's kernels
 * lazily at their first launch (tens of ms for some), and cuDNN finishes some
 * plans then; that must not land on the first frame. Skipped (with a debug
 * message) when the pool has no room for the scratch. Returns 1 when the op
 * ran, 0 when skipped, -1 when its run failed. */
static int warm_up(fv_conv2d *op, conv_state *st) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    size_t xb = (size_t)d->n * d->h * d->w * st->c.f.cs * 2;
    size_t yb = (size_t)d->n * op->p * op->q * st->c.f.ys * 2;
    void *x = NULL, *y = NULL, *z = NULL, *ws = fv__cuda_state_of(ctx)->ws;
    int res = (d->flags & FV_CONV2D_RESIDUAL) != 0;
    fv__bdesc vp = NULL;
    char saved[512];
    snprintf(saved, sizeof saved, "%s", fv_last_error());
    int ran = 0;
    if (fv_pool_alloc(dev, xb, &x) == FV_OK && fv_pool_alloc(dev, yb, &y) == FV_OK &&
        (!res || (fv_pool_alloc(dev, yb, &z) == FV_OK &&
                  cudaMemsetAsync(z, 0, yb, fv__cuda_stream(ctx)) == cudaSuccess)) &&
        cudaMemsetAsync(x, 0, xb, fv__cuda_stream(ctx)) == cudaSuccess) {
        const void *gb = fv__conv_graph_bias(st->c.path, op->has_bias, st->b, st->c.f.kp);
        int ok = !fv__conv_uses_graph(st->c.path) ||
                 fv__conv_variant_pack(x, st->w, y, gb, fv__conv_graph_z(st->c.path, z), ws, &vp) ==
                     CUDNN_STATUS_SUCCESS;
        ok = ok && fv__conv_run(op, &st->c, &st->l, vp, x, y, z, st->w, st->b, ws) == FV_OK;
        ok = ok && cudaStreamSynchronize(fv__cuda_stream(ctx)) == cudaSuccess;
        ran = ok ? 1 : -1;
    }
    if (ran <= 0) {
        fv__log(ctx, FV_LOG_DEBUG, "conv2d: no warm-up run (%s)", fv_last_error());
        cudaStreamSynchronize(fv__cuda_stream(ctx));
        cudaGetLastError();
    }
    if (vp) cudnnBackendDestroyDescriptor(vp);
    fv_pool_free(dev, x);
    fv_pool_free(dev, y);
    fv_pool_free(dev, z);
    fv__error(FV_OK, "%s", saved);
    return ran;
}

static fv_status choose(fv_conv2d *op, const float *weights, const float *bias, int use_cached,
                        conv_state *st, char *why, size_t why_n);
static fv_status create(fv_conv2d *op, const float *weights, const float *bias, int use_cached,
                        int *retry);

fv_status fv__cuda_conv2d_create(fv_conv2d *op, const float *weights, const float *bias) {
    FV_REQUIRE(op->desc.dtype == FV_DTYPE_F16, FV_ERR_NOT_SUPPORTED,
               "conv2d: the CUDA backend runs F16 tensors (the tensor-core path); F32 is "
               "supported on the CPU backend only");
    FV_TRY(fv__cuda_bind(op->ctx));
    int retry = 0;
    fv_status s = create(op, weights, bias, 1, &retry);
    if (s == FV_OK && retry) s = create(op, weights, bias, 0, &retry);
    return s;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The op with its plan from the profile's cache when use_cached; *retry set
 * (and nothing made) when such a plan finalized but did not run. */
static fv_status create(fv_conv2d *op, const float *weights, const float *bias, int use_cached,
                        int *retry) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    conv_state *st = calloc(1, sizeof *st);
    FV_REQUIRE(st, FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory");
    char why[512] = "";
    double t0 = now_ms();
    fv_status s = choose(op, weights, bias, use_cached, st, why, sizeof why);
    double t1 = now_ms();
    if (s == FV_OK) s = upload_weights(op, &st->c.f, weights, bias, &st->w, &st->b);
    double t2 = now_ms();
    if (s == FV_OK) s = workspace_reserve(ctx, st->c.ws);
    if (s == FV_OK && st->c.path == FV__PATH_GEMM && fv__conv_gemm_counter_bytes(&st->c.gg)) {
        size_t cb = fv__conv_gemm_counter_bytes(&st->c.gg);
        s = fv_pool_alloc(ctx->pools[FV_POOL_DEVICE], cb, &st->counters);
        if (s == FV_OK) {
            cudaError_t e = cudaMemsetAsync(st->counters, 0, cb, fv__cuda_stream(ctx));
            if (e != cudaSuccess) s = fv__cuda_fail(e, "cudaMemset(counters)", __FILE__, __LINE__);
        }
        st->c.gg.counters = st->counters;
    }
    op->be_state = st;
    double t3 = now_ms();
    if (s == FV_OK && warm_up(op, st) < 0 && st->c.plan_cached) {
        fv__log(ctx, FV_LOG_DEBUG, "conv2d: the cached plan of %s did not run; compiling it",
                st->c.engine);
        fv__cuda_conv2d_destroy(op);
        *retry = 1;
        return FV_OK;
    }
    if (s != FV_OK) {
        op->be_state = st;
        fv__cuda_conv2d_destroy(op);
        return s;
    }
    op->be_state = st;
    /* remember the choice: fv_context_profile_save persists it */
    fv__engine_choice e = st->c.choice;
    fv__conv2d_op_key(op, e.key, sizeof e.key);
    e.workspace = st->c.ws;
    e.ms = isfinite(st->ms) ? st->ms : 0.0f;
    if (strncmp(st->c.how, "profile", 7) != 0) {
        snprintf(e.how, sizeof e.how, "%s",
                 (d->flags & FV_CONV2D_AUTOTUNE) ? "autotune" : "heuristics");
        fv__profile_put(ctx->profile, &e); /* a full profile only loses persistence */
    }
    double t4 = now_ms();
    if (!st->c.plan_cached) fv__conv_plan_cache_store(op, &st->c);
    /* where a create's time goes (cold starts): choosing the engine (and
     * finalizing its plan), converting and uploading the weights, the
     * warm-up run (the first use of an engine's kernels in a process) */
    fv__log(ctx, FV_LOG_INFO,
            "conv2d %dx%dx%d -> %dx%dx%d (%dx%d): %s %s, %s, %s, ws %zu, %s; create: engine %.1f "
            "ms%s, weights %.1f ms, warm-up %.1f ms",
            d->h, d->w, d->c, op->p, op->q, d->k, d->r, d->s, fv__engine_path_name(st->c.path),
            st->c.engine, st->c.how, st->c.f.name, st->c.ws,
            st->c.tensor_cores ? "tensor cores" : "no tensor cores", t1 - t0,
            st->c.plan_cached ? " (cached plan)" : "", t2 - t1, t4 - t3);
    return FV_OK;
}

static fv_status choose(fv_conv2d *op, const float *weights, const float *bias, int use_cached,
                        conv_state *st, char *why, size_t why_n) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    int tune = (d->flags & FV_CONV2D_AUTOTUNE) != 0;
    fv__conv_form forms[MAX_FORMS];
    int nf = formulations(op, forms, 1);
    FV_REQUIRE(nf > 0, FV_ERR_NOT_SUPPORTED,
               "conv2d: FV_CONV2D_DIRECT: fovea's direct kernel runs groups 1, dilation 1, "
               "C <= 32 and K <= 64 only (this op: groups %d, dilation %dx%d, C %d, K %d)",
               d->groups, d->dilation_h, d->dilation_w, d->c, d->k);

    /* 1. the profile */
    if (!tune && !(d->flags & (FV_CONV2D_NO_PROFILE | FV_CONV2D_DIRECT))) {
        char key[FV__PROFILE_KEY];
        fv__conv2d_op_key(op, key, sizeof key);
        const fv__engine_choice *e = fv__profile_find(ctx->profile, key);
        if (e && (e->path == FV__PATH_DIRECT || e->path == FV__PATH_GEMM) &&
            (d->flags & FV_CONV2D_NO_DIRECT)) {
            fv__log(ctx, FV_LOG_DEBUG,
                    "conv2d: profile entry %s names fovea's %s kernel, which the op's flags "
                    "exclude; choosing anew",
                    key, fv__engine_path_name(e->path));
            e = NULL;
        }
        if (e) {
            if (fv__conv_from_profile(op, e, forms, nf, use_cached, &st->c, &st->l) == FV_OK) {
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
        enum { MAXC = 256 };
        fv__conv_cand *c = calloc(MAXC, sizeof *c);
        FV_REQUIRE(c, FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory");
        int n = 0;
        fv__conv_legacy l;
        memset(&l, 0, sizeof l);
        size_t used = strlen(why);
        if (f->kr) { /* fovea's direct kernel */
            char dwhy[160] = "";
            int offered = fv__conv_direct_candidates(op, f, !tune, c, &n, MAXC, dwhy, sizeof dwhy);
            snprintf(why + used, why_n - used, "%s[%s: %d variants%s%s]", used ? " " : "", f->name,
                     offered, offered ? "" : ": ", offered ? "" : dwhy);
        } else {
            /* fovea's GEMM shares the dense form's weights: first when it is
             * the better bet without timing (or when tuning: its few variants
             * before cuDNN's many, under MAXC), a last resort otherwise */
            int pref = 0, got = 0,
                gemm = !(d->flags & FV_CONV2D_NO_DIRECT) && fv__conv_gemm_offered(op, f, &pref);
            if (gemm && (tune || pref)) got = fv__conv_gemm_candidates(op, f, !tune, c, &n, MAXC);
            if (tune || n == 0)
                fv__conv_cudnn_candidates(op, f, tune, c, &n, MAXC, &l, used ? " " : "", why + used,
                                          why_n - used);
            if (gemm && n == 0) got = fv__conv_gemm_candidates(op, f, 1, c, &n, MAXC);
            if (gemm) {
                used = strlen(why);
                snprintf(why + used, why_n - used, " [fovea gemm: %d variants]", got);
            }
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
                    fv__conv_cand_free(&c[i]);
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
            fv__conv_cand_free(&st->c);
            fv__conv_legacy_destroy(&st->l);
            st->c = c[best];
            c[best].plan = NULL;
            if (st->c.path == FV__PATH_LEGACY || st->c.path == FV__PATH_LEGACY_FUSED) {
                st->l = l;
                memset(&l, 0, sizeof l);
            }
        }
        for (int i = 0; i < n; i++)
            fv__conv_cand_free(&c[i]);
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
    fv__conv_cand_free(&st->c);
    fv__conv_legacy_destroy(&st->l);
    fv_pool *dev = op->ctx->pools[FV_POOL_DEVICE];
    fv_pool_free(dev, st->w);
    fv_pool_free(dev, st->b);
    fv_pool_free(dev, st->counters);
    free(st);
    op->be_state = NULL;
}

/* ---- forward --------------------------------------------------------------- */
static fv_status variant_pack(fv_conv2d *op, conv_state *st, const void *x, const void *z, void *y,
                              void *ws, fv__bdesc *out) {
    for (int i = 0; i < VP_CACHE; i++)
        if (st->vps[i].vp && st->vps[i].x == x && st->vps[i].y == y && st->vps[i].z == z &&
            st->vps[i].ws == ws) {
            *out = st->vps[i].vp;
            return FV_OK;
        }
    vp_entry *e = &st->vps[st->vp_next];
    st->vp_next = (st->vp_next + 1) % VP_CACHE;
    if (e->vp) cudnnBackendDestroyDescriptor(e->vp);
    e->vp = NULL;
    FV_CUDNN_TRY(fv__conv_variant_pack(
        x, st->w, y, fv__conv_graph_bias(st->c.path, op->has_bias, st->b, st->c.f.kp),
        fv__conv_graph_z(st->c.path, z), ws, &e->vp));
    e->x = x;
    e->z = z;
    e->y = y;
    e->ws = ws;
    *out = e->vp;
    return FV_OK;
}

fv_status fv__cuda_conv2d_forward(fv_conv2d *op, const fv_tensor *in, const fv_tensor *res,
                                  fv_tensor *out) {
    conv_state *st = op->be_state;
    void *ws = fv__cuda_state_of(op->ctx)->ws;
    const void *x = fv__tensor_ptr(in), *z = res ? fv__tensor_ptr(res) : NULL;
    void *y = fv__tensor_ptr(out);
    fv__bdesc vp = NULL;
    if (fv__conv_uses_graph(st->c.path)) FV_TRY(variant_pack(op, st, x, z, y, ws, &vp));
    return fv__conv_run(op, &st->c, &st->l, vp, x, y, z, st->w, st->b, ws);
}

fv_status fv__cuda_conv2d_bind(fv_conv2d *op, const fv_tensor *in, const fv_tensor *res,
                               fv_tensor *out) {
    /* one run with exactly these pointers: cuDNN finishes per-binding set-up
     * at the first execution */
    FV_TRY(fv__cuda_conv2d_forward(op, in, res, out));
    FV_CUDA_TRY(cudaStreamSynchronize(fv__cuda_stream(op->ctx)));
    return FV_OK;
}

void fv__cuda_conv2d_info(const fv_conv2d *op, fv_conv2d_info *out) {
    const conv_state *st = op->be_state;
    if (!st) return;
    snprintf(out->path, sizeof out->path, "%s", fv__engine_path_name(st->c.path));
    snprintf(out->engine, sizeof out->engine, "%s", st->c.engine);
    snprintf(out->choice, sizeof out->choice, "%.63s", st->c.how);
    snprintf(out->layout, sizeof out->layout, "%.63s", st->c.f.name);
    out->tensor_cores = st->c.tensor_cores;
    out->fused = st->c.path == FV__PATH_GRAPH || st->c.path == FV__PATH_GRAPH_PW ||
                 st->c.path == FV__PATH_GRAPH_PW16 || st->c.path == FV__PATH_DIRECT ||
                 st->c.path == FV__PATH_LEGACY_FUSED || st->c.path == FV__PATH_GEMM;
    out->workspace_bytes = st->c.ws;
    out->measured_ms = isfinite(st->ms) ? st->ms : 0.0f;
    out->candidates = st->candidates;
}

/* ---- fovea_cuda.h -------------------------------------------------------------- */
fv_status fv_context_cuda_stream(fv_context *ctx, cudaStream_t *out) {
    FV__HOLD(ctx);
    FV_REQUIRE(ctx && out, FV_ERR_BAD_PARAM, "fv_context_cuda_stream: %s is NULL",
               ctx ? "out" : "ctx");
    FV_REQUIRE(ctx->backend == FV_BACKEND_CUDA, FV_ERR_NOT_SUPPORTED,
               "fv_context_cuda_stream: the context runs on the CPU backend");
    *out = fv__cuda_stream(ctx);
    return FV_OK;
}

fv_status fv_context_cuda_set_stream(fv_context *ctx, cudaStream_t s) {
    FV__HOLD(ctx);
    FV_REQUIRE(ctx, FV_ERR_BAD_PARAM, "fv_context_cuda_set_stream: ctx is NULL");
    FV_REQUIRE(ctx->backend == FV_BACKEND_CUDA, FV_ERR_NOT_SUPPORTED,
               "fv_context_cuda_set_stream: the context runs on the CPU backend");
    fv__cuda_state *st = fv__cuda_state_of(ctx);
    FV_TRY(fv__cuda_bind(ctx));
    FV_CUDA_TRY(cudaStreamSynchronize(st->stream));
    st->stream = s ? s : st->own_stream;
    FV_CUDNN_TRY(cudnnSetStream(st->cudnn, st->stream));
    return FV_OK;
}
