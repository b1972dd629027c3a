/* libFuzzer entry point for the MJPEG decoder behind v4l2:// MJPG cameras
 * (platform/src/mjpeg.c).
 *
 * Built only with clang and -DFV_BUILD_FUZZERS=ON; toolchain/fuzz.sh builds
 * and runs it on corpus/fuzz_mjpeg (32x24 frames, with and without Huffman
 * tables). Each input is decoded twice by a fresh 32x24 decoder, as a
 * camera's stream is: the second decode starts from the tables and state
 * the first one left. The output format is chosen by the input's size.
 * Both decodes must agree; a failure must leave no frame and a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "io_internal.h"

#define W 32
#define H 24

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const fv_pixel_format formats[] = {FV_PIXEL_RGB24,  FV_PIXEL_GRAY8, FV_PIXEL_BGR24,
                                              FV_PIXEL_RGBA32, FV_PIXEL_YUYV,  FV_PIXEL_UYVY,
                                              FV_PIXEL_NV12};
    fv_pixel_format f = formats[size % (sizeof formats / sizeof formats[0])];
    fv__mjpeg *m = NULL;
    if (fv__mjpeg_create(W, H, f, &m) != FV_OK) abort();
    /* An exact copy: reads past the end are ASan's to catch. */
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) abort();
    memcpy(copy, data, size);
    size_t bytes = fv_image_bytes(f, W, H);
    unsigned char *first = malloc(bytes);
    if (!first) abort();
    fv_status s0 = FV_OK;
    for (int pass = 0; pass < 2; pass++) {
        const fv_image *frame = (const fv_image *)1;
        fv_status s = fv__mjpeg_decode(m, copy, size, &frame);
        if (s == FV_OK) {
            if (!frame || frame->width != W || frame->height != H || frame->format != f) abort();
            if (pass == 0)
                memcpy(first, frame->data, bytes);
            else if (s0 == FV_OK && memcmp(first, frame->data, bytes) != 0)
                abort(); /* the same frame twice decodes the same */
        } else if (frame || !fv_last_error()[0]) {
            abort();
        }
        if (pass == 0) s0 = s;
    }
    free(first);
    free(copy);
    fv__mjpeg_destroy(m);
    return 0;
}
