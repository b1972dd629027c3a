/* fv_net_builder: layers recorded with copies of their weights, shapes
 * inferred as they are added. Nothing here touches a context. */
#include <math.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net_internal.h"

const char *fv__lkind_name(fv__lkind k, const fv__blayer *l) {
    static const char *names[FV__L_KINDS] = {
        "input", "conv",    "conv_transpose", "batchnorm", "act",     "binary", "affine", "pool",
        "gpool", "softmax", "concat",         "slice",     "reshape", "pad",    "resize"};
    if (l && l->is_fc) return "fc";
    return (int)k >= 0 && k < FV__L_KINDS ? names[k] : "?";
}

fv_status fv_net_builder_create(fv_net_builder **out) {
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_net_builder_create: out is NULL");
    *out = calloc(1, sizeof **out);
    FV_REQUIRE(*out, FV_ERR_OUT_OF_MEMORY, "fv_net_builder_create: out of host memory");
    return FV_OK;
}

/* A layer's float arrays (weights, bias, per-channel values) never change
 * once added, so a net's copy of its builder shares them: a reference count
 * sits in front of each. fv_net_create copied ResNet-18's 47 MB instead,
 * 25-35 ms of a cold start. Atomic: a net and its builder may be destroyed
 * on two threads. */
typedef struct {
    alignas(16) atomic_long refs;
} shared_floats;

static shared_floats *shared_of(float *p) {
    return (shared_floats *)(void *)((unsigned char *)p - sizeof(shared_floats));
}

static float *floats_new(size_t n) {
    if (n > (SIZE_MAX - sizeof(shared_floats)) / sizeof(float)) return NULL;
    shared_floats *h = malloc(sizeof *h + n * sizeof(float));
    if (!h) return NULL;
    atomic_init(&h->refs, 1);
    return (float *)(void *)(h + 1);
}

static float *floats_share(float *p) {
    if (p) atomic_fetch_add_explicit(&shared_of(p)->refs, 1, memory_order_relaxed);
    return p;
}

static void floats_release(float *p) {
    if (p && atomic_fetch_sub_explicit(&shared_of(p)->refs, 1, memory_order_acq_rel) == 1)
        free(shared_of(p));
}

static void layer_free(fv__blayer *l) {
    free(l->in);
    floats_release(l->w);
    floats_release(l->bias);
    for (int i = 0; i < 4; i++)
        floats_release(l->v[i]);
}

void fv_net_builder_destroy(fv_net_builder *b) {
    if (!b) return;
    for (int i = 0; i < b->nlayers; i++)
        layer_free(&b->layers[i]);
    free(b->layers);
    free(b->tensors);
    free(b->outputs);
    free(b->output_names);
    free(b);
}

static float *dup_floats(const float *src, size_t n) {
    if (!src || n == 0) return NULL;
    float *p = floats_new(n);
    if (p) memcpy(p, src, n * sizeof *p);
    return p;
}

fv_status fv__net_builder_clone(const fv_net_builder *b, fv_net_builder **out) {
    *out = NULL;
    fv_net_builder *c = calloc(1, sizeof *c);
    FV_REQUIRE(c, FV_ERR_OUT_OF_MEMORY, "fv_net_create: out of host memory");
    c->layers = calloc((size_t)b->nlayers + 1, sizeof *c->layers);
    c->tensors = calloc((size_t)b->ntensors + 1, sizeof *c->tensors);
    c->outputs = calloc((size_t)b->noutputs + 1, sizeof *c->outputs);
    c->output_names = calloc((size_t)b->noutputs + 1, sizeof *c->output_names);
    int ok = c->layers && c->tensors && c->outputs && c->output_names;
    for (int i = 0; ok && i < b->nlayers; i++) {
        const fv__blayer *s = &b->layers[i];
        fv__blayer *d = &c->layers[i];
        *d = *s;
        d->in = NULL, d->w = NULL, d->bias = NULL;
        memset(d->v, 0, sizeof d->v);
        c->nlayers = i + 1;
        d->in = malloc(sizeof(int) * (size_t)(s->nin ? s->nin : 1));
        ok = d->in != NULL;
        if (ok && s->nin > 0) memcpy(d->in, s->in, sizeof(int) * (size_t)s->nin);
        if (ok) {
            d->w = floats_share(s->w), d->bias = floats_share(s->bias);
            for (int j = 0; j < 4; j++)
                d->v[j] = floats_share(s->v[j]);
        }
    }
    if (!ok) {
        fv_net_builder_destroy(c);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "fv_net_create: out of host memory");
    }
    memcpy(c->tensors, b->tensors, sizeof *b->tensors * (size_t)b->ntensors);
    memcpy(c->outputs, b->outputs, sizeof *b->outputs * (size_t)b->noutputs);
    memcpy(c->output_names, b->output_names, sizeof *b->output_names * (size_t)b->noutputs);
    c->ntensors = b->ntensors, c->ninputs = b->ninputs, c->noutputs = b->noutputs;
    c->cap_layers = c->nlayers, c->cap_tensors = c->ntensors, c->cap_outputs = c->noutputs;
    *out = c;
    return FV_OK;
}

int fv_net_builder_tensor_count(const fv_net_builder *b) {
    return b ? b->ntensors : 0;
}

fv_status fv_net_builder_shape(const fv_net_builder *b, int t, int *n, int *c, int *h, int *w) {
    FV_REQUIRE(b, FV_ERR_BAD_PARAM, "fv_net_builder_shape: builder is NULL");
    FV_REQUIRE(t >= 0 && t < b->ntensors, FV_ERR_BAD_PARAM,
               "fv_net_builder_shape: tensor id %d is unknown (the builder has %d)", t,
               b->ntensors);
    const fv__btensor *s = &b->tensors[t];
    if (n) *n = s->n;
    if (c) *c = s->c;
    if (h) *h = s->h;
    if (w) *w = s->w;
    return FV_OK;
}

/* ---- adding layers ---------------------------------------------------------
 * Each add: name the layer, check the inputs, infer the output shape, then
 * commit (copies made first, so a failure leaves the builder unchanged). */

typedef struct pending {
    fv_net_builder *b;
    fv__blayer l;
    const char *what; /* "conv 'name'" for messages */
    char what_buf[96];
} pending;

static fv_status begin(pending *p, fv_net_builder *b, fv__lkind kind, const char *name,
                       const char *api) {
    memset(p, 0, sizeof *p);
    FV_REQUIRE(b, FV_ERR_BAD_PARAM, "%s: builder is NULL", api);
    FV_REQUIRE(b->nlayers < FV_NET_MAX_LAYERS, FV_ERR_BAD_PARAM,
               "%s: the builder already has %d layers (the most)", api, FV_NET_MAX_LAYERS);
    p->b = b;
    p->l.kind = kind;
    if (name && name[0])
        snprintf(p->l.name, sizeof p->l.name, "%s", name);
    else
        snprintf(p->l.name, sizeof p->l.name, "%s%d", fv__lkind_name(kind, NULL), b->nlayers);
    snprintf(p->what_buf, sizeof p->what_buf, "%s '%s'", fv__lkind_name(kind, NULL), p->l.name);
    p->what = p->what_buf;
    return FV_OK;
}

static fv_status input_ok(const pending *p, int t, const char *role) {
    FV_REQUIRE(t >= 0 && t < p->b->ntensors, FV_ERR_BAD_PARAM,
               "%s: %s tensor id %d is unknown (the builder has %d tensors)", p->what, role, t,
               p->b->ntensors);
    return FV_OK;
}

static const fv__btensor *shape_of(const pending *p, int t) {
    return &p->b->tensors[t];
}

static fv_status dims_ok(const pending *p, int n, int c, int h, int w) {
    FV_REQUIRE(n >= 1 && c >= 1 && h >= 1 && w >= 1 && n <= FV_NET_MAX_DIM && c <= FV_NET_MAX_DIM &&
                   h <= FV_NET_MAX_DIM && w <= FV_NET_MAX_DIM,
               FV_ERR_BAD_SHAPE, "%s: output N=%d C=%d H=%d W=%d: every dimension must be 1 .. %d",
               p->what, n, c, h, w, FV_NET_MAX_DIM);
    FV_REQUIRE((double)n * c * h * w <= 4294967296.0, FV_ERR_BAD_SHAPE,
               "%s: output N=%d C=%d H=%d W=%d has more than 2^32 elements", p->what, n, c, h, w);
    return FV_OK;
}

static fv_status set_inputs(pending *p, const int *in, int nin) {
    p->l.in = malloc(sizeof(int) * (size_t)(nin ? nin : 1));
    FV_REQUIRE(p->l.in, FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", p->what);
    if (nin > 0) memcpy(p->l.in, in, sizeof(int) * (size_t)nin);
    p->l.nin = nin;
    return FV_OK;
}

static fv_status grow(void **ptr, int *cap, int need, size_t elem) {
    if (need <= *cap) return FV_OK;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*ptr, elem * (size_t)nc);
    FV_REQUIRE(q, FV_ERR_OUT_OF_MEMORY, "fv_net_builder: out of host memory");
    *ptr = q;
    *cap = nc;
    return FV_OK;
}

/* Appends the layer and its output tensor; frees the pending copies on failure. */
static fv_status commit(pending *p, int n, int c, int h, int w, int *out) {
    fv_status s = dims_ok(p, n, c, h, w);
    fv_net_builder *b = p->b;
    if (s == FV_OK)
        s = grow((void **)&b->layers, &b->cap_layers, b->nlayers + 1, sizeof *b->layers);
    if (s == FV_OK)
        s = grow((void **)&b->tensors, &b->cap_tensors, b->ntensors + 1, sizeof *b->tensors);
    if (s != FV_OK) {
        layer_free(&p->l);
        return s;
    }
    p->l.out = b->ntensors;
    b->tensors[b->ntensors++] =
        (fv__btensor){.n = n, .c = c, .h = h, .w = w, .producer = b->nlayers};
    b->layers[b->nlayers++] = p->l;
    if (p->l.kind == FV__L_INPUT) b->ninputs++;
    *out = p->l.out;
    return FV_OK;
}

static fv_status fail(pending *p, fv_status s) {
    layer_free(&p->l);
    return s;
}

#define TRY_P(p, expr)                                                                             \
    do {                                                                                           \
        fv_status s_ = (expr);                                                                     \
        if (s_ != FV_OK) return fail((p), s_);                                                     \
    } while (0)

static fv_status out_ptr(int *out, const char *api) {
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "%s: out is NULL", api);
    *out = -1;
    return FV_OK;
}

static fv_status finite_all(const pending *p, const float *x, size_t n, const char *what) {
    /* a block at a time without a branch (the compiler vectorizes it: a
     * ResNet-18's 11.7M weights took 20 ms one isfinite at a time), then
     * the first bad index where a block has one */
    for (size_t i0 = 0; i0 < n; i0 += 4096) {
        size_t m = n - i0 < 4096 ? n - i0 : 4096;
        uint32_t bad = 0;
        for (size_t i = 0; i < m; i++) {
            uint32_t u;
            memcpy(&u, &x[i0 + i], sizeof u);
            bad |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
        }
        if (!bad) continue;
        for (size_t i = i0; i < i0 + m; i++)
            FV_REQUIRE(isfinite(x[i]), FV_ERR_BAD_PARAM, "%s: %s[%zu] is not finite", p->what, what,
                       i);
    }
    return FV_OK;
}

static bool act_known(int a) {
    return a >= FV_ACT_IDENTITY && a <= FV_ACT_SILU;
}

static fv_status act_set(pending *p, fv_activation act, float alpha, float beta) {
    FV_REQUIRE(act_known((int)act), FV_ERR_BAD_PARAM, "%s: activation %d is unknown", p->what,
               (int)act);
    FV_REQUIRE(isfinite(alpha) && isfinite(beta), FV_ERR_BAD_PARAM,
               "%s: activation alpha/beta not finite", p->what);
    p->l.act = (int)act;
    p->l.alpha = fv__activation_alpha(act, alpha);
    p->l.beta = act == FV_ACT_HARD_SIGMOID && beta == 0.0f ? 0.5f : beta;
    return FV_OK;
}

fv_status fv_net_add_input(fv_net_builder *b, const char *name, int n, int c, int h, int w,
                           int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_input"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_INPUT, name, "fv_net_add_input"));
    if (!(name && name[0])) snprintf(p.l.name, sizeof p.l.name, "input%d", b->ninputs);
    TRY_P(&p, set_inputs(&p, NULL, 0));
    return commit(&p, n, c, h, w, out);
}

fv_status fv_net_mark_output(fv_net_builder *b, int t, const char *name) {
    FV_REQUIRE(b, FV_ERR_BAD_PARAM, "fv_net_mark_output: builder is NULL");
    FV_REQUIRE(t >= 0 && t < b->ntensors, FV_ERR_BAD_PARAM,
               "fv_net_mark_output: tensor id %d is unknown (the builder has %d tensors)", t,
               b->ntensors);
    FV_REQUIRE(b->layers[b->tensors[t].producer].kind != FV__L_INPUT, FV_ERR_BAD_PARAM,
               "fv_net_mark_output: tensor %d is the input '%s': an input cannot be an output", t,
               b->layers[b->tensors[t].producer].name);
    for (int i = 0; i < b->noutputs; i++)
        FV_REQUIRE(b->outputs[i] != t, FV_ERR_BAD_PARAM,
                   "fv_net_mark_output: tensor %d is already output '%s'", t, b->output_names[i]);
    int cap = b->cap_outputs;
    FV_TRY(grow((void **)&b->outputs, &cap, b->noutputs + 1, sizeof *b->outputs));
    cap = b->cap_outputs;
    FV_TRY(grow((void **)&b->output_names, &cap, b->noutputs + 1, sizeof *b->output_names));
    b->cap_outputs = cap;
    b->outputs[b->noutputs] = t;
    if (name && name[0])
        snprintf(b->output_names[b->noutputs], 64, "%s", name);
    else
        snprintf(b->output_names[b->noutputs], 64, "output%d", b->noutputs);
    b->noutputs++;
    return FV_OK;
}

/* ---- convolutions ----------------------------------------------------------- */
static fv_status conv_common(pending *p, const fv_net_conv_desc *d, int in, int transpose,
                             int *out) {
    FV_REQUIRE(d, FV_ERR_BAD_PARAM, "%s: desc is NULL", p->what);
    TRY_P(p, input_ok(p, in, "input"));
    const fv__btensor *x = shape_of(p, in);
    fv__blayer *l = &p->l;
    l->k = d->k, l->r = d->r, l->s = d->s;
    l->stride_h = d->stride_h ? d->stride_h : 1;
    l->stride_w = d->stride_w ? d->stride_w : 1;
    l->dil_h = d->dilation_h ? d->dilation_h : 1;
    l->dil_w = d->dilation_w ? d->dilation_w : 1;
    l->groups = d->groups ? d->groups : 1;
    FV_REQUIRE(d->k >= 1 && d->k <= FV_NET_MAX_DIM, FV_ERR_BAD_PARAM, "%s: K=%d output channels",
               p->what, d->k);
    FV_REQUIRE(d->r >= 1 && d->s >= 1 && d->r <= 1024 && d->s <= 1024, FV_ERR_BAD_PARAM,
               "%s: kernel %dx%d", p->what, d->r, d->s);
    FV_REQUIRE(l->stride_h >= 1 && l->stride_w >= 1 && l->dil_h >= 1 && l->dil_w >= 1 &&
                   l->stride_h <= 1024 && l->stride_w <= 1024 && l->dil_h <= 1024 &&
                   l->dil_w <= 1024,
               FV_ERR_BAD_PARAM, "%s: stride %dx%d, dilation %dx%d: each must be 1 .. 1024",
               p->what, l->stride_h, l->stride_w, l->dil_h, l->dil_w);
    FV_REQUIRE(l->groups >= 1 && x->c % l->groups == 0 && d->k % l->groups == 0, FV_ERR_BAD_SHAPE,
               "%s: groups=%d must divide input C=%d and K=%d", p->what, l->groups, x->c, d->k);
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(d->pad[i] >= 0 && d->pad[i] <= 4096, FV_ERR_BAD_PARAM,
                   "%s: pad[%d]=%d must be 0 .. 4096", p->what, i, d->pad[i]);
    FV_REQUIRE(d->weights, FV_ERR_BAD_PARAM, "%s: weights are NULL", p->what);
    TRY_P(p, act_set(p, d->activation, d->activation_alpha, d->activation_beta));
    int oh, ow;
    size_t nw;
    if (!transpose) {
        FV_REQUIRE(d->pad[0] == d->pad[2] && d->pad[1] == d->pad[3], FV_ERR_INTERNAL,
                   "%s: asymmetric padding reached conv_common", p->what);
        l->pad_h = d->pad[0], l->pad_w = d->pad[1];
        oh = fv_conv_output_dim(x->h, d->r, l->stride_h, l->pad_h, l->dil_h);
        ow = fv_conv_output_dim(x->w, d->s, l->stride_w, l->pad_w, l->dil_w);
        FV_REQUIRE(oh >= 1 && ow >= 1, FV_ERR_BAD_SHAPE,
                   "%s: a %dx%d kernel (dilation %dx%d) does not fit the %dx%d input padded by "
                   "%d,%d,%d,%d",
                   p->what, d->r, d->s, l->dil_h, l->dil_w, x->h, x->w, d->pad[0], d->pad[1],
                   d->pad[2], d->pad[3]);
        nw = (size_t)d->k * (size_t)(x->c / l->groups) * (size_t)d->r * (size_t)d->s;
    } else {
        FV_REQUIRE(d->output_pad_h >= 0 && d->output_pad_w >= 0 &&
                       (d->output_pad_h < l->stride_h || d->output_pad_h < l->dil_h) &&
                       (d->output_pad_w < l->stride_w || d->output_pad_w < l->dil_w),
                   FV_ERR_BAD_PARAM, "%s: output padding %dx%d must be below the stride %dx%d",
                   p->what, d->output_pad_h, d->output_pad_w, l->stride_h, l->stride_w);
        l->pad[0] = d->pad[0], l->pad[1] = d->pad[1], l->pad[2] = d->pad[2], l->pad[3] = d->pad[3];
        l->opad_h = d->output_pad_h, l->opad_w = d->output_pad_w;
        long h = (long)(x->h - 1) * l->stride_h - d->pad[0] - d->pad[2] +
                 (long)l->dil_h * (d->r - 1) + d->output_pad_h + 1;
        long w = (long)(x->w - 1) * l->stride_w - d->pad[1] - d->pad[3] +
                 (long)l->dil_w * (d->s - 1) + d->output_pad_w + 1;
        FV_REQUIRE(h >= 1 && w >= 1 && h <= FV_NET_MAX_DIM && w <= FV_NET_MAX_DIM, FV_ERR_BAD_SHAPE,
                   "%s: output %ldx%ld from a %dx%d input (padding too large?)", p->what, h, w,
                   x->h, x->w);
        oh = (int)h, ow = (int)w;
        nw = (size_t)x->c * (size_t)(d->k / l->groups) * (size_t)d->r * (size_t)d->s;
    }
    l->nw = nw;
    TRY_P(p, finite_all(p, d->weights, nw, "weights"));
    if (d->bias) TRY_P(p, finite_all(p, d->bias, (size_t)d->k, "bias"));
    TRY_P(p, set_inputs(p, &in, 1));
    l->w = dup_floats(d->weights, nw);
    if (d->bias) l->bias = dup_floats(d->bias, (size_t)d->k);
    if (!l->w || (d->bias && !l->bias))
        return fail(p, fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", p->what));
    return commit(p, x->n, d->k, oh, ow, out);
}

fv_status fv_net_add_conv(fv_net_builder *b, const fv_net_conv_desc *d, int in, int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_conv"));
    FV_REQUIRE(d, FV_ERR_BAD_PARAM, "fv_net_add_conv: desc is NULL");
    if (d->pad[0] != d->pad[2] || d->pad[1] != d->pad[3]) {
        /* the engines take symmetric padding: a zero pad layer in front */
        char name[64];
        snprintf(name, sizeof name, "%.56s.pad", d->name ? d->name : "conv");
        int padded;
        FV_TRY(fv_net_add_pad(b, name, in, d->pad, 0.0f, &padded));
        fv_net_conv_desc d2 = *d;
        memset(d2.pad, 0, sizeof d2.pad);
        fv_status s = fv_net_add_conv(b, &d2, padded, out);
        if (s != FV_OK) { /* drop the pad layer: the builder stays as it was */
            b->nlayers--, b->ntensors--;
            layer_free(&b->layers[b->nlayers]);
        }
        return s;
    }
    pending p;
    FV_TRY(begin(&p, b, FV__L_CONV, d->name, "fv_net_add_conv"));
    return conv_common(&p, d, in, 0, out);
}

fv_status fv_net_add_conv_transpose(fv_net_builder *b, const fv_net_conv_desc *d, int in,
                                    int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_conv_transpose"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_CONVT, d ? d->name : NULL, "fv_net_add_conv_transpose"));
    return conv_common(&p, d, in, 1, out);
}

fv_status fv_net_add_fc(fv_net_builder *b, const char *name, int in, int k, const float *weights,
                        const float *bias, fv_activation act, float act_alpha, int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_fc"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_CONV, name, "fv_net_add_fc"));
    snprintf(p.what_buf, sizeof p.what_buf, "fc '%s'", p.l.name);
    p.l.is_fc = 1;
    TRY_P(&p, input_ok(&p, in, "input"));
    const fv__btensor *x = shape_of(&p, in);
    /* nn.Linear's K x (C*H*W) in (C, H, W) order is a K x C x H x W kernel */
    fv_net_conv_desc d = {.k = k,
                          .r = x->h,
                          .s = x->w,
                          .weights = weights,
                          .bias = bias,
                          .activation = act,
                          .activation_alpha = act_alpha};
    return conv_common(&p, &d, in, 0, out);
}

/* ---- normalization and elementwise ------------------------------------------- */
fv_status fv_net_add_batchnorm(fv_net_builder *b, const char *name, int in, const float *gamma,
                               const float *beta, const float *mean, const float *var, float eps,
                               int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_batchnorm"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_BN, name, "fv_net_add_batchnorm"));
    TRY_P(&p, input_ok(&p, in, "input"));
    const fv__btensor *x = shape_of(&p, in);
    FV_REQUIRE(gamma && beta && mean && var, FV_ERR_BAD_PARAM,
               "%s: gamma, beta, mean and var are all required", p.what);
    FV_REQUIRE(isfinite(eps) && eps >= 0.0f, FV_ERR_BAD_PARAM, "%s: eps %g must be >= 0", p.what,
               (double)eps);
    const float *src[4] = {gamma, beta, mean, var};
    const char *nm[4] = {"gamma", "beta", "mean", "var"};
    for (int i = 0; i < 4; i++)
        TRY_P(&p, finite_all(&p, src[i], (size_t)x->c, nm[i]));
    for (int c = 0; c < x->c; c++)
        FV_REQUIRE(var[c] + eps > 0.0f, FV_ERR_BAD_PARAM, "%s: var[%d] + eps = %g is not > 0",
                   p.what, c, (double)(var[c] + eps));
    p.l.count = x->c;
    p.l.eps = eps;
    TRY_P(&p, set_inputs(&p, &in, 1));
    for (int i = 0; i < 4; i++)
        if (!(p.l.v[i] = dup_floats(src[i], (size_t)x->c)))
            return fail(&p, fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", p.what));
    return commit(&p, x->n, x->c, x->h, x->w, out);
}

fv_status fv_net_add_activation(fv_net_builder *b, const char *name, int in, fv_activation act,
                                float alpha, float beta, int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_activation"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_ACT, name, "fv_net_add_activation"));
    TRY_P(&p, input_ok(&p, in, "input"));
    TRY_P(&p, act_set(&p, act, alpha, beta));
    const fv__btensor *x = shape_of(&p, in);
    TRY_P(&p, set_inputs(&p, &in, 1));
    return commit(&p, x->n, x->c, x->h, x->w, out);
}

static int bcast(int a, int b, int *o) {
    if (a == b || b == 1) return *o = a, 1;
    if (a == 1) return *o = b, 1;
    return 0;
}

fv_status fv_net_add_binary(fv_net_builder *b, const char *name, fv_net_binary_op op, int a, int bt,
                            fv_activation act, float act_alpha, int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_binary"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_BINARY, name, "fv_net_add_binary"));
    FV_REQUIRE((int)op >= FV_NET_ADD && (int)op <= FV_NET_DIV, FV_ERR_BAD_PARAM,
               "%s: op %d is unknown", p.what, (int)op);
    TRY_P(&p, input_ok(&p, a, "first"));
    TRY_P(&p, input_ok(&p, bt, "second"));
    TRY_P(&p, act_set(&p, act, act_alpha, 0.0f));
    const fv__btensor *x = shape_of(&p, a), *y = shape_of(&p, bt);
    int n, c, h, w;
    FV_REQUIRE(bcast(x->n, y->n, &n) && bcast(x->c, y->c, &c) && bcast(x->h, y->h, &h) &&
                   bcast(x->w, y->w, &w),
               FV_ERR_BAD_SHAPE,
               "%s: shapes N=%d C=%d H=%d W=%d and N=%d C=%d H=%d W=%d do not broadcast", p.what,
               x->n, x->c, x->h, x->w, y->n, y->c, y->h, y->w);
    p.l.op = (int)op;
    int ins[2] = {a, bt};
    TRY_P(&p, set_inputs(&p, ins, 2));
    return commit(&p, n, c, h, w, out);
}

fv_status fv_net_add_affine(fv_net_builder *b, const char *name, int in, const float *scale,
                            const float *shift, int count, int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_affine"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_AFFINE, name, "fv_net_add_affine"));
    TRY_P(&p, input_ok(&p, in, "input"));
    const fv__btensor *x = shape_of(&p, in);
    FV_REQUIRE(count == 1 || count == x->c, FV_ERR_BAD_SHAPE,
               "%s: %d values, but the input has C=%d (give C values or 1)", p.what, count, x->c);
    if (scale) TRY_P(&p, finite_all(&p, scale, (size_t)count, "scale"));
    if (shift) TRY_P(&p, finite_all(&p, shift, (size_t)count, "shift"));
    p.l.count = count;
    TRY_P(&p, set_inputs(&p, &in, 1));
    p.l.v[0] = floats_new((size_t)count);
    p.l.v[1] = floats_new((size_t)count);
    if (!p.l.v[0] || !p.l.v[1])
        return fail(&p, fv__error(FV_ERR_OUT_OF_MEMORY, "%s: out of host memory", p.what));
    for (int i = 0; i < count; i++) {
        p.l.v[0][i] = scale ? scale[i] : 1.0f;
        p.l.v[1][i] = shift ? shift[i] : 0.0f;
    }
    return commit(&p, x->n, x->c, x->h, x->w, out);
}

/* ---- pooling ---------------------------------------------------------------------- */
static int pool_out(int in, int k, int stride, int pb, int pe, int dil, int ceil_mode) {
    long span = (long)dil * (k - 1) + 1;
    long avail = (long)in + pb + pe - span;
    if (avail < 0) return 0;
    long o = ceil_mode ? (avail + stride - 1) / stride + 1 : avail / stride + 1;
    /* PyTorch: the last window must start inside the input or its left padding */
    if (ceil_mode && (o - 1) * stride >= (long)in + pb) o--;
    return (int)o;
}

fv_status fv_net_add_pool(fv_net_builder *b, const fv_net_pool_desc *d, int in, int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_pool"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_POOL, d ? d->name : NULL, "fv_net_add_pool"));
    FV_REQUIRE(d, FV_ERR_BAD_PARAM, "%s: desc is NULL", p.what);
    TRY_P(&p, input_ok(&p, in, "input"));
    const fv__btensor *x = shape_of(&p, in);
    fv__pool_params *pp = &p.l.pool;
    FV_REQUIRE(d->mode >= FV_NET_POOL_MAX && d->mode <= FV_NET_POOL_AVG_INCLUDE_PAD,
               FV_ERR_BAD_PARAM, "%s: mode %d is unknown", p.what, (int)d->mode);
    FV_REQUIRE(d->r >= 1 && d->s >= 1 && d->r <= 4096 && d->s <= 4096, FV_ERR_BAD_PARAM,
               "%s: window %dx%d", p.what, d->r, d->s);
    pp->mode = (int)d->mode, pp->r = d->r, pp->s = d->s;
    pp->stride_h = d->stride_h ? d->stride_h : d->r;
    pp->stride_w = d->stride_w ? d->stride_w : d->s;
    pp->dilation_h = d->dilation_h ? d->dilation_h : 1;
    pp->dilation_w = d->dilation_w ? d->dilation_w : 1;
    FV_REQUIRE(pp->stride_h >= 1 && pp->stride_w >= 1 && pp->stride_h <= 4096 &&
                   pp->stride_w <= 4096 && pp->dilation_h >= 1 && pp->dilation_w >= 1 &&
                   pp->dilation_h <= 4096 && pp->dilation_w <= 4096,
               FV_ERR_BAD_PARAM, "%s: stride %dx%d, dilation %dx%d", p.what, pp->stride_h,
               pp->stride_w, pp->dilation_h, pp->dilation_w);
    FV_REQUIRE(d->mode == FV_NET_POOL_MAX || (pp->dilation_h == 1 && pp->dilation_w == 1),
               FV_ERR_NOT_SUPPORTED, "%s: dilation in average pooling", p.what);
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(d->pad[i] >= 0 && d->pad[i] < ((i & 1) ? d->s : d->r), FV_ERR_BAD_PARAM,
                   "%s: pad[%d]=%d must be >= 0 and below the window", p.what, i, d->pad[i]);
    FV_REQUIRE(d->mode != FV_NET_POOL_AVG_INCLUDE_PAD ||
                   (d->pad[0] == d->pad[2] && d->pad[1] == d->pad[3]),
               FV_ERR_NOT_SUPPORTED,
               "%s: average pooling counting padding cells with asymmetric padding %d,%d,%d,%d",
               p.what, d->pad[0], d->pad[1], d->pad[2], d->pad[3]);
    pp->pad_top = d->pad[0], pp->pad_left = d->pad[1];
    int oh = pool_out(x->h, d->r, pp->stride_h, d->pad[0], d->pad[2], pp->dilation_h, d->ceil_mode);
    int ow = pool_out(x->w, d->s, pp->stride_w, d->pad[1], d->pad[3], pp->dilation_w, d->ceil_mode);
    FV_REQUIRE(oh >= 1 && ow >= 1, FV_ERR_BAD_SHAPE,
               "%s: a %dx%d window does not fit the %dx%d input", p.what, d->r, d->s, x->h, x->w);
    TRY_P(&p, set_inputs(&p, &in, 1));
    return commit(&p, x->n, x->c, oh, ow, out);
}

fv_status fv_net_add_global_pool(fv_net_builder *b, const char *name, int in, int avg, int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_global_pool"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_GPOOL, name, "fv_net_add_global_pool"));
    TRY_P(&p, input_ok(&p, in, "input"));
    const fv__btensor *x = shape_of(&p, in);
    p.l.op = avg ? 1 : 0;
    TRY_P(&p, set_inputs(&p, &in, 1));
    return commit(&p, x->n, x->c, 1, 1, out);
}

/* ---- shape and routing ----------------------------------------------------------- */
fv_status fv_net_add_softmax(fv_net_builder *b, const char *name, int in, int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_softmax"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_SOFTMAX, name, "fv_net_add_softmax"));
    TRY_P(&p, input_ok(&p, in, "input"));
    const fv__btensor *x = shape_of(&p, in);
    TRY_P(&p, set_inputs(&p, &in, 1));
    return commit(&p, x->n, x->c, x->h, x->w, out);
}

fv_status fv_net_add_concat(fv_net_builder *b, const char *name, const int *in, int count,
                            int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_concat"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_CONCAT, name, "fv_net_add_concat"));
    FV_REQUIRE(in && count >= 1 && count <= FV_NET_MAX_CONCAT, FV_ERR_BAD_PARAM,
               "%s: %d inputs (1 .. %d, non-NULL)", p.what, count, FV_NET_MAX_CONCAT);
    long c = 0;
    for (int i = 0; i < count; i++) {
        TRY_P(&p, input_ok(&p, in[i], "input"));
        const fv__btensor *x = shape_of(&p, in[i]), *x0 = shape_of(&p, in[0]);
        FV_REQUIRE(x->n == x0->n && x->h == x0->h && x->w == x0->w, FV_ERR_BAD_SHAPE,
                   "%s: input %d is N=%d H=%d W=%d but input 0 is N=%d H=%d W=%d", p.what, i, x->n,
                   x->h, x->w, x0->n, x0->h, x0->w);
        c += x->c;
    }
    FV_REQUIRE(c <= FV_NET_MAX_DIM, FV_ERR_BAD_SHAPE, "%s: %ld channels in all", p.what, c);
    const fv__btensor *x0 = shape_of(&p, in[0]);
    int n = x0->n, h = x0->h, w = x0->w;
    TRY_P(&p, set_inputs(&p, in, count));
    return commit(&p, n, (int)c, h, w, out);
}

fv_status fv_net_add_slice(fv_net_builder *b, const char *name, int in, int begin_c, int end_c,
                           int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_slice"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_SLICE, name, "fv_net_add_slice"));
    TRY_P(&p, input_ok(&p, in, "input"));
    const fv__btensor *x = shape_of(&p, in);
    FV_REQUIRE(begin_c >= 0 && begin_c < end_c && end_c <= x->c, FV_ERR_BAD_SHAPE,
               "%s: channels [%d, %d) of an input with C=%d", p.what, begin_c, end_c, x->c);
    p.l.begin = begin_c, p.l.end = end_c;
    TRY_P(&p, set_inputs(&p, &in, 1));
    return commit(&p, x->n, end_c - begin_c, x->h, x->w, out);
}

fv_status fv_net_add_reshape(fv_net_builder *b, const char *name, int in, int n, int c, int h,
                             int w, int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_reshape"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_RESHAPE, name, "fv_net_add_reshape"));
    TRY_P(&p, input_ok(&p, in, "input"));
    const fv__btensor *x = shape_of(&p, in);
    TRY_P(&p, dims_ok(&p, n, c, h, w));
    FV_REQUIRE((double)n * c * h * w == (double)x->n * x->c * x->h * x->w, FV_ERR_BAD_SHAPE,
               "%s: N=%d C=%d H=%d W=%d has another element count than the input N=%d C=%d "
               "H=%d W=%d",
               p.what, n, c, h, w, x->n, x->c, x->h, x->w);
    TRY_P(&p, set_inputs(&p, &in, 1));
    return commit(&p, n, c, h, w, out);
}

fv_status fv_net_add_pad(fv_net_builder *b, const char *name, int in, const int pad[4], float value,
                         int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_pad"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_PAD, name, "fv_net_add_pad"));
    TRY_P(&p, input_ok(&p, in, "input"));
    FV_REQUIRE(pad, FV_ERR_BAD_PARAM, "%s: pad is NULL", p.what);
    FV_REQUIRE(isfinite(value), FV_ERR_BAD_PARAM, "%s: value is not finite", p.what);
    const fv__btensor *x = shape_of(&p, in);
    for (int i = 0; i < 4; i++)
        FV_REQUIRE(pad[i] >= 0 && pad[i] <= 4096, FV_ERR_BAD_PARAM,
                   "%s: pad[%d]=%d must be 0 .. 4096", p.what, i, pad[i]);
    memcpy(p.l.pad, pad, sizeof p.l.pad);
    p.l.value = value;
    TRY_P(&p, set_inputs(&p, &in, 1));
    return commit(&p, x->n, x->c, x->h + pad[0] + pad[2], x->w + pad[1] + pad[3], out);
}

fv_status fv_net_add_resize(fv_net_builder *b, const fv_net_resize_desc *d, int in, int *out) {
    FV_TRY(out_ptr(out, "fv_net_add_resize"));
    pending p;
    FV_TRY(begin(&p, b, FV__L_RESIZE, d ? d->name : NULL, "fv_net_add_resize"));
    FV_REQUIRE(d, FV_ERR_BAD_PARAM, "%s: desc is NULL", p.what);
    TRY_P(&p, input_ok(&p, in, "input"));
    const fv__btensor *x = shape_of(&p, in);
    FV_REQUIRE(d->mode == FV_NET_RESIZE_NEAREST || d->mode == FV_NET_RESIZE_BILINEAR,
               FV_ERR_BAD_PARAM, "%s: mode %d is unknown", p.what, (int)d->mode);
    FV_REQUIRE((int)d->coord >= 0 && d->coord <= FV_NET_COORD_PYTORCH_HALF_PIXEL, FV_ERR_BAD_PARAM,
               "%s: coordinate mode %d is unknown", p.what, (int)d->coord);
    FV_REQUIRE((int)d->nearest >= 0 && d->nearest <= FV_NET_NEAREST_CEIL, FV_ERR_BAD_PARAM,
               "%s: nearest mode %d is unknown", p.what, (int)d->nearest);
    FV_REQUIRE(
        isfinite(d->scale_h) && isfinite(d->scale_w) && d->scale_h >= 0.0f && d->scale_w >= 0.0f,
        FV_ERR_BAD_PARAM, "%s: scales %g, %g", p.what, (double)d->scale_h, (double)d->scale_w);
    fv__resize_params *r = &p.l.resize;
    r->mode = (int)d->mode, r->coord = (int)d->coord, r->nearest = (int)d->nearest;
    r->scale_h = d->scale_h > 0.0f ? d->scale_h : (float)d->out_h / (float)x->h;
    r->scale_w = d->scale_w > 0.0f ? d->scale_w : (float)d->out_w / (float)x->w;
    TRY_P(&p, set_inputs(&p, &in, 1));
    return commit(&p, x->n, x->c, d->out_h, d->out_w, out);
}
