/* net_models: ResNet-18, MobileNetV2 and a small UNet built through fovea's
 * net builder (fovea/net.h), with weights from FVW1 files that
 * net_models.py (beside this file) writes from the same nets in PyTorch.
 * Shared by fovea-bench net and the tests; app-side code, not installed.
 *
 * FVW1, little endian:
 *     char magic[4] = "FVW1"; u32 count;
 *     count records: u32 name_len (1 .. 1024); char name[name_len] (no NUL);
 *                    u32 ndims (0 .. 8); i64 dims[ndims] (each 1 .. 2^31-1);
 *                    f32 data[product of dims] (row-major, PyTorch's order)
 *     nothing after the last record; names unique.
 * Weights are keyed by PyTorch's state_dict names ("layer1.0.conv1.weight";
 * BatchNorm as weight = gamma, bias = beta, running_mean, running_var, with
 * eps 1e-5). A case's input and reference output are an FVW1 file too
 * ("input" (N, 3, H, W) and "output" (N, K) or (N, K, H, W)).
 *
 * Every fallible call returns an fv_status and on failure leaves a message
 * with the specifics (the file, the tensor, the layer; where an SDK call
 * failed, its own message prefixed with the net, the call and the layer) as
 * fovea's last error: fv_last_error(). */
#ifndef FV_NET_MODELS_H
#define FV_NET_MODELS_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/fovea.h"
#include "fovea/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- FVW1 files ------------------------------------------------------------ */
enum { FV_MODELS_MAX_DIMS = 8, FV_MODELS_MAX_NAME = 1024 };

typedef struct fv_models_tensor {
    const char *name;
    int ndims;
    int64_t dims[FV_MODELS_MAX_DIMS];
    size_t count;      /* product of dims (1 for ndims 0) */
    const float *data; /* count values */
} fv_models_tensor;

typedef struct fv_models_file fv_models_file;

/* Reads a whole FVW1 file. FV_ERR_IO when it cannot be opened or read,
 * FV_ERR_FORMAT when it is not FVW1, is truncated or corrupt (the offset and
 * what was wrong: bad magic, a length out of range, a duplicate name, bytes
 * after the last record), FV_ERR_OUT_OF_MEMORY. */
fv_status fv_models_file_load(const char *path, fv_models_file **out);
void fv_models_file_destroy(fv_models_file *f); /* NULL ok */
int fv_models_file_count(const fv_models_file *f);
/* Tensor i (0 .. count-1) in file order, owned by f; NULL for a bad i. */
const fv_models_tensor *fv_models_file_tensor(const fv_models_file *f, int i);
/* The tensor `name` with ndims dims, each equal to want[i] or anything where
 * want[i] < 0 (want NULL: any shape, any ndims). FV_ERR_FORMAT when the file
 * has no such tensor, FV_ERR_BAD_SHAPE when its shape differs (both naming
 * the file, the tensor and the shapes). */
fv_status fv_models_file_get(const fv_models_file *f, const char *name, int ndims,
                             const int64_t *want, const fv_models_tensor **out);
/* Writes count tensors as an FVW1 file (tests make bad files with it).
 * FV_ERR_BAD_PARAM for a name or shape FVW1 cannot hold, FV_ERR_IO. */
fv_status fv_models_file_save(const char *path, const fv_models_tensor *t, int count);

/* ---- the nets ---------------------------------------------------------------- */
typedef enum fv_models_arch {
    FV_MODELS_RESNET18 = 0,     /* torchvision.models.resnet18: logits (N, K) */
    FV_MODELS_MOBILENET_V2 = 1, /* torchvision.models.mobilenet_v2: logits (N, K) */
    FV_MODELS_UNET = 2          /* net_models.py's UNet: (N, classes, H, W); H, W divide by 8 */
} fv_models_arch;
enum { FV_MODELS_ARCH_COUNT = 3 };

/* "resnet18", "mobilenet_v2", "unet" (net_models.py's names); "?" otherwise. */
const char *fv_models_arch_name(fv_models_arch a);
/* The arch of a name as above; FV_ERR_BAD_PARAM otherwise. */
fv_status fv_models_arch_parse(const char *name, fv_models_arch *out);

typedef struct fv_models_net {
    int input, output; /* tensor ids in the builder: the input "image", the output */
    int out_c, out_h, out_w;
    int classes;  /* K of the classifier, or the UNet's classes */
    int width;    /* the UNet's base width (from the weights); 0 for the others */
    int layers;   /* layers added to the builder */
    double gmacs; /* multiply-adds of the convolutions and fc, 1e9, batch included */
} fv_models_net;

/* Adds the net to b: an input "image" (n, 3, h, w), the layers (named after
 * PyTorch's modules: "layer1.0.conv1", "layer1.0.bn1", ...) and an output
 * ("logits" or "segmentation"), with weights from wts; classes and the UNet's
 * width come from the weights' shapes. The layers go in as PyTorch computes
 * them (conv, batchnorm, activation, add...): fusing them is fv_net_create's
 * job. n, h, w: 1 .. 4096 (the UNet's h, w divisible by 8). info may be NULL.
 * Returns FV_ERR_BAD_PARAM (sizes), FV_ERR_FORMAT (a tensor is missing),
 * FV_ERR_BAD_SHAPE (a tensor's shape is not the net's), or what the builder
 * returned (the layer named). On failure b may hold part of the net:
 * destroy it. */
fv_status fv_models_build(fv_net_builder *b, fv_models_arch arch, const fv_models_file *wts, int n,
                          int h, int w, fv_models_net *info);

/* fv_models_build into a fresh builder, then fv_net_create(ctx, .., desc).
 * info may be NULL. */
fv_status fv_models_net_create(fv_context *ctx, fv_models_arch arch, const fv_models_file *wts,
                               int n, int h, int w, const fv_net_desc *desc, fv_net **out,
                               fv_models_net *info);

/* ---- checking against PyTorch ------------------------------------------------ */
typedef struct fv_models_check {
    double rel_l2;      /* ||net - ref|| / ||ref||; +inf when the net gave NaN or Inf */
    double max_abs_err; /* largest |net - ref| */
    double max_abs;     /* largest |net| */
    double ref_rms;     /* sqrt(mean(ref^2)) */
    size_t count;       /* values compared */
} fv_models_check;

/* Uploads io's "input" (N, C, H, W, the net's input 0 shape) into the net,
 * runs fv_net_forward once, downloads output 0 and compares it with io's
 * "output" (NCHW, or (N, K) for a (N, K, 1, 1) output). FV_ERR_FORMAT /
 * FV_ERR_BAD_SHAPE when io lacks the tensors or their shapes are not the
 * net's; SDK failures as they come. */
fv_status fv_models_check_io(fv_net *net, const fv_models_file *io, fv_models_check *out);

/* NCHW <-> NHWC of dense float arrays (no overlap). */
void fv_models_nchw_to_nhwc(const float *src, int n, int c, int h, int w, float *dst);
void fv_models_nhwc_to_nchw(const float *src, int n, int c, int h, int w, float *dst);

#ifdef __cplusplus
}
#endif
#endif
