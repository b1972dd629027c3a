/* FVW1 files (net_models.h): reading, lookup and writing. The reader distrusts every length: each
 * is checked against what is left of the file before anything is allocated for it. Failures leave
 * their message in fovea's last error (fv_set_error). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_cli.h"
#include "net_models.h"

struct fv_models_file {
    char *path;
    int count;
    fv_models_tensor *t; /* names and data are separate allocations */
};

/* ---- little-endian decoding, whatever the host ------------------------------ */
static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p) {
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static void get_f32(const unsigned char *p, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = get_u32(p + 4 * i);
        memcpy(&out[i], &u, 4);
    }
}

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static int read_all(FILE *f, unsigned char **out, size_t *len) {
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) return -1;
    for (;;) {
        if (n == cap) {
            unsigned char *b = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                return -1;
            }
            buf = b, cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    *out = buf;
    *len = n;
    return 0;
}

void fv_models_file_destroy(fv_models_file *f) {
    if (!f) return;
    for (int i = 0; i < f->count; i++) {
        free((char *)f->t[i].name);
        free((float *)f->t[i].data);
    }
    free(f->t);
    free(f->path);
    free(f);
}

/* The records of buf[0 .. len) into f (f->count set as they are read). */
static fv_status parse(fv_models_file *f, const unsigned char *buf, size_t len) {
    const char *path = f->path;
    if (len < 8 || memcmp(buf, "FVW1", 4) != 0)
        return fv_set_error(FV_ERR_FORMAT, "%s: not an FVW1 file (%s)", path,
                            len < 4 ? "shorter than its magic" : "bad magic");
    uint32_t count = get_u32(buf + 4);
    /* each record takes at least 4 + 1 + 4 + 4 bytes */
    if (count > (len - 8) / 13)
        return fv_set_error(FV_ERR_FORMAT,
                            "%s: truncated or corrupt: %u records announced, the file has "
                            "room for at most %zu",
                            path, count, (len - 8) / 13);
    f->t = calloc(count ? count : 1, sizeof *f->t);
    if (!f->t) return fv_set_error(FV_ERR_OUT_OF_MEMORY, "%s: no memory", path);
    size_t off = 8;
    for (uint32_t r = 0; r < count; r++) {
        size_t at = off;
        if (len - off < 4) goto truncated;
        uint32_t nl = get_u32(buf + off);
        off += 4;
        if (nl < 1 || nl > FV_MODELS_MAX_NAME)
            return fv_set_error(FV_ERR_FORMAT,
                                "%s: corrupt: record %u at offset %zu: name length %u (1 .. "
                                "%d)",
                                path, r, at, nl, FV_MODELS_MAX_NAME);
        if (len - off < nl + 4) goto truncated;
        char *name = malloc(nl + 1);
        if (!name) return fv_set_error(FV_ERR_OUT_OF_MEMORY, "%s: no memory", path);
        memcpy(name, buf + off, nl);
        name[nl] = '\0';
        off += nl;
        fv_models_tensor *t = &f->t[f->count++];
        t->name = name;
        if (strlen(name) != nl)
            return fv_set_error(FV_ERR_FORMAT, "%s: corrupt: record %u: a NUL in its name", path,
                                r);
        for (int i = 0; i + 1 < f->count; i++)
            if (!strcmp(f->t[i].name, name))
                return fv_set_error(FV_ERR_FORMAT, "%s: corrupt: '%s' appears twice", path, name);
        uint32_t nd = get_u32(buf + off);
        off += 4;
        if (nd > FV_MODELS_MAX_DIMS)
            return fv_set_error(FV_ERR_FORMAT, "%s: corrupt: '%s' has %u dims (0 .. %d)", path,
                                name, nd, FV_MODELS_MAX_DIMS);
        if (len - off < 8 * (size_t)nd) goto truncated;
        t->ndims = (int)nd;
        size_t count_el = 1;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t v = get_u64(buf + off + 8 * d);
            if (v < 1 || v > INT32_MAX)
                return fv_set_error(FV_ERR_FORMAT, "%s: corrupt: '%s' dim %u is %lld (1 .. 2^31-1)",
                                    path, name, d, (long long)v);
            t->dims[d] = (int64_t)v;
            if (count_el > (len - off) / (size_t)v) goto truncated; /* also stops overflow */
            count_el *= (size_t)v;
        }
        off += 8 * (size_t)nd;
        if ((len - off) / 4 < count_el) goto truncated;
        float *data = malloc(count_el * sizeof *data);
        if (!data)
            return fv_set_error(FV_ERR_OUT_OF_MEMORY, "%s: no memory for '%s' (%zu floats)", path,
                                name, count_el);
        get_f32(buf + off, data, count_el);
        t->data = data;
        t->count = count_el;
        off += 4 * count_el;
        continue;
    truncated:
        return fv_set_error(FV_ERR_FORMAT,
                            "%s: truncated: record %u of %u (at offset %zu) runs past the "
                            "end (%zu bytes)",
                            path, r, count, at, len);
    }
    if (off != len)
        return fv_set_error(FV_ERR_FORMAT,
                            "%s: corrupt: %zu bytes after the last of its %u records", path,
                            len - off, count);
    return FV_OK;
}

fv_status fv_models_file_load(const char *path, fv_models_file **out) {
    if (!path || !out) return fv_set_error(FV_ERR_BAD_PARAM, "fv_models_file_load: NULL");
    *out = NULL;
    char why[160];
    FILE *fp = fv_cli_fopen_read(path, why, sizeof why);
    if (!fp) return fv_set_error(FV_ERR_IO, "%s: cannot open: %s", path, why);
    unsigned char *buf = NULL;
    size_t len = 0;
    int rc = read_all(fp, &buf, &len);
    int rerr = ferror(fp);
    fclose(fp);
    if (rc) return fv_set_error(FV_ERR_OUT_OF_MEMORY, "%s: no memory to read it", path);
    if (rerr) {
        free(buf);
        return fv_set_error(FV_ERR_IO, "%s: read error", path);
    }
    fv_models_file *f = calloc(1, sizeof *f);
    if (f) f->path = malloc(strlen(path) + 1);
    if (!f || !f->path) {
        free(buf);
        if (f) free(f);
        return fv_set_error(FV_ERR_OUT_OF_MEMORY, "%s: no memory", path);
    }
    strcpy(f->path, path);
    fv_status s = parse(f, buf, len);
    free(buf);
    if (s != FV_OK) {
        fv_models_file_destroy(f);
        return s;
    }
    *out = f;
    return FV_OK;
}

int fv_models_file_count(const fv_models_file *f) {
    return f ? f->count : 0;
}

const fv_models_tensor *fv_models_file_tensor(const fv_models_file *f, int i) {
    return f && i >= 0 && i < f->count ? &f->t[i] : NULL;
}

/* "[64, 3, 7, 7]", want < 0 as "*" */
static void shape_str(char *buf, size_t n, int nd, const int64_t *d) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < nd && k < n; i++) {
        if (d[i] < 0)
            k += (size_t)snprintf(buf + k, n - k, "%s*", i ? ", " : "");
        else
            k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)d[i]);
    }
    if (k < n) snprintf(buf + k, n - k, "]");
}

fv_status fv_models_file_get(const fv_models_file *f, const char *name, int ndims,
                             const int64_t *want, const fv_models_tensor **out) {
    if (!f || !name || !out || (want && (ndims < 0 || ndims > FV_MODELS_MAX_DIMS)))
        return fv_set_error(FV_ERR_BAD_PARAM, "fv_models_file_get: bad argument");
    for (int i = 0; i < f->count; i++) {
        const fv_models_tensor *t = &f->t[i];
        if (strcmp(t->name, name) != 0) continue;
        int ok = !want || t->ndims == ndims;
        for (int d = 0; ok && want && d < ndims; d++)
            ok = want[d] < 0 || want[d] == t->dims[d];
        if (!ok) {
            char got[160], exp[160];
            shape_str(got, sizeof got, t->ndims, t->dims);
            shape_str(exp, sizeof exp, ndims, want);
            return fv_set_error(FV_ERR_BAD_SHAPE, "%s: '%s' is %s, the net needs %s", f->path, name,
                                got, exp);
        }
        *out = t;
        return FV_OK;
    }
    return fv_set_error(FV_ERR_FORMAT, "%s: no tensor '%s' (the file has %d)", f->path, name,
                        f->count);
}

fv_status fv_models_file_save(const char *path, const fv_models_tensor *t, int count) {
    if (!path || (count > 0 && !t) || count < 0)
        return fv_set_error(FV_ERR_BAD_PARAM, "fv_models_file_save: bad argument");
    for (int i = 0; i < count; i++) {
        size_t nl = t[i].name ? strlen(t[i].name) : 0, n = 1;
        int ok = nl >= 1 && nl <= FV_MODELS_MAX_NAME && t[i].ndims >= 0 &&
                 t[i].ndims <= FV_MODELS_MAX_DIMS && t[i].data;
        for (int d = 0; ok && d < t[i].ndims; d++) {
            ok = t[i].dims[d] >= 1 && t[i].dims[d] <= INT32_MAX;
            n *= ok ? (size_t)t[i].dims[d] : 1;
        }
        if (!ok || n != t[i].count)
            return fv_set_error(FV_ERR_BAD_PARAM,
                                "fv_models_file_save: tensor %d ('%s') cannot be stored", i,
                                t[i].name ? t[i].name : "(null)");
    }
    FILE *f = fopen(path, "wb");
    if (!f) return fv_set_error(FV_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    unsigned char hdr[8] = {'F', 'V', 'W', '1'};
    put_u32(hdr + 4, (uint32_t)count);
    int bad = fwrite(hdr, 1, 8, f) != 8;
    for (int i = 0; i < count && !bad; i++) {
        unsigned char b[8];
        size_t nl = strlen(t[i].name);
        put_u32(b, (uint32_t)nl);
        bad |= fwrite(b, 1, 4, f) != 4 || fwrite(t[i].name, 1, nl, f) != nl;
        put_u32(b, (uint32_t)t[i].ndims);
        bad |= fwrite(b, 1, 4, f) != 4;
        for (int d = 0; d < t[i].ndims; d++) {
            uint64_t v = (uint64_t)t[i].dims[d];
            put_u32(b, (uint32_t)v);
            put_u32(b + 4, (uint32_t)(v >> 32));
            bad |= fwrite(b, 1, 8, f) != 8;
        }
        unsigned char chunk[4096];
        for (size_t k = 0; k < t[i].count && !bad;) {
            size_t m = 0;
            for (; m < sizeof chunk / 4 && k < t[i].count; m++, k++) {
                uint32_t u;
                memcpy(&u, &t[i].data[k], 4);
                put_u32(chunk + 4 * m, u);
            }
            bad |= fwrite(chunk, 4, m, f) != m;
        }
    }
    if (fclose(f) != 0) bad = 1;
    if (bad) return fv_set_error(FV_ERR_IO, "%s: write failed", path);
    return FV_OK;
}
