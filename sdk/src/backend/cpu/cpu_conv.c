/* CPU backend: FP32 NHWC conv2d (cross-correlation, as PyTorch).
 *
 * Two paths, both vectorized along the output row (x) by the compiler:
 * - stencil: F32, C = K = 1, stride_w 1 (image filters). Reads input rows
 *   in place; the interior of each output row is a sum of taps over
 *   contiguous runs, the few border pixels are done separately.
 * - planar: everything else. Input rows are converted once into a ring of
 *   float rows stored planar ([c][x], zero padded by pad_w on both sides),
 *   so every tap of every output channel is a contiguous (or strided) run;
 *   outputs accumulate in a K x Q float buffer, then are activated and
 *   stored NHWC.
 * Each output is bias + a sum of products in FP32, in a fixed order that
 * does not depend on the CPU's vector width (no FMA contraction), so every
 * machine gives the same bits (sigmoid and tanh aside: they come from the C
 * library). All buffers are carved from the context's HOST pool at create;
 * forward allocates nothing. */
#include <stdlib.h>
#include <string.h>
#include "cpu.h"

/* Clones of the hot loops for AVX-512 and AVX2, chosen at load time
 * (ifunc); the rest of the build stays baseline x86-64 (or aarch64, where
 * NEON is baseline). Every clone does the same float operations per element
 * in the same order, so they give the same bits. Not under ThreadSanitizer:
 * the ifunc resolvers run while the dynamic loader relocates the library,
 * before TSan's runtime is up, and its instrumentation of them crashes. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FV__TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define FV__TSAN 1
#endif
#if defined(__x86_64__) && defined(__GNUC__) && defined(__GLIBC__) && defined(__has_attribute) &&  \
    !defined(FV__TSAN)
#if __has_attribute(target_clones)
#define FV_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef FV_CLONES
#define FV_CLONES
#endif

enum { PATH_STENCIL = 0, PATH_PLANAR = 1 };
enum { MAX_TAPS = 9 };

typedef struct cpu_conv {
    fv_pool *pool;
    void *block; /* the one carve-out holding everything below */
    int path;
    float *w;      /* KCRS (C per group), FP16-rounded when asked */
    float *bias;   /* K (zeros without bias) */
    float *ring;   /* planar: span slots of C planes of `plane` floats */
    float *acc;    /* planar: K x Q */
    fv_half *hin;  /* planar, F16 input: one input row, planar */
    fv_half *hout; /* planar, F16 output: K x Q */
    size_t plane;  /* floats per channel plane of a ring slot */
    int span;      /* ring slots: rows one output row can touch */
    int *tags;     /* ring slot -> n * H + ih held, -1 when none */
    int round_f16; /* F32 outputs rounded to FP16 values */
} cpu_conv;

/* ---- FP16 <-> FP32, bit-exact with fv_f16_to_f32 / fv_f32_to_f16, but
 * branch-free so loops over them vectorize. (Needs subnormals not flushed:
 * the FPU's default mode.) ------------------------------------------------ */
static inline uint32_t f_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static inline float bits_f(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* c ? a : b without a branch: ternaries here would become branches around
 * the float operations, which keeps gcc from vectorizing the loops. */
static inline uint32_t sel(int c, uint32_t a, uint32_t b) {
    uint32_t m = 0u - (uint32_t)c;
    return (a & m) | (b & ~m);
}

static inline float h2f(fv_half h) {
    uint32_t em = h & 0x7fffu;
    uint32_t u = f_bits(bits_f(em << 13) * 0x1p112f);    /* normals and subnormals */
    u = sel(em >= 0x7c00u, 0x7f800000u | (em << 13), u); /* inf, NaN */
    return bits_f(u | ((uint32_t)(h & 0x8000u) << 16));
}

static inline fv_half f2h(float x) {
    uint32_t u = f_bits(x);
    uint32_t sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
    uint32_t big = sel(u > 0x7f800000u, 0x7e00u | ((u & 0x7fffffu) >> 13), 0x7c00u);
    uint32_t sub = f_bits(bits_f(u) + 0.5f) - 0x3f000000u;     /* FPU rounds to even */
    uint32_t nrm = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13; /* rebias, round to even */
    uint32_t o = sel(u >= 0x47800000u, big, sel(u < 0x38800000u, sub, nrm));
    return (fv_half)(o | sign);
}

static inline float round16(float x) {
    return h2f(f2h(x));
}

/* ---- taps: acc[q] += sum_t w[t] * p[t][q * sw], t in order ------------- */
static inline void taps1(float *restrict acc, int n, int sw, const float *w,
                         const float *const *p) {
    const float w0 = w[0], *p0 = p[0];
    if (sw == 1)
        for (int q = 0; q < n; q++)
            acc[q] += w0 * p0[q];
    else
        for (int q = 0; q < n; q++)
            acc[q] += w0 * p0[(size_t)q * sw];
}

static inline void taps2(float *restrict acc, int n, int sw, const float *w,
                         const float *const *p) {
    const float w0 = w[0], w1 = w[1], *p0 = p[0], *p1 = p[1];
    if (sw == 1)
        for (int q = 0; q < n; q++)
            acc[q] = (acc[q] + w0 * p0[q]) + w1 * p1[q];
    else
        for (int q = 0; q < n; q++) {
            size_t i = (size_t)q * sw;
            acc[q] = (acc[q] + w0 * p0[i]) + w1 * p1[i];
        }
}

static inline void taps4(float *restrict acc, int n, int sw, const float *w,
                         const float *const *p) {
    const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
    const float *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
    if (sw == 1)
        for (int q = 0; q < n; q++)
            acc[q] = (((acc[q] + w0 * p0[q]) + w1 * p1[q]) + w2 * p2[q]) + w3 * p3[q];
    else
        for (int q = 0; q < n; q++) {
            size_t i = (size_t)q * sw;
            acc[q] = (((acc[q] + w0 * p0[i]) + w1 * p1[i]) + w2 * p2[i]) + w3 * p3[i];
        }
}

/* Nine taps at unit stride in one pass (3x3 filters). With set, acc[q] is
 * not read: the sum starts from *set instead. */
static inline void taps9(float *restrict acc, int n, const float *w, const float *const *p,
                         const float *set) {
    const float b = set ? *set : 0.0f;
    const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6],
                w7 = w[7], w8 = w[8];
    const float *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3], *p4 = p[4], *p5 = p[5], *p6 = p[6],
                *p7 = p[7], *p8 = p[8];
    for (int q = 0; q < n; q++) {
        float s = (set ? b : acc[q]) + w0 * p0[q];
        s += w1 * p1[q];
        s += w2 * p2[q];
        s += w3 * p3[q];
        s += w4 * p4[q];
        s += w5 * p5[q];
        s += w6 * p6[q];
        s += w7 * p7[q];
        s += w8 * p8[q];
        acc[q] = s;
    }
}

/* All t taps, in passes of up to four (one pass for nine at unit stride:
 * 3x3). With set, acc starts from *set rather than from its contents. */
static inline void taps_run(float *restrict acc, int n, int sw, int t, const float *w,
                            const float *const *p, const float *set) {
    if (t == 9 && sw == 1) {
        taps9(acc, n, w, p, set);
        return;
    }
    if (set)
        for (int q = 0; q < n; q++)
            acc[q] = *set;
    int i = 0;
    for (; i + 4 <= t; i += 4)
        taps4(acc, n, sw, w + i, p + i);
    if (t - i >= 2) {
        taps2(acc, n, sw, w + i, p + i);
        i += 2;
    }
    if (i < t) taps1(acc, n, sw, w + i, p + i);
}

/* In-place activation (fv__activate's formulas) and optional FP16 rounding. */
static inline void finish_row(float *restrict a, int n, fv_activation act, float alpha, int round) {
    switch (act) {
    case FV_ACT_IDENTITY:
        break;
    case FV_ACT_RELU:
        for (int i = 0; i < n; i++)
            a[i] = a[i] > 0.0f ? a[i] : 0.0f;
        break;
    case FV_ACT_CLIPPED_RELU:
        for (int i = 0; i < n; i++)
            a[i] = a[i] < 0.0f ? 0.0f : (a[i] > alpha ? alpha : a[i]);
        break;
    case FV_ACT_LEAKY_RELU:
        for (int i = 0; i < n; i++)
            a[i] = a[i] >= 0.0f ? a[i] : alpha * a[i];
        break;
    default:
        for (int i = 0; i < n; i++)
            a[i] = fv__activate(act, alpha, a[i]);
    }
    if (round)
        for (int i = 0; i < n; i++)
            a[i] = round16(a[i]);
}

/* ---- stencil path ------------------------------------------------------- */
/* One output row p of image img (F32, C = K = 1, stride_w 1), into out. */
FV_CLONES static void stencil_row(const fv_conv2d *op, const cpu_conv *st, const float *img, int p,
                                  float *restrict out) {
    const fv_conv2d_desc *d = &op->desc;
    const int W = d->w, Q = op->q, S = d->s, dw = d->dilation_w, pw = d->pad_w;
    /* interior [lo, hi): every tap inside the row */
    int lo = pw < Q ? pw : Q;
    int hi = W - (S - 1) * dw + pw;
    hi = hi > Q ? Q : hi;
    hi = hi < lo ? lo : hi;
    const float b = st->bias[0], *pt[MAX_TAPS];
    float wt[MAX_TAPS];
    int rows = 0, nt = 0;
    for (int r = 0; r < d->r; r++) {
        int ih = p * d->stride_h - d->pad_h + r * d->dilation_h;
        rows += ih >= 0 && ih < d->h;
    }
    /* the 3x3 case, away from the top and bottom rows: one pass that also
     * sets the bias; otherwise the bias first, then passes of taps */
    const int one_pass = rows * S == 9 && hi > lo;
    for (int q = 0; q < Q; q++)
        if (!one_pass || q < lo || q >= hi) out[q] = b;
    for (int r = 0; r < d->r && hi > lo; r++) {
        int ih = p * d->stride_h - d->pad_h + r * d->dilation_h;
        if (ih < 0 || ih >= d->h) continue;
        for (int s = 0; s < S; s++) {
            if (nt == MAX_TAPS) {
                taps_run(out + lo, hi - lo, 1, nt, wt, pt, NULL);
                nt = 0;
            }
            wt[nt] = st->w[(size_t)r * S + s];
            pt[nt++] = img + (size_t)ih * W + (lo - pw + s * dw);
        }
    }
    if (one_pass)
        taps9(out + lo, hi - lo, wt, pt, &b);
    else if (nt)
        taps_run(out + lo, hi - lo, 1, nt, wt, pt, NULL);
    /* borders */
    for (int q = 0; q < Q; q++) {
        if (q == lo) q = hi;
        if (q >= Q) break;
        float acc = out[q];
        for (int r = 0; r < d->r; r++) {
            int ih = p * d->stride_h - d->pad_h + r * d->dilation_h;
            if (ih < 0 || ih >= d->h) continue;
            const float *row = img + (size_t)ih * W, *w = st->w + (size_t)r * S;
            for (int s = 0; s < S; s++) {
                int x = q - pw + s * dw;
                if (x >= 0 && x < W) acc += w[s] * row[x];
            }
        }
        out[q] = acc;
    }
    finish_row(out, Q, d->activation, d->activation_alpha, st->round_f16);
}

/* ---- planar path -------------------------------------------------------- */
static size_t slot_floats(const fv_conv2d *op, const cpu_conv *st) {
    return (size_t)op->desc.c * st->plane;
}

/* Converts input row (n, ih) into a ring slot: C planes, padded by pad_w.
 * F16 rows are converted whole first (contiguous, so it vectorizes). */
FV_CLONES static void ring_fill(const fv_conv2d *op, const cpu_conv *st, const fv_tensor *in, int n,
                                int ih, float *restrict slot) {
    const int C = op->desc.c, W = op->desc.w;
    const size_t cs = (size_t)in->shape.c_stored, pl = st->plane;
    const size_t pix = ((size_t)n * op->desc.h + (size_t)ih) * W;
    float *dst = slot + op->desc.pad_w;
    if (in->shape.dtype == FV_DTYPE_F16) {
        /* gather the real channels planar, then convert contiguous runs */
        const fv_half *src = (const fv_half *)in->data + pix * cs;
        fv_half *restrict t = st->hin;
        for (int x = 0; x < W; x++)
            for (int c = 0; c < C; c++)
                t[(size_t)c * W + x] = src[x * cs + c];
        for (int c = 0; c < C; c++) {
            float *restrict dc = dst + c * pl;
            const fv_half *tc = t + (size_t)c * W;
            for (int x = 0; x < W; x++)
                dc[x] = h2f(tc[x]);
        }
        return;
    }
    const float *src = (const float *)in->data + pix * cs;
    if (C == 1) {
        memcpy(dst, src, (size_t)W * sizeof *src);
        return;
    }
    for (int x = 0; x < W; x++)
        for (int c = 0; c < C; c++)
            dst[c * pl + x] = src[x * cs + c];
}

/* Stores the K x Q accumulators as output row (n, p), NHWC: channels
 * [0, K) of each pixel and, in a dense F16 tensor, zeros in its padding
 * lanes [K, c_stored). An output slice of a wider tensor (op->ys) has no
 * padding lanes (K is a multiple of 8 on F16): the channels past K are
 * another layer's. */
FV_CLONES static void store_row(const fv_conv2d *op, const cpu_conv *st, fv_tensor *out, int n,
                                int p) {
    const int K = op->desc.k, Q = op->q;
    const size_t cs = out->shape.stride[2];
    const size_t o0 = (((size_t)n * op->p + p) * Q) * cs;
    const float *a = st->acc;
    if (out->shape.dtype == FV_DTYPE_F32) {
        float *o = (float *)out->data + o0;
        if (K == 1 && cs == 1) {
            memcpy(o, a, (size_t)Q * sizeof *o);
            return;
        }
        for (int q = 0; q < Q; q++)
            for (int k = 0; k < K; k++)
                o[(size_t)q * cs + k] = a[(size_t)k * Q + q];
        return;
    }
    fv_half *restrict h = st->hout, *o = (fv_half *)out->data + o0;
    for (size_t i = 0; i < (size_t)K * Q; i++)
        h[i] = f2h(a[i]);
    if (cs == 8 && !op->ys) { /* whole pixels, padding lanes zero */
        for (int q = 0; q < Q; q++) {
            fv_half px[8];
            for (int k = 0; k < 8; k++)
                px[k] = k < K ? h[(size_t)k * Q + q] : 0;
            memcpy(o + (size_t)q * 8, px, sizeof px);
        }
        return;
    }
    if (cs != (size_t)K && !op->ys) memset(o, 0, (size_t)Q * cs * sizeof *o); /* padding lanes */
    for (int q = 0; q < Q; q++)
        for (int k = 0; k < K; k++)
            o[(size_t)q * cs + k] = h[(size_t)k * Q + q];
}

/* Accumulates, activates and stores output row (n, p). */
/* Adds row (n, p) of residual z (NHWC, the output's shape) to channel k's
 * Q accumulators. */
static void add_residual(const fv_conv2d *op, const fv_tensor *z, int n, int p, int k,
                         float *restrict acc) {
    const size_t cs = (size_t)z->shape.c_stored, Q = (size_t)op->q;
    const size_t o0 = (((size_t)n * op->p + p) * Q) * cs + (size_t)k;
    if (z->shape.dtype == FV_DTYPE_F32) {
        const float *zf = (const float *)z->data + o0;
        for (size_t q = 0; q < Q; q++)
            acc[q] += zf[q * cs];
    } else {
        const fv_half *zh = (const fv_half *)z->data + o0;
        for (size_t q = 0; q < Q; q++)
            acc[q] += h2f(zh[q * cs]);
    }
}

FV_CLONES static void planar_row(const fv_conv2d *op, cpu_conv *st, const fv_tensor *in,
                                 const fv_tensor *z, fv_tensor *out, int n, int p) {
    const fv_conv2d_desc *d = &op->desc;
    const int R = d->r, S = d->s, K = d->k, Q = op->q, sw = d->stride_w, dw = d->dilation_w;
    const int cg = d->c / d->groups, kg = K / d->groups;
    const size_t sf = slot_floats(op, st);
    const int ih0 = p * d->stride_h - d->pad_h;
    for (int r = 0; r < R; r++) {
        int ih = ih0 + r * d->dilation_h;
        if (ih < 0 || ih >= d->h) continue;
        int slot = ih % st->span, tag = n * d->h + ih;
        if (st->tags[slot] != tag) {
            ring_fill(op, st, in, n, ih, st->ring + (size_t)slot * sf);
            st->tags[slot] = tag;
        }
    }
    const float *pt[MAX_TAPS];
    float wt[MAX_TAPS];
    for (int k = 0; k < K; k++) {
        float *restrict acc = st->acc + (size_t)k * Q;
        const float *wk = st->w + (size_t)k * cg * R * S, *set = &st->bias[k];
        int nt = 0;
        for (int c = 0; c < cg; c++) {
            int ci = (k / kg) * cg + c;
            for (int r = 0; r < R; r++) {
                int ih = ih0 + r * d->dilation_h;
                if (ih < 0 || ih >= d->h) continue;
                const float *base =
                    st->ring + (size_t)(ih % st->span) * sf + (size_t)ci * st->plane;
                for (int s = 0; s < S; s++) {
                    if (nt == MAX_TAPS) {
                        taps_run(acc, Q, sw, nt, wt, pt, set); /* the first sets the bias */
                        nt = 0, set = NULL;
                    }
                    wt[nt] = wk[((size_t)c * R + r) * S + s];
                    pt[nt++] = base + (size_t)s * dw;
                }
            }
        }
        taps_run(acc, Q, sw, nt, wt, pt, set); /* nt may be 0: all rows in the padding */
        if (z) add_residual(op, z, n, p, k, acc);
        finish_row(acc, Q, d->activation, d->activation_alpha, st->round_f16);
    }
    store_row(op, st, out, n, p);
}

/* ---- create / destroy / forward ----------------------------------------- */
static size_t up32(size_t n) {
    return FV_ROUND_UP(n, (size_t)32); /* floats: keeps each part FV_ALIGN-aligned */
}

fv_status fv__cpu_conv2d_create(fv_conv2d *op, const float *weights, const float *bias) {
    const fv_conv2d_desc *d = &op->desc;
    fv_context *ctx = op->ctx;
    cpu_conv *st = calloc(1, sizeof *st);
    FV_REQUIRE(st, FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory");
    int round_w = (ctx->flags & FV_CONTEXT_CPU_ROUND_F16) || d->dtype == FV_DTYPE_F16;
    st->round_f16 = (ctx->flags & FV_CONTEXT_CPU_ROUND_F16) && d->dtype == FV_DTYPE_F32;
    st->path = d->dtype == FV_DTYPE_F32 && d->c == 1 && d->k == 1 && d->stride_w == 1 &&
                       !(d->flags & FV_CONV2D_RESIDUAL) && op->ys == 0
                   ? PATH_STENCIL
                   : PATH_PLANAR;
    const size_t nw = (size_t)d->k * (d->c / d->groups) * d->r * d->s;
    size_t ring = 0, acc = 0, hin = 0, hout = 0;
    if (st->path == PATH_PLANAR) {
        st->plane = FV_ROUND_UP((size_t)d->w + 2 * (size_t)d->pad_w, (size_t)16);
        st->span = (d->r - 1) * d->dilation_h + 1;
        if (st->span > d->h) st->span = d->h; /* ih % span stays one-to-one */
        ring = (size_t)st->span * d->c * st->plane;
        acc = (size_t)d->k * op->q;
        if (d->dtype == FV_DTYPE_F16) {
            hin = ((size_t)d->w * d->c + 1) / 2; /* in floats */
            hout = (acc + 1) / 2;                /* in floats */
        }
        st->tags = calloc((size_t)st->span, sizeof *st->tags);
        if (!st->tags) {
            free(st);
            return fv__error(FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory");
        }
    }
    size_t floats = up32(nw) + up32((size_t)d->k) + up32(ring) + up32(acc) + up32(hin) + up32(hout);
    st->pool = fv_context_pool(ctx, FV_POOL_HOST);
    fv_status s = fv_pool_alloc(st->pool, floats * sizeof(float), &st->block);
    if (s != FV_OK) {
        free(st->tags);
        free(st);
        return fv__error_prefix(s, "conv2d: weights and row buffers");
    }
    memset(st->block, 0, floats * sizeof(float)); /* ring padding columns stay zero */
    st->w = st->block;
    st->bias = st->w + up32(nw);
    st->ring = st->bias + up32((size_t)d->k);
    st->acc = st->ring + up32(ring);
    st->hin = (fv_half *)(st->acc + up32(acc));
    st->hout = (fv_half *)(st->acc + up32(acc) + up32(hin));
    for (size_t i = 0; i < nw; i++)
        st->w[i] = round_w ? round16(weights[i]) : weights[i];
    if (bias)
        for (int k = 0; k < d->k; k++)
            st->bias[k] = round_w ? round16(bias[k]) : bias[k];
    op->be_state = st;
    return FV_OK;
}

void fv__cpu_conv2d_destroy(fv_conv2d *op) {
    cpu_conv *st = op->be_state;
    if (!st) return;
    fv_pool_free(st->pool, st->block);
    free(st->tags);
    free(st);
    op->be_state = NULL;
}

fv_status fv__cpu_conv2d_forward(fv_conv2d *op, const fv_tensor *in, const fv_tensor *res,
                                 fv_tensor *out) {
    cpu_conv *st = op->be_state;
    const fv_conv2d_desc *d = &op->desc;
    if (st->path == PATH_STENCIL) {
        for (int n = 0; n < d->n; n++) {
            const float *img = (const float *)in->data + (size_t)n * d->h * d->w;
            float *o = (float *)out->data + (size_t)n * op->p * op->q;
            for (int p = 0; p < op->p; p++)
                stencil_row(op, st, img, p, o + (size_t)p * op->q);
        }
        return FV_OK;
    }
    for (int i = 0; i < st->span; i++)
        st->tags[i] = -1; /* the input is new */
    for (int n = 0; n < d->n; n++)
        for (int p = 0; p < op->p; p++)
            planar_row(op, st, in, res, out, n, p);
    return FV_OK;
}
