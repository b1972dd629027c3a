/* Running a net: one layer, all layers, fv_net_forward (or its graph), the
 * per-layer timing table and the precision report. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "net_internal.h"

static const float *const_ptr(const fv_tensor *t) {
    return t ? (const float *)fv__tensor_ptr(t) : NULL;
}

/* Channels [c0, c0 + c) of a view, writing cw channels. */
static fv__view channel_slice(const fv__view *v, int c0, int c, int cw) {
    fv__view s = *v;
    size_t elem = v->dtype == FV_DTYPE_F32 ? 4 : 2;
    s.data = (unsigned char *)v->data + (size_t)c0 * elem;
    s.c = c;
    s.cw = cw;
    return s;
}

fv_status fv__net_run_layer(fv_net *net, int i) {
    fv__nlayer *l = &net->layers[i];
    const fv__blayer *b = l->b;
    const fv__net_ops *o = net->ops;
    fv_context *ctx = net->ctx;
    fv__ntensor *T = net->tensors;
    const fv__view *out = &T[l->out].view;
    const fv__view *in = l->in[0] >= 0 ? &T[l->in[0]].view : NULL;
    switch (l->kind) {
    case FV__L_CONV:
        if (l->fc) return o->fc_run(ctx, l->fc, in, out);
        return fv_conv2d_forward_residual(l->conv, &T[l->in[0]].tview,
                                          l->res >= 0 ? &T[l->res].tview : NULL, &T[l->out].tview);
    case FV__L_CONVT: {
        fv__convt_params p = {.r = b->r,
                              .s = b->s,
                              .stride_h = b->stride_h,
                              .stride_w = b->stride_w,
                              .dilation_h = b->dil_h,
                              .dilation_w = b->dil_w,
                              .pad_top = b->pad[0],
                              .pad_left = b->pad[1],
                              .groups = b->groups,
                              .act = l->act,
                              .alpha = l->alpha,
                              .beta = l->beta};
        return o->conv_transpose(ctx, in, out, &p, const_ptr(l->consts[0]),
                                 const_ptr(l->consts[1]));
    }
    case FV__L_ACT:
        return o->act(ctx, in, out, l->act, l->alpha, l->beta);
    case FV__L_BINARY:
        return o->binary(ctx, b->op, in, &T[l->in[1]].view, out, l->act, l->alpha, l->beta);
    case FV__L_AFFINE:
        return o->affine(ctx, in, out, const_ptr(l->consts[0]), const_ptr(l->consts[1]), b->count,
                         l->act, l->alpha, l->beta);
    case FV__L_POOL:
        return o->pool(ctx, in, out, &b->pool);
    case FV__L_GPOOL:
        return o->global_pool(ctx, in, out, b->op);
    case FV__L_SOFTMAX:
        return o->softmax(ctx, in, out);
    case FV__L_CONCAT: {
        int c0 = 0;
        for (int j = 0; j < b->nin; j++) {
            const fv__view *part = &T[b->in[j]].view;
            if (T[b->in[j]].host == l->out && T[b->in[j]].c0 == c0) { /* written in place */
                c0 += part->c;
                continue;
            }
            int last = j == b->nin - 1;
            fv__view dst = channel_slice(out, c0, part->c, last ? out->cw - c0 : part->c);
            FV_TRY(o->copy(ctx, part, &dst));
            c0 += part->c;
        }
        return FV_OK;
    }
    case FV__L_SLICE: {
        fv__view src = channel_slice(in, b->begin, b->end - b->begin, b->end - b->begin);
        return o->copy(ctx, &src, out);
    }
    case FV__L_RESHAPE:
        return l->alias ? FV_OK : o->reshape(ctx, in, out);
    case FV__L_PAD:
        return o->pad(ctx, in, out, b->pad[0], b->pad[1], b->value);
    case FV__L_RESIZE:
        return o->resize(ctx, in, out, &b->resize);
    default:
        return fv__error(FV_ERR_INTERNAL, "net: layer '%s' of kind %d cannot run", l->name,
                         (int)l->kind);
    }
}

static fv_status named(fv_net *net, int i, fv_status s) {
    if (s == FV_OK) return s;
    char what[128];
    snprintf(what, sizeof what, "net layer %d %s '%s'", i,
             fv__lkind_name(net->layers[i].kind, net->layers[i].b), net->layers[i].name);
    return fv__error_prefix(s, what);
}

fv_status fv__net_run_all(fv_net *net) {
    for (int i = 0; i < net->nlayers; i++)
        FV_TRY(named(net, i, fv__net_run_layer(net, i)));
    return FV_OK;
}

fv_status fv_net_forward(fv_net *net) {
    FV__HOLD(net ? net->ctx : NULL);
    FV_REQUIRE(net, FV_ERR_BAD_PARAM, "fv_net_forward: net is NULL");
    const fv__backend *be = net->ctx->be;
    /* inside a caller's capture (a pipeline stage's graph) the layers are
     * captured into that graph: a graph launch cannot be */
    if (net->graph && !(be->capturing && be->capturing(net->ctx)))
        return be->graph_launch(net->ctx, net->graph);
    return fv__net_run_all(net);
}

/* ---- per-layer timing ---------------------------------------------------------------- */
static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

double fv__net_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
#define now_ms fv__net_now_ms

typedef struct timer {
    fv_net *net;
    void **ev; /* layers + 1 events (CUDA), or NULL */
    double *wall;
    int n;
} timer;

static fv_status mark(timer *t, int k) {
    fv_context *ctx = t->net->ctx;
    if (t->ev) return ctx->be->event_record(ctx, t->ev[k], NULL);
    t->wall[k] = now_ms();
    return FV_OK;
}

static fv_status span_ms(timer *t, int a, int b, float *ms) {
    fv_context *ctx = t->net->ctx;
    if (t->ev) return ctx->be->event_elapsed(ctx, t->ev[a], t->ev[b], ms);
    *ms = (float)(t->wall[b] - t->wall[a]);
    return FV_OK;
}

fv_status fv_net_profile(fv_net *net, int runs, float *ms, int layers, float *total) {
    FV__HOLD(net ? net->ctx : NULL);
    FV_REQUIRE(net && ms && total, FV_ERR_BAD_PARAM, "fv_net_profile: %s is NULL",
               !net  ? "net"
               : !ms ? "ms"
                     : "total");
    FV_REQUIRE(runs >= 1 && runs <= 100000, FV_ERR_BAD_PARAM,
               "fv_net_profile: runs=%d (1 .. 100000)", runs);
    FV_REQUIRE(layers == net->nlayers, FV_ERR_BAD_PARAM,
               "fv_net_profile: ms has %d entries but the net has %d layers", layers, net->nlayers);
    fv_context *ctx = net->ctx;
    int n = net->nlayers;
    timer t = {.net = net, .n = n + 1};
    float *samples = malloc(sizeof(float) * (size_t)runs * (size_t)(n + 1));
    t.wall = calloc((size_t)n + 1, sizeof(double));
    int use_events = ctx->be->event_create != NULL;
    if (use_events) t.ev = calloc((size_t)n + 1, sizeof(void *));
    fv_status s = FV_OK;
    if (!samples || !t.wall || (use_events && !t.ev)) {
        s = fv__error(FV_ERR_OUT_OF_MEMORY, "fv_net_profile: out of host memory");
        goto done;
    }
    for (int k = 0; use_events && k <= n && s == FV_OK; k++)
        s = ctx->be->event_create(ctx, &t.ev[k]);
    if (s == FV_OK) s = fv__net_run_all(net); /* warm-up */
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    for (int r = 0; r < runs && s == FV_OK; r++) {
        s = mark(&t, 0);
        for (int i = 0; i < n && s == FV_OK; i++) {
            s = named(net, i, fv__net_run_layer(net, i));
            if (s == FV_OK && !t.ev) s = fv_context_synchronize(ctx);
            if (s == FV_OK) s = mark(&t, i + 1);
        }
        if (s == FV_OK) s = fv_context_synchronize(ctx);
        for (int i = 0; i < n && s == FV_OK; i++)
            s = span_ms(&t, i, i + 1, &samples[(size_t)i * runs + r]);
        /* the whole forward as fv_net_forward runs it */
        if (s == FV_OK) s = mark(&t, 0);
        if (s == FV_OK) s = fv_net_forward(net);
        if (s == FV_OK) s = mark(&t, n);
        if (s == FV_OK) s = fv_context_synchronize(ctx);
        if (s == FV_OK) s = span_ms(&t, 0, n, &samples[(size_t)n * runs + r]);
    }
    for (int i = 0; i <= n && s == FV_OK; i++) {
        float *x = &samples[(size_t)i * runs];
        qsort(x, (size_t)runs, sizeof *x, cmp_float);
        float med = runs % 2 ? x[runs / 2] : 0.5f * (x[runs / 2 - 1] + x[runs / 2]);
        if (i < n)
            ms[i] = med;
        else
            *total = med;
    }
done:
    for (int k = 0; t.ev && k <= n; k++)
        if (t.ev[k]) ctx->be->event_destroy(ctx, t.ev[k]);
    free(t.ev), free(t.wall), free(samples);
    return s;
}

/* ---- precision report -------------------------------------------------------------------- */
/* Reads a tensor (any backend, F16 or F32) into floats (dense NHWC). */
static fv_status read_floats(fv_net *net, const fv__ntensor *t, void *raw, float *out) {
    const fv_tensor *tv = &t->tview;
    FV_TRY(fv_tensor_download(net->ctx, tv, raw, tv->shape.dense_bytes));
    FV_TRY(fv_context_synchronize(net->ctx));
    size_t n = tv->shape.dense_bytes / tv->shape.elem_bytes;
    if (tv->shape.dtype == FV_DTYPE_F32)
        memcpy(out, raw, n * sizeof(float));
    else
        for (size_t i = 0; i < n; i++)
            out[i] = fv_f16_to_f32(((const fv_half *)raw)[i]);
    return FV_OK;
}

fv_status fv_net_compare(fv_net *net, fv_net *ref, fv_net_layer_error *err, int layers) {
    FV__HOLD(net ? net->ctx : NULL);
    FV_REQUIRE(net && ref && err, FV_ERR_BAD_PARAM, "fv_net_compare: %s is NULL",
               !net   ? "net"
               : !ref ? "ref"
                      : "err");
    /* the reference may live on another context (the CPU one) */
    fv__hold ref_hold __attribute__((cleanup(fv__hold_end))) = fv__hold_take(ref->ctx, __func__);
    if (ref_hold.s != FV_OK) return ref_hold.s;
    FV_REQUIRE(layers == net->nlayers, FV_ERR_BAD_PARAM,
               "fv_net_compare: err has %d entries but the net has %d layers", layers,
               net->nlayers);
    FV_REQUIRE(ref->nlayers == net->nlayers && ref->ntensors == net->ntensors &&
                   ref->ninputs == net->ninputs && ref->flags == net->flags,
               FV_ERR_BAD_PARAM,
               "fv_net_compare: the nets differ (%d and %d layers): build both from one builder "
               "with the same flags",
               net->nlayers, ref->nlayers);
    size_t most = 0;
    for (int i = 0; i < net->ntensors; i++) {
        const fv__ntensor *t = &net->tensors[i];
        size_t n = (size_t)t->n * t->c * t->h * t->w;
        if (n > most) most = n;
    }
    float *a = malloc(most * sizeof(float)), *r = malloc(most * sizeof(float));
    void *raw = malloc(most * sizeof(float));
    fv_status s = FV_OK;
    if (!a || !r || !raw) {
        s = fv__error(FV_ERR_OUT_OF_MEMORY, "fv_net_compare: out of host memory");
        goto done;
    }
    for (int i = 0; i < net->ninputs && s == FV_OK; i++) {
        const fv__ntensor *t = &net->tensors[net->inputs[i]];
        s = read_floats(net, t, raw, a);
        if (s == FV_OK) s = fv_net_input_upload(ref, i, a, (size_t)t->n * t->c * t->h * t->w);
    }
    for (int i = 0; i < net->nlayers && s == FV_OK; i++) {
        s = named(net, i, fv__net_run_layer(net, i));
        if (s == FV_OK) s = named(ref, i, fv__net_run_layer(ref, i));
        const fv__ntensor *tn = &net->tensors[net->layers[i].out];
        if (s == FV_OK) s = read_floats(net, tn, raw, a);
        if (s == FV_OK) s = read_floats(ref, &ref->tensors[ref->layers[i].out], raw, r);
        if (s != FV_OK) break;
        size_t n = (size_t)tn->n * tn->c * tn->h * tn->w;
        double d2 = 0, r2 = 0, mx = 0, rmx = 0;
        for (size_t k = 0; k < n; k++) {
            double d = (double)a[k] - r[k];
            d2 += d * d, r2 += (double)r[k] * r[k];
            if (fabs(a[k]) > mx || isnan(a[k])) mx = isnan(a[k]) ? INFINITY : fabs(a[k]);
            if (fabs(r[k]) > rmx) rmx = fabs(r[k]);
        }
        err[i].rel_l2 = isnan(d2) ? INFINITY : r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
        err[i].max_abs = mx;
        err[i].ref_max_abs = rmx;
    }
done:
    free(a), free(r), free(raw);
    return s;
}
