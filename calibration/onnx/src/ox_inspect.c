/* fv_onnx_inspect and fv_onnx_op_support: what a model holds and what the
 * importer does with an op, for tools and the conformance runner. */
#include <stdlib.h>
#include <string.h>
#include "ox.h"

fv_onnx_op_kind fv_onnx_op_support(const char *op_type) {
    if (!op_type) return FV_ONNX_OP_UNSUPPORTED;
    if (!strcmp(op_type, "Identity") || !strcmp(op_type, "Dropout")) return FV_ONNX_OP_REMOVED;
    if (fv__ox_layer_op(op_type)) return FV_ONNX_OP_LAYER;
    if (fv__ox_fold_op(op_type)) return FV_ONNX_OP_CONSTANT;
    return FV_ONNX_OP_UNSUPPORTED;
}

static const char *str(const char *s) {
    return s ? s : "";
}

fv_status fv_onnx_inspect(const char *path, int64_t *opset, fv_onnx_inspect_fn fn, void *user) {
    fv__ox_clear_error();
    if (opset) *opset = 0;
    if (!path || !fn) return fv__ox_fail(FV_ERR_BAD_PARAM, "fv_onnx_inspect: NULL argument");
    uint8_t *buf;
    size_t size;
    fv_status s = fv__ox_read_file(path, (size_t)4 << 30, &buf, &size);
    if (s != FV_OK) return s;
    if ((s = fv__ox_check_wire(buf, size)) != FV_OK) {
        free(buf);
        return s;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, buf);
    free(buf);
    if (!m || !m->graph) {
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        return fv__ox_fail(FV_ERR_FORMAT, "'%s' is not an ONNX model", path);
    }
    for (size_t i = 0; opset && i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain;
        if ((!d || !d[0] || !strcmp(d, "ai.onnx")) && m->opset_import[i]->has_version)
            *opset = m->opset_import[i]->version;
    }
    const Onnx__GraphProto *g = m->graph;
    for (size_t i = 0; i < g->n_input; i++) {
        const char *name = str(g->input[i]->name);
        int init = 0;
        for (size_t k = 0; k < g->n_initializer && !init; k++)
            init = !strcmp(str(g->initializer[k]->name), name);
        const Onnx__TypeProto *t = g->input[i]->type;
        const char *kind = !t                                                       ? ""
                           : t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE   ? "tensor"
                           : t->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ? "sequence"
                           : t->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE      ? "map"
                           : t->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? "optional"
                                                                                    : "other";
        if (!init) fn(FV_ONNX_ITEM_INPUT, name, kind, "", user);
    }
    for (size_t i = 0; i < g->n_output; i++)
        fn(FV_ONNX_ITEM_OUTPUT, str(g->output[i]->name), "", "", user);
    for (size_t i = 0; i < g->n_node; i++)
        fn(FV_ONNX_ITEM_NODE, str(g->node[i]->name), str(g->node[i]->op_type),
           str(g->node[i]->domain), user);
    for (size_t i = 0; i < g->n_initializer; i++)
        fn(FV_ONNX_ITEM_INITIALIZER, str(g->initializer[i]->name), "", "", user);
    onnx__model_proto__free_unpacked(m, NULL);
    return FV_OK;
}
