/* Convolution weights from the caller's KCRS into the layouts the CUDA
 * backend's engines read, in plain C (no CUDA), so that the unit tests check
 * every layout on any machine. Packing is part of every conv create, so a
 * net's cold start pays it once per layer: it runs in the order of the
 * output, a filter tap's channels at a time, and splits large layers across
 * threads. */
#ifndef FOVEA_BACKEND_CONV_WEIGHTS_H
#define FOVEA_BACKEND_CONV_WEIGHTS_H

#include <stddef.h>
#include "fovea/fp16.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The op (k, c, r, s, groups as in fv_conv2d_desc) and the form its
 * weights take (conv_engine.h's fv__conv_form): form_groups (the groups
 * the engine runs: 1, the op's groups, or C for depthwise), wc (input
 * channels per group in the packed row), kp (output channels padded to 8),
 * kr (fovea's direct kernel: positions per (k, filter row); 0 for the dense
 * [kp][r][s][wc] layout), pair (the direct kernel's pairs of pixels). */
typedef struct fv__conv_wpack {
    int k, c, r, s, groups;
    int form_groups, wc, kp, kr, pair;
} fv__conv_wpack;

/* Elements of the packed weights. */
size_t fv__conv_wpack_count(const fv__conv_wpack *p);

/* Pairs: where tap s, channel c (< 4) goes in a filter row's kr positions
 * (kernels/conv_direct.cuh): tap 0 first in step 0; odd taps 2j+1 the
 * second pixel of step j's first entry; even taps 2j+2 the second pixel of
 * its second entry. */
static inline int fv__conv_direct_pair_pos(int s, int c) {
    if (s == 0) return c;
    return s % 2 ? 16 * ((s - 1) / 2) + 4 + c : 16 * ((s - 2) / 2) + 12 + c;
}

/* w (FP16 KCRS, k * (c / groups) * r * s values) into out
 * (fv__conv_wpack_count values): dense [kp][r][s][wc], or the direct
 * kernel's [r][kp / 8][kr][8] (pairs: position fv__conv_direct_pair_pos(s,
 * c) instead of s * wc + c); zero outside the op's groups and in the
 * padding. Layers of 1M weights and up are packed by up to 4 threads (by
 * output channel: each writes its own part); where a thread cannot start,
 * the caller's thread packs its part. */
void fv__conv_wpack_run(const fv__conv_wpack *p, const fv_half *w, fv_half *out);

#ifdef __cplusplus
}
#endif
#endif
