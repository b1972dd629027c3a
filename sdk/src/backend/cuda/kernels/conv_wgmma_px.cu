/* fovea's Hopper conv kernel, pixels along N (see conv_wgmma.cuh).
 *
 * The rows form (conv_wgmma.cu) multiplies pixels (M = 64) by output
 * channels (N = K: 8 to 32). wgmma of so small an N runs the tensor cores
 * far under their peak (an m64n8k16 took ~35 SM cycles there, H200): here
 * the roles turn. The window (the input rows of a tile, by TMA) is B, NP =
 * 64 or 128 pixels along N; the weights are A, M = 64 rows = OR = 64 / K
 * output rows of K channels each. Input row iy of the tile contributes to
 * output row b through filter row iy - b, so its A stacks, for b = 0..OR-1,
 * the weights of filter row iy - b (zero outside 0..R-1): one MMA per
 * 16-wide step of an input row feeds all OR output rows, each wgmma m64 x
 * NP x 16. The stacks are windows of one sequence in shared memory (W_R-1
 * .. W_0 between zeros, read from position C0 - iy), so no stack is stored
 * twice.
 *
 * Operands by descriptor, both K-major without swizzling: B's core matrix
 * is 8 pixels of one tap (16 bytes a pixel: 8 channels), the next tap 16
 * bytes on (LBO 16), the next 8 pixels 128 bytes on (SBO 128): the window
 * row itself, read from pixel 2s for the step of taps (2s, 2s + 1). A's is
 * 8 output channels x 8 positions, laid out like the rows form's B (LBO
 * 128, SBO 256).
 *
 * A tile (OR rows x NP pixels) is RIN x KS MMAs into one accumulator set
 * of NP / 2 registers a thread, and two sets alternate: tile i's MMAs run
 * while tile i - 1's sums go out (bias, activation, FP16; stmatrix with
 * .trans turns the channels-by-pixels fragments into NHWC rows of a staged
 * tile, then 16-byte stores). Persistent blocks of one warpgroup, two
 * window buffers: tile i + 1's window is asked for as soon as tile i - 1's
 * MMAs are done. Results: FP32 sums of the same products as the other
 * direct kernels in the tensor cores' order (checked against the CPU). */
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdio.h>
#include "conv_wgmma_px.cuh"
#include "act8.cuh"
#include "wgmma.cuh"
#include "../cuda_check.h"
#include "../../activation.h"

namespace {

constexpr int THREADS = 128; /* one warpgroup */

/* The geometry of kernel <NF (K / 8), R, NP>. */
__host__ __device__ constexpr int p_or(int nf) { /* output rows a tile */
    return 8 / nf;
}
__host__ __device__ constexpr int p_ks(int r) { /* 16-wide steps a filter row */
    return (r * 8 + 15) / 16;
}
__host__ __device__ constexpr int p_rin(int nf, int r) { /* input rows a tile */
    return p_or(nf) + r - 1;
}
__host__ __device__ constexpr int p_wc(int np) { /* window pixels a row: NP + taps, 3 boxes */
    return np == 64 ? 72 : 144;
}
__host__ __device__ constexpr int p_len(int nf, int r) { /* positions of the weight sequence */
    return 2 * p_or(nf) + r - 2;
}
__host__ __device__ constexpr int p_pitch(int nf) { /* bytes a staged pixel (no bank conflicts) */
    return 16 * nf + (nf > 1 ? 16 : 0);
}
__host__ __device__ constexpr unsigned p_win(int nf, int r, int np) {
    return (unsigned)p_rin(nf, r) * p_wc(np) * 16;
}
__host__ __device__ constexpr unsigned p_seq(int nf, int r) {
    return (unsigned)p_ks(r) * p_len(nf, r) * nf * 256;
}
__host__ __device__ constexpr unsigned p_stg(int nf, int np) {
    return (unsigned)p_or(nf) * np * p_pitch(nf);
}
/* two windows, the weight sequence, the staged tile, the bias (128 bytes),
 * two mbarriers (128) */
__host__ __device__ constexpr size_t p_smem(int nf, int r, int np) {
    return 2 * (size_t)p_win(nf, r, np) + p_seq(nf, r) + p_stg(nf, np) + 256;
}

struct px_args {
    __half *y;
    const __half *w;
    const float *bias; /* kp FP32 values, or NULL */
    int p, q, kp, k, ys, kr, ph, pw;
    int tiles_x, tiles_y, total;
    int act;
    float alpha;
};

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

/* d (+)= A * B, m64nNPk16, both from shared memory; ACC 0: d = A * B. */
template <int NP, int ACC> struct mma_ss;
template <int ACC> struct mma_ss<64, ACC> {
    static __device__ __forceinline__ void run(float (&d)[32], uint64_t a, uint64_t b) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
            "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
              "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
              "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
              "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
              "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
              "+f"(d[31])
            : "l"(a), "l"(b), "n"(ACC));
    }
};
template <int ACC> struct mma_ss<128, ACC> {
    static __device__ __forceinline__ void run(float (&d)[64], uint64_t a, uint64_t b) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
            "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
              "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
              "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
              "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
              "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
              "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
              "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
              "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
              "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
              "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]),
              "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(a), "l"(b), "n"(ACC));
    }
};

/* Four 8 x 8 half matrices, transposed, to the rows whose addresses lanes
 * 8i..8i+7 give (matrix i from v[i]). */
__device__ __forceinline__ void stsm_x4_trans(const unsigned (&v)[4], unsigned addr) {
    asm volatile(
        "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
        "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
        : "memory");
}

/* Bias, activation and FP16 for sums v0, v1 of one channel c at two pixels:
 * the half2's bits (channels >= k come out 0: see act8.cuh). */
template <int ACT>
__device__ __forceinline__ unsigned pair_act(float v0, float v1, float b, int c, int k,
                                             float alpha) {
    float o0 = v0 + b, o1 = v1 + b;
    if (ACT != FV_ACT_RELU) o0 = fv__act(ACT, alpha, o0), o1 = fv__act(ACT, alpha, o1);
    if (ACT == FV_ACT_SIGMOID && c >= k) o0 = o1 = 0.0f;
    const __half2 h = ACT == FV_ACT_RELU ? fv_k::relu_pack(o0, o1) : __floats2half2_rn(o0, o1);
    return *reinterpret_cast<const unsigned *>(&h);
}

/* Tile t as (image, first output row, first column). */
template <int OR, int NP> __device__ __forceinline__ int3 tile_at(const px_args &a, int t) {
    const int tx = t % a.tiles_x, rest = t / a.tiles_x, ty = rest % a.tiles_y;
    return make_int3(rest / a.tiles_y, ty * OR, tx * NP);
}

/* Warp 0: tile t's window into win, completing on bar. */
template <int NF, int R, int NP>
__device__ __forceinline__ void fetch(unsigned char *win, unsigned long long *bar,
                                      const CUtensorMap *tm, const px_args &a, int t) {
    constexpr int RIN = p_rin(NF, R), WC = p_wc(NP), PIECE = WC / 3;
    const int lane = threadIdx.x & 31;
    const int3 at = tile_at<p_or(NF), NP>(a, t);
    if (lane == 0) bar_expect(bar, p_win(NF, R, NP));
    __syncwarp();
    const int x0 = (at.z - a.pw) * 4, y0 = at.y - a.ph;
    for (int c = lane; c < RIN * 3; c += 32) {
        const int row = c / 3, piece = c - row * 3;
        fv_k::tma_load_3d(win + (row * WC + piece * PIECE) * 16, tm, bar, x0 + piece * PIECE * 4,
                          y0 + row, at.x);
    }
}

/* A tile's MMAs into d: input row iy's step s multiplies the stack of
 * filter rows iy - b (sequence position C0 - iy) by the window row from
 * pixel 2s. */
template <int NF, int R, int NP>
__device__ __forceinline__ void mmas(float (&d)[NP / 2], const unsigned char *win,
                                     const unsigned char *seq) {
    constexpr int KS = p_ks(R), RIN = p_rin(NF, R), L = p_len(NF, R), C0 = p_or(NF) + R - 2,
                  WC = p_wc(NP);
    uint64_t da = wg_desc(seq, 128, 256), db = wg_desc(win, 16, 128);
    /* opaque, so that the compiler derives each MMA's descriptors here rather
     * than holding all RIN x KS of them in registers across tiles */
    asm volatile("" : "+l"(da), "+l"(db));
#pragma unroll
    for (int iy = 0; iy < RIN; iy++)
#pragma unroll
        for (int s = 0; s < KS; s++) {
            /* descriptors count 16-byte units: offsets add to the address field */
            const uint64_t ea = da + (uint64_t)((s * L + C0 - iy) * NF * 16);
            const uint64_t eb = db + (uint64_t)(iy * WC + 2 * s);
            if (iy == 0 && s == 0)
                mma_ss<NP, 0>::run(d, ea, eb);
            else
                mma_ss<NP, 1>::run(d, ea, eb);
        }
}

/* A finished tile's sums d into the staged tile: this thread's two M rows
 * (channel ci[i] of output row (16 warp + 8 i) / K) at pixel pairs. */
template <int NF, int NP, int ACT>
__device__ __forceinline__ void stage(const px_args &a, const float (&d)[NP / 2],
                                      const float (&bi)[2], const int (&ci)[2],
                                      unsigned char *stg) {
    constexpr int PITCH = p_pitch(NF);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, m = lane >> 3;
    const int mrow0 = 16 * warp + 8 * (m & 1); /* the first M row of the matrix this lane places */
    const unsigned base =
        smem_u32(stg) +
        (unsigned)(((mrow0 / (8 * NF)) * NP + (lane & 7)) * PITCH + (mrow0 % (8 * NF)) * 2);
#pragma unroll
    for (int j = 0; j < NP / 8; j += 2) {
        unsigned v[4];
#pragma unroll
        for (int x = 0; x < 4; x++) {
            const int i = x & 1, jj = j + (x >> 1);
            v[x] =
                pair_act<ACT>(d[jj * 4 + 2 * i], d[jj * 4 + 2 * i + 1], bi[i], ci[i], a.k, a.alpha);
        }
        stsm_x4_trans(v, base + (unsigned)(8 * (j + (m >> 1)) * PITCH));
    }
}

/* The staged tile at `at` to the output: 16 bytes a thread and store. */
template <int NF, int NP>
__device__ __forceinline__ void put(const px_args &a, const unsigned char *stg, int3 at) {
    constexpr int PITCH = p_pitch(NF), CH = p_or(NF) * NP * NF; /* 16-byte pieces: 8 NP */
#pragma unroll
    for (int n = 0; n < CH / THREADS; n++) {
        const int e = (int)threadIdx.x + n * THREADS;
        const int cc = e % NF, px = (e / NF) % NP, b = e / (NF * NP);
        const int oy = at.y + b, ox = at.z + px;
        if (oy < a.p && ox < a.q)
            *reinterpret_cast<uint4 *>(a.y + (((size_t)at.x * a.p + oy) * a.q + ox) * a.ys +
                                       cc * 8) =
                *reinterpret_cast<const uint4 *>(stg + (b * NP + px) * PITCH + cc * 16);
    }
}

struct smem_parts {
    unsigned char *win[2], *seq, *stg;
    unsigned long long *bars;
};

/* Tile i (t) whole: its MMAs into d once its window is in; then, with the
 * window buffer free, tile i + 2's window asked for into it while the sums
 * go out. One accumulator set: with two (tile i's MMAs running while tile
 * i - 1's sums go out), ptxas serialized the MMAs (C7514: it does not
 * follow which group a wait retires across the tile loop); 2-4 blocks an
 * SM keep the tensor cores busy instead. */
template <int NF, int R, int NP, int ACT>
__device__ __forceinline__ void tile(const px_args &a, const CUtensorMap *tm, const smem_parts &sp,
                                     float (&d)[NP / 2], int i, int t, const float (&bi)[2],
                                     const int (&ci)[2]) {
    const int cur = i & 1;
    bar_wait(&sp.bars[cur], (unsigned)(i >> 1) & 1u);
    wg_fence();
    mmas<NF, R, NP>(d, cur ? sp.win[1] : sp.win[0], sp.seq);
    wg_commit();
    wg_wait<0>();
    wg_pin(d);
    stage<NF, NP, ACT>(a, d, bi, ci, sp.stg);
    __syncthreads(); /* the tile staged; its MMAs done in every warp */
    const int tn = t + 2 * (int)gridDim.x;
    if (threadIdx.x < 32 && tn < a.total)
        fetch<NF, R, NP>(cur ? sp.win[1] : sp.win[0], &sp.bars[cur], tm, a, tn);
    put<NF, NP>(a, sp.stg, tile_at<p_or(NF), NP>(a, t));
    __syncthreads(); /* the staged tile read before the next is staged */
}
#endif

#if FV_TMA
template <int NF, int R, int NP>
__global__ void __launch_bounds__(THREADS)
    conv_wgmma_px_kernel(const px_args a, const __grid_constant__ CUtensorMap tm) {
#if FV_TMA && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int KS = p_ks(R), L = p_len(NF, R), C0 = p_or(NF) + R - 2;
    extern __shared__ __align__(128) unsigned char smem[];
    smem_parts sp;
    sp.win[0] = smem;
    sp.win[1] = smem + p_win(NF, R, NP);
    sp.seq = sp.win[1] + p_win(NF, R, NP);
    sp.stg = sp.seq + p_seq(NF, R);
    float *sbias = reinterpret_cast<float *>(sp.stg + p_stg(NF, NP));
    sp.bars = reinterpret_cast<unsigned long long *>(sbias + 32);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int t0 = blockIdx.x, t1 = t0 + (int)gridDim.x;
    if (threadIdx.x == 0) {
        bar_init(&sp.bars[0]);
        bar_init(&sp.bars[1]);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == 0 && t0 < a.total) fetch<NF, R, NP>(sp.win[0], &sp.bars[0], &tm, a, t0);
    if (warp == 0 && t1 < a.total) fetch<NF, R, NP>(sp.win[1], &sp.bars[1], &tm, a, t1);
    /* the weight sequence: per step s, positions x of NF core-matrix pairs
     * (8 channels x 8 positions, two positions' halves of the step); x = C0
     * - r holds filter row r, the rest zeros */
    __half *sq = reinterpret_cast<__half *>(sp.seq);
    for (int e = threadIdx.x; e < KS * L * NF * 128; e += THREADS) {
        const int el = e & 7, ch = (e >> 3) & 7, jj = (e >> 6) & 1, rest = e >> 7;
        const int g = rest % NF, sx = rest / NF, x = sx % L, s = sx / L, r = C0 - x;
        sq[e] = r >= 0 && r < R ? a.w[((r * NF + g) * a.kr + s * 16 + jj * 8 + el) * 8 + ch]
                                : __float2half(0.0f);
    }
    if (threadIdx.x < NF * 8) sbias[threadIdx.x] = a.bias ? a.bias[threadIdx.x] : 0.0f;
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* seen by the MMAs */
    __syncthreads();
    int ci[2];
    float bi[2];
#pragma unroll
    for (int i = 0; i < 2; i++)
        ci[i] = (16 * warp + (lane >> 2) + 8 * i) % (8 * NF), bi[i] = sbias[ci[i]];
    fv_k::with_act(a.act, [&](auto act) {
        constexpr int ACT = decltype(act)::value;
        float d[NP / 2]; /* no initial values: a tile's first MMA ignores them */
        for (int i = 0, t = t0; t < a.total; t += gridDim.x, i++)
            tile<NF, R, NP, ACT>(a, &tm, sp, d, i, t, bi, ci);
    });
#endif
}

typedef void (*px_kernel_fn)(const px_args, const CUtensorMap);

template <int NF, int R> px_kernel_fn pick_np(int np) {
    return np == 64 ? conv_wgmma_px_kernel<NF, R, 64> : conv_wgmma_px_kernel<NF, R, 128>;
}
template <int NF> px_kernel_fn pick_r(int r, int np) {
    return r == 3 ? pick_np<NF, 3>(np) : pick_np<NF, 5>(np);
}
px_kernel_fn pick(const fv__conv_direct_geom *g) {
    return g->kp == 8    ? pick_r<1>(g->r, g->wn)
           : g->kp == 16 ? pick_r<2>(g->r, g->wn)
                         : pick_r<4>(g->r, g->wn);
}
#endif

} // namespace

namespace fv_k {

bool px_shape_ok(const fv__conv_direct_geom *g) {
    return g->wg == 2 && (g->wn == 64 || g->wn == 128) && g->cs == 8 && g->cm == 8 && !g->pair &&
           !g->pc && !g->two && g->sh == 1 && g->sw == 1 && g->r == g->s &&
           (g->r == 3 || g->r == 5) && (g->kp == 8 || g->kp == 16 || g->kp == 32) &&
           g->k <= g->kp && g->n >= 1 && g->p >= 1 && g->q >= 1 && g->h >= 1 && g->w >= 1 &&
           (g->ys == 0 || (g->ys >= g->kp && g->ys % 8 == 0));
}

size_t px_smem(const fv__conv_direct_geom *g) {
    return p_smem(g->kp / 8, g->r, g->wn);
}

long px_tiles(const fv__conv_direct_geom *g) {
    const int orows = p_or(g->kp / 8);
    return (long)((g->q + g->wn - 1) / g->wn) * ((g->p + orows - 1) / orows) * g->n;
}

int px_piece(const fv__conv_direct_geom *g) {
    return p_wc(g->wn) / 3;
}

const void *px_fn(const fv__conv_direct_geom *g) {
#if FV_TMA
    return reinterpret_cast<const void *>(pick(g));
#else
    (void)g;
    return nullptr;
#endif
}

#if FV_TMA
fv_status px_launch(cudaStream_t stream, const fv__conv_direct_geom *g, const CUtensorMap &tm,
                    void *y, const void *w, const void *bias, fv_activation act, float alpha) {
    FV_REQUIRE(px_shape_ok(g) && g->grid > 0 && y && w && ((uintptr_t)y % 16) == 0, FV_ERR_INTERNAL,
               "direct conv (wgmma, pixels along N): bad arguments");
    const int orows = p_or(g->kp / 8);
    px_args a;
    a.y = static_cast<__half *>(y);
    a.w = static_cast<const __half *>(w);
    a.bias = static_cast<const float *>(bias);
    a.p = g->p, a.q = g->q, a.kp = g->kp, a.k = g->k, a.ys = g->ys ? g->ys : g->kp;
    a.kr = g->kr, a.ph = g->ph, a.pw = g->pw;
    a.tiles_x = (g->q + g->wn - 1) / g->wn, a.tiles_y = (g->p + orows - 1) / orows;
    a.total = a.tiles_x * a.tiles_y * g->n;
    a.act = (int)act, a.alpha = alpha;
    pick(g)<<<g->grid, THREADS, px_smem(g), stream>>>(a, tm);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}
#endif

} // namespace fv_k
