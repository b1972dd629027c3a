/* Memory policies and frame buffers on the CPU backend: AUTO resolves to
 * DEVICE, ZERO_COPY and DEVICE can be forced, each puts frames in its pools
 * (MAPPED; PINNED + DEVICE), upload and download move the bytes (or need
 * not), frames through fv_filter come out the same under both, nothing is
 * carved per frame, bad arguments are refused. */
#include "fv_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 64
#define H 48

static fv_context *policy_context(fv_memory_policy p, size_t mapped_bytes) {
    fv_context_desc d = {.backend = FV_BACKEND_CPU,
                         .device_pool_bytes = 16u << 20,
                         .pinned_pool_bytes = 1u << 20,
                         .mapped_pool_bytes = mapped_bytes,
                         .host_pool_bytes = 4u << 20,
                         .memory_policy = p};
    fv_context *ctx = NULL;
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    return ctx;
}

static fv_pool_stats stats(fv_context *ctx, fv_pool_kind k) {
    fv_pool_stats s;
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, k), &s));
    return s;
}

static void policies_resolve(void **state) {
    (void)state;
    FILE *f = fopen("/etc/nv_tegra_release", "r");
    int tegra = f != NULL;
    if (f) fclose(f);
    fv_context_info info;

    fv_context *ctx = policy_context(FV_MEMORY_POLICY_AUTO, 0);
    FV_ASSERT_OK(fv_context_info_get(ctx, &info));
    assert_int_equal(info.memory_policy, FV_MEMORY_POLICY_DEVICE); /* CPU: never zero-copy */
    assert_int_equal(info.tegra, tegra);
    assert_null(fv_context_pool(ctx, FV_POOL_MAPPED));
    fv_context_destroy(ctx);

    ctx = policy_context(FV_MEMORY_POLICY_ZERO_COPY, 0);
    FV_ASSERT_OK(fv_context_info_get(ctx, &info));
    assert_int_equal(info.memory_policy, FV_MEMORY_POLICY_ZERO_COPY);
    assert_non_null(fv_context_pool(ctx, FV_POOL_MAPPED)); /* made for the policy: 64 MiB */
    assert_int_equal(stats(ctx, FV_POOL_MAPPED).reserved, (size_t)64 << 20);
    fv_context_destroy(ctx);

    ctx = policy_context(FV_MEMORY_POLICY_DEVICE, 0);
    FV_ASSERT_OK(fv_context_info_get(ctx, &info));
    assert_int_equal(info.memory_policy, FV_MEMORY_POLICY_DEVICE);
    fv_context_destroy(ctx);

    fv_context_desc bad = {.backend = FV_BACKEND_CPU, .memory_policy = (fv_memory_policy)9};
    FV_ASSERT_STATUS(fv_context_create(&bad, &ctx), FV_ERR_BAD_PARAM, "memory_policy=9");
    assert_null(ctx);
    assert_string_equal(fv_memory_policy_name(FV_MEMORY_POLICY_AUTO), "auto");
    assert_string_equal(fv_memory_policy_name(FV_MEMORY_POLICY_ZERO_COPY), "zero-copy");
    assert_string_equal(fv_memory_policy_name(FV_MEMORY_POLICY_DEVICE), "device");
    assert_string_equal(fv_memory_policy_name((fv_memory_policy)7), "unknown");
}

/* Runs frames through a Laplacian filter under policy p; returns the last
 * output (malloc'd, W * H GRAY8 bytes). Checks pools and pointers on the way. */
static unsigned char *run_frames(fv_memory_policy p) {
    fv_context *ctx = policy_context(p, p == FV_MEMORY_POLICY_ZERO_COPY ? 1u << 20 : 0);
    const int zc = p == FV_MEMORY_POLICY_ZERO_COPY;
    fv_frame_buffer *in = NULL, *out = NULL;
    fv_pool_kind host_kind = zc ? FV_POOL_MAPPED : FV_POOL_PINNED;
    fv_pool_stats h0 = stats(ctx, host_kind);
    FV_ASSERT_OK(fv_frame_buffer_create(ctx, FV_PIXEL_RGB24, W, H, &in));
    FV_ASSERT_OK(fv_frame_buffer_create(ctx, FV_PIXEL_GRAY8, W, H, &out));
    fv_frame_buffer_info ii, oi;
    FV_ASSERT_OK(fv_frame_buffer_info_get(in, &ii));
    FV_ASSERT_OK(fv_frame_buffer_info_get(out, &oi));
    assert_int_equal(ii.policy, p);
    assert_int_equal(ii.bytes, (size_t)W * H * 3);
    assert_int_equal(oi.bytes, (size_t)W * H);
    assert_int_equal(ii.host_pool, host_kind);
    assert_int_equal(ii.device_pool, zc ? FV_POOL_MAPPED : FV_POOL_DEVICE);
    assert_ptr_equal(fv_frame_buffer_data(in), ii.host.data);
    fv_image a = fv_frame_buffer_image(in), b = fv_frame_buffer_image(out);
    assert_int_equal(a.format, FV_PIXEL_RGB24);
    assert_int_equal(a.width, W);
    assert_int_equal(b.height, H);
    if (zc)
        assert_ptr_equal(a.data, fv_frame_buffer_data(in)); /* one buffer, no copies */
    else
        assert_ptr_not_equal(a.data, fv_frame_buffer_data(in));
    /* both frames' host views come from the policy's host pool */
    assert_true(stats(ctx, host_kind).in_use >= h0.in_use + ii.bytes + oi.bytes);

    fv_filter *f = NULL;
    fv_filter_desc fd = {.width = W, .height = H, .format = FV_PIXEL_RGB24};
    FV_ASSERT_OK(fv_filter_create(ctx, &fd, &f));
    fv_pool_stats before[4];
    for (int k = 0; k < 4; k++)
        if (fv_context_pool(ctx, (fv_pool_kind)k)) before[k] = stats(ctx, (fv_pool_kind)k);

    fv_test_seed(42);
    for (int frame = 0; frame < 3; frame++) {
        unsigned char *px = fv_frame_buffer_data(in);
        fv_test_fill_bytes(px, ii.bytes);
        FV_ASSERT_OK(fv_frame_buffer_upload(ctx, in));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        /* CPU backend: the device view is host memory, readable here */
        assert_memory_equal(fv_frame_buffer_image(in).data, px, ii.bytes);
        FV_ASSERT_OK(fv_filter_apply(f, &a, &b));
        FV_ASSERT_OK(fv_frame_buffer_download(ctx, out));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        assert_memory_equal(fv_frame_buffer_data(out), b.data, oi.bytes);
    }
    for (int k = 0; k < 4; k++) { /* nothing carved per frame */
        if (!fv_context_pool(ctx, (fv_pool_kind)k)) continue;
        fv_pool_stats s = stats(ctx, (fv_pool_kind)k);
        assert_int_equal(s.carve_outs, before[k].carve_outs);
        assert_int_equal(s.backing_allocs, 1);
    }
    unsigned char *result = malloc(oi.bytes);
    assert_non_null(result);
    memcpy(result, fv_frame_buffer_data(out), oi.bytes);
    fv_filter_destroy(f);
    fv_frame_buffer_destroy(in);
    fv_frame_buffer_destroy(out);
    assert_int_equal(stats(ctx, host_kind).in_use, h0.in_use); /* all returned */
    fv_context_destroy(ctx);
    return result;
}

static void both_policies_give_the_same_frames(void **state) {
    (void)state;
    unsigned char *zc = run_frames(FV_MEMORY_POLICY_ZERO_COPY);
    unsigned char *dev = run_frames(FV_MEMORY_POLICY_DEVICE);
    size_t nonzero = 0;
    for (size_t i = 0; i < (size_t)W * H; i++)
        nonzero += zc[i] != 0;
    assert_true(nonzero > 0); /* random input has edges */
    assert_memory_equal(zc, dev, (size_t)W * H);
    free(zc);
    free(dev);
}

static void every_format_has_its_size(void **state) {
    (void)state;
    static const fv_pixel_format fmts[] = {FV_PIXEL_GRAY8,  FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                           FV_PIXEL_RGBA32, FV_PIXEL_YUYV,  FV_PIXEL_NV12};
    fv_context *ctx = policy_context(FV_MEMORY_POLICY_DEVICE, 0);
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        fv_frame_buffer *fb = NULL;
        FV_ASSERT_OK(fv_frame_buffer_create(ctx, fmts[i], 6, 4, &fb));
        fv_frame_buffer_info info;
        FV_ASSERT_OK(fv_frame_buffer_info_get(fb, &info));
        assert_int_equal(info.bytes, fv_image_bytes(fmts[i], 6, 4));
        assert_int_equal(info.device.format, fmts[i]);
        assert_int_equal(info.host.stride, 0);
        /* zeroed at creation, under either view */
        unsigned char zero[6 * 4 * 4] = {0};
        assert_memory_equal(fv_frame_buffer_data(fb), zero, info.bytes);
        assert_memory_equal(info.device.data, zero, info.bytes);
        fv_frame_buffer_destroy(fb);
    }
    fv_context_destroy(ctx);
}

static void bad_arguments_are_refused(void **state) {
    (void)state;
    fv_context *ctx = policy_context(FV_MEMORY_POLICY_DEVICE, 0);
    fv_context *other = policy_context(FV_MEMORY_POLICY_DEVICE, 0);
    fv_frame_buffer *fb = (fv_frame_buffer *)&fb; /* must be reset to NULL */
    FV_ASSERT_STATUS(fv_frame_buffer_create(ctx, FV_PIXEL_RGB24, 8, 8, NULL), FV_ERR_BAD_PARAM,
                     "out is NULL");
    FV_ASSERT_STATUS(fv_frame_buffer_create(NULL, FV_PIXEL_RGB24, 8, 8, &fb), FV_ERR_BAD_PARAM,
                     "ctx is NULL");
    assert_null(fb);
    FV_ASSERT_STATUS(fv_frame_buffer_create(ctx, FV_PIXEL_RGB24, 0, 8, &fb), FV_ERR_BAD_PARAM,
                     "0x8");
    FV_ASSERT_STATUS(fv_frame_buffer_create(ctx, (fv_pixel_format)99, 8, 8, &fb), FV_ERR_BAD_PARAM,
                     "format 99");
    FV_ASSERT_STATUS(fv_frame_buffer_create(ctx, FV_PIXEL_YUYV, 7, 8, &fb), FV_ERR_BAD_PARAM,
                     "YUYV width 7");
    FV_ASSERT_STATUS(fv_frame_buffer_create(ctx, FV_PIXEL_NV12, 8, 7, &fb), FV_ERR_BAD_PARAM,
                     "NV12 size 8x7");
    /* pools too small: the message names the pool */
    FV_ASSERT_STATUS(fv_frame_buffer_create(ctx, FV_PIXEL_RGB24, 1024, 1024, &fb),
                     FV_ERR_OUT_OF_MEMORY, "pinned");
    fv_context *zc = policy_context(FV_MEMORY_POLICY_ZERO_COPY, 4096);
    FV_ASSERT_STATUS(fv_frame_buffer_create(zc, FV_PIXEL_RGB24, 64, 64, &fb), FV_ERR_OUT_OF_MEMORY,
                     "mapped");
    assert_null(fb);
    fv_context_destroy(zc);

    FV_ASSERT_OK(fv_frame_buffer_create(ctx, FV_PIXEL_GRAY8, 8, 8, &fb));
    FV_ASSERT_STATUS(fv_frame_buffer_upload(NULL, fb), FV_ERR_BAD_PARAM, "ctx is NULL");
    FV_ASSERT_STATUS(fv_frame_buffer_upload(ctx, NULL), FV_ERR_BAD_PARAM, "fb is NULL");
    FV_ASSERT_STATUS(fv_frame_buffer_download(other, fb), FV_ERR_BAD_PARAM, "another context");
    FV_ASSERT_STATUS(fv_frame_buffer_info_get(fb, NULL), FV_ERR_BAD_PARAM, "out is NULL");
    FV_ASSERT_STATUS(fv_frame_buffer_info_get(NULL, NULL), FV_ERR_BAD_PARAM, "fb is NULL");
    assert_null(fv_frame_buffer_data(NULL));
    assert_null(fv_frame_buffer_image(NULL).data);
    fv_frame_buffer_destroy(fb);
    fv_frame_buffer_destroy(NULL);
    fv_context_destroy(other);
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(policies_resolve),
        cmocka_unit_test(both_policies_give_the_same_frames),
        cmocka_unit_test(every_format_has_its_size),
        cmocka_unit_test(bad_arguments_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
