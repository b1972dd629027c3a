/* Runs the fovea-edge program (CPU backend) end to end:
 *   run      test:// at 64x48, 4 frames, unpaced, to numbered PNGs, --json:
 *            exactly 4 files, each equal to fv_filter on the same test://
 *            frame computed here, and a JSON summary saying 4 frames and
 *            no pool carve-outs while running;
 *   errors   a missing input (exit 1, message names it), bad options and
 *            a lone --input-width (exit 2), --help (exit 0, examples);
 *            --device: a bad index and a device on the CPU backend refused
 *            (exit 2), device 0 on the CPU backend runs, a missing CUDA
 *            device fails (exit 1) naming it;
 *   default  no arguments and no display: the bundled test:// source to
 *            edges.mp4 (or edges_NNNN.png without an H.264 encoder) in the
 *            working directory, and it says where.
 *   options  --low-latency, --duration, --quiet, --cuda-graph on the CPU;
 *   interrupt SIGINT: the video (or images) written so far is complete; a
 *            FIFO as the input is refused at once (never waited on); a
 *            SIGKILLed MP4 recording leaves the earlier file alone and a
 *            partial file that decodes up to its last fragment.
 * usage: test_edge_app run|errors|default|options|interrupt APP WORKDIR */
#define _GNU_SOURCE 1 /* posix_spawn_file_actions_addchdir_np */
#include "fv_test.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fovea/platform/image_io.h"
#include "fovea/platform/sink.h"
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

/* Starts argv with stdout and stderr into log (no display); returns the pid. */
static pid_t start_app(char *const argv[], const char *log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    unsetenv("DISPLAY");
    unsetenv("WAYLAND_DISPLAY");
    pid_t pid;
    int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) fail_msg("cannot run %s: %s", argv[0], strerror(e));
    return pid;
}

static int wait_app(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) fail_msg("waitpid: %s", strerror(errno));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* wait_app, but at most ms milliseconds: -1 when the program still runs. */
static int wait_app_for(pid_t pid, int ms) {
    for (int waited = 0; waited < ms; waited += 20) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0 && errno != EINTR) fail_msg("waitpid: %s", strerror(errno));
        usleep(20 * 1000);
    }
    return -1;
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
        !strstr(text, "\"pool_carve_outs_while_running\":0,") || !strstr(text, "\"ok\":true"))
        fail_msg("no JSON summary with frames_out 4 and no carve-outs in:\n%s", text);
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
    char *mem[] = {(char *)app, "--memory", "bogus", NULL};
    assert_int_equal(run_app(mem, NULL, log), 2);
    char *slots[] = {(char *)app, "--slots", "17", NULL};
    assert_int_equal(run_app(slots, NULL, log), 2);
    char *eng[] = {(char *)app, "--backend", "cpu",           "--engine", "fused",
                   "--frames",  "1",         "test://?fps=0", "null://",  NULL};
    assert_int_equal(run_app(eng, NULL, log), 1); /* the fused engine is CUDA only */
    text = slurp(log);
    if (!strstr(text, "FUSED")) fail_msg("--engine fused on the CPU: no reason given:\n%s", text);
    free(text);
    char *three[] = {(char *)app, "a", "b", "c", NULL};
    assert_int_equal(run_app(three, NULL, log), 2);
    char *help[] = {(char *)app, "--help", NULL};
    assert_int_equal(run_app(help, NULL, log), 0);
    text = slurp(log);
    if (!strstr(text, "Examples:") || !strstr(text, "v4l2:///dev/video0"))
        fail_msg("--help has no examples:\n%s", text);
    if (!strstr(text, "--device N")) fail_msg("--help does not document --device:\n%s", text);
    free(text);
}

static void edge_device(void **state) {
    (void)state;
    char log[1024];
    snprintf(log, sizeof log, "%s/edge_device.log", work_dir);
    char *bad[] = {(char *)app, "--device", "x", NULL};
    assert_int_equal(run_app(bad, NULL, log), 2);
    char *text = slurp(log);
    if (!strstr(text, "--device x: give a CUDA device index"))
        fail_msg("--device x: no reason given:\n%s", text);
    free(text);
    char *neg[] = {(char *)app, "--device=-1", NULL};
    assert_int_equal(run_app(neg, NULL, log), 2);
    char *cpu1[] = {(char *)app, "--device", "1", "--backend", "cpu", NULL};
    assert_int_equal(run_app(cpu1, NULL, log), 2);
    text = slurp(log);
    if (!strstr(text, "CPU backend has no devices"))
        fail_msg("--backend cpu --device 1: no reason given:\n%s", text);
    free(text);
    char *cpu0[] = {(char *)app, "--backend", "cpu",           "--device", "0", "--frames",
                    "1",         "--json",    "test://?fps=0", "null://",  NULL};
    assert_int_equal(run_app(cpu0, NULL, log), 0); /* accepted, nothing to choose */
    /* Device 7: missing here, FV_ERR_NO_DEVICE and the device named. A host
     * with 8 GPUs or more runs on it, and the summary says which. */
    char *cuda7[] = {(char *)app, "--device",      "7",       "--backend", "cuda", "--frames", "1",
                     "--json",    "test://?fps=0", "null://", NULL};
    int rc = run_app(cuda7, NULL, log);
    text = slurp(log);
    int ok = rc == 0 ? strstr(text, "\"device_index\":7,") != NULL
                     : rc == 1 && strstr(text, "CUDA device 7") != NULL;
    if (!ok) fail_msg("--device 7 --backend cuda: exit %d:\n%s", rc, text);
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

/* The run options: --low-latency (one in flight, the newest frame: a fast
 * source's frames are dropped and counted), --duration, --cuda-graph on the
 * CPU backend (reported off, with the reason), --quiet. */
static void edge_options(void **state) {
    (void)state;
    char log[1024];
    snprintf(log, sizeof log, "%s/edge_options.log", work_dir);
    char *ll[] = {(char *)app,      "--backend", "cpu",           "--low-latency",
                  "--frames",       "6",         "--input-width", "64",
                  "--input-height", "48",        "--json",        "test://?fps=400",
                  "null://",        NULL};
    int rc = run_app(ll, NULL, log);
    char *text = slurp(log);
    if (rc != 0 || !strstr(text, "\"frames_out\":6,") || !strstr(text, "\"slots\":1,"))
        fail_msg("--low-latency: exit %d, want 6 frames through 1 slot:\n%s", rc, text);
    free(text);
    char *dur[] = {(char *)app, "--backend",      "cpu",     "--duration", "0.5",
                   "--quiet",   "test://?fps=20", "null://", NULL};
    rc = run_app(dur, NULL, log);
    text = slurp(log);
    if (rc != 0 || !strstr(text, "duration reached") || strstr(text, "fps  out"))
        fail_msg("--duration 0.5 --quiet: exit %d:\n%s", rc, text);
    free(text);
    char *graph[] = {
        (char *)app, "--backend",      "cpu", "--cuda-graph",  "--frames", "2", "--input-width",
        "32",        "--input-height", "16",  "test://?fps=0", "null://",  NULL};
    rc = run_app(graph, NULL, log);
    text = slurp(log);
    if (rc != 0 || !strstr(text, "no CUDA graphs") || !strstr(text, "cpu"))
        fail_msg("--cuda-graph on the CPU: exit %d, want the reason it is off:\n%s", rc, text);
    free(text);
}

/* Ctrl-C: the output written so far is finished (a video still decodes,
 * numbered images are all there) and the program exits 0 with its summary. */
static void edge_interrupt(void **state) {
    (void)state;
    char dir[1024], log[1100], out[1100], first[1100];
    snprintf(dir, sizeof dir, "%s/edge_interrupt", work_dir);
    mkdir(dir, 0755);
    snprintf(log, sizeof log, "%s/run.log", dir);
    fv_source_desc probe = {.uri = "gst://videotestsrc num-buffers=1"};
    fv_source *ps = NULL;
    int video = fv_source_open(&probe, &ps) == FV_OK; /* GStreamer in this build */
    fv_source_close(ps);
    snprintf(out, sizeof out, video ? "file://%s/cut.mkv" : "file://%s/cut_%%04d.png", dir);
    snprintf(first, sizeof first, video ? "%s/cut.mkv" : "%s/cut_0000.png", dir);
    unlink(first);
    char *argv[] = {
        (char *)app,      "--backend", "cpu", "--input-width", "160", "--input-height", "120",
        "test://?fps=30", out,         NULL};
    pid_t pid = start_app(argv, log);
    usleep(1500 * 1000);
    kill(pid, SIGINT);
    int rc = wait_app(pid);
    char *text = slurp(log);
    if (rc != 0 || !strstr(text, "interrupted")) fail_msg("after SIGINT: exit %d:\n%s", rc, text);
    free(text);
    assert_true(exists(first));
    if (video) { /* the file is complete: it decodes to the end */
        char uri[1200];
        snprintf(uri, sizeof uri, "file://%s", first);
        fv_source *src = NULL;
        FV_ASSERT_OK(fv_source_open(&(fv_source_desc){.uri = uri}, &src));
        int n = 0;
        fv_source_frame fr;
        fv_status st;
        while ((st = fv_source_capture(src, 0, &fr)) == FV_OK)
            n++;
        assert_int_equal(st, FV_ERR_END_OF_STREAM);
        assert_true(n >= 10); /* 1.5 s at 30 fps */
        fv_source_close(src);
    }
}

/* Frames of a video file through fovea's own file:// source, or -1 when it
 * does not open. */
static int count_frames(const char *path) {
    char uri[1300]; /* file:// and the longest path here (1200) */
    snprintf(uri, sizeof uri, "file://%s", path);
    fv_source *src = NULL;
    if (fv_source_open(&(fv_source_desc){.uri = uri}, &src) != FV_OK) return -1;
    int n = 0;
    fv_source_frame fr;
    while (fv_source_capture(src, 0, &fr) == FV_OK)
        n++;
    fv_source_close(src);
    return n;
}

/* SIGKILL in the middle of an MP4 recording: an earlier file at the path is
 * untouched, and the partial file left beside it decodes up to its last
 * fragment. */
static void edge_killed_recording(void **state) {
    (void)state;
    fv_sink *probe = NULL;
    char dir[1024], log[1100], out[1100], uri[1200], partial[1200];
    snprintf(dir, sizeof dir, "%s/edge_killed", work_dir);
    mkdir(dir, 0755);
    snprintf(out, sizeof out, "%s/rec.mp4", dir);
    snprintf(uri, sizeof uri, "file://%s", out);
    fv_sink_desc sd = {.uri = uri, .width = 64, .height = 48, .format = FV_PIXEL_RGB24};
    if (fv_sink_open(&sd, &probe) != FV_OK) {
        skip(); /* no GStreamer, mp4mux or H.264 encoder in this build */
        return;
    }
    unsigned char px[64 * 48 * 3];
    memset(px, 90, sizeof px);
    fv_image img = {.format = FV_PIXEL_RGB24, .width = 64, .height = 48, .data = px};
    for (int i = 0; i < 5; i++)
        FV_ASSERT_OK(fv_sink_write(probe, &img, 0));
    FV_ASSERT_OK(fv_sink_close(probe)); /* the earlier, good recording: 5 frames */
    assert_int_equal(count_frames(out), 5);

    snprintf(log, sizeof log, "%s/run.log", dir);
    char *argv[] = {
        (char *)app,      "--backend", "cpu", "--input-width", "160", "--input-height", "120",
        "test://?fps=30", uri,         NULL};
    pid_t pid = start_app(argv, log);
    usleep(3500 * 1000);
    kill(pid, SIGKILL);
    wait_app(pid);
    assert_int_equal(count_frames(out), 5); /* untouched */
    snprintf(partial, sizeof partial, "%s/rec.part-%ld.mp4", dir, (long)pid);
    int n = count_frames(partial);
    if (n < 15) fail_msg("the killed recording %s decodes to %d frames", partial, n);
    unlink(partial);
}

static void edge_fifo_input(void **state) {
    (void)state;
    char dir[1024], log[1100], fifo[1100], uri[1200];
    snprintf(dir, sizeof dir, "%s/edge_fifo", work_dir);
    mkdir(dir, 0755);
    snprintf(log, sizeof log, "%s/run.log", dir);
    snprintf(fifo, sizeof fifo, "%s/f.png", dir);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(uri, sizeof uri, "file://%s", fifo);
    char *argv[] = {(char *)app, "--backend", "cpu", uri, "null://", NULL};
    pid_t pid = start_app(argv, log);
    int rc = wait_app_for(pid, 10000);
    if (rc < 0) { /* hung on the FIFO: it must still honour SIGTERM */
        kill(pid, SIGTERM);
        rc = wait_app_for(pid, 5000);
        if (rc < 0) {
            kill(pid, SIGKILL);
            wait_app(pid);
            fail_msg("a FIFO as the input hung the program, and SIGTERM did not end it");
        }
        fail_msg("a FIFO as the input hung the program (SIGTERM ended it: exit %d)", rc);
    }
    char *text = slurp(log);
    if (rc != 1 || !strstr(text, "FIFO")) fail_msg("FIFO input: exit %d:\n%s", rc, text);
    free(text);
    unlink(fifo);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_edge_app run|errors|default|options|interrupt APP WORKDIR\n");
        return 2;
    }
    app = argv[2], work_dir = argv[3];
    mkdir(work_dir, 0755);
    const struct CMUnitTest run[] = {cmocka_unit_test(edge_run)};
    const struct CMUnitTest errors[] = {cmocka_unit_test(edge_errors),
                                        cmocka_unit_test(edge_device)};
    const struct CMUnitTest def[] = {cmocka_unit_test(edge_default)};
    const struct CMUnitTest opts[] = {cmocka_unit_test(edge_options)};
    const struct CMUnitTest intr[] = {cmocka_unit_test(edge_interrupt),
                                      cmocka_unit_test(edge_killed_recording),
                                      cmocka_unit_test(edge_fifo_input)};
    if (!strcmp(argv[1], "options")) return cmocka_run_group_tests(opts, NULL, NULL);
    if (!strcmp(argv[1], "interrupt")) return cmocka_run_group_tests(intr, NULL, NULL);
    if (!strcmp(argv[1], "run")) return cmocka_run_group_tests(run, NULL, NULL);
    if (!strcmp(argv[1], "errors")) return cmocka_run_group_tests(errors, NULL, NULL);
    if (!strcmp(argv[1], "default")) return cmocka_run_group_tests(def, NULL, NULL);
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
