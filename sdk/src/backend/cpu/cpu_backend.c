/* CPU reference backend: context, memory, copies, dtype conversion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cpu.h"

static void cpu_model(char *out, size_t n) {
    snprintf(out, n, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Model", 5) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ' || *c == '\t')
                    c++;
                c[strcspn(c, "\n")] = '\0';
                snprintf(out, n, "%s", c);
                break;
            }
        }
    }
    fclose(f);
}

static fv_status cpu_init(fv_context *ctx, int device) {
    fv_context_info *in = &ctx->info;
    cpu_model(in->device_name, sizeof in->device_name);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    in->multiprocessors = cpus > 0 ? (int)cpus : 1;
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    long psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0) in->device_memory_total = (size_t)pages * (size_t)psize;
    if (avail > 0 && psize > 0) in->device_memory_free = (size_t)avail * (size_t)psize;
    snprintf(in->tensor_core_reason, sizeof in->tensor_core_reason, "CPU backend: no tensor cores");
    return FV_OK;
}

static void cpu_fini(fv_context *ctx) {}

static fv_status cpu_sync(fv_context *ctx) {
    return FV_OK;
}

static fv_status cpu_reserve(fv_context *ctx, fv_pool_kind kind, size_t bytes, void **ptr,
                             void **alias) {
    void *p = NULL;
    if (posix_memalign(&p, FV_ALIGN, bytes) != 0 || !p)
        return fv__error(FV_ERR_OUT_OF_MEMORY, "reserving %zu bytes of host memory failed", bytes);
    *ptr = p;
    *alias = p;
    return FV_OK;
}

static void cpu_release(fv_context *ctx, fv_pool_kind kind, void *ptr) {
    free(ptr);
}

static fv_status cpu_zero(fv_context *ctx, fv_pool_kind kind, void *ptr, size_t bytes) {
    memset(ptr, 0, bytes);
    return FV_OK;
}

static fv_status cpu_copy2d(fv_context *ctx, void *dst, size_t dpitch, const void *src,
                            size_t spitch, size_t width, size_t rows) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (dpitch == width && spitch == width) {
        memmove(d, s, width * rows);
        return FV_OK;
    }
    for (size_t r = 0; r < rows; r++)
        memcpy(d + r * dpitch, s + r * spitch, width);
    return FV_OK;
}

static fv_status cpu_convert(fv_context *ctx, fv_tensor *dst, const fv_tensor *src) {
    const fv_tensor_shape *s = &src->shape, *d = &dst->shape;
    size_t pix = (size_t)s->n * s->h * s->w;
    for (size_t p = 0; p < pix; p++)
        for (int c = 0; c < s->c; c++) {
            float v = fv__cpu_load(src, p * (size_t)s->c_stored + (size_t)c);
            size_t o = p * (size_t)d->c_stored + (size_t)c;
            if (d->dtype == FV_DTYPE_F16)
                ((fv_half *)dst->data)[o] = fv_f32_to_f16(v);
            else
                ((float *)dst->data)[o] = v; /* a conversion, not an op: no rounding */
        }
    return FV_OK;
}

const fv__backend fv__backend_cpu = {
    .name = "cpu",
    .init = cpu_init,
    .fini = cpu_fini,
    .synchronize = cpu_sync,
    .mem_reserve = cpu_reserve,
    .mem_release = cpu_release,
    .mem_zero = cpu_zero,
    .copy2d = cpu_copy2d,
    .convert = cpu_convert,
    .conv2d_create = fv__cpu_conv2d_create,
    .conv2d_destroy = fv__cpu_conv2d_destroy,
    .conv2d_forward = fv__cpu_conv2d_forward,
    .pooling2d = fv__cpu_pooling2d,
    .add = fv__cpu_add,
    .pack = fv__cpu_pack,
    .unpack = fv__cpu_unpack,
    .edge = fv__cpu_edge,
};
