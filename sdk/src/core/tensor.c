/* Tensors: NHWC storage carved from a pool; F16 channels padded to 8. */
#include <stdlib.h>
#include <string.h>
#include "checked.h"
#include "internal.h"

static size_t dtype_bytes(fv_dtype t) {
    return t == FV_DTYPE_F32 ? 4 : t == FV_DTYPE_F16 ? 2 : 1;
}

static const char *dtype_name(fv_dtype t) {
    return t == FV_DTYPE_F32 ? "F32" : t == FV_DTYPE_F16 ? "F16" : t == FV_DTYPE_U8 ? "U8" : "?";
}

bool fv__tensor_usable(const fv_context *ctx, const fv_tensor *t) {
    if (ctx->backend == FV_BACKEND_CPU) return true;
    return t->pool->kind == FV_POOL_DEVICE || t->pool->kind == FV_POOL_MAPPED;
}

fv_status fv_tensor_create(fv_context *ctx, const fv_tensor_desc *d, fv_tensor **out) {
    FV__HOLD(ctx);
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_tensor_create: out is NULL");
    *out = NULL;
    FV_REQUIRE(ctx && d, FV_ERR_BAD_PARAM, "fv_tensor_create: %s is NULL", ctx ? "desc" : "ctx");
    FV_REQUIRE(d->dtype == FV_DTYPE_F16 || d->dtype == FV_DTYPE_F32 || d->dtype == FV_DTYPE_U8,
               FV_ERR_BAD_PARAM, "fv_tensor_create: dtype=%d is not F16, F32 or U8", (int)d->dtype);
    FV_REQUIRE(d->layout == FV_LAYOUT_NHWC, FV_ERR_BAD_PARAM,
               "fv_tensor_create: layout=%d is not NHWC (0)", (int)d->layout);
    int n = d->n ? d->n : 1;
    FV_REQUIRE(n >= 1 && d->h >= 1 && d->w >= 1 && d->c >= 1, FV_ERR_BAD_PARAM,
               "fv_tensor_create: shape N=%d H=%d W=%d C=%d: every dimension must be >= 1", n, d->h,
               d->w, d->c);
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(d->reserved[i] == 0, FV_ERR_BAD_PARAM,
                   "fv_tensor_create: reserved[%d] must be zero", i);
    fv_pool *pool = d->pool ? d->pool : ctx->pools[FV_POOL_DEVICE];
    FV_REQUIRE(pool->ctx == ctx, FV_ERR_BAD_PARAM,
               "fv_tensor_create: pool '%s' belongs to another context", pool->name);

    fv_tensor_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.dtype = d->dtype;
    sh.n = n, sh.h = d->h, sh.w = d->w, sh.c = d->c;
    sh.c_stored = d->c;
    sh.elem_bytes = dtype_bytes(d->dtype);
    size_t row, plane, batch;
    int dims[4] = {n, d->h, d->w, d->c};
    bool fits = (d->dtype != FV_DTYPE_F16 || fv__round_up_int(d->c, 8, &sh.c_stored)) &&
                fv__mul_size((size_t)sh.c_stored, (size_t)sh.w, &row) &&
                fv__mul_size(row, (size_t)sh.h, &plane) && fv__mul_size(plane, (size_t)n, &batch) &&
                (uint64_t)batch < ((uint64_t)1 << 40) && /* far past any pool */
                fv__mul_size(batch, sh.elem_bytes, &sh.bytes) &&
                fv__dims_size(dims, 4, &sh.dense_bytes) &&
                fv__mul_size(sh.dense_bytes, sh.elem_bytes, &sh.dense_bytes);
    FV_REQUIRE(fits, FV_ERR_BAD_PARAM,
               "fv_tensor_create: shape N=%d H=%d W=%d C=%d of %s is too large (2^40 elements "
               "at most, channels padded)",
               n, d->h, d->w, d->c, dtype_name(d->dtype));
    sh.stride[3] = 1;
    sh.stride[2] = (size_t)sh.c_stored;
    sh.stride[1] = row;
    sh.stride[0] = plane;

    fv_tensor *t = calloc(1, sizeof *t);
    FV_REQUIRE(t, FV_ERR_OUT_OF_MEMORY, "fv_tensor_create: out of host memory");
    fv_status s = fv_pool_alloc(pool, sh.bytes, &t->data);
    if (s != FV_OK) {
        free(t);
        return fv__error_prefix(s, "fv_tensor_create");
    }
    s = ctx->be->mem_zero(ctx, pool->kind, t->data, sh.bytes);
    if (s != FV_OK) {
        fv_pool_free(pool, t->data);
        free(t);
        return s;
    }
    t->ctx = ctx;
    t->pool = pool;
    t->shape = sh;
    t->dev_data = fv_pool_device_pointer(pool, t->data);
    fv__obj_born(ctx, FV__OBJ_TENSOR);
    *out = t;
    return FV_OK;
}

void fv_tensor_destroy(fv_tensor *t) {
    FV__HOLD_WAIT(t ? t->ctx : NULL);
    if (!t) return;
    fv__obj_gone(t->ctx, FV__OBJ_TENSOR);
    fv_pool_free(t->pool, t->data);
    free(t);
}

fv_status fv_tensor_shape_get(const fv_tensor *t, fv_tensor_shape *out) {
    FV__HOLD(t ? t->ctx : NULL);
    FV_REQUIRE(t && out, FV_ERR_BAD_PARAM, "fv_tensor_shape_get: %s is NULL", t ? "out" : "tensor");
    *out = t->shape;
    return FV_OK;
}

void *fv_tensor_data(const fv_tensor *t) {
    return t ? t->data : NULL;
}

fv_pool *fv_tensor_pool(const fv_tensor *t) {
    return t ? t->pool : NULL;
}

static fv_status check_host_copy(const char *what, fv_context *ctx, const fv_tensor *t,
                                 const void *host, size_t bytes) {
    FV_REQUIRE(ctx && t && host, FV_ERR_BAD_PARAM, "%s: %s is NULL", what,
               !ctx ? "ctx"
               : !t ? "tensor"
                    : "host pointer");
    FV_REQUIRE(t->ctx == ctx, FV_ERR_BAD_PARAM, "%s: tensor belongs to another context", what);
    FV_REQUIRE(bytes == t->shape.dense_bytes, FV_ERR_BAD_SHAPE,
               "%s: %zu bytes given but the %s tensor N=%d H=%d W=%d C=%d holds %zu dense bytes",
               what, bytes, dtype_name(t->shape.dtype), t->shape.n, t->shape.h, t->shape.w,
               t->shape.c, t->shape.dense_bytes);
    return FV_OK;
}

static size_t pixels(const fv_tensor_shape *s) {
    return (size_t)s->n * s->h * s->w;
}

fv_status fv_tensor_upload(fv_context *ctx, fv_tensor *t, const void *src, size_t bytes) {
    FV__HOLD(ctx);
    FV_TRY(check_host_copy("fv_tensor_upload", ctx, t, src, bytes));
    const fv_tensor_shape *s = &t->shape;
    size_t row = (size_t)s->c * s->elem_bytes;
    if (s->c == s->c_stored) return ctx->be->copy2d(ctx, t->data, bytes, src, bytes, bytes, 1);
    return ctx->be->copy2d(ctx, t->data, (size_t)s->c_stored * s->elem_bytes, src, row, row,
                           pixels(s));
}

fv_status fv_tensor_download(fv_context *ctx, const fv_tensor *t, void *dst, size_t bytes) {
    FV__HOLD(ctx);
    FV_TRY(check_host_copy("fv_tensor_download", ctx, t, dst, bytes));
    const fv_tensor_shape *s = &t->shape;
    size_t row = (size_t)s->c * s->elem_bytes;
    if (s->c == s->c_stored) return ctx->be->copy2d(ctx, dst, bytes, t->data, bytes, bytes, 1);
    return ctx->be->copy2d(ctx, dst, row, t->data, (size_t)s->c_stored * s->elem_bytes, row,
                           pixels(s));
}

static fv_status same_shape(const char *what, const fv_tensor *a, const fv_tensor *b) {
    const fv_tensor_shape *x = &a->shape, *y = &b->shape;
    FV_REQUIRE(x->n == y->n && x->h == y->h && x->w == y->w && x->c == y->c, FV_ERR_BAD_SHAPE,
               "%s: shapes differ: N=%d H=%d W=%d C=%d vs N=%d H=%d W=%d C=%d", what, x->n, x->h,
               x->w, x->c, y->n, y->h, y->w, y->c);
    return FV_OK;
}

fv_status fv_tensor_copy(fv_context *ctx, fv_tensor *dst, const fv_tensor *src) {
    FV__HOLD(ctx);
    FV_REQUIRE(ctx && dst && src, FV_ERR_BAD_PARAM, "fv_tensor_copy: %s is NULL",
               !ctx   ? "ctx"
               : !dst ? "dst"
                      : "src");
    FV_REQUIRE(dst->ctx == ctx && src->ctx == ctx, FV_ERR_BAD_PARAM,
               "fv_tensor_copy: a tensor belongs to another context");
    FV_TRY(same_shape("fv_tensor_copy", dst, src));
    FV_REQUIRE(dst->shape.dtype == src->shape.dtype, FV_ERR_BAD_SHAPE,
               "fv_tensor_copy: dtypes differ (%s vs %s); use fv_tensor_convert",
               dtype_name(dst->shape.dtype), dtype_name(src->shape.dtype));
    if (dst == src) return FV_OK;
    /* padding is zero in both, so a whole-buffer copy keeps it zero */
    return ctx->be->copy2d(ctx, dst->data, dst->shape.bytes, src->data, src->shape.bytes,
                           src->shape.bytes, 1);
}

fv_status fv_tensor_convert(fv_context *ctx, fv_tensor *dst, const fv_tensor *src) {
    FV__HOLD(ctx);
    FV_REQUIRE(ctx && dst && src, FV_ERR_BAD_PARAM, "fv_tensor_convert: %s is NULL",
               !ctx   ? "ctx"
               : !dst ? "dst"
                      : "src");
    FV_REQUIRE(dst->ctx == ctx && src->ctx == ctx, FV_ERR_BAD_PARAM,
               "fv_tensor_convert: a tensor belongs to another context");
    FV_TRY(same_shape("fv_tensor_convert", dst, src));
    fv_dtype a = src->shape.dtype, b = dst->shape.dtype;
    bool ok = (a == FV_DTYPE_F32 && b == FV_DTYPE_F16) ||
              (a == FV_DTYPE_F16 && b == FV_DTYPE_F32) ||
              (a == FV_DTYPE_U8 && (b == FV_DTYPE_F16 || b == FV_DTYPE_F32)) || a == b;
    FV_REQUIRE(ok, FV_ERR_NOT_SUPPORTED, "fv_tensor_convert: %s -> %s is not supported",
               dtype_name(a), dtype_name(b));
    FV_REQUIRE(fv__tensor_usable(ctx, dst) && fv__tensor_usable(ctx, src), FV_ERR_BAD_PARAM,
               "fv_tensor_convert: on the CUDA backend both tensors must live in a device or "
               "mapped pool (got %s -> %s)",
               fv_pool_kind_name(src->pool->kind), fv_pool_kind_name(dst->pool->kind));
    if (a == b) return fv_tensor_copy(ctx, dst, src);
    return ctx->be->convert(ctx, dst, src);
}
