/* TEMPORARY (being replaced by real implementations in this session). */
#include "cpu.h"
fv_status fv__cpu_conv2d_create(fv_conv2d *op, const float *w, const float *b) { return fv__error(FV_ERR_NOT_SUPPORTED, "todo"); }
void fv__cpu_conv2d_destroy(fv_conv2d *op) {}
fv_status fv__cpu_conv2d_forward(fv_conv2d *op, const fv_tensor *in, fv_tensor *out) { return fv__error(FV_ERR_NOT_SUPPORTED, "todo"); }
fv_status fv__cpu_pooling2d(fv_context *ctx, const fv_pooling_desc *d, const fv_tensor *in, fv_tensor *out) { return fv__error(FV_ERR_NOT_SUPPORTED, "todo"); }
fv_status fv__cpu_add(fv_context *ctx, const fv_tensor *a, const fv_tensor *b, fv_tensor *out, fv_activation act, float alpha) { return fv__error(FV_ERR_NOT_SUPPORTED, "todo"); }
fv_status fv__cpu_pack(fv_context *ctx, const fv_image *src, fv_tensor *dst, const fv_pack_desc *d) { return fv__error(FV_ERR_NOT_SUPPORTED, "todo"); }
fv_status fv__cpu_unpack(fv_context *ctx, const fv_tensor *src, const fv_image *dst, const fv_unpack_desc *d) { return fv__error(FV_ERR_NOT_SUPPORTED, "todo"); }
