/* Helpers shared by the vision ops' front ends (core/preprocess.c,
 * core/postprocess.c). Not installed. */
#ifndef FOVEA_CORE_VISION_H
#define FOVEA_CORE_VISION_H

#include "internal.h"
#include "../backend/net_ops.h"

/* The whole tensor as the kernels see it (cw = ps = C as stored). */
fv__view fv__tensor_view(const fv_tensor *t);

/* t is non-NULL, of ctx, F16 or F32, and where ctx's kernels can read it;
 * what names it in the message. */
fv_status fv__tensor_check(const char *op, const fv_context *ctx, const fv_tensor *t,
                           const char *what);

#endif
