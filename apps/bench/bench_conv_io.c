/* Options, shape selection, pool sizing and JSON pieces of the GPU
 * convolution benchmarks. The shapes come from calibration/best_practices.h,
 * the one list the calibrator tunes and the benchmark times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_conv.h"
#include "best_practices.h"

static int parse_num(const char *opt, const char *v, double lo, double hi, double *out) {
    char *end = NULL;
    double x = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "fovea-bench: %s needs a number in [%g, %g]\n", opt, lo, hi);
        return 1;
    }
    *out = x;
    return 0;
}

int bc_parse_opts(int argc, char **argv, bc_opts *o, int tables) {
    *o = (bc_opts){.iters = tables ? 50 : 100,
                   .warmup = 10,
                   .shapes = tables ? "0,1,2,8,12,13" : "all",
                   .flush = 1,
                   .profile_repeats = 5,
                   .ws_limit = (size_t)1024 << 20,
                   .tol = 2e-3};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x = 0;
        int bad = 0;
        if (!strcmp(a, "--iters"))
            bad = parse_num(a, v, 1, 100000, &x), o->iters = (int)x, i++;
        else if (!strcmp(a, "--warmup"))
            bad = parse_num(a, v, 0, 100000, &x), o->warmup = (int)x, i++;
        else if (!strcmp(a, "--batch"))
            bad = parse_num(a, v, 1, 1024, &x), o->batch = (int)x, i++;
        else if (!strcmp(a, "--workspace-mb"))
            bad = parse_num(a, v, 1, 65536, &x), o->ws_limit = (size_t)x << 20, i++;
        else if (!strcmp(a, "--tol"))
            bad = parse_num(a, v, 1e-7, 1, &x), o->tol = x, i++;
        else if (!strcmp(a, "--shapes") && v)
            o->shapes = v, i++;
        else if (!strcmp(a, "--json") && v)
            o->json = v, i++;
        else if (!strcmp(a, "--cache") && v && (!strcmp(v, "flush") || !strcmp(v, "rotate")))
            o->flush = !strcmp(v, "flush"), i++;
        else if (!tables && !strcmp(a, "--profile") && v)
            o->profile = v, i++;
        else if (!tables && !strcmp(a, "--sms") && v)
            o->sms = v, i++;
        else if (!tables && !strcmp(a, "--sms-tune") && v &&
                 (!strcmp(v, "heuristic") || !strcmp(v, "autotune")))
            o->sms_heuristic = !strcmp(v, "heuristic"), i++;
        else if (!tables && !strcmp(a, "--candidates"))
            o->candidates = 1;
        else if (!tables && !strcmp(a, "--profile-only"))
            o->profile_only = 1;
        else if (!tables && !strcmp(a, "--profile-repeats"))
            bad = parse_num(a, v, 1, BC_MAX_REPEATS, &x), o->profile_repeats = (int)x, i++;
        else {
            fprintf(stderr, "fovea-bench: unknown or incomplete option '%s'\n", a);
            return 1;
        }
        if (bad) return 1;
    }
    if (o->sms_heuristic && !o->sms) {
        fprintf(stderr, "fovea-bench: --sms-tune needs --sms\n");
        return 1;
    }
    if (o->profile_only && !o->profile) {
        fprintf(stderr, "fovea-bench: --profile-only needs --profile PATH\n");
        return 1;
    }
    return 0;
}

static bc_shape from_table(int i, int batch) {
    const fv_bp_shape *b = &fv_best_practices[i];
    bc_shape s = {.n = batch > 0 ? batch : 1, /* the table's shapes are single images */
                  .h = b->h,
                  .w = b->w,
                  .c = b->c,
                  .k = b->k,
                  .r = b->r,
                  .s = b->s,
                  .stride = b->stride,
                  .pad = b->pad,
                  .index = i};
    snprintf(s.name, sizeof s.name, "%s", b->name);
    return s;
}

/* A shape from its spec (len bytes at p): HxWxC-K-RxS-sSTRIDE-pPAD, index
 * -1, named as the table names its shapes. 0 when malformed. */
static int shape_of_spec(const char *p, size_t len, int batch, bc_shape *s) {
    char buf[64], tail;
    if (len >= sizeof buf) return 0;
    memcpy(buf, p, len);
    buf[len] = 0;
    *s = (bc_shape){.n = batch > 0 ? batch : 1, .index = -1};
    if (sscanf(buf, "%dx%dx%d-%d-%dx%d-s%d-p%d%c", &s->h, &s->w, &s->c, &s->k, &s->r, &s->s,
               &s->stride, &s->pad, &tail) != 8)
        return 0;
    if (s->h < 1 || s->w < 1 || s->c < 1 || s->k < 1 || s->r < 1 || s->s < 1 || s->stride < 1 ||
        s->pad < 0 || s->pad >= s->r || s->pad >= s->s || s->stride > 64 || s->h > 16384 ||
        s->w > 16384 || s->c > 4096 || s->k > 4096 || s->r > 64 || s->s > 64 ||
        s->h + 2 * s->pad < s->r || s->w + 2 * s->pad < s->s)
        return 0;
    const int p_ = (s->h + 2 * s->pad - s->r) / s->stride + 1,
              q = (s->w + 2 * s->pad - s->s) / s->stride + 1;
    if (s->stride > 1)
        snprintf(s->name, sizeof s->name, "%dx%dx%d->%dx%dx%d %dx%d s%d", s->w, s->h, s->c, q, p_,
                 s->k, s->r, s->s, s->stride);
    else
        snprintf(s->name, sizeof s->name, "%dx%dx%d->%d %dx%d", s->w, s->h, s->c, s->k, s->r, s->s);
    return 1;
}

int bc_select_shapes(const char *spec, bc_shape *out, int max, int batch) {
    int n = 0;
    if (!strcmp(spec, "all")) {
        for (int i = 0; i < FV_BEST_PRACTICES_COUNT && n < max; i++)
            out[n++] = from_table(i, batch);
        return n;
    }
    const char *p = spec;
    while (*p) {
        char *end = NULL;
        long i = strtol(p, &end, 10);
        if (*end == 'x' && n < max) { /* a shape of the caller's */
            size_t len = strcspn(p, ",");
            end = (char *)p + len;
            if (!shape_of_spec(p, len, batch, &out[n])) {
                fprintf(stderr,
                        "fovea-bench: --shapes: '%.*s': want HxWxC-K-RxS-sSTRIDE-pPAD, e.g. "
                        "224x224x3-64-7x7-s2-p3 (positive sizes, pad < R and S)\n",
                        (int)len, p);
                return -1;
            }
            n++;
            p = *end ? end + 1 : end;
            continue;
        }
        if (end == p || i < 0 || i >= FV_BEST_PRACTICES_COUNT || (*end && *end != ',') ||
            n >= max) {
            fprintf(stderr,
                    "fovea-bench: --shapes: '%s': want 'all' or indices 0..%d or shapes "
                    "HxWxC-K-RxS-sSTRIDE-pPAD, comma separated\n",
                    spec, FV_BEST_PRACTICES_COUNT - 1);
            return -1;
        }
        out[n++] = from_table((int)i, batch);
        p = *end ? end + 1 : end;
    }
    if (n == 0) fprintf(stderr, "fovea-bench: --shapes: no shape selected\n");
    return n > 0 ? n : -1;
}

size_t bc_pool_bytes(const bc_shape *s, int n, size_t ws_limit) {
    size_t most = 0;
    for (int i = 0; i < n; i++) {
        int p = fv_conv_output_dim(s[i].h, s[i].r, s[i].stride, s[i].pad, 1);
        int q = fv_conv_output_dim(s[i].w, s[i].s, s[i].stride, s[i].pad, 1);
        size_t cp = (size_t)(s[i].c + 7) / 8 * 8, kp = (size_t)(s[i].k + 7) / 8 * 8;
        size_t in = (size_t)s[i].n * s[i].h * s[i].w * cp * 2;
        size_t out = (size_t)s[i].n * p * q * kp * 2;
        size_t wts = kp * cp * s[i].r * s[i].s * 2 + kp * 2;
        /* rotate mode keeps about 2 x L2 of sets (L2 <= 256 MiB assumed) plus
         * one pair; ops may exist side by side while a case runs */
        size_t need = 2 * (in + out) + 4 * wts;
        if (need > most) most = need;
    }
    return most + 2 * ws_limit + ((size_t)768 << 20);
}

#if FV_BUILT_WITH_CUDA
void bc_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

void bc_json_head(FILE *f, const char *bench, const bc_env *e, const bc_opts *o) {
    const fv_context_info *in = &e->info;
    fprintf(f, "  \"bench\": \"%s\",\n  \"fovea_version\": \"%s\",\n  \"device\": ", bench,
            fv_version());
    bc_json_str(f, in->device_name);
    fprintf(f, ",\n  \"sm\": %d,\n  \"multiprocessors\": %d,\n  \"l2_bytes\": %zu,\n",
            in->sm_major * 10 + in->sm_minor, in->multiprocessors, e->l2_bytes);
    fprintf(f,
            "  \"cuda_runtime_compiled\": %d,\n  \"cuda_runtime_loaded\": %d,\n"
            "  \"cuda_driver\": %d,\n",
            in->cuda_runtime_compiled, in->cuda_runtime_loaded, in->cuda_driver);
    fprintf(f,
            "  \"cudnn_compiled\": %d,\n  \"cudnn_loaded\": %d,\n  \"cudnn_legacy_peer\": %d,\n"
            "  \"cudnn_library\": ",
            in->cudnn_compiled, in->cudnn_loaded, e->cudnn_version);
    bc_json_str(f, e->cudnn_lib);
    char mapped[4096];
    lc_cudnn_mapped(mapped, sizeof mapped);
    fprintf(f, ",\n  \"cudnn_mapped\": ");
    bc_json_str(f, mapped);
    fprintf(f, ",\n  \"tensor_cores\": %d,\n  \"iters\": %d,\n  \"warmup\": %d,\n",
            in->tensor_cores, o->iters, o->warmup);
    fprintf(f,
            "  \"cache_mode\": \"%s\",\n  \"flush_bytes\": %zu,\n  \"workspace_limit\": %zu,\n"
            "  \"tolerance\": %g,\n  \"timing\": \"CUDA events around each call on the "
            "context's stream, median\",\n",
            o->flush ? "flush" : "rotate", e->flush_bytes, o->ws_limit, o->tol);
}

void bc_json_shape(FILE *f, const bc_shape *s) {
    fprintf(f, "\"name\": ");
    bc_json_str(f, s->name);
    fprintf(f,
            ", \"index\": %d, \"n\": %d, \"h\": %d, \"w\": %d, \"c\": %d, \"k\": %d, "
            "\"r\": %d, \"s\": %d, \"stride\": %d, \"pad\": %d, \"p\": %d, \"q\": %d, "
            "\"gflop\": %.6f",
            s->index, s->n, s->h, s->w, s->c, s->k, s->r, s->s, s->stride, s->pad,
            bc_out_dim(s->h, s->r, s->stride, s->pad), bc_out_dim(s->w, s->s, s->stride, s->pad),
            bc_gflop(s));
}

static void num_or_null(FILE *f, const char *key, double v, int valid) {
    if (valid)
        fprintf(f, "\"%s\": %.6g", key, v);
    else
        fprintf(f, "\"%s\": null", key);
}

void bc_json_result(FILE *f, const bc_result *r, int legacy) {
    fprintf(f, "{\"ran\": %s, \"ok\": %s, ", r->ran ? "true" : "false", r->ok ? "true" : "false");
    num_or_null(f, "median_ms", r->t.median_ms, r->ok);
    fprintf(f, ", ");
    num_or_null(f, "min_ms", r->t.min_ms, r->ok);
    fprintf(f, ", ");
    num_or_null(f, "mean_ms", r->t.mean_ms, r->ok);
    fprintf(f, ", ");
    if (r->pair.iters) { /* the op it was timed against, call for call */
        num_or_null(f, "pair_median_ms", r->pair.median_ms, r->ok);
        fprintf(f, ", ");
        /* the medians by position in a turn, and the ratio they give */
        num_or_null(f, "first_ms", r->t.first_ms, r->ok && r->t.first_ms > 0);
        fprintf(f, ", ");
        num_or_null(f, "second_ms", r->t.second_ms, r->ok && r->t.second_ms > 0);
        fprintf(f, ", ");
        num_or_null(f, "pair_first_ms", r->pair.first_ms, r->ok && r->pair.first_ms > 0);
        fprintf(f, ", ");
        num_or_null(f, "pair_second_ms", r->pair.second_ms, r->ok && r->pair.second_ms > 0);
        fprintf(f, ", ");
        num_or_null(f, "pair_ratio", bc_pair_ratio(&r->t, &r->pair), r->ok);
        fprintf(f, ", ");
    }
    num_or_null(f, "rel_err", r->err, r->ran && r->err >= 0 && r->err < 1e30);
    fprintf(f, ", \"create_ms\": %.3f, \"why\": ", r->create_ms);
    bc_json_str(f, r->why);
    if (legacy) {
        fprintf(f,
                ", \"algo\": %d, \"algo_name\": \"%s\", \"math\": \"%s\", \"find_ms\": %.6g, "
                "\"workspace\": %zu}",
                r->algo, lc_algo_name(r->algo), lc_math_name(r->math), r->find_ms, r->workspace);
        return;
    }
    const fv_conv2d_info *in = &r->info;
    fprintf(f, ", \"path\": ");
    bc_json_str(f, in->path);
    fprintf(f, ", \"engine\": ");
    bc_json_str(f, in->engine);
    fprintf(f, ", \"choice\": ");
    bc_json_str(f, in->choice);
    fprintf(f, ", \"layout\": ");
    bc_json_str(f, in->layout);
    fprintf(f,
            ", \"tensor_cores\": %d, \"fused\": %d, \"workspace\": %zu, "
            "\"measured_ms\": %.6g, \"candidates\": %d}",
            in->tensor_cores, in->fused, in->workspace_bytes, in->measured_ms, in->candidates);
}
#endif
