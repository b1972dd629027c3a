/* Layers that reshape or cut: Reshape, Flatten, Squeeze, Unsqueeze (no
 * data moves unless the builder needs a gather), Transpose (only where it
 * is a reshape: the dims it moves are 1s), Slice (step 1) and Pad (constant
 * padding of the spatial dims). */
#include <string.h>
#include "ox.h"

fv_status fv__ox_reshape_like(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x;
    fv_status s = fv__ox_in_runtime(ox, n, 0, 0, 4, &x);
    if (s != FV_OK) return s;
    int r, id, d[4];
    int64_t od[FV_ONNX_MAX_RANK];
    if ((s = fv__ox_reshape_dims(ox, n, x->rank, x->dims, &r, od)) != FV_OK) return s;
    if (r > 4) {
        char b[160];
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "result %s: fovea runs tensors of rank 4 or less",
                                fv__ox_dims_str(r, od, b, sizeof b));
    }
    for (int i = 0; i < r; i++)
        if (od[i] < 1 || od[i] > FV_NET_MAX_DIM) {
            char b[160];
            return fv__ox_node_fail(ox, n, od[i] < 1 ? FV_ERR_NOT_SUPPORTED : FV_ERR_BAD_SHAPE,
                                    "result %s (fovea runs dims of 1 to %d)",
                                    fv__ox_dims_str(r, od, b, sizeof b), FV_NET_MAX_DIM);
        }
    fv__ox_value *y = fv__ox_out(ox, n, 0);
    if (ox->mark[ox->cur] == FV__OX_MARK_FLAT && y && x->rank == 4 && r == 2 &&
        od[0] == x->dims[0] && !x->flat && !x->nhwc) {
        /* read by one fc only, which flattens (C, H, W) itself: no layer */
        y->kind = FV__OX_RUNTIME;
        y->tensor = x->tensor;
        y->rank = 2;
        memcpy(y->dims, od, 2 * sizeof *od);
        y->flat = 1;
        ox->rep->removed++;
        fv__ox_log(ox, "removed %s '%s' (the fc after it flattens)", n->op_type,
                   fv__ox_node_name(n));
        return FV_OK;
    }
    int layers = ox->rep->layers;
    fv__ox_dims4(r, od, d);
    if ((s = fv__ox_reshape4(ox, n, x->tensor, d, NULL, &id)) != FV_OK) return s;
    if (ox->rep->layers == layers) ox->rep->removed++;
    return fv__ox_set_runtime(ox, n, 0, id, r, od);
}

fv_status fv__ox_transpose(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x;
    fv_status s = fv__ox_in_runtime(ox, n, 0, 1, 4, &x);
    if (s != FV_OK) return s;
    int64_t perm[FV_ONNX_MAX_RANK], od[FV_ONNX_MAX_RANK];
    int np;
    if ((s = fv__ox_attr_ints(ox, n, "perm", perm, FV_ONNX_MAX_RANK, &np, 0, x->rank - 1)) != FV_OK)
        return s;
    if (np == 0)
        for (int i = 0; i < x->rank; i++)
            perm[i] = x->rank - 1 - i;
    else if (np != x->rank)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "perm has %d entries for rank %d", np,
                                x->rank);
    fv__ox_value *y = fv__ox_out(ox, n, 0);
    if ((ox->mark[ox->cur] == FV__OX_MARK_NHWC_IN && x->nhwc) ||
        (ox->mark[ox->cur] == FV__OX_MARK_NHWC_OUT && x->rank == 4 && !x->nhwc && !x->flat)) {
        /* NHWC <-> NCHW at the graph's edge: fovea stores NHWC, nothing moves */
        if (!y) return FV_OK;
        int in = ox->mark[ox->cur] == FV__OX_MARK_NHWC_IN;
        y->kind = FV__OX_RUNTIME;
        y->tensor = x->tensor;
        y->rank = 4;
        y->dims[0] = x->dims[0];
        for (int i = 1; i < 4; i++)
            y->dims[i] = x->dims[in ? (i + 1) % 3 + 1 : i % 3 + 1];
        y->nhwc = !in;
        ox->rep->removed++;
        fv__ox_log(ox, "removed Transpose '%s' (NHWC %s)", fv__ox_node_name(n),
                   in ? "input" : "output");
        return FV_OK;
    }
    /* A layout no-op when the axes of size > 1 keep their order. */
    int last = -1;
    unsigned seen = 0;
    for (int i = 0; i < x->rank; i++) {
        int a = (int)perm[i];
        if (seen & (1u << a))
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "perm repeats axis %d", a);
        seen |= 1u << a;
        od[i] = x->dims[a];
        if (x->dims[a] == 1) continue;
        if (a < last) {
            char b[160];
            return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                    "this transpose of %s moves data; fovea runs transposes that "
                                    "only move dims of size 1",
                                    fv__ox_dims_str(x->rank, x->dims, b, sizeof b));
        }
        last = a;
    }
    int d[4], id, layers = ox->rep->layers;
    fv__ox_dims4(x->rank, od, d);
    if ((s = fv__ox_reshape4(ox, n, x->tensor, d, NULL, &id)) != FV_OK) return s;
    if (ox->rep->layers == layers) ox->rep->removed++;
    return fv__ox_set_runtime(ox, n, 0, id, x->rank, od);
}

fv_status fv__ox_slice(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x;
    fv_status s = fv__ox_in_runtime(ox, n, 0, 1, 4, &x);
    if (s != FV_OK) return s;
    int64_t b[FV_ONNX_MAX_RANK], e[FV_ONNX_MAX_RANK], st[FV_ONNX_MAX_RANK], dims[FV_ONNX_MAX_RANK];
    if ((s = fv__ox_slice_ranges(ox, n, x->rank, x->dims, b, e, st)) != FV_OK) return s;
    memcpy(dims, x->dims, sizeof dims);
    int id = x->tensor, cut = 0;
    for (int a = 0; a < x->rank; a++) {
        if (b[a] == 0 && e[a] == x->dims[a] && st[a] == 1) continue;
        if (st[a] != 1)
            return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                    "step %lld on axis %d (fovea slices with step 1)",
                                    (long long)st[a], a);
        if (e[a] <= b[a])
            return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                    "axis %d: empty range %lld .. %lld (fovea runs no zero-size "
                                    "tensors)",
                                    a, (long long)b[a], (long long)e[a]);
        int rows;
        if ((s = fv__ox_axis_to_c(ox, n, id, x->rank, dims, a, ":rows", &rows)) != FV_OK) return s;
        if ((s = fv_net_add_slice(ox->b, fv__ox_layer_name(ox, n, NULL), rows, (int)b[a], (int)e[a],
                                  &id)) != FV_OK)
            return fv__ox_builder_fail(ox, n, s);
        ox->rep->layers++;
        dims[a] = e[a] - b[a];
        int d[4];
        fv__ox_dims4(x->rank, dims, d);
        if ((s = fv__ox_reshape4(ox, n, id, d, ":unrows", &id)) != FV_OK) return s;
        cut = 1;
    }
    if (!cut) ox->rep->removed++;
    return fv__ox_set_runtime(ox, n, 0, id, x->rank, dims);
}

fv_status fv__ox_pad(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x, *vp, *vv, *va;
    fv_status s;
    if ((s = fv__ox_in_runtime(ox, n, 0, 1, 4, &x)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 1, 0, &vp)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 2, 1, &vv)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 3, 1, &va)) != FV_OK)
        return s;
    char mb[32];
    const char *mode = fv__ox_attr_str(n, "mode", "constant", mb, sizeof mb);
    if (strcmp(mode, "constant"))
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "mode '%s' (fovea pads with a constant)", mode);
    int r = x->rank;
    int64_t beg[FV_ONNX_MAX_RANK] = {0}, end[FV_ONNX_MAX_RANK] = {0};
    int na = va ? (int)va->count : r;
    if (!vp->is_int || (int)vp->count != 2 * na || (va && (!va->is_int || na > r)))
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "pads has %zu values for %d axes", vp->count,
                                na);
    for (int k = 0; k < na; k++) {
        int a = k;
        if (va && (s = fv__ox_axis(ox, n, va->i[k], r, &a)) != FV_OK) return s;
        beg[a] = vp->i[k];
        end[a] = vp->i[na + k];
    }
    float value = vv && vv->count ? (float)fv__ox_get(vv, 0) : 0.0f;
    int64_t od[FV_ONNX_MAX_RANK];
    for (int a = 0; a < r; a++) {
        if (beg[a] < 0 || end[a] < 0 || beg[a] > FV_NET_MAX_DIM || end[a] > FV_NET_MAX_DIM)
            return fv__ox_node_fail(
                ox, n, beg[a] < 0 || end[a] < 0 ? FV_ERR_NOT_SUPPORTED : FV_ERR_BAD_SHAPE,
                "pads %lld, %lld on axis %d (fovea pads by 0 .. %d)", (long long)beg[a],
                (long long)end[a], a, FV_NET_MAX_DIM);
        if (a < 2 && (beg[a] || end[a]))
            return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                    "padding axis %d (fovea pads the spatial axes only)", a);
        od[a] = x->dims[a] + beg[a] + end[a];
    }
    int pad[4] = {r > 2 ? (int)beg[2] : 0, r > 3 ? (int)beg[3] : 0, r > 2 ? (int)end[2] : 0,
                  r > 3 ? (int)end[3] : 0};
    int id = x->tensor;
    if (pad[0] || pad[1] || pad[2] || pad[3]) {
        if ((s = fv_net_add_pad(ox->b, fv__ox_layer_name(ox, n, NULL), id, pad, value, &id)) !=
            FV_OK)
            return fv__ox_builder_fail(ox, n, s);
        ox->rep->layers++;
    } else {
        ox->rep->removed++;
    }
    return fv__ox_set_runtime(ox, n, 0, id, r, od);
}
