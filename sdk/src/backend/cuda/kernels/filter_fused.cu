/* Fused filter: one kernel from u8 frame to u8 frame.
 *
 * A block (8 warps) makes an output tile of TH x TW = 8 x 64 pixels:
 *   1. B (the weights, kpad x 16 FP16, <= 22 KB) -> shared memory;
 *   2. the input tile + halo, (TH + R - 1) x (TW + S - 1) pixels, converted
 *      by pixel_math.h's rules to values 0..255 and stored as FP16 with the
 *      channels contiguous (bytes are exact in FP16); zero outside the frame
 *      (the convolution's zero padding);
 *   3. warp w takes output row w, 16 pixels at a time (one M = 16 fragment):
 *      per chunk of 32 k it writes the im2col rows (A[i][k] = tile value at
 *      the k-th (r, s, c) offset from pixel i; zero past R * S * C) to its
 *      scratch, then 2 wmma m16n16k16 steps (FP16 in, FP32 accumulate);
 *   4. the 16 x 16 accumulator goes to the scratch; lanes 0..15 each apply
 *      edge_math.h's rule to one pixel and write its bytes as unpack does.
 * Shared memory: kpad * 32 (B) + 8 KB (scratch) + kpad * 4 (im2col offsets)
 * + tile; 3x3 RGB: 1 + 8 + 0.1 + 3.9 KB; 15x15 RGB: 22 + 8 + 2.8 + 10 KB.
 * Global traffic: the frame once (plus the halo: (TH+R-1)(TW+S-1)/(TH TW),
 * 1.29x at 3x3, mostly from L2), the output once, B once per block (L2). */
#include <string.h>
#include <mma.h>
#include "filter_fused.cuh"
#include "filter_args.cuh"
#include "common.cuh"
#include "../cuda_check.h"
extern "C" { /* a C header without its own guard: fv__cuda_bind has C linkage */
#include "../cuda_internal.h"
}
#include "../../edge_math.h"
#include "../../pixel_math.h"

using namespace nvcuda;

namespace {
const int TW = 64, TH = 8; /* output tile: TH rows (one per warp) x TW columns */
const int WARPS = TH, THREADS = 32 * WARPS;
const int KC = 32;               /* k per im2col chunk: two mma steps */
const int SCRATCH = 16 * KC * 2; /* bytes per warp: A chunk (16 x KC FP16) or C (16 x 16 FP32) */
static_assert(SCRATCH >= 16 * FV__FUSED_N * 4, "scratch holds the accumulator tile");
const size_t SMEM_LIMIT = 48 * 1024; /* no opt-in attribute: launch stays a plain launch */
} // namespace

/* Edge step and unpack of one pixel: g, the conv outputs; px, its input
 * values (FP16, in_c channels) for the overlay. */
static __device__ __forceinline__ void write_pixel(const fv__cuda_filter_args &a, const float *g,
                                                   const __half *px, int x, int y) {
    const int gs = a.pairs ? 2 : 1;
    float o[3] = {0.0f, 0.0f, 0.0f}; /* fixed indices: registers, not a stack frame */
#pragma unroll
    for (int j = 0; j < 3; j++) {
        if (j >= a.out_c) break;
        const int e = a.m == 1 ? 0 : j;
        o[j] =
            fv__edge_value(g[e * gs], a.pairs ? g[e * gs + 1] : 0.0f, a.pairs, a.gain, a.threshold);
        if (a.overlay) o[j] = fv__edge_overlay(o[j], __half2float(px[a.in_c == 1 ? 0 : j]), 1.0f);
    }
    if (a.out_c < 3) o[1] = o[2] = o[0];
    unsigned char *row = a.out + (size_t)y * a.out_stride;
    switch (a.out_format) {
    case FV_PIXEL_GRAY8:
        row[x] = fv__unpack_byte(a.out_c >= 3 ? fv__mean3(o[0], o[1], o[2]) : o[0], 1.0f, 0.0f);
        break;
    case FV_PIXEL_RGB24:
    case FV_PIXEL_BGR24: {
        unsigned char *p = row + 3 * (size_t)x;
        const int rev = a.out_format == FV_PIXEL_BGR24;
        for (int c = 0; c < 3; c++)
            p[rev ? 2 - c : c] = fv__unpack_byte(o[c], 1.0f, 0.0f);
        break;
    }
    case FV_PIXEL_RGBA32: {
        uchar4 q;
        q.x = fv__unpack_byte(o[0], 1.0f, 0.0f);
        q.y = fv__unpack_byte(o[1], 1.0f, 0.0f);
        q.z = fv__unpack_byte(o[2], 1.0f, 0.0f);
        q.w = 255;
        unsigned char *p = row + 4 * (size_t)x;
        if ((uintptr_t)p % 4 == 0)
            *(uchar4 *)p = q;
        else
            p[0] = q.x, p[1] = q.y, p[2] = q.z, p[3] = q.w;
        break;
    }
    default:
        break;
    }
}

static __global__ void __launch_bounds__(THREADS) filter_fused_kernel(fv__cuda_filter_args a) {
    extern __shared__ __align__(128) unsigned char smem[];
    const int C = a.in_c, pr = (a.r - 1) / 2, ps = (a.s - 1) / 2;
    const int tile_w = TW + a.s - 1, tile_h = TH + a.r - 1;
    __half *bs = (__half *)smem;
    unsigned char *scratch = smem + (size_t)a.kpad * FV__FUSED_N * sizeof(__half);
    int *off = (int *)(scratch + WARPS * SCRATCH);
    __half *tile = (__half *)(off + a.kpad);
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH, tid = threadIdx.x;

    const uint4 *wg = (const uint4 *)a.w;
    for (int i = tid; i < a.kpad * FV__FUSED_N / 8; i += THREADS)
        ((uint4 *)bs)[i] = wg[i];
    const int rsc = a.r * a.s * C;
    for (int k = tid; k < a.kpad; k += THREADS) {
        int c = k % C, rs = k / C;
        off[k] = k < rsc ? ((rs / a.s) * tile_w + rs % a.s) * C + c : -1;
    }
    const bool yuv = a.in_format == FV_PIXEL_YUYV || a.in_format == FV_PIXEL_UYVY ||
                     a.in_format == FV_PIXEL_NV12;
    for (int i = tid; i < tile_h * tile_w; i += THREADS) {
        const int row = i / tile_w, col = i - row * tile_w;
        const int gy = y0 - pr + row, gx = x0 - ps + col;
        float v[3] = {0.0f, 0.0f, 0.0f}; /* the pixel's values before pack's scale, as pack.cu */
        if (gy >= 0 && gy < a.height && gx >= 0 && gx < a.width)
            fv__read_pixel(a.in_format, a.in + (size_t)gy * a.in_stride, a.uv, a.uv_stride, gx, gy,
                           a.in_c, v);
        __half *t = tile + (size_t)i * C;
#pragma unroll
        for (int c = 0; c < 3; c++)
            if (c < C) t[c] = __float2half_rn(yuv ? fv__yuv_grid(v[c]) : v[c]); /* exact */
    }
    __syncthreads();

    const int warp = tid >> 5, lane = tid & 31, ty = warp, y = y0 + ty;
    if (y >= a.height) return; /* no block-wide barrier follows */
    __half *as = (__half *)(scratch + warp * SCRATCH);
    float *cs = (float *)as;
    const __half zero = __float2half_rn(0.0f);
    for (int tx0 = 0; tx0 < TW && x0 + tx0 < a.width; tx0 += 16) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        const __half *src = tile + ((size_t)ty * tile_w + tx0) * C;
        for (int k0 = 0; k0 < a.kpad; k0 += KC) {
            const int k = k0 + lane;
            const int o = k < a.kpad ? off[k] : -1;
            __syncwarp(); /* the previous chunk (or accumulator tile) is read */
#pragma unroll
            for (int i = 0; i < 16; i++)
                as[i * KC + lane] = o >= 0 ? src[i * C + o] : zero;
            __syncwarp();
            const int steps = a.kpad - k0 >= KC ? KC / 16 : 1;
            for (int st = 0; st < steps; st++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
                wmma::load_matrix_sync(fa, as + st * 16, KC);
                wmma::load_matrix_sync(fb, bs + (size_t)(k0 + st * 16) * FV__FUSED_N, FV__FUSED_N);
                wmma::mma_sync(acc, fa, fb, acc);
            }
        }
        __syncwarp();
        wmma::store_matrix_sync(cs, acc, FV__FUSED_N, wmma::mem_row_major);
        __syncwarp();
        const int x = x0 + tx0 + lane;
        if (lane < 16 && x < a.width)
            write_pixel(a, cs + lane * FV__FUSED_N,
                        tile + ((size_t)(ty + pr) * tile_w + tx0 + lane + ps) * C, x, y);
    }
}

static size_t smem_bytes(const fv__cuda_filter_args *a) {
    size_t tile = (size_t)(TH + a->r - 1) * (TW + a->s - 1) * a->in_c * sizeof(__half);
    return (size_t)a->kpad * FV__FUSED_N * sizeof(__half) + (size_t)WARPS * SCRATCH +
           (size_t)a->kpad * sizeof(int) + tile;
}

extern "C" fv_status fv__cuda_filter_fused_launch(cudaStream_t s, const fv__cuda_filter_args *a) {
    FV_REQUIRE(a && a->in && a->out && a->w && (uintptr_t)a->w % 16 == 0 && a->width >= 1 &&
                   a->height >= 1 && fv__pixel_bytes(a->in_format) != 0 &&
                   a->in_stride >= (size_t)a->width * fv__pixel_bytes(a->in_format) &&
                   (a->in_format != FV_PIXEL_NV12 ||
                    (a->uv && a->uv_stride >= (size_t)a->width && a->height % 2 == 0)) &&
                   ((a->in_format != FV_PIXEL_YUYV && a->in_format != FV_PIXEL_UYVY &&
                     a->in_format != FV_PIXEL_NV12) ||
                    a->width % 2 == 0),
               FV_ERR_INTERNAL, "filter_fused kernel: bad input arguments");
    FV_REQUIRE((a->out_format == FV_PIXEL_GRAY8 || a->out_format == FV_PIXEL_RGB24 ||
                a->out_format == FV_PIXEL_BGR24 || a->out_format == FV_PIXEL_RGBA32) &&
                   a->out_stride >= (size_t)a->width * fv__pixel_bytes(a->out_format),
               FV_ERR_INTERNAL, "filter_fused kernel: bad output arguments");
    FV_REQUIRE((a->in_c == 1 || a->in_c == 3) && (a->m == 1 || a->m == a->in_c) &&
                   (a->out_c == 1 || a->out_c == 3) && (a->m == 1 || a->out_c == a->m) &&
                   (a->out_c == 1 || a->in_c == 3) && a->m * (a->pairs ? 2 : 1) <= FV__FUSED_N &&
                   a->r >= 1 && a->r <= FV_FILTER_MAX_KERNEL && a->r % 2 == 1 && a->s >= 1 &&
                   a->s <= FV_FILTER_MAX_KERNEL && a->s % 2 == 1 &&
                   a->kpad == FV_ROUND_UP(a->r * a->s * a->in_c, 16),
               FV_ERR_INTERNAL,
               "filter_fused kernel: bad shape (in_c %d, m %d, out_c %d, pairs %d, %dx%d, "
               "kpad %d)",
               a->in_c, a->m, a->out_c, a->pairs, a->r, a->s, a->kpad);
    const size_t smem = smem_bytes(a);
    FV_REQUIRE(smem <= SMEM_LIMIT, FV_ERR_INTERNAL,
               "filter_fused kernel: %zu bytes of shared memory (at most %zu)", smem, SMEM_LIMIT);
    dim3 grid((unsigned)((a->width + TW - 1) / TW), (unsigned)((a->height + TH - 1) / TH));
    FV_REQUIRE(grid.y <= 65535, FV_ERR_NOT_SUPPORTED,
               "filter_fused kernel: height %d is too large (at most %d)", a->height, 65535 * TH);
    filter_fused_kernel<<<grid, THREADS, smem, s>>>(*a);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_filter_fused(fv_context *ctx, const fv_filter_desc *d,
                                           const fv_tensor *w, const fv_image *in,
                                           const fv_image *out) {
    FV_TRY(fv__cuda_bind(ctx));
    fv__cuda_filter_args a;
    fv__filter_args_fill(&a, d, in, out);
    a.w = fv__tensor_ptr(w);
    a.kpad = FV_ROUND_UP(a.r * a.s * a.in_c, 16);
    fv_status st = fv__cuda_filter_fused_launch(fv__cuda_stream(ctx), &a);
    return st == FV_OK ? st : fv__error_prefix(st, "filter (fused)");
}
