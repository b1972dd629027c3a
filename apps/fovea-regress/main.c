/* fovea-regress: the on-device regression suite. One command, run on the
 * target with the installed SDK, that reports
 *   context  what it runs on (device, SM, tensor cores, versions);
 *   ops      convolutions, pack and unpack on the chosen backend against the
 *            CPU backend's FP32 reference (regress_ops.c);
 *   golden   the bundled images through the edge filters against the OpenCV
 *            references (regress_golden.c);
 *   perf     each convolution of a device profile timed against its
 *            recorded time (regress_perf.c).
 * One page of text, a JSON report (--json), exit 0 only when nothing failed
 * (1 when something did, 2 for bad arguments). On the CPU backend the GPU
 * is not tested: that is a SKIP line, not a failure. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fv_cli.h"
#include "regress.h"

typedef struct options {
    fv_backend backend;
    int device;
    const char *profile, *json, *data, *golden;
    double margin;
    int quick;
} options;

static void usage(FILE *f) {
    fprintf(f,
            "usage: fovea-regress [--profile PATH] [--margin 0.25] [--json FILE] [--data DIR]\n"
            "                     [--golden DIR] [--backend auto|cuda|cpu] [--device N] [--quick]\n"
            "                     [--help]\n"
            "The on-device regression suite: context info; GPU ops against the CPU FP32\n"
            "reference; the edge filters on the bundled images against their golden outputs;\n"
            "and each convolution of a device profile (fovea-calibrate -o PATH) timed against\n"
            "its recorded time.\n"
            "  --profile PATH  the device profile to check timings against (default: none,\n"
            "                  performance not checked)\n"
            "  --margin M      fail an op slower than recorded * (1 + M); default 0.25\n"
            "  --json FILE     also write the report as JSON\n"
            "  --data DIR      the bundled images (default: share/fovea/data of the install)\n"
            "  --golden DIR    the golden references and cases.txt (default:\n"
            "                  share/fovea/golden of the install)\n"
            "  --backend B     auto (default: CUDA when usable), cuda, or cpu\n"
            "  --device N      CUDA device index (default 0); naming one asks for the CUDA\n"
            "                  backend, with no CPU fallback (--backend cpu: only 0)\n"
            "  --quick         fewer ops and golden cases, shorter timing\n"
            "Exit status: 0 all passed (SKIP lines allowed), 1 something failed, 2 bad\n"
            "arguments. Without a GPU (and no --device) the GPU is not tested: SKIP lines,\n"
            "exit 0.\n");
}

/* 0 ok, 1 --help, 2 bad arguments (message printed). */
static int parse_args(int argc, char **argv, options *o) {
    int device_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int takes = strcmp(a, "--profile") == 0 || strcmp(a, "--margin") == 0 ||
                    strcmp(a, "--json") == 0 || strcmp(a, "--data") == 0 ||
                    strcmp(a, "--golden") == 0 || strcmp(a, "--backend") == 0 ||
                    strcmp(a, "--device") == 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(a, "--quick") == 0) {
            o->quick = 1;
            continue;
        }
        if (!takes) {
            fprintf(stderr, "fovea-regress: unknown argument '%s' (see --help)\n", a);
            return 2;
        }
        if (i + 1 >= argc || argv[i + 1][0] == '\0') {
            fprintf(stderr, "fovea-regress: %s needs a value (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (strcmp(a, "--profile") == 0) {
            o->profile = v;
        } else if (strcmp(a, "--json") == 0) {
            o->json = v;
        } else if (strcmp(a, "--data") == 0) {
            o->data = v;
        } else if (strcmp(a, "--golden") == 0) {
            o->golden = v;
        } else if (strcmp(a, "--margin") == 0) {
            if (fv_cli_double(v, 0, 100, &o->margin)) {
                fprintf(stderr, "fovea-regress: --margin '%s': a number from 0 to 100\n", v);
                return 2;
            }
        } else if (strcmp(a, "--device") == 0) {
            if (fv_cli_device("fovea-regress", v, &o->device)) return 2;
            device_given = 1;
        } else if (fv_cli_backend(v, &o->backend)) {
            fprintf(stderr, "fovea-regress: --backend '%s': auto, cuda or cpu\n", v);
            return 2;
        }
    }
    if (fv_cli_device_backend("fovea-regress", o->device, device_given, &o->backend)) return 2;
    return 0;
}

/* A folder holding `marker`: beside the installed program (exe/rel), in the
 * configured install prefix, or in the source tree; the first that has it,
 * else the first candidate (whose error then names it). */
static void find_dir(const char *rel, const char *installed, const char *source, const char *marker,
                     char *out, size_t n) {
    char exe[4096] = "";
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    char cand[3][4096], probe[4200];
    int nc = 0;
    /* a candidate that does not fit is left out */
    if (exe[0] && snprintf(cand[nc], sizeof cand[0], "%s/%s", exe, rel) < (int)sizeof cand[0]) nc++;
    if (snprintf(cand[nc], sizeof cand[0], "%s", installed) < (int)sizeof cand[0]) nc++;
    if (snprintf(cand[nc], sizeof cand[0], "%s", source) < (int)sizeof cand[0]) nc++;
    if (nc == 0) {
        snprintf(out, n, ".");
        return;
    }
    int pick = 0;
    for (int i = nc - 1; i >= 0; i--) {
        snprintf(probe, sizeof probe, "%s/%s", cand[i], marker);
        if (access(probe, R_OK) == 0) pick = i;
    }
    snprintf(out, n, "%s", cand[pick]);
}

static void log_cb(fv_log_level level, const char *msg, void *user) {
    (void)user;
    fprintf(stderr, "fovea %s: %s\n", level == FV_LOG_ERROR ? "error" : "warning", msg);
}

static void version_str(int v, int cudnn, char *out, size_t n) {
    if (v <= 0)
        snprintf(out, n, "none");
    else if (cudnn)
        snprintf(out, n, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    else
        snprintf(out, n, "%d.%d", v / 1000, v % 1000 / 10);
}

/* The context section: INFO lines, and SKIP/FAIL where the GPU is not tested. */
static void context_section(rg_report *r, const fv_context_info *in) {
    if (in->backend == FV_BACKEND_CUDA)
        rg_add(r, "context", "device", RG_INFO, NAN, NAN, "",
               "%s (CUDA device %d), sm %d.%d, %d SMs, %s%s, %.1f GiB; frames: %s", in->device_name,
               in->device_index, in->sm_major, in->sm_minor, in->multiprocessors,
               in->integrated ? "integrated (shared memory)" : "discrete",
               in->tegra ? ", Tegra" : "", (double)in->device_memory_total / (1 << 30),
               in->memory_policy == FV_MEMORY_POLICY_ZERO_COPY
                   ? "zero-copy mapped memory"
                   : "device memory with pinned staging copies");
    else
        rg_add(r, "context", "device", RG_INFO, NAN, NAN, "", "CPU backend: %s, %d threads",
               in->device_name, in->multiprocessors);
    char rc[16], rl[16], drv[16], nc[16], nl[16];
    version_str(in->cuda_runtime_compiled, 0, rc, sizeof rc);
    version_str(in->cuda_runtime_loaded, 0, rl, sizeof rl);
    version_str(in->cuda_driver, 0, drv, sizeof drv);
    version_str(in->cudnn_compiled, 1, nc, sizeof nc);
    version_str(in->cudnn_loaded, 1, nl, sizeof nl);
    rg_add(r, "context", "versions", RG_INFO, NAN, NAN, "",
           "fovea %s (%s CUDA); CUDA runtime %s compiled, %s loaded; driver %s; cuDNN %s "
           "compiled, %s loaded",
           fv_version(), in->fovea_built_with_cuda ? "with" : "without", rc, rl, drv, nc, nl);
    if (in->backend == FV_BACKEND_CUDA) {
        /* the SDK's point: a CUDA context without tensor cores is a regression */
        rg_add(r, "context", "tensor cores", in->tensor_cores ? RG_PASS : RG_FAIL, NAN, NAN, "",
               "%s", in->tensor_cores ? "FP16 tensor-core path usable" : in->tensor_core_reason);
    } else {
        rg_add(r, "context", "gpu", RG_SKIP, NAN, NAN, "",
               "GPU NOT TESTED: running on the CPU backend (%s); ops check CPU FP16 storage "
               "against CPU FP32",
               in->no_gpu_reason[0]         ? in->no_gpu_reason
               : !in->fovea_built_with_cuda ? "this fovea was built without CUDA"
                                            : "asked for with --backend cpu");
    }
}

int main(int argc, char **argv) {
    options o = {.backend = FV_BACKEND_AUTO, .margin = 0.25};
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc == 1 ? 0 : 2;
    char data[4096], golden[4096], cases[4200];
    if (o.data)
        snprintf(data, sizeof data, "%s", o.data);
    else
        find_dir(FOVEA_DATA_FROM_BIN, FOVEA_DATA_DIR, FOVEA_SOURCE_DATA_DIR, "astronaut.png", data,
                 sizeof data);
    if (o.golden)
        snprintf(golden, sizeof golden, "%s", o.golden);
    else
        find_dir(FOVEA_GOLDEN_FROM_BIN, FOVEA_GOLDEN_DIR, FOVEA_SOURCE_GOLDEN_DIR, "cases.txt",
                 golden, sizeof golden);
    snprintf(cases, sizeof cases, "%s/cases.txt", golden);

    rg_report r = {.quick = o.quick};
    fv_context_desc cd = {
        .backend = o.backend, .device = o.device, .log = log_cb, .log_level = FV_LOG_WARN};
    fv_context_desc rd = {.backend = FV_BACKEND_CPU};
    fv_context *ctx = NULL, *ref = NULL;
    fv_context_info info;
    memset(&info, 0, sizeof info);
    fv_status s = fv_context_create(&cd, &ctx);
    if (s == FV_OK) s = fv_context_info_get(ctx, &info);
    if (s != FV_OK) {
        char dev[48] = "";
        if (o.backend != FV_BACKEND_CPU) snprintf(dev, sizeof dev, " (CUDA device %d)", o.device);
        rg_add(&r, "context", "create", RG_FAIL, NAN, NAN, "", "%s backend%s: %s: %s",
               fv_backend_name(o.backend), dev, fv_status_name(s), fv_last_error());
    } else {
        context_section(&r, &info);
        s = fv_context_create(&rd, &ref);
        if (s != FV_OK)
            rg_add(&r, "context", "reference", RG_FAIL, NAN, NAN, "", "CPU reference: %s: %s",
                   fv_status_name(s), fv_last_error());
    }
    if (ctx && ref) {
        printf("fovea-regress: %s on %s%s\n", fv_version(), info.backend_name,
               o.quick ? " (quick)" : "");
        fflush(stdout);
        rg_run_ops(&r, ctx, ref);
        rg_run_golden(&r, ctx, cases, golden, data);
    }
    fv_context_destroy(ref);
    fv_context_destroy(ctx);
    rg_perf_opts po = {.profile = o.profile,
                       .margin = o.margin,
                       .device = o.device,
                       .warmup = o.quick ? 2 : 3,
                       .iters = o.quick ? 7 : 11};
    if (info.backend_name[0]) rg_run_perf(&r, &po, &info);

    rg_print(stdout, &r);
    int pass, fail, skip;
    rg_counts(&r, &pass, &fail, &skip);
    rc = fail ? 1 : 0;
    if (o.json) {
        char opts[16384];
        char esc[3][4200];
        const char *src[3] = {o.profile ? o.profile : "", data, golden};
        for (int k = 0; k < 3; k++) { /* paths as JSON strings: escape " and \ */
            size_t j = 0;
            for (const char *p = src[k]; *p && j + 2 < sizeof esc[k]; p++) {
                if (*p == '"' || *p == '\\') esc[k][j++] = '\\';
                esc[k][j++] = (unsigned char)*p < 0x20 ? '?' : *p;
            }
            esc[k][j] = '\0';
        }
        snprintf(opts, sizeof opts,
                 "{\"backend\": \"%s\", \"device\": %d, \"profile\": %s%s%s, \"margin\": %g, "
                 "\"quick\": %s, \"data\": \"%s\", \"golden\": \"%s\"}",
                 fv_backend_name(o.backend), o.device, o.profile ? "\"" : "",
                 o.profile ? esc[0] : "null", o.profile ? "\"" : "", o.margin,
                 o.quick ? "true" : "false", esc[1], esc[2]);
        if (rg_write_json(o.json, &r, info.backend_name[0] ? &info : NULL, opts) != 0) {
            fprintf(stderr, "fovea-regress: --json %s: %s\n", o.json, strerror(errno));
            rc = 1;
        } else {
            printf("wrote %s\n", o.json);
        }
    }
    rg_free(&r);
    return rc;
}
