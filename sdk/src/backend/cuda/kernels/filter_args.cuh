/* The launch arguments both fv_filter engines on CUDA share (the frames,
 * the kernel's shape, the edge step): filled once from the filter's desc
 * and its images, for FUSED's fv__cuda_filter_args and DIRECT's
 * fv__cuda_direct_args alike (the same field names). Host code; included by
 * filter_fused.cu and filter_direct.cu only. */
#ifndef FOVEA_KERNELS_FILTER_ARGS_CUH
#define FOVEA_KERNELS_FILTER_ARGS_CUH

#include <string.h>
#include "../../../core/internal.h"

/* a: zeroed, then every shared field set; the engine's own fields (FUSED's
 * weights, DIRECT's kernel values) are the caller's. */
template <class A>
static void fv__filter_args_fill(A *a, const fv_filter_desc *d, const fv_image *in,
                                 const fv_image *out) {
    const int in_c = d->format == FV_PIXEL_GRAY8 ? 1 : 3;
    const int m = d->output == FV_FILTER_OUT_COLOR ? in_c : 1;
    const int custom = d->kind == FV_FILTER_CUSTOM;
    memset(a, 0, sizeof *a);
    a->width = in->width, a->height = in->height;
    a->in_format = in->format;
    a->in = (const unsigned char *)in->data;
    a->in_stride = in->stride;
    a->uv = (const unsigned char *)in->uv;
    a->uv_stride = in->uv_stride;
    a->out_format = out->format;
    a->out = (unsigned char *)out->data;
    a->out_stride = out->stride;
    a->in_c = in_c;
    a->m = m;
    a->pairs =
        d->kind == FV_FILTER_SOBEL || d->kind == FV_FILTER_SCHARR || d->kind == FV_FILTER_PREWITT;
    a->out_c = d->overlay && in_c > m ? in_c : m;
    a->r = custom ? d->kernel_rows : 3;
    a->s = custom ? d->kernel_cols : 3;
    a->gain = d->gain, a->threshold = d->threshold;
    a->overlay = d->overlay;
}

#endif
