/* ResNet-18, MobileNetV2 and the UNet through the net builder
 * (net_models.h), layer for layer as PyTorch computes them, and the check of
 * a net against a case file. net_models.py defines the same nets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net_models.h"

static const char *const arch_names[FV_MODELS_ARCH_COUNT] = {"resnet18", "mobilenet_v2", "unet"};

const char *fv_models_arch_name(fv_models_arch a) {
    return (unsigned)a < FV_MODELS_ARCH_COUNT ? arch_names[a] : "?";
}

fv_status fv_models_arch_parse(const char *name, fv_models_arch *out) {
    for (int i = 0; name && out && i < FV_MODELS_ARCH_COUNT; i++)
        if (!strcmp(name, arch_names[i])) {
            *out = (fv_models_arch)i;
            return FV_OK;
        }
    return fv_set_error(FV_ERR_BAD_PARAM, "unknown model '%s' (resnet18, mobilenet_v2, unet)",
                        name ? name : "(null)");
}

/* What the builders share: where layers go, where weights come from. */
typedef struct mb {
    fv_net_builder *b;
    const fv_models_file *f;
    const char *arch;
    int layers;
    double macs;
} mb;

/* An SDK call failed: its message, prefixed with the net, the call and the layer. */
static fv_status sdk_fail(const mb *m, fv_status s, const char *call, const char *layer) {
    char what[256];
    snprintf(what, sizeof what, "%s: %s '%s': %s", m->arch, call, layer, fv_status_name(s));
    return fv_error_prefix(s, what);
}

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        fv_status s_ = (expr);                                                                     \
        if (s_ != FV_OK) return s_;                                                                \
    } while (0)

static fv_status weights(const mb *m, const char *layer, const char *what, int nd,
                         const int64_t *want, const float **out) {
    char key[256];
    snprintf(key, sizeof key, "%s.%s", layer, what);
    const fv_models_tensor *t = NULL;
    fv_status s = fv_models_file_get(m->f, key, nd, want, &t);
    if (s != FV_OK) return fv_error_prefix(s, m->arch);
    *out = t->data;
    return FV_OK;
}

static fv_status shape(const mb *m, int t, int *n, int *c, int *h, int *w) {
    fv_status s = fv_net_builder_shape(m->b, t, n, c, h, w);
    return s == FV_OK ? s : sdk_fail(m, s, "fv_net_builder_shape", "?");
}

/* out = act(conv(in) + bias): k outputs, r x r window, pad (r - 1) / 2. */
static fv_status conv(mb *m, const char *name, int in, int k, int r, int stride, int groups,
                      int bias, fv_activation act, int *out) {
    int n, c, h, w;
    TRY(shape(m, in, &n, &c, &h, &w));
    if (c % groups)
        return fv_set_error(FV_ERR_BAD_SHAPE, "%s: conv '%s': %d channels in %d groups", m->arch,
                            name, c, groups);
    const int64_t want[4] = {k, c / groups, r, r};
    const float *wt = NULL, *bs = NULL;
    TRY(weights(m, name, "weight", 4, want, &wt));
    if (bias) TRY(weights(m, name, "bias", 1, want, &bs));
    int p = (r - 1) / 2;
    fv_net_conv_desc d = {.name = name,
                          .k = k,
                          .r = r,
                          .s = r,
                          .stride_h = stride,
                          .stride_w = stride,
                          .groups = groups,
                          .pad = {p, p, p, p},
                          .weights = wt,
                          .bias = bs,
                          .activation = act,
                          .activation_alpha = act == FV_ACT_CLIPPED_RELU ? 6.0f : 0.0f};
    fv_status s = fv_net_add_conv(m->b, &d, in, out);
    if (s != FV_OK) return sdk_fail(m, s, "fv_net_add_conv", name);
    m->layers++;
    int oh, ow;
    TRY(shape(m, *out, NULL, NULL, &oh, &ow));
    m->macs += (double)n * oh * ow * k * (c / groups) * r * r;
    return FV_OK;
}

static fv_status batchnorm(mb *m, const char *name, int in, int *out) {
    int c;
    TRY(shape(m, in, NULL, &c, NULL, NULL));
    const int64_t want[1] = {c};
    const float *g = NULL, *b = NULL, *mean = NULL, *var = NULL;
    TRY(weights(m, name, "weight", 1, want, &g));
    TRY(weights(m, name, "bias", 1, want, &b));
    TRY(weights(m, name, "running_mean", 1, want, &mean));
    TRY(weights(m, name, "running_var", 1, want, &var));
    fv_status s = fv_net_add_batchnorm(m->b, name, in, g, b, mean, var, 1e-5f, out);
    if (s != FV_OK) return sdk_fail(m, s, "fv_net_add_batchnorm", name);
    m->layers++;
    return FV_OK;
}

static fv_status activation(mb *m, const char *name, int in, fv_activation a, int *out) {
    float alpha = a == FV_ACT_CLIPPED_RELU ? 6.0f : 0.0f;
    fv_status s = fv_net_add_activation(m->b, name, in, a, alpha, 0.0f, out);
    if (s != FV_OK) return sdk_fail(m, s, "fv_net_add_activation", name);
    m->layers++;
    return FV_OK;
}

/* conv (no bias) "<conv>", BatchNorm "<bn>", then act (none for IDENTITY)
 * "<act>": PyTorch's Conv2d + BatchNorm2d (+ ReLU / ReLU6). */
static fv_status conv_bn(mb *m, const char *conv_name, const char *bn_name, const char *act_name,
                         int in, int k, int r, int stride, int groups, fv_activation a, int *out) {
    int t;
    TRY(conv(m, conv_name, in, k, r, stride, groups, 0, FV_ACT_IDENTITY, &t));
    TRY(batchnorm(m, bn_name, t, a == FV_ACT_IDENTITY ? out : &t));
    if (a != FV_ACT_IDENTITY) TRY(activation(m, act_name, t, a, out));
    return FV_OK;
}

static fv_status add(mb *m, const char *name, int a, int b, fv_activation act, int *out) {
    fv_status s = fv_net_add_binary(m->b, name, FV_NET_ADD, a, b, act, 0.0f, out);
    if (s != FV_OK) return sdk_fail(m, s, "fv_net_add_binary", name);
    m->layers++;
    return FV_OK;
}

static fv_status maxpool(mb *m, const char *name, int in, int r, int stride, int pad, int *out) {
    fv_net_pool_desc d = {.name = name,
                          .mode = FV_NET_POOL_MAX,
                          .r = r,
                          .s = r,
                          .stride_h = stride,
                          .stride_w = stride,
                          .pad = {pad, pad, pad, pad}};
    fv_status s = fv_net_add_pool(m->b, &d, in, out);
    if (s != FV_OK) return sdk_fail(m, s, "fv_net_add_pool", name);
    m->layers++;
    return FV_OK;
}

/* adaptive_avg_pool2d(1), flatten, Linear "<fc>": logits (N, K). */
static fv_status classifier(mb *m, const char *fc, int in, int *classes, int *out) {
    int n, c, t;
    TRY(shape(m, in, &n, &c, NULL, NULL));
    fv_status s = fv_net_add_global_pool(m->b, "avgpool", in, 1, &t);
    if (s != FV_OK) return sdk_fail(m, s, "fv_net_add_global_pool", "avgpool");
    m->layers++;
    const int64_t want[2] = {-1, c};
    const fv_models_tensor *wt = NULL;
    char key[128];
    snprintf(key, sizeof key, "%s.weight", fc);
    if ((s = fv_models_file_get(m->f, key, 2, want, &wt)) != FV_OK)
        return fv_error_prefix(s, m->arch);
    int k = (int)wt->dims[0];
    const int64_t wb[1] = {k};
    const float *bias = NULL;
    TRY(weights(m, fc, "bias", 1, wb, &bias));
    if ((s = fv_net_add_fc(m->b, fc, t, k, wt->data, bias, FV_ACT_IDENTITY, 0.0f, out)) != FV_OK)
        return sdk_fail(m, s, "fv_net_add_fc", fc);
    m->layers++;
    m->macs += (double)n * k * c;
    *classes = k;
    return FV_OK;
}

/* ---- ResNet-18 --------------------------------------------------------------- */
static fv_status resnet18(mb *m, int x, int *classes, int *out) {
    int y;
    TRY(conv_bn(m, "conv1", "bn1", "relu", x, 64, 7, 2, 1, FV_ACT_RELU, &y));
    TRY(maxpool(m, "maxpool", y, 3, 2, 1, &y));
    int cin = 64;
    for (int l = 1; l <= 4; l++) {
        int ch = 64 << (l - 1);
        for (int blk = 0; blk < 2; blk++) {
            int stride = l > 1 && blk == 0 ? 2 : 1, t, idn = y;
            char p[5][64];
            snprintf(p[0], sizeof p[0], "layer%d.%d.conv1", l, blk);
            snprintf(p[1], sizeof p[1], "layer%d.%d.bn1", l, blk);
            snprintf(p[2], sizeof p[2], "layer%d.%d.relu", l, blk);
            TRY(conv_bn(m, p[0], p[1], p[2], y, ch, 3, stride, 1, FV_ACT_RELU, &t));
            snprintf(p[0], sizeof p[0], "layer%d.%d.conv2", l, blk);
            snprintf(p[1], sizeof p[1], "layer%d.%d.bn2", l, blk);
            TRY(conv_bn(m, p[0], p[1], "", t, ch, 3, 1, 1, FV_ACT_IDENTITY, &t));
            if (stride != 1 || cin != ch) {
                snprintf(p[3], sizeof p[3], "layer%d.%d.downsample.0", l, blk);
                snprintf(p[4], sizeof p[4], "layer%d.%d.downsample.1", l, blk);
                TRY(conv_bn(m, p[3], p[4], "", y, ch, 1, stride, 1, FV_ACT_IDENTITY, &idn));
            }
            snprintf(p[0], sizeof p[0], "layer%d.%d.add", l, blk);
            TRY(add(m, p[0], t, idn, FV_ACT_RELU, &y)); /* out += identity; relu(out) */
            cin = ch;
        }
    }
    return classifier(m, "fc", y, classes, out);
}

/* ---- MobileNetV2 ------------------------------------------------------------- */
static fv_status mobilenet_v2(mb *m, int x, int *classes, int *out) {
    static const int set[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                  {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}}; /* t c n s */
    const fv_activation r6 = FV_ACT_CLIPPED_RELU;
    int y, cin = 32, idx = 1;
    TRY(conv_bn(m, "features.0.0", "features.0.1", "features.0.2", x, 32, 3, 2, 1, r6, &y));
    for (int g = 0; g < 7; g++)
        for (int i = 0; i < set[g][2]; i++, idx++) {
            int t = set[g][0], c = set[g][1], stride = i == 0 ? set[g][3] : 1, hidden = cin * t;
            int h = y, j = 0;
            char a[64], b[64], r[64];
            if (t != 1) { /* expand: 1x1 conv + BN + ReLU6 */
                snprintf(a, sizeof a, "features.%d.conv.0.0", idx);
                snprintf(b, sizeof b, "features.%d.conv.0.1", idx);
                snprintf(r, sizeof r, "features.%d.conv.0.2", idx);
                TRY(conv_bn(m, a, b, r, h, hidden, 1, 1, 1, r6, &h));
                j = 1;
            }
            /* depthwise 3x3 + BN + ReLU6 */
            snprintf(a, sizeof a, "features.%d.conv.%d.0", idx, j);
            snprintf(b, sizeof b, "features.%d.conv.%d.1", idx, j);
            snprintf(r, sizeof r, "features.%d.conv.%d.2", idx, j);
            TRY(conv_bn(m, a, b, r, h, hidden, 3, stride, hidden, r6, &h));
            /* project: 1x1 conv + BN, linear */
            snprintf(a, sizeof a, "features.%d.conv.%d", idx, j + 1);
            snprintf(b, sizeof b, "features.%d.conv.%d", idx, j + 2);
            TRY(conv_bn(m, a, b, "", h, c, 1, 1, 1, FV_ACT_IDENTITY, &h));
            if (stride == 1 && cin == c) { /* x + conv(x) */
                snprintf(a, sizeof a, "features.%d.add", idx);
                TRY(add(m, a, y, h, FV_ACT_IDENTITY, &y));
            } else {
                y = h;
            }
            cin = c;
        }
    TRY(conv_bn(m, "features.18.0", "features.18.1", "features.18.2", y, 1280, 1, 1, 1, r6, &y));
    return classifier(m, "classifier.1", y, classes, out); /* classifier.0: dropout */
}

/* ---- UNet -------------------------------------------------------------------- */
/* "<name>": conv .0, BN .1, ReLU .2, conv .3, BN .4, ReLU .5 */
static fv_status double_conv(mb *m, const char *name, int in, int k, int *out) {
    char c[4][64], r[2][64];
    for (int i = 0; i < 2; i++) {
        snprintf(c[2 * i], sizeof c[0], "%s.%d", name, 3 * i);
        snprintf(c[2 * i + 1], sizeof c[0], "%s.%d", name, 3 * i + 1);
        snprintf(r[i], sizeof r[0], "%s.%d", name, 3 * i + 2);
    }
    int t;
    TRY(conv_bn(m, c[0], c[1], r[0], in, k, 3, 1, 1, FV_ACT_RELU, &t));
    return conv_bn(m, c[2], c[3], r[1], t, k, 3, 1, 1, FV_ACT_RELU, out);
}

/* cat([upsample_bilinear_x2(low), skip], C), then double_conv "<name>". */
static fv_status up_block(mb *m, const char *name, int low, int skip, int k, int *out) {
    int h, w, u, cat;
    char nm[64];
    TRY(shape(m, low, NULL, NULL, &h, &w));
    snprintf(nm, sizeof nm, "%s.up", name);
    fv_net_resize_desc rd = {.name = nm,
                             .mode = FV_NET_RESIZE_BILINEAR,
                             .coord = FV_NET_COORD_HALF_PIXEL, /* align_corners=False */
                             .out_h = 2 * h,
                             .out_w = 2 * w};
    fv_status s = fv_net_add_resize(m->b, &rd, low, &u);
    if (s != FV_OK) return sdk_fail(m, s, "fv_net_add_resize", nm);
    m->layers++;
    snprintf(nm, sizeof nm, "%s.cat", name);
    const int parts[2] = {u, skip};
    if ((s = fv_net_add_concat(m->b, nm, parts, 2, &cat)) != FV_OK)
        return sdk_fail(m, s, "fv_net_add_concat", nm);
    m->layers++;
    return double_conv(m, name, cat, k, out);
}

static fv_status unet(mb *m, int x, int *classes, int *width, int *out) {
    const fv_models_tensor *t = NULL;
    const int64_t any4[4] = {-1, 3, 3, 3};
    fv_status s = fv_models_file_get(m->f, "enc1.0.weight", 4, any4, &t);
    if (s != FV_OK) return fv_error_prefix(s, m->arch);
    int b = (int)t->dims[0];
    if (b > 4096)
        return fv_set_error(FV_ERR_BAD_SHAPE, "unet: a base width of %d (enc1.0.weight)", b);
    int e1, e2, e3, mid, d, p;
    TRY(double_conv(m, "enc1", x, b, &e1));
    TRY(maxpool(m, "pool1", e1, 2, 2, 0, &p));
    TRY(double_conv(m, "enc2", p, 2 * b, &e2));
    TRY(maxpool(m, "pool2", e2, 2, 2, 0, &p));
    TRY(double_conv(m, "enc3", p, 4 * b, &e3));
    TRY(maxpool(m, "pool3", e3, 2, 2, 0, &p));
    TRY(double_conv(m, "bottleneck", p, 8 * b, &mid));
    TRY(up_block(m, "dec3", mid, e3, 4 * b, &d));
    TRY(up_block(m, "dec2", d, e2, 2 * b, &d));
    TRY(up_block(m, "dec1", d, e1, b, &d));
    const int64_t head[4] = {-1, b, 1, 1};
    if ((s = fv_models_file_get(m->f, "head.weight", 4, head, &t)) != FV_OK)
        return fv_error_prefix(s, m->arch);
    *classes = (int)t->dims[0];
    *width = b;
    return conv(m, "head", d, *classes, 1, 1, 1, 1, FV_ACT_IDENTITY, out);
}

fv_status fv_models_build(fv_net_builder *b, fv_models_arch arch, const fv_models_file *wts, int n,
                          int h, int w, fv_models_net *info) {
    if (!b || !wts || (unsigned)arch >= FV_MODELS_ARCH_COUNT)
        return fv_set_error(FV_ERR_BAD_PARAM, "fv_models_build: %s",
                            !b     ? "builder NULL"
                            : !wts ? "weights NULL"
                                   : "unknown arch");
    const char *name = fv_models_arch_name(arch);
    if (n < 1 || h < 1 || w < 1 || n > 4096 || h > 4096 || w > 4096)
        return fv_set_error(FV_ERR_BAD_PARAM, "%s: batch %d, size %dx%d: each 1 .. 4096", name, n,
                            h, w);
    if (arch == FV_MODELS_UNET && (h % 8 || w % 8))
        return fv_set_error(FV_ERR_BAD_PARAM,
                            "unet: size %dx%d: height and width must divide by 8 (three 2x2 "
                            "poolings, then three x2 upsamplings back to the skips)",
                            h, w);
    mb m = {.b = b, .f = wts, .arch = name};
    int x, y, classes = 0, width = 0;
    fv_status s = fv_net_add_input(b, "image", n, 3, h, w, &x);
    if (s != FV_OK) return sdk_fail(&m, s, "fv_net_add_input", "image");
    if (arch == FV_MODELS_RESNET18)
        s = resnet18(&m, x, &classes, &y);
    else if (arch == FV_MODELS_MOBILENET_V2)
        s = mobilenet_v2(&m, x, &classes, &y);
    else
        s = unet(&m, x, &classes, &width, &y);
    if (s != FV_OK) return s;
    const char *out_name = arch == FV_MODELS_UNET ? "segmentation" : "logits";
    if ((s = fv_net_mark_output(b, y, out_name)) != FV_OK)
        return sdk_fail(&m, s, "fv_net_mark_output", out_name);
    if (info) {
        memset(info, 0, sizeof *info);
        info->input = x;
        info->output = y;
        TRY(shape(&m, y, NULL, &info->out_c, &info->out_h, &info->out_w));
        info->classes = classes;
        info->width = width;
        info->layers = m.layers;
        info->gmacs = m.macs * 1e-9;
    }
    return FV_OK;
}

fv_status fv_models_net_create(fv_context *ctx, fv_models_arch arch, const fv_models_file *wts,
                               int n, int h, int w, const fv_net_desc *desc, fv_net **out,
                               fv_models_net *info) {
    if (!ctx || !out) return fv_set_error(FV_ERR_BAD_PARAM, "fv_models_net_create: NULL");
    *out = NULL;
    fv_net_builder *b = NULL;
    fv_status s = fv_net_builder_create(&b);
    if (s != FV_OK) return fv_error_prefix(s, "fv_net_builder_create");
    s = fv_models_build(b, arch, wts, n, h, w, info);
    if (s == FV_OK && (s = fv_net_create(ctx, b, desc, out)) != FV_OK) {
        char what[96];
        snprintf(what, sizeof what, "%s: fv_net_create: %s", fv_models_arch_name(arch),
                 fv_status_name(s));
        fv_error_prefix(s, what);
    }
    fv_net_builder_destroy(b);
    return s;
}

/* ---- checking ------------------------------------------------------------------ */
void fv_models_nchw_to_nhwc(const float *src, int n, int c, int h, int w, float *dst) {
    size_t hw = (size_t)h * w;
    for (int b = 0; b < n; b++)
        for (int ch = 0; ch < c; ch++) {
            const float *s = src + ((size_t)b * c + ch) * hw;
            float *d = dst + (size_t)b * hw * c + ch;
            for (size_t i = 0; i < hw; i++)
                d[i * c] = s[i];
        }
}

void fv_models_nhwc_to_nchw(const float *src, int n, int c, int h, int w, float *dst) {
    size_t hw = (size_t)h * w;
    for (int b = 0; b < n; b++)
        for (int ch = 0; ch < c; ch++) {
            const float *s = src + (size_t)b * hw * c + ch;
            float *d = dst + ((size_t)b * c + ch) * hw;
            for (size_t i = 0; i < hw; i++)
                d[i] = s[i * c];
        }
}

fv_status fv_models_check_io(fv_net *net, const fv_models_file *io, fv_models_check *out) {
    if (!net || !io || !out) return fv_set_error(FV_ERR_BAD_PARAM, "fv_models_check_io: NULL");
    memset(out, 0, sizeof *out);
    fv_tensor_shape si, so;
    fv_tensor *ti = fv_net_input(net, 0), *to = fv_net_output(net, 0);
    if (!ti || !to) return fv_set_error(FV_ERR_BAD_PARAM, "fv_models_check_io: no input/output");
    fv_status s = fv_tensor_shape_get(ti, &si);
    if (s == FV_OK) s = fv_tensor_shape_get(to, &so);
    if (s != FV_OK) return fv_error_prefix(s, "fv_models_check_io: fv_tensor_shape_get");
    const int64_t win[4] = {si.n, si.c, si.h, si.w};
    const int64_t wout4[4] = {so.n, so.c, so.h, so.w}, wout2[2] = {so.n, so.c};
    const fv_models_tensor *x = NULL, *ref = NULL;
    if ((s = fv_models_file_get(io, "input", 4, win, &x)) != FV_OK) return s;
    int flat = so.h == 1 && so.w == 1;
    if ((s = fv_models_file_get(io, "output", flat ? 2 : 4, flat ? wout2 : wout4, &ref)) != FV_OK)
        return s;
    size_t nin = x->count, nout = ref->count;
    float *buf = malloc(sizeof *buf * (nin > nout ? nin : nout)), *y = malloc(sizeof *y * nout * 2);
    if (!buf || !y) {
        free(buf);
        free(y);
        return fv_set_error(FV_ERR_OUT_OF_MEMORY, "fv_models_check_io: no memory");
    }
    fv_models_nchw_to_nhwc(x->data, si.n, si.c, si.h, si.w, buf);
    const char *call = "fv_net_input_upload";
    s = fv_net_input_upload(net, 0, buf, nin);
    if (s == FV_OK) call = "fv_net_forward", s = fv_net_forward(net);
    if (s == FV_OK) call = "fv_net_output_download", s = fv_net_output_download(net, 0, y, nout);
    if (s != FV_OK) {
        char what[96];
        snprintf(what, sizeof what, "fv_models_check_io: %s: %s", call, fv_status_name(s));
        fv_error_prefix(s, what);
    } else {
        float *yc = y + nout;
        fv_models_nhwc_to_nchw(y, so.n, so.c, so.h, so.w, yc);
        double num = 0, den = 0, mx = 0, mxe = 0;
        int finite = 1;
        for (size_t i = 0; i < nout; i++) {
            double a = yc[i], b = ref->data[i], d = a - b;
            finite &= isfinite(a) != 0;
            num += d * d, den += b * b;
            mx = fmax(mx, fabs(a)), mxe = fmax(mxe, fabs(d));
        }
        out->rel_l2 = !finite ? INFINITY : den > 0 ? sqrt(num / den) : sqrt(num);
        out->max_abs_err = finite ? mxe : INFINITY;
        out->max_abs = finite ? mx : INFINITY;
        out->ref_rms = sqrt(den / (double)nout);
        out->count = nout;
    }
    free(buf);
    free(y);
    return s;
}
