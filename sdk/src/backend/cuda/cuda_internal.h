/* CUDA backend internals shared by its host files (and by the convolution
 * engine in cuda_conv.c): the backend's per-context state and accessors. */
#ifndef FOVEA_CUDA_INTERNAL_H
#define FOVEA_CUDA_INTERNAL_H

#include <pthread.h>
#include "cuda_check.h"

#define FV__CUDA_EVENTS 32 /* events in a context's pool */

typedef struct fv__cuda_state {
    int device;
    int sm;           /* major * 10 + minor */
    int can_map_host; /* cudaDevAttrCanMapHostMemory */
    /* fovea's conv kernels, the conv epilogues and the filter's DIRECT
     * kernels launch as programmatic dependents of the kernel before them (SM 9.0+,
     * kernels/pdl.cuh), unless FV_NO_PDL=1 in the environment (compute-
     * sanitizer's racecheck stalled on them) */
    int pdl;
    cudaStream_t stream;      /* compute: every op, kernel and copy2d */
    cudaStream_t own_stream;  /* the context's own compute stream; stream may be the caller's */
    cudaStream_t copy_stream; /* uploads/downloads overlapped with compute */
    cudnnHandle_t cudnn;      /* bound to stream */
    cudaEvent_t events[FV__CUDA_EVENTS]; /* created with cudaEventDisableTiming */
    unsigned char event_used[FV__CUDA_EVENTS];
    void *ws; /* the workspace shared by all convolutions (device pool) */
    size_t ws_bytes;
    /* cublasLtHandle_t, made by the first cuBLASLt layer (cuda_fc.c); NULL
     * before (void *: the .cu files that include this need no cuBLAS) */
    void *lt;
    /* cuBLASLt's first handle costs ~0.1 s (its initialisation): a net
     * with fc layers starts it on this thread while its convolutions are
     * made (fv__cuda_fc_prepare); the first fc (or the context's end)
     * joins it. lt_loading: started, not joined. */
    int lt_loading;
    pthread_t lt_thread;
    void *lt_made;     /* the thread's handle, or NULL */
    int lt_made_error; /* its cuBLAS status */
} fv__cuda_state;

/* cuda_fc.c: the context's cuBLASLt handle made on a helper thread (see
 * lt_loading); fv__cuda_fc_join waits for it (teardown too). */
void fv__cuda_fc_prepare(fv_context *ctx);
void fv__cuda_fc_join(fv_context *ctx);

/* The number of cuDNN parts the preload thread (cudnn_preload.c) loaded;
 * -1 before it was joined (fv__cudnn_preload_wait, internal.h). */
int fv__cudnn_preload_count(void);

static inline fv__cuda_state *fv__cuda_state_of(const fv_context *ctx) {
    return (fv__cuda_state *)ctx->be_state;
}

/* The compute stream: all work of the context is queued here. */
static inline cudaStream_t fv__cuda_stream(const fv_context *ctx) {
    return fv__cuda_state_of(ctx)->stream;
}
/* The non-blocking copy stream (order it against the compute stream with
 * events). */
static inline cudaStream_t fv__cuda_copy_stream(const fv_context *ctx) {
    return fv__cuda_state_of(ctx)->copy_stream;
}
/* The context's cuDNN handle, already bound to the compute stream. */
static inline cudnnHandle_t fv__cuda_cudnn(const fv_context *ctx) {
    return fv__cuda_state_of(ctx)->cudnn;
}
static inline int fv__cuda_device(const fv_context *ctx) {
    return fv__cuda_state_of(ctx)->device;
}

/* Makes the context's device current on the calling thread (cheap when it
 * already is). Every entry point that calls CUDA does this first. */
fv_status fv__cuda_bind(const fv_context *ctx);

/* Takes an event from the context's pool (no allocation); FV_ERR_OUT_OF_MEMORY
 * when all FV__CUDA_EVENTS are taken. Give it back with fv__cuda_event_release. */
fv_status fv__cuda_event_acquire(fv_context *ctx, cudaEvent_t *out);
void fv__cuda_event_release(fv_context *ctx, cudaEvent_t ev);

/* Memory (cuda_memory.c). */
fv_status fv__cuda_mem_reserve(fv_context *ctx, fv_pool_kind kind, size_t bytes, void **ptr,
                               void **device_alias);
void fv__cuda_mem_release(fv_context *ctx, fv_pool_kind kind, void *ptr);
fv_status fv__cuda_mem_zero(fv_context *ctx, fv_pool_kind kind, void *ptr, size_t bytes);
fv_status fv__cuda_copy2d(fv_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch,
                          size_t width, size_t rows);

/* Ops (cuda_ops.c). */
fv_status fv__cuda_convert(fv_context *ctx, fv_tensor *dst, const fv_tensor *src);
fv_status fv__cuda_pooling2d(fv_context *ctx, const fv_pooling_desc *d, const fv_tensor *in,
                             fv_tensor *out);
fv_status fv__cuda_add(fv_context *ctx, const fv_tensor *a, const fv_tensor *b, fv_tensor *out,
                       fv_activation act, float alpha);
fv_status fv__cuda_pack(fv_context *ctx, const fv_image *src, fv_tensor *dst,
                        const fv_pack_desc *d);
fv_status fv__cuda_unpack(fv_context *ctx, const fv_tensor *src, const fv_image *dst,
                          const fv_unpack_desc *d);
fv_status fv__cuda_edge(fv_context *ctx, const fv_tensor *in, int pairs, const fv_tensor *base,
                        float base_scale, fv_tensor *out, float scale, float threshold);

/* Convolution (cuda_conv.c). */
fv_status fv__cuda_conv2d_create(fv_conv2d *op, const float *weights, const float *bias);
void fv__cuda_conv2d_destroy(fv_conv2d *op);
fv_status fv__cuda_conv2d_forward(fv_conv2d *op, const fv_tensor *in, const fv_tensor *res,
                                  fv_tensor *out);
fv_status fv__cuda_conv2d_bind(fv_conv2d *op, const fv_tensor *in, const fv_tensor *res,
                               fv_tensor *out);
void fv__cuda_conv2d_info(const fv_conv2d *op, fv_conv2d_info *out);

/* cuda_async.c: fv_pipeline's streams, events, copies and graphs (see the
 * backend table in core/internal.h). */
fv_status fv__cuda_stream_create(fv_context *ctx, void **stream);
void fv__cuda_stream_destroy(fv_context *ctx, void *stream);
fv_status fv__cuda_event_create(fv_context *ctx, void **event);
void fv__cuda_event_destroy(fv_context *ctx, void *event);
fv_status fv__cuda_event_record(fv_context *ctx, void *event, void *stream);
fv_status fv__cuda_event_mark(fv_context *ctx, void *event);
int fv__cuda_capturing(fv_context *ctx);
fv_status fv__cuda_stream_wait(fv_context *ctx, void *stream, void *event);
fv_status fv__cuda_event_done(fv_context *ctx, void *event, int wait);
fv_status fv__cuda_event_elapsed(fv_context *ctx, void *start, void *end, float *ms);
fv_status fv__cuda_copy2d_on(fv_context *ctx, void *stream, void *dst, size_t dpitch,
                             const void *src, size_t spitch, size_t width, size_t rows);
fv_status fv__cuda_graph_begin(fv_context *ctx);
fv_status fv__cuda_graph_end(fv_context *ctx, void **graph);
fv_status fv__cuda_graph_launch(fv_context *ctx, void *graph);
void fv__cuda_graph_destroy(fv_context *ctx, void *graph);

/* cudaGraphInstantiate(exec, graph, flags) is CUDA 12's; CUDA 11.x (JetPack 5)
 * takes (exec, graph, error node, log buffer, log size). */
#if CUDART_VERSION >= 12000
#define FV__GRAPH_INSTANTIATE(exec, graph) cudaGraphInstantiate(exec, graph, 0)
#else
#define FV__GRAPH_INSTANTIATE(exec, graph) cudaGraphInstantiate(exec, graph, NULL, NULL, 0)
#endif

#endif
