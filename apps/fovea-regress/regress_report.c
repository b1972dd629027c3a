/* fovea-regress: the report (lines, text, JSON) and small numeric helpers. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "regress.h"

static const char *status_word[] = {"PASS", "FAIL", "SKIP", "INFO"};

void rg_add(rg_report *r, const char *section, const char *name, rg_status st, double value,
            double limit, const char *unit, const char *fmt, ...) {
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        rg_check *c = realloc(r->c, (size_t)cap * sizeof *c);
        if (!c) {
            r->lost++;
            return;
        }
        r->c = c, r->cap = cap;
    }
    rg_check *c = &r->c[r->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->section, sizeof c->section, "%s", section);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->unit, sizeof c->unit, "%s", unit ? unit : "");
    c->status = st, c->value = value, c->limit = limit;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
}

void rg_counts(const rg_report *r, int *pass, int *fail, int *skip) {
    int n[4] = {0, 0, 0, 0};
    for (int i = 0; i < r->n; i++)
        n[r->c[i].status]++;
    *pass = n[RG_PASS], *fail = n[RG_FAIL] + r->lost, *skip = n[RG_SKIP];
}

void rg_print(FILE *f, const rg_report *r) {
    const char *section = "";
    for (int i = 0; i < r->n; i++) {
        const rg_check *c = &r->c[i];
        if (strcmp(c->section, section) != 0) {
            section = c->section;
            fprintf(f, "%s%s\n", i ? "\n" : "", section);
        }
        fprintf(f, "  %s  %-36s %s\n", status_word[c->status], c->name, c->detail);
    }
    int pass, fail, skip;
    rg_counts(r, &pass, &fail, &skip);
    if (r->lost) fprintf(f, "  FAIL  %d report lines lost (out of host memory)\n", r->lost);
    fprintf(f, "\nfovea-regress: %d passed, %d failed, %d skipped\n", pass, fail, skip);
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            fprintf(f, "\\u%04x", ch < 0x20 ? ch : '?');
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

int rg_write_json(const char *path, const rg_report *r, const fv_context_info *in,
                  const char *options_json) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "{\n  \"tool\": \"fovea-regress\",\n  \"fovea\": ");
    json_str(f, fv_version());
    fprintf(f, ",\n  \"options\": %s,\n  \"context\": ", options_json);
    if (in) {
        fprintf(f, "{\"backend\": ");
        json_str(f, in->backend_name);
        fprintf(f, ", \"device\": ");
        json_str(f, in->device_name);
        fprintf(f,
                ", \"device_index\": %d, \"sm\": \"%d.%d\", \"multiprocessors\": %d, "
                "\"integrated\": %s, \"tegra\": %s, \"memory_policy\": \"%s\", "
                "\"tensor_cores\": %s, \"tensor_core_reason\": ",
                in->device_index, in->sm_major, in->sm_minor, in->multiprocessors,
                in->integrated ? "true" : "false", in->tegra ? "true" : "false",
                in->memory_policy == FV_MEMORY_POLICY_ZERO_COPY ? "zero-copy" : "device",
                in->tensor_cores ? "true" : "false");
        json_str(f, in->tensor_core_reason);
        fprintf(
            f,
            ",\n    \"memory_total\": %zu, \"memory_free\": %zu, \"cuda_runtime_compiled\": %d, "
            "\"cuda_runtime_loaded\": %d, \"cuda_driver\": %d, \"cudnn_compiled\": %d, "
            "\"cudnn_loaded\": %d, \"built_with_cuda\": %s, \"no_gpu_reason\": ",
            in->device_memory_total, in->device_memory_free, in->cuda_runtime_compiled,
            in->cuda_runtime_loaded, in->cuda_driver, in->cudnn_compiled, in->cudnn_loaded,
            in->fovea_built_with_cuda ? "true" : "false");
        json_str(f, in->no_gpu_reason);
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\n  \"checks\": [");
    for (int i = 0; i < r->n; i++) {
        const rg_check *c = &r->c[i];
        fprintf(f, "%s\n    {\"section\": ", i ? "," : "");
        json_str(f, c->section);
        fprintf(f, ", \"name\": ");
        json_str(f, c->name);
        fprintf(f, ", \"status\": \"%s\", \"value\": ", status_word[c->status]);
        json_num(f, c->value);
        fprintf(f, ", \"limit\": ");
        json_num(f, c->limit);
        fprintf(f, ", \"unit\": ");
        json_str(f, c->unit);
        fprintf(f, ", \"detail\": ");
        json_str(f, c->detail);
        fputc('}', f);
    }
    int pass, fail, skip;
    rg_counts(r, &pass, &fail, &skip);
    fprintf(f,
            "\n  ],\n  \"summary\": {\"passed\": %d, \"failed\": %d, \"skipped\": %d, "
            "\"exit_code\": %d}\n}\n",
            pass, fail, skip, fail ? 1 : 0);
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    if (bad && !errno) errno = EIO;
    return bad ? -1 : 0;
}

void rg_free(rg_report *r) {
    free(r->c);
    memset(r, 0, sizeof *r);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
void rg_fill_random(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        double u = (double)(z >> 11) / 9007199254740992.0;
        float v = fv_round_f16((float)(lo + (hi - lo) * u));
        x[i] = v != 0.0f ? v : fv_round_f16(0.5f * hi); /* never zero */
    }
}

double rg_rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) return INFINITY;
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
}
