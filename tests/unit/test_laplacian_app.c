/* Runs the fovea-laplacian program (CPU backend) and checks what it writes
 * against a reference computed here: the input bytes / 255, the 3x3
 * Laplacian summed over the three channels in double precision, then
 * |y| * 255 * gain rounded and clamped. Bytes may differ by 1 where the CPU
 * backend's FP32 arithmetic moves a value across a rounding boundary.
 *
 * The filters mode runs --filter sobel --color and a --kernel the same way
 * (per-channel gradients, magnitude sqrt(gx^2 + gy^2)), and checks that a
 * malformed --kernel is a usage error (exit 2).
 *
 * usage: test_laplacian_app run|missing|filters APP INPUT WORKDIR */
#include "fv_test.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fovea/platform/image_io.h"

extern char **environ;

static const char *app, *input, *work_dir;

/* Runs argv with stdout and stderr into log; returns the exit status (or
 * 128 + signal). */
static int run_app(char *const argv[], const char *log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) fail_msg("cannot run %s: %s", argv[0], strerror(e));
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) fail_msg("waitpid: %s", strerror(errno));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static void app_output_matches_reference(void **state) {
    char out[1024], log[1024];
    snprintf(out, sizeof out, "%s/laplacian_test.png", work_dir);
    snprintf(log, sizeof log, "%s/laplacian_test.log", work_dir);
    unlink(out);
    const double gain = 2.0;
    char *argv[] = {(char *)app, "--backend", "cpu",        "--input", (char *)input,
                    "--output",  out,         "--gain=2.0", NULL};
    int rc = run_app(argv, log);
    char *text = slurp(log);
    if (rc != 0) fail_msg("fovea-laplacian exited %d:\n%s", rc, text);
    if (!strstr(text, "backend:      cpu")) fail_msg("no 'backend: cpu' line in:\n%s", text);
    free(text);

    fv_host_image in, got;
    FV_ASSERT_OK(fv_image_file_load(input, FV_PIXEL_RGB24, &in));
    FV_ASSERT_OK(fv_image_file_load(out, 0, &got));
    assert_int_equal(got.format, FV_PIXEL_RGB24);
    assert_int_equal(got.width, in.width);
    assert_int_equal(got.height, in.height);
    int w = in.width, h = in.height;
    const unsigned char *p = in.data, *q = got.data;

    double *x = malloc(sizeof *x * (size_t)w * h * 3);
    assert_non_null(x);
    for (size_t i = 0; i < (size_t)w * h * 3; i++)
        x[i] = p[i] / 255.0;
    static const double lap[3][3] = {{1, 1, 1}, {1, -8, 1}, {1, 1, 1}};
    size_t off_by_one = 0, nonzero = 0;
    for (int yy = 0; yy < h; yy++)
        for (int xx = 0; xx < w; xx++) {
            double acc = 0;
            for (int r = -1; r <= 1; r++)
                for (int s = -1; s <= 1; s++) {
                    int iy = yy + r, ix = xx + s;
                    if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                    const double *v = x + ((size_t)iy * w + ix) * 3;
                    acc += lap[r + 1][s + 1] * (v[0] + v[1] + v[2]);
                }
            double b = fabs(acc) * 255.0 * gain;
            int want = b > 255.0 ? 255 : (int)lround(b);
            for (int k = 0; k < 3; k++) { /* every output channel is the same sum */
                int o = q[((size_t)yy * w + xx) * 3 + k];
                if (abs(o - want) > 1)
                    fail_msg("pixel (%d,%d) channel %d: got %d, reference %d (%.4f)", xx, yy, k, o,
                             want, b);
                off_by_one += o != want;
                nonzero += o != 0;
            }
        }
    size_t total = (size_t)w * h * 3;
    printf("%zu of %zu bytes off by one, %zu nonzero\n", off_by_one, total, nonzero);
    assert_true(nonzero > total / 10); /* a real edge image, not all black */
    assert_true(off_by_one < total / 20);
    free(x);
    fv_host_image_free(&in);
    fv_host_image_free(&got);
}

static void app_missing_input_fails(void **state) {
    char missing[1024], out[1024], log[1024];
    snprintf(missing, sizeof missing, "%s/no-such-image-here.png", work_dir);
    snprintf(out, sizeof out, "%s/missing_out.png", work_dir);
    snprintf(log, sizeof log, "%s/missing.log", work_dir);
    unlink(out);
    char *argv[] = {(char *)app, "--backend", "cpu", "--input", missing, "--output", out, NULL};
    int rc = run_app(argv, log);
    char *text = slurp(log);
    if (rc == 0 || rc >= 128) fail_msg("expected a failing exit status, got %d:\n%s", rc, text);
    if (!strstr(text, missing)) fail_msg("the message does not name %s:\n%s", missing, text);
    if (!strstr(text, "FV_ERR_IO")) fail_msg("the message lacks FV_ERR_IO:\n%s", text);
    free(text);
    assert_int_equal(access(out, F_OK), -1);
    /* an output format it cannot write is a usage error, found before any
     * work: even with a missing input, the output is what is reported */
    snprintf(out, sizeof out, "%s/x.bmp", work_dir);
    char *bmp[] = {(char *)app, "--backend", "cpu", "--input", missing, "--output", out, NULL};
    rc = run_app(bmp, log);
    text = slurp(log);
    if (rc != 2 || !strstr(text, "x.bmp") || strstr(text, missing))
        fail_msg("--output x.bmp: expected a usage error (2) about the output first, got %d:\n%s",
                 rc, text);
    free(text);
    assert_int_equal(access(out, F_OK), -1);
}

/* Reference bytes of one channel-wise filter: k0 (and k1, for a gradient
 * magnitude) on each of R, G, B, zero padding, |x| or the magnitude * 255 *
 * gain; checks got within 1 and returns how many are off by one. */
static size_t check_channelwise(const fv_host_image *in, const unsigned char *q, int R, int S,
                                const double *k0, const double *k1, double gain) {
    int w = in->width, h = in->height;
    const unsigned char *p = in->data;
    size_t off = 0;
    for (int yy = 0; yy < h; yy++)
        for (int xx = 0; xx < w; xx++)
            for (int c = 0; c < 3; c++) {
                double g0 = 0, g1 = 0;
                for (int r = 0; r < R; r++)
                    for (int s = 0; s < S; s++) {
                        int iy = yy + r - R / 2, ix = xx + s - S / 2;
                        if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                        double v = p[((size_t)iy * w + ix) * 3 + c] / 255.0;
                        g0 += k0[r * S + s] * v;
                        if (k1) g1 += k1[r * S + s] * v;
                    }
                double b = (k1 ? sqrt(g0 * g0 + g1 * g1) : fabs(g0)) * 255.0 * gain;
                int want = b > 255.0 ? 255 : (int)floor(b + 0.5);
                int o = q[((size_t)yy * w + xx) * 3 + c];
                if (abs(o - want) > 1)
                    fail_msg("pixel (%d,%d) channel %d: got %d, reference %d (%.4f)", xx, yy, c, o,
                             want, b);
                off += o != want;
            }
    return off;
}

static void app_filters_match_reference(void **state) {
    static const double sx[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1},
                        sy[9] = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
    static const double custom[3] = {-1, 0, 1};
    fv_host_image in;
    FV_ASSERT_OK(fv_image_file_load(input, FV_PIXEL_RGB24, &in));
    size_t total = (size_t)in.width * in.height * 3;
    for (int t = 0; t < 2; t++) {
        char out[1024], log[1024];
        snprintf(out, sizeof out, "%s/filter_%d.png", work_dir, t);
        snprintf(log, sizeof log, "%s/filter_%d.log", work_dir, t);
        unlink(out);
        char *sobel[] = {(char *)app, "--backend", "cpu",      "--input", (char *)input,
                         "--output",  out,         "--filter", "sobel",   "--color",
                         "--gain",    "0.5",       NULL};
        char *kern[] = {(char *)app,   "--backend", "cpu", "--input",
                        (char *)input, "--output",  out,   "--kernel",
                        "1,3:-1,0,1",  "--color",   NULL};
        int rc = run_app(t == 0 ? sobel : kern, log);
        char *text = slurp(log);
        if (rc != 0) fail_msg("fovea-laplacian exited %d:\n%s", rc, text);
        free(text);
        fv_host_image got;
        FV_ASSERT_OK(fv_image_file_load(out, FV_PIXEL_RGB24, &got));
        assert_int_equal(got.width, in.width);
        assert_int_equal(got.height, in.height);
        size_t off = t == 0 ? check_channelwise(&in, got.data, 3, 3, sx, sy, 0.5)
                            : check_channelwise(&in, got.data, 1, 3, custom, NULL, 1.0);
        printf("%s: %zu of %zu bytes off by one\n", t == 0 ? "sobel" : "kernel", off, total);
        assert_true(off < total / 20);
        fv_host_image_free(&got);
    }
    fv_host_image_free(&in);
    char log[1024];
    snprintf(log, sizeof log, "%s/bad_kernel.log", work_dir);
    char *bad[] = {(char *)app, "--backend", "cpu", "--kernel", "3,3:1,2", NULL};
    int rc = run_app(bad, log);
    char *text = slurp(log);
    if (rc != 2 || !strstr(text, "--kernel")) fail_msg("bad --kernel: exit %d:\n%s", rc, text);
    free(text);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s run|missing|filters APP INPUT WORKDIR\n", argv[0]);
        return 2;
    }
    app = argv[2], input = argv[3], work_dir = argv[4];
    mkdir(work_dir, 0755);
    const struct CMUnitTest run[] = {cmocka_unit_test(app_output_matches_reference)};
    const struct CMUnitTest missing[] = {cmocka_unit_test(app_missing_input_fails)};
    const struct CMUnitTest filters[] = {cmocka_unit_test(app_filters_match_reference)};
    if (strcmp(argv[1], "run") == 0) return cmocka_run_group_tests(run, NULL, NULL);
    if (strcmp(argv[1], "filters") == 0) return cmocka_run_group_tests(filters, NULL, NULL);
    return cmocka_run_group_tests(missing, NULL, NULL);
}
