/* fovea: IEEE 754 binary16 conversion on the host.
 * FP32 -> FP16 rounds to nearest, ties to even; overflow gives infinity;
 * subnormals are produced and read exactly; NaN stays NaN (quiet, sign and
 * top payload bits kept). */
#ifndef FOVEA_FP16_H
#define FOVEA_FP16_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t fv_half; /* raw binary16 bits */

fv_half fv_f32_to_f16(float x); /* x rounded to nearest even */
float fv_f16_to_f32(fv_half h); /* exact */
/* x rounded to the nearest FP16 value, returned as float. */
float fv_round_f16(float x);
/* Bulk forms; src and dst must not overlap. n may be 0. */
/* n floats to FP16, rounded to nearest even */
void fv_f32_to_f16_n(const float *src, fv_half *dst, size_t n);
void fv_f16_to_f32_n(const fv_half *src, float *dst, size_t n); /* n FP16 values to float, exact */

#ifdef __cplusplus
}
#endif
#endif
