/* fovea-regress, section "ops": convolutions, pack and unpack on the context
 * under test against the CPU backend with FP32 tensors, on the same inputs
 * (FP16 values, so both sides see the same numbers).
 *   conv: rel. L2 ||out - ref|| / ||ref|| <= CONV_TOL (FP16 output storage
 *         and FP32 accumulation in another order).
 *   pack: the reference rounded to FP16 must equal the tensor exactly (both
 *         backends share their pixel arithmetic).
 *   unpack: bytes equal exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "regress.h"

#define CONV_TOL 2e-3

typedef struct conv_case {
    const char *name;
    fv_conv2d_desc d;
    int bias;
    int quick; /* also run under --quick */
} conv_case;

static const conv_case conv_cases[] = {
    {"3->8 3x3 relu bias (odd C)",
     {.h = 48,
      .w = 64,
      .c = 3,
      .k = 8,
      .r = 3,
      .s = 3,
      .pad_h = 1,
      .pad_w = 1,
      .activation = FV_ACT_RELU},
     1,
     1},
    {"5->7 3x3 s2 identity bias (odd C, K)",
     {.h = 29,
      .w = 37,
      .c = 5,
      .k = 7,
      .r = 3,
      .s = 3,
      .stride_h = 2,
      .stride_w = 2,
      .pad_h = 1,
      .pad_w = 1},
     1,
     1},
    {"16->16 5x5 relu6",
     {.h = 40,
      .w = 40,
      .c = 16,
      .k = 16,
      .r = 5,
      .s = 5,
      .pad_h = 2,
      .pad_w = 2,
      .activation = FV_ACT_CLIPPED_RELU},
     0,
     0},
    {"8->24 1x1 sigmoid bias",
     {.h = 32, .w = 48, .c = 8, .k = 24, .r = 1, .s = 1, .activation = FV_ACT_SIGMOID},
     1,
     0},
    {"12->12 3x3 dilation 2 tanh",
     {.h = 33,
      .w = 31,
      .c = 12,
      .k = 12,
      .r = 3,
      .s = 3,
      .pad_h = 2,
      .pad_w = 2,
      .dilation_h = 2,
      .dilation_w = 2,
      .activation = FV_ACT_TANH},
     1,
     0},
    {"16 depthwise 3x3 leaky 0.1",
     {.h = 45,
      .w = 50,
      .c = 16,
      .k = 16,
      .r = 3,
      .s = 3,
      .pad_h = 1,
      .pad_w = 1,
      .groups = 16,
      .activation = FV_ACT_LEAKY_RELU,
      .activation_alpha = 0.1f},
     1,
     1},
    {"8->16 3x3 groups 2 relu",
     {.h = 30,
      .w = 30,
      .c = 8,
      .k = 16,
      .r = 3,
      .s = 3,
      .pad_h = 1,
      .pad_w = 1,
      .groups = 2,
      .activation = FV_ACT_RELU},
     0,
     0},
    {"32->64 3x3 s2 relu bias",
     {.h = 96,
      .w = 128,
      .c = 32,
      .k = 64,
      .r = 3,
      .s = 3,
      .stride_h = 2,
      .stride_w = 2,
      .pad_h = 1,
      .pad_w = 1,
      .activation = FV_ACT_RELU},
     1,
     0},
};

/* A tensor of ctx's DEVICE pool holding n values of vals (F16 or F32). */
static fv_status make_filled(fv_context *ctx, fv_dtype dt, int h, int w, int c, const float *vals,
                             fv_tensor **out) {
    fv_tensor_desc td = {.dtype = dt, .h = h, .w = w, .c = c};
    *out = NULL;
    fv_status s = fv_tensor_create(ctx, &td, out);
    if (s != FV_OK || !vals) return s;
    size_t n = (size_t)h * w * c;
    if (dt == FV_DTYPE_F32) return fv_tensor_upload(ctx, *out, vals, n * sizeof(float));
    fv_half *hv = malloc(n * sizeof *hv);
    if (!hv) return FV_ERR_OUT_OF_MEMORY;
    fv_f32_to_f16_n(vals, hv, n);
    s = fv_tensor_upload(ctx, *out, hv, n * sizeof *hv);
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    free(hv);
    return s;
}

/* Reads n values of t (F16 or F32) as floats. */
static fv_status read_floats(fv_context *ctx, const fv_tensor *t, float *out, size_t n) {
    fv_tensor_shape sh;
    fv_status s = fv_tensor_shape_get(t, &sh);
    if (s != FV_OK) return s;
    if (sh.dtype == FV_DTYPE_F32) {
        s = fv_tensor_download(ctx, t, out, n * sizeof(float));
        return s == FV_OK ? fv_context_synchronize(ctx) : s;
    }
    fv_half *hv = malloc(n * sizeof *hv);
    if (!hv) return FV_ERR_OUT_OF_MEMORY;
    s = fv_tensor_download(ctx, t, hv, n * sizeof *hv);
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    if (s == FV_OK) fv_f16_to_f32_n(hv, out, n);
    free(hv);
    return s;
}

/* Runs the conv on ctx with dtype dt; out receives n*p*q*k floats. */
static fv_status run_conv(fv_context *ctx, fv_conv2d_desc d, fv_dtype dt, const float *x,
                          float *out, size_t nout, const float *poison, fv_conv2d_info *info) {
    d.dtype = dt;
    fv_conv2d *op = NULL;
    fv_tensor *tx = NULL, *ty = NULL;
    int p = fv_conv_output_dim(d.h, d.r, d.stride_h, d.pad_h, d.dilation_h);
    int q = fv_conv_output_dim(d.w, d.s, d.stride_w, d.pad_w, d.dilation_w);
    fv_status s = fv_conv2d_create(ctx, &d, &op);
    if (s == FV_OK && info) s = fv_conv2d_info_get(op, info);
    if (s == FV_OK) s = make_filled(ctx, dt, d.h, d.w, d.c, x, &tx);
    if (s == FV_OK) s = make_filled(ctx, dt, p, q, d.k, poison, &ty);
    if (s == FV_OK) s = fv_conv2d_forward(op, tx, ty);
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    if (s == FV_OK) s = read_floats(ctx, ty, out, nout);
    fv_tensor_destroy(ty);
    fv_tensor_destroy(tx);
    fv_conv2d_destroy(op);
    return s;
}

static void conv_check(rg_report *r, fv_context *ctx, fv_context *ref, const conv_case *cc) {
    fv_conv2d_desc d = cc->d;
#define DEF1(x) x = (x) ? (x) : 1
    DEF1(d.n), DEF1(d.stride_h), DEF1(d.stride_w), DEF1(d.dilation_h), DEF1(d.dilation_w);
    DEF1(d.groups);
#undef DEF1
    int g = d.groups;
    int p = fv_conv_output_dim(d.h, d.r, d.stride_h, d.pad_h, d.dilation_h);
    int q = fv_conv_output_dim(d.w, d.s, d.stride_w, d.pad_w, d.dilation_w);
    size_t nx = (size_t)d.h * d.w * d.c, nw = (size_t)d.k * (d.c / g) * d.r * d.s;
    size_t ny = (size_t)p * q * d.k;
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *b = malloc(d.k * sizeof *b);
    float *got = malloc(ny * sizeof *got), *want = malloc(ny * sizeof *want);
    float *poison = malloc(ny * sizeof *poison);
    if (!x || !w || !b || !got || !want || !poison) {
        rg_add(r, "ops", cc->name, RG_FAIL, NAN, NAN, "", "out of host memory");
        goto done;
    }
    rg_fill_random(x, nx, -1.0f, 1.0f);
    rg_fill_random(w, nw, -0.5f, 0.5f);
    rg_fill_random(b, (size_t)d.k, -0.25f, 0.25f);
    for (size_t i = 0; i < ny; i++)
        poison[i] = NAN;
    d.weights = w;
    d.bias = cc->bias ? b : NULL;
    fv_conv2d_info info;
    memset(&info, 0, sizeof info);
    fv_status s = run_conv(ref, d, FV_DTYPE_F32, x, want, ny, NULL, NULL);
    if (s != FV_OK) {
        rg_add(r, "ops", cc->name, RG_FAIL, NAN, NAN, "", "reference (cpu f32): %s: %s",
               fv_status_name(s), fv_last_error());
        goto done;
    }
    s = run_conv(ctx, d, FV_DTYPE_F16, x, got, ny, poison, &info);
    if (s != FV_OK) {
        rg_add(r, "ops", cc->name, RG_FAIL, NAN, NAN, "", "%s: %s", fv_status_name(s),
               fv_last_error());
        goto done;
    }
    double e = rg_rel_l2(got, want, ny);
    rg_add(r, "ops", cc->name, e <= CONV_TOL ? RG_PASS : RG_FAIL, e, CONV_TOL, "rel_l2",
           "rel. L2 %.2e (<= %.0e); %s %s%s", e, CONV_TOL, info.path, info.engine,
           info.tensor_cores ? ", tensor cores" : "");
done:
    free(x), free(w), free(b), free(got), free(want), free(poison);
}

/* ---- pack / unpack ------------------------------------------------------- */
/* An image of bytes on ctx: a U8 tensor of the DEVICE pool of `bytes` bytes
 * (device-accessible on CUDA; host memory on the CPU backend). */
static fv_status image_tensor(fv_context *ctx, size_t bytes, const unsigned char *src,
                              fv_tensor **out) {
    fv_tensor_desc td = {.dtype = FV_DTYPE_U8, .h = 1, .w = (int)bytes, .c = 1};
    fv_status s = fv_tensor_create(ctx, &td, out);
    if (s == FV_OK && src) s = fv_tensor_upload(ctx, *out, src, bytes);
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    return s;
}

static void pack_check(rg_report *r, fv_context *ctx, fv_context *ref, fv_pixel_format f, int ch) {
    enum { W = 62, H = 34 };
    char name[64];
    snprintf(name, sizeof name, "pack %s -> %d channel%s", fv_pixel_format_name(f), ch,
             ch == 1 ? "" : "s");
    size_t nb = fv_image_bytes(f, W, H), nv = (size_t)W * H * ch;
    unsigned char *img = malloc(nb);
    float *want = malloc(nv * sizeof *want), *got = malloc(nv * sizeof *got);
    fv_tensor *timg = NULL, *tr = NULL, *tg = NULL;
    fv_status s = img && want && got ? FV_OK : FV_ERR_OUT_OF_MEMORY;
    if (s == FV_OK) {
        uint64_t z = 0x243F6A8885A308D3ull ^ (uint64_t)f * 977 ^ (uint64_t)ch;
        for (size_t i = 0; i < nb; i++) {
            z ^= z << 13, z ^= z >> 7, z ^= z << 17;
            img[i] = (unsigned char)(z >> 24);
        }
        s = image_tensor(ctx, nb, img, &timg);
    }
    fv_pack_desc pd = {.channels = ch, .scale = 1.0f / 255, .bias = -0.25f};
    fv_image hi = {.format = f, .width = W, .height = H, .data = img};
    fv_image gi = hi;
    if (s == FV_OK) gi.data = fv_tensor_data(timg);
    if (s == FV_OK) s = make_filled(ref, FV_DTYPE_F32, H, W, ch, NULL, &tr);
    if (s == FV_OK) s = make_filled(ctx, FV_DTYPE_F16, H, W, ch, NULL, &tg);
    if (s == FV_OK) s = fv_image_pack(ref, &hi, tr, &pd);
    if (s == FV_OK) s = fv_image_pack(ctx, &gi, tg, &pd);
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    if (s == FV_OK) s = read_floats(ref, tr, want, nv);
    if (s == FV_OK) s = read_floats(ctx, tg, got, nv);
    if (s != FV_OK) {
        rg_add(r, "ops", name, RG_FAIL, NAN, NAN, "", "%s: %s", fv_status_name(s), fv_last_error());
    } else {
        size_t bad = 0;
        for (size_t i = 0; i < nv; i++)
            bad += fv_f32_to_f16(want[i]) != fv_f32_to_f16(got[i]) || got[i] != got[i];
        rg_add(r, "ops", name, bad ? RG_FAIL : RG_PASS, (double)bad, 0, "values",
               "%zu of %zu values differ from the FP32 reference rounded to FP16", bad, nv);
    }
    fv_tensor_destroy(tg);
    fv_tensor_destroy(tr);
    fv_tensor_destroy(timg);
    free(img), free(want), free(got);
}

static void unpack_check(rg_report *r, fv_context *ctx, fv_context *ref, int ch, fv_pixel_format f,
                         int absolute) {
    enum { W = 58, H = 30 };
    char name[64];
    snprintf(name, sizeof name, "unpack %d channel%s -> %s%s", ch, ch == 1 ? "" : "s",
             fv_pixel_format_name(f), absolute ? " |x|" : "");
    size_t nv = (size_t)W * H * ch, nb = fv_image_bytes(f, W, H);
    float *vals = malloc(nv * sizeof *vals);
    unsigned char *want = malloc(nb), *got = malloc(nb);
    fv_tensor *tr = NULL, *tg = NULL, *timg = NULL;
    fv_status s = vals && want && got ? FV_OK : FV_ERR_OUT_OF_MEMORY;
    if (s == FV_OK) {
        rg_fill_random(vals, nv, -1.2f, 1.2f); /* past both ends: clamping is checked */
        s = make_filled(ref, FV_DTYPE_F32, H, W, ch, vals, &tr);
    }
    if (s == FV_OK) s = make_filled(ctx, FV_DTYPE_F16, H, W, ch, vals, &tg);
    if (s == FV_OK) s = image_tensor(ctx, nb, NULL, &timg);
    fv_unpack_desc ud = {.absolute = absolute, .scale = 200.0f, .bias = 20.0f};
    fv_image hi = {.format = f, .width = W, .height = H, .data = want};
    fv_image gi = hi;
    if (s == FV_OK) gi.data = fv_tensor_data(timg);
    if (s == FV_OK) s = fv_image_unpack(ref, tr, &hi, &ud);
    if (s == FV_OK) s = fv_image_unpack(ctx, tg, &gi, &ud);
    if (s == FV_OK) s = fv_tensor_download(ctx, timg, got, nb);
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    if (s != FV_OK) {
        rg_add(r, "ops", name, RG_FAIL, NAN, NAN, "", "%s: %s", fv_status_name(s), fv_last_error());
    } else {
        size_t bad = 0;
        for (size_t i = 0; i < nb; i++)
            bad += got[i] != want[i];
        rg_add(r, "ops", name, bad ? RG_FAIL : RG_PASS, (double)bad, 0, "bytes",
               "%zu of %zu bytes differ from the FP32 reference", bad, nb);
    }
    fv_tensor_destroy(timg);
    fv_tensor_destroy(tg);
    fv_tensor_destroy(tr);
    free(vals), free(want), free(got);
}

void rg_run_ops(rg_report *r, fv_context *ctx, fv_context *ref) {
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++)
        if (!r->quick || conv_cases[i].quick) conv_check(r, ctx, ref, &conv_cases[i]);
    static const struct {
        fv_pixel_format f;
        int ch;
    } packs[] = {{FV_PIXEL_GRAY8, 1}, {FV_PIXEL_RGB24, 3},  {FV_PIXEL_RGB24, 1},
                 {FV_PIXEL_BGR24, 3}, {FV_PIXEL_RGBA32, 3}, {FV_PIXEL_YUYV, 3},
                 {FV_PIXEL_YUYV, 1},  {FV_PIXEL_NV12, 3}};
    for (size_t i = 0; i < sizeof packs / sizeof packs[0]; i++)
        if (!r->quick || i < 2) pack_check(r, ctx, ref, packs[i].f, packs[i].ch);
    static const struct {
        int ch;
        fv_pixel_format f;
        int absolute;
    } unpacks[] = {{1, FV_PIXEL_GRAY8, 1},
                   {3, FV_PIXEL_RGB24, 0},
                   {3, FV_PIXEL_GRAY8, 0},
                   {1, FV_PIXEL_BGR24, 1},
                   {3, FV_PIXEL_RGBA32, 1}};
    for (size_t i = 0; i < sizeof unpacks / sizeof unpacks[0]; i++)
        if (!r->quick || i < 2)
            unpack_check(r, ctx, ref, unpacks[i].ch, unpacks[i].f, unpacks[i].absolute);
}
