/* Pools: one backing allocation, first-fit carve-outs aligned to FV_ALIGN,
 * neighbours merged on free. The block table is sized at creation, so
 * carving and freeing never allocate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/checked.h"
#include "../core/internal.h"

#define FV__POOL_MAX_BLOCKS 4096

static size_t largest_free(const fv_pool *p) {
    size_t best = 0;
    for (size_t i = 0; i < p->nblocks; i++)
        if (!p->blocks[i].used && p->blocks[i].size > best) best = p->blocks[i].size;
    return best;
}

fv_status fv__pool_create(fv_context *ctx, fv_pool_kind kind, size_t bytes, const char *name,
                          fv_pool **out) {
    *out = NULL;
    const char *what = name ? name : fv_pool_kind_name(kind);
    size_t cap;
    if (!fv__round_up_size(bytes, (size_t)FV_ALIGN, &cap))
        return fv__error(FV_ERR_OUT_OF_MEMORY,
                         "pool '%s' (%s): %zu bytes is larger than any backing allocation "
                         "(rounded up to %d bytes it would wrap)",
                         what, fv_pool_kind_name(kind), bytes, FV_ALIGN);
    fv_pool *p = calloc(1, sizeof *p);
    fv__block *blocks = calloc(FV__POOL_MAX_BLOCKS, sizeof *blocks);
    if (!p || !blocks) {
        free(p);
        free(blocks);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "pool: out of host memory for its bookkeeping");
    }
    void *base = NULL, *alias = NULL;
    fv_status s = ctx->be->mem_reserve(ctx, kind, cap, &base, &alias);
    if (s != FV_OK) {
        free(p);
        free(blocks);
        return fv__error_prefix(s, what);
    }
    p->ctx = ctx;
    p->kind = kind;
    snprintf(p->name, sizeof p->name, "%s", name ? name : fv_pool_kind_name(kind));
    p->base = base;
    p->device_base = alias ? alias : base;
    p->capacity = cap;
    p->blocks = blocks;
    p->max_blocks = FV__POOL_MAX_BLOCKS;
    p->nblocks = 1;
    p->blocks[0] = (fv__block){0, cap, 0};
    p->stats.reserved = cap;
    p->stats.backing_allocs = 1;
    fv__log(ctx, FV_LOG_DEBUG, "pool '%s' (%s): reserved %zu bytes", p->name,
            fv_pool_kind_name(kind), cap);
    *out = p;
    return FV_OK;
}

void fv__pool_destroy(fv_pool *p) {
    if (!p) return;
    p->ctx->be->mem_release(p->ctx, p->kind, p->base);
    free(p->blocks);
    free(p);
}

fv_status fv_pool_create(fv_context *ctx, const fv_pool_desc *desc, fv_pool **out) {
    FV__HOLD(ctx);
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_pool_create: out is NULL");
    *out = NULL;
    FV_REQUIRE(ctx && desc, FV_ERR_BAD_PARAM, "fv_pool_create: %s is NULL", ctx ? "desc" : "ctx");
    FV_REQUIRE((int)desc->kind >= 0 && (int)desc->kind <= 3, FV_ERR_BAD_PARAM,
               "fv_pool_create: kind=%d is not a fv_pool_kind", (int)desc->kind);
    FV_REQUIRE(desc->bytes > 0, FV_ERR_BAD_PARAM, "fv_pool_create: bytes is 0");
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(desc->reserved[i] == 0, FV_ERR_BAD_PARAM,
                   "fv_pool_create: reserved[%d] must be zero", i);
    FV_TRY(fv__pool_create(ctx, desc->kind, desc->bytes, desc->name, out));
    fv__obj_born(ctx, FV__OBJ_POOL);
    return FV_OK;
}

void fv_pool_destroy(fv_pool *p) {
    FV__HOLD_WAIT(p ? p->ctx : NULL);
    if (!p || p->owned_by_ctx) return;
    fv__obj_gone(p->ctx, FV__OBJ_POOL);
    fv__pool_destroy(p);
}

fv_status fv_pool_alloc(fv_pool *p, size_t bytes, void **out) {
    FV__HOLD(p ? p->ctx : NULL);
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_pool_alloc: out is NULL");
    *out = NULL;
    FV_REQUIRE(p, FV_ERR_BAD_PARAM, "fv_pool_alloc: pool is NULL");
    FV_REQUIRE(bytes > 0, FV_ERR_BAD_PARAM, "fv_pool_alloc: pool '%s': request of 0 bytes",
               p->name);
    size_t need;
    FV_REQUIRE(fv__round_up_size(bytes, (size_t)FV_ALIGN, &need), FV_ERR_OUT_OF_MEMORY,
               "pool '%s' (%s): request of %zu bytes is larger than any pool", p->name,
               fv_pool_kind_name(p->kind), bytes);
    for (size_t i = 0; i < p->nblocks; i++) {
        fv__block *b = &p->blocks[i];
        if (b->used || b->size < need) continue;
        if (b->size > need) {
            if (p->nblocks == p->max_blocks) {
                p->stats.failed++;
                return fv__error(FV_ERR_OUT_OF_MEMORY,
                                 "pool '%s' (%s): request of %zu bytes refused: block table "
                                 "full (%zu carve-outs and free ranges)",
                                 p->name, fv_pool_kind_name(p->kind), bytes, p->max_blocks);
            }
            memmove(&p->blocks[i + 2], &p->blocks[i + 1], (p->nblocks - i - 1) * sizeof(fv__block));
            p->blocks[i + 1] = (fv__block){b->offset + need, b->size - need, 0};
            p->nblocks++;
            b->size = need;
        }
        b->used = 1;
        p->stats.in_use += need;
        if (p->stats.in_use > p->stats.peak) p->stats.peak = p->stats.in_use;
        p->stats.carve_outs++;
        *out = p->base + b->offset;
        return FV_OK;
    }
    p->stats.failed++;
    return fv__error(FV_ERR_OUT_OF_MEMORY,
                     "pool '%s' (%s): request of %zu bytes (%zu aligned) does not fit: %zu of "
                     "%zu bytes free, largest free range %zu",
                     p->name, fv_pool_kind_name(p->kind), bytes, need,
                     p->capacity - p->stats.in_use, p->capacity, largest_free(p));
}

fv_status fv_pool_free(fv_pool *p, void *ptr) {
    FV__HOLD(p ? p->ctx : NULL);
    if (!ptr) return FV_OK;
    FV_REQUIRE(p, FV_ERR_BAD_PARAM, "fv_pool_free: pool is NULL");
    unsigned char *c = ptr;
    FV_REQUIRE(c >= p->base && c < p->base + p->capacity, FV_ERR_BAD_PARAM,
               "fv_pool_free: %p is not inside pool '%s'", ptr, p->name);
    size_t off = (size_t)(c - p->base);
    size_t lo = 0, hi = p->nblocks;
    while (lo < hi) { /* binary search on offset */
        size_t mid = (lo + hi) / 2;
        if (p->blocks[mid].offset < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    FV_REQUIRE(lo < p->nblocks && p->blocks[lo].offset == off && p->blocks[lo].used,
               FV_ERR_BAD_PARAM, "fv_pool_free: %p is not a live carve-out of pool '%s'", ptr,
               p->name);
    size_t i = lo;
    p->blocks[i].used = 0;
    p->stats.in_use -= p->blocks[i].size;
    if (i + 1 < p->nblocks && !p->blocks[i + 1].used) { /* merge right */
        p->blocks[i].size += p->blocks[i + 1].size;
        memmove(&p->blocks[i + 1], &p->blocks[i + 2], (p->nblocks - i - 2) * sizeof(fv__block));
        p->nblocks--;
    }
    if (i > 0 && !p->blocks[i - 1].used) { /* merge left */
        p->blocks[i - 1].size += p->blocks[i].size;
        memmove(&p->blocks[i], &p->blocks[i + 1], (p->nblocks - i - 1) * sizeof(fv__block));
        p->nblocks--;
    }
    return FV_OK;
}

void *fv_pool_device_pointer(const fv_pool *p, void *ptr) {
    if (!p || !ptr) return NULL;
    return p->device_base + ((unsigned char *)ptr - p->base);
}

fv_status fv_pool_stats_get(const fv_pool *p, fv_pool_stats *out) {
    FV__HOLD(p ? p->ctx : NULL);
    FV_REQUIRE(p && out, FV_ERR_BAD_PARAM, "fv_pool_stats_get: %s is NULL", p ? "out" : "pool");
    *out = p->stats;
    out->largest_free = largest_free(p);
    return FV_OK;
}

fv_pool_kind fv_pool_kind_of(const fv_pool *p) {
    return p ? p->kind : FV_POOL_HOST;
}

const char *fv_pool_name(const fv_pool *p) {
    return p ? p->name : "";
}
