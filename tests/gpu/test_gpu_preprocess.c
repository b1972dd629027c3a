/* CUDA fv_preprocess against the CPU backend: every pixel format, 1 and 3
 * channels, F16 and F32, stretch and letterbox, shrinking (1080p -> 224)
 * and growing, strides wider than rows, NV12's UV plane apart; then four
 * cameras of different formats and sizes into one net's input batch. Both
 * backends share vision_math.h's arithmetic (no FMAs), so the outputs must
 * be equal bit for bit; the GPU output is poisoned first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

static fv_context *g_ctx; /* CUDA */
static fv_context *g_cpu; /* the reference */

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

/* A GPU tensor's whole storage, padding included, set to 0xAB bytes. */
static void poison(fv_tensor *t) {
    fv_tensor_shape s = shape_of(t);
    fv_tensor *p = make(g_ctx, s.dtype, s.n, s.h, s.w, s.c, fv_context_pool(g_ctx, FV_POOL_PINNED));
    memset(fv_tensor_data(p), 0xab, s.bytes);
    FV_ASSERT_OK(fv_tensor_copy(g_ctx, t, p));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    fv_tensor_destroy(p);
}

/* The same bytes in a CPU tensor's storage. */
static void poison_cpu(fv_tensor *t) {
    memset(fv_tensor_data(t), 0xab, shape_of(t).bytes);
}

/* A GPU tensor's raw storage (malloc'd). */
static unsigned char *read_raw(fv_tensor *t) {
    fv_tensor_shape s = shape_of(t);
    fv_tensor *p = make(g_ctx, s.dtype, s.n, s.h, s.w, s.c, fv_context_pool(g_ctx, FV_POOL_PINNED));
    FV_ASSERT_OK(fv_tensor_copy(g_ctx, p, t));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    unsigned char *out = malloc(s.bytes);
    assert_non_null(out);
    memcpy(out, fv_tensor_data(p), s.bytes);
    fv_tensor_destroy(p);
    return out;
}

/* Bytes in device memory: a U8 tensor of rows x stride. */
static fv_tensor *device_bytes(const unsigned char *src, int rows, size_t stride) {
    fv_tensor *t = make(g_ctx, FV_DTYPE_U8, 1, rows, (int)stride, 1, NULL);
    FV_ASSERT_OK(fv_tensor_upload(g_ctx, t, src, (size_t)rows * stride));
    return t;
}

static int bpp(fv_pixel_format f) {
    return f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 ? 3
           : f == FV_PIXEL_RGBA32                     ? 4
           : f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY ? 2
                                                      : 1;
}

/* One frame on the host (for the CPU) and in device memory (for CUDA). */
typedef struct frame {
    fv_image host, dev;
    unsigned char *bytes;
    fv_tensor *img, *uv;
} frame;

static frame make_frame(fv_pixel_format f, int w, int h, size_t extra, int separate_uv) {
    frame fr;
    memset(&fr, 0, sizeof fr);
    size_t stride = (size_t)w * bpp(f) + extra, uv_stride = separate_uv ? (size_t)w + 6 : stride;
    int uv_rows = f == FV_PIXEL_NV12 ? h / 2 : 0;
    size_t y_bytes = (size_t)h * stride, uv_bytes = (size_t)uv_rows * uv_stride;
    fr.bytes = malloc(y_bytes + uv_bytes);
    assert_non_null(fr.bytes);
    fv_test_fill_bytes(fr.bytes, y_bytes + uv_bytes);
    fr.host = (fv_image){.format = f, .width = w, .height = h, .stride = stride, .data = fr.bytes};
    fr.dev = fr.host;
    if (f == FV_PIXEL_NV12 && separate_uv) {
        fr.host.uv = fr.bytes + y_bytes, fr.host.uv_stride = uv_stride;
        fr.img = device_bytes(fr.bytes, h, stride);
        fr.uv = device_bytes(fr.bytes + y_bytes, uv_rows, uv_stride);
        fr.dev.uv = fv_tensor_data(fr.uv), fr.dev.uv_stride = uv_stride;
    } else {
        fr.img = device_bytes(fr.bytes, h + uv_rows, stride);
    }
    fr.dev.data = fv_tensor_data(fr.img);
    return fr;
}

static void free_frame(frame *fr) {
    fv_tensor_destroy(fr->img);
    fv_tensor_destroy(fr->uv);
    free(fr->bytes);
}

/* Compares a GPU tensor's storage with a CPU one's, element by element. */
static void compare(fv_tensor *gt, fv_tensor *ct, const char *what) {
    fv_tensor_shape s = shape_of(gt);
    unsigned char *got = read_raw(gt);
    const unsigned char *want = fv_tensor_data(ct);
    size_t n = s.bytes / s.elem_bytes;
    for (size_t i = 0; i < n; i++)
        if (memcmp(got + i * s.elem_bytes, want + i * s.elem_bytes, s.elem_bytes) != 0) {
            float g, r;
            if (s.dtype == FV_DTYPE_F16) {
                fv_half gh, rh;
                memcpy(&gh, got + 2 * i, 2), memcpy(&rh, want + 2 * i, 2);
                g = fv_f16_to_f32(gh), r = fv_f16_to_f32(rh);
            } else {
                memcpy(&g, got + 4 * i, 4), memcpy(&r, want + 4 * i, 4);
            }
            size_t c = i % (size_t)s.c_stored, p = i / (size_t)s.c_stored;
            fail_msg("%s: element %zu (pixel %zu of the batch, channel %zu): GPU %.9g, CPU %.9g",
                     what, i, p, c, (double)g, (double)r);
        }
    free(got);
}

static const fv_pixel_format formats[] = {FV_PIXEL_GRAY8,  FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                          FV_PIXEL_RGBA32, FV_PIXEL_YUYV,  FV_PIXEL_UYVY,
                                          FV_PIXEL_NV12};

typedef struct pre_case {
    int sw, sh, dw, dh;
    size_t extra;
    int separate_uv;
    fv_preprocess_desc desc;
} pre_case;

static void preprocess_matches_cpu(void **state) {
    (void)state;
    const pre_case cases[] = {
        {1920,
         1080,
         224,
         224,
         0,
         0,
         {.mean = {0.485f, 0.456f, 0.406f}, .std = {0.229f, 0.224f, 0.225f}}},
        {1920, 1080, 224, 224, 64, 1, {.fit = FV_RESIZE_LETTERBOX, .fill = {114, 114, 114}}},
        {640, 480, 28, 28, 0, 0, {.mean = {0.286f}, .std = {0.353f}}},
        {38,
         24,
         16,
         12,
         5,
         0,
         {.fit = FV_RESIZE_LETTERBOX, .bgr = 1, .scale = 1.0f, .mean = {1, 2, 3}}},
        {10, 6, 31, 17, 3, 1, {.std = {0.5f, 2.0f, 0.25f}, .scale = 0.01f}},
        {2, 2, 1, 1, 0, 0, {0}},
    };
    fv_test_seed(161);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (size_t fi = 0; fi < sizeof formats / sizeof formats[0]; fi++)
            for (int C = 1; C <= 3; C += 2)
                for (int dt = 0; dt < 2; dt++) {
                    const pre_case *pc = &cases[ci];
                    fv_dtype dtype = dt ? FV_DTYPE_F32 : FV_DTYPE_F16;
                    frame fr = make_frame(formats[fi], pc->sw, pc->sh, pc->extra, pc->separate_uv);
                    fv_tensor *gt = make(g_ctx, dtype, 2, pc->dh, pc->dw, C, NULL);
                    fv_tensor *ct = make(g_cpu, dtype, 2, pc->dh, pc->dw, C, NULL);
                    poison(gt), poison_cpu(ct);
                    FV_ASSERT_OK(fv_preprocess(g_ctx, &fr.dev, gt, 1, &pc->desc));
                    FV_ASSERT_OK(fv_preprocess(g_cpu, &fr.host, ct, 1, &pc->desc));
                    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
                    char what[160];
                    snprintf(what, sizeof what, "case %zu: %s %dx%d -> %dx%d C=%d %s", ci,
                             fv_pixel_format_name(formats[fi]), pc->sw, pc->sh, pc->dw, pc->dh, C,
                             dt ? "F32" : "F16");
                    compare(gt, ct, what); /* item 0 must still be the poison on both */
                    fv_tensor_destroy(gt), fv_tensor_destroy(ct);
                    free_frame(&fr);
                }
}

/* Four cameras (different formats and sizes) fill one net's input batch. */
static void cameras_fill_a_batch(void **state) {
    (void)state;
    fv_test_seed(4);
    fv_net_builder *b = NULL;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, y;
    FV_ASSERT_OK(fv_net_add_input(b, "image", 4, 3, 96, 128, &x));
    FV_ASSERT_OK(fv_net_add_activation(b, "relu", x, FV_ACT_RELU, 0, 0, &y));
    FV_ASSERT_OK(fv_net_mark_output(b, y, "out"));
    fv_net *gnet = NULL, *cnet = NULL;
    FV_ASSERT_OK(fv_net_create(g_ctx, b, NULL, &gnet));
    FV_ASSERT_OK(fv_net_create(g_cpu, b, NULL, &cnet));
    fv_net_builder_destroy(b);
    /* the CPU net's input is F32: compare against an F16 CPU tensor too */
    fv_tensor *gin = fv_net_input(gnet, 0), *cin = fv_net_input(cnet, 0);
    fv_tensor *c16 = make(g_cpu, FV_DTYPE_F16, 4, 96, 128, 3, NULL);
    const struct {
        fv_pixel_format f;
        int w, h;
    } cams[4] = {{FV_PIXEL_YUYV, 1280, 720},
                 {FV_PIXEL_NV12, 1920, 1080},
                 {FV_PIXEL_RGB24, 640, 480},
                 {FV_PIXEL_GRAY8, 320, 240}};
    fv_preprocess_desc pd = {.fit = FV_RESIZE_LETTERBOX,
                             .mean = {0.485f, 0.456f, 0.406f},
                             .std = {0.229f, 0.224f, 0.225f}};
    poison(gin);
    fv_timer *timer = NULL;
    FV_ASSERT_OK(fv_timer_create(g_ctx, 2, &timer));
    FV_ASSERT_OK(fv_timer_mark(timer, 0));
    frame fr[4];
    for (int i = 0; i < 4; i++) {
        fr[i] = make_frame(cams[i].f, cams[i].w, cams[i].h, 0, 0);
        FV_ASSERT_OK(fv_preprocess(g_ctx, &fr[i].dev, gin, i, &pd));
        FV_ASSERT_OK(fv_preprocess(g_cpu, &fr[i].host, cin, i, &pd));
        FV_ASSERT_OK(fv_preprocess(g_cpu, &fr[i].host, c16, i, &pd));
    }
    FV_ASSERT_OK(fv_timer_mark(timer, 1));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    float ms = -1;
    FV_ASSERT_OK(fv_timer_elapsed(timer, 0, 1, &ms));
    printf("4 cameras (720p YUYV, 1080p NV12, 480p RGB, 240p grey) -> 4x3x96x128: %.3f ms with "
           "the uploads\n",
           (double)ms);
    assert_true(ms >= 0.0f);
    fv_timer_destroy(timer);
    compare(gin, c16, "net input batch");
    FV_ASSERT_OK(fv_net_forward(gnet));
    FV_ASSERT_OK(fv_net_forward(cnet));
    size_t n = (size_t)4 * 96 * 128 * 3;
    float *go = malloc(n * sizeof *go), *co = malloc(n * sizeof *co);
    FV_ASSERT_OK(fv_net_output_download(gnet, 0, go, n));
    FV_ASSERT_OK(fv_net_output_download(cnet, 0, co, n));
    double err = fv_test_rel_l2(go, co, n);
    printf("4 cameras -> one batch: net output rel L2 (F16 GPU vs F32 CPU) %.3g\n", err);
    assert_true(err < 1e-3);
    free(go), free(co);
    for (int i = 0; i < 4; i++)
        free_frame(&fr[i]);
    fv_tensor_destroy(c16);
    fv_net_destroy(gnet), fv_net_destroy(cnet);
}

int main(void) {
    g_ctx = fv_test_gpu_context_or_skip();
    g_cpu = fv_test_cpu_context(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(preprocess_matches_cpu),
        cmocka_unit_test(cameras_fill_a_batch),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(g_cpu);
    fv_context_destroy(g_ctx);
    return failed;
}
