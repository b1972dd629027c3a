/* fovea platform: frame sinks named by URI.
 *
 *   display://0               a window (GStreamer autovideosink); on a
 *                             machine with no display (no $DISPLAY or
 *                             $WAYLAND_DISPLAY) opening fails with a clear
 *                             FV_ERR_NOT_SUPPORTED
 *   file://out.mp4, .mkv      H.264 video (GStreamer: the Jetson hardware
 *                             encoder nvv4l2h264enc when present, else
 *                             x264enc, else openh264enc), written as
 *                             out.part-PID.mp4 and renamed to out.mp4 when
 *                             fv_sink_close finishes it (a failed write
 *                             removes it; an earlier out.mp4 stays as it
 *                             was). MP4 and MOV are fragmented (1 s), so a
 *                             killed recording's partial file plays up to
 *                             its last fragment
 *   file://out_%04d.png, .jpg numbered images (index from 0); a name without
 *                             %d writes one image, overwritten each frame
 *   rtp://host:port           H.264 over RTP/UDP (GStreamer)
 *   null://                   discards frames (benchmarks)
 * A URI without a scheme is a file path.
 *
 * The platform layer never prints: messages go to desc.log. */
#ifndef FOVEA_PLATFORM_SINK_H
#define FOVEA_PLATFORM_SINK_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/fovea.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A destination for frames opened from a URI (display, file, RTP, null); opaque. */
typedef struct fv_sink fv_sink;

/* What fv_sink_open opens; zero fields mean their defaults. */
typedef struct fv_sink_desc {
    const char *uri;        /* required; copied */
    int width, height;      /* of every frame written; required */
    fv_pixel_format format; /* GRAY8, RGB24, BGR24 or RGBA32; required */
    double rate;            /* frames per second for video and RTP; 0 means 30 */
    int bitrate_kbps;       /* H.264 encoders; 0 means 8000 */
    fv_log_fn log;          /* NULL: messages dropped */
    void *log_user;         /* passed to log */
    /* 1: draw a caption over the frames (fv_sink_set_text) where the sink
     * can: GStreamer sinks (display, video, RTP) with the textoverlay
     * element (gst-plugins-base's pango plugin); image files, and GStreamer
     * sinks without textoverlay, where fovea was built with Pango and Cairo
     * (FV_WITH_PANGO) and fontconfig finds a font (fovea draws the caption
     * on its own copy of each frame). Never null://.
     * fv_sink_info.text_overlay says whether it does. 0: no caption. */
    int text_overlay;
    uint32_t reserved[7]; /* must be zero */
} fv_sink_desc;

/* What a sink writes to, as fv_sink_info_get gives it. */
typedef struct fv_sink_info {
    char kind[16];        /* "display", "video", "images", "image", "rtp", "null" */
    char name[256];       /* path, host:port, display */
    char detail[256];     /* e.g. the encoder element, "PNG" */
    uint64_t frames;      /* frames written so far */
    int text_overlay;     /* 1: fv_sink_set_text draws its caption on the frames */
    uint32_t reserved[7]; /* reserved for growth */
} fv_sink_info;

/* Opens the sink. Returns FV_ERR_BAD_PARAM (NULL, malformed URI, size,
 * format), FV_ERR_NOT_SUPPORTED (a scheme this build lacks, no encoder, no
 * display), FV_ERR_IO (cannot create the file). *out NULL on failure. */
fv_status fv_sink_open(const fv_sink_desc *desc, fv_sink **out);

/* Writes one frame (host memory, the desc's size and format; any stride).
 * timestamp_ns orders frames for video (CLOCK_MONOTONIC, as sources give);
 * 0, or a clock advancing less than 1 ms per frame, means frame n / rate.
 * Returns FV_ERR_BAD_PARAM (wrong size/format), FV_ERR_IO (write failed:
 * disk full, peer gone), FV_ERR_END_OF_STREAM (the display window was
 * closed). */
fv_status fv_sink_write(fv_sink *sink, const fv_image *frame, int64_t timestamp_ns);

/* The caption drawn over the frames written from now on (top left, white
 * text on a shaded background; lines split at '\n'; UTF-8, invalid bytes
 * shown as U+FFFD where fovea draws), until the next call; "" clears it.
 * text is copied; the frames given to fv_sink_write are not changed.
 * Returns FV_ERR_BAD_PARAM (NULL), FV_ERR_NOT_SUPPORTED (the sink draws no
 * captions: opened without desc.text_overlay, null://, or neither
 * textoverlay nor fovea's Pango captions available; info.text_overlay is
 * 0), FV_ERR_OUT_OF_MEMORY (Cairo could not draw it; no caption then). */
fv_status fv_sink_set_text(fv_sink *sink, const char *text);

/* Fills *out. FV_ERR_BAD_PARAM for NULL. */
fv_status fv_sink_info_get(const fv_sink *sink, fv_sink_info *out);

/* Finishes the output (video: end of stream, so the file is playable) and
 * frees everything. NULL allowed (returns FV_OK). Returns the first error
 * met while finishing; the sink is freed either way. */
fv_status fv_sink_close(fv_sink *sink);

#ifdef __cplusplus
}
#endif
#endif
