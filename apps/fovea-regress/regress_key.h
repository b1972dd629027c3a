/* fovea-regress: the convolution keys of a device profile.
 *
 * A profile's conv line starts with the op's signature, as the SDK writes it
 * (fv__conv2d_key in sdk/src/core/profile.c), e.g.
 *   conv2d:n1:h1080:w1920:c3:k32:r5:s5:u1:v1:p2:q2:d1:e1:g1:a1:al0:b1:f16
 * n h w c: input shape; k: output channels; r s: kernel; u v: stride;
 * p q: padding; d e: dilation; g: groups; a: fv_activation; al: its alpha
 * (0 unless clipped ReLU or leaky ReLU); b: 1 with bias; f16/f32: dtype. */
#ifndef FOVEA_REGRESS_KEY_H
#define FOVEA_REGRESS_KEY_H

#include <stddef.h>
#include "fovea/fovea.h"

/* Parses key into *d (weights, bias and flags zero; every other field set)
 * and *has_bias. The key must be exactly as the SDK writes it (it is
 * formatted again and compared), with a desc the SDK would accept (sizes
 * >= 1, groups dividing c and k, an output of at least one pixel).
 * Returns 0, or -1 with a message naming the field in err (err_n bytes). */
int regress_key_parse(const char *key, fv_conv2d_desc *d, int *has_bias, char *err, size_t err_n);

/* Writes the key of d (normalized: zeros that mean 1 are written as 1), in
 * the SDK's format. */
void regress_key_format(const fv_conv2d_desc *d, int has_bias, char *out, size_t n);

#endif
