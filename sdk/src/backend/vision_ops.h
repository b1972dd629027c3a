/* The vision ops' kernels (fovea/preprocess.h, fovea/postprocess.h): one
 * table per backend (cpu/cpu_vision.c, cuda/cuda_vision.c over
 * cuda/kernels/vision.cu). The front ends (core/preprocess.c,
 * core/postprocess.c) check every argument and fill the parameter structs
 * of vision_math.h, so kernels may assume valid input. Every kernel is
 * asynchronous on the context's stream on CUDA, allocates nothing and
 * synchronizes nothing (capturable). Not installed. */
#ifndef FOVEA_VISION_OPS_H
#define FOVEA_VISION_OPS_H

#include "fovea/fovea.h"
#include "fovea/postprocess.h"
#include "../core/internal.h"
#include "net_ops.h"
#include "vision_math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fv__vision_ops {
    /* Item `index` of out (c 1 or 3, cw >= c: zeros in [c, cw)), every
     * pixel by fv__pre_pixel. */
    fv_status (*preprocess)(fv_context *ctx, const fv__pre_params *p, const fv__view *out,
                            int index);
    /* For every item b of logits (n, 1, 1, c): the k (1 .. c) largest
     * values, ties to the lower index, into out[b * k .. b * k + k - 1]
     * (backend memory), best first; scores are the values, or with softmax
     * exp(x - max) / sum over c of exp(x - max). */
    fv_status (*topk)(fv_context *ctx, const fv__view *logits, int k, int softmax,
                      fv_class_score *out);
    /* Argmax over c (ties to the lower class) of every pixel of item
     * `index` of logits, into classes (h x w bytes, backend memory); c <= 256. */
    fv_status (*argmax)(fv_context *ctx, const fv__view *logits, int index, unsigned char *classes);
    /* Every pixel of p->out by fv__seg_pixel / fv__seg_store. */
    fv_status (*seg_blend)(fv_context *ctx, const fv__seg_params *p);
} fv__vision_ops;

extern const fv__vision_ops fv__vision_ops_cpu;
#if FV_BUILT_WITH_CUDA
extern const fv__vision_ops fv__vision_ops_cuda;
#endif

static inline const fv__vision_ops *fv__vision_ops_of(const fv_context *ctx) {
#if FV_BUILT_WITH_CUDA
    if (ctx->backend == FV_BACKEND_CUDA) return &fv__vision_ops_cuda;
#endif
    (void)ctx;
    return &fv__vision_ops_cpu;
}

#ifdef __cplusplus
}
#endif
#endif
