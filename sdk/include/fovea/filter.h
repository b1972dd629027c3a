/* fovea: edge filters on frames, in a few lines.
 *
 * An fv_filter runs one frame on the context's backend and stream by one of
 * three engines (fv_filter_engine):
 *   CONV:  fv_image_pack (bytes / 255, FP16) -> fv_conv2d (cuDNN, tensor
 *          cores on CUDA) -> edge step (|x| or gradient magnitude, gain,
 *          threshold, overlay) -> fv_image_unpack;
 *   FUSED: (CUDA, sm_70+) one kernel: the frame's values (0..255, as FP16:
 *          bytes exactly) -> the convolution as an implicit GEMM on tensor
 *          cores (FP16 weights, FP32 accumulate) -> the same edge step with
 *          gain in place of 255 * gain -> bytes. No intermediate tensors.
 *   DIRECT: (CUDA, any GPU) one kernel on CUDA cores with FUSED's values
 *          (the same input values, weights rounded to FP16) and FP32 sums,
 *          built to run at the DRAM floor. Its bytes are FUSED's wherever the
 *          convolution's sums are exact in FP32 (fv_filter_info.direct_exact:
 *          every input format with the built-in kernels, or custom kernels
 *          whose FP16 weights are multiples of 2^-q with
 *          255 * channels summed * sum |w| * 2^(q + qi) < 2^24, qi = 0 for
 *          byte formats and 8 for YUV); elsewhere (fine custom weights) they
 *          may differ from FUSED's by a level where a value lies within FP32
 *          rounding of a .5 boundary.
 * On the CPU backend the CONV engine runs in FP32 (F32 tensors, FP32
 * weights): the reference the GPU is tested against; with the context flag
 * FV_CONTEXT_CPU_ROUND_F16 it mirrors the GPU's FP16 storage instead.
 * Every engine follows the rule below, exactly in real arithmetic; they
 * differ only by rounding: CONV on the GPU rounds the values / 255 and the
 * convolution output to FP16; FUSED and DIRECT take bytes exactly and round
 * YUV-converted values to nearest on the FP16 values with steps of at least
 * 2^-8 (FP16 rounding from 4 up, multiples of 2^-8 below: within 2^-9 of
 * FP16 rounding, and exact in their sums); all round custom weights to FP16.
 * Against the FP32 reference a byte may differ by a level or two, and a
 * pixel on the threshold may flip. Everything is made at fv_filter_create;
 * fv_filter_apply allocates nothing and does not synchronize (it may be
 * captured into a CUDA graph).
 *
 * The rule, per pixel:
 *   x_c   = byte_c / 255, c over the packed channels (R, G, B; or one for
 *           GRAY8 input; YUYV, UYVY and NV12 are converted to RGB as
 *           fv_image_pack does)
 *   conv  = cross-correlation (as cv2.filter2D; kernels are not flipped)
 *           with zero padding (rows-1)/2, (cols-1)/2: pixels outside the
 *           frame are 0 (cv2.BORDER_CONSTANT); output the size of the input.
 *           GRAY output: the kernel on every packed channel, summed (the
 *           cuDNN tutorial's Laplacian); COLOR: each channel on its own.
 *   m     = |y| for LAPLACIAN and CUSTOM;
 *           sqrt(gx^2 + gy^2) for SOBEL, SCHARR, PREWITT, where gx and gy
 *           come from one convolution of two output channels per edge
 *           channel (gx: the kernel below, gy: its transpose)
 *   b     = m * (255 * gain)                      (in output levels)
 *   threshold T > 0: b = b >= T ? 255 : 0
 *   overlay: b_c = max(b_c, 255 * x_c)             (edges lighten the input)
 *   byte  = clamp(floor(b + 0.5), 0, 255)          (fv_image_unpack's rule)
 * Output channels: 1 for GRAY (replicated into colour output images), 3 for
 * COLOR from a colour input (1 from GRAY8 input), 3 under overlay from a
 * colour input. GRAY8 output images of 3 channels take their mean.
 *
 * Kernels (unnormalized, as OpenCV's):
 *   LAPLACIAN {1 1 1; 1 -8 1; 1 1 1}
 *   SOBEL   gx {-1 0 1; -2 0 2; -1 0 1}
 *   SCHARR  gx {-3 0 3; -10 0 10; -3 0 3}
 *   PREWITT gx {-1 0 1; -1 0 1; -1 0 1}
 *   CUSTOM  the desc's kernel, odd rows and cols from 1 to 15 (FP16 on the
 *           GPU, like every fv_conv2d weight on F16 tensors).
 * Values past 65504 overflow the GPU's FP16 tensors (huge custom kernels
 * only; CONV engine).
 */
#ifndef FOVEA_FILTER_H
#define FOVEA_FILTER_H

#include <stdint.h>
#include "fovea/context.h"
#include "fovea/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An edge filter planned for one frame size and format; opaque. */
typedef struct fv_filter fv_filter;

/* Which kernel a filter convolves with. */
typedef enum fv_filter_kind {
    FV_FILTER_LAPLACIAN = 0, /* default */
    FV_FILTER_SOBEL = 1,
    FV_FILTER_SCHARR = 2,
    FV_FILTER_PREWITT = 3,
    FV_FILTER_CUSTOM = 4
} fv_filter_kind;

/* One edge value per pixel or per colour channel. */
typedef enum fv_filter_output {
    FV_FILTER_OUT_GRAY = 0, /* default: one edge value per pixel */
    FV_FILTER_OUT_COLOR = 1 /* per-channel edges */
} fv_filter_output;

/* How the CUDA backend runs a filter. */
typedef enum fv_filter_engine {
    /* default. CUDA with tensor cores: FUSED, or DIRECT where DIRECT is
     * byte-identical to it (direct_exact) and ran the frame faster when
     * fv_filter_create timed both (CUDA-graph replays of 8 applies
     * each, interleaved, the best of 5 rounds; fv_filter_info says);
     * else CONV. */
    FV_FILTER_ENGINE_AUTO = 0,
    FV_FILTER_ENGINE_FUSED = 1, /* the fused tensor-core kernel (CUDA, sm_70+) */
    FV_FILTER_ENGINE_CONV = 2,  /* pack + fv_conv2d + edge + unpack: every backend */
    FV_FILTER_ENGINE_DIRECT = 3 /* the direct CUDA-core stencil kernel (CUDA, any GPU) */
} fv_filter_engine;

/* Largest custom kernel, rows and cols. */
#define FV_FILTER_MAX_KERNEL 15

/* What fv_filter_create plans; zero fields mean their defaults. */
typedef struct fv_filter_desc {
    fv_filter_kind kind;     /* default LAPLACIAN */
    int width, height;       /* of the frames; required (>= 1) */
    fv_pixel_format format;  /* of the input frames; 0 means RGB24. YUYV: width
                                even; NV12: width and height even */
    fv_filter_output output; /* default GRAY */
    float gain;              /* 0 means 1; else > 0 and finite */
    float threshold;         /* 0: none; else in (0, 255]: b >= threshold gives 255, else 0 */
    int overlay;             /* 0 or 1: edges drawn over the input (the max of the two) */
    /* CUSTOM only (must be 0/NULL otherwise): kernel_rows x kernel_cols
     * floats, row-major, finite; rows and cols odd, 1..FV_FILTER_MAX_KERNEL.
     * Copied at creation: the caller may free it after the call. */
    int kernel_rows, kernel_cols;
    const float *kernel;     /* CUSTOM: the kernel (see above); else NULL */
    uint32_t conv_flags;     /* FV_CONV2D_* for the convolution (CONV engine; e.g. AUTOTUNE) */
    fv_filter_engine engine; /* 0 (AUTO) by default */
    uint32_t reserved[5];    /* must be zero */
} fv_filter_desc;

/* Plans a filter: checks the desc and chooses the engine. CONV: makes the
 * convolution (weights converted and uploaded once) and every tensor of the
 * pipeline in the context's DEVICE pool, and runs the convolution once
 * (fv_conv2d_bind). FUSED: uploads the FP16 weight matrix (one small
 * tensor of the DEVICE pool) and synchronizes once; nothing else. DIRECT:
 * nothing on the device (the weights travel with each launch). AUTO, where
 * DIRECT is a candidate: also times both kernels (DIRECT up to 3 x 3 with
 * two strip heights, see fv_filter_info) on a scratch frame of
 * pseudo-random bytes carved from the DEVICE pool and freed before the call
 * returns (output GRAY8 for one edge-step channel, else RGB24; a few ms at
 * 4K; 61 rows of host memory, malloc'd and freed); where the pool or the
 * host has no room for it, DIRECT is taken for kernels up to 3x3, FUSED
 * for larger.
 * Not while the context's stream is being captured.
 *   ctx, desc, out: required. *out is NULL on failure.
 * Returns FV_ERR_BAD_PARAM (the message names the field and its value;
 * also an unknown engine), FV_ERR_NOT_SUPPORTED (the backend cannot run the
 * convolution; engine FUSED on a backend without it: CPU, or a GPU without
 * tensor cores; engine DIRECT on the CPU),
 * FV_ERR_OUT_OF_MEMORY (the DEVICE or HOST pool is too small), device errors. */
fv_status fv_filter_create(fv_context *ctx, const fv_filter_desc *desc, fv_filter **out);

/* Frees the filter's tensors and convolution. NULL allowed. Queued work
 * that uses the filter must have finished (fv_context_synchronize). Destroy it before its context
 * (fv_context_destroy refuses while it lives). */
void fv_filter_destroy(fv_filter *f);

/* Filters one frame: in (the desc's format and size) -> out (the desc's
 * size; GRAY8, RGB24, BGR24 or RGBA32). Both images must be readable and
 * writable by the backend (see fv_image in ops.h: device-accessible on
 * CUDA). Asynchronous on CUDA: out is written when the context is
 * synchronized; in must stay unchanged until then. No allocation.
 * Returns FV_ERR_BAD_PARAM (NULL argument, wrong format or size: the
 * message says which), FV_ERR_NOT_SUPPORTED (YUYV or NV12 output), device
 * errors. */
fv_status fv_filter_apply(fv_filter *f, const fv_image *in, fv_image *out);

/* The filter's convolution (for fv_conv2d_info_get), owned by the filter.
 * NULL when f is NULL or runs the FUSED or DIRECT engine (no fv_conv2d). */
const fv_conv2d *fv_filter_conv(const fv_filter *f);

/* How a filter runs. */
typedef struct fv_filter_info {
    fv_filter_engine engine; /* FUSED, DIRECT or CONV: the engine taken (never AUTO) */
    /* "fused tensor-core kernel (WMMA m16n16k16, FP16 in, FP32 accumulate)",
     * "direct CUDA-core stencil (FP32 sums, exact: FUSED's bytes)" (or
     * "..., rounded" when not direct_exact),
     * "pack + cuDNN conv + edge + unpack" (CUDA) or
     * "pack + conv + edge + unpack (CPU reference)" */
    char path[96];
    int tensor_cores;             /* 1 when the convolution runs on tensor cores */
    int kernel_rows, kernel_cols; /* 3 x 3, or the custom kernel's */
    int input_channels;           /* packed: 1 (GRAY8 input) or 3 */
    int edge_channels;            /* 1 (GRAY) or the input channels (COLOR) */
    int conv_outputs;             /* edge channels, times 2 for gradient filters */
    /* AUTO's timing at creation, ms per frame: [0] FUSED, [1] DIRECT; both 0
     * when AUTO timed nothing (one candidate, a forced engine, no room). */
    float timed_ms[2];
    int direct_exact; /* 1: DIRECT's bytes are provably FUSED's (see the top) */
    /* DIRECT up to 3 x 3 (a strip kernel: a block slides down a strip of
     * rows, as many blocks as fit on the GPU at once): 1 when AUTO's timing
     * found strips sized for one block an SM fewer (taller strips) faster;
     * else 0 (every forced engine, and AUTO untimed). The same bytes
     * either way. */
    int direct_wave_less;
    uint32_t reserved[4]; /* reserved for growth */
} fv_filter_info;

/* Fills *out. Returns FV_ERR_BAD_PARAM if either is NULL. */
fv_status fv_filter_info_get(const fv_filter *f, fv_filter_info *out);

/* "auto", "fused", "conv", "direct"; "unknown". */
const char *fv_filter_engine_name(fv_filter_engine e);

/* "laplacian", "sobel", "scharr", "prewitt", "custom"; "unknown". */
const char *fv_filter_kind_name(fv_filter_kind k);

#ifdef __cplusplus
}
#endif
#endif
