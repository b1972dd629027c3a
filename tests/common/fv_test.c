#define _DEFAULT_SOURCE 1 /* mkdtemp */
#include "fv_test.h"
#include <dirent.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fv_test_check_status(const char *expr, fv_status got, fv_status want, const char *needle,
                          const char *file, int line) {
    const char *msg = fv_last_error();
    if (got != want)
        fail_msg("%s:%d: %s returned %s, expected %s (message: \"%s\")", file, line, expr,
                 fv_status_name(got), fv_status_name(want), msg);
    if (msg[0] == '\0') fail_msg("%s:%d: %s failed with an empty message", file, line, expr);
    if (needle && !strstr(msg, needle))
        fail_msg("%s:%d: %s: message \"%s\" lacks \"%s\"", file, line, expr, msg, needle);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

int fv_test_quick(void) {
    const char *q = getenv("FV_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

void fv_test_seed(uint64_t seed) {
    rng_state = seed ? seed : 0x9E3779B97F4A7C15ull;
}

uint64_t fv_test_rand_u64(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

float fv_test_rand_uniform(float lo, float hi) {
    double u = (double)(fv_test_rand_u64() >> 11) / 9007199254740992.0;
    return (float)(lo + (hi - lo) * u);
}

void fv_test_fill_uniform(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++)
        x[i] = fv_test_rand_uniform(lo, hi);
}

void fv_test_fill_bytes(unsigned char *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] = (unsigned char)(fv_test_rand_u64() >> 56);
}

double fv_test_rel_l2(const float *out, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(out[i]) || isnan(ref[i])) return INFINITY;
        double d = (double)out[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    if (den == 0) return sqrt(num);
    return sqrt(num / den);
}

fv_context *fv_test_cpu_context(uint32_t flags) {
    fv_context_desc d = {.backend = FV_BACKEND_CPU,
                         .device_pool_bytes = 64u << 20,
                         .pinned_pool_bytes = 4u << 20,
                         .host_pool_bytes = 16u << 20,
                         .flags = flags};
    fv_context *ctx = NULL;
    fv_status s = fv_context_create(&d, &ctx);
    if (s != FV_OK) fail_msg("CPU context: %s: %s", fv_status_name(s), fv_last_error());
    return ctx;
}

fv_context *fv_test_gpu_context_or_skip(void) {
    fv_context_desc d = {.backend = FV_BACKEND_CUDA};
    fv_context *ctx = NULL;
    fv_status s = fv_context_create(&d, &ctx);
    if (s == FV_ERR_NO_DEVICE) {
        printf("SKIP: no usable GPU: %s\n", fv_last_error());
        fflush(stdout);
        exit(77);
    }
    if (s != FV_OK) {
        fprintf(stderr, "CUDA context failed: %s: %s\n", fv_status_name(s), fv_last_error());
        exit(1);
    }
    fv_context_info info;
    fv_context_info_get(ctx, &info);
    printf("GPU: %s (sm_%d%d), tensor cores %s%s\n", info.device_name, info.sm_major, info.sm_minor,
           info.tensor_cores ? "on" : "off ", info.tensor_core_reason);
    return ctx;
}

const char *fv_test_data_path(const char *name) {
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/%s", FV_TEST_DATA_DIR, name);
    return buf;
}

int fv_test_temp_dir(const char *prefix, char *out, size_t n) {
    const char *base = getenv("TMPDIR");
    if (snprintf(out, n, "%s/%s_XXXXXX", base && *base ? base : "/tmp", prefix) >= (int)n)
        return -1;
    return mkdtemp(out) ? 0 : -1;
}

void fv_test_remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0) fv_test_remove_tree(p); /* a subdirectory */
    }
    closedir(d);
    rmdir(dir);
}
