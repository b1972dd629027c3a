/* fv_net on the GPU against the CPU FP32 reference: every layer kind (each
 * in a small net of its own, random inputs and weights), a residual net with
 * every fusion, its CUDA graph against eager launches, the precision report,
 * no allocation across many inferences, and concats whose inputs are
 * written in place (strided views) against copied ones. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"
#include "fv_test_nets.h"

static fv_context *g_gpu;

static float *rnd(size_t n, float lo, float hi) {
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    fv_test_fill_uniform(x, n, lo, hi);
    return x;
}

/* Runs b on the GPU (flags) and the CPU; returns rel L2 of output 0. */
static double gpu_vs_cpu(const fv_net_builder *b, uint32_t flags) {
    fv_context *cpu = fv_test_cpu_context(0);
    fv_net *g, *c;
    FV_ASSERT_OK(fv_net_create(g_gpu, b, &(fv_net_desc){.flags = flags}, &g));
    FV_ASSERT_OK(fv_net_create(cpu, b, &(fv_net_desc){.flags = flags & FV_NET_NO_FUSION}, &c));
    fv_tensor_shape si, so;
    double worst = 0;
    for (int i = 0; i < fv_net_input_count(g); i++) {
        FV_ASSERT_OK(fv_tensor_shape_get(fv_net_input(g, i), &si));
        size_t n = (size_t)si.n * si.h * si.w * si.c;
        float *x = rnd(n, -2, 2);
        FV_ASSERT_OK(fv_net_input_upload(g, i, x, n));
        FV_ASSERT_OK(fv_net_input_upload(c, i, x, n));
        free(x);
    }
    FV_ASSERT_OK(fv_net_forward(g));
    FV_ASSERT_OK(fv_net_forward(c));
    for (int i = 0; i < fv_net_output_count(g); i++) {
        FV_ASSERT_OK(fv_tensor_shape_get(fv_net_output(g, i), &so));
        size_t n = (size_t)so.n * so.h * so.w * so.c;
        float *a = malloc(n * 4), *r = malloc(n * 4);
        for (size_t k = 0; k < n; k++)
            a[k] = NAN;
        FV_ASSERT_OK(fv_net_output_download(g, i, a, n));
        FV_ASSERT_OK(fv_net_output_download(c, i, r, n));
        double e = fv_test_rel_l2(a, r, n);
        if (e > worst) worst = e;
        free(a), free(r);
    }
    fv_net_destroy(g);
    fv_net_destroy(c);
    fv_context_destroy(cpu);
    return worst;
}

typedef void (*make_fn)(fv_net_builder *b, int x);

/* Fully connected layers: a flatten folded into an fc with ReLU and one
 * without an activation run on cuBLASLt (path "cublaslt", bias and ReLU in
 * its epilogue), one with a sigmoid as a convolution; batch 3, odd sizes,
 * against the CPU. */
static void test_fc_cublaslt(void **state) {
    (void)state;
    fv_net_builder *b;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, f, y1, y2, y3;
    FV_ASSERT_OK(fv_net_add_input(b, "x", 3, 20, 3, 5, &x));
    FV_ASSERT_OK(fv_net_add_reshape(b, "flatten", x, 3, 300, 1, 1, &f));
    float *w1 = rnd(37 * 300, -0.1f, 0.1f), *b1 = rnd(37, -1, 1);
    float *w2 = rnd(13 * 37, -0.3f, 0.3f), *b2 = rnd(13, -1, 1);
    FV_ASSERT_OK(fv_net_add_fc(b, "fc1", f, 37, w1, b1, FV_ACT_RELU, 0, &y1));
    FV_ASSERT_OK(fv_net_add_fc(b, "fc2", y1, 13, w2, b2, FV_ACT_IDENTITY, 0, &y2));
    FV_ASSERT_OK(fv_net_add_fc(b, "fc3", y1, 13, w2, NULL, FV_ACT_SIGMOID, 0, &y3));
    FV_ASSERT_OK(fv_net_mark_output(b, y2, "y2"));
    FV_ASSERT_OK(fv_net_mark_output(b, y3, "y3"));
    double e = gpu_vs_cpu(b, 0);
    printf("  fc layers: rel L2 %.2e\n", e);
    assert_true(e < 2e-3);
    fv_net *net;
    FV_ASSERT_OK(fv_net_create(g_gpu, b, NULL, &net));
    fv_net_info info;
    FV_ASSERT_OK(fv_net_info_get(net, &info));
    int lt = 0;
    for (int i = 0; i < info.layers; i++) {
        fv_net_layer_info li;
        FV_ASSERT_OK(fv_net_layer_info_get(net, i, &li));
        printf("  %-8s %-6s %-10s %s\n", li.name, li.op, li.path, li.engine);
        if (!strcmp(li.op, "fc")) {
            int want = strcmp(li.name, "fc3") != 0;
            assert_int_equal(!strcmp(li.path, "cublaslt"), want);
            lt += want;
        }
    }
    assert_int_equal(lt, 2);
    fv_net_destroy(net);
    fv_net_builder_destroy(b);
    free(w1), free(b1), free(w2), free(b2);
}

/* fv_net_desc.dtype FV_DTYPE_F32 on CUDA: a softmax over values FP16
 * cannot tell apart (10000..10003 are 8 apart in FP16) is wrong with FP16
 * storage and right with FP32 (against the CPU); pools, an add, a resize
 * and a concat run in FP32 too; a convolution in such a net is refused,
 * naming the layer. */
static void test_f32_storage(void **state) {
    (void)state;
    fv_net_builder *b;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, y, p, r, a, c, s;
    FV_ASSERT_OK(fv_net_add_input(b, "x", 1, 4, 6, 6, &x));
    FV_ASSERT_OK(fv_net_add_softmax(b, "softmax", x, &y));
    FV_ASSERT_OK(fv_net_add_pool(
        b, &(fv_net_pool_desc){.name = "pool", .r = 2, .s = 2, .stride_h = 2, .stride_w = 2}, y,
        &p));
    FV_ASSERT_OK(
        fv_net_add_resize(b, &(fv_net_resize_desc){.name = "up", .out_h = 6, .out_w = 6}, p, &r));
    FV_ASSERT_OK(fv_net_add_binary(b, "add", FV_NET_ADD, r, y, FV_ACT_IDENTITY, 0, &a));
    int parts[2] = {a, y};
    FV_ASSERT_OK(fv_net_add_concat(b, "cat", parts, 2, &c));
    FV_ASSERT_OK(fv_net_add_softmax(b, "softmax2", c, &s));
    FV_ASSERT_OK(fv_net_mark_output(b, y, "y"));
    FV_ASSERT_OK(fv_net_mark_output(b, s, "s"));
    size_t n = 4 * 36;
    float *in = malloc(n * 4), *ref = malloc(n * 4), *got = malloc(n * 4);
    fv_test_fill_uniform(in, n, -1, 1);
    for (size_t i = 0; i < n; i++) /* NHWC: channel i % 4 */
        in[i] = 10000.0f + (float)(i % 4) + 0.25f * in[i];
    fv_context *cpu = fv_test_cpu_context(0);
    fv_net *nc, *n16, *n32;
    FV_ASSERT_OK(fv_net_create(cpu, b, NULL, &nc));
    FV_ASSERT_OK(fv_net_create(g_gpu, b, NULL, &n16));
    FV_ASSERT_OK(fv_net_create(g_gpu, b, &(fv_net_desc){.dtype = FV_DTYPE_F32}, &n32));
    double err[2][2];
    for (int o = 0; o < 2; o++) {
        size_t no = o == 0 ? n : 2 * n;
        float *r2 = malloc(no * 4), *g2 = malloc(no * 4);
        FV_ASSERT_OK(fv_net_input_upload(nc, 0, in, n));
        FV_ASSERT_OK(fv_net_forward(nc));
        FV_ASSERT_OK(fv_net_output_download(nc, o, r2, no));
        fv_net *gn[2] = {n16, n32};
        for (int k = 0; k < 2; k++) {
            FV_ASSERT_OK(fv_net_input_upload(gn[k], 0, in, n));
            FV_ASSERT_OK(fv_net_forward(gn[k]));
            FV_ASSERT_OK(fv_net_output_download(gn[k], o, g2, no));
            err[o][k] = fv_test_rel_l2(g2, r2, no);
        }
        free(r2), free(g2);
    }
    printf("  softmax of 10000..10003: rel L2 %.2e with FP16 storage, %.2e with FP32\n", err[0][0],
           err[0][1]);
    printf("  whole net: rel L2 %.2e with FP16 storage, %.2e with FP32\n", err[1][0], err[1][1]);
    assert_true(err[0][0] > 0.1); /* FP16 storage cannot hold it */
    assert_true(err[0][1] < 1e-5);
    assert_true(err[1][1] < 1e-5);
    fv_net_info info;
    FV_ASSERT_OK(fv_net_info_get(n32, &info));
    fv_net_destroy(nc), fv_net_destroy(n16), fv_net_destroy(n32);
    /* a convolution in an FP32 net */
    float w[4 * 4 * 9];
    fv_test_fill_uniform(w, 4 * 4 * 9, -1, 1);
    int cv;
    FV_ASSERT_OK(fv_net_add_conv(
        b, &(fv_net_conv_desc){.name = "conv9", .k = 4, .r = 3, .s = 3, .weights = w}, x, &cv));
    FV_ASSERT_OK(fv_net_mark_output(b, cv, "cv"));
    fv_net *bad = NULL;
    FV_ASSERT_STATUS(fv_net_create(g_gpu, b, &(fv_net_desc){.dtype = FV_DTYPE_F32}, &bad),
                     FV_ERR_NOT_SUPPORTED, "conv9");
    assert_null(bad);
    FV_ASSERT_STATUS(fv_net_create(g_gpu, b, &(fv_net_desc){.dtype = FV_DTYPE_U8}, &bad),
                     FV_ERR_BAD_PARAM, "dtype");
    fv_net_builder_destroy(b);
    fv_context_destroy(cpu);
    free(in), free(ref), free(got);
}

static void one_layer(const char *what, int n, int c, int h, int w, make_fn make, double tol) {
    fv_net_builder *b;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x;
    FV_ASSERT_OK(fv_net_add_input(b, "x", n, c, h, w, &x));
    make(b, x);
    double e = gpu_vs_cpu(b, 0);
    printf("  %-28s rel L2 %.2e\n", what, e);
    if (!(e <= tol)) fail_msg("%s: GPU vs CPU rel L2 %g > %g", what, e, tol);
    fv_net_builder_destroy(b);
}

static int g_out;
static void mark(fv_net_builder *b, int t) {
    FV_ASSERT_OK(fv_net_mark_output(b, t, NULL));
    g_out = t;
}

static void conv_case(fv_net_builder *b, int x, int k, int r, int stride, int dil, int groups,
                      const int pad[4], fv_activation act) {
    int n, c, h, w, y;
    FV_ASSERT_OK(fv_net_builder_shape(b, x, &n, &c, &h, &w));
    size_t nw = (size_t)k * (c / groups) * r * r;
    float *wt = rnd(nw, -0.5f, 0.5f), *bias = rnd((size_t)k, -0.5f, 0.5f);
    fv_net_conv_desc d = {.k = k,
                          .r = r,
                          .s = r,
                          .stride_h = stride,
                          .stride_w = stride,
                          .dilation_h = dil,
                          .dilation_w = dil,
                          .groups = groups,
                          .weights = wt,
                          .bias = bias,
                          .activation = act};
    memcpy(d.pad, pad, sizeof d.pad);
    FV_ASSERT_OK(fv_net_add_conv(b, &d, x, &y));
    mark(b, y);
    free(wt), free(bias);
}

static void m_conv(fv_net_builder *b, int x) {
    conv_case(b, x, 24, 3, 1, 1, 1, (int[4]){1, 1, 1, 1}, FV_ACT_RELU);
}
static void m_conv_stride_asym(fv_net_builder *b, int x) {
    conv_case(b, x, 16, 3, 2, 1, 1, (int[4]){0, 0, 1, 1}, FV_ACT_IDENTITY);
}
static void m_depthwise(fv_net_builder *b, int x) {
    conv_case(b, x, 32, 3, 1, 1, 32, (int[4]){1, 1, 1, 1}, FV_ACT_CLIPPED_RELU);
}
static void m_grouped_dilated(fv_net_builder *b, int x) {
    conv_case(b, x, 32, 3, 1, 2, 4, (int[4]){2, 2, 2, 2}, FV_ACT_LEAKY_RELU);
}
static void m_convt(fv_net_builder *b, int x) {
    int n, c, h, w, y;
    FV_ASSERT_OK(fv_net_builder_shape(b, x, &n, &c, &h, &w));
    float *wt = rnd((size_t)c * 8 * 9, -0.5f, 0.5f), *bias = rnd(16, -0.5f, 0.5f);
    fv_net_conv_desc d = {.k = 16,
                          .r = 3,
                          .s = 3,
                          .stride_h = 2,
                          .stride_w = 2,
                          .groups = 2,
                          .pad = {1, 1, 1, 1},
                          .output_pad_h = 1,
                          .output_pad_w = 1,
                          .weights = wt,
                          .bias = bias,
                          .activation = FV_ACT_RELU};
    FV_ASSERT_OK(fv_net_add_conv_transpose(b, &d, x, &y));
    mark(b, y);
    free(wt), free(bias);
}
static void m_bn_standalone(fv_net_builder *b, int x) {
    int c, y;
    FV_ASSERT_OK(fv_net_builder_shape(b, x, NULL, &c, NULL, NULL));
    float *g = rnd((size_t)c, 0.5f, 1.5f), *be = rnd((size_t)c, -1, 1), *m = rnd((size_t)c, -1, 1),
          *v = rnd((size_t)c, 0.5f, 2);
    FV_ASSERT_OK(fv_net_add_batchnorm(b, "bn", x, g, be, m, v, 1e-5f, &y));
    mark(b, y);
    free(g), free(be), free(m), free(v);
}
static void m_acts(fv_net_builder *b, int x) {
    int y[9];
    for (int a = 0; a <= FV_ACT_SILU; a++)
        FV_ASSERT_OK(fv_net_add_activation(b, NULL, x, (fv_activation)a, 0, 0, &y[a]));
    int z;
    FV_ASSERT_OK(fv_net_add_concat(b, "all", y, 9, &z));
    mark(b, z);
}
static void m_binary(fv_net_builder *b, int x) {
    int c, s, y, z, q, t;
    FV_ASSERT_OK(fv_net_builder_shape(b, x, NULL, &c, NULL, NULL));
    FV_ASSERT_OK(fv_net_add_global_pool(b, "gap", x, 1, &s));
    FV_ASSERT_OK(fv_net_add_activation(b, "sig", s, FV_ACT_SIGMOID, 0, 0, &s));
    FV_ASSERT_OK(fv_net_add_binary(b, "se", FV_NET_MUL, x, s, FV_ACT_IDENTITY, 0, &y));
    FV_ASSERT_OK(fv_net_add_binary(b, "add", FV_NET_ADD, y, x, FV_ACT_RELU, 0, &z));
    FV_ASSERT_OK(fv_net_add_binary(b, "sub", FV_NET_SUB, z, s, FV_ACT_IDENTITY, 0, &q));
    FV_ASSERT_OK(fv_net_add_affine(b, "aff", s, NULL, (float[]){3.0f}, 1, &t));
    FV_ASSERT_OK(fv_net_add_binary(b, "div", FV_NET_DIV, q, t, FV_ACT_TANH, 0, &q));
    mark(b, q);
}
static void m_pools(fv_net_builder *b, int x) {
    int p[4], z;
    FV_ASSERT_OK(fv_net_add_pool(
        b, &(fv_net_pool_desc){.r = 3, .s = 3, .stride_h = 2, .stride_w = 2, .pad = {1, 1, 1, 1}},
        x, &p[0]));
    FV_ASSERT_OK(fv_net_add_pool(b,
                                 &(fv_net_pool_desc){.mode = FV_NET_POOL_AVG,
                                                     .r = 3,
                                                     .s = 3,
                                                     .stride_h = 2,
                                                     .stride_w = 2,
                                                     .pad = {1, 1, 1, 1}},
                                 x, &p[1]));
    FV_ASSERT_OK(fv_net_add_pool(b,
                                 &(fv_net_pool_desc){.mode = FV_NET_POOL_AVG_INCLUDE_PAD,
                                                     .r = 3,
                                                     .s = 3,
                                                     .stride_h = 2,
                                                     .stride_w = 2,
                                                     .pad = {1, 1, 1, 1}},
                                 x, &p[2]));
    FV_ASSERT_OK(fv_net_add_pool(b, &(fv_net_pool_desc){.r = 2, .s = 2, .ceil_mode = 1}, x, &p[3]));
    FV_ASSERT_OK(fv_net_add_concat(b, "cat", p, 3, &z));
    mark(b, z);
    mark(b, p[3]);
}
static void m_gpool_fc_softmax(fv_net_builder *b, int x) {
    int n, c, h, w, g, y, f, s;
    FV_ASSERT_OK(fv_net_builder_shape(b, x, &n, &c, &h, &w));
    FV_ASSERT_OK(fv_net_add_global_pool(b, "gmax", x, 0, &g));
    mark(b, g);
    float *wt = rnd((size_t)10 * c * h * w, -0.1f, 0.1f), *bias = rnd(10, -1, 1);
    FV_ASSERT_OK(fv_net_add_reshape(b, "flatten", x, n, c * h * w, 1, 1, &y));
    FV_ASSERT_OK(fv_net_add_fc(b, "fc", y, 10, wt, bias, FV_ACT_IDENTITY, 0, &f));
    FV_ASSERT_OK(fv_net_add_softmax(b, "softmax", f, &s));
    mark(b, s);
    free(wt), free(bias);
}
static void m_resize(fv_net_builder *b, int x) {
    int h, w, y[4], z;
    FV_ASSERT_OK(fv_net_builder_shape(b, x, NULL, NULL, &h, &w));
    fv_net_resize_desc d = {.mode = FV_NET_RESIZE_BILINEAR, .out_h = 2 * h, .out_w = 2 * w};
    FV_ASSERT_OK(fv_net_add_resize(b, &d, x, &y[0]));
    d.coord = FV_NET_COORD_ALIGN_CORNERS;
    FV_ASSERT_OK(fv_net_add_resize(b, &d, x, &y[1]));
    d = (fv_net_resize_desc){.mode = FV_NET_RESIZE_NEAREST,
                             .coord = FV_NET_COORD_ASYMMETRIC,
                             .out_h = 2 * h,
                             .out_w = 2 * w};
    FV_ASSERT_OK(fv_net_add_resize(b, &d, x, &y[2]));
    d.nearest = FV_NET_NEAREST_ROUND_PREFER_FLOOR, d.coord = FV_NET_COORD_HALF_PIXEL;
    FV_ASSERT_OK(fv_net_add_resize(b, &d, x, &y[3]));
    FV_ASSERT_OK(fv_net_add_concat(b, "cat", y, 4, &z));
    mark(b, z);
    d.out_h = h * 3 / 2 + 1, d.out_w = w / 2 + 1;
    FV_ASSERT_OK(fv_net_add_resize(b, &d, x, &z));
    mark(b, z);
}
static void m_routing(fv_net_builder *b, int x) {
    int n, c, h, w, s, p, r, z;
    FV_ASSERT_OK(fv_net_builder_shape(b, x, &n, &c, &h, &w));
    FV_ASSERT_OK(fv_net_add_slice(b, "slice", x, 3, c - 2, &s));
    FV_ASSERT_OK(fv_net_add_pad(b, "pad", s, (int[4]){1, 2, 0, 3}, 0.5f, &p));
    mark(b, p);
    FV_ASSERT_OK(fv_net_add_reshape(b, "reshape", x, n, c * 2, h / 2, w, &r));
    mark(b, r);
    int parts[3] = {x, s, x};
    FV_ASSERT_OK(fv_net_add_concat(b, "cat", parts, 3, &z));
    mark(b, z);
}

static void test_layers(void **state) {
    (void)state;
    fv_test_seed(21);
    one_layer("conv 3x3 + relu", 2, 16, 20, 18, m_conv, 5e-3);
    one_layer("conv stride 2, asym pad", 1, 5, 17, 15, m_conv_stride_asym, 5e-3);
    one_layer("depthwise + relu6", 2, 32, 14, 14, m_depthwise, 5e-3);
    one_layer("grouped dilated + leaky", 1, 32, 13, 11, m_grouped_dilated, 5e-3);
    one_layer("conv_transpose", 2, 12, 7, 9, m_convt, 5e-3);
    one_layer("batchnorm (standalone)", 2, 20, 6, 5, m_bn_standalone, 5e-3);
    one_layer("activations", 2, 11, 6, 7, m_acts, 5e-3);
    one_layer("binary, SE, affine", 2, 24, 9, 7, m_binary, 5e-3);
    one_layer("pools", 2, 19, 11, 13, m_pools, 5e-3);
    one_layer("gpool, flatten+fc, softmax", 2, 13, 5, 4, m_gpool_fc_softmax, 5e-3);
    one_layer("resize", 2, 10, 7, 6, m_resize, 5e-3);
    one_layer("slice, pad, reshape, concat", 2, 21, 6, 5, m_routing, 5e-3);
}

/* A residual block with BN, SE and a skip: fused on the GPU vs the CPU; the
 * CUDA graph gives the eager result bit for bit; no carve-outs per run. */
static fv_net_builder *residual(void) {
    fv_net_builder *b;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, a, c, d, s;
    FV_ASSERT_OK(fv_net_add_input(b, "x", 1, 32, 28, 28, &x));
    float *w1 = rnd(32 * 32 * 9, -0.1f, 0.1f), *w2 = rnd(32 * 32 * 9, -0.1f, 0.1f);
    float *g = rnd(32, 0.5f, 1.5f), *be = rnd(32, -1, 1), *m = rnd(32, -1, 1),
          *v = rnd(32, 0.5f, 2);
    fv_net_conv_desc d1 = {.k = 32, .r = 3, .s = 3, .pad = {1, 1, 1, 1}, .weights = w1};
    FV_ASSERT_OK(fv_net_add_conv(b, &d1, x, &a));
    FV_ASSERT_OK(fv_net_add_batchnorm(b, "bn1", a, g, be, m, v, 1e-5f, &a));
    FV_ASSERT_OK(fv_net_add_activation(b, "relu1", a, FV_ACT_RELU, 0, 0, &a));
    d1.weights = w2;
    FV_ASSERT_OK(fv_net_add_conv(b, &d1, a, &c));
    FV_ASSERT_OK(fv_net_add_batchnorm(b, "bn2", c, g, be, m, v, 1e-5f, &c));
    FV_ASSERT_OK(fv_net_add_global_pool(b, "gap", c, 1, &s));
    FV_ASSERT_OK(fv_net_add_activation(b, "hsig", s, FV_ACT_HARD_SIGMOID, 0, 0, &s));
    FV_ASSERT_OK(fv_net_add_binary(b, "se", FV_NET_MUL, c, s, FV_ACT_IDENTITY, 0, &c));
    FV_ASSERT_OK(fv_net_add_binary(b, "add", FV_NET_ADD, c, x, FV_ACT_IDENTITY, 0, &d));
    FV_ASSERT_OK(fv_net_add_activation(b, "relu2", d, FV_ACT_RELU, 0, 0, &d));
    FV_ASSERT_OK(fv_net_mark_output(b, d, "y"));
    free(w1), free(w2), free(g), free(be), free(m), free(v);
    return b;
}

static void test_residual_graph_compare(void **state) {
    (void)state;
    fv_test_seed(8);
    fv_net_builder *b = residual();
    double e = gpu_vs_cpu(b, FV_NET_CUDA_GRAPH);
    printf("  residual block (graph)       rel L2 %.2e\n", e);
    assert_true(e <= 5e-3);

    fv_net *eager, *graph;
    FV_ASSERT_OK(fv_net_create(g_gpu, b, NULL, &eager));
    FV_ASSERT_OK(fv_net_create(g_gpu, b, &(fv_net_desc){.flags = FV_NET_CUDA_GRAPH}, &graph));
    fv_net_info info;
    FV_ASSERT_OK(fv_net_info_get(graph, &info));
    assert_int_equal(info.cuda_graph, 1);
    assert_int_equal(info.fused_bn, 2);
    size_t n = 32 * 28 * 28;
    float *x = rnd(n, -1, 1), *a = malloc(n * 4), *r = malloc(n * 4);
    FV_ASSERT_OK(fv_net_input_upload(eager, 0, x, n));
    FV_ASSERT_OK(fv_net_input_upload(graph, 0, x, n));
    FV_ASSERT_OK(fv_net_forward(eager));
    fv_pool_stats s0, s1;
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(g_gpu, FV_POOL_DEVICE), &s0));
    const int runs = fv_test_quick() ? 100 : 10000; /* quick: the sanitizers */
    for (int i = 0; i < runs; i++)
        FV_ASSERT_OK(fv_net_forward(graph));
    FV_ASSERT_OK(fv_net_output_download(eager, 0, r, n));
    FV_ASSERT_OK(fv_net_output_download(graph, 0, a, n));
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(g_gpu, FV_POOL_DEVICE), &s1));
    assert_int_equal(s0.carve_outs, s1.carve_outs);
    assert_int_equal(s0.backing_allocs, s1.backing_allocs);
    assert_memory_equal(a, r, n * 4);

    /* precision report: GPU against a CPU net from the same builder */
    fv_context *cpu = fv_test_cpu_context(0);
    fv_net *ref;
    FV_ASSERT_OK(fv_net_create(cpu, b, NULL, &ref));
    fv_net_layer_error *err = calloc((size_t)info.layers, sizeof *err);
    FV_ASSERT_OK(fv_net_compare(eager, ref, err, info.layers));
    for (int i = 0; i < info.layers; i++) {
        fv_net_layer_info li;
        FV_ASSERT_OK(fv_net_layer_info_get(eager, i, &li));
        printf("  %-10s %-10s %-10s rel L2 %.2e  max |x| %.3g\n", li.name, li.op, li.path,
               err[i].rel_l2, err[i].max_abs);
        assert_true(err[i].rel_l2 <= 5e-3);
        assert_true(err[i].max_abs > 0);
    }
    float ms[32], total;
    FV_ASSERT_OK(fv_net_profile(graph, 5, ms, info.layers, &total));
    assert_true(total > 0);
    free(err), free(x), free(a), free(r);
    fv_net_destroy(ref);
    fv_context_destroy(cpu);
    fv_net_destroy(eager);
    fv_net_destroy(graph);
    fv_net_builder_destroy(b);
}

/* Runs b on the GPU with flags; all outputs, concatenated. */
static float *gpu_outputs(const fv_net_builder *b, uint32_t flags, const float *in, size_t nin,
                          size_t *count, int *elided) {
    fv_net *g;
    FV_ASSERT_OK(fv_net_create(g_gpu, b, &(fv_net_desc){.flags = flags}, &g));
    fv_net_info info;
    FV_ASSERT_OK(fv_net_info_get(g, &info));
    *elided = info.concat_elided;
    fv_test_net_check_no_overlap(g);
    FV_ASSERT_OK(fv_net_input_upload(g, 0, in, nin));
    FV_ASSERT_OK(fv_net_forward(g));
    size_t total = 0;
    fv_tensor_shape sh;
    for (int i = 0; i < fv_net_output_count(g); i++) {
        FV_ASSERT_OK(fv_tensor_shape_get(fv_net_output(g, i), &sh));
        total += (size_t)sh.n * sh.h * sh.w * sh.c;
    }
    float *out = malloc(total * sizeof *out), *at = out;
    assert_non_null(out);
    for (size_t k = 0; k < total; k++)
        out[k] = NAN;
    for (int i = 0; i < fv_net_output_count(g); i++) {
        FV_ASSERT_OK(fv_tensor_shape_get(fv_net_output(g, i), &sh));
        size_t n = (size_t)sh.n * sh.h * sh.w * sh.c;
        FV_ASSERT_OK(fv_net_output_download(g, i, at, n));
        at += n;
    }
    fv_net_destroy(g);
    *count = total;
    return out;
}

/* One net with concats: GPU (views, eager and graph; copies) against the
 * CPU; views against copies on the GPU; the precision report layer by layer
 * (it downloads every view). */
static void concat_case(const char *what, fv_net_builder *b, int elided) {
    double e = gpu_vs_cpu(b, 0), eg = gpu_vs_cpu(b, FV_NET_CUDA_GRAPH),
           ec = gpu_vs_cpu(b, FV_NET_NO_CONCAT_VIEWS);
    fv_tensor_shape sh;
    fv_net *g, *c;
    FV_ASSERT_OK(fv_net_create(g_gpu, b, NULL, &g));
    FV_ASSERT_OK(fv_tensor_shape_get(fv_net_input(g, 0), &sh));
    size_t nin = (size_t)sh.n * sh.h * sh.w * sh.c, n1, n2;
    float *in = rnd(nin, -2, 2);
    int el_on, el_off;
    float *a = gpu_outputs(b, 0, in, nin, &n1, &el_on);
    float *r = gpu_outputs(b, FV_NET_NO_CONCAT_VIEWS, in, nin, &n2, &el_off);
    assert_int_equal(n1, n2);
    double eo = fv_test_rel_l2(a, r, n1);
    printf("  %-22s elided %d: rel L2 vs CPU %.2e (graph %.2e, copies %.2e), views vs copies "
           "%.2e\n",
           what, el_on, e, eg, ec, eo);
    assert_int_equal(el_on, elided);
    assert_int_equal(el_off, 0);
    if (!(e <= 5e-3 && eg <= 5e-3 && ec <= 5e-3))
        fail_msg("%s: GPU vs CPU rel L2 %g (graph %g, copies %g)", what, e, eg, ec);
    if (!(eo <= 1e-3)) fail_msg("%s: views vs copies on the GPU: rel L2 %g", what, eo);

    fv_context *cpu = fv_test_cpu_context(0);
    FV_ASSERT_OK(fv_net_create(cpu, b, NULL, &c));
    fv_net_info info;
    FV_ASSERT_OK(fv_net_info_get(g, &info));
    FV_ASSERT_OK(fv_net_input_upload(g, 0, in, nin));
    fv_net_layer_error *err = calloc((size_t)info.layers, sizeof *err);
    FV_ASSERT_OK(fv_net_compare(g, c, err, info.layers));
    for (int i = 0; i < info.layers; i++) {
        fv_net_layer_info li;
        FV_ASSERT_OK(fv_net_layer_info_get(g, i, &li));
        if (!(err[i].rel_l2 <= 5e-3))
            fail_msg("%s: layer '%s' (%s, %s): rel L2 %g", what, li.name, li.op, li.path,
                     err[i].rel_l2);
    }
    free(err), free(in), free(a), free(r);
    fv_net_destroy(c);
    fv_net_destroy(g);
    fv_context_destroy(cpu);
}

static void test_concat_views(void **state) {
    (void)state;
    fv_test_seed(44);
    fv_net_builder *nets[3] = {fv_test_net_unet(2), fv_test_net_concat_mix(3),
                               fv_test_net_concat_convs(2)};
    concat_case("UNet", nets[0], 2);
    concat_case("resize/pool/act/...", nets[1], 6);
    concat_case("convolutions", nets[2], 1);
    for (int i = 0; i < 3; i++)
        fv_net_builder_destroy(nets[i]);
}

int main(void) {
    g_gpu = fv_test_gpu_context_or_skip();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layers),       cmocka_unit_test(test_residual_graph_compare),
        cmocka_unit_test(test_f32_storage),  cmocka_unit_test(test_fc_cublaslt),
        cmocka_unit_test(test_concat_views),
    };
    /* FV_TEST_FILTER (e.g. "test_fc*"): only the tests it matches */
    if (getenv("FV_TEST_FILTER")) cmocka_set_test_filter(getenv("FV_TEST_FILTER"));
    /* FV_TEST_SKIP: leave out the tests it matches (a sanitizer run, say) */
    if (getenv("FV_TEST_SKIP")) cmocka_set_skip_filter(getenv("FV_TEST_SKIP"));
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(g_gpu);
    return rc;
}
