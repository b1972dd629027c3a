/* Streams, timing events, async copies and graph capture for fv_pipeline
 * (the backend table's optional members). All of it is set-up except
 * record/wait/done/elapsed/copy/launch, which only queue or query. */
#include "cuda_internal.h"

fv_status fv__cuda_stream_create(fv_context *ctx, void **out) {
    FV_TRY(fv__cuda_bind(ctx));
    cudaStream_t s;
    FV_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *out = s;
    return FV_OK;
}

void fv__cuda_stream_destroy(fv_context *ctx, void *s) {
    if (!s || fv__cuda_bind(ctx) != FV_OK) return;
    cudaStreamSynchronize((cudaStream_t)s);
    cudaStreamDestroy((cudaStream_t)s);
}

static cudaStream_t stream_of(fv_context *ctx, void *s) {
    return s ? (cudaStream_t)s : fv__cuda_stream(ctx);
}

fv_status fv__cuda_event_create(fv_context *ctx, void **out) {
    FV_TRY(fv__cuda_bind(ctx));
    cudaEvent_t e;
    FV_CUDA_TRY(cudaEventCreate(&e));
    *out = e;
    return FV_OK;
}

void fv__cuda_event_destroy(fv_context *ctx, void *e) {
    if (!e || fv__cuda_bind(ctx) != FV_OK) return;
    cudaEventSynchronize((cudaEvent_t)e);
    cudaEventDestroy((cudaEvent_t)e);
}

fv_status fv__cuda_event_record(fv_context *ctx, void *e, void *s) {
    FV_CUDA_TRY(cudaEventRecord((cudaEvent_t)e, stream_of(ctx, s)));
    return FV_OK;
}

fv_status fv__cuda_event_mark(fv_context *ctx, void *e) {
    cudaStream_t s = fv__cuda_stream(ctx);
    /* in a capture a plain record only orders streams; External makes it a
     * node that records the event at each replay */
    unsigned flags = fv__cuda_capturing(ctx) ? cudaEventRecordExternal : cudaEventRecordDefault;
    FV_CUDA_TRY(cudaEventRecordWithFlags((cudaEvent_t)e, s, flags));
    return FV_OK;
}

int fv__cuda_capturing(fv_context *ctx) {
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(fv__cuda_stream(ctx), &st) != cudaSuccess) return 0;
    return st != cudaStreamCaptureStatusNone;
}

fv_status fv__cuda_stream_wait(fv_context *ctx, void *s, void *e) {
    FV_CUDA_TRY(cudaStreamWaitEvent(stream_of(ctx, s), (cudaEvent_t)e, 0));
    return FV_OK;
}

fv_status fv__cuda_event_done(fv_context *ctx, void *e, int wait) {
    (void)ctx;
    if (wait) {
        FV_CUDA_TRY(cudaEventSynchronize((cudaEvent_t)e));
        return FV_OK;
    }
    cudaError_t r = cudaEventQuery((cudaEvent_t)e);
    if (r == cudaErrorNotReady) return FV_ERR_NOT_READY;
    FV_CUDA_TRY(r);
    return FV_OK;
}

fv_status fv__cuda_event_elapsed(fv_context *ctx, void *a, void *b, float *ms) {
    (void)ctx;
    FV_CUDA_TRY(cudaEventElapsedTime(ms, (cudaEvent_t)a, (cudaEvent_t)b));
    return FV_OK;
}

fv_status fv__cuda_copy2d_on(fv_context *ctx, void *stream, void *dst, size_t dpitch,
                             const void *src, size_t spitch, size_t width, size_t rows) {
    if (width == 0 || rows == 0) return FV_OK;
    cudaStream_t s = stream_of(ctx, stream);
    if (rows == 1 || (dpitch == width && spitch == width))
        FV_CUDA_TRY(cudaMemcpyAsync(dst, src, width * rows, cudaMemcpyDefault, s));
    else
        FV_CUDA_TRY(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDefault, s));
    return FV_OK;
}

fv_status fv__cuda_graph_begin(fv_context *ctx) {
    FV_TRY(fv__cuda_bind(ctx));
    FV_CUDA_TRY(cudaStreamBeginCapture(fv__cuda_stream(ctx), cudaStreamCaptureModeThreadLocal));
    return FV_OK;
}

fv_status fv__cuda_graph_end(fv_context *ctx, void **out) {
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    FV_CUDA_TRY(cudaStreamEndCapture(fv__cuda_stream(ctx), &g));
    cudaError_t r = FV__GRAPH_INSTANTIATE(&x, g);
    cudaGraphDestroy(g);
    FV_CUDA_TRY(r);
    /* upload now: otherwise the first launch does it (a slower first frame) */
    r = cudaGraphUpload(x, fv__cuda_stream(ctx));
    if (r == cudaSuccess) r = cudaStreamSynchronize(fv__cuda_stream(ctx));
    if (r != cudaSuccess) {
        cudaGraphExecDestroy(x);
        FV_CUDA_TRY(r);
    }
    *out = x;
    return FV_OK;
}

fv_status fv__cuda_graph_launch(fv_context *ctx, void *x) {
    FV_CUDA_TRY(cudaGraphLaunch((cudaGraphExec_t)x, fv__cuda_stream(ctx)));
    return FV_OK;
}

void fv__cuda_graph_destroy(fv_context *ctx, void *x) {
    if (!x || fv__cuda_bind(ctx) != FV_OK) return;
    cudaGraphExecDestroy((cudaGraphExec_t)x);
}
