/* Golden test: crops of the bundled images through fv_filter (Laplacian and
 * Sobel magnitude, grey and colour), compared with references made by
 * OpenCV (tests/golden/generate.py: cv2.filter2D on float32, zero border;
 * ref/cases.txt lists the cases). Built twice: test_golden on the CPU
 * backend (label unit) and test_gpu_golden on CUDA (label gpu; skipped
 * without a GPU).
 *
 * Tolerance (golden_check.h, shared with fovea-regress): fovea stores the
 * packed input and the convolution output as FP16 (OpenCV computes in
 * float32), so bytes may differ: every byte within GOLDEN_MAX_DIFF (2) levels
 * and at least GOLDEN_MIN_WITHIN1 (99.5%) of them within 1. */
#include "fv_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fovea/platform/image_io.h"
#include "golden_check.h"

static fv_context *ctx;

static fv_context *make_context(void) {
#ifdef FV_GOLDEN_GPU
    return fv_test_gpu_context_or_skip();
#else
    return fv_test_cpu_context(0);
#endif
}

static void bundled_images_match_opencv(void **state) {
    golden_case cs[64];
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/ref/cases.txt", FV_TEST_SOURCE_DIR);
    int n = golden_read_cases(path, cs, 64);
    if (n < 0) fail_msg("cannot open %s (run tests/golden/generate.py --generate)", path);
    assert_true(n >= 16);
    fv_context_info info;
    FV_ASSERT_OK(fv_context_info_get(ctx, &info));
    printf("backend %s; tolerance: max |diff| <= %d, >= %.1f%% of bytes within 1\n",
           info.backend_name, GOLDEN_MAX_DIFF, GOLDEN_MIN_WITHIN1 * 100);
    printf("%-34s %8s %8s %8s %6s\n", "case", "exact%", "within1%", "mean", "max");
    int worst = 0;
    double worst_within1 = 1.0;
    for (int i = 0; i < n; i++) {
        const golden_case *c = &cs[i];
        int ch = golden_channels(c);
        fv_host_image img, ref;
        FV_ASSERT_OK(fv_image_file_load(fv_test_data_path(c->image), FV_PIXEL_RGB24, &img));
        assert_true(c->x0 >= 0 && c->y0 >= 0 && c->x0 + c->w <= img.width &&
                    c->y0 + c->h <= img.height);
        snprintf(path, sizeof path, "%s/golden/ref/%s", FV_TEST_SOURCE_DIR, c->ref);
        FV_ASSERT_OK(fv_image_file_load(path, ch == 3 ? FV_PIXEL_RGB24 : FV_PIXEL_GRAY8, &ref));
        assert_int_equal(ref.width, c->w);
        assert_int_equal(ref.height, c->h);
        size_t nb = (size_t)c->w * c->h * ch;
        unsigned char *got = malloc(nb);
        assert_non_null(got);
        memset(got, 0xCD, nb);
        FV_ASSERT_OK(golden_run(ctx, c, &img, got));
        golden_stats st;
        golden_compare(got, ref.data, nb, &st);
        char name[96];
        snprintf(name, sizeof name, "%.20s %s %s", c->image, c->filter, c->output);
        printf("%-34s %8.3f %8.3f %8.4f %6d\n", name, 100.0 * st.exact / nb,
               100.0 * st.within1 / nb, st.mean, st.max);
        if (!golden_pass(&st))
            fail_msg("%s: max |diff| %d, %.3f%% within 1, %.1f%% of the reference nonzero: "
                     "outside the tolerance",
                     name, st.max, 100.0 * st.within1 / nb, 100.0 * st.nonzero / nb);
        if (st.max > worst) worst = st.max;
        if ((double)st.within1 / nb < worst_within1) worst_within1 = (double)st.within1 / nb;
        free(got);
        fv_host_image_free(&ref);
        fv_host_image_free(&img);
    }
    printf("worst: max |diff| %d, %.3f%% within 1\n", worst, 100.0 * worst_within1);
}

int main(void) {
    ctx = make_context();
    const struct CMUnitTest tests[] = {cmocka_unit_test(bundled_images_match_opencv)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(ctx);
    return rc;
}
