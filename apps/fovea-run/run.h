/* fovea-run: shared declarations of the program's parts (main.c: options
 * and flow; run_input.c: input tensors; run_report.c: tables and JSON). */
#ifndef FOVEA_RUN_H
#define FOVEA_RUN_H

#include <stdio.h>
#include "fovea/fovea.h"
#include "fovea/onnx.h"

typedef enum run_norm { RUN_NORM_IMAGENET = 0, RUN_NORM_UNIT = 1, RUN_NORM_RAW = 2 } run_norm;

typedef struct run_options {
    const char *model;
    const char *input; /* image path, or NULL/"random" */
    fv_backend backend;
    int device, device_given; /* CUDA device index; given: --device was passed */
    const char *profile;
    int autotune, cuda_graph, layers, compare, json, verbose, quiet;
    int top;   /* K for classifiers */
    int runs;  /* timed runs */
    int batch; /* N for models with a symbolic batch */
    run_norm norm;
    unsigned seed;
} run_options;

/* Input i of net as dense NHWC floats (malloc'd; *count elements): the
 * image resized (bilinear) and normalised when one is given and the input
 * has 1 or 3 channels, else uniform random values in [-1, 1). Returns 0, or
 * -1 after printing why. */
int run_input_make(const run_options *o, const fv_onnx_io *io, float **nhwc, size_t *count);

/* Human-readable and JSON reports. The JSON writer keeps one object open
 * between run_json_begin and run_json_end. */
void run_print_layers(FILE *f, fv_net *net, int json);
void run_print_outputs(FILE *f, fv_net *net, const fv_onnx_report *rep, int top, int json);
void run_print_times(FILE *f, fv_net *net, const float *ms, int layers, float total, int json);
void run_print_compare(FILE *f, fv_net *net, const fv_net_layer_error *err, int layers, int json);
void run_json_string(FILE *f, const char *s);

#endif
