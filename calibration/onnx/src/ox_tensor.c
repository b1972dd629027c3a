/* TensorProto -> constant value: float classes (float32, float16,
 * bfloat16, float64) become float, integer classes and bool become int64.
 * Every byte count is checked against the dims before anything is
 * allocated, so a tensor never costs more memory than its data in the file
 * (or in its external file). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ox.h"
#include "fovea/fp16.h"

typedef enum {
    DT_FLOAT = 1,
    DT_UINT8 = 2,
    DT_INT8 = 3,
    DT_UINT16 = 4,
    DT_INT16 = 5,
    DT_INT32 = 6,
    DT_INT64 = 7,
    DT_BOOL = 9,
    DT_FLOAT16 = 10,
    DT_DOUBLE = 11,
    DT_UINT32 = 12,
    DT_UINT64 = 13,
    DT_BFLOAT16 = 16
} dtype;

static size_t elem_size(int dt) {
    switch (dt) {
    case DT_UINT8:
    case DT_INT8:
    case DT_BOOL:
        return 1;
    case DT_UINT16:
    case DT_INT16:
    case DT_FLOAT16:
    case DT_BFLOAT16:
        return 2;
    case DT_FLOAT:
    case DT_INT32:
    case DT_UINT32:
        return 4;
    case DT_INT64:
    case DT_DOUBLE:
    case DT_UINT64:
        return 8;
    default:
        return 0;
    }
}

static int is_float_type(int dt) {
    return dt == DT_FLOAT || dt == DT_FLOAT16 || dt == DT_DOUBLE || dt == DT_BFLOAT16;
}

static float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Element k of little-endian raw bytes of type dt, into v. */
static void put_raw(fv__ox_value *v, size_t k, const uint8_t *p, int dt) {
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    switch (dt) {
    case DT_FLOAT:
        memcpy(&f32, p, 4);
        v->f[k] = f32;
        break;
    case DT_FLOAT16:
        memcpy(&u16, p, 2);
        v->f[k] = fv_f16_to_f32(u16);
        break;
    case DT_BFLOAT16:
        memcpy(&u16, p, 2);
        v->f[k] = bf16_to_float(u16);
        break;
    case DT_DOUBLE:
        memcpy(&f64, p, 8);
        v->f[k] = (float)f64;
        break;
    case DT_UINT8:
    case DT_BOOL:
        v->i[k] = p[0];
        break;
    case DT_INT8:
        v->i[k] = (int8_t)p[0];
        break;
    case DT_UINT16:
        memcpy(&u16, p, 2);
        v->i[k] = u16;
        break;
    case DT_INT16:
        memcpy(&i16, p, 2);
        v->i[k] = i16;
        break;
    case DT_INT32:
        memcpy(&i32, p, 4);
        v->i[k] = i32;
        break;
    case DT_UINT32:
        memcpy(&u32, p, 4);
        v->i[k] = u32;
        break;
    case DT_INT64:
        memcpy(&i64, p, 8);
        v->i[k] = i64;
        break;
    case DT_UINT64:
        memcpy(&u64, p, 8);
        v->i[k] = (int64_t)u64;
        break;
    }
}

static const char *entry(const Onnx__TensorProto *t, const char *key) {
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (e && e->key && e->value && strcmp(e->key, key) == 0) return e->value;
    }
    return NULL;
}

static int parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-') return -1;
    *out = v;
    return 0;
}

/* Reads `want` bytes of an external-data file into a new buffer. */
static fv_status read_external(const fv__ox *ox, const Onnx__TensorProto *t, const char *what,
                               size_t want, uint8_t **out) {
    *out = NULL;
    const char *loc = entry(t, "location");
    if (!loc || !loc[0])
        return fv__ox_fail(FV_ERR_FORMAT, "%s: external data without a location", what);
    if (!ox->base_dir)
        return fv__ox_fail(FV_ERR_NOT_SUPPORTED,
                           "%s: external data ('%.200s') in a model loaded from memory", what, loc);
    if (loc[0] == '/' || strstr(loc, "..") != NULL)
        return fv__ox_fail(FV_ERR_FORMAT,
                           "%s: external data location '%.200s' must be a path inside the "
                           "model's folder",
                           what, loc);
    uint64_t off = 0, len = want;
    const char *so = entry(t, "offset"), *sl = entry(t, "length");
    if ((so && parse_u64(so, &off)) || (sl && parse_u64(sl, &len)))
        return fv__ox_fail(FV_ERR_FORMAT, "%s: bad external data offset '%s' or length '%s'", what,
                           so ? so : "", sl ? sl : "");
    if (len != want)
        return fv__ox_fail(FV_ERR_FORMAT, "%s: external data length %llu but the dims need %zu",
                           what, (unsigned long long)len, want);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", ox->base_dir, loc) >= sizeof path)
        return fv__ox_fail(FV_ERR_FORMAT, "%s: external data path too long", what);
    FILE *f = fopen(path, "rb");
    if (!f) return fv__ox_fail(FV_ERR_IO, "%s: cannot open '%s': %s", what, path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || off > (uint64_t)st.st_size ||
        len > (uint64_t)st.st_size - off) {
        fclose(f);
        return fv__ox_fail(FV_ERR_FORMAT, "%s: '%s' holds no %llu bytes at offset %llu", what, path,
                           (unsigned long long)len, (unsigned long long)off);
    }
    uint8_t *buf = malloc(want ? want : 1);
    if (!buf) {
        fclose(f);
        return fv__ox_fail(FV_ERR_OUT_OF_MEMORY, "%s: no memory for %zu bytes", what, want);
    }
    int ok = fseeko(f, (off_t)off, SEEK_SET) == 0 && fread(buf, 1, want, f) == want;
    fclose(f);
    if (!ok) {
        free(buf);
        return fv__ox_fail(FV_ERR_IO, "%s: cannot read %zu bytes of '%s'", what, want, path);
    }
    *out = buf;
    return FV_OK;
}

fv_status fv__ox_tensor_load(const fv__ox *ox, const Onnx__TensorProto *t, const char *what,
                             fv__ox_value *v) {
    int dt = t->has_data_type ? t->data_type : 0;
    size_t es = elem_size(dt);
    if (!es)
        return fv__ox_fail(FV_ERR_NOT_SUPPORTED, "%s: data type %d is not supported", what, dt);
    if (t->segment) return fv__ox_fail(FV_ERR_NOT_SUPPORTED, "%s: segmented tensor", what);
    if (t->n_dims > FV_ONNX_MAX_RANK)
        return fv__ox_fail(FV_ERR_NOT_SUPPORTED, "%s: rank %zu (at most %d)", what, t->n_dims,
                           FV_ONNX_MAX_RANK);
    int rank = (int)t->n_dims;
    int64_t count = fv__ox_count(rank, t->dims, FV__OX_MAX_ELEMS);
    if (count < 0) {
        char b[200];
        return fv__ox_fail(FV_ERR_FORMAT, "%s: dims %s negative or too large", what,
                           fv__ox_dims_str(rank, t->dims, b, sizeof b));
    }
    size_t n = (size_t)count, bytes = n * es;
    int external =
        t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const uint8_t *raw = NULL;
    uint8_t *ext = NULL;
    size_t typed = 0; /* elements in a typed field */
    if (external) {
        fv_status s = read_external(ox, t, what, bytes, &ext);
        if (s != FV_OK) return s;
        raw = ext;
    } else if (t->has_raw_data && (t->raw_data.len > 0 || n == 0)) {
        if (t->raw_data.len != bytes)
            return fv__ox_fail(FV_ERR_FORMAT,
                               "%s: raw_data holds %zu bytes but dims need %zu (%zu elements of "
                               "%zu bytes)",
                               what, t->raw_data.len, bytes, n, es);
        raw = t->raw_data.data;
    } else {
        switch (dt) {
        case DT_FLOAT:
            typed = t->n_float_data;
            break;
        case DT_DOUBLE:
            typed = t->n_double_data;
            break;
        case DT_INT64:
            typed = t->n_int64_data;
            break;
        case DT_UINT32:
        case DT_UINT64:
            typed = t->n_uint64_data;
            break;
        default:
            typed = t->n_int32_data;
            break;
        }
        if (typed != n)
            return fv__ox_fail(FV_ERR_FORMAT, "%s: %zu values stored but dims need %zu", what,
                               typed, n);
    }
    fv_status s = fv__ox_const_alloc(v, rank, t->dims, !is_float_type(dt), FV__OX_MAX_ELEMS);
    if (s != FV_OK) {
        free(ext);
        return s;
    }
    for (size_t k = 0; k < n; k++) {
        if (raw) {
            put_raw(v, k, raw + k * es, dt);
            continue;
        }
        switch (dt) {
        case DT_FLOAT:
            v->f[k] = t->float_data[k];
            break;
        case DT_DOUBLE:
            v->f[k] = (float)t->double_data[k];
            break;
        case DT_FLOAT16:
            v->f[k] = fv_f16_to_f32((uint16_t)t->int32_data[k]);
            break;
        case DT_BFLOAT16:
            v->f[k] = bf16_to_float((uint16_t)t->int32_data[k]);
            break;
        case DT_INT64:
            v->i[k] = t->int64_data[k];
            break;
        case DT_UINT32:
        case DT_UINT64:
            v->i[k] = (int64_t)t->uint64_data[k];
            break;
        default:
            v->i[k] = t->int32_data[k];
            break;
        }
    }
    free(ext);
    return FV_OK;
}
