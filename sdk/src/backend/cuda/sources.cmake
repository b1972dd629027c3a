# The CUDA backend's sources, included by sdk/CMakeLists.txt when CUDA and
# cuDNN are found. Sets FV_CUDA_SOURCES.
set(_fv_cuda_dir ${CMAKE_CURRENT_LIST_DIR})
set(FV_CUDA_SOURCES
  ${_fv_cuda_dir}/cuda_backend.c
  ${_fv_cuda_dir}/cuda_memory.c
  ${_fv_cuda_dir}/cuda_ops.c
  ${_fv_cuda_dir}/cuda_async.c
  ${_fv_cuda_dir}/kernels/elementwise.cu
  ${_fv_cuda_dir}/kernels/pooling.cu
  ${_fv_cuda_dir}/kernels/pack.cu
  ${_fv_cuda_dir}/kernels/edge.cu
  ${_fv_cuda_dir}/kernels/filter_fused.cu
  ${_fv_cuda_dir}/kernels/filter_direct.cu
  ${_fv_cuda_dir}/kernels/filter_direct_strip.cu
)
# fv_net's layer kernels (backend/net_ops.h).
list(APPEND FV_CUDA_SOURCES ${_fv_cuda_dir}/cuda_net.c ${_fv_cuda_dir}/kernels/net.cu
  ${_fv_cuda_dir}/cuda_fc.c)
# The vision ops (fovea/preprocess.h, fovea/postprocess.h; backend/vision_ops.h).
list(APPEND FV_CUDA_SOURCES ${_fv_cuda_dir}/cuda_vision.c ${_fv_cuda_dir}/kernels/vision.cu)
# Convolution: the cuDNN graph-API engine (legacy API fallback) and its epilogue.
list(APPEND FV_CUDA_SOURCES ${_fv_cuda_dir}/conv_engine.c ${_fv_cuda_dir}/conv_cands.c
  ${_fv_cuda_dir}/conv_graph.c ${_fv_cuda_dir}/conv_plan_cache.c
  ${_fv_cuda_dir}/conv_tune.c ${_fv_cuda_dir}/cudnn_preload.c
  ${_fv_cuda_dir}/kernels/conv_epilogue.cu
  ${_fv_cuda_dir}/kernels/conv_direct.cu ${_fv_cuda_dir}/kernels/conv_gemm.cu)
# Named in the "no kernel image for this GPU" message.
string(REPLACE ";" " " _fv_cuda_archs "${CMAKE_CUDA_ARCHITECTURES}")
set_source_files_properties(${_fv_cuda_dir}/cuda_backend.c PROPERTIES
  COMPILE_DEFINITIONS "FV_CUDA_ARCHITECTURES=\"${_fv_cuda_archs}\"")
# Pack/unpack must give the CPU backend's bits: no contraction of a*b+c into
# an FMA anywhere in that file (pixel_math.h's helpers already avoid it).
set_source_files_properties(${_fv_cuda_dir}/kernels/pack.cu
  ${_fv_cuda_dir}/kernels/filter_fused.cu ${_fv_cuda_dir}/kernels/filter_direct.cu
  ${_fv_cuda_dir}/kernels/filter_direct_strip.cu ${_fv_cuda_dir}/kernels/vision.cu
  PROPERTIES COMPILE_OPTIONS "--fmad=false")
