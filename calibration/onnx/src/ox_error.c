/* The importer's errors, recorded as libfovea's thread-local last error
 * (fv_set_error): fv_last_error() and fv_onnx_last_error() say the same. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ox.h"

static _Thread_local char last_error[1024];

const char *fv_onnx_last_error(void) {
    return fv_last_error();
}

void fv__ox_clear_error(void) {
    last_error[0] = '\0';
    fv_clear_error();
}

fv_status fv__ox_fail(fv_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return fv_set_error(s, "%s", last_error);
}

const char *fv__ox_node_name(const Onnx__NodeProto *n) {
    if (n->name && n->name[0]) return n->name;
    for (size_t i = 0; i < n->n_output; i++)
        if (n->output[i] && n->output[i][0]) return n->output[i];
    return "?";
}

fv_status fv__ox_node_fail(const fv__ox *ox, const Onnx__NodeProto *n, fv_status s, const char *fmt,
                           ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(last_error, sizeof last_error, "node '%.160s' (%.64s, opset %lld): %s",
             fv__ox_node_name(n), n->op_type ? n->op_type : "?", (long long)ox->opset, msg);
    return fv_set_error(s, "%s", last_error);
}

fv_status fv__ox_builder_fail(const fv__ox *ox, const Onnx__NodeProto *n, fv_status s) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", fv_last_error());
    return fv__ox_node_fail(ox, n, s, "%s (%s)", msg[0] ? msg : "builder refused the layer",
                            fv_status_name(s));
}

void fv__ox_log(const fv__ox *ox, const char *fmt, ...) {
    if (!ox->opt || !ox->opt->log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ox->opt->log(line, ox->opt->log_user);
}

const char *fv__ox_dims_str(int rank, const int64_t *dims, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < rank && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (used < n) snprintf(buf + used, n - used, ")");
    return buf;
}
