/* Status names, categories and the thread-local last-error message. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "fv_test.h"

static void names_and_categories(void **state) {
    const struct {
        fv_status s;
        const char *name;
        fv_status_category cat;
    } all[] = {
        {FV_OK, "FV_OK", FV_CATEGORY_OK},
        {FV_ERR_BAD_PARAM, "FV_ERR_BAD_PARAM", FV_CATEGORY_BAD_PARAM},
        {FV_ERR_BAD_SHAPE, "FV_ERR_BAD_SHAPE", FV_CATEGORY_BAD_PARAM},
        {FV_ERR_BAD_STATE, "FV_ERR_BAD_STATE", FV_CATEGORY_BAD_PARAM},
        {FV_ERR_NOT_SUPPORTED, "FV_ERR_NOT_SUPPORTED", FV_CATEGORY_NOT_SUPPORTED},
        {FV_ERR_NO_DEVICE, "FV_ERR_NO_DEVICE", FV_CATEGORY_NOT_SUPPORTED},
        {FV_ERR_OUT_OF_MEMORY, "FV_ERR_OUT_OF_MEMORY", FV_CATEGORY_OUT_OF_MEMORY},
        {FV_ERR_CUDA, "FV_ERR_CUDA", FV_CATEGORY_DEVICE},
        {FV_ERR_CUDNN, "FV_ERR_CUDNN", FV_CATEGORY_DEVICE},
        {FV_ERR_LIBRARY, "FV_ERR_LIBRARY", FV_CATEGORY_DEVICE},
        {FV_ERR_IO, "FV_ERR_IO", FV_CATEGORY_IO},
        {FV_ERR_FORMAT, "FV_ERR_FORMAT", FV_CATEGORY_IO},
        {FV_ERR_NOT_READY, "FV_ERR_NOT_READY", FV_CATEGORY_NOT_READY},
        {FV_ERR_TIMEOUT, "FV_ERR_TIMEOUT", FV_CATEGORY_NOT_READY},
        {FV_ERR_END_OF_STREAM, "FV_ERR_END_OF_STREAM", FV_CATEGORY_END_OF_STREAM},
        {FV_ERR_INTERNAL, "FV_ERR_INTERNAL", FV_CATEGORY_INTERNAL},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        assert_string_equal(fv_status_name(all[i].s), all[i].name);
        assert_int_equal(fv_status_category_of(all[i].s), all[i].cat);
    }
    assert_string_equal(fv_status_name((fv_status)12345), "FV_STATUS_UNKNOWN");
    assert_int_equal(fv_status_category_of((fv_status)12345), FV_CATEGORY_INTERNAL);
}

static void last_error_names_the_call_and_value(void **state) {
    fv_clear_error();
    assert_string_equal(fv_last_error(), "");
    fv_context *ctx = fv_test_cpu_context(0);
    fv_tensor *t = NULL;
    fv_tensor_desc d = {.dtype = FV_DTYPE_F16, .h = 4, .w = -3, .c = 2};
    FV_ASSERT_STATUS(fv_tensor_create(ctx, &d, &t), FV_ERR_BAD_PARAM, "W=-3");
    assert_null(t);
    /* a success leaves the message alone; a new failure replaces it */
    d.w = 3;
    FV_ASSERT_OK(fv_tensor_create(ctx, &d, &t));
    assert_non_null(strstr(fv_last_error(), "W=-3"));
    fv_tensor_destroy(t);
    FV_ASSERT_STATUS(fv_context_info_get(ctx, NULL), FV_ERR_BAD_PARAM, "info is NULL");
    fv_context_destroy(ctx);
}

static void *other_thread(void *arg) {
    fv_clear_error();
    fv_pool_alloc(NULL, 16, (void **)arg);
    return NULL;
}

static void last_error_is_per_thread(void **state) {
    fv_clear_error();
    FV_ASSERT_STATUS(fv_context_synchronize(NULL), FV_ERR_BAD_PARAM, "ctx is NULL");
    pthread_t th;
    void *p = (void *)1;
    assert_int_equal(pthread_create(&th, NULL, other_thread, &p), 0);
    pthread_join(th, NULL);
    assert_null(p);
    /* the other thread's failure did not touch this thread's message */
    assert_non_null(strstr(fv_last_error(), "fv_context_synchronize"));
}

static void version_is_set(void **state) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", FV_VERSION_MAJOR, FV_VERSION_MINOR, FV_VERSION_PATCH);
    assert_string_equal(fv_version(), want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_and_categories),
        cmocka_unit_test(last_error_names_the_call_and_value),
        cmocka_unit_test(last_error_is_per_thread),
        cmocka_unit_test(version_is_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
