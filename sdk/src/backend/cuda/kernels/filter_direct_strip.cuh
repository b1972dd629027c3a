/* fv_filter's DIRECT engine, the fast path for kernels up to 3 x 3 on every
 * input format (GRAY8, RGB24, BGR24, RGBA32, YUYV, UYVY, NV12): a block slides a 3-row
 * window down a strip of rows (see filter_direct_strip.cu). Host entry
 * points callable from C; filter_direct.cu dispatches here. */
#ifndef FOVEA_KERNELS_FILTER_DIRECT_STRIP_CUH
#define FOVEA_KERNELS_FILTER_DIRECT_STRIP_CUH

#include <cuda_runtime.h>
#include "filter_direct.cuh"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the strip kernel runs a (checked) args: kernel rows and cols 1 or
 * 3 (any input format). */
int fv__cuda_filter_strip_fits(const fv__cuda_direct_args *a);

/* Launches on stream; a must be checked by fv__cuda_filter_direct_launch and
 * fit (FV_ERR_INTERNAL otherwise). w: the kernels zero-padded and centred to
 * 3 x 3, w[g * 9 + i * 3 + j]. Returns the launch error. */
fv_status fv__cuda_filter_strip_launch(cudaStream_t stream, const fv__cuda_direct_args *a,
                                       const float w[18]);

/* Self-check for tests: *mismatches = how many floats with bits in
 * [lo, hi) the kernel's square root of gradient sums gives other bits for
 * than sqrtf (synchronous, default stream). */
fv_status fv__cuda_filter_strip_sqrt_mismatches(unsigned lo, unsigned hi,
                                                unsigned long long *mismatches);

/* Likewise for the kernel's output byte of an edge value: how many floats
 * with bits in [lo, hi) its forms (each counted; the one for values >= 0
 * on +0 to +inf and -0 only) give another byte for than
 * fv__unpack_byte(x, 1, 0). */
fv_status fv__cuda_filter_strip_unpack_mismatches(unsigned lo, unsigned hi,
                                                  unsigned long long *mismatches);

#ifdef __cplusplus
}
#endif
#endif
