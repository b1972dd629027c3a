// Standalone measurement harness (session 51; figures in RESULTS.md, session 51): a
// warp-specialized wgmma direct conv, pixels along N. Not part of the library. Build on the device:
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o ws ws_conv.cu -lcuda
// Design: a block = 1 producer warpgroup (one thread issues TMA windows) + 2 consumer
// warpgroups that take alternate segments (SEG output rows x 128 pixels) of the block's
// list; NBUF window buffers with full/empty mbarriers; a consumer's segment is SEG/OR steps,
// each RINS x KS wgmma m64n128k16 (weights as A from one sequence, window as B: LBO 16,
// SBO 128), wait<0>, stmatrix.trans to its own staged tile, 16-byte stores. The two
// consumers overlap one's epilogue with the other's MMAs; no accumulator is in flight
// across a loop back-edge (ptxas C7514 in session 51's two-set form).
// Session 51 ran the defaults (-DWS_CONS=2 -DWS_NBUF=3 -DWS_TMA_STORE=0 -DWS_PINGPONG=0);
// session 52 the options (docs/bench/conv_ws_px_h200.txt): three consumers 0.94x two's time at
// 1920x1080x8->32 5x5 (kept in the library), level at K 8; four buffers level; turns at the MMAs
// 0.98x at K 32, 1.05x at K 8 with 16-row segments; TMA stores 1.20x at K 32 (all dropped).
// Session 53 (docs/bench/conv_ws_harness_s53_h200.txt, run by docs/bench/run_ws_harness.sh):
// -DWS_PACK=1 (a step's taps in pairs across input rows: 15 MMAs for 18 at 5x5 K 32, 15 for 20
// at 3x3 K 8) 0.93x the time at 1920x1080x8->32 5x5, level at K 8 (kept in the library: engines
// 958/966); -DWS_EARLY=1 (the first NBUF windows asked for before the weights are staged)
// 1.05-1.19x slower (dropped); -DWS_DIAG=1|2|3 (loads only, no loads, no global stores; outputs
// not checked): at 1920x1080x8->8 16-row segments 0.0191 / 0.0223 / 0.0229 ms against 0.0272
// whole; -DWS_ARS=1 (with WS_PACK: A from registers, setmaxnreg 40/152) 1.04x slower at 5x5
// K 32, level at K 8 (dropped; ptxas keeps 128 registers and spills 4 bytes at K 32).
// Session 54 (docs/bench/conv_seq_bulk_h200.txt): -DWS_RDMAP=1 1.06x slower at 5x5 K 32 (dropped:
// the warp's stores then touch 8 lines an instruction); -DWS_DIAG=4 (the prologue alone) 4.5-7.7
// us; -DWS_SEQG=1 (the sequence laid out before the runs, one bulk copy a block) 0.92-0.93x the
// time (1920x1080x8->32 5x5 paired 0.0614-0.0625 ms, 1920x1080x8->8 0.0260-0.0264; kept in the
// library), its prologue alone 3.7-3.9 us (the launch); -DWS_SEQG=2 (consumers gather, loads
// first) 0.96x at K 8, level at K 32 (dropped).
// Session 55 (prepared, not run): -DWS_TMA_STORE=2, a step's staged tile out by one TMA box in
// the swizzle that frees the dense tile's stmatrix of bank conflicts (the consumers issue no
// global stores: 90 registers against 110); run by run_ws_harness.sh's default variants.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#ifndef WS_CONS
#define WS_CONS 2
#endif
#ifndef WS_NBUF
#define WS_NBUF 3
#endif
#ifndef WS_PINGPONG /* consumers take turns at the MMAs: 1 the next may issue once this one        \
                       has issued its step's MMAs, 2 once they are done; 0 no order */
#define WS_PINGPONG 0
#endif
#ifndef WS_TMA_STORE /* 1: the staged tile goes out by TMA stores (dense, unpadded staging, boxes  \
                        of 1 KB: 1.20x slower at K 32, session 52); 2: a step's staged tile as one \
                        TMA box (8 NF channels x 128 pixels x OR rows) in the swizzle that makes   \
                        the dense tile's stmatrix free of bank conflicts (64 B at K 32, 32 B at K  \
                        16, none at K 8), the consumers issuing no global stores (session 55,      \
                        prepared, not run) */
#define WS_TMA_STORE 0
#endif
#ifndef WS_EARLY /* 1: the producer asks for its first NBUF windows before the weights are staged  \
                  */
#define WS_EARLY 0
#endif
#ifndef WS_DIAG /* time a part alone (outputs not checked): 1 the loads only (consumers free each  \
                   window at once), 2 no loads (the producer arrives without a copy: MMAs on       \
                   stale windows, stores), 3 no global stores (loads, MMAs, staging), 4 the        \
                   prologue only (barriers, the weight sequence gathered from global memory) */
#define WS_DIAG 0
#endif
#ifndef WS_PACK /* 1: a step's taps (input row, column) in pairs across rows: ceil(RINS R / 2)     \
                   MMAs instead of RINS x KS (5x5: 15 for 18; 3x3 K 8: 15 for 20), A a matrix      \
                   a pair (the second tap of a pair across a row edge: B's LBO (WC - R + 1) x 16)  \
                 */
#define WS_PACK 0
#endif
#ifndef WS_RDMAP /* 1: the staged tile read out 8 pixels of one 16-byte chunk a quarter warp       \
                    (conflict-free with PITCH 16 NF + 16; the default, the NF chunks of 2 pixels,  \
                    conflicts: Nsight Compute counted 1.44M conflicts, 12% excess shared           \
                    wavefronts at 5x5 K 32, session 53); the warp's stores cover the same lines    \
                 */
#define WS_RDMAP 0
#endif
#ifndef WS_STCS /* 1: the outputs stored with st.global.cs (streaming: evict first from L2), so    \
                   that 133 of the 166 MB at 5x5 K 32 do not push the windows' halo rows out       \
                   of L2 (prepared in session 54, not run) */
#define WS_STCS 0
#endif
#ifndef WS_ARS /* 1 (with WS_PACK): the weights (A) in registers, loaded once a consumer, where    \
                  a step has at most 16 pairs (4 registers a pair); setmaxnreg gives the producer  \
                  40 registers and the consumers 152. Only B is read from shared memory: 4 KB an   \
                  MMA instead of 6 (Nsight Compute: L1/TEX 80% busy at 5x5 K 32, session 53) */
#define WS_ARS 0
#endif
#ifndef WS_SEQG /* 1: the weight sequence laid out once in global memory (a kernel before the      \
                   timed runs) and copied to each block with one cp.async.bulk, issued with the    \
                   barriers' set-up; the consumers wait for it on its own mbarrier. 2: the         \
                   consumers gather it (every load issued before the first store) while the        \
                   producer asks for windows. 0: every thread gathers it from the KRSC weights,    \
                   2 bytes a thread, a store after each load, before any window is asked for       \
                   (WS_DIAG=4: 4.5-7.7 us alone, session 54) */
#define WS_SEQG 0
#endif
static_assert(!WS_ARS || WS_PACK, "WS_ARS needs WS_PACK");
constexpr int NP = 128, WC = 144, PIECE = 48, NBUF = WS_NBUF, CONS = WS_CONS,
              THREADS = 128 * (1 + CONS);
/* turns are strict only between two consumers: with three, one that stops waiting (its
 * predecessor has no steps left) can run two arrivals ahead of its successor, whose parity
 * wait then misses a phase */
static_assert(!WS_PINGPONG || CONS == 2, "WS_PINGPONG needs WS_CONS 2");

template <int NF, int R, int SEG> struct G {
    static constexpr int OR = 8 / NF, KS = (R * 8 + 15) / 16, RINS = OR + R - 1, RIN = SEG + R - 1,
                         L = 2 * OR + R - 2, C0 = OR + R - 2,
                         PITCH = 16 * NF + (NF > 1 && !WS_TMA_STORE ? 16 : 0), STEPS = SEG / OR;
    static constexpr int NPAIR = (RINS * R + 1) / 2;
    static constexpr unsigned WINB = RIN * WC * 16,
                              SEQB = WS_PACK ? NPAIR * 2048u : KS * L * NF * 256,
                              STGB = OR * NP * PITCH;
    /* WS_TMA_STORE 2: the staged tiles from a 1024-byte boundary (the swizzle is of address bits)
     */
    static constexpr size_t SMEM =
        NBUF * (size_t)WINB + SEQB + CONS * (size_t)STGB + 256 + (WS_TMA_STORE == 2 ? 1024 : 0);
};

struct Args {
    __half *y;
    const __half *w, *wseq;
    const float *bias;
    int n, h, wd, p, q, ph, pw, kr, strips, segs_y, total;
};

__device__ __forceinline__ unsigned sa(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void bar_init(uint64_t *b) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(sa(b)) : "memory");
}
__device__ __forceinline__ void bar_expect(uint64_t *b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(sa(b)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void bar_arrive(uint64_t *b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(sa(b)) : "memory");
}
__device__ __forceinline__ void bar_wait(uint64_t *b, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(sa(b)), "r"(parity)
                     : "memory");
    } while (!done);
}
__device__ __forceinline__ void tma3(void *dst, const CUtensorMap *tm, uint64_t *bar, int c0,
                                     int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(sa(dst)),
                 "l"(reinterpret_cast<unsigned long long>(tm)), "r"(c0), "r"(c1), "r"(c2),
                 "r"(sa(bar))
                 : "memory");
}
__device__ __forceinline__ uint64_t desc(const void *p, unsigned lbo, unsigned sbo) {
    return (uint64_t)((sa(p) & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) |
           ((uint64_t)(sbo >> 4) << 32);
}
__device__ __forceinline__ void named_sync(int id) {
    asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}
template <int ACC> __device__ __forceinline__ void mma128(float (&d)[64], uint64_t a, uint64_t b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a), "l"(b), "n"(ACC));
}
/* d (+)= A * B, A (64 x 16) from registers (the m16n8k16 A fragment of each warp's 16 rows). */
template <int ACC>
__device__ __forceinline__ void mma128_rs(float (&d)[64], const unsigned (&af)[4], uint64_t b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "l"(b), "n"(ACC));
}
__device__ __forceinline__ void stsm_x4_trans(const unsigned (&v)[4], unsigned addr) {
    asm volatile(
        "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
        "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
        : "memory");
}

/* element e of the weight sequence (halves) from the KRSC weights */
template <int NF, int R, int SEG> __device__ __half seq_elem(const Args &a, int e) {
    using g = G<NF, R, SEG>;
#if WS_PACK
    /* pair j: 64 rows m (output row m / 8NF, channel m % 8NF) x 16 (tap 2j + kk / 8 of the step's
     * flattened (input row, column), channel kk % 8); core matrices 8 x 16 bytes, LBO 128, SBO 256
     */
    const int j = e >> 10, f = e & 1023, el = f & 7, row = (f >> 3) & 7, kh = (f >> 6) & 1,
              mg = f >> 7;
    const int m = mg * 8 + row, b = m / (8 * NF), k = m % (8 * NF), t = 2 * j + kh;
    const int iy = t / R, x = t % R, r = iy - b;
    return t < g::RINS * R && r >= 0 && r < R
               ? a.w[((r * NF + k / 8) * a.kr + x * 8 + el) * 8 + k % 8]
               : __float2half(0.0f);
#else
    const int el = e & 7, ch = (e >> 3) & 7, jj = (e >> 6) & 1, rest = e >> 7;
    const int gg = rest % NF, sx = rest / NF, x = sx % g::L, s = sx / g::L, r = g::C0 - x;
    return r >= 0 && r < R ? a.w[((r * NF + gg) * a.kr + s * 16 + jj * 8 + el) * 8 + ch]
                           : __float2half(0.0f);
#endif
}
template <int NF, int R, int SEG> __global__ void seq_build(const Args a, __half *out) {
    using g = G<NF, R, SEG>;
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < (int)(g::SEQB / 2);
         e += gridDim.x * blockDim.x)
        out[e] = seq_elem<NF, R, SEG>(a, e);
}

template <int NF, int R, int SEG>
__global__ void __launch_bounds__(THREADS, 1)
    ws_kernel(const Args a, const __grid_constant__ CUtensorMap tm,
              const __grid_constant__ CUtensorMap tmo) {
    using g = G<NF, R, SEG>;
    extern __shared__ __align__(128) unsigned char smem[];
    unsigned char *win = smem, *seq = smem + NBUF * g::WINB,
                  *stg = seq + g::SEQB +
                         (WS_TMA_STORE == 2 ? (1024 - sa(seq + g::SEQB) % 1024) % 1024 : 0);
    float *sbias = reinterpret_cast<float *>(stg + CONS * g::STGB);
    uint64_t *full = reinterpret_cast<uint64_t *>(sbias + 32), *empty = full + NBUF,
             *turn = empty + NBUF, *seqbar = turn + CONS;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
    /* the window of the block's i-th segment t into buffer i % NBUF (the producer thread) */
    auto ask = [&](int i, int t) {
        const int b = i % NBUF;
        if (WS_DIAG == 2) {
            bar_arrive(&full[b]);
            return;
        }
        const int sx = t % a.strips, rest = t / a.strips, sy = rest % a.segs_y,
                  img = rest / a.segs_y;
        bar_expect(&full[b], g::WINB);
        const int x0 = (sx * NP - a.pw) * 4, y0 = sy * SEG - a.ph;
        for (int row = 0; row < g::RIN; row++)
            for (int pc = 0; pc < 3; pc++)
                tma3(win + b * g::WINB + (row * WC + pc * PIECE) * 16, &tm, &full[b],
                     x0 + pc * PIECE * 4, y0 + row, img);
    };
    if (threadIdx.x == 0) {
        for (int b = 0; b < NBUF; b++)
            bar_init(&full[b]), bar_init(&empty[b]);
        for (int k = 0; k < CONS; k++)
            bar_init(&turn[k]);
        bar_init(seqbar);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#if WS_EARLY
        /* fresh buffers: no empty barrier to wait for */
        for (int i = 0, t = blockIdx.x; i < NBUF && t < a.total; i++, t += gridDim.x)
            ask(i, t);
#endif
    }
#if WS_SEQG == 1
    if (threadIdx.x == 0) {
        bar_expect(seqbar, g::SEQB);
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], "
            "%2, [%3];\n" ::"r"(sa(seq)),
            "l"(a.wseq), "r"(g::SEQB), "r"(sa(seqbar))
            : "memory");
    }
#elif WS_SEQG == 0
    for (int e = threadIdx.x; e < (int)(g::SEQB / 2); e += THREADS)
        reinterpret_cast<__half *>(seq)[e] = seq_elem<NF, R, SEG>(a, e);
#endif
    if (threadIdx.x < NF * 8) sbias[threadIdx.x] = a.bias[threadIdx.x];
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
#if WS_SEQG == 2
    if (wg > 0) { /* the consumers: all loads in flight, then the stores */
        constexpr int N = (int)(g::SEQB / 2), CT = 128 * CONS, PER = (N + CT - 1) / CT;
        const int ct = threadIdx.x - 128;
        __half v[PER];
#pragma unroll
        for (int i = 0; i < PER; i++)
            v[i] = ct + i * CT < N ? seq_elem<NF, R, SEG>(a, ct + i * CT) : __float2half(0.0f);
#pragma unroll
        for (int i = 0; i < PER; i++)
            if (ct + i * CT < N) reinterpret_cast<__half *>(seq)[ct + i * CT] = v[i];
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        asm volatile("bar.sync 7, %0;\n" ::"r"(CT) : "memory");
    }
#endif
    if (WS_DIAG == 4) { /* the prologue alone: keep the sequence live, write nothing */
        if (WS_SEQG == 1 && threadIdx.x == 0) bar_wait(seqbar, 0);
        if (threadIdx.x == 0 && reinterpret_cast<const unsigned *>(seq)[0] == 0x12345678u)
            a.y[0] = __float2half(1.0f);
        return;
    }
    /* WS_ARS: the weights stay in the consumers' registers (where a step has <= 16 pairs) */
    constexpr bool ARS = WS_ARS && g::NPAIR <= 16;
    if (wg == 0) { /* the producer: one thread asks for every window of the block, in order */
        if (ARS) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (tid != 0) return;
        for (int i = WS_EARLY ? NBUF : 0, t = blockIdx.x + i * gridDim.x; t < a.total;
             t += gridDim.x, i++) {
            bar_wait(&empty[i % NBUF], ((unsigned)(i / NBUF) & 1u) ^ 1u);
            ask(i, t);
        }
        return;
    }
    if (ARS) asm volatile("setmaxnreg.inc.sync.aligned.u32 152;\n" ::: "memory");
    const int c = wg - 1;
    if (WS_SEQG == 1) bar_wait(seqbar, 0); /* the weight sequence has landed */
    unsigned char *my = stg + c * g::STGB;
    /* pair j's A fragment: rows 16 warp + lane / 4 (+ 8), columns 2 (lane % 4) (+ 8) of the
     * pair's 64 x 16 matrix (core matrices of 8 x 8: (row / 8) 128 + (col / 8) 64 halves) */
    unsigned af[ARS ? g::NPAIR : 1][4];
    if (ARS) {
        const __half *sqh = reinterpret_cast<const __half *>(seq);
        const int r0 = 16 * warp + (lane >> 2), c0 = 2 * (lane & 3);
#pragma unroll
        for (int j = 0; j < (ARS ? g::NPAIR : 0); j++)
#pragma unroll
            for (int x = 0; x < 4; x++) {
                const int r = r0 + 8 * (x & 1), kh = x >> 1;
                af[j][x] = *reinterpret_cast<const unsigned *>(sqh + j * 1024 + (r / 8) * 128 +
                                                               kh * 64 + (r % 8) * 8 + c0);
            }
    }
    int ci[2];
    float bi[2];
    for (int i = 0; i < 2; i++)
        ci[i] = (16 * warp + (lane >> 2) + 8 * i) % (8 * NF), bi[i] = sbias[ci[i]];
    const int m = lane >> 3, mrow0 = 16 * warp + 8 * (m & 1);
    /* WS_TMA_STORE 2: pixel px's 16-byte chunk k at chunk k ^ (px / 2 % 4) (64 B swizzle, K 32)
     * or k ^ (px / 4 % 2) (32 B, K 16); a lane's px % 8 is lane % 8 */
    const int swz = WS_TMA_STORE != 2 ? 0
                    : NF == 4         ? ((lane & 7) >> 1) & 3
                    : NF == 2         ? ((lane & 7) >> 2) & 1
                                      : 0;
    const unsigned sbase = sa(my) + (unsigned)(((mrow0 / (8 * NF)) * NP + (lane & 7)) * g::PITCH +
                                               ((((mrow0 % (8 * NF)) / 8) ^ swz) * 16));
    float d[64];
#if WS_PINGPONG
    /* consumer c's step k follows its predecessor's step k (c > 0) or k - 1 (c 0), where that
     * exists: a consumer with fewer segments must not be waited for */
    const int nseg = ((int)a.total - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x,
              pc = (c + CONS - 1) % CONS,
              psteps = (nseg > pc ? (nseg - pc + CONS - 1) / CONS : 0) * g::STEPS;
    int k = 0;
#endif
    for (int i = c, t = blockIdx.x + c * gridDim.x; t < a.total; i += CONS, t += CONS * gridDim.x) {
        const int b = i % NBUF;
        bar_wait(&full[b], (unsigned)(i / NBUF) & 1u);
        if (WS_DIAG == 1) {
            named_sync(1 + c); /* every thread past its wait before the window is refilled */
            if (tid == 0) bar_arrive(&empty[b]);
            continue;
        }
        const int sx = t % a.strips, rest = t / a.strips, sy = rest % a.segs_y,
                  img = rest / a.segs_y;
        for (int st = 0; st < g::STEPS; st++) {
            uint64_t da = desc(seq, 128, 256),
                     db = desc(win + b * g::WINB + st * g::OR * WC * 16, 16, 128);
            asm volatile("" : "+l"(da), "+l"(db));
#if WS_PINGPONG
            {
                const int kp = c == 0 ? k - 1 : k;
                if (kp >= 0 && kp < psteps) bar_wait(&turn[c], (unsigned)kp & 1u);
            }
#endif
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#if WS_PACK
            {
                const uint64_t dp = desc(seq, 128, 256),
                               dw = desc(win + b * g::WINB + st * g::OR * WC * 16, 0, 128);
#pragma unroll
                for (int j = 0; j < g::NPAIR; j++) {
                    const int t0 = 2 * j, t1 = 2 * j + 1 < g::RINS * R ? 2 * j + 1 : 2 * j;
                    const int o0 = (t0 / R) * WC + t0 % R, o1 = (t1 / R) * WC + t1 % R;
                    const int lbo = o1 > o0 ? o1 - o0 : 1; /* 16-byte units */
                    const uint64_t ea = dp + (uint64_t)(j * 128);
                    const uint64_t eb = dw + (uint64_t)o0 + ((uint64_t)lbo << 16);
                    if (ARS) {
                        if (j == 0)
                            mma128_rs<0>(d, af[ARS ? j : 0], eb);
                        else
                            mma128_rs<1>(d, af[ARS ? j : 0], eb);
                    } else if (j == 0)
                        mma128<0>(d, ea, eb);
                    else
                        mma128<1>(d, ea, eb);
                }
            }
#else
#pragma unroll
            for (int iy = 0; iy < g::RINS; iy++)
#pragma unroll
                for (int s = 0; s < g::KS; s++) {
                    const uint64_t ea = da + (uint64_t)((s * g::L + g::C0 - iy) * NF * 16);
                    const uint64_t eb = db + (uint64_t)(iy * WC + 2 * s);
                    if (iy == 0 && s == 0)
                        mma128<0>(d, ea, eb);
                    else
                        mma128<1>(d, ea, eb);
                }
#endif
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#if WS_PINGPONG == 1
            if (tid == 0) bar_arrive(&turn[(c + 1) % CONS]);
#endif
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#if WS_PINGPONG == 2
            if (tid == 0) bar_arrive(&turn[(c + 1) % CONS]);
#endif
#if WS_PINGPONG
            k++;
#endif
#if WS_TMA_STORE
            if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
            named_sync(1 + c); /* the last step's stores have read the staged tile */
#endif
#pragma unroll
            for (int j = 0; j < NP / 8; j += 2) {
                unsigned v[4];
#pragma unroll
                for (int x = 0; x < 4; x++) {
                    const int ii = x & 1, jj = j + (x >> 1);
                    const __half2 h = __floats2half2_rn(d[jj * 4 + 2 * ii] + bi[ii],
                                                        d[jj * 4 + 2 * ii + 1] + bi[ii]);
                    v[x] = *reinterpret_cast<const unsigned *>(&h);
                }
                stsm_x4_trans(v, sbase + (unsigned)(8 * (j + (m >> 1)) * g::PITCH));
            }
#if WS_TMA_STORE
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* seen by TMA */
#endif
            named_sync(1 + c); /* staged; every warp past its MMAs */
            if (st == g::STEPS - 1 && tid == 0) bar_arrive(&empty[b]);
#if WS_TMA_STORE == 2
            if (tid == 0) { /* the step's tile: one box; rows and pixels past the frame clipped */
                asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group "
                             "[%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                                 reinterpret_cast<unsigned long long>(&tmo)),
                             "r"(sa(my)), "r"(0), "r"(sx * NP), "r"(sy * SEG + st * g::OR), "r"(img)
                             : "memory");
                asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
            }
#elif WS_TMA_STORE
            if (tid == 0) {
                constexpr int WPR = NP * 4 * NF, BOXW = WPR > 256 ? 256 : WPR; /* words */
                for (int bb = 0; bb < g::OR; bb++) {
                    const int oy = sy * SEG + st * g::OR + bb;
                    if (oy >= a.p) break;
                    for (int x = 0; x < WPR / BOXW; x++)
                        asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group "
                                     "[%0, {%2, %3, %4}], [%1];\n" ::"l"(
                                         reinterpret_cast<unsigned long long>(&tmo)),
                                     "r"(sa(my + bb * NP * g::PITCH + x * BOXW * 4)),
                                     "r"(sx * WPR + x * BOXW), "r"(oy), "r"(img)
                                     : "memory");
                }
                asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
            }
#else
            constexpr int CH = g::OR * NP * NF;
#pragma unroll
            for (int n = 0; n < (WS_DIAG == 3 ? 0 : CH / 128); n++) {
                const int e = tid + n * 128;
                /* RDMAP: e = (group of 8 pixels, chunk, pixel of 8) */
                const int pe = WS_RDMAP ? (e / (8 * NF)) * 8 + e % 8 : e / NF,
                          cc = WS_RDMAP ? (e / 8) % NF : e % NF, px = pe % NP, bb = pe / NP;
                const int oy = sy * SEG + st * g::OR + bb, ox = sx * NP + px;
                if (oy < a.p && ox < a.q) {
                    uint4 *dst = reinterpret_cast<uint4 *>(
                        a.y + (((size_t)img * a.p + oy) * a.q + ox) * (8 * NF) + cc * 8);
                    const uint4 v =
                        *reinterpret_cast<const uint4 *>(my + (bb * NP + px) * g::PITCH + cc * 16);
                    if (WS_STCS)
                        __stcs(dst, v);
                    else
                        *dst = v;
                }
            }
            named_sync(1 + c); /* the staged tile read */
#endif
        }
    }
#if WS_TMA_STORE
    if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

static float h2f(__half h) {
    return __half2float(h);
}

template <int NF, int R, int SEG> int run(int H, int Wd, int N, bool full_check, int iters) {
    using g = G<NF, R, SEG>;
    int optin = 0;
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    if (g::SMEM > (size_t)optin) {
        printf("ws[c%d b%d] K %d %dx%d seg %d: %zu B shared > %d: skipped\n", CONS, NBUF, 8 * NF, R,
               R, SEG, g::SMEM, optin);
        return 0;
    }
    const int K = 8 * NF, C = 8, pad = R / 2, kr = g::KS * 16;
    const int P = H, Q = Wd;
    const size_t nx = (size_t)N * H * Wd * C, ny = (size_t)N * P * Q * K;
    std::vector<__half> hx(nx), hw((size_t)R * NF * kr * 8, __float2half(0.f));
    std::vector<float> Wt((size_t)K * C * R * R), hb(K);
    srand(1234 + NF * 10 + R);
    auto rnd = [] { return (float)rand() / RAND_MAX * 2 - 1; };
    for (auto &v : hx)
        v = __float2half(rnd());
    for (auto &v : Wt)
        v = 0.5f * rnd();
    for (auto &v : hb)
        v = 0.5f * rnd();
    for (int k = 0; k < K; k++)
        for (int c = 0; c < C; c++)
            for (int r = 0; r < R; r++)
                for (int s = 0; s < R; s++)
                    hw[((size_t)(r * NF + k / 8) * kr + s * 8 + c) * 8 + k % 8] =
                        __float2half(Wt[((k * C + c) * R + r) * R + s]);
    __half *dx, *dy, *dw;
    float *db;
    CK(cudaMalloc(&dx, nx * 2));
    CK(cudaMalloc(&dy, ny * 2));
    CK(cudaMalloc(&dw, hw.size() * 2));
    CK(cudaMalloc(&db, 32 * 4));
    CK(cudaMemcpy(dx, hx.data(), nx * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(db, 0, 32 * 4));
    CK(cudaMemcpy(db, hb.data(), K * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(dy, 0xff, ny * 2));
    PFN_cuTensorMapEncodeTiled_v12000 enc = nullptr;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&enc, 12000,
                                        cudaEnableDefault, &q));
    CUtensorMap tm;
    const cuuint64_t dims[3] = {(cuuint64_t)Wd * 4, (cuuint64_t)H, (cuuint64_t)N};
    const cuuint64_t strides[2] = {(cuuint64_t)Wd * 16, (cuuint64_t)H * Wd * 16};
    const cuuint32_t box[3] = {PIECE * 4, 1, 1}, unit[3] = {1, 1, 1};
    if (enc(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, dx, dims, strides, box, unit,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
            CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        printf("encode failed\n");
        return 1;
    }
    CUtensorMap tmo;
    if (WS_TMA_STORE == 2) { /* (channels, Q, P, N) halves, a box a step's staged tile */
        const cuuint64_t od[4] = {(cuuint64_t)K, (cuuint64_t)Q, (cuuint64_t)P, (cuuint64_t)N};
        const cuuint64_t os[3] = {(cuuint64_t)K * 2, (cuuint64_t)Q * K * 2,
                                  (cuuint64_t)P * Q * K * 2};
        const cuuint32_t ob[4] = {(cuuint32_t)K, (cuuint32_t)NP, (cuuint32_t)g::OR, 1},
                         u4[4] = {1, 1, 1, 1};
        if (enc(&tmo, CU_TENSOR_MAP_DATA_TYPE_UINT16, 4, dy, od, os, ob, u4,
                CU_TENSOR_MAP_INTERLEAVE_NONE,
                NF == 4   ? CU_TENSOR_MAP_SWIZZLE_64B
                : NF == 2 ? CU_TENSOR_MAP_SWIZZLE_32B
                          : CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            printf("encode (output, one box) failed\n");
            return 1;
        }
    } else {
        const cuuint64_t od[3] = {(cuuint64_t)Q * 4 * NF, (cuuint64_t)P, (cuuint64_t)N};
        const cuuint64_t os[2] = {(cuuint64_t)Q * K * 2, (cuuint64_t)P * Q * K * 2};
        const cuuint32_t ob[3] = {(cuuint32_t)std::min(256, NP * 4 * NF), 1, 1};
        if (enc(&tmo, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, dy, od, os, ob, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            printf("encode (output) failed\n");
            return 1;
        }
    }
    Args a;
    __half *dseq;
    CK(cudaMalloc(&dseq, g::SEQB));
    a.wseq = dseq;
    a.y = dy, a.w = dw, a.bias = db, a.n = N, a.h = H, a.wd = Wd, a.p = P, a.q = Q, a.ph = pad,
    a.pw = pad, a.kr = kr;
    a.strips = (Q + NP - 1) / NP, a.segs_y = (P + SEG - 1) / SEG;
    a.total = a.strips * a.segs_y * N;
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    seq_build<NF, R, SEG><<<8, 256>>>(a, dseq); /* once, like an op's weight conversion */
    CK(cudaGetLastError());
    auto fn = ws_kernel<NF, R, SEG>;
    CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)g::SMEM));
    const int grid = std::min(a.total, sms);
    fn<<<grid, THREADS, g::SMEM>>>(a, tm, tmo);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<__half> hy(ny);
    CK(cudaMemcpy(hy.data(), dy, ny * 2, cudaMemcpyDeviceToHost));
    /* check: every output of a full check, else 20000 random ones */
    double num = 0, den = 0;
    size_t unwritten = 0, checked = 0;
    auto ref = [&](int img, int oy, int ox, int k) {
        double s = hb[k];
        for (int r = 0; r < R; r++)
            for (int t = 0; t < R; t++) {
                const int iy = oy - pad + r, ix = ox - pad + t;
                if (iy < 0 || iy >= H || ix < 0 || ix >= Wd) continue;
                for (int c = 0; c < C; c++)
                    s += (double)h2f(hx[(((size_t)img * H + iy) * Wd + ix) * C + c]) *
                         (double)h2f(__float2half(Wt[((k * C + c) * R + r) * R + t]));
            }
        return s;
    };
    const size_t npx = (size_t)N * P * Q;
    for (size_t e = 0; e < (full_check ? npx : 20000); e++) {
        const size_t pxi = full_check ? e : ((size_t)rand() * 65536u + rand()) % npx;
        const int img = (int)(pxi / ((size_t)P * Q)), oy = (int)(pxi / Q % P), ox = (int)(pxi % Q);
        for (int k = 0; k < K; k++) {
            const float got = h2f(hy[pxi * K + k]);
            if (!std::isfinite(got)) unwritten++;
            const double rv = ref(img, oy, ox, k);
            num += (got - rv) * (got - rv), den += rv * rv;
            checked++;
        }
    }
    const double rel = std::sqrt(num / den);
    /* timing: the L2 scrubbed before each run (twice its size), events around the kernel */
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    void *flush;
    CK(cudaMalloc(&flush, 2 * (size_t)l2));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ts;
    for (int it = 0; it < iters + 5; it++) {
        CK(cudaMemsetAsync(flush, it & 0xff, 2 * (size_t)l2));
        CK(cudaEventRecord(e0));
        fn<<<grid, THREADS, g::SMEM>>>(a, tm, tmo);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (it >= 5) ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    const double med = ts[ts.size() / 2];
    const double bytes = (double)nx * 2 + (double)ny * 2, floor_ms = bytes / 4.0e12 * 1e3;
    printf(
        "ws[c%d b%d s%d p%d k%d e%d d%d a%d g%d] %dx%dx%dx8->%d %dx%d seg %d: %s rel err %.2e (%zu "
        "values, %zu "
        "unwritten), median "
        "%.4f ms (min %.4f), DRAM floor at 4.0 TB/s %.4f ms: %.2fx, %zu B shared, grid %d\n",
        CONS, NBUF, WS_TMA_STORE, WS_PINGPONG, WS_PACK, WS_EARLY, WS_DIAG,
        WS_ARS && G<NF, R, SEG>::NPAIR <= 16, WS_SEQG, N, H, Wd, K, R, R, SEG,
        WS_DIAG                    ? "diag"
        : rel < 2e-3 && !unwritten ? "OK"
                                   : "WRONG",
        rel, checked, unwritten, med, ts[0], floor_ms, med / floor_ms, g::SMEM, grid);
    CK(cudaFree(flush));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaFree(dw));
    CK(cudaFree(db));
    CK(cudaFree(dseq));
    return WS_DIAG || (rel < 2e-3 && !unwritten) ? 0 : 1;
}

int main() {
    int bad = 0;
    /* correctness on small frames (every output), partial strips and segments */
    bad |= run<1, 3, 16>(45, 200, 2, true, 3);
    bad |= run<4, 5, 16>(29, 147, 2, true, 3);
    bad |= run<1, 5, 16>(37, 130, 1, true, 3);
    bad |= run<2, 3, 16>(21, 260, 1, true, 3);
    /* issue 20's shapes: the kept kernels took 0.0267 (1080p 8->8), 0.0459 (2048^2 8->8) and
     * 0.0749 ms (1080p 8->32 5x5), H200, session 51 */
    bad |= run<1, 3, 8>(1080, 1920, 1, false, 30);
    bad |= run<1, 3, 16>(1080, 1920, 1, false, 30);
    bad |= run<1, 3, 8>(2048, 2048, 1, false, 30);
    bad |= run<1, 3, 16>(2048, 2048, 1, false, 30);
    bad |= run<4, 5, 8>(1080, 1920, 1, false, 30);
    bad |= run<4, 5, 16>(1080, 1920, 1, false, 30);
    printf("ws: %s\n", bad ? "SOME WRONG" : "all right");
    return bad;
}
