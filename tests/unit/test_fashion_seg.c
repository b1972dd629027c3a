/* The trained segmentation net of apps/fovea-infer/models/fashion_seg
 * (train.py: Fashion-MNIST items over crops of the bundled photos) on its
 * held-out composites: camera-style RGB frames through fv_preprocess into
 * the net's input batch, the net, the per-pixel argmax. fovea's mean IoU
 * must equal PyTorch's (fashion_seg.txt) within 0.5 points. CPU backend by
 * default, CUDA with --gpu (77 without a GPU).
 * usage: test_fashion_seg HELDOUT_DIR [--gpu] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"
#include "fovea/onnx.h"

#define S       64
#define CLASSES 11
#define BATCH   50

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_fashion_seg HELDOUT_DIR [--gpu]\n");
        return 2;
    }
    int gpu = argc > 2 && !strcmp(argv[2], "--gpu");
    double ref = -1;
    FILE *f = fopen(FV_FASHION_SEG_DIR "/fashion_seg.txt", "r");
    if (!f || fscanf(f, "pytorch_miou %lf", &ref) != 1) {
        fprintf(stderr, "cannot read " FV_FASHION_SEG_DIR "/fashion_seg.txt\n");
        return 1;
    }
    fclose(f);
    char path[4096];
    snprintf(path, sizeof path, "%s/heldout.u8", argv[1]);
    const size_t rec = S * S * 3 + S * S;
    f = fopen(path, "rb");
    if (!f) { /* the fixture skipped: no Fashion-MNIST */
        printf("SKIP: no %s (the fixture fashion_seg_heldout writes it from Debian's "
               "dataset-fashion-mnist)\n",
               path);
        return 77;
    }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    int n = (int)(bytes / (long)rec);
    unsigned char *data = malloc((size_t)bytes);
    if (n < BATCH || !data || fread(data, 1, (size_t)bytes, f) != (size_t)bytes) {
        fprintf(stderr, "%s: %ld bytes, not whole composites\n", path, bytes);
        return 1;
    }
    fclose(f);
    n -= n % BATCH;
    /* FV_TEST_QUICK (the sanitizers): one batch, every kernel of the net
     * once; its mean IoU is printed, not compared (the reference is over all
     * the composites) */
    const int quick = fv_test_quick();
    if (quick) n = BATCH;

    fv_context *ctx = NULL;
    if (gpu) {
        ctx = fv_test_gpu_context_or_skip();
    } else {
        fv_context_desc cd = {.backend = FV_BACKEND_CPU, .device_pool_bytes = (size_t)512 << 20};
        if (fv_context_create(&cd, &ctx) != FV_OK) return 1;
    }
    fv_net_builder *b = NULL;
    fv_status s = fv_onnx_load(FV_FASHION_SEG_DIR "/fashion_seg.onnx",
                               &(fv_onnx_options){.batch = BATCH}, &b, NULL);
    if (s != FV_OK) {
        fprintf(stderr, "load: %s: %s\n", fv_status_name(s), fv_onnx_last_error());
        return 1;
    }
    fv_net *net = NULL;
    if ((s = fv_net_create(ctx, b, NULL, &net)) != FV_OK) {
        fprintf(stderr, "create: %s: %s\n", fv_status_name(s), fv_last_error());
        return 1;
    }
    fv_net_builder_destroy(b);
    if (quick) printf("net created\n");
    /* the batch's frames where the backend's kernels read them */
    fv_tensor *frames = NULL;
    fv_tensor_desc fd = {.dtype = FV_DTYPE_U8, .n = BATCH, .h = S, .w = S * 3, .c = 1};
    if (fv_tensor_create(ctx, &fd, &frames) != FV_OK) return 1;
    unsigned char *staging = malloc((size_t)BATCH * S * S * 3);
    const size_t out_n = (size_t)BATCH * S * S * CLASSES;
    float *logits = malloc(out_n * sizeof *logits);
    uint64_t inter[CLASSES] = {0}, uni[CLASSES] = {0}, right = 0;
    fv_preprocess_desc pd = {.mean = {0.5f, 0.5f, 0.5f}, .std = {0.25f, 0.25f, 0.25f}};
    for (int i0 = 0; i0 < n && s == FV_OK; i0 += BATCH) {
        for (int k = 0; k < BATCH; k++)
            memcpy(staging + (size_t)k * S * S * 3, data + (size_t)(i0 + k) * rec, S * S * 3);
        s = fv_tensor_upload(ctx, frames, staging, (size_t)BATCH * S * S * 3);
        for (int k = 0; k < BATCH && s == FV_OK; k++) {
            fv_image im = {.format = FV_PIXEL_RGB24,
                           .width = S,
                           .height = S,
                           .data = (unsigned char *)fv_tensor_data(frames) + (size_t)k * S * S * 3};
            s = fv_preprocess(ctx, &im, fv_net_input(net, 0), k, &pd);
        }
        if (s == FV_OK) s = fv_net_forward(net);
        if (s == FV_OK) s = fv_net_output_download(net, 0, logits, out_n);
        for (int k = 0; k < BATCH && s == FV_OK; k++) {
            const unsigned char *mask = data + (size_t)(i0 + k) * rec + S * S * 3;
            for (int p = 0; p < S * S; p++) {
                const float *x = logits + ((size_t)k * S * S + (size_t)p) * CLASSES;
                int best = 0;
                for (int c = 1; c < CLASSES; c++)
                    if (x[c] > x[best]) best = c;
                int want = mask[p];
                right += best == want;
                if (best == want) {
                    inter[best]++, uni[best]++;
                } else {
                    uni[best]++, uni[want]++;
                }
            }
        }
    }
    if (s != FV_OK) {
        fprintf(stderr, "run: %s: %s\n", fv_status_name(s), fv_last_error());
        return 1;
    }
    double sum = 0;
    int present = 0;
    for (int c = 0; c < CLASSES; c++)
        if (uni[c]) sum += (double)inter[c] / (double)uni[c], present++;
    double miou = sum / present, acc = (double)right / ((double)n * S * S);
    printf("fashion_seg on %s: %d held-out composites: mean IoU %.4f (PyTorch %.4f%s), pixel "
           "accuracy %.4f\n",
           gpu ? "the GPU" : "the CPU backend", n, miou, ref,
           quick ? " over all of them: not compared" : "", acc);
    int ok = quick || fabs(miou - ref) <= 0.005;
    if (!ok) fprintf(stderr, "mean IoU differs from PyTorch's by more than 0.5 points\n");
    free(logits), free(staging), free(data);
    fv_tensor_destroy(frames);
    fv_net_destroy(net);
    fv_context_destroy(ctx);
    return ok ? 0 : 1;
}
