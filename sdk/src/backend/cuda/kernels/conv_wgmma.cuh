/* fovea's Hopper convolution kernel (conv_wgmma.cu): the direct kernel's
 * implicit GEMM on Hopper's warpgroup MMA (wgmma), which reads both
 * operands from shared memory, so no thread loads them into registers.
 *
 * Scope: 8 channels stored and read (cs = cm = 8), stride 1, 3x3 or 5x5,
 * K of 8, 16 or 32; persistent blocks of one warpgroup, each walking tiles
 * of th (4, 8 or 16) output rows x 64 columns; the window of a tile comes by
 * the tensor memory accelerator (rows of 72 pixels, three 384-byte copies
 * a row) into one of two buffers while the other is computed.
 *
 * The operand trick: in NHWC with 8 channels a pixel is one 16-byte row of
 * an 8 x 16-byte core matrix, so the A operand of output pixels m..m+63 at
 * the filter row's taps (s, s + 1) is the window row itself read from pixel
 * m + s: core matrices 128 bytes apart along M (8 pixels), 16 bytes apart
 * along K (the next tap). No im2col, no copies per tap; a filter row is
 * kr / 16 MMAs of K 16 (3x3: 2; 5x5: 3; the taps past S have zero weights,
 * as in the other direct kernels: a NaN there reaches the pixel beside it).
 *
 * Built only where the library is built for SM 9.0 (sm_90a machine code:
 * wgmma is an arch-specific instruction) and run only on SM 9.0 devices
 * (H100, H200); fv__conv_wgmma_built says whether this build has it. */
#ifndef FOVEA_KERNELS_CONV_WGMMA_CUH
#define FOVEA_KERNELS_CONV_WGMMA_CUH

#include "conv_direct.cuh"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks that the wgmma kernel runs g (g->wg set) on device `device`; fills
 * g->kr; smem gets the bytes of shared memory a block takes. Returns 1, or
 * 0 with why. */
int fv__conv_wgmma_check(fv__conv_direct_geom *g, int device, size_t *smem, char *why,
                         size_t why_n);

/* Set-up, once per op: the kernel's shared-memory limit and g->grid. */
fv_status fv__conv_wgmma_prepare(fv__conv_direct_geom *g);

/* The pixels-along-N form (g->wg 2) reads its weights as sequences laid
 * out once, at set-up, after the direct weights (fv__conv_direct_run's w,
 * [r][kp / 8][kr][8] halves), from the next 128-byte boundary: the sequences
 * of one filter bank copy whole into each block's shared memory (gathering
 * them there took 4.5-7.7 us of each run, H200, session 54).
 * fv__conv_px_seq_bytes: the bytes they take for a form of kp output
 * channels, r x s at stride sh x sw, cs channels stored and cd read, where
 * that form runs on device `device` (0 where it does not: then lay out
 * none). fv__conv_px_seq_build: lays them out on stream from the weights at
 * w (kr as the form's; w has room for them). */
size_t fv__conv_px_seq_bytes(int device, int kp, int r, int s, int sh, int sw, int cs, int cd);
fv_status fv__conv_px_seq_build(cudaStream_t stream, int kp, int r, int cd, int kr, void *w);

/* As fv__conv_direct_run (the same weight and bias layouts; the pixels-along-N
 * form reads the sequences after the weights: above). */
fv_status fv__conv_wgmma_run(cudaStream_t stream, const fv__conv_direct_geom *g, const void *x,
                             void *y, const void *w, const void *bias, fv_activation act,
                             float alpha, int early);

#ifdef __cplusplus
}
#endif
#endif
