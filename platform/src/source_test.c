/* PLACEHOLDER (being written): replaced before commit. */
#include "io_internal.h"
fv_status fv__source_open_test(fv_source *src, const char *q) {
    (void)src, (void)q;
    return fv__error(FV_ERR_NOT_SUPPORTED, "test source: not written yet");
}
