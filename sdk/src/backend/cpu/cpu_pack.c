/* CPU backend: pixels <-> NHWC tensors. The exact rules, which the CUDA
 * backend must match bit for bit (both use backend/pixel_math.h):
 *
 * pack (bytes b as floats 0..255; value = fv__pack_value(v) = v * scale + bias):
 *   GRAY8              C=1: v = b
 *   RGB24/BGR24/RGBA32 C=3: v = R, G, B bytes (alpha ignored)
 *                      C=1: v = fv__rgb_to_gray(R, G, B) = (0.299 R + 0.587 G) + 0.114 B
 *   YUYV (Y0 U Y1 V: both pixels of a pair share U, V),
 *   NV12 (U, V of pixel (x, y) at UV row y/2, column 2*(x/2)):
 *                      C=3: v = fv__yuv_to_rgb(Y, U, V): BT.601 limited range,
 *                           each of R, G, B clamped to [0, 255], not rounded
 *                      C=1: v = Y
 *   Stored as F32 (rounded to FP16 values under FV_CONTEXT_CPU_ROUND_F16) or
 *   as F16 (round to nearest even); F16 padding lanes zero.
 *
 * unpack (x: tensor value as float; |x| per channel first when absolute):
 *   byte = fv__unpack_byte(x) = clamp(floor((x * scale + bias) + 0.5), 0, 255),
 *   NaN giving 0: round half up, then clamp.
 *   GRAY8: x = channel 0 (C=1) or fv__mean3(c0, c1, c2) = ((c0 + c1) + c2) / 3
 *   RGB24/BGR24/RGBA32: R, G, B = channels 0, 1, 2 (C=1: channel 0 thrice),
 *   alpha 255.
 */
#include <math.h>
#include "cpu.h"
#include "../pixel_math.h"

fv_status fv__cpu_pack(fv_context *ctx, const fv_image *src, fv_tensor *dst,
                       const fv_pack_desc *d) {
    const size_t cs = (size_t)dst->shape.c_stored;
    for (int y = 0; y < src->height; y++)
        for (int x = 0; x < src->width; x++) {
            const unsigned char *row = (const unsigned char *)src->data + (size_t)y * src->stride;
            float v[3] = {0.0f, 0.0f, 0.0f};
            fv__read_pixel(src->format, row, (const unsigned char *)src->uv, src->uv_stride, x, y,
                           d->channels, v);
            const float r = v[0], g = d->channels == 1 ? v[0] : v[1], b = v[2];
            size_t i = ((size_t)y * src->width + (size_t)x) * cs;
            if (d->channels == 1) {
                fv__cpu_store(dst, i, fv__pack_value(g, d->scale, d->bias));
            } else {
                fv__cpu_store(dst, i, fv__pack_value(r, d->scale, d->bias));
                fv__cpu_store(dst, i + 1, fv__pack_value(g, d->scale, d->bias));
                fv__cpu_store(dst, i + 2, fv__pack_value(b, d->scale, d->bias));
            }
            if (dst->shape.dtype == FV_DTYPE_F16)
                for (size_t c = (size_t)d->channels; c < cs; c++)
                    ((fv_half *)dst->data)[i + c] = 0;
        }
    return FV_OK;
}

fv_status fv__cpu_unpack(fv_context *ctx, const fv_tensor *src, const fv_image *dst,
                         const fv_unpack_desc *d) {
    const size_t cs = (size_t)src->shape.c_stored;
    const int three = src->shape.c >= 3;
    for (int y = 0; y < dst->height; y++) {
        unsigned char *row = (unsigned char *)dst->data + (size_t)y * dst->stride;
        for (int x = 0; x < dst->width; x++) {
            size_t i = ((size_t)y * dst->width + (size_t)x) * cs;
            float v[3];
            for (int c = 0; c < 3; c++) {
                v[c] = fv__cpu_load(src, i + (three ? (size_t)c : 0));
                if (d->absolute) v[c] = fabsf(v[c]);
            }
            if (dst->format == FV_PIXEL_GRAY8) {
                float m = three ? fv__mean3(v[0], v[1], v[2]) : v[0];
                row[x] = fv__unpack_byte(m, d->scale, d->bias);
                continue;
            }
            unsigned char R = fv__unpack_byte(v[0], d->scale, d->bias);
            unsigned char G = fv__unpack_byte(v[1], d->scale, d->bias);
            unsigned char B = fv__unpack_byte(v[2], d->scale, d->bias);
            unsigned char *px = row + (size_t)x * (dst->format == FV_PIXEL_RGBA32 ? 4 : 3);
            int bgr = dst->format == FV_PIXEL_BGR24;
            px[0] = bgr ? B : R;
            px[1] = G;
            px[2] = bgr ? R : B;
            if (dst->format == FV_PIXEL_RGBA32) px[3] = 255;
        }
    }
    return FV_OK;
}
