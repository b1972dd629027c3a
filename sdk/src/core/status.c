/* Status names, the thread-local last-error message, logging. */
#include <stdio.h>
#include <string.h>
#include "internal.h"

#define FV__MSG_SIZE 1024
static _Thread_local char last_error[FV__MSG_SIZE];

const char *fv_status_name(fv_status s) {
    switch (s) {
    case FV_OK:
        return "FV_OK";
    case FV_ERR_BAD_PARAM:
        return "FV_ERR_BAD_PARAM";
    case FV_ERR_BAD_SHAPE:
        return "FV_ERR_BAD_SHAPE";
    case FV_ERR_BAD_STATE:
        return "FV_ERR_BAD_STATE";
    case FV_ERR_NOT_SUPPORTED:
        return "FV_ERR_NOT_SUPPORTED";
    case FV_ERR_NO_DEVICE:
        return "FV_ERR_NO_DEVICE";
    case FV_ERR_OUT_OF_MEMORY:
        return "FV_ERR_OUT_OF_MEMORY";
    case FV_ERR_CUDA:
        return "FV_ERR_CUDA";
    case FV_ERR_CUDNN:
        return "FV_ERR_CUDNN";
    case FV_ERR_LIBRARY:
        return "FV_ERR_LIBRARY";
    case FV_ERR_IO:
        return "FV_ERR_IO";
    case FV_ERR_FORMAT:
        return "FV_ERR_FORMAT";
    case FV_ERR_NOT_READY:
        return "FV_ERR_NOT_READY";
    case FV_ERR_TIMEOUT:
        return "FV_ERR_TIMEOUT";
    case FV_ERR_END_OF_STREAM:
        return "FV_ERR_END_OF_STREAM";
    case FV_ERR_INTERNAL:
        return "FV_ERR_INTERNAL";
    }
    return "FV_STATUS_UNKNOWN";
}

fv_status_category fv_status_category_of(fv_status s) {
    if (strcmp(fv_status_name(s), "FV_STATUS_UNKNOWN") == 0) return FV_CATEGORY_INTERNAL;
    return (fv_status_category)((int)s / 100);
}

const char *fv_last_error(void) {
    return last_error;
}

void fv_clear_error(void) {
    last_error[0] = '\0';
}

fv_status fv__error(fv_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

fv_status fv_set_error(fv_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

fv_status fv_error_prefix(fv_status s, const char *what) {
    return fv__error_prefix(s, what ? what : "");
}

fv_status fv__error_prefix(fv_status s, const char *what) {
    size_t w = strlen(what), m = strlen(last_error);
    if (w + 2 >= FV__MSG_SIZE) return s;
    if (w + 2 + m >= FV__MSG_SIZE) m = FV__MSG_SIZE - 1 - w - 2;
    memmove(last_error + w + 2, last_error, m);
    memcpy(last_error, what, w);
    last_error[w] = ':';
    last_error[w + 1] = ' ';
    last_error[w + 2 + m] = '\0';
    return s;
}

void fv__log(const fv_context *ctx, fv_log_level level, const char *fmt, ...) {
    if (!ctx || !ctx->log || level > ctx->log_level) return;
    char msg[FV__MSG_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ctx->log(level, msg, ctx->log_user);
}
