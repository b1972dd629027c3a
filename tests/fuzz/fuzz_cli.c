/* libFuzzer entry point for the command-line option parsers shared by
 * fovea's programs (apps/common/fv_cli.c): option values, numbers,
 * backends, filter names and custom kernels ("R,C:V,V,...").
 *
 * Built only with clang and -DFV_BUILD_FUZZERS=ON; toolchain/fuzz.sh builds
 * and runs it on corpus/fuzz_cli (with stderr closed: the parsers print
 * usage errors). Input: one byte choosing the parser, then its text; for
 * fv_cli_opt_value, newline-separated arguments. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fv_cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void opt_values(char *text) {
    char *argv[64];
    int argc = 0;
    for (char *save = NULL, *a = strtok_r(text, "\n", &save); a && argc < 64;
         a = strtok_r(NULL, "\n", &save))
        argv[argc++] = a;
    static const char *const names[] = {"--input", "--output", "--backend", "--kernel", "-n"};
    for (int i = 0; i < argc; i++) {
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            int j = i, bad = 0;
            const char *v = fv_cli_opt_value("fuzz", argc, argv, &j, names[k], &bad);
            if (v) {
                if (j < i || j > i + 1 || j >= argc || bad) abort();
                (void)strlen(v);
            } else if (bad != (j == i && j + 1 == argc && strcmp(argv[i], names[k]) == 0)) {
                abort(); /* "NAME needs a value" only for a bare NAME at the end */
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    char *text = malloc(size);
    if (!text) abort();
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    switch (data[0] % 6) {
    case 0: {
        float values[FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL];
        fv_filter_desc f = {.kind = FV_FILTER_LAPLACIAN};
        if (fv_cli_parse_kernel("fuzz", text, values, &f) == 0) {
            if (f.kind != FV_FILTER_CUSTOM || f.kernel != values || f.kernel_rows < 1 ||
                f.kernel_cols < 1 || f.kernel_rows > FV_FILTER_MAX_KERNEL ||
                f.kernel_cols > FV_FILTER_MAX_KERNEL || !(f.kernel_rows & 1) ||
                !(f.kernel_cols & 1))
                abort();
            for (int i = 0; i < f.kernel_rows * f.kernel_cols; i++)
                if (!(values[i] > -1e6f && values[i] < 1e6f)) abort();
        } else if (f.kind != FV_FILTER_LAPLACIAN || f.kernel) {
            abort(); /* untouched on failure */
        }
        break;
    }
    case 1: {
        double x = 0;
        if (fv_cli_double(text, -1e3, 1e3, &x) == 0 && !(x >= -1e3 && x <= 1e3)) abort();
        if (fv_cli_parse_num("fuzz", "--rate", text, 0, 1e4, &x) == 0 && !(x >= 0 && x <= 1e4))
            abort();
        break;
    }
    case 2: {
        long x = 0;
        if (fv_cli_long(text, -5, 100000, &x) == 0 && (x < -5 || x > 100000)) abort();
        break;
    }
    case 3: {
        fv_backend b;
        fv_filter_kind k;
        (void)fv_cli_backend(text, &b);
        (void)fv_cli_filter_kind(text, &k);
        break;
    }
    default:
        opt_values(text);
        break;
    }
    free(text);
    return 0;
}
