/* PLACEHOLDER (being written): replaced before commit. */
#include "io_internal.h"
fv_status fv__host_convert(const fv_image *src, fv_image *dst) {
    (void)src, (void)dst;
    return fv__error(FV_ERR_NOT_SUPPORTED, "convert: not written yet");
}
