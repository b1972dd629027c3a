/* fovea-bench net: one whole CNN (apps/common/net_models.c: resnet18,
 * mobilenet_v2, unet) built through fv_net from a weights file that
 * net_models.py wrote, its output checked against PyTorch's FP32 reference
 * (an io file from net_models.py) before anything is timed, then
 * fv_net_forward timed as a CUDA-graph replay (FV_NET_CUDA_GRAPH) and as
 * eager launches: CUDA events around each call on the context's stream,
 * after warm-up, median of --iters. Optionally the per-layer table of
 * fv_net_profile. net_vs_pytorch.py runs it beside PyTorch.
 *
 * After the timing table, the net's physical floors on this GPU and the
 * graph replay's time over them (bench_net_floor.h). With --sms 8,16, the
 * graph net again on CUDA green-context slices of that many SMs, with the
 * Orin estimates of bench_slice.c.
 *
 * On the CPU backend (--backend cpu) the same runs, timed by the wall clock
 * (no graph there: both variants run the same way); no floors, no slices. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fovea/fovea.h"
#include "fovea/net.h"
#include "fv_cli.h"
#include "net_models.h"
#include "bench_net_floor.h"
#include "bench_slice.h"
#if FV_BUILT_WITH_CUDA
#include "fovea/fovea_cuda.h"
#endif

int bench_cmd_net(int argc, char **argv);

typedef struct bn_opts {
    const char *model, *weights, *io, *json, *profile;
    const char *sms; /* --sms 8,16: green-context slices; NULL none */
    int batch, size, iters, warmup, autotune, layer_runs;
    int cold;   /* --cold: time the first and the 100th inference of the graph net */
    int copies; /* --no-concat-views: every concat copies its inputs (FV_NET_NO_CONCAT_VIEWS) */
    fv_backend backend;
    double tol;
    long pool_mb, workspace_mb;
} bn_opts;

typedef struct bn_timing {
    double median_ms, min_ms, mean_ms, p90_ms;
    int iters;
} bn_timing;

/* One way of running the net: eager launches or a CUDA graph. */
typedef struct bn_variant {
    const char *name;
    uint32_t flags;
    fv_net *net;
    double create_ms;
    int checked, ok;
    fv_models_check check;
    bn_timing t;
    fv_net_info info;
    double first_ms, hundredth_ms; /* --cold: wall-clock, launch to results */
} bn_variant;

/* --sms: the graph net on green-context slices (run_slices). */
typedef struct bn_slices {
    int n; /* slices asked */
    int want[BENCH_MAX_SLICES], got[BENCH_MAX_SLICES];
    double ms[BENCH_MAX_SLICES];        /* a graph net made on the slice; NAN: not timed */
    double replay_ms[BENCH_MAX_SLICES]; /* the full GPU's graph on the slice's stream */
    char why[BENCH_MAX_SLICES][200];    /* why a slice was not timed */
    double full_ms, mhz, bytes;
    int full_sms;
    bench_orin_estimate orin[BENCH_ORINS];
    char skipped[200]; /* why none ran; "" when they did */
} bn_slices;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* ms since this process started (its exec): /proc/self/stat's start time
 * (clock ticks since boot, field 22) against CLOCK_BOOTTIME, in the ticks'
 * steps (10 ms at USER_HZ 100); -1 where /proc cannot tell. */
static double process_age_ms(void) {
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f) return -1;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the name may hold spaces */
    long hz = sysconf(_SC_CLK_TCK);
    if (!p || hz <= 0) return -1;
    unsigned long long start = 0;
    int field = 2, found = 0;
    for (char *save = NULL, *t = strtok_r(p + 1, " ", &save); t; t = strtok_r(NULL, " ", &save))
        if (++field == 22) {
            start = strtoull(t, NULL, 10), found = 1;
            break;
        }
    struct timespec ts;
    if (!found || clock_gettime(CLOCK_BOOTTIME, &ts) != 0) return -1;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6 - (double)start * 1e3 / (double)hz;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void summarize(double *t, int n, bn_timing *out) {
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += t[i];
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    out->median_ms = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    out->min_ms = t[0];
    out->mean_ms = sum / n;
    out->p90_ms = t[(int)(0.9 * (n - 1))];
    out->iters = n;
}

static int fail_fv(const char *what, fv_status s) {
    fprintf(stderr, "fovea-bench net: %s: %s: %s\n", what, fv_status_name(s), fv_last_error());
    return 1;
}

/* Times fv_net_forward: warm-up, then each call between two CUDA events on
 * the context's stream (the wall clock around call + synchronize on CPU). */
static int time_forward(fv_context *ctx, fv_net *net, const bn_opts *o, bn_timing *out) {
    double *t = malloc(sizeof *t * (size_t)o->iters);
    if (!t) return 1;
    int rc = 1;
    fv_status s = FV_OK;
    for (int i = 0; i < o->warmup && s == FV_OK; i++)
        s = fv_net_forward(net);
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    if (s != FV_OK) {
        fail_fv("warm-up", s);
        goto done;
    }
    if (o->backend == FV_BACKEND_CPU) {
        for (int i = 0; i < o->iters; i++) {
            double t0 = now_ms();
            if ((s = fv_net_forward(net)) != FV_OK || (s = fv_context_synchronize(ctx)) != FV_OK) {
                fail_fv("fv_net_forward", s);
                goto done;
            }
            t[i] = now_ms() - t0;
        }
    } else {
#if FV_BUILT_WITH_CUDA
        cudaStream_t st;
        if ((s = fv_context_cuda_stream(ctx, &st)) != FV_OK) {
            fail_fv("fv_context_cuda_stream", s);
            goto done;
        }
        int nev = 2 * o->iters, made = 0;
        cudaEvent_t *ev = calloc((size_t)nev, sizeof *ev);
        cudaError_t e = ev ? cudaSuccess : cudaErrorMemoryAllocation;
        for (; made < nev && e == cudaSuccess; made++)
            e = cudaEventCreate(&ev[made]);
        for (int i = 0; i < o->iters && e == cudaSuccess && s == FV_OK; i++) {
            e = cudaEventRecord(ev[2 * i], st);
            if (e == cudaSuccess) s = fv_net_forward(net);
            if (e == cudaSuccess && s == FV_OK) e = cudaEventRecord(ev[2 * i + 1], st);
        }
        if (e == cudaSuccess && s == FV_OK) e = cudaStreamSynchronize(st);
        for (int i = 0; i < o->iters && e == cudaSuccess && s == FV_OK; i++) {
            float ms = 0;
            e = cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
            t[i] = ms;
        }
        for (int i = 0; ev && i < made; i++)
            if (ev[i]) cudaEventDestroy(ev[i]);
        free(ev);
        if (s != FV_OK) {
            fail_fv("fv_net_forward", s);
            goto done;
        }
        if (e != cudaSuccess) {
            fprintf(stderr, "fovea-bench net: CUDA events: %s\n", cudaGetErrorString(e));
            goto done;
        }
#else
        goto done;
#endif
    }
    summarize(t, o->iters, out);
    rc = 0;
done:
    free(t);
    return rc;
}

/* ---- per-layer table ------------------------------------------------------------ */
typedef struct bn_layers {
    int n;
    float *ms, total;
    fv_net_layer_info *li;
} bn_layers;

static int profile_layers(fv_net *net, const fv_net_info *info, int runs, bn_layers *L) {
    L->n = info->layers;
    L->ms = calloc((size_t)L->n, sizeof *L->ms);
    L->li = calloc((size_t)L->n, sizeof *L->li);
    if (!L->ms || !L->li) return 1;
    for (int i = 0; i < L->n; i++) {
        fv_status s = fv_net_layer_info_get(net, i, &L->li[i]);
        if (s != FV_OK) return fail_fv("fv_net_layer_info_get", s);
    }
    fv_status s = fv_net_profile(net, runs, L->ms, L->n, &L->total);
    return s != FV_OK ? fail_fv("fv_net_profile", s) : 0;
}

static void print_layers(const bn_layers *L, int runs) {
    double sum = 0;
    for (int i = 0; i < L->n; i++)
        sum += L->ms[i];
    printf("\nper layer (fv_net_profile, events between layers, median of %d runs):\n", runs);
    printf("%3s %-26s %-10s %-12s %-8s %-30s %-18s %8s %6s\n", "#", "layer", "op", "fused", "path",
           "engine", "output NxCxHxW", "ms", "%");
    for (int i = 0; i < L->n; i++) {
        const fv_net_layer_info *l = &L->li[i];
        char shape[48];
        snprintf(shape, sizeof shape, "%dx%dx%dx%d", l->n, l->c, l->h, l->w);
        printf("%3d %-26.26s %-10.10s %-12.12s %-8.8s %-30.30s %-18s %8.4f %6.1f\n", i, l->name,
               l->op, l->fused, l->path, l->engine, shape, L->ms[i],
               sum > 0 ? 100.0 * L->ms[i] / sum : 0.0);
    }
    printf("sum of layers %.4f ms; the whole forward as fv_net_forward runs it %.4f ms\n", sum,
           L->total);
}

/* ---- JSON -------------------------------------------------------------------------- */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fprintf(f, "null");
}

/* The floors (bench_net_floor.h): the net's bytes and FLOPs always; the
 * GPU's rates, ms and ratio null when not measured. */
static void json_floors(FILE *f, const bn_floor *fl) {
    const double nan = NAN;
    fprintf(f, ",\n  \"flop\": %.9g, \"dram_fused_bytes\": %.0f, \"dram_layer_bytes\": %.0f",
            fl->flop, fl->fused_bytes, fl->layer_bytes);
    fprintf(f, ",\n  \"dram_floor_ms\": ");
    json_num(f, fl->measured ? fl->dram_ms : nan);
    fprintf(f, ", \"dram_layer_floor_ms\": ");
    json_num(f, fl->measured ? fl->layer_ms : nan);
    fprintf(f, ", \"tc_floor_ms\": ");
    json_num(f, fl->measured ? fl->tc_ms : nan);
    fprintf(f, ", \"floor_ms\": ");
    json_num(f, fl->measured ? fl->floor_ms : nan);
    fprintf(f, ", \"floor_ratio\": ");
    json_num(f, fl->measured ? fl->ratio : nan);
    fprintf(f, ", \"floor_bound\": ");
    if (fl->measured)
        json_str(f, fl->bound);
    else
        fprintf(f, "null");
    fprintf(f,
            ",\n  \"floors\": {\"measured\": %s, \"dram_gbps\": ", fl->measured ? "true" : "false");
    json_num(f, fl->measured ? fl->dram_gbps : nan);
    fprintf(f, ", \"tc_tflops\": ");
    json_num(f, fl->measured ? fl->tc_tflops : nan);
    fprintf(f, ", \"gemm\": %d, \"why\": ", fl->measured ? fl->gemm : 0);
    if (fl->measured)
        fprintf(f, "null");
    else
        json_str(f, fl->why);
    fprintf(f, "}");
}

/* --sms: each slice's time, the full GPU's graph on its stream, the Orin estimates. */
static void json_slices(FILE *f, const bn_slices *S) {
    fprintf(f, ",\n  \"slices\": {\"skipped\": ");
    if (S->skipped[0]) {
        json_str(f, S->skipped);
        fprintf(f, "}");
        return;
    }
    fprintf(f, "null, \"full_sms\": %d, \"mhz\": %.0f, \"bytes\": %.0f, \"full_ms\": ", S->full_sms,
            S->mhz, S->bytes);
    json_num(f, S->full_ms);
    fprintf(f, ",\n    \"sms\": [");
    for (int i = 0; i < S->n; i++) {
        fprintf(f, "%s\n      {\"asked\": %d, \"given\": %d, \"ms\": ", i ? "," : "", S->want[i],
                S->got[i]);
        json_num(f, S->ms[i]);
        fprintf(f, ", \"full_graph_on_slice_ms\": ");
        json_num(f, S->replay_ms[i]);
        fprintf(f, ", \"why\": ");
        if (isfinite(S->ms[i]))
            fprintf(f, "null");
        else
            json_str(f, S->why[i]);
        fprintf(f, "}");
    }
    fprintf(f, "],\n    \"orin\": ");
    bench_orin_json(f, S->orin);
    fprintf(f, "}");
}

static int write_json(const bn_opts *o, const fv_context_info *ci, const fv_models_net *mi,
                      const bn_variant *v, int nv, const bn_layers *L, const char *profile_note,
                      const bn_floor *fl, const bn_slices *S) {
    FILE *f = fopen(o->json, "w");
    if (!f) {
        perror(o->json);
        return 1;
    }
    fprintf(f, "{\n  \"bench\": \"net\",\n  \"fovea_version\": ");
    json_str(f, fv_version());
    fprintf(f, ",\n  \"backend\": ");
    json_str(f, ci->backend_name);
    fprintf(f, ",\n  \"device\": ");
    json_str(f, ci->device_name);
    fprintf(f, ",\n  \"cudnn_loaded\": %d,\n  \"model\": ", ci->cudnn_loaded);
    json_str(f, o->model);
    fprintf(f,
            ",\n  \"batch\": %d,\n  \"size\": %d,\n  \"classes\": %d,\n  \"unet_width\": %d,\n"
            "  \"builder_layers\": %d,\n  \"gmacs\": %.6f,\n  \"iters\": %d,\n  \"warmup\": %d,\n"
            "  \"autotune\": %d,\n  \"tol\": %g,\n  \"profile\": ",
            o->batch, o->size, mi->classes, mi->width, mi->layers, mi->gmacs, o->iters, o->warmup,
            o->autotune, o->tol);
    if (o->profile)
        json_str(f, o->profile);
    else
        fprintf(f, "null");
    fprintf(f, ",\n  \"profile_note\": ");
    json_str(f, profile_note);
    fprintf(f, ",\n  \"variants\": {\n");
    for (int i = 0; i < nv; i++) {
        const bn_variant *x = &v[i];
        fprintf(f,
                "    \"%s\": {\"ok\": %s, \"checked\": %s, \"create_ms\": %.3f, \"first_ms\": "
                "%.4f, \"hundredth_ms\": %.4f, \"rel_l2\": ",
                x->name, x->ok ? "true" : "false", x->checked ? "true" : "false", x->create_ms,
                x->first_ms, x->hundredth_ms);
        json_num(f, x->checked ? x->check.rel_l2 : NAN);
        fprintf(f, ", \"max_abs_err\": ");
        json_num(f, x->checked ? x->check.max_abs_err : NAN);
        fprintf(f, ", \"max_abs\": ");
        json_num(f, x->checked ? x->check.max_abs : NAN);
        fprintf(f,
                ",\n      \"median_ms\": %.6f, \"min_ms\": %.6f, \"mean_ms\": %.6f, \"p90_ms\": "
                "%.6f, \"iters\": %d,\n",
                x->t.median_ms, x->t.min_ms, x->t.mean_ms, x->t.p90_ms, x->t.iters);
        const fv_net_info *n = &x->info;
        fprintf(f,
                "      \"layers\": %d, \"convolutions\": %d, \"arena_bytes\": %zu, "
                "\"arena_lower_bound\": %zu, \"weight_bytes\": %zu, \"io_bytes\": %zu, "
                "\"workspace_bytes\": %zu, \"cuda_graph\": %d, \"fused_bn\": %d, \"fused_act\": "
                "%d, \"inplace\": %d, \"concat_elided\": %d}%s\n",
                n->layers, n->convolutions, n->arena_bytes, n->arena_lower_bound, n->weight_bytes,
                n->io_bytes, n->workspace_bytes, n->cuda_graph, n->fused_bn, n->fused_act,
                n->inplace, n->concat_elided, i + 1 < nv ? "," : "");
    }
    fprintf(f, "  }");
    json_floors(f, fl);
    if (S) json_slices(f, S);
    if (L && L->n) {
        fprintf(f, ",\n  \"layer_profile\": {\"total_ms\": %.6f, \"layers\": [\n", L->total);
        for (int i = 0; i < L->n; i++) {
            const fv_net_layer_info *l = &L->li[i];
            fprintf(f, "    {\"name\": ");
            json_str(f, l->name);
            fprintf(f, ", \"op\": ");
            json_str(f, l->op);
            fprintf(f, ", \"fused\": ");
            json_str(f, l->fused);
            fprintf(f, ", \"path\": ");
            json_str(f, l->path);
            fprintf(f, ", \"engine\": ");
            json_str(f, l->engine);
            fprintf(f, ", \"n\": %d, \"c\": %d, \"h\": %d, \"w\": %d, \"ms\": %.6f}%s\n", l->n,
                    l->c, l->h, l->w, L->ms[i], i + 1 < L->n ? "," : "");
        }
        fprintf(f, "  ]}");
    }
    fprintf(f, "\n}\n");
    return fclose(f) != 0;
}

/* ---- options ------------------------------------------------------------------------ */
static int parse(int argc, char **argv, bn_opts *o) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x = 0;
        double d = 0;
        int takes = 1, bad = 0;
        if (!strcmp(a, "--model") && v)
            o->model = v;
        else if (!strcmp(a, "--weights") && v)
            o->weights = v;
        else if (!strcmp(a, "--io") && v)
            o->io = v;
        else if (!strcmp(a, "--json") && v)
            o->json = v;
        else if (!strcmp(a, "--profile") && v)
            o->profile = v;
        else if (!strcmp(a, "--sms") && v)
            o->sms = v;
        else if (!strcmp(a, "--batch") && v)
            bad = fv_cli_long(v, 1, 4096, &x), o->batch = (int)x;
        else if (!strcmp(a, "--size") && v)
            bad = fv_cli_long(v, 8, 4096, &x), o->size = (int)x;
        else if (!strcmp(a, "--iters") && v)
            bad = fv_cli_long(v, 1, 1000000, &x), o->iters = (int)x;
        else if (!strcmp(a, "--warmup") && v)
            bad = fv_cli_long(v, 0, 1000000, &x), o->warmup = (int)x;
        else if (!strcmp(a, "--layers") && v)
            bad = fv_cli_long(v, 0, 100000, &x), o->layer_runs = (int)x;
        else if (!strcmp(a, "--tol") && v)
            bad = fv_cli_double(v, 0, 1e9, &d), o->tol = d;
        else if (!strcmp(a, "--device-pool-mb") && v)
            bad = fv_cli_long(v, 16, 1 << 20, &o->pool_mb);
        else if (!strcmp(a, "--workspace-mb") && v)
            bad = fv_cli_long(v, 0, 1 << 20, &o->workspace_mb);
        else if (!strcmp(a, "--backend") && v)
            bad = fv_cli_backend(v, &o->backend) || o->backend == FV_BACKEND_AUTO;
        else if (!strcmp(a, "--autotune"))
            o->autotune = 1, takes = 0;
        else if (!strcmp(a, "--cold"))
            o->cold = 1, takes = 0;
        else if (!strcmp(a, "--no-concat-views"))
            o->copies = 1, takes = 0;
        else {
            fprintf(stderr, "fovea-bench net: unknown or incomplete option '%s'\n", a);
            return 1;
        }
        if (bad) {
            fprintf(stderr, "fovea-bench net: %s %s: out of range or not a number\n", a, v);
            return 1;
        }
        i += takes;
    }
    if (!o->model || !o->weights) {
        fprintf(stderr, "fovea-bench net: --model and --weights are required\n");
        return 1;
    }
#if FV_BUILT_WITH_CUDA
    int want[BENCH_MAX_SLICES];
    if (o->sms && bench_slice_list("net", o->sms, want, BENCH_MAX_SLICES) < 0) return 1;
#endif
    return 0;
}

/* Creates variant x's net and checks it against io (when given). */
/* --cold: the SDK's INFO messages (each op's engine, the net's set-up times). */
static void log_stderr(fv_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    fprintf(stderr, "  fovea: %s\n", msg);
}

/* One inference, launch to results on the host (wall clock). */
static fv_status one_inference(fv_context *ctx, fv_net *net, double *ms) {
    double t0 = now_ms();
    fv_status s = fv_net_forward(net);
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    *ms = now_ms() - t0;
    return s;
}

/* Creates variant x's net (autotuning when tune: the first variant only; the
 * second takes the choices from the context's profile) and checks it
 * against io (when given). cold: the first and the 100th inference timed
 * before anything else runs on the net. pre: a builder made already (taken
 * over; its time pre_ms), or NULL. */
static int make_variant(fv_context *ctx, fv_models_arch arch, const fv_models_file *w,
                        const fv_models_file *io, const bn_opts *o, bn_variant *x,
                        fv_models_net *mi, int tune, int cold, fv_net_builder *pre, double pre_ms) {
    fv_net_desc nd = {.flags = x->flags | (tune ? FV_NET_AUTOTUNE : 0) |
                               (o->copies ? FV_NET_NO_CONCAT_VIEWS : 0)};
    /* the builder (the app's part: the weights copied in) and the net's
     * create timed apart */
    double t0 = now_ms() - (pre ? pre_ms : 0), built_ms = pre_ms;
    fv_net_builder *b = pre;
    fv_status s = FV_OK;
    if (!b) {
        s = fv_net_builder_create(&b);
        if (s == FV_OK) s = fv_models_build(b, arch, w, o->batch, o->size, o->size, mi);
        built_ms = now_ms() - t0;
    }
    if (s == FV_OK) s = fv_net_create(ctx, b, &nd, &x->net);
    fv_net_builder_destroy(b);
    x->create_ms = now_ms() - t0;
    if (s != FV_OK) {
        fprintf(stderr, "fovea-bench net: %s: %s\n", x->name, fv_last_error());
        return 1;
    }
    if (cold)
        printf("%s: builder made in %.1f ms, fv_net_create %.1f ms\n", x->name, built_ms,
               x->create_ms - built_ms);
    if (cold) {
        double ms[100], age = -1;
        for (int i = 0; i < 100 && s == FV_OK; i++) {
            s = one_inference(ctx, x->net, &ms[i]);
            if (i == 0) age = process_age_ms();
        }
        if (s != FV_OK) return fail_fv("fv_net_forward", s);
        if (age >= 0)
            printf("cold start (%s): first inference done %.0f ms after the process started "
                   "(its exec; libraries, weights file and context included; 10 ms steps)\n",
                   x->name, age);
        x->first_ms = ms[0], x->hundredth_ms = ms[99];
        printf("cold start (%s): net created in %.1f ms, first inference %.3f ms, 100th %.3f ms "
               "(first / 100th %.2f; 2nd to 5th %.3f %.3f %.3f %.3f); created + first inference "
               "%.1f ms\n",
               x->name, x->create_ms, x->first_ms, x->hundredth_ms, x->first_ms / x->hundredth_ms,
               ms[1], ms[2], ms[3], ms[4], x->create_ms + x->first_ms);
    }
    if ((s = fv_net_info_get(x->net, &x->info)) != FV_OK) return fail_fv("fv_net_info_get", s);
    if (!io) {
        x->ok = 1;
        return 0;
    }
    if ((s = fv_models_check_io(x->net, io, &x->check)) != FV_OK) {
        fprintf(stderr, "fovea-bench net: %s: check: %s\n", x->name, fv_last_error());
        return 1;
    }
    x->checked = 1;
    x->ok = x->check.rel_l2 <= o->tol;
    printf("%-6s created in %.1f ms: %d layers (%d as built), graph %d; vs PyTorch FP32: rel L2 "
           "%.3g, max |err| %.3g, |y| max %.3g: %s\n",
           x->name, x->create_ms, x->info.layers, mi->layers, x->info.cuda_graph, x->check.rel_l2,
           x->check.max_abs_err, x->check.max_abs, x->ok ? "ok" : "FAIL (not timed)");
    return 0;
}

/* ---- GPU slices (--sms) ------------------------------------------------------------ */
#if FV_BUILT_WITH_CUDA
/* The graph net on each slice, beside full (the graph variant timed on the
 * whole GPU); bytes: the fused DRAM floor's, for the Orin estimates.
 *
 * Which SMs a graph replay uses: fv_net_forward launches the net's graph on
 * the context's current stream (fv__cuda_graph_launch: cudaGraphLaunch on
 * fv__cuda_stream), so after fv_context_cuda_set_stream it is queued on the
 * slice's stream. But a graph's nodes keep the context they were captured
 * in (a kernel node's CUDA_KERNEL_NODE_PARAMS.ctx, "the context for the
 * kernel task to run in"), and the full GPU's graph was captured on the
 * primary context's stream: launched on the slice's stream, its kernels
 * are ordered there yet belong to the primary context, free to use every
 * SM. So each slice gets a graph net of its own, created (warmed up,
 * captured) after the stream is set, with the green context current: its
 * nodes are the slice's. The full GPU's graph is then replayed on the
 * slice's stream too and printed beside it, a check of that reading (if
 * it ran on the slice, it would take the slice's time, not the full
 * GPU's). */
static void run_slices(fv_context *ctx, fv_models_arch arch, const fv_models_file *w,
                       const fv_models_file *io, const bn_opts *o, const fv_context_info *ci,
                       bn_variant *full, double bytes, bn_slices *S) {
    S->n = bench_slice_list("net", o->sms, S->want, BENCH_MAX_SLICES); /* checked by parse */
    S->mhz = bench_slice_mhz(ci->device_index);
    S->full_sms = ci->multiprocessors;
    S->full_ms = full->ok ? full->t.median_ms : NAN;
    S->bytes = bytes;
    printf("\nGPU slices (CUDA green contexts): %s batch %d %dx%d, a graph net made on each "
           "slice, its replay timed (CUDA events, median of %d after %d warm-up)\n",
           o->model, o->batch, o->size, o->size, o->iters, o->warmup);
    printf("  full GPU (%d SMs, %.0f MHz): %.4f ms\n", S->full_sms, S->mhz, S->full_ms);
    for (int i = 0; i < S->n; i++) {
        char *why = S->why[i];
        const size_t wn = sizeof S->why[i];
        bench_slice sl;
        S->ms[i] = S->replay_ms[i] = NAN, S->got[i] = 0;
        if (bench_slice_open(&sl, ci->device_index, S->want[i], why, wn)) {
            printf("  %d SMs: skipped: %s\n", S->want[i], why);
            continue;
        }
        S->got[i] = sl.sms;
        fv_status s = fv_context_cuda_set_stream(ctx, (cudaStream_t)sl.stream);
        if (s != FV_OK) {
            snprintf(why, wn, "fv_context_cuda_set_stream: %s", fv_last_error());
        } else {
            bn_variant x = {.name = "slice", .flags = FV_NET_CUDA_GRAPH};
            fv_models_net mi;
            bn_timing rt;
            if (make_variant(ctx, arch, w, io, o, &x, &mi, 0, 0, NULL, 0))
                snprintf(why, wn, "no graph net could be made on the slice (above)");
            else if (!x.ok)
                snprintf(why, wn, "the slice's net failed the output check (above)");
            else if (time_forward(ctx, x.net, o, &x.t))
                snprintf(why, wn, "the timing failed (above)");
            else
                S->ms[i] = x.t.median_ms;
            fv_net_destroy(x.net);
            if (full->ok && time_forward(ctx, full->net, o, &rt) == 0)
                S->replay_ms[i] = rt.median_ms;
            fv_context_cuda_set_stream(ctx, NULL);
        }
        bench_slice_close(&sl);
        if (!isfinite(S->ms[i])) {
            printf("  %d SMs: skipped: %s\n", S->want[i], why);
            continue;
        }
        printf("  %d SMs asked, %d given: %.4f ms (%.2fx the full GPU); the full GPU's graph "
               "launched on this slice's stream: %.4f ms\n",
               S->want[i], S->got[i], S->ms[i], S->ms[i] / S->full_ms, S->replay_ms[i]);
    }
    bench_slice_orin(S->mhz, bytes, S->got, S->ms, S->n, S->orin);
}
#endif

/* The context, made on a helper thread while the main thread reads the
 * files (a context is used by one thread at a time: joined, it is the
 * main thread's): CUDA's own start (about 0.25 s) overlaps the reads. */
typedef struct ctx_job {
    fv_context_desc cd;
    fv_context *ctx;
    fv_status s;
    double ms;
    char err[512];
} ctx_job;

static void *make_context(void *arg) {
    ctx_job *j = arg;
    double t = now_ms();
    j->s = fv_context_create(&j->cd, &j->ctx);
    j->ms = now_ms() - t;
    if (j->s != FV_OK) snprintf(j->err, sizeof j->err, "%s", fv_last_error());
    return NULL;
}

int bench_cmd_net(int argc, char **argv) {
    double age0 = process_age_ms(); /* the loader's part of a cold start */
    bn_opts o = {.batch = 1,
                 .size = 224,
                 .iters = 200,
                 .warmup = 20,
                 .backend = FV_BACKEND_CUDA,
                 .tol = -1,
                 .pool_mb = 2048};
    setvbuf(stdout, NULL, _IOLBF, 0); /* in order with stderr in a piped log */
    if (parse(argc, argv, &o)) return 2;
    if (o.tol < 0) o.tol = o.backend == FV_BACKEND_CPU ? 1e-4 : 1e-2;
    fv_models_arch arch;
    if (fv_models_arch_parse(o.model, &arch) != FV_OK) {
        fprintf(stderr, "fovea-bench net: %s\n", fv_last_error());
        return 2;
    }
    fv_models_file *w = NULL, *io = NULL;
    fv_context *ctx = NULL;
    bn_variant v[2] = {{.name = "graph", .flags = FV_NET_CUDA_GRAPH}, {.name = "eager"}};
    bn_layers L = {0};
    fv_models_net mi = {0};
    bn_floor fl;
    bn_slices S = {0};
    int rc = 1;
    ctx_job job = {
        .cd = {.backend = o.backend,
               .device_pool_bytes = (size_t)o.pool_mb << 20,
               /* the CPU backend keeps conv weights in the host pool */
               .host_pool_bytes = o.backend == FV_BACKEND_CPU ? (size_t)o.pool_mb << 20 : 0,
               .workspace_limit_bytes = (size_t)o.workspace_mb << 20,
               .profile_path = o.profile,
               .log = o.cold ? log_stderr : NULL,
               .log_level = FV_LOG_INFO}};
    pthread_t th;
    int threaded = pthread_create(&th, NULL, make_context, &job) == 0;
    if (!threaded) make_context(&job);
    /* the files read and the first net's builder made (host work, no
     * context needed) while CUDA starts */
    double tread = now_ms(), tbuild = 0;
    fv_net_builder *pre = NULL;
    int read_ok = fv_models_file_load(o.weights, &w) == FV_OK &&
                  (!o.io || fv_models_file_load(o.io, &io) == FV_OK);
    tread = now_ms() - tread;
    if (read_ok) {
        tbuild = now_ms();
        read_ok = fv_net_builder_create(&pre) == FV_OK &&
                  fv_models_build(pre, arch, w, o.batch, o.size, o.size, &mi) == FV_OK;
        tbuild = now_ms() - tbuild;
    }
    if (!read_ok) fprintf(stderr, "fovea-bench net: %s\n", fv_last_error());
    if (threaded) pthread_join(th, NULL);
    ctx = job.ctx;
    fv_status s = job.s;
    if (!read_ok || s != FV_OK) fv_net_builder_destroy(pre);
    if (!read_ok) goto done;
    double tctx = job.ms;
    if (s == FV_ERR_NO_DEVICE) {
        fprintf(stderr, "fovea-bench net: no usable GPU (--backend cpu runs on the CPU): %s\n",
                job.err);
        rc = 2;
        goto done;
    }
    if (s != FV_OK) {
        fprintf(stderr, "fovea-bench net: fv_context_create: %s: %s\n", fv_status_name(s), job.err);
        goto done;
    }
    fv_context_info ci;
    fv_context_info_get(ctx, &ci);
    const char *why = "";
    int entries = 0;
    fv_context_profile_status(ctx, &why, &entries);
    char profile_note[256];
    snprintf(profile_note, sizeof profile_note, "%s%d entries%s%s", o.profile ? "" : "no profile; ",
             entries, why && *why ? "; ignored: " : "", why ? why : "");
    printf("fovea-bench net: %s, batch %d, %dx%d, on %s (%s); %s%s\n", o.model, o.batch, o.size,
           o.size, ci.device_name, ci.backend_name, o.autotune ? "autotuned; " : "", profile_note);
    if (!io) printf("WARNING: no --io file: the output is not checked\n");

    if (o.cold)
        printf("context created in %.1f ms (a helper thread, while the weights%s were read in %.1f "
               "ms and the builder made in %.1f ms; main() entered %.0f ms after the exec)\n",
               tctx, io ? " and the reference" : "", tread, tbuild, age0);
    for (int i = 0; i < 2; i++)
        if (make_variant(ctx, arch, w, io, &o, &v[i], &mi, i == 0 && o.autotune, i == 0 && o.cold,
                         i == 0 ? pre : NULL, i == 0 ? tbuild : 0))
            goto done;
    if (o.profile) { /* the choices (and compiled plans), for a warm start next time */
        if ((s = fv_context_profile_save(ctx, o.profile)) != FV_OK) {
            fail_fv("fv_context_profile_save", s);
            goto done;
        }
        printf("profile saved to %s\n", o.profile);
    }
    for (int i = 0; i < 2; i++)
        if (v[i].ok && time_forward(ctx, v[i].net, &o, &v[i].t)) goto done;
    printf("\n%s batch %d %dx%d, %.2f GMAC, %s, median of %d after %d warm-up:\n", o.model, o.batch,
           o.size, o.size, mi.gmacs, ci.device_name, o.iters, o.warmup);
    printf("%-6s %10s %10s %10s %10s %10s %8s %10s\n", "", "median ms", "min ms", "p90 ms",
           "TFLOP/s", "rel L2", "layers", "arena MiB");
    for (int i = 0; i < 2; i++) {
        if (!v[i].ok) {
            printf("%-6s not timed: the output check failed\n", v[i].name);
            continue;
        }
        printf("%-6s %10.4f %10.4f %10.4f %10.2f %10.3g %8d %10.2f\n", v[i].name, v[i].t.median_ms,
               v[i].t.min_ms, v[i].t.p90_ms, 2 * mi.gmacs / v[i].t.median_ms,
               v[i].checked ? v[i].check.rel_l2 : NAN, v[i].info.layers,
               (double)v[i].info.arena_bytes / (1 << 20));
    }
    printf(
        "arena %.2f MiB, lower bound %.2f MiB; weights %.2f MiB; workspace %.2f MiB; concat "
        "inputs written in place %d%s\n",
        (double)v[0].info.arena_bytes / (1 << 20), (double)v[0].info.arena_lower_bound / (1 << 20),
        (double)v[0].info.weight_bytes / (1 << 20), (double)v[0].info.workspace_bytes / (1 << 20),
        v[0].info.concat_elided, o.copies ? " (--no-concat-views)" : "");
    if (bn_floor_of_net(v[0].net, mi.gmacs, &fl)) goto done;
    bn_floor_measure(&fl, o.backend == FV_BACKEND_CUDA, v[0].ok ? v[0].t.median_ms : NAN);
    bn_floor_print(&fl, o.model, o.batch);
    /* the graph net: its total is the replay, beside the sum of the layers */
    bn_variant *pv = v[0].ok ? &v[0] : &v[1];
    if (o.layer_runs > 0 && pv->ok) {
        if (profile_layers(pv->net, &pv->info, o.layer_runs, &L)) goto done;
        print_layers(&L, o.layer_runs);
    }
    if (o.sms && o.backend != FV_BACKEND_CUDA)
        snprintf(S.skipped, sizeof S.skipped, "the net runs on the CPU backend");
#if FV_BUILT_WITH_CUDA
    else if (o.sms)
        run_slices(ctx, arch, w, io, &o, &ci, &v[0], fl.fused_bytes, &S);
#else
    else if (o.sms)
        snprintf(S.skipped, sizeof S.skipped, "this fovea was built without CUDA");
#endif
    if (S.skipped[0]) printf("\nGPU slices (--sms) skipped: %s\n", S.skipped);
    rc = v[0].ok && v[1].ok ? 0 : 1;
    if (o.json && write_json(&o, &ci, &mi, v, 2, &L, profile_note, &fl, o.sms ? &S : NULL)) rc = 1;
done:
    for (int i = 0; i < 2; i++)
        fv_net_destroy(v[i].net);
    free(L.ms);
    free(L.li);
    fv_context_destroy(ctx);
    fv_models_file_destroy(w);
    fv_models_file_destroy(io);
    return rc;
}
