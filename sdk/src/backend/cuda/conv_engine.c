/* Convolution on the CUDA backend: cuDNN's graph (backend) API from C.
 *
 * One fused graph per op: conv_fprop (FP16 NHWC in, FP32 compute) ->
 * pointwise bias add -> pointwise activation -> FP16 NHWC out. NHWC is
 * expressed by strides on NCHW-ordered dimensions. Channels are padded to
 * multiples of 8 (the tensors store them so); padded weights and bias are
 * zero, so padded output lanes are act(0), which is 0 for every activation
 * but sigmoid (fixed up by a small kernel).
 *
 * Engine choice at creation: heuristics mode A, then the fallback list; the
 * first config whose plan finalizes within the workspace limit wins. When no
 * graph is supported (older cuDNN, unusual shapes) the legacy API runs the
 * convolution and a kernel adds bias and activation. Each op reports which.
 *
 * The run path does no host work beyond the launches: variant packs are
 * cached per (input, output, workspace) triple. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_internal.h"
#include "kernels/conv_epilogue.cuh"

#define UID_X    1
#define UID_W    2
#define UID_B    3
#define UID_Y    4
#define UID_T1   5
#define UID_T2   6
#define VP_CACHE 4

typedef cudnnBackendDescriptor_t bdesc;

typedef enum { PATH_GRAPH = 1, PATH_LEGACY = 2 } conv_path;

/* How the op is expressed to cuDNN. */
typedef struct formulation {
    int groups; /* groups in the cuDNN op */
    int wc;     /* input channels per group in W */
    int kp;     /* output channels (padded) */
    int cp;     /* input channels as stored (padded) */
    const char *name;
} formulation;

typedef struct vp_entry {
    const void *x;
    void *y;
    void *ws;
    bdesc vp;
} vp_entry;

typedef struct conv_state {
    conv_path path;
    formulation f;
    void *w; /* device FP16 [kp][r][s][wc] */
    void *b; /* device FP16 [kp], or NULL */
    size_t ws_bytes;
    void *ws;           /* workspace carve-out, or NULL */
    int zero_pad_lanes; /* sigmoid with kp > k: padded lanes need zeroing */
    /* graph */
    bdesc plan;
    vp_entry vps[VP_CACHE];
    int vp_next;
    /* legacy */
    cudnnTensorDescriptor_t lx, ly;
    cudnnFilterDescriptor_t lw;
    cudnnConvolutionDescriptor_t lc;
    cudnnConvolutionFwdAlgo_t algo;
    /* report */
    char engine[64], choice[64], layout[64];
    int tensor_cores;
} conv_state;

/* ---- small helpers -------------------------------------------------------- */
#define TRY_BE(call)                                                                               \
    do {                                                                                           \
        cudnnStatus_t st__ = (call);                                                               \
        if (st__ != CUDNN_STATUS_SUCCESS) return st__;                                             \
    } while (0)

static cudnnStatus_t set_attr(bdesc d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t,
                              int64_t count, const void *v) {
    return cudnnBackendSetAttribute(d, n, t, count, v);
}

static void destroy_desc(bdesc *d) {
    if (*d) cudnnBackendDestroyDescriptor(*d);
    *d = NULL;
}

/* NHWC tensor as NCHW dims with NHWC strides. */
static cudnnStatus_t make_tensor(bdesc *out, int64_t uid, cudnnDataType_t dt, int64_t n, int64_t c,
                                 int64_t h, int64_t w, int is_virtual) {
    int64_t dims[4] = {n, c, h, w};
    int64_t strides[4] = {h * w * c, 1, w * c, c};
    int64_t align = FV_ALIGN;
    bool virt = is_virtual != 0;
    TRY_BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, out));
    TRY_BE(set_attr(*out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    TRY_BE(set_attr(*out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
    TRY_BE(set_attr(*out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
    TRY_BE(set_attr(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    TRY_BE(set_attr(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    if (virt) TRY_BE(set_attr(*out, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt));
    return cudnnBackendFinalize(*out);
}

static cudnnStatus_t make_pointwise(bdesc *op, bdesc *pw, cudnnPointwiseMode_t mode,
                                    const fv_conv2d_desc *d, bdesc x, bdesc b, bdesc y) {
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    TRY_BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw));
    TRY_BE(set_attr(*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    TRY_BE(set_attr(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec));
    if (mode == CUDNN_POINTWISE_RELU_FWD) {
        float lower = 0.0f;
        TRY_BE(set_attr(*pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_FLOAT, 1, &lower));
        if (d->activation == FV_ACT_CLIPPED_RELU) {
            float upper = d->activation_alpha;
            TRY_BE(
                set_attr(*pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_FLOAT, 1, &upper));
        }
        if (d->activation == FV_ACT_LEAKY_RELU) {
            float slope = d->activation_alpha;
            TRY_BE(set_attr(*pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_FLOAT, 1,
                            &slope));
        }
    }
    TRY_BE(cudnnBackendFinalize(*pw));
    TRY_BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op));
    TRY_BE(set_attr(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, pw));
    TRY_BE(
        set_attr(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    if (b)
        TRY_BE(set_attr(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                        &b));
    TRY_BE(
        set_attr(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    return cudnnBackendFinalize(*op);
}

/* Descriptors of one graph, destroyed together. */
typedef struct graph_parts {
    bdesc t[6]; /* x, w, b, y, t1, t2 */
    bdesc conv, conv_op, pw[2], pw_op[2];
    bdesc graph;
} graph_parts;

static void graph_parts_destroy(graph_parts *g) {
    destroy_desc(&g->graph);
    for (int i = 0; i < 2; i++)
        destroy_desc(&g->pw_op[i]), destroy_desc(&g->pw[i]);
    destroy_desc(&g->conv_op);
    destroy_desc(&g->conv);
    for (int i = 0; i < 6; i++)
        destroy_desc(&g->t[i]);
}

static int act_is_fused_identity(const fv_conv2d *op) {
    return op->desc.activation == FV_ACT_IDENTITY;
}

static cudnnStatus_t build_graph(const fv_conv2d *op, const formulation *f, cudnnHandle_t h,
                                 graph_parts *g) {
    const fv_conv2d_desc *d = &op->desc;
    int has_act = !act_is_fused_identity(op);
    int nops = 1 + op->has_bias + has_act;
    cudnnDataType_t half = CUDNN_DATA_HALF, flt = CUDNN_DATA_FLOAT;

    TRY_BE(make_tensor(&g->t[0], UID_X, half, d->n, f->cp, d->h, d->w, 0));
    {
        int64_t dims[4] = {f->kp, f->wc, d->r, d->s};
        int64_t strides[4] = {(int64_t)d->r * d->s * f->wc, 1, (int64_t)d->s * f->wc, f->wc};
        int64_t uid = UID_W, align = FV_ALIGN;
        TRY_BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &g->t[1]));
        TRY_BE(set_attr(g->t[1], CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &half));
        TRY_BE(set_attr(g->t[1], CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
        TRY_BE(set_attr(g->t[1], CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
        TRY_BE(set_attr(g->t[1], CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
        TRY_BE(set_attr(g->t[1], CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
        TRY_BE(cudnnBackendFinalize(g->t[1]));
    }
    if (op->has_bias) TRY_BE(make_tensor(&g->t[2], UID_B, half, 1, f->kp, 1, 1, 0));
    TRY_BE(make_tensor(&g->t[3], UID_Y, half, d->n, f->kp, op->p, op->q, 0));
    /* conv output: Y itself when nothing follows, else a virtual FP32 tensor */
    bdesc conv_out = g->t[3];
    if (nops > 1) {
        TRY_BE(make_tensor(&g->t[4], UID_T1, flt, d->n, f->kp, op->p, op->q, 1));
        conv_out = g->t[4];
    }
    {
        int64_t dims = 2;
        cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
        int64_t pad[2] = {d->pad_h, d->pad_w}, str[2] = {d->stride_h, d->stride_w},
                dil[2] = {d->dilation_h, d->dilation_w};
        TRY_BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &g->conv));
        TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims));
        TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &flt));
        TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
                        &mode));
        TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
        TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
        TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
        TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str));
        TRY_BE(cudnnBackendFinalize(g->conv));
    }
    {
        float alpha = 1.0f, beta = 0.0f;
        bdesc *c = &g->conv_op;
        TRY_BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                            c));
        TRY_BE(set_attr(*c, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->t[0]));
        TRY_BE(set_attr(*c, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->t[1]));
        TRY_BE(set_attr(*c, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv_out));
        TRY_BE(set_attr(*c, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->conv));
        TRY_BE(set_attr(*c, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
                        &alpha));
        TRY_BE(set_attr(*c, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1,
                        &beta));
        TRY_BE(cudnnBackendFinalize(*c));
    }
    bdesc ops[3] = {g->conv_op, NULL, NULL};
    int k = 1;
    bdesc cur = conv_out;
    if (op->has_bias) {
        bdesc out = g->t[3];
        if (has_act) {
            TRY_BE(make_tensor(&g->t[5], UID_T2, flt, d->n, f->kp, op->p, op->q, 1));
            out = g->t[5];
        }
        TRY_BE(make_pointwise(&g->pw_op[0], &g->pw[0], CUDNN_POINTWISE_ADD, d, cur, g->t[2], out));
        ops[k++] = g->pw_op[0];
        cur = out;
    }
    if (has_act) {
        cudnnPointwiseMode_t m = d->activation == FV_ACT_SIGMOID ? CUDNN_POINTWISE_SIGMOID_FWD
                                 : d->activation == FV_ACT_TANH  ? CUDNN_POINTWISE_TANH_FWD
                                                                 : CUDNN_POINTWISE_RELU_FWD;
        TRY_BE(make_pointwise(&g->pw_op[1], &g->pw[1], m, d, cur, NULL, g->t[3]));
        ops[k++] = g->pw_op[1];
    }
    TRY_BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph));
    TRY_BE(
        set_attr(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, k, ops));
    /* Without the handle on the graph, heuristics return configs that fail at
     * execution with ARCH_MISMATCH. */
    TRY_BE(set_attr(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    return cudnnBackendFinalize(g->graph);
}

/* Engine details of a config: global index and the tensor-core note. */
static void engine_details(bdesc cfg, int64_t *index, int *tensor_cores) {
    *index = -1;
    *tensor_cores = 0;
    bdesc eng = NULL;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng)) return;
    int64_t n = 0;
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &n, &eng) == CUDNN_STATUS_SUCCESS) {
        cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                 index);
        cudnnBackendNumericalNote_t notes[16];
        int64_t cnt = 0;
        if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                     CUDNN_TYPE_NUMERICAL_NOTE, 16, &cnt,
                                     notes) == CUDNN_STATUS_SUCCESS)
            for (int64_t i = 0; i < cnt; i++)
                if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) *tensor_cores = 1;
    }
    cudnnBackendDestroyDescriptor(eng);
}

/* Tries the configs of one heuristics mode in order; on success st->plan is
 * set. Returns 1 on success. */
static int try_heuristics(fv_conv2d *op, conv_state *st, bdesc graph, cudnnHandle_t h,
                          cudnnBackendHeurMode_t mode, const char *mode_name, size_t ws_limit,
                          char *why, size_t why_n) {
    bdesc heur = NULL;
    int ok = 0;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur)) return 0;
    int64_t count = 0;
    if (set_attr(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &graph) ||
        set_attr(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) ||
        cudnnBackendFinalize(heur) ||
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 0, &count, NULL) ||
        count <= 0) {
        snprintf(why, why_n, "heuristics %s: no configs", mode_name);
        cudnnBackendDestroyDescriptor(heur);
        return 0;
    }
    if (count > 64) count = 64;
    bdesc cfgs[64] = {0};
    int64_t got = 0;
    for (int64_t i = 0; i < count; i++)
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i])) count = i;
    if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 count, &got, cfgs) == 0) {
        int too_big = 0, unsupported = 0;
        for (int64_t i = 0; i < got && !ok; i++) {
            bdesc plan = NULL;
            if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan))
                continue;
            int64_t ws = 0, n = 0;
            cudnnStatus_t s = set_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]);
#if CUDNN_VERSION < 90000
            if (!s) s = set_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
#endif
            if (!s) s = cudnnBackendFinalize(plan);
            if (!s)
                s = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                             CUDNN_TYPE_INT64, 1, &n, &ws);
            if (s) {
                unsupported++;
                cudnnBackendDestroyDescriptor(plan);
                continue;
            }
            if ((size_t)ws > ws_limit) {
                too_big++;
                cudnnBackendDestroyDescriptor(plan);
                continue;
            }
            int64_t idx;
            engine_details(cfgs[i], &idx, &st->tensor_cores);
            st->plan = plan;
            st->ws_bytes = (size_t)ws;
            snprintf(st->engine, sizeof st->engine, "eng%lld", (long long)idx);
            snprintf(st->choice, sizeof st->choice, "heuristics %s #%lld of %lld", mode_name,
                     (long long)i, (long long)got);
            ok = 1;
        }
        if (!ok)
            snprintf(why, why_n,
                     "heuristics %s: %lld configs, %d unsupported, %d over the %zu-byte "
                     "workspace limit",
                     mode_name, (long long)got, unsupported, too_big, ws_limit);
    }
    for (int64_t i = 0; i < count; i++)
        destroy_desc(&cfgs[i]);
    cudnnBackendDestroyDescriptor(heur);
    return ok;
}

/* ---- weights -------------------------------------------------------------- */
/* KCRS FP32 -> FP16 [kp][r][s][wc] for formulation f (zero outside the op's
 * groups and in the padding). Host buffer of kp*r*s*wc halves. */
static void pack_weights(const fv_conv2d *op, const formulation *f, const float *w, fv_half *out) {
    const fv_conv2d_desc *d = &op->desc;
    int cg = d->c / d->groups, kg = d->k / d->groups;
    size_t n = (size_t)f->kp * d->r * d->s * f->wc;
    memset(out, 0, n * sizeof *out);
    for (int k = 0; k < d->k; k++) {
        int g = k / kg;
        for (int c = 0; c < cg; c++) {
            int col; /* channel index within W's per-group slice */
            if (f->groups == 1)
                col = g * cg + c; /* dense expansion */
            else if (f->wc == 1)
                col = 0; /* depthwise */
            else
                col = c; /* native groups */
            for (int r = 0; r < d->r; r++)
                for (int s = 0; s < d->s; s++) {
                    float v = w[(((size_t)k * cg + c) * d->r + r) * d->s + s];
                    out[(((size_t)k * d->r + r) * d->s + s) * f->wc + col] = fv_f32_to_f16(v);
                }
        }
    }
}

/* ---- legacy path ------------------------------------------------------------ */
static fv_status legacy_setup(fv_conv2d *op, conv_state *st, cudnnHandle_t h, size_t ws_limit) {
    const fv_conv2d_desc *d = &op->desc;
    const formulation *f = &st->f;
    FV_CUDNN_TRY(cudnnCreateTensorDescriptor(&st->lx));
    FV_CUDNN_TRY(cudnnCreateTensorDescriptor(&st->ly));
    FV_CUDNN_TRY(cudnnCreateFilterDescriptor(&st->lw));
    FV_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&st->lc));
    FV_CUDNN_TRY(cudnnSetTensor4dDescriptor(st->lx, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, d->n, f->cp,
                                            d->h, d->w));
    FV_CUDNN_TRY(cudnnSetTensor4dDescriptor(st->ly, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, d->n, f->kp,
                                            op->p, op->q));
    FV_CUDNN_TRY(cudnnSetFilter4dDescriptor(st->lw, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, f->kp,
                                            f->wc, d->r, d->s));
    FV_CUDNN_TRY(cudnnSetConvolution2dDescriptor(st->lc, d->pad_h, d->pad_w, d->stride_h,
                                                 d->stride_w, d->dilation_h, d->dilation_w,
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    FV_CUDNN_TRY(cudnnSetConvolutionGroupCount(st->lc, f->groups));
    FV_CUDNN_TRY(cudnnSetConvolutionMathType(st->lc, CUDNN_TENSOR_OP_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    FV_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(
        h, st->lx, st->lw, st->lc, st->ly, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
    static const char *names[] = {
        "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
        "WINOGRAD",      "WINOGRAD_NONFUSED"};
    for (int i = 0; i < got; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_limit) continue;
        st->algo = perf[i].algo;
        st->ws_bytes = perf[i].memory;
        st->tensor_cores = perf[i].mathType == CUDNN_TENSOR_OP_MATH;
        snprintf(st->engine, sizeof st->engine, "%s",
                 (int)perf[i].algo < 8 ? names[perf[i].algo] : "algo");
        snprintf(st->choice, sizeof st->choice, "v7 heuristic #%d of %d", i, got);
        st->path = PATH_LEGACY;
        return FV_OK;
    }
    return fv__error(FV_ERR_NOT_SUPPORTED,
                     "conv2d: cuDNN's legacy API has no algorithm for this convolution within "
                     "the %zu-byte workspace limit",
                     ws_limit);
}

/* ---- create / destroy / forward ---------------------------------------------- */
static void state_free(fv_context *ctx, conv_state *st) {
    if (!st) return;
    for (int i = 0; i < VP_CACHE; i++)
        destroy_desc(&st->vps[i].vp);
    destroy_desc(&st->plan);
    if (st->lx) cudnnDestroyTensorDescriptor(st->lx);
    if (st->ly) cudnnDestroyTensorDescriptor(st->ly);
    if (st->lw) cudnnDestroyFilterDescriptor(st->lw);
    if (st->lc) cudnnDestroyConvolutionDescriptor(st->lc);
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    fv_pool_free(dev, st->w);
    fv_pool_free(dev, st->b);
    fv_pool_free(dev, st->ws);
    free(st);
}

/* The formulations to try, best first. */
static int formulations(const fv_conv2d *op, formulation *out) {
    const fv_conv2d_desc *d = &op->desc;
    int cp = FV_ROUND_UP(d->c, 8), kp = FV_ROUND_UP(d->k, 8), n = 0;
    if (d->groups > 1 && d->groups == d->c && d->c == d->k)
        out[n++] = (formulation){cp, 1, cp, cp, "depthwise, C and K padded to 8"};
    else if (d->groups > 1 && d->c % 8 == 0 && d->k % 8 == 0 && (d->c / d->groups) % 8 == 0 &&
             (d->k / d->groups) % 8 == 0)
        out[n++] = (formulation){d->groups, d->c / d->groups, d->k, d->c, "grouped"};
    out[n++] = (formulation){1, cp, kp, cp,
                             d->groups > 1 ? "groups expanded to dense, C and K padded to 8"
                                           : "dense, C and K padded to 8"};
    return n;
}

fv_status fv__cuda_conv2d_create(fv_conv2d *op, const float *weights, const float *bias) {
    fv_context *ctx = op->ctx;
    const fv_conv2d_desc *d = &op->desc;
    FV_REQUIRE(d->dtype == FV_DTYPE_F16, FV_ERR_NOT_SUPPORTED,
               "conv2d: the CUDA backend runs F16 tensors (the tensor-core path); F32 is "
               "supported on the CPU backend only");
    FV_TRY(fv__cuda_bind(ctx));
    cudnnHandle_t h = fv__cuda_cudnn(ctx);
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    formulation fs[2];
    int nf = formulations(op, fs);
    char why[2][256] = {"", ""};
    fv_status s = FV_OK;

    for (int fi = 0; fi < nf; fi++) {
        conv_state *st = calloc(1, sizeof *st);
        FV_REQUIRE(st, FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory");
        st->f = fs[fi];
        const formulation *f = &st->f;
        graph_parts g;
        memset(&g, 0, sizeof g);
        cudnnStatus_t gs = build_graph(op, f, h, &g);
        if (gs == CUDNN_STATUS_SUCCESS) {
            if (!try_heuristics(op, st, g.graph, h, CUDNN_HEUR_MODE_A, "A", ctx->workspace_limit,
                                why[fi], sizeof why[fi]))
                try_heuristics(op, st, g.graph, h, CUDNN_HEUR_MODE_FALLBACK, "fallback",
                               ctx->workspace_limit, why[fi], sizeof why[fi]);
            if (st->plan) st->path = PATH_GRAPH;
        } else {
            snprintf(why[fi], sizeof why[fi], "graph not built: %s", cudnnGetErrorString(gs));
        }
        graph_parts_destroy(&g);
        if (!st->path) {
            fv__log(ctx, FV_LOG_INFO, "conv2d (%s): no graph engine (%s); trying the legacy API",
                    f->name, why[fi]);
            s = legacy_setup(op, st, h, ctx->workspace_limit);
            if (s != FV_OK) {
                snprintf(why[fi] + strlen(why[fi]), sizeof why[fi] - strlen(why[fi]),
                         "; legacy: %s", fv_last_error());
                state_free(ctx, st);
                continue;
            }
        }
        /* weights, bias and workspace from the device pool; uploaded once */
        size_t nw = (size_t)f->kp * d->r * d->s * f->wc;
        fv_half *hw = malloc(nw * sizeof *hw + (size_t)f->kp * sizeof(fv_half));
        if (!hw) {
            state_free(ctx, st);
            return fv__error(FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory");
        }
        pack_weights(op, f, weights, hw);
        fv_half *hb = hw + nw;
        memset(hb, 0, (size_t)f->kp * sizeof *hb);
        if (bias)
            for (int k = 0; k < d->k; k++)
                hb[k] = fv_f32_to_f16(bias[k]);
        s = fv_pool_alloc(dev, nw * sizeof *hw, &st->w);
        if (s == FV_OK && (bias || st->path == PATH_LEGACY))
            s = fv_pool_alloc(dev, (size_t)f->kp * sizeof *hb, &st->b);
        if (s == FV_OK && st->ws_bytes) s = fv_pool_alloc(dev, st->ws_bytes, &st->ws);
        if (s == FV_OK) {
            cudaError_t e = cudaMemcpy(st->w, hw, nw * sizeof *hw, cudaMemcpyHostToDevice);
            if (e == cudaSuccess && st->b)
                e = cudaMemcpy(st->b, hb, (size_t)f->kp * sizeof *hb, cudaMemcpyHostToDevice);
            if (e != cudaSuccess) s = fv__cuda_fail(e, "cudaMemcpy(weights)", __FILE__, __LINE__);
        }
        free(hw);
        if (s != FV_OK) {
            state_free(ctx, st);
            return fv__error_prefix(s, "conv2d weights");
        }
        st->zero_pad_lanes = d->activation == FV_ACT_SIGMOID && f->kp > d->k;
        snprintf(st->layout, sizeof st->layout, "%s", f->name);
        op->be_state = st;
        fv__log(ctx, FV_LOG_INFO, "conv2d %dx%dx%d -> %dx%dx%d (%dx%d): %s %s, %s, ws %zu, %s",
                d->h, d->w, d->c, op->p, op->q, d->k, d->r, d->s,
                st->path == PATH_GRAPH ? "graph" : "legacy", st->engine, st->choice, st->ws_bytes,
                st->tensor_cores ? "tensor cores" : "no tensor cores");
        return FV_OK;
    }
    return fv__error(FV_ERR_NOT_SUPPORTED, "conv2d: no cuDNN engine runs this convolution: %s%s%s",
                     why[0], nf > 1 ? " | " : "", nf > 1 ? why[1] : "");
}

void fv__cuda_conv2d_destroy(fv_conv2d *op) {
    if (!op->be_state) return;
    fv_context_synchronize(op->ctx); /* nothing queued may still use the weights */
    state_free(op->ctx, op->be_state);
    op->be_state = NULL;
}

/* The variant pack for (x, y, ws), cached: no host allocation once warm. */
static fv_status variant_pack(conv_state *st, const void *x, void *y, bdesc *out) {
    for (int i = 0; i < VP_CACHE; i++)
        if (st->vps[i].vp && st->vps[i].x == x && st->vps[i].y == y && st->vps[i].ws == st->ws) {
            *out = st->vps[i].vp;
            return FV_OK;
        }
    vp_entry *e = &st->vps[st->vp_next];
    st->vp_next = (st->vp_next + 1) % VP_CACHE;
    destroy_desc(&e->vp);
    int64_t uids[4] = {UID_X, UID_W, UID_Y, UID_B};
    void *ptrs[4] = {(void *)x, st->w, y, st->b};
    int64_t n = st->b ? 4 : 3;
    FV_CUDNN_TRY(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &e->vp));
    FV_CUDNN_TRY(set_attr(e->vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids));
    FV_CUDNN_TRY(
        set_attr(e->vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs));
    FV_CUDNN_TRY(
        set_attr(e->vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &st->ws));
    FV_CUDNN_TRY(cudnnBackendFinalize(e->vp));
    e->x = x;
    e->y = y;
    e->ws = st->ws;
    *out = e->vp;
    return FV_OK;
}

fv_status fv__cuda_conv2d_forward(fv_conv2d *op, const fv_tensor *in, fv_tensor *out) {
    fv_context *ctx = op->ctx;
    conv_state *st = op->be_state;
    const fv_conv2d_desc *d = &op->desc;
    cudnnHandle_t h = fv__cuda_cudnn(ctx);
    const void *x = fv__tensor_ptr(in);
    void *y = fv__tensor_ptr(out);
    if (st->path == PATH_GRAPH) {
        bdesc vp = NULL;
        FV_TRY(variant_pack(st, x, y, &vp));
        FV_CUDNN_TRY(cudnnBackendExecute(h, st->plan, vp));
        if (st->zero_pad_lanes)
            FV_TRY(fv__cuda_conv_epilogue(fv__cuda_stream(ctx), y, (size_t)d->n * op->p * op->q,
                                          st->f.kp, d->k, NULL, FV_ACT_IDENTITY, 0.0f));
        return FV_OK;
    }
    float alpha = 1.0f, beta = 0.0f;
    FV_CUDNN_TRY(cudnnConvolutionForward(h, &alpha, st->lx, x, st->lw, st->w, st->lc, st->algo,
                                         st->ws, st->ws_bytes, &beta, st->ly, y));
    return fv__cuda_conv_epilogue(fv__cuda_stream(ctx), y, (size_t)d->n * op->p * op->q, st->f.kp,
                                  d->k, op->has_bias ? st->b : NULL, d->activation,
                                  d->activation_alpha);
}

void fv__cuda_conv2d_info(const fv_conv2d *op, fv_conv2d_info *out) {
    const conv_state *st = op->be_state;
    if (!st) return;
    snprintf(out->path, sizeof out->path, "%s", st->path == PATH_GRAPH ? "graph" : "legacy");
    snprintf(out->engine, sizeof out->engine, "%s", st->engine);
    snprintf(out->choice, sizeof out->choice, "%s", st->choice);
    snprintf(out->layout, sizeof out->layout, "%s", st->layout);
    out->tensor_cores = st->tensor_cores;
    out->fused = st->path == PATH_GRAPH;
    out->workspace_bytes = st->ws_bytes;
}

/* ---- fovea_cuda.h ------------------------------------------------------------ */
#include "fovea/fovea_cuda.h"

fv_status fv_context_cuda_stream(fv_context *ctx, cudaStream_t *out) {
    FV_REQUIRE(ctx && out, FV_ERR_BAD_PARAM, "fv_context_cuda_stream: %s is NULL",
               ctx ? "out" : "ctx");
    FV_REQUIRE(ctx->backend == FV_BACKEND_CUDA, FV_ERR_NOT_SUPPORTED,
               "fv_context_cuda_stream: the context runs on the CPU backend");
    *out = fv__cuda_stream(ctx);
    return FV_OK;
}
