/* v4l2:// sources: a V4L2 video capture device, after the kernel's capture.c
 * example. The fd is non-blocking and capture polls with the source's
 * timeout; every ioctl retries EINTR; what the driver reports (bytesperline,
 * sizeimage, bytesused) is checked before it is used. Frames point into the
 * dequeued buffer (or, for MJPEG, into the decoder's buffer made at open: mjpeg.c),
 * which is queued again at the start of the next capture or at close. */
#define _GNU_SOURCE /* O_CLOEXEC, nanosleep with -std=c11 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/videodev2.h>
#include "io_internal.h"

#define MAX_BUFFERS  32
#define OFFERS_CHARS 560 /* the offers list in a refusal stays within this */

typedef struct v4l2_src {
    char path[128];
    int fd; /* -1: closed (reconnect: waiting for the camera) */
    int userptr;
    int streaming;
    /* negotiated; a reconnect asks for exactly these again */
    uint32_t fourcc;
    int width, height;
    uint32_t bytesperline, sizeimage;
    struct v4l2_fract tpf; /* {0, 0}: the driver's, unknown */
    double rate;
    fv_pixel_format format; /* what frames are delivered in */
    char card[33], driver[17];
    struct {
        void *start;
        size_t length;
    } buf[MAX_BUFFERS];
    unsigned nbuf;
    int held; /* buffer the caller's frame points into, or -1 */
    int have_seq;
    uint32_t last_seq;
    uint64_t dropped;
    fv__mjpeg *jpeg; /* MJPEG: decoder and its output buffer, made once at open */
} v4l2_src;

static int xioctl(int fd, unsigned long req, void *arg) {
    int r;
    do
        r = ioctl(fd, req, arg);
    while (r == -1 && errno == EINTR);
    return r;
}

static const char *fourcc_str(uint32_t f, char s[5]) {
    for (int i = 0; i < 4; i++) {
        char c = (char)((f >> (8 * i)) & 0xff);
        s[i] = c >= 0x20 && c < 0x7f ? c : '?';
    }
    s[4] = '\0';
    for (int i = 3; i > 0 && s[i] == ' '; i--)
        s[i] = '\0';
    return s;
}

static fv_pixel_format format_of(uint32_t fourcc) {
    switch (fourcc) {
    case V4L2_PIX_FMT_YUYV:
        return FV_PIXEL_YUYV;
    case V4L2_PIX_FMT_UYVY:
        return FV_PIXEL_UYVY;
    case V4L2_PIX_FMT_NV12:
        return FV_PIXEL_NV12;
    case V4L2_PIX_FMT_RGB24:
        return FV_PIXEL_RGB24;
    case V4L2_PIX_FMT_BGR24:
        return FV_PIXEL_BGR24;
    case V4L2_PIX_FMT_GREY:
        return FV_PIXEL_GRAY8;
    default:
        return (fv_pixel_format)0;
    }
}

static uint32_t fourcc_of(fv_pixel_format f) {
    switch (f) {
    case FV_PIXEL_YUYV:
        return V4L2_PIX_FMT_YUYV;
    case FV_PIXEL_UYVY:
        return V4L2_PIX_FMT_UYVY;
    case FV_PIXEL_NV12:
        return V4L2_PIX_FMT_NV12;
    case FV_PIXEL_RGB24:
        return V4L2_PIX_FMT_RGB24;
    case FV_PIXEL_BGR24:
        return V4L2_PIX_FMT_BGR24;
    case FV_PIXEL_GRAY8:
        return V4L2_PIX_FMT_GREY;
    default:
        return 0;
    }
}

static int is_mjpeg(uint32_t fourcc) {
    return fourcc == V4L2_PIX_FMT_MJPEG || fourcc == V4L2_PIX_FMT_JPEG;
}

/* Bytes per pixel of a packed format's row (NV12: the Y plane's). */
static uint32_t row_bpp(uint32_t fourcc) {
    switch (format_of(fourcc)) {
    case FV_PIXEL_YUYV:
    case FV_PIXEL_UYVY:
        return 2;
    case FV_PIXEL_RGB24:
    case FV_PIXEL_BGR24:
        return 3;
    default:
        return 1;
    }
}

/* Bytes a frame of the negotiated format must hold (0 for MJPEG). */
static size_t frame_need(const v4l2_src *v) {
    if (is_mjpeg(v->fourcc)) return 0;
    size_t plane = (size_t)v->bytesperline * (size_t)v->height;
    return v->fourcc == V4L2_PIX_FMT_NV12 ? plane + plane / 2 : plane;
}

/* ---- what the camera offers -------------------------------------------- */

typedef struct strbuf {
    char *s;
    size_t cap, len;
    int full;
} strbuf;

static void sb_add(strbuf *b, const char *fmt, ...) FV__PLATFORM_PRINTF(2, 3);
static void sb_add(strbuf *b, const char *fmt, ...) {
    if (b->full) return;
    char tmp[96];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || b->len + (size_t)n + 4 >= b->cap) { /* room for " ..." */
        memcpy(b->s + b->len, " ...", 5);
        b->len += 4;
        b->full = 1;
        return;
    }
    memcpy(b->s + b->len, tmp, (size_t)n + 1);
    b->len += (size_t)n;
}

static void add_rates(strbuf *b, int fd, uint32_t fourcc, uint32_t w, uint32_t h) {
    struct v4l2_frmivalenum iv = {.pixel_format = fourcc, .width = w, .height = h};
    for (iv.index = 0; iv.index < 16 && xioctl(fd, VIDIOC_ENUM_FRAMEINTERVALS, &iv) == 0;
         iv.index++) {
        if (iv.type == V4L2_FRMIVAL_TYPE_DISCRETE) {
            if (iv.discrete.numerator)
                sb_add(b, "%s%g", iv.index ? "," : "@",
                       (double)iv.discrete.denominator / iv.discrete.numerator);
        } else if (iv.stepwise.min.numerator && iv.stepwise.max.numerator) {
            sb_add(b, "@%g-%g", (double)iv.stepwise.max.denominator / iv.stepwise.max.numerator,
                   (double)iv.stepwise.min.denominator / iv.stepwise.min.numerator);
            break;
        }
    }
}

static void add_format(strbuf *b, int fd, uint32_t fourcc) {
    char cc[5];
    sb_add(b, "%s%s", b->len ? "; " : "", fourcc_str(fourcc, cc));
    struct v4l2_frmsizeenum fs = {.pixel_format = fourcc};
    for (fs.index = 0; fs.index < 16 && xioctl(fd, VIDIOC_ENUM_FRAMESIZES, &fs) == 0; fs.index++) {
        if (fs.type == V4L2_FRMSIZE_TYPE_DISCRETE) {
            sb_add(b, " %ux%u", fs.discrete.width, fs.discrete.height);
            add_rates(b, fd, fourcc, fs.discrete.width, fs.discrete.height);
        } else {
            sb_add(b, " %ux%u-%ux%u", fs.stepwise.min_width, fs.stepwise.min_height,
                   fs.stepwise.max_width, fs.stepwise.max_height);
            break;
        }
    }
}

/* "YUYV 640x480@25,5 1280x720@10; UYVY ...", bounded: the format asked for
 * first (when the camera has it), then the others fovea reads, then the
 * names of the rest. */
static void list_offers(int fd, uint32_t asked, char *out, size_t cap) {
    strbuf b = {out, cap, 0, 0};
    out[0] = '\0';
    uint32_t fmts[64];
    unsigned n = 0;
    struct v4l2_fmtdesc fd_ = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE};
    for (fd_.index = 0; n < 64 && xioctl(fd, VIDIOC_ENUM_FMT, &fd_) == 0; fd_.index++)
        fmts[n++] = fd_.pixelformat;
    if (n == 0) {
        sb_add(&b, "no formats (VIDIOC_ENUM_FMT gave none)");
        return;
    }
    for (unsigned i = 0; i < n; i++)
        if (fmts[i] == asked) add_format(&b, fd, fmts[i]);
    for (unsigned i = 0; i < n; i++)
        if (fmts[i] != asked && (format_of(fmts[i]) || is_mjpeg(fmts[i])))
            add_format(&b, fd, fmts[i]);
    int first = 1;
    for (unsigned i = 0; i < n; i++) {
        if (fmts[i] == asked || format_of(fmts[i]) || is_mjpeg(fmts[i])) continue;
        char cc[5];
        sb_add(&b, "%s%s", first ? "; fovea does not read: " : " ", fourcc_str(fmts[i], cc));
        first = 0;
    }
}

/* ---- MJPEG --------------------------------------------------------------- */

/* fv__mjpeg_* messages begin "mjpeg_<verb>: "; ours name the source instead. */
static fv_status mjpeg_failed(fv_source *src, const char *op, fv_status s) {
    const char *m = fv_last_error(), *colon = strstr(m, ": ");
    char why[768];
    snprintf(why, sizeof why, "%s", colon ? colon + 2 : m);
    return fv__error(s, "%s: %s: %s", op, src->desc.uri, why);
}

/* ---- device ------------------------------------------------------------- */

static void stop_device(v4l2_src *v) {
    if (v->fd >= 0 && v->streaming) {
        int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        xioctl(v->fd, VIDIOC_STREAMOFF, &type);
    }
    v->streaming = 0;
    for (unsigned i = 0; i < v->nbuf; i++)
        if (!v->userptr && v->buf[i].start) munmap(v->buf[i].start, v->buf[i].length);
    memset(v->buf, 0, sizeof v->buf);
    v->nbuf = 0;
    v->held = -1;
    if (v->fd >= 0) close(v->fd);
    v->fd = -1;
}

/* op: "source_open" or "source_capture" (reconnecting). */
static fv_status open_device(fv_source *src, const char *op) {
    v4l2_src *v = src->impl;
    v->fd = open(v->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (v->fd < 0)
        return fv__error(FV_ERR_IO, "%s: %s: cannot open %s: %s", op, src->desc.uri, v->path,
                         strerror(errno));
    struct v4l2_capability cap;
    memset(&cap, 0, sizeof cap);
    if (xioctl(v->fd, VIDIOC_QUERYCAP, &cap) < 0) {
        int e = errno;
        return fv__error(e == ENOTTY || e == EINVAL ? FV_ERR_NOT_SUPPORTED : FV_ERR_IO,
                         "%s: %s: VIDIOC_QUERYCAP failed on %s: %s%s", op, src->desc.uri, v->path,
                         strerror(e), e == ENOTTY ? " (not a V4L2 device)" : "");
    }
    memcpy(v->card, cap.card, sizeof cap.card);
    v->card[32] = '\0';
    memcpy(v->driver, cap.driver, sizeof cap.driver);
    v->driver[16] = '\0';
    uint32_t caps = cap.capabilities & V4L2_CAP_DEVICE_CAPS ? cap.device_caps : cap.capabilities;
    if (!(caps & V4L2_CAP_VIDEO_CAPTURE) || !(caps & V4L2_CAP_STREAMING))
        return fv__error(FV_ERR_NOT_SUPPORTED,
                         "%s: %s (%s, driver %s): not a streaming video capture device "
                         "(device caps 0x%08x: video capture %s, streaming %s)",
                         op, src->desc.uri, v->card, v->driver, (unsigned)caps,
                         caps & V4L2_CAP_VIDEO_CAPTURE ? "yes" : "no",
                         caps & V4L2_CAP_STREAMING ? "yes" : "no");
    return FV_OK;
}

static fv_status refuse(fv_source *src, const char *why, uint32_t fourcc, int w, int h,
                        double rate) {
    v4l2_src *v = src->impl;
    char offers[OFFERS_CHARS], cc[5], size[32] = "its current size", fps[32] = "";
    list_offers(v->fd, fourcc, offers, sizeof offers);
    const char *what = fourcc ? fourcc_str(fourcc, cc) : fv_pixel_format_name(src->desc.format);
    if (w) snprintf(size, sizeof size, "%dx%d", w, h);
    if (rate > 0) snprintf(fps, sizeof fps, " at %g fps", rate);
    return fv__error(FV_ERR_NOT_SUPPORTED,
                     "source_open: %s (%s): cannot give %s %s%s%s; it offers: %s", src->desc.uri,
                     v->card, size, what, fps, why, offers);
}

/* S_FMT/S_PARM for what was asked (first open) or for exactly what was
 * negotiated before (reconnect). */
static fv_status negotiate(fv_source *src, int again) {
    v4l2_src *v = src->impl;
    const fv_source_desc *d = &src->desc;
    struct v4l2_format f = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE};
    if (xioctl(v->fd, VIDIOC_G_FMT, &f) < 0)
        return fv__error(FV_ERR_FORMAT, "source_open: %s (%s): VIDIOC_G_FMT failed: %s", d->uri,
                         v->card, strerror(errno));
    uint32_t want = again ? v->fourcc : d->fourcc ? d->fourcc : fourcc_of(d->format);
    int w = again ? v->width : d->width, h = again ? v->height : d->height;
    double rate = again ? v->rate : d->rate;
    if (!want && d->format)
        return refuse(src, " (fovea reads no V4L2 format as that one)", 0, w, h, rate);
    if (!want) want = f.fmt.pix.pixelformat;
    if (!format_of(want) && !is_mjpeg(want))
        return refuse(src, " (fovea reads YUYV, UYVY, NV12, RGB3, BGR3, GREY and MJPG)", want, w, h,
                      rate);
    if (d->fourcc && !is_mjpeg(want) && d->format && format_of(want) != d->format)
        return fv__error(FV_ERR_NOT_SUPPORTED,
                         "source_open: %s: fourcc %s gives %s, not the format asked (%s); "
                         "fovea converts only MJPEG",
                         d->uri, fourcc_str(want, (char[5]){0}),
                         fv_pixel_format_name(format_of(want)), fv_pixel_format_name(d->format));
    f.fmt.pix.pixelformat = want;
    if (w) {
        f.fmt.pix.width = (uint32_t)w;
        f.fmt.pix.height = (uint32_t)h;
    }
    f.fmt.pix.field = V4L2_FIELD_ANY;
    f.fmt.pix.bytesperline = 0; /* the driver's choice */
    if (xioctl(v->fd, VIDIOC_S_FMT, &f) < 0) {
        if (errno == EBUSY)
            return fv__error(FV_ERR_IO,
                             "source_open: %s (%s): VIDIOC_S_FMT: device busy "
                             "(another program is streaming from it)",
                             d->uri, v->card);
        return refuse(src, " (VIDIOC_S_FMT failed)", want, w, h, rate);
    }
    if (f.fmt.pix.pixelformat != want ||
        (w && ((int)f.fmt.pix.width != w || (int)f.fmt.pix.height != h)))
        return refuse(src, "", want, w, h, rate);
    const struct v4l2_pix_format *p = &f.fmt.pix;
    if (p->width == 0 || p->height == 0 || p->width > 32768 || p->height > 32768)
        return fv__error(FV_ERR_FORMAT, "source_open: %s (%s): driver reports size %ux%u", d->uri,
                         v->card, p->width, p->height);
    if (!is_mjpeg(want)) {
        uint32_t minbpl = p->width * row_bpp(want);
        uint64_t plane = (uint64_t)p->bytesperline * p->height;
        uint64_t need = want == V4L2_PIX_FMT_NV12 ? plane + plane / 2 : plane;
        if (p->bytesperline < minbpl || p->bytesperline > 4 * minbpl + 4096 || p->sizeimage < need)
            return fv__error(FV_ERR_FORMAT,
                             "source_open: %s (%s): driver reports bytesperline %u and "
                             "sizeimage %u for %ux%u %s (need >= %u and >= %llu)",
                             d->uri, v->card, p->bytesperline, p->sizeimage, p->width, p->height,
                             fourcc_str(want, (char[5]){0}), minbpl, (unsigned long long)need);
        if ((want == V4L2_PIX_FMT_YUYV || want == V4L2_PIX_FMT_UYVY || want == V4L2_PIX_FMT_NV12) &&
            ((p->width | (want == V4L2_PIX_FMT_NV12 ? p->height : 0)) & 1))
            return fv__error(FV_ERR_FORMAT, "source_open: %s (%s): odd size %ux%u for %s", d->uri,
                             v->card, p->width, p->height, fourcc_str(want, (char[5]){0}));
    } else if (p->sizeimage == 0) {
        return fv__error(FV_ERR_FORMAT, "source_open: %s (%s): driver reports sizeimage 0 for MJPG",
                         d->uri, v->card);
    }
    /* frame rate */
    struct v4l2_streamparm parm = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE};
    int have_parm = xioctl(v->fd, VIDIOC_G_PARM, &parm) == 0;
    int can_rate = have_parm && (parm.parm.capture.capability & V4L2_CAP_TIMEPERFRAME);
    if (rate > 0) {
        if (!can_rate)
            return refuse(src, " (the driver cannot set a frame rate)", want, w, h, rate);
        struct v4l2_fract *t = &parm.parm.capture.timeperframe;
        if (again && v->tpf.numerator) {
            *t = v->tpf;
        } else {
            t->numerator = 1000;
            t->denominator = (uint32_t)lround(rate * 1000);
        }
        if (xioctl(v->fd, VIDIOC_S_PARM, &parm) < 0)
            return refuse(src, " (VIDIOC_S_PARM failed)", want, w, h, rate);
        double got = t->numerator ? (double)t->denominator / t->numerator : 0;
        if (fabs(got - rate) > rate * 1e-3) return refuse(src, "", want, w, h, rate);
        v->tpf = *t;
        v->rate = got;
    } else if (can_rate && parm.parm.capture.timeperframe.numerator) {
        v->tpf = parm.parm.capture.timeperframe;
        v->rate = (double)v->tpf.denominator / v->tpf.numerator;
    } else {
        v->tpf = (struct v4l2_fract){0, 0};
        v->rate = 0;
    }
    v->fourcc = want;
    v->width = (int)p->width;
    v->height = (int)p->height;
    v->bytesperline = p->bytesperline;
    v->sizeimage = p->sizeimage;
    return FV_OK;
}

/* VIDIOC_QBUF; 0 or the errno. */
static int queue(v4l2_src *v, unsigned i) {
    struct v4l2_buffer b = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .index = i};
    if (v->userptr) {
        b.memory = V4L2_MEMORY_USERPTR;
        b.m.userptr = (unsigned long)v->buf[i].start;
        b.length = (uint32_t)v->buf[i].length;
    } else {
        b.memory = V4L2_MEMORY_MMAP;
    }
    return xioctl(v->fd, VIDIOC_QBUF, &b) < 0 ? errno : 0;
}

static fv_status start_stream(fv_source *src, const char *op) {
    v4l2_src *v = src->impl;
    const fv_source_desc *d = &src->desc;
    struct v4l2_requestbuffers rb = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                     .count = (uint32_t)d->buffers};
    rb.memory = v->userptr ? V4L2_MEMORY_USERPTR : V4L2_MEMORY_MMAP;
    if (v->userptr && d->user_buffer_bytes < v->sizeimage)
        return fv__error(FV_ERR_BAD_PARAM,
                         "%s: %s (%s): user_buffer_bytes %zu is smaller than the driver's "
                         "sizeimage %u (%dx%d)",
                         op, d->uri, v->card, d->user_buffer_bytes, v->sizeimage, v->width,
                         v->height);
    if (xioctl(v->fd, VIDIOC_REQBUFS, &rb) < 0) {
        int e = errno;
        if (e == EINVAL || e == ENOTTY)
            return fv__error(FV_ERR_NOT_SUPPORTED,
                             "%s: %s (%s): the driver refuses %s buffers (%s)", op, d->uri, v->card,
                             v->userptr ? "user-pointer" : "mmap", strerror(e));
        return fv__error(FV_ERR_IO, "%s: %s (%s): VIDIOC_REQBUFS for %d buffers failed: %s", op,
                         d->uri, v->card, d->buffers, strerror(e));
    }
    unsigned n = rb.count;
    if (v->userptr && n > (unsigned)d->buffers) n = (unsigned)d->buffers; /* we have no more */
    if (n > MAX_BUFFERS) n = MAX_BUFFERS;
    if (n < 2)
        return fv__error(FV_ERR_IO, "%s: %s (%s): the driver gave %u buffers (asked %d; need 2)",
                         op, d->uri, v->card, rb.count, d->buffers);
    for (unsigned i = 0; i < n; i++) {
        if (v->userptr) {
            v->buf[i].start = d->user_buffers[i];
            v->buf[i].length = d->user_buffer_bytes;
            v->nbuf = i + 1;
            continue;
        }
        struct v4l2_buffer b = {
            .type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .memory = V4L2_MEMORY_MMAP, .index = i};
        if (xioctl(v->fd, VIDIOC_QUERYBUF, &b) < 0)
            return fv__error(FV_ERR_IO, "%s: %s (%s): VIDIOC_QUERYBUF %u failed: %s", op, d->uri,
                             v->card, i, strerror(errno));
        if (b.length < v->sizeimage)
            return fv__error(FV_ERR_FORMAT,
                             "%s: %s (%s): buffer %u is %u bytes, less than sizeimage %u", op,
                             d->uri, v->card, i, b.length, v->sizeimage);
        void *p = mmap(NULL, b.length, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, b.m.offset);
        if (p == MAP_FAILED)
            return fv__error(FV_ERR_IO, "%s: %s (%s): mmap of buffer %u (%u bytes) failed: %s", op,
                             d->uri, v->card, i, b.length, strerror(errno));
        v->buf[i].start = p;
        v->buf[i].length = b.length;
        v->nbuf = i + 1;
    }
    for (unsigned i = 0; i < n; i++) {
        int e = queue(v, i);
        if (e)
            return fv__error(FV_ERR_IO, "%s: %s (%s): VIDIOC_QBUF of buffer %u failed: %s", op,
                             d->uri, v->card, i, strerror(e));
    }
    int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(v->fd, VIDIOC_STREAMON, &type) < 0)
        return fv__error(FV_ERR_IO, "%s: %s (%s): VIDIOC_STREAMON failed: %s", op, d->uri, v->card,
                         strerror(errno));
    v->streaming = 1;
    v->have_seq = 0;
    return FV_OK;
}

static void fill_info(fv_source *src) {
    v4l2_src *v = src->impl;
    fv_source_info *in = &src->info;
    char cc[5];
    snprintf(in->kind, sizeof in->kind, "v4l2");
    snprintf(in->name, sizeof in->name, "%s (%s)", v->card, v->path);
    if (is_mjpeg(v->fourcc))
        snprintf(in->detail, sizeof in->detail, "%s, %u buffers, driver %s, %s decoded to %s",
                 v->userptr ? "userptr" : "mmap", v->nbuf, v->driver, fourcc_str(v->fourcc, cc),
                 fv_pixel_format_name(v->format));
    else
        snprintf(in->detail, sizeof in->detail, "%s, %u buffers, driver %s, %s",
                 v->userptr ? "userptr" : "mmap", v->nbuf, v->driver, fourcc_str(v->fourcc, cc));
    in->format = v->format;
    in->width = v->width;
    in->height = v->height;
    in->rate = v->rate;
    in->frames = -1;
}

static void v4l2_close(fv_source *src) {
    v4l2_src *v = src->impl;
    if (!v) return;
    stop_device(v);
    fv__mjpeg_destroy(v->jpeg);
    free(v);
    src->impl = NULL;
}

/* ---- capture ------------------------------------------------------------ */

static int vanish_errno(int e) {
    return e == ENODEV || e == ENXIO || e == EIO || e == EPIPE;
}

/* The camera went away: end the stream, or (reconnect) close everything
 * and wait for it. */
static fv_status vanished(fv_source *src, const char *why) {
    v4l2_src *v = src->impl;
    stop_device(v);
    if (src->desc.reconnect)
        return fv__error(FV_ERR_NOT_READY,
                         "source_capture: camera %s (%s) vanished (%s); waiting for it to return",
                         v->path, v->card, why);
    return fv__error(FV_ERR_END_OF_STREAM, "source_capture: camera %s (%s) vanished (%s)", v->path,
                     v->card, why);
}

static fv_status requeue_failed(fv_source *src, unsigned i, int e) {
    v4l2_src *v = src->impl;
    if (vanish_errno(e)) return vanished(src, strerror(e));
    return fv__error(FV_ERR_IO, "source_capture: %s (%s): VIDIOC_QBUF of buffer %u failed: %s",
                     v->path, v->card, i, strerror(e));
}

/* Gaps in the driver's sequence numbers are frames it dropped. */
static void note_sequence(v4l2_src *v, uint32_t seq) {
    if (v->have_seq && seq > v->last_seq + 1) v->dropped += seq - v->last_seq - 1;
    v->have_seq = 1;
    v->last_seq = seq;
}

static int ms_left(int64_t deadline) {
    int64_t left = (deadline - fv__now_ns()) / 1000000;
    return left < 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

/* reconnect: try to reopen with the negotiated settings until the deadline. */
static fv_status reopen(fv_source *src, int64_t deadline) {
    v4l2_src *v = src->impl;
    for (;;) {
        fv_status s = open_device(src, "source_capture");
        if (s == FV_OK) s = negotiate(src, 1);
        if (s == FV_OK) s = start_stream(src, "source_capture");
        if (s == FV_OK) {
            fv__source_log(src, FV_LOG_INFO, "v4l2: camera %s (%s) is back", v->path, v->card);
            return FV_OK;
        }
        stop_device(v);
        if (ms_left(deadline) == 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", fv_last_error());
            return fv__error(FV_ERR_NOT_READY,
                             "source_capture: camera %s is gone; waiting for it to return "
                             "(last try: %s)",
                             v->path, why);
        }
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static fv_status v4l2_capture(fv_source *src, uint32_t flags, fv_source_frame *out) {
    v4l2_src *v = src->impl;
    int64_t deadline = fv__now_ns() + (int64_t)src->desc.timeout_ms * 1000000;
    if (v->fd < 0 && !src->desc.reconnect)
        return fv__error(FV_ERR_END_OF_STREAM, "source_capture: camera %s (%s) vanished earlier",
                         v->path, v->card);
    if (v->fd < 0) {
        fv_status s = reopen(src, deadline);
        if (s != FV_OK) return s;
    }
    if (v->held >= 0) {
        unsigned i = (unsigned)v->held;
        v->held = -1;
        int e = queue(v, i);
        if (e) return requeue_failed(src, i, e);
    }
    struct v4l2_buffer b;
    for (;;) {
        struct pollfd pfd = {.fd = v->fd, .events = POLLIN};
        int r = poll(&pfd, 1, ms_left(deadline));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return fv__error(FV_ERR_IO, "source_capture: %s: poll failed: %s", v->path,
                             strerror(errno));
        if (r == 0)
            return fv__error(FV_ERR_TIMEOUT, "source_capture: %s (%s): no frame within %d ms",
                             v->path, v->card, src->desc.timeout_ms);
        if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL) && !(pfd.revents & POLLIN))
            return vanished(src, pfd.revents & POLLHUP ? "poll: POLLHUP" : "poll: POLLERR");
        memset(&b, 0, sizeof b);
        b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        b.memory = v->userptr ? V4L2_MEMORY_USERPTR : V4L2_MEMORY_MMAP;
        if (xioctl(v->fd, VIDIOC_DQBUF, &b) == 0) break;
        if (errno == EAGAIN) continue;
        if (vanish_errno(errno)) return vanished(src, strerror(errno));
        return fv__error(FV_ERR_IO, "source_capture: %s (%s): VIDIOC_DQBUF failed: %s", v->path,
                         v->card, strerror(errno));
    }
    if (flags & FV_SOURCE_CAPTURE_LATEST) {
        struct v4l2_buffer nb = b;
        while (xioctl(v->fd, VIDIOC_DQBUF, &nb) == 0) {
            note_sequence(v, b.sequence);
            int e = b.index < v->nbuf ? queue(v, b.index) : 0;
            if (e) return requeue_failed(src, b.index, e);
            v->dropped++;
            b = nb;
        }
    }
    if (b.index >= v->nbuf)
        return fv__error(FV_ERR_IO, "source_capture: %s (%s): driver returned buffer %u of %u",
                         v->path, v->card, b.index, v->nbuf);
    note_sequence(v, b.sequence);
    v->held = (int)b.index; /* queued again at the next capture or close */
    if (b.flags & V4L2_BUF_FLAG_ERROR)
        return fv__error(FV_ERR_IO, "source_capture: %s (%s): the driver marked frame %u broken",
                         v->path, v->card, b.sequence);
    size_t need = frame_need(v);
    if (b.bytesused < (need ? need : 1) || b.bytesused > v->buf[b.index].length)
        return fv__error(FV_ERR_FORMAT,
                         "source_capture: %s (%s): short frame %u: %u bytes used, need %zu "
                         "(buffer %zu)",
                         v->path, v->card, b.sequence, b.bytesused, need ? need : 1,
                         v->buf[b.index].length);
    unsigned char *data = v->buf[b.index].start;
    if (is_mjpeg(v->fourcc)) {
        const fv_image *img;
        fv_status s = fv__mjpeg_decode(v->jpeg, data, b.bytesused, &img);
        if (s != FV_OK) return mjpeg_failed(src, "source_capture", s);
        out->image = *img;
        out->bytes = fv_image_bytes(v->format, v->width, v->height);
    } else {
        out->image.format = v->format;
        out->image.width = v->width;
        out->image.height = v->height;
        out->image.data = data;
        out->image.stride = v->bytesperline;
        if (v->format == FV_PIXEL_NV12) {
            out->image.uv = data + out->image.stride * (size_t)v->height;
            out->image.uv_stride = out->image.stride;
        }
        out->bytes = need;
    }
    if ((b.flags & V4L2_BUF_FLAG_TIMESTAMP_MASK) == V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC &&
        (b.timestamp.tv_sec || b.timestamp.tv_usec))
        out->timestamp_ns =
            (int64_t)b.timestamp.tv_sec * 1000000000LL + (int64_t)b.timestamp.tv_usec * 1000;
    else
        out->timestamp_ns = fv__now_ns();
    out->sequence = src->sequence++;
    out->dropped = v->dropped;
    out->buffer_index = v->userptr ? (int)b.index : -1;
    return FV_OK;
}

static const fv__source_ops v4l2_ops = {v4l2_capture, v4l2_close, NULL};

fv_status fv__source_open_v4l2(fv_source *src, const char *device) {
    if (!device || device[0] != '/' || strlen(device) >= sizeof((v4l2_src *)0)->path)
        return fv__error(FV_ERR_BAD_PARAM,
                         "source_open: '%s': v4l2:// needs an absolute device path "
                         "(v4l2:///dev/video0)",
                         src->desc.uri);
    v4l2_src *v = calloc(1, sizeof *v);
    if (!v) return fv__error(FV_ERR_OUT_OF_MEMORY, "source_open: out of host memory");
    snprintf(v->path, sizeof v->path, "%s", device);
    v->fd = -1;
    v->held = -1;
    v->userptr = src->desc.user_buffers != NULL;
    src->impl = v;
    src->ops = &v4l2_ops;
    fv_status s = open_device(src, "source_open");
    if (s == FV_OK) s = negotiate(src, 0);
    if (s == FV_OK) {
        v->format = is_mjpeg(v->fourcc) ? (src->desc.format ? src->desc.format : FV_PIXEL_RGB24)
                                        : format_of(v->fourcc);
        if (is_mjpeg(v->fourcc)) {
            s = fv__mjpeg_create(v->width, v->height, v->format, &v->jpeg);
            if (s != FV_OK) s = mjpeg_failed(src, "source_open", s);
        }
    }
    if (s == FV_OK) s = start_stream(src, "source_open");
    if (s != FV_OK) {
        v4l2_close(src);
        src->ops = NULL;
        return s;
    }
    fill_info(src);
    return FV_OK;
}
