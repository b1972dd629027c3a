/* Elementwise kernels: dtype conversion and add + activation. Host
 * launchers callable from C; each checks its arguments, launches on the
 * given stream and returns the launch error as an fv_status. Padding
 * channels (c .. c_stored-1) of every output are written zero. */
#ifndef FOVEA_KERNELS_ELEMENTWISE_CUH
#define FOVEA_KERNELS_ELEMENTWISE_CUH

#include <cuda_runtime.h>
#include "../../../core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[p][ch] = src[p][ch] for ch < c over pixels pixels; F32 <-> F16 (round
 * to nearest even), U8 -> F16/F32. src_cs, dst_cs: channels as stored. */
fv_status fv__cuda_convert_launch(cudaStream_t stream, void *dst, fv_dtype dst_type, int dst_cs,
                                  const void *src, fv_dtype src_type, int src_cs, int c,
                                  size_t pixels);

/* out = act(a + b) on F16 or F32 tensors of pixels x c_stored elements;
 * alpha normalized. out may alias a or b. */
fv_status fv__cuda_add_launch(cudaStream_t stream, fv_dtype dtype, const void *a, const void *b,
                              void *out, size_t pixels, int c, int c_stored, fv_activation act,
                              float alpha);

/* Whether this build's kernels can run on the current device:
 * cudaSuccess, or cudaErrorNoKernelImageForDevice / cudaErrorInvalidDeviceFunction
 * (or another error) when not. Clears nothing; the caller does. */
cudaError_t fv__cuda_kernels_probe(void);

#ifdef __cplusplus
}
#endif
#endif
