/* Several contexts on one GPU, each in its own thread (cuDNN's rule: a handle
 * per device per thread; fovea's context owns it): every thread creates its
 * context, a convolution and a residual net, runs them many times and gets
 * the bytes a single-threaded run got; a thread that destroys its context
 * early leaves the others running; two threads misusing one context get
 * each call done or refused (FV_ERR_BAD_STATE), never mixed results; a
 * device index that does not exist is refused naming the count. With two
 * or more GPUs (skipped with fewer): a context on every device, each in its
 * own thread at once, gets device 0's bytes for the same frames and nets,
 * and one device's context destroyed early leaves the others running. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

enum { H = 48, W = 40, C = 32, K = 32, THREADS = 3, ITERS = 200 };
enum { FW = 96, FH = 64, MAX_DEVICES = 16 }; /* the filter's RGB24 frame */

static float *g_x, *g_w, *g_b, *g_w2, *g_fc; /* shared read-only inputs */
static unsigned char *g_frame;               /* FW x FH RGB24, random */

/* The shared read-only inputs, random (seeded). */
static void make_inputs(unsigned seed) {
    fv_test_seed(seed);
    g_x = malloc(sizeof(float) * H * W * C);
    g_w = malloc(sizeof(float) * K * C * 9);
    g_w2 = malloc(sizeof(float) * K * K * 9);
    g_fc = malloc(sizeof(float) * 10 * K);
    g_b = malloc(sizeof(float) * K);
    g_frame = malloc((size_t)FW * FH * 3);
    fv_test_fill_bytes(g_frame, (size_t)FW * FH * 3);
    fv_test_fill_uniform(g_x, (size_t)H * W * C, -1, 1);
    fv_test_fill_uniform(g_w, (size_t)K * C * 9, -0.2f, 0.2f);
    fv_test_fill_uniform(g_w2, (size_t)K * K * 9, -0.2f, 0.2f);
    fv_test_fill_uniform(g_fc, (size_t)10 * K, -0.5f, 0.5f);
    fv_test_fill_uniform(g_b, K, -0.5f, 0.5f);
}

static void free_inputs(void) {
    free(g_x), free(g_w), free(g_w2), free(g_fc), free(g_b), free(g_frame);
}

/* The convolution both tests run: 3 x 3, bias, ReLU. */
static fv_conv2d_desc conv_desc(void) {
    return (fv_conv2d_desc){.h = H,
                            .w = W,
                            .c = C,
                            .k = K,
                            .r = 3,
                            .s = 3,
                            .pad_h = 1,
                            .pad_w = 1,
                            .activation = FV_ACT_RELU,
                            .weights = g_w,
                            .bias = g_b};
}

/* conv 3x3 + ReLU -> conv 3x3 + residual add + ReLU -> global pool -> fc.
 * Statuses, not asserts: it runs in the worker threads. */
static fv_status make_net(fv_net_builder **out) {
    fv_net_builder *b = NULL;
    int x, a, c, p, y;
    fv_status s = fv_net_builder_create(&b);
    if (s == FV_OK) s = fv_net_add_input(b, "x", 1, C, H, W, &x);
    if (s == FV_OK)
        s = fv_net_add_conv(b,
                            &(fv_net_conv_desc){.name = "c1",
                                                .k = K,
                                                .r = 3,
                                                .s = 3,
                                                .pad = {1, 1, 1, 1},
                                                .weights = g_w,
                                                .bias = g_b,
                                                .activation = FV_ACT_RELU},
                            x, &a);
    if (s == FV_OK)
        s = fv_net_add_conv(
            b,
            &(fv_net_conv_desc){
                .name = "c2", .k = K, .r = 3, .s = 3, .pad = {1, 1, 1, 1}, .weights = g_w2},
            a, &c);
    if (s == FV_OK) s = fv_net_add_binary(b, "add", FV_NET_ADD, c, x, FV_ACT_RELU, 0, &c);
    if (s == FV_OK) s = fv_net_add_global_pool(b, "gap", c, 1, &p);
    if (s == FV_OK) s = fv_net_add_fc(b, "fc", p, 10, g_fc, g_b, FV_ACT_IDENTITY, 0, &y);
    if (s == FV_OK) s = fv_net_mark_output(b, y, "y");
    if (s != FV_OK) fv_net_builder_destroy(b), b = NULL;
    *out = b;
    return s;
}

typedef struct job {
    int device; /* CUDA device index */
    int iters;
    int ok;               /* every result equal to the reference */
    char err[256];        /* the first failure */
    fv_half *conv;        /* last conv output, H x W x K */
    float net[10];        /* last net output */
    unsigned char *edges; /* last filter output, FW x FH GRAY8 */
} job;

/* One thread's work on its own context. Failures are recorded, not
 * asserted: cmocka's asserts belong to the main thread. */
static void *work(void *arg) {
    job *j = arg;
    fv_context *ctx = NULL;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA, .device = j->device};
    fv_conv2d *op = NULL;
    fv_tensor *tx = NULL, *ty = NULL;
    fv_net_builder *b = NULL;
    fv_net *net = NULL;
    fv_filter *flt = NULL;
    fv_frame_buffer *fin = NULL, *fout = NULL;
    fv_half *hx = malloc(sizeof(fv_half) * H * W * C);
    j->conv = malloc(sizeof(fv_half) * H * W * K);
    j->edges = malloc((size_t)FW * FH);
    fv_status s = fv_context_create(&cd, &ctx);
    fv_conv2d_desc d = conv_desc();
    if (s == FV_OK) s = fv_conv2d_create(ctx, &d, &op);
    fv_tensor_desc td = {.h = H, .w = W, .c = C};
    if (s == FV_OK) s = fv_tensor_create(ctx, &td, &tx);
    td.c = K;
    if (s == FV_OK) s = fv_tensor_create(ctx, &td, &ty);
    if (s == FV_OK) {
        fv_f32_to_f16_n(g_x, hx, (size_t)H * W * C);
        s = fv_tensor_upload(ctx, tx, hx, sizeof(fv_half) * H * W * C);
    }
    if (s == FV_OK) s = make_net(&b);
    if (s == FV_OK) s = fv_net_create(ctx, b, &(fv_net_desc){.flags = FV_NET_CUDA_GRAPH}, &net);
    if (s == FV_OK) s = fv_net_input_upload(net, 0, g_x, (size_t)H * W * C);
    /* a frame through the edge filter (Laplacian, RGB24 -> GRAY8) */
    fv_filter_desc fd = {.width = FW, .height = FH, .format = FV_PIXEL_RGB24};
    if (s == FV_OK) s = fv_filter_create(ctx, &fd, &flt);
    if (s == FV_OK) s = fv_frame_buffer_create(ctx, FV_PIXEL_RGB24, FW, FH, &fin);
    if (s == FV_OK) s = fv_frame_buffer_create(ctx, FV_PIXEL_GRAY8, FW, FH, &fout);
    if (s == FV_OK) {
        memcpy(fv_frame_buffer_data(fin), g_frame, (size_t)FW * FH * 3);
        s = fv_frame_buffer_upload(ctx, fin);
    }
    fv_image fa = fv_frame_buffer_image(fin), fb = fv_frame_buffer_image(fout);
    for (int i = 0; s == FV_OK && i < j->iters; i++) {
        s = fv_conv2d_forward(op, tx, ty);
        if (s == FV_OK) s = fv_net_forward(net);
        if (s == FV_OK) s = fv_filter_apply(flt, &fa, &fb);
    }
    if (s == FV_OK) s = fv_tensor_download(ctx, ty, j->conv, sizeof(fv_half) * H * W * K);
    if (s == FV_OK) s = fv_net_output_download(net, 0, j->net, 10);
    if (s == FV_OK) s = fv_frame_buffer_download(ctx, fout);
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    if (s == FV_OK) memcpy(j->edges, fv_frame_buffer_data(fout), (size_t)FW * FH);
    if (s != FV_OK)
        snprintf(j->err, sizeof j->err, "device %d: %s: %s", j->device, fv_status_name(s),
                 fv_last_error());
    j->ok = s == FV_OK;
    fv_frame_buffer_destroy(fin), fv_frame_buffer_destroy(fout);
    fv_filter_destroy(flt);
    fv_net_destroy(net);
    fv_net_builder_destroy(b);
    fv_tensor_destroy(tx), fv_tensor_destroy(ty);
    fv_conv2d_destroy(op);
    if (ctx && fv_context_destroy(ctx) != FV_OK && j->ok) {
        snprintf(j->err, sizeof j->err, "context destroy: %s", fv_last_error());
        j->ok = 0;
    }
    free(hx);
    return NULL;
}

/* Runs jobs[0..n-1] in a thread each, at once, and checks each against
 * ref byte for byte (what: "thread" or "device", for messages); frees
 * their outputs. */
static void run_and_compare(job *jobs, int n, const job *ref, const char *what) {
    pthread_t th[MAX_DEVICES];
    for (int t = 0; t < n; t++)
        assert_int_equal(pthread_create(&th[t], NULL, work, &jobs[t]), 0);
    for (int t = 0; t < n; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    for (int t = 0; t < n; t++) {
        const job *j = &jobs[t];
        if (!j->ok) fail_msg("%s %d: %s", what, t, j->err);
        if (memcmp(j->conv, ref->conv, sizeof(fv_half) * H * W * K) != 0)
            fail_msg("%s %d: the convolution's bytes differ from the lone run's", what, t);
        if (memcmp(j->net, ref->net, sizeof ref->net) != 0)
            fail_msg("%s %d: the net's output differs from the lone run's", what, t);
        if (memcmp(j->edges, ref->edges, (size_t)FW * FH) != 0)
            fail_msg("%s %d: the filter's bytes differ from the lone run's", what, t);
        free(j->conv), free(j->edges);
    }
}

static void contexts_in_threads_match_one_thread(void **state) {
    (void)state;
    make_inputs(1234);
    /* the reference: one thread alone */
    job ref = {.iters = 3};
    work(&ref);
    if (!ref.ok) fail_msg("single thread: %s", ref.err);
    /* THREADS at once; the first stops (and destroys its context) early */
    job jobs[THREADS];
    for (int t = 0; t < THREADS; t++)
        jobs[t] = (job){.iters = t == 0 ? 5 : ITERS};
    run_and_compare(jobs, THREADS, &ref, "thread");
    printf("  %d contexts in %d threads, %d iterations each: byte-identical to one thread\n",
           THREADS, THREADS, ITERS);
    free(ref.conv), free(ref.edges);
    free_inputs();
}

/* CUDA devices: contexts made on 0, 1, ... until one is refused as
 * missing (at most MAX_DEVICES). */
static int device_count(void) {
    int n = 0;
    for (; n < MAX_DEVICES; n++) {
        fv_context *ctx = NULL;
        fv_context_desc cd = {.backend = FV_BACKEND_CUDA, .device = n};
        fv_status s = fv_context_create(&cd, &ctx);
        fv_context_destroy(ctx);
        if (s == FV_ERR_NO_DEVICE) break;
        if (s != FV_OK) fail_msg("device %d: %s: %s", n, fv_status_name(s), fv_last_error());
    }
    return n;
}

/* A context on every GPU, each in its own thread, all at once: device 0's
 * bytes on each (the same engines: heuristics on identical GPUs; the
 * filter's engines are byte-identical by design); device 1's thread stops
 * early and destroys its context while the others run. */
static void contexts_on_every_device_match_device_0(void **state) {
    (void)state;
    const int n = device_count();
    if (n < 2) {
        printf("  one CUDA device: nothing to spread over (needs 2 or more)\n");
        skip();
    }
    make_inputs(4321);
    job ref = {.device = 0, .iters = 3};
    work(&ref);
    if (!ref.ok) fail_msg("device 0 alone: %s", ref.err);
    job jobs[MAX_DEVICES];
    for (int d = 0; d < n; d++)
        jobs[d] = (job){.device = d, .iters = d == 1 ? 5 : ITERS};
    run_and_compare(jobs, n, &ref, "device");
    printf("  %d devices, a context and thread each, %d iterations (device 1: 5, destroyed "
           "early): byte-identical to device 0 alone\n",
           n, ITERS);
    free(ref.conv), free(ref.edges);
    free_inputs();
}

/* Two threads on one CUDA context (misuse): one convolution op and one net
 * shared, an output tensor each. Every call is done or refused with
 * FV_ERR_BAD_STATE and retried; each thread's results equal one thread's. */
typedef struct shared_job {
    fv_context *ctx;
    fv_conv2d *op;
    fv_net *net;
    fv_tensor *tx, *ty;
    const fv_half *ref_conv;
    const float *ref_net;
    long refused, wrong;
    char err[256];
} shared_job;

static int done_or_refused(fv_status s, shared_job *j) {
    if (s == FV_ERR_BAD_STATE && strstr(fv_last_error(), "in use by another thread"))
        return j->refused++, 0;
    if (s != FV_OK && !j->err[0])
        snprintf(j->err, sizeof j->err, "%s: %s", fv_status_name(s), fv_last_error());
    return 1;
}

static void *misuse(void *arg) {
    shared_job *j = arg;
    fv_half *y = malloc(sizeof(fv_half) * H * W * K);
    float out[10];
    for (int i = 0; i < 100 && !j->err[0]; i++) {
        while (!done_or_refused(fv_conv2d_forward(j->op, j->tx, j->ty), j)) {
        }
        while (!done_or_refused(fv_tensor_download(j->ctx, j->ty, y, sizeof(fv_half) * H * W * K),
                                j)) {
        }
        if (memcmp(y, j->ref_conv, sizeof(fv_half) * H * W * K) != 0) j->wrong++;
        /* forward and download as one step: the other thread's forward may
         * come between them, which is fine (same input, same output) */
        while (!done_or_refused(fv_net_forward(j->net), j)) {
        }
        while (!done_or_refused(fv_net_output_download(j->net, 0, out, 10), j)) {
        }
        if (memcmp(out, j->ref_net, sizeof out) != 0) j->wrong++;
    }
    free(y);
    return NULL;
}

static void two_threads_on_one_context_never_mix(void **state) {
    (void)state;
    make_inputs(99);
    job ref = {.iters = 2};
    work(&ref);
    if (!ref.ok) fail_msg("single thread: %s", ref.err);

    fv_context *ctx = NULL;
    FV_ASSERT_OK(fv_context_create(&(fv_context_desc){.backend = FV_BACKEND_CUDA}, &ctx));
    fv_conv2d *op = NULL;
    fv_conv2d_desc d = conv_desc();
    FV_ASSERT_OK(fv_conv2d_create(ctx, &d, &op));
    fv_tensor *tx = NULL, *ty[2] = {NULL, NULL};
    FV_ASSERT_OK(fv_tensor_create(ctx, &(fv_tensor_desc){.h = H, .w = W, .c = C}, &tx));
    for (int t = 0; t < 2; t++)
        FV_ASSERT_OK(fv_tensor_create(ctx, &(fv_tensor_desc){.h = H, .w = W, .c = K}, &ty[t]));
    fv_half *hx = malloc(sizeof(fv_half) * H * W * C);
    fv_f32_to_f16_n(g_x, hx, (size_t)H * W * C);
    FV_ASSERT_OK(fv_tensor_upload(ctx, tx, hx, sizeof(fv_half) * H * W * C));
    fv_net_builder *b = NULL;
    FV_ASSERT_OK(make_net(&b));
    fv_net *net = NULL;
    FV_ASSERT_OK(fv_net_create(ctx, b, &(fv_net_desc){.flags = FV_NET_CUDA_GRAPH}, &net));
    FV_ASSERT_OK(fv_net_input_upload(net, 0, g_x, (size_t)H * W * C));
    shared_job j[2];
    pthread_t th[2];
    for (int t = 0; t < 2; t++) {
        j[t] = (shared_job){.ctx = ctx,
                            .op = op,
                            .net = net,
                            .tx = tx,
                            .ty = ty[t],
                            .ref_conv = ref.conv,
                            .ref_net = ref.net};
        assert_int_equal(pthread_create(&th[t], NULL, misuse, &j[t]), 0);
    }
    for (int t = 0; t < 2; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    for (int t = 0; t < 2; t++) {
        if (j[t].err[0]) fail_msg("thread %d: %s", t, j[t].err);
        if (j[t].wrong) fail_msg("thread %d: %ld results differ from one thread's", t, j[t].wrong);
    }
    printf("  two threads on one CUDA context, 100 rounds each: %ld calls refused and retried, "
           "every result equal to one thread's\n",
           j[0].refused + j[1].refused);
    fv_net_destroy(net);
    fv_net_builder_destroy(b);
    fv_tensor_destroy(tx), fv_tensor_destroy(ty[0]), fv_tensor_destroy(ty[1]);
    fv_conv2d_destroy(op);
    FV_ASSERT_OK(fv_context_destroy(ctx));
    free(hx), free(ref.conv), free(ref.edges);
    free_inputs();
}

static void missing_device_is_refused(void **state) {
    (void)state;
    fv_context *ctx = NULL;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA, .device = 255};
    FV_ASSERT_STATUS(fv_context_create(&cd, &ctx), FV_ERR_NO_DEVICE, "does not exist");
    assert_null(ctx);
    assert_non_null(strstr(fv_last_error(), "found"));
}

int main(void) {
    fv_context *probe = fv_test_gpu_context_or_skip();
    fv_context_destroy(probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(contexts_in_threads_match_one_thread),
        cmocka_unit_test(two_threads_on_one_context_never_mix),
        cmocka_unit_test(missing_device_is_refused),
        cmocka_unit_test(contexts_on_every_device_match_device_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
