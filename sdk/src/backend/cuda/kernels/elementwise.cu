/* Elementwise kernels: dtype conversion, add + activation. */
#include "../../activation.h"
#include "elementwise.cuh"
#include "common.cuh"
#include "../cuda_check.h"

using namespace fv_k;

template <typename Tin, typename Tout>
static __global__ void convert_kernel(Tout *dst, int dst_cs, const Tin *src, int src_cs, int c,
                                      size_t total) {
    for (size_t i = thread_index(); i < total; i += thread_count()) {
        size_t p = i / (size_t)dst_cs;
        int ch = (int)(i - p * (size_t)dst_cs);
        store(dst, i, ch < c ? load(src, p * (size_t)src_cs + (size_t)ch) : 0.0f);
    }
}

template <typename Tin, typename Tout>
static void convert_go(cudaStream_t s, void *dst, int dst_cs, const void *src, int src_cs, int c,
                       size_t pixels) {
    size_t total = pixels * (size_t)dst_cs;
    convert_kernel<Tin, Tout><<<blocks_for(total), threads, 0, s>>>(
        (Tout *)dst, dst_cs, (const Tin *)src, src_cs, c, total);
}

extern "C" fv_status fv__cuda_convert_launch(cudaStream_t s, void *dst, fv_dtype dst_type,
                                             int dst_cs, const void *src, fv_dtype src_type,
                                             int src_cs, int c, size_t pixels) {
    FV_REQUIRE(dst && src && c >= 1 && dst_cs >= c && src_cs >= c, FV_ERR_INTERNAL,
               "convert kernel: bad arguments (c=%d, stored %d -> %d)", c, src_cs, dst_cs);
    if (pixels == 0) return FV_OK;
    if (src_type == FV_DTYPE_F32 && dst_type == FV_DTYPE_F16)
        convert_go<float, __half>(s, dst, dst_cs, src, src_cs, c, pixels);
    else if (src_type == FV_DTYPE_F16 && dst_type == FV_DTYPE_F32)
        convert_go<__half, float>(s, dst, dst_cs, src, src_cs, c, pixels);
    else if (src_type == FV_DTYPE_U8 && dst_type == FV_DTYPE_F16)
        convert_go<unsigned char, __half>(s, dst, dst_cs, src, src_cs, c, pixels);
    else if (src_type == FV_DTYPE_U8 && dst_type == FV_DTYPE_F32)
        convert_go<unsigned char, float>(s, dst, dst_cs, src, src_cs, c, pixels);
    else
        return fv__error(FV_ERR_INTERNAL, "convert kernel: dtype %d -> %d not supported",
                         (int)src_type, (int)dst_type);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

/* The activations of the CPU reference, on the device. */
static __device__ __forceinline__ float activate(int act, float alpha, float x) {
    return fv__act(act, alpha, x);
}

/* F16: one thread per 8 halves (16 bytes; c_stored is a multiple of 8 and
 * every tensor is 128-byte aligned). */
static __global__ void add_f16_kernel(const uint4 *a, const uint4 *b, uint4 *out, int c,
                                      int c_stored, int act, float alpha, size_t vecs) {
    for (size_t i = thread_index(); i < vecs; i += thread_count()) {
        uint4 va = a[i], vb = b[i], vo;
        const __half *ha = (const __half *)&va, *hb = (const __half *)&vb;
        __half *ho = (__half *)&vo;
        int ch0 = (int)((i * 8) % (size_t)c_stored);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            float x = __half2float(ha[j]) + __half2float(hb[j]);
            ho[j] = __float2half_rn(ch0 + j < c ? activate(act, alpha, x) : 0.0f);
        }
        out[i] = vo;
    }
}

static __global__ void add_f32_kernel(const float *a, const float *b, float *out, int c,
                                      int c_stored, int act, float alpha, size_t total) {
    for (size_t i = thread_index(); i < total; i += thread_count()) {
        int ch = (int)(i % (size_t)c_stored);
        out[i] = ch < c ? activate(act, alpha, a[i] + b[i]) : 0.0f;
    }
}

extern "C" fv_status fv__cuda_add_launch(cudaStream_t s, fv_dtype dtype, const void *a,
                                         const void *b, void *out, size_t pixels, int c,
                                         int c_stored, fv_activation act, float alpha) {
    FV_REQUIRE(a && b && out && c >= 1 && c_stored >= c, FV_ERR_INTERNAL,
               "add kernel: bad arguments (c=%d, c_stored=%d)", c, c_stored);
    size_t total = pixels * (size_t)c_stored;
    if (total == 0) return FV_OK;
    if (dtype == FV_DTYPE_F16) {
        FV_REQUIRE(c_stored % 8 == 0 && ((uintptr_t)a | (uintptr_t)b | (uintptr_t)out) % 16 == 0,
                   FV_ERR_INTERNAL, "add kernel: F16 tensors must be padded to 8 and aligned");
        size_t vecs = total / 8;
        add_f16_kernel<<<blocks_for(vecs), threads, 0, s>>>(
            (const uint4 *)a, (const uint4 *)b, (uint4 *)out, c, c_stored, (int)act, alpha, vecs);
    } else if (dtype == FV_DTYPE_F32) {
        add_f32_kernel<<<blocks_for(total), threads, 0, s>>>(
            (const float *)a, (const float *)b, (float *)out, c, c_stored, (int)act, alpha, total);
    } else {
        return fv__error(FV_ERR_INTERNAL, "add kernel: dtype %d not supported", (int)dtype);
    }
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" cudaError_t fv__cuda_kernels_probe(void) {
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, (const void *)add_f32_kernel);
}
