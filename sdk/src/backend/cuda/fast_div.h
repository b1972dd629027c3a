/* Division by a divisor fixed for a whole launch, as a multiply-high and a
 * shift (Granlund and Montgomery, "Division by invariant integers using
 * multiplication", 1994; CUTLASS's FastDivmod is the same). The persistent
 * direct-convolution blocks split each tile index into image, row band and
 * column band with it: a division by a value known only at run time is
 * about 20 instructions on the GPU (I2F, MUFU.RCP, F2I and corrections),
 * and those divisions were about a sixth of the 1920x1080x8->8 3x3
 * kernel's instructions (Nsight Compute, H200, docs/bench/RESULTS.md).
 * C, so that the CPU unit test checks the same arithmetic (test_fast_div);
 * fv__divider_dev is fv__divider_of with __clz for the loop. */
#ifndef FV_BACKEND_CUDA_FAST_DIV_H
#define FV_BACKEND_CUDA_FAST_DIV_H

#include <stdint.h>

typedef struct fv__divider {
    int d;        /* the divisor, 1 to 2^31 - 1 */
    uint32_t mul; /* ceil(2^(31 + l) / d), l = ceil(log2 d); 0 for d = 1 */
    uint32_t shr; /* l - 1 */
} fv__divider;

/* The divider of d (1 <= d < 2^31; other values give d = 0, which
 * fv__div_host and fv__div treat as "no divider": the caller checks). */
static inline fv__divider fv__divider_of(int d) {
    fv__divider v = {d > 0 ? d : 0, 0u, 0u};
    if (d > 1) {
        uint32_t l = 0;
        while ((1ull << l) < (uint64_t)d)
            l++;
        const uint32_t p = 31 + l;
        v.mul = (uint32_t)(((1ull << p) + (uint64_t)d - 1) / (uint64_t)d);
        v.shr = l - 1;
    }
    return v;
}

/* x / v.d for 0 <= x < 2^31: with m = mul, e = m d - 2^p < d <= 2^l and
 * x < 2^31, x e < 2^p, so floor(x m / 2^p) = floor(x / d). */
static inline int fv__div_host(fv__divider v, int x) {
    if (v.d == 1) return x;
    return (int)((uint32_t)(((uint64_t)(uint32_t)x * v.mul) >> 32) >> v.shr);
}

#ifdef __CUDACC__
/* fv__divider_of on the GPU (once a block: one 64-bit division) */
__device__ __forceinline__ fv__divider fv__divider_dev(int d) {
    fv__divider v = {d > 0 ? d : 0, 0u, 0u};
    if (d > 1) {
        const unsigned l = 32 - __clz((unsigned)(d - 1)); /* ceil(log2 d) */
        v.mul = (uint32_t)(((1ull << (31 + l)) + (unsigned long long)d - 1) / (unsigned)d);
        v.shr = l - 1;
    }
    return v;
}
__device__ __forceinline__ int fv__div(const fv__divider &v, int x) {
    return v.d == 1 ? x : (int)(__umulhi((unsigned)x, v.mul) >> v.shr);
}
#endif

#endif
