/* The Orin estimate of fovea-bench --sms (bench_slice.h), apart from the
 * green contexts so that CPU-only builds and the unit test have it:
 *   t_orin = max(t_slice * f_gpu / f_orin, bytes / bw_orin)
 * t_slice on as many of this GPU's SMs as the Orin has (Ampere and Hopper
 * SMs both issue 128 FP32 lanes a clock; the slice keeps this GPU's DRAM,
 * so its time is the SMs' work), scaled by the SM clocks, unless the
 * Orin's DRAM is slower still. Orin figures (NVIDIA's Jetson Orin module
 * data sheets): Orin Nano 8GB: 8 SMs, 625 MHz GPU (1020 MHz in the 2024
 * "super" mode), 68 GB/s; AGX Orin 64GB: 16 SMs, 1.3 GHz, 204.8 GB/s. */
#include <math.h>
#include "bench_slice.h"

typedef struct orin {
    const char *name;
    int sms;
    double mhz, gbps;
} orin;

static const orin orins[BENCH_ORINS] = {{"Orin Nano 8GB", 8, 625.0, 68.0},
                                        {"AGX Orin 64GB", 16, 1300.0, 204.8}};

void bench_slice_orin_estimate(double mhz, double bytes, const int *got, const double *ms, int n,
                               bench_orin_estimate *est) {
    for (int k = 0; k < BENCH_ORINS; k++) {
        const orin *o = &orins[k];
        int at = -1;
        for (int i = 0; i < n; i++)
            if (got[i] == o->sms && isfinite(ms[i])) at = i;
        const double mem = bytes / (o->gbps * 1e6);
        const double comp = at < 0 ? NAN : ms[at] * mhz / o->mhz;
        const double t = at < 0 ? NAN : comp > mem ? comp : mem;
        est[k] = (bench_orin_estimate){.name = o->name,
                                       .sms = o->sms,
                                       .mhz = o->mhz,
                                       .gbps = o->gbps,
                                       .sm_ms = comp,
                                       .dram_ms = mem,
                                       .ms = t};
    }
}
