/* fovea-bench conv-tables: the other tables of the cuDNN best-practices
 * talk, on this GPU.
 *   1. FP32 NCHW vs NHWC: legacy cuDNN, float tensors, best of Find, with
 *      FMA math (true FP32) and default math (TF32 allowed); FP16 NHWC
 *      tensor-op beside them.
 *   2. Every legacy algorithm's time and workspace for 128x128x128->128 at
 *      3x3 and 11x11 (FP16 NHWC, tensor-op math; NOT_SUPPORTED shown).
 *   3. Channel padding: C=3 vs C=8 (fovea pads C=3 itself; legacy cuDNN
 *      gets C=3 as it is).
 *   4. Channel folding: 2048x2048x8->8 vs 1024x1024x32->32, same bytes.
 * Every output is checked against the FP32 reference before it is timed.
 * Every timing is set against its floor (bench_floor.h), measured at the
 * start: the caller's bytes at the copy bandwidth, or its FLOPs at the peak
 * of the unit the row runs on (FP32 FMA, TF32 or FP16 tensor cores),
 * whichever takes longer. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_conv.h"

#if !FV_BUILT_WITH_CUDA
int bench_cmd_conv_tables(int argc, char **argv) {
    bc_opts o;
    if (bc_parse_opts(argc, argv, &o, 1)) return 2;
    fprintf(stderr, "fovea-bench conv-tables needs a GPU: this fovea was built without its CUDA "
                    "backend (no CUDA toolkit or cuDNN found at configure time)\n");
    return 2;
}
#else
#include <cudnn.h>
#include "bench_floor.h"

/* table shapes (indices into calibration/best_practices.h) */
static const char *ALGO_SHAPES = "1,8";
static const char *PAD_SHAPES = "3,4,10,11"; /* pairs: C=3, C=8 */
static const char *FOLD_SHAPES = "12,13";

/* ---- floors ------------------------------------------------------------------ */
/* The device's floors, measured once at the start (bench_floor.h). */
static bench_floors g_floors;

/* The unit a row computes on: its element size and the peak it is held to. */
enum { U_FP32, U_TF32, U_FP16, U_COUNT };
static const struct {
    const char *name;  /* JSON */
    const char *bound; /* printed when the compute floor is the larger */
    int elem;          /* bytes an element */
} units[U_COUNT] = {{"fp32_fma", "FP32", 4}, {"tf32", "TF32", 4}, {"fp16_tensor_core", "TC", 2}};

typedef struct row_floor {
    int unit;
    double bytes, flop;
    double dram_ms, compute_ms; /* 0: that figure was not measured */
    double floor_ms;            /* the larger; 0 unless both were measured */
} row_floor;

/* Shape s on unit u. The bytes are the caller's tensors as the shape gives
 * them (C=3 stays 3: any padding is the implementation's cost), input and
 * weights read once, output written once. */
static row_floor floor_of(const bc_shape *s, int u) {
    double p = bc_out_dim(s->h, s->r, s->stride, s->pad),
           q = bc_out_dim(s->w, s->s, s->stride, s->pad);
    double elems = (double)s->n * s->h * s->w * s->c + (double)s->k * s->c * s->r * s->s +
                   (double)s->n * p * q * s->k;
    row_floor f = {.unit = u, .bytes = elems * units[u].elem, .flop = bc_gflop(s) * 1e9};
    f.dram_ms = bench_dram_floor_ms(&g_floors, f.bytes);
    f.compute_ms = u == U_FP32   ? bench_fp32_floor_ms(&g_floors, f.flop)
                   : u == U_TF32 ? bench_tf32_floor_ms(&g_floors, f.flop)
                                 : bench_mma_floor_ms(&g_floors, f.flop);
    if (f.dram_ms > 0 && f.compute_ms > 0) f.floor_ms = fmax(f.dram_ms, f.compute_ms);
    return f;
}

static const char *bound_of(const row_floor *f) {
    return f->floor_ms <= 0 ? "-" : f->dram_ms >= f->compute_ms ? "DRAM" : units[f->unit].bound;
}

/* A timing over its floor; NAN when either is missing. */
static double x_floor(const bc_result *r, const row_floor *f) {
    return r->ok && f->floor_ms > 0 ? r->t.median_ms / f->floor_ms : NAN;
}

/* Numbers in a table: "-" for one that is missing (NAN, or 0 for a floor). */
static void print_num(int width, int prec, double v) {
    if (isfinite(v) && v > 0)
        printf(" %*.*f", width, prec, v);
    else
        printf(" %*s", width, "-");
}

static void json_num(FILE *f, const char *key, double v) {
    if (isfinite(v) && v > 0)
        fprintf(f, ", \"%s\": %.6g", key, v);
    else
        fprintf(f, ", \"%s\": null", key);
}

/* r's object (bc_json_result) with its floor added before the closing brace. */
static void json_result(FILE *f, const bc_result *r, int legacy, const row_floor *fl) {
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    if (m) {
        bc_json_result(m, r, legacy);
        if (fclose(m) != 0) n = 0;
    }
    if (!buf || n == 0 || buf[n - 1] != '}') { /* no memory: the result without its floor */
        free(buf);
        bc_json_result(f, r, legacy);
        return;
    }
    fprintf(f, "%.*s, \"floor_unit\": \"%s\", \"floor_bytes\": %.0f, \"floor_flop\": %.0f",
            (int)(n - 1), buf, units[fl->unit].name, fl->bytes, fl->flop);
    json_num(f, "dram_floor_ms", fl->dram_ms);
    json_num(f, "compute_floor_ms", fl->compute_ms);
    json_num(f, "floor_ms", fl->floor_ms);
    json_num(f, "x_floor", x_floor(r, fl));
    fprintf(f, "}");
    free(buf);
}

/* Measures the floors; prints them, the reason for any that is missing, and
 * what the columns mean. A failure does not stop the benchmark: its rows
 * show "-". */
static void floors_measure(FILE *json) {
    const bench_floors *g = &g_floors;
    int rc = bench_floors_measure(&g_floors); /* first: it clears g_floors */
    rc |= bench_floors_measure_fp32(&g_floors);
    if (rc != 0) fprintf(stderr, "fovea-bench conv-tables: floors: %s\n", g->why);
    printf("floors (this run): DRAM");
    print_num(0, 0, g->dram_gbps);
    printf(" GB/s (device-to-device copy); FP16 tensor cores");
    print_num(0, 0, g->mma_tflops);
    printf(" TFLOP/s (%d^3 cuBLASLt GEMM, FP32 accumulation); FP32 FMA", g->gemm_m);
    print_num(0, 1, g->fp32_tflops);
    printf(" TFLOP/s (%d^3, CUBLAS_COMPUTE_32F); TF32", g->fp32_gemm_m);
    print_num(0, 0, g->tf32_tflops);
    printf(" TFLOP/s (%d^3, CUBLAS_COMPUTE_32F_FAST_TF32)\n", g->tf32_gemm_m);
    if (g->dram_gbps <= 0 || g->mma_tflops <= 0 || g->fp32_tflops <= 0 || g->tf32_tflops <= 0)
        printf("floors not measured (their rows show -): %s\n", g->why);
    printf("floor ms = the larger of the DRAM floor (the caller's input, weights and output, "
           "unpadded, each read or written\n  once, 4 B an element in FP32 rows, 2 B in FP16 "
           "rows, at the copy bandwidth) and the compute floor (2*N*K*C*R*S*P*Q\n  at the "
           "peak of the row's unit: FP32 FMA for fma, TF32 for tf32, FP16 tensor cores (TC) "
           "for FP16); x floor = median ms / floor ms\n");
    fprintf(json, "  \"floors\": {\"gemm\": %d, \"fp32_gemm\": %d, \"tf32_gemm\": %d", g->gemm_m,
            g->fp32_gemm_m, g->tf32_gemm_m);
    json_num(json, "dram_gbps", g->dram_gbps);
    json_num(json, "mma_tflops", g->mma_tflops);
    json_num(json, "fp32_tflops", g->fp32_tflops);
    json_num(json, "tf32_tflops", g->tf32_tflops);
    fprintf(json, ", \"why\": ");
    bc_json_str(json, g->why);
    fprintf(json, ",\n   \"method\": \"floor_ms = max(dram_floor_ms, compute_floor_ms); "
                  "dram: floor_bytes (input + weights + output of the unpadded shape, 4 B an "
                  "element for fp32_fma and tf32 rows, 2 B for fp16_tensor_core) at dram_gbps "
                  "from a device-to-device copy; compute: floor_flop (2*N*K*C*R*S*P*Q) at the "
                  "peak of floor_unit from a cuBLASLt GEMM; x_floor = median_ms / floor_ms\"},\n");
}

/* ---- 1. FP32 NCHW vs NHWC ------------------------------------------------- */
enum { L_F32_NCHW_FMA, L_F32_NHWC_FMA, L_F32_NCHW_TF32, L_F32_NHWC_TF32, L_F16_NHWC, L_COUNT };
static const struct {
    const char *name;
    int f32, nchw, math;
    double tol;
    int unit; /* its floor's */
} layouts[L_COUNT] = {
    {"f32 NCHW fma", 1, 1, CUDNN_FMA_MATH, 1e-4, U_FP32},
    {"f32 NHWC fma", 1, 0, CUDNN_FMA_MATH, 1e-4, U_FP32},
    {"f32 NCHW tf32", 1, 1, CUDNN_DEFAULT_MATH, 5e-3, U_TF32}, /* default math allows TF32 */
    {"f32 NHWC tf32", 1, 0, CUDNN_DEFAULT_MATH, 5e-3, U_TF32},
    {"f16 NHWC tensor_op", 0, 0, CUDNN_TENSOR_OP_MATH, 2e-3, U_FP16},
};

static void print_cell(const bc_result *r, const row_floor *fl) {
    if (r->ok) {
        printf(" %9.4f", r->t.median_ms);
        print_num(7, 2, x_floor(r, fl));
        printf(" %-9.9s", lc_algo_name(r->algo));
    } else {
        printf(" %9s %7s %-9s", "-", "-", r->ran ? "ERR" : "");
    }
}

static int table_layouts(const bc_env *e, const bc_shape *s, int n, FILE *f) {
    printf("\n1. FP32 NCHW vs NHWC (legacy cuDNN, best of Find; fma: true FP32, tf32: default "
           "math; each: median ms, x floor, the algorithm; the floors below each shape)\n");
    printf("%2s %-32s", "#", "shape");
    for (int l = 0; l < L_COUNT; l++)
        printf(" %27.27s", layouts[l].name);
    printf(" %9s %9s\n%35s", "NCHW/NHWC", "(tf32)", "");
    for (int l = 0; l < L_COUNT; l++)
        printf(" %9s %7s %-9s", "ms", "x floor", "algo");
    printf("\n");
    fprintf(f, "  \"nchw_vs_nhwc\": [");
    for (int i = 0; i < n; i++) {
        bc_case c;
        bc_result r[L_COUNT];
        memset(r, 0, sizeof r);
        int rc = bc_case_create(e, &s[i], 1, &c);
        for (int l = 0; !rc && l < L_COUNT; l++) {
            lc_desc d = {.shape = s[i],
                         .f32 = layouts[l].f32,
                         .nchw = layouts[l].nchw,
                         .math = layouts[l].math,
                         .nsets = c.nsets};
            rc = bc_run_legacy_desc(e, &c, &d, layouts[l].tol, &r[l]);
        }
        bc_case_destroy(&c);
        if (rc && bc_device_ok()) return rc;
        row_floor fl[U_COUNT];
        for (int u = 0; u < U_COUNT; u++)
            fl[u] = floor_of(&s[i], u);
        printf("%2d %-32s", s[i].index, s[i].name);
        for (int l = 0; l < L_COUNT; l++)
            print_cell(&r[l], &fl[layouts[l].unit]);
        double a = r[0].ok && r[1].ok ? r[0].t.median_ms / r[1].t.median_ms : NAN;
        double b = r[2].ok && r[3].ok ? r[2].t.median_ms / r[3].t.median_ms : NAN;
        printf(" %9.3f %9.3f\n   floor ms:", a, b);
        for (int u = 0; u < U_COUNT; u++) {
            printf("%s %s", u ? "," : "", u == U_FP32 ? "fma" : u == U_TF32 ? "tf32" : "f16");
            print_num(0, 4, fl[u].floor_ms);
            printf(" (%s)", bound_of(&fl[u]));
        }
        printf("\n");
        fprintf(f, "%s\n    {", i ? "," : "");
        bc_json_shape(f, &s[i]);
        for (int l = 0; l < L_COUNT; l++) {
            fprintf(f, ",\n     ");
            bc_json_str(f, layouts[l].name);
            fprintf(f, ": ");
            json_result(f, &r[l], 1, &fl[layouts[l].unit]);
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n  ],\n");
    return 0;
}

/* ---- 2. every algorithm --------------------------------------------------- */
static int table_algos(const bc_env *e, const bc_shape *s, int n, FILE *f) {
    printf("\n2. Every legacy algorithm, FP16 NHWC, CUDNN_TENSOR_OP_MATH\n");
    fprintf(f, "  \"per_algo\": [");
    for (int i = 0; i < n; i++) {
        bc_case c;
        lc_conv *lc = NULL;
        lc_algo_perf perf[LC_ALGO_COUNT];
        int rc = bc_case_create(e, &s[i], 1, &c);
        lc_desc d = {.shape = s[i], .math = CUDNN_TENSOR_OP_MATH, .nsets = c.nsets};
        if (!rc) rc = lc_create(&d, &lc);
        for (int k = 0; !rc && k < c.nsets; k++)
            rc = lc_upload(lc, k, c.x[k], k == 0 ? c.w : NULL);
        if (!rc && lc_find(lc, perf)) /* none at all: still list each one's own status */
            for (int a = 0; a < LC_ALGO_COUNT; a++)
                perf[a].status = -1;
        row_floor fl = floor_of(&s[i], U_FP16); /* whatever math an algorithm uses */
        printf("%s (%.2f GFLOP; floor ms", s[i].name, bc_gflop(&s[i]));
        print_num(0, 4, fl.floor_ms);
        printf(", %s: DRAM", bound_of(&fl));
        print_num(0, 4, fl.dram_ms);
        printf(", TC");
        print_num(0, 4, fl.compute_ms);
        printf(")\n%-22s %-30s %12s %10s %7s %10s %-10s %8s\n", "algorithm", "status",
               "workspace MiB", "median ms", "x floor", "Find ms", "math", "err");
        fprintf(f, "%s\n    {", i ? "," : "");
        bc_json_shape(f, &s[i]);
        fprintf(f, ", \"algos\": [");
        for (int a = 0; !rc && a < LC_ALGO_COUNT; a++) {
            bc_result r = {.ran = 1, .err = -1, .algo = a, .math = perf[a].math};
            int st = lc_set_algo(lc, a);
            const char *status = st > 0 ? lc_status_name(st) : st < 0 ? "workspace over limit" : "";
            if (st == 0) {
                if ((rc = lc_poison(lc, 0)) != 0) break;
                st = lc_forward(lc, 0);
                if (st != 0) status = lc_status_name(st);
            }
            if (st == 0) {
                if ((rc = lc_download(lc, 0, c.y)) != 0) break;
                r.err = bc_rel_l2(c.y, c.ref, c.yn);
                if (r.err <= 2e-3) {
                    if ((rc = bc_time(e, c.nsets, lc_forward_fn, lc, &r.t)) != 0) break;
                    r.ok = 1;
                    status = "ok";
                } else {
                    status = "WRONG RESULT (not timed)";
                }
            }
            r.workspace = lc_algo_workspace(lc);
            r.find_ms = perf[a].find_ms;
            snprintf(r.why, sizeof r.why, "%s", status);
            printf("%-22s %-30.30s %12.2f ", lc_algo_name(a), status,
                   (double)r.workspace / (1 << 20));
            if (r.ok)
                printf("%10.4f", r.t.median_ms);
            else
                printf("%10s", "-");
            print_num(7, 2, x_floor(&r, &fl));
            printf(" %10.4f %-10s %8.2g\n", perf[a].find_ms,
                   perf[a].math >= 0 ? lc_math_name(perf[a].math) : "-", r.err);
            fprintf(f, "%s\n      ", a ? "," : "");
            json_result(f, &r, 1, &fl);
        }
        fprintf(f, "]}");
        lc_destroy(lc);
        bc_case_destroy(&c);
        if (rc && bc_device_ok()) return rc;
    }
    fprintf(f, "\n  ],\n");
    return 0;
}

/* ---- 3 and 4: fovea on pairs of shapes -------------------------------------- */
static int table_pairs(const bc_env *e, const char *title, const char *key, const bc_shape *s,
                       int n, FILE *f) {
    printf("\n%s\n%2s %-32s %8s %9s %-4s | %10s %9s %7s %-40s | %10s %7s %-22s | %6s\n", title, "#",
           "shape", "GFLOP", "floor ms", "bnd", "fovea ms", "TFLOP/s", "x floor",
           "fovea engine (formulation)", "legacy ms", "x floor", "legacy algo", "err");
    fprintf(f, "  \"%s\": [", key);
    double prev = 0;
    for (int i = 0; i < n; i++) {
        bc_case c;
        bc_result fr, lr;
        memset(&fr, 0, sizeof fr);
        memset(&lr, 0, sizeof lr);
        int rc = bc_case_create(e, &s[i], 1, &c);
        if (!rc) rc = bc_run_fovea(e, &c, FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_PROFILE, 0, &fr);
        if (!rc) rc = bc_run_legacy(e, &c, &lr);
        bc_case_destroy(&c);
        if (rc && bc_device_ok()) return rc;
        row_floor fl = floor_of(&s[i], U_FP16); /* fovea and legacy: FP16 NHWC */
        printf("%2d %-32s %8.2f", s[i].index, s[i].name, bc_gflop(&s[i]));
        print_num(9, 4, fl.floor_ms);
        printf(" %-4s | ", bound_of(&fl));
        if (fr.ok) {
            char eng[160];
            snprintf(eng, sizeof eng, "%s (%s)", fr.info.engine, fr.info.layout);
            printf("%10.4f %9.2f", fr.t.median_ms, bc_gflop(&s[i]) / fr.t.median_ms);
            print_num(7, 2, x_floor(&fr, &fl));
            printf(" %-40.40s | ", eng);
        } else {
            printf("%10s %9s %7s %-40.40s | ", "-", "", "-", fr.why);
        }
        if (lr.ok) {
            printf("%10.4f", lr.t.median_ms);
            print_num(7, 2, x_floor(&lr, &fl));
            printf(" %-22s | %6.2g", lc_algo_name(lr.algo), fr.err);
        } else {
            printf("%10s %7s %-22.22s | %6.2g", "-", "-", lr.why, fr.err);
        }
        if (i % 2 == 1 && fr.ok && prev > 0)
            printf("   ratio to the row above: %.3f", fr.t.median_ms / prev);
        printf("\n");
        prev = i % 2 == 0 && fr.ok ? fr.t.median_ms : 0;
        fprintf(f, "%s\n    {", i ? "," : "");
        bc_json_shape(f, &s[i]);
        fprintf(f, ",\n     \"fovea_autotuned\": ");
        json_result(f, &fr, 0, &fl);
        fprintf(f, ",\n     \"legacy\": ");
        json_result(f, &lr, 1, &fl);
        fprintf(f, "}");
    }
    fprintf(f, "\n  ]");
    return 0;
}

int bench_cmd_conv_tables(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows even when piped or killed */
    bc_opts o;
    if (bc_parse_opts(argc, argv, &o, 1)) return 2;
    bc_shape lay[BC_MAX_SHAPES], alg[4], pad[4], fold[2], all[BC_MAX_SHAPES + 10];
    int nl = bc_select_shapes(o.shapes, lay, BC_MAX_SHAPES, o.batch);
    int na = bc_select_shapes(ALGO_SHAPES, alg, 4, o.batch);
    int np = bc_select_shapes(PAD_SHAPES, pad, 4, o.batch);
    int nf = bc_select_shapes(FOLD_SHAPES, fold, 2, o.batch);
    if (nl <= 0 || na <= 0 || np <= 0 || nf <= 0) return 2;
    int nall = 0;
    for (int i = 0; i < nl; i++)
        all[nall++] = lay[i];
    for (int i = 0; i < na; i++)
        all[nall++] = alg[i];
    for (int i = 0; i < np; i++)
        all[nall++] = pad[i];
    for (int i = 0; i < nf; i++)
        all[nall++] = fold[i];
    bc_env e;
    int rc = bc_env_open(&e, &o, NULL, bc_pool_bytes(all, nall, o.ws_limit));
    if (rc) return rc;
    printf("fovea-bench conv-tables: %s (SM %d.%d), cuDNN %d (%s), median of %d after %d "
           "warm-up, L2 %s\n",
           e.info.device_name, e.info.sm_major, e.info.sm_minor, e.cudnn_version, e.cudnn_lib,
           o.iters, o.warmup,
           o.flush ? "scrubbed before each call" : "avoided by rotating buffers");
    FILE *f = fopen(o.json ? o.json : "/dev/null", "w");
    if (!f) {
        perror(o.json);
        bc_env_close(&e);
        return 1;
    }
    fprintf(f, "{\n");
    bc_json_head(f, "conv-tables", &e, &o);
    floors_measure(f);
    rc = table_layouts(&e, lay, nl, f);
    if (!rc) rc = table_algos(&e, alg, na, f);
    if (!rc)
        rc = table_pairs(&e,
                         "3. Channel padding: C=3 vs C=8 (fovea autotuned pads C=3 itself; a C=3 "
                         "row's floor counts C=3, unpadded)",
                         "channel_padding", pad, np, f);
    if (!rc) fprintf(f, ",\n");
    if (!rc)
        rc = table_pairs(&e, "4. Channel folding: the same bytes as C=8 or as C=32",
                         "channel_folding", fold, nf, f);
    fprintf(f, "\n}\n");
    if (fclose(f) != 0 && !rc) rc = 1;
    bc_env_close(&e);
    return rc;
}
#endif /* FV_BUILT_WITH_CUDA */
