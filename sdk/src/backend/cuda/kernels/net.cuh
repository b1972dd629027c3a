/* fv_net's layer kernels (backend/net_ops.h) on NHWC views. Host launchers
 * callable from C: each checks its views, launches on the given stream
 * (nothing allocated, nothing synchronized: capturable) and returns the
 * launch error. Views are F16 or F32, all of one dtype per call; every
 * output writes channels [0, c), zeros in [c, cw) and nothing in [cw, ps).
 * FV_ERR_NOT_SUPPORTED for another dtype or a view over 2^31 elements,
 * FV_ERR_INTERNAL for arguments the net's front end should have refused. */
#ifndef FOVEA_KERNELS_NET_CUH
#define FOVEA_KERNELS_NET_CUH

#include <cuda_runtime.h>
#include "../../net_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = act(in * scale[ch] + shift[ch]) (count 1: scale[0], shift[0]);
 * scale and shift NULL: out = act(in) (the act and copy layers). Same
 * n, h, w, c; out may be in. */
fv_status fv__cuda_net_map_launch(cudaStream_t stream, const fv__view *in, const fv__view *out,
                                  const float *scale, const float *shift, int count, int act,
                                  float alpha, float beta);
/* out = act(a op b), a and b broadcast to out (size 1 dimensions). */
fv_status fv__cuda_net_binary_launch(cudaStream_t stream, int op, const fv__view *a,
                                     const fv__view *b, const fv__view *out, int act, float alpha,
                                     float beta);
fv_status fv__cuda_net_pool_launch(cudaStream_t stream, const fv__view *in, const fv__view *out,
                                   const fv__pool_params *p);
fv_status fv__cuda_net_global_pool_launch(cudaStream_t stream, const fv__view *in,
                                          const fv__view *out, int avg);
fv_status fv__cuda_net_softmax_launch(cudaStream_t stream, const fv__view *in, const fv__view *out);
fv_status fv__cuda_net_resize_launch(cudaStream_t stream, const fv__view *in, const fv__view *out,
                                     const fv__resize_params *p);
fv_status fv__cuda_net_pad_launch(cudaStream_t stream, const fv__view *in, const fv__view *out,
                                  int top, int left, float value);
fv_status fv__cuda_net_reshape_launch(cudaStream_t stream, const fv__view *in, const fv__view *out);
/* weights: device FP32, C x K/groups x R x S; bias: device FP32 K values or
 * NULL. */
fv_status fv__cuda_net_convt_launch(cudaStream_t stream, const fv__view *in, const fv__view *out,
                                    const fv__convt_params *p, const float *weights,
                                    const float *bias);

#ifdef __cplusplus
}
#endif
#endif
