/* fovea-regress, section "perf": each convolution of the device profile
 * (fovea-calibrate's output), created on a context that loads the profile
 * (so it runs the recorded engine), timed with CUDA events on the context's
 * stream as the calibrator timed it (warm-up, then the median of several
 * runs, each from a cold L2), and compared with the recorded median: FAIL
 * when measured > recorded * (1 + margin). A check over the limit is timed
 * once more and the faster median kept, so one noisy sample does not fail it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fv_cli.h"
#include "regress.h"
#include "regress_key.h"
#if FV_BUILT_WITH_CUDA
#include "fovea/fovea_cuda.h"
#endif

typedef struct prof_entry {
    char key[192];
    double ms;
    unsigned long long ws;
} prof_entry;

typedef struct prof {
    char device[128];
    int sm, cudnn, n;
    prof_entry *e;
} prof;

/* Reads the profile's header and conv lines (the SDK checks the rest when
 * the context loads it). 0, or -1 with why. */
static int prof_read(const char *path, prof *p, char *why, size_t why_n) {
    memset(p, 0, sizeof *p);
    char err[160];
    FILE *f = fv_cli_fopen_read(path, err, sizeof err);
    if (!f) {
        snprintf(why, why_n, "cannot open %s: %s", path, err);
        return -1;
    }
    char line[1100];
    int ln = 0, end = -1, cap = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        ln++;
        /* format 2's plan lines (a compiled cuDNN plan, base64, up to MBs):
         * the SDK checks them; skipped here to the end of the line */
        if (ln > 1 && strncmp(line, "plan ", 5) == 0) {
            int ch = 0;
            if (!strchr(line, '\n'))
                while ((ch = fgetc(f)) != EOF && ch != '\n') {
                }
            continue;
        }
        line[strcspn(line, "\r\n")] = '\0';
        int bad_byte = 0;
        for (const char *c = line; *c; c++)
            bad_byte |= (unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e;
        if (bad_byte) {
            snprintf(why, why_n, "line %d: not printable text", ln);
            rc = -1;
        } else if (end >= 0) {
            snprintf(why, why_n, "line %d: text after the end line", ln);
            rc = -1;
        } else if (ln == 1) {
            if (strcmp(line, "fovea-profile 1") != 0 && strcmp(line, "fovea-profile 2") != 0) {
                snprintf(why, why_n, "line 1: '%.40s' is not 'fovea-profile 1' or 2", line);
                rc = -1;
            }
        } else if (strncmp(line, "device ", 7) == 0) {
            snprintf(p->device, sizeof p->device, "%.127s", line + 7);
        } else if (sscanf(line, "sm %d", &p->sm) == 1 || sscanf(line, "cudnn %d", &p->cudnn) == 1) {
        } else if (sscanf(line, "end %d", &end) == 1) {
            if (end != p->n) {
                snprintf(why, why_n, "line %d: end %d, but %d conv lines", ln, end, p->n);
                rc = -1;
            }
        } else if (strncmp(line, "conv ", 5) == 0) {
            if (p->n == cap) {
                cap = cap ? 2 * cap : 16;
                prof_entry *e = realloc(p->e, (size_t)cap * sizeof *e);
                if (!e) {
                    snprintf(why, why_n, "out of host memory");
                    rc = -1;
                    break;
                }
                p->e = e;
            }
            prof_entry *e = &p->e[p->n];
            memset(e, 0, sizeof *e);
            char *ms = strstr(line, " ms="), *ws = strstr(line, " ws=");
            char *sp = strchr(line + 5, ' ');
            if (!sp || !ms || !ws || (size_t)(sp - (line + 5)) >= sizeof e->key ||
                sscanf(ms + 4, "%lf", &e->ms) != 1 || sscanf(ws + 4, "%llu", &e->ws) != 1 ||
                !(e->ms >= 0)) {
                snprintf(why, why_n, "line %d: malformed conv line", ln);
                rc = -1;
                break;
            }
            memcpy(e->key, line + 5, (size_t)(sp - (line + 5)));
            p->n++;
        } else {
            snprintf(why, why_n, "line %d: unknown line '%.40s'", ln, line);
            rc = -1;
        }
    }
    if (rc == 0 && ln == 0) snprintf(why, why_n, "empty file"), rc = -1;
    if (rc == 0 && end < 0) snprintf(why, why_n, "no end line (truncated?)"), rc = -1;
    fclose(f);
    return rc;
}

/* A net's convolution with its residual add (":z1") or writing a channel
 * slice of a concat (":y<stride>"): such an op runs only inside its net. */
static int net_only_key(const char *key) {
    const char *tail = strstr(key, ":f16:");
    return tail && (!strcmp(tail, ":f16:z1") || !strncmp(tail, ":f16:y", 6));
}

#if FV_BUILT_WITH_CUDA
static int cu_ok(cudaError_t e, char *why, size_t why_n, const char *what) {
    if (e == cudaSuccess) return 1;
    snprintf(why, why_n, "%s: %s", what, cudaGetErrorString(e));
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median ms of iters forwards, each from a cold L2 (scrub: a buffer of twice
 * the L2, rewritten between samples, outside them). 0, or -1 with why. */
static int time_op(fv_context *ctx, fv_conv2d *op, const fv_tensor *x, fv_tensor *y, void *scrub,
                   size_t scrub_bytes, int warmup, int iters, double *median, char *why,
                   size_t why_n) {
    cudaStream_t st;
    if (fv_context_cuda_stream(ctx, &st) != FV_OK) {
        snprintf(why, why_n, "no stream: %s", fv_last_error());
        return -1;
    }
    cudaEvent_t *ev = calloc((size_t)iters * 2, sizeof *ev);
    double *t = calloc((size_t)iters, sizeof *t);
    int rc = -1, made = 0;
    if (!ev || !t) goto done;
    for (; made < 2 * iters; made++)
        if (!cu_ok(cudaEventCreate(&ev[made]), why, why_n, "cudaEventCreate")) goto done;
    for (int i = 0; i < warmup; i++)
        if (fv_conv2d_forward(op, x, y) != FV_OK) goto fv_fail;
    for (int i = 0; i < iters; i++) {
        if (scrub && !cu_ok(cudaMemsetAsync(scrub, i & 0xff, scrub_bytes, st), why, why_n,
                            "cudaMemsetAsync"))
            goto done;
        cudaEventRecord(ev[2 * i], st);
        if (fv_conv2d_forward(op, x, y) != FV_OK) goto fv_fail;
        cudaEventRecord(ev[2 * i + 1], st);
    }
    if (!cu_ok(cudaEventSynchronize(ev[2 * iters - 1]), why, why_n, "cudaEventSynchronize"))
        goto done;
    for (int i = 0; i < iters; i++) {
        float ms = 0;
        if (!cu_ok(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]), why, why_n,
                   "cudaEventElapsedTime"))
            goto done;
        t[i] = ms;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    *median = iters % 2 ? t[iters / 2] : 0.5 * (t[iters / 2 - 1] + t[iters / 2]);
    rc = 0;
    goto done;
fv_fail:
    snprintf(why, why_n, "forward: %s", fv_last_error());
done:
    for (int i = 0; i < made; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    free(t);
    return rc;
}

/* One profile entry on ctx. */
static void perf_entry(rg_report *r, const rg_perf_opts *o, fv_context *ctx, const prof_entry *e,
                       void *scrub, size_t scrub_bytes) {
    fv_conv2d_desc d;
    int bias = 0;
    char err[256];
    if (net_only_key(e->key)) {
        rg_add(r, "perf", e->key, RG_SKIP, NAN, NAN, "ms",
               "a net's layer (fused residual or concat slice): timed by fovea-bench net");
        return;
    }
    if (regress_key_parse(e->key, &d, &bias, err, sizeof err) != 0) {
        rg_add(r, "perf", e->key, RG_FAIL, NAN, NAN, "", "bad key: %s", err);
        return;
    }
    if (e->ms <= 0) {
        rg_add(r, "perf", e->key, RG_SKIP, NAN, NAN, "ms", "no time recorded (ms=0)");
        return;
    }
    double limit = e->ms * (1.0 + o->margin);
    size_t nw = (size_t)d.k * (size_t)(d.c / d.groups) * d.r * d.s;
    size_t nx = (size_t)d.n * d.h * d.w * d.c;
    float *w = malloc(nw * sizeof *w), *b = malloc((size_t)d.k * sizeof *b);
    float *x = malloc(nx * sizeof *x);
    fv_half *hx = malloc(nx * sizeof *hx);
    fv_conv2d *op = NULL;
    fv_tensor *tx = NULL, *ty = NULL;
    fv_status s = w && b && x && hx ? FV_OK : FV_ERR_OUT_OF_MEMORY;
    if (s == FV_OK) {
        rg_fill_random(w, nw, -0.5f, 0.5f);
        rg_fill_random(b, (size_t)d.k, -0.25f, 0.25f);
        rg_fill_random(x, nx, -1.0f, 1.0f);
        fv_f32_to_f16_n(x, hx, nx);
        d.weights = w;
        d.bias = bias ? b : NULL;
        s = fv_conv2d_create(ctx, &d, &op);
    }
    int p = 0, q = 0;
    if (s == FV_OK) fv_conv2d_output_shape(op, NULL, &p, &q, NULL);
    fv_tensor_desc xd = {.dtype = d.dtype, .n = d.n, .h = d.h, .w = d.w, .c = d.c};
    fv_tensor_desc yd = {.dtype = d.dtype, .n = d.n, .h = p, .w = q, .c = d.k};
    if (s == FV_OK) s = fv_tensor_create(ctx, &xd, &tx);
    if (s == FV_OK) s = fv_tensor_create(ctx, &yd, &ty);
    if (s == FV_OK) s = fv_tensor_upload(ctx, tx, hx, nx * sizeof *hx);
    if (s == FV_OK) s = fv_conv2d_bind(op, tx, ty);
    fv_conv2d_info info;
    memset(&info, 0, sizeof info);
    if (s == FV_OK) s = fv_conv2d_info_get(op, &info);
    if (s != FV_OK) {
        rg_add(r, "perf", e->key, RG_FAIL, NAN, limit, "ms", "%s: %s", fv_status_name(s),
               fv_last_error());
    } else if (strncmp(info.choice, "profile", 7) != 0) {
        rg_add(r, "perf", e->key, RG_FAIL, NAN, limit, "ms",
               "the recorded engine was not used (%s %s, %s)", info.path, info.engine, info.choice);
    } else {
        double ms = 0, again = 0;
        int rc =
            time_op(ctx, op, tx, ty, scrub, scrub_bytes, o->warmup, o->iters, &ms, err, sizeof err);
        int retried = 0;
        if (rc == 0 && ms > limit &&
            time_op(ctx, op, tx, ty, scrub, scrub_bytes, o->warmup, o->iters, &again, err,
                    sizeof err) == 0) {
            retried = 1;
            if (again < ms) ms = again;
        }
        if (rc != 0)
            rg_add(r, "perf", e->key, RG_FAIL, NAN, limit, "ms", "timing failed: %s", err);
        else
            rg_add(r, "perf", e->key, ms <= limit ? RG_PASS : RG_FAIL, ms, limit, "ms",
                   "%.4f ms, recorded %.4f ms (%+.1f%%), limit %.4f ms; %s %s%s", ms, e->ms,
                   100.0 * (ms / e->ms - 1.0), limit, info.path, info.engine,
                   retried ? "; timed twice" : "");
    }
    fv_context_synchronize(ctx);
    fv_tensor_destroy(ty);
    fv_tensor_destroy(tx);
    fv_conv2d_destroy(op);
    free(w), free(b), free(x), free(hx);
}

/* Device pool for the largest entry: input, output, weights (channels
 * padded to 8), two workspaces and slack; at least 256 MiB. */
static size_t pool_for(const prof *p, size_t ws) {
    size_t most = 0;
    for (int i = 0; i < p->n; i++) {
        fv_conv2d_desc d;
        int bias;
        char err[8];
        if (regress_key_parse(p->e[i].key, &d, &bias, err, sizeof err) != 0) continue;
        size_t c8 = (size_t)(d.c + 7) / 8 * 8, k8 = (size_t)(d.k + 7) / 8 * 8;
        size_t pq = (size_t)fv_conv_output_dim(d.h, d.r, d.stride_h, d.pad_h, d.dilation_h) *
                    (size_t)fv_conv_output_dim(d.w, d.s, d.stride_w, d.pad_w, d.dilation_w);
        size_t b = 2 * ((size_t)d.n * d.h * d.w * c8 + (size_t)d.n * pq * k8 + k8 * c8 * d.r * d.s +
                        2 * k8);
        if (b > most) most = b;
    }
    size_t want = most + 2 * ws + ((size_t)64 << 20);
    want = (want + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
    return want < ((size_t)256 << 20) ? ((size_t)256 << 20) : want;
}
#endif

void rg_run_perf(rg_report *r, const rg_perf_opts *o, const fv_context_info *ci) {
    if (!o->profile) {
        rg_add(r, "perf", "profile", RG_SKIP, NAN, NAN, "",
               "no profile: performance not checked (pass --profile PATH, written by "
               "fovea-calibrate)");
        return;
    }
    prof p;
    char why[512];
    if (prof_read(o->profile, &p, why, sizeof why) != 0) {
        rg_add(r, "perf", "profile", RG_FAIL, NAN, NAN, "", "%s: %s", o->profile, why);
        free(p.e);
        return;
    }
    if (ci->backend != FV_BACKEND_CUDA) {
        for (int i = 0; i < p.n; i++) { /* the keys, at least */
            fv_conv2d_desc d;
            int bias;
            if (!net_only_key(p.e[i].key) &&
                regress_key_parse(p.e[i].key, &d, &bias, why, sizeof why) != 0)
                rg_add(r, "perf", p.e[i].key, RG_FAIL, NAN, NAN, "", "bad key: %s", why);
        }
        rg_add(r, "perf", "profile", RG_SKIP, NAN, NAN, "",
               "%s: %d entries for '%s'; GPU timings, not checked on the CPU backend", o->profile,
               p.n, p.device);
        free(p.e);
        return;
    }
#if FV_BUILT_WITH_CUDA
    unsigned long long max_ws = 0;
    for (int i = 0; i < p.n; i++)
        if (p.e[i].ws > max_ws) max_ws = p.e[i].ws;
    size_t ws = (size_t)64 << 20;
    if (max_ws > ws) ws = (size_t)((max_ws + (1u << 20) - 1) & ~((1ull << 20) - 1));
    fv_context_desc cd = {.backend = FV_BACKEND_CUDA,
                          .device = o->device,
                          .device_pool_bytes = pool_for(&p, ws),
                          .workspace_limit_bytes = ws,
                          .profile_path = o->profile};
    fv_context *ctx = NULL;
    fv_status s = fv_context_create(&cd, &ctx);
    if (s != FV_OK) {
        rg_add(r, "perf", "profile", RG_FAIL, NAN, NAN, "", "context: %s: %s", fv_status_name(s),
               fv_last_error());
        free(p.e);
        return;
    }
    const char *ignored = "";
    int entries = 0;
    fv_context_profile_status(ctx, &ignored, &entries);
    if (ignored[0]) {
        rg_add(r, "perf", "profile", RG_FAIL, NAN, NAN, "", "%s was not loaded by the SDK: %s",
               o->profile, ignored);
    } else {
        rg_add(r, "perf", "profile", RG_PASS, NAN, NAN, "",
               "%s: %d entries, made on '%s' sm %d cuDNN %d; margin %.0f%%", o->profile, entries,
               p.device, p.sm, p.cudnn, 100.0 * o->margin);
        int l2 = 0;
        void *scrub = NULL;
        size_t scrub_bytes = 0;
        if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ci->device_index) == cudaSuccess &&
            l2 > 0 && cudaMalloc(&scrub, 2 * (size_t)l2) == cudaSuccess)
            scrub_bytes = 2 * (size_t)l2;
        else
            scrub = NULL, cudaGetLastError();
        for (int i = 0; i < p.n; i++)
            perf_entry(r, o, ctx, &p.e[i], scrub, scrub_bytes);
        if (scrub) cudaFree(scrub);
    }
    fv_context_destroy(ctx);
#else
    rg_add(r, "perf", "profile", RG_SKIP, NAN, NAN, "", "this fovea was built without CUDA");
#endif
    free(p.e);
}
