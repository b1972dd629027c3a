/* fovea-bench: the GPU convolution benchmarks (`conv`, `conv-tables`) and
 * their raw legacy-cuDNN peer. Shared by bench_conv.c, bench_conv_tables.c
 * and legacy_cudnn.c; main.c only sees the two subcommand entry points. */
#ifndef FOVEA_BENCH_CONV_H
#define FOVEA_BENCH_CONV_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/fovea.h"

/* Subcommands. Without a GPU (or a build without CUDA) they print why and
 * return 2. */
int bench_cmd_conv(int argc, char **argv);
int bench_cmd_conv_tables(int argc, char **argv);

/* One convolution: N x H x W x C -> K, R x S window, square stride and pad. */
typedef struct bc_shape {
    char name[64];
    int n, h, w, c, k, r, s, stride, pad;
    int index; /* position in calibration/best_practices.h, -1 for others */
} bc_shape;

/* Options of both subcommands (bench_conv_io.c). */
typedef struct bc_opts {
    int iters, warmup;
    int batch;          /* N of every table shape; 0: the table's own */
    const char *shapes; /* "all" or "i,j,..." (0-based indices into the table) */
    const char *json, *profile;
    int profile_only;
    int profile_repeats; /* ops created from the warm profile per shape (medians over them) */
    int flush;           /* 1: scrub L2 before each timed call; 0: rotate buffers */
    size_t ws_limit;     /* bytes */
    double tol;
    const char *sms; /* conv --sms 8,16: also on green-context slices of that many SMs; NULL none */
    int sms_heuristic; /* conv --sms-tune heuristic: the slices' ops choose by heuristics */
    int candidates;    /* conv --candidates: autotune's time for each candidate, on stderr */
} bc_opts;

enum { BC_MAX_REPEATS = 50 }; /* most --profile-repeats */

/* Parses the options; tables selects conv-tables' defaults. Prints why and
 * returns nonzero on a bad one. */
int bc_parse_opts(int argc, char **argv, bc_opts *o, int tables);
/* The table's shapes named by spec, with N replaced by batch when > 0.
 * Returns how many, or -1 (having printed why). */
int bc_select_shapes(const char *spec, bc_shape *out, int max, int batch);
enum { BC_MAX_SHAPES = 64 };
/* A device pool that holds any one of the shapes' cases and their ops. */
size_t bc_pool_bytes(const bc_shape *s, int n, size_t ws_limit);

#if FV_BUILT_WITH_CUDA
#include <stdio.h>
#include <cuda_runtime.h>

int bc_out_dim(int in, int kernel, int stride, int pad);
double bc_gflop(const bc_shape *s); /* 2 * N*P*Q*K*C*R*S / 1e9 */

/* Timings of one variant: each sample is one call bracketed by CUDA events
 * on the stream, after warm-up. */
typedef struct bc_timing {
    double median_ms, min_ms, mean_ms;
    int iters;
    /* bc_time_pair: the medians of the calls it made first, and second, in
     * a turn (0 from bc_time) */
    double first_ms, second_ms;
} bc_timing;

/* Where the benchmarks run: a CUDA context, its stream, the options. */
typedef struct bc_env {
    fv_context *ctx;
    fv_context_info info;
    cudaStream_t stream;
    int warmup, iters;
    double tol;      /* largest relative L2 error accepted before timing */
    size_t l2_bytes; /* the GPU's L2 */
    size_t ws_limit; /* workspace limit, fovea and legacy alike */
    void *flush;     /* flush mode: 2 x L2 bytes scrubbed before each timed call */
    size_t flush_bytes;
    int cudnn_version;   /* cudnnGetVersion() as the legacy peer sees it */
    char cudnn_lib[512]; /* the libcudnn file that is loaded */
} bc_env;

/* Creates the CUDA context from o (and, with o->flush, the scrub buffer) and
 * the legacy peer on its stream. profile: the context's profile, or NULL.
 * Returns 2 with a "needs a GPU" message when there is none, 1 on other
 * failures (e is then closed). After bc_env_close, info and the cuDNN
 * fields stay readable. */
int bc_env_open(bc_env *e, const bc_opts *o, const char *profile, size_t pool_bytes);
void bc_env_close(bc_env *e);
int bc_cmp_double(const void *a, const void *b);

/* Runs fn(arg, i % nsets) e->warmup times, then e->iters times, each between
 * two events; fn returns nonzero on failure (and has printed why). */
int bc_time(const bc_env *e, int nsets, int (*fn)(void *arg, int set), void *arg, bc_timing *out);
/* Two functions timed in turns, the order swapped every other turn (a b,
 * b a, a b, ...), each call between its own events (and after its own L2
 * scrub in flush mode). Each gets the statistics of all its calls and the
 * medians of its calls in each position (first_ms, second_ms). */
int bc_time_pair(const bc_env *e, int nsets, int (*fa)(void *arg, int set), void *aa,
                 int (*fb)(void *arg, int set), void *ab, bc_timing *out_a, bc_timing *out_b);
/* a's time over b's from one bc_time_pair: the ratio of their medians in
 * each position, then the geometric mean of the two. Position matters: on
 * the H100 the first call of a turn ran up to 0.9 us longer than the second
 * on a 7 us op, whichever of the two ops it was, so a fixed order would
 * charge that to one of them. Falls back to the ratio of the medians when
 * the positions were not recorded. */
double bc_pair_ratio(const bc_timing *a, const bc_timing *b);
double bc_now_ms(void);
/* Sleeps ms milliseconds (the host; the GPU idles if nothing is queued). */
void bc_sleep_ms(double ms);

/* Bytes of a shape's F16 input (out 0) or output (out 1) as fovea stores it. */
size_t bc_stored_bytes(const bc_shape *s, int out);
/* Input/output pairs to rotate over so that the data does not sit in L2
 * (rotate mode); 1 when it cannot fit anyway, or in flush mode. */
enum { BC_MAX_SETS = 128 };
int bc_nsets(const bc_env *e, const bc_shape *s);
/* The conv desc of a shape (stride and pad on both axes, identity, no bias). */
fv_conv2d_desc bc_desc(const bc_shape *s, fv_dtype dtype, const float *weights);

/* ||a - b|| / ||b|| in double; NaN or Inf anywhere in a gives +Inf. */
double bc_rel_l2(const float *a, const float *b, size_t n);

/* Values in [lo, hi), rounded to FP16 so that every path sees the same numbers. */
void bc_fill_random(float *x, size_t n, float lo, float hi);

/* Prints "fovea-bench: <what>: <status name>: <last error>" and returns 1. */
int bc_fv_fail(const char *what, fv_status s);

/* ---- legacy cuDNN (cudnnConvolutionForward), legacy_cudnn.c -------------- */
/* All legacy objects share one cuDNN handle and one workspace of ws_limit
 * bytes (smaller if that much cannot be allocated), queued on stream. */
int lc_init(cudaStream_t stream, size_t ws_limit);
void lc_shutdown(void);
int lc_cudnn_version(void);         /* cudnnGetVersion() of the loaded library */
const char *lc_cudnn_library(void); /* path of the loaded libcudnn ("?" if unknown) */
size_t lc_workspace_bytes(void);
/* Every libcudnn* file mapped into this process, ':'-separated (Linux). */
void lc_cudnn_mapped(char *buf, size_t n);

enum { LC_ALGO_COUNT = 8 };
const char *lc_algo_name(int algo);

typedef struct lc_desc {
    bc_shape shape;
    int f32;   /* 0: half tensors (FP32 accumulate); 1: float tensors */
    int nchw;  /* 0: NHWC tensors and KRSC filter; 1: NCHW and KCRS */
    int math;  /* cudnnMathType_t */
    int nsets; /* input/output buffer pairs to rotate over; >= 1 */
} lc_desc;

typedef struct lc_conv lc_conv;

/* Descriptors plus nsets (x, y) device buffers and the filter. */
int lc_create(const lc_desc *d, lc_conv **out);
void lc_destroy(lc_conv *c);
/* x: dense NHWC float host data of set `set`; w: KCRS float (NULL: keep).
 * Converted to the conv's layout and dtype; synchronous. */
int lc_upload(lc_conv *c, int set, const float *x, const float *w);
/* y of set `set` as dense NHWC float; synchronous. */
int lc_download(lc_conv *c, int set, float *y);
/* Fills y of set `set` with NaN (all bits set), asynchronously. */
int lc_poison(lc_conv *c, int set);

typedef struct lc_algo_perf {
    int algo;
    int status;    /* cudnnStatus_t of the algorithm (Find's, or the workspace query's) */
    float find_ms; /* Find's own time, -1 when not run */
    size_t memory; /* workspace bytes */
    int math;      /* cudnnMathType_t it ran with */
} lc_algo_perf;

/* cudnnFindConvolutionForwardAlgorithmEx over all algorithms on set 0;
 * chooses the fastest successful one. perf (may be NULL) gets one entry per
 * algorithm, indexed by algorithm number. Returns nonzero when none works. */
int lc_find(lc_conv *c, lc_algo_perf perf[LC_ALGO_COUNT]);
/* The algorithms Find timed successfully within the workspace, fastest
 * first; returns how many. */
int lc_find_order(const lc_algo_perf perf[LC_ALGO_COUNT], int order[LC_ALGO_COUNT]);
/* cudnnGetConvolutionForwardAlgorithm_v7's algorithms that claim to work
 * within the workspace, best first (no timing; for references). */
int lc_heuristic_order(lc_conv *c, int order[LC_ALGO_COUNT]);
/* Uses algo: queries its workspace; returns its cudnnStatus_t (0 success),
 * -1 on other failures. */
int lc_set_algo(lc_conv *c, int algo);
int lc_algo(const lc_conv *c);
float lc_find_ms(const lc_conv *c); /* Find's time of the chosen algo, or -1 */
size_t lc_algo_workspace(const lc_conv *c);
int lc_algo_math(const lc_conv *c);
/* One forward on set `set`, asynchronous on the stream. Returns cudnnStatus_t
 * (0 success), printing failures. */
int lc_forward(lc_conv *c, int set);
int lc_forward_fn(void *conv, int set); /* the same, for bc_time */
const char *lc_status_name(int status);
const char *lc_math_name(int math);

/* ---- one shape, run and checked (bench_conv_case.c) ---------------------- */
typedef struct bc_case {
    bc_shape s;
    int p, q, nsets;
    size_t xn, yn, wn; /* dense element counts */
    float **x;         /* nsets dense NHWC inputs (FP16 values), never zero */
    float *w, *bias;   /* KCRS weights, K biases (FP16 values) */
    float *ref;        /* FP32 reference of set 0, no bias: legacy cuDNN, FMA math; or NULL */
    float *y, *want;   /* scratch: an output, an expected output */
    fv_half *hb;       /* scratch for FP16 transfers */
    fv_tensor **in, **out;
} bc_case;

/* Draws the data, creates and fills the fovea tensors, and with with_ref
 * computes the reference. Returns nonzero (having printed why) on failure;
 * bc_case_destroy cleans up after a failure too. */
int bc_case_create(const bc_env *e, const bc_shape *s, int with_ref, bc_case *c);
void bc_case_destroy(bc_case *c);

typedef struct bc_result {
    int ran;          /* 1 when it was attempted */
    int ok;           /* 1 when it ran and (if checked) passed the check: timings valid */
    double err;       /* relative L2 error against the reference; -1 unchecked */
    double create_ms; /* host time of fv_conv2d_create (fovea) or of Find (legacy) */
    bc_timing t;
    bc_timing pair; /* the op it was timed against, interleaved (pair.iters 0: none) */
    char why[256];  /* when not ok */
    /* fovea */
    fv_conv2d_info info;
    /* legacy */
    int algo, math;
    float find_ms;
    size_t workspace;
} bc_result;

/* fovea: creates the op (flags; fused adds bias + ReLU), checks set 0
 * against the reference (poisoned output first), then times. Returns
 * nonzero only on failures that should stop the benchmark. */
int bc_run_fovea(const bc_env *e, bc_case *c, uint32_t flags, int fused, bc_result *r);
/* The same, and: pair (or NULL), an op on the same case, is timed with it
 * call for call (r->pair): a ratio of the two is then free of drift between
 * separate timing runs (clocks, other work); keep (or NULL) receives the op
 * instead of it being destroyed (the caller destroys it). */
int bc_run_fovea_ex(const bc_env *e, bc_case *c, uint32_t flags, int fused, fv_conv2d *pair,
                    fv_conv2d **keep, bc_result *r);
/* legacy cuDNN, FP16 NHWC, tensor-op math, best of Find: the same. */
int bc_run_legacy(const bc_env *e, bc_case *c, bc_result *r);
/* legacy cuDNN as d says: Find, then the fastest algorithm whose output
 * passes the check against c->ref (tol), timed. r->why names any faster
 * algorithm that failed the check. */
int bc_run_legacy_desc(const bc_env *e, bc_case *c, const lc_desc *d, double tol, bc_result *r);
/* 0 when the device has no sticky error (after a failure: go on with the
 * next shape); else prints it and returns 1. */
int bc_device_ok(void);
/* JSON pieces (bench_conv_io.c). */
void bc_json_str(FILE *f, const char *s);
void bc_json_head(FILE *f, const char *bench, const bc_env *e, const bc_opts *o);
void bc_json_shape(FILE *f, const bc_shape *s);
void bc_json_result(FILE *f, const bc_result *r, int legacy);

/* ---- --sms: fovea on green-context slices of the GPU (bench_conv_slice.c) ---- */
#include "bench_slice.h"

/* One shape on the slices: the autotuned op made on each slice, timed there. */
typedef struct bc_slice_shape {
    bc_shape s;
    double full_ms; /* set by the caller: the autotuned op on the whole GPU; NAN: none */
    double bytes;   /* set by the caller: the shape's DRAM-floor bytes */
    char skip[160]; /* set by the caller: why the shape is not run on the slices; "" to run */
    double ms[BENCH_MAX_SLICES]; /* per slice; NAN: not timed (why says why) */
    char engine[BENCH_MAX_SLICES][64];
    char why[BENCH_MAX_SLICES][160];
    bench_orin_estimate orin[BENCH_ORINS];
} bc_slice_shape;

typedef struct bc_slices {
    int n;                                             /* slices asked */
    int want[BENCH_MAX_SLICES], got[BENCH_MAX_SLICES]; /* got 0: the slice could not be made */
    char why[BENCH_MAX_SLICES][200];                   /* why not, when got is 0 */
    double mhz;                                        /* the SM clock */
    int full_sms;
    int heuristic;     /* the slices' ops chose by heuristics (--sms-tune), not autotuned */
    char skipped[200]; /* why no slice ran; "" when some did */
    int nshapes;
    bc_slice_shape shape[BC_MAX_SHAPES];
} bc_slices;

/* Runs the shapes of S (S->shape[0..nshapes), the caller's fields set) on
 * the slices of list, in a context of its own made from o and pool:
 * each shape's op created on each slice, autotuned there (or by heuristics:
 * o->sms_heuristic), checked, timed.
 * Prints progress and the table (with the Orin estimates). A slice that
 * cannot be made is skipped with the reason (S->skipped when none can);
 * never fails the benchmark. */
void bc_slices_run(const bc_opts *o, const char *list, size_t pool, bc_slices *S);
/* The "slices" member of the --json object (a leading ",\n  "). */
void bc_json_slices(FILE *f, const bc_slices *S);

/* Checks the FP32 reference against fovea's CPU backend (and prints fovea
 * GPU and legacy errors) on small shapes. Returns nonzero when the
 * reference is wrong: then no check of this benchmark would mean anything. */
int bc_selftest(const bc_env *e, char *summary, size_t n);

#endif /* FV_BUILT_WITH_CUDA */
#endif
