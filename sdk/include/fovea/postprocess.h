/* fovea: a network's outputs -> results: classification (top-K with an
 * optional softmax, read on the host) and segmentation (per-pixel argmax,
 * class colours upsampled to the camera frame and blended over it).
 *
 * Each is an op made once (its buffers carved from the context's pools at
 * creation) and run per frame on the context's stream, allocating nothing:
 *
 *     fv_classify *top;
 *     fv_classify_create(ctx, &(fv_classify_desc){.batch = 4, .classes = 1000,
 *                                                 .k = 5, .softmax = 1}, &top);
 *     fv_net_forward(net);  fv_classify_run(top, fv_net_output(net, 0));
 *     fv_context_synchronize(ctx);
 *     fv_class_score best[5];  fv_classify_result(top, b, best, 5);
 *
 *     fv_segment *seg;
 *     fv_segment_create(ctx, &(fv_segment_desc){.batch = 4, .classes = 21,
 *                                               .height = 56, .width = 56}, &seg);
 *     fv_segment_run(seg, fv_net_output(net, 0), b, &region, &frame, &overlay);
 */
#ifndef FOVEA_POSTPROCESS_H
#define FOVEA_POSTPROCESS_H

#include <stdint.h>
#include "fovea/context.h"
#include "fovea/ops.h"
#include "fovea/preprocess.h"
#include "fovea/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- classification --------------------------------------------------------- */
/* A planned top-K over a batch of logits, with its result buffers; opaque. */
typedef struct fv_classify fv_classify;

#define FV_CLASSIFY_MAX_K 32 /* the most results per item */

/* What fv_classify_create plans; zero fields mean their defaults. */
typedef struct fv_classify_desc {
    int batch;   /* N of the logits tensor; >= 1 */
    int classes; /* C of the logits tensor; >= 1 */
    int k;       /* results per item, 1 .. FV_CLASSIFY_MAX_K; 0 means 5; clamped to classes */
    int softmax; /* 1: scores are softmax probabilities over C; 0: the values as they are */
    uint32_t reserved[4]; /* must be zero */
} fv_classify_desc;

/* One result of fv_classify_result. */
typedef struct fv_class_score {
    int index;   /* class, 0 .. C-1 */
    float score; /* probability (softmax) or the tensor's value */
} fv_class_score;

/* Plans the op: a device buffer for the results (DEVICE pool) and a host
 * one they are copied to (PINNED pool; on the CPU backend both are host
 * memory). ctx, desc, out required; *out NULL on failure. Returns
 * FV_ERR_BAD_PARAM (a field out of range: named), FV_ERR_OUT_OF_MEMORY. */
fv_status fv_classify_create(fv_context *ctx, const fv_classify_desc *desc, fv_classify **out);
/* Waits for the context's work and returns the buffers. NULL allowed. Destroy it before its context
 * (fv_context_destroy refuses while it lives). */
void fv_classify_destroy(fv_classify *op);

/* Queues, for every item b of logits ((N, C, 1, 1) as created: an fc or
 * global-pool output; F16 or F32; DEVICE or MAPPED pool on CUDA), the k
 * largest values (ties: the lower class first) and their scores, then the
 * copy of the results to the host buffer. One kernel on CUDA (one block per
 * item); nothing allocated. Read them with fv_classify_result once
 * fv_context_synchronize has returned. Returns FV_ERR_BAD_PARAM (NULL),
 * FV_ERR_BAD_SHAPE (the tensor's shape or dtype), FV_ERR_CUDA. */
fv_status fv_classify_run(fv_classify *op, const fv_tensor *logits);

/* The results of item b of the last run (after fv_context_synchronize):
 * count (1 .. k) entries, best first. Returns FV_ERR_BAD_PARAM (NULL, b or
 * count out of range), FV_ERR_BAD_STATE (not run yet). */
fv_status fv_classify_result(const fv_classify *op, int b, fv_class_score *out, int count);

/* ---- segmentation ----------------------------------------------------------- */
/* A planned segmentation overlay (argmax, palette, upsampling, blend); opaque. */
typedef struct fv_segment fv_segment;

#define FV_SEGMENT_MAX_CLASSES 256 /* the most classes a segmenter takes */

/* What fv_segment_create plans; zero fields mean their defaults. */
typedef struct fv_segment_desc {
    int batch, classes; /* N and C of the logits tensor; classes 1 .. FV_SEGMENT_MAX_CLASSES */
    int height, width;  /* H and W of the logits tensor */
    /* The net input's size the logits cover (for fv_segment_run's region);
     * 0 means the logits' own size. */
    int input_height, input_width;
    /* classes x 4 bytes: R, G, B and opacity (0 transparent .. 255) per
     * class; copied. NULL: fovea's palette (Pascal VOC's colours, class 0
     * transparent as background). */
    const uint8_t *palette;
    float alpha;          /* overall opacity of the colours, (0, 1]; 0 means 0.5 */
    uint32_t reserved[4]; /* must be zero */
} fv_segment_desc;

/* Plans the op: the class map (batch x height x width bytes) and the
 * palette in the DEVICE pool. ctx, desc, out required; *out NULL on failure.
 * Returns FV_ERR_BAD_PARAM (a field out of range: named),
 * FV_ERR_OUT_OF_MEMORY, FV_ERR_CUDA. */
fv_status fv_segment_create(fv_context *ctx, const fv_segment_desc *desc, fv_segment **out);
/* Waits for the context's work and returns the buffers. NULL allowed. Destroy it before its context
 * (fv_context_destroy refuses while it lives). */
void fv_segment_destroy(fv_segment *op);

/* Queues, for item `index` of logits (N, C, H, W as created; F16 or F32;
 * DEVICE or MAPPED pool on CUDA): the argmax over C of every pixel (ties:
 * the lower class), its class colour, bilinearly upsampled to out's size
 * (half-pixel centres, samples kept within the region's pixel centres so
 * nothing of a letterbox border bleeds in) from `region` of the net input
 * (what fv_preprocess_region gave for this frame; NULL: the whole input), and
 * blended over frame: out = frame * (1 - a) + colour * a, a = the class's
 * opacity / 255 * desc.alpha, premultiplied before upsampling (no dark
 * fringes), rounded half up to bytes.
 *   frame: NULL for the mask alone (colours over black), else the camera
 *          frame at out's size, any fv_pixel_format, device-accessible on
 *          CUDA (the same rules as fv_preprocess's src); it may be out
 *          itself (drawn in place) when formats match.
 *   out: RGB24, BGR24 or RGBA32 (alpha 255), device-accessible on CUDA.
 * Two kernels on CUDA (argmax at the logits' size, then the blend at the
 * frame's); nothing allocated. Returns FV_ERR_BAD_PARAM (NULL, index,
 * region, images), FV_ERR_BAD_SHAPE (the logits' shape or dtype),
 * FV_ERR_NOT_SUPPORTED (out's format), FV_ERR_CUDA. */
fv_status fv_segment_run(fv_segment *op, const fv_tensor *logits, int index,
                         const fv_region *region, const fv_image *frame, fv_image *out);

/* fovea's default palette: entry k's R, G, B, opacity (k 0 .. 255). */
void fv_segment_palette_color(int k, uint8_t rgba[4]);

#ifdef __cplusplus
}
#endif
#endif
