/* Constant folding of elementwise ops, Cast, Constant, ConstantOfShape and
 * Range: what exporters compute around shapes, and small constant
 * subgraphs on weights. Integers stay int64, floats float; every result is
 * capped at FV__OX_MAX_FOLD_ELEMS elements. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ox.h"
#include "fovea/fp16.h"

/* Output k as a new constant of the given shape. NULL *out when unused. */
static fv_status out_const(fv__ox *ox, const Onnx__NodeProto *n, int k, int rank,
                           const int64_t *dims, int is_int, fv__ox_value **out) {
    fv__ox_value *o = fv__ox_out(ox, n, k);
    *out = o;
    if (!o) return FV_OK;
    fv_status s = fv__ox_const_alloc(o, rank, dims, is_int, FV__OX_MAX_FOLD_ELEMS);
    if (s != FV_OK) return fv__ox_node_fail(ox, n, s, "%s", fv_onnx_last_error());
    return FV_OK;
}

/* Strides of v broadcast to (r, od): 0 along broadcast axes. */
static void bstrides(const fv__ox_value *v, int r, size_t *st) {
    size_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        int iv = i - (r - v->rank);
        int64_t d = iv >= 0 ? v->dims[iv] : 1;
        st[i] = d == 1 ? 0 : s;
        s *= (size_t)d;
    }
}

typedef struct bcast_iter {
    int r, nin;
    int64_t dims[FV_ONNX_MAX_RANK], ctr[FV_ONNX_MAX_RANK];
    size_t st[3][FV_ONNX_MAX_RANK], off[3];
} bcast_iter;

static void iter_init(bcast_iter *it, int r, const int64_t *dims, fv__ox_value **in, int nin) {
    memset(it, 0, sizeof *it);
    it->r = r;
    it->nin = nin;
    memcpy(it->dims, dims, sizeof(int64_t) * (size_t)r);
    for (int k = 0; k < nin; k++)
        bstrides(in[k], r, it->st[k]);
}

static void iter_next(bcast_iter *it) {
    for (int i = it->r - 1; i >= 0; i--) {
        for (int k = 0; k < it->nin; k++)
            it->off[k] += it->st[k][i];
        if (++it->ctr[i] < it->dims[i]) return;
        for (int k = 0; k < it->nin; k++)
            it->off[k] -= it->st[k][i] * (size_t)it->dims[i];
        it->ctr[i] = 0;
    }
}

static int is_compare(const char *op) {
    return !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater") ||
           !strcmp(op, "LessOrEqual") || !strcmp(op, "GreaterOrEqual") || !strcmp(op, "And") ||
           !strcmp(op, "Or") || !strcmp(op, "Xor");
}

static fv_status int_op(const fv__ox *ox, const Onnx__NodeProto *n, const char *op, int64_t a,
                        int64_t b, int64_t *r) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    if (!strcmp(op, "Add"))
        *r = (int64_t)(ua + ub);
    else if (!strcmp(op, "Sub"))
        *r = (int64_t)(ua - ub);
    else if (!strcmp(op, "Mul"))
        *r = (int64_t)(ua * ub);
    else if (!strcmp(op, "Div") || !strcmp(op, "Mod")) {
        if (b == 0 || (a == INT64_MIN && b == -1))
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "integer %s of %lld by %lld", op,
                                    (long long)a, (long long)b);
        if (!strcmp(op, "Div"))
            *r = a / b;
        else {
            int64_t m = a % b; /* Mod with fmod=0: the sign of the divisor */
            *r = (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
        }
    } else if (!strcmp(op, "Min"))
        *r = a < b ? a : b;
    else if (!strcmp(op, "Max"))
        *r = a > b ? a : b;
    else if (!strcmp(op, "Pow"))
        *r = (int64_t)pow((double)a, (double)b);
    else if (!strcmp(op, "Equal"))
        *r = a == b;
    else if (!strcmp(op, "Less"))
        *r = a < b;
    else if (!strcmp(op, "Greater"))
        *r = a > b;
    else if (!strcmp(op, "LessOrEqual"))
        *r = a <= b;
    else if (!strcmp(op, "GreaterOrEqual"))
        *r = a >= b;
    else if (!strcmp(op, "And"))
        *r = a && b;
    else if (!strcmp(op, "Or"))
        *r = a || b;
    else if (!strcmp(op, "Xor"))
        *r = (!a) != (!b);
    else
        return fv__ox_node_fail(ox, n, FV_ERR_INTERNAL, "no integer fold");
    return FV_OK;
}

static double float_op(const char *op, double a, double b) {
    if (!strcmp(op, "Add")) return a + b;
    if (!strcmp(op, "Sub")) return a - b;
    if (!strcmp(op, "Mul")) return a * b;
    if (!strcmp(op, "Div")) return a / b;
    if (!strcmp(op, "Mod")) return fmod(a, b);
    if (!strcmp(op, "Min")) return a < b ? a : b;
    if (!strcmp(op, "Max")) return a > b ? a : b;
    if (!strcmp(op, "Pow")) return pow(a, b);
    if (!strcmp(op, "Equal")) return a == b;
    if (!strcmp(op, "Less")) return a < b;
    if (!strcmp(op, "Greater")) return a > b;
    if (!strcmp(op, "LessOrEqual")) return a <= b;
    if (!strcmp(op, "GreaterOrEqual")) return a >= b;
    if (!strcmp(op, "And")) return a != 0 && b != 0;
    if (!strcmp(op, "Or")) return a != 0 || b != 0;
    return (a != 0) != (b != 0); /* Xor */
}

static fv_status fold_binary(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *a = fv__ox_in(ox, n, 0), *b = fv__ox_in(ox, n, 1), *o;
    if (!a || !b) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "needs two inputs");
    int r;
    int64_t dims[FV_ONNX_MAX_RANK];
    fv_status s = fv__ox_broadcast(ox, n, a, b, &r, dims);
    if (s != FV_OK) return s;
    const char *op = n->op_type;
    int ints = a->is_int && b->is_int, out_int = ints || is_compare(op);
    if ((s = out_const(ox, n, 0, r, dims, out_int, &o)) != FV_OK || !o) return s;
    fv__ox_value *in[2] = {a, b};
    bcast_iter it;
    iter_init(&it, r, dims, in, 2);
    for (size_t k = 0; k < o->count; k++, iter_next(&it)) {
        if (ints) {
            int64_t v = 0;
            if ((s = int_op(ox, n, op, a->i[it.off[0]], b->i[it.off[1]], &v)) != FV_OK) return s;
            o->i[k] = v;
        } else {
            double v = float_op(op, fv__ox_get(a, it.off[0]), fv__ox_get(b, it.off[1]));
            if (out_int)
                o->i[k] = (int64_t)v;
            else
                o->f[k] = (float)v;
        }
    }
    return FV_OK;
}

static fv_status fold_where(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *c = fv__ox_in(ox, n, 0), *x = fv__ox_in(ox, n, 1), *y = fv__ox_in(ox, n, 2), *o;
    if (!c || !x || !y) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "needs three inputs");
    int r1, r;
    int64_t d1[FV_ONNX_MAX_RANK], dims[FV_ONNX_MAX_RANK];
    fv_status s = fv__ox_broadcast(ox, n, c, x, &r1, d1);
    if (s != FV_OK) return s;
    fv__ox_value tmp = {.rank = r1};
    memcpy(tmp.dims, d1, sizeof d1);
    if ((s = fv__ox_broadcast(ox, n, &tmp, y, &r, dims)) != FV_OK) return s;
    int ints = x->is_int && y->is_int;
    if ((s = out_const(ox, n, 0, r, dims, ints, &o)) != FV_OK || !o) return s;
    fv__ox_value *in[3] = {c, x, y};
    bcast_iter it;
    iter_init(&it, r, dims, in, 3);
    for (size_t k = 0; k < o->count; k++, iter_next(&it)) {
        int pick = fv__ox_get(c, it.off[0]) != 0;
        if (ints)
            o->i[k] = pick ? x->i[it.off[1]] : y->i[it.off[2]];
        else
            o->f[k] = (float)(pick ? fv__ox_get(x, it.off[1]) : fv__ox_get(y, it.off[2]));
    }
    return FV_OK;
}

static fv_status fold_unary(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *a = fv__ox_in(ox, n, 0), *o;
    if (!a) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "input 0 is missing");
    const char *op = n->op_type;
    int keep_int = a->is_int && (!strcmp(op, "Neg") || !strcmp(op, "Abs") || !strcmp(op, "Not") ||
                                 !strcmp(op, "Relu") || !strcmp(op, "Sign"));
    fv_status s = out_const(ox, n, 0, a->rank, a->dims, keep_int, &o);
    if (s != FV_OK || !o) return s;
    for (size_t k = 0; k < o->count; k++) {
        if (keep_int) {
            int64_t x = a->i[k];
            if (!strcmp(op, "Neg"))
                o->i[k] = (int64_t)(0 - (uint64_t)x);
            else if (!strcmp(op, "Abs"))
                o->i[k] = x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
            else if (!strcmp(op, "Not"))
                o->i[k] = !x;
            else if (!strcmp(op, "Relu"))
                o->i[k] = x > 0 ? x : 0;
            else
                o->i[k] = (x > 0) - (x < 0);
            continue;
        }
        double x = fv__ox_get(a, k), y;
        if (!strcmp(op, "Neg"))
            y = -x;
        else if (!strcmp(op, "Abs"))
            y = fabs(x);
        else if (!strcmp(op, "Floor"))
            y = floor(x);
        else if (!strcmp(op, "Ceil"))
            y = ceil(x);
        else if (!strcmp(op, "Round"))
            y = nearbyint(x);
        else if (!strcmp(op, "Sqrt"))
            y = sqrt(x);
        else if (!strcmp(op, "Reciprocal"))
            y = 1.0 / x;
        else if (!strcmp(op, "Exp"))
            y = exp(x);
        else if (!strcmp(op, "Log"))
            y = log(x);
        else if (!strcmp(op, "Relu"))
            y = x > 0 ? x : 0;
        else if (!strcmp(op, "Sigmoid"))
            y = 1.0 / (1.0 + exp(-x));
        else if (!strcmp(op, "Tanh"))
            y = tanh(x);
        else if (!strcmp(op, "Not"))
            y = x == 0;
        else
            y = (x > 0) - (x < 0); /* Sign */
        o->f[k] = (float)y;
    }
    return FV_OK;
}

static int64_t to_int(double x) {
    if (!(x == x)) return 0;
    if (x >= 9.2e18) return INT64_MAX;
    if (x <= -9.2e18) return INT64_MIN;
    return (int64_t)x;
}

static fv_status fold_cast(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *a = fv__ox_in(ox, n, 0), *o;
    if (!a) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "input 0 is missing");
    int64_t to;
    if (!strcmp(n->op_type, "CastLike")) {
        fv__ox_value *t = fv__ox_in(ox, n, 1);
        if (!t) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "input 1 is missing");
        to = t->is_int ? 7 : 1;
    } else {
        to = fv__ox_attr_int(n, "to", 0);
    }
    int is_float = to == 1 || to == 10 || to == 11 || to == 16;
    int is_int = (to >= 2 && to <= 7) || to == 9 || to == 12 || to == 13;
    if (!is_float && !is_int)
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "cast to type %lld", (long long)to);
    fv_status s = out_const(ox, n, 0, a->rank, a->dims, is_int, &o);
    if (s != FV_OK || !o) return s;
    for (size_t k = 0; k < o->count; k++) {
        if (is_float) {
            float f = (float)fv__ox_get(a, k);
            o->f[k] = to == 10 ? fv_f16_to_f32(fv_f32_to_f16(f)) : f;
            continue;
        }
        int64_t v = a->is_int ? a->i[k] : to_int(a->f[k]);
        switch (to) {
        case 2:
            v = (uint8_t)v;
            break;
        case 3:
            v = (int8_t)v;
            break;
        case 4:
            v = (uint16_t)v;
            break;
        case 5:
            v = (int16_t)v;
            break;
        case 6:
            v = (int32_t)v;
            break;
        case 9:
            v = a->is_int ? v != 0 : a->f[k] != 0;
            break;
        case 12:
            v = (uint32_t)v;
            break;
        }
        o->i[k] = v;
    }
    return FV_OK;
}

static fv_status fold_constant(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *o = fv__ox_out(ox, n, 0);
    if (!o) return FV_OK;
    const Onnx__AttributeProto *a;
    fv_status s;
    if ((a = fv__ox_attr(n, "value")) && a->t) {
        char what[256];
        snprintf(what, sizeof what, "node '%.150s' (Constant) value", fv__ox_node_name(n));
        return fv__ox_tensor_load(ox, a->t, what, o);
    }
    int64_t one = 1;
    if ((a = fv__ox_attr(n, "value_float")) && a->has_f) {
        if ((s = fv__ox_const_alloc(o, 0, &one, 0, 1)) != FV_OK) return s;
        o->f[0] = a->f;
    } else if ((a = fv__ox_attr(n, "value_int")) && a->has_i) {
        if ((s = fv__ox_const_alloc(o, 0, &one, 1, 1)) != FV_OK) return s;
        o->i[0] = a->i;
    } else if ((a = fv__ox_attr(n, "value_floats"))) {
        int64_t d = (int64_t)a->n_floats;
        if ((s = fv__ox_const_alloc(o, 1, &d, 0, FV__OX_MAX_ELEMS)) != FV_OK) return s;
        if (a->n_floats) memcpy(o->f, a->floats, a->n_floats * sizeof(float));
    } else if ((a = fv__ox_attr(n, "value_ints"))) {
        int64_t d = (int64_t)a->n_ints;
        if ((s = fv__ox_const_alloc(o, 1, &d, 1, FV__OX_MAX_ELEMS)) != FV_OK) return s;
        if (a->n_ints) memcpy(o->i, a->ints, a->n_ints * sizeof(int64_t));
    } else {
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "only value, value_float(s) and value_int(s) constants");
    }
    return FV_OK;
}

static fv_status fold_constant_of_shape(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *sh = fv__ox_in(ox, n, 0), *o, val = {.name = "value"};
    if (!sh || !sh->is_int || sh->rank != 1 || sh->count > FV_ONNX_MAX_RANK)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "input must be a 1-D int64 shape");
    const Onnx__AttributeProto *a = fv__ox_attr(n, "value");
    fv_status s;
    if (a && a->t) {
        if ((s = fv__ox_tensor_load(ox, a->t, "ConstantOfShape value", &val)) != FV_OK) return s;
        if (val.count != 1) {
            fv__ox_const_free(&val);
            return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "value must hold one element");
        }
    }
    s = out_const(ox, n, 0, (int)sh->count, sh->i, val.is_int, &o);
    for (size_t k = 0; s == FV_OK && o && k < o->count; k++) {
        if (val.is_int)
            o->i[k] = val.i[0];
        else
            o->f[k] = val.f ? val.f[0] : 0.0f;
    }
    fv__ox_const_free(&val);
    return s;
}

static fv_status fold_range(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *a = fv__ox_in(ox, n, 0), *b = fv__ox_in(ox, n, 1), *d = fv__ox_in(ox, n, 2), *o;
    if (!a || !b || !d || a->count != 1 || b->count != 1 || d->count != 1)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "start, limit and delta must be scalars");
    double st = fv__ox_get(a, 0), li = fv__ox_get(b, 0), de = fv__ox_get(d, 0);
    double cnt = de != 0 ? ceil((li - st) / de) : -1;
    if (!(cnt >= 0 || cnt < 0) || de == 0 || cnt > (double)FV__OX_MAX_FOLD_ELEMS)
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "range %g to %g by %g", st, li, de);
    int64_t len = cnt > 0 ? (int64_t)cnt : 0;
    int ints = a->is_int && b->is_int && d->is_int;
    fv_status s = out_const(ox, n, 0, 1, &len, ints, &o);
    for (int64_t k = 0; s == FV_OK && o && k < len; k++) {
        if (ints)
            o->i[k] = (int64_t)((uint64_t)a->i[0] + (uint64_t)k * (uint64_t)d->i[0]);
        else
            o->f[k] = (float)(st + (double)k * de);
    }
    return s;
}

fv_status fv__ox_fold_shape_op(fv__ox *ox, const Onnx__NodeProto *n);

fv__ox_op_fn fv__ox_fold_op(const char *op) {
    static const char *binary[] = {"Add",
                                   "Sub",
                                   "Mul",
                                   "Div",
                                   "Mod",
                                   "Min",
                                   "Max",
                                   "Pow",
                                   "Equal",
                                   "Less",
                                   "Greater",
                                   "LessOrEqual",
                                   "GreaterOrEqual",
                                   "And",
                                   "Or",
                                   "Xor"};
    static const char *unary[] = {"Neg", "Abs", "Floor", "Ceil",    "Round", "Sqrt", "Reciprocal",
                                  "Exp", "Log", "Relu",  "Sigmoid", "Tanh",  "Not",  "Sign"};
    static const char *shape[] = {"Shape",   "Size",      "Gather",    "Reshape",
                                  "Flatten", "Squeeze",   "Unsqueeze", "Concat",
                                  "Slice",   "Transpose", "Expand"};
    for (size_t i = 0; i < sizeof binary / sizeof *binary; i++)
        if (!strcmp(op, binary[i])) return fold_binary;
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
        if (!strcmp(op, unary[i])) return fold_unary;
    for (size_t i = 0; i < sizeof shape / sizeof *shape; i++)
        if (!strcmp(op, shape[i])) return fv__ox_fold_shape_op;
    if (!strcmp(op, "Where")) return fold_where;
    if (!strcmp(op, "Cast") || !strcmp(op, "CastLike")) return fold_cast;
    if (!strcmp(op, "Constant")) return fold_constant;
    if (!strcmp(op, "ConstantOfShape")) return fold_constant_of_shape;
    if (!strcmp(op, "Range")) return fold_range;
    return NULL;
}
