/* fv_filter's DIRECT engine: one memory-bound CUDA-core stencil kernel from
 * u8 frame to u8 frame, by the rule of fovea/filter.h with the FUSED
 * engine's roundings (input values to FP16, weights to FP16). Host entry
 * points callable from C. */
#ifndef FOVEA_KERNELS_FILTER_DIRECT_CUH
#define FOVEA_KERNELS_FILTER_DIRECT_CUH

#include <cuda_runtime.h>
#include "../../../core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FV__DIRECT_K (FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL)

typedef struct fv__cuda_direct_args {
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
    int pairs; /* 1: two kernels (gx, gy) per edge channel, magnitude */
    int out_c; /* edge-step channels: 1 or 3 (3: overlay of a colour input) */
    int r, s;  /* kernel rows, cols: odd, 1..FV_FILTER_MAX_KERNEL */
    /* Kernel g (0; 1 = gy for pairs), row-major r x s, values FP16-rounded
     * (the FUSED engine's weights): k[g][i * s + j]. */
    float k[2][FV__DIRECT_K];
    float gain, threshold;
    int overlay;
    /* the strip kernel's strips sized for this many blocks an SM fewer
     * than fit (>= 0; at least one block an SM is kept) */
    int wave_less;
    /* 0: an ordinary launch; 1: a programmatic dependent of the kernel
     * before it on the stream (pdl.cuh; the context's choice); 2: that, and
     * the next kernel may be scheduled once every block has started */
    int early;
} fv__cuda_direct_args;

/* Launches on stream; checks the arguments (FV_ERR_INTERNAL), returns the
 * launch error. No allocation, no synchronization: capturable in a graph. */
fv_status fv__cuda_filter_direct_launch(cudaStream_t stream, const fv__cuda_direct_args *a);

/* The backend table's filter_direct (see core/internal.h). */
fv_status fv__cuda_filter_direct(fv_context *ctx, const fv_filter_desc *d, const float *k,
                                 int wave_less, const fv_image *in, const fv_image *out);

#ifdef __cplusplus
}
#endif
#endif
