/* fovea-laplacian: edge filters on an image file through the SDK's
 * fv_filter, by default the Laplacian of the classic cuDNN tutorial:
 *   load (platform) -> upload to a U8 tensor -> fv_filter_apply: pack to
 *   FP16 (x / 255), one convolution (Laplacian {1 1 1; 1 -8 1; 1 1 1} on
 *   every input channel, summed; or Sobel/Scharr/Prewitt gx and gy as one
 *   convolution; or a kernel from the command line; zero padding), the edge
 *   step (|x| or sqrt(gx^2 + gy^2), x 255 x gain, threshold, overlay),
 *   unpack to RGB24 -> download -> save PNG.
 * The GPU when there is one, else the CPU reference backend. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "fovea/fovea.h"
#include "fovea/platform/image_io.h"
#include "fv_cli.h"

#define PROG          "fovea-laplacian"
#define DEFAULT_IMAGE "astronaut.png"

typedef struct options {
    const char *input;  /* NULL: the bundled image */
    const char *output; /* NULL: <filter>.png */
    fv_backend backend;
    fv_filter_desc filter; /* kind, output, gain, threshold, overlay, custom kernel */
    float kernel[FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL];
} options;

static void usage(FILE *f) {
    fprintf(
        f, "usage: fovea-laplacian [--input PATH] [--output PATH] [--backend auto|cpu|cuda]\n"
           "                       [--filter laplacian|sobel|scharr|prewitt|custom]\n"
           "                       [--kernel \"R,C:V,V,...\"] [--gray|--color] [--gain G]\n"
           "                       [--threshold T] [--overlay] [--help]\n"
           "Runs an edge filter (fv_filter: one convolution on tensor cores, zero padding) on a\n"
           "PNG or JPEG image with fovea and writes the edges as an RGB PNG (or JPEG, by the\n"
           "output's extension).\n"
           "  --input PATH    image to filter (default: the bundled data/" DEFAULT_IMAGE ")\n"
           "  --output PATH   where to write the result (default: FILTER.png, laplacian.png)\n"
           "  --backend B     auto (default: the GPU when usable, else the CPU), cpu or cuda\n"
           "  --filter F      laplacian (default: {1 1 1; 1 -8 1; 1 1 1}, the cuDNN tutorial's),\n"
           "                  sobel, scharr, prewitt (magnitude sqrt(gx^2 + gy^2)), or custom\n"
           "  --kernel K      the custom kernel (implies --filter custom): R rows, C columns\n"
           "                  (odd, 1 to 15), then R*C values row by row, e.g. "
           "\"3,3:0,1,0,1,-4,1,0,1,0\"\n"
           "  --gray          one edge value per pixel, the kernel on R, G and B summed (default)\n"
           "  --color         edges of each colour channel on its own\n"
           "  --gain G        output = |x| (or the magnitude) * 255 * G, clamped (default 1)\n"
           "  --threshold T   output 255 where the edge reaches T (1 to 255), else 0 (0: none)\n"
           "  --overlay       draw the edges over the input (the brighter of the two)\n");
}

/* 0: run, 1: exit 0 (help), 2: usage error. */
static int parse(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->backend = FV_BACKEND_AUTO;
    o->filter.gain = 1.0f;
    int kind = -1;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--input", &bad))) {
            o->input = v;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--output", &bad))) {
            o->output = v;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--backend", &bad))) {
            if (fv_cli_backend(v, &o->backend)) {
                fprintf(stderr, "fovea-laplacian: --backend %s: use auto, cpu or cuda\n", v);
                return 2;
            }
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--filter", &bad))) {
            fv_filter_kind k;
            if (fv_cli_filter_kind(v, &k)) {
                fprintf(stderr,
                        "fovea-laplacian: --filter %s: use laplacian, sobel, scharr, prewitt or "
                        "custom\n",
                        v);
                return 2;
            }
            kind = (int)k;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--kernel", &bad))) {
            if (fv_cli_parse_kernel(PROG, v, o->kernel, &o->filter)) return 2;
        } else if (strcmp(argv[i], "--gray") == 0 || strcmp(argv[i], "--grey") == 0) {
            o->filter.output = FV_FILTER_OUT_GRAY;
        } else if (strcmp(argv[i], "--color") == 0 || strcmp(argv[i], "--colour") == 0) {
            o->filter.output = FV_FILTER_OUT_COLOR;
        } else if (strcmp(argv[i], "--overlay") == 0) {
            o->filter.overlay = 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--threshold", &bad))) {
            double t;
            if (fv_cli_double(v, 0, 255, &t)) {
                fprintf(stderr, "fovea-laplacian: --threshold %s: give a level, 0 to 255\n", v);
                return 2;
            }
            o->filter.threshold = (float)t;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--gain", &bad))) {
            double g;
            if (fv_cli_double(v, 0, 1e6, &g) || !(g > 0 && g < 1e6)) { /* both ends open */
                fprintf(stderr, "fovea-laplacian: --gain %s: give a number > 0\n", v);
                return 2;
            }
            o->filter.gain = (float)g;
        } else if (!bad) {
            fprintf(stderr, "fovea-laplacian: unknown argument '%s' (try --help)\n", argv[i]);
            return 2;
        }
        if (bad) return 2;
    }
    if (kind >= 0 && kind != FV_FILTER_CUSTOM && o->filter.kernel) {
        fprintf(stderr, "fovea-laplacian: --kernel goes with --filter custom, not %s\n",
                fv_filter_kind_name((fv_filter_kind)kind));
        return 2;
    }
    if (kind == FV_FILTER_CUSTOM && !o->filter.kernel) {
        fprintf(stderr, "fovea-laplacian: --filter custom needs --kernel \"R,C:V,V,...\"\n");
        return 2;
    }
    if (kind >= 0) o->filter.kind = (fv_filter_kind)kind;
    /* the output's format comes from its extension: refuse before the work */
    if (o->output) {
        const char *slash = strrchr(o->output, '/');
        const char *dot = strrchr(slash ? slash + 1 : o->output, '.');
        if (!dot ||
            (strcasecmp(dot, ".png") && strcasecmp(dot, ".jpg") && strcasecmp(dot, ".jpeg"))) {
            fprintf(stderr,
                    "fovea-laplacian: --output %s: the extension chooses the format: .png, .jpg "
                    "or .jpeg\n",
                    o->output);
            return 2;
        }
    }
    return 0;
}

/* The bundled image: beside the installed program, in the configured install
 * prefix, or in the source tree: the first readable one, else the first
 * candidate (whose error then names it). */
static const char *default_input(char *buf, size_t size) {
    char exe[4096] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    char cand[3][4096 + 256]; /* exe (< 4096) plus the relative path and name */
    int nc = 0;
    if (exe[0])
        snprintf(cand[nc++], sizeof cand[0], "%.4095s/%s/%s", exe, FOVEA_DATA_FROM_BIN,
                 DEFAULT_IMAGE);
    snprintf(cand[nc++], sizeof cand[0], "%s/%s", FOVEA_DATA_DIR, DEFAULT_IMAGE);
    snprintf(cand[nc++], sizeof cand[0], "%s/%s", FOVEA_SOURCE_DATA_DIR, DEFAULT_IMAGE);
    int pick = 0;
    for (int i = nc - 1; i >= 0; i--)
        if (access(cand[i], R_OK) == 0) pick = i;
    snprintf(buf, size, "%s", cand[pick]);
    return buf;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

enum { ST_CONTEXT, ST_TENSORS, ST_PLAN, ST_UPLOAD, ST_FILTER, ST_DOWNLOAD, NST };
static const char *stage_name[NST] = {"context", "tensors", "plan", "upload", "filter", "download"};

typedef struct run_result {
    fv_context_info info;
    int have_info;
    int failed_stage;
    char msg[1024]; /* fv_last_error() of the failure */
    fv_conv2d_info conv;
    int have_conv;
    double ms[NST];
} run_result;

typedef struct pipeline {
    fv_context *ctx;
    fv_tensor *pix_in, *pix_out; /* U8 HxWx3 each: the frames, device-accessible */
    fv_filter *filter;
} pipeline;

static fv_status make_tensors(pipeline *p, int w, int h) {
    fv_tensor_desc u8 = {.dtype = FV_DTYPE_U8, .h = h, .w = w, .c = 3};
    fv_status s = fv_tensor_create(p->ctx, &u8, &p->pix_in);
    if (s == FV_OK) s = fv_tensor_create(p->ctx, &u8, &p->pix_out);
    return s;
}

/* One stage: the call, then a synchronize, so the time is the stage's own. */
#define STAGE(id, call)                                                                            \
    do {                                                                                           \
        double t0_ = now_ms();                                                                     \
        s = (call);                                                                                \
        if (s == FV_OK && p.ctx) s = fv_context_synchronize(p.ctx);                                \
        r->ms[id] = now_ms() - t0_;                                                                \
        if (s != FV_OK) {                                                                          \
            r->failed_stage = id;                                                                  \
            snprintf(r->msg, sizeof r->msg, "%s", fv_last_error());                                \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* Runs the filter on backend; dst receives width x height RGB24 pixels. */
static fv_status run(fv_backend backend, const fv_host_image *src, const fv_filter_desc *fd,
                     void *dst, run_result *r) {
    memset(r, 0, sizeof *r);
    pipeline p = {0};
    fv_status s;
    int w = src->width, h = src->height;
    size_t bytes = (size_t)w * h * 3;
    /* Both U8 images; the filter's FP16 input and convolution output (C
     * stored as 8) and F32 edges (up to 3 channels); twice over for what the
     * backend adds (weights, workspace), plus room to spare. */
    size_t need = 2 * (bytes + FV_ALIGN) + 2 * ((size_t)w * h * 8 * 2 + FV_ALIGN) +
                  (size_t)w * h * 3 * 4 + FV_ALIGN;
    fv_context_desc cd = {.backend = backend,
                          .device_pool_bytes = 2 * need + ((size_t)64 << 20),
                          .pinned_pool_bytes = (size_t)4 << 20,
                          .host_pool_bytes = (size_t)4 << 20};
    fv_image pix_in = {.format = FV_PIXEL_RGB24, .width = w, .height = h};
    fv_image pix_out = pix_in;
    fv_filter_desc d = *fd;
    d.width = w, d.height = h, d.format = FV_PIXEL_RGB24;

    STAGE(ST_CONTEXT, fv_context_create(&cd, &p.ctx));
    r->have_info = fv_context_info_get(p.ctx, &r->info) == FV_OK;
    STAGE(ST_TENSORS, make_tensors(&p, w, h));
    STAGE(ST_PLAN, fv_filter_create(p.ctx, &d, &p.filter));
    r->have_conv = fv_filter_conv(p.filter) && /* NULL on the fused engine */
                   fv_conv2d_info_get(fv_filter_conv(p.filter), &r->conv) == FV_OK;
    pix_in.data = fv_tensor_data(p.pix_in);
    pix_out.data = fv_tensor_data(p.pix_out);
    STAGE(ST_UPLOAD, fv_tensor_upload(p.ctx, p.pix_in, src->data, bytes));
    /* pack (byte / 255) -> convolution -> edge step -> unpack */
    STAGE(ST_FILTER, fv_filter_apply(p.filter, &pix_in, &pix_out));
    STAGE(ST_DOWNLOAD, fv_tensor_download(p.ctx, p.pix_out, dst, bytes));
done:
    fv_filter_destroy(p.filter);
    fv_tensor_destroy(p.pix_out);
    fv_tensor_destroy(p.pix_in);
    fv_context_destroy(p.ctx);
    return s;
}

static void print_info(const fv_context_info *in) {
    printf("backend:      %s on %s", in->backend_name, in->device_name);
    if (in->backend == FV_BACKEND_CUDA)
        printf(" (sm_%d%d, %d SMs%s)\n", in->sm_major, in->sm_minor, in->multiprocessors,
               in->integrated ? ", integrated" : "");
    else
        printf(" (%d threads)\n", in->multiprocessors);
    if (in->no_gpu_reason[0]) printf("no GPU:       %s\n", in->no_gpu_reason);
    if (in->backend == FV_BACKEND_CUDA) {
        int c = in->cuda_runtime_loaded, d = in->cudnn_loaded;
        int d_major = d >= 90000 ? d / 10000 : d / 1000;
        int d_minor = d >= 90000 ? d / 100 % 100 : d / 100 % 10;
        printf("versions:     CUDA runtime %d.%d, cuDNN %d.%d.%d\n", c / 1000, c % 1000 / 10,
               d_major, d_minor, d % 100);
    }
    printf("tensor cores: %s\n", in->tensor_cores            ? "yes (FP16 in, FP32 accumulate)"
                                 : in->tensor_core_reason[0] ? in->tensor_core_reason
                                                             : "no");
}

static int fail(const char *what, fv_status s, const char *msg) {
    fflush(stdout); /* keep the order when both go to one file */
    fprintf(stderr, "fovea-laplacian: %s failed: %s: %s\n", what, fv_status_name(s), msg);
    return 1;
}

/* SIGINT/SIGTERM in the middle of the save: no temporary file is left. */
static void on_signal(int sig) {
    fv_file_temporaries_remove();
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(int argc, char **argv) {
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    options o;
    int pr = parse(argc, argv, &o);
    if (pr) return pr == 1 ? 0 : 2;
    char def[4096];
    const char *input = o.input ? o.input : default_input(def, sizeof def);
    const char *kind = fv_filter_kind_name(o.filter.kind);
    char out_def[64];
    snprintf(out_def, sizeof out_def, "%s.png", kind);
    const char *output = o.output ? o.output : out_def;
    printf("fovea %s: %s edge filter\n", fv_version(), kind);

    fv_host_image src = {0};
    double t0 = now_ms();
    fv_status s = fv_image_file_load(input, FV_PIXEL_RGB24, &src);
    double load_ms = now_ms() - t0;
    if (s != FV_OK) return fail("loading the input", s, fv_last_error());
    if (*fv_image_file_load_warning())
        fprintf(stderr, "fovea-laplacian: warning: %s: %s\n", input, fv_image_file_load_warning());
    int w = src.width, h = src.height;
    printf("input:        %s (%dx%d)\n", input, w, h);

    fv_host_image out = {.format = FV_PIXEL_RGB24, .width = src.width, .height = src.height};
    out.stride = (size_t)src.width * 3;
    out.size = out.stride * (size_t)src.height;
    out.data = malloc(out.size);
    if (!out.data) {
        fprintf(stderr, "fovea-laplacian: out of memory\n");
        fv_host_image_free(&src);
        return 1;
    }

    run_result r;
    s = run(o.backend, &src, &o.filter, out.data, &r);
    if (s == FV_ERR_NOT_SUPPORTED && r.have_info && r.info.backend == FV_BACKEND_CUDA &&
        o.backend == FV_BACKEND_AUTO) {
        print_info(&r.info);
        printf("note:         the CUDA backend cannot run the %s stage yet (%s);\n"
               "              falling back to the CPU backend\n",
               stage_name[r.failed_stage], r.msg);
        s = run(FV_BACKEND_CPU, &src, &o.filter, out.data, &r);
    }
    if (r.have_info) print_info(&r.info);
    if (s != FV_OK) {
        fv_host_image_free(&out);
        fv_host_image_free(&src);
        char what[64];
        snprintf(what, sizeof what, "the %s stage", stage_name[r.failed_stage]);
        fail(what, s, r.msg);
        if (s == FV_ERR_NOT_SUPPORTED && r.info.backend == FV_BACKEND_CUDA)
            fprintf(stderr, "fovea-laplacian: (--backend auto would fall back to the CPU)\n");
        return 1;
    }

    t0 = now_ms();
    fv_image view = fv_host_image_view(&out);
    s = fv_image_file_save(output, &view, NULL);
    double save_ms = now_ms() - t0;
    fv_host_image_free(&out);
    fv_host_image_free(&src);
    if (s != FV_OK) return fail("saving the output", s, fv_last_error());

    if (r.have_conv) {
        printf("conv path:    %s", r.conv.path);
        if (r.conv.engine[0]) printf(", engine %s", r.conv.engine);
        if (r.conv.tensor_cores) printf(", tensor cores");
        if (r.conv.choice[0]) printf(" (%s)", r.conv.choice);
        printf("\n");
    }
    printf("stage times (ms, each followed by a synchronize):\n");
    printf("  %-10s %9.3f\n", "load", load_ms);
    for (int i = 0; i < NST; i++)
        printf("  %-10s %9.3f\n", stage_name[i], r.ms[i]);
    printf("  %-10s %9.3f\n", "save", save_ms);
    const fv_filter_desc *f = &o.filter;
    printf("output:       %s (%dx%d RGB, %s %s edges, %s x 255 x %g", output, w, h,
           f->output == FV_FILTER_OUT_COLOR ? "colour" : "grey", kind,
           f->kind == FV_FILTER_LAPLACIAN || f->kind == FV_FILTER_CUSTOM ? "|x|" : "magnitude",
           (double)f->gain);
    if (f->threshold > 0) printf(", threshold %g", (double)f->threshold);
    if (f->overlay) printf(", over the input");
    printf(")\n");
    return 0;
}
