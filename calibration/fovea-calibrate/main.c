/* fovea-calibrate: autotunes convolutions on this machine's GPU and writes
 * a device profile that fv_context_desc.profile_path loads, so programs
 * start with the fastest engines without tuning at run time.
 * Exit status: 0 all tuned and saved; 1 a convolution or the save failed;
 * 2 usage error, or no GPU. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fovea/fovea.h"
#include "../best_practices.h"
#include "fv_cli.h"

#define PROG "fovea-calibrate"

/* ---- what to tune ----------------------------------------------------------- */
typedef struct cal_job {
    char label[96];
    fv_conv2d_desc d; /* normalized; weights NULL */
    int bias;
} cal_job;

typedef struct cal_list {
    cal_job *e;
    int n, cap;
} cal_list;

typedef struct cal_result {
    int ok;
    fv_conv2d_info info;
    double seconds; /* creation, tuning included */
    char error[512];
} cal_result;

static void cal_free(cal_list *l) {
    free(l->e);
    memset(l, 0, sizeof *l);
}

static int same_job(const cal_job *a, const cal_job *b) {
    const fv_conv2d_desc *x = &a->d, *y = &b->d;
    return a->bias == b->bias && x->n == y->n && x->h == y->h && x->w == y->w && x->c == y->c &&
           x->k == y->k && x->r == y->r && x->s == y->s && x->stride_h == y->stride_h &&
           x->stride_w == y->stride_w && x->pad_h == y->pad_h && x->pad_w == y->pad_w &&
           x->dilation_h == y->dilation_h && x->dilation_w == y->dilation_w &&
           x->groups == y->groups && x->activation == y->activation &&
           x->activation_alpha == y->activation_alpha && x->dtype == y->dtype;
}

/* Appends a job (a duplicate is dropped). 0, or -1 when out of memory. */
static int cal_add(cal_list *l, const char *label, fv_conv2d_desc d, int bias) {
    /* zero means default, as in the SDK; filled in here for sizes and comparisons */
    d.n = d.n ? d.n : 1;
    d.stride_h = d.stride_h ? d.stride_h : 1;
    d.stride_w = d.stride_w ? d.stride_w : 1;
    d.dilation_h = d.dilation_h ? d.dilation_h : 1;
    d.dilation_w = d.dilation_w ? d.dilation_w : 1;
    d.groups = d.groups ? d.groups : 1;
    cal_job j = {.d = d, .bias = bias};
    snprintf(j.label, sizeof j.label, "%s", label);
    for (int i = 0; i < l->n; i++)
        if (same_job(&l->e[i], &j)) return 0;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        cal_job *e = realloc(l->e, (size_t)cap * sizeof *e);
        if (!e) {
            fprintf(stderr, "fovea-calibrate: out of host memory\n");
            return -1;
        }
        l->e = e;
        l->cap = cap;
    }
    l->e[l->n++] = j;
    return 0;
}

static int parse_int(const char *v, int lo, int hi, int *out) {
    long x;
    if (fv_cli_long(v, lo, hi, &x)) return -1;
    *out = (int)x;
    return 0;
}

static const char *act_names[] = {"identity", "relu", "clipped_relu",
                                  "sigmoid",  "tanh", "leaky_relu"};

/* "HxWxC->K RxS" (output size shown when it differs), stride and the rest. */
static void make_label(const cal_job *j, char *out, size_t n) {
    const fv_conv2d_desc *d = &j->d;
    int p = fv_conv_output_dim(d->h, d->r, d->stride_h, d->pad_h, d->dilation_h);
    int q = fv_conv_output_dim(d->w, d->s, d->stride_w, d->pad_w, d->dilation_w);
    char o[32] = "";
    if (p != d->h || q != d->w) snprintf(o, sizeof o, "%dx%dx", p, q);
    int len = snprintf(out, n, "%dx%dx%d->%s%d %dx%d", d->h, d->w, d->c, o, d->k, d->r, d->s);
    char extra[96] = "";
    size_t e = 0;
#define ADD(...)                                                                                   \
    if (e < sizeof extra) e += (size_t)snprintf(extra + e, sizeof extra - e, __VA_ARGS__)
    if (d->n > 1) ADD(" n%d", d->n);
    if (d->stride_h > 1) ADD(" s%d", d->stride_h);
    if (d->pad_h != d->dilation_h * (d->r - 1) / 2) ADD(" pad%d", d->pad_h);
    if (d->dilation_h > 1) ADD(" dil%d", d->dilation_h);
    if (d->groups > 1) ADD(" g%d", d->groups);
    if (d->activation != FV_ACT_IDENTITY) ADD(" %s", act_names[d->activation]);
    if (j->bias) ADD(" +bias");
    if (d->dtype == FV_DTYPE_F32) ADD(" f32");
#undef ADD
    if (len > 0 && (size_t)len < n) snprintf(out + len, n - (size_t)len, "%s", extra);
}

/* Parses one SPEC (see usage) into a job. 0, or -1 with err naming the token. */
static int parse_spec(const char *spec, cal_job *j, char *err, size_t errn) {
    static const char *keys[] = {"n",   "h",   "w",      "c",   "k",     "r",    "s",    "stride",
                                 "pad", "dil", "groups", "act", "alpha", "bias", "dtype"};
    enum { NK = sizeof keys / sizeof keys[0] };
    int val[NK] = {1, 0, 0, 0, 0, 0, 0, 1, -1, 1, 1, 0, 0, 0, 0};
    float alpha = 0;
    unsigned seen = 0;
    char buf[1024];
    if (strlen(spec) >= sizeof buf) {
        snprintf(err, errn, "longer than %zu bytes", sizeof buf - 1);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *t = strtok_r(buf, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        char *eq = strchr(t, '=');
        int k = 0;
        while (eq && k < NK &&
               (strlen(keys[k]) != (size_t)(eq - t) || strncmp(t, keys[k], (size_t)(eq - t)) != 0))
            k++;
        if (!eq || k == NK) {
            snprintf(err, errn,
                     "bad token '%s': expected name=value with name one of n h w c k r "
                     "s stride pad dil groups act alpha bias dtype",
                     t);
            return -1;
        }
        const char *v = eq + 1;
        if (seen & (1u << k)) {
            snprintf(err, errn, "bad token '%s': %s given twice", t, keys[k]);
            return -1;
        }
        seen |= 1u << k;
        int ok = 1;
        const char *want = "";
        switch (k) {
        case 0:
            ok = !parse_int(v, 1, 4096, &val[k]), want = "1..4096";
            break;
        case 1:
        case 2:
        case 3:
        case 4:
            ok = !parse_int(v, 1, 65536, &val[k]), want = "1..65536";
            break;
        case 5:
        case 6:
            ok = !parse_int(v, 1, 255, &val[k]), want = "1..255";
            break;
        case 7:
        case 9:
            ok = !parse_int(v, 1, 64, &val[k]), want = "1..64";
            break;
        case 8:
            ok = strcmp(v, "same") == 0 ? (val[k] = -1, 1) : !parse_int(v, 0, 1024, &val[k]);
            want = "0..1024 or same";
            break;
        case 10:
            ok = !parse_int(v, 1, 65536, &val[k]), want = "1..65536";
            break;
        case 11:
            ok = 0;
            for (int a = 0; a < 6 && !ok; a++)
                if (strcmp(v, act_names[a]) == 0) ok = 1, val[k] = a;
            want = "identity, relu, clipped_relu, sigmoid, tanh or leaky_relu";
            break;
        case 12: {
            char *end;
            errno = 0;
            double a = strtod(v, &end);
            ok = !errno && end != v && !*end && isfinite(a) && fabs(a) < 1e6;
            alpha = (float)a;
            want = "a number";
            break;
        }
        case 13:
            ok = !parse_int(v, 0, 1, &val[k]), want = "0 or 1";
            break;
        default:
            ok = strcmp(v, "f16") == 0 || strcmp(v, "f32") == 0;
            val[k] = strcmp(v, "f32") == 0;
            want = "f16 or f32";
        }
        if (!ok) {
            snprintf(err, errn, "bad token '%s': %s must be %s", t, keys[k], want);
            return -1;
        }
    }
    for (int k = 1; k <= 5; k++)
        if (!(seen & (1u << k))) {
            snprintf(err, errn, "%s= is missing (h w c k r are required)", keys[k]);
            return -1;
        }
    if (!(seen & (1u << 6))) val[6] = val[5];
    fv_conv2d_desc d = {.n = val[0],
                        .h = val[1],
                        .w = val[2],
                        .c = val[3],
                        .k = val[4],
                        .r = val[5],
                        .s = val[6],
                        .stride_h = val[7],
                        .stride_w = val[7],
                        .dilation_h = val[9],
                        .dilation_w = val[9],
                        .groups = val[10],
                        .activation = (fv_activation)val[11],
                        .activation_alpha = alpha,
                        .dtype = val[14] ? FV_DTYPE_F32 : FV_DTYPE_F16};
    d.pad_h = val[8] >= 0 ? val[8] : d.dilation_h * (d.r - 1) / 2;
    d.pad_w = val[8] >= 0 ? val[8] : d.dilation_w * (d.s - 1) / 2;
    if (d.c % d.groups || d.k % d.groups) {
        snprintf(err, errn, "groups=%d must divide c=%d and k=%d", d.groups, d.c, d.k);
        return -1;
    }
    if (fv_conv_output_dim(d.h, d.r, d.stride_h, d.pad_h, d.dilation_h) < 1 ||
        fv_conv_output_dim(d.w, d.s, d.stride_w, d.pad_w, d.dilation_w) < 1) {
        snprintf(err, errn, "a %dx%d filter (dilation %d) does not fit %dx%d padded by %d", d.r,
                 d.s, d.dilation_h, d.h, d.w, d.pad_h);
        return -1;
    }
    *j = (cal_job){.d = d, .bias = val[13]};
    make_label(j, j->label, sizeof j->label);
    return 0;
}

static int cal_add_spec(cal_list *l, const char *spec, char *err, size_t errn) {
    cal_job j;
    if (parse_spec(spec, &j, err, errn) != 0) return -1;
    if (cal_add(l, j.label, j.d, j.bias) != 0) {
        snprintf(err, errn, "out of host memory");
        return -1;
    }
    return 0;
}

/* One SPEC per line; '#' comments; errors name the file and line. */
static int cal_add_file(cal_list *l, const char *path, char *err, size_t errn) {
    char why[160];
    FILE *f = fv_cli_fopen_read(path, why, sizeof why);
    if (!f) {
        snprintf(err, errn, "%s: %s", path, why);
        return -1;
    }
    char line[1024], e[400];
    int no = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        no++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, errn, "%s:%d: line longer than %zu bytes", path, no, sizeof line - 2);
            rc = -1;
            break;
        }
        line[strcspn(line, "#")] = '\0';
        if (line[strspn(line, " \t\r\n")] == '\0') continue;
        if (cal_add_spec(l, line, e, sizeof e) != 0) {
            snprintf(err, errn, "%s:%d: %s", path, no, e);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errn, "%s: read error", path);
        rc = -1;
    }
    fclose(f);
    return rc;
}

/* The edge demo's filters on a W x H frame (see usage). */
static int cal_add_edge_demo(cal_list *l, const char *wxh, char *err, size_t errn) {
    char w[32], h[32];
    const char *x = strchr(wxh, 'x');
    int width, height;
    if (!x || (size_t)(x - wxh) >= sizeof w || strlen(x + 1) >= sizeof h) {
        snprintf(err, errn, "give the frame size as WxH, e.g. 1920x1080");
        return -1;
    }
    snprintf(w, sizeof w, "%.*s", (int)(x - wxh), wxh);
    snprintf(h, sizeof h, "%s", x + 1);
    if (parse_int(w, 3, 65536, &width) || parse_int(h, 3, 65536, &height)) {
        snprintf(err, errn, "give the frame size as WxH with each 3..65536, e.g. 1920x1080");
        return -1;
    }
    static const struct {
        const char *what;
        int c, k;
    } f[] = {{"laplacian", 3, 3}, {"sobel x/y", 3, 2}, {"sobel x/y", 1, 2}, {"edge", 3, 1}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        fv_conv2d_desc d = {.n = 1,
                            .h = height,
                            .w = width,
                            .c = f[i].c,
                            .k = f[i].k,
                            .r = 3,
                            .s = 3,
                            .stride_h = 1,
                            .stride_w = 1,
                            .pad_h = 1,
                            .pad_w = 1,
                            .dilation_h = 1,
                            .dilation_w = 1,
                            .groups = 1,
                            .activation = FV_ACT_IDENTITY,
                            .dtype = FV_DTYPE_F16};
        char label[96];
        snprintf(label, sizeof label, "edge %dx%d %s %d->%d 3x3", width, height, f[i].what, f[i].c,
                 f[i].k);
        if (cal_add(l, label, d, 0) != 0) return -1;
    }
    return 0;
}

/* ---- the report ------------------------------------------------------------- */
static void human_bytes(size_t b, char *out, size_t n) {
    if (b >= (1u << 20))
        snprintf(out, n, "%.1f MiB", b / 1048576.0);
    else if (b >= 1024)
        snprintf(out, n, "%.1f KiB", b / 1024.0);
    else
        snprintf(out, n, "%zu B", b);
}

enum { NCOL = 9 };
static void cal_print_table(FILE *f, const cal_list *l, const cal_result *r) {
    static const char *head[NCOL] = {"#",         "shape", "path",   "engine",      "TC",
                                     "workspace", "ms",    "layout", "choice (why)"};
    char(*cell)[NCOL][96] = calloc((size_t)l->n, sizeof *cell);
    if (!cell) return;
    int width[NCOL];
    for (int c = 0; c < NCOL; c++)
        width[c] = (int)strlen(head[c]);
    for (int i = 0; i < l->n; i++) {
        const fv_conv2d_info *in = &r[i].info;
        snprintf(cell[i][0], 96, "%d", i + 1);
        snprintf(cell[i][1], 96, "%s", l->e[i].label);
        if (r[i].ok) {
            snprintf(cell[i][2], 96, "%s", in->path);
            snprintf(cell[i][3], 96, "%s", in->engine);
            snprintf(cell[i][4], 96, "%s", in->tensor_cores ? "yes" : "no");
            human_bytes(in->workspace_bytes, cell[i][5], 96);
            snprintf(cell[i][6], 96, "%.4f", (double)in->measured_ms);
            snprintf(cell[i][7], 96, "%s", in->layout);
            snprintf(cell[i][8], 96, "%s", in->choice);
        } else {
            snprintf(cell[i][2], 96, "FAILED");
            snprintf(cell[i][8], 96, "%.95s", r[i].error);
        }
        for (int c = 0; c < NCOL; c++)
            if ((int)strlen(cell[i][c]) > width[c]) width[c] = (int)strlen(cell[i][c]);
    }
    fputc('\n', f);
    for (int c = 0; c < NCOL; c++)
        fprintf(f, "%-*s%s", c == NCOL - 1 ? 0 : width[c], head[c], c == NCOL - 1 ? "\n" : "  ");
    for (int c = 0; c < NCOL; c++)
        for (int k = 0; k < width[c] + (c == NCOL - 1 ? 0 : 2); k++)
            fputc(k < width[c] ? '-' : ' ', f);
    fputc('\n', f);
    for (int i = 0; i < l->n; i++)
        for (int c = 0; c < NCOL; c++)
            fprintf(f, "%-*s%s", c == NCOL - 1 ? 0 : width[c], cell[i][c],
                    c == NCOL - 1 ? "\n" : "  ");
    free(cell);
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
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

/* The table as JSON. 0, or -1 with errno set. */
static int cal_write_json(const char *path, const fv_context_info *info, const char *profile,
                          const cal_list *l, const cal_result *r) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "{\n  \"tool\": \"fovea-calibrate\",\n  \"fovea\": ");
    json_str(f, fv_version());
    fprintf(f, ",\n  \"device\": ");
    json_str(f, info->device_name);
    fprintf(f, ",\n  \"sm\": %d,\n  \"cudnn\": %d,\n  \"profile\": ",
            info->sm_major * 10 + info->sm_minor, info->cudnn_loaded);
    json_str(f, profile);
    fprintf(f, ",\n  \"convolutions\": [");
    for (int i = 0; i < l->n; i++) {
        const fv_conv2d_desc *d = &l->e[i].d;
        const fv_conv2d_info *in = &r[i].info;
        fprintf(f, "%s\n    {\"shape\": ", i ? "," : "");
        json_str(f, l->e[i].label);
        fprintf(f,
                ", \"n\": %d, \"h\": %d, \"w\": %d, \"c\": %d, \"k\": %d, \"r\": %d, \"s\": %d, "
                "\"stride\": %d, \"pad\": %d, \"dilation\": %d, \"groups\": %d, \"activation\": "
                "\"%s\", \"bias\": %d, \"dtype\": \"%s\",\n     \"ok\": %s",
                d->n, d->h, d->w, d->c, d->k, d->r, d->s, d->stride_h, d->pad_h, d->dilation_h,
                d->groups, act_names[d->activation], l->e[i].bias,
                d->dtype == FV_DTYPE_F32 ? "f32" : "f16", r[i].ok ? "true" : "false");
        if (r[i].ok) {
            fprintf(f, ", \"path\": ");
            json_str(f, in->path);
            fprintf(f, ", \"engine\": ");
            json_str(f, in->engine);
            fprintf(f,
                    ", \"tensor_cores\": %s, \"fused\": %s, \"workspace_bytes\": %zu, "
                    "\"measured_ms\": %.6g, \"candidates\": %d, \"tune_seconds\": %.3f,\n     "
                    "\"layout\": ",
                    in->tensor_cores ? "true" : "false", in->fused ? "true" : "false",
                    in->workspace_bytes, (double)in->measured_ms, in->candidates, r[i].seconds);
            json_str(f, in->layout);
            fprintf(f, ", \"choice\": ");
            json_str(f, in->choice);
        } else {
            fprintf(f, ", \"error\": ");
            json_str(f, r[i].error);
        }
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    return bad ? -1 : 0;
}

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: fovea-calibrate [options] -o PROFILE\n"
        "Times every engine cuDNN offers for each convolution on this GPU, and fovea's own\n"
        "kernels where they apply (direct: C <= 32, K <= 64; gemm: small outputs), keeps the\n"
        "fastest and writes them\n"
        "to PROFILE, keyed by device, SM, cuDNN version and each op's full signature.\n"
        "Programs load it through fv_context_desc.profile_path.\n"
        "\n"
        "What to tune (any mix, repeatable; duplicates are tuned once):\n"
        "  --conv SPEC         one convolution, e.g. \"h=1080 w=1920 c=3 k=32 r=5\"\n"
        "  --file LIST         one SPEC per line; '#' starts a comment\n"
        "  --edge-demo WxH     the edge demo's filters on a W x H image: 3x3 Laplacian RGB->RGB\n"
        "                      (c=3 k=3), Sobel x/y pair from RGB (c=3 k=2) and from grey\n"
        "                      (c=1 k=2), and a single-output 3x3 filter (c=3 k=1); all pad 1,\n"
        "                      stride 1, no bias, identity activation\n"
        "  --best-practices    the 15 reference shapes of calibration/best_practices.h\n"
        "SPEC: space-separated name=value; h w c k r are required:\n"
        "  h= w= c=            input height, width, channels      n=  batch (default 1)\n"
        "  k=                  output channels                    r= s= filter (s default r)\n"
        "  stride=             both axes (default 1)              pad= N or same (default same)\n"
        "  dil=                dilation (default 1)               groups= (default 1)\n"
        "  act=                identity (default), relu, clipped_relu, sigmoid, tanh, leaky_relu\n"
        "  alpha=              the activation's alpha (default: its own)\n"
        "  bias=0|1            with a bias (default 0)            dtype=f16|f32 (default f16)\n"
        "Options:\n"
        "  -o, --output PROFILE  where to write the profile (required; replaced atomically)\n"
        "  --profile-in PATH     start from this profile: its entries are kept unless retuned\n"
        "  --backend auto|cuda   (default auto; calibrating needs a GPU either way)\n"
        "  --device N            CUDA device index (default 0)\n"
        "  --workspace-limit MiB most workspace an engine may use (default 64, as the SDK)\n"
        "  --pool MiB            device pool size (default: enough for the largest conv)\n"
        "  --json FILE           also write the table as JSON\n"
        "  --quiet               no progress and no table\n"
        "  --help                this text\n"
        "Examples:\n"
        "  fovea-calibrate --best-practices -o h100.profile\n"
        "  fovea-calibrate --edge-demo 1920x1080 -o edge.profile --json edge.json\n"
        "  fovea-calibrate --conv \"h=1080 w=1920 c=3 k=32 r=5 s=5 stride=1 pad=2 act=relu "
        "bias=1\" \\\n"
        "                  --conv \"h=540 w=960 c=32 k=64 r=3 stride=2\" -o my.profile\n"
        "  fovea-calibrate --file convs.txt --profile-in old.profile -o new.profile\n"
        "Exit status: 0 every convolution tuned and the profile written; 1 some failed (the\n"
        "rest is still written); 2 bad arguments, or no usable GPU.\n");
}

typedef struct options {
    cal_list list;
    const char *out, *json, *profile_in;
    fv_backend backend;
    int device, quiet;
    long ws_mib, pool_mib; /* 0: default */
} options;

static int parse_long(const char *opt, const char *v, long lo, long hi, long *out) {
    if (fv_cli_long(v, lo, hi, out)) {
        fprintf(stderr, "fovea-calibrate: %s '%s': give a whole number %ld..%ld\n", opt, v, lo, hi);
        return -1;
    }
    return 0;
}

/* 0: run, 1: done (help), 2: usage error. */
static int parse_args(int argc, char **argv, options *o) {
    char err[512];
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        long x;
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            o->quiet = 1;
        } else if (strcmp(argv[i], "--best-practices") == 0) {
            for (int b = 0; b < FV_BEST_PRACTICES_COUNT; b++)
                if (cal_add(&o->list, fv_best_practices[b].name, fv_bp_desc(&fv_best_practices[b]),
                            0) != 0)
                    return 2;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "-o", &bad)) ||
                   (v = fv_cli_opt_value(PROG, argc, argv, &i, "--output", &bad))) {
            o->out = v;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--conv", &bad))) {
            if (cal_add_spec(&o->list, v, err, sizeof err) != 0) {
                fprintf(stderr, "fovea-calibrate: --conv \"%s\": %s\n", v, err);
                return 2;
            }
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--file", &bad))) {
            if (cal_add_file(&o->list, v, err, sizeof err) != 0) {
                fprintf(stderr, "fovea-calibrate: --file %s\n", err);
                return 2;
            }
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--edge-demo", &bad))) {
            if (cal_add_edge_demo(&o->list, v, err, sizeof err) != 0) {
                fprintf(stderr, "fovea-calibrate: --edge-demo '%s': %s\n", v, err);
                return 2;
            }
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--backend", &bad))) {
            /* no cpu: the CPU backend has no engines to choose */
            if (fv_cli_backend(v, &o->backend) || o->backend == FV_BACKEND_CPU) {
                fprintf(stderr,
                        "fovea-calibrate: --backend '%s': use auto or cuda (calibrating needs a "
                        "GPU; the CPU backend has no engines to choose)\n",
                        v);
                return 2;
            }
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--device", &bad))) {
            if (parse_long("--device", v, 0, 1024, &x)) return 2;
            o->device = (int)x;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--workspace-limit", &bad))) {
            if (parse_long("--workspace-limit", v, 1, 1L << 20, &o->ws_mib)) return 2;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--pool", &bad))) {
            if (parse_long("--pool", v, 16, 1L << 22, &o->pool_mib)) return 2;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--profile-in", &bad))) {
            o->profile_in = v;
        } else if ((v = fv_cli_opt_value(PROG, argc, argv, &i, "--json", &bad))) {
            o->json = v;
        } else if (!bad) {
            fprintf(stderr, "fovea-calibrate: unknown argument '%s' (try --help)\n", argv[i]);
            return 2;
        }
        if (bad) return 2;
    }
    if (!o->out) {
        fprintf(stderr,
                "fovea-calibrate: give the profile to write with -o PROFILE (try --help)\n");
        return 2;
    }
    if (o->list.n == 0) {
        fprintf(stderr, "fovea-calibrate: nothing to calibrate: give --conv, --file, --edge-demo "
                        "or --best-practices (try --help)\n");
        return 2;
    }
    return 0;
}

static void log_cb(fv_log_level level, const char *msg, void *user) {
    const options *o = user;
    if (level <= FV_LOG_WARN || !o->quiet)
        fprintf(stderr, "fovea %s: %s\n", level == FV_LOG_ERROR ? "error" : "warning", msg);
}

/* Enough device memory to tune the largest conv: input, output, weights
 * (FP16/FP32, channels padded to 8), the tuning workspace and the shared one. */
static size_t pool_bytes(const options *o, size_t ws) {
    if (o->pool_mib) return (size_t)o->pool_mib << 20;
    size_t most = 0;
    for (int i = 0; i < o->list.n; i++) {
        const fv_conv2d_desc *d = &o->list.e[i].d;
        size_t el = d->dtype == FV_DTYPE_F32 ? 4 : 2;
        size_t c8 = (size_t)(d->c + 7) / 8 * 8, k8 = (size_t)(d->k + 7) / 8 * 8;
        int p = fv_conv_output_dim(d->h, d->r, d->stride_h, d->pad_h, d->dilation_h);
        int q = fv_conv_output_dim(d->w, d->s, d->stride_w, d->pad_w, d->dilation_w);
        size_t b = el * ((size_t)d->n * d->h * d->w * c8 + (size_t)d->n * p * q * k8 +
                         k8 * c8 * d->r * d->s);
        if (b > most) most = b;
    }
    size_t want = most + 2 * ws + (64u << 20);
    want = (want + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);
    return want < (256u << 20) ? (256u << 20) : want;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float rand_weight(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((rng * 2685821657736338717ull) >> 40) / 16777216.0f - 0.5f;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Creates job j with autotuning; fills r. */
static void tune(fv_context *ctx, const cal_job *j, cal_result *r) {
    fv_conv2d_desc d = j->d;
    size_t nw = (size_t)d.k * (size_t)(d.c / d.groups) * (size_t)d.r * (size_t)d.s;
    float *w = malloc(nw * sizeof *w), *b = j->bias ? malloc((size_t)d.k * sizeof *b) : NULL;
    if (!w || (j->bias && !b)) {
        snprintf(r->error, sizeof r->error, "out of host memory for %zu weights", nw);
        free(w);
        free(b);
        return;
    }
    for (size_t i = 0; i < nw; i++)
        w[i] = rand_weight();
    for (int i = 0; b && i < d.k; i++)
        b[i] = rand_weight();
    d.weights = w;
    d.bias = b;
    d.flags = FV_CONV2D_AUTOTUNE | FV_CONV2D_NO_PROFILE;
    fv_conv2d *op = NULL;
    double t0 = now_s();
    fv_status s = fv_conv2d_create(ctx, &d, &op);
    r->seconds = now_s() - t0;
    if (s == FV_OK) s = fv_conv2d_info_get(op, &r->info);
    if (s == FV_OK)
        r->ok = 1;
    else
        snprintf(r->error, sizeof r->error, "%s: %s", fv_status_name(s), fv_last_error());
    fv_conv2d_destroy(op);
    free(w);
    free(b);
}

int main(int argc, char **argv) {
    options o = {.backend = FV_BACKEND_AUTO};
    int rc = parse_args(argc, argv, &o);
    if (rc) {
        cal_free(&o.list);
        return rc == 1 ? 0 : 2;
    }
    size_t ws = o.ws_mib ? (size_t)o.ws_mib << 20 : (size_t)64 << 20;
    fv_context_desc cd = {.backend = o.backend,
                          .device = o.device,
                          .device_pool_bytes = pool_bytes(&o, ws),
                          .workspace_limit_bytes = ws,
                          .profile_path = o.profile_in,
                          .log = log_cb,
                          .log_user = &o,
                          .log_level = FV_LOG_WARN};
    fv_context *ctx = NULL;
    fv_status s = fv_context_create(&cd, &ctx);
    if (s == FV_ERR_NO_DEVICE) {
        fprintf(stderr, "fovea-calibrate: calibrating needs a GPU, and none is usable: %s\n",
                fv_last_error());
        cal_free(&o.list);
        return 2;
    }
    if (s != FV_OK) {
        fprintf(stderr, "fovea-calibrate: context: %s: %s\n", fv_status_name(s), fv_last_error());
        cal_free(&o.list);
        return 1;
    }
    fv_context_info info;
    fv_context_info_get(ctx, &info);
    if (info.backend != FV_BACKEND_CUDA) {
        fprintf(stderr,
                "fovea-calibrate: calibrating needs a GPU, but this runs on the CPU backend (%s)\n",
                info.no_gpu_reason[0]        ? info.no_gpu_reason
                : info.fovea_built_with_cuda ? "no usable GPU"
                                             : "this fovea was built without CUDA");
        fv_context_destroy(ctx);
        cal_free(&o.list);
        return 2;
    }
    const char *why = "";
    int kept = 0;
    fv_context_profile_status(ctx, &why, &kept);
    if (o.profile_in && why[0]) {
        fprintf(stderr, "fovea-calibrate: --profile-in %s was not loaded: %s\n", o.profile_in, why);
        fv_context_destroy(ctx);
        cal_free(&o.list);
        return 1;
    }
    if (!o.quiet) {
        printf("fovea-calibrate (fovea %s): %s, sm_%d%d, cuDNN %d, workspace limit %zu MiB\n",
               fv_version(), info.device_name, info.sm_major, info.sm_minor, info.cudnn_loaded,
               ws >> 20);
        if (o.profile_in) printf("starting from %s: %d entries\n", o.profile_in, kept);
        printf("tuning %d convolution%s (each engine timed: this takes a while)\n", o.list.n,
               o.list.n == 1 ? "" : "s");
    }
    cal_result *res = calloc((size_t)o.list.n, sizeof *res);
    int failed = 0;
    for (int i = 0; res && i < o.list.n; i++) {
        const cal_job *j = &o.list.e[i];
        if (!o.quiet) {
            printf("[%d/%d] %s ... ", i + 1, o.list.n, j->label);
            fflush(stdout);
        }
        tune(ctx, j, &res[i]);
        failed += !res[i].ok;
        if (o.quiet) continue;
        if (res[i].ok)
            printf("%s %s, %.4f ms (%d candidates, %.1f s)\n", res[i].info.path, res[i].info.engine,
                   (double)res[i].info.measured_ms, res[i].info.candidates, res[i].seconds);
        else
            printf("FAILED\n");
        fflush(stdout);
    }
    if (!res) {
        fprintf(stderr, "fovea-calibrate: out of host memory\n");
        fv_context_destroy(ctx);
        cal_free(&o.list);
        return 1;
    }
    for (int i = 0; i < o.list.n; i++)
        if (!res[i].ok)
            fprintf(stderr, "fovea-calibrate: %s: %s\n", o.list.e[i].label, res[i].error);
    if (!o.quiet) cal_print_table(stdout, &o.list, res);
    rc = failed ? 1 : 0;
    if (o.json && cal_write_json(o.json, &info, o.out, &o.list, res) != 0) {
        fprintf(stderr, "fovea-calibrate: --json %s: %s\n", o.json, strerror(errno));
        rc = 1;
    }
    s = fv_context_profile_save(ctx, o.out);
    int entries = 0;
    fv_context_profile_status(ctx, NULL, &entries);
    if (s != FV_OK) {
        fprintf(stderr, "fovea-calibrate: saving %s: %s: %s\n", o.out, fv_status_name(s),
                fv_last_error());
        rc = 1;
    } else {
        printf("wrote %s: %d engine choice%s (%d tuned now%s)\n", o.out, entries,
               entries == 1 ? "" : "s", o.list.n - failed, failed ? ", some FAILED" : "");
    }
    free(res);
    fv_context_destroy(ctx);
    cal_free(&o.list);
    return rc;
}
