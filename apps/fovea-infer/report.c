/* fovea-infer: the live status line (once a second) and the summary, as
 * text on stderr or as one JSON object per line on stdout (--json). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "infer.h"

static const char *const stage_names[5] = {"upload", "pre", "net", "post", "download"};

void json_string(FILE *f, const char *s) {
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

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double percentile(float *v, long n, double q) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    long i = (long)ceil(q * (double)n) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

void stats_latency(stats *s, float ms) {
    if (s->nwarm < LAT_WARMUP) {
        s->warm[s->nwarm++] = ms;
        return;
    }
    if (s->nwlat < LAT_SAMPLES) s->wlat[s->nwlat++] = ms;
    if (s->nlat < LAT_SAMPLES) {
        s->lat[s->nlat] = ms;
    } else { /* reservoir: a uniform sample of every frame */
        s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t j = (s->rng >> 17) % (uint64_t)(s->nlat + 1);
        if (j < LAT_SAMPLES) s->lat[j] = ms;
    }
    s->nlat++;
}

void stats_gpu(stats *s, float ms) {
    if (s->ticks <= LAT_WARMUP) return;
    if (s->ngpu < LAT_SAMPLES)
        s->gpu[s->ngpu] = ms;
    else { /* reservoir, as the latencies */
        s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t j = (s->rng >> 17) % (uint64_t)(s->ngpu + 1);
        if (j < LAT_SAMPLES) s->gpu[j] = ms;
    }
    s->ngpu++;
}

static const char *cam_state(const camera *c) {
    if (c->ended) return c->failed ? "failed" : "ended";
    if (c->waiting) return "reconnecting";
    return c->stalled ? "stalled" : "live";
}

static uint64_t cam_drops(const camera *c) {
    return c->overwritten + c->source_dropped;
}

/* "Sneaker 0.91" for camera i's best class (or "-"). */
static void top1(const model *m, const cam_stats *cs, char *out, size_t n) {
    if (m->task != TASK_CLASSIFY || !cs->have_top)
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%s %.2f", model_label(m, cs->top[0].index), (double)cs->top[0].score);
}

static void json_top(const options *o, const model *m, const cam_stats *cs) {
    printf(",\"top\":[");
    for (int k = 0; cs->have_top && k < o->top; k++) {
        printf("%s{\"class\":%d,\"label\":", k ? "," : "", cs->top[k].index);
        json_string(stdout, model_label(m, cs->top[k].index));
        printf(",\"score\":%.5f}", (double)cs->top[k].score);
    }
    printf("]");
}

void report_status(const options *o, const model *m, capture_group *g, camera *cams, int n,
                   stats *s, double secs, double t) {
    capture_lock(g); /* the capture threads' counters */
    /* whole lines: a spreading run's workers print at once */
    flockfile(stdout);
    flockfile(stderr);
    double p50 = percentile(s->wlat, s->nwlat, 0.5), p99 = percentile(s->wlat, s->nwlat, 0.99);
    long tk = s->window_ticks ? s->window_ticks : 1;
    if (o->json) {
        printf("{\"type\":\"status\",\"t\":%.3f,\"fps\":%.2f,\"latency_ms_p50\":%.3f,"
               "\"latency_ms_p99\":%.3f",
               t, s->window_ticks / secs, p50, p99);
        if (o->ndevices > 1) printf(",\"device_index\":%d", o->device);
        for (int i = 0; i < 5; i++)
            printf(",\"%s_ms\":%.4f", stage_names[i], s->window_stage[i] / tk);
        printf(",\"cameras\":[");
        for (int i = 0; i < n; i++) {
            const camera *c = &cams[i];
            printf("%s{\"input\":", i ? "," : "");
            json_string(stdout, c->uri);
            printf(",\"state\":\"%s\",\"fps\":%.2f,\"frames\":%ld,\"dropped\":%llu", cam_state(c),
                   s->cam[i].window_frames / secs, s->cam[i].frames,
                   (unsigned long long)cam_drops(c));
            if (c->ended) {
                printf(",\"message\":");
                json_string(stdout, c->end_msg);
            }
            if (m->task == TASK_CLASSIFY) json_top(o, m, &s->cam[i]);
            printf("}");
        }
        printf("]}\n");
        fflush(stdout);
    } else {
        fprintf(stderr, "%s%6.1fs %6.1f batches/s  latency p50 %6.2f p99 %6.2f ms  ms:",
                o->tag ? o->tag : "", t, s->window_ticks / secs, p50, p99);
        for (int i = 0; i < 5; i++)
            fprintf(stderr, " %s %.3f", stage_names[i], s->window_stage[i] / tk);
        fprintf(stderr, "\n");
        for (int i = 0; i < n; i++) {
            const camera *c = &cams[i];
            char best[96];
            top1(m, &s->cam[i], best, sizeof best);
            fprintf(stderr, "   [%d] %-7s %6.1f fps  dropped %-6llu %s%s%s\n", cam_no(o, i),
                    cam_state(c), s->cam[i].window_frames / secs, (unsigned long long)cam_drops(c),
                    m->task == TASK_CLASSIFY ? best : "", c->ended && c->end_msg[0] ? "  " : "",
                    c->ended ? c->end_msg : "");
        }
        fflush(stderr);
    }
    funlockfile(stderr);
    funlockfile(stdout);
    capture_unlock(g);
    s->window_ticks = 0;
    memset(s->window_stage, 0, sizeof s->window_stage);
    s->nwlat = 0;
    for (int i = 0; i < n; i++)
        s->cam[i].window_frames = 0;
}

static void summary(const options *o, const model *m, camera *cams, int n, stats *s, double secs,
                    const char *end, int ok, const fv_context_info *ci, long allocs) {
    long nl = s->nlat < LAT_SAMPLES ? s->nlat : LAT_SAMPLES;
    float first = s->nwarm ? s->warm[0] : 0.0f;
    if (nl == 0) { /* a run shorter than the warm-up: its frames are all there is */
        memcpy(s->lat, s->warm, sizeof(float) * (size_t)s->nwarm);
        nl = s->nwarm;
    }
    double p50 = percentile(s->lat, nl, 0.5), p99 = percentile(s->lat, nl, 0.99);
    long ng = s->ngpu < LAT_SAMPLES ? s->ngpu : LAT_SAMPLES;
    double g50 = percentile(s->gpu, ng, 0.5), g99 = percentile(s->gpu, ng, 0.99);
    long tk = s->ticks ? s->ticks : 1;
    if (o->json) {
        printf("{\"type\":\"summary\",\"model\":");
        json_string(stdout, o->model);
        printf(",\"task\":\"%s\",\"device\":", m->task == TASK_CLASSIFY ? "classify" : "segment");
        json_string(stdout, ci->device_name);
        printf(",\"device_index\":%d,\"backend\":\"%s\",\"batch\":%d,\"input_width\":%d,"
               "\"input_height\":%d,\"batches\":%ld,\"seconds\":%.3f,\"fps\":%.2f,"
               "\"latency_ms_p50\":%.3f,\"latency_ms_p99\":%.3f,\"latency_ms_first\":%.3f,"
               "\"latency_warmup_frames\":%ld",
               ci->device_index, fv_backend_name(ci->backend), m->n, m->w, m->h, s->ticks, secs,
               s->ticks / secs, p50, p99, (double)first, s->nwarm);
        printf(",\"memory\":\"%s\",\"gpu_ms_p50\":%.4f,\"gpu_ms_p99\":%.4f",
               fv_memory_policy_name(ci->memory_policy), g50, g99);
        for (int i = 0; i < 5; i++)
            printf(",\"%s_ms\":%.4f", stage_names[i], s->stage[i] / tk);
        printf(",\"pool_carve_outs_while_running\":%ld,\"keep_awake_runs\":%ld,\"cameras\":[",
               allocs, s->awake_runs);
        for (int i = 0; i < n; i++) {
            const camera *c = &cams[i];
            printf("%s{\"input\":", i ? "," : "");
            json_string(stdout, c->uri);
            printf(",\"width\":%d,\"height\":%d,\"format\":\"%s\",\"state\":\"%s\",\"frames\":%ld,"
                   "\"fps\":%.2f,\"dropped\":%llu,\"output\":",
                   c->info.width, c->info.height, fv_pixel_format_name(c->info.format),
                   cam_state(c), s->cam[i].frames, s->cam[i].frames / secs,
                   (unsigned long long)cam_drops(c));
            json_string(stdout, c->sink_info.name);
            if (c->ended) {
                printf(",\"message\":");
                json_string(stdout, c->end_msg);
            }
            if (m->task == TASK_CLASSIFY) {
                /* whether the output shows the labels (sink captions) */
                printf(",\"labels_drawn\":%s", c->sink_info.text_overlay ? "true" : "false");
                json_top(o, m, &s->cam[i]);
            }
            printf("}");
        }
        printf("],\"end\":");
        json_string(stdout, end);
        printf(",\"ok\":%s}\n", ok ? "true" : "false");
        fflush(stdout);
        return;
    }
    fprintf(stderr,
            PROG ": %s%s: %ld batches in %.2f s (%.1f per second); latency p50 %.2f ms, p99 "
                 "%.2f ms (after the first %ld frames; the first %.2f ms); ms per batch:",
            o->tag ? o->tag : "", end, s->ticks, secs, s->ticks / secs, p50, p99, s->nwarm,
            (double)first);
    for (int i = 0; i < 5; i++)
        fprintf(stderr, " %s %.3f", stage_names[i], s->stage[i] / tk);
    fprintf(stderr, "\n");
    for (int i = 0; i < n; i++) {
        const camera *c = &cams[i];
        char best[96];
        top1(m, &s->cam[i], best, sizeof best);
        fprintf(stderr, "  [%d] %s: %ld frames (%.1f fps), dropped %llu, %s%s%s%s%s\n",
                cam_no(o, i), c->uri, s->cam[i].frames, s->cam[i].frames / secs,
                (unsigned long long)cam_drops(c), cam_state(c),
                m->task == TASK_CLASSIFY ? ", last: " : "", m->task == TASK_CLASSIFY ? best : "",
                c->sink_info.name[0] ? " -> " : "", c->sink_info.name);
    }
}

void report_summary(const options *o, const model *m, camera *cams, int n, stats *s, double secs,
                    const char *end, int ok, const fv_context_info *ci, long allocs) {
    flockfile(stdout); /* whole summaries: a spreading run's workers end at once */
    flockfile(stderr);
    summary(o, m, cams, n, s, secs, end, ok, ci, allocs);
    funlockfile(stderr);
    funlockfile(stdout);
}
