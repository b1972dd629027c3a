/* fovea platform internal: captions that fovea draws itself on host frames
 * (caption.c: Pango and Cairo), for sinks asked for captions that cannot
 * draw them (image files; GStreamer sinks without textoverlay). sink.c
 * makes one when such a sink is opened with text_overlay. Not installed. */
#ifndef FOVEA_PLATFORM_CAPTION_H
#define FOVEA_PLATFORM_CAPTION_H

#include "platform_internal.h"

typedef struct fv__caption fv__caption;

/* 1 where this build draws captions (Pango and Cairo found), else 0. */
int fv__caption_available(void);

/* A caption for frames of this size and format (GRAY8, RGB24, BGR24 or
 * RGBA32), with no text yet; the frame copy it draws on is allocated here,
 * once. FV_ERR_NOT_SUPPORTED (built without Pango, or no fonts),
 * FV_ERR_OUT_OF_MEMORY. *out NULL on failure. */
fv_status fv__caption_create(int width, int height, fv_pixel_format format, fv__caption **out);

/* NULL allowed. */
void fv__caption_destroy(fv__caption *c);

/* Lays out and renders text (lines split at '\n'; "" for none) for the
 * frames from now on; the same text again costs nothing. text is copied.
 * FV_ERR_OUT_OF_MEMORY where Cairo cannot draw it (then no caption). */
fv_status fv__caption_set(fv__caption *c, const char *text);

/* frame (the caption's size and format, stride set) as the sink should
 * write it: frame itself when there is no text, else *tmp describing the
 * caption's own copy of frame with the caption blended over it (valid
 * until the next call). frame is not changed. */
const fv_image *fv__caption_apply(fv__caption *c, const fv_image *frame, fv_image *tmp);

#endif
