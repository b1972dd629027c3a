/* CUDA fv_classify and fv_segment against the CPU backend on random
 * logits: top-K classes equal (ties to the lower class) and scores within
 * 1e-5 (softmax sums in another order); segmentation overlays of 1080p
 * frames of every format, mask-only and in-place, equal bit for bit (the
 * argmax and vision_math.h's blend are the same float operations). GPU
 * outputs are poisoned first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

static fv_context *g_ctx; /* CUDA */
static fv_context *g_cpu; /* the reference */

static fv_tensor *make(fv_context *ctx, fv_dtype dt, int n, int h, int w, int c) {
    fv_tensor *t = NULL;
    FV_ASSERT_OK(
        fv_tensor_create(ctx, &(fv_tensor_desc){.dtype = dt, .n = n, .h = h, .w = w, .c = c}, &t));
    return t;
}

/* Dense NHWC floats into t (converted to its dtype). */
static void put(fv_context *ctx, fv_tensor *t, const float *v, size_t n) {
    fv_tensor_shape s;
    FV_ASSERT_OK(fv_tensor_shape_get(t, &s));
    void *buf = malloc(n * 4);
    if (s.dtype == FV_DTYPE_F32) {
        memcpy(buf, v, n * 4);
    } else {
        for (size_t i = 0; i < n; i++)
            ((fv_half *)buf)[i] = fv_f32_to_f16(v[i]);
    }
    FV_ASSERT_OK(fv_tensor_upload(ctx, t, buf, n * s.elem_bytes));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    free(buf);
}

static void classify_matches_cpu(void **state) {
    (void)state;
    const int shapes[][3] = {{8, 1000, 5}, {1, 10, 10}, {3, 21843, 32}, {16, 7, 3}};
    fv_test_seed(99);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int dt = 0; dt < 2; dt++)
            for (int softmax = 0; softmax < 2; softmax++) {
                const int N = shapes[si][0], C = shapes[si][1], K = shapes[si][2];
                const fv_dtype dtype = dt ? FV_DTYPE_F32 : FV_DTYPE_F16;
                float *x = malloc(sizeof(float) * N * C);
                fv_test_fill_uniform(x, (size_t)N * C, -10, 10);
                for (int i = 0; i < N * C; i += 4)
                    x[i] = (float)(int)x[i]; /* ties */
                fv_tensor *gt = make(g_ctx, dtype, N, 1, 1, C),
                          *ct = make(g_cpu, dtype, N, 1, 1, C);
                put(g_ctx, gt, x, (size_t)N * C), put(g_cpu, ct, x, (size_t)N * C);
                fv_classify_desc d = {.batch = N, .classes = C, .k = K, .softmax = softmax};
                fv_classify *g = NULL, *c = NULL;
                FV_ASSERT_OK(fv_classify_create(g_ctx, &d, &g));
                FV_ASSERT_OK(fv_classify_create(g_cpu, &d, &c));
                FV_ASSERT_OK(fv_classify_run(g, gt));
                FV_ASSERT_OK(fv_classify_run(c, ct));
                FV_ASSERT_OK(fv_context_synchronize(g_ctx));
                for (int b = 0; b < N; b++) {
                    fv_class_score gr[FV_CLASSIFY_MAX_K], cr[FV_CLASSIFY_MAX_K];
                    FV_ASSERT_OK(fv_classify_result(g, b, gr, K));
                    FV_ASSERT_OK(fv_classify_result(c, b, cr, K));
                    for (int r = 0; r < K; r++) {
                        if (gr[r].index != cr[r].index)
                            fail_msg("N=%d C=%d %s softmax %d: item %d rank %d: GPU class %d, CPU "
                                     "%d",
                                     N, C, dt ? "F32" : "F16", softmax, b, r, gr[r].index,
                                     cr[r].index);
                        double tol = 1e-5 * fabs(cr[r].score) + (softmax ? 1e-7 : 0);
                        if (fabs(gr[r].score - cr[r].score) > tol)
                            fail_msg("item %d rank %d: GPU score %.9g, CPU %.9g", b, r,
                                     (double)gr[r].score, (double)cr[r].score);
                    }
                }
                fv_classify_destroy(g), fv_classify_destroy(c);
                fv_tensor_destroy(gt), fv_tensor_destroy(ct);
                free(x);
            }
}

static int bpp(fv_pixel_format f) {
    return f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 ? 3
           : f == FV_PIXEL_RGBA32                     ? 4
           : f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY ? 2
                                                      : 1;
}

/* A device image as a U8 tensor of rows x stride (NV12: the UV rows follow). */
static fv_tensor *device_image(fv_pixel_format f, int w, int h, const unsigned char *src,
                               fv_image *img) {
    size_t stride = (size_t)w * bpp(f) + 16;
    int rows = h + (f == FV_PIXEL_NV12 ? h / 2 : 0);
    fv_tensor *t = make(g_ctx, FV_DTYPE_U8, 1, rows, (int)stride, 1);
    FV_ASSERT_OK(fv_tensor_upload(g_ctx, t, src, (size_t)rows * stride));
    *img = (fv_image){
        .format = f, .width = w, .height = h, .stride = stride, .data = fv_tensor_data(t)};
    return t;
}

typedef struct seg_case {
    int N, C, H, W, in_w, in_h, fw, fh;
    fv_pixel_format frame, out;
    int mask_only, in_place;
    fv_region region; /* width 0: NULL */
} seg_case;

static void segment_one(const seg_case *sc, fv_dtype dt) {
    const size_t nl = (size_t)sc->N * sc->H * sc->W * sc->C;
    float *x = malloc(sizeof(float) * nl);
    fv_test_fill_uniform(x, nl, -3, 3);
    for (size_t i = 0; i < nl; i += 3)
        x[i] = (float)(int)x[i];
    fv_tensor *gt = make(g_ctx, dt, sc->N, sc->H, sc->W, sc->C);
    fv_tensor *ct = make(g_cpu, dt, sc->N, sc->H, sc->W, sc->C);
    put(g_ctx, gt, x, nl), put(g_cpu, ct, x, nl);
    fv_segment_desc d = {.batch = sc->N,
                         .classes = sc->C,
                         .height = sc->H,
                         .width = sc->W,
                         .input_width = sc->in_w,
                         .input_height = sc->in_h,
                         .alpha = 0.6f};
    fv_segment *g = NULL, *c = NULL;
    FV_ASSERT_OK(fv_segment_create(g_ctx, &d, &g));
    FV_ASSERT_OK(fv_segment_create(g_cpu, &d, &c));
    size_t stride = (size_t)sc->fw * bpp(sc->frame) + 16;
    size_t fbytes = stride * (size_t)(sc->fh + sc->fh / 2);
    unsigned char *fhost = malloc(fbytes);
    fv_test_fill_bytes(fhost, fbytes);
    fv_image gframe, cframe = {.format = sc->frame,
                               .width = sc->fw,
                               .height = sc->fh,
                               .stride = stride,
                               .data = fhost};
    fv_tensor *gf = device_image(sc->frame, sc->fw, sc->fh, fhost, &gframe);
    /* outputs: poisoned (GPU) / zeroed (CPU) */
    size_t ostride = (size_t)sc->fw * bpp(sc->out) + 16, obytes = ostride * sc->fh;
    unsigned char *ohost = malloc(obytes), *got = malloc(obytes);
    memset(ohost, 0xab, obytes);
    fv_image gout,
        cout = {
            .format = sc->out, .width = sc->fw, .height = sc->fh, .stride = ostride, .data = ohost};
    fv_tensor *go = device_image(sc->out, sc->fw, sc->fh, ohost, &gout);
    if (sc->in_place) gout = gframe, cout = cframe, obytes = stride * sc->fh;
    const fv_region *r = sc->region.width ? &sc->region : NULL;
    for (int b = 0; b < sc->N; b++) {
        FV_ASSERT_OK(fv_segment_run(g, gt, b, r, sc->mask_only ? NULL : &gframe, &gout));
        FV_ASSERT_OK(fv_segment_run(c, ct, b, r, sc->mask_only ? NULL : &cframe, &cout));
        FV_ASSERT_OK(fv_context_synchronize(g_ctx));
        FV_ASSERT_OK(fv_tensor_download(g_ctx, sc->in_place ? gf : go, got, obytes));
        FV_ASSERT_OK(fv_context_synchronize(g_ctx));
        for (int y = 0; y < sc->fh; y++) {
            const unsigned char *gr = got + (size_t)y * gout.stride;
            const unsigned char *cr = (const unsigned char *)cout.data + (size_t)y * cout.stride;
            for (int i = 0; i < sc->fw * bpp(sc->out); i++)
                if (gr[i] != cr[i])
                    fail_msg("%s over %s%s, item %d: (%d, %d) byte %d: GPU %d, CPU %d (%s)",
                             fv_pixel_format_name(sc->out), fv_pixel_format_name(sc->frame),
                             sc->in_place ? " in place" : "", b, i / bpp(sc->out), y,
                             i % bpp(sc->out), gr[i], cr[i], dt == FV_DTYPE_F16 ? "F16" : "F32");
        }
    }
    fv_segment_destroy(g), fv_segment_destroy(c);
    fv_tensor_destroy(gt), fv_tensor_destroy(ct), fv_tensor_destroy(gf), fv_tensor_destroy(go);
    free(x), free(fhost), free(ohost), free(got);
}

static void segment_matches_cpu(void **state) {
    (void)state;
    fv_test_seed(2016);
    const fv_pixel_format frames[] = {FV_PIXEL_GRAY8,  FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                      FV_PIXEL_RGBA32, FV_PIXEL_YUYV,  FV_PIXEL_UYVY,
                                      FV_PIXEL_NV12};
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
        seg_case sc = {.N = 2,
                       .C = 21,
                       .H = 28,
                       .W = 28,
                       .in_w = 224,
                       .in_h = 224,
                       .fw = 1920,
                       .fh = 1080,
                       .frame = frames[i],
                       .out = i % 2 ? FV_PIXEL_RGBA32 : FV_PIXEL_RGB24,
                       .region = {0, 49, 224, 126}};
        segment_one(&sc, i % 2 ? FV_DTYPE_F32 : FV_DTYPE_F16);
    }
    segment_one(&(seg_case){.N = 1,
                            .C = 256,
                            .H = 17,
                            .W = 23,
                            .fw = 640,
                            .fh = 360,
                            .frame = FV_PIXEL_RGB24,
                            .out = FV_PIXEL_BGR24,
                            .mask_only = 1},
                FV_DTYPE_F16);
    segment_one(&(seg_case){.N = 4,
                            .C = 2,
                            .H = 64,
                            .W = 64,
                            .fw = 33,
                            .fh = 21,
                            .frame = FV_PIXEL_RGBA32,
                            .out = FV_PIXEL_RGBA32,
                            .in_place = 1},
                FV_DTYPE_F16);
}

int main(void) {
    g_ctx = fv_test_gpu_context_or_skip();
    g_cpu = fv_test_cpu_context(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classify_matches_cpu),
        cmocka_unit_test(segment_matches_cpu),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(g_cpu);
    fv_context_destroy(g_ctx);
    return failed;
}
