/* fovea ONNX importer (libfovea_onnx): reads an ONNX model (.onnx, protobuf)
 * and describes it as an fv_net builder (fovea/net.h), the way TensorRT's
 * ONNX parser fills an INetworkDefinition. The runtime knows no file format;
 * this library knows no device: it links libfovea only.
 *
 *     fv_net_builder *b;  fv_onnx_report rep;
 *     if (fv_onnx_load("resnet18.onnx", NULL, &b, &rep) != FV_OK)
 *         fprintf(stderr, "%s\n", fv_onnx_last_error());
 *     fv_net *net;  fv_net_create(ctx, b, NULL, &net);  fv_net_builder_destroy(b);
 *
 * What it does at load: initializers become weights (float32, float16 and
 * float64 data; int64/int32 for shapes; external-data files relative to the
 * model's folder); Constant nodes and constant subgraphs (the Shape ->
 * Gather -> Unsqueeze -> Concat -> Reshape chains exporters write around
 * Flatten and Reshape) are computed; Identity and Dropout vanish;
 * x * Sigmoid(x) becomes one SiLU and x * HardSigmoid(x) one HardSwish;
 * a Flatten read only by Gemm/MatMul vanishes (fovea's fc flattens); a
 * Transpose from an NHWC graph input (or to an NHWC graph output) vanishes
 * (see fv_onnx_io.nhwc); ReduceMean/ReduceMax over H and W are global pools;
 * nodes are sorted topologically (a cycle is an error) and every tensor's
 * shape is inferred. Opsets 11 to 21 of the default domain.
 *
 * Tensors: fovea tensors are 4-D (N, C, H, W) (stored NHWC). An ONNX
 * tensor of rank r < 4 is the 4-D tensor with trailing dimensions of 1:
 * (N, C) is (N, C, 1, 1) and (N, C, L) is (N, C, L, 1) (so Conv1d and the
 * 1-D pools run with a kernel of height L and width 1). Element order is
 * ONNX's row-major order either way, so Reshape, Flatten, Squeeze and
 * Unsqueeze never move data unless the builder needs a gather. Ranks above
 * 4 are refused (FV_ERR_NOT_SUPPORTED) unless the tensor is a folded
 * constant. Ops along another axis than C (Concat, Softmax, Slice) run as
 * reshape -> op over C -> reshape.
 *
 * Errors: every failure returns a status and leaves a message in
 * fv_last_error() (also fv_onnx_last_error()) naming the node, its op and
 * opset and the offending value, e.g. "node 'Conv_7' (Conv, opset 13): input
 * C=64 but W takes C=32" (it includes the builder's message when a builder
 * call failed).
 */
#ifndef FOVEA_ONNX_H
#define FOVEA_ONNX_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/net.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FV_ONNX_MAX_RANK 8  /* most dimensions of any tensor, constants included */
#define FV_ONNX_MAX_IO   16 /* graph inputs / outputs described in fv_onnx_report */

/* Log callback for what the importer decided, one line per event ("folded
 * Shape 'x'", "fused SiLU at 'Mul_3'"). Valid during the call only. */
typedef void (*fv_onnx_log_fn)(const char *line, void *user);

/* A graph input bound to constant data instead of a net input (tests bind
 * a Conv's weights, or a Pad's pads, that the model declares as graph
 * inputs). Data in ONNX's order (row-major, the input's declared dims):
 * float32 in data, or integers in int_data (exactly one of the two, unless
 * count is 0). */
typedef struct fv_onnx_constant {
    const char *name;        /* the graph input's name */
    const float *data;       /* float32 values, or NULL */
    const int64_t *int_data; /* integer values, or NULL */
    size_t count;            /* elements; must equal the input's declared shape */
} fv_onnx_constant;

/* Zero means default for every field. */
typedef struct fv_onnx_options {
    int batch; /* N for inputs whose first dim is symbolic or unknown; 0 means 1 */
    /* Graph inputs bound to constants (see fv_onnx_constant); the array is
     * read during the call only. */
    const fv_onnx_constant *constants;
    int constant_count; /* entries in constants */
    /* Largest model file accepted (bytes); 0 means 4 GiB. External data
     * files are checked against their own size. */
    size_t max_file_bytes;
    fv_onnx_log_fn log;   /* NULL: nothing logged */
    void *log_user;       /* passed to log */
    uint32_t reserved[8]; /* must be zero */
} fv_onnx_options;

/* A graph input or output as ONNX sees it, and its fovea tensor. */
typedef struct fv_onnx_io {
    char name[64];                  /* truncated if longer */
    int rank;                       /* dims used */
    int64_t dims[FV_ONNX_MAX_RANK]; /* the first rank entries are used */
    int tensor; /* builder tensor id; the net's input/output index is the array index */
    /* 1 when dims are (N, H, W, C): the model transposes this input to NCHW
     * first (or this output from NCHW last), which fovea's NHWC storage makes
     * a no-op: the ONNX data, row-major, is the net's NHWC data as it is.
     * 0: dims are (N, C, ...) and the data needs fv_onnx_nchw_to_nhwc. */
    int nhwc;
} fv_onnx_io;

/* What fv_onnx_load read and built. */
typedef struct fv_onnx_report {
    int64_t ir_version;                 /* the file's ONNX IR version */
    int64_t opset;                      /* of the default domain */
    char producer[64];                  /* producer_name and version, e.g. "pytorch 2.1" */
    int nodes;                          /* in the graph */
    int initializers;                   /* constant tensors in the file */
    int folded;                         /* nodes computed at load (Constant, Shape, Gather, ...) */
    int removed;                        /* Identity, Dropout, and reshapes to the same shape */
    int fused;                          /* patterns made one layer (SiLU, HardSwish) */
    int layers;                         /* builder layers added */
    size_t weight_bytes;                /* float weights handed to the builder */
    int input_count, output_count;      /* entries used in inputs, outputs */
    fv_onnx_io inputs[FV_ONNX_MAX_IO];  /* the graph inputs, in the net's input order */
    fv_onnx_io outputs[FV_ONNX_MAX_IO]; /* the graph outputs, in the net's output order */
    uint32_t reserved[8];               /* reserved for growth */
} fv_onnx_report;

/* Loads the model at path into a new builder.
 *   opt: NULL for the defaults.
 *   out: required; on success the caller owns *out (fv_net_builder_destroy);
 *        on failure *out is NULL.
 *   report: may be NULL; filled on success (zeroed on failure).
 * Returns FV_ERR_BAD_PARAM (NULL path/out, reserved not zero, a bad
 * constant binding), FV_ERR_IO (cannot open or read the model or an
 * external-data file), FV_ERR_FORMAT (not ONNX, truncated, corrupt, cycle,
 * dangling input, data whose size disagrees with its dims, absurd attribute),
 * FV_ERR_BAD_SHAPE (shapes that do not fit a node), FV_ERR_NOT_SUPPORTED
 * (an op, opset, dtype or attribute value fovea does not run, named),
 * FV_ERR_OUT_OF_MEMORY. */
fv_status fv_onnx_load(const char *path, const fv_onnx_options *opt, fv_net_builder **out,
                       fv_onnx_report *report);

/* As fv_onnx_load, from size bytes in memory (read during the call only).
 * base_dir: where external-data files are looked for; NULL refuses
 * external data (FV_ERR_NOT_SUPPORTED). */
fv_status fv_onnx_load_memory(const void *data, size_t size, const char *base_dir,
                              const fv_onnx_options *opt, fv_net_builder **out,
                              fv_onnx_report *report);

/* fv_last_error(): the message of the last failure on this thread ("" if
 * none). Never NULL. */
const char *fv_onnx_last_error(void);

/* What the importer does with an op_type of the default domain. */
typedef enum fv_onnx_op_kind {
    FV_ONNX_OP_UNSUPPORTED = 0,
    FV_ONNX_OP_LAYER = 1,    /* runs on computed tensors (becomes layers) */
    FV_ONNX_OP_CONSTANT = 2, /* computed at load, on constant inputs only */
    FV_ONNX_OP_REMOVED = 3   /* Identity, Dropout: vanish */
} fv_onnx_op_kind;

/* How op_type is handled (LAYER ops fold too when all inputs are
 * constant). NULL gives UNSUPPORTED. */
fv_onnx_op_kind fv_onnx_op_support(const char *op_type);

/* What fv_onnx_inspect reports, one call per item. */
typedef enum fv_onnx_item {
    FV_ONNX_ITEM_INPUT = 0,      /* a graph input that is no initializer (name; op_type:
                                    "tensor", "sequence", "map", "optional", "other" or "") */
    FV_ONNX_ITEM_OUTPUT = 1,     /* a graph output (name) */
    FV_ONNX_ITEM_NODE = 2,       /* a node (name, op_type, domain), in file order */
    FV_ONNX_ITEM_INITIALIZER = 3 /* an initializer (name) */
} fv_onnx_item;
/* Called by fv_onnx_inspect for each item; the strings are valid during the call only. */
typedef void (*fv_onnx_inspect_fn)(fv_onnx_item kind, const char *name, const char *op_type,
                                   const char *domain, void *user);

/* Reads the model at path and reports its inputs, outputs, nodes and
 * initializers through fn (strings valid during the call only), without
 * checking or building anything. opset: the default domain's version (0
 * when absent); may be NULL. Returns FV_ERR_BAD_PARAM, FV_ERR_IO,
 * FV_ERR_FORMAT. */
fv_status fv_onnx_inspect(const char *path, int64_t *opset, fv_onnx_inspect_fn fn, void *user);

/* A tensor read from a serialized TensorProto (.pb), as ONNX's test data
 * stores inputs and outputs. Float classes (float32/16/64, bfloat16) come
 * as float32 in data, integer classes and bool as int64 in int_data. */
typedef struct fv_onnx_tensor {
    char name[64];                  /* the TensorProto's name; truncated if longer */
    int elem_type;                  /* ONNX TensorProto.DataType: 1 float32, 7 int64, ... */
    int rank;                       /* dims used */
    int64_t dims[FV_ONNX_MAX_RANK]; /* the tensor's dims */
    size_t count;                   /* elements */
    float *data;                    /* malloc'd, or NULL */
    int64_t *int_data;              /* malloc'd, or NULL */
} fv_onnx_tensor;

/* Reads path into *out (zeroed first; free with fv_onnx_tensor_free).
 * Returns FV_ERR_BAD_PARAM, FV_ERR_IO, FV_ERR_FORMAT (not a TensorProto,
 * sizes that disagree), FV_ERR_NOT_SUPPORTED (strings, external data),
 * FV_ERR_OUT_OF_MEMORY; the message is fv_onnx_last_error(). */
fv_status fv_onnx_tensor_read(const char *path, fv_onnx_tensor *out);
/* Frees the arrays and zeroes *t. NULL allowed. */
void fv_onnx_tensor_free(fv_onnx_tensor *t);

/* Reorders a dense tensor between fovea's NHWC and ONNX's row-major NCHW
 * order (the 4-D shape as fv_net_builder_shape gives it). src and dst must
 * not overlap. */
void fv_onnx_nhwc_to_nchw(const float *nhwc, int n, int c, int h, int w, float *nchw);
/* the reverse */
void fv_onnx_nchw_to_nhwc(const float *nchw, int n, int c, int h, int w, float *nhwc);

#ifdef __cplusplus
}
#endif
#endif
