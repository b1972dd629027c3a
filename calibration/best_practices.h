/* The 15 convolution shapes fovea is tuned and benchmarked on, in one place:
 * fovea-calibrate --best-practices tunes them, and the benchmark times them.
 *
 * Each is a single-image (N 1) FP16 NHWC convolution: input H x W x C,
 * K output channels, an R x S filter, the same stride and padding on both
 * axes, with "same" padding (r-1)/2; no bias, identity activation, no
 * dilation, no groups. fv_bp_desc() makes the desc, so that a profile
 * written by the calibrator matches the ops the benchmark creates (the
 * profile's key includes every one of these choices).
 *
 * Names are written as the shapes are usually quoted: "1920x1080" means
 * width 1920, height 1080 (h = 1080, w = 1920 below); the square ones read
 * the same either way. */
#ifndef FOVEA_CALIBRATION_BEST_PRACTICES_H
#define FOVEA_CALIBRATION_BEST_PRACTICES_H

#include "fovea/fovea.h"

typedef struct fv_bp_shape {
    const char *name;
    int h, w, c; /* input */
    int k;       /* output channels */
    int r, s;    /* filter height, width */
    int stride;  /* both axes */
    int pad;     /* both axes: (r-1)/2 */
} fv_bp_shape;

static const fv_bp_shape fv_best_practices[] = {
    {"32x32x64->16x16x128 3x3 s2", 32, 32, 64, 128, 3, 3, 2, 1},
    {"128x128x128->128 3x3", 128, 128, 128, 128, 3, 3, 1, 1},
    {"512x512x32->256x256x64 5x5 s2", 512, 512, 32, 64, 5, 5, 2, 2},
    {"1920x1080x3->32 5x5", 1080, 1920, 3, 32, 5, 5, 1, 2},
    {"1920x1080x8->32 5x5", 1080, 1920, 8, 32, 5, 5, 1, 2},
    {"16x16x128->8x8x256 7x7 s2", 16, 16, 128, 256, 7, 7, 2, 3},
    {"1920x1080x4->960x540x32 9x9 s2", 1080, 1920, 4, 32, 9, 9, 2, 4},
    {"128x128x128->128 7x7", 128, 128, 128, 128, 7, 7, 1, 3},
    {"128x128x128->128 11x11", 128, 128, 128, 128, 11, 11, 1, 5},
    {"800x800x8->400x400x8 9x9 s2", 800, 800, 8, 8, 9, 9, 2, 4},
    {"512x512x3->32 3x3", 512, 512, 3, 32, 3, 3, 1, 1},
    {"512x512x8->32 3x3", 512, 512, 8, 32, 3, 3, 1, 1},
    {"2048x2048x8->8 3x3", 2048, 2048, 8, 8, 3, 3, 1, 1},
    {"1024x1024x32->32 3x3", 1024, 1024, 32, 32, 3, 3, 1, 1},
    {"1920x1080x8->8 3x3", 1080, 1920, 8, 8, 3, 3, 1, 1},
};

#define FV_BEST_PRACTICES_COUNT ((int)(sizeof fv_best_practices / sizeof fv_best_practices[0]))

/* The desc of shape b (weights, bias and flags left for the caller: set
 * weights to K x C x R x S floats; keep bias NULL to match the profile). */
static inline fv_conv2d_desc fv_bp_desc(const fv_bp_shape *b) {
    fv_conv2d_desc d = {.n = 1,
                        .h = b->h,
                        .w = b->w,
                        .c = b->c,
                        .k = b->k,
                        .r = b->r,
                        .s = b->s,
                        .stride_h = b->stride,
                        .stride_w = b->stride,
                        .pad_h = b->pad,
                        .pad_w = b->pad,
                        .activation = FV_ACT_IDENTITY,
                        .dtype = FV_DTYPE_F16};
    return d;
}

#endif
