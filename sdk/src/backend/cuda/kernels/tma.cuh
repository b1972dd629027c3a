/* Hopper's tensor memory accelerator (TMA, SM 9.0+) for the conv kernels
 * that take their input windows by it (conv_direct.cu's direct_kernel_tma,
 * conv_wgmma.cu): mbarriers that count a copy's bytes, and the driver's
 * tensor-map encoder. CUDA 12.0+ only (FV_TMA is 0 before it, or with
 * -DFV_CONV_DIRECT_NO_TMA for A/B timing). */
#ifndef FOVEA_KERNELS_TMA_CUH
#define FOVEA_KERNELS_TMA_CUH

#include <cuda_runtime.h>

#if !defined(FV_CONV_DIRECT_NO_TMA) && CUDART_VERSION >= 12000
#define FV_TMA 1
#include <cuda.h> /* CUtensorMap (types only: the encoder comes from the runtime) */
#include <cudaTypedefs.h>
#else
#define FV_TMA 0
#endif

#if FV_TMA
namespace fv_k {

/* Device helpers: compiled for SM 9.0+ only (unreferenced below it, where
 * -Werror would reject them as unused). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned smem_u32(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
/* One arrival a phase (the thread that sets the bytes). */
__device__ __forceinline__ void bar_init(unsigned long long *bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_u32(bar)) : "memory");
}
/* The arrival of this phase's one thread, with the bytes its copies bring. */
__device__ __forceinline__ void bar_expect(unsigned long long *bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void bar_wait(unsigned long long *bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(smem_u32(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}
/* The box of the 3-D map tm at (c0, c1, c2) into dst, completing on bar. */
__device__ __forceinline__ void tma_load_3d(void *dst, const CUtensorMap *tm,
                                            unsigned long long *bar, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(smem_u32(dst)),
                 "l"(reinterpret_cast<unsigned long long>(tm)), "r"(c0), "r"(c1), "r"(c2),
                 "r"(smem_u32(bar))
                 : "memory");
}
#endif

/* cuTensorMapEncodeTiled from the driver, through the runtime (no link
 * against libcuda); NULL where the driver has none. */
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
        void *f = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
        cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                                         cudaEnableDefault, &q);
#else
        cudaError_t e =
            cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &f, cudaEnableDefault, &q);
#endif
        if (e != cudaSuccess || q != cudaDriverEntryPointSuccess) {
            cudaGetLastError();
            f = nullptr;
        }
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }();
    return fn;
}

} // namespace fv_k
#endif
#endif
