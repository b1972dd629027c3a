/* CUDA pack/unpack against the CPU backend: every pixel format, channels 1
 * and 3, F16 and F32, scale and bias, strides wider than rows. The two
 * backends share their pixel arithmetic, so results must be equal bit for
 * bit. Images for the GPU live in U8 device tensors (H x stride x 1: no
 * padding, so the tensor's data is the image). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

static fv_context *g_ctx; /* CUDA */
static fv_context *g_cpu; /* the reference */

static fv_tensor *make(fv_context *ctx, fv_dtype dt, int h, int w, int c, fv_pool *pool) {
    fv_tensor *t = NULL;
    fv_tensor_desc d = {.dtype = dt, .n = 1, .h = h, .w = w, .c = c, .pool = pool};
    FV_ASSERT_OK(fv_tensor_create(ctx, &d, &t));
    return t;
}

static fv_tensor_shape shape_of(const fv_tensor *t) {
    fv_tensor_shape s;
    FV_ASSERT_OK(fv_tensor_shape_get(t, &s));
    return s;
}

/* Fills a GPU tensor's whole storage, padding included, with 0xAB bytes. */
static void poison(fv_tensor *t) {
    fv_tensor_shape s = shape_of(t);
    fv_tensor *p = make(g_ctx, s.dtype, s.h, s.w, s.c, fv_context_pool(g_ctx, FV_POOL_PINNED));
    memset(fv_tensor_data(p), 0xab, s.bytes);
    FV_ASSERT_OK(fv_tensor_copy(g_ctx, t, p));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    fv_tensor_destroy(p);
}

/* A GPU tensor's raw storage, padding included (malloc'd). */
static void *read_raw(fv_tensor *t) {
    fv_tensor_shape s = shape_of(t);
    fv_tensor *p = make(g_ctx, s.dtype, s.h, s.w, s.c, fv_context_pool(g_ctx, FV_POOL_PINNED));
    FV_ASSERT_OK(fv_tensor_copy(g_ctx, p, t));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    void *out = malloc(s.bytes);
    assert_non_null(out);
    memcpy(out, fv_tensor_data(p), s.bytes);
    fv_tensor_destroy(p);
    return out;
}

/* Bytes in device memory: a U8 tensor of rows x stride. */
static fv_tensor *device_bytes(const unsigned char *src, int rows, size_t stride) {
    fv_tensor *t = make(g_ctx, FV_DTYPE_U8, rows, (int)stride, 1, NULL);
    FV_ASSERT_OK(fv_tensor_upload(g_ctx, t, src, (size_t)rows * stride));
    return t;
}

static int bpp(fv_pixel_format f) {
    switch (f) {
    case FV_PIXEL_RGB24:
    case FV_PIXEL_BGR24:
        return 3;
    case FV_PIXEL_RGBA32:
        return 4;
    case FV_PIXEL_YUYV:
    case FV_PIXEL_UYVY:
        return 2;
    default:
        return 1;
    }
}

static const fv_pixel_format all_formats[] = {FV_PIXEL_GRAY8,  FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                              FV_PIXEL_RGBA32, FV_PIXEL_YUYV,  FV_PIXEL_NV12,
                                              FV_PIXEL_UYVY};

typedef struct pack_case {
    int width, height;
    size_t extra;    /* stride - row bytes */
    int separate_uv; /* NV12: UV plane in its own buffer with its own stride */
    fv_pack_desc desc;
    int null_desc;
} pack_case;

/* Packs one image on both backends into dtype and compares the storage. */
static void pack_one(fv_pixel_format f, fv_dtype dt, const pack_case *pc) {
    int w = pc->width, h = pc->height;
    size_t stride = (size_t)w * bpp(f) + pc->extra;
    size_t uv_stride = pc->separate_uv ? (size_t)w + 2 * pc->extra + 6 : stride;
    int y_rows = h, uv_rows = f == FV_PIXEL_NV12 ? h / 2 : 0;
    size_t y_bytes = (size_t)y_rows * stride, uv_bytes = (size_t)uv_rows * uv_stride;
    unsigned char *img = malloc(y_bytes + uv_bytes);
    assert_non_null(img);
    fv_test_fill_bytes(img, y_bytes + uv_bytes);

    fv_image ci = {.format = f, .width = w, .height = h, .stride = stride, .data = img};
    fv_image gi = ci;
    fv_tensor *gimg = NULL, *guv = NULL;
    if (f == FV_PIXEL_NV12 && pc->separate_uv) {
        ci.uv = img + y_bytes;
        ci.uv_stride = uv_stride;
        gimg = device_bytes(img, y_rows, stride);
        guv = device_bytes(img + y_bytes, uv_rows, uv_stride);
        gi.uv = fv_tensor_data(guv);
        gi.uv_stride = uv_stride;
    } else {
        /* NV12: the UV plane follows the Y plane at the same stride */
        gimg = device_bytes(img, y_rows + uv_rows, stride);
    }
    gi.data = fv_tensor_data(gimg);

    fv_pack_desc d = pc->desc;
    int ch = d.channels ? d.channels : (f == FV_PIXEL_GRAY8 ? 1 : 3);
    fv_tensor *ct = make(g_cpu, dt, h, w, ch, NULL);
    fv_tensor *gt = make(g_ctx, dt, h, w, ch, NULL);
    poison(gt);
    FV_ASSERT_OK(fv_image_pack(g_cpu, &ci, ct, pc->null_desc ? NULL : &d));
    FV_ASSERT_OK(fv_image_pack(g_ctx, &gi, gt, pc->null_desc ? NULL : &d));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));

    fv_tensor_shape s = shape_of(gt);
    unsigned char *got = read_raw(gt);
    const unsigned char *want = fv_tensor_data(ct); /* CPU backend: host storage */
    size_t pix = (size_t)w * h;
    for (size_t p = 0; p < pix; p++)
        for (int c = 0; c < s.c_stored; c++) {
            size_t o = (p * s.c_stored + c) * s.elem_bytes;
            if (c >= ch) { /* padding lanes: zero */
                for (size_t b = 0; b < s.elem_bytes; b++)
                    if (got[o + b] != 0)
                        fail_msg("%s %s ch=%d %dx%d: padding lane %d of pixel %zu is not zero",
                                 fv_pixel_format_name(f), dt == FV_DTYPE_F16 ? "F16" : "F32", ch, w,
                                 h, c, p);
            } else if (memcmp(got + o, want + o, s.elem_bytes) != 0) {
                float g, r;
                if (dt == FV_DTYPE_F16) {
                    fv_half gh, rh;
                    memcpy(&gh, got + o, 2), memcpy(&rh, want + o, 2);
                    g = fv_f16_to_f32(gh), r = fv_f16_to_f32(rh);
                } else {
                    memcpy(&g, got + o, 4), memcpy(&r, want + o, 4);
                }
                fail_msg("%s %s ch=%d %dx%d stride %zu scale %g bias %g: pixel %zu (x %zu y %zu) "
                         "channel %d: GPU %.9g, CPU %.9g",
                         fv_pixel_format_name(f), dt == FV_DTYPE_F16 ? "F16" : "F32", ch, w, h,
                         stride, d.scale, d.bias, p, p % w, p / w, c, g, r);
            }
        }
    free(got);
    free(img);
    fv_tensor_destroy(ct), fv_tensor_destroy(gt), fv_tensor_destroy(gimg), fv_tensor_destroy(guv);
}

static void pack_matches_cpu(void **state) {
    const pack_case cases[] = {
        {.width = 38, .height = 20, .null_desc = 1},
        {.width = 38, .height = 20, .extra = 13, .desc = {.scale = 1.0f / 255, .bias = 0}},
        {.width = 38, .height = 20, .extra = 64, .desc = {.channels = 1}},
        {.width = 6, .height = 2, .extra = 3, .desc = {.scale = 0.017f, .bias = -2.1f}},
        {.width = 130,
         .height = 66,
         .extra = 5,
         .separate_uv = 1,
         .desc = {.channels = 3, .scale = 1.0f, .bias = -128.0f}},
        {.width = 130, .height = 66, .separate_uv = 1, .desc = {.channels = 1, .scale = 2.5f}},
        {.width = 640, .height = 360, .extra = 0, .desc = {.scale = 0.0039215f, .bias = 0.25f}},
        {.width = 2, .height = 2, .desc = {.scale = 1e30f}}, /* overflow to inf in F16 */
    };
    fv_test_seed(11);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int fi = 0; fi < 7; fi++)
            for (int dt = 0; dt < 2; dt++) {
                fv_pixel_format f = all_formats[fi];
                pack_case pc = cases[i];
                if (f == FV_PIXEL_GRAY8 && pc.desc.channels == 3) pc.desc.channels = 1;
                pack_one(f, dt ? FV_DTYPE_F32 : FV_DTYPE_F16, &pc);
                /* odd sizes where the format allows them */
                if (f != FV_PIXEL_YUYV && f != FV_PIXEL_UYVY && f != FV_PIXEL_NV12) {
                    pc.width -= 1, pc.height -= 1;
                    if (pc.width >= 1 && pc.height >= 1)
                        pack_one(f, dt ? FV_DTYPE_F32 : FV_DTYPE_F16, &pc);
                }
                /* both channel counts from colour formats */
                if (f != FV_PIXEL_GRAY8 && pc.desc.channels == 0) {
                    pc = cases[i];
                    pc.null_desc = 0;
                    pc.desc.channels = 1;
                    pack_one(f, dt ? FV_DTYPE_F32 : FV_DTYPE_F16, &pc);
                }
            }
}

/* Host values for unpack: mostly in range, some out of it and negative;
 * a few specials. */
static void unpack_values(float *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = fv_test_rand_u64() % 16;
        if (r < 12)
            v[i] = fv_test_rand_uniform(-0.2f, 1.2f);
        else if (r < 14)
            v[i] = (float)((int)(fv_test_rand_u64() % 256)) / 255.0f; /* exact bytes */
        else
            v[i] = fv_test_rand_uniform(-50.0f, 50.0f);
    }
    const float special[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 0.5f / 255.0f, 1.0f};
    for (size_t i = 0; i < sizeof special / sizeof special[0] && i * 7 < n; i++)
        v[i * 7] = special[i];
}

static void unpack_one(fv_dtype dt, int c, fv_pixel_format f, int w, int h, size_t extra,
                       const fv_unpack_desc *d) {
    size_t n = (size_t)w * h * c;
    float *vals = malloc(n * sizeof(float));
    assert_non_null(vals);
    unpack_values(vals, n);
    fv_tensor *ct = make(g_cpu, dt, h, w, c, NULL);
    fv_tensor *gt = make(g_ctx, dt, h, w, c, NULL);
    if (dt == FV_DTYPE_F16) {
        fv_half *hv = malloc(n * 2);
        assert_non_null(hv);
        fv_f32_to_f16_n(vals, hv, n);
        FV_ASSERT_OK(fv_tensor_upload(g_cpu, ct, hv, n * 2));
        FV_ASSERT_OK(fv_tensor_upload(g_ctx, gt, hv, n * 2));
        free(hv);
    } else {
        FV_ASSERT_OK(fv_tensor_upload(g_cpu, ct, vals, n * 4));
        FV_ASSERT_OK(fv_tensor_upload(g_ctx, gt, vals, n * 4));
    }
    size_t stride = (size_t)w * bpp(f) + extra, bytes = stride * h;
    unsigned char *want = malloc(bytes), *got = malloc(bytes);
    assert_non_null(want);
    assert_non_null(got);
    memset(want, 0xab, bytes); /* poisoned; bytes past each row must stay so */
    memset(got, 0xab, bytes);
    fv_tensor *gimg = device_bytes(got, h, stride);
    fv_image ci = {.format = f, .width = w, .height = h, .stride = stride, .data = want};
    fv_image gi = ci;
    gi.data = fv_tensor_data(gimg);
    memset(got, 0, bytes);
    FV_ASSERT_OK(fv_image_unpack(g_cpu, ct, &ci, d));
    FV_ASSERT_OK(fv_image_unpack(g_ctx, gt, &gi, d));
    FV_ASSERT_OK(fv_tensor_download(g_ctx, gimg, got, bytes));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    for (size_t i = 0; i < bytes; i++)
        if (got[i] != want[i])
            fail_msg("unpack %s C=%d -> %s %dx%d stride %zu abs %d scale %g bias %g: byte %zu "
                     "(row %zu, offset %zu): GPU %u, CPU %u",
                     dt == FV_DTYPE_F16 ? "F16" : "F32", c, fv_pixel_format_name(f), w, h, stride,
                     d ? d->absolute : 0, d ? d->scale : 0, d ? d->bias : 0, i, i / stride,
                     i % stride, got[i], want[i]);
    free(vals), free(want), free(got);
    fv_tensor_destroy(ct), fv_tensor_destroy(gt), fv_tensor_destroy(gimg);
}

static void unpack_matches_cpu(void **state) {
    const fv_pixel_format outs[] = {FV_PIXEL_GRAY8, FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                    FV_PIXEL_RGBA32};
    const int cs[] = {1, 3, 4, 9};
    const fv_unpack_desc descs[] = {
        {.absolute = 0},
        {.absolute = 1},
        {.absolute = 1, .scale = 127.5f, .bias = 127.5f},
        {.absolute = 0, .scale = 100.0f, .bias = -3.25f},
    };
    fv_test_seed(12);
    for (int dt = 0; dt < 2; dt++)
        for (int ci = 0; ci < 4; ci++)
            for (int oi = 0; oi < 4; oi++)
                for (int di = 0; di < 4; di++) {
                    fv_dtype t = dt ? FV_DTYPE_F32 : FV_DTYPE_F16;
                    unpack_one(t, cs[ci], outs[oi], 37, 19, 0, &descs[di]);
                    unpack_one(t, cs[ci], outs[oi], 37, 19, 13, &descs[di]);
                    unpack_one(t, cs[ci], outs[oi], 64, 8, 4, &descs[di]);
                }
    unpack_one(FV_DTYPE_F16, 3, FV_PIXEL_RGB24, 5, 3, 0, NULL);
}

/* Pack then unpack on the GPU gives back the image (scale 1/255, 255). */
static void pack_unpack_round_trip(void **state) {
    const int w = 41, h = 23;
    unsigned char src[41 * 23 * 3], back[41 * 23 * 3];
    fv_test_seed(13);
    fv_test_fill_bytes(src, sizeof src);
    fv_tensor *gimg = device_bytes(src, h, (size_t)w * 3);
    fv_tensor *t = make(g_ctx, FV_DTYPE_F16, h, w, 3, NULL);
    fv_tensor *out = make(g_ctx, FV_DTYPE_U8, h, w * 3, 1, NULL);
    fv_image in = {.format = FV_PIXEL_RGB24, .width = w, .height = h, .data = fv_tensor_data(gimg)};
    fv_image o = {.format = FV_PIXEL_BGR24, .width = w, .height = h, .data = fv_tensor_data(out)};
    FV_ASSERT_OK(fv_image_pack(g_ctx, &in, t, NULL));
    FV_ASSERT_OK(fv_image_unpack(g_ctx, t, &o, NULL));
    FV_ASSERT_OK(fv_tensor_download(g_ctx, out, back, sizeof back));
    FV_ASSERT_OK(fv_context_synchronize(g_ctx));
    for (int p = 0; p < w * h; p++)
        for (int c = 0; c < 3; c++)
            assert_int_equal(back[p * 3 + 2 - c], src[p * 3 + c]);
    fv_tensor_destroy(gimg), fv_tensor_destroy(t), fv_tensor_destroy(out);
}

int main(void) {
    g_ctx = fv_test_gpu_context_or_skip();
    g_cpu = fv_test_cpu_context(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pack_matches_cpu),
        cmocka_unit_test(unpack_matches_cpu),
        cmocka_unit_test(pack_unpack_round_trip),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(g_cpu);
    fv_context_destroy(g_ctx);
    return failed;
}
