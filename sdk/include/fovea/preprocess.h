/* fovea: camera pixels -> a network's input tensor, in one pass.
 *
 * fv_preprocess reads a frame in any fv_pixel_format (YUV converted with
 * BT.601 limited range, as fv_image_pack does), resizes it bilinearly to
 * the tensor's H x W (stretched, or letterboxed with the aspect ratio kept),
 * normalises each channel with a mean and a standard deviation and writes
 * the result into one batch item of an NHWC tensor: F16 (the CUDA backend's
 * net inputs) or F32 (the CPU backend's). On CUDA it is one kernel on the
 * context's stream; several cameras fill one batch by calling it once per
 * item:
 *
 *     fv_tensor *in = fv_net_input(net, 0);            // (N, 3, 224, 224)
 *     fv_preprocess_desc pd = {.mean = {0.485f, 0.456f, 0.406f},
 *                              .std = {0.229f, 0.224f, 0.225f}};
 *     for (int b = 0; b < cameras; b++) fv_preprocess(ctx, &frame[b], in, b, &pd);
 *     fv_net_forward(net);
 *
 * The rule, for tensor pixel (x, y) inside the region R that the frame maps
 * to (fv_preprocess_region), with v the frame's R, G, B (or grey / luma)
 * byte values as floats:
 *   sx = (x - R.x + 0.5) * (frame width / R.width) - 0.5, clamped to
 *   [0, width-1] (the same for y): half-pixel centres, PyTorch's
 *   interpolate(mode="bilinear", align_corners=False, antialias=False) and
 *   OpenCV's INTER_LINEAR; no antialiasing when shrinking;
 *   v' = bilinear mix of the four nearest pixels (YUV converted first);
 *   value = v' * (scale / std[c]) + (-mean[c] / std[c]), i.e.
 *   (v' * scale - mean[c]) / std[c].
 * Outside R (letterbox borders): the fill pixel, normalised the same way.
 * The CPU and CUDA backends compute the same bits (same float operations,
 * never fused into FMAs).
 */
#ifndef FOVEA_PREPROCESS_H
#define FOVEA_PREPROCESS_H

#include <stdint.h>
#include "fovea/context.h"
#include "fovea/ops.h"
#include "fovea/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a frame is fitted to the net input's size. */
typedef enum fv_resize_fit {
    FV_RESIZE_STRETCH = 0,  /* the whole frame onto the whole tensor (default) */
    FV_RESIZE_LETTERBOX = 1 /* aspect ratio kept, centred; the fill value around it */
} fv_resize_fit;

/* A rectangle of pixels. */
typedef struct fv_region {
    int x, y, width, height; /* pixels; x, y: the top-left corner */
} fv_region;

/* Parameters of fv_preprocess; zero fields mean their defaults. */
typedef struct fv_preprocess_desc {
    fv_resize_fit fit; /* default STRETCH */
    /* Per tensor channel (R, G, B in that order, or the one grey channel:
     * index 0), in units of byte * scale: ImageNet's mean {0.485, 0.456,
     * 0.406} and std {0.229, 0.224, 0.225} with the default scale. mean 0
     * means 0; std 0 means 1; std must not be negative. */
    float mean[3];
    float std[3]; /* see mean */
    float scale;  /* applied to the 0..255 byte values first; 0 means 1/255 */
    /* Letterbox: the border's pixel, as R, G, B bytes 0..255 (fill[0] for
     * a 1-channel tensor), normalised as the frame's pixels are. 0 means
     * black; YOLO models use 114. */
    float fill[3];
    /* 1: the tensor's channels are B, G, R (models trained on OpenCV's
     * frames); mean and std are then given in B, G, R order too. */
    int bgr;
    uint32_t reserved[4]; /* must be zero */
} fv_preprocess_desc;

/* The region of a dst_w x dst_h tensor that a src_w x src_h frame maps to:
 * the whole tensor for STRETCH; for LETTERBOX the largest centred
 * rectangle of the frame's aspect ratio (width, height = round(src *
 * min(dst_w / src_w, dst_h / src_h)), at least 1; x, y = the leftover
 * halved, rounded down). out required. Returns FV_ERR_BAD_PARAM for a size
 * below 1 or an unknown fit. */
fv_status fv_preprocess_region(int src_w, int src_h, int dst_w, int dst_h, fv_resize_fit fit,
                               fv_region *out);

/* Writes batch item `index` of dst from src, by the rule above.
 *   ctx: required.
 *   src: required; its pixels as fv_image_pack takes them (device-accessible
 *        memory on the CUDA backend: a frame buffer's device view, a
 *        DEVICE/MAPPED carve-out; host memory on the CPU backend); any size,
 *        YUYV/UYVY width even, NV12 both even.
 *   dst: required; NHWC F16 or F32, C 1 or 3 (1: grey, or the luma of a
 *        colour frame as fv_image_pack takes it; 3 from a grey frame: the
 *        grey value thrice), any N, H, W; in a DEVICE or MAPPED pool on
 *        CUDA (a net's input tensor is). Only item `index` is written (F16
 *        padding channels zeroed); other items are left alone.
 *   index: 0 .. N-1.
 *   desc: NULL for the defaults (stretch, value = byte / 255).
 * Asynchronous on CUDA (the context's stream, one kernel, capturable in a
 * CUDA graph); allocates nothing. Returns FV_ERR_BAD_PARAM (NULL, a bad
 * image, index, std or reserved field: the message names it),
 * FV_ERR_BAD_SHAPE (dtype, or C not 1 or 3), FV_ERR_CUDA. */
fv_status fv_preprocess(fv_context *ctx, const fv_image *src, fv_tensor *dst, int index,
                        const fv_preprocess_desc *desc);

#ifdef __cplusplus
}
#endif
#endif
