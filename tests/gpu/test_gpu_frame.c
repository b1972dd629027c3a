/* Memory policies on the GPU: the same random frames through fv_filter in a
 * context forced to ZERO_COPY (frames in the MAPPED pool, read and written
 * in place) and in one forced to DEVICE (PINNED staging, DEVICE frames,
 * async copies) give byte-identical outputs, within 1 level of the CPU
 * backend's (byte inputs; YUV inputs within FP16 rounding of the converted
 * values, see below); each policy's frames come from its pools (pool
 * statistics);
 * nothing is carved per frame; AUTO picks ZERO_COPY exactly on integrated
 * GPUs or Tegra. Outputs poisoned before each frame. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

#define FRAMES 3

typedef struct frame_case {
    const char *what;
    fv_filter_desc desc;
    fv_pixel_format out_fmt;
} frame_case;

static const frame_case cases[] = {
    {"laplacian RGB24 -> GRAY8", {.width = 640, .height = 480}, FV_PIXEL_GRAY8},
    {"sobel YUYV -> RGB24 colour",
     {.kind = FV_FILTER_SOBEL,
      .width = 320,
      .height = 240,
      .format = FV_PIXEL_YUYV,
      .output = FV_FILTER_OUT_COLOR},
     FV_PIXEL_RGB24},
    {"scharr NV12 -> RGBA32 overlay",
     {.kind = FV_FILTER_SCHARR, .width = 256, .height = 144, .format = FV_PIXEL_NV12, .overlay = 1},
     FV_PIXEL_RGBA32},
    {"prewitt GRAY8 -> GRAY8 threshold",
     {.kind = FV_FILTER_PREWITT,
      .width = 200,
      .height = 100,
      .format = FV_PIXEL_GRAY8,
      .threshold = 40},
     FV_PIXEL_GRAY8},
};
#define NCASES (sizeof cases / sizeof cases[0])

static fv_context *policy_context(fv_backend be, fv_memory_policy p) {
    fv_context_desc d = {.backend = be, .memory_policy = p};
    fv_context *ctx = NULL;
    fv_status s = fv_context_create(&d, &ctx);
    if (s == FV_ERR_NOT_SUPPORTED && p == FV_MEMORY_POLICY_ZERO_COPY) {
        printf("SKIP: ZERO_COPY refused: %s\n", fv_last_error());
        fflush(stdout);
        exit(77); /* a GPU that cannot map host memory: nothing to compare */
    }
    FV_ASSERT_OK(s);
    return ctx;
}

static size_t in_use(fv_context *ctx, fv_pool_kind k) {
    fv_pool *p = fv_context_pool(ctx, k);
    if (!p) return 0;
    fv_pool_stats s;
    FV_ASSERT_OK(fv_pool_stats_get(p, &s));
    return s.in_use;
}

static uint64_t carve_outs(fv_context *ctx) {
    uint64_t n = 0;
    for (int k = 0; k < 4; k++) {
        fv_pool *p = fv_context_pool(ctx, (fv_pool_kind)k);
        fv_pool_stats s;
        if (!p) continue;
        FV_ASSERT_OK(fv_pool_stats_get(p, &s));
        n += s.carve_outs;
        assert_int_equal(s.backing_allocs, 1);
    }
    return n;
}

/* Runs FRAMES seeded random frames of case c; returns every output, one
 * after the other (malloc'd). */
static unsigned char *run_case(fv_backend be, fv_memory_policy p, const frame_case *c) {
    fv_context *ctx = policy_context(be, p);
    const fv_filter_desc *d = &c->desc;
    fv_pixel_format in_fmt = d->format ? d->format : FV_PIXEL_RGB24;
    size_t dev0 = in_use(ctx, FV_POOL_DEVICE), map0 = in_use(ctx, FV_POOL_MAPPED);
    size_t pin0 = in_use(ctx, FV_POOL_PINNED);
    fv_frame_buffer *in = NULL, *out = NULL;
    FV_ASSERT_OK(fv_frame_buffer_create(ctx, in_fmt, d->width, d->height, &in));
    FV_ASSERT_OK(fv_frame_buffer_create(ctx, c->out_fmt, d->width, d->height, &out));
    fv_frame_buffer_info ii, oi;
    FV_ASSERT_OK(fv_frame_buffer_info_get(in, &ii));
    FV_ASSERT_OK(fv_frame_buffer_info_get(out, &oi));
    size_t both = ii.bytes + oi.bytes;
    if (be == FV_BACKEND_CUDA && p == FV_MEMORY_POLICY_ZERO_COPY) {
        /* frames in the mapped pool, none in device memory or staging */
        assert_true(in_use(ctx, FV_POOL_MAPPED) >= map0 + both);
        assert_int_equal(in_use(ctx, FV_POOL_DEVICE), dev0);
        assert_int_equal(in_use(ctx, FV_POOL_PINNED), pin0);
        fv_pool *mp = fv_context_pool(ctx, FV_POOL_MAPPED);
        void *host = fv_frame_buffer_data(in);
        assert_ptr_equal(fv_frame_buffer_image(in).data, fv_pool_device_pointer(mp, host));
    } else if (be == FV_BACKEND_CUDA) {
        assert_true(in_use(ctx, FV_POOL_DEVICE) >= dev0 + both);
        assert_true(in_use(ctx, FV_POOL_PINNED) >= pin0 + both);
        assert_int_equal(in_use(ctx, FV_POOL_MAPPED), map0);
    }
    fv_filter *f = NULL;
    FV_ASSERT_OK(fv_filter_create(ctx, d, &f));
    fv_image a = fv_frame_buffer_image(in), b = fv_frame_buffer_image(out);
    unsigned char *all = malloc(oi.bytes * FRAMES);
    assert_non_null(all);
    uint64_t carved = carve_outs(ctx);
    fv_test_seed(1234);
    for (int i = 0; i < FRAMES; i++) {
        fv_test_fill_bytes(fv_frame_buffer_data(in), ii.bytes);
        memset(fv_frame_buffer_data(out), 0xab, oi.bytes); /* poison, both views */
        FV_ASSERT_OK(fv_frame_buffer_upload(ctx, out));
        FV_ASSERT_OK(fv_frame_buffer_upload(ctx, in));
        FV_ASSERT_OK(fv_filter_apply(f, &a, &b));
        FV_ASSERT_OK(fv_frame_buffer_download(ctx, out));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        memcpy(all + (size_t)i * oi.bytes, fv_frame_buffer_data(out), oi.bytes);
    }
    assert_int_equal(carve_outs(ctx), carved); /* nothing carved per frame */
    fv_filter_destroy(f);
    fv_frame_buffer_destroy(in);
    fv_frame_buffer_destroy(out);
    fv_context_destroy(ctx);
    return all;
}

static void policies_give_identical_frames(void **state) {
    (void)state;
    for (size_t i = 0; i < NCASES; i++) {
        const frame_case *c = &cases[i];
        size_t n = fv_image_bytes(c->out_fmt, c->desc.width, c->desc.height) * FRAMES;
        unsigned char *zc = run_case(FV_BACKEND_CUDA, FV_MEMORY_POLICY_ZERO_COPY, c);
        unsigned char *dev = run_case(FV_BACKEND_CUDA, FV_MEMORY_POLICY_DEVICE, c);
        unsigned char *cpu = run_case(FV_BACKEND_CPU, FV_MEMORY_POLICY_DEVICE, c);
        /* YUV input: the GPU rounds the converted (non-integer) values to
         * FP16, up to 2^-11 * 255 each (filter.h); through Scharr's weights
         * (|w| summing to 32, both gradients, three channels) that is up
         * to 8.5 levels at worst; tests/gpu/test_gpu_filter.c bounds it
         * per pixel. Byte inputs are exact: 1 level. */
        fv_pixel_format f = c->desc.format;
        int yuv = f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY || f == FV_PIXEL_NV12;
        const int far_limit = yuv ? 9 : 1;
        size_t differ = 0, far = 0, poison = 0, first = n;
        for (size_t j = 0; j < n; j++) {
            if (zc[j] != dev[j] && first == n) first = j;
            int dz = abs((int)zc[j] - (int)cpu[j]);
            differ += dz != 0;
            far += dz > far_limit && !(c->desc.threshold > 0 && dz == 255);
            poison += zc[j] == 0xab;
        }
        if (first != n)
            fail_msg("%s: ZERO_COPY and DEVICE differ at byte %zu of %zu: %d vs %d", c->what, first,
                     n, zc[first], dev[first]);
        printf("%s: ZERO_COPY == DEVICE (%zu bytes); vs CPU: %zu differ, %zu by more than %d\n",
               c->what, n, differ, far, far_limit);
        /* at most 1% of bytes off (2% from YUV input) */
        if (far > 0 || differ > n / (yuv ? 50 : 100) || poison == n)
            fail_msg("%s: GPU vs CPU: %zu of %zu bytes differ, %zu by more than %d, %zu poison",
                     c->what, differ, n, far, far_limit, poison);
        free(zc), free(dev), free(cpu);
    }
}

static void auto_follows_the_device(void **state) {
    (void)state;
    fv_context *ctx = policy_context(FV_BACKEND_CUDA, FV_MEMORY_POLICY_AUTO);
    fv_context_info info;
    FV_ASSERT_OK(fv_context_info_get(ctx, &info));
    fv_memory_policy want =
        info.integrated || info.tegra ? FV_MEMORY_POLICY_ZERO_COPY : FV_MEMORY_POLICY_DEVICE;
    printf("AUTO on %s (integrated %d, tegra %d): %s\n", info.device_name, info.integrated,
           info.tegra, fv_memory_policy_name(info.memory_policy));
    assert_int_equal(info.memory_policy, want);
    /* a zero-copy context always has its mapped pool */
    if (want == FV_MEMORY_POLICY_ZERO_COPY) assert_non_null(fv_context_pool(ctx, FV_POOL_MAPPED));
    fv_context_destroy(ctx);
}

int main(void) {
    fv_context_destroy(fv_test_gpu_context_or_skip());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(auto_follows_the_device),
        cmocka_unit_test(policies_give_identical_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
