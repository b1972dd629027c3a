/* fovea-infer: one capture thread per input. Each thread waits for its
 * source's newest frame and copies it into a free buffer of the camera's
 * mailbox (frame buffers carved at set-up: pinned memory on discrete GPUs,
 * mapped on Jetson), which becomes the camera's READY frame; a READY frame
 * the main loop did not take in time is dropped (counted), except from
 * files, whose threads wait for the main loop instead. So a slow or
 * stalled camera never blocks the others: the main loop takes whatever is
 * ready. Nothing is allocated per frame. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "infer.h"

int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int capture_group_init(capture_group *g) {
    atomic_init(&g->stopping, 0);
    if (pthread_mutex_init(&g->mu, NULL) != 0) return -1;
    if (pthread_cond_init(&g->cv, NULL) != 0) {
        pthread_mutex_destroy(&g->mu);
        return -1;
    }
    return 0;
}

void capture_group_destroy(capture_group *g) {
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

void capture_lock(capture_group *g) {
    pthread_mutex_lock(&g->mu);
}

void capture_unlock(capture_group *g) {
    pthread_mutex_unlock(&g->mu);
}

void capture_signal(capture_group *g) {
    pthread_cond_broadcast(&g->cv);
}

int capture_wait(capture_group *g, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return pthread_cond_timedwait(&g->cv, &g->mu, &ts) != ETIMEDOUT;
}

int capture_open(const options *o, camera *c, fv_log_fn log, void *log_user) {
    fv_source_desc d = {.uri = c->uri,
                        .width = o->width,
                        .height = o->height,
                        .rate = o->rate,
                        .format = o->in_format,
                        .loop = o->loop,
                        .reconnect = o->reconnect,
                        .timeout_ms = o->stall_ms > 0 ? o->stall_ms : 1000,
                        .log = log,
                        .log_user = log_user};
    if (fv_source_open(&d, &c->src) != FV_OK) {
        fprintf(stderr, PROG ": cannot open input %s: %s\n", c->uri, fv_last_error());
        return -1;
    }
    fv_source_info_get(c->src, &c->info);
    c->ready = -1;
    c->lossless = !strcmp(c->info.kind, "video") || !strcmp(c->info.kind, "sequence") ||
                  !strcmp(c->info.kind, "image");
    return 0;
}

int capture_buffers(camera *c, fv_context *ctx) {
    const fv_source_info *i = &c->info;
    c->bytes = fv_image_bytes(i->format, i->width, i->height);
    for (int b = 0; b < MAILBOX; b++) {
        if (fv_frame_buffer_create(ctx, i->format, i->width, i->height, &c->buf[b]) != FV_OK) {
            fprintf(stderr, PROG ": input %s: no room for %dx%d %s frames: %s\n", c->uri, i->width,
                    i->height, fv_pixel_format_name(i->format), fv_last_error());
            return -1;
        }
        fv_frame_buffer_info fi;
        fv_frame_buffer_info_get(c->buf[b], &fi);
        c->host[b] = fi.host;
        c->dev[b] = fi.device;
        c->state[b] = BUF_FREE;
    }
    return 0;
}

static void *capture_thread(void *arg) {
    camera *c = arg;
    capture_group *g = c->grp;
    pthread_mutex_t *mu = &g->mu;
    pthread_cond_t *cv = &g->cv;
    while (!atomic_load(&g->stopping)) {
        if (c->lossless) { /* a file: the next frame waits until this one is taken */
            pthread_mutex_lock(mu);
            while (c->ready >= 0 && !atomic_load(&g->stopping)) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 20000000L;
                ts.tv_sec += ts.tv_nsec / 1000000000L;
                ts.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(cv, mu, &ts);
            }
            c->last_ns = now_ns(); /* waiting for the main loop is no stall */
            pthread_mutex_unlock(mu);
        }
        /* a buffer to capture into: a free one, or the READY frame nobody
         * took (the newer frame replaces it) */
        pthread_mutex_lock(mu);
        int b = -1;
        for (int i = 0; i < MAILBOX && b < 0; i++)
            if (c->state[i] == BUF_FREE) b = i;
        if (b < 0 && c->ready >= 0) {
            b = c->ready;
            c->ready = -1;
            c->overwritten++;
        }
        if (b >= 0) c->state[b] = BUF_WRITING;
        pthread_mutex_unlock(mu);
        if (b < 0) { /* cannot happen with MAILBOX > SLOTS + 1 */
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            continue;
        }
        /* the source makes (or copies) its frame straight into the pinned
         * (mapped) buffer the GPU reads */
        fv_source_frame fr;
        fv_status s = fv_source_capture_into(c->src, c->lossless ? 0 : FV_SOURCE_CAPTURE_LATEST,
                                             &c->host[b], &fr);
        if (s != FV_OK) {
            pthread_mutex_lock(mu);
            c->state[b] = BUF_FREE;
            pthread_mutex_unlock(mu);
        }
        if (s == FV_ERR_TIMEOUT || s == FV_ERR_NOT_READY) {
            pthread_mutex_lock(mu);
            c->waiting = s == FV_ERR_NOT_READY;
            pthread_mutex_unlock(mu);
            continue;
        }
        if (s != FV_OK) {
            snprintf(c->end_msg, sizeof c->end_msg, "%s", fv_last_error());
        }
        if (s != FV_OK) {
            pthread_mutex_lock(mu);
            c->ended = 1;
            c->failed = s != FV_ERR_END_OF_STREAM;
            pthread_cond_broadcast(cv);
            pthread_mutex_unlock(mu);
            return NULL;
        }
        pthread_mutex_lock(mu);
        if (c->ready >= 0) {
            c->state[c->ready] = BUF_FREE;
            c->overwritten++;
        }
        c->state[b] = BUF_READY;
        c->ready = b;
        c->ts[b] = fr.timestamp_ns ? fr.timestamp_ns : now_ns();
        int64_t now = now_ns(), dt = now - c->last_ns;
        if (c->captured > 0) c->period_ns = c->period_ns ? (c->period_ns * 7 + dt) / 8 : dt;
        c->last_ns = now;
        c->captured++;
        c->source_dropped = fr.dropped;
        c->waiting = 0;
        pthread_cond_broadcast(cv);
        pthread_mutex_unlock(mu);
    }
    return NULL;
}

int capture_start(capture_group *g, camera *cams, int n) {
    atomic_store(&g->stopping, 0);
    for (int i = 0; i < n; i++) {
        cams[i].grp = g;
        cams[i].last_ns = now_ns();
        int e = pthread_create(&cams[i].thread, NULL, capture_thread, &cams[i]);
        if (e != 0) {
            fprintf(stderr, PROG ": cannot start the capture thread of %s: %s\n", cams[i].uri,
                    strerror(e));
            return -1;
        }
        cams[i].started = 1;
    }
    return 0;
}

void capture_stop(capture_group *g, camera *cams, int n) {
    atomic_store(&g->stopping, 1);
    for (int i = 0; i < n; i++)
        if (cams[i].started) {
            pthread_join(cams[i].thread, NULL);
            cams[i].started = 0;
        }
}

void capture_close(camera *c) {
    fv_source_close(c->src);
    c->src = NULL;
    for (int b = 0; b < MAILBOX; b++) {
        fv_frame_buffer_destroy(c->buf[b]);
        c->buf[b] = NULL;
    }
}
