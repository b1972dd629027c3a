/* fovea's direct convolution: FP16 NHWC in, FP32 accumulate on tensor cores,
 * bias and activation fused, FP16 NHWC out, in one kernel. Meant for the
 * small channel counts of image layers (C <= 32, K <= 64), where cuDNN's
 * GEMM tiles are mostly padding.
 *
 * An implicit GEMM on tensor cores: a block owns `th` output rows x 32
 * output columns (one warp per row); it copies the input window of that
 * tile (its first `cm` channels) and all weights into shared memory once.
 * cm 4 and 8 (nvcuda::wmma m32n8k16): for a filter row r, the S taps x cm
 * channels a pixel needs lie next to each other in shared memory, so the A
 * operand of output pixel m is the row at m * stride_w * cm: no im2col, no
 * copies per tap. cm 16 and 32 ("wide pixels"): a window pixel takes cm + 8
 * halves, so the 8 rows of an ldmatrix phase fall in distinct shared-memory
 * bank groups (with cm halves they sat 32 or 64 bytes apart: 2- and 4-way
 * conflicts on every operand load); the MMAs go a tap and 16 channels at a
 * time (ldmatrix + mma.sync m16n8k16; two m16n8k8 before SM 8.0). On the
 * H100 this took 1024x1024x32->32 3x3 from 0.150 to 0.0955 ms (cuDNN's best
 * engine: 0.106). Each filter row's
 * reduction is S * cm rounded up to 16 (`kr`); the weights past S * cm are
 * zero. That overrun reads the pixel right of the window (or a zero column
 * at the edge) times a zero weight: finite inputs give exact results, but a
 * NaN or Inf there would reach the output pixel beside it (cuDNN's engines
 * keep it to the pixels whose window holds it).
 *
 * Two rows a warp (`two`; cm 8, 3x3 or 5x5, stride 1, K 8, 16 or 32): each
 * weight fragment and each input row's operands feed two output rows'
 * MMAs (ldmatrix + mma.sync), and the epilogue goes from registers straight
 * to memory; persistent, on the H100 it took 1920x1080x8->32 5x5 from 0.118
 * to 0.095 ms and 2048x2048x8->8 3x3 from 0.085 to 0.069 (1.67x and 1.49x
 * the DRAM floor). At stride 2 (3x3, 5x5, 9x9; 4 or 8 channels read; K 8,
 * 16 or 32; persistent) input row i serves filter row i of the first
 * output row and i - 2 of the second: 9x9 loads 11 input rows' operands
 * for two output rows where one row a warp loads 18.
 *
 * Pairs (`pair`, with cm 4): each 16-byte entry of the window holds the 4
 * channels of pixel x and of pixel x + 1, so a 16-wide step at entry 2j
 * reads pixels 2j, 2j+1, 2j+1, 2j+2: three taps a step (the repeated
 * pixel's second copy gets weight 0, and so does pixel 2j when the step
 * before took it), floor(S / 2) steps a filter row (at least 1) where 8
 * channels a pixel take ceil(S / 2): one step instead of two for 3x3 on
 * C <= 4. Any stride (entries are 16 bytes: wmma's row alignment holds).
 *
 * Packed taps (`pc`: the op's C, 1, 3 or 4; two rows a warp, persistent,
 * stride 1, 3x3 or 5x5, K 8, 16 or 32): the block copies the first 4
 * channels of each window pixel (8 bytes), then writes for each input row
 * and output column one vector of a filter row's S taps x pc channels
 * (position s * pc + c), zeros up to kr = S * pc rounded up to 16, so a
 * filter row is one 16-wide step (or one 8-wide, or 16 + 8) where 8
 * channels a pixel take S * 8 halves: 5x5 on RGB 16 positions instead of
 * 40, 2.5x fewer MMAs and operand loads. The padding positions hold zeros
 * in both operands. With one row a warp (persistent, 4 or 8 rows a block;
 * C of 3 or 4, strides 1-4, 3x3 to 7x7 and 9x9 on 4 channels, K 16, 32 or
 * 64) the vector of output column m holds the taps of window pixels
 * m * sw .. m * sw + S - 1: network stems (7x7 s2 on RGB: 32 positions a
 * filter row where 8 channels a pixel take 56) and 9x9 s2 on 4 channels
 * (48 where pairs of pixels take 80). */
#ifndef FOVEA_KERNELS_CONV_DIRECT_CUH
#define FOVEA_KERNELS_CONV_DIRECT_CUH

#include <cuda_runtime.h>
#include "../../../core/internal.h"
#include "../../conv_weights.h" /* fv__conv_direct_pair_pos */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fv__conv_direct_geom {
    int n, h, w; /* input */
    int cs;      /* input channels as stored (elements between pixels) */
    int cm;      /* channels read per pixel: 4, 8, 16 or 32, <= cs */
    int pair;    /* 1: cm 4 in pairs of pixels (above) */
    int p, q;    /* output */
    int kp, k;   /* output channels stored (multiple of 8, <= 64), real */
    int ys;      /* output pixel stride (elements, a multiple of 8, >= kp; 0: kp) */
    int r, s, sh, sw, ph, pw;
    int kr;         /* reduction per filter row: s * cm rounded up to 16;
                       pairs: 16 * max(1, s / 2); packed taps: s * pc to 16 */
    int th;         /* output rows (warps) per block: 4, 8 or 16 */
    int persistent; /* 1: as many blocks as fit at once, each walking tiles and
                       loading the next tile's window while it computes one
                       (small images); 0: a block a tile (large ones) */
    int two;        /* 1: two output rows a warp (th / 2 warps a block): each weight
                       fragment and input row feeds both (8 channels read, stride 1,
                       3x3 or 5x5, K 8, 16 or 32; a block a tile or persistent; or
                       stride 2, 4 or 8 read, 3x3, 5x5 or 9x9, persistent) */
    int pc;         /* packed taps (above): the op's C (1, 3 or 4), with cm 4, persistent;
                       two rows a warp or one (C 3 or 4); kr = s * pc rounded up to 16;
                       0: off */
    int grid;       /* blocks (set by fv__conv_direct_prepare) */
    int tma;        /* set by fv__conv_direct_prepare: 1 where the window goes by
                       Hopper's tensor memory accelerator (SM 9.0+; persistent two
                       rows a warp, 8 channels stored and read, K 8, 16 or 32, stride 1,
                       3x3 or 5x5),
                       unless FV_CONV_NO_TMA=1 in the environment */
    int wg;         /* Hopper's warpgroup-MMA kernel (conv_wgmma.cuh: 8 channels,
                       stride 1, 3x3 or 5x5, K 8, 16 or 32, persistent; SM 9.0,
                       builds for SM 9.0 only): 1, the rows form (th 4, 8 or 16 rows
                       of 64 columns); 2, pixels along N, warp-specialized (segments
                       of wn rows x 128 columns); 0: neither */
    int wn;         /* wg 2: output rows a segment, 8 or 16 (32 channels read: 2) */
    int wp;         /* wg 2, K 32, 8 channels read: a step's taps in pairs across
                       input rows (15 MMAs a step instead of 18 at 5x5) */
    int wt;         /* wg 2, set by fv__conv_direct_prepare: the last round's
                       segments as pieces of one step each, where that evens out
                       the blocks' shares (1); FV_CONV_PX_SPLIT=0 in the
                       environment: never (0); =2: always, for tests (2) */
    int ws;         /* wg 2, 8 channels read, set by fv__conv_direct_prepare: 1, a
                       step's staged tile goes out as one TMA box (the default);
                       0, by the consumers' own stores (FV_CONV_PX_TMA_STORE=0 in
                       the environment, for A/B timing) */
} fv__conv_direct_geom;

/* Fills kr and checks that the kernel runs g on device `device`; smem gets
 * the bytes of shared memory a block takes. Returns 1, or 0 with why. */
int fv__conv_direct_check(fv__conv_direct_geom *g, int device, size_t *smem, char *why,
                          size_t why_n);

/* Set-up, once per op: lets the kernel of g take up to the current device's
 * opt-in limit of shared memory (more than the default 48 KB) and sets
 * g->grid, the blocks that fit the GPU at once. */
fv_status fv__conv_direct_prepare(fv__conv_direct_geom *g);

/* The weights some kernels read after w's (below): the Hopper
 * pixels-along-N kernels' weight sequences (conv_wgmma.cuh), laid out once
 * at set-up. fv__conv_direct_seq_bytes: their bytes, from the next 128-byte
 * boundary after w's, for a form of kp output channels, r x s at stride
 * sh x sw, cs channels stored and cd read on device `device`; 0 where no
 * kernel needs them (lay out none). fv__conv_direct_seq_build: lays them
 * out on stream from w (kr the form's; w has room for them). */
size_t fv__conv_direct_seq_bytes(int device, int kp, int r, int s, int sh, int sw, int cs, int cd);
fv_status fv__conv_direct_seq_build(cudaStream_t stream, int kp, int r, int cd, int kr, void *w);

/* y = act(conv(x, w) + bias) on stream. w: FP16 [r][kp / 8][kr][8],
 * element (r, k / 8, s * cm + c, k % 8) = W[k][c][r][s] (pairs: position
 * fv__conv_direct_pair_pos(s, c) instead of s * cm + c; packed taps:
 * s * pc + c), zero elsewhere
 * (row-major 16 x 8 B tiles with 16-byte rows: conflict-free shared-memory
 * reads), then where fv__conv_direct_seq_bytes says so the sequences
 * (above); bias: kp FP32 values (zero in the padding, 16-byte aligned) or
 * NULL. Output lanes k..kp-1 come out 0 (their weights and bias are zero).
 * No allocation, no synchronization (capturable). early: launched as a
 * programmatic dependent of the kernel before it on stream (pdl.cuh; the
 * context's choice). */
fv_status fv__conv_direct_run(cudaStream_t stream, const fv__conv_direct_geom *g, const void *x,
                              void *y, const void *w, const void *bias, fv_activation act,
                              float alpha, int early);

#ifdef __cplusplus
}
#endif
#endif
