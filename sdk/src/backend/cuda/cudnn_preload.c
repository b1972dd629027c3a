/* cuDNN's sub-libraries loaded ahead, on a helper thread.
 *
 * cuDNN 9's libcudnn.so is a shim that dlopens its parts (graph, the
 * precompiled and the runtime-compiled engines, heuristics: hundreds of MB
 * with their relocations and static initializers) at their first use. In a
 * new process that first use is the first convolution a net builds, where
 * it cost 35-50 ms of the cold start (H100, 2026-11-26). Once a GPU is
 * found, a thread dlopens those parts while the main thread creates the CUDA
 * context (which takes longer); fv_context_create joins it before it
 * returns, so no thread outlives that call. dlopen counts references, so cuDNN's own dlopen later
 * finds each part loaded. The handles stay open for the life of the process, as cuDNN's own do. The
 * parts are looked for beside the libcudnn the process loaded, so another cuDNN on the search path
 * is never mixed in; a part that is not there is left to cuDNN, which reports what it misses when
 * it needs it. FV_CUDNN_PRELOAD=0 in the environment turns it off. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cuda_internal.h"

static const char *const parts[] = {"graph", "engines_precompiled", "engines_runtime_compiled",
                                    "heuristic"};
#define NPARTS ((int)(sizeof parts / sizeof parts[0]))

static struct {
    pthread_mutex_t mu;
    pthread_t thread;
    int state; /* 0: not started; 1: running; 2: joined */
    int loaded;
    double start_ms, loaded_ms;
} pre = {.mu = PTHREAD_MUTEX_INITIALIZER};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void *preload(void *arg) {
    (void)arg;
    Dl_info di;
    char dir[4096], path[4200];
    size_t version = cudnnGetVersion(); /* 9.14.0: 91400 */
    int major = (int)(version >= 10000 ? version / 10000 : version / 1000);
    if (dladdr((void *)cudnnCreate, &di) && di.dli_fname && strlen(di.dli_fname) < sizeof dir) {
        strcpy(dir, di.dli_fname);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            for (int i = 0; i < NPARTS; i++) {
                snprintf(path, sizeof path, "%s/libcudnn_%s.so.%d", dir, parts[i], major);
                /* RTLD_NOW: the relocations too are done here, not on the
                 * main thread later; lazily where a symbol needs another part */
                void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                if (!h) h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
                pre.loaded += h != NULL;
            }
        }
    }
    pre.loaded_ms = now_ms() - pre.start_ms;
    return NULL;
}

void fv__cudnn_preload_start(void) {
    pthread_mutex_lock(&pre.mu);
    const char *off = getenv("FV_CUDNN_PRELOAD"); /* "0": off, to measure what it saves */
    if (pre.state == 0 && off && strcmp(off, "0") == 0) pre.state = 2;
    if (pre.state == 0) {
        pre.start_ms = now_ms();
        /* no thread: the first convolution loads them, as without this */
        pre.state = pthread_create(&pre.thread, NULL, preload, NULL) == 0 ? 1 : 2;
    }
    pthread_mutex_unlock(&pre.mu);
}

void fv__cudnn_preload_wait(fv_context *ctx) {
    pthread_mutex_lock(&pre.mu);
    if (pre.state == 1) {
        double t0 = now_ms();
        pthread_join(pre.thread, NULL);
        pre.state = 2;
        if (ctx)
            fv__log(ctx, FV_LOG_INFO,
                    "cuDNN: %d of %d parts loaded ahead on a helper thread in %.1f ms (waited "
                    "%.1f ms for them)",
                    pre.loaded, NPARTS, pre.loaded_ms, now_ms() - t0);
    }
    pthread_mutex_unlock(&pre.mu);
}

int fv__cudnn_preload_count(void) {
    pthread_mutex_lock(&pre.mu);
    int n = pre.state == 2 ? pre.loaded : -1;
    pthread_mutex_unlock(&pre.mu);
    return n;
}
