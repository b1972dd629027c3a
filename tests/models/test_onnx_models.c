/* Real exported networks (tests/models/export_models.py: ResNet-18,
 * MobileNetV2, a UNet, a detector head) imported from ONNX and run by fovea,
 * compared with PyTorch's FP32 outputs: CPU backend rel L2 <= 1e-4; with
 * --gpu the CUDA backend, <= 1e-2 (exit 77 where no GPU).
 *     test_onnx_models DIR [--gpu] [NAME ...]   (DIR: export_models.py's OUTDIR) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"
#include "onnx_test_util.h"

static const char *dir;
static fv_context *ctx;
static double tolerance;

static void check_model(void **state) {
    const char *name = *state;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    fv_net_builder *b = NULL;
    fv_onnx_report rep;
    fv_status s = fv_onnx_load(path, NULL, &b, &rep);
    if (s != FV_OK) fail_msg("%s: %s: %s", name, fv_status_name(s), fv_onnx_last_error());
    assert_int_equal(rep.input_count, 1);
    printf("%s: %d nodes -> %d layers (folded %d, removed %d, fused %d), %.1f MB weights\n", name,
           rep.nodes, rep.layers, rep.folded, rep.removed, rep.fused, rep.weight_bytes / 1e6);
    size_t n;
    snprintf(path, sizeof path, "%s/%s.in.f32", dir, name);
    float *in = onnx_test_read_f32(path, &n), *out[FV_ONNX_MAX_IO];
    assert_non_null(in);
    assert_int_equal(n, onnx_test_io_count(&rep.inputs[0]));
    const float *ins[1] = {in};
    FV_ASSERT_OK(onnx_test_run(ctx, b, &rep, 0, 0, ins, out));
    for (int i = 0; i < rep.output_count; i++) {
        snprintf(path, sizeof path, "%s/%s.out%d.f32", dir, name, i);
        float *ref = onnx_test_read_f32(path, &n);
        assert_non_null(ref);
        assert_int_equal(n, onnx_test_io_count(&rep.outputs[i]));
        double e = fv_test_rel_l2(out[i], ref, n);
        printf("  output %d '%s' (%zu values): rel L2 %.3g (limit %.0e)\n", i, rep.outputs[i].name,
               n, e, tolerance);
        if (!(e <= tolerance)) fail_msg("%s output %d: rel L2 %g > %g", name, i, e, tolerance);
        free(ref);
        free(out[i]);
    }
    free(in);
    fv_net_builder_destroy(b);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [--gpu] [NAME ...]\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    int gpu = argc > 2 && !strcmp(argv[2], "--gpu");
    static const char *all[] = {"resnet18", "mobilenet_v2", "unet", "detector"};
    const char **names = (const char **)argv + 2 + gpu;
    int count = argc - 2 - gpu;
    if (count == 0) names = all, count = 4;
    if (gpu) {
        ctx = fv_test_gpu_context_or_skip();
        tolerance = 1e-2;
    } else {
        fv_context_desc d = {.backend = FV_BACKEND_CPU, .device_pool_bytes = (size_t)512 << 20};
        if (fv_context_create(&d, &ctx) != FV_OK) {
            fprintf(stderr, "CPU context: %s\n", fv_last_error());
            return 1;
        }
        tolerance = 1e-4;
    }
    struct CMUnitTest *tests = calloc((size_t)count, sizeof *tests);
    for (int i = 0; i < count; i++)
        tests[i] = (struct CMUnitTest){names[i], check_model, NULL, NULL, (void *)names[i]};
    int rc = _cmocka_run_group_tests(gpu ? "onnx_models_gpu" : "onnx_models_cpu", tests,
                                     (size_t)count, NULL, NULL);
    free(tests);
    fv_context_destroy(ctx);
    return rc;
}
