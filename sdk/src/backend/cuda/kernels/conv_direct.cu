#include <cuda_fp16.h>
#include <mma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv_direct.cuh"
#include "act8.cuh"
#include "cp_async.cuh"
#include "../cuda_check.h"
#include "../fast_div.h"
#include "../../activation.h"

/* The window of the 8-channel two-rows kernels by the tensor memory accelerator
 * (direct_kernel_tma; tma.cuh: -DFV_CONV_DIRECT_NO_TMA builds without it,
 * for A/B timing, and CUDA before 12.0 has no tensor maps). */
#include "tma.cuh"
#include "pdl.cuh"
#define FV_CONV_TMA FV_TMA
#if FV_HAVE_WGMMA
#include "conv_wgmma.cuh"
#endif

using namespace nvcuda;
using fv_k::copy_async;
using fv_k::copy_commit;

namespace {

/* A warp's output staging in shared memory: two 32 x 8 FP32 tiles, rows
 * packed (8 floats), 2 KB. Packed rows keep wmma's stores at the fewest
 * wavefronts (12-float rows measured 4-way bank conflicts); the reads
 * below alternate which half of a row a lane takes first, which keeps them
 * conflict-free. */
constexpr int STAGE_FLOATS = 2 * 32 * 8;
/* Floats of a block's stages: none where the epilogue goes from registers
 * (epilogue_regs: two rows a warp, wide pixels). */
__host__ __device__ constexpr int stage_floats(int warps, bool regs) {
    return regs ? 0 : warps * STAGE_FLOATS;
}

/* Kernels with compile-time geometry for the common layers (see fixed);
 * -DFV_CONV_DIRECT_NO_FIXED builds without them (A/B timing). */
#ifdef FV_CONV_DIRECT_NO_FIXED
constexpr bool FIXED_KERNELS = false;
#else
constexpr bool FIXED_KERNELS = true;
#endif

struct direct_args {
    const __half *x;
    __half *y;
    const __half *w;
    const float *bias; /* kp FP32 values, or NULL */
    int h, w_in, cs, p, q, kp, k, r, sh, sw, ph, pw, kr;
    int ys;                           /* output pixel stride */
    int rows_in, cols_in, row_stride; /* the input window in shared memory */
    int win_halves;                   /* one window buffer, rounded to 128 bytes */
    int n;
    int act;
    float alpha;
};

/* Wide pixels: reading 16 or 32 channels a pixel, a window pixel takes
 * CM + 8 halves. With CM halves a pixel, the rows an ldmatrix phase reads
 * (output pixels m..m+7 at one tap) sat 32 or 64 bytes apart, in the same
 * few bank groups: 2-way and 4-way conflicts on every operand load (wmma's
 * 32-byte row alignment rules the padding out there). 48 and 80 bytes apart
 * at stride 1, the 8 rows fall in 8 distinct groups. The MMAs then go a tap
 * at a time: ldmatrix + mma.sync m16n8k16. */
constexpr bool wide(int cm, bool pair) {
    return cm >= 16 && !pair;
}
template <int CM, bool PAIR> struct wide_pixels {
    static constexpr bool on = wide(CM, PAIR);
    static constexpr int px = on ? CM + 8 : CM; /* halves a window pixel */
};

/* Columns of input pixels a block reads (32 output pixels, stride sw, S
 * taps, kr halves a filter row) and the shared-memory row length in halves
 * that holds them; constexpr: the fixed kernels take it at compile time. */
constexpr int window_cols(int cm, bool pair, int sw, int s, int kr) {
    return wide(cm, pair) ? 31 * sw + s           /* kr = s * cm: the last pixel reads its S taps */
           : pair ? 31 * sw + 2 * (kr / 16)       /* entries of 8 halves; the last step reads +1 */
                  : 31 * sw + (kr + cm - 1) / cm; /* the last 16-wide step reads kr halves on */
}
constexpr int window_stride(int cm, bool pair, int sw, int s, int kr) {
    return wide(cm, pair) ? window_cols(cm, pair, sw, s, kr) * (cm + 8)
           : pair         ? (window_cols(cm, pair, sw, s, kr) * 8 + 15) / 16 * 16
                          : (window_cols(cm, pair, sw, s, kr) * cm + 15) / 16 * 16;
}

/* Window geometry of g: rows and columns of input pixels a block reads, and
 * the shared-memory row length in halves (wmma: a multiple of 16, 32-byte
 * aligned rows, as its loads need; wide pixels: of 8, ldmatrix's 16 bytes). */
void window_of(const fv__conv_direct_geom *g, int *rows, int *cols, int *stride) {
    *rows = (g->th - 1) * g->sh + g->r;
    if (g->pc) { /* packed taps: 4 channels (8 bytes) of 31 sw + S pixels, as copied */
        *cols = 31 * g->sw + g->s;
        *stride = (*cols * 4 + 7) / 8 * 8;
        return;
    }
    *cols = window_cols(g->cm, g->pair != 0, g->sw, g->s, g->kr);
    *stride = window_stride(g->cm, g->pair != 0, g->sw, g->s, g->kr);
}

/* Halves of one window buffer: rows x stride, rounded up to 128 bytes. */
int window_halves(const fv__conv_direct_geom *g) {
    int rows, cols, stride;
    window_of(g, &rows, &cols, &stride);
    return (rows * stride + 63) / 64 * 64;
}

/* Packed taps: a vector of kr halves per input row and output column
 * (kr + 8 apart: the 8 rows an ldmatrix phase reads, 48 or 80 bytes
 * apart, fall in distinct bank groups, as with wide pixels). */
__host__ __device__ constexpr int packed_px(int kr) {
    return kr + 8;
}
__host__ __device__ constexpr int packed_kr(int pc, int s) {
    return (s * pc + 15) / 16 * 16;
}
int packed_halves(const fv__conv_direct_geom *g) {
    return g->pc ? ((g->th - 1) * g->sh + g->r) * 32 * packed_px(g->kr) : 0;
}

/* kr and the window's row stride (window_of) of a fixed kernel: stride 1,
 * S = R = rt. */
constexpr int fixed_kr(int cm, int rt) {
    return (rt * cm + 15) / 16 * 16;
}
constexpr int fixed_stride(int cm, bool pair, int rt) {
    return window_stride(cm, pair, 1, rt, fixed_kr(cm, rt));
}
/* Compile-time geometry (RT > 0): the kernels made for the common image
 * layers (stride 1, R x R filters of 3 or 5, cm 8, 16 or 32, K of 8, 16,
 * 32 or 64) know R, kr and the window's row stride, so the loops over
 * filter rows and 16-wide steps unroll into ldmatrix and mma with constant
 * offsets. On 1920x1080x8->32 5x5 (H100) the runtime loop's address
 * arithmetic was 97 of 139 instructions a filter row, and the fixed kernel
 * ran 4.5% faster (0.1258 against 0.1315 ms, same-run A/B): the kernel is
 * bound by shared-memory operand loads (L1 81% busy), not by issue. The
 * same MMAs in the same order: the same results. RT = 0: everything from
 * direct_args. */
template <int CM, bool PAIR, int RT> struct fixed {
    static constexpr bool on = RT > 0;
    static constexpr int R = RT;
    static constexpr int KR = fixed_kr(CM, RT);
    static constexpr int ROW_STRIDE = fixed_stride(CM, PAIR, RT);
};
/* The window's columns and row length in halves where a kernel knows them
 * (fixed geometry at stride SW, 4 or 8 channels read, not packed taps),
 * else 0: load_window's walk of the whole window (fixed_matches checks
 * them on the host). Not for 16 or 32 channels (wide pixels): there it
 * took 1024x1024x32->32 3x3 to 1.02x the time (H200). */
template <int CM, bool PAIR, int RT, int PC = 0, int SW = 1> struct fixed_window {
    static constexpr bool on = RT > 0 && PC == 0 && !PAIR && CM <= 8;
    static constexpr int COLS = on ? window_cols(CM, false, SW, RT, fixed_kr(CM, RT)) : 0;
    static constexpr int STRIDE = on ? window_stride(CM, false, SW, RT, fixed_kr(CM, RT)) : 0;
};

/* body(r, kc) for each filter row r < R and 16-wide step kc < KR: unrolled
 * where the geometry is fixed (F::on), a plain loop otherwise. */
template <class F, class Body> __device__ __forceinline__ void each_step(int R, int KR, Body body) {
    if (F::on) {
#pragma unroll
        for (int r = 0; r < F::R; r++)
#pragma unroll
            for (int kc = 0; kc < F::KR; kc += 16)
                body(r, kc);
    } else {
        for (int r = 0; r < R; r++)
            for (int kc = 0; kc < KR; kc += 16)
                body(r, kc);
    }
}

/* Floats of the FP32 bias in shared memory: kp, rounded up to 128 bytes. */
__host__ __device__ constexpr int bias_floats(int kp) {
    return (kp + 31) / 32 * 32;
}

/* Warps a block: a row each, or two rows each (two). */
int warps_of(const fv__conv_direct_geom *g) {
    return g->two ? g->th / 2 : g->th;
}

/* Shared memory: the weights, per warp two FP32 32 x 8 tiles of outputs
 * (not with two rows a warp or wide pixels), the bias, the window (two buffers when
 * persistent: the next tile's loads while this one is computed). */
size_t smem_of(const fv__conv_direct_geom *g) {
    size_t common =
        (size_t)g->kp * g->r * g->kr * 2 +
        (size_t)stage_floats(warps_of(g), g->two || g->pc || wide(g->cm, g->pair != 0)) * 4 +
        (size_t)bias_floats(g->kp) * 4;
    if (g->persistent) /* + the TMA kernels' mbarriers past the windows at K 32 */
        return common + ((size_t)2 * window_halves(g) + packed_halves(g)) * 2 +
               (g->tma && g->kp > 16 ? 128 : 0);
    int rows, cols, stride;
    window_of(g, &rows, &cols, &stride);
    return common + (size_t)rows * stride * 2;
}

/* The 8 FP32 biases of channels ch0.. from shared memory. */
__device__ __forceinline__ void bias8(const float *sbias, int ch0, float (&b)[8]) {
    const float4 lo = *reinterpret_cast<const float4 *>(sbias + ch0),
                 hi = *reinterpret_cast<const float4 *>(sbias + ch0 + 4);
    b[0] = lo.x, b[1] = lo.y, b[2] = lo.z, b[3] = lo.w;
    b[4] = hi.x, b[5] = hi.y, b[6] = hi.z, b[7] = hi.w;
}

/* Bias, activation and FP16 for 8 channels ch0.. of output pixel (oy, ox)
 * from 8 staged floats, and one 16-byte store. */
template <int ACT>
__device__ __forceinline__ void store8(const direct_args &a, const float4 lo, const float4 hi,
                                       const float (&b)[8], __half *yp, int ch0) {
    const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    *reinterpret_cast<uint4 *>(yp + ch0) = fv_k::act8<ACT>(v, b, ch0, a.k, a.alpha);
}

/* A warp's outputs of output row oy (32 pixels): two 8-channel tiles at a
 * time through shared memory (put(j, dst) stores tile j there as 32 x 8
 * floats, rows packed), then each pair of lanes writes one pixel's
 * 16 channels, 32 contiguous bytes: whole 32-byte sectors (one lane a pixel
 * wrote half-sectors). A last odd tile goes one lane a pixel. */
template <int ACT, int NF, class Put>
__device__ __forceinline__ void epilogue(const direct_args &a, Put put, float *stage,
                                         const float *sbias, int n, int oy, int ox0) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *st = stage + warp * STAGE_FLOATS;
    if (oy >= a.p) return; /* whole warp: no shared-memory traffic either */
    __half *yrow = a.y + ((size_t)n * a.p + oy) * a.q * a.ys;
#pragma unroll
    for (int j = 0; j < NF; j += 2) {
        if (j + 1 < NF) {
            put(j, st);
            put(j + 1, st + 256);
            __syncwarp();
            const int t = lane & 1; /* which tile: channels (j + t) * 8.. */
            float b[8];             /* the bias of this lane's channels, for both its pixels */
            bias8(sbias, (j + t) * 8, b);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int px = (lane >> 1) + 16 * h, ox = ox0 + px;
                const float4 *src = reinterpret_cast<const float4 *>(st + t * 256 + px * 8);
                const float4 first = src[t], second = src[t ^ 1];
                if (ox < a.q)
                    store8<ACT>(a, t ? second : first, t ? first : second, b,
                                yrow + (size_t)ox * a.ys, (j + t) * 8);
            }
        } else {
            put(j, st);
            __syncwarp();
            const int t = (lane >> 2) & 1, ox = ox0 + lane;
            const float4 *src = reinterpret_cast<const float4 *>(st + lane * 8);
            const float4 first = src[t], second = src[t ^ 1];
            float b[8];
            bias8(sbias, j * 8, b);
            if (ox < a.q)
                store8<ACT>(a, t ? second : first, t ? first : second, b, yrow + (size_t)ox * a.ys,
                            j * 8);
        }
        __syncwarp();
    }
}

/* One vector of a window: BYTES (8 or 16) from `from` to dst, zeros where
 * !in; async: cp.async (zero-filled), else a plain load and store. */
template <int BYTES>
__device__ __forceinline__ void window_vec(__half *dst, const __half *from, bool in, bool async) {
    if (async) {
        copy_async<BYTES>(dst, from, in);
    } else if (BYTES == 8) {
        uint2 v = make_uint2(0u, 0u);
        if (in) v = __ldg(reinterpret_cast<const uint2 *>(from));
        *reinterpret_cast<uint2 *>(dst) = v;
    } else {
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (in) v = __ldg(reinterpret_cast<const uint4 *>(from));
        *reinterpret_cast<uint4 *>(dst) = v;
    }
}

/* Loads the input window of tile (n, oy0, ox0): the first CM channels of
 * each pixel, 0 outside the image; a warp a row, lanes along it (COLS >
 * 0: the whole block along the whole window, see below). async:
 * cp.async (the persistent blocks' prefetch); else plain loads, which
 * measured faster for a block a tile (0.091 vs 0.116 ms on 2048x2048x8->8). */
template <int CM, bool PAIR, int COLS = 0, int STRIDE = 0>
__device__ __forceinline__ void load_window(const direct_args &a, __half *win, int n, int oy0,
                                            int ox0, bool async) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    const int iy0 = oy0 * a.sh - a.ph, ix0 = ox0 * a.sw - a.pw;
    const __half *xn = a.x + (size_t)n * a.h * a.w_in * a.cs;
    constexpr int U = CM >= 8 ? CM / 8 : 1; /* 16-byte vectors per pixel (8 bytes for 4) */
    constexpr int PX = wide_pixels<CM, PAIR>::px;
    if (COLS > 0 && !PAIR) {
        /* Window columns (COLS) and row length (STRIDE) known at compile
         * time (the fixed kernels): the block's threads walk the window as
         * one run of rows_in x COLS x U vectors. A warp a row left most
         * lanes idle (35 pixels a row at 3x3: a second pass of 3 lanes)
         * and gave some warps a row more than others; the walk took
         * 1920x1080x8->8 3x3 to 0.88x the time (H200). */
        constexpr int PER_ROW = COLS > 0 ? COLS * U : 1; /* 1: a branch not taken */
        const int total = a.rows_in * PER_ROW;
        for (int e = threadIdx.x; e < total; e += blockDim.x) {
            const int ry = e / PER_ROW, c = e - ry * PER_ROW, rx = c / U, u = c - rx * U;
            const int iy = iy0 + ry, ix = ix0 + rx;
            const bool in = (unsigned)iy < (unsigned)a.h && (unsigned)ix < (unsigned)a.w_in;
            const __half *from = in ? xn + ((size_t)iy * a.w_in + ix) * a.cs + u * 8 : a.x;
            window_vec<CM == 4 ? 8 : 16>(win + ry * STRIDE + rx * PX + u * 8, from, in, async);
        }
        return;
    }
    if (PAIR) { /* entry e: 4 channels of pixel e, then of pixel e + 1 */
        for (int ry = warp; ry < a.rows_in; ry += nwarps) {
            const int iy = iy0 + ry;
            const bool row_in = iy >= 0 && iy < a.h;
            const __half *src = xn + (size_t)(row_in ? iy : 0) * a.w_in * a.cs;
            __half *dst = win + ry * a.row_stride;
            for (int e = lane; e < a.cols_in * 2; e += 32) {
                const int ix = ix0 + (e >> 1) + (e & 1);
                const bool in = row_in && ix >= 0 && ix < a.w_in;
                const __half *from = in ? src + (size_t)ix * a.cs : a.x;
                window_vec<8>(dst + e * 4, from, in, async);
            }
        }
        return;
    }
    const int per_row = a.cols_in * U;
    for (int ry = warp; ry < a.rows_in; ry += nwarps) {
        const int iy = iy0 + ry;
        const bool row_in = iy >= 0 && iy < a.h;
        const __half *src = xn + (size_t)(row_in ? iy : 0) * a.w_in * a.cs;
        __half *dst = win + ry * a.row_stride;
        for (int e = lane; e < per_row; e += 32) {
            const int rx = e / U, u = e - rx * U; /* U is a power of 2 */
            const int ix = ix0 + rx;
            const bool in = row_in && ix >= 0 && ix < a.w_in;
            const __half *from = in ? src + (size_t)ix * a.cs + u * 8 : a.x;
            window_vec<CM == 4 ? 8 : 16>(dst + rx * PX + u * 8, from, in, async);
        }
    }
}

/* The epilogue with the activation as a compile-time constant (a switch
 * per element cost ~25% of the kernel's instructions). */
template <int NF, class Put>
__device__ __forceinline__ void epilogue_act(const direct_args &a, Put put, float *stage,
                                             const float *sbias, int n, int oy, int ox0) {
    fv_k::with_act(a.act, [&](auto act) {
        epilogue<decltype(act)::value, NF>(a, put, stage, sbias, n, oy, ox0);
    });
}

template <bool B> struct bool_c {};

/* One tile, wmma: the MMAs over the window sx (this warp's output row),
 * then the epilogue. */
template <int CM, int NF, bool PAIR, int RT>
__device__ __forceinline__ void compute_tile(const direct_args &a, const __half *sx,
                                             const __half *sw, float *stage, const float *sbias,
                                             int n, int oy0, int ox0, bool_c<false>) {
    typedef fixed<CM, PAIR, RT> F;
    const int warp = threadIdx.x >> 5;
    const int R = F::on ? RT : a.r, KR = F::on ? F::KR : a.kr;
    const int stride = F::on ? F::ROW_STRIDE : a.row_stride;
    wmma::fragment<wmma::accumulator, 32, 8, 16, float> acc[NF];
#pragma unroll
    for (int j = 0; j < NF; j++)
        wmma::fill_fragment(acc[j], 0.0f);
    /* halves between neighbouring output pixels (pairs: 8-half entries) */
    const int lda = (PAIR ? 8 : CM) * (F::on ? 1 : a.sw);
    const __half *arow = sx + (size_t)warp * a.sh * stride;
    each_step<F>(R, KR, [&](int r, int kc) {
        const __half *ap = arow + (size_t)r * stride;
        const __half *bp = sw + (size_t)r * NF * KR * 8;
        wmma::fragment<wmma::matrix_a, 32, 8, 16, __half, wmma::row_major> fa;
        wmma::load_matrix_sync(fa, ap + kc, lda);
#pragma unroll
        for (int j = 0; j < NF; j++) {
            wmma::fragment<wmma::matrix_b, 32, 8, 16, __half, wmma::row_major> fb;
            wmma::load_matrix_sync(fb, bp + ((size_t)j * KR + kc) * 8, 8);
            wmma::mma_sync(acc[j], fa, fb, acc[j]);
        }
    });
    epilogue_act<NF>(
        a, [&](int j, float *dst) { wmma::store_matrix_sync(dst, acc[j], 8, wmma::mem_row_major); },
        stage, sbias, n, oy0 + warp, ox0);
}

__device__ __forceinline__ unsigned smem_addr(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

/* d[0..3] = the four 8 x 8 half matrices whose rows lanes 8i..8i+7 point at. */
__device__ __forceinline__ void ldsm_x4(unsigned (&d)[4], const __half *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(smem_addr(p)));
}
/* The same, transposed (B operands stored k-major: a row is 8 channels). */
__device__ __forceinline__ void ldsm_x4_t(unsigned (&d)[4], const __half *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x2_t(unsigned &d0, unsigned &d1, const __half *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(d0), "=r"(d1)
                 : "r"(smem_addr(p)));
}

/* d0, d1 = the two 8 x 8 half matrices whose rows lanes 0-7 and 8-15 point at. */
__device__ __forceinline__ void ldsm_x2(unsigned (&d)[2], const __half *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(d[0]), "=r"(d[1])
                 : "r"(smem_addr(p)));
}
/* d = the 8 x 8 half matrix whose rows lanes 0-7 point at, transposed. */
__device__ __forceinline__ void ldsm_x1_t(unsigned &d, const __half *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(d)
                 : "r"(smem_addr(p)));
}

/* c += A (16 x 8, row-major fragment: rows 0-7, rows 8-15) * B (8 x 8,
 * col-major), FP32 accumulate. */
__device__ __forceinline__ void mma1688(float (&c)[4], unsigned a0, unsigned a1, unsigned b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, "
                 "{%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(b));
}

/* c += A (16 x 16, row-major fragment) * B (16 x 8, col-major), FP32
 * accumulate; two k8 halves before SM 8.0 (Turing has no m16n8k16). */
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    mma1688(c, a[0], a[1], b0);
    mma1688(c, a[2], a[3], b1);
#endif
}

/* The epilogue of T output rows (oy..oy + T - 1) from mma.sync C fragments
 * acc[row][m][j]: lane l holds channels 8 j + 2 (l % 4), + 1 of pixels
 * 16 m + l / 4 (elements 0, 1) and + 8 (2, 3). Bias, activation and FP16 in
 * registers; then lanes l and l ^ 1 swap one word for each pair of tiles,
 * so that each lane holds 4 contiguous channels (8 bytes) and a quad
 * writes 32 contiguous bytes of a pixel: whole sectors, as the staged
 * epilogue writes them. A last odd tile (K of 8, 24, ...): each lane
 * writes its 2 channels, a quad the tile's 16 bytes of the pixel. */
template <int NF, int T>
__device__ __forceinline__ void epilogue_regs(const direct_args &a, const float (&acc)[T][2][NF][4],
                                              const float *sbias, int n, int oy, int ox0) {
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    const bool odd = q & 1;
    float2 b[NF];
#pragma unroll
    for (int j = 0; j < NF; j++)
        b[j] = *reinterpret_cast<const float2 *>(sbias + 8 * j + 2 * q);
    fv_k::with_act(a.act, [&](auto act) {
        constexpr int ACT = decltype(act)::value;
#pragma unroll
        for (int t = 0; t < T; t++) {
            if (oy + t >= a.p) return; /* whole warp */
            __half *yrow = a.y + ((size_t)n * a.p + oy + t) * a.q * a.ys;
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int ox = ox0 + 16 * m + 8 * h + g;
                    __half *yp = yrow + (size_t)ox * a.ys;
                    unsigned w[NF];
#pragma unroll
                    for (int j = 0; j < NF; j++)
                        w[j] = fv_k::act2<ACT>(acc[t][m][j][2 * h], acc[t][m][j][2 * h + 1], b[j].x,
                                               b[j].y, 8 * j + 2 * q, a.k, a.alpha);
#pragma unroll
                    for (int j = 0; j + 1 < NF; j += 2) {
                        /* the even lane keeps tile j, the odd one tile j + 1 */
                        const unsigned keep = odd ? w[j + 1] : w[j];
                        const unsigned got = __shfl_xor_sync(0xffffffffu, odd ? w[j] : w[j + 1], 1);
                        if (ox < a.q)
                            *reinterpret_cast<uint2 *>(yp + 8 * (j + odd) + 4 * (q >> 1)) =
                                odd ? make_uint2(got, keep) : make_uint2(keep, got);
                    }
                    if (NF % 2 && ox < a.q)
                        *reinterpret_cast<unsigned *>(yp + 8 * (NF - 1) + 2 * q) = w[NF - 1];
                }
        }
    });
}

/* One tile, wide pixels: for each filter row and 16-channel step of a tap,
 * the warp's 32 output pixels as two m16 A tiles (ldmatrix: lane l points
 * at pixel l % 16, channels + 8 * (l / 16)) times NF 16 x 8 weight tiles
 * (two a transposed ldmatrix: lanes 0-15 rows of tile j, 16-31 of j + 1). */
template <int CM, int NF, bool PAIR, int RT>
__device__ __forceinline__ void compute_tile(const direct_args &a, const __half *sx,
                                             const __half *sw, float *stage, const float *sbias,
                                             int n, int oy0, int ox0, bool_c<true>) {
    typedef fixed<CM, PAIR, RT> F;
    constexpr int PX = wide_pixels<CM, PAIR>::px;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int R = F::on ? RT : a.r, KR = F::on ? F::KR : a.kr;
    const int stride = F::on ? F::ROW_STRIDE : a.row_stride;
    float accs[1][2][NF][4] = {}; /* one output row, in epilogue_regs' layout */
    float(&acc)[2][NF][4] = accs[0];
    const int pix = (F::on ? 1 : a.sw) * PX; /* halves between neighbouring output pixels */
    const __half *arow = sx + (size_t)warp * a.sh * stride + (lane & 15) * pix + (lane >> 4) * 8;
    const __half *brow = sw + ((size_t)(lane >> 4) * KR + (lane & 15)) * 8;
    each_step<F>(R, KR, [&](int r, int kc) {
        const __half *ap = arow + (size_t)r * stride;
        const __half *bp = brow + (size_t)r * NF * KR * 8;
        /* tap kc / CM, channels kc % CM.. */
        const __half *p = ap + kc + (kc / CM) * (PX - CM);
        unsigned a0[4], a1[4];
        ldsm_x4(a0, p);
        ldsm_x4(a1, p + 16 * pix);
#pragma unroll
        for (int j = 0; j < NF; j += 2) {
            const __half *q = bp + ((size_t)j * KR + kc) * 8;
            if (j + 1 < NF) {
                unsigned b[4];
                ldsm_x4_t(b, q);
                mma16816(acc[0][j], a0, b[0], b[1]);
                mma16816(acc[1][j], a1, b[0], b[1]);
                mma16816(acc[0][j + 1], a0, b[2], b[3]);
                mma16816(acc[1][j + 1], a1, b[2], b[3]);
            } else { /* lanes 16-31's addresses are not read */
                unsigned b0, b1;
                ldsm_x2_t(b0, b1, q - (size_t)(lane >> 4) * KR * 8);
                mma16816(acc[0][j], a0, b0, b1);
                mma16816(acc[1][j], a1, b0, b1);
            }
        }
    });
    epilogue_regs<NF, 1>(a, accs, sbias, n, oy0 + warp, ox0);
}

/* Operand loads and MMAs by fragment size: W = 4 A
 * registers for a 16-wide step (m16n8k16), 2 for the last tap's 8 halves
 * (m16n8k8). */
__device__ __forceinline__ void load_a(unsigned (&d)[4], const __half *p) {
    ldsm_x4(d, p);
}
__device__ __forceinline__ void load_a(unsigned (&d)[2], const __half *p) {
    ldsm_x2(d, p);
}
/* B of tiles j and j + 1 (pair) or j alone at q: 16 wide, lanes 0-15 at
 * tile j's rows, 16-31 at j + 1's (alone: lanes 16-31's addresses are not
 * read); 8 wide, lanes 0-7 and 8-15. kr: halves between tiles' rows. */
__device__ __forceinline__ void load_b(unsigned (&b)[4], const __half *q, bool pair, int kr) {
    if (pair)
        ldsm_x4_t(b, q);
    else
        ldsm_x2_t(b[0], b[1], q - (size_t)((threadIdx.x & 31) >> 4) * kr * 8);
}
__device__ __forceinline__ void load_b(unsigned (&b)[2], const __half *q, bool pair, int) {
    if (pair)
        ldsm_x2_t(b[0], b[1], q);
    else
        ldsm_x1_t(b[0], q);
}
__device__ __forceinline__ void mma_step(float (&c)[4], const unsigned (&a)[4], const unsigned *b) {
    mma16816(c, a, b[0], b[1]);
}
__device__ __forceinline__ void mma_step(float (&c)[4], const unsigned (&a)[2], const unsigned *b) {
    mma1688(c, a[0], a[1], b[0]);
}

/* The operands of two rows a warp, at compile time: R filter rows; SH the
 * stride (input rows between the two output rows, and SH x the window
 * pixels between neighbouring output columns); KR weights per (k, filter
 * row); the 16-wide steps below KF (a last one of 8 from KF to KR where KF
 * < KR); PX halves between neighbouring output pixels' operand rows,
 * ROW_STRIDE between input rows; at(kc) the offset of step kc in a pixel's
 * row. Window pixels (pixel_ops: the pixel's cm channels, taps side by
 * side, or wide pixels of cm + 8 halves; at stride 2, 4 or 8 channels read)
 * or packed taps (packed_ops: a vector per output column). */
template <int CM, int RT, int SW = 1> struct pixel_ops {
    static constexpr bool WIDE = wide_pixels<CM, false>::on;
    static constexpr int R = RT, SH = SW, KR = fixed_kr(CM, RT);
    static constexpr int PX = SW == 1 ? wide_pixels<CM, false>::px : SW * CM;
    static constexpr int ROW_STRIDE = window_stride(CM, false, SW, RT, KR);
    /* a filter row of 3 or 5 taps of 8 channels: 24 or 40 halves (9 of 4:
     * 36, in 16 + 16 + 8) */
    static constexpr int KF = (RT * CM + 7) / 8 * 8 % 16 == 8 ? KR - 16 : KR;
    static __device__ __forceinline__ int at(int kc) { /* tap kc / CM, channels kc % CM on */
        return WIDE ? kc + (kc / CM) * (PX - CM) : kc;
    }
};
template <int PC, int RT> struct packed_ops {
    static constexpr int R = RT, SH = 1, KR = packed_kr(PC, RT), PX = packed_px(KR);
    static constexpr int ROW_STRIDE = 32 * PX;
    static constexpr int KF = (RT * PC + 7) / 8 * 8 % 16 == 8 ? KR - 16 : KR;
    static __device__ __forceinline__ int at(int kc) {
        return kc;
    }
};

/* Filter row r's weight tiles (bp: tile 0 at this step) times the A
 * fragments of ROWS output rows (fa[q]: row q's two m16 tiles): each pair
 * of B fragments is loaded once and feeds every row's MMAs. */
template <int W, class O, int NF, int ROWS>
__device__ __forceinline__ void row_mmas(float (&acc)[ROWS][2][NF][4],
                                         const unsigned (*const (&fa)[ROWS])[W], const __half *bp) {
#pragma unroll
    for (int j = 0; j < NF; j += 2) {
        unsigned b[W];
        load_b(b, bp + (size_t)j * O::KR * 8, j + 1 < NF, O::KR);
#pragma unroll
        for (int h = 0; h < 2 && j + h < NF; h++)
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int q = 0; q < ROWS; q++)
                    mma_step(acc[q][m][j + h], fa[q][m], b + h * (W / 2));
    }
}

/* One step of compute_tile_two at kc: W = 4, 16 halves (m16n8k16); W = 2,
 * the last 8 (m16n8k8). Each input row's A fragments are loaded once:
 * input row r + SH serves filter row r + SH of the first output row and r
 * of the second (a ring of SH + 1 rows' fragments). */
template <int W, class O, int NF>
__device__ __forceinline__ void two_step(float (&acc)[2][2][NF][4], const __half *arow,
                                         const __half *brow, int kc) {
    constexpr int RING = O::SH + 1;
    const int ko = O::at(kc);
    unsigned fa[RING][2][W]; /* [input row % RING][pixels 0-15, 16-31] */
#pragma unroll
    for (int i = 0; i < O::SH; i++) {
        load_a(fa[i][0], arow + (size_t)i * O::ROW_STRIDE + ko);
        load_a(fa[i][1], arow + (size_t)i * O::ROW_STRIDE + ko + 16 * O::PX);
    }
#pragma unroll
    for (int r = 0; r < O::R; r++) {
        /* fa[r % RING]: input row 2 SH warp + r; fa[(r + SH) % RING]: the
         * second output row's row r */
        const __half *ap = arow + (size_t)(r + O::SH) * O::ROW_STRIDE + ko;
        load_a(fa[(r + O::SH) % RING][0], ap);
        load_a(fa[(r + O::SH) % RING][1], ap + 16 * O::PX);
        const unsigned(*const rows[2])[W] = {fa[r % RING], fa[(r + O::SH) % RING]};
        row_mmas<W, O, NF, 2>(acc, rows, brow + ((size_t)r * NF * O::KR + kc) * 8);
    }
}

/* Two output rows a warp (oy0 + 2 warp and the row below), fixed geometry,
 * stride 1, 8, 16 or 32 channels read (wide pixels: CM + 8 halves a window
 * pixel, the steps as compute_tile's), or stride 2 with 4 or 8 read: each
 * weight fragment feeds both rows' MMAs, and each input row's A fragments
 * serve filter row r of the first output row and r - SH of the second: per
 * 16-wide step 2 (R + SH) A loads (ldmatrix x4) and R x NF / 2 B loads for
 * 4 R x NF MMAs (m16n8k16), where one row a warp takes 2 R, R x NF / 2 and
 * 2 R x NF (9x9 at stride 2: 22 A loads where one row a warp takes 36). The steps go kc outer, r
 * inner (one row a warp: r outer): the sums' order, and so the last bits, differ from the other
 * variants'. mma.sync's C fragment has a defined layout, so the epilogue goes from registers
 * (epilogue_regs), without the FP32 shared-memory stage of the others. */
template <class O, int NF>
__device__ __forceinline__ void compute_tile_two(const direct_args &a, const __half *sx,
                                                 const __half *sw, const float *sbias, int n,
                                                 int oy0, int ox0) {
    static_assert(NF == 1 || NF % 2 == 0, "two rows a warp: K of 8 or a multiple of 16");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float acc[2][2][NF][4] = {}; /* [output row][pixels 0-15, 16-31][tile][C fragment] */
    /* ldmatrix: lane l points at pixel l % 16, halves + 8 (l / 16): the next
     * tap (8 channels), the tap's next 8 channels (wide) or the next 8
     * positions (packed) */
    const __half *arow =
        sx + (size_t)(2 * warp * O::SH) * O::ROW_STRIDE + (lane & 15) * O::PX + (lane >> 4) * 8;
    const __half *brow = sw + ((size_t)(lane >> 4) * O::KR + (lane & 15)) * 8;
    /* A filter row of 3 or 5 taps of 8 channels is 24 or 40 halves: its
     * last 16-wide step holds one tap and 8 halves of padding, which go
     * through m16n8k8 instead: a sixth of the tensor work and operand loads
     * at 5x5, a quarter at 3x3. There B's lanes 0-7 point at tile j's rows,
     * 8-15 at tile j + 1's. */
#pragma unroll
    for (int kc = 0; kc < O::KF; kc += 16)
        two_step<4, O, NF>(acc, arow, brow, kc);
    if (O::KF < O::KR) {
        const __half *brow8 = sw + ((size_t)((lane >> 3) & 1) * O::KR + (lane & 7)) * 8;
        two_step<2, O, NF>(acc, arow, brow8, O::KF);
    }
    epilogue_regs<NF, 2>(a, acc, sbias, n, oy0 + 2 * warp, ox0);
}

/* One step of compute_tile_one at kc (W as two_step's): for each filter
 * row, the warp's 32 output columns as two m16 A tiles (input row r of
 * the warp's output row) times NF weight tiles. */
template <int W, class O, int NF>
__device__ __forceinline__ void one_step(float (&acc)[1][2][NF][4], const __half *arow,
                                         const __half *brow, int row_step, int kc) {
    const int ko = O::at(kc);
#pragma unroll
    for (int r = 0; r < O::R; r++) {
        const __half *ap = arow + (size_t)r * row_step + ko;
        unsigned fa[2][W];
        load_a(fa[0], ap);
        load_a(fa[1], ap + 16 * O::PX);
        const unsigned(*const rows[1])[W] = {fa};
        row_mmas<W, O, NF, 1>(acc, rows, brow + ((size_t)r * NF * O::KR + kc) * 8);
    }
}

/* One output row a warp (oy0 + warp) from packed taps, any stride: input
 * rows warp * sh + r of the vectors. Where two rows a warp cannot run
 * (strides above 1, 7x7 and 9x9 filters, K 64): network stems (ResNet's
 * 7x7 s2 on RGB, MobileNet's 3x3 s2) and 9x9 s2 on 4 channels, whose
 * filter row is 48 positions packed against 80 in pairs of pixels. The
 * epilogue goes from registers (epilogue_regs). */
template <class O, int NF>
__device__ __forceinline__ void compute_tile_one(const direct_args &a, const __half *sx,
                                                 const __half *sw, const float *sbias, int n,
                                                 int oy0, int ox0) {
    static_assert(O::SH == 1, "one row a warp: the stride comes from direct_args");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float accs[1][2][NF][4] = {}; /* one output row, in epilogue_regs' layout */
    const __half *arow =
        sx + (size_t)warp * a.sh * O::ROW_STRIDE + (lane & 15) * O::PX + (lane >> 4) * 8;
    const __half *brow = sw + ((size_t)(lane >> 4) * O::KR + (lane & 15)) * 8;
#pragma unroll
    for (int kc = 0; kc < O::KF; kc += 16)
        one_step<4, O, NF>(accs, arow, brow, O::ROW_STRIDE, kc);
    if (O::KF < O::KR) { /* the last 8 positions: m16n8k8 (see compute_tile_two) */
        const __half *brow8 = sw + ((size_t)((lane >> 3) & 1) * O::KR + (lane & 7)) * 8;
        one_step<2, O, NF>(accs, arow, brow8, O::ROW_STRIDE, O::KF);
    }
    epilogue_regs<NF, 1>(a, accs, sbias, n, oy0 + warp, ox0);
}

/* Packed taps: from the window as copied (4 channels, 8 bytes, a pixel;
 * a.row_stride halves a row) to O's vectors: for each input row and output
 * column m, tap s's PC channels (of window pixel m * sw + s) at s * PC,
 * zeros up to KR (finite: 0 x weight 0 stays 0). */
template <int PC, int RT>
__device__ __forceinline__ void pack_taps(const direct_args &a, const __half *win, __half *packed) {
    typedef packed_ops<PC, RT> O;
    const int items = a.rows_in * 32;
    for (int i = threadIdx.x; i < items; i += blockDim.x) {
        const int ry = i >> 5, m = i & 31;
        const __half *src = win + (size_t)ry * a.row_stride + m * 4 * a.sw;
        unsigned v[O::KR] = {}; /* 16-bit values */
#pragma unroll
        for (int t = 0; t < RT; t++) {
            const uint2 px = *reinterpret_cast<const uint2 *>(src + t * 4);
            const unsigned c[4] = {px.x & 0xffffu, px.x >> 16, px.y & 0xffffu, px.y >> 16};
#pragma unroll
            for (int ch = 0; ch < PC; ch++)
                v[t * PC + ch] = c[ch];
        }
        uint4 *dst = reinterpret_cast<uint4 *>(packed + (size_t)ry * O::ROW_STRIDE + m * O::PX);
#pragma unroll
        for (int u = 0; u < O::KR / 8; u++)
            dst[u] =
                make_uint4(v[8 * u] | v[8 * u + 1] << 16, v[8 * u + 2] | v[8 * u + 3] << 16,
                           v[8 * u + 4] | v[8 * u + 5] << 16, v[8 * u + 6] | v[8 * u + 7] << 16);
    }
}

template <int CM, int NF, bool PAIR, int RT>
__device__ __forceinline__ void compute_tile(const direct_args &a, const __half *sx,
                                             const __half *sw, float *stage, const float *sbias,
                                             int n, int oy0, int ox0) {
    compute_tile<CM, NF, PAIR, RT>(a, sx, sw, stage, sbias, n, oy0, ox0,
                                   bool_c<wide_pixels<CM, PAIR>::on>());
}

/* All weights, 16 bytes at a time (NF * 8 * ldb is a multiple of 8), and
 * the bias (zeros without one), as asynchronous copies (SM 8.0+; plain
 * loads before) that the caller commits with its first window: weights,
 * bias and window are in flight at once. Loaded one after the other, the
 * bias cost a fused op a second round trip per block (fused/bare 1.07 on
 * 512x512x8->32 3x3, H100). */
template <int NF>
__device__ __forceinline__ void load_weights(const direct_args &a, __half *sw, float *sbias) {
    if (threadIdx.x < NF * 2) /* 4 biases a copy; the zero fill does not read */
        copy_async<16>(sbias + threadIdx.x * 4,
                       a.bias ? static_cast<const void *>(a.bias + threadIdx.x * 4) : a.w,
                       a.bias != nullptr);
    const int nv = NF * a.r * a.kr; /* NF * 8 * ldb / 8 */
    for (int i = threadIdx.x; i < nv; i += blockDim.x)
        copy_async<16>(sw + (size_t)i * 8, a.w + (size_t)i * 8, true);
}

/* One tile from its window sx: one row a warp, two (TWO), or packed taps
 * (PC > 0: one or two rows a warp from the vectors pack_taps writes to
 * `packed`, between two barriers of the whole block). */
template <int CM, int NF, bool PAIR, int RT, bool TWO, int PC = 0, int SW = 1,
          bool PACKED = (PC > 0)>
struct tile_of {
    static __device__ __forceinline__ void run(const direct_args &a, const __half *sx, __half *,
                                               const __half *sw, float *stage, const float *sbias,
                                               int n, int oy0, int ox0) {
        compute_tile<CM, NF, PAIR, RT>(a, sx, sw, stage, sbias, n, oy0, ox0);
    }
};
template <int CM, int NF, int RT, int SW> struct tile_of<CM, NF, false, RT, true, 0, SW, false> {
    static __device__ __forceinline__ void run(const direct_args &a, const __half *sx, __half *,
                                               const __half *sw, float *, const float *sbias, int n,
                                               int oy0, int ox0) {
        compute_tile_two<pixel_ops<CM, RT, SW>, NF>(a, sx, sw, sbias, n, oy0, ox0);
    }
};
template <int NF, int RT, int PC> struct tile_of<4, NF, false, RT, true, PC, 1, true> {
    static __device__ __forceinline__ void run(const direct_args &a, const __half *sx,
                                               __half *packed, const __half *sw, float *,
                                               const float *sbias, int n, int oy0, int ox0) {
        pack_taps<PC, RT>(a, sx, packed);
        __syncthreads();
        compute_tile_two<packed_ops<PC, RT>, NF>(a, packed, sw, sbias, n, oy0, ox0);
    }
};
template <int NF, int RT, int PC> struct tile_of<4, NF, false, RT, false, PC, 1, true> {
    static __device__ __forceinline__ void run(const direct_args &a, const __half *sx,
                                               __half *packed, const __half *sw, float *,
                                               const float *sbias, int n, int oy0, int ox0) {
        pack_taps<PC, RT>(a, sx, packed);
        __syncthreads();
        compute_tile_one<packed_ops<PC, RT>, NF>(a, packed, sw, sbias, n, oy0, ox0);
    }
};

/* TWO: two output rows a warp (compute_tile_two). */
template <int CM, int NF, bool PAIR, int RT, bool TWO = false>
__global__ void __launch_bounds__(512) direct_kernel(direct_args a) {
    fv_k::pdl_wait(); /* launched early (pdl.cuh): x and y only once the kernels before are done */
    extern __shared__ __align__(128) unsigned char smem[];
    __half *sx = reinterpret_cast<__half *>(smem);
    __half *sw = sx + (size_t)a.rows_in * a.row_stride;
    float *stage = reinterpret_cast<float *>(sw + (size_t)NF * 8 * a.r * a.kr);
    float *sbias = stage + stage_floats(blockDim.x >> 5, TWO || wide_pixels<CM, PAIR>::on);
    const int n = blockIdx.z, ox0 = blockIdx.x * 32,
              oy0 = blockIdx.y * (blockDim.x >> 5) * (TWO ? 2 : 1);
    load_weights<NF>(a, sw, sbias);
    typedef fixed_window<CM, PAIR, RT> FW;
    load_window<CM, PAIR, FW::COLS, FW::STRIDE>(a, sx, n, oy0, ox0, false);
    copy_commit();
    fv_k::copy_wait<0>();
    __syncthreads();
    tile_of<CM, NF, PAIR, RT, TWO>::run(a, sx, nullptr, sw, stage, sbias, n, oy0, ox0);
}

/* Tile t of a persistent launch as (image, first output row, first
 * column): FAST by the launch's dividers (fast_div.h), else by division. */
template <bool FAST> struct tile_split {
    int tiles_x, tiles_y, rows;
    __device__ __forceinline__ tile_split(int tx, int ty, int r)
        : tiles_x(tx), tiles_y(ty), rows(r) {}
    __device__ __forceinline__ int3 at(int t) const {
        const int tx = t % tiles_x, rest = t / tiles_x;
        return make_int3(rest / tiles_y, (rest % tiles_y) * rows, tx * 32);
    }
};
template <> struct tile_split<true> {
    fv__divider dx, dy;
    int rows;
    __device__ __forceinline__ tile_split(int tx, int ty, int r)
        : dx(fv__divider_dev(tx)), dy(fv__divider_dev(ty)), rows(r) {}
    __device__ __forceinline__ int3 at(int t) const {
        const int band = fv__div(dx, t), n = fv__div(dy, band);
        return make_int3(n, (band - n * dy.d) * rows, (t - band * dx.d) * 32);
    }
};

/* Blocks an SM asked of ptxas for the stride-1 K 8 two-rows kernels
 * (window pixels), so that their registers leave room for more warps:
 * without a minimum they take 48-52 registers, 5 blocks of 8 warps an SM;
 * 6 caps them at 40 with no spills, 8 at 32 with 56-212 bytes spilled
 * (ptxas, sm_90). 6 against none (H200, docs/bench/RESULTS.md):
 * 1920x1080x8->8 3x3 0.945x the time, 2048x2048x8->8 0.992x; the 9x9
 * stride-2 kernel (8 bytes spilled at 6) went to 1.01-1.02x on
 * 800x800x8->400x400x8, so the strided ones keep no minimum, as every
 * other kernel (the comment on direct_kernel_persistent says why).
 * -DFV_CONV_K8_MIN_BLOCKS=N sets it (an A/B knob, as
 * FV_CONV_DIRECT_NO_FIXED; 0: none). */
#ifndef FV_CONV_K8_MIN_BLOCKS
#define FV_CONV_K8_MIN_BLOCKS 6
#endif
/* Measured on sm_90 only, and only there: sm_75 holds 1024 threads an SM,
 * too few for 6 blocks of 256 (ptxas rejects the bound), and the other
 * architectures keep the code they had. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
#define FV_K8_MIN_BLOCKS_HERE FV_CONV_K8_MIN_BLOCKS
#else
#define FV_K8_MIN_BLOCKS_HERE 0
#endif
__host__ __device__ constexpr int min_blocks(bool two, int pc, int nf, int sw) {
    return two && pc == 0 && nf == 1 && sw == 1 ? FV_K8_MIN_BLOCKS_HERE : 0;
}

/* Persistent blocks (as many as fit at once): each loads the weights once,
 * then walks tiles (th output rows x 32 columns) gridDim.x apart, loading
 * the next tile's window (asynchronously on SM 8.0+) while it computes this
 * one. Shared memory: weights, stage, bias (128-byte units), two windows
 * (packed taps: then the vectors of one).
 * No minimum of blocks in the launch bounds: an explicit 1 let ptxas take
 * 146 registers instead of 128 (5x5, K 32) and 68 instead of 50 (3x3, K
 * 8), and the 16-row 5x5 kernel ran 28% slower at one block an SM (H100,
 * docs/bench/RESULTS.md). */
template <int CM, int NF, bool PAIR, int RT = 0, bool TWO = false, int PC = 0, int SW = 1>
__global__ void __launch_bounds__(TWO || PC ? 256 : 512, min_blocks(TWO, PC, NF, SW))
    direct_kernel_persistent(direct_args a) {
    fv_k::pdl_wait(); /* launched early (pdl.cuh): x and y only once the kernels before are done */
    extern __shared__ __align__(128) unsigned char smem[];
    const int nwarps = blockDim.x >> 5, rows = nwarps * (TWO ? 2 : 1); /* output rows a tile */
    __half *sw = reinterpret_cast<__half *>(smem);
    float *stage = reinterpret_cast<float *>(sw + (size_t)NF * 8 * a.r * a.kr);
    float *sbias = stage + stage_floats(nwarps, TWO || PC || wide_pixels<CM, PAIR>::on);
    __half *win0 = reinterpret_cast<__half *>(sbias + bias_floats(NF * 8)),
           *win1 = win0 + a.win_halves, *packed = win1 + a.win_halves;
    /* tile t: image, first output row, first column. In the two-rows-a-warp
     * kernels of K 8 (window pixels) the divisions by the band counts go as
     * multiply-high and shift (fast_div.h; dividers made once a block):
     * 0.94x the time of 1920x1080x8->8 3x3, 0.92x of 2048x2048x8->8 (H200,
     * docs/bench/RESULTS.md). The others keep the divisions: there the
     * dividers' registers cost blocks an SM (80 -> 94 registers for K 16
     * at 3x3), and a change of their code or of direct_args took several
     * from 128 registers to 146-164 (ptxas, sm_90). */
    constexpr bool FAST = TWO && PC == 0 && NF == 1;
    const int tiles_x = (a.q + 31) / 32, tiles_y = (a.p + rows - 1) / rows;
    const int total = tiles_x * tiles_y * a.n;
    const tile_split<FAST> split(tiles_x, tiles_y, rows);
    typedef fixed_window<CM, PAIR, RT, PC, SW> FW;
    load_weights<NF>(a, sw, sbias);
    int t = blockIdx.x;
    if (t < total) {
        const int3 at = split.at(t);
        load_window<CM, PAIR, FW::COLS, FW::STRIDE>(a, win0, at.x, at.y, at.z, true);
    }
    copy_commit();
    for (int i = 0; t < total; t += gridDim.x, i++) {
        __half *cur = (i & 1) ? win1 : win0, *next = (i & 1) ? win0 : win1;
        const int tn = t + gridDim.x;
        if (tn < total) {
            const int3 at = split.at(tn);
            load_window<CM, PAIR, FW::COLS, FW::STRIDE>(a, next, at.x, at.y, at.z, true);
        }
        copy_commit();
        fv_k::copy_wait<1>(); /* this tile's window has landed */
        __syncthreads();
        const int3 at = split.at(t);
        tile_of<CM, NF, PAIR, RT, TWO, PC, SW>::run(a, cur, packed, sw, stage, sbias, at.x, at.y,
                                                    at.z);
        __syncthreads(); /* everyone is done with cur before it is refilled */
    }
    fv_k::copy_wait<0>(); /* a block without a tile: its weights' copies */
}

typedef void (*kernel_fn)(direct_args);

#if FV_CONV_TMA
/* Hopper's tensor memory accelerator (SM 9.0+) for the window of the
 * persistent two-rows kernels of 8 channels stored and read (K 8, 16 or
 * 32, stride 1, 3x3 or 5x5): one thread asks for the tile's whole window as one box of a
 * 3-D tensor map over the input as 32-bit words (a row's pixels and
 * channels as one dimension, then H, N; the box: the window's row, STRIDE
 * halves, x its rows), and the copy engine writes it to shared memory,
 * zeros outside the image, and counts the bytes on an mbarrier that the
 * block waits on. Rows of whole pixels: 576 contiguous bytes at 3x3. A box
 * of 16-byte pixels (C, W, H, N) ran 1.07-1.13x the cp.async walk's time
 * (H200: 2048x2048x8->8 and 1920x1080x8->8 3x3, session 49). The cp.async
 * walk it replaces took about 185 of a warp's ~500-600 instructions a tile
 * (a division, bounds, a 64-bit address and a copy for each 16-byte
 * vector, 2-3 a thread; ncu, H200, session 42), in a kernel bound by
 * issue. The box is STRIDE / 8 pixels wide (one or two past the columns
 * the MMAs read: the window's rows stay STRIDE halves apart, as
 * load_window lays them); the same MMAs in the same order: the same
 * results. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 /* the only architectures that use it */
using fv_k::bar_expect;
using fv_k::bar_init;
using fv_k::bar_wait;
/* The window of the tile at (image n, first output row oy0, column ox0)
 * into win, completing on bar. */
__device__ __forceinline__ void tma_window(__half *win, const CUtensorMap *tm,
                                           unsigned long long *bar, const direct_args &a, int n,
                                           int oy0, int ox0) {
    fv_k::tma_load_3d(win, tm, bar, (ox0 - a.pw) * (a.cs / 2), oy0 - a.ph, n);
}

#endif

/* direct_kernel_persistent<8, NF, false, RT, true> with the window by the
 * tensor memory accelerator (above): the same tiles, walk, MMAs and
 * epilogue. Two mbarriers (one a window buffer): K 8 and 16 in the bias
 * slot's unused tail (bias_floats: 32 floats, the bias takes 8 or 16),
 * K 32 in 128 bytes past the windows (smem_of). */
template <int NF, int RT>
__global__ void __launch_bounds__(256, min_blocks(true, 0, NF, 1))
    direct_kernel_tma(direct_args a, const __grid_constant__ CUtensorMap tm) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    fv_k::pdl_wait(); /* launched early (pdl.cuh): x and y only once the kernels before are done */
    typedef fixed_window<8, false, RT> FW;
    static_assert(FW::on && FW::STRIDE % 8 == 0, "the box is whole pixels");
    extern __shared__ __align__(128) unsigned char smem[];
    const int rows = (blockDim.x >> 5) * 2; /* output rows a tile */
    __half *sw = reinterpret_cast<__half *>(smem);
    float *sbias = reinterpret_cast<float *>(sw + (size_t)NF * 8 * a.r * a.kr);
    __half *win0 = reinterpret_cast<__half *>(sbias + bias_floats(NF * 8)),
           *win1 = win0 + a.win_halves;
    unsigned long long *bars = reinterpret_cast<unsigned long long *>(
        NF <= 2 ? static_cast<void *>(sbias + 16) : static_cast<void *>(win1 + a.win_halves));
    const int tiles_x = (a.q + 31) / 32, tiles_y = (a.p + rows - 1) / rows;
    const int total = tiles_x * tiles_y * a.n;
    /* the divisions as the cp.async kernels take them (tile_split) */
    const tile_split<NF == 1> split(tiles_x, tiles_y, rows);
    const unsigned bytes = (unsigned)a.rows_in * FW::STRIDE * 2;
    int t = blockIdx.x;
    if (threadIdx.x == 0) {
        bar_init(&bars[0]);
        bar_init(&bars[1]);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        if (t < total) {
            const int3 at = split.at(t);
            bar_expect(&bars[0], bytes);
            tma_window(win0, &tm, &bars[0], a, at.x, at.y, at.z);
        }
    }
    load_weights<NF>(a, sw, sbias);
    copy_commit();
    fv_k::copy_wait<0>();
    __syncthreads(); /* weights, bias and the barriers' set-up seen by all */
    for (int i = 0; t < total; t += gridDim.x, i++) {
        const int b = i & 1;
        const int tn = t + gridDim.x;
        if (threadIdx.x == 0 && tn < total) { /* the buffer everyone left at the last barrier */
            const int3 at = split.at(tn);
            bar_expect(&bars[b ^ 1], bytes);
            tma_window(b ? win0 : win1, &tm, &bars[b ^ 1], a, at.x, at.y, at.z);
        }
        bar_wait(&bars[b], (unsigned)(i >> 1) & 1u); /* this tile's window has landed */
        const int3 at = split.at(t);
        tile_of<8, NF, false, RT, true>::run(a, b ? win1 : win0, nullptr, sw, nullptr, sbias, at.x,
                                             at.y, at.z);
        __syncthreads(); /* everyone is done with this buffer before it is refilled */
    }
#endif
}

typedef void (*tma_kernel_fn)(direct_args, const CUtensorMap);

/* The TMA kernel for g where one exists (the device aside), else NULL. */
tma_kernel_fn pick_tma(const fv__conv_direct_geom *g) {
    if (!g->two || !g->persistent || g->pair || g->pc || g->cm != 8 || g->cs != 8 ||
        !(g->kp == 8 || g->kp == 16 || g->kp == 32) || g->sh != 1 || g->sw != 1 || g->r != g->s ||
        (g->r != 3 && g->r != 5))
        return nullptr;
    const int nf = g->kp / 8, r5 = g->r == 5;
    return nf == 1   ? (r5 ? direct_kernel_tma<1, 5> : direct_kernel_tma<1, 3>)
           : nf == 2 ? (r5 ? direct_kernel_tma<2, 5> : direct_kernel_tma<2, 3>)
                     : (r5 ? direct_kernel_tma<4, 5> : direct_kernel_tma<4, 3>);
}

using fv_k::tensor_map_encoder;

/* The tensor map of x for g's windows (see direct_kernel_tma). */
fv_status encode_window_map(const fv__conv_direct_geom *g, const void *x, int rows_in,
                            int row_stride, CUtensorMap *tm) {
    PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    FV_REQUIRE(encode, FV_ERR_INTERNAL, "direct conv: the driver has no cuTensorMapEncodeTiled");
    const cuuint64_t dims[3] = {(cuuint64_t)g->w * g->cs / 2, (cuuint64_t)g->h, (cuuint64_t)g->n};
    const cuuint64_t strides[2] = {(cuuint64_t)g->w * g->cs * 2,
                                   (cuuint64_t)g->h * g->w * g->cs * 2};
    const cuuint32_t box[3] = {(cuuint32_t)row_stride / 2, (cuuint32_t)rows_in, 1};
    const cuuint32_t unit[3] = {1, 1, 1};
    const CUresult r =
        encode(tm, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, const_cast<void *>(x), dims, strides, box,
               unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
               CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    FV_REQUIRE(r == CUDA_SUCCESS, FV_ERR_INTERNAL,
               "direct conv: cuTensorMapEncodeTiled failed (%d) for %dx%dx%d x %d, box %u x %u "
               "words",
               (int)r, g->h, g->w, g->cs, g->n, box[1], box[0]);
    return FV_OK;
}
#endif

/* The two-rows-a-warp kernels (fixed geometry), made for K of 8, 16 and
 * 32 only (OK; with 64 their accumulators spill: 1.5-3 KB, sm_90): cm 8 a
 * block a tile or persistent; wide pixels (cm 16, 32) persistent only, K
 * of 16 or 32. */
template <int CM, int NF, bool BLOCK> struct two_block { /* a block a tile (BLOCK) */
    static kernel_fn of(int rt) {
        return rt == 3   ? direct_kernel<CM, NF, false, 3, true>
               : rt == 5 ? direct_kernel<CM, NF, false, 5, true>
                         : nullptr;
    }
};
template <int CM, int NF> struct two_block<CM, NF, false> {
    static kernel_fn of(int) {
        return nullptr;
    }
};
template <int CM, int NF, bool OK> struct two_unit { /* stride 1: 8, 16, 32 read (OK) */
    static kernel_fn of(int rt, int persistent) {
        if (persistent)
            return rt == 3   ? direct_kernel_persistent<CM, NF, false, 3, true>
                   : rt == 5 ? direct_kernel_persistent<CM, NF, false, 5, true>
                             : nullptr;
        return two_block<CM, NF, CM == 8>::of(rt);
    }
};
template <int CM, int NF> struct two_unit<CM, NF, false> {
    static kernel_fn of(int, int) {
        return nullptr;
    }
};
template <int CM, int NF, bool OK> struct two_strided { /* stride 2: 4 or 8 read (OK) */
    static kernel_fn of(int rt) {
        return rt == 3   ? direct_kernel_persistent<CM, NF, false, 3, true, 0, 2>
               : rt == 5 ? direct_kernel_persistent<CM, NF, false, 5, true, 0, 2>
               : rt == 9 ? direct_kernel_persistent<CM, NF, false, 9, true, 0, 2>
                         : nullptr;
    }
};
template <int CM, int NF> struct two_strided<CM, NF, false> {
    static kernel_fn of(int) {
        return nullptr;
    }
};
template <int CM, int NF, bool OK> struct two_kernel {
    static kernel_fn of(int rt, int persistent, int sw) {
        if (sw == 2) return persistent ? two_strided<CM, NF, CM <= 8>::of(rt) : nullptr;
        return two_unit<CM, NF, CM >= 8>::of(rt, persistent);
    }
};
template <int CM, int NF> struct two_kernel<CM, NF, false> {
    static kernel_fn of(int, int, int) {
        return nullptr;
    }
};

/* rt: the filter's rows where the kernel knows its geometry (fixed), else 0;
 * two: two output rows a warp; sw: the stride (two rows a warp: 1 or 2) */
template <int CM, int NF, bool PAIR>
kernel_fn kernel_of(int persistent, int rt, int two, int sw = 1) {
    /* two rows a warp: fv__conv_direct_check lets it through only where it fits */
    constexpr bool two_ok = !PAIR && (((CM == 4 || CM == 8) && (NF == 1 || NF == 2 || NF == 4)) ||
                                      ((CM == 16 || CM == 32) && (NF == 2 || NF == 4)));
    if (two) return two_kernel<CM, NF, two_ok>::of(rt, persistent, sw);
    if (persistent) return direct_kernel_persistent<CM, NF, PAIR>;
    /* K of 8, 16, 32 and 64 (the common layers; each kernel costs build time) */
    if (FIXED_KERNELS && !PAIR && CM >= 8 && (NF == 1 || NF == 2 || NF == 4 || NF == 8)) {
        if (rt == 3) return direct_kernel<CM, NF, PAIR, 3>;
        if (rt == 5) return direct_kernel<CM, NF, PAIR, 5>;
    }
    return direct_kernel<CM, NF, PAIR, 0>;
}

template <int CM, bool PAIR = false>
kernel_fn pick_nf(int nf, int persistent, int rt, int two, int sw = 1) {
    switch (nf) {
    case 1:
        return kernel_of<CM, 1, PAIR>(persistent, rt, two, sw);
    case 2:
        return kernel_of<CM, 2, PAIR>(persistent, rt, two, sw);
    case 3:
        return kernel_of<CM, 3, PAIR>(persistent, rt, two);
    case 4:
        return kernel_of<CM, 4, PAIR>(persistent, rt, two, sw);
    case 5:
        return kernel_of<CM, 5, PAIR>(persistent, rt, two);
    case 6:
        return kernel_of<CM, 6, PAIR>(persistent, rt, two);
    case 7:
        return kernel_of<CM, 7, PAIR>(persistent, rt, two);
    case 8:
        return kernel_of<CM, 8, PAIR>(persistent, rt, two);
    default:
        return nullptr;
    }
}

/* The filter rows of g where a fixed-geometry kernel runs it (stride 1
 * along rows, R = S = 3 or 5, cm 8, 16 or 32, K stored as 8, 16, 32 or 64,
 * a block a tile; persistent: two rows a warp only; and two rows a warp at
 * stride 2, 3x3, 5x5 or 9x9, cm 4 or 8, K 8, 16 or 32, persistent), else
 * 0. */
int fixed_rows(const fv__conv_direct_geom *g) {
    const int nf = g->kp / 8;
    if (g->two && g->sw == 2)
        return g->sh == 2 && g->persistent && !g->pair && !g->pc && (g->cm == 4 || g->cm == 8) &&
                       g->r == g->s && (nf == 1 || nf == 2 || nf == 4) &&
                       (g->r == 3 || g->r == 5 || g->r == 9)
                   ? g->r
                   : 0;
    if ((g->persistent && !g->two) || g->pair || g->cm < 8 || g->sw != 1 || g->r != g->s ||
        !(nf == 1 || nf == 2 || nf == 4 || nf == 8))
        return 0;
    return g->r == 3 || g->r == 5 ? g->r : 0;
}

/* Packed taps: PC channels, K stored as 8 NF, R = S = rt; two rows a
 * warp (3x3, 5x5; K 8, 16, 32) or one (PC 3 or 4; 3x3 to 7x7, 9x9 for PC
 * 4; K 16, 32, 64). */
template <int PC, int NF> kernel_fn packed_of(int rt) {
    return rt == 3   ? direct_kernel_persistent<4, NF, false, 3, true, PC>
           : rt == 5 ? direct_kernel_persistent<4, NF, false, 5, true, PC>
                     : nullptr;
}
/* The one-row kernels made (each costs build time): 3x3 to 7x7 for PC 3
 * and 4, 9x9 for PC 4 (OK). */
template <int PC, int NF, int RT, bool OK = (PC == 3 || PC == 4) && (RT < 9 || PC == 4)>
struct packed_one {
    static kernel_fn of() {
        return direct_kernel_persistent<4, NF, false, RT, false, PC>;
    }
};
template <int PC, int NF, int RT> struct packed_one<PC, NF, RT, false> {
    static kernel_fn of() {
        return nullptr;
    }
};
template <int PC, int NF> kernel_fn packed_one_of(int rt) {
    return rt == 3   ? packed_one<PC, NF, 3>::of()
           : rt == 5 ? packed_one<PC, NF, 5>::of()
           : rt == 7 ? packed_one<PC, NF, 7>::of()
           : rt == 9 ? packed_one<PC, NF, 9>::of()
                     : nullptr;
}
template <int PC> kernel_fn packed_nf(int nf, int rt, int two) {
    if (!two)
        return nf == 2   ? packed_one_of<PC, 2>(rt)
               : nf == 4 ? packed_one_of<PC, 4>(rt)
               : nf == 8 ? packed_one_of<PC, 8>(rt)
                         : nullptr;
    return nf == 1   ? packed_of<PC, 1>(rt)
           : nf == 2 ? packed_of<PC, 2>(rt)
           : nf == 4 ? packed_of<PC, 4>(rt)
                     : nullptr;
}

kernel_fn pick(const fv__conv_direct_geom *g) {
    if (g->pc) {
        if (g->cm != 4 || !g->persistent || g->r != g->s) return nullptr;
        const int nf = g->kp / 8;
        return g->pc == 1   ? packed_nf<1>(nf, g->r, g->two)
               : g->pc == 3 ? packed_nf<3>(nf, g->r, g->two)
               : g->pc == 4 ? packed_nf<4>(nf, g->r, g->two)
                            : nullptr;
    }
    const int rt = fixed_rows(g);
    if (g->pair) return g->cm == 4 ? pick_nf<4, true>(g->kp / 8, g->persistent, 0, 0) : nullptr;
    switch (g->cm) {
    case 4: /* two rows a warp: stride 2 only */
        return pick_nf<4>(g->kp / 8, g->persistent, rt, g->two && rt, g->sw);
    case 8:
        return pick_nf<8>(g->kp / 8, g->persistent, rt, g->two, g->sw);
    case 16:
        return pick_nf<16>(g->kp / 8, g->persistent, rt, g->two);
    case 32:
        return pick_nf<32>(g->kp / 8, g->persistent, rt, g->two);
    default:
        return nullptr;
    }
}

/* A fixed kernel's compile-time geometry against g's (window_of, kr). */
bool fixed_matches(const fv__conv_direct_geom *g, int cols, int row_stride) {
    const int rt = fixed_rows(g);
    if (g->pc) return g->kr == packed_kr(g->pc, g->r) && g->kr + 8 == packed_px(g->kr);
    const int sw = g->two && g->sw == 2 ? 2 : 1, kr = fixed_kr(g->cm, rt);
    return (!FIXED_KERNELS && !g->two) || rt == 0 ||
           (window_cols(g->cm, false, sw, rt, kr) == cols &&
            window_stride(g->cm, false, sw, rt, kr) == row_stride && kr == g->kr);
}

} // namespace

extern "C" int fv__conv_direct_check(fv__conv_direct_geom *g, int device, size_t *smem, char *why,
                                     size_t why_n) {
    *smem = 0;
    if (g->wg) {
#if FV_HAVE_WGMMA
        return fv__conv_wgmma_check(g, device, smem, why, why_n);
#else
        (void)device;
        snprintf(why, why_n, "wgmma: this build has no SM 9.0 code");
        return 0;
#endif
    }
    if (g->pc && g->two &&
        (!(g->pc == 1 || g->pc == 3 || g->pc == 4) || g->cm != 4 || g->pair || !g->persistent ||
         g->sh != 1 || g->sw != 1 || g->r != g->s || (g->r != 3 && g->r != 5) ||
         !(g->kp == 8 || g->kp == 16 || g->kp == 32) || g->cs % 8)) {
        snprintf(why, why_n,
                 "packed taps, two rows a warp: C of 1, 3 or 4, stride 1, 3x3 or 5x5, K 8, 16 or "
                 "32, persistent blocks");
        return 0;
    }
    if (g->pc && !g->two &&
        (!(g->pc == 3 || g->pc == 4) || g->cm != 4 || g->pair || !g->persistent || g->sh < 1 ||
         g->sh > 4 || g->sw < 1 || g->sw > 4 || g->r != g->s ||
         !(g->r == 3 || g->r == 5 || g->r == 7 || (g->r == 9 && g->pc == 4)) ||
         !(g->kp == 16 || g->kp == 32 || g->kp == 64) || !(g->th == 4 || g->th == 8) ||
         g->cs % 8)) {
        snprintf(why, why_n,
                 "packed taps, one row a warp: C of 3 or 4, strides 1-4, 3x3, 5x5, 7x7 (or 9x9 "
                 "on 4 channels), K 16, 32 or 64, 4 or 8 rows in persistent blocks");
        return 0;
    }
    if (!(g->cm == 4 || g->cm == 8 || g->cm == 16 || g->cm == 32) || g->cm > g->cs || g->cs % 8) {
        snprintf(why, why_n, "reads %d of %d stored channels (needs 4, 8, 16 or 32)", g->cm, g->cs);
        return 0;
    }
    if (g->kp % 8 || g->kp < 8 || g->kp > 64 || g->k > g->kp) {
        snprintf(why, why_n, "K stored as %d (needs 8..64)", g->kp);
        return 0;
    }
    if (g->pair && g->cm != 4) {
        snprintf(why, why_n, "pairs of pixels read 4 channels, not %d", g->cm);
        return 0;
    }
    if (!g->pair && !g->pc && (g->cm * g->sw) % 8) {
        snprintf(why, why_n, "stride %d x %d channels read is not a multiple of 8", g->sw, g->cm);
        return 0;
    }
    /* 12 rows: persistent blocks of two rows a warp only (6 warps; engine
     * 312, the one autotune offers and the tests run) */
    if (!(g->th == 4 || g->th == 8 || g->th == 16 ||
          (g->th == 12 && g->two == 1 && g->persistent == 1)) ||
        (g->persistent & ~1) || (g->pair & ~1) || (g->two & ~1) || g->pc < 0 || g->r < 1 ||
        g->s < 1 || g->sh < 1 || g->sw < 1 || g->n < 1 || g->p < 1 || g->q < 1 || g->n > 65535 ||
        (g->p + g->th - 1) / g->th > 65535) {
        snprintf(why, why_n, "geometry out of range");
        return 0;
    }
    g->kr = g->pc     ? packed_kr(g->pc, g->s)
            : g->pair ? 16 * (g->s / 2 > 1 ? g->s / 2 : 1)
                      : (g->s * g->cm + 15) / 16 * 16;
    if (g->two && !g->pc &&
        (g->sw == 2 ? fixed_rows(g) == 0 || g->kp > 32
                    : g->cm < 8 || g->sh != 1 || fixed_rows(g) == 0 || g->kp > 32 ||
                          (g->cm > 8 && (g->kp < 16 || !g->persistent)))) {
        snprintf(why, why_n,
                 "two rows a warp: stride 1, 3x3 or 5x5; 8 channels read and K 8, 16 or 32, "
                 "or 16 or 32 read, K 16 or 32 and persistent blocks; or stride 2, 3x3, 5x5 or "
                 "9x9, 4 or 8 read, K 8, 16 or 32, persistent blocks");
        return 0;
    }
    size_t need = smem_of(g);
    int optin = 0;
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
        cudaSuccess) {
        cudaGetLastError();
        optin = 48 * 1024;
    }
    if (need > (size_t)optin) {
        snprintf(why, why_n, "needs %zu bytes of shared memory per block, the GPU has %d", need,
                 optin);
        return 0;
    }
    *smem = need;
    return 1;
}

extern "C" fv_status fv__conv_direct_prepare(fv__conv_direct_geom *g) {
#if FV_HAVE_WGMMA
    if (g->wg) return fv__conv_wgmma_prepare(g);
#endif
    FV_REQUIRE(!g->wg, FV_ERR_NOT_SUPPORTED, "direct conv: this build has no wgmma kernel");
    kernel_fn f = pick(g);
    FV_REQUIRE(f, FV_ERR_INTERNAL, "direct conv: no kernel for cm=%d kp=%d", g->cm, g->kp);
    /* the device's limit, not this op's need: ops share the kernel, and a
     * smaller value set for one would make another's launch fail */
    int dev = 0, optin = 0;
    FV_CUDA_TRY(cudaGetDevice(&dev));
    FV_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    FV_REQUIRE(smem_of(g) <= (size_t)optin, FV_ERR_INTERNAL,
               "direct conv: %zu bytes of shared memory, the GPU has %d", smem_of(g), optin);
    const void *fn = reinterpret_cast<const void *>(f);
    g->tma = 0;
#if FV_CONV_TMA
    /* the TMA kernel where the device has the engine (SM 9.0+) and the
     * kernel was built for it (PTX of 9.0 or later: a kernel compiled from
     * older PTX has no body for it) */
    tma_kernel_fn ft = pick_tma(g);
    const char *no_tma = getenv("FV_CONV_NO_TMA");
    int major = 0;
    FV_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (ft && major >= 9 && !(no_tma && strcmp(no_tma, "1") == 0) && tensor_map_encoder()) {
        cudaFuncAttributes fa;
        FV_CUDA_TRY(cudaFuncGetAttributes(&fa, reinterpret_cast<const void *>(ft)));
        if (fa.ptxVersion >= 90) g->tma = 1, fn = reinterpret_cast<const void *>(ft);
    }
#endif
    FV_CUDA_TRY(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    /* persistent blocks: as many as fit at once, at most one a tile */
    int per_sm = 0, sms = 0;
    FV_CUDA_TRY(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, 32 * warps_of(g), smem_of(g)));
    FV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    FV_REQUIRE(per_sm > 0, FV_ERR_NOT_SUPPORTED,
               "direct conv: no block of %d threads and %zu bytes of shared memory fits an SM",
               32 * warps_of(g), smem_of(g));
    long tiles = (long)((g->q + 31) / 32) * ((g->p + g->th - 1) / g->th) * g->n;
    long grid = g->persistent ? (long)per_sm * sms : tiles;
    FV_REQUIRE(tiles <= 0x7fffffffL, FV_ERR_NOT_SUPPORTED, "direct conv: %ld tiles", tiles);
    g->grid = (int)(tiles < grid ? tiles : grid);
    return FV_OK;
}

extern "C" size_t fv__conv_direct_seq_bytes(int device, int kp, int r, int s, int sh, int sw,
                                            int cs, int cd) {
#if FV_HAVE_WGMMA
    return fv__conv_px_seq_bytes(device, kp, r, s, sh, sw, cs, cd);
#else
    (void)device, (void)kp, (void)r, (void)s, (void)sh, (void)sw, (void)cs, (void)cd;
    return 0;
#endif
}

extern "C" fv_status fv__conv_direct_seq_build(cudaStream_t stream, int kp, int r, int cd, int kr,
                                               void *w) {
#if FV_HAVE_WGMMA
    return fv__conv_px_seq_build(stream, kp, r, cd, kr, w);
#else
    (void)stream, (void)kp, (void)r, (void)cd, (void)kr, (void)w;
    FV_REQUIRE(0, FV_ERR_INTERNAL, "direct conv: this build has no wgmma kernel");
    return FV_ERR_INTERNAL;
#endif
}

extern "C" fv_status fv__conv_direct_run(cudaStream_t stream, const fv__conv_direct_geom *g,
                                         const void *x, void *y, const void *w, const void *bias,
                                         fv_activation act, float alpha, int early) {
#if FV_HAVE_WGMMA
    if (g->wg) return fv__conv_wgmma_run(stream, g, x, y, w, bias, act, alpha, early);
#endif
    FV_REQUIRE(!g->wg, FV_ERR_INTERNAL, "direct conv: this build has no wgmma kernel");
    kernel_fn f = pick(g);
    FV_REQUIRE(f && x && y && w && ((uintptr_t)x % 16) == 0 && ((uintptr_t)y % 16) == 0 &&
                   ((uintptr_t)w % 16) == 0 && g->kr % 16 == 0 &&
                   (g->ys == 0 || (g->ys >= g->kp && g->ys % 8 == 0)),
               FV_ERR_INTERNAL, "direct conv: bad arguments (cm=%d kp=%d kr=%d)", g->cm, g->kp,
               g->kr);
    direct_args a;
    a.x = static_cast<const __half *>(x);
    a.y = static_cast<__half *>(y);
    a.w = static_cast<const __half *>(w);
    a.bias = static_cast<const float *>(bias);
    a.h = g->h, a.w_in = g->w, a.cs = g->cs, a.p = g->p, a.q = g->q, a.kp = g->kp, a.k = g->k;
    a.ys = g->ys ? g->ys : g->kp;
    a.r = g->r, a.sh = g->sh, a.sw = g->sw, a.ph = g->ph, a.pw = g->pw, a.kr = g->kr;
    window_of(g, &a.rows_in, &a.cols_in, &a.row_stride);
    FV_REQUIRE(fixed_matches(g, a.cols_in, a.row_stride), FV_ERR_INTERNAL,
               "direct conv: fixed-geometry kernel disagrees with the op (cm=%d r=%d kr=%d)", g->cm,
               g->r, g->kr);
    a.win_halves = window_halves(g);
    a.n = g->n;
    a.act = (int)act;
    a.alpha = alpha;
    FV_REQUIRE(g->grid > 0, FV_ERR_INTERNAL, "direct conv: not prepared");
#if FV_CONV_TMA
    if (g->tma) {
        tma_kernel_fn ft = pick_tma(g);
        FV_REQUIRE(ft, FV_ERR_INTERNAL, "direct conv: no TMA kernel for this geometry");
        CUtensorMap tm;
        FV_TRY(encode_window_map(g, x, a.rows_in, a.row_stride, &tm));
        FV_CUDA_TRY(fv_k::launch(early != 0, dim3(g->grid), dim3(32 * warps_of(g)), smem_of(g),
                                 stream, ft, a, tm));
        return FV_OK;
    }
#else
    FV_REQUIRE(!g->tma, FV_ERR_INTERNAL, "direct conv: built without the TMA kernels");
#endif
    const dim3 grid = g->persistent ? dim3(g->grid)
                                    : dim3((unsigned)((g->q + 31) / 32),
                                           (unsigned)((g->p + g->th - 1) / g->th), (unsigned)g->n);
    FV_CUDA_TRY(fv_k::launch(early != 0, grid, dim3(32 * warps_of(g)), smem_of(g), stream, f, a));
    return FV_OK;
}
