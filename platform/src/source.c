/* fv_source: URI parsing, checks and dispatch to the scheme's backend. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "io_internal.h"

int64_t fv__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void vlog(fv_log_fn fn, void *user, fv_log_level level, const char *fmt, va_list ap) {
    if (!fn) return;
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fn(level, msg, user);
}

void fv__source_log(const fv_source *src, fv_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(src->desc.log, src->desc.log_user, level, fmt, ap);
    va_end(ap);
}

void fv__sink_log(const fv_sink *sink, fv_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(sink->desc.log, sink->desc.log_user, level, fmt, ap);
    va_end(ap);
}

int fv__index_pattern_parse(const char *op, const char *path, fv__index_pattern *p) {
    const char *pc = strchr(path, '%');
    if (!pc) return 0;
    const char *c = pc + 1;
    p->zero = *c == '0';
    if (p->zero) c++;
    p->width = 0;
    while (*c >= '0' && *c <= '9' && p->width < 100)
        p->width = p->width * 10 + (*c++ - '0');
    size_t pre = (size_t)(pc - path);
    if ((*c != 'd' && *c != 'i') || p->width > 32 || strchr(c + 1, '%') ||
        pre >= sizeof p->prefix || strlen(c + 1) >= sizeof p->suffix) {
        fv__error(FV_ERR_BAD_PARAM,
                  "%s: '%s': a file pattern takes exactly one %%d conversion (optionally "
                  "%%0<width>d, width <= 32) and no other '%%'",
                  op, path);
        return -1;
    }
    memcpy(p->prefix, path, pre);
    p->prefix[pre] = '\0';
    strcpy(p->suffix, c + 1);
    return 1;
}

void fv__index_pattern_name(const fv__index_pattern *p, unsigned long long index, char *buf,
                            size_t n) {
    if (p->zero)
        snprintf(buf, n, "%s%0*llu%s", p->prefix, p->width, index, p->suffix);
    else
        snprintf(buf, n, "%s%*llu%s", p->prefix, p->width, index, p->suffix);
}

int fv__is_video_path(const char *path) {
    static const char *const ext[] = {".mp4", ".mkv", ".avi", ".mov", ".webm", ".m4v", ".ts"};
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/')) return 0;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (strcasecmp(dot, ext[i]) == 0) return 1;
    return 0;
}

/* "scheme://rest": the scheme's length, or 0 when uri has none. */
static size_t scheme_len(const char *uri) {
    size_t n = 0;
    while (isalnum((unsigned char)uri[n]))
        n++;
    return n > 0 && strncmp(uri + n, "://", 3) == 0 ? n : 0;
}

const char *fv_source_scheme(const char *uri) {
    static const char *const known[] = {"v4l2", "csi", "gst", "file", "test"};
    if (!uri || !*uri) return NULL;
    size_t n = scheme_len(uri);
    if (n == 0) return strncmp(uri, "/dev/video", 10) == 0 ? "v4l2" : "file";
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strlen(known[i]) == n && strncmp(uri, known[i], n) == 0) return known[i];
    return NULL;
}

static int format_ok(fv_pixel_format f) {
    return f == 0 || ((int)f >= FV_PIXEL_GRAY8 && (int)f <= FV_PIXEL_UYVY);
}

#ifndef FV_HAVE_GSTREAMER
static fv_status no_gst(const char *what) {
    return fv__error(FV_ERR_NOT_SUPPORTED,
                     "%s needs GStreamer, and this fovea was built without it (install "
                     "libgstreamer1.0-dev and libgstreamer-plugins-base1.0-dev, e.g. with "
                     "toolchain/install-deps.sh, and reconfigure)",
                     what);
}
fv_status fv__source_open_csi(fv_source *src, const char *sensor) {
    (void)src, (void)sensor;
    return no_gst("source csi://");
}
fv_status fv__source_open_gst(fv_source *src, const char *pipeline) {
    (void)src, (void)pipeline;
    return no_gst("source gst://");
}
fv_status fv__source_open_video(fv_source *src, const char *path) {
    (void)src, (void)path;
    return no_gst("source: video files");
}
fv_status fv__sink_open_display(fv_sink *sink, const char *display) {
    (void)sink, (void)display;
    return no_gst("sink display://");
}
fv_status fv__sink_open_video(fv_sink *sink, const char *path) {
    (void)sink, (void)path;
    return no_gst("sink: video files");
}
fv_status fv__sink_open_rtp(fv_sink *sink, const char *host_port) {
    (void)sink, (void)host_port;
    return no_gst("sink rtp://");
}
#endif

#ifndef FV_HAVE_V4L2
fv_status fv__source_open_v4l2(fv_source *src, const char *device) {
    (void)src, (void)device;
    return fv__error(FV_ERR_NOT_SUPPORTED, "source v4l2://: V4L2 exists on Linux only");
}
#endif

static fv_status check_desc(const fv_source_desc *d) {
    const char *op = "source_open";
    if (!d->uri || !*d->uri) return fv__error(FV_ERR_BAD_PARAM, "%s: uri is NULL or empty", op);
    if (d->width < 0 || d->height < 0 || d->width > 32768 || d->height > 32768)
        return fv__error(FV_ERR_BAD_PARAM, "%s: size %dx%d must be 0 (default) or 1..32768", op,
                         d->width, d->height);
    if ((d->width == 0) != (d->height == 0))
        return fv__error(FV_ERR_BAD_PARAM, "%s: size %dx%d: give both width and height or neither",
                         op, d->width, d->height);
    if (!isfinite(d->rate) || d->rate < 0 || d->rate > 10000)
        return fv__error(FV_ERR_BAD_PARAM, "%s: rate %g must be 0 (default) or in (0, 10000]", op,
                         d->rate);
    if (!format_ok(d->format))
        return fv__error(FV_ERR_BAD_PARAM, "%s: format %d is unknown", op, (int)d->format);
    if (d->timeout_ms < 0 || d->buffers < 0 || d->buffers > 32)
        return fv__error(FV_ERR_BAD_PARAM, "%s: timeout_ms %d must be >= 0 and buffers %d in 0..32",
                         op, d->timeout_ms, d->buffers);
    if ((d->loop | d->reconnect) & ~1)
        return fv__error(FV_ERR_BAD_PARAM, "%s: loop %d and reconnect %d must be 0 or 1", op,
                         d->loop, d->reconnect);
    if (d->user_buffers && (d->user_buffer_bytes == 0))
        return fv__error(FV_ERR_BAD_PARAM, "%s: user_buffers given but user_buffer_bytes is 0", op);
    for (int i = 0; i < 8; i++)
        if (d->reserved[i])
            return fv__error(FV_ERR_BAD_PARAM, "%s: reserved[%d] must be zero", op, i);
    return FV_OK;
}

fv_status fv_source_open(const fv_source_desc *desc, fv_source **out) {
    if (!out) return fv__error(FV_ERR_BAD_PARAM, "source_open: out is NULL");
    *out = NULL;
    if (!desc) return fv__error(FV_ERR_BAD_PARAM, "source_open: desc is NULL");
    fv_status s = check_desc(desc);
    if (s != FV_OK) return s;
    const char *scheme = fv_source_scheme(desc->uri);
    if (!scheme)
        return fv__error(FV_ERR_BAD_PARAM,
                         "source_open: '%s': unknown scheme (v4l2://, csi://, gst://, file://, "
                         "test:// or a file path)",
                         desc->uri);
    fv_source *src = calloc(1, sizeof *src);
    char *uri = src ? strdup(desc->uri) : NULL;
    if (!uri) {
        free(src);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "source_open: out of host memory");
    }
    src->uri_copy = uri;
    src->desc = *desc;
    src->desc.uri = uri;
    if (src->desc.timeout_ms == 0) src->desc.timeout_ms = 2000;
    if (src->desc.buffers == 0) src->desc.buffers = src->desc.user_buffers ? 0 : 4;
    src->info.frames = -1;
    size_t n = scheme_len(uri);
    const char *arg = n ? uri + n + 3 : uri;
    if (desc->fourcc && strcmp(scheme, "v4l2") != 0) {
        s = fv__error(FV_ERR_BAD_PARAM, "source_open: '%s': fourcc is for v4l2:// only", uri);
    } else if (desc->user_buffers && strcmp(scheme, "v4l2") != 0) {
        s = fv__error(FV_ERR_NOT_SUPPORTED, "source_open: '%s': user_buffers are for v4l2:// only",
                      uri);
    } else if (desc->user_buffers && desc->buffers < 2) {
        s = fv__error(FV_ERR_BAD_PARAM,
                      "source_open: '%s': user_buffers needs buffers >= 2 (it is %d)", uri,
                      desc->buffers);
    } else if (strcmp(scheme, "v4l2") == 0) {
        s = fv__source_open_v4l2(src, arg);
    } else if (strcmp(scheme, "csi") == 0) {
        s = fv__source_open_csi(src, arg);
    } else if (strcmp(scheme, "gst") == 0) {
        s = fv__source_open_gst(src, arg);
    } else if (strcmp(scheme, "test") == 0) {
        s = fv__source_open_test(src, *arg == '?' ? arg + 1 : arg);
    } else if (!*arg) {
        s = fv__error(FV_ERR_BAD_PARAM, "source_open: '%s': no file path", uri);
    } else if (fv__is_video_path(arg)) {
        s = fv__source_open_video(src, arg);
    } else {
        s = fv__source_open_image(src, arg);
    }
    if (s != FV_OK) {
        free(src->uri_copy);
        free(src);
        return s;
    }
    *out = src;
    return FV_OK;
}

fv_status fv_source_capture(fv_source *src, uint32_t flags, fv_source_frame *out) {
    if (!src || !out)
        return fv__error(FV_ERR_BAD_PARAM, "source_capture: %s is NULL", src ? "out" : "src");
    if (flags & ~(uint32_t)FV_SOURCE_CAPTURE_LATEST)
        return fv__error(FV_ERR_BAD_PARAM, "source_capture: unknown flags 0x%x", (unsigned)flags);
    memset(out, 0, sizeof *out);
    out->buffer_index = -1;
    return src->ops->capture(src, flags, out);
}

fv_status fv_source_capture_into(fv_source *src, uint32_t flags, const fv_image *dst,
                                 fv_source_frame *out) {
    const char *op = "source_capture_into";
    if (!src || !dst || !out)
        return fv__error(FV_ERR_BAD_PARAM, "%s: %s is NULL", op,
                         !src   ? "src"
                         : !dst ? "dst"
                                : "out");
    const fv_source_info *i = &src->info;
    if (dst->format != i->format || dst->width != i->width || dst->height != i->height ||
        !dst->data)
        return fv__error(
            FV_ERR_BAD_PARAM, "%s: '%s': dst is %dx%d %s%s, but the source gives %dx%d %s", op,
            src->desc.uri, dst->width, dst->height, fv_pixel_format_name(dst->format),
            dst->data ? "" : " with no data", i->width, i->height, fv_pixel_format_name(i->format));
    int nv12 = i->format == FV_PIXEL_NV12;
    size_t row = nv12 ? (size_t)i->width : fv_image_bytes(i->format, i->width, 1);
    if (dst->stride && dst->stride < row)
        return fv__error(FV_ERR_BAD_PARAM, "%s: dst stride %zu < row of %zu bytes", op, dst->stride,
                         row);
    if (flags & ~(uint32_t)FV_SOURCE_CAPTURE_LATEST)
        return fv__error(FV_ERR_BAD_PARAM, "%s: unknown flags 0x%x", op, (unsigned)flags);
    memset(out, 0, sizeof *out);
    out->buffer_index = -1;
    fv_status s;
    if (src->ops->capture_into) {
        s = src->ops->capture_into(src, flags, dst, out);
    } else {
        s = src->ops->capture(src, flags, out);
        const fv_image *f = &out->image;
        if (s == FV_OK &&
            (f->format != i->format || f->width != i->width || f->height != i->height))
            s = fv__error(FV_ERR_FORMAT,
                          "%s: '%s': frame %dx%d %s, but the input opened as %dx%d %s", op,
                          src->desc.uri, f->width, f->height, fv_pixel_format_name(f->format),
                          i->width, i->height, fv_pixel_format_name(i->format));
        if (s == FV_OK) fv__copy_image(f, dst);
        out->image = *dst;
        out->buffer_index = -1;
    }
    if (s != FV_OK) return s;
    size_t stride = dst->stride ? dst->stride : row;
    out->image.stride = stride;
    out->bytes = stride * (size_t)i->height;
    if (nv12) {
        size_t uvs = dst->uv_stride ? dst->uv_stride : stride;
        out->bytes = dst->uv ? out->bytes : out->bytes + uvs * (size_t)(i->height / 2);
    }
    return FV_OK;
}

fv_status fv_source_info_get(const fv_source *src, fv_source_info *out) {
    if (!src || !out)
        return fv__error(FV_ERR_BAD_PARAM, "source_info_get: %s is NULL", src ? "out" : "src");
    *out = src->info;
    return FV_OK;
}

void fv_source_close(fv_source *src) {
    if (!src) return;
    if (src->ops && src->ops->close) src->ops->close(src);
    free(src->uri_copy);
    free(src);
}
