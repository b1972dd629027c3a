/* Deterministic fuzz-style test of the profile loader: a valid profile (plan
 * lines included) is mutated thousands of ways (seeded): truncated at every
 * offset, bits flipped, bytes inserted, deleted and overwritten, lines
 * duplicated and swapped, plus random garbage. Every load must return FV_OK, FV_ERR_FORMAT
 * or FV_ERR_IO without crashing (run it under FV_SANITIZE=address,undefined
 * to catch what does not crash outright); a failed load keeps nothing and
 * says why in printable text; a successful one round-trips through save. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fv_test.h"
#include "core/profile.h"

#define SEED   20240611u
#define ROUNDS 5000 /* per mutation kind */

static char dir[64];
static char in_path[128], out_path[128];
static unsigned char *base;
static size_t base_len;
static fv__profile expect;
static int n_ok, n_format, n_io;

static uint64_t rnd(uint64_t n) {
    return n ? fv_test_rand_u64() % n : 0;
}

static void write_file(const char *path, const unsigned char *d, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n) assert_int_equal(fwrite(d, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void assert_same(const fv__profile *a, const fv__profile *b) {
    assert_string_equal(a->device, b->device);
    assert_int_equal(a->sm, b->sm);
    assert_int_equal(a->cudnn, b->cudnn);
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        const fv__engine_choice *x = &a->e[i], *y = &b->e[i];
        assert_string_equal(x->key, y->key);
        assert_int_equal(x->path, y->path);
        assert_int_equal(x->cdecl_, y->cdecl_);
        assert_true(x->engine == y->engine && x->workspace == y->workspace);
        assert_true(x->ms == y->ms);
        assert_string_equal(x->how, y->how);
        assert_int_equal(x->nknobs, y->nknobs);
        for (int k = 0; k < x->nknobs; k++)
            assert_true(x->knob_type[k] == y->knob_type[k] && x->knob_value[k] == y->knob_value[k]);
        size_t xn = 0, yn = 0;
        const unsigned char *xb = fv__profile_plan(a, x->key, &xn),
                            *yb = fv__profile_plan(b, y->key, &yn);
        assert_int_equal(xn, yn);
        if (xn) assert_memory_equal(xb, yb, xn);
    }
}

/* Loads d[0..n) and checks the outcome; returns the status. */
static fv_status check(const unsigned char *d, size_t n) {
    write_file(in_path, d, n);
    fv__profile p;
    char why[512];
    memset(why, 'x', sizeof why);
    const fv__profile *want = rnd(4) ? &expect : NULL;
    fv_status s = fv__profile_load(in_path, want, &p, why, sizeof why);
    if (s == FV_OK) {
        n_ok++;
        assert_string_equal(why, "");
        fv__profile q;
        FV_ASSERT_OK(fv__profile_save(out_path, &p));
        FV_ASSERT_OK(fv__profile_load(out_path, &p, &q, why, sizeof why));
        assert_same(&p, &q);
        fv__profile_free(&q);
    } else {
        if (s == FV_ERR_FORMAT)
            n_format++;
        else if (s == FV_ERR_IO)
            n_io++;
        else
            fail_msg("load returned %s: %s", fv_status_name(s), why);
        assert_int_equal(p.n, 0);
        assert_null(p.e);
        assert_null(p.plan);
        assert_non_null(memchr(why, '\0', sizeof why));
        assert_non_null(strstr(why, in_path));
        for (const char *c = why; *c; c++)
            if ((unsigned char)*c < 0x20) fail_msg("control byte in the reason: %s", why);
    }
    fv__profile_free(&p);
    return s;
}

static int setup(void **state) {
    const char *root = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/fv-fuzz-XXXXXX", root);
    if (!mkdtemp(dir)) return -1;
    snprintf(in_path, sizeof in_path, "%s/in.profile", dir);
    snprintf(out_path, sizeof out_path, "%s/out.profile", dir);
    /* the seed file: a few entries with and without knobs */
    fv__profile p;
    fv__profile_init(&p);
    snprintf(p.device, sizeof p.device, "NVIDIA H100 80GB HBM3");
    p.sm = 90;
    p.cudnn = 91400;
    fv_test_seed(SEED);
    for (int i = 0; i < 6; i++) {
        fv__engine_choice c;
        memset(&c, 0, sizeof c);
        snprintf(c.key, sizeof c.key,
                 "conv2d:n1:h%d:w%d:c%d:k32:r3:s3:u1:v1:p1:q1:d1:e1:g1:a%d:al0:"
                 "b%d:f16",
                 64 << i, 96 << i, 3 + i, i % 6, i % 2);
        c.path = i == 4 ? FV__PATH_LEGACY : FV__PATH_GRAPH;
        c.cdecl_ = 8;
        c.engine = i * 7;
        c.nknobs = i % 4;
        for (int k = 0; k < c.nknobs; k++) {
            c.knob_type[k] = k + 1;
            c.knob_value[k] = (int64_t)k - 1;
        }
        c.workspace = (uint64_t)i << 20;
        c.ms = 0.125f * (float)i;
        snprintf(c.how, sizeof c.how, "autotune");
        if (fv__profile_put(&p, &c) != FV_OK) return -1;
        if (i % 2 == 1) { /* plan blobs of 27, 41 and 55 bytes: every padding */
            unsigned char blob[64];
            for (size_t k = 0; k < sizeof blob; k++)
                blob[k] = (unsigned char)(k * 37 + (size_t)i);
            if (fv__profile_set_plan(&p, c.key, blob, 20 + (size_t)i * 7) != FV_OK) return -1;
        }
    }
    expect = p;
    expect.e = NULL;
    expect.plan = NULL;
    expect.n = expect.cap = 0;
    expect.plan_bytes = 0;
    if (fv__profile_save(in_path, &p) != FV_OK) return -1;
    fv__profile_free(&p);
    FILE *f = fopen(in_path, "rb");
    if (!f) return -1;
    base = malloc(1 << 16);
    base_len = fread(base, 1, 1 << 16, f);
    fclose(f);
    return base_len > 0 ? 0 : -1;
}

static int teardown(void **state) {
    free(base);
    remove(in_path);
    remove(out_path);
    /* a failed save's temporary would also be here; there must be none */
    DIR *d = opendir(dir);
    int extra = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        extra += e->d_name[0] != '.';
    if (d) closedir(d);
    rmdir(dir);
    printf("loads: %d ok, %d format errors, %d I/O errors\n", n_ok, n_format, n_io);
    return extra ? -1 : 0;
}

static void seed_file_loads(void **state) {
    assert_int_equal(check(base, base_len), FV_OK);
    assert_memory_equal(base, "fovea-profile 2\n", 16);
    char *text = calloc(base_len + 1, 1);
    assert_non_null(text);
    memcpy(text, base, base_len);
    assert_non_null(strstr(text, "\nplan 27 "));
    free(text);
}

static void truncation_at_every_offset(void **state) {
    /* the file ends with "end 6\n": any shorter prefix lacks it */
    for (size_t n = 0; n < base_len; n++)
        if (check(base, n) == FV_OK)
            fail_msg("truncated to %zu of %zu bytes, but loaded", n, base_len);
}

static unsigned char buf[1 << 16];

static void bit_flips(void **state) {
    fv_test_seed(SEED + 1);
    for (int r = 0; r < ROUNDS; r++) {
        memcpy(buf, base, base_len);
        int flips = 1 + (int)rnd(4);
        for (int i = 0; i < flips; i++)
            buf[rnd(base_len)] ^= (unsigned char)(1u << rnd(8));
        check(buf, base_len);
    }
}

static void byte_edits(void **state) {
    static const char interesting[] = "\0\n\r \t=:,-+.0179eEx\x7f\xff";
    fv_test_seed(SEED + 2);
    for (int r = 0; r < ROUNDS; r++) {
        size_t n = base_len;
        memcpy(buf, base, n);
        int edits = 1 + (int)rnd(3);
        for (int i = 0; i < edits; i++) {
            size_t at = rnd(n + 1);
            unsigned char v =
                rnd(2) ? interesting[rnd(sizeof interesting - 1)] : (unsigned char)rnd(256);
            switch (rnd(3)) {
            case 0: /* insert */
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = v;
                n++;
                break;
            case 1: /* delete */
                if (at < n) {
                    memmove(buf + at, buf + at + 1, n - at - 1);
                    n--;
                }
                break;
            default: /* overwrite */
                if (at < n) buf[at] = v;
            }
        }
        check(buf, n);
    }
}

/* Splits base into lines; lines[i] points into base. */
static int split_lines(const unsigned char **line, size_t *len, int max) {
    int nl = 0;
    size_t start = 0;
    for (size_t i = 0; i < base_len && nl < max; i++)
        if (base[i] == '\n') {
            line[nl] = base + start;
            len[nl++] = i + 1 - start;
            start = i + 1;
        }
    return nl;
}

static void line_shuffles(void **state) {
    const unsigned char *line[64];
    size_t len[64];
    int nl = split_lines(line, len, 64);
    assert_true(nl >= 6);
    fv_test_seed(SEED + 3);
    for (int r = 0; r < ROUNDS; r++) {
        int order[128], n = 0;
        for (int i = 0; i < nl; i++)
            order[n++] = i;
        int ops = 1 + (int)rnd(3);
        for (int o = 0; o < ops; o++) {
            int a = (int)rnd((uint64_t)n), b = (int)rnd((uint64_t)n);
            switch (rnd(3)) {
            case 0: { /* swap */
                int t = order[a];
                order[a] = order[b];
                order[b] = t;
                break;
            }
            case 1: /* duplicate a at b */
                if (n < 128) {
                    memmove(order + b + 1, order + b, (size_t)(n - b) * sizeof *order);
                    order[b] = order[a < b ? a : a + 1];
                    n++;
                }
                break;
            default: /* drop */
                if (n > 1) {
                    memmove(order + a, order + a + 1, (size_t)(n - a - 1) * sizeof *order);
                    n--;
                }
            }
        }
        size_t m = 0;
        for (int i = 0; i < n; i++) {
            memcpy(buf + m, line[order[i]], len[order[i]]);
            m += len[order[i]];
        }
        check(buf, m);
    }
}

static void garbage(void **state) {
    static const char *words[] = {"fovea-profile 1\n",
                                  "fovea-profile 2\n",
                                  "plan 5 a430d84680aabd0b aGVsbG8=\n",
                                  "plan ",
                                  "device GPU\n",
                                  "sm 90\n",
                                  "cudnn 91400\n",
                                  "conv ",
                                  "path=graph ",
                                  "cdecl=8 ",
                                  "engine=1 ",
                                  "ws=0 ",
                                  "ms=1.5 ",
                                  "how=x ",
                                  "knobs=-",
                                  "knobs=1:2,3:4",
                                  "\n",
                                  "end 0\n",
                                  "end 1\n",
                                  " ",
                                  "=",
                                  "99999999999999999999999"};
    fv_test_seed(SEED + 4);
    for (int r = 0; r < ROUNDS; r++) {
        size_t n = 0;
        switch (rnd(3)) {
        case 0: /* random bytes */
            n = (size_t)rnd(3000);
            fv_test_fill_bytes(buf, n);
            break;
        case 1: /* random printable lines, some very long */
            n = (size_t)rnd(4000);
            for (size_t i = 0; i < n; i++)
                buf[i] = rnd(40) ? (unsigned char)(0x20 + rnd(95)) : '\n';
            break;
        default: /* the format's own words, in random order */
            for (int w = (int)rnd(40); w > 0 && n < sizeof buf - 64; w--) {
                const char *s = words[rnd(sizeof words / sizeof *words)];
                memcpy(buf + n, s, strlen(s));
                n += strlen(s);
            }
        }
        check(buf, n);
    }
    /* a file far larger than any profile, and a folder */
    unsigned char *huge = calloc(5u << 20, 1);
    assert_non_null(huge);
    memcpy(huge, base, base_len);
    memset(huge + base_len, '\n', (5u << 20) - base_len);
    assert_int_equal(check(huge, 5u << 20), FV_ERR_FORMAT);
    free(huge);
    fv__profile p;
    char why[256];
    fv_status s = fv__profile_load(dir, NULL, &p, why, sizeof why);
    assert_true(s == FV_ERR_IO || s == FV_ERR_FORMAT);
    fv__profile_free(&p);
}

int main(void) {
    clock_t t0 = clock();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_file_loads), cmocka_unit_test(truncation_at_every_offset),
        cmocka_unit_test(bit_flips),       cmocka_unit_test(byte_edits),
        cmocka_unit_test(line_shuffles),   cmocka_unit_test(garbage),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    printf("%.2f s of CPU\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    return rc;
}
