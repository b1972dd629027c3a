/* CUDA backend: the vision ops' kernels (backend/vision_ops.h). Each binds
 * the context's device and launches kernels/vision.cu's kernel on the
 * context's compute stream; nothing is allocated or synchronized
 * (capturable). */
#include "cuda_internal.h"
#include "../vision_ops.h"
#include "kernels/vision.cuh"

static fv_status named(fv_status s, const char *op) {
    return s == FV_OK ? s : fv__error_prefix(s, op);
}

static fv_status cuda_preprocess(fv_context *ctx, const fv__pre_params *p, const fv__view *out,
                                 int index) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_preprocess_launch(fv__cuda_stream(ctx), p, out, index), "preprocess");
}

static fv_status cuda_topk(fv_context *ctx, const fv__view *in, int k, int softmax,
                           fv_class_score *out) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_topk_launch(fv__cuda_stream(ctx), in, k, softmax, out), "classify");
}

static fv_status cuda_argmax(fv_context *ctx, const fv__view *in, int index,
                             unsigned char *classes) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_argmax_launch(fv__cuda_stream(ctx), in, index, classes),
                 "segment argmax");
}

static fv_status cuda_seg_blend(fv_context *ctx, const fv__seg_params *p) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_seg_blend_launch(fv__cuda_stream(ctx), p), "segment blend");
}

const fv__vision_ops fv__vision_ops_cuda = {
    .preprocess = cuda_preprocess,
    .topk = cuda_topk,
    .argmax = cuda_argmax,
    .seg_blend = cuda_seg_blend,
};
