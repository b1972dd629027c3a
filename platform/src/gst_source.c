/* GStreamer sources: gst://<pipeline>, csi://N (Jetson nvarguscamerasrc) and
 * video files (filesrc ! decodebin). Every one ends in an appsink named
 * "sink" whose samples are mapped and handed out until the next capture. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>
#include "gst_internal.h"

typedef struct gst_src {
    GstElement *pipeline;
    GstElement *appsink;
    GstSample *sample; /* the frame handed out, mapped in frame */
    GstVideoFrame frame;
    int mapped;
    uint64_t dropped;
    int ended; /* EOS seen and not looped */
} gst_src;

/* The caps the appsink ends up with, or NULL. */
static GstCaps *sink_caps(gst_src *g) {
    GstPad *pad = gst_element_get_static_pad(g->appsink, "sink");
    GstCaps *caps = pad ? gst_pad_get_current_caps(pad) : NULL;
    if (pad) gst_object_unref(pad);
    return caps;
}

static void release_frame(gst_src *g) {
    if (g->mapped) gst_video_frame_unmap(&g->frame);
    g->mapped = 0;
    if (g->sample) gst_sample_unref(g->sample);
    g->sample = NULL;
}

static void gst_src_free(gst_src *g) {
    if (!g) return;
    release_frame(g);
    if (g->appsink) gst_object_unref(g->appsink);
    fv__gst_pipeline_free(g->pipeline);
    free(g);
}

static void close_gst(fv_source *src) {
    gst_src_free(src->impl);
    src->impl = NULL;
}

/* Fills src->info's format, size, rate and detail from negotiated caps. */
static fv_status info_from_caps(fv_source *src, GstCaps *caps, const char *op) {
    GstVideoInfo vi;
    gchar *text = gst_caps_to_string(caps);
    snprintf(src->info.detail, sizeof src->info.detail, "%s", text ? text : "");
    fv_status s = FV_OK;
    if (!gst_video_info_from_caps(&vi, caps)) {
        s = fv__error(FV_ERR_NOT_SUPPORTED, "%s: '%s': the appsink got caps '%s', not raw video",
                      op, src->desc.uri, text ? text : "?");
    } else {
        const char *name = gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&vi));
        src->info.format = fv__gst_format_from_name(name);
        src->info.width = GST_VIDEO_INFO_WIDTH(&vi);
        src->info.height = GST_VIDEO_INFO_HEIGHT(&vi);
        src->info.rate = vi.fps_n > 0 && vi.fps_d > 0 ? (double)vi.fps_n / (double)vi.fps_d : 0.0;
        if (!src->info.format)
            s = fv__error(FV_ERR_NOT_SUPPORTED,
                          "%s: '%s': the appsink got format %s; fovea takes RGB, BGR, GRAY8, "
                          "RGBA, YUY2, UYVY or NV12 (caps '%s')",
                          op, src->desc.uri, name ? name : "?", text ? text : "?");
    }
    g_free(text);
    return s;
}

/* ", width=W, height=H" and ", framerate=N/D" as the desc asks. */
static void caps_fields(const fv_source_desc *d, char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    if (d->width > 0)
        k += (size_t)snprintf(buf + k, n - k, ",width=%d,height=%d", d->width, d->height);
    if (d->rate > 0 && k < n) {
        gint num = 0, den = 1;
        gst_util_double_to_fraction(d->rate, &num, &den);
        snprintf(buf + k, n - k, ",framerate=%d/%d", num, den);
    }
}

static const fv__source_ops gst_ops;

/* Parses text (which must hold an appsink named "sink", or be completed
 * with one when append), plays it and waits for the negotiated caps. */
static fv_status open_pipeline(fv_source *src, const char *op, const char *text, int append,
                               const char *location, gst_src **out) {
    *out = NULL;
    const fv_source_desc *d = &src->desc;
    const char *uri = d->uri;
    gst_src *g = calloc(1, sizeof *g);
    if (!g) return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: '%s': out of host memory", op, uri);
    fv_status s = FV_OK;
    if (!append || strstr(text, "appsink")) {
        s = fv__gst_parse(op, uri, text, &g->pipeline);
        if (append && s == FV_OK) {
            GstElement *e = gst_bin_get_by_name(GST_BIN(g->pipeline), "sink");
            if (e && GST_IS_APP_SINK(e))
                g->appsink = e;
            else if (e)
                gst_object_unref(e);
        }
    }
    if (append && !g->appsink) {
        /* Not ending in our appsink (or not parsing alone, e.g. ending in
         * caps): add the conversion and the appsink. */
        fv__gst_pipeline_free(g->pipeline);
        g->pipeline = NULL;
        char fields[96];
        caps_fields(d, fields, sizeof fields);
        const char *fmt = fv__gst_format_name(d->format ? d->format : FV_PIXEL_RGB24);
        gchar *full =
            g_strdup_printf("%s ! videoconvert%s%s ! video/x-raw,format=%s%s ! appsink name=sink "
                            "max-buffers=4 drop=false sync=false",
                            text, d->width > 0 ? " ! videoscale" : "",
                            d->rate > 0 ? " ! videorate" : "", fmt, fields);
        s = fv__gst_parse(op, uri, full, &g->pipeline);
        g_free(full);
    }
    if (s == FV_OK && !g->appsink) {
        GstElement *e = gst_bin_get_by_name(GST_BIN(g->pipeline), "sink");
        if (!e || !GST_IS_APP_SINK(e)) {
            if (e) gst_object_unref(e);
            s = fv__error(FV_ERR_INTERNAL, "%s: '%s': no appsink named \"sink\" in the pipeline",
                          op, uri);
        } else {
            g->appsink = e;
        }
    }
    if (s == FV_OK && location) {
        GstElement *fs = gst_bin_get_by_name(GST_BIN(g->pipeline), "src");
        if (fs) {
            g_object_set(fs, "location", location, NULL);
            gst_object_unref(fs);
        }
    }
    if (s == FV_OK &&
        gst_element_set_state(g->pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        s = fv__gst_bus_poll(g->pipeline, 0, op, uri, NULL, NULL);
        if (s == FV_OK)
            s = fv__error(FV_ERR_IO, "%s: '%s': the pipeline would not start (PLAYING failed)", op,
                          uri);
    }
    /* Negotiation: wait for the appsink's caps, watching the bus. */
    int64_t deadline = fv__now_ns() + (int64_t)d->timeout_ms * 1000000;
    GstCaps *caps = NULL;
    while (s == FV_OK && !(caps = sink_caps(g))) {
        int eos = 0;
        s = fv__gst_bus_poll(g->pipeline, 5 * GST_MSECOND, op, uri, &eos, NULL);
        if (s == FV_OK && eos)
            s = fv__error(FV_ERR_IO, "%s: '%s': the stream ended before its first frame", op, uri);
        if (s == FV_OK && fv__now_ns() > deadline)
            s = fv__error(FV_ERR_TIMEOUT,
                          "%s: '%s': no frame format negotiated within timeout_ms %d", op, uri,
                          d->timeout_ms);
    }
    if (s == FV_OK) s = info_from_caps(src, caps, op);
    if (caps) gst_caps_unref(caps);
    if (s != FV_OK) {
        gst_src_free(g);
        return s;
    }
    src->ops = &gst_ops;
    src->impl = g;
    *out = g;
    return FV_OK;
}

fv_status fv__source_open_gst(fv_source *src, const char *pipeline) {
    const char *op = "source_open gst://";
    fv_status s = fv__gst_init(op);
    if (s != FV_OK) return s;
    if (!*pipeline)
        return fv__error(FV_ERR_BAD_PARAM, "%s: '%s': empty pipeline", op, src->desc.uri);
    gst_src *g;
    s = open_pipeline(src, op, pipeline, 1, NULL, &g);
    if (s != FV_OK) return s;
    snprintf(src->info.kind, sizeof src->info.kind, "gst");
    snprintf(src->info.name, sizeof src->info.name, "%s", pipeline);
    return FV_OK;
}

fv_status fv__source_open_csi(fv_source *src, const char *sensor) {
    const char *op = "source_open csi://";
    const fv_source_desc *d = &src->desc;
    fv_status s = fv__gst_init(op);
    if (s != FV_OK) return s;
    char *end = NULL;
    long id = strtol(sensor, &end, 10);
    if (!*sensor || *end || id < 0 || id > 255)
        return fv__error(FV_ERR_BAD_PARAM, "%s: '%s': sensor id '%s' must be a number 0..255", op,
                         d->uri, sensor);
    if (!fv__gst_have("nvarguscamerasrc"))
        return fv__error(FV_ERR_NOT_SUPPORTED,
                         "%s: '%s': csi:// needs nvarguscamerasrc (a Jetson with JetPack's "
                         "GStreamer plugins); not found on this machine",
                         op, d->uri);
    int w = d->width ? d->width : 1280, h = d->height ? d->height : 720;
    gint num = 30, den = 1;
    if (d->rate > 0) gst_util_double_to_fraction(d->rate, &num, &den);
    fv_pixel_format f = d->format ? d->format : FV_PIXEL_RGB24;
    /* nvvidconv gives RGBA, BGRx, GRAY8, NV12, YUY2, UYVY; RGB and BGR go
     * through BGRx and videoconvert. */
    int packed3 = f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24;
    gchar *text = g_strdup_printf(
        "nvarguscamerasrc sensor-id=%ld ! video/x-raw(memory:NVMM),width=%d,height=%d,"
        "framerate=%d/%d ! nvvidconv ! video/x-raw,format=%s%s%s ! appsink name=sink "
        "max-buffers=2 drop=false sync=false",
        id, w, h, num, den, packed3 ? "BGRx" : fv__gst_format_name(f),
        packed3 ? " ! videoconvert ! video/x-raw,format=" : "",
        packed3 ? fv__gst_format_name(f) : "");
    gst_src *g;
    s = open_pipeline(src, op, text, 0, NULL, &g);
    g_free(text);
    if (s != FV_OK) return s;
    snprintf(src->info.kind, sizeof src->info.kind, "csi");
    snprintf(src->info.name, sizeof src->info.name, "nvarguscamerasrc sensor-id=%ld", id);
    return FV_OK;
}

fv_status fv__source_open_video(fv_source *src, const char *path) {
    const char *op = "source_open video";
    const fv_source_desc *d = &src->desc;
    struct stat st;
    if (stat(path, &st) != 0)
        return fv__error(FV_ERR_IO, "%s: '%s': cannot open '%s': %s", op, d->uri, path,
                         strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fv__error(FV_ERR_IO, "%s: '%s': '%s' is not a regular file", op, d->uri, path);
    fv_status s = fv__gst_init(op);
    if (s != FV_OK) return s;
    char fields[96];
    caps_fields(d, fields, sizeof fields);
    fv_pixel_format f = d->format ? d->format : FV_PIXEL_RGB24;
    /* The path is set as a property, never parsed: any name works. */
    gchar *text =
        g_strdup_printf("filesrc name=src ! decodebin ! videoconvert%s%s ! "
                        "video/x-raw,format=%s%s ! appsink name=sink max-buffers=4 "
                        "drop=false sync=false",
                        d->width > 0 ? " ! videoscale" : "", d->rate > 0 ? " ! videorate" : "",
                        fv__gst_format_name(f), fields);
    gst_src *g;
    s = open_pipeline(src, op, text, 0, path, &g);
    g_free(text);
    if (s != FV_OK) return s;
    snprintf(src->info.kind, sizeof src->info.kind, "video");
    snprintf(src->info.name, sizeof src->info.name, "%s", path);
    gint64 dur = 0;
    src->info.frames = -1;
    if (src->info.rate > 0 && gst_element_query_duration(g->pipeline, GST_FORMAT_TIME, &dur) &&
        dur > 0)
        src->info.frames = (int64_t)llround((double)dur * src->info.rate / 1e9);
    return FV_OK;
}

/* Pulls one sample, waiting up to timeout_ns in slices while watching the
 * bus. NULL with *s FV_OK on timeout or end of stream (*eos set). */
static GstSample *pull(fv_source *src, gst_src *g, int64_t timeout_ns, int *eos, fv_status *s) {
    const char *op = "source_capture";
    int64_t deadline = fv__now_ns() + timeout_ns;
    *s = FV_OK;
    for (;;) {
        int64_t left = deadline - fv__now_ns();
        if (left < 0) left = 0;
        GstClockTime slice = (GstClockTime)(left < 50000000 ? left : 50000000);
        GstSample *smp = gst_app_sink_try_pull_sample(GST_APP_SINK(g->appsink), slice);
        if (smp) return smp;
        *s = fv__gst_bus_poll(g->pipeline, 0, op, src->desc.uri, NULL, NULL);
        if (*s != FV_OK) return NULL;
        if (gst_app_sink_is_eos(GST_APP_SINK(g->appsink))) {
            *eos = 1;
            return NULL;
        }
        if (left == 0) return NULL;
    }
}

static fv_status capture_gst(fv_source *src, uint32_t flags, fv_source_frame *out) {
    const char *op = "source_capture";
    gst_src *g = src->impl;
    const char *uri = src->desc.uri;
    release_frame(g);
    if (g->ended) return fv__error(FV_ERR_END_OF_STREAM, "%s: '%s': the stream has ended", op, uri);
    fv_status s = FV_OK;
    GstSample *smp = NULL;
    int eos = 0;
    if (flags & FV_SOURCE_CAPTURE_LATEST) {
        /* Everything already waiting: keep the newest. */
        GstSample *next;
        while ((next = gst_app_sink_try_pull_sample(GST_APP_SINK(g->appsink), 0))) {
            if (smp) {
                gst_sample_unref(smp);
                g->dropped++;
            }
            smp = next;
        }
    }
    int looped = 0;
    while (!smp) {
        eos = 0;
        smp = pull(src, g, (int64_t)src->desc.timeout_ms * 1000000, &eos, &s);
        if (s != FV_OK) return s;
        if (smp) break;
        if (!eos)
            return fv__error(FV_ERR_TIMEOUT, "%s: '%s': no frame within timeout_ms %d", op, uri,
                             src->desc.timeout_ms);
        if (!src->desc.loop || looped) {
            g->ended = 1;
            return fv__error(FV_ERR_END_OF_STREAM, "%s: '%s': end of stream after %llu frames", op,
                             uri, (unsigned long long)src->sequence);
        }
        /* loop: back to the start (a flushing seek clears the EOS). */
        looped = 1;
        if (!gst_element_seek_simple(g->pipeline, GST_FORMAT_TIME,
                                     GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_KEY_UNIT, 0))
            return fv__error(FV_ERR_IO, "%s: '%s': loop: seeking to the start failed", op, uri);
        fv__source_log(src, FV_LOG_DEBUG, "%s: '%s': end of stream, looping", op, uri);
    }
    int64_t now = fv__now_ns();
    GstCaps *caps = gst_sample_get_caps(smp);
    GstBuffer *buf = gst_sample_get_buffer(smp);
    GstVideoInfo vi;
    if (!caps || !buf || !gst_video_info_from_caps(&vi, caps)) {
        gst_sample_unref(smp);
        return fv__error(FV_ERR_FORMAT, "%s: '%s': a sample without raw video caps or buffer", op,
                         uri);
    }
    fv_pixel_format f =
        fv__gst_format_from_name(gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&vi)));
    if (!f || !gst_video_frame_map(&g->frame, &vi, buf, GST_MAP_READ)) {
        gst_sample_unref(smp);
        return fv__error(f ? FV_ERR_FORMAT : FV_ERR_NOT_SUPPORTED,
                         "%s: '%s': cannot map a %dx%d %s frame (%zu bytes)", op, uri,
                         GST_VIDEO_INFO_WIDTH(&vi), GST_VIDEO_INFO_HEIGHT(&vi),
                         gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&vi)),
                         gst_buffer_get_size(buf));
    }
    g->sample = smp;
    g->mapped = 1;
    GstVideoFrame *vf = &g->frame;
    out->image.format = f;
    out->image.width = GST_VIDEO_FRAME_WIDTH(vf);
    out->image.height = GST_VIDEO_FRAME_HEIGHT(vf);
    out->image.data = GST_VIDEO_FRAME_PLANE_DATA(vf, 0);
    out->image.stride = (size_t)GST_VIDEO_FRAME_PLANE_STRIDE(vf, 0);
    /* Bytes from the first plane to the end of its mapping (both planes
     * when NV12 lies in one memory, as it does from videoconvert). */
    const guint8 *base = vf->map[0].data;
    out->bytes = vf->map[0].size - (size_t)((const guint8 *)out->image.data - base);
    if (f == FV_PIXEL_NV12) {
        out->image.uv = GST_VIDEO_FRAME_PLANE_DATA(vf, 1);
        out->image.uv_stride = (size_t)GST_VIDEO_FRAME_PLANE_STRIDE(vf, 1);
    }
    if (f != src->info.format || out->image.width != src->info.width ||
        out->image.height != src->info.height) {
        /* Renegotiated mid-stream (a pipeline's own appsink): follow it. */
        info_from_caps(src, caps, op);
    }
    out->timestamp_ns = now;
    out->sequence = src->sequence++;
    out->dropped = g->dropped;
    out->buffer_index = -1;
    return FV_OK;
}

static const fv__source_ops gst_ops = {capture_gst, close_gst, NULL};
