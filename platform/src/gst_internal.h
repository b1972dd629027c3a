/* fovea platform internal: what the GStreamer source and sink backends
 * (gst_source.c, gst_sink.c) share. Compiled only with FV_HAVE_GSTREAMER.
 * Not installed. */
#ifndef FOVEA_PLATFORM_GST_INTERNAL_H
#define FOVEA_PLATFORM_GST_INTERNAL_H

#include <gst/gst.h>
#include "io_internal.h"

/* Initializes GStreamer once per process (thread-safe). FV_ERR_NOT_SUPPORTED
 * with GStreamer's reason when it cannot start; op names the caller. */
fv_status fv__gst_init(const char *op);

/* 1 when an element factory of that name is installed. */
int fv__gst_have(const char *factory);

/* GStreamer's name of a fovea pixel format ("RGB", "BGR", "GRAY8", "RGBA",
 * "YUY2", "UYVY", "NV12"); NULL for none. */
const char *fv__gst_format_name(fv_pixel_format f);

/* The fovea format of a GStreamer format name; 0 for none. */
fv_pixel_format fv__gst_format_from_name(const char *name);

/* Parses a pipeline description (gst_parse_launch, fatal errors only) into
 * a GstPipeline (a single element is wrapped in one). FV_ERR_BAD_PARAM with
 * GStreamer's message, naming op and uri, on a parse error. */
fv_status fv__gst_parse(const char *op, const char *uri, const char *text, GstElement **out);

/* Pops every ERROR and EOS message waiting on the pipeline's bus (others are
 * discarded), waiting up to timeout_ns for the first (0: no wait). On an
 * ERROR it records it (fv__error: op, uri, the element and GStreamer's
 * message) and returns its status: FV_ERR_NOT_SUPPORTED for negotiation and
 * format errors, FV_ERR_IO otherwise; *closed (when not NULL) is set to 1
 * when the error is a video sink's "window closed" (a resource not found).
 * Sets *eos to 1 on an EOS message. FV_OK when no error was waiting. */
fv_status fv__gst_bus_poll(GstElement *pipeline, GstClockTime timeout_ns, const char *op,
                           const char *uri, int *eos, int *closed);

/* Sets the pipeline to NULL and drops the reference. NULL allowed. */
void fv__gst_pipeline_free(GstElement *pipeline);

#endif
