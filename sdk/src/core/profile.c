/* The device profile: engine choices persisted as a small text file (format
 * in profile.h). The loader trusts nothing: the file may be truncated,
 * corrupt, hand-edited or made on another machine; any flaw rejects the
 * whole file with a reason naming the line, and never crashes. */
#include "profile.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "fovea-profile"
/* base64 characters for n bytes */
#define B64_LEN(n) (((n) + 2) / 3 * 4)
/* "plan <bytes> <16 hex digits> <base64>" */
#define PLAN_LINE_MAX (48 + B64_LEN(FV__PROFILE_MAX_PLAN))
/* A valid file never needs more than this (header + entries + plans + end). */
#define MAX_FILE_BYTES                                                                             \
    ((size_t)FV__PROFILE_LINE * (FV__PROFILE_MAX_ENTRIES + 8) + B64_LEN(FV__PROFILE_MAX_PLANS) +   \
     (size_t)64 * FV__PROFILE_MAX_ENTRIES)
#define MAX_SM    10000
#define MAX_CDECL 65536

void fv__profile_init(fv__profile *p) {
    memset(p, 0, sizeof *p);
}

void fv__profile_free(fv__profile *p) {
    if (!p) return;
    for (int i = 0; p->plan && i < p->n; i++)
        free(p->plan[i].data);
    free(p->plan);
    free(p->e);
    fv__profile_init(p);
}

static int find_index(const fv__profile *p, const char *key) {
    if (!p || !key) return -1;
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->e[i].key, key) == 0) return i;
    return -1;
}

const fv__engine_choice *fv__profile_find(const fv__profile *p, const char *key) {
    int i = find_index(p, key);
    return i < 0 ? NULL : &p->e[i];
}

/* Drops entry i's blob. */
static void drop_plan(fv__profile *p, int i) {
    if (!p->plan || !p->plan[i].data) return;
    p->plan_bytes -= p->plan[i].n;
    free(p->plan[i].data);
    p->plan[i] = (fv__plan_blob){NULL, 0};
}

/* Gives entry i the blob data (malloc'd, n bytes: the profile owns it now). */
static void attach_plan(fv__profile *p, int i, unsigned char *data, size_t n) {
    drop_plan(p, i);
    p->plan[i] = (fv__plan_blob){data, n};
    p->plan_bytes += n;
}

const unsigned char *fv__profile_plan(const fv__profile *p, const char *key, size_t *n) {
    int i = find_index(p, key);
    const fv__plan_blob *b = i >= 0 && p->plan ? &p->plan[i] : NULL;
    if (n) *n = b && b->data ? b->n : 0;
    return b ? b->data : NULL;
}

fv_status fv__profile_set_plan(fv__profile *p, const char *key, const void *data, size_t n) {
    FV_REQUIRE(p && key, FV_ERR_BAD_PARAM, "profile set plan: %s is NULL", p ? "key" : "profile");
    int i = find_index(p, key);
    FV_REQUIRE(i >= 0, FV_ERR_BAD_PARAM, "profile set plan: no entry for %.100s", key);
    if (!data || n == 0) {
        drop_plan(p, i);
        return FV_OK;
    }
    FV_REQUIRE(n <= FV__PROFILE_MAX_PLAN, FV_ERR_BAD_PARAM,
               "profile set plan: %zu bytes, more than the %zu a plan may have", n,
               FV__PROFILE_MAX_PLAN);
    size_t others = p->plan_bytes - (p->plan[i].data ? p->plan[i].n : 0);
    FV_REQUIRE(n <= FV__PROFILE_MAX_PLANS - others, FV_ERR_OUT_OF_MEMORY,
               "profile set plan: the profile's plans would pass %zu bytes", FV__PROFILE_MAX_PLANS);
    unsigned char *copy = malloc(n);
    FV_REQUIRE(copy, FV_ERR_OUT_OF_MEMORY, "profile set plan: out of host memory (%zu bytes)", n);
    memcpy(copy, data, n);
    attach_plan(p, i, copy, n);
    return FV_OK;
}

/* ---- validation shared by load and save ----------------------------------- */
/* A word: 1..n-1 bytes of printable ASCII without spaces, NUL-terminated in n. */
static bool word_ok(const char *s, size_t n) {
    size_t len = strnlen(s, n);
    if (len == 0 || len >= n) return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f) return false;
    return true;
}

/* A device name: 1..n-1 bytes, no control characters (spaces allowed). */
static bool name_ok(const char *s, size_t n) {
    size_t len = strnlen(s, n);
    if (len == 0 || len >= n) return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f) return false;
    return true;
}

/* What is wrong with c, or NULL. */
const char *fv__engine_path_name(fv__engine_path p) {
    return p == FV__PATH_GRAPH          ? "graph"
           : p == FV__PATH_GRAPH_PW     ? "graph-pw"
           : p == FV__PATH_GRAPH_PW16   ? "graph-pw16"
           : p == FV__PATH_GRAPH_SPLIT  ? "graph-split"
           : p == FV__PATH_LEGACY       ? "legacy"
           : p == FV__PATH_DIRECT       ? "direct"
           : p == FV__PATH_LEGACY_FUSED ? "legacy-fused"
           : p == FV__PATH_GEMM         ? "gemm"
                                        : "none";
}

static const char *choice_problem(const fv__engine_choice *c) {
    if (!word_ok(c->key, sizeof c->key))
        return "key must be 1..191 printable characters without spaces";
    if (c->path != FV__PATH_GRAPH && c->path != FV__PATH_LEGACY &&
        c->path != FV__PATH_GRAPH_SPLIT && c->path != FV__PATH_DIRECT &&
        c->path != FV__PATH_LEGACY_FUSED && c->path != FV__PATH_GEMM &&
        c->path != FV__PATH_GRAPH_PW && c->path != FV__PATH_GRAPH_PW16)
        return "path must be graph, graph-pw, graph-pw16, graph-split, legacy, legacy-fused, "
               "direct or gemm";
    if (c->cdecl_ < 1 || c->cdecl_ > MAX_CDECL) return "cdecl must be 1..65536";
    if (c->engine < 0) return "engine must be >= 0";
    if (c->nknobs < 0 || c->nknobs > FV__PROFILE_MAX_KNOBS) return "more than 16 knobs";
    for (int i = 0; i < c->nknobs; i++)
        if (c->knob_type[i] < 0) return "a knob type must be >= 0";
    if (!isfinite(c->ms) || c->ms < 0) return "ms must be finite and >= 0";
    if (!word_ok(c->how, sizeof c->how)) return "how must be 1..23 printable characters, no spaces";
    return NULL;
}

fv_status fv__profile_put(fv__profile *p, const fv__engine_choice *c) {
    FV_REQUIRE(p && c, FV_ERR_BAD_PARAM, "profile put: %s is NULL", p ? "choice" : "profile");
    const char *bad = choice_problem(c);
    FV_REQUIRE(!bad, FV_ERR_BAD_PARAM, "profile put: %s", bad);
    int old = find_index(p, c->key);
    if (old >= 0) {
        p->e[old] = *c;
        drop_plan(p, old);
        return FV_OK;
    }
    FV_REQUIRE(p->n < FV__PROFILE_MAX_ENTRIES, FV_ERR_OUT_OF_MEMORY,
               "profile put: the profile is full (%d entries)", FV__PROFILE_MAX_ENTRIES);
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 16;
        if (cap > FV__PROFILE_MAX_ENTRIES) cap = FV__PROFILE_MAX_ENTRIES;
        fv__engine_choice *e = realloc(p->e, (size_t)cap * sizeof *e);
        FV_REQUIRE(e, FV_ERR_OUT_OF_MEMORY, "profile put: out of host memory (%d entries)", cap);
        p->e = e;
        fv__plan_blob *b = realloc(p->plan, (size_t)cap * sizeof *b);
        FV_REQUIRE(b, FV_ERR_OUT_OF_MEMORY, "profile put: out of host memory (%d entries)", cap);
        memset(b + p->cap, 0, (size_t)(cap - p->cap) * sizeof *b);
        p->plan = b;
        p->cap = cap;
    }
    p->plan[p->n] = (fv__plan_blob){NULL, 0};
    p->e[p->n++] = *c;
    return FV_OK;
}

/* ---- numbers -------------------------------------------------------------- */
/* strtod and printf follow LC_NUMERIC; the file always uses '.'. */
static char locale_point(void) {
    const char *dp = localeconv()->decimal_point;
    return dp && dp[0] && !dp[1] ? dp[0] : '.';
}

static void format_float(char *out, size_t n, const char *fmt, double v) {
    snprintf(out, n, fmt, v);
    char lp = locale_point();
    if (lp != '.')
        for (char *c = out; *c; c++)
            if (*c == lp) *c = '.';
}

static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    const char *d = s[0] == '-' ? s + 1 : s;
    if (*d < '0' || *d > '9') return false; /* no sign, space or empty strtoll would take */
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (*s < '0' || *s > '9') return false; /* strtoull would wrap "-1" */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

static bool parse_ms(const char *s, float *out) {
    char buf[64];
    size_t len = strlen(s);
    if (len == 0 || len >= sizeof buf || !((*s >= '0' && *s <= '9') || *s == '.')) return false;
    memcpy(buf, s, len + 1);
    char lp = locale_point();
    for (char *c = buf; *c; c++) {
        if (*c == lp && lp != '.') return false;
        if (*c == '.') *c = lp;
    }
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || *end || !isfinite(v) || v < 0 || v > 3.0e38) return false;
    *out = (float)v;
    return true;
}

/* ---- plan blobs: hash and base64 ----------------------------------------- */
static uint64_t fnv1a64(const unsigned char *d, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ d[i]) * 0x100000001b3ull;
    return h;
}

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(unsigned char c) {
    if ((unsigned)(c - 'A') < 26) return c - 'A';
    if ((unsigned)(c - 'a') < 26) return c - 'a' + 26;
    if ((unsigned)(c - '0') < 10) return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* B64_LEN(n) characters for d[0..n) into out (no NUL). */
static void b64_encode(const unsigned char *d, size_t n, char *out) {
    size_t i = 0;
    for (; i + 3 <= n; i += 3, out += 4) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        out[0] = b64_chars[v >> 18];
        out[1] = b64_chars[v >> 12 & 63];
        out[2] = b64_chars[v >> 6 & 63];
        out[3] = b64_chars[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0);
        out[0] = b64_chars[v >> 18];
        out[1] = b64_chars[v >> 12 & 63];
        out[2] = i + 1 < n ? b64_chars[v >> 6 & 63] : '=';
        out[3] = '=';
    }
}

/* Decodes exactly B64_LEN(n) characters of s into out[0..n): padding only
 * where n needs it, unused bits zero. Returns the index of the first bad
 * character, or -1 when all is well. */
static long b64_decode(const char *s, size_t n, unsigned char *out) {
    size_t len = B64_LEN(n), o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            size_t at = i + (size_t)k;
            /* the last quantum's unused positions must be '=' */
            int pad = at >= len - (size_t)(len / 4 * 3 - n);
            v[k] = pad ? (s[at] == '=' ? 0 : -1) : b64_value((unsigned char)s[at]);
            if (v[k] < 0) return (long)at;
        }
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        for (int k = 0; k < 3; k++, w <<= 8)
            if (o < n)
                out[o++] = (unsigned char)(w >> 16);
            else if ((w >> 16) & 0xff)
                return (long)(i + 3); /* non-canonical: bits left over */
    }
    return -1;
}

/* ---- loading -------------------------------------------------------------- */
typedef struct loader {
    const char *path;
    char *why;
    size_t why_n;
    int line;
} loader;

static fv_status fail(loader *L, fv_status s, const char *fmt, ...) FV__PRINTF(3, 4);
static fv_status fail(loader *L, fv_status s, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char full[1024];
    if (L->line > 0)
        snprintf(full, sizeof full, "profile %s line %d: %s", L->path, L->line, msg);
    else
        snprintf(full, sizeof full, "profile %s: %s", L->path, msg);
    if (L->why && L->why_n) snprintf(L->why, L->why_n, "%s", full);
    return fv__error(s, "%s", full);
}

/* The whole file, NUL-terminated, in a malloc'd buffer of *len + 1 bytes. */
static fv_status read_all(loader *L, char **data, size_t *len) {
    *data = NULL;
    FILE *f = NULL;
    const char *kind = NULL;
    int e = fv__fopen_regular(L->path, &f, &kind);
    if (e < 0) return fail(L, FV_ERR_IO, "cannot read it: it is %s, not a regular file", kind);
    if (e > 0) return fail(L, FV_ERR_IO, "cannot open: %s", strerror(e));
    /* a regular file's size as the first guess: plans make profiles MBs */
    struct stat st;
    size_t cap = 4096, n = 0;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= MAX_FILE_BYTES)
        cap = (size_t)st.st_size + 1; /* + 1: the read that sees the end */
    char *buf = malloc(cap + 1);
    fv_status s = buf ? FV_OK : fail(L, FV_ERR_OUT_OF_MEMORY, "out of host memory");
    while (s == FV_OK) {
        if (n == cap) {
            if (cap > MAX_FILE_BYTES) break; /* read enough to know it is too large */
            char *b = realloc(buf, cap * 2 + 1);
            if (!b) {
                s = fail(L, FV_ERR_OUT_OF_MEMORY, "out of host memory (%zu bytes)", cap * 2);
                break;
            }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (s == FV_OK && ferror(f))
        s = fail(L, FV_ERR_IO, "read error: %s", strerror(errno));
    else if (s == FV_OK && n > MAX_FILE_BYTES)
        s = fail(L, FV_ERR_FORMAT, "larger than %zu bytes: not a profile", MAX_FILE_BYTES);
    fclose(f);
    if (s != FV_OK) {
        free(buf);
        return s;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return FV_OK;
}

/* Parses "name=value" fields of a conv line (tok: the rest after the key). */
static fv_status parse_fields(loader *L, char *rest, fv__engine_choice *c) {
    static const char *names[] = {"path", "cdecl", "engine", "ws", "ms", "how", "knobs"};
    enum { NFIELDS = 7 };
    unsigned seen = 0;
    char *save = NULL;
    for (char *t = rest; t; t = save) {
        save = strchr(t, ' ');
        if (save) *save++ = '\0';
        char *eq = strchr(t, '=');
        if (!eq) return fail(L, FV_ERR_FORMAT, "'%.40s' is not name=value", t);
        *eq = '\0';
        char *v = eq + 1;
        int f = 0;
        while (f < NFIELDS && strcmp(t, names[f]) != 0)
            f++;
        if (f == NFIELDS) return fail(L, FV_ERR_FORMAT, "unknown field '%.40s'", t);
        if (seen & (1u << f)) return fail(L, FV_ERR_FORMAT, "field %s given twice", t);
        seen |= 1u << f;
        int64_t i64 = 0;
        bool ok = true;
        switch (f) {
        case 0:
            c->path = strcmp(v, "graph") == 0          ? FV__PATH_GRAPH
                      : strcmp(v, "graph-pw") == 0     ? FV__PATH_GRAPH_PW
                      : strcmp(v, "graph-pw16") == 0   ? FV__PATH_GRAPH_PW16
                      : strcmp(v, "graph-split") == 0  ? FV__PATH_GRAPH_SPLIT
                      : strcmp(v, "legacy") == 0       ? FV__PATH_LEGACY
                      : strcmp(v, "direct") == 0       ? FV__PATH_DIRECT
                      : strcmp(v, "legacy-fused") == 0 ? FV__PATH_LEGACY_FUSED
                      : strcmp(v, "gemm") == 0         ? FV__PATH_GEMM
                                                       : (fv__engine_path)0;
            ok = c->path != 0;
            break;
        case 1:
            ok = parse_i64(v, 1, MAX_CDECL, &i64);
            c->cdecl_ = (int)i64;
            break;
        case 2:
            ok = parse_i64(v, 0, INT64_MAX, &c->engine);
            break;
        case 3:
            ok = parse_u64(v, &c->workspace);
            break;
        case 4:
            ok = parse_ms(v, &c->ms);
            break;
        case 5:
            ok = strlen(v) < sizeof c->how;
            if (ok) snprintf(c->how, sizeof c->how, "%s", v);
            ok = ok && word_ok(c->how, sizeof c->how);
            break;
        default: /* knobs: "-" or t:v,t:v,... */
            if (strcmp(v, "-") == 0) break;
            for (char *k = v, *next; k && ok; k = next) {
                next = strchr(k, ',');
                if (next) *next++ = '\0';
                char *colon = strchr(k, ':');
                if (c->nknobs == FV__PROFILE_MAX_KNOBS)
                    return fail(L, FV_ERR_FORMAT, "more than %d knobs", FV__PROFILE_MAX_KNOBS);
                ok = colon != NULL;
                if (!ok) break;
                *colon = '\0';
                ok = parse_i64(k, 0, INT64_MAX, &c->knob_type[c->nknobs]) &&
                     parse_i64(colon + 1, INT64_MIN, INT64_MAX, &c->knob_value[c->nknobs]);
                c->nknobs++;
            }
            break;
        }
        if (!ok) return fail(L, FV_ERR_FORMAT, "bad value '%.40s' for %s", v, names[f]);
    }
    for (int f = 0; f < NFIELDS; f++)
        if (!(seen & (1u << f))) return fail(L, FV_ERR_FORMAT, "field %s is missing", names[f]);
    return FV_OK;
}

static fv_status parse_conv(loader *L, char *rest, fv__profile *out) {
    fv__engine_choice c;
    memset(&c, 0, sizeof c);
    char *sp = strchr(rest, ' ');
    if (!sp) return fail(L, FV_ERR_FORMAT, "a conv line needs a key and fields");
    *sp = '\0';
    if (strlen(rest) >= sizeof c.key)
        return fail(L, FV_ERR_FORMAT, "key longer than %d bytes", FV__PROFILE_KEY - 1);
    memcpy(c.key, rest, strlen(rest) + 1);
    if (!word_ok(c.key, sizeof c.key)) return fail(L, FV_ERR_FORMAT, "bad key");
    if (fv__profile_find(out, c.key)) return fail(L, FV_ERR_FORMAT, "duplicate key %s", c.key);
    if (out->n >= FV__PROFILE_MAX_ENTRIES)
        return fail(L, FV_ERR_FORMAT, "more than %d entries", FV__PROFILE_MAX_ENTRIES);
    FV_TRY(parse_fields(L, sp + 1, &c));
    if (fv__profile_put(out, &c) != FV_OK) return fail(L, FV_ERR_OUT_OF_MEMORY, "out of memory");
    return FV_OK;
}

/* "<bytes> <hash> <base64>" (rest: after "plan "): the last entry's blob. */
static fv_status parse_plan(loader *L, char *rest, fv__profile *out) {
    char *sp1 = strchr(rest, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp2) return fail(L, FV_ERR_FORMAT, "expected 'plan <bytes> <hash> <base64>'");
    *sp1 = *sp2 = '\0';
    int64_t n = 0;
    if (!parse_i64(rest, 1, (int64_t)FV__PROFILE_MAX_PLAN, &n))
        return fail(L, FV_ERR_FORMAT, "bad plan size '%.40s' (1..%zu bytes)", rest,
                    FV__PROFILE_MAX_PLAN);
    const char *hex = sp1 + 1, *data = sp2 + 1;
    uint64_t want = 0;
    bool hex_ok = strlen(hex) == 16;
    for (int i = 0; hex_ok && i < 16; i++) {
        int d = hex[i] >= '0' && hex[i] <= '9'   ? hex[i] - '0'
                : hex[i] >= 'a' && hex[i] <= 'f' ? hex[i] - 'a' + 10
                                                 : -1;
        hex_ok = d >= 0;
        want = want << 4 | (uint64_t)(d & 15);
    }
    if (!hex_ok) return fail(L, FV_ERR_FORMAT, "bad plan hash '%.40s' (16 hex digits)", hex);
    size_t got = strlen(data), expect = B64_LEN((size_t)n);
    if (got != expect)
        return fail(L, FV_ERR_FORMAT,
                    "a plan of %lld bytes needs %zu base64 characters, the line has %zu "
                    "(truncated or corrupt)",
                    (long long)n, expect, got);
    if ((size_t)n > FV__PROFILE_MAX_PLANS - out->plan_bytes)
        return fail(L, FV_ERR_FORMAT, "plans of more than %zu bytes in all", FV__PROFILE_MAX_PLANS);
    unsigned char *blob = malloc((size_t)n);
    if (!blob)
        return fail(L, FV_ERR_OUT_OF_MEMORY, "out of host memory (%lld bytes)", (long long)n);
    long bad = b64_decode(data, (size_t)n, blob);
    if (bad >= 0) {
        free(blob);
        return fail(L, FV_ERR_FORMAT, "bad base64 at character %ld of the plan", bad + 1);
    }
    if (fnv1a64(blob, (size_t)n) != want) {
        free(blob);
        return fail(L, FV_ERR_FORMAT, "the plan's hash does not match its data: corrupt");
    }
    attach_plan(out, out->n - 1, blob, (size_t)n);
    return FV_OK;
}

static fv_status check_expect(loader *L, const fv__profile *got, const fv__profile *want) {
    if (!want) return FV_OK;
    if (strcmp(got->device, want->device) != 0) {
        L->line = 2;
        return fail(L, FV_ERR_FORMAT, "made for device '%s', but this one is '%s'", got->device,
                    want->device);
    }
    if (got->sm != want->sm) {
        L->line = 3;
        return fail(L, FV_ERR_FORMAT, "made for SM %d, but this device is SM %d", got->sm,
                    want->sm);
    }
    if (got->cudnn != want->cudnn) {
        L->line = 4;
        return fail(L, FV_ERR_FORMAT, "made with cuDNN %d, but this process loaded cuDNN %d",
                    got->cudnn, want->cudnn);
    }
    return FV_OK;
}

/* Checks one line's bytes (at most max - 1); NUL-terminates it. */
static fv_status check_line(loader *L, char *s, size_t len, size_t max, bool device_line) {
    if (len >= max) return fail(L, FV_ERR_FORMAT, "line longer than %zu bytes", max - 1);
    if (memchr(s, '\0', len)) return fail(L, FV_ERR_FORMAT, "embedded NUL byte");
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f || (ch > 0x7f && !device_line))
            return fail(L, FV_ERR_FORMAT, "control or non-ASCII byte 0x%02x at column %zu", ch,
                        i + 1);
    }
    s[len] = '\0';
    return FV_OK;
}

static fv_status parse(loader *L, char *data, size_t len, const fv__profile *expect,
                       fv__profile *out) {
    if (len == 0) {
        L->line = 1;
        return fail(L, FV_ERR_FORMAT, "empty file");
    }
    bool ended = false, after_conv = false;
    int version = 0;
    size_t pos = 0;
    while (pos < len) {
        L->line++;
        char *s = data + pos;
        char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        bool plan = n >= 5 && memcmp(s, "plan ", 5) == 0;
        size_t max = plan ? PLAN_LINE_MAX : FV__PROFILE_LINE;
        if (!nl && n < max && !memchr(s, '\0', n)) {
            if (L->line == 1 && strncmp(s, MAGIC, n < sizeof MAGIC - 1 ? n : sizeof MAGIC - 1))
                return fail(L, FV_ERR_FORMAT, "not a fovea profile");
            return fail(L, FV_ERR_FORMAT, "no newline at the end of the file: truncated");
        }
        pos += n + 1;
        if (n > 0 && s[n - 1] == '\r') n--; /* tolerate CRLF */
        FV_TRY(check_line(L, s, n, max, L->line == 2));
        if (ended) return fail(L, FV_ERR_FORMAT, "text after the end line");
        int64_t v;
        switch (L->line) {
        case 1:
            if (strncmp(s, MAGIC " ", sizeof MAGIC) != 0)
                return fail(L, FV_ERR_FORMAT, "not a fovea profile (expected '%s 1..%d')", MAGIC,
                            FV__PROFILE_VERSION);
            if (!parse_i64(s + sizeof MAGIC, 0, INT_MAX, &v))
                return fail(L, FV_ERR_FORMAT, "bad version '%.40s'", s + sizeof MAGIC);
            if (v < 1 || v > FV__PROFILE_VERSION)
                return fail(L, FV_ERR_FORMAT, "version %lld, but this build reads versions 1 to %d",
                            (long long)v, FV__PROFILE_VERSION);
            version = (int)v;
            continue;
        case 2:
            if (strncmp(s, "device ", 7) != 0 || !name_ok(s + 7, sizeof out->device))
                return fail(L, FV_ERR_FORMAT, "expected 'device <name>' (1..%zu bytes)",
                            sizeof out->device - 1);
            memcpy(out->device, s + 7, strlen(s + 7) + 1);
            continue;
        case 3:
            if (strncmp(s, "sm ", 3) != 0 || !parse_i64(s + 3, 0, MAX_SM, &v))
                return fail(L, FV_ERR_FORMAT, "expected 'sm <0..%d>'", MAX_SM);
            out->sm = (int)v;
            continue;
        case 4:
            if (strncmp(s, "cudnn ", 6) != 0 || !parse_i64(s + 6, 0, INT_MAX, &v))
                return fail(L, FV_ERR_FORMAT, "expected 'cudnn <version>'");
            out->cudnn = (int)v;
            FV_TRY(check_expect(L, out, expect));
            continue;
        }
        bool plan_may_follow = after_conv;
        after_conv = false;
        if (strncmp(s, "conv ", 5) == 0) {
            FV_TRY(parse_conv(L, s + 5, out));
            after_conv = true;
        } else if (plan) {
            if (version < 2)
                return fail(L, FV_ERR_FORMAT, "a plan line in a version %d file (plans need 2)",
                            version);
            if (!plan_may_follow)
                return fail(L, FV_ERR_FORMAT, "a plan line must follow its entry's conv line");
            FV_TRY(parse_plan(L, s + 5, out));
        } else if (strncmp(s, "end ", 4) == 0) {
            if (!parse_i64(s + 4, 0, INT_MAX, &v))
                return fail(L, FV_ERR_FORMAT, "bad count '%.40s' in the end line", s + 4);
            if (v != out->n)
                return fail(L, FV_ERR_FORMAT, "end line says %lld entries, but %d were read",
                            (long long)v, out->n);
            ended = true;
        } else {
            return fail(L, FV_ERR_FORMAT, "expected 'conv ...', 'plan ...' or 'end N', got '%.40s'",
                        s);
        }
    }
    if (!ended) {
        L->line++;
        return fail(L, FV_ERR_FORMAT, "end of file where 'end N' was expected: truncated");
    }
    return FV_OK;
}

fv_status fv__profile_load(const char *path, const fv__profile *expect, fv__profile *out, char *why,
                           size_t why_n) {
    if (why && why_n) why[0] = '\0';
    if (out) fv__profile_init(out);
    loader L = {.path = path ? path : "(null)", .why = why, .why_n = why_n};
    if (!path || !out) return fail(&L, FV_ERR_BAD_PARAM, "%s is NULL", path ? "out" : "path");
    char *data = NULL;
    size_t len = 0;
    FV_TRY(read_all(&L, &data, &len));
    fv_status s = parse(&L, data, len, expect, out);
    free(data);
    if (s != FV_OK) {
        /* nothing of a rejected file is kept */
        fv__profile_free(out);
    }
    return s;
}

/* ---- saving --------------------------------------------------------------- */
static int write_entry(FILE *f, const fv__engine_choice *c) {
    char ms[32];
    format_float(ms, sizeof ms, "%.9g", (double)c->ms);
    if (fprintf(f, "conv %s path=%s cdecl=%d engine=%lld ws=%llu ms=%s how=%s knobs=", c->key,
                fv__engine_path_name(c->path), c->cdecl_, (long long)c->engine,
                (unsigned long long)c->workspace, ms, c->how) < 0)
        return -1;
    if (c->nknobs == 0) return fputs("-\n", f) < 0 ? -1 : 0;
    for (int i = 0; i < c->nknobs; i++)
        if (fprintf(f, "%s%lld:%lld", i ? "," : "", (long long)c->knob_type[i],
                    (long long)c->knob_value[i]) < 0)
            return -1;
    return fputc('\n', f) == EOF ? -1 : 0;
}

/* "plan <bytes> <hash> <base64>\n", the base64 in blocks of 4096 characters. */
static int write_plan(FILE *f, const fv__plan_blob *b) {
    if (fprintf(f, "plan %zu %016llx ", b->n, (unsigned long long)fnv1a64(b->data, b->n)) < 0)
        return -1;
    char out[4096];
    for (size_t i = 0; i < b->n; i += 3072) {
        size_t m = b->n - i < 3072 ? b->n - i : 3072;
        b64_encode(b->data + i, m, out);
        if (fwrite(out, 1, B64_LEN(m), f) != B64_LEN(m)) return -1;
    }
    return fputc('\n', f) == EOF ? -1 : 0;
}

static fv_status check_for_save(const char *path, const fv__profile *p) {
    FV_REQUIRE(path && p, FV_ERR_BAD_PARAM, "profile save: %s is NULL", path ? "profile" : "path");
    FV_REQUIRE(name_ok(p->device, sizeof p->device), FV_ERR_BAD_PARAM,
               "profile save: device name must be 1..%zu bytes without control characters",
               sizeof p->device - 1);
    FV_REQUIRE(p->sm >= 0 && p->sm <= MAX_SM && p->cudnn >= 0, FV_ERR_BAD_PARAM,
               "profile save: sm %d or cudnn %d out of range", p->sm, p->cudnn);
    FV_REQUIRE(p->n >= 0 && p->n <= FV__PROFILE_MAX_ENTRIES && (p->n == 0 || p->e),
               FV_ERR_BAD_PARAM, "profile save: %d entries", p->n);
    for (int i = 0; i < p->n; i++) {
        const char *bad = choice_problem(&p->e[i]);
        FV_REQUIRE(!bad, FV_ERR_BAD_PARAM, "profile save: entry %d: %s", i, bad);
        for (int j = 0; j < i; j++)
            FV_REQUIRE(strcmp(p->e[i].key, p->e[j].key) != 0, FV_ERR_BAD_PARAM,
                       "profile save: duplicate key %s", p->e[i].key);
    }
    size_t total = 0;
    for (int i = 0; p->plan && i < p->n; i++) {
        const fv__plan_blob *b = &p->plan[i];
        FV_REQUIRE(!b->data || (b->n >= 1 && b->n <= FV__PROFILE_MAX_PLAN), FV_ERR_BAD_PARAM,
                   "profile save: entry %d: a plan of %zu bytes", i, b->n);
        total += b->data ? b->n : 0;
    }
    FV_REQUIRE(total <= FV__PROFILE_MAX_PLANS, FV_ERR_BAD_PARAM,
               "profile save: plans of %zu bytes in all, more than %zu", total,
               FV__PROFILE_MAX_PLANS);
    return FV_OK;
}

fv_status fv__profile_save(const char *path, const fv__profile *p) {
    FV_TRY(check_for_save(path, p));
    char tmp[PATH_MAX];
    int len = snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
    FV_REQUIRE(len > 0 && (size_t)len < sizeof tmp, FV_ERR_BAD_PARAM,
               "profile save: path too long (%zu bytes)", strlen(path));
    int fd = mkstemp(tmp);
    FV_REQUIRE(fd >= 0, FV_ERR_IO, "profile %s: cannot create a temporary file beside it: %s", path,
               strerror(errno));
    (void)fchmod(fd, 0644); /* mkstemp makes it 0600; a profile is not secret */
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return fv__error(FV_ERR_IO, "profile %s: fdopen: %s", path, strerror(e));
    }
    /* version 1 while no entry has a plan: older builds read it */
    int version = 1;
    for (int i = 0; p->plan && i < p->n; i++)
        if (p->plan[i].data) version = 2;
    int bad = fprintf(f, "%s %d\ndevice %s\nsm %d\ncudnn %d\n", MAGIC, version, p->device, p->sm,
                      p->cudnn) < 0;
    for (int i = 0; i < p->n && !bad; i++) {
        bad = write_entry(f, &p->e[i]) < 0;
        if (!bad && p->plan && p->plan[i].data) bad = write_plan(f, &p->plan[i]) < 0;
    }
    bad = bad || fprintf(f, "end %d\n", p->n) < 0;
    bad = bad || fflush(f) != 0 || fsync(fileno(f)) != 0;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        unlink(tmp);
        return fv__error(FV_ERR_IO,
                         "profile %s: writing failed: %s (the old file, if any, is kept)", path,
                         strerror(e));
    }
    /* Make the rename itself durable; best effort. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return FV_OK;
}

/* ---- the key -------------------------------------------------------------- */
void fv__conv2d_key(const fv_conv2d_desc *d, int has_bias, char *out, size_t n) {
    if (!out || n == 0) return;
    if (!d) {
        out[0] = '\0';
        return;
    }
#define DEF1(x) ((x) == 0 ? 1 : (x))
    /* alpha only means something to these two; others print 0 */
    float alpha = 0;
    if (d->activation == FV_ACT_CLIPPED_RELU || d->activation == FV_ACT_LEAKY_RELU)
        alpha = fv__activation_alpha(d->activation, d->activation_alpha);
    char al[32];
    format_float(al, sizeof al, "%g", alpha == 0 ? 0.0 : (double)alpha);
    snprintf(out, n,
             "conv2d:n%d:h%d:w%d:c%d:k%d:r%d:s%d:u%d:v%d:p%d:q%d:d%d:e%d:g%d:a%d:al%s:b%d:%s",
             DEF1(d->n), d->h, d->w, d->c, d->k, d->r, d->s, DEF1(d->stride_h), DEF1(d->stride_w),
             d->pad_h, d->pad_w, DEF1(d->dilation_h), DEF1(d->dilation_w), DEF1(d->groups),
             (int)d->activation, al, has_bias ? 1 : 0, d->dtype == FV_DTYPE_F32 ? "f32" : "f16");
    /* a residual op runs other graphs: its own entry (keys without it unchanged) */
    size_t len = strlen(out);
    if ((d->flags & FV_CONV2D_RESIDUAL) && len + 3 < n) memcpy(out + len, ":z1", 4);
#undef DEF1
}
