/* fovea: the context. It owns the backend and device choice, the streams,
 * the memory pools, the cuDNN handle and the log callback.
 *
 * One context per thread per device: a context and everything made from it
 * (pools, tensors, ops, filters, pipelines, frame buffers, nets, timers) take
 * one thread at a time. A context may move between threads between calls.
 * What is guaranteed when two threads use one context at once: every call
 * that takes the context or an object made from it holds the context for
 * its duration; a call from another thread meanwhile changes nothing and
 * returns FV_ERR_BAD_STATE ("fv_net_forward: the context is in use by
 * another thread"), and the void destroys (fv_tensor_destroy, ...) wait for
 * the other call to end instead. Calls that take no context (fp16, status,
 * fv_image_bytes, fv_net_builder_*) hold nothing, nor do the getters of what
 * is fixed at creation (fv_context_info_get, fv_context_backend,
 * fv_pool_kind_of, fv_pool_name, fv_pool_device_pointer,
 * fv_conv2d_output_shape, fv_frame_buffer_image, fv_net_input_count,
 * fv_net_output_count): any thread may call those. A builder, like a
 * context, takes one thread at a time, which nothing checks. The hold costs
 * one atomic compare-and-swap per call.
 */
#ifndef FOVEA_CONTEXT_H
#define FOVEA_CONTEXT_H

#include <stddef.h>
#include <stdint.h>
#include "fovea/status.h"
#include "fovea/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device, its streams, pools, log callback and engine cache; one per thread per device.
 * Opaque. */
typedef struct fv_context fv_context;
/* A memory pool: one backing allocation that carve-outs come from (fovea/pool.h). Opaque. */
typedef struct fv_pool fv_pool;

/* Where a context runs its ops. */
typedef enum fv_backend {
    FV_BACKEND_AUTO = 0, /* CUDA when a usable GPU exists, else CPU */
    FV_BACKEND_CPU = 1,  /* FP32 reference backend; always available */
    FV_BACKEND_CUDA = 2  /* CUDA + cuDNN; FV_ERR_NO_DEVICE when unusable */
} fv_backend;

/* Log message levels; a context passes messages up to its desc's log_level. */
typedef enum fv_log_level {
    FV_LOG_ERROR = 0,
    FV_LOG_WARN = 1,
    FV_LOG_INFO = 2,
    FV_LOG_DEBUG = 3
} fv_log_level;

/* Log callback. msg is a single line without a trailing newline, valid only
 * during the call. The SDK never prints on its own: without a callback,
 * messages are dropped. */
typedef void (*fv_log_fn)(fv_log_level level, const char *msg, void *user);

/* Context flags. */
enum {
    /* CPU backend: round the outputs of every op on F32 tensors to FP16
     * values, and weights too, so the CPU backend mirrors GPU storage
     * (FP16 tensors, FP32 arithmetic). Ops on F16 tensors always do. */
    FV_CONTEXT_CPU_ROUND_F16 = 1u << 0
};

/* Where frames (camera input, images in and out) live, and how they reach
 * the GPU. fv_frame_buffer_create (frame.h) follows the context's policy.
 * On the CPU backend every pool is host memory: AUTO resolves to DEVICE
 * (the "device" being host memory, copies being memcpy) and ZERO_COPY is
 * accepted (its mapped pool is host memory too); outputs are the same. */
typedef enum fv_memory_policy {
    /* ZERO_COPY on integrated GPUs (Jetson: cudaDeviceProp.integrated, or
     * /etc/nv_tegra_release present), DEVICE otherwise. */
    FV_MEMORY_POLICY_AUTO = 0,
    /* Frames in the context's MAPPED pool (page-locked host memory the GPU
     * reads in place): no upload, no download. Needs a device that can map
     * host memory, else context creation gives FV_ERR_NOT_SUPPORTED. */
    FV_MEMORY_POLICY_ZERO_COPY = 1,
    /* Frames in the DEVICE pool, filled and read through PINNED staging
     * buffers with asynchronous copies (discrete GPUs). */
    FV_MEMORY_POLICY_DEVICE = 2
} fv_memory_policy;

/* Zero means default for every field. */
typedef struct fv_context_desc {
    fv_backend backend; /* default AUTO */
    int device;         /* CUDA device index; default 0 */
    /* Sizes of the context's own pools, reserved at creation with one
     * backing allocation each. A pool whose size is 0 gets its default:
     * device 256 MiB, pinned 64 MiB, host 64 MiB. mapped_pool_bytes
     * defaults to 0 (no mapped pool) on discrete GPUs and 64 MiB on
     * integrated ones, or when memory_policy resolves to ZERO_COPY. On the
     * CPU backend every pool is plain host memory. */
    size_t device_pool_bytes;
    size_t pinned_pool_bytes; /* 0: 64 MiB */
    size_t mapped_pool_bytes; /* 0: 0, or 64 MiB (see above) */
    size_t host_pool_bytes;   /* 0: 64 MiB */
    /* Most workspace a convolution engine may use (carved from the DEVICE
     * pool; one region shared by all ops of the context). 0 means 64 MiB.
     * Jetson memory is shared with the CPU: keep it small there. */
    size_t workspace_limit_bytes;
    /* A device profile written by fovea-calibrate (or fv_context_profile_save):
     * convolution engines chosen ahead of time, keyed by device, SM, cuDNN
     * version and each op's signature, with the compiled plans of cuDNN's
     * runtime-compiled engines (ops then skip compiling them; a plan that
     * no longer loads is compiled again). NULL: none. A missing, corrupt,
     * truncated or mismatched profile is ignored with a warning through the
     * log callback naming the reason; it never fails context creation. */
    const char *profile_path;
    /* Where frames live (frame.h); default AUTO. */
    fv_memory_policy memory_policy;
    fv_log_fn log;          /* NULL: messages dropped */
    void *log_user;         /* passed to log */
    fv_log_level log_level; /* highest level delivered; default ERROR (0) */
    uint32_t flags;         /* FV_CONTEXT_* */
    uint32_t reserved[8];   /* must be zero */
} fv_context_desc;

/* What a context runs on. Strings are NUL-terminated and owned by the
 * struct (fixed arrays). */
typedef struct fv_context_info {
    fv_backend backend;           /* CPU or CUDA, never AUTO */
    char backend_name[16];        /* "cpu" or "cuda" */
    char device_name[128];        /* GPU name, or the CPU model */
    int device_index;             /* CUDA device, -1 on CPU */
    int sm_major, sm_minor;       /* compute capability, 0 on CPU */
    int multiprocessors;          /* SMs, or CPU threads online on CPU */
    int integrated;               /* 1 on integrated GPUs (Jetson), else 0 */
    int tegra;                    /* 1 when /etc/nv_tegra_release exists (Jetson's L4T) */
    int tensor_cores;             /* 1 when the FP16 tensor-core path is usable */
    char tensor_core_reason[160]; /* why tensor cores are off, "" when on */
    size_t device_memory_total;   /* bytes; host RAM on CPU */
    size_t device_memory_free;    /* bytes free at creation */
    /* Versions as MAJOR*1000+MINOR*10 for CUDA (12060 = 12.6), as cuDNN's
     * own number for cuDNN (e.g. 91400 = 9.14.0); 0 when absent. */
    int cuda_runtime_compiled, cuda_runtime_loaded, cuda_driver;
    int cudnn_compiled, cudnn_loaded; /* cuDNN: the headers built against, the library loaded */
    int fovea_built_with_cuda;        /* 1 if this library has its CUDA backend */
    char no_gpu_reason[160];          /* when AUTO chose CPU: why; else "" */
    /* The desc's memory_policy resolved: ZERO_COPY or DEVICE, never AUTO. */
    fv_memory_policy memory_policy;
    uint32_t reserved[16]; /* reserved for growth */
} fv_context_info;

/* Creates a context. desc may be NULL (all defaults). On success *out owns
 * the context; destroy it with fv_context_destroy.
 * Returns FV_ERR_BAD_PARAM (out NULL, bad field, reserved not zero),
 * FV_ERR_NO_DEVICE (CUDA asked but no usable GPU, or no CUDA in this
 * build), FV_ERR_NOT_SUPPORTED (memory_policy ZERO_COPY on a GPU that cannot
 * map host memory), FV_ERR_OUT_OF_MEMORY (a pool could not be reserved),
 * FV_ERR_CUDA, FV_ERR_CUDNN. */
fv_status fv_context_create(const fv_context_desc *desc, fv_context **out);

/* How many CUDA devices this process sees: the indices 0 .. *count - 1 that
 * fv_context_desc.device takes (cudaGetDeviceCount, after
 * CUDA_VISIBLE_DEVICES). 0 with FV_OK where there is no GPU or no NVIDIA
 * driver, and where this fovea was built without CUDA. A device counted may
 * still be unusable (a GPU older than sm_53, none of this build's kernel
 * images): fv_context_create on it fails and says why. Makes no context.
 * Returns FV_ERR_BAD_PARAM (count NULL), FV_ERR_CUDA (the driver failed
 * otherwise; *count is 0). */
fv_status fv_cuda_device_count(int *count);

/* Waits for the context's work, frees its pools and handles. NULL is allowed
 * (FV_OK). Every object made from the context (pools, tensors, conv2d ops,
 * filters, pipelines, frame buffers, nets, classify and segment ops, timers)
 * must be destroyed first: while any is alive the call changes nothing and
 * returns FV_ERR_BAD_STATE, the message naming what is alive and how many
 * ("still alive: 2 tensors, 1 conv2d"); destroy those, then call it again.
 * Returns FV_OK when the context is gone. */
fv_status fv_context_destroy(fv_context *ctx);

/* Fills *info. Returns FV_ERR_BAD_PARAM if either is NULL. */
fv_status fv_context_info_get(const fv_context *ctx, fv_context_info *info);

/* The backend the context runs on (never AUTO). */
fv_backend fv_context_backend(const fv_context *ctx);

/* Blocks until all work queued on the context's streams has finished; the
 * first asynchronous error, if any, is returned here. */
fv_status fv_context_synchronize(fv_context *ctx);

/* Writes the context's engine choices (loaded from its profile, made by
 * heuristics, or measured by autotuning), with the serialized plans of the
 * runtime-compiled engines among them, as a profile file, atomically
 * (written beside path, then renamed). Returns FV_ERR_BAD_PARAM, FV_ERR_IO.
 * On the CPU backend the profile has no entries. */
fv_status fv_context_profile_save(fv_context *ctx, const char *path);

/* Why the context's profile was not used ("" when it was, or none was
 * given), and how many entries it holds. Either pointer may be NULL. */
void fv_context_profile_status(const fv_context *ctx, const char **why_ignored, int *entries);

/* The context's own pools (never NULL for a valid context, except
 * FV_POOL_MAPPED when the context has no mapped pool). */
typedef enum fv_pool_kind {
    FV_POOL_DEVICE = 0, /* GPU memory (host memory on the CPU backend) */
    FV_POOL_PINNED = 1, /* page-locked host memory, fast async copies */
    FV_POOL_MAPPED = 2, /* page-locked host memory the GPU reads in place (Jetson zero-copy) */
    FV_POOL_HOST = 3    /* ordinary host memory */
} fv_pool_kind;
/* The context's own pool of that kind (owned by the context), or NULL when it has none (MAPPED
 * on a discrete GPU under the DEVICE policy) or ctx is NULL. */
fv_pool *fv_context_pool(fv_context *ctx, fv_pool_kind kind);

/* Names, static storage: "cpu"/"cuda"/"auto"; "device"/"pinned"/...;
 * "auto"/"zero-copy"/"device". */
const char *fv_backend_name(fv_backend b);
const char *fv_pool_kind_name(fv_pool_kind k);         /* "device", "pinned", "mapped", "host" */
const char *fv_memory_policy_name(fv_memory_policy p); /* "auto", "zero-copy", "device" */

/* The library's version, "MAJOR.MINOR.PATCH". */
const char *fv_version(void);

#ifdef __cplusplus
}
#endif
#endif
