/* fv_onnx_load: bytes -> protobuf-c ModelProto -> value table and node
 * order -> one handler per node (fold, alias or builder layers) -> the
 * builder's inputs and outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ox.h"

static int is_default_domain(const char *d) {
    return !d || !d[0] || strcmp(d, "ai.onnx") == 0;
}

static fv_status find_opset(const Onnx__ModelProto *m, int64_t *out) {
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (o && is_default_domain(o->domain)) {
            *out = o->has_version ? o->version : 0;
            if (*out < FV__OX_MIN_OPSET || *out > FV__OX_MAX_OPSET)
                return fv__ox_fail(FV_ERR_NOT_SUPPORTED,
                                   "model: opset %lld of the default domain; fovea reads opsets "
                                   "%d to %d",
                                   (long long)*out, FV__OX_MIN_OPSET, FV__OX_MAX_OPSET);
            return FV_OK;
        }
    }
    return fv__ox_fail(FV_ERR_FORMAT, "model: no opset_import for the default ONNX domain");
}

/* Output 0 = input 0 (Identity, Dropout, Clip without bounds...). */
static fv_status alias(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *in = fv__ox_in(ox, n, 0), *out = fv__ox_out(ox, n, 0);
    if (!in) return fv__ox_node_fail(ox, n, FV_ERR_FORMAT, "input 0 is missing");
    if (!out) return FV_OK;
    fv_status s = fv__ox_value_copy(out, in);
    if (s != FV_OK) return fv__ox_node_fail(ox, n, s, "%s", fv_onnx_last_error());
    ox->rep->removed++;
    fv__ox_log(ox, "removed %s '%s'", n->op_type, fv__ox_node_name(n));
    return FV_OK;
}

static fv_status dropout(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *ratio = fv__ox_in(ox, n, 1), *tm = fv__ox_in(ox, n, 2);
    int zero =
        ratio && ratio->kind == FV__OX_CONST && ratio->count == 1 && fv__ox_get(ratio, 0) == 0;
    if (tm && (tm->kind != FV__OX_CONST || (tm->count > 0 && fv__ox_get(tm, 0) != 0)) && !zero)
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "training_mode must be false (or the ratio 0)");
    fv_status s = fv__ox_extra_outputs_unused(ox, n, 1);
    return s != FV_OK ? s : alias(ox, n);
}

static fv_status run_node(fv__ox *ox, int idx) {
    const Onnx__NodeProto *n = ox->graph->node[idx];
    const char *op = n->op_type;
    ox->cur = idx;
    if (!is_default_domain(n->domain))
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "domain '%.60s' is not supported",
                                n->domain);
    if (ox->mark[idx] == FV__OX_MARK_DEFER) {
        fv__ox_value *x = fv__ox_in(ox, n, 0), *y = fv__ox_out(ox, n, 0);
        if (x && y && x->kind == FV__OX_RUNTIME) {
            fv__ox_value_copy(y, x);
            y->kind = FV__OX_DEFERRED;
            return FV_OK;
        }
        ox->mark[idx] = FV__OX_MARK_NONE;
    }
    if (!strcmp(op, "Identity")) return alias(ox, n);
    if (!strcmp(op, "Dropout")) return dropout(ox, n);
    int all_const = 1;
    for (size_t k = 0; k < n->n_input; k++) {
        fv__ox_value *v = fv__ox_in(ox, n, (int)k);
        if (v && v->kind != FV__OX_CONST) all_const = 0;
    }
    fv__ox_op_fn fold = fv__ox_fold_op(op);
    if (fold && (all_const || !strcmp(op, "Shape") || !strcmp(op, "Size"))) {
        fv_status s = fold(ox, n);
        if (s == FV_OK) {
            ox->rep->folded++;
            fv__ox_log(ox, "folded %s '%s'", op, fv__ox_node_name(n));
        }
        return s;
    }
    fv__ox_op_fn layer = fv__ox_layer_op(op);
    if (layer) return layer(ox, n);
    if (fold)
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "fovea computes this op on constants only (at load), and an input "
                                "is a computed tensor");
    return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "op not supported");
}

static void io_fill(fv_onnx_io *io, const fv__ox_value *v) {
    snprintf(io->name, sizeof io->name, "%s", v->name);
    io->rank = v->rank;
    memcpy(io->dims, v->dims, sizeof io->dims);
    io->tensor = v->tensor;
    io->nhwc = v->nhwc;
}

static fv_status add_inputs(fv__ox *ox) {
    for (size_t i = 0; i < ox->graph->n_input; i++) {
        fv__ox_value *v = fv__ox_find(ox, ox->graph->input[i]->name);
        if (!v || !v->graph_input) continue;
        if (v->consumers == 0) {
            fv__ox_log(ox, "input '%s' is not used: no net input", v->name);
            continue;
        }
        char b[160];
        if (v->rank < 1 || v->rank > 4)
            return fv__ox_fail(FV_ERR_NOT_SUPPORTED,
                               "input '%.200s' has shape %s: fovea nets take "
                               "inputs of rank 1 to 4",
                               v->name, fv__ox_dims_str(v->rank, v->dims, b, sizeof b));
        for (int k = 0; k < v->rank; k++)
            if (v->dims[k] > FV_NET_MAX_DIM)
                return fv__ox_fail(FV_ERR_BAD_SHAPE,
                                   "input '%.200s' has shape %s (at most %d a "
                                   "dimension)",
                                   v->name, fv__ox_dims_str(v->rank, v->dims, b, sizeof b),
                                   FV_NET_MAX_DIM);
        if (ox->rep->input_count >= FV_ONNX_MAX_IO)
            return fv__ox_fail(FV_ERR_NOT_SUPPORTED, "model: more than %d inputs", FV_ONNX_MAX_IO);
        int d[4];
        fv__ox_dims4(v->rank, v->dims, d);
        if (v->nhwc) { /* ONNX (N, H, W, C) is fovea's (N, C, H, W) stored NHWC */
            int t = d[1];
            d[1] = d[3], d[3] = d[2], d[2] = t;
        }
        fv_status s = fv_net_add_input(ox->b, v->name, d[0], d[1], d[2], d[3], &v->tensor);
        if (s != FV_OK) return fv__ox_fail(s, "input '%.200s': %s", v->name, fv_last_error());
        io_fill(&ox->rep->inputs[ox->rep->input_count++], v);
    }
    return FV_OK;
}

static fv_status check_declared(const fv__ox *ox, const Onnx__ValueInfoProto *vi,
                                const fv__ox_value *v) {
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return FV_OK;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type && tt->elem_type != 1 && tt->elem_type != 0)
        return fv__ox_fail(FV_ERR_NOT_SUPPORTED,
                           "output '%.200s': element type %d (fovea nets "
                           "give float32)",
                           v->name, tt->elem_type);
    if (!tt->shape || (int)tt->shape->n_dim != v->rank)
        return FV_OK; /* no or other rank: trust ours */
    for (int k = 0; k < v->rank; k++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
        if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value > 0 && d->dim_value != v->dims[k] && k > 0) {
            char b[160];
            return fv__ox_fail(FV_ERR_BAD_SHAPE,
                               "output '%.200s': the model declares dim %d = %lld, inferred %s",
                               v->name, k, (long long)d->dim_value,
                               fv__ox_dims_str(v->rank, v->dims, b, sizeof b));
        }
    }
    return FV_OK;
}

static fv_status mark_outputs(fv__ox *ox) {
    for (size_t i = 0; i < ox->graph->n_output; i++) {
        const Onnx__ValueInfoProto *vi = ox->graph->output[i];
        fv__ox_value *v = fv__ox_find(ox, vi->name);
        if (v->kind == FV__OX_CONST)
            return fv__ox_fail(FV_ERR_NOT_SUPPORTED,
                               "output '%.200s' is a constant (computed at load): a net output "
                               "must depend on an input",
                               v->name);
        if (v->kind != FV__OX_RUNTIME || v->tensor < 0)
            return fv__ox_fail(FV_ERR_INTERNAL, "output '%.200s' was not computed", v->name);
        fv_status s = check_declared(ox, vi, v);
        if (s != FV_OK) return s;
        if (ox->rep->output_count >= FV_ONNX_MAX_IO)
            return fv__ox_fail(FV_ERR_NOT_SUPPORTED, "model: more than %d outputs", FV_ONNX_MAX_IO);
        /* an output that is a net input or another output (Identity, a no-op
         * Reshape...) is a copy: the builder marks a tensor once, never an input */
        int t = v->tensor, copy = v->graph_input;
        for (int k = 0; k < ox->rep->output_count; k++)
            copy |= ox->rep->outputs[k].tensor == t;
        for (int k = 0; k < ox->rep->input_count; k++)
            copy |= ox->rep->inputs[k].tensor == t;
        if (copy) {
            char nm[96];
            snprintf(nm, sizeof nm, "%.80s:copy", v->name);
            s = fv_net_add_activation(ox->b, nm, t, FV_ACT_IDENTITY, 0, 0, &v->tensor);
            if (s != FV_OK) return fv__ox_fail(s, "output '%.200s': %s", v->name, fv_last_error());
            ox->rep->layers++;
        }
        s = fv_net_mark_output(ox->b, v->tensor, v->name);
        if (s != FV_OK) return fv__ox_fail(s, "output '%.200s': %s", v->name, fv_last_error());
        io_fill(&ox->rep->outputs[ox->rep->output_count++], v);
    }
    return FV_OK;
}

static fv_status import(fv__ox *ox) {
    const Onnx__ModelProto *m = ox->model;
    ox->rep->ir_version = m->has_ir_version ? m->ir_version : 0;
    snprintf(ox->rep->producer, sizeof ox->rep->producer, "%s%s%s",
             m->producer_name ? m->producer_name : "", m->producer_version ? " " : "",
             m->producer_version ? m->producer_version : "");
    if (!m->graph) return fv__ox_fail(FV_ERR_FORMAT, "model: no graph (not an ONNX model?)");
    ox->graph = m->graph;
    fv_status s = find_opset(m, &ox->opset);
    if (s != FV_OK) return s;
    ox->rep->opset = ox->opset;
    ox->rep->nodes = (int)ox->graph->n_node;
    ox->rep->initializers = (int)ox->graph->n_initializer;
    if ((s = fv__ox_graph_build(ox)) != FV_OK) return s;
    fv__ox_graph_patterns(ox);
    if ((s = fv_net_builder_create(&ox->b)) != FV_OK)
        return fv__ox_fail(s, "builder: %s", fv_last_error());
    if ((s = add_inputs(ox)) != FV_OK) return s;
    for (size_t i = 0; i < ox->graph->n_node; i++) {
        int idx = ox->order[i];
        if ((s = run_node(ox, idx)) != FV_OK) return s;
        const Onnx__NodeProto *n = ox->graph->node[idx];
        for (size_t k = 0; k < n->n_output; k++) {
            fv__ox_value *v = fv__ox_out(ox, n, (int)k);
            if (v && v->consumers > 0 && v->kind == FV__OX_UNSET)
                return fv__ox_node_fail(ox, n, FV_ERR_INTERNAL, "output %zu was not computed", k);
        }
    }
    return mark_outputs(ox);
}

fv_status fv_onnx_load_memory(const void *data, size_t size, const char *base_dir,
                              const fv_onnx_options *opt, fv_net_builder **out,
                              fv_onnx_report *report) {
    fv__ox_clear_error();
    if (out) *out = NULL;
    if (report) memset(report, 0, sizeof *report);
    if (!out || (!data && size))
        return fv__ox_fail(FV_ERR_BAD_PARAM, "fv_onnx_load: out and data are required");
    if (opt) {
        for (size_t i = 0; i < sizeof opt->reserved / sizeof opt->reserved[0]; i++)
            if (opt->reserved[i])
                return fv__ox_fail(FV_ERR_BAD_PARAM, "fv_onnx_options.reserved must be zero");
        if (opt->constant_count < 0 || (opt->constant_count > 0 && !opt->constants))
            return fv__ox_fail(FV_ERR_BAD_PARAM, "fv_onnx_options: constants NULL or count < 0");
    }
    if (size == 0) return fv__ox_fail(FV_ERR_FORMAT, "model: empty");
    fv_status s = fv__ox_check_wire(data, size);
    if (s != FV_OK) return s;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
    if (!m)
        return fv__ox_fail(FV_ERR_FORMAT,
                           "model: not an ONNX model (protobuf-c cannot unpack its %zu bytes)",
                           size);
    fv_onnx_report local;
    memset(&local, 0, sizeof local);
    fv__ox ox = {.model = m, .opt = opt, .base_dir = base_dir, .rep = &local};
    s = import(&ox);
    fv__ox_values_free(&ox);
    free(ox.order);
    free(ox.mark);
    onnx__model_proto__free_unpacked(m, NULL);
    if (s != FV_OK) {
        fv_net_builder_destroy(ox.b);
        return s;
    }
    *out = ox.b;
    if (report) *report = local;
    return FV_OK;
}

fv_status fv_onnx_load(const char *path, const fv_onnx_options *opt, fv_net_builder **out,
                       fv_onnx_report *report) {
    fv__ox_clear_error();
    if (out) *out = NULL;
    if (report) memset(report, 0, sizeof *report);
    if (!path || !out)
        return fv__ox_fail(FV_ERR_BAD_PARAM, "fv_onnx_load: path and out are required");
    size_t max = opt && opt->max_file_bytes ? opt->max_file_bytes : ((size_t)4 << 30);
    uint8_t *data;
    size_t size;
    fv_status s = fv__ox_read_file(path, max, &data, &size);
    if (s != FV_OK) return s;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
    s = fv_onnx_load_memory(data, size, dir, opt, out, report);
    free(data);
    if (s != FV_OK && strncmp(fv_onnx_last_error(), path, strlen(path)) != 0) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", fv_onnx_last_error());
        fv__ox_fail(s, "%.100s: %s", path, msg);
    }
    return s;
}

void fv_onnx_nhwc_to_nchw(const float *nhwc, int n, int c, int h, int w, float *nchw) {
    for (int b = 0; b < n; b++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int k = 0; k < c; k++)
                    nchw[(((size_t)b * c + k) * h + y) * w + x] =
                        nhwc[(((size_t)b * h + y) * w + x) * c + k];
}

void fv_onnx_nchw_to_nhwc(const float *nchw, int n, int c, int h, int w, float *nhwc) {
    for (int b = 0; b < n; b++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int k = 0; k < c; k++)
                    nhwc[(((size_t)b * h + y) * w + x) * c + k] =
                        nchw[(((size_t)b * c + k) * h + y) * w + x];
}
