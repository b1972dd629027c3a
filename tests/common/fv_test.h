/* Shared helpers for fovea's tests (cmocka). */
#ifndef FV_TEST_H
#define FV_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "fovea/fovea.h"

/* Assert that a fovea call returned FV_OK; on failure print the call, the
 * status name and fv_last_error(). */
#define FV_ASSERT_OK(expr)                                                                         \
    do {                                                                                           \
        fv_status fv_t_s = (expr);                                                                 \
        if (fv_t_s != FV_OK)                                                                       \
            fail_msg("%s -> %s: %s", #expr, fv_status_name(fv_t_s), fv_last_error());              \
    } while (0)

/* Assert a specific failure status, and that the message contains needle
 * (NULL: any non-empty message). */
#define FV_ASSERT_STATUS(expr, want, needle)                                                       \
    do {                                                                                           \
        fv_clear_error();                                                                          \
        fv_status fv_t_s = (expr);                                                                 \
        fv_test_check_status(#expr, fv_t_s, (want), (needle), __FILE__, __LINE__);                 \
    } while (0)

void fv_test_check_status(const char *expr, fv_status got, fv_status want, const char *needle,
                          const char *file, int line);

/* Deterministic random numbers (xorshift64*), seeded per test. */
void fv_test_seed(uint64_t seed);
/* FV_TEST_QUICK set and not "0" (toolchain/compute-sanitizer.sh): GPU tests
 * run shorter lists, so that every sanitizer finishes inside one device call */
int fv_test_quick(void);
uint64_t fv_test_rand_u64(void);
float fv_test_rand_uniform(float lo, float hi); /* [lo, hi) */
void fv_test_fill_uniform(float *x, size_t n, float lo, float hi);
void fv_test_fill_bytes(unsigned char *x, size_t n);

/* ||out - ref|| / ||ref|| (||ref|| 0 gives ||out||); NaN anywhere gives +inf. */
double fv_test_rel_l2(const float *out, const float *ref, size_t n);

/* A CPU context with small pools (flags as given). */
fv_context *fv_test_cpu_context(uint32_t flags);

/* For GPU test programs, called first in main(): returns a CUDA context, or
 * prints "SKIP: <reason>" and exits with 77 (ctest's skip code) when no
 * usable GPU exists. */
fv_context *fv_test_gpu_context_or_skip(void);

/* Path of a bundled data file (data/NAME). Static buffer. */
const char *fv_test_data_path(const char *name);

/* A fresh directory under $TMPDIR (or /tmp) named <prefix>_XXXXXX, written
 * to out (n bytes); 0 on success, -1 on failure. */
int fv_test_temp_dir(const char *prefix, char *out, size_t n);
/* Removes dir and everything in it; a missing dir is ignored. */
void fv_test_remove_tree(const char *dir);

#endif
