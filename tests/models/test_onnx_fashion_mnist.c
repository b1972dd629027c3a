/* A model with trained weights: the small CNN of fashion_mnist/train.py
 * (committed: fashion_mnist/fashion_mnist.onnx), run by fovea on the 10 000
 * Fashion-MNIST test images (Debian dataset-fashion-mnist). fovea's
 * accuracy must equal PyTorch's (fashion_mnist/fashion_mnist.txt) within
 * 0.2 points: CPU backend by default, CUDA with --gpu (77 without a GPU).
 * Exit 77 too where the data set is not installed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "fv_test.h"
#include "onnx_test_util.h"

#define DATA "/usr/share/datasets/fashion-mnist"
#ifndef BATCH
#define BATCH 100
#endif

/* An idx file (gzip): its payload after the header; NULL on failure. */
static uint8_t *read_idx(const char *name, size_t want) {
    char path[256];
    snprintf(path, sizeof path, DATA "/%s", name);
    gzFile f = gzopen(path, "rb");
    if (!f) return NULL;
    uint8_t head[16];
    int hl = strstr(name, "images") ? 16 : 8; /* header: images 16 bytes, labels 8 */
    uint8_t *d = malloc(want);
    if (!d || gzread(f, head, (unsigned)hl) != hl || gzread(f, d, (unsigned)want) != (int)want) {
        free(d);
        d = NULL;
    }
    gzclose(f);
    return d;
}

int main(int argc, char **argv) {
    int gpu = argc > 1 && !strcmp(argv[1], "--gpu");
    FILE *f = fopen(FV_FMNIST_DIR "/fashion_mnist.txt", "r");
    double ref_acc = -1;
    if (!f || fscanf(f, "pytorch_accuracy %lf", &ref_acc) != 1) {
        fprintf(stderr, "cannot read " FV_FMNIST_DIR "/fashion_mnist.txt\n");
        return 1;
    }
    fclose(f);
    uint8_t *img = read_idx("t10k-images-idx3-ubyte.gz", 10000 * 784);
    uint8_t *lab = read_idx("t10k-labels-idx1-ubyte.gz", 10000);
    if (!img || !lab) {
        printf("SKIP: Fashion-MNIST test split not found under " DATA
               " (Debian: dataset-fashion-mnist)\n");
        return 77;
    }
    fv_context *ctx = NULL;
    if (gpu) {
        ctx = fv_test_gpu_context_or_skip();
    } else {
        fv_context_desc cd = {.backend = FV_BACKEND_CPU, .device_pool_bytes = (size_t)256 << 20};
        if (fv_context_create(&cd, &ctx) != FV_OK) return 1;
    }
    fv_onnx_options o = {.batch = BATCH};
    fv_net_builder *b;
    fv_onnx_report rep;
    fv_status s = fv_onnx_load(FV_FMNIST_DIR "/fashion_mnist.onnx", &o, &b, &rep);
    if (s != FV_OK) {
        fprintf(stderr, "load: %s: %s\n", fv_status_name(s), fv_onnx_last_error());
        return 1;
    }
    printf("fashion_mnist.onnx: %d nodes -> %d layers (folded %d, removed %d); input (%lld, 1, "
           "28, 28)\n",
           rep.nodes, rep.layers, rep.folded, rep.removed, (long long)rep.inputs[0].dims[0]);
    fv_net *net;
    if ((s = fv_net_create(ctx, b, NULL, &net)) != FV_OK) {
        fprintf(stderr, "create: %s: %s\n", fv_status_name(s), fv_last_error());
        return 1;
    }
    float *x = malloc(sizeof(float) * BATCH * 784), y[BATCH * 10];
    int correct = 0;
    for (int i0 = 0; i0 < 10000 && s == FV_OK; i0 += BATCH) {
        for (int k = 0; k < BATCH * 784; k++) /* C = 1: NCHW and NHWC agree */
            x[k] = ((float)img[(size_t)i0 * 784 + k] / 255.0f - 0.2860f) / 0.3530f;
        if ((s = fv_net_input_upload(net, 0, x, BATCH * 784)) == FV_OK &&
            (s = fv_net_forward(net)) == FV_OK)
            s = fv_net_output_download(net, 0, y, BATCH * 10);
        for (int n = 0; n < BATCH && s == FV_OK; n++) {
            int best = 0;
            for (int c = 1; c < 10; c++)
                if (y[n * 10 + c] > y[n * 10 + best]) best = c;
            correct += best == lab[i0 + n];
        }
    }
    if (s != FV_OK) {
        fprintf(stderr, "run: %s: %s\n", fv_status_name(s), fv_last_error());
        return 1;
    }
    double acc = correct / 10000.0;
    printf("%s backend: accuracy %.4f (%d of 10000); PyTorch FP32 %.4f; difference %.2f points "
           "(limit 0.2)\n",
           gpu ? "CUDA" : "CPU", acc, correct, ref_acc, 100 * fabs(acc - ref_acc));
    free(x);
    free(img);
    free(lab);
    fv_net_destroy(net);
    fv_net_builder_destroy(b);
    fv_context_destroy(ctx);
    return fabs(acc - ref_acc) <= 0.002 + 1e-9 ? 0 : 1;
}
