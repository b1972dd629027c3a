/* fv_cli: option parsing shared by the command-line programs (fv_cli.h). */
#include "fv_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libfovea's non-blocking open of regular files (sdk/src/core/file.c). */
int fv__fopen_regular(const char *path, FILE **out, const char **kind);

FILE *fv_cli_fopen_read(const char *path, char *why, size_t why_n) {
    FILE *f = NULL;
    const char *kind = NULL;
    int e = fv__fopen_regular(path, &f, &kind);
    if (e < 0)
        snprintf(why, why_n, "it is %s, not a regular file", kind);
    else if (e > 0)
        snprintf(why, why_n, "%s", strerror(e));
    return f;
}

const char *fv_cli_opt_value(const char *prog, int argc, char **argv, int *i, const char *name,
                             int *bad) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != '\0') return NULL; /* a longer option: "--input-width" is not "--input" */
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", prog, name);
        *bad = 1;
        return NULL;
    }
    return argv[++*i];
}

int fv_cli_double(const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi)) return -1; /* !(..) also refuses NaN */
    *out = x;
    return 0;
}

int fv_cli_long(const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

int fv_cli_parse_num(const char *prog, const char *name, const char *v, double lo, double hi,
                     double *out) {
    if (fv_cli_double(v, lo, hi, out) == 0) return 0;
    fprintf(stderr, "%s: %s %s: give a number from %g to %g\n", prog, name, v, lo, hi);
    return -1;
}

int fv_cli_backend(const char *v, fv_backend *out) {
    if (strcmp(v, "auto") == 0)
        *out = FV_BACKEND_AUTO;
    else if (strcmp(v, "cpu") == 0)
        *out = FV_BACKEND_CPU;
    else if (strcmp(v, "cuda") == 0)
        *out = FV_BACKEND_CUDA;
    else
        return -1;
    return 0;
}

int fv_cli_memory(const char *v, fv_memory_policy *out) {
    if (strcmp(v, "auto") == 0)
        *out = FV_MEMORY_POLICY_AUTO;
    else if (strcmp(v, "zero-copy") == 0)
        *out = FV_MEMORY_POLICY_ZERO_COPY;
    else if (strcmp(v, "device") == 0)
        *out = FV_MEMORY_POLICY_DEVICE;
    else
        return -1;
    return 0;
}

int fv_cli_device(const char *prog, const char *v, int *out) {
    long d;
    /* digits only: strtol would also take " 3", "+3" and "-0" */
    if (v[0] >= '0' && v[0] <= '9' && fv_cli_long(v, 0, FV_CLI_MAX_DEVICE, &d) == 0) {
        *out = (int)d;
        return 0;
    }
    fprintf(stderr, "%s: --device %s: give a CUDA device index, a whole number from 0 to %d\n",
            prog, v, FV_CLI_MAX_DEVICE);
    return -1;
}

int fv_cli_device_backend(const char *prog, int device, int device_given, fv_backend *backend) {
    if (*backend == FV_BACKEND_CPU && device != 0) {
        fprintf(stderr,
                "%s: --device %d: the CPU backend has no devices (drop --device, or use "
                "--backend cuda)\n",
                prog, device);
        return -1;
    }
    if (*backend == FV_BACKEND_AUTO && device_given) *backend = FV_BACKEND_CUDA;
    return 0;
}

int fv_cli_filter_kind(const char *v, fv_filter_kind *out) {
    static const fv_filter_kind kinds[] = {FV_FILTER_LAPLACIAN, FV_FILTER_SOBEL, FV_FILTER_SCHARR,
                                           FV_FILTER_PREWITT, FV_FILTER_CUSTOM};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (strcmp(v, fv_filter_kind_name(kinds[k])) == 0) {
            *out = kinds[k];
            return 0;
        }
    return -1;
}

int fv_cli_parse_kernel(const char *prog, const char *v, float *values, fv_filter_desc *filter) {
    char *end;
    long r = strtol(v, &end, 10), c = 0;
    if (*end == ',') c = strtol(end + 1, &end, 10);
    if (*end != ':' || r < 1 || r > FV_FILTER_MAX_KERNEL || c < 1 || c > FV_FILTER_MAX_KERNEL ||
        r % 2 == 0 || c % 2 == 0) {
        fprintf(stderr,
                "%s: --kernel %s: start with R,C: (odd, 1 to %d), e.g. "
                "\"3,3:0,1,0,1,-4,1,0,1,0\"\n",
                prog, v, FV_FILTER_MAX_KERNEL);
        return -1;
    }
    long n = 0;
    const char *p = end + 1;
    for (;;) {
        errno = 0;
        double x = strtod(p, &end);
        if (end != p && n < r * c && !(x > -1e6 && x < 1e6)) { /* nan, inf, huge */
            int len = (int)(end - p);
            fprintf(stderr,
                    "%s: --kernel %s: value %ld, '%.*s', is not a finite number within "
                    "+-1e6\n",
                    prog, v, n + 1, len, p);
            return -1;
        }
        if (errno || end == p || n >= r * c) break;
        values[n++] = (float)x;
        if (*end == '\0' && n == r * c) {
            filter->kernel_rows = (int)r, filter->kernel_cols = (int)c;
            filter->kernel = values;
            filter->kind = FV_FILTER_CUSTOM;
            return 0;
        }
        if (*end != ',') break;
        p = end + 1;
    }
    fprintf(stderr, "%s: --kernel %s: give %ld x %ld = %ld numbers, comma-separated\n", prog, v, r,
            c, r * c);
    return -1;
}
