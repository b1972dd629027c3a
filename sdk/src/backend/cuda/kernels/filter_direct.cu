/* Direct filter: fv_filter on CUDA cores, from u8 frame to u8 frame, made to
 * run at the DRAM floor where the FUSED engine's im2col + WMMA does not (a
 * 3x3 stencil has almost no math; its cost is moving bytes). Kernels up to
 * 3 x 3 (every built-in kind, every input format) go to the strip kernel
 * (filter_direct_strip.cu), which streams rows; this file's tiled kernel
 * runs the rest (custom kernels from 5 x 5).
 *
 * A block (32 x 8 threads) makes an output tile of TH x 128 pixels; a
 * thread makes RY rows of PX = 4 consecutive pixels:
 *   1. the input tile + halo -> shared memory as FP32 planes, by
 *      pixel_math.h's reader, each value as the FUSED engine takes it
 *      (bytes as they are; YUV-converted values on fv__yuv_grid, FP16
 *      values); zero outside the frame. One plane per
 *      edge channel; for one edge channel from three packed channels the
 *      plane holds the channels' sum, (v0 + v1) + v2: the kernel is the same
 *      on every channel, so sum_c sum_rs w v_c = sum_rs w (sum_c v_c);
 *   2. the kernel (FP16-rounded weights, zero-padded and centred to a KS x
 *      KS square) is applied from registers: per tile row, one window of
 *      PX + KS - 1 values read as float4 (conflict-free: a warp reads one
 *      contiguous row), used by every output row of the thread it touches;
 *   3. edge_math.h's rule and unpack's rounding per pixel, as the FUSED
 *      engine's write_pixel, and the thread's PX pixels stored with the
 *      widest aligned stores.
 * Every input byte is read from DRAM once (the halo comes from L2), every
 * output byte written once.
 *
 * Exactness. Where every partial sum of the convolution is an exactly
 * representable FP32 value, any summation order, with or without FMA, and
 * the tensor cores' FP32 accumulation all give the exact sum; the edge step
 * is then the same IEEE sequence on the same value, so the bytes are the
 * FUSED engine's. core/filter.c proves that condition per filter: input
 * values all multiples of 2^-qi (bytes: qi = 0; YUV-converted values on
 * fv__yuv_grid: qi = 8), FP16 weights all multiples of 2^-q, and
 * 255 * channels summed * sum |w| * 2^(q + qi) < 2^24 (every product and
 * partial sum is then a multiple of 2^-(q + qi) below 2^(24 - q - qi));
 * the built-in kernels need at most 255 * 3 * 32 * 2^8 < 2^23. Otherwise
 * (fine custom weights) the sums are FP32 roundings in this kernel's
 * order, not the tensor cores': a byte may differ from FUSED's by one level
 * where a value lies within FP32 rounding of a .5 boundary. */
#include <stdlib.h>
#include <string.h>
#include "filter_direct.cuh"
#include "filter_args.cuh"
#include "filter_direct_strip.cuh"
#include "common.cuh"
#include "pdl.cuh"
#include "../cuda_check.h"
extern "C" { /* a C header without its own guard: fv__cuda_bind has C linkage */
#include "../cuda_internal.h"
}
#include "../../edge_math.h"
#include "../../pixel_math.h"

namespace {
const int PX = 4; /* output pixels per thread, along a row */
const int BX = 32, BY = 8, THREADS = BX * BY;
const int TW = BX * PX;   /* 128 output columns per block */
const int MIN_BLOCKS = 4; /* per SM: 32 warps keep loads in flight (<= 64 registers; 3 for the
                             colour gradients, whose 48 sums would spill) */
const size_t SMEM_LIMIT = 48 * 1024; /* no opt-in attribute: launch stays a plain launch */

/* The kernel's parameters: the caller's args and the weights zero-padded and
 * centred to ks x ks: w[g * ks * ks + i * ks + j]. */
struct direct_params {
    fv__cuda_direct_args a;
    int ks;
    float w[2 * FV__DIRECT_K];
};
static_assert(sizeof(direct_params) <= 4096, "kernel parameters fit the classic 4 KB");

template <int KS> struct geom {
    static const int RY = KS <= 7 ? 2 : 1; /* output rows per thread */
    static const int TH = BY * RY;         /* output rows per block */
    static const int HALO = (KS - 1) / 2;
    static const int NQ = (PX + KS - 1 + 3) / 4; /* float4 per window */
    static const int PITCH = TW - PX + 4 * NQ;   /* floats per tile row: >= TW + KS - 1 */
    static const int TILE_H = TH + KS - 1;
    static const int NCOL = (PITCH + BX - 1) / BX; /* loader columns per thread */
    static const int UNROLL_ROWS = KS <= 7 ? RY + KS - 1 : 1;
};
} // namespace

static __device__ __forceinline__ int is_yuv(fv_pixel_format f) {
    return f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY || f == FV_PIXEL_NV12;
}

/* The packed values of pixel (x, y) (inside the frame) as the FUSED engine
 * holds them: bytes as they are, YUV-converted values on fv__yuv_grid. */
static __device__ __forceinline__ void pixel_f16(const fv__cuda_direct_args &a, int x, int y,
                                                 float v[3]) {
    fv__read_pixel(a.in_format, a.in + (size_t)y * a.in_stride, a.uv, a.uv_stride, x, y, a.in_c, v);
    if (is_yuv(a.in_format)) {
        v[0] = fv__yuv_grid(v[0]);
        if (a.in_c == 3) v[1] = fv__yuv_grid(v[1]), v[2] = fv__yuv_grid(v[2]);
    }
}

/* Stores n (4, 12 or 16) bytes at p with the widest stores p's alignment
 * allows. */
template <int N>
static __device__ __forceinline__ void store_run(unsigned char *p, const unsigned char (&b)[N]) {
    unsigned w[N / 4];
#pragma unroll
    for (int i = 0; i < N / 4; i++)
        w[i] = (unsigned)b[4 * i] | (unsigned)b[4 * i + 1] << 8 | (unsigned)b[4 * i + 2] << 16 |
               (unsigned)b[4 * i + 3] << 24;
    const uintptr_t at = (uintptr_t)p;
    if (N == 16 && at % 16 == 0) {
        *(uint4 *)p =
            make_uint4(w[0], w[N / 4 > 1 ? 1 : 0], w[N / 4 > 2 ? 2 : 0], w[N / 4 > 3 ? 3 : 0]);
    } else if (N % 8 == 0 && at % 8 == 0) {
#pragma unroll
        for (int i = 0; i < N / 8; i++)
            ((uint2 *)p)[i] = make_uint2(w[2 * i], w[2 * i + 1]);
    } else if (at % 4 == 0) {
#pragma unroll
        for (int i = 0; i < N / 4; i++)
            ((unsigned *)p)[i] = w[i];
    } else {
#pragma unroll
        for (int i = 0; i < N; i++)
            p[i] = b[i];
    }
}

/* P: planes (edge channels whose sums are kept: 1, or 3 for COLOR from a
 * colour input); G: kernels (2 for gradient pairs). */
template <int KS, int P, int G>
static __global__ void __launch_bounds__(THREADS, P *G >= 6 ? 3 : MIN_BLOCKS)
    filter_direct_kernel(direct_params prm) {
    /* launched early (pdl.cuh): the frame only once the kernels before are
     * done */
    fv_k::pdl_wait();
    if (prm.a.early == 2) fv_k::pdl_release();
    typedef geom<KS> T;
    const fv__cuda_direct_args &a = prm.a;
    extern __shared__ __align__(16) float dsm[];
    float *tile = dsm;                          /* P planes of TILE_H x PITCH */
    float *ws = dsm + P * T::TILE_H * T::PITCH; /* G x KS x KS */
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * T::TH;

    for (int i = tid; i < G * KS * KS; i += THREADS)
        ws[i] = prm.w[i];
    /* 1. the tile */
    const int yuv = is_yuv(a.in_format);
    for (int row = ty; row < T::TILE_H; row += BY) {
        const int gy = y0 - T::HALO + row;
        const bool row_in = gy >= 0 && gy < a.height;
#pragma unroll
        for (int q = 0; q < T::NCOL; q++) {
            const int col = tx + q * BX;
            if (col >= T::PITCH) break;
            const int gx = x0 - T::HALO + col;
            float v[3] = {0.0f, 0.0f, 0.0f};
            if (row_in && gx >= 0 && gx < a.width) {
                fv__read_pixel(a.in_format, a.in + (size_t)gy * a.in_stride, a.uv, a.uv_stride, gx,
                               gy, a.in_c, v);
                if (yuv) {
                    v[0] = fv__yuv_grid(v[0]);
                    if (a.in_c == 3) v[1] = fv__yuv_grid(v[1]), v[2] = fv__yuv_grid(v[2]);
                }
            }
            float *t = tile + row * T::PITCH + col;
            if (P == 3) {
                t[0] = v[0];
                t[T::TILE_H * T::PITCH] = v[1];
                t[2 * T::TILE_H * T::PITCH] = v[2];
            } else {
                t[0] = a.in_c == 3 ? fv__add(fv__add(v[0], v[1]), v[2]) : v[0];
            }
        }
    }
    __syncthreads();

    /* 2. the convolution */
    float acc[T::RY][P][G][PX];
#pragma unroll
    for (int ry = 0; ry < T::RY; ry++)
#pragma unroll
        for (int p = 0; p < P; p++)
#pragma unroll
            for (int g = 0; g < G; g++)
#pragma unroll
                for (int j = 0; j < PX; j++)
                    acc[ry][p][g][j] = 0.0f;
#pragma unroll
    for (int p = 0; p < P; p++) {
        const float *plane = tile + p * T::TILE_H * T::PITCH + tx * PX;
#pragma unroll T::UNROLL_ROWS
        for (int i = 0; i < T::RY + KS - 1; i++) {
            float win[4 * T::NQ];
            const float4 *src = (const float4 *)(plane + (ty * T::RY + i) * T::PITCH);
#pragma unroll
            for (int q = 0; q < T::NQ; q++) {
                const float4 f = src[q];
                win[4 * q] = f.x, win[4 * q + 1] = f.y, win[4 * q + 2] = f.z, win[4 * q + 3] = f.w;
            }
#pragma unroll
            for (int ry = 0; ry < T::RY; ry++) {
                const int r = i - ry; /* kernel row */
                if (r < 0 || r >= KS) continue;
#pragma unroll
                for (int g = 0; g < G; g++)
#pragma unroll
                    for (int s = 0; s < KS; s++) {
                        const float wt = ws[(g * KS + r) * KS + s];
#pragma unroll
                        for (int j = 0; j < PX; j++)
                            acc[ry][p][g][j] = __fmaf_rn(wt, win[j + s], acc[ry][p][g][j]);
                    }
            }
        }
    }

    /* 3. edge step, unpack, store */
    const int pairs = G == 2;
#pragma unroll
    for (int ry = 0; ry < T::RY; ry++) {
        const int ty_out = ty * T::RY + ry, y = y0 + ty_out, xb = x0 + tx * PX;
        if (y >= a.height || xb >= a.width) continue;
        unsigned char ob[PX][4];
#pragma unroll
        for (int j = 0; j < PX; j++) {
            float base[3] = {0.0f, 0.0f, 0.0f};
            if (a.overlay) {
                const float *c = tile + (ty_out + T::HALO) * T::PITCH + tx * PX + j + T::HALO;
                if (P == 3)
                    base[0] = c[0], base[1] = c[T::TILE_H * T::PITCH],
                    base[2] = c[2 * T::TILE_H * T::PITCH];
                else if (a.in_c == 1)
                    base[0] = c[0];
                else if (xb + j < a.width) /* the plane holds sums: read the pixel again */
                    pixel_f16(a, xb + j, y, base);
            }
            float o[3];
#pragma unroll
            for (int jj = 0; jj < 3; jj++) {
                const int e = P == 1 ? 0 : jj;
                o[jj] = fv__edge_value(acc[ry][e][0][j], pairs ? acc[ry][e][G - 1][j] : 0.0f, pairs,
                                       a.gain, a.threshold);
                if (a.overlay)
                    o[jj] = fv__edge_overlay(o[jj], a.in_c == 1 ? base[0] : base[jj], 1.0f);
            }
            if (a.out_c < 3) o[1] = o[2] = o[0];
            if (a.out_format == FV_PIXEL_GRAY8) {
                ob[j][0] =
                    fv__unpack_byte(a.out_c >= 3 ? fv__mean3(o[0], o[1], o[2]) : o[0], 1.0f, 0.0f);
            } else {
                const int rev = a.out_format == FV_PIXEL_BGR24;
                ob[j][rev ? 2 : 0] = fv__unpack_byte(o[0], 1.0f, 0.0f);
                ob[j][1] = fv__unpack_byte(o[1], 1.0f, 0.0f);
                ob[j][rev ? 0 : 2] = fv__unpack_byte(o[2], 1.0f, 0.0f);
                ob[j][3] = 255;
            }
        }
        unsigned char *row = a.out + (size_t)y * a.out_stride;
        const bool full = xb + PX <= a.width;
        switch (a.out_format) {
        case FV_PIXEL_GRAY8: {
            if (full) {
                unsigned char b[PX];
#pragma unroll
                for (int j = 0; j < PX; j++)
                    b[j] = ob[j][0];
                store_run<PX>(row + xb, b);
            } else {
                for (int j = 0; j < PX && xb + j < a.width; j++)
                    row[xb + j] = ob[j][0];
            }
            break;
        }
        case FV_PIXEL_RGB24:
        case FV_PIXEL_BGR24: {
            unsigned char *p = row + 3 * (size_t)xb;
            if (full) {
                unsigned char b[3 * PX];
#pragma unroll
                for (int j = 0; j < PX; j++)
                    b[3 * j] = ob[j][0], b[3 * j + 1] = ob[j][1], b[3 * j + 2] = ob[j][2];
                store_run<3 * PX>(p, b);
            } else {
                for (int j = 0; j < PX && xb + j < a.width; j++)
                    p[3 * j] = ob[j][0], p[3 * j + 1] = ob[j][1], p[3 * j + 2] = ob[j][2];
            }
            break;
        }
        case FV_PIXEL_RGBA32: {
            unsigned char *p = row + 4 * (size_t)xb;
            if (full) {
                unsigned char b[4 * PX];
#pragma unroll
                for (int j = 0; j < PX; j++)
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        b[4 * j + c] = ob[j][c];
                store_run<4 * PX>(p, b);
            } else {
                for (int j = 0; j < PX && xb + j < a.width; j++)
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        p[4 * j + c] = ob[j][c];
            }
            break;
        }
        default:
            break;
        }
    }
}

/* The square kernel size the launch uses for r x s: the instantiated size
 * that holds both. */
static int padded_size(int r, int s) {
    const int k = r > s ? r : s;
    return k <= 3 ? 3 : k <= 5 ? 5 : k <= 7 ? 7 : k <= 9 ? 9 : 15;
}

template <int KS> static size_t smem_for(int planes, int g) {
    typedef geom<KS> T;
    return ((size_t)planes * T::TILE_H * T::PITCH + (size_t)g * KS * KS) * sizeof(float);
}

template <int KS, int P, int G> static fv_status launch(cudaStream_t s, const direct_params &prm) {
    typedef geom<KS> T;
    const size_t smem = smem_for<KS>(P, G);
    FV_REQUIRE(smem <= SMEM_LIMIT, FV_ERR_INTERNAL,
               "filter_direct kernel: %zu bytes of shared memory (at most %zu)", smem, SMEM_LIMIT);
    dim3 grid((unsigned)((prm.a.width + TW - 1) / TW),
              (unsigned)((prm.a.height + T::TH - 1) / T::TH));
    FV_REQUIRE(grid.y <= 65535, FV_ERR_NOT_SUPPORTED,
               "filter_direct kernel: height %d is too large (at most %d)", prm.a.height,
               65535 * T::TH);
    FV_CUDA_TRY(fv_k::launch(prm.a.early != 0, grid, dim3(BX, BY), smem, s,
                             filter_direct_kernel<KS, P, G>, prm));
    return FV_OK;
}

template <int KS> static fv_status launch_ks(cudaStream_t s, const direct_params &prm) {
    const int p = prm.a.m == 1 ? 1 : 3;
    if (prm.a.pairs) {
        /* gradient pairs are the built-in 3 x 3 kernels only */
        if (KS != 3) return fv__error(FV_ERR_INTERNAL, "filter_direct kernel: pairs need 3x3");
        return p == 1 ? launch<3, 1, 2>(s, prm) : launch<3, 3, 2>(s, prm);
    }
    return p == 1 ? launch<KS, 1, 1>(s, prm) : launch<KS, 3, 1>(s, prm);
}

extern "C" fv_status fv__cuda_filter_direct_launch(cudaStream_t s, const fv__cuda_direct_args *a) {
    FV_REQUIRE(a && a->in && a->out && a->width >= 1 && a->height >= 1 &&
                   fv__pixel_bytes(a->in_format) != 0 &&
                   a->in_stride >= (size_t)a->width * fv__pixel_bytes(a->in_format) &&
                   (a->in_format != FV_PIXEL_NV12 ||
                    (a->uv && a->uv_stride >= (size_t)a->width && a->height % 2 == 0)) &&
                   ((a->in_format != FV_PIXEL_YUYV && a->in_format != FV_PIXEL_UYVY &&
                     a->in_format != FV_PIXEL_NV12) ||
                    a->width % 2 == 0),
               FV_ERR_INTERNAL, "filter_direct kernel: bad input arguments");
    FV_REQUIRE((a->out_format == FV_PIXEL_GRAY8 || a->out_format == FV_PIXEL_RGB24 ||
                a->out_format == FV_PIXEL_BGR24 || a->out_format == FV_PIXEL_RGBA32) &&
                   a->out_stride >= (size_t)a->width * fv__pixel_bytes(a->out_format),
               FV_ERR_INTERNAL, "filter_direct kernel: bad output arguments");
    FV_REQUIRE((a->in_c == 1 || a->in_c == 3) && (a->m == 1 || a->m == a->in_c) &&
                   (a->out_c == 1 || a->out_c == 3) && (a->m == 1 || a->out_c == a->m) &&
                   (a->out_c == 1 || a->in_c == 3) && (a->pairs == 0 || a->pairs == 1) &&
                   a->r >= 1 && a->r <= FV_FILTER_MAX_KERNEL && a->r % 2 == 1 && a->s >= 1 &&
                   a->s <= FV_FILTER_MAX_KERNEL && a->s % 2 == 1 &&
                   (!a->pairs || (a->r == 3 && a->s == 3)) && a->wave_less >= 0,
               FV_ERR_INTERNAL,
               "filter_direct kernel: bad shape (in_c %d, m %d, out_c %d, pairs %d, %dx%d, "
               "wave_less %d)",
               a->in_c, a->m, a->out_c, a->pairs, a->r, a->s, a->wave_less);
    direct_params prm;
    memset(&prm, 0, sizeof prm);
    prm.a = *a;
    const int ks = padded_size(a->r, a->s);
    prm.ks = ks;
    const int dr = (ks - a->r) / 2, dc = (ks - a->s) / 2;
    for (int g = 0; g < (a->pairs ? 2 : 1); g++)
        for (int i = 0; i < a->r; i++)
            for (int j = 0; j < a->s; j++)
                prm.w[g * ks * ks + (i + dr) * ks + j + dc] = a->k[g][i * a->s + j];
    if (fv__cuda_filter_strip_fits(a)) return fv__cuda_filter_strip_launch(s, a, prm.w);
    switch (ks) {
    case 3:
        return launch_ks<3>(s, prm);
    case 5:
        return launch_ks<5>(s, prm);
    case 7:
        return launch_ks<7>(s, prm);
    case 9:
        return launch_ks<9>(s, prm);
    default:
        return launch_ks<15>(s, prm);
    }
}

/* How the DIRECT kernels are launched where the context launches early
 * (fv__cuda_direct_args.early): 1, each a programmatic dependent of the
 * kernel before it (pdl.cuh); FV_FILTER_PDL_RELEASE=1 (read once; an A/B
 * knob): 2, also releasing the next kernel as soon as all its blocks have
 * started. Measured (H200, session 57, one binary, graph replays of 30
 * applies, FV_NO_PDL=1 the base; Laplacian and Sobel of GRAY8, RGB24 and
 * NV12 to GRAY8 and RGB24 at 1080p and 4K, two runs each): 1 gave
 * 0.945-0.980x the time at 1080p and 0.976-0.992x at 4K, every case
 * faster (geometric mean 0.976; eager launches 0.78-0.90x at 1080p,
 * 0.86-0.95x at 4K); 2 gave 0.92-0.94x on GRAY8 and RGB24 Laplacians but
 * 1.10-1.11x on NV12 at 1080p (0.993), as 2 alone did on the H100
 * (RESULTS.md, 2026-11-28: 1080p GRAY8 Sobel 1.09x, YUYV 1.18-1.23x; not
 * kept then). Not measured further; a likely cause: released early, the
 * next kernel's blocks go to the SMs whose slots free first rather than
 * evenly, which an issue-bound kernel (NV12) feels. */
static int early_form(void) {
    static int form = 0;
    if (form == 0) {
        const char *v = getenv("FV_FILTER_PDL_RELEASE");
        form = v && strcmp(v, "1") == 0 ? 2 : 1;
    }
    return form;
}

extern "C" fv_status fv__cuda_filter_direct(fv_context *ctx, const fv_filter_desc *d,
                                            const float *k, int wave_less, const fv_image *in,
                                            const fv_image *out) {
    FV_TRY(fv__cuda_bind(ctx));
    fv__cuda_direct_args a;
    fv__filter_args_fill(&a, d, in, out);
    a.wave_less = wave_less;
    a.early = fv__cuda_state_of(ctx)->pdl ? early_form() : 0;
    const size_t rs = (size_t)a.r * a.s;
    memcpy(a.k[0], k, rs * sizeof(float));
    if (a.pairs) memcpy(a.k[1], k + rs, rs * sizeof(float));
    fv_status st = fv__cuda_filter_direct_launch(fv__cuda_stream(ctx), &a);
    return st == FV_OK ? st : fv__error_prefix(st, "filter (direct)");
}
