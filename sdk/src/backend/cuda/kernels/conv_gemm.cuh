/* fovea's split-reduction implicit GEMM: FP16 NHWC in, FP32 accumulate on
 * tensor cores, bias and activation fused, FP16 NHWC out. Meant for layers
 * with few output values and a long reduction (late CNN layers: 8x8 or 16x16
 * maps with 128-512 channels and 3x3 or 7x7 filters), where cuDNN's engines
 * run a handful of blocks on a GPU of 100+ SMs.
 *
 * GEMM view: M = output pixels (N * P * Q), N = output channels, the
 * reduction = R * S taps x the stored input channels, in steps of 32
 * channels of one tap. A block owns 64 pixels x bn (32 or 64) channels and
 * `splits` blocks share one such tile's reduction, each a contiguous range
 * of steps. With splits > 1 each block writes its FP32 partial tile to the
 * workspace; the last block of a tile to finish (a counter per tile) adds
 * the partials in split order (deterministic: the same bits every run),
 * applies bias and activation, writes the FP16 outputs and sets the counter
 * back to 0 for the next run. Operands go global -> shared memory with
 * cp.async in a 4-deep pipeline (plain loads before SM 8.0); nvcuda::wmma
 * m16n16k16. Input pixels outside the image read as 0. */
#ifndef FOVEA_KERNELS_CONV_GEMM_CUH
#define FOVEA_KERNELS_CONV_GEMM_CUH

#include <cuda_runtime.h>
#include "../../../core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fv__conv_gemm_geom {
    int n, h, w, cs; /* input; cs: channels stored (a multiple of 8) */
    int p, q;        /* output */
    int kp, k;       /* output channels stored (a multiple of 8), real */
    int ys;          /* output pixel stride (elements, a multiple of 8, >= kp; 0: kp) */
    int r, s, sh, sw, ph, pw, dh, dw;
    int bn;         /* output channels a block: 32 or 64 */
    int splits;     /* blocks sharing a tile's reduction: 1..64, <= steps */
    int tiles;      /* output tiles of 64 pixels x bn channels (set by check) */
    int steps;      /* reduction steps: r * s * ceil(cs / 32) (set by check) */
    void *counters; /* splits > 1: fv__conv_gemm_counter_bytes of device memory,
                       zero before the first run, kept zero by the kernel;
                       owned by the caller, one per op (not shared between
                       ops that may run at once) */
} fv__conv_gemm_geom;

/* Fills tiles and steps and checks that the kernel runs g. Returns 1, or 0
 * with why. */
int fv__conv_gemm_check(fv__conv_gemm_geom *g, char *why, size_t why_n);
/* Workspace bytes a run needs (the partial tiles; 0 when splits == 1). */
size_t fv__conv_gemm_workspace(const fv__conv_gemm_geom *g);
/* Bytes of g->counters (0 when splits == 1). */
size_t fv__conv_gemm_counter_bytes(const fv__conv_gemm_geom *g);

/* y = act(conv(x, w) + bias) on stream. w: FP16 [kp][r][s][cs], zero in
 * the padding (cuDNN's KRSC); bias: kp FP32 values (zero in the padding,
 * 16-byte aligned) or NULL; ws: at least fv__conv_gemm_workspace bytes,
 * 16-byte aligned. Output lanes k..kp-1 come out 0 (their weights and bias
 * are zero). No allocation, no synchronization (capturable). early: as
 * fv__conv_direct_run's. */
fv_status fv__conv_gemm_run(cudaStream_t stream, const fv__conv_gemm_geom *g, const void *x,
                            void *y, const void *w, const void *bias, fv_activation act,
                            float alpha, void *ws, int early);

#ifdef __cplusplus
}
#endif
#endif
