/* libFuzzer entry point for source and sink URIs: fv_source_open and
 * fv_sink_open (platform/src/source.c, sink.c) with every backend that
 * would touch a device, a file or the network replaced by a stub that only
 * parses what it was given: file names and their %d patterns
 * (fv__index_pattern_parse and _name), test://'s query
 * (fv__test_query_parse). source.c is compiled without V4L2 and GStreamer,
 * so v4l2://, csi://, gst://, video files, display:// and rtp:// fail
 * there with FV_ERR_NOT_SUPPORTED.
 *
 * Built only with clang and -DFV_BUILD_FUZZERS=ON; toolchain/fuzz.sh builds
 * and runs it on corpus/fuzz_uri. Input: one byte choosing what is parsed
 * and a few desc fields, then the URI. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "io_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_pattern(const char *op, const char *path) {
    fv__index_pattern p;
    int r = fv__index_pattern_parse(op, path, &p);
    if (r < -1 || r > 1) abort();
    if (r == 1) {
        char name[8192 + 64];
        static const unsigned long long idx[] = {0, 1, 99999, ULLONG_MAX};
        for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {
            fv__index_pattern_name(&p, idx[i], name, sizeof name);
            if (!memchr(name, '\0', sizeof name)) abort();
        }
    } else if (r == -1 && !fv_last_error()[0]) {
        abort();
    }
    (void)fv__is_video_path(path);
}

fv_status fv__source_open_image(fv_source *src, const char *path) {
    (void)src;
    check_pattern("source_open", path);
    return fv__error(FV_ERR_IO, "fuzz: files are not opened");
}

fv_status fv__source_open_test(fv_source *src, const char *query) {
    (void)src;
    size_t n = strlen(query) + 1;
    char *buf = malloc(n);
    if (!buf) abort();
    fv__test_query q = {.rate = 30, .frames = -1};
    fv_status s = fv__test_query_parse(query, &q, buf, n);
    if (s == FV_OK) {
        if (!(q.rate >= 0 && q.rate <= 10000) || q.items < 0 || q.items > 8 ||
            (q.frames != -1 && q.frames < 1) || (q.image && strlen(q.image) >= FV__TEST_PATH_MAX) ||
            (q.fashion && strlen(q.fashion) >= FV__TEST_PATH_MAX))
            abort();
    } else if (s != FV_ERR_BAD_PARAM) {
        abort();
    }
    free(buf);
    return s == FV_OK ? fv__error(FV_ERR_IO, "fuzz: test:// is not opened") : s;
}

fv_status fv__sink_open_images(fv_sink *sink, const char *path) {
    (void)sink;
    check_pattern("sink_open", path);
    return fv__error(FV_ERR_IO, "fuzz: files are not written");
}

static fv_status null_write(fv_sink *sink, const fv_image *frame, int64_t timestamp_ns) {
    (void)sink, (void)frame, (void)timestamp_ns;
    return FV_OK;
}

static fv_status null_close(fv_sink *sink) {
    (void)sink;
    return FV_OK;
}

static const fv__sink_ops null_ops = {null_write, null_close, NULL};

fv_status fv__sink_open_null(fv_sink *sink) {
    sink->ops = &null_ops;
    return FV_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    unsigned sel = data[0];
    /* An exact copy with its terminator: reads past it are ASan's to catch. */
    char *uri = malloc(size);
    if (!uri) abort();
    memcpy(uri, data + 1, size - 1);
    uri[size - 1] = '\0';
    static const fv_pixel_format formats[] = {0, FV_PIXEL_RGB24, FV_PIXEL_GRAY8, FV_PIXEL_NV12};
    if ((sel & 1) == 0) {
        fv_source_desc d = {.uri = uri};
        d.format = formats[(sel >> 1) & 3];
        if (sel & 8) d.width = 640, d.height = 480;
        if (sel & 16) d.rate = 15;
        if (sel & 32) d.loop = 1;
        if (sel & 64) d.fourcc = 0x47504a4d; /* MJPG */
        fv_source *src = (fv_source *)1;
        fv_status s = fv_source_open(&d, &src);
        if (s == FV_OK || src || !fv_last_error()[0]) abort(); /* every stub fails */
        (void)fv_source_scheme(uri);
    } else {
        fv_sink_desc d = {.uri = uri, .width = 64, .height = 48, .format = FV_PIXEL_RGB24};
        if (sel & 2) d.format = FV_PIXEL_GRAY8;
        if (sel & 4) d.rate = 60;
        if (sel & 8) d.text_overlay = 1;
        fv_sink *sink = (fv_sink *)1;
        fv_status s = fv_sink_open(&d, &sink);
        if (s == FV_OK) {
            fv_sink_info info;
            if (!sink || fv_sink_info_get(sink, &info) != FV_OK) abort();
            if (fv_sink_close(sink) != FV_OK) abort();
        } else if (sink || !fv_last_error()[0]) {
            abort();
        }
    }
    free(uri);
    return 0;
}
