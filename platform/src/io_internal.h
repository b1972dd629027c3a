/* fovea platform internal: what every source and sink backend implements,
 * and the helpers they share. Not installed.
 *
 * fv_source_open (source.c) checks the desc, parses the URI, fills the
 * common fields of struct fv_source and calls the scheme's open function;
 * that function sets ops, impl and info (kind, name, detail, format, size,
 * rate, frames) or records an error and returns it (source.c then frees the
 * struct; the backend frees its own impl before returning an error). Sinks
 * work the same way (sink.c). */
#ifndef FOVEA_PLATFORM_IO_INTERNAL_H
#define FOVEA_PLATFORM_IO_INTERNAL_H

#include <stdarg.h>
#include "fovea/platform/sink.h"
#include "fovea/platform/source.h"
#include "platform_internal.h"

typedef struct fv__source_ops {
    /* Fills *out (all fields); the frame stays valid until the next call
     * or close. Statuses as fv_source_capture. */
    fv_status (*capture)(fv_source *src, uint32_t flags, fv_source_frame *out);
    void (*close)(fv_source *src); /* frees impl */
    /* Optional (NULL: capture, then a copy): as capture, but the frame is
     * made in dst (checked by source.c: the source's format and size, data
     * set); out->image is *dst, out->bytes 0 (source.c fills it). */
    fv_status (*capture_into)(fv_source *src, uint32_t flags, const fv_image *dst,
                              fv_source_frame *out);
} fv__source_ops;

/* Whole-frame host copies (copy.c): rows split between a few threads when
 * the frame is large. Strides 0 mean dense; NV12 copies both planes. */
void fv__copy_rows(void *dst, size_t dstride, const void *src, size_t sstride, size_t row,
                   size_t rows);
void fv__copy_image(const fv_image *src, const fv_image *dst);
/* The copy workers made for a machine of cpus CPUs (copy.c). */
int fv__copy_default_workers(long cpus);

struct fv_source {
    const fv__source_ops *ops;
    void *impl;
    fv_source_desc desc; /* normalized: timeout_ms, buffers filled; uri points at uri_copy;
                            user_buffers as given */
    char *uri_copy;
    fv_source_info info;
    uint64_t sequence; /* next frame's sequence number (backends may use it) */
};

typedef struct fv__sink_ops {
    /* frame is checked by sink.c (size, format, data). */
    fv_status (*write)(fv_sink *sink, const fv_image *frame, int64_t timestamp_ns);
    fv_status (*close)(fv_sink *sink); /* finishes and frees impl */
    /* Optional (NULL: no captions): the caption over later frames. */
    fv_status (*set_text)(fv_sink *sink, const char *text);
} fv__sink_ops;

struct fv_sink {
    const fv__sink_ops *ops;
    void *impl;
    fv_sink_desc desc; /* normalized: rate, bitrate filled; uri points at uri_copy */
    char *uri_copy;
    fv_sink_info info;
    /* captions fovea draws itself (caption.c) where the backend draws none:
     * opened with text_overlay, not null://; NULL otherwise */
    struct fv__caption *caption;
};

/* Source backends. `arg` is the URI's remainder after "scheme://" (for
 * v4l2 the device path; for csi the sensor id; for gst the pipeline; for
 * file the path; for test the query string without '?', maybe ""). */
fv_status fv__source_open_v4l2(fv_source *src, const char *device);
fv_status fv__source_open_csi(fv_source *src, const char *sensor);
fv_status fv__source_open_gst(fv_source *src, const char *pipeline);
fv_status fv__source_open_video(fv_source *src, const char *path); /* GStreamer decodebin */
fv_status fv__source_open_image(fv_source *src, const char *path); /* still image or %d sequence */
fv_status fv__source_open_test(fv_source *src, const char *query);

/* test://'s query, "image=PATH&fps=N&frames=N&items=N&fashion=PATH"
 * (source_test_query.c). Parses query into buf (bufsize bytes: more than
 * strlen(query)) and sets the fields of the keys present; the others are
 * left as they were. image and fashion point into buf and are shorter than
 * FV__TEST_PATH_MAX. FV_ERR_BAD_PARAM (the message beginning
 * "source_open: test://: ") for an unknown key, a value out of range or a
 * query too long for buf. */
#define FV__TEST_PATH_MAX 4096
typedef struct fv__test_query {
    const char *image, *fashion; /* NULL: not given */
    double rate;                 /* fps=: 0..10000, 0 unpaced */
    long long frames;            /* frames=: >= 1 */
    int items;                   /* items=: 0..8 */
} fv__test_query;
fv_status fv__test_query_parse(const char *query, fv__test_query *q, char *buf, size_t bufsize);

/* Sink backends; `arg` as above (display: the display index). */
fv_status fv__sink_open_display(fv_sink *sink, const char *display);
fv_status fv__sink_open_video(fv_sink *sink, const char *path); /* .mp4 .mkv */
fv_status fv__sink_open_rtp(fv_sink *sink, const char *host_port);
fv_status fv__sink_open_images(fv_sink *sink, const char *path); /* .png .jpg, %d or not */
fv_status fv__sink_open_null(fv_sink *sink);

/* Log through desc.log at level (nothing when log is NULL). */
void fv__source_log(const fv_source *src, fv_log_level level, const char *fmt, ...)
    FV__PLATFORM_PRINTF(3, 4);
void fv__sink_log(const fv_sink *sink, fv_log_level level, const char *fmt, ...)
    FV__PLATFORM_PRINTF(3, 4);

/* CLOCK_MONOTONIC now, in nanoseconds. */
int64_t fv__now_ns(void);

/* Converts a dense or strided host image into dst (dense, dst->format,
 * same size; dst->data holds fv_image_bytes). Supports RGB24, BGR24, GRAY8,
 * RGBA32 among themselves and into YUYV, UYVY, NV12 (BT.601 limited range),
 * and YUYV/UYVY/NV12 into RGB24/BGR24/GRAY8/RGBA32. FV_ERR_NOT_SUPPORTED
 * otherwise. */
fv_status fv__host_convert(const fv_image *src, fv_image *dst);

/* MJPEG decoder (mjpeg.c): decodes JPEG frames of one size into one
 * buffer made at create (no allocation of its own per frame). Frames
 * without Huffman tables (AVI1 MJPEG, as many USB cameras send) use the
 * standard ones. */
typedef struct fv__mjpeg fv__mjpeg;

/* A decoder for width x height frames delivered in format (RGB24, BGR24,
 * GRAY8, RGBA32 directly; YUYV, UYVY, NV12 through fv__host_convert, which
 * need an even width, NV12 an even height too). *out is set on success and
 * NULL otherwise. FV_ERR_BAD_PARAM (NULL out, size), FV_ERR_NOT_SUPPORTED
 * (format), FV_ERR_OUT_OF_MEMORY. Messages begin "mjpeg_create: ". */
fv_status fv__mjpeg_create(int width, int height, fv_pixel_format format, fv__mjpeg **out);

/* Decodes the size bytes at data (not kept) and sets *frame to the decoded
 * image (dense; owned by m, valid until the next decode or destroy; the
 * pointer is the same every time), or NULL on failure. FV_ERR_FORMAT: not a
 * JPEG, corrupt or truncated data, or a frame of another size (the message
 * gives both sizes and what libjpeg said); m stays usable for the next
 * frame. FV_ERR_BAD_PARAM: m, data or frame NULL. Messages begin
 * "mjpeg_decode: ". */
fv_status fv__mjpeg_decode(fv__mjpeg *m, const unsigned char *data, size_t size,
                           const fv_image **frame);

/* Frees m; NULL is allowed. */
void fv__mjpeg_destroy(fv__mjpeg *m);

/* A numbered file name: prefix, one %[0][width]d, suffix. */
typedef struct fv__index_pattern {
    char prefix[4096], suffix[4096];
    int zero, width; /* %0<width>d */
} fv__index_pattern;

/* 1: path has one %[0][width]d (split into *p); 0: no '%' at all; -1: a
 * '%' that is not one such conversion (FV_ERR_BAD_PARAM recorded, the
 * message beginning "op: 'path': "). */
int fv__index_pattern_parse(const char *op, const char *path, fv__index_pattern *p);
/* The name for index (buf of n bytes). */
void fv__index_pattern_name(const fv__index_pattern *p, unsigned long long index, char *buf,
                            size_t n);

/* True if path names a video container fovea decodes through GStreamer
 * (.mp4 .mkv .avi .mov .webm .m4v .ts, any case). */
int fv__is_video_path(const char *path);

#endif
