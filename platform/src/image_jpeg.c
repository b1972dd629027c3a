/* JPEG through libjpeg(-turbo). libjpeg's default error handler prints and
 * calls exit(); ours keeps the message and longjmps back instead, and its
 * message hooks print nothing. Warnings that mean the entropy-coded data is
 * truncated or corrupt (libjpeg would pad the image with grey and carry on)
 * are errors here. As in image_png.c, state that changes after setjmp lives
 * in a job struct owned by the caller of the function that calls setjmp. */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include "platform_internal.h" /* stdio.h first: jpeglib.h needs FILE */
#include <jpeglib.h>
#include <jerror.h>

typedef struct jpeg_job {
    struct jpeg_error_mgr err;
    jmp_buf jmp;
    char msg[JMSG_LENGTH_MAX];
    int write_failed; /* JERR_FILE_WRITE: an I/O error, errno in io_errno */
    int io_errno;
    /* decoding */
    struct jpeg_decompress_struct d;
    uint64_t max_pixels;
    int too_large; /* the header's size refused (the error is recorded) */
    int cmyk;
    int warnings; /* warnings decoding survived (extraneous bytes, ...) */
    char warning[JMSG_LENGTH_MAX];
    unsigned char *pixels;
    fv_pixel_format format;
    /* encoding */
    struct jpeg_compress_struct c;
    const fv_image *img;
    FILE *file;
    int quality;
} jpeg_job;

static void on_error_exit(j_common_ptr cinfo) {
    jpeg_job *j = cinfo->client_data;
    j->err.format_message(cinfo, j->msg);
    if (j->err.msg_code == JERR_FILE_WRITE) {
        j->write_failed = 1;
        j->io_errno = errno ? errno : EIO;
    }
    longjmp(j->jmp, 1);
}

static void on_emit_message(j_common_ptr cinfo, int level) {
    jpeg_job *j = cinfo->client_data;
    if (level != -1) return; /* trace messages */
    switch (j->err.msg_code) {
    case JWRN_JPEG_EOF:          /* premature end of file */
    case JWRN_HIT_MARKER:        /* premature end of a data segment */
    case JWRN_MUST_RESYNC:       /* corrupt data */
    case JWRN_HUFF_BAD_CODE:     /* corrupt data */
    case JWRN_NOT_SEQUENTIAL:    /* progressive scans out of order */
    case JWRN_BOGUS_PROGRESSION: /* inconsistent progression */
        j->err.format_message(cinfo, j->msg);
        longjmp(j->jmp, 1);
    default: /* survivable (e.g. extraneous bytes before a marker): reported */
        if (j->warnings++ == 0) j->err.format_message(cinfo, j->warning);
        break;
    }
}

static void on_output_message(j_common_ptr cinfo) {
    (void)cinfo;
}

static void set_error_handlers(jpeg_job *j) {
    jpeg_std_error(&j->err);
    j->err.error_exit = on_error_exit;
    j->err.emit_message = on_emit_message;
    j->err.output_message = on_output_message;
}

static int decode_run(jpeg_job *j, const char *path, const unsigned char *buf, size_t size) {
    if (setjmp(j->jmp)) return 1;
    jpeg_create_decompress(&j->d); /* keeps err and client_data */
    jpeg_mem_src(&j->d, buf, (unsigned long)size);
    /* Reads the markers up to the first scan; nothing sized by the image
     * is allocated before jpeg_start_decompress (progressive and
     * arithmetic-coded files: whole-image coefficient buffers there). */
    jpeg_read_header(&j->d, TRUE);
    if (fv__image_size_check(path, "JPEG", j->d.image_width, j->d.image_height, j->max_pixels) !=
        FV_OK) {
        j->too_large = 1;
        return 1;
    }
    if (j->d.jpeg_color_space == JCS_CMYK || j->d.jpeg_color_space == JCS_YCCK) {
        j->cmyk = 1;
        return 1;
    }
    int grey = j->d.jpeg_color_space == JCS_GRAYSCALE;
    j->d.out_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
    j->format = grey ? FV_PIXEL_GRAY8 : FV_PIXEL_RGB24;
    jpeg_start_decompress(&j->d);
    size_t row = (size_t)j->d.output_width * fv__image_file_bpp(j->format);
    if ((size_t)j->d.output_components != fv__image_file_bpp(j->format)) {
        snprintf(j->msg, sizeof j->msg, "unexpected %d output components", j->d.output_components);
        return 1;
    }
    j->pixels = malloc(row * j->d.output_height);
    if (!j->pixels) ERREXIT1(&j->d, JERR_OUT_OF_MEMORY, 0);
    while (j->d.output_scanline < j->d.output_height) {
        JSAMPROW r = j->pixels + row * j->d.output_scanline;
        jpeg_read_scanlines(&j->d, &r, 1);
    }
    jpeg_finish_decompress(&j->d);
    return 0;
}

fv_status fv__jpeg_decode(const char *path, const unsigned char *buf, size_t size,
                          uint64_t max_pixels, fv_host_image *out) {
    jpeg_job *j = calloc(1, sizeof *j);
    if (!j) return fv__error(FV_ERR_OUT_OF_MEMORY, "image_file_load: '%s': out of memory", path);
    set_error_handlers(j);
    j->d.err = &j->err;
    j->d.client_data = j;
    j->max_pixels = max_pixels;
    int failed = decode_run(j, path, buf, size);
    jpeg_destroy_decompress(&j->d);
    fv_status s = FV_OK;
    if (failed && j->too_large)
        s = FV_ERR_FORMAT; /* recorded by fv__image_size_check */
    else if (failed && j->cmyk)
        s = fv__error(FV_ERR_FORMAT, "image_file_load: '%s': CMYK/YCCK JPEG is not supported",
                      path);
    else if (failed)
        s = fv__error(j->err.msg_code == JERR_OUT_OF_MEMORY ? FV_ERR_OUT_OF_MEMORY : FV_ERR_FORMAT,
                      "image_file_load: '%s': malformed JPEG: %s", path, j->msg);
    if (s == FV_OK) {
        out->format = j->format;
        out->width = (int)j->d.output_width;
        out->height = (int)j->d.output_height;
        out->stride = (size_t)out->width * fv__image_file_bpp(j->format);
        out->data = j->pixels;
        out->size = out->stride * (size_t)out->height;
        if (j->warnings)
            fv__image_load_warn("'%s': %d libjpeg warning%s, the first: %s", path, j->warnings,
                                j->warnings == 1 ? "" : "s", j->warning);
    } else {
        free(j->pixels);
    }
    free(j);
    return s;
}

static int encode_run(jpeg_job *j) {
    if (setjmp(j->jmp)) return 1;
    const fv_image *img = j->img;
    jpeg_create_compress(&j->c);
    jpeg_stdio_dest(&j->c, j->file);
    j->c.image_width = (JDIMENSION)img->width;
    j->c.image_height = (JDIMENSION)img->height;
    switch (img->format) {
    case FV_PIXEL_GRAY8:
        j->c.input_components = 1;
        j->c.in_color_space = JCS_GRAYSCALE;
        break;
#ifdef JCS_EXTENSIONS
    case FV_PIXEL_BGR24:
        j->c.input_components = 3;
        j->c.in_color_space = JCS_EXT_BGR;
        break;
    case FV_PIXEL_RGBA32:
        j->c.input_components = 4;
        j->c.in_color_space = JCS_EXT_RGBA; /* libjpeg-turbo ignores the alpha byte */
        break;
#endif
    default:
        j->c.input_components = 3;
        j->c.in_color_space = JCS_RGB;
        break;
    }
    jpeg_set_defaults(&j->c);
    jpeg_set_quality(&j->c, j->quality, TRUE);
    jpeg_start_compress(&j->c, TRUE);
    unsigned char *p = img->data;
    while (j->c.next_scanline < j->c.image_height) {
        JSAMPROW r = p + img->stride * j->c.next_scanline;
        jpeg_write_scanlines(&j->c, &r, 1);
    }
    jpeg_finish_compress(&j->c);
    return 0;
}

fv_status fv__jpeg_encode(const char *path, FILE *f, const fv_image *img, int quality) {
#ifndef JCS_EXTENSIONS
    if (img->format == FV_PIXEL_BGR24 || img->format == FV_PIXEL_RGBA32)
        return fv__error(FV_ERR_NOT_SUPPORTED,
                         "image_file_save: '%s': this libjpeg cannot write %s (libjpeg-turbo "
                         "can); save RGB24 or GRAY8",
                         path, fv_pixel_format_name(img->format));
#endif
    jpeg_job *j = calloc(1, sizeof *j);
    if (!j) return fv__error(FV_ERR_OUT_OF_MEMORY, "image_file_save: '%s': out of memory", path);
    set_error_handlers(j);
    j->c.err = &j->err;
    j->c.client_data = j;
    j->img = img;
    j->file = f;
    j->quality = quality;
    int failed = encode_run(j);
    jpeg_destroy_compress(&j->c);
    fv_status s = FV_OK;
    if (failed && j->write_failed)
        s = fv__error(FV_ERR_IO, "image_file_save: '%s': writing failed: %s", path,
                      strerror(j->io_errno));
    else if (failed)
        s = fv__error(FV_ERR_LIBRARY, "image_file_save: '%s': libjpeg: %s", path, j->msg);
    free(j);
    return s;
}
