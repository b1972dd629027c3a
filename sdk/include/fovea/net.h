/* fovea: whole CNNs (fv_net).
 *
 * A network is a DAG of layers over NHWC tensors, described through a
 * builder (no context, no device: plain host data) and then created on a
 * context, which fuses, plans memory, converts and uploads the weights and
 * chooses every convolution's engine once:
 *
 *     fv_net_builder *b;  fv_net_builder_create(&b);
 *     int x, y;
 *     fv_net_add_input(b, "image", 1, 224, 224, 3, &x);
 *     fv_net_add_conv(b, &(fv_net_conv_desc){.name = "conv1", .k = 64, .r = 7, .s = 7,
 *                     .stride_h = 2, .stride_w = 2, .pad = {3, 3, 3, 3},
 *                     .weights = w, .activation = FV_ACT_RELU}, x, &y);
 *     fv_net_mark_output(b, y, "features");
 *     fv_net *net;  fv_net_create(ctx, b, NULL, &net);
 *     fv_net_input_upload(net, 0, pixels, count);  fv_net_forward(net);
 *     fv_net_output_download(net, 0, out, count);  // waits for the stream
 *
 * The builder copies everything it is given (weights included): callers may
 * free their arrays after each call. One builder may create several nets
 * (a CUDA net and a CPU reference net for fv_net_compare, say).
 *
 * Tensor semantics follow PyTorch / ONNX: a tensor id names a 4-D tensor
 * (N, C, H, W) stored NHWC (F16 on the CUDA backend, F32 on the CPU
 * backend, rounded to FP16 at every layer with FV_CONTEXT_CPU_ROUND_F16).
 * A 2-D (N, C) tensor is (N, C, 1, 1). Every layer computes in FP32.
 *
 * Errors at build name the layer: "conv 'layer1.0.conv2': input C=64 but
 * the weights take C=128". FV_ERR_BAD_PARAM for a bad argument or unknown
 * tensor id, FV_ERR_BAD_SHAPE for shapes that do not fit. A failed add
 * leaves the builder as it was.
 */
#ifndef FOVEA_NET_H
#define FOVEA_NET_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/context.h"
#include "fovea/ops.h"
#include "fovea/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A network description in host memory: inputs, layers, outputs. No device; opaque. */
typedef struct fv_net_builder fv_net_builder;
/* A network created on a context: fused, planned, weights uploaded, engines chosen. Opaque. */
typedef struct fv_net fv_net;

/* Most layers and inputs a builder takes; tensors per concat. */
#define FV_NET_MAX_LAYERS 4096
#define FV_NET_MAX_CONCAT 64        /* tensors per concat */
#define FV_NET_MAX_DIM    (1 << 20) /* any one dimension */

/* Makes an empty builder. out required; *out NULL on failure. Returns FV_ERR_BAD_PARAM,
 * FV_ERR_OUT_OF_MEMORY. */
fv_status fv_net_builder_create(fv_net_builder **out);
void fv_net_builder_destroy(fv_net_builder *b); /* frees the builder; NULL allowed */

/* Shape of a tensor id as the builder inferred it (any pointer may be NULL).
 * FV_ERR_BAD_PARAM for an unknown id. */
fv_status fv_net_builder_shape(const fv_net_builder *b, int tensor, int *n, int *c, int *h, int *w);
/* Tensor ids made so far (ids are 0 .. count-1). */
int fv_net_builder_tensor_count(const fv_net_builder *b);

/* Declares an input (N, C, H, W); every dimension 1 .. FV_NET_MAX_DIM.
 * name: NULL gives "input<i>"; copied. */
fv_status fv_net_add_input(fv_net_builder *b, const char *name, int n, int c, int h, int w,
                           int *out);

/* Marks a tensor as an output (in the order of the calls). A tensor may be
 * marked once. name: NULL gives "output<i>". */
fv_status fv_net_mark_output(fv_net_builder *b, int tensor, const char *name);

/* ---- convolution ---------------------------------------------------------- */
/* Parameters of fv_net_add_conv and fv_net_add_conv_transpose; zero fields mean their defaults. */
typedef struct fv_net_conv_desc {
    const char *name;           /* for messages and tables; NULL gives "conv<i>" */
    int k;                      /* output channels (conv); see fv_net_add_conv_transpose */
    int r, s;                   /* kernel height, width */
    int stride_h, stride_w;     /* 0 means 1 */
    int dilation_h, dilation_w; /* 0 means 1 */
    int groups;                 /* 0 means 1; C and K must divide by it */
    int pad[4];                 /* top, left, bottom, right; >= 0 */
    /* conv: K x C/groups x R x S (PyTorch's Conv2d.weight).
     * conv_transpose: C x K/groups x R x S (PyTorch's ConvTranspose2d.weight). */
    const float *weights;
    const float *bias;                       /* K values or NULL */
    fv_activation activation;                /* fused after the bias; default IDENTITY */
    float activation_alpha, activation_beta; /* see fv_activation; 0 means default */
    int output_pad_h, output_pad_w;          /* conv_transpose only; < stride */
    uint32_t reserved[4];                    /* must be zero */
} fv_net_conv_desc;

/* out = act(conv(in) + bias). Asymmetric padding runs as a zero pad layer
 * in front (the convolution engines take symmetric padding). */
fv_status fv_net_add_conv(fv_net_builder *b, const fv_net_conv_desc *d, int in, int *out);
/* out = act(conv_transpose(in) + bias) (PyTorch's ConvTranspose2d; pad
 * crops the output; output size (H-1)*stride - pad_top - pad_bottom +
 * dilation*(R-1) + output_pad + 1). */
fv_status fv_net_add_conv_transpose(fv_net_builder *b, const fv_net_conv_desc *d, int in, int *out);

/* y = gamma * (x - mean) / sqrt(var + eps) + beta, per channel (C values
 * each). Folded into the producing convolution at create when that
 * convolution has no other consumer; a per-channel affine layer otherwise. */
fv_status fv_net_add_batchnorm(fv_net_builder *b, const char *name, int in, const float *gamma,
                               const float *beta, const float *mean, const float *var, float eps,
                               int *out);

/* Fully connected: out (N, K) = act(W x + bias), x the input flattened in
 * PyTorch's order (C, H, W); weights K x (C*H*W) (nn.Linear.weight).
 * Runs as a convolution with an H x W kernel: no flatten is needed in front. */
fv_status fv_net_add_fc(fv_net_builder *b, const char *name, int in, int k, const float *weights,
                        const float *bias, fv_activation act, float act_alpha, int *out);

/* ---- elementwise ------------------------------------------------------------ */
/* out = act(in) with its alpha and beta (see fv_activation; 0 means the default). Fused into
 * the producing layer at create where it can be. */
fv_status fv_net_add_activation(fv_net_builder *b, const char *name, int in, fv_activation act,
                                float alpha, float beta, int *out);

/* Elementwise operations of fv_net_add_binary. */
typedef enum fv_net_binary_op {
    FV_NET_ADD = 0,
    FV_NET_SUB = 1,
    FV_NET_MUL = 2,
    FV_NET_DIV = 3
} fv_net_binary_op;

/* out = act(a op b), broadcasting as numpy does: each of N, C, H, W equal
 * or 1 on one side (a (N,C,H,W) times b (N,C,1,1) is a squeeze-and-excitation
 * scale). An add of two same-shaped tensors, one of them made by a
 * convolution with no other consumer, runs in that convolution (a residual:
 * act(conv + bias + other), one kernel; the layer table shows "add"). */
fv_status fv_net_add_binary(fv_net_builder *b, const char *name, fv_net_binary_op op, int a, int bt,
                            fv_activation act, float act_alpha, int *out);

/* out = x * scale[c] + shift[c] with constant vectors of C values, or of one
 * value (count 1) for every channel. scale NULL means 1, shift NULL 0. */
fv_status fv_net_add_affine(fv_net_builder *b, const char *name, int in, const float *scale,
                            const float *shift, int count, int *out);

/* ---- pooling -------------------------------------------------------------- */
/* Pooling window reductions of fv_net_add_pool. */
typedef enum fv_net_pool_mode {
    FV_NET_POOL_MAX = 0,
    FV_NET_POOL_AVG = 1 /* padding cells excluded from the count */,
    FV_NET_POOL_AVG_INCLUDE_PAD = 2
} fv_net_pool_mode;

/* Parameters of fv_net_add_pool; zero fields mean their defaults. */
typedef struct fv_net_pool_desc {
    const char *name;           /* the layer's name, for messages; copied */
    fv_net_pool_mode mode;      /* default MAX */
    int r, s;                   /* window */
    int stride_h, stride_w;     /* 0 means the window */
    int pad[4];                 /* top, left, bottom, right; each < the window */
    int dilation_h, dilation_w; /* 0 means 1 (max pooling only) */
    int ceil_mode;              /* 1: output size rounded up (PyTorch ceil_mode) */
    uint32_t reserved[4];       /* must be zero */
} fv_net_pool_desc;

/* out = the pooling of in, as PyTorch's MaxPool2d / AvgPool2d with the same parameters. */
fv_status fv_net_add_pool(fv_net_builder *b, const fv_net_pool_desc *d, int in, int *out);
/* (N, C, H, W) -> (N, C, 1, 1): mean (avg 1) or max (avg 0). */
fv_status fv_net_add_global_pool(fv_net_builder *b, const char *name, int in, int avg, int *out);

/* ---- shape and routing ------------------------------------------------------ */
/* Softmax over C (for each n, h, w). */
fv_status fv_net_add_softmax(fv_net_builder *b, const char *name, int in, int *out);
/* Concatenation along C; all of one N, H, W; 1 .. FV_NET_MAX_CONCAT inputs. */
fv_status fv_net_add_concat(fv_net_builder *b, const char *name, const int *in, int count,
                            int *out);
/* Channels [begin, end) of the input. */
fv_status fv_net_add_slice(fv_net_builder *b, const char *name, int in, int begin, int end,
                           int *out);
/* Reshape with PyTorch's element order: (N, C, H, W) -> (n, c, h, w), the
 * same count (flatten is (N, C*H*W, 1, 1)). Free when the layout allows
 * (H = W = 1 on both sides); a gather otherwise. */
fv_status fv_net_add_reshape(fv_net_builder *b, const char *name, int in, int n, int c, int h,
                             int w, int *out);
/* Constant padding of H and W: pad = top, left, bottom, right (>= 0). */
fv_status fv_net_add_pad(fv_net_builder *b, const char *name, int in, const int pad[4], float value,
                         int *out);

/* Interpolation of fv_net_add_resize. */
typedef enum fv_net_resize_mode {
    FV_NET_RESIZE_NEAREST = 0,
    FV_NET_RESIZE_BILINEAR = 1
} fv_net_resize_mode;

/* How output coordinates map to input ones (ONNX Resize's coordinate_transformation_mode). */
typedef enum fv_net_resize_coord {
    FV_NET_COORD_HALF_PIXEL = 0, /* (x + 0.5) / scale - 0.5: PyTorch align_corners=False */
    FV_NET_COORD_ALIGN_CORNERS = 1,
    FV_NET_COORD_ASYMMETRIC = 2,        /* x / scale: PyTorch's nearest */
    FV_NET_COORD_PYTORCH_HALF_PIXEL = 3 /* half_pixel, but 0 where the output size is 1 */
} fv_net_resize_coord;

/* Rounding of nearest-neighbour coordinates (ONNX Resize's nearest_mode). */
typedef enum fv_net_nearest_round {
    FV_NET_NEAREST_FLOOR = 0,
    FV_NET_NEAREST_ROUND_PREFER_FLOOR = 1,
    FV_NET_NEAREST_ROUND_PREFER_CEIL = 2,
    FV_NET_NEAREST_CEIL = 3
} fv_net_nearest_round;

/* Parameters of fv_net_add_resize; zero fields mean their defaults. */
typedef struct fv_net_resize_desc {
    const char *name;             /* the layer's name, for messages; copied */
    fv_net_resize_mode mode;      /* default NEAREST */
    fv_net_resize_coord coord;    /* default HALF_PIXEL */
    fv_net_nearest_round nearest; /* nearest mode only */
    int out_h, out_w;             /* required */
    float scale_h, scale_w;       /* 0: out / in (ONNX scales when given) */
    uint32_t reserved[4];         /* must be zero */
} fv_net_resize_desc;

/* out (N, C, out_h, out_w) = in resized as the desc says (ONNX Resize and Upsample, PyTorch
 * interpolate). */
fv_status fv_net_add_resize(fv_net_builder *b, const fv_net_resize_desc *d, int in, int *out);

/* ---- the net ------------------------------------------------------------------ */
enum {
    /* Autotune every convolution (fv_conv2d's FV_CONV2D_AUTOTUNE): the
     * choices go into the context's profile (save it with
     * fv_context_profile_save), so a net created again from that profile
     * times nothing. */
    FV_NET_AUTOTUNE = 1u << 0,
    /* Capture the whole inference as one CUDA graph at create;
     * fv_net_forward replays it (one launch). Ignored on the CPU backend. */
    FV_NET_CUDA_GRAPH = 1u << 1,
    /* Keep every layer as built: no BN folding, no activation fused into a
     * convolution, no concat input written in place (tests compare the
     * fused net with this). */
    FV_NET_NO_FUSION = 1u << 2,
    /* Keep every concat a copy: its inputs get buffers of their own (tests
     * compare with this; FV_NET_NO_FUSION implies it). By default an input
     * made by a layer that can write a channel slice of the concat's output
     * (any layer but a convolution or fc), read only by such layers and not
     * a net input or output, is written in place: the concat copies
     * nothing for it (fv_net_info.concat_elided). */
    FV_NET_NO_CONCAT_VIEWS = 1u << 3
};

/* Progress while creating (engine choice and autotuning can take seconds):
 * called after each layer is built with the layer count. */
typedef void (*fv_net_progress_fn)(int done, int total, const char *layer, void *user);

/* Options of fv_net_create; NULL or zero fields mean the defaults. */
typedef struct fv_net_desc {
    uint32_t flags;              /* FV_NET_* */
    fv_net_progress_fn progress; /* NULL: no progress calls */
    void *progress_user;         /* passed to progress */
    /* Storage of the net's tensors. FV_DTYPE_F16 (0, the default): the
     * backend's own, F16 on CUDA (the tensor-core path) and F32 on the CPU
     * backend (FV_CONTEXT_CPU_ROUND_F16 rounds it as F16 storage would).
     * FV_DTYPE_F32 on CUDA keeps every tensor in FP32, for a net whose
     * precision FP16 storage loses (inputs it cannot represent, sums past
     * 65504); such a net may hold no convolution or fc (the CUDA backend runs
     * fv_conv2d on F16 only: FV_ERR_NOT_SUPPORTED names the layer). Other
     * values: FV_ERR_BAD_PARAM. */
    fv_dtype dtype;
    uint32_t reserved[7]; /* must be zero */
} fv_net_desc;

/* Fuses, plans memory (one activation arena from the context's DEVICE pool),
 * converts and uploads the weights (DEVICE pool on CUDA; HOST pool on the
 * CPU backend, whose 64 MiB default holds about one ResNet-18: size it with
 * fv_context_desc.host_pool_bytes), creates every convolution (engine choice
 * from the profile, heuristics or autotuning), binds them to their tensors,
 * runs the net once on CUDA (kernels load lazily: the first inference is as
 * fast as any; the outputs are written) and, with FV_NET_CUDA_GRAPH,
 * captures the inference. The builder is not
 * needed afterwards. desc may be NULL. Returns FV_ERR_BAD_PARAM (no outputs,
 * an input unused...), FV_ERR_BAD_SHAPE, FV_ERR_NOT_SUPPORTED (a layer the
 * backend cannot run, named), FV_ERR_OUT_OF_MEMORY (pool, request and what
 * is left), FV_ERR_CUDA/CUDNN. */
fv_status fv_net_create(fv_context *ctx, const fv_net_builder *b, const fv_net_desc *desc,
                        fv_net **out);
/* Waits for the context's work, returns the net's memory to its pools (its
 * input and output tensors with it). NULL ok. Destroy it before its context
 * (fv_context_destroy refuses while it lives). */
void fv_net_destroy(fv_net *net);

/* One inference: reads the input tensors, writes the output tensors, on the
 * context's stream: no allocation, no synchronization, nothing copied but
 * activations (one graph launch with FV_NET_CUDA_GRAPH; while the
 * context's stream is being captured, e.g. in a pipeline stage's graph,
 * the layers' launches instead, so that the caller's graph holds them). */
fv_status fv_net_forward(fv_net *net);

int fv_net_input_count(const fv_net *net);  /* 0 for NULL */
int fv_net_output_count(const fv_net *net); /* 0 for NULL */
/* The net's input and output tensors (NHWC, the net's dtype, N as built),
 * owned by the net: write inputs (fv_tensor_upload, fv_image_pack, a kernel
 * of yours) before fv_net_forward, read outputs after it. NULL for a bad i. */
fv_tensor *fv_net_input(fv_net *net, int i);
fv_tensor *fv_net_output(fv_net *net, int i);             /* as fv_net_input, for output i */
const char *fv_net_input_name(const fv_net *net, int i);  /* owned by the net; NULL for a bad i */
const char *fv_net_output_name(const fv_net *net, int i); /* owned by the net; NULL for a bad i */

/* Copies count floats of dense NHWC data into input i (converted to the
 * net's dtype on the device), asynchronously; count must be N*H*W*C. As
 * with fv_tensor_upload, data must stay unchanged until the context is
 * synchronized when it is pinned memory (pageable memory is copied before
 * the call returns). FV_ERR_BAD_PARAM (NULL, bad index), FV_ERR_BAD_SHAPE
 * (count). */
fv_status fv_net_input_upload(fv_net *net, int i, const float *nhwc, size_t count);
/* Waits for the stream and copies output i into dense NHWC floats. */
fv_status fv_net_output_download(fv_net *net, int i, float *nhwc, size_t count);

/* What fv_net_create made, as fv_net_info_get gives it. */
typedef struct fv_net_info {
    int layers;               /* after fusion */
    int builder_layers;       /* as built */
    int convolutions;         /* conv, fc and conv_transpose layers */
    size_t arena_bytes;       /* the activation arena */
    size_t arena_lower_bound; /* the largest set of intermediate tensors alive at once */
    size_t weight_bytes;      /* weights and constants as stored on the backend */
    size_t io_bytes;          /* input and output tensors (outside the arena) */
    size_t workspace_bytes;   /* the largest convolution workspace (the context's shared region) */
    int cuda_graph;           /* 1 when fv_net_forward replays a graph */
    int fused_bn, fused_act, inplace; /* what fusion and planning did */
    int fused_add;                    /* residual adds run in their convolution's epilogue */
    int concat_elided;    /* concat inputs their producers write into the concat's output
                             (channel slices: no copy); see FV_NET_NO_CONCAT_VIEWS */
    uint32_t reserved[6]; /* reserved for growth */
} fv_net_info;

/* Fills *out. net and out required; returns FV_ERR_BAD_PARAM otherwise. */
fv_status fv_net_info_get(const fv_net *net, fv_net_info *out);

/* One layer after fusion, as fv_net_layer_info_get gives it. */
typedef struct fv_net_layer_info {
    char name[64];          /* as built (the first of a fused group) */
    char op[24];            /* "conv", "fc", "add", "pool.max", "concat", ... */
    char fused[48];         /* what was folded in: "bn+relu", "" */
    char path[16];          /* convolutions: fv_conv2d_info.path; fc run by cuBLASLt:
                               "cublaslt"; else "kernel" or "view" (a reshape that is
                               a view, a concat whose inputs were all written in
                               place); "view+copy": a concat that copies some inputs */
    char engine[64];        /* convolutions: fv_conv2d_info.engine */
    int n, c, h, w;         /* output */
    size_t offset;          /* output's offset in the arena (a concat input written in
                               place: its first channel's); SIZE_MAX when outside it */
    size_t bytes;           /* output's bytes */
    size_t workspace_bytes; /* convolutions: its workspace */
    uint32_t reserved[4];   /* reserved for growth */
} fv_net_layer_info;

/* Layer i (0 .. info.layers-1) after fusion. */
fv_status fv_net_layer_info_get(const fv_net *net, int i, fv_net_layer_info *out);

/* The activation bytes layer i (0 .. info.layers-1) moves when it runs on
 * its own, each tensor once, as stored (channel padding included): *read,
 * its inputs (a fused residual too; a tensor read twice counts once); a
 * concat, the inputs it copies; *written, its output (a concat, what it
 * copies). A view (fv_net_layer_info.path "view") moves nothing; a layer
 * writing in place into a concat counts its channels. Weights and constants
 * are not included (fv_net_info.weight_bytes). Summed over the layers: the
 * memory traffic of a layer-by-layer run that keeps nothing in a cache.
 * read and written may be NULL. Returns FV_ERR_BAD_PARAM for a NULL net or
 * a bad i. */
fv_status fv_net_layer_traffic(const fv_net *net, int i, size_t *read, size_t *written);

/* Runs the net `runs` times layer by layer with timing events between the
 * layers (after one warm-up run; synchronizes) and writes each layer's
 * median time (ms) to ms[i] (layers entries) and the median of the whole
 * forward as fv_net_forward runs it (graph replay when captured) to *total.
 * On the CPU backend the times are wall-clock. */
fv_status fv_net_profile(fv_net *net, int runs, float *ms, int layers, float *total);

/* One layer's line of fv_net_compare's precision report. */
typedef struct fv_net_layer_error {
    double rel_l2;      /* ||net - ref|| / ||ref|| of the layer's output */
    double max_abs;     /* largest |value| of the net's output (FP16 overflows above 65504) */
    double ref_max_abs; /* largest |value| of ref's output */
} fv_net_layer_error;

/* Precision report: net and ref (built from the same builder, with the same
 * flags, on any two contexts; typically CUDA and a CPU FP32 reference) run
 * layer by layer on net's current inputs (copied to ref), and each layer's
 * output is compared. err has info.layers entries. Synchronizes both. */
fv_status fv_net_compare(fv_net *net, fv_net *ref, fv_net_layer_error *err, int layers);

#ifdef __cplusplus
}
#endif
#endif
