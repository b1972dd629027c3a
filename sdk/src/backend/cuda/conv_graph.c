/* cuDNN graph (backend) API from C: the fused conv -> bias -> activation
 * graph, heuristics, plans, and engine configs rebuilt from a profile.
 *
 * NHWC is expressed by strides on NCHW-ordered dimensions. The input may be
 * declared with fewer channels (cd) than it stores (cs): the padding lanes
 * are then skipped by the strides. */
#include <float.h>
#include <stdio.h>
#include <string.h>
#include "conv_engine.h"

#define UID_X  1
#define UID_W  2
#define UID_B  3
#define UID_Y  4
#define UID_T1 5
#define UID_T2 6
#define UID_Z  7
#define UID_T3 8

#define TRY_BE(call)                                                                               \
    do {                                                                                           \
        cudnnStatus_t st__ = (call);                                                               \
        if (st__ != CUDNN_STATUS_SUCCESS) return st__;                                             \
    } while (0)

static cudnnStatus_t set_attr(fv__bdesc d, cudnnBackendAttributeName_t n,
                              cudnnBackendAttributeType_t t, int64_t count, const void *v) {
    return cudnnBackendSetAttribute(d, n, t, count, v);
}

static void destroy(fv__bdesc *d) {
    if (*d) cudnnBackendDestroyDescriptor(*d);
    *d = NULL;
}

/* A tensor of dims (n, c, h, w) stored NHWC with cs channels between pixels,
 * its address aligned to align bytes. */
static cudnnStatus_t make_tensor_aligned(fv__bdesc *out, int64_t uid, cudnnDataType_t dt, int64_t n,
                                         int64_t c, int64_t h, int64_t w, int64_t cs,
                                         int is_virtual, int64_t align) {
    int64_t dims[4] = {n, c, h, w};
    int64_t strides[4] = {h * w * cs, 1, w * cs, cs};
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

/* The same at FV_ALIGN (every carve-out of a pool). */
static cudnnStatus_t make_tensor(fv__bdesc *out, int64_t uid, cudnnDataType_t dt, int64_t n,
                                 int64_t c, int64_t h, int64_t w, int64_t cs, int is_virtual) {
    return make_tensor_aligned(out, uid, dt, n, c, h, w, cs, is_virtual, FV_ALIGN);
}

static cudnnStatus_t make_pointwise(fv__bdesc *op, fv__bdesc *pw, cudnnPointwiseMode_t mode,
                                    const fv_conv2d_desc *d, fv__bdesc x, fv__bdesc b,
                                    fv__bdesc y) {
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

void fv__conv_graph_destroy(fv__conv_graph *g) {
    destroy(&g->graph);
    for (int i = 0; i < 3; i++)
        destroy(&g->pw_op[i]), destroy(&g->pw[i]);
    destroy(&g->conv_op);
    destroy(&g->conv);
    for (int i = 0; i < 8; i++)
        destroy(&g->t[i]);
}

static cudnnStatus_t make_conv(const fv_conv2d_desc *d, fv__conv_graph *g) {
    int64_t dims = 2;
    cudnnDataType_t flt = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t pad[2] = {d->pad_h, d->pad_w}, str[2] = {d->stride_h, d->stride_w},
            dil[2] = {d->dilation_h, d->dilation_w};
    TRY_BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &g->conv));
    TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims));
    TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &flt));
    TRY_BE(
        set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
    TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
    TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
    TRY_BE(set_attr(g->conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str));
    return cudnnBackendFinalize(g->conv);
}

/* CUDNN_POINTWISE_IDENTITY: cuDNN 8.5 and later */
#define HAVE_IDENTITY (CUDNN_VERSION >= 8500)

int fv__conv_graph_pw_differs(const fv_conv2d *op) {
    return op->has_bias || (HAVE_IDENTITY && op->desc.activation == FV_ACT_IDENTITY);
}

cudnnStatus_t fv__conv_graph_build(const fv_conv2d *op, const fv__conv_form *f,
                                   fv__engine_path path, cudnnHandle_t h, fv__conv_graph *g) {
    const fv_conv2d_desc *d = &op->desc;
    int bare = path == FV__PATH_GRAPH_SPLIT, pw = path == FV__PATH_GRAPH_PW,
        pw16 = path == FV__PATH_GRAPH_PW16;
    int has_act = d->activation != FV_ACT_IDENTITY && !bare;
    int has_bias = op->has_bias && !bare;
    int has_z = (d->flags & FV_CONV2D_RESIDUAL) && !bare;
    /* graph-pw: runtime-fusion engines (H100, cuDNN 9.19: eng4, up to 1.4x
     * faster than the best conv-only engine on 128x128x128 -> 128 7x7) take a
     * graph only with a pointwise op after the conv, all of whose operands
     * have one type: an FP16 bias next to FP32 intermediates keeps them out */
    int ident = HAVE_IDENTITY && pw && !has_bias && !has_act && !has_z;
    cudnnDataType_t half = CUDNN_DATA_HALF, flt = CUDNN_DATA_FLOAT;
    /* graph-pw16: every operand FP16 (the other way to one type) */
    cudnnDataType_t inter = pw16 ? half : flt;
    memset(g, 0, sizeof *g);

    TRY_BE(make_tensor(&g->t[0], UID_X, half, d->n, f->cd, d->h, d->w, f->cs, 0));
    /* W: (kp, wc, r, s) stored KRSC */
    TRY_BE(make_tensor(&g->t[1], UID_W, half, f->kp, f->wc, d->r, d->s, f->wc, 0));
    if (has_bias) TRY_BE(make_tensor(&g->t[2], UID_B, pw ? flt : half, 1, f->kp, 1, 1, f->kp, 0));
    /* y: a channel slice of a wider tensor (a net's concat) is 16-byte aligned */
    TRY_BE(make_tensor_aligned(&g->t[3], UID_Y, half, d->n, f->kp, op->p, op->q, f->ys, 0,
                               f->ys == f->kp ? FV_ALIGN : 16));
    fv__bdesc conv_out = g->t[3];
    if (has_z) TRY_BE(make_tensor(&g->t[6], UID_Z, half, d->n, f->kp, op->p, op->q, f->kp, 0));
    if (has_bias || has_act || ident || has_z) { /* a virtual intermediate feeds the epilogue */
        TRY_BE(make_tensor(&g->t[4], UID_T1, inter, d->n, f->kp, op->p, op->q, f->kp, 1));
        conv_out = g->t[4];
    }
    TRY_BE(make_conv(d, g));
    {
        float alpha = 1.0f, beta = 0.0f;
        fv__bdesc *c = &g->conv_op;
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
    fv__bdesc ops[4] = {g->conv_op, NULL, NULL, NULL};
    int k = 1;
    fv__bdesc cur = conv_out;
    if (has_bias) {
        fv__bdesc out = g->t[3];
        if (has_act || has_z) {
            TRY_BE(make_tensor(&g->t[5], UID_T2, inter, d->n, f->kp, op->p, op->q, f->kp, 1));
            out = g->t[5];
        }
        TRY_BE(make_pointwise(&g->pw_op[0], &g->pw[0], CUDNN_POINTWISE_ADD, d, cur, g->t[2], out));
        ops[k++] = g->pw_op[0];
        cur = out;
    }
    if (has_z) { /* the residual, before the activation */
        fv__bdesc out = g->t[3];
        if (has_act) {
            TRY_BE(make_tensor(&g->t[7], UID_T3, inter, d->n, f->kp, op->p, op->q, f->kp, 1));
            out = g->t[7];
        }
        TRY_BE(make_pointwise(&g->pw_op[2], &g->pw[2], CUDNN_POINTWISE_ADD, d, cur, g->t[6], out));
        ops[k++] = g->pw_op[2];
        cur = out;
    }
    if (has_act) {
        cudnnPointwiseMode_t m = d->activation == FV_ACT_SIGMOID ? CUDNN_POINTWISE_SIGMOID_FWD
                                 : d->activation == FV_ACT_TANH  ? CUDNN_POINTWISE_TANH_FWD
                                                                 : CUDNN_POINTWISE_RELU_FWD;
        TRY_BE(make_pointwise(&g->pw_op[1], &g->pw[1], m, d, cur, NULL, g->t[3]));
        ops[k++] = g->pw_op[1];
    }
#if HAVE_IDENTITY
    if (ident) {
        TRY_BE(make_pointwise(&g->pw_op[1], &g->pw[1], CUDNN_POINTWISE_IDENTITY, d, cur, NULL,
                              g->t[3]));
        ops[k++] = g->pw_op[1];
    }
#endif
    TRY_BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph));
    TRY_BE(
        set_attr(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, k, ops));
    /* Without the handle on the graph, heuristics return configs that fail at
     * execution with ARCH_MISMATCH. */
    TRY_BE(set_attr(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    return cudnnBackendFinalize(g->graph);
}

int fv__conv_graph_configs(fv__bdesc graph, cudnnBackendHeurMode_t mode, fv__bdesc *cfgs, int max) {
    fv__bdesc heur = NULL;
    int64_t count = 0, got = 0;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur)) return 0;
    if (set_attr(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &graph) ||
        set_attr(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) ||
        cudnnBackendFinalize(heur) ||
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 0, &count, NULL) ||
        count <= 0) {
        cudnnBackendDestroyDescriptor(heur);
        return 0;
    }
    if (count > max) count = max;
    for (int64_t i = 0; i < count; i++)
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i])) {
            count = i;
            break;
        }
    if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 count, &got, cfgs))
        got = 0;
    for (int64_t i = got; i < count; i++)
        destroy(&cfgs[i]);
    cudnnBackendDestroyDescriptor(heur);
    return (int)got;
}

cudnnStatus_t fv__conv_plan(fv__bdesc cfg, cudnnHandle_t h, fv__bdesc *plan, int64_t *ws) {
    int64_t n = 0;
    *plan = NULL;
    TRY_BE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, plan));
    cudnnStatus_t s = set_attr(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
#if CUDNN_VERSION < 90000
    if (!s) s = set_attr(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
#endif
    if (!s) s = cudnnBackendFinalize(*plan);
    if (!s)
        s = cudnnBackendGetAttribute(*plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &n, ws);
    if (s) destroy(plan);
    return s;
}

void fv__conv_cfg_describe(fv__bdesc cfg, fv__engine_choice *c, int *tensor_cores) {
    c->engine = -1;
    c->nknobs = 0;
    *tensor_cores = 0;
    fv__bdesc eng = NULL;
    int64_t n = 0;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng)) return;
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &n, &eng) == CUDNN_STATUS_SUCCESS) {
        cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                 &c->engine);
        cudnnBackendNumericalNote_t notes[16];
        int64_t cnt = 0;
        if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                     CUDNN_TYPE_NUMERICAL_NOTE, 16, &cnt,
                                     notes) == CUDNN_STATUS_SUCCESS)
            for (int64_t i = 0; i < cnt; i++)
                if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) *tensor_cores = 1;
    }
    cudnnBackendDestroyDescriptor(eng);
    fv__bdesc knobs[FV__PROFILE_MAX_KNOBS] = {0};
    int64_t nk = 0;
    for (int i = 0; i < FV__PROFILE_MAX_KNOBS; i++)
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i])) return;
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, FV__PROFILE_MAX_KNOBS, &nk,
                                 knobs) == CUDNN_STATUS_SUCCESS) {
        for (int64_t i = 0; i < nk && i < FV__PROFILE_MAX_KNOBS; i++) {
            cudnnBackendKnobType_t type;
            int64_t value = 0, got = 0;
            if (cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                         CUDNN_TYPE_KNOB_TYPE, 1, &got, &type) ||
                cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                         CUDNN_TYPE_INT64, 1, &got, &value))
                continue;
            c->knob_type[c->nknobs] = (int64_t)type;
            c->knob_value[c->nknobs] = value;
            c->nknobs++;
        }
    }
    for (int i = 0; i < FV__PROFILE_MAX_KNOBS; i++)
        destroy(&knobs[i]);
}

cudnnStatus_t fv__conv_cfg_from_choice(fv__bdesc graph, const fv__engine_choice *c,
                                       fv__bdesc *cfg) {
    fv__bdesc eng = NULL, knobs[FV__PROFILE_MAX_KNOBS] = {0};
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng);
    if (!s)
        s = set_attr(eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                     &graph);
    if (!s) s = set_attr(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &c->engine);
    if (!s) s = cudnnBackendFinalize(eng);
    for (int i = 0; !s && i < c->nknobs; i++) {
        cudnnBackendKnobType_t type = (cudnnBackendKnobType_t)c->knob_type[i];
        s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i]);
        if (!s)
            s = set_attr(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                         &type);
        if (!s)
            s = set_attr(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
                         &c->knob_value[i]);
        if (!s) s = cudnnBackendFinalize(knobs[i]);
    }
    if (!s) s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, cfg);
    if (!s) s = set_attr(*cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &eng);
    if (!s && c->nknobs)
        s = set_attr(*cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                     c->nknobs, knobs);
    if (!s) s = cudnnBackendFinalize(*cfg);
    if (s && *cfg) destroy(cfg);
    for (int i = 0; i < FV__PROFILE_MAX_KNOBS; i++)
        destroy(&knobs[i]);
    destroy(&eng);
    return s;
}

/* ---- legacy API ------------------------------------------------------------- */
const char *fv__conv_algo_name(int algo) {
    static const char *names[] = {
        "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
        "WINOGRAD",      "WINOGRAD_NONFUSED"};
    return algo >= 0 && algo < 8 ? names[algo] : "UNKNOWN_ALGO";
}

void fv__conv_legacy_destroy(fv__conv_legacy *l) {
    if (l->x) cudnnDestroyTensorDescriptor(l->x);
    if (l->y) cudnnDestroyTensorDescriptor(l->y);
    if (l->b) cudnnDestroyTensorDescriptor(l->b);
    if (l->w) cudnnDestroyFilterDescriptor(l->w);
    if (l->c) cudnnDestroyConvolutionDescriptor(l->c);
    if (l->act) cudnnDestroyActivationDescriptor(l->act);
    memset(l, 0, sizeof *l);
}

/* The legacy activation mode for a, or -1: cudnnConvolutionBiasActivationForward
 * documents only ReLU and identity (the latter with IMPLICIT_PRECOMP_GEMM);
 * the other activations stay with the unfused legacy path + epilogue. */
static int legacy_activation(fv_activation a) {
    switch (a) {
    case FV_ACT_IDENTITY:
        return CUDNN_ACTIVATION_IDENTITY;
    case FV_ACT_RELU:
        return CUDNN_ACTIVATION_RELU;
    default:
        return -1;
    }
}

/* Whether op has anything for the fused call to do, and cuDNN can do it. */
static int legacy_fused_wanted(const fv_conv2d *op) {
    const fv_conv2d_desc *d = &op->desc;
    return (op->has_bias || d->activation != FV_ACT_IDENTITY || (d->flags & FV_CONV2D_RESIDUAL)) &&
           legacy_activation(d->activation) >= 0;
}

int fv__conv_legacy_fusable(const fv_conv2d *op, cudnnConvolutionFwdAlgo_t algo) {
    return legacy_fused_wanted(op) && (op->desc.activation != FV_ACT_IDENTITY ||
                                       algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
}

fv_status fv__conv_legacy_init(const fv_conv2d *op, const fv__conv_form *f, fv__conv_legacy *l) {
    const fv_conv2d_desc *d = &op->desc;
    memset(l, 0, sizeof *l);
    FV_CUDNN_TRY(cudnnCreateTensorDescriptor(&l->x));
    FV_CUDNN_TRY(cudnnCreateTensorDescriptor(&l->y));
    FV_CUDNN_TRY(cudnnCreateFilterDescriptor(&l->w));
    FV_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&l->c));
    /* the input as declared (cd channels) inside its stored pixels (cs) */
    FV_CUDNN_TRY(cudnnSetTensor4dDescriptorEx(l->x, CUDNN_DATA_HALF, d->n, f->cd, d->h, d->w,
                                              d->h * d->w * f->cs, 1, d->w * f->cs, f->cs));
    if (f->ys == f->kp)
        FV_CUDNN_TRY(cudnnSetTensor4dDescriptor(l->y, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, d->n,
                                                f->kp, op->p, op->q));
    else /* a channel slice of a wider tensor */
        FV_CUDNN_TRY(cudnnSetTensor4dDescriptorEx(l->y, CUDNN_DATA_HALF, d->n, f->kp, op->p, op->q,
                                                  op->p * op->q * f->ys, 1, op->q * f->ys, f->ys));
    FV_CUDNN_TRY(cudnnSetFilter4dDescriptor(l->w, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, f->kp, f->wc,
                                            d->r, d->s));
    FV_CUDNN_TRY(cudnnSetConvolution2dDescriptor(l->c, d->pad_h, d->pad_w, d->stride_h, d->stride_w,
                                                 d->dilation_h, d->dilation_w,
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    FV_CUDNN_TRY(cudnnSetConvolutionGroupCount(l->c, f->groups));
    FV_CUDNN_TRY(cudnnSetConvolutionMathType(l->c, CUDNN_TENSOR_OP_MATH));
    if (!legacy_fused_wanted(op)) return FV_OK;
    /* cudnnConvolutionBiasActivationForward: with half x, w, y and a float
     * convolution (PSEUDO_HALF_CONFIG) the bias is half too, 1 x K x 1 x 1;
     * for one value a channel NCHW and NHWC are the same bytes. coef: cuDNN
     * may read it as ReLU's upper bound, so none (as PyTorch does). A
     * failure here only loses the fused path. */
    cudnnStatus_t s = cudnnCreateTensorDescriptor(&l->b);
    if (!s)
        s = cudnnSetTensor4dDescriptor(l->b, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, f->kp, 1, 1);
    if (!s) s = cudnnCreateActivationDescriptor(&l->act);
    if (!s)
        s = cudnnSetActivationDescriptor(l->act,
                                         (cudnnActivationMode_t)legacy_activation(d->activation),
                                         CUDNN_NOT_PROPAGATE_NAN, DBL_MAX);
    if (s) {
        if (l->b) cudnnDestroyTensorDescriptor(l->b);
        if (l->act) cudnnDestroyActivationDescriptor(l->act);
        l->b = NULL;
        l->act = NULL;
    }
    return FV_OK;
}
