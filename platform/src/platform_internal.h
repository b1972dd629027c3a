/* fovea platform internal: error helper and the image codecs' interface.
 * Not installed. */
#ifndef FOVEA_PLATFORM_INTERNAL_H
#define FOVEA_PLATFORM_INTERNAL_H

#include <stdio.h>
#include "fovea/platform/image_io.h"

#if defined(__GNUC__)
#define FV__PLATFORM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FV__PLATFORM_PRINTF(a, b)
#endif

/* libfovea's own error recorder (sdk/src/core/status.c, exported by
 * libfovea): sets this thread's fv_last_error() message and returns s. The
 * platform layer uses it so its messages reach callers the same way. */
fv_status fv__error(fv_status s, const char *fmt, ...) FV__PLATFORM_PRINTF(2, 3);

/* libfovea's non-blocking open for reading (sdk/src/core/file.c): 0 with
 * *out; an errno value; or -1 when path is not a regular file, *kind saying
 * what it is ("a FIFO (named pipe)"). */
int fv__fopen_regular(const char *path, FILE **out, const char **kind);

/* Temporaries of atomic writes (file_temp.c): listed while being written
 * (a slot, or -1 when all are taken), for fv_file_temporaries_remove; and
 * the stale ones of processes that no longer exist, removed from path's
 * directory (once per directory in a row). */
int fv__temp_listed(const char *tmp);
void fv__temp_unlisted(int slot);
void fv__temp_sweep(const char *path);

/* Warnings of the last fv_image_file_load on this thread that decoding
 * survived (libjpeg's 'Corrupt JPEG data: N extraneous bytes'): "" when
 * none. The file:// image sources pass it to their log callback. */
void fv__image_load_warn(const char *fmt, ...) FV__PLATFORM_PRINTF(1, 2);
const char *fv__image_load_warning(void);

/* Bytes per pixel of the formats image files use (GRAY8, RGB24, BGR24,
 * RGBA32); 0 for the others. */
size_t fv__image_file_bpp(fv_pixel_format f);

/* fv_image_file_load after the file is read: the size bytes at buf (size
 * may be 0; not kept) recognised by their magic bytes, decoded and
 * converted to want (checked by the caller: 0 or a format with
 * fv__image_file_bpp). max_pixels: fv_image_load_desc's, 0 meaning
 * FV_IMAGE_DEFAULT_MAX_PIXELS. path is for messages. *out as
 * fv_image_file_load's; statuses as its, less FV_ERR_IO and
 * FV_ERR_BAD_PARAM. */
fv_status fv__image_decode(const char *path, const unsigned char *buf, size_t size,
                           fv_pixel_format want, uint64_t max_pixels, fv_host_image *out);

/* The size a file's header claims against FV_IMAGE_MAX_DIM and max_pixels
 * (not 0): FV_OK, or FV_ERR_FORMAT recorded with the path, kind ("PNG",
 * "JPEG"), the size and the limit. The decoders call it once the header is
 * read, before they allocate anything for the pixels. */
fv_status fv__image_size_check(const char *path, const char *kind, uint64_t width, uint64_t height,
                               uint64_t max_pixels);

/* Decoders: the whole file is in buf; max_pixels (not 0) as
 * fv__image_size_check's. On success *out owns a dense image in GRAY8 or
 * RGB24 (the file's natural format), or RGBA32 when rgba is nonzero. On
 * failure they record the error (the message begins
 * "image_file_load: '<path>': ") and leave *out zeroed. */
fv_status fv__png_decode(const char *path, const unsigned char *buf, size_t size, int rgba,
                         uint64_t max_pixels, fv_host_image *out);
fv_status fv__jpeg_decode(const char *path, const unsigned char *buf, size_t size,
                          uint64_t max_pixels, fv_host_image *out);

/* Encoders: write img (checked: GRAY8/RGB24/BGR24/RGBA32, stride filled) to
 * the open file f. path is for messages. Write errors give FV_ERR_IO. */
fv_status fv__png_encode(const char *path, FILE *f, const fv_image *img);
fv_status fv__jpeg_encode(const char *path, FILE *f, const fv_image *img, int quality);

#endif
