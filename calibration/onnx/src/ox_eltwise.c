/* Elementwise layers: activations, Clip, and Add/Sub/Mul/Div. A constant
 * operand must be a scalar or a per-channel vector (an affine layer); two
 * computed operands broadcast as numpy does (a binary layer). Mul marked by
 * fv__ox_graph_patterns runs as one SiLU or HardSwish. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ox.h"

static fv_status act(fv__ox *ox, const Onnx__NodeProto *n, int in, fv_activation a, float alpha,
                     float beta, const char *suffix, int *out) {
    fv_status s =
        fv_net_add_activation(ox->b, fv__ox_layer_name(ox, n, suffix), in, a, alpha, beta, out);
    if (s != FV_OK) return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    return FV_OK;
}

static fv_status affine(fv__ox *ox, const Onnx__NodeProto *n, int in, const float *scale,
                        const float *shift, int count, const char *suffix, int *out) {
    fv_status s =
        fv_net_add_affine(ox->b, fv__ox_layer_name(ox, n, suffix), in, scale, shift, count, out);
    if (s != FV_OK) return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    return FV_OK;
}

fv_status fv__ox_activation(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x;
    fv_status s = fv__ox_in_runtime(ox, n, 0, 1, 4, &x);
    if (s != FV_OK) return s;
    const char *op = n->op_type;
    int id = x->tensor;
    if (!strcmp(op, "Relu"))
        s = act(ox, n, id, FV_ACT_RELU, 0, 0, NULL, &id);
    else if (!strcmp(op, "Sigmoid"))
        s = act(ox, n, id, FV_ACT_SIGMOID, 0, 0, NULL, &id);
    else if (!strcmp(op, "Tanh"))
        s = act(ox, n, id, FV_ACT_TANH, 0, 0, NULL, &id);
    else if (!strcmp(op, "HardSwish"))
        s = act(ox, n, id, FV_ACT_HARD_SWISH, 0, 0, NULL, &id);
    else if (!strcmp(op, "LeakyRelu")) {
        float a = fv__ox_attr_float(n, "alpha", 0.01f);
        s = a == 0 ? act(ox, n, id, FV_ACT_RELU, 0, 0, NULL, &id)
                   : act(ox, n, id, FV_ACT_LEAKY_RELU, a, 0, NULL, &id);
    } else { /* HardSigmoid: fovea reads alpha or beta 0 as its defaults */
        float a = fv__ox_attr_float(n, "alpha", 0.2f), b = fv__ox_attr_float(n, "beta", 0.5f);
        if (a != 0 && b != 0) {
            s = act(ox, n, id, FV_ACT_HARD_SIGMOID, a, b, NULL, &id);
        } else { /* clamp(a x + b, 0, 1) as affine + clipped ReLU(1) */
            s = affine(ox, n, id, &a, &b, 1, ":affine", &id);
            if (s == FV_OK) s = act(ox, n, id, FV_ACT_CLIPPED_RELU, 1.0f, 0, NULL, &id);
        }
    }
    if (s != FV_OK) return s;
    return fv__ox_set_runtime(ox, n, 0, id, x->rank, x->dims);
}

/* Clip(x, lo, hi) with constant bounds, on ReLU-family layers:
 *   [0, inf) ReLU; [0, hi] clipped ReLU; [lo, hi] shifted by lo around a
 *   clipped ReLU; (-inf, hi] as hi - relu(hi - x); hi <= lo: hi everywhere. */
fv_status fv__ox_clip(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x, *vlo, *vhi;
    fv_status s;
    if ((s = fv__ox_in_runtime(ox, n, 0, 1, 4, &x)) != FV_OK) return s;
    float lo = -INFINITY, hi = INFINITY;
    if (ox->opset < 11) {
        lo = fv__ox_attr_float(n, "min", lo);
        hi = fv__ox_attr_float(n, "max", hi);
    } else {
        if ((s = fv__ox_in_const(ox, n, 1, 1, &vlo)) != FV_OK ||
            (s = fv__ox_in_const(ox, n, 2, 1, &vhi)) != FV_OK)
            return s;
        if ((vlo && vlo->count != 1) || (vhi && vhi->count != 1))
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "min and max must be scalars");
        if (vlo) lo = (float)fv__ox_get(vlo, 0);
        if (vhi) hi = (float)fv__ox_get(vhi, 0);
    }
    int id = x->tensor;
    float m1 = -1.0f, one = 1.0f, zero = 0.0f;
    if (isnan(lo) || isnan(hi)) {
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "NaN bound");
    } else if (hi <= lo) {
        s = affine(ox, n, id, &zero, &hi, 1, NULL, &id);
    } else if (lo == 0 && isinf(hi)) {
        s = act(ox, n, id, FV_ACT_RELU, 0, 0, NULL, &id);
    } else if (lo == 0) {
        s = act(ox, n, id, FV_ACT_CLIPPED_RELU, hi, 0, NULL, &id);
    } else if (isinf(lo) && isinf(hi)) {
        fv__ox_value *o = fv__ox_out(ox, n, 0);
        if (o) fv__ox_value_copy(o, x);
        ox->rep->removed++;
        return FV_OK;
    } else if (isinf(lo)) {
        s = affine(ox, n, id, &m1, &hi, 1, ":neg", &id);
        if (s == FV_OK) s = act(ox, n, id, FV_ACT_RELU, 0, 0, ":relu", &id);
        if (s == FV_OK) s = affine(ox, n, id, &m1, &hi, 1, NULL, &id);
    } else {
        float nlo = -lo;
        s = affine(ox, n, id, &one, &nlo, 1, ":shift", &id);
        if (s == FV_OK)
            s = isinf(hi) ? act(ox, n, id, FV_ACT_RELU, 0, 0, ":relu", &id)
                          : act(ox, n, id, FV_ACT_CLIPPED_RELU, hi - lo, 0, ":clip", &id);
        if (s == FV_OK) s = affine(ox, n, id, &one, &lo, 1, NULL, &id);
    }
    if (s != FV_OK) return s;
    return fv__ox_set_runtime(ox, n, 0, id, x->rank, x->dims);
}

/* The 4-D shape of v's dims right-aligned to rank r (numpy's leading 1s). */
static void aligned4(const fv__ox_value *v, int r, int d[4]) {
    int64_t a[FV_ONNX_MAX_RANK];
    for (int i = 0; i < r; i++)
        a[i] = i < r - v->rank ? 1 : v->dims[i - (r - v->rank)];
    fv__ox_dims4(r, a, d);
}

static fv_status binary_const(fv__ox *ox, const Onnx__NodeProto *n, const fv__ox_value *x,
                              const fv__ox_value *c, int const_first, int r, const int64_t *od) {
    char b1[160], b2[160];
    for (int i = 0; i < r; i++) {
        int ix = i - (r - x->rank);
        if ((ix >= 0 ? x->dims[ix] : 1) != od[i])
            return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                    "the constant %s would broadcast the computed %s",
                                    fv__ox_dims_str(c->rank, c->dims, b1, sizeof b1),
                                    fv__ox_dims_str(x->rank, x->dims, b2, sizeof b2));
    }
    /* the constant may vary along one axis: C (an affine layer), or another
     * one (made C by reshapes around the affine layer) */
    int axis = -1;
    for (int i = 0; i < r; i++) {
        int ic = i - (r - c->rank);
        if ((ic >= 0 ? c->dims[ic] : 1) == 1) continue;
        if (axis >= 0)
            return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                    "constant operand %s varies along two axes of %s (fovea "
                                    "takes a scalar or one value per position of one axis)",
                                    fv__ox_dims_str(c->rank, c->dims, b1, sizeof b1),
                                    fv__ox_dims_str(r, od, b2, sizeof b2));
        axis = i;
    }
    int cnt = (int)c->count;
    if (cnt == 0) return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE, "empty constant");
    float *scale = malloc(sizeof(float) * 2 * (size_t)cnt), *shift = scale + cnt;
    if (!scale) return fv__ox_node_fail(ox, n, FV_ERR_OUT_OF_MEMORY, "constants");
    const char *op = n->op_type;
    fv_status s = FV_OK;
    for (int k = 0; k < cnt; k++) {
        float v = (float)fv__ox_get(c, (size_t)k);
        scale[k] = 1.0f, shift[k] = 0.0f;
        if (!strcmp(op, "Add"))
            shift[k] = v;
        else if (!strcmp(op, "Sub")) {
            if (const_first)
                scale[k] = -1.0f, shift[k] = v;
            else
                shift[k] = -v;
        } else if (!strcmp(op, "Mul"))
            scale[k] = v;
        else if (!const_first)
            scale[k] = 1.0f / v; /* Div */
        else
            s = fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "a constant divided by a tensor");
    }
    int id = x->tensor, d[4];
    fv__ox_dims4(r, od, d);
    if (axis < 0 || axis == 1) {
        if (s == FV_OK) s = fv__ox_reshape4(ox, n, id, d, ":align", &id);
        if (s == FV_OK) s = affine(ox, n, id, scale, shift, cnt, NULL, &id);
    } else {
        if (s == FV_OK) s = fv__ox_axis_to_c(ox, n, id, r, od, axis, ":rows", &id);
        if (s == FV_OK) s = affine(ox, n, id, scale, shift, cnt, NULL, &id);
        if (s == FV_OK) s = fv__ox_reshape4(ox, n, id, d, ":unrows", &id);
    }
    free(scale);
    if (s != FV_OK) return s;
    ox->rep->weight_bytes += 2 * (size_t)cnt * sizeof(float);
    return fv__ox_set_runtime(ox, n, 0, id, r, od);
}

/* SiLU / HardSwish: one operand is the deferred Sigmoid/HardSigmoid of the other. */
static fv_status fused_mul(fv__ox *ox, const Onnx__NodeProto *n, fv_activation a) {
    fv__ox_value *p = fv__ox_in(ox, n, 0), *q = fv__ox_in(ox, n, 1);
    fv__ox_value *x = p && p->kind == FV__OX_DEFERRED ? q : p;
    if (!x || x->kind != FV__OX_RUNTIME)
        return fv__ox_node_fail(ox, n, FV_ERR_INTERNAL, "fused Mul without its operand");
    int id;
    fv_status s = act(ox, n, x->tensor, a, 0, 0, NULL, &id);
    if (s != FV_OK) return s;
    ox->rep->fused++;
    fv__ox_log(ox, "fused %s at '%s'", a == FV_ACT_SILU ? "SiLU" : "HardSwish",
               fv__ox_node_name(n));
    return fv__ox_set_runtime(ox, n, 0, id, x->rank, x->dims);
}

fv_status fv__ox_binary(fv__ox *ox, const Onnx__NodeProto *n) {
    if (ox->mark[ox->cur] >= FV__OX_MARK_SILU) {
        fv__ox_value *p = fv__ox_in(ox, n, 0), *q = fv__ox_in(ox, n, 1);
        if ((p && p->kind == FV__OX_DEFERRED) || (q && q->kind == FV__OX_DEFERRED))
            return fused_mul(
                ox, n, ox->mark[ox->cur] == FV__OX_MARK_SILU ? FV_ACT_SILU : FV_ACT_HARD_SWISH);
    }
    fv__ox_value *a = fv__ox_in(ox, n, 0), *b = fv__ox_in(ox, n, 1);
    if (!a || !b) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "needs two inputs");
    if (a->kind == FV__OX_DEFERRED || b->kind == FV__OX_DEFERRED)
        return fv__ox_node_fail(ox, n, FV_ERR_INTERNAL, "a deferred operand outside its pattern");
    int r;
    int64_t od[FV_ONNX_MAX_RANK];
    fv_status s = fv__ox_broadcast(ox, n, a, b, &r, od);
    if (s != FV_OK) return s;
    if (r > 4) {
        char x[160];
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "result %s has rank above 4",
                                fv__ox_dims_str(r, od, x, sizeof x));
    }
    if (a->kind == FV__OX_CONST) return binary_const(ox, n, b, a, 1, r, od);
    if (b->kind == FV__OX_CONST) return binary_const(ox, n, a, b, 0, r, od);
    int da[4], db[4], ia, ib, id;
    aligned4(a, r, da);
    aligned4(b, r, db);
    if ((s = fv__ox_reshape4(ox, n, a->tensor, da, ":align0", &ia)) != FV_OK ||
        (s = fv__ox_reshape4(ox, n, b->tensor, db, ":align1", &ib)) != FV_OK)
        return s;
    const char *op = n->op_type;
    fv_net_binary_op bop = !strcmp(op, "Add")   ? FV_NET_ADD
                           : !strcmp(op, "Sub") ? FV_NET_SUB
                           : !strcmp(op, "Mul") ? FV_NET_MUL
                                                : FV_NET_DIV;
    s = fv_net_add_binary(ox->b, fv__ox_layer_name(ox, n, NULL), bop, ia, ib, FV_ACT_IDENTITY, 0,
                          &id);
    if (s != FV_OK) return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    return fv__ox_set_runtime(ox, n, 0, id, r, od);
}
