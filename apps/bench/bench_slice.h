/* fovea-bench --sms: fovea on CUDA green-context slices of the GPU
 * (bench_slice.c): the slices themselves, shared by edge, net and conv, the
 * Orin estimate from their times, and the edge filter's table. */
#ifndef FOVEA_BENCH_SLICE_H
#define FOVEA_BENCH_SLICE_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

#define BENCH_MAX_SLICES 8
#define BENCH_ORINS      2

/* A slice of the GPU: a green context of some SMs and a stream on it. */
typedef struct bench_slice {
    int sms;            /* the SMs it has (the driver rounds the count asked up) */
    void *stream;       /* cudaStream_t: give it to fv_context_cuda_set_stream */
    void *green, *prev; /* CUgreenCtx; the CUcontext current before */
} bench_slice;

/* Parses list, SM counts "8,16", into want (at most max). Returns the count,
 * or -1 after printing why under cmd's name. */
int bench_slice_list(const char *cmd, const char *list, int *want, int max);

/* Makes a slice of n SMs of device and makes its context current on this
 * thread (launches on its stream need that), until bench_slice_close.
 * Returns 0, or 1 with why (green contexts unsupported by the driver or
 * the GPU, a count it cannot give...); s is then closed already. */
int bench_slice_open(bench_slice *s, int device, int n, char *why, size_t wn);
/* Makes the previous context current again and destroys the stream and the
 * green context. Work queued on the stream must be done (and fovea's
 * context set back to its own stream). A zeroed or closed s is fine. */
void bench_slice_close(bench_slice *s);

/* The Orin estimate of one board. */
typedef struct bench_orin_estimate {
    const char *name;
    int sms;
    double mhz, gbps;
    double sm_ms;   /* the slice of its SM count, at its clock; NAN: none timed */
    double dram_ms; /* bytes at its DRAM bandwidth */
    double ms;      /* the larger; NAN when sm_ms is */
} bench_orin_estimate;

/* The estimate (the model in bench_orin.c) for each Orin, into est
 * (BENCH_ORINS entries), from the slices timed: got[i] SMs, ms[i] per run
 * (NAN: not timed); mhz: this GPU's SM clock; bytes: what a run must move
 * through DRAM. An Orin with no slice of its SM count gets ms NAN. */
void bench_slice_orin_estimate(double mhz, double bytes, const int *got, const double *ms, int n,
                               bench_orin_estimate *est);
/* Prints the estimate (the model in bench_orin.c) for each Orin from the
 * slices timed: got[i] SMs, ms[i] per run (NAN: not timed); mhz: this GPU's
 * SM clock; bytes: what a run must move through DRAM. est (BENCH_ORINS
 * entries) may be NULL. */
void bench_slice_orin(double mhz, double bytes, const int *got, const double *ms, int n,
                      bench_orin_estimate *est);

/* This GPU's SM clock in MHz (0 when unknown). */
double bench_slice_mhz(int device);

/* fovea-bench edge --sms: the edge filter on each slice of list, beside the
 * full GPU, and the Orin estimates. Prints the table; a slice that cannot
 * be made is skipped with the reason. Returns 0, or 1 (no CUDA context) or
 * 2 (bad list). */
int bench_edge_slices(const char *list, int device, int width, int height, int batch, int runs);

/* One "key": ms member of an estimate (null when not estimated). */
static inline void bench_orin_ms_json(FILE *f, const char *key, double ms) {
    if (isfinite(ms))
        fprintf(f, ", \"%s\": %.6g", key, ms);
    else
        fprintf(f, ", \"%s\": null", key);
}

/* Writes the BENCH_ORINS estimates as a JSON array of objects (name, sms,
 * mhz, gbps, sm_ms, dram_ms, ms; a time not estimated is null). Inline: the
 * CPU-only build (no bench_slice.c) writes the JSON too. */
static inline void bench_orin_json(FILE *f, const bench_orin_estimate *est) {
    fprintf(f, "[");
    for (int k = 0; k < BENCH_ORINS; k++) {
        const bench_orin_estimate *e = &est[k];
        /* the names are the table's own: nothing to escape */
        fprintf(f, "%s{\"name\": \"%s\", \"sms\": %d, \"mhz\": %.0f, \"gbps\": %.1f", k ? ", " : "",
                e->name, e->sms, e->mhz, e->gbps);
        bench_orin_ms_json(f, "sm_ms", e->sm_ms);
        bench_orin_ms_json(f, "dram_ms", e->dram_ms);
        bench_orin_ms_json(f, "ms", e->ms);
        fprintf(f, "}");
    }
    fprintf(f, "]");
}

#endif
