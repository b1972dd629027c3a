/* 2-D pooling kernel (max, average excluding or including padding) on NHWC
 * F16/F32 tensors. Host launcher callable from C. */
#ifndef FOVEA_KERNELS_POOLING_CUH
#define FOVEA_KERNELS_POOLING_CUH

#include <cuda_runtime.h>
#include "../../../core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fv__cuda_pooling_args {
    fv_dtype dtype; /* F16 or F32, both tensors */
    fv_pooling_mode mode;
    int n, h, w;     /* input */
    int p, q;        /* output */
    int c, c_stored; /* channels, as stored (both tensors) */
    int r, s, stride_h, stride_w, pad_h, pad_w;
    const void *in;
    void *out;
} fv__cuda_pooling_args;

/* Writes every output element, padding channels as zero. */
fv_status fv__cuda_pooling_launch(cudaStream_t stream, const fv__cuda_pooling_args *a);

#ifdef __cplusplus
}
#endif
#endif
