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

/* Queues every op of ctx on the caller's stream s from now on (NULL: back
 * to the context's own). Use it to run fovea on a part of the GPU, e.g. a
 * stream of a CUDA green context (cuGreenCtxStreamCreate) on ctx's device,
 * with that context current on this thread while fovea runs. Waits for the
 * work queued on the previous stream first. s is borrowed: the caller keeps
 * it alive while ctx uses it and destroys it after setting NULL (or after
 * fv_context_destroy, which never destroys it). fv_context_synchronize and
 * fv_context_cuda_stream then mean s.
 * Returns FV_ERR_BAD_PARAM (ctx NULL), FV_ERR_NOT_SUPPORTED (CPU context),
 * FV_ERR_CUDA / FV_ERR_CUDNN (waiting, or binding cuDNN to s, failed). */
fv_status fv_context_cuda_set_stream(fv_context *ctx, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
