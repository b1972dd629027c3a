/* fovea: operations on tensors.
 *
 * Ops run on the context's backend and stream, asynchronously on CUDA.
 * On the CUDA backend, tensors must live in the DEVICE pool or a MAPPED pool;
 * tensors in PINNED or HOST pools are refused (copy them first). On the CPU
 * backend any pool works. Every op computes in FP32; F16 outputs are rounded
 * to nearest even on store.
 */
#ifndef FOVEA_OPS_H
#define FOVEA_OPS_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/context.h"
#include "fovea/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- activation ------------------------------------------------------- */
/* Activations, applied after a convolution's bias (alpha and beta as each value says). */
typedef enum fv_activation {
    FV_ACT_IDENTITY = 0,
    FV_ACT_RELU = 1,
    FV_ACT_CLIPPED_RELU = 2, /* min(max(x, 0), alpha); alpha 0 means 6 (ReLU6) */
    FV_ACT_SIGMOID = 3,
    FV_ACT_TANH = 4,
    FV_ACT_LEAKY_RELU = 5, /* x >= 0 ? x : alpha * x; alpha 0 means 0.01 */
    /* The next three run as net layers (fovea/net.h), not inside a conv2d. */
    FV_ACT_HARD_SIGMOID = 6, /* clamp(alpha * x + beta, 0, 1); alpha 0 means 1/6, beta 0.5 */
    FV_ACT_HARD_SWISH = 7,   /* x * clamp(x / 6 + 0.5, 0, 1) */
    FV_ACT_SILU = 8          /* x * sigmoid(x) */
} fv_activation;

const char *fv_activation_name(fv_activation a); /* e.g. "relu"; static storage */

/* ---- 2-D convolution (cross-correlation, as PyTorch's conv2d) --------- */
/* A planned 2-D convolution with its weights and chosen engine; opaque. */
typedef struct fv_conv2d fv_conv2d;

/* What fv_conv2d_create plans; zero fields mean their defaults. */
typedef struct fv_conv2d_desc {
    int n, h, w, c;             /* input shape; n 0 means 1 */
    int k;                      /* output channels */
    int r, s;                   /* kernel height, width */
    int stride_h, stride_w;     /* 0 means 1 */
    int pad_h, pad_w;           /* zero padding, >= 0 */
    int dilation_h, dilation_w; /* 0 means 1 */
    int groups;                 /* 0 means 1; c and k must divide by it */
    fv_activation activation;   /* after the bias; default IDENTITY */
    float activation_alpha;     /* see fv_activation; 0 means its default */
    fv_dtype dtype;             /* input and output dtype; default F16 */
    /* FP32 weights in KCRS order (PyTorch's): K x (C/groups) x R x S.
     * Required. Copied (and converted) at creation: the caller may free it
     * after the call. */
    const float *weights;
    const float *bias;    /* K values, or NULL for no bias; copied */
    uint32_t flags;       /* FV_CONV2D_* */
    uint32_t reserved[7]; /* must be zero */
} fv_conv2d_desc;

/* fv_conv2d_desc.flags */
enum {
    /* Time every engine configuration cuDNN supports for this op (CUDA
     * events, after warm-up, median) and keep the fastest; the choice goes
     * into the context's profile. Costs up to seconds per op at creation. */
    FV_CONV2D_AUTOTUNE = 1u << 0,
    /* Ignore the context's profile: choose by heuristics (or autotune). */
    FV_CONV2D_NO_PROFILE = 1u << 1,
    /* CUDA: leave out fovea's own tensor-core kernels (path "direct", for
     * small channel counts, and "gemm", for small outputs with a long
     * reduction); choose among cuDNN's engines only. */
    FV_CONV2D_NO_DIRECT = 1u << 2,
    /* CUDA: run fovea's direct kernel (ignoring the profile and heuristics),
     * or fail with FV_ERR_NOT_SUPPORTED saying why it cannot run the op
     * (it needs groups 1, dilation 1, C <= 32, K <= 64 and the
     * shared memory). With FV_CONV2D_AUTOTUNE, only its variants are timed.
     * The CPU backend ignores this flag and FV_CONV2D_NO_DIRECT. */
    FV_CONV2D_DIRECT = 1u << 3,
    /* The op adds a residual tensor before its activation:
     * out = act(conv(in, W) + bias + residual), run with
     * fv_conv2d_forward_residual (ResNet's "add, then ReLU" in the
     * convolution's epilogue). fv_conv2d_forward is refused on such an op.
     * The residual is its own entry in the device profile. */
    FV_CONV2D_RESIDUAL = 1u << 4
};

/* Plans a convolution: checks the desc, converts the weights once (FP16,
 * KRSC, channels padded on CUDA) and stores them in the context's DEVICE pool
 * (HOST pool on the CPU backend); chooses the engine. Returns FV_ERR_BAD_PARAM (desc invalid: the
 * message names the field and value), FV_ERR_NOT_SUPPORTED (the backend
 * cannot run it), FV_ERR_OUT_OF_MEMORY. */
fv_status fv_conv2d_create(fv_context *ctx, const fv_conv2d_desc *desc, fv_conv2d **out);
/* Frees the op and what it holds (weights, engine plan). NULL allowed.
 * Queued work that uses it must have finished (fv_context_synchronize).
 * Destroy it before its context (fv_context_destroy refuses while it
 * lives). */
void fv_conv2d_destroy(fv_conv2d *op);

/* The output shape (N, P, Q, K) the op produces. Any pointer may be NULL. */
void fv_conv2d_output_shape(const fv_conv2d *op, int *n, int *h, int *w, int *c);

/* out = act(conv(in, W) + bias). in and out must match the desc's shapes
 * and dtype and be distinct. No allocation; asynchronous on CUDA.
 * Returns FV_ERR_BAD_SHAPE, FV_ERR_BAD_PARAM, FV_ERR_CUDA/CUDNN. */
fv_status fv_conv2d_forward(fv_conv2d *op, const fv_tensor *in, fv_tensor *out);

/* out = act(conv(in, W) + bias + residual), for an op created with
 * FV_CONV2D_RESIDUAL. residual has the output's shape and dtype and must be
 * distinct from out (not NULL; it may be in itself when the shapes match). On CUDA the add runs
 * inside the convolution's fused graph where the engine takes it, else in its epilogue kernel; the
 * sum is formed in FP32 before the activation and rounded once. Returns as fv_conv2d_forward, and
 * FV_ERR_BAD_PARAM when the op was created without FV_CONV2D_RESIDUAL. */
fv_status fv_conv2d_forward_residual(fv_conv2d *op, const fv_tensor *in, const fv_tensor *residual,
                                     fv_tensor *out);

/* How a convolution runs: the path and engine chosen at creation. */
typedef struct fv_conv2d_info {
    /* "graph" (cuDNN graph API, fused), "graph-pw" (the graph in the form
     * cuDNN's runtime-fusion engines take: FP32 bias, an identity tail
     * when there is nothing to fuse), "graph-pw16" (the same with FP16
     * intermediates and bias), "graph-split" (bare graph + fovea's
     * epilogue kernel), "legacy" (cudnnConvolutionForward + epilogue),
     * "legacy-fused" (cudnnConvolutionBiasActivationForward), "direct"
     * (fovea's own tensor-core kernel), "gemm" (fovea's split-reduction
     * implicit GEMM), "cpu" */
    char path[16];
    char engine[64];        /* e.g. "eng7" (graph), "IMPLICIT_PRECOMP_GEMM" (legacy),
                               "fovea-direct-8rows" (direct; "-tma" at the end where
                               Hopper's tensor memory accelerator copies its windows),
                               "fovea-gemm-64x32-split16" (gemm), "direct" (cpu) */
    int tensor_cores;       /* 1 when the engine runs on tensor cores */
    int fused;              /* 1 when bias and activation run inside the convolution */
    size_t workspace_bytes; /* workspace the engine uses */
    char choice[64];        /* how it was chosen: "heuristics A #0", "fallback #2", ...,
                               "profile (...)", "profile+plan (...)" (the profile's
                               entry, its compiled plan loaded from the profile) */
    char layout[64];        /* the formulation: channel padding, groups */
    float measured_ms;      /* autotuned (or profiled) time of one forward; 0 if not timed */
    int candidates;         /* engine configs considered at creation */
    uint32_t reserved[6];   /* reserved for growth */
} fv_conv2d_info;

/* Fills *out. Returns FV_ERR_BAD_PARAM if either is NULL. */
fv_status fv_conv2d_info_get(const fv_conv2d *op, fv_conv2d_info *out);

/* Optional, at set-up: prepares the op for this input/output pair, so that
 * the first fv_conv2d_forward on them is as fast as any later one (on CUDA,
 * the cuDNN variant pack binding their addresses is built here and run
 * once, and the call waits for it: the output tensor is written; an op keeps
 * the last 4 pairs). Checks the tensors as fv_conv2d_forward does. Without
 * it, the first forward on a new pair does that work.
 * Returns FV_ERR_BAD_SHAPE, FV_ERR_BAD_PARAM, FV_ERR_CUDNN. */
fv_status fv_conv2d_bind(fv_conv2d *op, const fv_tensor *in, fv_tensor *out);
/* fv_conv2d_bind for an FV_CONV2D_RESIDUAL op: the triple it will run on. */
fv_status fv_conv2d_bind_residual(fv_conv2d *op, const fv_tensor *in, const fv_tensor *residual,
                                  fv_tensor *out);

/* Output size of one spatial dimension; 0 if the window does not fit, an
 * argument is out of range, or the size would not fit an int. */
int fv_conv_output_dim(int in, int kernel, int stride, int pad, int dilation);

/* ---- 2-D pooling ------------------------------------------------------ */
/* Pooling window reductions. */
typedef enum fv_pooling_mode {
    FV_POOLING_MAX = 0,
    FV_POOLING_AVG = 1, /* padding cells excluded from the count */
    FV_POOLING_AVG_INCLUDE_PAD = 2
} fv_pooling_mode;

/* Parameters of fv_pooling2d. */
typedef struct fv_pooling_desc {
    fv_pooling_mode mode;   /* default MAX */
    int r, s;               /* window; required */
    int stride_h, stride_w; /* 0 means the window size */
    int pad_h, pad_w;       /* >= 0, and < the window */
    uint32_t reserved[4];   /* must be zero */
} fv_pooling_desc;

/* out (N, P, Q, C) = pool(in (N, H, W, C)), same dtype. */
fv_status fv_pooling2d(fv_context *ctx, const fv_pooling_desc *desc, const fv_tensor *in,
                       fv_tensor *out);

/* ---- elementwise ------------------------------------------------------ */
/* out = act(a + b); all three of one shape and dtype (F16 or F32); out may
 * alias a or b. */
fv_status fv_add(fv_context *ctx, const fv_tensor *a, const fv_tensor *b, fv_tensor *out,
                 fv_activation act, float act_alpha);

/* ---- pixels <-> tensors ----------------------------------------------- */
/* Pixel formats of frames and images (8 bits a sample). */
typedef enum fv_pixel_format {
    FV_PIXEL_GRAY8 = 1,  /* 1 byte per pixel */
    FV_PIXEL_RGB24 = 2,  /* R, G, B bytes */
    FV_PIXEL_BGR24 = 3,  /* B, G, R bytes */
    FV_PIXEL_RGBA32 = 4, /* R, G, B, A bytes (A ignored when packing) */
    FV_PIXEL_YUYV = 5,   /* 4:2:2 packed Y0 U Y1 V; width even */
    FV_PIXEL_NV12 = 6,   /* Y plane, then interleaved U V plane at half size; width, height even */
    FV_PIXEL_UYVY = 7    /* 4:2:2 packed U Y0 V Y1; width even */
} fv_pixel_format;

const char *fv_pixel_format_name(fv_pixel_format f); /* e.g. "NV12"; static storage */

/* An image in memory. On the CUDA backend, data must be device-accessible
 * (a DEVICE or MAPPED pool carve-out, or any device pointer); on the CPU
 * backend, host memory. */
typedef struct fv_image {
    fv_pixel_format format; /* how the bytes are laid out */
    int width, height;      /* pixels; >= 1 */
    size_t stride;          /* bytes per row (Y plane for NV12); 0 means dense */
    void *data;             /* first byte of row 0 (Y plane for NV12) */
    void *uv;               /* NV12 only: the UV plane; NULL means data + stride * height */
    size_t uv_stride;       /* NV12 only: 0 means stride */
} fv_image;

/* Bytes a dense image of this format and size takes (both NV12 planes). */
size_t fv_image_bytes(fv_pixel_format format, int width, int height);

/* Parameters of fv_image_pack; NULL or zero fields mean the defaults. */
typedef struct fv_pack_desc {
    /* Tensor channels: 0 means the format's natural count (GRAY8: 1; the
     * others: 3, in R, G, B order; YUV is converted with BT.601 limited
     * range). 1 from a colour format takes luma (Y for YUV formats,
     * 0.299 R + 0.587 G + 0.114 B otherwise). */
    int channels;
    float scale;          /* value = byte * scale + bias; scale 0 means 1/255 */
    float bias;           /* added after the scale */
    uint32_t reserved[4]; /* must be zero */
} fv_pack_desc;

/* Pixels -> NHWC tensor (N 1, H height, W width, C channels; F16 or F32).
 * desc may be NULL (defaults). */
fv_status fv_image_pack(fv_context *ctx, const fv_image *src, fv_tensor *dst,
                        const fv_pack_desc *desc);

/* Parameters of fv_image_unpack; NULL or zero fields mean the defaults. */
typedef struct fv_unpack_desc {
    int absolute;         /* 1: take |x| first (edge filters give signed values) */
    float scale;          /* byte = clamp(round(x * scale + bias), 0, 255); 0 means 255 */
    float bias;           /* added after the scale */
    uint32_t reserved[4]; /* must be zero */
} fv_unpack_desc;

/* NHWC tensor (N 1; F16 or F32) -> pixels. dst format GRAY8 takes channel 0
 * (or the mean of channels 0..2 when the tensor has 3 or more); RGB24/BGR24/RGBA32 take
 * channels 0..2 (a 1-channel tensor is replicated; alpha written 255).
 * YUYV and NV12 outputs are not supported. desc may be NULL. */
fv_status fv_image_unpack(fv_context *ctx, const fv_tensor *src, fv_image *dst,
                          const fv_unpack_desc *desc);

#ifdef __cplusplus
}
#endif
#endif
