/* CUDA backend: device choice, context state (streams, cuDNN handle, event
 * pool), synchronization, the backend table. */
#include <cublasLt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cuda_internal.h"
#include "kernels/elementwise.cuh"
#include "kernels/filter_direct.cuh"
#include "kernels/filter_fused.cuh"

#ifndef FV_CUDA_ARCHITECTURES
#define FV_CUDA_ARCHITECTURES "?"
#endif

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

fv_status fv__cuda_fail(cudaError_t e, const char *call, const char *file, int line) {
    (void)cudaGetLastError();
    return fv__error(FV_ERR_CUDA, "%s failed: %s (%s) at %s:%d", call, cudaGetErrorName(e),
                     cudaGetErrorString(e), base_name(file), line);
}

fv_status fv__cudnn_fail(cudnnStatus_t e, const char *call, const char *file, int line) {
    (void)cudaGetLastError();
    return fv__error(FV_ERR_CUDNN, "%s failed: %s at %s:%d", call, cudnnGetErrorString(e),
                     base_name(file), line);
}

fv_status fv__cuda_bind(const fv_context *ctx) {
    int want = fv__cuda_device(ctx), cur = -1;
    FV_CUDA_TRY(cudaGetDevice(&cur));
    if (cur != want) FV_CUDA_TRY(cudaSetDevice(want));
    return FV_OK;
}

/* Lowest compute capability fovea runs on (FP16 arithmetic), and the lowest
 * with tensor cores. */
#define MIN_SM             53
#define MIN_TENSOR_CORE_SM 70

fv_status fv__cuda_device_count(int *count) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    *count = 0;
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) { /* none: no GPU, no driver */
        (void)cudaGetLastError();
        return FV_OK;
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return fv__error(FV_ERR_CUDA, "fv_cuda_device_count: cudaGetDeviceCount failed: %s (%s)",
                         cudaGetErrorName(e), cudaGetErrorString(e));
    }
    *count = n;
    return FV_OK;
}

bool fv__cuda_usable(int device, char *reason, size_t n) {
    int count = 0, major = 0, minor = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(reason, n, "cudaGetDeviceCount failed: %s (%s)", cudaGetErrorName(e),
                 cudaGetErrorString(e));
        return false;
    }
    if (count < 1) {
        snprintf(reason, n, "no CUDA device found");
        return false;
    }
    if (device < 0 || device >= count) {
        snprintf(reason, n, "CUDA device %d does not exist (%d device%s found)", device, count,
                 count == 1 ? "" : "s");
        return false;
    }
    e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(reason, n, "CUDA device %d: querying its compute capability failed: %s (%s)",
                 device, cudaGetErrorName(e), cudaGetErrorString(e));
        return false;
    }
    if (major * 10 + minor < MIN_SM) {
        snprintf(reason, n, "CUDA device %d is sm_%d%d; fovea needs sm_%d or newer", device, major,
                 minor, MIN_SM);
        return false;
    }
    /* cuDNN's parts load on a helper thread while CUDA makes the device's
     * context (fv_context_create waits for them) */
    fv__cudnn_preload_start();
    /* The kernels must have an image (SASS, or PTX it can JIT) for this GPU. */
    e = cudaSetDevice(device);
    if (e == cudaSuccess) e = fv__cuda_kernels_probe();
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) {
        (void)cudaGetLastError();
        snprintf(reason, n,
                 "CUDA device %d (sm_%d%d): no kernel image for it (this fovea was built for "
                 "CUDA architectures %s): %s",
                 device, major, minor, FV_CUDA_ARCHITECTURES, cudaGetErrorName(e));
        return false;
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(reason, n, "CUDA device %d (sm_%d%d) could not be initialized: %s (%s)", device,
                 major, minor, cudaGetErrorName(e), cudaGetErrorString(e));
        return false;
    }
    return true;
}

static void version_string(char *out, size_t n, int v) {
    /* cuDNN 9 numbers its versions major*10000+minor*100+patch, cuDNN 8
     * major*1000+minor*100+patch. */
    if (v >= 90000)
        snprintf(out, n, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    else
        snprintf(out, n, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}

static fv_status check_cudnn(fv_context_info *in) {
    int loaded_major = 0;
    in->cudnn_compiled = CUDNN_VERSION;
    in->cudnn_loaded = (int)cudnnGetVersion();
    FV_CUDNN_TRY(cudnnGetProperty(MAJOR_VERSION, &loaded_major));
    if (loaded_major != CUDNN_MAJOR) {
        char c[32], l[32];
        version_string(c, sizeof c, in->cudnn_compiled);
        version_string(l, sizeof l, in->cudnn_loaded);
        return fv__error(FV_ERR_CUDNN,
                         "cuDNN: fovea was compiled against cuDNN %s (major %d) but loaded cuDNN "
                         "%s (major %d); the major versions must match",
                         c, CUDNN_MAJOR, l, loaded_major);
    }
    return FV_OK;
}

static fv_status fill_info(fv_context *ctx, fv__cuda_state *st) {
    fv_context_info *in = &ctx->info;
    int dev = st->device, major = 0, minor = 0, v = 0;
    struct cudaDeviceProp prop;
    FV_CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
    snprintf(in->device_name, sizeof in->device_name, "%.*s", (int)sizeof in->device_name - 1,
             prop.name);
    in->device_index = dev;
    FV_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    FV_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    in->sm_major = major;
    in->sm_minor = minor;
    st->sm = major * 10 + minor;
    const char *no_pdl = getenv("FV_NO_PDL");
    st->pdl = major >= 9 && !(no_pdl && strcmp(no_pdl, "1") == 0);
    FV_CUDA_TRY(cudaDeviceGetAttribute(&in->multiprocessors, cudaDevAttrMultiProcessorCount, dev));
    FV_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrIntegrated, dev));
    in->integrated = v != 0;
    FV_CUDA_TRY(cudaDeviceGetAttribute(&st->can_map_host, cudaDevAttrCanMapHostMemory, dev));
    in->tensor_cores = st->sm >= MIN_TENSOR_CORE_SM;
    if (!in->tensor_cores)
        snprintf(in->tensor_core_reason, sizeof in->tensor_core_reason,
                 "sm_%d%d has no tensor cores (sm_%d or newer needed)", major, minor,
                 MIN_TENSOR_CORE_SM);
    else
        in->tensor_core_reason[0] = '\0';
    size_t free_b = 0, total_b = 0;
    FV_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    in->device_memory_total = total_b;
    in->device_memory_free = free_b;
    in->cuda_runtime_compiled = CUDART_VERSION;
    FV_CUDA_TRY(cudaRuntimeGetVersion(&in->cuda_runtime_loaded));
    FV_CUDA_TRY(cudaDriverGetVersion(&in->cuda_driver));
    return check_cudnn(in);
}

static void cuda_fini(fv_context *ctx) {
    fv__cuda_state *st = fv__cuda_state_of(ctx);
    if (!st) return;
    /* Teardown: errors (e.g. a device already in an error state) are ignored. */
    (void)cudaSetDevice(st->device);
    for (int i = 0; i < FV__CUDA_EVENTS; i++)
        if (st->events[i]) (void)cudaEventDestroy(st->events[i]);
    if (st->cudnn) (void)cudnnDestroy(st->cudnn);
    fv__cuda_fc_join(ctx); /* a handle still being made */
    if (st->lt) (void)cublasLtDestroy((cublasLtHandle_t)st->lt);
    if (st->own_stream) (void)cudaStreamDestroy(st->own_stream); /* never a borrowed one */
    if (st->copy_stream) (void)cudaStreamDestroy(st->copy_stream);
    (void)cudaGetLastError();
    free(st);
    ctx->be_state = NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* t_cuda, t_cudnn: ms the device's context and the cuDNN handle took */
static fv_status init_state(fv_context *ctx, fv__cuda_state *st, double *t_cuda, double *t_cudnn) {
    double t0 = now_ms();
    FV_CUDA_TRY(cudaSetDevice(st->device));
    FV_CUDA_TRY(cudaFree(NULL)); /* the device's context, made now (timed) */
    *t_cuda = now_ms() - t0;
    FV_TRY(fill_info(ctx, st));
    FV_CUDA_TRY(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    st->own_stream = st->stream;
    FV_CUDA_TRY(cudaStreamCreateWithFlags(&st->copy_stream, cudaStreamNonBlocking));
    t0 = now_ms();
    FV_CUDNN_TRY(cudnnCreate(&st->cudnn));
    *t_cudnn = now_ms() - t0;
    FV_CUDNN_TRY(cudnnSetStream(st->cudnn, st->stream));
    for (int i = 0; i < FV__CUDA_EVENTS; i++)
        FV_CUDA_TRY(cudaEventCreateWithFlags(&st->events[i], cudaEventDisableTiming));
    return FV_OK;
}

static fv_status cuda_init(fv_context *ctx, int device) {
    fv__cuda_state *st = calloc(1, sizeof *st);
    FV_REQUIRE(st, FV_ERR_OUT_OF_MEMORY, "context: out of host memory");
    st->device = device;
    ctx->be_state = st;
    double t_cuda_ms = 0, t_cudnn_ms = 0;
    fv_status s = init_state(ctx, st, &t_cuda_ms, &t_cudnn_ms);
    if (s != FV_OK) {
        fv__error_prefix(s, "context (CUDA)");
        cuda_fini(ctx);
        return s;
    }
    const fv_context_info *in = &ctx->info;
    fv__log(ctx, FV_LOG_INFO,
            "CUDA device %d: %s, sm_%d%d, %d SMs, %s, %zu MiB (%zu free), tensor cores %s%s; "
            "CUDA runtime %d (compiled %d), driver %d; cuDNN %d (compiled %d); set-up: CUDA "
            "context %.1f ms, cuDNN handle %.1f ms",
            device, in->device_name, in->sm_major, in->sm_minor, in->multiprocessors,
            in->integrated ? "integrated" : "discrete", in->device_memory_total >> 20,
            in->device_memory_free >> 20, in->tensor_cores ? "on" : "off: ", in->tensor_core_reason,
            in->cuda_runtime_loaded, in->cuda_runtime_compiled, in->cuda_driver, in->cudnn_loaded,
            in->cudnn_compiled, t_cuda_ms, t_cudnn_ms);
    return FV_OK;
}

static fv_status cuda_sync(fv_context *ctx) {
    fv__cuda_state *st = fv__cuda_state_of(ctx);
    FV_TRY(fv__cuda_bind(ctx));
    cudaError_t a = cudaStreamSynchronize(st->stream);
    cudaError_t b = cudaStreamSynchronize(st->copy_stream);
    if (a != cudaSuccess)
        return fv__cuda_fail(a, "cudaStreamSynchronize(compute stream)", __FILE__, __LINE__);
    if (b != cudaSuccess)
        return fv__cuda_fail(b, "cudaStreamSynchronize(copy stream)", __FILE__, __LINE__);
    return FV_OK;
}

fv_status fv__cuda_event_acquire(fv_context *ctx, cudaEvent_t *out) {
    fv__cuda_state *st = fv__cuda_state_of(ctx);
    for (int i = 0; i < FV__CUDA_EVENTS; i++)
        if (!st->event_used[i]) {
            st->event_used[i] = 1;
            *out = st->events[i];
            return FV_OK;
        }
    *out = NULL;
    return fv__error(FV_ERR_OUT_OF_MEMORY, "CUDA event pool: all %d events are in use",
                     FV__CUDA_EVENTS);
}

void fv__cuda_event_release(fv_context *ctx, cudaEvent_t ev) {
    fv__cuda_state *st = fv__cuda_state_of(ctx);
    for (int i = 0; i < FV__CUDA_EVENTS; i++)
        if (ev && st->events[i] == ev) st->event_used[i] = 0;
}

const fv__backend fv__backend_cuda = {
    .name = "cuda",
    .init = cuda_init,
    .fini = cuda_fini,
    .synchronize = cuda_sync,
    .mem_reserve = fv__cuda_mem_reserve,
    .mem_release = fv__cuda_mem_release,
    .mem_zero = fv__cuda_mem_zero,
    .copy2d = fv__cuda_copy2d,
    .convert = fv__cuda_convert,
    .conv2d_create = fv__cuda_conv2d_create,
    .conv2d_destroy = fv__cuda_conv2d_destroy,
    .conv2d_forward = fv__cuda_conv2d_forward,
    .conv2d_bind = fv__cuda_conv2d_bind,
    .conv2d_info = fv__cuda_conv2d_info,
    .pooling2d = fv__cuda_pooling2d,
    .add = fv__cuda_add,
    .pack = fv__cuda_pack,
    .unpack = fv__cuda_unpack,
    .edge = fv__cuda_edge,
    .filter_fused = fv__cuda_filter_fused,
    .filter_direct = fv__cuda_filter_direct,
    .stream_create = fv__cuda_stream_create,
    .stream_destroy = fv__cuda_stream_destroy,
    .event_create = fv__cuda_event_create,
    .event_destroy = fv__cuda_event_destroy,
    .event_record = fv__cuda_event_record,
    .event_mark = fv__cuda_event_mark,
    .capturing = fv__cuda_capturing,
    .stream_wait = fv__cuda_stream_wait,
    .event_done = fv__cuda_event_done,
    .event_elapsed = fv__cuda_event_elapsed,
    .copy2d_on = fv__cuda_copy2d_on,
    .graph_begin = fv__cuda_graph_begin,
    .graph_end = fv__cuda_graph_end,
    .graph_launch = fv__cuda_graph_launch,
    .graph_destroy = fv__cuda_graph_destroy,
};
