/* fovea: a ring of frames in flight through a filter.
 *
 * Each slot owns its frame buffers (pinned host + device memory on a
 * discrete GPU, one mapped buffer on an integrated one: see frame.h) and
 * its events. On CUDA, frame n+1's upload, frame n's filter and frame n-1's
 * download overlap: uploads on one copy stream, the filter on the context's
 * stream, downloads on another copy stream, ordered by events. Optionally
 * each slot's filter work is captured once into a CUDA graph and replayed.
 * After creation nothing allocates: submit and collect only queue work,
 * query events and copy pixels.
 *
 *   fv_pipeline_create(ctx, &(fv_pipeline_desc){.filter = &fd}, &p);
 *   loop:
 *     fv_image in;                               // or your own host frame
 *     if (fv_pipeline_input(p, &in) == FV_OK) {  // a free slot's buffer
 *         ...write a frame into in.data...
 *         fv_pipeline_submit(p, &in, capture_ns);
 *     }
 *     fv_pipeline_frame done;
 *     while (fv_pipeline_collect(p, 0, &done) == FV_OK) show(done.out);
 *
 * The CPU backend runs the same calls; its filter runs inside submit.
 *
 * A general stage instead of the filter (a net with its pre- and
 * post-processing, say): the caller gives a function that queues one
 * slot's work on the context's stream, from several input frames (the
 * cameras of a batch) to several output frames, and the pipeline runs it
 * in the same ring, with the same overlap and, asked for, each slot's call
 * captured once into a CUDA graph:
 *   fv_pipeline_port cams[2] = {{FV_PIXEL_RGB24, 1920, 1080}, {FV_PIXEL_NV12, 1280, 720}};
 *   fv_pipeline_stage st = {.run = my_stage, .user = me, .inputs = 2, .input = cams,
 *                           .outputs = 2, .output = overlays, .marks = 2};
 *   fv_pipeline_create(ctx, &(fv_pipeline_desc){.stage = &st, .cuda_graph = 1}, &p);
 *   loop:
 *     const fv_image *frames[2] = {&cam0_frame, NULL};  // NULL: no new frame
 *     fv_pipeline_submit_ports(p, frames, 2, t);
 *     if (fv_pipeline_collect(p, 0, &done) == FV_OK)
 *         fv_pipeline_output(p, 0, &overlay0), fv_pipeline_mark_ms(p, 1, &ms);
 * where my_stage(p, me, slot, in, out) calls fovea's ops on in[0..1] (device
 * views) and writes out[0..1], with fv_pipeline_mark(p, k) between its
 * parts to time them. */
#ifndef FOVEA_PIPELINE_H
#define FOVEA_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/context.h"
#include "fovea/filter.h"
#include "fovea/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A ring of frames in flight through a filter: upload, filter and download overlap. Opaque. */
typedef struct fv_pipeline fv_pipeline;

/* Most slots a pipeline can have. */
#define FV_PIPELINE_MAX_SLOTS 16

/* Most inputs, and most outputs, of a general stage. */
#define FV_PIPELINE_MAX_PORTS 16
/* Most timing marks a general stage records per run. */
#define FV_PIPELINE_MAX_MARKS 8

/* One input or output frame of a general stage: each slot has a buffer of
 * this format and size for it (host and device, or mapped). */
typedef struct fv_pipeline_port {
    fv_pixel_format format; /* any format fv_frame_buffer_create takes */
    int width, height;      /* pixels, >= 1 */
    uint32_t reserved[2];   /* must be zero */
} fv_pipeline_port;

/* A general stage's work for one slot of pipeline p (for fv_pipeline_mark;
 * called during fv_pipeline_create too). in[0..inputs-1] and
 * out[0..outputs-1] are the slot's frames as the compute side sees them
 * (device views on CUDA; host on the CPU backend, where in[k] may be the
 * caller's own frame). slot (0..slots-1) lets the stage keep per-slot state
 * (e.g. one result buffer a slot). It queues its work on the context's
 * stream and returns its status; it must not synchronize, allocate or read
 * results on the host (with cuda_graph it runs once a slot at creation,
 * inside a capture, and the graph is replayed after). */
typedef fv_status (*fv_pipeline_stage_fn)(fv_pipeline *p, void *user, int slot, const fv_image *in,
                                          const fv_image *out);

/* A general stage (fv_pipeline_desc.stage). */
typedef struct fv_pipeline_stage {
    fv_pipeline_stage_fn run; /* required */
    void *user;               /* passed to run */
    int inputs;               /* 1..FV_PIPELINE_MAX_PORTS */
    int outputs;              /* 0..FV_PIPELINE_MAX_PORTS */
    /* inputs (outputs) ports; copied at create */
    const fv_pipeline_port *input, *output;
    int marks;            /* fv_pipeline_mark calls per run, 0..FV_PIPELINE_MAX_MARKS */
    const char *name;     /* for messages; NULL means "stage" */
    uint32_t reserved[4]; /* must be zero */
} fv_pipeline_stage;

/* What fv_pipeline_create plans; zero fields mean their defaults. */
typedef struct fv_pipeline_desc {
    /* The filter every frame goes through; give it or stage, not both.
     * Copied: the caller may free it (and its kernel) after the call. Its
     * width, height and format are the frames'. */
    const fv_filter_desc *filter;
    /* A general stage instead of the filter; copied (not what user points
     * to: that must outlive the pipeline). */
    const fv_pipeline_stage *stage;
    /* Output pixels: GRAY8, RGB24, BGR24 or RGBA32; 0 means GRAY8 for a grey
     * filter without overlay, else RGB24. */
    fv_pixel_format out_format;
    int slots;            /* frames in flight, 1..FV_PIPELINE_MAX_SLOTS; 0 means 3 */
    int cuda_graph;       /* 1: capture each slot's filter work in a CUDA graph at
                             creation and replay it (CUDA backend; ignored on CPU,
                             with info.cuda_graph 0 and the reason) */
    uint32_t reserved[8]; /* must be zero */
} fv_pipeline_desc;

/* A finished frame, from fv_pipeline_collect. */
typedef struct fv_pipeline_frame {
    fv_image out;         /* host pixels (out_format; output 0 of a stage, zero
                             when it has none); valid until the next collect,
                             or fv_pipeline_release */
    int64_t user_time_ns; /* as given to submit (e.g. the capture time) */
    uint64_t sequence;    /* 0, 1, 2, ... in submit order */
    /* GPU time per stage from events (CUDA), or wall time (CPU): copy in,
     * the filter (or general stage), copy out. Zero-copy (integrated GPU): upload and download
     * are 0. gpu_ms: first event to last, including waits between stages. */
    float upload_ms, filter_ms, download_ms, gpu_ms;
    int in_place;         /* 1: read from the caller's mapped memory with no copy */
    int slot;             /* the slot it ran in (a general stage's slot argument) */
    uint32_t reserved[2]; /* reserved for growth */
} fv_pipeline_frame;

/* What a pipeline runs with, as fv_pipeline_info_get gives it. */
typedef struct fv_pipeline_info {
    int slots;                             /* frames in flight */
    int in_flight;                         /* submitted, not yet collected */
    int cuda_graph;                        /* 1 if slots replay CUDA graphs */
    char cuda_graph_why[128];              /* why not, when asked for and off */
    fv_memory_policy policy;               /* ZERO_COPY: no copies at all */
    fv_pixel_format in_format, out_format; /* frames in, frames out */
    int width, height;                     /* of the frames */
    size_t in_bytes, out_bytes;            /* per frame */
    int overlapped;                        /* 1: copies and filter on separate streams */
    int inputs, outputs;                   /* frames a slot takes and gives (filter: 1, 1) */
    uint32_t reserved[6];                  /* reserved for growth */
} fv_pipeline_info;

/* Plans the filter (or the stage) and every slot. With a stage, in_format,
 * out_format, width, height, in_bytes and out_bytes of the info describe
 * input 0 and output 0. Returns FV_ERR_BAD_PARAM (desc),
 * FV_ERR_OUT_OF_MEMORY (pools too small: the message names the pool), the
 * filter's errors, or FV_ERR_CUDA from stream/event/graph set-up. */
fv_status fv_pipeline_create(fv_context *ctx, const fv_pipeline_desc *desc, fv_pipeline **out);

/* Waits for queued work, then frees everything. NULL allowed. Destroy it before its context
 * (fv_context_destroy refuses while it lives). */
void fv_pipeline_destroy(fv_pipeline *p);

/* The next free slot's input buffer (host memory the GPU reads: pinned, or
 * mapped and read with no copy on integrated GPUs), to write one frame of
 * the filter's format into and then pass to fv_pipeline_submit. Asking
 * twice without a submit gives the same buffer. FV_ERR_NOT_READY when every
 * slot is in flight or held: collect first. */
fv_status fv_pipeline_input(fv_pipeline *p, fv_image *out);

/* Queues one frame: in is either the buffer from fv_pipeline_input or any
 * host image of the filter's size and format (any stride), which is copied
 * into the slot (asynchronously from pinned memory; the caller must leave
 * the pixels alone until this frame is collected). Under the ZERO_COPY
 * memory policy (integrated GPUs) a frame that lies in the context's MAPPED
 * pool (e.g. V4L2 user-pointer buffers carved from it) is not copied at
 * all: the filter reads it in place (frame.in_place). user_time_ns is returned
 * with the frame. Returns FV_ERR_NOT_READY when every slot is busy,
 * FV_ERR_BAD_PARAM for a wrong image, or a backend error. */
fv_status fv_pipeline_submit(fv_pipeline *p, const fv_image *in, int64_t user_time_ns);

/* Queues one run of a general stage: in[k] (count == the stage's inputs)
 * is input k's new frame, any host image of port k's size and format,
 * copied into the slot as fv_pipeline_submit copies (the caller leaves its
 * pixels alone until this run is collected), or NULL: no new frame for
 * input k, and the stage sees what the slot's buffer last held (unspecified
 * pixels before its first frame). A filter pipeline takes count 1. Returns
 * as fv_pipeline_submit; FV_ERR_BAD_PARAM also when every in[k] is NULL. */
fv_status fv_pipeline_submit_ports(fv_pipeline *p, const fv_image *const *in, int count,
                                   int64_t user_time_ns);

/* Called by a general stage's run, between its parts: records timing mark
 * k (0..marks-1) of the slot being run (an event on the context's stream;
 * wall time on the CPU backend). FV_ERR_BAD_STATE outside a stage's run,
 * FV_ERR_BAD_PARAM for k out of range. */
fv_status fv_pipeline_mark(fv_pipeline *p, int k);

/* Of the last collected run: *ms from the stage's start to its mark k
 * (0..marks-1), or to its end for k == marks. FV_ERR_BAD_STATE when
 * nothing is collected, FV_ERR_BAD_PARAM for k out of range, a backend
 * error when the time is not known (e.g. a run read in place). */
fv_status fv_pipeline_mark_ms(const fv_pipeline *p, int k, float *ms);

/* Output k (0..outputs-1) of the last collected run: host pixels, valid
 * until the next collect or fv_pipeline_release. A filter pipeline's output
 * 0 is fv_pipeline_frame.out. FV_ERR_BAD_STATE when nothing is collected,
 * FV_ERR_BAD_PARAM for k out of range. */
fv_status fv_pipeline_output(const fv_pipeline *p, int k, fv_image *out);

/* The oldest submitted frame, once its work has finished. wait 1 blocks
 * until it has; wait 0 returns FV_ERR_NOT_READY if it has not. Returns
 * FV_ERR_NOT_READY (wait 0 or 1) when nothing is in flight. The previous
 * collected frame's slot is freed by this call. */
fv_status fv_pipeline_collect(fv_pipeline *p, int wait, fv_pipeline_frame *out);

/* Frees the last collected frame's slot without collecting another. */
void fv_pipeline_release(fv_pipeline *p);

/* Fills *out. FV_ERR_BAD_PARAM for NULL. */
fv_status fv_pipeline_info_get(const fv_pipeline *p, fv_pipeline_info *out);

/* The pipeline's filter (for fv_filter_info_get), owned by the pipeline;
 * NULL for a general stage. */
const fv_filter *fv_pipeline_filter(const fv_pipeline *p);

#ifdef __cplusplus
}
#endif
#endif
