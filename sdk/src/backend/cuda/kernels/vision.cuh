/* The vision ops' kernels (backend/vision_ops.h): pre-processing (camera
 * pixels -> resized, normalised NHWC batch item), top-K with softmax, the
 * per-pixel argmax and the segmentation overlay. Host launchers callable
 * from C: each launches on the given stream (nothing allocated, nothing
 * synchronized: capturable) and returns the launch error; FV_ERR_INTERNAL
 * for arguments the front end should have refused. The per-pixel
 * arithmetic is backend/vision_math.h's, shared with the CPU backend. */
#ifndef FOVEA_KERNELS_VISION_CUH
#define FOVEA_KERNELS_VISION_CUH

#include <cuda_runtime.h>
#include "../../vision_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

fv_status fv__cuda_preprocess_launch(cudaStream_t stream, const fv__pre_params *p,
                                     const fv__view *out, int index);
fv_status fv__cuda_topk_launch(cudaStream_t stream, const fv__view *logits, int k, int softmax,
                               fv_class_score *out);
fv_status fv__cuda_argmax_launch(cudaStream_t stream, const fv__view *logits, int index,
                                 unsigned char *classes);
fv_status fv__cuda_seg_blend_launch(cudaStream_t stream, const fv__seg_params *p);

#ifdef __cplusplus
}
#endif
#endif
