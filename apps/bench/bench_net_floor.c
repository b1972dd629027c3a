/* The floors of bench_net_floor.h: the net's bytes and FLOPs from the
 * public API, the GPU's rates from bench_floor.c. */
#include "bench_net_floor.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "fovea/fovea.h"
#if FV_BUILT_WITH_CUDA
#include "bench_floor.h"
#endif

static int failed(const char *what, fv_status s) {
    fprintf(stderr, "fovea-bench net: floors: %s: %s: %s\n", what, fv_status_name(s),
            fv_last_error());
    return 1;
}

/* The stored bytes of the net's inputs (out 0) or outputs (out 1). */
static int io_bytes(fv_net *net, int out, double *bytes) {
    int n = out ? fv_net_output_count(net) : fv_net_input_count(net);
    for (int i = 0; i < n; i++) {
        fv_tensor_shape sh;
        fv_status s = fv_tensor_shape_get(out ? fv_net_output(net, i) : fv_net_input(net, i), &sh);
        if (s != FV_OK) return failed("fv_tensor_shape_get", s);
        *bytes += (double)sh.bytes;
    }
    return 0;
}

int bn_floor_of_net(fv_net *net, double gmacs, bn_floor *f) {
    memset(f, 0, sizeof *f);
    f->measured_ms = f->ratio = NAN;
    f->flop = 2.0 * gmacs * 1e9;
    fv_net_info info;
    fv_status s = fv_net_info_get(net, &info);
    if (s != FV_OK) return failed("fv_net_info_get", s);
    /* fv_net_info.io_bytes also counts the F32 staging tensors of
     * fv_net_input_upload, which an inference does not touch */
    double io = 0;
    if (io_bytes(net, 0, &io) || io_bytes(net, 1, &io)) return 1;
    f->fused_bytes = (double)info.weight_bytes + io;
    f->layer_bytes = (double)info.weight_bytes;
    for (int i = 0; i < info.layers; i++) {
        size_t r = 0, w = 0;
        if ((s = fv_net_layer_traffic(net, i, &r, &w)) != FV_OK)
            return failed("fv_net_layer_traffic", s);
        f->layer_bytes += (double)r + (double)w;
    }
    return 0;
}

void bn_floor_measure(bn_floor *f, int gpu, double graph_ms) {
    f->measured_ms = graph_ms;
    if (!gpu) {
        snprintf(f->why, sizeof f->why,
                 "the net ran on the CPU backend (the floors are a GPU's: its DRAM copy "
                 "bandwidth and FP16 tensor-core peak)");
        return;
    }
#if FV_BUILT_WITH_CUDA
    bench_floors g;
    if (bench_floors_measure(&g) != 0 || g.dram_gbps <= 0 || g.mma_tflops <= 0) {
        snprintf(f->why, sizeof f->why, "%s", g.why[0] ? g.why : "no figure came back");
        return;
    }
    f->measured = 1;
    f->dram_gbps = g.dram_gbps, f->tc_tflops = g.mma_tflops, f->gemm = g.gemm_m;
    f->dram_ms = bench_dram_floor_ms(&g, f->fused_bytes);
    f->layer_ms = bench_dram_floor_ms(&g, f->layer_bytes);
    f->tc_ms = bench_mma_floor_ms(&g, f->flop);
    f->floor_ms = f->dram_ms > f->tc_ms ? f->dram_ms : f->tc_ms;
    f->bound = f->dram_ms > f->tc_ms ? "memory" : "math";
    f->ratio = isfinite(graph_ms) && f->floor_ms > 0 ? graph_ms / f->floor_ms : NAN;
#else
    snprintf(f->why, sizeof f->why, "this fovea was built without CUDA");
#endif
}

void bn_floor_print(const bn_floor *f, const char *model, int batch) {
    if (!f->measured) {
        printf("\nfloors not measured: %s\n", f->why);
        return;
    }
    printf("\nfloors (this run: DRAM %.0f GB/s from a device-to-device copy; tensor cores %.0f "
           "TFLOP/s from a %d^3 FP16 cuBLASLt GEMM, FP32 accumulation):\n",
           f->dram_gbps, f->tc_tflops, f->gemm);
    printf("  DRAM fused: weights once + inputs read once + outputs written once (a perfect "
           "fused run)\n"
           "  DRAM by layer: weights + every layer's inputs read and output written once (a\n"
           "    layer-by-layer run keeping nothing in L2: a scale, not a floor)\n"
           "  TC: 2 x MACs at the GEMM's peak; floor = max(DRAM fused, TC); x floor = graph ms "
           "/ floor\n");
    printf("%-14s %5s %10s %10s %8s %10s %8s %10s %8s %-6s\n", "net", "batch", "graph ms",
           "DRAM fused", "MB", "DRAM layer", "MB", "TC ms", "x floor", "bound");
    printf("%-14.14s %5d ", model, batch);
    if (isfinite(f->measured_ms))
        printf("%10.4f ", f->measured_ms);
    else
        printf("%10s ", "-");
    printf("%10.4f %8.2f %10.4f %8.2f %10.4f ", f->dram_ms, f->fused_bytes * 1e-6, f->layer_ms,
           f->layer_bytes * 1e-6, f->tc_ms);
    if (isfinite(f->ratio))
        printf("%8.2f %-6s\n", f->ratio, f->bound);
    else
        printf("%8s %-6s\n", "-", f->bound);
}
