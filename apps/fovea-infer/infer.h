/* fovea-infer: shared declarations of the program's parts.
 *   main.c     options and set-up
 *   loop.c     the tick loop: newest frames -> one batch -> results -> sinks
 *   capture.c  one capture thread per input: the newest frame of each camera
 *              in a small mailbox of frame buffers
 *   model.c    the model (ONNX importer), its task, labels and ops
 *   report.c   status lines, JSON and the summary */
#ifndef FOVEA_INFER_H
#define FOVEA_INFER_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include "fovea/fovea.h"
#include "fovea/platform/sink.h"
#include "fovea/platform/source.h"

#define PROG        "fovea-infer"
#define MAX_CAMERAS 16
#define SLOTS       3           /* ticks in flight: uploads of n+1, GPU work of n, results of n-1 */
#define MAILBOX     (SLOTS + 2) /* frame buffers per camera: held by slots, ready, being written */
#define MAX_LABELS  4096

typedef enum infer_task { TASK_AUTO = 0, TASK_CLASSIFY = 1, TASK_SEGMENT = 2 } infer_task;

typedef struct options {
    const char *model;
    int model_given;
    infer_task task;
    const char *labels;
    float mean[3], std[3];
    int mean_n, std_n, norm_given;
    int in_w, in_h; /* --input-size, 0: the model's */
    int batch;      /* 0: the number of inputs */
    const char *inputs[MAX_CAMERAS];
    int ninputs;
    const char *outputs[MAX_CAMERAS];
    int noutputs;
    int width, height; /* requested camera size, 0: the source's */
    double rate;
    fv_pixel_format in_format;
    fv_backend backend;
    int device, device_given; /* CUDA device index; given: --device was passed */
    /* --device LIST: the inputs spread over these devices (input i on
     * devices[i % ndevices]), a worker each (context, model, batch, thread);
     * ndevices 1: one device, as before */
    int devices[MAX_CAMERAS], ndevices;
    int device_all; /* --device all: every CUDA device (at most one an input), set in parse */
    /* a worker's view (set by the spreading run): its inputs' numbers on
     * the command line (cam_id[i] for its input i) and a prefix for its
     * status lines and summary ("" when not spread) */
    int cam_id[MAX_CAMERAS];
    const char *tag;
    fv_memory_policy memory; /* --memory: where frames live (AUTO: the context's choice) */
    fv_resize_fit fit;
    int top;       /* classes shown per camera */
    float alpha;   /* segmentation overlay opacity */
    int mask_only; /* segmentation: the colours alone */
    long frames;   /* ticks; 0: until the inputs end */
    double duration;
    int stall_ms; /* a camera without a frame this long is reported stalled */
    int wait_ms;  /* longest a tick waits for the slower cameras */
    int sync;     /* every tick waits for every live camera (not stalled) */
    int loop, reconnect, json, quiet, cuda_graph;
    int low_latency;   /* one tick in flight: each finishes before the next is gathered */
    int keep_awake_ms; /* --keep-awake: a small copy and kernel this often while waiting (0: off) */
    const char *profile;
    int bitrate;
} options;

/* ---- capture.c ------------------------------------------------------------------ */
enum { BUF_FREE, BUF_WRITING, BUF_READY, BUF_HELD };

/* One worker's cameras and tick loop: the lock over their mailboxes, the
 * signal of a new or taken frame, and the stop flag of their threads. Each
 * worker of a spreading run has its own, so a worker that ends stops its
 * own capture threads only (one process-wide flag once stopped the
 * others': a worker done first left the rest waiting for frames). */
typedef struct capture_group {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int stopping;
} capture_group;

typedef struct camera {
    int index; /* batch item */
    const char *uri;
    fv_source *src;
    fv_source_info info;
    fv_frame_buffer *buf[MAILBOX];
    fv_image host[MAILBOX], dev[MAILBOX]; /* views of buf */
    size_t bytes;
    int lossless; /* a file: every frame is taken (the thread waits), none dropped */
    /* shared with the capture thread, under capture_lock */
    int state[MAILBOX];
    int64_t ts[MAILBOX];
    int ready;  /* newest READY buffer, or -1 */
    int ended;  /* the thread stopped: end of stream or an error */
    int failed; /* ended by an error (not a plain end of stream) */
    char end_msg[256];
    int64_t last_ns;   /* when the last frame arrived (or the thread started) */
    int64_t period_ns; /* between frames, averaged; 0 until two have come */
    uint64_t captured, overwritten, source_dropped;
    int waiting; /* reconnect: the camera is gone and waited for */
    /* main thread */
    int stalled;
    pthread_t thread;
    int started;
    capture_group *grp; /* its worker's (set by capture_start) */
    fv_sink *sink;
    fv_sink_info sink_info;
} camera;

/* Opens the source of c->uri (the options' size, rate, format, loop,
 * reconnect) and fills c->info. 0, or -1 after printing why. */
int capture_open(const options *o, camera *c, fv_log_fn log, void *log_user);
/* Makes the camera's mailbox of frame buffers on ctx. 0, or -1 after printing why. */
int capture_buffers(camera *c, fv_context *ctx);
/* A worker's group: 0, or -1 (no lock could be made). */
int capture_group_init(capture_group *g);
void capture_group_destroy(capture_group *g);
/* Starts the capture threads of cams[0..n-1], in group g. 0, or -1 after
 * printing why. */
int capture_start(capture_group *g, camera *cams, int n);
/* Asks the threads of g to stop and joins those of cams[0..n-1]. */
void capture_stop(capture_group *g, camera *cams, int n);
/* Frees what capture_open and capture_buffers made (after capture_stop). */
void capture_close(camera *c);

/* Under g's lock (the worker's tick loop). */
void capture_lock(capture_group *g);
void capture_unlock(capture_group *g);
/* Wakes g's capture threads (locked; after frames were taken). */
void capture_signal(capture_group *g);
/* Waits (locked) until a frame of g arrives or the time passes; 0 on timeout. */
int capture_wait(capture_group *g, int ms);
int64_t now_ns(void);

/* Input i's number on the command line (differs from i in a worker of a
 * spreading run). */
static inline int cam_no(const options *o, int i) {
    return o->ndevices > 1 ? o->cam_id[i] : i;
}

/* ---- model.c ---------------------------------------------------------------------- */
typedef struct model {
    fv_net *net;
    infer_task task;
    int n, c, h, w;     /* the input */
    int on, oc, oh, ow; /* output 0 */
    char labels[MAX_LABELS][48];
    int nlabels;
    fv_classify *top[SLOTS];
    fv_segment *seg;
    size_t weight_bytes;
    char desc[256]; /* one line: layers, sizes */
} model;

/* The default model and labels (the repository's Fashion-MNIST net). */
const char *model_default_path(void);
/* Loads o->model with batch b on ctx, decides the task, reads labels and
 * makes the post-processing ops. 0, or -1 after printing why. */
int model_load(const options *o, int batch, fv_context *ctx, model *m);
void model_free(model *m);
/* Class k's name. */
const char *model_label(const model *m, int k);

/* ---- loop.c ------------------------------------------------------------------------ */
typedef struct app {
    const options *o;
    fv_context *ctx;
    fv_context_info ci;
    model *m;
    camera *cams;
    int n;
    capture_group *grp; /* the cameras' (capture.c) */
    fv_preprocess_desc pd;
    fv_region region[MAX_CAMERAS]; /* of the net input each camera's frame fills */
    /* The ring: one input per camera (its frames, uploaded from the
     * mailbox), one output per camera with a converted frame (port[i], or
     * -1): segmentation overlays, or (classification of a YUV camera) its
     * frame converted to RGB24 through conv[i]; the stage is pre-processing,
     * the net and post-processing (loop.c) */
    fv_pipeline *pipe;
    fv_pipeline_info pinfo;
    int port[MAX_CAMERAS], nports;
    fv_tensor *conv[MAX_CAMERAS];
    /* ticks in flight: slot s = tick % SLOTS, collected in order */
    int busy[SLOTS], inflight;
    int taken[SLOTS][MAX_CAMERAS], held[SLOTS][MAX_CAMERAS];
    int64_t ts[SLOTS][MAX_CAMERAS];
    struct stats *st;
    /* --keep-awake: a pinned host block copied into awake[0], then
     * awake[2] = awake[0] + awake[1], while no frame is waiting */
    fv_tensor *awake[3];
    void *awake_host;
    size_t awake_bytes;
} app;

/* Makes a->pipe: the cameras' ports, a->port/nports, the stage (with the
 * options' CUDA graph). 0, or -1 after printing why. */
int loop_pipeline(app *a);
/* --keep-awake on a CUDA context: the tensors and the pinned block it
 * uses (set-up). 0, or -1 after printing why. */
int loop_keep_awake_init(app *a);
void loop_keep_awake_free(app *a);
/* Runs ticks until the frames, the duration, the inputs or a signal end
 * them. *end says why; returns 0, or 1 after printing an error. */
int loop_run(app *a, atomic_int *stop, const char **end);

/* ---- report.c --------------------------------------------------------------------- */
#define LAT_SAMPLES 65536
#define LAT_WARMUP  8 /* frames, of all cameras, before latencies count */

typedef struct cam_stats {
    long frames, window_frames;
    fv_class_score top[FV_CLASSIFY_MAX_K];
    int have_top;
} cam_stats;

typedef struct stats stats;
struct stats {
    long ticks, window_ticks;
    double stage[5], window_stage[5]; /* ms sums: upload, pre, net, post, download */
    float lat[LAT_SAMPLES], wlat[LAT_SAMPLES];
    /* each tick's GPU time, first event to last (the same warm-up left
     * out): beside the latency, it says whether a slow tick was the GPU's */
    float gpu[LAT_SAMPLES];
    long ngpu;
    long nlat, nwlat;
    /* the first LAT_WARMUP frames (first engine and graph launches, clocks
     * rising): kept out of the percentiles unless nothing else came */
    float warm[8];
    long nwarm;
    uint64_t rng;
    long awake_runs; /* --keep-awake copies and kernels queued */
    cam_stats cam[MAX_CAMERAS];
};

void stats_latency(stats *s, float ms);
void stats_gpu(stats *s, float ms);
/* One status line (text to stderr, or a JSON object to stdout) over the
 * window since the last one, which is then reset. */
void report_status(const options *o, const model *m, capture_group *g, camera *cams, int n,
                   stats *s, double secs, double t);
/* The summary at the end. */
void report_summary(const options *o, const model *m, camera *cams, int n, stats *s, double secs,
                    const char *end, int ok, const fv_context_info *ci, long allocs);
/* Writes s as a JSON string (quotes and escapes). */
void json_string(FILE *f, const char *s);

#endif
