/* CUDA backend ops: the front end (core/ops.c, core/tensor.c) has checked
 * and normalized everything; these map tensors to kernel arguments and
 * launch on the context's compute stream. */
#include "cuda_internal.h"
#include "kernels/elementwise.cuh"
#include "kernels/edge.cuh"
#include "kernels/pack.cuh"
#include "kernels/pooling.cuh"

static size_t pixels_of(const fv_tensor_shape *s) {
    return (size_t)s->n * s->h * s->w;
}

/* Names the op in a launch failure's message. */
static fv_status named(fv_status s, const char *op) {
    return s == FV_OK ? s : fv__error_prefix(s, op);
}

fv_status fv__cuda_convert(fv_context *ctx, fv_tensor *dst, const fv_tensor *src) {
    FV_TRY(fv__cuda_bind(ctx));
    const fv_tensor_shape *d = &dst->shape, *s = &src->shape;
    return named(fv__cuda_convert_launch(fv__cuda_stream(ctx), fv__tensor_ptr(dst), d->dtype,
                                         d->c_stored, fv__tensor_ptr(src), s->dtype, s->c_stored,
                                         s->c, pixels_of(s)),
                 "fv_tensor_convert");
}

fv_status fv__cuda_add(fv_context *ctx, const fv_tensor *a, const fv_tensor *b, fv_tensor *out,
                       fv_activation act, float alpha) {
    FV_TRY(fv__cuda_bind(ctx));
    const fv_tensor_shape *s = &out->shape;
    return named(fv__cuda_add_launch(fv__cuda_stream(ctx), s->dtype, fv__tensor_ptr(a),
                                     fv__tensor_ptr(b), fv__tensor_ptr(out), pixels_of(s), s->c,
                                     s->c_stored, act, alpha),
                 "add");
}

fv_status fv__cuda_pooling2d(fv_context *ctx, const fv_pooling_desc *d, const fv_tensor *in,
                             fv_tensor *out) {
    FV_TRY(fv__cuda_bind(ctx));
    const fv_tensor_shape *si = &in->shape, *so = &out->shape;
    fv__cuda_pooling_args a = {
        .dtype = si->dtype,
        .mode = d->mode,
        .n = si->n,
        .h = si->h,
        .w = si->w,
        .p = so->h,
        .q = so->w,
        .c = si->c,
        .c_stored = si->c_stored,
        .r = d->r,
        .s = d->s,
        .stride_h = d->stride_h,
        .stride_w = d->stride_w,
        .pad_h = d->pad_h,
        .pad_w = d->pad_w,
        .in = fv__tensor_ptr(in),
        .out = fv__tensor_ptr(out),
    };
    return named(fv__cuda_pooling_launch(fv__cuda_stream(ctx), &a), "pooling2d");
}

fv_status fv__cuda_pack(fv_context *ctx, const fv_image *src, fv_tensor *dst,
                        const fv_pack_desc *d) {
    FV_TRY(fv__cuda_bind(ctx));
    fv__cuda_pack_args a = {
        .format = src->format,
        .width = src->width,
        .height = src->height,
        .data = src->data,
        .stride = src->stride,
        .uv = src->uv,
        .uv_stride = src->uv_stride,
        .channels = d->channels,
        .scale = d->scale,
        .bias = d->bias,
        .dtype = dst->shape.dtype,
        .c_stored = dst->shape.c_stored,
        .out = fv__tensor_ptr(dst),
    };
    return named(fv__cuda_pack_launch(fv__cuda_stream(ctx), &a), "image_pack");
}

fv_status fv__cuda_unpack(fv_context *ctx, const fv_tensor *src, const fv_image *dst,
                          const fv_unpack_desc *d) {
    FV_TRY(fv__cuda_bind(ctx));
    fv__cuda_unpack_args a = {
        .in = fv__tensor_ptr(src),
        .dtype = src->shape.dtype,
        .c = src->shape.c,
        .c_stored = src->shape.c_stored,
        .format = dst->format,
        .width = dst->width,
        .height = dst->height,
        .data = dst->data,
        .stride = dst->stride,
        .absolute = d->absolute,
        .scale = d->scale,
        .bias = d->bias,
    };
    return named(fv__cuda_unpack_launch(fv__cuda_stream(ctx), &a), "image_unpack");
}

fv_status fv__cuda_edge(fv_context *ctx, const fv_tensor *in, int pairs, const fv_tensor *base,
                        float base_scale, fv_tensor *out, float scale, float threshold) {
    FV_TRY(fv__cuda_bind(ctx));
    const fv_tensor_shape *si = &in->shape, *so = &out->shape;
    fv__cuda_edge_args a = {
        .pixels = pixels_of(so),
        .in = fv__tensor_ptr(in),
        .in_dtype = si->dtype,
        .in_c = si->c,
        .in_cs = si->c_stored,
        .pairs = pairs,
        .base = base ? fv__tensor_ptr(base) : NULL,
        .base_dtype = base ? base->shape.dtype : FV_DTYPE_F16,
        .base_c = base ? base->shape.c : 0,
        .base_cs = base ? base->shape.c_stored : 0,
        .base_scale = base_scale,
        .out = fv__tensor_ptr(out),
        .out_dtype = so->dtype,
        .out_c = so->c,
        .out_cs = so->c_stored,
        .scale = scale,
        .threshold = threshold,
    };
    return named(fv__cuda_edge_launch(fv__cuda_stream(ctx), &a), "filter edge");
}
