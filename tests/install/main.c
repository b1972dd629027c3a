#include <stdio.h>
#include <fovea/fovea.h>

int main(void) {
    fv_half x[4 * 4], y[4 * 4];                   /* a 4x4 one-channel FP16 image, NHWC */
    float w[3 * 3] = {1, 1, 1, 1, 1, 1, 1, 1, 1}; /* 3x3 box-sum kernel, KCRS */
    for (int i = 0; i < 16; i++)
        x[i] = fv_f32_to_f16((float)i);

    fv_context *ctx = NULL;
    fv_tensor *in = NULL, *out = NULL;
    fv_conv2d *conv = NULL;
    fv_context_desc cd = {.backend = FV_BACKEND_CPU}; /* FV_BACKEND_AUTO: GPU if usable */
    fv_tensor_desc td = {.dtype = FV_DTYPE_F16, .h = 4, .w = 4, .c = 1};
    fv_conv2d_desc cv = {.h = 4, .w = 4, .c = 1, .k = 1, .r = 3, .s = 3, .weights = w};
    cv.pad_h = cv.pad_w = 1; /* output 4x4 too */

    fv_status s = fv_context_create(&cd, &ctx);
    if (s == FV_OK) s = fv_tensor_create(ctx, &td, &in);
    if (s == FV_OK) s = fv_tensor_create(ctx, &td, &out);
    if (s == FV_OK) s = fv_conv2d_create(ctx, &cv, &conv); /* copies the weights */
    if (s == FV_OK) s = fv_tensor_upload(ctx, in, x, sizeof x);
    if (s == FV_OK) s = fv_conv2d_forward(conv, in, out); /* asynchronous on a GPU */
    if (s == FV_OK) s = fv_tensor_download(ctx, out, y, sizeof y);
    if (s == FV_OK) s = fv_context_synchronize(ctx); /* y is valid after this */
    if (s == FV_OK)
        printf("sum around (1,1): %g (expected 45)\n", fv_f16_to_f32(y[1 * 4 + 1]));
    else
        fprintf(stderr, "fovea: %s: %s\n", fv_status_name(s), fv_last_error());

    fv_conv2d_destroy(conv); /* every destroy accepts NULL */
    fv_tensor_destroy(out);
    fv_tensor_destroy(in);
    fv_context_destroy(ctx);
    return s == FV_OK ? 0 : 1;
}
