/* CUDA backend: fv_net's layer kernels (backend/net_ops.h). Each binds the
 * context's device and launches kernels/net.cu's kernel on the context's
 * compute stream; nothing is allocated or synchronized (capturable). */
#include "cuda_internal.h"
#include "../net_ops.h"
#include "kernels/net.cuh"

/* Names the layer in a failure's message. */
static fv_status named(fv_status s, const char *op) {
    return s == FV_OK ? s : fv__error_prefix(s, op);
}

static fv_status net_act(fv_context *ctx, const fv__view *in, const fv__view *out, int act,
                         float alpha, float beta) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(
        fv__cuda_net_map_launch(fv__cuda_stream(ctx), in, out, NULL, NULL, 0, act, alpha, beta),
        "net activation");
}

static fv_status net_binary(fv_context *ctx, int op, const fv__view *a, const fv__view *b,
                            const fv__view *out, int act, float alpha, float beta) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_net_binary_launch(fv__cuda_stream(ctx), op, a, b, out, act, alpha, beta),
                 "net binary");
}

static fv_status net_affine(fv_context *ctx, const fv__view *in, const fv__view *out,
                            const float *scale, const float *shift, int count, int act, float alpha,
                            float beta) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_net_map_launch(fv__cuda_stream(ctx), in, out, scale, shift, count, act,
                                         alpha, beta),
                 "net affine");
}

static fv_status net_pool(fv_context *ctx, const fv__view *in, const fv__view *out,
                          const fv__pool_params *p) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_net_pool_launch(fv__cuda_stream(ctx), in, out, p), "net pool");
}

static fv_status net_global_pool(fv_context *ctx, const fv__view *in, const fv__view *out,
                                 int avg) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_net_global_pool_launch(fv__cuda_stream(ctx), in, out, avg),
                 "net global_pool");
}

static fv_status net_softmax(fv_context *ctx, const fv__view *in, const fv__view *out) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_net_softmax_launch(fv__cuda_stream(ctx), in, out), "net softmax");
}

static fv_status net_copy(fv_context *ctx, const fv__view *in, const fv__view *out) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_net_map_launch(fv__cuda_stream(ctx), in, out, NULL, NULL, 0,
                                         FV_ACT_IDENTITY, 0.0f, 0.0f),
                 "net copy");
}

static fv_status net_resize(fv_context *ctx, const fv__view *in, const fv__view *out,
                            const fv__resize_params *p) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_net_resize_launch(fv__cuda_stream(ctx), in, out, p), "net resize");
}

static fv_status net_pad(fv_context *ctx, const fv__view *in, const fv__view *out, int top,
                         int left, float value) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_net_pad_launch(fv__cuda_stream(ctx), in, out, top, left, value),
                 "net pad");
}

static fv_status net_reshape(fv_context *ctx, const fv__view *in, const fv__view *out) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_net_reshape_launch(fv__cuda_stream(ctx), in, out), "net reshape");
}

static fv_status net_conv_transpose(fv_context *ctx, const fv__view *in, const fv__view *out,
                                    const fv__convt_params *p, const float *weights,
                                    const float *bias) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_net_convt_launch(fv__cuda_stream(ctx), in, out, p, weights, bias),
                 "net conv_transpose");
}

/* cuda_fc.c */
fv_status fv__cuda_fc_create(fv_context *ctx, const fv__view *in, const fv__view *out, int k,
                             const float *weights, const float *bias, int act, fv__fc **res);
fv_status fv__cuda_fc_run(fv_context *ctx, fv__fc *fc, const fv__view *in, const fv__view *out);
void fv__cuda_fc_destroy(fv_context *ctx, fv__fc *fc);
const char *fv__cuda_fc_engine(const fv__fc *fc);

static fv_status net_fc_run(fv_context *ctx, fv__fc *fc, const fv__view *in, const fv__view *out) {
    FV_TRY(fv__cuda_bind(ctx));
    return named(fv__cuda_fc_run(ctx, fc, in, out), "net fc");
}

const fv__net_ops fv__net_ops_cuda = {
    .act = net_act,
    .binary = net_binary,
    .affine = net_affine,
    .pool = net_pool,
    .global_pool = net_global_pool,
    .softmax = net_softmax,
    .copy = net_copy,
    .resize = net_resize,
    .pad = net_pad,
    .reshape = net_reshape,
    .conv_transpose = net_conv_transpose,
    .fc_create = fv__cuda_fc_create,
    .fc_run = net_fc_run,
    .fc_prepare = fv__cuda_fc_prepare,
    .fc_destroy = fv__cuda_fc_destroy,
    .fc_engine = fv__cuda_fc_engine,
};
