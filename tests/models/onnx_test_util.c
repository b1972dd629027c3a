#include "onnx_test_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

float *onnx_test_read_f32(const char *path, size_t *count) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *d = malloc(n > 0 ? (size_t)n : 1);
    if (!d || fread(d, 1, (size_t)n, f) != (size_t)n || n % 4) {
        fprintf(stderr, "cannot read %s\n", path);
        free(d);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *count = (size_t)n / 4;
    return d;
}

size_t onnx_test_io_count(const fv_onnx_io *io) {
    size_t c = 1;
    for (int i = 0; i < io->rank; i++)
        c *= (size_t)io->dims[i];
    return c;
}

static void dims4(const fv_onnx_io *io, int d[4]) {
    for (int i = 0; i < 4; i++)
        d[i] = i < io->rank ? (int)io->dims[i] : 1;
}

fv_status onnx_test_run(fv_context *ctx, const fv_net_builder *b, const fv_onnx_report *rep,
                        uint32_t flags, fv_dtype dtype, const float *const *inputs,
                        float **outputs) {
    fv_net_desc nd = {.flags = flags, .dtype = dtype};
    fv_net *net = NULL;
    fv_status s = fv_net_create(ctx, b, &nd, &net);
    for (int i = 0; i < rep->output_count; i++)
        outputs[i] = NULL;
    for (int i = 0; s == FV_OK && i < rep->input_count; i++) {
        int d[4];
        dims4(&rep->inputs[i], d);
        size_t n = onnx_test_io_count(&rep->inputs[i]);
        float *t = malloc(n * sizeof(float));
        if (!t) return FV_ERR_OUT_OF_MEMORY;
        if (rep->inputs[i].nhwc)
            memcpy(t, inputs[i], n * sizeof(float));
        else
            fv_onnx_nchw_to_nhwc(inputs[i], d[0], d[1], d[2], d[3], t);
        s = fv_net_input_upload(net, i, t, n);
        free(t);
    }
    if (s == FV_OK) s = fv_net_forward(net);
    for (int i = 0; s == FV_OK && i < rep->output_count; i++) {
        int d[4];
        dims4(&rep->outputs[i], d);
        size_t n = onnx_test_io_count(&rep->outputs[i]);
        float *t = malloc(n * sizeof(float));
        outputs[i] = malloc(n * sizeof(float));
        if (!t || !outputs[i]) {
            free(t);
            s = FV_ERR_OUT_OF_MEMORY;
            break;
        }
        s = fv_net_output_download(net, i, t, n);
        if (s == FV_OK && rep->outputs[i].nhwc)
            memcpy(outputs[i], t, n * sizeof(float));
        else if (s == FV_OK)
            fv_onnx_nhwc_to_nchw(t, d[0], d[1], d[2], d[3], outputs[i]);
        free(t);
    }
    fv_net_destroy(net);
    if (s != FV_OK)
        for (int i = 0; i < rep->output_count; i++) {
            free(outputs[i]);
            outputs[i] = NULL;
        }
    return s;
}
