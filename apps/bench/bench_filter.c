/* fovea-bench filter: fv_filter_apply on device-resident frames against its
 * DRAM floor, over every filter kind, input format and output format at
 * 1080p and 4K (issue 20's matrix). Per case:
 *   1. correctness first: on random frames, the engine AUTO chose against
 *      the FUSED engine forced, byte for byte where fv_filter_info says
 *      DIRECT's bytes are provably FUSED's (direct_exact), and the FUSED
 *      engine against the CPU backend (the FP32 reference) within
 *      filter.h's rounding (3 levels: tests/gpu/test_gpu_filter.c checks
 *      the exact bound); outputs poisoned first. A mismatch stops the
 *      benchmark (exit 1).
 *   2. GPU-only time: batches of --batch applies between CUDA events on the
 *      context's stream, rotating enough frame sets (input and output) to
 *      leave L2 (2x its size), the median of --runs batches per frame.
 *   3. the DRAM floor: the frame's bytes read + written over the bandwidth
 *      of a 256 MiB device-to-device copy in the same run; the ratio. The
 *      tensor-core floor: the stencil's FLOPs (2 x taps x planes x kernels a
 *      pixel) over a large FP16 GEMM's rate, in the same run.
 *   4. the same-bytes copy: a batch of device-to-device copies moving the
 *      case's bytes (half its read + written bytes each way), rotating over
 *      the same number of sets and timed the same way (a CUDA graph's
 *      replays): what a launch of a plain copy costs at this size, the
 *      fixed costs of a small frame included.
 * Prints one row per case and the worst ratio per size; --json FILE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fovea/fovea.h"
#include "fv_cli.h"

int bench_cmd_filter(int argc, char **argv);

#if FV_BUILT_WITH_CUDA
#include <cuda_runtime.h>
#include "fovea/fovea_cuda.h"
#include "bench_floor.h"

enum { MAX_SETS = 16 };

typedef struct named {
    const char *name;
    int value;
} named;

static const named sizes_all[] = {{"1080p", 1920}, {"4k", 3840}};
static const named formats_all[] = {{"gray", FV_PIXEL_GRAY8}, {"rgb", FV_PIXEL_RGB24},
                                    {"bgr", FV_PIXEL_BGR24},  {"rgba", FV_PIXEL_RGBA32},
                                    {"yuyv", FV_PIXEL_YUYV},  {"uyvy", FV_PIXEL_UYVY},
                                    {"nv12", FV_PIXEL_NV12}};
static const named kinds_all[] = {{"laplacian", FV_FILTER_LAPLACIAN},
                                  {"sobel", FV_FILTER_SOBEL},
                                  {"scharr", FV_FILTER_SCHARR},
                                  {"prewitt", FV_FILTER_PREWITT}};
/* output: the image format, and the edge mode (grey edge; colour edges) */
static const named outputs_all[] = {{"gray", FV_PIXEL_GRAY8},
                                    {"rgb", FV_PIXEL_RGB24},
                                    {"bgr", FV_PIXEL_BGR24},
                                    {"rgba", FV_PIXEL_RGBA32},
                                    {"rgb-color", FV_PIXEL_RGB24}};

typedef struct filter_opts {
    const char *sizes, *formats, *kinds, *outputs, *engine, *json;
    int batch, runs, device_pool_mb;
} filter_opts;

typedef struct filter_row {
    char size[8], kind[12], in[8], out[12], engine[12];
    int exact;       /* direct_exact */
    int wave_less;   /* direct_wave_less: DIRECT's taller strips (AUTO's timing) */
    double ms;       /* median GPU-only ms per frame: CUDA-graph replays of a batch */
    double eager_ms; /* the same batch launched eagerly (host launches included) */
    double floor;    /* DRAM floor ms */
    double tc_floor; /* tensor-core floor ms */
    double copy_ms;  /* a copy of the same bytes, timed the same way */
    double mb;       /* MB read + written */
    int cpu_max;     /* largest |diff| from the CPU backend */
    int fused_max;   /* largest |diff| from the FUSED engine */
} filter_row;

/* --option integer in [lo, hi] */
static int int_opt(const char *v, long lo, long hi, int *out) {
    long x = 0;
    if (fv_cli_long(v, lo, hi, &x) != 0) return 0;
    *out = (int)x;
    return 1;
}

static int selected(const char *list, const char *name) {
    /* exact, comma-separated match */
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static int fail_st(const char *what, fv_status s) {
    fprintf(stderr, "fovea-bench filter: %s: %s: %s\n", what, fv_status_name(s), fv_last_error());
    return 1;
}

static int cu_fail(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return 0;
    fprintf(stderr, "fovea-bench filter: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

static void fill_random(unsigned char *p, size_t n, unsigned *state) {
    unsigned x = *state;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (unsigned char)(x >> 24);
    }
    *state = x;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Largest |a - b| over n bytes. */
static int max_diff(const unsigned char *a, const unsigned char *b, size_t n) {
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        if (d > m) m = d;
    }
    return m;
}

/* Applies f to in (host bytes) through frame buffers of ctx; out: host
 * bytes of the output (out_bytes). */
static int apply_once(fv_context *ctx, fv_filter *f, fv_pixel_format fin, fv_pixel_format fout,
                      int w, int h, const unsigned char *in, unsigned char *out) {
    fv_frame_buffer *a = NULL, *b = NULL;
    fv_status s = fv_frame_buffer_create(ctx, fin, w, h, &a);
    if (s == FV_OK) s = fv_frame_buffer_create(ctx, fout, w, h, &b);
    if (s == FV_OK) {
        memcpy(fv_frame_buffer_data(a), in, fv_image_bytes(fin, w, h));
        memset(fv_frame_buffer_data(b), 0xAB, fv_image_bytes(fout, w, h));
        fv_image x = fv_frame_buffer_image(a), y = fv_frame_buffer_image(b);
        if ((s = fv_frame_buffer_upload(ctx, a)) == FV_OK &&
            (s = fv_frame_buffer_upload(ctx, b)) == FV_OK &&
            (s = fv_filter_apply(f, &x, &y)) == FV_OK &&
            (s = fv_frame_buffer_download(ctx, b)) == FV_OK &&
            (s = fv_context_synchronize(ctx)) == FV_OK)
            memcpy(out, fv_frame_buffer_data(b), fv_image_bytes(fout, w, h));
    }
    fv_frame_buffer_destroy(a);
    fv_frame_buffer_destroy(b);
    return s == FV_OK ? 0 : fail_st("apply (check)", s);
}

/* The stencil's FLOPs a pixel: a multiply and an add per tap, per edge
 * plane (3 for colour edges of a colour input), per kernel (2 for the
 * gradient pairs); the pixel conversions not counted. */
static double filter_flop_per_pixel(fv_filter_kind kind, fv_pixel_format fin, int color) {
    const int planes = color && fin != FV_PIXEL_GRAY8 ? 3 : 1;
    const int kernels = kind == FV_FILTER_LAPLACIAN ? 1 : 2;
    return 2.0 * 9 * planes * kernels;
}

/* One case: check, then time. */
static int run_case(fv_context *gpu, fv_context *cpu, const filter_opts *o, int w, int h,
                    fv_filter_kind kind, fv_pixel_format fin, fv_pixel_format fout, int color,
                    const bench_floors *fl, size_t l2, filter_row *row) {
    fv_filter_desc d = {.kind = kind,
                        .width = w,
                        .height = h,
                        .format = fin,
                        .output = color ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY,
                        .gain = 1.0f};
    if (!strcmp(o->engine, "direct")) d.engine = FV_FILTER_ENGINE_DIRECT;
    if (!strcmp(o->engine, "fused")) d.engine = FV_FILTER_ENGINE_FUSED;
    const size_t in_b = fv_image_bytes(fin, w, h), out_b = fv_image_bytes(fout, w, h);
    int rc = 1, nsets = 0;
    fv_filter *f = NULL, *ff = NULL, *fc = NULL;
    fv_frame_buffer *in[MAX_SETS] = {0}, *out[MAX_SETS] = {0};
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaGraph_t graph = NULL, cgraph = NULL;
    cudaGraphExec_t exec = NULL, cexec = NULL;
    void *cbuf = NULL;
    double *t = calloc((size_t)o->runs, sizeof *t), *te = calloc((size_t)o->runs, sizeof *te);
    unsigned char *src = malloc(in_b), *got = malloc(out_b), *ref = malloc(out_b),
                  *cref = malloc(out_b);
    unsigned seed = 0x9E3779B9u ^ (unsigned)(w * 31 + fin * 7 + kind * 3 + fout);
    if (!t || !te || !src || !got || !ref || !cref) {
        fprintf(stderr, "fovea-bench filter: out of host memory\n");
        goto done;
    }
    fv_status s = fv_filter_create(gpu, &d, &f);
    if (s != FV_OK) {
        fail_st("fv_filter_create", s);
        goto done;
    }
    fv_filter_info fi;
    if ((s = fv_filter_info_get(f, &fi)) != FV_OK) {
        fail_st("fv_filter_info_get", s);
        goto done;
    }
    snprintf(row->engine, sizeof row->engine, "%s", fv_filter_engine_name(fi.engine));
    row->exact = fi.direct_exact;
    row->wave_less = fi.direct_wave_less;
    /* 1. correctness on a random frame */
    fill_random(src, in_b, &seed);
    fv_filter_desc dfu = d, dc = d;
    dfu.engine = FV_FILTER_ENGINE_FUSED, dc.engine = FV_FILTER_ENGINE_AUTO;
    if ((s = fv_filter_create(gpu, &dfu, &ff)) != FV_OK ||
        (s = fv_filter_create(cpu, &dc, &fc)) != FV_OK) {
        fail_st("fv_filter_create (checks)", s);
        goto done;
    }
    if (apply_once(gpu, f, fin, fout, w, h, src, got) ||
        apply_once(gpu, ff, fin, fout, w, h, src, ref) ||
        apply_once(cpu, fc, fin, fout, w, h, src, cref))
        goto done;
    row->fused_max = max_diff(got, ref, out_b);
    row->cpu_max = max_diff(ref, cref, out_b);
    if ((fi.engine != FV_FILTER_ENGINE_FUSED && fi.direct_exact && row->fused_max != 0) ||
        row->fused_max > 1 || row->cpu_max > 3) {
        fprintf(stderr,
                "fovea-bench filter: %s %s %s -> %s: engine %s differs from FUSED by %d "
                "(exact %d), FUSED from the CPU by %d\n",
                row->size, row->kind, row->in, row->out, row->engine, row->fused_max,
                fi.direct_exact, row->cpu_max);
        goto done;
    }
    /* 2. timing over sets that leave L2 */
    nsets = (int)((2 * l2 + in_b + out_b - 1) / (in_b + out_b)) + 1;
    if (nsets < 2) nsets = 2;
    if (nsets > MAX_SETS) nsets = MAX_SETS;
    for (int i = 0; i < nsets; i++) {
        if ((s = fv_frame_buffer_create(gpu, fin, w, h, &in[i])) != FV_OK ||
            (s = fv_frame_buffer_create(gpu, fout, w, h, &out[i])) != FV_OK) {
            fail_st("fv_frame_buffer_create", s);
            goto done;
        }
        fill_random(fv_frame_buffer_data(in[i]), in_b, &seed);
        if ((s = fv_frame_buffer_upload(gpu, in[i])) != FV_OK) {
            fail_st("fv_frame_buffer_upload", s);
            goto done;
        }
    }
    cudaStream_t st = NULL;
    if ((s = fv_context_cuda_stream(gpu, &st)) != FV_OK) {
        fail_st("fv_context_cuda_stream", s);
        goto done;
    }
    if (cu_fail(cudaEventCreate(&e0), "cudaEventCreate") ||
        cu_fail(cudaEventCreate(&e1), "cudaEventCreate"))
        goto done;
    /* the batch captured once into a CUDA graph: its replays time the GPU
     * alone (eagerly, the host's launches can be slower than a small frame's
     * kernel); eager batches give the time with the launches */
    if (cu_fail(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal),
                "cudaStreamBeginCapture"))
        goto done;
    for (int i = 0; i < o->batch && s == FV_OK; i++) {
        fv_image x = fv_frame_buffer_image(in[i % nsets]);
        fv_image y = fv_frame_buffer_image(out[i % nsets]);
        s = fv_filter_apply(f, &x, &y);
    }
    cudaError_t ce = cudaStreamEndCapture(st, &graph);
    if (s != FV_OK) {
        fail_st("fv_filter_apply (captured)", s);
        goto done;
    }
    if (cu_fail(ce, "cudaStreamEndCapture") ||
        cu_fail(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate"))
        goto done;
    for (int mode = 0; mode < 2; mode++)     /* 0: graph replays, 1: eager */
        for (int r = -1; r < o->runs; r++) { /* run -1: warm-up */
            if (cu_fail(cudaEventRecord(e0, st), "cudaEventRecord")) goto done;
            if (mode == 0 && cu_fail(cudaGraphLaunch(exec, st), "cudaGraphLaunch")) goto done;
            for (int i = 0; mode == 1 && i < o->batch; i++) {
                fv_image x = fv_frame_buffer_image(in[i % nsets]);
                fv_image y = fv_frame_buffer_image(out[i % nsets]);
                if ((s = fv_filter_apply(f, &x, &y)) != FV_OK) {
                    fail_st("fv_filter_apply", s);
                    goto done;
                }
            }
            float ms = 0;
            if (cu_fail(cudaEventRecord(e1, st), "cudaEventRecord") ||
                cu_fail(cudaEventSynchronize(e1), "cudaEventSynchronize") ||
                cu_fail(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime"))
                goto done;
            if (r >= 0) (mode == 0 ? t : te)[r] = ms / o->batch;
        }
    qsort(t, (size_t)o->runs, sizeof *t, cmp_double);
    qsort(te, (size_t)o->runs, sizeof *te, cmp_double);
    row->ms = t[o->runs / 2];
    row->eager_ms = te[o->runs / 2];
    row->mb = (double)(in_b + out_b) / 1e6;
    row->floor = bench_dram_floor_ms(fl, (double)(in_b + out_b));
    row->tc_floor = bench_mma_floor_ms(fl, (double)w * h * filter_flop_per_pixel(kind, fin, color));
    /* 4. the same bytes as plain copies, the same sets, the same timing */
    const size_t half = (in_b + out_b) / 2;
    if (cu_fail(cudaMalloc(&cbuf, 2 * half * (size_t)nsets), "cudaMalloc (copy)") ||
        cu_fail(cudaMemsetAsync(cbuf, 1, 2 * half * (size_t)nsets, st), "cudaMemsetAsync") ||
        cu_fail(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal),
                "cudaStreamBeginCapture"))
        goto done;
    for (int i = 0; i < o->batch && ce == cudaSuccess; i++) {
        unsigned char *a = (unsigned char *)cbuf + 2 * half * (size_t)(i % nsets);
        ce = cudaMemcpyAsync(a + half, a, half, cudaMemcpyDeviceToDevice, st);
    }
    cudaError_t ce2 = cudaStreamEndCapture(st, &cgraph);
    if (cu_fail(ce, "cudaMemcpyAsync (captured)") || cu_fail(ce2, "cudaStreamEndCapture") ||
        cu_fail(cudaGraphInstantiate(&cexec, cgraph, 0), "cudaGraphInstantiate"))
        goto done;
    for (int r = -1; r < o->runs; r++) {
        float ms = 0;
        if (cu_fail(cudaEventRecord(e0, st), "cudaEventRecord") ||
            cu_fail(cudaGraphLaunch(cexec, st), "cudaGraphLaunch") ||
            cu_fail(cudaEventRecord(e1, st), "cudaEventRecord") ||
            cu_fail(cudaEventSynchronize(e1), "cudaEventSynchronize") ||
            cu_fail(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime"))
            goto done;
        if (r >= 0) t[r] = ms / o->batch;
    }
    qsort(t, (size_t)o->runs, sizeof *t, cmp_double);
    row->copy_ms = t[o->runs / 2];
    rc = 0;
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (cexec) cudaGraphExecDestroy(cexec);
    if (cgraph) cudaGraphDestroy(cgraph);
    cudaFree(cbuf);
    for (int i = 0; i < MAX_SETS; i++) {
        fv_frame_buffer_destroy(in[i]);
        fv_frame_buffer_destroy(out[i]);
    }
    fv_filter_destroy(f);
    fv_filter_destroy(ff);
    fv_filter_destroy(fc);
    free(t), free(te), free(src), free(got), free(ref), free(cref);
    return rc;
}

static void write_json(const char *path, const char *device, const bench_floors *fl,
                       const filter_row *rows, int n) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "fovea-bench filter: cannot write %s\n", path);
        return;
    }
    fprintf(f,
            "{\n  \"bench\": \"filter\",\n  \"device\": \"%s\",\n  \"dram_gbps\": %.1f,\n  "
            "\"mma_tflops\": %.1f,\n",
            device, fl->dram_gbps, fl->mma_tflops);
    fprintf(f,
            "  \"method\": \"GPU-only fv_filter_apply on device frames rotating past 2x L2: a "
            "batch captured into a CUDA graph, median per frame of its replays between CUDA "
            "events (eager_ms: the batch launched eagerly); DRAM floor = bytes read + written "
            "at the measured device-to-device copy bandwidth; tc_floor_ms = the stencil's FLOPs at "
            "the measured FP16 GEMM rate; copy_ms = device-to-device copies of the same bytes, "
            "timed the same way\",\n  \"rows\": [");
    for (int i = 0; i < n; i++) {
        const filter_row *r = &rows[i];
        fprintf(f,
                "%s\n    {\"size\": \"%s\", \"kind\": \"%s\", \"input\": \"%s\", \"output\": "
                "\"%s\", \"engine\": \"%s\", \"direct_exact\": %d, \"direct_wave_less\": %d, "
                "\"ms\": %.5f, "
                "\"eager_ms\": %.5f, \"dram_floor_ms\": %.5f, \"tc_floor_ms\": %.6f, "
                "\"copy_ms\": %.5f, \"x_floor\": %.3f, \"x_copy\": %.3f, \"mb\": %.3f, "
                "\"max_diff_vs_fused\": %d, \"fused_max_diff_vs_cpu\": %d}",
                i ? "," : "", r->size, r->kind, r->in, r->out, r->engine, r->exact, r->wave_less,
                r->ms, r->eager_ms, r->floor, r->tc_floor, r->copy_ms, r->ms / r->floor,
                r->ms / r->copy_ms, r->mb, r->fused_max, r->cpu_max);
    }
    fprintf(f, "\n  ]\n}\n");
    fclose(f);
}

int bench_cmd_filter(int argc, char **argv) {
    filter_opts o = {.sizes = "1080p,4k",
                     .formats = "gray,rgb,bgr,rgba,yuyv,uyvy,nv12",
                     .kinds = "laplacian,sobel,scharr,prewitt",
                     .outputs = "gray,rgb,bgr,rgba,rgb-color",
                     .engine = "auto",
                     .batch = 50,
                     .runs = 11,
                     .device_pool_mb = 2048};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (!strcmp(a, "--sizes") && v)
            o.sizes = v, i++;
        else if (!strcmp(a, "--formats") && v)
            o.formats = v, i++;
        else if (!strcmp(a, "--kinds") && v)
            o.kinds = v, i++;
        else if (!strcmp(a, "--outputs") && v)
            o.outputs = v, i++;
        else if (!strcmp(a, "--engine") && v)
            o.engine = v, i++;
        else if (!strcmp(a, "--json") && v)
            o.json = v, i++;
        else if (!strcmp(a, "--batch") && v)
            ok = int_opt(v, 1, 100000, &o.batch), i++;
        else if (!strcmp(a, "--runs") && v)
            ok = int_opt(v, 1, 1001, &o.runs), i++;
        else if (!strcmp(a, "--device-pool-mb") && v)
            ok = int_opt(v, 64, 1 << 20, &o.device_pool_mb), i++;
        else
            ok = 0;
        if (!ok) {
            fprintf(stderr, "fovea-bench filter: bad option '%s'%s%s (see --help)\n", a,
                    v ? " " : "", v ? v : "");
            return 2;
        }
    }
    if (strcmp(o.engine, "auto") && strcmp(o.engine, "direct") && strcmp(o.engine, "fused")) {
        fprintf(stderr, "fovea-bench filter: --engine is auto, direct or fused, not '%s'\n",
                o.engine);
        return 2;
    }
    fv_context *gpu = NULL, *cpu = NULL;
    fv_status s =
        fv_context_create(&(fv_context_desc){.backend = FV_BACKEND_CUDA,
                                             .device_pool_bytes = (size_t)o.device_pool_mb << 20,
                                             /* the frame buffers' host views */
                                             .pinned_pool_bytes = (size_t)o.device_pool_mb << 20},
                          &gpu);
    if (s != FV_OK) return fail_st("fv_context_create (CUDA)", s);
    /* the CPU reference's F32 tensors of a 4K frame */
    if ((s = fv_context_create(&(fv_context_desc){.backend = FV_BACKEND_CPU,
                                                  .device_pool_bytes = (size_t)1 << 30,
                                                  .host_pool_bytes = (size_t)1 << 30},
                               &cpu)) != FV_OK) {
        fv_context_destroy(gpu);
        return fail_st("fv_context_create (CPU)", s);
    }
    int dev = 0, l2 = 0;
    struct cudaDeviceProp prop;
    if (cu_fail(cudaGetDevice(&dev), "cudaGetDevice") ||
        cu_fail(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties")) {
        fv_context_destroy(cpu), fv_context_destroy(gpu);
        return 1;
    }
    l2 = prop.l2CacheSize;
    bench_floors fl;
    if (bench_floors_measure(&fl) != 0 || fl.dram_gbps <= 0 || fl.mma_tflops <= 0) {
        fprintf(stderr, "fovea-bench filter: floors: %s\n", fl.why);
        fv_context_destroy(cpu), fv_context_destroy(gpu);
        return 1;
    }
    printf("fovea-bench filter: %s (SM %d.%d, %d SMs, L2 %d MiB); DRAM %.0f GB/s "
           "(device-to-device copy, read + written); tensor cores %.0f TFLOP/s (%d^3 FP16 GEMM)\n",
           prop.name, prop.major, prop.minor, prop.multiProcessorCount, l2 >> 20, fl.dram_gbps,
           fl.mma_tflops, fl.gemm_m);
    printf("GPU-only fv_filter_apply, engine %s; median of %d CUDA-graph replays of %d applies "
           "(eager: the same launched eagerly); checked against "
           "FUSED and the CPU first\nfloor: DRAM floor (the tensor-core floor, TC, is far below it "
           "in every case); copy: a device-to-device copy of the same bytes, timed the same way; "
           "direct*: DIRECT with taller strips (AUTO's timing chose them)\n\n",
           o.engine, o.runs, o.batch);
    printf("%-6s %-10s %-5s %-10s %-7s %5s %9s %9s %9s %8s %9s %7s %6s %5s %4s\n", "size", "kind",
           "in", "out", "engine", "exact", "ms", "eager ms", "floor ms", "TC ms", "copy ms",
           "x floor", "x copy", "d_fu", "d_cpu");
    const int cap = 2 * 7 * 4 * 5;
    filter_row *rows = calloc(cap, sizeof *rows);
    int n = 0, rc = 0;
    double worst[2] = {0, 0}, worst_copy[2] = {0, 0};
    for (size_t si = 0; si < 2 && rows; si++) {
        if (!selected(o.sizes, sizes_all[si].name)) continue;
        const int w = sizes_all[si].value, h = w * 9 / 16;
        for (size_t ki = 0; ki < 4; ki++) {
            if (!selected(o.kinds, kinds_all[ki].name)) continue;
            for (size_t fi = 0; fi < 7; fi++) {
                if (!selected(o.formats, formats_all[fi].name)) continue;
                for (size_t oi = 0; oi < 5; oi++) {
                    if (!selected(o.outputs, outputs_all[oi].name)) continue;
                    const int color = oi == 4;
                    if (color && formats_all[fi].value == FV_PIXEL_GRAY8) continue;
                    filter_row *r = &rows[n];
                    snprintf(r->size, sizeof r->size, "%s", sizes_all[si].name);
                    snprintf(r->kind, sizeof r->kind, "%s", kinds_all[ki].name);
                    snprintf(r->in, sizeof r->in, "%s", formats_all[fi].name);
                    snprintf(r->out, sizeof r->out, "%s", outputs_all[oi].name);
                    if (run_case(gpu, cpu, &o, w, h, (fv_filter_kind)kinds_all[ki].value,
                                 (fv_pixel_format)formats_all[fi].value,
                                 (fv_pixel_format)outputs_all[oi].value, color, &fl, (size_t)l2,
                                 r)) {
                        rc = 1;
                        goto out;
                    }
                    const double x = r->ms / r->floor;
                    if (x > worst[si]) worst[si] = x;
                    if (r->ms / r->copy_ms > worst_copy[si]) worst_copy[si] = r->ms / r->copy_ms;
                    char eng[16];
                    snprintf(eng, sizeof eng, "%s%s", r->engine, r->wave_less ? "*" : "");
                    printf("%-6s %-10s %-5s %-10s %-7s %5d %9.4f %9.4f %9.4f %8.5f %9.4f %7.2f "
                           "%6.2f %5d %4d\n",
                           r->size, r->kind, r->in, r->out, eng, r->exact, r->ms, r->eager_ms,
                           r->floor, r->tc_floor, r->copy_ms, x, r->ms / r->copy_ms, r->fused_max,
                           r->cpu_max);
                    fflush(stdout);
                    n++;
                }
            }
        }
    }
out:
    printf("\n");
    for (size_t si = 0; si < 2; si++)
        if (worst[si] > 0)
            printf("worst ratio to the DRAM floor, %s: %.2f (target <= 2.0); to the same-bytes "
                   "copy: %.2f\n",
                   sizes_all[si].name, worst[si], worst_copy[si]);
    if (o.json && rows) write_json(o.json, prop.name, &fl, rows, n);
    free(rows);
    fv_context_destroy(cpu);
    fv_context_destroy(gpu);
    return rc;
}

#endif
