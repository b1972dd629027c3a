/* fovea-bench: benchmarks of fovea's ops. Each subcommand times one family
 * after a warm-up (median of --iters runs), prints a table and, with
 * --json FILE, writes the results. Subcommands live in the table `cmds`;
 * a GPU bench slots in as one more entry.
 *
 *   fovea-bench cpu-conv [--width 1920] [--height 1080] [--iters 20]
 *                        [--warmup 3] [--json FILE]
 *                        [--input-raw FILE] [--output-raw FILE]
 *
 * cpu-conv times the CPU backend on a 3x3 single-channel F32 conv (zero
 * padding 1, the image filter case) and a 3x3 3->3 F16 Laplacian-like conv.
 * --input-raw reads the single-channel input (height x width float32,
 * native endianness) instead of random values; --output-raw writes its
 * output, so a script can compare with a peer (cpu_vs_opencv.py).
 *
 * conv and conv-tables are the GPU convolution benchmarks (bench_conv*.c,
 * legacy_cudnn.c; conv_vs_pytorch.py adds PyTorch, run_conv_bench.sh runs
 * everything on a GPU machine); conv --sms times the shapes on GPU slices
 * (bench_conv_slice.c).
 *
 * edge is the video-frame edge benchmark (bench_edge.c; edge_vs_peers.py
 * adds PyTorch and OpenCV, run_edge_bench.sh runs it on a GPU machine).
 *
 * net times whole CNNs (bench_net.c; net_vs_pytorch.py adds PyTorch,
 * run_net_bench.sh runs it on a GPU machine), prints their floors
 * (bench_net_floor.c) and, with --sms, times them on GPU slices
 * (bench_slice.c).
 *
 * devices runs the edge pipeline and a net on several GPUs at once, a
 * context and a thread each, against one GPU alone (bench_devices.c;
 * run_devices_bench.sh). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fovea/fovea.h"
#include "fv_cli.h"
#include "bench_conv.h"

/* bench_net.c: whole CNNs (net_vs_pytorch.py, run_net_bench.sh). */
int bench_cmd_net(int argc, char **argv);
/* bench_devices.c: the edge pipeline and a net on several GPUs at once. */
int bench_cmd_devices(int argc, char **argv);

/* bench_edge.c and bench_filter.c, built with the CUDA backend only. */
int bench_cmd_edge(int argc, char **argv);
int bench_cmd_filter(int argc, char **argv);
#if !FV_BUILT_WITH_CUDA
int bench_cmd_filter(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "fovea-bench filter: needs the CUDA backend, and this fovea was built "
                    "without it (CPU only): configure with CUDA and cuDNN available\n");
    return 2;
}
int bench_cmd_edge(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "fovea-bench edge: needs the CUDA backend, and this fovea was built without "
                    "it (CPU only): configure with CUDA and cuDNN available\n");
    return 2;
}
#endif

typedef struct bench_opts {
    int width, height, iters, warmup;
    const char *json, *input_raw, *output_raw;
} bench_opts;

typedef struct bench_result {
    const char *name, *dtype;
    int c, k, r, s;
    double median_ms, min_ms;
} bench_result;

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        fv_status s_ = (expr);                                                                     \
        if (s_ != FV_OK) {                                                                         \
            fprintf(stderr, "fovea-bench: %s: %s: %s\n", #expr, fv_status_name(s_),                \
                    fv_last_error());                                                              \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* ---- helpers ------------------------------------------------------------ */
static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float rand_uniform(float lo, float hi) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    double u = (double)((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
    return (float)(lo + (hi - lo) * u);
}

static int parse_int(const char *opt, const char *v, int lo, int *out) {
    long x;
    if (!v || fv_cli_long(v, lo, 1000000, &x) != 0) {
        fprintf(stderr, "fovea-bench: %s needs an integer >= %d\n", opt, lo);
        return 1;
    }
    *out = (int)x;
    return 0;
}

/* Parses the common options; returns nonzero on a bad one. */
static int parse_opts(int argc, char **argv, bench_opts *o) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--width"))
            bad = parse_int(a, v, 3, &o->width), i++;
        else if (!strcmp(a, "--height"))
            bad = parse_int(a, v, 3, &o->height), i++;
        else if (!strcmp(a, "--iters"))
            bad = parse_int(a, v, 1, &o->iters), i++;
        else if (!strcmp(a, "--warmup"))
            bad = parse_int(a, v, 0, &o->warmup), i++;
        else if (!strcmp(a, "--json") && v)
            o->json = v, i++;
        else if (!strcmp(a, "--input-raw") && v)
            o->input_raw = v, i++;
        else if (!strcmp(a, "--output-raw") && v)
            o->output_raw = v, i++;
        else {
            fprintf(stderr, "fovea-bench: unknown or incomplete option '%s'\n", a);
            return 1;
        }
        if (bad) return 1;
    }
    return 0;
}

static int read_raw(const char *path, float *x, size_t n) {
    char why[160];
    FILE *f = fv_cli_fopen_read(path, why, sizeof why);
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, why);
        return 1;
    }
    size_t got = fread(x, sizeof *x, n, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != n || extra) {
        fprintf(stderr, "fovea-bench: %s must hold exactly %zu float32 values\n", path, n);
        return 1;
    }
    return 0;
}

static int write_raw(const char *path, const float *x, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(x, sizeof *x, n, f) != n || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

/* Times forward: warm-up, then the median and minimum of o->iters runs. */
static int time_conv(fv_context *ctx, fv_conv2d *op, const fv_tensor *in, fv_tensor *out,
                     const bench_opts *o, bench_result *r) {
    double *t = malloc(sizeof *t * (size_t)o->iters);
    if (!t) return 1;
    for (int i = 0; i < o->warmup; i++)
        CHECK(fv_conv2d_forward(op, in, out));
    CHECK(fv_context_synchronize(ctx));
    for (int i = 0; i < o->iters; i++) {
        double t0 = now_ms();
        CHECK(fv_conv2d_forward(op, in, out));
        CHECK(fv_context_synchronize(ctx));
        t[i] = now_ms() - t0;
    }
    qsort(t, (size_t)o->iters, sizeof *t, cmp_double);
    r->median_ms = o->iters % 2 ? t[o->iters / 2] : 0.5 * (t[o->iters / 2 - 1] + t[o->iters / 2]);
    r->min_ms = t[0];
    free(t);
    return 0;
}

/* One conv: random (or given) input, time it, optionally write its output. */
static int run_conv(fv_context *ctx, const bench_opts *o, fv_dtype dt, int c, int k,
                    const float *wts, const float *input, bench_result *r, float *output) {
    fv_conv2d_desc d = {.h = o->height,
                        .w = o->width,
                        .c = c,
                        .k = k,
                        .r = 3,
                        .s = 3,
                        .pad_h = 1,
                        .pad_w = 1,
                        .dtype = dt,
                        .weights = wts};
    fv_conv2d *op = NULL;
    fv_tensor *in = NULL, *out = NULL;
    CHECK(fv_conv2d_create(ctx, &d, &op));
    fv_tensor_desc ti = {.dtype = dt, .h = o->height, .w = o->width, .c = c};
    fv_tensor_desc to = {.dtype = dt, .h = o->height, .w = o->width, .c = k};
    CHECK(fv_tensor_create(ctx, &ti, &in));
    CHECK(fv_tensor_create(ctx, &to, &out));
    size_t n = (size_t)o->height * o->width * c;
    void *host = malloc(n * 4);
    if (!host) return 1;
    if (dt == FV_DTYPE_F16)
        fv_f32_to_f16_n(input, host, n);
    else
        memcpy(host, input, n * 4);
    CHECK(fv_tensor_upload(ctx, in, host, n * (dt == FV_DTYPE_F16 ? 2 : 4)));
    CHECK(fv_context_synchronize(ctx));
    int rc = time_conv(ctx, op, in, out, o, r);
    if (!rc && output && dt == FV_DTYPE_F32) {
        CHECK(fv_tensor_download(ctx, out, output, (size_t)o->height * o->width * k * 4));
        CHECK(fv_context_synchronize(ctx));
    }
    free(host);
    fv_tensor_destroy(in);
    fv_tensor_destroy(out);
    fv_conv2d_destroy(op);
    r->dtype = dt == FV_DTYPE_F16 ? "F16" : "F32";
    r->c = c, r->k = k, r->r = 3, r->s = 3;
    return rc;
}

static void print_table(const char *title, const bench_opts *o, const bench_result *r, int n) {
    printf("%s: %dx%d, median of %d runs after %d warm-up\n", title, o->width, o->height, o->iters,
           o->warmup);
    printf("%-28s %-5s %10s %10s %10s %9s\n", "op", "dtype", "median ms", "min ms", "Mpix/s",
           "GMAC/s");
    for (int i = 0; i < n; i++) {
        double pix = (double)o->width * o->height;
        double macs = pix * r[i].c * r[i].k * r[i].r * r[i].s;
        printf("%-28s %-5s %10.3f %10.3f %10.1f %9.2f\n", r[i].name, r[i].dtype, r[i].median_ms,
               r[i].min_ms, pix / r[i].median_ms * 1e-3, macs / r[i].median_ms * 1e-6);
    }
}

static int write_json(const char *path, const char *bench, const char *device, const bench_opts *o,
                      const float *kernel, int nk, const bench_result *r, int n) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "{\n  \"bench\": \"%s\",\n  \"fovea_version\": \"%s\",\n  \"device\": \"%s\",\n",
            bench, fv_version(), device);
    fprintf(f, "  \"width\": %d,\n  \"height\": %d,\n  \"iters\": %d,\n  \"warmup\": %d,\n",
            o->width, o->height, o->iters, o->warmup);
    fprintf(f, "  \"kernel\": [");
    for (int i = 0; i < nk; i++)
        fprintf(f, "%s%.9g", i ? ", " : "", kernel[i]);
    fprintf(f, "],\n  \"results\": [\n");
    for (int i = 0; i < n; i++)
        fprintf(f,
                "    {\"name\": \"%s\", \"dtype\": \"%s\", \"c\": %d, \"k\": %d, \"r\": %d, "
                "\"s\": %d, \"median_ms\": %.6f, \"min_ms\": %.6f}%s\n",
                r[i].name, r[i].dtype, r[i].c, r[i].k, r[i].r, r[i].s, r[i].median_ms, r[i].min_ms,
                i + 1 < n ? "," : "");
    fprintf(f, "  ]\n}\n");
    return fclose(f) != 0;
}

/* ---- subcommands --------------------------------------------------------- */
static int cmd_cpu_conv(int argc, char **argv) {
    bench_opts o = {.width = 1920, .height = 1080, .iters = 20, .warmup = 3};
    if (parse_opts(argc, argv, &o)) return 2;
    fv_context_desc cd = {.backend = FV_BACKEND_CPU};
    fv_context *ctx = NULL;
    CHECK(fv_context_create(&cd, &ctx));
    fv_context_info info;
    CHECK(fv_context_info_get(ctx, &info));

    size_t pix = (size_t)o.width * o.height;
    float *in = malloc(pix * 3 * sizeof *in), *out = malloc(pix * sizeof *out);
    if (!in || !out) return 1;
    for (size_t i = 0; i < pix * 3; i++)
        in[i] = rand_uniform(0.0f, 1.0f);
    if (o.input_raw && read_raw(o.input_raw, in, pix)) return 1;
    /* a fixed, asymmetric kernel, so a transposed or flipped peer shows up */
    const float k1[9] = {0.0625f, 0.125f, 0.0625f, 0.25f, -1.5f, 0.125f, 0.0625f, 0.5f, 0.3125f};
    float lap[81] = {0}; /* K x C x 3 x 3: a Laplacian per colour, a little crosstalk */
    const float l3[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < 9; i++)
                lap[(k * 3 + c) * 9 + i] = l3[i] * (k == c ? 1.0f : 0.125f);

    bench_result res[2] = {{.name = "conv3x3 C1->K1 pad1"},
                           {.name = "conv3x3 C3->K3 pad1 laplace"}};
    int rc = run_conv(ctx, &o, FV_DTYPE_F32, 1, 1, k1, in, &res[0], out);
    if (!rc) rc = run_conv(ctx, &o, FV_DTYPE_F16, 3, 3, lap, in, &res[1], NULL);
    if (!rc) {
        char title[200];
        snprintf(title, sizeof title, "fovea-bench cpu-conv (CPU backend, 1 thread, %s)",
                 info.device_name);
        print_table(title, &o, res, 2);
        if (o.output_raw) rc = write_raw(o.output_raw, out, pix);
        if (!rc && o.json) rc = write_json(o.json, "cpu-conv", info.device_name, &o, k1, 9, res, 2);
    }
    free(in);
    free(out);
    fv_context_destroy(ctx);
    return rc;
}

typedef struct bench_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} bench_cmd;

static const bench_cmd cmds[] = {
    {"cpu-conv", cmd_cpu_conv,
     "CPU backend: 3x3 C1->K1 F32 and 3x3 C3->K3 F16 conv on a frame\n"
     "      [--width 1920] [--height 1080] [--iters 20] [--warmup 3] [--json FILE]\n"
     "      [--input-raw FILE] [--output-raw FILE] (H x W float32, the C1 conv's input/output)"},
    {"conv", bench_cmd_conv,
     "GPU: the 15 best-practices convolutions (calibration/best_practices.h), FP16 NHWC:\n"
     "      fovea heuristic, autotuned, autotuned on cuDNN engines only, autotuned + bias +\n"
     "      ReLU, legacy cuDNN best of Find;\n"
     "      outputs checked against an FP32 reference before timing\n"
     "      [--iters 100] [--warmup 10] [--shapes all|i,j,..] [--batch N] [--json FILE]\n"
     "      (--shapes also takes shapes of your own, HxWxC-K-RxS-sSTRIDE-pPAD:\n"
     "      224x224x3-64-7x7-s2-p3 is ResNet's stem)\n"
     "      [--cache flush|rotate] [--workspace-mb 1024] [--tol 2e-3]\n"
     "      [--profile PATH [--profile-only] [--profile-repeats N]] (write PATH, then create\n"
     "      each op from it N times (5), timing its first and 100th forward; medians)\n"
     "      [--sms 8,16] (then the autotuned op made on CUDA green contexts of that many SMs,\n"
     "      beside the full GPU, with Orin estimates; JSON: slices)\n"
     "      [--sms-tune autotune|heuristic] (how the slices' ops choose their engine: autotuned\n"
     "      on the slice (the default; minutes a shape) or by heuristics, as without a profile)\n"
     "      [--candidates] (autotune's median time for each candidate engine, on stderr)"},
    {"conv-tables", bench_cmd_conv_tables,
     "GPU: FP32 NCHW vs NHWC, every legacy algorithm (128x128x128->128 3x3, 11x11),\n"
     "      channel padding 3 vs 8, channel folding 2048x2048x8 vs 1024x1024x32; every\n"
     "      time over its floor (DRAM, and FP32, TF32 or FP16 tensor-core peaks measured first)\n"
     "      [--iters 50] [--warmup 10] [--shapes 0,1,2,8,12,13 (table 1)] [--batch N]\n"
     "      [--json FILE] [--cache flush|rotate] [--workspace-mb 1024]"},
    {"edge", bench_cmd_edge,
     "GPU: the Laplacian edge filter on 1080p/4K RGB24 and YUYV frames from pinned memory:\n"
     "      fv_pipeline end to end (3 slots; 2, 4 and CUDA graphs as variants), the copy\n"
     "      floor (H2D || D2H), GPU-only fv_filter_apply (engines AUTO, CONV, FUSED, DIRECT;\n"
     "      each over the DRAM floor from a measured D2D copy bandwidth), zero\n"
     "      allocations over --alloc-frames 1080p frames (exit 1 on FAIL); outputs checked\n"
     "      on a photo against the CPU backend first (exit 1 on mismatch)\n"
     "      [--frames 2000] [--runs 5] [--warmup 200] [--variant-frames 1000]\n"
     "      [--variant-runs 3 (0: none)] [--alloc-frames 10000] [--gpu-batch 100]\n"
     "      [--gpu-runs 11] [--copy-reps 50] [--sizes 1080p,4k] [--formats rgb,yuyv]\n"
     "      [--image data/astronaut.png] [--device-pool-mb 3072] [--json FILE] [--dump DIR]\n"
     "      [--sms 8,16] (also on CUDA green contexts of that many SMs, with Orin estimates)"},
    {"filter", bench_cmd_filter,
     "GPU: fv_filter_apply on device frames against its DRAM floor (bytes read + written\n"
     "      at a measured device-to-device copy bandwidth), timed as CUDA-graph replays of\n"
     "      a batch (and eagerly, beside it), every kind x input format x\n"
     "      output at 1080p and 4K; each case checked first (AUTO's engine against FUSED,\n"
     "      byte for byte where direct_exact; FUSED against the CPU backend; exit 1 on a\n"
     "      mismatch); prints the worst ratio per size\n"
     "      [--sizes 1080p,4k] [--formats gray,rgb,bgr,rgba,yuyv,uyvy,nv12]\n"
     "      [--kinds laplacian,sobel,scharr,prewitt] [--outputs gray,rgb,bgr,rgba,rgb-color]\n"
     "      [--engine auto|direct|fused] [--batch 50] [--runs 11] [--device-pool-mb 2048]\n"
     "      [--json FILE]"},
    {"net", bench_cmd_net,
     "a whole CNN through fv_net (apps/common/net_models.c), weights from net_models.py:\n"
     "      output checked against PyTorch FP32 (--io) first (exit 1 above --tol), then\n"
     "      fv_net_forward timed as a CUDA-graph replay and eager (CUDA events, medians)\n"
     "      --model resnet18|mobilenet_v2|unet --weights FILE.fvw [--io FILE.io.fvw]\n"
     "      [--batch 1] [--size 224] [--iters 200] [--warmup 20] [--autotune]\n"
     "      [--profile PATH (read, then written back with this run's choices)] [--layers RUNS\n"
     "      (per-layer table, fv_net_profile)] [--tol 1e-2 (CPU 1e-4)] [--backend cuda|cpu]\n"
     "      [--device-pool-mb 2048] [--workspace-mb 0 (default)] [--json FILE]\n"
     "      [--cold (the graph net's create, first and 100th inference, wall clock)]\n"
     "      [--no-concat-views (concats copy their inputs: FV_NET_NO_CONCAT_VIEWS)]\n"
     "      then the floors (GPU, measured in the run): DRAM fused = weights + inputs +\n"
     "      outputs once, DRAM by layer = weights + each layer's inputs and output once\n"
     "      (a scale, not a floor), TC = 2 x MACs at the FP16 GEMM peak; graph ms over\n"
     "      max(DRAM fused, TC), and which bounds (JSON: dram_floor_ms, tc_floor_ms, ...)\n"
     "      [--sms 8,16] (the graph net also on CUDA green contexts of that many SMs, a net\n"
     "      made on each, with Orin estimates; JSON: slices)"},
    {"devices", bench_cmd_devices,
     "the same work on several GPUs at once, a context and a thread a device, against\n"
     "      the first device alone in the same run (per-device rate over the lone rate;\n"
     "      goal >= 0.9); every context's last output compared byte for byte with the lone\n"
     "      run's (exit 1 when one differs or a call fails). Works: edge (fv_pipeline, RGB24\n"
     "      -> Laplacian -> GRAY8, 3 slots, CUDA graphs), copy (the same pipeline's uploads\n"
     "      and downloads with no GPU work between: what the host's copies scale to; its\n"
     "      output is not compared), net (CUDA-graph replays)\n"
     "      [--devices all|0,1,... (all: every CUDA device; an index may repeat: contexts\n"
     "      sharing a GPU)] [--work edge,copy,net (any of them, in a list)] [--width 1920]\n"
     "      [--height 1080] [--frames 3000]\n"
     "      [--iters 2000] [--warmup 200] [--model resnet18|mobilenet_v2|unet]\n"
     "      [--weights FILE.fvw (net: required)] [--io FILE.io.fvw (checked once a context)]\n"
     "      [--batch 1] [--size 224] [--backend cuda|cpu (cpu: device 0, a smoke test)]\n"
     "      [--json FILE]"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: fovea-bench <command> [options]\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %s\n      %s\n", cmds[i].name, cmds[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(argv[1], cmds[i].name) != 0) continue;
        if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
            printf("usage: fovea-bench %s [options]\n      %s\n", cmds[i].name, cmds[i].help);
            return 0;
        }
        return cmds[i].fn(argc - 2, argv + 2);
    }
    fprintf(stderr, "fovea-bench: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
