/* The activation memory planner: greedy by size (the largest buffer first,
 * each at the lowest offset where it overlaps no placed buffer alive at the
 * same time), as TensorFlow Lite's arena planner does. */
#include <stdlib.h>
#include "net_internal.h"

typedef struct span {
    size_t lo, hi;
} span;

static int by_lo(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* qsort has no user pointer: the sizes for this thread's sort */
static _Thread_local const size_t *g_sizes;
static int by_size_desc(const void *a, const void *b) {
    size_t x = g_sizes[*(const int *)a], y = g_sizes[*(const int *)b];
    if (x != y) return x > y ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

fv_status fv__net_plan(const size_t *sizes, const int *first, const int *last, int count,
                       size_t *offsets, size_t *arena, size_t *lower_bound) {
    *arena = 0, *lower_bound = 0;
    if (count <= 0) return FV_OK;
    int *order = malloc(sizeof(int) * (size_t)count);
    span *busy = malloc(sizeof(span) * (size_t)count);
    char *placed = calloc((size_t)count, 1);
    if (!order || !busy || !placed) {
        free(order), free(busy), free(placed);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "net planner: out of host memory");
    }
    int lmax = 0;
    for (int i = 0; i < count; i++) {
        order[i] = i;
        if (last[i] > lmax) lmax = last[i];
    }
    g_sizes = sizes;
    qsort(order, (size_t)count, sizeof *order, by_size_desc);
    for (int oi = 0; oi < count; oi++) {
        int i = order[oi];
        int nb = 0;
        for (int j = 0; j < count; j++)
            if (placed[j] && first[j] <= last[i] && first[i] <= last[j])
                busy[nb++] = (span){offsets[j], offsets[j] + sizes[j]};
        qsort(busy, (size_t)nb, sizeof *busy, by_lo);
        /* best fit: the smallest gap that holds it, else the end */
        size_t at = 0, best = (size_t)-1, best_gap = (size_t)-1;
        for (int k = 0; k < nb; k++) {
            if (busy[k].lo > at && busy[k].lo - at >= sizes[i] && busy[k].lo - at < best_gap)
                best = at, best_gap = busy[k].lo - at;
            if (busy[k].hi > at) at = busy[k].hi;
        }
        offsets[i] = best != (size_t)-1 ? best : at;
        placed[i] = 1;
        if (offsets[i] + sizes[i] > *arena) *arena = offsets[i] + sizes[i];
    }
    for (int t = 0; t <= lmax; t++) {
        size_t live = 0;
        for (int i = 0; i < count; i++)
            if (first[i] <= t && t <= last[i]) live += sizes[i];
        if (live > *lower_bound) *lower_bound = live;
    }
    free(order), free(busy), free(placed);
    return FV_OK;
}
