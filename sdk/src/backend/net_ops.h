/* The layer kernels fv_net runs besides convolutions: one table per backend
 * (cpu/cpu_net.c, cuda/cuda_net.c over cuda/kernels/net.cu). The net's
 * front end (net/) checks shapes and fills every parameter before it calls
 * a kernel, so kernels may assume valid input. Every kernel is asynchronous
 * on the context's stream on CUDA, allocates nothing and synchronizes
 * nothing (capturable in a CUDA graph). Not installed. */
#ifndef FOVEA_NET_OPS_H
#define FOVEA_NET_OPS_H

#include <stddef.h>
#include "fovea/fovea.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor as a kernel sees it: NHWC, element (b, y, x, ch) at
 * data[((b * h + y) * w + x) * ps + ch]. ps >= cw >= c. A kernel writing
 * a view writes channels [0, c) and zeros in [c, cw) (cw is c rounded up
 * to 8 for a whole F16 buffer, so its padding stays zero; c for a slice of
 * a wider buffer: a concat part). ps is the buffer's stored channels (a
 * multiple of 8 on F16). dtype: F16 or F32, the same for every view of one
 * call. data: what the backend's kernels address (device pointer on CUDA),
 * aligned to the element size (a channel slice need not be 16-byte aligned). */
typedef struct fv__view {
    fv_dtype dtype;
    int n, h, w, c;
    int cw;
    int ps;
    void *data;
} fv__view;

typedef struct fv__pool_params {
    int mode; /* fv_net_pool_mode */
    int r, s, stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
} fv__pool_params;

typedef struct fv__resize_params {
    int mode;               /* fv_net_resize_mode */
    int coord;              /* fv_net_resize_coord */
    int nearest;            /* fv_net_nearest_round */
    float scale_h, scale_w; /* out / in, > 0 */
} fv__resize_params;

typedef struct fv__convt_params {
    int r, s, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, groups;
    int act;
    float alpha, beta;
} fv__convt_params;

/* Pointers to constant float arrays are backend memory (device on CUDA)
 * the net uploaded at create. */
typedef struct fv__fc fv__fc; /* a backend's fully connected layer */

typedef struct fv__net_ops {
    /* out = act(in); same shape. */
    fv_status (*act)(fv_context *ctx, const fv__view *in, const fv__view *out, int act, float alpha,
                     float beta);
    /* out = act(a op b) (op: fv_net_binary_op). out has the full shape; each
     * of a's and b's n, h, w, c equals out's or is 1 (broadcast). out may be
     * the same buffer as a or b when that one has out's shape. */
    fv_status (*binary)(fv_context *ctx, int op, const fv__view *a, const fv__view *b,
                        const fv__view *out, int act, float alpha, float beta);
    /* out = act(in * scale[ch] + shift[ch]); count 1: scale[0], shift[0]
     * for every channel; scale/shift never NULL (the net fills 1 and 0). */
    fv_status (*affine)(fv_context *ctx, const fv__view *in, const fv__view *out,
                        const float *scale, const float *shift, int count, int act, float alpha,
                        float beta);
    /* Window pooling; out's h, w given. Cells outside the input are skipped
     * (max), excluded from the count (AVG) or counted as zeros
     * (AVG_INCLUDE_PAD, which counts only cells within the padded input:
     * PyTorch's count_include_pad with ceil_mode). */
    fv_status (*pool)(fv_context *ctx, const fv__view *in, const fv__view *out,
                      const fv__pool_params *p);
    /* out (n, 1, 1, c) = mean (avg 1) or max over h, w. */
    fv_status (*global_pool)(fv_context *ctx, const fv__view *in, const fv__view *out, int avg);
    /* Softmax over c, for each pixel (max subtracted first). */
    fv_status (*softmax)(fv_context *ctx, const fv__view *in, const fv__view *out);
    /* out = in; same n, h, w, c (concat parts and channel slices: either
     * view may be a slice of a wider buffer). */
    fv_status (*copy)(fv_context *ctx, const fv__view *in, const fv__view *out);
    /* Resize to out's h, w. */
    fv_status (*resize)(fv_context *ctx, const fv__view *in, const fv__view *out,
                        const fv__resize_params *p);
    /* out = in placed at (top, left), value elsewhere; out's h, w given. */
    fv_status (*pad)(fv_context *ctx, const fv__view *in, const fv__view *out, int top, int left,
                     float value);
    /* Reshape in PyTorch's element order: out (b, y, x, ch) takes the
     * element whose NCHW flat index within the whole tensor equals
     * ((b * out.c + ch) * out.h + y) * out.w + x. */
    fv_status (*reshape)(fv_context *ctx, const fv__view *in, const fv__view *out);
    /* out = act(conv_transpose(in) + bias); weights F32 C x K/groups x R x S
     * (PyTorch's layout), bias K floats or NULL. Output sizes given by out. */
    fv_status (*conv_transpose)(fv_context *ctx, const fv__view *in, const fv__view *out,
                                const fv__convt_params *p, const float *weights, const float *bias);
    /* Optional (NULL: fc layers run as convolutions with an H x W kernel).
     * A fully connected layer: out (n, 1, 1, k) = act(W x + bias) over the
     * whole of in (a flatten folded in); weights K x C x H x W (PyTorch's
     * flatten order), bias K floats or NULL. fc_create refuses
     * (FV_ERR_NOT_SUPPORTED) what it cannot run; the net then uses a
     * convolution. */
    fv_status (*fc_create)(fv_context *ctx, const fv__view *in, const fv__view *out, int k,
                           const float *weights, const float *bias, int act, fv__fc **fc);
    fv_status (*fc_run)(fv_context *ctx, fv__fc *fc, const fv__view *in, const fv__view *out);
    void (*fc_destroy)(fv_context *ctx, fv__fc *fc); /* NULL allowed */
    /* Optional: a net with fc layers is about to make its layers; slow
     * one-time set-up of fc_create (cuBLASLt's handle) may start now in the
     * background. */
    void (*fc_prepare)(fv_context *ctx);
    const char *(*fc_engine)(const fv__fc *fc); /* for the layer table */
} fv__net_ops;

extern const fv__net_ops fv__net_ops_cpu;
#if FV_BUILT_WITH_CUDA
extern const fv__net_ops fv__net_ops_cuda;
#endif

#ifdef __cplusplus
}
#endif
#endif
