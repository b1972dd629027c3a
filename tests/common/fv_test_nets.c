/* Small fv_nets shared by the CPU and GPU net tests; the plan check. */
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"
#include "fv_test_nets.h"
#include "net/net_internal.h"

/* conv (k, r x r, same padding) with random weights and bias */
static int conv(fv_net_builder *b, const char *name, int x, int k, int r, fv_activation act) {
    int c, y;
    FV_ASSERT_OK(fv_net_builder_shape(b, x, NULL, &c, NULL, NULL));
    size_t nw = (size_t)k * c * r * r;
    float *w = malloc(nw * sizeof *w), *bias = malloc((size_t)k * sizeof *bias);
    assert_true(w && bias);
    fv_test_fill_uniform(w, nw, -0.3f, 0.3f);
    fv_test_fill_uniform(bias, (size_t)k, -0.2f, 0.2f);
    int p = r / 2;
    fv_net_conv_desc d = {.name = name,
                          .k = k,
                          .r = r,
                          .s = r,
                          .pad = {p, p, p, p},
                          .weights = w,
                          .bias = bias,
                          .activation = act};
    FV_ASSERT_OK(fv_net_add_conv(b, &d, x, &y));
    free(w), free(bias);
    return y;
}

static int upsample(fv_net_builder *b, const char *name, int x, int h, int w,
                    fv_net_resize_mode mode) {
    int y;
    fv_net_resize_desc d = {.name = name, .mode = mode, .out_h = h, .out_w = w};
    if (mode == FV_NET_RESIZE_NEAREST) d.coord = FV_NET_COORD_ASYMMETRIC;
    FV_ASSERT_OK(fv_net_add_resize(b, &d, x, &y));
    return y;
}

fv_net_builder *fv_test_net_unet(int n) {
    fv_net_builder *b;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, p, up, cat, y;
    FV_ASSERT_OK(fv_net_add_input(b, "x", n, 3, 16, 16, &x));
    int skip = conv(b, "enc1", x, 8, 3, FV_ACT_RELU);
    FV_ASSERT_OK(fv_net_add_pool(
        b, &(fv_net_pool_desc){.name = "down", .r = 2, .s = 2, .stride_h = 2, .stride_w = 2}, skip,
        &p));
    int d = conv(b, "enc2", p, 12, 3, FV_ACT_RELU);
    up = upsample(b, "up", d, 16, 16, FV_NET_RESIZE_NEAREST);
    FV_ASSERT_OK(fv_net_add_concat(b, "cat", (int[]){skip, up}, 2, &cat));
    y = conv(b, "dec", cat, 4, 3, FV_ACT_RELU);
    FV_ASSERT_OK(fv_net_mark_output(b, y, "y"));
    return b;
}

fv_net_builder *fv_test_net_concat_mix(int n) {
    fv_net_builder *b;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, lo, bil, avg, silu, near, inner, outer, aff, sm, cat2, prod, padded;
    FV_ASSERT_OK(fv_net_add_input(b, "x", n, 5, 8, 8, &x));
    FV_ASSERT_OK(fv_net_add_pool(
        b, &(fv_net_pool_desc){.name = "lo", .r = 2, .s = 2, .stride_h = 2, .stride_w = 2}, x,
        &lo));
    bil = upsample(b, "bilinear", lo, 8, 8, FV_NET_RESIZE_BILINEAR);
    FV_ASSERT_OK(fv_net_add_pool(b,
                                 &(fv_net_pool_desc){.name = "avg",
                                                     .mode = FV_NET_POOL_AVG,
                                                     .r = 3,
                                                     .s = 3,
                                                     .stride_h = 1,
                                                     .stride_w = 1,
                                                     .pad = {1, 1, 1, 1}},
                                 x, &avg));
    FV_ASSERT_OK(fv_net_add_activation(b, "silu", x, FV_ACT_SILU, 0, 0, &silu));
    near = upsample(b, "nearest", lo, 8, 8, FV_NET_RESIZE_NEAREST);
    FV_ASSERT_OK(fv_net_add_concat(b, "inner", (int[]){bil, avg}, 2, &inner));
    FV_ASSERT_OK(fv_net_add_concat(b, "outer", (int[]){inner, silu, x, near}, 4, &outer));
    float scale[5] = {0.5f, -1.0f, 2.0f, 1.5f, -0.25f}, shift[5] = {0.1f, 0.2f, -0.3f, 0, 1};
    FV_ASSERT_OK(fv_net_add_affine(b, "affine", lo, scale, shift, 5, &aff));
    FV_ASSERT_OK(fv_net_add_softmax(b, "softmax", lo, &sm));
    FV_ASSERT_OK(fv_net_add_concat(b, "cat2", (int[]){aff, sm}, 2, &cat2));
    /* more readers of concat inputs, all of them taking strided views */
    FV_ASSERT_OK(fv_net_add_binary(b, "prod", FV_NET_MUL, bil, avg, FV_ACT_IDENTITY, 0, &prod));
    FV_ASSERT_OK(fv_net_add_pad(b, "pad", prod, (int[4]){1, 0, 2, 1}, 0.5f, &padded));
    FV_ASSERT_OK(fv_net_mark_output(b, conv(b, "y1", outer, 6, 1, FV_ACT_IDENTITY), "y1"));
    FV_ASSERT_OK(fv_net_mark_output(b, padded, "y2"));
    FV_ASSERT_OK(fv_net_mark_output(b, conv(b, "y3", near, 3, 3, FV_ACT_RELU), "y3"));
    FV_ASSERT_OK(fv_net_mark_output(b, cat2, "cat2"));
    return b;
}

fv_net_builder *fv_test_net_concat_convs(int n) {
    fv_net_builder *b;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    int x, cat;
    FV_ASSERT_OK(fv_net_add_input(b, "x", n, 6, 7, 9, &x));
    int a = conv(b, "a", x, 8, 3, FV_ACT_IDENTITY), bb = conv(b, "b", x, 5, 1, FV_ACT_RELU);
    int d = conv(b, "d", x, 8, 3, FV_ACT_IDENTITY), c = conv(b, "c", x, 8, 3, FV_ACT_RELU);
    FV_ASSERT_OK(fv_net_add_concat(b, "cat", (int[]){a, bb, d, c}, 4, &cat));
    FV_ASSERT_OK(fv_net_mark_output(b, conv(b, "y", cat, 4, 1, FV_ACT_IDENTITY), "y"));
    FV_ASSERT_OK(fv_net_mark_output(b, conv(b, "y2", c, 3, 1, FV_ACT_IDENTITY), "y2"));
    return b;
}

/* ---- the plan check ---------------------------------------------------------------------- */
static int root(const fv__ntensor *T, int t) {
    while (T[t].host >= 0)
        t = T[t].host;
    return t;
}

/* a is b or one of the hosts b is a slice of */
static int contains(const fv__ntensor *T, int a, int b) {
    for (int t = b; t >= 0; t = T[t].host)
        if (t == a) return 1;
    return 0;
}

static int may_share(const fv__ntensor *T, int a, int b) {
    if (contains(T, a, b) || contains(T, b, a)) return 1;
    int ra = root(T, a), rb = root(T, b);
    /* one planner buffer on purpose (in place, alias); slices of one root are disjoint */
    return ra != rb && T[ra].buffer >= 0 && T[ra].buffer == T[rb].buffer;
}

/* Whether two views share a byte (pixel by pixel over a, each against
 * the pixels of b that start before it ends). */
static int overlap(const fv__view *a, const fv__view *b) {
    size_t e = a->dtype == FV_DTYPE_F32 ? 4 : 2;
    uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
    size_t pa = (size_t)a->ps * e, pb = (size_t)b->ps * e, wa = (size_t)a->cw * e,
           wb = (size_t)b->cw * e;
    size_t na = (size_t)a->n * a->h * a->w, nb = (size_t)b->n * b->h * b->w;
    uintptr_t a1 = a0 + (na - 1) * pa + wa, b1 = b0 + (nb - 1) * pb + wb;
    if (a1 <= b0 || b1 <= a0) return 0;
    for (size_t p = 0; p < na; p++) {
        uintptr_t s = a0 + p * pa, z = s + wa;
        if (z <= b0 || s >= b1) continue;
        for (size_t q = s >= b0 ? (s - b0) / pb : 0; q < nb && b0 + q * pb < z; q++)
            if (b0 + q * pb + wb > s) return 1;
    }
    return 0;
}

void fv_test_net_check_no_overlap(const fv_net *net) {
    const fv__ntensor *T = net->tensors;
    int nt = net->ntensors;
    for (int i = 0; i < net->nlayers; i++)
        for (int a = 0; a < nt; a++) {
            if (!T[a].view.data || T[a].last < i || T[a].first > i) continue;
            for (int b = 0; b < a; b++) {
                if (!T[b].view.data || T[b].last < i || T[b].first > i) continue;
                if (!may_share(T, a, b) && overlap(&T[a].view, &T[b].view))
                    fail_msg("layer %d '%s': tensors %d and %d (both alive) overlap", i,
                             net->layers[i].name, a, b);
            }
        }
}
