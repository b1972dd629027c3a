/* fovea-regress: parsing the convolution keys of a device profile. */
#include "regress_key.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX_DIM 1000000L

static int fail(char *err, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && n) vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* The alpha the SDK writes: only clipped ReLU and leaky ReLU have one, 0
 * meaning their default. */
static float key_alpha(const fv_conv2d_desc *d) {
    if (d->activation == FV_ACT_CLIPPED_RELU)
        return d->activation_alpha == 0 ? 6.0f : d->activation_alpha;
    if (d->activation == FV_ACT_LEAKY_RELU)
        return d->activation_alpha == 0 ? 0.01f : d->activation_alpha;
    return 0.0f;
}

void regress_key_format(const fv_conv2d_desc *d, int has_bias, char *out, size_t n) {
    if (!out || n == 0) return;
#define DEF1(x) ((x) == 0 ? 1 : (x))
    float alpha = key_alpha(d);
    snprintf(out, n,
             "conv2d:n%d:h%d:w%d:c%d:k%d:r%d:s%d:u%d:v%d:p%d:q%d:d%d:e%d:g%d:a%d:al%g:b%d:%s",
             DEF1(d->n), d->h, d->w, d->c, d->k, d->r, d->s, DEF1(d->stride_h), DEF1(d->stride_w),
             d->pad_h, d->pad_w, DEF1(d->dilation_h), DEF1(d->dilation_w), DEF1(d->groups),
             (int)d->activation, alpha == 0 ? 0.0 : (double)alpha, has_bias ? 1 : 0,
             d->dtype == FV_DTYPE_F32 ? "f32" : "f16");
#undef DEF1
}

/* The integer fields in key order, with their smallest value. */
static const struct {
    const char *name;
    long lo;
} int_fields[] = {{"n", 1}, {"h", 1}, {"w", 1}, {"c", 1}, {"k", 1}, {"r", 1}, {"s", 1}, {"u", 1},
                  {"v", 1}, {"p", 0}, {"q", 0}, {"d", 1}, {"e", 1}, {"g", 1}, {"a", 0}};
enum { NINT = sizeof int_fields / sizeof int_fields[0] };

int regress_key_parse(const char *key, fv_conv2d_desc *d, int *has_bias, char *err, size_t err_n) {
    if (!key || !d || !has_bias) return fail(err, err_n, "no key");
    memset(d, 0, sizeof *d);
    *has_bias = 0;
    char buf[256];
    if (strlen(key) >= sizeof buf) return fail(err, err_n, "key longer than %zu bytes", sizeof buf);
    snprintf(buf, sizeof buf, "%s", key);
    char *save = NULL, *tok = strtok_r(buf, ":", &save);
    if (!tok || strcmp(tok, "conv2d") != 0)
        return fail(err, err_n, "key does not start with 'conv2d:'");
    long v[NINT];
    for (int i = 0; i < NINT; i++) {
        tok = strtok_r(NULL, ":", &save);
        const char *name = int_fields[i].name;
        size_t nl = strlen(name);
        if (!tok) return fail(err, err_n, "field %s is missing", name);
        if (strncmp(tok, name, nl) != 0 || tok[nl] < '0' || tok[nl] > '9')
            return fail(err, err_n, "field '%s' where %s<number> was expected", tok, name);
        char *end = NULL;
        errno = 0;
        v[i] = strtol(tok + nl, &end, 10);
        if (errno || *end || v[i] < int_fields[i].lo || v[i] > KEY_MAX_DIM)
            return fail(err, err_n, "bad value in '%s' (%s from %ld to %ld)", tok, name,
                        int_fields[i].lo, KEY_MAX_DIM);
    }
    if (v[14] > FV_ACT_LEAKY_RELU)
        return fail(err, err_n, "unknown activation a%ld (0..%d)", v[14], (int)FV_ACT_LEAKY_RELU);
    tok = strtok_r(NULL, ":", &save);
    if (!tok || strncmp(tok, "al", 2) != 0) return fail(err, err_n, "field al<alpha> is missing");
    char *end = NULL;
    errno = 0;
    double alpha = strtod(tok + 2, &end);
    if (errno || end == tok + 2 || *end || !(alpha >= 0 && alpha < 1e6))
        return fail(err, err_n, "bad activation alpha in '%s'", tok);
    tok = strtok_r(NULL, ":", &save);
    if (!tok || (strcmp(tok, "b0") != 0 && strcmp(tok, "b1") != 0))
        return fail(err, err_n, "field '%s' where b0 or b1 was expected", tok ? tok : "");
    *has_bias = tok[1] == '1';
    tok = strtok_r(NULL, ":", &save);
    if (!tok || (strcmp(tok, "f16") != 0 && strcmp(tok, "f32") != 0))
        return fail(err, err_n, "dtype '%s' where f16 or f32 was expected", tok ? tok : "");
    d->dtype = strcmp(tok, "f32") == 0 ? FV_DTYPE_F32 : FV_DTYPE_F16;
    if ((tok = strtok_r(NULL, ":", &save)) != NULL)
        return fail(err, err_n, "unexpected field '%s' after the dtype", tok);
    d->n = (int)v[0], d->h = (int)v[1], d->w = (int)v[2], d->c = (int)v[3], d->k = (int)v[4];
    d->r = (int)v[5], d->s = (int)v[6], d->stride_h = (int)v[7], d->stride_w = (int)v[8];
    d->pad_h = (int)v[9], d->pad_w = (int)v[10], d->dilation_h = (int)v[11];
    d->dilation_w = (int)v[12], d->groups = (int)v[13], d->activation = (fv_activation)v[14];
    d->activation_alpha = (float)alpha;
    if (d->c % d->groups || d->k % d->groups)
        return fail(err, err_n, "groups g%d do not divide c%d and k%d", d->groups, d->c, d->k);
    if (fv_conv_output_dim(d->h, d->r, d->stride_h, d->pad_h, d->dilation_h) < 1 ||
        fv_conv_output_dim(d->w, d->s, d->stride_w, d->pad_w, d->dilation_w) < 1)
        return fail(err, err_n, "the %dx%d kernel does not fit the %dx%d input", d->r, d->s, d->h,
                    d->w);
    char again[256];
    regress_key_format(d, *has_bias, again, sizeof again);
    if (strcmp(again, key) != 0)
        return fail(err, err_n, "not in the SDK's form (it would write %s)", again);
    return 0;
}
