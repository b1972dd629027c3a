/* fovea-bench net: a net's physical floors on this GPU, measured in the run
 * (bench_floor.h), and fovea's time over them (bench_net_floor.c):
 *
 *   tensor cores: the net's FLOPs (2 x the MACs of its convolutions and fc)
 *     at the FP16 GEMM peak;
 *   DRAM, fused: the weights once (fv_net_info.weight_bytes) plus the net's
 *     inputs read once and its outputs written once: what a perfect fused
 *     run, every activation kept on chip, must move;
 *   DRAM, by layer: the weights plus every layer's inputs read and output
 *     written once (fv_net_layer_traffic, summed): a layer-by-layer run
 *     that keeps nothing in L2. Not a floor (L2, 50 MB on an H100, holds
 *     much of it at small batches): printed beside it as a scale.
 *
 * The floor is the larger of the fused DRAM floor and the tensor-core
 * floor; the ratio is the graph replay's time over it, and the bound
 * ("memory" or "math") says which of the two it is. */
#ifndef FOVEA_BENCH_NET_FLOOR_H
#define FOVEA_BENCH_NET_FLOOR_H

#include "fovea/net.h"

typedef struct bn_floor {
    /* the net's (any backend) */
    double flop;        /* 2 x MACs */
    double fused_bytes; /* weights + inputs + outputs */
    double layer_bytes; /* weights + every layer's reads and writes */
    /* the GPU's, when measured (measured 1); else why says why not */
    int measured;
    double dram_gbps, tc_tflops;
    int gemm;
    double dram_ms, layer_ms, tc_ms; /* bytes and flop above at the rates */
    double floor_ms;                 /* the larger of dram_ms and tc_ms */
    double measured_ms;              /* the graph replay's median; NAN: not timed */
    double ratio;                    /* measured_ms / floor_ms; NAN when either is missing */
    const char *bound;               /* "memory" or "math"; NULL when not measured */
    char why[200];
} bn_floor;

/* The net's flop (from gmacs, 1e9 MACs) and bytes. Returns 0, or 1 after
 * printing an SDK failure. */
int bn_floor_of_net(fv_net *net, double gmacs, bn_floor *f);

/* Measures the GPU's floors (gpu: the net ran on the CUDA backend; else why
 * is set and nothing is measured) and fills the ms and the ratio for
 * graph_ms (NAN: not timed). */
void bn_floor_measure(bn_floor *f, int gpu, double graph_ms);

/* The table: the net, batch, graph ms, both DRAM figures, the tensor-core
 * floor, the ratio and the bound; or "floors not measured: why". */
void bn_floor_print(const bn_floor *f, const char *model, int batch);

#endif
