/* Tensors: shapes, padding, upload/download/copy/convert, pool accounting. */
#include <math.h>
#include <string.h>
#include <limits.h>
#include "fv_test.h"

static fv_tensor *make(fv_context *ctx, fv_dtype dt, int n, int h, int w, int c, fv_pool *pool) {
    fv_tensor *t = NULL;
    fv_tensor_desc d = {.dtype = dt, .n = n, .h = h, .w = w, .c = c, .pool = pool};
    FV_ASSERT_OK(fv_tensor_create(ctx, &d, &t));
    return t;
}

static void f16_channels_are_padded_to_8(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    const int cs[] = {1, 3, 7, 8, 9, 16, 17};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        fv_tensor *t = make(ctx, FV_DTYPE_F16, 2, 5, 3, cs[i], NULL);
        fv_tensor_shape s;
        FV_ASSERT_OK(fv_tensor_shape_get(t, &s));
        assert_int_equal(s.c_stored, ((cs[i] + 7) / 8) * 8);
        assert_int_equal(s.stride[3], 1);
        assert_int_equal(s.stride[2], s.c_stored);
        assert_int_equal(s.stride[1], (size_t)s.c_stored * 3);
        assert_int_equal(s.stride[0], (size_t)s.c_stored * 15);
        assert_int_equal(s.bytes, (size_t)2 * 15 * s.c_stored * 2);
        assert_int_equal(s.dense_bytes, (size_t)2 * 15 * cs[i] * 2);
        assert_int_equal((uintptr_t)fv_tensor_data(t) % FV_ALIGN, 0);
        fv_tensor_destroy(t);
        /* F32 and U8 are not padded */
        t = make(ctx, FV_DTYPE_F32, 1, 2, 2, cs[i], NULL);
        FV_ASSERT_OK(fv_tensor_shape_get(t, &s));
        assert_int_equal(s.c_stored, cs[i]);
        fv_tensor_destroy(t);
    }
    fv_context_destroy(ctx);
}

static void upload_download_keep_padding_zero(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    const int h = 4, w = 5, c = 3;
    fv_tensor *t = make(ctx, FV_DTYPE_F16, 1, h, w, c, NULL);
    fv_half src[4 * 5 * 3], back[4 * 5 * 3];
    fv_test_seed(5);
    for (int i = 0; i < h * w * c; i++)
        src[i] = fv_f32_to_f16(fv_test_rand_uniform(-2, 2));
    FV_ASSERT_OK(fv_tensor_upload(ctx, t, src, sizeof src));
    memset(back, 0xab, sizeof back);
    FV_ASSERT_OK(fv_tensor_download(ctx, t, back, sizeof back));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    assert_memory_equal(src, back, sizeof src);
    const fv_half *raw = fv_tensor_data(t); /* CPU backend: host storage */
    for (int p = 0; p < h * w; p++)
        for (int k = 0; k < 8; k++)
            if (k < c)
                assert_int_equal(raw[p * 8 + k], src[p * c + k]);
            else
                assert_int_equal(raw[p * 8 + k], 0);
    FV_ASSERT_STATUS(fv_tensor_upload(ctx, t, src, sizeof src - 2), FV_ERR_BAD_SHAPE, "118 bytes");
    FV_ASSERT_STATUS(fv_tensor_download(ctx, t, NULL, sizeof src), FV_ERR_BAD_PARAM, "NULL");
    fv_tensor_destroy(t);
    fv_context_destroy(ctx);
}

static void convert_rounds_to_nearest_even(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    const int n = 64;
    fv_tensor *a = make(ctx, FV_DTYPE_F32, 1, 1, n, 5, NULL);
    fv_tensor *h = make(ctx, FV_DTYPE_F16, 1, 1, n, 5, NULL);
    fv_tensor *b = make(ctx, FV_DTYPE_F32, 1, 1, n, 5, NULL);
    float src[64 * 5], back[64 * 5];
    fv_test_seed(11);
    fv_test_fill_uniform(src, 64 * 5, -1000, 1000);
    src[0] = 1e9f;              /* -> inf */
    src[1] = ldexpf(1.0f, -24); /* smallest subnormal */
    src[2] = ldexpf(1.0f, -25); /* tie -> 0 */
    src[3] = NAN;
    src[4] = 1.0f + ldexpf(1, -11); /* tie -> 1 */
    FV_ASSERT_OK(fv_tensor_upload(ctx, a, src, sizeof src));
    FV_ASSERT_OK(fv_tensor_convert(ctx, h, a));
    FV_ASSERT_OK(fv_tensor_convert(ctx, b, h));
    FV_ASSERT_OK(fv_tensor_download(ctx, b, back, sizeof back));
    for (int i = 0; i < n * 5; i++) {
        float want = fv_round_f16(src[i]);
        if (isnan(want))
            assert_true(isnan(back[i]));
        else
            assert_true(back[i] == want);
    }
    assert_true(isinf(back[0]));
    assert_true(back[2] == 0.0f && back[4] == 1.0f);
    /* padding lanes of the F16 tensor stayed zero */
    const fv_half *raw = fv_tensor_data(h);
    for (int p = 0; p < n; p++)
        for (int k = 5; k < 8; k++)
            assert_int_equal(raw[p * 8 + k], 0);
    fv_tensor *u = make(ctx, FV_DTYPE_U8, 1, 1, n, 5, NULL);
    FV_ASSERT_STATUS(fv_tensor_convert(ctx, u, a), FV_ERR_NOT_SUPPORTED, "F32 -> U8");
    fv_tensor *wrong = make(ctx, FV_DTYPE_F16, 1, 1, n, 4, NULL);
    FV_ASSERT_STATUS(fv_tensor_convert(ctx, wrong, a), FV_ERR_BAD_SHAPE, "C=4");
    fv_tensor_destroy(a), fv_tensor_destroy(h), fv_tensor_destroy(b), fv_tensor_destroy(u);
    fv_tensor_destroy(wrong);
    fv_context_destroy(ctx);
}

static void copy_between_pools(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_tensor *pinned = make(ctx, FV_DTYPE_U8, 1, 3, 3, 3, fv_context_pool(ctx, FV_POOL_PINNED));
    fv_tensor *dev = make(ctx, FV_DTYPE_U8, 1, 3, 3, 3, NULL);
    unsigned char src[27], back[27];
    fv_test_fill_bytes(src, 27);
    FV_ASSERT_OK(fv_tensor_upload(ctx, pinned, src, 27));
    FV_ASSERT_OK(fv_tensor_copy(ctx, dev, pinned));
    FV_ASSERT_OK(fv_tensor_download(ctx, dev, back, 27));
    assert_memory_equal(src, back, 27);
    fv_tensor *f = make(ctx, FV_DTYPE_F16, 1, 3, 3, 3, NULL);
    FV_ASSERT_STATUS(fv_tensor_copy(ctx, f, dev), FV_ERR_BAD_SHAPE, "fv_tensor_convert");
    fv_tensor_destroy(pinned), fv_tensor_destroy(dev), fv_tensor_destroy(f);
    fv_context_destroy(ctx);
}

static void bad_descriptors_and_exhaustion(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_tensor *t = (fv_tensor *)1;
    fv_tensor_desc d = {.dtype = (fv_dtype)9, .h = 1, .w = 1, .c = 1};
    FV_ASSERT_STATUS(fv_tensor_create(ctx, &d, &t), FV_ERR_BAD_PARAM, "dtype=9");
    assert_null(t);
    d = (fv_tensor_desc){.h = 1, .w = 1, .c = 0};
    FV_ASSERT_STATUS(fv_tensor_create(ctx, &d, &t), FV_ERR_BAD_PARAM, "C=0");
    d = (fv_tensor_desc){.h = 1, .w = 1, .c = 1, .layout = (fv_layout)3};
    FV_ASSERT_STATUS(fv_tensor_create(ctx, &d, &t), FV_ERR_BAD_PARAM, "layout=3");
    d = (fv_tensor_desc){.h = 100000, .w = 100000, .c = 1000};
    FV_ASSERT_STATUS(fv_tensor_create(ctx, &d, &t), FV_ERR_BAD_PARAM, "too large");
    /* the F16 channel round-up of INT_MAX would overflow an int */
    d = (fv_tensor_desc){.dtype = FV_DTYPE_F16, .h = 1, .w = 1, .c = INT_MAX};
    FV_ASSERT_STATUS(fv_tensor_create(ctx, &d, &t), FV_ERR_BAD_PARAM, "C=2147483647");
    d = (fv_tensor_desc){.dtype = FV_DTYPE_F32, .n = INT_MAX, .h = INT_MAX, .w = INT_MAX, .c = 9};
    FV_ASSERT_STATUS(fv_tensor_create(ctx, &d, &t), FV_ERR_BAD_PARAM, "too large");
    d = (fv_tensor_desc){.h = 4096, .w = 4096, .c = 16}; /* 512 MiB > the 64 MiB pool */
    FV_ASSERT_STATUS(fv_tensor_create(ctx, &d, &t), FV_ERR_OUT_OF_MEMORY, "pool 'device'");
    fv_context *other = fv_test_cpu_context(0);
    d = (fv_tensor_desc){.h = 1, .w = 1, .c = 1, .pool = fv_context_pool(other, FV_POOL_HOST)};
    FV_ASSERT_STATUS(fv_tensor_create(ctx, &d, &t), FV_ERR_BAD_PARAM, "another context");
    fv_context_destroy(other);
    fv_context_destroy(ctx);
}

static void loop_of_work_allocates_nothing(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_tensor *a = make(ctx, FV_DTYPE_F32, 1, 16, 16, 3, NULL);
    fv_tensor *h = make(ctx, FV_DTYPE_F16, 1, 16, 16, 3, NULL);
    float buf[16 * 16 * 3];
    fv_test_fill_uniform(buf, 768, -1, 1);
    fv_pool_stats before[4], after[4];
    for (int k = 0; k < 4; k++)
        if (fv_context_pool(ctx, k))
            FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, k), &before[k]));
    for (int i = 0; i < 200; i++) {
        FV_ASSERT_OK(fv_tensor_upload(ctx, a, buf, sizeof buf));
        FV_ASSERT_OK(fv_tensor_convert(ctx, h, a));
        FV_ASSERT_OK(fv_tensor_convert(ctx, a, h));
        FV_ASSERT_OK(fv_tensor_download(ctx, a, buf, sizeof buf));
    }
    for (int k = 0; k < 4; k++) {
        if (!fv_context_pool(ctx, k)) continue; /* no MAPPED pool on this context */
        FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, k), &after[k]));
        assert_int_equal(after[k].backing_allocs, before[k].backing_allocs);
        assert_int_equal(after[k].carve_outs, before[k].carve_outs);
        assert_int_equal(after[k].in_use, before[k].in_use);
    }
    fv_tensor_destroy(a), fv_tensor_destroy(h);
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f16_channels_are_padded_to_8),
        cmocka_unit_test(upload_download_keep_padding_zero),
        cmocka_unit_test(convert_rounds_to_nearest_even),
        cmocka_unit_test(copy_between_pools),
        cmocka_unit_test(bad_descriptors_and_exhaustion),
        cmocka_unit_test(loop_of_work_allocates_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
