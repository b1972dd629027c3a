/* fv_filter in one kernel: u8 frame -> convolution as an implicit GEMM on
 * tensor cores (nvcuda::wmma m16n16k16, FP16 in, FP32 accumulate) -> edge
 * step (backend/edge_math.h) -> u8 frame. Pixel conversions are
 * backend/pixel_math.h's, as pack and unpack do them. Host entry points
 * callable from C. */
#ifndef FOVEA_KERNELS_FILTER_FUSED_CUH
#define FOVEA_KERNELS_FILTER_FUSED_CUH

#include <cuda_runtime.h>
#include "../../../core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Output channels of the GEMM (conv outputs m or 2m, at most 6, padded). */
#define FV__FUSED_N 16

typedef struct fv__cuda_filter_args {
    int width, height;
    fv_pixel_format in_format; /* any; YUYV/UYVY width even, NV12 both even */
    const unsigned char *in;   /* device-accessible */
    size_t in_stride;          /* >= a row's bytes (the Y plane's for NV12) */
    const unsigned char *uv;   /* NV12 only */
    size_t uv_stride;
    fv_pixel_format out_format; /* GRAY8, RGB24, BGR24 or RGBA32 */
    unsigned char *out;
    size_t out_stride;
    int in_c;  /* packed channels: 1 (GRAY8) or 3 (R, G, B) */
    int m;     /* edge channels: 1, or in_c */
    int pairs; /* 1: conv outputs (gx, gy) per edge channel, magnitude */
    int out_c; /* edge-step channels: 1 or 3 (3: overlay of a colour input) */
    int r, s;  /* kernel rows, cols: odd, 1..FV_FILTER_MAX_KERNEL */
    /* B: kpad x FV__FUSED_N FP16 (row-major, 16-byte aligned), row
     * k = (r * s + s) * in_c + c, column = conv output channel; zero past
     * r * s * in_c and past the outputs. kpad = r * s * in_c rounded up to 16. */
    const void *w;
    int kpad;
    float gain, threshold;
    int overlay;
} fv__cuda_filter_args;

/* Launches on stream; checks the arguments (FV_ERR_INTERNAL), returns the
 * launch error. No allocation, no synchronization: capturable in a graph. */
fv_status fv__cuda_filter_fused_launch(cudaStream_t stream, const fv__cuda_filter_args *a);

/* The backend table's filter_fused (see core/internal.h). */
fv_status fv__cuda_filter_fused(fv_context *ctx, const fv_filter_desc *d, const fv_tensor *w,
                                const fv_image *in, const fv_image *out);

#ifdef __cplusplus
}
#endif
#endif
