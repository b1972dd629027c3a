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
 * The loader is given a limit of MAX_PIXELS (fv_image_load_desc.max_pixels)
 * instead of its default 2^28: a few hundred bytes can claim that much (an
 * arithmetic-coded JPEG decodes its missing data as zeros), and decoding
 * it costs seconds and hundreds of MB, past -rss_limit_mb and -timeout.
 * The loader's own header check refuses such inputs, so it is fuzzed too;
 * corpus/fuzz_image/oom-jpeg-claims-huge-size.jpg is one (24592x18688). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "platform_internal.h"

#define MAX_PIXELS (1u << 22)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const fv_pixel_format wants[] = {0, FV_PIXEL_GRAY8, FV_PIXEL_RGB24, FV_PIXEL_BGR24,
                                            FV_PIXEL_RGBA32};
    fv_pixel_format want = wants[size % (sizeof wants / sizeof wants[0])];
    fv_host_image img;
    fv_status s = fv__image_decode("fuzz", data, size, want, MAX_PIXELS, &img);
    if (s == FV_OK) {
        size_t bpp = fv__image_file_bpp(img.format);
        if (!img.data || bpp == 0 || (want && img.format != want) || img.width < 1 ||
            img.height < 1 || img.width > FV_IMAGE_MAX_DIM || img.height > FV_IMAGE_MAX_DIM ||
            (uint64_t)img.width * (uint64_t)img.height > MAX_PIXELS ||
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
