/* fovea internal: the device profile (persisted engine choices).
 *
 * A profile is a text file:
 *   fovea-profile 1
 *   device <device name, rest of the line>
 *   sm <major*10+minor>
 *   cudnn <cudnnGetVersion() of the library that tuned it>
 *   conv <key> path=<graph|graph-pw|graph-pw16|graph-split|legacy|legacy-fused|direct|gemm>
 * cdecl=<n> engine=<n> ws=<bytes> ms=<float> how=<word> knobs=<t:v,t:v,...|->
 *   ...
 *   end <number of conv lines>
 * Lines are at most FV__PROFILE_LINE bytes. Anything else (unknown version,
 * a malformed or duplicate line, a missing or wrong end line, a device, SM
 * or cuDNN version other than the context's) makes the whole file ignored,
 * with the reason. */
#ifndef FOVEA_PROFILE_H
#define FOVEA_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include "internal.h"

#define FV__PROFILE_VERSION     1
#define FV__PROFILE_LINE        1024
#define FV__PROFILE_KEY         192
#define FV__PROFILE_MAX_KNOBS   16
#define FV__PROFILE_MAX_ENTRIES 4096

/* graph: the fused conv+bias+activation graph; graph-pw: the same with an
 * FP32 bias, and for an op with neither bias nor activation an identity
 * pointwise tail (cuDNN's runtime-fusion engines take only these forms:
 * every pointwise operand of one type, at least one pointwise op);
 * graph-pw16: graph-pw with FP16 intermediates and the FP16 bias (ops with
 * a bias; some configs of the same engines run it faster); graph-split: a bare conv graph
 * followed by fovea's epilogue kernel (bias, activation), which some shapes
 * run faster; legacy: cudnnConvolutionForward and the epilogue kernel;
 * legacy-fused: cudnnConvolutionBiasActivationForward (engine = its algo;
 * only for ops with a bias or an activation other than leaky ReLU);
 * direct: fovea's own tensor-core kernel (engine = its rows per block,
 * cdecl = the channels it reads); gemm: fovea's split-reduction implicit
 * GEMM (engine = output channels a block x 100 + the ways the reduction is
 * split, e.g. 3216). */
typedef enum {
    FV__PATH_GRAPH = 1,
    FV__PATH_LEGACY = 2,
    FV__PATH_GRAPH_SPLIT = 3,
    FV__PATH_DIRECT = 4,
    FV__PATH_LEGACY_FUSED = 5,
    FV__PATH_GEMM = 6,
    FV__PATH_GRAPH_PW = 7,
    FV__PATH_GRAPH_PW16 = 8
} fv__engine_path;

/* "graph", "graph-pw", "graph-pw16", "graph-split", "legacy", "direct",
 * "legacy-fused", "gemm". */
const char *fv__engine_path_name(fv__engine_path p);

typedef struct fv__engine_choice {
    char key[FV__PROFILE_KEY]; /* the op's signature: no spaces (fv__conv2d_key) */
    fv__engine_path path;
    int cdecl_;     /* input channels declared to cuDNN (C, C rounded to 4 or to 8) */
    int64_t engine; /* graph: engine global index; legacy(-fused): algo number */
    int nknobs;
    int64_t knob_type[FV__PROFILE_MAX_KNOBS], knob_value[FV__PROFILE_MAX_KNOBS];
    uint64_t workspace; /* bytes */
    float ms;           /* measured median ms of a forward; 0 when not timed */
    char how[24];       /* "autotune", "heuristics", ... (no spaces) */
} fv__engine_choice;

typedef struct fv__profile {
    char device[128];
    int sm;    /* major*10+minor */
    int cudnn; /* cudnnGetVersion() */
    int n, cap;
    fv__engine_choice *e; /* malloc'd; n used of cap */
} fv__profile;

/* Reads path into *out (which it initializes; free with fv__profile_free
 * even on failure). Checks the header, every line and the end line, and that
 * device/sm/cudnn equal the expected ones (expect NULL: no check). On failure
 * returns FV_ERR_IO (cannot open/read) or FV_ERR_FORMAT (malformed,
 * truncated, mismatched), with why (<= why_n bytes) saying what and at which
 * line; never crashes on any input. */
fv_status fv__profile_load(const char *path, const fv__profile *expect, fv__profile *out, char *why,
                           size_t why_n);
/* Writes p to path atomically (path.tmp-XXXXXX in the same folder, then
 * rename). FV_ERR_IO on any write failure (an existing file is left as it
 * was); FV_ERR_BAD_PARAM for a profile that would not load again (e.g. an
 * empty device name). */
fv_status fv__profile_save(const char *path, const fv__profile *p);
/* The entry for key, or NULL. */
const fv__engine_choice *fv__profile_find(const fv__profile *p, const char *key);
/* Adds c, or replaces the entry with the same key. FV_ERR_OUT_OF_MEMORY past
 * FV__PROFILE_MAX_ENTRIES or when malloc fails; FV_ERR_BAD_PARAM for a choice
 * that would not load again (bad key, too many knobs). */
fv_status fv__profile_put(fv__profile *p, const fv__engine_choice *c);
void fv__profile_init(fv__profile *p);
void fv__profile_free(fv__profile *p);

/* The signature of a (normalized) conv2d desc, e.g.
 * "conv2d:n1:h1080:w1920:c3:k32:r5:s5:u1:v1:p2:q2:d1:e1:g1:a1:al0:b1:f16". */
void fv__conv2d_key(const fv_conv2d_desc *d, int has_bias, char *out, size_t n);

#endif
