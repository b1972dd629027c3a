/* Image files (platform): the bundled images with pixel values checked
 * against OpenCV 4.6 (cv2.imread + cvtColor, computed once), PNG variants
 * written here with libpng, round trips, malformed inputs, failed saves. */
#include "fv_test.h"
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <png.h>
#include <zlib.h>
#include "fovea/platform/image_io.h"

static char tmp_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp_dir, name);
    return buf[k];
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static unsigned char *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
    assert_non_null(b);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    assert_int_equal(*n, (size_t)len);
    return b;
}

/* ---- the bundled images ------------------------------------------------- */
typedef struct spot {
    int x, y;
    unsigned char rgb[3], grey;
} spot;

typedef struct bundled {
    const char *name;
    int w, h;
    spot spots[7];
} bundled;

/* Expected values from /usr/bin/python3 with cv2 4.6 (libpng, libjpeg-turbo):
 * rgb = cvtColor(imread(f), BGR2RGB); grey = cvtColor(rgb, RGB2GRAY). */
static const bundled images[] = {
    {"astronaut.png",
     512,
     512,
     {{0, 0, {154, 147, 151}, 150},
      {511, 0, {125, 119, 110}, 120},
      {0, 511, {184, 167, 172}, 173},
      {511, 511, {0, 0, 0}, 0},
      {256, 256, {19, 14, 7}, 15},
      {170, 341, {228, 113, 74}, 143},
      {123, 77, {187, 175, 164}, 177}}},
    {"chelsea.png",
     451,
     300,
     {{0, 0, {143, 120, 104}, 125},
      {450, 0, {45, 27, 13}, 31},
      {0, 299, {139, 103, 71}, 110},
      {450, 299, {162, 138, 128}, 144},
      {225, 150, {190, 150, 124}, 159},
      {150, 200, {162, 116, 83}, 126},
      {123, 77, {176, 135, 103}, 144}}},
    {"coffee.png",
     600,
     400,
     {{0, 0, {21, 13, 8}, 15},
      {599, 0, {228, 184, 140}, 192},
      {0, 399, {197, 141, 100}, 153},
      {599, 399, {143, 60, 29}, 81},
      {300, 200, {248, 250, 255}, 250},
      {200, 266, {145, 32, 8}, 63},
      {123, 77, {121, 44, 15}, 64}}},
    {"rocket.jpg",
     640,
     427,
     {{0, 0, {17, 33, 58}, 31},
      {639, 0, {7, 18, 36}, 17},
      {0, 426, {26, 27, 31}, 27},
      {639, 426, {83, 61, 37}, 65},
      {320, 213, {132, 123, 114}, 125},
      {213, 284, {73, 91, 127}, 90},
      {123, 77, {36, 52, 85}, 51}}},
};
#define NIMAGES (sizeof images / sizeof images[0])

static const unsigned char *px(const fv_host_image *im, int x, int y) {
    size_t bpp = im->stride / (size_t)im->width;
    return (const unsigned char *)im->data + im->stride * (size_t)y + bpp * (size_t)x;
}

static void load_bundled(void **state) {
    for (size_t i = 0; i < NIMAGES; i++) {
        const bundled *b = &images[i];
        fv_host_image im;
        FV_ASSERT_OK(fv_image_file_load(fv_test_data_path(b->name), 0, &im));
        assert_int_equal(im.format, FV_PIXEL_RGB24);
        assert_int_equal(im.width, b->w);
        assert_int_equal(im.height, b->h);
        assert_int_equal(im.stride, (size_t)b->w * 3);
        assert_int_equal(im.size, im.stride * (size_t)b->h);
        for (int k = 0; k < 7; k++) {
            const spot *s = &b->spots[k];
            const unsigned char *p = px(&im, s->x, s->y);
            if (memcmp(p, s->rgb, 3) != 0)
                fail_msg("%s (%d,%d): got %d %d %d, expected %d %d %d", b->name, s->x, s->y, p[0],
                         p[1], p[2], s->rgb[0], s->rgb[1], s->rgb[2]);
        }
        fv_host_image_free(&im);
        assert_null(im.data);
        fv_host_image_free(&im); /* twice is fine */
    }
    fv_host_image_free(NULL);
}

static void load_converted(void **state) {
    for (size_t i = 0; i < NIMAGES; i++) {
        const bundled *b = &images[i];
        fv_host_image g, bgr, rgba;
        FV_ASSERT_OK(fv_image_file_load(fv_test_data_path(b->name), FV_PIXEL_GRAY8, &g));
        FV_ASSERT_OK(fv_image_file_load(fv_test_data_path(b->name), FV_PIXEL_BGR24, &bgr));
        FV_ASSERT_OK(fv_image_file_load(fv_test_data_path(b->name), FV_PIXEL_RGBA32, &rgba));
        assert_int_equal(g.format, FV_PIXEL_GRAY8);
        assert_int_equal(g.stride, (size_t)b->w);
        assert_int_equal(bgr.format, FV_PIXEL_BGR24);
        assert_int_equal(rgba.format, FV_PIXEL_RGBA32);
        assert_int_equal(rgba.stride, (size_t)b->w * 4);
        for (int k = 0; k < 7; k++) {
            const spot *s = &b->spots[k];
            assert_int_equal(*px(&g, s->x, s->y), s->grey);
            const unsigned char *q = px(&bgr, s->x, s->y), *a = px(&rgba, s->x, s->y);
            assert_int_equal(q[0], s->rgb[2]);
            assert_int_equal(q[1], s->rgb[1]);
            assert_int_equal(q[2], s->rgb[0]);
            assert_memory_equal(a, s->rgb, 3);
            assert_int_equal(a[3], 255);
        }
        fv_host_image_free(&g);
        fv_host_image_free(&bgr);
        fv_host_image_free(&rgba);
    }
}

/* ---- round trips ------------------------------------------------------------ */
static void roundtrip(fv_pixel_format f, int w, int h, size_t stride) {
    size_t bpp = f == FV_PIXEL_GRAY8 ? 1 : f == FV_PIXEL_RGBA32 ? 4 : 3;
    if (stride == 0) stride = (size_t)w * bpp;
    unsigned char *pix = malloc(stride * (size_t)h);
    assert_non_null(pix);
    fv_test_fill_bytes(pix, stride * (size_t)h);
    fv_image img = {.format = f, .width = w, .height = h, .stride = stride, .data = pix};
    const char *path = tmp_path("roundtrip.png");
    FV_ASSERT_OK(fv_image_file_save(path, &img, NULL));
    fv_host_image back;
    FV_ASSERT_OK(fv_image_file_load(path, f, &back));
    assert_int_equal(back.width, w);
    assert_int_equal(back.height, h);
    for (int y = 0; y < h; y++)
        assert_memory_equal(px(&back, 0, y), pix + stride * (size_t)y, (size_t)w * bpp);
    fv_host_image_free(&back);
    free(pix);
}

static void png_roundtrip(void **state) {
    fv_test_seed(1);
    roundtrip(FV_PIXEL_RGB24, 37, 23, 0);
    roundtrip(FV_PIXEL_RGB24, 37, 23, 37 * 3 + 13); /* padded rows */
    roundtrip(FV_PIXEL_BGR24, 16, 9, 0);
    roundtrip(FV_PIXEL_GRAY8, 1, 1, 0);
    roundtrip(FV_PIXEL_GRAY8, 101, 7, 128);
    roundtrip(FV_PIXEL_RGBA32, 20, 30, 0);

    /* a real photograph, bit exact */
    fv_host_image a, b;
    FV_ASSERT_OK(fv_image_file_load(fv_test_data_path("coffee.png"), 0, &a));
    fv_image v = fv_host_image_view(&a);
    FV_ASSERT_OK(fv_image_file_save(tmp_path("coffee.PNG"), &v, NULL));
    FV_ASSERT_OK(fv_image_file_load(tmp_path("coffee.PNG"), 0, &b));
    assert_int_equal(a.size, b.size);
    assert_memory_equal(a.data, b.data, a.size);
    fv_host_image_free(&a);
    fv_host_image_free(&b);
}

static void jpeg_save(void **state) {
    fv_host_image a, b;
    FV_ASSERT_OK(fv_image_file_load(fv_test_data_path("chelsea.png"), FV_PIXEL_RGB24, &a));
    fv_image_save_desc d = {.jpeg_quality = 95};
    fv_image v = fv_host_image_view(&a);
    const char *path = tmp_path("chelsea.jpeg");
    FV_ASSERT_OK(fv_image_file_save(path, &v, &d));
    FV_ASSERT_OK(fv_image_file_load(path, 0, &b));
    assert_int_equal(b.format, FV_PIXEL_RGB24);
    assert_int_equal(b.width, a.width);
    assert_int_equal(b.height, a.height);
    double sum = 0;
    const unsigned char *p = a.data, *q = b.data;
    for (size_t i = 0; i < a.size; i++)
        sum += abs((int)p[i] - (int)q[i]);
    double mean = sum / (double)a.size;
    if (mean > 3.0) fail_msg("JPEG q95 mean abs error %.2f > 3", mean);
    fv_host_image_free(&b);

    /* grey JPEG stays grey */
    fv_host_image g;
    FV_ASSERT_OK(fv_image_file_load(fv_test_data_path("chelsea.png"), FV_PIXEL_GRAY8, &g));
    v = fv_host_image_view(&g);
    FV_ASSERT_OK(fv_image_file_save(tmp_path("grey.jpg"), &v, NULL));
    FV_ASSERT_OK(fv_image_file_load(tmp_path("grey.jpg"), 0, &b));
    assert_int_equal(b.format, FV_PIXEL_GRAY8);
    fv_host_image_free(&b);
    fv_host_image_free(&g);

    /* BGR24 and RGBA32 sources give the same JPEG as RGB24 */
    fv_pixel_format fmts[2] = {FV_PIXEL_BGR24, FV_PIXEL_RGBA32};
    fv_host_image ref;
    FV_ASSERT_OK(fv_image_file_load(path, 0, &ref));
    for (int i = 0; i < 2; i++) {
        fv_host_image src, back;
        FV_ASSERT_OK(fv_image_file_load(fv_test_data_path("chelsea.png"), fmts[i], &src));
        v = fv_host_image_view(&src);
        FV_ASSERT_OK(fv_image_file_save(tmp_path("fmt.jpg"), &v, &d));
        FV_ASSERT_OK(fv_image_file_load(tmp_path("fmt.jpg"), 0, &back));
        assert_int_equal(back.size, ref.size);
        assert_memory_equal(back.data, ref.data, ref.size);
        fv_host_image_free(&back);
        fv_host_image_free(&src);
    }
    fv_host_image_free(&ref);
    fv_host_image_free(&a);
}

/* ---- PNG variants, written with libpng here ------------------------------ */
static void write_png(const char *path, int w, int h, int depth, int type, const png_color *pal,
                      int npal, const png_byte *trns, int ntrns, const unsigned char *rows,
                      size_t stride) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    assert_non_null(info);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng failed writing %s", path);
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (pal) png_set_PLTE(png, info, pal, npal);
    if (trns) png_set_tRNS(png, info, trns, ntrns, NULL);
    png_write_info(png, info);
    for (int y = 0; y < h; y++)
        png_write_row(png, rows + stride * (size_t)y);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

static void write_png_interlaced(const char *path, int w, int h, unsigned char *rgb) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_bytep rows[64];
    assert_true(h <= 64);
    for (int y = 0; y < h; y++)
        rows[y] = rgb + (size_t)y * w * 3;
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng failed writing %s", path);
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_ADAM7, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

static void png_variants(void **state) {
    fv_host_image im;
    /* interlaced (Adam7) */
    unsigned char il[13 * 7 * 3];
    fv_test_seed(11);
    fv_test_fill_bytes(il, sizeof il);
    write_png_interlaced(tmp_path("adam7.png"), 13, 7, il);
    FV_ASSERT_OK(fv_image_file_load(tmp_path("adam7.png"), 0, &im));
    assert_int_equal(im.format, FV_PIXEL_RGB24);
    assert_memory_equal(im.data, il, sizeof il);
    fv_host_image_free(&im);

    /* 16-bit RGB, big-endian samples: scaled to 8 bits, rounded (v * 255 / 65535) */
    unsigned char rgb16[2 * 6] = {0x12, 0x34, 0xff, 0xff, 0x00, 0x00,
                                  0x80, 0x00, 0x7f, 0xff, 0x00, 0x7f};
    write_png(tmp_path("rgb16.png"), 2, 1, 16, PNG_COLOR_TYPE_RGB, NULL, 0, NULL, 0, rgb16, 12);
    FV_ASSERT_OK(fv_image_file_load(tmp_path("rgb16.png"), 0, &im));
    assert_int_equal(im.format, FV_PIXEL_RGB24);
    const unsigned char want16[6] = {0x12, 0xff, 0x00, 0x80, 0x7f, 0x00};
    assert_memory_equal(im.data, want16, 6);
    fv_host_image_free(&im);

    /* palette with tRNS: RGB drops it, RGBA32 turns it into alpha */
    png_color pal[3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
    png_byte trns[2] = {0, 128};
    unsigned char idx[3] = {0, 1, 2};
    write_png(tmp_path("pal.png"), 3, 1, 8, PNG_COLOR_TYPE_PALETTE, pal, 3, trns, 2, idx, 3);
    FV_ASSERT_OK(fv_image_file_load(tmp_path("pal.png"), 0, &im));
    assert_int_equal(im.format, FV_PIXEL_RGB24);
    const unsigned char pal_rgb[9] = {255, 0, 0, 0, 255, 0, 0, 0, 255};
    assert_memory_equal(im.data, pal_rgb, 9);
    fv_host_image_free(&im);
    FV_ASSERT_OK(fv_image_file_load(tmp_path("pal.png"), FV_PIXEL_RGBA32, &im));
    const unsigned char pal_rgba[12] = {255, 0, 0, 0, 0, 255, 0, 128, 0, 0, 255, 255};
    assert_memory_equal(im.data, pal_rgba, 12);
    fv_host_image_free(&im);

    /* RGB with a tRNS colour key, and 2-bit grey with one */
    png_color_16 key = {.red = 1, .green = 2, .blue = 3};
    unsigned char rgbk[6] = {1, 2, 3, 4, 5, 6};
    FILE *kf = fopen(tmp_path("key.png"), "wb");
    assert_non_null(kf);
    png_structp kp = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop ki = png_create_info_struct(kp);
    if (setjmp(png_jmpbuf(kp))) fail_msg("libpng failed writing key.png");
    png_init_io(kp, kf);
    png_set_IHDR(kp, ki, 2, 1, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_tRNS(kp, ki, NULL, 0, &key);
    png_write_info(kp, ki);
    png_write_row(kp, rgbk);
    png_write_end(kp, NULL);
    png_destroy_write_struct(&kp, &ki);
    fclose(kf);
    FV_ASSERT_OK(fv_image_file_load(tmp_path("key.png"), 0, &im));
    assert_int_equal(im.format, FV_PIXEL_RGB24);
    assert_memory_equal(im.data, rgbk, 6);
    fv_host_image_free(&im);
    FV_ASSERT_OK(fv_image_file_load(tmp_path("key.png"), FV_PIXEL_RGBA32, &im));
    const unsigned char key_rgba[8] = {1, 2, 3, 0, 4, 5, 6, 255};
    assert_memory_equal(im.data, key_rgba, 8);
    fv_host_image_free(&im);

    /* grey + alpha: natural is GRAY8; RGBA32 keeps the alpha */
    unsigned char ga[4] = {10, 20, 200, 255};
    write_png(tmp_path("ga.png"), 2, 1, 8, PNG_COLOR_TYPE_GRAY_ALPHA, NULL, 0, NULL, 0, ga, 4);
    FV_ASSERT_OK(fv_image_file_load(tmp_path("ga.png"), 0, &im));
    assert_int_equal(im.format, FV_PIXEL_GRAY8);
    const unsigned char ga_g[2] = {10, 200};
    assert_memory_equal(im.data, ga_g, 2);
    fv_host_image_free(&im);
    FV_ASSERT_OK(fv_image_file_load(tmp_path("ga.png"), FV_PIXEL_RGBA32, &im));
    const unsigned char ga_rgba[8] = {10, 10, 10, 20, 200, 200, 200, 255};
    assert_memory_equal(im.data, ga_rgba, 8);
    fv_host_image_free(&im);

    /* 2-bit grey: 0..3 expanded to 0, 85, 170, 255 */
    unsigned char g2[1] = {0x1b}; /* 00 01 10 11 */
    write_png(tmp_path("g2.png"), 4, 1, 2, PNG_COLOR_TYPE_GRAY, NULL, 0, NULL, 0, g2, 1);
    FV_ASSERT_OK(fv_image_file_load(tmp_path("g2.png"), FV_PIXEL_RGB24, &im));
    const unsigned char g2_rgb[12] = {0, 0, 0, 85, 85, 85, 170, 170, 170, 255, 255, 255};
    assert_memory_equal(im.data, g2_rgb, 12);
    fv_host_image_free(&im);

    /* absurd width: refused */
    unsigned char *wide = calloc(40000, 1);
    assert_non_null(wide);
    write_png(tmp_path("wide.png"), 40000, 1, 8, PNG_COLOR_TYPE_GRAY, NULL, 0, NULL, 0, wide,
              40000);
    free(wide);
    FV_ASSERT_STATUS(fv_image_file_load(tmp_path("wide.png"), 0, &im), FV_ERR_FORMAT, "32768");
    assert_null(im.data);
}

/* ---- malformed inputs --------------------------------------------------- */
static uint32_t crc32_of(const unsigned char *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static size_t find_idat(const unsigned char *p, size_t n, size_t *len) {
    for (size_t off = 8; off + 12 <= n;) {
        uint32_t l = (uint32_t)p[off] << 24 | p[off + 1] << 16 | p[off + 2] << 8 | p[off + 3];
        if (memcmp(p + off + 4, "IDAT", 4) == 0) {
            *len = l;
            return off;
        }
        off += 12 + l;
    }
    fail_msg("no IDAT chunk");
    return 0;
}

static void expect_load_error(const char *path, fv_status want) {
    fv_host_image im;
    memset(&im, 0xab, sizeof im);
    FV_ASSERT_STATUS(fv_image_file_load(path, 0, &im), want, path);
    assert_null(im.data);
    assert_int_equal(im.width, 0);
}

static void malformed(void **state) {
    size_t n;
    unsigned char *png = read_bytes(fv_test_data_path("astronaut.png"), &n);
    const char *p;

    write_bytes(p = tmp_path("empty.png"), "", 0);
    expect_load_error(p, FV_ERR_FORMAT);
    write_bytes(p = tmp_path("trunc100.png"), png, 100);
    expect_load_error(p, FV_ERR_FORMAT);
    write_bytes(p = tmp_path("trunc_half.png"), png, n / 2);
    expect_load_error(p, FV_ERR_FORMAT);
    /* a damaged signature is named as one, with the byte that is wrong */
    png[7] = 0x0b;
    write_bytes(p = tmp_path("signature.png"), png, n);
    FV_ASSERT_STATUS(fv_image_file_load(p, 0, &(fv_host_image){0}), FV_ERR_FORMAT,
                     "corrupt PNG signature: byte 8 is 0x0b, not 0x0a");
    png[7] = 0x0a;

    /* corrupted IDAT data: caught by the chunk CRC ... */
    size_t len = 0, off = find_idat(png, n, &len);
    unsigned char *bad = malloc(n);
    assert_non_null(bad);
    memcpy(bad, png, n);
    for (size_t i = 100; i < 200 && i < len; i++)
        bad[off + 8 + i] ^= 0x5a;
    write_bytes(p = tmp_path("idat_crc.png"), bad, n);
    expect_load_error(p, FV_ERR_FORMAT);
    /* ... and with the CRC fixed up, by zlib */
    uint32_t crc = crc32_of(bad + off + 4, len + 4);
    unsigned char *c = bad + off + 8 + len;
    c[0] = (unsigned char)(crc >> 24), c[1] = (unsigned char)(crc >> 16);
    c[2] = (unsigned char)(crc >> 8), c[3] = (unsigned char)crc;
    write_bytes(p = tmp_path("idat_zlib.png"), bad, n);
    expect_load_error(p, FV_ERR_FORMAT);
    free(bad);
    free(png);

    unsigned char junk[4096];
    fv_test_seed(7);
    fv_test_fill_bytes(junk, sizeof junk);
    write_bytes(p = tmp_path("junk.png"), junk, sizeof junk);
    expect_load_error(p, FV_ERR_FORMAT);
    const char *text = "this is not an image\n";
    write_bytes(p = tmp_path("notes.txt"), text, strlen(text));
    expect_load_error(p, FV_ERR_FORMAT);

    unsigned char *jpg = read_bytes(fv_test_data_path("rocket.jpg"), &n);
    write_bytes(p = tmp_path("trunc.jpg"), jpg, n / 2);
    expect_load_error(p, FV_ERR_FORMAT);
    write_bytes(p = tmp_path("trunc_header.jpg"), jpg, 200);
    expect_load_error(p, FV_ERR_FORMAT);
    free(jpg);

    expect_load_error(p = tmp_path("no-such-file.png"), FV_ERR_IO);
    FV_ASSERT_STATUS(fv_image_file_load(p, 0, &(fv_host_image){0}), FV_ERR_IO,
                     "No such file or directory");
    expect_load_error(tmp_dir, FV_ERR_IO); /* a directory */
    /* a FIFO without a writer is refused at once, never waited on */
    p = tmp_path("fifo.png");
    assert_int_equal(mkfifo(p, 0600), 0);
    FV_ASSERT_STATUS(fv_image_file_load(p, 0, &(fv_host_image){0}), FV_ERR_IO, "FIFO");
    remove(p);
    FV_ASSERT_STATUS(fv_image_file_load("/dev/zero", 0, &(fv_host_image){0}), FV_ERR_IO,
                     "character device");
}

/* ---- sizes claimed by headers ------------------------------------------- */
static long peak_rss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A load expected to be refused from the header alone: the status, the
 * message, out zeroed, quickly, and no new peak in the process's memory
 * (decoding would take hundreds of MB). */
static void expect_refused(const char *path, const fv_image_load_desc *d, const char *needle) {
    long rss0 = peak_rss_kb();
    double t0 = now_s();
    fv_host_image im;
    memset(&im, 0xab, sizeof im);
    FV_ASSERT_STATUS(fv_image_file_load_with(path, FV_PIXEL_RGBA32, d, &im), FV_ERR_FORMAT, needle);
    double secs = now_s() - t0;
    long grew = peak_rss_kb() - rss0;
    assert_null(im.data);
    assert_int_equal(im.width, 0);
    if (secs > 0.5) fail_msg("%s: refused after %.2f s, not at once", path, secs);
    if (grew > 16 * 1024) fail_msg("%s: peak memory grew by %ld KB", path, grew);
    assert_non_null(strstr(fv_last_error(), path));
}

static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

/* Appends a chunk (length, type, data, CRC) at b + *n. */
static void put_chunk(unsigned char *b, size_t *n, const char *type, const void *data,
                      uint32_t len) {
    put_be32(b + *n, len);
    memcpy(b + *n + 4, type, 4);
    if (len) memcpy(b + *n + 8, data, len);
    put_be32(b + *n + 8 + len, crc32_of(b + *n + 4, len + 4));
    *n += 12 + len;
}

/* A well-formed PNG header (signature, IHDR with a valid CRC) claiming
 * w x h RGB8, then an IDAT with one zlib-compressed row of zeros and IEND:
 * far too little data for the size claimed. */
static size_t small_png_claiming(unsigned char *b, uint32_t w, uint32_t h) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    /* zlib stream of a few zero bytes: 78 9c, a fixed-Huffman block, adler32 */
    static const unsigned char idat[] = {0x78, 0x9c, 0x63, 0x60, 0x60, 0x60,
                                         0x00, 0x00, 0x00, 0x04, 0x00, 0x01};
    unsigned char ihdr[13] = {0};
    put_be32(ihdr, w);
    put_be32(ihdr + 4, h);
    ihdr[8] = 8; /* depth */
    ihdr[9] = 2; /* RGB */
    size_t n = 8;
    memcpy(b, sig, 8);
    put_chunk(b, &n, "IHDR", ihdr, sizeof ihdr);
    put_chunk(b, &n, "IDAT", idat, sizeof idat);
    put_chunk(b, &n, "IEND", NULL, 0);
    return n;
}

/* The fuzzer's find (tests/fuzz/corpus/fuzz_image): 267 bytes of
 * arithmetic-coded JPEG claiming 24592x18688 (460 Mpixels). libjpeg
 * decodes it in full (missing arithmetic-coded data is zeros), 1.7 s and
 * 450 MB; the loader refuses it from the header, by default and with a
 * lower limit. */
static void huge_jpeg_refused(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/fuzz/corpus/fuzz_image/oom-jpeg-claims-huge-size.jpg",
             FV_TEST_SOURCE_DIR);
    expect_refused(path, NULL,
                   "JPEG claims 24592x18688 = 459575296 pixels, over the limit of 268435456 "
                   "(fv_image_load_desc.max_pixels)");
    fv_image_load_desc d = {.max_pixels = 1u << 22};
    expect_refused(path, &d, "over the limit of 4194304");
    FV_ASSERT_STATUS(fv_image_file_load(path, 0, &(fv_host_image){0}), FV_ERR_FORMAT,
                     "24592x18688");
}

/* A 100-byte PNG with a valid IHDR claiming 20000x20000: refused from the
 * header by default; at the per-side limit (FV_IMAGE_MAX_DIM) too. */
static void huge_png_refused(void **state) {
    (void)state;
    unsigned char b[128];
    const char *p = tmp_path("huge.png");
    write_bytes(p, b, small_png_claiming(b, 20000, 20000));
    expect_refused(p, NULL,
                   "PNG claims 20000x20000 = 400000000 pixels, over the limit of 268435456");
    write_bytes(p, b, small_png_claiming(b, 32769, 1));
    expect_refused(p, NULL, "PNG claims 32769x1, larger than the 32768x32768 limit");
    fv_image_load_desc big = {.max_pixels = (uint64_t)1 << 40};
    write_bytes(p, b, small_png_claiming(b, 40000, 40000));
    expect_refused(p, &big, "larger than the 32768x32768 limit");
}

/* A 1 MB PNG with 100 zTXt chunks that each inflate to 7.9 MB (under
 * libpng's 8 MB chunk limit): libpng would inflate and keep them all
 * (13 s, 940 MB); the loader has it skip text chunks unread. */
static void png_text_bomb_skipped(void **state) {
    (void)state;
    size_t n, zn = compressBound(7900000);
    unsigned char *png = read_bytes(fv_test_data_path("chelsea.png"), &n);
    unsigned char *text = malloc(7900000), *body = malloc(9 + zn);
    assert_non_null(text);
    assert_non_null(body);
    memset(text, 'a', 7900000);
    memcpy(body, "Comment\0\0", 9); /* keyword, NUL, compression method 0 */
    uLongf zlen = (uLongf)zn;
    assert_int_equal(compress2(body + 9, &zlen, text, 7900000, 9), Z_OK);
    free(text);
    unsigned char *chunk = malloc(12 + 9 + zlen);
    assert_non_null(chunk);
    size_t cn = 0;
    put_chunk(chunk, &cn, "zTXt", body, (uint32_t)(9 + zlen));
    free(body);
    const char *p = tmp_path("bomb.png");
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(png, 1, 33, f), 33); /* signature and IHDR */
    for (int i = 0; i < 100; i++)
        assert_int_equal(fwrite(chunk, 1, cn, f), cn);
    assert_int_equal(fwrite(png + 33, 1, n - 33, f), n - 33);
    assert_int_equal(fclose(f), 0);
    free(chunk);
    free(png);
    long rss0 = peak_rss_kb();
    double t0 = now_s();
    fv_host_image im = {0};
    FV_ASSERT_OK(fv_image_file_load(p, 0, &im));
    double secs = now_s() - t0;
    assert_int_equal(im.width, 451);
    fv_host_image_free(&im);
    if (secs > 2.0) fail_msg("%.2f s to load: the text chunks were inflated", secs);
    long grew = peak_rss_kb() - rss0;
    if (grew > 64 * 1024) fail_msg("peak memory grew by %ld KB: the text chunks were kept", grew);
}

/* Headers within the limit but data far too short: refused as truncated as
 * soon as the data runs out (the pixel buffer is allocated, not filled). A
 * uniform image compresses to almost nothing (arithmetic coding: to a few
 * bytes), so the size of the data is no test of the size claimed. */
static void truncated_claims_fail_fast(void **state) {
    (void)state;
    unsigned char b[128];
    const char *p = tmp_path("tall.png");
    write_bytes(p, b, small_png_claiming(b, 16384, 16384));
    double t0 = now_s();
    FV_ASSERT_STATUS(fv_image_file_load(p, 0, &(fv_host_image){0}), FV_ERR_FORMAT, "malformed PNG");
    size_t n;
    unsigned char *jpg = read_bytes(fv_test_data_path("rocket.jpg"), &n);
    size_t i = 2; /* the SOF0 segment: its height and width claim 16000x16000 */
    while (i + 9 < n && !(jpg[i] == 0xff && jpg[i + 1] == 0xc0))
        i += 2 + ((size_t)jpg[i + 2] << 8 | jpg[i + 3]);
    assert_true(i + 9 < n);
    jpg[i + 5] = 16000 >> 8, jpg[i + 6] = 16000 & 0xff;
    jpg[i + 7] = 16000 >> 8, jpg[i + 8] = 16000 & 0xff;
    write_bytes(p = tmp_path("tall.jpg"), jpg, n);
    free(jpg);
    FV_ASSERT_STATUS(fv_image_file_load(p, 0, &(fv_host_image){0}), FV_ERR_FORMAT,
                     "malformed JPEG");
    double secs = now_s() - t0;
    if (secs > 2.0) fail_msg("two truncated files took %.2f s to refuse", secs);
}

/* fv_image_load_desc.max_pixels: exactly the limit loads, one pixel less
 * refuses, in both decoders; reserved fields must be zero. */
static void load_limits(void **state) {
    (void)state;
    const char *jpg = fv_test_data_path("rocket.jpg"); /* 640x427 */
    fv_host_image im = {0};
    fv_image_load_desc d = {.max_pixels = 640 * 427};
    FV_ASSERT_OK(fv_image_file_load_with(jpg, 0, &d, &im));
    assert_int_equal(im.width, 640);
    fv_host_image_free(&im);
    d.max_pixels--;
    FV_ASSERT_STATUS(fv_image_file_load_with(jpg, 0, &d, &im), FV_ERR_FORMAT,
                     "JPEG claims 640x427 = 273280 pixels, over the limit of 273279");
    assert_null(im.data);

    const char *png = fv_test_data_path("chelsea.png"); /* 451x300 */
    d.max_pixels = 451 * 300;
    FV_ASSERT_OK(fv_image_file_load_with(png, FV_PIXEL_RGBA32, &d, &im));
    assert_int_equal(im.height, 300);
    fv_host_image_free(&im);
    d.max_pixels--;
    FV_ASSERT_STATUS(fv_image_file_load_with(png, 0, &d, &im), FV_ERR_FORMAT,
                     "PNG claims 451x300 = 135300 pixels, over the limit of 135299");
    FV_ASSERT_OK(fv_image_file_load_with(png, 0, NULL, &im)); /* NULL: the defaults */
    fv_host_image_free(&im);
    fv_image_load_desc r = {.reserved[5] = 1};
    FV_ASSERT_STATUS(fv_image_file_load_with(png, 0, &r, &im), FV_ERR_BAD_PARAM, "reserved[5]");
    FV_ASSERT_STATUS(fv_image_file_load_with(NULL, 0, &d, &im), FV_ERR_BAD_PARAM, "path");
}

/* A JPEG with stray bytes before a marker decodes (as libjpeg does) and
 * fv_image_file_load_warning says what was read past; a clean file and a
 * failed load leave it empty. */
static void jpeg_damage_warned(void **state) {
    (void)state;
    fv_host_image img = {0};
    FV_ASSERT_OK(fv_image_file_load(fv_test_data_path("rocket.jpg"), 0, &img));
    assert_string_equal(fv_image_file_load_warning(), "");
    fv_host_image_free(&img);
    FILE *in = fopen(fv_test_data_path("rocket.jpg"), "rb");
    assert_non_null(in);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 3, in);
    fclose(in);
    size_t at = 4 + ((size_t)buf[4] << 8 | buf[5]); /* after the first segment */
    assert_true(at + 2 < n && buf[at] == 0xff);
    memmove(buf + at + 3, buf + at, n - at);
    buf[at] = 0x11, buf[at + 1] = 0x22, buf[at + 2] = 0x33;
    const char *path = tmp_path("stray.jpg");
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(buf, 1, n + 3, out), n + 3);
    fclose(out);
    FV_ASSERT_OK(fv_image_file_load(path, 0, &img));
    assert_non_null(strstr(fv_image_file_load_warning(), "extraneous"));
    fv_host_image_free(&img);
    assert_int_not_equal(fv_image_file_load("/nonexistent.jpg", 0, &img), FV_OK);
    assert_string_equal(fv_image_file_load_warning(), "");
    unlink(path);
}

static void bad_params(void **state) {
    fv_host_image im;
    const char *ok = fv_test_data_path("astronaut.png");
    FV_ASSERT_STATUS(fv_image_file_load(NULL, 0, &im), FV_ERR_BAD_PARAM, "path");
    FV_ASSERT_STATUS(fv_image_file_load(ok, 0, NULL), FV_ERR_BAD_PARAM, "out");
    FV_ASSERT_STATUS(fv_image_file_load(ok, FV_PIXEL_NV12, &im), FV_ERR_BAD_PARAM, "NV12");

    unsigned char pix[12] = {0};
    fv_image img = {.format = FV_PIXEL_RGB24, .width = 2, .height = 2, .data = pix};
    FV_ASSERT_STATUS(fv_image_file_save(tmp_path("x.bmp"), &img, NULL), FV_ERR_NOT_SUPPORTED,
                     "extension");
    FV_ASSERT_STATUS(fv_image_file_save(tmp_path("noext"), &img, NULL), FV_ERR_NOT_SUPPORTED,
                     "extension");
    FV_ASSERT_STATUS(fv_image_file_save(NULL, &img, NULL), FV_ERR_BAD_PARAM, "path");
    FV_ASSERT_STATUS(fv_image_file_save(tmp_path("x.png"), NULL, NULL), FV_ERR_BAD_PARAM, "img");
    fv_image nv12 = {.format = FV_PIXEL_NV12, .width = 2, .height = 2, .data = pix};
    FV_ASSERT_STATUS(fv_image_file_save(tmp_path("x.png"), &nv12, NULL), FV_ERR_NOT_SUPPORTED,
                     "NV12");
    fv_image narrow = img;
    narrow.stride = 5;
    FV_ASSERT_STATUS(fv_image_file_save(tmp_path("x.png"), &narrow, NULL), FV_ERR_BAD_PARAM,
                     "stride");
    fv_image_save_desc d = {.jpeg_quality = 101};
    FV_ASSERT_STATUS(fv_image_file_save(tmp_path("x.jpg"), &img, &d), FV_ERR_BAD_PARAM,
                     "jpeg_quality");
    assert_int_equal(access(tmp_path("x.png"), F_OK), -1);
}

/* ---- failed saves leave the target as it was ------------------------------ */
static size_t count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void failed_save(void **state) {
    static const char old[] = "the old file";
    unsigned char *pix = malloc(256 * 256 * 3);
    assert_non_null(pix);
    fv_test_seed(3);
    fv_test_fill_bytes(pix, 256 * 256 * 3); /* noise: the PNG is ~200 KB */
    fv_image img = {.format = FV_PIXEL_RGB24, .width = 256, .height = 256, .data = pix};

    /* A directory we cannot write to (root writes anywhere, but not into
     * procfs). */
    char ro_dir[600], target[700];
    snprintf(ro_dir, sizeof ro_dir, "%s/readonly", tmp_dir);
    assert_int_equal(mkdir(ro_dir, 0755), 0);
    snprintf(target, sizeof target, "%s/out.png", ro_dir);
    write_bytes(target, old, sizeof old);
    assert_int_equal(chmod(ro_dir, 0555), 0);
    if (geteuid() != 0) {
        FV_ASSERT_STATUS(fv_image_file_save(target, &img, NULL), FV_ERR_IO, target);
        assert_non_null(strstr(fv_last_error(), "Permission denied"));
    } else {
        FV_ASSERT_STATUS(fv_image_file_save("/proc/fovea-test.png", &img, NULL), FV_ERR_IO,
                         "/proc/fovea-test.png");
    }
    assert_int_equal(count_entries(ro_dir), 1);
    size_t n;
    unsigned char *now = read_bytes(target, &n);
    assert_int_equal(n, sizeof old);
    assert_memory_equal(now, old, sizeof old);
    free(now);
    assert_int_equal(chmod(ro_dir, 0755), 0);

    /* A write that fails half way (file size limit, works for root too):
     * the old file is untouched and no temporary file is left behind. */
    struct rlimit saved, small;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    small = saved;
    small.rlim_cur = 20000;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    fv_status s = fv_image_file_save(target, &img, NULL);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", fv_last_error());
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, old_handler);
    if (s != FV_ERR_IO) fail_msg("got %s (%s), expected FV_ERR_IO", fv_status_name(s), msg);
    if (!strstr(msg, target)) fail_msg("message \"%s\" lacks the path", msg);
    assert_int_equal(count_entries(ro_dir), 1);
    now = read_bytes(target, &n);
    assert_int_equal(n, sizeof old);
    assert_memory_equal(now, old, sizeof old);
    free(now);

    /* a missing directory */
    FV_ASSERT_STATUS(fv_image_file_save(tmp_path("no/such/dir/x.png"), &img, NULL), FV_ERR_IO,
                     "no/such/dir/x.png");

    /* and a save that works replaces the old file */
    FV_ASSERT_OK(fv_image_file_save(target, &img, NULL));
    fv_host_image back;
    FV_ASSERT_OK(fv_image_file_load(target, 0, &back));
    assert_memory_equal(back.data, pix, sizeof(unsigned char) * 256 * 256 * 3);
    fv_host_image_free(&back);
    assert_int_equal(count_entries(ro_dir), 1);
    free(pix);
}

/* Entries of dir whose name contains ".tmp-". */
static size_t count_temporaries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return n;
}

/* A temporary left by a process that no longer exists goes at the next save
 * into its directory; those of live processes, and other files, stay. */
static void stale_temporaries_removed(void **state) {
    char dir[600], stale[700], live[700], other[700], out[700];
    snprintf(dir, sizeof dir, "%s/stale", tmp_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0) _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    snprintf(stale, sizeof stale, "%s/.out.png.tmp-%ld-0", dir, (long)dead);
    snprintf(live, sizeof live, "%s/.out.png.tmp-%ld-0", dir, (long)getppid());
    snprintf(other, sizeof other, "%s/.notes.tmp-%ld-x", dir, (long)dead);
    write_bytes(stale, "x", 1);
    write_bytes(live, "x", 1);
    write_bytes(other, "x", 1);
    unsigned char pix[4 * 4 * 3] = {0};
    fv_image img = {.format = FV_PIXEL_RGB24, .width = 4, .height = 4, .data = pix};
    snprintf(out, sizeof out, "%s/out.png", dir);
    FV_ASSERT_OK(fv_image_file_save(out, &img, NULL));
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(access(live, F_OK), 0);
    assert_int_equal(access(other, F_OK), 0);
}

static void on_term(int sig) {
    (void)sig;
    fv_file_temporaries_remove();
    _exit(3);
}

/* A program whose handler calls fv_file_temporaries_remove leaves no
 * temporary when a signal ends it in the middle of a save. */
static void temporaries_removed_on_signal(void **state) {
    char dir[600], out[700];
    snprintf(dir, sizeof dir, "%s/signal", tmp_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(out, sizeof out, "%s/big.png", dir);
    const int w = 1024, h = 1024;
    unsigned char *pix = malloc((size_t)w * h * 3);
    assert_non_null(pix);
    fv_test_seed(5);
    fv_test_fill_bytes(pix, (size_t)w * h * 3); /* noise: slow to compress */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        signal(SIGTERM, on_term);
        fv_image img = {.format = FV_PIXEL_RGB24, .width = w, .height = h, .data = pix};
        for (;;)
            (void)fv_image_file_save(out, &img, NULL);
    }
    int seen = 0;
    for (int i = 0; i < 2500 && !seen; i++) { /* up to 5 s for a save in progress */
        seen = count_temporaries(dir) > 0;
        if (!seen) usleep(2000);
    }
    kill(child, SIGTERM);
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    free(pix);
    assert_true(seen);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 3);
    assert_int_equal(count_temporaries(dir), 0);
}

/* ---- set-up ------------------------------------------------------------- */
static int group_setup(void **state) {
    (void)state;
    return fv_test_temp_dir("fv_image_io", tmp_dir, sizeof tmp_dir);
}

static int group_teardown(void **state) {
    (void)state;
    fv_test_remove_tree(tmp_dir);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(load_bundled),
        cmocka_unit_test(load_converted),
        cmocka_unit_test(png_roundtrip),
        cmocka_unit_test(jpeg_save),
        cmocka_unit_test(png_variants),
        cmocka_unit_test(malformed),
        cmocka_unit_test(bad_params),
        cmocka_unit_test(jpeg_damage_warned),
        cmocka_unit_test(huge_jpeg_refused),
        cmocka_unit_test(huge_png_refused),
        cmocka_unit_test(png_text_bomb_skipped),
        cmocka_unit_test(truncated_claims_fail_fast),
        cmocka_unit_test(load_limits),
        cmocka_unit_test(failed_save),
        cmocka_unit_test(stale_temporaries_removed),
        cmocka_unit_test(temporaries_removed_on_signal),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
