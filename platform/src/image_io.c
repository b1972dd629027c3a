/* Image files: reading whole files, format detection by magic bytes, pixel
 * format conversion, and saving through a temporary file and rename(). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "platform_internal.h"

/* Files above this are refused before reading (a 32768^2 RGBA PNG that does
 * not compress at all is 4 GiB; real inputs are far smaller). */
#define MAX_FILE_BYTES ((size_t)1 << 31)

size_t fv__image_file_bpp(fv_pixel_format f) {
    switch (f) {
    case FV_PIXEL_GRAY8:
        return 1;
    case FV_PIXEL_RGB24:
    case FV_PIXEL_BGR24:
        return 3;
    case FV_PIXEL_RGBA32:
        return 4;
    default:
        return 0;
    }
}

void fv_host_image_free(fv_host_image *img) {
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

/* ---- loading -------------------------------------------------------------- */
static fv_status read_file(const char *path, unsigned char **buf, size_t *size) {
    *buf = NULL;
    *size = 0;
    FILE *f = NULL;
    const char *kind = NULL;
    int e = fv__fopen_regular(path, &f, &kind);
    if (e < 0)
        return fv__error(FV_ERR_IO, "image_file_load: '%s' is %s, not a regular file", path, kind);
    if (e > 0)
        return fv__error(FV_ERR_IO, "image_file_load: cannot open '%s': %s", path, strerror(e));
    struct stat st;
    fv_status s = FV_OK;
    if (fstat(fileno(f), &st) != 0)
        s = fv__error(FV_ERR_IO, "image_file_load: '%s': stat failed: %s", path, strerror(errno));
    else if (st.st_size == 0)
        s = fv__error(FV_ERR_FORMAT, "image_file_load: '%s' is empty (0 bytes): not an image",
                      path);
    else if ((unsigned long long)st.st_size > MAX_FILE_BYTES)
        s = fv__error(FV_ERR_FORMAT, "image_file_load: '%s' is %lld bytes, over the %zu limit",
                      path, (long long)st.st_size, MAX_FILE_BYTES);
    if (s != FV_OK) {
        fclose(f);
        return s;
    }
    size_t n = (size_t)st.st_size;
    unsigned char *b = malloc(n);
    if (!b) {
        fclose(f);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "image_file_load: '%s': %zu bytes: out of memory",
                         path, n);
    }
    size_t got = fread(b, 1, n, f);
    if (got != n && ferror(f)) {
        e = errno;
        free(b);
        fclose(f);
        return fv__error(FV_ERR_IO, "image_file_load: reading '%s' failed: %s", path, strerror(e));
    }
    fclose(f);
    *buf = b;
    *size = got; /* a file that shrank while we read it is judged by what we got */
    return FV_OK;
}

/* Converts a decoded image (GRAY8, RGB24 or RGBA32) to want in place. */
static fv_status convert(const char *path, fv_host_image *img, fv_pixel_format want) {
    if (img->format == want) return FV_OK;
    size_t n = (size_t)img->width * (size_t)img->height, bpp = fv__image_file_bpp(want);
    unsigned char *dst = malloc(n * bpp);
    if (!dst) return fv__error(FV_ERR_OUT_OF_MEMORY, "image_file_load: '%s': out of memory", path);
    const unsigned char *src = img->data;
    if (img->format == FV_PIXEL_GRAY8) {
        for (size_t i = 0; i < n; i++) {
            unsigned char *d = dst + i * bpp;
            d[0] = d[1] = d[2] = src[i];
            if (bpp == 4) d[3] = 255;
        }
    } else if (want == FV_PIXEL_GRAY8) { /* from RGB24: OpenCV's BT.601 fixed point */
        for (size_t i = 0; i < n; i++) {
            const unsigned char *p = src + i * 3;
            dst[i] = (unsigned char)((4899u * p[0] + 9617u * p[1] + 1868u * p[2] + 8192u) >> 14);
        }
    } else { /* RGB24 to BGR24 or RGBA32 */
        int swap = want == FV_PIXEL_BGR24;
        for (size_t i = 0; i < n; i++) {
            const unsigned char *p = src + i * 3;
            unsigned char *d = dst + i * bpp;
            d[0] = p[swap ? 2 : 0];
            d[1] = p[1];
            d[2] = p[swap ? 0 : 2];
            if (bpp == 4) d[3] = 255;
        }
    }
    free(img->data);
    img->data = dst;
    img->format = want;
    img->stride = (size_t)img->width * bpp;
    img->size = n * bpp;
    return FV_OK;
}

static _Thread_local char load_warning[512];

void fv__image_load_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(load_warning, sizeof load_warning, fmt, ap);
    va_end(ap);
}

const char *fv__image_load_warning(void) {
    return load_warning;
}

const char *fv_image_file_load_warning(void) {
    return load_warning;
}

static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

/* Neither magic: a damaged PNG signature (most of it there) is named as
 * such, with the first byte that is wrong; anything else shows its first
 * bytes. */
static fv_status unknown_format(const char *path, const unsigned char *buf, size_t size) {
    char head[40] = "";
    for (size_t i = 0, len = 0; i < size && i < 8; i++)
        len += (size_t)snprintf(head + len, sizeof head - len, "%s%02x", i ? " " : "", buf[i]);
    size_t same = 0;
    for (size_t i = 0; i < size && i < 8; i++)
        same += buf[i] == png_magic[i];
    if (same >= 4 && size >= 8) {
        size_t bad = 0;
        while (buf[bad] == png_magic[bad])
            bad++;
        return fv__error(FV_ERR_FORMAT,
                         "image_file_load: '%s': corrupt PNG signature: byte %zu is 0x%02x, not "
                         "0x%02x (the file starts %s; a PNG starts 89 50 4e 47 0d 0a 1a 0a)",
                         path, bad + 1, buf[bad], png_magic[bad], head);
    }
    if (same >= 4)
        return fv__error(FV_ERR_FORMAT,
                         "image_file_load: '%s': truncated PNG signature: the file is %zu bytes "
                         "(%s), a PNG signature alone is 8",
                         path, size, head);
    return fv__error(FV_ERR_FORMAT,
                     "image_file_load: '%s' is not a PNG or JPEG file (it starts with bytes %s)",
                     path, head);
}

fv_status fv__image_size_check(const char *path, const char *kind, uint64_t width, uint64_t height,
                               uint64_t max_pixels) {
    if (width > FV_IMAGE_MAX_DIM || height > FV_IMAGE_MAX_DIM)
        return fv__error(FV_ERR_FORMAT,
                         "image_file_load: '%s': %s claims %llux%llu, larger than the %dx%d "
                         "limit (FV_IMAGE_MAX_DIM)",
                         path, kind, (unsigned long long)width, (unsigned long long)height,
                         FV_IMAGE_MAX_DIM, FV_IMAGE_MAX_DIM);
    uint64_t pixels = width * height; /* each at most 2^15 */
    if (pixels > max_pixels)
        return fv__error(FV_ERR_FORMAT,
                         "image_file_load: '%s': %s claims %llux%llu = %llu pixels, over the "
                         "limit of %llu (fv_image_load_desc.max_pixels); not decoded",
                         path, kind, (unsigned long long)width, (unsigned long long)height,
                         (unsigned long long)pixels, (unsigned long long)max_pixels);
    return FV_OK;
}

fv_status fv__image_decode(const char *path, const unsigned char *buf, size_t size,
                           fv_pixel_format want, uint64_t max_pixels, fv_host_image *out) {
    memset(out, 0, sizeof *out);
    load_warning[0] = '\0';
    fv_host_image img;
    memset(&img, 0, sizeof img);
    if (max_pixels == 0) max_pixels = FV_IMAGE_DEFAULT_MAX_PIXELS;
    fv_status s;
    if (size >= 8 && memcmp(buf, png_magic, 8) == 0) {
        s = fv__png_decode(path, buf, size, want == FV_PIXEL_RGBA32, max_pixels, &img);
    } else if (size >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff) {
        s = fv__jpeg_decode(path, buf, size, max_pixels, &img);
    } else {
        s = unknown_format(path, buf, size);
    }
    if (s == FV_OK && want != 0) s = convert(path, &img, want);
    if (s != FV_OK) {
        fv_host_image_free(&img);
        return s;
    }
    *out = img;
    return FV_OK;
}

fv_status fv_image_file_load(const char *path, fv_pixel_format want, fv_host_image *out) {
    return fv_image_file_load_with(path, want, NULL, out);
}

fv_status fv_image_file_load_with(const char *path, fv_pixel_format want,
                                  const fv_image_load_desc *desc, fv_host_image *out) {
    if (out) memset(out, 0, sizeof *out);
    load_warning[0] = '\0';
    if (!path || !out)
        return fv__error(FV_ERR_BAD_PARAM, "image_file_load: %s is NULL", path ? "out" : "path");
    fv_image_load_desc d;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    for (size_t i = 0; i < sizeof d.reserved / sizeof d.reserved[0]; i++)
        if (d.reserved[i] != 0)
            return fv__error(FV_ERR_BAD_PARAM, "image_file_load: '%s': reserved[%zu] must be zero",
                             path, i);
    if (want != 0 && fv__image_file_bpp(want) == 0)
        return fv__error(FV_ERR_BAD_PARAM,
                         "image_file_load: '%s': want=%d (%s): only GRAY8, RGB24, BGR24, RGBA32 "
                         "or 0 (the file's own) can be loaded",
                         path, (int)want, fv_pixel_format_name(want));
    unsigned char *buf;
    size_t size;
    fv_status s = read_file(path, &buf, &size);
    if (s != FV_OK) return s;
    s = fv__image_decode(path, buf, size, want, d.max_pixels, out);
    free(buf);
    if (s != FV_OK) load_warning[0] = '\0'; /* the error says what was wrong */
    return s;
}

/* ---- saving --------------------------------------------------------------- */
typedef enum { KIND_NONE, KIND_PNG, KIND_JPEG } file_kind;

static file_kind kind_of(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    if (!dot) return KIND_NONE;
    if (strcasecmp(dot, ".png") == 0) return KIND_PNG;
    if (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0) return KIND_JPEG;
    return KIND_NONE;
}

static fv_status check_save_args(const char *path, const fv_image *img, const fv_image_save_desc *d,
                                 file_kind *kind) {
    if (!path || !img)
        return fv__error(FV_ERR_BAD_PARAM, "image_file_save: %s is NULL", path ? "img" : "path");
    for (size_t i = 0; i < sizeof d->reserved / sizeof d->reserved[0]; i++)
        if (d->reserved[i] != 0)
            return fv__error(FV_ERR_BAD_PARAM, "image_file_save: '%s': reserved[%zu] must be zero",
                             path, i);
    if (d->jpeg_quality < 0 || d->jpeg_quality > 100)
        return fv__error(FV_ERR_BAD_PARAM,
                         "image_file_save: '%s': jpeg_quality=%d is not in 1..100 (0: default)",
                         path, d->jpeg_quality);
    *kind = kind_of(path);
    if (*kind == KIND_NONE)
        return fv__error(FV_ERR_NOT_SUPPORTED,
                         "image_file_save: '%s': unknown extension (.png, .jpg or .jpeg)", path);
    size_t bpp = fv__image_file_bpp(img->format);
    if (bpp == 0)
        return fv__error(FV_ERR_NOT_SUPPORTED,
                         "image_file_save: '%s': pixel format %s (%d) cannot be saved (GRAY8, "
                         "RGB24, BGR24, RGBA32 can)",
                         path, fv_pixel_format_name(img->format), (int)img->format);
    if (img->width < 1 || img->height < 1 || img->width > FV_IMAGE_MAX_DIM ||
        img->height > FV_IMAGE_MAX_DIM)
        return fv__error(FV_ERR_BAD_PARAM,
                         "image_file_save: '%s': size %dx%d: each must be in 1..%d", path,
                         img->width, img->height, FV_IMAGE_MAX_DIM);
    if (!img->data)
        return fv__error(FV_ERR_BAD_PARAM, "image_file_save: '%s': image data is NULL", path);
    if (img->stride != 0 && img->stride < (size_t)img->width * bpp)
        return fv__error(FV_ERR_BAD_PARAM,
                         "image_file_save: '%s': stride %zu is smaller than a row (%d %s pixels, "
                         "%zu bytes)",
                         path, img->stride, img->width, fv_pixel_format_name(img->format),
                         (size_t)img->width * bpp);
    return FV_OK;
}

/* Creates a new file beside path ("<dir>/.<name>.tmp-<pid>-<n>"), mode 0666
 * less the umask (as the final file would get). */
static fv_status create_temp(const char *path, char **tmp_out, FILE **f_out) {
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dir_len;
    size_t cap = strlen(path) + 48;
    char *tmp = malloc(cap);
    if (!tmp) return fv__error(FV_ERR_OUT_OF_MEMORY, "image_file_save: out of memory");
    int fd = -1;
    for (unsigned n = 0; n < 100 && fd < 0; n++) {
        snprintf(tmp, cap, "%.*s.%s.tmp-%ld-%u", (int)dir_len, path, base, (long)getpid(), n);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        fv_status s = fv__error(FV_ERR_IO,
                                "image_file_save: cannot write '%s': creating a temporary file "
                                "beside it failed: %s",
                                path, strerror(e));
        free(tmp);
        return s;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return fv__error(FV_ERR_IO, "image_file_save: '%s': fdopen failed: %s", path, strerror(e));
    }
    *tmp_out = tmp;
    *f_out = f;
    return FV_OK;
}

fv_status fv_image_file_save(const char *path, const fv_image *img_in,
                             const fv_image_save_desc *desc) {
    fv_image_save_desc d;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    file_kind kind = KIND_NONE;
    fv_status s = check_save_args(path, img_in, &d, &kind);
    if (s != FV_OK) return s;
    fv_image img = *img_in;
    if (img.stride == 0) img.stride = (size_t)img.width * fv__image_file_bpp(img.format);

    char *tmp = NULL;
    FILE *f = NULL;
    fv__temp_sweep(path);
    s = create_temp(path, &tmp, &f);
    if (s != FV_OK) return s;
    int slot = fv__temp_listed(tmp);
    if (kind == KIND_PNG)
        s = fv__png_encode(path, f, &img);
    else
        s = fv__jpeg_encode(path, f, &img, d.jpeg_quality ? d.jpeg_quality : 90);
    /* The data must be on disk before the rename makes it the file at path. */
    if (s == FV_OK && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        s = fv__error(FV_ERR_IO, "image_file_save: '%s': writing failed: %s", path,
                      strerror(errno));
    if (fclose(f) != 0 && s == FV_OK)
        s = fv__error(FV_ERR_IO, "image_file_save: '%s': writing failed: %s", path,
                      strerror(errno));
    if (s == FV_OK && rename(tmp, path) != 0)
        s = fv__error(FV_ERR_IO, "image_file_save: renaming '%s' to '%s' failed: %s", tmp, path,
                      strerror(errno));
    if (s != FV_OK) unlink(tmp);
    fv__temp_unlisted(slot);
    free(tmp);
    return s;
}
