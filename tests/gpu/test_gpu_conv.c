/* conv2d on the CUDA backend against the CPU FP32 reference: every
 * activation, strides, padding, dilation, groups, odd channel counts; random
 * inputs; outputs poisoned first; no allocation in the forward loop; stream
 * capture replays correctly; plans cached in the profile give the same bits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/profile.h"
#include "fovea/fovea_cuda.h"
#include "fv_test.h"

static fv_context *gpu;
static fv_context *cpu;
static fv_conv2d_info last_info; /* of run_case's GPU op */
/* run_case: 1: the GPU op writes its output as channels [8, 8 + K) of a
 * tensor of K + 16 (fv__conv2d_create_into, a net's concat), whose other
 * channels must come out untouched; 0: a dense output */
static int g_slice;
#define SLICE_C0 8

typedef struct conv_case {
    int n, h, w, c, k, r, s, stride, pad, dil, groups;
    fv_activation act;
    float alpha;
    int bias;
    uint32_t flags;
} conv_case;

static fv_tensor *make(fv_context *ctx, fv_dtype dt, int n, int h, int w, int c) {
    fv_tensor *t = NULL;
    fv_tensor_desc d = {.dtype = dt, .n = n, .h = h, .w = w, .c = c};
    FV_ASSERT_OK(fv_tensor_create(ctx, &d, &t));
    return t;
}

static fv_conv2d_desc desc_of(const conv_case *cc, fv_dtype dt, const float *w, const float *b) {
    return (fv_conv2d_desc){.n = cc->n,
                            .h = cc->h,
                            .w = cc->w,
                            .c = cc->c,
                            .k = cc->k,
                            .r = cc->r,
                            .s = cc->s,
                            .stride_h = cc->stride,
                            .stride_w = cc->stride,
                            .pad_h = cc->pad,
                            .pad_w = cc->pad,
                            .dilation_h = cc->dil,
                            .dilation_w = cc->dil,
                            .groups = cc->groups,
                            .activation = cc->act,
                            .activation_alpha = cc->alpha,
                            .dtype = dt,
                            .weights = w,
                            .bias = cc->bias ? b : NULL,
                            .flags =
                                dt == FV_DTYPE_F16 ? cc->flags : (cc->flags & FV_CONV2D_RESIDUAL)};
}

/* Runs one case on both backends; returns the relative L2 error. */
static double run_case(const conv_case *cc, int verbose) {
    size_t nin = (size_t)cc->n * cc->h * cc->w * cc->c;
    size_t nw = (size_t)cc->k * (cc->c / cc->groups) * cc->r * cc->s;
    float *x = malloc(nin * sizeof *x), *w = malloc(nw * sizeof *w), b[512];
    fv_test_fill_uniform(x, nin, -1, 1);
    fv_test_fill_uniform(w, nw, -0.5f, 0.5f);
    fv_test_fill_uniform(b, (size_t)cc->k, -0.5f, 0.5f);
    /* the reference sees exactly what the GPU stores: FP16-rounded values */
    for (size_t i = 0; i < nin; i++)
        x[i] = fv_round_f16(x[i]);
    for (size_t i = 0; i < nw; i++)
        w[i] = fv_round_f16(w[i]);
    for (int i = 0; i < cc->k; i++)
        b[i] = fv_round_f16(b[i]);

    fv_conv2d_desc gd = desc_of(cc, FV_DTYPE_F16, w, b), cd = desc_of(cc, FV_DTYPE_F32, w, b);
    fv_conv2d *gop = NULL, *cop = NULL;
    const int ys = g_slice ? cc->k + 2 * SLICE_C0 : 0;
    FV_ASSERT_OK(fv__conv2d_create_into(gpu, &gd, ys, &gop));
    FV_ASSERT_OK(fv_conv2d_create(cpu, &cd, &cop));
    int on, oh, ow, oc;
    fv_conv2d_output_shape(gop, &on, &oh, &ow, &oc);
    size_t nout = (size_t)on * oh * ow * oc, npx = (size_t)on * oh * ow;

    fv_half *xh = malloc(nin * sizeof *xh), *yh = malloc(nout * sizeof *yh);
    fv_f32_to_f16_n(x, xh, nin);
    fv_tensor *gx = make(gpu, FV_DTYPE_F16, cc->n, cc->h, cc->w, cc->c);
    fv_tensor *gy = make(gpu, FV_DTYPE_F16, on, oh, ow, g_slice ? ys : oc), *gout = gy, yv;
    fv_half *wide = g_slice ? malloc(npx * (size_t)ys * sizeof *wide) : NULL;
    if (g_slice) { /* the op's output: a slice of gy */
        yv = *gy;
        yv.shape.c = oc;
        yv.shape.dense_bytes = nout * sizeof *yh;
        yv.shape.bytes -= SLICE_C0 * sizeof *yh;
        yv.data = (char *)gy->data + SLICE_C0 * sizeof *yh;
        yv.dev_data = (char *)gy->dev_data + SLICE_C0 * sizeof *yh;
        gout = &yv;
    }
    FV_ASSERT_OK(fv_tensor_upload(gpu, gx, xh, nin * sizeof *xh));
    /* FV_CONV2D_RESIDUAL: a random residual (FP16 values) on both sides */
    const int res = (cc->flags & FV_CONV2D_RESIDUAL) != 0;
    float *z = res ? malloc(nout * sizeof *z) : NULL;
    fv_tensor *gz = NULL, *cz = NULL;
    if (res) {
        fv_test_fill_uniform(z, nout, -1, 1);
        for (size_t i = 0; i < nout; i++)
            z[i] = fv_round_f16(z[i]);
        fv_f32_to_f16_n(z, yh, nout);
        gz = make(gpu, FV_DTYPE_F16, on, oh, ow, oc);
        cz = make(cpu, FV_DTYPE_F32, on, oh, ow, oc);
        FV_ASSERT_OK(fv_tensor_upload(gpu, gz, yh, nout * sizeof *yh));
        FV_ASSERT_OK(fv_tensor_upload(cpu, cz, z, nout * sizeof *z));
    }
    /* poison the output: NaN everywhere it should write (a slice: 3.14
     * in the wider tensor's other channels, which must stay) */
    for (size_t i = 0; i < nout; i++)
        yh[i] = 0x7e00;
    if (g_slice) {
        for (size_t i = 0; i < npx * (size_t)ys; i++) {
            int ch = (int)(i % (size_t)ys);
            wide[i] = ch >= SLICE_C0 && ch < SLICE_C0 + oc ? 0x7e00 : 0x4248;
        }
        FV_ASSERT_OK(fv_tensor_upload(gpu, gy, wide, npx * (size_t)ys * sizeof *wide));
    } else {
        FV_ASSERT_OK(fv_tensor_upload(gpu, gy, yh, nout * sizeof *yh));
    }
    FV_ASSERT_OK(fv_conv2d_forward_residual(gop, gx, gz, gout));
    if (g_slice) {
        FV_ASSERT_OK(fv_tensor_download(gpu, gy, wide, npx * (size_t)ys * sizeof *wide));
        FV_ASSERT_OK(fv_context_synchronize(gpu));
        for (size_t i = 0; i < npx * (size_t)ys; i++) {
            int ch = (int)(i % (size_t)ys);
            if (ch >= SLICE_C0 && ch < SLICE_C0 + oc)
                yh[i / (size_t)ys * (size_t)oc + (size_t)(ch - SLICE_C0)] = wide[i];
            else if (wide[i] != 0x4248)
                fail_msg("output slice: channel %d of pixel %zu (outside the slice) changed to "
                         "0x%04x",
                         ch, i / (size_t)ys, wide[i]);
        }
        /* the op refuses a dense output */
        fv_tensor *dense = make(gpu, FV_DTYPE_F16, on, oh, ow, oc);
        assert_int_equal(fv_conv2d_forward_residual(gop, gx, gz, dense), FV_ERR_BAD_SHAPE);
        assert_non_null(strstr(fv_last_error(), "pixel stride"));
        fv_tensor_destroy(dense);
    } else {
        FV_ASSERT_OK(fv_tensor_download(gpu, gy, yh, nout * sizeof *yh));
        FV_ASSERT_OK(fv_context_synchronize(gpu));
    }

    fv_tensor *cx = make(cpu, FV_DTYPE_F32, cc->n, cc->h, cc->w, cc->c);
    fv_tensor *cy = make(cpu, FV_DTYPE_F32, on, oh, ow, oc);
    float *ref = malloc(nout * sizeof *ref), *got = malloc(nout * sizeof *got);
    FV_ASSERT_OK(fv_tensor_upload(cpu, cx, x, nin * sizeof *x));
    FV_ASSERT_OK(fv_conv2d_forward_residual(cop, cx, cz, cy));
    FV_ASSERT_OK(fv_tensor_download(cpu, cy, ref, nout * sizeof *ref));
    fv_f16_to_f32_n(yh, got, nout);
    double err = fv_test_rel_l2(got, ref, nout);

    fv_conv2d_info info;
    FV_ASSERT_OK(fv_conv2d_info_get(gop, &info));
    last_info = info;
    if (verbose || err > 2e-3)
        printf("  %dx%dx%dx%d k%d %dx%d s%d p%d d%d g%d %-12s bias%d: err %.2e  [%s %s, %s, %s, "
               "ws %zu, tc %d, %d candidates, %.4f ms]\n",
               cc->n, cc->h, cc->w, cc->c, cc->k, cc->r, cc->s, cc->stride, cc->pad, cc->dil,
               cc->groups, fv_activation_name(cc->act), cc->bias, err, info.path, info.engine,
               info.choice, info.layout, info.workspace_bytes, info.tensor_cores, info.candidates,
               (double)info.measured_ms);
    if (cc->flags & FV_CONV2D_DIRECT) {
        assert_string_equal(info.path, "direct");
        assert_true(info.tensor_cores && info.fused);
    }
    if (cc->flags & FV_CONV2D_NO_DIRECT) {
        assert_string_not_equal(info.path, "direct");
        assert_string_not_equal(info.path, "gemm");
    }
    if (cc->flags & FV_CONV2D_AUTOTUNE) {
        assert_true(info.measured_ms > 0.0f);
        assert_true(info.candidates >= 1);
        assert_non_null(strstr(info.choice, "autotune"));
    }
    fv_tensor_destroy(gx), fv_tensor_destroy(gy), fv_tensor_destroy(cx), fv_tensor_destroy(cy);
    fv_tensor_destroy(gz), fv_tensor_destroy(cz);
    fv_conv2d_destroy(gop);
    fv_conv2d_destroy(cop);
    free(x), free(w), free(xh), free(yh), free(ref), free(got), free(z), free(wide);
    return err;
}

static void matches_cpu_reference(void **state) {
    fv_test_seed(2024);
    const conv_case cases[] = {
        /* n  h   w   c   k  r  s st pad dil g  act                  alpha bias */
        {1, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 0, 0},
        {1, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 1, 0},
        {1, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, 0},
        {1, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_CLIPPED_RELU, 0, 1, 0},
        {1, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_CLIPPED_RELU, 0.25f, 1, 0},
        {1, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, 0},
        {1, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 1, 0},
        {1, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_LEAKY_RELU, 0, 1, 0},
        {1, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.2f, 0, 0},
        {2, 33, 17, 3, 5, 3, 3, 1, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, 0},  /* odd C and K */
        {1, 40, 40, 3, 32, 5, 5, 2, 2, 1, 1, FV_ACT_RELU, 0, 1, 0},    /* stride 2 */
        {1, 31, 29, 5, 7, 7, 7, 3, 3, 1, 1, FV_ACT_IDENTITY, 0, 1, 0}, /* stride 3 */
        {1, 24, 24, 8, 8, 3, 3, 1, 2, 2, 1, FV_ACT_RELU, 0, 1, 0},     /* dilation 2 */
        {1, 24, 24, 12, 12, 1, 1, 1, 0, 1, 1, FV_ACT_TANH, 0, 1, 0},   /* 1x1 */
        {1, 20, 20, 9, 9, 3, 1, 1, 0, 1, 1, FV_ACT_IDENTITY, 0, 1, 0}, /* 3x1, no padding */
        {1, 16, 16, 32, 32, 3, 3, 1, 1, 1, 32, FV_ACT_RELU, 0, 1, 0},  /* depthwise */
        {1, 16, 16, 6, 6, 3, 3, 1, 1, 1, 6, FV_ACT_IDENTITY, 0, 1, 0}, /* depthwise, odd C */
        {1, 16, 16, 32, 64, 3, 3, 1, 1, 1, 4, FV_ACT_RELU, 0, 1, 0},   /* groups 4 (8 per group) */
        {1, 16, 16, 6, 4, 3, 3, 1, 1, 1, 2, FV_ACT_IDENTITY, 0, 1, 0}, /* groups 2, odd */
        {1, 64, 64, 3, 3, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 0, 0}, /* the Laplacian shape */
        {1, 16, 16, 128, 256, 7, 7, 2, 3, 1, 1, FV_ACT_RELU, 0, 1, 0}, /* a best-practices shape */
    };
    /* quick (sanitizers; racecheck takes seconds a case): the heuristics
     * pass only, on one case of each path and form: cuDNN dense (no bias,
     * runtime fusion, sigmoid, 1x1), depthwise, grouped, fovea's direct
     * kernel (4 channels in pairs, strides 2 and 3) and its gemm kernel */
    const unsigned quick = 1u << 0 | 1u << 3 | 1u << 5 | 1u << 9 | 1u << 10 | 1u << 11 | 1u << 13 |
                           1u << 15 | 1u << 17 | 1u << 19 | 1u << 20;
    double worst = 0;
    /* by heuristics (fovea's direct kernel for the small ones), then with
     * cuDNN's engines only */
    for (int pass = 0; pass < (fv_test_quick() ? 1 : 2); pass++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (fv_test_quick() && !(quick >> i & 1u)) continue;
            conv_case cc = cases[i];
            cc.flags = pass ? FV_CONV2D_NO_DIRECT : 0;
            double e = run_case(&cc, 1);
            if (e > worst) worst = e;
            if (!(e <= 2e-3))
                fail_msg("pass %d case %zu: relative L2 error %.3e > 2e-3", pass, i, e);
        }
    printf("  worst relative L2 error %.3e\n", worst);
}

/* Cases packed taps run with one row a warp (conv_direct.cuh): C of 3 or
 * 4, 3x3 to 7x7 (9x9 on 4 channels), strides 1-4, K stored as 16, 32, 64. */
static int packed_one_case(const conv_case *cc) {
    int kp = (cc->k + 7) / 8 * 8;
    return (cc->c == 3 || cc->c == 4) && cc->r == cc->s &&
           (cc->r == 3 || cc->r == 5 || cc->r == 7 || (cc->r == 9 && cc->c == 4)) &&
           cc->stride >= 1 && cc->stride <= 4 && (kp == 16 || kp == 32 || kp == 64);
}

/* Cases packed taps run with two rows a warp: C of 1, 3 or 4, stride 1,
 * 3x3 or 5x5, K up to 32. */
static int packed_two_case(const conv_case *cc) {
    return (cc->c == 1 || cc->c == 3 || cc->c == 4) && cc->stride == 1 && cc->r == cc->s &&
           (cc->r == 3 || cc->r == 5) && cc->k <= 32;
}

/* Cases whose first choice is packed taps: two rows a warp where they run,
 * else one on 3 channels or on 4 at an odd stride (on 4 at an even stride
 * the 4-channel form comes first). */
static int packed_first_case(const conv_case *cc) {
    return packed_two_case(cc) || (packed_one_case(cc) && (cc->c == 3 || cc->stride % 2));
}

/* fovea's direct kernel (FV_CONV2D_DIRECT, alone and autotuned over its
 * variants) on every channel width it reads (4, 8, 16, 32), K up to 64,
 * strides 1-3, partial tiles, every activation. */
static void direct_kernel_matches_cpu_reference(void **state) {
    fv_test_seed(31337);
    const uint32_t D = FV_CONV2D_DIRECT, DT = FV_CONV2D_DIRECT | FV_CONV2D_AUTOTUNE;
    const conv_case cases[] = {
        /* n  h   w   c   k  r  s st pad dil g  act                  alpha bias flags */
        {1, 40, 70, 3, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 1, D},
        {1, 40, 70, 3, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 1, DT},
        {1, 33, 65, 4, 24, 9, 9, 2, 4, 1, 1, FV_ACT_IDENTITY, 0, 1, D}, /* reads 4 channels */
        {1, 33, 65, 4, 32, 9, 9, 2, 4, 1, 1, FV_ACT_IDENTITY, 0, 0, DT},
        {1, 64, 64, 2, 16, 3, 3, 2, 1, 1, 1, FV_ACT_CLIPPED_RELU, 0.5f, 1, DT},
        {2, 30, 50, 8, 8, 3, 3, 1, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, D},
        {1, 31, 45, 3, 5, 3, 3, 1, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, D}, /* K padded */
        {1, 35, 40, 2, 16, 5, 5, 1, 2, 1, 1, FV_ACT_TANH, 0, 1, D},   /* C 2: 8 read */
        /* pairs: S 1, 2, 4, 7 (steps of 1, 1, 2, 3), stride 3, one row */
        {1, 17, 66, 1, 8, 1, 1, 1, 0, 1, 1, FV_ACT_RELU, 0, 1, D},
        {1, 17, 66, 2, 16, 2, 2, 1, 0, 1, 1, FV_ACT_TANH, 0, 1, D},
        {2, 21, 40, 4, 24, 4, 4, 1, 2, 1, 1, FV_ACT_IDENTITY, 0, 1, D},
        {1, 25, 70, 3, 24, 7, 7, 3, 3, 1, 1, FV_ACT_RELU, 0, 1, D}, /* K 24: not packed */
        {1, 1, 90, 3, 8, 1, 3, 1, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.2f, 1, D},
        {1, 37, 41, 16, 24, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 1, DT},
        {1, 29, 35, 32, 64, 3, 3, 2, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, D},
        {1, 29, 35, 27, 40, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, DT},  /* C 27 -> reads 32 */
        {1, 20, 20, 12, 12, 1, 1, 1, 0, 1, 1, FV_ACT_TANH, 0, 1, D},   /* 1x1 */
        {1, 20, 21, 9, 9, 3, 1, 1, 0, 1, 1, FV_ACT_IDENTITY, 0, 1, D}, /* 3x1, no padding */
        {1, 23, 27, 5, 7, 7, 7, 3, 3, 1, 1, FV_ACT_RELU, 0, 1, DT},    /* stride 3 */
        {1, 9, 200, 8, 16, 3, 5, 1, 0, 1, 1, FV_ACT_RELU, 0, 1, DT},   /* wide, short */
        {1, 1, 1, 8, 8, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 1, D},   /* one pixel */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double e = run_case(&cases[i], 1);
        if (!(e <= 2e-3)) fail_msg("direct case %zu: relative L2 error %.3e > 2e-3", i, e);
        /* C <= 4 where two rows a warp run (stride 1, 3x3 or 5x5, K <= 32):
         * packed taps first (C of 1, 3 or 4), else 8 channels a pixel; where
         * packed taps run one row a warp, they; else 4: in pairs of pixels
         * with an odd horizontal stride */
        const conv_case *cc = &cases[i];
        int two = cc->stride == 1 && cc->r == cc->s && (cc->r == 3 || cc->r == 5) && cc->k <= 32;
        if (cc->flags == D && cc->c <= 4 && cc->c != 2 && two) {
            assert_non_null(strstr(last_info.layout, "packed"));
            assert_non_null(strstr(last_info.engine, "-2w-packed"));
        } else if (cc->flags == D && packed_first_case(cc)) {
            assert_non_null(strstr(last_info.layout, "packed"));
            assert_non_null(strstr(last_info.engine, "rows-persistent-packed"));
        } else if (cc->flags == D && cc->c <= 4 && two) {
            assert_non_null(strstr(last_info.layout, "read as 8"));
        } else if (cc->flags == D && cc->c <= 4) {
            assert_non_null(strstr(last_info.layout, "read as 4"));
            assert_true(!strstr(last_info.layout, "in pairs") == !(cc->stride % 2));
        }
    }
}

/* Creates the file named by template (ending in XXXXXX, replaced) for a
 * profile; the caller removes it. */
static void make_temp_file(char *template) {
    int fd = mkstemp(template);
    assert_true(fd >= 0);
    close(fd);
}

/* The file at path, NUL-terminated (free it); *len: its length. Profiles
 * with cached plans run to MBs. */
static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    char *t = malloc((size_t)n + 1);
    assert_non_null(t);
    assert_int_equal(fread(t, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    t[n] = 0;
    if (len) *len = (size_t)n;
    return t;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* Cases the two-rows-a-warp kernels also run into an output slice (K a
 * multiple of 8, as slices of FP16 outputs need). */
static int two_rows_slice_case(const conv_case *cc) {
    return (cc->c == 8 && cc->k <= 32 && cc->k % 8 == 0) ||
           ((cc->c == 16 || cc->c == 32) && (cc->k == 16 || cc->k == 32));
}

/* The profile text with every direct entry's engine number set to engine
 * into edited (room for 2 more bytes a line). */
static void set_direct_engines(const char *text, char *edited, const char *engine) {
    char *o = edited;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line + 1) : strlen(line);
        const char *eng = strstr(line, " engine=");
        if (strstr(line, "path=direct") && eng && eng < line + n) {
            const char *after = strchr(eng + 8, ' ');
            o += sprintf(o, "%.*s engine=%s", (int)(eng - line), line, engine);
            memcpy(o, after, (size_t)(line + n - after));
            o += line + n - after;
        } else {
            memcpy(o, line, n);
            o += n;
        }
        line += n;
    }
    *o = 0;
}

/* Saves the tests' context's profile to path: *text gets its text, *edited
 * room for set_direct_engines' edit of it (engine numbers grow by 2 bytes
 * at most). The caller frees both. */
static void save_profile_text(const char *path, char **text, char **edited) {
    FV_ASSERT_OK(fv_context_profile_save(gpu, path));
    size_t len = 0;
    *text = read_text(path, &len);
    *edited = malloc(2 * len + 1);
    assert_non_null(*edited);
}

/* Makes a new CUDA context on the profile at path the tests' `gpu`; returns
 * the one it replaced, for pop_profile_context. */
static fv_context *push_profile_context(const char *path) {
    fv_context *ctx = NULL, *saved = gpu;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA, .profile_path = path};
    FV_ASSERT_OK(fv_context_create(&cd, &ctx));
    gpu = ctx;
    return saved;
}
static void pop_profile_context(fv_context *saved) {
    fv_context_destroy(gpu);
    gpu = saved;
}

/* Whether two rows a warp run case cc (a 3x3 or 5x5 of the variants test,
 * stride 1): 8 channels and K <= 32; wide pixels (16, 32 channels) with K
 * of 16 or 32 in persistent blocks only. */
static int two_rows_case(const conv_case *cc, int persistent) {
    const int kp = (cc->k + 7) / 8 * 8;
    if (cc->stride == 2) /* 4 or 8 channels read, 3x3, 5x5, 9x9, persistent */
        return persistent && cc->c <= 8 && cc->r == cc->s &&
               (cc->r == 3 || cc->r == 5 || cc->r == 9) && (kp == 8 || kp == 16 || kp == 32);
    return cc->stride == 1 &&
           ((cc->c == 8 && cc->k <= 32) ||
            (persistent && (cc->c == 16 || cc->c == 32) && (cc->k == 16 || cc->k == 32)));
}

/* Block geometries of the direct kernel (4, 8, 16 rows a block; a block a
 * tile or persistent; one or two rows a warp) through profile entries
 * naming them: the profile's
 * "direct" lines load and run. On 4 channels a pixel (in pairs, stride 2),
 * 8, and the wide pixels of 16 and 32. */
static void direct_kernel_variants_from_profile(void **state) {
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(4242);
    const conv_case cases[] = {
        {1, 45, 70, 3, 16, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 1, FV_CONV2D_DIRECT},
        {1, 33, 65, 4, 32, 9, 9, 2, 4, 1, 1, FV_ACT_TANH, 0, 1, FV_CONV2D_DIRECT},
        {1, 45, 70, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, FV_CONV2D_DIRECT},
        {1, 30, 50, 16, 24, 3, 3, 1, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, FV_CONV2D_DIRECT},
        /* the fixed-geometry kernels (a block a tile: -16rows, -4rows, and
         * two rows a warp): 3x3 and 5x5 on 8, 16 and 32 channels, K 8..64 */
        {1, 45, 70, 8, 8, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 1, FV_CONV2D_DIRECT},
        {1, 38, 67, 16, 16, 5, 5, 1, 2, 1, 1, FV_ACT_TANH, 0, 1, FV_CONV2D_DIRECT},
        {1, 45, 70, 8, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 1, FV_CONV2D_DIRECT},
        {1, 30, 50, 16, 64, 5, 5, 1, 2, 1, 1, FV_ACT_SIGMOID, 0, 1, FV_CONV2D_DIRECT},
        {1, 30, 50, 8, 16, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 0, FV_CONV2D_DIRECT},
        /* K 12 stored as 16: sigmoid's padding lanes must come out 0 */
        {2, 37, 61, 8, 12, 5, 5, 1, 2, 1, 1, FV_ACT_SIGMOID, 0, 1, FV_CONV2D_DIRECT},
        /* two rows a warp at stride 2 (persistent): 8 channels read, 3x3
         * and 9x9; 4 read (C 4 and, through the 4-channel form, C 3) */
        {1, 37, 66, 8, 16, 3, 3, 2, 1, 1, 1, FV_ACT_RELU, 0, 1, FV_CONV2D_DIRECT},
        {1, 40, 70, 8, 8, 9, 9, 2, 4, 1, 1, FV_ACT_IDENTITY, 0, 1, FV_CONV2D_DIRECT},
        {2, 29, 47, 4, 32, 5, 5, 2, 2, 1, 1, FV_ACT_TANH, 0, 1, FV_CONV2D_DIRECT},
        {1, 31, 52, 3, 32, 3, 3, 2, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, FV_CONV2D_DIRECT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_true(run_case(&cases[i], 1) <= 2e-3);
        if (!two_rows_slice_case(&cases[i])) continue;
        g_slice = 1; /* an op into a channel slice has its own profile entry */
        assert_true(run_case(&cases[i], 1) <= 2e-3);
        g_slice = 0;
    }
    char *text = NULL, *edited = NULL;
    save_profile_text(path, &text, &edited);
    /* engine numbers: rows a block, + 100 when persistent, + 200 with two
     * rows a warp (3x3 and 5x5: 8 channels and K <= 32; wide pixels with K
     * 16 or 32 persistent; at stride 2, 3x3, 5x5 and 9x9 on 4 or 8 channels
     * read, persistent; 12 rows: two rows a warp only) */
    const char *rows[] = {"16", "4", "108", "116", "216", "208", "204", "316", "308", "304", "312"};
    const char *names[] = {"-16rows",
                           "-4rows",
                           "-8rows-persistent",
                           "-16rows-persistent",
                           "-16rows-2w",
                           "-8rows-2w",
                           "-4rows-2w",
                           "-16rows-persistent-2w",
                           "-8rows-persistent-2w",
                           "-4rows-persistent-2w",
                           "-12rows-persistent-2w"};
    for (int v = 0; v < 11; v++) {
        set_direct_engines(text, edited, rows[v]);
        write_text(path, edited);
        fv_context *saved = push_profile_context(path);
        const char *why = NULL;
        int entries = 0;
        fv_context_profile_status(gpu, &why, &entries);
        assert_string_equal(why, "");
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (v >= 4 && !two_rows_case(&cases[i], v >= 7)) continue;
            conv_case cc = cases[i];
            cc.flags = 0; /* the profile decides */
            double e = run_case(&cc, 1);
            char want[32];
            snprintf(want, sizeof want, "%s", names[v]);
            assert_non_null(strstr(last_info.engine, want));
            assert_non_null(strstr(last_info.choice, "profile"));
            if (!(e <= 2e-3)) fail_msg("engine %s, case %zu: error %.3e", rows[v], i, e);
            if (v < 4 || !two_rows_slice_case(&cases[i])) continue;
            /* two rows a warp store from registers: into a channel slice too
             * (a wider pixel stride; the other channels must stay) */
            g_slice = 1;
            e = run_case(&cc, 1);
            g_slice = 0;
            assert_non_null(strstr(last_info.engine, want));
            assert_non_null(strstr(last_info.choice, "profile"));
            if (!(e <= 2e-3)) fail_msg("engine %s, case %zu, slice: error %.3e", rows[v], i, e);
        }
        pop_profile_context(saved);
    }
    free(text);
    free(edited);
    remove(path);
}

/* The output halves of case cc on `gpu` for inputs x, w, b (FP16 values),
 * into out (nout halves; poisoned first); the op's engine into engine. */
static void gpu_halves(const conv_case *cc, const float *x, const float *w, const float *b,
                       fv_half *out, size_t nout, char engine[64]) {
    fv_conv2d_desc gd = desc_of(cc, FV_DTYPE_F16, w, b);
    fv_conv2d *op = NULL;
    FV_ASSERT_OK(fv_conv2d_create(gpu, &gd, &op));
    int on, oh, ow, oc;
    fv_conv2d_output_shape(op, &on, &oh, &ow, &oc);
    assert_int_equal((size_t)on * oh * ow * oc, nout);
    const size_t nin = (size_t)cc->n * cc->h * cc->w * cc->c;
    fv_half *xh = malloc(nin * sizeof *xh);
    assert_non_null(xh);
    fv_f32_to_f16_n(x, xh, nin);
    fv_tensor *gx = make(gpu, FV_DTYPE_F16, cc->n, cc->h, cc->w, cc->c);
    fv_tensor *gy = make(gpu, FV_DTYPE_F16, on, oh, ow, oc);
    FV_ASSERT_OK(fv_tensor_upload(gpu, gx, xh, nin * sizeof *xh));
    for (size_t i = 0; i < nout; i++)
        out[i] = 0x7e00; /* NaN: every output must be written */
    FV_ASSERT_OK(fv_tensor_upload(gpu, gy, out, nout * sizeof *out));
    FV_ASSERT_OK(fv_conv2d_forward(op, gx, gy));
    FV_ASSERT_OK(fv_tensor_download(gpu, gy, out, nout * sizeof *out));
    FV_ASSERT_OK(fv_context_synchronize(gpu));
    fv_conv2d_info info;
    FV_ASSERT_OK(fv_conv2d_info_get(op, &info));
    assert_string_equal(info.path, "direct");
    snprintf(engine, 64, "%s", info.engine);
    fv_tensor_destroy(gx), fv_tensor_destroy(gy);
    fv_conv2d_destroy(op);
    free(xh);
}

/* Case cc's output halves for one draw of random inputs, once with the
 * environment variable var at each of vals[0 .. nv - 1] (NULL: unset; var
 * is left unset after), each compared half for half with the first; the
 * engines into eng. what names the case in a failure. */
static void same_halves_under(const conv_case *cc, const char *var, const char *const *vals, int nv,
                              char (*eng)[64], const char *what) {
    const int p = cc->h + 2 * cc->pad - cc->r + 1, q = cc->w + 2 * cc->pad - cc->s + 1;
    const size_t nin = (size_t)cc->n * cc->h * cc->w * cc->c,
                 nw = (size_t)cc->k * cc->c * cc->r * cc->s, nout = (size_t)cc->n * p * q * cc->k;
    float *x = malloc(nin * sizeof *x), *w = malloc(nw * sizeof *w), b[64];
    fv_half *got[4] = {NULL, NULL, NULL, NULL};
    assert_true(nv >= 1 && nv <= 4 && cc->k <= 64 && x && w);
    for (int m = 0; m < nv; m++)
        assert_non_null(got[m] = malloc(nout * sizeof *got[m]));
    fv_test_fill_uniform(x, nin, -1, 1);
    fv_test_fill_uniform(w, nw, -0.5f, 0.5f);
    fv_test_fill_uniform(b, 64, -0.5f, 0.5f);
    for (int m = 0; m < nv; m++) {
        assert_int_equal(vals[m] ? setenv(var, vals[m], 1) : unsetenv(var), 0);
        gpu_halves(cc, x, w, b, got[m], nout, eng[m]);
    }
    assert_int_equal(unsetenv(var), 0);
    for (int m = 1; m < nv; m++)
        for (size_t j = 0; j < nout; j++)
            if (got[m][j] != got[0][j])
                fail_msg("%s: half %zu of %zu: 0x%04x with %s %s, 0x%04x with %s %s", what, j, nout,
                         got[0][j], var, vals[0] ? vals[0] : "unset", got[m][j], var,
                         vals[m] ? vals[m] : "unset");
    free(x), free(w);
    for (int m = 0; m < nv; m++)
        free(got[m]);
}

/* The 8-channel two-rows kernels' windows by Hopper's tensor memory
 * accelerator (SM 9.0+: engine names end in "-tma") give the bytes of the
 * cp.async window (FV_CONV_NO_TMA=1), in every block geometry (16, 12, 8, 4
 * rows, persistent, through profile entries), K 8, 16 and 32 (28 stored as
 * 32), 3x3 and 5x5, partial tiles at the
 * right and bottom edges, frames narrower than a tile and shorter than a
 * block's rows, a batch of 2; and match the CPU reference. Below SM 9.0
 * both runs take the cp.async window. */
static void direct_tma_window_gives_the_same_bytes(void **state) {
    (void)state;
    fv_context_info ci;
    FV_ASSERT_OK(fv_context_info_get(gpu, &ci));
    const int hopper = ci.sm_major >= 9;
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(9090);
    const conv_case cases[] = {
        {2, 45, 70, 8, 8, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, FV_CONV2D_DIRECT},
        {1, 38, 67, 8, 8, 5, 5, 1, 2, 1, 1, FV_ACT_IDENTITY, 0, 1, FV_CONV2D_DIRECT},
        {2, 7, 20, 8, 6, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 0, FV_CONV2D_DIRECT},
        {1, 67, 129, 5, 8, 5, 5, 1, 2, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, FV_CONV2D_DIRECT},
        {1, 45, 70, 8, 16, 3, 3, 1, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, FV_CONV2D_DIRECT},
        {2, 29, 47, 8, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 1, FV_CONV2D_DIRECT},
        {1, 21, 40, 6, 28, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 0, FV_CONV2D_DIRECT},
    };
    const size_t nc = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < nc; i++) /* against the CPU; the profile's entries */
        assert_true(run_case(&cases[i], 1) <= 2e-3);
    char *text = NULL, *edited = NULL;
    save_profile_text(path, &text, &edited);
    const char *variants[] = {"316", "312", "308", "304"};
    for (int v = 0; v < 4; v++) {
        set_direct_engines(text, edited, variants[v]);
        write_text(path, edited);
        fv_context *saved = push_profile_context(path);
        for (size_t i = 0; i < nc; i++) {
            conv_case cc = cases[i];
            cc.flags = 0;                     /* the profile decides */
            const char *vals[] = {NULL, "1"}; /* TMA, then none */
            char eng[2][64], what[64];
            snprintf(what, sizeof what, "engine %s, case %zu", variants[v], i);
            same_halves_under(&cc, "FV_CONV_NO_TMA", vals, 2, eng, what);
            const size_t el = strlen(eng[0]);
            const int tma = el > 4 && strcmp(eng[0] + el - 4, "-tma") == 0;
            printf("  %dx%dx%dx%d k%d %dx%d, engine %s: %s and %s\n", cc.n, cc.h, cc.w, cc.c, cc.k,
                   cc.r, cc.s, variants[v], eng[0], eng[1]);
            assert_int_equal(tma, hopper);
            assert_null(strstr(eng[1], "-tma"));
        }
        pop_profile_context(saved);
    }
    free(text);
    free(edited);
    remove(path);
}

/* Hopper's warpgroup-MMA kernel (engines 804, 808, 816: the rows form,
 * tiles of 4, 8 or 16 output rows x 64 columns; 908, 916: pixels along N,
 * warp-specialized, segments of 8 or 16 output rows x 128 pixels; 958,
 * 966: the same with taps in pairs across rows, K 32 only; 902: the same
 * for 32 input channels, segments of 2 rows; through profile entries)
 * matches the CPU reference: K 8, 16 and 32 (6 as 8, 28 as 32), C of 8 and
 * fewer (stored as 8) and 32 (902), 3x3 and 5x5 with their paddings and
 * none, every activation, partial tiles at the right and bottom edges,
 * frames narrower than a tile and shorter than its rows, batches of 2, and
 * of 200 and 500 small frames (more tiles than blocks: each persistent
 * block walks several, its window buffers' mbarriers through several
 * phases), dense outputs and channel slices. On SM 9.0 every op takes it
 * (engine "fovea-wgmma-..."); elsewhere the profile's entry is refused and
 * the op takes another engine. */
static void direct_wgmma_matches_cpu_reference(void **state) {
    (void)state;
    fv_context_info ci;
    FV_ASSERT_OK(fv_context_info_get(gpu, &ci));
    const int sm90 = ci.sm_major == 9 && ci.sm_minor == 0;
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(8080);
    const uint32_t D = FV_CONV2D_DIRECT;
    const conv_case cases[] = {
        {2, 45, 70, 8, 8, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, D},
        {1, 38, 129, 8, 8, 5, 5, 1, 2, 1, 1, FV_ACT_IDENTITY, 0, 1, D},
        {2, 7, 20, 8, 6, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 0, D},
        {1, 67, 200, 5, 8, 5, 5, 1, 2, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, D},
        {1, 45, 70, 8, 16, 3, 3, 1, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, D},
        {2, 29, 47, 8, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 1, D},
        {1, 21, 140, 6, 28, 3, 3, 1, 1, 1, 1, FV_ACT_CLIPPED_RELU, 6.0f, 1, D},
        {1, 33, 64, 8, 16, 5, 5, 1, 0, 1, 1, FV_ACT_IDENTITY, 0, 1, D},
        {1, 16, 96, 8, 32, 3, 3, 1, 0, 1, 1, FV_ACT_TANH, 0, 0, D},
        {200, 6, 320, 8, 8, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, D},
        {500, 4, 64, 8, 32, 5, 5, 1, 2, 1, 1, FV_ACT_IDENTITY, 0, 1, D},
    };
    /* 32 channels (engine 902): partial strips and segments, no padding,
     * 300 frames of two segments (the four buffers' phases cycle) */
    const conv_case cases32[] = {
        {2, 45, 300, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, D},
        {1, 21, 140, 32, 28, 3, 3, 1, 0, 1, 1, FV_ACT_SIGMOID, 0, 1, D},
        {300, 3, 64, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 0, D},
        {1, 8, 129, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, D},
    };
    const size_t nc8 = sizeof cases / sizeof cases[0], nc32 = sizeof cases32 / sizeof cases32[0];
    for (int slice = 0; slice < 2; slice++) { /* the profile's entries */
        g_slice = slice;
        for (size_t i = 0; i < nc8 + nc32; i++) {
            const conv_case *cc = i < nc8 ? &cases[i] : &cases32[i - nc8];
            if (!slice || cc->k % 8 == 0) /* a slice's K: a multiple of 8 */
                assert_true(run_case(cc, 0) <= 2e-3);
        }
    }
    g_slice = 0;
    char *text = NULL, *edited = NULL;
    save_profile_text(path, &text, &edited);
    const char *variants[] = {"808", "816", "804", "916", "908", "958", "966", "902"};
    for (int v = 0; v < 8; v++) {
        set_direct_engines(text, edited, variants[v]);
        write_text(path, edited);
        fv_context *saved = push_profile_context(path);
        const int c32 = strcmp(variants[v], "902") == 0, paired = atoi(variants[v]) >= 950;
        const size_t nc = c32 ? nc32 : nc8;
        for (int slice = 0; slice < 2; slice++) {
            g_slice = slice;
            for (size_t i = 0; i < nc; i++) {
                conv_case cc = c32 ? cases32[i] : cases[i];
                if ((slice && cc.k % 8) || (paired && (cc.k + 7) / 8 != 4)) continue;
                cc.flags = 0; /* the profile decides */
                const double err = run_case(&cc, 0);
                printf("  %dx%dx%dx%d k%d %dx%d pad %d, engine %s%s: %s, rel err %.2e\n", cc.n,
                       cc.h, cc.w, cc.c, cc.k, cc.r, cc.s, cc.pad, variants[v],
                       slice ? " (slice)" : "", last_info.engine, err);
                assert_true(err <= 2e-3);
                const int wg = strncmp(last_info.engine, "fovea-wgmma-", 12) == 0;
                assert_int_equal(wg, sm90);
                if (sm90) assert_int_equal(strstr(last_info.engine, "-paired") != NULL, paired);
            }
        }
        g_slice = 0;
        pop_profile_context(saved);
    }
    free(text);
    free(edited);
    remove(path);
}

/* The pixels-along-N kernels (908, 916; 958, 966 paired at K 32) split the
 * last round's segments into pieces of one step each where that evens out
 * the blocks' shares; FV_CONV_PX_SPLIT=2 splits them whenever a segment has
 * more than one step, =0 never. Each step's staged tile goes out as one
 * TMA box (swizzled staging), or with FV_CONV_PX_TMA_STORE=0 by the
 * consumers' own stores. The same MMAs in the same order: the same bytes
 * every way, and the CPU's answer, into whole outputs and channel slices:
 * K 8 (16-row segments: two steps), 16 and 32, 3x3 and 5x5, pieces past
 * the frame's last row, partial strips, more segments than blocks (a
 * remainder of 72 and of 104 on 132 SMs), a batch of 2. */
static void px_knobs_give_the_same_bytes(void **state) {
    (void)state;
    fv_context_info ci;
    FV_ASSERT_OK(fv_context_info_get(gpu, &ci));
    if (!(ci.sm_major == 9 && ci.sm_minor == 0)) skip(); /* no such kernel runs there */
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(7171);
    const uint32_t D = FV_CONV2D_DIRECT;
    const conv_case cases[] = {
        {2, 45, 70, 8, 8, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, D},
        {1, 67, 200, 5, 16, 5, 5, 1, 2, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, D},
        {2, 29, 47, 8, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 1, D},
        {1, 21, 140, 6, 28, 3, 3, 1, 1, 1, 1, FV_ACT_CLIPPED_RELU, 6.0f, 1, D},
        {200, 6, 320, 8, 8, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, D},
        {500, 4, 64, 8, 32, 5, 5, 1, 2, 1, 1, FV_ACT_IDENTITY, 0, 1, D},
    };
    const size_t nc = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < nc; i++) /* the profile's entries */
        assert_true(run_case(&cases[i], 0) <= 2e-3);
    char *text = NULL, *edited = NULL;
    save_profile_text(path, &text, &edited);
    const char *variants[] = {"916", "908", "958", "966"};
    for (int v = 0; v < 4; v++) {
        set_direct_engines(text, edited, variants[v]);
        write_text(path, edited);
        fv_context *saved = push_profile_context(path);
        const int paired = atoi(variants[v]) >= 950;
        for (size_t i = 0; i < nc; i++) {
            conv_case cc = cases[i];
            if (paired && (cc.k + 7) / 8 != 4) continue;
            cc.flags = 0; /* the profile decides */
            assert_int_equal(setenv("FV_CONV_PX_SPLIT", "2", 1), 0);
            const double err = run_case(&cc, 0);
            const char *vals[] = {"2", "0", NULL}; /* split, whole segments, the default */
            char eng[3][64], what[64];
            snprintf(what, sizeof what, "engine %s, case %zu", variants[v], i);
            same_halves_under(&cc, "FV_CONV_PX_SPLIT", vals, 3, eng, what);
            printf("  %dx%dx%dx%d k%d %dx%d, engine %s: %s, rel err %.2e (split)\n", cc.n, cc.h,
                   cc.w, cc.c, cc.k, cc.r, cc.s, variants[v], eng[0], err);
            assert_true(err <= 2e-3);
            for (int m = 0; m < 3; m++)
                assert_non_null(strstr(eng[m], "fovea-wgmma-px-"));
            /* the staged tiles by TMA (the default) and by the consumers'
             * stores: against the CPU (whole and slices), and the bytes */
            const char *tvals[] = {NULL, "0"};
            for (int t = 0; t < 2; t++)
                for (int slice = 0; slice < 2; slice++) {
                    assert_int_equal(t ? setenv("FV_CONV_PX_TMA_STORE", tvals[t], 1)
                                       : unsetenv("FV_CONV_PX_TMA_STORE"),
                                     0);
                    g_slice = slice;
                    if (slice && cc.k % 8) continue; /* a slice's K: a multiple of 8 */
                    const double e = run_case(&cc, 0);
                    printf("    %s%s: %s, rel err %.2e\n", t ? "own stores" : "TMA store",
                           slice ? " (slice)" : "", last_info.engine, e);
                    assert_true(e <= 2e-3);
                }
            g_slice = 0;
            same_halves_under(&cc, "FV_CONV_PX_TMA_STORE", tvals, 2, eng, what);
        }
        pop_profile_context(saved);
    }
    free(text);
    free(edited);
    remove(path);
}

/* Packed taps in each of their block geometries through profile entries
 * naming them, into whole outputs and channel slices, partial tiles, a
 * batch of 2: two rows a warp (C of 1, 3 or 4; 3x3 and 5x5 at stride 1; K
 * 8, 12 as 16, 16, 32; 4, 8, 12, 16 rows, persistent: engines 704-716) and
 * one (C of 3 or 4; 3x3 to 9x9, strides 1-4, K up to 64; 4 or 8 rows,
 * persistent: 504, 508). */
static void direct_kernel_packed_taps_variants(void **state) {
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(5150);
    const uint32_t D = FV_CONV2D_DIRECT;
    const conv_case cases[] = {
        {1, 45, 70, 3, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 1, D},
        {2, 37, 61, 3, 12, 3, 3, 1, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, D},
        {1, 30, 50, 1, 8, 5, 5, 1, 2, 1, 1, FV_ACT_IDENTITY, 0, 0, D},
        {1, 33, 65, 1, 16, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 1, D},
        {1, 29, 41, 4, 16, 5, 5, 1, 2, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, D},
        {1, 19, 97, 4, 32, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, D},
        {1, 40, 64, 3, 8, 5, 5, 1, 0, 1, 1, FV_ACT_CLIPPED_RELU, 0.5f, 1, D}, /* no padding */
        /* one row a warp only: stems (7x7 s2 K 64, 3x3 s2), 9x9 s2 on 4
         * channels, strides 3 and 4, 7x7 at stride 1 */
        {1, 45, 70, 3, 64, 7, 7, 2, 3, 1, 1, FV_ACT_RELU, 0, 1, D},
        {2, 37, 61, 3, 32, 3, 3, 2, 1, 1, 1, FV_ACT_RELU, 0, 1, D},
        {1, 33, 65, 4, 32, 9, 9, 2, 4, 1, 1, FV_ACT_IDENTITY, 0, 0, D},
        {1, 29, 50, 4, 16, 5, 5, 3, 2, 1, 1, FV_ACT_TANH, 0, 1, D},
        {1, 30, 41, 3, 12, 7, 7, 1, 3, 1, 1, FV_ACT_SIGMOID, 0, 1, D},
        {1, 26, 47, 4, 64, 3, 3, 4, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, D},
        {1, 21, 75, 3, 48, 9, 9, 1, 4, 1, 1, FV_ACT_RELU, 0, 1, D}, /* 9x9 on RGB: not packed */
    };
    enum { NCASES = sizeof cases / sizeof cases[0] };
    const conv_case c2 = {1, 35, 40, 2, 16, 5, 5, 1, 2, 1, 1, FV_ACT_TANH, 0, 1, D};
    assert_true(run_case(&c2, 1) <= 2e-3); /* its own entry, reading 8 channels */
    assert_null(strstr(last_info.engine, "-packed"));
    for (size_t i = 0; i < NCASES; i++) {
        double e = run_case(&cases[i], 1);
        if (!(e <= 2e-3)) fail_msg("packed case %zu: error %.3e", i, e);
        assert_true(!strstr(last_info.engine, "-packed") == !packed_first_case(&cases[i]));
        if (cases[i].k % 8) continue;
        g_slice = 1; /* an op into a channel slice has its own profile entry */
        assert_true(run_case(&cases[i], 1) <= 2e-3);
        g_slice = 0;
    }
    char *text = NULL, *edited = NULL;
    save_profile_text(path, &text, &edited);
    const char *engines[] = {"704", "708", "712", "716", "504", "508"};
    const char *names[] = {"-4rows-persistent-2w-packed",  "-8rows-persistent-2w-packed",
                           "-12rows-persistent-2w-packed", "-16rows-persistent-2w-packed",
                           "-4rows-persistent-packed",     "-8rows-persistent-packed"};
    for (int v = 0; v < 6; v++) {
        set_direct_engines(text, edited, engines[v]);
        write_text(path, edited);
        fv_context *saved = push_profile_context(path);
        for (size_t i = 0; i < NCASES; i++)
            for (int slice = 0; (v < 4 ? packed_two_case(&cases[i]) : packed_one_case(&cases[i])) &&
                                slice < 2 - (cases[i].k % 8 != 0);
                 slice++) {
                conv_case cc = cases[i];
                cc.flags = 0; /* the profile decides */
                g_slice = slice;
                double e = run_case(&cc, 1);
                g_slice = 0;
                assert_non_null(strstr(last_info.engine, names[v]));
                assert_non_null(strstr(last_info.choice, "profile"));
                if (!(e <= 2e-3))
                    fail_msg("engine %s, case %zu%s: error %.3e", engines[v], i,
                             slice ? ", slice" : "", e);
            }
        pop_profile_context(saved);
    }
    /* refused, and the op chooses anew: a two-rows engine without packed
     * taps on an op with them (case 0, C 3), a packed one on an op without
     * (C 2: 8 channels read), two rows a warp where only one runs (the 7x7
     * s2 stem), one row a warp on C 1 */
    const struct {
        const char *engine;
        conv_case cc;
        int packed; /* what the new choice is */
    } wrong[] = {{"316", cases[0], 1},
                 {"708", c2, 0},
                 {"504", c2, 0},
                 {"708", cases[7], 1},
                 {"508", cases[3], 1}};
    for (size_t v = 0; v < sizeof wrong / sizeof wrong[0]; v++) {
        set_direct_engines(text, edited, wrong[v].engine);
        write_text(path, edited);
        fv_context *saved = push_profile_context(path);
        conv_case cc = wrong[v].cc;
        cc.flags = 0;
        assert_true(run_case(&cc, 1) <= 2e-3);
        assert_null(strstr(last_info.choice, "profile"));
        assert_true(!strstr(last_info.engine, "-packed") == !wrong[v].packed);
        pop_profile_context(saved);
    }
    free(text);
    free(edited);
    remove(path);
}

/* Rewrites every conv line of the profile at path to path=<to> engine=<eng>
 * knobs=- on the dense form (cdecl = C padded to 8); returns how many lines
 * it rewrote. Entries of other tests' ops may then not build (they are not
 * run with this profile). */
static int rewrite_conv_lines(const char *path, const char *to, const char *eng) {
    size_t len = 0;
    char *text = read_text(path, &len);
    /* a conv line grows by the path and engine names at most */
    char *edited = malloc(len + (len / 16 + 1) * (strlen(to) + strlen(eng) + 16) + 1);
    assert_non_null(edited);
    char *o = edited;
    int rewritten = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line + 1) : strlen(line);
        const char *key = line + 5, *cp = strstr(line, ":c"), *fields = strstr(line, " path=");
        if (strncmp(line, "conv ", 5) == 0 && cp && fields && cp < fields) {
            const char *ws = strstr(fields, " ws="), *kn = strstr(fields, " knobs=");
            assert_true(ws && kn && kn < line + n && ws < kn);
            int c = atoi(cp + 2);
            o += sprintf(o, "conv %.*s path=%s cdecl=%d engine=%s", (int)(fields - key), key, to,
                         (c + 7) / 8 * 8, eng);
            o += sprintf(o, "%.*s knobs=-\n", (int)(kn - ws), ws);
            rewritten++;
        } else {
            memcpy(o, line, n);
            o += n;
        }
        line += n;
    }
    *o = 0;
    write_text(path, edited);
    free(text);
    free(edited);
    return rewritten;
}

/* fovea's split-reduction GEMM: the heuristics pick it for small outputs
 * with a long reduction (cases 0 and 4); then each tile width and split
 * count (1, odd, many) through profile entries naming it, on every case.
 * Partial tiles along M and N, C not a multiple of 32, dilation, stride,
 * batches, every activation. */
static void gemm_kernel_variants_from_profile(void **state) {
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(5150);
    const conv_case cases[] = {
        {1, 16, 16, 128, 256, 7, 7, 2, 3, 1, 1, FV_ACT_RELU, 0, 1, 0},
        {1, 13, 11, 40, 20, 3, 3, 1, 2, 2, 1, FV_ACT_SIGMOID, 0, 1, 0},
        {2, 9, 9, 64, 64, 3, 3, 2, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, 0},
        {1, 10, 12, 96, 72, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 0, 0},
        {1, 8, 8, 256, 40, 5, 5, 1, 2, 1, 1, FV_ACT_CLIPPED_RELU, 6.0f, 1, 0},
        {1, 12, 9, 64, 16, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 1, 0},
    };
    enum { NCASES = sizeof cases / sizeof cases[0] };
    for (size_t i = 0; i < NCASES; i++) {
        conv_case cc = cases[i];
        cc.flags = FV_CONV2D_NO_PROFILE; /* other tests' entries may name these ops */
        double e = run_case(&cc, 1);
        if ((i == 0 || i == 4) && strcmp(last_info.path, "gemm") != 0)
            fail_msg("case %zu: heuristics chose %s %s, not fovea's gemm", i, last_info.path,
                     last_info.engine);
        if (!(e <= 2e-3)) fail_msg("case %zu: error %.3e", i, e);
    }
    FV_ASSERT_OK(fv_context_profile_save(gpu, path));
    /* engine = channels a block x 100 + splits; every case has >= 18 steps */
    const char *engines[] = {"3201", "6401", "3203", "6416", "3218"};
    const char *names[] = {"-64x32-split1", "-64x64-split1", "-64x32-split3", "-64x64-split16",
                           "-64x32-split18"};
    for (int v = 0; v < 5; v++) {
        assert_true(rewrite_conv_lines(path, "gemm", engines[v]) >= NCASES);
        fv_context *ctx2 = NULL, *saved = gpu;
        fv_context_desc cd = {.backend = FV_BACKEND_CUDA, .profile_path = path};
        FV_ASSERT_OK(fv_context_create(&cd, &ctx2));
        const char *why = NULL;
        int entries = 0;
        fv_context_profile_status(ctx2, &why, &entries);
        assert_string_equal(why, "");
        gpu = ctx2;
        for (size_t i = 0; i < NCASES; i++) {
            double e = run_case(&cases[i], 1);
            if (!strstr(last_info.engine, names[v]) || !strstr(last_info.choice, "profile") ||
                !last_info.fused || !last_info.tensor_cores)
                fail_msg("engine %s, case %zu: ran %s (%s)", engines[v], i, last_info.engine,
                         last_info.choice);
            if (!(e <= 2e-3)) fail_msg("engine %s, case %zu: error %.3e", engines[v], i, e);
        }
        gpu = saved;
        fv_context_destroy(ctx2);
    }
    /* a split count past the reduction's steps no longer builds: the op
     * falls back to choosing anew, with a warning, and still runs */
    assert_true(rewrite_conv_lines(path, "gemm", "3264") >= NCASES);
    fv_context *ctx2 = NULL, *saved = gpu;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA, .profile_path = path};
    FV_ASSERT_OK(fv_context_create(&cd, &ctx2));
    gpu = ctx2;
    double e = run_case(&cases[1], 1); /* 18 steps */
    assert_null(strstr(last_info.choice, "profile"));
    assert_true(e <= 2e-3);
    gpu = saved;
    fv_context_destroy(ctx2);
    remove(path);
}

/* The GEMM with its reduction split: the same bits on every run (the
 * partials are added in split order), a stream-captured forward replays
 * them, and a forward loop allocates nothing. */
static void gemm_kernel_is_deterministic_and_capturable(void **state) {
    enum { H = 8, W = 8, C = 128, K = 48 };
    static float w[K * C * 25], b[K], x[H * W * C];
    fv_test_seed(99);
    fv_test_fill_uniform(w, sizeof w / sizeof w[0], -0.5f, 0.5f);
    fv_test_fill_uniform(b, K, -0.5f, 0.5f);
    fv_test_fill_uniform(x, H * W * C, -1, 1);
    fv_conv2d_desc d = {.h = H,
                        .w = W,
                        .c = C,
                        .k = K,
                        .r = 5,
                        .s = 5,
                        .pad_h = 2,
                        .pad_w = 2,
                        .activation = FV_ACT_RELU,
                        .weights = w,
                        .bias = b,
                        .flags = FV_CONV2D_NO_PROFILE};
    fv_conv2d *op;
    FV_ASSERT_OK(fv_conv2d_create(gpu, &d, &op));
    fv_conv2d_info info;
    FV_ASSERT_OK(fv_conv2d_info_get(op, &info));
    printf("  %s %s (%s)\n", info.path, info.engine, info.choice);
    assert_string_equal(info.path, "gemm");
    const char *split = strstr(info.engine, "-split");
    assert_true(split && atoi(split + 6) > 1); /* the reduction is split */
    assert_true(info.workspace_bytes > 0);
    fv_tensor *in = make(gpu, FV_DTYPE_F16, 1, H, W, C), *out = make(gpu, FV_DTYPE_F16, 1, H, W, K);
    static fv_half xh[H * W * C], first[H * W * K], again[H * W * K], poison[H * W * K];
    const size_t ybytes = sizeof first;
    fv_f32_to_f16_n(x, xh, H * W * C);
    FV_ASSERT_OK(fv_tensor_upload(gpu, in, xh, sizeof xh));
    FV_ASSERT_OK(fv_conv2d_forward(op, in, out));
    FV_ASSERT_OK(fv_tensor_download(gpu, out, first, ybytes));
    FV_ASSERT_OK(fv_context_synchronize(gpu));
    for (int i = 0; i < (fv_test_quick() ? 3 : 20); i++) {
        FV_ASSERT_OK(fv_tensor_upload(gpu, out, poison, ybytes));
        FV_ASSERT_OK(fv_conv2d_forward(op, in, out));
        FV_ASSERT_OK(fv_tensor_download(gpu, out, again, ybytes));
        FV_ASSERT_OK(fv_context_synchronize(gpu));
        assert_memory_equal(first, again, ybytes);
    }

    cudaStream_t s;
    FV_ASSERT_OK(fv_context_cuda_stream(gpu, &s));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    fv_status fs = fv_conv2d_forward(op, in, out);
    cudaError_t ce = cudaStreamEndCapture(s, &graph);
    FV_ASSERT_OK(fs);
    assert_int_equal(ce, cudaSuccess);
    assert_int_equal(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int i = 0; i < H * W * K; i++)
        poison[i] = 0x7e00;
    for (int rep = 0; rep < 3; rep++) {
        FV_ASSERT_OK(fv_tensor_upload(gpu, out, poison, ybytes));
        assert_int_equal(cudaGraphLaunch(exec, s), cudaSuccess);
        FV_ASSERT_OK(fv_tensor_download(gpu, out, again, ybytes));
        FV_ASSERT_OK(fv_context_synchronize(gpu));
        assert_memory_equal(first, again, ybytes);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);

    fv_pool_stats before, after;
    fv_pool *dev = fv_context_pool(gpu, FV_POOL_DEVICE);
    FV_ASSERT_OK(fv_pool_stats_get(dev, &before));
    for (int i = 0; i < (fv_test_quick() ? 20 : 500); i++)
        FV_ASSERT_OK(fv_conv2d_forward(op, in, out));
    FV_ASSERT_OK(fv_tensor_download(gpu, out, again, ybytes));
    FV_ASSERT_OK(fv_context_synchronize(gpu));
    FV_ASSERT_OK(fv_pool_stats_get(dev, &after));
    assert_int_equal(after.backing_allocs, before.backing_allocs);
    assert_int_equal(after.carve_outs, before.carve_outs);
    assert_memory_equal(first, again, ybytes);
    fv_tensor_destroy(in), fv_tensor_destroy(out);
    fv_conv2d_destroy(op);
}

/* Every legacy-fused entry rebuilds from a profile and matches the CPU:
 * autotuned entries are rewritten to cudnnConvolutionBiasActivationForward
 * with IMPLICIT_PRECOMP_GEMM (algo 1) on C padded to 8, then reloaded. */
static void legacy_fused_from_profile(void **state) {
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(777);
    const uint32_t fl = FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_DIRECT;
    const conv_case cases[] = {
        {1, 40, 56, 3, 16, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, fl},
        {1, 33, 47, 8, 5, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 1, fl}, /* padded lanes */
        {1, 30, 30, 12, 24, 5, 5, 2, 2, 1, 1, FV_ACT_RELU, 0, 1, fl},
        {2, 20, 36, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 0, fl},
    };
    enum { NCASES = sizeof cases / sizeof cases[0] };
    for (size_t i = 0; i < NCASES; i++)
        assert_true(run_case(&cases[i], 1) <= 2e-3);
    FV_ASSERT_OK(fv_context_profile_save(gpu, path));
    /* every conv line: path=legacy-fused cdecl=<C padded to 8> engine=1 */
    int rewritten = rewrite_conv_lines(path, "legacy-fused", "1");
    assert_true(rewritten >= NCASES);
    fv_context *ctx2 = NULL, *saved = gpu;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA, .profile_path = path};
    FV_ASSERT_OK(fv_context_create(&cd, &ctx2));
    const char *why = NULL;
    int entries = 0;
    fv_context_profile_status(ctx2, &why, &entries);
    assert_string_equal(why, "");
    assert_int_equal(entries, rewritten);
    gpu = ctx2;
    for (size_t i = 0; i < NCASES; i++) {
        conv_case cc = cases[i];
        cc.flags = 0; /* the profile decides */
        double e = run_case(&cc, 1);
        if (strcmp(last_info.path, "legacy-fused") != 0)
            fail_msg("case %zu: path %s (%s), not legacy-fused", i, last_info.path,
                     last_info.choice);
        assert_string_equal(last_info.engine, "IMPLICIT_PRECOMP_GEMM");
        assert_non_null(strstr(last_info.choice, "profile"));
        assert_true(last_info.fused);
        if (!(e <= 2e-3)) fail_msg("case %zu: error %.3e", i, e);
    }
    gpu = saved;
    fv_context_destroy(ctx2);
    remove(path);
}

/* The context's profile saved to path with every conv entry naming path
 * `forced` (engine 1), then cases[0..n) run on a new context from it: each
 * within 2e-3 of the CPU; returns how many ran on that path (an entry the
 * path refuses falls back to heuristics). */
static int run_forced(const char *path, const char *forced, const conv_case *cases, size_t n) {
    FV_ASSERT_OK(fv_context_profile_save(gpu, path));
    assert_true(rewrite_conv_lines(path, forced, "1") >= (int)n);
    fv_context *ctx2 = NULL, *saved = gpu;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA, .profile_path = path};
    FV_ASSERT_OK(fv_context_create(&cd, &ctx2));
    gpu = ctx2;
    int ran = 0;
    for (size_t i = 0; i < n; i++) {
        double e = run_case(&cases[i], 1);
        if (!(e <= 2e-3)) fail_msg("%s case %zu: error %.3e", forced, i, e);
        ran += strcmp(last_info.path, forced) == 0;
    }
    gpu = saved;
    fv_context_destroy(ctx2);
    return ran;
}

/* FV_CONV2D_RESIDUAL (act(conv + bias + z)) on every path: by heuristics
 * (fovea's direct kernel for the small one, the GEMM for the small output
 * with a long reduction, cuDNN's fused graph for the rest), cuDNN only,
 * autotuned, and from profile entries naming legacy-fused and legacy (the
 * epilogue kernel adds z). Every activation a convolution runs, padded K
 * lanes, a batch of 2, with and without a bias. */
static void residual_matches_cpu_reference(void **state) {
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(4242);
    const uint32_t R = FV_CONV2D_RESIDUAL;
    const conv_case cases[] = {
        /* n  h   w   c   k  r  s st pad dil g  act                  alpha bias flags */
        {1, 56, 56, 64, 64, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, R},         /* ResNet's layer1 */
        {1, 14, 14, 128, 256, 1, 1, 2, 0, 1, 1, FV_ACT_IDENTITY, 0, 1, R},   /* a downsample */
        {1, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, R},         /* small output */
        {2, 20, 24, 16, 12, 3, 3, 1, 1, 1, 1, FV_ACT_CLIPPED_RELU, 0, 0, R}, /* K padded */
        {1, 30, 40, 3, 16, 3, 3, 1, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, R}, /* direct kernel */
        {1, 16, 16, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, R},
        {1, 16, 16, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 0, R},
        {1, 16, 16, 32, 32, 3, 3, 1, 1, 1, 32, FV_ACT_RELU, 0, 1, R}, /* depthwise */
    };
    enum { NCASES = sizeof cases / sizeof cases[0] };
    /* heuristics, cuDNN only, and autotuning (two cases: it times every
     * candidate with a residual, the slowest part of this suite) */
    const uint32_t passes[3] = {0, FV_CONV2D_NO_DIRECT, FV_CONV2D_AUTOTUNE};
    for (int p = 0; p < 3; p++)
        for (size_t i = 0; i < (p == 2 ? 2 : NCASES); i++) {
            conv_case cc = cases[i + (p == 2 ? 3 : 0)];
            cc.flags |= passes[p];
            double e = run_case(&cc, 1);
            if (!(e <= 2e-3)) fail_msg("pass %d case %zu: error %.3e", p, i, e);
        }
    /* legacy-fused (alpha2 = 1, z) and legacy (+ the epilogue kernel) */
    const char *forced[2] = {"legacy-fused", "legacy"};
    for (int f = 0; f < 2; f++) {
        int ran = run_forced(path, forced[f], cases, NCASES);
        printf("  %d cases ran on path %s\n", ran, forced[f]);
        assert_true(ran >= 3); /* legacy-fused: the ReLU and identity cases */
    }
    remove(path);
}

/* An output written as a channel slice of a wider tensor (a net's concat
 * without a copy) on every path: by heuristics (fovea's direct kernel for
 * few input channels, its GEMM for a small output with a long reduction,
 * cuDNN's fused graph, depthwise and grouped forms), cuDNN only, autotuned
 * (every candidate timed on the slice), and from profile entries naming
 * legacy-fused and legacy (the epilogue kernel), which cuDNN's legacy API
 * may refuse for a strided output (the entry then falls back to
 * heuristics: counted, not required); sigmoid, a batch of 2.
 * Values against the CPU reference; the wider tensor's other channels
 * untouched (run_case). FV_TEST_QUICK: no autotuning. */
static void output_slice_on_every_path(void **state) {
    (void)state;
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(4343);
    const conv_case cases[] = {
        /* n  h   w   c   k  r  s st pad dil g  act                  alpha bias flags */
        {1, 40, 56, 3, 16, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, 0},      /* direct kernel */
        {1, 7, 7, 512, 64, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, 0},      /* small output */
        {2, 32, 32, 32, 64, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 0, 0}, /* a UNet skip */
        {1, 64, 64, 16, 16, 3, 3, 1, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, 0},
        {1, 16, 16, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, 0},
        {1, 16, 16, 32, 32, 3, 3, 2, 1, 1, 32, FV_ACT_RELU, 0, 1, 0}, /* depthwise */
        {1, 16, 16, 32, 64, 1, 1, 1, 0, 1, 4, FV_ACT_TANH, 0, 1, 0},  /* grouped */
    };
    enum { NCASES = sizeof cases / sizeof cases[0] };
    g_slice = 1;
    const uint32_t passes[3] = {0, FV_CONV2D_NO_DIRECT, FV_CONV2D_AUTOTUNE};
    for (int p = 0; p < (fv_test_quick() ? 2 : 3); p++) /* quick: no autotuning */
        for (size_t i = 0; i < (p == 2 ? 3 : NCASES); i++) {
            conv_case cc = cases[i];
            cc.flags |= passes[p];
            double e = run_case(&cc, 1);
            if (!(e <= 2e-3)) fail_msg("pass %d case %zu: error %.3e", p, i, e);
        }
    const char *forced[2] = {"legacy-fused", "legacy"};
    for (int f = 0; f < 2; f++)
        printf("  %d of %d slice cases ran on path %s (the rest: refused by cuDNN, heuristics)\n",
               run_forced(path, forced[f], cases, NCASES), NCASES, forced[f]);
    g_slice = 0;
    remove(path);
}

/* What an output slice takes is checked at creation: a stride of at least
 * K, K and the stride multiples of 8 (F16), no fused residual. */
static void output_slice_is_checked(void **state) {
    (void)state;
    float w[16 * 8 * 9] = {0};
    fv_conv2d_desc d = {.h = 8, .w = 8, .c = 8, .k = 16, .r = 3, .s = 3, .weights = w};
    fv_conv2d *op = NULL;
    assert_int_equal(fv__conv2d_create_into(gpu, &d, 8, &op), FV_ERR_BAD_PARAM);
    assert_non_null(strstr(fv_last_error(), "must be >= K"));
    assert_int_equal(fv__conv2d_create_into(gpu, &d, 20, &op), FV_ERR_BAD_PARAM);
    assert_non_null(strstr(fv_last_error(), "multiples of 8"));
    d.k = 12;
    assert_int_equal(fv__conv2d_create_into(gpu, &d, 24, &op), FV_ERR_BAD_PARAM);
    d.k = 16;
    d.flags = FV_CONV2D_RESIDUAL;
    assert_int_equal(fv__conv2d_create_into(gpu, &d, 24, &op), FV_ERR_BAD_PARAM);
    assert_non_null(strstr(fv_last_error(), "FV_CONV2D_RESIDUAL"));
    assert_null(op);
}

/* The residual is checked: refused on an op without FV_CONV2D_RESIDUAL,
 * required on one with it, never the output. */
static void residual_is_checked(void **state) {
    (void)state;
    float w[8 * 8 * 9] = {0};
    fv_conv2d_desc d = {.h = 8,
                        .w = 8,
                        .c = 8,
                        .k = 8,
                        .r = 3,
                        .s = 3,
                        .pad_h = 1,
                        .pad_w = 1,
                        .weights = w,
                        .flags = FV_CONV2D_RESIDUAL};
    fv_conv2d *op = NULL, *plain = NULL;
    FV_ASSERT_OK(fv_conv2d_create(gpu, &d, &op));
    d.flags = 0;
    FV_ASSERT_OK(fv_conv2d_create(gpu, &d, &plain));
    fv_tensor *x = make(gpu, FV_DTYPE_F16, 1, 8, 8, 8), *y = make(gpu, FV_DTYPE_F16, 1, 8, 8, 8),
              *z = make(gpu, FV_DTYPE_F16, 1, 8, 8, 8);
    assert_int_equal(fv_conv2d_forward(op, x, y), FV_ERR_BAD_PARAM);
    assert_non_null(strstr(fv_last_error(), "FV_CONV2D_RESIDUAL"));
    assert_int_equal(fv_conv2d_forward_residual(plain, x, z, y), FV_ERR_BAD_PARAM);
    assert_int_equal(fv_conv2d_forward_residual(op, x, y, y), FV_ERR_BAD_PARAM);
    FV_ASSERT_OK(fv_conv2d_forward_residual(op, x, z, y));
    FV_ASSERT_OK(fv_conv2d_forward_residual(op, x, x, y)); /* z may be the input */
    FV_ASSERT_OK(fv_context_synchronize(gpu));
    fv_tensor_destroy(x), fv_tensor_destroy(y), fv_tensor_destroy(z);
    fv_conv2d_destroy(op), fv_conv2d_destroy(plain);
}

/* The graph-pw path (cuDNN's runtime-fusion form: an FP32 bias, an
 * identity tail on an op with nothing to fuse), first among cuDNN's
 * candidates without tuning: every activation, padded K lanes, odd C,
 * stride 2, a batch of 2, no bias; then the same ops rebuilt from a saved
 * profile. */
static void graph_pw_matches_and_round_trips(void **state) {
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(4242);
    const uint32_t fl = FV_CONV2D_NO_DIRECT;
    const conv_case cases[] = {
        {1, 32, 32, 64, 64, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, fl},
        {1, 32, 32, 64, 64, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 0, fl},
        {1, 32, 32, 64, 64, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 1, fl},
        {1, 24, 24, 32, 13, 3, 3, 1, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, fl}, /* padded K lanes */
        {1, 24, 24, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 1, fl},
        {1, 24, 24, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_CLIPPED_RELU, 0.5f, 1, fl},
        {1, 24, 24, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_LEAKY_RELU, 0.1f, 1, fl},
        {1, 30, 26, 5, 16, 5, 5, 2, 2, 1, 1, FV_ACT_RELU, 0, 1, fl}, /* odd C, stride 2 */
        {2, 16, 16, 128, 128, 7, 7, 1, 3, 1, 1, FV_ACT_RELU, 0, 1, fl},
    };
    enum { NCASES = sizeof cases / sizeof cases[0] };
    char paths[NCASES][16];
    int taken = 0;
    for (size_t i = 0; i < NCASES; i++) {
        double e = run_case(&cases[i], 1);
        if (!(e <= 2e-3)) fail_msg("case %zu: error %.3e", i, e);
        snprintf(paths[i], sizeof paths[i], "%s", last_info.path);
        if (strcmp(last_info.path, "graph-pw") == 0) {
            taken++;
            assert_true(last_info.fused && last_info.tensor_cores);
        }
    }
    fv_context_info ci;
    FV_ASSERT_OK(fv_context_info_get(gpu, &ci));
    printf("  graph-pw taken by %d of %d ops (SM %d.%d, cuDNN %d)\n", taken, NCASES, ci.sm_major,
           ci.sm_minor, ci.cudnn_loaded);
    /* seen on the H100 with cuDNN 9.14 and 9.19: the runtime-fusion engine
     * builds these graphs; older GPUs and libraries may have none */
    if (ci.sm_major >= 9 && ci.cudnn_loaded >= 91400) assert_true(taken >= NCASES / 2);

    FV_ASSERT_OK(fv_context_profile_save(gpu, path));
    fv_context *ctx2 = NULL, *saved = gpu;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA, .profile_path = path};
    FV_ASSERT_OK(fv_context_create(&cd, &ctx2));
    gpu = ctx2;
    for (size_t i = 0; i < NCASES; i++) {
        conv_case cc = cases[i];
        cc.flags = 0; /* the profile decides */
        double e = run_case(&cc, 0);
        if (strcmp(last_info.path, paths[i]) != 0 || !strstr(last_info.choice, "profile"))
            fail_msg("case %zu: from the profile %s (%s), was %s", i, last_info.path,
                     last_info.choice, paths[i]);
        if (!(e <= 2e-3)) fail_msg("case %zu (profile): error %.3e", i, e);
    }
    fv_context_destroy(ctx2);

    /* graph-pw16 (FP16 intermediates and bias): each biased op's graph-pw
     * entry, the same engine and knobs, renamed */
    size_t len = 0;
    char *text = read_text(path, &len);
    int lines = 0;
    for (const char *c = text; (c = strchr(c, '\n')) != NULL; c++)
        lines++;
    text = realloc(text, len + 2 * (size_t)lines + 1); /* "graph-pw16": 2 bytes more a line */
    assert_non_null(text);
    int renamed = 0;
    for (char *line = text; (line = strstr(line, "\nconv ")) != NULL; line++) {
        char *eol = strchr(line + 1, '\n'), *p = strstr(line, " path=graph-pw ");
        if (!eol || !p || p > eol || !strstr(line, ":b1:") || strstr(line, ":b1:") > eol) continue;
        memmove(p + 15 + 2, p + 15, strlen(p + 15) + 1);
        memcpy(p, " path=graph-pw16 ", 17);
        renamed++;
    }
    write_text(path, text);
    free(text);
    FV_ASSERT_OK(fv_context_create(&cd, &ctx2));
    gpu = ctx2;
    int ran = 0;
    for (size_t i = 0; i < NCASES; i++) {
        if (!cases[i].bias || strcmp(paths[i], "graph-pw") != 0) continue;
        conv_case cc = cases[i];
        cc.flags = 0;
        double e = run_case(&cc, 1);
        if (strcmp(last_info.path, "graph-pw16") != 0 || !strstr(last_info.choice, "profile"))
            fail_msg("case %zu: graph-pw16 entry gave %s (%s)", i, last_info.path,
                     last_info.choice);
        assert_true(last_info.fused);
        if (!(e <= 2e-3)) fail_msg("case %zu (graph-pw16): error %.3e", i, e);
        ran++;
    }
    printf("  graph-pw16: %d entries renamed, %d ops run from them\n", renamed, ran);
    assert_true(renamed >= ran); /* the context's profile also holds other tests' ops */
    if (ci.sm_major >= 9 && ci.cudnn_loaded >= 91400) assert_true(ran >= 1);
    gpu = saved;
    fv_context_destroy(ctx2);
    remove(path);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Creates d on ctx (timed: the returned ms), runs it once on x (H x W x C)
 * into y (ny halves), and fills *info. */
static double create_and_run(fv_context *ctx, const fv_conv2d_desc *d, const fv_half *x, fv_half *y,
                             size_t ny, fv_conv2d_info *info) {
    fv_conv2d *op = NULL;
    double t0 = now_ms();
    FV_ASSERT_OK(fv_conv2d_create(ctx, d, &op));
    double ms = now_ms() - t0;
    FV_ASSERT_OK(fv_conv2d_info_get(op, info));
    int n, h, w, c;
    fv_conv2d_output_shape(op, &n, &h, &w, &c);
    assert_true((size_t)n * h * w * c == ny);
    fv_tensor *tx = make(ctx, FV_DTYPE_F16, 1, d->h, d->w, d->c),
              *ty = make(ctx, FV_DTYPE_F16, n, h, w, c);
    FV_ASSERT_OK(fv_tensor_upload(ctx, tx, x, (size_t)d->h * d->w * d->c * sizeof *x));
    FV_ASSERT_OK(fv_conv2d_forward(op, tx, ty));
    FV_ASSERT_OK(fv_tensor_download(ctx, ty, y, ny * sizeof *y));
    FV_ASSERT_OK(fv_context_synchronize(ctx));
    fv_tensor_destroy(tx), fv_tensor_destroy(ty);
    fv_conv2d_destroy(op);
    return ms;
}

/* Plans cached in the profile. A ResNet-18 layer on graph-pw (cuDNN's
 * runtime-fusion engine compiles a kernel when its plan finalizes), created
 * in a context without a profile, is saved with its serialized plan; created
 * again in a new context from that profile it deserializes the plan (choice
 * "profile+plan") and computes bit for bit the same; a cached plan that does
 * not load (here: cut short) is compiled instead, with the same bits again,
 * and cached anew. Creation times are printed, not asserted. */
static void cached_plan_round_trip(void **state) {
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    fv_test_seed(4343);
    enum { H = 56, W = 56, C = 64, K = 64 };
    static float w[K * C * 9], b[K], xf[H * W * C];
    static fv_half x[H * W * C], y0[H * W * K], y1[H * W * K];
    fv_test_fill_uniform(w, K * C * 9, -0.1f, 0.1f);
    fv_test_fill_uniform(b, K, -0.5f, 0.5f);
    fv_test_fill_uniform(xf, H * W * C, -1, 1);
    fv_f32_to_f16_n(xf, x, H * W * C);
    fv_conv2d_desc d = {.h = H,
                        .w = W,
                        .c = C,
                        .k = K,
                        .r = 3,
                        .s = 3,
                        .pad_h = 1,
                        .pad_w = 1,
                        .activation = FV_ACT_RELU,
                        .weights = w,
                        .bias = b,
                        .flags = FV_CONV2D_NO_DIRECT};
    char key[FV__PROFILE_KEY];
    fv__conv2d_key(&d, 1, key, sizeof key);
    fv_conv2d_info info[3];
    double ms[3];

    /* compiled: no profile */
    fv_context *ctx = NULL;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA};
    FV_ASSERT_OK(fv_context_create(&cd, &ctx));
    fv_context_info ci;
    FV_ASSERT_OK(fv_context_info_get(ctx, &ci));
    ms[0] = create_and_run(ctx, &d, x, y0, H * W * K, &info[0]);
    FV_ASSERT_OK(fv_context_profile_save(ctx, path));
    fv_context_destroy(ctx);
    fv__profile p;
    FV_ASSERT_OK(fv__profile_load(path, NULL, &p, NULL, 0));
    size_t n = 0;
    const unsigned char *blob = fv__profile_plan(&p, key, &n);
    printf("  %s %s (%s): %s, plan of %zu bytes cached\n", info[0].path, info[0].engine,
           info[0].choice, blob ? "runtime-compiled" : "not runtime-compiled", n);
    /* seen on the H100 with cuDNN 9.19: graph-pw on the runtime-fusion engine */
    if (ci.sm_major >= 9 && ci.cudnn_loaded >= 91400) assert_non_null(blob);
    if (!blob) {
        fv__profile_free(&p);
        remove(path);
        skip();
    }
    const unsigned char *eol = memchr(blob, '\n', n);
    assert_non_null(eol);
    printf("  its header: %.*s\n", (int)(eol - blob), (const char *)blob);

    /* from the profile: the plan deserialized, the same bits */
    cd.profile_path = path;
    FV_ASSERT_OK(fv_context_create(&cd, &ctx));
    const char *why = NULL;
    fv_context_profile_status(ctx, &why, NULL);
    assert_string_equal(why, "");
    ms[1] = create_and_run(ctx, &d, x, y1, H * W * K, &info[1]);
    fv_context_destroy(ctx);
    printf("  from the profile: %s %s (%s)\n", info[1].path, info[1].engine, info[1].choice);
    assert_true(strncmp(info[1].choice, "profile+plan", 12) == 0);
    assert_string_equal(info[1].path, info[0].path);
    assert_string_equal(info[1].engine, info[0].engine);
    assert_int_equal(info[1].workspace_bytes, info[0].workspace_bytes);
    assert_memory_equal(y0, y1, sizeof y0);

    /* a cached plan cut short: refused by cuDNN, compiled, the same bits,
     * and the whole plan cached again */
    size_t cut = (size_t)(eol + 1 - blob) + (n - (size_t)(eol + 1 - blob)) / 2;
    FV_ASSERT_OK(fv__profile_set_plan(&p, key, blob, cut));
    FV_ASSERT_OK(fv__profile_save(path, &p));
    fv__profile_free(&p);
    memset(y1, 0, sizeof y1);
    FV_ASSERT_OK(fv_context_create(&cd, &ctx));
    ms[2] = create_and_run(ctx, &d, x, y1, H * W * K, &info[2]);
    printf("  from a plan cut short: %s %s (%s)\n", info[2].path, info[2].engine, info[2].choice);
    assert_true(strncmp(info[2].choice, "profile (", 9) == 0);
    assert_memory_equal(y0, y1, sizeof y0);
    FV_ASSERT_OK(fv_context_profile_save(ctx, path));
    fv_context_destroy(ctx);
    FV_ASSERT_OK(fv__profile_load(path, NULL, &p, NULL, 0));
    size_t again = 0;
    assert_non_null(fv__profile_plan(&p, key, &again));
    assert_true(again > cut);
    fv__profile_free(&p);
    printf("  created in %.1f ms compiling the plan, %.1f ms from the cached plan, %.1f ms from "
           "a cached plan cut short\n",
           ms[0], ms[1], ms[2]);
    remove(path);
}

/* Without timing or a profile, a wide-pixel layer (32 channels) on a large
 * image takes the direct kernel's two rows a warp, 8 rows a block
 * (direct_preferred); on a small image, or at stride 2, not the direct
 * kernel first (the kernel's answers are checked in the variants test).
 * RGB layers take packed taps: two rows a warp at stride 1, one on the
 * strided stems (K 64 too: ResNet's); 8 and 4 channels read at stride 2,
 * two rows a warp, 8 rows a block. On 2^20 output pixels or more, SM 9.0
 * takes the warpgroup-MMA kernel's pixels-along-N form first: for 32
 * channels read, 3x3, K 32, and with taps in pairs for 8 read, 5x5, K 32;
 * other devices the direct kernel's two rows a warp. */
static void direct_kernel_heuristic_takes_wide_pixels(void **state) {
    static float w[64 * 3 * 7 * 7]; /* the largest: ResNet's stem (the others fewer) */
    fv_test_seed(77);
    fv_test_fill_uniform(w, sizeof w / sizeof w[0], -0.1f, 0.1f);
    const struct {
        conv_case cc;
        const char *engine; /* in the engine's name; NULL: not the direct kernel */
        const char *sm90;   /* on SM 9.0, where it differs: the engine's whole name */
    } want[] = {
        {{1, 512, 512, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         "fovea-direct-8rows-persistent-2w",
         NULL},
        {{1, 64, 64, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         NULL,
         NULL},
        {{1, 512, 512, 3, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         "fovea-direct-8rows-persistent-2w-packed",
         NULL},
        {{1, 512, 512, 3, 32, 3, 3, 2, 1, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         "fovea-direct-4rows-persistent-packed",
         NULL},
        {{1, 224, 224, 3, 64, 7, 7, 2, 3, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         "fovea-direct-4rows-persistent-packed",
         NULL}, /* ResNet's stem */
        /* stride 2 on 8 and 4 channels read: two rows a warp, 8 rows */
        {{1, 400, 400, 8, 8, 9, 9, 2, 4, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         "fovea-direct-8rows-persistent-2w",
         NULL},
        {{1, 256, 256, 4, 32, 5, 5, 2, 2, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         "fovea-direct-8rows-persistent-2w",
         NULL},
        {{1, 512, 512, 32, 32, 3, 3, 2, 1, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         NULL,
         NULL},
        /* 2^20 output pixels or more: on SM 9.0 exactly the pixels-along-N form */
        {{1, 1024, 1024, 32, 32, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         "fovea-direct-8rows-persistent-2w",
         "fovea-wgmma-px-2rows"},
        {{1, 1080, 1024, 8, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         "fovea-direct-16rows-persistent-2w",
         "fovea-wgmma-px-8rows-paired"},
        /* RGB: packed taps, but on SM 9.0 the 8-channel form's pixels along N */
        {{1, 1080, 1024, 3, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 0, FV_CONV2D_NO_PROFILE},
         "fovea-direct-8rows-persistent-2w-packed",
         "fovea-wgmma-px-8rows-paired"},
    };
    fv_context_info ci;
    FV_ASSERT_OK(fv_context_info_get(gpu, &ci));
    const int sm90 = ci.sm_major == 9 && ci.sm_minor == 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        fv_conv2d_desc d = desc_of(&want[i].cc, FV_DTYPE_F16, w, NULL);
        fv_conv2d *op = NULL;
        FV_ASSERT_OK(fv_conv2d_create(gpu, &d, &op));
        fv_conv2d_info info;
        FV_ASSERT_OK(fv_conv2d_info_get(op, &info));
        if (!want[i].engine) {
            assert_string_not_equal(info.path, "direct");
        } else if (sm90 && want[i].sm90) {
            assert_string_equal(info.engine, want[i].sm90);
        } else {
            assert_string_equal(info.path, "direct");
            assert_non_null(strstr(info.engine, want[i].engine)); /* "-tma" where it runs */
        }
        fv_conv2d_destroy(op);
    }
}

/* Ops outside the direct kernel's range are refused with the reason. */
static void direct_kernel_refuses_what_it_cannot_run(void **state) {
    static float w[72 * 8 * 9];
    fv_conv2d_desc d = {.h = 16,
                        .w = 16,
                        .c = 8,
                        .k = 8,
                        .r = 3,
                        .s = 3,
                        .pad_h = 2,
                        .pad_w = 2,
                        .dilation_h = 2,
                        .dilation_w = 2,
                        .weights = w,
                        .flags = FV_CONV2D_DIRECT};
    fv_conv2d *op = NULL;
    FV_ASSERT_STATUS(fv_conv2d_create(gpu, &d, &op), FV_ERR_NOT_SUPPORTED, "dilation");
    d.dilation_h = d.dilation_w = 1, d.pad_h = d.pad_w = 1, d.k = 72;
    FV_ASSERT_STATUS(fv_conv2d_create(gpu, &d, &op), FV_ERR_NOT_SUPPORTED, "K");
    d.k = 8, d.c = 40; /* it reads at most 32 channels a pixel */
    FV_ASSERT_STATUS(fv_conv2d_create(gpu, &d, &op), FV_ERR_NOT_SUPPORTED, "C <= 32");
    d.c = 8;
    d.k = 8, d.flags = FV_CONV2D_DIRECT | FV_CONV2D_NO_DIRECT;
    FV_ASSERT_STATUS(fv_conv2d_create(gpu, &d, &op), FV_ERR_BAD_PARAM, "exclude");
    d.flags = FV_CONV2D_NO_DIRECT;
    FV_ASSERT_OK(fv_conv2d_create(gpu, &d, &op));
    fv_conv2d_info info;
    FV_ASSERT_OK(fv_conv2d_info_get(op, &info));
    assert_string_not_equal(info.path, "direct");
    fv_conv2d_destroy(op);
}

/* The raw FP16 storage, padding lanes included, is visible through a MAPPED
 * pool: poison every lane, run, and check padding is 0 (sigmoid(0) is 0.5, so
 * sigmoid with K=3 is the case that needs the fix-up) and real lanes finite. */
static void padded_lanes_stay_zero(void **state) {
    const fv_activation acts[] = {FV_ACT_SIGMOID, FV_ACT_IDENTITY, FV_ACT_TANH};
    enum { H = 9, W = 11, C = 3, K = 3 };
    fv_pool *mapped = NULL;
    fv_pool_desc pd = {.kind = FV_POOL_MAPPED, .bytes = 1 << 20, .name = "mapped-test"};
    FV_ASSERT_OK(fv_pool_create(gpu, &pd, &mapped));
    float w[K * C * 9], b[K];
    fv_test_fill_uniform(w, K * C * 9, -1, 1);
    fv_test_fill_uniform(b, K, -1, 1);
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        fv_conv2d_desc d = {.h = H,
                            .w = W,
                            .c = C,
                            .k = K,
                            .r = 3,
                            .s = 3,
                            .pad_h = 1,
                            .pad_w = 1,
                            .activation = acts[a],
                            .weights = w,
                            .bias = b};
        fv_conv2d *op;
        FV_ASSERT_OK(fv_conv2d_create(gpu, &d, &op));
        fv_tensor *in = make(gpu, FV_DTYPE_F16, 1, H, W, C), *out = NULL;
        fv_tensor_desc od = {.h = H, .w = W, .c = K, .pool = mapped};
        FV_ASSERT_OK(fv_tensor_create(gpu, &od, &out));
        fv_half xh[H * W * C];
        for (int i = 0; i < H * W * C; i++)
            xh[i] = fv_f32_to_f16(fv_test_rand_uniform(-1, 1));
        FV_ASSERT_OK(fv_tensor_upload(gpu, in, xh, sizeof xh));
        FV_ASSERT_OK(fv_context_synchronize(gpu));
        fv_half *raw = fv_tensor_data(out); /* host address of mapped memory */
        for (int i = 0; i < H * W * 8; i++)
            raw[i] = 0x7e00; /* NaN in every lane */
        FV_ASSERT_OK(fv_conv2d_forward(op, in, out));
        FV_ASSERT_OK(fv_context_synchronize(gpu));
        for (int p = 0; p < H * W; p++)
            for (int k = 0; k < 8; k++) {
                fv_half v = raw[p * 8 + k];
                if (k >= K && v != 0)
                    fail_msg("%s: pixel %d padded lane %d is 0x%04x, not 0",
                             fv_activation_name(acts[a]), p, k, v);
                if (k < K && isnan(fv_f16_to_f32(v)))
                    fail_msg("%s: pixel %d lane %d not written", fv_activation_name(acts[a]), p, k);
            }
        fv_tensor_destroy(in), fv_tensor_destroy(out);
        fv_conv2d_destroy(op);
    }
    fv_pool_destroy(mapped);
}

/* Autotuned ops compute the same function (every candidate the tuner may
 * pick, including C declared as 3 or 4 instead of 8, must be right). */
static void autotuned_matches_cpu_reference(void **state) {
    fv_test_seed(77);
    const uint32_t T = FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_PROFILE;
    const conv_case cases[] = {
        {1, 64, 80, 3, 32, 5, 5, 1, 2, 1, 1, FV_ACT_RELU, 0, 1, T},
        {1, 64, 64, 3, 3, 3, 3, 1, 1, 1, 1, FV_ACT_IDENTITY, 0, 0, T},
        {1, 40, 40, 5, 7, 3, 3, 2, 1, 1, 1, FV_ACT_SIGMOID, 0, 1, T},
        {2, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, FV_ACT_TANH, 0, 1, T},
        {1, 16, 16, 32, 32, 3, 3, 1, 1, 1, 32, FV_ACT_RELU, 0, 1, T},
        /* C > 32 with K <= 64: no direct-kernel form (it would read 32 of
         * the 64 channels); fovea's GEMM among the candidates */
        {1, 12, 12, 64, 32, 3, 3, 1, 1, 1, 1, FV_ACT_RELU, 0, 1, T},
        {1, 16, 16, 128, 64, 7, 7, 2, 3, 1, 1, FV_ACT_SIGMOID, 0, 1, T},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double e = run_case(&cases[i], 1);
        if (!(e <= 2e-3)) fail_msg("autotuned case %zu: relative L2 error %.3e > 2e-3", i, e);
    }
}

/* Autotune in one context, save the profile, load it into a fresh one: the
 * op is rebuilt from the profile (same engine, no heuristics) and is right. */
static void profile_round_trip(void **state) {
    char path[] = "/tmp/fv_profile_XXXXXX";
    make_temp_file(path);
    float w[32 * 3 * 25], b[32];
    fv_test_fill_uniform(w, sizeof w / sizeof w[0], -0.5f, 0.5f);
    fv_test_fill_uniform(b, 32, -0.5f, 0.5f);
    fv_conv2d_desc d = {.h = 72,
                        .w = 96,
                        .c = 3,
                        .k = 32,
                        .r = 5,
                        .s = 5,
                        .pad_h = 2,
                        .pad_w = 2,
                        .activation = FV_ACT_RELU,
                        .weights = w,
                        .bias = b,
                        .flags = FV_CONV2D_AUTOTUNE};
    fv_conv2d *op;
    FV_ASSERT_OK(fv_conv2d_create(gpu, &d, &op));
    fv_conv2d_info tuned, loaded;
    FV_ASSERT_OK(fv_conv2d_info_get(op, &tuned));
    FV_ASSERT_OK(fv_context_profile_save(gpu, path));
    fv_conv2d_destroy(op);

    fv_context *ctx2 = NULL;
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA, .profile_path = path};
    FV_ASSERT_OK(fv_context_create(&cd, &ctx2));
    const char *why = NULL;
    int entries = 0;
    fv_context_profile_status(ctx2, &why, &entries);
    assert_string_equal(why, "");
    assert_true(entries >= 1);
    d.flags = 0;
    FV_ASSERT_OK(fv_conv2d_create(ctx2, &d, &op));
    FV_ASSERT_OK(fv_conv2d_info_get(op, &loaded));
    printf("  tuned: %s %s (%s); loaded: %s %s (%s)\n", tuned.path, tuned.engine, tuned.layout,
           loaded.path, loaded.engine, loaded.choice);
    assert_non_null(strstr(loaded.choice, "profile"));
    assert_string_equal(loaded.engine, tuned.engine);
    assert_string_equal(loaded.layout, tuned.layout);
    /* and it computes the same as the CPU reference */
    fv_tensor *x = NULL, *y = NULL;
    fv_tensor_desc xd = {.h = 72, .w = 96, .c = 3}, yd = {.h = 72, .w = 96, .c = 32};
    FV_ASSERT_OK(fv_tensor_create(ctx2, &xd, &x));
    FV_ASSERT_OK(fv_tensor_create(ctx2, &yd, &y));
    static fv_half xh[72 * 96 * 3], yh[72 * 96 * 32];
    static float xf[72 * 96 * 3], ref[72 * 96 * 32], got[72 * 96 * 32];
    fv_test_fill_uniform(xf, 72 * 96 * 3, -1, 1);
    fv_f32_to_f16_n(xf, xh, 72 * 96 * 3);
    fv_f16_to_f32_n(xh, xf, 72 * 96 * 3);
    FV_ASSERT_OK(fv_tensor_upload(ctx2, x, xh, sizeof xh));
    FV_ASSERT_OK(fv_conv2d_forward(op, x, y));
    FV_ASSERT_OK(fv_tensor_download(ctx2, y, yh, sizeof yh));
    FV_ASSERT_OK(fv_context_synchronize(ctx2));
    fv_f16_to_f32_n(yh, got, 72 * 96 * 32);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = fv_round_f16(w[i]);
    for (int i = 0; i < 32; i++)
        b[i] = fv_round_f16(b[i]);
    fv_conv2d *cop;
    fv_conv2d_desc cdsc = d;
    cdsc.dtype = FV_DTYPE_F32;
    FV_ASSERT_OK(fv_conv2d_create(cpu, &cdsc, &cop));
    fv_tensor *cx = make(cpu, FV_DTYPE_F32, 1, 72, 96, 3),
              *cy = make(cpu, FV_DTYPE_F32, 1, 72, 96, 32);
    FV_ASSERT_OK(fv_tensor_upload(cpu, cx, xf, sizeof xf));
    FV_ASSERT_OK(fv_conv2d_forward(cop, cx, cy));
    FV_ASSERT_OK(fv_tensor_download(cpu, cy, ref, sizeof ref));
    double err = fv_test_rel_l2(got, ref, 72 * 96 * 32);
    printf("  profile-built op: rel L2 error %.2e\n", err);
    assert_true(err <= 2e-3);
    fv_tensor_destroy(x), fv_tensor_destroy(y), fv_tensor_destroy(cx), fv_tensor_destroy(cy);
    fv_conv2d_destroy(op);
    fv_conv2d_destroy(cop);
    fv_context_destroy(ctx2);

    /* a corrupt profile is ignored with a reason; the context still works */
    FILE *f = fopen(path, "r+");
    assert_non_null(f);
    fseek(f, 3, SEEK_SET);
    fputs("garbage", f);
    fclose(f);
    FV_ASSERT_OK(fv_context_create(&cd, &ctx2));
    fv_context_profile_status(ctx2, &why, &entries);
    printf("  corrupt profile: %s\n", why);
    assert_true(strlen(why) > 0);
    assert_int_equal(entries, 0);
    FV_ASSERT_OK(fv_conv2d_create(ctx2, &d, &op));
    fv_conv2d_destroy(op);
    fv_context_destroy(ctx2);
    remove(path);
}

static void forward_loop_allocates_nothing(void **state) {
    for (int pass = 0; pass < 2; pass++) { /* direct kernel, then cuDNN */
        float w[16 * 16 * 9], b[16];
        fv_test_fill_uniform(w, sizeof w / sizeof w[0], -1, 1);
        fv_test_fill_uniform(b, 16, -1, 1);
        fv_conv2d_desc d = {.h = 64,
                            .w = 64,
                            .c = 16,
                            .k = 16,
                            .r = 3,
                            .s = 3,
                            .pad_h = 1,
                            .pad_w = 1,
                            .activation = FV_ACT_RELU,
                            .weights = w,
                            .bias = b,
                            .flags = pass ? FV_CONV2D_NO_DIRECT : FV_CONV2D_DIRECT};
        fv_conv2d *op;
        FV_ASSERT_OK(fv_conv2d_create(gpu, &d, &op));
        fv_tensor *a = make(gpu, FV_DTYPE_F16, 1, 64, 64, 16),
                  *o = make(gpu, FV_DTYPE_F16, 1, 64, 64, 16);
        FV_ASSERT_OK(fv_conv2d_bind(op, a, o)); /* set-up: both ping-pong pairs */
        FV_ASSERT_OK(fv_conv2d_bind(op, o, a));
        FV_ASSERT_OK(fv_conv2d_forward(op, a, o)); /* warm-up */
        FV_ASSERT_OK(fv_conv2d_forward(op, o, a));
        fv_pool_stats before, after;
        fv_pool *dev = fv_context_pool(gpu, FV_POOL_DEVICE);
        FV_ASSERT_OK(fv_pool_stats_get(dev, &before));
        for (int i = 0; i < (fv_test_quick() ? 20 : 500); i++) {
            FV_ASSERT_OK(fv_conv2d_forward(op, a, o)); /* ping-pong */
            FV_ASSERT_OK(fv_conv2d_forward(op, o, a));
        }
        FV_ASSERT_OK(fv_context_synchronize(gpu));
        FV_ASSERT_OK(fv_pool_stats_get(dev, &after));
        assert_int_equal(after.backing_allocs, before.backing_allocs);
        assert_int_equal(after.carve_outs, before.carve_outs);
        assert_int_equal(after.in_use, before.in_use);
        fv_tensor_destroy(a), fv_tensor_destroy(o);
        fv_conv2d_destroy(op);
    }
}

static void stream_capture_replays(void **state) {
    /* direct kernel; cuDNN; cuDNN with K 13 and sigmoid, whose padding lanes
     * need the epilogue kernel (launched early, as a programmatic dependent
     * on SM 9.0+) */
    for (int pass = 0; pass < 3; pass++) {
        enum { H = 48, W = 40, C = 8, K = 16 };
        const int k = pass == 2 ? 13 : K;
        const size_t ybytes = (size_t)H * W * k * sizeof(fv_half);
        float w[K * C * 9], b[K], x[H * W * C];
        fv_test_fill_uniform(w, sizeof w / sizeof w[0], -0.5f, 0.5f);
        fv_test_fill_uniform(b, K, -0.5f, 0.5f);
        fv_conv2d_desc d = {.h = H,
                            .w = W,
                            .c = C,
                            .k = k,
                            .r = 3,
                            .s = 3,
                            .pad_h = 1,
                            .pad_w = 1,
                            .activation = pass == 2 ? FV_ACT_SIGMOID : FV_ACT_TANH,
                            .weights = w,
                            .bias = b,
                            .flags = pass ? FV_CONV2D_NO_DIRECT : FV_CONV2D_DIRECT};
        fv_conv2d *op;
        FV_ASSERT_OK(fv_conv2d_create(gpu, &d, &op));
        fv_tensor *in = make(gpu, FV_DTYPE_F16, 1, H, W, C),
                  *out = make(gpu, FV_DTYPE_F16, 1, H, W, k);
        fv_half xh[H * W * C], direct[H * W * K], replay[H * W * K];
        fv_test_fill_uniform(x, H * W * C, -1, 1);
        fv_f32_to_f16_n(x, xh, H * W * C);
        FV_ASSERT_OK(fv_tensor_upload(gpu, in, xh, sizeof xh));
        FV_ASSERT_OK(fv_conv2d_forward(op, in, out)); /* warm: variant pack cached */
        FV_ASSERT_OK(fv_tensor_download(gpu, out, direct, ybytes));
        FV_ASSERT_OK(fv_context_synchronize(gpu));
        fv_conv2d_info info;
        FV_ASSERT_OK(fv_conv2d_info_get(op, &info));
        printf("  capture pass %d: %s %s\n", pass, info.path, info.engine);

        cudaStream_t s;
        FV_ASSERT_OK(fv_context_cuda_stream(gpu, &s));
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
        fv_status fs = fv_conv2d_forward(op, in, out);
        cudaError_t ce = cudaStreamEndCapture(s, &graph);
        FV_ASSERT_OK(fs);
        assert_int_equal(ce, cudaSuccess);
        assert_int_equal(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
        /* poison, then replay: the graph must write the same output */
        fv_half poison[H * W * K];
        for (int i = 0; i < H * W * K; i++)
            poison[i] = 0x7e00;
        FV_ASSERT_OK(fv_tensor_upload(gpu, out, poison, ybytes));
        assert_int_equal(cudaGraphLaunch(exec, s), cudaSuccess);
        FV_ASSERT_OK(fv_tensor_download(gpu, out, replay, ybytes));
        FV_ASSERT_OK(fv_context_synchronize(gpu));
        assert_memory_equal(direct, replay, ybytes);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        fv_tensor_destroy(in), fv_tensor_destroy(out);
        fv_conv2d_destroy(op);
    }
}

static void bad_input_is_refused(void **state) {
    float w[9] = {0};
    fv_conv2d_desc d = {
        .h = 8, .w = 8, .c = 1, .k = 1, .r = 3, .s = 3, .dtype = FV_DTYPE_F32, .weights = w};
    fv_conv2d *op = NULL;
    FV_ASSERT_STATUS(fv_conv2d_create(gpu, &d, &op), FV_ERR_NOT_SUPPORTED, "F32");
    d.dtype = FV_DTYPE_F16;
    FV_ASSERT_OK(fv_conv2d_create(gpu, &d, &op));
    fv_tensor *in = make(gpu, FV_DTYPE_F16, 1, 8, 8, 1), *bad = make(gpu, FV_DTYPE_F16, 1, 8, 8, 2);
    FV_ASSERT_STATUS(fv_conv2d_forward(op, in, bad), FV_ERR_BAD_SHAPE, "output tensor");
    FV_ASSERT_STATUS(fv_conv2d_bind(op, in, bad), FV_ERR_BAD_SHAPE, "output tensor");
    FV_ASSERT_STATUS(fv_conv2d_bind(NULL, in, bad), FV_ERR_BAD_PARAM, "op is NULL");
    fv_tensor *pinned = NULL;
    fv_tensor_desc pd = {.h = 6, .w = 6, .c = 1, .pool = fv_context_pool(gpu, FV_POOL_PINNED)};
    FV_ASSERT_OK(fv_tensor_create(gpu, &pd, &pinned));
    FV_ASSERT_STATUS(fv_conv2d_forward(op, in, pinned), FV_ERR_BAD_PARAM, "pinned");
    fv_tensor_destroy(in), fv_tensor_destroy(bad), fv_tensor_destroy(pinned);
    fv_conv2d_destroy(op);
}

/* (here, not in test_gpu_base: a CUDA-only build's test) */
/* internal (sdk/src/backend/cuda/cudnn_preload.c): cuDNN's parts loaded
 * ahead on a helper thread, -1 before it was joined */
int fv__cudnn_preload_count(void);

/* The first context loads cuDNN 9's sub-libraries (graph, both engine
 * libraries, heuristics: 35-50 ms of a cold start otherwise) on a helper
 * thread while CUDA makes its context, and joins it before returning. All
 * four sit beside libcudnn. */
static void cudnn_parts_are_loaded_ahead(void **state) {
    (void)state;
    fv_context_info in;
    FV_ASSERT_OK(fv_context_info_get(gpu, &in));
    assert_int_equal(fv__cudnn_preload_count(), in.cudnn_loaded >= 90000 ? 4 : 0);
}

int main(void) {
    gpu = fv_test_gpu_context_or_skip();
    cpu = fv_test_cpu_context(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_cpu_reference),
        cmocka_unit_test(direct_kernel_matches_cpu_reference),
        cmocka_unit_test(direct_kernel_variants_from_profile),
        cmocka_unit_test(direct_tma_window_gives_the_same_bytes),
        cmocka_unit_test(direct_wgmma_matches_cpu_reference),
        cmocka_unit_test(px_knobs_give_the_same_bytes),
        cmocka_unit_test(direct_kernel_packed_taps_variants),
        cmocka_unit_test(legacy_fused_from_profile),
        cmocka_unit_test(residual_matches_cpu_reference),
        cmocka_unit_test(residual_is_checked),
        cmocka_unit_test(output_slice_on_every_path),
        cmocka_unit_test(output_slice_is_checked),
        cmocka_unit_test(graph_pw_matches_and_round_trips),
        cmocka_unit_test(gemm_kernel_variants_from_profile),
        cmocka_unit_test(gemm_kernel_is_deterministic_and_capturable),
        cmocka_unit_test(direct_kernel_refuses_what_it_cannot_run),
        cmocka_unit_test(direct_kernel_heuristic_takes_wide_pixels),
        cmocka_unit_test(padded_lanes_stay_zero),
        cmocka_unit_test(autotuned_matches_cpu_reference),
        cmocka_unit_test(profile_round_trip),
        cmocka_unit_test(cached_plan_round_trip),
        cmocka_unit_test(forward_loop_allocates_nothing),
        cmocka_unit_test(stream_capture_replays),
        cmocka_unit_test(bad_input_is_refused),
        cmocka_unit_test(cudnn_parts_are_loaded_ahead),
    };
    /* FV_TEST_QUICK (toolchain/compute-sanitizer.sh): no autotuning and no
     * profile round trips, which time hundreds of engines (minutes under a
     * sanitizer; the packed-taps test times none: a few seconds under each
     * tool); matches_cpu_reference on 11 of its cases, the forward loops
     * 20 times instead of 500 */
    const struct CMUnitTest quick[] = {
        cmocka_unit_test(matches_cpu_reference),
        cmocka_unit_test(direct_tma_window_gives_the_same_bytes),
        cmocka_unit_test(direct_wgmma_matches_cpu_reference),
        cmocka_unit_test(px_knobs_give_the_same_bytes),
        cmocka_unit_test(direct_kernel_packed_taps_variants),
        cmocka_unit_test(residual_is_checked),
        cmocka_unit_test(output_slice_is_checked),
        cmocka_unit_test(output_slice_on_every_path),
        cmocka_unit_test(gemm_kernel_is_deterministic_and_capturable),
        cmocka_unit_test(direct_kernel_refuses_what_it_cannot_run),
        cmocka_unit_test(direct_kernel_heuristic_takes_wide_pixels),
        cmocka_unit_test(padded_lanes_stay_zero),
        cmocka_unit_test(forward_loop_allocates_nothing),
        cmocka_unit_test(stream_capture_replays),
        cmocka_unit_test(bad_input_is_refused),
        cmocka_unit_test(cudnn_parts_are_loaded_ahead),
    };
    /* FV_TEST_FILTER (e.g. "residual*"): only the tests it matches */
    if (getenv("FV_TEST_FILTER")) cmocka_set_test_filter(getenv("FV_TEST_FILTER"));
    /* FV_TEST_SKIP: leave out the tests it matches (a sanitizer run, say) */
    if (getenv("FV_TEST_SKIP")) cmocka_set_skip_filter(getenv("FV_TEST_SKIP"));
    int r = fv_test_quick() ? cmocka_run_group_tests(quick, NULL, NULL)
                            : cmocka_run_group_tests(tests, NULL, NULL);
    fv_context_destroy(cpu);
    fv_context_destroy(gpu);
    return r;
}
