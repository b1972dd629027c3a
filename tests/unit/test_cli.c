/* fv_cli (apps/common): the command-line programs' option parsing. The
 * option value getter in both forms and without a value; numbers in and out
 * of range and with junk; backend and filter names; CUDA device indexes
 * and how they go with the backend; custom kernels, good
 * and bad. Messages go to stderr, captured into a temporary file here. */
#define _POSIX_C_SOURCE 200809L
#include "fv_test.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "fv_cli.h"

/* stderr into a temporary file between capture_begin and capture_end. */
static FILE *cap_file;
static int cap_saved = -1;
static char cap_text[1024];

static void capture_begin(void) {
    fflush(stderr);
    cap_file = tmpfile();
    assert_non_null(cap_file);
    cap_saved = dup(STDERR_FILENO);
    assert_true(cap_saved >= 0);
    assert_true(dup2(fileno(cap_file), STDERR_FILENO) >= 0);
}

static const char *capture_end(void) {
    fflush(stderr);
    assert_true(dup2(cap_saved, STDERR_FILENO) >= 0);
    close(cap_saved);
    rewind(cap_file);
    size_t n = fread(cap_text, 1, sizeof cap_text - 1, cap_file);
    cap_text[n] = '\0';
    fclose(cap_file);
    return cap_text;
}

static void opt_value_both_forms(void **state) {
    (void)state;
    char *argv[] = {"prog", "--gain", "2", "--gain=3", "--gain=", "--gainx", "-o", "out.png", NULL};
    int argc = 8, bad = 0, i = 1;
    const char *v = fv_cli_opt_value("prog", argc, argv, &i, "--gain", &bad);
    assert_string_equal(v, "2");
    assert_int_equal(i, 2); /* past the value */
    i = 3;
    assert_string_equal(fv_cli_opt_value("prog", argc, argv, &i, "--gain", &bad), "3");
    assert_int_equal(i, 3);
    i = 4;
    assert_string_equal(fv_cli_opt_value("prog", argc, argv, &i, "--gain", &bad), "");
    /* a longer name and another option are not this one */
    i = 5;
    assert_null(fv_cli_opt_value("prog", argc, argv, &i, "--gain", &bad));
    assert_int_equal(i, 5);
    i = 1;
    assert_null(fv_cli_opt_value("prog", argc, argv, &i, "--threshold", &bad));
    assert_int_equal(i, 1);
    i = 6;
    assert_string_equal(fv_cli_opt_value("prog", argc, argv, &i, "-o", &bad), "out.png");
    assert_int_equal(bad, 0);
}

static void opt_value_missing(void **state) {
    (void)state;
    char *argv[] = {"prog", "--input", "--gain", NULL};
    int bad = 0, i = 2;
    capture_begin();
    const char *v = fv_cli_opt_value("fovea-test", 3, argv, &i, "--gain", &bad);
    const char *msg = capture_end();
    assert_null(v);
    assert_int_equal(bad, 1);
    assert_int_equal(i, 2);
    assert_string_equal(msg, "fovea-test: --gain needs a value\n");
    /* "--input --gain": the next argument is taken as the value, as before */
    bad = 0, i = 1;
    assert_string_equal(fv_cli_opt_value("prog", 3, argv, &i, "--input", &bad), "--gain");
    assert_int_equal(bad, 0);
}

static void numbers_in_range(void **state) {
    (void)state;
    double x = -1;
    assert_int_equal(fv_cli_double("1.5", 0, 2, &x), 0);
    assert_true(x == 1.5);
    assert_int_equal(fv_cli_double("0", 0, 2, &x), 0); /* both ends closed */
    assert_true(x == 0);
    assert_int_equal(fv_cli_double("2", 0, 2, &x), 0);
    assert_int_equal(fv_cli_double("1e3", 1, 1e6, &x), 0);
    assert_true(x == 1000);
    long l = -1;
    assert_int_equal(fv_cli_long("255", 0, 255, &l), 0);
    assert_int_equal(l, 255);
    assert_int_equal(fv_cli_long("-3", -5, 5, &l), 0);
    assert_int_equal(l, -3);
}

static void numbers_out_of_range_or_junk(void **state) {
    (void)state;
    const char *bad_d[] = {"", "abc", "1x", "1.5 ", " ", "nan", "inf", "1e999", "-0.1", "2.01"};
    for (size_t k = 0; k < sizeof bad_d / sizeof bad_d[0]; k++) {
        double x = 42;
        if (fv_cli_double(bad_d[k], 0, 2, &x) != -1) fail_msg("'%s' accepted", bad_d[k]);
        assert_true(x == 42); /* untouched */
    }
    const char *bad_l[] = {"", "x", "1.0", "3x", "256", "-1", "99999999999999999999999"};
    for (size_t k = 0; k < sizeof bad_l / sizeof bad_l[0]; k++) {
        long l = 42;
        if (fv_cli_long(bad_l[k], 0, 255, &l) != -1) fail_msg("'%s' accepted", bad_l[k]);
        assert_int_equal(l, 42);
    }
    double x = 0;
    capture_begin();
    int r = fv_cli_parse_num("fovea-test", "--slots", "17", 1, 16, &x);
    const char *msg = capture_end();
    assert_int_equal(r, -1);
    assert_string_equal(msg, "fovea-test: --slots 17: give a number from 1 to 16\n");
    capture_begin();
    r = fv_cli_parse_num("fovea-test", "--slots", "4", 1, 16, &x);
    assert_string_equal(capture_end(), "");
    assert_int_equal(r, 0);
    assert_true(x == 4);
}

static void backend_and_filter_names(void **state) {
    (void)state;
    fv_backend b = FV_BACKEND_CPU;
    assert_int_equal(fv_cli_backend("auto", &b), 0);
    assert_int_equal(b, FV_BACKEND_AUTO);
    assert_int_equal(fv_cli_backend("cuda", &b), 0);
    assert_int_equal(b, FV_BACKEND_CUDA);
    assert_int_equal(fv_cli_backend("cpu", &b), 0);
    assert_int_equal(b, FV_BACKEND_CPU);
    assert_int_equal(fv_cli_backend("CPU", &b), -1);
    assert_int_equal(fv_cli_backend("gpu", &b), -1);
    assert_int_equal(b, FV_BACKEND_CPU);
    const fv_filter_kind all[] = {FV_FILTER_LAPLACIAN, FV_FILTER_SOBEL, FV_FILTER_SCHARR,
                                  FV_FILTER_PREWITT, FV_FILTER_CUSTOM};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        fv_filter_kind got = (fv_filter_kind)-1;
        assert_int_equal(fv_cli_filter_kind(fv_filter_kind_name(all[k]), &got), 0);
        assert_int_equal(got, all[k]);
    }
    fv_filter_kind got = FV_FILTER_SOBEL;
    assert_int_equal(fv_cli_filter_kind("canny", &got), -1);
    assert_int_equal(fv_cli_filter_kind("", &got), -1);
    assert_int_equal(got, FV_FILTER_SOBEL);
}

static void device_accepted(void **state) {
    (void)state;
    const struct {
        const char *v;
        int want;
    } ok[] = {{"0", 0}, {"1", 1}, {"7", 7}, {"007", 7}, {"255", 255}};
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        int d = -1;
        capture_begin();
        int r = fv_cli_device("fovea-test", ok[k].v, &d);
        const char *msg = capture_end();
        if (r != 0) fail_msg("--device %s refused: %s", ok[k].v, msg);
        assert_int_equal(d, ok[k].want);
        assert_string_equal(msg, "");
    }
}

static void device_refused(void **state) {
    (void)state;
    const char *bad[] = {"-1", "x",  "999", "256", "",    " 1",
                         "+1", "-0", "1.5", "1x",  "0x1", "99999999999999999999999"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int d = 42;
        capture_begin();
        int r = fv_cli_device("fovea-test", bad[k], &d);
        const char *msg = capture_end();
        if (r != -1) fail_msg("--device '%s' accepted as %d", bad[k], d);
        assert_int_equal(d, 42); /* untouched */
        char want[256];
        snprintf(want, sizeof want,
                 "fovea-test: --device %s: give a CUDA device index, a whole number from 0 to "
                 "255\n",
                 bad[k]);
        assert_string_equal(msg, want);
    }
}

static void device_and_backend(void **state) {
    (void)state;
    /* the CPU backend: device 0 (given or not) accepted and ignored, others refused */
    fv_backend b = FV_BACKEND_CPU;
    capture_begin();
    assert_int_equal(fv_cli_device_backend("fovea-test", 0, 1, &b), 0);
    assert_int_equal(fv_cli_device_backend("fovea-test", 0, 0, &b), 0);
    assert_string_equal(capture_end(), "");
    assert_int_equal(b, FV_BACKEND_CPU);
    capture_begin();
    int r = fv_cli_device_backend("fovea-test", 3, 1, &b);
    const char *msg = capture_end();
    assert_int_equal(r, -1);
    assert_int_equal(b, FV_BACKEND_CPU);
    if (!strstr(msg, "fovea-test: --device 3: the CPU backend has no devices"))
        fail_msg("--backend cpu --device 3: message '%s'", msg);
    /* AUTO: a named device asks for CUDA (no quiet CPU fallback); unnamed stays AUTO */
    b = FV_BACKEND_AUTO;
    assert_int_equal(fv_cli_device_backend("fovea-test", 0, 0, &b), 0);
    assert_int_equal(b, FV_BACKEND_AUTO);
    assert_int_equal(fv_cli_device_backend("fovea-test", 0, 1, &b), 0);
    assert_int_equal(b, FV_BACKEND_CUDA);
    b = FV_BACKEND_AUTO;
    assert_int_equal(fv_cli_device_backend("fovea-test", 5, 1, &b), 0);
    assert_int_equal(b, FV_BACKEND_CUDA);
    /* CUDA: any index */
    assert_int_equal(fv_cli_device_backend("fovea-test", 255, 1, &b), 0);
    assert_int_equal(b, FV_BACKEND_CUDA);
}

static void kernel_good(void **state) {
    (void)state;
    float k[FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL];
    fv_filter_desc d = {.gain = 2.0f};
    assert_int_equal(fv_cli_parse_kernel("p", "3,3:0,1,0,1,-4,1,0,1,0", k, &d), 0);
    assert_int_equal(d.kind, FV_FILTER_CUSTOM);
    assert_int_equal(d.kernel_rows, 3);
    assert_int_equal(d.kernel_cols, 3);
    assert_ptr_equal(d.kernel, k);
    const float want[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    for (int n = 0; n < 9; n++)
        assert_true(k[n] == want[n]);
    assert_true(d.gain == 2.0f); /* other fields untouched */

    fv_filter_desc e = {0};
    assert_int_equal(fv_cli_parse_kernel("p", "1,5:-1.5,0.25,1e2,0,3", k, &e), 0);
    assert_int_equal(e.kernel_rows, 1);
    assert_int_equal(e.kernel_cols, 5);
    assert_true(k[0] == -1.5f && k[1] == 0.25f && k[2] == 100.0f && k[4] == 3.0f);

    /* the largest size */
    char big[4096];
    int m = FV_FILTER_MAX_KERNEL, len = snprintf(big, sizeof big, "%d,%d:", m, m);
    for (int n = 0; n < m * m; n++)
        len += snprintf(big + len, sizeof big - (size_t)len, n ? ",%d" : "%d", n);
    assert_int_equal(fv_cli_parse_kernel("p", big, k, &e), 0);
    assert_int_equal(e.kernel_rows, m);
    assert_true(k[m * m - 1] == (float)(m * m - 1));
}

/* A bad kernel: -1, the desc untouched, and the message names the problem. */
static void expect_bad_kernel(const char *v, const char *needle) {
    float k[FV_FILTER_MAX_KERNEL * FV_FILTER_MAX_KERNEL];
    fv_filter_desc d = {.kind = FV_FILTER_SOBEL};
    capture_begin();
    int r = fv_cli_parse_kernel("fovea-test", v, k, &d);
    const char *msg = capture_end();
    if (r != -1) fail_msg("kernel '%s' accepted", v);
    assert_int_equal(d.kind, FV_FILTER_SOBEL);
    assert_null(d.kernel);
    assert_int_equal(d.kernel_rows, 0);
    if (!strstr(msg, needle) || strncmp(msg, "fovea-test: --kernel ", 21) != 0)
        fail_msg("kernel '%s': message '%s' lacks '%s'", v, msg, needle);
}

static void kernel_wrong_count(void **state) {
    (void)state;
    expect_bad_kernel("3,3:1,2", "give 3 x 3 = 9 numbers, comma-separated");
    expect_bad_kernel("3,3:1,2,3,4,5,6,7,8,9,10", "give 3 x 3 = 9 numbers");
    expect_bad_kernel("1,3:1,2,", "give 1 x 3 = 3 numbers");
    expect_bad_kernel("1,1:", "give 1 x 1 = 1 numbers");
}

static void kernel_even_or_bad_size(void **state) {
    (void)state;
    const char *size_msg = "start with R,C: (odd, 1 to";
    expect_bad_kernel("2,3:1,2,3,4,5,6", size_msg);
    expect_bad_kernel("3,4:1,2,3,4,5,6,7,8,9,10,11,12", size_msg);
    expect_bad_kernel("17,1:1", size_msg);
    expect_bad_kernel("0,1:", size_msg);
    expect_bad_kernel("-3,3:1", size_msg);
    expect_bad_kernel("3:1,2,3", size_msg); /* no C */
}

static void kernel_junk(void **state) {
    (void)state;
    expect_bad_kernel("", "start with R,C:");
    expect_bad_kernel("laplacian", "start with R,C:");
    expect_bad_kernel("3,3;1,1,1,1,1,1,1,1,1", "start with R,C:");
    expect_bad_kernel("1,3:1,x,3", "give 1 x 3 = 3 numbers");
    expect_bad_kernel("1,3:1,2,3x", "give 1 x 3 = 3 numbers");
    expect_bad_kernel("1,3:1 2 3", "give 1 x 3 = 3 numbers");
    /* a number that is no finite value is named, with its place */
    expect_bad_kernel("1,1:1e6", "value 1, '1e6', is not a finite number"); /* (-1e6, 1e6) */
    expect_bad_kernel("1,1:nan", "value 1, 'nan', is not a finite number");
    expect_bad_kernel("3,3:1,1,1,1,nan,1,1,1,1", "value 5, 'nan', is not a finite number");
    expect_bad_kernel("1,3:1,-inf,3", "value 2, '-inf', is not a finite number");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opt_value_both_forms),
        cmocka_unit_test(opt_value_missing),
        cmocka_unit_test(numbers_in_range),
        cmocka_unit_test(numbers_out_of_range_or_junk),
        cmocka_unit_test(backend_and_filter_names),
        cmocka_unit_test(device_accepted),
        cmocka_unit_test(device_refused),
        cmocka_unit_test(device_and_backend),
        cmocka_unit_test(kernel_good),
        cmocka_unit_test(kernel_wrong_count),
        cmocka_unit_test(kernel_even_or_bad_size),
        cmocka_unit_test(kernel_junk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
