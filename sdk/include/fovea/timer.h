/* fovea: timing the work queued on a context's stream, stage by stage.
 *
 * A timer holds a fixed number of marks. Recording mark i puts a point in
 * the context's stream (a CUDA event on the CUDA backend, recorded without
 * waiting; the wall clock on the CPU backend, whose ops run inside the
 * calls); fv_timer_elapsed gives the time between two recorded marks once
 * the work before them has run. Nothing is allocated after creation:
 *
 *     fv_timer *t;  fv_timer_create(ctx, 3, &t);
 *     loop:
 *       fv_timer_mark(t, 0);  pre-processing ...
 *       fv_timer_mark(t, 1);  fv_net_forward(net);
 *       fv_timer_mark(t, 2);  fv_context_synchronize(ctx);
 *       fv_timer_elapsed(t, 0, 1, &pre_ms);  fv_timer_elapsed(t, 1, 2, &net_ms);
 */
#ifndef FOVEA_TIMER_H
#define FOVEA_TIMER_H

#include "fovea/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks on a context's stream and the times between them; opaque. */
typedef struct fv_timer fv_timer;

#define FV_TIMER_MAX_MARKS 64 /* the most marks a timer takes */

/* marks: 2 .. FV_TIMER_MAX_MARKS. ctx and out required; *out NULL on
 * failure. Returns FV_ERR_BAD_PARAM, FV_ERR_OUT_OF_MEMORY, FV_ERR_CUDA. */
fv_status fv_timer_create(fv_context *ctx, int marks, fv_timer **out);
/* Frees the events (pending work that records them must have finished:
 * fv_context_synchronize). NULL allowed. Destroy it before its context
 * (fv_context_destroy refuses while it lives). */
void fv_timer_destroy(fv_timer *t);

/* Records mark i (0 .. marks-1) after the work queued so far on the
 * context's stream, replacing its previous recording. Returns
 * FV_ERR_BAD_PARAM, FV_ERR_CUDA. */
fv_status fv_timer_mark(fv_timer *t, int i);

/* Milliseconds from mark i to mark j (negative if j ran first), waiting
 * for mark j's work when it has not run yet. Returns FV_ERR_BAD_PARAM (t,
 * ms NULL, i or j out of range), FV_ERR_BAD_STATE (a mark not recorded
 * since creation), FV_ERR_CUDA. */
fv_status fv_timer_elapsed(fv_timer *t, int i, int j, float *ms);

#ifdef __cplusplus
}
#endif
#endif
