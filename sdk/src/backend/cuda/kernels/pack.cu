/* Pack and unpack kernels: one thread per pixel. The arithmetic comes from
 * backend/pixel_math.h, shared with the CPU backend. */
#include "pack.cuh"
#include "common.cuh"
#include "../cuda_check.h"
#include "../../pixel_math.h"

using namespace fv_k;

/* The pixel's values before scale and bias: channels 1 or 3. */
static __device__ __forceinline__ void read_pixel(const fv__cuda_pack_args &a, int x, int y,
                                                  float v[3]) {
    fv__read_pixel(a.format, a.data + (size_t)y * a.stride, a.uv, a.uv_stride, x, y, a.channels, v);
}

template <typename T> static __global__ void pack_kernel(fv__cuda_pack_args a, T *out) {
    size_t npix = (size_t)a.width * (size_t)a.height;
    for (size_t i = thread_index(); i < npix; i += thread_count()) {
        int y = (int)(i / (size_t)a.width), x = (int)(i % (size_t)a.width);
        float v[3];
        read_pixel(a, x, y, v);
        for (int c = 0; c < a.channels; c++)
            v[c] = fv__pack_value(v[c], a.scale, a.bias);
        for (int c = 0; c < a.c_stored; c++)
            store(out, i * (size_t)a.c_stored + (size_t)c, c < a.channels ? v[c] : 0.0f);
    }
}

/* F16 padded to 8: the pixel's 8 halves as one 16-byte store. */
static __global__ void pack_f16x8_kernel(fv__cuda_pack_args a, uint4 *out) {
    size_t npix = (size_t)a.width * (size_t)a.height;
    for (size_t i = thread_index(); i < npix; i += thread_count()) {
        int y = (int)(i / (size_t)a.width), x = (int)(i % (size_t)a.width);
        float v[3];
        read_pixel(a, x, y, v);
        uint4 o = make_uint4(0, 0, 0, 0);
        __half *h = (__half *)&o;
        for (int c = 0; c < a.channels; c++)
            h[c] = __float2half_rn(fv__pack_value(v[c], a.scale, a.bias));
        out[i] = o;
    }
}

extern "C" fv_status fv__cuda_pack_launch(cudaStream_t s, const fv__cuda_pack_args *a) {
    FV_REQUIRE(a && a->data && a->out && a->width >= 1 && a->height >= 1 &&
                   (a->channels == 1 || a->channels == 3) && a->c_stored >= a->channels &&
                   (a->format != FV_PIXEL_NV12 || a->uv),
               FV_ERR_INTERNAL, "pack kernel: bad arguments");
    size_t npix = (size_t)a->width * (size_t)a->height;
    if (a->dtype == FV_DTYPE_F16 && a->c_stored == 8 && (uintptr_t)a->out % 16 == 0)
        pack_f16x8_kernel<<<blocks_for(npix), threads, 0, s>>>(*a, (uint4 *)a->out);
    else if (a->dtype == FV_DTYPE_F16)
        pack_kernel<__half><<<blocks_for(npix), threads, 0, s>>>(*a, (__half *)a->out);
    else if (a->dtype == FV_DTYPE_F32)
        pack_kernel<float><<<blocks_for(npix), threads, 0, s>>>(*a, (float *)a->out);
    else
        return fv__error(FV_ERR_INTERNAL, "pack kernel: dtype %d not supported", (int)a->dtype);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

template <typename T> static __global__ void unpack_kernel(fv__cuda_unpack_args a, const T *in) {
    size_t npix = (size_t)a.width * (size_t)a.height;
    for (size_t i = thread_index(); i < npix; i += thread_count()) {
        int y = (int)(i / (size_t)a.width), x = (int)(i % (size_t)a.width);
        const size_t base = i * (size_t)a.c_stored;
        float v[3];
        v[0] = load(in, base);
        if (a.absolute) v[0] = fabsf(v[0]);
        if (a.c >= 3) {
            for (int c = 1; c < 3; c++) {
                v[c] = load(in, base + (size_t)c);
                if (a.absolute) v[c] = fabsf(v[c]);
            }
        } else {
            v[1] = v[2] = v[0];
        }
        unsigned char *row = a.data + (size_t)y * a.stride;
        switch (a.format) {
        case FV_PIXEL_GRAY8:
            row[x] =
                fv__unpack_byte(a.c >= 3 ? fv__mean3(v[0], v[1], v[2]) : v[0], a.scale, a.bias);
            break;
        case FV_PIXEL_RGB24:
        case FV_PIXEL_BGR24: {
            unsigned char *p = row + 3 * (size_t)x;
            int rev = a.format == FV_PIXEL_BGR24;
            for (int c = 0; c < 3; c++)
                p[rev ? 2 - c : c] = fv__unpack_byte(v[c], a.scale, a.bias);
            break;
        }
        case FV_PIXEL_RGBA32: {
            uchar4 o;
            o.x = fv__unpack_byte(v[0], a.scale, a.bias);
            o.y = fv__unpack_byte(v[1], a.scale, a.bias);
            o.z = fv__unpack_byte(v[2], a.scale, a.bias);
            o.w = 255;
            if ((uintptr_t)(row + 4 * (size_t)x) % 4 == 0) {
                *(uchar4 *)(row + 4 * (size_t)x) = o;
            } else {
                unsigned char *p = row + 4 * (size_t)x;
                p[0] = o.x, p[1] = o.y, p[2] = o.z, p[3] = o.w;
            }
            break;
        }
        default:
            break;
        }
    }
}

extern "C" fv_status fv__cuda_unpack_launch(cudaStream_t s, const fv__cuda_unpack_args *a) {
    FV_REQUIRE(a && a->in && a->data && a->width >= 1 && a->height >= 1 &&
                   (a->c == 1 || a->c >= 3) && a->c_stored >= a->c &&
                   (a->format == FV_PIXEL_GRAY8 || a->format == FV_PIXEL_RGB24 ||
                    a->format == FV_PIXEL_BGR24 || a->format == FV_PIXEL_RGBA32),
               FV_ERR_INTERNAL, "unpack kernel: bad arguments");
    size_t npix = (size_t)a->width * (size_t)a->height;
    if (a->dtype == FV_DTYPE_F16)
        unpack_kernel<__half><<<blocks_for(npix), threads, 0, s>>>(*a, (const __half *)a->in);
    else if (a->dtype == FV_DTYPE_F32)
        unpack_kernel<float><<<blocks_for(npix), threads, 0, s>>>(*a, (const float *)a->in);
    else
        return fv__error(FV_ERR_INTERNAL, "unpack kernel: dtype %d not supported", (int)a->dtype);
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}
