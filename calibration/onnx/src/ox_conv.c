/* Conv, ConvTranspose, BatchNormalization, Gemm and MatMul: the layers
 * with weights. 1-D variants (rank-3 tensors (N, C, L)) run as 2-D with a
 * kernel L x 1 (see onnx.h). */
#include <stdlib.h>
#include <string.h>
#include "ox.h"

#define ATTR_MAX 65536 /* largest kernel, stride, pad or dilation accepted */

typedef struct conv_geom {
    int sp;                                  /* spatial dims: 1 or 2 */
    int64_t k[2], stride[2], dil[2], pad[4]; /* pad: begin h, begin w, end h, end w */
    int64_t opad[2];                         /* ConvTranspose */
} conv_geom;

static fv_status ints2(const fv__ox *ox, const Onnx__NodeProto *n, const char *name, int want,
                       int64_t lo, int64_t def, int64_t *out) {
    int64_t v[4];
    int c;
    fv_status s = fv__ox_attr_ints(ox, n, name, v, 4, &c, lo, ATTR_MAX);
    if (s != FV_OK) return s;
    if (c && c != want)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "attribute '%s' has %d values, not %d", name,
                                c, want);
    for (int i = 0; i < want; i++)
        out[i] = c ? v[i] : def;
    return FV_OK;
}

/* Kernel, strides, dilations, pads (auto_pad resolved for Conv; for
 * ConvTranspose the caller resolves pads). */
static fv_status geometry(const fv__ox *ox, const Onnx__NodeProto *n, const fv__ox_value *x,
                          const int64_t *wk, int transpose, conv_geom *g) {
    memset(g, 0, sizeof *g);
    g->sp = x->rank - 2;
    int64_t ks[2];
    fv_status s;
    if ((s = ints2(ox, n, "kernel_shape", g->sp, 1, 0, ks)) != FV_OK ||
        (s = ints2(ox, n, "strides", g->sp, 1, 1, g->stride)) != FV_OK ||
        (s = ints2(ox, n, "dilations", g->sp, 1, 1, g->dil)) != FV_OK)
        return s;
    for (int i = 0; i < g->sp; i++) {
        g->k[i] = wk[i];
        if (ks[i] && ks[i] != wk[i])
            return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE,
                                    "kernel_shape[%d] = %lld but the weights have %lld", i,
                                    (long long)ks[i], (long long)wk[i]);
        if (wk[i] > ATTR_MAX)
            return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE, "kernel %lld", (long long)wk[i]);
    }
    int64_t p[4];
    if ((s = ints2(ox, n, "pads", 2 * g->sp, 0, 0, p)) != FV_OK) return s;
    char ap[32];
    const char *autopad = fv__ox_attr_str(n, "auto_pad", "NOTSET", ap, sizeof ap);
    int same_upper = !strcmp(autopad, "SAME_UPPER"), same_lower = !strcmp(autopad, "SAME_LOWER");
    if (!same_upper && !same_lower && strcmp(autopad, "NOTSET") && strcmp(autopad, "VALID"))
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "auto_pad '%s'", autopad);
    for (int i = 0; i < g->sp; i++) {
        int64_t b = p[i], e = p[g->sp + i];
        if (!strcmp(autopad, "VALID")) b = e = 0;
        if ((same_upper || same_lower) && !transpose) {
            int64_t in = x->dims[2 + i], out = (in + g->stride[i] - 1) / g->stride[i];
            int64_t total = (out - 1) * g->stride[i] + (g->k[i] - 1) * g->dil[i] + 1 - in;
            if (total < 0) total = 0;
            b = same_upper ? total / 2 : total - total / 2;
            e = total - b;
        }
        g->pad[i] = b;
        g->pad[2 + i] = e;
    }
    return FV_OK;
}

static void fill_desc(const conv_geom *g, const char *name, fv_net_conv_desc *d) {
    memset(d, 0, sizeof *d);
    d->name = name;
    d->r = (int)g->k[0];
    d->s = g->sp == 2 ? (int)g->k[1] : 1;
    d->stride_h = (int)g->stride[0];
    d->stride_w = g->sp == 2 ? (int)g->stride[1] : 1;
    d->dilation_h = (int)g->dil[0];
    d->dilation_w = g->sp == 2 ? (int)g->dil[1] : 1;
    d->pad[0] = (int)g->pad[0];
    d->pad[1] = g->sp == 2 ? (int)g->pad[1] : 0;
    d->pad[2] = (int)g->pad[2];
    d->pad[3] = g->sp == 2 ? (int)g->pad[3] : 0;
}

static fv_status weights_in(fv__ox *ox, const Onnx__NodeProto *n, fv__ox_value **x,
                            fv__ox_value **w, fv__ox_value **b) {
    fv_status s;
    if ((s = fv__ox_in_runtime(ox, n, 0, 3, 4, x)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 1, 0, w)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 2, 1, b)) != FV_OK)
        return s;
    if ((*w)->is_int || (*w)->rank != (*x)->rank) {
        char a[160], c[160];
        return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE,
                                "weights %s of %s do not fit an input of shape %s",
                                fv__ox_dims_str((*w)->rank, (*w)->dims, a, sizeof a),
                                (*w)->is_int ? "integers" : "floats",
                                fv__ox_dims_str((*x)->rank, (*x)->dims, c, sizeof c));
    }
    return FV_OK;
}

static fv_status bias_check(const fv__ox *ox, const Onnx__NodeProto *n, const fv__ox_value *b,
                            int64_t k) {
    if (b && (b->is_int || (int64_t)b->count != k))
        return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE, "bias has %zu values for %lld outputs",
                                b->count, (long long)k);
    return FV_OK;
}

fv_status fv__ox_conv(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x, *w, *b;
    fv_status s = weights_in(ox, n, &x, &w, &b);
    if (s != FV_OK) return s;
    int64_t group = fv__ox_attr_int(n, "group", 1), c = x->dims[1], k = w->dims[0];
    if (group < 1 || group > c || c % group || k % group || w->dims[1] * group != c)
        return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE,
                                "input C=%lld, group %lld, but the weights take %lld channels a "
                                "group into K=%lld",
                                (long long)c, (long long)group, (long long)w->dims[1],
                                (long long)k);
    if ((s = bias_check(ox, n, b, k)) != FV_OK) return s;
    conv_geom g;
    if ((s = geometry(ox, n, x, w->dims + 2, 0, &g)) != FV_OK) return s;
    fv_net_conv_desc d;
    fill_desc(&g, fv__ox_layer_name(ox, n, NULL), &d);
    d.k = (int)k;
    d.groups = (int)group;
    d.weights = w->f;
    d.bias = b ? b->f : NULL;
    int id;
    if ((s = fv_net_add_conv(ox->b, &d, x->tensor, &id)) != FV_OK)
        return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    ox->rep->weight_bytes += (w->count + (b ? b->count : 0)) * sizeof(float);
    return fv__ox_set_runtime_rank(ox, n, 0, id, x->rank);
}

fv_status fv__ox_conv_transpose(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x, *w, *b;
    fv_status s = weights_in(ox, n, &x, &w, &b);
    if (s != FV_OK) return s;
    int64_t group = fv__ox_attr_int(n, "group", 1), c = x->dims[1];
    if (group < 1 || group > c || w->dims[0] != c || c % group)
        return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE,
                                "input C=%lld but the weights take C=%lld (group %lld)",
                                (long long)c, (long long)w->dims[0], (long long)group);
    int64_t k = w->dims[1] * group;
    if ((s = bias_check(ox, n, b, k)) != FV_OK) return s;
    conv_geom g;
    if ((s = geometry(ox, n, x, w->dims + 2, 1, &g)) != FV_OK) return s;
    int64_t op[2], os[4];
    int nos;
    if ((s = ints2(ox, n, "output_padding", g.sp, 0, 0, op)) != FV_OK ||
        (s = fv__ox_attr_ints(ox, n, "output_shape", os, 4, &nos, 1, FV_NET_MAX_DIM)) != FV_OK)
        return s;
    char ap[32];
    const char *autopad = fv__ox_attr_str(n, "auto_pad", "NOTSET", ap, sizeof ap);
    int upper = !strcmp(autopad, "SAME_UPPER"), same = upper || !strcmp(autopad, "SAME_LOWER");
    if (nos && nos != g.sp && nos != g.sp + 2)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "output_shape has %d values", nos);
    for (int i = 0; i < g.sp; i++) {
        int64_t in = x->dims[2 + i],
                full = g.stride[i] * (in - 1) + op[i] + (g.k[i] - 1) * g.dil[i] + 1;
        if (nos || same) {
            int64_t want = nos ? os[nos - g.sp + i] : in * g.stride[i];
            int64_t total = full - want, half = total >= 0 ? total / 2 : -((1 - total) / 2);
            g.pad[i] = upper ? half : total - half; /* ONNX: Python's floor division */
            g.pad[2 + i] = total - g.pad[i];
        }
        if (g.pad[2 + i] < 0) { /* a bigger output than the pads allow: output padding */
            op[i] -= g.pad[2 + i];
            g.pad[2 + i] = 0;
        }
        if (g.pad[i] < 0)
            return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                    "output_shape needs a negative leading pad on axis %d", i);
    }
    fv_net_conv_desc d;
    fill_desc(&g, fv__ox_layer_name(ox, n, NULL), &d);
    d.k = (int)k;
    d.groups = (int)group;
    d.weights = w->f;
    d.bias = b ? b->f : NULL;
    d.output_pad_h = (int)op[0];
    d.output_pad_w = g.sp == 2 ? (int)op[1] : 0;
    int id;
    if ((s = fv_net_add_conv_transpose(ox->b, &d, x->tensor, &id)) != FV_OK)
        return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    ox->rep->weight_bytes += (w->count + (b ? b->count : 0)) * sizeof(float);
    return fv__ox_set_runtime_rank(ox, n, 0, id, x->rank);
}

fv_status fv__ox_batchnorm(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x, *p[4];
    fv_status s = fv__ox_in_runtime(ox, n, 0, 2, 4, &x);
    if (s != FV_OK) return s;
    if (fv__ox_attr_int(n, "training_mode", 0) != 0)
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "training_mode=1");
    if ((s = fv__ox_extra_outputs_unused(ox, n, 1)) != FV_OK) return s;
    for (int i = 0; i < 4; i++) {
        if ((s = fv__ox_in_const(ox, n, 1 + i, 0, &p[i])) != FV_OK) return s;
        if (p[i]->is_int || (int64_t)p[i]->count != x->dims[1])
            return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE, "input %d has %zu values for C=%lld",
                                    1 + i, p[i]->count, (long long)x->dims[1]);
    }
    float eps = fv__ox_attr_float(n, "epsilon", 1e-5f);
    int id;
    s = fv_net_add_batchnorm(ox->b, fv__ox_layer_name(ox, n, NULL), x->tensor, p[0]->f, p[1]->f,
                             p[2]->f, p[3]->f, eps, &id);
    if (s != FV_OK) return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    ox->rep->weight_bytes += 4 * p[0]->count * sizeof(float);
    return fv__ox_set_runtime(ox, n, 0, id, x->rank, x->dims);
}

/* out = x W^T + bias over the last axis of x (rank 2..4): an fc layer, with
 * reshapes around it when x has more than 2 dims. W is K x Kin. */
static fv_status linear(fv__ox *ox, const Onnx__NodeProto *n, const fv__ox_value *x, const float *w,
                        const float *bias, int64_t k) {
    int r = x->rank, id = x->tensor;
    int64_t outer = fv__ox_count(r - 1, x->dims, FV_NET_MAX_DIM), kin = x->dims[r - 1];
    if (outer < 0)
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "more than %d rows in the product",
                                FV_NET_MAX_DIM);
    fv_status s;
    if (r > 2) {
        int d[4] = {(int)outer, (int)kin, 1, 1};
        if ((s = fv__ox_reshape4(ox, n, id, d, ":rows", &id)) != FV_OK) return s;
    }
    if ((s = fv_net_add_fc(ox->b, fv__ox_layer_name(ox, n, NULL), id, (int)k, w, bias,
                           FV_ACT_IDENTITY, 0, &id)) != FV_OK)
        return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    ox->rep->weight_bytes += (size_t)(k * kin + (bias ? k : 0)) * sizeof(float);
    int64_t od[4];
    memcpy(od, x->dims, sizeof(int64_t) * (size_t)r);
    od[r - 1] = k;
    if (r > 2) {
        int d[4];
        fv__ox_dims4(r, od, d);
        if ((s = fv__ox_reshape4(ox, n, id, d, ":unrows", &id)) != FV_OK) return s;
    }
    return fv__ox_set_runtime(ox, n, 0, id, r, od);
}

fv_status fv__ox_gemm(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *a, *bm, *c;
    fv_status s;
    if ((s = fv__ox_in_runtime(ox, n, 0, 2, 2, &a)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 1, 0, &bm)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 2, 1, &c)) != FV_OK)
        return s;
    if (fv__ox_attr_int(n, "transA", 0))
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "transA=1 on a computed tensor");
    int tb = fv__ox_attr_int(n, "transB", 0) != 0;
    float alpha = fv__ox_attr_float(n, "alpha", 1.0f), beta = fv__ox_attr_float(n, "beta", 1.0f);
    int64_t kin = a->dims[1];
    if (bm->is_int || bm->rank != 2 || bm->dims[tb ? 1 : 0] != kin) {
        char x[160];
        return fv__ox_node_fail(
            ox, n, FV_ERR_BAD_SHAPE, "B %s (transB=%d) does not take %lld inputs",
            fv__ox_dims_str(bm->rank, bm->dims, x, sizeof x), tb, (long long)kin);
    }
    int64_t k = bm->dims[tb ? 0 : 1];
    if (c && (c->is_int || c->rank > 2 || (c->rank == 2 && c->dims[0] != 1) ||
              (c->count != 1 && (int64_t)c->count != k)))
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "C must be a scalar or a vector of the %lld outputs", (long long)k);
    float *w = malloc(sizeof(float) * (size_t)(k * kin + k));
    if (!w) return fv__ox_node_fail(ox, n, FV_ERR_OUT_OF_MEMORY, "weights");
    float *bias = w + k * kin;
    for (int64_t o = 0; o < k; o++) {
        for (int64_t i = 0; i < kin; i++)
            w[o * kin + i] = alpha * (tb ? bm->f[o * kin + i] : bm->f[i * k + o]);
        bias[o] = c ? beta * c->f[c->count == 1 ? 0 : o] : 0.0f;
    }
    s = linear(ox, n, a, w, c ? bias : NULL, k);
    free(w);
    return s;
}

fv_status fv__ox_matmul(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *a, *bm;
    fv_status s;
    if ((s = fv__ox_in_runtime(ox, n, 0, 2, 4, &a)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 1, 0, &bm)) != FV_OK)
        return s;
    int64_t kin = a->dims[a->rank - 1];
    if (bm->is_int || bm->rank != 2 || bm->dims[0] != kin) {
        char x[160];
        return fv__ox_node_fail(ox, n, bm->rank != 2 ? FV_ERR_NOT_SUPPORTED : FV_ERR_BAD_SHAPE,
                                "B %s: fovea multiplies by a 2-D constant of %lld rows",
                                fv__ox_dims_str(bm->rank, bm->dims, x, sizeof x), (long long)kin);
    }
    int64_t k = bm->dims[1];
    float *w = malloc(sizeof(float) * (size_t)(k * kin + 1));
    if (!w) return fv__ox_node_fail(ox, n, FV_ERR_OUT_OF_MEMORY, "weights");
    for (int64_t o = 0; o < k; o++)
        for (int64_t i = 0; i < kin; i++)
            w[o * kin + i] = bm->f[i * k + o];
    s = linear(ox, n, a, w, NULL, k);
    free(w);
    return s;
}
