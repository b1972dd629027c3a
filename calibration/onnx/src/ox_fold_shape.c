/* Constant folding of the shape ops: Shape and Size (of any tensor: shapes
 * are known at load), Gather, Reshape, Flatten, Squeeze, Unsqueeze,
 * Concat, Slice, Transpose and Expand on constants. */
#include <string.h>
#include "ox.h"

static fv_status out_const(fv__ox *ox, const Onnx__NodeProto *n, int rank, const int64_t *dims,
                           int is_int, fv__ox_value **out) {
    fv__ox_value *o = fv__ox_out(ox, n, 0);
    *out = o;
    if (!o) return FV_OK;
    fv_status s = fv__ox_const_alloc(o, rank, dims, is_int, FV__OX_MAX_FOLD_ELEMS);
    if (s != FV_OK) return fv__ox_node_fail(ox, n, s, "%s", fv_onnx_last_error());
    return FV_OK;
}

static void copy_elem(fv__ox_value *o, size_t k, const fv__ox_value *a, size_t j) {
    if (o->is_int)
        o->i[k] = a->is_int ? a->i[j] : (int64_t)a->f[j];
    else
        o->f[k] = (float)fv__ox_get(a, j);
}

/* Row-major strides of (rank, dims). */
static void strides(int rank, const int64_t *dims, size_t *st) {
    size_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= (size_t)dims[i];
    }
}

static fv_status shape(fv__ox *ox, const Onnx__NodeProto *n, fv__ox_value *a) {
    int64_t r = a->rank, b = fv__ox_attr_int(n, "start", 0), e = fv__ox_attr_int(n, "end", r);
    if (b < 0) b += r;
    if (e < 0) e += r;
    b = b < 0 ? 0 : b > r ? r : b;
    e = e < b ? b : e > r ? r : e;
    int64_t len = e - b;
    fv__ox_value *o;
    fv_status s = out_const(ox, n, 1, &len, 1, &o);
    if (s != FV_OK || !o) return s;
    for (int64_t k = 0; k < len; k++)
        o->i[k] = a->dims[b + k];
    return FV_OK;
}

static fv_status gather(fv__ox *ox, const Onnx__NodeProto *n, fv__ox_value *a) {
    fv__ox_value *ix = fv__ox_in(ox, n, 1), *o;
    if (!ix || !ix->is_int) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "indices must be int");
    int axis;
    fv_status s = fv__ox_axis(ox, n, fv__ox_attr_int(n, "axis", 0), a->rank, &axis);
    if (s != FV_OK) return s;
    int r = a->rank - 1 + ix->rank;
    if (r > FV_ONNX_MAX_RANK)
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "result of rank %d", r);
    int64_t dims[FV_ONNX_MAX_RANK];
    int k = 0;
    for (int i = 0; i < axis; i++)
        dims[k++] = a->dims[i];
    for (int i = 0; i < ix->rank; i++)
        dims[k++] = ix->dims[i];
    for (int i = axis + 1; i < a->rank; i++)
        dims[k++] = a->dims[i];
    if ((s = out_const(ox, n, r, dims, a->is_int, &o)) != FV_OK || !o) return s;
    size_t outer = 1, inner = 1, d = (size_t)a->dims[axis];
    for (int i = 0; i < axis; i++)
        outer *= (size_t)a->dims[i];
    for (int i = axis + 1; i < a->rank; i++)
        inner *= (size_t)a->dims[i];
    size_t m = 0;
    for (size_t p = 0; p < outer; p++)
        for (size_t q = 0; q < ix->count; q++) {
            int64_t j = ix->i[q];
            if (j < 0) j += (int64_t)d;
            if (j < 0 || (size_t)j >= d)
                return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "index %lld outside 0 .. %zu",
                                        (long long)ix->i[q], d);
            for (size_t t = 0; t < inner; t++)
                copy_elem(o, m++, a, (p * d + (size_t)j) * inner + t);
        }
    return FV_OK;
}

static fv_status concat(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *a0 = fv__ox_in(ox, n, 0), *o;
    if (!a0) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "no inputs");
    int axis, is_int = 1;
    fv_status s = fv__ox_axis(ox, n, fv__ox_attr_int(n, "axis", 0), a0->rank, &axis);
    if (s != FV_OK) return s;
    int64_t dims[FV_ONNX_MAX_RANK];
    memcpy(dims, a0->dims, sizeof dims);
    dims[axis] = 0;
    for (size_t k = 0; k < n->n_input; k++) {
        fv__ox_value *a = fv__ox_in(ox, n, (int)k);
        if (!a) continue;
        int ok = a->rank == a0->rank;
        for (int i = 0; ok && i < a->rank; i++)
            if (i != axis && a->dims[i] != a0->dims[i]) ok = 0;
        if (!ok) return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE, "input %zu's shape differs", k);
        dims[axis] += a->dims[axis];
        is_int &= a->is_int;
    }
    if ((s = out_const(ox, n, a0->rank, dims, is_int, &o)) != FV_OK || !o) return s;
    size_t outer = 1, inner = 1, m = 0;
    for (int i = 0; i < axis; i++)
        outer *= (size_t)dims[i];
    for (int i = axis + 1; i < a0->rank; i++)
        inner *= (size_t)dims[i];
    for (size_t p = 0; p < outer; p++)
        for (size_t k = 0; k < n->n_input; k++) {
            fv__ox_value *a = fv__ox_in(ox, n, (int)k);
            if (!a) continue;
            size_t len = (size_t)a->dims[axis] * inner;
            for (size_t t = 0; t < len; t++)
                copy_elem(o, m++, a, p * len + t);
        }
    return FV_OK;
}

static fv_status slice(fv__ox *ox, const Onnx__NodeProto *n, fv__ox_value *a) {
    int64_t b[FV_ONNX_MAX_RANK], e[FV_ONNX_MAX_RANK], st[FV_ONNX_MAX_RANK], dims[FV_ONNX_MAX_RANK];
    fv_status s = fv__ox_slice_ranges(ox, n, a->rank, a->dims, b, e, st);
    if (s != FV_OK) return s;
    for (int i = 0; i < a->rank; i++) {
        int64_t len =
            st[i] > 0 ? (e[i] - b[i] + st[i] - 1) / st[i] : (b[i] - e[i] - st[i] - 1) / -st[i];
        dims[i] = len > 0 ? len : 0;
    }
    fv__ox_value *o;
    if ((s = out_const(ox, n, a->rank, dims, a->is_int, &o)) != FV_OK || !o) return s;
    size_t ist[FV_ONNX_MAX_RANK];
    strides(a->rank, a->dims, ist);
    int64_t ctr[FV_ONNX_MAX_RANK] = {0};
    for (size_t k = 0; k < o->count; k++) {
        size_t j = 0;
        for (int i = 0; i < a->rank; i++)
            j += (size_t)(b[i] + ctr[i] * st[i]) * ist[i];
        copy_elem(o, k, a, j);
        for (int i = a->rank - 1; i >= 0; i--) {
            if (++ctr[i] < dims[i]) break;
            ctr[i] = 0;
        }
    }
    return FV_OK;
}

static fv_status transpose(fv__ox *ox, const Onnx__NodeProto *n, fv__ox_value *a) {
    int64_t perm[FV_ONNX_MAX_RANK], dims[FV_ONNX_MAX_RANK];
    int np;
    fv_status s = fv__ox_attr_ints(ox, n, "perm", perm, FV_ONNX_MAX_RANK, &np, 0, a->rank - 1);
    if (s != FV_OK) return s;
    if (np == 0)
        for (int i = 0; i < a->rank; i++)
            perm[i] = a->rank - 1 - i;
    else if (np != a->rank)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "perm has %d entries for rank %d", np,
                                a->rank);
    unsigned seen = 0;
    for (int i = 0; i < a->rank; i++) {
        if (seen & (1u << perm[i]))
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "perm repeats axis %lld",
                                    (long long)perm[i]);
        seen |= 1u << perm[i];
        dims[i] = a->dims[perm[i]];
    }
    fv__ox_value *o;
    if ((s = out_const(ox, n, a->rank, dims, a->is_int, &o)) != FV_OK || !o) return s;
    size_t ist[FV_ONNX_MAX_RANK];
    strides(a->rank, a->dims, ist);
    int64_t ctr[FV_ONNX_MAX_RANK] = {0};
    for (size_t k = 0; k < o->count; k++) {
        size_t j = 0;
        for (int i = 0; i < a->rank; i++)
            j += (size_t)ctr[i] * ist[perm[i]];
        copy_elem(o, k, a, j);
        for (int i = a->rank - 1; i >= 0; i--) {
            if (++ctr[i] < dims[i]) break;
            ctr[i] = 0;
        }
    }
    return FV_OK;
}

static fv_status expand(fv__ox *ox, const Onnx__NodeProto *n, fv__ox_value *a) {
    fv__ox_value *sh = fv__ox_in(ox, n, 1), *o;
    if (!sh || !sh->is_int || sh->rank != 1 || sh->count > FV_ONNX_MAX_RANK)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "shape must be a 1-D int64 list");
    fv__ox_value t = {.rank = (int)sh->count};
    memcpy(t.dims, sh->i, sh->count * sizeof(int64_t));
    int r;
    int64_t dims[FV_ONNX_MAX_RANK];
    fv_status s = fv__ox_broadcast(ox, n, a, &t, &r, dims);
    if (s != FV_OK || (s = out_const(ox, n, r, dims, a->is_int, &o)) != FV_OK || !o) return s;
    size_t st[FV_ONNX_MAX_RANK], sz = 1;
    for (int i = r - 1; i >= 0; i--) {
        int ia = i - (r - a->rank);
        int64_t d = ia >= 0 ? a->dims[ia] : 1;
        st[i] = d == 1 ? 0 : sz;
        sz *= (size_t)d;
    }
    int64_t ctr[FV_ONNX_MAX_RANK] = {0};
    for (size_t k = 0; k < o->count; k++) {
        size_t j = 0;
        for (int i = 0; i < r; i++)
            j += (size_t)ctr[i] * st[i];
        copy_elem(o, k, a, j);
        for (int i = r - 1; i >= 0; i--) {
            if (++ctr[i] < dims[i]) break;
            ctr[i] = 0;
        }
    }
    return FV_OK;
}

fv_status fv__ox_fold_shape_op(fv__ox *ox, const Onnx__NodeProto *n) {
    const char *op = n->op_type;
    fv__ox_value *a = fv__ox_in(ox, n, 0), *o;
    if (!a) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "input 0 is missing");
    if (!strcmp(op, "Shape")) return shape(ox, n, a);
    if (!strcmp(op, "Size")) {
        int64_t c = fv__ox_count(a->rank, a->dims, (uint64_t)1 << 62), none = 0;
        fv_status s = out_const(ox, n, 0, &none, 1, &o);
        if (s == FV_OK && o) o->i[0] = c;
        return s;
    }
    if (!strcmp(op, "Gather")) return gather(ox, n, a);
    if (!strcmp(op, "Concat")) return concat(ox, n);
    if (!strcmp(op, "Slice")) return slice(ox, n, a);
    if (!strcmp(op, "Transpose")) return transpose(ox, n, a);
    if (!strcmp(op, "Expand")) return expand(ox, n, a);
    /* Reshape, Flatten, Squeeze, Unsqueeze: same data, new dims */
    int r;
    int64_t dims[FV_ONNX_MAX_RANK];
    fv_status s = fv__ox_reshape_dims(ox, n, a->rank, a->dims, &r, dims);
    if (s != FV_OK || (s = out_const(ox, n, r, dims, a->is_int, &o)) != FV_OK || !o) return s;
    if (o->count != a->count) return fv__ox_node_fail(ox, n, FV_ERR_INTERNAL, "reshape count");
    if (a->count)
        memcpy(a->is_int ? (void *)o->i : (void *)o->f, a->is_int ? (void *)a->i : (void *)a->f,
               a->count * (a->is_int ? sizeof(int64_t) : sizeof(float)));
    return FV_OK;
}
