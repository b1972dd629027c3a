#include "onnx_build.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void need(ob_buf *b, size_t more) {
    if (b->n + more <= b->cap) return;
    size_t cap = b->cap ? b->cap * 2 : 64;
    while (cap < b->n + more)
        cap *= 2;
    uint8_t *d = realloc(b->d, cap);
    if (!d) {
        fprintf(stderr, "onnx_build: out of memory\n");
        abort();
    }
    b->d = d, b->cap = cap;
}

static void raw_varint(ob_buf *b, uint64_t v) {
    need(b, 10);
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        b->d[b->n++] = c | (v ? 0x80 : 0);
    } while (v);
}

void ob_free(ob_buf *b) {
    free(b->d);
    memset(b, 0, sizeof *b);
}

void ob_varint(ob_buf *b, int field, uint64_t v) {
    raw_varint(b, (uint64_t)field << 3);
    raw_varint(b, v);
}

void ob_bytes(ob_buf *b, int field, const void *data, size_t n) {
    raw_varint(b, (uint64_t)field << 3 | 2);
    raw_varint(b, n);
    need(b, n);
    if (n) memcpy(b->d + b->n, data, n);
    b->n += n;
}

void ob_raw(ob_buf *b, const void *data, size_t n) {
    need(b, n);
    if (n) memcpy(b->d + b->n, data, n);
    b->n += n;
}

void ob_str(ob_buf *b, int field, const char *s) {
    ob_bytes(b, field, s, strlen(s));
}

void ob_fixed32(ob_buf *b, int field, const void *four) {
    raw_varint(b, (uint64_t)field << 3 | 5);
    need(b, 4);
    memcpy(b->d + b->n, four, 4);
    b->n += 4;
}

void ob_msg(ob_buf *b, int field, ob_buf *sub) {
    ob_bytes(b, field, sub->d, sub->n);
    ob_free(sub);
}

void ob_tensor(ob_buf *t, const char *name, int dtype, int rank, const int64_t *dims,
               const void *raw, size_t raw_bytes) {
    for (int i = 0; i < rank; i++)
        ob_varint(t, 1, (uint64_t)dims[i]);
    ob_varint(t, 2, (uint64_t)dtype);
    ob_str(t, 8, name);
    if (raw) ob_bytes(t, 9, raw, raw_bytes);
}

void ob_value_info(ob_buf *v, const char *name, int rank, const int64_t *dims) {
    ob_buf shape = {0}, tt = {0}, tp = {0};
    for (int i = 0; i < rank; i++) {
        ob_buf d = {0};
        if (dims[i] >= 0)
            ob_varint(&d, 1, (uint64_t)dims[i]);
        else
            ob_str(&d, 2, "n");
        ob_msg(&shape, 1, &d);
    }
    ob_varint(&tt, 1, 1);
    ob_msg(&tt, 2, &shape);
    ob_msg(&tp, 1, &tt);
    ob_str(v, 1, name);
    ob_msg(v, 2, &tp);
}

void ob_node(ob_buf *nd, const char *op, const char *name, const char *const *in, int nin,
             const char *const *out, int nout) {
    for (int i = 0; i < nin; i++)
        ob_str(nd, 1, in[i]);
    for (int i = 0; i < nout; i++)
        ob_str(nd, 2, out[i]);
    ob_str(nd, 3, name);
    ob_str(nd, 4, op);
}

void ob_attr_int(ob_buf *nd, const char *name, int64_t v) {
    ob_buf a = {0};
    ob_str(&a, 1, name);
    ob_varint(&a, 3, (uint64_t)v);
    ob_varint(&a, 20, 2);
    ob_msg(nd, 5, &a);
}

void ob_attr_float(ob_buf *nd, const char *name, float v) {
    ob_buf a = {0};
    ob_str(&a, 1, name);
    ob_fixed32(&a, 2, &v);
    ob_varint(&a, 20, 1);
    ob_msg(nd, 5, &a);
}

void ob_attr_ints(ob_buf *nd, const char *name, const int64_t *v, int n) {
    ob_buf a = {0};
    ob_str(&a, 1, name);
    for (int i = 0; i < n; i++)
        ob_varint(&a, 8, (uint64_t)v[i]);
    ob_varint(&a, 20, 7);
    ob_msg(nd, 5, &a);
}

void ob_attr_str(ob_buf *nd, const char *name, const char *s) {
    ob_buf a = {0};
    ob_str(&a, 1, name);
    ob_str(&a, 4, s);
    ob_varint(&a, 20, 3);
    ob_msg(nd, 5, &a);
}

void ob_attr_tensor(ob_buf *nd, const char *name, ob_buf *tensor) {
    ob_buf a = {0};
    ob_str(&a, 1, name);
    ob_msg(&a, 5, tensor);
    ob_varint(&a, 20, 4);
    ob_msg(nd, 5, &a);
}

void ob_model(ob_buf *m, int64_t opset, ob_buf *graph) {
    ob_buf os = {0};
    ob_varint(m, 1, 8);
    ob_str(m, 2, "fovea-test");
    ob_str(&os, 1, "");
    ob_varint(&os, 2, (uint64_t)opset);
    ob_msg(m, 8, &os);
    ob_msg(m, 7, graph);
}

void ob_small_model(ob_buf *m) {
    ob_buf g = {0}, t = {0}, nd = {0}, vi = {0};
    float w[3 * 2 * 3 * 3], bias[3], fw[4 * 108], fb[4];
    for (int i = 0; i < (int)(sizeof w / sizeof *w); i++)
        w[i] = (float)((i * 7) % 11 - 5) * 0.05f;
    for (int i = 0; i < 3; i++)
        bias[i] = 0.1f * (float)i;
    for (int i = 0; i < 4 * 108; i++)
        fw[i] = (float)((i * 5) % 13 - 6) * 0.01f;
    for (int i = 0; i < 4; i++)
        fb[i] = -0.05f * (float)i;
    int64_t dw[4] = {3, 2, 3, 3}, db[1] = {3}, dfw[2] = {4, 108}, dfb[1] = {4}, d0[1] = {1},
            zero = 0, minus1 = -1;
    ob_tensor(&t, "W", 1, 4, dw, w, sizeof w);
    ob_msg(&g, OB_INIT, &t);
    ob_tensor(&t, "B", 1, 1, db, bias, sizeof bias);
    ob_msg(&g, OB_INIT, &t);
    ob_tensor(&t, "FW", 1, 2, dfw, fw, sizeof fw);
    ob_msg(&g, OB_INIT, &t);
    ob_tensor(&t, "FB", 1, 1, dfb, fb, sizeof fb);
    ob_msg(&g, OB_INIT, &t);
    ob_tensor(&t, "zero", 7, 0, NULL, &zero, 8);
    ob_msg(&g, OB_INIT, &t);
    ob_tensor(&t, "minus1", 7, 1, d0, &minus1, 8);
    ob_msg(&g, OB_INIT, &t);
    int64_t pads[4] = {1, 1, 1, 1}, k[2] = {3, 3}, ax[1] = {0};
    ob_node(&nd, "Conv", "conv", (const char *[]){"x", "W", "B"}, 3, (const char *[]){"c"}, 1);
    ob_attr_ints(&nd, "pads", pads, 4);
    ob_attr_ints(&nd, "kernel_shape", k, 2);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Relu", "relu", (const char *[]){"c"}, 1, (const char *[]){"r"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Shape", "shape", (const char *[]){"r"}, 1, (const char *[]){"s"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Gather", "gather", (const char *[]){"s", "zero"}, 2, (const char *[]){"n"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Unsqueeze", "unsq", (const char *[]){"n", "axes"}, 2, (const char *[]){"n1"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Constant", "axes_c", NULL, 0, (const char *[]){"axes"}, 1);
    ob_tensor(&t, "axes_v", 7, 1, d0, ax, 8);
    ob_attr_tensor(&nd, "value", &t);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Concat", "cat", (const char *[]){"n1", "minus1"}, 2, (const char *[]){"shp"}, 1);
    ob_attr_int(&nd, "axis", 0);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Reshape", "reshape", (const char *[]){"r", "shp"}, 2, (const char *[]){"f"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_node(&nd, "Gemm", "fc", (const char *[]){"f", "FW", "FB"}, 3, (const char *[]){"y"}, 1);
    ob_attr_int(&nd, "transB", 1);
    ob_msg(&g, OB_NODE, &nd);
    int64_t dx[4] = {1, 2, 6, 6}, dy[2] = {1, 4};
    ob_value_info(&vi, "x", 4, dx);
    ob_msg(&g, OB_INPUT, &vi);
    ob_value_info(&vi, "y", 2, dy);
    ob_msg(&g, OB_OUTPUT, &vi);
    ob_model(m, 13, &g);
}
