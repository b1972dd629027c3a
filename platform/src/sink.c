/* fv_sink: URI parsing, checks and dispatch to the scheme's backend. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "caption.h"
#include "io_internal.h"

static size_t scheme_len(const char *uri) {
    size_t n = 0;
    while (isalnum((unsigned char)uri[n]))
        n++;
    return n > 0 && strncmp(uri + n, "://", 3) == 0 ? n : 0;
}

static int out_format_ok(fv_pixel_format f) {
    return f == FV_PIXEL_GRAY8 || f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 ||
           f == FV_PIXEL_RGBA32;
}

fv_status fv_sink_open(const fv_sink_desc *desc, fv_sink **out) {
    const char *op = "sink_open";
    if (!out) return fv__error(FV_ERR_BAD_PARAM, "%s: out is NULL", op);
    *out = NULL;
    if (!desc) return fv__error(FV_ERR_BAD_PARAM, "%s: desc is NULL", op);
    const fv_sink_desc *d = desc;
    if (!d->uri || !*d->uri) return fv__error(FV_ERR_BAD_PARAM, "%s: uri is NULL or empty", op);
    if (d->width < 1 || d->height < 1 || d->width > 32768 || d->height > 32768)
        return fv__error(FV_ERR_BAD_PARAM, "%s: '%s': size %dx%d must be 1..32768", op, d->uri,
                         d->width, d->height);
    if (!out_format_ok(d->format))
        return fv__error(FV_ERR_BAD_PARAM,
                         "%s: '%s': format %s (%d): sinks take GRAY8, RGB24, BGR24 or RGBA32", op,
                         d->uri, fv_pixel_format_name(d->format), (int)d->format);
    if (!isfinite(d->rate) || d->rate < 0 || d->rate > 10000 || d->bitrate_kbps < 0)
        return fv__error(FV_ERR_BAD_PARAM,
                         "%s: '%s': rate %g must be in [0, 10000] and bitrate_kbps %d >= 0", op,
                         d->uri, d->rate, d->bitrate_kbps);
    if (d->text_overlay != 0 && d->text_overlay != 1)
        return fv__error(FV_ERR_BAD_PARAM, "%s: '%s': text_overlay=%d must be 0 or 1", op, d->uri,
                         d->text_overlay);
    for (int i = 0; i < 7; i++)
        if (d->reserved[i])
            return fv__error(FV_ERR_BAD_PARAM, "%s: reserved[%d] must be zero", op, i);
    size_t n = scheme_len(d->uri);
    const char *arg = n ? d->uri + n + 3 : d->uri;
    fv_sink *sink = calloc(1, sizeof *sink);
    char *uri = sink ? strdup(d->uri) : NULL;
    if (!uri) {
        free(sink);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    }
    sink->uri_copy = uri;
    sink->desc = *d;
    sink->desc.uri = uri;
    if (sink->desc.rate == 0) sink->desc.rate = 30;
    if (sink->desc.bitrate_kbps == 0) sink->desc.bitrate_kbps = 8000;
    arg = uri + (arg - d->uri);
    fv_status s;
    if (n == 7 && strncmp(uri, "display", 7) == 0) {
        s = fv__sink_open_display(sink, arg);
    } else if (n == 3 && strncmp(uri, "rtp", 3) == 0) {
        s = fv__sink_open_rtp(sink, arg);
    } else if (n == 4 && strncmp(uri, "null", 4) == 0) {
        s = fv__sink_open_null(sink);
    } else if (n == 0 || (n == 4 && strncmp(uri, "file", 4) == 0)) {
        if (!*arg)
            s = fv__error(FV_ERR_BAD_PARAM, "%s: '%s': no file path", op, uri);
        else if (fv__is_video_path(arg))
            s = fv__sink_open_video(sink, arg);
        else
            s = fv__sink_open_images(sink, arg);
    } else {
        s = fv__error(FV_ERR_BAD_PARAM,
                      "%s: '%s': unknown scheme (display://, file://, rtp://, null:// or a file "
                      "path)",
                      op, uri);
    }
    if (s != FV_OK) {
        free(sink->uri_copy);
        free(sink);
        return s;
    }
    /* asked for captions that the backend cannot draw (image files, a
     * GStreamer sink without textoverlay): fovea draws them where it was
     * built with Pango and Cairo; null:// shows nothing, so none there */
    if (d->text_overlay && !sink->info.text_overlay && strcmp(sink->info.kind, "null") != 0 &&
        fv__caption_available()) {
        /* a caption that cannot be made (no fonts, no memory for its frame
         * copy) leaves a working sink without captions, as info says */
        if (fv__caption_create(d->width, d->height, d->format, &sink->caption) == FV_OK)
            sink->info.text_overlay = 1;
        else
            fv__sink_log(sink, FV_LOG_WARN, "%s", fv_last_error());
    }
    *out = sink;
    return FV_OK;
}

fv_status fv_sink_write(fv_sink *sink, const fv_image *frame, int64_t timestamp_ns) {
    const char *op = "sink_write";
    if (!sink || !frame)
        return fv__error(FV_ERR_BAD_PARAM, "%s: %s is NULL", op, sink ? "frame" : "sink");
    const fv_sink_desc *d = &sink->desc;
    if (frame->format != d->format || frame->width != d->width || frame->height != d->height)
        return fv__error(FV_ERR_BAD_PARAM, "%s: '%s': frame %dx%d %s, but the sink takes %dx%d %s",
                         op, d->uri, frame->width, frame->height,
                         fv_pixel_format_name(frame->format), d->width, d->height,
                         fv_pixel_format_name(d->format));
    if (!frame->data)
        return fv__error(FV_ERR_BAD_PARAM, "%s: '%s': frame data is NULL", op, d->uri);
    fv_image f = *frame, drawn;
    if (f.stride == 0) f.stride = fv_image_bytes(f.format, f.width, 1);
    const fv_image *w = sink->caption ? fv__caption_apply(sink->caption, &f, &drawn) : &f;
    fv_status s = sink->ops->write(sink, w, timestamp_ns);
    if (s == FV_OK) sink->info.frames++;
    return s;
}

fv_status fv_sink_set_text(fv_sink *sink, const char *text) {
    const char *op = "sink_set_text";
    if (!sink || !text)
        return fv__error(FV_ERR_BAD_PARAM, "%s: %s is NULL", op, sink ? "text" : "sink");
    if (sink->caption) return fv__caption_set(sink->caption, text);
    if (!sink->info.text_overlay || !sink->ops->set_text)
        return fv__error(FV_ERR_NOT_SUPPORTED, "%s: '%s' draws no captions (%s)", op,
                         sink->desc.uri,
                         !sink->desc.text_overlay ? "opened without text_overlay"
                         : strcmp(sink->info.kind, "null") == 0
                             ? "null:// shows nothing"
                             : "no GStreamer textoverlay, and fovea built without Pango and Cairo "
                               "or no fonts found");
    return sink->ops->set_text(sink, text);
}

fv_status fv_sink_info_get(const fv_sink *sink, fv_sink_info *out) {
    if (!sink || !out)
        return fv__error(FV_ERR_BAD_PARAM, "sink_info_get: %s is NULL", sink ? "out" : "sink");
    *out = sink->info;
    return FV_OK;
}

fv_status fv_sink_close(fv_sink *sink) {
    if (!sink) return FV_OK;
    fv_status s = sink->ops && sink->ops->close ? sink->ops->close(sink) : FV_OK;
    fv__caption_destroy(sink->caption);
    free(sink->uri_copy);
    free(sink);
    return s;
}
