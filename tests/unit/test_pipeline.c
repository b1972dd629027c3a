/* fv_pipeline on the CPU backend: outputs equal fv_filter_apply's, frames
 * come back in submit order with their times, the ring refuses work when
 * full, caller frames (strided, NV12) are copied in, nothing is carved per
 * frame, and bad arguments give clear errors. */
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"

static fv_filter_desc lap(int w, int h, fv_pixel_format f) {
    return (fv_filter_desc){.kind = FV_FILTER_LAPLACIAN, .width = w, .height = h, .format = f};
}

/* The expected output of frame px through fd, by fv_filter_apply. */
static void expect(fv_context *ctx, const fv_filter_desc *fd, fv_pixel_format of,
                   const unsigned char *px, unsigned char *ref) {
    fv_filter *f = NULL;
    FV_ASSERT_OK(fv_filter_create(ctx, fd, &f));
    fv_image in = {
        .format = fd->format, .width = fd->width, .height = fd->height, .data = (void *)px};
    fv_image out = {.format = of, .width = fd->width, .height = fd->height, .data = ref};
    FV_ASSERT_OK(fv_filter_apply(f, &in, &out));
    fv_filter_destroy(f);
}

static void pool_counts(fv_context *ctx, uint64_t *carves, uint64_t *backing) {
    *carves = *backing = 0;
    for (int k = 0; k < 4; k++) {
        fv_pool *pool = fv_context_pool(ctx, (fv_pool_kind)k);
        fv_pool_stats st;
        if (!pool || fv_pool_stats_get(pool, &st) != FV_OK) continue;
        *carves += st.carve_outs, *backing += st.backing_allocs;
    }
}

static void test_pipeline_ring(void **state) {
    (void)state;
    fv_test_seed(41);
    fv_context *ctx = fv_test_cpu_context(0);
    const int w = 37, h = 23, n = 7;
    fv_filter_desc fd = lap(w, h, FV_PIXEL_RGB24);
    fv_pipeline *p = NULL;
    FV_ASSERT_OK(fv_pipeline_create(ctx, &(fv_pipeline_desc){.filter = &fd, .slots = 3}, &p));
    fv_pipeline_info info;
    FV_ASSERT_OK(fv_pipeline_info_get(p, &info));
    assert_int_equal(info.slots, 3);
    assert_int_equal(info.out_format, FV_PIXEL_GRAY8);
    assert_int_equal(info.in_bytes, (size_t)w * h * 3);
    assert_int_equal(info.out_bytes, (size_t)w * h);
    assert_int_equal(info.overlapped, 0);

    size_t bytes = (size_t)w * h * 3;
    unsigned char *frames = malloc(bytes * n), *ref = malloc((size_t)w * h * n);
    fv_test_fill_bytes(frames, bytes * n);
    for (int i = 0; i < n; i++)
        expect(ctx, &fd, FV_PIXEL_GRAY8, frames + bytes * i, ref + (size_t)w * h * i);
    uint64_t c0, b0, c1, b1;
    pool_counts(ctx, &c0, &b0);
    int submitted = 0, collected = 0;
    while (collected < n) {
        fv_image in;
        if (submitted < n && fv_pipeline_input(p, &in) == FV_OK) {
            assert_int_equal(in.format, FV_PIXEL_RGB24);
            memcpy(in.data, frames + bytes * submitted, bytes);
            FV_ASSERT_OK(fv_pipeline_submit(p, &in, 1000 + submitted));
            submitted++;
            continue;
        }
        if (submitted < n) { /* full: 3 in flight (or held) */
            FV_ASSERT_STATUS(fv_pipeline_input(p, &in), FV_ERR_NOT_READY, "collect first");
            FV_ASSERT_STATUS(fv_pipeline_submit(p, &in, 0), FV_ERR_NOT_READY, "collect first");
        }
        fv_pipeline_frame done;
        FV_ASSERT_OK(fv_pipeline_collect(p, 1, &done));
        assert_int_equal(done.sequence, (uint64_t)collected);
        assert_int_equal(done.user_time_ns, 1000 + collected);
        assert_true(done.filter_ms >= 0.0f);
        assert_memory_equal(done.out.data, ref + (size_t)w * h * collected, (size_t)w * h);
        collected++;
    }
    FV_ASSERT_STATUS(fv_pipeline_collect(p, 0, &(fv_pipeline_frame){0}), FV_ERR_NOT_READY,
                     "no frame in flight");
    fv_pipeline_release(p);
    pool_counts(ctx, &c1, &b1);
    assert_int_equal(c0, c1); /* nothing carved per frame */
    assert_int_equal(b0, b1);
    free(frames), free(ref);
    fv_pipeline_destroy(p);
    fv_context_destroy(ctx);
}

/* Caller frames with a stride, and NV12 with its own UV plane, are copied
 * into the slot; overlay and colour outputs; one slot. */
static void test_pipeline_caller_frames(void **state) {
    (void)state;
    fv_test_seed(42);
    fv_context *ctx = fv_test_cpu_context(0);
    const int w = 20, h = 10;
    /* strided RGB, colour Sobel into BGR24 */
    fv_filter_desc fd = {.kind = FV_FILTER_SOBEL,
                         .width = w,
                         .height = h,
                         .format = FV_PIXEL_RGB24,
                         .output = FV_FILTER_OUT_COLOR};
    fv_pipeline *p = NULL;
    FV_ASSERT_OK(fv_pipeline_create(
        ctx, &(fv_pipeline_desc){.filter = &fd, .out_format = FV_PIXEL_BGR24, .slots = 1}, &p));
    size_t stride = (size_t)w * 3 + 13;
    unsigned char *px = malloc(stride * h), *dense = malloc((size_t)w * h * 3);
    unsigned char *ref = malloc((size_t)w * h * 3);
    fv_test_fill_bytes(px, stride * h);
    for (int y = 0; y < h; y++)
        memcpy(dense + (size_t)y * w * 3, px + y * stride, (size_t)w * 3);
    fv_image in = {.format = FV_PIXEL_RGB24, .width = w, .height = h, .stride = stride, .data = px};
    FV_ASSERT_OK(fv_pipeline_submit(p, &in, 5));
    fv_image again;
    FV_ASSERT_STATUS(fv_pipeline_input(p, &again), FV_ERR_NOT_READY, NULL);
    fv_pipeline_frame done;
    FV_ASSERT_OK(fv_pipeline_collect(p, 1, &done));
    FV_ASSERT_STATUS(fv_pipeline_input(p, &again), FV_ERR_NOT_READY, NULL); /* held */
    expect(ctx, &fd, FV_PIXEL_BGR24, dense, ref);
    assert_memory_equal(done.out.data, ref, (size_t)w * h * 3);
    fv_pipeline_release(p);
    FV_ASSERT_OK(fv_pipeline_input(p, &again)); /* free again */
    fv_pipeline_destroy(p);

    /* NV12 with a separate UV plane, overlay into RGBA32 */
    fd = (fv_filter_desc){
        .kind = FV_FILTER_SCHARR, .width = w, .height = h, .format = FV_PIXEL_NV12, .overlay = 1};
    FV_ASSERT_OK(fv_pipeline_create(ctx, &(fv_pipeline_desc){.filter = &fd}, &p));
    fv_pipeline_info info;
    FV_ASSERT_OK(fv_pipeline_info_get(p, &info));
    assert_int_equal(info.out_format, FV_PIXEL_RGB24); /* overlay: colour */
    fv_pipeline_destroy(p);
    FV_ASSERT_OK(fv_pipeline_create(
        ctx, &(fv_pipeline_desc){.filter = &fd, .out_format = FV_PIXEL_RGBA32}, &p));
    unsigned char *y = malloc((size_t)(w + 4) * h), *uv = malloc((size_t)(w + 6) * h / 2);
    unsigned char *nv = malloc((size_t)w * h * 3 / 2), *out = malloc((size_t)w * h * 4);
    fv_test_fill_bytes(y, (size_t)(w + 4) * h);
    fv_test_fill_bytes(uv, (size_t)(w + 6) * h / 2);
    for (int r = 0; r < h; r++)
        memcpy(nv + (size_t)r * w, y + (size_t)r * (w + 4), (size_t)w);
    for (int r = 0; r < h / 2; r++)
        memcpy(nv + (size_t)w * h + (size_t)r * w, uv + (size_t)r * (w + 6), (size_t)w);
    in = (fv_image){.format = FV_PIXEL_NV12,
                    .width = w,
                    .height = h,
                    .stride = (size_t)w + 4,
                    .data = y,
                    .uv = uv,
                    .uv_stride = (size_t)w + 6};
    FV_ASSERT_OK(fv_pipeline_submit(p, &in, 0));
    FV_ASSERT_OK(fv_pipeline_collect(p, 1, &done));
    fv_filter *f = NULL;
    FV_ASSERT_OK(fv_filter_create(ctx, &fd, &f));
    fv_image din = {.format = FV_PIXEL_NV12, .width = w, .height = h, .data = nv};
    fv_image dout = {.format = FV_PIXEL_RGBA32, .width = w, .height = h, .data = out};
    FV_ASSERT_OK(fv_filter_apply(f, &din, &dout));
    assert_memory_equal(done.out.data, out, (size_t)w * h * 4);
    fv_filter_destroy(f);
    fv_pipeline_destroy(p);
    free(px), free(dense), free(ref), free(y), free(uv), free(nv), free(out);
    fv_context_destroy(ctx);
}

static void test_pipeline_errors(void **state) {
    (void)state;
    fv_context *ctx = fv_test_cpu_context(0);
    fv_filter_desc fd = lap(16, 8, FV_PIXEL_RGB24);
    fv_pipeline *p = (fv_pipeline *)1;
    FV_ASSERT_STATUS(fv_pipeline_create(ctx, NULL, &p), FV_ERR_BAD_PARAM, "desc");
    assert_null(p);
    FV_ASSERT_STATUS(fv_pipeline_create(ctx, &(fv_pipeline_desc){0}, &p), FV_ERR_BAD_PARAM,
                     "desc.filter and desc.stage are NULL");
    FV_ASSERT_STATUS(fv_pipeline_create(ctx, &(fv_pipeline_desc){.filter = &fd, .slots = 17}, &p),
                     FV_ERR_BAD_PARAM, "slots=17");
    FV_ASSERT_STATUS(fv_pipeline_create(
                         ctx, &(fv_pipeline_desc){.filter = &fd, .out_format = FV_PIXEL_NV12}, &p),
                     FV_ERR_BAD_PARAM, "out_format");
    FV_ASSERT_STATUS(
        fv_pipeline_create(ctx, &(fv_pipeline_desc){.filter = &fd, .cuda_graph = 2}, &p),
        FV_ERR_BAD_PARAM, "cuda_graph");
    fv_filter_desc bad = lap(0, 8, FV_PIXEL_RGB24);
    FV_ASSERT_STATUS(fv_pipeline_create(ctx, &(fv_pipeline_desc){.filter = &bad}, &p),
                     FV_ERR_BAD_PARAM, "fv_pipeline_create");
    /* the CPU backend: graphs asked for, reported off with the reason */
    FV_ASSERT_OK(fv_pipeline_create(ctx, &(fv_pipeline_desc){.filter = &fd, .cuda_graph = 1}, &p));
    fv_pipeline_info info;
    FV_ASSERT_OK(fv_pipeline_info_get(p, &info));
    assert_int_equal(info.cuda_graph, 0);
    assert_non_null(strstr(info.cuda_graph_why, "cpu"));
    unsigned char px[16 * 8 * 3] = {0};
    fv_image wrong = {.format = FV_PIXEL_RGB24, .width = 15, .height = 8, .data = px};
    FV_ASSERT_STATUS(fv_pipeline_submit(p, &wrong, 0), FV_ERR_BAD_PARAM, "15x8 RGB24");
    wrong = (fv_image){.format = FV_PIXEL_GRAY8, .width = 16, .height = 8, .data = px};
    FV_ASSERT_STATUS(fv_pipeline_submit(p, &wrong, 0), FV_ERR_BAD_PARAM, "GRAY8");
    wrong = (fv_image){.format = FV_PIXEL_RGB24, .width = 16, .height = 8};
    FV_ASSERT_STATUS(fv_pipeline_submit(p, &wrong, 0), FV_ERR_BAD_PARAM, "NULL");
    FV_ASSERT_STATUS(fv_pipeline_collect(p, 2, &(fv_pipeline_frame){0}), FV_ERR_BAD_PARAM,
                     "wait=2");
    FV_ASSERT_STATUS(fv_pipeline_collect(NULL, 0, &(fv_pipeline_frame){0}), FV_ERR_BAD_PARAM, NULL);
    assert_non_null(fv_pipeline_filter(p));
    assert_null(fv_pipeline_filter(NULL));
    fv_pipeline_release(NULL);
    fv_pipeline_destroy(p);
    fv_pipeline_destroy(NULL);
    fv_context_destroy(ctx);
}

/* A general stage: two cameras (RGB24 and GRAY8 of other sizes) through two
 * filters into two outputs, with marks between; NULL inputs, slots and
 * the stage's errors. */
typedef struct two_filters {
    fv_pipeline *p;
    fv_filter *f[2];
    int slots_seen[16], runs;
    int fail; /* run fails when set */
} two_filters;

static fv_status two_run(fv_pipeline *p, void *user, int slot, const fv_image *in,
                         const fv_image *out) {
    two_filters *t = user;
    if (t->runs < 16) t->slots_seen[t->runs] = slot;
    t->runs++;
    fv_image o0 = out[0], o1 = out[1];
    if (t->fail) { /* a frame of the wrong size: the filter refuses it */
        fv_image small = in[0];
        small.width = 3;
        return fv_filter_apply(t->f[0], &small, &o0);
    }
    fv_status s = fv_filter_apply(t->f[0], &in[0], &o0);
    if (s == FV_OK) s = fv_pipeline_mark(p, 0);
    if (s == FV_OK) s = fv_filter_apply(t->f[1], &in[1], &o1);
    if (s == FV_OK) s = fv_pipeline_mark(p, 1);
    return s;
}

static void test_pipeline_stage(void **state) {
    (void)state;
    fv_test_seed(43);
    fv_context *ctx = fv_test_cpu_context(0);
    fv_filter_desc fd[2] = {lap(21, 9, FV_PIXEL_RGB24), lap(8, 5, FV_PIXEL_GRAY8)};
    two_filters t = {0};
    for (int k = 0; k < 2; k++)
        FV_ASSERT_OK(fv_filter_create(ctx, &fd[k], &t.f[k]));
    fv_pipeline_port in[2] = {{FV_PIXEL_RGB24, 21, 9, {0}}, {FV_PIXEL_GRAY8, 8, 5, {0}}};
    fv_pipeline_port out[2] = {{FV_PIXEL_GRAY8, 21, 9, {0}}, {FV_PIXEL_GRAY8, 8, 5, {0}}};
    fv_pipeline_stage st = {.run = two_run,
                            .user = &t,
                            .inputs = 2,
                            .outputs = 2,
                            .input = in,
                            .output = out,
                            .marks = 2,
                            .name = "two filters"};
    FV_ASSERT_OK(fv_pipeline_create(ctx, &(fv_pipeline_desc){.stage = &st, .slots = 3}, &t.p));
    fv_pipeline_info info;
    FV_ASSERT_OK(fv_pipeline_info_get(t.p, &info));
    assert_int_equal(info.inputs, 2);
    assert_int_equal(info.outputs, 2);
    assert_int_equal(info.in_bytes, 21 * 9 * 3);
    assert_int_equal(info.out_bytes, 21 * 9);
    assert_null(fv_pipeline_filter(t.p));
    fv_image o;
    float ms;
    FV_ASSERT_STATUS(fv_pipeline_output(t.p, 0, &o), FV_ERR_BAD_STATE, "collect first");
    FV_ASSERT_STATUS(fv_pipeline_mark_ms(t.p, 0, &ms), FV_ERR_BAD_STATE, "collect first");
    FV_ASSERT_STATUS(fv_pipeline_mark(t.p, 0), FV_ERR_BAD_STATE, "outside the stage's run");

    enum { N = 7 };
    unsigned char a[N][21 * 9 * 3], b[N][8 * 5], ra[N][21 * 9], rb[N][8 * 5];
    fv_test_fill_bytes(&a[0][0], sizeof a), fv_test_fill_bytes(&b[0][0], sizeof b);
    for (int i = 0; i < N; i++) {
        expect(ctx, &fd[0], FV_PIXEL_GRAY8, a[i], ra[i]);
        expect(ctx, &fd[1], FV_PIXEL_GRAY8, b[i], rb[i]);
    }
    uint64_t c0, b0, c1, b1;
    pool_counts(ctx, &c0, &b0);
    for (int i = 0; i < N; i++) {
        fv_image fa = {.format = FV_PIXEL_RGB24, .width = 21, .height = 9, .data = a[i]};
        fv_image fb = {.format = FV_PIXEL_GRAY8, .width = 8, .height = 5, .data = b[i]};
        const fv_image *frames[2] = {&fa, i % 2 ? NULL : &fb}; /* camera 1 every other run */
        FV_ASSERT_OK(fv_pipeline_submit_ports(t.p, frames, 2, 100 + i));
        fv_pipeline_frame done;
        FV_ASSERT_OK(fv_pipeline_collect(t.p, 1, &done));
        assert_int_equal(done.user_time_ns, 100 + i);
        assert_int_equal(done.slot, i % 3);
        assert_int_equal(t.slots_seen[i], i % 3);
        assert_memory_equal(done.out.data, ra[i], sizeof ra[i]);
        FV_ASSERT_OK(fv_pipeline_output(t.p, 0, &o));
        assert_ptr_equal(o.data, done.out.data);
        FV_ASSERT_OK(fv_pipeline_output(t.p, 1, &o));
        assert_int_equal(o.width, 8);
        if (frames[1]) assert_memory_equal(o.data, rb[i], sizeof rb[i]);
        float m0, m1, m2;
        FV_ASSERT_OK(fv_pipeline_mark_ms(t.p, 0, &m0));
        FV_ASSERT_OK(fv_pipeline_mark_ms(t.p, 1, &m1));
        FV_ASSERT_OK(fv_pipeline_mark_ms(t.p, 2, &m2)); /* the end */
        assert_true(m0 >= 0.0f && m0 <= m1 && m1 <= m2);
        FV_ASSERT_STATUS(fv_pipeline_mark_ms(t.p, 3, &ms), FV_ERR_BAD_PARAM, "0 .. 2");
        FV_ASSERT_STATUS(fv_pipeline_output(t.p, 2, &o), FV_ERR_BAD_PARAM, "has 2");
    }
    pool_counts(ctx, &c1, &b1);
    assert_int_equal(c0, c1); /* nothing carved per run */
    assert_int_equal(b0, b1);

    fv_image fa = {.format = FV_PIXEL_RGB24, .width = 21, .height = 9, .data = a[0]};
    const fv_image *one[1] = {&fa}, *none[2] = {NULL, NULL};
    FV_ASSERT_STATUS(fv_pipeline_submit_ports(t.p, one, 1, 0), FV_ERR_BAD_PARAM, "takes 2");
    FV_ASSERT_STATUS(fv_pipeline_submit_ports(t.p, none, 2, 0), FV_ERR_BAD_PARAM, "all 2 frames");
    FV_ASSERT_STATUS(fv_pipeline_submit(t.p, &fa, 0), FV_ERR_BAD_PARAM, "submit_ports");
    const fv_image *swapped[2] = {&fa, &fa};
    FV_ASSERT_STATUS(fv_pipeline_submit_ports(t.p, swapped, 2, 0), FV_ERR_BAD_PARAM,
                     "frame 1 is 21x9 RGB24");
    t.fail = 1;
    const fv_image *ok[2] = {&fa, NULL};
    assert_int_not_equal(fv_pipeline_submit_ports(t.p, ok, 2, 0), FV_OK);
    assert_non_null(strstr(fv_last_error(), "pipeline stage 'two filters'"));
    fv_pipeline_destroy(t.p);

    /* bad stages */
    fv_pipeline *p = NULL;
    fv_pipeline_stage bad = st;
    bad.inputs = 0;
    FV_ASSERT_STATUS(fv_pipeline_create(ctx, &(fv_pipeline_desc){.stage = &bad}, &p),
                     FV_ERR_BAD_PARAM, "stage.inputs=0");
    bad = st, bad.marks = 9;
    FV_ASSERT_STATUS(fv_pipeline_create(ctx, &(fv_pipeline_desc){.stage = &bad}, &p),
                     FV_ERR_BAD_PARAM, "stage.marks=9");
    bad = st, bad.run = NULL;
    FV_ASSERT_STATUS(fv_pipeline_create(ctx, &(fv_pipeline_desc){.stage = &bad}, &p),
                     FV_ERR_BAD_PARAM, "stage.run");
    fv_pipeline_port zero[2] = {{FV_PIXEL_RGB24, 0, 9, {0}}, in[1]};
    bad = st, bad.input = zero;
    FV_ASSERT_STATUS(fv_pipeline_create(ctx, &(fv_pipeline_desc){.stage = &bad}, &p),
                     FV_ERR_BAD_PARAM, "stage.input[0] is 0x9");
    FV_ASSERT_STATUS(
        fv_pipeline_create(ctx, &(fv_pipeline_desc){.stage = &st, .filter = &fd[0]}, &p),
        FV_ERR_BAD_PARAM, "both");
    assert_null(p);
    for (int k = 0; k < 2; k++)
        fv_filter_destroy(t.f[k]);
    fv_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_ring),
        cmocka_unit_test(test_pipeline_caller_frames),
        cmocka_unit_test(test_pipeline_errors),
        cmocka_unit_test(test_pipeline_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
