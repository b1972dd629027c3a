/* fv_timer (fovea/timer.h): the backend's timing events where it has them
 * (CUDA), the wall clock where its ops run inside the calls (CPU). */
#include <stdlib.h>
#include <time.h>
#include "internal.h"
#include "fovea/timer.h"

struct fv_timer {
    fv_context *ctx;
    int n;
    int events; /* 1: ev[] are backend events; 0: wall[] times */
    void *ev[FV_TIMER_MAX_MARKS];
    double wall[FV_TIMER_MAX_MARKS];
    unsigned char recorded[FV_TIMER_MAX_MARKS];
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

fv_status fv_timer_create(fv_context *ctx, int marks, fv_timer **out) {
    FV__HOLD(ctx);
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_timer_create: out is NULL");
    *out = NULL;
    FV_REQUIRE(ctx, FV_ERR_BAD_PARAM, "fv_timer_create: ctx is NULL");
    FV_REQUIRE(marks >= 2 && marks <= FV_TIMER_MAX_MARKS, FV_ERR_BAD_PARAM,
               "fv_timer_create: marks=%d must be 2 .. %d", marks, FV_TIMER_MAX_MARKS);
    fv_timer *t = calloc(1, sizeof *t);
    FV_REQUIRE(t, FV_ERR_OUT_OF_MEMORY, "fv_timer_create: out of host memory");
    t->ctx = ctx;
    fv__obj_born(ctx, FV__OBJ_TIMER);
    t->n = marks;
    const fv__backend *be = ctx->be;
    t->events = be->event_create && be->event_record && be->event_elapsed && be->event_done;
    for (int i = 0; t->events && i < marks; i++) {
        fv_status s = be->event_create(ctx, &t->ev[i]);
        if (s != FV_OK) {
            fv_timer_destroy(t);
            return fv__error_prefix(s, "fv_timer_create");
        }
    }
    *out = t;
    return FV_OK;
}

void fv_timer_destroy(fv_timer *t) {
    FV__HOLD_WAIT(t ? t->ctx : NULL);
    if (!t) return;
    fv__obj_gone(t->ctx, FV__OBJ_TIMER);
    for (int i = 0; i < t->n; i++)
        if (t->ev[i]) t->ctx->be->event_destroy(t->ctx, t->ev[i]);
    free(t);
}

fv_status fv_timer_mark(fv_timer *t, int i) {
    FV__HOLD(t ? t->ctx : NULL);
    FV_REQUIRE(t, FV_ERR_BAD_PARAM, "fv_timer_mark: t is NULL");
    FV_REQUIRE(i >= 0 && i < t->n, FV_ERR_BAD_PARAM, "fv_timer_mark: mark %d is outside 0 .. %d", i,
               t->n - 1);
    if (t->events)
        FV_TRY(t->ctx->be->event_record(t->ctx, t->ev[i], NULL));
    else
        t->wall[i] = now_ms();
    t->recorded[i] = 1;
    return FV_OK;
}

fv_status fv_timer_elapsed(fv_timer *t, int i, int j, float *ms) {
    FV__HOLD(t ? t->ctx : NULL);
    FV_REQUIRE(t && ms, FV_ERR_BAD_PARAM, "fv_timer_elapsed: %s is NULL", t ? "ms" : "t");
    FV_REQUIRE(i >= 0 && i < t->n && j >= 0 && j < t->n, FV_ERR_BAD_PARAM,
               "fv_timer_elapsed: marks %d, %d: each must be 0 .. %d", i, j, t->n - 1);
    FV_REQUIRE(t->recorded[i] && t->recorded[j], FV_ERR_BAD_STATE,
               "fv_timer_elapsed: mark %d was never recorded", t->recorded[i] ? j : i);
    if (!t->events) {
        *ms = (float)(t->wall[j] - t->wall[i]);
        return FV_OK;
    }
    fv_context *ctx = t->ctx;
    FV_TRY(ctx->be->event_done(ctx, t->ev[j], 1));
    FV_TRY(ctx->be->event_done(ctx, t->ev[i], 1));
    return ctx->be->event_elapsed(ctx, t->ev[i], t->ev[j], ms);
}
