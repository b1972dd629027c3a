/* fv_net_create: dead layers dropped, fusion (BN folding, activations into
 * their producers, flatten into fc), concat inputs written in place, in-place
 * and alias decisions, the arena plan, weights uploaded, convolutions
 * created and bound, and the optional CUDA graph. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net_internal.h"

#define now_ms fv__net_now_ms

static size_t dtype_size(fv_dtype t) {
    return t == FV_DTYPE_F32 ? 4 : 2;
}

/* ---- fusion ------------------------------------------------------------------ */
typedef struct fuse_ctx {
    fv_net *net;
    const fv_net_builder *b;
    int *producer; /* tensor -> net layer index, -1 */
    int *consumers;
    char *is_output;
    char *dead_layer; /* net layers dropped after the fact (flatten into fc) */
} fuse_ctx;

static bool conv_act(int act) {
    return act >= FV_ACT_IDENTITY && act <= FV_ACT_LEAKY_RELU;
}

static void add_fused(fv__nlayer *l, const char *what) {
    size_t n = strlen(l->fused);
    snprintf(l->fused + n, sizeof l->fused - n, "%s%s", n ? "+" : "", what);
}

/* The net layer producing t, when t has no other consumer and is no output. */
static fv__nlayer *sole_producer(fuse_ctx *f, int t) {
    int p = f->producer[t];
    if (p < 0 || f->consumers[t] != 1 || f->is_output[t]) return NULL;
    return &f->net->layers[p];
}

/* A residual add a + b (same shapes, an activation a convolution can run or
 * none) into the convolution producing one side, which then adds the other
 * (z) before its activation. Of two such convolutions the later one takes
 * it: z must exist when it runs. 1 if done. */
static int try_fuse_add(fuse_ctx *f, const fv__blayer *l) {
    const fv_net_builder *b = f->b;
    if (l->op != FV_NET_ADD || l->in[0] == l->in[1] || !conv_act(l->act)) return 0;
    const fv__btensor *o = &b->tensors[l->out];
    int best = -1, side = -1;
    for (int j = 0; j < 2; j++) {
        const fv__btensor *t = &b->tensors[l->in[j]];
        if (t->n != o->n || t->c != o->c || t->h != o->h || t->w != o->w) return 0;
        fv__nlayer *p = sole_producer(f, l->in[j]);
        if (!p || p->kind != FV__L_CONV || p->act != FV_ACT_IDENTITY || p->res >= 0) continue;
        int pi = (int)(p - f->net->layers), zi = f->producer[l->in[1 - j]];
        if (zi >= pi) continue; /* z made after the convolution runs */
        if (pi > best) best = pi, side = j;
    }
    if (best < 0) return 0;
    fv__nlayer *p = &f->net->layers[best];
    p->res = l->in[1 - side];
    p->act = l->act, p->alpha = l->alpha, p->beta = l->beta;
    add_fused(p, "add");
    if (l->act != FV_ACT_IDENTITY) add_fused(p, fv_activation_name((fv_activation)l->act));
    f->producer[l->out] = best;
    p->out = l->out;
    f->net->info.fused_add++;
    return 1;
}

/* Tries to fold builder layer l into a net layer made earlier; 1 if done. */
static int try_fuse(fuse_ctx *f, const fv__blayer *l) {
    if (f->net->flags & FV_NET_NO_FUSION) return 0;
    if (l->kind == FV__L_BN) {
        fv__nlayer *p = sole_producer(f, l->in[0]);
        if (!p || p->kind != FV__L_CONV || p->act != FV_ACT_IDENTITY || p->in[1] >= 0 ||
            p->res >= 0)
            return 0;
        p->in[1] = (int)(l - f->b->layers); /* the BN to fold (builder index) */
        add_fused(p, "bn");
    } else if (l->kind == FV__L_ACT) {
        fv__nlayer *p = sole_producer(f, l->in[0]);
        if (!p || p->act != FV_ACT_IDENTITY) return 0;
        if (p->kind == FV__L_CONV
                ? !conv_act(l->act)
                : p->kind != FV__L_BINARY && p->kind != FV__L_AFFINE && p->kind != FV__L_CONVT)
            return 0;
        p->act = l->act, p->alpha = l->alpha, p->beta = l->beta;
        add_fused(p, fv_activation_name((fv_activation)l->act));
    } else if (l->kind == FV__L_BINARY) {
        return try_fuse_add(f, l);
    } else {
        return 0;
    }
    f->producer[l->out] = f->producer[l->in[0]];
    f->net->layers[f->producer[l->out]].out = l->out;
    f->net->info.fused_bn += l->kind == FV__L_BN;
    f->net->info.fused_act += l->kind == FV__L_ACT;
    return 1;
}

static fv_status build_layers(fv_net *net, fuse_ctx *f) {
    const fv_net_builder *b = net->b;
    /* live layers: those an output depends on */
    char *live = calloc((size_t)b->nlayers + 1, 1);
    FV_REQUIRE(live, FV_ERR_OUT_OF_MEMORY, "fv_net_create: out of host memory");
    char *needed = calloc((size_t)b->ntensors + 1, 1);
    if (!needed) {
        free(live);
        return fv__error(FV_ERR_OUT_OF_MEMORY, "fv_net_create: out of host memory");
    }
    for (int i = 0; i < b->noutputs; i++)
        needed[b->outputs[i]] = 1, f->is_output[b->outputs[i]] = 1;
    for (int i = b->nlayers - 1; i >= 0; i--) {
        const fv__blayer *l = &b->layers[i];
        if (!needed[l->out]) continue;
        live[i] = 1;
        for (int j = 0; j < l->nin; j++)
            needed[l->in[j]] = 1;
    }
    for (int i = 0; i < b->nlayers; i++)
        if (live[i])
            for (int j = 0; j < b->layers[i].nin; j++)
                f->consumers[b->layers[i].in[j]]++;
    free(needed);

    for (int i = 0; i < b->nlayers; i++) {
        const fv__blayer *l = &b->layers[i];
        if (l->kind == FV__L_INPUT) {
            net->inputs[net->ninputs++] = l->out;
            continue;
        }
        if (!live[i]) continue;
        if (try_fuse(f, l)) continue;
        fv__nlayer *n = &net->layers[net->nlayers];
        memset(n, 0, sizeof *n);
        n->b = l;
        n->kind = l->kind == FV__L_BN ? FV__L_AFFINE : l->kind;
        snprintf(n->name, sizeof n->name, "%s", l->name);
        n->in[0] = l->nin > 0 ? l->in[0] : -1;
        n->in[1] = l->kind == FV__L_BINARY ? l->in[1] : -1;
        n->res = -1;
        n->out = l->out;
        n->act = l->act, n->alpha = l->alpha, n->beta = l->beta;
        if (l->kind == FV__L_BN) add_fused(n, "bn");
        /* flatten (a reshape to (N, C*H*W, 1, 1)) feeding only this fc: the
         * fc reads the unflattened tensor with its H x W kernel */
        if (l->is_fc && !(net->flags & FV_NET_NO_FUSION)) {
            int t = l->in[0];
            fv__nlayer *r = sole_producer(f, t);
            if (r && r->kind == FV__L_RESHAPE) {
                const fv__btensor *x = &b->tensors[r->in[0]];
                if (x->h * x->w > 1) {
                    n->in[0] = r->in[0];
                    f->dead_layer[f->producer[t]] = 1; /* its consumer count moves to the fc */
                    add_fused(n, "flatten");
                }
            }
        }
        f->producer[l->out] = net->nlayers++;
    }
    free(live);
    /* drop the dead reshapes */
    int k = 0;
    for (int i = 0; i < net->nlayers; i++)
        if (!f->dead_layer[i]) net->layers[k++] = net->layers[i];
    net->nlayers = k;
    return FV_OK;
}

/* ---- memory plan --------------------------------------------------------------- */
static int find(int *parent, int x) {
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

static size_t tensor_bytes(const fv_net *net, const fv__ntensor *t) {
    int cs = net->dtype == FV_DTYPE_F16 ? FV_ROUND_UP(t->c, 8) : t->c;
    size_t bytes = (size_t)t->n * t->h * t->w * (size_t)cs * dtype_size(net->dtype);
    return FV_ROUND_UP(bytes, FV_ALIGN);
}

static bool elementwise_inplace(const fv__nlayer *l) {
    return l->kind == FV__L_ACT || l->kind == FV__L_BINARY || l->kind == FV__L_AFFINE;
}

/* ---- concat without a copy -------------------------------------------------------
 * A concat input t becomes a view: channels [c0, c0 + C) of the concat's
 * output, with its pixel stride, which t's producer writes and t's readers
 * read in place. The net's own kernels (net_ops.h) take any fv__view; a
 * convolution writes such a slice (fv__conv2d_create_into) but reads dense
 * tensors only, and an fc (cuBLASLt) takes dense tensors only. */
static bool takes_strides(const fv__nlayer *l) {
    switch (l->kind) {
    case FV__L_CONVT:
    case FV__L_ACT:
    case FV__L_BINARY:
    case FV__L_AFFINE:
    case FV__L_POOL:
    case FV__L_GPOOL:
    case FV__L_SOFTMAX:
    case FV__L_CONCAT:
    case FV__L_SLICE:
    case FV__L_RESHAPE: /* a view input or output makes it a gather, never an alias */
    case FV__L_PAD:
    case FV__L_RESIZE:
        return true;
    default:
        return false;
    }
}

static bool reads(const fv__nlayer *l, int t) {
    if (l->kind == FV__L_CONCAT) {
        for (int j = 0; j < l->b->nin; j++)
            if (l->b->in[j] == t) return true;
        return false;
    }
    return l->in[0] == t || (l->kind == FV__L_BINARY && l->in[1] == t) ||
           (l->kind == FV__L_CONV && l->res == t);
}

/* Whether convolution layer l can write its output as channels [c0, c0 + K)
 * of a wider tensor: not an fc, no fused residual (its add reads a dense
 * tensor laid out as the output), and on F16 whole 16-byte vectors (K and
 * c0 multiples of 8: no padding lanes, an aligned address). */
static bool conv_writes_slice(const fv_net *net, const fv__nlayer *l, int c0) {
    if (l->kind != FV__L_CONV || l->b->is_fc || l->res >= 0) return false;
    return net->dtype != FV_DTYPE_F16 || (net->tensors[l->out].c % 8 == 0 && c0 % 8 == 0);
}

/* Whether a convolution writes a slice of tensor t (or of a slice of it). */
static bool has_conv_slice(const fv_net *net, int t) {
    for (int u = 0; u < net->ntensors; u++)
        if (net->tensors[u].host == t && net->tensors[u].first >= 0 &&
            (net->layers[net->tensors[u].first].kind == FV__L_CONV || has_conv_slice(net, u)))
            return true;
    return false;
}

/* Input j (tensor t, channels [c0, ...) of the output) of concat layer ci can
 * be written in place. */
static bool can_view(const fv_net *net, int ci, int j, int c0) {
    const fv__nlayer *cat = &net->layers[ci];
    const fv__ntensor *T = net->tensors;
    int t = cat->b->in[j];
    /* net inputs and outputs have tensors of their own; a tensor gets one
     * slice (a second concat of it copies, as does a repeat in this one) */
    if (T[t].io != 0 || T[t].host >= 0 || T[t].first < 0) return false;
    for (int k = 0; k < cat->b->nin; k++)
        if (k != j && cat->b->in[k] == t) return false;
    const fv__nlayer *prod = &net->layers[T[t].first];
    if (prod->out != t || !(takes_strides(prod) || conv_writes_slice(net, prod, c0))) return false;
    /* an inner concat whose slices a convolution writes: the conv's slice
     * moves by c0 too, which must keep it aligned */
    if (net->dtype == FV_DTYPE_F16 && c0 % 8 != 0 && has_conv_slice(net, t)) return false;
    for (int i = T[t].first + 1; i <= T[t].last; i++)
        if (i != ci && reads(&net->layers[i], t) && !takes_strides(&net->layers[i])) return false;
    return true;
}

static int root_host(const fv__ntensor *T, int t) {
    while (T[t].host >= 0)
        t = T[t].host;
    return t;
}

/* Decides the views (concats in order: an inner concat's output can itself
 * be a view into an outer one's), then stretches each root host's lifetime
 * over its views': the host's buffer is theirs. */
static void elide_concats(fv_net *net) {
    if (net->flags & (FV_NET_NO_FUSION | FV_NET_NO_CONCAT_VIEWS)) return;
    fv__ntensor *T = net->tensors;
    for (int i = 0; i < net->nlayers; i++) {
        fv__nlayer *l = &net->layers[i];
        if (l->kind != FV__L_CONCAT) continue;
        for (int j = 0, c0 = 0; j < l->b->nin; c0 += T[l->b->in[j]].c, j++) {
            if (!can_view(net, i, j, c0)) continue;
            T[l->b->in[j]].host = l->out;
            T[l->b->in[j]].c0 = c0;
            l->views++;
            net->info.concat_elided++;
        }
    }
    for (int t = 0; t < net->ntensors; t++) {
        if (T[t].host < 0) continue;
        fv__ntensor *r = &T[root_host(T, t)];
        if (T[t].first < r->first) r->first = T[t].first;
        if (T[t].last > r->last) r->last = T[t].last;
    }
}

static fv_status plan_memory(fv_net *net) {
    int nt = net->ntensors;
    fv__ntensor *T = net->tensors;
    for (int i = 0; i < nt; i++)
        T[i].first = -1, T[i].last = -1, T[i].buffer = -1, T[i].host = -1, T[i].c0 = 0;
    for (int i = 0; i < net->ninputs; i++)
        T[net->inputs[i]].io = 1 + i;
    for (int i = 0; i < net->noutputs; i++)
        T[net->outputs[i]].io = -(1 + i);
    for (int i = 0; i < net->nlayers; i++) {
        const fv__nlayer *l = &net->layers[i];
        T[l->out].first = i;
        if (T[l->out].last < i) T[l->out].last = i;
        int nin = l->kind == FV__L_CONCAT ? l->b->nin
                                          : (l->in[1] >= 0 && l->kind == FV__L_BINARY ? 2 : 1);
        for (int j = 0; j < nin; j++) {
            int t = l->kind == FV__L_CONCAT ? l->b->in[j] : l->in[j];
            if (t >= 0 && T[t].last < i) T[t].last = i;
        }
        if (l->kind == FV__L_CONV && l->res >= 0 && T[l->res].last < i) T[l->res].last = i;
    }
    /* views first: a copy saved is worth more than a buffer shared in place */
    elide_concats(net);
    int *parent = malloc(sizeof(int) * (size_t)nt);
    FV_REQUIRE(parent, FV_ERR_OUT_OF_MEMORY, "fv_net_create: out of host memory");
    for (int i = 0; i < nt; i++)
        parent[i] = i;
    /* aliases and in-place layers share their input's storage */
    for (int i = 0; i < net->nlayers; i++) {
        fv__nlayer *l = &net->layers[i];
        fv__ntensor *o = &T[l->out];
        if (l->kind == FV__L_RESHAPE && !(net->flags & FV_NET_NO_FUSION)) {
            fv__ntensor *x = &T[l->in[0]];
            if (x->n == o->n && x->c == o->c && x->h == o->h && x->w == o->w && o->io == 0 &&
                x->io == 0 && o->host < 0 && x->host < 0) {
                l->alias = 1;
                parent[find(parent, l->out)] = find(parent, l->in[0]);
            }
            continue;
        }
        /* a view shares its host's buffer with the other slices: never in place */
        if (!elementwise_inplace(l) || o->io != 0 || o->host >= 0) continue;
        for (int j = 0; j < 2; j++) {
            int t = l->in[j];
            if (t < 0 || T[t].io != 0 || T[t].host >= 0 || T[t].last != i) continue;
            if (T[t].n != o->n || T[t].c != o->c || T[t].h != o->h || T[t].w != o->w) continue;
            if (l->kind == FV__L_BINARY && l->in[0] == l->in[1]) continue;
            /* the other operand a slice of t: written while read */
            if (l->kind == FV__L_BINARY && root_host(T, l->in[1 - j]) == t) continue;
            parent[find(parent, l->out)] = find(parent, t);
            net->info.inplace++;
            break;
        }
    }
    /* buffers: one per root among arena tensors */
    int nb = 0;
    int *bid = malloc(sizeof(int) * (size_t)nt);
    size_t *sizes = calloc((size_t)nt + 1, sizeof *sizes);
    int *first = malloc(sizeof(int) * ((size_t)nt + 1));
    int *last = malloc(sizeof(int) * ((size_t)nt + 1));
    size_t *offs = calloc((size_t)nt + 1, sizeof *offs);
    fv_status s = FV_OK;
    if (!bid || !sizes || !first || !last || !offs) {
        s = fv__error(FV_ERR_OUT_OF_MEMORY, "fv_net_create: out of host memory");
        goto done;
    }
    for (int i = 0; i < nt; i++)
        bid[i] = -1;
    for (int i = 0; i < nt; i++) {
        if (T[i].first < 0 || T[i].io != 0 || T[i].host >= 0) continue;
        int r = find(parent, i);
        if (bid[r] < 0) {
            bid[r] = nb;
            sizes[nb] = 0, first[nb] = T[i].first, last[nb] = T[i].last;
            nb++;
        }
        int k = bid[r];
        T[i].buffer = k;
        T[i].bytes = tensor_bytes(net, &T[i]);
        if (T[i].bytes > sizes[k]) sizes[k] = T[i].bytes;
        if (T[i].first < first[k]) first[k] = T[i].first;
        if (T[i].last > last[k]) last[k] = T[i].last;
    }
    s = fv__net_plan(sizes, first, last, nb, offs, &net->info.arena_bytes,
                     &net->info.arena_lower_bound);
    for (int i = 0; s == FV_OK && i < nt; i++)
        T[i].offset = T[i].buffer >= 0 ? offs[T[i].buffer] : SIZE_MAX;
done:
    free(parent), free(bid), free(sizes), free(first), free(last), free(offs);
    return s;
}

/* ---- tensors and views ------------------------------------------------------------ */
static void make_views(fv_net *net, fv__ntensor *t, fv_pool *pool, void *data, void *dev) {
    fv_tensor_shape *sh = &t->tview.shape;
    memset(&t->tview, 0, sizeof t->tview);
    sh->dtype = net->dtype;
    sh->n = t->n, sh->h = t->h, sh->w = t->w, sh->c = t->c;
    sh->c_stored = net->dtype == FV_DTYPE_F16 ? FV_ROUND_UP(t->c, 8) : t->c;
    sh->elem_bytes = dtype_size(net->dtype);
    sh->stride[3] = 1;
    sh->stride[2] = (size_t)sh->c_stored;
    sh->stride[1] = sh->stride[2] * (size_t)t->w;
    sh->stride[0] = sh->stride[1] * (size_t)t->h;
    sh->bytes = sh->stride[0] * (size_t)t->n * sh->elem_bytes;
    sh->dense_bytes = (size_t)t->n * t->h * t->w * (size_t)t->c * sh->elem_bytes;
    t->tview.ctx = net->ctx;
    t->tview.pool = pool;
    t->tview.data = data;
    t->tview.dev_data = dev;
    t->view = (fv__view){.dtype = net->dtype,
                         .n = t->n,
                         .h = t->h,
                         .w = t->w,
                         .c = t->c,
                         .cw = sh->c_stored,
                         .ps = sh->c_stored,
                         .data = dev};
    if (t->bytes == 0) t->bytes = sh->bytes;
}

/* A concat input written in place: channels [c0, c0 + c) of its host's
 * views (made first), the host's pixel stride; the last slice also zeroes
 * the host's channel padding. */
static void make_slice_views(fv_net *net, int t) {
    fv__ntensor *v = &net->tensors[t], *h = &net->tensors[v->host];
    if (v->view.data) return;
    if (h->host >= 0) make_slice_views(net, v->host);
    size_t skip = (size_t)v->c0 * dtype_size(net->dtype);
    v->view = h->view;
    v->view.c = v->c;
    v->view.cw = v->c0 + v->c == h->c ? h->view.cw - v->c0 : v->c;
    v->view.data = (unsigned char *)h->view.data + skip;
    v->tview = h->tview;
    fv_tensor_shape *sh = &v->tview.shape;
    sh->c = v->c;
    sh->c_stored = h->view.ps; /* the pixel pitch fv_tensor_download steps by */
    sh->bytes -= skip;
    sh->dense_bytes = (size_t)v->n * v->h * v->w * (size_t)v->c * sh->elem_bytes;
    v->tview.data = (unsigned char *)h->tview.data + skip;
    v->tview.dev_data = (unsigned char *)h->tview.dev_data + skip;
    v->offset = h->offset == SIZE_MAX ? SIZE_MAX : h->offset + skip;
    v->bytes = 0;
}

static fv_status make_io(fv_net *net) {
    fv_context *ctx = net->ctx;
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    unsigned char *arena = net->arena,
                  *arena_dev = net->arena ? fv_pool_device_pointer(dev, net->arena) : NULL;
    for (int k = 0; k < net->ninputs + net->noutputs; k++) {
        int is_in = k < net->ninputs;
        int t = is_in ? net->inputs[k] : net->outputs[k - net->ninputs];
        fv__ntensor *T = &net->tensors[t];
        fv_tensor_desc d = {.dtype = net->dtype, .n = T->n, .h = T->h, .w = T->w, .c = T->c};
        fv_tensor **slot = is_in ? &net->in_t[k] : &net->out_t[k - net->ninputs];
        fv_status s = fv_tensor_create(ctx, &d, slot);
        if (s != FV_OK)
            return fv__error_prefix(s, is_in ? "fv_net_create: input tensor"
                                             : "fv_net_create: output tensor");
        net->info.io_bytes += (*slot)->shape.bytes;
        make_views(net, T, dev, (*slot)->data, (*slot)->dev_data);
        T->offset = SIZE_MAX;
        if (net->dtype != FV_DTYPE_F32) {
            d.dtype = FV_DTYPE_F32;
            fv_tensor **st = is_in ? &net->in_stage[k] : &net->out_stage[k - net->ninputs];
            s = fv_tensor_create(ctx, &d, st);
            if (s != FV_OK) return fv__error_prefix(s, "fv_net_create: F32 staging tensor");
            net->info.io_bytes += (*st)->shape.bytes;
        }
    }
    for (int i = 0; i < net->ntensors; i++) {
        fv__ntensor *T = &net->tensors[i];
        if (T->buffer >= 0) make_views(net, T, dev, arena + T->offset, arena_dev + T->offset);
    }
    for (int i = 0; i < net->ntensors; i++)
        if (net->tensors[i].host >= 0) make_slice_views(net, i);
    return FV_OK;
}

/* ---- layers' constants and convolutions --------------------------------------------- */
static fv_status upload_floats(fv_net *net, const float *x, int count, fv_tensor **out) {
    fv_tensor_desc d = {.dtype = FV_DTYPE_F32, .n = 1, .h = 1, .w = 1, .c = count};
    FV_TRY(fv_tensor_create(net->ctx, &d, out));
    return fv_tensor_upload(net->ctx, *out, x, (size_t)count * sizeof(float));
}

/* Folds BN (gamma, beta, mean, var, eps) into K x (rest) weights and bias. */
static void fold_bn(const fv__blayer *bn, float *w, float *bias, int k, size_t per_k) {
    for (int o = 0; o < k; o++) {
        float sc = bn->v[0][o] / sqrtf(bn->v[3][o] + bn->eps);
        for (size_t j = 0; j < per_k; j++)
            w[(size_t)o * per_k + j] *= sc;
        bias[o] = (bias[o] - bn->v[2][o]) * sc + bn->v[1][o];
    }
}

static fv_status build_conv(fv_net *net, fv__nlayer *l) {
    const fv__blayer *b = l->b;
    const fv__ntensor *x = &net->tensors[l->in[0]];
    const fv__blayer *bn = l->in[1] >= 0 ? &net->b->layers[l->in[1]] : NULL;
    const float *w = b->w, *bias = b->bias;
    float *wf = NULL, *bf = NULL;
    if (bn) {
        wf = malloc(sizeof(float) * b->nw);
        bf = calloc((size_t)b->k, sizeof(float));
        if (!wf || !bf) {
            free(wf), free(bf);
            return fv__error(FV_ERR_OUT_OF_MEMORY, "fv_net_create: out of host memory");
        }
        memcpy(wf, b->w, sizeof(float) * b->nw);
        if (b->bias) memcpy(bf, b->bias, sizeof(float) * (size_t)b->k);
        fold_bn(bn, wf, bf, b->k, b->nw / (size_t)b->k);
        w = wf, bias = bf;
    }
    /* an fc the backend runs itself (cuBLASLt on CUDA: bias and ReLU in its
     * epilogue); what it refuses runs as a convolution */
    if (b->is_fc && net->ops->fc_create && l->res < 0) {
        char saved[512];
        snprintf(saved, sizeof saved, "%s", fv_last_error());
        fv_status fs = net->ops->fc_create(net->ctx, &x->view, &net->tensors[l->out].view, b->k, w,
                                           bias, l->act, &l->fc);
        if (fs == FV_OK) {
            free(wf), free(bf);
            return FV_OK;
        }
        if (fs != FV_ERR_NOT_SUPPORTED) {
            free(wf), free(bf);
            return fs;
        }
        fv__log(net->ctx, FV_LOG_DEBUG, "fv_net: fc '%s' runs as a convolution: %s", l->name,
                fv_last_error());
        fv__error(FV_OK, "%s", saved);
    }
    /* fc after a folded flatten: the kernel covers the unflattened input */
    int r = b->r, s_ = b->s;
    if (b->is_fc) r = x->h, s_ = x->w;
    fv_conv2d_desc d = {.n = x->n,
                        .h = x->h,
                        .w = x->w,
                        .c = x->c,
                        .k = b->k,
                        .r = r,
                        .s = s_,
                        .stride_h = b->stride_h,
                        .stride_w = b->stride_w,
                        .pad_h = b->pad_h,
                        .pad_w = b->pad_w,
                        .dilation_h = b->dil_h,
                        .dilation_w = b->dil_w,
                        .groups = b->groups,
                        .activation = (fv_activation)l->act,
                        .activation_alpha = l->alpha,
                        .dtype = net->dtype,
                        .weights = w,
                        .bias = bias,
                        .flags = ((net->flags & FV_NET_AUTOTUNE) ? FV_CONV2D_AUTOTUNE : 0) |
                                 (l->res >= 0 ? FV_CONV2D_RESIDUAL : 0)};
    /* a concat input written in place: the concat buffer's pixel stride */
    const fv__ntensor *y = &net->tensors[l->out];
    fv_status s = fv__conv2d_create_into(net->ctx, &d, y->host >= 0 ? y->view.ps : 0, &l->conv);
    free(wf), free(bf);
    return s;
}

static fv_status build_layer(fv_net *net, fv__nlayer *l) {
    const fv__blayer *b = l->b;
    switch (l->kind) {
    case FV__L_CONV:
        FV_TRY(build_conv(net, l));
        if (l->fc) return FV_OK;
        return fv_conv2d_bind_residual(l->conv, &net->tensors[l->in[0]].tview,
                                       l->res >= 0 ? &net->tensors[l->res].tview : NULL,
                                       &net->tensors[l->out].tview);
    case FV__L_CONVT:
        FV_TRY(upload_floats(net, b->w, (int)b->nw, &l->consts[0]));
        if (b->bias) FV_TRY(upload_floats(net, b->bias, b->k, &l->consts[1]));
        return FV_OK;
    case FV__L_AFFINE: {
        int n = b->count;
        float *sc = malloc(sizeof(float) * (size_t)n * 2);
        FV_REQUIRE(sc, FV_ERR_OUT_OF_MEMORY, "fv_net_create: out of host memory");
        float *sh = sc + n;
        for (int c = 0; c < n; c++) {
            if (b->kind == FV__L_BN) {
                sc[c] = b->v[0][c] / sqrtf(b->v[3][c] + b->eps);
                sh[c] = b->v[1][c] - b->v[2][c] * sc[c];
            } else {
                sc[c] = b->v[0][c], sh[c] = b->v[1][c];
            }
        }
        fv_status s = upload_floats(net, sc, n, &l->consts[0]);
        if (s == FV_OK) s = upload_floats(net, sh, n, &l->consts[1]);
        free(sc);
        return s;
    }
    default:
        return FV_OK;
    }
}

/* ---- create / destroy -------------------------------------------------------------- */
void fv_net_destroy(fv_net *net) {
    FV__HOLD_WAIT(net ? net->ctx : NULL);
    if (!net) return;
    fv_context *ctx = net->ctx;
    fv__obj_gone(ctx, FV__OBJ_NET);
    fv_context_synchronize(ctx);
    fv__obj_internal(1);
    if (net->graph) ctx->be->graph_destroy(ctx, net->graph);
    for (int i = 0; i < net->nlayers; i++) {
        fv_conv2d_destroy(net->layers[i].conv);
        if (net->layers[i].fc) net->ops->fc_destroy(ctx, net->layers[i].fc);
        fv_tensor_destroy(net->layers[i].consts[0]);
        fv_tensor_destroy(net->layers[i].consts[1]);
    }
    for (int i = 0; i < net->ninputs; i++) {
        if (net->in_t) fv_tensor_destroy(net->in_t[i]);
        if (net->in_stage) fv_tensor_destroy(net->in_stage[i]);
    }
    for (int i = 0; i < net->noutputs; i++) {
        if (net->out_t) fv_tensor_destroy(net->out_t[i]);
        if (net->out_stage) fv_tensor_destroy(net->out_stage[i]);
    }
    fv__obj_internal(0);
    if (net->arena) fv_pool_free(ctx->pools[FV_POOL_DEVICE], net->arena);
    free(net->in_t), free(net->in_stage), free(net->out_t), free(net->out_stage);
    free(net->layers), free(net->tensors), free(net->inputs), free(net->outputs);
    fv_net_builder_destroy(net->b);
    free(net);
}

static fv_status create(fv_net *net, const fv_net_desc *desc) {
    fv_context *ctx = net->ctx;
    fv_net_builder *b = net->b;
    int nl = b->nlayers, nt = b->ntensors;
    net->layers = calloc((size_t)nl + 1, sizeof *net->layers);
    net->tensors = calloc((size_t)nt + 1, sizeof *net->tensors);
    net->inputs = calloc((size_t)b->ninputs + 1, sizeof(int));
    net->outputs = calloc((size_t)b->noutputs + 1, sizeof(int));
    net->in_t = calloc((size_t)b->ninputs + 1, sizeof(fv_tensor *));
    net->in_stage = calloc((size_t)b->ninputs + 1, sizeof(fv_tensor *));
    net->out_t = calloc((size_t)b->noutputs + 1, sizeof(fv_tensor *));
    net->out_stage = calloc((size_t)b->noutputs + 1, sizeof(fv_tensor *));
    fuse_ctx f = {.net = net, .b = b};
    f.producer = malloc(sizeof(int) * ((size_t)nt + 1));
    f.consumers = calloc((size_t)nt + 1, sizeof(int));
    f.is_output = calloc((size_t)nt + 1, 1);
    f.dead_layer = calloc((size_t)nl + 1, 1);
    fv_status s = FV_OK;
    double t0 = now_ms(), t_plan = 0, t_build = 0, t_warm = 0, slowest = 0;
    int slowest_i = -1;
    if (!net->layers || !net->tensors || !net->inputs || !net->outputs || !net->in_t ||
        !net->in_stage || !net->out_t || !net->out_stage || !f.producer || !f.consumers ||
        !f.is_output || !f.dead_layer) {
        s = fv__error(FV_ERR_OUT_OF_MEMORY, "fv_net_create: out of host memory");
        goto done;
    }
    for (int i = 0; i < nt; i++) {
        f.producer[i] = -1;
        fv__ntensor *T = &net->tensors[i];
        T->n = b->tensors[i].n, T->c = b->tensors[i].c, T->h = b->tensors[i].h,
        T->w = b->tensors[i].w;
    }
    net->noutputs = b->noutputs;
    memcpy(net->outputs, b->outputs, sizeof(int) * (size_t)b->noutputs);
    /* an fc's cuBLASLt handle (~0.14 s) is made on a helper thread from
     * here, beside everything else create does */
    for (int i = 0; i < b->nlayers && net->ops->fc_prepare; i++)
        if (b->layers[i].is_fc) {
            net->ops->fc_prepare(ctx);
            break;
        }
    s = build_layers(net, &f);
    if (s != FV_OK) goto done;
    for (int i = 0; i < nt; i++)
        net->tensors[i].consumers = f.consumers[i];
    s = plan_memory(net);
    if (s != FV_OK) goto done;
    fv_pool *dev = ctx->pools[FV_POOL_DEVICE];
    if (net->info.arena_bytes) {
        s = fv_pool_alloc(dev, net->info.arena_bytes, &net->arena);
        if (s != FV_OK) {
            s = fv__error_prefix(s, "fv_net_create: activation arena");
            goto done;
        }
        s = ctx->be->mem_zero(ctx, FV_POOL_DEVICE, net->arena, net->info.arena_bytes);
        if (s != FV_OK) goto done;
    }
    s = make_io(net);
    if (s != FV_OK) goto done;
    t_plan = now_ms();
    /* weights live in the DEVICE pool on CUDA, the HOST pool on the CPU backend */
    fv_pool *host = ctx->pools[FV_POOL_HOST];
    fv_pool_stats st0, st1, sh0, sh1;
    fv_pool_stats_get(dev, &st0);
    fv_pool_stats_get(host, &sh0);
    for (int i = 0; i < net->nlayers; i++) {
        fv__nlayer *l = &net->layers[i];
        double tl = now_ms();
        s = build_layer(net, l);
        if (now_ms() - tl > slowest) slowest = now_ms() - tl, slowest_i = i;
        if (s != FV_OK) {
            char what[128];
            snprintf(what, sizeof what, "fv_net_create: %s '%s'", fv__lkind_name(l->b->kind, l->b),
                     l->name);
            s = fv__error_prefix(s, what);
            goto done;
        }
        net->info.convolutions += l->conv != NULL || l->fc != NULL || l->kind == FV__L_CONVT;
        if (desc && desc->progress)
            desc->progress(i + 1, net->nlayers, l->name, desc->progress_user);
    }
    t_build = now_ms();
    fv_pool_stats_get(dev, &st1);
    fv_pool_stats_get(host, &sh1);
    net->info.weight_bytes = (st1.in_use - st0.in_use) + (sh1.in_use - sh0.in_use);
    net->info.layers = net->nlayers;
    net->info.builder_layers = b->nlayers - b->ninputs;
    for (int i = 0; i < net->nlayers; i++) {
        fv_conv2d_info ci;
        if (net->layers[i].conv && fv_conv2d_info_get(net->layers[i].conv, &ci) == FV_OK &&
            ci.workspace_bytes > net->info.workspace_bytes)
            net->info.workspace_bytes = ci.workspace_bytes;
    }
    /* one run at create: kernels load lazily at their first launch (and
     * cuDNN finishes some plans then), which must not land on the first
     * inference or in a graph capture (the CPU backend has nothing to warm) */
    if (ctx->backend != FV_BACKEND_CPU) s = fv__net_run_all(net);
    if (s == FV_OK) s = fv_context_synchronize(ctx);
    if (s != FV_OK) {
        s = fv__error_prefix(s, "fv_net_create: warm-up run");
        goto done;
    }
    t_warm = now_ms();
    if ((net->flags & FV_NET_CUDA_GRAPH) && ctx->be->graph_begin) {
        s = ctx->be->graph_begin(ctx);
        if (s == FV_OK) {
            fv_status r = fv__net_run_all(net);
            s = ctx->be->graph_end(ctx, &net->graph);
            if (r != FV_OK) s = r;
        }
        /* the graph's first replay here, not on the caller's first
         * inference (it ran 1.1-1.2x the hundredth's time) */
        if (s == FV_OK) s = ctx->be->graph_launch(ctx, net->graph);
        if (s == FV_OK) s = fv_context_synchronize(ctx);
        if (s != FV_OK) {
            s = fv__error_prefix(s, "fv_net_create: CUDA graph capture");
            goto done;
        }
        net->info.cuda_graph = 1;
    }
    fv__log(ctx, FV_LOG_INFO,
            "net: %d layers: builder copied %.1f ms, fusion and plan %.1f ms, weights and "
            "engines %.1f ms (slowest '%s' %.1f ms), warm-up run %.1f ms, graph capture %.1f ms",
            net->nlayers, net->clone_ms, t_plan - t0, t_build - t_plan,
            slowest_i >= 0 ? net->layers[slowest_i].name : "-", slowest, t_warm - t_build,
            now_ms() - t_warm);
done:
    free(f.producer), free(f.consumers), free(f.is_output), free(f.dead_layer);
    return s;
}

fv_status fv_net_create(fv_context *ctx, const fv_net_builder *b, const fv_net_desc *desc,
                        fv_net **out) {
    FV__HOLD(ctx);
    FV_REQUIRE(out, FV_ERR_BAD_PARAM, "fv_net_create: out is NULL");
    *out = NULL;
    FV_REQUIRE(ctx && b, FV_ERR_BAD_PARAM, "fv_net_create: %s is NULL", ctx ? "builder" : "ctx");
    FV_REQUIRE(b->noutputs >= 1, FV_ERR_BAD_PARAM,
               "fv_net_create: the builder has no outputs (fv_net_mark_output)");
    FV_REQUIRE(b->ninputs >= 1, FV_ERR_BAD_PARAM, "fv_net_create: the builder has no inputs");
    uint32_t flags = desc ? desc->flags : 0;
    FV_REQUIRE((flags & ~(uint32_t)(FV_NET_AUTOTUNE | FV_NET_CUDA_GRAPH | FV_NET_NO_FUSION |
                                    FV_NET_NO_CONCAT_VIEWS)) == 0,
               FV_ERR_BAD_PARAM, "fv_net_create: unknown flags 0x%x", (unsigned)flags);
    fv_dtype dt = desc ? desc->dtype : FV_DTYPE_F16;
    FV_REQUIRE(dt == FV_DTYPE_F16 || dt == FV_DTYPE_F32, FV_ERR_BAD_PARAM,
               "fv_net_create: dtype %d is neither FV_DTYPE_F16 (the backend's own) nor "
               "FV_DTYPE_F32",
               (int)dt);
    if (desc)
        for (int i = 0; i < 7; i++)
            FV_REQUIRE(desc->reserved[i] == 0, FV_ERR_BAD_PARAM,
                       "fv_net_create: reserved[%d] must be zero", i);
    fv_net *net = calloc(1, sizeof *net);
    FV_REQUIRE(net, FV_ERR_OUT_OF_MEMORY, "fv_net_create: out of host memory");
    net->ctx = ctx;
    fv__obj_born(ctx, FV__OBJ_NET);
    net->flags = flags;
#if FV_BUILT_WITH_CUDA
    net->ops = ctx->backend == FV_BACKEND_CUDA ? &fv__net_ops_cuda : &fv__net_ops_cpu;
#else
    net->ops = &fv__net_ops_cpu;
#endif
    net->dtype = ctx->backend == FV_BACKEND_CPU ? FV_DTYPE_F32 : dt;
    net->ntensors = b->ntensors;
    double t0 = now_ms();
    fv_status s = fv__net_builder_clone(b, &net->b);
    net->clone_ms = now_ms() - t0;
    fv__obj_internal(1); /* the net's own tensors and conv2d ops */
    if (s == FV_OK) s = create(net, desc);
    fv__obj_internal(0);
    if (s != FV_OK) {
        fv_net_destroy(net);
        return s;
    }
    *out = net;
    return FV_OK;
}

/* ---- inputs, outputs, info ----------------------------------------------------------- */
int fv_net_input_count(const fv_net *net) {
    return net ? net->ninputs : 0;
}
int fv_net_output_count(const fv_net *net) {
    return net ? net->noutputs : 0;
}
fv_tensor *fv_net_input(fv_net *net, int i) {
    return net && i >= 0 && i < net->ninputs ? net->in_t[i] : NULL;
}
fv_tensor *fv_net_output(fv_net *net, int i) {
    return net && i >= 0 && i < net->noutputs ? net->out_t[i] : NULL;
}
const char *fv_net_input_name(const fv_net *net, int i) {
    if (!net || i < 0 || i >= net->ninputs) return NULL;
    return net->b->layers[net->b->tensors[net->inputs[i]].producer].name;
}
const char *fv_net_output_name(const fv_net *net, int i) {
    return net && i >= 0 && i < net->noutputs ? net->b->output_names[i] : NULL;
}

static fv_status io_check(const fv_net *net, int i, int nio, const void *p, size_t count,
                          const fv_tensor *const *ts, const char *api) {
    FV_REQUIRE(net && p, FV_ERR_BAD_PARAM, "%s: %s is NULL", api, net ? "data" : "net");
    FV_REQUIRE(i >= 0 && i < nio, FV_ERR_BAD_PARAM, "%s: index %d, the net has %d", api, i, nio);
    const fv_tensor_shape *s = &ts[i]->shape;
    size_t want = (size_t)s->n * s->h * s->w * s->c;
    FV_REQUIRE(count == want, FV_ERR_BAD_SHAPE,
               "%s: %zu values, but tensor %d is N=%d H=%d W=%d C=%d (%zu values)", api, count, i,
               s->n, s->h, s->w, s->c, want);
    return FV_OK;
}

fv_status fv_net_input_upload(fv_net *net, int i, const float *nhwc, size_t count) {
    FV__HOLD(net ? net->ctx : NULL);
    FV_TRY(io_check(net, i, net ? net->ninputs : 0, nhwc, count,
                    net ? (const fv_tensor *const *)net->in_t : NULL, "fv_net_input_upload"));
    if (!net->in_stage[i]) return fv_tensor_upload(net->ctx, net->in_t[i], nhwc, count * 4);
    FV_TRY(fv_tensor_upload(net->ctx, net->in_stage[i], nhwc, count * 4));
    return fv_tensor_convert(net->ctx, net->in_t[i], net->in_stage[i]);
}

fv_status fv_net_output_download(fv_net *net, int i, float *nhwc, size_t count) {
    FV__HOLD(net ? net->ctx : NULL);
    FV_TRY(io_check(net, i, net ? net->noutputs : 0, nhwc, count,
                    net ? (const fv_tensor *const *)net->out_t : NULL, "fv_net_output_download"));
    const fv_tensor *src = net->out_t[i];
    if (net->out_stage[i]) {
        FV_TRY(fv_tensor_convert(net->ctx, net->out_stage[i], net->out_t[i]));
        src = net->out_stage[i];
    }
    FV_TRY(fv_tensor_download(net->ctx, src, nhwc, count * 4));
    return fv_context_synchronize(net->ctx);
}

fv_status fv_net_info_get(const fv_net *net, fv_net_info *out) {
    FV__HOLD(net ? net->ctx : NULL);
    FV_REQUIRE(net && out, FV_ERR_BAD_PARAM, "fv_net_info_get: %s is NULL", net ? "out" : "net");
    *out = net->info;
    return FV_OK;
}

fv_status fv_net_layer_info_get(const fv_net *net, int i, fv_net_layer_info *out) {
    FV__HOLD(net ? net->ctx : NULL);
    FV_REQUIRE(net && out, FV_ERR_BAD_PARAM, "fv_net_layer_info_get: %s is NULL",
               net ? "out" : "net");
    FV_REQUIRE(i >= 0 && i < net->nlayers, FV_ERR_BAD_PARAM,
               "fv_net_layer_info_get: layer %d, the net has %d", i, net->nlayers);
    const fv__nlayer *l = &net->layers[i];
    const fv__ntensor *t = &net->tensors[l->out];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", l->name);
    const char *op = fv__lkind_name(l->kind, l->b);
    if (l->kind == FV__L_POOL)
        op = l->b->pool.mode == FV_NET_POOL_MAX ? "pool.max" : "pool.avg";
    else if (l->kind == FV__L_GPOOL)
        op = l->b->op ? "gpool.avg" : "gpool.max";
    else if (l->kind == FV__L_BINARY) {
        static const char *bn[] = {"add", "sub", "mul", "div"};
        op = bn[l->b->op];
    } else if (l->kind == FV__L_ACT)
        op = fv_activation_name((fv_activation)l->act);
    snprintf(out->op, sizeof out->op, "%s", op);
    snprintf(out->fused, sizeof out->fused, "%s", l->fused);
    const char *an = fv_activation_name((fv_activation)l->act);
    if (l->act != FV_ACT_IDENTITY && l->kind != FV__L_ACT && !strstr(out->fused, an)) {
        size_t n = strlen(out->fused);
        snprintf(out->fused + n, sizeof out->fused - n, "%s%s", n ? "+" : "", an);
    }
    if (l->conv) {
        fv_conv2d_info ci;
        if (fv_conv2d_info_get(l->conv, &ci) == FV_OK) {
            snprintf(out->path, sizeof out->path, "%s", ci.path);
            snprintf(out->engine, sizeof out->engine, "%s", ci.engine);
            out->workspace_bytes = ci.workspace_bytes;
        }
    } else if (l->fc) {
        snprintf(out->path, sizeof out->path, "cublaslt");
        snprintf(out->engine, sizeof out->engine, "%s", net->ops->fc_engine(l->fc));
    } else if (l->kind == FV__L_CONCAT && l->views > 0) {
        snprintf(out->path, sizeof out->path, "%s", l->views == l->b->nin ? "view" : "view+copy");
    } else {
        snprintf(out->path, sizeof out->path, "%s", l->alias ? "view" : "kernel");
    }
    out->n = t->n, out->c = t->c, out->h = t->h, out->w = t->w;
    out->offset = t->offset;
    out->bytes = t->tview.shape.bytes;
    return FV_OK;
}

/* The bytes a layer moves for tensor t: its stored bytes (channel padding
 * included), or a concat slice's own channels. */
static size_t moved(const fv_net *net, int t) {
    const fv__ntensor *x = &net->tensors[t];
    return x->host >= 0 ? x->tview.shape.dense_bytes : x->tview.shape.bytes;
}

fv_status fv_net_layer_traffic(const fv_net *net, int i, size_t *read, size_t *written) {
    FV__HOLD(net ? net->ctx : NULL);
    FV_REQUIRE(net, FV_ERR_BAD_PARAM, "fv_net_layer_traffic: net is NULL");
    FV_REQUIRE(i >= 0 && i < net->nlayers, FV_ERR_BAD_PARAM,
               "fv_net_layer_traffic: layer %d, the net has %d", i, net->nlayers);
    const fv__nlayer *l = &net->layers[i];
    const fv__ntensor *T = net->tensors;
    size_t r = 0, w = 0;
    if (l->kind == FV__L_CONCAT) { /* the inputs it copies; views were written by their producers */
        for (int j = 0; j < l->b->nin; j++) {
            int t = l->b->in[j];
            if (T[t].host == l->out) continue;
            r += moved(net, t);
            w += T[t].tview.shape.dense_bytes;
        }
    } else if (!(l->kind == FV__L_RESHAPE && l->alias)) {
        if (l->kind == FV__L_SLICE) /* the channels it copies */
            r = T[l->out].tview.shape.dense_bytes;
        else if (l->in[0] >= 0)
            r = moved(net, l->in[0]);
        if (l->kind == FV__L_BINARY && l->in[1] != l->in[0]) r += moved(net, l->in[1]);
        if (l->kind == FV__L_CONV && l->res >= 0) r += moved(net, l->res);
        w = moved(net, l->out);
    }
    if (read) *read = r;
    if (written) *written = w;
    return FV_OK;
}
