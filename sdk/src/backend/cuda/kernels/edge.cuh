/* The edge step of fv_filter (gradient magnitude or |x|, gain, threshold,
 * overlay): one thread per pixel. The rule is backend/edge_math.h's, shared
 * with the CPU backend. Host launcher callable from C. */
#ifndef FOVEA_KERNELS_EDGE_CUH
#define FOVEA_KERNELS_EDGE_CUH

#include <cuda_runtime.h>
#include "../../../core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fv__cuda_edge_args {
    size_t pixels;
    const void *in; /* pixels x in_cs, in_dtype (F16 or F32) */
    fv_dtype in_dtype;
    int in_c, in_cs; /* in_c = m or 2m (pairs), m 1 or 3 */
    int pairs;
    const void *base; /* NULL or pixels x base_cs, base_dtype; C 1 or 3 */
    fv_dtype base_dtype;
    int base_c, base_cs;
    float base_scale;
    void *out; /* pixels x out_cs, out_dtype (F16 or F32); C 1 or 3 */
    fv_dtype out_dtype;
    int out_c, out_cs; /* padding lanes written 0 */
    float scale, threshold;
} fv__cuda_edge_args;

fv_status fv__cuda_edge_launch(cudaStream_t stream, const fv__cuda_edge_args *a);

#ifdef __cplusplus
}
#endif
#endif
