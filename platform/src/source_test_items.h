/* test://?items=N (source_test_items.c): Fashion-MNIST items over the
 * test source's frames. Not installed. */
#ifndef FOVEA_SOURCE_TEST_ITEMS_H
#define FOVEA_SOURCE_TEST_ITEMS_H

#include <stdint.h>
#include "fovea/fovea.h"

typedef struct fv__test_items fv__test_items;

/* Reads the idx images at path (gzip; 28x28) for n items per frame. *out
 * NULL on failure. FV_ERR_IO (cannot open), FV_ERR_FORMAT (not 28x28 idx
 * images), FV_ERR_OUT_OF_MEMORY; messages begin "source_open: test://". */
fv_status fv__test_items_open(const char *path, int n, fv__test_items **out);
void fv__test_items_close(fv__test_items *t);

/* Pastes the items of frame number `frame` into rgb (RGB24, any stride). */
void fv__test_items_paint(const fv__test_items *t, uint64_t frame, fv_image *rgb);

#endif
