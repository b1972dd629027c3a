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
 * The CPU backend runs the same calls; its filter runs inside submit. */
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

/* What fv_pipeline_create plans; zero fields mean their defaults. */
typedef struct fv_pipeline_desc {
    /* The filter every frame goes through; required. Copied: the caller may
     * free it (and its kernel) after the call. Its width, height and format
     * are the frames'. */
    const fv_filter_desc *filter;
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
    fv_image out;         /* host pixels (out_format); valid until the next
                             collect, or fv_pipeline_release */
    int64_t user_time_ns; /* as given to submit (e.g. the capture time) */
    uint64_t sequence;    /* 0, 1, 2, ... in submit order */
    /* GPU time per stage from events (CUDA), or wall time (CPU): copy in,
     * the filter, copy out. Zero-copy (integrated GPU): upload and download
     * are 0. gpu_ms: first event to last, including waits between stages. */
    float upload_ms, filter_ms, download_ms, gpu_ms;
    int in_place;         /* 1: read from the caller's mapped memory with no copy */
    uint32_t reserved[3]; /* reserved for growth */
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
    uint32_t reserved[8];                  /* reserved for growth */
} fv_pipeline_info;

/* Plans the filter and every slot. Returns FV_ERR_BAD_PARAM (desc),
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

/* The oldest submitted frame, once its work has finished. wait 1 blocks
 * until it has; wait 0 returns FV_ERR_NOT_READY if it has not. Returns
 * FV_ERR_NOT_READY (wait 0 or 1) when nothing is in flight. The previous
 * collected frame's slot is freed by this call. */
fv_status fv_pipeline_collect(fv_pipeline *p, int wait, fv_pipeline_frame *out);

/* Frees the last collected frame's slot without collecting another. */
void fv_pipeline_release(fv_pipeline *p);

/* Fills *out. FV_ERR_BAD_PARAM for NULL. */
fv_status fv_pipeline_info_get(const fv_pipeline *p, fv_pipeline_info *out);

/* The pipeline's filter (for fv_filter_info_get), owned by the pipeline. */
const fv_filter *fv_pipeline_filter(const fv_pipeline *p);

#ifdef __cplusplus
}
#endif
#endif
