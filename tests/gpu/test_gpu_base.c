/* CUDA backend base: context info, pools of every kind, copies between
 * device and host, dtype conversion, allocation-free loops, refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

static fv_context *g_ctx; /* the CUDA context, made first in main() */

static fv_tensor *make(fv_context *ctx, fv_dtype dt, int n, int h, int w, int c, fv_pool *pool) {
    fv_tensor *t = NULL;
    fv_tensor_desc d = {.dtype = dt, .n = n, .h = h, .w = w, .c = c, .pool = pool};
    FV_ASSERT_OK(fv_tensor_create(ctx, &d, &t));
    return t;
}

static fv_tensor_shape shape_of(const fv_tensor *t) {
    fv_tensor_shape s;
    FV_ASSERT_OK(fv_tensor_shape_get(t, &s));
    return s;
}

static fv_pool *pinned(void) {
    return fv_context_pool(g_ctx, FV_POOL_PINNED);
}

/* The raw storage of a device tensor, padding included (malloc'd). */
static void *read_raw(fv_tensor *t) {
    fv_tensor_shape s = shape_of(t);
    fv_tensor *h = make(g_ctx, s.dtype, s.n, s.h, s.w, s.c, pinned());
    FV_ASSERT_OK(fv_tensor_copy(g_ctx, h, t));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    void *out = malloc(s.bytes);
    assert_non_null(out);
    memcpy(out, fv_tensor_data(h), s.bytes);
    fv_tensor_destroy(h);
    return out;
}

static int cudnn_major(int v) {
    return v >= 90000 ? v / 10000 : v / 1000;
}

static void info_is_sane(void **state) {
    fv_context_info in;
    FV_ASSERT_OK(fv_context_info_get(g_ctx, &in));
    assert_int_equal(in.backend, FV_BACKEND_CUDA);
    assert_string_equal(in.backend_name, "cuda");
    assert_int_equal(fv_context_backend(g_ctx), FV_BACKEND_CUDA);
    assert_true(strlen(in.device_name) > 0);
    assert_int_equal(in.device_index, 0);
    assert_true(in.sm_major * 10 + in.sm_minor >= 75);
    assert_true(in.multiprocessors >= 1);
    assert_true(in.integrated == 0 || in.integrated == 1);
    assert_int_equal(in.tensor_cores, 1);
    assert_string_equal(in.tensor_core_reason, "");
    assert_true(in.device_memory_total > 0);
    assert_true(in.device_memory_free <= in.device_memory_total);
    assert_true(in.cuda_runtime_compiled >= 11000);
    assert_true(in.cuda_runtime_loaded >= 11000);
    assert_true(in.cuda_driver >= in.cuda_runtime_loaded);
    assert_true(in.cudnn_compiled > 0 && in.cudnn_loaded > 0);
    assert_int_equal(cudnn_major(in.cudnn_loaded), cudnn_major(in.cudnn_compiled));
    assert_int_equal(in.fovea_built_with_cuda, 1);
    assert_string_equal(in.no_gpu_reason, "");
    printf("  %s sm_%d%d, %d SMs, CUDA %d/%d driver %d, cuDNN %d/%d\n", in.device_name, in.sm_major,
           in.sm_minor, in.multiprocessors, in.cuda_runtime_compiled, in.cuda_runtime_loaded,
           in.cuda_driver, in.cudnn_compiled, in.cudnn_loaded);
}

static void log_names_the_device(fv_log_level level, const char *msg, void *user) {
    if (strstr(msg, "sm_")) *(int *)user = 1;
}

static void context_logs_and_syncs(void **state) {
    int seen = 0;
    fv_context_desc d = {.backend = FV_BACKEND_CUDA,
                         .log = log_names_the_device,
                         .log_user = &seen,
                         .log_level = FV_LOG_INFO,
                         .device_pool_bytes = 1u << 20,
                         .pinned_pool_bytes = 1u << 20,
                         .mapped_pool_bytes = 1u << 20,
                         .host_pool_bytes = 1u << 20};
    fv_context *ctx = NULL;
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    assert_int_equal(seen, 1);
    assert_non_null(fv_context_pool(ctx, FV_POOL_MAPPED));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    fv_context_destroy(ctx);
    /* AUTO on this machine picks the GPU */
    FV_ASSERT_OK(fv_context_create(NULL, &ctx));
    assert_int_equal(fv_context_backend(ctx), FV_BACKEND_CUDA);
    fv_context_destroy(ctx);
}

static void carve_outs_are_aligned(void **state) {
    const size_t sizes[] = {1, 3, 127, 128, 129, 1000, 4097, 65536 + 5};
    const size_t ns = sizeof sizes / sizeof sizes[0];
    for (int k = 0; k < 4; k++) {
        /* the context's own pool (MAPPED absent on discrete GPUs) and one made here */
        fv_pool *own = fv_context_pool(g_ctx, (fv_pool_kind)k), *made = NULL;
        fv_pool_desc pd = {.kind = (fv_pool_kind)k, .bytes = 1u << 20, .name = "aligned"};
        FV_ASSERT_OK(fv_pool_create(g_ctx, &pd, &made));
        assert_int_equal(fv_pool_kind_of(made), k);
        fv_pool *pools[2] = {own, made};
        for (int j = 0; j < 2; j++) {
            if (!pools[j]) continue;
            void *p[8];
            for (size_t i = 0; i < ns; i++) {
                FV_ASSERT_OK(fv_pool_alloc(pools[j], sizes[i], &p[i]));
                assert_int_equal((uintptr_t)p[i] % FV_ALIGN, 0);
                void *dev = fv_pool_device_pointer(pools[j], p[i]);
                assert_non_null(dev);
                assert_int_equal((uintptr_t)dev % FV_ALIGN, 0);
            }
            for (size_t i = 0; i < ns; i++)
                FV_ASSERT_OK(fv_pool_free(pools[j], p[i]));
        }
        fv_pool_destroy(made);
    }
}

static void exhaustion_names_the_pool(void **state) {
    for (int k = 0; k < 4; k++) {
        char name[32];
        snprintf(name, sizeof name, "tiny-%s", fv_pool_kind_name((fv_pool_kind)k));
        fv_pool_desc pd = {.kind = (fv_pool_kind)k, .bytes = 4096, .name = name};
        fv_pool *pool = NULL;
        FV_ASSERT_OK(fv_pool_create(g_ctx, &pd, &pool));
        void *a = NULL, *b = NULL;
        FV_ASSERT_OK(fv_pool_alloc(pool, 4096, &a));
        FV_ASSERT_STATUS(fv_pool_alloc(pool, 1, &b), FV_ERR_OUT_OF_MEMORY, name);
        assert_null(b);
        fv_pool_stats st;
        FV_ASSERT_OK(fv_pool_stats_get(pool, &st));
        assert_int_equal(st.failed, 1);
        assert_int_equal(st.backing_allocs, 1);
        FV_ASSERT_OK(fv_pool_free(pool, a));
        fv_pool_destroy(pool);
    }
    /* A tensor larger than the context's DEVICE pool. */
    fv_tensor *t = (fv_tensor *)1;
    fv_tensor_desc td = {.dtype = FV_DTYPE_F32, .h = 8192, .w = 8192, .c = 4};
    FV_ASSERT_STATUS(fv_tensor_create(g_ctx, &td, &t), FV_ERR_OUT_OF_MEMORY, "pool 'device'");
    assert_null(t);
    /* A backing allocation the GPU cannot hold: named, and CUDA's error state
     * is left clean (the next kernel still runs). */
    fv_pool_desc huge = {.kind = FV_POOL_DEVICE, .bytes = (size_t)1 << 50, .name = "huge-dev"};
    fv_pool *pool = (fv_pool *)1;
    FV_ASSERT_STATUS(fv_pool_create(g_ctx, &huge, &pool), FV_ERR_OUT_OF_MEMORY, "huge-dev");
    assert_null(pool);
    fv_tensor *a = make(g_ctx, FV_DTYPE_F32, 1, 2, 2, 3, NULL);
    fv_tensor *h = make(g_ctx, FV_DTYPE_F16, 1, 2, 2, 3, NULL);
    float v[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, back[12];
    FV_ASSERT_OK(fv_tensor_upload(g_ctx, a, v, sizeof v));
    FV_ASSERT_OK(fv_tensor_convert(g_ctx, h, a));
    FV_ASSERT_OK(fv_tensor_convert(g_ctx, a, h));
    FV_ASSERT_OK(fv_tensor_download(g_ctx, a, back, sizeof back));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    assert_memory_equal(v, back, sizeof v);
    fv_tensor_destroy(a), fv_tensor_destroy(h);
}

static void round_trips_through_device_and_pinned(void **state) {
    const fv_dtype dts[] = {FV_DTYPE_F32, FV_DTYPE_F16, FV_DTYPE_U8};
    const int cs[] = {1, 3, 5, 8, 13};
    const fv_pool_kind kinds[] = {FV_POOL_DEVICE, FV_POOL_PINNED};
    fv_test_seed(1);
    for (int di = 0; di < 3; di++)
        for (int ci = 0; ci < 5; ci++)
            for (int ki = 0; ki < 2; ki++) {
                fv_tensor *t =
                    make(g_ctx, dts[di], 2, 7, 5, cs[ci], fv_context_pool(g_ctx, kinds[ki]));
                fv_tensor_shape s = shape_of(t);
                unsigned char *src = malloc(s.dense_bytes), *back = malloc(s.dense_bytes);
                assert_non_null(src);
                assert_non_null(back);
                fv_test_fill_bytes(src, s.dense_bytes);
                if (dts[di] != FV_DTYPE_U8) /* finite values: NaN bits need not survive */
                    for (size_t i = 0; i < s.dense_bytes; i++)
                        src[i] &= 0x3f;
                memset(back, 0xab, s.dense_bytes);
                FV_ASSERT_OK(fv_tensor_upload(g_ctx, t, src, s.dense_bytes));
                FV_ASSERT_OK(fv_tensor_download(g_ctx, t, back, s.dense_bytes));
                FV_ASSERT_OK(fv_context_synchronize(g_ctx));
                assert_memory_equal(src, back, s.dense_bytes);
                if (s.c_stored != s.c) { /* F16 padding stays zero */
                    const fv_half *raw = kinds[ki] == FV_POOL_PINNED ? fv_tensor_data(t) : NULL;
                    fv_half *copy = raw ? NULL : read_raw(t);
                    const fv_half *r = raw ? raw : copy;
                    size_t pix = (size_t)s.n * s.h * s.w;
                    for (size_t p = 0; p < pix; p++)
                        for (int k = s.c; k < s.c_stored; k++)
                            assert_int_equal(r[p * s.c_stored + k], 0);
                    free(copy);
                }
                free(src), free(back);
                fv_tensor_destroy(t);
            }
}

static void copy_between_device_and_pinned(void **state) {
    const fv_dtype dts[] = {FV_DTYPE_F32, FV_DTYPE_F16, FV_DTYPE_U8};
    fv_test_seed(2);
    for (int di = 0; di < 3; di++) {
        fv_tensor *dev = make(g_ctx, dts[di], 1, 9, 11, 5, NULL);
        fv_tensor *dev2 = make(g_ctx, dts[di], 1, 9, 11, 5, NULL);
        fv_tensor *pin = make(g_ctx, dts[di], 1, 9, 11, 5, pinned());
        fv_tensor_shape s = shape_of(dev);
        unsigned char *src = malloc(s.dense_bytes), *back = malloc(s.dense_bytes);
        assert_non_null(src);
        assert_non_null(back);
        fv_test_fill_bytes(src, s.dense_bytes);
        for (size_t i = 0; i < s.dense_bytes; i++)
            src[i] &= 0x3f;
        FV_ASSERT_OK(fv_tensor_upload(g_ctx, dev, src, s.dense_bytes));
        FV_ASSERT_OK(fv_tensor_copy(g_ctx, pin, dev));  /* device -> pinned */
        FV_ASSERT_OK(fv_tensor_copy(g_ctx, dev2, pin)); /* pinned -> device */
        FV_ASSERT_OK(fv_tensor_download(g_ctx, dev2, back, s.dense_bytes));
        FV_ASSERT_OK(fv_context_synchronize(g_ctx));
        assert_memory_equal(src, back, s.dense_bytes);
        /* the pinned copy holds the same storage, padding included */
        void *raw = read_raw(dev);
        assert_memory_equal(raw, fv_tensor_data(pin), s.bytes);
        free(raw), free(src), free(back);
        fv_tensor_destroy(dev), fv_tensor_destroy(dev2), fv_tensor_destroy(pin);
    }
}

static void convert_matches_host_rounding(void **state) {
    enum { N = 256, C = 5 };
    static float src[N * C], back[N * C];
    fv_test_seed(3);
    fv_test_fill_uniform(src, N * C, -70000, 70000);
    for (int i = 0; i < 64; i++)
        src[64 + i] = fv_test_rand_uniform(-1, 1) * ldexpf(1, -14 - i % 12);
    const float special[] = {0.0f,
                             -0.0f,
                             INFINITY,
                             -INFINITY,
                             NAN,
                             -NAN,
                             65504.0f,
                             65519.0f,
                             65520.0f,
                             -65520.0f,
                             ldexpf(1, -24),
                             ldexpf(1, -25),
                             ldexpf(3, -26),
                             ldexpf(1, -26),
                             1.0f + ldexpf(1, -11),
                             1.0f + ldexpf(3, -11),
                             ldexpf(1, -149),
                             6.1e-5f,
                             1e-8f,
                             2049.0f};
    memcpy(src, special, sizeof special);
    fv_tensor *a = make(g_ctx, FV_DTYPE_F32, 1, 16, N / 16, C, NULL);
    fv_tensor *h = make(g_ctx, FV_DTYPE_F16, 1, 16, N / 16, C, NULL);
    fv_tensor *b = make(g_ctx, FV_DTYPE_F32, 1, 16, N / 16, C, NULL);
    FV_ASSERT_OK(fv_tensor_upload(g_ctx, a, src, sizeof src));
    /* poison the F16 tensor, padding included, through a pinned copy */
    fv_tensor *poison = make(g_ctx, FV_DTYPE_F16, 1, 16, N / 16, C, pinned());
    memset(fv_tensor_data(poison), 0xab, shape_of(poison).bytes);
    FV_ASSERT_OK(fv_tensor_copy(g_ctx, h, poison));
    memset(back, 0xab, sizeof back);
    FV_ASSERT_OK(fv_tensor_convert(g_ctx, h, a));
    FV_ASSERT_OK(fv_tensor_convert(g_ctx, b, h));
    FV_ASSERT_OK(fv_tensor_download(g_ctx, b, back, sizeof back));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    for (int i = 0; i < N * C; i++) {
        float want = fv_round_f16(src[i]);
        if (isnan(want)) {
            if (!isnan(back[i])) fail_msg("element %d: %g -> %g, expected NaN", i, src[i], back[i]);
        } else if (memcmp(&want, &back[i], 4) != 0) {
            fail_msg("element %d: %.9g -> %.9g, expected %.9g", i, src[i], back[i], want);
        }
    }
    fv_half *raw = read_raw(h);
    for (int p = 0; p < N; p++)
        for (int k = 0; k < 8; k++) {
            fv_half got = raw[p * 8 + k];
            if (k >= C)
                assert_int_equal(got, 0);
            else if (!isnan(src[p * C + k]))
                assert_int_equal(got, fv_f32_to_f16(src[p * C + k]));
        }
    free(raw);
    /* U8 -> F16 and F32: plain values */
    fv_tensor *u = make(g_ctx, FV_DTYPE_U8, 1, 16, N / 16, C, NULL);
    static unsigned char bytes[N * C];
    for (int i = 0; i < N * C; i++)
        bytes[i] = (unsigned char)(i * 7);
    FV_ASSERT_OK(fv_tensor_upload(g_ctx, u, bytes, sizeof bytes));
    FV_ASSERT_OK(fv_tensor_convert(g_ctx, h, u));
    FV_ASSERT_OK(fv_tensor_convert(g_ctx, b, h));
    FV_ASSERT_OK(fv_tensor_download(g_ctx, b, back, sizeof back));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    for (int i = 0; i < N * C; i++)
        assert_true(back[i] == (float)bytes[i]);
    FV_ASSERT_OK(fv_tensor_convert(g_ctx, a, u));
    FV_ASSERT_OK(fv_tensor_download(g_ctx, a, back, sizeof back));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    for (int i = 0; i < N * C; i++)
        assert_true(back[i] == (float)bytes[i]);
    fv_tensor_destroy(a), fv_tensor_destroy(h), fv_tensor_destroy(b);
    fv_tensor_destroy(poison), fv_tensor_destroy(u);
}

static void mapped_tensors_work_in_place(void **state) {
    fv_pool_desc pd = {.kind = FV_POOL_MAPPED, .bytes = 1u << 20, .name = "mapped-test"};
    fv_pool *mp = NULL;
    FV_ASSERT_OK(fv_pool_create(g_ctx, &pd, &mp));
    fv_tensor *a = make(g_ctx, FV_DTYPE_F32, 1, 6, 7, 3, mp);
    fv_tensor *h = make(g_ctx, FV_DTYPE_F16, 1, 6, 7, 3, NULL);
    float *host = fv_tensor_data(a); /* the host address of a mapped carve-out */
    float want[126];
    fv_test_seed(4);
    fv_test_fill_uniform(want, 126, -10, 10);
    memcpy(host, want, sizeof want);
    FV_ASSERT_OK(fv_tensor_convert(g_ctx, h, a));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    memset(host, 0, sizeof want); /* the GPU writes it back below */
    FV_ASSERT_OK(fv_tensor_convert(g_ctx, a, h));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    for (int i = 0; i < 126; i++)
        assert_true(host[i] == fv_round_f16(want[i]));
    fv_tensor_destroy(a), fv_tensor_destroy(h);
    fv_pool_destroy(mp);
}

static void loop_allocates_nothing(void **state) {
    fv_tensor *a = make(g_ctx, FV_DTYPE_F32, 1, 32, 24, 3, NULL);
    fv_tensor *h = make(g_ctx, FV_DTYPE_F16, 1, 32, 24, 3, NULL);
    fv_tensor *pa = make(g_ctx, FV_DTYPE_F32, 1, 32, 24, 3, pinned());
    static float buf[32 * 24 * 3], back[32 * 24 * 3];
    fv_test_seed(5);
    fv_test_fill_uniform(buf, 32 * 24 * 3, -1, 1);
    fv_pool_stats before[4], after[4];
    for (int k = 0; k < 4; k++)
        if (fv_context_pool(g_ctx, k))
            FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(g_ctx, k), &before[k]));
    for (int i = 0; i < 100; i++) {
        FV_ASSERT_OK(fv_tensor_upload(g_ctx, a, buf, sizeof buf));
        FV_ASSERT_OK(fv_tensor_convert(g_ctx, h, a));
        FV_ASSERT_OK(fv_tensor_convert(g_ctx, a, h));
        FV_ASSERT_OK(fv_tensor_copy(g_ctx, pa, a));
        FV_ASSERT_OK(fv_tensor_download(g_ctx, a, back, sizeof back));
        FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    }
    for (int i = 0; i < 32 * 24 * 3; i++)
        assert_true(back[i] == fv_round_f16(buf[i]));
    for (int k = 0; k < 4; k++) {
        if (!fv_context_pool(g_ctx, k)) continue;
        FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(g_ctx, k), &after[k]));
        assert_int_equal(after[k].backing_allocs, before[k].backing_allocs);
        assert_int_equal(after[k].backing_allocs, 1);
        assert_int_equal(after[k].carve_outs, before[k].carve_outs);
        assert_int_equal(after[k].in_use, before[k].in_use);
    }
    fv_tensor_destroy(a), fv_tensor_destroy(h), fv_tensor_destroy(pa);
}

static void missing_device_is_no_device(void **state) {
    fv_context *ctx = (fv_context *)1;
    fv_context_desc d = {.backend = FV_BACKEND_CUDA, .device = 99};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_NO_DEVICE, "99");
    assert_null(ctx);
    /* AUTO falls back to the CPU and says why */
    d.backend = FV_BACKEND_AUTO;
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    fv_context_info in;
    FV_ASSERT_OK(fv_context_info_get(ctx, &in));
    assert_int_equal(in.backend, FV_BACKEND_CPU);
    assert_non_null(strstr(in.no_gpu_reason, "99"));
    fv_context_destroy(ctx);
}

static void host_tensors_are_refused_by_ops(void **state) {
    fv_tensor *dev = make(g_ctx, FV_DTYPE_F16, 1, 4, 4, 3, NULL);
    fv_tensor *pin = make(g_ctx, FV_DTYPE_F16, 1, 4, 4, 3, pinned());
    fv_tensor *host = make(g_ctx, FV_DTYPE_F16, 1, 4, 4, 3, fv_context_pool(g_ctx, FV_POOL_HOST));
    FV_ASSERT_STATUS(fv_add(g_ctx, dev, pin, dev, FV_ACT_IDENTITY, 0), FV_ERR_BAD_PARAM, "pinned");
    FV_ASSERT_STATUS(fv_add(g_ctx, dev, dev, host, FV_ACT_RELU, 0), FV_ERR_BAD_PARAM, "host");
    fv_tensor *pin32 = make(g_ctx, FV_DTYPE_F32, 1, 4, 4, 3, pinned());
    FV_ASSERT_STATUS(fv_tensor_convert(g_ctx, dev, pin32), FV_ERR_BAD_PARAM, "pinned");
    fv_pooling_desc pd = {.mode = FV_POOLING_MAX, .r = 2, .s = 2};
    fv_tensor *small = make(g_ctx, FV_DTYPE_F16, 1, 2, 2, 3, pinned());
    FV_ASSERT_STATUS(fv_pooling2d(g_ctx, &pd, dev, small), FV_ERR_BAD_PARAM, "pinned");
    /* copies are how host tensors get to the GPU */
    FV_ASSERT_OK(fv_tensor_copy(g_ctx, dev, pin));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    fv_tensor_destroy(dev), fv_tensor_destroy(pin), fv_tensor_destroy(host);
    fv_tensor_destroy(pin32), fv_tensor_destroy(small);
}

int main(void) {
    g_ctx = fv_test_gpu_context_or_skip();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(info_is_sane),
        cmocka_unit_test(context_logs_and_syncs),
        cmocka_unit_test(carve_outs_are_aligned),
        cmocka_unit_test(exhaustion_names_the_pool),
        cmocka_unit_test(round_trips_through_device_and_pinned),
        cmocka_unit_test(copy_between_device_and_pinned),
        cmocka_unit_test(convert_matches_host_rounding),
        cmocka_unit_test(mapped_tensors_work_in_place),
        cmocka_unit_test(loop_allocates_nothing),
        cmocka_unit_test(missing_device_is_no_device),
        cmocka_unit_test(host_tensors_are_refused_by_ops),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(g_ctx);
    return failed;
}
