/* test://'s query string: "image=PATH&fps=N&frames=N&items=N&fashion=PATH".
 * Apart from source_test.c so that it can be checked (and fuzzed) without
 * opening a photo. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "io_internal.h"

fv_status fv__test_query_parse(const char *query, fv__test_query *q, char *buf, size_t bufsize) {
    const char *op = "source_open: test://";
    if (strlen(query) >= bufsize)
        return fv__error(FV_ERR_BAD_PARAM, "%s: query of %zu characters is too long", op,
                         strlen(query));
    strcpy(buf, query);
    for (char *save = NULL, *kv = strtok_r(buf, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return fv__error(FV_ERR_BAD_PARAM, "%s: '%s' in the query is not key=value", op, kv);
        *eq = '\0';
        const char *v = eq + 1;
        char *end = NULL;
        errno = 0;
        if (strcmp(kv, "image") == 0) {
            if (!*v) return fv__error(FV_ERR_BAD_PARAM, "%s: image= needs a path", op);
            if (strlen(v) >= FV__TEST_PATH_MAX)
                return fv__error(FV_ERR_BAD_PARAM, "%s: image path of %zu characters is too long",
                                 op, strlen(v));
            q->image = v;
        } else if (strcmp(kv, "fps") == 0) {
            double r = strtod(v, &end);
            if (!*v || *end || errno || !(r >= 0 && r <= 10000))
                return fv__error(FV_ERR_BAD_PARAM,
                                 "%s: fps=%s: must be a number in [0, 10000] (0: unpaced)", op, v);
            q->rate = r;
        } else if (strcmp(kv, "frames") == 0) {
            long long n = strtoll(v, &end, 10);
            if (!*v || *end || errno || n < 1)
                return fv__error(FV_ERR_BAD_PARAM, "%s: frames=%s: must be an integer >= 1", op, v);
            q->frames = n;
        } else if (strcmp(kv, "items") == 0) {
            long n = strtol(v, &end, 10);
            if (!*v || *end || errno || n < 0 || n > 8)
                return fv__error(FV_ERR_BAD_PARAM, "%s: items=%s: must be an integer 0..8", op, v);
            q->items = (int)n;
        } else if (strcmp(kv, "fashion") == 0) {
            if (!*v || strlen(v) >= FV__TEST_PATH_MAX)
                return fv__error(FV_ERR_BAD_PARAM, "%s: fashion= needs a path (shorter than %d)",
                                 op, FV__TEST_PATH_MAX);
            q->fashion = v;
        } else {
            return fv__error(FV_ERR_BAD_PARAM,
                             "%s: unknown query key '%s' (known: image, fps, frames, items, "
                             "fashion)",
                             op, kv);
        }
    }
    return FV_OK;
}
