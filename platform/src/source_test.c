/* test://: a moving view over a real photo, any size, rate and format.
 *
 * Cheap per frame: at open the photo is scaled (bilinear) once to a canvas
 * at least 1.25x the output in both dimensions, and converted once to the
 * output format when that is RGB-like; each capture copies a window whose
 * position is a function of the frame number alone (a ping-pong pan at two
 * speeds), so frame n is the same in every run. YUV outputs convert the
 * window from the RGB canvas into a frame buffer allocated at open. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "io_internal.h"
#include "source_test_items.h"

#define DEFAULT_W    1280
#define DEFAULT_H    720
#define DEFAULT_RATE 30.0

typedef struct test_src {
    fv_image canvas; /* scaled photo: output format if RGB-like, else RGB24 */
    int yuv;         /* output is YUYV/UYVY/NV12: convert each window */
    fv_image frame;  /* dense output frame, allocated at open */
    size_t bytes;
    double rate;      /* 0: unpaced */
    int64_t frames;   /* frames=N, or -1 */
    uint64_t next;    /* next frame number */
    uint64_t tick;    /* pacing: frames delivered or skipped so far */
    int64_t start_ns; /* pacing: when tick 0 was delivered */
    uint64_t dropped; /* skipped under FV_SOURCE_CAPTURE_LATEST */
    int stepx, stepy; /* pan speed, pixels per frame */
    char photo[FV__TEST_PATH_MAX];
    /* items=N: Fashion-MNIST items painted on each frame (the canvas then
     * stays RGB24; each window goes through scratch, RGB24, w x h) */
    int nitems;
    char fashion[FV__TEST_PATH_MAX];
    fv__test_items *items;
    fv_image scratch;
} test_src;

static int file_readable(const char *path) {
    return access(path, R_OK) == 0;
}

/* Position in [0, span] of a bounce at step pixels per frame. */
static int pingpong(uint64_t n, int step, int span) {
    if (span <= 0) return 0;
    uint64_t u = (n * (uint64_t)step) % (2 * (uint64_t)span);
    return (int)(u <= (uint64_t)span ? u : 2 * (uint64_t)span - u);
}

/* Bilinear resize of a dense RGB24 image into a dense RGB24 dst (pixel
 * centres aligned, as OpenCV's INTER_LINEAR). */
static void resize_bilinear(const fv_host_image *s, fv_image *d) {
    const unsigned char *sp = s->data;
    unsigned char *dp = d->data;
    double fx = (double)s->width / d->width, fy = (double)s->height / d->height;
    for (int y = 0; y < d->height; y++) {
        double syf = (y + 0.5) * fy - 0.5;
        if (syf < 0) syf = 0;
        int y0 = (int)syf;
        if (y0 > s->height - 1) y0 = s->height - 1;
        int y1 = y0 + 1 < s->height ? y0 + 1 : y0;
        float wy = (float)(syf - y0);
        const unsigned char *r0 = sp + (size_t)y0 * s->stride, *r1 = sp + (size_t)y1 * s->stride;
        unsigned char *o = dp + (size_t)y * d->stride;
        for (int x = 0; x < d->width; x++) {
            double sxf = (x + 0.5) * fx - 0.5;
            if (sxf < 0) sxf = 0;
            int x0 = (int)sxf;
            if (x0 > s->width - 1) x0 = s->width - 1;
            int x1 = x0 + 1 < s->width ? x0 + 1 : x0;
            float wx = (float)(sxf - x0);
            for (int c = 0; c < 3; c++) {
                float a = r0[3 * x0 + c] + wx * (r0[3 * x1 + c] - r0[3 * x0 + c]);
                float b = r1[3 * x0 + c] + wx * (r1[3 * x1 + c] - r1[3 * x0 + c]);
                float v = a + wy * (b - a);
                o[3 * x + c] = (unsigned char)(v < 0 ? 0 : (v > 255 ? 255 : v + 0.5f));
            }
        }
    }
}

/* Sleeps until tick n is due (start + n / rate); FV_ERR_TIMEOUT when that
 * is further away than timeout_ms. Under LATEST, when behind, skips to the
 * tick due now (*skipped of them). */
static fv_status pace(fv_source *src, test_src *t, uint32_t flags, uint64_t *skipped) {
    *skipped = 0;
    if (!(t->rate > 0)) return FV_OK;
    int64_t now = fv__now_ns();
    if (t->tick == 0) {
        t->start_ns = now;
        return FV_OK;
    }
    int64_t due = t->start_ns + (int64_t)((double)t->tick * 1e9 / t->rate);
    if (due > now) {
        int64_t limit = (int64_t)src->desc.timeout_ms * 1000000;
        int late = due - now > limit;
        int64_t until = late ? now + limit : due;
        struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
        if (late)
            return fv__error(FV_ERR_TIMEOUT,
                             "source_capture: '%s': next frame due in %.3f s, timeout is %d ms",
                             src->desc.uri, (double)(due - now) / 1e9, src->desc.timeout_ms);
    } else if (flags & FV_SOURCE_CAPTURE_LATEST) {
        uint64_t current = (uint64_t)((double)(now - t->start_ns) * t->rate / 1e9);
        if (current > t->tick) {
            *skipped = current - t->tick;
            t->tick = current;
        }
    }
    return FV_OK;
}

/* The next frame into dst (the caller's buffer, checked by source.c), or
 * into the source's own frame when dst is NULL. */
static fv_status test_make(fv_source *src, uint32_t flags, const fv_image *dst,
                           fv_source_frame *out) {
    test_src *t = src->impl;
    if (t->frames > 0 && t->next >= (uint64_t)t->frames) {
        if (!src->desc.loop)
            return fv__error(FV_ERR_END_OF_STREAM, "source_capture: '%s': end after frames=%lld",
                             src->desc.uri, (long long)t->frames);
        t->next = 0;
    }
    uint64_t skipped;
    fv_status s = pace(src, t, flags, &skipped);
    if (s != FV_OK) return s;
    if (skipped) {
        /* Skip as many frames, never past the end of a finite stream. */
        uint64_t left = t->frames > 0 ? (uint64_t)t->frames - 1 - t->next : UINT64_MAX;
        if (t->frames > 0 && src->desc.loop)
            t->next = (t->next + skipped) % (uint64_t)t->frames;
        else
            t->next += skipped < left ? skipped : left;
        t->dropped += skipped;
    }
    int w = t->frame.width, h = t->frame.height;
    int x = pingpong(t->next, t->stepx, t->canvas.width - w);
    int y = pingpong(t->next, t->stepy, t->canvas.height - h);
    size_t bpp = fv_image_bytes(t->canvas.format, 1, 1);
    fv_image window = t->canvas;
    window.width = w, window.height = h;
    window.data = (unsigned char *)t->canvas.data + (size_t)y * t->canvas.stride + (size_t)x * bpp;
    if (t->items) {
        size_t row = (size_t)w * 3;
        for (int r = 0; r < h; r++)
            memcpy((unsigned char *)t->scratch.data + (size_t)r * row,
                   (const unsigned char *)window.data + (size_t)r * window.stride, row);
        fv__test_items_paint(t->items, t->next, &t->scratch);
        if (t->frame.format == FV_PIXEL_RGB24)
            memcpy(t->frame.data, t->scratch.data, row * (size_t)h);
        else if ((s = fv__host_convert(&t->scratch, &t->frame)) != FV_OK)
            return s;
    } else if (t->yuv) {
        s = fv__host_convert(&window, &t->frame);
        if (s != FV_OK) return s;
    } else {
        /* the plain moving window: straight into the caller's buffer */
        const fv_image *to = dst ? dst : &t->frame;
        size_t row = (size_t)w * bpp;
        fv__copy_rows(to->data, to->stride ? to->stride : row, window.data, window.stride, row,
                      (size_t)h);
        if (dst) {
            out->image = *dst;
            dst = NULL;
        } else {
            out->image = t->frame;
        }
    }
    if (dst) { /* items or YUV: made in the source's frame */
        fv__copy_image(&t->frame, dst);
        out->image = *dst;
    } else if (!out->image.data) {
        out->image = t->frame;
    }
    t->next++;
    t->tick++;
    out->bytes = out->image.data == t->frame.data ? t->bytes : 0; /* 0: source.c fills it */
    out->timestamp_ns = fv__now_ns();
    out->sequence = src->sequence++;
    out->dropped = t->dropped;
    return FV_OK;
}

static void test_close(fv_source *src) {
    test_src *t = src->impl;
    if (t) {
        free(t->canvas.data);
        free(t->frame.data);
        free(t->scratch.data);
        fv__test_items_close(t->items);
    }
    free(t);
    src->impl = NULL;
}

static fv_status test_capture(fv_source *src, uint32_t flags, fv_source_frame *out) {
    return test_make(src, flags, NULL, out);
}

static fv_status test_capture_into(fv_source *src, uint32_t flags, const fv_image *dst,
                                   fv_source_frame *out) {
    return test_make(src, flags, dst, out);
}

static const fv__source_ops test_ops = {test_capture, test_close, test_capture_into};

static fv_status open_canvas(fv_source *src, test_src *t, int w, int h, fv_pixel_format f) {
    const char *op = "source_open: test://";
    fv_host_image photo;
    fv_status s = fv_image_file_load(t->photo, FV_PIXEL_RGB24, &photo);
    if (s != FV_OK) return s;
    /* Scale so that the canvas covers 1.25x the output (and a margin of at
     * least 8 pixels, so that even tiny views move). */
    double need_w = 1.25 * w > w + 8 ? 1.25 * w : w + 8;
    double need_h = 1.25 * h > h + 8 ? 1.25 * h : h + 8;
    double k =
        need_w / photo.width > need_h / photo.height ? need_w / photo.width : need_h / photo.height;
    long cw = (long)(photo.width * k + 0.999), ch = (long)(photo.height * k + 0.999);
    if (cw < (long)need_w) cw = (long)need_w + 1;
    if (ch < (long)need_h) ch = (long)need_h + 1;
    /* A view far from the photo's shape (32768x1) would make the whole
     * scaled photo quadratic in the long side (40960^2 pixels): then the
     * canvas is just the needed size, scaled from a centred crop of the
     * photo with the view's shape, so set-up stays linear in the frame. */
    fv_host_image src_img = photo;
    if ((double)cw * (double)ch > 4.0 * need_w * need_h) {
        double aspect = need_w / need_h;
        double crop_w = photo.width, crop_h = photo.width / aspect;
        if (crop_h > photo.height) crop_h = photo.height, crop_w = photo.height * aspect;
        src_img.width = crop_w < 1 ? 1 : (int)crop_w;
        src_img.height = crop_h < 1 ? 1 : (int)crop_h;
        src_img.data = (unsigned char *)photo.data +
                       (size_t)((photo.height - src_img.height) / 2) * photo.stride +
                       (size_t)((photo.width - src_img.width) / 2) * 3;
        cw = (long)need_w + 1;
        ch = (long)need_h + 1;
    }
    size_t rgb_bytes = (size_t)cw * (size_t)ch * 3;
    t->canvas =
        (fv_image){FV_PIXEL_RGB24, (int)cw, (int)ch, (size_t)cw * 3, malloc(rgb_bytes), NULL, 0};
    if (!t->canvas.data) {
        fv_host_image_free(&photo);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory for a %ldx%ld canvas", op,
                         cw, ch);
    }
    resize_bilinear(&src_img, &t->canvas);
    fv_host_image_free(&photo);
    if (!t->yuv && !t->nitems && f != FV_PIXEL_RGB24) {
        size_t bytes = fv_image_bytes(f, (int)cw, (int)ch);
        fv_image conv = {f,    (int)cw, (int)ch, fv_image_bytes(f, (int)cw, 1), malloc(bytes),
                         NULL, 0};
        if (!conv.data)
            return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory for a %ldx%ld canvas",
                             op, cw, ch);
        s = fv__host_convert(&t->canvas, &conv);
        free(t->canvas.data);
        t->canvas = conv;
        if (s != FV_OK) return s;
    }
    return FV_OK;
}

fv_status fv__source_open_test(fv_source *src, const char *query) {
    const char *op = "source_open: test://";
    const fv_source_desc *d = &src->desc;
    test_src *t = calloc(1, sizeof *t);
    char *qbuf = malloc(strlen(query) + 1);
    if (!t || !qbuf) {
        free(t);
        free(qbuf);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    }
    t->rate = d->rate > 0 ? d->rate : DEFAULT_RATE;
    t->frames = -1;
    fv__test_query q = {.rate = t->rate, .frames = -1};
    fv_status s = fv__test_query_parse(query, &q, qbuf, strlen(query) + 1);
    const char *image = q.image;
    t->rate = q.rate;
    t->frames = q.frames;
    t->nitems = q.items;
    if (q.fashion) strcpy(t->fashion, q.fashion); /* shorter than FV__TEST_PATH_MAX */
    int w = d->width ? d->width : DEFAULT_W, h = d->height ? d->height : DEFAULT_H;
    fv_pixel_format f = d->format ? d->format : FV_PIXEL_RGB24;
    t->yuv = f == FV_PIXEL_YUYV || f == FV_PIXEL_UYVY || f == FV_PIXEL_NV12;
    if (s == FV_OK) {
        if (!image)
            image =
                file_readable(FV_TEST_IMAGE_BUILD) ? FV_TEST_IMAGE_BUILD : FV_TEST_IMAGE_INSTALL;
        if (strlen(image) >= sizeof t->photo)
            s = fv__error(FV_ERR_BAD_PARAM, "%s: image path of %zu characters is too long", op,
                          strlen(image));
        else
            strcpy(t->photo, image);
    }
    if (s == FV_OK && t->yuv && ((w & 1) || (f == FV_PIXEL_NV12 && (h & 1))))
        s = fv__error(FV_ERR_NOT_SUPPORTED, "%s: size %dx%d: %s needs an even %s", op, w, h,
                      fv_pixel_format_name(f), f == FV_PIXEL_NV12 ? "width and height" : "width");
    free(qbuf);
    if (s == FV_OK && t->nitems) {
        s = fv__test_items_open(t->fashion[0] ? t->fashion : FV_TEST_FASHION, t->nitems, &t->items);
        t->scratch = (fv_image){FV_PIXEL_RGB24, w, h, (size_t)w * 3, NULL, NULL, 0};
        if (s == FV_OK && !(t->scratch.data = malloc((size_t)w * 3 * (size_t)h)))
            s = fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    }
    if (s == FV_OK) s = open_canvas(src, t, w, h, f);
    if (s == FV_OK) {
        t->bytes = fv_image_bytes(f, w, h);
        t->frame = (fv_image){
            f,    w, h, f == FV_PIXEL_NV12 ? (size_t)w : fv_image_bytes(f, w, 1), malloc(t->bytes),
            NULL, 0};
        if (!t->frame.data)
            s = fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory for a %dx%d frame", op, w,
                          h);
    }
    if (s != FV_OK) {
        free(t->canvas.data);
        free(t->frame.data);
        free(t->scratch.data);
        fv__test_items_close(t->items);
        free(t);
        return s;
    }
    /* About 4 s across at 30 fps, vertical a little slower than horizontal. */
    int mx = t->canvas.width - w, my = t->canvas.height - h;
    t->stepx = mx / 120 > 1 ? mx / 120 : 1;
    t->stepy = my / 170 > 1 ? my / 170 : 1;
    fv_source_info *in = &src->info;
    snprintf(in->kind, sizeof in->kind, "test");
    size_t pn = strlen(t->photo) < sizeof in->name ? strlen(t->photo) : sizeof in->name - 1;
    memcpy(in->name, t->photo, pn); /* info holds at most 255 characters */
    in->name[pn] = '\0';
    char rate[32];
    if (t->rate > 0)
        snprintf(rate, sizeof rate, "%g fps", t->rate);
    else
        snprintf(rate, sizeof rate, "unpaced");
    snprintf(in->detail, sizeof in->detail, "moving view%s, %dx%d %s @ %s",
             t->nitems ? " with Fashion-MNIST items" : "", w, h, fv_pixel_format_name(f), rate);
    in->format = f;
    in->width = w;
    in->height = h;
    in->rate = t->rate;
    in->frames = t->frames > 0 && !d->loop ? t->frames : -1;
    src->impl = t;
    src->ops = &test_ops;
    return FV_OK;
}
