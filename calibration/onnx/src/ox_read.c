/* Reading model bytes and checking their protobuf wire structure before
 * protobuf-c unpacks them. protobuf-c recurses into nested messages with no
 * depth limit, so a file of a few MB nesting messages deeply would overflow
 * the stack; the walk below follows the generated descriptors (which fields
 * are messages) and refuses more than FV__OX_MAX_WIRE_DEPTH levels. It only
 * validates: the model itself is parsed by protobuf-c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ox.h"

fv_status fv__ox_read_file(const char *path, size_t max, uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *f = NULL;
    const char *kind = NULL;
    int e = fv__fopen_regular(path, &f, &kind);
    if (e < 0) return fv__ox_fail(FV_ERR_IO, "'%s' is %s, not a regular file", path, kind);
    if (e > 0) return fv__ox_fail(FV_ERR_IO, "cannot open '%s': %s", path, strerror(e));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return fv__ox_fail(FV_ERR_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)max) {
        fclose(f);
        return fv__ox_fail(FV_ERR_FORMAT, "'%s' is %lld bytes, more than the %zu accepted", path,
                           (long long)st.st_size, max);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return fv__ox_fail(FV_ERR_OUT_OF_MEMORY, "'%s': cannot allocate %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    int err = ferror(f);
    fclose(f);
    if (got != n || err) {
        free(buf);
        return fv__ox_fail(FV_ERR_IO, "cannot read '%s' (%zu of %zu bytes)", path, got, n);
    }
    *data = buf;
    *size = n;
    return FV_OK;
}

/* A varint at *p (< end); 0 on success. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end) return -1;
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static fv_status walk(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *d,
                      int depth) {
    if (depth > FV__OX_MAX_WIRE_DEPTH)
        return fv__ox_fail(FV_ERR_FORMAT, "model: messages nested more than %d deep",
                           FV__OX_MAX_WIRE_DEPTH);
    while (p < end) {
        uint64_t key, len = 0;
        if (varint(&p, end, &key))
            return fv__ox_fail(FV_ERR_FORMAT, "model: truncated or corrupt protobuf (a tag)");
        unsigned wt = (unsigned)(key & 7);
        uint64_t field = key >> 3;
        if (field == 0 || field > 0x1fffffff)
            return fv__ox_fail(FV_ERR_FORMAT, "model: corrupt protobuf (field number %llu)",
                               (unsigned long long)field);
        switch (wt) {
        case 0:
            if (varint(&p, end, &len))
                return fv__ox_fail(FV_ERR_FORMAT, "model: truncated protobuf (a varint)");
            break;
        case 1:
            if ((size_t)(end - p) < 8)
                return fv__ox_fail(FV_ERR_FORMAT, "model: truncated protobuf (a fixed64)");
            p += 8;
            break;
        case 5:
            if ((size_t)(end - p) < 4)
                return fv__ox_fail(FV_ERR_FORMAT, "model: truncated protobuf (a fixed32)");
            p += 4;
            break;
        case 2: {
            if (varint(&p, end, &len) || len > (uint64_t)(end - p))
                return fv__ox_fail(FV_ERR_FORMAT,
                                   "model: truncated protobuf (a length of %llu bytes where %zu "
                                   "remain)",
                                   (unsigned long long)len, (size_t)(end - p));
            const ProtobufCFieldDescriptor *fd =
                d ? protobuf_c_message_descriptor_get_field(d, (unsigned)field) : NULL;
            if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
                fv_status s =
                    walk(p, p + len, (const ProtobufCMessageDescriptor *)fd->descriptor, depth + 1);
                if (s != FV_OK) return s;
            }
            p += len;
            break;
        }
        default:
            return fv__ox_fail(FV_ERR_FORMAT, "model: corrupt protobuf (wire type %u)", wt);
        }
    }
    return FV_OK;
}

fv_status fv__ox_check_wire(const uint8_t *buf, size_t len) {
    return walk(buf, buf + len, &onnx__model_proto__descriptor, 0);
}
