/* Execution plans cached in the device profile.
 *
 * cuDNN's runtime-compiled engines (the runtime-fusion engine that takes
 * graph-pw, eng4 on the H100) compile a kernel when their plan finalizes:
 * 60-90 ms an op, also when the profile names the engine. cuDNN serializes
 * such a finalized plan to text (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION)
 * and finalizes a plan from that text without compiling, as cudnn-frontend's
 * ExecutionPlan getJsonRepresentation / loadFromJson do. The op's profile
 * entry keeps the text as its plan blob (core/profile.h), so a net created
 * from a warm profile compiles nothing.
 *
 * A blob is a header line binding it to the graph it was made for, then
 * cuDNN's bytes as cuDNN gave them (the header is one line, two here):
 *   fovea-conv-plan <FV__CONV_GRAPH_REV> <key> path=<p> form=<g>,<wc>,<kp>,<cs>,<cd>
 *   engine=<n> knobs=<t:v,...|->\n<cuDNN's JSON>
 * The profile checks the blob's bytes (hash); the header checks
 * that it is this entry's plan, for the graph this fovea builds: a profile
 * edited by hand (path, engine, knobs) or a fovea whose graphs changed get no
 * stale plan. cuDNN itself refuses text of another version or GPU. Any
 * refusal only costs the compile it would have saved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv_engine.h"

#define MAGIC      "fovea-conv-plan"
#define HEADER_MAX 1536 /* key (191) + fields + 16 knobs of two int64 */

/* The header line of entry e's blob on form f (with its '\n'); its length,
 * or -1 when it does not fit. */
static int header(const fv__engine_choice *e, const fv__conv_form *f, char *out, size_t n) {
    int len = snprintf(out, n, "%s %d %s path=%s form=%d,%d,%d,%d,%d engine=%lld knobs=", MAGIC,
                       FV__CONV_GRAPH_REV, e->key, fv__engine_path_name(e->path), f->groups, f->wc,
                       f->kp, f->cs, f->cd, (long long)e->engine);
    for (int i = 0; i < e->nknobs && len > 0 && (size_t)len < n; i++)
        len += snprintf(out + len, n - (size_t)len, "%s%lld:%lld", i ? "," : "",
                        (long long)e->knob_type[i], (long long)e->knob_value[i]);
    if (len > 0 && (size_t)len < n)
        len += snprintf(out + len, n - (size_t)len, "%s\n", e->nknobs ? "" : "-");
    return len > 0 && (size_t)len < n ? len : -1;
}

/* The engine config of a finalized plan into *cfg (created here). */
static cudnnStatus_t plan_config(fv__bdesc plan, fv__bdesc *cfg) {
    int64_t n = 0;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, cfg);
    if (!s)
        s = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, cfg);
    if (s && *cfg) {
        cudnnBackendDestroyDescriptor(*cfg);
        *cfg = NULL;
    }
    return s;
}

/* Whether plan's engine compiles at run time: 1, 0, or -1 when cuDNN does
 * not say. */
static int runtime_compiled(fv__bdesc plan) {
    fv__bdesc cfg = NULL, eng = NULL;
    cudnnBackendBehaviorNote_t notes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t n = 0, cnt = 0;
    int rtc = -1;
    if (plan_config(plan, &cfg) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) ==
            CUDNN_STATUS_SUCCESS &&
        cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &n, &eng) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                 CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &cnt,
                                 notes) == CUDNN_STATUS_SUCCESS) {
        rtc = 0;
        for (int64_t i = 0; i < cnt && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; i++)
            if (notes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) rtc = 1;
    }
    if (eng) cudnnBackendDestroyDescriptor(eng);
    if (cfg) cudnnBackendDestroyDescriptor(cfg);
    return rtc;
}

void fv__conv_plan_cache_store(fv_conv2d *op, const fv__conv_cand *c) {
    fv_context *ctx = op->ctx;
    if (!fv__conv_uses_graph(c->path) || !c->plan || c->plan_cached) return;
    char key[FV__PROFILE_KEY];
    fv__conv2d_op_key(op, key, sizeof key);
    const fv__engine_choice *e = fv__profile_find(ctx->profile, key);
    /* a blob is bound to its entry: only for the choice the entry names */
    if (!e || e->path != c->path || e->cdecl_ != c->f.cd || e->engine != c->choice.engine) return;
    /* cuDNN serializes runtime-compiled engines' plans only; when it does not
     * say, try graph-pw's and graph-pw16's (the forms those engines take) */
    int rtc = runtime_compiled(c->plan);
    if (rtc == 0 || (rtc < 0 && c->path != FV__PATH_GRAPH_PW && c->path != FV__PATH_GRAPH_PW16))
        return;
    char saved[1024], hdr[HEADER_MAX];
    snprintf(saved, sizeof saved, "%s", fv_last_error());
    int hl = header(e, &c->f, hdr, sizeof hdr);
    int64_t n = 0, got = 0;
    unsigned char *blob = NULL;
    const char *why = NULL;
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    if (hl < 0)
        why = "header too long";
    else if ((s = cudnnBackendGetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                           CUDNN_TYPE_CHAR, 0, &n, NULL)) != CUDNN_STATUS_SUCCESS)
        why = cudnnGetErrorString(s);
    else if (n <= 0 || (uint64_t)n > FV__PROFILE_MAX_PLAN - (size_t)hl)
        why = "size out of range";
    else if (!(blob = malloc((size_t)hl + (size_t)n)))
        why = "out of host memory";
    else if ((s = cudnnBackendGetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                           CUDNN_TYPE_CHAR, n, &got, blob + hl)) !=
             CUDNN_STATUS_SUCCESS)
        why = cudnnGetErrorString(s);
    else if (got <= 0 || got > n)
        why = "size changed";
    else {
        memcpy(blob, hdr, (size_t)hl);
        if (fv__profile_set_plan(ctx->profile, key, blob, (size_t)hl + (size_t)got) != FV_OK)
            why = fv_last_error();
    }
    if (why)
        fv__log(ctx, FV_LOG_DEBUG, "conv2d: the plan of %s (%s eng%lld) is not cached: %s", key,
                fv__engine_path_name(c->path), (long long)e->engine, why);
    else
        fv__log(ctx, FV_LOG_DEBUG, "conv2d: the plan of %s (%s eng%lld) cached, %lld bytes", key,
                fv__engine_path_name(c->path), (long long)e->engine, (long long)got);
    free(blob);
    fv__error(FV_OK, "%s", saved);
}

fv_status fv__conv_plan_cache_load(fv_conv2d *op, const fv__engine_choice *e,
                                   const fv__conv_form *f, fv__conv_cand *c) {
    fv_context *ctx = op->ctx;
    size_t n = 0;
    const unsigned char *blob = fv__profile_plan(ctx->profile, e->key, &n);
    if (!blob || !fv__conv_uses_graph(e->path)) return FV_ERR_NOT_SUPPORTED;
    char hdr[HEADER_MAX];
    int hl = header(e, f, hdr, sizeof hdr);
    if (hl < 0 || n <= (size_t)hl || memcmp(blob, hdr, (size_t)hl) != 0) {
        /* its header, when it is one line of text (the log shows it) */
        int shown = 0;
        while ((size_t)shown < n && shown < HEADER_MAX && blob[shown] >= 0x20 && blob[shown] < 0x7f)
            shown++;
        if ((size_t)shown == n || blob[shown] != '\n') shown = 0;
        fv__log(ctx, FV_LOG_DEBUG,
                "conv2d: the cached plan of %s was made for another graph ('%.*s'); compiling it",
                e->key, shown, (const char *)blob);
        return FV_ERR_NOT_SUPPORTED;
    }
    cudnnHandle_t h = fv__cuda_cudnn(ctx);
    fv__bdesc plan = NULL, cfg = NULL;
    fv__engine_choice got = *e;
    int64_t ws = 0, cnt = 0;
    int tc = 0;
    const char *why = NULL;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
    if (!s)
        s = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                     CUDNN_TYPE_CHAR, (int64_t)(n - (size_t)hl), blob + hl);
    if (!s)
        s = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                     &h);
    if (!s) s = cudnnBackendFinalize(plan);
    if (!s)
        s = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &cnt, &ws);
    if (!s) s = plan_config(plan, &cfg);
    if (s) {
        why = cudnnGetErrorString(s);
    } else {
        fv__conv_cfg_describe(cfg, &got, &tc);
        if (got.engine != e->engine)
            why = "it runs another engine";
        else if (ws < 0 || (uint64_t)ws > ctx->workspace_limit)
            why = "its workspace is over the limit";
    }
    if (cfg) cudnnBackendDestroyDescriptor(cfg);
    if (why) {
        fv__log(ctx, FV_LOG_DEBUG, "conv2d: the cached plan of %s does not load (%s); compiling it",
                e->key, why);
        if (plan) cudnnBackendDestroyDescriptor(plan);
        return FV_ERR_NOT_SUPPORTED;
    }
    c->plan = plan;
    c->ws = (size_t)ws;
    c->tensor_cores = tc;
    c->plan_cached = 1;
    c->choice.engine = got.engine;
    c->choice.nknobs = got.nknobs;
    memcpy(c->choice.knob_type, got.knob_type, sizeof got.knob_type);
    memcpy(c->choice.knob_value, got.knob_value, sizeof got.knob_value);
    return FV_OK;
}
