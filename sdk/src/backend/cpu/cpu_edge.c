/* CPU backend: the edge step of fv_filter (magnitude or |x|, gain,
 * threshold, overlay), backend/edge_math.h's rule. */
#include "cpu.h"
#include "../edge_math.h"

fv_status fv__cpu_edge(fv_context *ctx, const fv_tensor *in, int pairs, const fv_tensor *base,
                       float base_scale, fv_tensor *out, float scale, float threshold) {
    const fv_tensor_shape *si = &in->shape, *so = &out->shape;
    const int m = si->c / (pairs ? 2 : 1), co = so->c;
    const size_t npix = (size_t)so->n * so->h * so->w;
    const size_t ics = (size_t)si->c_stored, ocs = (size_t)so->c_stored;
    for (size_t p = 0; p < npix; p++) {
        for (int j = 0; j < co; j++) {
            size_t e = (size_t)(m == 1 ? 0 : j) * (pairs ? 2 : 1);
            float g0 = fv__cpu_load(in, p * ics + e);
            float g1 = pairs ? fv__cpu_load(in, p * ics + e + 1) : 0.0f;
            float b = fv__edge_value(g0, g1, pairs, scale, threshold);
            if (base) {
                const fv_tensor_shape *sb = &base->shape;
                size_t bc = sb->c == 1 ? 0 : (size_t)j;
                b = fv__edge_overlay(b, fv__cpu_load(base, p * (size_t)sb->c_stored + bc),
                                     base_scale);
            }
            fv__cpu_store(out, p * ocs + (size_t)j, b);
        }
        if (so->dtype == FV_DTYPE_F16)
            for (size_t c = (size_t)co; c < ocs; c++)
                ((fv_half *)out->data)[p * ocs + c] = 0;
    }
    return FV_OK;
}
