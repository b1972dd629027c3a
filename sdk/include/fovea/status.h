/* fovea: status codes and the thread-local last-error message.
 *
 * Every fallible call returns an fv_status. Codes come in categories of a
 * hundred (code / 100 == category): a caller can switch on the category
 * (fv_status_category) or on the exact code. After a failure,
 * fv_last_error() gives a message with the specifics: the call, the
 * offending value and what was expected, e.g.
 *   "conv2d: input C=3 but weights C=4".
 */
#ifndef FOVEA_STATUS_H
#define FOVEA_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes; code / 100 is the category (fv_status_category). */
typedef enum fv_status {
    FV_OK = 0,
    /* bad parameter: the caller passed something invalid */
    FV_ERR_BAD_PARAM = 100, /* NULL where not allowed, value out of range */
    FV_ERR_BAD_SHAPE = 101, /* tensor shapes or dtypes do not fit the op */
    FV_ERR_BAD_STATE = 102, /* call not valid in the object's current state */
    /* not supported: valid, but this build, backend or device cannot do it */
    FV_ERR_NOT_SUPPORTED = 200,
    FV_ERR_NO_DEVICE = 201, /* no usable GPU (or no CUDA in this build) */
    /* out of memory: a pool or a backing allocation */
    FV_ERR_OUT_OF_MEMORY = 300,
    /* device or library error: CUDA, cuDNN, a codec library */
    FV_ERR_CUDA = 400,
    FV_ERR_CUDNN = 401,
    FV_ERR_LIBRARY = 402,
    /* I/O: files, cameras, malformed data */
    FV_ERR_IO = 500,
    FV_ERR_FORMAT = 501, /* a malformed or unsupported file/frame format */
    /* not ready: try again later */
    FV_ERR_NOT_READY = 600,
    FV_ERR_TIMEOUT = 601,
    /* end of stream: a source has no more frames */
    FV_ERR_END_OF_STREAM = 700,
    /* internal: a fovea bug; please report it */
    FV_ERR_INTERNAL = 900
} fv_status;

/* Categories of status codes, as fv_status_category_of() gives them. */
typedef enum fv_status_category {
    FV_CATEGORY_OK = 0,
    FV_CATEGORY_BAD_PARAM = 1,
    FV_CATEGORY_NOT_SUPPORTED = 2,
    FV_CATEGORY_OUT_OF_MEMORY = 3,
    FV_CATEGORY_DEVICE = 4,
    FV_CATEGORY_IO = 5,
    FV_CATEGORY_NOT_READY = 6,
    FV_CATEGORY_END_OF_STREAM = 7,
    FV_CATEGORY_INTERNAL = 9
} fv_status_category;

/* The code's name, e.g. "FV_ERR_BAD_SHAPE"; "FV_STATUS_UNKNOWN" for a value
 * that is no fv_status. Never NULL; static storage. */
const char *fv_status_name(fv_status s);

/* The code's category; FV_CATEGORY_INTERNAL for an unknown value. */
fv_status_category fv_status_category_of(fv_status s);

/* The message of the last failed fovea call on this thread ("" if none).
 * Valid until the next fovea call on this thread that fails. Never NULL. */
const char *fv_last_error(void);

/* Clears this thread's last-error message. */
void fv_clear_error(void);

/* For libraries built on fovea (model importers, platform code): records a
 * printf-style message as this thread's last error and returns s, or, with
 * fv_error_prefix, prefixes the current message with "what: ". */
fv_status fv_set_error(fv_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* prefixes the last error with "what: "; returns s */
fv_status fv_error_prefix(fv_status s, const char *what);

#ifdef __cplusplus
}
#endif
#endif
