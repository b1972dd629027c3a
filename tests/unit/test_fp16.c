/* FP32 <-> FP16 conversion: exhaustive round trips, rounding, edge cases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void every_half_round_trips(void **state) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fv_f16_to_f32((fv_half)h);
        fv_half back = fv_f32_to_f16(f);
        int is_nan = ((h & 0x7c00u) == 0x7c00u) && (h & 0x3ffu);
        if (is_nan) {
            assert_true(isnan(f));
            assert_int_equal(back & 0x7e00u, 0x7e00u); /* stays a (quiet) NaN */
            assert_int_equal(back & 0x8000u, h & 0x8000u);
        } else {
            if (back != h) fail_msg("half 0x%04x -> %g -> 0x%04x", h, (double)f, back);
        }
    }
}

static void edge_cases(void **state) {
    assert_int_equal(fv_f32_to_f16(0.0f), 0x0000);
    assert_int_equal(fv_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(fv_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(fv_f32_to_f16(65504.0f), 0x7bff);  /* max */
    assert_int_equal(fv_f32_to_f16(65519.99f), 0x7bff); /* below the halfway point */
    assert_int_equal(fv_f32_to_f16(65520.0f), 0x7c00);  /* tie rounds to even: inf */
    assert_int_equal(fv_f32_to_f16(1e9f), 0x7c00);
    assert_int_equal(fv_f32_to_f16(-1e9f), 0xfc00);
    assert_int_equal(fv_f32_to_f16(INFINITY), 0x7c00);
    assert_int_equal(fv_f32_to_f16(-INFINITY), 0xfc00);
    assert_true((fv_f32_to_f16(NAN) & 0x7e00u) == 0x7e00u);
    /* subnormals: 2^-24 is the smallest; 2^-25 is a tie with 0 (even) */
    assert_int_equal(fv_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
    assert_int_equal(fv_f32_to_f16(ldexpf(1.0f, -25)), 0x0000);
    assert_int_equal(fv_f32_to_f16(ldexpf(1.0f, -25) * 1.0001f), 0x0001);
    assert_int_equal(fv_f32_to_f16(ldexpf(3.0f, -25)), 0x0002);    /* 1.5 ulp: tie to even 2 */
    assert_int_equal(fv_f32_to_f16(ldexpf(5.0f, -25)), 0x0002);    /* 2.5 ulp: tie to even 2 */
    assert_int_equal(fv_f32_to_f16(ldexpf(1023.0f, -24)), 0x03ff); /* largest subnormal */
    assert_int_equal(fv_f32_to_f16(ldexpf(1.0f, -14)), 0x0400);    /* smallest normal */
    /* subnormal rounding up into the smallest normal */
    assert_int_equal(fv_f32_to_f16(ldexpf(1023.5f, -24)), 0x0400);
    assert_true(fv_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    assert_true(fv_f16_to_f32(0x03ff) == ldexpf(1023.0f, -24));
    assert_true(fv_f16_to_f32(0x7c00) == INFINITY);
    assert_true(isnan(fv_f16_to_f32(0x7e00)));
    /* ties to even among normals: 1 + 2^-11 is halfway between 1 and 1+2^-10 */
    assert_int_equal(fv_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    assert_int_equal(fv_f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02);
    assert_true(fv_round_f16(0.1f) == fv_f16_to_f32(0x2e66));
    /* FP32 subnormal input flushes to a signed zero in FP16 */
    assert_int_equal(fv_f32_to_f16(-bits_f32(1)), 0x8000);
}

/* Rounding against the nearest-value definition on random floats across the
 * FP16 range: the result must be one of the two neighbours and the nearer
 * (ties: the even one). */
static void random_values_round_to_nearest(void **state) {
    fv_test_seed(1234);
    for (int i = 0; i < 200000; i++) {
        float x =
            fv_test_rand_uniform(-1.0f, 1.0f) * ldexpf(1.0f, (int)(fv_test_rand_u64() % 34) - 26);
        fv_half h = fv_f32_to_f16(x);
        double v = fv_f16_to_f32(h);
        /* neighbours of h in magnitude */
        fv_half up = (fv_half)(h + 1), dn = (fv_half)(h - 1);
        double dv = fabs(v - x);
        if ((h & 0x7fffu) != 0x7bffu && (h & 0x7fffu) != 0x7c00u) {
            double vu = fv_f16_to_f32(up);
            assert_true(dv <= fabs(vu - x));
        }
        if ((h & 0x7fffu) != 0) {
            double vd = fv_f16_to_f32(dn);
            assert_true(dv <= fabs(vd - x));
        }
#ifdef __FLT16_MAX__
        _Float16 ref = (_Float16)x;
        uint16_t rb;
        memcpy(&rb, &ref, 2);
        if (rb != h) fail_msg("%a: ours 0x%04x, compiler's 0x%04x", (double)x, h, rb);
#endif
    }
}

static void bulk_matches_scalar(void **state) {
    float src[257], back[257];
    fv_half h[257];
    fv_test_seed(7);
    fv_test_fill_uniform(src, 257, -70000.0f, 70000.0f);
    fv_f32_to_f16_n(src, h, 257);
    fv_f16_to_f32_n(h, back, 257);
    for (int i = 0; i < 257; i++) {
        assert_int_equal(h[i], fv_f32_to_f16(src[i]));
        assert_true(back[i] == fv_f16_to_f32(h[i]) ||
                    (isinf(back[i]) && isinf(fv_f16_to_f32(h[i]))));
    }
}

/* The array conversion (the CPU's instructions where it has them) equals
 * the scalar one bit for bit on every kind of value: random bit patterns
 * over all exponents (normals, subnormals, overflow, NaN with payloads),
 * exact ties, and lengths that leave a tail. */
static void bulk_bits_match_scalar(void **state) {
    (void)state;
    enum { N = 1 << 20 };
    float *src = malloc(sizeof(float) * N);
    fv_half *h = malloc(sizeof(fv_half) * N);
    assert_non_null(src);
    assert_non_null(h);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < N; i++) {
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        uint32_t u = (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
        if (i % 4 == 1) u = (u & 0x80000000u) | ((u % 40u + 100u) << 23) | (u & 0x7fffffu);
        if (i % 4 == 2) u = (u & 0xff800000u) | 0x1000u | (u & 0x7fe000u); /* ties */
        if (i % 16 == 3) u = (u & 0x807fffffu) | 0x7f800000u;              /* inf and NaN */
        memcpy(&src[i], &u, 4);
    }
    size_t lens[3] = {N, 13, 7};
    for (int l = 0; l < 3; l++) {
        fv_f32_to_f16_n(src, h, lens[l]);
        for (size_t i = 0; i < lens[l]; i++)
            if (h[i] != fv_f32_to_f16(src[i])) {
                uint32_t u;
                memcpy(&u, &src[i], 4);
                fail_msg("0x%08x: array 0x%04x, scalar 0x%04x", u, h[i], fv_f32_to_f16(src[i]));
            }
    }
    free(src), free(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_half_round_trips),         cmocka_unit_test(edge_cases),
        cmocka_unit_test(random_values_round_to_nearest), cmocka_unit_test(bulk_matches_scalar),
        cmocka_unit_test(bulk_bits_match_scalar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
