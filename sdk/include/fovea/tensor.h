/* fovea: tensors.
 *
 * Tensors are NHWC. F16 tensors store C padded to a multiple of 8 (tensor
 * cores need it); the padding channels are kept zero by every fovea call and
 * are invisible in uploads and downloads. U8 and F32 tensors store C as is.
 * A tensor's memory is carved from a pool at creation and returned to it at
 * destruction; nothing else allocates.
 */
#ifndef FOVEA_TENSOR_H
#define FOVEA_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/context.h"
#include "fovea/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An n-dimensional (N, H, W, C) array in a pool of a context; opaque. */
typedef struct fv_tensor fv_tensor;

/* Element types. */
typedef enum fv_dtype {
    FV_DTYPE_F16 = 0, /* default */
    FV_DTYPE_F32 = 1,
    FV_DTYPE_U8 = 2
} fv_dtype;

/* Memory layouts. */
typedef enum fv_layout {
    FV_LAYOUT_NHWC = 0 /* the only layout, for now */
} fv_layout;

/* What fv_tensor_create makes; zero fields mean their defaults. */
typedef struct fv_tensor_desc {
    fv_dtype dtype;       /* default F16 */
    fv_layout layout;     /* default NHWC */
    int n, h, w, c;       /* each >= 1; n 0 means 1 */
    fv_pool *pool;        /* where the data lives; NULL: the context's DEVICE pool */
    uint32_t reserved[4]; /* must be zero */
} fv_tensor_desc;

/* A tensor's shape and storage, as fv_tensor_shape_get gives them. */
typedef struct fv_tensor_shape {
    fv_dtype dtype;     /* as created */
    int n, h, w, c;     /* logical shape */
    int c_stored;       /* C as stored: c rounded up to 8 for F16 */
    size_t stride[4];   /* elements between neighbours along N, H, W, C */
    size_t elem_bytes;  /* 1, 2 or 4 */
    size_t bytes;       /* storage bytes (with padding) */
    size_t dense_bytes; /* bytes without padding: what upload/download move */
} fv_tensor_shape;

/* Creates a tensor; its storage comes from desc->pool (the context's DEVICE
 * pool when NULL) and is zeroed. Returns FV_ERR_BAD_PARAM (bad field,
 * pool of another context), FV_ERR_OUT_OF_MEMORY (pool exhausted). */
fv_status fv_tensor_create(fv_context *ctx, const fv_tensor_desc *desc, fv_tensor **out);

/* Returns the storage to its pool. NULL allowed. Queued work that uses the
 * tensor must have finished (fv_context_synchronize). Destroy it before its context
 * (fv_context_destroy refuses while it lives). */
void fv_tensor_destroy(fv_tensor *t);

/* Fills *out with t's shape. t and out required; returns FV_ERR_BAD_PARAM otherwise. */
fv_status fv_tensor_shape_get(const fv_tensor *t, fv_tensor_shape *out);
/* The storage address (a device address for DEVICE pools of a CUDA context;
 * the host address for MAPPED pools). */
void *fv_tensor_data(const fv_tensor *t);
fv_pool *fv_tensor_pool(const fv_tensor *t); /* the pool t lives in */

/* Copies dense NHWC host data (C channels, the tensor's dtype, no padding:
 * shape.dense_bytes bytes) into t, asynchronously on the context's stream.
 * src must stay valid and unchanged until the context is synchronized; the
 * copy is truly asynchronous only when src is pinned memory (e.g. a carve-out
 * of a PINNED pool). bytes must equal shape.dense_bytes. */
fv_status fv_tensor_upload(fv_context *ctx, fv_tensor *t, const void *src, size_t bytes);

/* Copies t into dense NHWC host memory (padding dropped), asynchronously;
 * dst is valid after fv_context_synchronize. */
fv_status fv_tensor_download(fv_context *ctx, const fv_tensor *t, void *dst, size_t bytes);

/* Copies src into dst (same dtype and shape; any pools), asynchronously. */
fv_status fv_tensor_copy(fv_context *ctx, fv_tensor *dst, const fv_tensor *src);

/* Converts src into dst (same shape, different dtype): F32 <-> F16 with
 * round-to-nearest-even, U8 -> F16/F32 as plain values (0..255). Both
 * tensors must be usable by the backend's kernels (see fv_tensor_usable).
 * Returns FV_ERR_BAD_SHAPE, FV_ERR_NOT_SUPPORTED (other dtype pairs). */
fv_status fv_tensor_convert(fv_context *ctx, fv_tensor *dst, const fv_tensor *src);

#ifdef __cplusplus
}
#endif
#endif
