/* The convolution engine's internals, shared by conv_engine.c (the op),
 * conv_graph.c (cuDNN graph API: graphs, heuristics, engine configs),
 * conv_cands.c (candidates), conv_plan_cache.c (plans kept in the profile)
 * and conv_tune.c (autotuning). */
#ifndef FOVEA_CONV_ENGINE_H
#define FOVEA_CONV_ENGINE_H

#include "../../core/profile.h"
#include "cuda_internal.h"
#include "kernels/conv_direct.cuh"
#include "kernels/conv_gemm.cuh"

typedef cudnnBackendDescriptor_t fv__bdesc;

/* How the op is expressed to cuDNN. */
typedef struct fv__conv_form {
    int groups; /* groups in the cuDNN op */
    int wc;     /* input channels per group in W */
    int kp;     /* output channels (padded to 8) */
    int cs;     /* input channels as stored: the stride between pixels */
    int cd;     /* input channels declared to cuDNN (<= cs): C, or C padded to 4 or 8;
                   fovea's direct kernel: the channels it reads */
    int kr;     /* direct kernel: weights per (k, filter row), S * cd rounded up to
                   16 (zero past S * cd); 0 for cuDNN's forms (S * wc) */
    int pair;   /* direct kernel: 4 channels in pairs of pixels (conv_direct.cuh) */
    int pc;     /* direct kernel: packed taps of pc channels (conv_direct.cuh; then wc
                   = pc, cd = 4); 0: off */
    int ys;     /* output pixel stride: kp, or the op's ys (a channel slice of a wider
                   tensor: fv__conv2d_create_into; then kp == K) */
    char name[96];
} fv__conv_form;

/* One runnable way to do the op: a finalized graph plan, a legacy algo (with
 * or without cuDNN's fused bias and activation), fovea's direct kernel or
 * its split-reduction GEMM. */
typedef struct fv__conv_cand {
    fv__engine_path path;
    fv__conv_form f;
    fv__bdesc plan;                 /* graph path */
    cudnnConvolutionFwdAlgo_t algo; /* legacy and legacy-fused paths */
    fv__conv_direct_geom dg;        /* direct path */
    fv__conv_gemm_geom gg;          /* gemm path (gg.counters: owned by whoever runs it) */
    size_t ws;
    int tensor_cores;
    int plan_cached;          /* plan deserialized from the profile (conv_plan_cache.c) */
    fv__engine_choice choice; /* engine, knobs, cdecl: what a profile stores */
    char engine[64], how[160];
} fv__conv_cand;

/* Whether candidates of path p run a cuDNN graph plan (need a variant pack);
 * the legacy and legacy-fused paths do not. */
static inline int fv__conv_uses_graph(fv__engine_path p) {
    return p == FV__PATH_GRAPH || p == FV__PATH_GRAPH_SPLIT || p == FV__PATH_GRAPH_PW ||
           p == FV__PATH_GRAPH_PW16;
}

/* The device bias: kp FP16 values, then (at the next 128-byte boundary) the
 * same kp values in FP32 for the graph-pw path and fovea's kernels. */
static inline size_t fv__conv_bias_bytes(int kp) {
    return FV_ROUND_UP((size_t)kp * 2, FV_ALIGN) + (size_t)kp * 4;
}
static inline const void *fv__conv_bias_f32(const void *b, int kp) {
    return b ? (const char *)b + FV_ROUND_UP((size_t)kp * 2, FV_ALIGN) : NULL;
}

/* The bias pointer a graph candidate's variant pack binds, or NULL when its
 * graph has no bias tensor. */
static inline const void *fv__conv_graph_bias(fv__engine_path p, int has_bias, const void *b,
                                              int kp) {
    if (!has_bias || p == FV__PATH_GRAPH_SPLIT || !fv__conv_uses_graph(p)) return NULL;
    return p == FV__PATH_GRAPH_PW ? fv__conv_bias_f32(b, kp) : b;
}

/* The residual pointer a candidate's variant pack binds: graph paths but
 * graph-split (whose epilogue kernel adds it) take it in the graph. */
static inline const void *fv__conv_graph_z(fv__engine_path p, const void *z) {
    return p == FV__PATH_GRAPH_SPLIT || !fv__conv_uses_graph(p) ? NULL : z;
}

/* Descriptors of one graph, destroyed together. */
typedef struct fv__conv_graph {
    fv__bdesc t[8]; /* x, w, b, y, t1, t2, z, t3 */
    fv__bdesc conv, conv_op, pw[3], pw_op[3];
    fv__bdesc graph;
} fv__conv_graph;

/* The revision of what fv__conv_graph_build builds for an (op, form, path):
 * plans cached in profiles are bound to it. Bump it with any change to the
 * graphs (tensors, uids, types, strides, alignment, operations): cached
 * plans of the old graphs are then refused and compiled anew. */
#define FV__CONV_GRAPH_REV 1

/* The graph of a path: graph (conv -> bias add -> residual add (an
 * FV_CONV2D_RESIDUAL op) -> activation, FP32 intermediates, FP16 bias), graph-split (the
 * convolution alone: bias and activation left to the epilogue kernel), graph-pw (as graph with an
 * FP32 bias; an identity tail when the op has neither bias nor activation) or graph-pw16 (as graph
 * with FP16 intermediates). */
cudnnStatus_t fv__conv_graph_build(const fv_conv2d *op, const fv__conv_form *f,
                                   fv__engine_path path, cudnnHandle_t h, fv__conv_graph *g);
/* Whether graph-pw differs from graph for op (a bias, or nothing to fuse). */
int fv__conv_graph_pw_differs(const fv_conv2d *op);
void fv__conv_graph_destroy(fv__conv_graph *g);
/* Engine configs of a heuristics mode, best first, into cfgs (created here;
 * destroy each). Returns how many (0 on any failure). */
int fv__conv_graph_configs(fv__bdesc graph, cudnnBackendHeurMode_t mode, fv__bdesc *cfgs, int max);
/* Finalizes a plan for cfg; *ws its workspace. */
cudnnStatus_t fv__conv_plan(fv__bdesc cfg, cudnnHandle_t h, fv__bdesc *plan, int64_t *ws);
/* Engine global index, knobs and the tensor-core note of cfg. */
void fv__conv_cfg_describe(fv__bdesc cfg, fv__engine_choice *c, int *tensor_cores);
/* Rebuilds an engine config from a stored choice (no heuristics). */
cudnnStatus_t fv__conv_cfg_from_choice(fv__bdesc graph, const fv__engine_choice *c, fv__bdesc *cfg);

/* Legacy API: descriptors of a formulation, and its algos best first. b and
 * act (the bias, 1 x kp x 1 x 1 half, and the activation of
 * cudnnConvolutionBiasActivationForward) are made only for ops the fused
 * call can run (fv__conv_legacy_fusable); NULL otherwise, or when cuDNN
 * refused them (the legacy path still runs). */
typedef struct fv__conv_legacy {
    cudnnTensorDescriptor_t x, y, b;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
    cudnnActivationDescriptor_t act;
} fv__conv_legacy;
/* On failure some descriptors may exist: fv__conv_legacy_destroy them. */
fv_status fv__conv_legacy_init(const fv_conv2d *op, const fv__conv_form *f, fv__conv_legacy *l);
/* Takes zeroed or initialized descriptors; leaves them zeroed. */
void fv__conv_legacy_destroy(fv__conv_legacy *l);
/* Whether the legacy-fused path runs op with algo: the op has a bias or an
 * activation (else plain legacy is the same), the activation is one cuDNN's
 * legacy API has (not leaky ReLU), and identity runs with
 * IMPLICIT_PRECOMP_GEMM only (a cuDNN rule). */
int fv__conv_legacy_fusable(const fv_conv2d *op, cudnnConvolutionFwdAlgo_t algo);
const char *fv__conv_algo_name(int algo);

/* A variant pack binding device pointers to the graph's tensors; b: the
 * bias tensor's (fv__conv_graph_bias), NULL when the graph has none; z: the
 * residual's (fv__conv_graph_z), NULL when the graph has none. */
cudnnStatus_t fv__conv_variant_pack(const void *x, const void *w, void *y, const void *b,
                                    const void *z, void *ws, fv__bdesc *vp);
/* Runs a candidate once on the context's stream: graph candidates through vp
 * (made for the same pointers), legacy and legacy-fused ones through l (b: kp
 * halves, zeros when the op has no bias); then the epilogue the path needs.
 * z: the residual (FV_CONV2D_RESIDUAL ops), else NULL. No host allocation. */
fv_status fv__conv_run(fv_conv2d *op, const fv__conv_cand *c, const fv__conv_legacy *l,
                       fv__bdesc vp, const void *x, void *y, const void *z, const void *w,
                       const void *b, void *ws);

/* ---- candidates (conv_cands.c) ----------------------------------------- */
/* Destroys c's plan (if any). */
void fv__conv_cand_free(fv__conv_cand *c);
/* cuDNN's candidates of form f into out[*n..] (at most max): graph plans
 * of heuristics list A (fused, then bare + epilogue) and, when tuning, the
 * fallback list and the legacy algorithms (plain and fused); without tuning
 * the first that builds. l receives the legacy descriptors. Appends
 * "<sep>[form: what was found]" to why. */
void fv__conv_cudnn_candidates(fv_conv2d *op, const fv__conv_form *f, int tune, fv__conv_cand *out,
                               int *n, int max, fv__conv_legacy *l, const char *sep, char *why,
                               size_t why_n);
/* The direct kernel's variants of form f (f->kr set) into out[*n..], the
 * likely fastest first; the first only when first_only. Returns how many;
 * why says why when none. */
int fv__conv_direct_candidates(fv_conv2d *op, const fv__conv_form *f, int first_only,
                               fv__conv_cand *out, int *n, int max, char *why, size_t why_n);
/* Whether fovea's split-reduction GEMM is offered for op on form f: groups
 * 1, FP16, f the dense form reading every stored channel, and few output
 * values (at most 2 x SMs tiles of 64 x 64: larger outputs fill the GPU
 * with cuDNN's own tiles, which run faster). preferred: without timing it
 * is the better bet: tiles of 64 x 32 for at most half the SMs and a
 * reduction of 64 steps or more (H100: 16x16x128 -> 8x8x256 7x7 s2 ran in
 * 0.016 ms vs cuDNN's 0.030; 32x32x64 -> 16x16x128 3x3 s2, 18 steps, in
 * 0.010 vs 0.0076). */
int fv__conv_gemm_offered(const fv_conv2d *op, const fv__conv_form *f, int *preferred);
/* Its variants (32 or 64 output channels a block x splits) into out[*n..];
 * the heuristic pick first, only it when first_only. Returns how many. */
int fv__conv_gemm_candidates(fv_conv2d *op, const fv__conv_form *f, int first_only,
                             fv__conv_cand *out, int *n, int max);
/* The candidate a profile entry names (e: the context profile's entry),
 * rebuilt without heuristics, among forms[0..nf); a graph plan from the
 * entry's cached plan when use_cached and it loads (conv_plan_cache.c),
 * else finalized anew. FV_ERR_NOT_SUPPORTED when it no longer builds here. */
fv_status fv__conv_from_profile(fv_conv2d *op, const fv__engine_choice *e,
                                const fv__conv_form *forms, int nf, int use_cached,
                                fv__conv_cand *out, fv__conv_legacy *l);

/* ---- plans cached in the profile (conv_plan_cache.c) ------------------- */
/* Serializes c's finalized graph plan into op's profile entry (the context's
 * profile), replacing the entry's blob, when its engine compiles at run time
 * (cuDNN serializes only those plans). Best effort: a plan cuDNN does not
 * serialize, a missing entry or a full profile leave no blob (debug log);
 * fv_last_error is left as it was. */
void fv__conv_plan_cache_store(fv_conv2d *op, const fv__conv_cand *c);
/* The plan of entry e on form f, deserialized from e's cached blob instead of
 * compiled: sets c->plan, c->ws, c->tensor_cores and c->plan_cached. Returns
 * FV_ERR_NOT_SUPPORTED, with a debug log and c untouched, when e has no blob,
 * the blob was made for another graph, cuDNN refuses it (other version, GPU,
 * corrupt text) or its workspace is over the limit; fv_last_error is left as
 * it was. */
fv_status fv__conv_plan_cache_load(fv_conv2d *op, const fv__engine_choice *e,
                                   const fv__conv_form *f, fv__conv_cand *c);

/* Times candidates (warm-up, median of events) with scratch input/output
 * carved from the device pool, then the (up to 4) fastest within 10% of the
 * best again, in turns of 8 runs; ms[i] gets each median (INFINITY when it
 * failed). Returns FV_ERR_OUT_OF_MEMORY when scratch cannot be carved. */
fv_status fv__conv_time(fv_conv2d *op, fv__conv_cand *cands, fv__conv_legacy *legacy, int n,
                        const void *w, const void *b, float *ms);

#endif
