/* fv_net on the CPU backend: the builder's checks, the memory planner, fusion
 * against the unfused net, the arena bound, and no allocation per forward. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"
#include "fv_test_nets.h"
#include "net/net_internal.h"

static float *rand_floats(size_t n, float lo, float hi) {
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    fv_test_fill_uniform(x, n, lo, hi);
    return x;
}

/* ---- planner ----------------------------------------------------------------- */
static void check_plan(const size_t *sizes, const int *first, const int *last, int n) {
    size_t *off = calloc((size_t)n, sizeof *off), arena, lb;
    FV_ASSERT_OK(fv__net_plan(sizes, first, last, n, off, &arena, &lb));
    for (int i = 0; i < n; i++) {
        assert_true(off[i] + sizes[i] <= arena);
        assert_int_equal(off[i] % FV_ALIGN, 0);
        for (int j = 0; j < i; j++) {
            int alive_together = first[i] <= last[j] && first[j] <= last[i];
            int overlap = off[i] < off[j] + sizes[j] && off[j] < off[i] + sizes[i];
            if (alive_together && overlap)
                fail_msg("buffers %d [%d,%d] @%zu+%zu and %d [%d,%d] @%zu+%zu overlap", i, first[i],
                         last[i], off[i], sizes[i], j, first[j], last[j], off[j], sizes[j]);
        }
    }
    assert_true(arena >= lb);
    free(off);
}

static void test_plan_random(void **state) {
    (void)state;
    fv_test_seed(11);
    for (int trial = 0; trial < 200; trial++) {
        int n = 1 + (int)(fv_test_rand_u64() % 40);
        size_t sizes[40];
        int first[40], last[40];
        for (int i = 0; i < n; i++) {
            sizes[i] = FV_ALIGN * (1 + fv_test_rand_u64() % 64);
            first[i] = (int)(fv_test_rand_u64() % 30);
            last[i] = first[i] + (int)(fv_test_rand_u64() % 6);
        }
        check_plan(sizes, first, last, n);
    }
}

static void test_plan_chain_is_ping_pong(void **state) {
    (void)state;
    /* a chain: each tensor lives from its layer to the next */
    size_t sizes[8];
    int first[8], last[8];
    for (int i = 0; i < 8; i++)
        sizes[i] = FV_ALIGN * 10, first[i] = i, last[i] = i + 1;
    size_t off[8], arena, lb;
    FV_ASSERT_OK(fv__net_plan(sizes, first, last, 8, off, &arena, &lb));
    assert_int_equal(lb, FV_ALIGN * 20);
    assert_int_equal(arena, FV_ALIGN * 20);
}

/* ---- the builder's checks ---------------------------------------------------------- */
static void test_bad_builds(void **state) {
    (void)state;
    fv_net_builder *b;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, y, z, t;
    FV_ASSERT_OK(fv_net_add_input(b, "img", 1, 3, 8, 8, &x));
    float w[16 * 3 * 9];
    for (int i = 0; i < 16 * 27; i++)
        w[i] = 0.01f * (float)(i % 7);
    fv_net_conv_desc c = {.name = "c1", .k = 16, .r = 3, .s = 3, .pad = {1, 1, 1, 1}, .weights = w};
    FV_ASSERT_STATUS(fv_net_add_conv(b, &c, 42, &y), FV_ERR_BAD_PARAM,
                     "conv 'c1': input tensor id 42");
    c.groups = 2;
    FV_ASSERT_STATUS(fv_net_add_conv(b, &c, x, &y), FV_ERR_BAD_SHAPE, "groups=2");
    c.groups = 1;
    FV_ASSERT_OK(fv_net_add_conv(b, &c, x, &y));
    int n0 = fv_net_builder_tensor_count(b);
    /* a failed add leaves the builder as it was */
    FV_ASSERT_STATUS(
        fv_net_add_conv(b, &(fv_net_conv_desc){.name = "c2", .k = 4, .r = 9, .s = 9, .weights = w},
                        y, &z),
        FV_ERR_BAD_SHAPE, "conv 'c2'");
    assert_int_equal(fv_net_builder_tensor_count(b), n0);
    FV_ASSERT_OK(fv_net_add_pool(b, &(fv_net_pool_desc){.name = "p", .r = 2, .s = 2}, y, &z));
    int pair[2] = {y, z};
    FV_ASSERT_STATUS(fv_net_add_concat(b, "cat", pair, 2, &t), FV_ERR_BAD_SHAPE, "concat 'cat'");
    FV_ASSERT_STATUS(fv_net_add_binary(b, "sum", FV_NET_ADD, y, z, FV_ACT_RELU, 0, &t),
                     FV_ERR_BAD_SHAPE, "binary 'sum'");
    FV_ASSERT_STATUS(fv_net_add_reshape(b, "r", z, 1, 7, 1, 1, &t), FV_ERR_BAD_SHAPE,
                     "reshape 'r'");
    FV_ASSERT_STATUS(fv_net_add_slice(b, "s", z, 4, 20, &t), FV_ERR_BAD_SHAPE, "slice 's'");
    FV_ASSERT_STATUS(fv_net_add_activation(b, "a", z, (fv_activation)99, 0, 0, &t),
                     FV_ERR_BAD_PARAM, "activation 99");
    float nanw[16 * 3 * 9];
    memcpy(nanw, w, sizeof w);
    nanw[5] = NAN;
    c.weights = nanw;
    FV_ASSERT_STATUS(fv_net_add_conv(b, &c, x, &t), FV_ERR_BAD_PARAM, "weights[5]");
    FV_ASSERT_STATUS(fv_net_mark_output(b, x, NULL), FV_ERR_BAD_PARAM, "input");
    FV_ASSERT_STATUS(fv_net_mark_output(b, 1000, NULL), FV_ERR_BAD_PARAM, "1000");

    fv_context *ctx = fv_test_cpu_context(0);
    fv_net *net;
    FV_ASSERT_STATUS(fv_net_create(ctx, b, NULL, &net), FV_ERR_BAD_PARAM, "no outputs");
    assert_null(net);
    FV_ASSERT_OK(fv_net_mark_output(b, z, "out"));
    FV_ASSERT_STATUS(fv_net_mark_output(b, z, "again"), FV_ERR_BAD_PARAM, "already");
    FV_ASSERT_STATUS(fv_net_create(ctx, b, &(fv_net_desc){.flags = 1u << 20}, &net),
                     FV_ERR_BAD_PARAM, "flags");
    FV_ASSERT_OK(fv_net_create(ctx, b, NULL, &net));
    float in[3 * 64], out[16 * 16];
    FV_ASSERT_STATUS(fv_net_input_upload(net, 0, in, 5), FV_ERR_BAD_SHAPE, "5 values");
    FV_ASSERT_STATUS(fv_net_output_download(net, 1, out, 256), FV_ERR_BAD_PARAM, "index 1");
    fv_net_destroy(net);
    fv_net_builder_destroy(b);
    fv_context_destroy(ctx);
}

/* ---- a small residual net: fused vs unfused, arena, no allocation per run ----- */
typedef struct small_net {
    float *w1, *w2, *w3, *fc, *bn[4], *bias;
} small_net;

/* conv-bn-relu, conv-bn (+ skip) relu, SE scale, maxpool, concat with a
 * slice, hard-swish, flatten + fc, softmax. */
static fv_net_builder *make_small(small_net *m, int n) {
    fv_net_builder *b;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, a, c, d, e, f, g, h, i, j, k, se, o;
    FV_ASSERT_OK(fv_net_add_input(b, "x", n, 5, 12, 10, &x));
    FV_ASSERT_OK(fv_net_add_conv(
        b,
        &(fv_net_conv_desc){
            .name = "c1", .k = 12, .r = 3, .s = 3, .pad = {1, 0, 1, 2}, .weights = m->w1},
        x, &a));
    FV_ASSERT_OK(
        fv_net_add_batchnorm(b, "bn1", a, m->bn[0], m->bn[1], m->bn[2], m->bn[3], 1e-5f, &a));
    FV_ASSERT_OK(fv_net_add_activation(b, "relu1", a, FV_ACT_RELU, 0, 0, &a));
    FV_ASSERT_OK(fv_net_add_conv(b,
                                 &(fv_net_conv_desc){.name = "c2",
                                                     .k = 12,
                                                     .r = 3,
                                                     .s = 3,
                                                     .pad = {1, 1, 1, 1},
                                                     .groups = 3,
                                                     .weights = m->w2,
                                                     .bias = m->bias},
                                 a, &c));
    FV_ASSERT_OK(
        fv_net_add_batchnorm(b, "bn2", c, m->bn[0], m->bn[1], m->bn[2], m->bn[3], 1e-3f, &c));
    FV_ASSERT_OK(fv_net_add_binary(b, "add", FV_NET_ADD, c, a, FV_ACT_IDENTITY, 0, &d));
    FV_ASSERT_OK(fv_net_add_activation(b, "relu2", d, FV_ACT_RELU, 0, 0, &d));
    FV_ASSERT_OK(fv_net_add_global_pool(b, "gap", d, 1, &se));
    FV_ASSERT_OK(fv_net_add_activation(b, "hsig", se, FV_ACT_HARD_SIGMOID, 0, 0, &se));
    FV_ASSERT_OK(fv_net_add_binary(b, "se", FV_NET_MUL, d, se, FV_ACT_IDENTITY, 0, &e));
    FV_ASSERT_OK(fv_net_add_pool(
        b,
        &(fv_net_pool_desc){
            .name = "pool", .r = 3, .s = 3, .stride_h = 2, .stride_w = 2, .pad = {1, 1, 1, 1}},
        e, &f));
    FV_ASSERT_OK(fv_net_add_slice(b, "slice", f, 2, 7, &g));
    int parts[2] = {f, g};
    FV_ASSERT_OK(fv_net_add_concat(b, "cat", parts, 2, &h));
    FV_ASSERT_OK(fv_net_add_conv(
        b, &(fv_net_conv_desc){.name = "c3", .k = 6, .r = 1, .s = 1, .weights = m->w3}, h, &i));
    FV_ASSERT_OK(fv_net_add_activation(b, "hswish", i, FV_ACT_HARD_SWISH, 0, 0, &i));
    int ch, hh, ww;
    FV_ASSERT_OK(fv_net_builder_shape(b, i, NULL, &ch, &hh, &ww));
    assert_int_equal(ch, 6);
    FV_ASSERT_OK(fv_net_add_reshape(b, "flatten", i, n, ch * hh * ww, 1, 1, &j));
    FV_ASSERT_OK(fv_net_add_fc(b, "fc", j, 7, m->fc, m->bias, FV_ACT_IDENTITY, 0, &k));
    FV_ASSERT_OK(fv_net_add_softmax(b, "softmax", k, &o));
    FV_ASSERT_OK(fv_net_mark_output(b, o, "prob"));
    FV_ASSERT_OK(fv_net_mark_output(b, d, "features"));
    return b;
}

static void small_init(small_net *m) {
    fv_test_seed(5);
    m->w1 = rand_floats(12 * 5 * 9, -0.3f, 0.3f);
    m->w2 = rand_floats(12 * 4 * 9, -0.3f, 0.3f);
    m->w3 = rand_floats(6 * 17, -0.3f, 0.3f);
    m->fc = rand_floats(7 * 6 * 6 * 5, -0.2f, 0.2f);
    m->bias = rand_floats(12, -0.2f, 0.2f);
    m->bn[0] = rand_floats(12, 0.5f, 1.5f);
    m->bn[1] = rand_floats(12, -0.5f, 0.5f);
    m->bn[2] = rand_floats(12, -0.5f, 0.5f);
    m->bn[3] = rand_floats(12, 0.5f, 2.0f);
}

static void small_free(small_net *m) {
    free(m->w1), free(m->w2), free(m->w3), free(m->fc), free(m->bias);
    for (int i = 0; i < 4; i++)
        free(m->bn[i]);
}

static void run_net(fv_net *net, const float *in, size_t nin, float *prob, size_t np, float *feat,
                    size_t nf) {
    FV_ASSERT_OK(fv_net_input_upload(net, 0, in, nin));
    FV_ASSERT_OK(fv_net_forward(net));
    FV_ASSERT_OK(fv_net_output_download(net, 0, prob, np));
    FV_ASSERT_OK(fv_net_output_download(net, 1, feat, nf));
}

static void test_fusion_matches_unfused(void **state) {
    (void)state;
    small_net m;
    small_init(&m);
    const int n = 2;
    fv_net_builder *b = make_small(&m, n);
    fv_context *ctx = fv_test_cpu_context(0);
    fv_net *fused, *plain;
    FV_ASSERT_OK(fv_net_create(ctx, b, NULL, &fused));
    FV_ASSERT_OK(fv_net_create(ctx, b, &(fv_net_desc){.flags = FV_NET_NO_FUSION}, &plain));
    fv_net *bad = NULL;
    FV_ASSERT_STATUS(fv_net_create(ctx, b, &(fv_net_desc){.dtype = FV_DTYPE_U8}, &bad),
                     FV_ERR_BAD_PARAM, "dtype");
    assert_null(bad);
    fv_net_info fi, pi;
    FV_ASSERT_OK(fv_net_info_get(fused, &fi));
    FV_ASSERT_OK(fv_net_info_get(plain, &pi));
    assert_int_equal(fi.fused_bn, 2);
    assert_int_equal(fi.fused_add, 1); /* add(c2, a) runs inside c2 */
    assert_int_equal(pi.fused_add, 0);
    assert_true(fi.fused_act >= 2); /* relu1 into c1, relu2 into add, hsig into... */
    assert_true(fi.layers < pi.layers);
    assert_int_equal(pi.builder_layers, fi.builder_layers);
    int saw_flatten = 0;
    for (int i = 0; i < fi.layers; i++) {
        fv_net_layer_info li;
        FV_ASSERT_OK(fv_net_layer_info_get(fused, i, &li));
        saw_flatten |= strstr(li.fused, "flatten") != NULL;
        assert_string_not_equal(li.op, "reshape");
    }
    assert_true(saw_flatten);

    size_t nin = (size_t)n * 5 * 12 * 10, np = (size_t)n * 7, nf = (size_t)n * 12 * 12 * 10;
    float *in = rand_floats(nin, -1, 1);
    float *p1 = malloc(np * 4), *p2 = malloc(np * 4), *f1 = malloc(nf * 4), *f2 = malloc(nf * 4);
    run_net(fused, in, nin, p1, np, f1, nf);
    run_net(plain, in, nin, p2, np, f2, nf);
    double e1 = fv_test_rel_l2(p1, p2, np), e2 = fv_test_rel_l2(f1, f2, nf);
    if (e1 > 1e-5 || e2 > 1e-5) fail_msg("fused vs unfused: prob %g, features %g", e1, e2);
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (int k = 0; k < 7; k++)
            sum += p1[i * 7 + k];
        assert_true(fabs(sum - 1.0) < 1e-5);
    }

    /* the precision report of a net against itself is exact */
    fv_net_layer_error *err = calloc((size_t)fi.layers, sizeof *err);
    FV_ASSERT_OK(fv_net_input_upload(fused, 0, in, nin));
    fv_net *again;
    FV_ASSERT_OK(fv_net_create(ctx, b, NULL, &again));
    FV_ASSERT_OK(fv_net_compare(fused, again, err, fi.layers));
    for (int i = 0; i < fi.layers; i++)
        assert_true(err[i].rel_l2 == 0.0);
    FV_ASSERT_STATUS(fv_net_compare(fused, plain, err, fi.layers), FV_ERR_BAD_PARAM, "differ");
    float *ms = calloc((size_t)fi.layers, sizeof *ms), total = 0;
    FV_ASSERT_OK(fv_net_profile(fused, 3, ms, fi.layers, &total));
    assert_true(total > 0.0f);

    /* nothing allocated per forward */
    fv_pool_stats s0, s1;
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_DEVICE), &s0));
    for (int r = 0; r < 20; r++)
        FV_ASSERT_OK(fv_net_forward(fused));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_DEVICE), &s1));
    assert_int_equal(s0.carve_outs, s1.carve_outs);
    assert_int_equal(s0.backing_allocs, s1.backing_allocs);

    free(err), free(ms), free(in), free(p1), free(p2), free(f1), free(f2);
    fv_net_destroy(again);
    fv_net_destroy(fused);
    fv_net_destroy(plain);
    fv_net_builder_destroy(b);
    fv_context_destroy(ctx);
    small_free(&m);
}

/* A plain chain of convolutions: the arena is within 1.10x of its bound. */
static void test_arena_near_bound(void **state) {
    (void)state;
    fv_test_seed(3);
    fv_net_builder *b;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, y;
    FV_ASSERT_OK(fv_net_add_input(b, NULL, 1, 8, 32, 32, &x));
    float *w = rand_floats(16 * 16 * 9, -0.1f, 0.1f); /* layer 0 uses the first 16 x 8 x 9 */
    y = x;
    for (int i = 0; i < 6; i++) {
        fv_net_conv_desc d = {
            .k = 16, .r = 3, .s = 3, .pad = {1, 1, 1, 1}, .weights = w, .activation = FV_ACT_RELU};
        FV_ASSERT_OK(fv_net_add_conv(b, &d, y, &y));
        if (i == 2) {
            int skip = y;
            FV_ASSERT_OK(fv_net_add_conv(b, &d, y, &y));
            FV_ASSERT_OK(fv_net_add_binary(b, NULL, FV_NET_ADD, y, skip, FV_ACT_RELU, 0, &y));
        }
    }
    FV_ASSERT_OK(fv_net_mark_output(b, y, NULL));
    fv_context *ctx = fv_test_cpu_context(0);
    fv_net *net;
    FV_ASSERT_OK(fv_net_create(ctx, b, NULL, &net));
    fv_net_info info;
    FV_ASSERT_OK(fv_net_info_get(net, &info));
    assert_true(info.arena_lower_bound > 0);
    if ((double)info.arena_bytes > 1.10 * (double)info.arena_lower_bound)
        fail_msg("arena %zu > 1.10 x bound %zu", info.arena_bytes, info.arena_lower_bound);
    fv_net_destroy(net);
    fv_net_builder_destroy(b);
    fv_context_destroy(ctx);
    free(w);
}

/* ---- concat without a copy ------------------------------------------------------- */
/* Runs net on in (random, input 0) and returns every output, concatenated. */
static float *outputs_of(fv_net *net, const float *in, size_t nin, size_t *count) {
    FV_ASSERT_OK(fv_net_input_upload(net, 0, in, nin));
    FV_ASSERT_OK(fv_net_forward(net));
    size_t total = 0;
    fv_tensor_shape sh;
    for (int i = 0; i < fv_net_output_count(net); i++) {
        FV_ASSERT_OK(fv_tensor_shape_get(fv_net_output(net, i), &sh));
        total += (size_t)sh.n * sh.h * sh.w * sh.c;
    }
    float *out = malloc(total * sizeof *out), *at = out;
    assert_non_null(out);
    for (int i = 0; i < fv_net_output_count(net); i++) {
        FV_ASSERT_OK(fv_tensor_shape_get(fv_net_output(net, i), &sh));
        size_t n = (size_t)sh.n * sh.h * sh.w * sh.c;
        FV_ASSERT_OK(fv_net_output_download(net, i, at, n));
        at += n;
    }
    *count = total;
    return out;
}

/* The path fv_net_layer_info_get gives the layer named name. */
static const char *layer_path(fv_net *net, const char *name) {
    static fv_net_layer_info li;
    fv_net_info info;
    FV_ASSERT_OK(fv_net_info_get(net, &info));
    for (int i = 0; i < info.layers; i++) {
        FV_ASSERT_OK(fv_net_layer_info_get(net, i, &li));
        if (!strcmp(li.name, name)) return li.path;
    }
    fail_msg("no layer '%s'", name);
    return NULL;
}

/* b built with concat views (default) and without (FV_NET_NO_CONCAT_VIEWS,
 * FV_NET_NO_FUSION): the same outputs bit for bit (every value is computed
 * by the same FP32 code, only where it is stored changes), elided inputs
 * as expected, no live tensors overlapping, the arena at its bound or
 * within 1.10x of it, and the precision report of the net against a twin
 * exact (it reads every layer's output, views included). */
static void check_views(fv_net_builder *b, int elided, const char *const *paths, int npaths) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_net *on, *off, *plain, *twin;
    FV_ASSERT_OK(fv_net_create(ctx, b, NULL, &on));
    FV_ASSERT_OK(fv_net_create(ctx, b, &(fv_net_desc){.flags = FV_NET_NO_CONCAT_VIEWS}, &off));
    FV_ASSERT_OK(fv_net_create(ctx, b, &(fv_net_desc){.flags = FV_NET_NO_FUSION}, &plain));
    fv_net_info ion, ioff, iplain;
    FV_ASSERT_OK(fv_net_info_get(on, &ion));
    FV_ASSERT_OK(fv_net_info_get(off, &ioff));
    FV_ASSERT_OK(fv_net_info_get(plain, &iplain));
    assert_int_equal(ion.concat_elided, elided);
    assert_int_equal(ioff.concat_elided, 0);
    assert_int_equal(iplain.concat_elided, 0);
    for (int i = 0; i < npaths; i += 2) {
        assert_string_equal(layer_path(on, paths[i]), paths[i + 1]);
        assert_string_equal(layer_path(off, paths[i]), "kernel");
    }
    fv_net *nets[3] = {on, off, plain};
    const fv_net_info *infos[3] = {&ion, &ioff, &iplain};
    for (int k = 0; k < 3; k++) {
        fv_test_net_check_no_overlap(nets[k]);
        const fv_net_info *in = infos[k];
        assert_true(in->arena_bytes >= in->arena_lower_bound);
        if ((double)in->arena_bytes > 1.10 * (double)in->arena_lower_bound)
            fail_msg("net %d: arena %zu > 1.10 x bound %zu", k, in->arena_bytes,
                     in->arena_lower_bound);
    }
    /* a copy saved is an activation less */
    if (elided) assert_true(ion.arena_lower_bound <= ioff.arena_lower_bound);

    fv_tensor_shape sh;
    FV_ASSERT_OK(fv_tensor_shape_get(fv_net_input(on, 0), &sh));
    size_t nin = (size_t)sh.n * sh.h * sh.w * sh.c, n1, n2, n3;
    float *in = rand_floats(nin, -2, 2);
    float *a = outputs_of(on, in, nin, &n1), *r = outputs_of(off, in, nin, &n2);
    float *p = outputs_of(plain, in, nin, &n3);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, r, n1 * sizeof *a);
    double e = fv_test_rel_l2(p, r, n1);
    if (e > 1e-5) fail_msg("views vs unfused: rel L2 %g", e);

    fv_net_layer_error *err = calloc((size_t)ion.layers, sizeof *err);
    FV_ASSERT_OK(fv_net_create(ctx, b, NULL, &twin));
    FV_ASSERT_OK(fv_net_compare(on, twin, err, ion.layers));
    for (int i = 0; i < ion.layers; i++)
        assert_true(err[i].rel_l2 == 0.0);
    /* nothing allocated per forward */
    fv_pool_stats s0, s1;
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_DEVICE), &s0));
    for (int k = 0; k < 5; k++)
        FV_ASSERT_OK(fv_net_forward(on));
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_DEVICE), &s1));
    assert_int_equal(s0.carve_outs, s1.carve_outs);
    free(err), free(in), free(a), free(r), free(p);
    fv_net_destroy(twin);
    fv_net_destroy(on);
    fv_net_destroy(off);
    fv_net_destroy(plain);
    fv_context_destroy(ctx);
}

/* UNet: the skip (a convolution's output) and the upsample write their
 * parts of the decoder's concat. */
static void test_concat_views_unet(void **state) {
    (void)state;
    fv_test_seed(41);
    fv_net_builder *b = fv_test_net_unet(2);
    static const char *const paths[] = {"cat", "view"};
    check_views(b, 2, paths, 2);
    fv_net_builder_destroy(b);
}

/* Resize, pool, activation, affine and softmax write their slices; a
 * concat inside a concat is itself a slice; a concat that is a net output
 * hosts slices; binary and pad read slices; a net input and a tensor a
 * convolution reads are copied. */
static void test_concat_views_producers(void **state) {
    (void)state;
    fv_test_seed(42);
    fv_net_builder *b = fv_test_net_concat_mix(2);
    static const char *const paths[] = {"inner", "view", "outer", "view+copy", "cat2", "view"};
    check_views(b, 6, paths, 6);
    fv_net_builder_destroy(b);
}

/* Convolutions write their slices (F32: any channels) but for one another
 * convolution reads. */
static void test_concat_views_convs(void **state) {
    (void)state;
    fv_test_seed(43);
    fv_net_builder *b = fv_test_net_concat_convs(3);
    static const char *const paths[] = {"cat", "view+copy"};
    check_views(b, 3, paths, 2);
    fv_net_builder_destroy(b);
}

/* The small residual net's concat [pool, slice of pool]: both written in
 * place, the slice reading the pool's view. */
static void test_concat_views_small(void **state) {
    (void)state;
    small_net m;
    small_init(&m);
    fv_net_builder *b = make_small(&m, 2);
    static const char *const paths[] = {"cat", "view"};
    check_views(b, 2, paths, 2);
    fv_net_builder_destroy(b);
    small_free(&m);
}

/* ---- memory traffic ----------------------------------------------------------------- */
/* Layer name's read and written bytes (fv_net_layer_traffic). */
static void traffic_of(fv_net *net, const char *name, size_t *r, size_t *w) {
    fv_net_info info;
    FV_ASSERT_OK(fv_net_info_get(net, &info));
    for (int i = 0; i < info.layers; i++) {
        fv_net_layer_info li;
        FV_ASSERT_OK(fv_net_layer_info_get(net, i, &li));
        if (!strcmp(li.name, name)) {
            FV_ASSERT_OK(fv_net_layer_traffic(net, i, r, w));
            return;
        }
    }
    fail_msg("no layer '%s'", name);
}

/* The UNet of fv_test_nets.h (F32 on the CPU, no channel padding): each
 * layer's inputs and output; the skip's convolution and the upsample write
 * their slices of the concat, which copies nothing. A residual add fused into its convolution
 * reads both; x * x reads x once. */
static void test_layer_traffic(void **state) {
    (void)state;
    fv_test_seed(44);
    fv_context *ctx = fv_test_cpu_context(0);
    fv_net_builder *b = fv_test_net_unet(2);
    fv_net *net;
    FV_ASSERT_OK(fv_net_create(ctx, b, NULL, &net));
    const size_t px = 2 * 16 * 16 * 4, lo = 2 * 8 * 8 * 4; /* bytes per channel */
    size_t r, w;
    traffic_of(net, "enc1", &r, &w);
    assert_int_equal(r, 3 * px);
    assert_int_equal(w, 8 * px); /* its channels of the concat */
    traffic_of(net, "down", &r, &w);
    assert_int_equal(r, 8 * px);
    assert_int_equal(w, 8 * lo);
    traffic_of(net, "up", &r, &w);
    assert_int_equal(r, 12 * lo);
    assert_int_equal(w, 12 * px); /* its channels of the concat */
    traffic_of(net, "cat", &r, &w);
    assert_int_equal(r, 0); /* every part written in place */
    assert_int_equal(w, 0);
    traffic_of(net, "dec", &r, &w);
    assert_int_equal(r, 20 * px);
    assert_int_equal(w, 4 * px);
    FV_ASSERT_OK(fv_net_layer_traffic(net, 0, NULL, NULL));
    FV_ASSERT_STATUS(fv_net_layer_traffic(net, -1, &r, &w), FV_ERR_BAD_PARAM, "layer -1");
    FV_ASSERT_STATUS(fv_net_layer_traffic(NULL, 0, &r, &w), FV_ERR_BAD_PARAM, "NULL");
    fv_net_info info;
    FV_ASSERT_OK(fv_net_info_get(net, &info));
    FV_ASSERT_STATUS(fv_net_layer_traffic(net, info.layers, &r, &w), FV_ERR_BAD_PARAM, "layer");
    fv_net_destroy(net);
    fv_net_builder_destroy(b);

    /* x -> c1 -> c2 + c1 (relu, into c2) -> sq = y * y */
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, c1, c2, y, sq;
    FV_ASSERT_OK(fv_net_add_input(b, "x", 1, 4, 6, 6, &x));
    float *wt = rand_floats(4 * 4 * 9, -0.2f, 0.2f);
    fv_net_conv_desc d = {.name = "c1", .k = 4, .r = 3, .s = 3, .pad = {1, 1, 1, 1}, .weights = wt};
    FV_ASSERT_OK(fv_net_add_conv(b, &d, x, &c1));
    d.name = "c2";
    FV_ASSERT_OK(fv_net_add_conv(b, &d, c1, &c2));
    FV_ASSERT_OK(fv_net_add_binary(b, "res", FV_NET_ADD, c2, c1, FV_ACT_RELU, 0, &y));
    FV_ASSERT_OK(fv_net_add_binary(b, "sq", FV_NET_MUL, y, y, FV_ACT_IDENTITY, 0, &sq));
    FV_ASSERT_OK(fv_net_mark_output(b, sq, NULL));
    FV_ASSERT_OK(fv_net_create(ctx, b, NULL, &net));
    FV_ASSERT_OK(fv_net_info_get(net, &info));
    assert_int_equal(info.fused_add, 1);
    const size_t t = 4 * 6 * 6 * 4;
    traffic_of(net, "c2", &r, &w);
    assert_int_equal(r, 2 * t); /* c1 as input and as the residual */
    assert_int_equal(w, t);
    traffic_of(net, "sq", &r, &w);
    assert_int_equal(r, t);
    assert_int_equal(w, t);
    free(wt);
    fv_net_destroy(net);
    fv_net_builder_destroy(b);
    fv_context_destroy(ctx);
}

/* A net shares its builder's weight arrays (no 47 MB copy for a ResNet-18):
 * two nets from one builder point at the same arrays, each keeps them after
 * the builder (changed, then destroyed) and the other net are gone, and
 * computes what it computed before (ASan: no use after free, no leak). */
static void test_builder_weights_shared(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_net_builder *b = fv_test_net_unet(1);
    fv_net *n1, *n2;
    FV_ASSERT_OK(fv_net_create(ctx, b, NULL, &n1));
    FV_ASSERT_OK(fv_net_create(ctx, b, &(fv_net_desc){.flags = FV_NET_NO_FUSION}, &n2));
    int shared = 0;
    for (int i = 0; i < b->nlayers; i++)
        if (b->layers[i].w) {
            assert_ptr_equal(n1->b->layers[i].w, b->layers[i].w);
            assert_ptr_equal(n2->b->layers[i].w, b->layers[i].w);
            shared++;
        }
    assert_int_equal(shared, 3); /* enc1, enc2, dec */
    fv_tensor_shape sh;
    FV_ASSERT_OK(fv_tensor_shape_get(fv_net_input(n1, 0), &sh));
    size_t nin = (size_t)sh.n * sh.h * sh.w * sh.c, n, m;
    float *in = rand_floats(nin, -2, 2);
    float *r1 = outputs_of(n1, in, nin, &n), *r2 = outputs_of(n2, in, nin, &m);
    /* the builder grows (its arrays move), then goes */
    int out;
    FV_ASSERT_OK(fv_net_add_activation(b, "extra", b->outputs[0], FV_ACT_RELU, 0, 0, &out));
    fv_net_builder_destroy(b);
    float *a1 = outputs_of(n1, in, nin, &n);
    assert_memory_equal(a1, r1, n * sizeof *a1);
    fv_net_destroy(n1);
    float *a2 = outputs_of(n2, in, nin, &m);
    assert_memory_equal(a2, r2, m * sizeof *a2);
    fv_net_destroy(n2);
    free(in), free(r1), free(r2), free(a1), free(a2);
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_random),
        cmocka_unit_test(test_plan_chain_is_ping_pong),
        cmocka_unit_test(test_bad_builds),
        cmocka_unit_test(test_fusion_matches_unfused),
        cmocka_unit_test(test_arena_near_bound),
        cmocka_unit_test(test_concat_views_unet),
        cmocka_unit_test(test_concat_views_producers),
        cmocka_unit_test(test_concat_views_convs),
        cmocka_unit_test(test_concat_views_small),
        cmocka_unit_test(test_layer_traffic),
        cmocka_unit_test(test_builder_weights_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
