/* fovea-bench --sms N[,M...]: fovea on a slice of the GPU limited to N SMs
 * (a CUDA green context: cuDeviceGetDevResource ->
 * cuDevSmResourceSplitByCount -> cuDevResourceGenerateDesc ->
 * cuGreenCtxCreate -> cuGreenCtxStreamCreate), fovea's ops queued on the
 * slice's stream through fv_context_cuda_set_stream, beside the full GPU's
 * time, and an estimate for Jetson Orin boards from them:
 *   t_orin = max(t_slice * f_h100 / f_orin, bytes / bw_orin)
 * t_slice on as many H100 SMs as the Orin has (Ampere and Hopper SMs both
 * issue 128 FP32 lanes a clock; the slice keeps the H100's DRAM, so its time
 * is the SMs' work), scaled by the SM clocks, unless the Orin's DRAM is
 * slower still (bench_orin.c: the model and the Orin figures). Where green
 * contexts are unsupported, says why and skips (no failure).
 *
 * The slices (bench_slice_open/close) serve edge (the filter, below), net
 * (bench_net.c) and conv (bench_conv_slice.c). */
#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fovea/fovea.h"
#include "fovea/fovea_cuda.h"
#include "bench_slice.h"

/* The driver API through the runtime's entry points, not by linking
 * libcuda: fovea-bench then starts (and its CPU benchmarks run) on machines
 * without the NVIDIA driver. */
#define DRIVER_FNS(X)                                                                              \
    X(cuInit)                                                                                      \
    X(cuDeviceGet)                                                                                 \
    X(cuCtxGetCurrent)                                                                             \
    X(cuDeviceGetDevResource)                                                                      \
    X(cuDevSmResourceSplitByCount)                                                                 \
    X(cuDevResourceGenerateDesc)                                                                   \
    X(cuGreenCtxCreate)                                                                            \
    X(cuGreenCtxStreamCreate)                                                                      \
    X(cuCtxFromGreenCtx)                                                                           \
    X(cuCtxSetCurrent)                                                                             \
    X(cuStreamDestroy)                                                                             \
    X(cuGreenCtxDestroy)                                                                           \
    X(cuGetErrorName)                                                                              \
    X(cuGetErrorString)

#define DECLARE(f) static __typeof__(f) *p_##f;
DRIVER_FNS(DECLARE)
#undef DECLARE

/* 1 when every driver function was found, else 0 with why. */
static int driver_load(char *why, size_t n) {
    static int loaded = -1;
    static char failed[160];
    if (loaded < 0) {
        loaded = 1;
#define LOAD(f)                                                                                    \
    if (loaded) {                                                                                  \
        enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;               \
        void *fn = NULL;                                                                           \
        if (cudaGetDriverEntryPointByVersion(#f, &fn, CUDA_VERSION, cudaEnableDefault, &q) !=      \
                cudaSuccess ||                                                                     \
            q != cudaDriverEntryPointSuccess || !fn) {                                             \
            snprintf(failed, sizeof failed, "the driver has no %s (CUDA %d API)", #f,              \
                     CUDA_VERSION);                                                                \
            loaded = 0;                                                                            \
        } else {                                                                                   \
            p_##f = (__typeof__(p_##f))fn;                                                         \
        }                                                                                          \
    }
        DRIVER_FNS(LOAD)
#undef LOAD
    }
    if (!loaded) snprintf(why, n, "%s", failed);
    return loaded;
}

static int cu_ok(CUresult r, const char *call, char *why, size_t n) {
    if (r == CUDA_SUCCESS) return 1;
    const char *name = NULL, *text = NULL;
    p_cuGetErrorName(r, &name);
    p_cuGetErrorString(r, &text);
    snprintf(why, n, "%s: %s (%s)", call, name ? name : "?", text ? text : "?");
    return 0;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median ms per frame of fv_filter_apply (AUTO, made here so that it times
 * its engines on this stream) over runs batches of batch frames on ctx's
 * current stream. */
static int time_filter(fv_context *ctx, const fv_filter_desc *fd, int batch, int runs, double *ms,
                       char *engine, size_t en) {
    const int in_bpp = fd->format == FV_PIXEL_GRAY8 ? 1 : fd->format == FV_PIXEL_RGBA32 ? 4 : 3;
    fv_tensor *ti = NULL, *to = NULL;
    fv_filter *f = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaStream_t st;
    double t[64];
    int rc = 1;
    if (runs > 64) runs = 64;
    fv_tensor_desc td = {.dtype = FV_DTYPE_U8, .h = fd->height, .w = fd->width * in_bpp, .c = 1};
    fv_status s = fv_tensor_create(ctx, &td, &ti);
    td.w = fd->width * 3;
    if (s == FV_OK) s = fv_tensor_create(ctx, &td, &to);
    if (s == FV_OK) s = fv_filter_create(ctx, fd, &f);
    if (s == FV_OK) s = fv_context_cuda_stream(ctx, &st);
    if (s != FV_OK) {
        fprintf(stderr, "  slice: %s: %s\n", fv_status_name(s), fv_last_error());
        goto done;
    }
    fv_filter_info fi;
    fv_filter_info_get(f, &fi);
    snprintf(engine, en, "%s (AUTO timed fused %.4f, direct %.4f ms)",
             fv_filter_engine_name(fi.engine), (double)fi.timed_ms[0], (double)fi.timed_ms[1]);
    fv_image in = {
        .format = fd->format, .width = fd->width, .height = fd->height, .data = fv_tensor_data(ti)};
    fv_image out = {.format = FV_PIXEL_RGB24,
                    .width = fd->width,
                    .height = fd->height,
                    .data = fv_tensor_data(to)};
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) goto done;
    for (int r = -1; r < runs; r++) {
        float x = 0;
        cudaEventRecord(e0, st);
        for (int i = 0; i < batch; i++)
            if ((s = fv_filter_apply(f, &in, &out)) != FV_OK) {
                fprintf(stderr, "  slice: fv_filter_apply: %s\n", fv_last_error());
                goto done;
            }
        cudaEventRecord(e1, st);
        cudaError_t ce = cudaEventSynchronize(e1);
        if (ce == cudaSuccess) ce = cudaEventElapsedTime(&x, e0, e1);
        if (ce != cudaSuccess) {
            fprintf(stderr, "  slice: timing: %s\n", cudaGetErrorString(ce));
            goto done;
        }
        if (r >= 0) t[r] = x / batch;
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_d);
    *ms = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    rc = 0;
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    fv_context_synchronize(ctx);
    fv_filter_destroy(f);
    fv_tensor_destroy(to);
    fv_tensor_destroy(ti);
    return rc;
}

int bench_slice_list(const char *cmd, const char *list, int *want, int max) {
    int n = 0;
    for (const char *p = list; *p && n < max;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1024) {
            fprintf(stderr, "fovea-bench %s: --sms %s: give SM counts, e.g. 8,16\n", cmd, list);
            return -1;
        }
        want[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

int bench_slice_open(bench_slice *s, int device, int n, char *why, size_t wn) {
    CUdevice dev;
    CUdevResource all, part;
    CUdevResourceDesc desc;
    CUgreenCtx g = NULL;
    CUstream gs = NULL;
    CUcontext prev = NULL, gc = NULL;
    unsigned int groups = 1;
    memset(s, 0, sizeof *s);
    memset(&all, 0, sizeof all);
    memset(&part, 0, sizeof part);
    if (!driver_load(why, wn)) return 1;
    if (!cu_ok(p_cuInit(0), "cuInit", why, wn) ||
        !cu_ok(p_cuDeviceGet(&dev, device), "cuDeviceGet", why, wn) ||
        !cu_ok(p_cuCtxGetCurrent(&prev), "cuCtxGetCurrent", why, wn) ||
        !cu_ok(p_cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM),
               "cuDeviceGetDevResource(SM)", why, wn) ||
        !cu_ok(p_cuDevSmResourceSplitByCount(&part, &groups, &all, NULL, 0, (unsigned)n),
               "cuDevSmResourceSplitByCount", why, wn) ||
        !cu_ok(p_cuDevResourceGenerateDesc(&desc, &part, 1), "cuDevResourceGenerateDesc", why,
               wn) ||
        !cu_ok(p_cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate",
               why, wn))
        goto fail;
    s->green = g, s->prev = prev; /* from here bench_slice_close undoes it */
    if (!cu_ok(p_cuGreenCtxStreamCreate(&gs, g, CU_STREAM_NON_BLOCKING, 0),
               "cuGreenCtxStreamCreate", why, wn))
        goto fail;
    s->stream = gs;
    if (!cu_ok(p_cuCtxFromGreenCtx(&gc, g), "cuCtxFromGreenCtx", why, wn) ||
        !cu_ok(p_cuCtxSetCurrent(gc), "cuCtxSetCurrent(green)", why, wn))
        goto fail;
    s->sms = (int)part.sm.smCount;
    return 0;
fail:
    bench_slice_close(s);
    return 1;
}

void bench_slice_close(bench_slice *s) {
    if (!s->green) return;
    if (s->prev) p_cuCtxSetCurrent((CUcontext)s->prev);
    if (s->stream) p_cuStreamDestroy((CUstream)s->stream);
    p_cuGreenCtxDestroy((CUgreenCtx)s->green);
    memset(s, 0, sizeof *s);
}

void bench_slice_orin(double mhz, double bytes, const int *got, const double *ms, int n,
                      bench_orin_estimate *est) {
    bench_orin_estimate e[BENCH_ORINS];
    bench_slice_orin_estimate(mhz, bytes, got, ms, n, e);
    printf("  Orin estimate: t = max(t_slice(Orin's SMs) * %.0f MHz / f_orin, %.2f MB / bw_orin)\n",
           mhz, bytes * 1e-6);
    for (int k = 0; k < BENCH_ORINS; k++) {
        const bench_orin_estimate *o = &e[k];
        if (est) est[k] = *o;
        if (!isfinite(o->ms)) {
            printf("  %-14s (%d SMs, %.0f MHz, %.1f GB/s): no %d-SM slice timed; DRAM term %.4f "
                   "ms\n",
                   o->name, o->sms, o->mhz, o->gbps, o->sms, o->dram_ms);
            continue;
        }
        printf("  %-14s (%d SMs, %.0f MHz, %.1f GB/s): SM term %.4f ms, DRAM term %.4f ms -> "
               "%.4f ms (%.0f fps)\n",
               o->name, o->sms, o->mhz, o->gbps, o->sm_ms, o->dram_ms, o->ms, 1e3 / o->ms);
    }
}

double bench_slice_mhz(int device) {
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0.0;
    }
    return khz / 1e3;
}

/* One slice of n SMs: made, the filter timed on it, torn down. *got: the
 * SMs it has. */
static int run_slice(fv_context *ctx, int device, int n, const fv_filter_desc *fd, int batch,
                     int runs, double *ms, int *got, char *engine, size_t en, char *why,
                     size_t wn) {
    bench_slice sl;
    if (bench_slice_open(&sl, device, n, why, wn)) return 1;
    *got = sl.sms;
    int rc = 1;
    fv_status s = fv_context_cuda_set_stream(ctx, (cudaStream_t)sl.stream);
    if (s != FV_OK) {
        snprintf(why, wn, "fv_context_cuda_set_stream: %s", fv_last_error());
    } else {
        rc = time_filter(ctx, fd, batch, runs, ms, engine, en);
        if (rc) snprintf(why, wn, "the timing failed (above)");
        fv_context_cuda_set_stream(ctx, NULL);
    }
    bench_slice_close(&sl);
    return rc;
}

int bench_edge_slices(const char *list, int device, int width, int height, int batch, int runs) {
    int want[BENCH_MAX_SLICES];
    const int n = bench_slice_list("edge", list, want, BENCH_MAX_SLICES);
    if (n < 0) return 2;
    fv_context *ctx = NULL;
    fv_context_desc cd = {
        .backend = FV_BACKEND_CUDA, .device = device, .device_pool_bytes = (size_t)512 << 20};
    fv_status s = fv_context_create(&cd, &ctx);
    if (s != FV_OK) {
        fprintf(stderr, "fovea-bench edge --sms: %s: %s\n", fv_status_name(s), fv_last_error());
        return 1;
    }
    fv_context_info info;
    fv_context_info_get(ctx, &info);
    const double mhz = bench_slice_mhz(device);
    const fv_filter_desc fd = {.kind = FV_FILTER_LAPLACIAN,
                               .width = width,
                               .height = height,
                               .format = FV_PIXEL_RGB24,
                               .gain = 1.0f};
    const double bytes = (double)width * height * 6.0; /* RGB24 in, RGB24 out */
    printf("\nGPU slices (CUDA green contexts): Laplacian grey %dx%d RGB24 -> RGB24, engine AUTO, "
           "GPU-only, median of %d batches of %d\n",
           width, height, runs, batch);
    double full = NAN, slice_ms[BENCH_MAX_SLICES];
    int got[BENCH_MAX_SLICES];
    char eng[160], why[256];
    if (time_filter(ctx, &fd, batch, runs, &full, eng, sizeof eng) == 0)
        printf("  full GPU (%d SMs, %.0f MHz): %.4f ms; %s\n", info.multiprocessors, mhz, full,
               eng);
    for (int i = 0; i < n; i++) {
        slice_ms[i] = NAN, got[i] = 0;
        why[0] = '\0';
        if (run_slice(ctx, device, want[i], &fd, batch, runs, &slice_ms[i], &got[i], eng,
                      sizeof eng, why, sizeof why)) {
            printf("  %d SMs: skipped: %s\n", want[i], why);
            slice_ms[i] = NAN;
            continue;
        }
        printf("  %d SMs asked, %d given: %.4f ms (%.2fx the full GPU); %s\n", want[i], got[i],
               slice_ms[i], slice_ms[i] / full, eng);
        if (want[i] == 8 && width == 1920 && height == 1080)
            printf("  target: 1080p RGB on 8 SMs <= 1.67 ms: %.4f  %s\n", slice_ms[i],
                   slice_ms[i] <= 1.67 ? "PASS" : "MISS");
    }
    bench_slice_orin(mhz, bytes, got, slice_ms, n, NULL);
    fv_context_destroy(ctx);
    return 0;
}
