/* Context: backend choice, pools, log callback, info. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, sched_yield */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include "internal.h"
#include "profile.h"

#define MIB ((size_t)1 << 20)

const char *fv_version(void) {
    return FV_VERSION_STRING;
}

const char *fv_backend_name(fv_backend b) {
    switch (b) {
    case FV_BACKEND_AUTO:
        return "auto";
    case FV_BACKEND_CPU:
        return "cpu";
    case FV_BACKEND_CUDA:
        return "cuda";
    }
    return "unknown";
}

const char *fv_pool_kind_name(fv_pool_kind k) {
    switch (k) {
    case FV_POOL_DEVICE:
        return "device";
    case FV_POOL_PINNED:
        return "pinned";
    case FV_POOL_MAPPED:
        return "mapped";
    case FV_POOL_HOST:
        return "host";
    }
    return "unknown";
}

const char *fv_memory_policy_name(fv_memory_policy p) {
    switch (p) {
    case FV_MEMORY_POLICY_AUTO:
        return "auto";
    case FV_MEMORY_POLICY_ZERO_COPY:
        return "zero-copy";
    case FV_MEMORY_POLICY_DEVICE:
        return "device";
    }
    return "unknown";
}

/* L4T (Jetson's Linux) installs this file; desktop drivers do not. */
#define FV_TEGRA_RELEASE_FILE "/etc/nv_tegra_release"

static int is_tegra(void) {
    FILE *f = fopen(FV_TEGRA_RELEASE_FILE, "r");
    if (!f) return 0;
    fclose(f);
    return 1;
}

static fv_status check_desc(const fv_context_desc *d) {
    FV_REQUIRE(d->backend == FV_BACKEND_AUTO || d->backend == FV_BACKEND_CPU ||
                   d->backend == FV_BACKEND_CUDA,
               FV_ERR_BAD_PARAM, "context: backend=%d is not AUTO (0), CPU (1) or CUDA (2)",
               (int)d->backend);
    FV_REQUIRE(d->device >= 0, FV_ERR_BAD_PARAM, "context: device=%d must be >= 0", d->device);
    FV_REQUIRE(d->memory_policy == FV_MEMORY_POLICY_AUTO ||
                   d->memory_policy == FV_MEMORY_POLICY_ZERO_COPY ||
                   d->memory_policy == FV_MEMORY_POLICY_DEVICE,
               FV_ERR_BAD_PARAM,
               "context: memory_policy=%d is not AUTO (0), ZERO_COPY (1) or DEVICE (2)",
               (int)d->memory_policy);
    FV_REQUIRE(d->log_level >= FV_LOG_ERROR && d->log_level <= FV_LOG_DEBUG, FV_ERR_BAD_PARAM,
               "context: log_level=%d is not in 0..3", (int)d->log_level);
    FV_REQUIRE((d->flags & ~(uint32_t)FV_CONTEXT_CPU_ROUND_F16) == 0, FV_ERR_BAD_PARAM,
               "context: unknown flags 0x%x", (unsigned)d->flags);
    for (size_t i = 0; i < sizeof d->reserved / sizeof d->reserved[0]; i++)
        FV_REQUIRE(d->reserved[i] == 0, FV_ERR_BAD_PARAM, "context: reserved[%zu] must be zero", i);
    return FV_OK;
}

/* The identity a profile is keyed by: device name, SM, loaded cuDNN. */
static void profile_header(const fv_context *ctx, fv__profile *p) {
    snprintf(p->device, sizeof p->device, "%s", ctx->info.device_name);
    p->sm = ctx->info.sm_major * 10 + ctx->info.sm_minor;
    p->cudnn = ctx->info.cudnn_loaded;
}

/* Loads a profile; any problem leaves the context without one and a warning
 * naming the reason (never a failure of context creation). */
static void load_profile(fv_context *ctx, const char *path) {
    if (ctx->backend != FV_BACKEND_CUDA) {
        /* a missing or unreadable file is said too: the same run on a GPU
         * would ignore it for that reason */
        FILE *f = NULL;
        const char *kind = NULL;
        int e = fv__fopen_regular(path, &f, &kind);
        if (f) fclose(f);
        snprintf(ctx->profile_why, sizeof ctx->profile_why,
                 "the CPU backend has no engines to choose%s%s%s",
                 e ? " (and the file cannot be read: " : "",
                 e < 0   ? (kind ? kind : "not a regular file")
                 : e > 0 ? strerror(e)
                         : "",
                 e ? ")" : "");
        fv__log(ctx, FV_LOG_WARN, "profile '%s' ignored: %s", path, ctx->profile_why);
        return;
    }
    fv__profile loaded;
    char why[sizeof ctx->profile_why];
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", fv_last_error()); /* loading is not a failed call */
    fv_status s = fv__profile_load(path, ctx->profile, &loaded, why, sizeof why);
    fv__error(FV_OK, "%s", saved);
    if (s != FV_OK) {
        fv__profile_free(&loaded);
        snprintf(ctx->profile_why, sizeof ctx->profile_why, "%s", why);
        fv__log(ctx, FV_LOG_WARN, "profile '%s' ignored: %s", path, why);
        return;
    }
    fv__profile_free(ctx->profile);
    *ctx->profile = loaded;
    fv__log(ctx, FV_LOG_INFO, "profile '%s': %d engine choices for %s", path, loaded.n,
            loaded.device);
}

fv_status fv_context_profile_save(fv_context *ctx, const char *path) {
    FV__HOLD(ctx);
    FV_REQUIRE(ctx && path, FV_ERR_BAD_PARAM, "fv_context_profile_save: %s is NULL",
               ctx ? "path" : "ctx");
    profile_header(ctx, ctx->profile);
    return fv__profile_save(path, ctx->profile);
}

void fv_context_profile_status(const fv_context *ctx, const char **why_ignored, int *entries) {
    FV__HOLD_WAIT((fv_context *)ctx);
    if (why_ignored) *why_ignored = ctx ? ctx->profile_why : "";
    if (entries) *entries = ctx && ctx->profile ? ctx->profile->n : 0;
}

static fv_status create(const fv_context_desc *desc_in, fv_context **out);

fv_status fv_context_create(const fv_context_desc *desc_in, fv_context **out) {
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_context_create: out is NULL");
    *out = NULL;
    fv_status s = create(desc_in, out);
#if FV_BUILT_WITH_CUDA
    /* cuDNN's parts, loading since the GPU was found (fv__cuda_usable) while
     * CUDA made its context, are in by now: the helper thread never outlives
     * this call (a process exiting under its dlopen crashed in cuDNN's
     * finalizers) */
    fv__cudnn_preload_wait(*out);
#endif
    return s;
}

static fv_status create(const fv_context_desc *desc_in, fv_context **out) {
    fv_context_desc d;
    memset(&d, 0, sizeof d);
    if (desc_in) d = *desc_in;
    FV_TRY(check_desc(&d));

    const fv__backend *be = &fv__backend_cpu;
    char no_gpu[160] = "";
    fv_backend chosen = FV_BACKEND_CPU;
    if (d.backend != FV_BACKEND_CPU) {
#if FV_BUILT_WITH_CUDA
        if (fv__cuda_usable(d.device, no_gpu, sizeof no_gpu)) {
            be = &fv__backend_cuda;
            chosen = FV_BACKEND_CUDA;
        }
#else
        snprintf(no_gpu, sizeof no_gpu, "this fovea was built without CUDA/cuDNN (CPU-only build)");
#endif
        if (chosen != FV_BACKEND_CUDA && d.backend == FV_BACKEND_CUDA)
            return fv__error(FV_ERR_NO_DEVICE, "context: CUDA backend requested but unusable: %s",
                             no_gpu);
    }

    fv_context *ctx = calloc(1, sizeof *ctx);
    FV_REQUIRE(ctx, FV_ERR_OUT_OF_MEMORY, "context: out of host memory");
    ctx->backend = chosen;
    ctx->be = be;
    ctx->log = d.log;
    ctx->log_user = d.log_user;
    ctx->log_level = d.log_level;
    ctx->flags = d.flags;
    ctx->workspace_limit = d.workspace_limit_bytes ? d.workspace_limit_bytes : 64 * MIB;
    ctx->info.backend = chosen;
    snprintf(ctx->info.backend_name, sizeof ctx->info.backend_name, "%s", be->name);
    ctx->info.device_index = -1;
    ctx->info.fovea_built_with_cuda = FV_BUILT_WITH_CUDA;
    if (d.backend == FV_BACKEND_AUTO && chosen == FV_BACKEND_CPU)
        snprintf(ctx->info.no_gpu_reason, sizeof ctx->info.no_gpu_reason, "%s", no_gpu);

    fv_status s = be->init(ctx, d.device);
    if (s != FV_OK) {
        free(ctx);
        return s;
    }
    if (chosen == FV_BACKEND_CPU && d.backend == FV_BACKEND_AUTO)
        fv__log(ctx, FV_LOG_INFO, "context: AUTO chose the CPU backend: %s", no_gpu);

    /* Jetson's iGPU shares DRAM with the CPU: frames the GPU reads in place
     * beat copies. The CPU backend has nothing to copy to: DEVICE. */
    ctx->info.tegra = is_tegra();
    fv_memory_policy policy = d.memory_policy;
    if (policy == FV_MEMORY_POLICY_AUTO)
        policy = chosen == FV_BACKEND_CUDA && (ctx->info.integrated || ctx->info.tegra)
                     ? FV_MEMORY_POLICY_ZERO_COPY
                     : FV_MEMORY_POLICY_DEVICE;
    ctx->info.memory_policy = policy;
    int zero_copy = policy == FV_MEMORY_POLICY_ZERO_COPY;

    size_t sizes[4] = {d.device_pool_bytes ? d.device_pool_bytes : 256 * MIB,
                       d.pinned_pool_bytes ? d.pinned_pool_bytes : 64 * MIB,
                       d.mapped_pool_bytes ? d.mapped_pool_bytes
                                           : (ctx->info.integrated || zero_copy ? 64 * MIB : 0),
                       d.host_pool_bytes ? d.host_pool_bytes : 64 * MIB};
    struct timespec p0, p1;
    clock_gettime(CLOCK_MONOTONIC, &p0);
    for (int k = 0; k < 4; k++) {
        if (sizes[k] == 0) continue;
        s = fv__pool_create(ctx, (fv_pool_kind)k, sizes[k], NULL, &ctx->pools[k]);
        if (s != FV_OK) {
            fv__error_prefix(s, k == FV_POOL_MAPPED && zero_copy
                                    ? "context: memory_policy zero-copy"
                                    : "context");
            fv_context_destroy(ctx);
            return s;
        }
        ctx->pools[k]->owned_by_ctx = 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &p1);
    double pools_ms =
        (double)(p1.tv_sec - p0.tv_sec) * 1e3 + (double)(p1.tv_nsec - p0.tv_nsec) * 1e-6;
    ctx->profile = calloc(1, sizeof *ctx->profile);
    if (!ctx->profile) {
        fv_context_destroy(ctx);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "context: out of host memory");
    }
    fv__profile_init(ctx->profile);
    profile_header(ctx, ctx->profile);
    if (d.profile_path) load_profile(ctx, d.profile_path);
    fv__log(ctx, FV_LOG_INFO,
            "context: backend %s on %s, memory policy %s%s; pools made in %.1f ms", be->name,
            ctx->info.device_name, fv_memory_policy_name(policy), ctx->info.tegra ? " (Tegra)" : "",
            pools_ms);
    *out = ctx;
    return FV_OK;
}

/* > 0 while an object makes or destroys the objects it owns (this thread) */
static _Thread_local int internal_depth;

void fv__obj_internal(int enter) {
    internal_depth += enter ? 1 : -1;
}

void fv__obj_born(fv_context *ctx, fv__obj_kind kind) {
    if (ctx && internal_depth == 0) ctx->live[kind]++;
}

void fv__obj_gone(fv_context *ctx, fv__obj_kind kind) {
    if (ctx && internal_depth == 0 && ctx->live[kind] > 0) ctx->live[kind]--;
}

static const char *const obj_names[FV__OBJ_COUNT][2] = {
    [FV__OBJ_POOL] = {"pool", "pools"},
    [FV__OBJ_TENSOR] = {"tensor", "tensors"},
    [FV__OBJ_CONV2D] = {"conv2d", "conv2ds"},
    [FV__OBJ_FILTER] = {"filter", "filters"},
    [FV__OBJ_PIPELINE] = {"pipeline", "pipelines"},
    [FV__OBJ_FRAME_BUFFER] = {"frame buffer", "frame buffers"},
    [FV__OBJ_NET] = {"net", "nets"},
    [FV__OBJ_CLASSIFY] = {"classify op", "classify ops"},
    [FV__OBJ_SEGMENT] = {"segment op", "segment ops"},
    [FV__OBJ_TIMER] = {"timer", "timers"},
};

/* A token per thread: the address of a thread-local byte, unique among
 * the threads alive. */
static uintptr_t thread_token(void) {
    static _Thread_local char me;
    return (uintptr_t)&me;
}

static int hold_try(fv_context *ctx, uintptr_t me) {
    uintptr_t free_ = 0;
    if (__atomic_load_n(&ctx->holder, __ATOMIC_ACQUIRE) == me) return ++ctx->hold_depth, 1;
    if (!__atomic_compare_exchange_n(&ctx->holder, &free_, me, 0, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
        return 0;
    ctx->hold_depth = 1;
    return 1;
}

fv__hold fv__hold_take(fv_context *ctx, const char *call) {
    if (!ctx || hold_try(ctx, thread_token())) return (fv__hold){ctx, FV_OK};
    return (fv__hold){NULL, fv__error(FV_ERR_BAD_STATE,
                                      "%s: the context is in use by another thread: a context and "
                                      "the objects made from it take one thread at a time (one "
                                      "context per thread, or hand it over between calls); "
                                      "nothing was done",
                                      call)};
}

fv__hold fv__hold_wait(fv_context *ctx) {
    if (!ctx) return (fv__hold){NULL, FV_OK};
    uintptr_t me = thread_token();
    for (int spin = 0; !hold_try(ctx, me); spin++) {
        if (spin < 64) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50000}; /* 50 us: the other call may take long */
            nanosleep(&ts, NULL);
        }
    }
    return (fv__hold){ctx, FV_OK};
}

void fv__hold_end(fv__hold *h) {
    if (h->ctx && --h->ctx->hold_depth == 0) __atomic_store_n(&h->ctx->holder, 0, __ATOMIC_RELEASE);
}

fv_status fv_context_destroy(fv_context *ctx) {
    if (!ctx) return FV_OK;
    /* Held by hand, not FV__HOLD: on success the context is gone before the
     * function returns. */
    fv__hold h = fv__hold_take(ctx, "fv_context_destroy");
    if (h.s != FV_OK) return h.s;
    if (ctx->hold_depth > 1) {
        fv__hold_end(&h);
        return fv__error(FV_ERR_BAD_STATE, "fv_context_destroy: called from inside another call "
                                           "on the context (its log callback?); the context is "
                                           "left as it was");
    }
    /* As uv_loop_close: refuse while objects made from the context live
     * (they point into its pools and backend state), and touch nothing. */
    char alive[512] = "";
    size_t len = 0;
    for (int k = 0; k < FV__OBJ_COUNT; k++) {
        if (ctx->live[k] == 0 || len >= sizeof alive) continue;
        int n = snprintf(alive + len, sizeof alive - len, "%s%ld %s", len ? ", " : "", ctx->live[k],
                         obj_names[k][ctx->live[k] != 1]);
        if (n > 0) len += (size_t)n;
    }
    if (len) {
        fv__hold_end(&h);
        return fv__error(FV_ERR_BAD_STATE,
                         "fv_context_destroy: still alive: %s; destroy them first: the context "
                         "is left as it was",
                         alive);
    }
    ctx->be->synchronize(ctx);
    if (ctx->profile) {
        fv__profile_free(ctx->profile);
        free(ctx->profile);
    }
    for (int k = 0; k < 4; k++)
        fv__pool_destroy(ctx->pools[k]);
    ctx->be->fini(ctx);
    free(ctx);
    return FV_OK;
}

fv_status fv_context_info_get(const fv_context *ctx, fv_context_info *info) {
    FV_REQUIRE(ctx && info, FV_ERR_BAD_PARAM, "fv_context_info_get: %s is NULL",
               ctx ? "info" : "ctx");
    *info = ctx->info;
    return FV_OK;
}

fv_status fv_cuda_device_count(int *count) {
    FV_REQUIRE(count, FV_ERR_BAD_PARAM, "fv_cuda_device_count: count is NULL");
    *count = 0;
#if FV_BUILT_WITH_CUDA
    return fv__cuda_device_count(count);
#else
    return FV_OK;
#endif
}

fv_backend fv_context_backend(const fv_context *ctx) {
    return ctx ? ctx->backend : FV_BACKEND_AUTO;
}

fv_status fv_context_synchronize(fv_context *ctx) {
    FV__HOLD(ctx);
    FV_REQUIRE(ctx, FV_ERR_BAD_PARAM, "fv_context_synchronize: ctx is NULL");
    return ctx->be->synchronize(ctx);
}

fv_pool *fv_context_pool(fv_context *ctx, fv_pool_kind kind) {
    if (!ctx || (int)kind < 0 || (int)kind > 3) return NULL;
    return ctx->pools[kind];
}
