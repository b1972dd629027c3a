/* fv_image_pack / fv_image_unpack on the CPU backend against references
 * written here from the documented rules; bad images refused. */
#include "fv_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *fmt_name(fv_pixel_format f) {
    return fv_pixel_format_name(f);
}

static double clamp255(double v) {
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* The reference: pixel (x, y) of an image as R, G, B (or luma in v[0] when
 * channels is 1), as doubles 0..255. */
static void ref_pixel(const fv_image *im, int x, int y, int channels, double v[3]) {
    const unsigned char *row = (const unsigned char *)im->data + (size_t)y * im->stride;
    double Y = 0, U = 0, V = 0;
    int yuv = 0;
    switch (im->format) {
    case FV_PIXEL_GRAY8:
        v[0] = row[x];
        return;
    case FV_PIXEL_RGB24:
        v[0] = row[3 * x], v[1] = row[3 * x + 1], v[2] = row[3 * x + 2];
        break;
    case FV_PIXEL_BGR24:
        v[2] = row[3 * x], v[1] = row[3 * x + 1], v[0] = row[3 * x + 2];
        break;
    case FV_PIXEL_RGBA32:
        v[0] = row[4 * x], v[1] = row[4 * x + 1], v[2] = row[4 * x + 2];
        break;
    case FV_PIXEL_YUYV: /* Y0 U Y1 V */
        Y = row[2 * x], U = row[4 * (x / 2) + 1], V = row[4 * (x / 2) + 3], yuv = 1;
        break;
    case FV_PIXEL_UYVY: /* U Y0 V Y1 */
        Y = row[2 * x + 1], U = row[4 * (x / 2)], V = row[4 * (x / 2) + 2], yuv = 1;
        break;
    case FV_PIXEL_NV12: {
        const unsigned char *uv = (const unsigned char *)im->uv + (size_t)(y / 2) * im->uv_stride;
        Y = row[x], U = uv[x / 2 * 2], V = uv[x / 2 * 2 + 1], yuv = 1;
        break;
    }
    }
    if (yuv && channels == 1) {
        v[0] = Y;
    } else if (yuv) {
        v[0] = clamp255(1.164 * (Y - 16) + 1.596 * (V - 128));
        v[1] = clamp255(1.164 * (Y - 16) - 0.392 * (U - 128) - 0.813 * (V - 128));
        v[2] = clamp255(1.164 * (Y - 16) + 2.017 * (U - 128));
    } else if (channels == 1) {
        v[0] = 0.299 * v[0] + 0.587 * v[1] + 0.114 * v[2];
    }
}

static size_t bpp(fv_pixel_format f) {
    return f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 ? 3
           : f == FV_PIXEL_RGBA32                     ? 4
           : f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY ? 2
                                                      : 1;
}

/* An image of random bytes (the gaps past each row too). extra: bytes past
 * each row; uv_extra >= 0 puts NV12's UV plane in its own buffer with that
 * many bytes past each UV row, -1 leaves it after the Y plane (defaults). */
static fv_image make_image(fv_pixel_format f, int w, int h, int extra, int uv_extra,
                           unsigned char **bufs) {
    fv_image im = {.format = f, .width = w, .height = h};
    size_t stride = (size_t)w * bpp(f) + (size_t)extra;
    im.stride = extra ? stride : 0;
    size_t bytes = stride * h + (f == FV_PIXEL_NV12 && uv_extra < 0 ? stride * (h / 2) : 0);
    bufs[0] = malloc(bytes);
    bufs[1] = NULL;
    assert_non_null(bufs[0]);
    fv_test_fill_bytes(bufs[0], bytes);
    im.data = bufs[0];
    if (f == FV_PIXEL_NV12 && uv_extra >= 0) {
        im.uv_stride = (size_t)w + (size_t)uv_extra;
        bufs[1] = malloc(im.uv_stride * (h / 2));
        assert_non_null(bufs[1]);
        fv_test_fill_bytes(bufs[1], im.uv_stride * (h / 2));
        im.uv = bufs[1];
    }
    return im;
}

/* The image as the reference sees it: defaults filled in. */
static fv_image normalized(fv_image im) {
    if (!im.stride) im.stride = (size_t)im.width * bpp(im.format);
    if (im.format == FV_PIXEL_NV12) {
        if (!im.uv) im.uv = (unsigned char *)im.data + im.stride * im.height;
        if (!im.uv_stride) im.uv_stride = im.stride;
    }
    return im;
}

static void pack_case(fv_pixel_format f, int w, int h, int extra, int uv_extra, int channels,
                      float scale, float bias, fv_dtype dt, uint32_t flags) {
    unsigned char *bufs[2];
    fv_image im = make_image(f, w, h, extra, uv_extra, bufs);
    fv_context *ctx = fv_test_cpu_context(flags);
    int c = channels ? channels : (f == FV_PIXEL_GRAY8 ? 1 : 3);
    fv_tensor_desc td = {.dtype = dt, .h = h, .w = w, .c = c};
    fv_tensor *t = NULL;
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &t));
    fv_tensor_shape sh;
    FV_ASSERT_OK(fv_tensor_shape_get(t, &sh));
    if (dt == FV_DTYPE_F16)
        for (size_t i = 0; i < sh.bytes / 2; i++)
            ((fv_half *)fv_tensor_data(t))[i] = 0x7e00;
    else
        for (size_t i = 0; i < sh.bytes / 4; i++)
            ((float *)fv_tensor_data(t))[i] = NAN;
    fv_pack_desc pd = {.channels = channels, .scale = scale, .bias = bias};
    FV_ASSERT_OK(fv_image_pack(ctx, &im, t, &pd));
    FV_ASSERT_OK(fv_context_synchronize(ctx));

    fv_image ref = normalized(im);
    double sc = scale != 0.0f ? scale : 1.0 / 255.0;
    int rounded = dt == FV_DTYPE_F16 || (flags & FV_CONTEXT_CPU_ROUND_F16);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double v[3] = {0, 0, 0};
            ref_pixel(&ref, x, y, c, v);
            size_t base = ((size_t)y * w + x) * sh.c_stored;
            for (int ch = 0; ch < sh.c_stored; ch++) {
                float got = dt == FV_DTYPE_F16
                                ? fv_f16_to_f32(((const fv_half *)fv_tensor_data(t))[base + ch])
                                : ((const float *)fv_tensor_data(t))[base + ch];
                double want = ch < c ? v[ch] * sc + bias : 0.0;
                /* float rounding of the 0..255 intermediates: ~1e-5 in byte units */
                double tol = (rounded ? 1e-3 : 2e-6) * fabs(want) + 1e-4 * fabs(sc);
                if (!(fabs(got - want) <= tol))
                    fail_msg("pack %s %dx%d extra %d/%d C%d scale %g bias %g %s: pixel (%d,%d) "
                             "channel %d = %.8g, want %.8g",
                             fmt_name(f), w, h, extra, uv_extra, c, scale, bias,
                             dt == FV_DTYPE_F16 ? "F16" : "F32", x, y, ch, got, want);
            }
        }
    fv_tensor_destroy(t);
    fv_context_destroy(ctx);
    free(bufs[0]), free(bufs[1]);
}

static void test_pack_formats(void **state) {
    fv_test_seed(21);
    const fv_pixel_format fmts[7] = {FV_PIXEL_GRAY8,  FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                     FV_PIXEL_RGBA32, FV_PIXEL_YUYV,  FV_PIXEL_NV12,
                                     FV_PIXEL_UYVY};
    const fv_dtype dts[2] = {FV_DTYPE_F32, FV_DTYPE_F16};
    for (int i = 0; i < 7; i++)
        for (int t = 0; t < 2; t++) {
            fv_pixel_format f = fmts[i];
            int w = f >= FV_PIXEL_YUYV ? 10 : 9, h = f == FV_PIXEL_NV12 ? 6 : 5;
            pack_case(f, w, h, 0, -1, 0, 0.0f, 0.0f, dts[t], 0);   /* defaults */
            pack_case(f, w, h, 7, 3, 1, 2.0f, -100.0f, dts[t], 0); /* luma, strides */
            pack_case(f, w, h, 16, 0, 0, -0.5f, 3.0f, dts[t], 0);  /* scale < 0 */
            if (f != FV_PIXEL_GRAY8) pack_case(f, w, h, 1, -1, 3, 1.0f, 0.25f, dts[t], 0);
        }
    pack_case(FV_PIXEL_NV12, 8, 4, 24, 40, 3, 0.0f, 0.0f, FV_DTYPE_F32, FV_CONTEXT_CPU_ROUND_F16);
    pack_case(FV_PIXEL_RGB24, 8, 4, 0, -1, 0, 0.01f, 0.0f, FV_DTYPE_F32, FV_CONTEXT_CPU_ROUND_F16);
}

/* BT.601 at known points (scale 1, bias 0, F32). */
static void test_pack_yuv_values(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    /* YUYV pairs: black, white (video levels), full Y, a saturated red */
    unsigned char px[16] = {16, 128, 16, 128, 235, 128, 255, 128, 81, 90, 81, 240, 0, 0, 0, 0};
    fv_image im = {.format = FV_PIXEL_YUYV, .width = 8, .height = 1, .data = px};
    fv_tensor_desc td = {.dtype = FV_DTYPE_F32, .h = 1, .w = 8, .c = 3};
    fv_tensor *t;
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &t));
    fv_pack_desc pd = {.scale = 1.0f};
    FV_ASSERT_OK(fv_image_pack(ctx, &im, t, &pd));
    float out[24];
    FV_ASSERT_OK(fv_tensor_download(ctx, t, out, sizeof out));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    const float want[8][3] = {{0, 0, 0},        {0, 0, 0},        {254.916f, 254.916f, 254.916f},
                              {255, 255, 255},  {254.412f, 0, 0}, {254.412f, 0, 0},
                              {0, 135.616f, 0}, {0, 135.616f, 0}};
    for (int i = 0; i < 8; i++)
        for (int c = 0; c < 3; c++)
            if (fabsf(out[i * 3 + c] - want[i][c]) > 1e-3f)
                fail_msg("pixel %d channel %d = %.6g, want %.6g", i, c, out[i * 3 + c], want[i][c]);
    fv_tensor_destroy(t);
    fv_context_destroy(ctx);
}

/* The documented rule, in the documented float order. */
static unsigned char ref_byte(float x, float scale, float bias) {
    float t = floorf((x * scale + bias) + 0.5f);
    if (!(t > 0.0f)) return 0;
    return t >= 255.0f ? 255 : (unsigned char)t;
}

static void unpack_case(fv_pixel_format f, int c, int absolute, float scale, float bias,
                        fv_dtype dt, int extra) {
    const int w = 7, h = 5;
    size_t cnt = (size_t)w * h * c;
    float *x = malloc(cnt * 4);
    fv_half *hx = malloc(cnt * 2);
    assert_non_null(x && hx);
    fv_test_fill_uniform(x, cnt, -0.4f, 1.4f);
    fv_context *ctx = fv_test_cpu_context(0);
    fv_tensor_desc td = {.dtype = dt, .h = h, .w = w, .c = c};
    fv_tensor *t;
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &t));
    if (dt == FV_DTYPE_F16) {
        fv_f32_to_f16_n(x, hx, cnt);
        fv_f16_to_f32_n(hx, x, cnt); /* what the tensor holds */
        FV_ASSERT_OK(fv_tensor_upload(ctx, t, hx, cnt * 2));
    } else {
        FV_ASSERT_OK(fv_tensor_upload(ctx, t, x, cnt * 4));
    }
    size_t row = (size_t)w * bpp(f), stride = row + (size_t)extra;
    unsigned char *buf = malloc(stride * h);
    assert_non_null(buf);
    memset(buf, 0xAB, stride * h);
    fv_image im = {.format = f, .width = w, .height = h, .stride = extra ? stride : 0, .data = buf};
    fv_unpack_desc ud = {.absolute = absolute, .scale = scale, .bias = bias};
    FV_ASSERT_OK(fv_image_unpack(ctx, t, &im, &ud));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    float sc = scale != 0.0f ? scale : 255.0f;
    for (int y = 0; y < h; y++) {
        for (int px = 0; px < w; px++) {
            const float *v = x + ((size_t)y * w + px) * c;
            float a = v[0], g = c >= 3 ? v[1] : v[0], b = c >= 3 ? v[2] : v[0];
            if (absolute) a = fabsf(a), g = fabsf(g), b = fabsf(b);
            unsigned char want[4] = {ref_byte(a, sc, bias), ref_byte(g, sc, bias),
                                     ref_byte(b, sc, bias), 255};
            if (f == FV_PIXEL_GRAY8)
                want[0] = ref_byte(c >= 3 ? ((a + g) + b) / 3.0f : a, sc, bias);
            if (f == FV_PIXEL_BGR24) {
                unsigned char tmp = want[0];
                want[0] = want[2], want[2] = tmp;
            }
            const unsigned char *got = buf + (size_t)y * stride + (size_t)px * bpp(f);
            if (memcmp(got, want, bpp(f)) != 0)
                fail_msg("unpack %s C%d abs %d scale %g bias %g %s: pixel (%d,%d) = %d %d %d, "
                         "want %d %d %d",
                         fmt_name(f), c, absolute, scale, bias, dt == FV_DTYPE_F16 ? "F16" : "F32",
                         px, y, got[0], bpp(f) > 1 ? got[1] : 0, bpp(f) > 2 ? got[2] : 0, want[0],
                         want[1], want[2]);
        }
        for (size_t i = row; i < stride; i++)
            if (buf[(size_t)y * stride + i] != 0xAB) fail_msg("row %d: gap byte %zu written", y, i);
    }
    fv_tensor_destroy(t);
    fv_context_destroy(ctx);
    free(x), free(hx), free(buf);
}

static void test_unpack_formats(void **state) {
    fv_test_seed(22);
    const fv_pixel_format fmts[4] = {FV_PIXEL_GRAY8, FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                     FV_PIXEL_RGBA32};
    const int cs[3] = {1, 3, 4};
    const fv_dtype dts[2] = {FV_DTYPE_F32, FV_DTYPE_F16};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++)
            for (int t = 0; t < 2; t++) {
                unpack_case(fmts[i], cs[k], 0, 0.0f, 0.0f, dts[t], 0);
                unpack_case(fmts[i], cs[k], 1, 0.0f, 0.0f, dts[t], 5);
                unpack_case(fmts[i], cs[k], 1, 100.0f, 20.0f, dts[t], 3);
                unpack_case(fmts[i], cs[k], 0, -200.0f, 128.0f, dts[t], 0);
            }
}

/* The rounding rule at its edges: round half up, clamp, NaN -> 0. */
static void test_unpack_rounding(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    const float x[14] = {2.5f, -0.5f,    0.49999994f, 254.5f, 255.49f, 300.0f, -3.0f,
                         NAN,  INFINITY, -INFINITY,   1.5f,   0.5f,    -2.5f,  127.4999f};
    const unsigned char want[2][14] = {{3, 0, 0, 255, 255, 255, 0, 0, 255, 0, 2, 1, 0, 127},
                                       {3, 1, 0, 255, 255, 255, 3, 0, 255, 255, 2, 1, 3, 127}};
    fv_tensor_desc td = {.dtype = FV_DTYPE_F32, .h = 1, .w = 14, .c = 1};
    fv_tensor *t;
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &t));
    FV_ASSERT_OK(fv_tensor_upload(ctx, t, x, sizeof x));
    for (int a = 0; a < 2; a++) {
        unsigned char out[14];
        memset(out, 0x55, sizeof out);
        fv_image im = {.format = FV_PIXEL_GRAY8, .width = 14, .height = 1, .data = out};
        fv_unpack_desc ud = {.absolute = a, .scale = 1.0f};
        FV_ASSERT_OK(fv_image_unpack(ctx, t, &im, &ud));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        for (int i = 0; i < 14; i++)
            if (out[i] != want[a][i])
                fail_msg("abs %d: x=%g gave %d, want %d", a, x[i], out[i], want[a][i]);
    }
    fv_tensor_destroy(t);
    fv_context_destroy(ctx);
}

/* Bytes -> F32/F16 with the default scales -> the same bytes. */
static void test_round_trip(void **state) {
    fv_test_seed(23);
    fv_context *ctx = fv_test_cpu_context(0);
    const fv_dtype dts[2] = {FV_DTYPE_F32, FV_DTYPE_F16};
    for (int t = 0; t < 2; t++) {
        unsigned char src[16 * 16 * 3], dst[16 * 16 * 3];
        fv_test_fill_bytes(src, sizeof src);
        for (int i = 0; i < 256; i++)
            src[i] = (unsigned char)i; /* every value */
        fv_image a = {.format = FV_PIXEL_RGB24, .width = 16, .height = 16, .data = src};
        fv_image b = {.format = FV_PIXEL_RGB24, .width = 16, .height = 16, .data = dst};
        fv_tensor_desc td = {.dtype = dts[t], .h = 16, .w = 16, .c = 3};
        fv_tensor *tt;
        FV_ASSERT_OK(fv_tensor_create(ctx, &td, &tt));
        FV_ASSERT_OK(fv_image_pack(ctx, &a, tt, NULL));
        FV_ASSERT_OK(fv_image_unpack(ctx, tt, &b, NULL));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        assert_memory_equal(src, dst, sizeof src);
        fv_tensor_destroy(tt);
    }
    fv_context_destroy(ctx);
}

static void test_bad_images(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    unsigned char buf[64 * 64 * 4] = {0};
    fv_tensor *t3, *t1, *t2, *tu8, *tn2;
    fv_tensor_desc td = {.dtype = FV_DTYPE_F32, .h = 4, .w = 6, .c = 3};
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &t3));
    td.c = 1;
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &t1));
    td.c = 2;
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &t2));
    td.c = 3, td.dtype = FV_DTYPE_U8;
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &tu8));
    td.dtype = FV_DTYPE_F32, td.n = 2;
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &tn2));
    fv_image ok = {.format = FV_PIXEL_RGB24, .width = 6, .height = 4, .data = buf};
    FV_ASSERT_OK(fv_image_pack(ctx, &ok, t3, NULL));
    FV_ASSERT_OK(fv_image_unpack(ctx, t3, &ok, NULL));

    fv_image im = ok;
    im.format = FV_PIXEL_YUYV, im.width = 5;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &im, t3, NULL), FV_ERR_BAD_PARAM, "YUYV width 5");
    im = ok, im.stride = 17;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &im, t3, NULL), FV_ERR_BAD_PARAM, "stride 17");
    FV_ASSERT_STATUS(fv_image_unpack(ctx, t3, &im, NULL), FV_ERR_BAD_PARAM, "stride 17");
    im = ok, im.data = NULL;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &im, t3, NULL), FV_ERR_BAD_PARAM, "data is NULL");
    FV_ASSERT_STATUS(fv_image_unpack(ctx, t3, &im, NULL), FV_ERR_BAD_PARAM, "data is NULL");
    im = ok, im.format = (fv_pixel_format)42;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &im, t3, NULL), FV_ERR_BAD_PARAM, "pixel format 42");
    im = ok, im.height = 0;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &im, t3, NULL), FV_ERR_BAD_PARAM, "6x0");
    im = ok, im.format = FV_PIXEL_NV12, im.height = 3;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &im, t3, NULL), FV_ERR_BAD_PARAM, "NV12 size 6x3");
    im = ok, im.format = FV_PIXEL_NV12, im.uv_stride = 5;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &im, t3, NULL), FV_ERR_BAD_PARAM, "uv_stride 5");
    im = ok, im.format = FV_PIXEL_YUYV;
    FV_ASSERT_STATUS(fv_image_unpack(ctx, t3, &im, NULL), FV_ERR_NOT_SUPPORTED, "YUYV");
    im.format = FV_PIXEL_NV12;
    FV_ASSERT_STATUS(fv_image_unpack(ctx, t3, &im, NULL), FV_ERR_NOT_SUPPORTED, "NV12");
    FV_ASSERT_STATUS(fv_image_pack(ctx, NULL, t3, NULL), FV_ERR_BAD_PARAM, "image is NULL");

    fv_pack_desc pd = {.channels = 3};
    im = ok, im.format = FV_PIXEL_GRAY8;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &im, t3, &pd), FV_ERR_BAD_PARAM, "channels=3");
    pd.channels = 2;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &ok, t2, &pd), FV_ERR_BAD_PARAM, "channels=2");
    pd.channels = 0, pd.scale = NAN;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &ok, t3, &pd), FV_ERR_BAD_PARAM, "finite");
    pd.scale = 0.0f, pd.reserved[0] = 1;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &ok, t3, &pd), FV_ERR_BAD_PARAM, "reserved[0]");
    FV_ASSERT_STATUS(fv_image_pack(ctx, &ok, t1, NULL), FV_ERR_BAD_SHAPE, "C=1");
    FV_ASSERT_STATUS(fv_image_pack(ctx, &ok, tu8, NULL), FV_ERR_BAD_SHAPE, "F16 or F32");
    FV_ASSERT_STATUS(fv_image_pack(ctx, &ok, tn2, NULL), FV_ERR_BAD_SHAPE, "N=2");
    im = ok, im.width = 8;
    FV_ASSERT_STATUS(fv_image_pack(ctx, &im, t3, NULL), FV_ERR_BAD_SHAPE, "W=6");

    fv_unpack_desc ud = {.scale = INFINITY};
    FV_ASSERT_STATUS(fv_image_unpack(ctx, t3, &ok, &ud), FV_ERR_BAD_PARAM, "finite");
    ud.scale = 0.0f, ud.reserved[2] = 9;
    FV_ASSERT_STATUS(fv_image_unpack(ctx, t3, &ok, &ud), FV_ERR_BAD_PARAM, "reserved[2]");
    FV_ASSERT_STATUS(fv_image_unpack(ctx, t2, &ok, NULL), FV_ERR_BAD_SHAPE, "C=2");
    FV_ASSERT_STATUS(fv_image_unpack(ctx, tu8, &ok, NULL), FV_ERR_BAD_SHAPE, "F16 or F32");
    FV_ASSERT_STATUS(fv_image_unpack(ctx, tn2, &ok, NULL), FV_ERR_BAD_SHAPE, "N=2");
    FV_ASSERT_STATUS(fv_image_unpack(ctx, NULL, &ok, NULL), FV_ERR_BAD_PARAM, "tensor is NULL");
    fv_tensor_destroy(t3), fv_tensor_destroy(t1), fv_tensor_destroy(t2);
    fv_tensor_destroy(tu8), fv_tensor_destroy(tn2);
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_formats),   cmocka_unit_test(test_pack_yuv_values),
        cmocka_unit_test(test_unpack_formats), cmocka_unit_test(test_unpack_rounding),
        cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_bad_images),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
