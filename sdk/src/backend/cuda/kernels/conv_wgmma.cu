/* The direct convolution on Hopper's warpgroup MMA (see conv_wgmma.cuh and
 * conv_wgmma_kernel below).
 *
 * A block is one warpgroup (128 threads) walking strips of 64 output
 * columns, input row by input row: rows of 72 pixels of 16 bytes come by
 * the tensor memory accelerator (three 384-byte boxes a row: destinations
 * 128-byte aligned, boxes of at most 256 words) into a ring of NS slots,
 * each with its mbarrier. The weights are restaged once a block into
 * K-major core matrices. Results: FP32 sums of the same products as the
 * other direct kernels in the tensor cores' order (not bit-identical to
 * them; checked against the CPU reference). */
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "conv_wgmma.cuh"
#include "act8.cuh"
#include "tma.cuh"
#include "../cuda_check.h"
#include "../../activation.h"

namespace {

constexpr int WC = 72;       /* window pixels a row: 64 outputs + up to 8 taps right */
constexpr int PIECE = 24;    /* pixels a TMA box: 384 bytes */
constexpr int ROW = WC * 16; /* bytes a ring slot */
constexpr int THREADS = 128; /* one warpgroup */

struct wg_args {
    __half *y;
    const __half *w;
    const float *bias; /* kp FP32 values, or NULL */
    int p, q, kp, k, ys, kr, ph, pw;
    int tiles_x, strips_y, strip, total; /* strips of `strip` output rows x 64 columns */
    int act;
    float alpha;
};

__host__ __device__ constexpr int ksteps(int r) {
    return (r * 8 + 15) / 16;
}
/* B' (see restage): per 16-wide step, 2R filter-row blocks of K columns */
__host__ __device__ constexpr unsigned w_bytes(int nf, int r) {
    return (unsigned)ksteps(r) * 2 * r * nf * 256;
}
/* the ring of NS input rows, B', the bias (128 bytes), NS mbarriers (128) */
__host__ __device__ constexpr size_t smem_bytes(int nf, int r, int ns) {
    return (size_t)ns * ROW + w_bytes(nf, r) + 256;
}

#if FV_TMA && defined(__CUDA_ARCH_FEAT_SM90_ALL)
using fv_k::bar_expect;
using fv_k::bar_init;
using fv_k::bar_wait;
using fv_k::smem_u32;

/* A shared-memory matrix descriptor without swizzling: start address,
 * leading (K) and stride (N) byte offsets between core matrices. */
__device__ __forceinline__ uint64_t desc(const void *p, unsigned lbo, unsigned sbo) {
    return (uint64_t)((smem_u32(p) & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) |
           ((uint64_t)(sbo >> 4) << 32);
}
__device__ __forceinline__ void wg_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_wait0() {
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
/* Keeps the compiler from moving accumulator accesses across the
 * asynchronous MMAs. */
template <int M> __device__ __forceinline__ void pin(float *d) {
#pragma unroll
    for (int i = 0; i < M; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

/* d += A * B, m64nNk16 with N / 2 = NREG accumulators a thread: A from
 * registers (each warp's 16 rows as mma.sync's m16n8k16 A fragment), B
 * from shared memory. */
template <int NREG> struct mma;
template <> struct mma<12> {
    static __device__ __forceinline__ void run(float *d, const unsigned (&x)[4], uint64_t b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %17, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n24k16.f32.f16.f16 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}, "
                     "{%12, %13, %14, %15}, %16, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                       "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
                     : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "l"(b), "r"(1));
    }
};
template <> struct mma<20> {
    static __device__ __forceinline__ void run(float *d, const unsigned (&x)[4], uint64_t b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %25, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n40k16.f32.f16.f16 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, "
                     "%17, %18, %19}, "
                     "{%20, %21, %22, %23}, %24, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                       "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                       "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                       "+f"(d[18]), "+f"(d[19])
                     : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "l"(b), "r"(1));
    }
};
template <> struct mma<24> {
    static __device__ __forceinline__ void run(float *d, const unsigned (&x)[4], uint64_t b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %29, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n48k16.f32.f16.f16 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, "
                     "%17, %18, %19, %20, %21, %22, %23}, "
                     "{%24, %25, %26, %27}, %28, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                       "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                       "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                       "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
                     : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "l"(b), "r"(1));
    }
};
template <> struct mma<40> {
    static __device__ __forceinline__ void run(float *d, const unsigned (&x)[4], uint64_t b) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %45, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n80k16.f32.f16.f16 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, "
                     "%17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                     "%32, %33, %34, %35, %36, %37, %38, %39}, "
                     "{%40, %41, %42, %43}, %44, p, 1, 1, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                       "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                       "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                       "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                       "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                       "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
                     : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "l"(b), "r"(1));
    }
};
template <> struct mma<48> {
    static __device__ __forceinline__ void run(float *d, const unsigned (&x)[4], uint64_t b) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
            "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
            "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, "
            "{%48, %49, %50, %51}, %52, p, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
              "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
              "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
              "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
              "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
              "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
              "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
              "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
            : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "l"(b), "r"(1));
    }
};
template <> struct mma<80> {
    static __device__ __forceinline__ void run(float *d, const unsigned (&x)[4], uint64_t b) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %85, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n160k16.f32.f16.f16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
            "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
            "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
            "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, "
            "%70, %71, %72, %73, %74, %75, %76, %77, %78, %79}, "
            "{%80, %81, %82, %83}, %84, p, 1, 1, 0;\n}\n"
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
              "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]),
              "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]),
              "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]),
              "+f"(d[79])
            : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "l"(b), "r"(1));
    }
};

/* x[0..3] = the four 8 x 8 half matrices whose rows lanes 8i..8i+7 point at. */
__device__ __forceinline__ void ldsm_x4(unsigned (&x)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                 : "r"(addr));
}

/* Strip t as (image, first output row, first column). */
__device__ __forceinline__ int3 strip_at(const wg_args &a, int t) {
    const int tx = t % a.tiles_x, rest = t / a.tiles_x, sy = rest % a.strips_y;
    return make_int3(rest / a.strips_y, sy * a.strip, tx * 64);
}

/* Warp 0: input row number q of this block's walk (row q % rin of its
 * strip q / rin) into ring slot q % NS, completing on that slot's mbarrier;
 * nothing past the block's last strip. */
template <int NS, int R>
__device__ __forceinline__ void produce(unsigned char *ring, unsigned long long *bars,
                                        const CUtensorMap *tm, const wg_args &a, int q) {
    const int rin = a.strip + R - 1, k = q / rin, j = q - k * rin;
    const int t = blockIdx.x + k * gridDim.x;
    if (t >= a.total) return;
    const int3 at = strip_at(a, t);
    const int lane = threadIdx.x & 31, slot = q % NS;
    if (lane == 0) bar_expect(&bars[slot], ROW);
    __syncwarp();
    if (lane < 3)
        fv_k::tma_load_3d(ring + slot * ROW + lane * PIECE * 16, tm, &bars[slot],
                          (at.z - a.pw + lane * PIECE) * 4, at.y - a.ph + j, at.x);
}

/* Output row oy from its K accumulators d: bias, activation, FP16, a
 * 4-byte store per pixel and 8 channels. */
template <int NF, int ACT>
__device__ __forceinline__ void put_row(const wg_args &a, const float *d, const float (&b)[NF * 2],
                                        int n, int oy, int ox0) {
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
#endif

#if FV_TMA
/* A block (one warpgroup) walks strips of `strip` output rows x 64 columns
 * (gridDim.x apart), input row by input row: warp 0 keeps NS - 1 rows in
 * flight ahead (TMA into a ring), and for each input row the warps load its
 * A fragments once (ldmatrix: this warp's 16 pixels, taps s and s + 1 a
 * 16-wide step) and run kr / 16 MMAs of N = R x K: the R blocks of K
 * columns are the R output rows the input row serves (o = j - r for filter
 * row r), block o % R holding output row o. So B' for input row j (phase
 * j % R) has filter row (j - c) mod R in block c: one window of R blocks
 * in a sequence of 2R stored once (restage). A block is zeroed as its
 * output row starts (r = 0) and written once its last filter row is in
 * (r = R - 1). An input row takes kr / 16 MMAs, not R x kr / 16 of N = K:
 * the tensor cores' cost a small-N MMA (measured: m64n8k16 MMAs ran
 * 1920x1080x8->8 at 0.054 ms against 0.046 for mma.sync, H200). */
template <int NF, int R, int NS>
__global__ void __launch_bounds__(THREADS)
    conv_wgmma_kernel(const wg_args a, const __grid_constant__ CUtensorMap tm) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int KS = ksteps(R), KREG = NF * 4, NREG = R * KREG;
    extern __shared__ __align__(128) unsigned char smem[];
    unsigned char *ring = smem, *sw = smem + NS * ROW;
    float *sbias = reinterpret_cast<float *>(sw + w_bytes(NF, R));
    unsigned long long *bars = reinterpret_cast<unsigned long long *>(sbias + 32);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x < NS) bar_init(&bars[threadIdx.x]);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    __syncthreads();
    if (warp == 0)
        for (int q = 0; q < NS - 1; q++)
            produce<NS, R>(ring, bars, &tm, a, q);
    /* restage: weights [r][k / 8][kr][8] -> B': per 16-wide step s, blocks
     * beta = 0..2R-1 of filter row R - 1 - beta % R, each K / 8 core
     * matrices (8 channels x 8 positions) by two (positions 0-7, 8-15) */
    __half *swh = reinterpret_cast<__half *>(sw);
    const int nw = (int)(w_bytes(NF, R) / 2);
    for (int e = threadIdx.x; e < nw; e += THREADS) {
        const int kc = e & 7, nn = (e >> 3) & 7, j = (e >> 6) & 1, g = (e >> 7) % NF;
        const int rest = (e >> 7) / NF, beta = rest % (2 * R), s = rest / (2 * R);
        const int r = R - 1 - beta % R, pos = 16 * s + 8 * j + kc;
        swh[e] = a.w[((r * NF + g) * a.kr + pos) * 8 + nn];
    }
    if (threadIdx.x < NF * 8) sbias[threadIdx.x] = a.bias ? a.bias[threadIdx.x] : 0.0f;
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* seen by the MMAs */
    __syncthreads();
    float b[NF * 2];
#pragma unroll
    for (int j = 0; j < NF; j++)
        b[2 * j] = sbias[8 * j + 2 * (lane & 3)], b[2 * j + 1] = sbias[8 * j + 2 * (lane & 3) + 1];
    /* lane L: row (L >> 3 & 1) * 8 + L % 8 of the warp's 16, the tap L >> 4 */
    const unsigned arow =
        smem_u32(ring) + (unsigned)((16 * warp + (lane & 7) + (lane & 8) + (lane >> 4)) * 16);
    const uint64_t db = desc(sw, 128, 256);
    float d[NREG];
#pragma unroll
    for (int i = 0; i < NREG; i++)
        d[i] = 0.0f;
    const int rin = a.strip + R - 1;
    fv_k::with_act(a.act, [&](auto act) {
        constexpr int ACT = decltype(act)::value;
        int q = 0;
        for (int t = blockIdx.x; t < a.total; t += gridDim.x) {
            const int3 at = strip_at(a, t);
            for (int j0 = 0; j0 < rin; j0 += R) {
#pragma unroll
                for (int ph = 0; ph < R; ph++) { /* input row j = j0 + ph: phase ph */
                    const int j = j0 + ph;
                    if (j >= rin) break;
                    const int slot = q % NS;
                    bar_wait(&bars[slot], (unsigned)(q / NS) & 1u);
                    unsigned x[KS][4];
#pragma unroll
                    for (int s = 0; s < KS; s++)
                        ldsm_x4(x[s], arow + (unsigned)(slot * ROW + s * 32));
                    __syncthreads(); /* every warp has read the slot before q - 1 */
                    if (warp == 0) produce<NS, R>(ring, bars, &tm, a, q + NS - 1);
#pragma unroll
                    for (int i = 0; i < KREG; i++) /* output row j starts: its block */
                        d[ph * KREG + i] = 0.0f;
                    pin<NREG>(d);
                    wg_fence();
#pragma unroll
                    for (int s = 0; s < KS; s++)
                        mma<NREG>::run(d, x[s],
                                       db + (uint64_t)((s * 2 * R + (R - 1 - ph)) * NF * 16));
                    wg_commit();
                    wg_wait0();
                    pin<NREG>(d);
                    const int o = j - (R - 1); /* its filter row R - 1 is in */
                    if (o >= 0)
                        put_row<NF, ACT>(a, d + ((ph + 1) % R) * KREG, b, at.x, at.y + o, at.z);
                    q++;
                }
            }
        }
    });
#endif
}

typedef void (*wg_kernel_fn)(const wg_args, const CUtensorMap);

template <int NF, int R> wg_kernel_fn pick_ns(int ns) {
    return ns == 4   ? conv_wgmma_kernel<NF, R, 4>
           : ns == 8 ? conv_wgmma_kernel<NF, R, 8>
                     : conv_wgmma_kernel<NF, R, 16>;
}
template <int NF> wg_kernel_fn pick_r(int r, int ns) {
    return r == 3 ? pick_ns<NF, 3>(ns) : pick_ns<NF, 5>(ns);
}
wg_kernel_fn pick(const fv__conv_direct_geom *g) {
    return g->kp == 8    ? pick_r<1>(g->r, g->th)
           : g->kp == 16 ? pick_r<2>(g->r, g->th)
                         : pick_r<4>(g->r, g->th);
}
#endif

bool shape_ok(const fv__conv_direct_geom *g) {
    return g->cs == 8 && g->cm == 8 && !g->pair && !g->pc && !g->two && g->persistent &&
           g->sh == 1 && g->sw == 1 && g->r == g->s && (g->r == 3 || g->r == 5) &&
           (g->kp == 8 || g->kp == 16 || g->kp == 32) && g->k <= g->kp &&
           (g->th == 4 || g->th == 8 || g->th == 16) && g->n >= 1 && g->p >= 1 && g->q >= 1 &&
           g->h >= 1 && g->w >= 1 && (g->ys == 0 || (g->ys >= g->kp && g->ys % 8 == 0));
}

size_t smem_of(const fv__conv_direct_geom *g) {
    return smem_bytes(g->kp / 8, g->r, g->th);
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
    if (cudaFuncGetAttributes(&fa, reinterpret_cast<const void *>(pick(g))) != cudaSuccess) {
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
                 "wgmma: 8 channels stored and read, stride 1, 3x3 or 5x5, K 8, 16 or 32, a ring "
                 "of 4, 8 or 16 rows, persistent");
        return 0;
    }
    g->kr = ksteps(g->r) * 16;
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

extern "C" fv_status fv__conv_wgmma_prepare(fv__conv_direct_geom *g) {
    int dev = 0, optin = 0, per_sm = 0, sms = 0;
    char why[160];
    FV_CUDA_TRY(cudaGetDevice(&dev));
    FV_REQUIRE(shape_ok(g) && runs_here(dev, g, why, sizeof why), FV_ERR_NOT_SUPPORTED,
               "direct conv (wgmma): %s", shape_ok(g) ? why : "geometry out of range");
#if FV_TMA
    const void *fn = reinterpret_cast<const void *>(pick(g));
#else
    const void *fn = nullptr; /* not reached: runs_here refused */
#endif
    FV_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    FV_CUDA_TRY(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    FV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, THREADS, smem_of(g)));
    FV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    FV_REQUIRE(per_sm > 0, FV_ERR_NOT_SUPPORTED,
               "direct conv (wgmma): no block of %d threads and %zu bytes of shared memory fits "
               "an SM",
               THREADS, smem_of(g));
    /* the strip height: the fewest input rows a block reads, rounds of
     * strips x (rows + R - 1) each (the halo rows are loaded and multiplied
     * too) */
    const long blocks = (long)per_sm * sms, tx = (g->q + 63) / 64;
    long best = -1;
    for (int sh = 1; sh <= g->p; sh++) {
        const long strips = tx * ((g->p + sh - 1) / sh) * g->n;
        const long grid = strips < blocks ? strips : blocks;
        const long cost = (strips + grid - 1) / grid * (sh + g->r - 1);
        if (strips > 0x7fffffffL) continue;
        if (best < 0 || cost < best) best = cost, g->strip = sh, g->grid = (int)grid;
    }
    FV_REQUIRE(best > 0, FV_ERR_NOT_SUPPORTED, "direct conv (wgmma): %ld strips of 64 columns",
               tx * g->p * g->n);
    g->tma = 1;
    return FV_OK;
}

extern "C" fv_status fv__conv_wgmma_run(cudaStream_t stream, const fv__conv_direct_geom *g,
                                        const void *x, void *y, const void *w, const void *bias,
                                        fv_activation act, float alpha) {
    FV_REQUIRE(shape_ok(g) && g->grid > 0 && g->strip > 0 && g->kr == ksteps(g->r) * 16 && x && y &&
                   w && ((uintptr_t)x % 16) == 0 && ((uintptr_t)y % 4) == 0,
               FV_ERR_INTERNAL, "direct conv (wgmma): bad arguments or not prepared");
#if FV_TMA
    PFN_cuTensorMapEncodeTiled_v12000 encode = fv_k::tensor_map_encoder();
    FV_REQUIRE(encode, FV_ERR_INTERNAL, "direct conv (wgmma): no cuTensorMapEncodeTiled");
    /* the input as 32-bit words: (a row's pixels x 4 words, H, N); boxes of
     * PIECE pixels of one row */
    const cuuint64_t dims[3] = {(cuuint64_t)g->w * 4, (cuuint64_t)g->h, (cuuint64_t)g->n};
    const cuuint64_t strides[2] = {(cuuint64_t)g->w * 16, (cuuint64_t)g->h * g->w * 16};
    const cuuint32_t box[3] = {PIECE * 4, 1, 1}, unit[3] = {1, 1, 1};
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
    a.tiles_x = (g->q + 63) / 64, a.strip = g->strip;
    a.strips_y = (g->p + g->strip - 1) / g->strip;
    a.total = a.tiles_x * a.strips_y * g->n;
    a.act = (int)act, a.alpha = alpha;
    pick(g)<<<g->grid, THREADS, smem_of(g), stream>>>(a, tm);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
#else
    (void)stream, (void)y, (void)bias, (void)act, (void)alpha;
    FV_REQUIRE(0, FV_ERR_NOT_SUPPORTED, "direct conv (wgmma): built without tensor maps");
    return FV_ERR_NOT_SUPPORTED;
#endif
}
