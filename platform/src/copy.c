/* Copies of whole frames between host buffers, rows split between worker
 * threads when a frame is large: one thread's memcpy moves 5-10 GB/s, so a
 * 1080p RGB frame (6.2 MB) costs it 0.6-1.2 ms, more than the GPU's whole
 * inference. Each large frame is cut into parts and queued; the workers take
 * parts of the oldest queued frame, and each caller takes parts of its own
 * frame until none is left, then waits for the workers' parts of it. So
 * several cameras copying at once share the workers (the part count is a
 * multiple of the threads, so that one frame alone splits evenly).
 *
 * The workers are made on first use and live for the process, asleep on a
 * condition variable between frames: fv__copy_default_workers of the CPUs
 * online, or FV_COPY_THREADS (0 to 64) where it is set, for measurement or
 * to leave cores to other work. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "io_internal.h"

#define MAX_WORKERS 15
#define SPLIT_BYTES ((size_t)1 << 20) /* smaller frames: one thread */
#define PART_BYTES  ((size_t)1 << 20) /* about this much a part */
#define MAX_PARTS   64

typedef struct job {
    unsigned char *dst;
    const unsigned char *src;
    size_t dstride, sstride, row, rows;
    int parts;        /* the frame's parts */
    int next, left;   /* under mu: the first part not taken; parts not finished */
    struct job *link; /* under mu: the queue of frames with parts not taken */
} job;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int workers;      /* started */
static job *head, *tail; /* under mu */

static void copy_part(const job *j, int k) {
    size_t a = j->rows * (size_t)k / (size_t)j->parts;
    size_t b = j->rows * (size_t)(k + 1) / (size_t)j->parts;
    if (j->dstride == j->row && j->sstride == j->row) {
        memcpy(j->dst + a * j->row, j->src + a * j->row, (b - a) * j->row);
        return;
    }
    for (size_t y = a; y < b; y++)
        memcpy(j->dst + y * j->dstride, j->src + y * j->sstride, j->row);
}

/* Under mu: the next part of j not taken, or -1; j leaves the queue with
 * its last part. */
static int take(job *j) {
    if (j->next >= j->parts) return -1;
    int k = j->next++;
    if (j->next == j->parts) {
        job **p = &head, *prev = NULL;
        while (*p != j)
            prev = *p, p = &(*p)->link;
        *p = j->link;
        if (tail == j) tail = prev;
    }
    return k;
}

static void *worker(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!head)
            pthread_cond_wait(&go, &mu);
        job *j = head;
        int k = take(j);
        pthread_mutex_unlock(&mu);
        copy_part(j, k); /* j lives until its last part is counted below */
        pthread_mutex_lock(&mu);
        if (--j->left == 0) pthread_cond_broadcast(&done);
    }
    return NULL;
}

/* The CPUs less one, at most 7, or half the CPUs less one where that is
 * more (many cores: a host with several GPUs), at most MAX_WORKERS. 7 held
 * four 1080p cameras on one GPU at the PCIe floor on 16 CPUs (H100 machine,
 * 2026-11-27); spread over two GPUs on 32 CPUs (two H200s, session 59)
 * the copies were the limit: four cameras 12746-13296 frames/s with 7,
 * 16506-16586 with 15, 16199-16320 with 24; eight cameras 13154-13430,
 * 14465-14487 and 10722-10932; one GPU the same with 7 or 15 (PCIe). */
int fv__copy_default_workers(long cpus) {
    if (cpus <= 1) return 0;
    long want = cpus - 1, cap = cpus / 2 - 1 > 7 ? cpus / 2 - 1 : 7;
    if (cap > MAX_WORKERS) cap = MAX_WORKERS;
    return (int)(want < cap ? want : cap);
}

static void start(void) {
    int want = fv__copy_default_workers(sysconf(_SC_NPROCESSORS_ONLN));
    const char *env = getenv("FV_COPY_THREADS");
    if (env && *env) {
        char *end;
        long n = strtol(env, &end, 10);
        if (*end == '\0' && n >= 0 && n <= 64) want = (int)n;
    }
    pthread_attr_t at;
    if (pthread_attr_init(&at) != 0) return;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < want; i++) {
        pthread_t t;
        if (pthread_create(&t, &at, worker, NULL) != 0) break;
        workers++;
    }
    pthread_attr_destroy(&at);
}

void fv__copy_rows(void *dst, size_t dstride, const void *src, size_t sstride, size_t row,
                   size_t rows) {
    job j = {dst, src, dstride, sstride, row, rows, 1, 0, 0, NULL};
    size_t bytes = row * rows;
    if (bytes < SPLIT_BYTES || rows < 8) {
        copy_part(&j, 0);
        return;
    }
    pthread_once(&once, start);
    if (workers == 0) {
        copy_part(&j, 0);
        return;
    }
    size_t threads = (size_t)workers + 1;
    size_t rounds = (bytes + threads * PART_BYTES - 1) / (threads * PART_BYTES);
    size_t parts = threads * rounds;
    if (parts > MAX_PARTS) parts = MAX_PARTS;
    if (parts > rows) parts = rows;
    j.parts = (int)parts;
    j.left = j.parts;
    pthread_mutex_lock(&mu);
    if (tail)
        tail->link = &j;
    else
        head = &j;
    tail = &j;
    pthread_cond_broadcast(&go);
    for (int k; (k = take(&j)) >= 0;) {
        pthread_mutex_unlock(&mu);
        copy_part(&j, k);
        pthread_mutex_lock(&mu);
        j.left--;
    }
    while (j.left > 0)
        pthread_cond_wait(&done, &mu);
    pthread_mutex_unlock(&mu);
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
