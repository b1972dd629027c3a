/* fv_timer on the CPU backend: wall-clock marks, elapsed times in order,
 * re-recording, and argument errors. */
#define _POSIX_C_SOURCE 200809L
#include "fv_test.h"
#include <time.h>

static void sleep_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_marks(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_timer *t = NULL;
    FV_ASSERT_OK(fv_timer_create(ctx, 3, &t));
    float ms = 0;
    FV_ASSERT_STATUS(fv_timer_elapsed(t, 0, 1, &ms), FV_ERR_BAD_STATE, "mark 0");
    FV_ASSERT_OK(fv_timer_mark(t, 0));
    sleep_ms(20);
    FV_ASSERT_OK(fv_timer_mark(t, 1));
    FV_ASSERT_OK(fv_timer_mark(t, 2));
    FV_ASSERT_OK(fv_timer_elapsed(t, 0, 1, &ms));
    assert_true(ms >= 19.0f && ms < 2000.0f);
    FV_ASSERT_OK(fv_timer_elapsed(t, 1, 2, &ms));
    assert_true(ms >= 0.0f && ms < 5.0f);
    FV_ASSERT_OK(fv_timer_elapsed(t, 2, 0, &ms));
    assert_true(ms <= -19.0f);
    FV_ASSERT_OK(fv_timer_mark(t, 0)); /* again: now after mark 1 */
    FV_ASSERT_OK(fv_timer_elapsed(t, 1, 0, &ms));
    assert_true(ms >= 0.0f && ms < 5.0f);
    FV_ASSERT_STATUS(fv_timer_mark(t, 3), FV_ERR_BAD_PARAM, "mark 3");
    FV_ASSERT_STATUS(fv_timer_elapsed(t, 0, -1, &ms), FV_ERR_BAD_PARAM, "-1");
    FV_ASSERT_STATUS(fv_timer_elapsed(t, 0, 1, NULL), FV_ERR_BAD_PARAM, "ms");
    fv_timer_destroy(t);
    fv_timer_destroy(NULL);
    FV_ASSERT_STATUS(fv_timer_create(ctx, 1, &t), FV_ERR_BAD_PARAM, "marks=1");
    assert_null(t);
    FV_ASSERT_STATUS(fv_timer_create(NULL, 2, &t), FV_ERR_BAD_PARAM, "ctx");
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_marks)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
