/* fovea-infer: live camera frames through an imported CNN. Several inputs
 * (cameras, files, GStreamer pipelines, test://) run as one batch: each tick
 * takes the newest frame of every input, pre-processes each straight into
 * its batch item of the net's input (one kernel), runs the net once and
 * post-processes the batch (top-K classes, or segmentation masks blended
 * over each frame), routing every camera's result to its own output, with a
 * live status line once a second and a summary at the end. */
#define _POSIX_C_SOURCE 200809L /* strcasecmp, stat */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "infer.h"
#include "fv_cli.h"

/* Set by the signal handler and by a spreading run's workers, read by
 * every worker's loop: atomics (lock-free, so the handler may store them),
 * not volatile sig_atomic_t, which threads may not share (ThreadSanitizer
 * reported the race when one worker's failure stopped another). */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler stores an atomic_int");
static atomic_int stop_requested;
static atomic_int worker_failed; /* a spreading run's worker could not start */
static void on_signal(int sig) {
    (void)sig;
    atomic_store(&stop_requested, 1);
}

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: " PROG " [--model M.onnx] [options] [--input URI ...] [OUTPUT_URI ...]\n"
        "Runs an ONNX model (fovea's importer) on live frames: every tick takes the newest frame\n"
        "of each --input, runs them as one batch on the GPU's tensor cores (or the CPU backend)\n"
        "and sends each camera's result to its own output (the i-th OUTPUT_URI), with live\n"
        "numbers once a second. With no arguments: the repository's Fashion-MNIST classifier on\n"
        "test://, 150 frames.\n"
        "\n"
        "Inputs:  v4l2:///dev/video0  csi://0  gst://PIPELINE  file://clip.mp4|photo.png|\n"
        "         frames_%%04d.png  test:// (a moving view over a bundled photo; the default)\n"
        "Outputs: display://0  file://out.mp4|.mkv  file://out_%%04d.png  rtp://HOST:PORT\n"
        "         null://   (none: results in the status line only). Segmentation writes the\n"
        "         frame with the class colours blended over it; classification the frame.\n"
        "\n"
        "Model:\n"
        "  --model M           ONNX file (default: tests/models/fashion_mnist/fashion_mnist.onnx)\n"
        "  --task T            auto (default: output (N,C,1,1) classifies, (N,C,H,W) segments),\n"
        "                      classify or segment\n"
        "  --labels F          class names, one per line (ImageNet synset lines work too)\n"
        "  --mean R,G,B --std R,G,B   per-channel normalisation of pixel/255 (one value for all;\n"
        "                      default 0 and 1; the default model's own 0.286 and 0.353)\n"
        "  --imagenet          --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225\n"
        "  --input-size WxH    check the model's input size (it is fixed in the file)\n"
        "  --batch N           the net's batch (default: the number of inputs; >= it)\n"
        "  --fit F             stretch (default) or letterbox the frame into the input\n"
        "  --top K             classes per camera (default 3)   --alpha A  mask opacity (0.5)\n"
        "  --mask-only         segmentation: the colours alone, not over the frame\n"
        "Inputs:\n"
        "  --input URI         a camera (repeat for several, up to 16: one batch item each)\n"
        "  --input-width W --input-height H  --input-rate FPS  --input-format F (yuyv, uyvy,\n"
        "                      nv12, rgb24, bgr24, grey, rgba)   --loop   --reconnect\n"
        "  --stall-ms MS       a camera without frames this long is reported stalled and not\n"
        "                      waited for (default 1000)\n"
        "  --wait-ms MS        longest a batch waits for the slower cameras (default 50)\n"
        "  --sync              every batch waits for a frame of every live camera (up to\n"
        "                      --stall-ms): all cameras in every batch, at the slowest's rate\n"
        "Run:\n"
        "  --backend B         auto (default: GPU when usable), cuda or cpu\n"
        "  --device N          CUDA device index (default 0); naming one asks for the CUDA\n"
        "                      backend, with no CPU fallback (--backend cpu: only 0)\n"
        "  --device N,M,...    spread the inputs over several devices: input i runs on the\n"
        "                      (i mod count)-th, each device with its own context, model,\n"
        "                      batch (its inputs; --batch applies to each) and thread, and its\n"
        "                      own status lines and summary; at least one input a device\n"
        "  --device all        every CUDA device, as a list 0,1,...: the first N when there\n"
        "                      are N inputs and more devices (exit 1 where there is none)\n"
        "  --memory M          where frames live: auto (default: mapped host memory the GPU\n"
        "                      reads in place on integrated GPUs, device memory and copies on\n"
        "                      discrete ones), zero-copy or device (as fovea-edge)\n"
        "  --frames N          stop after N batches    --duration S   stop after S seconds\n"
        "  --cuda-graph        replay the net as one CUDA graph\n"
        "  --low-latency       one batch in flight (no overlap of the GPU with the outputs); a\n"
        "                      classifier (the default model, or --task classify) then reads\n"
        "                      frames in place (--memory zero-copy, unless --memory is given)\n"
        "  --keep-awake MS     CUDA: while waiting for frames, a 16 KB copy and a small kernel\n"
        "                      every MS ms (1 to 100), so that an idle discrete GPU's PCIe link\n"
        "                      and clocks stay out of their power-saving states: lower latency\n"
        "                      at low frame rates, for some power (default 0: off)\n"
        "  --profile FILE      engine profile from fovea-calibrate\n"
        "  --bitrate KBPS      H.264 outputs (default 8000)\n"
        "  --json              status lines and summary as JSON objects (one per line)\n"
        "  --quiet             summary only\n"
        "  --help\n"
        "\n"
        "Exit status: 0 done, 1 a runtime error (input, model, device), 2 a usage error.\n"
        "\n"
        "Examples:\n"
        "  " PROG "                                   # Fashion-MNIST on test://, 150 frames\n"
        "  " PROG
        " --model resnet18.onnx --imagenet --labels synset.txt --input v4l2:///dev/video0\n"
        "  " PROG " --model apps/fovea-infer/models/fashion_seg/fashion_seg.onnx --mean 0.5 "
        "--std 0.25 \\\n"
        "      --input \"test://?items=3\" display://0   # live masks over Fashion-MNIST items\n"
        "  " PROG " --model unet.onnx --task segment --fit letterbox --input csi://0 display://0\n"
        "  " PROG " --model seg.onnx --input v4l2:///dev/video0 --input v4l2:///dev/video1 \\\n"
        "      file://cam0.mp4 file://cam1.mp4          # two cameras, one batch, two videos\n"
        "  " PROG " --json --frames 1000 --backend cuda --input-width 1920 --input-height 1080 \\\n"
        "      --input \"test://?fps=0\" --input \"test://?fps=0\" null:// null://\n");
}

/* --device N, N,M,... or all: each a CUDA device index (fv_cli_device's
 * rules); all is resolved once every option is read (parse). 0, or 2 after
 * printing why. */
static int parse_devices(const char *v, options *o) {
    char buf[256], *save = NULL;
    o->device_all = !strcmp(v, "all");
    if (o->device_all) {
        o->ndevices = 0, o->device = 0;
        return 0;
    }
    if (strlen(v) >= sizeof buf || !v[0] || v[0] == ',' || v[strlen(v) - 1] == ',' ||
        strstr(v, ",,")) {
        fprintf(stderr,
                PROG ": --device %s: give a CUDA device index or a list (0,1) (try --help)\n", v);
        return 2;
    }
    snprintf(buf, sizeof buf, "%s", v);
    o->ndevices = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->ndevices == MAX_CAMERAS) {
            fprintf(stderr, PROG ": --device %s: at most %d devices (one input each at least)\n", v,
                    MAX_CAMERAS);
            return 2;
        }
        if (fv_cli_device(PROG, t, &o->devices[o->ndevices])) return 2;
        o->ndevices++;
    }
    o->device = o->devices[0];
    return 0;
}

static int fail_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (try --help)\n");
    va_end(ap);
    return 2;
}

/* "a,b,c" or "a": 1 or 3 numbers. */
static int parse_triple(const char *name, const char *v, float out[3], int *count) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    int n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        double x;
        if (n == 3 || fv_cli_double(tok, -1e6, 1e6, &x)) {
            fprintf(stderr, PROG ": %s %s: give one number or three, comma-separated\n", name, v);
            return -1;
        }
        out[n++] = (float)x;
    }
    if (n != 1 && n != 3) {
        fprintf(stderr, PROG ": %s %s: give one number or three, comma-separated\n", name, v);
        return -1;
    }
    if (n == 1) out[1] = out[2] = out[0];
    *count = n;
    return 0;
}

static int parse_format(const char *v, fv_pixel_format *f) {
    static const struct {
        const char *name;
        fv_pixel_format f;
    } t[] = {{"yuyv", FV_PIXEL_YUYV},   {"uyvy", FV_PIXEL_UYVY},  {"nv12", FV_PIXEL_NV12},
             {"rgb24", FV_PIXEL_RGB24}, {"rgb", FV_PIXEL_RGB24},  {"bgr24", FV_PIXEL_BGR24},
             {"bgr", FV_PIXEL_BGR24},   {"grey", FV_PIXEL_GRAY8}, {"gray", FV_PIXEL_GRAY8},
             {"rgba", FV_PIXEL_RGBA32}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcasecmp(v, t[i].name) == 0) {
            *f = t[i].f;
            return 0;
        }
    return -1;
}

/* 0: run, 1: exit 0 (help), 2: usage error, 3: exit 1 (--device all found no device). */
static int parse(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->top = 3;
    o->stall_ms = 1000;
    o->wait_ms = 50;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        const char *v, *a = argv[i];
        double x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--model", &bad))) {
            o->model = v, o->model_given = 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--task", &bad))) {
            if (!strcmp(v, "auto"))
                o->task = TASK_AUTO;
            else if (!strcmp(v, "classify"))
                o->task = TASK_CLASSIFY;
            else if (!strcmp(v, "segment"))
                o->task = TASK_SEGMENT;
            else
                return fail_usage("--task %s: use auto, classify or segment", v);
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--labels", &bad))) {
            o->labels = v;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--mean", &bad))) {
            if (parse_triple("--mean", v, o->mean, &o->mean_n)) return 2;
            o->norm_given = 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--std", &bad))) {
            if (parse_triple("--std", v, o->std, &o->std_n)) return 2;
            for (int k = 0; k < 3; k++)
                if (!(o->std[k] > 0)) return fail_usage("--std %s: every value must be > 0", v);
            o->norm_given = 1;
        } else if (!strcmp(a, "--imagenet")) {
            const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
            memcpy(o->mean, mean, sizeof mean), memcpy(o->std, sd, sizeof sd);
            o->mean_n = o->std_n = 3, o->norm_given = 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--input-size", &bad))) {
            char tail;
            if (sscanf(v, "%dx%d%c", &o->in_w, &o->in_h, &tail) != 2 || o->in_w < 1 || o->in_h < 1)
                return fail_usage("--input-size %s: give WxH, e.g. 224x224", v);
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--batch", &bad))) {
            if (fv_cli_parse_num(PROG, "--batch", v, 1, 1024, &x)) return 2;
            o->batch = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--input", &bad))) {
            if (o->ninputs == MAX_CAMERAS) return fail_usage("--input %s: at most 16 inputs", v);
            o->inputs[o->ninputs++] = v;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--input-width", &bad))) {
            if (fv_cli_parse_num(PROG, "--input-width", v, 1, 32768, &x)) return 2;
            o->width = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--input-height", &bad))) {
            if (fv_cli_parse_num(PROG, "--input-height", v, 1, 32768, &x)) return 2;
            o->height = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--input-rate", &bad))) {
            if (fv_cli_parse_num(PROG, "--input-rate", v, 0.001, 10000, &x)) return 2;
            o->rate = x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--input-format", &bad))) {
            if (parse_format(v, &o->in_format))
                return fail_usage("--input-format %s: use yuyv, uyvy, nv12, rgb24, bgr24, grey "
                                  "or rgba",
                                  v);
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--backend", &bad))) {
            if (fv_cli_backend(v, &o->backend))
                return fail_usage("--backend %s: use auto, cuda or cpu", v);
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--device", &bad))) {
            if (parse_devices(v, o)) return 2;
            o->device_given = 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--memory", &bad))) {
            if (fv_cli_memory(v, &o->memory))
                return fail_usage("--memory %s: use auto, zero-copy or device", v);
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--fit", &bad))) {
            if (!strcmp(v, "stretch"))
                o->fit = FV_RESIZE_STRETCH;
            else if (!strcmp(v, "letterbox"))
                o->fit = FV_RESIZE_LETTERBOX;
            else
                return fail_usage("--fit %s: use stretch or letterbox", v);
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--top", &bad))) {
            if (fv_cli_parse_num(PROG, "--top", v, 1, FV_CLASSIFY_MAX_K, &x)) return 2;
            o->top = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--alpha", &bad))) {
            if (fv_cli_parse_num(PROG, "--alpha", v, 0.001, 1, &x)) return 2;
            o->alpha = (float)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--frames", &bad))) {
            if (fv_cli_parse_num(PROG, "--frames", v, 1, 1e12, &x)) return 2;
            o->frames = (long)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--duration", &bad))) {
            if (fv_cli_parse_num(PROG, "--duration", v, 0.001, 1e9, &x)) return 2;
            o->duration = x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--stall-ms", &bad))) {
            if (fv_cli_parse_num(PROG, "--stall-ms", v, 10, 600000, &x)) return 2;
            o->stall_ms = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--wait-ms", &bad))) {
            if (fv_cli_parse_num(PROG, "--wait-ms", v, 0, 60000, &x)) return 2;
            o->wait_ms = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--keep-awake", &bad))) {
            if (fv_cli_parse_num(PROG, "--keep-awake", v, 0, 100, &x)) return 2;
            o->keep_awake_ms = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--profile", &bad))) {
            o->profile = v;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--bitrate", &bad))) {
            if (fv_cli_parse_num(PROG, "--bitrate", v, 1, 1e6, &x)) return 2;
            o->bitrate = (int)x;
        } else if (!strcmp(a, "--mask-only")) {
            o->mask_only = 1;
        } else if (!strcmp(a, "--sync")) {
            o->sync = 1;
        } else if (!strcmp(a, "--low-latency")) {
            o->low_latency = 1;
        } else if (!strcmp(a, "--cuda-graph")) {
            o->cuda_graph = 1;
        } else if (!strcmp(a, "--loop")) {
            o->loop = 1;
        } else if (!strcmp(a, "--reconnect")) {
            o->reconnect = 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o->quiet = 1;
        } else if (bad) {
            return 2;
        } else if (a[0] == '-' && a[1] != '\0') {
            return fail_usage("unknown option '%s'", a);
        } else if (o->noutputs == MAX_CAMERAS) {
            return fail_usage("'%s': at most 16 outputs (one per --input)", a);
        } else {
            o->outputs[o->noutputs++] = a;
        }
        if (bad) return 2;
    }
    if ((o->width == 0) != (o->height == 0))
        return fail_usage("give --input-width and --input-height together");
    if (o->ninputs == 0) o->inputs[o->ninputs++] = "test://";
    if (o->device_all) {
        if (o->backend == FV_BACKEND_CPU)
            return fail_usage("--device all: the CPU backend has no devices (drop --device, or "
                              "use --backend cuda)");
        o->backend = FV_BACKEND_CUDA;
        int n = 0;
        fv_status s = fv_cuda_device_count(&n);
        if (s != FV_OK || n == 0) {
            fprintf(stderr, PROG ": --device all: %s\n",
                    s != FV_OK ? fv_last_error() : "no CUDA device found");
            return 3;
        }
        o->ndevices = n < o->ninputs ? n : o->ninputs;
        for (int d = 0; d < o->ndevices; d++)
            o->devices[d] = d;
    }
    if (o->noutputs > o->ninputs)
        return fail_usage("%s: more outputs than inputs (one output per --input, in order)",
                          o->outputs[o->ninputs]);
    if (o->ndevices <= 1 && o->batch && o->batch < o->ninputs)
        return fail_usage("--batch %d is smaller than the number of inputs (%d)", o->batch,
                          o->ninputs);
    if (o->ndevices > o->ninputs)
        return fail_usage("--device: %d devices for %d input%s: give at least one --input a "
                          "device",
                          o->ndevices, o->ninputs, o->ninputs == 1 ? "" : "s");
    if (o->ndevices > 1 && o->batch && o->batch < (o->ninputs + o->ndevices - 1) / o->ndevices)
        return fail_usage("--batch %d is smaller than a device's inputs (%d)", o->batch,
                          (o->ninputs + o->ndevices - 1) / o->ndevices);
    for (int d = 1; d < o->ndevices; d++) /* the first is checked below */
        if (fv_cli_device_backend(PROG, o->devices[d], 1, &o->backend)) return 2;
    if (fv_cli_device_backend(PROG, o->device, o->device_given, &o->backend)) return 2;
    if (o->ndevices == 0) o->devices[o->ndevices++] = o->device;
    if (!o->model) o->model = model_default_path();
    return 0;
}

static void log_cb(fv_log_level level, const char *msg, void *user) {
    const options *o = user;
    if (level <= FV_LOG_WARN || !o->quiet)
        fprintf(stderr, PROG ": %s%s\n", o->tag ? o->tag : "", msg);
}

static size_t file_bytes(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

static void context_failed(const options *o) {
    if (o->backend == FV_BACKEND_CUDA)
        fprintf(stderr, PROG ": cannot create the context on CUDA device %d: %s\n", o->device,
                fv_last_error());
    else
        fprintf(stderr, PROG ": cannot create the context: %s\n", fv_last_error());
}

/* Where frames live: --memory, else the context's choice (mapped memory on
 * integrated GPUs, device memory and copies on discrete ones), except for a
 * classifier under --low-latency (the default model, or --task classify;
 * the task must be known before the context is made): there frames stay in
 * mapped host memory, which pre-processing reads in place, only the pixels it
 * samples, instead of an upload of the whole frame after each idle gap (H100,
 * MobileNetV2 on a 1080p camera at 30 fps: latency p50 0.47 against 0.67 ms,
 * p99 0.78 against 2.83; docs/infer.md). AUTO: the context's choice. */
static fv_memory_policy low_latency_memory(const options *o) {
    if (o->memory != FV_MEMORY_POLICY_AUTO || !o->low_latency || o->backend == FV_BACKEND_CPU)
        return o->memory;
    const int classify = o->task == TASK_CLASSIFY || (o->task == TASK_AUTO && !o->model_given);
    return classify ? FV_MEMORY_POLICY_ZERO_COPY : FV_MEMORY_POLICY_AUTO;
}

/* The context, its pools sized for the cameras' frames and the model;
 * frames where memory says (see low_latency_memory). */
static fv_context *make_context(const options *o, const camera *cams, int n,
                                fv_memory_policy memory) {
    const size_t mib = (size_t)1 << 20;
    size_t frames = 0, outs = 0, conv = 0;
    for (int i = 0; i < n; i++) {
        const fv_source_info *si = &cams[i].info;
        size_t px = (size_t)si->width * si->height;
        /* the mailbox, and the ring's copy of each frame */
        frames +=
            (MAILBOX + SLOTS) * (fv_image_bytes(si->format, si->width, si->height) + FV_ALIGN);
        outs += SLOTS * (4 * px + FV_ALIGN);
        conv += 16 * px + FV_ALIGN; /* F16 x 8 channels: a YUV frame on its way to RGB */
    }
    size_t weights = file_bytes(o->model);
    size_t dev = frames + outs + conv + 2 * weights + 512 * mib;
    size_t pin = frames + outs + 16 * mib, host = 2 * weights + 64 * mib;
    fv_context_desc cd = {.backend = o->backend,
                          .device = o->device,
                          .device_pool_bytes = dev,
                          .pinned_pool_bytes = pin,
                          .host_pool_bytes = host,
                          .profile_path = o->profile,
                          .memory_policy = memory,
                          .log = log_cb,
                          .log_user = (void *)o,
                          .log_level = FV_LOG_WARN};
    fv_context *ctx = NULL;
    fv_status st = fv_context_create(&cd, &ctx);
    if (st == FV_ERR_NOT_SUPPORTED && memory != o->memory) {
        /* zero copy chosen here (low_latency_memory), on a GPU that cannot
         * map host memory: the default then */
        cd.memory_policy = o->memory;
        st = fv_context_create(&cd, &ctx);
    }
    if (st != FV_OK) {
        context_failed(o);
        return NULL;
    }
    fv_context_info ci;
    fv_context_info_get(ctx, &ci);
    /* zero copy chosen here is for a GPU: where --backend auto found none,
     * the CPU backend keeps the policy asked for (its default) */
    const int cpu_default = ci.backend == FV_BACKEND_CPU && cd.memory_policy != o->memory;
    const int zero_copy = !cpu_default && ci.memory_policy == FV_MEMORY_POLICY_ZERO_COPY;
    if (cpu_default || zero_copy) {
        /* again: with the policy asked for, or for zero copy (integrated
         * GPU, --memory zero-copy or the low-latency default) with the
         * mapped pool the frames live in */
        fv_context_destroy(ctx);
        ctx = NULL;
        if (cpu_default) cd.memory_policy = o->memory;
        if (zero_copy) cd.mapped_pool_bytes = pin;
        if (fv_context_create(&cd, &ctx) != FV_OK) {
            context_failed(o);
            return NULL;
        }
    }
    return ctx;
}

static int sink_format_ok(fv_pixel_format f) {
    return f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 || f == FV_PIXEL_RGBA32 ||
           f == FV_PIXEL_GRAY8;
}

/* Camera i's output buffers and sink. 0, or -1 after printing why. */
static int make_output(app *a, int i) {
    const options *o = a->o;
    camera *c = &a->cams[i];
    const fv_source_info *si = &c->info;
    if (fv_preprocess_region(si->width, si->height, a->m->w, a->m->h, o->fit, &a->region[i]) !=
        FV_OK) {
        fprintf(stderr, PROG ": input %d: %s\n", cam_no(o, i), fv_last_error());
        return -1;
    }
    if (i >= o->noutputs) return 0;
    int convert = a->m->task == TASK_SEGMENT || !sink_format_ok(si->format);
    fv_pixel_format of = convert ? FV_PIXEL_RGB24 : si->format;
    if (convert && a->m->task == TASK_CLASSIFY) {
        fv_tensor_desc td = {.dtype = fv_context_backend(a->ctx) == FV_BACKEND_CPU ? FV_DTYPE_F32
                                                                                   : FV_DTYPE_F16,
                             .h = si->height,
                             .w = si->width,
                             .c = 3};
        if (fv_tensor_create(a->ctx, &td, &a->conv[i]) != FV_OK) {
            fprintf(stderr, PROG ": output %d: %s\n", cam_no(o, i), fv_last_error());
            return -1;
        }
    }
    fv_sink_desc sd = {.uri = o->outputs[i],
                       .width = si->width,
                       .height = si->height,
                       .format = of,
                       .rate = si->rate > 0 ? si->rate : 30,
                       .bitrate_kbps = o->bitrate,
                       .log = log_cb,
                       .log_user = (void *)o,
                       .text_overlay = a->m->task == TASK_CLASSIFY};
    if (fv_sink_open(&sd, &c->sink) != FV_OK) {
        fprintf(stderr, PROG ": cannot open output %s: %s\n", o->outputs[i], fv_last_error());
        return -1;
    }
    fv_sink_info_get(c->sink, &c->sink_info);
    return 0;
}

/* Carve-outs made so far from the context's pools. */
static long carve_outs(fv_context *ctx) {
    long n = 0;
    for (int k = FV_POOL_DEVICE; k <= FV_POOL_HOST; k++) {
        fv_pool *p = fv_context_pool(ctx, (fv_pool_kind)k);
        fv_pool_stats ps;
        if (p && fv_pool_stats_get(p, &ps) == FV_OK) n += (long)ps.carve_outs;
    }
    return n;
}

static void print_setup(const app *a) {
    const options *o = a->o;
    const model *m = a->m;
    char on[192];
    if (a->ci.backend == FV_BACKEND_CUDA)
        snprintf(on, sizeof on, "%s (CUDA device %d)", a->ci.device_name, a->ci.device_index);
    else
        snprintf(on, sizeof on, "%s",
                 a->ci.device_name[0] ? a->ci.device_name : fv_backend_name(a->ci.backend));
    fprintf(stderr, PROG ": %s%s (%s) on %s, frames in %s memory: %s\n", o->tag ? o->tag : "",
            o->model, m->task == TASK_CLASSIFY ? "classification" : "segmentation", on,
            a->ci.memory_policy == FV_MEMORY_POLICY_ZERO_COPY ? "mapped host (zero-copy)"
                                                              : "device",
            m->desc);
    for (int i = 0; i < a->n; i++) {
        const camera *c = &a->cams[i];
        fprintf(stderr, "  [%d] %s %s (%s) %dx%d %s%s -> item %d, %s %dx%d at (%d, %d) -> %s\n",
                cam_no(o, i), c->info.kind, c->info.name, c->info.detail, c->info.width,
                c->info.height, fv_pixel_format_name(c->info.format),
                c->info.rate > 0 ? "" : " unpaced", c->index,
                o->fit == FV_RESIZE_LETTERBOX ? "letterboxed" : "stretched", a->region[i].width,
                a->region[i].height, a->region[i].x, a->region[i].y,
                c->sink ? c->sink_info.name : "status line only");
    }
    if (a->ci.no_gpu_reason[0]) fprintf(stderr, "  on the CPU backend: %s\n", a->ci.no_gpu_reason);
    for (int i = 0; m->task == TASK_CLASSIFY && i < a->n; i++)
        if (a->cams[i].sink && !a->cams[i].sink_info.text_overlay)
            fprintf(stderr,
                    "  [%d] labels in the status line only: %s draws no captions "
                    "(GStreamer outputs with textoverlay do, and image outputs where fovea "
                    "was built with Pango)\n",
                    cam_no(o, i), a->cams[i].sink_info.name);
}

/* One worker's state (heap: a spreading run has several at once). */
typedef struct worker {
    capture_group grp;
    camera cams[MAX_CAMERAS];
    model m;
    stats st;
    app a;
} worker;

static int run(options *o) {
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    worker *wk = calloc(1, sizeof *wk);
    if (!wk) {
        fprintf(stderr, PROG ": %sno memory for the run's state\n", o->tag ? o->tag : "");
        return 1;
    }
    if (capture_group_init(&wk->grp) != 0) {
        fprintf(stderr, PROG ": %scannot make the capture lock\n", o->tag ? o->tag : "");
        free(wk);
        if (o->ndevices > 1) atomic_store(&worker_failed, 1), atomic_store(&stop_requested, 1);
        return 1;
    }
    camera *cams = wk->cams;
    model *m = &wk->m;
    stats *st = &wk->st;
    app *a = &wk->a;
    int n = o->ninputs, rc = 1;
    fv_context *ctx = NULL;
    const char *end = "set-up failed";
    int opened = 0, running = 0;
    for (; opened < n; opened++) {
        cams[opened].index = opened, cams[opened].uri = o->inputs[opened];
        if (capture_open(o, &cams[opened], log_cb, o) != 0) goto done;
    }
    if (!(ctx = make_context(o, cams, n, low_latency_memory(o)))) goto done;
    if (model_load(o, o->batch ? o->batch : n, ctx, m) != 0) goto done;
    *a = (app){.o = o, .ctx = ctx, .m = m, .cams = cams, .n = n, .grp = &wk->grp, .st = st};
    fv_context_info_get(ctx, &a->ci);
    a->pd.fit = o->fit;
    if (o->norm_given) {
        memcpy(a->pd.mean, o->mean, sizeof o->mean), memcpy(a->pd.std, o->std, sizeof o->std);
    } else if (!o->model_given) { /* the default model's training normalisation */
        a->pd.mean[0] = a->pd.mean[1] = a->pd.mean[2] = 0.2860f;
        a->pd.std[0] = a->pd.std[1] = a->pd.std[2] = 0.3530f;
    }
    for (int i = 0; i < n; i++)
        if (capture_buffers(&cams[i], ctx) != 0 || make_output(a, i) != 0) goto done;
    if (loop_pipeline(a) != 0 || loop_keep_awake_init(a) != 0) goto done;
    if (!o->json) print_setup(a);
    st->rng = 12345;
    if (capture_start(&wk->grp, cams, n) != 0) goto done;
    long carved = carve_outs(ctx);
    double t0 = (double)now_ns() * 1e-9;
    running = 1;
    rc = loop_run(a, &stop_requested, &end);
    if (atomic_load(&worker_failed) && !strcmp(end, "interrupted"))
        end = "stopped: another device's worker failed";
    double secs = (double)now_ns() * 1e-9 - t0;
    long allocs = carve_outs(ctx) - carved;
    capture_stop(&wk->grp, cams, n);
    for (int i = 0; i < n; i++) {
        if (cams[i].sink && fv_sink_close(cams[i].sink) != FV_OK && rc == 0) {
            fprintf(stderr, PROG ": finishing %s: %s\n", cams[i].sink_info.name, fv_last_error());
            rc = 1;
        }
        cams[i].sink = NULL;
        if (cams[i].failed && rc == 0) {
            fprintf(stderr, PROG ": input %s failed: %s\n", cams[i].uri, cams[i].end_msg);
            rc = 1;
        }
    }
    report_summary(o, m, cams, n, st, secs > 0 ? secs : 1e-9, end, rc == 0, &a->ci, allocs);
done:
    /* a spreading run: a worker whose set-up failed stops the others (a
     * wrong device or input fails the run now, not after Ctrl-C) */
    if (!running && o->ndevices > 1)
        atomic_store(&worker_failed, 1), atomic_store(&stop_requested, 1);
    capture_stop(&wk->grp, cams, n);
    for (int i = 0; i < n; i++)
        fv_sink_close(cams[i].sink);
    if (ctx) fv_context_synchronize(ctx);
    fv_pipeline_destroy(a->pipe);
    loop_keep_awake_free(a);
    for (int i = 0; i < n; i++)
        fv_tensor_destroy(a->conv[i]);
    model_free(m);
    for (int i = 0; i < opened; i++)
        capture_close(&cams[i]); /* after the sinks; before the context (mapped buffers) */
    fv_context_destroy(ctx);
    capture_group_destroy(&wk->grp);
    free(wk);
    return rc;
}

/* --device N,M,...: input i on device i mod count, a worker each, every
 * worker in its own thread (its own context: one per device per thread).
 * Ctrl-C stops them all, as does a worker whose set-up fails; otherwise
 * each runs to its own end (a worker failing while it runs leaves the
 * others running). 0 when every worker ended well, else 1. */
typedef struct spread_job {
    options o;
    char tag[32];
    int rc;
} spread_job;

static void *spread_main(void *arg) {
    spread_job *j = arg;
    j->rc = run(&j->o);
    return NULL;
}

static int run_spread(const options *o) {
    spread_job *jobs = calloc((size_t)o->ndevices, sizeof *jobs);
    pthread_t th[MAX_CAMERAS];
    if (!jobs) return fprintf(stderr, PROG ": no memory for the workers\n"), 1;
    for (int d = 0; d < o->ndevices; d++) {
        spread_job *j = &jobs[d];
        j->o = *o;
        j->o.device = o->devices[d];
        j->o.ninputs = j->o.noutputs = 0;
        for (int i = d; i < o->ninputs; i += o->ndevices) {
            j->o.cam_id[j->o.ninputs] = i;
            j->o.inputs[j->o.ninputs++] = o->inputs[i];
            if (i < o->noutputs) j->o.outputs[j->o.noutputs++] = o->outputs[i];
        }
        snprintf(j->tag, sizeof j->tag, "[device %d] ", o->devices[d]);
        j->o.tag = j->tag;
    }
    int started = 0, rc = 0;
    for (; started < o->ndevices; started++)
        if (pthread_create(&th[started], NULL, spread_main, &jobs[started]) != 0) {
            fprintf(stderr, PROG ": cannot start the worker of device %d\n", o->devices[started]);
            atomic_store(&stop_requested, 1), rc = 1;
            break;
        }
    for (int d = 0; d < started; d++) {
        pthread_join(th[d], NULL);
        if (jobs[d].rc != 0) rc = 1;
    }
    free(jobs);
    return rc;
}

int main(int argc, char **argv) {
    static options o;
    int r = parse(argc, argv, &o);
    if (r == 1) return 0;
    if (r == 2) return 2;
    if (r == 3) return 1;          /* --device all found no device */
    if (argc == 1) o.frames = 150; /* the default run: 5 s at 30 fps */
    return o.ndevices > 1 ? run_spread(&o) : run(&o);
}
