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
# Hopper's warpgroup-MMA conv kernel (kernels/conv_wgmma.cu): wgmma is an
# arch-specific instruction, so that file is compiled for sm_90a alone (its
# own object library: one image, no choice left to the loader between it and
# plain sm_90 code), where the build targets SM 9.0 with CUDA 12 or later.
# FV_HAVE_WGMMA tells conv_direct.cu the kernel is there.
set(FV_WGMMA OFF)
foreach(_fv_arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
  if(_fv_arch MATCHES "^90" AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
    set(FV_WGMMA ON)
  endif()
endforeach()
if(FV_WGMMA)
  set_source_files_properties(${_fv_cuda_dir}/kernels/conv_direct.cu PROPERTIES
    COMPILE_DEFINITIONS "FV_HAVE_WGMMA=1")
endif()
