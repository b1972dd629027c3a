/* MJPEG frames (V4L2 cameras) decoded with libjpeg(-turbo) into one output
 * buffer made at create. Errors longjmp back as in image_jpeg.c, and the
 * warnings that mean truncated or corrupt entropy-coded data are errors; a
 * failed frame leaves the decompressor aborted and ready for the next one.
 *
 * Many USB cameras send AVI1-style MJPEG without Huffman tables (DHT): the
 * standard tables of ITU-T T.81 K.3 are implied. libjpeg-turbo fills in the
 * standard tables only where none were ever loaded, so after one frame with
 * its own (e.g. optimized) tables a DHT-less frame would reuse those; IJG
 * libjpeg fails. So every frame starts from the standard tables, installed
 * here before its headers are read; its own DHT segments replace them. No
 * table of one frame reaches the next (not even one defined after a scan,
 * or behind bytes libjpeg skips as extraneous). */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include "io_internal.h" /* stdio.h first: jpeglib.h needs FILE */
#include <jpeglib.h>
#include <jerror.h>

struct fv__mjpeg {
    struct jpeg_error_mgr err;
    struct jpeg_decompress_struct d;
    int created; /* jpeg_create_decompress succeeded */
    jmp_buf jmp;
    char msg[JMSG_LENGTH_MAX];
    int width, height;
    int direct; /* libjpeg writes `format` itself; else RGB24 into rgb, then converted */
    J_COLOR_SPACE space;
    unsigned char *out; /* the frame, dense, in `format` */
    unsigned char *rgb; /* RGB24 staging for YUV formats */
    fv_image frame;
};

typedef struct std_table {
    UINT8 bits[17];
    UINT8 vals[162];
} std_table;

/* ITU-T T.81 K.3: DC luma, AC luma, DC chroma, AC chroma (as libjpeg's
 * jpeg_set_defaults makes them). */
static const std_table std_tables[4] = {
    {/* dc luma */ {0, 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0},
     {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b}},
    {/* ac luma */ {0, 0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 125},
     {0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61,
      0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52,
      0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25,
      0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45,
      0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64,
      0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83,
      0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99,
      0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6,
      0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3,
      0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8,
      0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa}},
    {/* dc chroma */ {0, 0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},
     {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b}},
    {/* ac chroma */ {0, 0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 119},
     {0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61,
      0x71, 0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33,
      0x52, 0xf0, 0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18,
      0x19, 0x1a, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44,
      0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63,
      0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a,
      0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,
      0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4,
      0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca,
      0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7,
      0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa}},
};

static void on_error_exit(j_common_ptr c) {
    fv__mjpeg *m = c->client_data;
    m->err.format_message(c, m->msg);
    longjmp(m->jmp, 1);
}

static void on_emit_message(j_common_ptr c, int level) {
    fv__mjpeg *m = c->client_data;
    if (level != -1) return; /* trace messages */
    switch (m->err.msg_code) {
    case JWRN_JPEG_EOF:          /* premature end of data */
    case JWRN_HIT_MARKER:        /* premature end of a data segment */
    case JWRN_MUST_RESYNC:       /* corrupt data */
    case JWRN_HUFF_BAD_CODE:     /* corrupt data */
    case JWRN_NOT_SEQUENTIAL:    /* progressive scans out of order */
    case JWRN_BOGUS_PROGRESSION: /* inconsistent progression */
        m->err.format_message(c, m->msg);
        longjmp(m->jmp, 1);
    default:
        break; /* harmless (e.g. extraneous bytes before a marker) */
    }
}

static void on_output_message(j_common_ptr c) {
    (void)c;
}

/* The libjpeg output space that is `f` itself (*direct = 1), else RGB. */
static J_COLOR_SPACE space_of(fv_pixel_format f, int *direct) {
    *direct = 1;
    switch (f) {
    case FV_PIXEL_GRAY8:
        return JCS_GRAYSCALE;
#ifdef JCS_EXTENSIONS
    case FV_PIXEL_BGR24:
        return JCS_EXT_BGR;
    case FV_PIXEL_RGBA32:
        return JCS_EXT_RGBA;
#endif
    case FV_PIXEL_RGB24:
        return JCS_RGB;
    default:
        *direct = 0;
        return JCS_RGB;
    }
}

static void install_std_tables(fv__mjpeg *m) {
    for (int k = 0; k < 4; k++) {
        JHUFF_TBL **slot = k & 1 ? &m->d.ac_huff_tbl_ptrs[k >> 1] : &m->d.dc_huff_tbl_ptrs[k >> 1];
        if (!*slot) *slot = jpeg_alloc_huff_table((j_common_ptr)&m->d);
        const std_table *t = &std_tables[k];
        size_t count = 0;
        for (int i = 1; i <= 16; i++)
            count += t->bits[i];
        memcpy((*slot)->bits, t->bits, sizeof t->bits);
        memset((*slot)->huffval, 0, sizeof(*slot)->huffval);
        memcpy((*slot)->huffval, t->vals, count);
        (*slot)->sent_table = FALSE;
    }
}

/* Decodes into m->out (or m->rgb). 0 on success; else m->msg says why. */
static int decode_run(fv__mjpeg *m, const unsigned char *data, size_t size) {
    if (setjmp(m->jmp)) return 1;
    install_std_tables(m);
    jpeg_mem_src(&m->d, data, (unsigned long)size);
    jpeg_read_header(&m->d, TRUE);
    if ((int)m->d.image_width != m->width || (int)m->d.image_height != m->height) {
        snprintf(m->msg, sizeof m->msg, "frame is %ux%u, negotiated %dx%d",
                 (unsigned)m->d.image_width, (unsigned)m->d.image_height, m->width, m->height);
        return 1;
    }
    m->d.out_color_space = m->space;
    jpeg_start_decompress(&m->d);
    size_t row = (size_t)m->width * (size_t)m->d.output_components;
    unsigned char *dst = m->direct ? m->out : m->rgb;
    while (m->d.output_scanline < m->d.output_height) {
        JSAMPROW r = dst + row * m->d.output_scanline;
        jpeg_read_scanlines(&m->d, &r, 1);
    }
    jpeg_finish_decompress(&m->d);
    return 0;
}

fv_status fv__mjpeg_create(int width, int height, fv_pixel_format format, fv__mjpeg **out) {
    if (!out) return fv__error(FV_ERR_BAD_PARAM, "mjpeg_create: out is NULL");
    *out = NULL;
    if (width <= 0 || height <= 0 || width > FV_IMAGE_MAX_DIM || height > FV_IMAGE_MAX_DIM)
        return fv__error(FV_ERR_BAD_PARAM, "mjpeg_create: size %dx%d (1..%d each)", width, height,
                         FV_IMAGE_MAX_DIM);
    int direct;
    J_COLOR_SPACE space = space_of(format, &direct);
    if (!direct && format != FV_PIXEL_YUYV && format != FV_PIXEL_UYVY && format != FV_PIXEL_NV12)
        return fv__error(FV_ERR_NOT_SUPPORTED,
                         "mjpeg_create: cannot decode into %s (RGB24, BGR24, GRAY8, RGBA32, YUYV, "
                         "UYVY, NV12)",
                         fv_pixel_format_name(format));
    if (!direct && ((width & 1) || (format == FV_PIXEL_NV12 && (height & 1))))
        return fv__error(FV_ERR_BAD_PARAM, "mjpeg_create: size %dx%d: %s needs an even %s", width,
                         height, fv_pixel_format_name(format), width & 1 ? "width" : "height");
    fv__mjpeg *m = calloc(1, sizeof *m);
    if (!m) return fv__error(FV_ERR_OUT_OF_MEMORY, "mjpeg_create: out of host memory");
    m->width = width;
    m->height = height;
    m->direct = direct;
    m->space = space;
    m->out = malloc(fv_image_bytes(format, width, height));
    if (!direct) m->rgb = malloc((size_t)width * (size_t)height * 3);
    if (!m->out || (!direct && !m->rgb)) {
        fv__mjpeg_destroy(m);
        return fv__error(FV_ERR_OUT_OF_MEMORY,
                         "mjpeg_create: out of host memory for a %dx%d %s decode buffer", width,
                         height, fv_pixel_format_name(format));
    }
    size_t stride = format == FV_PIXEL_YUYV || format == FV_PIXEL_UYVY ? (size_t)width * 2
                    : format == FV_PIXEL_NV12                          ? (size_t)width
                                              : (size_t)width * fv__image_file_bpp(format);
    m->frame = (fv_image){
        .format = format, .width = width, .height = height, .stride = stride, .data = m->out};
    if (format == FV_PIXEL_NV12) {
        m->frame.uv = m->out + stride * (size_t)height;
        m->frame.uv_stride = stride;
    }
    jpeg_std_error(&m->err);
    m->err.error_exit = on_error_exit;
    m->err.emit_message = on_emit_message;
    m->err.output_message = on_output_message;
    m->d.err = &m->err;
    m->d.client_data = m;
    if (setjmp(m->jmp)) {
        fv__error(FV_ERR_OUT_OF_MEMORY, "mjpeg_create: libjpeg: %s", m->msg);
        fv__mjpeg_destroy(m);
        return FV_ERR_OUT_OF_MEMORY;
    }
    jpeg_create_decompress(&m->d);
    m->created = 1;
    *out = m;
    return FV_OK;
}

fv_status fv__mjpeg_decode(fv__mjpeg *m, const unsigned char *data, size_t size,
                           const fv_image **frame) {
    if (frame) *frame = NULL;
    if (!m || !data || !frame)
        return fv__error(FV_ERR_BAD_PARAM, "mjpeg_decode: %s is NULL",
                         !m      ? "decoder"
                         : !data ? "data"
                                 : "frame");
    if (size < 4 || data[0] != 0xff || data[1] != 0xd8)
        return fv__error(FV_ERR_FORMAT, "mjpeg_decode: not a JPEG frame (%zu bytes%s)", size,
                         size < 4 ? "" : ", no SOI marker");
    m->err.msg_code = 0;
    if (decode_run(m, data, size)) {
        jpeg_abort_decompress(&m->d);
        return fv__error(m->err.msg_code == JERR_OUT_OF_MEMORY ? FV_ERR_OUT_OF_MEMORY
                                                               : FV_ERR_FORMAT,
                         "mjpeg_decode: broken MJPEG frame (%zu bytes): %s", size, m->msg);
    }
    if (!m->direct) {
        fv_image in = {.format = FV_PIXEL_RGB24,
                       .width = m->width,
                       .height = m->height,
                       .stride = (size_t)m->width * 3,
                       .data = m->rgb};
        fv_image o = m->frame;
        fv_status s = fv__host_convert(&in, &o);
        if (s != FV_OK) return s;
    }
    *frame = &m->frame;
    return FV_OK;
}

void fv__mjpeg_destroy(fv__mjpeg *m) {
    if (!m) return;
    if (m->created) jpeg_destroy_decompress(&m->d);
    free(m->out);
    free(m->rgb);
    free(m);
}
