/* The device profile (core/profile.c): round trips, find/replace, the conv
 * key, plan blobs (round trips, ownership, limits), and every way a file can
 * be malformed (each a FV_ERR_FORMAT that names the line), plan lines
 * included, mismatches, and atomic saves that fail cleanly. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fv_test.h"
#include "core/profile.h"

static char dir[64];

static int setup(void **state) {
    snprintf(dir, sizeof dir, "/tmp/fv-test-profile-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                chmod(p, 0755);
                remove(p);
            }
        closedir(d);
    }
    return rmdir(dir);
}

static const char *tmp_path(const char *name) {
    static char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void write_file(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void set_header(fv__profile *p) {
    snprintf(p->device, sizeof p->device, "NVIDIA Test GPU 80GB");
    p->sm = 90;
    p->cudnn = 91400;
}

static fv__engine_choice random_choice(int i) {
    fv__engine_choice c;
    memset(&c, 0, sizeof c);
    snprintf(c.key, sizeof c.key,
             "conv2d:n1:h%d:w%d:c3:k32:r5:s5:u1:v1:p2:q2:d1:e1:g1:a1:al0:b1:f16", 100 + i, 200 + i);
    const fv__engine_path paths[] = {FV__PATH_LEGACY, FV__PATH_GRAPH,        FV__PATH_GRAPH_SPLIT,
                                     FV__PATH_DIRECT, FV__PATH_LEGACY_FUSED, FV__PATH_GEMM};
    c.path = paths[i % 6];
    c.cdecl_ = 1 + (int)(fv_test_rand_u64() % 65536);
    c.engine = (int64_t)(fv_test_rand_u64() >> 1);
    c.nknobs = i % (FV__PROFILE_MAX_KNOBS + 1);
    for (int k = 0; k < c.nknobs; k++) {
        c.knob_type[k] = (int64_t)(fv_test_rand_u64() % 1000);
        c.knob_value[k] = (int64_t)fv_test_rand_u64(); /* any sign */
    }
    c.workspace = fv_test_rand_u64();
    c.ms = i % 4 ? fv_test_rand_uniform(0.0f, 100.0f) : (i % 8 ? 0.0f : 1.0e-30f);
    snprintf(c.how, sizeof c.how, "%s", i % 2 ? "autotune" : "heuristics");
    return c;
}

static void assert_choice_equal(const fv__engine_choice *a, const fv__engine_choice *b) {
    assert_string_equal(a->key, b->key);
    assert_int_equal(a->path, b->path);
    assert_int_equal(a->cdecl_, b->cdecl_);
    assert_true(a->engine == b->engine);
    assert_int_equal(a->nknobs, b->nknobs);
    for (int k = 0; k < a->nknobs; k++) {
        assert_true(a->knob_type[k] == b->knob_type[k]);
        assert_true(a->knob_value[k] == b->knob_value[k]);
    }
    assert_true(a->workspace == b->workspace);
    assert_true(a->ms == b->ms); /* bit-exact: saved with 9 significant digits */
    assert_string_equal(a->how, b->how);
}

static void round_trip(void **state) {
    fv_test_seed(11);
    fv__profile p, q;
    fv__profile_init(&p);
    set_header(&p);
    for (int i = 0; i < 100; i++) {
        fv__engine_choice c = random_choice(i);
        FV_ASSERT_OK(fv__profile_put(&p, &c));
    }
    const char *path = tmp_path("rt.profile");
    FV_ASSERT_OK(fv__profile_save(path, &p));
    char why[256] = "x";
    FV_ASSERT_OK(fv__profile_load(path, &p, &q, why, sizeof why));
    assert_string_equal(why, "");
    assert_string_equal(q.device, p.device);
    assert_int_equal(q.sm, p.sm);
    assert_int_equal(q.cudnn, p.cudnn);
    assert_int_equal(q.n, p.n);
    for (int i = 0; i < p.n; i++)
        assert_choice_equal(&q.e[i], &p.e[i]);
    fv__profile_free(&q);
    /* no expectation: any header is accepted */
    FV_ASSERT_OK(fv__profile_load(path, NULL, &q, NULL, 0));
    assert_int_equal(q.n, 100);
    fv__profile_free(&q);
    /* an empty profile round-trips too */
    fv__profile e;
    fv__profile_init(&e);
    set_header(&e);
    FV_ASSERT_OK(fv__profile_save(path, &e));
    FV_ASSERT_OK(fv__profile_load(path, &e, &q, why, sizeof why));
    assert_int_equal(q.n, 0);
    fv__profile_free(&q);
    fv__profile_free(&p);
    fv__profile_free(&p); /* freeing twice is harmless */
    assert_string_equal(fv__engine_path_name(FV__PATH_LEGACY_FUSED), "legacy-fused");
    assert_string_equal(fv__engine_path_name(FV__PATH_GEMM), "gemm");
    assert_string_equal(fv__engine_path_name(FV__PATH_GRAPH_PW), "graph-pw");
    assert_string_equal(fv__engine_path_name(FV__PATH_GRAPH_PW16), "graph-pw16");
    assert_string_equal(fv__engine_path_name((fv__engine_path)9), "none");
}

static void find_and_replace(void **state) {
    fv_test_seed(12);
    fv__profile p;
    fv__profile_init(&p);
    assert_null(fv__profile_find(&p, "nothing"));
    fv__engine_choice a = random_choice(1), b = random_choice(2);
    FV_ASSERT_OK(fv__profile_put(&p, &a));
    FV_ASSERT_OK(fv__profile_put(&p, &b));
    assert_int_equal(p.n, 2);
    const fv__engine_choice *f = fv__profile_find(&p, a.key);
    assert_non_null(f);
    assert_choice_equal(f, &a);
    a.engine = 4242;
    a.nknobs = 0;
    FV_ASSERT_OK(fv__profile_put(&p, &a));
    assert_int_equal(p.n, 2);
    assert_true(fv__profile_find(&p, a.key)->engine == 4242);
    assert_choice_equal(fv__profile_find(&p, b.key), &b);
    /* invalid choices are refused, so a saved profile always loads */
    fv__engine_choice bad = a;
    snprintf(bad.key, sizeof bad.key, "has space");
    FV_ASSERT_STATUS(fv__profile_put(&p, &bad), FV_ERR_BAD_PARAM, "key");
    bad = a;
    bad.nknobs = FV__PROFILE_MAX_KNOBS + 1;
    FV_ASSERT_STATUS(fv__profile_put(&p, &bad), FV_ERR_BAD_PARAM, "knobs");
    /* full at FV__PROFILE_MAX_ENTRIES */
    for (int i = p.n; i < FV__PROFILE_MAX_ENTRIES; i++) {
        fv__engine_choice c = a;
        snprintf(c.key, sizeof c.key, "k%d", i);
        FV_ASSERT_OK(fv__profile_put(&p, &c));
    }
    fv__engine_choice c = a;
    snprintf(c.key, sizeof c.key, "one-too-many");
    FV_ASSERT_STATUS(fv__profile_put(&p, &c), FV_ERR_OUT_OF_MEMORY, "full");
    FV_ASSERT_OK(fv__profile_put(&p, &a)); /* replacing still works */
    fv__profile_free(&p);
}

/* The first line of the file at path, without its newline. */
static void first_line(const char *path, char *out, size_t n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_non_null(fgets(out, (int)n, f));
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

static void assert_plan_is(const fv__profile *p, const char *key, const unsigned char *want,
                           size_t n) {
    size_t got = 12345;
    const unsigned char *b = fv__profile_plan(p, key, &got);
    if (!want) {
        assert_null(b);
        assert_int_equal(got, 0);
        return;
    }
    assert_non_null(b);
    assert_int_equal(got, n);
    assert_memory_equal(b, want, n);
}

/* Plan blobs: any bytes, every length modulo 3, through save and load and a
 * second save (entries loaded keep their blob); the file says version 2 with
 * blobs and 1 without; replacing an entry drops its blob; limits. */
static void plan_blobs(void **state) {
    fv_test_seed(14);
    enum { NE = 12 };
    static const size_t sizes[NE] = {1, 2, 3, 4, 5, 100, 3071, 3072, 3073, 6145, 200000, 0};
    static unsigned char blob[NE][200000];
    fv__profile p, q, r;
    fv__profile_init(&p);
    set_header(&p);
    fv__engine_choice c[NE];
    for (int i = 0; i < NE; i++) {
        c[i] = random_choice(i);
        FV_ASSERT_OK(fv__profile_put(&p, &c[i]));
        fv_test_fill_bytes(blob[i], sizes[i]);
        if (i == 4) memcpy(blob[i], "a\n\0\r ", 5); /* newline, NUL, CR: any bytes go */
        if (sizes[i]) FV_ASSERT_OK(fv__profile_set_plan(&p, c[i].key, blob[i], sizes[i]));
    }
    for (int i = 0; i < NE; i++)
        assert_plan_is(&p, c[i].key, sizes[i] ? blob[i] : NULL, sizes[i]);
    assert_plan_is(&p, "no-such-key", NULL, 0);
    const char *path = tmp_path("plans.profile"), *path2 = tmp_path("plans2.profile");
    FV_ASSERT_OK(fv__profile_save(path, &p));
    char line[64];
    first_line(path, line, sizeof line);
    assert_string_equal(line, "fovea-profile 2");
    char why[256] = "x";
    FV_ASSERT_OK(fv__profile_load(path, &p, &q, why, sizeof why));
    assert_string_equal(why, "");
    assert_int_equal(q.n, NE);
    for (int i = 0; i < NE; i++) {
        assert_choice_equal(&q.e[i], &p.e[i]);
        assert_plan_is(&q, c[i].key, sizes[i] ? blob[i] : NULL, sizes[i]);
    }
    assert_true(q.plan_bytes == p.plan_bytes);
    /* a loaded profile saves its blobs again, byte for byte the same file */
    FV_ASSERT_OK(fv__profile_save(path2, &q));
    FV_ASSERT_OK(fv__profile_load(path2, &p, &r, why, sizeof why));
    for (int i = 0; i < NE; i++)
        assert_plan_is(&r, c[i].key, sizes[i] ? blob[i] : NULL, sizes[i]);
    fv__profile_free(&r);
    FILE *f1 = fopen(path, "rb"), *f2 = fopen(path2, "rb");
    assert_true(f1 && f2);
    for (int a = 0, b = 0; a != EOF || b != EOF;) {
        a = fgetc(f1), b = fgetc(f2);
        assert_int_equal(a, b);
    }
    fclose(f1), fclose(f2);

    /* replacing an entry drops its blob (it belonged to the old choice);
     * setting NULL removes one; set again replaces */
    size_t before = q.plan_bytes;
    fv__engine_choice changed = c[5];
    changed.engine ^= 1;
    FV_ASSERT_OK(fv__profile_put(&q, &changed));
    assert_plan_is(&q, c[5].key, NULL, 0);
    assert_true(q.plan_bytes == before - sizes[5]);
    FV_ASSERT_OK(fv__profile_set_plan(&q, c[6].key, NULL, 0));
    assert_plan_is(&q, c[6].key, NULL, 0);
    FV_ASSERT_OK(fv__profile_set_plan(&q, c[7].key, blob[0], 1));
    assert_plan_is(&q, c[7].key, blob[0], 1);
    /* refusals leave the blob as it was */
    FV_ASSERT_STATUS(fv__profile_set_plan(&q, "no-such-key", blob[0], 1), FV_ERR_BAD_PARAM,
                     "no entry");
    FV_ASSERT_STATUS(fv__profile_set_plan(&q, c[7].key, blob[0], FV__PROFILE_MAX_PLAN + 1),
                     FV_ERR_BAD_PARAM, "plan");
    FV_ASSERT_STATUS(fv__profile_set_plan(NULL, c[7].key, blob[0], 1), FV_ERR_BAD_PARAM, NULL);
    assert_plan_is(&q, c[7].key, blob[0], 1);
    /* without blobs the file is version 1 again, which older builds read */
    for (int i = 0; i < NE; i++)
        FV_ASSERT_OK(fv__profile_set_plan(&q, c[i].key, NULL, 0));
    assert_true(q.plan_bytes == 0);
    FV_ASSERT_OK(fv__profile_save(path2, &q));
    first_line(path2, line, sizeof line);
    assert_string_equal(line, "fovea-profile 1");
    fv__profile_free(&q);
    fv__profile_free(&p);
}

static void conv_keys(void **state) {
    float w = 1;
    fv_conv2d_desc base = {.h = 1080,
                           .w = 1920,
                           .c = 3,
                           .k = 32,
                           .r = 5,
                           .s = 5,
                           .pad_h = 2,
                           .pad_w = 2,
                           .activation = FV_ACT_RELU,
                           .weights = &w};
    char k0[FV__PROFILE_KEY], k1[FV__PROFILE_KEY];
    fv__conv2d_key(&base, 1, k0, sizeof k0);
    assert_string_equal(k0,
                        "conv2d:n1:h1080:w1920:c3:k32:r5:s5:u1:v1:p2:q2:d1:e1:g1:a1:al0:b1:f16");
    /* defaults spelled out give the same key */
    fv_conv2d_desc d = base;
    d.n = 1;
    d.stride_h = d.stride_w = d.dilation_h = d.dilation_w = d.groups = 1;
    d.activation_alpha = 3; /* ReLU ignores alpha */
    fv__conv2d_key(&d, 1, k1, sizeof k1);
    assert_string_equal(k0, k1);
    d = base;
    d.activation = FV_ACT_LEAKY_RELU;
    fv__conv2d_key(&d, 1, k0, sizeof k0);
    d.activation_alpha = 0.01f;
    fv__conv2d_key(&d, 1, k1, sizeof k1);
    assert_string_equal(k0, k1);
    assert_non_null(strstr(k0, ":a5:al0.01:"));
    /* every field counts */
    fv_conv2d_desc v[16];
    int nv = 0;
    for (int i = 0; i < 16; i++)
        v[i] = base;
    v[nv++].n = 2;
    v[nv++].h = 1081;
    v[nv++].w = 1921;
    v[nv++].c = 4;
    v[nv++].k = 16;
    v[nv++].r = 3;
    v[nv++].s = 3;
    v[nv++].stride_h = 2;
    v[nv++].stride_w = 2;
    v[nv++].pad_h = 1;
    v[nv++].pad_w = 1;
    v[nv++].dilation_h = 2;
    v[nv++].dilation_w = 2;
    v[nv].activation = FV_ACT_CLIPPED_RELU;
    v[nv++].activation_alpha = 4;
    v[nv++].dtype = FV_DTYPE_F32;
    char keys[17][FV__PROFILE_KEY];
    for (int i = 0; i < nv; i++)
        fv__conv2d_key(&v[i], 1, keys[i], sizeof keys[i]);
    fv__conv2d_key(&base, 0, keys[nv], sizeof keys[nv]);
    fv__conv2d_key(&base, 1, keys[nv + 1], sizeof keys[nv + 1]);
    for (int i = 0; i < nv + 2; i++)
        for (int j = i + 1; j < nv + 2; j++)
            if (strcmp(keys[i], keys[j]) == 0) fail_msg("keys %d and %d equal: %s", i, j, keys[i]);
    fv_conv2d_desc g = base;
    g.c = 32;
    g.groups = 4;
    fv__conv2d_key(&g, 1, k0, sizeof k0);
    assert_non_null(strstr(k0, ":g4:"));
}

/* ---- malformed files ------------------------------------------------------ */
#define HDR "fovea-profile 1\ndevice NVIDIA Test GPU 80GB\nsm 90\ncudnn 91400\n"
#define E1  "conv a path=graph cdecl=8 engine=3 ws=1024 ms=0.5 how=autotune knobs=1:2,3:-4\n"
#define E2  "conv b path=legacy cdecl=4 engine=1 ws=0 ms=0 how=heuristics knobs=-\n"
#define E3  "conv c path=legacy-fused cdecl=8 engine=1 ws=64 ms=0.25 how=autotune knobs=-\n"
#define E4  "conv d path=gemm cdecl=128 engine=3216 ws=2097152 ms=0.006 how=autotune knobs=-\n"
#define E5  "conv e path=graph-pw cdecl=128 engine=4 ws=0 ms=0.045 how=autotune knobs=1:0,2:3\n"
#define E6  "conv f path=graph-pw16 cdecl=64 engine=4 ws=0 ms=0.01 how=autotune knobs=24:46\n"
/* version 2 (plan lines); P1: the 5 bytes "hello" */
#define HDR2 "fovea-profile 2\ndevice NVIDIA Test GPU 80GB\nsm 90\ncudnn 91400\n"
#define P1   "plan 5 a430d84680aabd0b aGVsbG8=\n"

/* Loads text; expects status want and a reason containing both needles. */
static void expect_load(const char *text, size_t len, fv_status want, const char *n1,
                        const char *n2) {
    const char *path = tmp_path("bad.profile");
    write_file(path, text, len);
    fv__profile p, expect;
    fv__profile_init(&expect);
    set_header(&expect);
    char why[512] = "";
    if (want == FV_OK) {
        FV_ASSERT_OK(fv__profile_load(path, &expect, &p, why, sizeof why));
        assert_string_equal(why, "");
        fv__profile_free(&p);
        return;
    }
    FV_ASSERT_STATUS(fv__profile_load(path, &expect, &p, why, sizeof why), want, n1);
    assert_int_equal(p.n, 0); /* nothing kept */
    assert_non_null(strstr(why, path));
    if (n1 && !strstr(why, n1)) fail_msg("reason \"%s\" lacks \"%s\"", why, n1);
    if (n2 && !strstr(why, n2)) fail_msg("reason \"%s\" lacks \"%s\"", why, n2);
    assert_string_equal(why, fv_last_error());
    fv__profile_free(&p);
}
#define BAD(text, n1, n2) expect_load(text, sizeof(text) - 1, FV_ERR_FORMAT, n1, n2)

static void malformed_files(void **state) {
    expect_load(HDR E1 E2 "end 2\n", sizeof(HDR E1 E2 "end 2\n") - 1, FV_OK, NULL, NULL);
    expect_load(HDR E3 "end 1\n", sizeof(HDR E3 "end 1\n") - 1, FV_OK, NULL, NULL);
    expect_load(HDR E4 "end 1\n", sizeof(HDR E4 "end 1\n") - 1, FV_OK, NULL, NULL);
    expect_load(HDR E5 E4 "end 2\n", sizeof(HDR E5 E4 "end 2\n") - 1, FV_OK, NULL, NULL);
    expect_load(HDR E6 "end 1\n", sizeof(HDR E6 "end 1\n") - 1, FV_OK, NULL, NULL);
    /* CRLF line ends are tolerated */
    const char crlf[] = "fovea-profile 1\r\ndevice NVIDIA Test GPU 80GB\r\nsm 90\r\ncudnn "
                        "91400\r\nend 0\r\n";
    expect_load(crlf, sizeof crlf - 1, FV_OK, NULL, NULL);

    BAD("", "line 1", "empty");
    BAD("fovea-profil 1\ndevice x\n", "line 1", "not a fovea profile");
    BAD("fovea-profile 3\n", "line 1", "version 3");
    BAD("fovea-profile 0\n", "line 1", "version 0");
    BAD("fovea-profile 1x\n", "line 1", "bad version");
    BAD("garbage", "line 1", "not a fovea profile");
    BAD(HDR E1 E2, "line 7", "truncated");
    BAD(HDR E1 "conv b path=gra", "line 6", "truncated");
    BAD(HDR E1 E2 "end 2", "line 7", "truncated");
    BAD(HDR E1 E2 "end 3\n", "line 7", "end line says 3");
    BAD(HDR E1 E2 "end 2\n" E1, "line 8", "after the end");
    BAD(HDR E1 E2 "end 2\n\n", "line 8", "after the end");
    BAD(HDR E1 E1 "end 2\n", "line 6", "duplicate key a");
    BAD(HDR "sm 90\nend 0\n", "line 5", "expected 'conv");
    BAD("fovea-profile 1\nsm 90\n", "line 2", "device");
    BAD("fovea-profile 1\ndevice \n", "line 2", "device");
    BAD("fovea-profile 1\ndevice NVIDIA Test GPU 80GB\nsm x\n", "line 3", "sm");
    BAD("fovea-profile 1\ndevice NVIDIA Test GPU 80GB\nsm 90\ncudnn -1\n", "line 4", "cudnn");
    /* bad numbers and fields */
    BAD(HDR "conv a path=graph cdecl=abc engine=3 ws=1 ms=0.5 how=x knobs=-\nend 1\n", "line 5",
        "cdecl");
    BAD(HDR "conv a path=graph cdecl=0 engine=3 ws=1 ms=0.5 how=x knobs=-\nend 1\n", "line 5",
        "cdecl");
    BAD(HDR "conv a path=graph cdecl=65537 engine=3 ws=1 ms=0.5 how=x knobs=-\nend 1\n", "line 5",
        "cdecl");
    BAD(HDR "conv a path=graph cdecl= 8 engine=3 ws=1 ms=0.5 how=x knobs=-\nend 1\n", "line 5",
        NULL);
    BAD(HDR "conv a path=graph cdecl=8 engine=3x ws=1 ms=0.5 how=x knobs=-\nend 1\n", "line 5",
        "engine");
    BAD(HDR "conv a path=graph cdecl=8 engine=99999999999999999999 ws=1 ms=0.5 how=x knobs=-\n"
            "end 1\n",
        "line 5", "engine");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=-1 ms=0.5 how=x knobs=-\nend 1\n", "line 5",
        "ws");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=-1 how=x knobs=-\nend 1\n", "line 5", "ms");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=nan how=x knobs=-\nend 1\n", "line 5",
        "ms");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=1e999 how=x knobs=-\nend 1\n", "line 5",
        "ms");
    BAD(HDR "conv a path=cuda cdecl=8 engine=3 ws=1 ms=1 how=x knobs=-\nend 1\n", "line 5", "path");
    BAD(HDR "conv a path=legacy-fusedx cdecl=8 engine=1 ws=1 ms=1 how=x knobs=-\nend 1\n", "line 5",
        "path");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=1 how=x\nend 1\n", "line 5", "knobs");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=1 how=x knobs=- knobs=-\nend 1\n", "line 5",
        "twice");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=1 how=x knobs=- extra=1\nend 1\n", "line 5",
        "unknown field");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=1 how=x knobs=1:2,\nend 1\n", "line 5",
        "knobs");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=1 how=x knobs=1-2\nend 1\n", "line 5",
        "knobs");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=1 how=x  knobs=-\nend 1\n", "line 5", NULL);
    BAD(HDR "conv a\nend 1\n", "line 5", NULL);
    BAD(HDR E1 E2 "end two\n", "line 7", "count");
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=1 how=x knobs=-\tx\nend 1\n", "line 5",
        "0x09");
    /* too many knobs: 17 */
    BAD(HDR "conv a path=graph cdecl=8 engine=3 ws=1 ms=1 how=x knobs=0:0,1:1,2:2,3:3,4:4,5:5,6:6,"
            "7:7,8:8,9:9,10:10,11:11,12:12,13:13,14:14,15:15,16:16\nend 1\n",
        "line 5", "more than 16 knobs");
    /* an overlong line (a 2000-byte key) */
    char big[4096];
    int n = snprintf(big, sizeof big, HDR "conv ");
    memset(big + n, 'k', 2000);
    n += 2000;
    n += snprintf(big + n, sizeof big - (size_t)n,
                  " path=graph cdecl=8 engine=3 ws=1 ms=1 how=x knobs=-\nend 1\n");
    expect_load(big, (size_t)n, FV_ERR_FORMAT, "line 5", "longer than");
    /* a key of exactly FV__PROFILE_KEY bytes */
    n = snprintf(big, sizeof big, HDR "conv ");
    memset(big + n, 'k', FV__PROFILE_KEY);
    n += FV__PROFILE_KEY;
    n += snprintf(big + n, sizeof big - (size_t)n,
                  " path=graph cdecl=8 engine=3 ws=1 ms=1 how=x knobs=-\nend 1\n");
    expect_load(big, (size_t)n, FV_ERR_FORMAT, "line 5", "key longer");
    /* an embedded NUL */
    const char nul[] = HDR "conv a path=graph\0cdecl=8 engine=3 ws=1 ms=1 how=x knobs=-\nend 1\n";
    expect_load(nul, sizeof nul - 1, FV_ERR_FORMAT, "line 5", "NUL");
}

/* Plan lines: each flaw (truncated, corrupt, oversized, misplaced) makes the
 * file ignored with a reason naming the line; files without plans, of
 * either version, still load. */
static void malformed_plan_lines(void **state) {
#define OK(text) expect_load(text, sizeof(text) - 1, FV_OK, NULL, NULL)
    OK(HDR2 E1 P1 E2 "end 2\n");
    OK(HDR2 E1 E2 "end 2\n"); /* version 2 without plans */
    OK(HDR2 E5 P1 E6 P1 "end 2\n");
    const char crlf[] = HDR2 E1 "plan 5 a430d84680aabd0b aGVsbG8=\r\nend 1\r\n";
    expect_load(crlf, sizeof crlf - 1, FV_OK, NULL, NULL);
#undef OK
    /* the blob arrives intact, on its entry only */
    const char *path = tmp_path("plan.profile");
    write_file(path, HDR2 E1 P1 E2 "end 2\n", sizeof(HDR2 E1 P1 E2 "end 2\n") - 1);
    fv__profile p;
    FV_ASSERT_OK(fv__profile_load(path, NULL, &p, NULL, 0));
    assert_plan_is(&p, "a", (const unsigned char *)"hello", 5);
    assert_plan_is(&p, "b", NULL, 0);
    fv__profile_free(&p);
    /* an old-format file: no blobs */
    write_file(path, HDR E1 E2 "end 2\n", sizeof(HDR E1 E2 "end 2\n") - 1);
    FV_ASSERT_OK(fv__profile_load(path, NULL, &p, NULL, 0));
    assert_int_equal(p.n, 2);
    assert_plan_is(&p, "a", NULL, 0);
    fv__profile_free(&p);

    /* truncated: in the middle of the line, or its data cut short */
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b aGVs", "line 6", "truncated");
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b aGVsbG\nend 1\n", "line 6", "truncated or corrupt");
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b aGVsbG8=AAAA\nend 1\n", "line 6", "8 base64");
    BAD(HDR2 E1 P1, "line 7", "truncated");
    /* corrupt: other data under the same hash, a bad character, bad padding,
     * bits left over, a bad hash */
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b YmVsbG8=\nend 1\n", "line 6", "does not match");
    BAD(HDR2 E1 "plan 5 a430d84680aabd0c aGVsbG8=\nend 1\n", "line 6", "does not match");
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b aGVs*G8=\nend 1\n", "line 6", "character 5");
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b aGVsbG8A\nend 1\n", "line 6", "character 8");
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b aGVsbG=8\nend 1\n", "line 6", "base64");
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b aGVsbG9=\nend 1\n", "line 6", "base64");
    BAD(HDR2 E1 "plan 5 A430D84680AABD0B aGVsbG8=\nend 1\n", "line 6", "hash");
    BAD(HDR2 E1 "plan 5 a430d84680aabd0 aGVsbG8=\nend 1\n", "line 6", "hash");
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b  aGVsbG8=\nend 1\n", "line 6", NULL);
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b\nend 1\n", "line 6", "expected 'plan");
    BAD(HDR2 E1 "plan 5\nend 1\n", "line 6", "expected 'plan");
    BAD(HDR2 E1 "plan 5 a430d84680aabd0b aGVs\tG8=\nend 1\n", "line 6", "0x09");
    /* sizes: none, negative, absurd, past the limit */
    BAD(HDR2 E1 "plan 0 a430d84680aabd0b aGVsbG8=\nend 1\n", "line 6", "plan size");
    BAD(HDR2 E1 "plan -5 a430d84680aabd0b aGVsbG8=\nend 1\n", "line 6", "plan size");
    BAD(HDR2 E1 "plan 99999999999999999999 a430d84680aabd0b aGVsbG8=\nend 1\n", "line 6",
        "plan size");
    char big[512];
    int n = snprintf(big, sizeof big, HDR2 E1 "plan %zu a430d84680aabd0b aGVsbG8=\nend 1\n",
                     FV__PROFILE_MAX_PLAN + 1);
    expect_load(big, (size_t)n, FV_ERR_FORMAT, "line 6", "plan size");
    /* misplaced: in a version 1 file, before any conv line, twice for one
     * entry, after the end */
    BAD(HDR E1 P1 "end 1\n", "line 6", "version 1");
    BAD(HDR2 P1 E1 "end 1\n", "line 5", "must follow");
    BAD(HDR2 E1 P1 P1 "end 1\n", "line 7", "must follow");
    BAD(HDR2 E1 "end 1\n" P1, "line 7", "after the end");
    BAD(HDR2 E1 P1 "end 2\n", "line 7", "end line says 2");
}

static void missing_file_and_mismatch(void **state) {
    fv__profile p;
    char why[512];
    FV_ASSERT_STATUS(fv__profile_load(tmp_path("does-not-exist"), NULL, &p, why, sizeof why),
                     FV_ERR_IO, "does-not-exist");
    assert_non_null(strstr(why, "cannot open"));
    fv__profile_free(&p);
    FV_ASSERT_STATUS(fv__profile_load(dir, NULL, &p, why, sizeof why), FV_ERR_IO, "directory");
    fv__profile_free(&p);
    /* a FIFO without a writer and a device are refused, never waited on */
    const char *fifo = tmp_path("fifo.profile");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    FV_ASSERT_STATUS(fv__profile_load(fifo, NULL, &p, why, sizeof why), FV_ERR_IO, "FIFO");
    assert_non_null(strstr(why, "fifo.profile"));
    fv__profile_free(&p);
    FV_ASSERT_STATUS(fv__profile_load("/dev/zero", NULL, &p, why, sizeof why), FV_ERR_IO,
                     "character device");
    fv__profile_free(&p);

    const char *path = tmp_path("m.profile");
    write_file(path, HDR E1 "end 1\n", sizeof(HDR E1 "end 1\n") - 1);
    fv__profile want;
    fv__profile_init(&want);
    set_header(&want);
    snprintf(want.device, sizeof want.device, "Orin");
    FV_ASSERT_STATUS(fv__profile_load(path, &want, &p, why, sizeof why), FV_ERR_FORMAT, "line 2");
    assert_non_null(strstr(why, "'NVIDIA Test GPU 80GB'"));
    assert_non_null(strstr(why, "'Orin'"));
    fv__profile_free(&p);
    set_header(&want);
    want.sm = 87;
    FV_ASSERT_STATUS(fv__profile_load(path, &want, &p, why, sizeof why), FV_ERR_FORMAT, "SM 90");
    assert_non_null(strstr(why, "SM 87"));
    fv__profile_free(&p);
    set_header(&want);
    want.cudnn = 90100;
    FV_ASSERT_STATUS(fv__profile_load(path, &want, &p, why, sizeof why), FV_ERR_FORMAT, "91400");
    assert_non_null(strstr(why, "90100"));
    fv__profile_free(&p);
    set_header(&want);
    FV_ASSERT_OK(fv__profile_load(path, &want, &p, why, sizeof why));
    assert_int_equal(p.n, 1);
    assert_int_equal(p.e[0].nknobs, 2);
    assert_true(p.e[0].knob_value[1] == -4);
    fv__profile_free(&p);
}

static int count_files(void) {
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static void assert_file_is(const char *path, const char *want) {
    char buf[256] = "";
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void failed_save_keeps_old_file(void **state) {
    fv_test_seed(13);
    fv__profile p;
    fv__profile_init(&p);
    set_header(&p);
    for (int i = 0; i < 200; i++) {
        fv__engine_choice c = random_choice(i);
        FV_ASSERT_OK(fv__profile_put(&p, &c));
    }
    /* a folder that cannot be written (unless we are root) */
    char sub[128];
    snprintf(sub, sizeof sub, "%s/ro", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    char target[192];
    snprintf(target, sizeof target, "%s/old.profile", sub);
    write_file(target, "old\n", 4);
    assert_int_equal(chmod(sub, 0555), 0);
    if (access(sub, W_OK) != 0) {
        FV_ASSERT_STATUS(fv__profile_save(target, &p), FV_ERR_IO, target);
        assert_file_is(target, "old\n");
    } else {
        print_message("running as root: the read-only folder case is covered by the next ones\n");
    }
    chmod(sub, 0755);
    remove(target);
    rmdir(sub);
    /* a folder that does not exist */
    FV_ASSERT_STATUS(fv__profile_save(tmp_path("nope/x.profile"), &p), FV_ERR_IO, "nope");
    /* a write that fails half-way (file size limit), even for root: the old
     * file stays and no temporary file is left behind */
    const char *path = tmp_path("old.profile");
    write_file(path, "old\n", 4);
    int before = count_files();
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    struct rlimit lim = {.rlim_cur = 2048, .rlim_max = old.rlim_max};
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    fv_clear_error();
    fv_status s = fv__profile_save(path, &p);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    assert_int_equal(s, FV_ERR_IO);
    assert_non_null(strstr(fv_last_error(), "old.profile"));
    assert_file_is(path, "old\n");
    assert_int_equal(count_files(), before);
    /* and a save that works replaces it */
    FV_ASSERT_OK(fv__profile_save(path, &p));
    assert_int_equal(count_files(), before);
    fv__profile q;
    FV_ASSERT_OK(fv__profile_load(path, &p, &q, NULL, 0));
    assert_int_equal(q.n, 200);
    fv__profile_free(&q);
    /* a profile that would not load again is refused before writing */
    p.sm = -1;
    FV_ASSERT_STATUS(fv__profile_save(path, &p), FV_ERR_BAD_PARAM, "sm");
    fv__profile_free(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(find_and_replace),
        cmocka_unit_test(plan_blobs),
        cmocka_unit_test(conv_keys),
        cmocka_unit_test(malformed_files),
        cmocka_unit_test(malformed_plan_lines),
        cmocka_unit_test(missing_file_and_mismatch),
        cmocka_unit_test(failed_save_keeps_old_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
