/* The graph: a value for every tensor name, the consumers of each, and
 * the nodes in topological order (Kahn's algorithm when the file's order
 * is not one already; a cycle or a dangling input is FV_ERR_FORMAT). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ox.h"

static fv_status add_input(fv__ox *ox, const Onnx__ValueInfoProto *vi) {
    if (!vi || !vi->name || !vi->name[0])
        return fv__ox_fail(FV_ERR_FORMAT, "model: a graph input without a name");
    if (fv__ox_find(ox, vi->name)) return FV_OK; /* IR < 4: initializers listed as inputs */
    int idx;
    fv_status s = fv__ox_value_add(ox, vi->name, &idx);
    if (s != FV_OK) return s;
    fv__ox_value *v = &ox->values[idx];
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return fv__ox_fail(FV_ERR_NOT_SUPPORTED, "input '%.200s': not a tensor", vi->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    const Onnx__TensorShapeProto *sh = tt->shape;
    int rank = sh ? (int)sh->n_dim : -1;
    if (rank < 0 || rank > FV_ONNX_MAX_RANK)
        return fv__ox_fail(FV_ERR_NOT_SUPPORTED, "input '%.200s': %s", vi->name,
                           rank < 0 ? "no shape" : "rank above 8");
    v->rank = rank;
    for (int i = 0; i < rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
        if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value > 0) {
            v->dims[i] = d->dim_value;
        } else if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            return fv__ox_fail(d->dim_value < 0 ? FV_ERR_FORMAT : FV_ERR_NOT_SUPPORTED,
                               "input '%.200s': dimension %d is %lld (fovea runs tensors of at "
                               "least one element)",
                               vi->name, i, (long long)d->dim_value);
        } else if (i == 0) {
            v->dims[i] = ox->opt && ox->opt->batch > 0 ? ox->opt->batch : 1;
        } else {
            const char *p =
                d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                    ? d->dim_param
                    : "?";
            return fv__ox_fail(FV_ERR_NOT_SUPPORTED,
                               "input '%.200s': dimension %d is not fixed ('%.60s'); fovea needs "
                               "fixed shapes except the batch",
                               vi->name, i, p ? p : "?");
        }
    }
    /* bound to constant data by the caller? */
    const fv_onnx_options *o = ox->opt;
    for (int k = 0; o && k < o->constant_count; k++) {
        if (!o->constants[k].name || strcmp(o->constants[k].name, vi->name) != 0) continue;
        const fv_onnx_constant *c = &o->constants[k];
        int64_t dims[FV_ONNX_MAX_RANK];
        memcpy(dims, v->dims, sizeof dims);
        int is_int = c->int_data != NULL;
        s = fv__ox_const_alloc(v, rank, dims, is_int, FV__OX_MAX_ELEMS);
        if (s != FV_OK) return s;
        if (c->count != v->count || (c->data && c->int_data) ||
            (v->count && !c->data && !c->int_data))
            return fv__ox_fail(FV_ERR_BAD_PARAM,
                               "constant for input '%.200s': %zu values (give data or int_data), "
                               "the shape needs %zu",
                               vi->name, c->count, v->count);
        if (v->count && is_int)
            memcpy(v->i, c->int_data, v->count * sizeof(int64_t));
        else if (v->count)
            memcpy(v->f, c->data, v->count * sizeof(float));
        return FV_OK;
    }
    if (!tt->has_elem_type || tt->elem_type != 1)
        return fv__ox_fail(FV_ERR_NOT_SUPPORTED,
                           "input '%.200s': element type %d (fovea nets take float32 inputs)",
                           vi->name, tt->has_elem_type ? tt->elem_type : 0);
    v->kind = FV__OX_RUNTIME;
    v->graph_input = 1;
    return FV_OK;
}

static fv_status sort_nodes(fv__ox *ox) {
    const Onnx__GraphProto *g = ox->graph;
    int nn = (int)g->n_node;
    ox->order = malloc(sizeof(int) * (size_t)(nn ? nn : 1));
    if (!ox->order) return fv__ox_fail(FV_ERR_OUT_OF_MEMORY, "model: no memory for the nodes");
    /* already sorted? (the ONNX spec asks for it; most files are) */
    int sorted = 1;
    for (int i = 0; i < nn && sorted; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            fv__ox_value *v = fv__ox_find(ox, n->input[k]);
            if (v && v->producer >= i) sorted = 0;
        }
    }
    if (sorted) {
        for (int i = 0; i < nn; i++)
            ox->order[i] = i;
        return FV_OK;
    }
    /* Kahn: indegree = inputs made by nodes; consumer lists per node. */
    int *indeg = calloc((size_t)nn, sizeof(int));
    size_t edges = 0;
    for (int i = 0; i < nn; i++)
        edges += g->node[i]->n_input;
    int *start = calloc((size_t)nn + 1, sizeof(int)), *adj = malloc(sizeof(int) * (edges + 1));
    int *fill = calloc((size_t)nn + 1, sizeof(int));
    fv_status s = FV_OK;
    if (!indeg || !start || !adj || !fill || edges > (size_t)INT32_MAX) {
        s = fv__ox_fail(FV_ERR_OUT_OF_MEMORY, "model: no memory to sort %d nodes", nn);
        goto done;
    }
    for (int i = 0; i < nn; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++) {
            fv__ox_value *v = fv__ox_find(ox, g->node[i]->input[k]);
            if (v && v->producer >= 0) start[v->producer + 1]++, indeg[i]++;
        }
    for (int i = 0; i < nn; i++)
        start[i + 1] += start[i];
    for (int i = 0; i < nn; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++) {
            fv__ox_value *v = fv__ox_find(ox, g->node[i]->input[k]);
            if (v && v->producer >= 0) adj[start[v->producer] + fill[v->producer]++] = i;
        }
    int head = 0, tail = 0;
    for (int i = 0; i < nn; i++)
        if (indeg[i] == 0) ox->order[tail++] = i;
    while (head < tail) {
        int u = ox->order[head++];
        for (int e = start[u]; e < start[u + 1]; e++)
            if (--indeg[adj[e]] == 0) ox->order[tail++] = adj[e];
    }
    if (tail < nn) {
        int bad = 0;
        while (indeg[bad] == 0)
            bad++;
        s = fv__ox_fail(FV_ERR_FORMAT, "model: the graph has a cycle through node '%.200s' (%.60s)",
                        fv__ox_node_name(g->node[bad]), g->node[bad]->op_type);
    }
done:
    free(indeg);
    free(start);
    free(adj);
    free(fill);
    return s;
}

fv_status fv__ox_graph_build(fv__ox *ox) {
    const Onnx__GraphProto *g = ox->graph;
    if (g->n_node > FV__OX_MAX_NODES)
        return fv__ox_fail(FV_ERR_FORMAT, "model: %zu nodes (at most %d)", g->n_node,
                           FV__OX_MAX_NODES);
    size_t expected = g->n_input + g->n_initializer;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (!n->op_type || !n->op_type[0])
            return fv__ox_fail(FV_ERR_FORMAT, "model: node %zu ('%.200s') has no op_type", i,
                               n->name ? n->name : "");
        expected += n->n_output;
    }
    if (expected > (size_t)INT32_MAX / 4)
        return fv__ox_fail(FV_ERR_FORMAT, "model: %zu tensors", expected);
    fv_status s = fv__ox_values_init(ox, (int)expected);
    if (s != FV_OK) return s;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        int idx;
        if ((s = fv__ox_value_add(ox, t->name, &idx)) != FV_OK) return s;
        char what[256];
        snprintf(what, sizeof what, "initializer '%.200s'", t->name);
        if ((s = fv__ox_tensor_load(ox, t, what, &ox->values[idx])) != FV_OK) return s;
    }
    if (g->n_sparse_initializer)
        return fv__ox_fail(FV_ERR_NOT_SUPPORTED, "model: sparse initializers");
    for (size_t i = 0; i < g->n_input; i++)
        if ((s = add_input(ox, g->input[i])) != FV_OK) return s;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_output; k++) {
            if (!n->output[k] || !n->output[k][0]) continue;
            int idx;
            if ((s = fv__ox_value_add(ox, n->output[k], &idx)) != FV_OK)
                return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "output '%.200s' is defined twice",
                                        n->output[k]);
            ox->values[idx].producer = (int)i;
        }
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            if (!n->input[k] || !n->input[k][0]) continue;
            fv__ox_value *v = fv__ox_find(ox, n->input[k]);
            if (!v)
                return fv__ox_node_fail(ox, n, FV_ERR_FORMAT,
                                        "input %zu '%.200s' is not defined by any node, input or "
                                        "initializer",
                                        k, n->input[k]);
            v->consumers++;
        }
    }
    for (size_t i = 0; i < g->n_output; i++) {
        const char *name = g->output[i] ? g->output[i]->name : NULL;
        fv__ox_value *v = fv__ox_find(ox, name);
        if (!v)
            return fv__ox_fail(FV_ERR_FORMAT, "model: graph output '%.200s' is not defined",
                               name ? name : "");
        v->consumers++;
    }
    ox->mark = calloc(g->n_node ? g->n_node : 1, 1);
    if (!ox->mark) return fv__ox_fail(FV_ERR_OUT_OF_MEMORY, "model: no memory");
    return sort_nodes(ox);
}

static int perm_is(const Onnx__NodeProto *n, int64_t a, int64_t b, int64_t c, int64_t d) {
    const Onnx__AttributeProto *p = fv__ox_attr(n, "perm");
    return p && p->n_ints == 4 && p->ints[0] == a && p->ints[1] == b && p->ints[2] == c &&
           p->ints[3] == d;
}

static int is_graph_output(const fv__ox *ox, const char *name) {
    for (size_t i = 0; i < ox->graph->n_output; i++)
        if (ox->graph->output[i]->name && !strcmp(ox->graph->output[i]->name, name)) return 1;
    return 0;
}

/* Layout patterns: NHWC graph inputs/outputs, Flatten into an fc. */
static void layout_patterns(fv__ox *ox) {
    const Onnx__GraphProto *g = ox->graph;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (n->n_input < 1 || n->n_output < 1) continue;
        fv__ox_value *x = fv__ox_find(ox, n->input[0]), *y = fv__ox_find(ox, n->output[0]);
        if (!x || !y) continue;
        if (!strcmp(n->op_type, "Transpose") && x->graph_input && x->rank == 4 &&
            x->consumers == 1 && perm_is(n, 0, 3, 1, 2)) {
            ox->mark[i] = FV__OX_MARK_NHWC_IN;
            x->nhwc = 1;
        } else if (!strcmp(n->op_type, "Transpose") && y->consumers == 1 &&
                   is_graph_output(ox, y->name) && perm_is(n, 0, 2, 3, 1)) {
            ox->mark[i] = FV__OX_MARK_NHWC_OUT;
        } else if ((!strcmp(n->op_type, "Gemm") || !strcmp(n->op_type, "MatMul")) &&
                   x->producer >= 0 && x->consumers == 1) {
            const char *p = g->node[x->producer]->op_type;
            if (!strcmp(p, "Flatten") || !strcmp(p, "Reshape"))
                ox->mark[x->producer] = FV__OX_MARK_FLAT;
        }
    }
}

void fv__ox_graph_patterns(fv__ox *ox) {
    const Onnx__GraphProto *g = ox->graph;
    layout_patterns(ox);
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (strcmp(n->op_type, "Mul") != 0 || n->n_input != 2) continue;
        for (int side = 0; side < 2; side++) {
            const char *x = n->input[side], *y = n->input[1 - side];
            fv__ox_value *vy = fv__ox_find(ox, y);
            if (!vy || vy->producer < 0 || vy->consumers != 1) continue;
            const Onnx__NodeProto *p = g->node[vy->producer];
            if (p->n_input < 1 || !p->input[0] || strcmp(p->input[0], x) != 0) continue;
            int m = FV__OX_MARK_NONE;
            if (strcmp(p->op_type, "Sigmoid") == 0) {
                m = FV__OX_MARK_SILU;
            } else if (strcmp(p->op_type, "HardSigmoid") == 0) {
                float a = fv__ox_attr_float(p, "alpha", 0.2f),
                      b = fv__ox_attr_float(p, "beta", 0.5f);
                if (fabsf(a - 1.0f / 6.0f) < 1e-6f && fabsf(b - 0.5f) < 1e-6f)
                    m = FV__OX_MARK_HSWISH;
            }
            if (m == FV__OX_MARK_NONE) continue;
            ox->mark[vy->producer] = FV__OX_MARK_DEFER;
            ox->mark[i] = (unsigned char)m;
            break;
        }
    }
}
