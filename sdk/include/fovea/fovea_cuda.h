/* fovea: the CUDA side of a context, for callers who bring their own CUDA
 * work (stream capture into CUDA graphs, events, interop). The only public
 * header that includes CUDA. */
#ifndef FOVEA_CUDA_H
#define FOVEA_CUDA_H

#include <cuda_runtime.h>
#include "fovea/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The stream every op of ctx is queued on. Work the caller puts on it is
 * ordered with fovea's; capturing it (cudaStreamBeginCapture) captures the
 * ops called meanwhile. Returns FV_ERR_BAD_PARAM if an argument is NULL,
 * FV_ERR_NOT_SUPPORTED on a CPU context or a build without CUDA. */
fv_status fv_context_cuda_stream(fv_context *ctx, cudaStream_t *out);

#ifdef __cplusplus
}
#endif
#endif
