/* The ONNX importer on models no exporter writes: truncated, corrupted and
 * hostile files give FV_ERR_FORMAT / FV_ERR_BAD_SHAPE / FV_ERR_NOT_SUPPORTED
 * with a message naming the node, never a crash, hang or unbounded
 * allocation (run under ASan in the sanitizer build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"
#include "onnx_build.h"
#include "onnx_test_util.h"

static fv_status load(const ob_buf *m, fv_net_builder **b) {
    return fv_onnx_load_memory(m->d, m->n, NULL, NULL, b, NULL);
}

/* Loads m and expects status want with needle in the message. */
static void expect(ob_buf *m, fv_status want, const char *needle) {
    fv_net_builder *b = (fv_net_builder *)1;
    fv_status s = load(m, &b);
    ob_free(m);
    assert_null(b);
    if (s != want || !strstr(fv_onnx_last_error(), needle))
        fail_msg("got %s \"%s\", want %s with \"%s\"", fv_status_name(s), fv_onnx_last_error(),
                 fv_status_name(want), needle);
}

static void valid_model_runs(void **state) {
    (void)state;
    ob_buf m = {0};
    ob_small_model(&m);
    fv_net_builder *b;
    fv_onnx_report rep;
    fv_status s = fv_onnx_load_memory(m.d, m.n, NULL, NULL, &b, &rep);
    ob_free(&m);
    if (s != FV_OK) fail_msg("%s: %s", fv_status_name(s), fv_onnx_last_error());
    assert_int_equal(rep.output_count, 1);
    assert_int_equal(rep.outputs[0].rank, 2);
    assert_int_equal(rep.outputs[0].dims[1], 4);
    assert_true(rep.folded >= 4); /* Constant, Shape, Gather, Unsqueeze, Concat */
    fv_context *ctx = fv_test_cpu_context(0);
    float x[72], *y[1];
    for (int i = 0; i < 72; i++)
        x[i] = (float)(i % 9) * 0.1f - 0.3f;
    const float *in[1] = {x};
    FV_ASSERT_OK(onnx_test_run(ctx, b, &rep, 0, 0, in, y));
    for (int i = 0; i < 4; i++)
        assert_true(y[0][i] == y[0][i]);
    free(y[0]);
    fv_net_builder_destroy(b);
    fv_context_destroy(ctx);
}

static void truncated(void **state) {
    (void)state;
    ob_buf m = {0};
    ob_small_model(&m);
    for (size_t len = 0; len < m.n; len++) {
        fv_net_builder *b;
        fv_status s = fv_onnx_load_memory(m.d, len, NULL, NULL, &b, NULL);
        if (s == FV_OK) fail_msg("a model cut to %zu of %zu bytes loaded", len, m.n);
        assert_true(fv_status_category_of(s) == FV_CATEGORY_IO ||
                    fv_status_category_of(s) == FV_CATEGORY_BAD_PARAM || s == FV_ERR_NOT_SUPPORTED);
        assert_true(fv_onnx_last_error()[0] != '\0');
    }
    ob_free(&m);
}

static void corrupted(void **state) {
    (void)state;
    ob_buf m = {0};
    ob_small_model(&m);
    uint8_t *copy = malloc(m.n);
    fv_test_seed(15);
    int ok = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(copy, m.d, m.n);
        int flips = 1 + (int)(fv_test_rand_u64() % 4);
        for (int f = 0; f < flips; f++)
            copy[fv_test_rand_u64() % m.n] = (uint8_t)fv_test_rand_u64();
        fv_net_builder *b;
        fv_status s = fv_onnx_load_memory(copy, m.n, NULL, NULL, &b, NULL);
        if (s == FV_OK)
            ok++, fv_net_builder_destroy(b);
        else
            assert_true(fv_onnx_last_error()[0] != '\0');
    }
    printf("corrupted: %d of 3000 still loaded\n", ok);
    free(copy);
    ob_free(&m);
}

/* A graph: x (1, 2, 4, 4) -> one node (op, attributes by the caller) -> y.
 * inits (may be NULL) holds whole initializer fields (ob_msg(.., OB_INIT, ..)). */
static void one_node_model(ob_buf *m, ob_buf *node, ob_buf *inits, int64_t opset) {
    ob_buf g = {0}, vi = {0};
    ob_msg(&g, OB_NODE, node);
    if (inits) {
        ob_raw(&g, inits->d, inits->n);
        ob_free(inits);
    }
    int64_t dx[4] = {1, 2, 4, 4};
    ob_value_info(&vi, "x", 4, dx);
    ob_msg(&g, OB_INPUT, &vi);
    ob_value_info(&vi, "y", 0, NULL);
    ob_msg(&g, OB_OUTPUT, &vi);
    ob_model(m, opset, &g);
}

static void weights(ob_buf *inits, const char *name, int rank, const int64_t *dims, size_t bytes) {
    float *w = calloc(1, bytes ? bytes : 1);
    ob_buf t = {0};
    ob_tensor(&t, name, 1, rank, dims, w, bytes);
    ob_msg(inits, OB_INIT, &t);
    free(w);
}

static void hostile_dims(void **state) {
    (void)state;
    ob_buf m = {0}, nd = {0}, in = {0};
    int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    weights(&in, "W", 2, huge, 16);
    ob_node(&nd, "Relu", "r", (const char *[]){"x"}, 1, (const char *[]){"y"}, 1);
    one_node_model(&m, &nd, &in, 13);
    expect(&m, FV_ERR_FORMAT, "initializer 'W'");

    int64_t neg[2] = {-3, 4};
    weights(&in, "W", 2, neg, 16);
    ob_node(&nd, "Relu", "r", (const char *[]){"x"}, 1, (const char *[]){"y"}, 1);
    one_node_model(&m, &nd, &in, 13);
    expect(&m, FV_ERR_FORMAT, "initializer 'W'");

    int64_t ok[4] = {3, 2, 3, 3};
    weights(&in, "W", 4, ok, 100); /* 54 floats need 216 bytes */
    ob_node(&nd, "Conv", "conv0", (const char *[]){"x", "W"}, 2, (const char *[]){"y"}, 1);
    one_node_model(&m, &nd, &in, 13);
    expect(&m, FV_ERR_FORMAT, "raw_data holds 100 bytes but dims need 216");
}

static void bad_graphs(void **state) {
    (void)state;
    ob_buf m = {0}, g = {0}, nd = {0}, vi = {0};
    /* cycle: a <- b <- a */
    ob_node(&nd, "Relu", "first", (const char *[]){"t2"}, 1, (const char *[]){"t1"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Relu", "second", (const char *[]){"t1"}, 1, (const char *[]){"t2"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Add", "out", (const char *[]){"x", "t2"}, 2, (const char *[]){"y"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    int64_t dx[4] = {1, 2, 4, 4};
    ob_value_info(&vi, "x", 4, dx);
    ob_msg(&g, OB_INPUT, &vi);
    ob_value_info(&vi, "y", 0, NULL);
    ob_msg(&g, OB_OUTPUT, &vi);
    ob_model(&m, 13, &g);
    expect(&m, FV_ERR_FORMAT, "cycle");

    ob_node(&nd, "Add", "adder", (const char *[]){"x", "nowhere"}, 2, (const char *[]){"y"}, 1);
    one_node_model(&m, &nd, NULL, 13);
    expect(&m, FV_ERR_FORMAT, "node 'adder' (Add, opset 13): input 1 'nowhere' is not defined");

    ob_node(&nd, "Frobnicate", "frob", (const char *[]){"x"}, 1, (const char *[]){"y"}, 1);
    one_node_model(&m, &nd, NULL, 13);
    expect(&m, FV_ERR_NOT_SUPPORTED, "node 'frob' (Frobnicate, opset 13): op not supported");

    ob_node(&nd, "Relu", "r", (const char *[]){"x"}, 1, (const char *[]){"y"}, 1);
    one_node_model(&m, &nd, NULL, 7);
    expect(&m, FV_ERR_NOT_SUPPORTED, "opset 7");

    /* the same output twice */
    g = (ob_buf){0};
    ob_node(&nd, "Relu", "a", (const char *[]){"x"}, 1, (const char *[]){"y"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Relu", "b", (const char *[]){"x"}, 1, (const char *[]){"y"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_value_info(&vi, "x", 4, dx);
    ob_msg(&g, OB_INPUT, &vi);
    ob_value_info(&vi, "y", 0, NULL);
    ob_msg(&g, OB_OUTPUT, &vi);
    ob_model(&m, 13, &g);
    expect(&m, FV_ERR_FORMAT, "defined twice");

    /* a symbolic dimension other than the batch */
    g = (ob_buf){0};
    int64_t sym[4] = {1, 2, -1, 4};
    ob_node(&nd, "Relu", "a", (const char *[]){"x"}, 1, (const char *[]){"y"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_value_info(&vi, "x", 4, sym);
    ob_msg(&g, OB_INPUT, &vi);
    ob_value_info(&vi, "y", 0, NULL);
    ob_msg(&g, OB_OUTPUT, &vi);
    ob_model(&m, 13, &g);
    expect(&m, FV_ERR_NOT_SUPPORTED, "dimension 2 is not fixed");

    /* garbage and emptiness */
    uint8_t junk[64];
    for (int i = 0; i < 64; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    fv_net_builder *b;
    assert_int_equal(fv_onnx_load_memory(junk, sizeof junk, NULL, NULL, &b, NULL), FV_ERR_FORMAT);
    assert_int_equal(fv_onnx_load_memory(junk, 0, NULL, NULL, &b, NULL), FV_ERR_FORMAT);
    assert_int_equal(fv_onnx_load("/nonexistent/model.onnx", NULL, &b, NULL), FV_ERR_IO);
}

static void absurd_attributes(void **state) {
    (void)state;
    ob_buf m = {0}, nd = {0}, in = {0};
    int64_t dw[4] = {3, 2, 3, 3}, big[2] = {1000000000000ll, 1}, negp[4] = {-1, 0, 0, 0};
    weights(&in, "W", 4, dw, 216);
    ob_node(&nd, "Conv", "conv_s", (const char *[]){"x", "W"}, 2, (const char *[]){"y"}, 1);
    ob_attr_ints(&nd, "strides", big, 2);
    one_node_model(&m, &nd, &in, 13);
    expect(&m, FV_ERR_FORMAT, "node 'conv_s' (Conv, opset 13): attribute 'strides'");

    weights(&in, "W", 4, dw, 216);
    ob_node(&nd, "Conv", "conv_p", (const char *[]){"x", "W"}, 2, (const char *[]){"y"}, 1);
    ob_attr_ints(&nd, "pads", negp, 4);
    one_node_model(&m, &nd, &in, 13);
    expect(&m, FV_ERR_FORMAT, "node 'conv_p' (Conv, opset 13): attribute 'pads'");

    int64_t k5[2] = {5, 5};
    weights(&in, "W", 4, dw, 216);
    ob_node(&nd, "Conv", "conv_k", (const char *[]){"x", "W"}, 2, (const char *[]){"y"}, 1);
    ob_attr_ints(&nd, "kernel_shape", k5, 2);
    one_node_model(&m, &nd, &in, 13);
    expect(&m, FV_ERR_BAD_SHAPE, "node 'conv_k' (Conv, opset 13): kernel_shape[0] = 5");

    int64_t dw4[4] = {3, 4, 3, 3};
    weights(&in, "W", 4, dw4, 432);
    ob_node(&nd, "Conv", "conv_c", (const char *[]){"x", "W"}, 2, (const char *[]){"y"}, 1);
    one_node_model(&m, &nd, &in, 13);
    expect(&m, FV_ERR_BAD_SHAPE, "node 'conv_c' (Conv, opset 13): input C=2");

    /* a constant of 2^40 elements is refused before any allocation */
    ob_buf t = {0}, g = {0}, vi = {0};
    int64_t shp[2] = {(int64_t)1 << 20, (int64_t)1 << 20}, d2[1] = {2};
    ob_tensor(&t, "s", 7, 1, d2, shp, sizeof shp);
    ob_msg(&g, OB_INIT, &t);
    ob_node(&nd, "ConstantOfShape", "cos", (const char *[]){"s"}, 1, (const char *[]){"big"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Add", "add", (const char *[]){"x", "big"}, 2, (const char *[]){"y"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    int64_t dx[4] = {1, 2, 4, 4};
    ob_value_info(&vi, "x", 4, dx);
    ob_msg(&g, OB_INPUT, &vi);
    ob_value_info(&vi, "y", 0, NULL);
    ob_msg(&g, OB_OUTPUT, &vi);
    ob_model(&m, 13, &g);
    expect(&m, FV_ERR_BAD_SHAPE, "node 'cos' (ConstantOfShape, opset 13)");

    /* Gather out of range */
    g = (ob_buf){0};
    int64_t idx = 9, d0[1] = {1};
    ob_tensor(&t, "i", 7, 1, d0, &idx, 8);
    ob_msg(&g, OB_INIT, &t);
    ob_node(&nd, "Shape", "shape", (const char *[]){"x"}, 1, (const char *[]){"s"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Gather", "gather", (const char *[]){"s", "i"}, 2, (const char *[]){"g"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Reshape", "reshape", (const char *[]){"x", "g"}, 2, (const char *[]){"y"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_value_info(&vi, "x", 4, dx);
    ob_msg(&g, OB_INPUT, &vi);
    ob_value_info(&vi, "y", 0, NULL);
    ob_msg(&g, OB_OUTPUT, &vi);
    ob_model(&m, 13, &g);
    expect(&m, FV_ERR_FORMAT, "node 'gather' (Gather, opset 13): index 9 outside 0 .. 4");
}

static size_t varint_len(size_t v) {
    size_t n = 1;
    while (v >= 0x80)
        v >>= 7, n++;
    return n;
}

static uint8_t *put_varint(uint8_t *p, size_t v) {
    while (v >= 0x80)
        *p++ = (uint8_t)(v | 0x80), v >>= 7;
    *p++ = (uint8_t)v;
    return p;
}

static void deep_nesting(void **state) {
    (void)state;
    /* graph { node { attribute { name "body", g: graph {...} }, op_type "If" } },
     * 200 000 levels (protobuf-c alone would overflow the stack), written in
     * one pass: sizes from the inside out, then bytes from the outside in */
    enum { DEPTH = 200000 };
    size_t *graph = malloc(sizeof(size_t) * (DEPTH + 1)), *node = malloc(sizeof(size_t) * DEPTH),
           *attr = malloc(sizeof(size_t) * DEPTH);
    graph[DEPTH] = 0;
    for (int l = DEPTH - 1; l >= 0; l--) {
        attr[l] = 2 + 4 + 1 + varint_len(graph[l + 1]) + graph[l + 1];
        node[l] = 1 + varint_len(attr[l]) + attr[l] + 2 + 2;
        graph[l] = 1 + varint_len(node[l]) + node[l];
    }
    uint8_t *buf = malloc(graph[0]), *p = buf;
    for (int l = 0; l < DEPTH; l++) {
        *p++ = 1 << 3 | 2, p = put_varint(p, node[l]); /* GraphProto.node */
        *p++ = 5 << 3 | 2, p = put_varint(p, attr[l]); /* NodeProto.attribute */
        *p++ = 1 << 3 | 2, *p++ = 4;                   /* AttributeProto.name */
        memcpy(p, "body", 4), p += 4;
        *p++ = 6 << 3 | 2, p = put_varint(p, graph[l + 1]); /* AttributeProto.g */
    }
    for (int l = DEPTH - 1; l >= 0; l--) {
        *p++ = 4 << 3 | 2, *p++ = 2; /* NodeProto.op_type */
        *p++ = 'I', *p++ = 'f';
    }
    assert_int_equal((size_t)(p - buf), graph[0]);
    ob_buf g = {buf, graph[0], graph[0]}, m = {0};
    ob_model(&m, 13, &g);
    expect(&m, FV_ERR_FORMAT, "nested more than");
    free(graph);
    free(node);
    free(attr);
}

static void external_data(void **state) {
    (void)state;
    char dir[512];
    assert_int_equal(fv_test_temp_dir("onnx_ext", dir, sizeof dir), 0);
    float w[54];
    for (int i = 0; i < 54; i++)
        w[i] = 0.01f * (float)i;
    char path[700];
    snprintf(path, sizeof path, "%s/w.bin", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite("pad!", 1, 4, f);
    fwrite(w, sizeof(float), 54, f);
    fclose(f);
    const char *cases[][3] = {{"w.bin", "4", NULL},
                              {"../w.bin", "4", "inside the model"},
                              {"w.bin", "100", "holds no 216 bytes"},
                              {"nope.bin", "0", "cannot open"}};
    for (int c = 0; c < 4; c++) {
        ob_buf m = {0}, nd = {0}, in = {0}, t = {0}, e = {0};
        int64_t dw[4] = {3, 2, 3, 3};
        ob_tensor(&t, "W", 1, 4, dw, NULL, 0);
        ob_str(&e, 1, "location");
        ob_str(&e, 2, cases[c][0]);
        ob_msg(&t, 13, &e);
        ob_str(&e, 1, "offset");
        ob_str(&e, 2, cases[c][1]);
        ob_msg(&t, 13, &e);
        ob_varint(&t, 14, 1);
        ob_msg(&in, OB_INIT, &t);
        ob_node(&nd, "Conv", "conv", (const char *[]){"x", "W"}, 2, (const char *[]){"y"}, 1);
        one_node_model(&m, &nd, &in, 13);
        snprintf(path, sizeof path, "%s/model.onnx", dir);
        f = fopen(path, "wb");
        fwrite(m.d, 1, m.n, f);
        fclose(f);
        ob_free(&m);
        fv_net_builder *b = NULL;
        fv_status s = fv_onnx_load(path, NULL, &b, NULL);
        if (!cases[c][2]) {
            if (s != FV_OK) fail_msg("external data: %s", fv_onnx_last_error());
            fv_net_builder_destroy(b);
        } else if (s == FV_OK || !strstr(fv_onnx_last_error(), cases[c][2])) {
            fail_msg("case %d: %s \"%s\"", c, fv_status_name(s), fv_onnx_last_error());
        }
    }
    fv_test_remove_tree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_model_runs), cmocka_unit_test(truncated),
        cmocka_unit_test(corrupted),        cmocka_unit_test(hostile_dims),
        cmocka_unit_test(bad_graphs),       cmocka_unit_test(absurd_attributes),
        cmocka_unit_test(deep_nesting),     cmocka_unit_test(external_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
