/* The vision ops' kernels (vision.cuh). Pre-processing, the argmax and the
 * overlay run one thread per output pixel; top-K one block per batch item.
 * Built with --fmad=false (sources.cmake): vision_math.h's rounded steps
 * then give the CPU backend's bits. */
#include <math.h>
#include "vision.cuh"
#include "common.cuh"
#include "../cuda_check.h"

using namespace fv_k;

/* The parameter structs are read through pointers (vision_math.h's helpers
 * take them so): __grid_constant__ lets a kernel take a parameter's address
 * without a per-thread copy (CUDA 11.7 and later). */
#if defined(__CUDACC_VER_MAJOR__) &&                                                               \
    (__CUDACC_VER_MAJOR__ > 11 || (__CUDACC_VER_MAJOR__ == 11 && __CUDACC_VER_MINOR__ >= 7))
#define FV_GRID_CONST __grid_constant__
#else
#define FV_GRID_CONST
#endif

namespace {

/* Ranked value: NaN below everything (the CPU reference's key). */
__device__ __forceinline__ float rank_key(float x) {
    return isnan(x) ? -INFINITY : x;
}

template <typename T>
__global__ void preprocess_kernel(const FV_GRID_CONST fv__pre_params p, fv__view out, int index) {
    const size_t npix = (size_t)out.w * (size_t)out.h;
    T *base = (T *)out.data + (size_t)index * npix * (size_t)out.ps;
    for (size_t i = thread_index(); i < npix; i += thread_count()) {
        const int y = (int)(i / (size_t)out.w), x = (int)(i % (size_t)out.w);
        float v[3];
        fv__pre_pixel(&p, x, y, v);
        T *o = base + i * (size_t)out.ps;
#pragma unroll
        for (int c = 0; c < 3; c++)
            if (c < out.c) store(o, (size_t)c, v[c]);
        for (int c = out.c; c < out.cw; c++)
            store(o, (size_t)c, 0.0f);
    }
}

/* F16 with 8 stored channels: the pixel as one 16-byte store. */
__global__ void preprocess_f16x8_kernel(const FV_GRID_CONST fv__pre_params p, fv__view out,
                                        int index) {
    const size_t npix = (size_t)out.w * (size_t)out.h;
    uint4 *base = (uint4 *)out.data + (size_t)index * npix;
    for (size_t i = thread_index(); i < npix; i += thread_count()) {
        const int y = (int)(i / (size_t)out.w), x = (int)(i % (size_t)out.w);
        float v[3];
        fv__pre_pixel(&p, x, y, v);
        uint4 o = make_uint4(0, 0, 0, 0);
        __half *h = (__half *)&o;
#pragma unroll
        for (int c = 0; c < 3; c++)
            if (c < out.c) h[c] = __float2half_rn(v[c]);
        base[i] = o;
    }
}

struct best {
    float v;
    int i; /* -1: none */
};

/* a ranks before b: a larger value, or the same value at a lower index. */
__device__ __forceinline__ bool before(best a, best b) {
    return a.i >= 0 && (b.i < 0 || a.v > b.v || (a.v == b.v && a.i < b.i));
}

/* The block's best; every thread gets it. sh: 32 entries of shared memory. */
__device__ best block_best(best x, best *sh) {
    for (int o = 16; o > 0; o /= 2) {
        best y;
        y.v = __shfl_xor_sync(0xffffffffu, x.v, o);
        y.i = __shfl_xor_sync(0xffffffffu, x.i, o);
        if (before(y, x)) x = y;
    }
    const int lane = (int)(threadIdx.x & 31), warp = (int)(threadIdx.x / 32);
    __syncthreads(); /* sh may still be read from the previous call */
    if (lane == 0) sh[warp] = x;
    __syncthreads();
    x = sh[0];
    for (int w = 1; w < (int)(blockDim.x / 32); w++)
        if (before(sh[w], x)) x = sh[w];
    return x;
}

__device__ float block_sum(float x, float *sh) {
    for (int o = 16; o > 0; o /= 2)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    const int lane = (int)(threadIdx.x & 31), warp = (int)(threadIdx.x / 32);
    __syncthreads();
    if (lane == 0) sh[warp] = x;
    __syncthreads();
    float s = 0.0f;
    for (int w = 0; w < (int)(blockDim.x / 32); w++)
        s += sh[w];
    return s;
}

/* One block per item: the maximum and the softmax denominator, then k
 * rounds, each taking the best value ranked after the previous pick. */
template <typename T>
__global__ void topk_kernel(fv__view in, int k, int softmax, fv_class_score *out) {
    __shared__ best sb[32];
    __shared__ float sf[32];
    const T *x = (const T *)in.data + (size_t)blockIdx.x * (size_t)in.ps;
    best m = {-INFINITY, -1};
    for (int c = (int)threadIdx.x; c < in.c; c += (int)blockDim.x) {
        best y = {rank_key(load(x, (size_t)c)), c};
        if (before(y, m)) m = y;
    }
    const float mx = block_best(m, sb).v;
    float sum = 0.0f;
    if (softmax) {
        for (int c = (int)threadIdx.x; c < in.c; c += (int)blockDim.x)
            sum += expf(rank_key(load(x, (size_t)c)) - mx);
        sum = block_sum(sum, sf);
    }
    best prev = {INFINITY, -1};
    for (int r = 0; r < k; r++) {
        best b = {-INFINITY, -1};
        for (int c = (int)threadIdx.x; c < in.c; c += (int)blockDim.x) {
            const float v = rank_key(load(x, (size_t)c));
            const bool after = prev.i < 0 || v < prev.v || (v == prev.v && c > prev.i);
            best y = {v, c};
            if (after && before(y, b)) b = y;
        }
        prev = block_best(b, sb);
        if (threadIdx.x == 0) {
            fv_class_score s;
            s.index = prev.i;
            s.score = softmax ? expf(prev.v - mx) / sum : prev.v;
            out[(size_t)blockIdx.x * (size_t)k + (size_t)r] = s;
        }
    }
}

template <typename T>
__global__ void argmax_kernel(fv__view in, int index, unsigned char *classes) {
    const size_t npix = (size_t)in.w * (size_t)in.h;
    const T *base = (const T *)in.data + (size_t)index * npix * (size_t)in.ps;
    for (size_t i = thread_index(); i < npix; i += thread_count()) {
        const T *px = base + i * (size_t)in.ps;
        int bi = 0;
        float bv = rank_key(load(px, 0));
        for (int c = 1; c < in.c; c++) {
            const float v = rank_key(load(px, (size_t)c));
            if (v > bv) bv = v, bi = c;
        }
        classes[i] = (unsigned char)bi;
    }
}

__global__ void seg_blend_kernel(const FV_GRID_CONST fv__seg_params p) {
    const size_t npix = (size_t)p.out_w * (size_t)p.out_h;
    for (size_t i = thread_index(); i < npix; i += thread_count()) {
        const int y = (int)(i / (size_t)p.out_w), x = (int)(i % (size_t)p.out_w);
        unsigned char rgb[3];
        fv__seg_pixel(&p, x, y, rgb);
        fv__seg_store(p.out_format, p.out + (size_t)y * p.out_stride, x, rgb);
    }
}

bool view_ok(const fv__view *v) {
    return v && v->data && v->n >= 1 && v->h >= 1 && v->w >= 1 && v->c >= 1 && v->cw >= v->c &&
           v->ps >= v->cw && (v->dtype == FV_DTYPE_F16 || v->dtype == FV_DTYPE_F32);
}

} // namespace

extern "C" fv_status fv__cuda_preprocess_launch(cudaStream_t s, const fv__pre_params *p,
                                                const fv__view *out, int index) {
    FV_REQUIRE(p && p->data && view_ok(out) && index >= 0 && index < out->n &&
                   (out->c == 1 || out->c == 3) && (p->format != FV_PIXEL_NV12 || p->uv),
               FV_ERR_INTERNAL, "preprocess kernel: bad arguments");
    const size_t npix = (size_t)out->w * (size_t)out->h;
    if (out->dtype == FV_DTYPE_F16 && out->ps == 8 && out->cw == 8 &&
        (uintptr_t)out->data % 16 == 0)
        preprocess_f16x8_kernel<<<blocks_for(npix), threads, 0, s>>>(*p, *out, index);
    else if (out->dtype == FV_DTYPE_F16)
        preprocess_kernel<__half><<<blocks_for(npix), threads, 0, s>>>(*p, *out, index);
    else
        preprocess_kernel<float><<<blocks_for(npix), threads, 0, s>>>(*p, *out, index);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_topk_launch(cudaStream_t s, const fv__view *in, int k, int softmax,
                                          fv_class_score *out) {
    FV_REQUIRE(view_ok(in) && out && k >= 1 && k <= in->c && in->h == 1 && in->w == 1,
               FV_ERR_INTERNAL, "topk kernel: bad arguments");
    if (in->dtype == FV_DTYPE_F16)
        topk_kernel<__half><<<(unsigned)in->n, threads, 0, s>>>(*in, k, softmax, out);
    else
        topk_kernel<float><<<(unsigned)in->n, threads, 0, s>>>(*in, k, softmax, out);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_argmax_launch(cudaStream_t s, const fv__view *in, int index,
                                            unsigned char *classes) {
    FV_REQUIRE(view_ok(in) && classes && index >= 0 && index < in->n && in->c <= 256,
               FV_ERR_INTERNAL, "argmax kernel: bad arguments");
    const size_t npix = (size_t)in->w * (size_t)in->h;
    if (in->dtype == FV_DTYPE_F16)
        argmax_kernel<__half><<<blocks_for(npix), threads, 0, s>>>(*in, index, classes);
    else
        argmax_kernel<float><<<blocks_for(npix), threads, 0, s>>>(*in, index, classes);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_seg_blend_launch(cudaStream_t s, const fv__seg_params *p) {
    FV_REQUIRE(p && p->classes && p->pal && p->out && p->out_w >= 1 && p->out_h >= 1 &&
                   p->mw >= 1 && p->mh >= 1 && p->classes_n >= 1,
               FV_ERR_INTERNAL, "segment blend kernel: bad arguments");
    const size_t npix = (size_t)p->out_w * (size_t)p->out_h;
    seg_blend_kernel<<<blocks_for(npix), threads, 0, s>>>(*p);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}
