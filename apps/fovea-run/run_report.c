/* fovea-run's reports: the layer table after fusion, the outputs (top-K for
 * classifiers), per-layer times and the per-layer error against the CPU
 * reference; as text, or as members of one JSON object (each function
 * writes ",\"key\":value"). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "run.h"

void run_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static const char *mib(size_t b, char *buf, size_t n) {
    if (b == SIZE_MAX)
        snprintf(buf, n, "-");
    else if (b >= (1u << 20))
        snprintf(buf, n, "%.1fM", (double)b / (1 << 20));
    else if (b >= 1024)
        snprintf(buf, n, "%.1fK", (double)b / 1024);
    else
        snprintf(buf, n, "%zu", b);
    return buf;
}

void run_print_layers(FILE *f, fv_net *net, int json) {
    fv_net_info info;
    if (fv_net_info_get(net, &info) != FV_OK) return;
    if (json) {
        fprintf(f,
                ",\"net\":{\"layers\":%d,\"builder_layers\":%d,\"convolutions\":%d,"
                "\"arena_bytes\":%zu,\"arena_lower_bound\":%zu,\"weight_bytes\":%zu,"
                "\"io_bytes\":%zu,\"workspace_bytes\":%zu,\"cuda_graph\":%d,\"fused_bn\":%d,"
                "\"fused_act\":%d,\"inplace\":%d,\"concat_elided\":%d}",
                info.layers, info.builder_layers, info.convolutions, info.arena_bytes,
                info.arena_lower_bound, info.weight_bytes, info.io_bytes, info.workspace_bytes,
                info.cuda_graph, info.fused_bn, info.fused_act, info.inplace, info.concat_elided);
        fprintf(f, ",\"layers\":[");
    } else {
        fprintf(f, "%-4s %-32s %-12s %-10s %-20s %-9s %-28s %8s %8s %8s\n", "#", "layer", "op",
                "fused", "output (N,C,H,W)", "path", "engine", "wspace", "offset", "bytes");
    }
    for (int i = 0; i < info.layers; i++) {
        fv_net_layer_info l;
        if (fv_net_layer_info_get(net, i, &l) != FV_OK) continue;
        char a[16], b[16], c[16], shape[48];
        if (json) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            run_json_string(f, l.name);
            fprintf(f, ",\"op\":");
            run_json_string(f, l.op);
            fprintf(f, ",\"fused\":");
            run_json_string(f, l.fused);
            fprintf(f, ",\"path\":");
            run_json_string(f, l.path);
            fprintf(f, ",\"engine\":");
            run_json_string(f, l.engine);
            fprintf(f, ",\"shape\":[%d,%d,%d,%d],\"workspace_bytes\":%zu,\"bytes\":%zu", l.n, l.c,
                    l.h, l.w, l.workspace_bytes, l.bytes);
            if (l.offset != SIZE_MAX) fprintf(f, ",\"offset\":%zu", l.offset);
            fprintf(f, "}");
            continue;
        }
        snprintf(shape, sizeof shape, "%d,%d,%d,%d", l.n, l.c, l.h, l.w);
        fprintf(f, "%-4d %-32.32s %-12s %-10s %-20s %-9s %-28.28s %8s %8s %8s\n", i, l.name, l.op,
                l.fused, shape, l.path, l.engine, mib(l.workspace_bytes, a, sizeof a),
                mib(l.offset, b, sizeof b), mib(l.bytes, c, sizeof c));
    }
    if (json) {
        fprintf(f, "]");
        return;
    }
    char a[16], b[16], c[16], d[16];
    fprintf(f,
            "%d layers after fusion (%d as built; %d convolutions; BN folded %d, activations "
            "fused %d, in place %d, concat inputs written in place %d)\narena %s (lower bound %s), "
            "weights %s, largest workspace %s%s\n",
            info.layers, info.builder_layers, info.convolutions, info.fused_bn, info.fused_act,
            info.inplace, info.concat_elided, mib(info.arena_bytes, a, sizeof a),
            mib(info.arena_lower_bound, b, sizeof b), mib(info.weight_bytes, c, sizeof c),
            mib(info.workspace_bytes, d, sizeof d), info.cuda_graph ? ", CUDA graph" : "");
}

typedef struct scored {
    float v;
    int i;
} scored;

static int by_score(const void *a, const void *b) {
    float x = ((const scored *)a)->v, y = ((const scored *)b)->v;
    return (x < y) - (x > y);
}

static void top_k(FILE *f, const float *v, int c, int k, int json) {
    scored *s = malloc(sizeof *s * (size_t)c);
    if (!s) return;
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < c; i++)
        if (v[i] > mx) mx = v[i];
    for (int i = 0; i < c; i++)
        sum += exp(v[i] - mx), s[i].v = v[i], s[i].i = i;
    qsort(s, (size_t)c, sizeof *s, by_score);
    if (k > c) k = c;
    if (json) fprintf(f, ",\"top\":[");
    for (int j = 0; j < k; j++) {
        double p = exp(s[j].v - mx) / sum;
        if (json)
            fprintf(f, "%s{\"index\":%d,\"value\":%.6g,\"softmax\":%.6g}", j ? "," : "", s[j].i,
                    s[j].v, p);
        else
            fprintf(f, "    #%d  class %5d  value %10.5f  softmax %.4f\n", j + 1, s[j].i, s[j].v,
                    p);
    }
    if (json) fprintf(f, "]");
    free(s);
}

void run_print_outputs(FILE *f, fv_net *net, const fv_onnx_report *rep, int top, int json) {
    if (json) fprintf(f, ",\"outputs\":[");
    for (int i = 0; i < rep->output_count; i++) {
        const fv_onnx_io *io = &rep->outputs[i];
        int d[4];
        for (int k = 0; k < 4; k++)
            d[k] = k < io->rank ? (int)io->dims[k] : 1;
        size_t n = (size_t)d[0] * d[1] * d[2] * d[3];
        float *v = malloc(n * sizeof(float));
        if (!v || fv_net_output_download(net, i, v, n) != FV_OK) {
            free(v);
            continue;
        }
        double mn = INFINITY, mx = -INFINITY, sum = 0;
        for (size_t k = 0; k < n; k++) {
            mn = v[k] < mn ? v[k] : mn;
            mx = v[k] > mx ? v[k] : mx;
            sum += v[k];
        }
        if (json) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            run_json_string(f, io->name);
            fprintf(f, ",\"dims\":[");
            for (int k = 0; k < io->rank; k++)
                fprintf(f, "%s%lld", k ? "," : "", (long long)io->dims[k]);
            fprintf(f, "],\"min\":%.6g,\"max\":%.6g,\"mean\":%.6g", mn, mx, sum / (double)n);
        } else {
            fprintf(f, "output %d '%s' (", i, io->name);
            for (int k = 0; k < io->rank; k++)
                fprintf(f, "%s%lld", k ? ", " : "", (long long)io->dims[k]);
            fprintf(f, "): min %.5g  max %.5g  mean %.5g\n", mn, mx, sum / (double)n);
        }
        /* a classifier: (N, C) or (N, C, 1, 1) with C > 1; top-K of sample 0 */
        if (top > 0 && d[1] > 1 && d[2] == 1 && d[3] == 1) top_k(f, v, d[1], top, json);
        if (json) fprintf(f, "}");
        free(v);
    }
    if (json) fprintf(f, "]");
}

void run_print_times(FILE *f, fv_net *net, const float *ms, int layers, float total, int json) {
    double sum = 0;
    for (int i = 0; i < layers; i++)
        sum += ms[i];
    if (json)
        fprintf(f, ",\"layer_ms\":[");
    else
        fprintf(f, "%-4s %-32s %-12s %10s %7s\n", "#", "layer", "op", "ms", "share");
    for (int i = 0; i < layers; i++) {
        fv_net_layer_info l;
        if (fv_net_layer_info_get(net, i, &l) != FV_OK) continue;
        if (json) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            run_json_string(f, l.name);
            fprintf(f, ",\"ms\":%.5f}", ms[i]);
        } else {
            fprintf(f, "%-4d %-32.32s %-12s %10.4f %6.1f%%\n", i, l.name, l.op, ms[i],
                    sum > 0 ? 100.0 * ms[i] / sum : 0.0);
        }
    }
    if (json)
        fprintf(f, "],\"layers_sum_ms\":%.5f,\"profiled_forward_ms\":%.5f", sum, total);
    else
        fprintf(f, "sum of layers %.4f ms; forward as run %.4f ms\n", sum, total);
}

void run_print_compare(FILE *f, fv_net *net, const fv_net_layer_error *err, int layers, int json) {
    double worst = 0;
    int worst_i = -1;
    if (json)
        fprintf(f, ",\"compare\":[");
    else
        fprintf(f, "%-4s %-32s %-12s %12s %12s %12s\n", "#", "layer", "op", "rel L2", "max |net|",
                "max |ref|");
    for (int i = 0; i < layers; i++) {
        fv_net_layer_info l;
        if (fv_net_layer_info_get(net, i, &l) != FV_OK) continue;
        const fv_net_layer_error *e = &err[i];
        if (!(e->rel_l2 <= worst)) worst = e->rel_l2, worst_i = i;
        if (json) {
            fprintf(f, "%s{\"name\":", i ? "," : "");
            run_json_string(f, l.name);
            fprintf(f, ",\"rel_l2\":%.6g,\"max_abs\":%.6g,\"ref_max_abs\":%.6g}", e->rel_l2,
                    e->max_abs, e->ref_max_abs);
        } else {
            fprintf(f, "%-4d %-32.32s %-12s %12.3e %12.5g %12.5g%s\n", i, l.name, l.op, e->rel_l2,
                    e->max_abs, e->ref_max_abs, e->max_abs > 65504 ? "  FP16 overflow" : "");
        }
    }
    if (json)
        fprintf(f, "],\"compare_worst_rel_l2\":%.6g", worst);
    else if (worst_i >= 0)
        fprintf(f, "worst layer %d: rel L2 %.3e\n", worst_i, worst);
}
