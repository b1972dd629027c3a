/* ONNX's backend node tests (Debian libonnx-testdata) on fovea: every test
 * whose nodes the importer handles and that exercises an op fovea claims
 * (a layer op, Identity, Dropout) is loaded, run and compared with its
 * expected outputs, on the CPU backend or (--gpu) the CUDA backend.
 *
 *     onnx_conformance [--gpu] [--dir DIR] [--only PREFIX] [--verbose] [--markdown]
 *
 * A test is attributed to the claimed op whose name prefixes the test's
 * name (test_conv_with_strides_padding -> Conv), else to its first claimed
 * node; test_X_expanded of an unclaimed op X (ops written in primitives) is
 * not claimed. Graph inputs: input 0 and every float input of Add/Sub/Mul/Div/
 * Concat are net inputs; the others (weights, pads, scales, bounds) are
 * bound as constants, as an exporter would store them. Outcomes:
 *   passed   loaded, ran, every output within tolerance
 *   failed   wrong values or shapes, or any error other than those below
 *   skipped  data types fovea does not run (not float32), opsets outside
 *            11-21, or FV_ERR_NOT_SUPPORTED at load (a variant of a claimed
 *            op fovea refuses; the reason is printed)
 * Tolerance per element: CPU (float32) |out - ref| <= 1e-5 + 1e-3 |ref|
 * (ONNX's rtol 1e-3); GPU (FP16 storage) <= 1e-2 max(1, |ref|). A GPU test
 * that fails with FP16 storage runs again with FP32 storage
 * (fv_net_desc.dtype, the CPU's tolerance): passing then, it counts as
 * passed and is listed ("pass-f32", with what FP16 storage lost), since a
 * user would run such a net that way.
 * Exit 0 when nothing failed, 1 otherwise, 77 for --gpu without a GPU. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fv_test.h"
#include "onnx_test_util.h"

#define MAX_TESTS  2048
#define MAX_OPS    64
#define MAX_INPUTS 16

typedef struct model_info {
    int64_t opset;
    int ninputs, nnodes, unsupported, non_tensor;
    char inputs[MAX_INPUTS][128];
    char first_claimed[64];
    char ops[8][64]; /* distinct claimed ops, for attribution */
    int nops;
    char bad_op[64];
} model_info;

typedef struct op_row {
    char op[64];
    int passed, failed, skipped;
} op_row;

static op_row rows[MAX_OPS];
static int nrows, verbose;

static void on_item(fv_onnx_item kind, const char *name, const char *op, const char *domain,
                    void *user) {
    model_info *m = user;
    if (kind == FV_ONNX_ITEM_INPUT && strcmp(op, "tensor")) m->non_tensor++;
    if (kind == FV_ONNX_ITEM_INPUT && m->ninputs < MAX_INPUTS)
        snprintf(m->inputs[m->ninputs++], sizeof m->inputs[0], "%s", name);
    if (kind != FV_ONNX_ITEM_NODE) return;
    m->nnodes++;
    fv_onnx_op_kind k = domain[0] ? FV_ONNX_OP_UNSUPPORTED : fv_onnx_op_support(op);
    if (k == FV_ONNX_OP_UNSUPPORTED) {
        m->unsupported++;
        snprintf(m->bad_op, sizeof m->bad_op, "%s", op);
        return;
    }
    if (k == FV_ONNX_OP_CONSTANT) return;
    if (!m->first_claimed[0]) snprintf(m->first_claimed, sizeof m->first_claimed, "%s", op);
    for (int i = 0; i < m->nops; i++)
        if (!strcmp(m->ops[i], op)) return;
    if (m->nops < 8) snprintf(m->ops[m->nops++], sizeof m->ops[0], "%s", op);
}

/* The claimed op whose lower-case name (without '_') prefixes the test name. */
static const char *attribute(const model_info *m, const char *test) {
    const char *best = m->first_claimed;
    size_t best_len = 0;
    const char *t = test + 5; /* "test_" */
    for (int i = 0; i < m->nops; i++) {
        size_t len = strlen(m->ops[i]);
        char low[64];
        for (size_t k = 0; k <= len; k++)
            low[k] = (char)(m->ops[i][k] >= 'A' && m->ops[i][k] <= 'Z' ? m->ops[i][k] + 32
                                                                       : m->ops[i][k]);
        char tt[128];
        size_t j = 0;
        for (size_t k = 0; t[k] && j < sizeof tt - 1; k++)
            if (t[k] != '_') tt[j++] = t[k];
        tt[j] = '\0';
        if (!strncmp(tt, low, len) && len > best_len) best = m->ops[i], best_len = len;
    }
    /* test_<op>_expanded of an op fovea does not claim (LayerNormalization
     * written in primitives...) tests that op: not claimed */
    if (!best_len && strstr(test, "_expanded")) return NULL;
    return best;
}

static op_row *row(const char *op) {
    for (int i = 0; i < nrows; i++)
        if (!strcmp(rows[i].op, op)) return &rows[i];
    if (nrows == MAX_OPS) return &rows[MAX_OPS - 1];
    snprintf(rows[nrows].op, sizeof rows[0].op, "%s", op);
    return &rows[nrows++];
}

static int cmp_rows(const void *a, const void *b) {
    return strcmp(((const op_row *)a)->op, ((const op_row *)b)->op);
}

static int all_runtime(const char *op) {
    return !strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div") ||
           !strcmp(op, "Concat");
}

typedef enum { PASS, FAIL, SKIP } outcome;

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One data set of one test. */
static outcome conf_set(fv_context *ctx, int gpu, fv_dtype dtype, const char *dir, const char *set,
                        const model_info *m, const char *op, char *why, size_t nwhy) {
    char path[2048];
    fv_onnx_tensor in[MAX_INPUTS];
    fv_onnx_constant consts[MAX_INPUTS];
    const float *rt[MAX_INPUTS];
    int nconst = 0, nrt = 0, n = m->ninputs;
    outcome res = FAIL;
    memset(in, 0, sizeof in);
    for (int k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/%s/input_%d.pb", dir, set, k);
        if (fv_onnx_tensor_read(path, &in[k]) != FV_OK) {
            snprintf(why, nwhy, "input %d: %s", k, fv_onnx_last_error());
            goto done;
        }
        int runtime = k == 0 || (all_runtime(op) && in[k].data);
        if (runtime && in[k].elem_type != 1) {
            snprintf(why, nwhy, "input %d has data type %d (fovea runs float32)", k,
                     in[k].elem_type);
            res = SKIP;
            goto done;
        }
        if (runtime)
            rt[nrt++] = in[k].data;
        else
            consts[nconst++] =
                (fv_onnx_constant){m->inputs[k], in[k].data, in[k].int_data, in[k].count};
    }
    fv_onnx_options o = {.constants = consts, .constant_count = nconst};
    fv_net_builder *b = NULL;
    fv_onnx_report rep;
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    fv_status s = fv_onnx_load(path, &o, &b, &rep);
    if (s != FV_OK) {
        snprintf(why, nwhy, "load: %s: %s", fv_status_name(s), fv_onnx_last_error());
        res = s == FV_ERR_NOT_SUPPORTED ? SKIP : FAIL;
        goto done;
    }
    float *out[FV_ONNX_MAX_IO] = {0};
    if (rep.input_count != nrt) {
        snprintf(why, nwhy, "the net has %d inputs, the test gives %d", rep.input_count, nrt);
        fv_net_builder_destroy(b);
        goto done;
    }
    s = onnx_test_run(ctx, b, &rep, 0, dtype, rt, out);
    fv_net_builder_destroy(b);
    if (s != FV_OK) {
        snprintf(why, nwhy, "run: %s: %s", fv_status_name(s), fv_last_error());
        res = s == FV_ERR_NOT_SUPPORTED ? SKIP : FAIL;
        goto done;
    }
    res = PASS;
    for (int i = 0; i < rep.output_count && res == PASS; i++) {
        fv_onnx_tensor ref;
        snprintf(path, sizeof path, "%s/%s/output_%d.pb", dir, set, i);
        if (fv_onnx_tensor_read(path, &ref) != FV_OK || !ref.data) {
            snprintf(why, nwhy, "output %d: cannot read the reference: %s", i,
                     fv_onnx_last_error());
            res = FAIL;
        } else if (ref.rank != rep.outputs[i].rank ||
                   memcmp(ref.dims, rep.outputs[i].dims, sizeof(int64_t) * (size_t)ref.rank)) {
            snprintf(why, nwhy,
                     "output %d: shape rank %d (%lld, ...) but expected rank %d (%lld, ...)", i,
                     rep.outputs[i].rank, (long long)rep.outputs[i].dims[0], ref.rank,
                     (long long)(ref.rank ? ref.dims[0] : 0));
            res = FAIL;
        } else {
            double worst = 0;
            size_t at = 0;
            for (size_t k = 0; k < ref.count; k++) {
                double r = ref.data[k], d = fabs((double)out[i][k] - r);
                double tol = gpu && dtype != FV_DTYPE_F32 ? 1e-2 * fmax(1.0, fabs(r))
                                                          : 1e-5 + 1e-3 * fabs(r);
                if (!(d <= tol) && !(isnan(r) && isnan(out[i][k])) && (d / tol > worst || isnan(d)))
                    worst = isnan(d) ? INFINITY : d / tol, at = k;
            }
            if (worst > 1) {
                snprintf(why, nwhy, "output %d[%zu] = %g, expected %g (%.1fx the tolerance)", i, at,
                         out[i][at], ref.data[at], worst);
                res = FAIL;
            }
        }
        fv_onnx_tensor_free(&ref);
    }
    for (int i = 0; i < rep.output_count; i++)
        free(out[i]);
done:
    for (int k = 0; k < n; k++)
        fv_onnx_tensor_free(&in[k]);
    return res;
}

static outcome conf_test(fv_context *ctx, int gpu, fv_dtype dtype, const char *root,
                         const char *name, const char **op_out, char *why, size_t nwhy) {
    char dir[1024], path[1200];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    static model_info m;
    memset(&m, 0, sizeof m);
    *op_out = NULL;
    if (fv_onnx_inspect(path, &m.opset, on_item, &m) != FV_OK) return SKIP;
    if (m.unsupported || !m.first_claimed[0] || m.ninputs == 0) return SKIP; /* not claimed */
    *op_out = attribute(&m, name);
    if (!*op_out) return SKIP;
    if (m.non_tensor) {
        snprintf(why, nwhy, "a graph input is no tensor (sequence, optional...)");
        return SKIP;
    }
    if (m.opset < 11 || m.opset > 21) {
        snprintf(why, nwhy, "opset %lld (fovea reads 11-21)", (long long)m.opset);
        return SKIP;
    }
    DIR *d = opendir(dir);
    if (!d) return FAIL;
    struct dirent *e;
    outcome worst = PASS;
    int sets = 0;
    while ((e = readdir(d)) && worst == PASS) {
        if (strncmp(e->d_name, "test_data_set_", 14)) continue;
        sets++;
        outcome r = conf_set(ctx, gpu, dtype, dir, e->d_name, &m, *op_out, why, nwhy);
        if (r != PASS) worst = r;
    }
    closedir(d);
    if (!sets) {
        snprintf(why, nwhy, "no test_data_set_*");
        return FAIL;
    }
    return worst;
}

int main(int argc, char **argv) {
    const char *root = "/usr/share/libonnx-testdata/data/node", *only = "";
    int gpu = 0, markdown = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpu"))
            gpu = 1;
        else if (!strcmp(argv[i], "--verbose"))
            verbose = 1;
        else if (!strcmp(argv[i], "--markdown"))
            markdown = 1;
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            root = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--gpu] [--dir DIR] [--only PREFIX] [--verbose] [--markdown]\n",
                    argv[0]);
            return 2;
        }
    }
    DIR *d = opendir(root);
    if (!d) {
        printf("SKIP: no ONNX node tests at %s (Debian: libonnx-testdata)\n", root);
        return 77;
    }
    fv_context *ctx = NULL;
    if (gpu) {
        ctx = fv_test_gpu_context_or_skip();
    } else {
        fv_context_desc cd = {.backend = FV_BACKEND_CPU, .device_pool_bytes = (size_t)256 << 20};
        if (fv_context_create(&cd, &ctx) != FV_OK) {
            fprintf(stderr, "CPU context: %s\n", fv_last_error());
            return 1;
        }
    }
    char **names = malloc(sizeof(char *) * MAX_TESTS);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) && count < MAX_TESTS)
        if (!strncmp(e->d_name, "test_", 5) && !strncmp(e->d_name, only, strlen(only)))
            names[count++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)count, sizeof *names, cmp_names);
    int unclaimed = 0, failed = 0, f32 = 0;
    for (int i = 0; i < count; i++) {
        char why[1024] = "";
        const char *op;
        outcome r = conf_test(ctx, gpu, FV_DTYPE_F16, root, names[i], &op, why, sizeof why);
        int in_f32 = 0;
        if (gpu && r == FAIL && op) { /* FP16 storage lost it: FP32 storage? */
            char why32[480] = "", lost[520];
            snprintf(lost, sizeof lost, "FP16 storage: %.480s", why);
            if (conf_test(ctx, gpu, FV_DTYPE_F32, root, names[i], &op, why32, sizeof why32) ==
                PASS) {
                r = PASS, in_f32 = 1, f32++;
                snprintf(why, sizeof why, "%s", lost);
            } else { /* 520 + 480 + 16 < sizeof why */
                snprintf(why, sizeof why, "%s; FP32 storage: %s", lost, why32);
            }
        }
        if (!op) {
            unclaimed++;
            free(names[i]);
            continue;
        }
        op_row *w = row(op);
        if (r == PASS)
            w->passed++;
        else if (r == FAIL)
            w->failed++, failed++;
        else
            w->skipped++;
        if (r == FAIL || verbose || in_f32 || (r == SKIP && why[0]))
            printf("%-8s %-52s %s\n",
                   in_f32      ? "pass-f32"
                   : r == PASS ? "pass"
                   : r == FAIL ? "FAIL"
                               : "skip",
                   names[i], why);
        free(names[i]);
    }
    free(names);
    int tp = 0, tf = 0, ts = 0;
    qsort(rows, (size_t)nrows, sizeof *rows, cmp_rows);
    if (markdown)
        printf("\n| op | passed | failed | skipped |\n|---|---|---|---|\n");
    else
        printf("\n%-20s results\n", "op");
    for (int i = 0; i < nrows; i++) {
        op_row *w = &rows[i];
        tp += w->passed, tf += w->failed, ts += w->skipped;
        if (markdown)
            printf("| %s | %d | %d | %d |\n", w->op, w->passed, w->failed, w->skipped);
        else
            printf("%-20s %d passed, %d failed, %d skipped\n", w->op, w->passed, w->failed,
                   w->skipped);
    }
    if (markdown)
        printf("| **total** | **%d** | **%d** | **%d** |\n\n(%s backend; %d passed with FP32 "
               "storage; %d tests of ops fovea does not claim not run)\n",
               tp, tf, ts, gpu ? "CUDA" : "CPU", f32, unclaimed);
    else
        printf("%-20s %d passed, %d failed, %d skipped (%s backend; %d passed with FP32 "
               "storage; %d tests of unclaimed ops not run)\n",
               "total", tp, tf, ts, gpu ? "CUDA" : "CPU", f32, unclaimed);
    fv_context_destroy(ctx);
    return failed ? 1 : 0;
}
