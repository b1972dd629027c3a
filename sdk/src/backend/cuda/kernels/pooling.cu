/* 2-D pooling: one thread per output element. */
#include "pooling.cuh"
#include "common.cuh"
#include "../cuda_check.h"

using namespace fv_k;

template <typename T>
static __global__ void pooling_kernel(fv__cuda_pooling_args a, const T *in, T *out, size_t total) {
    for (size_t i = thread_index(); i < total; i += thread_count()) {
        size_t rest = i;
        int ch = (int)(rest % (size_t)a.c_stored);
        rest /= (size_t)a.c_stored;
        int oq = (int)(rest % (size_t)a.q);
        rest /= (size_t)a.q;
        int op = (int)(rest % (size_t)a.p);
        size_t img = rest / (size_t)a.p;
        if (ch >= a.c) {
            store(out, i, 0.0f);
            continue;
        }
        int y0 = op * a.stride_h - a.pad_h, x0 = oq * a.stride_w - a.pad_w;
        float acc = a.mode == FV_POOLING_MAX ? -INFINITY : 0.0f;
        int count = 0;
        for (int ky = 0; ky < a.r; ky++) {
            int y = y0 + ky;
            if (y < 0 || y >= a.h) continue;
            for (int kx = 0; kx < a.s; kx++) {
                int x = x0 + kx;
                if (x < 0 || x >= a.w) continue;
                float v = load(in, ((img * (size_t)a.h + (size_t)y) * (size_t)a.w + (size_t)x) *
                                           (size_t)a.c_stored +
                                       (size_t)ch);
                if (a.mode == FV_POOLING_MAX)
                    acc = fmaxf(acc, v);
                else
                    acc += v;
                count++;
            }
        }
        if (a.mode == FV_POOLING_AVG)
            acc = acc / (float)count;
        else if (a.mode == FV_POOLING_AVG_INCLUDE_PAD)
            acc = acc / (float)(a.r * a.s);
        store(out, i, acc);
    }
}

extern "C" fv_status fv__cuda_pooling_launch(cudaStream_t s, const fv__cuda_pooling_args *a) {
    FV_REQUIRE(a && a->in && a->out && a->c >= 1 && a->c_stored >= a->c && a->r >= 1 && a->s >= 1 &&
                   a->stride_h >= 1 && a->stride_w >= 1 && a->pad_h < a->r && a->pad_w < a->s,
               FV_ERR_INTERNAL, "pooling kernel: bad arguments");
    size_t total = (size_t)a->n * a->p * a->q * a->c_stored;
    if (total == 0) return FV_OK;
    if (a->dtype == FV_DTYPE_F16)
        pooling_kernel<__half><<<blocks_for(total), threads, 0, s>>>(*a, (const __half *)a->in,
                                                                     (__half *)a->out, total);
    else if (a->dtype == FV_DTYPE_F32)
        pooling_kernel<float><<<blocks_for(total), threads, 0, s>>>(*a, (const float *)a->in,
                                                                    (float *)a->out, total);
    else
        return fv__error(FV_ERR_INTERNAL, "pooling kernel: dtype %d not supported", (int)a->dtype);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}
