/* Pack (pixels -> NHWC F16/F32 tensor) and unpack (tensor -> pixels)
 * kernels. Host launchers callable from C; the arithmetic is
 * backend/pixel_math.h's, shared with the CPU backend, so both give the
 * same bits. */
#ifndef FOVEA_KERNELS_PACK_CUH
#define FOVEA_KERNELS_PACK_CUH

#include <cuda_runtime.h>
#include "../../../core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fv__cuda_pack_args {
    fv_pixel_format format;
    int width, height;         /* even where the format needs it */
    const unsigned char *data; /* device-accessible */
    size_t stride;             /* bytes per row (Y plane for NV12) */
    const unsigned char *uv;   /* NV12 only */
    size_t uv_stride;
    int channels;      /* 1 or 3 (3 only from colour formats) */
    float scale, bias; /* value = byte * scale + bias */
    fv_dtype dtype;    /* F16 or F32 */
    int c_stored;      /* >= channels; extra lanes written 0 */
    void *out;         /* 1 x height x width x c_stored */
} fv__cuda_pack_args;

typedef struct fv__cuda_unpack_args {
    const void *in;         /* 1 x height x width x c_stored */
    fv_dtype dtype;         /* F16 or F32 */
    int c, c_stored;        /* c is 1 or >= 3 */
    fv_pixel_format format; /* GRAY8, RGB24, BGR24 or RGBA32 */
    int width, height;
    unsigned char *data; /* device-accessible */
    size_t stride;
    int absolute;
    float scale, bias; /* byte = clamp(round(x * scale + bias)) */
} fv__cuda_unpack_args;

fv_status fv__cuda_pack_launch(cudaStream_t stream, const fv__cuda_pack_args *a);
fv_status fv__cuda_unpack_launch(cudaStream_t stream, const fv__cuda_unpack_args *a);

#ifdef __cplusplus
}
#endif
#endif
