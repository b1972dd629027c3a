/* fovea-bench conv --sms 8,16: the benchmark's shapes on CUDA green-context
 * slices of the GPU (bench_slice.c), beside the whole GPU's autotuned time,
 * and the Orin estimates of bench_slice.c from them (bytes: the shape's
 * DRAM-floor bytes, as in bench_conv.c's floors).
 *
 * Which op runs on a slice: fovea's kernels launch on the context's stream
 * and cuDNN runs on its handle's stream, which fv_context_cuda_set_stream
 * moves too (cudnnSetStream, conv_engine.c); a kernel launched on a green
 * context's stream runs on that context's SMs. So an op made on the whole
 * GPU would run on the slice, but with the engine chosen for the whole GPU.
 * Each shape's op is made again on each slice instead, after the stream is
 * set, autotuned there (FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_PROFILE): the
 * candidates are timed on the slice's SMs, so it gets the engine that is
 * fastest on that many SMs (fovea's GEMM variants are still sized by the
 * whole GPU's SM count, the context's). Its output is checked against the
 * FP32 reference before it is timed, as on the whole GPU.
 *
 * The pass runs after the rest of the benchmark in a context of its own:
 * every op's choice goes into its context's profile, which --profile
 * writes from the benchmark's context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_conv.h"

#if FV_BUILT_WITH_CUDA
#include "fovea/fovea_cuda.h"

/* Slice i of S for one shape: made, the op made and timed on it, torn
 * down. Returns nonzero only when the device is in error (stop). */
static int run_one(const bc_opts *o, const bc_env *e, bc_case *c, bc_slices *S, int i,
                   bc_slice_shape *x) {
    char *why = x->why[i];
    const size_t wn = sizeof x->why[i];
    bench_slice sl;
    if (bench_slice_open(&sl, e->info.device_index, S->want[i], why, wn)) return 0;
    int rc = 0;
    fv_status s = fv_context_cuda_set_stream(e->ctx, (cudaStream_t)sl.stream);
    if (s != FV_OK) {
        snprintf(why, wn, "fv_context_cuda_set_stream: %.120s", fv_last_error());
    } else {
        bc_env se = *e; /* bc_time records its events (and the L2 scrub) on se.stream */
        se.stream = (cudaStream_t)sl.stream;
        bc_result r;
        uint32_t how = o->sms_heuristic ? 0 : FV_CONV2D_AUTOTUNE;
        rc = bc_run_fovea(&se, c, how | FV_CONV2D_NO_PROFILE, 0, &r);
        if (r.ok) {
            x->ms[i] = r.t.median_ms;
            snprintf(x->engine[i], sizeof x->engine[i], "%s", r.info.engine);
        } else {
            snprintf(why, wn, "%.150s", r.why[0] ? r.why : "failed (see the log)");
        }
        fv_context_cuda_set_stream(e->ctx, NULL); /* waits for the slice's stream */
    }
    bench_slice_close(&sl);
    return rc && bc_device_ok();
}

/* Prints the table: each shape's full-GPU time, its time on each slice (and
 * over the full GPU's), the Orin estimates. */
static void print_table(const bc_slices *S) {
    bench_orin_estimate o[BENCH_ORINS];
    int none[BENCH_MAX_SLICES] = {0};
    double nan[BENCH_MAX_SLICES];
    for (int i = 0; i < S->n; i++)
        nan[i] = NAN;
    bench_slice_orin_estimate(S->mhz, 0, none, nan, S->n, o); /* the boards' figures */
    printf("\nGPU slices (CUDA green contexts), fovea %s on each slice, ms (x: over the "
           "full GPU's autotuned, %d SMs, %.0f MHz), and the Orin estimates, ms:\n",
           S->heuristic ? "by heuristics" : "autotuned", S->full_sms, S->mhz);
    printf("Orin estimate: t = max(t_slice(Orin's SMs) x %.0f MHz / f_orin, shape MB / bw_orin); ",
           S->mhz);
    for (int k = 0; k < BENCH_ORINS; k++)
        printf("%s%s %d SMs, %.0f MHz, %.1f GB/s", k ? "; " : "", o[k].name, o[k].sms, o[k].mhz,
               o[k].gbps);
    printf("\n%2s %-34s %9s |", "#", "shape", "full ms");
    for (int i = 0; i < S->n; i++) {
        char h[32];
        snprintf(h, sizeof h, "%d SMs ms", S->got[i] ? S->got[i] : S->want[i]);
        printf(" %10s %6s", h, "x");
    }
    printf(" |");
    for (int k = 0; k < BENCH_ORINS; k++)
        printf(" %14s", o[k].name);
    printf("\n");
    for (int j = 0; j < S->nshapes; j++) {
        const bc_slice_shape *x = &S->shape[j];
        printf("%2d %-34s ", x->s.index, x->s.name);
        if (isfinite(x->full_ms))
            printf("%9.4f |", x->full_ms);
        else
            printf("%9s |", "-");
        if (x->skip[0]) {
            printf(" skipped: %s\n", x->skip);
            continue;
        }
        for (int i = 0; i < S->n; i++)
            if (isfinite(x->ms[i]))
                printf(" %10.4f %6.2f", x->ms[i], x->ms[i] / x->full_ms);
            else
                printf(" %10s %6s", "-", "-");
        printf(" |");
        for (int k = 0; k < BENCH_ORINS; k++)
            if (isfinite(x->orin[k].ms))
                printf(" %14.4f", x->orin[k].ms);
            else
                printf(" %14s", "-");
        printf("\n");
    }
    for (int i = 0; i < S->n; i++)
        if (!S->got[i]) printf("%d SMs: skipped: %s\n", S->want[i], S->why[i]);
}

/* The pass; 1 with S->skipped set when no slice can be made. */
static int run_all(const bc_opts *o, const char *list, size_t pool, bc_slices *S) {
    for (int j = 0; j < S->nshapes; j++)
        for (int i = 0; i < BENCH_MAX_SLICES; i++)
            S->shape[j].ms[i] = NAN;
    S->n = bench_slice_list("conv", list, S->want, BENCH_MAX_SLICES); /* checked before */
    if (S->n <= 0) {
        snprintf(S->skipped, sizeof S->skipped, "no SM counts in --sms %s", list);
        return 1;
    }
    bc_env e;
    if (bc_env_open(&e, o, NULL, pool) != 0) {
        snprintf(S->skipped, sizeof S->skipped, "no CUDA context for the slices (above)");
        return 1;
    }
    S->mhz = bench_slice_mhz(e.info.device_index);
    S->heuristic = o->sms_heuristic;
    S->full_sms = e.info.multiprocessors;
    /* each slice once, to know what the driver gives (or why not) */
    int open = 0;
    for (int i = 0; i < S->n; i++) {
        bench_slice sl;
        if (bench_slice_open(&sl, e.info.device_index, S->want[i], S->why[i], sizeof S->why[i]) ==
            0) {
            S->got[i] = sl.sms;
            open++;
        }
        bench_slice_close(&sl);
    }
    if (!open) {
        snprintf(S->skipped, sizeof S->skipped, "%s", S->why[0]);
        bc_env_close(&e);
        return 1;
    }
    printf("\nGPU slices (--sms %s): each shape's op made on each slice, %s, checked, timed "
           "(median of %d after %d warm-up)\n",
           list, o->sms_heuristic ? "its engine by heuristics" : "autotuned there", o->iters,
           o->warmup);
    int stop = 0;
    for (int j = 0; j < S->nshapes; j++) {
        bc_slice_shape *x = &S->shape[j];
        for (int i = 0; i < S->n; i++)
            if (!S->got[i]) snprintf(x->why[i], sizeof x->why[i], "%s", S->why[i]);
        if (stop && !x->skip[0])
            snprintf(x->skip, sizeof x->skip, "not run: the device is in error");
        if (x->skip[0]) continue;
        bc_case c;
        printf("[slices %d/%d] %s:", j + 1, S->nshapes, x->s.name);
        fflush(stdout);
        if (bc_case_create(&e, &x->s, 1, &c) != 0) {
            snprintf(x->skip, sizeof x->skip, "its data or reference failed (see the log)");
            printf(" %s\n", x->skip);
            bc_case_destroy(&c);
            stop = bc_device_ok();
            continue;
        }
        for (int i = 0; i < S->n && !stop; i++) {
            if (!S->got[i]) continue;
            stop = run_one(o, &e, &c, S, i, x);
            if (isfinite(x->ms[i]))
                printf(" %d SMs %.4f ms (%s);", S->got[i], x->ms[i], x->engine[i]);
            else
                printf(" %d SMs not timed: %s;", S->got[i], x->why[i]);
            fflush(stdout);
        }
        printf("\n");
        bc_case_destroy(&c);
        bench_slice_orin_estimate(S->mhz, x->bytes, S->got, x->ms, S->n, x->orin);
    }
    bc_env_close(&e);
    return 0;
}

void bc_slices_run(const bc_opts *o, const char *list, size_t pool, bc_slices *S) {
    if (run_all(o, list, pool, S))
        printf("\nGPU slices (--sms) skipped: %s\n", S->skipped);
    else
        print_table(S);
}

static void json_num(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fprintf(f, "null");
}

void bc_json_slices(FILE *f, const bc_slices *S) {
    fprintf(f, ",\n  \"slices\": {\"skipped\": ");
    if (S->skipped[0]) {
        bc_json_str(f, S->skipped);
        fprintf(f, "}");
        return;
    }
    fprintf(f,
            "null, \"variant\": \"%s, made on each slice\", \"full_sms\": %d, \"mhz\": "
            "%.0f, \"sms\": [",
            S->heuristic ? "heuristic engine" : "autotuned", S->full_sms, S->mhz);
    for (int i = 0; i < S->n; i++) {
        fprintf(f, "%s{\"asked\": %d, \"given\": %d, \"why\": ", i ? ", " : "", S->want[i],
                S->got[i]);
        if (S->got[i])
            fprintf(f, "null}");
        else {
            bc_json_str(f, S->why[i]);
            fprintf(f, "}");
        }
    }
    fprintf(f, "],\n    \"shapes\": [");
    for (int j = 0; j < S->nshapes; j++) {
        const bc_slice_shape *x = &S->shape[j];
        fprintf(f, "%s\n      {\"name\": ", j ? "," : "");
        bc_json_str(f, x->s.name);
        fprintf(f, ", \"index\": %d, \"bytes\": %.0f, \"full_ms\": ", x->s.index, x->bytes);
        json_num(f, x->full_ms);
        fprintf(f, ", \"skipped\": ");
        if (x->skip[0]) {
            bc_json_str(f, x->skip);
            fprintf(f, "}");
            continue;
        }
        fprintf(f, "null,\n       \"sms\": [");
        for (int i = 0; i < S->n; i++) {
            fprintf(f, "%s{\"asked\": %d, \"given\": %d, \"ms\": ", i ? ", " : "", S->want[i],
                    S->got[i]);
            json_num(f, x->ms[i]);
            fprintf(f, ", \"x_full\": ");
            json_num(f, x->ms[i] / x->full_ms);
            fprintf(f, ", \"engine\": ");
            bc_json_str(f, isfinite(x->ms[i]) ? x->engine[i] : "");
            fprintf(f, ", \"why\": ");
            if (isfinite(x->ms[i]))
                fprintf(f, "null}");
            else {
                bc_json_str(f, x->why[i]);
                fprintf(f, "}");
            }
        }
        fprintf(f, "],\n       \"orin\": ");
        bench_orin_json(f, x->orin);
        fprintf(f, "}");
    }
    fprintf(f, "\n    ]}");
}
#endif /* FV_BUILT_WITH_CUDA */
