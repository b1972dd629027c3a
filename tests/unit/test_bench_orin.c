/* fovea-bench --sms's Orin estimate (apps/bench/bench_orin.c):
 * t = max(t_slice * f_gpu / f_orin, bytes / bw_orin) from the slice of each
 * Orin's SM count; none where that slice was not timed. */
#include "fv_test.h"
#include <math.h>
#include "bench_slice.h"

static void assert_near(double got, double want) {
    if (!(fabs(got - want) <= 1e-9 * fabs(want))) fail_msg("got %.12g, want %.12g", got, want);
}

/* Orin Nano 8GB (8 SMs, 625 MHz, 68 GB/s), AGX Orin 64GB (16, 1300, 204.8) */
static void sm_bound(void **state) {
    (void)state;
    const int got[2] = {8, 16};
    const double ms[2] = {1.0, 0.5};
    bench_orin_estimate e[BENCH_ORINS];
    bench_slice_orin_estimate(1980.0, 68e6, got, ms, 2, e);
    assert_string_equal(e[0].name, "Orin Nano 8GB");
    assert_int_equal(e[0].sms, 8);
    assert_near(e[0].sm_ms, 1.0 * 1980.0 / 625.0);
    assert_near(e[0].dram_ms, 1.0); /* 68 MB at 68 GB/s */
    assert_near(e[0].ms, e[0].sm_ms);
    assert_string_equal(e[1].name, "AGX Orin 64GB");
    assert_int_equal(e[1].sms, 16);
    assert_near(e[1].sm_ms, 0.5 * 1980.0 / 1300.0);
    assert_near(e[1].dram_ms, 68e6 / 204.8e6);
    assert_near(e[1].ms, e[1].sm_ms);
}

/* bytes the Orin's DRAM moves slower than its SMs compute: the DRAM term */
static void dram_bound(void **state) {
    (void)state;
    const int got[2] = {16, 8};
    const double ms[2] = {0.05, 0.1};
    bench_orin_estimate e[BENCH_ORINS];
    bench_slice_orin_estimate(1755.0, 680e6, got, ms, 2, e);
    assert_near(e[0].sm_ms, 0.1 * 1755.0 / 625.0); /* the 8-SM slice, second in the list */
    assert_near(e[0].ms, 10.0);
    assert_near(e[1].sm_ms, 0.05 * 1755.0 / 1300.0);
    assert_near(e[1].ms, 680e6 / 204.8e6);
}

/* no slice of an Orin's SM count, or one not timed (NAN): no estimate, the
 * DRAM term still given; a later timed slice of the same count is taken */
static void missing_slices(void **state) {
    (void)state;
    const int got[3] = {16, 8, 16};
    const double ms[3] = {NAN, NAN, 0.25};
    bench_orin_estimate e[BENCH_ORINS];
    bench_slice_orin_estimate(1980.0, 68e6, got, ms, 3, e);
    assert_true(isnan(e[0].sm_ms) && isnan(e[0].ms));
    assert_near(e[0].dram_ms, 1.0);
    assert_near(e[1].sm_ms, 0.25 * 1980.0 / 1300.0);
    bench_slice_orin_estimate(1980.0, 68e6, NULL, NULL, 0, e);
    assert_true(isnan(e[0].ms) && isnan(e[1].ms));
    assert_near(e[1].dram_ms, 68e6 / 204.8e6);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(sm_bound), cmocka_unit_test(dram_bound),
                                       cmocka_unit_test(missing_slices)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
