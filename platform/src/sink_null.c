/* null://: takes frames (checked by sink.c) and discards them; benchmarks
 * use it to time everything but the output. */
#include <stdio.h>
#include "io_internal.h"

static fv_status null_write(fv_sink *sink, const fv_image *frame, int64_t timestamp_ns) {
    (void)sink, (void)frame, (void)timestamp_ns;
    return FV_OK;
}

static fv_status null_close(fv_sink *sink) {
    (void)sink;
    return FV_OK;
}

static const fv__sink_ops null_ops = {null_write, null_close, NULL};

fv_status fv__sink_open_null(fv_sink *sink) {
    snprintf(sink->info.kind, sizeof sink->info.kind, "null");
    snprintf(sink->info.name, sizeof sink->info.name, "null://");
    snprintf(sink->info.detail, sizeof sink->info.detail, "discards %dx%d %s frames",
             sink->desc.width, sink->desc.height, fv_pixel_format_name(sink->desc.format));
    sink->ops = &null_ops;
    sink->impl = NULL;
    return FV_OK;
}
