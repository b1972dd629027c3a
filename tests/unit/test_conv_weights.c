/* Weight packing for the CUDA backend's forms (backend/conv_weights.c)
 * against a plain reference: the loop over the caller's KCRS order that
 * packed them before (one weight at a time, to its place). Every layout: the
 * dense [kp][r][s][wc] form (C and K padded, C padded to 4 or not at all),
 * grouped, depthwise, groups as dense, and fovea's direct kernel's
 * [r][kp / 8][kr][8] with and without pairs; odd channels and filters; a
 * layer of over 1M weights (packed on several threads). Every byte is
 * compared, the padding's zeros included (the output is poisoned first). */
#include <stdlib.h>
#include <string.h>
#include "fv_test.h"
#include "backend/conv_weights.h"

static size_t ref_index(const fv__conv_wpack *p, size_t row, int k, int r, size_t pos) {
    if (p->kr) return (((size_t)r * (p->kp / 8) + k / 8) * p->kr + pos) * 8 + k % 8;
    return ((size_t)k * p->r + r) * row + pos;
}

static void ref_pack(const fv__conv_wpack *p, const fv_half *w, fv_half *out) {
    int cg = p->c / p->groups, kg = p->k / p->groups;
    size_t row = p->kr ? (size_t)p->kr : (size_t)p->s * p->wc;
    memset(out, 0, fv__conv_wpack_count(p) * sizeof *out);
    for (int k = 0; k < p->k; k++) {
        int g = k / kg;
        for (int c = 0; c < cg; c++) {
            int col = p->form_groups == 1 ? g * cg + c : p->wc == 1 ? 0 : c;
            for (int r = 0; r < p->r; r++)
                for (int s = 0; s < p->s; s++) {
                    size_t pos = p->pair ? (size_t)fv__conv_direct_pair_pos(s, col)
                                         : (size_t)s * p->wc + col;
                    out[ref_index(p, row, k, r, pos)] =
                        w[(((size_t)k * cg + c) * p->r + r) * p->s + s];
                }
        }
    }
}

static int up(int x, int m) {
    return (x + m - 1) / m * m;
}

static void check(const fv__conv_wpack *p, const char *what) {
    size_t nw = (size_t)p->k * (p->c / p->groups) * p->r * p->s, n = fv__conv_wpack_count(p);
    fv_half *w = malloc(nw * sizeof *w), *got = malloc(n * sizeof *got),
            *want = malloc(n * sizeof *want);
    assert_non_null(w), assert_non_null(got), assert_non_null(want);
    for (size_t i = 0; i < nw; i++) /* distinct, non-zero: a misplaced weight shows */
        w[i] = (fv_half)(1 + (fv_test_rand_u64() % 0x7bff));
    memset(got, 0xA5, n * sizeof *got);
    ref_pack(p, w, want);
    fv__conv_wpack_run(p, w, got);
    if (memcmp(got, want, n * sizeof *got) != 0) {
        size_t i = 0;
        while (got[i] == want[i])
            i++;
        fail_msg("%s (k %d c %d %dx%d groups %d; form groups %d wc %d kp %d kr %d pair %d): "
                 "element %zu of %zu is %u, the reference has %u",
                 what, p->k, p->c, p->r, p->s, p->groups, p->form_groups, p->wc, p->kp, p->kr,
                 p->pair, i, n, got[i], want[i]);
    }
    free(w), free(got), free(want);
}

static void dense_forms_match_the_reference(void **state) {
    (void)state;
    fv_test_seed(41);
    const int shapes[][4] = {{32, 16, 3, 3}, {5, 3, 3, 3},   {7, 5, 7, 7}, {64, 3, 7, 7},
                             {9, 9, 3, 1},   {12, 12, 1, 1}, {1, 1, 1, 1}, {256, 128, 3, 3}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int k = shapes[i][0], c = shapes[i][1], r = shapes[i][2], s = shapes[i][3];
        int cp = up(c, 8), kp = up(k, 8);
        check(&(fv__conv_wpack){k, c, r, s, 1, 1, cp, kp, 0, 0}, "dense, C padded to 8");
        check(&(fv__conv_wpack){k, c, r, s, 1, 1, up(c, 4), kp, 0, 0}, "dense, C padded to 4");
        check(&(fv__conv_wpack){k, c, r, s, 1, 1, c, kp, 0, 0}, "dense, C as is");
    }
}

static void grouped_and_depthwise_forms_match_the_reference(void **state) {
    (void)state;
    fv_test_seed(42);
    /* depthwise: form groups C, one channel a group */
    check(&(fv__conv_wpack){32, 32, 3, 3, 32, 32, 1, 32, 0, 0}, "depthwise");
    check(&(fv__conv_wpack){6, 6, 3, 3, 6, 8, 1, 8, 0, 0}, "depthwise, odd C");
    check(&(fv__conv_wpack){960, 960, 5, 5, 960, 960, 1, 960, 0, 0}, "depthwise, wide");
    /* grouped: the engine runs the groups, wc = C / groups */
    check(&(fv__conv_wpack){64, 32, 3, 3, 4, 4, 8, 64, 0, 0}, "grouped");
    check(&(fv__conv_wpack){128, 64, 1, 1, 8, 8, 8, 128, 0, 0}, "grouped 1x1");
    /* groups as dense: zero outside each group's block */
    check(&(fv__conv_wpack){4, 6, 3, 3, 2, 1, 8, 8, 0, 0}, "groups as dense");
    check(&(fv__conv_wpack){64, 32, 3, 3, 4, 1, 32, 64, 0, 0}, "groups as dense, 4 groups");
}

static void direct_kernel_forms_match_the_reference(void **state) {
    (void)state;
    fv_test_seed(43);
    /* kr: S * cm rounded up to 16 */
    const int cms[] = {4, 8, 16, 32};
    for (int i = 0; i < 4; i++)
        for (int s = 1; s <= 7; s += 2) {
            int cm = cms[i], c = cm - (i % 2), k = 8 * (i + 1) - 3;
            check(&(fv__conv_wpack){k, c, s, s, 1, 1, cm, up(k, 8), up(s * cm, 16), 0},
                  "direct kernel");
        }
    /* pairs: cm 4, positions from fv__conv_direct_pair_pos */
    for (int s = 1; s <= 7; s++) {
        int kr = up(fv__conv_direct_pair_pos(s - 1, 3) + 1, 16);
        check(&(fv__conv_wpack){16, 3, 3, s, 1, 1, 4, 16, kr, 1}, "direct kernel, pairs");
        check(&(fv__conv_wpack){5, 4, s, s, 1, 1, 4, 8, kr, 1}, "direct kernel, pairs, odd K");
    }
    /* packed taps: wc = C (1, 3, 4), tap s's channels at s * C, kr = S * C
     * rounded up to 16 */
    const int pcs[] = {1, 3, 4};
    for (int i = 0; i < 3; i++)
        for (int s = 3; s <= 5; s += 2) {
            int c = pcs[i];
            check(&(fv__conv_wpack){32, c, s, s, 1, 1, c, 32, up(s * c, 16), 0},
                  "direct kernel, packed taps");
            check(&(fv__conv_wpack){12, c, s, s, 1, 1, c, 16, up(s * c, 16), 0},
                  "direct kernel, packed taps, K padded");
        }
    /* the place the kernel reads: 5x5 RGB, K 16: W[k 9][c 2][r 1][s 4] at
     * filter row 1, tile 1, position 4 * 3 + 2 of 16, lane 1 */
    fv__conv_wpack p = {16, 3, 5, 5, 1, 1, 3, 16, 16, 0};
    fv_half w[16 * 3 * 25], out[5 * 2 * 16 * 8];
    assert_int_equal(fv__conv_wpack_count(&p), sizeof out / sizeof out[0]);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = (fv_half)(i + 1);
    fv__conv_wpack_run(&p, w, out);
    assert_int_equal(out[((1 * 2 + 1) * 16 + 14) * 8 + 1], w[((9 * 3 + 2) * 5 + 1) * 5 + 4]);
    assert_int_equal(out[((1 * 2 + 1) * 16 + 15) * 8 + 1], 0); /* past S x C */
}

static void large_layers_pack_on_threads_alike(void **state) {
    (void)state;
    fv_test_seed(44);
    /* 512 x 512 x 3 x 3: 2.4M weights, over the threads' threshold; K not a
     * multiple of the thread count */
    check(&(fv__conv_wpack){512, 512, 3, 3, 1, 1, 512, 512, 0, 0}, "ResNet's 7x7x512 layer");
    check(&(fv__conv_wpack){1001, 130, 3, 3, 1, 1, 136, 1008, 0, 0}, "odd K and C, threads");
    check(&(fv__conv_wpack){3, 1 << 19, 1, 1, 1, 1, 1 << 19, 8, 0, 0}, "fewer K than threads");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dense_forms_match_the_reference),
        cmocka_unit_test(grouped_and_depthwise_forms_match_the_reference),
        cmocka_unit_test(direct_kernel_forms_match_the_reference),
        cmocka_unit_test(large_layers_pack_on_threads_alike),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
