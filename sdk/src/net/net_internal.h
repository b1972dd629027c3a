/* fv_net internals: the builder's layer records (builder.c), the created
 * net (net.c, net_run.c) and the memory planner (plan.c). Not installed. */
#ifndef FOVEA_NET_INTERNAL_H
#define FOVEA_NET_INTERNAL_H

#include "../core/internal.h"
#include "../backend/net_ops.h"
#include "fovea/net.h"

typedef enum fv__lkind {
    FV__L_INPUT = 0,
    FV__L_CONV,  /* also fc: a convolution with an H x W kernel */
    FV__L_CONVT, /* transposed convolution */
    FV__L_BN,
    FV__L_ACT,
    FV__L_BINARY,
    FV__L_AFFINE,
    FV__L_POOL,
    FV__L_GPOOL,
    FV__L_SOFTMAX,
    FV__L_CONCAT,
    FV__L_SLICE,
    FV__L_RESHAPE,
    FV__L_PAD,
    FV__L_RESIZE,
    FV__L_KINDS
} fv__lkind;

/* One builder layer: everything copied, nothing owned by the caller. */
typedef struct fv__blayer {
    fv__lkind kind;
    int is_fc;
    char name[64];
    int *in; /* tensor ids */
    int nin;
    int out;
    /* conv, convt, fc */
    int k, r, s, stride_h, stride_w, dil_h, dil_w, groups, pad_h, pad_w, opad_h, opad_w;
    float *w; /* conv: K x C/g x R x S; convt: C x K/g x R x S */
    float *bias;
    size_t nw;
    /* activation (conv, convt, fc, act, binary, affine) */
    int act;
    float alpha, beta;
    /* bn: gamma, beta, mean, var (C each); affine: scale, shift (count each) */
    float *v[4];
    int count;
    float eps;
    int op;               /* binary op; gpool: avg */
    fv__pool_params pool; /* pool (mode, window, stride, pad top/left, dilation) */
    fv__resize_params resize;
    int pad[4]; /* pad layer */
    float value;
    int begin, end; /* slice */
} fv__blayer;

typedef struct fv__btensor {
    int n, c, h, w;
    int producer; /* builder layer index */
} fv__btensor;

struct fv_net_builder {
    fv__blayer *layers;
    int nlayers, cap_layers;
    fv__btensor *tensors;
    int ntensors, cap_tensors;
    int ninputs;
    int *outputs;
    char (*output_names)[64];
    int noutputs, cap_outputs;
};

/* A layer of a created net (after fusion). */
typedef struct fv__nlayer {
    const fv__blayer *b; /* the builder layer it runs (its copy in the net) */
    fv__lkind kind;
    char name[64];
    char fused[48];
    int in[2]; /* tensor ids (binary: a, b); concat: b->in; conv: in[1] the folded BN's
                  builder index, or -1 */
    int res;   /* conv: the residual tensor added before the activation (a fused add), or -1 */
    int out;   /* tensor id written */
    /* conv / fc */
    fv_conv2d *conv;
    fv__fc *fc; /* an fc the backend runs itself (cuBLASLt), instead of conv */
    /* convt weights, affine/bn vectors: backend memory */
    fv_tensor *consts[2];
    int act;
    float alpha, beta;
    int alias; /* 1: out is in[0]'s storage (reshape with the same layout) */
    int views; /* concat: inputs written in place by their producers (no copy) */
} fv__nlayer;

typedef struct fv__ntensor {
    int n, c, h, w;
    int buffer;      /* planner buffer index, or -1 (net input/output tensor) */
    int io;          /* 0, or 1 + input index, or -(1 + output index) */
    int first, last; /* layer indexes (def, last use) */
    int consumers;
    /* A concat input written in place: channels [c0, c0 + c) of tensor host
     * (the concat's output, itself possibly such a view), host's pixel
     * stride; no buffer of its own. host -1 otherwise. */
    int host, c0;
    fv__view view;   /* whole tensor */
    fv_tensor tview; /* the same as an fv_tensor (conv engines take those) */
    size_t offset;   /* in the arena; SIZE_MAX outside it */
    size_t bytes;
} fv__ntensor;

struct fv_net {
    fv_context *ctx;
    const fv__net_ops *ops;
    fv_net_builder *b; /* a private copy: layers keep pointers into it */
    uint32_t flags;
    fv_dtype dtype;
    fv__nlayer *layers;
    int nlayers;
    fv__ntensor *tensors;
    int ntensors;
    int *inputs, *outputs; /* tensor ids */
    int ninputs, noutputs;
    fv_tensor **in_t, **out_t;         /* owned */
    fv_tensor **in_stage, **out_stage; /* F32 staging (CUDA only; NULL on CPU) */
    void *arena;                       /* carve-out of the DEVICE pool */
    void *graph;                       /* captured forward, or NULL */
    double clone_ms;                   /* the builder's copy, for the create log */
    fv_net_info info;
};

/* builder.c */
const char *fv__lkind_name(fv__lkind k, const fv__blayer *l);
fv_status fv__net_builder_clone(const fv_net_builder *b, fv_net_builder **out);

/* plan.c: offsets for count buffers of sizes[i] bytes (multiples of
 * FV_ALIGN) alive over layers [first[i], last[i]] (inclusive): no two
 * buffers alive at once overlap. Writes offsets, the arena size and the
 * lower bound (the largest sum of sizes alive at one layer). */
fv_status fv__net_plan(const size_t *sizes, const int *first, const int *last, int count,
                       size_t *offsets, size_t *arena, size_t *lower_bound);

/* net_run.c */
double fv__net_now_ms(void); /* CLOCK_MONOTONIC, ms */
fv_status fv__net_run_layer(fv_net *net, int i);
fv_status fv__net_run_all(fv_net *net);

#endif
