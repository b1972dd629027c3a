/* Captions drawn by fovea on host frames, for the sinks that draw none of
 * their own (image files; GStreamer sinks where textoverlay is missing):
 * the text laid out by Pango and rendered by Cairo, once a text, into a
 * premultiplied ARGB32 surface, then blended over a copy of each frame
 * (the caller's frame is const and stays as it was).
 *
 * The look follows the GStreamer sinks' textoverlay: top left, lines split
 * at '\n', white "Sans" text over a shaded (half-transparent black) box. The
 * font's height is the frame's / 24 (10 to 96 pixels), so a label reads the
 * same at any frame size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "caption.h"

#ifdef FV_HAVE_PANGO
#include <pango/pangocairo.h>

struct fv__caption {
    int width, height; /* the frames' */
    fv_pixel_format format;
    size_t bpp;
    unsigned char *frame; /* a dense copy of the frame with the caption: height rows */
    PangoFontMap *fonts;  /* the caption's own font map: nothing shared with other threads */
    PangoContext *pango;
    PangoLayout *layout;
    cairo_surface_t *box; /* the rendered caption (cap_w x cap_h; NULL before the first) */
    int cap_w, cap_h;
    int box_w, box_h; /* the caption's size in it, clipped to the frame */
    int shown;        /* 1: box holds text's caption; 0: nothing to draw */
    char *text;       /* the last text asked for (text_cap bytes) */
    size_t text_cap;
};

int fv__caption_available(void) {
    return 1;
}

static int font_px(int height) {
    int px = height / 24;
    return px < 10 ? 10 : px > 96 ? 96 : px;
}

fv_status fv__caption_create(int width, int height, fv_pixel_format format, fv__caption **out) {
    const char *op = "sink_open";
    *out = NULL;
    fv__caption *c = calloc(1, sizeof *c);
    if (!c) return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: captions: out of host memory", op);
    c->width = width, c->height = height, c->format = format;
    c->bpp = fv__image_file_bpp(format);
    c->frame = malloc(c->bpp * (size_t)width * (size_t)height);
    c->fonts = c->frame ? pango_cairo_font_map_new() : NULL;
    c->pango = c->fonts ? pango_font_map_create_context(c->fonts) : NULL;
    c->layout = c->pango ? pango_layout_new(c->pango) : NULL;
    c->text = c->layout ? calloc(1, 64) : NULL;
    c->text_cap = 64;
    if (!c->text) {
        fv__caption_destroy(c);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: captions: out of host memory (%dx%d frame)", op,
                         width, height);
    }
    /* no fonts (fontconfig found none): Pango would warn on stderr at the
     * first layout and draw boxes; refuse instead */
    PangoFontFamily **families = NULL;
    int nfam = 0;
    pango_font_map_list_families(c->fonts, &families, &nfam);
    g_free(families);
    if (nfam == 0) {
        fv__caption_destroy(c);
        return fv__error(FV_ERR_NOT_SUPPORTED,
                         "%s: captions: fontconfig finds no fonts (Debian: fonts-dejavu-core)", op);
    }
    PangoFontDescription *fd = pango_font_description_from_string("Sans");
    pango_font_description_set_absolute_size(fd, font_px(height) * (double)PANGO_SCALE);
    pango_layout_set_font_description(c->layout, fd);
    pango_font_description_free(fd);
    *out = c;
    return FV_OK;
}

void fv__caption_destroy(fv__caption *c) {
    if (!c) return;
    if (c->box) cairo_surface_destroy(c->box);
    if (c->layout) g_object_unref(c->layout);
    if (c->pango) g_object_unref(c->pango);
    if (c->fonts) g_object_unref(c->fonts);
    free(c->text);
    free(c->frame);
    free(c);
}

fv_status fv__caption_set(fv__caption *c, const char *text) {
    const char *op = "sink_set_text";
    if (strcmp(text, c->text) == 0) return FV_OK; /* drawn already */
    /* the text and the box grow only: a caption changed every frame (scores)
     * allocates nothing of fovea's once the longest has been seen (Pango's
     * layout keeps its own allocations) */
    const size_t len = strlen(text) + 1;
    if (len > c->text_cap) {
        char *t = realloc(c->text, len);
        if (!t) return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        c->text = t, c->text_cap = len;
    }
    memcpy(c->text, text, len);
    c->shown = 0;
    if (!*text) return FV_OK;
    /* Pango takes UTF-8 only: bytes that are not become U+FFFD */
    gchar *valid = g_utf8_make_valid(text, -1);
    pango_layout_set_text(c->layout, valid, -1);
    g_free(valid);
    PangoRectangle ink, logical;
    pango_layout_get_pixel_extents(c->layout, &ink, &logical);
    const int pad = font_px(c->height) / 4 + 1;
    int w = logical.width + 2 * pad, h = logical.height + 2 * pad;
    if (w > c->width - pad) w = c->width - pad;
    if (h > c->height - pad) h = c->height - pad;
    if (w < 1 || h < 1) return FV_OK; /* a frame too small for any caption */
    if (!c->box || w > c->cap_w || h > c->cap_h) {
        const int cw = w > c->cap_w ? w : c->cap_w, ch = h > c->cap_h ? h : c->cap_h;
        cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, cw, ch);
        if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
            const char *why = cairo_status_to_string(cairo_surface_status(s));
            cairo_surface_destroy(s);
            c->text[0] = '\0';
            return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: a %dx%d caption: %s", op, cw, ch, why);
        }
        if (c->box) cairo_surface_destroy(c->box);
        c->box = s, c->cap_w = cw, c->cap_h = ch;
    }
    /* the shaded box (set, not blended: the surface is reused), then the
     * text over it, both inside w x h */
    cairo_t *cr = cairo_create(c->box);
    cairo_rectangle(cr, 0, 0, w, h);
    cairo_clip(cr);
    cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE);
    cairo_set_source_rgba(cr, 0, 0, 0, 0.5);
    cairo_paint(cr);
    cairo_set_operator(cr, CAIRO_OPERATOR_OVER);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_move_to(cr, pad - logical.x, pad - logical.y);
    pango_cairo_show_layout(cr, c->layout);
    cairo_surface_flush(c->box);
    const cairo_status_t cs = cairo_status(cr);
    cairo_destroy(cr);
    if (cs != CAIRO_STATUS_SUCCESS) {
        c->text[0] = '\0';
        return fv__error(FV_ERR_OUT_OF_MEMORY, "%s: drawing the caption failed: %s", op,
                         cairo_status_to_string(cs));
    }
    c->box_w = w, c->box_h = h, c->shown = 1;
    return FV_OK;
}

/* d over premultiplied s of coverage a, all 0..255: s + d (255 - a) / 255,
 * rounded (s <= a, so at most 255). */
static inline unsigned char over(unsigned s, unsigned a, unsigned d) {
    return (unsigned char)(s + (d * (255 - a) + 127) / 255);
}

const fv_image *fv__caption_apply(fv__caption *c, const fv_image *frame, fv_image *tmp) {
    if (!c->shown) return frame;
    const size_t row = c->bpp * (size_t)c->width;
    for (int y = 0; y < c->height; y++)
        memcpy(c->frame + row * y, (const unsigned char *)frame->data + frame->stride * y, row);
    const int pad = font_px(c->height) / 4 + 1;
    const unsigned char *sp = cairo_image_surface_get_data(c->box);
    const int sstride = cairo_image_surface_get_stride(c->box);
    for (int y = 0; y < c->box_h; y++) {
        const uint32_t *src = (const uint32_t *)(sp + (size_t)sstride * y);
        unsigned char *d = c->frame + row * (size_t)(pad + y) + c->bpp * (size_t)pad;
        for (int x = 0; x < c->box_w; x++, d += c->bpp) {
            const uint32_t p = src[x]; /* native-endian premultiplied ARGB */
            const unsigned a = p >> 24, r = (p >> 16) & 255, g = (p >> 8) & 255, b = p & 255;
            switch (c->format) {
            case FV_PIXEL_GRAY8:
                d[0] = over((77 * r + 150 * g + 29 * b + 128) >> 8, a, d[0]);
                break;
            case FV_PIXEL_BGR24:
                d[0] = over(b, a, d[0]), d[1] = over(g, a, d[1]), d[2] = over(r, a, d[2]);
                break;
            default: /* RGB24, RGBA32 (alpha kept) */
                d[0] = over(r, a, d[0]), d[1] = over(g, a, d[1]), d[2] = over(b, a, d[2]);
                break;
            }
        }
    }
    *tmp = *frame;
    tmp->data = c->frame;
    tmp->stride = row;
    return tmp;
}

#else /* built without Pango and Cairo */

int fv__caption_available(void) {
    return 0;
}
fv_status fv__caption_create(int width, int height, fv_pixel_format format, fv__caption **out) {
    (void)width, (void)height, (void)format;
    *out = NULL;
    return fv__error(FV_ERR_NOT_SUPPORTED, "sink_open: captions: built without Pango and Cairo");
}
void fv__caption_destroy(fv__caption *c) {
    (void)c;
}
fv_status fv__caption_set(fv__caption *c, const char *text) {
    (void)c, (void)text;
    return fv__error(FV_ERR_NOT_SUPPORTED, "sink_set_text: built without Pango and Cairo");
}
const fv_image *fv__caption_apply(fv__caption *c, const fv_image *frame, fv_image *tmp) {
    (void)c, (void)tmp;
    return frame;
}
#endif
