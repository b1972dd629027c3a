/* fovea: frame buffers that follow the context's memory policy.
 *
 * A frame buffer holds one image of a fixed format and size, with two views:
 *   host:   where a camera, a decoder or a file writes the input pixels, or
 *           where the caller reads the output pixels;
 *   device: the fv_image that ops read and write (fv_image_pack,
 *           fv_image_unpack, fv_filter_apply).
 * Under FV_MEMORY_POLICY_ZERO_COPY (Jetson) both views are one buffer in the
 * context's MAPPED pool: the GPU reads and writes it in place, and
 * fv_frame_buffer_upload / _download do nothing. Under
 * FV_MEMORY_POLICY_DEVICE (discrete GPUs) the host view is a PINNED pool
 * buffer and the device view a DEVICE pool buffer; upload and download are
 * asynchronous copies on the context's stream.
 *
 * The per-frame loop, the same code under either policy:
 *   write pixels to fv_frame_buffer_data(in)
 *   fv_frame_buffer_upload(ctx, in)
 *   fv_image a = fv_frame_buffer_image(in), b = fv_frame_buffer_image(out);
 *   fv_filter_apply(filter, &a, &b)
 *   fv_frame_buffer_download(ctx, out)
 *   fv_context_synchronize(ctx); read fv_frame_buffer_data(out)
 * Memory is carved from the context's pools at creation; upload, download
 * and the accessors allocate nothing. The host data must not be rewritten
 * while queued work may still read it (until fv_context_synchronize): with
 * several frames in flight, use one frame buffer per slot.
 */
#ifndef FOVEA_FRAME_H
#define FOVEA_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/context.h"
#include "fovea/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A frame's pixels where the context's memory policy puts them; opaque. */
typedef struct fv_frame_buffer fv_frame_buffer;

/* Where a frame buffer's memory lives, as fv_frame_buffer_info_get gives it. */
typedef struct fv_frame_buffer_info {
    fv_memory_policy policy;  /* the context's resolved policy: ZERO_COPY or DEVICE */
    size_t bytes;             /* fv_image_bytes(format, width, height) */
    fv_pool_kind host_pool;   /* where the host view lives: MAPPED or PINNED */
    fv_pool_kind device_pool; /* where the device view lives: MAPPED or DEVICE */
    fv_image host;            /* the host view: dense (stride 0), NV12 planes contiguous */
    fv_image device;          /* the device view, as fv_frame_buffer_image gives it */
    uint32_t reserved[4];     /* reserved for growth */
} fv_frame_buffer_info;

/* Makes a frame buffer of format x width x height (dense rows; NV12: the UV
 * plane follows the Y plane), zeroed, in the pools the context's memory
 * policy names (fv_context_info.memory_policy).
 *   ctx, out: required. *out is NULL on failure.
 *   format: a known fv_pixel_format; width, height >= 1; YUYV: width even;
 *   NV12: width and height even.
 * Returns FV_ERR_BAD_PARAM (the message names the argument),
 * FV_ERR_OUT_OF_MEMORY (the MAPPED, PINNED or DEVICE pool is too small: the
 * message names it), device errors. */
fv_status fv_frame_buffer_create(fv_context *ctx, fv_pixel_format format, int width, int height,
                                 fv_frame_buffer **out);

/* Returns the buffer's memory to its pools. NULL allowed. Queued work that
 * uses the buffer must have finished (fv_context_synchronize). Destroy it before its context
 * (fv_context_destroy refuses while it lives). */
void fv_frame_buffer_destroy(fv_frame_buffer *fb);

/* Makes the host data visible to the device view, for work queued after
 * this call: nothing under ZERO_COPY; an asynchronous copy PINNED -> DEVICE
 * on the context's stream under DEVICE. ctx must be the buffer's context.
 * Returns FV_ERR_BAD_PARAM (NULL, another context), device errors. */
fv_status fv_frame_buffer_upload(fv_context *ctx, fv_frame_buffer *fb);

/* Brings the device view's pixels to the host data, after the work queued
 * before this call: nothing under ZERO_COPY; an asynchronous copy DEVICE ->
 * PINNED under DEVICE. Either way the host data is valid once
 * fv_context_synchronize returns. Returns as fv_frame_buffer_upload. */
fv_status fv_frame_buffer_download(fv_context *ctx, fv_frame_buffer *fb);

/* The host data: fv_frame_buffer_info.bytes writable bytes. NULL for NULL. */
void *fv_frame_buffer_data(const fv_frame_buffer *fb);

/* The device view, to pass to ops (a copy; its pointers stay valid while
 * the buffer lives). All zero for NULL. */
fv_image fv_frame_buffer_image(const fv_frame_buffer *fb);

/* Fills *out. Returns FV_ERR_BAD_PARAM if either is NULL. */
fv_status fv_frame_buffer_info_get(const fv_frame_buffer *fb, fv_frame_buffer_info *out);

#ifdef __cplusplus
}
#endif
#endif
