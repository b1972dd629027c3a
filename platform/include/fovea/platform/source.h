/* fovea platform: frame sources named by URI (the jetson-utils convention).
 *
 *   v4l2:///dev/video0        V4L2 camera (mmap buffers; user pointers into
 *                             caller memory on request)
 *   csi://0                   Jetson CSI camera (GStreamer nvarguscamerasrc)
 *   gst://PIPELINE            any GStreamer pipeline; fovea appends an appsink
 *                             unless the pipeline ends in one named "sink"
 *   file://photo.png, .jpg    a still image (PNG, JPEG), repeated
 *   file://frames_%04d.png    an image sequence (printf index from 0, or 1)
 *   file://clip.mp4 (.mkv, .avi, .mov, .webm)   a video through decodebin
 *   test://                   a moving view over a bundled real photo, any
 *                             size and rate (test://?image=PATH for another;
 *                             ?fps=N, 0 unpaced; ?frames=N; ?items=N: N (0..8)
 *                             Fashion-MNIST items gliding over it, from
 *                             Debian's dataset-fashion-mnist or ?fashion=PATH)
 * A URI without a scheme is a file path; /dev/video* is v4l2.
 *
 * Frames are host memory owned by the source, valid until the next capture
 * or close. The platform layer never prints: messages go to desc.log. */
#ifndef FOVEA_PLATFORM_SOURCE_H
#define FOVEA_PLATFORM_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/fovea.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A source of frames opened from a URI (camera, file, GStreamer, test); opaque. */
typedef struct fv_source fv_source;

/* A V4L2 fourcc from its four characters, e.g. FV_FOURCC('Y','U','Y','V'). */
#define FV_FOURCC(a, b, c, d)                                                                      \
    ((uint32_t)(a) | ((uint32_t)(b) << 8) | ((uint32_t)(c) << 16) | ((uint32_t)(d) << 24))

/* What fv_source_open opens; zero fields mean their defaults. */
typedef struct fv_source_desc {
    const char *uri; /* required; copied */
    /* Requested size, rate and pixel format; 0 means the source's own
     * (v4l2: the driver's current setting; test://: 1280x720 at 30 fps,
     * RGB24; files: the file's, unpaced). A camera that cannot do what was
     * asked fails to open with FV_ERR_NOT_SUPPORTED and a message listing
     * what it offers. Files and GStreamer sources convert to the requested
     * format (RGB24, BGR24, GRAY8, RGBA32, YUYV, UYVY, NV12). */
    int width, height;
    double rate;            /* frames per second */
    fv_pixel_format format; /* of the frames delivered */
    /* v4l2: the camera's own pixel format as a V4L2 fourcc, e.g.
     * FV_FOURCC('M','J','P','G') (decoded to `format`, default RGB24, with
     * libjpeg-turbo); 0: the one matching `format`, or the driver's current
     * one when format is 0 too. Other sources: must be 0. */
    uint32_t fourcc;
    int timeout_ms; /* longest a capture waits for a frame; 0 means 2000 */
    int loop;       /* files, sequences, videos: 1 = start again at the end */
    int reconnect;  /* cameras: 1 = a camera that vanished is waited for (capture
                       returns FV_ERR_NOT_READY until it is back) instead of
                       ending the stream */
    int buffers;    /* v4l2 buffers; 0 means 4 */
    /* v4l2 user-pointer mode (zero-copy on integrated GPUs): `buffers`
     * caller-owned buffers, each user_buffer_bytes long, page aligned (e.g.
     * fv_frame_buffer data in MAPPED memory). NULL: mmap buffers. The
     * caller keeps them alive until fv_source_close. */
    void *const *user_buffers;
    size_t user_buffer_bytes; /* see user_buffers */
    fv_log_fn log;            /* NULL: messages dropped */
    void *log_user;           /* passed to log */
    uint32_t reserved[8];     /* must be zero */
} fv_source_desc;

/* Flags for fv_source_capture. */
enum {
    /* Low latency: take every frame already waiting and return only the
     * newest (the older ones count as dropped). */
    FV_SOURCE_CAPTURE_LATEST = 1u << 0
};

/* A captured frame, from fv_source_capture. */
typedef struct fv_source_frame {
    fv_image image;       /* host pixels, stride filled; valid until the next
                             capture or close */
    size_t bytes;         /* bytes readable at image.data (both NV12 planes) */
    int64_t timestamp_ns; /* when it was captured, CLOCK_MONOTONIC */
    uint64_t sequence;    /* 0, 1, 2, ... frames delivered */
    uint64_t dropped;     /* frames lost so far (LATEST, driver sequence gaps) */
    int buffer_index;     /* user-pointer mode: which user buffer; else -1 */
    uint32_t reserved[3]; /* reserved for growth */
} fv_source_frame;

/* What a source delivers, as fv_source_info_get gives it. */
typedef struct fv_source_info {
    char kind[16];          /* "v4l2", "csi", "gst", "image", "sequence", "video", "test" */
    char name[256];         /* device card, file path or pipeline */
    char detail[256];       /* e.g. "mmap, 4 buffers, driver vivid" */
    fv_pixel_format format; /* of the frames delivered */
    int width, height;      /* of the frames delivered */
    double rate;            /* frames per second; 0 unpaced or unknown */
    int64_t frames;         /* frames in a finite source; -1 unknown or endless */
    uint32_t reserved[8];   /* reserved for growth */
} fv_source_info;

/* Opens the source. Returns FV_ERR_BAD_PARAM (NULL, malformed URI, bad
 * values), FV_ERR_NOT_SUPPORTED (a scheme this build lacks, e.g. GStreamer,
 * or a size/rate/format the source cannot give: the message lists what it
 * offers), FV_ERR_IO (no such file/device, permission), FV_ERR_FORMAT (a
 * malformed file; a driver's error, named). *out NULL on failure. */
fv_status fv_source_open(const fv_source_desc *desc, fv_source **out);

/* Waits for the next frame (at most desc.timeout_ms). flags: 0 or
 * FV_SOURCE_CAPTURE_LATEST. Returns FV_OK, FV_ERR_TIMEOUT (no frame in
 * time; the source stays usable), FV_ERR_END_OF_STREAM (a file ended
 * without loop; a camera vanished without reconnect: the message says
 * which), FV_ERR_NOT_READY (reconnect: the camera is gone and being waited
 * for), FV_ERR_IO / FV_ERR_FORMAT (a broken frame or file). */
fv_status fv_source_capture(fv_source *src, uint32_t flags, fv_source_frame *out);

/* As fv_source_capture, but the frame's pixels land in dst, the caller's
 * host buffer of the source's format and size (any stride of at least a
 * row; NV12 with its UV plane where dst.uv says, else after the Y plane),
 * e.g. a pinned frame buffer the GPU uploads from. Sources that make their
 * frames (test://) make them there, with no copy in between; the others
 * copy their frame there (rows split between a few threads for large
 * frames). out->image is dst (stride filled). Returns as fv_source_capture,
 * and FV_ERR_BAD_PARAM for a dst of another format or size. In user-pointer
 * mode the frame is copied, and out->buffer_index is -1. */
fv_status fv_source_capture_into(fv_source *src, uint32_t flags, const fv_image *dst,
                                 fv_source_frame *out);

/* Fills *out with what was negotiated. FV_ERR_BAD_PARAM for NULL. */
fv_status fv_source_info_get(const fv_source *src, fv_source_info *out);

/* Stops and frees everything. NULL allowed. */
void fv_source_close(fv_source *src);

/* The scheme of uri as fv_source_open reads it ("v4l2", "csi", "gst",
 * "file", "test"), or NULL when it names none of them. */
const char *fv_source_scheme(const char *uri);

#ifdef __cplusplus
}
#endif
#endif
