/* fv_cli: option parsing shared by fovea's command-line programs
 * (fovea-edge, fovea-infer, fovea-run, fovea-laplacian, fovea-regress,
 * fovea-calibrate).
 *
 * App-side code, not SDK: the functions documented as printing write one
 * usage-error line to stderr, "PROG: ...", and the caller decides the exit
 * status. The others print nothing. All return 0 on success and -1 on
 * failure, leaving their outputs untouched on failure (unless said). */
#ifndef FV_CLI_H
#define FV_CLI_H

#include <stdio.h>
#include "fovea/fovea.h"

/* Opens path for reading ("rb") only if it is a regular file, without ever
 * blocking (a FIFO with no writer, a device): libfovea's own check. Returns
 * the stream, or NULL with why filled ("No such file or directory", "it is a
 * FIFO (named pipe), not a regular file"). Prints nothing. */
FILE *fv_cli_fopen_read(const char *path, char *why, size_t why_n);

/* The value of option `name` at argv[*i], given as "NAME VALUE" (then *i is
 * advanced past VALUE) or as "NAME=VALUE". Returns NULL when argv[*i] is
 * another option (*bad untouched), or when NAME is the last argument: then
 * prints "PROG: NAME needs a value" and sets *bad to 1. All pointers must be
 * non-NULL; the result points into argv. */
const char *fv_cli_opt_value(const char *prog, int argc, char **argv, int *i, const char *name,
                             int *bad);

/* The whole of v as a number (strtod), within [lo, hi]. Refuses an empty v,
 * trailing characters, overflow and NaN. Prints nothing. */
int fv_cli_double(const char *v, double lo, double hi, double *out);

/* The whole of v as a base-10 integer (strtol), within [lo, hi]. Refuses an
 * empty v, trailing characters and overflow. Prints nothing. */
int fv_cli_long(const char *v, long lo, long hi, long *out);

/* fv_cli_double(v, lo, hi, out); on failure prints
 * "PROG: NAME V: give a number from LO to HI". */
int fv_cli_parse_num(const char *prog, const char *name, const char *v, double lo, double hi,
                     double *out);

/* "auto", "cpu" or "cuda" (exact, lower case). Prints nothing. */
int fv_cli_backend(const char *v, fv_backend *out);

/* "auto", "zero-copy" or "device" (the --memory option: where frames
 * live, fv_memory_policy; exact, lower case). Prints nothing. */
int fv_cli_memory(const char *v, fv_memory_policy *out);

/* Highest CUDA device index the --device option takes. */
#define FV_CLI_MAX_DEVICE 255

/* A CUDA device index (the --device option): the whole of v as a base-10
 * integer from 0 to FV_CLI_MAX_DEVICE, digits only: "-1", "+1", " 1", "x",
 * "1.5", "999" and "" are refused. On failure prints "PROG: --device V: give
 * a CUDA device index, a whole number from 0 to 255". */
int fv_cli_device(const char *prog, const char *v, int *out);

/* --backend and --device together, once all options are read (device_given:
 * --device was on the command line). CPU with a device other than 0 is
 * refused, printing "PROG: --device N: the CPU backend has no devices (drop
 * --device, or use --backend cuda)"; CPU with device 0 is accepted (the
 * device is ignored). AUTO with device_given becomes CUDA: a device that was
 * named is used, or fv_context_create fails with FV_ERR_NO_DEVICE ("CUDA
 * device 7 does not exist (1 device found)", or no GPU at all); it is never
 * quietly replaced by the CPU. CUDA is left as it is. */
int fv_cli_device_backend(const char *prog, int device, int device_given, fv_backend *backend);

/* A filter name as fv_filter_kind_name() spells it: "laplacian", "sobel",
 * "scharr", "prewitt" or "custom". Prints nothing. */
int fv_cli_filter_kind(const char *v, fv_filter_kind *out);

/* A custom kernel "R,C:V,V,..." (the --kernel option): R rows and C
 * columns, odd, 1 to FV_FILTER_MAX_KERNEL, then R*C comma-separated values,
 * row by row, each in (-1e6, 1e6). On success writes the values to
 * `values` (room for FV_FILTER_MAX_KERNEL^2 floats, which must outlive
 * `filter`'s use) and sets filter->kernel, kernel_rows, kernel_cols and
 * kind = FV_FILTER_CUSTOM; other fields are untouched. On failure prints
 * what is wrong ("PROG: --kernel V: ..."), leaves `filter` untouched and
 * `values` possibly partly written. */
int fv_cli_parse_kernel(const char *prog, const char *v, float *values, fv_filter_desc *filter);

#endif
