/* PLACEHOLDER (being written): replaced before commit. */
#include "io_internal.h"
fv_status fv__source_open_v4l2(fv_source *src, const char *device) {
    (void)src, (void)device;
    return fv__error(FV_ERR_NOT_SUPPORTED, "v4l2 source: not written yet");
}
