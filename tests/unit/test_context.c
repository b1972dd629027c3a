/* Context: backend choice, info, descriptor checks, logging, one thread at
 * a time. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include "fv_test.h"

static void cpu_context_reports_what_it_runs_on(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_context_info info;
    FV_ASSERT_OK(fv_context_info_get(ctx, &info));
    assert_int_equal(info.backend, FV_BACKEND_CPU);
    assert_string_equal(info.backend_name, "cpu");
    assert_true(strlen(info.device_name) > 0);
    assert_int_equal(info.device_index, -1);
    assert_int_equal(info.tensor_cores, 0);
    assert_true(strlen(info.tensor_core_reason) > 0);
    assert_true(info.multiprocessors >= 1);
    assert_int_equal(info.fovea_built_with_cuda, FV_BUILT_WITH_CUDA);
    assert_int_equal(fv_context_backend(ctx), FV_BACKEND_CPU);
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    fv_context_destroy(ctx);
    fv_context_destroy(NULL);
}

static void auto_without_gpu_is_cpu_and_cuda_is_refused(void **state) {
    fv_context *ctx = NULL;
    fv_context_desc d = {.backend = FV_BACKEND_CUDA};
    fv_status s = fv_context_create(&d, &ctx);
    if (s == FV_OK) { /* a GPU machine: AUTO must then pick CUDA */
        fv_context_destroy(ctx);
        FV_ASSERT_OK(fv_context_create(NULL, &ctx));
        assert_int_equal(fv_context_backend(ctx), FV_BACKEND_CUDA);
        fv_context_destroy(ctx);
        skip();
    }
    assert_int_equal(s, FV_ERR_NO_DEVICE);
    assert_null(ctx);
    assert_non_null(strstr(fv_last_error(), "CUDA backend requested but unusable"));
    FV_ASSERT_OK(fv_context_create(NULL, &ctx));
    fv_context_info info;
    FV_ASSERT_OK(fv_context_info_get(ctx, &info));
    assert_int_equal(info.backend, FV_BACKEND_CPU);
    assert_true(strlen(info.no_gpu_reason) > 0); /* says why it is not on a GPU */
    fv_context_destroy(ctx);
}

/* fv_cuda_device_count: where it counts none, a CUDA context is refused;
 * where it counts n, device n does not exist and the message says how many
 * there are. */
static void cuda_device_count_matches_what_contexts_find(void **state) {
    (void)state;
    FV_ASSERT_STATUS(fv_cuda_device_count(NULL), FV_ERR_BAD_PARAM, "count is NULL");
    int n = -1;
    FV_ASSERT_OK(fv_cuda_device_count(&n));
    assert_true(n >= 0);
    fv_context *ctx = NULL;
    fv_context_desc d = {.backend = FV_BACKEND_CUDA, .device = n};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_NO_DEVICE, "unusable");
    assert_null(ctx);
    if (n > 0) {
        char want[64];
        snprintf(want, sizeof want, "(%d device%s found)", n, n == 1 ? "" : "s");
        assert_non_null(strstr(fv_last_error(), want));
    }
}

static void bad_descriptors_are_refused(void **state) {
    fv_context *ctx = (fv_context *)1;
    fv_context_desc d = {.backend = (fv_backend)9};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_BAD_PARAM, "backend=9");
    assert_null(ctx);
    d = (fv_context_desc){.device = -2};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_BAD_PARAM, "device=-2");
    d = (fv_context_desc){.flags = 0x80};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_BAD_PARAM, "flags 0x80");
    d = (fv_context_desc){.log_level = (fv_log_level)7};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_BAD_PARAM, "log_level=7");
    d = (fv_context_desc){0};
    d.reserved[3] = 5;
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_BAD_PARAM, "reserved[3]");
    FV_ASSERT_STATUS(fv_context_create(NULL, NULL), FV_ERR_BAD_PARAM, "out is NULL");
    /* a pool too large to reserve is an out-of-memory error naming the pool */
    d = (fv_context_desc){.backend = FV_BACKEND_CPU, .host_pool_bytes = (size_t)1 << 62};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_OUT_OF_MEMORY, "host");
    /* SIZE_MAX must not wrap to an empty pool when rounded up to FV_ALIGN */
    d = (fv_context_desc){.backend = FV_BACKEND_CPU, .device_pool_bytes = SIZE_MAX};
    FV_ASSERT_STATUS(fv_context_create(&d, &ctx), FV_ERR_OUT_OF_MEMORY, "device");
    assert_null(ctx);
}

typedef struct {
    int calls;
    fv_log_level worst;
    char last[256];
} log_sink;

static void sink(fv_log_level level, const char *msg, void *user) {
    log_sink *s = user;
    s->calls++;
    if (level > s->worst) s->worst = level;
    snprintf(s->last, sizeof s->last, "%s", msg);
}

static void log_callback_gets_messages_up_to_its_level(void **state) {
    log_sink s = {0};
    fv_context *ctx = NULL;
    fv_context_desc d = {
        .backend = FV_BACKEND_CPU, .log = sink, .log_user = &s, .log_level = FV_LOG_INFO};
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    assert_true(s.calls >= 1);
    assert_true(s.worst <= FV_LOG_INFO); /* no DEBUG at INFO level */
    assert_non_null(strstr(s.last, "backend cpu"));
    fv_context_destroy(ctx);
    log_sink q = {0};
    d.log_user = &q;
    d.log_level = FV_LOG_DEBUG;
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    assert_int_equal(q.worst, FV_LOG_DEBUG); /* pool reservations are logged at DEBUG */
    assert_true(q.calls > s.calls);
    fv_context_destroy(ctx);
    /* a profile that does not exist is named, and said to be missing */
    log_sink w = {0};
    d = (fv_context_desc){.backend = FV_BACKEND_CPU,
                          .log = sink,
                          .log_user = &w,
                          .log_level = FV_LOG_WARN,
                          .profile_path = "/nonexistent/p.profile"};
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    if (!strstr(w.last, "/nonexistent/p.profile") || !strstr(w.last, "No such file"))
        fail_msg("missing profile: '%s'", w.last);
    fv_context_destroy(ctx);
}

static void pools_have_the_sizes_asked_for(void **state) {
    fv_context *ctx = NULL;
    fv_context_desc d = {.backend = FV_BACKEND_CPU,
                         .device_pool_bytes = 1000,
                         .pinned_pool_bytes = 3 << 20,
                         .mapped_pool_bytes = 4096};
    FV_ASSERT_OK(fv_context_create(&d, &ctx));
    fv_pool_stats st;
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_DEVICE), &st));
    assert_int_equal(st.reserved, 1024); /* rounded up to FV_ALIGN */
    assert_int_equal(st.backing_allocs, 1);
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_PINNED), &st));
    assert_int_equal(st.reserved, 3 << 20);
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_MAPPED), &st));
    assert_int_equal(st.reserved, 4096);
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_HOST), &st));
    assert_int_equal(st.reserved, 64 << 20); /* default */
    assert_string_equal(fv_pool_name(fv_context_pool(ctx, FV_POOL_PINNED)), "pinned");
    assert_null(fv_context_pool(ctx, (fv_pool_kind)9));
    fv_context_destroy(ctx);
}

/* As uv_loop_close: a context with live objects is refused, intact. */
static void destroy_with_live_objects_is_refused(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    fv_tensor *a = NULL, *b = NULL;
    fv_tensor_desc td = {.dtype = FV_DTYPE_F32, .h = 4, .w = 4, .c = 1};
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &a));
    FV_ASSERT_OK(fv_tensor_create(ctx, &td, &b));
    float w[9] = {0};
    fv_conv2d_desc cd = {
        .h = 4, .w = 4, .c = 1, .k = 1, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1, .weights = w};
    cd.dtype = FV_DTYPE_F32;
    fv_conv2d *conv = NULL;
    FV_ASSERT_OK(fv_conv2d_create(ctx, &cd, &conv));
    fv_pool *pool = NULL;
    FV_ASSERT_OK(fv_pool_create(ctx, &(fv_pool_desc){.kind = FV_POOL_HOST, .bytes = 4096}, &pool));
    fv_filter *f = NULL;
    FV_ASSERT_OK(fv_filter_create(
        ctx, &(fv_filter_desc){.kind = FV_FILTER_LAPLACIAN, .width = 8, .height = 8}, &f));
    FV_ASSERT_STATUS(fv_context_destroy(ctx), FV_ERR_BAD_STATE, "2 tensors");
    assert_non_null(strstr(fv_last_error(), "1 conv2d"));
    assert_non_null(strstr(fv_last_error(), "1 pool"));
    assert_non_null(strstr(fv_last_error(), "1 filter"));
    /* the context still works: nothing was freed */
    FV_ASSERT_OK(fv_tensor_upload(ctx, a, (float[16]){0}, 16 * sizeof(float)));
    FV_ASSERT_OK(fv_conv2d_forward(conv, a, b));
    fv_filter_destroy(f);
    fv_pool_destroy(pool);
    fv_conv2d_destroy(conv);
    fv_tensor_destroy(a);
    FV_ASSERT_STATUS(fv_context_destroy(ctx), FV_ERR_BAD_STATE, "1 tensor");
    assert_null(strstr(fv_last_error(), "conv2d"));
    fv_tensor_destroy(b);
    FV_ASSERT_OK(fv_context_destroy(ctx));
    FV_ASSERT_OK(fv_context_destroy(NULL));
}

/* ---- one thread at a time ----------------------------------------------
 * A rendezvous inside a call: thread A's log callback (run while A's
 * fv_pool_create holds the context) lets thread B try the context, then
 * waits for B's tries. */
typedef struct rendezvous {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int held, tried, destroy_started, destroy_done;
    fv_context *ctx;
    fv_tensor *t0;
    fv_status create_s, upload_s, ctx_destroy_s;
    fv_tensor *made;
    char create_msg[512];
} rendezvous;

static void wait_for(rendezvous *r, int *flag) {
    pthread_mutex_lock(&r->mu);
    while (!*flag)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

static void set_flag(rendezvous *r, int *flag) {
    pthread_mutex_lock(&r->mu);
    *flag = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void nap_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void holding_log(fv_log_level level, const char *msg, void *user) {
    rendezvous *r = user;
    (void)level;
    if (!strstr(msg, "pool 'held'")) return;
    set_flag(r, &r->held);
    wait_for(r, &r->tried);
    /* B's destroy of t0 must wait for this call to end, not run beside it */
    wait_for(r, &r->destroy_started);
    nap_ms(50);
    pthread_mutex_lock(&r->mu);
    int done = r->destroy_done;
    pthread_mutex_unlock(&r->mu);
    if (done) r->destroy_done = -1; /* seen too early: reported by the test */
}

static void *other_thread(void *arg) {
    rendezvous *r = arg;
    wait_for(r, &r->held);
    fv_tensor_desc td = {.dtype = FV_DTYPE_F32, .h = 2, .w = 2, .c = 1};
    r->create_s = fv_tensor_create(r->ctx, &td, &r->made);
    snprintf(r->create_msg, sizeof r->create_msg, "%s", fv_last_error());
    r->upload_s = fv_tensor_upload(r->ctx, r->t0, (float[4]){1, 2, 3, 4}, sizeof(float[4]));
    r->ctx_destroy_s = fv_context_destroy(r->ctx);
    set_flag(r, &r->tried);
    set_flag(r, &r->destroy_started);
    fv_tensor_destroy(r->t0); /* waits for A */
    pthread_mutex_lock(&r->mu);
    if (r->destroy_done == 0) r->destroy_done = 1;
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* While one thread is inside a call, another thread's calls on the context
 * are refused (FV_ERR_BAD_STATE naming the call, nothing done) and its
 * destroys wait. */
static void a_second_thread_is_refused_while_one_holds_the_context(void **state) {
    rendezvous r = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    fv_context_desc d = {
        .backend = FV_BACKEND_CPU, .log = holding_log, .log_user = &r, .log_level = FV_LOG_DEBUG};
    FV_ASSERT_OK(fv_context_create(&d, &r.ctx));
    fv_tensor_desc td = {.dtype = FV_DTYPE_F32, .h = 2, .w = 2, .c = 1};
    FV_ASSERT_OK(fv_tensor_create(r.ctx, &td, &r.t0));
    pthread_t b;
    assert_int_equal(pthread_create(&b, NULL, other_thread, &r), 0);
    fv_pool *pool = NULL;
    FV_ASSERT_OK(fv_pool_create(
        r.ctx, &(fv_pool_desc){.kind = FV_POOL_HOST, .bytes = 4096, .name = "held"}, &pool));
    pthread_join(b, NULL);
    assert_int_equal(r.create_s, FV_ERR_BAD_STATE);
    assert_null(r.made);
    if (!strstr(r.create_msg, "fv_tensor_create: the context is in use by another thread"))
        fail_msg("message: '%s'", r.create_msg);
    assert_int_equal(r.upload_s, FV_ERR_BAD_STATE);
    assert_int_equal(r.ctx_destroy_s, FV_ERR_BAD_STATE);
    if (r.destroy_done != 1) fail_msg("fv_tensor_destroy ran beside another thread's call");
    /* the refused calls changed nothing: only the pool is left */
    FV_ASSERT_STATUS(fv_context_destroy(r.ctx), FV_ERR_BAD_STATE, "1 pool");
    assert_null(strstr(fv_last_error(), "tensor"));
    fv_pool_destroy(pool);
    FV_ASSERT_OK(fv_context_destroy(r.ctx));
}

typedef struct inner_destroy {
    fv_context *ctx;
    fv_status s;
    char msg[512];
} inner_destroy;

static void destroying_log(fv_log_level level, const char *msg, void *user) {
    inner_destroy *d = user;
    (void)level;
    if (!strstr(msg, "pool 'inner'") || !d->ctx) return;
    d->s = fv_context_destroy(d->ctx); /* from inside fv_pool_create */
    snprintf(d->msg, sizeof d->msg, "%s", fv_last_error());
}

/* fv_context_destroy from inside a call on the same context (its log
 * callback) is refused: the call around it still uses the context. */
static void destroy_from_inside_a_call_is_refused(void **state) {
    inner_destroy d = {0};
    fv_context *ctx = NULL;
    fv_context_desc cd = {.backend = FV_BACKEND_CPU,
                          .log = destroying_log,
                          .log_user = &d,
                          .log_level = FV_LOG_DEBUG};
    FV_ASSERT_OK(fv_context_create(&cd, &ctx));
    d.ctx = ctx;
    fv_pool *pool = NULL;
    FV_ASSERT_OK(fv_pool_create(
        ctx, &(fv_pool_desc){.kind = FV_POOL_HOST, .bytes = 4096, .name = "inner"}, &pool));
    assert_int_equal(d.s, FV_ERR_BAD_STATE);
    if (!strstr(d.msg, "called from inside another call")) fail_msg("message: '%s'", d.msg);
    d.ctx = NULL;
    fv_pool_destroy(pool);
    FV_ASSERT_OK(fv_context_destroy(ctx));
}

typedef struct hammer {
    fv_context *ctx;
    int id, rounds;
    long ok, refused, wrong_status, wrong_data;
    char why[256];
} hammer;

static fv_status retry(fv_status s, hammer *h) {
    if (s == FV_ERR_BAD_STATE && strstr(fv_last_error(), "in use by another thread")) {
        h->refused++;
        return s;
    }
    if (s != FV_OK && !h->wrong_status++)
        snprintf(h->why, sizeof h->why, "%s: %s", fv_status_name(s), fv_last_error());
    return s;
}

/* Each round: a tensor made, filled with this thread's numbers, read back,
 * destroyed; each call retried while the other thread holds the context. */
static void *hammer_thread(void *arg) {
    hammer *h = arg;
    fv_tensor_desc td = {.dtype = FV_DTYPE_F32, .h = 4, .w = 4, .c = 3};
    for (int i = 0; i < h->rounds; i++) {
        float in[48], out[48];
        for (int k = 0; k < 48; k++)
            in[k] = (float)(h->id * 100000 + i * 48 + k);
        fv_tensor *t = NULL;
        while (retry(fv_tensor_create(h->ctx, &td, &t), h) == FV_ERR_BAD_STATE) {
        }
        if (!t) continue;
        while (retry(fv_tensor_upload(h->ctx, t, in, sizeof in), h) == FV_ERR_BAD_STATE) {
        }
        memset(out, 0, sizeof out);
        while (retry(fv_tensor_download(h->ctx, t, out, sizeof out), h) == FV_ERR_BAD_STATE) {
        }
        if (memcmp(in, out, sizeof in) != 0) h->wrong_data++;
        fv_tensor_destroy(t);
        h->ok++;
    }
    return NULL;
}

/* Two threads on one context: every call either works or is refused, no
 * data crosses between them, and the pools and object counts end intact. */
static void two_threads_hammering_one_context_corrupt_nothing(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    hammer h[2] = {{.ctx = ctx, .id = 1, .rounds = 20000}, {.ctx = ctx, .id = 2, .rounds = 20000}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer_thread, &h[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        if (h[i].wrong_status)
            fail_msg("thread %d: %ld unexpected statuses, first %s", i, h[i].wrong_status,
                     h[i].why);
        assert_int_equal(h[i].wrong_data, 0);
        assert_int_equal(h[i].ok, h[i].rounds);
    }
    printf("two threads, one context: %ld rounds, %ld calls refused and retried\n",
           h[0].ok + h[1].ok, h[0].refused + h[1].refused);
    fv_pool_stats st;
    FV_ASSERT_OK(fv_pool_stats_get(fv_context_pool(ctx, FV_POOL_DEVICE), &st));
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.carve_outs, 40000);
    FV_ASSERT_OK(fv_context_destroy(ctx));
}

static void *use_elsewhere(void *arg) {
    hammer *h = arg;
    h->rounds = 3;
    hammer_thread(h);
    return NULL;
}

/* A context moves between threads freely between calls. */
static void a_context_moves_between_threads_between_calls(void **state) {
    fv_context *ctx = fv_test_cpu_context(0);
    hammer h = {.ctx = ctx, .id = 3};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, use_elsewhere, &h), 0);
    pthread_join(t, NULL);
    assert_int_equal(h.ok, 3);
    assert_int_equal(h.refused, 0);
    assert_int_equal(h.wrong_status + h.wrong_data, 0);
    FV_ASSERT_OK(fv_context_destroy(ctx));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpu_context_reports_what_it_runs_on),
        cmocka_unit_test(auto_without_gpu_is_cpu_and_cuda_is_refused),
        cmocka_unit_test(cuda_device_count_matches_what_contexts_find),
        cmocka_unit_test(bad_descriptors_are_refused),
        cmocka_unit_test(log_callback_gets_messages_up_to_its_level),
        cmocka_unit_test(pools_have_the_sizes_asked_for),
        cmocka_unit_test(destroy_with_live_objects_is_refused),
        cmocka_unit_test(a_second_thread_is_refused_while_one_holds_the_context),
        cmocka_unit_test(destroy_from_inside_a_call_is_refused),
        cmocka_unit_test(two_threads_hammering_one_context_corrupt_nothing),
        cmocka_unit_test(a_context_moves_between_threads_between_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
