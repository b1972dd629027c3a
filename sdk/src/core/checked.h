/* Overflow-checked size arithmetic for every size computed from caller input
 * (pool sizes, tensor shapes and strides, image sizes, kernel sizes). Each
 * helper returns true and stores the result when it fits, false (and leaves
 * *out untouched) when it would wrap; the caller turns false into
 * FV_ERR_BAD_PARAM or FV_ERR_OUT_OF_MEMORY with a message naming the value.
 * Header-only, so backends, platform and tools can use it too. */
#ifndef FOVEA_CHECKED_H
#define FOVEA_CHECKED_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define FV__HAVE_OVERFLOW_BUILTINS 1
#endif

/* *out = a * b */
static inline bool fv__mul_size(size_t a, size_t b, size_t *out) {
#ifdef FV__HAVE_OVERFLOW_BUILTINS
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
#else
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
#endif
    return true;
}

/* *out = a + b */
static inline bool fv__add_size(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return false;
    *out = a + b;
    return true;
}

/* *out = x rounded up to a multiple of a (a > 0) */
static inline bool fv__round_up_size(size_t x, size_t a, size_t *out) {
    size_t r = x % a;
    if (r == 0) {
        *out = x;
        return true;
    }
    return fv__add_size(x, a - r, out);
}

/* *out = x rounded up to a multiple of a, for int sizes (x >= 0, a > 0) */
static inline bool fv__round_up_int(int x, int a, int *out) {
    if (x < 0 || a <= 0) return false;
    int r = x % a;
    if (r == 0) {
        *out = x;
        return true;
    }
    if (x > INT_MAX - (a - r)) return false;
    *out = x + (a - r);
    return true;
}

/* *out = a * b, for int sizes (both >= 0) */
static inline bool fv__mul_int(int a, int b, int *out) {
    if (a < 0 || b < 0) return false;
    if (a != 0 && b > INT_MAX / a) return false;
    *out = a * b;
    return true;
}

/* *out = d0 * d1 * ... for n non-negative int dimensions, as a size_t (the
 * element count of a shape). */
static inline bool fv__dims_size(const int *dims, int n, size_t *out) {
    size_t r = 1;
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0 || !fv__mul_size(r, (size_t)dims[i], &r)) return false;
    }
    *out = r;
    return true;
}

#endif
