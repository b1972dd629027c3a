/* fovea-infer: the tick loop. Each tick takes the newest frame of every
 * camera that has one (waiting a little for the slower ones, never for a
 * stalled one), queues its GPU work (uploads, one pre-processing kernel
 * per camera into its batch item, one forward of the whole batch, the
 * post-processing, downloads), then finishes the previous tick (its
 * results to the sinks) while the GPU runs this one. Nothing is allocated:
 * every buffer was made at set-up. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "infer.h"

/* A failed SDK call: the message, and 1. */
static int failed(const char *what, int cam) {
    if (cam >= 0)
        fprintf(stderr, PROG ": %s (input %d): %s\n", what, cam, fv_last_error());
    else
        fprintf(stderr, PROG ": %s: %s\n", what, fv_last_error());
    return 1;
}

/* Whether the tick should wait for camera w (live, not stalled, no frame
 * yet) when cameras with frames are ready: yes unless w is clearly slower
 * (its period over 1.5x the fastest ready camera's) and not due before
 * that camera's next frame; then w joins a later tick, and the fast
 * cameras keep their rate. */
static int worth_waiting(const camera *w, int64_t ready_period, int64_t ready_next) {
    if (!w->period_ns || !ready_period) return 1;
    if (2 * w->period_ns <= 3 * ready_period) return 1;
    return w->last_ns + w->period_ns <= ready_next;
}

/* Takes the READY frame of every camera that has one into slot s, after
 * waiting (at most wait_ms once one is ready) for the live cameras worth
 * waiting for. Returns the number taken; *all_ended when every input has
 * ended and nothing is left. */
/* ---- --keep-awake ------------------------------------------------------------------
 * A discrete GPU idle for a camera's frame interval (33 ms at 30 fps) drops
 * its PCIe link and clocks into power-saving states; the next frame's
 * upload and kernels then run slower (docs/bench/RESULTS.md: 1080p uploads
 * of 0.27 ms on average at 30 fps against 0.12 ms back to back, and a tail
 * of 1.4 ms). With --keep-awake MS the loop queues a 16 KB copy and a small
 * kernel every MS ms while it waits for frames: power for latency. */
enum { AWAKE_W = 1024 }; /* 1 x 1 x 1024 x 8 FP16: 16 KB */

int loop_keep_awake_init(app *a) {
    if (!a->o->keep_awake_ms) return 0;
    if (a->ci.backend != FV_BACKEND_CUDA) {
        fprintf(stderr, PROG ": --keep-awake: the CPU backend has no GPU to keep awake; ignored\n");
        return 0;
    }
    fv_tensor_desc td = {.dtype = FV_DTYPE_F16, .n = 1, .h = 1, .w = AWAKE_W, .c = 8};
    for (int i = 0; i < 3; i++)
        if (fv_tensor_create(a->ctx, &td, &a->awake[i]) != FV_OK) goto fail;
    a->awake_bytes = (size_t)AWAKE_W * 8 * 2;
    if (fv_pool_alloc(fv_context_pool(a->ctx, FV_POOL_PINNED), a->awake_bytes, &a->awake_host) !=
        FV_OK)
        goto fail;
    memset(a->awake_host, 0x3c, a->awake_bytes); /* FP16 1.0047: finite values */
    return 0;
fail:
    fprintf(stderr, PROG ": --keep-awake: %s\n", fv_last_error());
    return -1;
}

void loop_keep_awake_free(app *a) {
    for (int i = 0; i < 3; i++)
        fv_tensor_destroy(a->awake[i]), a->awake[i] = NULL;
    if (a->awake_host) fv_pool_free(fv_context_pool(a->ctx, FV_POOL_PINNED), a->awake_host);
    a->awake_host = NULL;
}

/* Queued on the context's stream (nothing else is in flight while the
 * low-latency loop waits); asynchronous, no wait. A failure turns it off. */
static void keep_awake(app *a) {
    if (!a->awake_host) return;
    if (fv_tensor_upload(a->ctx, a->awake[0], a->awake_host, a->awake_bytes) != FV_OK ||
        fv_add(a->ctx, a->awake[0], a->awake[1], a->awake[2], FV_ACT_IDENTITY, 0) != FV_OK) {
        fprintf(stderr, PROG ": --keep-awake: %s; turned off\n", fv_last_error());
        loop_keep_awake_free(a);
        return;
    }
    a->st->awake_runs++;
}

static int gather(app *a, int s, atomic_int *stop, int *all_ended) {
    const options *o = a->o;
    int64_t first_ready = 0;
    *all_ended = 0;
    capture_lock(a->grp);
    for (;;) {
        int64_t now = now_ns(), ready_period = INT64_MAX, ready_next = INT64_MAX;
        int any = 0, live = 0, wait = 0;
        for (int i = 0; i < a->n; i++) {
            camera *c = &a->cams[i];
            if (c->ended) continue;
            live++;
            c->stalled = now - c->last_ns > (int64_t)o->stall_ms * 1000000;
        }
        for (int i = 0; i < a->n; i++) {
            const camera *c = &a->cams[i];
            if (c->ready < 0) continue;
            any++;
            if (c->period_ns && c->period_ns < ready_period) ready_period = c->period_ns;
            if (c->period_ns && c->last_ns + c->period_ns < ready_next)
                ready_next = c->last_ns + c->period_ns;
        }
        if (ready_period == INT64_MAX) ready_period = 0;
        for (int i = 0; i < a->n; i++) {
            const camera *c = &a->cams[i];
            if (!c->ended && !c->stalled && c->ready < 0)
                wait |= o->sync || worth_waiting(c, ready_period, ready_next);
        }
        if (any && !first_ready) first_ready = now;
        if (!live && !any) {
            *all_ended = 1;
            break;
        }
        if (atomic_load(stop) || (any && !wait)) break;
        /* --sync waits until the camera counts as stalled instead */
        if (any && !o->sync && now - first_ready >= (int64_t)o->wait_ms * 1000000) break;
        int keep = !any && a->awake_host && a->inflight == 0;
        if (!capture_wait(a->grp, any ? 1 : keep ? a->o->keep_awake_ms : 20) && keep) {
            capture_unlock(a->grp);
            keep_awake(a);
            capture_lock(a->grp);
        }
    }
    int taken = 0;
    for (int i = 0; i < a->n; i++) {
        camera *c = &a->cams[i];
        a->taken[s][i] = c->ready >= 0;
        if (!a->taken[s][i]) continue;
        a->held[s][i] = c->ready;
        a->ts[s][i] = c->ts[c->ready];
        c->state[c->ready] = BUF_HELD;
        c->ready = -1;
        taken++;
    }
    capture_signal(a->grp); /* file inputs wait for their frame to be taken */
    capture_unlock(a->grp);
    return taken;
}

/* The stage: one tick's GPU work on the context's stream (captured once a
 * slot into a CUDA graph with --cuda-graph). in[i]: camera i's frame on
 * the device; out[port[i]]: what goes to its sink. Every camera's batch
 * item is filled, also for a camera with no new frame this tick (its slot
 * buffer's older frame; the result is not used), so the work is the same
 * every tick. */
enum { MARK_PRE, MARK_NET, MARKS };
#define TRY(call)                                                                                  \
    do {                                                                                           \
        fv_status try_ = (call);                                                                   \
        if (try_ != FV_OK) return try_;                                                            \
    } while (0)

static fv_status stage_run(fv_pipeline *p, void *user, int slot, const fv_image *in,
                           const fv_image *out) {
    app *a = user;
    fv_context *ctx = a->ctx;
    model *m = a->m;
    fv_tensor *input = fv_net_input(m->net, 0);
    for (int i = 0; i < a->n; i++)
        TRY(fv_preprocess(ctx, &in[i], input, a->cams[i].index, &a->pd));
    TRY(fv_pipeline_mark(p, MARK_PRE));
    TRY(fv_net_forward(m->net));
    TRY(fv_pipeline_mark(p, MARK_NET));
    fv_tensor *y = fv_net_output(m->net, 0);
    if (m->task == TASK_CLASSIFY) TRY(fv_classify_run(m->top[slot], y));
    for (int i = 0; i < a->n; i++) {
        if (a->port[i] < 0) continue;
        fv_image o = out[a->port[i]];
        if (m->task == TASK_SEGMENT) {
            TRY(fv_segment_run(m->seg, y, a->cams[i].index, &a->region[i],
                               a->o->mask_only ? NULL : &in[i], &o));
        } else {
            TRY(fv_image_pack(ctx, &in[i], a->conv[i], NULL));
            TRY(fv_image_unpack(ctx, a->conv[i], &o, NULL));
        }
    }
    return FV_OK;
}

int loop_pipeline(app *a) {
    fv_pipeline_port in[MAX_CAMERAS], out[MAX_CAMERAS];
    a->nports = 0;
    for (int i = 0; i < a->n; i++) {
        const fv_source_info *si = &a->cams[i].info;
        in[i] = (fv_pipeline_port){.format = si->format, .width = si->width, .height = si->height};
        a->port[i] = -1;
        if (a->conv[i] || (a->m->task == TASK_SEGMENT && a->cams[i].sink)) {
            a->port[i] = a->nports;
            out[a->nports++] = (fv_pipeline_port){
                .format = FV_PIXEL_RGB24, .width = si->width, .height = si->height};
        }
    }
    fv_pipeline_stage st = {.run = stage_run,
                            .user = a,
                            .inputs = a->n,
                            .outputs = a->nports,
                            .input = in,
                            .output = out,
                            .marks = MARKS,
                            .name = "inference"};
    fv_pipeline_desc d = {.stage = &st, .slots = SLOTS, .cuda_graph = a->o->cuda_graph};
    if (fv_pipeline_create(a->ctx, &d, &a->pipe) != FV_OK) {
        failed("set-up", -1);
        return -1;
    }
    fv_pipeline_info_get(a->pipe, &a->pinfo);
    return 0;
}

/* Queues slot s's tick: the new frames' uploads and the stage. */
static int queue_tick(app *a, int s) {
    const fv_image *in[MAX_CAMERAS];
    for (int i = 0; i < a->n; i++)
        in[i] = a->taken[s][i] ? &a->cams[i].host[a->held[s][i]] : NULL;
    if (fv_pipeline_submit_ports(a->pipe, in, a->n, 0) != FV_OK) return failed("tick", -1);
    a->busy[s] = 1;
    a->inflight++;
    return 0;
}

/* Camera i's classes as the caption of its next output frame. */
static void caption(app *a, int i) {
    char text[512];
    size_t n = 0;
    const cam_stats *cs = &a->st->cam[i];
    for (int k = 0; k < a->o->top && n < sizeof text; k++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%s %.2f", k ? "\n" : "",
                              model_label(a->m, cs->top[k].index), (double)cs->top[k].score);
    (void)fv_sink_set_text(a->cams[i].sink, text); /* a caption that fails is no reason to stop */
}

/* Waits for slot s's work (the oldest in flight), reads its results and
 * writes its frames to the sinks. 0, 1 after an error, 2 when a display
 * window was closed. */
static int finish_tick(app *a, int s) {
    stats *st = a->st;
    model *m = a->m;
    fv_pipeline_frame done;
    a->busy[s] = 0;
    a->inflight--;
    if (fv_pipeline_collect(a->pipe, 1, &done) != FV_OK) return failed("waiting for the GPU", -1);
    if (done.slot != s) {
        fprintf(stderr, PROG ": internal error: slot %d came back for slot %d\n", done.slot, s);
        return 1;
    }
    float pre = 0, net = 0, end = 0;
    (void)fv_pipeline_mark_ms(a->pipe, MARK_PRE, &pre);
    (void)fv_pipeline_mark_ms(a->pipe, MARK_NET, &net);
    (void)fv_pipeline_mark_ms(a->pipe, MARKS, &end);
    float ms[5] = {done.upload_ms, pre, net - pre, end - net, done.download_ms};
    for (int k = 0; k < 5; k++)
        st->stage[k] += ms[k], st->window_stage[k] += ms[k];
    st->ticks++, st->window_ticks++;
    stats_gpu(st, done.gpu_ms);
    int rc = 0;
    for (int i = 0; i < a->n && rc == 0; i++) {
        if (!a->taken[s][i]) continue;
        camera *c = &a->cams[i];
        cam_stats *cs = &st->cam[i];
        if (m->task == TASK_CLASSIFY) {
            if (fv_classify_result(m->top[s], c->index, cs->top, a->o->top) != FV_OK)
                rc = failed("classification result", i);
            cs->have_top = 1;
        }
        if (c->sink && rc == 0 && m->task == TASK_CLASSIFY && c->sink_info.text_overlay)
            caption(a, i);
        if (c->sink && rc == 0) {
            fv_image img = c->host[a->held[s][i]];
            if (a->port[i] >= 0 && fv_pipeline_output(a->pipe, a->port[i], &img) != FV_OK)
                rc = failed("output", i);
            fv_status w = rc ? FV_OK : fv_sink_write(c->sink, &img, a->ts[s][i]);
            if (w == FV_ERR_END_OF_STREAM) {
                rc = 2;
            } else if (w != FV_OK) {
                fprintf(stderr, PROG ": output %s: %s\n", c->sink_info.name, fv_last_error());
                rc = 1;
            }
        }
        stats_latency(st, (float)((double)(now_ns() - a->ts[s][i]) * 1e-6));
        cs->frames++, cs->window_frames++;
    }
    fv_pipeline_release(a->pipe);
    capture_lock(a->grp); /* the frames go back to their mailboxes */
    for (int i = 0; i < a->n; i++)
        if (a->taken[s][i]) a->cams[i].state[a->held[s][i]] = BUF_FREE;
    capture_unlock(a->grp);
    return rc;
}

static int any_ready(app *a) {
    int any = 0;
    capture_lock(a->grp);
    for (int i = 0; i < a->n; i++)
        any |= a->cams[i].ready >= 0;
    capture_unlock(a->grp);
    return any;
}

static double now_s(void) {
    return (double)now_ns() * 1e-9;
}

int loop_run(app *a, atomic_int *stop, const char **end) {
    const options *o = a->o;
    double t0 = now_s(), last = t0;
    long ticks = 0;
    int rc = 0;
    /* ticks kept in flight after queueing one: SLOTS - 1 (the ring's other
     * slot is being gathered into), one in the low-latency mode */
    int depth = o->low_latency ? 0 : SLOTS - 1;
    *end = "done";
#define OLDEST ((int)((ticks - a->inflight) % SLOTS))
    while (rc == 0) {
        if (atomic_load(stop)) {
            *end = "interrupted";
            break;
        }
        if (o->frames && ticks >= o->frames) {
            *end = "frames done";
            break;
        }
        if (o->duration && now_s() - t0 >= o->duration) {
            *end = "duration reached";
            break;
        }
        /* no frame waiting: the cameras are slower than the GPU, so finish the
         * ticks in flight now rather than after the next frame (latency) */
        while (rc == 0 && a->inflight > 0 && !any_ready(a))
            rc = finish_tick(a, OLDEST);
        if (rc != 0) break;
        int s = (int)(ticks % SLOTS), all_ended = 0;
        int taken = gather(a, s, stop, &all_ended);
        if (all_ended) {
            *end = "inputs ended";
            break;
        }
        if (taken == 0) continue; /* interrupted while waiting */
        if ((rc = queue_tick(a, s)) != 0) break;
        ticks++;
        while (rc == 0 && a->inflight > depth)
            rc = finish_tick(a, OLDEST);
        double now = now_s();
        if (now - last >= 1.0) {
            if (!o->quiet)
                report_status(o, a->m, a->grp, a->cams, a->n, a->st, now - last, now - t0);
            last = now;
        }
    }
    if (rc == 2) *end = "output closed", rc = 0;
    while (a->inflight > 0) { /* the ticks still in flight */
        int r = finish_tick(a, OLDEST);
        if (rc == 0 && r == 1) rc = 1;
    }
#undef OLDEST
    return rc;
}
