/* fv_filter on CUDA (tensor cores) against the CPU backend on random frames:
 * every kind, grey and colour, every input format, threshold and overlay,
 * custom kernels up to 15x15. Outputs poisoned before each run.
 *
 * Tolerance: both backends store FP16 tensors but accumulate in a different
 * order, so a convolution output may differ by one FP16 ulp: every byte
 * within 1 level of the CPU's, and at least 99% equal; with a threshold, a
 * pixel on the threshold may flip between 0 and 255: at most 0.5% of bytes
 * differ there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

static fv_context *g_gpu, *g_cpu;

static size_t image_bytes(fv_pixel_format f, int w, int h) {
    return fv_image_bytes(f, w, h);
}

/* Bytes in device memory: a U8 tensor of 1 x bytes. */
static fv_tensor *device_bytes(const unsigned char *src, size_t bytes) {
    fv_tensor *t;
    fv_tensor_desc d = {.dtype = FV_DTYPE_U8, .h = 1, .w = (int)bytes, .c = 1};
    FV_ASSERT_OK(fv_tensor_create(g_gpu, &d, &t));
    if (src) FV_ASSERT_OK(fv_tensor_upload(g_gpu, t, src, bytes));
    return t;
}

static void run_case(const fv_filter_desc *d, fv_pixel_format out_fmt, const char *what) {
    const int W = d->width, H = d->height;
    size_t ib = image_bytes(d->format, W, H), ob = image_bytes(out_fmt, W, H);
    unsigned char *in = malloc(ib), *want = malloc(ob), *got = malloc(ob);
    assert_true(in && want && got);
    fv_test_fill_bytes(in, ib);
    for (size_t i = 0; i < ib; i += 5) /* flat runs keep some edges unsaturated */
        in[i] = in[i / 2];
    fv_filter *fc, *fg;
    FV_ASSERT_OK(fv_filter_create(g_cpu, d, &fc));
    FV_ASSERT_OK(fv_filter_create(g_gpu, d, &fg));
    fv_image src = {.format = d->format, .width = W, .height = H, .data = in};
    fv_image dst = {.format = out_fmt, .width = W, .height = H, .data = want};
    FV_ASSERT_OK(fv_filter_apply(fc, &src, &dst));

    memset(got, 0xAB, ob);
    fv_tensor *tin = device_bytes(in, ib), *tout = device_bytes(got, ob); /* poisoned */
    src.data = fv_tensor_data(tin);
    dst.data = fv_tensor_data(tout);
    FV_ASSERT_OK(fv_filter_apply(fg, &src, &dst));
    FV_ASSERT_OK(fv_tensor_download(g_gpu, tout, got, ob));
    FV_ASSERT_OK(fv_context_synchronize(g_gpu));

    size_t diff = 0, big = 0, mid = 0;
    int max = 0;
    for (size_t i = 0; i < ob; i++) {
        int dd = abs((int)got[i] - (int)want[i]);
        diff += dd != 0, big += dd > 1, mid += want[i] > 0 && want[i] < 255;
        if (dd > max) max = dd;
    }
    fv_conv2d_info ci;
    FV_ASSERT_OK(fv_conv2d_info_get(fv_filter_conv(fg), &ci));
    printf("%-40s %6zu bytes: %5.2f%% differ, max %3d (%s %s%s)\n", what, ob, 100.0 * diff / ob,
           max, ci.path, ci.engine, ci.tensor_cores ? ", tensor cores" : "");
    if (d->threshold > 0) {
        if (diff * 200 > ob) fail_msg("%s: %zu of %zu bytes differ", what, diff, ob);
    } else {
        if (max > 1 || diff * 100 > ob)
            fail_msg("%s: max |diff| %d, %zu of %zu bytes differ", what, max, diff, ob);
        assert_true(mid > ob / 20); /* real values, not all saturated */
    }
    fv_tensor_destroy(tout);
    fv_tensor_destroy(tin);
    fv_filter_destroy(fg);
    fv_filter_destroy(fc);
    free(in), free(want), free(got);
}

static void every_kind_matches_the_cpu(void **state) {
    fv_test_seed(21);
    const fv_filter_kind kinds[4] = {FV_FILTER_LAPLACIAN, FV_FILTER_SOBEL, FV_FILTER_SCHARR,
                                     FV_FILTER_PREWITT};
    const fv_pixel_format fmts[4] = {FV_PIXEL_RGB24, FV_PIXEL_GRAY8, FV_PIXEL_YUYV, FV_PIXEL_NV12};
    for (int k = 0; k < 4; k++)
        for (int o = 0; o < 2; o++)
            for (int f = 0; f < 4; f++) {
                fv_filter_desc d = {.kind = kinds[k],
                                    .width = 96,
                                    .height = 64,
                                    .format = fmts[f],
                                    .output = o ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY,
                                    .gain = kinds[k] == FV_FILTER_SCHARR ? 0.02f : 0.08f};
                char what[96];
                snprintf(what, sizeof what, "%s %s from %s", fv_filter_kind_name(kinds[k]),
                         o ? "colour" : "grey", fv_pixel_format_name(fmts[f]));
                run_case(&d, FV_PIXEL_RGB24, what);
            }
}

static void custom_threshold_overlay_match_the_cpu(void **state) {
    fv_test_seed(22);
    static float k15[15 * 15], k3x7[3 * 7];
    fv_test_fill_uniform(k15, 15 * 15, -0.1f, 0.1f);
    fv_test_fill_uniform(k3x7, 3 * 7, -1.0f, 1.0f);
    fv_filter_desc d = {.kind = FV_FILTER_CUSTOM,
                        .width = 80,
                        .height = 61,
                        .format = FV_PIXEL_RGB24,
                        .kernel = k15,
                        .kernel_rows = 15,
                        .kernel_cols = 15,
                        .gain = 0.5f};
    run_case(&d, FV_PIXEL_RGB24, "custom 15x15 grey");
    d.output = FV_FILTER_OUT_COLOR;
    run_case(&d, FV_PIXEL_BGR24, "custom 15x15 colour to BGR24");
    d.kernel = k3x7, d.kernel_rows = 3, d.kernel_cols = 7, d.gain = 0.2f;
    run_case(&d, FV_PIXEL_RGBA32, "custom 3x7 colour to RGBA32");
    fv_filter_desc t = {.kind = FV_FILTER_SOBEL,
                        .width = 128,
                        .height = 72,
                        .format = FV_PIXEL_RGB24,
                        .gain = 0.1f};
    t.threshold = 64;
    run_case(&t, FV_PIXEL_GRAY8, "sobel threshold 64 to GRAY8");
    t.overlay = 1;
    run_case(&t, FV_PIXEL_RGB24, "sobel threshold 64 + overlay");
    t.threshold = 0, t.output = FV_FILTER_OUT_COLOR, t.format = FV_PIXEL_YUYV;
    run_case(&t, FV_PIXEL_RGB24, "sobel colour overlay from YUYV");
}

static void a_hd_frame_matches_the_cpu(void **state) {
    fv_test_seed(23);
    fv_filter_desc d = {.kind = FV_FILTER_SOBEL,
                        .width = 1280,
                        .height = 720,
                        .format = FV_PIXEL_NV12,
                        .output = FV_FILTER_OUT_COLOR,
                        .gain = 0.08f};
    run_case(&d, FV_PIXEL_RGB24, "sobel colour 1280x720 NV12");
}

int main(void) {
    g_gpu = fv_test_gpu_context_or_skip();
    g_cpu = fv_test_cpu_context(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kind_matches_the_cpu),
        cmocka_unit_test(custom_threshold_overlay_match_the_cpu),
        cmocka_unit_test(a_hd_frame_matches_the_cpu),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(g_cpu);
    fv_context_destroy(g_gpu);
    return rc;
}
