/* Weight packing for the CUDA backend's forms (conv_weights.h). */
#include "conv_weights.h"
#include <pthread.h>
#include <string.h>

enum { MAX_THREADS = 4, THREAD_MIN_WEIGHTS = 1 << 20 };

static size_t row_len(const fv__conv_wpack *p) { /* positions per (k, filter row) */
    return p->kr ? (size_t)p->kr : (size_t)p->s * (size_t)p->wc;
}

size_t fv__conv_wpack_count(const fv__conv_wpack *p) {
    return (size_t)p->kp * (size_t)p->r * row_len(p);
}

typedef struct job {
    const fv__conv_wpack *p;
    const fv_half *w;
    fv_half *out;
    int k0, k1; /* output channels [k0, k1) */
} job;

/* Output channels k0..k1-1. The dense layout's tap (k, r, s) is wc
 * consecutive values: written in order, read at stride r * s from k's
 * block of the source (a few kB, in cache). */
static void pack_range(const job *j) {
    const fv__conv_wpack *p = j->p;
    const int cg = p->c / p->groups, kg = p->k / p->groups;
    const size_t row = row_len(p), rs = (size_t)p->r * (size_t)p->s;
    for (int k = j->k0; k < j->k1; k++) {
        const int g = k / kg;
        const int col0 = p->form_groups == 1 ? g * cg : 0; /* channel c's column: col0 + c */
        const fv_half *wk = j->w + (size_t)k * cg * rs;
        for (int r = 0; r < p->r; r++)
            for (int s = 0; s < p->s; s++) {
                const fv_half *src = wk + (size_t)r * p->s + s;
                if (!p->kr) {
                    fv_half *dst = j->out + ((size_t)k * p->r + r) * row + (size_t)s * p->wc;
                    if (p->wc == 1 && p->form_groups != 1) /* depthwise: a channel a group */
                        dst[0] = src[(size_t)(cg - 1) * rs];
                    else
                        for (int c = 0; c < cg; c++)
                            dst[col0 + c] = src[(size_t)c * rs];
                    continue;
                }
                /* direct kernel: [r][kp / 8][kr][8] */
                fv_half *dst = j->out + ((size_t)r * (p->kp / 8) + k / 8) * p->kr * 8 + k % 8;
                for (int c = 0; c < cg; c++) {
                    int col = p->form_groups == 1 ? col0 + c : p->wc == 1 ? 0 : c;
                    size_t pos = p->pair ? (size_t)fv__conv_direct_pair_pos(s, col)
                                         : (size_t)s * p->wc + col;
                    dst[pos * 8] = src[(size_t)c * rs];
                }
            }
    }
}

static void *pack_thread(void *arg) {
    pack_range(arg);
    return NULL;
}

void fv__conv_wpack_run(const fv__conv_wpack *p, const fv_half *w, fv_half *out) {
    memset(out, 0, fv__conv_wpack_count(p) * sizeof *out);
    size_t n = (size_t)p->k * (size_t)(p->c / p->groups) * (size_t)p->r * (size_t)p->s;
    int t = n >= THREAD_MIN_WEIGHTS ? MAX_THREADS : 1;
    if (t > p->k) t = p->k;
    job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int i = 0; i < t; i++) {
        jobs[i] =
            (job){p, w, out, (int)((long long)p->k * i / t), (int)((long long)p->k * (i + 1) / t)};
        if (i > 0) started[i] = pthread_create(&tid[i], NULL, pack_thread, &jobs[i]) == 0;
    }
    pack_range(&jobs[0]);
    for (int i = 1; i < t; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            pack_range(&jobs[i]);
    }
}
