/* The persistent conv kernels' division by a launch's fixed band counts
 * (backend/cuda/fast_div.h): the same multiply-high and shift as the GPU's
 * fv__div, against the C division, over every divisor that a tile count
 * can be in practice and a spread of larger ones, at the edges of each
 * quotient and of the valid range (0 <= x < 2^31). */
#include <stdint.h>
#include <stdlib.h>
#include "fv_test.h"
#include "backend/cuda/fast_div.h"

static void check(fv__divider v, int x) {
    const int want = x / v.d, got = fv__div_host(v, x);
    if (got != want) fail_msg("%d / %d: %d, expected %d", x, v.d, got, want);
}

/* x at a quotient's edges (q d - 1, q d, q d + 1) where they are valid */
static void check_around(fv__divider v, int64_t m) {
    for (int64_t x = m - 1; x <= m + 1; x++)
        if (x >= 0 && x <= INT32_MAX) check(v, (int)x);
}

static void small_divisors_every_quotient_edge(void **state) {
    (void)state;
    for (int d = 1; d <= 4096; d++) {
        const fv__divider v = fv__divider_of(d);
        assert_int_equal(v.d, d);
        for (int64_t q = 0; q <= 2000; q++)
            check_around(v, q * d);
        for (int64_t q = (int64_t)INT32_MAX / d - 2000; q <= (int64_t)INT32_MAX / d + 1; q++)
            check_around(v, q * d);
        check(v, INT32_MAX);
    }
}

static void large_divisors(void **state) {
    (void)state;
    /* powers of two and their neighbours, then pseudo-random divisors */
    for (int l = 12; l <= 31; l++)
        for (int64_t d = ((int64_t)1 << l) - 2; d <= ((int64_t)1 << l) + 2; d++) {
            if (d < 1 || d > INT32_MAX) continue;
            const fv__divider v = fv__divider_of((int)d);
            for (int64_t q = 0; q * d <= (int64_t)INT32_MAX + 1 && q < 20000; q++)
                check_around(v, q * d);
            check(v, INT32_MAX);
        }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 20000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const int d = (int)((s >> 33) % INT32_MAX) + 1;
        const fv__divider v = fv__divider_of(d);
        for (int j = 0; j < 50; j++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            check(v, (int)(s >> 33));
            check_around(v, (int64_t)((s >> 33) / (uint64_t)d) * d);
        }
        check(v, INT32_MAX);
    }
}

static void the_multiplier_fits_and_bad_divisors_say_so(void **state) {
    (void)state;
    /* a 32-bit multiplier needs d > 2^(l-1): the smallest d of each l */
    for (int l = 1; l <= 31; l++) {
        const int d = (int)((1ll << (l - 1)) + 1);
        const fv__divider v = fv__divider_of(d);
        assert_true(v.mul >= 0x80000000u);
        assert_int_equal(v.shr, (uint32_t)(l - 1));
    }
    /* the GPU's fv__divider_dev finds l as 32 - clz(d - 1) */
    for (int d = 2; d <= 70000; d++)
        assert_int_equal(fv__divider_of(d).shr, (uint32_t)(31 - __builtin_clz((unsigned)(d - 1))));
    assert_int_equal(fv__divider_of(INT32_MAX).shr, 30);
    assert_int_equal(fv__divider_of(1).mul, 0);
    assert_int_equal(fv__divider_of(0).d, 0);
    assert_int_equal(fv__divider_of(-5).d, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_divisors_every_quotient_edge),
        cmocka_unit_test(large_divisors),
        cmocka_unit_test(the_multiplier_fits_and_bad_divisors_say_so),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
