/* fovea internal: the device profile (persisted engine choices).
 *
 * A profile is a text file:
 *   fovea-profile <1|2>
 *   device <device name, rest of the line>
 *   sm <major*10+minor>
 *   cudnn <cudnnGetVersion() of the library that tuned it>
 *   conv <key> path=<graph|graph-pw|graph-pw16|graph-split|legacy|legacy-fused|direct|gemm>
 * cdecl=<n> engine=<n> ws=<bytes> ms=<float> how=<word> knobs=<t:v,t:v,...|->
 *   plan <bytes> <fnv1a64> <base64>      (version 2 only; optional)
 *   ...
 *   end <number of conv lines>
 * A plan line belongs to the conv line just above it: an opaque blob the
 * backend made for that entry (a serialized cuDNN execution plan), <bytes>
 * long (1..FV__PROFILE_MAX_PLAN), its FNV-1a 64-bit hash in 16 lowercase hex
 * digits, then the bytes in standard base64 with padding. Files with a plan
 * line say version 2; files without one are written as version 1, which
 * older fovea builds read too. Lines other than plan lines are at most
 * FV__PROFILE_LINE bytes; all plans together at most FV__PROFILE_MAX_PLANS
 * bytes. Anything else (unknown version, a malformed or duplicate line, a
 * plan line whose length or hash does not match its data, a missing or wrong
 * end line, a device, SM or cuDNN version other than the context's) makes the
 * whole file ignored, with the reason. */
#ifndef FOVEA_PROFILE_H
#define FOVEA_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include "internal.h"

#define FV__PROFILE_VERSION     2 /* the newest this build reads; writes 1 when it can */
#define FV__PROFILE_LINE        1024
#define FV__PROFILE_KEY         192
#define FV__PROFILE_MAX_KNOBS   16
#define FV__PROFILE_MAX_ENTRIES 4096
/* Plan blobs: one at most, and all of a profile together (H100, cuDNN 9.19:
 * a runtime-fusion plan of a 3x3 conv serializes to about 45 KB). */
#define FV__PROFILE_MAX_PLAN  ((size_t)4 << 20)
#define FV__PROFILE_MAX_PLANS ((size_t)128 << 20)

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

/* An entry's plan blob (data NULL: none). */
typedef struct fv__plan_blob {
    unsigned char *data; /* malloc'd, n bytes */
    size_t n;
} fv__plan_blob;

typedef struct fv__profile {
    char device[128];
    int sm;    /* major*10+minor */
    int cudnn; /* cudnnGetVersion() */
    int n, cap;
    fv__engine_choice *e; /* malloc'd; n used of cap */
    fv__plan_blob *plan;  /* malloc'd, cap slots: plan[i] is e[i]'s */
    size_t plan_bytes;    /* the blobs' total */
} fv__profile;

/* Reads path into *out (which it initializes; free with fv__profile_free
 * even on failure). Checks the header, every line and the end line, and that
 * device/sm/cudnn equal the expected ones (expect NULL: no check). On failure
 * returns FV_ERR_IO (cannot open/read) or FV_ERR_FORMAT (malformed,
 * truncated, mismatched), with why (<= why_n bytes) saying what and at which
 * line; never crashes on any input. */
fv_status fv__profile_load(const char *path, const fv__profile *expect, fv__profile *out, char *why,
                           size_t why_n);
/* Writes p with its plan blobs (version 1 when it has none) to path
 * atomically (path.tmp-XXXXXX in the same folder, then rename). FV_ERR_IO
 * on any write failure (an existing file is left as it was);
 * FV_ERR_BAD_PARAM for a profile that would not load again (e.g. an
 * empty device name). */
fv_status fv__profile_save(const char *path, const fv__profile *p);
/* The entry for key, or NULL. */
const fv__engine_choice *fv__profile_find(const fv__profile *p, const char *key);
/* Adds c, or replaces the entry with the same key (dropping its plan blob:
 * a blob belongs to the choice it was made for). FV_ERR_OUT_OF_MEMORY past
 * FV__PROFILE_MAX_ENTRIES or when malloc fails; FV_ERR_BAD_PARAM for a choice
 * that would not load again (bad key, too many knobs). */
fv_status fv__profile_put(fv__profile *p, const fv__engine_choice *c);
/* The plan blob of key's entry and its size in *n (n may be NULL), or NULL
 * (*n 0) when the entry has none or there is no entry. The profile owns it:
 * valid until the entry is replaced, its blob set again, or the profile
 * freed. */
const unsigned char *fv__profile_plan(const fv__profile *p, const char *key, size_t *n);
/* Gives key's entry a copy of data[0..n) as its plan blob, replacing any;
 * data NULL or n 0 removes it. FV_ERR_BAD_PARAM: p or key NULL, no entry for
 * key, n over FV__PROFILE_MAX_PLAN; FV_ERR_OUT_OF_MEMORY: the profile's blobs
 * would pass FV__PROFILE_MAX_PLANS, or malloc failed (the old blob is then
 * kept). */
fv_status fv__profile_set_plan(fv__profile *p, const char *key, const void *data, size_t n);
void fv__profile_init(fv__profile *p);
void fv__profile_free(fv__profile *p);

/* The signature of a (normalized) conv2d desc, e.g.
 * "conv2d:n1:h1080:w1920:c3:k32:r5:s5:u1:v1:p2:q2:d1:e1:g1:a1:al0:b1:f16". */
void fv__conv2d_key(const fv_conv2d_desc *d, int has_bias, char *out, size_t n);

#endif
