/* A small protobuf writer that composes ONNX models in tests, field by
 * field (onnx.proto's numbers), so that tests can make models no exporter
 * would write: truncated, inconsistent, hostile. Test code only: the
 * importer itself parses with protobuf-c. Every function aborts the test
 * program on out-of-memory. */
#ifndef FV_ONNX_BUILD_H
#define FV_ONNX_BUILD_H

#include <stddef.h>
#include <stdint.h>

typedef struct ob_buf {
    uint8_t *d;
    size_t n, cap;
} ob_buf;

void ob_free(ob_buf *b);
void ob_varint(ob_buf *b, int field, uint64_t v);
void ob_bytes(ob_buf *b, int field, const void *data, size_t n);
void ob_str(ob_buf *b, int field, const char *s);
/* Appends n bytes that are already encoded fields. */
void ob_raw(ob_buf *b, const void *data, size_t n);
void ob_fixed32(ob_buf *b, int field, const void *four);
/* Appends sub as a length-delimited field and frees sub. */
void ob_msg(ob_buf *b, int field, ob_buf *sub);

/* TensorProto: raw data of dtype (1 float, 7 int64); raw may be NULL. */
void ob_tensor(ob_buf *t, const char *name, int dtype, int rank, const int64_t *dims,
               const void *raw, size_t raw_bytes);
/* ValueInfoProto of a float tensor; dims < 0 are written as dim_param "n". */
void ob_value_info(ob_buf *v, const char *name, int rank, const int64_t *dims);
/* NodeProto; attributes are added with ob_attr_* before ob_graph_node. */
void ob_node(ob_buf *nd, const char *op, const char *name, const char *const *in, int nin,
             const char *const *out, int nout);
void ob_attr_int(ob_buf *nd, const char *name, int64_t v);
void ob_attr_float(ob_buf *nd, const char *name, float v);
void ob_attr_ints(ob_buf *nd, const char *name, const int64_t *v, int n);
void ob_attr_str(ob_buf *nd, const char *name, const char *s);
void ob_attr_tensor(ob_buf *nd, const char *name, ob_buf *tensor);
/* GraphProto fields: node 1, initializer 5, input 11, output 12. */
enum { OB_NODE = 1, OB_INIT = 5, OB_INPUT = 11, OB_OUTPUT = 12 };
/* ModelProto: ir_version 8, opset of the default domain, the graph. */
void ob_model(ob_buf *m, int64_t opset, ob_buf *graph);

/* A valid model: x (1, 2, 6, 6) -> Conv 3x3 (3 outputs, pads 1, bias) ->
 * Relu -> Reshape to (1, 108) through a Shape/Gather/Unsqueeze/Concat chain
 * -> Gemm (4 outputs) -> y (1, 4). */
void ob_small_model(ob_buf *m);

#endif
