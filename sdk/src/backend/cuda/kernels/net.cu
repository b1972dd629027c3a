/* fv_net's layer kernels (backend/net_ops.h), FP32 math on F16 or F32 NHWC
 * views. Each kernel is built twice for F16: 8 channels a thread as one
 * 16-byte vector where every view it reads or writes allows it (ps and cw
 * multiples of 8, data 16-byte aligned: whole buffers and 8-aligned concat
 * parts), one channel a thread otherwise (odd channel slices); F32 runs
 * one channel a thread. Work items are (pixel, channel group) pairs in
 * grid-stride loops; 32-bit indices (views are limited to 2^31 elements). */
#include <limits.h>
#include "../../activation.h"
#include "../../net_math.h"
#include "fovea/net.h"
#include "net.cuh"
#include "common.cuh"
#include "../cuda_check.h"

using namespace fv_k;

namespace {

/* ---- device helpers ---------------------------------------------------- */

template <typename T> __device__ __forceinline__ void ldv(const T *p, float (&x)[1]) {
    x[0] = load(p, 0);
}
__device__ __forceinline__ void ldv(const __half *p, float (&x)[8]) {
    const uint4 u = *reinterpret_cast<const uint4 *>(p);
    const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
    for (int j = 0; j < 4; j++) {
        float2 f = __half22float2(h[j]);
        x[2 * j] = f.x;
        x[2 * j + 1] = f.y;
    }
}
template <typename T> __device__ __forceinline__ void stv(T *p, const float (&x)[1]) {
    store(p, 0, x[0]);
}
__device__ __forceinline__ void stv(__half *p, const float (&x)[8]) {
    uint4 u;
    __half2 *h = reinterpret_cast<__half2 *>(&u);
#pragma unroll
    for (int j = 0; j < 4; j++)
        h[j] = __floats2half2_rn(x[2 * j], x[2 * j + 1]);
    *reinterpret_cast<uint4 *>(p) = u;
}

/* Element 0 of pixel pix (flat over n, h, w) of a view's data. */
template <typename T> __device__ __forceinline__ T *pixel(const fv__view &v, unsigned pix) {
    return (T *)v.data + (size_t)pix * (size_t)v.ps;
}
template <typename T> __device__ __forceinline__ T *pixel(const fv__view &v, int b, int y, int x) {
    return pixel<T>(v, ((unsigned)b * (unsigned)v.h + (unsigned)y) * (unsigned)v.w + (unsigned)x);
}

struct coord {
    int b, y, x;
};
__device__ __forceinline__ coord split(unsigned pix, int h, int w) {
    unsigned t = pix / (unsigned)w;
    coord c;
    c.x = (int)(pix - t * (unsigned)w);
    c.b = (int)(t / (unsigned)h);
    c.y = (int)(t - (unsigned)c.b * (unsigned)h);
    return c;
}

/* max that keeps a NaN (PyTorch's max pooling; the CPU reference's). */
__device__ __forceinline__ float max_nan(float acc, float v) {
    return (v > acc || isnan(v)) && !isnan(acc) ? v : acc;
}

#define FV__GRID_LOOP(i, items)                                                                    \
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (items);                          \
         i += gridDim.x * blockDim.x)

/* ---- kernels ----------------------------------------------------------- */

/* act, affine, copy: out pixel i takes in pixel i. */
template <typename T, int V>
__global__ void map_kernel(fv__view in, fv__view out, const float *scale, const float *shift,
                           int per_channel, int act, float alpha, float beta, unsigned groups,
                           unsigned items) {
    FV__GRID_LOOP(i, items) {
        const unsigned pix = i / groups;
        const int ch0 = (int)(i - pix * groups) * V;
        float x[V] = {};
        if (ch0 < out.c) ldv(pixel<const T>(in, pix) + ch0, x);
#pragma unroll
        for (int j = 0; j < V; j++) {
            const int ch = ch0 + j;
            float v = 0.0f;
            if (ch < out.c) {
                v = x[j];
                if (scale) {
                    const int k = per_channel ? ch : 0;
                    v = v * __ldg(scale + k) + __ldg(shift + k);
                }
                v = fv__act2(act, alpha, beta, v);
            }
            x[j] = v;
        }
        stv(pixel<T>(out, pix) + ch0, x);
    }
}

/* A binary operand: pixel offsets per out coordinate (0 along a broadcast
 * dimension) and whether its one channel is broadcast. */
struct operand {
    const void *data;
    int ps;
    unsigned sn, sh, sw;
    int bc;
};

template <typename T, int V>
__device__ __forceinline__ void load_operand(const operand &o, unsigned pix, int ch0,
                                             float (&x)[V]) {
    const T *p = (const T *)o.data + (size_t)pix * (size_t)o.ps;
    if (o.bc) {
        const float v = load(p, 0);
#pragma unroll
        for (int j = 0; j < V; j++)
            x[j] = v;
    } else {
        ldv(p + ch0, x);
    }
}

__device__ __forceinline__ float binop(int op, float a, float b) {
    switch (op) {
    case FV_NET_SUB:
        return a - b;
    case FV_NET_MUL:
        return a * b;
    case FV_NET_DIV:
        return a / b;
    default:
        return a + b;
    }
}

template <typename T, int V>
__global__ void binary_kernel(int op, operand a, operand b, fv__view out, int spatial, int act,
                              float alpha, float beta, unsigned groups, unsigned items) {
    FV__GRID_LOOP(i, items) {
        const unsigned pix = i / groups;
        const int ch0 = (int)(i - pix * groups) * V;
        float x[V] = {}, y[V] = {};
        if (ch0 < out.c) {
            unsigned pa = pix, pb = pix;
            if (spatial) {
                const coord c = split(pix, out.h, out.w);
                pa = (unsigned)c.b * a.sn + (unsigned)c.y * a.sh + (unsigned)c.x * a.sw;
                pb = (unsigned)c.b * b.sn + (unsigned)c.y * b.sh + (unsigned)c.x * b.sw;
            }
            load_operand<T, V>(a, pa, ch0, x);
            load_operand<T, V>(b, pb, ch0, y);
        }
#pragma unroll
        for (int j = 0; j < V; j++)
            x[j] = ch0 + j < out.c ? fv__act2(act, alpha, beta, binop(op, x[j], y[j])) : 0.0f;
        stv(pixel<T>(out, pix) + ch0, x);
    }
}

/* Taps start + i * dil (i < k) inside [lo, hi). */
__device__ __forceinline__ int taps_in(int start, int k, int dil, int lo, int hi) {
    int n = 0;
    for (int i = 0; i < k; i++) {
        const int t = start + i * dil;
        n += t >= lo && t < hi;
    }
    return n;
}

template <typename T, int V>
__global__ void pool_kernel(fv__view in, fv__view out, fv__pool_params p, unsigned groups,
                            unsigned items) {
    const bool is_max = p.mode == FV_NET_POOL_MAX;
    FV__GRID_LOOP(i, items) {
        const unsigned pix = i / groups;
        const int ch0 = (int)(i - pix * groups) * V;
        float acc[V];
#pragma unroll
        for (int j = 0; j < V; j++)
            acc[j] = is_max ? -INFINITY : 0.0f;
        if (ch0 < out.c) {
            const coord o = split(pix, out.h, out.w);
            const int y0 = o.y * p.stride_h - p.pad_top, x0 = o.x * p.stride_w - p.pad_left;
            for (int ky = 0; ky < p.r; ky++) {
                const int iy = y0 + ky * p.dilation_h;
                if (iy < 0 || iy >= in.h) continue;
                for (int kx = 0; kx < p.s; kx++) {
                    const int ix = x0 + kx * p.dilation_w;
                    if (ix < 0 || ix >= in.w) continue;
                    float v[V];
                    ldv(pixel<const T>(in, o.b, iy, ix) + ch0, v);
#pragma unroll
                    for (int j = 0; j < V; j++)
                        acc[j] = is_max ? max_nan(acc[j], v[j]) : acc[j] + v[j];
                }
            }
            if (!is_max) {
                /* AVG: taps inside the input; AVG_INCLUDE_PAD: inside the
                 * padded input (PyTorch's count_include_pad divisor) */
                const bool incl = p.mode == FV_NET_POOL_AVG_INCLUDE_PAD;
                const int ny = incl ? taps_in(y0, p.r, p.dilation_h, -p.pad_top, in.h + p.pad_top)
                                    : taps_in(y0, p.r, p.dilation_h, 0, in.h);
                const int nx = incl ? taps_in(x0, p.s, p.dilation_w, -p.pad_left, in.w + p.pad_left)
                                    : taps_in(x0, p.s, p.dilation_w, 0, in.w);
                const float div = ny * nx > 0 ? (float)(ny * nx) : 1.0f;
#pragma unroll
                for (int j = 0; j < V; j++)
                    acc[j] = acc[j] / div;
            }
        }
#pragma unroll
        for (int j = 0; j < V; j++)
            if (ch0 + j >= out.c) acc[j] = 0.0f;
        stv(pixel<T>(out, pix) + ch0, acc);
    }
}

/* Global pooling: a block takes G channel groups of one image, its
 * G x L threads (group fastest: coalesced) each sum every L-th pixel, then
 * the L partial results of a group meet in shared memory. */
constexpr int GP_THREADS = 256;

template <typename T, int V>
__global__ void __launch_bounds__(GP_THREADS)
    global_pool_kernel(fv__view in, fv__view out, int avg, int gpb, int lanes, int chunks) {
    __shared__ float part[V][GP_THREADS];
    const int b = (int)blockIdx.x / chunks, chunk = (int)blockIdx.x - b * chunks;
    const int t = (int)threadIdx.x, lane = t / gpb;
    const int ch0 = (chunk * gpb + (t - lane * gpb)) * V;
    const int hw = in.h * in.w;
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; j++)
        acc[j] = avg ? 0.0f : -INFINITY;
    if (ch0 < in.c) {
        const T *p = pixel<const T>(in, (unsigned)b * (unsigned)hw) + ch0;
#pragma unroll 4
        for (int q = lane; q < hw; q += lanes) {
            float v[V];
            ldv(p + (size_t)q * (size_t)in.ps, v);
#pragma unroll
            for (int j = 0; j < V; j++)
                acc[j] = avg ? acc[j] + v[j] : max_nan(acc[j], v[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < V; j++)
        part[j][t] = acc[j];
    for (int step = lanes / 2; step > 0; step /= 2) {
        __syncthreads();
        if (lane < step) {
#pragma unroll
            for (int j = 0; j < V; j++) {
                const float v = part[j][t + step * gpb];
                acc[j] = avg ? acc[j] + v : max_nan(acc[j], v);
                part[j][t] = acc[j];
            }
        }
    }
    if (lane == 0 && ch0 < out.cw) {
#pragma unroll
        for (int j = 0; j < V; j++)
            acc[j] = ch0 + j >= out.c ? 0.0f : avg ? acc[j] / (float)hw : acc[j];
        stv(pixel<T>(out, (unsigned)b) + ch0, acc);
    }
}

/* Softmax: tp threads (a power of 2, <= 32) of a warp per pixel, the
 * reductions by shuffles within those tp lanes. Every lane of a warp runs
 * every shuffle (the pixel loop is uniform per warp). */
template <typename T, int V>
__global__ void softmax_kernel(fv__view in, fv__view out, int tp, unsigned pixels) {
    const int lane = (int)(threadIdx.x & 31), sub = lane & (tp - 1);
    const unsigned per_warp = 32u / (unsigned)tp;
    const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const unsigned warps = gridDim.x * blockDim.x / 32;
    const int gin = (in.c + V - 1) / V, gout = out.cw / V, c = in.c;
    for (unsigned base = warp * per_warp; base < pixels; base += warps * per_warp) {
        const unsigned pix = base + (unsigned)(lane / tp);
        const bool ok = pix < pixels;
        const T *src = ok ? pixel<const T>(in, pix) : (const T *)in.data;
        float m = -INFINITY, sum = 0.0f;
        for (int g = sub; ok && g < gin; g += tp) {
            float x[V];
            ldv(src + g * V, x);
#pragma unroll
            for (int j = 0; j < V; j++)
                if (g * V + j < c) m = fmaxf(m, x[j]);
        }
        for (int o = tp / 2; o > 0; o /= 2)
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        for (int g = sub; ok && g < gin; g += tp) {
            float x[V];
            ldv(src + g * V, x);
#pragma unroll
            for (int j = 0; j < V; j++)
                if (g * V + j < c) sum += expf(x[j] - m);
        }
        for (int o = tp / 2; o > 0; o /= 2)
            sum += __shfl_xor_sync(0xffffffffu, sum, o);
        /* a channel is read before it is written: in place is safe */
        for (int g = sub; ok && g < gout; g += tp) {
            float x[V] = {};
            if (g * V < c) ldv(src + g * V, x);
#pragma unroll
            for (int j = 0; j < V; j++)
                x[j] = g * V + j < c ? expf(x[j] - m) / sum : 0.0f;
            stv(pixel<T>(out, pix) + g * V, x);
        }
    }
}

/* Bilinear taps of f clamped to [0, in - 1] (PyTorch): i0, i1 = the next
 * one or i0 at the edge, l the weight of i1. */
__device__ __forceinline__ void resize_linear(float f, int in, int &i0, int &i1, float &l) {
    f = fminf(fmaxf(f, 0.0f), (float)(in - 1));
    i0 = (int)f;
    i1 = i0 + 1 < in ? i0 + 1 : i0;
    l = f - (float)i0;
}

template <typename T, int V>
__global__ void resize_kernel(fv__view in, fv__view out, fv__resize_params p, unsigned groups,
                              unsigned items) {
    FV__GRID_LOOP(i, items) {
        const unsigned pix = i / groups;
        const int ch0 = (int)(i - pix * groups) * V;
        float acc[V] = {};
        if (ch0 < out.c) {
            const coord o = split(pix, out.h, out.w);
            const float fy = fv__resize_src(p.coord, o.y, in.h, out.h, p.scale_h);
            const float fx = fv__resize_src(p.coord, o.x, in.w, out.w, p.scale_w);
            if (p.mode == FV_NET_RESIZE_NEAREST) {
                const int iy = fv__resize_nearest(p.nearest, fy, in.h);
                const int ix = fv__resize_nearest(p.nearest, fx, in.w);
                ldv(pixel<const T>(in, o.b, iy, ix) + ch0, acc);
            } else {
                int y0, y1, x0, x1;
                float ly, lx;
                resize_linear(fy, in.h, y0, y1, ly);
                resize_linear(fx, in.w, x0, x1, lx);
                float v00[V], v01[V], v10[V], v11[V];
                ldv(pixel<const T>(in, o.b, y0, x0) + ch0, v00);
                ldv(pixel<const T>(in, o.b, y0, x1) + ch0, v01);
                ldv(pixel<const T>(in, o.b, y1, x0) + ch0, v10);
                ldv(pixel<const T>(in, o.b, y1, x1) + ch0, v11);
#pragma unroll
                for (int j = 0; j < V; j++) {
                    const float top = (1.0f - lx) * v00[j] + lx * v01[j];
                    const float bot = (1.0f - lx) * v10[j] + lx * v11[j];
                    acc[j] = (1.0f - ly) * top + ly * bot;
                }
            }
        }
#pragma unroll
        for (int j = 0; j < V; j++)
            if (ch0 + j >= out.c) acc[j] = 0.0f;
        stv(pixel<T>(out, pix) + ch0, acc);
    }
}

template <typename T, int V>
__global__ void pad_kernel(fv__view in, fv__view out, int top, int left, float value,
                           unsigned groups, unsigned items) {
    FV__GRID_LOOP(i, items) {
        const unsigned pix = i / groups;
        const int ch0 = (int)(i - pix * groups) * V;
        float x[V];
#pragma unroll
        for (int j = 0; j < V; j++)
            x[j] = value;
        if (ch0 < out.c) {
            const coord o = split(pix, out.h, out.w);
            const int iy = o.y - top, ix = o.x - left;
            if (iy >= 0 && iy < in.h && ix >= 0 && ix < in.w)
                ldv(pixel<const T>(in, o.b, iy, ix) + ch0, x);
        }
#pragma unroll
        for (int j = 0; j < V; j++)
            if (ch0 + j >= out.c) x[j] = 0.0f;
        stv(pixel<T>(out, pix) + ch0, x);
    }
}

/* Reshape: a gather per element (the input in any layout), V channels
 * stored at once. */
template <typename T, int V>
__global__ void reshape_kernel(fv__view in, fv__view out, unsigned groups, unsigned items) {
    const T *src = (const T *)in.data;
    FV__GRID_LOOP(i, items) {
        const unsigned pix = i / groups;
        const int ch0 = (int)(i - pix * groups) * V;
        const coord o = split(pix, out.h, out.w);
        float x[V];
#pragma unroll
        for (int j = 0; j < V; j++) {
            const int ch = ch0 + j;
            x[j] = 0.0f;
            if (ch < out.c) {
                unsigned f = (((unsigned)o.b * (unsigned)out.c + (unsigned)ch) * (unsigned)out.h +
                              (unsigned)o.y) *
                                 (unsigned)out.w +
                             (unsigned)o.x;
                const unsigned sx = f % (unsigned)in.w;
                f /= (unsigned)in.w;
                const unsigned sy = f % (unsigned)in.h;
                f /= (unsigned)in.h;
                const unsigned sc = f % (unsigned)in.c, sb = f / (unsigned)in.c;
                const unsigned sp = (sb * (unsigned)in.h + sy) * (unsigned)in.w + sx;
                x[j] = load(src, (size_t)sp * (size_t)in.ps + sc);
            }
        }
        stv(pixel<T>(out, pix) + ch0, x);
    }
}

/* Transposed convolution as a gather: out (oy, ox) takes input (iy, ix)
 * through tap (r, s) where iy * stride - pad + r * dilation == oy. V output
 * channels a thread, all of one group (the launcher sees to it); lanes past
 * K read channel K-1's weights and are zeroed at the store. */
template <typename T, int V>
__global__ void convt_kernel(fv__view in, fv__view out, fv__convt_params p, const float *w,
                             const float *bias, unsigned groups, unsigned items) {
    const int k_all = out.c, kg = k_all / p.groups, cg = in.c / p.groups;
    const int rs = p.r * p.s;
    FV__GRID_LOOP(i, items) {
        const unsigned pix = i / groups;
        const int ch0 = (int)(i - pix * groups) * V;
        float acc[V] = {};
        if (ch0 < k_all) {
            const coord o = split(pix, out.h, out.w);
            const int grp = ch0 / kg;
            int kl[V];
#pragma unroll
            for (int j = 0; j < V; j++) {
                const int k = min(ch0 + j, k_all - 1);
                kl[j] = (k - grp * kg) * rs;
                acc[j] = bias ? __ldg(bias + k) : 0.0f;
            }
            for (int r = 0; r < p.r; r++) {
                const int ty = o.y + p.pad_top - r * p.dilation_h;
                if (ty < 0 || ty % p.stride_h) continue;
                const int iy = ty / p.stride_h;
                if (iy >= in.h) continue;
                for (int s = 0; s < p.s; s++) {
                    const int tx = o.x + p.pad_left - s * p.dilation_w;
                    if (tx < 0 || tx % p.stride_w) continue;
                    const int ix = tx / p.stride_w;
                    if (ix >= in.w) continue;
                    const T *ip = pixel<const T>(in, o.b, iy, ix);
                    /* W[c][kl][r][s] */
                    const float *wp = w + (size_t)grp * cg * kg * rs + r * p.s + s;
                    for (int c = grp * cg; c < (grp + 1) * cg; c++, wp += (size_t)kg * rs) {
                        const float v = load(ip, (size_t)c);
#pragma unroll
                        for (int j = 0; j < V; j++)
                            acc[j] += v * __ldg(wp + kl[j]);
                    }
                }
            }
#pragma unroll
            for (int j = 0; j < V; j++)
                acc[j] = fv__act2(p.act, p.alpha, p.beta, acc[j]);
        }
#pragma unroll
        for (int j = 0; j < V; j++)
            if (ch0 + j >= k_all) acc[j] = 0.0f;
        stv(pixel<T>(out, pix) + ch0, acc);
    }
}

/* ---- host side ----------------------------------------------------------- */

template <typename T, int V> struct tag {
    using type = T;
    static constexpr int v = V;
};

/* Calls f(tag<T, V>()): 8 F16 channels a thread where vec, else one
 * channel of the dtype. */
template <class F> void dispatch(bool vec, fv_dtype dt, F &&f) {
    if (vec)
        f(tag<__half, 8>());
    else if (dt == FV_DTYPE_F16)
        f(tag<__half, 1>());
    else
        f(tag<float, 1>());
}

/* A view the 8-channel kernels can read and write: whole 16-byte vectors
 * over [0, cw), every pixel's channel 0 on a 16-byte boundary. An input is
 * read up to c rounded up to 8 (<= cw), never past cw. */
bool vec8(const fv__view *v) {
    return v->dtype == FV_DTYPE_F16 && v->ps % 8 == 0 && v->cw % 8 == 0 &&
           ((uintptr_t)v->data & 15) == 0;
}

fv_status check_view(const char *op, const char *name, const fv__view *v, fv_dtype dtype) {
    FV_REQUIRE(v && v->data, FV_ERR_INTERNAL, "net %s kernel: view %s is NULL", op, name);
    FV_REQUIRE(v->dtype == FV_DTYPE_F16 || v->dtype == FV_DTYPE_F32, FV_ERR_NOT_SUPPORTED,
               "net %s kernel: dtype %d (the CUDA kernels take F16 or F32 views)", op,
               (int)v->dtype);
    FV_REQUIRE(v->dtype == dtype, FV_ERR_INTERNAL, "net %s kernel: view %s is dtype %d, not %d", op,
               name, (int)v->dtype, (int)dtype);
    FV_REQUIRE(v->n >= 1 && v->h >= 1 && v->w >= 1 && v->c >= 1 && v->cw >= v->c && v->ps >= v->cw,
               FV_ERR_INTERNAL, "net %s kernel: view %s is %dx%dx%dx%d (cw %d, ps %d)", op, name,
               v->n, v->h, v->w, v->c, v->cw, v->ps);
    FV_REQUIRE((double)v->n * v->h * v->w * v->ps <= (double)INT_MAX, FV_ERR_NOT_SUPPORTED,
               "net %s kernel: view %s of %dx%dx%dx%d (ps %d) has over 2^31 elements", op, name,
               v->n, v->h, v->w, v->c, v->ps);
    return FV_OK;
}

fv_status check_io(const char *op, const fv__view *in, const fv__view *out) {
    FV_REQUIRE(out, FV_ERR_INTERNAL, "net %s kernel: view out is NULL", op);
    FV_TRY(check_view(op, "out", out, out->dtype));
    FV_TRY(check_view(op, "in", in, out->dtype));
    return FV_OK;
}

bool same_pixels(const fv__view *a, const fv__view *b) {
    return a->n == b->n && a->h == b->h && a->w == b->w;
}

unsigned pixels_of(const fv__view *v) {
    return (unsigned)v->n * (unsigned)v->h * (unsigned)v->w;
}

/* Work items of a (pixel, V-channel group) loop over out: out.cw / V
 * groups a pixel. */
template <int V> unsigned groups_of(const fv__view *out) {
    return (unsigned)((out->cw + V - 1) / V);
}

operand operand_of(const fv__view *v, const fv__view *out) {
    operand o;
    o.data = v->data;
    o.ps = v->ps;
    o.sn = v->n == 1 ? 0u : (unsigned)v->h * (unsigned)v->w;
    o.sh = v->h == 1 ? 0u : (unsigned)v->w;
    o.sw = v->w == 1 ? 0u : 1u;
    o.bc = v->c == 1 && out->c > 1;
    return o;
}

} // namespace

extern "C" fv_status fv__cuda_net_map_launch(cudaStream_t stream, const fv__view *in,
                                             const fv__view *out, const float *scale,
                                             const float *shift, int count, int act, float alpha,
                                             float beta) {
    const char *op = scale ? "affine" : "map";
    FV_TRY(check_io(op, in, out));
    FV_REQUIRE(same_pixels(in, out) && in->c == out->c, FV_ERR_INTERNAL,
               "net %s kernel: in and out shapes differ", op);
    FV_REQUIRE(!scale || (shift && (count == 1 || count == out->c)), FV_ERR_INTERNAL,
               "net affine kernel: %d values for %d channels", count, out->c);
    const fv__view i = *in, o = *out;
    dispatch(vec8(in) && vec8(out), o.dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        constexpr int V = decltype(t)::v;
        const unsigned groups = groups_of<V>(&o), items = pixels_of(&o) * groups;
        map_kernel<T, V><<<blocks_for(items), threads, 0, stream>>>(
            i, o, scale, shift, count != 1, act, alpha, beta, groups, items);
    });
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_net_binary_launch(cudaStream_t stream, int op, const fv__view *a,
                                                const fv__view *b, const fv__view *out, int act,
                                                float alpha, float beta) {
    FV_TRY(check_io("binary", a, out));
    FV_TRY(check_view("binary", "b", b, out->dtype));
    const fv__view *ops[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        const fv__view *v = ops[k];
        FV_REQUIRE((v->n == out->n || v->n == 1) && (v->h == out->h || v->h == 1) &&
                       (v->w == out->w || v->w == 1) && (v->c == out->c || v->c == 1),
                   FV_ERR_INTERNAL,
                   "net binary kernel: %c (%dx%dx%dx%d) does not broadcast to %dx%dx%dx%d", "ab"[k],
                   v -> n, v -> h, v -> w, v -> c, out -> n, out -> h, out -> w, out -> c);
    }
    const operand oa = operand_of(a, out), ob = operand_of(b, out);
    /* an operand with one broadcast channel is read a half at a time */
    const bool vec = vec8(out) && (oa.bc || vec8(a)) && (ob.bc || vec8(b));
    const int spatial = !same_pixels(a, out) || !same_pixels(b, out);
    const fv__view o = *out;
    dispatch(vec, o.dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        constexpr int V = decltype(t)::v;
        const unsigned groups = groups_of<V>(&o), items = pixels_of(&o) * groups;
        binary_kernel<T, V><<<blocks_for(items), threads, 0, stream>>>(op, oa, ob, o, spatial, act,
                                                                       alpha, beta, groups, items);
    });
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_net_pool_launch(cudaStream_t stream, const fv__view *in,
                                              const fv__view *out, const fv__pool_params *p) {
    FV_TRY(check_io("pool", in, out));
    FV_REQUIRE(p && p->r >= 1 && p->s >= 1 && p->stride_h >= 1 && p->stride_w >= 1 &&
                   p->dilation_h >= 1 && p->dilation_w >= 1 && p->pad_top >= 0 &&
                   p->pad_left >= 0 && in->n == out->n && in->c == out->c,
               FV_ERR_INTERNAL, "net pool kernel: bad parameters");
    const fv__view i = *in, o = *out;
    const fv__pool_params pp = *p;
    dispatch(vec8(in) && vec8(out), o.dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        constexpr int V = decltype(t)::v;
        const unsigned groups = groups_of<V>(&o), items = pixels_of(&o) * groups;
        pool_kernel<T, V><<<blocks_for(items), threads, 0, stream>>>(i, o, pp, groups, items);
    });
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_net_global_pool_launch(cudaStream_t stream, const fv__view *in,
                                                     const fv__view *out, int avg) {
    FV_TRY(check_io("global_pool", in, out));
    FV_REQUIRE(in->n == out->n && in->c == out->c && out->h == 1 && out->w == 1, FV_ERR_INTERNAL,
               "net global_pool kernel: out is not %dx1x1x%d", in->n, in->c);
    const fv__view i = *in, o = *out;
    const int hw = in->h * in->w;
    dispatch(vec8(in) && vec8(out), o.dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        constexpr int V = decltype(t)::v;
        const int groups = (int)groups_of<V>(&o);
        /* lanes: about 4 pixels each (the loop keeps 4 loads in flight);
         * the rest of the block's threads take further channel groups */
        int lanes = 1, gpb = 1;
        while (lanes < GP_THREADS && lanes * 4 < hw)
            lanes *= 2;
        while (gpb * lanes < GP_THREADS && gpb < groups)
            gpb *= 2;
        const int chunks = (groups + gpb - 1) / gpb;
        global_pool_kernel<T, V><<<(unsigned)(o.n * chunks), (unsigned)(gpb * lanes), 0, stream>>>(
            i, o, avg, gpb, lanes, chunks);
    });
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_net_softmax_launch(cudaStream_t stream, const fv__view *in,
                                                 const fv__view *out) {
    FV_TRY(check_io("softmax", in, out));
    FV_REQUIRE(same_pixels(in, out) && in->c == out->c, FV_ERR_INTERNAL,
               "net softmax kernel: in and out shapes differ");
    const fv__view i = *in, o = *out;
    dispatch(vec8(in) && vec8(out), o.dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        constexpr int V = decltype(t)::v;
        const int gin = (i.c + V - 1) / V;
        int tp = 1;
        while (tp < 32 && tp < gin)
            tp *= 2;
        const unsigned pixels = pixels_of(&o);
        const size_t per_block = threads / 32 * (32 / tp);
        softmax_kernel<T, V>
            <<<blocks_for((pixels + per_block - 1) / per_block * threads), threads, 0, stream>>>(
                i, o, tp, pixels);
    });
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_net_resize_launch(cudaStream_t stream, const fv__view *in,
                                                const fv__view *out, const fv__resize_params *p) {
    FV_TRY(check_io("resize", in, out));
    FV_REQUIRE(p && p->scale_h > 0.0f && p->scale_w > 0.0f && in->n == out->n && in->c == out->c,
               FV_ERR_INTERNAL, "net resize kernel: bad parameters");
    const fv__view i = *in, o = *out;
    const fv__resize_params rp = *p;
    dispatch(vec8(in) && vec8(out), o.dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        constexpr int V = decltype(t)::v;
        const unsigned groups = groups_of<V>(&o), items = pixels_of(&o) * groups;
        resize_kernel<T, V><<<blocks_for(items), threads, 0, stream>>>(i, o, rp, groups, items);
    });
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_net_pad_launch(cudaStream_t stream, const fv__view *in,
                                             const fv__view *out, int top, int left, float value) {
    FV_TRY(check_io("pad", in, out));
    FV_REQUIRE(top >= 0 && left >= 0 && in->n == out->n && in->c == out->c, FV_ERR_INTERNAL,
               "net pad kernel: bad parameters");
    const fv__view i = *in, o = *out;
    dispatch(vec8(in) && vec8(out), o.dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        constexpr int V = decltype(t)::v;
        const unsigned groups = groups_of<V>(&o), items = pixels_of(&o) * groups;
        pad_kernel<T, V>
            <<<blocks_for(items), threads, 0, stream>>>(i, o, top, left, value, groups, items);
    });
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_net_reshape_launch(cudaStream_t stream, const fv__view *in,
                                                 const fv__view *out) {
    FV_TRY(check_io("reshape", in, out));
    FV_REQUIRE((double)in->n * in->c * in->h * in->w == (double)out->n * out->c * out->h * out->w,
               FV_ERR_INTERNAL, "net reshape kernel: %dx%dx%dx%d -> %dx%dx%dx%d changes the count",
               in->n, in->c, in->h, in->w, out->n, out->c, out->h, out->w);
    const fv__view i = *in, o = *out;
    /* gathers: only the stores are vectors */
    dispatch(vec8(out), o.dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        constexpr int V = decltype(t)::v;
        const unsigned groups = groups_of<V>(&o), items = pixels_of(&o) * groups;
        reshape_kernel<T, V><<<blocks_for(items), threads, 0, stream>>>(i, o, groups, items);
    });
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}

extern "C" fv_status fv__cuda_net_convt_launch(cudaStream_t stream, const fv__view *in,
                                               const fv__view *out, const fv__convt_params *p,
                                               const float *weights, const float *bias) {
    FV_TRY(check_io("conv_transpose", in, out));
    FV_REQUIRE(p && weights && p->r >= 1 && p->s >= 1 && p->stride_h >= 1 && p->stride_w >= 1 &&
                   p->dilation_h >= 1 && p->dilation_w >= 1 && p->pad_top >= 0 &&
                   p->pad_left >= 0 && p->groups >= 1 && in->c % p->groups == 0 &&
                   out->c % p->groups == 0 && in->n == out->n,
               FV_ERR_INTERNAL, "net conv_transpose kernel: bad parameters");
    const fv__view i = *in, o = *out;
    const fv__convt_params cp = *p;
    /* 8 output channels a thread (one input load feeds 8 sums) when they
     * are of one group; the input is read a channel at a time */
    const int kg = out->c / p->groups;
    dispatch(vec8(out) && (p->groups == 1 || kg % 8 == 0), o.dtype, [&](auto t) {
        using T = typename decltype(t)::type;
        constexpr int V = decltype(t)::v;
        const unsigned groups = groups_of<V>(&o), items = pixels_of(&o) * groups;
        convt_kernel<T, V>
            <<<blocks_for(items), threads, 0, stream>>>(i, o, cp, weights, bias, groups, items);
    });
    FV_CUDA_TRY(cudaGetLastError());
    return FV_OK;
}
