/* Runs the fovea-infer program (CPU backend) end to end:
 *   classify  the default model (Fashion-MNIST) on two unpaced test://
 *             inputs (YUYV, so the output frames go through pack/unpack),
 *             5 batches, --json: the summary says 5 batches, 5 frames per
 *             camera, labels, nothing carved from the pools while running;
 *             camera 0's output (over a solid grey photo) is 5 PNGs of the
 *             frame size, each with its labels drawn at the top left (a
 *             shaded box with white text, the rest of the frame grey) where
 *             fovea has Pango, and untouched frames where not;
 *   segment   a model made here (a 1x1 convolution passing R, G, B through:
 *             the class is the strongest colour; symbolic batch) on three
 *             test:// inputs over solid red, green and blue photos: each
 *             camera's output must be its own frame with its own class colour
 *             blended over it, to the byte (routing, pre-processing, the net,
 *             the argmax and the blend); status lines in JSON; run again
 *             with --memory zero-copy (frames in mapped host memory): the
 *             same bytes; then spread over two workers (--device 0,0: two
 *             contexts, threads, batches and summaries): the same bytes;
 *   ended     an input that ends after 3 frames beside an endless one: the
 *             run goes on, the ended one is reported "ended"; the same
 *             spread over two workers (--device 0,0): the first worker ends,
 *             the second runs its batches to the end; and
 *             --low-latency --keep-awake 1 on a camera paced at 100 fps: on
 *             CUDA the summary counts the keep-awake runs queued between
 *             frames (> 0) and names zero-copy memory (a classifier under
 *             --low-latency), on the CPU backend it says it is ignored (0)
 *             and names device memory;
 *   errors    --help (exit 0, examples), bad options (2, --keep-awake 200 and --memory
 *             pinned too), more outputs than
 *             inputs (2), a missing model or input (1, named); --device: a
 *             bad index or a device on the CPU backend (2), a missing CUDA
 *             device (1, named); lists: more devices than inputs, an empty
 *             entry, devices on the CPU backend (2); --device all: on the
 *             CPU backend (2), with no CUDA device (1, said so), else a
 *             worker a device up to the three inputs, each ok.
 * With a fourth argument "cuda" the runs use --backend cuda (exit 77 where no
 * GPU is usable): the segment run checks the GPU's overlays to the byte.
 * usage: test_infer_app classify|segment|ended|errors APP WORKDIR [cuda] */
#define _GNU_SOURCE 1
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
#include "onnx_build.h"

extern char **environ;
static const char *app, *work_dir;
static char *backend = "cpu"; /* "cuda" with a fourth argument "cuda" (GPU tests) */

/* The longest a run may take before it counts as hung (sanitizer builds
 * included; the runs here take a few seconds). */
enum { RUN_LIMIT_S = 150 };

/* Runs argv with stdout and stderr into log, without a display; the exit
 * status. A run past RUN_LIMIT_S is killed and fails the test. */
static int run_app(char *const argv[], const char *log) {
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
    int st;
    for (long ms = 0;; ms += 10) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) fail_msg("waitpid: %s", strerror(errno));
        if (ms >= RUN_LIMIT_S * 1000L) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fail_msg("%s did not finish in %d s (hung?); its output is in %s", argv[0], RUN_LIMIT_S,
                     log);
        }
        usleep(10000);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    static char buf[1 << 18];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

/* The line of text that starts with {"type":"summary" (or NULL). */
static const char *summary_of(const char *text) {
    return strstr(text, "{\"type\":\"summary\"");
}

/* The line that starts at `at`, alone, into buf. */
static void line_at(const char *at, char *buf, size_t n) {
    snprintf(buf, n, "%.*s", (int)strcspn(at, "\n"), at);
}

/* How often needle occurs in s. */
static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* A solid colour photo for test://?image=. */
static void write_solid(const char *path, unsigned char r, unsigned char g, unsigned char b) {
    unsigned char px[40 * 30 * 3];
    for (int i = 0; i < 40 * 30; i++)
        px[3 * i] = r, px[3 * i + 1] = g, px[3 * i + 2] = b;
    fv_image img = {.format = FV_PIXEL_RGB24, .width = 40, .height = 30, .data = px};
    FV_ASSERT_OK(fv_image_file_save(path, &img, NULL));
}

/* The RGB24 pixels of the image file at path, which must be w x h. */
static fv_host_image load_rgb(const char *path, int w, int h) {
    fv_host_image img;
    FV_ASSERT_OK(fv_image_file_load(path, FV_PIXEL_RGB24, &img));
    assert_int_equal(img.width, w);
    assert_int_equal(img.height, h);
    return img;
}

static void infer_classify(void **state) {
    (void)state;
    char log[1024], pattern[1024], path[1100];
    snprintf(log, sizeof log, "%s/infer_classify.log", work_dir);
    snprintf(pattern, sizeof pattern, "file://%s/cls_%%04d.png", work_dir);
    for (int i = 0; i < 7; i++) {
        snprintf(path, sizeof path, "%s/cls_%04d.png", work_dir, i);
        unlink(path);
    }
    char grey[1300];
    snprintf(path, sizeof path, "%s/grey.png", work_dir);
    write_solid(path, 120, 120, 120);
    snprintf(grey, sizeof grey, "test://?fps=0&image=%s", path);
    char *argv[] = {
        (char *)app, "--backend",      backend,         "--frames",      "5",     "--input",
        grey,        "--input",        "test://?fps=0", "--input-width", "64",    "--input-height",
        "48",        "--input-format", "yuyv",          "--json",        pattern, NULL};
    int rc = run_app(argv, log);
    char *text = slurp(log);
    const char *sum = summary_of(text);
    if (rc != 0 || !sum) fail_msg("fovea-infer exited %d without a summary:\n%s", rc, text);
    if (!strstr(sum, "\"task\":\"classify\"") || !strstr(sum, "\"batches\":5,") ||
        count(sum, "\"frames\":5,") != 2 || !strstr(sum, "\"ok\":true") ||
        !strstr(sum, "\"pool_carve_outs_while_running\":0,") || !strstr(sum, "\"batch\":2,") ||
        !strstr(sum, "\"format\":\"YUYV\""))
        fail_msg("summary lacks 5 batches of 2 YUYV cameras, ok, no carve-outs:\n%s", sum);
    /* three classes per camera, each a Fashion-MNIST label (which ones
     * depends on the frames an unpaced source delivers) */
    static const char *labels[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                   "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
    int n_labels = 0;
    for (const char *p = strstr(sum, "\"label\":\""); p; p = strstr(p + 1, "\"label\":\"")) {
        const char *v = p + 9, *e = strchr(v, '"');
        int known = 0;
        for (size_t k = 0; e && k < sizeof labels / sizeof labels[0]; k++)
            known |=
                strlen(labels[k]) == (size_t)(e - v) && !strncmp(v, labels[k], (size_t)(e - v));
        if (!known) fail_msg("summary has a label that is no Fashion-MNIST class:\n%s", sum);
        n_labels++;
    }
    if (n_labels != 6) fail_msg("summary lacks the top-3 labels of both cameras:\n%s", sum);
        /* camera 0 writes PNGs, camera 1 nothing */
#ifdef FV_TEST_PANGO
    const char *drawn = "\"labels_drawn\":true";
#else
    const char *drawn = "\"labels_drawn\":false";
#endif
    if (!strstr(sum, drawn) || !strstr(sum, "\"labels_drawn\":false"))
        fail_msg("summary lacks %s for the PNG output:\n%s", drawn, sum);
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/cls_%04d.png", work_dir, i);
        fv_host_image img = load_rgb(path, 64, 48);
        /* grey 120 through YUYV (within 2); the box from (3, 3), its corner
         * shaded to about half; white glyph pixels in it */
        const unsigned char *p = img.data;
        int grey_px = 0, shaded = 0, lit = 0;
        for (int k = 0; k < 64 * 48 * 3; k++) {
            grey_px += abs(p[k] - 120) <= 2;
            shaded += p[k] >= 56 && p[k] <= 64;
            lit += p[k] >= 200;
        }
#ifdef FV_TEST_PANGO
        const int corner = ((3 * 64) + 3) * 3;
        /* (the box, clipped, covers the frame less its 3-pixel margin at the
         * top and left, which stays grey: 3 x 64 + 3 x 45 pixels) */
        if (p[corner] < 56 || p[corner] > 64 || lit < 30 || grey_px < 3 * (3 * 64 + 3 * 45) ||
            shaded < 1000)
            fail_msg("frame %d: no label box at the top left (corner %d; %d grey, %d shaded, %d "
                     "white values)",
                     i, p[corner], grey_px, shaded, lit);
#else
        if (grey_px != 64 * 48 * 3)
            fail_msg("frame %d: %d values not grey", i, 64 * 48 * 3 - grey_px);
#endif
        fv_host_image_free(&img);
    }
    snprintf(path, sizeof path, "%s/cls_%04d.png", work_dir, 5);
    assert_int_equal(access(path, F_OK), -1); /* exactly 5 */
    free(text);
}

/* x (n, 3, 8, 8) -> Conv 1x1 with the identity as weights -> y (n, 3, 8, 8). */
static void write_model(const char *path) {
    ob_buf m = {0}, g = {0}, t = {0}, nd = {0}, vi = {0};
    float w[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    int64_t dw[4] = {3, 3, 1, 1}, dx[4] = {-1, 3, 8, 8};
    ob_tensor(&t, "W", 1, 4, dw, w, sizeof w);
    ob_msg(&g, OB_INIT, &t);
    ob_node(&nd, "Conv", "pass", (const char *[]){"x", "W"}, 2, (const char *[]){"y"}, 1);
    ob_msg(&g, OB_NODE, &nd);
    ob_value_info(&vi, "x", 4, dx);
    ob_msg(&g, OB_INPUT, &vi);
    ob_value_info(&vi, "y", 4, dx);
    ob_msg(&g, OB_OUTPUT, &vi);
    ob_model(&m, 13, &g);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(m.d, 1, m.n, f), m.n);
    fclose(f);
    ob_free(&m);
}

/* The segment runs' model and inputs: pass_rgb.onnx, three test:// inputs
 * over solid red, green and blue photos, and outputs PREFIX0..2.png (old
 * ones removed). */
static void segment_setup(char *model, size_t mn, char in[3][1300], char out[3][1300],
                          const char *prefix) {
    char path[1200];
    snprintf(model, mn, "%s/pass_rgb.onnx", work_dir);
    write_model(model);
    const unsigned char solid[3][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
    for (int c = 0; c < 3; c++) {
        snprintf(path, sizeof path, "%s/solid%d.png", work_dir, c);
        write_solid(path, solid[c][0], solid[c][1], solid[c][2]);
        snprintf(in[c], 1300, "test://?fps=0&image=%s", path);
        snprintf(out[c], 1300, "file://%s/%s%d.png", work_dir, prefix, c);
        snprintf(path, sizeof path, "%s/%s%d.png", work_dir, prefix, c);
        unlink(path);
    }
}

/* Camera c's output PREFIXc.png: its frame with its class colour blended
 * over it, to the byte. class k = the strongest of R, G, B; fovea's
 * palette: class 0 transparent, 1 (128, 0, 0), 2 (0, 128, 0); alpha 0.5:
 * out = frame / 2 + colour / 2, rounded half up. */
static void segment_check(const char *prefix, const char *what) {
    char path[1200];
    const unsigned char want[3][3] = {{255, 0, 0}, {64, 128, 0}, {0, 64, 128}};
    for (int c = 0; c < 3; c++) {
        snprintf(path, sizeof path, "%s/%s%d.png", work_dir, prefix, c);
        fv_host_image img = load_rgb(path, 48, 32);
        const unsigned char *p = img.data;
        for (int i = 0; i < 48 * 32; i++)
            if (memcmp(p + 3 * i, want[c], 3) != 0)
                fail_msg("%s, camera %d, pixel %d: (%d, %d, %d), want (%d, %d, %d)", what, c, i,
                         p[3 * i], p[3 * i + 1], p[3 * i + 2], want[c][0], want[c][1], want[c][2]);
        fv_host_image_free(&img);
    }
}

static void infer_segment(void **state) {
    (void)state;
    char model[1024], log[1024], in[3][1300], out[3][1300], path[1200];
    snprintf(log, sizeof log, "%s/infer_segment.log", work_dir);
    segment_setup(model, sizeof model, in, out, "seg");
    /* twice: frames where the context puts them (device memory and copies on
     * a discrete GPU), then --memory zero-copy (mapped host memory the GPU
     * reads and writes in place, as on a Jetson): the same bytes */
    for (int run = 0; run < 2; run++) {
        for (int c = 0; c < 3; c++) {
            snprintf(path, sizeof path, "%s/seg%d.png", work_dir, c);
            unlink(path);
        }
        char *argv[] = {(char *)app, "--backend",
                        backend,     "--model",
                        model,       "--frames",
                        "3",         "--sync",
                        "--json",    "--input-width",
                        "48",        "--input-height",
                        "32",        "--fit",
                        "letterbox", "--input",
                        in[0],       "--input",
                        in[1],       "--input",
                        in[2],       out[0],
                        out[1],      out[2],
                        "--memory",  run ? "zero-copy" : "auto",
                        NULL};
        int rc = run_app(argv, log);
        char *text = slurp(log);
        const char *sum = summary_of(text);
        if (rc != 0 || !sum) fail_msg("fovea-infer exited %d without a summary:\n%s", rc, text);
        if (!strstr(sum, "\"task\":\"segment\"") || !strstr(sum, "\"batches\":3,") ||
            count(sum, "\"frames\":3,") != 3 || !strstr(sum, "\"ok\":true"))
            fail_msg("summary lacks 3 batches of 3 segmented cameras:\n%s", sum);
        if (run && !strstr(sum, "\"memory\":\"zero-copy\""))
            fail_msg("--memory zero-copy: the summary says otherwise:\n%s", sum);
        segment_check("seg", run ? "zero-copy" : "default memory");
        free(text);
    }
}

/* --device 0,0: the three cameras spread over two workers (two contexts
 * of device 0, which every machine has; input i on worker i mod 2), each
 * with its own batch, thread, status lines and summary: every camera's
 * output to the byte as in the one-worker run, two summaries, ok. */
static void infer_spread(void **state) {
    (void)state;
    char model[1024], log[1024], in[3][1300], out[3][1300];
    snprintf(log, sizeof log, "%s/infer_spread.log", work_dir);
    segment_setup(model, sizeof model, in, out, "spread");
    char *argv[] = {(char *)app, "--backend", backend,     "--model",       model, "--frames",
                    "3",         "--sync",    "--json",    "--input-width", "48",  "--input-height",
                    "32",        "--fit",     "letterbox", "--device",      "0,0", "--input",
                    in[0],       "--input",   in[1],       "--input",       in[2], out[0],
                    out[1],      out[2],      NULL};
    int rc = run_app(argv, log);
    char *text = slurp(log);
    const char *s0 = summary_of(text), *s1 = s0 ? summary_of(s0 + 1) : NULL;
    if (rc != 0 || !s1) fail_msg("fovea-infer exited %d without two summaries:\n%s", rc, text);
    /* the two summary lines alone (status lines may come between them) */
    char sums[2][8192];
    line_at(s0, sums[0], sizeof sums[0]);
    line_at(s1, sums[1], sizeof sums[1]);
    if (summary_of(s1 + 1) || !strstr(sums[0], "\"ok\":true") || !strstr(sums[1], "\"ok\":true") ||
        !strstr(sums[0], "\"batches\":3,") || !strstr(sums[1], "\"batches\":3,") ||
        count(sums[0], "\"frames\":3,") + count(sums[1], "\"frames\":3,") != 3)
        fail_msg("want two summaries of 3 batches, 3 cameras with 3 frames in all:\n%s", text);
    /* worker 0 has inputs 0 and 2 (batch 2), worker 1 input 1 (batch 1) */
    if (!(strstr(sums[0], "\"batch\":2,") && strstr(sums[1], "\"batch\":1,")) &&
        !(strstr(sums[0], "\"batch\":1,") && strstr(sums[1], "\"batch\":2,")))
        fail_msg("want batches of 2 and 1 (inputs 0, 2 and 1):\n%s", text);
    segment_check("spread", "--device 0,0");
    free(text);
}

static void infer_ended(void **state) {
    (void)state;
    char log[1024];
    snprintf(log, sizeof log, "%s/infer_ended.log", work_dir);
    /* --stall-ms 20000: a loaded machine may hold a frame back past the 1 s
     * default, and this test is about "ended", not stalls
     * (app_infer_ended_gpu failed once beside 11 sanitizer runs) */
    char *argv[] = {(char *)app, "--backend",       backend, "--frames", "40",
                    "--sync",    "--stall-ms",      "20000", "--json",   "--input-width",
                    "32",        "--input-height",  "24",    "--input",  "test://?fps=200&frames=3",
                    "--input",   "test://?fps=200", NULL};
    int rc = run_app(argv, log);
    char *text = slurp(log);
    const char *sum = summary_of(text);
    if (rc != 0 || !sum) fail_msg("fovea-infer exited %d without a summary:\n%s", rc, text);
    const char *c1 = strstr(sum, "test://?fps=200\"");
    if (!strstr(sum, "\"batches\":40,") || !strstr(sum, "\"state\":\"ended\"") || !c1 ||
        !strstr(c1, "\"state\":\"live\",\"frames\":40,"))
        fail_msg("want 40 batches, camera 0 ended, camera 1 live with 40 frames:\n%s", sum);
    free(text);
}

/* --device 0,0 with one worker's input ending after 3 frames (0.15 s)
 * and the other's live: the first worker ends ("inputs ended") and the
 * second runs its 100 batches. (Its capture threads once shared the first
 * worker's stop flag: they stopped with it, and the second worker waited
 * for frames until killed.) */
static void infer_spread_one_ends(void **state) {
    (void)state;
    char log[1024];
    snprintf(log, sizeof log, "%s/infer_spread_one_ends.log", work_dir);
    char *argv[] = {(char *)app,
                    "--backend",
                    backend,
                    "--frames",
                    "100",
                    "--sync",
                    "--stall-ms",
                    "20000",
                    "--json",
                    "--input-width",
                    "32",
                    "--input-height",
                    "24",
                    "--device",
                    "0,0",
                    "--input",
                    "test://?fps=20&frames=3",
                    "--input",
                    "test://?fps=200",
                    NULL};
    int rc = run_app(argv, log);
    char *text = slurp(log);
    const char *s0 = summary_of(text), *s1 = s0 ? summary_of(s0 + 1) : NULL;
    if (rc != 0 || !s1) fail_msg("fovea-infer exited %d without two summaries:\n%s", rc, text);
    /* the two summary lines alone; a: the live input's worker's */
    char a[8192], b[8192];
    line_at(s0, a, sizeof a);
    line_at(s1, b, sizeof b);
    if (!strstr(a, "test://?fps=200\"")) {
        char t[8192];
        memcpy(t, a, sizeof t), memcpy(a, b, sizeof a), memcpy(b, t, sizeof b);
    }
    if (!strstr(a, "\"batches\":100,") || !strstr(a, "\"state\":\"live\",\"frames\":100,") ||
        !strstr(a, "\"ok\":true"))
        fail_msg("the live input's worker: want 100 batches, ok:\n%s", text);
    if (!strstr(b, "\"end\":\"inputs ended\"") || !strstr(b, "\"state\":\"ended\",\"frames\":3,") ||
        !strstr(b, "\"ok\":true"))
        fail_msg("the ended input's worker: want \"inputs ended\" after 3 frames, ok:\n%s", text);
    free(text);
}

static void infer_keep_awake(void **state) {
    (void)state;
    char log[1024];
    snprintf(log, sizeof log, "%s/infer_keep_awake.log", work_dir);
    char *argv[] = {(char *)app, "--backend",       backend,         "--frames", "10",
                    "--input",   "test://?fps=100", "--input-width", "64",       "--input-height",
                    "48",        "--low-latency",   "--keep-awake",  "1",        "--json",
                    NULL};
    int rc = run_app(argv, log);
    char *text = slurp(log);
    const char *sum = summary_of(text);
    if (rc != 0 || !sum || !strstr(sum, "\"ok\":true") || !strstr(sum, "\"batches\":10,"))
        fail_msg("fovea-infer --keep-awake exited %d:\n%s", rc, text);
    const char *k = strstr(sum, "\"keep_awake_runs\":");
    assert_non_null(k);
    long runs = strtol(k + 18, NULL, 10);
    if (!strcmp(backend, "cuda") ? runs < 1 : (runs != 0 || !strstr(text, "ignored")))
        fail_msg("%s: %ld keep-awake runs:\n%s", backend, runs, text);
    /* a classifier under --low-latency reads its frames in place on a GPU
     * (--memory auto); the CPU backend keeps the default */
    const char *mem =
        !strcmp(backend, "cuda") ? "\"memory\":\"zero-copy\"" : "\"memory\":\"device\"";
    if (!strstr(sum, mem)) fail_msg("%s: the summary lacks %s:\n%s", backend, mem, sum);
    free(text);
}

/* --backend auto under --low-latency: zero copy where it found a GPU; a
 * context it put on the CPU keeps the default (device) memory, as
 * --backend cpu does (the summary's backend and memory agree). */
static void infer_low_latency_auto(void **state) {
    (void)state;
    char log[1024];
    snprintf(log, sizeof log, "%s/infer_low_latency_auto.log", work_dir);
    char *argv[] = {(char *)app, "--backend",       "auto",          "--frames", "5",
                    "--input",   "test://?fps=100", "--input-width", "64",       "--input-height",
                    "48",        "--low-latency",   "--json",        NULL};
    int rc = run_app(argv, log);
    char *text = slurp(log);
    const char *sum = summary_of(text);
    if (rc != 0 || !sum || !strstr(sum, "\"ok\":true"))
        fail_msg("fovea-infer --backend auto --low-latency exited %d:\n%s", rc, text);
    const int cuda = strstr(sum, "\"backend\":\"cuda\"") != NULL;
    if (!cuda && !strstr(sum, "\"backend\":\"cpu\"")) fail_msg("no backend in:\n%s", sum);
    const char *mem = cuda ? "\"memory\":\"zero-copy\"" : "\"memory\":\"device\"";
    if (!strstr(sum, mem))
        fail_msg("backend %s: the summary lacks %s:\n%s", cuda ? "cuda" : "cpu", mem, sum);
    free(text);
}

static void infer_errors(void **state) {
    (void)state;
    char log[1024];
    snprintf(log, sizeof log, "%s/infer_errors.log", work_dir);
    char *help[] = {(char *)app, "--help", NULL};
    assert_int_equal(run_app(help, log), 0);
    char *text = slurp(log);
    if (!strstr(text, "Examples:") || !strstr(text, "--input v4l2:///dev/video0"))
        fail_msg("--help has no examples:\n%s", text);
    if (!strstr(text, "--device N")) fail_msg("--help does not document --device:\n%s", text);
    free(text);
    char *bad[] = {(char *)app, "--frobnicate", NULL};
    assert_int_equal(run_app(bad, log), 2);
    char *awake[] = {(char *)app, "--keep-awake", "200", NULL};
    assert_int_equal(run_app(awake, log), 2);
    char *task[] = {(char *)app, "--task", "detect", NULL};
    assert_int_equal(run_app(task, log), 2);
    char *memory[] = {(char *)app, "--memory", "pinned", NULL};
    assert_int_equal(run_app(memory, log), 2);
    text = slurp(log);
    if (!strstr(text, "--memory pinned: use auto, zero-copy or device"))
        fail_msg("--memory pinned: no reason given:\n%s", text);
    free(text);
    char *mean[] = {(char *)app, "--mean", "1,2", NULL};
    assert_int_equal(run_app(mean, log), 2);
    char *outs[] = {(char *)app, "a.mp4", "b.mp4", NULL};
    assert_int_equal(run_app(outs, log), 2);
    char *size[] = {(char *)app, "--input-size", "224", NULL};
    assert_int_equal(run_app(size, log), 2);
    char *missing[] = {(char *)app, "--backend", backend, "--model", "/nonexistent/m.onnx", NULL};
    assert_int_equal(run_app(missing, log), 1);
    text = slurp(log);
    if (!strstr(text, "/nonexistent/m.onnx")) fail_msg("the model is not named:\n%s", text);
    free(text);
    char *input[] = {(char *)app, "--backend", backend, "--input", "file:///nonexistent/x.png",
                     NULL};
    assert_int_equal(run_app(input, log), 1);
    text = slurp(log);
    if (!strstr(text, "/nonexistent/x.png")) fail_msg("the input is not named:\n%s", text);
    free(text);
    char *wrong[] = {(char *)app, "--backend", backend, "--input-size",
                     "32x32",     "--frames",  "1",     NULL};
    assert_int_equal(run_app(wrong, log), 1); /* the default model's input is 28x28 */
    text = slurp(log);
    if (!strstr(text, "--input-size")) fail_msg("no reason for --input-size:\n%s", text);
    free(text);
    char *dev[] = {(char *)app, "--device", "x", NULL};
    assert_int_equal(run_app(dev, log), 2);
    text = slurp(log);
    if (!strstr(text, "--device x: give a CUDA device index"))
        fail_msg("--device x: no reason given:\n%s", text);
    free(text);
    char *cpu1[] = {(char *)app, "--backend", "cpu", "--device", "2", NULL};
    assert_int_equal(run_app(cpu1, log), 2);
    text = slurp(log);
    if (!strstr(text, "CPU backend has no devices"))
        fail_msg("--backend cpu --device 2: no reason given:\n%s", text);
    free(text);
    char spread1[] = "--device";
    char *many[] = {(char *)app, spread1, "0,1,2", "--input", "test://", NULL};
    assert_int_equal(run_app(many, log), 2);
    text = slurp(log);
    if (!strstr(text, "3 devices for 1 input"))
        fail_msg("--device 0,1,2 with one input: no reason given:\n%s", text);
    free(text);
    char *holes[] = {(char *)app, spread1, "0,,1", NULL};
    assert_int_equal(run_app(holes, log), 2);
    text = slurp(log);
    if (!strstr(text, "--device 0,,1: give a CUDA device index or a list"))
        fail_msg("--device 0,,1: no reason given:\n%s", text);
    free(text);
    /* a worker that cannot start stops the other, which would run on
     * (a live camera, no --frames): exit 1 now, the input named */
    char *half[] = {(char *)app,
                    "--backend",
                    "cpu",
                    spread1,
                    "0,0",
                    "--input",
                    "test://?fps=30",
                    "--input",
                    "file:///nonexistent/y.png",
                    NULL};
    assert_int_equal(run_app(half, log), 1);
    text = slurp(log);
    if (!strstr(text, "/nonexistent/y.png")) fail_msg("--device 0,0, one bad input:\n%s", text);
    free(text);
    char *cpu01[] = {(char *)app, "--backend", "cpu",     spread1,   "0,1",
                     "--input",   "test://",   "--input", "test://", NULL};
    assert_int_equal(run_app(cpu01, log), 2);
    text = slurp(log);
    if (!strstr(text, "CPU backend has no devices"))
        fail_msg("--backend cpu --device 0,1: no reason given:\n%s", text);
    free(text);
    /* Device 7: missing here, the context fails naming it. A host with 8
     * GPUs or more runs on it, and the summary says which. */
    char *cuda7[] = {(char *)app, "--device", "7",      "--backend", "cuda",
                     "--frames",  "1",        "--json", NULL};
    int rc = run_app(cuda7, log);
    text = slurp(log);
    int ok = rc == 0 ? strstr(text, "\"device_index\":7,") != NULL
                     : rc == 1 && strstr(text, "CUDA device 7") != NULL;
    if (!ok) fail_msg("--device 7 --backend cuda: exit %d:\n%s", rc, text);
    free(text);
    /* --device all: every CUDA device, one worker each up to the inputs
     * (three here); none: exit 1, said so; the CPU backend: refused */
    char *allcpu[] = {(char *)app, "--backend", "cpu", "--device", "all", NULL};
    assert_int_equal(run_app(allcpu, log), 2);
    text = slurp(log);
    if (!strstr(text, "--device all: the CPU backend has no devices"))
        fail_msg("--backend cpu --device all: no reason given:\n%s", text);
    free(text);
    int devices = 0;
    FV_ASSERT_OK(fv_cuda_device_count(&devices));
    char *all[] = {(char *)app, "--device", "all",     "--frames", "2",       "--json", "--input",
                   "test://",   "--input",  "test://", "--input",  "test://", NULL};
    rc = run_app(all, log);
    text = slurp(log);
    const int want = devices < 3 ? devices : 3;
    int summaries = 0;
    for (const char *p = summary_of(text); p; p = summary_of(p + 1))
        summaries++;
    ok = devices == 0 ? rc == 1 && strstr(text, "--device all: no CUDA device found") != NULL
                      : rc == 0 && summaries == want && count(text, "\"ok\":true") == want;
    if (!ok)
        fail_msg("--device all (%d CUDA devices): exit %d, %d summaries:\n%s", devices, rc,
                 summaries, text);
    free(text);
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: test_infer_app classify|segment|ended|errors APP WORKDIR [cuda]\n");
        return 2;
    }
    app = argv[2], work_dir = argv[3];
    mkdir(work_dir, 0755);
    if (argc == 5 && !strcmp(argv[4], "cuda")) { /* the same runs on the GPU, or skip (77) */
        fv_context_destroy(fv_test_gpu_context_or_skip());
        backend = "cuda";
    }
    const struct CMUnitTest classify[] = {cmocka_unit_test(infer_classify)};
    const struct CMUnitTest segment[] = {cmocka_unit_test(infer_segment),
                                         cmocka_unit_test(infer_spread)};
    const struct CMUnitTest ended[] = {
        cmocka_unit_test(infer_ended), cmocka_unit_test(infer_spread_one_ends),
        cmocka_unit_test(infer_keep_awake), cmocka_unit_test(infer_low_latency_auto)};
    const struct CMUnitTest errors[] = {cmocka_unit_test(infer_errors)};
    if (!strcmp(argv[1], "classify")) return cmocka_run_group_tests(classify, NULL, NULL);
    if (!strcmp(argv[1], "segment")) return cmocka_run_group_tests(segment, NULL, NULL);
    if (!strcmp(argv[1], "ended")) return cmocka_run_group_tests(ended, NULL, NULL);
    if (!strcmp(argv[1], "errors")) return cmocka_run_group_tests(errors, NULL, NULL);
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
