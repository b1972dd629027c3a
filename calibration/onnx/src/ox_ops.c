/* The op table: which handler builds layers for an op_type. */
#include <string.h>
#include "ox.h"

static const struct {
    const char *op;
    fv__ox_op_fn fn;
} layer_ops[] = {
    {"Conv", fv__ox_conv},
    {"ConvTranspose", fv__ox_conv_transpose},
    {"BatchNormalization", fv__ox_batchnorm},
    {"Gemm", fv__ox_gemm},
    {"MatMul", fv__ox_matmul},
    {"MaxPool", fv__ox_pool},
    {"AveragePool", fv__ox_pool},
    {"GlobalAveragePool", fv__ox_global_pool},
    {"GlobalMaxPool", fv__ox_global_pool},
    {"ReduceMean", fv__ox_reduce},
    {"ReduceMax", fv__ox_reduce},
    {"Relu", fv__ox_activation},
    {"LeakyRelu", fv__ox_activation},
    {"Sigmoid", fv__ox_activation},
    {"Tanh", fv__ox_activation},
    {"HardSigmoid", fv__ox_activation},
    {"HardSwish", fv__ox_activation},
    {"Clip", fv__ox_clip},
    {"Add", fv__ox_binary},
    {"Sub", fv__ox_binary},
    {"Mul", fv__ox_binary},
    {"Div", fv__ox_binary},
    {"Reshape", fv__ox_reshape_like},
    {"Flatten", fv__ox_reshape_like},
    {"Squeeze", fv__ox_reshape_like},
    {"Unsqueeze", fv__ox_reshape_like},
    {"Transpose", fv__ox_transpose},
    {"Concat", fv__ox_concat},
    {"Softmax", fv__ox_softmax},
    {"Slice", fv__ox_slice},
    {"Pad", fv__ox_pad},
    {"Resize", fv__ox_resize},
    {"Upsample", fv__ox_resize},
};

fv__ox_op_fn fv__ox_layer_op(const char *op_type) {
    for (size_t i = 0; i < sizeof layer_ops / sizeof layer_ops[0]; i++)
        if (!strcmp(op_type, layer_ops[i].op)) return layer_ops[i].fn;
    return NULL;
}
