/* fovea-run: runs an ONNX model through fv_net. Loads the model (the ONNX
 * importer, libfovea_onnx), creates the net (fusion, memory plan, engine
 * choice; progress while autotuning), prints the layer table, runs it on an
 * image or random input, prints the outputs (top-K for classifiers) and the
 * time of a forward; with --layers per-layer times, with --compare the
 * per-layer error against the CPU FP32 reference. Exit 0 on success, 1 when
 * something fails at run time, 2 for a usage error. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fv_cli.h"
#include "run.h"

#define PROG "fovea-run"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: " PROG " MODEL.onnx [options]\n"
        "Runs an ONNX model (exported by torch.onnx.export, opsets 11-21) through fovea.\n"
        "\n"
        "  --input IMAGE|random  a PNG/JPEG, resized to the input's H x W and normalised\n"
        "                        (see --norm), or seeded random values in [-1, 1) (default)\n"
        "  --norm N              imagenet (default: /255, ImageNet mean and std), unit (/255)\n"
        "                        or raw (0..255)\n"
        "  --batch N             N for a model whose batch dimension is symbolic (default 1)\n"
        "  --backend B           auto (default), cuda or cpu\n"
        "  --device N            CUDA device index (default 0); naming one asks for the CUDA\n"
        "                        backend, with no CPU fallback (--backend cpu: only 0)\n"
        "  --autotune            time every convolution's engines (progress on stderr)\n"
        "  --profile P           device profile to load (fovea-calibrate, or an earlier run);\n"
        "                        saved back with this run's engine choices and compiled\n"
        "                        plans, so that the next run starts fast\n"
        "  --cuda-graph          replay the whole inference as one CUDA graph\n"
        "  --layers              per-layer times (median of --runs)\n"
        "  --compare             per-layer error of this backend against the CPU FP32 reference\n"
        "  --top K               top-K classes of a classifier's output (default 5; 0: none)\n"
        "  --runs N              timed forwards (default 20)\n"
        "  --seed S              random input seed (default 1)\n"
        "  --json                one JSON object on stdout instead of tables\n"
        "  --verbose             the importer's decisions (folded, removed, fused nodes)\n"
        "  --quiet               no layer table\n"
        "  --help\n"
        "\n"
        "Examples:\n"
        "  " PROG " resnet18.onnx --input data/astronaut.png --top 5\n"
        "  " PROG " model.onnx --backend cuda --autotune --profile h100.fvprof --layers\n"
        "  " PROG " model.onnx --compare --json > report.json\n");
}

static int fail_usage(const char *what, const char *v) {
    fprintf(stderr, PROG ": %s%s (try --help)\n", what, v ? v : "");
    return 2;
}

/* 0: run, 1: exit 0 (help), 2: usage error. */
static int parse(int argc, char **argv, run_options *o) {
    memset(o, 0, sizeof *o);
    o->top = 5;
    o->runs = 20;
    o->seed = 1;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        const char *v, *a = argv[i];
        double x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--input", &bad))) {
            o->input = v;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--backend", &bad))) {
            if (fv_cli_backend(v, &o->backend))
                return fail_usage("--backend: use auto, cuda or cpu, not ", v);
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--device", &bad))) {
            if (fv_cli_device(PROG, v, &o->device)) return 2;
            o->device_given = 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--profile", &bad))) {
            o->profile = v;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--norm", &bad))) {
            if (!strcmp(v, "imagenet"))
                o->norm = RUN_NORM_IMAGENET;
            else if (!strcmp(v, "unit"))
                o->norm = RUN_NORM_UNIT;
            else if (!strcmp(v, "raw"))
                o->norm = RUN_NORM_RAW;
            else
                return fail_usage("--norm: use imagenet, unit or raw, not ", v);
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--top", &bad))) {
            if (fv_cli_parse_num(PROG, "--top", v, 0, 1000, &x)) return 2;
            o->top = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--runs", &bad))) {
            if (fv_cli_parse_num(PROG, "--runs", v, 1, 100000, &x)) return 2;
            o->runs = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--batch", &bad))) {
            if (fv_cli_parse_num(PROG, "--batch", v, 1, 4096, &x)) return 2;
            o->batch = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--seed", &bad))) {
            if (fv_cli_parse_num(PROG, "--seed", v, 0, 4294967295.0, &x)) return 2;
            o->seed = (unsigned)x;
        } else if (!strcmp(a, "--autotune")) {
            o->autotune = 1;
        } else if (!strcmp(a, "--cuda-graph")) {
            o->cuda_graph = 1;
        } else if (!strcmp(a, "--layers")) {
            o->layers = 1;
        } else if (!strcmp(a, "--compare")) {
            o->compare = 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            o->verbose = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o->quiet = 1;
        } else if (bad) {
            return 2;
        } else if (a[0] == '-' && a[1] != '\0') {
            return fail_usage("unknown option ", a);
        } else if (!o->model) {
            o->model = a;
        } else {
            return fail_usage("one model only; unexpected ", a);
        }
        if (bad) return 2;
    }
    if (!o->model) return fail_usage("give a model (MODEL.onnx)", NULL);
    if (fv_cli_device_backend(PROG, o->device, o->device_given, &o->backend)) return 2;
    return 0;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void on_log(const char *line, void *user) {
    fprintf(stderr, "  %s\n", line);
    (void)user;
}

static void on_progress(int done, int total, const char *layer, void *user) {
    const run_options *o = user;
    if (o->autotune || total > 200)
        fprintf(stderr, "\r" PROG ": %s layer %d/%d %-40.40s",
                o->autotune ? "autotuning" : "creating", done, total, layer ? layer : "");
    if (done == total && (o->autotune || total > 200)) fputc('\n', stderr);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fail(const char *what, fv_status s, const char *msg) {
    fprintf(stderr, PROG ": %s: %s: %s\n", what, fv_status_name(s), msg);
    return 1;
}

static int run(const run_options *o, fv_net_builder *b, const fv_onnx_report *rep, double load_ms) {
    FILE *f = stdout;
    fv_context_desc cd = {.backend = o->backend,
                          .device = o->device,
                          .profile_path = o->profile,
                          .device_pool_bytes = (size_t)1 << 30};
    fv_context *ctx = NULL, *cpu = NULL;
    fv_net *net = NULL, *ref = NULL;
    float *in = NULL, *ms = NULL;
    fv_net_layer_error *err = NULL;
    int rc = 1;
    fv_status s = fv_context_create(&cd, &ctx);
    if (s != FV_OK) {
        char what[48];
        if (o->backend == FV_BACKEND_CUDA)
            snprintf(what, sizeof what, "context on CUDA device %d", o->device);
        else
            snprintf(what, sizeof what, "context");
        return fail(what, s, fv_last_error());
    }
    fv_context_info ci;
    fv_context_info_get(ctx, &ci);
    fv_net_desc nd = {.flags = (o->autotune ? FV_NET_AUTOTUNE : 0u) |
                               (o->cuda_graph ? FV_NET_CUDA_GRAPH : 0u),
                      .progress = on_progress,
                      .progress_user = (void *)o};
    double t0 = now_ms();
    if ((s = fv_net_create(ctx, b, &nd, &net)) != FV_OK) {
        rc = fail("create", s, fv_last_error());
        goto done;
    }
    double create_ms = now_ms() - t0;
    if (o->profile && (s = fv_context_profile_save(ctx, o->profile)) != FV_OK)
        fprintf(stderr, PROG ": cannot save the profile: %s\n", fv_last_error());
    if (o->json) {
        fprintf(f, "{\"model\":");
        run_json_string(f, o->model);
        fprintf(f, ",\"producer\":");
        run_json_string(f, rep->producer);
        fprintf(f, ",\"opset\":%lld,\"backend\":\"%s\",\"device\":", (long long)rep->opset,
                ci.backend_name);
        run_json_string(f, ci.device_name);
        fprintf(f, ",\"device_index\":%d", ci.device_index);
        fprintf(f,
                ",\"import\":{\"nodes\":%d,\"folded\":%d,\"removed\":%d,\"fused\":%d,"
                "\"builder_layers\":%d},\"load_ms\":%.3f,\"create_ms\":%.3f",
                rep->nodes, rep->folded, rep->removed, rep->fused, rep->layers, load_ms, create_ms);
    } else {
        char dev[32] = "";
        if (ci.backend == FV_BACKEND_CUDA)
            snprintf(dev, sizeof dev, ", CUDA device %d", ci.device_index);
        fprintf(f,
                "%s: %s, opset %lld; %d nodes -> %d builder layers (folded %d, removed %d, "
                "fused %d); load %.1f ms, create %.1f ms on %s (%s%s)\n",
                o->model, rep->producer, (long long)rep->opset, rep->nodes, rep->layers,
                rep->folded, rep->removed, rep->fused, load_ms, create_ms, ci.backend_name,
                ci.device_name, dev);
    }
    if (!o->quiet || o->json) run_print_layers(f, net, o->json);
    for (int i = 0; i < rep->input_count; i++) {
        size_t n;
        if (run_input_make(o, &rep->inputs[i], &in, &n)) goto done;
        s = fv_net_input_upload(net, i, in, n);
        free(in);
        in = NULL;
        if (s != FV_OK) {
            rc = fail("input", s, fv_last_error());
            goto done;
        }
    }
    double *times = malloc(sizeof(double) * (size_t)o->runs);
    if (!times) goto done;
    for (int r = -1; r < o->runs; r++) { /* r = -1: warm-up */
        double a = now_ms();
        if ((s = fv_net_forward(net)) == FV_OK) s = fv_context_synchronize(ctx);
        if (s != FV_OK) {
            free(times);
            rc = fail("forward", s, fv_last_error());
            goto done;
        }
        if (r >= 0) times[r] = now_ms() - a;
    }
    qsort(times, (size_t)o->runs, sizeof *times, cmp_d);
    double med = times[o->runs / 2], best = times[0];
    free(times);
    if (o->json)
        fprintf(f, ",\"forward_ms\":{\"median\":%.5f,\"min\":%.5f,\"runs\":%d}", med, best,
                o->runs);
    run_print_outputs(f, net, rep, o->top, o->json);
    if (!o->json)
        fprintf(f, "forward: median %.4f ms, min %.4f ms over %d runs\n", med, best, o->runs);
    fv_net_info info;
    fv_net_info_get(net, &info);
    if (o->layers) {
        float total = 0;
        ms = calloc((size_t)info.layers + 1, sizeof *ms);
        if (!ms) goto done;
        if ((s = fv_net_profile(net, o->runs, ms, info.layers, &total)) != FV_OK) {
            rc = fail("profile", s, fv_last_error());
            goto done;
        }
        run_print_times(f, net, ms, info.layers, total, o->json);
    }
    if (o->compare) {
        fv_context_desc rd = {.backend = FV_BACKEND_CPU, .device_pool_bytes = (size_t)1 << 30};
        fv_net_desc rnd = {.flags = nd.flags}; /* the same fusion as net */
        err = calloc((size_t)info.layers + 1, sizeof *err);
        if (!err) goto done;
        if ((s = fv_context_create(&rd, &cpu)) != FV_OK ||
            (s = fv_net_create(cpu, b, &rnd, &ref)) != FV_OK ||
            (s = fv_net_compare(net, ref, err, info.layers)) != FV_OK) {
            rc = fail("compare", s, fv_last_error());
            goto done;
        }
        run_print_compare(f, net, err, info.layers, o->json);
    }
    if (o->json) fprintf(f, "}\n");
    rc = 0;
done:
    free(in);
    free(ms);
    free(err);
    fv_net_destroy(ref);
    fv_net_destroy(net);
    fv_context_destroy(cpu);
    fv_context_destroy(ctx);
    return rc;
}

int main(int argc, char **argv) {
    run_options o;
    int p = parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;
    fv_onnx_options io = {.batch = o.batch, .log = o.verbose ? on_log : NULL};
    fv_net_builder *b = NULL;
    fv_onnx_report rep;
    double t0 = now_ms();
    fv_status s = fv_onnx_load(o.model, &io, &b, &rep);
    if (s != FV_OK) return fail("load", s, fv_onnx_last_error());
    int rc = run(&o, b, &rep, now_ms() - t0);
    fv_net_builder_destroy(b);
    return rc;
}
