/* fovea platform: image files (PNG, JPEG) to and from host memory.
 *
 * Set-up and offline I/O, not the per-frame path: these calls allocate with
 * malloc. They never print; on failure, fv_last_error() names the file and
 * says what went wrong (including what libpng or libjpeg reported).
 * Thread-safe: no shared state.
 */
#ifndef FOVEA_PLATFORM_IMAGE_IO_H
#define FOVEA_PLATFORM_IMAGE_IO_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/fovea.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest width or height accepted when loading or saving. */
#define FV_IMAGE_MAX_DIM 32768

/* Largest width x height fv_image_file_load decodes by default: 2^28
 * (16384 x 16384, 268 Mpixels). That is 3x a 12K frame (12288 x 6480) and
 * above the largest camera sensors (150 Mpixels), and caps a loaded image
 * at 1 GiB (RGBA32). A file whose header claims more is refused before
 * anything is allocated for its pixels: a few hundred bytes can claim
 * gigapixels (an arithmetic-coded JPEG legally decodes its missing data as
 * zeros). fv_image_load_desc.max_pixels raises or lowers it. */
#define FV_IMAGE_DEFAULT_MAX_PIXELS ((uint64_t)1 << 28)

/* An image in host memory that owns its pixels. */
typedef struct fv_host_image {
    fv_pixel_format format; /* GRAY8, RGB24, BGR24 or RGBA32 */
    int width, height;      /* pixels */
    size_t stride;          /* bytes per row; loaded images are dense (width * bytes per pixel) */
    void *data;             /* malloc'd; owned by the struct: free with fv_host_image_free */
    size_t size;            /* bytes at data (stride * height) */
} fv_host_image;

/* Frees img->data and zeroes *img. NULL, or an image already freed or
 * zeroed, is allowed. */
void fv_host_image_free(fv_host_image *img);

/* A non-owning fv_image view of a host image (for fv_image_file_save, or for
 * fv_image_pack on the CPU backend). */
static inline fv_image fv_host_image_view(const fv_host_image *img) {
    fv_image v = {img->format, img->width, img->height, img->stride, img->data, NULL, 0};
    return v;
}

/* Reads a PNG or JPEG file, recognised by its content (magic bytes), not its
 * name.
 *   path: required.
 *   want: the pixel format of *out: FV_PIXEL_GRAY8, RGB24, BGR24, RGBA32, or
 *         0 for the file's natural format (GRAY8 for grey files, else RGB24).
 *         Colour to grey uses (4899 R + 9617 G + 1868 B + 8192) >> 14 (BT.601,
 *         as OpenCV); grey to colour replicates; alpha is dropped unless want
 *         is RGBA32 (then 255 where the file has none).
 *   out:  required; zeroed first. On success it owns a dense image; free it
 *         with fv_host_image_free. On failure it stays zeroed.
 * PNG: every colour type and bit depth (16-bit scaled to 8, palettes and
 * 1/2/4-bit grey expanded, tRNS turned into alpha for RGBA32), interlaced or
 * not. No gamma or colour-profile conversion. JPEG: greyscale, YCbCr and RGB
 * (not CMYK); a truncated or corrupt entropy-coded segment is an error.
 * The header's size is checked before any pixel memory is allocated:
 * width and height at most FV_IMAGE_MAX_DIM, width x height at most
 * FV_IMAGE_DEFAULT_MAX_PIXELS (fv_image_file_load_with sets another limit).
 * Returns FV_ERR_BAD_PARAM (NULL argument, want not one of the above),
 * FV_ERR_IO (cannot open or read the file: the message has the path and the
 * system's reason), FV_ERR_FORMAT (empty, truncated, corrupt, not PNG or
 * JPEG, unsupported variant, width/height > FV_IMAGE_MAX_DIM, or more
 * pixels than the limit: the message has the path, the size the header
 * claims and the limit), FV_ERR_OUT_OF_MEMORY. */
fv_status fv_image_file_load(const char *path, fv_pixel_format want, fv_host_image *out);

/* Options of fv_image_file_load_with; NULL or zero fields mean the defaults. */
typedef struct fv_image_load_desc {
    /* Most pixels (width x height) a file may claim in its header, else
     * FV_ERR_FORMAT before decoding; 0 means FV_IMAGE_DEFAULT_MAX_PIXELS.
     * The image returned then takes at most 4 bytes a pixel (RGBA32); a
     * progressive colour JPEG needs about 9 bytes a pixel while decoding.
     * FV_IMAGE_MAX_DIM still bounds each side, so values above 2^30 are
     * the same as 2^30. */
    uint64_t max_pixels;
    uint32_t reserved[6]; /* must be zero */
} fv_image_load_desc;

/* fv_image_file_load with options: desc may be NULL (the defaults, the same
 * as fv_image_file_load). E.g. a tool for gigapixel panoramas raises
 * max_pixels; a service decoding untrusted uploads on a small device lowers
 * it. Other parameters, *out and the statuses as fv_image_file_load's, and
 * FV_ERR_BAD_PARAM when reserved is not zero. */
fv_status fv_image_file_load_with(const char *path, fv_pixel_format want,
                                  const fv_image_load_desc *desc, fv_host_image *out);

/* What the last fv_image_file_load on this thread read past: libjpeg's
 * recoverable damage (e.g. "Corrupt JPEG data: 3 extraneous bytes before
 * marker 0xdb"), decoded anyway as libjpeg does; "" when the file read
 * cleanly or the load failed. Never NULL; valid until the next load on this
 * thread. fovea prints nothing: a program shows it as a warning. */
const char *fv_image_file_load_warning(void);

/* Options of fv_image_file_save; NULL or zero fields mean the defaults. */
typedef struct fv_image_save_desc {
    int jpeg_quality;     /* 1..100; 0 means 90. Ignored for PNG. */
    uint32_t reserved[7]; /* must be zero */
} fv_image_save_desc;

/* Writes img to path; the format follows the extension: .png (lossless) or
 * .jpg/.jpeg (case-insensitive).
 *   img: host memory; format GRAY8, RGB24, BGR24 or RGBA32 (JPEG drops
 *        alpha); stride 0 means dense; uv fields ignored. Not modified.
 *   desc: may be NULL (defaults).
 * The file is written to a temporary file in the same directory, then
 * renamed over path: on failure path is left as it was (absent, or the old
 * file untouched) and the temporary file is removed.
 * Returns FV_ERR_BAD_PARAM (NULL argument, bad size or stride, reserved not
 * zero), FV_ERR_NOT_SUPPORTED (unknown extension, YUYV/NV12 format),
 * FV_ERR_IO (cannot create, write or rename: the message has the path and
 * the system's reason), FV_ERR_LIBRARY (the encoder failed),
 * FV_ERR_OUT_OF_MEMORY. */
fv_status fv_image_file_save(const char *path, const fv_image *img, const fv_image_save_desc *desc);

/* Removes the temporary files of the saves in progress in this process
 * (fv_image_file_save's ".NAME.tmp-PID-N"). fovea installs no signal
 * handlers; this is async-signal-safe, for a program's own SIGINT/SIGTERM
 * handler to call before it ends the process. A temporary left behind
 * anyway (SIGKILL, a crash) is removed by the next fv_image_file_save into
 * the same directory, once its process no longer exists. */
void fv_file_temporaries_remove(void);

#ifdef __cplusplus
}
#endif
#endif
