/* fovea internal: object layouts, error helpers, the backend interface.
 * Not installed. */
#ifndef FOVEA_INTERNAL_H
#define FOVEA_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "fovea/fovea.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FV__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FV__PRINTF(a, b)
#endif

/* ---- errors and logging ----------------------------------------------- */
/* Records a formatted message as this thread's last error; returns s. */
fv_status fv__error(fv_status s, const char *fmt, ...) FV__PRINTF(2, 3);
/* Prefixes the current last-error message with "what: ". Returns s. */
fv_status fv__error_prefix(fv_status s, const char *what);
/* Sends a message to the context's log callback (if any, and if level is
 * within the context's log level). ctx may be NULL (message dropped). */
void fv__log(const fv_context *ctx, fv_log_level level, const char *fmt, ...) FV__PRINTF(3, 4);

#define FV_TRY(expr)                                                                               \
    do {                                                                                           \
        fv_status fv__s = (expr);                                                                  \
        if (fv__s != FV_OK) return fv__s;                                                          \
    } while (0)

/* Return an error with a message when cond is false. */
#define FV_REQUIRE(cond, status, ...)                                                              \
    do {                                                                                           \
        if (!(cond)) return fv__error((status), __VA_ARGS__);                                      \
    } while (0)

/* ---- one thread at a time ------------------------------------------------
 * A context and the objects made from it take one thread at a time
 * (context.h). Every public call that uses them holds the context for its
 * duration: taken with a compare-and-swap, re-entrant for the thread that
 * holds it (calls inside calls), handed over freely between calls. A call
 * that finds the context held by another thread changes nothing and
 * returns FV_ERR_BAD_STATE naming itself; a destroy (void) waits instead.
 * GCC and Clang's cleanup attribute releases the hold on every return. */
typedef struct fv__hold {
    fv_context *ctx; /* NULL: nothing held (no context, or refused) */
    fv_status s;
} fv__hold;
fv__hold fv__hold_take(fv_context *ctx, const char *call);
fv__hold fv__hold_wait(fv_context *ctx);
void fv__hold_end(fv__hold *h);
/* Holds ctx (may be NULL: nothing to hold) until the enclosing function
 * returns; returns the refusal from it when another thread holds ctx. */
#define FV__HOLD(ctx)                                                                              \
    fv__hold fv__hold_ __attribute__((cleanup(fv__hold_end))) = fv__hold_take((ctx), __func__);    \
    if (fv__hold_.s != FV_OK) return fv__hold_.s
/* As FV__HOLD, waiting for the other thread instead (void calls: destroys). */
#define FV__HOLD_WAIT(ctx)                                                                         \
    fv__hold fv__hold_ __attribute__((cleanup(fv__hold_end), unused)) = fv__hold_wait(ctx)

/* ---- files ---------------------------------------------------------------
 * Opens path for reading ("rb") only if it is a regular file; the open never
 * blocks (a FIFO without a writer, a device). Returns 0 with *out set; an
 * errno value when open or fstat fails; or -1 when path exists but is not a
 * regular file, with *kind (when not NULL) saying what it is ("a FIFO (named
 * pipe)", "a directory", ...). Exported for fovea's platform layer and tools
 * (file.c). */
int fv__fopen_regular(const char *path, FILE **out, const char **kind);
/* What a stat mode is, as a phrase: "a directory", "a FIFO (named pipe)". */
const char *fv__file_kind(unsigned mode);

#define FV_ROUND_UP(x, a) ((((x) + (a)-1) / (a)) * (a))

/* ---- objects ------------------------------------------------------------ */
typedef struct fv__block {
    size_t offset, size; /* size is a multiple of FV_ALIGN */
    int used;
} fv__block;

struct fv_pool {
    fv_context *ctx;
    fv_pool_kind kind;
    char name[48];
    int owned_by_ctx;
    unsigned char *base;        /* backing allocation (aligned to FV_ALIGN) */
    unsigned char *device_base; /* MAPPED: the device alias of base; else base */
    size_t capacity;
    fv__block *blocks; /* sorted by offset; covers [0, capacity) */
    size_t nblocks, max_blocks;
    fv_pool_stats stats;
};

/* The objects a context counts, so that fv_context_destroy can refuse while
 * any the caller made is alive instead of freeing memory they still use.
 * Every create that takes a context calls fv__obj_born once the object will
 * be destroyed through its destroy function, and that destroy calls
 * fv__obj_gone. Objects that another object makes and destroys itself (a
 * filter's tensors, a pipeline's filter) are not the caller's: the maker
 * brackets those creates and destroys with fv__obj_internal(1) and (0). */
typedef enum {
    FV__OBJ_POOL, /* caller-made pools (the context's own are not counted) */
    FV__OBJ_TENSOR,
    FV__OBJ_CONV2D,
    FV__OBJ_FILTER,
    FV__OBJ_PIPELINE,
    FV__OBJ_FRAME_BUFFER,
    FV__OBJ_NET,
    FV__OBJ_CLASSIFY,
    FV__OBJ_SEGMENT,
    FV__OBJ_TIMER,
    FV__OBJ_COUNT
} fv__obj_kind;
void fv__obj_born(fv_context *ctx, fv__obj_kind kind);
void fv__obj_gone(fv_context *ctx, fv__obj_kind kind);
void fv__obj_internal(int enter);

struct fv_context {
    fv_backend backend;
    const struct fv__backend *be;
    void *be_state; /* the backend's own state */
    fv_context_info info;
    fv_pool *pools[4]; /* by fv_pool_kind; MAPPED may be NULL */
    fv_log_fn log;
    void *log_user;
    fv_log_level log_level;
    uint32_t flags;
    size_t workspace_limit;      /* bytes, from the desc (default filled) */
    struct fv__profile *profile; /* engine choices: loaded, heuristic, autotuned */
    char profile_why[256];       /* why the given profile was ignored, or "" */
    long live[FV__OBJ_COUNT];    /* objects alive, by kind */
    uintptr_t holder;            /* the holding thread's token (atomic), 0: free */
    int hold_depth;              /* calls inside calls of the holding thread */
};

struct fv_tensor {
    fv_context *ctx;
    fv_pool *pool;
    fv_tensor_shape shape;
    void *data;     /* as carved: host or device address */
    void *dev_data; /* what a GPU kernel uses (mapped alias for MAPPED pools) */
};

/* Every fv_conv2d_desc.flags bit the front end accepts (ops.c); a filter
 * takes them but FV_CONV2D_RESIDUAL (filter.c). */
#define FV__CONV2D_FLAGS                                                                           \
    ((uint32_t)(FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_PROFILE | FV_CONV2D_NO_DIRECT |                  \
                FV_CONV2D_DIRECT | FV_CONV2D_RESIDUAL))

struct fv_conv2d {
    fv_context *ctx;
    fv_conv2d_desc desc; /* normalized: defaults filled; weights/bias NULL */
    int has_bias;
    int p, q; /* output height, width */
    /* Output pixel stride in elements when the op writes a channel slice of
     * a wider tensor (a net's concat buffer: fv__conv2d_create_into), else
     * 0: the dense stride (K, padded to 8 on F16). */
    int ys;
    void *be_state; /* the backend's plan and weights */
};

/* fv_conv2d_create for an op whose output is a channel slice of a wider
 * NHWC tensor: ys elements between neighbouring output pixels (the wider
 * tensor's stored channels). ys 0 is fv_conv2d_create. With ys: ys >= K;
 * F16 also needs K and ys multiples of 8 (whole 16-byte vectors, no padding
 * lanes to write); no FV_CONV2D_RESIDUAL. The output tensors it then runs
 * on must have that W stride (and on F16 a 16-byte aligned address).
 * FV_ERR_BAD_PARAM otherwise, naming the rule. */
fv_status fv__conv2d_create_into(fv_context *ctx, const fv_conv2d_desc *desc, int ys,
                                 fv_conv2d **out);
/* The profile key of op: fv__conv2d_key, then ":y<ys>" for an op writing a
 * channel slice (its graphs and kernels differ). */
void fv__conv2d_op_key(const fv_conv2d *op, char *out, size_t n);

/* Bytes of one pixel of format f in its first plane (NV12: the Y plane's
 * 1), 0 for an unknown format (core/ops.c). */
size_t fv__pixel_bytes(fv_pixel_format f);

/* Checks an image for op (its format, size, data, strides; YUYV/UYVY width
 * even, NV12 both even) and copies it into *n with the defaults filled:
 * stride, and NV12's uv and uv_stride (core/ops.c). */
fv_status fv__image_normalize(const char *op, const fv_image *img, fv_image *n);

/* True if t lives where the context's backend kernels can read it. */
bool fv__tensor_usable(const fv_context *ctx, const fv_tensor *t);
/* Pointer a kernel of the backend uses for t. */
static inline void *fv__tensor_ptr(const fv_tensor *t) {
    return t->dev_data;
}

/* ---- the backend interface -----------------------------------------------
 * The front end (core/ops.c, core/tensor.c) checks every argument and
 * fills defaults before it calls a backend, so backends may assume valid,
 * normalized input: shapes match, dtypes are supported, pointers non-NULL. */
typedef struct fv__backend {
    const char *name;
    /* Sets ctx->be_state and fills ctx->info's device fields. */
    fv_status (*init)(fv_context *ctx, int device);
    void (*fini)(fv_context *ctx);
    fv_status (*synchronize)(fv_context *ctx);

    /* One backing allocation for a pool. *ptr: the address carve-outs use;
     * *device_alias: the GPU's address for it (MAPPED) or *ptr. Aligned to
     * at least FV_ALIGN. */
    fv_status (*mem_reserve)(fv_context *ctx, fv_pool_kind kind, size_t bytes, void **ptr,
                             void **device_alias);
    void (*mem_release)(fv_context *ctx, fv_pool_kind kind, void *ptr);
    /* Zeroes bytes at ptr (of a pool of kind); may synchronize (set-up only). */
    fv_status (*mem_zero)(fv_context *ctx, fv_pool_kind kind, void *ptr, size_t bytes);
    /* rows x width bytes, asynchronously on the context's stream; dst and
     * src may each be host or device addresses. */
    fv_status (*copy2d)(fv_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch,
                        size_t width, size_t rows);

    fv_status (*convert)(fv_context *ctx, fv_tensor *dst, const fv_tensor *src);

    /* weights KCRS FP32 (K x C/groups x R x S), bias K or NULL. */
    fv_status (*conv2d_create)(fv_conv2d *op, const float *weights, const float *bias);
    void (*conv2d_destroy)(fv_conv2d *op);
    /* res: the residual (FV_CONV2D_RESIDUAL ops; NULL otherwise). */
    fv_status (*conv2d_forward)(fv_conv2d *op, const fv_tensor *in, const fv_tensor *res,
                                fv_tensor *out);
    /* Optional: fills path/engine details (the front end has zeroed *out
     * and set path to the backend's name). */
    void (*conv2d_info)(const fv_conv2d *op, fv_conv2d_info *out);
    /* Optional: prepares forward for (in, out); arguments checked. */
    fv_status (*conv2d_bind)(fv_conv2d *op, const fv_tensor *in, const fv_tensor *res,
                             fv_tensor *out);

    /* desc normalized (strides filled). */
    fv_status (*pooling2d)(fv_context *ctx, const fv_pooling_desc *desc, const fv_tensor *in,
                           fv_tensor *out);
    /* act_alpha normalized (defaults filled). */
    fv_status (*add)(fv_context *ctx, const fv_tensor *a, const fv_tensor *b, fv_tensor *out,
                     fv_activation act, float act_alpha);
    /* src normalized: stride, uv and uv_stride filled; desc normalized. */
    fv_status (*pack)(fv_context *ctx, const fv_image *src, fv_tensor *dst, const fv_pack_desc *d);
    fv_status (*unpack)(fv_context *ctx, const fv_tensor *src, const fv_image *dst,
                        const fv_unpack_desc *d);
    /* fv_filter's edge step (core/filter.c checks the arguments; the rule is
     * backend/edge_math.h's). in: N 1, H, W, C = m or 2m (pairs: gx, gy per
     * edge channel), m 1 or 3; base: NULL or the packed input (C 1 or 3, same
     * H, W), overlaid as base * base_scale; out: same H, W, C 1 or 3 (channel
     * j takes edge channel j, or 0 when m is 1, and base channel j, or 0). */
    fv_status (*edge)(fv_context *ctx, const fv_tensor *in, int pairs, const fv_tensor *base,
                      float base_scale, fv_tensor *out, float scale, float threshold);
    /* Optional (NULL: none): fv_filter in one pass, in -> out, by the rule of
     * fovea/filter.h on unscaled byte values (core/filter.c checks the
     * arguments). d: normalized and checked; w: the B matrix core/filter.c
     * made (F16, kpad = R*S*C rounded up to 16 rows x 16 columns, row
     * (r*S + s)*C + c, column = conv output channel); in, out: normalized
     * (stride, uv, uv_stride filled), the filter's size. No allocation, no
     * synchronization (capturable). */
    fv_status (*filter_fused)(fv_context *ctx, const fv_filter_desc *d, const fv_tensor *w,
                              const fv_image *in, const fv_image *out);
    /* Optional (NULL: none): the same filter on CUDA cores (no tensor cores
     * needed). k: kernel 0 (and kernel 1, the transpose, for gradient
     * pairs) as r x s row-major floats, each FP16-rounded as the fused
     * weights are; copied into the launch. wave_less >= 0: the strip
     * kernel's strips sized for that many blocks an SM fewer than fit (at
     * least one; 0: all that fit; the same bytes for every value; ignored
     * by kernels above 3 x 3). Same rules as filter_fused. */
    fv_status (*filter_direct)(fv_context *ctx, const fv_filter_desc *d, const float *k,
                               int wave_less, const fv_image *in, const fv_image *out);

    /* Optional (NULL on the CPU backend): streams, timing events, async
     * copies and graph capture for fv_pipeline. A NULL stream means the
     * context's (compute) stream. Created at set-up only. */
    fv_status (*stream_create)(fv_context *ctx, void **stream);
    void (*stream_destroy)(fv_context *ctx, void *stream);
    fv_status (*event_create)(fv_context *ctx, void **event); /* with timing */
    void (*event_destroy)(fv_context *ctx, void *event);
    fv_status (*event_record)(fv_context *ctx, void *event, void *stream);
    /* Records event on the context's stream as a timing mark, also while
     * that stream is being captured (then as a graph node that records it
     * at each replay). */
    fv_status (*event_mark)(fv_context *ctx, void *event);
    /* 1 while the context's stream is being captured into a graph. */
    int (*capturing)(fv_context *ctx);
    /* stream waits (on the device) for event's work */
    fv_status (*stream_wait)(fv_context *ctx, void *stream, void *event);
    /* wait 0: FV_OK if the event's work has finished, else FV_ERR_NOT_READY;
     * wait 1: blocks until it has. */
    fv_status (*event_done)(fv_context *ctx, void *event, int wait);
    fv_status (*event_elapsed)(fv_context *ctx, void *start, void *end, float *ms);
    /* rows x width bytes on stream; dst and src host or device addresses. */
    fv_status (*copy2d_on)(fv_context *ctx, void *stream, void *dst, size_t dpitch, const void *src,
                           size_t spitch, size_t width, size_t rows);
    /* Capture of the work queued on the context's stream between begin and
     * end into an executable graph; launch replays it on that stream. */
    fv_status (*graph_begin)(fv_context *ctx);
    fv_status (*graph_end)(fv_context *ctx, void **graph);
    fv_status (*graph_launch)(fv_context *ctx, void *graph);
    void (*graph_destroy)(fv_context *ctx, void *graph);
} fv__backend;

extern const fv__backend fv__backend_cpu;
#if FV_BUILT_WITH_CUDA
extern const fv__backend fv__backend_cuda;
/* Whether a usable CUDA GPU exists (device index given); when not, reason
 * says why. Never sets the last error. */
bool fv__cuda_usable(int device, char *reason, size_t reason_size);
/* fv_cuda_device_count's CUDA part (count not NULL). */
fv_status fv__cuda_device_count(int *count);
/* cuDNN's sub-libraries loaded ahead on a helper thread, to overlap the
 * CUDA context's creation (backend/cuda/cudnn_preload.c): _start (in
 * fv__cuda_usable, once a GPU is found) starts it once per process; _wait
 * joins it (once; logs to ctx when not NULL) before fv_context_create
 * returns. */
void fv__cudnn_preload_start(void);
void fv__cudnn_preload_wait(fv_context *ctx);
#endif

/* Activation on a float (CPU reference; alpha already normalized). */
float fv__activate(fv_activation act, float alpha, float x);
/* The default alpha filled in for alpha == 0. */
float fv__activation_alpha(fv_activation act, float alpha);

/* Internal pool creation for the context's own pools. */
fv_status fv__pool_create(fv_context *ctx, fv_pool_kind kind, size_t bytes, const char *name,
                          fv_pool **out);
void fv__pool_destroy(fv_pool *pool);

#ifdef __cplusplus
}
#endif
#endif
