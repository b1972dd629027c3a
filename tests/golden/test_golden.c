/* Golden test: crops of the bundled images through fv_filter (Laplacian and
 * Sobel magnitude, grey and colour), compared with references made by
 * OpenCV (tests/golden/generate.py: cv2.filter2D on float32, zero border;
 * ref/cases.txt lists the cases). Built twice: test_golden on the CPU
 * backend (label unit) and test_gpu_golden on CUDA (label gpu; skipped
 * without a GPU).
 *
 * Tolerance: fovea stores the packed input and the convolution output as
 * FP16 (OpenCV computes in float32), so bytes may differ: every byte within
 * MAX_DIFF (2) levels and at least MIN_WITHIN1 (99.5%) of them within 1. */
#include "fv_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fovea/platform/image_io.h"

#define MAX_DIFF    2
#define MIN_WITHIN1 0.995

typedef struct golden_case {
    char image[64], filter[16], output[16], ref[96];
    int x0, y0, w, h;
    float gain;
} golden_case;

static fv_context *ctx;

static fv_context *make_context(void) {
#ifdef FV_GOLDEN_GPU
    return fv_test_gpu_context_or_skip();
#else
    return fv_test_cpu_context(0);
#endif
}

static int read_cases(golden_case *cs, int max) {
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/ref/cases.txt", FV_TEST_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s (run tests/golden/generate.py --generate)", path);
    int n = 0;
    golden_case c;
    while (n < max && fscanf(f, "%63s %d %d %d %d %15s %15s %f %95s", c.image, &c.x0, &c.y0, &c.w,
                             &c.h, c.filter, c.output, &c.gain, c.ref) == 9)
        cs[n++] = c;
    fclose(f);
    return n;
}

/* Runs one case on ctx; got receives w x h x channels bytes. */
static void run_case(const golden_case *c, const fv_host_image *img, unsigned char *got, int ch) {
    size_t in_bytes = (size_t)c->w * c->h * 3, out_bytes = (size_t)c->w * c->h * ch;
    unsigned char *crop = malloc(in_bytes);
    assert_non_null(crop);
    for (int y = 0; y < c->h; y++)
        memcpy(crop + (size_t)y * c->w * 3,
               (const unsigned char *)img->data + (size_t)(c->y0 + y) * img->stride +
                   (size_t)c->x0 * 3,
               (size_t)c->w * 3);
    /* device-accessible images on CUDA: U8 tensors of the context's DEVICE pool */
    fv_tensor *tin, *tout;
    fv_tensor_desc td = {.dtype = FV_DTYPE_U8, .h = c->h, .w = c->w, .c = 3};
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &tin));
    td.c = ch;
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &tout));
    fv_filter_desc d = {.kind =
                            strcmp(c->filter, "sobel") == 0 ? FV_FILTER_SOBEL : FV_FILTER_LAPLACIAN,
                        .width = c->w,
                        .height = c->h,
                        .format = FV_PIXEL_RGB24,
                        .output = ch == 3 ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY,
                        .gain = c->gain};
    fv_filter *f;
    FV_ASSERT_OK(fv_filter_create(ctx, &d, &f));
    fv_image in = {.format = FV_PIXEL_RGB24, .width = c->w, .height = c->h};
    fv_image out = {
        .format = ch == 3 ? FV_PIXEL_RGB24 : FV_PIXEL_GRAY8, .width = c->w, .height = c->h};
    in.data = fv_tensor_data(tin);
    out.data = fv_tensor_data(tout);
    FV_ASSERT_OK(fv_tensor_upload(ctx, tin, crop, in_bytes));
    FV_ASSERT_OK(fv_filter_apply(f, &in, &out));
    FV_ASSERT_OK(fv_tensor_download(ctx, tout, got, out_bytes));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    fv_filter_destroy(f);
    fv_tensor_destroy(tout);
    fv_tensor_destroy(tin);
    free(crop);
}

static void bundled_images_match_opencv(void **state) {
    golden_case cs[64];
    int n = read_cases(cs, 64);
    assert_true(n >= 16);
    fv_context_info info;
    FV_ASSERT_OK(fv_context_info_get(ctx, &info));
    printf("backend %s; tolerance: max |diff| <= %d, >= %.1f%% of bytes within 1\n",
           info.backend_name, MAX_DIFF, MIN_WITHIN1 * 100);
    printf("%-34s %8s %8s %8s %6s\n", "case", "exact%", "within1%", "mean", "max");
    int worst = 0;
    double worst_within1 = 1.0;
    for (int i = 0; i < n; i++) {
        const golden_case *c = &cs[i];
        int ch = strcmp(c->output, "color") == 0 ? 3 : 1;
        fv_host_image img, ref;
        char path[1024];
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
        run_case(c, &img, got, ch);
        const unsigned char *want = ref.data;
        size_t exact = 0, within1 = 0, nonzero = 0;
        double sum = 0;
        int max = 0;
        for (size_t j = 0; j < nb; j++) {
            int dd = abs((int)got[j] - (int)want[j]);
            exact += dd == 0, within1 += dd <= 1, nonzero += want[j] != 0;
            sum += dd;
            if (dd > max) max = dd;
        }
        char name[96];
        snprintf(name, sizeof name, "%.20s %s %s", c->image, c->filter, c->output);
        printf("%-34s %8.3f %8.3f %8.4f %6d\n", name, 100.0 * exact / nb, 100.0 * within1 / nb,
               sum / nb, max);
        if (max > MAX_DIFF || (double)within1 / nb < MIN_WITHIN1)
            fail_msg("%s: max |diff| %d, %.3f%% within 1: outside the tolerance", name, max,
                     100.0 * within1 / nb);
        assert_true(nonzero > nb / 4); /* a real edge image */
        if (max > worst) worst = max;
        if ((double)within1 / nb < worst_within1) worst_within1 = (double)within1 / nb;
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
