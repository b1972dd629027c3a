/* The ONNX importer's own behaviour on small composed models (onnx_build):
 * layout no-ops (NHWC transposes at the graph's edges, Flatten into an fc),
 * SiLU fusion, Clip bounds, constants along another axis than C, reduces,
 * and the helper API (inspect, op support, tensor files, layout copies).
 * Each model runs on the CPU backend against a reference computed here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"
#include "onnx_build.h"
#include "onnx_test_util.h"

static fv_context *ctx;

/* Loads m (freed), runs it on x (ONNX order, or NHWC for nhwc inputs as
 * the report says), returns output 0 (malloc'd) and the report. */
static float *run(ob_buf *m, const float *x, fv_onnx_report *rep) {
    fv_net_builder *b;
    fv_status s = fv_onnx_load_memory(m->d, m->n, NULL, NULL, &b, rep);
    ob_free(m);
    if (s != FV_OK) fail_msg("load: %s: %s", fv_status_name(s), fv_onnx_last_error());
    float *out[FV_ONNX_MAX_IO];
    const float *in[1] = {x};
    FV_ASSERT_OK(onnx_test_run(ctx, b, rep, 0, 0, in, out));
    fv_net_builder_destroy(b);
    return out[0];
}

static void graph_io(ob_buf *g, int rx, const int64_t *dx, int ry, const int64_t *dy) {
    ob_buf vi = {0};
    ob_value_info(&vi, "x", rx, dx);
    ob_msg(g, OB_INPUT, &vi);
    ob_value_info(&vi, "y", ry, dy);
    ob_msg(g, OB_OUTPUT, &vi);
}

static void init_floats(ob_buf *g, const char *name, int rank, const int64_t *dims, const float *v,
                        size_t n) {
    ob_buf t = {0};
    ob_tensor(&t, name, 1, rank, dims, v, n * sizeof(float));
    ob_msg(g, OB_INIT, &t);
}

static void nhwc_edges(void **state) {
    (void)state;
    ob_buf g = {0}, nd = {0}, m = {0};
    float w[2 * 3], x[4 * 5 * 3];
    for (int i = 0; i < 6; i++)
        w[i] = 0.25f * (float)(i - 2);
    for (int i = 0; i < 60; i++)
        x[i] = (float)(i % 7) - 3.0f;
    int64_t dw[4] = {2, 3, 1, 1}, perm_in[4] = {0, 3, 1, 2}, perm_out[4] = {0, 2, 3, 1};
    init_floats(&g, "W", 4, dw, w, 6);
    ob_node(&nd, "Transpose", "to_nchw", (const char *[]){"x"}, 1, (const char *[]){"t"}, 1);
    ob_attr_ints(&nd, "perm", perm_in, 4);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Conv", "conv", (const char *[]){"t", "W"}, 2, (const char *[]){"c"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Transpose", "to_nhwc", (const char *[]){"c"}, 1, (const char *[]){"y"}, 1);
    ob_attr_ints(&nd, "perm", perm_out, 4);
    ob_msg(&g, OB_NODE, &nd);
    int64_t dx[4] = {1, 4, 5, 3}, dy[4] = {1, 4, 5, 2};
    graph_io(&g, 4, dx, 4, dy);
    ob_model(&m, 13, &g);
    fv_onnx_report rep;
    /* onnx_test_run converts NCHW -> NHWC: give it x as the (N, C, H, W) the
     * net takes, i.e. the NHWC data reordered; compare in NHWC terms. */
    fv_net_builder *b;
    FV_ASSERT_OK(fv_onnx_load_memory(m.d, m.n, NULL, NULL, &b, &rep));
    assert_int_equal(rep.inputs[0].nhwc, 1);
    assert_int_equal(rep.outputs[0].nhwc, 1);
    assert_int_equal(rep.removed, 2);
    assert_int_equal(rep.layers, 1);
    fv_net *net;
    FV_ASSERT_OK(fv_net_create(ctx, b, NULL, &net));
    FV_ASSERT_OK(fv_net_input_upload(net, 0, x, 60)); /* ONNX's NHWC data as it is */
    FV_ASSERT_OK(fv_net_forward(net));
    float y[40];
    FV_ASSERT_OK(fv_net_output_download(net, 0, y, 40)); /* ONNX's (1, 4, 5, 2) as it is */
    for (int p = 0; p < 20; p++)
        for (int k = 0; k < 2; k++) {
            float ref = 0;
            for (int c = 0; c < 3; c++)
                ref += w[k * 3 + c] * x[p * 3 + c];
            assert_float_equal(y[p * 2 + k], ref, 1e-5);
        }
    fv_net_destroy(net);
    fv_net_builder_destroy(b);
    ob_free(&m);
}

static void flatten_into_fc(void **state) {
    (void)state;
    ob_buf g = {0}, nd = {0}, m = {0};
    float w[4 * 18], bias[4], x[18];
    for (int i = 0; i < 72; i++)
        w[i] = 0.1f * (float)((i * 5) % 9 - 4);
    for (int i = 0; i < 4; i++)
        bias[i] = (float)i;
    for (int i = 0; i < 18; i++)
        x[i] = 0.5f * (float)(i % 5) - 1.0f;
    int64_t dw[2] = {4, 18}, db[1] = {4};
    init_floats(&g, "W", 2, dw, w, 72);
    init_floats(&g, "B", 1, db, bias, 4);
    ob_node(&nd, "Flatten", "flat", (const char *[]){"x"}, 1, (const char *[]){"f"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Gemm", "fc", (const char *[]){"f", "W", "B"}, 3, (const char *[]){"y"}, 1);
    ob_attr_int(&nd, "transB", 1);
    ob_msg(&g, OB_NODE, &nd);
    int64_t dx[4] = {1, 2, 3, 3}, dy[2] = {1, 4};
    graph_io(&g, 4, dx, 2, dy);
    ob_model(&m, 13, &g);
    fv_onnx_report rep;
    float *y = run(&m, x, &rep);
    assert_int_equal(rep.layers, 1); /* the fc alone: no gather for the Flatten */
    assert_int_equal(rep.removed, 1);
    for (int k = 0; k < 4; k++) {
        float ref = bias[k];
        for (int i = 0; i < 18; i++)
            ref += w[k * 18 + i] * x[i];
        assert_float_equal(y[k], ref, 1e-4);
    }
    free(y);
}

/* y = op(x) for x (1, 3, 2, 2) through one node built by the caller. */
static float *unary_model(ob_buf *nd, ob_buf *inits, const float *x, fv_onnx_report *rep) {
    ob_buf g = {0}, m = {0};
    ob_msg(&g, OB_NODE, nd);
    if (inits) {
        ob_raw(&g, inits->d, inits->n);
        ob_free(inits);
    }
    int64_t dx[4] = {1, 3, 2, 2};
    graph_io(&g, 4, dx, 0, NULL);
    ob_model(&m, 13, &g);
    return run(&m, x, rep);
}

static void silu_and_clip(void **state) {
    (void)state;
    float x[12];
    for (int i = 0; i < 12; i++)
        x[i] = 0.7f * (float)i - 4.0f;
    ob_buf g = {0}, nd = {0}, m = {0};
    ob_node(&nd, "Sigmoid", "sig", (const char *[]){"x"}, 1, (const char *[]){"s"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Mul", "mul", (const char *[]){"s", "x"}, 2, (const char *[]){"y"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    int64_t dx[4] = {1, 3, 2, 2};
    graph_io(&g, 4, dx, 0, NULL);
    ob_model(&m, 13, &g);
    fv_onnx_report rep;
    float *y = run(&m, x, &rep);
    assert_int_equal(rep.fused, 1);
    assert_int_equal(rep.layers, 1);
    for (int i = 0; i < 12; i++)
        assert_float_equal(y[i], x[i] / (1 + expf(-x[i])), 1e-5);
    free(y);
    /* Clip with bounds as constants: [lo, hi] with lo != 0, and one-sided */
    const float bounds[][2] = {{-1.0f, 2.0f}, {-INFINITY, 1.0f}, {1.5f, INFINITY}, {3, 3}};
    for (int c = 0; c < 4; c++) {
        ob_buf in = {0}, t = {0};
        ob_tensor(&t, "lo", 1, 0, NULL, &bounds[c][0], 4);
        ob_msg(&in, OB_INIT, &t);
        ob_tensor(&t, "hi", 1, 0, NULL, &bounds[c][1], 4);
        ob_msg(&in, OB_INIT, &t);
        ob_node(&nd, "Clip", "clip", (const char *[]){"x", "lo", "hi"}, 3, (const char *[]){"y"},
                1);
        y = unary_model(&nd, &in, x, &rep);
        for (int i = 0; i < 12; i++) {
            float r = x[i] < bounds[c][0] ? bounds[c][0] : x[i];
            r = r > bounds[c][1] ? bounds[c][1] : r;
            assert_float_equal(y[i], r, 1e-5);
        }
        free(y);
    }
}

static void constant_along_h_and_reduce(void **state) {
    (void)state;
    float x[12], v[2] = {0.5f, -2.0f};
    for (int i = 0; i < 12; i++)
        x[i] = (float)i - 5.5f;
    /* x (1, 3, 2, 2) * v (2, 1): varies along H */
    ob_buf in = {0}, nd = {0};
    int64_t dv[2] = {2, 1};
    init_floats(&in, "v", 2, dv, v, 2);
    ob_node(&nd, "Mul", "mul_h", (const char *[]){"x", "v"}, 2, (const char *[]){"y"}, 1);
    fv_onnx_report rep;
    float *y = unary_model(&nd, &in, x, &rep);
    for (int i = 0; i < 12; i++)
        assert_float_equal(y[i], x[i] * v[(i / 2) % 2], 1e-6);
    free(y);
    /* ReduceMean over H, W without keepdims: (1, 3) */
    int64_t axes[2] = {2, 3};
    ob_node(&nd, "ReduceMean", "mean", (const char *[]){"x"}, 1, (const char *[]){"y"}, 1);
    ob_attr_ints(&nd, "axes", axes, 2);
    ob_attr_int(&nd, "keepdims", 0);
    y = unary_model(&nd, NULL, x, &rep);
    assert_int_equal(rep.outputs[0].rank, 2);
    for (int c = 0; c < 3; c++)
        assert_float_equal(y[c], (x[4 * c] + x[4 * c + 1] + x[4 * c + 2] + x[4 * c + 3]) / 4, 1e-5);
    free(y);
}

static int items[4];
static void count_item(fv_onnx_item kind, const char *name, const char *op, const char *domain,
                       void *user) {
    (void)name, (void)op, (void)domain, (void)user;
    items[kind]++;
}

static void helper_api(void **state) {
    (void)state;
    assert_int_equal(fv_onnx_op_support("Conv"), FV_ONNX_OP_LAYER);
    assert_int_equal(fv_onnx_op_support("Shape"), FV_ONNX_OP_CONSTANT);
    assert_int_equal(fv_onnx_op_support("Dropout"), FV_ONNX_OP_REMOVED);
    assert_int_equal(fv_onnx_op_support("LSTM"), FV_ONNX_OP_UNSUPPORTED);
    assert_int_equal(fv_onnx_op_support(NULL), FV_ONNX_OP_UNSUPPORTED);
    char dir[512], path[600];
    assert_int_equal(fv_test_temp_dir("onnx_api", dir, sizeof dir), 0);
    ob_buf m = {0};
    ob_small_model(&m);
    snprintf(path, sizeof path, "%s/small.onnx", dir);
    FILE *f = fopen(path, "wb");
    fwrite(m.d, 1, m.n, f);
    fclose(f);
    ob_free(&m);
    int64_t opset;
    FV_ASSERT_OK(fv_onnx_inspect(path, &opset, count_item, NULL));
    assert_int_equal(opset, 13);
    assert_int_equal(items[FV_ONNX_ITEM_INPUT], 1);
    assert_int_equal(items[FV_ONNX_ITEM_OUTPUT], 1);
    assert_int_equal(items[FV_ONNX_ITEM_NODE], 9);
    assert_int_equal(items[FV_ONNX_ITEM_INITIALIZER], 6);
    /* a TensorProto file, as ONNX's test data stores them */
    ob_buf t = {0};
    float v[6] = {1, -2, 3.5f, 0, 5, 6};
    int64_t d[2] = {2, 3};
    ob_tensor(&t, "x", 1, 2, d, v, sizeof v);
    snprintf(path, sizeof path, "%s/input_0.pb", dir);
    f = fopen(path, "wb");
    fwrite(t.d, 1, t.n, f);
    fclose(f);
    ob_free(&t);
    fv_onnx_tensor tr;
    FV_ASSERT_OK(fv_onnx_tensor_read(path, &tr));
    assert_string_equal(tr.name, "x");
    assert_int_equal(tr.rank, 2);
    assert_int_equal(tr.count, 6);
    assert_memory_equal(tr.data, v, sizeof v);
    fv_onnx_tensor_free(&tr);
    fv_onnx_tensor_free(NULL);
    fv_test_remove_tree(dir);
    /* layout copies */
    float a[24], bb[24], c[24];
    for (int i = 0; i < 24; i++)
        a[i] = (float)i;
    fv_onnx_nchw_to_nhwc(a, 2, 3, 2, 2, bb);
    assert_float_equal(bb[1], a[4], 0); /* (n0, h0, w0, c1) = NCHW element 4 */
    fv_onnx_nhwc_to_nchw(bb, 2, 3, 2, 2, c);
    assert_memory_equal(a, c, sizeof a);
    fv_net_builder *b = (fv_net_builder *)1;
    assert_int_equal(fv_onnx_load(NULL, NULL, &b, NULL), FV_ERR_BAD_PARAM);
    fv_onnx_options bad = {.reserved = {1}};
    assert_int_equal(fv_onnx_load_memory("x", 1, NULL, &bad, &b, NULL), FV_ERR_BAD_PARAM);
    assert_null(b);
}

int main(void) {
    ctx = fv_test_cpu_context(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nhwc_edges),    cmocka_unit_test(flatten_into_fc),
        cmocka_unit_test(silu_and_clip), cmocka_unit_test(constant_along_h_and_reduce),
        cmocka_unit_test(helper_api),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(ctx);
    return rc;
}
