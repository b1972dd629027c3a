/* fovea-regress: the on-device regression suite. Shared pieces of its
 * sections (ops, golden, perf) and the report they fill. */
#ifndef FOVEA_REGRESS_H
#define FOVEA_REGRESS_H

#include <stddef.h>
#include <stdio.h>
#include "fovea/fovea.h"

/* INFO lines (the context's description) are not counted in the summary. */
typedef enum { RG_PASS = 0, RG_FAIL = 1, RG_SKIP = 2, RG_INFO = 3 } rg_status;

/* One line of the report. value/limit: the measured number and its bound
 * (NAN when the check has none), in `unit`. */
typedef struct rg_check {
    char section[12]; /* "context", "ops", "golden", "perf" */
    char name[96];
    rg_status status;
    double value, limit;
    char unit[12];
    char detail[256];
} rg_check;

typedef struct rg_report {
    rg_check *c;
    int n, cap;
    int lost; /* lines dropped (out of memory): failures */
    int quick;
} rg_report;

/* Counts of PASS, FAIL (lost lines included) and SKIP lines. */
void rg_counts(const rg_report *r, int *pass, int *fail, int *skip);
/* The report as text, one section after another, then the summary line. */
void rg_print(FILE *f, const rg_report *r);
/* The report as JSON (context, options, checks, summary). 0, or -1 with
 * errno set. */
int rg_write_json(const char *path, const rg_report *r, const fv_context_info *info,
                  const char *options_json);
void rg_free(rg_report *r);

/* Adds a line. detail is printf-style; value/limit NAN when not applicable.
 * Out of host memory, the line is dropped and counted as a failure. */
void rg_add(rg_report *r, const char *section, const char *name, rg_status st, double value,
            double limit, const char *unit, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

/* Random FP16 values in [lo, hi), never zero (zeros can hide faults and
 * run faster). */
void rg_fill_random(float *x, size_t n, float lo, float hi);

/* ||a - b|| / ||b||; INFINITY when a has a non-finite value. */
double rg_rel_l2(const float *a, const float *b, size_t n);

/* Section runners. ctx: the context under test; ref: a CPU context with FP32
 * tensors (the reference). */
void rg_run_ops(rg_report *r, fv_context *ctx, fv_context *ref);
/* cases: path of cases.txt; refs: its folder; data: the images' folder. */
void rg_run_golden(rg_report *r, fv_context *ctx, const char *cases, const char *refs,
                   const char *data);

typedef struct rg_perf_opts {
    const char *profile; /* NULL: none */
    double margin;       /* FAIL when measured > recorded * (1 + margin) */
    int device;
    int warmup, iters;
} rg_perf_opts;
/* ctx_info: of the context under test (CPU: the section is skipped). */
void rg_run_perf(rg_report *r, const rg_perf_opts *o, const fv_context_info *ctx_info);

#endif
