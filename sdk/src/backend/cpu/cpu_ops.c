/* CPU backend: 2-D pooling and elementwise add (FP32 arithmetic; outputs
 * stored through fv__cpu_store, so F16 tensors and FV_CONTEXT_CPU_ROUND_F16
 * round to FP16). F16 padding lanes are written zero. */
#include <math.h>
#include "cpu.h"

/* Zeroes the padding lanes [c, c_stored) of pixel pix of an F16 tensor. */
static void zero_lanes(fv_tensor *t, size_t pix) {
    const fv_tensor_shape *s = &t->shape;
    if (s->dtype != FV_DTYPE_F16) return;
    fv_half *h = (fv_half *)t->data + pix * (size_t)s->c_stored;
    for (int c = s->c; c < s->c_stored; c++)
        h[c] = 0;
}

/* One output value: the window's cells clipped to the input [hs, he) x
 * [ws, we), in row-major order. MAX propagates NaN. */
static float pool_cell(const fv_pooling_desc *d, const fv_tensor *in, size_t img, int hs, int he,
                       int ws, int we, int c) {
    const fv_tensor_shape *s = &in->shape;
    const size_t cs = (size_t)s->c_stored;
    float acc = d->mode == FV_POOLING_MAX ? -INFINITY : 0.0f;
    for (int ih = hs; ih < he; ih++)
        for (int iw = ws; iw < we; iw++) {
            float v = fv__cpu_load(in, (img + (size_t)ih * s->w + (size_t)iw) * cs + (size_t)c);
            if (d->mode == FV_POOLING_MAX)
                acc = (v > acc || isnan(v)) && !isnan(acc) ? v : acc;
            else
                acc += v;
        }
    if (d->mode == FV_POOLING_AVG) return acc / (float)((he - hs) * (we - ws));
    if (d->mode == FV_POOLING_AVG_INCLUDE_PAD) return acc / (float)(d->r * d->s);
    return acc;
}

fv_status fv__cpu_pooling2d(fv_context *ctx, const fv_pooling_desc *d, const fv_tensor *in,
                            fv_tensor *out) {
    const fv_tensor_shape *s = &in->shape, *o = &out->shape;
    for (int n = 0; n < s->n; n++) {
        const size_t img = (size_t)n * s->h * s->w;
        for (int p = 0; p < o->h; p++) {
            int h0 = p * d->stride_h - d->pad_h;
            int hs = h0 < 0 ? 0 : h0, he = h0 + d->r > s->h ? s->h : h0 + d->r;
            for (int q = 0; q < o->w; q++) {
                int w0 = q * d->stride_w - d->pad_w;
                int ws = w0 < 0 ? 0 : w0, we = w0 + d->s > s->w ? s->w : w0 + d->s;
                size_t pix = ((size_t)n * o->h + p) * o->w + q;
                for (int c = 0; c < s->c; c++)
                    fv__cpu_store(out, pix * (size_t)o->c_stored + (size_t)c,
                                  pool_cell(d, in, img, hs, he, ws, we, c));
                zero_lanes(out, pix);
            }
        }
    }
    return FV_OK;
}

fv_status fv__cpu_add(fv_context *ctx, const fv_tensor *a, const fv_tensor *b, fv_tensor *out,
                      fv_activation act, float alpha) {
    const fv_tensor_shape *s = &out->shape;
    const size_t pixels = (size_t)s->n * s->h * s->w, cs = (size_t)s->c_stored;
    for (size_t pix = 0; pix < pixels; pix++) {
        for (size_t i = pix * cs; i < pix * cs + (size_t)s->c; i++) {
            /* both loads before the store: out may alias a or b */
            float v = fv__cpu_load(a, i) + fv__cpu_load(b, i);
            fv__cpu_store(out, i, fv__activate(act, alpha, v));
        }
        zero_lanes(out, pix);
    }
    return FV_OK;
}
