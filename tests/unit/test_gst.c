/* GStreamer sources and sinks (platform): a round trip videotestsrc ->
 * capture -> Laplacian (CPU backend) -> H.264 file -> decode, compared frame
 * by frame; RTP to 127.0.0.1 received by a gst:// pipeline; the errors a
 * machine without a camera or display gives; FV_SOURCE_CAPTURE_LATEST.
 * Built only when fovea_platform has GStreamer. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "fv_test.h"
#include <arpa/inet.h>
#include <dlfcn.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "fovea/filter.h"
#include "fovea/platform/sink.h"
#include "fovea/platform/source.h"

#define W 320
#define H 240
#define N 24 /* frames through the round trip */

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static const char *tmp_file(const char *tag) {
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "/tmp/fovea-test-gst-%ld-%s", (long)getpid(), tag);
    return buf[k];
}

/* PSNR of a against b (w x h x bpp bytes each, rows of a at stride). */
static double psnr(const unsigned char *a, size_t stride, const unsigned char *b, size_t row,
                   int h) {
    double se = 0;
    for (int y = 0; y < h; y++)
        for (size_t x = 0; x < row; x++) {
            double d = (double)a[(size_t)y * stride + x] - (double)b[(size_t)y * row + x];
            se += d * d;
        }
    double mse = se / ((double)row * h);
    return mse == 0 ? 99.0 : 10.0 * log10(255.0 * 255.0 / mse);
}

/* The round trip. The frames are Laplacian edges of a moving ball, coded
 * with x264 at the default 8000 kbps (about 3.5 bits a pixel at 320x240,
 * 30 fps). 30 dB (RMS error 8 levels) is far below what such a rate gives
 * on these frames (40+ dB), and far above what a wrong stride, format,
 * frame order or a dropped frame gives (the edges move several pixels per
 * frame: under 20 dB). */
static void round_trip(const char *ext, fv_pixel_format out_format, int real_timestamps) {
    const size_t bpp = out_format == FV_PIXEL_GRAY8 ? 1 : 3;
    const size_t row = (size_t)W * bpp, frame_bytes = row * H;
    char uri[512];
    snprintf(uri, sizeof uri,
             "gst://videotestsrc num-buffers=%d pattern=ball ! video/x-raw,width=%d,height=%d", N,
             W, H);
    fv_source_desc sd = {.uri = uri, .format = FV_PIXEL_RGB24};
    fv_source *src = NULL;
    FV_ASSERT_OK(fv_source_open(&sd, &src));
    fv_source_info si;
    FV_ASSERT_OK(fv_source_info_get(src, &si));
    assert_string_equal(si.kind, "gst");
    assert_int_equal(si.width, W);
    assert_int_equal(si.height, H);
    assert_int_equal(si.format, FV_PIXEL_RGB24);
    assert_non_null(strstr(si.detail, "RGB"));

    fv_context *ctx = fv_test_cpu_context(0);
    fv_filter_desc fd = {
        .kind = FV_FILTER_LAPLACIAN, .width = W, .height = H, .format = FV_PIXEL_RGB24};
    fv_filter *filt = NULL;
    FV_ASSERT_OK(fv_filter_create(ctx, &fd, &filt));

    char path[256];
    snprintf(path, sizeof path, "%s", tmp_file(ext));
    snprintf(uri, sizeof uri, "file://%s", path);
    fv_sink_desc kd = {.uri = uri, .width = W, .height = H, .format = out_format, .rate = 30};
    fv_sink *sink = NULL;
    FV_ASSERT_OK(fv_sink_open(&kd, &sink));
    fv_sink_info ki;
    FV_ASSERT_OK(fv_sink_info_get(sink, &ki));
    assert_string_equal(ki.kind, "video");
    assert_non_null(strstr(ki.detail, "H.264"));

    unsigned char *sent = calloc(N + 1, frame_bytes);
    assert_non_null(sent);
    int n = 0;
    int64_t last_ts = 0;
    for (;;) {
        fv_source_frame fr;
        fv_status s = fv_source_capture(src, 0, &fr);
        if (s == FV_ERR_END_OF_STREAM) break;
        FV_ASSERT_OK(s);
        assert_true(n < N);
        assert_int_equal(fr.sequence, (uint64_t)n);
        assert_true(fr.timestamp_ns > last_ts);
        last_ts = fr.timestamp_ns;
        assert_int_equal(fr.image.width, W);
        assert_true(fr.image.stride >= (size_t)W * 3);
        assert_true(fr.bytes >= fr.image.stride * (H - 1) + (size_t)W * 3);
        fv_image out = {.format = out_format,
                        .width = W,
                        .height = H,
                        .stride = row,
                        .data = sent + (size_t)n * frame_bytes};
        FV_ASSERT_OK(fv_filter_apply(filt, &fr.image, &out));
        FV_ASSERT_OK(fv_sink_write(sink, &out, real_timestamps ? fr.timestamp_ns : 0));
        n++;
    }
    assert_int_equal(n, N);
    FV_ASSERT_OK(fv_sink_info_get(sink, &ki));
    assert_int_equal(ki.frames, (uint64_t)N);
    FV_ASSERT_OK(fv_sink_close(sink));
    fv_source_close(src);
    fv_filter_destroy(filt);
    fv_context_destroy(ctx);

    /* Not all black: the filter saw the ball. */
    size_t lit = 0;
    for (size_t i = 0; i < frame_bytes; i++)
        lit += sent[i] > 64;
    assert_true(lit > 100);

    /* Decode every frame back. */
    fv_source_desc vd = {.uri = uri, .format = out_format};
    FV_ASSERT_OK(fv_source_open(&vd, &src));
    FV_ASSERT_OK(fv_source_info_get(src, &si));
    assert_string_equal(si.kind, "video");
    assert_int_equal(si.width, W);
    assert_int_equal(si.height, H);
    assert_int_equal(si.format, out_format);
    if (!real_timestamps) { /* n / rate: the duration says N frames */
        assert_true(si.frames >= N - 1 && si.frames <= N + 1);
    }
    int m = 0;
    double worst = 99, worst_neighbour = 0;
    for (;;) {
        fv_source_frame fr;
        fv_status s = fv_source_capture(src, 0, &fr);
        if (s == FV_ERR_END_OF_STREAM) break;
        FV_ASSERT_OK(s);
        assert_true(m < N);
        assert_int_equal(fr.image.format, out_format);
        double p = psnr(fr.image.data, fr.image.stride, sent + (size_t)m * frame_bytes, row, H);
        if (p < 30)
            fail_msg("%s: decoded frame %d: PSNR %.1f dB against the frame written (< 30)", ext, m,
                     p);
        if (p < worst) worst = p;
        /* The ball moves: the neighbouring frame written is much further
         * off than this one (frame order, nothing dropped or repeated). */
        if (m > 0) {
            double q =
                psnr(fr.image.data, fr.image.stride, sent + (size_t)(m - 1) * frame_bytes, row, H);
            if (q > p - 10)
                fail_msg("%s: decoded frame %d: PSNR %.1f dB against frame %d written, %.1f "
                         "against frame %d: not clearly the right frame",
                         ext, m, p, m, q, m - 1);
            if (q > worst_neighbour) worst_neighbour = q;
        }
        m++;
    }
    assert_int_equal(m, N);
    /* A second capture after the end still says so. */
    fv_source_frame fr;
    FV_ASSERT_STATUS(fv_source_capture(src, 0, &fr), FV_ERR_END_OF_STREAM, "end");
    fv_source_close(src);
    free(sent);
    unlink(path);
    print_message("%s: %d frames, PSNR >= %.1f dB (neighbouring frames: <= %.1f dB)\n", ext, m,
                  worst, worst_neighbour);
}

static void test_round_trip_mp4(void **state) {
    (void)state;
    round_trip("rt.mp4", FV_PIXEL_GRAY8, 0);
}

static void test_round_trip_mkv(void **state) {
    (void)state;
    round_trip("rt.mkv", FV_PIXEL_RGB24, 1);
}

/* ---- RTP to 127.0.0.1 ------------------------------------------------------ */
typedef struct sender {
    fv_sink *sink;
    volatile int stop;
    int written;
    fv_status status;
} sender;

static void *send_frames(void *arg) {
    sender *sd = arg;
    unsigned char *px = malloc(160 * 120 * 3);
    if (!px) return NULL;
    for (int i = 0; !sd->stop && i < 1000; i++) {
        for (int y = 0; y < 120; y++)
            for (int x = 0; x < 160 * 3; x++)
                px[y * 160 * 3 + x] = (unsigned char)(x + y * 2 + i * 4);
        fv_image im = {.format = FV_PIXEL_RGB24, .width = 160, .height = 120, .data = px};
        fv_status s = fv_sink_write(sd->sink, &im, 0);
        if (s != FV_OK) {
            sd->status = s;
            break;
        }
        sd->written++;
        sleep_ms(10);
    }
    free(px);
    return NULL;
}

static int free_udp_port(void) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_rtp_loopback(void **state) {
    (void)state;
    int port = free_udp_port();
    char uri[512];
    snprintf(uri, sizeof uri, "rtp://127.0.0.1:%d", port);
    fv_sink_desc kd = {.uri = uri, .width = 160, .height = 120, .format = FV_PIXEL_RGB24};
    sender sd = {0};
    FV_ASSERT_OK(fv_sink_open(&kd, &sd.sink));
    fv_sink_info ki;
    FV_ASSERT_OK(fv_sink_info_get(sd.sink, &ki));
    assert_string_equal(ki.kind, "rtp");
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, send_frames, &sd), 0);
    snprintf(uri, sizeof uri,
             "gst://udpsrc port=%d caps=\"application/x-rtp,media=video,encoding-name=H264,"
             "payload=96,clock-rate=90000\" ! rtph264depay ! avdec_h264",
             port);
    fv_source_desc rd = {.uri = uri, .format = FV_PIXEL_RGB24, .timeout_ms = 8000};
    fv_source *src = NULL;
    fv_status s = fv_source_open(&rd, &src);
    fv_source_frame fr = {0};
    fv_status c = s == FV_OK ? fv_source_capture(src, 0, &fr) : s;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", fv_last_error());
    sd.stop = 1;
    pthread_join(th, NULL);
    if (s != FV_OK || c != FV_OK)
        fail_msg("rtp receive: open %s, capture %s: %s", fv_status_name(s), fv_status_name(c), msg);
    assert_int_equal(fr.image.width, 160);
    assert_int_equal(fr.image.height, 120);
    assert_int_equal(sd.status, FV_OK);
    assert_true(sd.written > 0);
    fv_source_close(src);
    FV_ASSERT_OK(fv_sink_close(sd.sink));
}

/* ---- errors ------------------------------------------------------------------ */
static void test_bad_pipeline(void **state) {
    (void)state;
    fv_source *src = (fv_source *)&src;
    fv_source_desc d = {.uri = "gst://videotestsrc ! no_such_element_fovea"};
    FV_ASSERT_STATUS(fv_source_open(&d, &src), FV_ERR_BAD_PARAM, "no_such_element_fovea");
    assert_null(src);
    d.uri = "gst://videotestsrc ! ! ! fakesink";
    FV_ASSERT_STATUS(fv_source_open(&d, &src), FV_ERR_BAD_PARAM, "does not parse");
    d.uri = "gst://";
    FV_ASSERT_STATUS(fv_source_open(&d, &src), FV_ERR_BAD_PARAM, "empty");
}

static void test_missing_video(void **state) {
    (void)state;
    char uri[300];
    snprintf(uri, sizeof uri, "file://%s", tmp_file("missing.mp4"));
    fv_source_desc d = {.uri = uri};
    fv_source *src = NULL;
    FV_ASSERT_STATUS(fv_source_open(&d, &src), FV_ERR_IO, "missing.mp4");
    assert_null(src);
}

static void test_no_display(void **state) {
    (void)state;
    unsetenv("DISPLAY");
    unsetenv("WAYLAND_DISPLAY");
    fv_sink_desc d = {.uri = "display://0", .width = 64, .height = 48, .format = FV_PIXEL_RGB24};
    fv_sink *sink = NULL;
    FV_ASSERT_STATUS(fv_sink_open(&d, &sink), FV_ERR_NOT_SUPPORTED, "no display");
    assert_null(sink);
}

static void test_csi_absent(void **state) {
    (void)state;
    fv_source_desc d = {.uri = "csi://0"};
    fv_source *src = NULL;
    FV_ASSERT_STATUS(fv_source_open(&d, &src), FV_ERR_NOT_SUPPORTED, "nvarguscamerasrc");
    assert_null(src);
    d.uri = "csi://front";
    FV_ASSERT_STATUS(fv_source_open(&d, &src), FV_ERR_BAD_PARAM, "front");
}

/* A video sink asked for captions draws them where textoverlay exists
 * (info.text_overlay 1, set_text works between frames) and refuses them
 * otherwise; the video is written either way. */
static void test_sink_captions(void **state) {
    (void)state;
    char uri[300];
    snprintf(uri, sizeof uri, "file://%s", tmp_file("caption.mkv"));
    fv_sink_desc d = {
        .uri = uri, .width = 64, .height = 48, .format = FV_PIXEL_RGB24, .text_overlay = 1};
    fv_sink *sink = NULL;
    FV_ASSERT_OK(fv_sink_open(&d, &sink));
    fv_sink_info info;
    FV_ASSERT_OK(fv_sink_info_get(sink, &info));
    unsigned char px[64 * 48 * 3];
    memset(px, 90, sizeof px);
    fv_image f = {.format = FV_PIXEL_RGB24, .width = 64, .height = 48, .data = px};
    for (int i = 0; i < 6; i++) {
        char text[32];
        snprintf(text, sizeof text, "frame %d\nSneaker 0.9", i);
        if (info.text_overlay)
            FV_ASSERT_OK(fv_sink_set_text(sink, text));
        else
            FV_ASSERT_STATUS(fv_sink_set_text(sink, text), FV_ERR_NOT_SUPPORTED, "captions");
        FV_ASSERT_OK(fv_sink_write(sink, &f, 0));
    }
    FV_ASSERT_OK(fv_sink_close(sink));
    printf("captions: %s\n", info.text_overlay ? "textoverlay" : "no textoverlay installed");
    unlink(tmp_file("caption.mkv"));
}

static void test_sink_checks(void **state) {
    (void)state;
    char uri[300];
    snprintf(uri, sizeof uri, "file://%s", tmp_file("size.mkv"));
    fv_sink_desc d = {.uri = uri, .width = 64, .height = 48, .format = FV_PIXEL_RGB24};
    fv_sink *sink = NULL;
    FV_ASSERT_OK(fv_sink_open(&d, &sink));
    unsigned char px[64 * 48 * 3];
    memset(px, 128, sizeof px);
    fv_image small = {.format = FV_PIXEL_RGB24, .width = 32, .height = 32, .data = px};
    FV_ASSERT_STATUS(fv_sink_write(sink, &small, 0), FV_ERR_BAD_PARAM, "64x48");
    fv_image good = {.format = FV_PIXEL_RGB24, .width = 64, .height = 48, .data = px};
    FV_ASSERT_OK(fv_sink_write(sink, &good, 0));
    FV_ASSERT_OK(fv_sink_close(sink));
    unlink(tmp_file("size.mkv"));

    fv_sink_desc r = {.uri = "rtp://nohost", .width = 64, .height = 48, .format = FV_PIXEL_RGB24};
    FV_ASSERT_STATUS(fv_sink_open(&r, &sink), FV_ERR_BAD_PARAM, "host:port");
    r.uri = "rtp://127.0.0.1:70000";
    FV_ASSERT_STATUS(fv_sink_open(&r, &sink), FV_ERR_BAD_PARAM, "70000");
    r.uri = "rtp://:5000";
    FV_ASSERT_STATUS(fv_sink_open(&r, &sink), FV_ERR_BAD_PARAM, "host:port");
    assert_null(sink);
    /* hosts that do not resolve are refused at open, naming the host */
    r.uri = "rtp://256.1.1.1:5000";
    FV_ASSERT_STATUS(fv_sink_open(&r, &sink), FV_ERR_IO, "'256.1.1.1' does not resolve");
    assert_null(sink);
    r.uri = "rtp://nonexistent.invalid:5000";
    FV_ASSERT_STATUS(fv_sink_open(&r, &sink), FV_ERR_IO, "'nonexistent.invalid' does not resolve");
    assert_null(sink);
    /* A file that cannot be created. */
    d.uri = "file:///nonexistent-dir-fovea/out.mp4";
    FV_ASSERT_STATUS(fv_sink_open(&d, &sink), FV_ERR_IO, "out.mp4");
    assert_null(sink);
}

/* A fast non-live source fills the appsink's queue while we sleep; LATEST
 * takes the newest and counts the others as dropped. */
static void test_capture_latest(void **state) {
    (void)state;
    fv_source_desc d = {.uri = "gst://videotestsrc ! video/x-raw,width=64,height=48",
                        .format = FV_PIXEL_GRAY8};
    fv_source *src = NULL;
    FV_ASSERT_OK(fv_source_open(&d, &src));
    fv_source_frame fr;
    FV_ASSERT_OK(fv_source_capture(src, 0, &fr));
    assert_int_equal(fr.sequence, 0);
    assert_int_equal(fr.dropped, 0);
    assert_int_equal(fr.image.format, FV_PIXEL_GRAY8);
    sleep_ms(200);
    FV_ASSERT_OK(fv_source_capture(src, FV_SOURCE_CAPTURE_LATEST, &fr));
    assert_int_equal(fr.sequence, 1);
    assert_true(fr.dropped >= 1);
    uint64_t dropped = fr.dropped;
    FV_ASSERT_OK(fv_source_capture(src, 0, &fr));
    assert_int_equal(fr.sequence, 2);
    assert_int_equal(fr.dropped, dropped);
    fv_source_close(src);
}

/* Requested size, rate and format are converted to (NV12: two planes). */
static void test_convert_nv12(void **state) {
    (void)state;
    fv_source_desc d = {.uri = "gst://videotestsrc num-buffers=3",
                        .width = 96,
                        .height = 64,
                        .rate = 15,
                        .format = FV_PIXEL_NV12};
    fv_source *src = NULL;
    FV_ASSERT_OK(fv_source_open(&d, &src));
    fv_source_info si;
    FV_ASSERT_OK(fv_source_info_get(src, &si));
    assert_int_equal(si.format, FV_PIXEL_NV12);
    assert_int_equal(si.width, 96);
    assert_int_equal(si.height, 64);
    assert_true(fabs(si.rate - 15) < 1e-9);
    fv_source_frame fr;
    FV_ASSERT_OK(fv_source_capture(src, 0, &fr));
    assert_non_null(fr.image.uv);
    assert_true(fr.image.uv_stride >= 96);
    assert_true((unsigned char *)fr.image.uv >= (unsigned char *)fr.image.data + 96 * 64);
    fv_source_close(src);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_mp4), cmocka_unit_test(test_round_trip_mkv),
        cmocka_unit_test(test_rtp_loopback),   cmocka_unit_test(test_bad_pipeline),
        cmocka_unit_test(test_missing_video),  cmocka_unit_test(test_no_display),
        cmocka_unit_test(test_csi_absent),     cmocka_unit_test(test_sink_checks),
        cmocka_unit_test(test_sink_captions),  cmocka_unit_test(test_capture_latest),
        cmocka_unit_test(test_convert_nv12),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    /* GStreamer keeps its registry and types until gst_deinit; freeing them
     * keeps LeakSanitizer's report to what fovea itself leaks. Looked up at
     * run time: the test does not link GStreamer itself. */
    void (*deinit)(void) = NULL;
    *(void **)&deinit = dlsym(RTLD_DEFAULT, "gst_deinit");
    if (deinit) deinit();
    return failed;
}
