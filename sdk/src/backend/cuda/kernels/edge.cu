/* Edge step of fv_filter: one thread per pixel; arithmetic from
 * backend/edge_math.h, shared with the CPU backend. */
#include "edge.cuh"
#include "common.cuh"
#include "../cuda_check.h"
#include "../../edge_math.h"

using namespace fv_k;

template <typename TI, typename TB, typename TO>
static __global__ void edge_kernel(fv__cuda_edge_args a, const TI *in, const TB *base, TO *out) {
    const int m = a.in_c / (a.pairs ? 2 : 1);
    for (size_t p = thread_index(); p < a.pixels; p += thread_count()) {
        for (int j = 0; j < a.out_cs; j++) {
            float b = 0.0f;
            if (j < a.out_c) {
                size_t e = (size_t)(m == 1 ? 0 : j) * (a.pairs ? 2 : 1);
                float g0 = load(in, p * (size_t)a.in_cs + e);
                float g1 = a.pairs ? load(in, p * (size_t)a.in_cs + e + 1) : 0.0f;
                b = fv__edge_value(g0, g1, a.pairs, a.scale, a.threshold);
                if (base) {
                    size_t bc = a.base_c == 1 ? 0 : (size_t)j;
                    b = fv__edge_overlay(b, load(base, p * (size_t)a.base_cs + bc), a.base_scale);
                }
            }
            store(out, p * (size_t)a.out_cs + (size_t)j, b);
        }
    }
}

template <typename TI, typename TB>
static void launch_out(cudaStream_t s, const fv__cuda_edge_args &a, const TB *base) {
    const TI *in = (const TI *)a.in;
    unsigned blocks = blocks_for(a.pixels);
    if (a.out_dtype == FV_DTYPE_F16)
        edge_kernel<TI, TB, __half><<<blocks, threads, 0, s>>>(a, in, base, (__half *)a.out);
    else
        edge_kernel<TI, TB, float><<<blocks, threads, 0, s>>>(a, in, base, (float *)a.out);
}

template <typename TI> static void launch_base(cudaStream_t s, const fv__cuda_edge_args &a) {
    if (a.base && a.base_dtype == FV_DTYPE_F32)
        launch_out<TI, float>(s, a, (const float *)a.base);
    else
        launch_out<TI, __half>(s, a, (const __half *)a.base);
}

static bool float_type(fv_dtype t) {
    return t == FV_DTYPE_F16 || t == FV_DTYPE_F32;
}

extern "C" fv_status fv__cuda_edge_launch(cudaStream_t s, const fv__cuda_edge_args *a) {
    FV_REQUIRE(a && a->in && a->out && a->pixels >= 1 && float_type(a->in_dtype) &&
                   float_type(a->out_dtype) && (!a->base || float_type(a->base_dtype)),
               FV_ERR_INTERNAL, "edge kernel: bad arguments");
    const int m = a->in_c / (a->pairs ? 2 : 1);
    FV_REQUIRE(
        (m == 1 || m == 3) && a->in_c == m * (a->pairs ? 2 : 1) && a->in_cs >= a->in_c &&
            (a->out_c == 1 || a->out_c == 3) && a->out_cs >= a->out_c &&
            (m == 1 || a->out_c == m) &&
            (!a->base || ((a->base_c == 1 || a->base_c == a->out_c) && a->base_cs >= a->base_c)),
        FV_ERR_INTERNAL, "edge kernel: bad channel counts (in %d, out %d, base %d)", a->in_c,
        a->out_c, a->base ? a->base_c : 0);
    if (a->in_dtype == FV_DTYPE_F16)
        launch_base<__half>(s, *a);
    else
        launch_base<float>(s, *a);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}
