/* CUDA backend memory: pool backing allocations, zeroing, copies. */
#include <stdlib.h>
#include <string.h>
#include "cuda_internal.h"

static fv_status reserve_failed(fv_pool_kind kind, size_t bytes, cudaError_t e) {
    (void)cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    if (kind == FV_POOL_DEVICE && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        return fv__error(FV_ERR_OUT_OF_MEMORY,
                         "reserving %zu bytes of %s memory failed: %s (%s); the device has %zu "
                         "of %zu bytes free",
                         bytes, fv_pool_kind_name(kind), cudaGetErrorName(e), cudaGetErrorString(e),
                         free_b, total_b);
    (void)cudaGetLastError();
    return fv__error(FV_ERR_OUT_OF_MEMORY, "reserving %zu bytes of %s memory failed: %s (%s)",
                     bytes, fv_pool_kind_name(kind), cudaGetErrorName(e), cudaGetErrorString(e));
}

fv_status fv__cuda_mem_reserve(fv_context *ctx, fv_pool_kind kind, size_t bytes, void **ptr,
                               void **device_alias) {
    *ptr = NULL;
    *device_alias = NULL;
    void *p = NULL;
    cudaError_t e = cudaSuccess;
    if (kind == FV_POOL_HOST) {
        if (posix_memalign(&p, FV_ALIGN, bytes) != 0 || !p)
            return fv__error(FV_ERR_OUT_OF_MEMORY,
                             "reserving %zu bytes of host memory failed (posix_memalign)", bytes);
        *ptr = *device_alias = p;
        return FV_OK;
    }
    FV_TRY(fv__cuda_bind(ctx));
    switch (kind) {
    case FV_POOL_DEVICE:
        e = cudaMalloc(&p, bytes);
        break;
    case FV_POOL_PINNED:
        e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
        break;
    case FV_POOL_MAPPED:
        FV_REQUIRE(fv__cuda_state_of(ctx)->can_map_host, FV_ERR_NOT_SUPPORTED,
                   "mapped pool: CUDA device %d (%s) cannot map host memory", fv__cuda_device(ctx),
                   ctx->info.device_name);
        e = cudaHostAlloc(&p, bytes, cudaHostAllocMapped);
        break;
    default:
        return fv__error(FV_ERR_INTERNAL, "mem_reserve: pool kind %d", (int)kind);
    }
    if (e != cudaSuccess) return reserve_failed(kind, bytes, e);
    void *alias = p;
    if (kind == FV_POOL_MAPPED) {
        e = cudaHostGetDevicePointer(&alias, p, 0);
        if (e != cudaSuccess) {
            (void)cudaFreeHost(p);
            return fv__cuda_fail(e, "cudaHostGetDevicePointer(mapped pool)", __FILE__, __LINE__);
        }
    }
    /* cudaMalloc and cudaHostAlloc give at least 256-byte alignment. */
    if (((uintptr_t)p | (uintptr_t)alias) % FV_ALIGN != 0) {
        fv__cuda_mem_release(ctx, kind, p);
        return fv__error(FV_ERR_INTERNAL, "%s memory at %p is not %d-byte aligned",
                         fv_pool_kind_name(kind), p, FV_ALIGN);
    }
    *ptr = p;
    *device_alias = alias;
    return FV_OK;
}

void fv__cuda_mem_release(fv_context *ctx, fv_pool_kind kind, void *ptr) {
    if (!ptr) return;
    if (kind == FV_POOL_HOST) {
        free(ptr);
        return;
    }
    (void)fv__cuda_bind(ctx);
    if (kind == FV_POOL_DEVICE)
        (void)cudaFree(ptr);
    else
        (void)cudaFreeHost(ptr);
    (void)cudaGetLastError();
}

fv_status fv__cuda_mem_zero(fv_context *ctx, fv_pool_kind kind, void *ptr, size_t bytes) {
    if (kind != FV_POOL_DEVICE) {
        memset(ptr, 0, bytes);
        return FV_OK;
    }
    FV_TRY(fv__cuda_bind(ctx));
    /* On the compute stream, so work queued after it sees zeros; waited for
     * so that the copy stream does too. Set-up only. */
    FV_CUDA_TRY(cudaMemsetAsync(ptr, 0, bytes, fv__cuda_stream(ctx)));
    FV_CUDA_TRY(cudaStreamSynchronize(fv__cuda_stream(ctx)));
    return FV_OK;
}

fv_status fv__cuda_copy2d(fv_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch,
                          size_t width, size_t rows) {
    if (width == 0 || rows == 0) return FV_OK;
    FV_TRY(fv__cuda_bind(ctx));
    cudaStream_t s = fv__cuda_stream(ctx);
    if (rows == 1 || (dpitch == width && spitch == width))
        FV_CUDA_TRY(cudaMemcpyAsync(dst, src, width * rows, cudaMemcpyDefault, s));
    else
        FV_CUDA_TRY(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDefault, s));
    return FV_OK;
}
