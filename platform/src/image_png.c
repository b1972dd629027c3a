/* PNG through libpng. libpng reports errors by calling our handler, which
 * keeps the message and longjmps back; warnings are dropped (libpng would
 * print them to stderr). All state that changes after setjmp lives in a job
 * struct owned by the caller of the function that calls setjmp, so nothing
 * is left indeterminate by the longjmp. */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include "platform_internal.h"

typedef struct png_job {
    const char *path;
    png_structp png;
    png_infop info;
    char msg[256]; /* what libpng (or our I/O callback) said */
    int io_errno;  /* nonzero: a write failed with this errno */
    /* decoding */
    const unsigned char *buf;
    size_t size, pos;
    int rgba;
    uint64_t max_pixels;
    int too_large; /* the header's size refused (the error is recorded) */
    png_uint_32 width, height;
    unsigned char *pixels;
    png_bytep *rows;
    fv_pixel_format format;
    /* encoding */
    FILE *file;
    const fv_image *img;
} png_job;

static void on_error(png_structp png, png_const_charp msg) {
    png_job *j = png_get_error_ptr(png);
    snprintf(j->msg, sizeof j->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

static void read_mem(png_structp png, png_bytep dst, size_t n) {
    png_job *j = png_get_io_ptr(png);
    if (n > j->size - j->pos) {
        memset(dst, 0, n);
        png_error(png, "unexpected end of file (truncated)");
    }
    memcpy(dst, j->buf + j->pos, n);
    j->pos += n;
}

/* Ancillary chunks fovea does not use, skipped unread: text and ICC
 * profiles are compressed, and libpng would inflate up to its chunk limit
 * (8 MB) for each of up to 1000 chunks before the first pixel. */
static const png_byte skipped_chunks[] = "tEXt\0zTXt\0iTXt\0iCCP\0sPLT\0eXIf";

/* Returns 0 on success; nonzero after a libpng error (j->msg says what). */
static int decode_run(png_job *j) {
    if (setjmp(png_jmpbuf(j->png))) return 1;
    png_set_read_fn(j->png, j, read_mem);
#ifdef PNG_HANDLE_AS_UNKNOWN_SUPPORTED
    png_set_keep_unknown_chunks(j->png, PNG_HANDLE_CHUNK_NEVER, skipped_chunks,
                                (int)(sizeof skipped_chunks / 5));
#endif
#ifdef PNG_SET_USER_LIMITS_SUPPORTED
    png_set_chunk_malloc_max(j->png, 8000000); /* libpng's default, whatever the build says */
    png_set_chunk_cache_max(j->png, 1000);
#endif
    /* Reads the chunks up to the first IDAT: nothing sized by the image is
     * allocated before png_read_update_info. */
    png_read_info(j->png, j->info);
    int depth, type, interlace;
    png_get_IHDR(j->png, j->info, &j->width, &j->height, &depth, &type, &interlace, NULL, NULL);
    if (fv__image_size_check(j->path, "PNG", j->width, j->height, j->max_pixels) != FV_OK) {
        j->too_large = 1;
        return 1;
    }
    if (depth == 16) {
#ifdef PNG_READ_SCALE_16_TO_8_SUPPORTED
        png_set_scale_16(j->png);
#else
        png_set_strip_16(j->png);
#endif
    }
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(j->png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(j->png);
    int colour = (type & PNG_COLOR_MASK_COLOR) != 0;
    int trns = png_get_valid(j->png, j->info, PNG_INFO_tRNS) != 0;
    if (j->rgba) {
        if (trns) png_set_tRNS_to_alpha(j->png);
        if (!colour) png_set_gray_to_rgb(j->png);
        png_set_add_alpha(j->png, 0xff, PNG_FILLER_AFTER); /* only where there is none */
        j->format = FV_PIXEL_RGBA32;
    } else {
        /* also where expanding a palette or grey turns tRNS into alpha */
        if ((type & PNG_COLOR_MASK_ALPHA) || trns) png_set_strip_alpha(j->png);
        j->format = colour ? FV_PIXEL_RGB24 : FV_PIXEL_GRAY8;
    }
    png_set_interlace_handling(j->png);
    png_read_update_info(j->png, j->info);

    size_t row = (size_t)j->width * fv__image_file_bpp(j->format);
    if (png_get_rowbytes(j->png, j->info) != row) png_error(j->png, "unexpected row size");
    j->pixels = malloc(row * j->height);
    j->rows = malloc(sizeof *j->rows * j->height);
    if (!j->pixels || !j->rows) png_error(j->png, "out of memory");
    for (png_uint_32 y = 0; y < j->height; y++)
        j->rows[y] = j->pixels + row * y;
    png_read_image(j->png, j->rows);
    png_read_end(j->png, NULL);
    return 0;
}

fv_status fv__png_decode(const char *path, const unsigned char *buf, size_t size, int rgba,
                         uint64_t max_pixels, fv_host_image *out) {
    png_job j;
    memset(&j, 0, sizeof j);
    j.path = path;
    j.buf = buf;
    j.size = size;
    j.rgba = rgba;
    j.max_pixels = max_pixels;
    j.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &j, on_error, on_warning);
    if (j.png) j.info = png_create_info_struct(j.png);
    if (!j.png || !j.info) {
        png_destroy_read_struct(&j.png, &j.info, NULL);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "image_file_load: '%s': libpng set-up failed", path);
    }
    int failed = decode_run(&j);
    png_destroy_read_struct(&j.png, &j.info, NULL);
    free(j.rows);
    if (failed) {
        free(j.pixels);
        if (j.too_large) return FV_ERR_FORMAT; /* recorded by fv__image_size_check */
        fv_status s = strcmp(j.msg, "out of memory") == 0 ? FV_ERR_OUT_OF_MEMORY : FV_ERR_FORMAT;
        return fv__error(s, "image_file_load: '%s': malformed PNG: %s", path, j.msg);
    }
    out->format = j.format;
    out->width = (int)j.width;
    out->height = (int)j.height;
    out->stride = (size_t)j.width * fv__image_file_bpp(j.format);
    out->data = j.pixels;
    out->size = out->stride * j.height;
    return FV_OK;
}

static void write_file(png_structp png, png_bytep data, size_t n) {
    png_job *j = png_get_io_ptr(png);
    if (fwrite(data, 1, n, j->file) != n) {
        j->io_errno = errno ? errno : EIO;
        png_error(png, "write failed");
    }
}

static void flush_file(png_structp png) {
    png_job *j = png_get_io_ptr(png);
    if (fflush(j->file) != 0) {
        j->io_errno = errno ? errno : EIO;
        png_error(png, "write failed");
    }
}

static int encode_run(png_job *j) {
    if (setjmp(png_jmpbuf(j->png))) return 1;
    const fv_image *img = j->img;
    png_set_write_fn(j->png, j, write_file, flush_file);
    int type = img->format == FV_PIXEL_GRAY8    ? PNG_COLOR_TYPE_GRAY
               : img->format == FV_PIXEL_RGBA32 ? PNG_COLOR_TYPE_RGB_ALPHA
                                                : PNG_COLOR_TYPE_RGB;
    png_set_IHDR(j->png, j->info, (png_uint_32)img->width, (png_uint_32)img->height, 8, type,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(j->png, j->info);
    if (img->format == FV_PIXEL_BGR24) png_set_bgr(j->png);
    const unsigned char *p = img->data;
    for (int y = 0; y < img->height; y++)
        png_write_row(j->png, (png_const_bytep)(p + img->stride * (size_t)y));
    png_write_end(j->png, NULL);
    return 0;
}

fv_status fv__png_encode(const char *path, FILE *f, const fv_image *img) {
    png_job j;
    memset(&j, 0, sizeof j);
    j.path = path;
    j.file = f;
    j.img = img;
    j.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &j, on_error, on_warning);
    if (j.png) j.info = png_create_info_struct(j.png);
    if (!j.png || !j.info) {
        png_destroy_write_struct(&j.png, &j.info);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "image_file_save: '%s': libpng set-up failed", path);
    }
    int failed = encode_run(&j);
    png_destroy_write_struct(&j.png, &j.info);
    if (!failed) return FV_OK;
    if (j.io_errno)
        return fv__error(FV_ERR_IO, "image_file_save: '%s': writing failed: %s", path,
                         strerror(j.io_errno));
    return fv__error(FV_ERR_LIBRARY, "image_file_save: '%s': libpng: %s", path, j.msg);
}
