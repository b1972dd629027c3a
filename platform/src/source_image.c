/* PLACEHOLDER (being written): replaced before commit. */
#include "io_internal.h"
fv_status fv__source_open_image(fv_source *src, const char *path) {
    (void)src, (void)path;
    return fv__error(FV_ERR_NOT_SUPPORTED, "image source: not written yet");
}
