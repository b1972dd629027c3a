/* fovea: memory pools.
 *
 * A pool reserves one backing allocation at creation and carves every
 * request from it, aligned to FV_ALIGN (128) bytes. Carve-outs can be freed
 * and their space reused (first fit, neighbours merged). The backing
 * allocation is never grown: when a request does not fit, the call fails
 * with FV_ERR_OUT_OF_MEMORY naming the pool, the request and what is left.
 * Nothing falls back to malloc.
 */
#ifndef FOVEA_POOL_H
#define FOVEA_POOL_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Alignment of every carve-out, in bytes. cuDNN needs 16 and prefers 128. */
#define FV_ALIGN 128

/* What fv_pool_create makes; zero fields mean their defaults. */
typedef struct fv_pool_desc {
    fv_pool_kind kind;    /* default DEVICE */
    size_t bytes;         /* capacity; required (> 0) */
    const char *name;     /* for messages; copied; NULL gives the kind's name */
    uint32_t reserved[4]; /* must be zero */
} fv_pool_desc;

/* A pool's counters, as fv_pool_stats_get gives them. */
typedef struct fv_pool_stats {
    size_t reserved;         /* capacity of the backing allocation */
    size_t in_use;           /* bytes carved out now (aligned sizes) */
    size_t peak;             /* highest in_use seen */
    size_t largest_free;     /* largest request that would fit now */
    uint64_t backing_allocs; /* backing allocations made: 1 for the life of a pool */
    uint64_t carve_outs;     /* successful fv_pool_alloc calls */
    uint64_t failed;         /* requests refused for lack of space */
    uint32_t reserved_[8];   /* reserved for growth */
} fv_pool_stats;

/* Creates a pool on ctx's backend; one backing allocation of desc->bytes.
 * FV_POOL_MAPPED on a CUDA device that cannot map host memory gives
 * FV_ERR_NOT_SUPPORTED. Returns FV_ERR_BAD_PARAM, FV_ERR_OUT_OF_MEMORY,
 * FV_ERR_CUDA. The pool must be destroyed before its context. */
fv_status fv_pool_create(fv_context *ctx, const fv_pool_desc *desc, fv_pool **out);

/* Frees the backing allocation. NULL allowed. Pools owned by a context are
 * destroyed with it; passing one here is refused silently (no-op). A pool
 * made with fv_pool_create must be destroyed before its context
 * (fv_context_destroy refuses while it lives). */
void fv_pool_destroy(fv_pool *pool);

/* Carves bytes (> 0) aligned to FV_ALIGN. *out receives the address: a
 * device address for DEVICE pools of a CUDA context, a host address
 * otherwise (for MAPPED pools also usable by the GPU, see
 * fv_pool_device_pointer). Returns FV_ERR_BAD_PARAM, FV_ERR_OUT_OF_MEMORY. */
fv_status fv_pool_alloc(fv_pool *pool, size_t bytes, void **out);

/* Returns a carve-out to the pool. NULL allowed. A pointer the pool did not
 * give out is refused with FV_ERR_BAD_PARAM. */
fv_status fv_pool_free(fv_pool *pool, void *ptr);

/* The address the GPU uses for ptr (a carve-out of pool). For MAPPED pools
 * this is the mapped device address; for every other kind, ptr itself. */
void *fv_pool_device_pointer(const fv_pool *pool, void *ptr);

/* Fills *out with the pool's counters. pool and out required; returns FV_ERR_BAD_PARAM
 * otherwise. */
fv_status fv_pool_stats_get(const fv_pool *pool, fv_pool_stats *out);
fv_pool_kind fv_pool_kind_of(const fv_pool *pool); /* the pool's kind */
const char *fv_pool_name(const fv_pool *pool);     /* its name; static or pool-owned */

#ifdef __cplusplus
}
#endif
#endif
