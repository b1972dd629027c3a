/* PLACEHOLDER (being written): replaced before commit. */
#include "io_internal.h"
fv_status fv__sink_open_null(fv_sink *sink) {
    (void)sink;
    return fv__error(FV_ERR_NOT_SUPPORTED, "null sink: not written yet");
}
