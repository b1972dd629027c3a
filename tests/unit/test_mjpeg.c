/* The MJPEG decoder (platform/src/mjpeg.c) that v4l2:// uses for MJPG
 * cameras, tested on frames encoded here from data/astronaut.png (resampled)
 * with libjpeg: quality 90, 4:2:0, the standard Huffman tables unless a test
 * asks for optimized ones. Bounds against the source image, per channel
 * sample: RGB24 and GRAY8 (vs the source's luma) mean absolute difference
 * < 3 and PSNR > 30 dB (measured: 1.0-2.8, 35-44 dB); YUYV, UYVY, NV12
 * converted back to RGB24 with fv__host_convert < 4 and > 32 dB (measured:
 * 1.9-3.2, 33.7-38.2 dB: the 4:2:x chroma of the output costs a little more
 * at 318x202). Exact: RGB24 equals fv__jpeg_decode of the same bytes; BGR24
 * and RGBA32 are RGB24 reordered; YUV equals fv__host_convert of RGB24. */
#include "fv_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fovea/platform/image_io.h"
#include <jpeglib.h>

/* Internal to libfovea_platform (platform/src/io_internal.h), exported. */
typedef struct fv__mjpeg fv__mjpeg;
fv_status fv__mjpeg_create(int width, int height, fv_pixel_format format, fv__mjpeg **out);
fv_status fv__mjpeg_decode(fv__mjpeg *m, const unsigned char *data, size_t size,
                           const fv_image **frame);
void fv__mjpeg_destroy(fv__mjpeg *m);
fv_status fv__host_convert(const fv_image *src, fv_image *dst);
fv_status fv__jpeg_decode(const char *path, const unsigned char *buf, size_t size,
                          uint64_t max_pixels, fv_host_image *out);

typedef struct jpeg_buf {
    unsigned char *data;
    size_t size;
} jpeg_buf;

/* The astronaut, bilinearly resampled to w x h, RGB24 dense (caller frees). */
static unsigned char *astronaut(int w, int h) {
    fv_host_image src = {0};
    FV_ASSERT_OK(fv_image_file_load(fv_test_data_path("astronaut.png"), FV_PIXEL_RGB24, &src));
    unsigned char *dst = malloc((size_t)w * h * 3);
    assert_non_null(dst);
    const unsigned char *s = src.data;
    for (int y = 0; y < h; y++) {
        float fy = ((float)y + 0.5f) * (float)src.height / (float)h - 0.5f;
        int y0 = fy < 0 ? 0 : (int)fy, y1 = y0 + 1 < src.height ? y0 + 1 : y0;
        float ay = fy < 0 ? 0 : fy - (float)y0;
        for (int x = 0; x < w; x++) {
            float fx = ((float)x + 0.5f) * (float)src.width / (float)w - 0.5f;
            int x0 = fx < 0 ? 0 : (int)fx, x1 = x0 + 1 < src.width ? x0 + 1 : x0;
            float ax = fx < 0 ? 0 : fx - (float)x0;
            for (int c = 0; c < 3; c++) {
                float p00 = s[(size_t)y0 * src.stride + 3 * x0 + c];
                float p01 = s[(size_t)y0 * src.stride + 3 * x1 + c];
                float p10 = s[(size_t)y1 * src.stride + 3 * x0 + c];
                float p11 = s[(size_t)y1 * src.stride + 3 * x1 + c];
                float v = (1 - ay) * ((1 - ax) * p00 + ax * p01) + ay * ((1 - ax) * p10 + ax * p11);
                dst[((size_t)y * w + x) * 3 + c] = (unsigned char)(v + 0.5f);
            }
        }
    }
    fv_host_image_free(&src);
    return dst;
}

/* rgb (w x h RGB24) as a JPEG in memory; optimize: per-image Huffman tables. */
static jpeg_buf encode(const unsigned char *rgb, int w, int h, int quality, int optimize) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    unsigned char *data = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &data, &size);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    c.optimize_coding = optimize ? TRUE : FALSE;
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW r = (JSAMPROW)(rgb + (size_t)c.next_scanline * w * 3);
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    assert_non_null(data);
    return (jpeg_buf){data, size};
}

/* Number of DHT segments before the first SOS. */
static int count_dht(const jpeg_buf *j) {
    int n = 0;
    for (size_t i = 2; i + 4 <= j->size;) {
        unsigned char m = j->data[i + 1];
        if (m == 0xda) break;
        n += m == 0xc4;
        i += 2 + ((size_t)j->data[i + 2] << 8 | j->data[i + 3]);
    }
    return n;
}

/* j without its DHT segments (as AVI1 MJPEG cameras send it). */
static jpeg_buf strip_dht(const jpeg_buf *j) {
    jpeg_buf o = {malloc(j->size), 2};
    assert_non_null(o.data);
    memcpy(o.data, j->data, 2);
    size_t i = 2;
    while (i + 4 <= j->size && j->data[i + 1] != 0xda) {
        size_t len = 2 + ((size_t)j->data[i + 2] << 8 | j->data[i + 3]);
        if (j->data[i + 1] != 0xc4) memcpy(o.data + o.size, j->data + i, len), o.size += len;
        i += len;
    }
    memcpy(o.data + o.size, j->data + i, j->size - i);
    o.size += j->size - i;
    return o;
}

/* j with four bytes that are no marker after its first segment (APP0):
 * libjpeg skips them with a warning ("extraneous bytes before marker"). */
static jpeg_buf with_junk(const jpeg_buf *j) {
    size_t first = 4 + ((size_t)j->data[4] << 8 | j->data[5]);
    jpeg_buf o = {malloc(j->size + 4), j->size + 4};
    assert_non_null(o.data);
    memcpy(o.data, j->data, first);
    memset(o.data + first, 0x1e, 4);
    memcpy(o.data + first + 4, j->data + first, j->size - first);
    return o;
}

typedef struct diff {
    double mad, psnr;
} diff;

static diff compare(const unsigned char *a, const unsigned char *b, size_t n) {
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        sum += fabs(d);
        sq += d * d;
    }
    diff r = {sum / (double)n, sq == 0 ? INFINITY : 10 * log10(255.0 * 255.0 * (double)n / sq)};
    return r;
}

static void check_close(const char *what, const unsigned char *got, const unsigned char *ref,
                        size_t n, double max_mad, double min_psnr) {
    diff d = compare(got, ref, n);
    if (!(d.mad < max_mad && d.psnr > min_psnr))
        fail_msg("%s: mean abs diff %.3f (limit %.1f), PSNR %.2f dB (limit %.1f)", what, d.mad,
                 max_mad, d.psnr, min_psnr);
}

/* A decoder for w x h frames in f, decoding j once (must succeed). */
static const fv_image *decode_once(fv__mjpeg **m, int w, int h, fv_pixel_format f,
                                   const jpeg_buf *j) {
    FV_ASSERT_OK(fv__mjpeg_create(w, h, f, m));
    assert_non_null(*m);
    const fv_image *img = NULL;
    FV_ASSERT_OK(fv__mjpeg_decode(*m, j->data, j->size, &img));
    assert_non_null(img);
    assert_int_equal(img->format, f);
    assert_int_equal(img->width, w);
    assert_int_equal(img->height, h);
    return img;
}

/* ---- RGB-like outputs ---------------------------------------------------- */
static void rgb_formats_at(int w, int h) {
    unsigned char *src = astronaut(w, h);
    jpeg_buf j = encode(src, w, h, 90, 0);
    size_t n = (size_t)w * h;
    char what[64];

    fv__mjpeg *m = NULL;
    const fv_image *rgb = decode_once(&m, w, h, FV_PIXEL_RGB24, &j);
    assert_int_equal(rgb->stride, (size_t)w * 3);
    snprintf(what, sizeof what, "RGB24 %dx%d", w, h);
    check_close(what, rgb->data, src, n * 3, 3, 30);
    /* exactly what the image file decoder makes of the same bytes */
    fv_host_image ref = {0};
    FV_ASSERT_OK(fv__jpeg_decode("frame.jpg", j.data, j.size, FV_IMAGE_DEFAULT_MAX_PIXELS, &ref));
    assert_int_equal(ref.format, FV_PIXEL_RGB24);
    assert_memory_equal(rgb->data, ref.data, n * 3);
    fv_host_image_free(&ref);

    fv__mjpeg *mb = NULL, *mg = NULL, *ma = NULL;
    const fv_image *bgr = decode_once(&mb, w, h, FV_PIXEL_BGR24, &j);
    const fv_image *gray = decode_once(&mg, w, h, FV_PIXEL_GRAY8, &j);
    const fv_image *rgba = decode_once(&ma, w, h, FV_PIXEL_RGBA32, &j);
    const unsigned char *r = rgb->data, *b = bgr->data, *g = gray->data, *a = rgba->data;
    assert_int_equal(bgr->stride, (size_t)w * 3);
    assert_int_equal(gray->stride, (size_t)w);
    assert_int_equal(rgba->stride, (size_t)w * 4);
    unsigned char *luma = malloc(n);
    assert_non_null(luma);
    for (size_t i = 0; i < n; i++) {
        /* the same pixels, other byte orders */
        if (b[3 * i] != r[3 * i + 2] || b[3 * i + 1] != r[3 * i + 1] || b[3 * i + 2] != r[3 * i])
            fail_msg("BGR24 pixel %zu differs from RGB24", i);
        if (memcmp(a + 4 * i, r + 3 * i, 3) != 0 || a[4 * i + 3] != 255)
            fail_msg("RGBA32 pixel %zu differs from RGB24 (or alpha %d)", i, a[4 * i + 3]);
        double y = 0.299 * src[3 * i] + 0.587 * src[3 * i + 1] + 0.114 * src[3 * i + 2];
        luma[i] = (unsigned char)(y + 0.5);
    }
    snprintf(what, sizeof what, "GRAY8 %dx%d vs the source's luma", w, h);
    check_close(what, g, luma, n, 3, 30);
    free(luma);
    fv__mjpeg_destroy(m);
    fv__mjpeg_destroy(mb);
    fv__mjpeg_destroy(mg);
    fv__mjpeg_destroy(ma);
    free(j.data);
    free(src);
}

static void rgb_formats(void **state) {
    (void)state;
    rgb_formats_at(640, 480);
    rgb_formats_at(333, 247); /* odd: MCU padding on both axes */
}

/* ---- YUV outputs --------------------------------------------------------- */
static void yuv_formats(void **state) {
    (void)state;
    static const int sizes[][2] = {{640, 480}, {318, 202}};
    static const fv_pixel_format fmts[] = {FV_PIXEL_YUYV, FV_PIXEL_UYVY, FV_PIXEL_NV12};
    for (size_t s = 0; s < 2; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        unsigned char *src = astronaut(w, h);
        jpeg_buf j = encode(src, w, h, 90, 0);
        unsigned char *back = malloc((size_t)w * h * 3);
        unsigned char *conv = malloc(fv_image_bytes(FV_PIXEL_NV12, w, h) * 2);
        assert_non_null(back);
        assert_non_null(conv);
        fv__mjpeg *mrgb = NULL;
        const fv_image *rgb = decode_once(&mrgb, w, h, FV_PIXEL_RGB24, &j);
        for (size_t k = 0; k < 3; k++) {
            fv__mjpeg *m = NULL;
            const fv_image *img = decode_once(&m, w, h, fmts[k], &j);
            assert_int_equal(img->stride, (size_t)w * (fmts[k] == FV_PIXEL_NV12 ? 1 : 2));
            if (fmts[k] == FV_PIXEL_NV12) {
                assert_ptr_equal(img->uv, (unsigned char *)img->data + (size_t)w * h);
                assert_int_equal(img->uv_stride, (size_t)w);
            }
            /* exactly the RGB24 decode through fv__host_convert */
            fv_image c = {.format = fmts[k], .width = w, .height = h, .data = conv};
            FV_ASSERT_OK(fv__host_convert(rgb, &c));
            assert_memory_equal(img->data, conv, fv_image_bytes(fmts[k], w, h));
            fv_image out = {.format = FV_PIXEL_RGB24,
                            .width = w,
                            .height = h,
                            .stride = (size_t)w * 3,
                            .data = back};
            FV_ASSERT_OK(fv__host_convert(img, &out));
            char what[64];
            snprintf(what, sizeof what, "%s %dx%d -> RGB24", fv_pixel_format_name(fmts[k]), w, h);
            check_close(what, back, src, (size_t)w * h * 3, 4, 32);
            fv__mjpeg_destroy(m);
        }
        fv__mjpeg_destroy(mrgb);
        free(conv);
        free(back);
        free(j.data);
        free(src);
    }
}

/* ---- frames without Huffman tables ------------------------------------- */
static void no_huffman_tables(void **state) {
    (void)state;
    int w = 640, h = 480;
    size_t bytes = (size_t)w * h * 3;
    unsigned char *src = astronaut(w, h);
    jpeg_buf j = encode(src, w, h, 90, 0);
    jpeg_buf opt = encode(src, w, h, 75, 1); /* its own, non-standard tables */
    jpeg_buf bare = strip_dht(&j);
    assert_true(count_dht(&j) > 0);
    assert_int_equal(count_dht(&bare), 0);
    assert_true(bare.size < j.size);

    fv__mjpeg *m = NULL;
    const fv_image *img = decode_once(&m, w, h, FV_PIXEL_RGB24, &j);
    unsigned char *want = malloc(bytes);
    assert_non_null(want);
    memcpy(want, img->data, bytes);
    /* on a fresh decoder */
    fv__mjpeg *fresh = NULL;
    img = decode_once(&fresh, w, h, FV_PIXEL_RGB24, &bare);
    assert_memory_equal(img->data, want, bytes);
    fv__mjpeg_destroy(fresh);
    /* after a frame with other tables: those must not carry over */
    FV_ASSERT_OK(fv__mjpeg_decode(m, opt.data, opt.size, &img));
    FV_ASSERT_OK(fv__mjpeg_decode(m, bare.data, bare.size, &img));
    assert_memory_equal(img->data, want, bytes);
    /* nor past bytes that are skipped before a marker */
    jpeg_buf junk = with_junk(&bare);
    FV_ASSERT_OK(fv__mjpeg_decode(m, opt.data, opt.size, &img));
    FV_ASSERT_OK(fv__mjpeg_decode(m, junk.data, junk.size, &img));
    assert_memory_equal(img->data, want, bytes);
    free(junk.data);
    /* and a frame with its own tables after that still uses them */
    FV_ASSERT_OK(fv__mjpeg_decode(m, opt.data, opt.size, &img));
    check_close("optimized-table frame", img->data, src, bytes, 4, 28);
    fv__mjpeg_destroy(m);
    free(want);
    free(bare.data);
    free(opt.data);
    free(j.data);
    free(src);
}

/* ---- broken frames ------------------------------------------------------- */

/* Offset of the first byte of entropy-coded data (after the SOS header). */
static size_t scan_start(const jpeg_buf *j) {
    size_t i = 2;
    while (i + 4 <= j->size && j->data[i + 1] != 0xda)
        i += 2 + ((size_t)j->data[i + 2] << 8 | j->data[i + 3]);
    assert_true(i + 4 <= j->size);
    return i + 2 + ((size_t)j->data[i + 2] << 8 | j->data[i + 3]);
}

static void broken_frames(void **state) {
    (void)state;
    int w = 320, h = 240;
    size_t bytes = (size_t)w * h * 3;
    unsigned char *src = astronaut(w, h);
    jpeg_buf j = encode(src, w, h, 90, 0);
    fv__mjpeg *m = NULL;
    const fv_image *img = decode_once(&m, w, h, FV_PIXEL_RGB24, &j);
    const fv_image *first = img;
    unsigned char *want = malloc(bytes);
    assert_non_null(want);
    memcpy(want, img->data, bytes);
    unsigned char *bad = malloc(j.size);
    assert_non_null(bad);
    size_t s0 = scan_start(&j);

    for (int k = 0; k < 7; k++) {
        size_t n = j.size;
        const char *needle = "broken MJPEG frame";
        memcpy(bad, j.data, j.size);
        switch (k) {
        case 0: /* truncated in the middle of the scan */
            n = s0 + (j.size - s0) / 2;
            needle = "Premature end of JPEG file";
            break;
        case 1: /* truncated in the headers */
            n = s0 / 2;
            break;
        case 2: /* a marker in the middle of the scan (a camera's dropped USB packet) */
            bad[s0 + (j.size - s0) / 3] = 0xff;
            bad[s0 + (j.size - s0) / 3 + 1] = 0xd9;
            break;
        case 3: /* a restart marker where none belongs */
            bad[s0 + 100] = 0xff;
            bad[s0 + 101] = 0xd3;
            break;
        case 4: /* garbage in the frame header (SOF precision byte) */
            for (size_t i = 2; i + 4 < j.size; i += 2 + ((size_t)bad[i + 2] << 8 | bad[i + 3]))
                if (bad[i + 1] == 0xc0) {
                    bad[i + 4] = 3;
                    break;
                }
            break;
        case 5: /* no JPEG at all */
            memset(bad, 0, j.size);
            needle = "not a JPEG frame";
            break;
        case 6: /* empty */
            n = 0;
            needle = "not a JPEG frame (0 bytes)";
            break;
        }
        img = (const fv_image *)0x1;
        fv_clear_error();
        fv_status s = fv__mjpeg_decode(m, bad, n, &img);
        if (s != FV_ERR_FORMAT)
            fail_msg("case %d: got %s (%s), want FV_ERR_FORMAT", k, fv_status_name(s),
                     fv_last_error());
        if (!strstr(fv_last_error(), needle) || !strstr(fv_last_error(), "mjpeg_decode: "))
            fail_msg("case %d: message '%s' lacks '%s'", k, fv_last_error(), needle);
        assert_null(img);
        /* the decoder goes on with the next good frame */
        FV_ASSERT_OK(fv__mjpeg_decode(m, j.data, j.size, &img));
        assert_ptr_equal(img, first);
        assert_memory_equal(img->data, want, bytes);
    }
    free(bad);
    free(want);
    fv__mjpeg_destroy(m);
    free(j.data);
    free(src);
}

static void wrong_size(void **state) {
    (void)state;
    unsigned char *src = astronaut(640, 480);
    jpeg_buf big = encode(src, 640, 480, 90, 0);
    free(src);
    src = astronaut(320, 240);
    jpeg_buf small = encode(src, 320, 240, 90, 0);
    fv__mjpeg *m = NULL;
    FV_ASSERT_OK(fv__mjpeg_create(640, 480, FV_PIXEL_NV12, &m));
    const fv_image *img = NULL;
    FV_ASSERT_STATUS(fv__mjpeg_decode(m, small.data, small.size, &img), FV_ERR_FORMAT,
                     "frame is 320x240, negotiated 640x480");
    assert_null(img);
    FV_ASSERT_OK(fv__mjpeg_decode(m, big.data, big.size, &img));
    assert_non_null(img);
    fv__mjpeg_destroy(m);
    free(small.data);
    free(big.data);
    free(src);
}

/* Every frame lands in the buffer made at create. */
static void same_buffer(void **state) {
    (void)state;
    int w = 320, h = 240;
    unsigned char *src = astronaut(w, h);
    jpeg_buf j = encode(src, w, h, 90, 0);
    jpeg_buf bare = strip_dht(&j);
    fv__mjpeg *m = NULL;
    const fv_image *img = decode_once(&m, w, h, FV_PIXEL_YUYV, &j);
    const fv_image *first = img;
    void *data = img->data;
    for (int i = 0; i < 100; i++) {
        const jpeg_buf *f = i & 1 ? &bare : &j;
        FV_ASSERT_OK(fv__mjpeg_decode(m, f->data, f->size, &img));
        assert_ptr_equal(img, first);
        assert_ptr_equal(img->data, data);
    }
    fv__mjpeg_destroy(m);
    free(bare.data);
    free(j.data);
    free(src);
}

static void create_errors(void **state) {
    (void)state;
    fv__mjpeg *m = (fv__mjpeg *)0x1;
    FV_ASSERT_STATUS(fv__mjpeg_create(640, 480, FV_PIXEL_RGB24, NULL), FV_ERR_BAD_PARAM,
                     "out is NULL");
    FV_ASSERT_STATUS(fv__mjpeg_create(0, 480, FV_PIXEL_RGB24, &m), FV_ERR_BAD_PARAM, "size 0x480");
    assert_null(m);
    FV_ASSERT_STATUS(fv__mjpeg_create(640, 40000, FV_PIXEL_RGB24, &m), FV_ERR_BAD_PARAM,
                     "size 640x40000");
    FV_ASSERT_STATUS(fv__mjpeg_create(640, 480, (fv_pixel_format)99, &m), FV_ERR_NOT_SUPPORTED,
                     "cannot decode into");
    FV_ASSERT_STATUS(fv__mjpeg_create(333, 480, FV_PIXEL_YUYV, &m), FV_ERR_BAD_PARAM, "even width");
    FV_ASSERT_STATUS(fv__mjpeg_create(640, 247, FV_PIXEL_NV12, &m), FV_ERR_BAD_PARAM,
                     "even height");
    assert_null(m);
    FV_ASSERT_OK(fv__mjpeg_create(640, 247, FV_PIXEL_UYVY, &m)); /* 4:2:2: any height */
    const fv_image *img = (const fv_image *)0x1;
    unsigned char byte = 0xff;
    FV_ASSERT_STATUS(fv__mjpeg_decode(m, NULL, 10, &img), FV_ERR_BAD_PARAM, "data is NULL");
    assert_null(img);
    FV_ASSERT_STATUS(fv__mjpeg_decode(NULL, &byte, 1, &img), FV_ERR_BAD_PARAM, "decoder is NULL");
    FV_ASSERT_STATUS(fv__mjpeg_decode(m, &byte, 1, NULL), FV_ERR_BAD_PARAM, "frame is NULL");
    fv__mjpeg_destroy(m);
    fv__mjpeg_destroy(NULL); /* allowed */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rgb_formats),       cmocka_unit_test(yuv_formats),
        cmocka_unit_test(no_huffman_tables), cmocka_unit_test(broken_frames),
        cmocka_unit_test(wrong_size),        cmocka_unit_test(same_buffer),
        cmocka_unit_test(create_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
