/* fv_pipeline on the GPU: for both memory policies (ZERO_COPY: mapped
 * frames read in place; DEVICE: pinned staging, upload/download streams)
 * and with and without CUDA graphs, frames pushed through a ring of 3 come
 * back in order, byte-identical to fv_filter_apply on the same context, and
 * within 1 level of the CPU backend; caller-owned frames and the slot
 * buffers both work (under ZERO_COPY caller frames in the mapped pool are
 * read in place, with no copy); 2000 frames carve nothing and add no backing
 * allocation; stage times are reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

#define FRAMES 12

static fv_context *policy_context(fv_backend be, fv_memory_policy p) {
    fv_context_desc d = {.backend = be, .memory_policy = p};
    fv_context *ctx = NULL;
    fv_status s = fv_context_create(&d, &ctx);
    if (s == FV_ERR_NOT_SUPPORTED && p == FV_MEMORY_POLICY_ZERO_COPY) return NULL;
    FV_ASSERT_OK(s);
    return ctx;
}

static void counts(fv_context *ctx, uint64_t *carves, uint64_t *backing) {
    *carves = *backing = 0;
    for (int k = 0; k < 4; k++) {
        fv_pool *p = fv_context_pool(ctx, (fv_pool_kind)k);
        fv_pool_stats s;
        if (!p) continue;
        FV_ASSERT_OK(fv_pool_stats_get(p, &s));
        *carves += s.carve_outs, *backing += s.backing_allocs;
    }
}

/* Reference outputs of every frame by fv_filter_apply on ctx. */
static unsigned char *reference(fv_context *ctx, const fv_filter_desc *fd, fv_pixel_format of,
                                const unsigned char *frames, size_t in_bytes, size_t out_bytes) {
    fv_frame_buffer *in = NULL, *out = NULL;
    FV_ASSERT_OK(fv_frame_buffer_create(ctx, fd->format, fd->width, fd->height, &in));
    FV_ASSERT_OK(fv_frame_buffer_create(ctx, of, fd->width, fd->height, &out));
    fv_filter *f = NULL;
    FV_ASSERT_OK(fv_filter_create(ctx, fd, &f));
    fv_image a = fv_frame_buffer_image(in), b = fv_frame_buffer_image(out);
    unsigned char *ref = malloc(out_bytes * FRAMES);
    for (int i = 0; i < FRAMES; i++) {
        memcpy(fv_frame_buffer_data(in), frames + in_bytes * i, in_bytes);
        FV_ASSERT_OK(fv_frame_buffer_upload(ctx, in));
        FV_ASSERT_OK(fv_filter_apply(f, &a, &b));
        FV_ASSERT_OK(fv_frame_buffer_download(ctx, out));
        FV_ASSERT_OK(fv_context_synchronize(ctx));
        memcpy(ref + out_bytes * i, fv_frame_buffer_data(out), out_bytes);
    }
    fv_filter_destroy(f);
    fv_frame_buffer_destroy(in);
    fv_frame_buffer_destroy(out);
    return ref;
}

static void run(fv_memory_policy policy, int graph, int caller_frames) {
    fv_context *ctx = policy_context(FV_BACKEND_CUDA, policy);
    if (!ctx) {
        printf("  ZERO_COPY refused on this GPU: %s\n", fv_last_error());
        return;
    }
    const int w = 334, h = 201; /* YUYV: width even */
    fv_filter_desc fd = {.kind = FV_FILTER_SOBEL, .width = w, .height = h, .format = FV_PIXEL_YUYV};
    const fv_pixel_format of = FV_PIXEL_RGB24;
    size_t in_bytes = fv_image_bytes(fd.format, fd.width, h);
    size_t out_bytes = fv_image_bytes(of, fd.width, h);
    unsigned char *frames = malloc(in_bytes * FRAMES);
    fv_test_seed(77 + (uint64_t)graph);
    fv_test_fill_bytes(frames, in_bytes * FRAMES);
    unsigned char *ref = reference(ctx, &fd, of, frames, in_bytes, out_bytes);

    fv_pipeline *p = NULL;
    FV_ASSERT_OK(fv_pipeline_create(
        ctx, &(fv_pipeline_desc){.filter = &fd, .out_format = of, .cuda_graph = graph}, &p));
    fv_pipeline_info info;
    FV_ASSERT_OK(fv_pipeline_info_get(p, &info));
    assert_int_equal(info.cuda_graph, graph);
    assert_int_equal(info.overlapped, policy == FV_MEMORY_POLICY_DEVICE);
    /* caller frames: pinned host memory from the context's pool */
    fv_frame_buffer *mine[FRAMES] = {0};
    int sub = 0, got = 0;
    float filter_ms = 0;
    while (got < FRAMES) {
        fv_image in;
        if (sub < FRAMES && fv_pipeline_input(p, &in) == FV_OK) {
            if (caller_frames) {
                FV_ASSERT_OK(fv_frame_buffer_create(ctx, fd.format, fd.width, h, &mine[sub]));
                memcpy(fv_frame_buffer_data(mine[sub]), frames + in_bytes * sub, in_bytes);
                fv_frame_buffer_info fi;
                FV_ASSERT_OK(fv_frame_buffer_info_get(mine[sub], &fi));
                in = fi.host;
            } else {
                memcpy(in.data, frames + in_bytes * sub, in_bytes);
            }
            FV_ASSERT_OK(fv_pipeline_submit(p, &in, sub));
            sub++;
            continue;
        }
        fv_pipeline_frame done;
        FV_ASSERT_OK(fv_pipeline_collect(p, 1, &done));
        assert_int_equal(done.sequence, (uint64_t)got);
        assert_int_equal(done.user_time_ns, got);
        if (memcmp(done.out.data, ref + out_bytes * got, out_bytes) != 0)
            fail_msg("policy %d graph %d caller %d: frame %d differs from fv_filter_apply",
                     (int)policy, graph, caller_frames, got);
        assert_true(done.filter_ms > 0.0f && done.gpu_ms >= done.filter_ms);
        /* zero copy: caller frames in the mapped pool are read in place */
        assert_int_equal(done.in_place, caller_frames && policy == FV_MEMORY_POLICY_ZERO_COPY);
        if (policy == FV_MEMORY_POLICY_DEVICE) assert_true(done.upload_ms > 0.0f);
        filter_ms += done.filter_ms;
        got++;
    }
    printf("  policy %s graph %d caller %d: filter %.4f ms/frame (334x201 YUYV Sobel)\n",
           policy == FV_MEMORY_POLICY_DEVICE ? "DEVICE" : "ZERO_COPY", graph, caller_frames,
           (double)(filter_ms / FRAMES));
    fv_pipeline_release(p);
    for (int i = 0; i < FRAMES; i++)
        fv_frame_buffer_destroy(mine[i]);

    /* steady state: nothing carved, no backing allocation */
    uint64_t c0, b0, c1, b1;
    counts(ctx, &c0, &b0);
    const int steady = fv_test_quick() ? 64 : 2000;
    for (int i = 0; i < steady; i++) {
        fv_image in;
        while (fv_pipeline_input(p, &in) != FV_OK) {
            fv_pipeline_frame done;
            FV_ASSERT_OK(fv_pipeline_collect(p, 1, &done));
        }
        FV_ASSERT_OK(fv_pipeline_submit(p, &in, i));
    }
    fv_pipeline_frame done;
    while (fv_pipeline_collect(p, 1, &done) == FV_OK) {
    }
    counts(ctx, &c1, &b1);
    assert_int_equal(c0, c1);
    assert_int_equal(b0, b1);
    fv_pipeline_destroy(p);
    free(frames), free(ref);
    fv_context_destroy(ctx);
}

/* GPU output within 1 level of the CPU backend's. */
static void test_gpu_pipeline_vs_cpu(void **state) {
    (void)state;
    fv_context *gpu = fv_test_gpu_context_or_skip();
    fv_context *cpu = fv_test_cpu_context(0);
    fv_filter_desc fd = {.width = 640, .height = 360, .format = FV_PIXEL_RGB24};
    size_t in_bytes = fv_image_bytes(FV_PIXEL_RGB24, 640, 360), out_bytes = 640 * 360;
    unsigned char *frames = malloc(in_bytes * FRAMES);
    fv_test_seed(9);
    fv_test_fill_bytes(frames, in_bytes * FRAMES);
    fv_pipeline *pg = NULL, *pc = NULL;
    FV_ASSERT_OK(fv_pipeline_create(gpu, &(fv_pipeline_desc){.filter = &fd}, &pg));
    FV_ASSERT_OK(fv_pipeline_create(cpu, &(fv_pipeline_desc){.filter = &fd}, &pc));
    for (int i = 0; i < FRAMES; i++) {
        fv_image in = {
            .format = FV_PIXEL_RGB24, .width = 640, .height = 360, .data = frames + in_bytes * i};
        FV_ASSERT_OK(fv_pipeline_submit(pg, &in, i));
        FV_ASSERT_OK(fv_pipeline_submit(pc, &in, i));
        fv_pipeline_frame a, b;
        FV_ASSERT_OK(fv_pipeline_collect(pg, 1, &a));
        FV_ASSERT_OK(fv_pipeline_collect(pc, 1, &b));
        size_t far = 0;
        for (size_t j = 0; j < out_bytes; j++) {
            int d = (int)((unsigned char *)a.out.data)[j] - ((unsigned char *)b.out.data)[j];
            far += d > 1 || d < -1;
        }
        assert_int_equal(far, 0);
    }
    fv_pipeline_destroy(pg);
    fv_pipeline_destroy(pc);
    free(frames);
    fv_context_destroy(gpu);
    fv_context_destroy(cpu);
}

static void test_gpu_pipeline_policies(void **state) {
    (void)state;
    fv_context_destroy(fv_test_gpu_context_or_skip());
    for (int pol = 0; pol < 2; pol++)
        for (int graph = 0; graph < 2; graph++)
            for (int caller = 0; caller < 2; caller++)
                run(pol ? FV_MEMORY_POLICY_DEVICE : FV_MEMORY_POLICY_ZERO_COPY, graph, caller);
}

/* A general stage holding a net: camera 0 (RGB24) pre-processed into the
 * net (made with its own CUDA graph), the output unpacked into frame 0;
 * camera 1 (NV12) converted to RGB into frame 1; marks between the parts. With and
 * without the pipeline's graph (inside which the net's layers are captured)
 * the outputs equal the same calls made directly on the context. */
typedef struct net_stage {
    fv_context *ctx;
    fv_net *net;
    fv_tensor *rgb; /* camera 1 on its way to RGB */
    fv_preprocess_desc pd;
} net_stage;

static fv_status net_stage_run(fv_pipeline *p, void *user, int slot, const fv_image *in,
                               const fv_image *out) {
    net_stage *t = user;
    (void)slot;
    fv_image o0 = out[0], o1 = out[1];
    fv_status s = fv_preprocess(t->ctx, &in[0], fv_net_input(t->net, 0), 0, &t->pd);
    if (s == FV_OK && p) s = fv_pipeline_mark(p, 0);
    if (s == FV_OK) s = fv_net_forward(t->net);
    if (s == FV_OK && p) s = fv_pipeline_mark(p, 1);
    if (s == FV_OK) s = fv_image_unpack(t->ctx, fv_net_output(t->net, 0), &o0, NULL);
    /* camera 1: converted to RGB, as fovea-infer shows a YUV camera */
    if (s == FV_OK) s = fv_image_pack(t->ctx, &in[1], t->rgb, NULL);
    if (s == FV_OK) s = fv_image_unpack(t->ctx, t->rgb, &o1, NULL);
    return s;
}

static fv_net *small_net(fv_context *ctx) {
    fv_net_builder *b = NULL;
    FV_ASSERT_OK(fv_net_builder_create(&b));
    static float w1[8 * 3 * 3 * 3], b1[8], w2[3 * 8];
    fv_test_fill_uniform(w1, 8 * 27, -0.3f, 0.3f), fv_test_fill_uniform(b1, 8, -0.1f, 0.1f);
    fv_test_fill_uniform(w2, 24, -0.4f, 0.4f);
    int x, y, z;
    FV_ASSERT_OK(fv_net_add_input(b, "image", 1, 3, 24, 32, &x));
    FV_ASSERT_OK(fv_net_add_conv(b,
                                 &(fv_net_conv_desc){.k = 8,
                                                     .r = 3,
                                                     .s = 3,
                                                     .pad = {1, 1, 1, 1},
                                                     .weights = w1,
                                                     .bias = b1,
                                                     .activation = FV_ACT_RELU},
                                 x, &y));
    FV_ASSERT_OK(fv_net_add_conv(
        b, &(fv_net_conv_desc){.k = 3, .r = 1, .s = 1, .weights = w2, .activation = FV_ACT_SIGMOID},
        y, &z));
    FV_ASSERT_OK(fv_net_mark_output(b, z, "out"));
    fv_net *net = NULL;
    FV_ASSERT_OK(fv_net_create(ctx, b, &(fv_net_desc){.flags = FV_NET_CUDA_GRAPH}, &net));
    fv_net_builder_destroy(b);
    return net;
}

static void test_gpu_pipeline_net_stage(void **state) {
    (void)state;
    fv_context *ctx = fv_test_gpu_context_or_skip();
    net_stage t = {.ctx = ctx, .net = small_net(ctx), .pd = {.mean = {0.4f, 0.5f, 0.6f}}};
    fv_pipeline_port in[2] = {{FV_PIXEL_RGB24, 61, 47, {0}}, {FV_PIXEL_NV12, 40, 30, {0}}};
    fv_pipeline_port out[2] = {{FV_PIXEL_RGB24, 32, 24, {0}}, {FV_PIXEL_RGB24, 40, 30, {0}}};
    FV_ASSERT_OK(fv_tensor_create(
        ctx, &(fv_tensor_desc){.dtype = FV_DTYPE_F16, .h = 30, .w = 40, .c = 3}, &t.rgb));
    enum { RUNS = 6 };
    size_t ib[2] = {fv_image_bytes(FV_PIXEL_RGB24, 61, 47), fv_image_bytes(FV_PIXEL_NV12, 40, 30)};
    size_t ob[2] = {fv_image_bytes(FV_PIXEL_RGB24, 32, 24), fv_image_bytes(FV_PIXEL_RGB24, 40, 30)};
    size_t ref_at[2] = {0, ob[0] * RUNS};
    unsigned char *frames[2], *ref = malloc((ob[0] + ob[1]) * RUNS);
    fv_test_seed(5);
    for (int k = 0; k < 2; k++) {
        frames[k] = malloc(ib[k] * RUNS);
        fv_test_fill_bytes(frames[k], ib[k] * RUNS);
    }
    /* the reference: the same calls, directly */
    fv_frame_buffer *fi[2], *fo[2];
    for (int k = 0; k < 2; k++) {
        FV_ASSERT_OK(fv_frame_buffer_create(ctx, in[k].format, in[k].width, in[k].height, &fi[k]));
        FV_ASSERT_OK(
            fv_frame_buffer_create(ctx, FV_PIXEL_RGB24, out[k].width, out[k].height, &fo[k]));
    }
    for (int r = 0; r < RUNS; r++) {
        fv_image di[2], dout[2];
        for (int k = 0; k < 2; k++) {
            memcpy(fv_frame_buffer_data(fi[k]), frames[k] + ib[k] * r, ib[k]);
            FV_ASSERT_OK(fv_frame_buffer_upload(ctx, fi[k]));
            fv_frame_buffer_info a, b;
            FV_ASSERT_OK(fv_frame_buffer_info_get(fi[k], &a));
            FV_ASSERT_OK(fv_frame_buffer_info_get(fo[k], &b));
            di[k] = a.device, dout[k] = b.device;
        }
        FV_ASSERT_OK(net_stage_run(NULL, &t, 0, di, dout));
        for (int k = 0; k < 2; k++) {
            FV_ASSERT_OK(fv_frame_buffer_download(ctx, fo[k]));
            FV_ASSERT_OK(fv_context_synchronize(ctx));
            memcpy(ref + ref_at[k] + ob[k] * (size_t)r, fv_frame_buffer_data(fo[k]), ob[k]);
        }
    }
    for (int k = 0; k < 2; k++) {
        fv_frame_buffer_destroy(fi[k]);
        fv_frame_buffer_destroy(fo[k]);
    }
    for (int graph = 0; graph < 2; graph++) {
        fv_pipeline_stage st = {.run = net_stage_run,
                                .user = &t,
                                .inputs = 2,
                                .outputs = 2,
                                .input = in,
                                .output = out,
                                .marks = 2,
                                .name = "net"};
        fv_pipeline *p = NULL;
        FV_ASSERT_OK(fv_pipeline_create(
            ctx, &(fv_pipeline_desc){.stage = &st, .slots = 2, .cuda_graph = graph}, &p));
        fv_pipeline_info info;
        FV_ASSERT_OK(fv_pipeline_info_get(p, &info));
        assert_int_equal(info.cuda_graph, graph);
        int sub = 0, got = 0;
        float stage_ms = 0;
        while (got < RUNS) {
            if (sub < RUNS) {
                fv_image a = {.format = in[0].format,
                              .width = 61,
                              .height = 47,
                              .data = frames[0] + ib[0] * sub};
                fv_image b = {.format = in[1].format,
                              .width = 40,
                              .height = 30,
                              .data = frames[1] + ib[1] * sub};
                const fv_image *f[2] = {&a, &b};
                if (fv_pipeline_submit_ports(p, f, 2, sub) == FV_OK) {
                    sub++;
                    continue;
                }
            }
            fv_pipeline_frame done;
            FV_ASSERT_OK(fv_pipeline_collect(p, 1, &done));
            assert_int_equal(done.user_time_ns, got);
            for (int k = 0; k < 2; k++) {
                fv_image o;
                FV_ASSERT_OK(fv_pipeline_output(p, k, &o));
                if (memcmp(o.data, ref + ref_at[k] + ob[k] * (size_t)got, ob[k]) != 0)
                    fail_msg("graph %d run %d camera %d differs from the direct calls", graph, got,
                             k);
            }
            assert_true(done.filter_ms > 0.0f);
            float m0, m1, m2;
            FV_ASSERT_OK(fv_pipeline_mark_ms(p, 0, &m0));
            FV_ASSERT_OK(fv_pipeline_mark_ms(p, 1, &m1));
            FV_ASSERT_OK(fv_pipeline_mark_ms(p, 2, &m2));
            assert_true(m0 > 0.0f && m0 <= m1 && m1 <= m2);
            stage_ms += done.filter_ms;
            got++;
        }
        printf("  net stage, graph %d: %.4f ms a run (2 cameras, 2-layer net)\n", graph,
               (double)(stage_ms / RUNS));
        fv_pipeline_destroy(p);
    }
    free(frames[0]), free(frames[1]), free(ref);
    fv_net_destroy(t.net);
    fv_tensor_destroy(t.rgb);
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_pipeline_vs_cpu),
        cmocka_unit_test(test_gpu_pipeline_policies),
        cmocka_unit_test(test_gpu_pipeline_net_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
