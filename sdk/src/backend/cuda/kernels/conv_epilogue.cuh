/* Convolution epilogue on FP16 NHWC outputs: y = act(y + bias + z) on the
 * first k of kp channels of each pixel, 0 on the padding lanes [k, kp)
 * (z: a residual, dense with kp channels a pixel, or NULL). ys: y's pixel
 * stride in elements (kp for a dense y; more for a channel slice of a wider
 * tensor, whose other channels are left alone), a multiple of 8. With bias
 * and z NULL and FV_ACT_IDENTITY only the padding lanes are written. */
#ifndef FOVEA_CONV_EPILOGUE_CUH
#define FOVEA_CONV_EPILOGUE_CUH

#include <cuda_runtime.h>
#include "../../../core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* early: launch as a programmatic dependent of the kernel before it on the
 * stream (SM 9.0+, CUDA 12.3+; ignored elsewhere): its blocks are scheduled
 * while that kernel drains and wait for its results (griddepcontrol.wait),
 * which hides the launch gap between a convolution and its epilogue. */
fv_status fv__cuda_conv_epilogue(cudaStream_t stream, void *y, size_t pixels, int kp, int ys, int k,
                                 const void *bias, const void *z, fv_activation act, float alpha,
                                 int early);

#ifdef __cplusplus
}
#endif
#endif
