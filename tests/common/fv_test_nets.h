/* Small fv_nets shared by the CPU and GPU net tests (random weights from
 * the current fv_test_seed), and a check of a created net's memory plan. */
#ifndef FV_TEST_NETS_H
#define FV_TEST_NETS_H

#include "fovea/fovea.h"

/* A two-level UNet: x (n, 3, 16, 16) -> conv+relu (8) = skip -> maxpool 2
 * -> conv+relu (12) -> nearest upsample x2 -> concat [skip, up] (20) ->
 * conv+relu (4) = output "y". The skip (a convolution's output, channels
 * [0, 8)) and the upsample write their concat slices in place
 * (concat_elided 2). */
fv_net_builder *fv_test_net_unet(int n);

/* Concats fed by the net's own kernels: x (n, 5, 8, 8); lo = maxpool 2 (x);
 * inner = concat [bilinear upsample (lo), avgpool 3x3 (x)]; outer = concat
 * [inner, silu (x), x, nearest upsample (lo)]; cat2 = concat [affine (lo),
 * softmax (lo)], an output; outputs "y1" = 1x1 conv (outer), "y2" = pad
 * (upsample * avgpool), "y3" = conv (the nearest upsample), "cat2". Written
 * in place: both of inner's inputs, inner and silu in outer, both of cat2's
 * (concat_elided 6); x (a net input) and the nearest upsample (a
 * convolution reads it) are copied. */
fv_net_builder *fv_test_net_concat_mix(int n);

/* x (n, 6, 7, 9) -> concat [a = conv 3x3 (8), b = conv+relu 1x1 (5),
 * d = conv 3x3 (8), c = conv+relu 3x3 (8)] -> 1x1 conv = output "y"; and
 * "y2" = 1x1 conv (c). Written in place: a always; b and d in F32 nets
 * (the CPU backend) but not in F16 ones (b's 5 channels are not whole
 * 16-byte vectors; d starts at channel 13); c never (a convolution reads
 * it): concat_elided 3 on the CPU backend, 1 on CUDA. */
fv_net_builder *fv_test_net_concat_convs(int n);

/* Fails the test (cmocka) when two tensors alive at one layer share an
 * address, but where one is a channel slice of the other (a concat input
 * written in place) or the planner gave both one buffer (in place, alias).
 * Addresses only: works for CUDA nets too. */
void fv_test_net_check_no_overlap(const fv_net *net);

#endif
