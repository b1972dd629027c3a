/* fovea-bench: the physical floors a benchmark row is measured against, in
 * the same run: the device's DRAM bandwidth (a device-to-device copy) and
 * its FP16 tensor-core peak (a large cuBLASLt GEMM, FP32 accumulation); for
 * rows on float data also its FP32 (FMA, no tensor cores) and TF32 peaks.
 * A row's DRAM floor is its bytes read and written over the bandwidth; its
 * compute floor its FLOPs over the peak of the unit it runs on; the floor
 * is the larger. */
#ifndef FOVEA_BENCH_FLOOR_H
#define FOVEA_BENCH_FLOOR_H

typedef struct bench_floors {
    double dram_gbps;  /* read + written bytes per second / 1e9; 0: not measured */
    double mma_tflops; /* FP16 in, FP32 accumulate; 0: not measured */
    int gemm_m;        /* the GEMM's size (M = N = K) */
    /* bench_floors_measure_fp32 only (else 0): float matrices, FP32 out */
    double fp32_tflops;           /* CUBLAS_COMPUTE_32F: FMA, no TF32; 0: not measured */
    double tf32_tflops;           /* CUBLAS_COMPUTE_32F_FAST_TF32; 0: not measured */
    int fp32_gemm_m, tf32_gemm_m; /* their sizes (M = N = K) */
    char why[192];                /* what failed, when a figure is 0 ("; " between) */
} bench_floors;

/* Measures both on the current CUDA device (0 on success; a figure that
 * could not be measured is 0, why says which and why). */
int bench_floors_measure(bench_floors *f);
/* The DRAM bandwidth alone (mma_tflops left 0). */
int bench_floors_measure_dram(bench_floors *f);
/* Adds the FP32 and TF32 peaks to f (filled by one of the above; other
 * figures and why kept, a failure's reason appended to why). Costs two more
 * GEMMs, about 0.1 s on an H100: only callers with float rows ask for it.
 * 0 on success. */
int bench_floors_measure_fp32(bench_floors *f);

/* ms at the floors: bytes at dram_gbps, flop at mma_tflops (0 when not measured). */
double bench_dram_floor_ms(const bench_floors *f, double bytes);
double bench_mma_floor_ms(const bench_floors *f, double flop);
/* flop at fp32_tflops, at tf32_tflops (0 when not measured). */
double bench_fp32_floor_ms(const bench_floors *f, double flop);
double bench_tf32_floor_ms(const bench_floors *f, double flop);

#endif
