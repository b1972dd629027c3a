/* Helpers shared by the op handlers: attributes, inputs and outputs,
 * broadcasting, and the bridge between ONNX shapes and builder tensors. */
#include <stdio.h>
#include <string.h>
#include "ox.h"

const Onnx__AttributeProto *fv__ox_attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

int64_t fv__ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = fv__ox_attr(n, name);
    return a && a->has_i ? a->i : def;
}

float fv__ox_attr_float(const Onnx__NodeProto *n, const char *name, float def) {
    const Onnx__AttributeProto *a = fv__ox_attr(n, name);
    return a && a->has_f ? a->f : def;
}

const char *fv__ox_attr_str(const Onnx__NodeProto *n, const char *name, const char *def, char *buf,
                            size_t size) {
    const Onnx__AttributeProto *a = fv__ox_attr(n, name);
    if (!a || !a->has_s) return def;
    size_t len = a->s.len < size - 1 ? a->s.len : size - 1;
    memcpy(buf, a->s.data, len);
    buf[len] = '\0';
    return buf;
}

fv_status fv__ox_attr_ints(const fv__ox *ox, const Onnx__NodeProto *n, const char *name,
                           int64_t *out, int max, int *count, int64_t lo, int64_t hi) {
    *count = 0;
    const Onnx__AttributeProto *a = fv__ox_attr(n, name);
    if (!a || a->n_ints == 0) return FV_OK;
    if (a->n_ints > (size_t)max)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "attribute '%s' has %zu values (at most %d)",
                                name, a->n_ints, max);
    for (size_t i = 0; i < a->n_ints; i++) {
        if (a->ints[i] < lo || a->ints[i] > hi)
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT,
                                    "attribute '%s'[%zu] = %lld is outside %lld .. %lld", name, i,
                                    (long long)a->ints[i], (long long)lo, (long long)hi);
        out[i] = a->ints[i];
    }
    *count = (int)a->n_ints;
    return FV_OK;
}

fv__ox_value *fv__ox_in(const fv__ox *ox, const Onnx__NodeProto *n, int k) {
    if (k < 0 || (size_t)k >= n->n_input) return NULL;
    return fv__ox_find(ox, n->input[k]);
}

fv__ox_value *fv__ox_out(const fv__ox *ox, const Onnx__NodeProto *n, int k) {
    if (k < 0 || (size_t)k >= n->n_output) return NULL;
    return fv__ox_find(ox, n->output[k]);
}

fv_status fv__ox_in_runtime(const fv__ox *ox, const Onnx__NodeProto *n, int k, int lo, int hi,
                            fv__ox_value **out) {
    fv__ox_value *v = fv__ox_in(ox, n, k);
    *out = v;
    if (!v) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "input %d is missing", k);
    if (v->kind != FV__OX_RUNTIME || v->tensor < 0)
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "input %d '%.200s' is a constant; fovea runs this op on computed "
                                "tensors only",
                                k, v->name);
    if (v->rank < lo || v->rank > hi) {
        char b[160];
        return fv__ox_node_fail(ox, n, v->rank > 4 ? FV_ERR_NOT_SUPPORTED : FV_ERR_BAD_SHAPE,
                                "input %d '%.200s' has shape %s; this op takes rank %d to %d", k,
                                v->name, fv__ox_dims_str(v->rank, v->dims, b, sizeof b), lo, hi);
    }
    return FV_OK;
}

fv_status fv__ox_in_const(const fv__ox *ox, const Onnx__NodeProto *n, int k, int optional,
                          fv__ox_value **out) {
    fv__ox_value *v = fv__ox_in(ox, n, k);
    *out = v;
    if (!v) {
        if (optional) return FV_OK;
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "input %d is missing", k);
    }
    if (v->kind != FV__OX_CONST)
        return fv__ox_node_fail(
            ox, n, FV_ERR_NOT_SUPPORTED,
            "input %d '%.200s' must be a constant (an initializer or computable "
            "at load)",
            k, v->name);
    return FV_OK;
}

fv_status fv__ox_extra_outputs_unused(const fv__ox *ox, const Onnx__NodeProto *n, int from) {
    for (int k = from; (size_t)k < n->n_output; k++) {
        fv__ox_value *v = fv__ox_out(ox, n, k);
        if (v && v->consumers > 0)
            return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                    "output %d '%.200s' is used; fovea computes output 0 only", k,
                                    v->name);
    }
    return FV_OK;
}

const char *fv__ox_layer_name(fv__ox *ox, const Onnx__NodeProto *n, const char *suffix) {
    snprintf(ox->namebuf, sizeof ox->namebuf, "%.150s%s", fv__ox_node_name(n),
             suffix ? suffix : "");
    return ox->namebuf;
}

fv_status fv__ox_set_runtime(fv__ox *ox, const Onnx__NodeProto *n, int k, int tensor, int rank,
                             const int64_t *dims) {
    fv__ox_value *v = fv__ox_out(ox, n, k);
    if (!v) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "output %d is missing", k);
    if (rank > 4) {
        char b[160];
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "output shape %s: fovea runs tensors of rank 4 or less",
                                fv__ox_dims_str(rank, dims, b, sizeof b));
    }
    for (int i = 0; i < rank; i++)
        if (dims[i] < 1 || dims[i] > FV_NET_MAX_DIM) {
            char b[160];
            return fv__ox_node_fail(ox, n, dims[i] < 1 ? FV_ERR_NOT_SUPPORTED : FV_ERR_BAD_SHAPE,
                                    "output shape %s (fovea runs dims of 1 to %d)",
                                    fv__ox_dims_str(rank, dims, b, sizeof b), FV_NET_MAX_DIM);
        }
    int want[4], got[4];
    fv__ox_dims4(rank, dims, want);
    fv_status s = fv_net_builder_shape(ox->b, tensor, &got[0], &got[1], &got[2], &got[3]);
    if (s != FV_OK) return fv__ox_builder_fail(ox, n, s);
    if (memcmp(want, got, sizeof want) != 0)
        return fv__ox_node_fail(ox, n, FV_ERR_INTERNAL,
                                "shape inference gave (%d, %d, %d, %d) but the builder made (%d, "
                                "%d, %d, %d)",
                                want[0], want[1], want[2], want[3], got[0], got[1], got[2], got[3]);
    fv__ox_const_free(v);
    v->kind = FV__OX_RUNTIME;
    v->tensor = tensor;
    v->rank = rank;
    memset(v->dims, 0, sizeof v->dims);
    memcpy(v->dims, dims, (size_t)rank * sizeof *dims);
    return FV_OK;
}

fv_status fv__ox_set_runtime_rank(fv__ox *ox, const Onnx__NodeProto *n, int k, int tensor,
                                  int rank) {
    int d[4];
    fv_status s = fv_net_builder_shape(ox->b, tensor, &d[0], &d[1], &d[2], &d[3]);
    if (s != FV_OK) return fv__ox_builder_fail(ox, n, s);
    int64_t dims[4];
    for (int i = 0; i < 4; i++) {
        dims[i] = d[i];
        if (i >= rank && d[i] != 1)
            return fv__ox_node_fail(ox, n, FV_ERR_INTERNAL,
                                    "the builder made (%d, %d, %d, %d), not a rank-%d shape", d[0],
                                    d[1], d[2], d[3], rank);
    }
    return fv__ox_set_runtime(ox, n, k, tensor, rank, dims);
}

fv_status fv__ox_reshape4(fv__ox *ox, const Onnx__NodeProto *n, int tensor, const int d[4],
                          const char *suffix, int *out) {
    int got[4];
    fv_status s = fv_net_builder_shape(ox->b, tensor, &got[0], &got[1], &got[2], &got[3]);
    if (s != FV_OK) return fv__ox_builder_fail(ox, n, s);
    if (memcmp(got, d, sizeof got) == 0) {
        *out = tensor;
        return FV_OK;
    }
    s = fv_net_add_reshape(ox->b, fv__ox_layer_name(ox, n, suffix), tensor, d[0], d[1], d[2], d[3],
                           out);
    if (s != FV_OK) return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    return FV_OK;
}

fv_status fv__ox_axis(const fv__ox *ox, const Onnx__NodeProto *n, int64_t axis, int rank,
                      int *out) {
    if (axis < -rank || axis >= rank)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "axis %lld is outside a rank-%d tensor",
                                (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return FV_OK;
}

fv_status fv__ox_broadcast(const fv__ox *ox, const Onnx__NodeProto *n, const fv__ox_value *a,
                           const fv__ox_value *b, int *rank, int64_t *dims) {
    int r = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char x[160], y[160];
            return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE,
                                    "shapes %s and %s do not broadcast (axis %d: %lld vs %lld)",
                                    fv__ox_dims_str(a->rank, a->dims, x, sizeof x),
                                    fv__ox_dims_str(b->rank, b->dims, y, sizeof y), i,
                                    (long long)da, (long long)db);
        }
        dims[i] = da == 1 ? db : da;
    }
    *rank = r;
    return FV_OK;
}

fv_status fv__ox_axis_to_c(fv__ox *ox, const Onnx__NodeProto *n, int tensor, int rank,
                           const int64_t *dims, int axis, const char *suffix, int *out) {
    if (axis == 1 && rank >= 2) {
        *out = tensor;
        return FV_OK;
    }
    int64_t outer = fv__ox_count(axis, dims, FV_NET_MAX_DIM);
    int64_t inner = fv__ox_count(rank - axis - 1, dims + axis + 1, FV_NET_MAX_DIM);
    if (outer < 0 || inner < 0)
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "axis %d: the dims around it exceed %d elements", axis,
                                FV_NET_MAX_DIM);
    int d[4] = {(int)outer, (int)dims[axis], (int)inner, 1};
    return fv__ox_reshape4(ox, n, tensor, d, suffix, out);
}
