/* fv_pipeline: a ring of slots, each FREE -> (input) -> (submit) IN_FLIGHT
 * -> (collect) HELD -> (next collect / release) FREE. On a backend with
 * streams (CUDA), a slot's work is: upload stream [e0 copies e1], compute
 * stream [wait e1, e2 stage e3], download stream [wait e3, copies e4];
 * under zero copy only the compute part. The CPU backend runs the stage
 * inside submit. The filter of fv_pipeline_desc.filter is a stage like any
 * other (one input, one output); a general stage has up to
 * FV_PIPELINE_MAX_PORTS of each, and timing marks between its parts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fovea/frame.h"
#include "fovea/pipeline.h"
#include "internal.h"

enum { SLOT_FREE, SLOT_FILLING, SLOT_IN_FLIGHT, SLOT_HELD };
enum { EV_UP0, EV_UP1, EV_F0, EV_F1, EV_DOWN1, EV_COUNT };
#define MAX_PORTS FV_PIPELINE_MAX_PORTS
#define MAX_MARKS FV_PIPELINE_MAX_MARKS

typedef struct slot {
    int state;
    fv_frame_buffer *in[MAX_PORTS], *out[MAX_PORTS];
    fv_image in_dev[MAX_PORTS], out_dev[MAX_PORTS];   /* device views (the stage's operands) */
    fv_image in_host[MAX_PORTS], out_host[MAX_PORTS]; /* host views */
    void *ev[EV_COUNT];
    void *mark_ev[MAX_MARKS];
    double mark_wall[MAX_MARKS + 1]; /* CPU backend: ms after the start; [marks]: the end */
    void *graph;                     /* the stage on the slot's buffers, or NULL */
    int64_t user_time_ns;
    uint64_t sequence;
    float cpu_ms; /* CPU backend: the stage's wall time */
    int in_place; /* zero copy: the last run read a caller frame in place */
} slot;

struct fv_pipeline {
    fv_context *ctx;
    fv_filter *filter; /* the filter stage's, or NULL */
    fv_pipeline_stage stage;
    fv_pipeline_port in_port[MAX_PORTS], out_port[MAX_PORTS];
    char name[64];
    fv_pipeline_info info;
    int async;       /* backend has streams and events */
    int zero_copy;   /* no uploads/downloads */
    void *up, *down; /* copy streams (async, not zero copy) */
    slot slots[FV_PIPELINE_MAX_SLOTS];
    int n;
    int next_submit;  /* ring index of the next slot to fill */
    int next_collect; /* ring index of the oldest in flight */
    int held;         /* index of the HELD slot, or -1 */
    int running;      /* index of the slot whose stage runs now, or -1 */
    double run_t0;    /* CPU backend: when the running stage started */
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

static fv_status check_ports(const char *op, const char *what, const fv_pipeline_port *p, int n) {
    FV_REQUIRE(n == 0 || p, FV_ERR_BAD_PARAM, "%s: stage.%s is NULL for %d ports", op, what, n);
    for (int k = 0; k < n; k++) {
        FV_REQUIRE(p[k].width >= 1 && p[k].height >= 1, FV_ERR_BAD_PARAM,
                   "%s: stage.%s[%d] is %dx%d (>= 1x1)", op, what, k, p[k].width, p[k].height);
        FV_REQUIRE(fv_image_bytes(p[k].format, 1, 1) > 0 || p[k].format == FV_PIXEL_NV12,
                   FV_ERR_BAD_PARAM, "%s: stage.%s[%d]: format %d is not a pixel format", op, what,
                   k, (int)p[k].format);
        FV_REQUIRE(p[k].reserved[0] == 0 && p[k].reserved[1] == 0, FV_ERR_BAD_PARAM,
                   "%s: stage.%s[%d].reserved must be zero", op, what, k);
    }
    return FV_OK;
}

static fv_status check_desc(const fv_pipeline_desc *d) {
    const char *op = "pipeline_create";
    FV_REQUIRE(d->filter || d->stage, FV_ERR_BAD_PARAM, "%s: desc.filter and desc.stage are NULL",
               op);
    FV_REQUIRE(!(d->filter && d->stage), FV_ERR_BAD_PARAM,
               "%s: desc.filter and desc.stage are both given (one of them)", op);
    FV_REQUIRE(d->out_format == 0 || (d->filter && out_format_ok(d->out_format)), FV_ERR_BAD_PARAM,
               "%s: out_format %s (%d): GRAY8, RGB24, BGR24 or RGBA32 (0: by the filter; a stage "
               "gives its ports' formats)",
               op, fv_pixel_format_name(d->out_format), (int)d->out_format);
    FV_REQUIRE(d->slots >= 0 && d->slots <= FV_PIPELINE_MAX_SLOTS, FV_ERR_BAD_PARAM,
               "%s: slots=%d must be 0 (3) or 1..%d", op, d->slots, FV_PIPELINE_MAX_SLOTS);
    FV_REQUIRE(d->cuda_graph == 0 || d->cuda_graph == 1, FV_ERR_BAD_PARAM,
               "%s: cuda_graph=%d must be 0 or 1", op, d->cuda_graph);
    for (int i = 0; i < 8; i++)
        FV_REQUIRE(d->reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: reserved[%d] must be zero", op, i);
    const fv_pipeline_stage *st = d->stage;
    if (st) {
        FV_REQUIRE(st->run, FV_ERR_BAD_PARAM, "%s: stage.run is NULL", op);
        FV_REQUIRE(st->inputs >= 1 && st->inputs <= MAX_PORTS, FV_ERR_BAD_PARAM,
                   "%s: stage.inputs=%d must be 1..%d", op, st->inputs, MAX_PORTS);
        FV_REQUIRE(st->outputs >= 0 && st->outputs <= MAX_PORTS, FV_ERR_BAD_PARAM,
                   "%s: stage.outputs=%d must be 0..%d", op, st->outputs, MAX_PORTS);
        FV_REQUIRE(st->marks >= 0 && st->marks <= MAX_MARKS, FV_ERR_BAD_PARAM,
                   "%s: stage.marks=%d must be 0..%d", op, st->marks, MAX_MARKS);
        for (int i = 0; i < 4; i++)
            FV_REQUIRE(st->reserved[i] == 0, FV_ERR_BAD_PARAM,
                       "%s: stage.reserved[%d] must be zero", op, i);
        FV_TRY(check_ports(op, "input", st->input, st->inputs));
        FV_TRY(check_ports(op, "output", st->output, st->outputs));
    }
    return FV_OK;
}

/* The filter as a stage: one input, one output. */
static fv_status filter_stage(fv_pipeline *p, void *user, int slot_index, const fv_image *in,
                              const fv_image *out) {
    (void)p, (void)slot_index;
    fv_image o = *out; /* the descriptor is const, not the pixels */
    return fv_filter_apply(user, in, &o);
}

static fv_status make_buffer(fv_context *ctx, const fv_pipeline_port *port, fv_frame_buffer **fb,
                             fv_image *host, fv_image *dev) {
    FV_TRY(fv_frame_buffer_create(ctx, port->format, port->width, port->height, fb));
    fv_frame_buffer_info fi;
    FV_TRY(fv_frame_buffer_info_get(*fb, &fi));
    *host = fi.host, *dev = fi.device;
    return FV_OK;
}

static fv_status make_slot(fv_pipeline *p, slot *s) {
    fv_context *ctx = p->ctx;
    for (int k = 0; k < p->stage.inputs; k++)
        FV_TRY(make_buffer(ctx, &p->in_port[k], &s->in[k], &s->in_host[k], &s->in_dev[k]));
    for (int k = 0; k < p->stage.outputs; k++)
        FV_TRY(make_buffer(ctx, &p->out_port[k], &s->out[k], &s->out_host[k], &s->out_dev[k]));
    if (p->async) {
        for (int e = 0; e < EV_COUNT; e++)
            FV_TRY(ctx->be->event_create(ctx, &s->ev[e]));
        for (int e = 0; e < p->stage.marks; e++)
            FV_TRY(ctx->be->event_create(ctx, &s->mark_ev[e]));
    }
    return FV_OK;
}

/* Runs the stage of slot index i on the given operands (the compute side). */
static fv_status run_stage(fv_pipeline *p, int i, const fv_image *in, const fv_image *out) {
    p->running = i;
    p->run_t0 = now_ms();
    fv_status st = p->stage.run(p, p->stage.user, i, in, out);
    p->running = -1;
    if (st != FV_OK && p->name[0]) return fv__error_prefix(st, p->name);
    return st;
}

/* Captures the slot's stage work on the context stream into a graph. */
static fv_status capture_slot(fv_pipeline *p, int i) {
    fv_context *ctx = p->ctx;
    slot *s = &p->slots[i];
    FV_TRY(ctx->be->graph_begin(ctx));
    fv_status st = run_stage(p, i, s->in_dev, s->out_dev);
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

/* The stage's ports and name from desc: a filter's, or the caller's. */
static fv_status set_stage(fv_pipeline *p, const fv_pipeline_desc *desc) {
    if (desc->stage) {
        p->stage = *desc->stage;
        for (int k = 0; k < p->stage.inputs; k++)
            p->in_port[k] = desc->stage->input[k];
        for (int k = 0; k < p->stage.outputs; k++)
            p->out_port[k] = desc->stage->output[k];
        snprintf(p->name, sizeof p->name, "pipeline stage '%s'",
                 desc->stage->name ? desc->stage->name : "stage");
        p->stage.input = p->in_port, p->stage.output = p->out_port;
        return FV_OK;
    }
    const fv_filter_desc *fd = desc->filter;
    fv_pixel_format of = desc->out_format;
    if (of == 0)
        of = fd->output == FV_FILTER_OUT_GRAY && !fd->overlay ? FV_PIXEL_GRAY8 : FV_PIXEL_RGB24;
    p->in_port[0] =
        (fv_pipeline_port){fd->format ? fd->format : FV_PIXEL_RGB24, fd->width, fd->height, {0, 0}};
    p->out_port[0] = (fv_pipeline_port){of, fd->width, fd->height, {0, 0}};
    p->stage = (fv_pipeline_stage){.run = filter_stage,
                                   .user = p->filter,
                                   .inputs = 1,
                                   .outputs = 1,
                                   .input = p->in_port,
                                   .output = p->out_port};
    return FV_OK; /* the filter's messages name themselves */
}

fv_status fv_pipeline_create(fv_context *ctx, const fv_pipeline_desc *desc, fv_pipeline **out) {
    FV__HOLD(ctx);
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_pipeline_create: out is NULL");
    *out = NULL;
    FV_REQUIRE(ctx && desc, FV_ERR_BAD_PARAM, "fv_pipeline_create: %s is NULL",
               ctx ? "desc" : "ctx");
    FV_TRY(check_desc(desc));
    fv_pipeline *p = calloc(1, sizeof *p);
    FV_REQUIRE(p, FV_ERR_OUT_OF_MEMORY, "pipeline_create: out of host memory");
    p->ctx = ctx;
    p->held = -1;
    p->running = -1;
    fv_status s = FV_OK;
    if (desc->filter) {
        fv__obj_internal(1);
        s = fv_filter_create(ctx, desc->filter, &p->filter);
        fv__obj_internal(0);
        if (s != FV_OK) {
            free(p);
            return fv__error_prefix(s, "fv_pipeline_create");
        }
    }
    fv__obj_born(ctx, FV__OBJ_PIPELINE);
    set_stage(p, desc);
    fv_context_info ci;
    (void)fv_context_info_get(ctx, &ci);
    const fv__backend *be = ctx->be;
    p->async = be->stream_create && be->event_create && be->copy2d_on;
    p->zero_copy = ci.memory_policy == FV_MEMORY_POLICY_ZERO_COPY;
    p->n = desc->slots ? desc->slots : 3;
    fv_pipeline_info *in = &p->info;
    in->slots = p->n;
    in->policy = ci.memory_policy;
    in->inputs = p->stage.inputs, in->outputs = p->stage.outputs;
    in->in_format = p->in_port[0].format;
    in->width = p->in_port[0].width, in->height = p->in_port[0].height;
    in->in_bytes = fv_image_bytes(in->in_format, in->width, in->height);
    if (in->outputs) {
        const fv_pipeline_port *o = &p->out_port[0];
        in->out_format = o->format;
        in->out_bytes = fv_image_bytes(o->format, o->width, o->height);
    }
    in->overlapped = p->async && !p->zero_copy;
    if (p->async && !p->zero_copy) {
        s = be->stream_create(ctx, &p->up);
        if (s == FV_OK) s = be->stream_create(ctx, &p->down);
    }
    fv__obj_internal(1);
    for (int i = 0; s == FV_OK && i < p->n; i++)
        s = make_slot(p, &p->slots[i]);
    fv__obj_internal(0);
    if (s == FV_OK && desc->cuda_graph) {
        if (!be->graph_begin) {
            snprintf(in->cuda_graph_why, sizeof in->cuda_graph_why,
                     "the %s backend has no CUDA graphs", be->name);
        } else {
            for (int i = 0; s == FV_OK && i < p->n; i++)
                s = capture_slot(p, i);
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
    FV__HOLD_WAIT(p ? p->ctx : NULL);
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
        for (int e = 0; e < MAX_MARKS; e++)
            if (s->mark_ev[e]) be->event_destroy(ctx, s->mark_ev[e]);
        for (int k = 0; k < MAX_PORTS; k++) {
            fv_frame_buffer_destroy(s->in[k]);
            fv_frame_buffer_destroy(s->out[k]);
        }
    }
    if (p->up) be->stream_destroy(ctx, p->up);
    if (p->down) be->stream_destroy(ctx, p->down);
    fv_filter_destroy(p->filter);
    fv__obj_internal(0);
    free(p);
}

fv_status fv_pipeline_input(fv_pipeline *p, fv_image *out) {
    FV__HOLD(p ? p->ctx : NULL);
    FV_REQUIRE(p && out, FV_ERR_BAD_PARAM, "pipeline_input: %s is NULL", p ? "out" : "p");
    slot *s = &p->slots[p->next_submit];
    if (s->state != SLOT_FREE && s->state != SLOT_FILLING)
        return fv__error(FV_ERR_NOT_READY,
                         "pipeline_input: all %d slots are in flight or held: collect first", p->n);
    s->state = SLOT_FILLING;
    *out = s->in_host[0];
    return FV_OK;
}

static fv_status check_image(const fv_pipeline *p, int k, const fv_image *in) {
    const fv_pipeline_port *t = &p->in_port[k];
    FV_REQUIRE(in->format == t->format && in->width == t->width && in->height == t->height,
               FV_ERR_BAD_PARAM,
               "pipeline_submit: frame %d is %dx%d %s, but the pipeline takes %dx%d %s there", k,
               in->width, in->height, fv_pixel_format_name(in->format), t->width, t->height,
               fv_pixel_format_name(t->format));
    FV_REQUIRE(in->data, FV_ERR_BAD_PARAM, "pipeline_submit: frame %d data is NULL", k);
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

/* Queues in (host) -> dev (the slot's dense device input) on the upload stream. */
static fv_status upload(fv_pipeline *p, const fv_image *dev, const fv_image *in) {
    fv_context *ctx = p->ctx;
    const fv__backend *be = ctx->be;
    int nv12 = in->format == FV_PIXEL_NV12;
    size_t row = nv12 ? (size_t)in->width : fv_image_bytes(in->format, in->width, 1);
    size_t stride = in->stride ? in->stride : row;
    FV_TRY(be->copy2d_on(ctx, p->up, dev->data, row, in->data, stride, row, (size_t)in->height));
    if (nv12) {
        const char *uv = in->uv ? in->uv : (const char *)in->data + stride * in->height;
        size_t uvs = in->uv_stride ? in->uv_stride : stride;
        FV_TRY(be->copy2d_on(ctx, p->up, (char *)dev->data + row * in->height, row, uv, uvs, row,
                             (size_t)in->height / 2));
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

static fv_status submit_async(fv_pipeline *p, int i, const fv_image *const *in) {
    fv_context *ctx = p->ctx;
    const fv__backend *be = ctx->be;
    slot *s = &p->slots[i];
    fv_image ops[MAX_PORTS];
    int ni = p->stage.inputs, no = p->stage.outputs;
    s->in_place = 0;
    if (p->zero_copy) {
        /* mapped memory: a caller frame in the MAPPED pool is read in place
         * (not through the slot's graph, made for its buffers); any other
         * is copied into the slot's mapped buffer, which the GPU reads */
        for (int k = 0; k < ni; k++) {
            ops[k] = s->in_dev[k];
            if (!in[k] || in[k]->data == s->in_host[k].data) continue;
            if (mapped_view(p, in[k], &ops[k]))
                s->in_place = 1;
            else
                copy_host(in[k], &s->in_host[k]);
        }
    } else {
        FV_TRY(be->event_record(ctx, s->ev[EV_UP0], p->up));
        for (int k = 0; k < ni; k++)
            if (in[k]) FV_TRY(upload(p, &s->in_dev[k], in[k]));
        FV_TRY(be->event_record(ctx, s->ev[EV_UP1], p->up));
        FV_TRY(be->stream_wait(ctx, NULL, s->ev[EV_UP1]));
    }
    FV_TRY(be->event_record(ctx, s->ev[EV_F0], NULL));
    if (s->graph && !s->in_place)
        FV_TRY(be->graph_launch(ctx, s->graph));
    else
        FV_TRY(run_stage(p, i, s->in_place ? ops : s->in_dev, s->out_dev));
    FV_TRY(be->event_record(ctx, s->ev[EV_F1], NULL));
    if (!p->zero_copy) {
        FV_TRY(be->stream_wait(ctx, p->down, s->ev[EV_F1]));
        for (int k = 0; k < no; k++) {
            size_t bytes =
                fv_image_bytes(p->out_port[k].format, p->out_port[k].width, p->out_port[k].height);
            FV_TRY(be->copy2d_on(ctx, p->down, s->out_host[k].data, bytes, s->out_dev[k].data,
                                 bytes, bytes, 1));
        }
        FV_TRY(be->event_record(ctx, s->ev[EV_DOWN1], p->down));
    }
    return FV_OK;
}

fv_status fv_pipeline_submit_ports(fv_pipeline *p, const fv_image *const *in, int count,
                                   int64_t user_time_ns) {
    FV__HOLD(p ? p->ctx : NULL);
    FV_REQUIRE(p && in, FV_ERR_BAD_PARAM, "pipeline_submit: %s is NULL", p ? "in" : "p");
    FV_REQUIRE(count == p->stage.inputs, FV_ERR_BAD_PARAM,
               "pipeline_submit: %d frames, but the pipeline takes %d", count, p->stage.inputs);
    int given = 0;
    for (int k = 0; k < count; k++)
        if (in[k]) {
            FV_TRY(check_image(p, k, in[k]));
            given++;
        }
    FV_REQUIRE(given > 0, FV_ERR_BAD_PARAM, "pipeline_submit: all %d frames are NULL", count);
    FV_REQUIRE(p->running < 0, FV_ERR_BAD_STATE, "pipeline_submit: called from the stage's run");
    int i = p->next_submit;
    slot *s = &p->slots[i];
    if (s->state != SLOT_FREE && s->state != SLOT_FILLING)
        return fv__error(FV_ERR_NOT_READY,
                         "pipeline_submit: all %d slots are in flight or held: collect first",
                         p->n);
    if (p->async) {
        fv_status st = submit_async(p, i, in);
        if (st != FV_OK) return fv__error_prefix(st, "fv_pipeline_submit");
    } else {
        /* host memory is the CPU backend's own: the stage reads the
         * caller's frames where they are and writes the slot's outputs */
        fv_image ops[MAX_PORTS];
        for (int k = 0; k < count; k++)
            ops[k] = in[k] ? *in[k] : s->in_host[k];
        double t0 = now_ms();
        fv_status st = run_stage(p, i, ops, s->out_host);
        if (st != FV_OK) return st;
        s->cpu_ms = (float)(now_ms() - t0);
        s->mark_wall[p->stage.marks] = s->cpu_ms;
    }
    s->state = SLOT_IN_FLIGHT;
    s->user_time_ns = user_time_ns;
    s->sequence = p->sequence++;
    p->next_submit = (p->next_submit + 1) % p->n;
    p->info.in_flight++;
    return FV_OK;
}

fv_status fv_pipeline_submit(fv_pipeline *p, const fv_image *in, int64_t user_time_ns) {
    FV__HOLD(p ? p->ctx : NULL);
    FV_REQUIRE(p && in, FV_ERR_BAD_PARAM, "pipeline_submit: %s is NULL", p ? "in" : "p");
    FV_REQUIRE(p->stage.inputs == 1, FV_ERR_BAD_PARAM,
               "pipeline_submit: the stage takes %d frames: use fv_pipeline_submit_ports",
               p->stage.inputs);
    const fv_image *one[1] = {in};
    return fv_pipeline_submit_ports(p, one, 1, user_time_ns);
}

fv_status fv_pipeline_mark(fv_pipeline *p, int k) {
    FV__HOLD(p ? p->ctx : NULL);
    FV_REQUIRE(p, FV_ERR_BAD_PARAM, "fv_pipeline_mark: p is NULL");
    FV_REQUIRE(p->running >= 0, FV_ERR_BAD_STATE,
               "fv_pipeline_mark: called outside the stage's run");
    FV_REQUIRE(k >= 0 && k < p->stage.marks, FV_ERR_BAD_PARAM,
               "fv_pipeline_mark: mark %d, but the stage declared %d (0 .. %d)", k, p->stage.marks,
               p->stage.marks - 1);
    slot *s = &p->slots[p->running];
    if (p->async) return p->ctx->be->event_mark(p->ctx, s->mark_ev[k]);
    s->mark_wall[k] = now_ms() - p->run_t0;
    return FV_OK;
}

static fv_status collected(const fv_pipeline *p, const char *fn, slot **out) {
    FV_REQUIRE(p, FV_ERR_BAD_PARAM, "%s: p is NULL", fn);
    FV_REQUIRE(p->held >= 0, FV_ERR_BAD_STATE, "%s: no collected frame (collect first)", fn);
    *out = (slot *)&p->slots[p->held];
    return FV_OK;
}

fv_status fv_pipeline_mark_ms(const fv_pipeline *p, int k, float *ms) {
    FV__HOLD(p ? p->ctx : NULL);
    slot *s = NULL;
    FV_REQUIRE(ms, FV_ERR_BAD_PARAM, "fv_pipeline_mark_ms: ms is NULL");
    FV_TRY(collected(p, "fv_pipeline_mark_ms", &s));
    FV_REQUIRE(k >= 0 && k <= p->stage.marks, FV_ERR_BAD_PARAM,
               "fv_pipeline_mark_ms: mark %d of 0 .. %d", k, p->stage.marks);
    if (!p->async) {
        *ms = (float)s->mark_wall[k];
        return FV_OK;
    }
    void *end = k == p->stage.marks ? s->ev[EV_F1] : s->mark_ev[k];
    return p->ctx->be->event_elapsed(p->ctx, s->ev[EV_F0], end, ms);
}

fv_status fv_pipeline_output(const fv_pipeline *p, int k, fv_image *out) {
    FV__HOLD(p ? p->ctx : NULL);
    slot *s = NULL;
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_pipeline_output: out is NULL");
    FV_TRY(collected(p, "fv_pipeline_output", &s));
    FV_REQUIRE(k >= 0 && k < p->stage.outputs, FV_ERR_BAD_PARAM,
               "fv_pipeline_output: output %d, but the pipeline has %d", k, p->stage.outputs);
    *out = s->out_host[k];
    return FV_OK;
}

void fv_pipeline_release(fv_pipeline *p) {
    FV__HOLD_WAIT(p ? p->ctx : NULL);
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
    /* from the stage's end: includes waiting for the download stream */
    (void)be->event_elapsed(ctx, s->ev[EV_F1], s->ev[EV_DOWN1], &f->download_ms);
}

fv_status fv_pipeline_collect(fv_pipeline *p, int wait, fv_pipeline_frame *out) {
    FV__HOLD(p ? p->ctx : NULL);
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
    if (p->stage.outputs) out->out = s->out_host[0];
    out->user_time_ns = s->user_time_ns;
    out->sequence = s->sequence;
    out->in_place = s->in_place;
    out->slot = p->next_collect;
    timings(p, s, out);
    s->state = SLOT_HELD;
    p->held = p->next_collect;
    p->next_collect = (p->next_collect + 1) % p->n;
    p->info.in_flight--;
    return FV_OK;
}

fv_status fv_pipeline_info_get(const fv_pipeline *p, fv_pipeline_info *out) {
    FV__HOLD(p ? p->ctx : NULL);
    FV_REQUIRE(p && out, FV_ERR_BAD_PARAM, "pipeline_info_get: %s is NULL", p ? "out" : "p");
    *out = p->info;
    return FV_OK;
}

const fv_filter *fv_pipeline_filter(const fv_pipeline *p) {
    return p ? p->filter : NULL;
}
