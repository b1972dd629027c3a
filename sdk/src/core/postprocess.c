/* Front end of the post-processing ops (fovea/postprocess.h): fv_classify
 * (top-K into a device buffer, copied to a pinned host buffer) and
 * fv_segment (argmax into a class map, then the overlay). Buffers are
 * carved at creation; runs only queue kernels and a copy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "vision.h"
#include "../backend/vision_ops.h"

/* ---- classification --------------------------------------------------------- */
struct fv_classify {
    fv_context *ctx;
    fv_classify_desc d; /* normalized */
    fv_class_score *dev, *host;
    size_t bytes;
    int ran;
};

fv_status fv_classify_create(fv_context *ctx, const fv_classify_desc *desc, fv_classify **out) {
    FV__HOLD(ctx);
    const char *op = "fv_classify_create";
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "%s: out is NULL", op);
    *out = NULL;
    FV_REQUIRE(ctx && desc, FV_ERR_BAD_PARAM, "%s: %s is NULL", op, ctx ? "desc" : "ctx");
    fv_classify_desc d = *desc;
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(d.reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: desc.reserved[%d] must be zero", op,
                   i);
    FV_REQUIRE(d.batch >= 1 && d.batch <= FV_NET_MAX_DIM && d.classes >= 1 &&
                   d.classes <= FV_NET_MAX_DIM,
               FV_ERR_BAD_PARAM, "%s: batch=%d and classes=%d must be 1 .. %d", op, d.batch,
               d.classes, FV_NET_MAX_DIM);
    if (d.k == 0) d.k = 5;
    FV_REQUIRE(d.k >= 1 && d.k <= FV_CLASSIFY_MAX_K, FV_ERR_BAD_PARAM,
               "%s: k=%d must be 1 .. %d (0: 5)", op, d.k, FV_CLASSIFY_MAX_K);
    if (d.k > d.classes) d.k = d.classes;
    FV_REQUIRE(d.softmax == 0 || d.softmax == 1, FV_ERR_BAD_PARAM, "%s: softmax=%d must be 0 or 1",
               op, d.softmax);
    fv_classify *c = calloc(1, sizeof *c);
    FV_REQUIRE(c, FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    c->ctx = ctx;
    fv__obj_born(ctx, FV__OBJ_CLASSIFY);
    c->d = d;
    c->bytes = (size_t)d.batch * (size_t)d.k * sizeof(fv_class_score);
    fv_status s = fv_pool_alloc(ctx->pools[FV_POOL_DEVICE], c->bytes, (void **)&c->dev);
    if (s == FV_OK) s = fv_pool_alloc(ctx->pools[FV_POOL_PINNED], c->bytes, (void **)&c->host);
    if (s != FV_OK) {
        fv_classify_destroy(c);
        return fv__error_prefix(s, op);
    }
    memset(c->host, 0, c->bytes);
    *out = c;
    return FV_OK;
}

void fv_classify_destroy(fv_classify *op) {
    FV__HOLD_WAIT(op ? op->ctx : NULL);
    if (!op) return;
    fv_context *ctx = op->ctx;
    fv__obj_gone(ctx, FV__OBJ_CLASSIFY);
    (void)fv_context_synchronize(ctx);
    if (op->dev) (void)fv_pool_free(ctx->pools[FV_POOL_DEVICE], op->dev);
    if (op->host) (void)fv_pool_free(ctx->pools[FV_POOL_PINNED], op->host);
    free(op);
}

fv_status fv_classify_run(fv_classify *op, const fv_tensor *logits) {
    FV__HOLD(op ? op->ctx : NULL);
    const char *fn = "fv_classify_run";
    FV_REQUIRE(op, FV_ERR_BAD_PARAM, "%s: op is NULL", fn);
    fv_context *ctx = op->ctx;
    FV_TRY(fv__tensor_check(fn, ctx, logits, "logits"));
    const fv_tensor_shape *s = &logits->shape;
    FV_REQUIRE(s->n == op->d.batch && s->c == op->d.classes && s->h == 1 && s->w == 1,
               FV_ERR_BAD_SHAPE,
               "%s: logits (N=%d, C=%d, H=%d, W=%d), but the op was made for (N=%d, C=%d, 1, 1)",
               fn, s->n, s->c, s->h, s->w, op->d.batch, op->d.classes);
    fv__view v = fv__tensor_view(logits);
    FV_TRY(fv__vision_ops_of(ctx)->topk(ctx, &v, op->d.k, op->d.softmax, op->dev));
    FV_TRY(ctx->be->copy2d(ctx, op->host, op->bytes, op->dev, op->bytes, op->bytes, 1));
    op->ran = 1;
    return FV_OK;
}

fv_status fv_classify_result(const fv_classify *op, int b, fv_class_score *out, int count) {
    FV__HOLD(op ? op->ctx : NULL);
    const char *fn = "fv_classify_result";
    FV_REQUIRE(op && out, FV_ERR_BAD_PARAM, "%s: %s is NULL", fn, op ? "out" : "op");
    FV_REQUIRE(b >= 0 && b < op->d.batch, FV_ERR_BAD_PARAM, "%s: item %d is outside 0 .. %d", fn, b,
               op->d.batch - 1);
    FV_REQUIRE(count >= 1 && count <= op->d.k, FV_ERR_BAD_PARAM, "%s: count=%d must be 1 .. %d", fn,
               count, op->d.k);
    FV_REQUIRE(op->ran, FV_ERR_BAD_STATE, "%s: fv_classify_run has not been called", fn);
    memcpy(out, op->host + (size_t)b * op->d.k, (size_t)count * sizeof *out);
    return FV_OK;
}

/* ---- segmentation ----------------------------------------------------------- */
struct fv_segment {
    fv_context *ctx;
    fv_segment_desc d;      /* normalized; palette NULL */
    unsigned char *classes; /* batch x height x width */
    float *pal;             /* premultiplied, 4 per class */
};

void fv_segment_palette_color(int k, uint8_t rgba[4]) {
    /* Pascal VOC's colour map: class bits spread over R, G, B from the top */
    int r = 0, g = 0, b = 0, c = k & 255;
    for (int j = 0; j < 8; j++, c >>= 3) {
        r |= (c & 1) << (7 - j);
        g |= ((c >> 1) & 1) << (7 - j);
        b |= ((c >> 2) & 1) << (7 - j);
    }
    rgba[0] = (uint8_t)r, rgba[1] = (uint8_t)g, rgba[2] = (uint8_t)b;
    rgba[3] = k == 0 ? 0 : 255;
}

fv_status fv_segment_create(fv_context *ctx, const fv_segment_desc *desc, fv_segment **out) {
    FV__HOLD(ctx);
    const char *op = "fv_segment_create";
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "%s: out is NULL", op);
    *out = NULL;
    FV_REQUIRE(ctx && desc, FV_ERR_BAD_PARAM, "%s: %s is NULL", op, ctx ? "desc" : "ctx");
    fv_segment_desc d = *desc;
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(d.reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: desc.reserved[%d] must be zero", op,
                   i);
    FV_REQUIRE(d.classes >= 1 && d.classes <= FV_SEGMENT_MAX_CLASSES, FV_ERR_BAD_PARAM,
               "%s: classes=%d must be 1 .. %d", op, d.classes, FV_SEGMENT_MAX_CLASSES);
    FV_REQUIRE(d.batch >= 1 && d.height >= 1 && d.width >= 1 && d.batch <= FV_NET_MAX_DIM &&
                   d.height <= FV_NET_MAX_DIM && d.width <= FV_NET_MAX_DIM,
               FV_ERR_BAD_PARAM, "%s: batch=%d height=%d width=%d must be 1 .. %d", op, d.batch,
               d.height, d.width, FV_NET_MAX_DIM);
    if (d.input_height == 0) d.input_height = d.height;
    if (d.input_width == 0) d.input_width = d.width;
    FV_REQUIRE(d.input_height >= 1 && d.input_width >= 1 && d.input_height <= FV_NET_MAX_DIM &&
                   d.input_width <= FV_NET_MAX_DIM,
               FV_ERR_BAD_PARAM, "%s: input size %dx%d must be 1 .. %d (0: the logits')", op,
               d.input_width, d.input_height, FV_NET_MAX_DIM);
    if (d.alpha == 0.0f) d.alpha = 0.5f;
    FV_REQUIRE(d.alpha > 0.0f && d.alpha <= 1.0f, FV_ERR_BAD_PARAM,
               "%s: alpha=%g must be in (0, 1] (0: 0.5)", op, (double)d.alpha);
    float pal[4 * FV_SEGMENT_MAX_CLASSES];
    for (int k = 0; k < d.classes; k++) {
        uint8_t c[4];
        if (d.palette)
            memcpy(c, d.palette + 4 * (size_t)k, 4);
        else
            fv_segment_palette_color(k, c);
        float a = (float)c[3] / 255.0f * d.alpha;
        for (int i = 0; i < 3; i++)
            pal[4 * k + i] = (float)c[i] * a;
        pal[4 * k + 3] = a;
    }
    d.palette = NULL;
    fv_segment *s = calloc(1, sizeof *s);
    FV_REQUIRE(s, FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    s->ctx = ctx;
    fv__obj_born(ctx, FV__OBJ_SEGMENT);
    s->d = d;
    const size_t map = (size_t)d.batch * d.height * d.width, pb = sizeof(float) * 4 * d.classes;
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    fv_status st = fv_pool_alloc(dev, map, (void **)&s->classes);
    if (st == FV_OK) st = fv_pool_alloc(dev, pb, (void **)&s->pal);
    /* set-up: the palette goes up once, and is waited for (pal is on our stack) */
    if (st == FV_OK) st = ctx->be->copy2d(ctx, s->pal, pb, pal, pb, pb, 1);
    if (st == FV_OK) st = fv_context_synchronize(ctx);
    if (st != FV_OK) {
        fv_segment_destroy(s);
        return fv__error_prefix(st, op);
    }
    *out = s;
    return FV_OK;
}

void fv_segment_destroy(fv_segment *op) {
    FV__HOLD_WAIT(op ? op->ctx : NULL);
    if (!op) return;
    fv__obj_gone(op->ctx, FV__OBJ_SEGMENT);
    (void)fv_context_synchronize(op->ctx);
    fv_pool *dev = op->ctx->pools[FV_POOL_DEVICE];
    if (op->classes) (void)fv_pool_free(dev, op->classes);
    if (op->pal) (void)fv_pool_free(dev, op->pal);
    free(op);
}

static bool out_format_ok(fv_pixel_format f) {
    return f == FV_PIXEL_RGB24 || f == FV_PIXEL_BGR24 || f == FV_PIXEL_RGBA32;
}

fv_status fv_segment_run(fv_segment *op, const fv_tensor *logits, int index,
                         const fv_region *region, const fv_image *frame, fv_image *out) {
    FV__HOLD(op ? op->ctx : NULL);
    const char *fn = "fv_segment_run";
    FV_REQUIRE(op, FV_ERR_BAD_PARAM, "%s: op is NULL", fn);
    fv_context *ctx = op->ctx;
    const fv_segment_desc *d = &op->d;
    FV_TRY(fv__tensor_check(fn, ctx, logits, "logits"));
    const fv_tensor_shape *s = &logits->shape;
    FV_REQUIRE(s->n == d->batch && s->c == d->classes && s->h == d->height && s->w == d->width,
               FV_ERR_BAD_SHAPE,
               "%s: logits (N=%d, C=%d, H=%d, W=%d), but the op was made for (%d, %d, %d, %d)", fn,
               s->n, s->c, s->h, s->w, d->batch, d->classes, d->height, d->width);
    FV_REQUIRE(index >= 0 && index < d->batch, FV_ERR_BAD_PARAM,
               "%s: index %d is outside the batch (N=%d)", fn, index, d->batch);
    fv_region r = {0, 0, d->input_width, d->input_height};
    if (region) r = *region;
    FV_REQUIRE(r.width >= 1 && r.height >= 1 && r.x >= 0 && r.y >= 0 &&
                   r.x + r.width <= d->input_width && r.y + r.height <= d->input_height,
               FV_ERR_BAD_PARAM, "%s: region (%d, %d) %dx%d is not inside the %dx%d input", fn, r.x,
               r.y, r.width, r.height, d->input_width, d->input_height);
    fv_image o, f;
    FV_TRY(fv__image_normalize(fn, out, &o));
    FV_REQUIRE(out_format_ok(o.format), FV_ERR_NOT_SUPPORTED,
               "%s: out is %s; RGB24, BGR24 or RGBA32 are written", fn,
               fv_pixel_format_name(o.format));
    if (frame) {
        FV_TRY(fv__image_normalize(fn, frame, &f));
        FV_REQUIRE(f.width == o.width && f.height == o.height, FV_ERR_BAD_PARAM,
                   "%s: frame %dx%d and out %dx%d must be of one size", fn, f.width, f.height,
                   o.width, o.height);
        FV_REQUIRE(f.data != o.data || (f.format == o.format && f.stride == o.stride),
                   FV_ERR_BAD_PARAM,
                   "%s: drawing in place needs frame and out of one format "
                   "and stride",
                   fn);
    }
    const size_t plane = (size_t)d->height * d->width;
    unsigned char *classes = op->classes + (size_t)index * plane;
    const double sx = (double)d->width / d->input_width, sy = (double)d->height / d->input_height;
    const double x0 = r.x * sx, y0 = r.y * sy, xs = r.width * sx, ys = r.height * sy;
    fv__seg_params p = {.classes = classes,
                        .mw = d->width,
                        .mh = d->height,
                        .ox = (float)x0,
                        .oy = (float)y0,
                        .fx = (float)(xs / o.width),
                        .fy = (float)(ys / o.height),
                        .x_lo = (float)x0,
                        .x_hi = (float)(xs > 1 ? x0 + xs - 1 : x0),
                        .y_lo = (float)y0,
                        .y_hi = (float)(ys > 1 ? y0 + ys - 1 : y0),
                        .pal = op->pal,
                        .classes_n = d->classes,
                        .out_format = o.format,
                        .out_w = o.width,
                        .out_h = o.height,
                        .out = o.data,
                        .out_stride = o.stride};
    if (frame) {
        p.frame_format = f.format;
        p.frame = f.data, p.frame_uv = f.uv;
        p.frame_stride = f.stride, p.frame_uv_stride = f.uv_stride;
    }
    const fv__vision_ops *vo = fv__vision_ops_of(ctx);
    fv__view v = fv__tensor_view(logits);
    FV_TRY(vo->argmax(ctx, &v, index, classes));
    return vo->seg_blend(ctx, &p);
}
