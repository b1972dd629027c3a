/* Sinks (platform): numbered and single image files (file://), null://, the
 * dispatcher's checks on open and on write. Files go to a mkdtemp directory
 * and are read back with fv_image_file_load. */
#include "fv_test.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fovea/platform/image_io.h"
#include "fovea/platform/sink.h"

static char tmp_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp_dir, name);
    return buf[k];
}

enum { W = 40, H = 30 };

/* A smooth RGB24 frame that differs with n (JPEG keeps smooth images well). */
static void make_frame(unsigned char *p, int n) {
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            unsigned char *q = p + ((size_t)y * W + x) * 3;
            q[0] = (unsigned char)(4 * x + 20 * n), q[1] = (unsigned char)(6 * y), q[2] = 128;
        }
}

static fv_sink *open_sink(const char *uri, fv_pixel_format f) {
    fv_sink *s = NULL;
    FV_ASSERT_OK(
        fv_sink_open(&(fv_sink_desc){.uri = uri, .width = W, .height = H, .format = f}, &s));
    assert_non_null(s);
    return s;
}

static int max_diff(const unsigned char *a, const unsigned char *b, size_t n) {
    int worst = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        if (d > worst) worst = d;
    }
    return worst;
}

static void numbered_png(void **state) {
    (void)state;
    char uri[600];
    snprintf(uri, sizeof uri, "file://%s", tmp_path("out_%04d.png"));
    fv_sink *s = open_sink(uri, FV_PIXEL_RGB24);
    fv_sink_info info;
    FV_ASSERT_OK(fv_sink_info_get(s, &info));
    assert_string_equal(info.kind, "images");
    assert_string_equal(info.name, tmp_path("out_%04d.png"));
    assert_string_equal(info.detail, "PNG");
    assert_int_equal(info.frames, 0);
    unsigned char px[3][W * H * 3];
    for (int n = 0; n < 3; n++) {
        make_frame(px[n], n);
        fv_image img = {FV_PIXEL_RGB24, W, H, 0, px[n], NULL, 0};
        FV_ASSERT_OK(fv_sink_write(s, &img, n * 1000000));
    }
    FV_ASSERT_OK(fv_sink_info_get(s, &info));
    assert_int_equal(info.frames, 3);
    FV_ASSERT_OK(fv_sink_close(s));
    for (int n = 0; n < 3; n++) {
        char name[64];
        snprintf(name, sizeof name, "out_%04d.png", n);
        fv_host_image back;
        FV_ASSERT_OK(fv_image_file_load(tmp_path(name), FV_PIXEL_RGB24, &back));
        assert_int_equal(back.width, W);
        assert_int_equal(back.height, H);
        assert_memory_equal(back.data, px[n], sizeof px[n]);
        fv_host_image_free(&back);
        assert_int_equal(unlink(tmp_path(name)), 0);
    }
    assert_int_not_equal(access(tmp_path("out_0003.png"), F_OK), 0);
}

static void strided_gray_png(void **state) {
    (void)state;
    /* A GRAY8 frame with padding at the end of each row. */
    enum { STRIDE = W + 8 };
    unsigned char g[H * STRIDE];
    for (int i = 0; i < H * STRIDE; i++)
        g[i] = (unsigned char)(i * 7);
    fv_sink *s = open_sink(tmp_path("grey.PNG"), FV_PIXEL_GRAY8);
    FV_ASSERT_OK(fv_sink_write(s, &(fv_image){FV_PIXEL_GRAY8, W, H, STRIDE, g, NULL, 0}, 0));
    FV_ASSERT_OK(fv_sink_close(s));
    fv_host_image back;
    FV_ASSERT_OK(fv_image_file_load(tmp_path("grey.PNG"), 0, &back));
    assert_int_equal(back.format, FV_PIXEL_GRAY8);
    for (int y = 0; y < H; y++)
        assert_memory_equal((unsigned char *)back.data + y * W, g + y * STRIDE, W);
    fv_host_image_free(&back);
    unlink(tmp_path("grey.PNG"));
}

static void single_jpeg(void **state) {
    (void)state;
    fv_sink *s = open_sink(tmp_path("still.jpeg"), FV_PIXEL_BGR24);
    fv_sink_info info;
    FV_ASSERT_OK(fv_sink_info_get(s, &info));
    assert_string_equal(info.kind, "image");
    assert_string_equal(info.detail, "JPEG q90");
    unsigned char rgb[W * H * 3], bgr[W * H * 3];
    for (int n = 0; n < 2; n++) {
        make_frame(rgb, n);
        for (int i = 0; i < W * H; i++)
            bgr[3 * i] = rgb[3 * i + 2], bgr[3 * i + 1] = rgb[3 * i + 1],
                    bgr[3 * i + 2] = rgb[3 * i];
        FV_ASSERT_OK(fv_sink_write(s, &(fv_image){FV_PIXEL_BGR24, W, H, 0, bgr, NULL, 0}, 0));
        /* The one file holds the latest frame (quality 90: within 24 of
         * every byte on this smooth image). */
        fv_host_image back;
        FV_ASSERT_OK(fv_image_file_load(tmp_path("still.jpeg"), FV_PIXEL_RGB24, &back));
        int worst = max_diff(back.data, rgb, sizeof rgb);
        if (worst > 24) fail_msg("frame %d: JPEG differs by %d", n, worst);
        fv_host_image_free(&back);
    }
    FV_ASSERT_OK(fv_sink_info_get(s, &info));
    assert_int_equal(info.frames, 2);
    FV_ASSERT_OK(fv_sink_close(s));
    /* Only that file: no numbered or temporary files beside it. */
    DIR *d = opendir(tmp_dir);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') files++;
    closedir(d);
    assert_int_equal(files, 1);
    unlink(tmp_path("still.jpeg"));
}

static void null_sink(void **state) {
    (void)state;
    fv_sink *s = open_sink("null://", FV_PIXEL_RGBA32);
    fv_sink_info info;
    FV_ASSERT_OK(fv_sink_info_get(s, &info));
    assert_string_equal(info.kind, "null");
    unsigned char px[W * H * 4] = {0};
    for (int i = 0; i < 5; i++)
        FV_ASSERT_OK(fv_sink_write(s, &(fv_image){FV_PIXEL_RGBA32, W, H, 0, px, NULL, 0}, i));
    FV_ASSERT_OK(fv_sink_info_get(s, &info));
    assert_int_equal(info.frames, 5);
    FV_ASSERT_STATUS(fv_sink_write(s, &(fv_image){FV_PIXEL_RGB24, W, H, 0, px, NULL, 0}, 0),
                     FV_ERR_BAD_PARAM, "but the sink takes 40x30 RGBA32");
    FV_ASSERT_OK(fv_sink_info_get(s, &info));
    assert_int_equal(info.frames, 5); /* a refused frame does not count */
    FV_ASSERT_OK(fv_sink_close(s));
    assert_int_equal(fv_sink_close(NULL), FV_OK);
}

/* Captions (fv_sink_set_text): refused, with the reason, by sinks that
 * draw none (null://, and any sink opened without text_overlay). */
static void captions(void **state) {
    (void)state;
    fv_sink *s = NULL;
    fv_sink_desc d = {
        .uri = "null://", .width = W, .height = H, .format = FV_PIXEL_RGB24, .text_overlay = 2};
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_BAD_PARAM, "text_overlay=2");
    assert_null(s);
    d.text_overlay = 1;
    FV_ASSERT_OK(fv_sink_open(&d, &s));
    fv_sink_info info;
    FV_ASSERT_OK(fv_sink_info_get(s, &info));
    assert_int_equal(info.text_overlay, 0);
    FV_ASSERT_STATUS(fv_sink_set_text(s, "Sneaker 0.91"), FV_ERR_NOT_SUPPORTED, "null:// shows");
    FV_ASSERT_STATUS(fv_sink_set_text(s, NULL), FV_ERR_BAD_PARAM, "text is NULL");
    FV_ASSERT_OK(fv_sink_close(s));
    FV_ASSERT_STATUS(fv_sink_set_text(NULL, "x"), FV_ERR_BAD_PARAM, "sink is NULL");
    s = open_sink(tmp_path("cap_%03d.png"), FV_PIXEL_RGB24);
    FV_ASSERT_STATUS(fv_sink_set_text(s, "x"), FV_ERR_NOT_SUPPORTED, "without text_overlay");
    FV_ASSERT_OK(fv_sink_close(s));
}

/* Captions on image files, which fovea draws itself (Pango and Cairo) in
 * every sink format: before any text and after "" the file holds the frame
 * as given; with a text, a shaded box at the top left (every pixel of its
 * first row darkened to about half) with white glyph pixels in it, and
 * every pixel outside the box as given; the caller's frame is left as it
 * was. Without Pango in the build the sink says it draws no captions. */
enum { CW = 160, CH = 120 }; /* font: CH / 24 = 10 pixels (the least); box from (3, 3) */
static void image_captions(void **state) {
    (void)state;
    const fv_pixel_format fmts[] = {FV_PIXEL_GRAY8, FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                    FV_PIXEL_RGBA32};
    static unsigned char px[CW * CH * 4], keep[CW * CH * 4];
    for (int k = 0; k < 4; k++) {
        const fv_pixel_format f = fmts[k];
        const int bpp = f == FV_PIXEL_GRAY8 ? 1 : f == FV_PIXEL_RGBA32 ? 4 : 3;
        const size_t bytes = (size_t)CW * CH * bpp;
        for (size_t i = 0; i < bytes; i++) /* values 100..227: darkened and lit ones show */
            px[i] = (unsigned char)(100 + (i * 37 + i / (CW * bpp) * 11) % 128);
        memcpy(keep, px, bytes);
        char uri[600];
        snprintf(uri, sizeof uri, "file://%s", tmp_path("label_%d.png"));
        fv_sink *s = NULL;
        FV_ASSERT_OK(fv_sink_open(
            &(fv_sink_desc){.uri = uri, .width = CW, .height = CH, .format = f, .text_overlay = 1},
            &s));
        fv_sink_info info;
        FV_ASSERT_OK(fv_sink_info_get(s, &info));
        fv_image img = {f, CW, CH, 0, px, NULL, 0};
#ifndef FV_TEST_PANGO
        assert_int_equal(info.text_overlay, 0);
        FV_ASSERT_STATUS(fv_sink_set_text(s, "Bag 0.97"), FV_ERR_NOT_SUPPORTED, "Pango");
        FV_ASSERT_OK(fv_sink_close(s));
        (void)img;
        continue;
#else
        assert_int_equal(info.text_overlay, 1);
        FV_ASSERT_OK(fv_sink_write(s, &img, 0));                     /* 0: no text yet */
        FV_ASSERT_OK(fv_sink_set_text(s, "Sneaker 0.91\nBag 0.05")); /* 1: two lines */
        FV_ASSERT_OK(fv_sink_write(s, &img, 0));
        assert_memory_equal(px, keep, bytes);
        FV_ASSERT_OK(fv_sink_set_text(s, "")); /* 2: none again */
        FV_ASSERT_OK(fv_sink_write(s, &img, 0));
        FV_ASSERT_OK(fv_sink_close(s));
        fv_host_image back[3];
        for (int n = 0; n < 3; n++) {
            char name[64];
            snprintf(name, sizeof name, "label_%d.png", n);
            FV_ASSERT_OK(fv_image_file_load(tmp_path(name), f, &back[n]));
            unlink(tmp_path(name));
        }
        assert_memory_equal(back[0].data, keep, bytes);
        assert_memory_equal(back[2].data, keep, bytes);
        const unsigned char *c = back[1].data;
        /* the box: from (3, 3) as far as the first row is darkened */
        int bw = 0, bh = 0, lit = 0, changed_outside = 0;
        for (int x = 3; x < CW; x++) {
            const size_t i = ((size_t)3 * CW + x) * bpp;
            int d = 1;
            for (int ch = 0; ch < (bpp == 4 ? 3 : bpp); ch++)
                d &= c[i + ch] * 255 >= keep[i + ch] * 126 && c[i + ch] * 255 <= keep[i + ch] * 129;
            if (!d) break;
            bw++;
        }
        for (int y = 3; y < CH; y++) {
            const size_t i = ((size_t)y * CW + 3) * bpp;
            if (!(c[i] * 255 >= keep[i] * 126 && c[i] * 255 <= keep[i] * 129)) break;
            bh++;
        }
        for (int y = 0; y < CH; y++)
            for (int x = 0; x < CW; x++) {
                const size_t i = ((size_t)y * CW + x) * bpp;
                const int in = x >= 3 && x < 3 + bw && y >= 3 && y < 3 + bh;
                if (!in && memcmp(c + i, keep + i, bpp)) changed_outside++;
                if (in && c[i] >= 200 && c[i] > keep[i]) lit++;        /* glyph pixels: brighter */
                if (bpp == 4) assert_int_equal(c[i + 3], keep[i + 3]); /* alpha kept */
            }
        /* two lines of 10-pixel text and the box's margins; 12 characters */
        if (bw < 40 || bh < 20 || bh > 60 || lit < 30 || changed_outside)
            fail_msg("%s: box %dx%d, %d glyph pixels, %d pixels changed outside the box",
                     fv_pixel_format_name(f), bw, bh, lit, changed_outside);
        for (int n = 0; n < 3; n++)
            fv_host_image_free(&back[n]);
#endif
    }
}

/* Odd captions: bytes that are not UTF-8 (drawn as U+FFFD), a text far
 * wider and taller than the frame (the box clipped to it), then a short one
 * (a small box: the surface is reused, nothing of the big one shows), a frame of 4 x 3
 * pixels (no room for a box: the frame as given). Nothing outside the
 * frame is written (ASan), every write succeeds. */
static void caption_odd_text(void **state) {
    (void)state;
#ifndef FV_TEST_PANGO
    skip();
#else
    static char big[20000];
    for (size_t i = 0; i + 1 < sizeof big; i++)
        big[i] = i % 100 == 99 ? '\n' : 'W';
    const int sizes[2][2] = {{CW, CH}, {4, 3}};
    static unsigned char px[CW * CH * 3];
    memset(px, 77, sizeof px);
    for (int k = 0; k < 2; k++) {
        const int w = sizes[k][0], h = sizes[k][1];
        char uri[600];
        snprintf(uri, sizeof uri, "file://%s", tmp_path("odd.png"));
        fv_sink *s = NULL;
        FV_ASSERT_OK(fv_sink_open(
            &(fv_sink_desc){
                .uri = uri, .width = w, .height = h, .format = FV_PIXEL_RGB24, .text_overlay = 1},
            &s));
        fv_image img = {FV_PIXEL_RGB24, w, h, 0, px, NULL, 0};
        FV_ASSERT_OK(fv_sink_set_text(s, "bad \xff\xfe\xc3 bytes"));
        FV_ASSERT_OK(fv_sink_write(s, &img, 0));
        FV_ASSERT_OK(fv_sink_set_text(s, big));
        FV_ASSERT_OK(fv_sink_write(s, &img, 0));
        fv_host_image back;
        FV_ASSERT_OK(fv_image_file_load(tmp_path("odd.png"), FV_PIXEL_RGB24, &back));
        const unsigned char *c = back.data;
        int changed = 0;
        for (int i = 0; i < w * h * 3; i++)
            changed += c[i] != 77;
        /* then a short text in the same (reused) caption surface: a small
         * box, nothing left of the big one */
        FV_ASSERT_OK(fv_sink_set_text(s, "x"));
        FV_ASSERT_OK(fv_sink_write(s, &img, 0));
        FV_ASSERT_OK(fv_sink_close(s));
        /* ... the same bytes as a fresh sink's "x" */
        FV_ASSERT_OK(fv_sink_open(&(fv_sink_desc){.uri = tmp_path("fresh.png"),
                                                  .width = w,
                                                  .height = h,
                                                  .format = FV_PIXEL_RGB24,
                                                  .text_overlay = 1},
                                  &s));
        FV_ASSERT_OK(fv_sink_set_text(s, "x"));
        FV_ASSERT_OK(fv_sink_write(s, &img, 0));
        FV_ASSERT_OK(fv_sink_close(s));
        fv_host_image small, fresh;
        FV_ASSERT_OK(fv_image_file_load(tmp_path("odd.png"), FV_PIXEL_RGB24, &small));
        FV_ASSERT_OK(fv_image_file_load(tmp_path("fresh.png"), FV_PIXEL_RGB24, &fresh));
        int changed_small = 0;
        for (int i = 0; i < w * h * 3; i++)
            changed_small += ((const unsigned char *)small.data)[i] != 77;
        if (memcmp(small.data, fresh.data, (size_t)w * h * 3) ||
            (k == 0 && (changed_small < 100 || changed_small > 20 * 24 * 3)))
            fail_msg("a short caption after a long one: %d values changed, %s a fresh sink's",
                     changed_small,
                     memcmp(small.data, fresh.data, (size_t)w * h * 3) ? "unlike" : "like");
        fv_host_image_free(&small);
        fv_host_image_free(&fresh);
        unlink(tmp_path("fresh.png"));
        /* the big text: a box over all but the 3-pixel margin at the top
         * left; the tiny frame: untouched */
        if (k == 0 ? changed < (w - 3) * (h - 3) * 3 / 2 : changed != 0)
            fail_msg("%dx%d: %d values changed", w, h, changed);
        if (k == 0)
            for (int x = 0; x < w; x++) /* the margin row stays */
                assert_int_equal(c[3 * x], 77);
        fv_host_image_free(&back);
        unlink(tmp_path("odd.png"));
    }
#endif
}

static void open_errors(void **state) {
    (void)state;
    fv_sink *s = (fv_sink *)0x1;
    FV_ASSERT_STATUS(fv_sink_open(NULL, &s), FV_ERR_BAD_PARAM, "desc is NULL");
    assert_null(s);
    fv_sink_desc d = {
        .uri = tmp_path("out.bmp"), .width = W, .height = H, .format = FV_PIXEL_RGB24};
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_BAD_PARAM, ".png, .jpg, .jpeg");
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_BAD_PARAM, ".mp4");
    d.uri = tmp_path("noext");
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_BAD_PARAM, "not supported");
    d.uri = "/nonexistent_fv_dir/out_%03d.png";
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_IO, "/nonexistent_fv_dir");
    d.uri = tmp_path("a_%d_%d.png");
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_BAD_PARAM, "one %d conversion");
    d.uri = "mars://x";
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_BAD_PARAM, "unknown scheme");
    d.uri = "";
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_BAD_PARAM, "uri is NULL or empty");
    d = (fv_sink_desc){.uri = "null://", .width = 0, .height = H, .format = FV_PIXEL_RGB24};
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_BAD_PARAM, "size 0x30");
    d = (fv_sink_desc){.uri = "null://", .width = W, .height = H, .format = FV_PIXEL_NV12};
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_BAD_PARAM, "NV12");
    d = (fv_sink_desc){
        .uri = "null://", .width = W, .height = H, .format = FV_PIXEL_RGB24, .reserved = {1}};
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_BAD_PARAM, "reserved[0]");
    assert_null(s);
    /* A directory that is a file. */
    const char *file = tmp_path("plain");
    FILE *fh = fopen(file, "w");
    assert_non_null(fh);
    fclose(fh);
    char uri[600];
    snprintf(uri, sizeof uri, "%s/x.png", file);
    d = (fv_sink_desc){.uri = uri, .width = W, .height = H, .format = FV_PIXEL_RGB24};
    FV_ASSERT_STATUS(fv_sink_open(&d, &s), FV_ERR_IO, "not a directory");
    unlink(file);
}

static void write_errors(void **state) {
    (void)state;
    fv_sink *s = open_sink(tmp_path("w_%02d.png"), FV_PIXEL_RGB24);
    unsigned char px[(W + 2) * (H + 2) * 4] = {0};
    FV_ASSERT_STATUS(fv_sink_write(s, &(fv_image){FV_PIXEL_RGB24, W + 2, H, 0, px, NULL, 0}, 0),
                     FV_ERR_BAD_PARAM, "frame 42x30 RGB24");
    FV_ASSERT_STATUS(fv_sink_write(s, &(fv_image){FV_PIXEL_GRAY8, W, H, 0, px, NULL, 0}, 0),
                     FV_ERR_BAD_PARAM, "GRAY8");
    FV_ASSERT_STATUS(fv_sink_write(s, &(fv_image){FV_PIXEL_RGB24, W, H, 0, NULL, NULL, 0}, 0),
                     FV_ERR_BAD_PARAM, "data is NULL");
    FV_ASSERT_STATUS(fv_sink_write(s, NULL, 0), FV_ERR_BAD_PARAM, "frame is NULL");
    fv_sink_info info;
    FV_ASSERT_OK(fv_sink_info_get(s, &info));
    assert_int_equal(info.frames, 0);
    /* The directory vanishing after open: FV_ERR_IO naming the file. */
    char sub[600];
    snprintf(sub, sizeof sub, "%s", tmp_path("sub"));
    assert_int_equal(mkdir(sub, 0700), 0);
    char pattern[700];
    snprintf(pattern, sizeof pattern, "%s/f_%%d.png", sub);
    fv_sink *gone = open_sink(pattern, FV_PIXEL_RGB24);
    assert_int_equal(rmdir(sub), 0);
    FV_ASSERT_STATUS(fv_sink_write(gone, &(fv_image){FV_PIXEL_RGB24, W, H, 0, px, NULL, 0}, 0),
                     FV_ERR_IO, "f_0.png");
    FV_ASSERT_OK(fv_sink_close(gone));
    FV_ASSERT_OK(fv_sink_close(s));
}

static int group_setup(void **state) {
    (void)state;
    return fv_test_temp_dir("fv_sink", tmp_dir, sizeof tmp_dir);
}

static int group_teardown(void **state) {
    (void)state;
    fv_test_remove_tree(tmp_dir);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(numbered_png),     cmocka_unit_test(strided_gray_png),
        cmocka_unit_test(single_jpeg),      cmocka_unit_test(null_sink),
        cmocka_unit_test(open_errors),      cmocka_unit_test(write_errors),
        cmocka_unit_test(captions),         cmocka_unit_test(image_captions),
        cmocka_unit_test(caption_odd_text),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
