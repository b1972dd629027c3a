/* libFuzzer entry point for the image file decoders (PNG and JPEG, chosen
 * by magic bytes, as fv_image_file_load does after reading the file).
 *
 * Built only with clang and -DFV_BUILD_FUZZERS=ON; toolchain/fuzz.sh builds
 * and runs it on corpus/fuzz_image. The pixel format asked for is chosen
 * by the input's size, so that mutations reach every conversion (and
 * PNG's RGBA32 path) without a selector byte that would stop the seeds
 * from being plain image files. A decoded image must be dense and the size
 * its format says; a failure leaves *out zeroed and a message.
 *
 * Inputs whose header claims more than MAX_PIXELS are skipped: the loader
 * accepts up to FV_IMAGE_MAX_DIM squared, and a few hundred bytes claiming
 * that much make the decoders (and libjpeg's progressive buffers) allocate
 * gigabytes up front, past -rss_limit_mb. That is the loader's documented
 * limit, not a fault the fuzzer should keep reporting;
 * tests/fuzz/crashes/fuzz_image/ keeps such an input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "platform_internal.h"

#define MAX_PIXELS (1u << 22)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t be16(const uint8_t *p) {
    return (uint32_t)p[0] << 8 | p[1];
}

/* The size a PNG's IHDR or a JPEG's first SOFn claims, walking markers as
 * libjpeg does (bytes before a marker skipped); 0 when none is found. */
static uint64_t claimed_pixels(const uint8_t *d, size_t n) {
    if (n >= 24 && d[0] == 0x89 && d[1] == 'P')
        return (uint64_t)(be16(d + 16) << 16 | be16(d + 18)) * (be16(d + 20) << 16 | be16(d + 22));
    if (n < 4 || d[0] != 0xff || d[1] != 0xd8) return 0;
    size_t i = 2;
    for (;;) {
        while (i < n && d[i] != 0xff)
            i++;
        while (i < n && d[i] == 0xff)
            i++;
        if (i >= n) return 0;
        uint8_t m = d[i++];
        if (m == 0x01 || (m >= 0xd0 && m <= 0xd8)) continue; /* no length */
        if (i + 2 > n) return 0;
        size_t len = be16(d + i);
        if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc)
            return i + 7 <= n ? (uint64_t)be16(d + i + 3) * be16(d + i + 5) : 0;
        i += len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const fv_pixel_format wants[] = {0, FV_PIXEL_GRAY8, FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                            FV_PIXEL_RGBA32};
    if (claimed_pixels(data, size) > MAX_PIXELS) return 0;
    fv_pixel_format want = wants[size % (sizeof wants / sizeof wants[0])];
    fv_host_image img;
    fv_status s = fv__image_decode("fuzz", data, size, want, &img);
    if (s == FV_OK) {
        size_t bpp = fv__image_file_bpp(img.format);
        if (!img.data || bpp == 0 || (want && img.format != want) || img.width < 1 ||
            img.height < 1 || img.width > FV_IMAGE_MAX_DIM || img.height > FV_IMAGE_MAX_DIM ||
            img.stride != (size_t)img.width * bpp || img.size != img.stride * (size_t)img.height)
            abort();
        /* Every byte written: MSan would say more; a read at least must not fault. */
        volatile unsigned char sum = 0;
        const unsigned char *p = img.data;
        for (size_t i = 0; i < img.size; i += 997)
            sum ^= p[i];
        sum ^= p[img.size - 1];
        (void)sum;
        fv_host_image_free(&img);
    } else if (img.data || img.size || !fv_last_error()[0]) {
        abort();
    }
    return 0;
}
