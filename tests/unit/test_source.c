/* Sources (platform): the URI dispatcher's checks, still images and numbered
 * sequences (file://), the moving test view (test://) and the host pixel
 * conversion they share (fv__host_convert). Pixel values of the bundled
 * photos are those test_image_io checks against OpenCV. */
#include "fv_test.h"
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "fovea/platform/image_io.h"
#include "fovea/platform/source.h"

/* Internal to libfovea_platform (platform/src/io_internal.h), exported. */
fv_status fv__host_convert(const fv_image *src, fv_image *dst);
int64_t fv__now_ns(void);
void fv__copy_rows(void *dst, size_t dstride, const void *src, size_t sstride, size_t row,
                   size_t rows);
int fv__copy_default_workers(long cpus);

static char tmp_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp_dir, name);
    return buf[k];
}

static fv_source *open_src(const fv_source_desc *d) {
    fv_source *s = NULL;
    FV_ASSERT_OK(fv_source_open(d, &s));
    assert_non_null(s);
    return s;
}

static const unsigned char *pix(const fv_source_frame *f, int x, int y) {
    size_t bpp = fv_image_bytes(f->image.format, 1, 1);
    size_t stride = f->image.stride ? f->image.stride : bpp * (size_t)f->image.width;
    return (const unsigned char *)f->image.data + (size_t)y * stride + (size_t)x * bpp;
}

/* Writes a w x h RGB24 PNG filled with v (and a gradient, so frames differ). */
static void write_png(const char *path, int w, int h, unsigned char v) {
    unsigned char *p = malloc((size_t)w * h * 3);
    assert_non_null(p);
    for (int i = 0; i < w * h; i++)
        p[3 * i] = v, p[3 * i + 1] = (unsigned char)i, p[3 * i + 2] = 7;
    fv_image img = {FV_PIXEL_RGB24, w, h, 0, p, NULL, 0};
    FV_ASSERT_OK(fv_image_file_save(path, &img, NULL));
    free(p);
}

/* ---- dispatcher ---------------------------------------------------------- */
static void dispatcher_errors(void **state) {
    (void)state;
    fv_source *s = (fv_source *)0x1;
    FV_ASSERT_STATUS(fv_source_open(NULL, &s), FV_ERR_BAD_PARAM, "desc is NULL");
    assert_null(s);
    fv_source_desc d = {.uri = "test://"};
    FV_ASSERT_STATUS(fv_source_open(&d, NULL), FV_ERR_BAD_PARAM, "out is NULL");
    d.uri = "";
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_BAD_PARAM, "uri is NULL or empty");
    d.uri = "foo://x";
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_BAD_PARAM, "unknown scheme");
    d = (fv_source_desc){.uri = "test://", .width = -1, .height = 10};
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_BAD_PARAM, "size -1x10");
    d = (fv_source_desc){.uri = "test://", .width = 64};
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_BAD_PARAM, "both width and height");
    d = (fv_source_desc){.uri = "test://", .rate = -1};
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_BAD_PARAM, "rate -1");
    d = (fv_source_desc){.uri = "test://", .rate = NAN};
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_BAD_PARAM, "rate");
    d = (fv_source_desc){.uri = "test://", .format = (fv_pixel_format)99};
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_BAD_PARAM, "format 99");
    d = (fv_source_desc){.uri = "test://", .reserved = {0, 0, 3}};
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_BAD_PARAM, "reserved[2]");
    d = (fv_source_desc){.uri = "test://", .fourcc = FV_FOURCC('M', 'J', 'P', 'G')};
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_BAD_PARAM, "fourcc is for v4l2");
    assert_null(s);

    assert_string_equal(fv_source_scheme("v4l2:///dev/video0"), "v4l2");
    assert_string_equal(fv_source_scheme("/dev/video2"), "v4l2");
    assert_string_equal(fv_source_scheme("csi://0"), "csi");
    assert_string_equal(fv_source_scheme("gst://videotestsrc"), "gst");
    assert_string_equal(fv_source_scheme("file://a.png"), "file");
    assert_string_equal(fv_source_scheme("frames_%04d.png"), "file");
    assert_string_equal(fv_source_scheme("test://?fps=0"), "test");
    assert_null(fv_source_scheme("foo://x"));
    assert_null(fv_source_scheme(""));
    assert_null(fv_source_scheme(NULL));

    fv_source_close(NULL); /* allowed */
    fv_source_info info;
    FV_ASSERT_STATUS(fv_source_info_get(NULL, &info), FV_ERR_BAD_PARAM, "src is NULL");
}

/* ---- still images -------------------------------------------------------- */
static void image_png(void **state) {
    (void)state;
    char uri[1100];
    snprintf(uri, sizeof uri, "file://%s", fv_test_data_path("astronaut.png"));
    fv_source *s = open_src(&(fv_source_desc){.uri = uri});
    fv_source_info info;
    FV_ASSERT_OK(fv_source_info_get(s, &info));
    assert_string_equal(info.kind, "image");
    assert_string_equal(info.name, fv_test_data_path("astronaut.png"));
    assert_non_null(strstr(info.detail, "PNG 512x512 RGB24"));
    assert_int_equal(info.format, FV_PIXEL_RGB24);
    assert_int_equal(info.width, 512);
    assert_int_equal(info.height, 512);
    assert_int_equal(info.frames, 1);
    fv_source_frame f;
    FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    assert_int_equal(f.image.width, 512);
    assert_int_equal(f.bytes, 512 * 512 * 3);
    assert_int_equal(f.sequence, 0);
    assert_int_equal(f.buffer_index, -1);
    assert_true(f.timestamp_ns > 0);
    assert_memory_equal(pix(&f, 0, 0), ((unsigned char[]){154, 147, 151}), 3);
    assert_memory_equal(pix(&f, 170, 341), ((unsigned char[]){228, 113, 74}), 3);
    FV_ASSERT_STATUS(fv_source_capture(s, 0, &f), FV_ERR_END_OF_STREAM, "astronaut.png");
    FV_ASSERT_STATUS(fv_source_capture(s, 0, &f), FV_ERR_END_OF_STREAM, NULL);
    fv_source_close(s);
}

static void keep_warning(fv_log_level level, const char *msg, void *user) {
    if (level == FV_LOG_WARN) snprintf(user, 512, "%s", msg);
}

/* Damage libjpeg decodes through (stray bytes between two markers)
 * reaches the source's log as a warning. */
static void image_jpeg_warning(void **state) {
    (void)state;
    FILE *in = fopen(fv_test_data_path("rocket.jpg"), "rb");
    assert_non_null(in);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 3, in);
    fclose(in);
    assert_true(n > 8 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff);
    size_t at = 4 + ((size_t)buf[4] << 8 | buf[5]); /* after the first segment */
    assert_true(at + 2 < n && buf[at] == 0xff);
    memmove(buf + at + 3, buf + at, n - at); /* 3 stray bytes before the next marker */
    buf[at] = 0x11, buf[at + 1] = 0x22, buf[at + 2] = 0x33;
    const char *path = tmp_path("stray.jpg");
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(buf, 1, n + 3, out), n + 3);
    fclose(out);
    char warning[512] = "";
    fv_source *s =
        open_src(&(fv_source_desc){.uri = path, .log = keep_warning, .log_user = warning});
    if (!strstr(warning, "stray.jpg") || !strstr(warning, "extraneous"))
        fail_msg("no warning about the stray bytes: '%s'", warning);
    fv_source_close(s);
    unlink(path);
}

static void image_jpeg(void **state) {
    (void)state;
    fv_source *s = open_src(&(fv_source_desc){.uri = fv_test_data_path("rocket.jpg")});
    fv_source_info info;
    FV_ASSERT_OK(fv_source_info_get(s, &info));
    assert_non_null(strstr(info.detail, "JPEG 640x427"));
    assert_int_equal(info.format, FV_PIXEL_RGB24);
    fv_source_frame f;
    FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    assert_int_equal(f.image.width, 640);
    assert_int_equal(f.image.height, 427);
    /* The same pixels as fv_image_file_load gives. */
    fv_host_image ref;
    FV_ASSERT_OK(fv_image_file_load(fv_test_data_path("rocket.jpg"), FV_PIXEL_RGB24, &ref));
    assert_memory_equal(f.image.data, ref.data, ref.size);
    fv_host_image_free(&ref);
    FV_ASSERT_STATUS(fv_source_capture(s, 0, &f), FV_ERR_END_OF_STREAM, NULL);
    fv_source_close(s);
}

static void image_loop_and_pacing(void **state) {
    (void)state;
    fv_source *s = open_src(
        &(fv_source_desc){.uri = fv_test_data_path("chelsea.png"), .loop = 1, .rate = 100});
    fv_source_info info;
    FV_ASSERT_OK(fv_source_info_get(s, &info));
    assert_int_equal(info.frames, -1);
    assert_true(info.rate == 100);
    fv_source_frame f;
    const void *first = NULL;
    int64_t t0 = fv__now_ns();
    for (int i = 0; i < 6; i++) {
        FV_ASSERT_OK(fv_source_capture(s, 0, &f));
        assert_int_equal(f.sequence, (uint64_t)i);
        if (i == 0) first = f.image.data;
        assert_ptr_equal(f.image.data, first); /* kept, not re-decoded */
        assert_memory_equal(pix(&f, 0, 0), ((unsigned char[]){143, 120, 104}), 3);
    }
    /* 100 fps: frame 5 is due 50 ms after frame 0. */
    assert_true(fv__now_ns() - t0 >= 45000000);
    fv_source_close(s);
}

static void image_formats(void **state) {
    (void)state;
    const char *path = fv_test_data_path("astronaut.png");
    fv_source_frame f;
    fv_source *s = open_src(&(fv_source_desc){.uri = path, .format = FV_PIXEL_GRAY8});
    FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    assert_int_equal(f.image.format, FV_PIXEL_GRAY8);
    assert_int_equal(f.bytes, 512 * 512);
    assert_int_equal(pix(&f, 0, 0)[0], 150); /* OpenCV's grey for these pixels */
    assert_int_equal(pix(&f, 170, 341)[0], 143);
    fv_source_close(s);

    s = open_src(&(fv_source_desc){.uri = path, .format = FV_PIXEL_BGR24});
    FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    assert_memory_equal(pix(&f, 170, 341), ((unsigned char[]){74, 113, 228}), 3);
    fv_source_close(s);

    s = open_src(&(fv_source_desc){.uri = path, .format = FV_PIXEL_RGBA32});
    FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    assert_memory_equal(pix(&f, 170, 341), ((unsigned char[]){228, 113, 74, 255}), 4);
    fv_source_close(s);

    /* YUV: back to RGB within the chroma subsampling's error on a photo. */
    const fv_pixel_format yuv[] = {FV_PIXEL_YUYV, FV_PIXEL_UYVY, FV_PIXEL_NV12};
    for (int k = 0; k < 3; k++) {
        s = open_src(&(fv_source_desc){.uri = path, .format = yuv[k]});
        FV_ASSERT_OK(fv_source_capture(s, 0, &f));
        assert_int_equal(f.image.format, yuv[k]);
        assert_int_equal(f.bytes, fv_image_bytes(yuv[k], 512, 512));
        unsigned char *rgb = malloc(512 * 512 * 3);
        fv_image out = {FV_PIXEL_RGB24, 512, 512, 0, rgb, NULL, 0};
        FV_ASSERT_OK(fv__host_convert(&f.image, &out));
        /* Stated bound: mean error <= 2, every byte within 64 (chroma is
         * shared by 2 or 4 pixels). */
        fv_host_image ref;
        FV_ASSERT_OK(fv_image_file_load(path, FV_PIXEL_RGB24, &ref));
        double sum = 0;
        int worst = 0;
        for (size_t i = 0; i < ref.size; i++) {
            int dlt = abs((int)rgb[i] - (int)((unsigned char *)ref.data)[i]);
            sum += dlt;
            worst = dlt > worst ? dlt : worst;
        }
        fv_host_image_free(&ref);
        if (sum / (512.0 * 512 * 3) > 2.0 || worst > 64)
            fail_msg("%s: mean error %.3f, worst %d", fv_pixel_format_name(yuv[k]),
                     sum / (512.0 * 512 * 3), worst);
        fv_source_close(s);
        free(rgb);
    }
    /* NV12 needs an even height; rocket.jpg is 640x427. */
    fv_source *bad = NULL;
    FV_ASSERT_STATUS(fv_source_open(&(fv_source_desc){.uri = fv_test_data_path("rocket.jpg"),
                                                      .format = FV_PIXEL_NV12},
                                    &bad),
                     FV_ERR_NOT_SUPPORTED, "640x427");
    assert_null(bad);
}

static void image_errors(void **state) {
    (void)state;
    fv_source *s = NULL;
    fv_source_desc d = {.uri = fv_test_data_path("astronaut.png"), .width = 640, .height = 480};
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_NOT_SUPPORTED,
                     "image is 512x512; file sources do not resize");
    assert_null(s);
    d = (fv_source_desc){.uri = tmp_path("missing.png")};
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_IO, "missing.png");
    const char *bad = tmp_path("corrupt.png");
    FILE *fh = fopen(bad, "wb");
    assert_non_null(fh);
    static const unsigned char junk[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 1, 2, 3};
    assert_int_equal(fwrite(junk, 1, sizeof junk, fh), sizeof junk);
    fclose(fh);
    d.uri = bad;
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_FORMAT, "corrupt.png");
    unlink(bad);
    /* a FIFO without a writer as a still image is refused, never waited on */
    const char *fifo = tmp_path("fifo.png");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    char uri[300];
    snprintf(uri, sizeof uri, "file://%s", fifo);
    d.uri = uri;
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_IO, "FIFO");
    assert_null(s);
    unlink(fifo);
    d.uri = tmp_path("x%s%d.png");
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_BAD_PARAM, "one %d conversion");
    d.uri = tmp_path("nothing_%03d.png");
    FV_ASSERT_STATUS(fv_source_open(&d, &s), FV_ERR_IO, "nothing_000.png");
    assert_null(s);
}

/* ---- sequences ----------------------------------------------------------- */
static void sequence(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "seq_%04d.png", i);
        write_png(tmp_path(name), 16, 8, (unsigned char)(10 + 10 * i));
    }
    fv_source *s = open_src(&(fv_source_desc){.uri = tmp_path("seq_%04d.png")});
    fv_source_info info;
    FV_ASSERT_OK(fv_source_info_get(s, &info));
    assert_string_equal(info.kind, "sequence");
    assert_int_equal(info.frames, 3);
    assert_non_null(strstr(info.detail, "3 files from index 0"));
    assert_int_equal(info.width, 16);
    fv_source_frame f;
    for (int i = 0; i < 3; i++) {
        FV_ASSERT_OK(fv_source_capture(s, 0, &f));
        assert_int_equal(pix(&f, 0, 0)[0], 10 + 10 * i);
        assert_int_equal(pix(&f, 5, 0)[1], 5);
    }
    FV_ASSERT_STATUS(fv_source_capture(s, 0, &f), FV_ERR_END_OF_STREAM, "3 files");
    fv_source_close(s);

    /* Looped, converted to GRAY8. */
    s = open_src(
        &(fv_source_desc){.uri = tmp_path("seq_%04d.png"), .loop = 1, .format = FV_PIXEL_GRAY8});
    FV_ASSERT_OK(fv_source_info_get(s, &info));
    assert_int_equal(info.frames, -1);
    for (int i = 0; i < 7; i++) {
        FV_ASSERT_OK(fv_source_capture(s, 0, &f));
        int v = 10 + 10 * (i % 3); /* pixel (0,0) is (v, 0, 7) */
        assert_int_equal(pix(&f, 0, 0)[0], (int)(0.299 * v + 0.114 * 7 + 0.5));
    }
    fv_source_close(s);

    /* From index 1, no zero padding. */
    write_png(tmp_path("one_1.png"), 4, 4, 1);
    write_png(tmp_path("one_2.png"), 4, 4, 2);
    s = open_src(&(fv_source_desc){.uri = tmp_path("one_%d.png")});
    FV_ASSERT_OK(fv_source_info_get(s, &info));
    assert_non_null(strstr(info.detail, "2 files from index 1"));
    FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    assert_int_equal(pix(&f, 0, 0)[0], 1);
    FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    assert_int_equal(pix(&f, 0, 0)[0], 2);
    fv_source_close(s);

    /* A member of another size. */
    write_png(tmp_path("seq_0002.png"), 8, 8, 0);
    s = open_src(&(fv_source_desc){.uri = tmp_path("seq_%04d.png")});
    FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    FV_ASSERT_STATUS(fv_source_capture(s, 0, &f), FV_ERR_FORMAT, "seq_0002.png' is 8x8");
    fv_source_close(s);
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "seq_%04d.png", i);
        assert_int_equal(unlink(tmp_path(name)), 0);
    }
    unlink(tmp_path("one_1.png"));
    unlink(tmp_path("one_2.png"));
}

/* ---- test:// ------------------------------------------------------------- */
static void test_default(void **state) {
    (void)state;
    fv_source *s = open_src(&(fv_source_desc){.uri = "test://"});
    fv_source_info info;
    FV_ASSERT_OK(fv_source_info_get(s, &info));
    assert_string_equal(info.kind, "test");
    assert_non_null(strstr(info.name, "astronaut.png"));
    assert_string_equal(info.detail, "moving view, 1280x720 RGB24 @ 30 fps");
    assert_int_equal(info.width, 1280);
    assert_int_equal(info.height, 720);
    assert_int_equal(info.format, FV_PIXEL_RGB24);
    assert_true(info.rate == 30);
    assert_int_equal(info.frames, -1);
    fv_source_frame f;
    int64_t t0 = fv__now_ns();
    for (int i = 0; i < 4; i++) {
        FV_ASSERT_OK(fv_source_capture(s, 0, &f));
        assert_int_equal(f.image.width, 1280);
        assert_int_equal(f.bytes, 1280 * 720 * 3);
    }
    /* 30 fps: frame 3 is due 100 ms after frame 0. */
    assert_true(fv__now_ns() - t0 >= 95000000);
    fv_source_close(s);
}

static void test_formats(void **state) {
    (void)state;
    const fv_pixel_format fmts[] = {FV_PIXEL_GRAY8, FV_PIXEL_RGB24, FV_PIXEL_BGR24, FV_PIXEL_RGBA32,
                                    FV_PIXEL_YUYV,  FV_PIXEL_UYVY,  FV_PIXEL_NV12};
    const int w = 320, h = 240;
    fv_source *rs = open_src(&(fv_source_desc){.uri = "test://?fps=0", .width = w, .height = h});
    fv_source_frame rf;
    for (int i = 0; i < 3; i++)
        FV_ASSERT_OK(fv_source_capture(rs, 0, &rf)); /* frame 2 */
    unsigned char *conv = malloc((size_t)w * h * 3);
    assert_non_null(conv);
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        fv_source *s = open_src(
            &(fv_source_desc){.uri = "test://?fps=0", .width = w, .height = h, .format = fmts[k]});
        fv_source_info info;
        FV_ASSERT_OK(fv_source_info_get(s, &info));
        assert_int_equal(info.format, fmts[k]);
        assert_true(info.rate == 0);
        assert_non_null(strstr(info.detail, "unpaced"));
        fv_source_frame f;
        for (int i = 0; i < 3; i++)
            FV_ASSERT_OK(fv_source_capture(s, 0, &f));
        assert_int_equal(f.image.format, fmts[k]);
        assert_int_equal(f.image.width, w);
        assert_int_equal(f.bytes, fv_image_bytes(fmts[k], w, h));
        /* Frame 2 in this format, back in RGB, is frame 2 in RGB24 (within
         * the rounding of YUV and of grey). */
        fv_image out = {
            fmts[k] == FV_PIXEL_GRAY8 ? FV_PIXEL_GRAY8 : FV_PIXEL_RGB24, w, h, 0, conv, NULL, 0};
        fv_image ref = rf.image;
        unsigned char *grey = NULL;
        if (fmts[k] == FV_PIXEL_GRAY8) {
            grey = malloc((size_t)w * h);
            fv_image g = {FV_PIXEL_GRAY8, w, h, 0, grey, NULL, 0};
            FV_ASSERT_OK(fv__host_convert(&rf.image, &g));
            ref = g;
        }
        FV_ASSERT_OK(fv__host_convert(&f.image, &out));
        size_t n = fv_image_bytes(out.format, w, h);
        double err = 0;
        int worst = 0;
        for (size_t i = 0; i < n; i++) {
            int dlt = abs((int)conv[i] - (int)((unsigned char *)ref.data)[i]);
            err += dlt;
            if (dlt > worst) worst = dlt;
        }
        err /= (double)n;
        int yuv = fmts[k] >= FV_PIXEL_YUYV;
        if (!yuv) assert_int_equal(worst, 0);
        if (yuv && err > 2.0)
            fail_msg("%s: mean error %.2f > 2", fv_pixel_format_name(fmts[k]), err);
        free(grey);
        fv_source_close(s);
    }
    free(conv);
    fv_source_close(rs);
}

static void test_determinism(void **state) {
    (void)state;
    fv_source_desc d = {.uri = "test://?fps=0", .width = 200, .height = 120};
    fv_source *a = open_src(&d), *b = open_src(&d);
    fv_source_frame fa, fb;
    unsigned char prev[200 * 120 * 3];
    for (int i = 0; i < 6; i++) {
        FV_ASSERT_OK(fv_source_capture(a, 0, &fa));
        if (i > 0 && memcmp(prev, fa.image.data, sizeof prev) == 0)
            fail_msg("frame %d equals frame %d", i, i - 1);
        memcpy(prev, fa.image.data, sizeof prev);
    }
    for (int i = 0; i < 6; i++)
        FV_ASSERT_OK(fv_source_capture(b, 0, &fb));
    assert_int_equal(fa.sequence, 5);
    assert_memory_equal(fa.image.data, fb.image.data, sizeof prev);
    fv_source_close(a);
    fv_source_close(b);

    /* Consecutive frames differ over a long stretch, at a small size too. */
    d = (fv_source_desc){.uri = "test://?fps=0", .width = 16, .height = 16};
    a = open_src(&d);
    unsigned char small[16 * 16 * 3];
    int same = 0;
    for (int i = 0; i < 400; i++) {
        FV_ASSERT_OK(fv_source_capture(a, 0, &fa));
        if (i > 0 && memcmp(small, fa.image.data, sizeof small) == 0) same++;
        memcpy(small, fa.image.data, sizeof small);
    }
    assert_int_equal(same, 0);
    fv_source_close(a);
}

/* A view of an extreme shape costs set-up linear in its pixels: the photo
 * is not scaled to cover 1.25 x 32768 in both dimensions (5 GB). */
static void test_extreme_shapes(void **state) {
    (void)state;
    const int sizes[][2] = {{32768, 1}, {1, 32768}, {32768, 2}};
    for (int i = 0; i < 3; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        fv_source *s = open_src(
            &(fv_source_desc){.uri = "test://?fps=0", .width = sizes[i][0], .height = sizes[i][1]});
        fv_source_frame f;
        for (int n = 0; n < 3; n++)
            FV_ASSERT_OK(fv_source_capture(s, 0, &f));
        assert_int_equal(f.image.width, sizes[i][0]);
        assert_int_equal(f.image.height, sizes[i][1]);
        fv_source_close(s);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        if (sec > 3.0)
            fail_msg("test:// at %dx%d took %.1f s to set up", sizes[i][0], sizes[i][1], sec);
    }
}

static void test_query(void **state) {
    (void)state;
    fv_source *s = open_src(&(fv_source_desc){.uri = "test://?frames=3&fps=0"});
    fv_source_info info;
    FV_ASSERT_OK(fv_source_info_get(s, &info));
    assert_int_equal(info.frames, 3);
    fv_source_frame f;
    for (int i = 0; i < 3; i++)
        FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    FV_ASSERT_STATUS(fv_source_capture(s, 0, &f), FV_ERR_END_OF_STREAM, "frames=3");
    fv_source_close(s);

    char uri[1200];
    snprintf(uri, sizeof uri, "test://?image=%s&fps=0", fv_test_data_path("chelsea.png"));
    s = open_src(&(fv_source_desc){.uri = uri, .width = 64, .height = 48, .rate = 5});
    FV_ASSERT_OK(fv_source_info_get(s, &info));
    assert_string_equal(info.name, fv_test_data_path("chelsea.png"));
    assert_true(info.rate == 0); /* fps= overrides desc.rate */
    FV_ASSERT_OK(fv_source_capture(s, 0, &f));
    assert_int_equal(f.image.width, 64);
    fv_source_close(s);

    fv_source *bad = NULL;
    FV_ASSERT_STATUS(fv_source_open(&(fv_source_desc){.uri = "test://?colour=red"}, &bad),
                     FV_ERR_BAD_PARAM, "known: image, fps, frames");
    FV_ASSERT_STATUS(fv_source_open(&(fv_source_desc){.uri = "test://?fps=fast"}, &bad),
                     FV_ERR_BAD_PARAM, "fps=fast");
    FV_ASSERT_STATUS(fv_source_open(&(fv_source_desc){.uri = "test://?frames=0"}, &bad),
                     FV_ERR_BAD_PARAM, "frames=0");
    FV_ASSERT_STATUS(
        fv_source_open(&(fv_source_desc){.uri = "test://?image=/nonexistent/x.png"}, &bad),
        FV_ERR_IO, "/nonexistent/x.png");
    FV_ASSERT_STATUS(
        fv_source_open(
            &(fv_source_desc){.uri = "test://", .width = 63, .height = 48, .format = FV_PIXEL_YUYV},
            &bad),
        FV_ERR_NOT_SUPPORTED, "63x48");
    assert_null(bad);
}

/* test://?items=N over a small idx file written here: the items change the
 * frames, deterministically, in every format; bad values are refused. */
static void write_idx(const char *path, int bad) {
    gzFile f = gzopen(path, "wb");
    assert_non_null(f);
    unsigned char head[16] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 28, 0, 0, 0, bad ? 27 : 28};
    unsigned char pix[2 * 28 * 28];
    for (int i = 0; i < 2 * 28 * 28; i++)
        pix[i] = (i / 28) % 28 > 6 && (i / 28) % 28 < 22 ? 250 : 0; /* a bar */
    assert_int_equal(gzwrite(f, head, sizeof head), (int)sizeof head);
    assert_int_equal(gzwrite(f, pix, sizeof pix), (int)sizeof pix);
    gzclose(f);
}

static void test_items(void **state) {
    (void)state;
    const char *idx = tmp_path("items.idx.gz");
    write_idx(idx, 0);
    char uri[1200];
    snprintf(uri, sizeof uri, "test://?fps=0&items=2&fashion=%s", idx);
    fv_source_frame f, g;
    fv_source *plain =
        open_src(&(fv_source_desc){.uri = "test://?fps=0", .width = 64, .height = 48});
    fv_source *a = open_src(&(fv_source_desc){.uri = uri, .width = 64, .height = 48});
    fv_source *b = open_src(&(fv_source_desc){.uri = uri, .width = 64, .height = 48});
    for (int i = 0; i < 3; i++) {
        FV_ASSERT_OK(fv_source_capture(plain, 0, &f));
        FV_ASSERT_OK(fv_source_capture(a, 0, &g));
        size_t differ = 0;
        for (size_t k = 0; k < 64 * 48 * 3; k++)
            differ += ((unsigned char *)f.image.data)[k] != ((unsigned char *)g.image.data)[k];
        assert_true(differ > 64 * 48 * 3 / 20); /* two items of 19 x 19 pixels */
        FV_ASSERT_OK(fv_source_capture(b, 0, &f));
        assert_memory_equal(f.image.data, g.image.data, 64 * 48 * 3);
    }
    fv_source_info info;
    FV_ASSERT_OK(fv_source_info_get(a, &info));
    assert_non_null(strstr(info.detail, "Fashion-MNIST items"));
    fv_source_close(plain), fv_source_close(a), fv_source_close(b);
    for (int fi = 0; fi < 3; fi++) {
        const fv_pixel_format fmts[3] = {FV_PIXEL_NV12, FV_PIXEL_GRAY8, FV_PIXEL_RGBA32};
        a = open_src(&(fv_source_desc){.uri = uri, .width = 64, .height = 48, .format = fmts[fi]});
        FV_ASSERT_OK(fv_source_capture(a, 0, &f));
        assert_int_equal(f.image.format, fmts[fi]);
        fv_source_close(a);
    }
    fv_source *bad = NULL;
    FV_ASSERT_STATUS(fv_source_open(&(fv_source_desc){.uri = "test://?items=9"}, &bad),
                     FV_ERR_BAD_PARAM, "items=9");
    FV_ASSERT_STATUS(
        fv_source_open(&(fv_source_desc){.uri = "test://?items=1&fashion=/nonexistent/i.gz"}, &bad),
        FV_ERR_IO, "/nonexistent/i.gz");
    write_idx(idx, 1);
    FV_ASSERT_STATUS(fv_source_open(&(fv_source_desc){.uri = uri}, &bad), FV_ERR_FORMAT,
                     "28x28 idx");
    assert_null(bad);
    unlink(idx);
}

/* ---- fv__host_convert ---------------------------------------------------- */
static void convert(void **state) {
    (void)state;
    enum { W = 8, H = 6 };
    /* Flat 2x2 blocks of random colours: chroma subsampling loses nothing,
     * so the round trip is exact but for rounding (stated bound: 2). */
    unsigned char rgb[H][W][3];
    fv_test_seed(7);
    for (int by = 0; by < H; by += 2)
        for (int bx = 0; bx < W; bx += 2) {
            unsigned char c[3];
            fv_test_fill_bytes(c, 3);
            for (int y = by; y < by + 2; y++)
                for (int x = bx; x < bx + 2; x++)
                    memcpy(rgb[y][x], c, 3);
        }
    fv_image src = {FV_PIXEL_RGB24, W, H, 0, rgb, NULL, 0};
    const fv_pixel_format yuv[] = {FV_PIXEL_YUYV, FV_PIXEL_UYVY, FV_PIXEL_NV12};
    unsigned char mid[W * H * 2], back[H][W][3];
    for (int k = 0; k < 3; k++) {
        fv_image m = {yuv[k], W, H, 0, mid, NULL, 0};
        FV_ASSERT_OK(fv__host_convert(&src, &m));
        fv_image b = {FV_PIXEL_RGB24, W, H, 0, back, NULL, 0};
        FV_ASSERT_OK(fv__host_convert(&m, &b));
        for (int i = 0; i < W * H * 3; i++) {
            int dlt = abs((int)(&back[0][0][0])[i] - (int)(&rgb[0][0][0])[i]);
            if (dlt > 2) fail_msg("%s: byte %d off by %d", fv_pixel_format_name(yuv[k]), i, dlt);
        }
    }
    /* Known values: white and black in limited range, grey weights. */
    unsigned char px[2][3] = {{255, 255, 255}, {0, 0, 0}}, yuyv[4];
    fv_image two = {FV_PIXEL_RGB24, 2, 1, 0, px, NULL, 0};
    FV_ASSERT_OK(fv__host_convert(&two, &(fv_image){FV_PIXEL_YUYV, 2, 1, 0, yuyv, NULL, 0}));
    assert_int_equal(yuyv[0], 235);
    assert_int_equal(yuyv[2], 16);
    assert_in_range(yuyv[1], 127, 129);
    assert_in_range(yuyv[3], 127, 129);
    unsigned char c3[3] = {228, 113, 74}, g;
    FV_ASSERT_OK(fv__host_convert(&(fv_image){FV_PIXEL_RGB24, 1, 1, 0, c3, NULL, 0},
                                  &(fv_image){FV_PIXEL_GRAY8, 1, 1, 0, &g, NULL, 0}));
    assert_int_equal(g, 143); /* 0.299*228 + 0.587*113 + 0.114*74 = 142.94 */
    unsigned char bgra[4];
    FV_ASSERT_OK(fv__host_convert(&(fv_image){FV_PIXEL_GRAY8, 1, 1, 0, &g, NULL, 0},
                                  &(fv_image){FV_PIXEL_RGBA32, 1, 1, 0, bgra, NULL, 0}));
    assert_memory_equal(bgra, ((unsigned char[]){143, 143, 143, 255}), 4);

    /* Strided input: the 4x2 window at (2, 1) of the 8x6 image. */
    fv_image win = {FV_PIXEL_RGB24, 4, 2, W * 3, &rgb[1][2][0], NULL, 0};
    unsigned char bgr[2][4][3];
    FV_ASSERT_OK(fv__host_convert(&win, &(fv_image){FV_PIXEL_BGR24, 4, 2, 0, bgr, NULL, 0}));
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 4; x++) {
            assert_int_equal(bgr[y][x][0], rgb[1 + y][2 + x][2]);
            assert_int_equal(bgr[y][x][2], rgb[1 + y][2 + x][0]);
        }

    /* Unsupported pairs and bad sizes. */
    FV_ASSERT_STATUS(fv__host_convert(&(fv_image){FV_PIXEL_YUYV, 2, 1, 0, yuyv, NULL, 0},
                                      &(fv_image){FV_PIXEL_NV12, 2, 1, 0, mid, NULL, 0}),
                     FV_ERR_NOT_SUPPORTED, "YUYV");
    FV_ASSERT_STATUS(
        fv__host_convert(&src, &(fv_image){FV_PIXEL_RGB24, W, H - 1, 0, back, NULL, 0}),
        FV_ERR_BAD_PARAM, "8x6");
    FV_ASSERT_STATUS(fv__host_convert(&(fv_image){FV_PIXEL_RGB24, 3, 2, 0, rgb, NULL, 0},
                                      &(fv_image){FV_PIXEL_YUYV, 3, 2, 0, mid, NULL, 0}),
                     FV_ERR_BAD_PARAM, "width must be even");
    FV_ASSERT_STATUS(fv__host_convert(NULL, &src), FV_ERR_BAD_PARAM, "src is NULL");
}

static int group_setup(void **state) {
    (void)state;
    return fv_test_temp_dir("fv_source", tmp_dir, sizeof tmp_dir);
}

static int group_teardown(void **state) {
    (void)state;
    fv_test_remove_tree(tmp_dir);
    return 0;
}

/* fv_source_capture_into: the frames fv_source_capture gives, written into
 * the caller's buffer (strided, NV12 with its own UV plane): test:// makes
 * its window there (large frames: rows split between threads), test://
 * with items and file:// images copy theirs; a buffer of another size is
 * refused. */
static void capture_into_case(const char *uri, fv_pixel_format fmt, int w, int h, int frames) {
    fv_source *a = open_src(&(fv_source_desc){.uri = uri, .width = w, .height = h, .format = fmt});
    fv_source *b = open_src(&(fv_source_desc){.uri = uri, .width = w, .height = h, .format = fmt});
    fv_source_info info;
    FV_ASSERT_OK(fv_source_info_get(a, &info));
    int nv12 = info.format == FV_PIXEL_NV12;
    size_t row = nv12 ? (size_t)info.width : fv_image_bytes(info.format, info.width, 1);
    size_t stride = row + 40, rows = (size_t)info.height;
    unsigned char *y = malloc(stride * rows), *uv = malloc(stride * rows / 2 + 1);
    fv_image dst = {.format = info.format,
                    .width = info.width,
                    .height = info.height,
                    .stride = stride,
                    .data = y,
                    .uv = nv12 ? uv : NULL,
                    .uv_stride = nv12 ? stride : 0};
    for (int i = 0; i < frames; i++) {
        fv_source_frame fa, fb;
        memset(y, 0xAB, stride * rows);
        FV_ASSERT_OK(fv_source_capture_into(a, 0, &dst, &fa));
        FV_ASSERT_OK(fv_source_capture(b, 0, &fb));
        assert_ptr_equal(fa.image.data, y);
        assert_int_equal(fa.image.stride, stride);
        assert_int_equal(fa.sequence, fb.sequence);
        assert_int_equal(fa.bytes, stride * rows);
        size_t fs = fb.image.stride ? fb.image.stride : row;
        for (size_t r = 0; r < rows; r++)
            if (memcmp(y + r * stride, (unsigned char *)fb.image.data + r * fs, row) != 0)
                fail_msg("%s: frame %d row %zu differs from fv_source_capture's", uri, i, r);
        if (nv12) {
            const unsigned char *fuv =
                fb.image.uv ? fb.image.uv : (unsigned char *)fb.image.data + fs * rows;
            size_t fuvs = fb.image.uv_stride ? fb.image.uv_stride : fs;
            for (size_t r = 0; r < rows / 2; r++)
                if (memcmp(uv + r * stride, fuv + r * fuvs, row) != 0)
                    fail_msg("%s: frame %d UV row %zu differs", uri, i, r);
        }
    }
    fv_image bad = dst;
    bad.width--;
    fv_source_frame f;
    FV_ASSERT_STATUS(fv_source_capture_into(a, 0, &bad, &f), FV_ERR_BAD_PARAM, "but the source");
    bad = dst, bad.stride = row - 1;
    FV_ASSERT_STATUS(fv_source_capture_into(a, 0, &bad, &f), FV_ERR_BAD_PARAM, "stride");
    FV_ASSERT_STATUS(fv_source_capture_into(a, 0, NULL, &f), FV_ERR_BAD_PARAM, "dst is NULL");
    free(y), free(uv);
    fv_source_close(a);
    fv_source_close(b);
}

static void capture_into(void **state) {
    (void)state;
    capture_into_case("test://?fps=0", FV_PIXEL_RGB24, 97, 41, 3);
    capture_into_case("test://?fps=0", FV_PIXEL_RGB24, 1280, 720, 3); /* > 1 MB: split */
    capture_into_case("test://?fps=0", FV_PIXEL_NV12, 64, 36, 2);
    capture_into_case("test://?fps=0&items=3", FV_PIXEL_RGB24, 96, 64, 2);
    char uri[1100];
    snprintf(uri, sizeof uri, "file://%s", fv_test_data_path("astronaut.png"));
    capture_into_case(uri, 0, 0, 0, 1);
}

/* fv__copy_rows from several threads at once (cameras copying frames into
 * their mailboxes): each frame lands whole, byte for byte, with the bytes
 * between rows of a strided destination untouched. The shapes: a dense
 * frame over 1 MB (split into parts), strided rows, 8 rows of 200 KB (as
 * many parts as rows), and a small frame (copied by its caller alone). */
typedef struct copy_case {
    size_t row, rows, sstride, dstride;
    int seed, frames, bad; /* bad: frames that differed */
} copy_case;

static void *copy_thread(void *arg) {
    copy_case *c = arg;
    unsigned char *src = malloc(c->sstride * c->rows), *dst = malloc(c->dstride * c->rows);
    if (!src || !dst) {
        c->bad = -1;
        free(src), free(dst);
        return NULL;
    }
    uint32_t x = 2463534242u + (uint32_t)c->seed;
    for (int f = 0; f < c->frames; f++) {
        for (size_t i = 0; i < c->sstride * c->rows; i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            src[i] = (unsigned char)x;
        }
        memset(dst, 0xCD, c->dstride * c->rows);
        fv__copy_rows(dst, c->dstride, src, c->sstride, c->row, c->rows);
        int ok = 1;
        for (size_t r = 0; r < c->rows && ok; r++) {
            ok = memcmp(dst + r * c->dstride, src + r * c->sstride, c->row) == 0;
            for (size_t i = c->row; i < c->dstride && ok; i++)
                ok = dst[r * c->dstride + i] == 0xCD;
        }
        c->bad += !ok;
    }
    free(src), free(dst);
    return NULL;
}

/* The copy workers by CPU count: the CPUs less one up to 16 CPUs, at most
 * 7; half the CPUs less one beyond (hosts with several GPUs), at most 15. */
static void copy_default_workers(void **state) {
    (void)state;
    const long cpus[] = {-1, 0, 1, 2, 4, 8, 9, 12, 16, 17, 18, 20, 24, 32, 33, 64, 256};
    const int want[] = {0, 0, 0, 1, 3, 7, 7, 7, 7, 7, 8, 9, 11, 15, 15, 15, 15};
    for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++)
        if (fv__copy_default_workers(cpus[i]) != want[i])
            fail_msg("%ld CPUs: %d workers, want %d", cpus[i], fv__copy_default_workers(cpus[i]),
                     want[i]);
}

static void copy_many_at_once(void **state) {
    (void)state;
    copy_case cases[] = {
        {1500 * 3, 1000, 1500 * 3, 1500 * 3, 1, 6, 0},
        {1281 * 3, 720, 1281 * 3 + 13, 4000, 2, 6, 0},
        {200000, 8, 200000, 200064, 3, 6, 0},
        {1920 * 3, 1080, 1920 * 3, 1920 * 3, 4, 6, 0},
        {300, 200, 320, 300, 5, 20, 0},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    pthread_t t[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_create(&t[i], NULL, copy_thread, &cases[i]), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < N; i++)
        if (cases[i].bad)
            fail_msg("case %d (%zu x %zu bytes): %d of %d frames differ%s", i, cases[i].row,
                     cases[i].rows, cases[i].bad, cases[i].frames,
                     cases[i].bad < 0 ? " (no memory)" : "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dispatcher_errors),
        cmocka_unit_test(image_png),
        cmocka_unit_test(image_jpeg),
        cmocka_unit_test(image_jpeg_warning),
        cmocka_unit_test(image_loop_and_pacing),
        cmocka_unit_test(image_formats),
        cmocka_unit_test(image_errors),
        cmocka_unit_test(sequence),
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_query),
        cmocka_unit_test(test_extreme_shapes),
        cmocka_unit_test(convert),
        cmocka_unit_test(test_items),
        cmocka_unit_test(capture_into),
        cmocka_unit_test(copy_many_at_once),
        cmocka_unit_test(copy_default_workers),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
