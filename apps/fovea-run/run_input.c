/* fovea-run's inputs: a photo (PNG/JPEG through platform/image_io),
 * resized with bilinear interpolation (half-pixel centres) and normalised,
 * or seeded random values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fovea/platform/image_io.h"
#include "run.h"

static const float mean[3] = {0.485f, 0.456f, 0.406f}, stdev[3] = {0.229f, 0.224f, 0.225f};

static float sample(const fv_host_image *img, int ch, int nch, float y, float x) {
    if (y < 0) y = 0;
    if (x < 0) x = 0;
    int y0 = (int)y, x0 = (int)x;
    int y1 = y0 + 1 < img->height ? y0 + 1 : y0, x1 = x0 + 1 < img->width ? x0 + 1 : x0;
    if (y0 >= img->height) y0 = y1 = img->height - 1;
    if (x0 >= img->width) x0 = x1 = img->width - 1;
    float fy = y - (float)y0, fx = x - (float)x0;
    const uint8_t *p = img->data;
    size_t st = img->stride;
#define PX(yy, xx) ((float)p[(size_t)(yy)*st + (size_t)(xx)*nch + ch])
    float top = PX(y0, x0) * (1 - fx) + PX(y0, x1) * fx;
    float bot = PX(y1, x0) * (1 - fx) + PX(y1, x1) * fx;
#undef PX
    return top * (1 - fy) + bot * fy;
}

int run_input_make(const run_options *o, const fv_onnx_io *io, float **nhwc, size_t *count) {
    int d[4];
    for (int i = 0; i < 4; i++)
        d[i] = i < io->rank ? (int)io->dims[i] : 1;
    size_t n = (size_t)d[0] * d[1] * d[2] * d[3];
    float *t = malloc(n * sizeof(float));
    if (!t) {
        fprintf(stderr, "fovea-run: no memory for input '%s'\n", io->name);
        return -1;
    }
    *nhwc = t;
    *count = n;
    int image = o->input && strcmp(o->input, "random") && (d[1] == 1 || d[1] == 3) && io->rank == 4;
    if (!image) {
        uint64_t s = 0x9E3779B97F4A7C15ull ^ o->seed;
        for (size_t i = 0; i < n; i++) {
            s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
            t[i] = (float)((s * 2685821657736338717ull) >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
        }
        return 0;
    }
    fv_host_image img;
    fv_status st = fv_image_file_load(o->input, d[1] == 1 ? FV_PIXEL_GRAY8 : FV_PIXEL_RGB24, &img);
    if (st != FV_OK) {
        fprintf(stderr, "fovea-run: %s\n", fv_last_error());
        free(t);
        *nhwc = NULL;
        return -1;
    }
    int c = d[1], h = d[2], w = d[3];
    float sy = (float)img.height / (float)h, sx = (float)img.width / (float)w;
    for (int b = 0; b < d[0]; b++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int k = 0; k < c; k++) {
                    float v = sample(&img, k, c, ((float)y + 0.5f) * sy - 0.5f,
                                     ((float)x + 0.5f) * sx - 0.5f);
                    if (o->norm != RUN_NORM_RAW) v /= 255.0f;
                    if (o->norm == RUN_NORM_IMAGENET && c == 3) v = (v - mean[k]) / stdev[k];
                    t[(((size_t)b * h + y) * w + x) * c + k] = v;
                }
    fv_host_image_free(&img);
    return 0;
}
