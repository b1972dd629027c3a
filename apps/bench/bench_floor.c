/* The floors of bench_floor.h. Medians after warm-up, CUDA events. */
#include "bench_floor.h"
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Adds a reason to f->why ("; " between reasons: one failure does not hide
 * another). */
static void note(bench_floors *f, const char *fmt, ...) {
    size_t n = strlen(f->why);
    if (n > 0) {
        if (n + 3 > sizeof f->why) return;
        memcpy(f->why + n, "; ", 3);
        n += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->why + n, sizeof f->why - n, fmt, ap);
    va_end(ap);
}

/* what: the figure the failing call was measuring (a local of the caller). */
#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            note(f, "%s: %s: %s", what, #call, cudaGetErrorString(e_));                            \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)
#define LT(call)                                                                                   \
    do {                                                                                           \
        cublasStatus_t e_ = (call);                                                                \
        if (e_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            note(f, "%s: %s: cuBLAS status %d", what, #call, (int)e_);                             \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* A device-to-device copy of 256 MiB: 2 warm-ups, median of 11. */
static int dram(bench_floors *f, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
    const char *what = "DRAM copy";
    const size_t bytes = (size_t)256 << 20;
    void *a = NULL, *b = NULL;
    double t[11];
    int rc = 1;
    CU(cudaMalloc(&a, bytes));
    CU(cudaMalloc(&b, bytes));
    CU(cudaMemsetAsync(a, 1, bytes, s));
    for (int r = -2; r < 11; r++) {
        float ms = 0;
        CU(cudaEventRecord(e0, s));
        CU(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
        CU(cudaEventRecord(e1, s));
        CU(cudaEventSynchronize(e1));
        CU(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 0) t[r] = ms;
    }
    f->dram_gbps = 2.0 * (double)bytes / (median(t, 11) * 1e6);
    rc = 0;
done:
    cudaFree(a);
    cudaFree(b);
    return rc;
}

/* One GEMM kind: its matrices' type, cuBLAS compute type, size, and the
 * byte its inputs are filled with (a normal number: no zeros, no denormals). */
typedef struct gemm_kind {
    const char *name;
    cudaDataType_t type;
    cublasComputeType_t compute;
    int m;
    int fill;
} gemm_kind;

static const gemm_kind GEMM_FP16 = {"FP16 GEMM", CUDA_R_16F, CUBLAS_COMPUTE_32F, 8192,
                                    0x33}; /* 0x3333: 0.2249 */
/* FMA without tensor cores (CUBLAS_COMPUTE_32F on float matrices: cuBLASLt
 * uses no TF32 there). An order of magnitude below the tensor cores: 4096
 * keeps it near 2.5 ms on an H100 and still gives 1024 128x128 output
 * tiles, several waves on every SM. */
static const gemm_kind GEMM_FP32 = {"FP32 GEMM", CUDA_R_32F, CUBLAS_COMPUTE_32F, 4096,
                                    0x3e}; /* 0x3e3e3e3e: 0.1858 */
/* What cuDNN's default math may use on float tensors. */
static const gemm_kind GEMM_TF32 = {"TF32 GEMM", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 8192,
                                    0x3e};

/* An M = N = K GEMM of kind g, FP32 scale, cuBLASLt's first heuristic
 * choice: 3 warm-ups, median of 9. Returns 0 and its TFLOP/s in *tflops. */
static int gemm(bench_floors *f, const gemm_kind *g, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1,
                double *tflops) {
    const char *what = g->name;
    const int m = g->m;
    const size_t ws_bytes = (size_t)64 << 20, mat = (size_t)m * m * (g->type == CUDA_R_16F ? 2 : 4);
    void *a = NULL, *b = NULL, *c = NULL, *ws = NULL;
    cublasLtHandle_t h = NULL;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t hr;
    int found = 0, rc = 1;
    float alpha = 1.0f, beta = 0.0f;
    double t[9];
    CU(cudaMalloc(&a, mat));
    CU(cudaMalloc(&b, mat));
    CU(cudaMalloc(&c, mat));
    CU(cudaMalloc(&ws, ws_bytes));
    CU(cudaMemsetAsync(a, g->fill, mat, s));
    CU(cudaMemsetAsync(b, g->fill, mat, s));
    LT(cublasLtCreate(&h));
    LT(cublasLtMatmulDescCreate(&op, g->compute, CUDA_R_32F));
    LT(cublasLtMatrixLayoutCreate(&la, g->type, (uint64_t)m, (uint64_t)m, m));
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &ws_bytes, sizeof ws_bytes));
    LT(cublasLtMatmulAlgoGetHeuristic(h, op, la, la, la, la, pref, 1, &hr, &found));
    if (found < 1) {
        note(f, "%s: cuBLASLt has no algorithm for it", what);
        goto done;
    }
    for (int r = -3; r < 9; r++) {
        float ms = 0;
        CU(cudaEventRecord(e0, s));
        LT(cublasLtMatmul(h, op, &alpha, a, la, b, la, &beta, c, la, c, la, &hr.algo, ws, ws_bytes,
                          s));
        CU(cudaEventRecord(e1, s));
        CU(cudaEventSynchronize(e1));
        CU(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 0) t[r] = ms;
    }
    *tflops = 2.0 * (double)m * m * m / (median(t, 9) * 1e9);
    rc = 0;
done:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
    if (h) cublasLtDestroy(h);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(ws);
    return rc;
}

enum { M_DRAM = 1, M_FP16 = 2, M_FP32 = 4 }; /* M_FP32: the FP32 and TF32 GEMMs */

static int measure(bench_floors *f, int which) {
    const char *what = "setup";
    cudaStream_t s = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int rc = 1;
    if (which & M_FP16) f->gemm_m = GEMM_FP16.m;
    if (which & M_FP32) f->fp32_gemm_m = GEMM_FP32.m, f->tf32_gemm_m = GEMM_TF32.m;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    rc = 0;
    if (which & M_DRAM) rc |= dram(f, s, e0, e1);
    if (which & M_FP16) rc |= gemm(f, &GEMM_FP16, s, e0, e1, &f->mma_tflops);
    if (which & M_FP32) {
        rc |= gemm(f, &GEMM_FP32, s, e0, e1, &f->fp32_tflops);
        rc |= gemm(f, &GEMM_TF32, s, e0, e1, &f->tf32_tflops);
    }
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (s) cudaStreamDestroy(s);
    return rc;
}

int bench_floors_measure(bench_floors *f) {
    memset(f, 0, sizeof *f);
    return measure(f, M_DRAM | M_FP16);
}

int bench_floors_measure_dram(bench_floors *f) {
    memset(f, 0, sizeof *f);
    return measure(f, M_DRAM);
}

int bench_floors_measure_fp32(bench_floors *f) {
    f->fp32_tflops = f->tf32_tflops = 0;
    return measure(f, M_FP32);
}

double bench_dram_floor_ms(const bench_floors *f, double bytes) {
    return f->dram_gbps > 0 ? bytes / (f->dram_gbps * 1e6) : 0.0;
}

double bench_mma_floor_ms(const bench_floors *f, double flop) {
    return f->mma_tflops > 0 ? flop / (f->mma_tflops * 1e9) : 0.0;
}

double bench_fp32_floor_ms(const bench_floors *f, double flop) {
    return f->fp32_tflops > 0 ? flop / (f->fp32_tflops * 1e9) : 0.0;
}

double bench_tf32_floor_ms(const bench_floors *f, double flop) {
    return f->tf32_tflops > 0 ? flop / (f->tf32_tflops * 1e9) : 0.0;
}
