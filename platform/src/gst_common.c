/* GStreamer helpers shared by the source and sink backends: one-time init,
 * format names, pipeline parsing and bus errors. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "gst_internal.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char init_error[512];

static void init_gst(void) {
    GError *err = NULL;
    if (!gst_init_check(NULL, NULL, &err)) {
        snprintf(init_error, sizeof init_error, "%s",
                 err && err->message ? err->message : "gst_init_check failed");
        if (err) g_error_free(err);
    }
}

fv_status fv__gst_init(const char *op) {
    pthread_once(&init_once, init_gst);
    if (init_error[0])
        return fv__error(FV_ERR_NOT_SUPPORTED, "%s: GStreamer cannot start: %s", op, init_error);
    return FV_OK;
}

int fv__gst_have(const char *factory) {
    GstElementFactory *f = gst_element_factory_find(factory);
    if (!f) return 0;
    gst_object_unref(f);
    return 1;
}

static const struct {
    fv_pixel_format fv;
    const char *gst;
} formats[] = {
    {FV_PIXEL_RGB24, "RGB"},   {FV_PIXEL_BGR24, "BGR"}, {FV_PIXEL_GRAY8, "GRAY8"},
    {FV_PIXEL_RGBA32, "RGBA"}, {FV_PIXEL_YUYV, "YUY2"}, {FV_PIXEL_UYVY, "UYVY"},
    {FV_PIXEL_NV12, "NV12"},
};

const char *fv__gst_format_name(fv_pixel_format f) {
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i].fv == f) return formats[i].gst;
    return NULL;
}

fv_pixel_format fv__gst_format_from_name(const char *name) {
    for (size_t i = 0; name && i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(formats[i].gst, name) == 0) return formats[i].fv;
    return (fv_pixel_format)0;
}

fv_status fv__gst_parse(const char *op, const char *uri, const char *text, GstElement **out) {
    *out = NULL;
    GError *err = NULL;
    GstElement *e = gst_parse_launch_full(text, NULL, GST_PARSE_FLAG_FATAL_ERRORS, &err);
    if (!e || err) {
        fv_status s = fv__error(FV_ERR_BAD_PARAM, "%s: '%s': pipeline '%s' does not parse: %s", op,
                                uri, text, err && err->message ? err->message : "unknown error");
        if (err) g_error_free(err);
        if (e) gst_object_unref(e);
        return s;
    }
    if (!GST_IS_PIPELINE(e)) {
        GstElement *p = gst_pipeline_new(NULL);
        gst_bin_add(GST_BIN(p), e);
        e = p;
    }
    *out = e;
    return FV_OK;
}

fv_status fv__gst_bus_poll(GstElement *pipeline, GstClockTime timeout_ns, const char *op,
                           const char *uri, int *eos, int *closed) {
    GstBus *bus = gst_element_get_bus(pipeline);
    fv_status s = FV_OK;
    GstClockTime wait = timeout_ns;
    GstMessage *m;
    while ((m = gst_bus_timed_pop_filtered(
                bus, wait, GST_MESSAGE_ERROR | GST_MESSAGE_WARNING | GST_MESSAGE_EOS))) {
        wait = 0;
        const char *who = GST_MESSAGE_SRC(m) ? GST_OBJECT_NAME(GST_MESSAGE_SRC(m)) : "?";
        if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS) {
            if (eos) *eos = 1;
        } else if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_WARNING) {
            /* udpsink (named "net" by the RTP sink) reports a failed send
             * as a warning and goes on: for fovea it is the sink's error */
            if (s == FV_OK && who && strcmp(who, "net") == 0) {
                GError *err = NULL;
                gst_message_parse_warning(m, &err, NULL);
                s = fv__error(FV_ERR_IO, "%s: '%s': sending failed: %s", op, uri,
                              err && err->message ? err->message : "unknown error");
                if (err) g_error_free(err);
            }
        } else if (s == FV_OK) {
            GError *err = NULL;
            gchar *debug = NULL;
            gst_message_parse_error(m, &err, &debug);
            s = FV_ERR_IO;
            if (err && (g_error_matches(err, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION) ||
                        g_error_matches(err, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT) ||
                        g_error_matches(err, GST_STREAM_ERROR, GST_STREAM_ERROR_CODEC_NOT_FOUND)))
                s = FV_ERR_NOT_SUPPORTED;
            if (closed && err &&
                g_error_matches(err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND))
                *closed = 1;
            s = fv__error(s, "%s: '%s': element %s: %s%s%s", op, uri, who,
                          err && err->message ? err->message : "unknown error", debug ? " | " : "",
                          debug ? debug : "");
            if (err) g_error_free(err);
            g_free(debug);
        }
        gst_message_unref(m);
    }
    gst_object_unref(bus);
    return s;
}

void fv__gst_pipeline_free(GstElement *pipeline) {
    if (!pipeline) return;
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
}
