/* Context: backend choice, info, descriptor checks, logging. */
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include "fv_test.h"

static void cpu_context_reports_what_it_runs_on(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_context_info info;
    FV_ASSERT_OK(fv_context_info_get(ctx, &info));
    assert_int_equal(info.backend, FV_BACKEND_CPU);
    assert_string_equal(info.backend_name, "cpu");
    assert_true(strlen(info.device_name) > 0);
    assert_int_equal(info.device_index, -1);
    assert_int_equal(info.tensor_cores, 0);
    assert_true(strlen(info.tensor_core_reason) > 0);
    assert_true(info.multiprocessors >= 1);
    assert_int_equal(info.fovea_built_with_cuda, FV_BUILT_WITH_CUDA);
    assert_int_equal(fv_context_backend(ctx), FV_BACKEND_CPU);
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    fv_context_destroy(ctx);
    fv_context_destroy(NULL);
}

static void auto_without_gpu_is_cpu_and_cuda_is_refused(void **state) {
    fv_context *ctx = NULL;
    fv_context_desc d = {.backend = FV_BACKEND_CUDA};
    fv_status s = fv_context_create(&d, &ctx);
    if (s == FV_OK) { /* a GPU machine: AUTO must then pick CUDA */
        fv_context_destroy(ctx);
        FV_ASSERT_OK(fv_context_create(NULL, &ctx));
        assert_int_equal(fv_context_backend(ctx), FV_BACKEND_CUDA);
        fv_context_destroy(ctx);
        skip();
    }
    assert_int_equal(s, FV_ERR_NO_DEVICE);
    assert_null(ctx);
    assert_non_null(strstr(fv_last_error(), "CUDA backend requested but unusable"));
    FV_ASSERT_OK(fv_context_create(NULL, &ctx));
    fv_context_info info;
    FV_ASSERT_OK(fv_context_info_get(ctx, &info));
    assert_int_equal(info.backend, FV_BACKEND_CPU);
    assert_true(strlen(info.no_gpu_reason) > 0); /* says why it is not on a GPU */
    fv_context_destroy(ctx);
}

static void bad_descriptors_are_refused(void **state) {
    fv_context *ctx = (fv_context *)1;
    fv_context_desc d = {.backend = (fv_backend)9};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_BAD_PARAM, "backend=9");
    assert_null(ctx);
    d = (fv_context_desc){.device = -2};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_BAD_PARAM, "device=-2");
    d = (fv_context_desc){.flags = 0x80};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_BAD_PARAM, "flags 0x80");
    d = (fv_context_desc){.log_level = (fv_log_level)7};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_BAD_PARAM, "log_level=7");
    d = (fv_context_desc){0};
    d.reserved[3] = 5;
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_BAD_PARAM, "reserved[3]");
    FV_ASSERT_STATUS(fv_context_create(NULL, NULL), FV_ERR_BAD_PARAM, "out is NULL");
    /* a pool too large to reserve is an out-of-memory error naming the pool */
    d = (fv_context_desc){.backend = FV_BACKEND_CPU, .host_pool_bytes = (size_t)1 << 62};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_OUT_OF_MEMORY, "host");
    /* SIZE_MAX must not wrap to an empty pool when rounded up to FV_ALIGN */
    d = (fv_context_desc){.backend = FV_BACKEND_CPU, .device_pool_bytes = SIZE_MAX};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_OUT_OF_MEMORY, "device");
    assert_null(ctx);
}

typedef struct {
    int calls;
    fv_log_level worst;
    char last[256];
} log_sink;

static void sink(fv_log_level level, const char *msg, void *user) {
    log_sink *s = user;
    s->calls++;
    if (level > s->worst) s->worst = level;
    snprintf(s->last, sizeof s->last, "%s", msg);
}

static void log_callback_gets_messages_up_to_its_level(void **state) {
    log_sink s = {0};
    fv_context *ctx = NULL;
    fv_context_desc d = {
        .backend = FV_BACKEND_CPU, .log = sink, .log_user = &s, .log_level = FV_LOG_INFO};
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    assert_true(s.calls >= 1);
    assert_true(s.worst <= FV_LOG_INFO); /* no DEBUG at INFO level */
    assert_non_null(strstr(s.last, "backend cpu"));
    fv_context_destroy(ctx);
    log_sink q = {0};
    d.log_user = &q;
    d.log_level = FV_LOG_DEBUG;
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    assert_int_equal(q.worst, FV_LOG_DEBUG); /* pool reservations are logged at DEBUG */
    assert_true(q.calls > s.calls);
    fv_context_destroy(ctx);
    /* a profile that does not exist is named, and said to be missing */
    log_sink w = {0};
    d = (fv_context_desc){.backend = FV_BACKEND_CPU,
                          .log = sink,
                          .log_user = &w,
                          .log_level = FV_LOG_WARN,
                          .profile_path = "/nonexistent/p.profile"};
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    if (!strstr(w.last, "/nonexistent/p.profile") || !strstr(w.last, "No such file"))
        fail_msg("missing profile: '%s'", w.last);
    fv_context_destroy(ctx);
}

static void pools_have_the_sizes_asked_for(void **state) {
    fv_context *ctx = NULL;
    fv_context_desc d = {.backend = FV_BACKEND_CPU,
                         .device_pool_bytes = 1000,
                         .pinned_pool_bytes = 3 << 20,
                         .mapped_pool_bytes = 4096};
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    fv_pool_stats st;
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_DEVICE), &st));
    assert_int_equal(st.reserved, 1024); /* rounded up to FV_ALIGN */
    assert_int_equal(st.backing_allocs, 1);
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_PINNED), &st));
    assert_int_equal(st.reserved, 3 << 20);
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_MAPPED), &st));
    assert_int_equal(st.reserved, 4096);
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_HOST), &st));
    assert_int_equal(st.reserved, 64 << 20); /* default */
    assert_string_equal(fv_pool_name(fv_context_pool(ctx, FV_POOL_PINNED)), "pinned");
    assert_null(fv_context_pool(ctx, (fv_pool_kind)9));
    fv_context_destroy(ctx);
}

/* As uv_loop_close: a context with live objects is refused, intact. */
static void destroy_with_live_objects_is_refused(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_tensor *a = NULL, *b = NULL;
    fv_tensor_desc td = {.dtype = FV_DTYPE_F32, .h = 4, .w = 4, .c = 1};
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &a));
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &b));
    float w[9] = {0};
    fv_conv2d_desc cd = {
        .h = 4, .w = 4, .c = 1, .k = 1, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1, .weights = w};
    cd.dtype = FV_DTYPE_F32;
    fv_conv2d *conv = NULL;
    FV_ASSERT_OK(fv_conv2d_create(ctx, &cd, &conv));
    fv_pool *pool = NULL;
    FV_ASSERT_OK(fv_pool_create(ctx, &(fv_pool_desc){.kind = FV_POOL_HOST, .bytes = 4096}, &pool));
    fv_filter *f = NULL;
    FV_ASSERT_OK(fv_filter_create(
        ctx, &(fv_filter_desc){.kind = FV_FILTER_LAPLACIAN, .width = 8, .height = 8}, &f));
    FV_ASSERT_STATUS(fv_context_destroy(ctx), FV_ERR_BAD_STATE, "2 tensors");
    assert_non_null(strstr(fv_last_error(), "1 conv2d"));
    assert_non_null(strstr(fv_last_error(), "1 pool"));
    assert_non_null(strstr(fv_last_error(), "1 filter"));
    /* the context still works: nothing was freed */
    FV_ASSERT_OK(fv_tensor_upload(ctx, a, (float[16]){0}, 16 * sizeof(float)));
    FV_ASSERT_OK(fv_conv2d_forward(conv, a, b));
    fv_filter_destroy(f);
    fv_pool_destroy(pool);
    fv_conv2d_destroy(conv);
    fv_tensor_destroy(a);
    FV_ASSERT_STATUS(fv_context_destroy(ctx), FV_ERR_BAD_STATE, "1 tensor");
    assert_null(strstr(fv_last_error(), "conv2d"));
    fv_tensor_destroy(b);
    FV_ASSERT_OK(fv_context_destroy(ctx));
    FV_ASSERT_OK(fv_context_destroy(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpu_context_reports_what_it_runs_on),
        cmocka_unit_test(auto_without_gpu_is_cpu_and_cuda_is_refused),
        cmocka_unit_test(bad_descriptors_are_refused),
        cmocka_unit_test(log_callback_gets_messages_up_to_its_level),
        cmocka_unit_test(pools_have_the_sizes_asked_for),
        cmocka_unit_test(destroy_with_live_objects_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
