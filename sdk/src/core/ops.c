/* Front end of the ops: argument checks and defaults, then the backend. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "checked.h"
#include "internal.h"
#include "profile.h"
#include "../backend/activation.h"

const char *fv_activation_name(fv_activation a) {
    switch (a) {
    case FV_ACT_IDENTITY:
        return "identity";
    case FV_ACT_RELU:
        return "relu";
    case FV_ACT_CLIPPED_RELU:
        return "clipped_relu";
    case FV_ACT_SIGMOID:
        return "sigmoid";
    case FV_ACT_TANH:
        return "tanh";
    case FV_ACT_LEAKY_RELU:
        return "leaky_relu";
    case FV_ACT_HARD_SIGMOID:
        return "hard_sigmoid";
    case FV_ACT_HARD_SWISH:
        return "hard_swish";
    case FV_ACT_SILU:
        return "silu";
    }
    return "unknown";
}

float fv__activation_alpha(fv_activation act, float alpha) {
    if (alpha != 0.0f) return alpha;
    if (act == FV_ACT_CLIPPED_RELU) return 6.0f;
    if (act == FV_ACT_LEAKY_RELU) return 0.01f;
    if (act == FV_ACT_HARD_SIGMOID) return 1.0f / 6.0f;
    return 0.0f;
}

float fv__activate(fv_activation act, float alpha, float x) {
    return fv__act(act, alpha, x);
}

/* The activations a conv2d and fv_add fuse (the rest run as net layers). */
static bool act_valid(fv_activation a) {
    return (int)a >= FV_ACT_IDENTITY && (int)a <= FV_ACT_LEAKY_RELU;
}

int fv_conv_output_dim(int in, int kernel, int stride, int pad, int dilation) {
    if (in < 1 || kernel < 1 || stride < 1 || pad < 0 || dilation < 1) return 0;
    long long span = (long long)dilation * (kernel - 1) + 1;
    long long avail = (long long)in + 2LL * pad - span;
    if (avail < 0) return 0;
    long long out = avail / stride + 1;
    return out > INT_MAX ? 0 : (int)out; /* an output no int can hold is no output */
}

static const char *dtype_name(fv_dtype t) {
    return t == FV_DTYPE_F32 ? "F32" : t == FV_DTYPE_F16 ? "F16" : t == FV_DTYPE_U8 ? "U8" : "?";
}

/* Shape and dtype check of an op's tensor. */
static fv_status check_tensor(const char *op, const char *role, const fv_context *ctx,
                              const fv_tensor *t, int n, int h, int w, int c, fv_dtype dt) {
    FV_REQUIRE(t, FV_ERR_BAD_PARAM, "%s: %s tensor is NULL", op, role);
    FV_REQUIRE(t->ctx == ctx, FV_ERR_BAD_PARAM, "%s: %s tensor belongs to another context", op,
               role);
    const fv_tensor_shape *s = &t->shape;
    FV_REQUIRE(s->n == n && s->h == h && s->w == w && s->c == c, FV_ERR_BAD_SHAPE,
               "%s: %s tensor is N=%d H=%d W=%d C=%d but N=%d H=%d W=%d C=%d is expected", op, role,
               s->n, s->h, s->w, s->c, n, h, w, c);
    FV_REQUIRE(s->dtype == dt, FV_ERR_BAD_SHAPE, "%s: %s tensor is %s but %s is expected", op, role,
               dtype_name(s->dtype), dtype_name(dt));
    FV_REQUIRE(fv__tensor_usable(ctx, t), FV_ERR_BAD_PARAM,
               "%s: %s tensor lives in the %s pool '%s'; on the CUDA backend ops need device or "
               "mapped memory (fv_tensor_copy it there first)",
               op, role, fv_pool_kind_name(t->pool->kind), t->pool->name);
    return FV_OK;
}

/* ---- conv2d ------------------------------------------------------------- */
static fv_status conv_check(const fv_conv2d_desc *d) {
    const char *op = "conv2d";
    FV_REQUIRE(d->n >= 1 && d->h >= 1 && d->w >= 1 && d->c >= 1, FV_ERR_BAD_PARAM,
               "%s: input N=%d H=%d W=%d C=%d: every dimension must be >= 1", op, d->n, d->h, d->w,
               d->c);
    FV_REQUIRE(d->k >= 1, FV_ERR_BAD_PARAM, "%s: K=%d output channels, must be >= 1", op, d->k);
    FV_REQUIRE(d->r >= 1 && d->s >= 1, FV_ERR_BAD_PARAM, "%s: kernel R=%d S=%d, both must be >= 1",
               op, d->r, d->s);
    FV_REQUIRE(d->stride_h >= 1 && d->stride_w >= 1, FV_ERR_BAD_PARAM,
               "%s: stride %dx%d, both must be >= 1 (0 means 1)", op, d->stride_h, d->stride_w);
    FV_REQUIRE(d->pad_h >= 0 && d->pad_w >= 0, FV_ERR_BAD_PARAM, "%s: padding %dx%d must be >= 0",
               op, d->pad_h, d->pad_w);
    FV_REQUIRE(d->dilation_h >= 1 && d->dilation_w >= 1, FV_ERR_BAD_PARAM,
               "%s: dilation %dx%d, both must be >= 1 (0 means 1)", op, d->dilation_h,
               d->dilation_w);
    FV_REQUIRE(d->groups >= 1, FV_ERR_BAD_PARAM, "%s: groups=%d must be >= 1", op, d->groups);
    FV_REQUIRE(d->c % d->groups == 0 && d->k % d->groups == 0, FV_ERR_BAD_PARAM,
               "%s: groups=%d must divide input C=%d and K=%d", op, d->groups, d->c, d->k);
    FV_REQUIRE(act_valid(d->activation), FV_ERR_BAD_PARAM, "%s: activation=%d is unknown", op,
               (int)d->activation);
    FV_REQUIRE(isfinite(d->activation_alpha), FV_ERR_BAD_PARAM,
               "%s: activation_alpha is not finite", op);
    FV_REQUIRE(d->dtype == FV_DTYPE_F16 || d->dtype == FV_DTYPE_F32, FV_ERR_BAD_PARAM,
               "%s: dtype %s: only F16 and F32 are supported", op, dtype_name(d->dtype));
    FV_REQUIRE(d->weights, FV_ERR_BAD_PARAM, "%s: weights are NULL", op);
    FV_REQUIRE((d->flags & ~FV__CONV2D_FLAGS) == 0, FV_ERR_BAD_PARAM, "%s: unknown flags 0x%x", op,
               (unsigned)d->flags);
    FV_REQUIRE((d->flags & (FV_CONV2D_NO_DIRECT | FV_CONV2D_DIRECT)) !=
                   (FV_CONV2D_NO_DIRECT | FV_CONV2D_DIRECT),
               FV_ERR_BAD_PARAM,
               "%s: flags FV_CONV2D_DIRECT and FV_CONV2D_NO_DIRECT exclude each other", op);
    for (int i = 0; i < 7; i++)
        FV_REQUIRE(d->reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: reserved[%d] must be zero", op, i);
    int p = fv_conv_output_dim(d->h, d->r, d->stride_h, d->pad_h, d->dilation_h);
    int q = fv_conv_output_dim(d->w, d->s, d->stride_w, d->pad_w, d->dilation_w);
    FV_REQUIRE(p >= 1 && q >= 1, FV_ERR_BAD_PARAM,
               "%s: a %dx%d kernel (dilation %dx%d) does not fit a %dx%d input padded by %dx%d "
               "(or the output would not fit an int)",
               op, d->r, d->s, d->dilation_h, d->dilation_w, d->h, d->w, d->pad_h, d->pad_w);
    int wdims[4] = {d->k, d->c / d->groups, d->r, d->s};
    size_t nw;
    FV_REQUIRE(fv__dims_size(wdims, 4, &nw) && (uint64_t)nw < ((uint64_t)1 << 32), FV_ERR_BAD_PARAM,
               "%s: K=%d x C/groups=%d x R=%d x S=%d weights are too many (2^32 at most)", op, d->k,
               d->c / d->groups, d->r, d->s);
    return FV_OK;
}

fv_status fv_conv2d_create(fv_context *ctx, const fv_conv2d_desc *desc, fv_conv2d **out) {
    FV__HOLD(ctx);
    return fv__conv2d_create_into(ctx, desc, 0, out);
}

void fv__conv2d_op_key(const fv_conv2d *op, char *out, size_t n) {
    fv__conv2d_key(&op->desc, op->has_bias, out, n);
    size_t len = strlen(out);
    if (op->ys && len < n) snprintf(out + len, n - len, ":y%d", op->ys);
}

fv_status fv__conv2d_create_into(fv_context *ctx, const fv_conv2d_desc *desc, int ys,
                                 fv_conv2d **out) {
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_conv2d_create: out is NULL");
    *out = NULL;
    FV_REQUIRE(ctx && desc, FV_ERR_BAD_PARAM, "fv_conv2d_create: %s is NULL", ctx ? "desc" : "ctx");
    fv_conv2d_desc d = *desc;
    if (d.n == 0) d.n = 1;
    if (d.stride_h == 0) d.stride_h = 1;
    if (d.stride_w == 0) d.stride_w = 1;
    if (d.dilation_h == 0) d.dilation_h = 1;
    if (d.dilation_w == 0) d.dilation_w = 1;
    if (d.groups == 0) d.groups = 1;
    FV_TRY(conv_check(&d));
    if (ys) {
        int f16 = d.dtype == FV_DTYPE_F16;
        FV_REQUIRE(
            ys >= d.k && (!f16 || (ys % 8 == 0 && d.k % 8 == 0)), FV_ERR_BAD_PARAM,
            "conv2d: an output slice of pixel stride %d with K=%d: the stride must be >= K%s", ys,
            d.k, f16 ? ", and both multiples of 8 on F16" : "");
        FV_REQUIRE(!(d.flags & FV_CONV2D_RESIDUAL), FV_ERR_BAD_PARAM,
                   "conv2d: an op with FV_CONV2D_RESIDUAL writes dense outputs only");
    }
    d.activation_alpha = fv__activation_alpha(d.activation, d.activation_alpha);
    size_t nw = (size_t)d.k * (d.c / d.groups) * d.r * d.s;
    for (size_t i = 0; i < nw; i++)
        FV_REQUIRE(isfinite(desc->weights[i]), FV_ERR_BAD_PARAM, "conv2d: weight %zu is not finite",
                   i);
    if (desc->bias)
        for (int i = 0; i < d.k; i++)
            FV_REQUIRE(isfinite(desc->bias[i]), FV_ERR_BAD_PARAM, "conv2d: bias %d is not finite",
                       i);

    fv_conv2d *op = calloc(1, sizeof *op);
    FV_REQUIRE(op, FV_ERR_OUT_OF_MEMORY, "conv2d: out of host memory");
    op->ctx = ctx;
    op->has_bias = desc->bias != NULL;
    d.weights = NULL;
    d.bias = NULL;
    op->desc = d;
    op->p = fv_conv_output_dim(d.h, d.r, d.stride_h, d.pad_h, d.dilation_h);
    op->q = fv_conv_output_dim(d.w, d.s, d.stride_w, d.pad_w, d.dilation_w);
    op->ys = ys;
    fv_status s = ctx->be->conv2d_create(op, desc->weights, desc->bias);
    if (s != FV_OK) {
        free(op);
        return s;
    }
    fv__obj_born(ctx, FV__OBJ_CONV2D);
    *out = op;
    return FV_OK;
}

void fv_conv2d_destroy(fv_conv2d *op) {
    FV__HOLD_WAIT(op ? op->ctx : NULL);
    if (!op) return;
    fv__obj_gone(op->ctx, FV__OBJ_CONV2D);
    op->ctx->be->conv2d_destroy(op);
    free(op);
}

void fv_conv2d_output_shape(const fv_conv2d *op, int *n, int *h, int *w, int *c) {
    if (!op) return;
    if (n) *n = op->desc.n;
    if (h) *h = op->p;
    if (w) *w = op->q;
    if (c) *c = op->desc.k;
}

fv_status fv_conv2d_info_get(const fv_conv2d *op, fv_conv2d_info *out) {
    FV__HOLD(op ? op->ctx : NULL);
    FV_REQUIRE(op && out, FV_ERR_BAD_PARAM, "fv_conv2d_info_get: %s is NULL", op ? "out" : "op");
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", op->ctx->be->name);
    if (op->ctx->be->conv2d_info) op->ctx->be->conv2d_info(op, out);
    return FV_OK;
}

static fv_status conv_check_tensors(fv_conv2d *op, const fv_tensor *in, const fv_tensor *res,
                                    const fv_tensor *out) {
    const fv_conv2d_desc *d = &op->desc;
    FV_TRY(check_tensor("conv2d", "input", op->ctx, in, d->n, d->h, d->w, d->c, d->dtype));
    FV_TRY(check_tensor("conv2d", "output", op->ctx, out, d->n, op->p, op->q, d->k, d->dtype));
    size_t ys = op->ys ? (size_t)op->ys : (size_t)out->shape.c_stored;
    FV_REQUIRE(out->shape.stride[2] == ys && out->shape.stride[1] == ys * (size_t)op->q &&
                   out->shape.stride[0] == ys * (size_t)op->q * (size_t)op->p,
               FV_ERR_BAD_SHAPE,
               "conv2d: the output tensor's pixel stride is %zu elements but the op writes %zu",
               out->shape.stride[2], ys);
    FV_REQUIRE(!op->ys || d->dtype != FV_DTYPE_F16 || (uintptr_t)fv__tensor_ptr(out) % 16 == 0,
               FV_ERR_BAD_PARAM, "conv2d: an F16 output slice must be 16-byte aligned");
    FV_REQUIRE(in != out && in->data != out->data, FV_ERR_BAD_PARAM,
               "conv2d: input and output must be distinct tensors");
    if (d->flags & FV_CONV2D_RESIDUAL) {
        FV_REQUIRE(res, FV_ERR_BAD_PARAM,
                   "conv2d: the op was created with FV_CONV2D_RESIDUAL: run it with "
                   "fv_conv2d_forward_residual and a residual tensor");
        FV_TRY(
            check_tensor("conv2d", "residual", op->ctx, res, d->n, op->p, op->q, d->k, d->dtype));
        FV_REQUIRE(res->data != out->data, FV_ERR_BAD_PARAM,
                   "conv2d: the residual must be distinct from the output");
    } else {
        FV_REQUIRE(!res, FV_ERR_BAD_PARAM,
                   "conv2d: a residual was given but the op was created without "
                   "FV_CONV2D_RESIDUAL");
    }
    return FV_OK;
}

fv_status fv_conv2d_bind(fv_conv2d *op, const fv_tensor *in, fv_tensor *out) {
    FV__HOLD(op ? op->ctx : NULL);
    return fv_conv2d_bind_residual(op, in, NULL, out);
}

fv_status fv_conv2d_bind_residual(fv_conv2d *op, const fv_tensor *in, const fv_tensor *residual,
                                  fv_tensor *out) {
    FV__HOLD(op ? op->ctx : NULL);
    FV_REQUIRE(op, FV_ERR_BAD_PARAM, "fv_conv2d_bind: op is NULL");
    FV_TRY(conv_check_tensors(op, in, residual, out));
    return op->ctx->be->conv2d_bind ? op->ctx->be->conv2d_bind(op, in, residual, out) : FV_OK;
}

fv_status fv_conv2d_forward(fv_conv2d *op, const fv_tensor *in, fv_tensor *out) {
    FV__HOLD(op ? op->ctx : NULL);
    return fv_conv2d_forward_residual(op, in, NULL, out);
}

fv_status fv_conv2d_forward_residual(fv_conv2d *op, const fv_tensor *in, const fv_tensor *residual,
                                     fv_tensor *out) {
    FV__HOLD(op ? op->ctx : NULL);
    FV_REQUIRE(op, FV_ERR_BAD_PARAM, "fv_conv2d_forward: op is NULL");
    FV_TRY(conv_check_tensors(op, in, residual, out));
    return op->ctx->be->conv2d_forward(op, in, residual, out);
}

/* ---- pooling ------------------------------------------------------------ */
fv_status fv_pooling2d(fv_context *ctx, const fv_pooling_desc *desc, const fv_tensor *in,
                       fv_tensor *out) {
    FV__HOLD(ctx);
    const char *op = "pooling2d";
    FV_REQUIRE(ctx && desc, FV_ERR_BAD_PARAM, "%s: %s is NULL", op, ctx ? "desc" : "ctx");
    fv_pooling_desc d = *desc;
    FV_REQUIRE((int)d.mode >= FV_POOLING_MAX && (int)d.mode <= FV_POOLING_AVG_INCLUDE_PAD,
               FV_ERR_BAD_PARAM, "%s: mode=%d is unknown", op, (int)d.mode);
    FV_REQUIRE(d.r >= 1 && d.s >= 1, FV_ERR_BAD_PARAM, "%s: window %dx%d, both must be >= 1", op,
               d.r, d.s);
    if (d.stride_h == 0) d.stride_h = d.r;
    if (d.stride_w == 0) d.stride_w = d.s;
    FV_REQUIRE(d.stride_h >= 1 && d.stride_w >= 1, FV_ERR_BAD_PARAM,
               "%s: stride %dx%d must be >= 1", op, d.stride_h, d.stride_w);
    FV_REQUIRE(d.pad_h >= 0 && d.pad_w >= 0 && d.pad_h < d.r && d.pad_w < d.s, FV_ERR_BAD_PARAM,
               "%s: padding %dx%d must be >= 0 and smaller than the %dx%d window", op, d.pad_h,
               d.pad_w, d.r, d.s);
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(d.reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: reserved[%d] must be zero", op, i);
    FV_REQUIRE(in, FV_ERR_BAD_PARAM, "%s: input tensor is NULL", op);
    const fv_tensor_shape *s = &in->shape;
    FV_REQUIRE(s->dtype != FV_DTYPE_U8, FV_ERR_BAD_SHAPE, "%s: U8 tensors are not supported", op);
    int p = fv_conv_output_dim(s->h, d.r, d.stride_h, d.pad_h, 1);
    int q = fv_conv_output_dim(s->w, d.s, d.stride_w, d.pad_w, 1);
    FV_REQUIRE(p >= 1 && q >= 1, FV_ERR_BAD_SHAPE, "%s: a %dx%d window does not fit %dx%d input",
               op, d.r, d.s, s->h, s->w);
    FV_TRY(check_tensor(op, "input", ctx, in, s->n, s->h, s->w, s->c, s->dtype));
    FV_TRY(check_tensor(op, "output", ctx, out, s->n, p, q, s->c, s->dtype));
    FV_REQUIRE(in != out, FV_ERR_BAD_PARAM, "%s: input and output must be distinct", op);
    return ctx->be->pooling2d(ctx, &d, in, out);
}

/* ---- add ---------------------------------------------------------------- */
fv_status fv_add(fv_context *ctx, const fv_tensor *a, const fv_tensor *b, fv_tensor *out,
                 fv_activation act, float act_alpha) {
    FV__HOLD(ctx);
    const char *op = "add";
    FV_REQUIRE(ctx, FV_ERR_BAD_PARAM, "%s: ctx is NULL", op);
    FV_REQUIRE(a, FV_ERR_BAD_PARAM, "%s: tensor a is NULL", op);
    FV_REQUIRE(act_valid(act), FV_ERR_BAD_PARAM, "%s: activation=%d is unknown", op, (int)act);
    const fv_tensor_shape *s = &a->shape;
    FV_REQUIRE(s->dtype != FV_DTYPE_U8, FV_ERR_BAD_SHAPE, "%s: U8 tensors are not supported", op);
    FV_TRY(check_tensor(op, "a", ctx, a, s->n, s->h, s->w, s->c, s->dtype));
    FV_TRY(check_tensor(op, "b", ctx, b, s->n, s->h, s->w, s->c, s->dtype));
    FV_TRY(check_tensor(op, "output", ctx, out, s->n, s->h, s->w, s->c, s->dtype));
    return ctx->be->add(ctx, a, b, out, act, fv__activation_alpha(act, act_alpha));
}

/* ---- pack / unpack ------------------------------------------------------ */
const char *fv_pixel_format_name(fv_pixel_format f) {
    switch (f) {
    case FV_PIXEL_GRAY8:
        return "GRAY8";
    case FV_PIXEL_RGB24:
        return "RGB24";
    case FV_PIXEL_BGR24:
        return "BGR24";
    case FV_PIXEL_RGBA32:
        return "RGBA32";
    case FV_PIXEL_YUYV:
        return "YUYV";
    case FV_PIXEL_UYVY:
        return "UYVY";
    case FV_PIXEL_NV12:
        return "NV12";
    }
    return "unknown";
}

size_t fv__pixel_bytes(fv_pixel_format f) {
    switch (f) {
    case FV_PIXEL_GRAY8:
        return 1;
    case FV_PIXEL_RGB24:
    case FV_PIXEL_BGR24:
        return 3;
    case FV_PIXEL_RGBA32:
        return 4;
    case FV_PIXEL_YUYV:
    case FV_PIXEL_UYVY:
        return 2;
    case FV_PIXEL_NV12:
        return 1;
    }
    return 0;
}

size_t fv_image_bytes(fv_pixel_format f, int width, int height) {
    if (width < 1 || height < 1 || fv__pixel_bytes(f) == 0) return 0;
    size_t y = (size_t)width * height * fv__pixel_bytes(f);
    return f == FV_PIXEL_NV12 ? y + (size_t)width * ((height + 1) / 2) : y;
}

fv_status fv__image_normalize(const char *op, const fv_image *img, fv_image *n) {
    FV_REQUIRE(img, FV_ERR_BAD_PARAM, "%s: image is NULL", op);
    *n = *img;
    FV_REQUIRE(fv__pixel_bytes(img->format) != 0, FV_ERR_BAD_PARAM,
               "%s: pixel format %d is unknown", op, (int)img->format);
    FV_REQUIRE(img->width >= 1 && img->height >= 1, FV_ERR_BAD_PARAM,
               "%s: image size %dx%d, both must be >= 1", op, img->width, img->height);
    FV_REQUIRE(img->data, FV_ERR_BAD_PARAM, "%s: image data is NULL", op);
    if (img->format == FV_PIXEL_YUYV || img->format == FV_PIXEL_UYVY)
        FV_REQUIRE(img->width % 2 == 0, FV_ERR_BAD_PARAM, "%s: %s width %d must be even", op,
                   fv_pixel_format_name(img->format), img->width);
    if (img->format == FV_PIXEL_NV12)
        FV_REQUIRE(img->width % 2 == 0 && img->height % 2 == 0, FV_ERR_BAD_PARAM,
                   "%s: NV12 size %dx%d must be even in both dimensions", op, img->width,
                   img->height);
    size_t row = (size_t)img->width * fv__pixel_bytes(img->format);
    if (n->stride == 0) n->stride = row;
    FV_REQUIRE(n->stride >= row, FV_ERR_BAD_PARAM,
               "%s: stride %zu is smaller than a %s row of %d pixels (%zu bytes)", op, n->stride,
               fv_pixel_format_name(img->format), img->width, row);
    size_t span; /* the planes' bytes (NV12: the uv plane is half as tall) */
    FV_REQUIRE(
        fv__mul_size(n->stride, (size_t)img->height, &span) &&
            (img->format != FV_PIXEL_NV12 ||
             fv__mul_size(n->uv_stride ? n->uv_stride : n->stride, (size_t)img->height / 2, &span)),
        FV_ERR_BAD_PARAM, "%s: stride %zu x height %d bytes overflows size_t", op, n->stride,
        img->height);
    if (img->format == FV_PIXEL_NV12) {
        if (!n->uv) n->uv = (unsigned char *)n->data + n->stride * (size_t)img->height;
        if (n->uv_stride == 0) n->uv_stride = n->stride;
        FV_REQUIRE(n->uv_stride >= (size_t)img->width, FV_ERR_BAD_PARAM,
                   "%s: NV12 uv_stride %zu is smaller than the width %d", op, n->uv_stride,
                   img->width);
    }
    return FV_OK;
}

static bool is_colour(fv_pixel_format f) {
    return f != FV_PIXEL_GRAY8;
}

fv_status fv_image_pack(fv_context *ctx, const fv_image *src, fv_tensor *dst,
                        const fv_pack_desc *desc) {
    FV__HOLD(ctx);
    const char *op = "image_pack";
    FV_REQUIRE(ctx, FV_ERR_BAD_PARAM, "%s: ctx is NULL", op);
    fv_image img;
    FV_TRY(fv__image_normalize(op, src, &img));
    fv_pack_desc d;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(d.reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: reserved[%d] must be zero", op, i);
    if (d.channels == 0) d.channels = is_colour(img.format) ? 3 : 1;
    FV_REQUIRE(d.channels == 1 || (d.channels == 3 && is_colour(img.format)), FV_ERR_BAD_PARAM,
               "%s: channels=%d from %s: only 1%s", op, d.channels,
               fv_pixel_format_name(img.format), is_colour(img.format) ? " or 3" : "");
    if (d.scale == 0.0f) d.scale = 1.0f / 255.0f;
    FV_REQUIRE(isfinite(d.scale) && isfinite(d.bias), FV_ERR_BAD_PARAM,
               "%s: scale and bias must be finite", op);
    FV_REQUIRE(dst, FV_ERR_BAD_PARAM, "%s: tensor is NULL", op);
    fv_dtype dt = dst->shape.dtype;
    FV_REQUIRE(dt == FV_DTYPE_F16 || dt == FV_DTYPE_F32, FV_ERR_BAD_SHAPE,
               "%s: tensor dtype must be F16 or F32", op);
    FV_TRY(check_tensor(op, "output", ctx, dst, 1, img.height, img.width, d.channels, dt));
    return ctx->be->pack(ctx, &img, dst, &d);
}

fv_status fv_image_unpack(fv_context *ctx, const fv_tensor *src, fv_image *dst,
                          const fv_unpack_desc *desc) {
    FV__HOLD(ctx);
    const char *op = "image_unpack";
    FV_REQUIRE(ctx, FV_ERR_BAD_PARAM, "%s: ctx is NULL", op);
    fv_image img;
    FV_TRY(fv__image_normalize(op, dst, &img));
    FV_REQUIRE(
        img.format != FV_PIXEL_YUYV && img.format != FV_PIXEL_UYVY && img.format != FV_PIXEL_NV12,
        FV_ERR_NOT_SUPPORTED, "%s: writing %s is not supported (GRAY8, RGB24, BGR24, RGBA32 are)",
        op, fv_pixel_format_name(img.format));
    fv_unpack_desc d;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(d.reserved[i] == 0, FV_ERR_BAD_PARAM, "%s: reserved[%d] must be zero", op, i);
    if (d.scale == 0.0f) d.scale = 255.0f;
    FV_REQUIRE(isfinite(d.scale) && isfinite(d.bias), FV_ERR_BAD_PARAM,
               "%s: scale and bias must be finite", op);
    FV_REQUIRE(src, FV_ERR_BAD_PARAM, "%s: tensor is NULL", op);
    const fv_tensor_shape *s = &src->shape;
    FV_REQUIRE(s->dtype == FV_DTYPE_F16 || s->dtype == FV_DTYPE_F32, FV_ERR_BAD_SHAPE,
               "%s: tensor dtype must be F16 or F32", op);
    FV_REQUIRE(s->c == 1 || s->c >= 3, FV_ERR_BAD_SHAPE,
               "%s: tensor C=%d: 1 or at least 3 channels are needed", op, s->c);
    FV_TRY(check_tensor(op, "input", ctx, src, 1, img.height, img.width, s->c, s->dtype));
    return ctx->be->unpack(ctx, src, &img, &d);
}
