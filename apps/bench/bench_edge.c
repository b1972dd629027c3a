/* fovea-bench edge: the cuDNN tutorial's Laplacian on video frames. For
 * each case (1920x1080 and 3840x2160; RGB24 and YUYV
 * input in pinned host memory; RGB24 output, the grey edge in all three
 * channels as the PyTorch peer's 3->3 conv gives it):
 *   1. correctness first: a real photo (tiled to the frame size) through the
 *      CUDA filter (both engines) and through every pipeline timed below
 *      must match fv_filter on the CPU backend: the engine that rounds as
 *      the CPU backend within tests/gpu/test_gpu_filter.c's tolerance (every
 *      byte within 1 level, at most 1% differ), the other within filter.h's
 *      rounding difference (check_output); outputs are poisoned first. Any
 *      mismatch stops the benchmark (exit 1).
 *   2. the copy floor: pinned H2D of a frame, D2H of its output (events,
 *      median), and both at once (a batch, per frame) on two streams and
 *      spread over COPY_STREAMS streams a direction (as a pipeline's slots
 *      keep several copies in flight); the faster of the two is the floor of
 *      any pipeline that copies each frame in and out.
 *   3. GPU-only: fv_filter_apply on device-resident frame buffers (rotating
 *      enough sets to leave L2), a batch between events on the context's
 *      stream, the median per frame; engine AUTO (fused) and CONV.
 *   4. end to end: fv_pipeline over caller frames in pinned memory, both
 *      copies included: frames/s over --frames frames after warm-up, median
 *      of --runs; variants with 2 and 4 slots and with CUDA graphs.
 *   5. zero allocations: the context's pool stats and the device's free
 *      memory before and after --alloc-frames pipelined 1080p frames must be
 *      equal (exit 1 otherwise).
 * --sms 8,16: the GPU-only time again on green-context slices of 8 and 16
 * SMs, with Orin estimates (bench_slice.c).
 * Prints a table, writes --json FILE; --dump DIR writes each case's photo
 * frame and fovea's output on it (raw bytes) for edge_vs_peers.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fovea/fovea.h"
#include "fv_cli.h"
#include "fovea/pipeline.h"

int bench_cmd_edge(int argc, char **argv);

#if FV_BUILT_WITH_CUDA
#include <cuda_runtime.h>
#include "fovea/fovea_cuda.h"
#include "fovea/platform/image_io.h"
#include "bench_floor.h"
#include "bench_slice.h"
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define EDGE_HAVE_MALLINFO2 1
#endif

#ifndef FV_BENCH_DATA_DIR
#define FV_BENCH_DATA_DIR "data"
#endif

enum { MAX_CASES = 4, MAX_PIPES = 4, NSRC = 4, MAX_SETS = 16, ENGINES = 4 };

/* GPU-only engines, in the table's order: AUTO (-1: the desc's default), then
 * each forced. */
static const char *const engine_label[ENGINES] = {"AUTO", "CONV", "FUSED", "DIRECT"};
static const int engine_value[ENGINES] = {-1, FV_FILTER_ENGINE_CONV, FV_FILTER_ENGINE_FUSED,
                                          FV_FILTER_ENGINE_DIRECT};

/* Device DRAM bandwidth measured in this run (GB/s, read + write), 0 if not. */
static double g_dram_gbps;

typedef struct edge_opts {
    int frames, runs, warmup; /* end to end, main configuration */
    int var_frames, var_runs; /* variants (0 runs: none) */
    int alloc_frames;         /* the zero-allocation check (1080p cases) */
    int gpu_batch, gpu_runs;  /* GPU-only */
    int copy_reps;            /* copy floor */
    const char *sizes, *formats;
    const char *image, *json, *dump;
    int device_pool_mb;
    const char *sms; /* --sms 8,16: green-context slices (bench_slice.c); NULL none */
} edge_opts;

typedef struct edge_check {
    int limit;     /* largest |diff| from the CPU backend accepted, in levels */
    int strict;    /* 1 when within the test's tolerance of the CPU backend */
    int model_max; /* FUSED: max |diff| from the documented rule; -1: not computed */
    double model_differ;
    int max_diff;
    double differ_frac, mid_frac;
    int pass;
} edge_check;

typedef struct pipe_result {
    int slots, graph_asked, graph_on, overlapped;
    char graph_why[128];
    char engine[256];
    int frames, runs;
    double fps_median, fps_min, fps_max;
    double upload_ms, filter_ms, download_ms, gpu_ms; /* medians per frame, last run */
    edge_check check;
} pipe_result;

typedef struct pool_snap {
    int have[4];
    fv_pool_stats st[4];
    size_t dev_free, dev_total;
    long long heap; /* host heap bytes in use, -1 unknown */
} pool_snap;

typedef struct edge_case {
    int w, h;
    fv_pixel_format fmt;
    char label[32];
    size_t in_bytes, out_bytes;
    double h2d_ms, d2h_ms, both_ms, floor_ms; /* both_ms: per frame, two streams */
    double spread_ms;                         /* per frame, COPY_STREAMS streams a direction */
    int gpu_ran[ENGINES];
    double gpu_ms[ENGINES];
    edge_check gpu_check[ENGINES];
    int gpu_exact_max[ENGINES];    /* max |diff| from exact_rgb, -1 when not computed */
    int gpu_engine_fused[ENGINES]; /* the engine each took: 1 FUSED or DIRECT (FP16 values) */
    char gpu_engine[ENGINES][256];
    double dram_floor_ms; /* (in + out bytes) / g_dram_gbps; 0 when not measured */
    int nsets;
    int npipes;
    pipe_result pipe[MAX_PIPES];
    int alloc_ran, alloc_pass, alloc_frames;
    double alloc_fps;
    pool_snap before, after;
    char dump_in[512], dump_out[512];
} edge_case;

/* ---- helpers ----------------------------------------------------------------- */
static int fv_fail(const char *what, fv_status s) {
    fprintf(stderr, "fovea-bench edge: %s: %s: %s\n", what, fv_status_name(s), fv_last_error());
    return 1;
}
#define FV(call)                                                                                   \
    do {                                                                                           \
        fv_status s_ = (call);                                                                     \
        if (s_ != FV_OK) return fv_fail(#call, s_);                                                \
    } while (0)

static int cu_fail(cudaError_t e, const char *call, int line) {
    if (e == cudaSuccess) return 0;
    fprintf(stderr, "fovea-bench edge: %s failed: %s (%s) at %s:%d\n", call, cudaGetErrorName(e),
            cudaGetErrorString(e), __FILE__, line);
    return 1;
}
#define CU(call)                                                                                   \
    do {                                                                                           \
        if (cu_fail((call), #call, __LINE__)) return 1;                                            \
    } while (0)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n values (sorts them). */
static double median(double *t, int n) {
    if (n <= 0) return NAN;
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static void fill_random(unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        p[i] = (unsigned char)((z ^ (z >> 31)) >> 56);
    }
}

static int parse_int(const char *opt, const char *v, int lo, int *out) {
    long x;
    if (!v || fv_cli_long(v, lo, 100000000, &x) != 0) {
        fprintf(stderr, "fovea-bench edge: %s needs an integer >= %d\n", opt, lo);
        return 1;
    }
    *out = (int)x;
    return 0;
}

static int parse_opts(int argc, char **argv, edge_opts *o) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--frames"))
            bad = parse_int(a, v, 1, &o->frames), i++;
        else if (!strcmp(a, "--runs"))
            bad = parse_int(a, v, 1, &o->runs), i++;
        else if (!strcmp(a, "--warmup"))
            bad = parse_int(a, v, 0, &o->warmup), i++;
        else if (!strcmp(a, "--variant-frames"))
            bad = parse_int(a, v, 1, &o->var_frames), i++;
        else if (!strcmp(a, "--variant-runs"))
            bad = parse_int(a, v, 0, &o->var_runs), i++;
        else if (!strcmp(a, "--alloc-frames"))
            bad = parse_int(a, v, 0, &o->alloc_frames), i++;
        else if (!strcmp(a, "--gpu-batch"))
            bad = parse_int(a, v, 1, &o->gpu_batch), i++;
        else if (!strcmp(a, "--gpu-runs"))
            bad = parse_int(a, v, 1, &o->gpu_runs), i++;
        else if (!strcmp(a, "--copy-reps"))
            bad = parse_int(a, v, 1, &o->copy_reps), i++;
        else if (!strcmp(a, "--device-pool-mb"))
            bad = parse_int(a, v, 256, &o->device_pool_mb), i++;
        else if (!strcmp(a, "--sizes") && v)
            o->sizes = v, i++;
        else if (!strcmp(a, "--formats") && v)
            o->formats = v, i++;
        else if (!strcmp(a, "--image") && v)
            o->image = v, i++;
        else if (!strcmp(a, "--json") && v)
            o->json = v, i++;
        else if (!strcmp(a, "--sms") && v)
            o->sms = v, i++;
        else if (!strcmp(a, "--dump") && v)
            o->dump = v, i++;
        else {
            fprintf(stderr, "fovea-bench edge: unknown or incomplete option '%s'\n", a);
            return 1;
        }
        if (bad) return 1;
    }
    return 0;
}

/* The cases named by --sizes and --formats, in the table's order. */
static int make_cases(const edge_opts *o, edge_case *c) {
    static const struct {
        const char *name;
        int w, h;
    } sizes[2] = {{"1080p", 1920, 1080}, {"4k", 3840, 2160}};
    static const struct {
        const char *name, *label;
        fv_pixel_format f;
    } fmts[2] = {{"rgb", "RGB", FV_PIXEL_RGB24}, {"yuyv", "YUYV", FV_PIXEL_YUYV}};
    int n = 0;
    for (int s = 0; s < 2; s++) {
        if (!strstr(o->sizes, sizes[s].name)) continue;
        for (int f = 0; f < 2; f++) {
            if (!strstr(o->formats, fmts[f].name)) continue;
            memset(&c[n], 0, sizeof c[n]);
            c[n].w = sizes[s].w, c[n].h = sizes[s].h, c[n].fmt = fmts[f].f;
            snprintf(c[n].label, sizeof c[n].label, "%s %s", sizes[s].name, fmts[f].label);
            c[n].in_bytes = fv_image_bytes(c[n].fmt, c[n].w, c[n].h);
            c[n].out_bytes = fv_image_bytes(FV_PIXEL_RGB24, c[n].w, c[n].h);
            n++;
        }
    }
    if (!n)
        fprintf(stderr, "fovea-bench edge: --sizes (1080p,4k) and --formats (rgb,yuyv) select "
                        "no case\n");
    return n;
}

/* The photo tiled over w x h, in fmt (YUYV: BT.601 limited range, the pair's
 * U and V averaged). */
static void photo_frame(const fv_host_image *ph, int w, int h, fv_pixel_format fmt,
                        unsigned char *dst) {
    const unsigned char *src = ph->data;
    for (int y = 0; y < h; y++) {
        const unsigned char *row = src + (size_t)(y % ph->height) * ph->stride;
        for (int x = 0; x < w; x += 2) {
            const unsigned char *p0 = row + (size_t)(x % ph->width) * 3;
            const unsigned char *p1 = row + (size_t)((x + 1) % ph->width) * 3;
            if (fmt == FV_PIXEL_RGB24) {
                unsigned char *d = dst + ((size_t)y * w + x) * 3;
                memcpy(d, p0, 3);
                memcpy(d + 3, p1, 3);
                continue;
            }
            double yy[2], u = 0, v = 0;
            const unsigned char *px[2] = {p0, p1};
            for (int k = 0; k < 2; k++) {
                double r = px[k][0], g = px[k][1], b = px[k][2];
                yy[k] = 16 + 0.257 * r + 0.504 * g + 0.098 * b;
                u += 0.5 * (128 - 0.148 * r - 0.291 * g + 0.439 * b);
                v += 0.5 * (128 + 0.439 * r - 0.368 * g - 0.071 * b);
            }
            double q[4] = {yy[0], u, yy[1], v};
            unsigned char *d = dst + ((size_t)y * w + x) * 2;
            for (int k = 0; k < 4; k++)
                d[k] = (unsigned char)(q[k] < 0 ? 0 : q[k] > 255 ? 255 : floor(q[k] + 0.5));
        }
    }
}

static edge_check compare(const unsigned char *got, const unsigned char *want, size_t n,
                          int limit) {
    edge_check c = {.limit = limit};
    size_t differ = 0, mid = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)got[i] - (int)want[i]);
        differ += d != 0, mid += want[i] > 0 && want[i] < 255;
        if (d > c.max_diff) c.max_diff = d;
    }
    c.differ_frac = (double)differ / (double)n;
    c.mid_frac = (double)mid / (double)n;
    /* limit 1 (FUSED on exact bytes): within 1 level and at most 1% differ;
     * wider limits (FP16 rounding): only the largest difference counts; and
     * a photo's edges must not all be 0 or 255 */
    c.pass = c.max_diff <= limit && (limit > 1 || differ * 100 <= n) && mid * 100 >= n;
    return c;
}

static int report_check(const char *what, const edge_check *c) {
    printf("  check %-34s vs CPU: max |diff| %d (<= %d), %.3f%% differ, %.1f%% unsaturated", what,
           c->max_diff, c->limit, 100 * c->differ_frac, 100 * c->mid_frac);
    if (c->model_max >= 0)
        printf(" (information: vs filter.h's fused rule, max |diff| %d, %.3f%% differ)",
               c->model_max, 100 * c->model_differ);
    printf(": %s\n", c->pass ? "ok" : "MISMATCH");
    if (!c->pass)
        fprintf(stderr,
                "fovea-bench edge: %s does not match the reference on the photo (see the line "
                "above for the limits): stopping, no numbers\n",
                what);
    return c->pass ? 0 : 1;
}

/* filter.h's FUSED rule for this filter, computed exactly: the frame's
 * values 0..255 (RGB bytes; from YUYV, backend/pixel_math.h's float BT.601
 * conversion, clamped, on yuv_grid), the Laplacian summed over R, G, B
 * (exact in double, and in the kernel's FP32: FP16 values times small
 * integers), |x|, floor(x + 0.5) clamped to 255, in all three channels. For
 * RGB input this is the integer Laplacian PyTorch computes. */
static float clamp255(float x) {
    return x < 0.0f ? 0.0f : (x > 255.0f ? 255.0f : x);
}

/* filter.h: YUV-converted values on the FP16 values with steps of at least
 * 2^-8 (FP16 rounding from 4 up, multiples of 2^-8 below). */
static float yuv_grid(float v) {
    return v >= 4.0f ? fv_round_f16(v) : rintf(v * 256.0f) / 256.0f;
}

static int model_ref(const unsigned char *in, fv_pixel_format fmt, int w, int h,
                     unsigned char *out) {
    float *v = malloc(sizeof *v * (size_t)w * h); /* R + G + B per pixel, FP16 values */
    if (!v) return 1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float r, g, b;
            if (fmt == FV_PIXEL_RGB24) {
                const unsigned char *p = in + ((size_t)y * w + x) * 3;
                r = p[0], g = p[1], b = p[2];
            } else {
                const unsigned char *p = in + ((size_t)y * w + (x & ~1)) * 2;
                float Y = p[(x & 1) * 2], d = (float)p[1] - 128.0f, e = (float)p[3] - 128.0f;
                float c = 1.164f * (Y - 16.0f);
                float t1 = 1.596f * e, t2 = -0.392f * d, t3 = -0.813f * e, t4 = 2.017f * d;
                float g1 = c + t2;
                r = yuv_grid(clamp255(c + t1));
                g = yuv_grid(clamp255(g1 + t3));
                b = yuv_grid(clamp255(c + t4));
            }
            v[(size_t)y * w + x] = (float)((double)r + g + b);
        }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double s = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int yy = y + dy, xx = x + dx;
                    if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                    s += (dx || dy ? 1.0 : -8.0) * v[(size_t)yy * w + xx];
                }
            double t = floor(fabs(s) + 0.5);
            unsigned char o = (unsigned char)(t > 255 ? 255 : t);
            unsigned char *q = out + ((size_t)y * w + x) * 3;
            q[0] = q[1] = q[2] = o;
        }
    free(v);
    return 0;
}

/* The check of an output on the photo against the CPU backend, the FP32
 * reference (filter.h). FUSED takes the bytes exactly: on RGB/GRAY input it
 * must match within tests/gpu/test_gpu_filter.c's tolerance (every byte
 * within 1 level, at most 1% differ). CONV rounds bytes / 255 and the
 * convolution to FP16: within 2 levels; on YUV input both engines round the
 * converted (non-integer) values to FP16: within 3 levels (the Laplacian's
 * weights sum to 48 in absolute value over three channels). FUSED against
 * the exact integer rule (model_ref) is information. */
static edge_check check_output(const unsigned char *got, const unsigned char *cpu,
                               const unsigned char *model, size_t n, int fused, int yuv) {
    edge_check c = compare(got, cpu, n, yuv ? 3 : fused ? 1 : 2);
    c.strict = compare(got, cpu, n, 1).pass;
    c.model_max = -1;
    if (fused) {
        edge_check m = compare(got, model, n, 1);
        c.model_max = m.max_diff, c.model_differ = m.differ_frac;
    }
    return c;
}

static fv_filter_desc filter_desc(const edge_case *c) {
    return (fv_filter_desc){.kind = FV_FILTER_LAPLACIAN,
                            .width = c->w,
                            .height = c->h,
                            .format = c->fmt,
                            .output = FV_FILTER_OUT_GRAY,
                            .gain = 1.0f};
}

/* The engine a filter took, for the table; *fused: 1 for FUSED or DIRECT
 * (bytes as FP16 values: the same tolerance). */
static int describe(const fv_filter *f, char *buf, size_t n, int *fused) {
    fv_filter_info fi;
    FV(fv_filter_info_get(f, &fi));
    *fused = fi.engine == FV_FILTER_ENGINE_FUSED || fi.engine == FV_FILTER_ENGINE_DIRECT;
    if (fi.timed_ms[0] > 0.0f || fi.timed_ms[1] > 0.0f) {
        snprintf(buf, n, "%s: %s; AUTO timed fused %.4f ms, direct %.4f ms",
                 fv_filter_engine_name(fi.engine), fi.path, (double)fi.timed_ms[0],
                 (double)fi.timed_ms[1]);
        return 0;
    }
    const fv_conv2d *conv = fv_filter_conv(f);
    fv_conv2d_info ci;
    if (conv && fv_conv2d_info_get(conv, &ci) == FV_OK)
        snprintf(buf, n, "%s: %s; conv %s %s%s", fv_filter_engine_name(fi.engine), fi.path, ci.path,
                 ci.engine, ci.tensor_cores ? ", tensor cores" : "");
    else
        snprintf(buf, n, "%s: %s", fv_filter_engine_name(fi.engine), fi.path);
    return 0;
}

/* ---- allocation counters ------------------------------------------------------ */
static int snap(fv_context *ctx, pool_snap *s) {
    memset(s, 0, sizeof *s);
    for (int k = 0; k < 4; k++) {
        fv_pool *p = fv_context_pool(ctx, (fv_pool_kind)k);
        if (!p) continue;
        FV(fv_pool_stats_get(p, &s->st[k]));
        s->have[k] = 1;
    }
    CU(cudaMemGetInfo(&s->dev_free, &s->dev_total));
#if EDGE_HAVE_MALLINFO2
    s->heap = (long long)mallinfo2().uordblks;
#else
    s->heap = -1;
#endif
    return 0;
}

static int snaps_equal(const pool_snap *a, const pool_snap *b) {
    for (int k = 0; k < 4; k++) {
        if (a->have[k] != b->have[k]) return 0;
        const fv_pool_stats *x = &a->st[k], *y = &b->st[k];
        if (x->reserved != y->reserved || x->in_use != y->in_use || x->peak != y->peak ||
            x->backing_allocs != y->backing_allocs || x->carve_outs != y->carve_outs ||
            x->failed != y->failed)
            return 0;
    }
    return a->dev_free == b->dev_free;
}

static void print_snaps(const pool_snap *a, const pool_snap *b) {
    for (int k = 0; k < 4; k++) {
        if (!a->have[k] && !b->have[k]) continue;
        const fv_pool_stats *x = &a->st[k], *y = &b->st[k];
        printf("    pool %-7s backing_allocs %llu -> %llu, carve_outs %llu -> %llu, failed %llu -> "
               "%llu, in_use %zu -> %zu, peak %zu -> %zu\n",
               fv_pool_kind_name((fv_pool_kind)k), (unsigned long long)x->backing_allocs,
               (unsigned long long)y->backing_allocs, (unsigned long long)x->carve_outs,
               (unsigned long long)y->carve_outs, (unsigned long long)x->failed,
               (unsigned long long)y->failed, x->in_use, y->in_use, x->peak, y->peak);
    }
    printf("    device free memory %zu -> %zu bytes\n", a->dev_free, b->dev_free);
    if (a->heap >= 0)
        printf("    host heap in use %lld -> %lld bytes (information, not a criterion)\n", a->heap,
               b->heap);
}

/* ---- the copy floor ----------------------------------------------------------- */
/* Streams a direction's copies are spread over for the floor: a pipeline
 * with several slots has that many copies of a direction in flight, which
 * the GPU's copy engines may serve at once. */
enum { COPY_STREAMS = 4 };

typedef struct copy_bufs {
    unsigned char *src[NSRC]; /* pinned input frames (random) */
    unsigned char *h_out;     /* pinned output frame */
    void *d_in, *d_out;
    cudaStream_t s1, s2;
    cudaStream_t up[COPY_STREAMS], down[COPY_STREAMS]; /* the spread copies' streams */
    cudaEvent_t e0, e1, e2;
    cudaEvent_t done[2 * COPY_STREAMS];
} copy_bufs;

static int copy_bufs_open(copy_bufs *b, const edge_case *c) {
    memset(b, 0, sizeof *b);
    for (int i = 0; i < NSRC; i++) {
        CU(cudaHostAlloc((void **)&b->src[i], c->in_bytes, cudaHostAllocDefault));
        fill_random(b->src[i], c->in_bytes);
    }
    CU(cudaHostAlloc((void **)&b->h_out, c->out_bytes, cudaHostAllocDefault));
    CU(cudaMalloc(&b->d_in, c->in_bytes));
    CU(cudaMalloc(&b->d_out, c->out_bytes));
    CU(cudaMemset(b->d_out, 0x5A, c->out_bytes));
    CU(cudaStreamCreateWithFlags(&b->s1, cudaStreamNonBlocking));
    CU(cudaStreamCreateWithFlags(&b->s2, cudaStreamNonBlocking));
    CU(cudaEventCreate(&b->e0));
    CU(cudaEventCreate(&b->e1));
    CU(cudaEventCreate(&b->e2));
    for (int i = 0; i < COPY_STREAMS; i++) {
        CU(cudaStreamCreateWithFlags(&b->up[i], cudaStreamNonBlocking));
        CU(cudaStreamCreateWithFlags(&b->down[i], cudaStreamNonBlocking));
    }
    for (int i = 0; i < 2 * COPY_STREAMS; i++)
        CU(cudaEventCreateWithFlags(&b->done[i], cudaEventDisableTiming));
    return 0;
}

static void copy_bufs_close(copy_bufs *b) {
    for (int i = 0; i < NSRC; i++)
        if (b->src[i]) cudaFreeHost(b->src[i]);
    if (b->h_out) cudaFreeHost(b->h_out);
    if (b->d_in) cudaFree(b->d_in);
    if (b->d_out) cudaFree(b->d_out);
    if (b->s1) cudaStreamDestroy(b->s1);
    if (b->s2) cudaStreamDestroy(b->s2);
    if (b->e0) cudaEventDestroy(b->e0);
    if (b->e1) cudaEventDestroy(b->e1);
    if (b->e2) cudaEventDestroy(b->e2);
    for (int i = 0; i < COPY_STREAMS; i++) {
        if (b->up[i]) cudaStreamDestroy(b->up[i]);
        if (b->down[i]) cudaStreamDestroy(b->down[i]);
    }
    for (int i = 0; i < 2 * COPY_STREAMS; i++)
        if (b->done[i]) cudaEventDestroy(b->done[i]);
    memset(b, 0, sizeof *b);
}

/* One copy direction: median of reps single copies between events. */
static int time_copy(copy_bufs *b, int h2d, size_t bytes, int reps, double *ms) {
    double *t = malloc(sizeof *t * (size_t)reps);
    if (!t) return 1;
    for (int i = -3; i < reps; i++) {
        CU(cudaEventRecord(b->e0, b->s1));
        if (h2d)
            CU(cudaMemcpyAsync(b->d_in, b->src[(i + 3) % NSRC], bytes, cudaMemcpyHostToDevice,
                               b->s1));
        else
            CU(cudaMemcpyAsync(b->h_out, b->d_out, bytes, cudaMemcpyDeviceToHost, b->s1));
        CU(cudaEventRecord(b->e1, b->s1));
        CU(cudaEventSynchronize(b->e1));
        float f = 0;
        CU(cudaEventElapsedTime(&f, b->e0, b->e1));
        if (i >= 0) t[i] = f;
    }
    *ms = median(t, reps);
    free(t);
    return 0;
}

/* In- and out-copies of batch frames at once on two streams: per frame. */
static int time_copy_both(copy_bufs *b, const edge_case *c, int reps, double *ms) {
    enum { BATCH = 20 };
    double *t = malloc(sizeof *t * (size_t)reps);
    if (!t) return 1;
    for (int i = -2; i < reps; i++) {
        CU(cudaEventRecord(b->e0, b->s1));
        CU(cudaStreamWaitEvent(b->s2, b->e0, 0));
        for (int k = 0; k < BATCH; k++) {
            CU(cudaMemcpyAsync(b->d_in, b->src[k % NSRC], c->in_bytes, cudaMemcpyHostToDevice,
                               b->s1));
            CU(cudaMemcpyAsync(b->h_out, b->d_out, c->out_bytes, cudaMemcpyDeviceToHost, b->s2));
        }
        CU(cudaEventRecord(b->e2, b->s2));
        CU(cudaStreamWaitEvent(b->s1, b->e2, 0));
        CU(cudaEventRecord(b->e1, b->s1));
        CU(cudaEventSynchronize(b->e1));
        float f = 0;
        CU(cudaEventElapsedTime(&f, b->e0, b->e1));
        if (i >= 0) t[i] = f / BATCH;
    }
    *ms = median(t, reps);
    free(t);
    return 0;
}

/* As time_copy_both with each direction's copies spread round-robin over
 * COPY_STREAMS streams (several in flight, as a pipeline's slots have them). */
static int time_copy_spread(copy_bufs *b, const edge_case *c, int reps, double *ms) {
    enum { BATCH = 20 };
    double *t = malloc(sizeof *t * (size_t)reps);
    if (!t) return 1;
    for (int i = -2; i < reps; i++) {
        CU(cudaEventRecord(b->e0, b->s1));
        for (int k = 0; k < COPY_STREAMS; k++) {
            CU(cudaStreamWaitEvent(b->up[k], b->e0, 0));
            CU(cudaStreamWaitEvent(b->down[k], b->e0, 0));
        }
        for (int k = 0; k < BATCH; k++) {
            CU(cudaMemcpyAsync(b->d_in, b->src[k % NSRC], c->in_bytes, cudaMemcpyHostToDevice,
                               b->up[k % COPY_STREAMS]));
            CU(cudaMemcpyAsync(b->h_out, b->d_out, c->out_bytes, cudaMemcpyDeviceToHost,
                               b->down[k % COPY_STREAMS]));
        }
        for (int k = 0; k < COPY_STREAMS; k++) {
            CU(cudaEventRecord(b->done[2 * k], b->up[k]));
            CU(cudaEventRecord(b->done[2 * k + 1], b->down[k]));
            CU(cudaStreamWaitEvent(b->s1, b->done[2 * k], 0));
            CU(cudaStreamWaitEvent(b->s1, b->done[2 * k + 1], 0));
        }
        CU(cudaEventRecord(b->e1, b->s1));
        CU(cudaEventSynchronize(b->e1));
        float f = 0;
        CU(cudaEventElapsedTime(&f, b->e0, b->e1));
        if (i >= 0) t[i] = f / BATCH;
    }
    *ms = median(t, reps);
    free(t);
    return 0;
}

/* ---- the DRAM floor ---------------------------------------------------------------- */
/* The device's copy bandwidth (bench_floor.c: a device-to-device copy of
 * 256 MiB, median of 11). Returns 1 (said why) when it cannot measure; the
 * floor columns are then left out. */
static int measure_dram(int device, double *gbps) {
    bench_floors f;
    *gbps = 0;
    if (cu_fail(cudaSetDevice(device), "cudaSetDevice", __LINE__)) return 1;
    if (bench_floors_measure_dram(&f) != 0) {
        fprintf(stderr, "fovea-bench edge: no DRAM bandwidth measured (%s): no floor columns\n",
                f.why);
        return 1;
    }
    *gbps = f.dram_gbps;
    return 0;
}

/* ---- GPU-only -------------------------------------------------------------------- */
typedef struct gpu_sets {
    int n;
    fv_frame_buffer *in[MAX_SETS], *out[MAX_SETS];
} gpu_sets;

static void gpu_sets_close(gpu_sets *g) {
    for (int i = 0; i < g->n; i++) {
        fv_frame_buffer_destroy(g->in[i]);
        fv_frame_buffer_destroy(g->out[i]);
    }
    g->n = 0;
}

static int gpu_sets_open(fv_context *ctx, const edge_case *c, int n, gpu_sets *g) {
    memset(g, 0, sizeof *g);
    for (; g->n < n; g->n++) {
        int i = g->n;
        FV(fv_frame_buffer_create(ctx, c->fmt, c->w, c->h, &g->in[i]));
        fv_status s = fv_frame_buffer_create(ctx, FV_PIXEL_RGB24, c->w, c->h, &g->out[i]);
        if (s != FV_OK) {
            fv_frame_buffer_destroy(g->in[i]);
            return fv_fail("fv_frame_buffer_create (output)", s);
        }
        fill_random(fv_frame_buffer_data(g->in[i]), c->in_bytes);
        FV(fv_frame_buffer_upload(ctx, g->in[i]));
    }
    FV(fv_context_synchronize(ctx));
    return 0;
}

/* Creates the filter (engine: -1 the default), checks it on the photo, times
 * it. Returns 0 with *ran 0 when the engine cannot run this case (said why). */
static int gpu_only(fv_context *ctx, cudaStream_t st, edge_case *c, int idx, int engine,
                    gpu_sets *g, const unsigned char *photo, const unsigned char *want,
                    const unsigned char *exact, const edge_opts *o) {
    fv_filter_desc fd = filter_desc(c);
    if (engine >= 0) fd.engine = engine;
    fv_filter *f = NULL;
    fv_status s = fv_filter_create(ctx, &fd, &f);
    if (s == FV_ERR_NOT_SUPPORTED) {
        printf("  GPU-only %s: not supported here: %s\n", engine_label[idx], fv_last_error());
        snprintf(c->gpu_engine[idx], sizeof c->gpu_engine[idx], "not supported");
        return 0;
    }
    if (s != FV_OK) return fv_fail("fv_filter_create", s);
    int rc = 1;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double *t = malloc(sizeof *t * (size_t)o->gpu_runs);
    unsigned char *got = malloc(c->out_bytes);
    if (!t || !got) goto done;
    int fused = 0;
    if (describe(f, c->gpu_engine[idx], sizeof c->gpu_engine[idx], &fused)) goto done;
    c->gpu_engine_fused[idx] = fused;

    /* correctness: the photo in set 0, output poisoned */
    memcpy(fv_frame_buffer_data(g->in[0]), photo, c->in_bytes);
    fv_image a = fv_frame_buffer_image(g->in[0]), b = fv_frame_buffer_image(g->out[0]);
    if ((s = fv_frame_buffer_upload(ctx, g->in[0])) != FV_OK ||
        cu_fail(cudaMemsetAsync(b.data, 0xAB, c->out_bytes, st), "cudaMemsetAsync", __LINE__) ||
        (s = fv_filter_apply(f, &a, &b)) != FV_OK ||
        (s = fv_frame_buffer_download(ctx, g->out[0])) != FV_OK ||
        (s = fv_context_synchronize(ctx)) != FV_OK) {
        if (s != FV_OK) fv_fail("GPU-only check", s);
        goto done;
    }
    memcpy(got, fv_frame_buffer_data(g->out[0]), c->out_bytes);
    c->gpu_check[idx] =
        check_output(got, want, exact, c->out_bytes, fused, c->fmt == FV_PIXEL_YUYV);
    char what[64];
    snprintf(what, sizeof what, "fv_filter_apply (engine %s)", engine_label[idx]);
    if (report_check(what, &c->gpu_check[idx])) goto done;
    c->gpu_exact_max[idx] = compare(got, exact, c->out_bytes, 0).max_diff;
    fill_random(fv_frame_buffer_data(g->in[0]), c->in_bytes); /* random again for timing */
    if ((s = fv_frame_buffer_upload(ctx, g->in[0])) != FV_OK) {
        fv_fail("fv_frame_buffer_upload", s);
        goto done;
    }
    if (cu_fail(cudaEventCreate(&e0), "cudaEventCreate", __LINE__) ||
        cu_fail(cudaEventCreate(&e1), "cudaEventCreate", __LINE__))
        goto done;
    for (int r = -1; r < o->gpu_runs; r++) { /* run -1: warm-up */
        if (cu_fail(cudaEventRecord(e0, st), "cudaEventRecord", __LINE__)) goto done;
        for (int i = 0; i < o->gpu_batch; i++) {
            fv_image x = fv_frame_buffer_image(g->in[i % g->n]);
            fv_image y = fv_frame_buffer_image(g->out[i % g->n]);
            if ((s = fv_filter_apply(f, &x, &y)) != FV_OK) {
                fv_fail("fv_filter_apply", s);
                goto done;
            }
        }
        float ms = 0;
        if (cu_fail(cudaEventRecord(e1, st), "cudaEventRecord", __LINE__) ||
            cu_fail(cudaEventSynchronize(e1), "cudaEventSynchronize", __LINE__) ||
            cu_fail(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime", __LINE__) ||
            cu_fail(cudaGetLastError(), "a launch", __LINE__))
            goto done;
        if (r >= 0) t[r] = ms / o->gpu_batch;
    }
    if ((s = fv_context_synchronize(ctx)) != FV_OK) {
        fv_fail("fv_context_synchronize", s);
        goto done;
    }
    c->gpu_ms[idx] = median(t, o->gpu_runs);
    c->gpu_ran[idx] = 1;
    rc = 0;
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    fv_filter_destroy(f);
    free(t);
    free(got);
    return rc;
}

/* ---- the pipeline ---------------------------------------------------------------- */
typedef struct stage_log {
    int n, cap;
    double *up, *filt, *down, *gpu;
} stage_log;

/* Pushes n frames from src[] (round robin) through p, each collected and
 * released; checks the sequence numbers. log (may be NULL) gets the stage
 * times. *ms: wall time. */
static int pipe_frames(fv_pipeline *p, const fv_image *src, int nsrc, int n, uint64_t *seq,
                       stage_log *log, double *ms) {
    int submitted = 0, collected = 0;
    double t0 = now_ms();
    while (collected < n) {
        if (submitted < n) {
            fv_status s = fv_pipeline_submit(p, &src[submitted % nsrc], submitted);
            if (s == FV_OK) {
                submitted++;
                continue;
            }
            if (s != FV_ERR_NOT_READY) return fv_fail("fv_pipeline_submit", s);
        }
        fv_pipeline_frame fr;
        fv_status s = fv_pipeline_collect(p, 1, &fr);
        if (s != FV_OK) return fv_fail("fv_pipeline_collect (wait 1)", s);
        if (fr.sequence != *seq) {
            fprintf(stderr, "fovea-bench edge: collected frame %llu, expected %llu\n",
                    (unsigned long long)fr.sequence, (unsigned long long)*seq);
            return 1;
        }
        ++*seq;
        if (log && log->n < log->cap) {
            log->up[log->n] = fr.upload_ms, log->filt[log->n] = fr.filter_ms;
            log->down[log->n] = fr.download_ms, log->gpu[log->n] = fr.gpu_ms;
            log->n++;
        }
        collected++;
        fv_pipeline_release(p);
    }
    *ms = now_ms() - t0;
    return 0;
}

/* Poisons every slot's output (collecting random frames and overwriting
 * them), then runs the photo through every slot and compares. */
static int pipe_check(fv_pipeline *p, int slots, const fv_image *photo_img, const fv_image *rnd,
                      const unsigned char *want, const unsigned char *model, size_t out_bytes,
                      int fused, uint64_t *seq, edge_check *chk, unsigned char *keep) {
    fv_status s;
    for (int i = 0; i < slots + 1; i++) {
        while ((s = fv_pipeline_submit(p, rnd, (int64_t)i)) == FV_ERR_NOT_READY) {
            fv_pipeline_frame fr;
            FV(fv_pipeline_collect(p, 1, &fr));
            ++*seq;
            memset(fr.out.data, 0xAB, out_bytes);
            fv_pipeline_release(p);
        }
        if (s != FV_OK) return fv_fail("fv_pipeline_submit", s);
    }
    fv_pipeline_frame fr;
    while (fv_pipeline_collect(p, 1, &fr) == FV_OK) {
        ++*seq;
        memset(fr.out.data, 0xAB, out_bytes);
        fv_pipeline_release(p);
    }
    chk->pass = 1;
    chk->mid_frac = 1;
    chk->model_max = -1;
    for (int i = 0; i < slots + 1; i++) {
        FV(fv_pipeline_submit(p, photo_img, (int64_t)i));
        FV(fv_pipeline_collect(p, 1, &fr));
        if (fr.sequence != *seq) {
            fprintf(stderr, "fovea-bench edge: collected frame %llu, expected %llu\n",
                    (unsigned long long)fr.sequence, (unsigned long long)*seq);
            return 1;
        }
        ++*seq;
        if (fr.out.format != FV_PIXEL_RGB24 || fr.out.width != photo_img->width ||
            fr.out.height != photo_img->height ||
            (fr.out.stride && fr.out.stride != (size_t)photo_img->width * 3)) {
            fprintf(stderr, "fovea-bench edge: the pipeline's output is not a dense RGB24 frame "
                            "of the input's size\n");
            return 1;
        }
        edge_check c = check_output(fr.out.data, want, model, out_bytes, fused,
                                    photo_img->format == FV_PIXEL_YUYV);
        chk->limit = c.limit;
        if (c.model_max > chk->model_max) chk->model_max = c.model_max;
        if (c.model_differ > chk->model_differ) chk->model_differ = c.model_differ;
        if (keep && i == 0) memcpy(keep, fr.out.data, out_bytes);
        fv_pipeline_release(p);
        if (c.max_diff > chk->max_diff) chk->max_diff = c.max_diff;
        if (c.differ_frac > chk->differ_frac) chk->differ_frac = c.differ_frac;
        if (c.mid_frac < chk->mid_frac) chk->mid_frac = c.mid_frac;
        chk->pass &= c.pass;
    }
    return 0;
}

static int run_pipe(fv_context *ctx, edge_case *c, pipe_result *r, int main_cfg,
                    const fv_image *src, const fv_image *photo_img, const unsigned char *want,
                    const unsigned char *model, unsigned char *keep, const edge_opts *o) {
    fv_filter_desc fd = filter_desc(c);
    fv_pipeline_desc pd = {.filter = &fd,
                           .out_format = FV_PIXEL_RGB24,
                           .slots = r->slots,
                           .cuda_graph = r->graph_asked};
    fv_pipeline *p = NULL;
    FV(fv_pipeline_create(ctx, &pd, &p));
    int rc = 1;
    uint64_t seq = 0;
    double *fps = NULL;
    stage_log log = {0};
    fv_pipeline_info info;
    fv_status s = fv_pipeline_info_get(p, &info);
    if (s != FV_OK) {
        fv_fail("fv_pipeline_info_get", s);
        goto done;
    }
    r->graph_on = info.cuda_graph, r->overlapped = info.overlapped;
    snprintf(r->graph_why, sizeof r->graph_why, "%s", info.cuda_graph_why);
    if (info.in_bytes != c->in_bytes || info.out_bytes != c->out_bytes) {
        fprintf(stderr, "fovea-bench edge: pipeline frame sizes %zu/%zu, expected %zu/%zu\n",
                info.in_bytes, info.out_bytes, c->in_bytes, c->out_bytes);
        goto done;
    }
    int fused = 0;
    if (describe(fv_pipeline_filter(p), r->engine, sizeof r->engine, &fused)) goto done;
    char what[64];
    snprintf(what, sizeof what, "pipeline slots %d graph %d", r->slots, r->graph_on);
    if (main_cfg) printf("  pipeline filter: %s\n", r->engine);
    if (pipe_check(p, info.slots, photo_img, &src[0], want, model, c->out_bytes, fused, &seq,
                   &r->check, keep) ||
        report_check(what, &r->check))
        goto done;
    r->frames = main_cfg ? o->frames : o->var_frames;
    r->runs = main_cfg ? o->runs : o->var_runs;
    double ms;
    if (pipe_frames(p, src, NSRC, o->warmup, &seq, NULL, &ms)) goto done;
    fps = malloc(sizeof *fps * (size_t)r->runs);
    log.cap = r->frames;
    log.up = malloc(sizeof(double) * (size_t)log.cap * 4);
    if (!fps || !log.up) goto done;
    log.filt = log.up + log.cap, log.down = log.filt + log.cap, log.gpu = log.down + log.cap;
    for (int i = 0; i < r->runs; i++) {
        log.n = 0;
        if (pipe_frames(p, src, NSRC, r->frames, &seq, &log, &ms)) goto done;
        fps[i] = r->frames / ms * 1e3;
    }
    r->fps_median = median(fps, r->runs);
    r->fps_min = fps[0], r->fps_max = fps[r->runs - 1];
    r->upload_ms = median(log.up, log.n), r->filter_ms = median(log.filt, log.n);
    r->download_ms = median(log.down, log.n), r->gpu_ms = median(log.gpu, log.n);
    printf("  pipeline slots %d graph %d%s: %.0f fps (median of %d x %d frames; %.0f..%.0f), "
           "per frame up %.3f filter %.3f down %.3f gpu %.3f ms\n",
           r->slots, r->graph_on, r->overlapped ? "" : " (not overlapped)", r->fps_median, r->runs,
           r->frames, r->fps_min, r->fps_max, r->upload_ms, r->filter_ms, r->download_ms,
           r->gpu_ms);
    if (r->graph_asked && !r->graph_on) printf("    CUDA graph off: %s\n", r->graph_why);

    if (main_cfg && c->h == 1080 && o->alloc_frames > 0) {
        if (snap(ctx, &c->before) || pipe_frames(p, src, NSRC, o->alloc_frames, &seq, NULL, &ms) ||
            snap(ctx, &c->after))
            goto done;
        c->alloc_ran = 1, c->alloc_frames = o->alloc_frames;
        c->alloc_fps = o->alloc_frames / ms * 1e3;
        c->alloc_pass = snaps_equal(&c->before, &c->after);
        printf("  zero allocations over %d pipelined frames (%.0f fps): %s\n", o->alloc_frames,
               c->alloc_fps, c->alloc_pass ? "PASS" : "FAIL");
        print_snaps(&c->before, &c->after);
    }
    rc = 0;
done:
    fv_pipeline_destroy(p);
    free(fps);
    free(log.up);
    return rc;
}

/* ---- one case ------------------------------------------------------------------- */
static int write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

static int run_case(edge_case *c, fv_context *cpu, const fv_host_image *ph, int l2_bytes,
                    const edge_opts *o) {
    printf("\n%s: %dx%d %s -> RGB24, in %zu B, out %zu B per frame\n", c->label, c->w, c->h,
           fv_pixel_format_name(c->fmt), c->in_bytes, c->out_bytes);
    int rc = 1;
    unsigned char *photo = malloc(c->in_bytes), *want = malloc(c->out_bytes),
                  *keep = malloc(c->out_bytes), *exact = NULL;
    fv_filter *fc = NULL;
    fv_context *ctx = NULL;
    copy_bufs cb = {0};
    gpu_sets g = {0};
    if (!photo || !want || !keep) goto done;
    photo_frame(ph, c->w, c->h, c->fmt, photo);

    /* the reference: the CPU backend */
    fv_filter_desc fd = filter_desc(c);
    fv_status s = fv_filter_create(cpu, &fd, &fc);
    fv_image a = {.format = c->fmt, .width = c->w, .height = c->h, .data = photo};
    fv_image b = {.format = FV_PIXEL_RGB24, .width = c->w, .height = c->h, .data = want};
    if (s != FV_OK || (s = fv_filter_apply(fc, &a, &b)) != FV_OK ||
        (s = fv_context_synchronize(cpu)) != FV_OK) {
        fv_fail("the CPU reference", s);
        goto done;
    }

    /* pools: every pipeline slot (up to 4) and frame-buffer set, plus room */
    int nsets = (int)((2 * (size_t)l2_bytes) / (c->in_bytes + c->out_bytes)) + 2;
    c->nsets = nsets > MAX_SETS ? MAX_SETS : nsets;
    size_t frame = c->in_bytes + c->out_bytes;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA,
                          .device_pool_bytes = (size_t)o->device_pool_mb << 20,
                          .pinned_pool_bytes = (size_t)(4 + c->nsets) * frame + (64u << 20)};
    if ((s = fv_context_create(&cd, &ctx)) != FV_OK) {
        if (s == FV_ERR_NO_DEVICE)
            fprintf(stderr, "fovea-bench edge: this benchmark needs a GPU: %s\n", fv_last_error());
        else
            fv_fail("fv_context_create (CUDA)", s);
        goto done;
    }
    cudaStream_t st;
    if ((s = fv_context_cuda_stream(ctx, &st)) != FV_OK) {
        fv_fail("fv_context_cuda_stream", s);
        goto done;
    }

    /* 2. the copy floor */
    if (copy_bufs_open(&cb, c) || time_copy(&cb, 1, c->in_bytes, o->copy_reps, &c->h2d_ms) ||
        time_copy(&cb, 0, c->out_bytes, o->copy_reps, &c->d2h_ms) ||
        time_copy_both(&cb, c, o->copy_reps, &c->both_ms) ||
        time_copy_spread(&cb, c, o->copy_reps, &c->spread_ms))
        goto done;
    /* the floor: the faster of the two ways to keep both directions busy */
    c->floor_ms = c->spread_ms < c->both_ms ? c->spread_ms : c->both_ms;
    printf("  copy floor: H2D %.3f ms (%.1f GB/s), D2H %.3f ms (%.1f GB/s), both at once on two "
           "streams %.3f ms per frame, spread over %d streams a direction %.3f ms; floor %.3f "
           "ms = %.0f fps\n",
           c->h2d_ms, c->in_bytes / c->h2d_ms * 1e-6, c->d2h_ms, c->out_bytes / c->d2h_ms * 1e-6,
           c->both_ms, COPY_STREAMS, c->spread_ms, c->floor_ms, 1e3 / c->floor_ms);

    /* 3. GPU-only, engines AUTO, CONV, FUSED, DIRECT; each against the DRAM
     * floor: the frame's bytes read and written at the bandwidth measured */
    if (gpu_sets_open(ctx, c, c->nsets, &g)) goto done;
    if (!(exact = malloc(c->out_bytes)) || model_ref(photo, c->fmt, c->w, c->h, exact)) goto done;
    for (int i = 0; i < ENGINES; i++)
        if (gpu_only(ctx, st, c, i, engine_value[i], &g, photo, want, exact, o)) goto done;
    c->dram_floor_ms =
        g_dram_gbps > 0 ? (double)(c->in_bytes + c->out_bytes) / (g_dram_gbps * 1e6) : 0.0;
    for (int i = 0; i < ENGINES; i++)
        if (c->gpu_ran[i]) {
            printf("  GPU-only engine %s: %.4f ms per frame (median of %d batches of %d, %d "
                   "frame sets; %s)\n",
                   engine_label[i], c->gpu_ms[i], o->gpu_runs, o->gpu_batch, g.n, c->gpu_engine[i]);
            if (c->dram_floor_ms > 0)
                printf("    DRAM floor %.4f ms (%.2f MB read + written at %.0f GB/s): %.2fx the "
                       "floor\n",
                       c->dram_floor_ms, (double)(c->in_bytes + c->out_bytes) * 1e-6, g_dram_gbps,
                       c->gpu_ms[i] / c->dram_floor_ms);
        }
    gpu_sets_close(&g);

    /* 4. and 5. end to end */
    fv_image src[NSRC], photo_img = a;
    for (int i = 0; i < NSRC; i++)
        src[i] = (fv_image){.format = c->fmt, .width = c->w, .height = c->h, .data = cb.src[i]};
    /* the photo frame in pinned memory too, as the timed frames */
    unsigned char *photo_pinned = NULL;
    if (cu_fail(cudaHostAlloc((void **)&photo_pinned, c->in_bytes, cudaHostAllocDefault),
                "cudaHostAlloc", __LINE__))
        goto done;
    memcpy(photo_pinned, photo, c->in_bytes);
    photo_img.data = photo_pinned;
    static const int cfg[MAX_PIPES][2] = {{3, 0}, {2, 0}, {4, 0}, {3, 1}};
    int npipes = o->var_runs > 0 ? MAX_PIPES : 1;
    int bad = 0;
    for (int i = 0; i < npipes && !bad; i++) {
        pipe_result *r = &c->pipe[i];
        r->slots = cfg[i][0], r->graph_asked = cfg[i][1];
        bad = run_pipe(ctx, c, r, i == 0, src, &photo_img, want, exact, i == 0 ? keep : NULL, o);
        if (!bad) c->npipes = i + 1;
    }
    cudaFreeHost(photo_pinned);
    if (bad) goto done;

    if (o->dump) {
        snprintf(c->dump_in, sizeof c->dump_in, "%s/edge_%dx%d_%s_in.raw", o->dump, c->w, c->h,
                 c->fmt == FV_PIXEL_YUYV ? "yuyv" : "rgb");
        snprintf(c->dump_out, sizeof c->dump_out, "%s/edge_%dx%d_%s_fovea_out.raw", o->dump, c->w,
                 c->h, c->fmt == FV_PIXEL_YUYV ? "yuyv" : "rgb");
        if (write_file(c->dump_in, photo, c->in_bytes) ||
            write_file(c->dump_out, keep, c->out_bytes))
            goto done;
    }
    rc = 0;
done:
    gpu_sets_close(&g);
    copy_bufs_close(&cb);
    fv_context_destroy(ctx);
    fv_filter_destroy(fc);
    free(photo), free(want), free(keep), free(exact);
    return rc;
}

/* ---- output ---------------------------------------------------------------------- */
static void json_check(FILE *f, const edge_check *c) {
    fprintf(f,
            "{\"max_abs_diff\": %d, \"limit\": %d, \"fused_rule_max_abs_diff\": %d, "
            "\"differ_frac\": %.6g, "
            "\"unsaturated_frac\": %.6g, \"pass\": %s}",
            c->max_diff, c->limit, c->model_max, c->differ_frac, c->mid_frac,
            c->pass ? "true" : "false");
}

static void json_num(FILE *f, double x) {
    if (isfinite(x))
        fprintf(f, "%.6g", x);
    else
        fprintf(f, "null");
}

static void json_snap(FILE *f, const pool_snap *s) {
    fprintf(f, "{\"device_free\": %zu, \"host_heap_in_use\": %lld, \"pools\": {", s->dev_free,
            s->heap);
    int first = 1;
    for (int k = 0; k < 4; k++) {
        if (!s->have[k]) continue;
        const fv_pool_stats *x = &s->st[k];
        fprintf(f,
                "%s\"%s\": {\"reserved\": %zu, \"in_use\": %zu, \"peak\": %zu, "
                "\"backing_allocs\": %llu, \"carve_outs\": %llu, \"failed\": %llu}",
                first ? "" : ", ", fv_pool_kind_name((fv_pool_kind)k), x->reserved, x->in_use,
                x->peak, (unsigned long long)x->backing_allocs, (unsigned long long)x->carve_outs,
                (unsigned long long)x->failed);
        first = 0;
    }
    fprintf(f, "}}");
}

static int write_json(const char *path, const edge_opts *o, const fv_context_info *info,
                      const edge_case *c, int n) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "{\n  \"bench\": \"edge\",\n  \"fovea_version\": \"%s\",\n", fv_version());
    fprintf(f, "  \"device\": \"%s\",\n  \"cuda_runtime\": %d,\n  \"cuda_driver\": %d,\n",
            info->device_name, info->cuda_runtime_loaded, info->cuda_driver);
    fprintf(f,
            "  \"cudnn\": %d,\n  \"filter\": \"laplacian 3x3 {1,1,1;1,-8,1;1,1,1}, grey "
            "(summed over R,G,B), |x|, gain 1, RGB24 output\",\n",
            info->cudnn_loaded);

    fprintf(f,
            "  \"frames\": %d, \"runs\": %d, \"warmup\": %d, \"variant_frames\": %d, "
            "\"variant_runs\": %d,\n  \"gpu_batch\": %d, \"gpu_runs\": %d, \"copy_reps\": %d, "
            "\"alloc_frames\": %d,\n",
            o->frames, o->runs, o->warmup, o->var_frames, o->var_runs, o->gpu_batch, o->gpu_runs,
            o->copy_reps, o->alloc_frames);
    fprintf(f, "  \"dram_gbps\": ");
    json_num(f, g_dram_gbps > 0 ? g_dram_gbps : NAN);
    fprintf(f, ",\n  \"dram_how\": \"device-to-device cudaMemcpyAsync of 256 MiB, read + "
               "written bytes over the median time of 11\",\n");
    fprintf(f, "  \"image\": \"%s\",\n  \"cases\": [\n", o->image);
    for (int i = 0; i < n; i++) {
        const edge_case *e = &c[i];
        fprintf(f,
                "    {\"label\": \"%s\", \"width\": %d, \"height\": %d, \"format\": \"%s\", "
                "\"in_bytes\": %zu, \"out_bytes\": %zu,\n",
                e->label, e->w, e->h, fv_pixel_format_name(e->fmt), e->in_bytes, e->out_bytes);
        fprintf(f, "     \"copy\": {\"h2d_ms\": ");
        json_num(f, e->h2d_ms);
        fprintf(f, ", \"d2h_ms\": ");
        json_num(f, e->d2h_ms);
        fprintf(f, ", \"both_ms_per_frame\": ");
        json_num(f, e->both_ms);
        fprintf(f, ", \"floor_fps\": ");
        json_num(f, 1e3 / e->floor_ms);
        fprintf(f, "},\n     \"dram_floor_ms\": ");
        json_num(f, e->dram_floor_ms > 0 ? e->dram_floor_ms : NAN);
        fprintf(f, ",\n     \"gpu_only\": [");
        for (int k = 0; k < ENGINES; k++) {
            fprintf(f, "%s{\"engine\": \"%s\", \"ran\": %s, \"ms\": ", k ? ", " : "",
                    engine_label[k], e->gpu_ran[k] ? "true" : "false");
            json_num(f, e->gpu_ran[k] ? e->gpu_ms[k] : NAN);
            fprintf(f, ", \"floor_ratio\": ");
            json_num(f,
                     e->gpu_ran[k] && e->dram_floor_ms > 0 ? e->gpu_ms[k] / e->dram_floor_ms : NAN);
            fprintf(f,
                    ", \"what\": \"%s\", \"exact_max_abs_diff\": %d, \"check\": ", e->gpu_engine[k],
                    e->gpu_ran[k] ? e->gpu_exact_max[k] : -1);
            json_check(f, &e->gpu_check[k]);
            fprintf(f, "}");
        }
        fprintf(f, "],\n     \"frame_sets\": %d,\n     \"pipelines\": [\n", e->nsets);
        for (int k = 0; k < e->npipes; k++) {
            const pipe_result *r = &e->pipe[k];
            fprintf(f,
                    "       {\"slots\": %d, \"cuda_graph_asked\": %d, \"cuda_graph\": %d, "
                    "\"overlapped\": %d, \"frames\": %d, \"runs\": %d, \"fps_median\": ",
                    r->slots, r->graph_asked, r->graph_on, r->overlapped, r->frames, r->runs);
            json_num(f, r->fps_median);
            fprintf(f, ", \"fps_min\": ");
            json_num(f, r->fps_min);
            fprintf(f, ", \"fps_max\": ");
            json_num(f, r->fps_max);
            fprintf(f, ", \"upload_ms\": ");
            json_num(f, r->upload_ms);
            fprintf(f, ", \"filter_ms\": ");
            json_num(f, r->filter_ms);
            fprintf(f, ", \"download_ms\": ");
            json_num(f, r->download_ms);
            fprintf(f, ", \"gpu_ms\": ");
            json_num(f, r->gpu_ms);
            fprintf(f, ", \"engine\": \"%s\", \"check\": ", r->engine);
            json_check(f, &r->check);
            fprintf(f, "}%s\n", k + 1 < e->npipes ? "," : "");
        }
        fprintf(f, "     ],\n     \"alloc\": ");
        if (e->alloc_ran) {
            fprintf(f,
                    "{\"frames\": %d, \"fps\": %.1f, \"pass\": %s, \"before\": ", e->alloc_frames,
                    e->alloc_fps, e->alloc_pass ? "true" : "false");
            json_snap(f, &e->before);
            fprintf(f, ", \"after\": ");
            json_snap(f, &e->after);
            fprintf(f, "}");
        } else {
            fprintf(f, "null");
        }
        fprintf(f, ",\n     \"dump_in\": \"%s\", \"dump_out\": \"%s\"}%s\n", e->dump_in,
                e->dump_out, i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    return fclose(f) != 0;
}

static const char *mark(int ok) {
    return ok ? "PASS" : "MISS";
}

static void print_table(const edge_case *c, int n) {
    printf("\nfovea edge (Laplacian, RGB24 out): end to end = fv_pipeline, 3 slots, both copies; "
           "floor = H2D || D2H\n");
    printf("%-11s %9s %9s %7s %10s %10s %8s %8s %8s %8s %9s %8s %8s\n", "case", "e2e fps",
           "floor fps", "e2e/flr", "gpu auto", "gpu conv", "2 slots", "4 slots", "graph",
           "H2D GB/s", "DRAM flr", "auto/flr", "direct/f");
    for (int i = 0; i < n; i++) {
        const edge_case *e = &c[i];
        double fl = 1e3 / e->floor_ms, fps = e->pipe[0].fps_median;
        char conv[16] = "n/a", v[3][16] = {"-", "-", "-"};
        if (e->gpu_ran[1]) snprintf(conv, sizeof conv, "%.4f", e->gpu_ms[1]);
        for (int k = 1; k < e->npipes; k++)
            snprintf(v[k - 1], sizeof v[k - 1], "%.0f", e->pipe[k].fps_median);
        const double df = e->dram_floor_ms;
        printf("%-11s %9.0f %9.0f %7.2f %10.4f %10s %8s %8s %8s %8.1f %9.4f %8.2f %8.2f\n",
               e->label, fps, fl, fps / fl, e->gpu_ms[0], conv, v[0], v[1], v[2],
               e->in_bytes / e->h2d_ms * 1e-6, df, df > 0 ? e->gpu_ms[0] / df : NAN,
               df > 0 && e->gpu_ran[3] ? e->gpu_ms[3] / df : NAN);
    }
    printf("targets (fovea-only; the PyTorch ratio is edge_vs_peers.py's):\n");
    for (int i = 0; i < n; i++) {
        const edge_case *e = &c[i];
        double fl = 1e3 / e->floor_ms, fps = e->pipe[0].fps_median;
        printf("  %-11s within 1.5x of the copy floor: %.2fx  %s", e->label, fl / fps,
               mark(fl / fps <= 1.5));
        if (e->h == 1080)
            printf("; GPU-only <= 0.10 ms: %.4f  %s", e->gpu_ms[0], mark(e->gpu_ms[0] <= 0.10));
        if (e->dram_floor_ms > 0)
            printf("; GPU-only <= 2.0x DRAM floor: %.2fx  %s", e->gpu_ms[0] / e->dram_floor_ms,
                   mark(e->gpu_ms[0] <= 2.0 * e->dram_floor_ms));
        if (e->h == 2160 && e->fmt == FV_PIXEL_RGB24)
            printf("; e2e >= 1000 fps: %.0f  %s", fps, mark(fps >= 1000));
        if (e->alloc_ran)
            printf("; allocation counters unchanged: %s", e->alloc_pass ? "PASS" : "FAIL");
        printf("\n");
    }
}

/* ---- the subcommand --------------------------------------------------------------- */
int bench_cmd_edge(int argc, char **argv) {
    edge_opts o = {.frames = 2000,
                   .runs = 5,
                   .warmup = 200,
                   .var_frames = 1000,
                   .var_runs = 3,
                   .alloc_frames = 10000,
                   .gpu_batch = 100,
                   .gpu_runs = 11,
                   .copy_reps = 50,
                   .sizes = "1080p,4k",
                   .formats = "rgb,yuyv",
                   .image = FV_BENCH_DATA_DIR "/astronaut.png",
                   .device_pool_mb = 3072};
    if (parse_opts(argc, argv, &o)) return 2;
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress and errors in order when piped */
    static edge_case cases[MAX_CASES];
    int n = make_cases(&o, cases);
    if (!n) return 2;

    fv_context *probe = NULL;
    fv_context_desc pd = {.backend = FV_BACKEND_CUDA};
    fv_status s = fv_context_create(&pd, &probe);
    if (s == FV_ERR_NO_DEVICE) {
        fprintf(stderr, "fovea-bench edge: this benchmark needs a GPU: %s\n", fv_last_error());
        return 2;
    }
    if (s != FV_OK) return fv_fail("fv_context_create (CUDA)", s);
    fv_context_info info;
    fv_context_info_get(probe, &info);
    fv_context_destroy(probe);
    int l2 = 0;
    CU(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, info.device_index));

    fv_host_image ph = {0};
    if ((s = fv_image_file_load(o.image, FV_PIXEL_RGB24, &ph)) != FV_OK) {
        fprintf(stderr,
                "fovea-bench edge: the correctness photo: %s: %s (give --image PATH to a PNG or "
                "JPEG)\n",
                fv_status_name(s), fv_last_error());
        return 1;
    }
    /* the CPU reference: pools large enough for a 4K frame's tensors */
    fv_context_desc cpd = {.backend = FV_BACKEND_CPU,
                           .device_pool_bytes = (size_t)1536 << 20,
                           .host_pool_bytes = (size_t)256 << 20};
    fv_context *cpu = NULL;
    if ((s = fv_context_create(&cpd, &cpu)) != FV_OK) {
        fv_host_image_free(&ph);
        return fv_fail("fv_context_create (CPU)", s);
    }
    printf("fovea-bench edge: %s (SM %d.%d, %d SMs, L2 %d MiB), CUDA runtime %d driver %d, "
           "cuDNN %d, fovea %s\n",
           info.device_name, info.sm_major, info.sm_minor, info.multiprocessors, l2 >> 20,
           info.cuda_runtime_loaded, info.cuda_driver, info.cudnn_loaded, fv_version());
    printf("Laplacian {1,1,1;1,-8,1;1,1,1} on R+G+B, |x|, gain 1 -> RGB24; photo %s (%dx%d, "
           "tiled); random frames for timing\n",
           o.image, ph.width, ph.height);
    if (measure_dram(info.device_index, &g_dram_gbps) == 0)
        printf("device DRAM bandwidth: %.0f GB/s (device-to-device cudaMemcpyAsync of 256 MiB, "
               "read + written bytes, median of 11)\n",
               g_dram_gbps);

    int rc = 0, at = 0;
    for (; at < n && !rc; at++)
        rc = run_case(&cases[at], cpu, &ph, l2, &o);
    fv_context_destroy(cpu);
    fv_host_image_free(&ph);
    if (rc) {
        fprintf(stderr, "fovea-bench edge: stopped in case %s: no table\n", cases[at - 1].label);
        return 1;
    }
    print_table(cases, n);
    for (int i = 0; o.sms && i < n; i++) /* each size once, on RGB24 frames */
        if (cases[i].fmt == FV_PIXEL_RGB24 &&
            bench_edge_slices(o.sms, info.device_index, cases[i].w, cases[i].h, o.gpu_batch,
                              o.gpu_runs) == 2)
            return 2;
    int alloc_fail = 0;
    for (int i = 0; i < n; i++)
        alloc_fail |= cases[i].alloc_ran && !cases[i].alloc_pass;
    if (o.json && write_json(o.json, &o, &info, cases, n)) return 1;
    if (alloc_fail) {
        fprintf(stderr, "fovea-bench edge: FAIL: pool or device memory counters changed while "
                        "pipelining frames (see above)\n");
        return 1;
    }
    return 0;
}
#endif /* FV_BUILT_WITH_CUDA */
