/* PLACEHOLDER (being written): replaced before commit. */
#include "io_internal.h"
fv_status fv__sink_open_images(fv_sink *sink, const char *path) {
    (void)sink, (void)path;
    return fv__error(FV_ERR_NOT_SUPPORTED, "image sink: not written yet");
}
