/* fv_onnx_tensor_read: a serialized TensorProto file (ONNX's test data
 * format) into floats or int64s, through the same checks as initializers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ox.h"

void fv_onnx_tensor_free(fv_onnx_tensor *t) {
    if (!t) return;
    free(t->data);
    free(t->int_data);
    memset(t, 0, sizeof *t);
}

fv_status fv_onnx_tensor_read(const char *path, fv_onnx_tensor *out) {
    fv__ox_clear_error();
    if (out) memset(out, 0, sizeof *out);
    if (!path || !out) return fv__ox_fail(FV_ERR_BAD_PARAM, "fv_onnx_tensor_read: NULL argument");
    uint8_t *buf;
    size_t size;
    fv_status s = fv__ox_read_file(path, (size_t)1 << 31, &buf, &size);
    if (s != FV_OK) return s;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, size, buf);
    free(buf);
    if (!t) return fv__ox_fail(FV_ERR_FORMAT, "'%s' is not a TensorProto", path);
    fv__ox ox;
    memset(&ox, 0, sizeof ox);
    fv__ox_value v;
    memset(&v, 0, sizeof v);
    v.name = t->name ? t->name : "";
    char what[512];
    snprintf(what, sizeof what, "'%.400s'", path);
    s = fv__ox_tensor_load(&ox, t, what, &v);
    if (s == FV_OK) {
        snprintf(out->name, sizeof out->name, "%s", v.name);
        out->elem_type = t->has_data_type ? t->data_type : 0;
        out->rank = v.rank;
        memcpy(out->dims, v.dims, sizeof out->dims);
        out->count = v.count;
        out->data = v.f;
        out->int_data = v.i;
    } else {
        fv__ox_const_free(&v);
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    return s;
}
