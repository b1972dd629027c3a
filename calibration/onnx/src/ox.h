/* The ONNX importer's internals: the value table, node helpers and the op
 * handlers. Not installed. "ox" is the importer's short prefix. */
#ifndef FOVEA_ONNX_OX_H
#define FOVEA_ONNX_OX_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/onnx.h"
#include "onnx.pb-c.h"

/* Caps that keep a hostile file from asking for unbounded memory or time. */
#define FV__OX_MAX_NODES      200000
#define FV__OX_MAX_FOLD_ELEMS (1u << 24)   /* a tensor computed at load */
#define FV__OX_MAX_ELEMS      (1ull << 31) /* any constant (initializers: also their bytes) */
#define FV__OX_MAX_WIRE_DEPTH 48           /* nested protobuf messages */
#define FV__OX_MIN_OPSET      11
#define FV__OX_MAX_OPSET      21

typedef enum fv__ox_kind {
    FV__OX_UNSET = 0,   /* produced by a node not yet run */
    FV__OX_CONST = 1,   /* known at load: data in f or i */
    FV__OX_RUNTIME = 2, /* a builder tensor */
    FV__OX_DEFERRED = 3 /* a Sigmoid/HardSigmoid kept for a SiLU/HardSwish Mul */
} fv__ox_kind;

typedef struct fv__ox_value {
    const char *name; /* borrowed from the model */
    fv__ox_kind kind;
    int rank;
    int64_t dims[FV_ONNX_MAX_RANK];
    /* CONST: exactly one of f (float classes) and i (integer classes and
     * bool) is set, count elements (may be 0 elements with f/i NULL). */
    int is_int;
    float *f;
    int64_t *i;
    size_t count;
    int tensor;      /* RUNTIME: builder id */
    int producer;    /* node index, -1 for inputs and initializers */
    int consumers;   /* node inputs reading it, plus 1 if a graph output */
    int graph_input; /* 1 for a graph input that became a net input */
    /* RUNTIME layouts the ONNX shape does not say: flat, the (N, K) flatten
     * of the 4-D tensor `tensor` (a Flatten whose only reader is an fc);
     * nhwc, ONNX (N, H, W, C) stored as the 4-D (N, C, H, W) tensor (a graph
     * input or output whose Transpose to or from NCHW is a layout no-op). */
    int flat, nhwc;
} fv__ox_value;

typedef struct fv__ox {
    const Onnx__ModelProto *model;
    const Onnx__GraphProto *graph;
    const fv_onnx_options *opt;
    const char *base_dir; /* for external data; NULL: refused */
    int64_t opset;
    fv_net_builder *b;
    fv_onnx_report *rep;
    fv__ox_value *values;
    int nvalues, cap;
    int *slots; /* open-addressing hash of names -> value index + 1 */
    size_t nslots;
    int *order;          /* nodes in topological order */
    unsigned char *mark; /* per node: FV__OX_MARK_* */
    int cur;             /* the node being run (index into graph->node) */
    char namebuf[192];   /* layer names made by fv__ox_layer_name */
} fv__ox;

enum {
    FV__OX_MARK_NONE = 0,
    FV__OX_MARK_DEFER = 1,   /* Sigmoid/HardSigmoid kept for the Mul below */
    FV__OX_MARK_SILU = 2,    /* Mul: x * Sigmoid(x) */
    FV__OX_MARK_HSWISH = 3,  /* Mul: x * HardSigmoid(x) */
    FV__OX_MARK_FLAT = 4,    /* Flatten/Reshape read by one Gemm/MatMul only */
    FV__OX_MARK_NHWC_IN = 5, /* Transpose (0, 3, 1, 2) of a graph input */
    FV__OX_MARK_NHWC_OUT = 6 /* Transpose (0, 2, 3, 1) into a graph output */
};

/* ---- errors and log (ox_error.c) ---- */
/* libfovea's non-blocking open of regular files (sdk/src/core/file.c): 0
 * with *out, an errno value, or -1 with *kind naming what path is. */
#include <stdio.h>
int fv__fopen_regular(const char *path, FILE **out, const char **kind);

fv_status fv__ox_fail(fv_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "node 'NAME' (OP, opset N): " + message. */
fv_status fv__ox_node_fail(const fv__ox *ox, const Onnx__NodeProto *n, fv_status s, const char *fmt,
                           ...) __attribute__((format(printf, 4, 5)));
/* A builder call failed with s: the node, and fv_last_error()'s message. */
fv_status fv__ox_builder_fail(const fv__ox *ox, const Onnx__NodeProto *n, fv_status s);
void fv__ox_log(const fv__ox *ox, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fv__ox_clear_error(void);
/* A node's name for messages: its name, else its first named output's. */
const char *fv__ox_node_name(const Onnx__NodeProto *n);
/* "(d0, d1, ...)" into buf. */
const char *fv__ox_dims_str(int rank, const int64_t *dims, char *buf, size_t n);

/* ---- reading (ox_read.c) ---- */
fv_status fv__ox_read_file(const char *path, size_t max, uint8_t **data, size_t *size);
/* Checks the protobuf wire structure (tags, lengths, nesting depth) before
 * protobuf-c unpacks it: protobuf-c recurses without a depth limit. */
fv_status fv__ox_check_wire(const uint8_t *buf, size_t len);

/* ---- values (ox_value.c) ---- */
fv_status fv__ox_values_init(fv__ox *ox, int expected);
void fv__ox_values_free(fv__ox *ox);
/* Adds a value; FV_ERR_FORMAT when the name is taken. *out: its index. */
fv_status fv__ox_value_add(fv__ox *ox, const char *name, int *out);
/* NULL for "" (an absent optional input) and for unknown names. */
fv__ox_value *fv__ox_find(const fv__ox *ox, const char *name);
/* Elements of dims (each >= 0) with overflow check; -1 when a dim is
 * negative or the product exceeds cap. */
int64_t fv__ox_count(int rank, const int64_t *dims, uint64_t cap);
/* Makes v a constant of the given shape (data zeroed, is_int as given);
 * FV_ERR_BAD_SHAPE beyond cap elements, FV_ERR_OUT_OF_MEMORY. */
fv_status fv__ox_const_alloc(fv__ox_value *v, int rank, const int64_t *dims, int is_int,
                             uint64_t cap);
void fv__ox_const_free(fv__ox_value *v);
/* dst = a copy of src (kind, shape, data); dst's old data is freed. */
fv_status fv__ox_value_copy(fv__ox_value *dst, const fv__ox_value *src);
/* The value as a double at element k (CONST only). */
double fv__ox_get(const fv__ox_value *v, size_t k);
/* The 4-D fovea shape of an ONNX shape of rank <= 4 (trailing 1s). */
void fv__ox_dims4(int rank, const int64_t *dims, int d[4]);

/* ---- tensors in the file (ox_tensor.c) ---- */
/* Makes v a constant from a TensorProto (raw_data, typed fields or an
 * external file); what: for messages ("initializer 'w'"). */
fv_status fv__ox_tensor_load(const fv__ox *ox, const Onnx__TensorProto *t, const char *what,
                             fv__ox_value *v);

/* ---- graph (ox_graph.c) ---- */
/* Values for inputs, initializers and node outputs; consumers; the
 * topological order (cycles and dangling inputs are FV_ERR_FORMAT). */
fv_status fv__ox_graph_build(fv__ox *ox);
/* Marks Sigmoid+Mul (SiLU) and HardSigmoid+Mul (HardSwish) pairs. */
void fv__ox_graph_patterns(fv__ox *ox);

/* ---- node helpers (ox_node.c) ---- */
const Onnx__AttributeProto *fv__ox_attr(const Onnx__NodeProto *n, const char *name);
int64_t fv__ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def);
float fv__ox_attr_float(const Onnx__NodeProto *n, const char *name, float def);
/* The string attribute, or def; NUL-terminated copy into buf. */
const char *fv__ox_attr_str(const Onnx__NodeProto *n, const char *name, const char *def, char *buf,
                            size_t size);
/* An ints attribute: *count values (0 when absent) into out (max entries);
 * FV_ERR_FORMAT naming the node when longer than max or a value outside
 * [lo, hi]. */
fv_status fv__ox_attr_ints(const fv__ox *ox, const Onnx__NodeProto *n, const char *name,
                           int64_t *out, int max, int *count, int64_t lo, int64_t hi);
/* Input k (NULL when absent or ""). */
fv__ox_value *fv__ox_in(const fv__ox *ox, const Onnx__NodeProto *n, int k);
/* Input k, required to be a computed tensor of rank lo..hi. */
fv_status fv__ox_in_runtime(const fv__ox *ox, const Onnx__NodeProto *n, int k, int lo, int hi,
                            fv__ox_value **out);
/* Input k, required to be a constant (NULL allowed when optional and absent). */
fv_status fv__ox_in_const(const fv__ox *ox, const Onnx__NodeProto *n, int k, int optional,
                          fv__ox_value **out);
/* Output k's value (NULL when absent or ""). */
fv__ox_value *fv__ox_out(const fv__ox *ox, const Onnx__NodeProto *n, int k);
/* FV_ERR_NOT_SUPPORTED when output k >= 1 exists and is read. */
fv_status fv__ox_extra_outputs_unused(const fv__ox *ox, const Onnx__NodeProto *n, int from);
/* A layer name for the node: its name plus suffix (into ox->namebuf). */
const char *fv__ox_layer_name(fv__ox *ox, const Onnx__NodeProto *n, const char *suffix);
/* Output k becomes the runtime tensor id with the ONNX shape (rank,
 * dims); checks that the builder's shape is the same 4-D shape. */
fv_status fv__ox_set_runtime(fv__ox *ox, const Onnx__NodeProto *n, int k, int tensor, int rank,
                             const int64_t *dims);
/* As fv__ox_set_runtime, the ONNX shape being the builder's 4-D shape cut
 * to rank (the dims cut off must be 1). */
fv_status fv__ox_set_runtime_rank(fv__ox *ox, const Onnx__NodeProto *n, int k, int tensor,
                                  int rank);
/* tensor reshaped to the 4-D shape d (no layer when it already has it). */
fv_status fv__ox_reshape4(fv__ox *ox, const Onnx__NodeProto *n, int tensor, const int d[4],
                          const char *suffix, int *out);
/* tensor (ONNX shape rank, dims) as a 4-D tensor whose C is `axis`: itself
 * when axis is 1, else reshaped to (outer, dims[axis], inner, 1). Ops over
 * C (concat, slice, softmax) then work along any axis. */
fv_status fv__ox_axis_to_c(fv__ox *ox, const Onnx__NodeProto *n, int tensor, int rank,
                           const int64_t *dims, int axis, const char *suffix, int *out);
/* Normalises axis (negative: + rank) into 0..rank-1; FV_ERR_FORMAT else. */
fv_status fv__ox_axis(const fv__ox *ox, const Onnx__NodeProto *n, int64_t axis, int rank, int *out);
/* Numpy broadcast of two shapes; FV_ERR_BAD_SHAPE naming them. */
fv_status fv__ox_broadcast(const fv__ox *ox, const Onnx__NodeProto *n, const fv__ox_value *a,
                           const fv__ox_value *b, int *rank, int64_t *dims);

/* ---- op handlers: each returns FV_OK or a status with the message set ---- */
typedef fv_status (*fv__ox_op_fn)(fv__ox *ox, const Onnx__NodeProto *n);
/* Layer ops (ox_conv.c, ox_pool.c, ox_eltwise.c, ox_shape.c, ox_route.c): the
 * handler for op_type, NULL when not a layer op. */
fv__ox_op_fn fv__ox_layer_op(const char *op_type);
/* Folding (ox_fold.c, ox_fold_shape.c): the handler computing op_type on
 * constant inputs, NULL when it cannot. */
fv__ox_op_fn fv__ox_fold_op(const char *op_type);

fv_status fv__ox_conv(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_conv_transpose(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_batchnorm(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_gemm(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_matmul(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_pool(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_global_pool(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_reduce(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_activation(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_clip(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_binary(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_reshape_like(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_transpose(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_concat(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_softmax(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_slice(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_pad(fv__ox *ox, const Onnx__NodeProto *n);
fv_status fv__ox_resize(fv__ox *ox, const Onnx__NodeProto *n);

/* Shape arithmetic shared by folding and layers (ox_shape_calc.c). */
/* New dims of Reshape/Flatten/Squeeze/Unsqueeze for input dims (rank,
 * dims) into (*orank, odims). */
fv_status fv__ox_reshape_dims(const fv__ox *ox, const Onnx__NodeProto *n, int rank,
                              const int64_t *dims, int *orank, int64_t *odims);
/* Slice ranges per axis: begin[a], end[a], step[a] for every axis of the
 * input (untouched axes: 0, dims[a], 1). */
fv_status fv__ox_slice_ranges(const fv__ox *ox, const Onnx__NodeProto *n, int rank,
                              const int64_t *dims, int64_t *begin, int64_t *end, int64_t *step);

#endif
