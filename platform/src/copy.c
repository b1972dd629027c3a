/* Copies of whole frames between host buffers, rows split between a few
 * worker threads when a frame is large: one thread's memcpy moves 5-10 GB/s,
 * so a 1080p RGB frame (6.2 MB) costs it 0.6-1.2 ms, more than the GPU's
 * whole inference; four threads bring that within the PCIe upload's time.
 * The workers are made on first use and live for the process (they sleep
 * on a condition variable between frames). One frame is split at a time;
 * a caller that finds the workers busy copies alone. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "io_internal.h"

#define MAX_WORKERS 3
#define SPLIT_BYTES ((size_t)1 << 20) /* smaller frames: one thread */

typedef struct job {
    unsigned char *dst;
    const unsigned char *src;
    size_t dstride, sstride, row;
    size_t rows;
} job;

static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER; /* one split frame at a time */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int workers;     /* started */
static unsigned gen;    /* bumped per frame */
static int parts, left; /* parts of this frame (workers + caller), parts not finished */
static job cur;

static void copy_part(const job *j, int k, int n) {
    size_t a = j->rows * (size_t)k / (size_t)n, b = j->rows * (size_t)(k + 1) / (size_t)n;
    if (j->dstride == j->row && j->sstride == j->row) {
        memcpy(j->dst + a * j->row, j->src + a * j->row, (b - a) * j->row);
        return;
    }
    for (size_t y = a; y < b; y++)
        memcpy(j->dst + y * j->dstride, j->src + y * j->sstride, j->row);
}

static void *worker(void *arg) {
    int k = (int)(size_t)arg; /* part k + 1: the caller does part 0 */
    unsigned seen = 0;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (gen == seen)
            pthread_cond_wait(&go, &mu);
        seen = gen;
        if (k + 1 >= parts) continue; /* not needed for this frame */
        job j = cur;
        int n = parts;
        pthread_mutex_unlock(&mu);
        copy_part(&j, k + 1, n);
        pthread_mutex_lock(&mu);
        if (--left == 0) pthread_cond_signal(&done);
    }
    return NULL;
}

static void start(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int want = cpus > 1 ? (int)(cpus - 1) : 0;
    if (want > MAX_WORKERS) want = MAX_WORKERS;
    pthread_attr_t at;
    if (pthread_attr_init(&at) != 0) return;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < want; i++) {
        pthread_t t;
        if (pthread_create(&t, &at, worker, (void *)(size_t)i) != 0) break;
        workers++;
    }
    pthread_attr_destroy(&at);
}

void fv__copy_rows(void *dst, size_t dstride, const void *src, size_t sstride, size_t row,
                   size_t rows) {
    job j = {dst, src, dstride, sstride, row, rows};
    if (row * rows < SPLIT_BYTES || rows < 8) {
        copy_part(&j, 0, 1);
        return;
    }
    pthread_once(&once, start);
    if (workers == 0 || pthread_mutex_trylock(&busy) != 0) {
        copy_part(&j, 0, 1);
        return;
    }
    pthread_mutex_lock(&mu);
    cur = j;
    parts = workers + 1;
    left = workers;
    gen++;
    pthread_cond_broadcast(&go);
    pthread_mutex_unlock(&mu);
    copy_part(&j, 0, workers + 1);
    pthread_mutex_lock(&mu);
    while (left > 0)
        pthread_cond_wait(&done, &mu);
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&busy);
}

void fv__copy_image(const fv_image *src, const fv_image *dst) {
    int nv12 = src->format == FV_PIXEL_NV12;
    size_t row = nv12 ? (size_t)src->width : fv_image_bytes(src->format, src->width, 1);
    size_t ss = src->stride ? src->stride : row, ds = dst->stride ? dst->stride : row;
    fv__copy_rows(dst->data, ds, src->data, ss, row, (size_t)src->height);
    if (nv12) {
        const char *uv = src->uv ? src->uv : (const char *)src->data + ss * src->height;
        char *duv = dst->uv ? dst->uv : (char *)dst->data + ds * dst->height;
        size_t suvs = src->uv_stride ? src->uv_stride : ss;
        size_t duvs = dst->uv_stride ? dst->uv_stride : ds;
        fv__copy_rows(duv, duvs, uv, suvs, row, (size_t)src->height / 2);
    }
}
