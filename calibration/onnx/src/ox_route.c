/* Concat, Softmax and Resize/Upsample. Concat and Softmax along an axis
 * other than C run between reshapes that make that axis C. */
#include <math.h>
#include <string.h>
#include "ox.h"

fv_status fv__ox_concat(fv__ox *ox, const Onnx__NodeProto *n) {
    int cnt = 0, ids[FV_NET_MAX_CONCAT];
    fv__ox_value *a0 = NULL;
    for (size_t k = 0; k < n->n_input; k++)
        if (fv__ox_in(ox, n, (int)k)) cnt++;
    if (cnt < 1 || cnt > FV_NET_MAX_CONCAT)
        return fv__ox_node_fail(ox, n, cnt ? FV_ERR_NOT_SUPPORTED : FV_ERR_FORMAT,
                                "%d inputs (fovea concatenates 1 to %d)", cnt, FV_NET_MAX_CONCAT);
    fv_status s;
    int64_t od[FV_ONNX_MAX_RANK];
    int axis = 0, m = 0;
    for (size_t k = 0; k < n->n_input; k++) {
        fv__ox_value *a;
        if (!fv__ox_in(ox, n, (int)k)) continue;
        if ((s = fv__ox_in_runtime(ox, n, (int)k, 1, 4, &a)) != FV_OK) return s;
        if (!a0) {
            a0 = a;
            if ((s = fv__ox_axis(ox, n, fv__ox_attr_int(n, "axis", 1), a->rank, &axis)) != FV_OK)
                return s;
            memcpy(od, a->dims, sizeof od);
            od[axis] = 0;
        }
        int ok = a->rank == a0->rank;
        for (int i = 0; ok && i < a->rank; i++)
            ok = i == axis || a->dims[i] == a0->dims[i];
        if (!ok) {
            char b1[160], b2[160];
            return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE,
                                    "input %zu %s does not fit input 0 %s along axis %d", k,
                                    fv__ox_dims_str(a->rank, a->dims, b1, sizeof b1),
                                    fv__ox_dims_str(a0->rank, a0->dims, b2, sizeof b2), axis);
        }
        od[axis] += a->dims[axis];
        if ((s = fv__ox_axis_to_c(ox, n, a->tensor, a->rank, a->dims, axis, ":rows", &ids[m++])) !=
            FV_OK)
            return s;
    }
    int id, d[4];
    if (cnt == 1) {
        id = ids[0];
        ox->rep->removed++;
    } else {
        if ((s = fv_net_add_concat(ox->b, fv__ox_layer_name(ox, n, NULL), ids, cnt, &id)) != FV_OK)
            return fv__ox_builder_fail(ox, n, s);
        ox->rep->layers++;
    }
    fv__ox_dims4(a0->rank, od, d);
    if ((s = fv__ox_reshape4(ox, n, id, d, ":unrows", &id)) != FV_OK) return s;
    return fv__ox_set_runtime(ox, n, 0, id, a0->rank, od);
}

/* Opset 13+: over one axis. Before 13: over the flattened axes from axis on. */
fv_status fv__ox_softmax(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x;
    fv_status s = fv__ox_in_runtime(ox, n, 0, 1, 4, &x);
    if (s != FV_OK) return s;
    int axis, id, d[4];
    if ((s = fv__ox_axis(ox, n, fv__ox_attr_int(n, "axis", ox->opset >= 13 ? -1 : 1), x->rank,
                         &axis)) != FV_OK)
        return s;
    int r = x->rank;
    int64_t flat[2];
    if (ox->opset < 13 && axis < r - 1) { /* (outer, rest): softmax over rest */
        flat[0] = fv__ox_count(axis, x->dims, FV_NET_MAX_DIM);
        flat[1] = fv__ox_count(r - axis, x->dims + axis, FV_NET_MAX_DIM);
        if (flat[0] < 0 || flat[1] < 0)
            return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "softmax over too many values");
        fv__ox_dims4(2, flat, d);
        if ((s = fv__ox_reshape4(ox, n, x->tensor, d, ":rows", &id)) != FV_OK) return s;
    } else if ((s = fv__ox_axis_to_c(ox, n, x->tensor, r, x->dims, axis, ":rows", &id)) != FV_OK) {
        return s;
    }
    if ((s = fv_net_add_softmax(ox->b, fv__ox_layer_name(ox, n, NULL), id, &id)) != FV_OK)
        return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    fv__ox_dims4(r, x->dims, d);
    if ((s = fv__ox_reshape4(ox, n, id, d, ":unrows", &id)) != FV_OK) return s;
    return fv__ox_set_runtime(ox, n, 0, id, r, x->dims);
}

static int pick(const char *v, const char *const *names, int count) {
    for (int i = 0; i < count; i++)
        if (!strcmp(v, names[i])) return i;
    return -1;
}

fv_status fv__ox_resize(fv__ox *ox, const Onnx__NodeProto *n) {
    fv__ox_value *x, *vs = NULL, *vz = NULL;
    fv_status s = fv__ox_in_runtime(ox, n, 0, 3, 4, &x);
    if (s != FV_OK) return s;
    int upsample = !strcmp(n->op_type, "Upsample");
    if (upsample)
        s = fv__ox_in_const(ox, n, 1, 0, &vs);
    else if ((s = fv__ox_in_const(ox, n, 2, 1, &vs)) == FV_OK)
        s = fv__ox_in_const(ox, n, 3, 1, &vz);
    if (s != FV_OK) return s;
    if (vs && vs->count == 0) vs = NULL;
    if (vz && vz->count == 0) vz = NULL;
    int r = x->rank;
    int64_t axes[FV_ONNX_MAX_RANK];
    int na;
    if ((s = fv__ox_attr_ints(ox, n, "axes", axes, FV_ONNX_MAX_RANK, &na, -r, r - 1)) != FV_OK)
        return s;
    if (!na)
        for (na = 0; na < r; na++)
            axes[na] = na;
    if (!!vs == !!vz || (vs && (vs->is_int || (int)vs->count != na)) ||
        (vz && (!vz->is_int || (int)vz->count != na)))
        return fv__ox_node_fail(ox, n, FV_ERR_FORMAT,
                                "give either scales (floats) or sizes (ints), one per axis (%d)",
                                na);
    char b1[32], b2[48], b3[32], b4[32];
    const char *mode = fv__ox_attr_str(n, "mode", "nearest", b1, sizeof b1);
    const char *coord = fv__ox_attr_str(n, "coordinate_transformation_mode",
                                        upsample ? "asymmetric" : "half_pixel", b2, sizeof b2);
    const char *nearest = fv__ox_attr_str(n, "nearest_mode",
                                          upsample ? "floor" : "round_prefer_floor", b3, sizeof b3);
    const char *policy = fv__ox_attr_str(n, "keep_aspect_ratio_policy", "stretch", b4, sizeof b4);
    static const char *const modes[] = {"nearest", "linear", "bilinear"};
    static const char *const coords[] = {"half_pixel", "align_corners", "asymmetric",
                                         "pytorch_half_pixel"};
    static const char *const rounds[] = {"floor", "round_prefer_floor", "round_prefer_ceil",
                                         "ceil"};
    int im = pick(mode, modes, 3), ic = pick(coord, coords, 4), ir = pick(nearest, rounds, 4);
    if (im < 0 || ic < 0 || ir < 0 || strcmp(policy, "stretch"))
        return fv__ox_node_fail(
            ox, n, FV_ERR_NOT_SUPPORTED,
            "mode '%s', coordinate_transformation_mode '%s', nearest_mode '%s', "
            "keep_aspect_ratio_policy '%s' (fovea: nearest or linear; "
            "half_pixel, pytorch_half_pixel, align_corners or asymmetric)",
            mode, coord, nearest, policy);
    double scale[FV_ONNX_MAX_RANK];
    int64_t od[FV_ONNX_MAX_RANK];
    for (int i = 0; i < r; i++)
        od[i] = x->dims[i], scale[i] = 1.0;
    for (int k = 0; k < na; k++) {
        int a;
        if ((s = fv__ox_axis(ox, n, axes[k], r, &a)) != FV_OK) return s;
        if (vz) {
            od[a] = vz->i[k];
            scale[a] = (double)od[a] / (double)x->dims[a];
        } else {
            scale[a] = vs->f[k];
            double o = floor((double)x->dims[a] * scale[a]);
            if (!(scale[a] > 0) || !(o >= 1 && o <= FV_NET_MAX_DIM))
                return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE, "scale %g on axis %d of size %lld",
                                        scale[a], a, (long long)x->dims[a]);
            od[a] = (int64_t)o;
        }
        if (od[a] < 1 || od[a] > FV_NET_MAX_DIM)
            return fv__ox_node_fail(ox, n, FV_ERR_BAD_SHAPE, "output size %lld on axis %d",
                                    (long long)od[a], a);
    }
    if (od[0] != x->dims[0] || od[1] != x->dims[1])
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED,
                                "resizing N or C (fovea resizes the spatial axes)");
    if (fv__ox_attr_int(n, "antialias", 0) && (scale[2] < 1 || (r > 3 && scale[3] < 1)))
        return fv__ox_node_fail(ox, n, FV_ERR_NOT_SUPPORTED, "antialiased downscaling");
    fv_net_resize_desc d;
    memset(&d, 0, sizeof d);
    d.name = fv__ox_layer_name(ox, n, NULL);
    d.mode = im == 0 ? FV_NET_RESIZE_NEAREST : FV_NET_RESIZE_BILINEAR;
    static const fv_net_resize_coord cmap[] = {FV_NET_COORD_HALF_PIXEL, FV_NET_COORD_ALIGN_CORNERS,
                                               FV_NET_COORD_ASYMMETRIC,
                                               FV_NET_COORD_PYTORCH_HALF_PIXEL};
    static const fv_net_nearest_round rmap[] = {
        FV_NET_NEAREST_FLOOR, FV_NET_NEAREST_ROUND_PREFER_FLOOR, FV_NET_NEAREST_ROUND_PREFER_CEIL,
        FV_NET_NEAREST_CEIL};
    d.coord = cmap[ic];
    if (vs && ic == 1) {
        /* ONNX's align_corners with scales maps x to x (in - 1) / (in * scale - 1),
         * in * scale unrounded: asymmetric (x / s) with that s */
        for (int a = 2; a < r; a++) {
            double lr = (double)x->dims[a] * scale[a] - 1, li = (double)x->dims[a] - 1;
            scale[a] = li > 0 && lr > 0 ? lr / li : 1e30;
        }
        d.coord = FV_NET_COORD_ASYMMETRIC;
    }
    d.nearest = rmap[ir];
    d.out_h = (int)od[2];
    d.out_w = r > 3 ? (int)od[3] : 1;
    if (vs) {
        d.scale_h = (float)scale[2];
        d.scale_w = r > 3 ? (float)scale[3] : 1.0f;
    }
    int id;
    if ((s = fv_net_add_resize(ox->b, &d, x->tensor, &id)) != FV_OK)
        return fv__ox_builder_fail(ox, n, s);
    ox->rep->layers++;
    return fv__ox_set_runtime(ox, n, 0, id, r, od);
}
