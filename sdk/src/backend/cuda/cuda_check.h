/* Check macros for CUDA and cuDNN calls: on failure they record
 * "<call> failed: <error name> (<error text>) at file:line" as the last
 * error and return FV_ERR_CUDA / FV_ERR_CUDNN from the enclosing function.
 * They never abort. Usable from C and CUDA (.cu) files. */
#ifndef FOVEA_CUDA_CHECK_H
#define FOVEA_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <cudnn.h>
#include "../../core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records a failed CUDA call (and clears CUDA's own last error, so a later
 * launch check does not report it again). Returns FV_ERR_CUDA. */
fv_status fv__cuda_fail(cudaError_t e, const char *call, const char *file, int line);
/* Records a failed cuDNN call. Returns FV_ERR_CUDNN. */
fv_status fv__cudnn_fail(cudnnStatus_t e, const char *call, const char *file, int line);

#ifdef __cplusplus
}
#endif

#define FV_CUDA_TRY(call)                                                                          \
    do {                                                                                           \
        cudaError_t fv__ce = (call);                                                               \
        if (fv__ce != cudaSuccess) return fv__cuda_fail(fv__ce, #call, __FILE__, __LINE__);        \
    } while (0)

#define FV_CUDNN_TRY(call)                                                                         \
    do {                                                                                           \
        cudnnStatus_t fv__ne = (call);                                                             \
        if (fv__ne != CUDNN_STATUS_SUCCESS)                                                        \
            return fv__cudnn_fail(fv__ne, #call, __FILE__, __LINE__);                              \
    } while (0)

#endif
