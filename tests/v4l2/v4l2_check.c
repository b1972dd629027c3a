/* The v4l2:// source against the kernel's vivid test driver. Runs as the
 * only program of a tiny VM (toolchain/v4l2-vm-test.sh): /dev/video0 is
 * vivid's capture node, /dev/video1 its output node, and the platform device
 * vivid.0 can be unbound and bound again through sysfs to make the camera
 * vanish and return. Prints one "V4L2-CHECK PASS|FAIL|INFO ..." line per
 * check and "V4L2-CHECK DONE pass=N fail=M" at the end; exits 1 on any
 * failure. The host script reads these lines from the serial console. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/videodev2.h>
#include "fovea/platform/source.h"

#define DEV       "/dev/video0"
#define URI       "v4l2:///dev/video0"
#define W         640
#define H         480
#define VIVID_DEV "vivid.0"
#define VIVID_DRV "/sys/bus/platform/drivers/vivid"

static int passes, fails;
static unsigned char *first_yuyv; /* first frame of YUYV 640x480, for the repeat checks */

static void report(int ok, const char *name, const char *fmt, ...) {
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    printf("V4L2-CHECK %s %s: %s\n", ok ? "PASS" : "FAIL", name, msg);
    fflush(stdout);
    if (ok)
        passes++;
    else
        fails++;
}

static void info(const char *fmt, ...) {
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("V4L2-CHECK INFO %s\n", msg);
    fflush(stdout);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int sysfs_write(const char *path, const char *value) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return -1;
    ssize_t n = write(fd, value, strlen(value));
    close(fd);
    return n == (ssize_t)strlen(value) ? 0 : -1;
}

static fv_source_desc yuyv_desc(void) {
    return (fv_source_desc){.uri = URI,
                            .width = W,
                            .height = H,
                            .format = FV_PIXEL_YUYV,
                            .rate = 25,
                            .timeout_ms = 3000};
}

/* ---- vivid controls: a still picture without a clock in it ------------- */

static int set_menu_control(int fd, const char *name, const char *item) {
    struct v4l2_queryctrl q = {.id = V4L2_CTRL_FLAG_NEXT_CTRL};
    while (ioctl(fd, VIDIOC_QUERYCTRL, &q) == 0) {
        if (strcmp((const char *)q.name, name) == 0) {
            for (int i = q.minimum; i <= q.maximum; i++) {
                struct v4l2_querymenu m = {.id = q.id, .index = (uint32_t)i};
                if (ioctl(fd, VIDIOC_QUERYMENU, &m) == 0 &&
                    strcmp((const char *)m.name, item) == 0) {
                    struct v4l2_control c = {.id = q.id, .value = i};
                    return ioctl(fd, VIDIOC_S_CTRL, &c);
                }
            }
            errno = ENOENT;
            return -1;
        }
        q.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
    }
    errno = ENOENT;
    return -1;
}

static int still_picture(void) {
    int fd = open(DEV, O_RDWR);
    if (fd < 0) {
        report(0, "controls", "open %s: %s", DEV, strerror(errno));
        return -1;
    }
    static const char *const ctl[][2] = {{"OSD Text Mode", "None"},
                                         {"Horizontal Movement", "No Movement"},
                                         {"Vertical Movement", "No Movement"}};
    int bad = 0;
    for (int i = 0; i < 3; i++)
        if (set_menu_control(fd, ctl[i][0], ctl[i][1]) < 0) {
            report(0, "controls", "cannot set '%s' to '%s': %s", ctl[i][0], ctl[i][1],
                   strerror(errno));
            bad = 1;
        }
    close(fd);
    if (!bad) report(1, "controls", "OSD off, no movement");
    return bad ? -1 : 0;
}

/* ---- checks --------------------------------------------------------------- */

static void check_missing_device(void) {
    fv_source *s = NULL;
    fv_source_desc d = {.uri = "v4l2:///dev/video9"};
    fv_status st = fv_source_open(&d, &s);
    report(st == FV_ERR_IO && !s && strstr(fv_last_error(), "/dev/video9"), "missing_device",
           "%s: %s", fv_status_name(st), fv_last_error());
    fv_source_close(s);
}

static void check_output_device(void) {
    fv_source *s = NULL;
    fv_source_desc d = {.uri = "v4l2:///dev/video1"};
    fv_status st = fv_source_open(&d, &s);
    report(st == FV_ERR_NOT_SUPPORTED && !s, "output_device", "%s: %s", fv_status_name(st),
           fv_last_error());
    fv_source_close(s);
}

/* Y of YUYV pixel x in row y. */
static int yuyv_y(const fv_source_frame *f, int x, int y) {
    return ((const unsigned char *)f->image.data)[(size_t)y * f->image.stride + (size_t)x * 2];
}

static void check_yuyv_stream(void) {
    const char *name = "yuyv_640x480_stream";
    fv_source *s = NULL;
    fv_source_desc d = yuyv_desc();
    fv_status st = fv_source_open(&d, &s);
    if (st != FV_OK) {
        report(0, name, "open: %s: %s", fv_status_name(st), fv_last_error());
        return;
    }
    fv_source_info in;
    fv_source_info_get(s, &in);
    info("yuyv: name '%s', detail '%s', %dx%d %s at %g fps", in.name, in.detail, in.width,
         in.height, fv_pixel_format_name(in.format), in.rate);
    int ok = strcmp(in.kind, "v4l2") == 0 && in.width == W && in.height == H &&
             in.format == FV_PIXEL_YUYV && in.rate == 25 && in.frames == -1 &&
             strstr(in.detail, "mmap") && strstr(in.detail, "vivid") && strstr(in.name, DEV);
    report(ok, "yuyv_info", "kind %s, %dx%d, format %d, rate %g, detail '%s'", in.kind, in.width,
           in.height, (int)in.format, in.rate, in.detail);
    const size_t bytes = (size_t)W * H * 2;
    int64_t last_ts = 0;
    int same = 1, seq_ok = 1, shape_ok = 1, ts_ok = 1;
    const int n = 8;
    for (int i = 0; i < n; i++) {
        fv_source_frame f;
        st = fv_source_capture(s, 0, &f);
        if (st != FV_OK) {
            report(0, name, "capture %d: %s: %s", i, fv_status_name(st), fv_last_error());
            fv_source_close(s);
            return;
        }
        if (f.sequence != (uint64_t)i) seq_ok = 0;
        if (f.image.width != W || f.image.height != H || f.image.format != FV_PIXEL_YUYV ||
            f.image.stride < (size_t)W * 2 || f.bytes < bytes || f.buffer_index != -1)
            shape_ok = 0;
        if (f.timestamp_ns <= last_ts) ts_ok = 0;
        last_ts = f.timestamp_ns;
        if (i == 0) {
            first_yuyv = malloc(bytes);
            for (int y = 0; y < H; y++)
                memcpy(first_yuyv + (size_t)y * W * 2,
                       (unsigned char *)f.image.data + (size_t)y * f.image.stride, (size_t)W * 2);
            /* 75% colour bars: white at the left (Y about 180), black at the right (16) */
            int yw = yuyv_y(&f, 8, H / 2), yb = yuyv_y(&f, W - 8, H / 2);
            report(yw > 150 && yw < 210 && yb < 40, "yuyv_pixels",
                   "Y of the left bar %d (want ~180), of the right bar %d (want ~16)", yw, yb);
        } else {
            for (int y = 0; y < H && same; y++)
                if (memcmp(first_yuyv + (size_t)y * W * 2,
                           (unsigned char *)f.image.data + (size_t)y * f.image.stride,
                           (size_t)W * 2) != 0)
                    same = 0;
        }
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t now_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
    /* vivid stamps a frame with its scheduled end, which can be a little
     * after the moment it is dequeued */
    report(seq_ok && shape_ok && ts_ok && last_ts <= now_ns + 200000000LL &&
               now_ns - last_ts < 5000000000LL,
           name, "%d frames: sequence %s, shape %s, timestamps %s (last %.3f s ago)", n,
           seq_ok ? "0..n-1" : "WRONG", shape_ok ? "ok" : "WRONG", ts_ok ? "increasing" : "WRONG",
           (double)(now_ns - last_ts) / 1e9);
    report(same, "yuyv_still", "frames 1..%d %s frame 0 (still picture)", n - 1,
           same ? "equal" : "DIFFER FROM");
    /* LATEST: let frames pile up, then take only the newest */
    fv_source_frame f;
    st = fv_source_capture(s, 0, &f);
    uint64_t before = f.dropped;
    sleep_ms(500);
    st = st == FV_OK ? fv_source_capture(s, FV_SOURCE_CAPTURE_LATEST, &f) : st;
    report(st == FV_OK && f.dropped > before, "capture_latest",
           "%s: dropped %llu -> %llu after 500 ms at 25 fps", fv_status_name(st),
           (unsigned long long)before, (unsigned long long)f.dropped);
    fv_source_close(s);
}

static void check_repeat(void) {
    fv_source *s = NULL;
    fv_source_desc d = yuyv_desc();
    fv_status st = fv_source_open(&d, &s);
    fv_source_frame f;
    if (st == FV_OK) st = fv_source_capture(s, 0, &f);
    if (st != FV_OK || !first_yuyv) {
        report(0, "deterministic", "%s: %s", fv_status_name(st), fv_last_error());
        fv_source_close(s);
        return;
    }
    int same = 1;
    for (int y = 0; y < H && same; y++)
        if (memcmp(first_yuyv + (size_t)y * W * 2,
                   (unsigned char *)f.image.data + (size_t)y * f.image.stride, (size_t)W * 2))
            same = 0;
    report(same, "deterministic", "a second source's first frame %s the first source's",
           same ? "equals" : "DIFFERS FROM");
    fv_source_close(s);
}

static void check_format(fv_pixel_format fmt, const char *name) {
    fv_source *s = NULL;
    fv_source_desc d = {.uri = URI, .width = W, .height = H, .format = fmt, .timeout_ms = 3000};
    fv_status st = fv_source_open(&d, &s);
    fv_source_frame f;
    if (st == FV_OK) st = fv_source_capture(s, 0, &f);
    if (st != FV_OK) {
        report(0, name, "%s: %s", fv_status_name(st), fv_last_error());
        fv_source_close(s);
        return;
    }
    fv_source_info in;
    fv_source_info_get(s, &in);
    const unsigned char *p = f.image.data;
    size_t mid = (size_t)(H / 2) * f.image.stride;
    int white = 0, black = 0,
        ok = f.image.format == fmt && f.image.width == W && f.image.height == H &&
             in.format == fmt && in.rate > 0;
    switch (fmt) {
    case FV_PIXEL_RGB24:
    case FV_PIXEL_BGR24:
        ok = ok && f.image.stride >= W * 3 && f.bytes >= f.image.stride * H;
        white = p[mid + 8 * 3 + 1], black = p[mid + (W - 8) * 3 + 1]; /* G */
        ok = ok && white > 160 && white < 220 && black < 40;
        break;
    case FV_PIXEL_UYVY:
        ok = ok && f.image.stride >= W * 2 && f.bytes >= f.image.stride * H;
        white = p[mid + 8 * 2 + 1], black = p[mid + (W - 8) * 2 + 1];
        ok = ok && white > 150 && white < 210 && black < 40;
        break;
    case FV_PIXEL_NV12: {
        const unsigned char *uv = f.image.uv;
        ok = ok && f.image.stride >= W && uv == p + f.image.stride * H &&
             f.bytes >= f.image.stride * H * 3 / 2;
        white = p[mid + 8], black = p[mid + W - 8];
        int u = uv[(size_t)(H / 4) * f.image.stride + 8];
        ok = ok && white > 150 && white < 210 && black < 40 && u > 110 && u < 146;
        break;
    }
    default:
        break;
    }
    report(ok, name, "%s %dx%d at %g fps, stride %zu, bytes %zu; white bar %d, black bar %d",
           fv_pixel_format_name(f.image.format), f.image.width, f.image.height, in.rate,
           f.image.stride, f.bytes, white, black);
    fv_source_close(s);
}

static void check_refused(const char *name, fv_source_desc d, const char *must_list) {
    fv_source *s = NULL;
    fv_status st = fv_source_open(&d, &s);
    const char *msg = fv_last_error();
    report(st == FV_ERR_NOT_SUPPORTED && !s && strstr(msg, "offers") && strstr(msg, must_list) &&
               strlen(msg) < 1000,
           name, "%s (%zu chars): %s", fv_status_name(st), strlen(msg), msg);
    fv_source_close(s);
}

static void check_timeout(void) {
    fv_source *s = NULL;
    fv_source_desc d = yuyv_desc();
    d.rate = 1;
    d.timeout_ms = 100;
    fv_status st = fv_source_open(&d, &s);
    if (st != FV_OK) {
        report(0, "timeout", "open at 1 fps: %s: %s", fv_status_name(st), fv_last_error());
        return;
    }
    int timeouts = 0, frames = 0;
    fv_source_frame f;
    for (int i = 0; i < 60 && frames < 2; i++) {
        st = fv_source_capture(s, 0, &f);
        if (st == FV_ERR_TIMEOUT)
            timeouts++;
        else if (st == FV_OK)
            frames++;
        else
            break;
    }
    report(timeouts > 0 && frames == 2, "timeout",
           "1 fps with timeout_ms 100: %d timeouts, %d frames, last %s", timeouts, frames,
           fv_status_name(st));
    fv_source_close(s);
}

static void check_userptr(void) {
    const char *name = "userptr";
    enum { N = 4 };
    size_t bytes = ((size_t)W * H * 2 + 4095) & ~(size_t)4095;
    void *bufs[N];
    for (int i = 0; i < N; i++)
        bufs[i] = aligned_alloc(4096, bytes);
    fv_source *s = NULL;
    fv_source_desc d = yuyv_desc();
    d.buffers = N;
    d.user_buffers = bufs;
    d.user_buffer_bytes = bytes;
    fv_status st = fv_source_open(&d, &s);
    if (st != FV_OK) {
        report(0, name, "open: %s: %s", fv_status_name(st), fv_last_error());
        for (int i = 0; i < N; i++)
            free(bufs[i]);
        return;
    }
    fv_source_info in;
    fv_source_info_get(s, &in);
    int ok = strstr(in.detail, "userptr") != NULL, seen = 0, same = 1;
    for (int i = 0; i < 6 && ok; i++) {
        fv_source_frame f;
        st = fv_source_capture(s, 0, &f);
        if (st != FV_OK || f.buffer_index < 0 || f.buffer_index >= N ||
            f.image.data != bufs[f.buffer_index]) {
            ok = 0;
            break;
        }
        seen |= 1 << f.buffer_index;
        for (int y = 0; y < H && same && first_yuyv; y++)
            if (memcmp(first_yuyv + (size_t)y * W * 2,
                       (unsigned char *)f.image.data + (size_t)y * f.image.stride, (size_t)W * 2))
                same = 0;
    }
    report(ok && same && first_yuyv, name,
           "detail '%s'; frames in caller buffers (mask 0x%x), %s the mmap frames; last %s: %s",
           in.detail, seen, same ? "equal to" : "DIFFERENT FROM", fv_status_name(st),
           st == FV_OK ? "" : fv_last_error());
    fv_source_close(s);
    for (int i = 0; i < N; i++)
        free(bufs[i]);
    /* too small user buffers */
    void *small[2] = {aligned_alloc(4096, 4096), aligned_alloc(4096, 4096)};
    d.buffers = 2;
    d.user_buffers = small;
    d.user_buffer_bytes = 4096;
    st = fv_source_open(&d, &s);
    report(st == FV_ERR_BAD_PARAM, "userptr_too_small", "%s: %s", fv_status_name(st),
           fv_last_error());
    fv_source_close(st == FV_OK ? s : NULL);
    free(small[0]);
    free(small[1]);
}

static int wait_for(const char *path, int present, int ms) {
    for (int t = 0; t < ms; t += 20) {
        if ((access(path, F_OK) == 0) == present) return 0;
        sleep_ms(20);
    }
    return -1;
}

static int unbind(void) {
    if (sysfs_write(VIVID_DRV "/unbind", VIVID_DEV) < 0) {
        report(0, "unbind", "write %s to %s/unbind: %s", VIVID_DEV, VIVID_DRV, strerror(errno));
        return -1;
    }
    return wait_for(DEV, 0, 3000);
}

static int bind(void) {
    if (sysfs_write(VIVID_DRV "/bind", VIVID_DEV) < 0) {
        report(0, "bind", "write %s to %s/bind: %s", VIVID_DEV, VIVID_DRV, strerror(errno));
        return -1;
    }
    return wait_for(DEV, 1, 3000);
}

static void check_vanish(void) {
    fv_source *s = NULL;
    fv_source_desc d = yuyv_desc();
    fv_status st = fv_source_open(&d, &s);
    fv_source_frame f;
    for (int i = 0; i < 2 && st == FV_OK; i++)
        st = fv_source_capture(s, 0, &f);
    if (st != FV_OK) {
        report(0, "vanish", "before unbind: %s: %s", fv_status_name(st), fv_last_error());
        fv_source_close(s);
        return;
    }
    if (unbind() < 0) info("vanish: %s still exists after unbind", DEV);
    st = fv_source_capture(s, 0, &f);
    report(st == FV_ERR_END_OF_STREAM && strstr(fv_last_error(), "vanished"), "vanish", "%s: %s",
           fv_status_name(st), fv_last_error());
    st = fv_source_capture(s, 0, &f);
    report(st == FV_ERR_END_OF_STREAM, "vanish_stays_ended", "capture after the end: %s: %s",
           fv_status_name(st), fv_last_error());
    fv_source_close(s);
    if (bind() < 0) report(0, "rebind", "%s did not come back", DEV);
}

static void check_reconnect(void) {
    const char *name = "reconnect";
    if (still_picture() < 0) return; /* a new device instance: controls at defaults */
    fv_source *s = NULL;
    fv_source_desc d = yuyv_desc();
    d.reconnect = 1;
    d.timeout_ms = 500;
    fv_status st = fv_source_open(&d, &s);
    fv_source_frame f;
    for (int i = 0; i < 2 && st == FV_OK; i++)
        st = fv_source_capture(s, 0, &f);
    if (st != FV_OK) {
        report(0, name, "before unbind: %s: %s", fv_status_name(st), fv_last_error());
        fv_source_close(s);
        return;
    }
    uint64_t seq = f.sequence;
    unbind();
    st = fv_source_capture(s, 0, &f);
    report(st == FV_ERR_NOT_READY && strstr(fv_last_error(), "vanished"), "reconnect_vanish",
           "%s: %s", fv_status_name(st), fv_last_error());
    st = fv_source_capture(s, 0, &f);
    report(st == FV_ERR_NOT_READY, "reconnect_waiting", "while gone: %s: %s", fv_status_name(st),
           fv_last_error());
    if (bind() < 0) report(0, "rebind", "%s did not come back", DEV);
    int tries = 0;
    do
        st = fv_source_capture(s, 0, &f);
    while (st != FV_OK && ++tries < 10);
    report(st == FV_OK && f.image.width == W && f.image.height == H &&
               f.image.format == FV_PIXEL_YUYV && f.sequence == seq + 1,
           name,
           "after rebind: %s after %d NOT_READY tries, %dx%d, sequence %llu (before %llu)%s%s",
           fv_status_name(st), tries, f.image.width, f.image.height, (unsigned long long)f.sequence,
           (unsigned long long)seq, st == FV_OK ? "" : ": ", st == FV_OK ? "" : fv_last_error());
    for (int i = 0; i < 3 && st == FV_OK; i++)
        st = fv_source_capture(s, 0, &f);
    report(st == FV_OK, "reconnect_streams", "3 more frames: %s", fv_status_name(st));
    fv_source_close(s);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    info("start");
    check_missing_device();
    check_output_device();
    if (still_picture() == 0) {
        check_yuyv_stream();
        check_repeat();
        check_format(FV_PIXEL_RGB24, "rgb24_640x480");
        check_format(FV_PIXEL_UYVY, "uyvy_640x480");
        check_format(FV_PIXEL_NV12, "nv12_640x480");
        fv_source_desc d = yuyv_desc();
        d.fourcc = FV_FOURCC('M', 'J', 'P', 'G');
        d.format = 0;
        check_refused("refuse_mjpeg", d, "640x480@1,2,4,5,10,12.5,15,25");
        d = yuyv_desc();
        d.width = 1000, d.height = 1000;
        check_refused("refuse_size", d, "640x480");
        d = yuyv_desc();
        d.rate = 60;
        check_refused("refuse_rate", d, "YUYV");
        check_timeout();
        check_userptr();
        check_vanish();
        check_reconnect();
    }
    free(first_yuyv);
    printf("V4L2-CHECK DONE pass=%d fail=%d\n", passes, fails);
    fflush(stdout);
    return fails ? 1 : 0;
}
