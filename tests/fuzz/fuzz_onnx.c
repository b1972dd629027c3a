/* libFuzzer entry point for the ONNX importer (calibration/onnx).
 *
 * Built only with clang and -DFV_BUILD_FUZZERS=ON (see CMakeLists.txt here):
 *   CC=clang cmake -S . -B build-fuzz -DFV_BUILD_FUZZERS=ON -DFV_WITH_CUDA=OFF
 *   cmake --build build-fuzz --target fuzz_onnx
 *   ./build-fuzz/tests/fuzz/fuzz_onnx -max_total_time=300 -rss_limit_mb=2048 corpus/
 * with a corpus of models (tests/models/export_models.py's output, ONNX's
 * node tests). ctest's fuzz_onnx_run does a bounded run of that kind. Every
 * input must load or fail with a message; a loaded builder is freed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "fovea/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fv_net_builder *b = NULL;
    fv_status s = fv_onnx_load_memory(data, size, NULL, NULL, &b, NULL);
    if (s == FV_OK) {
        if (!b) abort();
        fv_net_builder_destroy(b);
    } else if (b || !fv_onnx_last_error()[0]) {
        abort(); /* a failure leaves no builder and says why */
    }
    return 0;
}
