/* The direct convolution on Hopper's warpgroup MMA (see conv_wgmma.cuh).
 *
 * A block is one warpgroup (128 threads). Per tile: warp 0 asks the tensor
 * memory accelerator for the next tile's window (rows of 72 pixels of 16
 * bytes, three 384-byte boxes a row: destinations 128-byte aligned, boxes
 * of at most 256 words) on the other buffer's mbarrier, then the warpgroup
 * goes down the window an input row at a time: the row's A fragments
 * (ldmatrix) feed the kr / 16 MMAs (m64nNk16, N = K stored) of each output
 * row it serves, each output row in its own accumulators (R + 1 sets), and
 * while one input row's MMAs run it writes the output row just finished
 * (bias, activation, FP16). The weights are restaged once a block
 * into K-major core matrices. Results: FP32 sums of the same products as
 * the other direct kernels in the tensor cores' order (not bit-identical to
 * them; checked against the CPU reference).
 *
 * Three forms measured (H200, session 50, autotune's medians, same runs as
 * the mma.sync kernel's 0.079-0.080 ms on 1920x1080x8->32 5x5 and 0.046 on
 * 2048x2048x8->8 3x3):
 *   - A by descriptor too (each output row's MMAs read the window rows from
 *     shared memory: R times a row): 0.088 and 0.053 ms;
 *   - A in registers, an input row's fragments loaded once for the R output
 *     rows it serves, R + 1 accumulator sets (this file): 0.0752 (16 rows)
 *     and 0.053 ms: 0.95x the mma.sync kernel's time at K 32, and taken
 *     there by autotune; at K 8 the MMAs of N = 8 cost ~35 cycles each
 *     whatever feeds them;
 *   - one MMA of N = R x K an input row (the R output rows it serves as
 *     column blocks of one accumulator, the weights phased by input row),
 *     rows by TMA into a ring down strips of 64 columns: 0.106 and 0.071
 *     ms: each row's MMAs, then a wait, then the finished row's stores, one
 *     after the other (the next row's MMA zeroes and adds to the block just
 *     written), with 3 blocks an SM at K 32 (149 registers).
 * And (session 51) the roles turned, the window as B (N = 128 pixels),
 * the weights of 64 / K output rows as A: one warpgroup a block 0.088 and
 * 0.030 ms (1920x1080x8->8), a block's loads, MMAs and stores adding up
 * (docs/bench/conv_wgmma_px_h200.txt); warp-specialized (a producer and
 * consumer warpgroups), conv_wgmma_px.cu, first measured in the standalone
 * harness docs/bench/conv_ws_px_h200.cu. */
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv_wgmma.cuh"
#include "conv_wgmma_px.cuh"
#include "act8.cuh"
#include "tma.cuh"
#include "wgmma.cuh"
#include "pdl.cuh"
#include "../cuda_check.h"
#include "../../activation.h"

namespace {

constexpr int WC = 72; /* window pixels a row: 64 outputs + up to 8 taps right */
#if FV_TMA
constexpr int PIECE = 24; /* pixels a TMA box: 384 bytes */
#endif
constexpr int THREADS = 128; /* one warpgroup */

struct wg_args {
    __half *y;
    const __half *w;
    const float *bias; /* kp FP32 values, or NULL */
    int p, q, kp, k, ys, kr, ph, pw;
    int tiles_x, tiles_y, total;
    int act;
    float alpha;
};

__host__ __device__ constexpr int ksteps(int r) {
    return (r * 8 + 15) / 16;
}
__host__ __device__ constexpr unsigned win_bytes(int th, int r) {
    return (unsigned)(th + r - 1) * WC * 16;
}
__host__ __device__ constexpr unsigned w_bytes(int nf, int r) {
    return (unsigned)r * ksteps(r) * nf * 256;
}
/* two windows, the weights, the bias (128 bytes), two mbarriers (128) */
__host__ __device__ constexpr size_t smem_bytes(int nf, int r, int th) {
    return 2 * (size_t)win_bytes(th, r) + w_bytes(nf, r) + 256;
}

#if FV_TMA && defined(__CUDA_ARCH_FEAT_SM90_ALL)
using fv_k::bar_expect;
using fv_k::bar_init;
using fv_k::bar_wait;
using fv_k::smem_u32;

using fv_k::wg_commit;
using fv_k::wg_desc;
using fv_k::wg_fence;
using fv_k::wg_pin;
using fv_k::wg_wait;

/* d (+)= A * B, m64nNk16, N = 8 * NF, A from registers (each warp's 16
 * rows as mma.sync's m16n8k16 A fragment), B from shared memory; ACC 0:
 * d = A * B. */
template <int NF, int ACC> struct mma;
template <int ACC> struct mma<1, ACC> {
    static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&x)[4], uint64_t b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "l"(b), "n"(ACC));
    }
};
template <int ACC> struct mma<2, ACC> {
    static __device__ __forceinline__ void run(float (&d)[8], const unsigned (&x)[4], uint64_t b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                       "+f"(d[6]), "+f"(d[7])
                     : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "l"(b), "n"(ACC));
    }
};
template <int ACC> struct mma<4, ACC> {
    static __device__ __forceinline__ void run(float (&d)[16], const unsigned (&x)[4], uint64_t b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
                     "{%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                       "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                       "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                     : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "l"(b), "n"(ACC));
    }
};

/* x[0..3] = the four 8 x 8 half matrices whose rows lanes 8i..8i+7 point at. */
__device__ __forceinline__ void ldsm_x4(unsigned (&x)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                 : "r"(addr));
}

/* Tile t as (image, first output row, first column). */
template <int TH> __device__ __forceinline__ int3 tile_at(const wg_args &a, int t) {
    const int tx = t % a.tiles_x, rest = t / a.tiles_x, ty = rest % a.tiles_y;
    return make_int3(rest / a.tiles_y, ty * TH, tx * 64);
}

/* Warp 0: tile t's window into win, completing on bar. */
template <int TH, int R>
__device__ __forceinline__ void fetch(unsigned char *win, unsigned long long *bar,
                                      const CUtensorMap *tm, const wg_args &a, int t) {
    constexpr int RIN = TH + R - 1;
    const int lane = threadIdx.x & 31;
    const int3 at = tile_at<TH>(a, t);
    if (lane == 0) bar_expect(bar, win_bytes(TH, R));
    __syncwarp();
    const int x0 = (at.z - a.pw) * 4, y0 = at.y - a.ph;
    for (int c = lane; c < RIN * 3; c += 32) {
        const int row = c / 3, piece = c - row * 3;
        fv_k::tma_load_3d(win + (row * WC + piece * PIECE) * 16, tm, bar, x0 + piece * PIECE * 4,
                          y0 + row, at.x);
    }
}

/* Output row oy of the tile from its accumulators d: bias, activation,
 * FP16, a 4-byte store per pixel and 8 channels. */
template <int NF, int ACT>
__device__ __forceinline__ void put_row(const wg_args &a, const float (&d)[NF * 4],
                                        const float (&b)[NF * 2], int n, int oy, int ox0) {
    if (oy >= a.p) return;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __half *yrow = a.y + ((size_t)n * a.p + oy) * a.q * a.ys + 2 * (lane & 3);
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int ox = ox0 + 16 * warp + (lane >> 2) + 8 * i;
        if (ox >= a.q) continue;
        __half *yp = yrow + (size_t)ox * a.ys;
#pragma unroll
        for (int j = 0; j < NF; j++)
            *reinterpret_cast<unsigned *>(yp + 8 * j) =
                fv_k::act2<ACT>(d[j * 4 + 2 * i], d[j * 4 + 2 * i + 1], b[2 * j], b[2 * j + 1],
                                8 * j + 2 * (lane & 3), a.k, a.alpha);
    }
}

/* One tile from its window, input row by input row: the warps load the
 * row's A fragments (ldmatrix: pixels m.. of this warp's 16, taps s and
 * s + 1 a 16-wide step) once, and they feed the MMAs of every output row
 * the input row serves (o = iy - r for filter row r), each output row in
 * its own accumulators (R + 1 sets: the row finished last is written while
 * the next input row's MMAs run). Every A byte is read from shared memory
 * once a tile row, not R times as with descriptors for A (which measured
 * 1.12-1.15x the mma.sync kernel's time, H200). */
template <int NF, int R, int TH, int ACT>
__device__ __forceinline__ void tile(const wg_args &a, const unsigned char *win,
                                     const unsigned char *sw, const float (&b)[NF * 2], int3 at) {
    constexpr int KS = ksteps(R), RIN = TH + R - 1, NA = R + 1;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    /* lane L: row (L >> 3 & 1) * 8 + L % 8 of the warp's 16, the tap L >> 4 */
    const unsigned arow =
        smem_u32(win) + (unsigned)((16 * warp + (lane & 7) + (lane & 8) + (lane >> 4)) * 16);
    const uint64_t db = wg_desc(sw, 128, 256);
    float acc[NA][NF * 4];
    unsigned x[2][KS][4];
#pragma unroll
    for (int iy = 0; iy < RIN; iy++) {
        unsigned(&xi)[KS][4] = x[iy & 1];
#pragma unroll
        for (int s = 0; s < KS; s++)
            ldsm_x4(xi[s], arow + (unsigned)(iy * WC * 16 + s * 32));
#pragma unroll
        for (int r = 0; r < R; r++)
            if (iy - r >= 0 && iy - r < TH) wg_pin(acc[(iy - r) % NA]);
        wg_fence();
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int o = iy - r;
            if (o < 0 || o >= TH) continue;
#pragma unroll
            for (int s = 0; s < KS; s++) {
                /* descriptors count 16-byte units: offsets add to the address field */
                const uint64_t eb = db + (uint64_t)(((r * KS + s) * NF * 256) >> 4);
                if (r == 0 && s == 0)
                    mma<NF, 0>::run(acc[o % NA], xi[s], eb);
                else
                    mma<NF, 1>::run(acc[o % NA], xi[s], eb);
            }
        }
        wg_commit();
#pragma unroll
        for (int r = 0; r < R; r++)
            if (iy - r >= 0 && iy - r < TH) wg_pin(acc[(iy - r) % NA]);
        /* all but this row's MMAs done: output row iy - R is complete, and
         * the fragments the next row overwrites are free */
        wg_wait<1>();
        const int done = iy - R;
        if (done >= 0 && done < TH) {
            wg_pin(acc[done % NA]);
            put_row<NF, ACT>(a, acc[done % NA], b, at.x, at.y + done, at.z);
        }
    }
    wg_wait<0>();
    wg_pin(acc[(TH - 1) % NA]);
    put_row<NF, ACT>(a, acc[(TH - 1) % NA], b, at.x, at.y + TH - 1, at.z);
}
#endif

#if FV_TMA
template <int NF, int R, int TH>
__global__ void __launch_bounds__(THREADS)
    conv_wgmma_kernel(const wg_args a, const __grid_constant__ CUtensorMap tm) {
#if FV_TMA && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fv_k::pdl_wait(); /* launched early (pdl.cuh): x and y only once the kernels before are done */
    constexpr int KS = ksteps(R);
    extern __shared__ __align__(128) unsigned char smem[];
    unsigned char *win0 = smem, *win1 = smem + win_bytes(TH, R), *sw = win1 + win_bytes(TH, R);
    float *sbias = reinterpret_cast<float *>(sw + w_bytes(NF, R));
    unsigned long long *bars = reinterpret_cast<unsigned long long *>(sbias + 32);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int t = blockIdx.x;
    if (threadIdx.x == 0) {
        bar_init(&bars[0]);
        bar_init(&bars[1]);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == 0 && t < a.total) fetch<TH, R>(win0, &bars[0], &tm, a, t);
    /* weights [r][k / 8][kr][8] -> per (r, 16-wide step s): core matrices
     * (k / 8, position / 8 within the step) of 8 channels x 8 positions */
    __half *swh = reinterpret_cast<__half *>(sw);
    const int nw = R * a.kr * NF * 8;
    for (int e = threadIdx.x; e < nw; e += THREADS) {
        const int nn = e & 7, pos = (e >> 3) % a.kr, rg = (e >> 3) / a.kr;
        const int g = rg % NF, r = rg / NF, s = pos >> 4, j = (pos >> 3) & 1;
        swh[((((r * KS + s) * NF + g) * 2 + j) * 8 + nn) * 8 + (pos & 7)] = a.w[e];
    }
    if (threadIdx.x < NF * 8) sbias[threadIdx.x] = a.bias ? a.bias[threadIdx.x] : 0.0f;
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* seen by the MMAs */
    __syncthreads();
    float b[NF * 2];
#pragma unroll
    for (int j = 0; j < NF; j++)
        b[2 * j] = sbias[8 * j + 2 * (lane & 3)], b[2 * j + 1] = sbias[8 * j + 2 * (lane & 3) + 1];
    fv_k::with_act(a.act, [&](auto act) {
        for (int i = 0; t < a.total; t += gridDim.x, i++) {
            const int cur = i & 1, tn = t + gridDim.x;
            if (warp == 0 && tn < a.total) /* the buffer everyone left at the last barrier */
                fetch<TH, R>(cur ? win0 : win1, &bars[cur ^ 1], &tm, a, tn);
            bar_wait(&bars[cur], (unsigned)(i >> 1) & 1u);
            tile<NF, R, TH, decltype(act)::value>(a, cur ? win1 : win0, sw, b, tile_at<TH>(a, t));
            __syncthreads(); /* everyone is done with this buffer before it is refilled */
        }
    });
#endif
}

typedef void (*wg_kernel_fn)(const wg_args, const CUtensorMap);

template <int NF, int R> wg_kernel_fn pick_th(int th) {
    return th == 4   ? conv_wgmma_kernel<NF, R, 4>
           : th == 8 ? conv_wgmma_kernel<NF, R, 8>
                     : conv_wgmma_kernel<NF, R, 16>;
}
template <int NF> wg_kernel_fn pick_r(int r, int th) {
    return r == 3 ? pick_th<NF, 3>(th) : pick_th<NF, 5>(th);
}
wg_kernel_fn pick(const fv__conv_direct_geom *g) {
    return g->kp == 8    ? pick_r<1>(g->r, g->th)
           : g->kp == 16 ? pick_r<2>(g->r, g->th)
                         : pick_r<4>(g->r, g->th);
}
#endif

bool shape_ok(const fv__conv_direct_geom *g) {
    if (g->wg == 2) return fv_k::px_shape_ok(g);
    return g->wg == 1 && g->cs == 8 && g->cm == 8 && !g->pair && !g->pc && !g->two &&
           g->persistent && g->sh == 1 && g->sw == 1 && g->r == g->s && (g->r == 3 || g->r == 5) &&
           (g->kp == 8 || g->kp == 16 || g->kp == 32) && g->k <= g->kp &&
           (g->th == 4 || g->th == 8 || g->th == 16) && g->n >= 1 && g->p >= 1 && g->q >= 1 &&
           g->h >= 1 && g->w >= 1 && (g->ys == 0 || (g->ys >= g->kp && g->ys % 8 == 0));
}

/* The reduction a filter row: its taps x the channels read, to 16. */
int kr_of(const fv__conv_direct_geom *g) {
    return (g->s * g->cm + 15) / 16 * 16;
}

size_t smem_of(const fv__conv_direct_geom *g) {
    return g->wg == 2 ? fv_k::px_smem(g) : smem_bytes(g->kp / 8, g->r, g->th);
}

/* The kernel of g (either form); NULL without tensor maps. */
const void *fn_of(const fv__conv_direct_geom *g) {
    if (g->wg == 2) return fv_k::px_fn(g);
#if FV_TMA
    return reinterpret_cast<const void *>(pick(g));
#else
    return nullptr;
#endif
}

/* The device's compute capability is 9.0 and this build has the kernel's
 * sm_90a code (cudaFuncGetAttributes fails where no image fits). */
bool runs_here(int device, const fv__conv_direct_geom *g, char *why, size_t why_n) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, why_n, "wgmma: cannot read the device's compute capability");
        return false;
    }
    if (major != 9 || minor != 0) {
        snprintf(why, why_n, "wgmma: needs an SM 9.0 GPU (this one is %d.%d)", major, minor);
        return false;
    }
#if FV_TMA
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, fn_of(g)) != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, why_n, "wgmma: this build has no sm_90a code for it");
        return false;
    }
    if (!fv_k::tensor_map_encoder()) {
        snprintf(why, why_n, "wgmma: the driver has no cuTensorMapEncodeTiled");
        return false;
    }
    return true;
#else
    (void)g;
    snprintf(why, why_n, "wgmma: built without tensor maps (CUDA before 12.0)");
    return false;
#endif
}

} // namespace

extern "C" int fv__conv_wgmma_check(fv__conv_direct_geom *g, int device, size_t *smem, char *why,
                                    size_t why_n) {
    *smem = 0;
    if (!shape_ok(g)) {
        snprintf(why, why_n,
                 g->wg == 2 ? "wgmma, pixels along N: stride 1; 8 channels stored and read, 3x3 "
                              "or 5x5, K 8, 16 or 32 (taps in pairs: K 32), segments of 8 or 16 "
                              "rows; or 32 channels stored and read, 3x3, K 32, segments of 2 "
                              "rows"
                            : "wgmma: 8 channels stored and read, stride 1, 3x3 or 5x5, K 8, "
                              "16 or 32, 4, 8 or 16 rows, persistent");
        return 0;
    }
    g->kr = kr_of(g);
    if (!runs_here(device, g, why, why_n)) return 0;
    int optin = 0;
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
        cudaSuccess) {
        cudaGetLastError();
        optin = 48 * 1024;
    }
    if (smem_of(g) > (size_t)optin) {
        snprintf(why, why_n, "wgmma: needs %zu bytes of shared memory per block, the GPU has %d",
                 smem_of(g), optin);
        return 0;
    }
    *smem = smem_of(g);
    return 1;
}

extern "C" size_t fv__conv_px_seq_bytes(int device, int kp, int r, int s, int sh, int sw, int cs,
                                        int cd) {
    fv__conv_direct_geom g;
    memset(&g, 0, sizeof g);
    g.n = g.h = g.w = g.p = g.q = 1;
    g.cs = cs, g.cm = cd, g.kp = g.k = kp, g.r = r, g.s = s, g.sh = sh, g.sw = sw;
    g.wg = 2, g.wn = cd == 32 ? 2 : 8;
    char why[160];
    if (!shape_ok(&g) || !runs_here(device, &g, why, sizeof why)) return 0;
    return fv_k::px_seq_bytes(kp, r, cd);
}

extern "C" fv_status fv__conv_px_seq_build(cudaStream_t stream, int kp, int r, int cd, int kr,
                                           void *w) {
    FV_REQUIRE(w && fv_k::px_seq_bytes(kp, r, cd) > 0 && kr == (r * cd + 15) / 16 * 16,
               FV_ERR_INTERNAL, "direct conv (wgmma): no weight sequence for K %d, %dx%d, %d read",
               kp, r, r, cd);
    return fv_k::px_seq_build(stream, kp, r, cd, kr, w);
}

extern "C" fv_status fv__conv_wgmma_prepare(fv__conv_direct_geom *g) {
    int dev = 0, optin = 0, per_sm = 0, sms = 0;
    char why[160];
    /* knobs for measurements and tests, before the kernel is chosen */
    const char *split = getenv("FV_CONV_PX_SPLIT");
    g->wt = !split ? 1 : strcmp(split, "0") == 0 ? 0 : strcmp(split, "2") == 0 ? 2 : 1;
    const char *ts = getenv("FV_CONV_PX_TMA_STORE");
    g->ws = g->wg == 2 && g->cs == 8 && !(ts && strcmp(ts, "0") == 0);
    FV_CUDA_TRY(cudaGetDevice(&dev));
    FV_REQUIRE(shape_ok(g) && runs_here(dev, g, why, sizeof why), FV_ERR_NOT_SUPPORTED,
               "direct conv (wgmma): %s", shape_ok(g) ? why : "geometry out of range");
    const void *fn = fn_of(g); /* not NULL: runs_here found its code */
    FV_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    FV_CUDA_TRY(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    const int threads = g->wg == 2 ? fv_k::px_threads() : THREADS;
    FV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, smem_of(g)));
    FV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    FV_REQUIRE(per_sm > 0, FV_ERR_NOT_SUPPORTED,
               "direct conv (wgmma): no block of %d threads and %zu bytes of shared memory fits "
               "an SM",
               threads, smem_of(g));
    const long tiles = g->wg == 2 ? fv_k::px_tiles(g)
                                  : (long)((g->q + 63) / 64) * ((g->p + g->th - 1) / g->th) * g->n;
    FV_REQUIRE(tiles <= 0x7fffffffL, FV_ERR_NOT_SUPPORTED, "direct conv (wgmma): %ld tiles", tiles);
    const long grid = (long)per_sm * sms;
    g->grid = (int)(tiles < grid ? tiles : grid);
    g->tma = 1;
    return FV_OK;
}

extern "C" fv_status fv__conv_wgmma_run(cudaStream_t stream, const fv__conv_direct_geom *g,
                                        const void *x, void *y, const void *w, const void *bias,
                                        fv_activation act, float alpha, int early) {
    FV_REQUIRE(shape_ok(g) && g->grid > 0 && g->kr == kr_of(g) && x && y && w &&
                   ((uintptr_t)x % 16) == 0 && ((uintptr_t)y % 4) == 0,
               FV_ERR_INTERNAL, "direct conv (wgmma): bad arguments or not prepared");
#if FV_TMA
    if (g->wg == 2) return fv_k::px_launch(stream, g, x, y, w, bias, act, alpha, early != 0);
    PFN_cuTensorMapEncodeTiled_v12000 encode = fv_k::tensor_map_encoder();
    FV_REQUIRE(encode, FV_ERR_INTERNAL, "direct conv (wgmma): no cuTensorMapEncodeTiled");
    /* the input as 32-bit words: (a row's pixels x 4 words, H, N); boxes of
     * PIECE pixels of one row */
    const cuuint64_t dims[3] = {(cuuint64_t)g->w * 4, (cuuint64_t)g->h, (cuuint64_t)g->n};
    const cuuint64_t strides[2] = {(cuuint64_t)g->w * 16, (cuuint64_t)g->h * g->w * 16};
    const cuuint32_t box[3] = {(cuuint32_t)PIECE * 4, 1, 1}, unit[3] = {1, 1, 1};
    CUtensorMap tm;
    const CUresult r =
        encode(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, const_cast<void *>(x), dims, strides, box,
               unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
               CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    FV_REQUIRE(r == CUDA_SUCCESS, FV_ERR_INTERNAL,
               "direct conv (wgmma): cuTensorMapEncodeTiled failed (%d) for %dx%dx8 x %d", (int)r,
               g->h, g->w, g->n);
    wg_args a;
    a.y = static_cast<__half *>(y);
    a.w = static_cast<const __half *>(w);
    a.bias = static_cast<const float *>(bias);
    a.p = g->p, a.q = g->q, a.kp = g->kp, a.k = g->k, a.ys = g->ys ? g->ys : g->kp;
    a.kr = g->kr, a.ph = g->ph, a.pw = g->pw;
    a.tiles_x = (g->q + 63) / 64, a.tiles_y = (g->p + g->th - 1) / g->th;
    a.total = a.tiles_x * a.tiles_y * g->n;
    a.act = (int)act, a.alpha = alpha;
    FV_CUDA_TRY(
        fv_k::launch(early != 0, dim3(g->grid), dim3(THREADS), smem_of(g), stream, pick(g), a, tm));
    return FV_OK;
#else
    (void)stream, (void)y, (void)bias, (void)act, (void)alpha, (void)early;
    FV_REQUIRE(0, FV_ERR_NOT_SUPPORTED, "direct conv (wgmma): built without tensor maps");
    return FV_ERR_NOT_SUPPORTED;
#endif
}
