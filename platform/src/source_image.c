/* file:// sources that are not videos: a still image (PNG, JPEG), delivered
 * once or looped, or a printf-style numbered sequence (frames_%04d.png)
 * decoded one file per capture. Output in desc.format (default: the file's
 * own GRAY8 or RGB24) through fv__host_convert. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "io_internal.h"

typedef struct image_src {
    int sequence; /* 0: still image */
    fv__index_pattern pat;
    long first, count, next; /* sequence: first index, files, next position (0..count) */
    int delivered;           /* still image: the frame went out */
    fv_image frame;          /* dense, in info.format; data allocated at open */
    size_t bytes;
    int64_t start_ns; /* pacing: when frame 0 was due */
    uint64_t paced;   /* frames counted for pacing */
    char name[8256];  /* the file being decoded, for messages */
} image_src;

static int file_exists(const char *path) {
    return access(path, F_OK) == 0;
}

/* Sleeps until frame n is due (start + n / rate); FV_ERR_TIMEOUT when that
 * is further away than timeout_ms (the source stays usable). */
static fv_status pace(fv_source *src, image_src *is) {
    double rate = src->desc.rate;
    if (!(rate > 0)) return FV_OK;
    int64_t now = fv__now_ns();
    if (is->paced == 0) is->start_ns = now;
    int64_t due = is->start_ns + (int64_t)((double)is->paced * 1e9 / rate);
    if (due > now) {
        int64_t limit = (int64_t)src->desc.timeout_ms * 1000000;
        int late = due - now > limit;
        int64_t until = late ? now + limit : due;
        struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
        if (late)
            return fv__error(FV_ERR_TIMEOUT,
                             "source_capture: '%s': next frame due in %.3f s, timeout is %d ms",
                             src->desc.uri, (double)(due - now) / 1e9, src->desc.timeout_ms);
    }
    is->paced++;
    return FV_OK;
}

/* Decodes file index i of the sequence into is->frame. */
static fv_status decode_into(fv_source *src, image_src *is, const char *path) {
    fv_pixel_format want = src->info.format == FV_PIXEL_RGBA32 ? FV_PIXEL_RGBA32 : 0;
    fv_host_image img;
    fv_status s = fv_image_file_load(path, want, &img);
    if (s != FV_OK) return s;
    if (*fv__image_load_warning())
        fv__source_log(src, FV_LOG_WARN, "source_capture: %s", fv__image_load_warning());
    if (img.width != is->frame.width || img.height != is->frame.height) {
        s = fv__error(FV_ERR_FORMAT,
                      "source_capture: '%s' is %dx%d, but the sequence '%s' began with %dx%d "
                      "frames: every file must have the first one's size",
                      path, img.width, img.height, src->info.name, is->frame.width,
                      is->frame.height);
    } else {
        fv_image view = fv_host_image_view(&img);
        s = fv__host_convert(&view, &is->frame);
    }
    fv_host_image_free(&img);
    return s;
}

static fv_status image_capture(fv_source *src, uint32_t flags, fv_source_frame *out) {
    image_src *is = src->impl;
    if (is->sequence) {
        if (is->next >= is->count) {
            if (!src->desc.loop)
                return fv__error(FV_ERR_END_OF_STREAM,
                                 "source_capture: '%s': end of the sequence (%ld files)",
                                 src->info.name, is->count);
            is->next = 0;
        }
    } else if (is->delivered && !src->desc.loop) {
        return fv__error(FV_ERR_END_OF_STREAM, "source_capture: '%s': the image was delivered",
                         src->info.name);
    }
    fv_status s = pace(src, is);
    if (s != FV_OK) return s;
    if (is->sequence) {
        fv__index_pattern_name(&is->pat, (unsigned long long)(is->first + is->next), is->name,
                               sizeof is->name);
        s = decode_into(src, is, is->name);
        if (s != FV_OK) return s;
        is->next++;
    }
    is->delivered = 1;
    out->image = is->frame;
    out->bytes = is->bytes;
    out->timestamp_ns = fv__now_ns();
    out->sequence = src->sequence++;
    (void)flags;
    return FV_OK;
}

static void image_close(fv_source *src) {
    image_src *is = src->impl;
    if (is) free(is->frame.data);
    free(is);
    src->impl = NULL;
}

static const fv__source_ops image_ops = {image_capture, image_close, NULL};

static int yuv_size_ok(fv_pixel_format f, int w, int h) {
    if (f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY) return (w & 1) == 0;
    if (f == FV_PIXEL_NV12) return ((w | h) & 1) == 0;
    return 1;
}

static fv_status open_first(fv_source *src, image_src *is, const char *first) {
    const char *op = "source_open";
    fv_pixel_format want = src->desc.format == FV_PIXEL_RGBA32 ? FV_PIXEL_RGBA32 : 0;
    fv_host_image img;
    fv_status s = fv_image_file_load(first, want, &img);
    if (s != FV_OK) return s;
    if (*fv__image_load_warning())
        fv__source_log(src, FV_LOG_WARN, "%s: %s", op, fv__image_load_warning());
    fv_pixel_format natural = img.format;
    fv_pixel_format f = src->desc.format ? src->desc.format : natural;
    const fv_source_desc *d = &src->desc;
    if (d->width && (d->width != img.width || d->height != img.height)) {
        s = fv__error(FV_ERR_NOT_SUPPORTED,
                      "%s: '%s': image is %dx%d; file sources do not resize (omit "
                      "--input-width/--input-height), asked for %dx%d",
                      op, first, img.width, img.height, d->width, d->height);
    } else if (!yuv_size_ok(f, img.width, img.height)) {
        s = fv__error(FV_ERR_NOT_SUPPORTED, "%s: '%s': image is %dx%d; %s needs an even %s", op,
                      first, img.width, img.height, fv_pixel_format_name(f),
                      f == FV_PIXEL_NV12 ? "width and height" : "width");
    }
    if (s == FV_OK) {
        is->bytes = fv_image_bytes(f, img.width, img.height);
        is->frame = (fv_image){f, img.width, img.height, 0, malloc(is->bytes), NULL, 0};
        if (!is->frame.data)
            s = fv__error(FV_ERR_OUT_OF_MEMORY, "%s: '%s': out of host memory for a %zu-byte frame",
                          op, first, is->bytes);
    }
    if (s == FV_OK) {
        is->frame.stride = f == FV_PIXEL_NV12 ? (size_t)img.width : fv_image_bytes(f, img.width, 1);
        /* The sequence decodes on capture; the still image converts once. */
        if (!is->sequence) {
            fv_image view = fv_host_image_view(&img);
            s = fv__host_convert(&view, &is->frame);
        }
    }
    if (s == FV_OK) {
        fv_source_info *in = &src->info;
        in->format = f;
        in->width = img.width;
        in->height = img.height;
        if (!is->sequence) {
            /* fv_image_file_load goes by content too: PNG unless the JPEG magic. */
            int jpeg = 0;
            FILE *fh = NULL;
            unsigned char magic[2] = {0, 0};
            if (fv__fopen_regular(first, &fh, NULL) == 0) {
                jpeg = fread(magic, 1, 2, fh) == 2 && magic[0] == 0xFF && magic[1] == 0xD8;
                fclose(fh);
            }
            snprintf(in->detail, sizeof in->detail, "%s %dx%d %s%s%s", jpeg ? "JPEG" : "PNG",
                     img.width, img.height, fv_pixel_format_name(natural),
                     f != natural ? " -> " : "", f != natural ? fv_pixel_format_name(f) : "");
        }
    }
    fv_host_image_free(&img);
    return s;
}

fv_status fv__source_open_image(fv_source *src, const char *path) {
    const char *op = "source_open";
    image_src *is = calloc(1, sizeof *is);
    if (!is) return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: '%s': out of host memory", op, path);
    int seq = fv__index_pattern_parse(op, path, &is->pat);
    fv_status s = FV_OK;
    if (seq < 0) {
        s = FV_ERR_BAD_PARAM;
    } else if (seq) {
        is->sequence = 1;
        char name[sizeof is->name];
        fv__index_pattern_name(&is->pat, 0, name, sizeof name);
        if (!file_exists(name))
            fv__index_pattern_name(&is->pat, 1, name, sizeof name), is->first = 1;
        if (!file_exists(name)) {
            char n0[sizeof is->name];
            fv__index_pattern_name(&is->pat, 0, n0, sizeof n0);
            s = fv__error(FV_ERR_IO, "%s: '%s': no file of the sequence: neither '%s' nor '%s': %s",
                          op, path, n0, name, strerror(errno));
        } else {
            char n[sizeof is->name];
            long c = 1;
            for (;;) {
                fv__index_pattern_name(&is->pat, (unsigned long long)(is->first + c), n, sizeof n);
                if (c >= LONG_MAX - 2 || !file_exists(n)) break;
                c++;
            }
            is->count = c;
            s = open_first(src, is, name);
        }
    } else {
        s = open_first(src, is, path);
    }
    if (s != FV_OK) {
        free(is->frame.data);
        free(is);
        return s;
    }
    fv_source_info *in = &src->info;
    snprintf(in->kind, sizeof in->kind, "%s", is->sequence ? "sequence" : "image");
    snprintf(in->name, sizeof in->name, "%s", path);
    if (is->sequence)
        snprintf(in->detail, sizeof in->detail, "%ld files from index %ld, %dx%d %s", is->count,
                 is->first, in->width, in->height, fv_pixel_format_name(in->format));
    in->rate = src->desc.rate;
    in->frames = src->desc.loop ? -1 : (is->sequence ? (int64_t)is->count : 1);
    src->impl = is;
    src->ops = &image_ops;
    fv__source_log(src, FV_LOG_INFO, "source '%s': %s, %s", src->desc.uri, in->kind, in->detail);
    return FV_OK;
}
