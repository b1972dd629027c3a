#include <cuda_fp16.h>
#include <mma.h>
#include <stdio.h>
#include "conv_gemm.cuh"
#include "act8.cuh"
#include "cp_async.cuh"
#include "pdl.cuh"
#include "../cuda_check.h"
#include "../../activation.h"

using namespace nvcuda;

namespace {

constexpr int BM = 64;      /* output pixels a block */
constexpr int BK = 32;      /* channels a step */
constexpr int LDS = BK + 8; /* halves between rows of an operand tile: 80-byte
                               rows put a warp's 16-byte row reads on distinct banks */
constexpr int STAGES = 4;   /* steps in flight: the loads are latency-bound */
constexpr int THREADS = 128;
constexpr int MAX_SPLITS = 64;

struct gemm_args {
    const __half *x;
    __half *y;
    const __half *w;
    const float *bias;  /* kp FP32 values, or NULL */
    float *part;        /* [tile][split][BM * BN] FP32, splits > 1 */
    unsigned *counters; /* [tile], splits > 1 */
    int h, w_in, cs, p, q, kp, k, r, s, sh, sw, ph, pw, dh, dw;
    int ys;     /* output pixel stride */
    int m;      /* output pixels */
    int mtiles; /* tiles along M */
    int cchunks, steps, splits;
    int act;
    float alpha;
};

template <int BN> __host__ __device__ constexpr int stage_halves() {
    return (BM + BN) * LDS;
}
template <int BN> constexpr size_t smem_bytes() {
    return (size_t)STAGES * stage_halves<BN>() * 2 > (size_t)BM * (BN + 4) * 4
               ? (size_t)STAGES * stage_halves<BN>() * 2
               : (size_t)BM * (BN + 4) * 4;
}

/* The input rows this thread loads: pixels m0 + tid / 4 + 32 i, 16 bytes
 * (piece tid % 4) of each step's 32 channels. */
struct a_rows {
    int base[2]; /* element offset of image n's first pixel, -1: past M */
    int iy[2], ix[2];
};

__device__ __forceinline__ a_rows rows_of(const gemm_args &a, int m0) {
    a_rows t;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int m = m0 + (threadIdx.x >> 2) + 32 * i;
        if (m < a.m) {
            const int ox = m % a.q, rest = m / a.q, oy = rest % a.p, n = rest / a.p;
            t.base[i] = n * a.h * a.w_in * a.cs;
            t.iy[i] = oy * a.sh - a.ph;
            t.ix[i] = ox * a.sw - a.pw;
        } else {
            t.base[i] = -1;
            t.iy[i] = t.ix[i] = 0;
        }
    }
    return t;
}

/* Issues the copies of reduction step `step` into stage buffer sbuf: A (64
 * pixels x 32 channels of one tap) and B (BN output channels x the same 32). */
template <int BN>
__device__ __forceinline__ void load_step(const gemm_args &a, const a_rows &t, int n0, int step,
                                          __half *sbuf) {
    const int tap = step / a.cchunks, c0 = (step - tap * a.cchunks) * BK;
    const int r = tap / a.s, s = tap - r * a.s;
    const int piece = threadIdx.x & 3, c = c0 + piece * 8;
    const bool c_in = c < a.cs;
    __half *sa = sbuf, *sb = sbuf + BM * LDS;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int row = (threadIdx.x >> 2) + 32 * i;
        const int iy = t.iy[i] + r * a.dh, ix = t.ix[i] + s * a.dw;
        const bool in = c_in && t.base[i] >= 0 && iy >= 0 && iy < a.h && ix >= 0 && ix < a.w_in;
        const __half *src = in ? a.x + t.base[i] + ((size_t)iy * a.w_in + ix) * a.cs + c : a.x;
        fv_k::copy_async<16>(sa + row * LDS + piece * 8, src, in);
    }
#pragma unroll
    for (int i = 0; i < BN / 32; i++) {
        const int row = (threadIdx.x >> 2) + 32 * i, kk = n0 + row;
        const bool in = c_in && kk < a.kp;
        const __half *src = in ? a.w + ((size_t)kk * a.r * a.s + tap) * a.cs + c : a.w;
        fv_k::copy_async<16>(sb + row * LDS + piece * 8, src, in);
    }
}

/* Bias, activation, FP16: 8 channels (ch0..ch0+7) of one pixel. */
template <int ACT>
__device__ __forceinline__ void store8(const gemm_args &a, int m, int ch0, const float (&v)[8],
                                       const float (&b)[8]) {
    *reinterpret_cast<uint4 *>(a.y + (size_t)m * a.ys + ch0) =
        fv_k::act8<ACT>(v, b, ch0, a.k, a.alpha);
}

/* The tile's outputs from the FP32 tile in shared memory (splits == 1) or
 * from the partials of every split (the last block of a tile). */
template <int BN, int ACT>
__device__ __forceinline__ void finish(const gemm_args &a, const float *ct, const float *parts,
                                       int m0, int n0, const float (&b)[8]) {
    constexpr int VR = BN / 8; /* 8-channel vectors a row */
    for (int v = threadIdx.x; v < BM * VR; v += THREADS) {
        const int row = v / VR, c8 = v - row * VR, m = m0 + row, ch0 = n0 + c8 * 8;
        if (m >= a.m || ch0 >= a.kp) continue;
        float acc[8];
        if (!parts) {
            const float4 u0 = *reinterpret_cast<const float4 *>(ct + row * (BN + 4) + c8 * 8);
            const float4 u1 = *reinterpret_cast<const float4 *>(ct + row * (BN + 4) + c8 * 8 + 4);
            acc[0] = u0.x, acc[1] = u0.y, acc[2] = u0.z, acc[3] = u0.w;
            acc[4] = u1.x, acc[5] = u1.y, acc[6] = u1.z, acc[7] = u1.w;
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++)
                acc[j] = 0.0f;
            const float4 *pp = reinterpret_cast<const float4 *>(parts) + v * 2;
            const size_t stride = (size_t)BM * BN / 4; /* float4s between splits */
            int z = 0;
            /* eight splits' loads in flight at once, added in split order */
            for (; z + 8 <= a.splits; z += 8) {
                float4 u[16];
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    u[2 * i] = __ldcg(pp + (size_t)(z + i) * stride);
                    u[2 * i + 1] = __ldcg(pp + (size_t)(z + i) * stride + 1);
                }
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    acc[0] += u[2 * i].x, acc[1] += u[2 * i].y, acc[2] += u[2 * i].z;
                    acc[3] += u[2 * i].w, acc[4] += u[2 * i + 1].x, acc[5] += u[2 * i + 1].y;
                    acc[6] += u[2 * i + 1].z, acc[7] += u[2 * i + 1].w;
                }
            }
            for (; z < a.splits; z++) {
                const float4 u0 = __ldcg(pp + (size_t)z * stride),
                             u1 = __ldcg(pp + (size_t)z * stride + 1);
                acc[0] += u0.x, acc[1] += u0.y, acc[2] += u0.z, acc[3] += u0.w;
                acc[4] += u1.x, acc[5] += u1.y, acc[6] += u1.z, acc[7] += u1.w;
            }
        }
        store8<ACT>(a, m, ch0, acc, b);
    }
}

template <int BN>
__device__ __forceinline__ void finish_act(const gemm_args &a, const float *ct, const float *parts,
                                           int m0, int n0, const float (&b)[8]) {
    fv_k::with_act(a.act,
                   [&](auto act) { finish<BN, decltype(act)::value>(a, ct, parts, m0, n0, b); });
}

/* Grid: x = output tile (M fastest), y = split. 4 warps in 2 x 2, each
 * 32 pixels x BN / 2 channels. */
template <int BN> __global__ void __launch_bounds__(THREADS) gemm_kernel(gemm_args a) {
    fv_k::pdl_wait(); /* launched early (pdl.cuh): x and y only once the kernels before are done */
    constexpr int FN = BN / 32; /* 16-wide fragments a warp along N */
    extern __shared__ __align__(128) unsigned char smem[];
    __half *sbuf = reinterpret_cast<__half *>(smem);
    __shared__ unsigned last;
    const int tile = blockIdx.x, z = blockIdx.y;
    const int m0 = (tile % a.mtiles) * BM, n0 = (tile / a.mtiles) * BN;
    const int begin = (int)((long)z * a.steps / a.splits),
              end = (int)((long)(z + 1) * a.steps / a.splits);
    const int warp = threadIdx.x >> 5, wm = warp & 1, wn = warp >> 1;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][FN];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < FN; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    const a_rows t = rows_of(a, m0);
    /* the 8 biases this thread's output vectors take (every vector of a
     * thread has the same channels: THREADS is a multiple of BN / 8), loaded
     * now so that their latency hides under the main loop, not in the last
     * block's serial finish */
    static_assert(THREADS % (BN / 8) == 0, "a thread's vectors share their channels");
    float b[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    {
        const int ch0 = n0 + (int)(threadIdx.x % (BN / 8)) * 8;
        if (a.bias && ch0 < a.kp) {
            const float4 lo = __ldg(reinterpret_cast<const float4 *>(a.bias + ch0)),
                         hi = __ldg(reinterpret_cast<const float4 *>(a.bias + ch0 + 4));
            b[0] = lo.x, b[1] = lo.y, b[2] = lo.z, b[3] = lo.w;
            b[4] = hi.x, b[5] = hi.y, b[6] = hi.z, b[7] = hi.w;
        }
    }
#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (begin + st < end) load_step<BN>(a, t, n0, begin + st, sbuf + st * stage_halves<BN>());
        fv_k::copy_commit();
    }
    for (int i = begin; i < end; i++) {
        fv_k::copy_wait<STAGES - 2>(); /* step i has landed (this thread's part) */
        __syncthreads();               /* everyone's part; step i - 1's buffer is free */
        const int pre = i + STAGES - 1;
        if (pre < end)
            load_step<BN>(a, t, n0, pre, sbuf + ((pre - begin) % STAGES) * stage_halves<BN>());
        fv_k::copy_commit();
        const __half *sa = sbuf + ((i - begin) % STAGES) * stage_halves<BN>();
        const __half *sb = sa + BM * LDS;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
#pragma unroll
            for (int fi = 0; fi < 2; fi++)
                wmma::load_matrix_sync(fa[fi], sa + (wm * 32 + fi * 16) * LDS + kk, LDS);
#pragma unroll
            for (int fj = 0; fj < FN; fj++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
                wmma::load_matrix_sync(fb, sb + (wn * (BN / 2) + fj * 16) * LDS + kk, LDS);
#pragma unroll
                for (int fi = 0; fi < 2; fi++)
                    wmma::mma_sync(acc[fi][fj], fa[fi], fb, acc[fi][fj]);
            }
        }
    }
    fv_k::copy_wait<0>();
    __syncthreads(); /* the pipeline's buffers become the FP32 tile */

    float *ct = reinterpret_cast<float *>(smem);
#pragma unroll
    for (int fi = 0; fi < 2; fi++)
#pragma unroll
        for (int fj = 0; fj < FN; fj++)
            wmma::store_matrix_sync(ct + (wm * 32 + fi * 16) * (BN + 4) + wn * (BN / 2) + fj * 16,
                                    acc[fi][fj], BN + 4, wmma::mem_row_major);
    __syncthreads();
    if (a.splits == 1) {
        finish_act<BN>(a, ct, nullptr, m0, n0, b);
        return;
    }

    /* this split's partial tile, then the last block of the tile adds them */
    float *parts = a.part + (size_t)tile * a.splits * BM * BN;
    float4 *mine = reinterpret_cast<float4 *>(parts + (size_t)z * BM * BN);
    for (int v = threadIdx.x; v < BM * BN / 4; v += THREADS) {
        const int row = v / (BN / 4), c4 = v - row * (BN / 4);
        __stcg(mine + v, *reinterpret_cast<const float4 *>(ct + row * (BN + 4) + c4 * 4));
    }
    __threadfence(); /* the partial is visible before the count says so */
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(a.counters + tile, 1u) == (unsigned)a.splits - 1u;
    __syncthreads();
    if (!last) return;
    __threadfence(); /* see every other split's partial */
    finish_act<BN>(a, nullptr, parts, m0, n0, b);
    if (threadIdx.x == 0) a.counters[tile] = 0u; /* ready for the next run */
}

typedef void (*kernel_fn)(gemm_args);

kernel_fn pick(int bn) {
    return bn == 32 ? gemm_kernel<32> : bn == 64 ? gemm_kernel<64> : nullptr;
}
size_t smem_of(int bn) {
    return bn == 32 ? smem_bytes<32>() : smem_bytes<64>();
}

} // namespace

extern "C" int fv__conv_gemm_check(fv__conv_gemm_geom *g, char *why, size_t why_n) {
    g->tiles = g->steps = 0;
    if (g->cs < 8 || g->cs % 8 || g->kp < 8 || g->kp % 8 || g->k > g->kp || g->k < 1) {
        snprintf(why, why_n, "channels stored as C=%d, K=%d (need multiples of 8)", g->cs, g->kp);
        return 0;
    }
    if (g->bn != 32 && g->bn != 64) {
        snprintf(why, why_n, "tile of %d output channels (32 or 64)", g->bn);
        return 0;
    }
    if (g->n < 1 || g->h < 1 || g->w < 1 || g->p < 1 || g->q < 1 || g->r < 1 || g->s < 1 ||
        g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1) {
        snprintf(why, why_n, "geometry out of range");
        return 0;
    }
    long m = (long)g->n * g->p * g->q, steps = (long)g->r * g->s * ((g->cs + BK - 1) / BK);
    long tiles = (m + BM - 1) / BM * ((g->kp + g->bn - 1) / g->bn);
    if ((long)g->n * g->h * g->w * g->cs > 0x7fffffffL || m * g->kp > 0x7fffffffL ||
        tiles > 0x7fffffffL || steps > 0x7fffffffL) {
        snprintf(why, why_n, "tensors over 2^31 elements");
        return 0;
    }
    if (g->splits < 1 || g->splits > MAX_SPLITS || g->splits > steps) {
        snprintf(why, why_n, "reduction of %ld steps split %d ways (1..%d, at most the steps)",
                 steps, g->splits, MAX_SPLITS);
        return 0;
    }
    g->tiles = (int)tiles;
    g->steps = (int)steps;
    return 1;
}

extern "C" size_t fv__conv_gemm_workspace(const fv__conv_gemm_geom *g) {
    return g->splits > 1 ? (size_t)g->tiles * g->splits * BM * g->bn * sizeof(float) : 0;
}

extern "C" size_t fv__conv_gemm_counter_bytes(const fv__conv_gemm_geom *g) {
    return g->splits > 1 ? (size_t)g->tiles * sizeof(unsigned) : 0;
}

extern "C" fv_status fv__conv_gemm_run(cudaStream_t stream, const fv__conv_gemm_geom *g,
                                       const void *x, void *y, const void *w, const void *bias,
                                       fv_activation act, float alpha, void *ws, int early) {
    kernel_fn f = pick(g->bn);
    FV_REQUIRE(f && x && y && w && g->tiles > 0 && g->steps >= g->splits &&
                   ((uintptr_t)x % 16) == 0 && ((uintptr_t)y % 16) == 0 &&
                   ((uintptr_t)w % 16) == 0 && ((uintptr_t)bias % 16) == 0 &&
                   (g->splits == 1 || (ws && g->counters && ((uintptr_t)ws % 16) == 0)),
               FV_ERR_INTERNAL, "gemm conv: bad arguments (bn=%d splits=%d tiles=%d)", g->bn,
               g->splits, g->tiles);
    gemm_args a;
    a.x = static_cast<const __half *>(x);
    a.y = static_cast<__half *>(y);
    a.w = static_cast<const __half *>(w);
    a.bias = static_cast<const float *>(bias);
    a.part = static_cast<float *>(ws);
    a.counters = static_cast<unsigned *>(g->counters);
    a.h = g->h, a.w_in = g->w, a.cs = g->cs, a.p = g->p, a.q = g->q, a.kp = g->kp, a.k = g->k;
    a.ys = g->ys ? g->ys : g->kp;
    a.r = g->r, a.s = g->s, a.sh = g->sh, a.sw = g->sw, a.ph = g->ph, a.pw = g->pw;
    a.dh = g->dh, a.dw = g->dw;
    a.m = g->n * g->p * g->q;
    a.mtiles = (a.m + BM - 1) / BM;
    a.cchunks = (g->cs + BK - 1) / BK;
    a.steps = g->steps;
    a.splits = g->splits;
    a.act = (int)act;
    a.alpha = alpha;
    unsigned gy = (unsigned)g->splits, gx = (unsigned)g->tiles;
    FV_CUDA_TRY(
        fv_k::launch(early != 0, dim3(gx, gy), dim3(THREADS), smem_of(g->bn), stream, f, a));
    return FV_OK;
}
