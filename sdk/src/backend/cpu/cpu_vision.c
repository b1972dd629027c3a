/* CPU backend: the vision ops' kernels (backend/vision_ops.h), the
 * reference the CUDA kernels are tested against. The per-pixel rules are
 * vision_math.h's, shared with CUDA; values are stored through st() as
 * cpu_net.c does (F16 converts; F32 rounds to FP16 values under
 * FV_CONTEXT_CPU_ROUND_F16). */
#include <math.h>
#include "cpu.h"
#include "../vision_ops.h"

static inline float ld(const fv__view *v, size_t i) {
    if (v->dtype == FV_DTYPE_F16) return fv_f16_to_f32(((const fv_half *)v->data)[i]);
    return ((const float *)v->data)[i];
}

static inline void st(const fv__view *v, int round, size_t i, float x) {
    if (v->dtype == FV_DTYPE_F16)
        ((fv_half *)v->data)[i] = fv_f32_to_f16(x);
    else
        ((float *)v->data)[i] = round ? fv_round_f16(x) : x;
}

/* Values as ranked: NaN below everything (the CUDA kernels use the same key). */
static inline float key(float x) {
    return isnan(x) ? -INFINITY : x;
}

static fv_status cpu_preprocess(fv_context *ctx, const fv__pre_params *p, const fv__view *out,
                                int index) {
    const int round = (ctx->flags & FV_CONTEXT_CPU_ROUND_F16) != 0;
    for (int y = 0; y < out->h; y++)
        for (int x = 0; x < out->w; x++) {
            size_t o = (((size_t)index * out->h + (size_t)y) * out->w + (size_t)x) * out->ps;
            float v[3];
            fv__pre_pixel(p, x, y, v);
            for (int c = 0; c < out->c; c++)
                st(out, round, o + (size_t)c, v[c]);
            for (int c = out->c; c < out->cw; c++)
                st(out, 0, o + (size_t)c, 0.0f);
        }
    return FV_OK;
}

static fv_status cpu_topk(fv_context *ctx, const fv__view *in, int k, int softmax,
                          fv_class_score *out) {
    for (int b = 0; b < in->n; b++) {
        const size_t base = (size_t)b * in->ps;
        fv_class_score *r = out + (size_t)b * k;
        int have = 0;
        float mx = -INFINITY;
        for (int c = 0; c < in->c; c++) {
            float x = key(ld(in, base + (size_t)c));
            mx = x > mx ? x : mx;
            if (have == k && !(x > r[k - 1].score)) continue;
            /* insert after every kept value >= x (those have lower indices) */
            int at = have < k ? have : k - 1;
            while (at > 0 && r[at - 1].score < x) {
                r[at] = r[at - 1];
                at--;
            }
            r[at] = (fv_class_score){c, x};
            if (have < k) have++;
        }
        if (!softmax) continue;
        float sum = 0.0f;
        for (int c = 0; c < in->c; c++)
            sum += expf(key(ld(in, base + (size_t)c)) - mx);
        for (int i = 0; i < k; i++)
            r[i].score = expf(r[i].score - mx) / sum;
    }
    return FV_OK;
}

static fv_status cpu_argmax(fv_context *ctx, const fv__view *in, int index,
                            unsigned char *classes) {
    const size_t plane = (size_t)in->h * in->w;
    for (size_t i = 0; i < plane; i++) {
        size_t o = ((size_t)index * plane + i) * in->ps;
        int best = 0;
        float bv = key(ld(in, o));
        for (int c = 1; c < in->c; c++) {
            float x = key(ld(in, o + (size_t)c));
            if (x > bv) bv = x, best = c;
        }
        classes[i] = (unsigned char)best;
    }
    return FV_OK;
}

static fv_status cpu_seg_blend(fv_context *ctx, const fv__seg_params *p) {
    for (int y = 0; y < p->out_h; y++) {
        unsigned char *row = p->out + (size_t)y * p->out_stride;
        for (int x = 0; x < p->out_w; x++) {
            unsigned char rgb[3];
            fv__seg_pixel(p, x, y, rgb);
            fv__seg_store(p->out_format, row, x, rgb);
        }
    }
    return FV_OK;
}

const fv__vision_ops fv__vision_ops_cpu = {
    .preprocess = cpu_preprocess,
    .topk = cpu_topk,
    .argmax = cpu_argmax,
    .seg_blend = cpu_seg_blend,
};
