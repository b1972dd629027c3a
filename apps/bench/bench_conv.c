/* fovea-bench conv: the 15 convolutions of the cuDNN best-practices tables
 * (calibration/best_practices.h), FP16 NHWC, through
 *   fovea heuristics (FV_CONV2D_NO_PROFILE),
 *   fovea autotuned (FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_PROFILE),
 *   fovea autotuned over cuDNN's engines only (... | FV_CONV2D_NO_DIRECT),
 *   fovea autotuned with bias + ReLU fused,
 *   raw legacy cuDNN, best of cudnnFindConvolutionForwardAlgorithmEx,
 * and with --profile the op created from a warm profile --profile-repeats
 * times (create time, first vs hundredth forward, medians over the
 * creations). Every output is checked against an FP32 reference
 * (legacy cuDNN, float tensors, FMA math) before anything is timed; a shape
 * whose fovea error exceeds the tolerance gets no timings. conv_vs_pytorch.py
 * runs this with --json and adds PyTorch. With --sms 8,16, after everything
 * else, the autotuned op again on CUDA green-context slices of that many
 * SMs, with Orin estimates (bench_conv_slice.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_conv.h"
#include "bench_floor.h"

#if !FV_BUILT_WITH_CUDA
int bench_cmd_conv(int argc, char **argv) {
    bc_opts o;
    if (bc_parse_opts(argc, argv, &o, 0)) return 2;
    bc_shape shapes[BC_MAX_SHAPES]; /* a malformed --shapes is said first, as with a GPU */
    if (bc_select_shapes(o.shapes, shapes, BC_MAX_SHAPES, o.batch) <= 0) return 2;
    fprintf(stderr, "fovea-bench conv needs a GPU: this fovea was built without its CUDA backend "
                    "(no CUDA toolkit or cuDNN found at configure time)\n");
    return 2;
}
#else
#include "fovea/fovea_cuda.h"

/* The fovea variants come first (V_HEUR..V_FUSED): a shape where one of
 * them fails its check reports no timings. */
enum { V_HEUR, V_AUTO, V_CUDNN, V_FUSED, V_LEGACY, V_COUNT };
static const char *vnames[V_COUNT] = {"heuristic", "autotuned", "cudnn", "fused", "legacy"};

typedef struct shape_run {
    bc_shape s;
    int nsets, ok;
    char why[256];
    bc_result r[V_COUNT];
} shape_run;

/* The fused op's time over the bare conv's: over the autotuned op timed
 * call for call with it (bc_pair_ratio), else over the autotuned op's own
 * timing. */
static double fused_vs_bare(const bc_result *r) {
    if (r[V_FUSED].pair.iters) return bc_pair_ratio(&r[V_FUSED].t, &r[V_FUSED].pair);
    return r[V_FUSED].t.median_ms / r[V_AUTO].t.median_ms;
}

/* The device's floors, measured once in this run (bench_floor.h). */
static bench_floors g_floors;

/* A shape's bytes (input, weights, output as fovea stores them, FP16) and
 * its floors: DRAM, tensor cores, and the larger. */
static double shape_bytes(const bc_shape *s) {
    double w = (double)((s->k + 7) / 8 * 8) * s->r * s->s * ((s->c + 7) / 8 * 8) * 2;
    return (double)bc_stored_bytes(s, 0) + (double)bc_stored_bytes(s, 1) + w;
}

static void floors_of(const bc_shape *s, double *dram, double *mma, double *fl) {
    *dram = bench_dram_floor_ms(&g_floors, shape_bytes(s));
    *mma = bench_mma_floor_ms(&g_floors, bc_gflop(s) * 1e9);
    *fl = *dram > *mma ? *dram : *mma;
}

static void print_floors(const shape_run *sr, int n) {
    if (g_floors.dram_gbps <= 0 && g_floors.mma_tflops <= 0) {
        printf("floors not measured: %s\n", g_floors.why);
        return;
    }
    printf("\nfloors (this run: DRAM %.0f GB/s from a device-to-device copy; tensor cores %.0f "
           "TFLOP/s from a %d^3 FP16 cuBLASLt GEMM, FP32 accumulation)\n",
           g_floors.dram_gbps, g_floors.mma_tflops, g_floors.gemm_m);
    printf("%2s %-34s %9s %9s %9s %-6s | %9s %8s\n", "#", "shape", "MB", "DRAM ms", "TC ms",
           "bound", "auto ms", "auto/flr");
    for (int i = 0; i < n; i++) {
        const shape_run *x = &sr[i];
        double d, m, fl;
        floors_of(&x->s, &d, &m, &fl);
        printf("%2d %-34s %9.2f %9.4f %9.4f %-6s | ", x->s.index, x->s.name,
               shape_bytes(&x->s) / 1e6, d, m, d > m ? "DRAM" : "TC");
        if (x->ok && x->r[V_AUTO].ok && fl > 0)
            printf("%9.4f %8.2f\n", x->r[V_AUTO].t.median_ms, x->r[V_AUTO].t.median_ms / fl);
        else
            printf("%9s %8s\n", "-", "-");
    }
}

static void print_table(const bc_env *e, const bc_opts *o, const shape_run *sr, int n) {
    printf("\nfovea-bench conv: %s (SM %d.%d), cuDNN %d loaded (%s), FP16 NHWC, median of %d "
           "after %d warm-up, L2 %s\n",
           e->info.device_name, e->info.sm_major, e->info.sm_minor, e->cudnn_version, e->cudnn_lib,
           o->iters, o->warmup,
           e->flush ? "scrubbed before each call" : "avoided by rotating buffers");
    printf("%2s %-34s %7s %4s | %9s %9s %9s %9s %9s | %6s %6s %6s %6s | %8s %s\n", "#", "shape",
           "GFLOP", "sets", "heur ms", "auto ms", "cudnn ms", "fused ms", "legacy ms", "h/a", "f/a",
           "a/cud", "a/leg", "err", "autotuned engine");
    double lg[4] = {0}, cnt = 0;
    for (int i = 0; i < n; i++) {
        const shape_run *x = &sr[i];
        printf("%2d %-34s %7.2f %4d | ", x->s.index, x->s.name, bc_gflop(&x->s), x->nsets);
        if (!x->ok) {
            printf("no timings: %s\n", x->why);
            continue;
        }
        for (int v = 0; v < V_COUNT; v++)
            if (x->r[v].ok)
                printf("%9.4f ", x->r[v].t.median_ms);
            else
                printf("%9s ", "-");
        double ha = x->r[V_HEUR].t.median_ms / x->r[V_AUTO].t.median_ms;
        double fa = fused_vs_bare(x->r);
        double ac = x->r[V_AUTO].t.median_ms / x->r[V_CUDNN].t.median_ms;
        double al = x->r[V_LEGACY].ok ? x->r[V_AUTO].t.median_ms / x->r[V_LEGACY].t.median_ms : 0;
        printf("| %6.3f %6.3f %6.3f %6.3f | %8.2g %s (%s)\n", ha, fa, ac, al, x->r[V_AUTO].err,
               x->r[V_AUTO].info.engine, x->r[V_AUTO].info.layout);
        if (x->r[V_LEGACY].ok) {
            lg[0] += log(ha), lg[1] += log(fa), lg[2] += log(ac), lg[3] += log(al), cnt++;
        }
    }
    if (cnt > 0)
        printf("geometric means over %d shapes: heuristic/autotuned %.3f (target <= 1.2), "
               "fused/bare %.3f (target <= 1.05), autotuned/cudnn-only %.3f, autotuned/legacy "
               "%.3f\n",
               (int)cnt, exp(lg[0] / cnt), exp(lg[1] / cnt), exp(lg[2] / cnt), exp(lg[3] / cnt));
}

/* A shape with a wrong (or failed) fovea output reports no timings at all. */
static void refuse(shape_run *x) {
    for (int v = 0; v < V_COUNT; v++)
        if (x->r[v].ok) {
            x->r[v].ok = 0;
            snprintf(x->r[v].why, sizeof x->r[v].why, "not reported: %.200s", x->why);
        }
}

/* Main part: every selected shape, every variant. */
static int run_shapes(const bc_env *e, const bc_opts *o, shape_run *sr, int n) {
    for (int i = 0; i < n; i++) {
        shape_run *x = &sr[i];
        bc_case c;
        printf("[%d/%d] %s: %dx%dx%dx%d -> %d, %dx%d, stride %d, pad %d\n", i + 1, n, x->s.name,
               x->s.n, x->s.h, x->s.w, x->s.c, x->s.k, x->s.r, x->s.s, x->s.stride, x->s.pad);
        fflush(stdout);
        int rc = bc_case_create(e, &x->s, 1, &c);
        x->nsets = c.nsets;
        /* every op's choice goes into the context's profile under a key
         * without the flags, the last one winning: the cuDNN-only variant
         * runs before the full autotuner so that the profile --profile
         * writes holds the autotuned choice */
        if (!rc) rc = bc_run_fovea(e, &c, FV_CONV2D_NO_PROFILE, 0, &x->r[V_HEUR]);
        if (!rc)
            rc =
                bc_run_fovea(e, &c, FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_PROFILE | FV_CONV2D_NO_DIRECT,
                             0, &x->r[V_CUDNN]);
        /* the fused op is timed call for call against the bare autotuned
         * one: their ratio is the fusion's cost, not drift between runs */
        fv_conv2d *bare = NULL;
        if (!rc)
            rc = bc_run_fovea_ex(e, &c, FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_PROFILE, 0, NULL, &bare,
                                 &x->r[V_AUTO]);
        if (!rc)
            rc = bc_run_fovea_ex(e, &c, FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_PROFILE, 1, bare, NULL,
                                 &x->r[V_FUSED]);
        fv_conv2d_destroy(bare);
        if (!rc) rc = bc_run_legacy(e, &c, &x->r[V_LEGACY]);
        bc_case_destroy(&c);
        if (rc) { /* go on with the next shape unless the device is broken */
            snprintf(x->why, sizeof x->why, "failed while running (see the log)");
            refuse(x);
            if (bc_device_ok()) return rc;
            continue;
        }
        x->ok = 1;
        for (int v = V_HEUR; v <= V_FUSED && x->ok; v++)
            if (!x->r[v].ok) {
                x->ok = 0;
                snprintf(x->why, sizeof x->why, "fovea %s: %.200s", vnames[v], x->r[v].why);
            }
        if (!x->ok) refuse(x);
        for (int v = 0; v < V_COUNT; v++) {
            const bc_result *r = &x->r[v];
            if (r->ok)
                printf("    %-9s %9.4f ms  err %.2g  %s\n", vnames[v], r->t.median_ms, r->err,
                       v == V_LEGACY ? lc_algo_name(r->algo) : r->info.engine);
            else
                printf("    %-9s FAILED: %s\n", vnames[v], r->why);
        }
    }
    return 0;
}

/* ---- warm profile ---------------------------------------------------------- */
/* One shape's ops made from the warm profile: `repeats` creations, each bound
 * and run 100 times. One first call is a noisy sample, so the target uses
 * medians over the creations; the worst one and every creation's numbers
 * stay in the report, so that lazy work in one creation (the first in a
 * fresh process loads the engine's kernels) is not hidden. */
typedef struct profile_run {
    int ok;
    int repeats; /* creations that completed */
    /* medians over the creations (median_ms: of each creation's calls 2..100) */
    double create_ms, first_ms, first_wall_ms, hundredth_ms, median_ms, idle_ms;
    double create_max_ms, first_max_ms, ratio_max; /* worst creation */
    double create_all[BC_MAX_REPEATS], first_all[BC_MAX_REPEATS];
    double first_wall_all[BC_MAX_REPEATS], hundredth_all[BC_MAX_REPEATS];
    double median_all[BC_MAX_REPEATS];
    /* the control: one more forward of the same op after the GPU idled as
     * long as the creation made it idle before the first call */
    double idle_all[BC_MAX_REPEATS];
    int engines_differ;  /* 1 when the creations did not all choose the same engine */
    fv_conv2d_info info; /* the first creation's; else the first that was not from the profile */
} profile_run;

typedef struct profile_phase {
    int done;
    char label[64], why_ignored[256];
    int entries, repeats;
    profile_run runs[BC_MAX_SHAPES];
} profile_phase;

enum { PROFILE_CALLS = 100 };

static double median_of(const double *x, int n) {
    double t[BC_MAX_REPEATS];
    if (n <= 0) return 0;
    memcpy(t, x, sizeof t[0] * (size_t)n);
    qsort(t, (size_t)n, sizeof t[0], bc_cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* first / hundredth; 0 rather than Inf or NaN (JSON has neither) */
static double ratio_of(double first, double hundredth) {
    return hundredth > 0 ? first / hundredth : 0;
}

static int from_profile(const fv_conv2d_info *in) {
    return !strncmp(in->choice, "profile", 7) && in->candidates <= 1;
}

/* Creation number rep: create + bind (timed on the host), then
 * PROFILE_CALLS forwards, each on an idle GPU after the L2 scrub. */
static int profile_rep(const bc_env *e, const bc_case *c, const fv_conv2d_desc *d, cudaEvent_t *ev,
                       int rep, profile_run *pr) {
    enum { N = PROFILE_CALLS };
    fv_conv2d *op = NULL;
    fv_conv2d_info info;
    int rc = 0;
    double t0 = bc_now_ms();
    fv_status st = fv_conv2d_create(e->ctx, d, &op); /* flags 0: the profile decides */
    /* set-up also binds the op to its tensors (fv_conv2d_bind), as a
     * pipeline does once: create time includes it */
    for (int i = 0; st == FV_OK && i < c->nsets && i < 4; i++)
        st = fv_conv2d_bind(op, c->in[i], c->out[i]);
    pr->create_all[rep] = bc_now_ms() - t0;
    if (st != FV_OK) {
        rc = bc_fv_fail("fv_conv2d_create/bind (from the profile)", st);
        goto done;
    }
    fv_conv2d_info_get(op, &info);
    if (rep > 0 && strcmp(info.engine, pr->info.engine) != 0) pr->engines_differ = 1;
    if (rep == 0 || (from_profile(&pr->info) && !from_profile(&info))) pr->info = info;
    for (int i = 0; i < N && !rc; i++) {
        if (e->flush) rc = cudaMemsetAsync(e->flush, i & 0xff, e->flush_bytes, e->stream) != 0;
        /* an idle GPU before each call: host work inside the call (a lazy
         * set-up on the first one) shows in the sample instead of hiding
         * behind queued work */
        rc = rc || cudaStreamSynchronize(e->stream) != cudaSuccess;
        double w0 = bc_now_ms();
        rc = rc || cudaEventRecord(ev[2 * i], e->stream) != cudaSuccess;
        if (!rc) st = fv_conv2d_forward(op, c->in[i % c->nsets], c->out[i % c->nsets]);
        rc = rc || st != FV_OK || cudaEventRecord(ev[2 * i + 1], e->stream) != cudaSuccess;
        if (i == 0 && !rc) { /* the first call, host side: call to result */
            rc = cudaEventSynchronize(ev[1]) != cudaSuccess;
            pr->first_wall_all[rep] = bc_now_ms() - w0;
        }
    }
    rc = rc || cudaEventSynchronize(ev[2 * N - 1]) != cudaSuccess;
    if (rc) {
        fprintf(stderr, "fovea-bench: %s: forward from the profile failed: %s (%s) / %s\n",
                c->s.name, fv_status_name(st), fv_last_error(),
                cudaGetErrorString(cudaGetLastError()));
        goto done;
    }
    double t[N];
    for (int i = 0; i < N; i++) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]) != cudaSuccess) rc = 1;
        t[i] = ms;
    }
    pr->first_all[rep] = t[0];
    pr->hundredth_all[rep] = t[N - 1];
    qsort(t + 1, N - 1, sizeof t[0], bc_cmp_double);
    pr->median_all[rep] = t[N / 2]; /* of calls 2..100 */
    /* The control. An idle GPU runs the next kernel slower, whoever's it is
     * (on the H100, 20 ms of idling made the next call of small ops, cuDNN's
     * engines and fovea's kernels alike, 2-10x slower), and creating the op
     * idles it for as long as create + bind take. The same op's forward after
     * as long an idle time tells that apart from lazy work in the first
     * call. */
    bc_sleep_ms(pr->create_all[rep]);
    if (e->flush) rc = cudaMemsetAsync(e->flush, 0x5a, e->flush_bytes, e->stream) != 0;
    rc = rc || cudaStreamSynchronize(e->stream) != cudaSuccess;
    rc = rc || cudaEventRecord(ev[0], e->stream) != cudaSuccess;
    if (!rc) st = fv_conv2d_forward(op, c->in[0], c->out[0]);
    rc = rc || st != FV_OK || cudaEventRecord(ev[1], e->stream) != cudaSuccess;
    rc = rc || cudaEventSynchronize(ev[1]) != cudaSuccess;
    float idle = 0;
    rc = rc || cudaEventElapsedTime(&idle, ev[0], ev[1]) != cudaSuccess;
    pr->idle_all[rep] = idle;
done:
    if (e->ctx) fv_context_synchronize(e->ctx);
    fv_conv2d_destroy(op);
    return rc;
}

/* The shape's data once, then `repeats` creations from the profile. */
static int profile_one(const bc_env *e, const bc_shape *s, int repeats, profile_run *pr) {
    bc_case c;
    cudaEvent_t ev[2 * PROFILE_CALLS] = {0};
    memset(pr, 0, sizeof *pr);
    int rc = bc_case_create(e, s, 0, &c);
    if (rc) goto done;
    fv_conv2d_desc d = bc_desc(s, FV_DTYPE_F16, c.w);
    for (int i = 0; i < 2 * PROFILE_CALLS && !rc; i++)
        rc = cudaEventCreate(&ev[i]) != cudaSuccess;
    for (int rep = 0; rep < repeats && !rc; rep++)
        if (!(rc = profile_rep(e, &c, &d, ev, rep, pr))) pr->repeats = rep + 1;
    if (rc) goto done;
    int n = pr->repeats;
    pr->create_ms = median_of(pr->create_all, n);
    pr->first_ms = median_of(pr->first_all, n);
    pr->first_wall_ms = median_of(pr->first_wall_all, n);
    pr->hundredth_ms = median_of(pr->hundredth_all, n);
    pr->median_ms = median_of(pr->median_all, n);
    pr->idle_ms = median_of(pr->idle_all, n);
    for (int i = 0; i < n; i++) {
        double r = ratio_of(pr->first_all[i], pr->hundredth_all[i]);
        if (pr->create_all[i] > pr->create_max_ms) pr->create_max_ms = pr->create_all[i];
        if (pr->first_all[i] > pr->first_max_ms) pr->first_max_ms = pr->first_all[i];
        if (r > pr->ratio_max) pr->ratio_max = r;
    }
    pr->ok = n > 0;
done:
    for (int i = 0; i < 2 * PROFILE_CALLS; i++)
        if (ev[i]) cudaEventDestroy(ev[i]);
    bc_case_destroy(&c);
    return rc;
}

/* A context made from the profile; each shape's op created from it, timed. */
static int run_profile(const bc_opts *o, const char *label, const bc_shape *s, int n, size_t pool,
                       bc_env *e, profile_phase *ph) {
    int rc = bc_env_open(e, o, o->profile, pool);
    if (rc) return rc;
    const char *why = NULL;
    fv_context_profile_status(e->ctx, &why, &ph->entries);
    snprintf(ph->label, sizeof ph->label, "%s", label);
    snprintf(ph->why_ignored, sizeof ph->why_ignored, "%s", why ? why : "");
    ph->repeats = o->profile_repeats;
    printf("\nwarm profile (%s): %s: %d entries%s%s\n", label, o->profile, ph->entries,
           ph->why_ignored[0] ? "; IGNORED: " : "", ph->why_ignored);
    if (ph->why_ignored[0] || ph->entries == 0) {
        fprintf(stderr, "fovea-bench: profile %s is not usable: %s\n", o->profile,
                ph->why_ignored[0] ? ph->why_ignored : "no entries");
        bc_env_close(e);
        return 1;
    }
    printf("each op created %d times (create + bind, %d forwards on an idle GPU); medians over "
           "the creations, max: the worst one, #1: the first creation\n",
           ph->repeats, PROFILE_CALLS);
    printf("idle ms: the same op's forward after as long an idle GPU as its creation left "
           "before the first one (the control for idle clocks)\n");
    printf("%2s %-34s %11s %9s %9s %9s %10s %9s %9s %9s %7s %7s %7s %8s %s\n", "#", "shape",
           "create+bind", "max", "first ms", "max", "first wall", "100th ms", "median ms",
           "idle ms", "1st/100", "max", "#1", "1st/idle", "choice (candidates)");
    for (int i = 0; i < n && !rc; i++) {
        profile_run *pr = &ph->runs[i];
        rc = profile_one(e, &s[i], ph->repeats, pr);
        if (rc) break;
        printf(
            "%2d %-34s %11.3f %9.3f %9.4f %9.4f %10.3f %9.4f %9.4f %9.4f %7.2f %7.2f %7.2f %8.2f "
            "%s (%d)%s\n",
            s[i].index, s[i].name, pr->create_ms, pr->create_max_ms, pr->first_ms, pr->first_max_ms,
            pr->first_wall_ms, pr->hundredth_ms, pr->median_ms, pr->idle_ms,
            ratio_of(pr->first_ms, pr->hundredth_ms), pr->ratio_max,
            ratio_of(pr->first_all[0], pr->hundredth_all[0]), ratio_of(pr->first_ms, pr->idle_ms),
            pr->info.choice, pr->info.candidates,
            pr->engines_differ ? " [engines differ between creations]" : "");
    }
    ph->done = !rc;
    bc_env_close(e);
    return rc;
}

/* ---- --sms -------------------------------------------------------------------- */
/* The shapes on the slices (bench_conv_slice.c), beside the autotuned op's
 * time on the whole GPU; a shape without one is not run there. */
static void run_slices(const bc_opts *o, const shape_run *sr, int n, size_t pool, bc_slices *sl) {
    sl->nshapes = n;
    for (int i = 0; i < n; i++) {
        bc_slice_shape *x = &sl->shape[i];
        x->s = sr[i].s;
        x->bytes = shape_bytes(&sr[i].s);
        x->full_ms = sr[i].ok && sr[i].r[V_AUTO].ok ? sr[i].r[V_AUTO].t.median_ms : NAN;
        if (!isfinite(x->full_ms))
            snprintf(x->skip, sizeof x->skip, "no full-GPU timing: %.120s",
                     sr[i].why[0] ? sr[i].why : sr[i].r[V_AUTO].why);
    }
    bc_slices_run(o, o->sms, pool, sl);
}

/* ---- JSON -------------------------------------------------------------------- */
static void json_list(FILE *f, const char *key, const double *x, int n) {
    fprintf(f, ", \"%s\": [", key);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%.6g", i ? ", " : "", x[i]);
    fprintf(f, "]");
}

static int write_json(const bc_opts *o, const bc_env *e, const char *selftest, const shape_run *sr,
                      int n, const bc_shape *s, const profile_phase *ph, const bc_slices *sl) {
    FILE *f = fopen(o->json, "w");
    if (!f) {
        perror(o->json);
        return 1;
    }
    fprintf(f, "{\n");
    bc_json_head(f, "conv", e, o);
    fprintf(f, "  \"selftest\": ");
    bc_json_str(f, selftest ? selftest : "");
    fprintf(f, ",\n  \"variants\": {\"heuristic\": \"FV_CONV2D_NO_PROFILE\", \"autotuned\": "
               "\"FV_CONV2D_AUTOTUNE|FV_CONV2D_NO_PROFILE\", \"cudnn\": "
               "\"FV_CONV2D_AUTOTUNE|FV_CONV2D_NO_PROFILE|FV_CONV2D_NO_DIRECT\", "
               "\"fused\": \"autotuned, bias + "
               "ReLU\", \"legacy\": \"cudnnFindConvolutionForwardAlgorithmEx best, "
               "CUDNN_TENSOR_OP_MATH\"},\n  \"shapes\": [");
    for (int i = 0; sr && i < n; i++) {
        fprintf(f, "%s\n    {", i ? "," : "");
        bc_json_shape(f, &sr[i].s);
        fprintf(f, ", \"sets\": %d, \"ok\": %s, \"why\": ", sr[i].nsets,
                sr[i].ok ? "true" : "false");
        bc_json_str(f, sr[i].why);
        double d, m, fl;
        floors_of(&sr[i].s, &d, &m, &fl);
        fprintf(f, ", \"bytes\": %.0f, \"dram_floor_ms\": %.6g, \"tc_floor_ms\": %.6g",
                shape_bytes(&sr[i].s), d, m);
        for (int v = 0; v < V_COUNT; v++) {
            fprintf(f, ",\n     \"%s\": ", vnames[v]);
            bc_json_result(f, &sr[i].r[v], v == V_LEGACY);
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n  ],\n  \"floors\": {\"dram_gbps\": %.6g, \"tc_tflops\": %.6g, \"gemm\": %d}",
            g_floors.dram_gbps, g_floors.mma_tflops, g_floors.gemm_m);
    if (sl) bc_json_slices(f, sl);
    fprintf(f, ",");
    fprintf(f, "\n  \"profile\": ");
    if (!ph || !ph->done) {
        fprintf(f, "null\n}\n");
        return fclose(f) != 0;
    }
    fprintf(f, "{\"path\": ");
    bc_json_str(f, o->profile);
    fprintf(f, ", \"label\": ");
    bc_json_str(f, ph->label);
    fprintf(f, ", \"entries\": %d, \"repeats\": %d, \"calls\": %d, \"runs\": [", ph->entries,
            ph->repeats, PROFILE_CALLS);
    for (int i = 0; i < n; i++) {
        const profile_run *pr = &ph->runs[i];
        int m = pr->repeats;
        fprintf(f, "%s\n    {", i ? "," : "");
        bc_json_shape(f, &s[i]);
        /* create_ms, first_ms, first_wall_ms, hundredth_ms, median_2_100_ms:
         * medians over the creations */
        fprintf(f,
                ", \"ok\": %s, \"repeats\": %d, \"create_ms\": %.4f, \"create_ms_max\": %.4f, "
                "\"first_ms\": %.6g, \"first_ms_max\": %.6g, \"first_wall_ms\": %.4f, "
                "\"hundredth_ms\": %.6g, \"median_2_100_ms\": %.6g, \"ratio\": %.6g, "
                "\"ratio_max\": %.6g, \"idle_control_ms\": %.6g, \"ratio_vs_idle\": %.6g",
                pr->ok ? "true" : "false", m, pr->create_ms, pr->create_max_ms, pr->first_ms,
                pr->first_max_ms, pr->first_wall_ms, pr->hundredth_ms, pr->median_ms,
                ratio_of(pr->first_ms, pr->hundredth_ms), pr->ratio_max, pr->idle_ms,
                ratio_of(pr->first_ms, pr->idle_ms));
        /* the first creation of the shape's op in this process */
        fprintf(f,
                ", \"first_creation_first_ms\": %.6g, \"first_creation_hundredth_ms\": %.6g, "
                "\"first_creation_ratio\": %.6g",
                pr->first_all[0], pr->hundredth_all[0],
                ratio_of(pr->first_all[0], pr->hundredth_all[0]));
        json_list(f, "create_ms_all", pr->create_all, m);
        json_list(f, "first_ms_all", pr->first_all, m);
        json_list(f, "first_wall_ms_all", pr->first_wall_all, m);
        json_list(f, "hundredth_ms_all", pr->hundredth_all, m);
        json_list(f, "idle_control_ms_all", pr->idle_all, m);
        json_list(f, "median_2_100_ms_all", pr->median_all, m);
        fprintf(f, ", \"engines_differ\": %s, \"choice\": ", pr->engines_differ ? "true" : "false");
        bc_json_str(f, pr->info.choice);
        fprintf(f, ", \"engine\": ");
        bc_json_str(f, pr->info.engine);
        fprintf(f, ", \"path\": ");
        bc_json_str(f, pr->info.path);
        fprintf(f, ", \"candidates\": %d, \"measured_ms\": %.6g}", pr->info.candidates,
                pr->info.measured_ms);
    }
    fprintf(f, "\n  ]}\n}\n");
    return fclose(f) != 0;
}

int bench_cmd_conv(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows even when piped or killed */
    bc_opts o;
    if (bc_parse_opts(argc, argv, &o, 0)) return 2;
    bc_shape shapes[BC_MAX_SHAPES];
    int n = bc_select_shapes(o.shapes, shapes, BC_MAX_SHAPES, o.batch);
    if (n <= 0) return 2;
    int want[BENCH_MAX_SLICES];
    if (o.sms && bench_slice_list("conv", o.sms, want, BENCH_MAX_SLICES) < 0) return 2;
    size_t pool = bc_pool_bytes(shapes, n, o.ws_limit);
    shape_run *sr = calloc((size_t)n, sizeof *sr);
    profile_phase *ph = calloc(1, sizeof *ph);
    bc_slices *sl = o.sms ? calloc(1, sizeof *sl) : NULL; /* --sms */
    char selftest[1024] = "";
    bc_env e;
    int rc = 1;
    if (!sr || !ph || (o.sms && !sl)) goto out;
    if (o.profile_only) { /* a fresh process: nothing ran before the profile's ops */
        rc = run_profile(&o, "fresh process", shapes, n, pool, &e, ph);
        if (sl) snprintf(sl->skipped, sizeof sl->skipped, "--profile-only times the profile only");
        if (!rc && o.json) rc = write_json(&o, &e, NULL, NULL, n, shapes, ph, sl);
        goto out;
    }
    if ((rc = bc_env_open(&e, &o, NULL, pool)) != 0) goto out;
    printf("device: %s, SM %d.%d, L2 %zu MiB; cuDNN compiled %d, loaded %d (%s); fovea %s\n",
           e.info.device_name, e.info.sm_major, e.info.sm_minor, e.l2_bytes >> 20,
           e.info.cudnn_compiled, e.info.cudnn_loaded, e.cudnn_lib, fv_version());
    if ((rc = bc_selftest(&e, selftest, sizeof selftest)) != 0) {
        bc_env_close(&e);
        goto out;
    }
    for (int i = 0; i < n; i++)
        sr[i].s = shapes[i];
    rc = run_shapes(&e, &o, sr, n);
    print_table(&e, &o, sr, n);
    if (bench_floors_measure(&g_floors) != 0)
        fprintf(stderr, "fovea-bench conv: floors: %s\n", g_floors.why);
    print_floors(sr, n);
    if (!rc && o.profile) { /* the autotuned choices (and the heuristic ones of no other op) */
        fv_status st = fv_context_profile_save(e.ctx, o.profile);
        if (st != FV_OK)
            rc = bc_fv_fail("fv_context_profile_save", st);
        else
            printf("\nprofile written: %s\n", o.profile);
    }
    bc_env_close(&e);
    if (!rc && o.profile) {
        bc_env pe;
        rc = run_profile(&o, "same process, after the benchmark", shapes, n, pool, &pe, ph);
    }
    if (sl && rc)
        snprintf(sl->skipped, sizeof sl->skipped, "the benchmark failed before the slices");
    else if (sl)
        run_slices(&o, sr, n, pool, sl);
    if (o.json && write_json(&o, &e, selftest, sr, n, shapes, ph, sl)) rc = rc ? rc : 1;
out:
    free(sr);
    free(ph);
    free(sl);
    return rc;
}
#endif /* FV_BUILT_WITH_CUDA */
