/* The pixels-along-N form of fovea's Hopper conv kernel (conv_wgmma_px.cu),
 * for conv_wgmma.cu, which checks, prepares and launches both forms. */
#ifndef FOVEA_KERNELS_CONV_WGMMA_PX_CUH
#define FOVEA_KERNELS_CONV_WGMMA_PX_CUH

#include "conv_direct.cuh"
#include "tma.cuh"

namespace fv_k {

/* g (g->wg 2) is a shape of the form, stride 1: 8 channels stored and
 * read, 3x3 or 5x5, K 8, 16 or 32, segments of g->wn (8 or 16) output rows
 * x 128 pixels; or 32 channels stored and read, 3x3, K 32, segments of 2
 * rows. */
bool px_shape_ok(const fv__conv_direct_geom *g);
/* A block's shared memory and threads, the segments of the output, the
 * kernel. */
size_t px_smem(const fv__conv_direct_geom *g);
int px_threads(void);
long px_tiles(const fv__conv_direct_geom *g);
const void *px_fn(const fv__conv_direct_geom *g);

/* The kernels' weight sequences, laid out once after the direct weights
 * ([r][kp / 8][kr][8] halves, then from the next 128-byte boundary): the
 * bytes they take for a form the kernels run (kp output channels, r x r,
 * cd channels read), and their set-up on stream from the weights at w. */
size_t px_seq_bytes(int kp, int r, int cd);
fv_status px_seq_build(cudaStream_t stream, int kp, int r, int cd, int kr, void *w);

#if FV_TMA
/* Launches the kernel of g (prepared: g->grid set) on input x, with its
 * tensor map; w holds the sequences after the weights (px_seq_build). */
fv_status px_launch(cudaStream_t stream, const fv__conv_direct_geom *g, const void *x, void *y,
                    const void *w, const void *bias, fv_activation act, float alpha, bool early);
#endif

} // namespace fv_k
#endif
