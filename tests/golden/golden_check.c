/* The golden comparison shared by test_golden.c and fovea-regress. */
#include "golden_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int golden_read_cases(const char *path, golden_case *cs, int max) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0;
    golden_case c;
    while (n < max && fscanf(f, "%63s %d %d %d %d %15s %15s %f %95s", c.image, &c.x0, &c.y0, &c.w,
                             &c.h, c.filter, c.output, &c.gain, c.ref) == 9)
        cs[n++] = c;
    fclose(f);
    return n;
}

int golden_channels(const golden_case *c) {
    return strcmp(c->output, "color") == 0 ? 3 : 1;
}

fv_status golden_run(fv_context *ctx, const golden_case *c, const fv_host_image *img,
                     unsigned char *got) {
    int ch = golden_channels(c);
    if (c->x0 < 0 || c->y0 < 0 || c->w < 1 || c->h < 1 || c->x0 + c->w > img->width ||
        c->y0 + c->h > img->height || img->format != FV_PIXEL_RGB24)
        return FV_ERR_BAD_PARAM;
    size_t in_bytes = (size_t)c->w * c->h * 3, out_bytes = (size_t)c->w * c->h * ch;
    unsigned char *crop = malloc(in_bytes);
    if (!crop) return FV_ERR_OUT_OF_MEMORY;
    for (int y = 0; y < c->h; y++)
        memcpy(crop + (size_t)y * c->w * 3,
               (const unsigned char *)img->data + (size_t)(c->y0 + y) * img->stride +
                   (size_t)c->x0 * 3,
               (size_t)c->w * 3);
    fv_tensor *tin = NULL, *tout = NULL;
    fv_filter *f = NULL;
    fv_tensor_desc td = {.dtype = FV_DTYPE_U8, .h = c->h, .w = c->w, .c = 3};
    fv_status s = fv_tensor_create(ctx, &td, &tin);
    td.c = ch;
    if (s == FV_OK) s = fv_tensor_create(ctx, &td, &tout);
    fv_filter_desc d = {.kind =
                            strcmp(c->filter, "sobel") == 0 ? FV_FILTER_SOBEL : FV_FILTER_LAPLACIAN,
                        .width = c->w,
                        .height = c->h,
                        .format = FV_PIXEL_RGB24,
                        .output = ch == 3 ? FV_FILTER_OUT_COLOR : FV_FILTER_OUT_GRAY,
                        .gain = c->gain};
    if (s == FV_OK) s = fv_filter_create(ctx, &d, &f);
    if (s == FV_OK) {
        fv_image in = {.format = FV_PIXEL_RGB24, .width = c->w, .height = c->h};
        fv_image out = {
            .format = ch == 3 ? FV_PIXEL_RGB24 : FV_PIXEL_GRAY8, .width = c->w, .height = c->h};
        in.data = fv_tensor_data(tin);
        out.data = fv_tensor_data(tout);
        s = fv_tensor_upload(ctx, tin, crop, in_bytes);
        if (s == FV_OK) s = fv_filter_apply(f, &in, &out);
        if (s == FV_OK) s = fv_tensor_download(ctx, tout, got, out_bytes);
        fv_status s2 = fv_context_synchronize(ctx);
        if (s == FV_OK) s = s2;
    }
    fv_filter_destroy(f);
    fv_tensor_destroy(tout);
    fv_tensor_destroy(tin);
    free(crop);
    return s;
}

void golden_compare(const unsigned char *got, const unsigned char *want, size_t n,
                    golden_stats *st) {
    memset(st, 0, sizeof *st);
    st->n = n;
    double sum = 0;
    for (size_t j = 0; j < n; j++) {
        int dd = abs((int)got[j] - (int)want[j]);
        st->exact += dd == 0, st->within1 += dd <= 1, st->nonzero += want[j] != 0;
        sum += dd;
        if (dd > st->max) st->max = dd;
    }
    st->mean = n ? sum / n : 0;
}

int golden_pass(const golden_stats *st) {
    return st->n > 0 && st->max <= GOLDEN_MAX_DIFF &&
           (double)st->within1 / st->n >= GOLDEN_MIN_WITHIN1 && st->nonzero > st->n / 4;
}
