/* The importer's value table: one entry per ONNX tensor name (graph
 * inputs, initializers, node outputs), found by name through an
 * open-addressing hash. Constants own their data. */
#include <stdlib.h>
#include <string.h>
#include "ox.h"

static uint64_t hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

fv_status fv__ox_values_init(fv__ox *ox, int expected) {
    ox->cap = expected > 16 ? expected : 16;
    ox->values = calloc((size_t)ox->cap, sizeof *ox->values);
    size_t ns = 64;
    while (ns < (size_t)ox->cap * 2)
        ns *= 2;
    ox->slots = calloc(ns, sizeof *ox->slots);
    ox->nslots = ns;
    ox->nvalues = 0;
    if (!ox->values || !ox->slots)
        return fv__ox_fail(FV_ERR_OUT_OF_MEMORY, "model: no memory for %d tensors", expected);
    return FV_OK;
}

void fv__ox_values_free(fv__ox *ox) {
    for (int i = 0; i < ox->nvalues; i++)
        fv__ox_const_free(&ox->values[i]);
    free(ox->values);
    free(ox->slots);
    ox->values = NULL;
    ox->slots = NULL;
    ox->nvalues = ox->cap = 0;
}

fv_status fv__ox_value_add(fv__ox *ox, const char *name, int *out) {
    if (!name || !name[0]) return fv__ox_fail(FV_ERR_FORMAT, "model: a tensor without a name");
    if (fv__ox_find(ox, name))
        return fv__ox_fail(FV_ERR_FORMAT, "model: tensor '%.200s' is defined twice", name);
    if (ox->nvalues == ox->cap) {
        /* init sized the table for every name the graph can define */
        return fv__ox_fail(FV_ERR_INTERNAL, "model: value table full at '%.200s'", name);
    }
    int idx = ox->nvalues++;
    fv__ox_value *v = &ox->values[idx];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->producer = -1;
    v->tensor = -1;
    size_t m = ox->nslots - 1, h = (size_t)hash(name) & m;
    while (ox->slots[h])
        h = (h + 1) & m;
    ox->slots[h] = idx + 1;
    *out = idx;
    return FV_OK;
}

fv__ox_value *fv__ox_find(const fv__ox *ox, const char *name) {
    if (!name || !name[0] || !ox->slots) return NULL;
    size_t m = ox->nslots - 1, h = (size_t)hash(name) & m;
    while (ox->slots[h]) {
        fv__ox_value *v = &ox->values[ox->slots[h] - 1];
        if (strcmp(v->name, name) == 0) return v;
        h = (h + 1) & m;
    }
    return NULL;
}

int64_t fv__ox_count(int rank, const int64_t *dims, uint64_t cap) {
    uint64_t c = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return -1;
        if (dims[i] == 0)
            c = 0;
        else if (c > 0 && (uint64_t)dims[i] > cap / c)
            c = cap + 1; /* stays over the cap, without overflowing */
        else
            c *= (uint64_t)dims[i];
    }
    for (int i = 0; i < rank; i++)
        if (dims[i] == 0) return 0;
    return c > cap ? -1 : (int64_t)c;
}

void fv__ox_const_free(fv__ox_value *v) {
    free(v->f);
    free(v->i);
    v->f = NULL;
    v->i = NULL;
    v->count = 0;
}

fv_status fv__ox_const_alloc(fv__ox_value *v, int rank, const int64_t *dims, int is_int,
                             uint64_t cap) {
    if (rank < 0 || rank > FV_ONNX_MAX_RANK)
        return fv__ox_fail(FV_ERR_NOT_SUPPORTED, "tensor '%.200s': rank %d (at most %d)", v->name,
                           rank, FV_ONNX_MAX_RANK);
    int64_t c = fv__ox_count(rank, dims, cap);
    if (c < 0) {
        char b[160];
        return fv__ox_fail(FV_ERR_BAD_SHAPE,
                           "tensor '%.200s': dims %s negative or over %llu elements", v->name,
                           fv__ox_dims_str(rank, dims, b, sizeof b), (unsigned long long)cap);
    }
    fv__ox_const_free(v);
    size_t n = (size_t)c;
    void *p = calloc(n ? n : 1, is_int ? sizeof(int64_t) : sizeof(float));
    if (!p)
        return fv__ox_fail(FV_ERR_OUT_OF_MEMORY, "tensor '%.200s': no memory for %zu elements",
                           v->name, n);
    if (is_int)
        v->i = p;
    else
        v->f = p;
    v->is_int = is_int;
    v->count = n;
    v->rank = rank;
    if (rank) memcpy(v->dims, dims, (size_t)rank * sizeof *dims);
    v->kind = FV__OX_CONST;
    return FV_OK;
}

fv_status fv__ox_value_copy(fv__ox_value *dst, const fv__ox_value *src) {
    if (dst == src) return FV_OK;
    if (src->kind == FV__OX_CONST) {
        fv_status s = fv__ox_const_alloc(dst, src->rank, src->dims, src->is_int, UINT64_MAX);
        if (s != FV_OK) return s;
        if (src->count)
            memcpy(src->is_int ? (void *)dst->i : (void *)dst->f,
                   src->is_int ? (const void *)src->i : (const void *)src->f,
                   src->count * (src->is_int ? sizeof(int64_t) : sizeof(float)));
        return FV_OK;
    }
    fv__ox_const_free(dst);
    dst->kind = src->kind;
    dst->rank = src->rank;
    memcpy(dst->dims, src->dims, sizeof dst->dims);
    dst->tensor = src->tensor;
    return FV_OK;
}

double fv__ox_get(const fv__ox_value *v, size_t k) {
    return v->is_int ? (double)v->i[k] : (double)v->f[k];
}

void fv__ox_dims4(int rank, const int64_t *dims, int d[4]) {
    for (int i = 0; i < 4; i++)
        d[i] = i < rank ? (int)dims[i] : 1;
}
