/* fv_filter on CUDA, every engine (AUTO, which times the fused tensor-core
 * kernel against the direct CUDA-core one; FUSED, DIRECT and CONV, pack +
 * cuDNN + edge + unpack, forced), against the CPU backend's
 * fv_filter_apply on random frames: every kind (custom 1x1, 5x5, 15x15 with
 * negative, non-symmetric weights), grey and colour, all 7 input formats,
 * all 4 output formats, threshold, overlay, gain; odd and tiny sizes, padded
 * strides (the padding must stay untouched), 1920x1080. Outputs poisoned
 * before each run. Also: the fused path allocates nothing per frame, uses no
 * intermediate tensors, and replays from a CUDA graph.
 *
 * DIRECT against FUSED, on the GPU: byte for byte (padding included) where
 * fv_filter_info.direct_exact says the sums are exact (every input format,
 * YUV included, with built-in or coarse custom kernels); elsewhere (fine
 * custom weights) at most one level on at most 0.1% of the bytes (FP32
 * roundings in another order than the tensor cores'), or a threshold flip. Also at
 * odd sizes (1x1, 3x2, 1921x1079), widths not a multiple of 4, odd strides
 * and unaligned data pointers (every store width of the direct kernel).
 *
 * Tolerance, per output byte, from a bound on the edge value b (output
 * levels) computed here for every pixel (A = gain * sum |w| |v| over the
 * window, both gradients of a pair, v the input values 0..255). The CPU
 * backend is the FP32 reference (F32 tensors, FP32 weights): its error is
 * below A * 2^-20. Against it:
 *   CONV (cuDNN): v / 255 rounded to FP16 (relative 2^-11), the convolution
 *     rounded to FP16 (2^-11): A * 2^-10; custom weights rounded to FP16
 *     add A * 2^-11 (built-in kernels are small integers, exact);
 *   FUSED: bytes exact in FP16; YUV-converted values rounded to FP16
 *     (2^-11): A * 2^-11, and below 4 to multiples of 2^-8 (fv__yuv_grid:
 *     2^-9 more per value, gain * sum |w| * 2^-9 in all); FP32 accumulation
 *     of at most 675 products (< 2^-14 relative to A); custom weights
 *     A * 2^-11;
 * so eb = A * 2^-10 * (1.1, or 1.6 for custom kernels) + 0.01 (+ the YUV
 * term); overlay adds 0.13 (CONV's input value is v / 255 in FP16: within
 * 2^-11 * 255);
 * magnitude, max and mean are 1-Lipschitz. Rounding b to a byte:
 * |got - want| <= floor(eb) + 1. With a threshold T, a channel whose exact b
 * is within eb of T may come out either 0 or 255: skipped (and counted: at
 * most 2% of the channels). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fv_test.h"
#include "backend/pixel_math.h"

#if defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#define HAVE_CUDART 1 /* the test links the CUDA runtime: graph capture tested */
#include "fovea/fovea_cuda.h"
#endif
#endif

static fv_context *g_gpu, *g_cpu;
static int g_fused; /* AUTO takes the fused kernel on this GPU */

#define POISON 0xAB

static size_t bpp(fv_pixel_format f) {
    return f == FV_PIXEL_RGBA32                         ? 4
           : f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 ? 3
           : f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY   ? 2
                                                        : 1;
}

/* A frame in one buffer with padded rows: Y (or packed) plane, then for
 * NV12 the UV plane with its own padded stride. */
typedef struct frame {
    fv_image img;
    size_t bytes, uv_off;
} frame;

static frame frame_make(fv_pixel_format f, int w, int h, size_t pad) {
    frame fr;
    memset(&fr, 0, sizeof fr);
    fr.img.format = f, fr.img.width = w, fr.img.height = h;
    fr.img.stride = (size_t)w * bpp(f) + pad;
    fr.bytes = fr.img.stride * (size_t)h;
    if (f == FV_PIXEL_NV12) {
        fr.img.uv_stride = (size_t)w + pad + 3;
        fr.uv_off = fr.bytes;
        fr.bytes += fr.img.uv_stride * (size_t)(h / 2);
    }
    return fr;
}

static void frame_point(frame *fr, unsigned char *base) {
    fr->img.data = base;
    fr->img.uv = fr->img.format == FV_PIXEL_NV12 ? base + fr->uv_off : NULL;
}

/* Bytes in device memory: a U8 tensor of 1 x bytes. */
static fv_tensor *device_bytes(const unsigned char *src, size_t bytes) {
    fv_tensor *t;
    fv_tensor_desc d = {.dtype = FV_DTYPE_U8, .h = 1, .w = (int)bytes, .c = 1};
    FV_ASSERT_OK(fv_tensor_create(g_gpu, &d, &t));
    if (src) FV_ASSERT_OK(fv_tensor_upload(g_gpu, t, src, bytes));
    return t;
}

/* Input values 0..255 of pixel (x, y) as fv_image_pack makes them (before
 * its scale), in_c channels. */
static void pixel_values(const fv_image *im, int x, int y, int in_c, float v[3]) {
    const unsigned char *row = (const unsigned char *)im->data + (size_t)y * im->stride;
    float r = 0, g = 0, b = 0, yy = 0, u = 0, w = 0;
    int yuv = 0;
    switch (im->format) {
    case FV_PIXEL_GRAY8:
        v[0] = v[1] = v[2] = row[x];
        return;
    case FV_PIXEL_RGB24:
        r = row[3 * x], g = row[3 * x + 1], b = row[3 * x + 2];
        break;
    case FV_PIXEL_BGR24:
        b = row[3 * x], g = row[3 * x + 1], r = row[3 * x + 2];
        break;
    case FV_PIXEL_RGBA32:
        r = row[4 * x], g = row[4 * x + 1], b = row[4 * x + 2];
        break;
    case FV_PIXEL_YUYV: {
        const unsigned char *p = row + (size_t)(x & ~1) * 2;
        yy = p[(x & 1) * 2], u = p[1], w = p[3], yuv = 1;
        break;
    }
    case FV_PIXEL_UYVY: {
        const unsigned char *p = row + (size_t)(x & ~1) * 2;
        yy = p[1 + (x & 1) * 2], u = p[0], w = p[2], yuv = 1;
        break;
    }
    case FV_PIXEL_NV12: {
        const unsigned char *p =
            (const unsigned char *)im->uv + (size_t)(y / 2) * im->uv_stride + (size_t)(x & ~1);
        yy = row[x], u = p[0], w = p[1], yuv = 1;
        break;
    }
    default:
        break;
    }
    if (yuv && in_c == 1)
        v[0] = yy;
    else if (yuv)
        fv__yuv_to_rgb(yy, u, w, &v[0], &v[1], &v[2]);
    else if (in_c == 1)
        v[0] = fv__rgb_to_gray(r, g, b);
    else
        v[0] = r, v[1] = g, v[2] = b;
}

static const float lap[9] = {1, 1, 1, 1, -8, 1, 1, 1, 1};
static const float sobel[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
static const float scharr[9] = {-3, 0, 3, -10, 0, 10, -3, 0, 3};
static const float prewitt[9] = {-1, 0, 1, -1, 0, 1, -1, 0, 1};

/* Per output pixel: the exact edge value b of each output channel (before
 * threshold and overlay) and the bound eb on two paths' difference. */
static void reference(const fv_filter_desc *d, const fv_image *im, double *bref, double *eb) {
    const int W = d->width, H = d->height, in_c = d->format == FV_PIXEL_GRAY8 ? 1 : 3;
    const int m = d->output == FV_FILTER_OUT_COLOR ? in_c : 1;
    const int pairs =
        d->kind == FV_FILTER_SOBEL || d->kind == FV_FILTER_SCHARR || d->kind == FV_FILTER_PREWITT;
    const double gain = d->gain == 0 ? 1.0 : d->gain;
    int R = 3, S = 3;
    static double k[2][FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL];
    const float *k0 = d->kind == FV_FILTER_SOBEL     ? sobel
                      : d->kind == FV_FILTER_SCHARR  ? scharr
                      : d->kind == FV_FILTER_PREWITT ? prewitt
                                                     : lap;
    if (d->kind == FV_FILTER_CUSTOM) {
        R = d->kernel_rows, S = d->kernel_cols;
        for (int i = 0; i < R * S; i++)
            k[0][i] = d->kernel[i];
    } else {
        for (int i = 0; i < 9; i++)
            k[0][i] = k0[i], k[1][i] = k0[(i % 3) * 3 + i / 3];
    }
    /* FUSED and DIRECT: YUV-converted values within 2^-9 of FP16 rounding
     * (pixel_math.h's fv__yuv_grid) */
    const int yuv =
        d->format == FV_PIXEL_YUYV || d->format == FV_PIXEL_UYVY || d->format == FV_PIXEL_NV12;
    float *vals = malloc(sizeof(float) * 3 * (size_t)W * H);
    assert_non_null(vals);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            pixel_values(im, x, y, in_c, vals + 3 * ((size_t)y * W + x));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int e = 0; e < m; e++) {
                double g[2] = {0, 0}, a = 0, aw = 0;
                for (int kk = 0; kk < (pairs ? 2 : 1); kk++)
                    for (int c = 0; c < in_c; c++) {
                        if (m > 1 && c != e) continue;
                        for (int r = 0; r < R; r++)
                            for (int s = 0; s < S; s++) {
                                int iy = y + r - (R - 1) / 2, ix = x + s - (S - 1) / 2;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                double v = vals[3 * ((size_t)iy * W + ix) + c];
                                g[kk] += k[kk][r * S + s] * v;
                                a += fabs(k[kk][r * S + s]) * v;
                                aw += fabs(k[kk][r * S + s]);
                            }
                    }
                size_t o = 3 * ((size_t)y * W + x) + (size_t)e;
                bref[o] = (pairs ? sqrt(g[0] * g[0] + g[1] * g[1]) : fabs(g[0])) * gain;
                eb[o] = gain * a * (d->kind == FV_FILTER_CUSTOM ? 1.6 : 1.1) / 1024.0 + 0.01 +
                        (d->overlay ? 0.13 : 0.0) + (yuv ? gain * aw / 512.0 : 0.0);
            }
    free(vals);
}

/* The output value of channel j (edge-step channels out_c) per the rule;
 * sets *skip when a threshold makes it undecidable within eb. */
static double rule_value(const fv_filter_desc *d, const fv_image *im, const double *bref,
                         const double *eb, int x, int y, int j, int *skip, double *bound) {
    const int in_c = d->format == FV_PIXEL_GRAY8 ? 1 : 3;
    const int m = d->output == FV_FILTER_OUT_COLOR ? in_c : 1;
    size_t o = 3 * ((size_t)y * d->width + x) + (size_t)(m == 1 ? 0 : j);
    double b = bref[o];
    *bound = eb[o];
    if (d->threshold > 0) {
        if (fabs(b - d->threshold) <= eb[o]) *skip = 1;
        b = b >= d->threshold ? 255 : 0;
    }
    if (d->overlay) {
        float v[3];
        pixel_values(im, x, y, in_c, v);
        double base = v[in_c == 1 ? 0 : j];
        b = b > base ? b : base;
    }
    return b;
}

typedef struct stats {
    size_t bytes, differ, skipped, mid;
    int max;
} stats;

/* Checks got against want (the CPU's) over the frame; padding untouched. */
static void compare(const fv_filter_desc *d, const fv_image *in, const frame *out,
                    const unsigned char *got, const unsigned char *want, const char *what,
                    stats *st) {
    const int W = d->width, H = d->height, in_c = d->format == FV_PIXEL_GRAY8 ? 1 : 3;
    const int m = d->output == FV_FILTER_OUT_COLOR ? in_c : 1;
    const int out_c = d->overlay && in_c > m ? in_c : m;
    const size_t n = 3 * (size_t)W * H;
    double *bref = malloc(n * sizeof *bref), *eb = malloc(n * sizeof *eb);
    assert_true(bref && eb);
    reference(d, in, bref, eb);
    const fv_pixel_format of = out->img.format;
    const size_t ob = bpp(of), row = (size_t)W * ob;
    memset(st, 0, sizeof *st);
    for (int y = 0; y < H; y++) {
        const unsigned char *g = got + (size_t)y * out->img.stride;
        const unsigned char *w = want + (size_t)y * out->img.stride;
        for (size_t i = row; i < out->img.stride; i++)
            if (g[i] != POISON) fail_msg("%s: row %d padding byte %zu written", what, y, i - row);
        for (int x = 0; x < W; x++) {
            int skip = 0;
            double v[3], bound = 0, bj;
            for (int j = 0; j < 3; j++) {
                v[j] = j < out_c ? rule_value(d, in, bref, eb, x, y, j, &skip, &bj) : v[0];
                if (j < out_c && bj > bound) bound = bj;
            }
            const int tol = (int)floor(bound) + 1;
            const int nc = of == FV_PIXEL_GRAY8 ? 1 : (int)ob;
            for (int c = 0; c < nc; c++) {
                const size_t at = (size_t)x * ob + (size_t)c;
                const int dd = abs((int)g[at] - (int)w[at]);
                st->bytes++;
                if (of == FV_PIXEL_RGBA32 && c == 3) {
                    if (g[at] != 255 || w[at] != 255)
                        fail_msg("%s: (%d,%d) alpha %d (CPU %d), want 255", what, x, y, g[at],
                                 w[at]);
                    continue;
                }
                if (skip) {
                    st->skipped++;
                    continue;
                }
                st->differ += dd != 0;
                st->mid += w[at] > 0 && w[at] < 255;
                if (dd > st->max) st->max = dd;
                if (dd > tol) {
                    int ch = of == FV_PIXEL_BGR24 ? 2 - c : c;
                    fail_msg("%s: (%d,%d) byte %d: GPU %d, CPU %d, |diff| > %d (exact %.3f)", what,
                             x, y, c, g[at], w[at], tol,
                             of == FV_PIXEL_GRAY8 && out_c == 3 ? (v[0] + v[1] + v[2]) / 3
                                                                : v[out_c == 1 ? 0 : ch]);
                }
            }
        }
    }
    free(bref), free(eb);
}

/* The engine a filter took for the one asked: AUTO takes DIRECT only where
 * its bytes are FUSED's, and then has timed both. */
static void check_engine(const fv_filter_info *fi, fv_filter_engine asked) {
    /* taller strips only where AUTO timed them: DIRECT up to 3 x 3 */
    if (asked != FV_FILTER_ENGINE_AUTO || fi->engine != FV_FILTER_ENGINE_DIRECT ||
        fi->kernel_rows > 3 || fi->kernel_cols > 3)
        assert_int_equal(fi->direct_wave_less, 0);
    else
        assert_true(fi->direct_wave_less == 0 || fi->direct_wave_less == 1);
    if (asked != FV_FILTER_ENGINE_AUTO) {
        assert_int_equal(fi->engine, asked);
        return;
    }
    if (!g_fused) {
        assert_int_equal(fi->engine, FV_FILTER_ENGINE_CONV);
        return;
    }
    if (fi->engine == FV_FILTER_ENGINE_DIRECT)
        assert_int_equal(fi->direct_exact, 1);
    else
        assert_int_equal(fi->engine, FV_FILTER_ENGINE_FUSED);
    if (!fi->direct_exact) {
        assert_true(fi->timed_ms[0] == 0.0f && fi->timed_ms[1] == 0.0f);
        return;
    }
    if (fi->timed_ms[0] == 0.0f && fi->timed_ms[1] == 0.0f) { /* no room to time */
        assert_int_equal(fi->engine, fi->kernel_rows * fi->kernel_cols <= 9
                                         ? FV_FILTER_ENGINE_DIRECT
                                         : FV_FILTER_ENGINE_FUSED);
        return;
    }
    /* timed: the faster taken */
    assert_true(fi->timed_ms[0] > 0.0f && fi->timed_ms[1] > 0.0f);
    assert_int_equal(fi->engine, fi->timed_ms[1] < fi->timed_ms[0] ? FV_FILTER_ENGINE_DIRECT
                                                                   : FV_FILTER_ENGINE_FUSED);
}

/* DIRECT's output (got: host copy of the whole output buffer, padding
 * included) against FUSED's on the same device input (gin) and output layout
 * (gout): equal where direct_exact, else within one level on at most 0.1% of
 * the bytes (threshold flips aside). */
static void direct_vs_fused(const fv_filter_desc *dd, const frame *gin, const frame *gout,
                            const unsigned char *got, size_t bytes, const char *what) {
    fv_filter_desc d = *dd;
    d.engine = FV_FILTER_ENGINE_FUSED;
    fv_filter *f, *fd;
    FV_ASSERT_OK(fv_filter_create(g_gpu, &d, &f));
    d.engine = FV_FILTER_ENGINE_DIRECT;
    FV_ASSERT_OK(fv_filter_create(g_gpu, &d, &fd));
    fv_filter_info fi;
    FV_ASSERT_OK(fv_filter_info_get(fd, &fi));
    unsigned char *ref = malloc(bytes + 16);
    assert_non_null(ref);
    memset(ref, POISON, bytes + 16);
    /* the same offset from a 16-byte boundary as gout's data */
    const size_t off = (uintptr_t)gout->img.data % 16;
    fv_tensor *t = device_bytes(ref, bytes + 16);
    frame o = *gout;
    frame_point(&o, (unsigned char *)fv_tensor_data(t) + off);
    FV_ASSERT_OK(fv_filter_apply(f, &gin->img, &o.img));
    FV_ASSERT_OK(fv_tensor_download(g_gpu, t, ref, bytes + 16));
    FV_ASSERT_OK(fv_context_synchronize(g_gpu));
    const unsigned char *r = ref + off;
    size_t differ = 0, over = 0;
    for (size_t i = 0; i < bytes; i++) {
        const int dd2 = abs((int)got[i] - (int)r[i]);
        differ += dd2 != 0;
        over += dd2 > 1;
    }
    if (fi.direct_exact) {
        if (differ) {
            size_t i = 0;
            while (got[i] == r[i])
                i++;
            fail_msg("%s: DIRECT (exact) differs from FUSED in %zu of %zu bytes; first at byte "
                     "%zu: %d, FUSED %d",
                     what, differ, bytes, i, got[i], r[i]);
        }
    } else {
        if (differ > bytes / 1000 + 2 || (d.threshold == 0.0f && over))
            fail_msg("%s: DIRECT (rounded) differs from FUSED in %zu of %zu bytes, %zu by more "
                     "than a level",
                     what, differ, bytes, over);
    }
    fv_tensor_destroy(t);
    fv_filter_destroy(fd);
    fv_filter_destroy(f);
    free(ref);
}

/* Runs d (engine: any) on the GPU and on the CPU over one random
 * frame; returns the stats. */
static stats run_case(const fv_filter_desc *dd, fv_filter_engine engine, fv_pixel_format out_fmt,
                      const char *what) {
    fv_filter_desc d = *dd;
    if (d.format == 0) d.format = FV_PIXEL_RGB24;
    const int W = d.width, H = d.height;
    frame fin = frame_make(d.format, W, H, 7), fout = frame_make(out_fmt, W, H, 5);
    unsigned char *in = malloc(fin.bytes), *want = malloc(fout.bytes), *got = malloc(fout.bytes);
    assert_true(in && want && got);
    fv_test_fill_bytes(in, fin.bytes);
    for (size_t i = 0; i < fin.bytes; i += 5) /* flat runs keep some edges unsaturated */
        in[i] = in[i / 2];
    fv_filter *fc, *fg;
    fv_filter_desc dc = d;
    dc.engine = FV_FILTER_ENGINE_AUTO;
    FV_ASSERT_OK(fv_filter_create(g_cpu, &dc, &fc));
    d.engine = engine;
    FV_ASSERT_OK(fv_filter_create(g_gpu, &d, &fg));

    fv_filter_info fi;
    FV_ASSERT_OK(fv_filter_info_get(fg, &fi));
    check_engine(&fi, engine);
    if (fi.engine != FV_FILTER_ENGINE_CONV) {
        assert_null(fv_filter_conv(fg));
        assert_int_equal(fi.tensor_cores, fi.engine == FV_FILTER_ENGINE_FUSED);
    } else {
        assert_non_null(fv_filter_conv(fg));
    }

    frame_point(&fin, in);
    memset(want, POISON, fout.bytes);
    frame_point(&fout, want);
    FV_ASSERT_OK(fv_filter_apply(fc, &fin.img, &fout.img));

    memset(got, POISON, fout.bytes);
    fv_tensor *tin = device_bytes(in, fin.bytes), *tout = device_bytes(got, fout.bytes);
    frame gin = fin, gout = fout;
    frame_point(&gin, fv_tensor_data(tin));
    frame_point(&gout, fv_tensor_data(tout));
    FV_ASSERT_OK(fv_filter_apply(fg, &gin.img, &gout.img));
    FV_ASSERT_OK(fv_tensor_download(g_gpu, tout, got, fout.bytes));
    FV_ASSERT_OK(fv_context_synchronize(g_gpu));

    stats st;
    compare(&d, &fin.img, &fout, got, want, what, &st);
    printf("%-52s %-6s %7zu B: %5.2f%% differ, max %d, %zu skipped\n", what,
           fv_filter_engine_name(fi.engine), st.bytes, 100.0 * (double)st.differ / (double)st.bytes,
           st.max, st.skipped);
    if (fi.engine == FV_FILTER_ENGINE_DIRECT && g_fused) /* and against FUSED on the GPU */
        direct_vs_fused(&d, &gin, &gout, got, fout.bytes, what);
    /* a case with more than 1 byte in 20 on the threshold tests too little */
    if (st.skipped * 20 > st.bytes)
        fail_msg("%s: %zu of %zu bytes on the threshold", what, st.skipped, st.bytes);
    fv_tensor_destroy(tout);
    fv_tensor_destroy(tin);
    fv_filter_destroy(fg);
    fv_filter_destroy(fc);
    free(in), free(want), free(got);
    return st;
}

static const fv_pixel_format in_fmts[7] = {FV_PIXEL_GRAY8,  FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                           FV_PIXEL_RGBA32, FV_PIXEL_YUYV,  FV_PIXEL_UYVY,
                                           FV_PIXEL_NV12};
static const fv_pixel_format out_fmts[4] = {FV_PIXEL_GRAY8, FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                            FV_PIXEL_RGBA32};
#define ENGINES 4
static const fv_filter_engine engines[ENGINES] = {FV_FILTER_ENGINE_AUTO, FV_FILTER_ENGINE_CONV,
                                                  FV_FILTER_ENGINE_FUSED, FV_FILTER_ENGINE_DIRECT};

/* Engine e can be created here (FUSED needs tensor cores). */
static int engine_runs(fv_filter_engine e) {
    return e != FV_FILTER_ENGINE_FUSED || g_fused;
}

static float k1[1], k5[25], k15[225], k3x7[21];

static void make_kernels(void) {
    k1[0] = -1.75f;                            /* a negative 1x1: |x| of the frame, scaled */
    fv_test_fill_uniform(k5, 25, -1.0f, 1.0f); /* non-symmetric, negative, non-integer */
    fv_test_fill_uniform(k15, 225, -0.1f, 0.1f);
    fv_test_fill_uniform(k3x7, 21, -1.0f, 1.0f);
}

/* Kind i of 7: the four built-ins, custom 1x1, 5x5, 15x15. */
static fv_filter_desc kind_desc(int i, const char **name) {
    fv_filter_desc d;
    memset(&d, 0, sizeof d);
    static const fv_filter_kind kinds[4] = {FV_FILTER_LAPLACIAN, FV_FILTER_SOBEL, FV_FILTER_SCHARR,
                                            FV_FILTER_PREWITT};
    static const float gains[4] = {0.08f, 0.08f, 0.02f, 0.08f};
    static const char *customs[3] = {"custom 1x1", "custom 5x5", "custom 15x15"};
    if (i < 4) {
        d.kind = kinds[i], d.gain = gains[i];
        *name = fv_filter_kind_name(kinds[i]);
        return d;
    }
    d.kind = FV_FILTER_CUSTOM;
    *name = customs[i - 4];
    if (i == 4) d.kernel = k1, d.kernel_rows = d.kernel_cols = 1, d.gain = 0.5f;
    if (i == 5) d.kernel = k5, d.kernel_rows = d.kernel_cols = 5, d.gain = 0.15f;
    if (i == 6) d.kernel = k15, d.kernel_rows = d.kernel_cols = 15, d.gain = 0.5f;
    return d;
}

/* quick (the sanitizers): engine e on kind k in every_kind... and the
 * threshold and tiny-frame tests. DIRECT on every kind (each of its kernels;
 * FUSED runs beside it in direct_vs_fused), CONV on one single and one
 * paired built-in kernel and on the 15x15, AUTO and FUSED on the Laplacian
 * (AUTO times FUSED and DIRECT on its scratch frame). */
static int quick_skips(fv_filter_engine e, int k) {
    if (!fv_test_quick() || e == FV_FILTER_ENGINE_DIRECT) return 0;
    if (e == FV_FILTER_ENGINE_CONV) return k != 0 && k != 1 && k != 6;
    return k != 0;
}

static void every_kind_format_and_output_matches_the_cpu(void **state) {
    fv_test_seed(21);
    make_kernels();
    for (int e = 0; e < ENGINES; e++)
        for (int k = 0; k < 7; k++)
            for (int o = 0; o < 2; o++)
                for (int f = 0; f < 7; f++) {
                    if (quick_skips(engines[e], k)) continue;
                    const char *kn;
                    fv_filter_desc d = kind_desc(k, &kn);
                    const fv_pixel_format fmt = in_fmts[f];
                    d.format = fmt;
                    d.output = o ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY;
                    /* odd where the format allows */
                    d.width = fmt == FV_PIXEL_YUYV || fmt == FV_PIXEL_UYVY || fmt == FV_PIXEL_NV12
                                  ? 38
                                  : 37;
                    d.height = fmt == FV_PIXEL_NV12 ? 24 : 23;
                    const fv_pixel_format of = out_fmts[(k + f + o) % 4];
                    char what[128];
                    snprintf(what, sizeof what, "%s %s %s -> %s", kn, o ? "colour" : "grey",
                             fv_pixel_format_name(fmt), fv_pixel_format_name(of));
                    if (!engine_runs(engines[e])) continue;
                    stats st = run_case(&d, engines[e], of, what);
                    assert_true(st.mid > st.bytes / 20); /* real values, not all saturated */
                }
}

static void threshold_overlay_gain_match_the_cpu(void **state) {
    fv_test_seed(22);
    make_kernels();
    const float gains[3] = {0.05f, 0.3f, 2.0f};
    const float thresholds[2] = {0.0f, 100.5f};
    const int kinds[3] = {1, 0, 5}; /* sobel, laplacian, custom 5x5 */
    const fv_pixel_format fmts[3] = {FV_PIXEL_RGB24, FV_PIXEL_GRAY8, FV_PIXEL_NV12};
    for (int e = 0; e < ENGINES; e++)
        for (int ki = 0; ki < 3; ki++)
            for (int g = 0; g < 3; g++)
                for (int t = 0; t < 2; t++)
                    for (int ov = 0; ov < 2; ov++)
                        for (int o = 0; o < 2; o++) {
                            /* quick: one gain a case, in turn */
                            if (fv_test_quick() &&
                                (g != (ki + t + ov + o) % 3 || quick_skips(engines[e], kinds[ki])))
                                continue;
                            const char *kn;
                            fv_filter_desc d = kind_desc(kinds[ki], &kn);
                            d.format = fmts[(ki + g + t) % 3];
                            d.width = 66, d.height = 18; /* a partial second tile */
                            d.gain = gains[g], d.threshold = thresholds[t], d.overlay = ov;
                            d.output = o ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY;
                            const fv_pixel_format of = out_fmts[(g + t + ov + o) % 4];
                            char what[128];
                            snprintf(what, sizeof what, "%s %s %s gain %g thr %g%s -> %s", kn,
                                     o ? "colour" : "grey", fv_pixel_format_name(d.format),
                                     (double)d.gain, (double)d.threshold, ov ? " overlay" : "",
                                     fv_pixel_format_name(of));
                            if (engine_runs(engines[e])) run_case(&d, engines[e], of, what);
                        }
    /* a non-square custom kernel */
    fv_filter_desc d = {.kind = FV_FILTER_CUSTOM,
                        .width = 80,
                        .height = 61,
                        .format = FV_PIXEL_BGR24,
                        .output = FV_FILTER_OUT_COLOR,
                        .kernel = k3x7,
                        .kernel_rows = 3,
                        .kernel_cols = 7,
                        .gain = 0.2f};
    for (int e = 0; e < ENGINES; e++)
        if (engine_runs(engines[e]))
            run_case(&d, engines[e], FV_PIXEL_RGBA32, "custom 3x7 colour BGR24 -> RGBA32");
    d.kernel_rows = 7, d.kernel_cols = 3;
    for (int e = 0; e < ENGINES; e++)
        if (engine_runs(engines[e]))
            run_case(&d, engines[e], FV_PIXEL_GRAY8, "custom 7x3 colour BGR24 -> GRAY8");
}

static void tiny_and_odd_frames_match_the_cpu(void **state) {
    fv_test_seed(24);
    make_kernels();
    const struct {
        fv_pixel_format f;
        int w, h;
    } sizes[] = {{FV_PIXEL_GRAY8, 1, 1},   {FV_PIXEL_RGB24, 1, 1},    {FV_PIXEL_YUYV, 2, 1},
                 {FV_PIXEL_UYVY, 2, 3},    {FV_PIXEL_NV12, 2, 2},     {FV_PIXEL_RGBA32, 1, 37},
                 {FV_PIXEL_BGR24, 37, 1},  {FV_PIXEL_RGB24, 17, 9},   {FV_PIXEL_GRAY8, 65, 9},
                 {FV_PIXEL_NV12, 130, 18}, {FV_PIXEL_RGB24, 1030, 2}, {FV_PIXEL_RGBA32, 515, 6},
                 {FV_PIXEL_BGR24, 513, 5}, {FV_PIXEL_GRAY8, 1027, 2}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int k = 0; k < 7; k += 3) /* laplacian, prewitt, custom 15x15 (bigger than frame) */
            for (int e = 0; e < ENGINES; e++) {
                if (quick_skips(engines[e], k) && engines[e] != FV_FILTER_ENGINE_CONV) continue;
                const char *kn;
                fv_filter_desc d = kind_desc(k, &kn);
                d.format = sizes[i].f, d.width = sizes[i].w, d.height = sizes[i].h;
                d.output = i % 2 ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY;
                d.overlay = (int)(i / 3 % 2);
                const fv_pixel_format of = out_fmts[(i + (size_t)k) % 4];
                char what[128];
                snprintf(what, sizeof what, "%s %dx%d %s -> %s", kn, d.width, d.height,
                         fv_pixel_format_name(d.format), fv_pixel_format_name(of));
                if (engine_runs(engines[e])) run_case(&d, engines[e], of, what);
            }
}

/* DIRECT against FUSED (GPU only, no CPU reference: fast enough for 1921 x
 * 1079 and 4K): every kind (custom 5x5 and 3x3 with integer weights: exact
 * sums; 15x15 and 3x1 random: rounded), grey and colour, overlay, every
 * input and output format; odd sizes, widths not a multiple of 4 nor of the
 * strip kernel's 512 columns, 1-, 2- and 3-row frames, frames tall enough
 * for the strip kernel's strips to wrap its ring of row stages (4K; 37 x
 * 20001), strides padded by odd amounts and GRAY8 strides of 16 bytes'
 * multiple, input and output pointers at every offset from 16 bytes that
 * selects another store width. */
static void direct_matches_fused_at_odd_sizes_strides_and_alignments(void **state) {
    if (!g_fused) skip();
    fv_test_seed(26);
    make_kernels();
    static float k5i[25], k3i[9], k3x1[3];
    for (int i = 0; i < 25; i++)
        k5i[i] = (float)(i * 5 % 7 - 3); /* -3..3, non-symmetric */
    for (int i = 0; i < 9; i++)
        k3i[i] = (float)(i * 4 % 9) - 4.5f; /* halves: exact with q = 1 */
    fv_test_fill_uniform(k3x1, 3, -1.0f, 1.0f);
    const struct {
        fv_pixel_format f;
        int w, h;
    } sizes[] = {
        {FV_PIXEL_GRAY8, 1, 1},       {FV_PIXEL_RGB24, 1, 1},       {FV_PIXEL_RGB24, 3, 2},
        {FV_PIXEL_BGR24, 5, 3},       {FV_PIXEL_RGBA32, 7, 5},      {FV_PIXEL_GRAY8, 13, 4},
        {FV_PIXEL_RGB24, 130, 17},    {FV_PIXEL_YUYV, 2, 1},        {FV_PIXEL_UYVY, 6, 3},
        {FV_PIXEL_NV12, 10, 4},       {FV_PIXEL_RGBA32, 64, 16},    {FV_PIXEL_RGB24, 513, 2},
        {FV_PIXEL_BGR24, 1025, 3},    {FV_PIXEL_GRAY8, 1029, 1},    {FV_PIXEL_RGBA32, 511, 7},
        {FV_PIXEL_RGB24, 1921, 1079}, {FV_PIXEL_GRAY8, 1921, 1079}, {FV_PIXEL_NV12, 1922, 1080},
        {FV_PIXEL_RGB24, 3840, 2160}, {FV_PIXEL_GRAY8, 37, 20001},  {FV_PIXEL_RGBA32, 3843, 2161},
        {FV_PIXEL_GRAY8, 1000, 37},   {FV_PIXEL_GRAY8, 1008, 9},    {FV_PIXEL_GRAY8, 3840, 2160}};
    const size_t out_offs[4] = {0, 8, 4, 3}; /* 16-, 8-, 4-byte and byte stores */
    size_t cases = 0, exact = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const int big = (size_t)sizes[i].w * (size_t)sizes[i].h > 100000;
        /* quick (sanitizers): no 4K frames; 37 x 20001 still wraps the ring */
        if (fv_test_quick() && (size_t)sizes[i].w * (size_t)sizes[i].h > 3000000) continue;
        for (int k = 0; k < 10; k++) {
            if (big && k != 0 && k != 1 && k != 8) continue;
            for (int o = 0; o < 2; o++)
                for (int al = 0; al < (big ? 1 : 4); al++) {
                    /* quick: small frames in one output and one alignment
                     * a kind, in turn (every one met over the kinds) */
                    if (fv_test_quick() && !big &&
                        (o != (int)((i + (size_t)k) % 2) || al != (int)((i + (size_t)k) % 4)))
                        continue;
                    const char *kn = "custom 5x5 integer";
                    fv_filter_desc d;
                    if (k < 7) {
                        d = kind_desc(k, &kn);
                    } else {
                        memset(&d, 0, sizeof d);
                        d.kind = FV_FILTER_CUSTOM, d.kernel = k5i, d.gain = 0.05f;
                        d.kernel_rows = d.kernel_cols = 5;
                        if (k == 8) /* the strip kernel's exact case with custom weights */
                            kn = "custom 3x3 halves", d.kernel = k3i, d.kernel_rows = 3,
                            d.kernel_cols = 3;
                        if (k == 9) /* 3 x 1, zero-padded to 3 x 3; rounded sums */
                            kn = "custom 3x1", d.kernel = k3x1, d.kernel_rows = 3,
                            d.kernel_cols = 1, d.gain = 0.3f;
                    }
                    d.format = sizes[i].f, d.width = sizes[i].w, d.height = sizes[i].h;
                    d.output = o ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY;
                    d.overlay = (int)((i + (size_t)k) % 3 == 0);
                    d.threshold = (i + (size_t)k + (size_t)al) % 5 == 4 ? 60.5f : 0.0f;
                    d.engine = FV_FILTER_ENGINE_DIRECT;
                    const fv_pixel_format of = out_fmts[(i + (size_t)k + (size_t)o + al) % 4];
                    /* input strides: 3 or 6 bytes of padding; for GRAY8, kinds 0, 3, 6
                     * and 9 pad to 16 bytes' multiple (the strip kernel's planned
                     * staging) */
                    const size_t pad = k % 3 ? (size_t)(k % 3) * 3
                                       : d.format == FV_PIXEL_GRAY8
                                           ? (16 - (size_t)d.width % 16) % 16
                                           : 0;
                    frame fin = frame_make(d.format, d.width, d.height, pad);
                    frame fout = frame_make(of, d.width, d.height, i % 3);
                    const size_t in_off = (i + (size_t)k) % 4, out_off = out_offs[al];
                    unsigned char *in = malloc(fin.bytes), *got = malloc(fout.bytes + 16);
                    assert_true(in && got);
                    fv_test_fill_bytes(in, fin.bytes);
                    for (size_t b = 0; b < fin.bytes; b += 5)
                        in[b] = in[b / 2];
                    memset(got, POISON, fout.bytes + 16);
                    fv_tensor *tin = device_bytes(NULL, fin.bytes + 4);
                    fv_tensor *tout = device_bytes(got, fout.bytes + 16);
                    unsigned char *din = (unsigned char *)fv_tensor_data(tin) + in_off;
                    unsigned char *dout = (unsigned char *)fv_tensor_data(tout) + out_off;
                    FV_ASSERT_OK(fv_context_synchronize(g_gpu));
                    fv_filter *f;
                    FV_ASSERT_OK(fv_filter_create(g_gpu, &d, &f));
                    fv_filter_info fi;
                    FV_ASSERT_OK(fv_filter_info_get(f, &fi));
                    assert_int_equal(fi.engine, FV_FILTER_ENGINE_DIRECT);
                    frame_point(&fin, din);
                    frame_point(&fout, dout);
                    /* the input goes up through a host copy at the offset */
                    unsigned char *staged = malloc(fin.bytes + 4);
                    assert_non_null(staged);
                    memset(staged, 0, fin.bytes + 4);
                    memcpy(staged + in_off, in, fin.bytes);
                    FV_ASSERT_OK(fv_tensor_upload(g_gpu, tin, staged, fin.bytes + 4));
                    FV_ASSERT_OK(fv_filter_apply(f, &fin.img, &fout.img));
                    FV_ASSERT_OK(fv_tensor_download(g_gpu, tout, got, fout.bytes + 16));
                    FV_ASSERT_OK(fv_context_synchronize(g_gpu));
                    char what[160];
                    snprintf(what, sizeof what, "%s %s%s %dx%d %s -> %s (in +%zu, out +%zu)", kn,
                             o ? "colour" : "grey", d.overlay ? " overlay" : "", d.width, d.height,
                             fv_pixel_format_name(d.format), fv_pixel_format_name(of), in_off,
                             out_off);
                    for (size_t b = 0; b < out_off; b++) /* nothing before the image */
                        if (got[b] != POISON) fail_msg("%s: byte %zu before the output", what, b);
                    for (size_t b = out_off + fout.bytes; b < fout.bytes + 16; b++)
                        if (got[b] != POISON) fail_msg("%s: byte after the output written", what);
                    direct_vs_fused(&d, &fin, &fout, got + out_off, fout.bytes, what);
                    cases++;
                    exact += fi.direct_exact;
                    fv_filter_destroy(f);
                    fv_tensor_destroy(tout);
                    fv_tensor_destroy(tin);
                    free(in), free(got), free(staged);
                }
        }
    }
    printf("DIRECT vs FUSED: %zu cases, %zu byte for byte (direct_exact)\n", cases, exact);
    assert_true(exact > cases / 3);
}

/* The strip kernel's colour stores (RGB24, BGR24, RGBA32 out), which take
 * paths of their own where the output and its stride are 16-byte aligned
 * and a warp's pixels are all in the frame (filter_direct_strip.cu,
 * FV_FILTER_FAST_COLOR): one edge plane, colour edges and overlay, the
 * built-in kinds and a custom 1x1 (the taps form) from every input
 * family, widths whose last warp (1000) or last block (2056) is partly
 * outside the frame, so that both paths write one frame; strided outputs,
 * the rest of each row untouched. */
static void direct_colour_stores_match_fused(void **state) {
    if (!g_fused) skip();
    fv_test_seed(27);
    const fv_pixel_format ins[5] = {FV_PIXEL_GRAY8, FV_PIXEL_RGB24, FV_PIXEL_RGBA32, FV_PIXEL_YUYV,
                                    FV_PIXEL_NV12};
    const fv_pixel_format outs[3] = {FV_PIXEL_RGB24, FV_PIXEL_BGR24, FV_PIXEL_RGBA32};
    const int widths[2] = {1000, 2056}, heights[2] = {14, 8}; /* even: NV12 */
    make_kernels();
    size_t cases = 0;
    for (int f = 0; f < 5; f++)
        for (int k = 0; k < 5; k++)
            for (int of = 0; of < 3; of++)
                for (int s = 0; s < 2; s++)
                    for (int v = 0; v < 3; v++) {
                        /* v: one plane; colour edges; one plane with overlay */
                        const char *kn;
                        fv_filter_desc d = kind_desc(k, &kn);
                        d.format = ins[f], d.width = widths[s], d.height = heights[s];
                        d.output = v == 1 ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY;
                        d.overlay = v == 2;
                        d.threshold = (f + k + of + s + v) % 4 == 3 ? 40.5f : 0.0f;
                        d.engine = FV_FILTER_ENGINE_DIRECT;
                        /* rows of 16 bytes' multiple, 16 more: padding to keep */
                        const size_t row = (size_t)d.width * bpp(outs[of]);
                        frame fin = frame_make(d.format, d.width, d.height, (size_t)(f + s) % 3);
                        frame fout =
                            frame_make(outs[of], d.width, d.height, (16 - row % 16) % 16 + 16);
                        unsigned char *in = malloc(fin.bytes), *got = malloc(fout.bytes);
                        assert_true(in && got);
                        fv_test_fill_bytes(in, fin.bytes);
                        memset(got, POISON, fout.bytes);
                        fv_tensor *tin = device_bytes(in, fin.bytes);
                        fv_tensor *tout = device_bytes(got, fout.bytes);
                        frame_point(&fin, (unsigned char *)fv_tensor_data(tin));
                        frame_point(&fout, (unsigned char *)fv_tensor_data(tout));
                        fv_filter *flt;
                        FV_ASSERT_OK(fv_filter_create(g_gpu, &d, &flt));
                        FV_ASSERT_OK(fv_filter_apply(flt, &fin.img, &fout.img));
                        FV_ASSERT_OK(fv_tensor_download(g_gpu, tout, got, fout.bytes));
                        FV_ASSERT_OK(fv_context_synchronize(g_gpu));
                        char what[160];
                        snprintf(what, sizeof what, "%s %s%s %dx%d %s -> %s%s", kn,
                                 v == 1 ? "colour" : "grey", v == 2 ? " overlay" : "", d.width,
                                 d.height, fv_pixel_format_name(d.format),
                                 fv_pixel_format_name(outs[of]),
                                 d.threshold > 0.0f ? " threshold" : "");
                        for (int y = 0; y < d.height; y++)
                            for (size_t b = row; b < fout.img.stride; b++)
                                if (got[(size_t)y * fout.img.stride + b] != POISON)
                                    fail_msg("%s: row %d's padding byte %zu written", what, y, b);
                        direct_vs_fused(&d, &fin, &fout, got, fout.bytes, what);
                        cases++;
                        fv_filter_destroy(flt);
                        fv_tensor_destroy(tout);
                        fv_tensor_destroy(tin);
                        free(in), free(got);
                    }
    printf("DIRECT colour stores vs FUSED: %zu cases\n", cases);
}

static void a_1080p_frame_matches_the_cpu(void **state) {
    fv_test_seed(23);
    fv_filter_desc d = {.kind = FV_FILTER_SOBEL,
                        .width = 1920,
                        .height = 1080,
                        .format = FV_PIXEL_RGB24,
                        .gain = 0.08f};
    for (int e = 0; e < ENGINES; e++) {
        if (!engine_runs(engines[e])) continue;
        if (fv_test_quick() && engines[e] == FV_FILTER_ENGINE_AUTO) continue; /* times both */
        run_case(&d, engines[e], FV_PIXEL_GRAY8, "sobel grey 1920x1080 RGB24 -> GRAY8");
        fv_filter_desc c = d;
        c.format = FV_PIXEL_NV12, c.output = FV_FILTER_OUT_COLOR, c.overlay = 1;
        run_case(&c, engines[e], FV_PIXEL_RGB24, "sobel colour overlay 1920x1080 NV12");
    }
}

/* The fused filter: a few KB of weights and nothing else in the DEVICE pool;
 * 100 applies leave every pool as they found it. */
static void fused_applies_allocate_nothing(void **state) {
    if (!g_fused) skip();
    enum { W = 1920, H = 1080 };
    fv_pool *dev = fv_context_pool(g_gpu, FV_POOL_DEVICE);
    fv_pool_stats s0, s1, s2;
    fv_tensor *tin = device_bytes(NULL, (size_t)W * H * 3), *tout = device_bytes(NULL, W * H);
    FV_ASSERT_OK(fv_pool_stats_get(dev, &s0));
    fv_filter_desc d = {.kind = FV_FILTER_SCHARR, .width = W, .height = H, .gain = 0.02f};
    fv_filter *f;
    FV_ASSERT_OK(fv_filter_create(g_gpu, &d, &f));
    FV_ASSERT_OK(fv_pool_stats_get(dev, &s1));
    assert_true(s1.in_use - s0.in_use <= 4096); /* the 32 x 16 FP16 weights, aligned */
    fv_image in = {.format = FV_PIXEL_RGB24, .width = W, .height = H, .data = fv_tensor_data(tin)};
    fv_image out = {
        .format = FV_PIXEL_GRAY8, .width = W, .height = H, .data = fv_tensor_data(tout)};
    const fv_pool_kind kinds[3] = {FV_POOL_DEVICE, FV_POOL_PINNED, FV_POOL_HOST};
    fv_pool_stats before[3], after[3];
    for (int p = 0; p < 3; p++)
        FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(g_gpu, kinds[p]), &before[p]));
    FV_ASSERT_OK(fv_filter_apply(f, &in, &out)); /* warm */
    FV_ASSERT_OK(fv_context_synchronize(g_gpu));
    struct timespec t0, t1;
    timespec_get(&t0, TIME_UTC); /* C11 */
    const int frames = fv_test_quick() ? 10 : 100;
    for (int i = 0; i < frames; i++)
        FV_ASSERT_OK(fv_filter_apply(f, &in, &out));
    FV_ASSERT_OK(fv_context_synchronize(g_gpu));
    timespec_get(&t1, TIME_UTC);
    printf("fused scharr 1080p RGB24 -> GRAY8: %.4f ms per frame (host clock over %d frames, "
           "launch overhead included)\n",
           ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) /
               frames,
           frames);
    for (int p = 0; p < 3; p++) {
        FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(g_gpu, kinds[p]), &after[p]));
        assert_int_equal(before[p].backing_allocs, after[p].backing_allocs);
        assert_int_equal(before[p].carve_outs, after[p].carve_outs);
        assert_int_equal(before[p].in_use, after[p].in_use);
    }
    fv_filter_destroy(f);
    FV_ASSERT_OK(fv_pool_stats_get(dev, &s2));
    assert_int_equal(s2.in_use, s0.in_use);
    fv_tensor_destroy(tin), fv_tensor_destroy(tout);
}

#ifdef HAVE_CUDART
/* fv_filter_apply on the fused path captured into a CUDA graph: replaying it
 * writes what a direct apply writes, and reads the input buffer live. */
static void graph_replay(fv_filter_engine engine) {
    enum { W = 302, H = 77 }; /* YUYV: even width; tails in x and y */
    const size_t ib2 = (size_t)W * H * 2, ob2 = (size_t)W * H * 4;
    fv_test_seed(25);
    unsigned char *in = malloc(ib2), *direct = malloc(ob2), *replay = malloc(ob2);
    assert_true(in && direct && replay);
    fv_filter_desc d = {.kind = FV_FILTER_SOBEL,
                        .width = W,
                        .height = H,
                        .format = FV_PIXEL_YUYV,
                        .output = FV_FILTER_OUT_COLOR,
                        .gain = 0.1f,
                        .overlay = 1,
                        .engine = engine};
    fv_filter *f;
    FV_ASSERT_OK(fv_filter_create(g_gpu, &d, &f));
    fv_tensor *tin = device_bytes(NULL, ib2), *tout = device_bytes(NULL, ob2);
    fv_image src = {.format = FV_PIXEL_YUYV, .width = W, .height = H, .data = fv_tensor_data(tin)};
    fv_image dst = {
        .format = FV_PIXEL_RGBA32, .width = W, .height = H, .data = fv_tensor_data(tout)};
    cudaStream_t s;
    FV_ASSERT_OK(fv_context_cuda_stream(g_gpu, &s));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    fv_status fs = fv_filter_apply(f, &src, &dst);
    cudaError_t ce = cudaStreamEndCapture(s, &graph);
    FV_ASSERT_OK(fs);
    assert_int_equal(ce, cudaSuccess);
    assert_int_equal(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    fv_pool *dev = fv_context_pool(g_gpu, FV_POOL_DEVICE);
    fv_pool_stats before, after;
    FV_ASSERT_OK(fv_pool_stats_get(dev, &before));
    for (int round = 0; round < 3; round++) { /* new input each round: read live */
        fv_test_fill_bytes(in, ib2);
        FV_ASSERT_OK(fv_tensor_upload(g_gpu, tin, in, ib2));
        memset(direct, POISON, ob2);
        FV_ASSERT_OK(fv_tensor_upload(g_gpu, tout, direct, ob2));
        FV_ASSERT_OK(fv_filter_apply(f, &src, &dst));
        FV_ASSERT_OK(fv_tensor_download(g_gpu, tout, direct, ob2));
        FV_ASSERT_OK(fv_context_synchronize(g_gpu));
        memset(replay, POISON, ob2);
        FV_ASSERT_OK(fv_tensor_upload(g_gpu, tout, replay, ob2));
        for (int i = 0; i < (round == 2 ? 100 : 1); i++)
            assert_int_equal(cudaGraphLaunch(exec, s), cudaSuccess);
        FV_ASSERT_OK(fv_tensor_download(g_gpu, tout, replay, ob2));
        FV_ASSERT_OK(fv_context_synchronize(g_gpu));
        assert_memory_equal(direct, replay, ob2);
    }
    FV_ASSERT_OK(fv_pool_stats_get(dev, &after));
    assert_int_equal(after.backing_allocs, before.backing_allocs);
    assert_int_equal(after.in_use, before.in_use);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    fv_tensor_destroy(tin), fv_tensor_destroy(tout);
    fv_filter_destroy(f);
    free(in), free(direct), free(replay);
}

static void fused_replays_from_a_cuda_graph(void **state) {
    if (!g_fused) skip();
    graph_replay(FV_FILTER_ENGINE_AUTO); /* YUYV: FUSED */
}

static void direct_replays_from_a_cuda_graph(void **state) {
    graph_replay(FV_FILTER_ENGINE_DIRECT);
}

/* DIRECT applies back to back, each reading the frame the one before it
 * wrote and writing the frame the one before it read (ping-pong, GRAY8
 * 1920x1080: the 3 x 3 strip kernel and the 5 x 5 tile kernel), eagerly
 * and replayed from a CUDA graph: the same bytes as the same applies with
 * the stream synchronized after each. On SM 9.0+ the kernels are launched
 * as programmatic dependents (kernels/pdl.cuh, unless FV_NO_PDL=1) and let
 * the next be scheduled as soon as all their blocks have started: a kernel
 * that read or wrote before its wait would read a frame half written, or
 * overwrite one still being read. The buffers are poisoned before each
 * chain. */
static void direct_chained_applies_wait_for_each_other(void **state) {
    enum { W = 1920, H = 1080, STEPS = 6 }; /* the last a blur */
    const size_t fb = (size_t)W * H;
    fv_test_seed(37);
    /* a blur (weights summing to 33, gain 1/32): the chain's frames keep
     * many values rather than fading to 0 or saturating */
    static const float box5[25] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 9,
                                   1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    fv_filter_desc ds[3] = {{.kind = FV_FILTER_LAPLACIAN, .gain = 1.0f},
                            {.kind = FV_FILTER_SOBEL, .gain = 0.5f},
                            {.kind = FV_FILTER_CUSTOM,
                             .gain = 0.03125f,
                             .kernel_rows = 5,
                             .kernel_cols = 5,
                             .kernel = box5}};
    fv_filter *f[3];
    for (int i = 0; i < 3; i++) {
        ds[i].width = W, ds[i].height = H, ds[i].format = FV_PIXEL_GRAY8;
        ds[i].engine = FV_FILTER_ENGINE_DIRECT;
        FV_ASSERT_OK(fv_filter_create(g_gpu, &ds[i], &f[i]));
    }
    unsigned char *src = malloc(fb), *want = malloc(fb), *got = malloc(fb), *poison = malloc(fb);
    assert_true(src && want && got && poison);
    memset(poison, POISON, fb);
    fv_tensor *t[3] = {device_bytes(NULL, fb), device_bytes(NULL, fb), device_bytes(NULL, fb)};
    fv_image im[3];
    for (int i = 0; i < 3; i++)
        im[i] = (fv_image){.format = FV_PIXEL_GRAY8,
                           .width = W,
                           .height = H,
                           .stride = W,
                           .data = fv_tensor_data(t[i])};
    /* step k: frame 0 (the source, k = 0) or 1 + (k - 1) % 2 into 1 + k % 2 */
    cudaStream_t s;
    FV_ASSERT_OK(fv_context_cuda_stream(g_gpu, &s));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    fv_status fs = FV_OK;
    for (int k = 0; k < STEPS && fs == FV_OK; k++)
        fs = fv_filter_apply(f[k % 3], &im[k ? 1 + (k - 1) % 2 : 0], &im[1 + k % 2]);
    cudaError_t ce = cudaStreamEndCapture(s, &graph);
    FV_ASSERT_OK(fs);
    assert_int_equal(ce, cudaSuccess);
    assert_int_equal(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    const int last = 1 + (STEPS - 1) % 2;
    for (int round = 0; round < 3; round++) {
        fv_test_fill_bytes(src, fb);
        FV_ASSERT_OK(fv_tensor_upload(g_gpu, t[0], src, fb));
        for (int mode = 0; mode < 3; mode++) { /* synchronized, eager, graph */
            FV_ASSERT_OK(fv_tensor_upload(g_gpu, t[1], poison, fb));
            FV_ASSERT_OK(fv_tensor_upload(g_gpu, t[2], poison, fb));
            FV_ASSERT_OK(fv_context_synchronize(g_gpu));
            if (mode == 2)
                assert_int_equal(cudaGraphLaunch(exec, s), cudaSuccess);
            else
                for (int k = 0; k < STEPS; k++) {
                    FV_ASSERT_OK(
                        fv_filter_apply(f[k % 3], &im[k ? 1 + (k - 1) % 2 : 0], &im[1 + k % 2]));
                    if (mode == 0) FV_ASSERT_OK(fv_context_synchronize(g_gpu));
                }
            FV_ASSERT_OK(fv_tensor_download(g_gpu, t[last], mode ? got : want, fb));
            FV_ASSERT_OK(fv_context_synchronize(g_gpu));
            if (mode) assert_memory_equal(want, got, fb);
        }
        /* the chain did something: not the poison, not one value */
        size_t hist[256] = {0}, distinct = 0;
        for (size_t i = 0; i < fb; i++)
            distinct += hist[want[i]]++ == 0;
        if (round == 0)
            printf("chained DIRECT applies: %zu distinct values, %zu of %zu bytes 0x%02X\n",
                   distinct, hist[POISON], fb, POISON);
        assert_true(hist[POISON] < fb / 16 && distinct > 64);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    for (int i = 0; i < 3; i++)
        fv_tensor_destroy(t[i]), fv_filter_destroy(f[i]);
    free(src), free(want), free(got), free(poison);
}
#endif

#ifdef FV_TEST_CUDA_KERNELS
fv_status fv__cuda_filter_strip_sqrt_mismatches(unsigned lo, unsigned hi,
                                                unsigned long long *mismatches);
fv_status fv__cuda_filter_strip_unpack_mismatches(unsigned lo, unsigned hi,
                                                  unsigned long long *mismatches);

static unsigned float_bits(float x) {
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* The strip kernel's square root of gradient sums (no branch for
 * arguments outside the normal range) gives sqrtf's bits for 0 and every
 * float from 2^-16 to 2^34, the sums its gradient pairs can make. */
static void direct_sqrt_matches_sqrtf_on_every_gradient_sum(void **state) {
    unsigned long long bad = 1;
    FV_ASSERT_OK(fv__cuda_filter_strip_sqrt_mismatches(0, 1, &bad));
    assert_int_equal(bad, 0);
    bad = 1;
    FV_ASSERT_OK(fv__cuda_filter_strip_sqrt_mismatches(float_bits(ldexpf(1.0f, -16)),
                                                       float_bits(ldexpf(1.0f, 34)), &bad));
    assert_int_equal(bad, 0);
    /* the check can fail: below 2^-101 the sequence leaves its range */
    bad = 0;
    FV_ASSERT_OK(fv__cuda_filter_strip_sqrt_mismatches(1, 1000, &bad));
    assert_true(bad > 0);
}

/* The strip kernel's output byte (its forms: one conversion instruction,
 * five without one, four for values >= 0, that one on +0 to +inf and -0) is
 * fv__unpack_byte(x, 1, 0) for every float: both signs, zeros,
 * subnormals, halves, the clamps at 0 and 255, infinities and NaNs (all
 * bit patterns but 0xFFFFFFFF, a NaN like 0xFFFFFFFE before it). */
/* The strip kernel's strips sized for 0 to 5 blocks an SM fewer than fit
 * (fv_filter_info.direct_wave_less; AUTO times 0 and 1; past the blocks
 * that fit, one an SM is kept): every height gives the bytes of the DIRECT
 * filter itself, padding untouched. Built-in Laplacian and Sobel, grey and
 * colour edges, GRAY8, RGB24, YUYV and NV12, 1920x1080 and 1282x722 (two
 * partial block columns, strips cut by the frame's bottom). */
fv_status fv__cuda_filter_direct(fv_context *ctx, const fv_filter_desc *d, const float *k,
                                 int wave_less, const fv_image *in, const fv_image *out);

static void direct_strip_heights_give_the_same_bytes(void **state) {
    fv_test_seed(31);
    const fv_pixel_format ins[4] = {FV_PIXEL_GRAY8, FV_PIXEL_RGB24, FV_PIXEL_YUYV, FV_PIXEL_NV12};
    const int widths[2] = {1920, 1282}, heights[2] = {1080, 722};
    /* the file's lap, and sobel with its transpose (gy) after it */
    static const float sobel2[18] = {-1, 0, 1, -2, 0, 2, -1, 0, 1, -1, -2, -1, 0, 0, 0, 1, 2, 1};
    size_t cases = 0;
    for (int f = 0; f < 4; f++)
        for (int s = 0; s < 2; s++)
            for (int k = 0; k < 2; k++)
                for (int c = 0; c < 2; c++) {
                    if (c && ins[f] == FV_PIXEL_GRAY8) continue; /* one channel */
                    /* a normalized desc, as fv_filter_create leaves it */
                    fv_filter_desc d = {.kind = k ? FV_FILTER_SOBEL : FV_FILTER_LAPLACIAN,
                                        .width = widths[s],
                                        .height = heights[s],
                                        .format = ins[f],
                                        .output = c ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY,
                                        .gain = k ? 0.25f : 1.0f,
                                        .engine = FV_FILTER_ENGINE_DIRECT};
                    const fv_pixel_format of = c ? FV_PIXEL_RGB24 : FV_PIXEL_GRAY8;
                    frame fin = frame_make(d.format, d.width, d.height, (size_t)s * 5);
                    frame fout = frame_make(of, d.width, d.height, 7);
                    unsigned char *in = malloc(fin.bytes), *want = malloc(fout.bytes),
                                  *got = malloc(fout.bytes);
                    assert_true(in && want && got);
                    fv_test_fill_bytes(in, fin.bytes);
                    memset(want, POISON, fout.bytes);
                    fv_tensor *tin = device_bytes(in, fin.bytes);
                    fv_tensor *tout = device_bytes(want, fout.bytes);
                    frame_point(&fin, (unsigned char *)fv_tensor_data(tin));
                    frame_point(&fout, (unsigned char *)fv_tensor_data(tout));
                    fv_filter *flt;
                    FV_ASSERT_OK(fv_filter_create(g_gpu, &d, &flt));
                    FV_ASSERT_OK(fv_filter_apply(flt, &fin.img, &fout.img));
                    FV_ASSERT_OK(fv_tensor_download(g_gpu, tout, want, fout.bytes));
                    FV_ASSERT_OK(fv_context_synchronize(g_gpu));
                    for (int y = 0; y < d.height; y++)
                        for (size_t b = (size_t)d.width * bpp(of); b < fout.img.stride; b++)
                            if (want[(size_t)y * fout.img.stride + b] != POISON)
                                fail_msg("row %d's padding byte %zu written", y, b);
                    for (int less = 0; less <= 5; less++) {
                        memset(got, POISON, fout.bytes);
                        FV_ASSERT_OK(fv_tensor_upload(g_gpu, tout, got, fout.bytes));
                        FV_ASSERT_OK(fv__cuda_filter_direct(g_gpu, &d, k ? sobel2 : lap, less,
                                                            &fin.img, &fout.img));
                        FV_ASSERT_OK(fv_tensor_download(g_gpu, tout, got, fout.bytes));
                        FV_ASSERT_OK(fv_context_synchronize(g_gpu));
                        for (size_t i = 0; i < fout.bytes; i++)
                            if (got[i] != want[i])
                                fail_msg("%s %s %dx%d %s, strips for %d blocks an SM fewer: "
                                         "byte %zu is %d, DIRECT's %d",
                                         k ? "sobel" : "laplacian", c ? "colour" : "grey", d.width,
                                         d.height, fv_pixel_format_name(d.format), less, i, got[i],
                                         want[i]);
                        cases++;
                    }
                    fv_filter_destroy(flt);
                    fv_tensor_destroy(tout);
                    fv_tensor_destroy(tin);
                    free(in), free(want), free(got);
                }
    printf("DIRECT strip heights: %zu cases\n", cases);
    /* a negative count is the launcher's error, not a height */
    frame fin = frame_make(FV_PIXEL_GRAY8, 64, 8, 0), fout = frame_make(FV_PIXEL_GRAY8, 64, 8, 0);
    fv_tensor *tin = device_bytes(NULL, fin.bytes), *tout = device_bytes(NULL, fout.bytes);
    frame_point(&fin, (unsigned char *)fv_tensor_data(tin));
    frame_point(&fout, (unsigned char *)fv_tensor_data(tout));
    const fv_filter_desc d = {.kind = FV_FILTER_LAPLACIAN,
                              .width = 64,
                              .height = 8,
                              .format = FV_PIXEL_GRAY8,
                              .gain = 1.0f,
                              .engine = FV_FILTER_ENGINE_DIRECT};
    FV_ASSERT_STATUS(fv__cuda_filter_direct(g_gpu, &d, lap, -1, &fin.img, &fout.img),
                     FV_ERR_INTERNAL, "wave_less -1");
    fv_tensor_destroy(tout), fv_tensor_destroy(tin);
}

static void direct_unpack_matches_the_reference_on_every_float(void **state) {
    unsigned long long bad = 1;
    FV_ASSERT_OK(fv__cuda_filter_strip_unpack_mismatches(0, 0x80000000u, &bad));
    assert_int_equal(bad, 0);
    bad = 1;
    FV_ASSERT_OK(fv__cuda_filter_strip_unpack_mismatches(0x80000000u, 0xFFFFFFFFu, &bad));
    assert_int_equal(bad, 0);
}
#endif

int main(void) {
    g_gpu = fv_test_gpu_context_or_skip();
    /* the FP32 reference at 1920x1080: F32 tensors of up to 6 channels */
    fv_context_desc cd = {.backend = FV_BACKEND_CPU, .device_pool_bytes = (size_t)512 << 20};
    FV_ASSERT_OK(fv_context_create(&cd, &g_cpu));
    fv_context_info ci;
    FV_ASSERT_OK(fv_context_info_get(g_gpu, &ci));
    g_fused = ci.tensor_cores;
    printf("GPU %s (sm_%d%d): AUTO takes the %s path\n", ci.device_name, ci.sm_major, ci.sm_minor,
           g_fused ? "fused or direct (timed)" : "conv");
#ifndef HAVE_CUDART
    printf("note: built without the CUDA runtime headers: the graph-capture test is left out "
           "(link test_gpu_filter with CUDA::cudart)\n");
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kind_format_and_output_matches_the_cpu),
        cmocka_unit_test(threshold_overlay_gain_match_the_cpu),
        cmocka_unit_test(tiny_and_odd_frames_match_the_cpu),
        cmocka_unit_test(direct_matches_fused_at_odd_sizes_strides_and_alignments),
        cmocka_unit_test(direct_colour_stores_match_fused),
        cmocka_unit_test(a_1080p_frame_matches_the_cpu),
        cmocka_unit_test(fused_applies_allocate_nothing),
#ifdef HAVE_CUDART
        cmocka_unit_test(fused_replays_from_a_cuda_graph),
        cmocka_unit_test(direct_replays_from_a_cuda_graph),
        cmocka_unit_test(direct_chained_applies_wait_for_each_other),
#endif
#ifdef FV_TEST_CUDA_KERNELS
        cmocka_unit_test(direct_sqrt_matches_sqrtf_on_every_gradient_sum),
        cmocka_unit_test(direct_unpack_matches_the_reference_on_every_float),
        cmocka_unit_test(direct_strip_heights_give_the_same_bytes),
#endif
    };
    /* FV_TEST_FILTER (e.g. "direct_*"): only the tests it matches */
    if (getenv("FV_TEST_FILTER")) cmocka_set_test_filter(getenv("FV_TEST_FILTER"));
    /* FV_TEST_SKIP: leave out the tests it matches (a sanitizer run, say) */
    if (getenv("FV_TEST_SKIP")) cmocka_set_skip_filter(getenv("FV_TEST_SKIP"));
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(g_cpu);
    fv_context_destroy(g_gpu);
    return rc;
}
