/* The golden comparison, shared by tests/golden/test_golden.c and the
 * on-device regression suite (apps/fovea-regress): the case list
 * (ref/cases.txt), one case run through fv_filter, and the tolerance.
 *
 * Tolerance: fovea stores the packed input and the convolution output as
 * FP16 (OpenCV computes in float32), so bytes may differ: every byte within
 * GOLDEN_MAX_DIFF (2) levels and at least GOLDEN_MIN_WITHIN1 (99.5%) of them
 * within 1; and the reference must be a real edge image (over a quarter of
 * its bytes nonzero). */
#ifndef FOVEA_GOLDEN_CHECK_H
#define FOVEA_GOLDEN_CHECK_H

#include <stddef.h>
#include "fovea/fovea.h"
#include "fovea/platform/image_io.h"

#define GOLDEN_MAX_DIFF    2
#define GOLDEN_MIN_WITHIN1 0.995

typedef struct golden_case {
    char image[64], filter[16], output[16], ref[96];
    int x0, y0, w, h;
    float gain;
} golden_case;

typedef struct golden_stats {
    size_t n, exact, within1, nonzero; /* bytes compared; equal; |diff| <= 1; ref != 0 */
    double mean;                       /* mean |diff| */
    int max;                           /* max |diff| */
} golden_stats;

/* Reads up to max cases from a cases.txt file. Returns how many, or -1 when
 * the file cannot be opened. */
int golden_read_cases(const char *path, golden_case *cs, int max);

/* Output channels of a case: 3 for "color", else 1. */
int golden_channels(const golden_case *c);

/* Runs case c on ctx: the crop of img (RGB24, loaded by the caller) through
 * fv_filter; got receives w x h x golden_channels(c) bytes. Images live in
 * U8 tensors of the context's DEVICE pool (device-accessible on CUDA).
 * Returns the first failing call's status (fv_last_error says more), or
 * FV_ERR_BAD_PARAM when the crop does not fit in img. */
fv_status golden_run(fv_context *ctx, const golden_case *c, const fv_host_image *img,
                     unsigned char *got);

/* Compares n bytes. */
void golden_compare(const unsigned char *got, const unsigned char *want, size_t n,
                    golden_stats *st);

/* 1 when st is within the tolerance above (and the reference is a real edge
 * image), else 0. */
int golden_pass(const golden_stats *st);

#endif
