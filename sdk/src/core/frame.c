/* Frame buffers per memory policy, built on public tensors: U8 tensors of
 * rows x row-bytes x 1 have no padding, so a tensor's data is the image. */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

struct fv_frame_buffer {
    fv_context *ctx;
    fv_memory_policy policy;
    fv_tensor *host;   /* MAPPED (ZERO_COPY) or PINNED (DEVICE) */
    fv_tensor *device; /* DEVICE pool; NULL under ZERO_COPY (host is both views) */
    fv_frame_buffer_info info;
};

static fv_status make_bytes(fv_context *ctx, fv_pool_kind kind, int rows, int row_bytes,
                            fv_tensor **out) {
    fv_pool *pool = fv_context_pool(ctx, kind);
    FV_REQUIRE(pool, FV_ERR_INTERNAL, "fv_frame_buffer_create: the context has no %s pool",
               fv_pool_kind_name(kind));
    fv_tensor_desc d = {
        .dtype = FV_DTYPE_U8, .n = 1, .h = rows, .w = row_bytes, .c = 1, .pool = pool};
    fv_status s = fv_tensor_create(ctx, &d, out);
    if (s != FV_OK) fv__error_prefix(s, "fv_frame_buffer_create");
    return s;
}

static fv_status check_args(fv_context *ctx, fv_pixel_format f, int w, int h) {
    FV_REQUIRE(ctx, FV_ERR_BAD_PARAM, "fv_frame_buffer_create: ctx is NULL");
    FV_REQUIRE(w >= 1 && h >= 1, FV_ERR_BAD_PARAM,
               "fv_frame_buffer_create: size %dx%d, both must be >= 1", w, h);
    FV_REQUIRE(fv_image_bytes(f, w, h) != 0, FV_ERR_BAD_PARAM,
               "fv_frame_buffer_create: pixel format %d is unknown", (int)f);
    if (f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY)
        FV_REQUIRE(w % 2 == 0, FV_ERR_BAD_PARAM, "fv_frame_buffer_create: %s width %d must be even",
                   fv_pixel_format_name(f), w);
    if (f == FV_PIXEL_NV12)
        FV_REQUIRE(w % 2 == 0 && h % 2 == 0, FV_ERR_BAD_PARAM,
                   "fv_frame_buffer_create: NV12 size %dx%d must be even in both dimensions", w, h);
    return FV_OK;
}

fv_status fv_frame_buffer_create(fv_context *ctx, fv_pixel_format f, int w, int h,
                                 fv_frame_buffer **out) {
    FV__HOLD(ctx);
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_frame_buffer_create: out is NULL");
    *out = NULL;
    FV_TRY(check_args(ctx, f, w, h));
    fv_context_info ci;
    FV_TRY(fv_context_info_get(ctx, &ci));

    /* NV12 is h rows of Y and h/2 rows of UV, w bytes each. */
    size_t bytes = fv_image_bytes(f, w, h);
    size_t rows = f == FV_PIXEL_NV12 ? (size_t)h + (size_t)h / 2 : (size_t)h;
    size_t row_bytes = bytes / rows;
    FV_REQUIRE(rows <= INT32_MAX && row_bytes <= INT32_MAX, FV_ERR_BAD_PARAM,
               "fv_frame_buffer_create: %dx%d %s is too large", w, h, fv_pixel_format_name(f));

    fv_frame_buffer *fb = calloc(1, sizeof *fb);
    FV_REQUIRE(fb, FV_ERR_OUT_OF_MEMORY, "fv_frame_buffer_create: out of host memory");
    fb->ctx = ctx;
    fv__obj_born(ctx, FV__OBJ_FRAME_BUFFER);
    fb->policy = ci.memory_policy;
    int zero_copy = fb->policy == FV_MEMORY_POLICY_ZERO_COPY;
    fv_frame_buffer_info *in = &fb->info;
    in->policy = fb->policy;
    in->bytes = bytes;
    in->host_pool = zero_copy ? FV_POOL_MAPPED : FV_POOL_PINNED;
    in->device_pool = zero_copy ? FV_POOL_MAPPED : FV_POOL_DEVICE;

    fv__obj_internal(1);
    fv_status s = make_bytes(ctx, in->host_pool, (int)rows, (int)row_bytes, &fb->host);
    if (s == FV_OK && !zero_copy)
        s = make_bytes(ctx, in->device_pool, (int)rows, (int)row_bytes, &fb->device);
    fv__obj_internal(0);
    if (s != FV_OK) {
        fv_frame_buffer_destroy(fb);
        return s;
    }
    void *host = fv_tensor_data(fb->host);
    void *dev = zero_copy ? fv_pool_device_pointer(fv_tensor_pool(fb->host), host)
                          : fv_tensor_data(fb->device);
    in->host = (fv_image){.format = f, .width = w, .height = h, .data = host};
    in->device = (fv_image){.format = f, .width = w, .height = h, .data = dev};
    *out = fb;
    return FV_OK;
}

void fv_frame_buffer_destroy(fv_frame_buffer *fb) {
    FV__HOLD_WAIT(fb ? fb->ctx : NULL);
    if (!fb) return;
    fv__obj_gone(fb->ctx, FV__OBJ_FRAME_BUFFER);
    fv__obj_internal(1);
    fv_tensor_destroy(fb->device);
    fv_tensor_destroy(fb->host);
    fv__obj_internal(0);
    free(fb);
}

static fv_status check_use(const char *op, fv_context *ctx, const fv_frame_buffer *fb) {
    FV_REQUIRE(ctx && fb, FV_ERR_BAD_PARAM, "%s: %s is NULL", op, ctx ? "fb" : "ctx");
    FV_REQUIRE(fb->ctx == ctx, FV_ERR_BAD_PARAM, "%s: the frame buffer belongs to another context",
               op);
    return FV_OK;
}

fv_status fv_frame_buffer_upload(fv_context *ctx, fv_frame_buffer *fb) {
    FV__HOLD(ctx);
    FV_TRY(check_use("fv_frame_buffer_upload", ctx, fb));
    if (!fb->device) return FV_OK; /* zero-copy: the GPU reads the host data in place */
    return fv_tensor_copy(ctx, fb->device, fb->host);
}

fv_status fv_frame_buffer_download(fv_context *ctx, fv_frame_buffer *fb) {
    FV__HOLD(ctx);
    FV_TRY(check_use("fv_frame_buffer_download", ctx, fb));
    if (!fb->device) return FV_OK;
    return fv_tensor_copy(ctx, fb->host, fb->device);
}

void *fv_frame_buffer_data(const fv_frame_buffer *fb) {
    return fb ? fb->info.host.data : NULL;
}

fv_image fv_frame_buffer_image(const fv_frame_buffer *fb) {
    fv_image none;
    memset(&none, 0, sizeof none);
    return fb ? fb->info.device : none;
}

fv_status fv_frame_buffer_info_get(const fv_frame_buffer *fb, fv_frame_buffer_info *out) {
    FV__HOLD(fb ? fb->ctx : NULL);
    FV_REQUIRE(fb && out, FV_ERR_BAD_PARAM, "fv_frame_buffer_info_get: %s is NULL",
               fb ? "out" : "fb");
    *out = fb->info;
    return FV_OK;
}
