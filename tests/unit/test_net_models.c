/* Whole nets on the CPU backend (FP32) against PyTorch FP32: ResNet-18 and
 * MobileNetV2 (batch 1, 224x224) and the UNet (batch 2, 64x64) of
 * apps/common/net_models.c, on weights, inputs and reference outputs that
 * apps/common/net_models.py wrote (ctest's fixture net_models_generate runs
 * it first); relative L2 error <= 1e-4. Also the FVW1 reader's refusals
 * (truncated at every byte, corrupt lengths, duplicates) and the builders'
 * (a missing or mis-sized tensor named, a UNet size not divisible by 8).
 *
 * The folder of the generated files: FV_NET_MODELS_DIR (compiled in), or
 * the environment variable of that name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fv_test.h"
#include "net_models.h"

#ifndef FV_NET_MODELS_DIR
#define FV_NET_MODELS_DIR "net_models"
#endif

#define CPU_TOL 1e-4

static const char *models_dir(void) {
    const char *e = getenv("FV_NET_MODELS_DIR");
    return e && *e ? e : FV_NET_MODELS_DIR;
}

/* DIR/name, failing the test (with how to make the files) when it is missing. */
static const char *generated(const char *name) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", models_dir(), name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s is missing: the references come from PyTorch: run\n"
                 "  /usr/bin/python3 apps/common/net_models.py --out %s\n"
                 "(ctest runs it first, as the test net_models_generate; it needs torch: "
                 "apt-get install python3-torch python3-torchvision)",
                 path, models_dir());
    fclose(f);
    return path;
}

static fv_models_file *load(const char *name) {
    fv_models_file *f = NULL;
    FV_ASSERT_OK(fv_models_file_load(generated(name), &f));
    return f;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- FVW1 --------------------------------------------------------------------- */
static char g_tmp[1024];

static const char *tmp_path(const char *name) {
    static char p[2048];
    snprintf(p, sizeof p, "%s/%s", g_tmp, name);
    return p;
}

static void write_bytes(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static size_t read_bytes(const char *path, unsigned char *b, size_t cap) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(b, 1, cap, f);
    fclose(f);
    assert_true(n < cap);
    return n;
}

static void expect_load_fails(const char *path, fv_status want, const char *needle) {
    fv_models_file *f = (fv_models_file *)1;
    fv_status s = fv_models_file_load(path, &f);
    if (s != want)
        fail_msg("loading %s gave %s (%s), expected %s", path, fv_status_name(s), fv_last_error(),
                 fv_status_name(want));
    assert_null(f);
    if (needle && !strstr(fv_last_error(), needle))
        fail_msg("message \"%s\" lacks \"%s\"", fv_last_error(), needle);
}

static void test_file_round_trip(void **state) {
    (void)state;
    const float a[6] = {1, -2, 3.5f, 1e-30f, -0.0f, 65504};
    const float s[1] = {0.25f};
    fv_models_tensor t[2] = {
        {.name = "layer.weight", .ndims = 2, .dims = {2, 3}, .count = 6, .data = a},
        {.name = "scalar", .ndims = 0, .count = 1, .data = s}};
    FV_ASSERT_OK(fv_models_file_save(tmp_path("rt.fvw"), t, 2));
    fv_models_file *f = NULL;
    FV_ASSERT_OK(fv_models_file_load(tmp_path("rt.fvw"), &f));
    assert_int_equal(fv_models_file_count(f), 2);
    const fv_models_tensor *g = fv_models_file_tensor(f, 0);
    assert_string_equal(g->name, "layer.weight");
    assert_int_equal(g->ndims, 2);
    assert_int_equal(g->dims[1], 3);
    assert_memory_equal(g->data, a, sizeof a);
    assert_null(fv_models_file_tensor(f, 2));
    const int64_t want[2] = {-1, 3}, wrong[2] = {2, 4};
    FV_ASSERT_OK(fv_models_file_get(f, "layer.weight", 2, want, &g));
    FV_ASSERT_OK(fv_models_file_get(f, "scalar", 0, NULL, &g));
    assert_true(g->data[0] == 0.25f);
    assert_int_equal(fv_models_file_get(f, "layer.weight", 2, wrong, &g), FV_ERR_BAD_SHAPE);
    assert_non_null(strstr(fv_last_error(), "'layer.weight' is [2, 3], the net needs [2, 4]"));
    assert_int_equal(fv_models_file_get(f, "layer.bias", 1, NULL, &g), FV_ERR_FORMAT);
    assert_non_null(strstr(fv_last_error(), "no tensor 'layer.bias'"));
    fv_models_file_destroy(f);
    fv_models_file_destroy(NULL);
}

static void test_file_refusals(void **state) {
    (void)state;
    const float a[6] = {1, 2, 3, 4, 5, 6};
    fv_models_tensor t[2] = {{.name = "a", .ndims = 2, .dims = {2, 3}, .count = 6, .data = a},
                             {.name = "bb", .ndims = 1, .dims = {2}, .count = 2, .data = a}};
    FV_ASSERT_OK(fv_models_file_save(tmp_path("good.fvw"), t, 2));
    unsigned char buf[512], bad[520];
    size_t n = read_bytes(tmp_path("good.fvw"), buf, sizeof buf);
    assert_int_equal(n, 8 + (4 + 1 + 4 + 16 + 24) + (4 + 2 + 4 + 8 + 8));
    /* every truncation */
    for (size_t len = 0; len < n; len++) {
        write_bytes(tmp_path("cut.fvw"), buf, len);
        expect_load_fails(tmp_path("cut.fvw"), FV_ERR_FORMAT, NULL);
    }
    /* a byte too many */
    memcpy(bad, buf, n);
    bad[n] = 0;
    write_bytes(tmp_path("bad.fvw"), bad, n + 1);
    expect_load_fails(tmp_path("bad.fvw"), FV_ERR_FORMAT, "1 bytes after the last");
    /* bad magic */
    memcpy(bad, buf, n);
    bad[3] = '2';
    write_bytes(tmp_path("bad.fvw"), bad, n);
    expect_load_fails(tmp_path("bad.fvw"), FV_ERR_FORMAT, "bad magic");
    /* a record count past what the file can hold */
    memcpy(bad, buf, n);
    bad[7] = 0x7f;
    write_bytes(tmp_path("bad.fvw"), bad, n);
    expect_load_fails(tmp_path("bad.fvw"), FV_ERR_FORMAT, "records announced");
    /* name length 0, then huge */
    memcpy(bad, buf, n);
    bad[8] = 0;
    write_bytes(tmp_path("bad.fvw"), bad, n);
    expect_load_fails(tmp_path("bad.fvw"), FV_ERR_FORMAT, "name length 0");
    bad[8] = 0xff, bad[9] = 0xff, bad[10] = 0xff, bad[11] = 0xff;
    write_bytes(tmp_path("bad.fvw"), bad, n);
    expect_load_fails(tmp_path("bad.fvw"), FV_ERR_FORMAT, "name length");
    /* ndims 9 */
    memcpy(bad, buf, n);
    bad[13] = 9;
    write_bytes(tmp_path("bad.fvw"), bad, n);
    expect_load_fails(tmp_path("bad.fvw"), FV_ERR_FORMAT, "9 dims");
    /* a dim of 0, and one of 2^62 (its product would overflow) */
    memcpy(bad, buf, n);
    bad[17] = 0;
    write_bytes(tmp_path("bad.fvw"), bad, n);
    expect_load_fails(tmp_path("bad.fvw"), FV_ERR_FORMAT, "dim 0 is 0");
    memcpy(bad, buf, n);
    bad[24] = 0x40;
    write_bytes(tmp_path("bad.fvw"), bad, n);
    expect_load_fails(tmp_path("bad.fvw"), FV_ERR_FORMAT, NULL);
    /* a dim larger than the data that follows */
    memcpy(bad, buf, n);
    bad[26] = 1; /* dims[1] = 3 + 256 */
    write_bytes(tmp_path("bad.fvw"), bad, n);
    expect_load_fails(tmp_path("bad.fvw"), FV_ERR_FORMAT, "truncated");
    /* the same name twice */
    t[1].name = "a";
    FV_ASSERT_OK(fv_models_file_save(tmp_path("dup.fvw"), t, 2));
    expect_load_fails(tmp_path("dup.fvw"), FV_ERR_FORMAT, "'a' appears twice");
    /* no file; NULLs; what cannot be saved */
    expect_load_fails(tmp_path("absent.fvw"), FV_ERR_IO, "cannot open");
    fv_models_file *f;
    assert_int_equal(fv_models_file_load(NULL, &f), FV_ERR_BAD_PARAM);
    t[1].name = "";
    assert_int_equal(fv_models_file_save(tmp_path("x.fvw"), t, 2), FV_ERR_BAD_PARAM);
    t[1].name = "b", t[1].count = 3; /* count not the product of dims */
    assert_int_equal(fv_models_file_save(tmp_path("x.fvw"), t, 2), FV_ERR_BAD_PARAM);
}

/* ---- the builders' refusals ------------------------------------------------------ */
/* unet.fvw rewritten: without tensor `drop`, or with `shrink` one element shorter. */
static void rewrite_unet(const char *out, const char *drop, const char *shrink) {
    fv_models_file *f = load("unet.fvw");
    int n = fv_models_file_count(f), k = 0;
    fv_models_tensor *t = calloc((size_t)n, sizeof *t);
    assert_non_null(t);
    for (int i = 0; i < n; i++) {
        const fv_models_tensor *s = fv_models_file_tensor(f, i);
        if (drop && !strcmp(s->name, drop)) continue;
        t[k] = *s;
        if (shrink && !strcmp(s->name, shrink)) t[k].dims[t[k].ndims - 1]--, t[k].count--;
        k++;
    }
    assert_int_equal(k, drop ? n - 1 : n);
    FV_ASSERT_OK(fv_models_file_save(out, t, k));
    free(t);
    fv_models_file_destroy(f);
}

static void expect_build_fails(const char *weights, fv_models_arch arch, int h, fv_status want,
                               const char *needle) {
    fv_models_file *f = NULL;
    FV_ASSERT_OK(fv_models_file_load(weights, &f));
    fv_net_builder *b = NULL;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    fv_status s = fv_models_build(b, arch, f, 1, h, h, NULL);
    if (s != want)
        fail_msg("building %s from %s gave %s (%s), expected %s", fv_models_arch_name(arch),
                 weights, fv_status_name(s), fv_last_error(), fv_status_name(want));
    if (!strstr(fv_last_error(), needle))
        fail_msg("message \"%s\" lacks \"%s\"", fv_last_error(), needle);
    fv_net_builder_destroy(b);
    fv_models_file_destroy(f);
}

static void test_build_refusals(void **state) {
    (void)state;
    rewrite_unet(tmp_path("unet_missing.fvw"), "dec1.3.weight", NULL);
    expect_build_fails(tmp_path("unet_missing.fvw"), FV_MODELS_UNET, 64, FV_ERR_FORMAT,
                       "no tensor 'dec1.3.weight'");
    rewrite_unet(tmp_path("unet_short.fvw"), NULL, "dec2.1.running_var");
    expect_build_fails(tmp_path("unet_short.fvw"), FV_MODELS_UNET, 64, FV_ERR_BAD_SHAPE,
                       "'dec2.1.running_var' is [31], the net needs [32]");
    expect_build_fails(generated("unet.fvw"), FV_MODELS_UNET, 60, FV_ERR_BAD_PARAM, "divide by 8");
    /* UNet weights are no ResNet */
    expect_build_fails(generated("unet.fvw"), FV_MODELS_RESNET18, 64, FV_ERR_FORMAT,
                       "no tensor 'conv1.weight'");
    fv_models_arch a;
    assert_int_equal(fv_models_arch_parse("resnet50", &a), FV_ERR_BAD_PARAM);
    FV_ASSERT_OK(fv_models_arch_parse("mobilenet_v2", &a));
    assert_int_equal(a, FV_MODELS_MOBILENET_V2);
}

/* ---- whole nets against PyTorch ------------------------------------------------------ */
static fv_context *cpu_context(void) {
    fv_context_desc d = {
        .backend = FV_BACKEND_CPU, .device_pool_bytes = 512u << 20, .host_pool_bytes = 256u << 20};
    fv_context *ctx = NULL;
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    return ctx;
}

static void run_net(fv_models_arch arch, int n, int size, uint32_t flags) {
    char wname[64], ioname[64];
    snprintf(wname, sizeof wname, "%s.fvw", fv_models_arch_name(arch));
    snprintf(ioname, sizeof ioname, "%s_n%d_s%d.io.fvw", fv_models_arch_name(arch), n, size);
    fv_models_file *w = load(wname), *io = load(ioname);
    fv_context *ctx = cpu_context();
    fv_net *net = NULL;
    fv_models_net info;
    fv_net_desc nd = {.flags = flags};
    double t0 = now_s();
    FV_ASSERT_OK(fv_models_net_create(ctx, arch, w, n, size, size, &nd, &net, &info));
    double t1 = now_s();
    fv_models_check c;
    FV_ASSERT_OK(fv_models_check_io(net, io, &c));
    double t2 = now_s();
    fv_net_info ni;
    FV_ASSERT_OK(fv_net_info_get(net, &ni));
    printf("%-12s N=%d %dx%d%s: %d layers built, %d run (%d BN folded), %.2f GMAC; create %.2f "
           "s, forward %.2f s; rel L2 %.3g (max |err| %.3g, |y| max %.3g)\n",
           fv_models_arch_name(arch), n, size, size, flags & FV_NET_NO_FUSION ? " unfused" : "",
           info.layers, ni.layers, ni.fused_bn, info.gmacs, t1 - t0, t2 - t1, c.rel_l2,
           c.max_abs_err, c.max_abs);
    if (!(c.rel_l2 <= CPU_TOL))
        fail_msg("%s: relative L2 error %.3g against PyTorch FP32 > %g", fv_models_arch_name(arch),
                 c.rel_l2, CPU_TOL);
    fv_net_destroy(net);
    fv_context_destroy(ctx);
    fv_models_file_destroy(w);
    fv_models_file_destroy(io);
}

static void test_resnet18(void **state) {
    (void)state;
    run_net(FV_MODELS_RESNET18, 1, 224, 0);
}

static void test_mobilenet_v2(void **state) {
    (void)state;
    run_net(FV_MODELS_MOBILENET_V2, 1, 224, 0);
}

static void test_unet(void **state) {
    (void)state;
    run_net(FV_MODELS_UNET, 2, 64, 0);
}

static void test_unet_unfused(void **state) {
    (void)state;
    run_net(FV_MODELS_UNET, 2, 64, FV_NET_NO_FUSION);
}

int main(void) {
    if (fv_test_temp_dir("fv_net_models", g_tmp, sizeof g_tmp) != 0) {
        fprintf(stderr, "cannot make a temporary folder\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_round_trip), cmocka_unit_test(test_file_refusals),
        cmocka_unit_test(test_build_refusals),  cmocka_unit_test(test_resnet18),
        cmocka_unit_test(test_mobilenet_v2),    cmocka_unit_test(test_unet),
        cmocka_unit_test(test_unet_unfused),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fv_test_remove_tree(g_tmp);
    return failed;
}
