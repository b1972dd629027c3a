/* Shape arithmetic shared by folding and layers: the output dims of
 * Reshape, Flatten, Squeeze and Unsqueeze, and Slice's ranges. Every
 * product is checked against overflow. */
#include <string.h>
#include "ox.h"

#define CAP ((uint64_t)1 << 62)

/* An int64 list from input k (const), or from attribute attr for opsets
 * below attr_until. *present 0 when neither is given. */
static fv_status int_list(const fv__ox *ox, const Onnx__NodeProto *n, int k, const char *attr,
                          int64_t attr_until, int64_t *out, int *count, int *present) {
    *count = 0;
    *present = 0;
    if (ox->opset < attr_until) {
        const Onnx__AttributeProto *a = fv__ox_attr(n, attr);
        if (!a) return FV_OK;
        *present = 1;
        return fv__ox_attr_ints(ox, n, attr, out, FV_ONNX_MAX_RANK, count, INT64_MIN, INT64_MAX);
    }
    fv__ox_value *v;
    fv_status s = fv__ox_in_const(ox, n, k, 1, &v);
    if (s != FV_OK || !v) return s;
    if (!v->is_int || v->rank > 1 || v->count > FV_ONNX_MAX_RANK)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT,
                                "input %d must be a 1-D int64 list of at most %d values", k,
                                FV_ONNX_MAX_RANK);
    *present = 1;
    memcpy(out, v->i, v->count * sizeof(int64_t));
    *count = (int)v->count;
    return FV_OK;
}

static fv_status reshape(const fv__ox *ox, const Onnx__NodeProto *n, int rank, const int64_t *dims,
                         int *orank, int64_t *odims) {
    fv__ox_value *sh;
    fv_status s = fv__ox_in_const(ox, n, 1, 0, &sh);
    if (s != FV_OK) return s;
    if (!sh->is_int || sh->rank != 1 || sh->count > FV_ONNX_MAX_RANK)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT,
                                "shape must be a 1-D int64 tensor of at most %d values",
                                FV_ONNX_MAX_RANK);
    int allowzero = (int)fv__ox_attr_int(n, "allowzero", 0);
    int64_t total = fv__ox_count(rank, dims, CAP), known = 1;
    int infer = -1;
    for (int i = 0; i < (int)sh->count; i++) {
        int64_t d = sh->i[i];
        if (d == 0 && !allowzero) {
            if (i >= rank)
                return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE,
                                        "shape[%d] = 0 copies a dim the rank-%d input lacks", i,
                                        rank);
            d = dims[i];
        }
        if (d == -1) {
            if (infer >= 0)
                return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "shape has two -1 entries");
            infer = i;
            d = 1;
        } else if (d < 0) {
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "shape[%d] = %lld", i, (long long)d);
        }
        odims[i] = d;
        if (d > 0 && (uint64_t)known > CAP / (uint64_t)d)
            return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE, "shape too large");
        known *= d;
    }
    if (infer >= 0) {
        if (known == 0 || total % known != 0)
            return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE,
                                    "cannot infer the -1 of the shape: %lld elements into blocks "
                                    "of %lld",
                                    (long long)total, (long long)known);
        odims[infer] = total / known;
        known = total;
    }
    if (known != total) {
        char a[160], b[160];
        return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE, "cannot reshape %s into %s",
                                fv__ox_dims_str(rank, dims, a, sizeof a),
                                fv__ox_dims_str((int)sh->count, odims, b, sizeof b));
    }
    *orank = (int)sh->count;
    return FV_OK;
}

fv_status fv__ox_reshape_dims(const fv__ox *ox, const Onnx__NodeProto *n, int rank,
                              const int64_t *dims, int *orank, int64_t *odims) {
    const char *op = n->op_type;
    if (fv__ox_count(rank, dims, CAP) < 0)
        return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE, "input too large");
    if (!strcmp(op, "Reshape")) return reshape(ox, n, rank, dims, orank, odims);
    if (!strcmp(op, "Flatten")) {
        int64_t axis = fv__ox_attr_int(n, "axis", 1);
        if (axis < -rank || axis > rank)
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "axis %lld outside rank %d",
                                    (long long)axis, rank);
        int a = (int)(axis < 0 ? axis + rank : axis);
        odims[0] = fv__ox_count(a, dims, CAP);
        odims[1] = fv__ox_count(rank - a, dims + a, CAP);
        *orank = 2;
        return FV_OK;
    }
    int64_t axes[FV_ONNX_MAX_RANK];
    int na, present;
    fv_status s = int_list(ox, n, 1, "axes", 13, axes, &na, &present);
    if (s != FV_OK) return s;
    unsigned used = 0;
    if (!strcmp(op, "Squeeze")) {
        for (int i = 0; i < na; i++) {
            int a;
            if ((s = fv__ox_axis(ox, n, axes[i], rank, &a)) != FV_OK) return s;
            if (dims[a] != 1)
                return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE,
                                        "cannot squeeze axis %d of size %lld", a,
                                        (long long)dims[a]);
            used |= 1u << a;
        }
        int r = 0;
        for (int i = 0; i < rank; i++)
            if (na ? !(used & (1u << i)) : dims[i] != 1) odims[r++] = dims[i];
        *orank = r;
        return FV_OK;
    }
    /* Unsqueeze */
    if (!present || na == 0) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "axes are required");
    int r = rank + na;
    if (r > FV_ONNX_MAX_RANK)
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "rank %d (at most %d)", r,
                                FV_ONNX_MAX_RANK);
    for (int i = 0; i < na; i++) {
        int a;
        if ((s = fv__ox_axis(ox, n, axes[i], r, &a)) != FV_OK) return s;
        if (used & (1u << a))
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "axis %d given twice", a);
        used |= 1u << a;
    }
    for (int i = 0, k = 0; i < r; i++)
        odims[i] = (used & (1u << i)) ? 1 : dims[k++];
    *orank = r;
    return FV_OK;
}

fv_status fv__ox_slice_ranges(const fv__ox *ox, const Onnx__NodeProto *n, int rank,
                              const int64_t *dims, int64_t *begin, int64_t *end, int64_t *step) {
    for (int i = 0; i < rank; i++)
        begin[i] = 0, end[i] = dims[i], step[i] = 1;
    fv__ox_value *vs, *ve, *va, *vt;
    fv_status s;
    if ((s = fv__ox_in_const(ox, n, 1, 0, &vs)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 2, 0, &ve)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 3, 1, &va)) != FV_OK ||
        (s = fv__ox_in_const(ox, n, 4, 1, &vt)) != FV_OK)
        return s;
    size_t cnt = vs->count;
    if (!vs->is_int || !ve->is_int || ve->count != cnt || cnt > FV_ONNX_MAX_RANK ||
        (va && (!va->is_int || va->count != cnt)) || (vt && (!vt->is_int || vt->count != cnt)))
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT,
                                "starts, ends, axes and steps must be int lists of one length "
                                "(at most %d)",
                                FV_ONNX_MAX_RANK);
    unsigned used = 0;
    for (size_t k = 0; k < cnt; k++) {
        int a = (int)k;
        if (va && (s = fv__ox_axis(ox, n, va->i[k], rank, &a)) != FV_OK) return s;
        if (!va && (int)k >= rank)
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "%zu starts for rank %d", cnt, rank);
        if (used & (1u << a))
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "axis %d sliced twice", a);
        used |= 1u << a;
        int64_t st = vt ? vt->i[k] : 1, d = dims[a], b = vs->i[k], e = ve->i[k];
        if (st == 0 || st > ((int64_t)1 << 62) || st < -((int64_t)1 << 62))
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "step %lld", (long long)st);
        if (b < 0) b += d;
        if (e < 0) e += d;
        if (st > 0) {
            b = b < 0 ? 0 : b > d ? d : b;
            e = e < 0 ? 0 : e > d ? d : e;
        } else {
            b = b < 0 ? 0 : b > d - 1 ? d - 1 : b;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
        }
        begin[a] = b, end[a] = e, step[a] = st;
    }
    return FV_OK;
}
