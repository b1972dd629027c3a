/* fovea's Hopper conv kernel, pixels along N, warp-specialized (see
 * conv_wgmma.cuh).
 *
 * The rows form (conv_wgmma.cu) multiplies pixels (M = 64) by output
 * channels (N = K: 8 to 32), and wgmma of so small an N runs the tensor
 * cores far under their peak. Here the roles turn: the window (input rows
 * by TMA) is B, 128 pixels along N; the weights are A, M = 64 rows = OR =
 * 64 / K output rows of K channels. Input row iy of a step contributes to
 * output row b through filter row iy - b, so its A stacks the weights of
 * filter rows iy - b (zero outside 0..R-1): one wgmma m64n128k16 per input
 * row and 16-wide step feeds all OR output rows. The stacks are windows of
 * one sequence in shared memory (W_R-1 .. W_0 between zeros, read from
 * position C0 - iy), laid out once at set-up after the direct weights
 * (px_seq_build) and copied whole into each block by one bulk copy that
 * the consumers wait for while the producer asks for the first windows.
 * Both operands by descriptor, K-major without swizzling: B's core matrix
 * is 8 pixels of one tap (16 bytes a pixel), the next tap 16 bytes on (LBO
 * 16), the next 8 pixels 128 bytes on (SBO 128); A's is 8 output channels
 * x 8 positions (LBO 128, SBO 256).
 *
 * A block is four warpgroups (one block an SM): one thread of the first
 * asks for the window of each of the block's segments (SEG output rows x
 * 128 pixels: SEG + R - 1 rows of 144 pixels, three 768-byte boxes a row)
 * into three buffers, in order, on full / empty mbarriers; the three others
 * take turns at segments, each step of OR rows RIN x KS MMAs into its own
 * accumulators, then bias, activation and FP16 through stmatrix .trans into
 * its own staged NHWC tile, then 16-byte stores. While one consumer's sums
 * go out another's MMAs run, and no accumulator is in flight across a
 * loop (two sets alternating in one warpgroup made ptxas serialize the
 * MMAs, C7514; one warpgroup a block measured 1.17x the kept kernels'
 * time, its loads, MMAs and stores adding up: docs/bench/RESULTS.md,
 * session 51; three consumers measured 0.94x two's time at 1920x1080x8->32
 * 5x5 in the standalone harness, level at K 8: session 52).
 *
 * Two more forms (session 53). PK (K 32): a step's (input row, column)
 * taps in pairs, the second of a pair across a row's end by B's LBO, A a
 * 64 x 16 matrix a pair: 15 MMAs a step instead of 18 at 5x5 (0.93x the
 * time). CG 4 (32 channels read, 3x3, K 32, 2-row segments): the window
 * is one TMA box of NHWC rows of 64 bytes in the 64-byte swizzle, which
 * wgmma reads as a K-major B (the planes of 8 channels tried first, a 5-D
 * box of 16-byte rows, took 1.7x as long). Results: FP32 sums of the same
 * products as the other direct kernels in the tensor cores' order
 * (checked against the CPU).
 *
 * TS (8 channels read; the default since session 56): each step's tile is
 * staged dense in the swizzle that keeps stmatrix free of bank conflicts
 * and goes out as one TMA box, so the consumers issue no global stores and
 * read nothing back (the padded staging's read-back had 35% of its
 * wavefronts in bank conflicts). The 5x5 K 32 pair at 1920x1080: 0.90-0.94x
 * the time; K 8 level (RESULTS, session 56). K 16 (sessions 57-58,
 * 1920x1080x8->16): slower at 3x3 (px-8rows 1.12-1.17x, px-16rows
 * 1.04-1.06x; the mma.sync direct kernel wins that shape), faster at 5x5
 * for px-16rows (0.92x, the best candidate there), so it stays on at every
 * K. FV_CONV_PX_TMA_STORE=0 in the environment keeps the consumers' own
 * stores, for A/B timing. */
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdio.h>
#include "conv_wgmma_px.cuh"
#include "act8.cuh"
#include "wgmma.cuh"
#include "pdl.cuh"
#include "../cuda_check.h"
#include "../../activation.h"

namespace {

constexpr int NP = 128;   /* pixels a segment */
constexpr int PIECE = 48; /* pixels a TMA box of 8 channels: 768 bytes */
constexpr int CONS = 3;   /* consumer warpgroups (128 registers, no spills) */
constexpr int THREADS = 128 * (1 + CONS);

/* The geometry of kernel <NF (K / 8), R, SEG, CG (input channels / 8), PK
 * (taps in pairs across rows), TS (the staged tile out by one TMA box)>.
 * The window: RIN rows of WC pixels x 8 CG channels, NHWC as in global
 * memory (CG 4: in the 64-byte swizzle, rows of 64 bytes in atoms of 512,
 * as wgmma reads a K-major operand of 32 channels). */
template <int NF, int R, int SEG, int CG, int PK = 0, int TS = 0> struct geo {
    static constexpr int OR = 8 / NF,               /* output rows a step */
        KS = (R * 8 * CG + 15) / 16,                /* 16-wide steps a filter row */
        RIN = SEG + R - 1,                          /* input rows a segment */
        L = 2 * OR + R - 2,                         /* positions of the weight sequence */
        PITCH = 16 * NF + (NF > 1 && !TS ? 16 : 0), /* a staged pixel's bytes (TS: swizzled) */
        WC = CG == 1 ? 3 * PIECE : 136,             /* window pixels a row: NP + taps */
        NBUF = CG == 1 ? 3 : 4,                     /* window buffers */
        NPAIR = ((OR + R - 1) * R + 1) / 2;         /* PK: MMAs a step, a pair of taps each */
    static constexpr unsigned ROWU = CG * WC,       /* a window row in 16-byte units */
        WINB = RIN * ROWU * 16, SEQB = PK ? NPAIR * 2048u : KS * L * NF * 256,
                              STGB = OR * NP * PITCH;
    /* windows, the sequence, a staged tile a consumer (TS: from a
     * 1024-byte boundary), the bias (128 bytes), the mbarriers (128) */
    static constexpr size_t SMEM =
        NBUF * (size_t)WINB + SEQB + CONS * (size_t)STGB + 256 + (TS ? 1024 : 0);
    static_assert(WINB % (CG == 1 ? 128 : 512) == 0 && (2 * NBUF + 1) * 8 <= 128,
                  "window buffers (whole swizzle atoms), mbarriers");
};

struct px_args {
    __half *y;
    const __half *seq; /* the kernel's weight sequence (SEQB bytes: px_seq_build) */
    const float *bias; /* kp FP32 values, or NULL */
    int p, q, kp, k, ys, kr, ph, pw;
    int strips, segs_y;
    int total; /* work items: whole segments, then the last round's pieces */
    int nfull; /* items 0 .. nfull - 1: whole segments (of SEG rows) */
    int ppt;   /* pieces a segment after nfull (1: none split) */
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

/* d (+)= A * B, m64n128k16, both from shared memory; ACC 0: d = A * B. */
template <int NP_, int ACC> struct mma_ss;
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

__device__ __forceinline__ void bar_arrive(unsigned long long *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
/* A barrier of one consumer warpgroup's 128 threads. */
__device__ __forceinline__ void group_sync(int id) {
    asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}

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

/* Segment t as (image, first output row, first column). */
template <int SEG> __device__ __forceinline__ int3 seg_at(const px_args &a, int t) {
    const int sx = t % a.strips, rest = t / a.strips, sy = rest % a.segs_y;
    return make_int3(rest / a.segs_y, sy * SEG, sx * NP);
}

/* Work item t: (image, first output row, first column) and its steps of
 * OR output rows. Items below nfull are whole segments; the segments
 * after them (the last round's, which would leave most blocks idle while
 * a few finish) come as ppt pieces each, so that every block's share
 * differs by at most one piece (host: px_launch). Steps past the
 * frame's last row are left out (at least one kept, stores masked). */
template <int SEG, int OR> __device__ __forceinline__ int4 item_at(const px_args &a, int t) {
    int3 at;
    int steps = SEG / OR;
    if (t < a.nfull) {
        at = seg_at<SEG>(a, t);
    } else {
        const int q = t - a.nfull;
        steps /= a.ppt;
        at = seg_at<SEG>(a, a.nfull + q / a.ppt);
        at.y += (q % a.ppt) * steps * OR;
    }
    const int need = (a.p - at.y + OR - 1) / OR;
    return make_int4(at.x, at.y, at.z, need < 1 ? 1 : need < steps ? need : steps);
}

/* The box of the 4-D map tm at (c0 .. c3) into dst, completing on bar. */
__device__ __forceinline__ void tma_load_4d(void *dst, const CUtensorMap *tm,
                                            unsigned long long *bar, int c0, int c1, int c2,
                                            int c3) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(smem_u32(dst)),
                 "l"(reinterpret_cast<unsigned long long>(tm)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
                 "r"(smem_u32(bar))
                 : "memory");
}

/* The producer (one thread): every window of the block's segments, in
 * order. 8 channels: three boxes of PIECE pixels a row (the map's words);
 * 32: one box a window (32 channels, WC pixels, RIN rows, swizzled). */
template <int NF, int R, int SEG, int CG, int PK>
__device__ __forceinline__ void produce(const px_args &a, const CUtensorMap *tm, unsigned char *win,
                                        unsigned long long *full, unsigned long long *empty) {
    using g = geo<NF, R, SEG, CG, PK>;
    for (int i = 0, t = blockIdx.x; t < a.total; t += gridDim.x, i++) {
        const int b = i % g::NBUF;
        /* a fresh mbarrier's phase "-1" counts as complete: the first NBUF pass */
        bar_wait(&empty[b], ((unsigned)(i / g::NBUF) & 1u) ^ 1u);
        const int4 at = item_at<SEG, g::OR>(a, t);
        const int y0 = at.y - a.ph;
        if (CG == 1) {
            /* the item's rows only: its steps' input rows */
            const int rin = at.w * g::OR + R - 1;
            bar_expect(&full[b], (unsigned)rin * g::ROWU * 16);
            const int x0 = (at.z - a.pw) * 4;
            for (int row = 0; row < rin; row++)
                for (int pc = 0; pc < 3; pc++)
                    fv_k::tma_load_3d(win + b * g::WINB + (row * g::WC + pc * PIECE) * 16, tm,
                                      &full[b], x0 + pc * PIECE * 4, y0 + row, at.x);
        } else {
            bar_expect(&full[b], g::WINB);
            tma_load_4d(win + b * g::WINB, tm, &full[b], 0, at.z - a.pw, y0, at.x);
        }
    }
}

/* Consumer c (0 .. CONS - 1): items c, c + CONS, ... of the block. (A
 * step's stores overlapping the next step's MMAs within an item measured
 * level: RESULTS.md, session 55.) */
template <int NF, int R, int SEG, int CG, int PK, int TS, int ACT>
__device__ __forceinline__ void consume(const px_args &a, int c, const unsigned char *win,
                                        const unsigned char *seq, unsigned char *stg,
                                        unsigned long long *full, unsigned long long *empty,
                                        const float *sbias, const CUtensorMap *tmo) {
    using g = geo<NF, R, SEG, CG, PK, TS>;
    /* input rows a step, the sequence's position of W_0 */
    constexpr int RINS = g::OR + R - 1, C0 = g::OR + R - 2;
    const int tid = threadIdx.x & 127, warp = tid >> 5, lane = tid & 31;
    int ci[2];
    float bi[2];
#pragma unroll
    for (int i = 0; i < 2; i++)
        ci[i] = (16 * warp + (lane >> 2) + 8 * i) % (8 * NF), bi[i] = sbias[ci[i]];
    /* this lane's row address for stmatrix: matrix m = lane / 8 of each x4 */
    const int m = lane >> 3, mrow0 = 16 * warp + 8 * (m & 1);
    /* TS: pixel px's 16-byte chunk k at chunk k ^ (px / 2 % 4) (the 64-byte
     * swizzle, K 32) or k ^ (px / 4 % 2) (32-byte, K 16), which makes each
     * stmatrix conflict-free; a lane's px % 8 is lane % 8 */
    const int swz = !TS ? 0 : NF == 4 ? ((lane & 7) >> 1) & 3 : NF == 2 ? ((lane & 7) >> 2) & 1 : 0;
    const unsigned sbase =
        smem_u32(stg) + (unsigned)(((mrow0 / (8 * NF)) * NP + (lane & 7)) * g::PITCH +
                                   ((((mrow0 % (8 * NF)) / 8) ^ swz) * 16));
    float d[NP / 2]; /* no initial values: a step's first MMA ignores them */
    /* step st's MMAs on window buffer b, committed, not waited for */
    auto mmas = [&](int b, int st) {
        /* B: 8 channels, a core matrix is 8 pixels of one tap, the next
         * tap 16 bytes on (LBO), the next 8 pixels 128 bytes on (SBO);
         * 32 channels, 64-byte swizzle: 8 pixels' rows of 64 bytes an
         * atom, the next 8 pixels 512 bytes on (SBO; LBO unused). The
         * window buffers are whole atoms from a 1024-byte aligned base,
         * so a start inside an atom (a tap, the second 16 channels)
         * needs no base offset (measured: session 53) */
        uint64_t da = wg_desc(seq, 128, 256),
                 db = CG == 1
                          ? wg_desc(win + b * g::WINB + st * g::OR * g::ROWU * 16, PK ? 0 : 16, 128)
                          : wg_desc(win + b * g::WINB + st * g::OR * g::ROWU * 16, 16, 512) |
                                (2ull << 62);
        /* opaque: each MMA's descriptors derived here, not all held in
         * registers across the loop */
        asm volatile("" : "+l"(da), "+l"(db));
        wg_fence();
        if (PK) {
            /* pair j: the step's (input row, column) taps 2j, 2j + 1,
             * the second across a row's end by B's LBO; A a matrix a
             * pair (64 rows x 16) */
#pragma unroll
            for (int j = 0; j < g::NPAIR; j++) {
                const int t0 = 2 * j, t1 = 2 * j + 1 < RINS * R ? 2 * j + 1 : 2 * j;
                const int o0 = (t0 / R) * g::WC + t0 % R, o1 = (t1 / R) * g::WC + t1 % R;
                const uint64_t ea = da + (uint64_t)(j * 128);
                const uint64_t eb = db + (uint64_t)o0 + ((uint64_t)(o1 > o0 ? o1 - o0 : 1) << 16);
                if (j == 0)
                    mma_ss<NP, 0>::run(d, ea, eb);
                else
                    mma_ss<NP, 1>::run(d, ea, eb);
            }
        } else {
#pragma unroll
            for (int iy = 0; iy < RINS; iy++)
#pragma unroll
                for (int s = 0; s < g::KS; s++) {
                    /* descriptors count 16-byte units; step s: taps 2s, 2s + 1
                     * (8 channels), or tap s / 2's channels 16 (s % 2) on (32) */
                    const int so = CG == 1 ? 2 * s : (s / 2) * 4 + (s % 2) * 2;
                    const uint64_t ea = da + (uint64_t)((s * g::L + C0 - iy) * NF * 16);
                    const uint64_t eb = db + (uint64_t)(iy * g::ROWU + so);
                    if (iy == 0 && s == 0)
                        mma_ss<NP, 0>::run(d, ea, eb);
                    else
                        mma_ss<NP, 1>::run(d, ea, eb);
                }
        }
        wg_commit();
    };
    /* the committed MMAs waited for, their sums (FP16) into the staged tile */
    auto stage = [&]() {
        wg_wait<0>();
        wg_pin(d);
        if (TS) { /* the last step's box has been read out of the staged tile */
            if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
            group_sync(1 + c);
        }
#pragma unroll
        for (int j = 0; j < NP / 8; j += 2) {
            unsigned v[4];
#pragma unroll
            for (int x = 0; x < 4; x++) {
                const int ii = x & 1, jj = j + (x >> 1);
                v[x] = pair_act<ACT>(d[jj * 4 + 2 * ii], d[jj * 4 + 2 * ii + 1], bi[ii], ci[ii],
                                     a.k, a.alpha);
            }
            stsm_x4_trans(v, sbase + (unsigned)(8 * (j + (m >> 1)) * g::PITCH));
        }
        if (TS) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* seen by TMA */
        group_sync(1 + c); /* staged; every warp past its MMAs */
    };
    /* the staged tile of step st of item at, 16 bytes a thread at a time */
    auto store = [&](const int4 &at, int st) {
        if (TS) { /* one box: (channels, pixels, the step's rows), clipped at the frame's edges */
            if (tid == 0) {
                asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group "
                             "[%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                                 reinterpret_cast<unsigned long long>(tmo)),
                             "r"(smem_u32(stg)), "r"(0), "r"(at.z), "r"(at.y + st * g::OR),
                             "r"(at.x)
                             : "memory");
                asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
            }
            return;
        }
        constexpr int CH = g::OR * NP * NF; /* 16-byte pieces: 8 NP */
#pragma unroll
        for (int n = 0; n < CH / 128; n++) {
            const int e = tid + n * 128, cc = e % NF, px = (e / NF) % NP, bb = e / (NF * NP);
            const int oy = at.y + st * g::OR + bb, ox = at.z + px;
            if (oy < a.p && ox < a.q)
                *reinterpret_cast<uint4 *>(a.y + (((size_t)at.x * a.p + oy) * a.q + ox) * a.ys +
                                           cc * 8) =
                    *reinterpret_cast<const uint4 *>(stg + (bb * NP + px) * g::PITCH + cc * 16);
        }
        group_sync(1 + c); /* the staged tile read before the next is staged */
    };
    for (int i = c, t = blockIdx.x + c * (int)gridDim.x; t < a.total;
         i += CONS, t += CONS * (int)gridDim.x) {
        const int b = i % g::NBUF;
        bar_wait(&full[b], (unsigned)(i / g::NBUF) & 1u);
        const int4 at = item_at<SEG, g::OR>(a, t);
        for (int st = 0; st < at.w; st++) {
            mmas(b, st);
            stage();
            if (st == at.w - 1 && tid == 0) bar_arrive(&empty[b]); /* the window is free */
            store(at, st);
        }
    }
    if (TS && tid == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
#endif

/* The geometry of a kernel that exists, for its sequence (which does not
 * depend on SEG) */
template <int NF, int R, int CG, int PK> using geo_seq = geo<NF, R, CG == 4 ? 2 : 8, CG, PK>;

/* Element e (halves) of the weight sequence of kernel <NF, R, *, CG, PK>,
 * from the direct weights w ([r][kp / 8][kr][8]).
 * Unpaired: per 16-wide step s, positions x (0 .. L-1) of NF core-matrix
 * pairs (8 channels x 8 positions, two positions' halves of the step); x =
 * C0 - r holds filter row r, the rest zeros. PK: pair j's matrix, 64 rows
 * m (output row m / 8NF of the step, channel m % 8NF) x 16 (tap 2j + kk /
 * 8 of the step's (input row, column) taps, channel kk % 8), core matrices
 * 8 x 16 bytes (LBO 128, SBO 256); zero where the tap's filter row is
 * outside 0..R-1. */
template <int NF, int R, int CG, int PK>
__device__ __forceinline__ __half seq_elem(const __half *w, int kr, int e) {
    using g = geo_seq<NF, R, CG, PK>;
    if (PK) {
        const int j = e >> 10, f = e & 1023, el = f & 7, row = (f >> 3) & 7, kh = (f >> 6) & 1,
                  m = (f >> 7) * 8 + row, ob = m / (8 * NF), k = m % (8 * NF), t = 2 * j + kh;
        const int iy = t / R, x = t % R, r = iy - ob;
        return t < (g::OR + R - 1) * R && r >= 0 && r < R
                   ? w[((r * NF + k / 8) * kr + x * 8 + el) * 8 + k % 8]
                   : __float2half(0.0f);
    }
    constexpr int C0 = g::OR + R - 2; /* the sequence's position of W_0 */
    const int el = e & 7, ch = (e >> 3) & 7, jj = (e >> 6) & 1, rest = e >> 7;
    const int gg = rest % NF, sx = rest / NF, x = sx % g::L, st = sx / g::L, r = C0 - x;
    return r >= 0 && r < R ? w[((r * NF + gg) * kr + st * 16 + jj * 8 + el) * 8 + ch]
                           : __float2half(0.0f);
}

/* Lays out the sequence of kernel <NF, R, *, CG, PK> at out (set-up, once
 * per weights: each block of the conv kernel then copies it whole into
 * shared memory with one bulk copy; gathering it there, 2 bytes a thread,
 * took 4.5-7.7 us of each run on the H200, session 54). */
template <int NF, int R, int CG, int PK>
__global__ void px_seq_kernel(const __half *w, int kr, __half *out) {
    constexpr int N = (int)(geo_seq<NF, R, CG, PK>::SEQB / 2);
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < N; e += gridDim.x * blockDim.x)
        out[e] = seq_elem<NF, R, CG, PK>(w, kr, e);
}

#if FV_TMA
template <int NF, int R, int SEG, int CG, int PK, int TS>
__global__ void __launch_bounds__(THREADS, 1)
    conv_wgmma_px_kernel(const px_args a, const __grid_constant__ CUtensorMap tm,
                         const __grid_constant__ CUtensorMap tmo) {
#if FV_TMA && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fv_k::pdl_wait(); /* launched early (pdl.cuh): x and y only once the kernels before are done */
    using g = geo<NF, R, SEG, CG, PK, TS>;
    extern __shared__ __align__(1024) unsigned char smem[]; /* whole swizzle atoms */
    unsigned char *win = smem, *seq = smem + g::NBUF * g::WINB, *stg = seq + g::SEQB;
    if (TS) stg += (1024u - smem_u32(stg) % 1024u) % 1024u; /* the swizzle is of address bits */
    float *sbias = reinterpret_cast<float *>(stg + CONS * g::STGB);
    unsigned long long *full = reinterpret_cast<unsigned long long *>(sbias + 32),
                       *empty = full + g::NBUF, *sbar = empty + g::NBUF;
    const int wg = threadIdx.x >> 7;
    if (threadIdx.x == 0) {
        for (int b = 0; b < g::NBUF; b++)
            bar_init(&full[b]), bar_init(&empty[b]);
        bar_init(sbar);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        /* the weight sequence, laid out at set-up: one bulk copy, while the
         * producer goes on to the windows (the consumers wait on sbar) */
        bar_expect(sbar, g::SEQB);
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], "
                     "[%1], %2, [%3];\n" ::"r"(smem_u32(seq)),
                     "l"(a.seq), "r"(g::SEQB), "r"(smem_u32(sbar))
                     : "memory");
    }
    if (threadIdx.x < NF * 8) sbias[threadIdx.x] = a.bias ? a.bias[threadIdx.x] : 0.0f;
    __syncthreads(); /* the barriers' set-up and the bias seen by all */
    /* barrier 4: the producer's second warp tells the consumers that the
     * sequence has landed (a wait loop in the consumers themselves made
     * ptxas spill in <1, 5, 8>) */
    constexpr unsigned LANDED = 4, WAITERS = 32 + 128 * CONS;
    if (wg == 0) {
        if (threadIdx.x == 0) produce<NF, R, SEG, CG, PK>(a, &tm, win, full, empty);
        if (threadIdx.x >> 5 == 1) {
            bar_wait(sbar, 0u);
            __syncwarp(); /* bar.arrive is .aligned: the warp converged after its spins */
            asm volatile("bar.arrive %0, %1;\n" ::"r"(LANDED), "r"(WAITERS) : "memory");
        }
        return;
    }
    asm volatile("bar.sync %0, %1;\n" ::"r"(LANDED), "r"(WAITERS) : "memory");
    fv_k::with_act(a.act, [&](auto act) {
        consume<NF, R, SEG, CG, PK, TS, decltype(act)::value>(
            a, wg - 1, win, seq, stg + (wg - 1) * g::STGB, full, empty, sbias, &tmo);
    });
#endif
}

typedef void (*px_kernel_fn)(const px_args, const CUtensorMap, const CUtensorMap);

template <int NF, int R, int PK, int TS> px_kernel_fn pick_seg(int seg) {
    return seg == 8 ? conv_wgmma_px_kernel<NF, R, 8, 1, PK, TS>
                    : conv_wgmma_px_kernel<NF, R, 16, 1, PK, TS>;
}
template <int NF, int PK, int TS> px_kernel_fn pick_r(int r, int seg) {
    return r == 3 ? pick_seg<NF, 3, PK, TS>(seg) : pick_seg<NF, 5, PK, TS>(seg);
}
template <int TS> px_kernel_fn pick_ts(const fv__conv_direct_geom *g) {
    if (g->wp) return pick_r<4, 1, TS>(g->r, g->wn); /* taps in pairs: K 32 only */
    return g->kp == 8    ? pick_r<1, 0, TS>(g->r, g->wn)
           : g->kp == 16 ? pick_r<2, 0, TS>(g->r, g->wn)
                         : pick_r<4, 0, TS>(g->r, g->wn);
}
px_kernel_fn pick(const fv__conv_direct_geom *g) {
    if (g->cs == 32) return conv_wgmma_px_kernel<4, 3, 2, 4, 0, 0>;
    return g->ws ? pick_ts<1>(g) : pick_ts<0>(g);
}
#endif

template <int NF, int PK, int TS> size_t smem_r(int r, int seg) {
    return r == 3 ? (seg == 8 ? geo<NF, 3, 8, 1, PK, TS>::SMEM : geo<NF, 3, 16, 1, PK, TS>::SMEM)
                  : (seg == 8 ? geo<NF, 5, 8, 1, PK, TS>::SMEM : geo<NF, 5, 16, 1, PK, TS>::SMEM);
}
template <int TS> size_t smem_ts(const fv__conv_direct_geom *g) {
    if (g->wp) return smem_r<4, 1, TS>(g->r, g->wn);
    return g->kp == 8    ? smem_r<1, 0, TS>(g->r, g->wn)
           : g->kp == 16 ? smem_r<2, 0, TS>(g->r, g->wn)
                         : smem_r<4, 0, TS>(g->r, g->wn);
}

} // namespace

namespace fv_k {

bool px_shape_ok(const fv__conv_direct_geom *g) {
    const bool c8 = g->cs == 8 && g->cm == 8 && (g->wn == 8 || g->wn == 16) &&
                    (g->r == 3 || g->r == 5) && (g->kp == 8 || g->kp == 16 || g->kp == 32);
    const bool c32 = g->cs == 32 && g->cm == 32 && g->wn == 2 && g->r == 3 && g->kp == 32;
    return g->wg == 2 && (c8 || c32) && (!g->wp || (c8 && g->kp == 32)) && !g->pair && !g->pc &&
           !g->two && g->sh == 1 && g->sw == 1 && g->r == g->s && g->k <= g->kp && g->n >= 1 &&
           g->p >= 1 && g->q >= 1 && g->h >= 1 && g->w >= 1 &&
           (g->ys == 0 || (g->ys >= g->kp && g->ys % 8 == 0));
}

size_t px_smem(const fv__conv_direct_geom *g) {
    if (g->cs == 32) return geo<4, 3, 2, 4>::SMEM;
    return g->ws ? smem_ts<1>(g) : smem_ts<0>(g);
}

int px_threads(void) {
    return THREADS;
}

long px_tiles(const fv__conv_direct_geom *g) {
    return (long)((g->q + NP - 1) / NP) * ((g->p + g->wn - 1) / g->wn) * g->n;
}

const void *px_fn(const fv__conv_direct_geom *g) {
#if FV_TMA
    return reinterpret_cast<const void *>(pick(g));
#else
    (void)g;
    return nullptr;
#endif
}

/* The sequences after a form's direct weights (px_seq_bytes): the
 * unpaired kernel's first, then (K 32, 8 channels read) the paired one's,
 * each from a 128-byte boundary. */
namespace {
size_t round128(size_t b) {
    return (b + 127) / 128 * 128;
}
template <int NF, int CG, int PK> size_t seqb_r(int r) {
    return r == 3 ? geo_seq<NF, 3, CG, PK>::SEQB : geo_seq<NF, 5, CG, PK>::SEQB;
}
size_t seqb(int kp, int r, int cd, int pk) {
    if (cd == 32) return geo<4, 3, 2, 4, 0>::SEQB;
    if (pk) return seqb_r<4, 1, 1>(r);
    return kp == 8 ? seqb_r<1, 1, 0>(r) : kp == 16 ? seqb_r<2, 1, 0>(r) : seqb_r<4, 1, 0>(r);
}
bool paired_too(int kp, int cd) {
    return kp == 32 && cd == 8;
}
/* Where the weights end: [r][kp / 8][kr][8] halves, to 128 bytes */
size_t weights_end(int kp, int r, int kr) {
    return round128((size_t)r * kp * kr * 2);
}
template <int NF, int R, int CG, int PK>
fv_status build_one(cudaStream_t stream, const __half *w, int kr, __half *out) {
    constexpr int N = (int)(geo_seq<NF, R, CG, PK>::SEQB / 2);
    px_seq_kernel<NF, R, CG, PK><<<(N + 255) / 256, 256, 0, stream>>>(w, kr, out);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}
template <int NF, int CG, int PK>
fv_status build_r(cudaStream_t stream, int r, const __half *w, int kr, __half *out) {
    return r == 3 ? build_one<NF, 3, CG, PK>(stream, w, kr, out)
                  : build_one<NF, 5, CG, PK>(stream, w, kr, out);
}
} // namespace

size_t px_seq_bytes(int kp, int r, int cd) {
    const size_t one = round128(seqb(kp, r, cd, 0));
    return paired_too(kp, cd) ? one + round128(seqb(kp, r, cd, 1)) : one;
}

fv_status px_seq_build(cudaStream_t stream, int kp, int r, int cd, int kr, void *w) {
    const __half *hw = static_cast<const __half *>(w);
    __half *out = reinterpret_cast<__half *>(static_cast<char *>(w) + weights_end(kp, r, kr));
    if (cd == 32) return build_one<4, 3, 4, 0>(stream, hw, kr, out);
    const fv_status st = kp == 8    ? build_r<1, 1, 0>(stream, r, hw, kr, out)
                         : kp == 16 ? build_r<2, 1, 0>(stream, r, hw, kr, out)
                                    : build_r<4, 1, 0>(stream, r, hw, kr, out);
    if (st != FV_OK) return st;
    if (!paired_too(kp, cd)) return FV_OK;
    return build_r<4, 1, 1>(
        stream, r, hw, kr,
        reinterpret_cast<__half *>(reinterpret_cast<char *>(out) + round128(seqb(kp, r, cd, 0))));
}

/* The work items of a launch over `tiles` segments (item_at). The blocks
 * walk the segments grid apart, so with R = tiles % grid, R blocks take one
 * segment more than the rest and the others wait for them at the end (at
 * 1920x1080 K 32, 8-row segments: 2025 = 15 x 132 + 45, so 45 of 132 SMs
 * run the last sixteenth). Split into pieces of one step (OR rows), the
 * last round's segments spread over every block: the largest share goes
 * from ceil(tiles / grid) segments to floor(tiles / grid) plus
 * ceil(R x steps / grid) steps. Where that is no smaller (K 8: segments of
 * one or two steps), or FV_CONV_PX_SPLIT=0, none is split; with =2 (tests)
 * the last round is split whenever a segment has more than one step. */
static void tail_split(const fv__conv_direct_geom *g, int tiles, px_args *a) {
    const int steps = g->wn * g->kp / 64, grid = g->grid; /* OR = 64 / kp rows a step */
    int rem = tiles % grid;
    if (g->wt == 2 && rem == 0) rem = tiles < grid ? tiles : grid;
    const long before = (long)((tiles + grid - 1) / grid) * steps,
               after = (long)(tiles / grid) * steps + ((long)rem * steps + grid - 1) / grid;
    const bool split = steps > 1 && rem > 0 && (g->wt == 2 || (g->wt == 1 && after < before));
    a->nfull = split ? tiles - rem : tiles;
    a->ppt = split ? steps : 1;
    a->total = a->nfull + (tiles - a->nfull) * a->ppt;
}

#if FV_TMA
fv_status px_launch(cudaStream_t stream, const fv__conv_direct_geom *g, const void *x, void *y,
                    const void *w, const void *bias, fv_activation act, float alpha, bool early) {
    FV_REQUIRE(px_shape_ok(g) && g->grid > 0 && x && y && w && ((uintptr_t)x % 16) == 0 &&
                   ((uintptr_t)y % 16) == 0,
               FV_ERR_INTERNAL, "direct conv (wgmma, pixels along N): bad arguments");
    PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    FV_REQUIRE(encode, FV_ERR_INTERNAL, "direct conv (wgmma): no cuTensorMapEncodeTiled");
    /* 8 channels: the input as 32-bit words (a row's pixels x 4 words, H,
     * N), boxes of PIECE pixels of one row. 32: (32 channels, W, H, N), a
     * box a window, in the 64-byte swizzle (session 52's planes of 8
     * channels, 16-byte box rows, took 1.36x the direct kernel's time;
     * this 0.77x of it in the standalone harness: RESULTS.md, session 53) */
    CUtensorMap tm;
    CUresult r;
    const cuuint64_t px = (cuuint64_t)g->cs * 2, row = px * g->w, img = row * g->h;
    if (g->cs == 8) {
        const cuuint64_t dims[3] = {(cuuint64_t)g->w * 4, (cuuint64_t)g->h, (cuuint64_t)g->n};
        const cuuint64_t strides[2] = {row, img};
        const cuuint32_t box[3] = {(cuuint32_t)PIECE * 4, 1, 1}, unit[3] = {1, 1, 1};
        r = encode(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, const_cast<void *>(x), dims, strides,
                   box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                   CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    } else {
        using g4 = geo<4, 3, 2, 4>;
        const cuuint64_t dims[4] = {32, (cuuint64_t)g->w, (cuuint64_t)g->h, (cuuint64_t)g->n};
        const cuuint64_t strides[3] = {px, row, img};
        const cuuint32_t box[4] = {32, (cuuint32_t)g4::WC, (cuuint32_t)g4::RIN, 1},
                         unit[4] = {1, 1, 1, 1};
        r = encode(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT16, 4, const_cast<void *>(x), dims, strides,
                   box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B,
                   CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    }
    FV_REQUIRE(r == CUDA_SUCCESS, FV_ERR_INTERNAL,
               "direct conv (wgmma, pixels along N): cuTensorMapEncodeTiled failed (%d) for "
               "%dx%dx%d x %d",
               (int)r, g->h, g->w, g->cs, g->n);
    px_args a;
    a.y = static_cast<__half *>(y);
    a.seq = reinterpret_cast<const __half *>(static_cast<const char *>(w) +
                                             weights_end(g->kp, g->r, g->kr) +
                                             (g->wp ? round128(seqb(g->kp, g->r, g->cm, 0)) : 0));
    a.bias = static_cast<const float *>(bias);
    a.p = g->p, a.q = g->q, a.kp = g->kp, a.k = g->k, a.ys = g->ys ? g->ys : g->kp;
    a.kr = g->kr, a.ph = g->ph, a.pw = g->pw;
    a.strips = (g->q + NP - 1) / NP, a.segs_y = (g->p + g->wn - 1) / g->wn;
    const int tiles = a.strips * a.segs_y * g->n;
    tail_split(g, tiles, &a);
    a.act = (int)act, a.alpha = alpha;
    /* the output as (kp channels, Q, P, N) halves, pixels ys apart, a box
     * a step's staged tile in the swizzle stmatrix wrote it in (TS only;
     * otherwise tm again, unused) */
    CUtensorMap tmo = tm;
    if (g->ws) {
        const int ys = g->ys ? g->ys : g->kp, orows = 64 / g->kp;
        const cuuint64_t dims[4] = {(cuuint64_t)g->kp, (cuuint64_t)g->q, (cuuint64_t)g->p,
                                    (cuuint64_t)g->n};
        const cuuint64_t strides[3] = {(cuuint64_t)ys * 2, (cuuint64_t)ys * 2 * g->q,
                                       (cuuint64_t)ys * 2 * g->q * g->p};
        const cuuint32_t box[4] = {(cuuint32_t)g->kp, (cuuint32_t)NP, (cuuint32_t)orows, 1},
                         unit[4] = {1, 1, 1, 1};
        r = encode(&tmo, CU_TENSOR_MAP_DATA_TYPE_UINT16, 4, y, dims, strides, box, unit,
                   CU_TENSOR_MAP_INTERLEAVE_NONE,
                   g->kp == 32   ? CU_TENSOR_MAP_SWIZZLE_64B
                   : g->kp == 16 ? CU_TENSOR_MAP_SWIZZLE_32B
                                 : CU_TENSOR_MAP_SWIZZLE_NONE,
                   CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        FV_REQUIRE(r == CUDA_SUCCESS, FV_ERR_INTERNAL,
                   "direct conv (wgmma, pixels along N): cuTensorMapEncodeTiled failed (%d) for "
                   "the output %dx%dx%d (pixels %d apart) x %d",
                   (int)r, g->p, g->q, g->kp, ys, g->n);
    }
    FV_CUDA_TRY(
        launch(early, dim3(g->grid), dim3(THREADS), px_smem(g), stream, pick(g), a, tm, tmo));
    return FV_OK;
}
#endif

} // namespace fv_k
