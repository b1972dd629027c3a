/* Front end of fv_preprocess (fovea/preprocess.h): argument checks, the
 * resize geometry and the normalisation constants, computed once here so
 * that both backends' kernels (backend/vision_ops.h) get the same numbers. */
#include <math.h>
#include <string.h>
#include "internal.h"
#include "vision.h"
#include "../backend/vision_ops.h"

fv_status fv_preprocess_region(int src_w, int src_h, int dst_w, int dst_h, fv_resize_fit fit,
                               fv_region *out) {
    const char *op = "fv_preprocess_region";
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "%s: out is NULL", op);
    FV_REQUIRE(src_w >= 1 && src_h >= 1 && dst_w >= 1 && dst_h >= 1, FV_ERR_BAD_PARAM,
               "%s: sizes %dx%d -> %dx%d: every one must be >= 1", op, src_w, src_h, dst_w, dst_h);
    FV_REQUIRE(fit == FV_RESIZE_STRETCH || fit == FV_RESIZE_LETTERBOX, FV_ERR_BAD_PARAM,
               "%s: fit=%d is not STRETCH (0) or LETTERBOX (1)", op, (int)fit);
    if (fit == FV_RESIZE_STRETCH) {
        *out = (fv_region){0, 0, dst_w, dst_h};
        return FV_OK;
    }
    double sw = (double)dst_w / src_w, sh = (double)dst_h / src_h, s = sw < sh ? sw : sh;
    long w = lround(src_w * s), h = lround(src_h * s);
    w = w < 1 ? 1 : w > dst_w ? dst_w : w;
    h = h < 1 ? 1 : h > dst_h ? dst_h : h;
    *out = (fv_region){(dst_w - (int)w) / 2, (dst_h - (int)h) / 2, (int)w, (int)h};
    return FV_OK;
}

fv__view fv__tensor_view(const fv_tensor *t) {
    const fv_tensor_shape *s = &t->shape;
    fv__view v = {.dtype = s->dtype,
                  .n = s->n,
                  .h = s->h,
                  .w = s->w,
                  .c = s->c,
                  .cw = s->c_stored,
                  .ps = s->c_stored,
                  .data = fv__tensor_ptr(t)};
    return v;
}

fv_status fv__tensor_check(const char *op, const fv_context *ctx, const fv_tensor *t,
                           const char *what) {
    FV_REQUIRE(t, FV_ERR_BAD_PARAM, "%s: %s is NULL", op, what);
    FV_REQUIRE(t->ctx == ctx, FV_ERR_BAD_PARAM, "%s: %s belongs to another context", op, what);
    FV_REQUIRE(t->shape.dtype == FV_DTYPE_F16 || t->shape.dtype == FV_DTYPE_F32, FV_ERR_BAD_SHAPE,
               "%s: %s dtype must be F16 or F32 (a net's tensors are)", op, what);
    FV_REQUIRE(fv__tensor_usable(ctx, t), FV_ERR_BAD_PARAM,
               "%s: %s lives in the %s pool, which the %s backend's kernels cannot read (use a "
               "device or mapped pool)",
               op, what, fv_pool_kind_name(t->pool->kind), ctx->be->name);
    return FV_OK;
}

/* Fills the kernels' parameters from the checked arguments. */
static fv_status fill_params(const char *op, const fv_image *img, const fv_tensor_shape *s,
                             const fv_preprocess_desc *d, fv__pre_params *p) {
    memset(p, 0, sizeof *p);
    p->format = img->format;
    p->src_w = img->width, p->src_h = img->height;
    p->data = img->data, p->uv = img->uv;
    p->stride = img->stride, p->uv_stride = img->uv_stride;
    fv_region r;
    FV_TRY(fv_preprocess_region(img->width, img->height, s->w, s->h, d->fit, &r));
    p->rx = r.x, p->ry = r.y, p->rw = r.width, p->rh = r.height;
    p->fx = (float)((double)img->width / r.width);
    p->fy = (float)((double)img->height / r.height);
    p->channels = s->c;
    p->read_channels = s->c == 3 && img->format != FV_PIXEL_GRAY8 ? 3 : 1;
    float scale = d->scale != 0.0f ? d->scale : 1.0f / 255.0f;
    FV_REQUIRE(isfinite(scale), FV_ERR_BAD_PARAM, "%s: scale must be finite", op);
    for (int c = 0; c < s->c; c++) {
        /* tensor channel c reads R, G, B value c, or the reverse with bgr */
        int from = p->read_channels == 1 ? 0 : (d->bgr ? 2 - c : c);
        p->src_ch[c] = from;
        float mean = d->mean[c], sd = d->std[c] != 0.0f ? d->std[c] : 1.0f;
        FV_REQUIRE(isfinite(mean) && isfinite(sd) && sd > 0.0f, FV_ERR_BAD_PARAM,
                   "%s: channel %d: mean %g and std %g must be finite, std > 0", op, c,
                   (double)mean, (double)sd);
        p->a[c] = scale / sd;
        p->b[c] = -mean / sd;
        float fill = d->fill[s->c == 1 ? 0 : (d->bgr ? 2 - c : c)];
        FV_REQUIRE(isfinite(fill), FV_ERR_BAD_PARAM, "%s: fill must be finite", op);
        p->fill[c] = fv__add(fv__mul(fill, p->a[c]), p->b[c]);
        FV_REQUIRE(isfinite(p->a[c]) && isfinite(p->b[c]), FV_ERR_BAD_PARAM,
                   "%s: channel %d: scale / std or mean / std overflows", op, c);
    }
    return FV_OK;
}

fv_status fv_preprocess(fv_context *ctx, const fv_image *src, fv_tensor *dst, int index,
                        const fv_preprocess_desc *desc) {
    FV__HOLD(ctx);
    const char *op = "fv_preprocess";
    FV_REQUIRE(ctx, FV_ERR_BAD_PARAM, "%s: ctx is NULL", op);
    fv_image img;
    FV_TRY(fv__image_normalize(op, src, &img));
    FV_TRY(fv__tensor_check(op, ctx, dst, "dst"));
    const fv_tensor_shape *s = &dst->shape;
    FV_REQUIRE(s->c == 1 || s->c == 3, FV_ERR_BAD_SHAPE,
               "%s: dst has C=%d; a camera frame fills 1 (grey) or 3 (colour) channels", op, s->c);
    FV_REQUIRE(index >= 0 && index < s->n, FV_ERR_BAD_PARAM,
               "%s: index %d is outside the batch (N=%d)", op, index, s->n);
    fv_preprocess_desc d;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(d.reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: desc.reserved[%d] must be zero", op,
                   i);
    FV_REQUIRE(d.bgr == 0 || d.bgr == 1, FV_ERR_BAD_PARAM, "%s: desc.bgr=%d must be 0 or 1", op,
               d.bgr);
    fv__pre_params p;
    FV_TRY(fill_params(op, &img, s, &d, &p));
    fv__view out = fv__tensor_view(dst);
    return fv__vision_ops_of(ctx)->preprocess(ctx, &p, &out, index);
}
