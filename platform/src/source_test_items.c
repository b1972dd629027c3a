/* test://?items=N: Fashion-MNIST items pasted over test://'s moving view, as
 * the composites fovea-infer's segmentation net was trained on
 * (apps/fovea-infer/models/fashion_seg/train.py): each item a tinted grey
 * picture, its opacity its brightness, about 40% of the frame's height,
 * gliding along its own path; which picture each item shows changes every
 * 90 frames. Everything is a function of the frame number alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "io_internal.h"
#include "source_test_items.h"

#define ITEM     28
#define ITEM_PX  (ITEM * ITEM)
#define MAX_PICS 10000

struct fv__test_items {
    int n;              /* items per frame */
    int pics;           /* pictures read */
    unsigned char *pix; /* pics x 28 x 28 */
};

fv_status fv__test_items_open(const char *path, int n, fv__test_items **out) {
    const char *op = "source_open: test:// items";
    *out = NULL;
    gzFile f = gzopen(path, "rb");
    if (!f)
        return fv__error(FV_ERR_IO,
                         "%s: cannot open %s (Fashion-MNIST's idx images, Debian "
                         "dataset-fashion-mnist; ?fashion=PATH names another)",
                         op, path);
    unsigned char head[16];
    fv__test_items *t = calloc(1, sizeof *t);
    unsigned char *pix = malloc((size_t)MAX_PICS * ITEM_PX);
    int got = t && pix ? gzread(f, head, sizeof head) : -1;
    int pics = 0;
    if (got == (int)sizeof head && head[2] == 8 && head[3] == 3 && head[11] == ITEM &&
        head[15] == ITEM) {
        int want = (int)((unsigned)head[4] << 24 | (unsigned)head[5] << 16 |
                         (unsigned)head[6] << 8 | head[7]);
        want = want < MAX_PICS ? want : MAX_PICS;
        int bytes = gzread(f, pix, (unsigned)(want * ITEM_PX));
        pics = bytes > 0 ? bytes / ITEM_PX : 0;
    }
    gzclose(f);
    if (!t || !pix || pics < 1) {
        free(t);
        free(pix);
        return t && pix ? fv__error(FV_ERR_FORMAT, "%s: %s holds no 28x28 idx images", op, path)
                        : fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    }
    t->n = n, t->pics = pics, t->pix = pix;
    *out = t;
    return FV_OK;
}

void fv__test_items_close(fv__test_items *t) {
    if (!t) return;
    free(t->pix);
    free(t);
}

/* Position in [0, span] of a bounce at step pixels per frame. */
static int bounce(uint64_t n, int step, int span) {
    if (span <= 0) return 0;
    uint64_t u = (n * (uint64_t)step) % (2 * (uint64_t)span);
    return (int)(u <= (uint64_t)span ? u : 2 * (uint64_t)span - u);
}

/* Picture p scaled to s x s (bilinear), tinted, blended into rgb at (x0, y0). */
static void paste(const unsigned char *pic, int s, const float tint[3], fv_image *rgb, int x0,
                  int y0) {
    const float f = (float)ITEM / (float)s;
    for (int y = 0; y < s; y++) {
        float sy = (y + 0.5f) * f - 0.5f;
        sy = sy < 0 ? 0 : sy;
        int a = (int)sy, b = a + 1 < ITEM ? a + 1 : ITEM - 1;
        float wy = sy - (float)a;
        unsigned char *row = (unsigned char *)rgb->data + (size_t)(y0 + y) * rgb->stride;
        for (int x = 0; x < s; x++) {
            float sx = (x + 0.5f) * f - 0.5f;
            sx = sx < 0 ? 0 : sx;
            int c = (int)sx, d = c + 1 < ITEM ? c + 1 : ITEM - 1;
            float wx = sx - (float)c;
            float top = pic[a * ITEM + c] * (1 - wx) + pic[a * ITEM + d] * wx;
            float bot = pic[b * ITEM + c] * (1 - wx) + pic[b * ITEM + d] * wx;
            float v = (top * (1 - wy) + bot * wy) / 255.0f;
            unsigned char *px = row + 3 * (size_t)(x0 + x);
            for (int k = 0; k < 3; k++)
                px[k] = (unsigned char)(px[k] * (1 - v) + v * 255.0f * tint[k] + 0.5f);
        }
    }
}

void fv__test_items_paint(const fv__test_items *t, uint64_t frame, fv_image *rgb) {
    int s = rgb->height * 2 / 5;
    s = s < rgb->width ? s : rgb->width;
    if (s < 1) return;
    for (int i = 0; i < t->n; i++) {
        uint64_t era = frame / 90;
        int pic = (int)((era * 7919u + (uint64_t)i * 104729u) % (uint64_t)t->pics);
        int x = bounce(frame + (uint64_t)i * 37, 2 + i % 3, rgb->width - s);
        int y = bounce(frame + (uint64_t)i * 53, 1 + (i + 1) % 3, rgb->height - s);
        const float tint[3] = {0.5f + 0.5f * (float)((i * 3 + 1) % 5) / 4.0f,
                               0.5f + 0.5f * (float)((i * 7 + 2) % 5) / 4.0f,
                               0.5f + 0.5f * (float)((i * 5 + 3) % 5) / 4.0f};
        paste(t->pix + (size_t)pic * ITEM_PX, s, tint, rgb, x, y);
    }
}
