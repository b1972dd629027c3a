/* Pools: alignment of every carve-out, reuse, exhaustion, stats, bad input. */
#include <stdint.h>
#include <string.h>
#include "fv_test.h"

static fv_pool *make_pool(fv_context *ctx, fv_pool_kind kind, size_t bytes, const char *name) {
    fv_pool *p = NULL;
    fv_pool_desc d = {.kind = kind, .bytes = bytes, .name = name};
    FV_ASSERT_OK(fv_pool_create(ctx, &d, &p));
    return p;
}

static void every_carve_out_is_aligned(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    for (int kind = 0; kind < 4; kind++) {
        fv_pool *p = make_pool(ctx, (fv_pool_kind)kind, 1 << 20, NULL);
        void *ptrs[64];
        fv_test_seed(99 + kind);
        for (int i = 0; i < 64; i++) {
            size_t n = 1 + fv_test_rand_u64() % 5000;
            FV_ASSERT_OK(fv_pool_alloc(p, n, &ptrs[i]));
            assert_int_equal((uintptr_t)ptrs[i] % FV_ALIGN, 0);
            memset(ptrs[i], 0x5a, n); /* the whole request is writable */
        }
        /* free every other, then allocate again: still aligned, no overlap */
        for (int i = 0; i < 64; i += 2)
            FV_ASSERT_OK(fv_pool_free(p, ptrs[i]));
        for (int i = 0; i < 64; i += 2) {
            FV_ASSERT_OK(fv_pool_alloc(p, 100, &ptrs[i]));
            assert_int_equal((uintptr_t)ptrs[i] % FV_ALIGN, 0);
        }
        fv_pool_stats st;
        FV_ASSERT_OK(fv_pool_stats_get(p, &st));
        assert_int_equal(st.backing_allocs, 1);
        assert_int_equal(st.carve_outs, 96);
        fv_pool_destroy(p);
    }
    /* the context's own pools too */
    for (int kind = 0; kind < 4; kind++) {
        fv_pool *p = fv_context_pool(ctx, (fv_pool_kind)kind);
        if (!p) continue;
        void *a;
        FV_ASSERT_OK(fv_pool_alloc(p, 3, &a));
        assert_int_equal((uintptr_t)a % FV_ALIGN, 0);
        FV_ASSERT_OK(fv_pool_free(p, a));
    }
    fv_context_destroy(ctx);
}

static void exhaustion_names_pool_request_and_space_left(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_pool *p = make_pool(ctx, FV_POOL_DEVICE, 4096, "frames");
    void *a, *b, *c = (void *)1;
    FV_ASSERT_OK(fv_pool_alloc(p, 3000, &a)); /* 3072 aligned */
    FV_ASSERT_STATUS(fv_pool_alloc(p, 2000, &c), FV_ERR_OUT_OF_MEMORY, "pool 'frames'");
    assert_null(c);
    assert_non_null(strstr(fv_last_error(), "2000 bytes"));
    assert_non_null(strstr(fv_last_error(), "1024 of 4096 bytes free"));
    FV_ASSERT_OK(fv_pool_alloc(p, 1024, &b)); /* exactly the rest */
    fv_pool_stats st;
    FV_ASSERT_OK(fv_pool_stats_get(p, &st));
    assert_int_equal(st.in_use, 4096);
    assert_int_equal(st.peak, 4096);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.largest_free, 0);
    FV_ASSERT_OK(fv_pool_free(p, a));
    FV_ASSERT_OK(fv_pool_stats_get(p, &st));
    assert_int_equal(st.in_use, 1024);
    assert_int_equal(st.peak, 4096);
    assert_int_equal(st.largest_free, 3072);
    FV_ASSERT_OK(fv_pool_free(p, b));
    FV_ASSERT_OK(fv_pool_stats_get(p, &st));
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.largest_free, 4096); /* neighbours merged back into one range */
    fv_pool_destroy(p);
    fv_context_destroy(ctx);
}

static void fragmentation_is_reported(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_pool *p = make_pool(ctx, FV_POOL_HOST, 128 * 8, NULL);
    void *x[8];
    for (int i = 0; i < 8; i++)
        FV_ASSERT_OK(fv_pool_alloc(p, 128, &x[i]));
    for (int i = 0; i < 8; i += 2)
        FV_ASSERT_OK(fv_pool_free(p, x[i]));
    void *y;
    /* 512 bytes free in total but no two free blocks are adjacent */
    FV_ASSERT_STATUS(fv_pool_alloc(p, 256, &y), FV_ERR_OUT_OF_MEMORY, "largest free range 128");
    FV_ASSERT_OK(fv_pool_free(p, x[1])); /* joins 0,1,2 */
    FV_ASSERT_OK(fv_pool_alloc(p, 384, &y));
    assert_ptr_equal(y, x[0]);
    fv_pool_destroy(p);
    fv_context_destroy(ctx);
}

static void bad_input_is_refused(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_pool *p = NULL;
    fv_pool_desc d = {.kind = FV_POOL_HOST, .bytes = 0};
    FV_ASSERT_STATUS(fv_pool_create(ctx, &d, &p), FV_ERR_BAD_PARAM, "bytes is 0");
    d.bytes = 1024;
    d.kind = (fv_pool_kind)7;
    FV_ASSERT_STATUS(fv_pool_create(ctx, &d, &p), FV_ERR_BAD_PARAM, "kind=7");
    d.kind = FV_POOL_HOST;
    d.reserved[2] = 1;
    FV_ASSERT_STATUS(fv_pool_create(ctx, &d, &p), FV_ERR_BAD_PARAM, "reserved[2]");
    FV_ASSERT_STATUS(fv_pool_create(NULL, &d, &p), FV_ERR_BAD_PARAM, "ctx is NULL");
    d.reserved[2] = 0;
    /* sizes whose round-up to FV_ALIGN would wrap to an empty pool */
    for (size_t huge = SIZE_MAX - FV_ALIGN + 2; huge != 0; huge++) {
        d.bytes = huge;
        FV_ASSERT_STATUS(fv_pool_create(ctx, &d, &p), FV_ERR_OUT_OF_MEMORY,
                         "larger than any backing allocation");
        assert_null(p);
    }
    d.reserved[2] = 1;
    p = make_pool(ctx, FV_POOL_HOST, 1024, "small");
    void *a = NULL;
    FV_ASSERT_STATUS(fv_pool_alloc(p, 0, &a), FV_ERR_BAD_PARAM, "0 bytes");
    FV_ASSERT_STATUS(fv_pool_alloc(p, SIZE_MAX, &a), FV_ERR_OUT_OF_MEMORY, "small");
    FV_ASSERT_OK(fv_pool_alloc(p, 10, &a));
    int on_stack;
    FV_ASSERT_STATUS(fv_pool_free(p, &on_stack), FV_ERR_BAD_PARAM, "not inside pool 'small'");
    FV_ASSERT_STATUS(fv_pool_free(p, (char *)a + 128), FV_ERR_BAD_PARAM, "not a live carve-out");
    FV_ASSERT_OK(fv_pool_free(p, a));
    FV_ASSERT_STATUS(fv_pool_free(p, a), FV_ERR_BAD_PARAM,
                     "not a live carve-out"); /* double free */
    FV_ASSERT_OK(fv_pool_free(p, NULL));
    fv_pool_destroy(p);
    fv_pool_destroy(NULL);
    /* a context's own pool is not destroyed through fv_pool_destroy */
    fv_pool_destroy(fv_context_pool(ctx, FV_POOL_HOST));
    FV_ASSERT_OK(fv_pool_alloc(fv_context_pool(ctx, FV_POOL_HOST), 64, &a));
    fv_context_destroy(ctx);
}

static void many_small_carve_outs_hit_the_block_table_cleanly(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_pool *p = make_pool(ctx, FV_POOL_HOST, (size_t)128 * 5000, "tiny");
    void *a;
    fv_status s = FV_OK;
    int n = 0;
    while ((s = fv_pool_alloc(p, 1, &a)) == FV_OK)
        n++;
    assert_int_equal(s, FV_ERR_OUT_OF_MEMORY);
    assert_true(n >= 4000);
    assert_non_null(strstr(fv_last_error(), "tiny"));
    fv_pool_destroy(p);
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_carve_out_is_aligned),
        cmocka_unit_test(exhaustion_names_pool_request_and_space_left),
        cmocka_unit_test(fragmentation_is_reported),
        cmocka_unit_test(bad_input_is_refused),
        cmocka_unit_test(many_small_carve_outs_hit_the_block_table_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
