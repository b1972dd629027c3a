/* IEEE binary16 <-> binary32 on the host, bit-exact: round to nearest even,
 * subnormals, infinities and NaN (quiet, payload top bits kept). */
#include <string.h>
#include "fovea/fp16.h"

static uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

fv_half fv_f32_to_f16(float x) {
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t exp = (u >> 23) & 0xffu;
    uint32_t man = u & 0x7fffffu;

    if (exp == 0xffu) { /* inf or NaN */
        if (man == 0) return (fv_half)(sign | 0x7c00u);
        return (fv_half)(sign | 0x7e00u | (man >> 13)); /* quiet, keep top payload */
    }
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (fv_half)(sign | 0x7c00u); /* overflow -> inf */
    if (e <= 0) {
        /* subnormal half (or zero): value = man_with_implicit * 2^(e-1-10-13) */
        if (e < -10) return (fv_half)sign;   /* below half the smallest subnormal: +-0 */
        uint32_t m = man | 0x800000u;        /* implicit bit */
        uint32_t shift = (uint32_t)(14 - e); /* 13 + (1 - e) */
        uint32_t half_m = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half_m & 1u))) half_m++;
        return (fv_half)(sign | half_m); /* a carry into the exponent is correct */
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++; /* may carry to inf: correct */
    return (fv_half)(sign | half);
}

float fv_f16_to_f32(fv_half h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) return bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0) return bits_f32(sign);
        /* subnormal: normalize */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        man &= 0x3ffu;
        return bits_f32(sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13));
    }
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

float fv_round_f16(float x) {
    return fv_f16_to_f32(fv_f32_to_f16(x));
}

/* Arrays: the CPU's conversion instructions where it has them (x86 F16C,
 * 8 at a time; AArch64's FCVT through __fp16), which round to nearest even
 * and keep subnormals, infinities and NaN payloads exactly as
 * fv_f32_to_f16 does (test_fp16 compares them bit for bit); else the
 * portable loop. A net's weights are millions of values: the loop costs
 * 8 ns each, the instructions well under 1. */
static void f32_to_f16_loop(const float *src, fv_half *dst, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = fv_f32_to_f16(src[i]);
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
__attribute__((target("avx,f16c"))) static void f32_to_f16_f16c(const float *src, fv_half *dst,
                                                                size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), h);
    }
    f32_to_f16_loop(src + i, dst + i, n - i);
}

/* CPUID.1:ECX F16C (29), AVX (28) and OSXSAVE (27), and the OS saving the
 * YMM registers (XCR0 bits 1 and 2): what the 256-bit conversion needs.
 * (cpuid.h works with GCC and clang alike; __builtin_cpu_supports("f16c")
 * is GCC's only.) */
static int has_f16c(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!(c & (1u << 29)) || !(c & (1u << 28)) || !(c & (1u << 27))) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6u) == 6u;
}

void fv_f32_to_f16_n(const float *src, fv_half *dst, size_t n) {
    /* asked each time (no shared state between threads): a few hundred
     * cycles, against arrays of at least 64 values */
    if (n >= 64 && has_f16c())
        f32_to_f16_f16c(src, dst, n);
    else
        f32_to_f16_loop(src, dst, n);
}
#elif defined(__aarch64__) && defined(__GNUC__)
void fv_f32_to_f16_n(const float *src, fv_half *dst, size_t n) {
    if (n < 64) { /* as on x86: short arrays take the portable loop */
        f32_to_f16_loop(src, dst, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        __fp16 h = (__fp16)src[i]; /* FCVT: round to nearest even (FPCR default) */
        memcpy(&dst[i], &h, 2);
    }
}
#else
void fv_f32_to_f16_n(const float *src, fv_half *dst, size_t n) {
    f32_to_f16_loop(src, dst, n);
}
#endif

void fv_f16_to_f32_n(const fv_half *src, float *dst, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = fv_f16_to_f32(src[i]);
}
