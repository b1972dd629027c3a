/* fovea-edge: the camera edge-detection demo. Frames from a source URI
 * (camera, GStreamer pipeline, files, test://) go through a ring of frames
 * in flight (fv_pipeline: upload, the edge filter on tensor cores, download,
 * overlapped) to a sink URI (display, video file, images, RTP, null), with
 * a live status line once a second and a summary at the end. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "fovea/fovea.h"
#include "fovea/platform/image_io.h"
#include "fovea/platform/sink.h"
#include "fovea/platform/source.h"
#include "fv_cli.h"

#define PROG        "fovea-edge"
#define MAX_SAMPLES 65536 /* latency samples kept for the summary (reservoir) */
#define SEC_SAMPLES 8192  /* per status line */

typedef struct options {
    const char *input, *output;
    int input_given, output_given;
    fv_backend backend;
    int device, device_given;
    fv_filter_desc filter;
    float kernel[FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL];
    int width, height;
    double rate;
    fv_pixel_format in_format;
    uint32_t fourcc;
    long frames;
    double duration;
    int slots, low_latency, cuda_graph, loop, reconnect, json, quiet, bitrate;
    const char *profile;
    const char *stage_clock; /* "GPU" (events) or "CPU" (wall time) */
    fv_memory_policy memory;
    int no_userptr;
} options;

static volatile sig_atomic_t stop_requested;
/* The first SIGINT/SIGTERM asks for a clean stop (the video file is
 * finished); a second one, while something still blocks, ends the program
 * at once. */
static void on_signal(int sig) {
    if (stop_requested) {
        fv_file_temporaries_remove(); /* a numbered image being saved */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_requested = 1;
}

/* Without SA_RESTART: a system call blocked in set-up (a device's open, a
 * read) returns EINTR instead of waiting on. */
static void catch_stop_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Set-up steps check for a stop request between them. */
static int interrupted_in_setup(const char *step) {
    if (!stop_requested) return 0;
    fprintf(stderr, PROG ": interrupted while %s\n", step);
    return 1;
}

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: " PROG " [options] [INPUT_URI] [OUTPUT_URI]\n"
        "Streams frames from INPUT_URI through an edge filter on the GPU's tensor cores (or\n"
        "the CPU backend) to OUTPUT_URI, with live numbers once a second.\n"
        "\n"
        "Inputs:  v4l2:///dev/video0  csi://0  gst://PIPELINE  file://photo.png|clip.mp4|\n"
        "         frames_%%04d.png  test:// (a moving view over a bundled photo; default)\n"
        "Outputs: display://0  file://out.mp4|.mkv  file://out_%%04d.png  rtp://HOST:PORT\n"
        "         null://   (default: display://0 where there is a display, else\n"
        "         file://edges.mp4, or edges_%%04d.png when no H.264 encoder is installed)\n"
        "\n"
        "Filter:\n"
        "  --filter F          laplacian (default: {1 1 1; 1 -8 1; 1 1 1} over R, G, B, as in\n"
        "                      the classic cuDNN tutorial), sobel, scharr, prewitt, custom\n"
        "  --kernel K          custom kernel \"R,C:V,V,...\" (odd R, C up to 15; implies custom)\n"
        "  --gray | --color    one edge value per pixel (default) or per colour channel\n"
        "  --gain G            edge * G (default 1)   --threshold T   binary edges at T\n"
        "  --overlay           edges drawn over the input\n"
        "  --engine E          auto (default), fused (tensor-core kernel), direct (CUDA-core "
        "kernel) or conv\n"
        "                      (pack + cuDNN convolution + edge + unpack)\n"
        "Input:\n"
        "  --input-width W --input-height H   --input-rate FPS\n"
        "  --input-format F    yuyv, uyvy, nv12, rgb24, bgr24, grey, mjpeg (cameras: what the\n"
        "                      camera sends; refused formats list what it offers)\n"
        "  --loop              files: start again at the end\n"
        "  --reconnect         cameras: wait for a camera that vanished to come back\n"
        "Run:\n"
        "  --backend B         auto (default: GPU when usable), cuda or cpu\n"
        "  --device N          CUDA device index (default 0); naming one asks for the CUDA\n"
        "                      backend, with no CPU fallback (--backend cpu: only 0)\n"
        "  --frames N          stop after N frames    --duration S   stop after S seconds\n"
        "  --slots N           frames in flight (default 3; 1..16)\n"
        "  --low-latency       newest camera frame only, one frame in flight (drops stale)\n"
        "  --cuda-graph        replay each slot's GPU work as a CUDA graph\n"
        "  --memory M          auto (default: zero-copy mapped frames on integrated GPUs,\n"
        "                      device memory and copies on discrete ones), zero-copy, device\n"
        "  --no-userptr        zero copy: V4L2 mmap buffers and a copy, not user pointers\n"
        "  --profile FILE      engine profile from fovea-calibrate (conv engine)\n"
        "  --bitrate KBPS      H.264 outputs (default 8000)\n"
        "  --json              status lines and summary as JSON objects (one per line)\n"
        "  --quiet             summary only\n"
        "  --help\n"
        "\n"
        "Examples:\n"
        "  " PROG
        "                                   # 150 frames of test:// to the display or edges.mp4\n"
        "  " PROG " v4l2:///dev/video0 display://0\n"
        "  " PROG " --input-width 1280 --input-height 720 --input-format mjpeg "
        "v4l2:///dev/video0\n"
        "  " PROG " csi://0 rtp://192.168.1.10:5000\n"
        "  " PROG " --filter sobel --overlay file://clip.mp4 file://edges.mkv\n"
        "  " PROG " \"gst://videotestsrc num-buffers=100\" file://out_%%04d.png\n"
        "  " PROG " --frames 1000 --input-width 1920 --input-height 1080 \"test://?fps=0\" "
        "null://\n");
}

static int fail_usage(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (try --help)\n");
    return 2;
}

static int parse_format(const char *v, options *o) {
    static const struct {
        const char *name;
        fv_pixel_format f;
        uint32_t fourcc;
    } t[] = {{"yuyv", FV_PIXEL_YUYV, 0},
             {"uyvy", FV_PIXEL_UYVY, 0},
             {"nv12", FV_PIXEL_NV12, 0},
             {"rgb24", FV_PIXEL_RGB24, 0},
             {"rgb", FV_PIXEL_RGB24, 0},
             {"bgr24", FV_PIXEL_BGR24, 0},
             {"bgr", FV_PIXEL_BGR24, 0},
             {"grey", FV_PIXEL_GRAY8, 0},
             {"gray", FV_PIXEL_GRAY8, 0},
             {"rgba", FV_PIXEL_RGBA32, 0},
             {"mjpeg", FV_PIXEL_RGB24, FV_FOURCC('M', 'J', 'P', 'G')}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcasecmp(v, t[i].name) == 0) {
            o->in_format = t[i].f, o->fourcc = t[i].fourcc;
            return 0;
        }
    fprintf(stderr,
            PROG ": --input-format %s: use yuyv, uyvy, nv12, rgb24, bgr24, grey, rgba or mjpeg\n",
            v);
    return 1;
}

/* 0: run, 1: exit 0 (help), 2: usage error. */
static int parse(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->input = "test://";
    o->filter.gain = 1.0f;
    int kind = -1, positional = 0;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        const char *v;
        double x;
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--backend", &bad))) {
            if (fv_cli_backend(v, &o->backend))
                return fail_usage("--backend %s%s: use auto, cuda or cpu", v, "");
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--device", &bad))) {
            if (fv_cli_device(PROG, v, &o->device)) return 2;
            o->device_given = 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--filter", &bad))) {
            fv_filter_kind k;
            if (fv_cli_filter_kind(v, &k))
                return fail_usage("--filter %s%s: use laplacian, sobel, scharr, prewitt or custom",
                                  v, "");
            kind = (int)k;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--kernel", &bad))) {
            if (fv_cli_parse_kernel(PROG, v, o->kernel, &o->filter)) return 2;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--engine", &bad))) {
            if (!strcmp(v, "auto"))
                o->filter.engine = FV_FILTER_ENGINE_AUTO;
            else if (!strcmp(v, "fused"))
                o->filter.engine = FV_FILTER_ENGINE_FUSED;
            else if (!strcmp(v, "conv"))
                o->filter.engine = FV_FILTER_ENGINE_CONV;
            else if (!strcmp(v, "direct"))
                o->filter.engine = FV_FILTER_ENGINE_DIRECT;
            else
                return fail_usage("--engine %s%s: use auto, fused, direct or conv", v, "");
        } else if (!strcmp(a, "--gray") || !strcmp(a, "--grey")) {
            o->filter.output = FV_FILTER_OUT_GRAY;
        } else if (!strcmp(a, "--color") || !strcmp(a, "--colour")) {
            o->filter.output = FV_FILTER_OUT_COLOR;
        } else if (!strcmp(a, "--overlay")) {
            o->filter.overlay = 1;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--gain", &bad))) {
            if (fv_cli_parse_num(PROG, "--gain", v, 1e-6, 1e6, &x)) return 2;
            o->filter.gain = (float)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--threshold", &bad))) {
            if (fv_cli_parse_num(PROG, "--threshold", v, 0, 255, &x)) return 2;
            o->filter.threshold = (float)x;
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
            if (parse_format(v, o)) return 2;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--frames", &bad))) {
            if (fv_cli_parse_num(PROG, "--frames", v, 1, 1e12, &x)) return 2;
            o->frames = (long)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--duration", &bad))) {
            if (fv_cli_parse_num(PROG, "--duration", v, 0.001, 1e9, &x)) return 2;
            o->duration = x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--slots", &bad))) {
            if (fv_cli_parse_num(PROG, "--slots", v, 1, FV_PIPELINE_MAX_SLOTS, &x)) return 2;
            o->slots = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--bitrate", &bad))) {
            if (fv_cli_parse_num(PROG, "--bitrate", v, 1, 1e6, &x)) return 2;
            o->bitrate = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--profile", &bad))) {
            o->profile = v;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--memory", &bad))) {
            if (fv_cli_memory(v, &o->memory))
                return fail_usage("--memory %s%s: use auto, zero-copy or device", v, "");
        } else if (!strcmp(a, "--no-userptr")) {
            o->no_userptr = 1;
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
            return fail_usage("unknown option '%s'%s", a, "");
        } else if (positional == 0) {
            o->input = a, o->input_given = 1, positional++;
        } else if (positional == 1) {
            o->output = a, o->output_given = 1, positional++;
        } else {
            return fail_usage("unexpected argument '%s'%s: give at most an input and an output URI",
                              a, "");
        }
        if (bad) return 2;
    }
    if ((o->width == 0) != (o->height == 0))
        return fail_usage("give --input-width and --input-height together%s%s", "", "");
    if (kind >= 0 && kind != FV_FILTER_CUSTOM && o->filter.kernel)
        return fail_usage("--kernel goes with --filter custom, not %s%s",
                          fv_filter_kind_name((fv_filter_kind)kind), "");
    if (kind == FV_FILTER_CUSTOM && !o->filter.kernel)
        return fail_usage("--filter custom needs --kernel \"R,C:V,V,...\"%s%s", "", "");
    if (kind >= 0) o->filter.kind = (fv_filter_kind)kind;
    if (fv_cli_device_backend(PROG, o->device, o->device_given, &o->backend)) return 2;
    return 0;
}

/* ---- numbers ------------------------------------------------------------ */
typedef struct window {
    long frames_in, frames_out;
    double up, filt, down; /* sums, ms */
    float lat[SEC_SAMPLES];
    int nlat;
} window;

typedef struct totals {
    long frames_in, frames_out;
    double up, filt, down, gpu;
    float lat[MAX_SAMPLES];
    long nlat_seen;
    uint64_t dropped;
    uint64_t rng;
} totals;

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double percentile(float *v, int n, double q) {
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    int i = (int)ceil(q * n) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void add_latency(totals *t, window *w, float ms) {
    if (w->nlat < SEC_SAMPLES) w->lat[w->nlat++] = ms;
    if (t->nlat_seen < MAX_SAMPLES) {
        t->lat[t->nlat_seen] = ms;
    } else { /* reservoir sampling keeps a uniform sample of every frame */
        t->rng = t->rng * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t j = (t->rng >> 17) % (uint64_t)(t->nlat_seen + 1);
        if (j < MAX_SAMPLES) t->lat[j] = ms;
    }
    t->nlat_seen++;
}

static void status_line(const options *o, window *w, double secs, uint64_t dropped, double t) {
    double p50 = percentile(w->lat, w->nlat, 0.5), p99 = percentile(w->lat, w->nlat, 0.99);
    long n = w->frames_out ? w->frames_out : 1;
    if (o->json)
        printf("{\"type\":\"status\",\"t\":%.3f,\"fps_in\":%.2f,\"fps_out\":%.2f,"
               "\"latency_ms_p50\":%.3f,\"latency_ms_p99\":%.3f,\"upload_ms\":%.4f,"
               "\"filter_ms\":%.4f,\"download_ms\":%.4f,\"dropped\":%llu}\n",
               t, w->frames_in / secs, w->frames_out / secs, p50, p99, w->up / n, w->filt / n,
               w->down / n, (unsigned long long)dropped);
    else
        fprintf(stderr,
                "%6.1fs  in %6.1f fps  out %6.1f fps  latency p50 %6.2f p99 %6.2f ms  "
                "%s ms: up %.3f filter %.3f down %.3f  dropped %llu\n",
                t, w->frames_in / secs, w->frames_out / secs, p50, p99, o->stage_clock, w->up / n,
                w->filt / n, w->down / n, (unsigned long long)dropped);
    fflush(o->json ? stdout : stderr);
    memset(w, 0, sizeof *w - sizeof w->lat);
    w->nlat = 0;
}

/* Carve-outs from the context's pools so far: a run makes none once its
 * pipeline is created (plan, then run). */
static long carve_outs(fv_context *ctx) {
    long n = 0;
    for (int k = FV_POOL_DEVICE; k <= FV_POOL_HOST; k++) {
        fv_pool *pool = fv_context_pool(ctx, (fv_pool_kind)k);
        fv_pool_stats ps;
        if (pool && fv_pool_stats_get(pool, &ps) == FV_OK) n += (long)ps.carve_outs;
    }
    return n;
}

/* ---- defaults ------------------------------------------------------------ */
static int have_display(void) {
    const char *d = getenv("DISPLAY"), *wl = getenv("WAYLAND_DISPLAY");
    return (d && *d) || (wl && *wl);
}

/* Opens the sink; without an output URI: the display, else edges.mp4, else
 * PNG frames. *what says which and why. */
static fv_status open_sink(const options *o, fv_sink_desc *sd, fv_sink **sink, char *why,
                           size_t wn) {
    if (o->output_given) {
        sd->uri = o->output;
        return fv_sink_open(sd, sink);
    }
    if (have_display()) {
        sd->uri = "display://0";
        if (fv_sink_open(sd, sink) == FV_OK) return FV_OK;
        snprintf(why, wn, "display://0 failed (%s); ", fv_last_error());
    } else {
        snprintf(why, wn, "no display (DISPLAY and WAYLAND_DISPLAY unset); ");
    }
    sd->uri = "file://edges.mp4";
    if (fv_sink_open(sd, sink) == FV_OK) return FV_OK;
    size_t l = strlen(why);
    snprintf(why + l, wn - l, "no video (%s); ", fv_last_error());
    sd->uri = "file://edges_%04d.png";
    return fv_sink_open(sd, sink);
}

#define USERPTR_BUFFERS 4
static void *user_buffers[USERPTR_BUFFERS];

/* Reopens the V4L2 source with user-pointer buffers carved (page aligned)
 * from ctx's mapped pool, for the size and format it negotiated. 0: done;
 * 1: not possible, the source (reopened with mmap buffers when it had to be
 * closed) is in *src, or *src is NULL after an error (printed). */
static int reopen_userptr(const options *o, fv_source_desc *sd, fv_context *ctx, fv_source_info *si,
                          fv_source **src) {
    fv_pool *pool = fv_context_pool(ctx, FV_POOL_MAPPED);
    const size_t page = 4096;
    size_t bytes = (fv_image_bytes(si->format, si->width, si->height) + page - 1) / page * page;
    if (!pool) return 1;
    for (int i = 0; i < USERPTR_BUFFERS; i++) {
        void *raw = NULL;
        if (fv_pool_alloc(pool, bytes + page, &raw) != FV_OK) {
            fprintf(stderr,
                    PROG ": zero copy: no room for camera buffers in the mapped pool (%s); "
                         "using mmap buffers and a copy\n",
                    fv_last_error());
            return 1;
        }
        user_buffers[i] = (void *)(((uintptr_t)raw + page - 1) & ~(uintptr_t)(page - 1));
    }
    fv_source_close(*src);
    *src = NULL;
    fv_source_desc u = *sd;
    u.width = si->width, u.height = si->height, u.format = si->format, u.rate = si->rate;
    u.user_buffers = user_buffers, u.user_buffer_bytes = bytes, u.buffers = USERPTR_BUFFERS;
    if (fv_source_open(&u, src) == FV_OK) {
        fv_source_info_get(*src, si);
        return 0;
    }
    fprintf(stderr,
            PROG ": zero copy: the camera refused user-pointer buffers (%s); using mmap "
                 "buffers and a copy\n",
            fv_last_error());
    if (fv_source_open(sd, src) != FV_OK) {
        fprintf(stderr, PROG ": cannot reopen input %s: %s\n", o->input, fv_last_error());
        *src = NULL;
    } else {
        fv_source_info_get(*src, si);
    }
    return 1;
}

static void log_cb(fv_log_level level, const char *msg, void *user) {
    const options *o = user;
    if (level <= FV_LOG_WARN || !o->quiet) fprintf(stderr, PROG ": %s\n", msg);
}

static void context_failed(const options *o) {
    if (o->backend == FV_BACKEND_CUDA)
        fprintf(stderr, PROG ": cannot create the context on CUDA device %d: %s\n", o->device,
                fv_last_error());
    else
        fprintf(stderr, PROG ": cannot create the context: %s\n", fv_last_error());
}

static int run(options *o) {
    catch_stop_signals();
    int no_args = !o->input_given && !o->output_given;
    if (no_args && !o->frames && !o->duration) o->frames = 150; /* a short demo: 5 s at 30 fps */

    fv_source_desc srcd = {.uri = o->input,
                           .width = o->width,
                           .height = o->height,
                           .rate = o->rate,
                           .format = o->in_format,
                           .fourcc = o->fourcc,
                           .loop = o->loop,
                           .reconnect = o->reconnect,
                           .log = log_cb,
                           .log_user = o};
    fv_source *src = NULL;
    if (fv_source_open(&srcd, &src) != FV_OK) {
        if (interrupted_in_setup("opening the input")) return 1;
        fprintf(stderr, PROG ": cannot open input %s: %s\n", o->input, fv_last_error());
        return 1;
    }
    if (interrupted_in_setup("opening the input")) {
        fv_source_close(src);
        return 1;
    }
    fv_source_info si;
    fv_source_info_get(src, &si);

    /* Pools for this frame size: every slot's input and output frames
     * (pinned staging and device copies, or mapped memory), plus the
     * filter's own tensors (the CONV engine's F16 tensors, or the CPU
     * reference's F32 ones: up to 12 channels of 4 bytes) and workspace. */
    const size_t px = (size_t)si.width * si.height;
    const size_t slot_bytes = (size_t)(o->slots ? o->slots : 3) *
                              (fv_image_bytes(si.format, si.width, si.height) + 4 * px);
    const size_t mib = (size_t)1 << 20;
    size_t dev = slot_bytes + 48 * px + 128 * mib, pin = slot_bytes + 16 * mib;
    fv_context_desc cd = {.device_pool_bytes = dev > 256 * mib ? dev : 256 * mib,
                          .pinned_pool_bytes = pin > 64 * mib ? pin : 64 * mib,
                          .backend = o->backend,
                          .device = o->device,
                          .memory_policy = o->memory,
                          .profile_path = o->profile,
                          .log = log_cb,
                          .log_user = o,
                          .log_level = FV_LOG_WARN};
    fv_context *ctx = NULL;
    if (fv_context_create(&cd, &ctx) != FV_OK) {
        context_failed(o);
        fv_source_close(src);
        return 1;
    }
    fv_context_info ci;
    fv_context_info_get(ctx, &ci);
    if (ci.memory_policy == FV_MEMORY_POLICY_ZERO_COPY && pin > 64 * mib) {
        /* integrated GPU: the frames live in the mapped pool instead */
        fv_context_destroy(ctx);
        ctx = NULL;
        cd.mapped_pool_bytes = pin;
        if (fv_context_create(&cd, &ctx) != FV_OK) {
            context_failed(o);
            fv_source_close(src);
            return 1;
        }
        fv_context_info_get(ctx, &ci);
    }
    o->stage_clock = ci.backend == FV_BACKEND_CUDA ? "GPU" : "CPU";
    /* Zero copy and a V4L2 camera: the camera writes into buffers carved
     * from the mapped pool (user pointers), which the GPU reads in place. */
    int userptr = 0;
    if (ci.memory_policy == FV_MEMORY_POLICY_ZERO_COPY && !strcmp(si.kind, "v4l2") &&
        !o->no_userptr && !o->fourcc) {
        if (reopen_userptr(o, &srcd, ctx, &si, &src) == 0) {
            userptr = 1;
        } else if (!src) {
            fv_context_destroy(ctx);
            return 1;
        }
    }

    o->filter.width = si.width, o->filter.height = si.height, o->filter.format = si.format;
    /* In place, a camera buffer must not go back to the driver (the next
     * capture) while the GPU reads it: one frame in flight. No copies are
     * left to overlap then. */
    fv_pipeline_desc pd = {.filter = &o->filter,
                           .slots = o->low_latency || userptr ? 1 : o->slots,
                           .cuda_graph = o->cuda_graph};
    fv_pipeline *p = NULL;
    if (interrupted_in_setup("creating the context")) {
        fv_source_close(src);
        fv_context_destroy(ctx);
        return 1;
    }
    if (fv_pipeline_create(ctx, &pd, &p) != FV_OK) {
        fprintf(stderr, PROG ": cannot plan the filter for %dx%d %s: %s\n", si.width, si.height,
                fv_pixel_format_name(si.format), fv_last_error());
        fv_source_close(src); /* before the context: its buffers may be in the mapped pool */
        fv_context_destroy(ctx);
        return 1;
    }
    fv_pipeline_info pi;
    fv_pipeline_info_get(p, &pi);
    fv_filter_info fi;
    fv_filter_info_get(fv_pipeline_filter(p), &fi);

    fv_sink_desc sd = {.width = si.width,
                       .height = si.height,
                       .format = pi.out_format,
                       .rate = si.rate > 0 ? si.rate : 30,
                       .bitrate_kbps = o->bitrate,
                       .log = log_cb,
                       .log_user = o};
    fv_sink *sink = NULL;
    char why[1024] = "";
    if (open_sink(o, &sd, &sink, why, sizeof why) != FV_OK) {
        fprintf(stderr, PROG ": cannot open output %s: %s\n", sd.uri, fv_last_error());
        fv_pipeline_destroy(p);
        fv_source_close(src); /* before the context: its buffers may be in the mapped pool */
        fv_context_destroy(ctx);
        return 1;
    }
    fv_sink_info ki;
    fv_sink_info_get(sink, &ki);
    if (interrupted_in_setup("opening the output")) {
        fv_sink_close(sink);
        fv_pipeline_destroy(p);
        fv_source_close(src);
        fv_context_destroy(ctx);
        return 1;
    }

    char on[192];
    if (ci.backend == FV_BACKEND_CUDA)
        snprintf(on, sizeof on, "%s (CUDA device %d)", ci.device_name, ci.device_index);
    else
        snprintf(on, sizeof on, "%s",
                 ci.device_name[0] ? ci.device_name : fv_backend_name(ci.backend));
    if (!o->json)
        fprintf(stderr,
                PROG ": %s %s (%s) %dx%d %s%s -> %s on %s [%s%s] -> %s %s (%s)%s%s\n"
                     "  %d slot%s in flight, %s memory%s%s\n",
                si.kind, si.name, si.detail, si.width, si.height, fv_pixel_format_name(si.format),
                si.rate > 0 ? "" : " unpaced", fv_filter_kind_name(o->filter.kind), on, fi.path,
                pi.cuda_graph ? ", CUDA graphs" : "", ki.kind, ki.name, ki.detail,
                why[0] ? "\n  output chosen: " : "", why, pi.slots, pi.slots == 1 ? "" : "s",
                ci.backend != FV_BACKEND_CUDA             ? "host"
                : pi.policy == FV_MEMORY_POLICY_ZERO_COPY ? "zero-copy mapped"
                                                          : "pinned + device",
                o->low_latency ? ", low latency (stale frames dropped)" : "",
                o->cuda_graph && !pi.cuda_graph ? ", no CUDA graphs: " : "");
    if (!o->json && o->cuda_graph && !pi.cuda_graph) fprintf(stderr, "  (%s)\n", pi.cuda_graph_why);
    if (!o->json && ci.no_gpu_reason[0])
        fprintf(stderr, "  on the CPU backend: %s\n", ci.no_gpu_reason);

    static window w;
    static totals t;
    t.rng = 12345;
    long carved = carve_outs(ctx);
    double t0 = now_s(), last = t0;
    int rc = 0, ended = 0;
    const char *end_reason = "done";
    char err[512] = "";
    uint64_t dropped = 0;
    while (!stop_requested) {
        double now = now_s();
        if (o->duration && now - t0 >= o->duration) {
            end_reason = "duration reached";
            break;
        }
        /* outputs that are ready go to the sink first */
        fv_pipeline_frame done;
        int full = 0;
        fv_image slot_in;
        if (fv_pipeline_input(p, &slot_in) != FV_OK) full = 1;
        int can_submit = !ended && !(o->frames && t.frames_in >= o->frames) && !full &&
                         !(o->low_latency && pi.in_flight > 0);
        fv_status cs = fv_pipeline_collect(p, can_submit ? 0 : 1, &done);
        if (cs == FV_OK) {
            fv_status ws = fv_sink_write(sink, &done.out, done.user_time_ns);
            fv_pipeline_release(p);
            if (ws == FV_ERR_END_OF_STREAM) {
                end_reason = "output closed";
                break;
            }
            if (ws != FV_OK) {
                snprintf(err, sizeof err, "output %s: %s", ki.name, fv_last_error());
                rc = 1;
                break;
            }
            float lat = (float)((double)(now_ns() - done.user_time_ns) * 1e-6);
            add_latency(&t, &w, lat);
            w.frames_out++, t.frames_out++;
            w.up += done.upload_ms, w.filt += done.filter_ms, w.down += done.download_ms;
            t.up += done.upload_ms, t.filt += done.filter_ms, t.down += done.download_ms;
            t.gpu += done.gpu_ms;
            fv_pipeline_info_get(p, &pi);
            continue;
        }
        fv_pipeline_info_get(p, &pi);
        if (!can_submit) {
            if (pi.in_flight == 0) break; /* all done */
            if (cs != FV_ERR_NOT_READY) {
                snprintf(err, sizeof err, "pipeline: %s", fv_last_error());
                rc = 1;
                break;
            }
            continue;
        }
        /* Frames land straight in the slot's input buffer (pinned, or mapped
         * under zero copy): test:// makes them there and other sources copy
         * once, so the upload runs from pinned memory, asynchronously. V4L2
         * user pointers are already the GPU's mapped memory: read in place. */
        fv_source_frame fr;
        const uint32_t cf = o->low_latency ? FV_SOURCE_CAPTURE_LATEST : 0;
        /* slot_in: fetched above (can_submit means it was); the same buffer
         * until a submit */
        fv_status s = userptr ? fv_source_capture(src, cf, &fr)
                              : fv_source_capture_into(src, cf, &slot_in, &fr);
        if (s == FV_ERR_END_OF_STREAM) {
            ended = 1;
            end_reason = fv_last_error()[0] ? "input ended" : "input ended";
            continue;
        }
        if (s == FV_ERR_TIMEOUT || s == FV_ERR_NOT_READY) {
            if (!o->quiet && !o->json) fprintf(stderr, PROG ": input: %s\n", fv_last_error());
            continue;
        }
        if (s != FV_OK) {
            snprintf(err, sizeof err, "input %s: %s", si.name, fv_last_error());
            rc = 1;
            break;
        }
        dropped = fr.dropped;
        if (fv_pipeline_submit(p, &fr.image, fr.timestamp_ns) != FV_OK) {
            snprintf(err, sizeof err, "pipeline: %s", fv_last_error());
            rc = 1;
            break;
        }
        w.frames_in++, t.frames_in++;
        now = now_s();
        if (now - last >= 1.0) {
            if (!o->quiet)
                status_line(o, &w, now - last, dropped, now - t0);
            else
                memset(&w, 0, sizeof w - sizeof w.lat), w.nlat = 0;
            last = now;
        }
    }
    if (stop_requested) end_reason = "interrupted";
    /* drain: frames already submitted still reach the sink */
    fv_pipeline_frame done;
    while (rc == 0 && fv_pipeline_collect(p, 1, &done) == FV_OK) {
        if (fv_sink_write(sink, &done.out, done.user_time_ns) != FV_OK) break;
        fv_pipeline_release(p);
        add_latency(&t, &w, (float)((double)(now_ns() - done.user_time_ns) * 1e-6));
        t.frames_out++;
        t.up += done.upload_ms, t.filt += done.filter_ms, t.down += done.download_ms;
        t.gpu += done.gpu_ms;
    }
    double secs = now_s() - t0;
    long carved_running = carve_outs(ctx) - carved;
    fv_status close_s = fv_sink_close(sink);
    if (close_s != FV_OK && rc == 0) {
        snprintf(err, sizeof err, "finishing %s: %s", ki.name, fv_last_error());
        rc = 1;
    }
    if (err[0]) fprintf(stderr, PROG ": %s\n", err);
    int n = t.nlat_seen < MAX_SAMPLES ? (int)t.nlat_seen : MAX_SAMPLES;
    double p50 = percentile(t.lat, n, 0.5), p99 = percentile(t.lat, n, 0.99);
    long fo = t.frames_out ? t.frames_out : 1;
    if (o->json) {
        printf("{\"type\":\"summary\",\"input\":\"%s\",\"output\":\"%s\",\"device\":\"%s\","
               "\"device_index\":%d,\"backend\":\"%s\",\"filter\":\"%s\",\"path\":\"%s\",\"width\":"
               "%d,\"height\":%d,"
               "\"frames_in\":%ld,\"frames_out\":%ld,\"seconds\":%.3f,\"fps\":%.2f,"
               "\"latency_ms_p50\":%.3f,\"latency_ms_p99\":%.3f,\"upload_ms\":%.4f,"
               "\"filter_ms\":%.4f,\"download_ms\":%.4f,\"gpu_ms\":%.4f,\"dropped\":%llu,"
               "\"slots\":%d,\"cuda_graph\":%d,\"pool_carve_outs_while_running\":%ld,"
               "\"end\":\"%s\",\"ok\":%s}\n",
               si.kind, ki.kind, ci.device_name, ci.device_index, fv_backend_name(ci.backend),
               fv_filter_kind_name(o->filter.kind), fi.path, si.width, si.height, t.frames_in,
               t.frames_out, secs, t.frames_out / secs, p50, p99, t.up / fo, t.filt / fo,
               t.down / fo, t.gpu / fo, (unsigned long long)dropped, pi.slots, pi.cuda_graph,
               carved_running, end_reason, rc == 0 ? "true" : "false");
    } else {
        fprintf(stderr,
                PROG ": %s: %ld frames in, %ld out in %.2f s (%.1f fps); latency p50 %.2f ms, "
                     "p99 %.2f ms; %s ms/frame: upload %.3f, filter %.3f, download %.3f; "
                     "dropped %llu\n",
                end_reason, t.frames_in, t.frames_out, secs, t.frames_out / secs, p50, p99,
                o->stage_clock, t.up / fo, t.filt / fo, t.down / fo, (unsigned long long)dropped);
        if (rc == 0) fprintf(stderr, PROG ": wrote %s %s\n", ki.kind, ki.name);
    }
    fv_pipeline_destroy(p);
    fv_source_close(src); /* before the context: camera buffers may be in its mapped pool */
    fv_context_destroy(ctx);
    return rc;
}

int main(int argc, char **argv) {
    static options o;
    int r = parse(argc, argv, &o);
    if (r == 1) return 0;
    if (r == 2) return 2;
    return run(&o);
}
