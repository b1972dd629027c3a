/* fovea-bench: the physical floors a benchmark row is measured against, in
 * the same run: the device's DRAM bandwidth (a device-to-device copy) and
 * its FP16 tensor-core peak (a large cuBLASLt GEMM, FP32 accumulation). A
 * row's DRAM floor is its bytes read and written over the bandwidth; its
 * tensor-core floor its FLOPs over the peak; the floor is the larger. */
#ifndef FOVEA_BENCH_FLOOR_H
#define FOVEA_BENCH_FLOOR_H

typedef struct bench_floors {
    double dram_gbps;  /* read + written bytes per second / 1e9; 0: not measured */
    double mma_tflops; /* FP16 in, FP32 accumulate; 0: not measured */
    int gemm_m;        /* the GEMM's size (M = N = K) */
    char why[160];     /* what failed, when a figure is 0 */
} bench_floors;

/* Measures both on the current CUDA device (0 on success; a figure that
 * could not be measured is 0, why says which and why). */
int bench_floors_measure(bench_floors *f);
/* The DRAM bandwidth alone (mma_tflops left 0). */
int bench_floors_measure_dram(bench_floors *f);

/* ms at the floors: bytes at dram_gbps, flop at mma_tflops (0 when not measured). */
double bench_dram_floor_ms(const bench_floors *f, double bytes);
double bench_mma_floor_ms(const bench_floors *f, double flop);

#endif
