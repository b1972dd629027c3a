/* The floors of bench_floor.h. Medians after warm-up, CUDA events. */
#include "bench_floor.h"
#include <cublasLt.h>
#include <cuda_runtime.h>
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

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            snprintf(f->why, sizeof f->why, "%s: %s", #call, cudaGetErrorString(e_));              \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)
#define LT(call)                                                                                   \
    do {                                                                                           \
        cublasStatus_t e_ = (call);                                                                \
        if (e_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            snprintf(f->why, sizeof f->why, "%s: cuBLAS status %d", #call, (int)e_);               \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* A device-to-device copy of 256 MiB: 2 warm-ups, median of 11. */
static int dram(bench_floors *f, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
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

/* An M = N = K GEMM, FP16 in and out, FP32 accumulation, cuBLASLt's first
 * heuristic choice: 3 warm-ups, median of 9. */
static int mma(bench_floors *f, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
    const int m = 8192;
    const size_t ws_bytes = (size_t)64 << 20, mat = (size_t)m * m * 2;
    void *a = NULL, *b = NULL, *c = NULL, *ws = NULL;
    cublasLtHandle_t h = NULL;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t hr;
    int found = 0, rc = 1;
    float alpha = 1.0f, beta = 0.0f;
    double t[9];
    f->gemm_m = m;
    CU(cudaMalloc(&a, mat));
    CU(cudaMalloc(&b, mat));
    CU(cudaMalloc(&c, mat));
    CU(cudaMalloc(&ws, ws_bytes));
    CU(cudaMemsetAsync(a, 0x33, mat, s)); /* 0x3333: 0.2249 */
    CU(cudaMemsetAsync(b, 0x33, mat, s));
    LT(cublasLtCreate(&h));
    LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, (uint64_t)m, (uint64_t)m, m));
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &ws_bytes, sizeof ws_bytes));
    LT(cublasLtMatmulAlgoGetHeuristic(h, op, la, la, la, la, pref, 1, &hr, &found));
    if (found < 1) {
        snprintf(f->why, sizeof f->why, "cuBLASLt has no algorithm for an FP16 GEMM");
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
    f->mma_tflops = 2.0 * (double)m * m * m / (median(t, 9) * 1e9);
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

static int measure(bench_floors *f, int with_mma) {
    memset(f, 0, sizeof *f);
    cudaStream_t s = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int rc = 1;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    rc = dram(f, s, e0, e1);
    if (with_mma) rc |= mma(f, s, e0, e1);
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (s) cudaStreamDestroy(s);
    return rc;
}

int bench_floors_measure(bench_floors *f) {
    return measure(f, 1);
}

int bench_floors_measure_dram(bench_floors *f) {
    return measure(f, 0);
}

double bench_dram_floor_ms(const bench_floors *f, double bytes) {
    return f->dram_gbps > 0 ? bytes / (f->dram_gbps * 1e6) : 0.0;
}

double bench_mma_floor_ms(const bench_floors *f, double flop) {
    return f->mma_tflops > 0 ? flop / (f->mma_tflops * 1e9) : 0.0;
}
