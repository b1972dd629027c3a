/* CPU reference backend: internal declarations shared by its files. */
#ifndef FOVEA_CPU_H
#define FOVEA_CPU_H

#include "../../core/internal.h"

/* Element i of a tensor's storage as float (F16, F32 or U8). */
static inline float fv__cpu_load(const fv_tensor *t, size_t i) {
    const void *p = t->data;
    switch (t->shape.dtype) {
    case FV_DTYPE_F32:
        return ((const float *)p)[i];
    case FV_DTYPE_F16:
        return fv_f16_to_f32(((const fv_half *)p)[i]);
    case FV_DTYPE_U8:
        return (float)((const unsigned char *)p)[i];
    }
    return 0.0f;
}

/* Stores v as element i; F32 tensors are rounded to FP16 values when the
 * context asks (FV_CONTEXT_CPU_ROUND_F16). U8 is never an op output. */
static inline void fv__cpu_store(fv_tensor *t, size_t i, float v) {
    void *p = t->data;
    if (t->shape.dtype == FV_DTYPE_F16) {
        ((fv_half *)p)[i] = fv_f32_to_f16(v);
    } else {
        if (t->ctx->flags & FV_CONTEXT_CPU_ROUND_F16) v = fv_round_f16(v);
        ((float *)p)[i] = v;
    }
}

fv_status fv__cpu_conv2d_create(fv_conv2d *op, const float *weights, const float *bias);
void fv__cpu_conv2d_destroy(fv_conv2d *op);
fv_status fv__cpu_conv2d_forward(fv_conv2d *op, const fv_tensor *in, const fv_tensor *res,
                                 fv_tensor *out);
fv_status fv__cpu_pooling2d(fv_context *ctx, const fv_pooling_desc *d, const fv_tensor *in,
                            fv_tensor *out);
fv_status fv__cpu_add(fv_context *ctx, const fv_tensor *a, const fv_tensor *b, fv_tensor *out,
                      fv_activation act, float alpha);
fv_status fv__cpu_pack(fv_context *ctx, const fv_image *src, fv_tensor *dst, const fv_pack_desc *d);
fv_status fv__cpu_unpack(fv_context *ctx, const fv_tensor *src, const fv_image *dst,
                         const fv_unpack_desc *d);
fv_status fv__cpu_edge(fv_context *ctx, const fv_tensor *in, int pairs, const fv_tensor *base,
                       float base_scale, fv_tensor *out, float scale, float threshold);

#endif
