/* fv_filter: pack -> conv2d -> edge step -> unpack (CONV engine), or the
 * backend's fused tensor-core kernel (FUSED) or direct CUDA-core kernel
 * (DIRECT), planned once (see fovea/filter.h for the exact rule). AUTO
 * times FUSED and DIRECT at creation where DIRECT's bytes are FUSED's. Gradient filters run both
 * gradients of every edge channel as one convolution (two output channels each). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

struct fv_filter {
    fv_context *ctx;
    fv_filter_desc desc;     /* normalized; kernel NULL */
    int pairs;               /* 1: gradient pairs (gx, gy) and a magnitude */
    int in_c, m, r, s;       /* packed channels, edge channels, kernel size */
    fv_filter_engine engine; /* FUSED, DIRECT or CONV */
    fv_tensor *w;            /* FUSED: the B matrix (see fv__backend.filter_fused) */
    /* DIRECT: kernel 0 (and its transpose) r x s, FP16-rounded */
    float kd[2 * FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL];
    int direct_exact;  /* DIRECT's sums are exact: its bytes are FUSED's */
    float timed_ms[2]; /* AUTO's timing: FUSED, DIRECT; 0 untimed */
    int wave_less;     /* DIRECT: the strip kernel's wave_less (see fv__backend.filter_direct) */
    fv_conv2d *conv;   /* CONV: the convolution and tensors x, y, e */
    fv_tensor *x;      /* packed input, F16, 1 or 3 channels */
    fv_tensor *y;      /* convolution output, F16, m or 2m channels */
    fv_tensor *e;      /* edge values in output levels, F32, 1 or 3 channels */
};

const char *fv_filter_kind_name(fv_filter_kind k) {
    switch (k) {
    case FV_FILTER_LAPLACIAN:
        return "laplacian";
    case FV_FILTER_SOBEL:
        return "sobel";
    case FV_FILTER_SCHARR:
        return "scharr";
    case FV_FILTER_PREWITT:
        return "prewitt";
    case FV_FILTER_CUSTOM:
        return "custom";
    }
    return "unknown";
}

const char *fv_filter_engine_name(fv_filter_engine e) {
    switch (e) {
    case FV_FILTER_ENGINE_AUTO:
        return "auto";
    case FV_FILTER_ENGINE_FUSED:
        return "fused";
    case FV_FILTER_ENGINE_CONV:
        return "conv";
    case FV_FILTER_ENGINE_DIRECT:
        return "direct";
    }
    return "unknown";
}

static int format_known(fv_pixel_format f) {
    return (int)f >= FV_PIXEL_GRAY8 && (int)f <= FV_PIXEL_UYVY;
}

static fv_status check_desc(const fv_filter_desc *d) {
    const char *op = "filter";
    FV_REQUIRE((int)d->kind >= FV_FILTER_LAPLACIAN && (int)d->kind <= FV_FILTER_CUSTOM,
               FV_ERR_BAD_PARAM, "%s: kind=%d is unknown", op, (int)d->kind);
    FV_REQUIRE(d->width >= 1 && d->height >= 1, FV_ERR_BAD_PARAM,
               "%s: frame size %dx%d, both must be >= 1", op, d->width, d->height);
    FV_REQUIRE(format_known(d->format), FV_ERR_BAD_PARAM, "%s: input format=%d is unknown", op,
               (int)d->format);
    if (d->format == FV_PIXEL_YUYV || d->format == FV_PIXEL_UYVY)
        FV_REQUIRE(d->width % 2 == 0, FV_ERR_BAD_PARAM, "%s: %s width %d must be even", op,
                   fv_pixel_format_name(d->format), d->width);
    if (d->format == FV_PIXEL_NV12)
        FV_REQUIRE(d->width % 2 == 0 && d->height % 2 == 0, FV_ERR_BAD_PARAM,
                   "%s: NV12 size %dx%d must be even in both dimensions", op, d->width, d->height);
    FV_REQUIRE(d->output == FV_FILTER_OUT_GRAY || d->output == FV_FILTER_OUT_COLOR,
               FV_ERR_BAD_PARAM, "%s: output=%d is unknown (GRAY 0 or COLOR 1)", op,
               (int)d->output);
    FV_REQUIRE(isfinite(d->gain) && d->gain > 0.0f, FV_ERR_BAD_PARAM,
               "%s: gain=%g must be > 0 and finite (0 means 1)", op, (double)d->gain);
    FV_REQUIRE(isfinite(d->threshold) && d->threshold >= 0.0f && d->threshold <= 255.0f,
               FV_ERR_BAD_PARAM, "%s: threshold=%g must be in [0, 255] (0: none)", op,
               (double)d->threshold);
    FV_REQUIRE(d->overlay == 0 || d->overlay == 1, FV_ERR_BAD_PARAM,
               "%s: overlay=%d must be 0 or 1", op, d->overlay);
    FV_REQUIRE((int)d->engine >= FV_FILTER_ENGINE_AUTO && (int)d->engine <= FV_FILTER_ENGINE_DIRECT,
               FV_ERR_BAD_PARAM, "%s: engine=%d is unknown (AUTO 0, FUSED 1, CONV 2, DIRECT 3)", op,
               (int)d->engine);
    for (int i = 0; i < 5; i++)
        FV_REQUIRE(d->reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: reserved[%d] must be zero", op, i);
    if (d->kind != FV_FILTER_CUSTOM) {
        FV_REQUIRE(!d->kernel && d->kernel_rows == 0 && d->kernel_cols == 0, FV_ERR_BAD_PARAM,
                   "%s: kernel, kernel_rows, kernel_cols are for CUSTOM only (kind %s)", op,
                   fv_filter_kind_name(d->kind));
        return FV_OK;
    }
    FV_REQUIRE(d->kernel, FV_ERR_BAD_PARAM, "%s: CUSTOM kernel is NULL", op);
    const int mx = FV_FILTER_MAX_KERNEL;
    FV_REQUIRE(d->kernel_rows >= 1 && d->kernel_rows <= mx && d->kernel_rows % 2 == 1 &&
                   d->kernel_cols >= 1 && d->kernel_cols <= mx && d->kernel_cols % 2 == 1,
               FV_ERR_BAD_PARAM, "%s: CUSTOM kernel %dx%d: rows and cols must be odd, 1 to %d", op,
               d->kernel_rows, d->kernel_cols, mx);
    for (int i = 0; i < d->kernel_rows * d->kernel_cols; i++)
        FV_REQUIRE(isfinite(d->kernel[i]), FV_ERR_BAD_PARAM,
                   "%s: CUSTOM kernel value %d (row %d, col %d) is not finite", op, i,
                   i / d->kernel_cols, i % d->kernel_cols);
    return FV_OK;
}

/* The x-gradient kernel of a gradient filter (gy is its transpose). */
static const float *gradient_kernel(fv_filter_kind k) {
    static const float sobel[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
    static const float scharr[9] = {-3, 0, 3, -10, 0, 10, -3, 0, 3};
    static const float prewitt[9] = {-1, 0, 1, -1, 0, 1, -1, 0, 1};
    return k == FV_FILTER_SOBEL ? sobel : k == FV_FILTER_SCHARR ? scharr : prewitt;
}

/* Weights (KCRS) for m edge channels from in_c packed channels: output
 * channel k is edge channel k / g, kernel k % g (g 2 for pairs: gx, gy);
 * m 1 sums every input channel, m 3 takes only its own. */
static float *make_weights(const fv_filter_desc *d, int pairs, int m, int in_c, int *r, int *s) {
    static const float lap[9] = {1, 1, 1, 1, -8, 1, 1, 1, 1};
    float kern[2][FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL];
    const int g = pairs ? 2 : 1;
    if (d->kind == FV_FILTER_CUSTOM) {
        *r = d->kernel_rows, *s = d->kernel_cols;
        memcpy(kern[0], d->kernel, sizeof(float) * (size_t)(*r * *s));
    } else {
        *r = *s = 3;
        const float *k0 = pairs ? gradient_kernel(d->kind) : lap;
        for (int i = 0; i < 9; i++) {
            kern[0][i] = k0[i];
            kern[1][i] = k0[(i % 3) * 3 + i / 3]; /* transpose */
        }
    }
    const size_t rs = (size_t)*r * *s;
    float *w = calloc((size_t)m * g * in_c * rs, sizeof *w);
    if (!w) return NULL;
    for (int k = 0; k < m * g; k++)
        for (int c = 0; c < in_c; c++)
            if (m == 1 || c == k / g)
                memcpy(w + ((size_t)k * in_c + c) * rs, kern[k % g], rs * sizeof *w);
    return w;
}

static fv_status make_tensor(fv_context *ctx, fv_dtype dt, int h, int w, int c, fv_tensor **out) {
    fv_tensor_desc td = {.dtype = dt, .h = h, .w = w, .c = c};
    return fv_tensor_create(ctx, &td, out);
}

/* FUSED: the weights as the kernel's B matrix, FP16 [kpad x 16]: row
 * (r*S + s)*C + c, column = output channel; uploaded once. */
static fv_status plan_fused(fv_filter *f, const float *w, int k) {
    const int cs = f->in_c;
    const int rs = f->r * f->s, kpad = FV_ROUND_UP(rs * cs, 16);
    const size_t n = (size_t)kpad * 16;
    fv_half *b = calloc(n, sizeof *b);
    FV_REQUIRE(b, FV_ERR_OUT_OF_MEMORY, "filter: out of host memory");
    for (int o = 0; o < k; o++)
        for (int c = 0; c < cs; c++)
            for (int i = 0; i < rs; i++)
                b[((size_t)i * cs + c) * 16 + (size_t)o] =
                    fv_f32_to_f16(w[((size_t)o * f->in_c + c) * rs + (size_t)i]);
    fv_tensor_desc td = {.dtype = FV_DTYPE_F16, .h = 1, .w = kpad, .c = 16};
    fv_status st = fv_tensor_create(f->ctx, &td, &f->w);
    if (st == FV_OK) st = fv_tensor_upload(f->ctx, f->w, b, n * sizeof *b);
    if (st == FV_OK) st = fv_context_synchronize(f->ctx); /* b is freed next */
    free(b);
    return st;
}

static fv_status plan(fv_filter *f) {
    const fv_filter_desc *d = &f->desc;
    const int in_c = f->in_c, m = f->m;
    const int out_c = d->overlay && in_c > m ? in_c : m;
    const int k = m * (f->pairs ? 2 : 1);
    int r, s;
    float *w = make_weights(d, f->pairs, m, in_c, &r, &s);
    FV_REQUIRE(w, FV_ERR_OUT_OF_MEMORY, "filter: out of host memory");
    if (f->engine == FV_FILTER_ENGINE_DIRECT) {
        free(w);
        return FV_OK; /* the weights travel with each launch */
    }
    if (f->engine == FV_FILTER_ENGINE_FUSED || f->engine == FV_FILTER_ENGINE_AUTO) {
        fv_status st = plan_fused(f, w, k);
        free(w);
        return st;
    }
    /* The CPU backend is the FP32 reference unless asked to mirror the GPU's
     * FP16 storage (FV_CONTEXT_CPU_ROUND_F16). */
    const fv_context *ctx = f->ctx;
    const fv_dtype dt = ctx->be == &fv__backend_cpu && !(ctx->flags & FV_CONTEXT_CPU_ROUND_F16)
                            ? FV_DTYPE_F32
                            : FV_DTYPE_F16;
    fv_conv2d_desc cd = {.h = d->height,
                         .w = d->width,
                         .c = in_c,
                         .k = k,
                         .r = r,
                         .s = s,
                         .pad_h = (r - 1) / 2,
                         .pad_w = (s - 1) / 2,
                         .dtype = dt,
                         .weights = w,
                         .flags = d->conv_flags};
    fv_status st = fv_conv2d_create(f->ctx, &cd, &f->conv);
    free(w);
    FV_TRY(st);
    FV_TRY(make_tensor(f->ctx, dt, d->height, d->width, in_c, &f->x));
    FV_TRY(make_tensor(f->ctx, dt, d->height, d->width, k, &f->y));
    FV_TRY(make_tensor(f->ctx, FV_DTYPE_F32, d->height, d->width, out_c, &f->e));
    return fv_conv2d_bind(f->conv, f->x, f->y);
}

static float round_f16(float x) {
    return fv_f16_to_f32(fv_f32_to_f16(x));
}

/* DIRECT's kernels (kernel 0, and its transpose for pairs), FP16-rounded as
 * FUSED's weights, and whether DIRECT's bytes are provably FUSED's: input
 * values multiples of 2^-qi (bytes: 0; YUV-converted values on pixel_math.h's
 * fv__yuv_grid: 8) and FP16 weights all multiples of 2^-q with
 * 255 * (channels summed) * sum |w| * 2^(q + qi) < 2^24. Then every product
 * and every partial sum, in any order, is a multiple of 2^-(q + qi) below
 * 2^(24 - q - qi):
 * exact in FP32 (with or without FMA) and in the tensor cores' FP32
 * accumulation, so both engines feed the same value to the same edge step.
 * Reads desc.kernel: before fv_filter_create clears it. */
static void plan_direct_weights(fv_filter *f) {
    static const float lap[9] = {1, 1, 1, 1, -8, 1, 1, 1, 1};
    const fv_filter_desc *d = &f->desc;
    const int rs = f->r * f->s, g = f->pairs ? 2 : 1;
    const float *k0 = d->kind == FV_FILTER_CUSTOM ? d->kernel
                      : f->pairs                  ? gradient_kernel(d->kind)
                                                  : lap;
    for (int i = 0; i < rs; i++) {
        f->kd[i] = round_f16(k0[i]);
        if (f->pairs) f->kd[rs + i] = round_f16(k0[(i % 3) * 3 + i / 3]); /* transpose */
    }
    const fv_pixel_format fmt = d->format;
    /* input values: bytes (integers), or YUV-converted on fv__yuv_grid
     * (multiples of 2^-8) */
    const int yuv = fmt == FV_PIXEL_YUYV || fmt == FV_PIXEL_UYVY || fmt == FV_PIXEL_NV12;
    const int qi = yuv ? 8 : 0;
    int q = 0;
    double sum_max = 0.0;
    for (int k = 0; k < g; k++) {
        double sum = 0.0;
        for (int i = 0; i < rs; i++) {
            const double w = f->kd[k * rs + i]; /* FP16 values: q <= 24 */
            int qw = 0;
            while (qw < 40 && ldexp(w, qw) != floor(ldexp(w, qw)))
                qw++;
            if (qw > q) q = qw;
            sum += fabs(w);
        }
        if (sum > sum_max) sum_max = sum;
    }
    const int summed = f->m == 1 ? f->in_c : 1;
    f->direct_exact = ldexp(255.0 * summed * sum_max, q + qi) < 16777216.0;
}

static fv_status run_kernel(fv_filter *f, fv_filter_engine e, const fv_image *in,
                            const fv_image *out) {
    fv_context *ctx = f->ctx;
    return e == FV_FILTER_ENGINE_DIRECT
               ? ctx->be->filter_direct(ctx, &f->desc, f->kd, f->wave_less, in, out)
               : ctx->be->filter_fused(ctx, &f->desc, f->w, in, out);
}

/* AUTO's timing: each candidate's TIME_APPLIES applies captured into a
 * CUDA graph (as fv_pipeline and fovea-bench replay them: the host's launch
 * gaps stay out of the figures), the replays interleaved over TIME_ROUNDS
 * rounds, the best round per candidate. The best of 3 eager timings of 2
 * applies misjudged 10 us kernels by 5% (the 4K GRAY8 Laplacian took the
 * slower strips, docs/bench/RESULTS.md). Eager applies where the backend
 * has no graphs or the capture fails. */
enum { TIME_APPLIES = 8, TIME_ROUNDS = 5 };

typedef struct timed_cand {
    fv_filter_engine engine;
    int wave_less; /* DIRECT's strips (fv__backend.filter_direct) */
    void *graph;   /* TIME_APPLIES applies; NULL: launched eagerly */
    float ms;      /* per frame, the best round */
} timed_cand;

static fv_status run_cand(fv_filter *f, const timed_cand *c, const fv_image *in,
                          const fv_image *out) {
    f->wave_less = c->wave_less;
    if (c->graph) return f->ctx->be->graph_launch(f->ctx, c->graph);
    for (int i = 0; i < TIME_APPLIES; i++)
        FV_TRY(run_kernel(f, c->engine, in, out));
    return FV_OK;
}

/* One warm-up apply of c (module loading, kernel attributes), then its
 * applies captured into c->graph where the backend can. A capture the
 * driver refuses leaves c->graph NULL (logged); a failing apply is an
 * error. */
static fv_status capture_cand(fv_filter *f, timed_cand *c, const fv_image *in,
                              const fv_image *out) {
    fv_context *ctx = f->ctx;
    const fv__backend *be = ctx->be;
    f->wave_less = c->wave_less;
    FV_TRY(run_kernel(f, c->engine, in, out));
    if (!be->graph_begin || !be->capturing || be->capturing(ctx)) return FV_OK;
    if (be->graph_begin(ctx) != FV_OK) {
        fv__log(ctx, FV_LOG_INFO, "filter: AUTO times eager applies (no capture: %s)",
                fv_last_error());
        return FV_OK;
    }
    fv_status st = FV_OK;
    for (int i = 0; i < TIME_APPLIES && st == FV_OK; i++)
        st = run_kernel(f, c->engine, in, out);
    char saved[1024];
    if (st != FV_OK) snprintf(saved, sizeof saved, "%s", fv_last_error());
    void *g = NULL;
    const fv_status end = be->graph_end(ctx, &g); /* ends the capture in every case */
    if (st != FV_OK) {
        if (end == FV_OK) be->graph_destroy(ctx, g);
        fv__error(st, "%s", saved);
        return st;
    }
    if (end != FV_OK)
        fv__log(ctx, FV_LOG_INFO, "filter: AUTO times eager applies (capture failed: %s)",
                fv_last_error());
    else
        c->graph = g;
    return FV_OK;
}

/* Times cands[0..n) on (in, out) as the comment above says; each ms in
 * cands[i].ms. */
static fv_status time_cands(fv_filter *f, timed_cand *cands, int n, const fv_image *in,
                            const fv_image *out, void *ev[2]) {
    fv_context *ctx = f->ctx;
    const fv__backend *be = ctx->be;
    for (int i = 0; i < n; i++) {
        cands[i].ms = INFINITY;
        FV_TRY(capture_cand(f, &cands[i], in, out));
    }
    for (int round = 0; round < TIME_ROUNDS; round++)
        for (int j = 0; j < n; j++) {
            timed_cand *c = &cands[(j + round) % n]; /* each first in some round */
            FV_TRY(be->event_record(ctx, ev[0], NULL));
            FV_TRY(run_cand(f, c, in, out));
            FV_TRY(be->event_record(ctx, ev[1], NULL));
            FV_TRY(be->event_done(ctx, ev[1], 1));
            float t = 0.0f;
            FV_TRY(be->event_elapsed(ctx, ev[0], ev[1], &t));
            if (t / TIME_APPLIES < c->ms) c->ms = t / TIME_APPLIES;
        }
    return FV_OK;
}

static size_t bytes_per_pixel(fv_pixel_format f);

/* Rows of pseudo-random bytes repeated down choose_auto's scratch input
 * (a prime: no period shared with a kernel's tiles). */
enum { SCRATCH_ROWS = 61 };

/* Fills rows x row_bytes at dst (DEVICE pool) with pseudo-random bytes,
 * SCRATCH_ROWS rows from host at a time (host: that many rows, filled
 * here). Asynchronous: the caller synchronizes before freeing host. */
static fv_status fill_scratch(fv_context *ctx, unsigned char *dst, size_t row_bytes, int rows,
                              unsigned char *host) {
    const int n = rows < SCRATCH_ROWS ? rows : SCRATCH_ROWS;
    uint32_t x = 0x9E3779B9u;
    for (size_t i = 0; i < row_bytes * (size_t)n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5; /* xorshift32 */
        host[i] = (unsigned char)(x >> 24);
    }
    for (int r = 0; r < rows; r += n)
        FV_TRY(ctx->be->copy2d(ctx, dst + row_bytes * (size_t)r, row_bytes, host, row_bytes,
                               row_bytes, (size_t)(rows - r < n ? rows - r : n)));
    return FV_OK;
}

/* AUTO between FUSED (planned: f->w) and DIRECT: times both on a scratch
 * frame of the DEVICE pool, keeps the faster. The frame holds random
 * bytes, not zeros: on zeros every pixel of a gradient magnitude took
 * sqrtf's path for arguments outside the normal range (a call), which
 * frames seldom take. Without room for the frame: DIRECT up to 3x3 (a
 * stencil with almost no math), FUSED above. */
static fv_status choose_auto(fv_filter *f) {
    fv_context *ctx = f->ctx;
    const fv__backend *be = ctx->be;
    const fv_filter_desc *d = &f->desc;
    const int out_c = d->overlay && f->in_c > f->m ? f->in_c : f->m;
    fv_image in = {.format = d->format, .width = d->width, .height = d->height};
    fv_image out = {.format = out_c == 1 ? FV_PIXEL_GRAY8 : FV_PIXEL_RGB24,
                    .width = d->width,
                    .height = d->height};
    in.stride = (size_t)d->width * bytes_per_pixel(d->format);
    out.stride = (size_t)d->width * bytes_per_pixel(out.format);
    const int in_rows = d->format == FV_PIXEL_NV12 ? d->height + d->height / 2 : d->height;
    fv_tensor *ti = NULL, *to = NULL;
    void *ev[2] = {NULL, NULL};
    timed_cand cands[3] = {{.engine = FV_FILTER_ENGINE_FUSED},
                           {.engine = FV_FILTER_ENGINE_DIRECT},
                           {.engine = FV_FILTER_ENGINE_DIRECT, .wave_less = 1}};
    fv_tensor_desc td = {.dtype = FV_DTYPE_U8, .h = in_rows, .w = (int)in.stride, .c = 1};
    unsigned char *host = malloc(in.stride * (size_t)SCRATCH_ROWS);
    fv_status st = host ? fv_tensor_create(ctx, &td, &ti) : FV_ERR_OUT_OF_MEMORY;
    td.h = d->height, td.w = (int)out.stride;
    if (st == FV_OK) st = fv_tensor_create(ctx, &td, &to);
    if (st == FV_ERR_OUT_OF_MEMORY) {
        fv__log(ctx, FV_LOG_INFO,
                "filter: no room (DEVICE pool or host) to time the engines; AUTO takes %s",
                f->r * f->s <= 9 ? "DIRECT" : "FUSED");
        f->engine = f->r * f->s <= 9 ? FV_FILTER_ENGINE_DIRECT : FV_FILTER_ENGINE_FUSED;
        st = FV_OK;
        goto done;
    }
    if (st == FV_OK) st = fill_scratch(ctx, fv_tensor_data(ti), in.stride, in_rows, host);
    if (st == FV_OK)
        st = be->mem_zero(ctx, FV_POOL_DEVICE, fv_tensor_data(to), out.stride * (size_t)d->height);
    if (st == FV_OK) st = be->event_create(ctx, &ev[0]);
    if (st == FV_OK) st = be->event_create(ctx, &ev[1]);
    if (st == FV_OK) {
        in.data = fv_tensor_data(ti);
        if (d->format == FV_PIXEL_NV12)
            in.uv = (unsigned char *)in.data + in.stride * (size_t)d->height,
            in.uv_stride = in.stride;
        out.data = fv_tensor_data(to);
        /* DIRECT's strip kernel (up to 3 x 3) also with strips for one
         * block an SM fewer than fit (taller strips): which is faster
         * depends on the kernel and the frame (filter_direct_strip.cu's
         * launch says by how much); the faster is kept */
        const int n = f->r <= 3 && f->s <= 3 ? 3 : 2;
        st = time_cands(f, cands, n, &in, &out, ev);
        if (st == FV_OK) {
            const timed_cand *direct = n == 3 && cands[2].ms < cands[1].ms ? &cands[2] : &cands[1];
            f->timed_ms[0] = cands[0].ms;
            f->timed_ms[1] = direct->ms;
            f->engine = direct->ms < cands[0].ms ? FV_FILTER_ENGINE_DIRECT : FV_FILTER_ENGINE_FUSED;
            f->wave_less = f->engine == FV_FILTER_ENGINE_DIRECT ? direct->wave_less : 0;
            int graphs = 0;
            for (int i = 0; i < n; i++)
                graphs += cands[i].graph != NULL;
            fv__log(ctx, FV_LOG_INFO,
                    "filter: AUTO timed (%s of %d applies, the best of %d rounds) FUSED %.4f ms, "
                    "DIRECT %.4f ms (strips for one block an SM fewer: %.4f ms): takes %s%s",
                    graphs == n   ? "graph replays"
                    : graphs == 0 ? "eager runs"
                                  : "graph replays and eager runs",
                    TIME_APPLIES, TIME_ROUNDS, (double)cands[0].ms, (double)cands[1].ms,
                    n == 3 ? (double)cands[2].ms : 0.0, fv_filter_engine_name(f->engine),
                    f->wave_less ? ", taller strips" : "");
        }
    }
done:
    for (int i = 0; i < 3; i++)
        if (cands[i].graph) be->graph_destroy(ctx, cands[i].graph);
    for (int i = 0; i < 2; i++)
        if (ev[i]) be->event_destroy(ctx, ev[i]); /* waits for the event */
    if (ti && st == FV_OK) {
        st = fv_context_synchronize(ctx); /* the scratch and host are freed next */
    } else if (ti) {
        /* after a failure too (the copies from host may be in flight),
         * keeping the failure's message */
        char saved[1024];
        snprintf(saved, sizeof saved, "%s", fv_last_error());
        (void)fv_context_synchronize(ctx);
        fv__error(st, "%s", saved);
    }
    free(host);
    fv_tensor_destroy(to);
    fv_tensor_destroy(ti);
    if (st == FV_OK && f->engine == FV_FILTER_ENGINE_DIRECT) {
        fv_tensor_destroy(f->w); /* FUSED's weights: unused */
        f->w = NULL;
    }
    return st;
}

fv_status fv_filter_create(fv_context *ctx, const fv_filter_desc *desc, fv_filter **out) {
    FV__HOLD(ctx);
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_filter_create: out is NULL");
    *out = NULL;
    FV_REQUIRE(ctx && desc, FV_ERR_BAD_PARAM, "fv_filter_create: %s is NULL", ctx ? "desc" : "ctx");
    fv_filter_desc d = *desc;
    if (d.format == 0) d.format = FV_PIXEL_RGB24;
    if (d.gain == 0.0f) d.gain = 1.0f;
    FV_TRY(check_desc(&d));
    FV_REQUIRE((d.conv_flags & ~(FV__CONV2D_FLAGS & ~(uint32_t)FV_CONV2D_RESIDUAL)) == 0,
               FV_ERR_BAD_PARAM, "filter: unknown conv_flags 0x%x", (unsigned)d.conv_flags);
    fv_filter *f = calloc(1, sizeof *f);
    FV_REQUIRE(f, FV_ERR_OUT_OF_MEMORY, "filter: out of host memory");
    f->ctx = ctx;
    fv__obj_born(ctx, FV__OBJ_FILTER);
    f->pairs =
        d.kind == FV_FILTER_SOBEL || d.kind == FV_FILTER_SCHARR || d.kind == FV_FILTER_PREWITT;
    f->desc = d;
    f->in_c = d.format == FV_PIXEL_GRAY8 ? 1 : 3;
    f->m = d.output == FV_FILTER_OUT_COLOR ? f->in_c : 1;
    f->r = d.kind == FV_FILTER_CUSTOM ? d.kernel_rows : 3;
    f->s = d.kind == FV_FILTER_CUSTOM ? d.kernel_cols : 3;
    /* The fused kernel needs tensor cores (WMMA, sm_70+); the direct one
     * any GPU of the backend. */
    const int fused_ok = ctx->be->filter_fused && ctx->info.tensor_cores;
    const int direct_ok = ctx->be->filter_direct != NULL;
    plan_direct_weights(f);
    /* AUTO stays AUTO (FUSED planned, then timed against DIRECT) where
     * DIRECT's bytes are provably FUSED's. */
    f->engine = d.engine != FV_FILTER_ENGINE_AUTO ? d.engine
                : !fused_ok                       ? FV_FILTER_ENGINE_CONV
                : direct_ok && f->direct_exact    ? FV_FILTER_ENGINE_AUTO
                                                  : FV_FILTER_ENGINE_FUSED;
    fv_status s = FV_OK;
    if (f->engine == FV_FILTER_ENGINE_FUSED && !fused_ok)
        s = fv__error(FV_ERR_NOT_SUPPORTED,
                      "filter: engine FUSED (the fused tensor-core kernel) is not available on "
                      "the %s backend%s; use AUTO or CONV",
                      ctx->be->name, ctx->be->filter_fused ? " of a GPU without tensor cores" : "");
    if (f->engine == FV_FILTER_ENGINE_DIRECT && !direct_ok)
        s = fv__error(FV_ERR_NOT_SUPPORTED,
                      "filter: engine DIRECT (the direct CUDA kernel) is not available on the %s "
                      "backend; use AUTO or CONV",
                      ctx->be->name);
    if (s == FV_OK) {
        fv__obj_internal(1);
        s = plan(f);
        if (s == FV_OK && f->engine == FV_FILTER_ENGINE_AUTO) s = choose_auto(f);
        fv__obj_internal(0);
    }
    f->desc.kernel = NULL;
    if (s != FV_OK) {
        fv_filter_destroy(f);
        return fv__error_prefix(s, "fv_filter_create");
    }
    *out = f;
    return FV_OK;
}

void fv_filter_destroy(fv_filter *f) {
    FV__HOLD_WAIT(f ? f->ctx : NULL);
    if (!f) return;
    fv__obj_gone(f->ctx, FV__OBJ_FILTER);
    fv__obj_internal(1);
    fv_tensor_destroy(f->e);
    fv_tensor_destroy(f->y);
    fv_tensor_destroy(f->x);
    fv_conv2d_destroy(f->conv);
    fv_tensor_destroy(f->w);
    fv__obj_internal(0);
    free(f);
}

const fv_conv2d *fv_filter_conv(const fv_filter *f) {
    return f ? f->conv : NULL;
}

fv_status fv_filter_info_get(const fv_filter *f, fv_filter_info *out) {
    FV__HOLD(f ? f->ctx : NULL);
    FV_REQUIRE(f && out, FV_ERR_BAD_PARAM, "fv_filter_info_get: %s is NULL", f ? "out" : "filter");
    memset(out, 0, sizeof *out);
    out->engine = f->engine;
    const char *path;
    if (f->engine == FV_FILTER_ENGINE_FUSED) {
        path = "fused tensor-core kernel (WMMA m16n16k16, FP16 in, FP32 accumulate)";
        out->tensor_cores = 1;
    } else if (f->engine == FV_FILTER_ENGINE_DIRECT) {
        path = f->direct_exact ? "direct CUDA-core stencil (FP32 sums, exact: FUSED's bytes)"
                               : "direct CUDA-core stencil (FP32 sums, rounded)";
    } else {
        fv_conv2d_info ci;
        FV_TRY(fv_conv2d_info_get(f->conv, &ci));
        out->tensor_cores = ci.tensor_cores;
        path = f->ctx->backend == FV_BACKEND_CPU ? "pack + conv + edge + unpack (CPU reference)"
                                                 : "pack + cuDNN conv + edge + unpack";
    }
    snprintf(out->path, sizeof out->path, "%s", path);
    out->kernel_rows = f->r, out->kernel_cols = f->s;
    out->input_channels = f->in_c;
    out->edge_channels = f->m;
    out->conv_outputs = f->m * (f->pairs ? 2 : 1);
    out->timed_ms[0] = f->timed_ms[0], out->timed_ms[1] = f->timed_ms[1];
    out->direct_exact = f->direct_exact;
    out->direct_wave_less = f->wave_less;
    return FV_OK;
}

static size_t bytes_per_pixel(fv_pixel_format f) {
    return f == FV_PIXEL_RGBA32                         ? 4
           : f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 ? 3
           : f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY   ? 2
                                                        : 1;
}

/* Fills an image's defaults (as fv_image_pack does) and checks its rows. */
static fv_status image_normalize(const char *op, const char *what, const fv_image *img,
                                 fv_image *n) {
    *n = *img;
    FV_REQUIRE(img->data, FV_ERR_BAD_PARAM, "%s: %s image data is NULL", op, what);
    const size_t row = (size_t)img->width * bytes_per_pixel(img->format);
    if (n->stride == 0) n->stride = row;
    FV_REQUIRE(n->stride >= row, FV_ERR_BAD_PARAM,
               "%s: %s stride %zu is smaller than a %s row of %d pixels (%zu bytes)", op, what,
               n->stride, fv_pixel_format_name(img->format), img->width, row);
    if (img->format == FV_PIXEL_NV12) {
        if (!n->uv) n->uv = (unsigned char *)n->data + n->stride * (size_t)img->height;
        if (n->uv_stride == 0) n->uv_stride = n->stride;
        FV_REQUIRE(n->uv_stride >= (size_t)img->width, FV_ERR_BAD_PARAM,
                   "%s: NV12 uv_stride %zu is smaller than the width %d", op, n->uv_stride,
                   img->width);
    }
    return FV_OK;
}

fv_status fv_filter_apply(fv_filter *f, const fv_image *in, fv_image *out) {
    FV__HOLD(f ? f->ctx : NULL);
    const char *op = "filter_apply";
    FV_REQUIRE(f, FV_ERR_BAD_PARAM, "%s: filter is NULL", op);
    FV_REQUIRE(in && out, FV_ERR_BAD_PARAM, "%s: %s image is NULL", op, in ? "output" : "input");
    const fv_filter_desc *d = &f->desc;
    FV_REQUIRE(in->format == d->format, FV_ERR_BAD_PARAM,
               "%s: input format %s, but the filter was made for %s", op,
               fv_pixel_format_name(in->format), fv_pixel_format_name(d->format));
    FV_REQUIRE(in->width == d->width && in->height == d->height, FV_ERR_BAD_PARAM,
               "%s: input frame %dx%d, but the filter was made for %dx%d", op, in->width,
               in->height, d->width, d->height);
    FV_REQUIRE(out->width == d->width && out->height == d->height, FV_ERR_BAD_PARAM,
               "%s: output frame %dx%d, but the filter was made for %dx%d", op, out->width,
               out->height, d->width, d->height);
    FV_REQUIRE(out->format == FV_PIXEL_GRAY8 || out->format == FV_PIXEL_RGB24 ||
                   out->format == FV_PIXEL_BGR24 || out->format == FV_PIXEL_RGBA32,
               FV_ERR_NOT_SUPPORTED,
               "%s: output format %s is not supported (GRAY8, RGB24, BGR24, RGBA32 are)", op,
               fv_pixel_format_name(out->format));
    fv_context *ctx = f->ctx;
    if (f->engine == FV_FILTER_ENGINE_FUSED || f->engine == FV_FILTER_ENGINE_DIRECT) {
        fv_image i, o;
        FV_TRY(image_normalize(op, "input", in, &i));
        FV_TRY(image_normalize(op, "output", out, &o));
        return run_kernel(f, f->engine, &i, &o);
    }
    fv_unpack_desc ud = {.absolute = 0, .scale = 1.0f, .bias = 0.0f};
    FV_TRY(fv_image_pack(ctx, in, f->x, NULL));
    FV_TRY(fv_conv2d_forward(f->conv, f->x, f->y));
    fv_status s = ctx->be->edge(ctx, f->y, f->pairs, d->overlay ? f->x : NULL, 255.0f, f->e,
                                255.0f * d->gain, d->threshold);
    if (s != FV_OK) return fv__error_prefix(s, op);
    return fv_image_unpack(ctx, f->e, out, &ud);
}
