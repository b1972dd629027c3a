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

void fv_f32_to_f16_n(const float *src, fv_half *dst, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = fv_f32_to_f16(src[i]);
}

void fv_f16_to_f32_n(const fv_half *src, float *dst, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = fv_f16_to_f32(src[i]);
}
