/* fovea-bench devices: the same work on several GPUs at once, one context
 * and one thread a device (cuDNN's rule, and fovea's: a context per device
 * per thread), against one GPU alone in the same run.
 *
 * Works: "edge", the camera edge pipeline (fv_pipeline: a pinned host frame
 * -> upload -> the Laplacian -> download, 3 slots in flight, CUDA graphs),
 * frames a second; "copy", the same pipeline's uploads and downloads with
 * no GPU work between them (a stage that does nothing: what the host's
 * copies alone scale to, the edge pipeline's ceiling where it runs at the
 * copy floor); "net", a CNN from apps/common/net_models.c (weights from
 * net_models.py) replayed as one CUDA graph, inferences a second. Phases: the
 * list's first device alone, then its first 2, 4, ... and all of them at
 * once. In each, every thread makes its context and work, warms up, waits at
 * a barrier, runs its count and stops its clock after a synchronize; a
 * device's rate over the lone device's rate is its scaling (target >= 0.9,
 * issue 19). A row "all" adds them up: every context's frames (or
 * inferences) over the longest loop, against k times the lone rate (a
 * device listed twice shares its GPU, and one context may finish well
 * before the other: the rows of each then differ, the "all" row says what
 * the GPU did). Every context's last output (but copy's, which nothing
 * writes) is compared byte for byte with the lone run's, and with --io the
 * net's output against PyTorch's FP32 (rel L2 within 1e-2, CPU 1e-4); exit
 * 1 when one differs or any call fails.
 *
 * A device may be listed twice (two contexts on one GPU share it: the rates
 * then show the sharing). --backend cpu runs the same harness on CPU
 * contexts (device 0 only; a smoke test of the harness, tests/unit). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fovea/fovea.h"
#include "fovea/pipeline.h"
#include "fv_cli.h"
#include "net_models.h"

int bench_cmd_devices(int argc, char **argv);

#define PROG       "fovea-bench devices"
#define MAX_CTX    16
#define SCALE_GOAL 0.9

enum { WORK_EDGE, WORK_NET, WORK_COPY, WORKS };
static const char *const work_names[WORKS] = {"edge", "net", "copy"};

typedef struct dv_opts {
    int devices[MAX_CTX], ndev;
    int work[WORKS]; /* asked for, by WORK_* */
    fv_backend backend;
    int width, height, frames, iters, warmup, batch, size;
    fv_models_arch arch;
    const char *weights, *io, *json;
    const fv_models_file *wts, *iof;
} dv_opts;

typedef struct dv_job {
    const dv_opts *o;
    int device, work; /* work: WORK_EDGE, WORK_NET, WORK_COPY */
    pthread_barrier_t *start;
    const unsigned char *frame; /* the edge input, width x height RGB24 */
    double ms;                  /* the timed loop, wall clock */
    double rate;                /* frames or inferences a second */
    unsigned char *out;         /* the last output's bytes */
    size_t out_bytes;
    double rel_l2; /* net with --io: against PyTorch FP32; else -1 */
    char err[320];
} dv_job;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int job_fail(dv_job *j, const char *what, fv_status s) {
    if (!j->err[0])
        snprintf(j->err, sizeof j->err, "device %d: %s: %s: %s", j->device, what, fv_status_name(s),
                 fv_last_error());
    return 1;
}

/* The copy work's stage: no GPU work between the upload and the download. */
static fv_status copy_stage_run(fv_pipeline *p, void *user, int slot, const fv_image *in,
                                const fv_image *out) {
    (void)p, (void)user, (void)slot, (void)in, (void)out;
    return FV_OK;
}

/* The edge pipeline (or, for WORK_COPY, its copies alone): warm-up frames,
 * the barrier, then o->frames frames (each collected and released). The
 * slots' pinned input buffers get the frame once; later submits reuse
 * them as they are. */
static int run_edge(dv_job *j, fv_context *ctx, int *at_barrier) {
    const dv_opts *o = j->o;
    fv_filter_desc fd = {.width = o->width, .height = o->height, .format = FV_PIXEL_RGB24};
    const fv_pipeline_port in_port = {.format = FV_PIXEL_RGB24,
                                      .width = o->width,
                                      .height = o->height},
                           out_port = {
                               .format = FV_PIXEL_GRAY8, .width = o->width, .height = o->height};
    const fv_pipeline_stage copy = {.run = copy_stage_run,
                                    .inputs = 1,
                                    .outputs = 1,
                                    .input = &in_port,
                                    .output = &out_port,
                                    .name = "copies alone"};
    fv_pipeline_desc pd = {.filter = &fd, .cuda_graph = o->backend != FV_BACKEND_CPU};
    if (j->work == WORK_COPY) /* nothing to capture */
        pd = (fv_pipeline_desc){.stage = &copy};
    fv_pipeline *p = NULL;
    fv_status s = fv_pipeline_create(ctx, &pd, &p);
    if (s != FV_OK) return job_fail(j, "fv_pipeline_create", s);
    fv_pipeline_info pi;
    fv_pipeline_info_get(p, &pi);
    const size_t row = (size_t)o->width * 3;
    int filled = 0, rc = 0;
    for (int phase = 0; phase < 2 && !rc; phase++) {
        const int n = phase ? o->frames : o->warmup;
        if (phase) {
            *at_barrier = 1;
            pthread_barrier_wait(j->start);
        }
        double t0 = now_ms();
        int submitted = 0, collected = 0;
        while (collected < n) {
            fv_image in;
            if (submitted < n && (s = fv_pipeline_input(p, &in)) == FV_OK) {
                if (filled < pi.slots) { /* each slot's buffer once */
                    for (int y = 0; y < o->height; y++)
                        memcpy((unsigned char *)in.data + (in.stride ? in.stride : row) * y,
                               j->frame + row * y, row);
                    filled++;
                }
                if ((s = fv_pipeline_submit(p, &in, submitted)) != FV_OK) {
                    rc = job_fail(j, "fv_pipeline_submit", s);
                    break;
                }
                submitted++;
                continue;
            }
            if (submitted < n && s != FV_ERR_NOT_READY) {
                rc = job_fail(j, "fv_pipeline_input", s);
                break;
            }
            fv_pipeline_frame fr;
            if ((s = fv_pipeline_collect(p, 1, &fr)) != FV_OK) {
                rc = job_fail(j, "fv_pipeline_collect", s);
                break;
            }
            if (phase && ++collected == n) { /* the last frame's bytes */
                const size_t orow = (size_t)o->width * (pi.out_format == FV_PIXEL_GRAY8 ? 1 : 3);
                j->out_bytes = orow * o->height;
                j->out = malloc(j->out_bytes);
                for (int y = 0; j->out && y < o->height; y++)
                    memcpy(j->out + orow * y,
                           (const unsigned char *)fr.out.data +
                               (fr.out.stride ? fr.out.stride : orow) * y,
                           orow);
            } else if (!phase) {
                collected++;
            }
            fv_pipeline_release(p);
        }
        if (phase && !rc) j->ms = now_ms() - t0;
    }
    fv_pipeline_destroy(p);
    if (!rc) j->rate = o->frames / (j->ms / 1e3);
    return rc;
}

/* The net: a CUDA-graph net (plain on the CPU), an input of pseudo-random
 * values (or --io's), checked against --io once, warm-up, the barrier, then
 * o->iters forwards and one synchronize. */
static int run_net(dv_job *j, fv_context *ctx, int *at_barrier) {
    const dv_opts *o = j->o;
    fv_net *net = NULL;
    fv_models_net mi;
    const uint32_t flags = o->backend == FV_BACKEND_CPU ? 0 : FV_NET_CUDA_GRAPH;
    fv_status s = fv_models_net_create(ctx, o->arch, o->wts, o->batch, o->size, o->size,
                                       &(fv_net_desc){.flags = flags}, &net, &mi);
    if (s != FV_OK) return job_fail(j, "fv_models_net_create", s);
    int rc = 0;
    if (o->iof) {
        fv_models_check chk;
        if ((s = fv_models_check_io(net, o->iof, &chk)) != FV_OK)
            rc = job_fail(j, "fv_models_check_io", s);
        else
            j->rel_l2 = chk.rel_l2;
    } else {
        const size_t n = (size_t)o->batch * 3 * o->size * o->size;
        float *x = malloc(sizeof(float) * n);
        if (!x) rc = job_fail(j, "input", FV_ERR_OUT_OF_MEMORY);
        uint64_t r = 0x9e3779b97f4a7c15ull;
        for (size_t i = 0; x && i < n; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            x[i] = (float)((r >> 40) / 16777216.0 * 2.0 - 1.0);
        }
        if (x && (s = fv_net_input_upload(net, 0, x, n)) != FV_OK)
            rc = job_fail(j, "fv_net_input_upload", s);
        free(x);
    }
    for (int i = 0; !rc && i < o->warmup; i++)
        if ((s = fv_net_forward(net)) != FV_OK) rc = job_fail(j, "fv_net_forward", s);
    if (!rc && (s = fv_context_synchronize(ctx)) != FV_OK)
        rc = job_fail(j, "fv_context_synchronize", s);
    if (!rc) {
        *at_barrier = 1;
        pthread_barrier_wait(j->start);
        double t0 = now_ms();
        for (int i = 0; !rc && i < o->iters; i++)
            if ((s = fv_net_forward(net)) != FV_OK) rc = job_fail(j, "fv_net_forward", s);
        if (!rc && (s = fv_context_synchronize(ctx)) != FV_OK)
            rc = job_fail(j, "fv_context_synchronize", s);
        j->ms = now_ms() - t0;
    }
    if (!rc) {
        const size_t count = (size_t)o->batch * mi.out_c * mi.out_h * mi.out_w;
        float *y = malloc(sizeof(float) * count);
        if (!y)
            rc = job_fail(j, "output", FV_ERR_OUT_OF_MEMORY);
        else if ((s = fv_net_output_download(net, 0, y, count)) != FV_OK)
            rc = job_fail(j, "fv_net_output_download", s), free(y);
        else
            j->out = (unsigned char *)y, j->out_bytes = sizeof(float) * count;
    }
    fv_net_destroy(net);
    if (!rc) j->rate = o->iters * o->batch / (j->ms / 1e3);
    return rc;
}

/* One thread: its context, its work; always reaches the barrier once (the
 * others wait there), also after a failure. */
static void *job_main(void *arg) {
    dv_job *j = arg;
    const dv_opts *o = j->o;
    fv_context *ctx = NULL;
    int at_barrier = 0;
    const int gpu = o->backend != FV_BACKEND_CPU; /* the CPU's pools: the defaults */
    fv_context_desc cd = {.backend = o->backend,
                          .device = j->device,
                          .device_pool_bytes = gpu ? (size_t)1 << 30 : 0,
                          .pinned_pool_bytes = gpu ? (size_t)256 << 20 : 0};
    fv_status s = fv_context_create(&cd, &ctx);
    if (s != FV_OK)
        job_fail(j, "fv_context_create", s);
    else if (j->work == WORK_NET)
        run_net(j, ctx, &at_barrier);
    else
        run_edge(j, ctx, &at_barrier);
    if (!at_barrier) pthread_barrier_wait(j->start);
    if (ctx && (s = fv_context_destroy(ctx)) != FV_OK) job_fail(j, "fv_context_destroy", s);
    return NULL;
}

/* "all": every CUDA device (fv_cuda_device_count; at most MAX_CTX); else a
 * comma-separated list of indices. */
static int parse_devices(const char *v, dv_opts *o) {
    if (!strcmp(v, "all")) {
        o->ndev = 0;
        if (o->backend == FV_BACKEND_CPU) return o->devices[o->ndev++] = 0, 0;
        int n = 0;
        fv_status s = fv_cuda_device_count(&n);
        if (s != FV_OK) {
            fprintf(stderr, PROG ": --devices all: %s: %s\n", fv_status_name(s), fv_last_error());
            return -1;
        }
        for (int d = 0; d < n && o->ndev < MAX_CTX; d++)
            o->devices[o->ndev++] = d;
        if (o->ndev) return 0;
        fprintf(stderr, PROG ": --devices all: no CUDA device found\n");
        return -1;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    o->ndev = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->ndev == MAX_CTX) {
            fprintf(stderr, PROG ": --devices %s: at most %d entries\n", v, MAX_CTX);
            return -1;
        }
        long d;
        if (fv_cli_long(t, 0, FV_CLI_MAX_DEVICE, &d) != 0 || t[0] < '0' || t[0] > '9') {
            fprintf(stderr, PROG ": --devices %s: '%s' is not a CUDA device index (0 to %d)\n", v,
                    t, FV_CLI_MAX_DEVICE);
            return -1;
        }
        o->devices[o->ndev++] = (int)d;
    }
    if (!o->ndev || v[strlen(v) - 1] == ',' || v[0] == ',' || strstr(v, ",,")) {
        fprintf(stderr, PROG ": --devices %s: give indices separated by commas (0,1) or all\n", v);
        return -1;
    }
    return 0;
}

static int parse_int(const char *name, const char *v, int lo, int hi, int *out) {
    long l;
    if (fv_cli_long(v, lo, hi, &l) != 0) {
        fprintf(stderr, PROG ": %s %s: give a whole number from %d to %d\n", name, v, lo, hi);
        return -1;
    }
    *out = (int)l;
    return 0;
}

static int parse(int argc, char **argv, dv_opts *o, const char **devices) {
    const char *work = "edge,copy,net", *model = "resnet18";
    for (int i = 0; i < argc; i++) {
        int bad = 0;
        const char *v;
#define OPT(name) (v = fv_cli_opt_value(PROG, argc, argv, &i, name, &bad))
        if (OPT("--devices"))
            *devices = v;
        else if (OPT("--work"))
            work = v;
        else if (OPT("--backend")) {
            if (fv_cli_backend(v, &o->backend) != 0 || o->backend == FV_BACKEND_AUTO) {
                fprintf(stderr, PROG ": --backend %s: give cuda or cpu\n", v);
                return -1;
            }
        } else if (OPT("--width")) {
            if (parse_int("--width", v, 16, 8192, &o->width)) return -1;
        } else if (OPT("--height")) {
            if (parse_int("--height", v, 16, 8192, &o->height)) return -1;
        } else if (OPT("--frames")) {
            if (parse_int("--frames", v, 1, 10000000, &o->frames)) return -1;
        } else if (OPT("--iters")) {
            if (parse_int("--iters", v, 1, 10000000, &o->iters)) return -1;
        } else if (OPT("--warmup")) {
            if (parse_int("--warmup", v, 0, 1000000, &o->warmup)) return -1;
        } else if (OPT("--batch")) {
            if (parse_int("--batch", v, 1, 256, &o->batch)) return -1;
        } else if (OPT("--size")) {
            if (parse_int("--size", v, 8, 4096, &o->size)) return -1;
        } else if (OPT("--model"))
            model = v;
        else if (OPT("--weights"))
            o->weights = v;
        else if (OPT("--io"))
            o->io = v;
        else if (OPT("--json"))
            o->json = v;
        else {
            if (!bad) fprintf(stderr, PROG ": unknown option '%s'\n", argv[i]);
            return -1;
        }
#undef OPT
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%s", work);
    int given = 0, ok = strlen(work) < sizeof buf && work[0] && work[0] != ',' &&
                        work[strlen(work) - 1] != ',' && !strstr(work, ",,");
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); ok && t;
         t = strtok_r(NULL, ",", &save)) {
        int w = 0;
        while (w < WORKS && strcmp(t, work_names[w]))
            w++;
        ok = w < WORKS && !o->work[w];
        if (ok) o->work[w] = 1, given++;
    }
    if (!ok || !given) {
        fprintf(stderr, PROG ": --work %s: give edge, copy and net, each once, in a list\n", work);
        return -1;
    }
    if (fv_models_arch_parse(model, &o->arch) != FV_OK) {
        fprintf(stderr, PROG ": --model %s: give resnet18, mobilenet_v2 or unet\n", model);
        return -1;
    }
    if (o->work[WORK_NET] && !o->weights) {
        fprintf(stderr, PROG ": --work net needs --weights FILE.fvw (apps/common/net_models.py "
                             "writes it), or --work edge,copy\n");
        return -1;
    }
    return 0;
}

/* Runs one phase: work w on the first k devices at once. */
static int run_phase(const dv_opts *o, int w, int k, const unsigned char *frame, dv_job *jobs) {
    pthread_barrier_t start;
    pthread_t th[MAX_CTX];
    pthread_barrier_init(&start, NULL, (unsigned)k);
    for (int t = 0; t < k; t++) {
        jobs[t] = (dv_job){.o = o,
                           .device = o->devices[t],
                           .work = w,
                           .start = &start,
                           .frame = frame,
                           .rel_l2 = -1};
        if (pthread_create(&th[t], NULL, job_main, &jobs[t]) != 0) {
            fprintf(stderr, PROG ": pthread_create failed\n");
            exit(1); /* an app, not the SDK: nothing to unwind */
        }
    }
    for (int t = 0; t < k; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start);
    int rc = 0;
    for (int t = 0; t < k; t++)
        if (jobs[t].err[0]) fprintf(stderr, PROG ": %s\n", jobs[t].err), rc = 1;
    return rc;
}

int bench_cmd_devices(int argc, char **argv) {
    dv_opts o = {.backend = FV_BACKEND_CUDA,
                 .width = 1920,
                 .height = 1080,
                 .frames = 3000,
                 .iters = 2000,
                 .warmup = 200,
                 .batch = 1,
                 .size = 224};
    const char *devices = "all";
    if (parse(argc, argv, &o, &devices) != 0 || parse_devices(devices, &o) != 0) return 2;
    if (o.backend == FV_BACKEND_CPU)
        for (int d = 0; d < o.ndev; d++)
            if (o.devices[d] != 0) {
                fprintf(stderr, PROG ": --devices: the CPU backend has device 0 only (%d given)\n",
                        o.devices[d]);
                return 2;
            }
    fv_models_file *wts = NULL, *iof = NULL;
    if (o.work[WORK_NET] && fv_models_file_load(o.weights, &wts) != FV_OK) {
        fprintf(stderr, PROG ": --weights %s: %s\n", o.weights, fv_last_error());
        return 2;
    }
    if (o.work[WORK_NET] && o.io && fv_models_file_load(o.io, &iof) != FV_OK) {
        fprintf(stderr, PROG ": --io %s: %s\n", o.io, fv_last_error());
        fv_models_file_destroy(wts);
        return 2;
    }
    o.wts = wts, o.iof = iof;
    /* the edge input: pseudo-random bytes (not zeros: METHOD.md) */
    const size_t fbytes = (size_t)o.width * o.height * 3;
    unsigned char *frame = malloc(fbytes);
    if (!frame) return fprintf(stderr, PROG ": no memory for the frame\n"), 1;
    uint64_t r = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < fbytes; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        frame[i] = (unsigned char)(r >> 56);
    }
    /* phases: 1, 2, 4, ... and all */
    int ks[8], nk = 0;
    for (int k = 1; k < o.ndev && nk < 7; k *= 2)
        ks[nk++] = k;
    ks[nk++] = o.ndev;

    printf("fovea-bench devices: %s backend, devices",
           o.backend == FV_BACKEND_CPU ? "cpu" : "cuda");
    for (int d = 0; d < o.ndev; d++)
        printf("%s%d", d ? "," : " ", o.devices[d]);
    printf("; a context and a thread each, started together at a barrier\n");
    if (o.work[WORK_EDGE])
        printf("edge: fv_pipeline %dx%d RGB24 -> Laplacian -> GRAY8, 3 slots%s, %d frames "
               "(after %d)\n",
               o.width, o.height, o.backend == FV_BACKEND_CPU ? "" : ", CUDA graphs", o.frames,
               o.warmup);
    if (o.work[WORK_COPY])
        printf("copy: the same pipeline's copies alone (%dx%d RGB24 in, GRAY8 out, no work "
               "between), %d frames (after %d)\n",
               o.width, o.height, o.frames, o.warmup);
    if (o.work[WORK_NET])
        printf("net: %s batch %d %dx%d%s, %d inferences (after %d)\n", fv_models_arch_name(o.arch),
               o.batch, o.size, o.size, o.backend == FV_BACKEND_CPU ? "" : ", CUDA-graph replays",
               o.iters, o.warmup);

    FILE *jf = NULL;
    if (o.json && !(jf = fopen(o.json, "w"))) {
        fprintf(stderr, PROG ": --json %s: cannot write\n", o.json);
        free(frame), fv_models_file_destroy(wts), fv_models_file_destroy(iof);
        return 2;
    }
    if (jf)
        fprintf(jf, "{\n  \"bench\": \"devices\",\n  \"goal\": %.2f,\n  \"rows\": [", SCALE_GOAL);
    printf("\n%-5s %5s %7s %12s %10s %9s %10s %s\n", "work", "gpus", "device", "rate /s", "ms",
           "x alone", "goal 0.9", "same bytes as alone");
    int rc = 0, rows = 0;
    static const int order[WORKS] = {WORK_EDGE, WORK_COPY, WORK_NET};
    for (int wi = 0; wi < WORKS; wi++) {
        const int w = order[wi];
        if (!o.work[w]) continue;
        dv_job alone, jobs[MAX_CTX];
        memset(&alone, 0, sizeof alone);
        for (int pk = 0; pk < nk; pk++) {
            const int k = ks[pk];
            if (run_phase(&o, w, k, frame, jobs) != 0) {
                rc = 1;
                for (int t = 0; t < k; t++)
                    free(jobs[t].out);
                if (pk == 0) break; /* nothing to compare with */
                continue;
            }
            if (pk == 0) alone = jobs[0], jobs[0].out = NULL;
            for (int t = 0; t < k; t++) {
                const dv_job *j = pk == 0 ? &alone : &jobs[t];
                const double x = j->rate / alone.rate;
                /* copy: nothing writes its output */
                const int compared = w != WORK_COPY;
                const int same =
                    !compared || (j->out_bytes == alone.out_bytes &&
                                  (j == &alone || !memcmp(j->out, alone.out, j->out_bytes)));
                /* --io: as fovea-bench net's default tolerances (FP16 storage on CUDA) */
                const double tol = o.backend == FV_BACKEND_CPU ? 1e-4 : 1e-2;
                const int close = j->rel_l2 <= tol; /* -1 without --io */
                if (!same || !close) rc = 1;
                printf("%-5s %5d %7d %12.1f %10.2f %9.3f %10s %s", work_names[w], k, j->device,
                       j->rate, j->ms, x,
                       k == 1            ? "-"
                       : x >= SCALE_GOAL ? "met"
                                         : "MISS",
                       !compared ? "- (not written)"
                       : same    ? "yes"
                                 : "NO");
                if (j->rel_l2 >= 0)
                    printf(" (rel L2 vs PyTorch %.2e%s)", j->rel_l2,
                           close ? "" : ": ABOVE tolerance");
                printf("\n");
                if (jf)
                    fprintf(jf,
                            "%s\n    {\"work\": \"%s\", \"gpus\": %d, \"device\": %d, \"rate\": "
                            "%.6g, \"ms\": %.6g, \"x_alone\": %.6g, \"same_bytes\": %s",
                            rows++ ? "," : "", work_names[w], k, j->device, j->rate, j->ms, x,
                            !compared ? "null"
                            : same    ? "true"
                                      : "false");
                if (jf && j->rel_l2 >= 0) fprintf(jf, ", \"rel_l2\": %.6g", j->rel_l2);
                if (jf) fprintf(jf, "}");
                if (pk > 0) free(jobs[t].out);
            }
            if (k > 1) { /* all of them together: every frame over the longest loop */
                double total = 0, longest = 0;
                for (int t = 0; t < k; t++) {
                    total += jobs[t].rate * jobs[t].ms / 1e3;
                    if (jobs[t].ms > longest) longest = jobs[t].ms;
                }
                const double agg = total / (longest / 1e3), x = agg / (k * alone.rate);
                printf("%-5s %5d %7s %12.1f %10.2f %9.3f %10s %s\n", work_names[w], k, "all", agg,
                       longest, x, x >= SCALE_GOAL ? "met" : "MISS", "(together, over x alone)");
                if (jf)
                    fprintf(jf,
                            ",\n    {\"work\": \"%s\", \"gpus\": %d, \"aggregate\": true, "
                            "\"rate\": %.6g, \"ms\": %.6g, \"x_alone\": %.6g}",
                            work_names[w], k, agg, longest, x);
            }
        }
        free(alone.out);
    }
    if (jf) {
        fprintf(jf, "\n  ],\n  \"ok\": %s\n}\n", rc ? "false" : "true");
        if (fclose(jf) != 0) fprintf(stderr, PROG ": --json %s: write failed\n", o.json), rc = 1;
    }
    if (rc) fprintf(stderr, PROG ": FAILED (a call failed or an output differs; above)\n");
    free(frame);
    fv_models_file_destroy(wts), fv_models_file_destroy(iof);
    return rc;
}
