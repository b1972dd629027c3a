/* The raw legacy-cuDNN peer of the convolution benchmarks: descriptors,
 * cudnnFindConvolutionForwardAlgorithmEx over every algorithm, and
 * cudnnConvolutionForward, with no fovea in between. Also the FP32 reference
 * the benchmarks check fovea against (float tensors, CUDNN_FMA_MATH: no TF32).
 * Every CUDA and cuDNN call is checked; failures print the call, the error
 * and the place, and return nonzero. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cudnn.h>
#include "bench_conv.h"

static int cu_fail(cudaError_t e, const char *call, const char *file, int line) {
    if (e == cudaSuccess) return 0;
    fprintf(stderr, "fovea-bench: %s failed: %s (%s) at %s:%d\n", call, cudaGetErrorName(e),
            cudaGetErrorString(e), file, line);
    return 1;
}

static int dnn_fail(cudnnStatus_t e, const char *call, const char *file, int line) {
    if (e == CUDNN_STATUS_SUCCESS) return 0;
    char last[512] = "";
    cudnnGetLastErrorString(last, sizeof last);
    fprintf(stderr, "fovea-bench: %s failed: %s at %s:%d%s%s\n", call, cudnnGetErrorString(e), file,
            line, last[0] ? ": " : "", last);
    return 1;
}

#define CU(call)  cu_fail((call), #call, __FILE__, __LINE__)
#define DNN(call) dnn_fail((call), #call, __FILE__, __LINE__)

static struct {
    cudnnHandle_t h;
    cudaStream_t stream;
    void *ws;
    size_t ws_bytes;
    char lib[512];
} g;

struct lc_conv {
    lc_desc d;
    int p, q;
    size_t xn, yn, wn, elem; /* element counts, bytes per element */
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    void **x, **y, *w;
    float *stage;     /* host staging: the conv's layout, float */
    fv_half *stage16; /* the same as halves */
    int algo;
    float find_ms;
    size_t algo_ws;
    int algo_math;
};

int lc_init(cudaStream_t stream, size_t ws_limit) {
    if (g.h) return 0;
    if (DNN(cudnnCreate(&g.h))) return 1;
    g.stream = stream;
    if (DNN(cudnnSetStream(g.h, stream))) return 1;
    /* the largest workspace that fits, halving from the limit */
    for (size_t b = ws_limit; b >= ((size_t)1 << 20); b /= 2) {
        if (cudaMalloc(&g.ws, b) == cudaSuccess) {
            g.ws_bytes = b;
            break;
        }
        (void)cudaGetLastError();
        g.ws = NULL;
    }
    if (!g.ws) {
        fprintf(stderr, "fovea-bench: cannot allocate even 1 MiB of workspace for legacy cuDNN\n");
        return 1;
    }
    if (g.ws_bytes < ws_limit)
        fprintf(stderr, "fovea-bench: warning: legacy cuDNN workspace %zu bytes, not %zu\n",
                g.ws_bytes, ws_limit);
    Dl_info info;
    if (dladdr((void *)&cudnnGetVersion, &info) && info.dli_fname)
        snprintf(g.lib, sizeof g.lib, "%s", info.dli_fname);
    else
        snprintf(g.lib, sizeof g.lib, "?");
    return 0;
}

void lc_shutdown(void) {
    if (g.ws) cudaFree(g.ws);
    if (g.h) cudnnDestroy(g.h);
    memset(&g, 0, sizeof g);
}

int lc_cudnn_version(void) {
    return (int)cudnnGetVersion();
}
const char *lc_cudnn_library(void) {
    return g.lib[0] ? g.lib : "?";
}
void lc_cudnn_mapped(char *buf, size_t n) {
    size_t used = 0;
    buf[0] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        if (!path || !strstr(path, "libcudnn")) continue;
        path[strcspn(path, "\n")] = 0;
        if (strstr(buf, path)) continue; /* each file once */
        int w = snprintf(buf + used, n - used, "%s%s", used ? ":" : "", path);
        if (w < 0 || (size_t)w >= n - used) break;
        used += (size_t)w;
    }
    fclose(f);
}

size_t lc_workspace_bytes(void) {
    return g.ws_bytes;
}

const char *lc_algo_name(int algo) {
    static const char *names[LC_ALGO_COUNT] = {
        "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
        "WINOGRAD",      "WINOGRAD_NONFUSED"};
    return algo >= 0 && algo < LC_ALGO_COUNT ? names[algo] : "?";
}

const char *lc_status_name(int status) {
    return cudnnGetErrorString((cudnnStatus_t)status);
}

const char *lc_math_name(int math) {
    switch (math) {
    case CUDNN_DEFAULT_MATH:
        return "default";
    case CUDNN_TENSOR_OP_MATH:
        return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
        return "tensor_op_conv";
    case CUDNN_FMA_MATH:
        return "fma";
    default:
        return "?";
    }
}

void lc_destroy(lc_conv *c) {
    if (!c) return;
    for (int i = 0; i < c->d.nsets; i++) {
        if (c->x && c->x[i]) cudaFree(c->x[i]);
        if (c->y && c->y[i]) cudaFree(c->y[i]);
    }
    if (c->w) cudaFree(c->w);
    if (c->xd) cudnnDestroyTensorDescriptor(c->xd);
    if (c->yd) cudnnDestroyTensorDescriptor(c->yd);
    if (c->wd) cudnnDestroyFilterDescriptor(c->wd);
    if (c->cd) cudnnDestroyConvolutionDescriptor(c->cd);
    free(c->x);
    free(c->y);
    free(c->stage);
    free(c->stage16);
    free(c);
}

int lc_create(const lc_desc *d, lc_conv **out) {
    *out = NULL;
    if (!g.h) {
        fprintf(stderr, "fovea-bench: lc_create before lc_init\n");
        return 1;
    }
    const bc_shape *s = &d->shape;
    lc_conv *c = calloc(1, sizeof *c);
    if (!c) return 1;
    c->d = *d;
    if (c->d.nsets < 1) c->d.nsets = 1;
    c->algo = -1;
    c->find_ms = -1.0f;
    c->p = bc_out_dim(s->h, s->r, s->stride, s->pad);
    c->q = bc_out_dim(s->w, s->s, s->stride, s->pad);
    c->elem = d->f32 ? 4 : 2;
    c->xn = (size_t)s->n * s->h * s->w * s->c;
    c->yn = (size_t)s->n * c->p * c->q * s->k;
    c->wn = (size_t)s->k * s->c * s->r * s->s;
    size_t most = c->xn > c->yn ? c->xn : c->yn;
    if (c->wn > most) most = c->wn;
    c->x = calloc((size_t)c->d.nsets, sizeof *c->x);
    c->y = calloc((size_t)c->d.nsets, sizeof *c->y);
    c->stage = malloc(most * 4);
    c->stage16 = malloc(most * 2);
    if (!c->x || !c->y || !c->stage || !c->stage16) goto fail;
    cudnnDataType_t dt = d->f32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_HALF;
    cudnnTensorFormat_t fmt = d->nchw ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    if (DNN(cudnnCreateTensorDescriptor(&c->xd)) || DNN(cudnnCreateTensorDescriptor(&c->yd)) ||
        DNN(cudnnCreateFilterDescriptor(&c->wd)) || DNN(cudnnCreateConvolutionDescriptor(&c->cd)))
        goto fail;
    if (DNN(cudnnSetTensor4dDescriptor(c->xd, fmt, dt, s->n, s->c, s->h, s->w)) ||
        DNN(cudnnSetTensor4dDescriptor(c->yd, fmt, dt, s->n, s->k, c->p, c->q)) ||
        DNN(cudnnSetFilter4dDescriptor(c->wd, dt, fmt, s->k, s->c, s->r, s->s)) ||
        DNN(cudnnSetConvolution2dDescriptor(c->cd, s->pad, s->pad, s->stride, s->stride, 1, 1,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)) ||
        DNN(cudnnSetConvolutionMathType(c->cd, (cudnnMathType_t)d->math)))
        goto fail;
    int n, k, p, q; /* cuDNN's own idea of the output shape must match ours */
    if (DNN(cudnnGetConvolution2dForwardOutputDim(c->cd, c->xd, c->wd, &n, &k, &p, &q))) goto fail;
    if (n != s->n || k != s->k || p != c->p || q != c->q) {
        fprintf(stderr, "fovea-bench: legacy cuDNN output %dx%dx%dx%d, expected %dx%dx%dx%d\n", n,
                k, p, q, s->n, s->k, c->p, c->q);
        goto fail;
    }
    for (int i = 0; i < c->d.nsets; i++)
        if (CU(cudaMalloc(&c->x[i], c->xn * c->elem)) || CU(cudaMalloc(&c->y[i], c->yn * c->elem)))
            goto fail;
    if (CU(cudaMalloc(&c->w, c->wn * c->elem))) goto fail;
    *out = c;
    return 0;
fail:
    lc_destroy(c);
    return 1;
}

/* src: dense float in NHWC (tensors) or KCRS (filter, dims n=K c=C h=R w=S).
 * Puts it in the conv's layout and dtype; returns the bytes to copy. */
static const void *stage(lc_conv *c, const float *src, int n, int ch, int h, int w, int src_nhwc) {
    size_t total = (size_t)n * ch * h * w;
    float *tmp = c->stage;
    if (src_nhwc == !c->d.nchw) {
        memcpy(tmp, src, total * 4);
    } else {
        for (int b = 0; b < n; b++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    for (int z = 0; z < ch; z++) {
                        size_t nhwc = (((size_t)b * h + y) * w + x) * ch + z;
                        size_t nchw = (((size_t)b * ch + z) * h + y) * w + x;
                        if (src_nhwc)
                            tmp[nchw] = src[nhwc];
                        else
                            tmp[nhwc] = src[nchw];
                    }
    }
    if (c->d.f32) return tmp;
    fv_f32_to_f16_n(tmp, c->stage16, total);
    return c->stage16;
}

int lc_upload(lc_conv *c, int set, const float *x, const float *w) {
    const bc_shape *s = &c->d.shape;
    if (set < 0 || set >= c->d.nsets) return 1;
    if (x) {
        const void *h = stage(c, x, s->n, s->c, s->h, s->w, 1);
        if (CU(cudaMemcpyAsync(c->x[set], h, c->xn * c->elem, cudaMemcpyHostToDevice, g.stream)) ||
            CU(cudaStreamSynchronize(g.stream)))
            return 1;
    }
    if (w) {
        const void *h = stage(c, w, s->k, s->c, s->r, s->s, 0);
        if (CU(cudaMemcpyAsync(c->w, h, c->wn * c->elem, cudaMemcpyHostToDevice, g.stream)) ||
            CU(cudaStreamSynchronize(g.stream)))
            return 1;
    }
    return 0;
}

int lc_download(lc_conv *c, int set, float *y) {
    const bc_shape *s = &c->d.shape;
    if (set < 0 || set >= c->d.nsets) return 1;
    if (CU(cudaStreamSynchronize(g.stream))) return 1;
    float *tmp = c->stage;
    void *dst = c->d.f32 ? (void *)tmp : (void *)c->stage16;
    /* on the stream the conv ran on, then wait: the fovea stream may not
     * synchronize with the legacy default stream */
    if (CU(cudaMemcpyAsync(dst, c->y[set], c->yn * c->elem, cudaMemcpyDeviceToHost, g.stream)) ||
        CU(cudaStreamSynchronize(g.stream)))
        return 1;
    if (!c->d.f32) fv_f16_to_f32_n(c->stage16, tmp, c->yn);
    if (!c->d.nchw) {
        memcpy(y, tmp, c->yn * 4);
        return 0;
    }
    for (int b = 0; b < s->n; b++)
        for (int z = 0; z < s->k; z++)
            for (int i = 0; i < c->p; i++)
                for (int j = 0; j < c->q; j++)
                    y[(((size_t)b * c->p + i) * c->q + j) * s->k + z] =
                        tmp[(((size_t)b * s->k + z) * c->p + i) * c->q + j];
    return 0;
}

int lc_find(lc_conv *c, lc_algo_perf perf[LC_ALGO_COUNT]) {
    cudnnConvolutionFwdAlgoPerf_t r[2 * LC_ALGO_COUNT];
    int got = 0;
    if (perf)
        for (int a = 0; a < LC_ALGO_COUNT; a++)
            perf[a] = (lc_algo_perf){.algo = a, .status = -1, .find_ms = -1.0f, .math = -1};
    if (DNN(cudnnFindConvolutionForwardAlgorithmEx(g.h, c->xd, c->x[0], c->wd, c->w, c->cd, c->yd,
                                                   c->y[0], 2 * LC_ALGO_COUNT, &got, r, g.ws,
                                                   g.ws_bytes)))
        return 1;
    if (CU(cudaStreamSynchronize(g.stream))) return 1;
    int best = -1;
    for (int i = 0; i < got; i++) {
        int a = (int)r[i].algo;
        if (perf && a >= 0 && a < LC_ALGO_COUNT && perf[a].status == -1)
            perf[a] =
                (lc_algo_perf){.algo = a,
                               .status = (int)r[i].status,
                               .find_ms = r[i].status == CUDNN_STATUS_SUCCESS ? r[i].time : -1,
                               .memory = r[i].memory,
                               .math = (int)r[i].mathType};
        if (r[i].status != CUDNN_STATUS_SUCCESS || r[i].memory > g.ws_bytes || r[i].time < 0)
            continue;
        if (best < 0 || r[i].time < r[best].time) best = i;
    }
    if (best < 0) {
        fprintf(stderr, "fovea-bench: legacy Find: no algorithm succeeded (%d results)\n", got);
        return 1;
    }
    c->algo = (int)r[best].algo;
    c->find_ms = r[best].time;
    c->algo_ws = r[best].memory;
    c->algo_math = (int)r[best].mathType;
    return 0;
}

int lc_heuristic_order(lc_conv *c, int order[LC_ALGO_COUNT]) {
    cudnnConvolutionFwdAlgoPerf_t r[2 * LC_ALGO_COUNT];
    int got = 0, n = 0;
    if (DNN(cudnnGetConvolutionForwardAlgorithm_v7(g.h, c->xd, c->wd, c->cd, c->yd,
                                                   2 * LC_ALGO_COUNT, &got, r)))
        return 0;
    for (int i = 0; i < got && n < LC_ALGO_COUNT; i++)
        if (r[i].status == CUDNN_STATUS_SUCCESS && r[i].memory <= g.ws_bytes &&
            (int)r[i].algo >= 0 && (int)r[i].algo < LC_ALGO_COUNT)
            order[n++] = (int)r[i].algo;
    return n;
}

int lc_find_order(const lc_algo_perf perf[LC_ALGO_COUNT], int order[LC_ALGO_COUNT]) {
    int n = 0;
    for (int a = 0; a < LC_ALGO_COUNT; a++)
        if (perf[a].status == CUDNN_STATUS_SUCCESS && perf[a].find_ms >= 0 &&
            perf[a].memory <= g.ws_bytes)
            order[n++] = a;
    for (int i = 1; i < n; i++) /* insertion sort by Find's time */
        for (int j = i; j > 0 && perf[order[j]].find_ms < perf[order[j - 1]].find_ms; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    return n;
}

int lc_set_algo(lc_conv *c, int algo) {
    size_t ws = 0;
    cudnnStatus_t st = cudnnGetConvolutionForwardWorkspaceSize(
        g.h, c->xd, c->wd, c->cd, c->yd, (cudnnConvolutionFwdAlgo_t)algo, &ws);
    c->algo_ws = ws;
    if (st != CUDNN_STATUS_SUCCESS) return (int)st;
    c->algo = algo;
    c->algo_math = c->d.math;
    c->find_ms = -1.0f;
    if (ws > g.ws_bytes) return -1;
    return 0;
}

int lc_algo(const lc_conv *c) {
    return c->algo;
}
float lc_find_ms(const lc_conv *c) {
    return c->find_ms;
}
size_t lc_algo_workspace(const lc_conv *c) {
    return c->algo_ws;
}
int lc_algo_math(const lc_conv *c) {
    return c->algo_math;
}

int lc_forward(lc_conv *c, int set) {
    if (c->algo < 0) {
        fprintf(stderr, "fovea-bench: legacy forward without an algorithm\n");
        return -1;
    }
    const float alpha = 1.0f, beta = 0.0f;
    cudnnStatus_t st = cudnnConvolutionForward(g.h, &alpha, c->xd, c->x[set], c->wd, c->w, c->cd,
                                               (cudnnConvolutionFwdAlgo_t)c->algo, g.ws, c->algo_ws,
                                               &beta, c->yd, c->y[set]);
    if (st != CUDNN_STATUS_SUCCESS && st != CUDNN_STATUS_NOT_SUPPORTED)
        dnn_fail(st, "cudnnConvolutionForward", __FILE__, __LINE__);
    return (int)st;
}

int lc_forward_fn(void *conv, int set) {
    return lc_forward(conv, set) != 0;
}

int lc_poison(lc_conv *c, int set) {
    if (set < 0 || set >= c->d.nsets) return 1;
    return CU(cudaMemsetAsync(c->y[set], 0xff, c->yn * c->elem, g.stream));
}
