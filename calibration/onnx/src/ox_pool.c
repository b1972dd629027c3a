/* MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool. */
#include <stdlib.h>
#include <string.h>
#include "ox.h"

#define ATTR_MAX 65536

static fv_status ints(const fv__ox *ox, const Onnx__NodeProto *n, const char *name, int want,
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

fv_status fv__ox_pool(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x;
    fv_status s = fv__ox_in_runtime(ox, n, 0, 3, 4, &x);
    if (s != FV_OK) return s;
    if ((s = fv__ox_extra_outputs_unused(ox, n, 1)) != FV_OK) return s;
    int sp = x->rank - 2, is_max = !strcmp(n->op_type, "MaxPool");
    int64_t k[2], st[2], dil[2], p[4];
    if (!fv__ox_attr(n, "kernel_shape"))
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "kernel_shape is required");
    if ((s = ints(ox, n, "kernel_shape", sp, 1, 1, k)) != FV_OK ||
        (s = ints(ox, n, "strides", sp, 1, 1, st)) != FV_OK ||
        (s = ints(ox, n, "dilations", sp, 1, 1, dil)) != FV_OK ||
        (s = ints(ox, n, "pads", 2 * sp, 0, 0, p)) != FV_OK)
        return s;
    char ap[32];
    const char *autopad = fv__ox_attr_str(n, "auto_pad", "NOTSET", ap, sizeof ap);
    int upper = !strcmp(autopad, "SAME_UPPER"), lower = !strcmp(autopad, "SAME_LOWER");
    if (!upper && !lower && strcmp(autopad, "NOTSET") && strcmp(autopad, "VALID"))
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "auto_pad '%s'", autopad);
    for (int i = 0; i < sp; i++) {
        if (!strcmp(autopad, "VALID")) p[i] = p[sp + i] = 0;
        if (upper || lower) {
            int64_t in = x->dims[2 + i], out = (in + st[i] - 1) / st[i];
            int64_t total = (out - 1) * st[i] + (k[i] - 1) * dil[i] + 1 - in;
            if (total < 0) total = 0;
            p[i] = upper ? total / 2 : total - total / 2;
            p[sp + i] = total - p[i];
        }
    }
    if (!is_max && (dil[0] != 1 || (sp == 2 && dil[1] != 1)))
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "dilated average pooling");
    fv_net_pool_desc d;
    memset(&d, 0, sizeof d);
    d.name = fv__ox_layer_name(ox, n, NULL);
    d.mode = is_max                                       ? FV_NET_POOL_MAX
             : fv__ox_attr_int(n, "count_include_pad", 0) ? FV_NET_POOL_AVG_INCLUDE_PAD
                                                          : FV_NET_POOL_AVG;
    d.r = (int)k[0];
    d.s = sp == 2 ? (int)k[1] : 1;
    d.stride_h = (int)st[0];
    d.stride_w = sp == 2 ? (int)st[1] : 1;
    d.dilation_h = (int)dil[0];
    d.dilation_w = sp == 2 ? (int)dil[1] : 1;
    d.pad[0] = (int)p[0];
    d.pad[1] = sp == 2 ? (int)p[1] : 0;
    d.pad[2] = (int)p[sp];
    d.pad[3] = sp == 2 ? (int)p[sp + 1] : 0;
    d.ceil_mode = fv__ox_attr_int(n, "ceil_mode", 0) != 0;
    int id;
    if ((s = fv_net_add_pool(ox->b, &d, x->tensor, &id)) != FV_OK)
        return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    return fv__ox_set_runtime_rank(ox, n, 0, id, x->rank);
}

fv_status fv__ox_global_pool(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x;
    fv_status s = fv__ox_in_runtime(ox, n, 0, 3, 4, &x);
    if (s != FV_OK) return s;
    int id, avg = !strcmp(n->op_type, "GlobalAveragePool");
    if ((s = fv_net_add_global_pool(ox->b, fv__ox_layer_name(ox, n, NULL), x->tensor, avg, &id)) !=
        FV_OK)
        return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    return fv__ox_set_runtime_rank(ox, n, 0, id, x->rank);
}

/* ReduceMean / ReduceMax over a run of neighbouring axes: a global pool
 * over H and W (x.mean((2, 3)) in a CNN, no reshape), or over trailing
 * axes gathered into H; ReduceMean over inner axes as a 1x1 convolution of
 * weights 1/len. ReduceMax over inner axes is refused. */
fv_status fv__ox_reduce(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x, *va = NULL;
    fv_status s = fv__ox_in_runtime(ox, n, 0, 1, 4, &x);
    if (s != FV_OK) return s;
    int64_t axes[FV_ONNX_MAX_RANK];
    int na = 0, r = x->rank;
    /* axes: an input from opset 18, an attribute before */
    if (ox->opset >= 18) {
        if ((s = fv__ox_in_const(ox, n, 1, 1, &va)) != FV_OK) return s;
        if (va && (!va->is_int || va->count > FV_ONNX_MAX_RANK))
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "axes must be an int list");
        for (size_t i = 0; va && i < va->count; i++)
            axes[na++] = va->i[i];
    } else if ((s = fv__ox_attr_ints(ox, n, "axes", axes, FV_ONNX_MAX_RANK, &na, -r, r - 1)) !=
               FV_OK) {
        return s;
    }
    unsigned set = 0;
    for (int i = 0; i < na; i++) {
        int a;
        if ((s = fv__ox_axis(ox, n, axes[i], r, &a)) != FV_OK) return s;
        set |= 1u << a;
    }
    if (!na) {
        if (fv__ox_attr_int(n, "noop_with_empty_axes", 0)) {
            fv__ox_value *y = fv__ox_out(ox, n, 0);
            if (y) fv__ox_value_copy(y, x);
            ox->rep->removed++;
            return FV_OK;
        }
        set = (1u << r) - 1;
    }
    int lo = __builtin_ctz(set), hi = 31 - __builtin_clz(set);
    if (set != ((2u << hi) - (1u << lo)))
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "fovea reduces over neighbouring axes only");
    int keep = fv__ox_attr_int(n, "keepdims", 1) != 0, id = x->tensor, ro = 0;
    int avg = !strcmp(n->op_type, "ReduceMean");
    int64_t od[FV_ONNX_MAX_RANK];
    for (int i = 0; i < r; i++)
        if (keep || !(set & (1u << i))) od[ro++] = set & (1u << i) ? 1 : x->dims[i];
    int64_t outer = fv__ox_count(lo, x->dims, FV_NET_MAX_DIM);
    int64_t len = fv__ox_count(hi - lo + 1, x->dims + lo, FV_NET_MAX_DIM);
    int64_t inner = fv__ox_count(r - hi - 1, x->dims + hi + 1, FV_NET_MAX_DIM);
    if (outer < 0 || len < 0 || inner < 0)
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "reduction too large");
    const char *name = fv__ox_layer_name(ox, n, NULL);
    if (r == 4 && lo == 2 && hi == 3) {
        s = fv_net_add_global_pool(ox->b, name, id, avg, &id);
    } else if (inner == 1) {
        int d[4] = {(int)outer, 1, (int)len, 1};
        if ((s = fv__ox_reshape4(ox, n, id, d, ":rows", &id)) != FV_OK) return s;
        s = fv_net_add_global_pool(ox->b, fv__ox_layer_name(ox, n, NULL), id, avg, &id);
    } else if (avg) {
        int d[4] = {(int)outer, (int)len, (int)inner, 1};
        if ((s = fv__ox_reshape4(ox, n, id, d, ":rows", &id)) != FV_OK) return s;
        float *w = malloc(sizeof(float) * (size_t)len);
        if (!w) return fv__ox_node_fail(ox, n, FV_ERR_OUT_OF_MEMORY, "weights");
        for (int64_t i = 0; i < len; i++)
            w[i] = 1.0f / (float)len;
        fv_net_conv_desc cd = {
            .name = fv__ox_layer_name(ox, n, NULL), .k = 1, .r = 1, .s = 1, .weights = w};
        s = fv_net_add_conv(ox->b, &cd, id, &id);
        free(w);
    } else {
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "ReduceMax over inner axes (fovea: H and W, or trailing axes)");
    }
    if (s != FV_OK) return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    int d[4];
    fv__ox_dims4(ro, od, d);
    if ((s = fv__ox_reshape4(ox, n, id, d, ":unrows", &id)) != FV_OK) return s;
    return fv__ox_set_runtime(ox, n, 0, id, ro, od);
}
