/* Whole nets on the CUDA backend (FP16 storage, FP32 accumulate) against
 * PyTorch FP32: ResNet-18 and MobileNetV2 (batch 1, 224x224) and the UNet
 * (batch 2, 64x64) of apps/common/net_models.c, eager and as a CUDA graph,
 * on the files tests/unit's fixture net_models_generate writes with
 * apps/common/net_models.py; relative L2 error <= 1e-2. Where a net misses,
 * fv_net_compare against the CPU FP32 backend prints the layers that lose
 * the accuracy. Exit 77 (skipped) without a usable GPU. FV_TEST_QUICK (the
 * sanitizers): the CUDA-graph net only (its create runs every layer
 * eagerly once too); FV_TEST_FILTER / FV_TEST_SKIP: cmocka's test filters
 * (e.g. "test_unet"), for one net a sanitizer run.
 *
 * The folder of the generated files: FV_NET_MODELS_DIR (compiled in), or
 * the environment variable of that name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"
#include "net_models.h"

#ifndef FV_NET_MODELS_DIR
#define FV_NET_MODELS_DIR "net_models"
#endif

#define GPU_TOL 1e-2

static fv_context *g_ctx, *g_cpu;

static fv_models_file *load(const char *name) {
    const char *e = getenv("FV_NET_MODELS_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", e && *e ? e : FV_NET_MODELS_DIR, name);
    fv_models_file *f = NULL;
    fv_status s = fv_models_file_load(path, &f);
    if (s != FV_OK)
        fail_msg("%s: %s\nthe references come from PyTorch: ctest runs "
                 "apps/common/net_models.py first (the test net_models_generate), or run\n"
                 "  /usr/bin/python3 apps/common/net_models.py --out %s",
                 fv_status_name(s), fv_last_error(), e && *e ? e : FV_NET_MODELS_DIR);
    return f;
}

/* The layers of the net built on the GPU and on the CPU (FP32) from the same
 * builder, compared layer by layer: the worst few printed. */
static void precision_report(fv_models_arch arch, const fv_models_file *w, const fv_models_file *io,
                             int n, int size, uint32_t flags) {
    fv_net_builder *b = NULL;
    fv_net *gpu = NULL, *cpu = NULL;
    fv_net_desc nd = {.flags = flags};
    if (fv_net_builder_create(&b) != FV_OK ||
        fv_models_build(b, arch, w, n, size, size, NULL) != FV_OK ||
        fv_net_create(g_ctx, b, &nd, &gpu) != FV_OK ||
        fv_net_create(g_cpu, b, &nd, &cpu) != FV_OK) {
        printf("  (no precision report: %s)\n", fv_last_error());
        goto done;
    }
    fv_models_check c;
    if (fv_models_check_io(gpu, io, &c) != FV_OK) goto done; /* loads the input */
    fv_net_info info;
    fv_net_info_get(gpu, &info);
    fv_net_layer_error *err = calloc((size_t)info.layers, sizeof *err);
    if (err && fv_net_compare(gpu, cpu, err, info.layers) == FV_OK) {
        printf("  precision report (GPU vs CPU FP32, layer by layer; first layers above %g):\n",
               GPU_TOL / 10);
        int shown = 0;
        for (int i = 0; i < info.layers && shown < 8; i++) {
            if (!(err[i].rel_l2 > GPU_TOL / 10)) continue;
            fv_net_layer_info li;
            fv_net_layer_info_get(gpu, i, &li);
            printf("    %3d %-28s %-10s %-10s rel L2 %.3g, |y| max %.3g (CPU %.3g)\n", i, li.name,
                   li.op, li.fused, err[i].rel_l2, err[i].max_abs, err[i].ref_max_abs);
            shown++;
        }
    } else {
        printf("  (fv_net_compare failed: %s)\n", fv_last_error());
    }
    free(err);
done:
    fv_net_destroy(gpu);
    fv_net_destroy(cpu);
    fv_net_builder_destroy(b);
}

static void run_net(fv_models_arch arch, int n, int size) {
    char wname[64], ioname[64];
    snprintf(wname, sizeof wname, "%s.fvw", fv_models_arch_name(arch));
    snprintf(ioname, sizeof ioname, "%s_n%d_s%d.io.fvw", fv_models_arch_name(arch), n, size);
    fv_models_file *w = load(wname), *io = load(ioname);
    const uint32_t variants[2] = {0, FV_NET_CUDA_GRAPH};
    int failed = 0;
    for (int v = fv_test_quick() ? 1 : 0; v < 2; v++) {
        fv_net *net = NULL;
        fv_net_desc nd = {.flags = variants[v]};
        FV_ASSERT_OK(fv_models_net_create(g_ctx, arch, w, n, size, size, &nd, &net, NULL));
        fv_models_check c;
        FV_ASSERT_OK(fv_models_check_io(net, io, &c));
        /* a second run: a graph replays what it captured, on new input too */
        fv_models_check c2;
        FV_ASSERT_OK(fv_models_check_io(net, io, &c2));
        fv_net_info ni;
        FV_ASSERT_OK(fv_net_info_get(net, &ni));
        printf("%-12s N=%d %dx%d %-5s: %d layers, graph %d; rel L2 %.3g (again %.3g), max |err| "
               "%.3g, |y| max %.3g\n",
               fv_models_arch_name(arch), n, size, size, v ? "graph" : "eager", ni.layers,
               ni.cuda_graph, c.rel_l2, c2.rel_l2, c.max_abs_err, c.max_abs);
        fv_net_destroy(net);
        if (!(c.rel_l2 <= GPU_TOL) || !(c2.rel_l2 <= GPU_TOL)) {
            precision_report(arch, w, io, n, size, variants[v]);
            failed = 1;
        }
    }
    fv_models_file_destroy(w);
    fv_models_file_destroy(io);
    if (failed)
        fail_msg("%s: relative L2 error against PyTorch FP32 > %g", fv_models_arch_name(arch),
                 GPU_TOL);
}

static void test_resnet18(void **state) {
    (void)state;
    run_net(FV_MODELS_RESNET18, 1, 224);
}

static void test_mobilenet_v2(void **state) {
    (void)state;
    run_net(FV_MODELS_MOBILENET_V2, 1, 224);
}

static void test_unet(void **state) {
    (void)state;
    run_net(FV_MODELS_UNET, 2, 64);
}

int main(void) {
    g_ctx = fv_test_gpu_context_or_skip();
    fv_context_desc cd = {
        .backend = FV_BACKEND_CPU, .device_pool_bytes = 512u << 20, .host_pool_bytes = 256u << 20};
    if (fv_context_create(&cd, &g_cpu) != FV_OK) {
        fprintf(stderr, "CPU context: %s\n", fv_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet18),
        cmocka_unit_test(test_mobilenet_v2),
        cmocka_unit_test(test_unet),
    };
    if (getenv("FV_TEST_FILTER")) cmocka_set_test_filter(getenv("FV_TEST_FILTER"));
    if (getenv("FV_TEST_SKIP")) cmocka_set_skip_filter(getenv("FV_TEST_SKIP"));
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(g_cpu);
    fv_context_destroy(g_ctx);
    return failed;
}
