/* The DIRECT engine's strip kernel: kernels up to 3 x 3 (every built-in
 * kind) on every input format (bytes: GRAY8, RGB24, BGR24, RGBA32; YUV:
 * YUYV, UYVY, NV12), made to stream at the DRAM floor.
 *
 * Why not filter_direct.cu's tiled kernel: it stored each pixel's values as
 * FP32 in shared memory through byte loads and per-pixel format switches,
 * with 16-row tiles re-reading their halo, and kept few loads in flight
 * (about 500 GB/s at 1080p). Here:
 *   - a block of T threads owns a strip of BW = 512 columns and `strip`
 *     rows; every input row of the strip (plus one above and one below) is
 *     copied once, as raw bytes, with 16-byte cp.async copies of the
 *     aligned chunks that cover it, into a ring of NST stages of R rows:
 *     (NST - 1) * R rows are in flight while a stage is computed, with no
 *     registers held for them;
 *   - a thread makes N = 4 consecutive pixels of each output row. It reads
 *     its N + 2 pixels of a new input row from shared memory as words
 *     (funnel-shifted by the row's offset from 16 bytes), turns them into
 *     values with integer byte sums (exact) and one magic-number conversion,
 *     and keeps the last three rows' values in registers: each input row is
 *     converted once per thread, and an output row is emitted per input row;
 *   - the row loop comes in two forms, chosen per kernel by measurement
 *     (launch): unrolled by three, the window's registers turning roles
 *     with the rows (no moves), or rolled, one row an iteration and the
 *     window moved up a row (moves, but a third of the loop's code and
 *     16-40 fewer registers). The unrolled kernels are 78-178 KB of code;
 *     Nsight Compute had the unrolled RGB24 kernel's warps at 1080p waiting
 *     for an instruction 39% of the time (H100, docs/bench/RESULTS.md);
 *   - the launch sizes the strips so that the grid is one wave of resident
 *     blocks: every block starts its copies at once and none waits for a
 *     second wave.
 *
 *   - YUV: a thread's words start at the pair of its left halo pixel
 *     (column x0 - 2); NV12 stages each Y row with its UV row. Each pixel
 *     is converted as the FUSED engine does (fv__yuv_to_rgb, then
 *     fv__yuv_grid), in pixel_math.h's shorter form: the values scaled by
 *     2^-16, two pixels a time, rounded and clamped as packed FP16
 *     (fv__yuv_to_rgb_grid_scaled2); the weights carry 2^16.
 *
 * Exactness: the values are the FUSED engine's (bytes; the sum of three
 * bytes for one edge channel of a colour input, exact in integers; YUV
 * values on the 2^-8 grid and their sums, exact in FP32), the
 * convolution is FP32 FMAs of FP16 weights in this kernel's order (the
 * built-in kinds: the Laplacian's box form and the gradient pairs'
 * separable form, see plane_sums: 6.5 and 9 operations a pixel and plane
 * instead of 9 and 18, taken only where every sum is exact), and the
 * edge step is edge_math.h's sequence; where core/filter.c proves every
 * partial sum exact (direct_exact) the bytes are FUSED's, as for the tiled
 * kernel (see filter_direct.cu). Unpack is fv__unpack_byte's rule, in one
 * conversion instruction or in five without one (see unpack_byte). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "filter_direct_strip.cuh"
#include "cp_async.cuh"
#include "pdl.cuh"
#include "../cuda_check.h"
#include "../../edge_math.h"
#include "../../pixel_math.h"
#include "filter_strip_pixels.cuh"

namespace {
const int T = 128;              /* threads per block */
const int R = 3;                /* input rows per stage: the 3-row window's period, so the
                                   unrolled stage needs no register moves */
const int SMEM_ROOM = 28 << 10; /* a block's ring at most (see layout::NST) */
const int MAX_DEVICES = 64;     /* devices whose launch set-up is kept (launch) */
/* Output rows per block at least (halo rows: 2 per strip). At 1080p the
 * one-wave sizing gives strips of 4 to 9 rows on 132 SMs, which read
 * 22-50% more rows than they write and do little more than fill their ring
 * once; yet fewer, taller strips were slower: -DFV_FILTER_MIN_STRIP=8 (an
 * A/B knob) 1.09-1.21x at 1080p, 2 the same as 4 (H200, session 45). */
#ifndef FV_FILTER_MIN_STRIP
#define FV_FILTER_MIN_STRIP 4
#endif
const int MIN_STRIP = FV_FILTER_MIN_STRIP;
const int OBUF_WORDS = 6 * 32; /* a warp's output bytes of one row, RGB: 32 x 24 at most */

struct strip_params {
    int width, height, strip;
    const unsigned char *in;
    size_t in_stride;
    unsigned char *out;
    size_t out_stride;
    const unsigned char *uv; /* NV12: the UV plane */
    size_t uv_stride;
    fv_pixel_format out_format;
    int in_rev; /* BGR24 input: the bytes are B, G, R */
    int in_c, out_c, overlay;
    float gain, threshold;
    float w[2][9]; /* 3 x 3, zero-padded */
    float fc[2];   /* FORM_BOX: c, m - c; FORM_SEP: a, b (see form_of) */
    int wave_less; /* the launch's only (fv__cuda_direct_args.wave_less) */
    int early;     /* fv__cuda_direct_args.early */
};

/* How a thread sums its 3 x 3 taps (see form_of). FORM_SEP1: FORM_SEP
 * with a = 1 (Sobel, Prewitt) on byte input (FV_FILTER_SEP_UNIT). */
enum { FORM_TAPS = 0, FORM_BOX = 1, FORM_SEP = 2, FORM_SEP1 = 3 };
template <int FORM> struct is_sep { static const bool on = FORM == FORM_SEP || FORM == FORM_SEP1; };
/* FV_FILTER_SEP_UNIT (default 1; 0 for an A/B): gradient pairs of byte
 * input whose a is 1 (Sobel, Prewitt) get instances of their own
 * (FORM_SEP1, chosen at launch) that leave out the multiplications by a:
 * a column's smoothed value r0 + r2 + b r1 and a pixel's second gradient
 * d0 + d2 + b d1 are an FADD and an FFMA each instead of an FADD, an FMUL
 * and an FFMA (form_of: every partial sum exact, so the same floats). 18
 * of the about 230 instructions of an output row of 8 pixels and plane
 * (Nsight Compute, H200, session 47,
 * docs/bench/filter_sass_4k_colour_h200.txt). Predicted 0.95-0.98x for
 * Sobel and Prewitt of byte input; measured (H200, session 48, against 0,
 * Sobel, 4K and 1080p, two rounds): GRAY8 and RGB24 input 0.954-0.981x at
 * 4K (1080p 0.975-1.003x), RGBA32 0.982-0.990x, YUYV (not byte input:
 * FORM_SEP) 0.999-1.001x, the Laplacian 0.99-1.01x. Scharr (a = 3) and
 * YUV input (a carries the 2^16 of their scaled values) keep FORM_SEP. */
#ifndef FV_FILTER_SEP_UNIT
#define FV_FILTER_SEP_UNIT 1
#endif

/* FV_FILTER_INT_BOX (default 1; 0 for an A/B): the box form of byte input
 * (GRAY8, and the channel sums of RGB24 and RGBA32, to one edge plane) in
 * integers. The window holds the bytes (or sums) as integers, their bits
 * in the float registers: the read skips each pixel's magic-number FADD; a
 * column sum and a 3 x 3 sum are one three-input IADD3 each instead of two
 * FADDs; c * box + (m - c) * centre two IMADs, one adding the bits of 1.5
 * * 2^23, so that one FADD makes the float (|sum| < 2^16 by form_of:
 * exact). The same sums exactly, so the same floats. Predicted 0.92-0.95x
 * for the GRAY8 Laplacian (about 20 of 270 instructions for 8 pixels, from
 * the source); measured (H200, session 46, against 0): 0.98-0.99x for the
 * Laplacian of GRAY8, RGB24 and RGBA32, Sobel unchanged. Nsight Compute
 * then counted 29.1 instructions a pixel for the 4K GRAY8 Laplacian
 * (session 44: 38.6). */
#ifndef FV_FILTER_INT_BOX
#define FV_FILTER_INT_BOX 1
#endif
template <int BPP, int P, int F, int FORM> struct int_box {
    static const bool on = FV_FILTER_INT_BOX != 0 && F == F_BYTES && P == 1 && FORM == FORM_BOX;
};

/* Shared-memory layout for BPP input bytes per pixel (the Y plane's for
 * NV12), format F and P edge planes. */
template <int BPP, int F, int P> struct layout {
    static const int N = geo<P>::N, BW = geo<P>::N * T; /* BW: output columns per block */
    /* pixels staged left of the block's first column: the left halo, and
     * for YUV the pair it belongs to */
    static const int LEAD = F == F_BYTES ? 1 : 2;
    /* a staged sub-row: the chunks covering BW + 2 LEAD pixels from any
     * offset, and a word read past the last byte a thread uses; NV12 stages
     * the Y row and its UV row (the same bytes a pixel) */
    static const int SUB = ((BW + 2 * LEAD) * BPP + 32 + 15) / 16 * 16;
    static const int ROW = F == F_NV12 ? 2 * SUB : SUB;
    static const int NB = (N + 2 * LEAD) * BPP; /* bytes a thread reads per sub-row */
    static const int NW = (NB + 3) / 4;         /* their words */
    /* stages in the ring ((NST - 1) * R rows in flight): 4, or fewer to
     * fit SMEM_ROOM, which leaves shared memory for 7 blocks an SM. RGB24
     * and RGBA32 to one edge channel (rows of 3 and 4 KB) took 40 and 53
     * KB in 4 stages: 5 and 4 blocks an SM */
    static const int NST = 4 * R * ROW <= SMEM_ROOM ? 4 : 3 * R * ROW <= SMEM_ROOM ? 3 : 2;
    static const size_t SMEM = (size_t)NST * R * ROW;
};
} // namespace

/* Address of the block's first staged pixel (column bx0 - LEAD) in the row
 * at row (byte offsets within 16-byte chunks matter: see stage_sub). */
template <int BPP, int F>
static __device__ __forceinline__ uintptr_t row_start(const unsigned char *row, int bx0) {
    return (uintptr_t)row + (uintptr_t)((ptrdiff_t)(bx0 - (F == F_BYTES ? 1 : 2)) * BPP);
}

/* Issues the copies of one staged sub-row: the 16-byte chunks covering the
 * block's staged pixels of the row (bytes) at row, row_bytes long, into
 * dst. Chunks without a byte of the row are zero-filled, not read; in the
 * chunks the row begins or ends in, only the row's own bytes are read (byte
 * loads) and the rest is zero: the bytes around a row are another row's
 * padding or past the frame, which the caller may never have written
 * (compute-sanitizer's initcheck). */
template <int BPP, int F, int P, bool ROLL>
static __device__ __forceinline__ void stage_sub(unsigned char *dst, const unsigned char *rowp,
                                                 size_t row_bytes, int bx0) {
    /* chunk positions as 32-bit offsets from the row's first byte (a row
     * is under 2^31 bytes: fv__cuda_filter_strip_fits): a chunk's checks
     * are a few 32-bit compares, not 64-bit pointer ones (Nsight Compute,
     * H200: 30 instructions a chunk, 7% of the 4K GRAY8 Laplacian's) */
    const uintptr_t lo = row_start<BPP, F>(rowp, bx0);
    const int o0 = (int)((lo & ~(uintptr_t)15) - (uintptr_t)rowp), rb = (int)row_bytes;
    const int n =
        ((int)(lo & 15) + (layout<BPP, F, P>::BW + 2 * layout<BPP, F, P>::LEAD) * BPP + 15) / 16;
    const unsigned char *base = (const unsigned char *)(lo & ~(uintptr_t)15);
    for (int c = threadIdx.x; c < n; c += T) {
        const int o = o0 + 16 * c;
        const bool inside = o < rb && o > -16;
        const unsigned char *at = base + 16 * c;
        unsigned char *d = dst + 16 * c;
        if (inside && (o < 0 || o > rb - 16)) {
            /* a row's first or last chunk: rare (rolled kernels: kept
             * small, see filter_strip_kernel) */
#pragma unroll(ROLL ? 1 : 16)
            for (int b = 0; b < 16; b++)
                d[b] = o + b >= 0 && o + b < rb ? at[b] : 0;
        } else {
            fv_k::copy_async<16>(d, inside ? (const void *)at : (const void *)rowp, inside);
        }
    }
}

/* Flat staging (FV_FILTER_FLAT_STAGE: 0 none; 1, the default, GRAY8
 * input's kernels; 2 every kernel): stage_rows copies the stage's R rows
 * (NV12: and their UV rows) as one run of (sub-row, chunk) pairs over all
 * the block's threads, each chunk finding its row, instead of one loop a
 * row. Nsight Compute (H200, the 4K GRAY8 Laplacian,
 * docs/bench/filter_sass_4k_gray_h200.txt): every warp ran each row's
 * set-up and checks (about 30 instructions a row), though a GRAY8 row is
 * 66 chunks, which only warps 0-2 copy; flat, the set-up is a chunk's, and
 * the stage's 198 chunks take 2 turns of the block. Measured (H200,
 * docs/bench/RESULTS.md, session 45): 0.97-1.00x for GRAY8 input, but
 * 1.02-1.07x for RGB24, RGBA32 and YUYV input (rolled kernels 80 -> 96
 * registers; YUYV's row loop), NV12 mixed. */
#ifndef FV_FILTER_FLAT_STAGE
#define FV_FILTER_FLAT_STAGE 1
#endif
/* the kernels that stage flat: 1, GRAY8 input's; 2, every kernel */
template <int BPP, int F> struct flat_stage {
    static const bool on =
        FV_FILTER_FLAT_STAGE == 2 || (FV_FILTER_FLAT_STAGE == 1 && BPP == 1 && F == F_BYTES);
};

/* Staged padding (FV_FILTER_STAGED_PAD: 0 none; 1 GRAY8 input's kernels;
 * 2, the default, every byte input's): for byte input a zero byte is a
 * zero value, so the ring holds the frame's zero padding itself: rows
 * above and below the frame are staged as zeros (their chunks zero-filled,
 * at the nearest row's alignment), as the bytes left and right of a row
 * already are (stage_sub), and a row step reads every row and column
 * unmasked. Nsight Compute (H200, the 4K GRAY8 Laplacian, session 46): a
 * row step's guard, the window's zeroing (CS2R) and the column masks took
 * about 13 of 130 instructions for 8 pixels, at every row. YUV input keeps
 * the masks (zero bytes are not zero values there). Measured (H200,
 * session 46, against none): GRAY8 0.91-0.98x the time (with the planned
 * staging below 0.89-0.94x, but 1.02x for 4K Sobel to RGB24); RGB24 and
 * RGBA32 (=2 against =1) 0.94-0.98x,
 * though RGB24's threshold-free Laplacian kernel takes 96 registers, not 80. */
#ifndef FV_FILTER_STAGED_PAD
#define FV_FILTER_STAGED_PAD 2
#endif
template <int BPP, int F> struct staged_pad {
    static const bool on =
        F == F_BYTES && (FV_FILTER_STAGED_PAD == 2 || (FV_FILTER_STAGED_PAD == 1 && BPP == 1));
};

/* The row staged for input row gy of byte input with staged padding: the
 * nearest row of the frame (a row outside it is staged as zeros with that
 * row's alignment, and read with it). */
static __device__ __forceinline__ const unsigned char *staged_row(const strip_params &p, int gy) {
    return p.in + (size_t)min(max(gy, 0), p.height - 1) * p.in_stride;
}

/* Stage g's R rows (input rows ys - 1 + g * R ...) into stage, as one run
 * of (sub-row, chunk) pairs: each sub-row NC chunks from its first staged
 * byte's chunk (NC covers the staged bytes from any offset, and fits in
 * SUB; a last chunk past them is copied too, harmlessly). Chunks are
 * checked as in stage_sub. */
template <int BPP, int F, int P, bool ROLL>
static __device__ __forceinline__ void stage_flat(const strip_params &p, unsigned char *stage,
                                                  int g, int ys, int n_in, int bx0) {
    typedef layout<BPP, F, P> L;
    const int S = F == F_NV12 ? 2 : 1; /* sub-rows a row: NV12's Y and UV */
    const int SPAN = (L::BW + 2 * L::LEAD) * BPP;
    const int NC = (SPAN + 15 + 15) / 16;
    static_assert(NC * 16 <= L::SUB, "a sub-row's chunks fit its staging room");
    const int rb = p.width * BPP; /* NV12: the UV row has the Y row's bytes */
    for (int k = threadIdx.x; k < R * S * NC; k += T) {
        const int q = k / NC, c = k - q * NC, r = q / S, uv = q - r * S;
        const int i = g * R + r, gy = ys - 1 + i;
        const bool in_frame = gy >= 0 && gy < p.height;
        if (i >= n_in || (!staged_pad<BPP, F>::on && !in_frame)) continue;
        const unsigned char *rowp = uv                       ? p.uv + (size_t)(gy / 2) * p.uv_stride
                                    : staged_pad<BPP, F>::on ? staged_row(p, gy)
                                                             : p.in + (size_t)gy * p.in_stride;
        const int rr = in_frame ? rb : 0; /* a padding row: no byte of it is read */
        const uintptr_t lo = row_start<BPP, F>(rowp, bx0);
        const int o = (int)((lo & ~(uintptr_t)15) - (uintptr_t)rowp) + 16 * c;
        const bool inside = o < rr && o > -16;
        const unsigned char *at = (const unsigned char *)(lo & ~(uintptr_t)15) + 16 * c;
        unsigned char *d = stage + r * L::ROW + uv * L::SUB + 16 * c;
        if (inside && (o < 0 || o > rr - 16)) {
#pragma unroll(ROLL ? 1 : 16)
            for (int b = 0; b < 16; b++)
                d[b] = o + b >= 0 && o + b < rr ? at[b] : 0;
        } else {
            fv_k::copy_async<16>(d, inside ? (const void *)at : (const void *)rowp, inside);
        }
    }
}

/* A planned flat staging (FV_FILTER_FLAT_PLAN, default 1; 0 for an A/B):
 * where every row of byte input has the frame's alignment (a stride of 16
 * bytes' multiple, checked once a block), a thread's chunks sit at the same
 * place in every stage, and their offsets in the row and their checks
 * against its ends are the same in every row: planned once a thread
 * (flat_plan), each stage's chunk is then its row's address, one compare
 * for the strip's end, one for the frame's, and the copy. Nsight Compute
 * (H200, the 4K GRAY8 Laplacian, session 46): stage_flat's chunks took
 * 35-60 instructions each, 3.9 of 29 a pixel. */
#ifndef FV_FILTER_FLAT_PLAN
#define FV_FILTER_FLAT_PLAN 1
#endif
/* FV_FILTER_PLAN_OFFSET (default 1; 0 for an A/B): planned kernels get
 * instances of their own (PLAN, chosen at launch where the stride is 16
 * bytes' multiple), whose row steps read every staged row at the first
 * row's offset, computed once a thread, instead of from each row's
 * address: about 10 instructions a row step of 8 pixels (Nsight Compute,
 * H200, session 46; 1.2 of 25.5 a pixel for the 4K GRAY8 Laplacian).
 * ptxas sm_90 gave those instances 88-96 registers: they are bound to
 * FV_FILTER_PLAN_MINB blocks an SM (6: 80, no spills). Predicted 0.95-0.97x
 * for GRAY8 input at 4K; measured (H200, session 47, against 0): GRAY8
 * input 0.918-0.951x at 4K and 1080p, RGB24 (not planned) 0.995-1.004x. */
#ifndef FV_FILTER_PLAN_OFFSET
#define FV_FILTER_PLAN_OFFSET 1
#endif
const bool PLAN_OFFSET = FV_FILTER_PLAN_OFFSET != 0;
template <int BPP, int F, int P> struct flat_plan {
    typedef layout<BPP, F, P> L;
    static const bool on =
        FV_FILTER_FLAT_PLAN != 0 && flat_stage<BPP, F>::on && staged_pad<BPP, F>::on && F != F_NV12;
    static const int NC = ((L::BW + 2 * L::LEAD) * BPP + 15 + 15) / 16; /* as stage_flat's */
    static const int U = (R * NC + T - 1) / T; /* chunks a thread a stage, at most */
    static_assert(R * L::ROW < (1 << 16), "a chunk's place in a stage fits 16 bits");
    int off[U];       /* the chunk's first byte from its row's */
    unsigned meta[U]; /* bits 0-15: its place in the stage; 16-23: its row in the stage;
                         29: a chunk of this thread; 30: in the row (bytes of it);
                         31: partly (the row's first or last chunk) */
    /* the plan of a block whose first column is bx0 (byte input, rows of
     * the frame's alignment) */
    __device__ __forceinline__ void make(const strip_params &p, int bx0) {
        const uintptr_t lo = row_start<BPP, F>(p.in, bx0);
        const int o0 = (int)((lo & ~(uintptr_t)15) - (uintptr_t)p.in), rb = p.width * BPP;
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int k = threadIdx.x + u * T, r = k / NC, c = k - r * NC, o = o0 + 16 * c;
            off[u] = o;
            meta[u] = k < R * NC ? (unsigned)(r * L::ROW + 16 * c) | (unsigned)r << 16 | 1u << 29 |
                                       (unsigned)(o < rb && o > -16) << 30 |
                                       (unsigned)(o < 0 || o > rb - 16) << 31
                                 : 0u;
        }
    }
};

/* stage_flat by the plan fp (flat_plan). */
template <int BPP, int F, int P, bool ROLL>
static __device__ __forceinline__ void stage_planned(const strip_params &p, unsigned char *stage,
                                                     int g, int ys, int n_in,
                                                     const flat_plan<BPP, F, P> &fp) {
    const int rb = p.width * BPP;
#pragma unroll
    for (int u = 0; u < flat_plan<BPP, F, P>::U; u++) {
        const unsigned m = fp.meta[u];
        const int i = g * R + (int)(m >> 16 & 0xFFu), gy = ys - 1 + i;
        if (!(m >> 29 & 1u) || i >= n_in) continue;
        const unsigned char *rowp = staged_row(p, gy);
        const bool inside = gy >= 0 && gy < p.height && (m >> 30 & 1u);
        const int o = fp.off[u];
        unsigned char *d = stage + (m & 0xFFFFu);
        if (inside && (m >> 31)) {
#pragma unroll(ROLL ? 1 : 16)
            for (int b = 0; b < 16; b++)
                d[b] = o + b >= 0 && o + b < rb ? rowp[o + b] : 0;
        } else {
            fv_k::copy_async<16>(d, inside ? (const void *)(rowp + o) : (const void *)rowp, inside);
        }
    }
}

/* Issues the copies of stage g's rows (input rows ys - 1 + g * R ...) and
 * commits them as one group (empty past the strip: every thread commits the
 * same groups, so the waits count alike). */
template <int BPP, int F, int P, bool ROLL>
static __device__ __forceinline__ void stage_rows(const strip_params &p, unsigned char *sm, int g,
                                                  int ys, int n_in, int bx0,
                                                  const flat_plan<BPP, F, P> &fp, bool planned) {
    typedef layout<BPP, F, P> L;
    unsigned char *stage = sm + (g % L::NST) * R * L::ROW;
    if (flat_plan<BPP, F, P>::on && planned) {
        stage_planned<BPP, F, P, ROLL>(p, stage, g, ys, n_in, fp);
    } else if (flat_stage<BPP, F>::on) {
        stage_flat<BPP, F, P, ROLL>(p, stage, g, ys, n_in, bx0);
    } else {
#pragma unroll(ROLL ? 1 : R)
        for (int r = 0; r < R; r++) {
            const int i = g * R + r, gy = ys - 1 + i;
            const bool in_frame = gy >= 0 && gy < p.height;
            if (i >= n_in || (!staged_pad<BPP, F>::on && !in_frame)) continue;
            stage_sub<BPP, F, P, ROLL>(stage + r * L::ROW,
                                       staged_pad<BPP, F>::on ? staged_row(p, gy)
                                                              : p.in + (size_t)gy * p.in_stride,
                                       in_frame ? (size_t)p.width * BPP : 0, bx0);
            if (F == F_NV12)
                stage_sub<BPP, F, P, ROLL>(stage + r * L::ROW + L::SUB,
                                           p.uv + (size_t)(gy / 2) * p.uv_stride, (size_t)p.width,
                                           bx0);
        }
    }
    fv_k::copy_commit();
}

/* fv__unpack_byte(x, 1, 0), the output byte of edge value x, in the low
 * byte of a word whose other bits are zero. fv__unpack_byte takes t =
 * floor((x * 1 + 0) + 0.5), 0 for t <= 0 or NaN, 255 for t >= 255: x * 1
 * = x, and x + 0 differs from x only for x = -0, where + 0.5 gives 0.5
 * either way, so s = x + 0.5 is its sum. Two forms, the same bytes
 * (test_gpu_filter compares both with fv__unpack_byte on every float,
 * fv__cuda_filter_strip_unpack_mismatches):
 *   CVT: cvt.rmi.sat.u8 is the floor, the clamp and 0 for NaN in one
 *        conversion instruction;
 *   else: no conversion instruction: s clamped to [0, 255] (fmaxf(NaN, 0)
 *        = 0) before the floor, and the floor of c in [0, 255] is the low
 *        byte of c + 2^23 rounded toward zero (floats from 2^23 to 2^24
 *        are the integers): five instructions.
 * The kernels take CVT but for GRAY8 input (see emit_row). */
template <bool CVT, bool POS = false>
static __device__ __forceinline__ unsigned unpack_byte(float x) {
    if (CVT) {
        unsigned b;
        asm("cvt.rmi.sat.u8.f32 %0, %1;" : "=r"(b) : "f"(__fadd_rn(x, 0.5f)));
        return b;
    }
    /* POS: x in [0, +inf] or -0 (no NaN): s >= 0.5 needs no clamp at 0 */
    const float s = __fadd_rn(x, 0.5f);
    const float c = fminf(POS ? s : fmaxf(s, 0.0f), 255.0f);
    return __float_as_uint(__fadd_rz(c, 8388608.0f)) & 0xFFu;
}

/* The lean emit (FV_FILTER_LEAN_EMIT, default 1; 0 for an A/B): emit_row
 * without the instructions that cannot change its bytes here. Nsight
 * Compute (H200, the 4K GRAY8 Laplacian,
 * docs/bench/filter_sass_4k_gray_h200.txt): of an output row's 135
 * instructions (8 pixels), 17 were the threshold step (FSETP, FSEL a
 * pixel), run with threshold 0 too, and 8 the unpack's clamp at 0. Lean:
 * the kernels come in two instances, with and without the threshold step
 * (THR, chosen at launch; twice the code), and the unpack takes POS: every
 * value it gets is in [0, +inf], never NaN (m = |g| or a square root, >= 0
 * and finite, times gain > 0 and finite, core/filter.c; overlay and the
 * mean of three keep that). Measured (H200, session 45): 0.86-0.94x for
 * GRAY8 input, 0.94-1.00x for RGB24, YUYV, NV12; RGBA32 0.98x at 1080p,
 * 1.02x at 4K (its threshold-free kernels 80 -> 96 registers). */
#ifndef FV_FILTER_LEAN_EMIT
#define FV_FILTER_LEAN_EMIT 1
#endif
const bool LEAN = FV_FILTER_LEAN_EMIT != 0;

/* sqrtf(s) for s = 0 or 2^-16 <= s < 2^34, the sums of squares of
 * FORM_SEP's gradients (integer weights on values on the 2^-8 grid, bounded
 * by form_of), without sqrtf's branch and call for arguments outside the
 * normal range: the compiler's correctly rounded sequence for that range
 * (rsqrt.approx, then one Newton correction, as in its sm_90 code), and 0
 * for 0. Bit-identical to sqrtf over the whole range: test_gpu_filter
 * checks every float in it (fv__cuda_filter_strip_sqrt_mismatches). */
static __device__ __forceinline__ float sqrt_sep(float s) {
    float r, y, h;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(s));
    asm("mul.ftz.f32 %0, %1, %2;" : "=f"(y) : "f"(s), "f"(r));
    asm("mul.ftz.f32 %0, %1, 0f3F000000;" : "=f"(h) : "f"(r));
    const float e = __fmaf_rn(-y, y, s);
    const float m = __fmaf_rn(e, h, y);
    return s > 0.0f ? m : 0.0f;
}

/* fv__edge_value, with sqrt_sep for FORM_SEP's pairs. */
template <int FORM, int G>
static __device__ __forceinline__ float edge_value(float g0, float g1, float scale,
                                                   float threshold) {
    if (!is_sep<FORM>::on || G != 2) return fv__edge_value(g0, g1, G == 2, scale, threshold);
    return fv__edge_of_magnitude(sqrt_sep(fv__add(fv__mul(g0, g0), fv__mul(g1, g1))), scale,
                                 threshold);
}

/* Stores NB bytes (words w) at p with the widest stores p's alignment
 * allows. */
template <int NB>
static __device__ __forceinline__ void store_words(unsigned char *p, const unsigned (&w)[NB / 4]) {
    const uintptr_t at = (uintptr_t)p;
    if (NB == 16 && at % 16 == 0) {
        *(uint4 *)p = make_uint4(w[0], w[NB > 4 ? 1 : 0], w[NB > 8 ? 2 : 0], w[NB > 12 ? 3 : 0]);
    } else if (NB % 8 == 0 && at % 8 == 0) {
#pragma unroll
        for (int i = 0; i < NB / 8; i++)
            ((uint2 *)p)[i] = make_uint2(w[2 * i], w[2 * i + 1]);
    } else if (NB == 12 && at % 8 == 0) {
        *(uint2 *)p = make_uint2(w[0], w[1]);
        ((unsigned *)p)[2] = w[NB / 4 - 1];
    } else if (NB == 12 && at % 4 == 0) {
        ((unsigned *)p)[0] = w[0];
        *(uint2 *)(p + 4) = make_uint2(w[NB > 4 ? 1 : 0], w[NB / 4 - 1]);
    } else if (at % 4 == 0) {
#pragma unroll
        for (int i = 0; i < NB / 4; i++)
            ((unsigned *)p)[i] = w[i];
    } else {
#pragma unroll
        for (int i = 0; i < NB; i++)
            p[i] = (unsigned char)(w[i / 4] >> 8 * (i % 4));
    }
}

/* The kernel's per-thread constants, held in registers: the weights and
 * the edge step's scale and threshold (read once, not from the constant
 * bank at every use). */
template <int G> struct consts {
    float w[G][9];
    float f0, f1; /* the form's coefficients (strip_params.fc) */
    float gain, threshold;
};

/* The G sums of plane values (window rows r0, r1, r2: the thread's N + 2
 * columns from x0 - 1) for each of its N pixels, acc[j][g]. FORM_TAPS: the
 * 9 taps as FMAs, kernel order. FORM_BOX (the Laplacian's form, G = 1:
 * ring weight c, centre m; one plane): c * (3 x 3 sum) + (m - c) * centre, the 3 x 3
 * sums from column sums shared by neighbours. FORM_SEP (the gradient
 * pairs, G = 2: [-a 0 a; -b 0 b; -a 0 a] and its transpose): differences of
 * the columns' smoothed values a r0 + b r1 + a r2, and smoothing (a, b, a)
 * of the columns' differences r2 - r0. form_of takes the forms only where
 * every partial sum of every order is exact (integer weights, bounded
 * sums), so all three give the same floats. */
template <int FORM, int G, int N, bool I>
static __device__ __forceinline__ void plane_sums(const consts<G> &k, const float (&r0)[N + 2],
                                                  const float (&r1)[N + 2],
                                                  const float (&r2)[N + 2], float (&acc)[N][G]) {
    if (FORM == FORM_BOX && I) {
        /* integers (int_box): k.f0, k.f1 hold c and m - c as ints */
        int col[N + 2];
#pragma unroll
        for (int j = 0; j < N + 2; j++)
            col[j] = __float_as_int(r0[j]) + __float_as_int(r1[j]) + __float_as_int(r2[j]);
#pragma unroll
        for (int j = 0; j < N; j++) {
            const int t = __float_as_int(k.f0) * (col[j] + col[j + 1] + col[j + 2]) + 0x4B400000;
            acc[j][0] = __fadd_rn(
                __int_as_float(__float_as_int(k.f1) * __float_as_int(r1[j + 1]) + t), -12582912.0f);
        }
    } else if (FORM == FORM_BOX) {
        float col[N + 2];
#pragma unroll
        for (int j = 0; j < N + 2; j++)
            col[j] = __fadd_rn(__fadd_rn(r0[j], r1[j]), r2[j]);
#pragma unroll
        for (int j = 0; j < N; j++)
            acc[j][0] =
                __fmaf_rn(k.f1, r1[j + 1],
                          __fmul_rn(k.f0, __fadd_rn(__fadd_rn(col[j], col[j + 1]), col[j + 2])));
    } else if (is_sep<FORM>::on) {
        /* FORM_SEP1: a = 1 */
        float sm[N + 2], d[N + 2];
#pragma unroll
        for (int j = 0; j < N + 2; j++) {
            sm[j] = FORM == FORM_SEP1
                        ? __fmaf_rn(k.f1, r1[j], __fadd_rn(r0[j], r2[j]))
                        : __fmaf_rn(k.f0, __fadd_rn(r0[j], r2[j]), __fmul_rn(k.f1, r1[j]));
            d[j] = __fsub_rn(r2[j], r0[j]);
        }
#pragma unroll
        for (int j = 0; j < N; j++) {
            acc[j][0] = __fsub_rn(sm[j + 2], sm[j]);
            acc[j][G - 1] = FORM == FORM_SEP1 ? __fmaf_rn(k.f1, d[j + 1], __fadd_rn(d[j], d[j + 2]))
                                              : __fmaf_rn(k.f0, __fadd_rn(d[j], d[j + 2]),
                                                          __fmul_rn(k.f1, d[j + 1]));
        }
    } else {
#pragma unroll
        for (int j = 0; j < N; j++)
#pragma unroll
            for (int g = 0; g < G; g++) {
                float a = 0.0f;
#pragma unroll
                for (int s = 0; s < 3; s++)
                    a = __fmaf_rn(k.w[g][s], r0[j + s], a);
#pragma unroll
                for (int s = 0; s < 3; s++)
                    a = __fmaf_rn(k.w[g][3 + s], r1[j + s], a);
#pragma unroll
                for (int s = 0; s < 3; s++)
                    a = __fmaf_rn(k.w[g][6 + s], r2[j + s], a);
                acc[j][g] = a;
            }
    }
}

/* The kernels whose GRAY8 output of one edge plane is packed as it comes
 * (see emit_row). */
template <int BPP, int P, int F, int FORM> struct gray_out {
    static const bool on =
        P == 1 && (FORM != FORM_TAPS || F == F_YUYV || F == F_UYVY || (F == F_BYTES && BPP == 1));
};

/* FV_FILTER_HOIST (default 1; 0 for an A/B): emit_row's choice of the
 * packed GRAY8 path and its store's alignment, decided once a thread
 * (fast_gray: the frame's output pointer and stride aligned to the N-byte
 * store) instead of at every row, where Nsight Compute (H200, the 4K GRAY8
 * Laplacian) counted about 20 address, compare and branch instructions an
 * output row of 8 pixels. Unaligned GRAY8 output takes the general path.
 * Measured (H200, session 45): 0.97-0.98x for the GRAY8 Laplacian, YUYV
 * 0.98-0.99x, the rest within noise. */
#ifndef FV_FILTER_HOIST
#define FV_FILTER_HOIST 1
#endif
const bool HOIST = FV_FILTER_HOIST != 0;

/* emit_row's store paths decided once a thread (fast_color). */
enum { FAST_NONE = 0, FAST_GRAY = 1, FAST_RGB = 2, FAST_RGBA = 3, FAST_RGB_ANY = 4 };
/* FV_FILTER_FAST_COLOR (default 1; 0 for an A/B): one edge plane to RGB24,
 * BGR24 or RGBA32 without overlay, every byte of a pixel the same, has a
 * path of its own, decided once a thread: the bytes packed by byte
 * permutes (one PRMT a word) and stored without the per-row checks.
 * Nsight Compute (H200, session 47, the 4K RGB24 Sobel to RGB24): of the
 * 295 instructions of an output row of 8 pixels, about 50 packed the three
 * copies of each byte into words (shifts, ORs and register copies) and
 * about 50 chose and checked the coalesced store (the format switch, the
 * active mask, the alignment, the warp's vote) at every row; p.overlay was
 * reloaded from a spill at every row. RGB: the warp's 32 x 3 N bytes are
 * contiguous, staged through obuf and stored as 16-byte chunks (the warp
 * in the frame and the output 16-byte aligned, checked once). Predicted
 * 0.86-0.95x for one plane to RGB24 (8-14% of the instructions); measured
 * (H200, session 47, against 0, GRAY8, RGB24 and YUYV input, Laplacian
 * and Sobel, 4K and 1080p): to RGB24 0.80-0.98x (1080p YUYV 1.01-1.02x),
 * to RGBA32 0.67-0.92x, GRAY8 out 0.97-1.01x; Nsight Compute: the 4K RGB24
 * Sobel to RGB24 71.7 -> 63.3 instructions a pixel (the row's emit 295 ->
 * 227). */
/* -DFV_FILTER_FAST_COLOR=2 (an A/B value, not kept): the other outputs to
 * RGB24 and BGR24 (colour edges, overlay, FORM_TAPS) also decide their
 * coalesced store once (FAST_RGB_ANY: the active mask, the alignment and
 * the warp's vote out of the row loop); their bytes are packed as before.
 * Predicted 0.95-0.97x for colour edges to RGB24 (about 20 of 330
 * instructions an output row of 4 pixels and 3 planes); measured (H200,
 * session 48, against 1): colour edges to RGB24 0.990-1.018x, YUYV's one
 * plane to GRAY8 and RGB24 1.06-1.13x (those kernels' registers 124-126
 * -> 96, ptxas), the rest 0.98-1.03x. test_gpu_filter passes with it. */
#ifndef FV_FILTER_FAST_COLOR
#define FV_FILTER_FAST_COLOR 1
#endif
template <int P, int FORM>
static __device__ __forceinline__ int fast_color(const strip_params &p, int x0, int N,
                                                 bool warp_full) {
    /* FV_FILTER_FAST_COLOR=2: the rest to RGB24 and BGR24 (colour edges,
     * overlay, FORM_TAPS) keep their bytes' packing but store the warp's
     * row with no per-row checks (FAST_RGB_ANY) */
    if (FV_FILTER_FAST_COLOR >= 2 && HOIST && (P != 1 || FORM == FORM_TAPS || p.overlay))
        return (p.out_format == FV_PIXEL_RGB24 || p.out_format == FV_PIXEL_BGR24) && warp_full &&
                       ((unsigned)(uintptr_t)p.out | (unsigned)p.out_stride) % 16u == 0
                   ? FAST_RGB_ANY
                   : FAST_NONE;
    /* the built-in forms only: FORM_TAPS kernels took 8-32 more registers
     * with it (ptxas, sm_90), as with gray_out */
    if (!FV_FILTER_FAST_COLOR || !HOIST || P != 1 || FORM == FORM_TAPS || p.overlay)
        return FAST_NONE;
    const bool aligned = ((unsigned)(uintptr_t)p.out | (unsigned)p.out_stride) % 16u == 0;
    if (p.out_format == FV_PIXEL_RGBA32 && aligned && x0 + N <= p.width) return FAST_RGBA;
    if ((p.out_format == FV_PIXEL_RGB24 || p.out_format == FV_PIXEL_BGR24) && aligned && warp_full)
        return FAST_RGB;
    return FAST_NONE;
}

/* Output row y from the window w0, w1, w2 (rows y - 1, y, y + 1; the
 * thread's N + 2 columns from x0 - 1) and, for overlay of one edge channel
 * from colour input, the centre row's words dc (and NV12's UV words dcuv).
 * obuf: the warp's staging words for coalesced RGB stores. */
template <int BPP, int P, int G, int F, int FORM, bool THR>
static __device__ __forceinline__ void
emit_row(const strip_params &p, const consts<G> &k, int y, int x0,
         const float (&w0)[P][geo<P>::N + 2], const float (&w1)[P][geo<P>::N + 2],
         const float (&w2)[P][geo<P>::N + 2], const unsigned *dc, const unsigned *dcuv,
         unsigned *obuf, int fast) {
    const int N = geo<P>::N;
    float e[N][P]; /* edge values */
#pragma unroll
    for (int c = 0; c < P; c++) {
        float acc[N][G];
        plane_sums<FORM, G, N, int_box<BPP, P, F, FORM>::on>(k, w0[c], w1[c], w2[c], acc);
#pragma unroll
        for (int j = 0; j < N; j++)
            e[j][c] =
                edge_value<FORM, G>(acc[j][0], acc[j][G - 1], k.gain, THR ? k.threshold : 0.0f);
    }
    /* the unpack form (unpack_byte), by measurement (H100, docs/bench/RESULTS.md):
     * the conversion instruction made the unrolled GRAY8 kernels take 89-94
     * registers instead of 80 (5 blocks an SM, not 6) and 4-6% slower at 4K;
     * elsewhere it is 1-8% faster */
    const bool CVT = !(BPP == 1 && F == F_BYTES);
    /* GRAY8 out of the unrolled one-plane kernels (GRAY8, YUYV and UYVY
     * input) on its own: the bytes packed as they come (below, the three
     * channels' copies of each byte took 2 N moves a row): 0.89-0.95x the
     * time (H100, docs/bench/RESULTS.md). The rolled kernels (RGB24,
     * RGBA32, NV12 input) take it for the built-in forms only, 0.93-0.98x
     * (H200); it gave three FORM_TAPS instances 96 registers instead of 80
     * (ptxas, sm_90). Other outputs' stores this way were slower. */
    const bool gray_path = gray_out<BPP, P, F, FORM>::on;
    if (HOIST ? fast == FAST_GRAY
              : gray_path && !p.overlay && p.out_format == FV_PIXEL_GRAY8 && x0 + N <= p.width) {
        unsigned w[N / 4];
#pragma unroll
        for (int i = 0; i < N / 4; i++)
            w[i] = unpack_byte<CVT, LEAN>(e[4 * i][0]) |
                   unpack_byte<CVT, LEAN>(e[4 * i + 1][0]) << 8 |
                   unpack_byte<CVT, LEAN>(e[4 * i + 2][0]) << 16 |
                   unpack_byte<CVT, LEAN>(e[4 * i + 3][0]) << 24;
        unsigned char *at = p.out + (size_t)y * p.out_stride + x0;
        if (HOIST) {
            /* fast_gray: at is aligned to the store (N = 4, 8 or 16 bytes) */
            if (N == 16)
                *(uint4 *)at = make_uint4(w[0], w[N / 4 > 1 ? 1 : 0], w[N / 4 > 2 ? 2 : 0],
                                          w[N / 4 > 3 ? 3 : 0]);
            else if (N == 8)
                *(uint2 *)at = make_uint2(w[0], w[N / 4 > 1 ? 1 : 0]);
            else
                *(unsigned *)at = w[0];
        } else {
            store_words<N>(at, w);
        }
        return;
    }
    if (P == 1 && FORM != FORM_TAPS && (fast == FAST_RGB || fast == FAST_RGBA)) {
        /* one edge byte a pixel in every colour channel, the warp's or the
         * thread's stores aligned (fast_color): the words are byte
         * permutations of the N bytes (PRMT), one a word */
        unsigned v[N];
#pragma unroll
        for (int j = 0; j < N; j++)
            v[j] = unpack_byte<CVT, LEAN>(e[j][0]);
        unsigned char *row = p.out + (size_t)y * p.out_stride;
        if (fast == FAST_RGBA) {
#pragma unroll
            for (int i = 0; i < N / 4; i++)
                ((uint4 *)(row + 4 * (size_t)x0))[i] = make_uint4(
                    __byte_perm(v[4 * i], 0xFFu, 0x4000), __byte_perm(v[4 * i + 1], 0xFFu, 0x4000),
                    __byte_perm(v[4 * i + 2], 0xFFu, 0x4000),
                    __byte_perm(v[4 * i + 3], 0xFFu, 0x4000));
            return;
        }
        /* RGB24 and BGR24 alike: bytes v0 v0 v0 v1 | v1 v1 v2 v2 | v2 v3 v3 v3 */
        static_assert(3 * N / 4 * 32 <= OBUF_WORDS, "a warp's RGB row fits obuf");
        const unsigned lane = threadIdx.x & 31u;
#pragma unroll
        for (int i = 0; i < N / 4; i++) {
            obuf[3 * N / 4 * lane + 3 * i] = __byte_perm(v[4 * i], v[4 * i + 1], 0x4000);
            obuf[3 * N / 4 * lane + 3 * i + 1] = __byte_perm(v[4 * i + 1], v[4 * i + 2], 0x4400);
            obuf[3 * N / 4 * lane + 3 * i + 2] = __byte_perm(v[4 * i + 2], v[4 * i + 3], 0x4440);
        }
        __syncwarp();
        uint4 *qw = (uint4 *)(row + 3 * (size_t)(x0 - N * (int)lane));
#pragma unroll
        for (int c = 0; c < (6 * N + 31) / 32; c++) /* 6 N 16-byte chunks over 32 lanes */
            if (lane + 32u * c < 6u * N) qw[lane + 32 * c] = ((const uint4 *)obuf)[lane + 32 * c];
        __syncwarp(); /* obuf free for the next row */
        return;
    }
    /* bytes b[j][0..2] in the output's R, G, B order (GRAY8: b[j][0]) */
    unsigned b[N][3];
    if (P == 1 && !p.overlay) {
        /* one edge value a pixel, in every channel */
#pragma unroll
        for (int j = 0; j < N; j++)
            b[j][0] = b[j][1] = b[j][2] = unpack_byte<CVT, LEAN>(e[j][0]);
    } else {
#pragma unroll
        for (int j = 0; j < N; j++) {
            float o[3] = {e[j][0], e[j][P > 1 ? 1 : 0], e[j][P > 1 ? 2 : 0]};
            if (p.overlay) {
                float base[3];
                if (P == 3) {
                    /* YUV: the window's values are scaled by 2^-16 */
#pragma unroll
                    for (int c = 0; c < 3; c++)
                        base[c] = F == F_BYTES ? w1[P > 1 ? c : 0][j + 1]
                                               : __fmul_rn(w1[P > 1 ? c : 0][j + 1], 65536.0f);
                } else if (BPP == 1 && F == F_BYTES) {
                    /* int_box: the byte's bits */
                    base[0] = base[1] = base[2] =
                        int_box<BPP, P, F, FORM>::on
                            ? magic_value(__float_as_uint(w1[0][j + 1]) | (unsigned)MAGIC)
                            : w1[0][j + 1];
                } else {
                    /* the window holds channel sums: the centre pixel's bytes */
                    centre_rgb<BPP, F, 0, N>::get(j, dc, dcuv, p.in_rev, base);
                }
#pragma unroll
                for (int c = 0; c < 3; c++)
                    o[c] = fv__edge_overlay(o[c], base[c], 1.0f);
            }
            if (p.out_c < 3) o[1] = o[2] = o[0];
            if (p.out_format == FV_PIXEL_GRAY8) {
                b[j][0] = unpack_byte<CVT, LEAN>(p.out_c >= 3 ? fv__mean3(o[0], o[1], o[2]) : o[0]);
                b[j][1] = b[j][2] = b[j][0];
            } else {
                const int rev = p.out_format == FV_PIXEL_BGR24;
                b[j][0] = unpack_byte<CVT, LEAN>(rev ? o[2] : o[0]);
                b[j][1] = unpack_byte<CVT, LEAN>(o[1]);
                b[j][2] = unpack_byte<CVT, LEAN>(rev ? o[0] : o[2]);
            }
        }
    }
    unsigned char *row = p.out + (size_t)y * p.out_stride;
    const int full = x0 + N <= p.width;
    switch (p.out_format) {
    case FV_PIXEL_GRAY8: {
        unsigned w[N / 4];
#pragma unroll
        for (int i = 0; i < N / 4; i++)
            w[i] =
                b[4 * i][0] | b[4 * i + 1][0] << 8 | b[4 * i + 2][0] << 16 | b[4 * i + 3][0] << 24;
        if (full) {
            store_words<N>(row + x0, w);
        } else {
            for (int j = 0; j < N && x0 + j < p.width; j++)
                row[x0 + j] = (unsigned char)b[j][0];
        }
        break;
    }
    case FV_PIXEL_RGB24:
    case FV_PIXEL_BGR24: {
        /* 3 N bytes, as 3 N / 4 words */
        unsigned w[3 * N / 4];
#pragma unroll
        for (int i = 0; i < 3 * N / 4; i++) {
            unsigned x = 0;
#pragma unroll
            for (int q = 0; q < 4; q++)
                x |= b[(4 * i + q) / 3][(4 * i + q) % 3] << 8 * q;
            w[i] = x;
        }
        unsigned char *q = row + 3 * (size_t)x0;
        /* the warp's 32 x 3 N bytes are contiguous: where they are all in
         * the frame and start on 16 bytes, they go through the warp's
         * staging words as full 16-byte stores (3 N-byte stores per thread
         * would touch sectors twice) */
        const unsigned am = __activemask();
        const unsigned lane = threadIdx.x & 31u;
        unsigned char *qw = q - 3 * N * (size_t)lane;
        /* FAST_RGB_ANY (FV_FILTER_FAST_COLOR=2): decided once a thread */
        const bool coalesce =
            FV_FILTER_FAST_COLOR >= 2 && fast == FAST_RGB_ANY
                ? true
                : am == 0xFFFFFFFFu && ((uintptr_t)qw & 15) == 0 && __all_sync(am, full);
        if (coalesce) {
#pragma unroll
            for (int i = 0; i < 3 * N / 4; i++)
                obuf[3 * N / 4 * lane + i] = w[i];
            __syncwarp();
#pragma unroll
            for (int c = 0; c < (6 * N + 31) / 32; c++) /* 6 N 16-byte chunks over 32 lanes */
                if (lane + 32u * c < 6u * N)
                    ((uint4 *)qw)[lane + 32 * c] = ((const uint4 *)obuf)[lane + 32 * c];
            __syncwarp(); /* obuf free for the next row */
        } else if (full) {
            store_words<3 * N>(q, w);
        } else {
            for (int j = 0; j < N && x0 + j < p.width; j++)
                q[3 * j] = (unsigned char)b[j][0], q[3 * j + 1] = (unsigned char)b[j][1],
                      q[3 * j + 2] = (unsigned char)b[j][2];
        }
        break;
    }
    case FV_PIXEL_RGBA32: {
        unsigned char *q = row + 4 * (size_t)x0;
        unsigned w[N];
#pragma unroll
        for (int j = 0; j < N; j++)
            w[j] = b[j][0] | b[j][1] << 8 | b[j][2] << 16 | 0xFF000000u;
        if (full) {
#pragma unroll
            for (int i = 0; i < N / 4; i++) {
                const unsigned v[4] = {w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]};
                store_words<16>(q + 16 * i, v);
            }
        } else {
            for (int j = 0; j < N && x0 + j < p.width; j++)
                for (int c = 0; c < 4; c++)
                    q[4 * j + c] = (unsigned char)(w[j] >> 8 * c);
        }
        break;
    }
    default:
        break;
    }
}

/* The NW words of a staged sub-row from its byte o: funnel-shifted from
 * the word-aligned reads (o's offset in its word). */
template <int NW>
static __device__ __forceinline__ void words(const unsigned char *sub, int o, unsigned (&d)[NW]) {
    const unsigned *w32 = (const unsigned *)sub + (o >> 2);
    const unsigned sh = 8u * (unsigned)(o & 3);
    unsigned raw[NW + 1];
#pragma unroll
    for (int k = 0; k <= NW; k++)
        raw[k] = w32[k];
#pragma unroll
    for (int k = 0; k < NW; k++)
        d[k] = __funnelshift_r(raw[k], raw[k + 1], sh);
}

/* Input row i of the block's strip (stage row r): its values into w2 (the
 * window's oldest row's registers, now its newest) and its words into d2
 * (u2: NV12's UV words); then, from i = 2 on, output row ys + i - 2 from
 * the window w0, w1, w2 (w1's words d1, u1: the centre row's). */
template <int BPP, int P, int G, int F, int FORM, bool THR>
static __device__ __forceinline__ void
step(const strip_params &p, const consts<G> &k, const unsigned char *stage, int r, int i, int ys,
     int bx0, int x0, unsigned inside, bool all_inside, bool active, unsigned *obuf, int fast,
     bool planned, int o_plan, const float (&w0)[P][geo<P>::N + 2],
     const float (&w1)[P][geo<P>::N + 2], float (&w2)[P][geo<P>::N + 2],
     const unsigned (&d1)[layout<BPP, F, P>::NW], unsigned (&d2)[layout<BPP, F, P>::NW],
     const unsigned (&u1)[layout<BPP, F, P>::NW], unsigned (&u2)[layout<BPP, F, P>::NW]) {
    typedef layout<BPP, F, P> L;
    const int N = L::N;
    const int gy = ys - 1 + i;
    const bool pad = staged_pad<BPP, F>::on; /* the staged zeros are the padding */
    if (pad || (active && gy >= 0 && gy < p.height)) {
        const unsigned char *rowp = pad ? staged_row(p, gy) : p.in + (size_t)gy * p.in_stride;
        /* planned (FV_FILTER_PLAN_OFFSET): every row's offset is the first's */
        words<L::NW>(stage + r * L::ROW,
                     PLAN_OFFSET && planned
                         ? o_plan
                         : (int)(row_start<BPP, F>(rowp, bx0) & 15) + threadIdx.x * N * BPP,
                     d2);
        if (F == F_NV12) {
            const unsigned char *uvp = p.uv + (size_t)(gy / 2) * p.uv_stride;
            words<L::NW>(stage + r * L::ROW + L::SUB,
                         (int)(row_start<BPP, F>(uvp, bx0) & 15) + threadIdx.x * N, u2);
        }
        float v[P][N + 2];
        window_values<BPP, P, F, int_box<BPP, P, F, FORM>::on>::get(d2, u2, p.in_rev, v);
        if (pad || all_inside) {
#pragma unroll
            for (int c = 0; c < P; c++)
#pragma unroll
                for (int j = 0; j < N + 2; j++)
                    w2[c][j] = v[c][j];
        } else {
#pragma unroll
            for (int c = 0; c < P; c++)
#pragma unroll
                for (int j = 0; j < N + 2; j++)
                    w2[c][j] = inside >> j & 1u ? v[c][j] : 0.0f;
        }
    } else {
#pragma unroll
        for (int c = 0; c < P; c++)
#pragma unroll
            for (int j = 0; j < N + 2; j++)
                w2[c][j] = 0.0f;
    }
    if (active && i >= 2)
        emit_row<BPP, P, G, F, FORM, THR>(p, k, ys + i - 2, x0, w0, w1, w2, d1, u1, obuf, fast);
}

/* BPP: input bytes per pixel (1, 3, 4; YUYV and UYVY 2; NV12 1, its Y
 * plane); P: planes (1, or 3 for colour edges of a colour input); G:
 * kernels (2 for gradient pairs); F: the input format's family. */
/* -DFV_FILTER_RGBA_MINB=M (an A/B knob, default 0: none): at least M
 * blocks an SM for RGBA32 input to one edge plane, whose kernels take 96
 * registers (5 blocks) where the others take 80 (6); 0 leaves the bound
 * as it is (ptxas: __launch_bounds__(T, 0) is __launch_bounds__(T), while
 * (T, 1) lets the others take up to 128 registers). Measured (H200,
 * session 46), 6: 72-80 registers, RGBA32 Laplacian at 4K 0.98-0.99x, at
 * 1080p 1.01x, Sobel at 1080p 1.02-1.03x: not kept. */
#ifndef FV_FILTER_RGBA_MINB
#define FV_FILTER_RGBA_MINB 0
#endif
/* FV_FILTER_RGB_MINB (default 6; 0 for an A/B: none): at least that many
 * blocks an SM for RGB24 and BGR24 input's gradient pairs of one edge
 * plane in the separable form, which ptxas (sm_90) gave 80 registers and
 * 10 bytes of spills unbound; bound to 6, 80 and none. Measured (H200,
 * session 47, call 1, before FV_FILTER_FAST_COLOR, 6 for every RGB24
 * one-plane kernel against none): Sobel 0.969-0.986x; the box form
 * (Laplacian, 96 registers unbound) 0.99-1.01x, so it stays unbound. The
 * pairs-only form was not timed on its own. */
#ifndef FV_FILTER_RGB_MINB
#define FV_FILTER_RGB_MINB 6
#endif
/* FV_FILTER_PLAN_MINB (default 6): the planned instances' bound
 * (FV_FILTER_PLAN_OFFSET). 7 (72 registers, 12-28 bytes of spills,
 * ptxas): 4K GRAY8 1.10-1.16x the time of 6 (H200, session 48). */
#ifndef FV_FILTER_PLAN_MINB
#define FV_FILTER_PLAN_MINB 6
#endif
/* -DFV_FILTER_YUV_MINB=N (an A/B knob, default 0: none): at least N blocks
 * an SM for the YUV formats' one-plane kernels (unbound: YUYV's 124-126
 * registers, 4 blocks of 4 warps an SM; NV12's 80 with 4-8 bytes spilled).
 * Measured (H200, session 48, YUYV and NV12, Laplacian and Sobel to
 * GRAY8, RGB24, RGBA32, 4K and 1080p): 5 (96 registers, no spills) 1.05-
 * 1.16x the time; 4 (YUYV unchanged, NV12 96 and no spills, 5 blocks)
 * 1.01-1.04x at 4K, NV12 at 1080p 0.98x. The YUYV kernel issues at 0.81
 * of a scheduler's rate with its 4 warps (Nsight Compute, 4K Laplacian to
 * GRAY8: 63 instructions a pixel, 22% occupancy): bound by issue, not by
 * warps. */
#ifndef FV_FILTER_YUV_MINB
#define FV_FILTER_YUV_MINB 0
#endif
template <int BPP, int P, int G, int F, int FORM, bool PLAN> struct min_blocks {
    static const int n = PLAN_OFFSET && PLAN ? FV_FILTER_PLAN_MINB
                         : F != F_BYTES      ? (P == 1 ? FV_FILTER_YUV_MINB : 0)
                         : P != 1            ? 0
                         : BPP == 4          ? FV_FILTER_RGBA_MINB
                         : BPP == 3 && G == 2 && is_sep<FORM>::on ? FV_FILTER_RGB_MINB
                                                                  : 0;
};

template <int BPP, int P, int G, int F, int FORM, bool ROLL, bool THR, bool PLAN>
static __global__ void __launch_bounds__(T, (min_blocks<BPP, P, G, F, FORM, PLAN>::n))
    filter_strip_kernel(strip_params p) {
    /* launched early (pdl.cuh): the frame is read and written only once
     * the kernels before are done */
    fv_k::pdl_wait();
    if (p.early == 2) fv_k::pdl_release();
    typedef layout<BPP, F, P> L;
    const int N = L::N;
    extern __shared__ __align__(16) unsigned char sm[];
    const int bx0 = blockIdx.x * L::BW, x0 = bx0 + threadIdx.x * N;
    const int ys = blockIdx.y * p.strip;
    const int ye = min(ys + p.strip, p.height);
    const int n_in = ye - ys + 2; /* input rows ys - 1 .. ye */
    const int groups = (n_in + R - 1) / R;
    /* the planned staging: rows of the frame's alignment */
    flat_plan<BPP, F, P> fp;
    /* PLAN: the launch checked the stride (PLAN_OFFSET); else here */
    const bool planned = PLAN_OFFSET ? PLAN : flat_plan<BPP, F, P>::on && p.in_stride % 16 == 0;
    if (PLAN_OFFSET ? PLAN : flat_plan<BPP, F, P>::on) fp.make(p, bx0);
    const int o_plan = (int)(row_start<BPP, F>(p.in, bx0) & 15) + threadIdx.x * N * BPP;
#pragma unroll(ROLL ? 1 : L::NST - 1)
    for (int g = 0; g < L::NST - 1; g++)
        stage_rows<BPP, F, P, ROLL>(p, sm, g, ys, n_in, bx0, fp, planned);

    consts<G> k;
    /* YUV values come scaled by 2^-16 (yuv_values): the weights carry 2^16,
     * so that each product is the unscaled one, exactly */
    const float ws = F == F_BYTES ? 1.0f : 65536.0f;
    if (FORM == FORM_TAPS) {
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int i = 0; i < 9; i++) {
                k.w[g][i] = __fmul_rn(p.w[g][i], ws);
                asm("" : "+f"(k.w[g][i])); /* a register, never re-read from the parameters */
            }
    }
    k.f0 = __fmul_rn(p.fc[0], ws), k.f1 = __fmul_rn(p.fc[1], ws);
    if (int_box<BPP, P, F, FORM>::on) /* integers below 2^16 (form_of) */
        k.f0 = __int_as_float((int)p.fc[0]), k.f1 = __int_as_float((int)p.fc[1]);
    k.gain = p.gain, k.threshold = p.threshold;
    if (FORM == FORM_SEP1) /* a = 1: k.f0 not read */
        asm("" : "+f"(k.f1), "+f"(k.gain), "+f"(k.threshold));
    else
        asm("" : "+f"(k.f0), "+f"(k.f1), "+f"(k.gain), "+f"(k.threshold));

    /* columns x0 - 1 + j inside the frame (outside: value 0) */
    unsigned inside = 0;
#pragma unroll
    for (int j = 0; j < N + 2; j++)
        inside |= (unsigned)(x0 - 1 + j >= 0 && x0 - 1 + j < p.width) << j;
    const bool all_inside = inside == (1u << (N + 2)) - 1u;
    const bool active = x0 < p.width; /* has an output pixel (all copy and sync) */
    /* emit_row's packed GRAY8 path, decided once (HOIST) */
    const unsigned align = N >= 16 ? 16u : (unsigned)N;
    const bool fast_gray = HOIST && gray_out<BPP, P, F, FORM>::on && !p.overlay &&
                           p.out_format == FV_PIXEL_GRAY8 && x0 + N <= p.width &&
                           ((unsigned)(uintptr_t)p.out | (unsigned)p.out_stride) % align == 0;
    /* every lane of every warp votes (no thread has left; not under
     * fast_gray, which differs between the lanes of a warp the frame's
     * right edge cuts: that hung session 47's first try) */
    const bool warp_full = __all_sync(0xFFFFFFFFu, x0 + N <= p.width);
    const int fast = fast_gray ? FAST_GRAY : fast_color<P, FORM>(p, x0, N, warp_full);
    /* the warp's staging words for coalesced RGB stores (emit_row) */
    unsigned *obuf = (unsigned *)(sm + L::SMEM) + (threadIdx.x >> 5) * OBUF_WORDS;

    /* the window's three rows and each row's input words (the centre
     * row's: overlay's base) */
    float wa[P][N + 2], wb[P][N + 2], wc[P][N + 2];
    unsigned da[L::NW], db[L::NW], dc[L::NW], ua[L::NW], ub[L::NW], uc[L::NW];
#pragma unroll
    for (int c = 0; c < P; c++)
#pragma unroll
        for (int j = 0; j < N + 2; j++)
            wa[c][j] = wb[c][j] = wc[c][j] = 0.0f;
#pragma unroll
    for (int q = 0; q < L::NW; q++)
        da[q] = db[q] = dc[q] = ua[q] = ub[q] = uc[q] = 0u;

    if (ROLL) {
        /* one input row an iteration: rows a (oldest), b, c (the newest,
         * written by step), then moved up a row; the words of the centre
         * row (b) and the newest (c) (da, ua: unused) */
#pragma unroll 1
        for (int i = 0; i < n_in; i++) {
            const int g = i / R, r = i - g * R;
            if (r == 0) {
                fv_k::copy_wait<L::NST - 2>(); /* stage g has landed (this thread's copies) */
                __syncthreads();               /* everyone's; and stage g - 1 is free */
                stage_rows<BPP, F, P, ROLL>(p, sm, g + L::NST - 1, ys, n_in, bx0, fp, planned);
            }
            const unsigned char *stage = sm + (g % L::NST) * R * L::ROW;
            step<BPP, P, G, F, FORM, THR>(p, k, stage, r, i, ys, bx0, x0, inside, all_inside,
                                          active, obuf, fast, planned, o_plan, wa, wb, wc, db, dc,
                                          ub, uc);
#pragma unroll
            for (int c = 0; c < P; c++)
#pragma unroll
                for (int j = 0; j < N + 2; j++)
                    wa[c][j] = wb[c][j], wb[c][j] = wc[c][j];
#pragma unroll
            for (int q = 0; q < L::NW; q++)
                db[q] = dc[q], ub[q] = uc[q];
        }
    } else {
        /* oldest first before each group: A, B, C */
        for (int g = 0; g < groups; g++) {
            fv_k::copy_wait<L::NST - 2>(); /* stage g has landed (this thread's copies) */
            __syncthreads();               /* everyone's; and stage g - 1 is free */
            stage_rows<BPP, F, P, ROLL>(p, sm, g + L::NST - 1, ys, n_in, bx0, fp, planned);
            const unsigned char *stage = sm + (g % L::NST) * R * L::ROW;
            /* each input row takes the oldest row's registers: the roles turn
             * with the rows, and after R = 3 rows they are A, B, C again (no
             * register moves) */
            const int i = g * R;
            if (i >= n_in) break;
            step<BPP, P, G, F, FORM, THR>(p, k, stage, 0, i, ys, bx0, x0, inside, all_inside,
                                          active, obuf, fast, planned, o_plan, wb, wc, wa, dc, da,
                                          uc, ua);
            if (i + 1 >= n_in) break;
            step<BPP, P, G, F, FORM, THR>(p, k, stage, 1, i + 1, ys, bx0, x0, inside, all_inside,
                                          active, obuf, fast, planned, o_plan, wc, wa, wb, da, db,
                                          ua, ub);
            if (i + 2 >= n_in) break;
            step<BPP, P, G, F, FORM, THR>(p, k, stage, 2, i + 2, ys, bx0, x0, inside, all_inside,
                                          active, obuf, fast, planned, o_plan, wa, wb, wc, db, dc,
                                          ub, uc);
        }
    }
}

template <int BPP, int P, int G, int F, int FORM, bool ROLL, bool THR, bool PLAN>
static fv_status launch_k(cudaStream_t s, const strip_params &base) {
    typedef layout<BPP, F, P> L;
    const size_t smem = L::SMEM + (size_t)(T / 32) * OBUF_WORDS * 4;
    /* at most 64 KiB: within every supported GPU's opt-in limit (sm_75: 64 KiB) */
    FV_REQUIRE(smem <= 64 * 1024, FV_ERR_INTERNAL,
               "filter_direct strip kernel: %zu bytes of shared memory", smem);
    /* Per device, once: the kernel's attributes (set per device) and its
     * blocks resident per SM. Devices past the table are set up at every
     * launch (the same result, slower). */
    static int per_sm_of[MAX_DEVICES];
    int dev = 0, sms = 0;
    FV_CUDA_TRY(cudaGetDevice(&dev));
    int per_sm = dev >= 0 && dev < MAX_DEVICES ? per_sm_of[dev] : 0;
    if (per_sm == 0) {
        /* registers allow several blocks an SM: ask for the shared memory they need */
        FV_CUDA_TRY(cudaFuncSetAttribute(filter_strip_kernel<BPP, P, G, F, FORM, ROLL, THR, PLAN>,
                                         cudaFuncAttributePreferredSharedMemoryCarveout,
                                         (int)cudaSharedmemCarveoutMaxShared));
        FV_CUDA_TRY(cudaFuncSetAttribute(filter_strip_kernel<BPP, P, G, F, FORM, ROLL, THR, PLAN>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        int n = 0;
        FV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &n, filter_strip_kernel<BPP, P, G, F, FORM, ROLL, THR, PLAN>, T, smem));
        per_sm = n > 0 ? n : 1;
        if (dev >= 0 && dev < MAX_DEVICES) per_sm_of[dev] = per_sm;
    }
    FV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    strip_params p = base;
    /* one wave of wave blocks an SM: all that fit, or fewer (taller strips)
     * where fv_filter_create's AUTO timing found that faster. Measured
     * (H200, session 48, strips for 1 and 2 fewer blocks an SM against all,
     * a compile-time knob then; GRAY8, RGB24, YUYV, NV12, Laplacian and
     * Sobel to GRAY8 and RGB24, 4K and 1080p): 1 fewer, 1080p YUYV
     * 0.945-0.961x the time, 4K RGB24 Laplacian 0.955-0.974x, 4K GRAY8 and
     * NV12 1.045-1.058x (geometric mean 1.007x); 2 fewer, 4K RGB24
     * 0.966-0.992x, YUYV 1.04-1.20x (1.042x): the best height depends on
     * the kernel and the frame, so it is measured, not fixed. */
    const int wave = per_sm > base.wave_less ? per_sm - base.wave_less : 1;
    const long long gx = (base.width + L::BW - 1) / L::BW, slots = (long long)sms * wave;
    /* one wave: the strips as tall as the resident blocks allow */
    long long strip = (base.height * gx + slots - 1) / slots;
    if (strip < MIN_STRIP) strip = MIN_STRIP;
    if (strip < (base.height + 65534) / 65535) strip = (base.height + 65534) / 65535;
    p.strip = (int)strip;
    const dim3 grid((unsigned)gx, (unsigned)((base.height + strip - 1) / strip));
    FV_CUDA_TRY(fv_k::launch(p.early != 0, grid, dim3(T), smem, s,
                             filter_strip_kernel<BPP, P, G, F, FORM, ROLL, THR, PLAN>, p));
    return FV_OK;
}
/* The row loop each kernel takes (see filter_strip_kernel), by measurement
 * (H100, docs/bench/RESULTS.md): rolled where its fewer registers and
 * smaller code won (NV12; RGB, BGR and RGBA to one edge channel; gradient
 * pairs of three planes), unrolled by three elsewhere (GRAY8, YUYV and
 * UYVY to one edge channel, and the Laplacian of three planes: 4-41%
 * slower rolled). */
template <int BPP, int P, int G, int F, int FORM>
static fv_status launch(cudaStream_t s, const strip_params &base) {
    const bool roll = F == F_NV12 || (P == 3 && G == 2) || (F == F_BYTES && BPP >= 3 && P == 1);
    /* THR: the threshold step, only where there is a threshold (LEAN; else
     * one instance, with it) */
    /* PLAN: the planned staging (flat_plan), where every row has the
     * frame's alignment; an instance of its own, so that the row steps
     * take the first row's offset for every row (FV_FILTER_PLAN_OFFSET) */
    const bool pl = PLAN_OFFSET && flat_plan<BPP, F, P>::on;
    if (pl && base.in_stride % 16 == 0) {
        if (!(base.threshold > 0.0f)) return launch_k<BPP, P, G, F, FORM, roll, !LEAN, pl>(s, base);
        return launch_k<BPP, P, G, F, FORM, roll, true, pl>(s, base);
    }
    if (!(base.threshold > 0.0f)) return launch_k<BPP, P, G, F, FORM, roll, !LEAN, false>(s, base);
    return launch_k<BPP, P, G, F, FORM, roll, true, false>(s, base);
}
/* planes: 1 or 3 (colour edges of a colour input); form: form_of's (pairs:
 * FORM_SEP, or FORM_TAPS for two kernels of another form; one kernel:
 * FORM_BOX or FORM_TAPS) */
/* FORM_SEP's launch: FORM_SEP1's kernels where a = 1, if UNIT (byte input
 * with FV_FILTER_SEP_UNIT; no such kernels made otherwise) */
template <int BPP, int P, int F, bool UNIT> struct launch_sep {
    static fv_status run(cudaStream_t s, const strip_params &p) {
        return launch<BPP, P, 2, F, FORM_SEP>(s, p);
    }
};
template <int BPP, int P, int F> struct launch_sep<BPP, P, F, true> {
    static fv_status run(cudaStream_t s, const strip_params &p) {
        return p.fc[0] == 1.0f ? launch<BPP, P, 2, F, FORM_SEP1>(s, p)
                               : launch<BPP, P, 2, F, FORM_SEP>(s, p);
    }
};
template <int P, int BPP, int F>
static fv_status launch_planes(cudaStream_t s, const strip_params &p, int form, int pairs) {
    if (pairs)
        return form == FORM_SEP ? launch_sep < BPP, P, F,
               FV_FILTER_SEP_UNIT != 0 && F == F_BYTES > ::run(s, p)
                                : launch<BPP, P, 2, F, FORM_TAPS>(s, p);
    /* the box form for one plane only (form_of): no kernel made for three */
    return P == 1 && form == FORM_BOX             ? launch < BPP, P, 1, F,
           P == 1 ? FORM_BOX : FORM_TAPS > (s, p) : launch<BPP, P, 1, F, FORM_TAPS>(s, p);
}
template <int BPP, int F>
static fv_status launch_format(cudaStream_t s, const strip_params &p, int planes, int form,
                               int pairs) {
    return planes == 3 ? launch_planes<3, BPP, F>(s, p, form, pairs)
                       : launch_planes<1, BPP, F>(s, p, form, pairs);
}

/* The form a 3 x 3 kernel (pairs: two) can be summed in, and its
 * coefficients: FORM_BOX for one kernel [c c c; c m c; c c c], FORM_SEP for
 * [-a 0 a; -b 0 b; -a 0 a] with its transpose, c, a, b > 0, where every
 * weight is an integer and 765 * 2^8 * sum |w| < 2^24: then every partial
 * sum of the values (integers, or YUV values on the 2^-8 grid; a sum of
 * three channels at most 765) times any integer combination of the weights
 * up to sum |w| is exact in FP32, whatever the order, and the forms give the
 * taps' floats. Else FORM_TAPS. */
static int form_of(const float w[18], int pairs, int planes, float fc[2]) {
    double sum = 0;
    for (int i = 0; i < 9 * (pairs ? 2 : 1); i++) {
        if (w[i] != floorf(w[i])) return FORM_TAPS;
        sum += fabs((double)w[i]);
    }
    if (765.0 * 256.0 * sum >= 16777216.0) return FORM_TAPS;
    if (!pairs) {
        if (planes != 1) return FORM_TAPS; /* measured: the box form slower there */
        const float c = w[0], m = w[4];
        for (int i = 0; i < 9; i++)
            if (i != 4 && w[i] != c) return FORM_TAPS;
        if (!(c > 0)) return FORM_TAPS;
        fc[0] = c, fc[1] = m - c; /* integers below 2^24: exact */
        return FORM_BOX;
    }
    const float a = w[2], b = w[5];
    const float want[9] = {-a, 0, a, -b, 0, b, -a, 0, a};
    for (int i = 0; i < 9; i++)
        if (w[i] != want[i] || w[9 + i] != want[(i % 3) * 3 + i / 3]) return FORM_TAPS;
    if (!(a > 0 && b > 0)) return FORM_TAPS;
    fc[0] = a, fc[1] = b;
    return FORM_SEP;
}

extern "C" int fv__cuda_filter_strip_fits(const fv__cuda_direct_args *a) {
    const fv_pixel_format f = a->in_format;
    return (f == FV_PIXEL_GRAY8 || f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 ||
            f == FV_PIXEL_RGBA32 || f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY ||
            f == FV_PIXEL_NV12) &&
           (a->r == 1 || a->r == 3) && (a->s == 1 || a->s == 3) &&
           (long long)a->width * 4 < INT_MAX; /* stage_sub's 32-bit offsets */
}

extern "C" fv_status fv__cuda_filter_strip_launch(cudaStream_t s, const fv__cuda_direct_args *a,
                                                  const float w[18]) {
    FV_REQUIRE(a && w && fv__cuda_filter_strip_fits(a) &&
                   (a->in_c == 3) == (a->in_format != FV_PIXEL_GRAY8),
               FV_ERR_INTERNAL, "filter_direct strip kernel: arguments it does not run");
    strip_params p;
    memset(&p, 0, sizeof p);
    p.width = a->width, p.height = a->height;
    p.in = a->in, p.in_stride = a->in_stride;
    p.uv = a->uv, p.uv_stride = a->uv_stride;
    p.out = a->out, p.out_stride = a->out_stride, p.out_format = a->out_format;
    p.in_rev = a->in_format == FV_PIXEL_BGR24;
    p.in_c = a->in_c, p.out_c = a->out_c, p.overlay = a->overlay;
    p.gain = a->gain, p.threshold = a->threshold;
    p.wave_less = a->wave_less;
    p.early = a->early;
    memcpy(p.w, w, sizeof p.w);
    const int planes = a->m == 1 ? 1 : 3;
    const int form = form_of(w, a->pairs, planes, p.fc);
    switch (a->in_format) {
    case FV_PIXEL_GRAY8: /* one channel: no colour planes */
        return launch_planes<1, 1, F_BYTES>(s, p, form, a->pairs);
    case FV_PIXEL_RGBA32:
        return launch_format<4, F_BYTES>(s, p, planes, form, a->pairs);
    case FV_PIXEL_YUYV:
        return launch_format<2, F_YUYV>(s, p, planes, form, a->pairs);
    case FV_PIXEL_UYVY:
        return launch_format<2, F_UYVY>(s, p, planes, form, a->pairs);
    case FV_PIXEL_NV12:
        return launch_format<1, F_NV12>(s, p, planes, form, a->pairs);
    default:
        return launch_format<3, F_BYTES>(s, p, planes, form, a->pairs);
    }
}

/* The sqrt_sep and unpack_byte checks: one thread per float. */
static __global__ void sqrt_check_kernel(unsigned lo, unsigned n, unsigned long long *bad) {
    unsigned long long mine = 0;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float s = __uint_as_float(lo + i);
        mine += __float_as_uint(sqrt_sep(s)) != __float_as_uint(sqrtf(s));
    }
    if (mine) atomicAdd(bad, mine);
}
static __global__ void unpack_check_kernel(unsigned lo, unsigned n, unsigned long long *bad) {
    unsigned long long mine = 0;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float x = __uint_as_float(lo + i);
        const unsigned want = fv__unpack_byte(x, 1.0f, 0.0f);
        mine += (unpack_byte<true>(x) != want) + (unpack_byte<false>(x) != want);
        /* POS: the values it takes (see LEAN): +0 to +inf, and -0 */
        if (lo + i <= 0x7F800000u || lo + i == 0x80000000u)
            mine += unpack_byte<false, true>(x) != want;
    }
    if (mine) atomicAdd(bad, mine);
}

/* Counts the floats with bits in [lo, hi) where check (0: sqrt_sep, 1:
 * either form of unpack_byte, each counted) differs from its reference. */
static fv_status count_mismatches(int check, unsigned lo, unsigned hi,
                                  unsigned long long *mismatches) {
    FV_REQUIRE(mismatches && lo <= hi, FV_ERR_BAD_PARAM,
               "strip kernel check: mismatches NULL or the range [%u, %u) empty", lo, hi);
    unsigned long long *d = NULL;
    FV_CUDA_TRY(cudaMalloc(&d, sizeof *d));
    cudaError_t e = cudaMemset(d, 0, sizeof *d);
    if (e == cudaSuccess && hi > lo) {
        if (check == 0)
            sqrt_check_kernel<<<1024, 256>>>(lo, hi - lo, d);
        else
            unpack_check_kernel<<<1024, 256>>>(lo, hi - lo, d);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(mismatches, d, sizeof *d, cudaMemcpyDeviceToHost);
    cudaFree(d);
    FV_CUDA_TRY(e);
    return FV_OK;
}

extern "C" fv_status fv__cuda_filter_strip_sqrt_mismatches(unsigned lo, unsigned hi,
                                                           unsigned long long *mismatches) {
    return count_mismatches(0, lo, hi, mismatches);
}

extern "C" fv_status fv__cuda_filter_strip_unpack_mismatches(unsigned lo, unsigned hi,
                                                             unsigned long long *mismatches) {
    return count_mismatches(1, lo, hi, mismatches);
}
