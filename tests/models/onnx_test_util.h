/* Helpers for the ONNX importer's tests: raw float files and one run of an
 * imported net with ONNX-ordered (row-major NCHW) inputs and outputs. */
#ifndef FV_ONNX_TEST_UTIL_H
#define FV_ONNX_TEST_UTIL_H

#include <stddef.h>
#include "fovea/onnx.h"

/* Reads a whole little-endian float32 file; NULL on failure (message on
 * stderr). *count gets the number of floats. */
float *onnx_test_read_f32(const char *path, size_t *count);

/* Elements of an fv_onnx_io's dims. */
size_t onnx_test_io_count(const fv_onnx_io *io);

/* Creates the net of b on ctx (flags: FV_NET_*; dtype: fv_net_desc.dtype,
 * FV_DTYPE_F16 for the backend's own), uploads inputs[i]
 * (rep->inputs[i]'s elements, ONNX order), runs it once and downloads
 * every output into outputs[i] (malloc'd, ONNX order; free them). ONNX
 * order is row-major of the ONNX dims: for an input or output whose
 * fv_onnx_io.nhwc is 1 that is NHWC already, else NCHW (converted). */
fv_status onnx_test_run(fv_context *ctx, const fv_net_builder *b, const fv_onnx_report *rep,
                        uint32_t flags, fv_dtype dtype, const float *const *inputs,
                        float **outputs);

#endif
