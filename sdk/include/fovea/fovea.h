/* fovea: convolutional image processing and small CNNs on NVIDIA tensor
 * cores, with an FP32 CPU reference backend. Include this one header. */
#ifndef FOVEA_H
#define FOVEA_H

#include "fovea/version.h"
#include "fovea/status.h"
#include "fovea/context.h"
#include "fovea/pool.h"
#include "fovea/tensor.h"
#include "fovea/fp16.h"
#include "fovea/ops.h"
#include "fovea/filter.h"
#include "fovea/frame.h"
#include "fovea/pipeline.h"
#include "fovea/net.h"
#include "fovea/preprocess.h"
#include "fovea/postprocess.h"
#include "fovea/timer.h"

#endif
