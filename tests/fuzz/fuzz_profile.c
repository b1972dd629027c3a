/* libFuzzer entry point for the profile loader (not run in CI).
 *
 * Built only with clang and -DFV_BUILD_FUZZERS=ON (see CMakeLists.txt here):
 *   CC=clang cmake -S . -B build-fuzz -DFV_BUILD_FUZZERS=ON
 *   cmake --build build-fuzz --target fuzz_profile
 *   mkdir -p corpus && ./build-fuzz/tests/fuzz/fuzz_profile -max_total_time=300 corpus
 * The loader reads a file, so each input is written to a temporary file
 * first. A successful load must survive save and reload unchanged. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/profile.h"

static char in_path[64] = "/tmp/fv-fuzz-in-XXXXXX";
static char out_path[64] = "/tmp/fv-fuzz-out-XXXXXX";

static void cleanup(void) {
    unlink(in_path);
    unlink(out_path);
}

static void init_paths(void) {
    static int done;
    if (done) return;
    done = 1;
    int a = mkstemp(in_path), b = mkstemp(out_path);
    if (a < 0 || b < 0) abort();
    close(a);
    close(b);
    atexit(cleanup);
}

static int same(const fv__profile *a, const fv__profile *b) {
    if (strcmp(a->device, b->device) || a->sm != b->sm || a->cudnn != b->cudnn || a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++) {
        const fv__engine_choice *x = &a->e[i], *y = &b->e[i];
        if (strcmp(x->key, y->key) || x->path != y->path || x->cdecl_ != y->cdecl_ ||
            x->engine != y->engine || x->workspace != y->workspace || x->ms != y->ms ||
            strcmp(x->how, y->how) || x->nknobs != y->nknobs)
            return 0;
        for (int k = 0; k < x->nknobs; k++)
            if (x->knob_type[k] != y->knob_type[k] || x->knob_value[k] != y->knob_value[k])
                return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    init_paths();
    FILE *f = fopen(in_path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    fv__profile p, q;
    char why[512];
    fv_status s = fv__profile_load(in_path, NULL, &p, why, sizeof why);
    if (s == FV_OK) {
        if (fv__profile_save(out_path, &p) != FV_OK) abort();
        if (fv__profile_load(out_path, &p, &q, why, sizeof why) != FV_OK) abort();
        if (!same(&p, &q)) abort();
        fv__profile_free(&q);
    } else if (s != FV_ERR_FORMAT && s != FV_ERR_IO) {
        abort();
    } else if (p.n != 0 || p.e != NULL || !memchr(why, '\0', sizeof why)) {
        abort();
    }
    fv__profile_free(&p);
    return 0;
}
