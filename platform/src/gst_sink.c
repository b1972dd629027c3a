/* GStreamer sinks: H.264 video files (file://out.mp4, .mkv), RTP
 * (rtp://host:port) and a window (display://N), each fed through an appsrc
 * with frames copied into GstBuffers. */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gst/app/gstappsrc.h>
#include "gst_internal.h"

/* Longest close() waits for the end of stream to reach the file. */
#define FINISH_NS (10 * GST_SECOND)
/* Longest a write waits for the pipeline to take a frame. */
#define STALL_NS (10 * GST_SECOND)

typedef struct gst_snk {
    GstElement *pipeline;
    GstElement *appsrc;
    GstElement *caption; /* textoverlay, or NULL */
    size_t row_bytes, frame_bytes;
    uint64_t n;          /* frames pushed */
    int64_t first_ts;    /* timestamp_ns of the first frame */
    GstClockTime last;   /* PTS of the last frame */
    GstClockTime period; /* 1 / rate */
    fv_status failed;    /* sticky: an error already reported */
    int display;         /* a window: closed -> FV_ERR_END_OF_STREAM */
    /* video files: written to partial, renamed to path once finished */
    char *path, *partial;
} gst_snk;

static void snk_free(gst_snk *g) {
    if (!g) return;
    free(g->path);
    free(g->partial);
    if (g->appsrc) gst_object_unref(g->appsrc);
    if (g->caption) gst_object_unref(g->caption);
    fv__gst_pipeline_free(g->pipeline);
    free(g);
}

/* Reads the bus without waiting (or up to wait_ns); maps a closed window to
 * FV_ERR_END_OF_STREAM and remembers the first error. */
static fv_status check_bus(fv_sink *sink, gst_snk *g, GstClockTime wait_ns, const char *op,
                           int *eos_out) {
    int eos = 0, closed = 0;
    fv_status s = fv__gst_bus_poll(g->pipeline, wait_ns, op, sink->desc.uri, &eos, &closed);
    if (eos_out) *eos_out = eos;
    if (g->display && (closed || (s == FV_OK && eos)))
        s = fv__error(FV_ERR_END_OF_STREAM, "%s: '%s': the display window was closed", op,
                      sink->desc.uri);
    if (s != FV_OK && g->failed == FV_OK) g->failed = s;
    return s;
}

static fv_status write_gst(fv_sink *sink, const fv_image *frame, int64_t timestamp_ns) {
    const char *op = "sink_write";
    gst_snk *g = sink->impl;
    const char *uri = sink->desc.uri;
    if (g->failed != FV_OK)
        return fv__error(g->failed, "%s: '%s': the pipeline failed earlier (%s)", op, uri,
                         fv_status_name(g->failed));
    fv_status s = check_bus(sink, g, 0, op, NULL);
    if (s != FV_OK) return s;
    GstBuffer *buf = gst_buffer_new_allocate(NULL, g->frame_bytes, NULL);
    GstMapInfo map;
    if (!buf || !gst_buffer_map(buf, &map, GST_MAP_WRITE)) {
        if (buf) gst_buffer_unref(buf);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: '%s': no GstBuffer of %zu bytes", op, uri,
                         g->frame_bytes);
    }
    const unsigned char *row = frame->data;
    for (int y = 0; y < frame->height; y++, row += frame->stride)
        memcpy(map.data + (size_t)y * g->row_bytes, row, g->row_bytes);
    gst_buffer_unmap(buf, &map);
    /* PTS: the caller's clock relative to the first frame; 0 (or a clock
     * that does not advance by a millisecond) gives one period per frame. */
    GstClockTime pts;
    if (g->n == 0) {
        pts = 0;
        g->first_ts = timestamp_ns;
    } else if (timestamp_ns > 0 && g->first_ts > 0 && timestamp_ns > g->first_ts &&
               (GstClockTime)(timestamp_ns - g->first_ts) >= g->last + GST_MSECOND) {
        pts = (GstClockTime)(timestamp_ns - g->first_ts);
    } else {
        pts = g->last + g->period;
    }
    GST_BUFFER_PTS(buf) = pts;
    GST_BUFFER_DURATION(buf) = g->period;
    g->last = pts;
    g->n++;
    GstFlowReturn fr = gst_app_src_push_buffer(GST_APP_SRC(g->appsrc), buf);
    if (fr != GST_FLOW_OK) {
        s = check_bus(sink, g, 100 * GST_MSECOND, op, NULL);
        if (s == FV_OK)
            s = g->failed = fv__error(FV_ERR_IO, "%s: '%s': the pipeline refused frame %llu (%s)",
                                      op, uri, (unsigned long long)g->n, gst_flow_get_name(fr));
        return s;
    }
    /* Back-pressure: at most a few frames queued in the appsrc. */
    int64_t deadline = fv__now_ns() + (int64_t)STALL_NS;
    while (gst_app_src_get_current_level_bytes(GST_APP_SRC(g->appsrc)) > 4 * g->frame_bytes) {
        s = check_bus(sink, g, 2 * GST_MSECOND, op, NULL);
        if (s != FV_OK) return s;
        if (fv__now_ns() > deadline)
            return g->failed = fv__error(FV_ERR_IO, "%s: '%s': the pipeline took no frame for %d s",
                                         op, uri, (int)(STALL_NS / GST_SECOND));
    }
    return FV_OK;
}

static fv_status close_gst(fv_sink *sink) {
    const char *op = "sink_close";
    gst_snk *g = sink->impl;
    fv_status s = g->failed;
    if (s == FV_OK && gst_app_src_end_of_stream(GST_APP_SRC(g->appsrc)) != GST_FLOW_OK)
        s = fv__error(FV_ERR_IO, "%s: '%s': could not send the end of stream", op, sink->desc.uri);
    /* Wait for the EOS to pass the muxer and reach the sink: the file's
     * index (mp4 moov) is written then. */
    int64_t deadline = fv__now_ns() + (int64_t)FINISH_NS;
    while (s == FV_OK) {
        int eos = 0;
        s = check_bus(sink, g, 50 * GST_MSECOND, op, &eos);
        if (s != FV_OK || eos) break;
        if (fv__now_ns() > deadline)
            s = fv__error(FV_ERR_IO, "%s: '%s': the end of stream did not arrive within %d s", op,
                          sink->desc.uri, (int)(FINISH_NS / GST_SECOND));
    }
    if (g->display && s == FV_ERR_END_OF_STREAM) s = FV_OK; /* closed by the user: fine */
    if (g->partial) {
        /* stop the pipeline first: filesink closes the file */
        fv__gst_pipeline_free(g->pipeline);
        g->pipeline = NULL;
        if (s == FV_OK && rename(g->partial, g->path) != 0)
            s = fv__error(FV_ERR_IO, "%s: '%s': renaming '%s' to '%s' failed: %s", op,
                          sink->desc.uri, g->partial, g->path, strerror(errno));
        if (s != FV_OK) unlink(g->partial); /* the file at path stays as it was */
    }
    snk_free(g);
    sink->impl = NULL;
    return s;
}

static fv_status set_text_gst(fv_sink *sink, const char *text) {
    gst_snk *g = sink->impl;
    g_object_set(g->caption, "text", text, NULL); /* the element takes it between buffers */
    return FV_OK;
}

static const fv__sink_ops gst_sink_ops = {write_gst, close_gst, set_text_gst};

/* Builds "appsrc name=src ! <tail>", sets the appsrc's caps and plays. */
static fv_status open_appsrc(fv_sink *sink, const char *op, const char *tail, const char *location,
                             int display, gst_snk **made) {
    const fv_sink_desc *d = &sink->desc;
    gst_snk *g = calloc(1, sizeof *g);
    if (!g) return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: '%s': out of host memory", op, d->uri);
    g->display = display;
    g->row_bytes = fv_image_bytes(d->format, d->width, 1);
    g->frame_bytes = g->row_bytes * (size_t)d->height;
    gint num = 30, den = 1;
    gst_util_double_to_fraction(d->rate, &num, &den);
    g->period = gst_util_uint64_scale_int(GST_SECOND, den, num);
    /* captions: textoverlay on the raw frames, ahead of the tail */
    int caption = d->text_overlay && fv__gst_have("textoverlay");
    gchar *text = g_strdup_printf("appsrc name=src ! %s%s",
                                  caption ? "videoconvert ! textoverlay name=caption "
                                            "valignment=top halignment=left line-alignment=left "
                                            "shaded-background=true "
                                            "font-desc=\"Sans 18\" ! "
                                          : "",
                                  tail);
    fv_status s = fv__gst_parse(op, d->uri, text, &g->pipeline);
    g_free(text);
    if (s == FV_OK) {
        g->appsrc = gst_bin_get_by_name(GST_BIN(g->pipeline), "src");
        if (caption) g->caption = gst_bin_get_by_name(GST_BIN(g->pipeline), "caption");
        GstCaps *caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING,
                                            fv__gst_format_name(d->format), "width", G_TYPE_INT,
                                            d->width, "height", G_TYPE_INT, d->height, "framerate",
                                            GST_TYPE_FRACTION, num, den, NULL);
        g_object_set(g->appsrc, "caps", caps, "format", GST_FORMAT_TIME, "is-live", FALSE, "block",
                     FALSE, NULL);
        gst_caps_unref(caps);
        if (location) {
            GstElement *fs = gst_bin_get_by_name(GST_BIN(g->pipeline), "out");
            g_object_set(fs, "location", location, NULL);
            gst_object_unref(fs);
        }
        if (gst_element_set_state(g->pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
            s = fv__gst_bus_poll(g->pipeline, 0, op, d->uri, NULL, NULL);
            if (s == FV_OK)
                s = fv__error(FV_ERR_IO, "%s: '%s': the pipeline would not start", op, d->uri);
            else if (s != FV_ERR_IO) { /* e.g. filesink cannot open the file */
                char msg[512];
                snprintf(msg, sizeof msg, "%s", fv_last_error());
                s = fv__error(FV_ERR_IO, "%s", msg);
            }
        }
    }
    if (s != FV_OK) {
        snk_free(g);
        return s;
    }
    sink->ops = &gst_sink_ops;
    sink->impl = g;
    if (made) *made = g;
    sink->info.text_overlay = g->caption != NULL;
    return FV_OK;
}

/* The H.264 encoder chain "convert ! encoder" for this machine, or NULL
 * with the error recorded. name: the encoder element. */
static gchar *h264_chain(const fv_sink *sink, const char *op, int rtp, const char **name) {
    const fv_sink_desc *d = &sink->desc;
    int kbps = d->bitrate_kbps;
    int gop =
        rtp ? (int)(d->rate / 2 > 1 ? d->rate / 2 : 1) : (int)(d->rate * 4 > 1 ? d->rate * 4 : 1);
    if (fv__gst_have("nvv4l2h264enc") && fv__gst_have("nvvidconv")) {
        *name = "nvv4l2h264enc";
        return g_strdup_printf("videoconvert ! video/x-raw,format=RGBA ! nvvidconv ! "
                               "video/x-raw(memory:NVMM),format=NV12 ! nvv4l2h264enc "
                               "bitrate=%d iframeinterval=%d insert-sps-pps=true",
                               kbps * 1000, gop);
    }
    if (fv__gst_have("x264enc")) {
        *name = "x264enc";
        return g_strdup_printf("videoconvert ! video/x-raw,format=I420 ! x264enc "
                               "speed-preset=ultrafast tune=zerolatency bitrate=%d key-int-max=%d",
                               kbps, gop);
    }
    if (fv__gst_have("openh264enc")) {
        *name = "openh264enc";
        return g_strdup_printf("videoconvert ! video/x-raw,format=I420 ! openh264enc "
                               "bitrate=%d gop-size=%d",
                               kbps * 1000, gop);
    }
    fv__error(FV_ERR_NOT_SUPPORTED,
              "%s: '%s': no H.264 encoder (nvv4l2h264enc, x264enc or openh264enc): install "
              "gstreamer1.0-plugins-ugly (x264enc) or gstreamer1.0-plugins-bad (openh264enc)",
              op, d->uri);
    return NULL;
}

static fv_status need(const fv_sink *sink, const char *op, const char *const *factories) {
    for (; *factories; factories++)
        if (!fv__gst_have(*factories))
            return fv__error(FV_ERR_NOT_SUPPORTED,
                             "%s: '%s': GStreamer element %s is not installed "
                             "(toolchain/install-deps.sh installs the plugins fovea uses)",
                             op, sink->desc.uri, *factories);
    return FV_OK;
}

fv_status fv__sink_open_video(fv_sink *sink, const char *path) {
    const char *op = "sink_open video";
    fv_status s = fv__gst_init(op);
    if (s != FV_OK) return s;
    const char *dot = strrchr(path, '.');
    const char *mux = NULL;
    if (dot && strcasecmp(dot, ".mp4") == 0) mux = "mp4mux";
    if (dot && (strcasecmp(dot, ".mkv") == 0 || strcasecmp(dot, ".webm") == 0))
        mux = strcasecmp(dot, ".webm") == 0 ? NULL : "matroskamux";
    if (dot && (strcasecmp(dot, ".mov") == 0 || strcasecmp(dot, ".m4v") == 0)) mux = "qtmux";
    if (dot && strcasecmp(dot, ".ts") == 0) mux = "mpegtsmux";
    if (!mux)
        return fv__error(FV_ERR_NOT_SUPPORTED,
                         "%s: '%s': H.264 goes into .mp4, .mkv, .mov, .m4v or .ts; not '%s'", op,
                         sink->desc.uri, dot ? dot : path);
    const char *const needed[] = {"appsrc", "videoconvert", "h264parse", mux, "filesink", NULL};
    if ((s = need(sink, op, needed)) != FV_OK) return s;
    const char *enc = NULL;
    gchar *chain = h264_chain(sink, op, 0, &enc);
    if (!chain) return FV_ERR_NOT_SUPPORTED;
    /* MP4/MOV fragmented (a moof every second): a recording cut short
     * (SIGKILL, power, a full disk) plays up to its last fragment, where a
     * plain MP4 without its closing moov plays nothing. */
    int frag = !strcmp(mux, "mp4mux") || !strcmp(mux, "qtmux");
    gchar *tail = g_strdup_printf("%s ! h264parse ! %s%s ! filesink name=out", chain, mux,
                                  frag ? " fragment-duration=1000" : "");
    /* Written beside path as STEM.part-PID.EXT, renamed to path when
     * finished: a failed run leaves an earlier file at path as it was, two
     * writers each finish their own file, and a killed run's partial file
     * (still a playable .EXT) is left for the user. */
    size_t stem = (size_t)(dot - path);
    size_t cap = strlen(path) + 32;
    char *partial = malloc(cap), *final_path = strdup(path);
    if (!partial || !final_path) {
        free(partial), free(final_path), g_free(tail), g_free(chain);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    }
    snprintf(partial, cap, "%.*s.part-%ld%s", (int)stem, path, (long)getpid(), dot);
    gst_snk *g = NULL;
    s = open_appsrc(sink, op, tail, partial, 0, &g);
    g_free(tail);
    g_free(chain);
    if (s != FV_OK) {
        unlink(partial);
        free(partial), free(final_path);
        return s;
    }
    g->partial = partial;
    g->path = final_path;
    snprintf(sink->info.kind, sizeof sink->info.kind, "video");
    snprintf(sink->info.name, sizeof sink->info.name, "%s", path);
    snprintf(sink->info.detail, sizeof sink->info.detail, "H.264 (%s, %d kbps) in %s", enc,
             sink->desc.bitrate_kbps, mux);
    return FV_OK;
}

fv_status fv__sink_open_rtp(fv_sink *sink, const char *host_port) {
    const char *op = "sink_open rtp://";
    const char *uri = sink->desc.uri;
    /* host:port, or [v6]:port */
    char host[256];
    const char *colon = strrchr(host_port, ':');
    const char *h = host_port;
    size_t hn = colon ? (size_t)(colon - host_port) : 0;
    if (hn >= 2 && h[0] == '[' && h[hn - 1] == ']') h++, hn -= 2;
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    int ok = colon && hn > 0 && hn < sizeof host && end != colon + 1 && !*end && port >= 1 &&
             port <= 65535;
    for (size_t i = 0; ok && i < hn; i++)
        if (!isalnum((unsigned char)h[i]) && !strchr(".-:_", h[i])) ok = 0;
    if (!ok)
        return fv__error(FV_ERR_BAD_PARAM,
                         "%s: '%s': '%s' is not host:port (a host name or address, and a port "
                         "1..65535)",
                         op, uri, host_port);
    memcpy(host, h, hn);
    host[hn] = 0;
    /* Resolved here, once: a host that does not resolve is an error now,
     * not a stream of packets silently never sent. udpsink gets the
     * numeric address. */
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    int gai = getaddrinfo(host, NULL, &hints, &ai);
    if (gai != 0 || !ai)
        return fv__error(FV_ERR_IO, "%s: '%s': host '%s' does not resolve to an address: %s", op,
                         uri, host, gai ? gai_strerror(gai) : "no address");
    char addr[NI_MAXHOST];
    gai = getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, sizeof addr, NULL, 0, NI_NUMERICHOST);
    freeaddrinfo(ai);
    if (gai != 0)
        return fv__error(FV_ERR_IO, "%s: '%s': host '%s': %s", op, uri, host, gai_strerror(gai));
    fv_status s = fv__gst_init(op);
    if (s != FV_OK) return s;
    const char *const needed[] = {"appsrc", "videoconvert", "rtph264pay", "udpsink", NULL};
    if ((s = need(sink, op, needed)) != FV_OK) return s;
    const char *enc = NULL;
    gchar *chain = h264_chain(sink, op, 1, &enc);
    if (!chain) return FV_ERR_NOT_SUPPORTED;
    /* name=net: its send errors (warnings on the bus) fail the sink */
    gchar *tail = g_strdup_printf("%s ! rtph264pay config-interval=1 pt=96 ! udpsink name=net "
                                  "host=%s port=%ld sync=false async=false",
                                  chain, addr, port);
    s = open_appsrc(sink, op, tail, NULL, 0, NULL);
    g_free(tail);
    g_free(chain);
    if (s != FV_OK) return s;
    snprintf(sink->info.kind, sizeof sink->info.kind, "rtp");
    if (strcmp(host, addr) != 0)
        snprintf(sink->info.name, sizeof sink->info.name, "%.100s (%.60s):%ld", host, addr, port);
    else
        snprintf(sink->info.name, sizeof sink->info.name, "%.200s:%ld", host, port);
    snprintf(sink->info.detail, sizeof sink->info.detail,
             "H.264 (%s, %d kbps) over RTP/UDP, payload 96", enc, sink->desc.bitrate_kbps);
    return FV_OK;
}

fv_status fv__sink_open_display(fv_sink *sink, const char *display) {
    const char *op = "sink_open display://";
    const char *x = getenv("DISPLAY"), *w = getenv("WAYLAND_DISPLAY");
    if ((!x || !*x) && (!w || !*w))
        return fv__error(FV_ERR_NOT_SUPPORTED,
                         "%s: '%s': no display (DISPLAY and WAYLAND_DISPLAY unset): use "
                         "file://out.mp4 or rtp://host:port",
                         op, sink->desc.uri);
    char *end = NULL;
    long idx = *display ? strtol(display, &end, 10) : 0;
    if (*display && (*end || idx < 0))
        return fv__error(FV_ERR_BAD_PARAM, "%s: '%s': display '%s' must be a number", op,
                         sink->desc.uri, display);
    fv_status s = fv__gst_init(op);
    if (s != FV_OK) return s;
    const char *const needed[] = {"appsrc", "videoconvert", "autovideosink", NULL};
    if ((s = need(sink, op, needed)) != FV_OK) return s;
    /* autovideosink tries sinks by rank; when the X/Wayland sinks cannot
     * open the display it reaches DirectFB's dfbvideosink, which crashes the
     * process (libfusion) outside a DirectFB console. Never pick it. */
    GstElementFactory *dfb = gst_element_factory_find("dfbvideosink");
    if (dfb) {
        gst_plugin_feature_set_rank(GST_PLUGIN_FEATURE(dfb), GST_RANK_NONE);
        gst_object_unref(dfb);
    }
    s = open_appsrc(sink, op, "videoconvert ! autovideosink sync=false", NULL, 1, NULL);
    if (s != FV_OK) return s;
    snprintf(sink->info.kind, sizeof sink->info.kind, "display");
    snprintf(sink->info.name, sizeof sink->info.name, "%s", w && *w ? w : x);
    snprintf(sink->info.detail, sizeof sink->info.detail, "autovideosink");
    if (idx > 0)
        fv__sink_log(sink, FV_LOG_WARN,
                     "%s: '%s': autovideosink opens its window on the default screen", op,
                     sink->desc.uri);
    return FV_OK;
}
