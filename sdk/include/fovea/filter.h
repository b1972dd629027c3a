/* fovea: edge filters on frames, in a few lines.
 *
 * An fv_filter runs one frame through
 *   fv_image_pack (bytes / 255, FP16) -> fv_conv2d (tensor cores on CUDA)
 *   -> edge step (|x| or gradient magnitude, gain, threshold, overlay)
 *   -> fv_image_unpack
 * on the context's backend and stream. Every tensor is made at
 * fv_filter_create; fv_filter_apply allocates nothing.
 *
 * The exact rule, per pixel (FP32 arithmetic on the FP16 tensors):
 *   x_c   = byte_c / 255 as FP16, c over the packed channels (R, G, B; or
 *           one for GRAY8 input; YUYV and NV12 are converted to RGB as
 *           fv_image_pack does)
 *   conv  = cross-correlation (as cv2.filter2D; kernels are not flipped)
 *           with zero padding (rows-1)/2, (cols-1)/2: pixels outside the
 *           frame are 0 (cv2.BORDER_CONSTANT); output the size of the input.
 *           GRAY output: the kernel on every packed channel, summed (the
 *           cuDNN tutorial's Laplacian); COLOR: each channel on its own.
 *           Stored as FP16.
 *   m     = |y| for LAPLACIAN and CUSTOM;
 *           sqrt(gx^2 + gy^2) for SOBEL, SCHARR, PREWITT, where gx and gy
 *           come from one convolution of two output channels per edge
 *           channel (gx: the kernel below, gy: its transpose)
 *   b     = m * (255 * gain)                      (in output levels)
 *   threshold T > 0: b = b >= T ? 255 : 0
 *   overlay: b_c = max(b_c, 255 * x_c)             (edges lighten the input;
 *                                                  255 * x_c rounds back to the byte)
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
 *   CUSTOM  the desc's kernel, odd rows and cols from 1 to 15, rounded to
 *           FP16 like every fv_conv2d weight on F16 tensors.
 * Values past 65504 overflow the FP16 tensors (huge custom kernels only).
 */
#ifndef FOVEA_FILTER_H
#define FOVEA_FILTER_H

#include <stdint.h>
#include "fovea/context.h"
#include "fovea/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fv_filter fv_filter;

typedef enum fv_filter_kind {
    FV_FILTER_LAPLACIAN = 0, /* default */
    FV_FILTER_SOBEL = 1,
    FV_FILTER_SCHARR = 2,
    FV_FILTER_PREWITT = 3,
    FV_FILTER_CUSTOM = 4
} fv_filter_kind;

typedef enum fv_filter_output {
    FV_FILTER_OUT_GRAY = 0, /* default: one edge value per pixel */
    FV_FILTER_OUT_COLOR = 1 /* per-channel edges */
} fv_filter_output;

/* Largest custom kernel, rows and cols. */
#define FV_FILTER_MAX_KERNEL 15

typedef struct fv_filter_desc {
    fv_filter_kind kind;
    int width, height;      /* of the frames; required (>= 1) */
    fv_pixel_format format; /* of the input frames; 0 means RGB24. YUYV: width
                               even; NV12: width and height even */
    fv_filter_output output;
    float gain;      /* 0 means 1; else > 0 and finite */
    float threshold; /* 0: none; else in (0, 255]: b >= threshold gives 255, else 0 */
    int overlay;     /* 0 or 1: edges drawn over the input (the max of the two) */
    /* CUSTOM only (must be 0/NULL otherwise): kernel_rows x kernel_cols
     * floats, row-major, finite; rows and cols odd, 1..FV_FILTER_MAX_KERNEL.
     * Copied at creation: the caller may free it after the call. */
    int kernel_rows, kernel_cols;
    const float *kernel;
    uint32_t conv_flags;  /* FV_CONV2D_* for the convolution (e.g. AUTOTUNE) */
    uint32_t reserved[6]; /* must be zero */
} fv_filter_desc;

/* Plans a filter: checks the desc, makes the convolution (weights converted
 * and uploaded once) and every tensor of the pipeline in the context's
 * DEVICE pool, and runs the convolution once (fv_conv2d_bind).
 *   ctx, desc, out: required. *out is NULL on failure.
 * Returns FV_ERR_BAD_PARAM (the message names the field and its value),
 * FV_ERR_NOT_SUPPORTED (the backend cannot run the convolution),
 * FV_ERR_OUT_OF_MEMORY (the DEVICE or HOST pool is too small), device errors. */
fv_status fv_filter_create(fv_context *ctx, const fv_filter_desc *desc, fv_filter **out);

/* Frees the filter's tensors and convolution. NULL allowed. Queued work
 * that uses the filter must have finished (fv_context_synchronize). */
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

/* The filter's convolution (for fv_conv2d_info_get), owned by the filter. */
const fv_conv2d *fv_filter_conv(const fv_filter *f);

/* "laplacian", "sobel", "scharr", "prewitt", "custom"; "unknown". */
const char *fv_filter_kind_name(fv_filter_kind k);

#ifdef __cplusplus
}
#endif
#endif
