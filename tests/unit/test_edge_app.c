/* Runs the fovea-edge program (CPU backend) end to end:
 *   run      test:// at 64x48, 4 frames, unpaced, to numbered PNGs, --json:
 *            exactly 4 files, each equal to fv_filter on the same test://
 *            frame computed here, and a JSON summary saying 4 frames;
 *   errors   a missing input (exit 1, message names it), bad options and
 *            a lone --input-width (exit 2), --help (exit 0, examples);
 *   default  no arguments and no display: the bundled test:// source to
 *            edges.mp4 (or edges_NNNN.png without an H.264 encoder) in the
 *            working directory, and it says where.
 * usage: test_edge_app run|errors|default APP WORKDIR */
#define _GNU_SOURCE 1 /* posix_spawn_file_actions_addchdir_np */
#include "fv_test.h"
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fovea/platform/image_io.h"
#include "fovea/platform/source.h"

extern char **environ;
static const char *app, *work_dir;

/* Runs argv in dir (NULL: here) with stdout and stderr into log, without
 * DISPLAY/WAYLAND_DISPLAY; returns the exit status. */
static int run_app(char *const argv[], const char *dir, const char *log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (dir) posix_spawn_file_actions_addchdir_np(&fa, dir);
    unsetenv("DISPLAY");
    unsetenv("WAYLAND_DISPLAY");
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
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

static void edge_run(void **state) {
    (void)state;
    char pattern[1024], log[1024], path[1100];
    snprintf(pattern, sizeof pattern, "file://%s/edge_%%04d.png", work_dir);
    snprintf(log, sizeof log, "%s/edge_run.log", work_dir);
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/edge_%04d.png", work_dir, i);
        unlink(path);
    }
    char *argv[] = {(char *)app, "--backend",
                    "cpu",       "--frames",
                    "4",         "--input-width",
                    "64",        "--input-height",
                    "48",        "--json",
                    "--slots=2", "test://?fps=0",
                    pattern,     NULL};
    int rc = run_app(argv, NULL, log);
    char *text = slurp(log);
    if (rc != 0) fail_msg("fovea-edge exited %d:\n%s", rc, text);
    if (!strstr(text, "\"type\":\"summary\"") || !strstr(text, "\"frames_out\":4,") ||
        !strstr(text, "\"ok\":true"))
        fail_msg("no JSON summary with frames_out 4 in:\n%s", text);
    free(text);

    /* the same frames through fv_filter here */
    fv_source *src = NULL;
    FV_ASSERT_OK(
        fv_source_open(&(fv_source_desc){.uri = "test://?fps=0", .width = 64, .height = 48}, &src));
    fv_context *ctx = fv_test_cpu_context(0);
    fv_filter *f = NULL;
    FV_ASSERT_OK(fv_filter_create(
        ctx, &(fv_filter_desc){.width = 64, .height = 48, .format = FV_PIXEL_RGB24}, &f));
    unsigned char want[64 * 48];
    for (int i = 0; i < 4; i++) {
        fv_source_frame fr;
        FV_ASSERT_OK(fv_source_capture(src, 0, &fr));
        fv_image out = {.format = FV_PIXEL_GRAY8, .width = 64, .height = 48, .data = want};
        FV_ASSERT_OK(fv_filter_apply(f, &fr.image, &out));
        snprintf(path, sizeof path, "%s/edge_%04d.png", work_dir, i);
        fv_host_image got;
        FV_ASSERT_OK(fv_image_file_load(path, FV_PIXEL_GRAY8, &got));
        assert_int_equal(got.width, 64);
        assert_int_equal(got.height, 48);
        assert_memory_equal(got.data, want, sizeof want);
        fv_host_image_free(&got);
    }
    snprintf(path, sizeof path, "%s/edge_%04d.png", work_dir, 4);
    assert_false(exists(path)); /* exactly --frames frames */
    fv_filter_destroy(f);
    fv_context_destroy(ctx);
    fv_source_close(src);
}

static void edge_errors(void **state) {
    (void)state;
    char log[1024];
    snprintf(log, sizeof log, "%s/edge_errors.log", work_dir);
    char *missing[] = {(char *)app, "--backend", "cpu", "file:///nonexistent/x.png",
                       "null://",   NULL};
    assert_int_equal(run_app(missing, NULL, log), 1);
    char *text = slurp(log);
    if (!strstr(text, "/nonexistent/x.png")) fail_msg("message does not name the input:\n%s", text);
    free(text);
    char *bad[] = {(char *)app, "--frobnicate", NULL};
    assert_int_equal(run_app(bad, NULL, log), 2);
    char *lone[] = {(char *)app, "--input-width", "640", NULL};
    assert_int_equal(run_app(lone, NULL, log), 2);
    char *filt[] = {(char *)app, "--filter", "blur", NULL};
    assert_int_equal(run_app(filt, NULL, log), 2);
    char *three[] = {(char *)app, "a", "b", "c", NULL};
    assert_int_equal(run_app(three, NULL, log), 2);
    char *help[] = {(char *)app, "--help", NULL};
    assert_int_equal(run_app(help, NULL, log), 0);
    text = slurp(log);
    if (!strstr(text, "Examples:") || !strstr(text, "v4l2:///dev/video0"))
        fail_msg("--help has no examples:\n%s", text);
    free(text);
}

static void edge_default(void **state) {
    (void)state;
    char dir[1024], log[1100], mp4[1100], png[1100];
    snprintf(dir, sizeof dir, "%s/edge_default", work_dir);
    mkdir(dir, 0755);
    snprintf(log, sizeof log, "%s/run.log", dir);
    snprintf(mp4, sizeof mp4, "%s/edges.mp4", dir);
    snprintf(png, sizeof png, "%s/edges_0000.png", dir);
    unlink(mp4), unlink(png);
    char *argv[] = {(char *)app, "--backend", "cpu", "--frames", "30", NULL};
    int rc = run_app(argv, dir, log);
    char *text = slurp(log);
    if (rc != 0) fail_msg("fovea-edge exited %d:\n%s", rc, text);
    if (!strstr(text, "no display")) fail_msg("it does not say why it chose a file:\n%s", text);
    if (!strstr(text, "wrote ")) fail_msg("it does not say where it wrote:\n%s", text);
    if (!exists(mp4) && !exists(png)) fail_msg("neither edges.mp4 nor edges_0000.png:\n%s", text);
    free(text);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_edge_app run|errors|default APP WORKDIR\n");
        return 2;
    }
    app = argv[2], work_dir = argv[3];
    mkdir(work_dir, 0755);
    const struct CMUnitTest run[] = {cmocka_unit_test(edge_run)};
    const struct CMUnitTest errors[] = {cmocka_unit_test(edge_errors)};
    const struct CMUnitTest def[] = {cmocka_unit_test(edge_default)};
    if (!strcmp(argv[1], "run")) return cmocka_run_group_tests(run, NULL, NULL);
    if (!strcmp(argv[1], "errors")) return cmocka_run_group_tests(errors, NULL, NULL);
    if (!strcmp(argv[1], "default")) return cmocka_run_group_tests(def, NULL, NULL);
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
