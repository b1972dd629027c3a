/* CPU backend: fv_net's layer kernels (backend/net_ops.h), the FP32
 * reference. Every value is computed in FP32 and stored through st(): F16
 * views convert, F32 views round to FP16 values with
 * FV_CONTEXT_CPU_ROUND_F16. Loops walk channels innermost (NHWC); kernels
 * that accumulate over several pixels do it in blocks of channels held in a
 * stack array, so nothing is allocated. */
#include <math.h>
#include "fovea/net.h"
#include "cpu.h"
#include "../activation.h"
#include "../net_math.h"
#include "../net_ops.h"

enum { BLOCK = 128 }; /* channels accumulated at once */

static inline float ld(const fv__view *v, size_t i) {
    if (v->dtype == FV_DTYPE_F16) return fv_f16_to_f32(((const fv_half *)v->data)[i]);
    return ((const float *)v->data)[i];
}

/* round: the context asks for FP16 values in F32 views. */
static inline void st(const fv__view *v, int round, size_t i, float x) {
    if (v->dtype == FV_DTYPE_F16)
        ((fv_half *)v->data)[i] = fv_f32_to_f16(x);
    else
        ((float *)v->data)[i] = round ? fv_round_f16(x) : x;
}

static int rounds(const fv_context *ctx) {
    return (ctx->flags & FV_CONTEXT_CPU_ROUND_F16) != 0;
}

/* Offset of pixel (b, y, x)'s channel 0. */
static inline size_t at(const fv__view *v, int b, int y, int x) {
    return (((size_t)b * v->h + (size_t)y) * v->w + (size_t)x) * (size_t)v->ps;
}

/* Zeroes channels [c, cw) of the pixel at offset o. */
static inline void zero_tail(const fv__view *v, size_t o) {
    for (int ch = v->c; ch < v->cw; ch++)
        st(v, 0, o + (size_t)ch, 0.0f);
}

static fv_status net_act(fv_context *ctx, const fv__view *in, const fv__view *out, int act,
                         float alpha, float beta) {
    const int round = rounds(ctx);
    for (int b = 0; b < out->n; b++)
        for (int y = 0; y < out->h; y++)
            for (int x = 0; x < out->w; x++) {
                size_t i = at(in, b, y, x), o = at(out, b, y, x);
                for (int ch = 0; ch < out->c; ch++)
                    st(out, round, o + ch, fv__act2(act, alpha, beta, ld(in, i + ch)));
                zero_tail(out, o);
            }
    return FV_OK;
}

static inline float binop(int op, float a, float b) {
    switch (op) {
    case FV_NET_SUB:
        return a - b;
    case FV_NET_MUL:
        return a * b;
    case FV_NET_DIV:
        return a / b;
    default:
        return a + b;
    }
}

/* Offset of out's pixel (b, y, x) in v, a broadcast operand (a size-1
 * dimension always reads index 0). */
static inline size_t at_bcast(const fv__view *v, int b, int y, int x) {
    return at(v, v->n == 1 ? 0 : b, v->h == 1 ? 0 : y, v->w == 1 ? 0 : x);
}

static fv_status net_binary(fv_context *ctx, int op, const fv__view *a, const fv__view *b,
                            const fv__view *out, int act, float alpha, float beta) {
    const int round = rounds(ctx);
    const size_t sa = a->c == 1 ? 0 : 1, sb = b->c == 1 ? 0 : 1;
    for (int n = 0; n < out->n; n++)
        for (int y = 0; y < out->h; y++)
            for (int x = 0; x < out->w; x++) {
                size_t ia = at_bcast(a, n, y, x), ib = at_bcast(b, n, y, x);
                size_t o = at(out, n, y, x);
                /* both loads come before the store: out may be a or b */
                for (size_t ch = 0; ch < (size_t)out->c; ch++) {
                    float v = binop(op, ld(a, ia + ch * sa), ld(b, ib + ch * sb));
                    st(out, round, o + ch, fv__act2(act, alpha, beta, v));
                }
                zero_tail(out, o);
            }
    return FV_OK;
}

static fv_status net_affine(fv_context *ctx, const fv__view *in, const fv__view *out,
                            const float *scale, const float *shift, int count, int act, float alpha,
                            float beta) {
    const int round = rounds(ctx);
    const size_t sp = count == 1 ? 0 : 1;
    for (int b = 0; b < out->n; b++)
        for (int y = 0; y < out->h; y++)
            for (int x = 0; x < out->w; x++) {
                size_t i = at(in, b, y, x), o = at(out, b, y, x);
                for (size_t ch = 0; ch < (size_t)out->c; ch++) {
                    float v = ld(in, i + ch) * scale[ch * sp] + shift[ch * sp];
                    st(out, round, o + ch, fv__act2(act, alpha, beta, v));
                }
                zero_tail(out, o);
            }
    return FV_OK;
}

/* Taps of one window dimension: start + i * dil for i < k. Counts those
 * inside [0, size) (*in) and inside [-pad, size + pad) (*padded): for
 * dilation 1 the latter is PyTorch's count_include_pad divisor,
 * min(start + k, size + pad) - start (start >= -pad always). */
static void count_taps(int start, int k, int dil, int size, int pad, int *in, int *padded) {
    *in = *padded = 0;
    for (int i = 0; i < k; i++) {
        int t = start + i * dil;
        *in += t >= 0 && t < size;
        *padded += t >= -pad && t < size + pad;
    }
}

static fv_status net_pool(fv_context *ctx, const fv__view *in, const fv__view *out,
                          const fv__pool_params *p) {
    const int round = rounds(ctx);
    const int max = p->mode == FV_NET_POOL_MAX;
    float acc[BLOCK];
    for (int b = 0; b < out->n; b++)
        for (int oy = 0; oy < out->h; oy++) {
            const int y0 = oy * p->stride_h - p->pad_top;
            int ny, py;
            count_taps(y0, p->r, p->dilation_h, in->h, p->pad_top, &ny, &py);
            for (int ox = 0; ox < out->w; ox++) {
                const int x0 = ox * p->stride_w - p->pad_left;
                int nx, px;
                count_taps(x0, p->s, p->dilation_w, in->w, p->pad_left, &nx, &px);
                const int cells = p->mode == FV_NET_POOL_AVG ? ny * nx : py * px;
                const float div = cells > 0 ? (float)cells : 1.0f;
                const size_t o = at(out, b, oy, ox);
                for (int c0 = 0; c0 < out->c; c0 += BLOCK) {
                    const int nc = out->c - c0 < BLOCK ? out->c - c0 : BLOCK;
                    for (int j = 0; j < nc; j++)
                        acc[j] = max ? -INFINITY : 0.0f;
                    for (int ky = 0; ky < p->r; ky++) {
                        const int iy = y0 + ky * p->dilation_h;
                        if (iy < 0 || iy >= in->h) continue;
                        for (int kx = 0; kx < p->s; kx++) {
                            const int ix = x0 + kx * p->dilation_w;
                            if (ix < 0 || ix >= in->w) continue;
                            const size_t i = at(in, b, iy, ix) + (size_t)c0;
                            for (int j = 0; j < nc; j++) {
                                float v = ld(in, i + j);
                                if (!max)
                                    acc[j] += v;
                                else if ((v > acc[j] || isnan(v)) && !isnan(acc[j]))
                                    acc[j] = v; /* NaN propagates, as in PyTorch */
                            }
                        }
                    }
                    for (int j = 0; j < nc; j++)
                        st(out, round, o + c0 + j, max ? acc[j] : acc[j] / div);
                }
                zero_tail(out, o);
            }
        }
    return FV_OK;
}

static fv_status net_global_pool(fv_context *ctx, const fv__view *in, const fv__view *out,
                                 int avg) {
    const int round = rounds(ctx);
    const size_t pixels = (size_t)in->h * in->w;
    float acc[BLOCK];
    for (int b = 0; b < in->n; b++) {
        const size_t o = at(out, b, 0, 0), i0 = at(in, b, 0, 0);
        for (int c0 = 0; c0 < in->c; c0 += BLOCK) {
            const int nc = in->c - c0 < BLOCK ? in->c - c0 : BLOCK;
            for (int j = 0; j < nc; j++)
                acc[j] = avg ? 0.0f : -INFINITY;
            for (size_t p = 0; p < pixels; p++) {
                const size_t i = i0 + p * (size_t)in->ps + (size_t)c0;
                for (int j = 0; j < nc; j++) {
                    float v = ld(in, i + j);
                    if (avg)
                        acc[j] += v;
                    else if ((v > acc[j] || isnan(v)) && !isnan(acc[j]))
                        acc[j] = v;
                }
            }
            for (int j = 0; j < nc; j++)
                st(out, round, o + c0 + j, avg ? acc[j] / (float)pixels : acc[j]);
        }
        zero_tail(out, o);
    }
    return FV_OK;
}

static fv_status net_softmax(fv_context *ctx, const fv__view *in, const fv__view *out) {
    const int round = rounds(ctx);
    for (int b = 0; b < out->n; b++)
        for (int y = 0; y < out->h; y++)
            for (int x = 0; x < out->w; x++) {
                const size_t i = at(in, b, y, x), o = at(out, b, y, x);
                float m = -INFINITY, sum = 0.0f;
                for (int ch = 0; ch < out->c; ch++)
                    m = fmaxf(m, ld(in, i + ch));
                for (int ch = 0; ch < out->c; ch++)
                    sum += expf(ld(in, i + ch) - m);
                /* channel ch is read before it is written: in place is safe */
                for (int ch = 0; ch < out->c; ch++)
                    st(out, round, o + ch, expf(ld(in, i + ch) - m) / sum);
                zero_tail(out, o);
            }
    return FV_OK;
}

static fv_status net_copy(fv_context *ctx, const fv__view *in, const fv__view *out) {
    const int round = rounds(ctx);
    for (int b = 0; b < out->n; b++)
        for (int y = 0; y < out->h; y++)
            for (int x = 0; x < out->w; x++) {
                const size_t i = at(in, b, y, x), o = at(out, b, y, x);
                for (int ch = 0; ch < out->c; ch++)
                    st(out, round, o + ch, ld(in, i + ch));
                zero_tail(out, o);
            }
    return FV_OK;
}

/* Bilinear taps: f clamped to [0, in - 1], i0 = floor, i1 = the next one
 * (or i0 at the edge), l the fraction toward i1. */
static void resize_linear(float f, int in, int *i0, int *i1, float *l) {
    f = fminf(fmaxf(f, 0.0f), (float)(in - 1));
    *i0 = (int)f;
    *i1 = *i0 + 1 < in ? *i0 + 1 : *i0;
    *l = f - (float)*i0;
}

static fv_status net_resize(fv_context *ctx, const fv__view *in, const fv__view *out,
                            const fv__resize_params *p) {
    const int round = rounds(ctx);
    for (int b = 0; b < out->n; b++)
        for (int oy = 0; oy < out->h; oy++) {
            const float fy = fv__resize_src(p->coord, oy, in->h, out->h, p->scale_h);
            int y0, y1 = 0;
            float ly = 0.0f;
            if (p->mode == FV_NET_RESIZE_NEAREST)
                y0 = fv__resize_nearest(p->nearest, fy, in->h);
            else
                resize_linear(fy, in->h, &y0, &y1, &ly);
            for (int ox = 0; ox < out->w; ox++) {
                const float fx = fv__resize_src(p->coord, ox, in->w, out->w, p->scale_w);
                const size_t o = at(out, b, oy, ox);
                if (p->mode == FV_NET_RESIZE_NEAREST) {
                    const size_t i = at(in, b, y0, fv__resize_nearest(p->nearest, fx, in->w));
                    for (int ch = 0; ch < out->c; ch++)
                        st(out, round, o + ch, ld(in, i + ch));
                } else {
                    int x0, x1;
                    float lx;
                    resize_linear(fx, in->w, &x0, &x1, &lx);
                    const size_t i00 = at(in, b, y0, x0), i01 = at(in, b, y0, x1);
                    const size_t i10 = at(in, b, y1, x0), i11 = at(in, b, y1, x1);
                    for (int ch = 0; ch < out->c; ch++) {
                        /* PyTorch's upsample_bilinear2d order */
                        float top = (1.0f - lx) * ld(in, i00 + ch) + lx * ld(in, i01 + ch);
                        float bot = (1.0f - lx) * ld(in, i10 + ch) + lx * ld(in, i11 + ch);
                        st(out, round, o + ch, (1.0f - ly) * top + ly * bot);
                    }
                }
                zero_tail(out, o);
            }
        }
    return FV_OK;
}

static fv_status net_pad(fv_context *ctx, const fv__view *in, const fv__view *out, int top,
                         int left, float value) {
    const int round = rounds(ctx);
    for (int b = 0; b < out->n; b++)
        for (int y = 0; y < out->h; y++)
            for (int x = 0; x < out->w; x++) {
                const int iy = y - top, ix = x - left;
                const int inside = iy >= 0 && iy < in->h && ix >= 0 && ix < in->w;
                const size_t o = at(out, b, y, x);
                const size_t i = inside ? at(in, b, iy, ix) : 0;
                for (int ch = 0; ch < out->c; ch++)
                    st(out, round, o + ch, inside ? ld(in, i + ch) : value);
                zero_tail(out, o);
            }
    return FV_OK;
}

static fv_status net_reshape(fv_context *ctx, const fv__view *in, const fv__view *out) {
    const int round = rounds(ctx);
    const size_t ic = (size_t)in->c, ih = (size_t)in->h, iw = (size_t)in->w;
    for (int b = 0; b < out->n; b++)
        for (int y = 0; y < out->h; y++)
            for (int x = 0; x < out->w; x++) {
                const size_t o = at(out, b, y, x);
                for (int ch = 0; ch < out->c; ch++) {
                    size_t f = (((size_t)b * out->c + ch) * out->h + y) * out->w + x;
                    const size_t sx = f % iw, sy = (f /= iw) % ih, sc = (f /= ih) % ic;
                    const size_t sb = f / ic;
                    st(out, round, o + ch, ld(in, at(in, (int)sb, (int)sy, (int)sx) + sc));
                }
                zero_tail(out, o);
            }
    return FV_OK;
}

/* Gathers every output value: (oy, ox) takes input (iy, ix) through tap
 * (r, s) when iy * stride - pad + r * dilation == oy (same for x). */
static fv_status net_conv_transpose(fv_context *ctx, const fv__view *in, const fv__view *out,
                                    const fv__convt_params *p, const float *weights,
                                    const float *bias) {
    const int round = rounds(ctx);
    const int cg = in->c / p->groups, kg = out->c / p->groups;
    const size_t rs = (size_t)p->r * (size_t)p->s;
    float acc[BLOCK];
    for (int b = 0; b < out->n; b++)
        for (int oy = 0; oy < out->h; oy++)
            for (int ox = 0; ox < out->w; ox++) {
                const size_t o = at(out, b, oy, ox);
                for (int g = 0; g < p->groups; g++)
                    for (int k0 = 0; k0 < kg; k0 += BLOCK) {
                        const int nk = kg - k0 < BLOCK ? kg - k0 : BLOCK;
                        const int kbase = g * kg + k0;
                        for (int j = 0; j < nk; j++)
                            acc[j] = bias ? bias[kbase + j] : 0.0f;
                        for (int r = 0; r < p->r; r++) {
                            const int ty = oy + p->pad_top - r * p->dilation_h;
                            if (ty < 0 || ty % p->stride_h) continue;
                            const int iy = ty / p->stride_h;
                            if (iy >= in->h) continue;
                            for (int s = 0; s < p->s; s++) {
                                const int tx = ox + p->pad_left - s * p->dilation_w;
                                if (tx < 0 || tx % p->stride_w) continue;
                                const int ix = tx / p->stride_w;
                                if (ix >= in->w) continue;
                                const size_t i = at(in, b, iy, ix);
                                for (int c = g * cg; c < (g + 1) * cg; c++) {
                                    const float v = ld(in, i + (size_t)c);
                                    /* W[c][k0 + j][r][s] */
                                    const float *wp =
                                        weights + ((size_t)c * kg + k0) * rs + (size_t)r * p->s + s;
                                    for (int j = 0; j < nk; j++)
                                        acc[j] += v * wp[j * rs];
                                }
                            }
                        }
                        for (int j = 0; j < nk; j++)
                            st(out, round, o + kbase + j,
                               fv__act2(p->act, p->alpha, p->beta, acc[j]));
                    }
                zero_tail(out, o);
            }
    return FV_OK;
}

const fv__net_ops fv__net_ops_cpu = {
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
};
