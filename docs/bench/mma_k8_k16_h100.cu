// m16n8k8 vs m16n8k16 (FP16 in, FP32 accumulate) issue cost on one GPU: the micro-benchmark
// behind docs/bench/filter_unpack_cvt_h100.txt ("The MMA shapes"). Build and run on the GPU
// machine:
//   nvcc -arch=sm_90 -O3 docs/bench/mma_k8_k16_h100.cu -o /tmp/mma && /tmp/mma
#include <cstdio>
#include <cuda_runtime.h>
template <int K, int ILP> __global__ void mma_loop(int iters, float *out) {
    unsigned a[4], b[2];
    for (int i = 0; i < 4; i++)
        a[i] = 0x3C003C00u ^ (threadIdx.x * 2654435761u + i) & 0x00FF00FFu;
    for (int i = 0; i < 2; i++)
        b[i] = 0x3C003C00u ^ (threadIdx.x * 40503u + i) & 0x00FF00FFu;
    float c[ILP][4];
    for (int j = 0; j < ILP; j++)
        for (int i = 0; i < 4; i++)
            c[j][i] = 0.f;
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int j = 0; j < ILP; j++) {
            if (K == 16)
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                             "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
            else
                asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                             "{%4,%5}, {%6}, {%0,%1,%2,%3};"
                             : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                             : "r"(a[0]), "r"(a[1]), "r"(b[0]));
        }
    }
    float s = 0;
    for (int j = 0; j < ILP; j++)
        for (int i = 0; i < 4; i++)
            s += c[j][i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
template <int K, int ILP> float run(int blocks, int threads, int iters, float *out) {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    mma_loop<K, ILP><<<blocks, threads>>>(iters, out);
    float best = 1e30f;
    for (int r = 0; r < 7; r++) {
        cudaEventRecord(e0);
        mma_loop<K, ILP><<<blocks, threads>>>(iters, out);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) best = ms;
    }
    if (cudaGetLastError() != cudaSuccess) {
        printf("error\n");
        return -1;
    }
    return best;
}
int main() {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    float *out;
    cudaMalloc(&out, 1 << 24);
    const int iters = 4096;
    printf("SMs %d; warps x MMAs timed, best of 7 (events)\n", sms);
    printf("%-10s %6s %4s %12s %14s %12s\n", "shape", "warps", "ilp", "ms", "ns/MMA/SM", "TFLOP/s");
    for (int wps : {4, 8, 16}) {
        const int blocks = sms * wps / 4, threads = 128;
        double mmas = (double)blocks * 4 * iters * 8;
        float t16 = run<16, 8>(blocks, threads, iters, out);
        float t8 = run<8, 8>(blocks, threads, iters, out);
        printf("%-10s %6d %4d %12.4f %14.4f %12.1f\n", "m16n8k16", wps, 8, t16,
               t16 * 1e6 / (mmas / sms), mmas * 2 * 16 * 8 * 16 / (t16 * 1e9));
        printf("%-10s %6d %4d %12.4f %14.4f %12.1f\n", "m16n8k8", wps, 8, t8,
               t8 * 1e6 / (mmas / sms), mmas * 2 * 16 * 8 * 8 / (t8 * 1e9));
        printf("k8/k16 time ratio at %d warps an SM: %.3f\n", wps, t8 / t16);
    }
    return 0;
}
