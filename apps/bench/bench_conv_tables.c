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
 * Every output is checked against the FP32 reference before it is timed. */
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

/* table shapes (indices into calibration/best_practices.h) */
static const char *ALGO_SHAPES = "1,8";
static const char *PAD_SHAPES = "3,4,10,11"; /* pairs: C=3, C=8 */
static const char *FOLD_SHAPES = "12,13";

/* ---- 1. FP32 NCHW vs NHWC ------------------------------------------------- */
enum { L_F32_NCHW_FMA, L_F32_NHWC_FMA, L_F32_NCHW_TF32, L_F32_NHWC_TF32, L_F16_NHWC, L_COUNT };
static const struct {
    const char *name;
    int f32, nchw, math;
    double tol;
} layouts[L_COUNT] = {
    {"f32 NCHW fma", 1, 1, CUDNN_FMA_MATH, 1e-4},
    {"f32 NHWC fma", 1, 0, CUDNN_FMA_MATH, 1e-4},
    {"f32 NCHW tf32", 1, 1, CUDNN_DEFAULT_MATH, 5e-3}, /* default math allows TF32 */
    {"f32 NHWC tf32", 1, 0, CUDNN_DEFAULT_MATH, 5e-3},
    {"f16 NHWC tensor_op", 0, 0, CUDNN_TENSOR_OP_MATH, 2e-3},
};

static void print_cell(const bc_result *r) {
    if (r->ok)
        printf(" %10.4f %-9.9s", r->t.median_ms, lc_algo_name(r->algo));
    else
        printf(" %10s %-9s", "-", r->ran ? "ERR" : "");
}

static int table_layouts(const bc_env *e, const bc_shape *s, int n, FILE *f) {
    printf("\n1. FP32 NCHW vs NHWC (legacy cuDNN, best of Find; ms and the algorithm; fma: "
           "true FP32, tf32: default math)\n");
    printf("%2s %-32s", "#", "shape");
    for (int l = 0; l < L_COUNT; l++)
        printf(" %20.20s", layouts[l].name);
    printf(" %9s %9s\n", "NCHW/NHWC", "(tf32)");
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
        printf("%2d %-32s", s[i].index, s[i].name);
        for (int l = 0; l < L_COUNT; l++)
            print_cell(&r[l]);
        double a = r[0].ok && r[1].ok ? r[0].t.median_ms / r[1].t.median_ms : NAN;
        double b = r[2].ok && r[3].ok ? r[2].t.median_ms / r[3].t.median_ms : NAN;
        printf(" %9.3f %9.3f\n", a, b);
        fprintf(f, "%s\n    {", i ? "," : "");
        bc_json_shape(f, &s[i]);
        for (int l = 0; l < L_COUNT; l++) {
            fprintf(f, ",\n     ");
            bc_json_str(f, layouts[l].name);
            fprintf(f, ": ");
            bc_json_result(f, &r[l], 1);
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
        printf("%s (%.2f GFLOP)\n%-22s %-30s %12s %10s %10s %-10s %8s\n", s[i].name,
               bc_gflop(&s[i]), "algorithm", "status", "workspace MiB", "median ms", "Find ms",
               "math", "err");
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
                printf("%10.4f ", r.t.median_ms);
            else
                printf("%10s ", "-");
            printf("%10.4f %-10s %8.2g\n", perf[a].find_ms,
                   perf[a].math >= 0 ? lc_math_name(perf[a].math) : "-", r.err);
            fprintf(f, "%s\n      ", a ? "," : "");
            bc_json_result(f, &r, 1);
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
    printf("\n%s\n%2s %-32s %8s | %10s %9s %-40s | %10s %-22s | %6s\n", title, "#", "shape",
           "GFLOP", "fovea ms", "TFLOP/s", "fovea engine (formulation)", "legacy ms", "legacy algo",
           "err");
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
        printf("%2d %-32s %8.2f | ", s[i].index, s[i].name, bc_gflop(&s[i]));
        if (fr.ok) {
            char eng[160];
            snprintf(eng, sizeof eng, "%s (%s)", fr.info.engine, fr.info.layout);
            printf("%10.4f %9.2f %-40.40s | ", fr.t.median_ms, bc_gflop(&s[i]) / fr.t.median_ms,
                   eng);
        } else {
            printf("%10s %9s %-40.40s | ", "-", "", fr.why);
        }
        if (lr.ok)
            printf("%10.4f %-22s | %6.2g", lr.t.median_ms, lc_algo_name(lr.algo), fr.err);
        else
            printf("%10s %-22.22s | %6.2g", "-", lr.why, fr.err);
        if (i % 2 == 1 && fr.ok && prev > 0)
            printf("   ratio to the row above: %.3f", fr.t.median_ms / prev);
        printf("\n");
        prev = i % 2 == 0 && fr.ok ? fr.t.median_ms : 0;
        fprintf(f, "%s\n    {", i ? "," : "");
        bc_json_shape(f, &s[i]);
        fprintf(f, ",\n     \"fovea_autotuned\": ");
        bc_json_result(f, &fr, 0);
        fprintf(f, ",\n     \"legacy\": ");
        bc_json_result(f, &lr, 1);
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
    rc = table_layouts(&e, lay, nl, f);
    if (!rc) rc = table_algos(&e, alg, na, f);
    if (!rc)
        rc = table_pairs(&e, "3. Channel padding: C=3 vs C=8 (fovea autotuned pads C=3 itself)",
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
