/* fovea-infer: the model. An ONNX file through the importer (fovea/onnx.h)
 * into an fv_net on the context; its task from output 0's shape (N, C, 1, 1:
 * classification; N, C, H, W: segmentation) unless given; the labels; the
 * post-processing ops, made once. */
#define _POSIX_C_SOURCE 200809L /* readlink, access */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fv_cli.h"
#include "infer.h"
#if FV_INFER_HAVE_ONNX
#include "fovea/onnx.h"
#endif

/* Fashion-MNIST's classes, in the order of the repository's model. */
static const char *const fashion_labels[] = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                             "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                             "Bag",         "Ankle boot"};

const char *model_default_path(void) {
    static char path[4096];
#ifdef FV_INFER_DEFAULT_MODEL
    if (access(FV_INFER_DEFAULT_MODEL, R_OK) == 0) return FV_INFER_DEFAULT_MODEL;
#endif
    /* installed: <prefix>/bin/fovea-infer and <prefix>/share/fovea/models/ */
    char exe[4000];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        snprintf(path, sizeof path, "%s/../share/fovea/models/fashion_mnist.onnx", exe);
        if (access(path, R_OK) == 0) return path;
    }
#ifdef FV_INFER_DEFAULT_MODEL
    return FV_INFER_DEFAULT_MODEL;
#else
    return "fashion_mnist.onnx";
#endif
}

const char *model_label(const model *m, int k) {
    static _Thread_local char buf[32]; /* spread runs: a worker thread each */
    if (k >= 0 && k < m->nlabels) return m->labels[k];
    snprintf(buf, sizeof buf, "class %d", k);
    return buf;
}

/* One label per line; blank lines count (a class without a name). */
static int read_labels(const char *path, model *m) {
    char why[160];
    FILE *f = fv_cli_fopen_read(path, why, sizeof why);
    if (!f) {
        fprintf(stderr, PROG ": cannot read --labels %s: %s\n", path, why);
        return -1;
    }
    char line[1024];
    m->nlabels = 0;
    while (m->nlabels < MAX_LABELS && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        /* "n01440764 tench, Tinca tinca" (synset files): the words after the id */
        const char *name = line;
        if (line[0] == 'n' && strlen(line) > 10 && line[9] == ' ') name = line + 10;
        snprintf(m->labels[m->nlabels++], sizeof m->labels[0], "%.47s", name); /* cut to fit */
    }
    fclose(f);
    return 0;
}

#if FV_INFER_HAVE_ONNX
static int last_layer_is_softmax(fv_net *net) {
    fv_net_info ni;
    fv_net_layer_info li;
    if (fv_net_info_get(net, &ni) != FV_OK || ni.layers < 1) return 0;
    if (fv_net_layer_info_get(net, ni.layers - 1, &li) != FV_OK) return 0;
    return strcmp(li.op, "softmax") == 0;
}

int model_load(const options *o, int batch, fv_context *ctx, model *m) {
    fv_net_builder *b = NULL;
    fv_onnx_report rep;
    fv_onnx_options oo = {.batch = batch};
    if (fv_onnx_load(o->model, &oo, &b, &rep) != FV_OK) {
        fprintf(stderr, PROG ": cannot load the model %s: %s\n", o->model, fv_onnx_last_error());
        return -1;
    }
    if (rep.input_count != 1 || rep.output_count < 1) {
        fprintf(stderr, PROG ": %s has %d inputs and %d outputs; one image input is needed\n",
                o->model, rep.input_count, rep.output_count);
        fv_net_builder_destroy(b);
        return -1;
    }
    fv_net_builder_shape(b, rep.inputs[0].tensor, &m->n, &m->c, &m->h, &m->w);
    const char *why = NULL;
    if (m->c != 1 && m->c != 3)
        why = "its input has neither 1 (grey) nor 3 (colour) channels";
    else if (m->n < batch)
        why = "its batch is fixed below the number of inputs (export it with a dynamic batch)";
    else if (o->in_w && (o->in_w != m->w || o->in_h != m->h))
        why = "--input-size differs from the model's input (its size is fixed in the file; "
              "export it at that size)";
    if (why) {
        fprintf(stderr, PROG ": %s: input '%s' (N=%d, C=%d, H=%d, W=%d): %s\n", o->model,
                rep.inputs[0].name, m->n, m->c, m->h, m->w, why);
        fv_net_builder_destroy(b);
        return -1;
    }
    fv_net_desc nd = {.flags = o->cuda_graph ? FV_NET_CUDA_GRAPH : 0};
    fv_status s = fv_net_create(ctx, b, &nd, &m->net);
    fv_net_builder_destroy(b);
    if (s != FV_OK) {
        fprintf(stderr, PROG ": cannot create the net of %s: %s\n", o->model, fv_last_error());
        return -1;
    }
    fv_tensor_shape os;
    fv_tensor_shape_get(fv_net_output(m->net, 0), &os);
    m->on = os.n, m->oc = os.c, m->oh = os.h, m->ow = os.w;
    m->task =
        o->task != TASK_AUTO ? o->task : (os.h == 1 && os.w == 1 ? TASK_CLASSIFY : TASK_SEGMENT);
    fv_net_info ni;
    fv_net_info_get(m->net, &ni);
    m->weight_bytes = ni.weight_bytes;
    snprintf(m->desc, sizeof m->desc, "%d layers, input %dx%dx%d x%d, output %s %dx%dx%d",
             ni.layers, m->w, m->h, m->c, m->n, fv_net_output_name(m->net, 0), os.c, os.h, os.w);
    if (m->task == TASK_CLASSIFY) {
        if (os.h != 1 || os.w != 1) {
            fprintf(stderr,
                    PROG ": --task classify needs an output of (N, C, 1, 1); %s gives "
                         "(%d, %d, %d, %d)\n",
                    o->model, os.n, os.c, os.h, os.w);
            return -1;
        }
        fv_classify_desc cd = {
            .batch = os.n, .classes = os.c, .k = o->top, .softmax = !last_layer_is_softmax(m->net)};
        for (int i = 0; i < SLOTS; i++)
            if (fv_classify_create(ctx, &cd, &m->top[i]) != FV_OK) {
                fprintf(stderr, PROG ": classification: %s\n", fv_last_error());
                return -1;
            }
    } else {
        if (os.c > FV_SEGMENT_MAX_CLASSES) {
            fprintf(stderr, PROG ": segmentation: %d classes, at most %d\n", os.c,
                    FV_SEGMENT_MAX_CLASSES);
            return -1;
        }
        fv_segment_desc sd = {.batch = os.n,
                              .classes = os.c,
                              .height = os.h,
                              .width = os.w,
                              .input_height = m->h,
                              .input_width = m->w,
                              .alpha = o->alpha};
        if (fv_segment_create(ctx, &sd, &m->seg) != FV_OK) {
            fprintf(stderr, PROG ": segmentation: %s\n", fv_last_error());
            return -1;
        }
    }
    if (o->labels) return read_labels(o->labels, m);
    if (!o->model_given && m->oc == 10) {
        for (int k = 0; k < 10; k++)
            snprintf(m->labels[k], sizeof m->labels[0], "%s", fashion_labels[k]);
        m->nlabels = 10;
    }
    return 0;
}
#else
int model_load(const options *o, int batch, fv_context *ctx, model *m) {
    (void)batch, (void)ctx, (void)m, (void)fashion_labels, (void)read_labels;
    fprintf(stderr,
            PROG ": cannot load %s: this build has no ONNX importer (it needs protoc-c, "
                 "libprotobuf-c and onnx.proto: Debian protobuf-c-compiler libprotobuf-c-dev "
                 "libonnx-dev)\n",
            o->model);
    return -1;
}
#endif

void model_free(model *m) {
    for (int i = 0; i < SLOTS; i++)
        fv_classify_destroy(m->top[i]);
    fv_segment_destroy(m->seg);
    fv_net_destroy(m->net);
    memset(m->top, 0, sizeof m->top);
    m->seg = NULL;
    m->net = NULL;
}
