/* fv_pipeline: a ring of slots, each FREE -> (input) -> (submit) IN_FLIGHT
 * -> (collect) HELD -> (next collect / release) FREE. On a backend with
 * streams (CUDA), a slot's work is: upload stream [e0 copy e1], compute
 * stream [wait e1, e2 filter e3], download stream [wait e3, copy e4]; under
 * zero copy only the compute part. The CPU backend filters inside submit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fovea/frame.h"
#include "fovea/pipeline.h"
#include "internal.h"

enum { SLOT_FREE, SLOT_FILLING, SLOT_IN_FLIGHT, SLOT_HELD };
enum { EV_UP0, EV_UP1, EV_F0, EV_F1, EV_DOWN1, EV_COUNT };

typedef struct slot {
    int state;
    fv_frame_buffer *in, *out;
    fv_image in_dev, out_dev;   /* device views (the filter's operands) */
    fv_image in_host, out_host; /* host views */
    void *ev[EV_COUNT];
    void *graph; /* the filter on (in_dev, out_dev), or NULL */
    int64_t user_time_ns;
    uint64_t sequence;
    float cpu_ms; /* CPU backend: the filter's wall time */
    int in_place; /* zero copy: the last frame was read from the caller's mapped memory */
} slot;

struct fv_pipeline {
    fv_context *ctx;
    fv_filter *filter;
    fv_pipeline_info info;
    int async;       /* backend has streams and events */
    int zero_copy;   /* no uploads/downloads */
    void *up, *down; /* copy streams (async, not zero copy) */
    slot slots[FV_PIPELINE_MAX_SLOTS];
    int n;
    int next_submit;  /* ring index of the next slot to fill */
    int next_collect; /* ring index of the oldest in flight */
    int held;         /* index of the HELD slot, or -1 */
    uint64_t sequence;
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int out_format_ok(fv_pixel_format f) {
    return f == FV_PIXEL_GRAY8 || f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 ||
           f == FV_PIXEL_RGBA32;
}

static fv_status check_desc(const fv_pipeline_desc *d) {
    const char *op = "pipeline_create";
    FV_REQUIRE(d->filter, FV_ERR_BAD_PARAM, "%s: desc.filter is NULL", op);
    FV_REQUIRE(d->out_format == 0 || out_format_ok(d->out_format), FV_ERR_BAD_PARAM,
               "%s: out_format %s (%d): GRAY8, RGB24, BGR24 or RGBA32 (0: by the filter)", op,
               fv_pixel_format_name(d->out_format), (int)d->out_format);
    FV_REQUIRE(d->slots >= 0 && d->slots <= FV_PIPELINE_MAX_SLOTS, FV_ERR_BAD_PARAM,
               "%s: slots=%d must be 0 (3) or 1..%d", op, d->slots, FV_PIPELINE_MAX_SLOTS);
    FV_REQUIRE(d->cuda_graph == 0 || d->cuda_graph == 1, FV_ERR_BAD_PARAM,
               "%s: cuda_graph=%d must be 0 or 1", op, d->cuda_graph);
    for (int i = 0; i < 8; i++)
        FV_REQUIRE(d->reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: reserved[%d] must be zero", op, i);
    return FV_OK;
}

static fv_status make_slot(fv_pipeline *p, slot *s, const fv_filter_desc *fd, fv_pixel_format of) {
    fv_context *ctx = p->ctx;
    FV_TRY(fv_frame_buffer_create(ctx, fd->format, fd->width, fd->height, &s->in));
    FV_TRY(fv_frame_buffer_create(ctx, of, fd->width, fd->height, &s->out));
    fv_frame_buffer_info ii, oi;
    FV_TRY(fv_frame_buffer_info_get(s->in, &ii));
    FV_TRY(fv_frame_buffer_info_get(s->out, &oi));
    s->in_dev = ii.device, s->out_dev = oi.device;
    s->in_host = ii.host, s->out_host = oi.host;
    if (p->async)
        for (int e = 0; e < EV_COUNT; e++)
            FV_TRY(ctx->be->event_create(ctx, &s->ev[e]));
    return FV_OK;
}

/* Captures the slot's filter work on the context stream into a graph. */
static fv_status capture_slot(fv_pipeline *p, slot *s) {
    fv_context *ctx = p->ctx;
    FV_TRY(ctx->be->graph_begin(ctx));
    fv_status st = fv_filter_apply(p->filter, &s->in_dev, &s->out_dev);
    void *g = NULL;
    fv_status end = ctx->be->graph_end(ctx, &g);
    if (st != FV_OK) {
        if (g) ctx->be->graph_destroy(ctx, g);
        return st;
    }
    FV_TRY(end);
    s->graph = g;
    return FV_OK;
}

fv_status fv_pipeline_create(fv_context *ctx, const fv_pipeline_desc *desc, fv_pipeline **out) {
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_pipeline_create: out is NULL");
    *out = NULL;
    FV_REQUIRE(ctx && desc, FV_ERR_BAD_PARAM, "fv_pipeline_create: %s is NULL",
               ctx ? "desc" : "ctx");
    FV_TRY(check_desc(desc));
    fv_pipeline *p = calloc(1, sizeof *p);
    FV_REQUIRE(p, FV_ERR_OUT_OF_MEMORY, "pipeline_create: out of host memory");
    p->ctx = ctx;
    p->held = -1;
    fv__obj_internal(1);
    fv_status s = fv_filter_create(ctx, desc->filter, &p->filter);
    fv__obj_internal(0);
    if (s != FV_OK) {
        free(p);
        return fv__error_prefix(s, "fv_pipeline_create");
    }
    fv__obj_born(ctx, FV__OBJ_PIPELINE);
    const fv_filter_desc *fd = desc->filter;
    fv_pixel_format in_f = fd->format ? fd->format : FV_PIXEL_RGB24;
    fv_pixel_format of = desc->out_format;
    if (of == 0)
        of = fd->output == FV_FILTER_OUT_GRAY && !fd->overlay ? FV_PIXEL_GRAY8 : FV_PIXEL_RGB24;
    fv_context_info ci;
    (void)fv_context_info_get(ctx, &ci);
    const fv__backend *be = ctx->be;
    p->async = be->stream_create && be->event_create && be->copy2d_on;
    p->zero_copy = ci.memory_policy == FV_MEMORY_POLICY_ZERO_COPY;
    p->n = desc->slots ? desc->slots : 3;
    fv_pipeline_info *in = &p->info;
    in->slots = p->n;
    in->policy = ci.memory_policy;
    in->in_format = in_f, in->out_format = of;
    in->width = fd->width, in->height = fd->height;
    in->in_bytes = fv_image_bytes(in_f, fd->width, fd->height);
    in->out_bytes = fv_image_bytes(of, fd->width, fd->height);
    in->overlapped = p->async && !p->zero_copy;
    fv_filter_desc norm = *fd;
    norm.format = in_f;
    if (p->async && !p->zero_copy) {
        s = be->stream_create(ctx, &p->up);
        if (s == FV_OK) s = be->stream_create(ctx, &p->down);
    }
    fv__obj_internal(1);
    for (int i = 0; s == FV_OK && i < p->n; i++)
        s = make_slot(p, &p->slots[i], &norm, of);
    fv__obj_internal(0);
    if (s == FV_OK && desc->cuda_graph) {
        if (!be->graph_begin) {
            snprintf(in->cuda_graph_why, sizeof in->cuda_graph_why,
                     "the %s backend has no CUDA graphs", be->name);
        } else {
            for (int i = 0; s == FV_OK && i < p->n; i++)
                s = capture_slot(p, &p->slots[i]);
            if (s == FV_OK) in->cuda_graph = 1;
        }
    }
    if (s == FV_OK && p->async) s = be->synchronize(ctx);
    if (s != FV_OK) {
        fv_pipeline_destroy(p);
        return fv__error_prefix(s, "fv_pipeline_create");
    }
    *out = p;
    return FV_OK;
}

void fv_pipeline_destroy(fv_pipeline *p) {
    if (!p) return;
    fv_context *ctx = p->ctx;
    fv__obj_gone(ctx, FV__OBJ_PIPELINE);
    const fv__backend *be = ctx->be;
    if (be->synchronize) (void)be->synchronize(ctx);
    fv__obj_internal(1);
    for (int i = 0; i < p->n; i++) {
        slot *s = &p->slots[i];
        if (s->graph) be->graph_destroy(ctx, s->graph);
        for (int e = 0; e < EV_COUNT; e++)
            if (s->ev[e]) be->event_destroy(ctx, s->ev[e]);
        fv_frame_buffer_destroy(s->in);
        fv_frame_buffer_destroy(s->out);
    }
    if (p->up) be->stream_destroy(ctx, p->up);
    if (p->down) be->stream_destroy(ctx, p->down);
    fv_filter_destroy(p->filter);
    fv__obj_internal(0);
    free(p);
}

fv_status fv_pipeline_input(fv_pipeline *p, fv_image *out) {
    FV_REQUIRE(p && out, FV_ERR_BAD_PARAM, "pipeline_input: %s is NULL", p ? "out" : "p");
    slot *s = &p->slots[p->next_submit];
    if (s->state != SLOT_FREE && s->state != SLOT_FILLING)
        return fv__error(FV_ERR_NOT_READY,
                         "pipeline_input: all %d slots are in flight or held: collect first", p->n);
    s->state = SLOT_FILLING;
    *out = s->in_host;
    return FV_OK;
}

static fv_status check_image(const fv_pipeline *p, const fv_image *in) {
    const fv_pipeline_info *i = &p->info;
    FV_REQUIRE(in->format == i->in_format && in->width == i->width && in->height == i->height,
               FV_ERR_BAD_PARAM, "pipeline_submit: frame %dx%d %s, but the pipeline takes %dx%d %s",
               in->width, in->height, fv_pixel_format_name(in->format), i->width, i->height,
               fv_pixel_format_name(i->in_format));
    FV_REQUIRE(in->data, FV_ERR_BAD_PARAM, "pipeline_submit: frame data is NULL");
    return FV_OK;
}

/* Host rows of src into the slot's host input (NV12: both planes). */
static void copy_host(const fv_image *src, const fv_image *dst) {
    size_t row = fv_image_bytes(src->format, src->width, 1);
    int nv12 = src->format == FV_PIXEL_NV12;
    if (nv12) row = (size_t)src->width;
    size_t stride = src->stride ? src->stride : row;
    for (int y = 0; y < src->height; y++)
        memcpy((char *)dst->data + (size_t)y * row, (const char *)src->data + (size_t)y * stride,
               row);
    if (nv12) {
        const char *uv = src->uv ? src->uv : (const char *)src->data + stride * src->height;
        size_t uvs = src->uv_stride ? src->uv_stride : stride;
        char *duv = (char *)dst->data + row * src->height;
        for (int y = 0; y < src->height / 2; y++)
            memcpy(duv + (size_t)y * row, uv + (size_t)y * uvs, row);
    }
}

/* Queues in (host) -> slot's device input on the upload stream. */
static fv_status upload(fv_pipeline *p, slot *s, const fv_image *in) {
    fv_context *ctx = p->ctx;
    const fv__backend *be = ctx->be;
    int nv12 = in->format == FV_PIXEL_NV12;
    size_t row = nv12 ? (size_t)in->width : fv_image_bytes(in->format, in->width, 1);
    size_t stride = in->stride ? in->stride : row;
    FV_TRY(
        be->copy2d_on(ctx, p->up, s->in_dev.data, row, in->data, stride, row, (size_t)in->height));
    if (nv12) {
        const char *uv = in->uv ? in->uv : (const char *)in->data + stride * in->height;
        size_t uvs = in->uv_stride ? in->uv_stride : stride;
        FV_TRY(be->copy2d_on(ctx, p->up, (char *)s->in_dev.data + row * in->height, row, uv, uvs,
                             row, (size_t)in->height / 2));
    }
    return FV_OK;
}

/* Under zero copy: the device view of a caller frame that lies wholly in the
 * context's MAPPED pool (e.g. V4L2 user-pointer buffers carved from it), so
 * the GPU reads it in place; 0 when it does not. */
static int mapped_view(fv_pipeline *p, const fv_image *in, fv_image *dev) {
    const fv_pool *pool = p->ctx->pools[FV_POOL_MAPPED];
    if (!pool) return 0;
    const unsigned char *a = in->data, *end = pool->base + pool->capacity;
    size_t stride = in->stride ? in->stride : fv_image_bytes(in->format, in->width, 1);
    if (in->format == FV_PIXEL_NV12) stride = in->stride ? in->stride : (size_t)in->width;
    size_t rows = (size_t)in->height;
    if (a < pool->base || a >= end || (size_t)(end - a) < stride * rows) return 0;
    *dev = *in;
    dev->data = fv_pool_device_pointer(pool, in->data);
    if (in->format == FV_PIXEL_NV12) {
        const unsigned char *uv = in->uv ? in->uv : a + stride * rows;
        size_t uvs = in->uv_stride ? in->uv_stride : stride;
        if (uv < pool->base || uv >= end || (size_t)(end - uv) < uvs * (rows / 2)) return 0;
        dev->uv = fv_pool_device_pointer(pool, (void *)uv);
        dev->uv_stride = uvs;
    }
    dev->stride = stride;
    return 1;
}

static fv_status submit_async(fv_pipeline *p, slot *s, const fv_image *in) {
    fv_context *ctx = p->ctx;
    const fv__backend *be = ctx->be;
    fv_image direct;
    if (p->zero_copy && in->data != s->in_host.data && mapped_view(p, in, &direct)) {
        /* a caller frame in mapped memory: no copy at all, the filter reads
         * it in place (not through the slot's graph, made for its buffer) */
        s->in_place = 1;
        FV_TRY(be->event_record(ctx, s->ev[EV_F0], NULL));
        FV_TRY(fv_filter_apply(p->filter, &direct, &s->out_dev));
        FV_TRY(be->event_record(ctx, s->ev[EV_F1], NULL));
        return FV_OK;
    }
    s->in_place = 0;
    if (!p->zero_copy) {
        FV_TRY(be->event_record(ctx, s->ev[EV_UP0], p->up));
        FV_TRY(upload(p, s, in));
        FV_TRY(be->event_record(ctx, s->ev[EV_UP1], p->up));
        FV_TRY(be->stream_wait(ctx, NULL, s->ev[EV_UP1]));
    } else if (in->data != s->in_host.data) {
        copy_host(in, &s->in_host); /* mapped memory: the GPU reads it in place */
    }
    FV_TRY(be->event_record(ctx, s->ev[EV_F0], NULL));
    if (s->graph)
        FV_TRY(be->graph_launch(ctx, s->graph));
    else
        FV_TRY(fv_filter_apply(p->filter, &s->in_dev, &s->out_dev));
    FV_TRY(be->event_record(ctx, s->ev[EV_F1], NULL));
    if (!p->zero_copy) {
        FV_TRY(be->stream_wait(ctx, p->down, s->ev[EV_F1]));
        size_t bytes = p->info.out_bytes;
        FV_TRY(
            be->copy2d_on(ctx, p->down, s->out_host.data, bytes, s->out_dev.data, bytes, bytes, 1));
        FV_TRY(be->event_record(ctx, s->ev[EV_DOWN1], p->down));
    }
    return FV_OK;
}

fv_status fv_pipeline_submit(fv_pipeline *p, const fv_image *in, int64_t user_time_ns) {
    FV_REQUIRE(p && in, FV_ERR_BAD_PARAM, "pipeline_submit: %s is NULL", p ? "in" : "p");
    FV_TRY(check_image(p, in));
    slot *s = &p->slots[p->next_submit];
    if (s->state != SLOT_FREE && s->state != SLOT_FILLING)
        return fv__error(FV_ERR_NOT_READY,
                         "pipeline_submit: all %d slots are in flight or held: collect first",
                         p->n);
    if (p->async) {
        fv_status st = submit_async(p, s, in);
        if (st != FV_OK) return fv__error_prefix(st, "fv_pipeline_submit");
    } else {
        /* host memory is the CPU backend's own: filter straight from the
         * caller's frame into the slot's host output */
        double t0 = now_ms();
        fv_status st = fv_filter_apply(p->filter, in, &s->out_host);
        if (st != FV_OK) return fv__error_prefix(st, "fv_pipeline_submit");
        s->cpu_ms = (float)(now_ms() - t0);
    }
    s->state = SLOT_IN_FLIGHT;
    s->user_time_ns = user_time_ns;
    s->sequence = p->sequence++;
    p->next_submit = (p->next_submit + 1) % p->n;
    p->info.in_flight++;
    return FV_OK;
}

void fv_pipeline_release(fv_pipeline *p) {
    if (!p || p->held < 0) return;
    p->slots[p->held].state = SLOT_FREE;
    p->held = -1;
}

static void timings(fv_pipeline *p, slot *s, fv_pipeline_frame *f) {
    fv_context *ctx = p->ctx;
    const fv__backend *be = ctx->be;
    if (!p->async) {
        f->filter_ms = f->gpu_ms = s->cpu_ms;
        return;
    }
    (void)be->event_elapsed(ctx, s->ev[EV_F0], s->ev[EV_F1], &f->filter_ms);
    if (p->zero_copy) {
        f->gpu_ms = f->filter_ms;
        return;
    }
    (void)be->event_elapsed(ctx, s->ev[EV_UP0], s->ev[EV_UP1], &f->upload_ms);
    (void)be->event_elapsed(ctx, s->ev[EV_UP0], s->ev[EV_DOWN1], &f->gpu_ms);
    /* from the filter's end: includes waiting for the download stream */
    (void)be->event_elapsed(ctx, s->ev[EV_F1], s->ev[EV_DOWN1], &f->download_ms);
}

fv_status fv_pipeline_collect(fv_pipeline *p, int wait, fv_pipeline_frame *out) {
    FV_REQUIRE(p && out, FV_ERR_BAD_PARAM, "pipeline_collect: %s is NULL", p ? "out" : "p");
    FV_REQUIRE(wait == 0 || wait == 1, FV_ERR_BAD_PARAM, "pipeline_collect: wait=%d (0 or 1)",
               wait);
    if (p->info.in_flight == 0)
        return fv__error(FV_ERR_NOT_READY, "pipeline_collect: no frame in flight");
    slot *s = &p->slots[p->next_collect];
    if (p->async) {
        fv_context *ctx = p->ctx;
        void *last = p->zero_copy ? s->ev[EV_F1] : s->ev[EV_DOWN1];
        fv_status st = ctx->be->event_done(ctx, last, wait);
        if (st == FV_ERR_NOT_READY) return st; /* not an error worth a message */
        if (st != FV_OK) return fv__error_prefix(st, "fv_pipeline_collect");
    }
    fv_pipeline_release(p);
    memset(out, 0, sizeof *out);
    out->out = s->out_host;
    out->user_time_ns = s->user_time_ns;
    out->sequence = s->sequence;
    out->in_place = s->in_place;
    timings(p, s, out);
    s->state = SLOT_HELD;
    p->held = p->next_collect;
    p->next_collect = (p->next_collect + 1) % p->n;
    p->info.in_flight--;
    return FV_OK;
}

fv_status fv_pipeline_info_get(const fv_pipeline *p, fv_pipeline_info *out) {
    FV_REQUIRE(p && out, FV_ERR_BAD_PARAM, "pipeline_info_get: %s is NULL", p ? "out" : "p");
    *out = p->info;
    return FV_OK;
}

const fv_filter *fv_pipeline_filter(const fv_pipeline *p) {
    return p ? p->filter : NULL;
}
