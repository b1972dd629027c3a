# FindCUDNN: cuDNN headers and library.
# Honours CUDNN_ROOT (cache or environment): <root>/include, <root>/lib, <root>/lib64
# (a pip wheel's site-packages/nvidia/cudnn works as a root). Also looks in
# the CUDA toolkit and the system paths, including /usr/include/<triplet>.
# Defines CUDNN_FOUND, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY, CUDNN_VERSION and the
# imported target CUDNN::cudnn.
set(_cudnn_roots ${CUDNN_ROOT} $ENV{CUDNN_ROOT})
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND _cudnn_fallback ${CUDAToolkit_LIBRARY_ROOT})
endif()
list(APPEND _cudnn_fallback /usr/local/cuda /usr)
set(_triplet "")
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(_triplet ${CMAKE_LIBRARY_ARCHITECTURE})
endif()

if(_cudnn_roots)
  find_path(CUDNN_INCLUDE_DIR cudnn_version.h PATHS ${_cudnn_roots}
            PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 libcudnn.so.8 PATHS ${_cudnn_roots}
               PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
endif()
find_path(CUDNN_INCLUDE_DIR cudnn_version.h
          PATHS ${_cudnn_fallback} /usr/include/${_triplet}
          PATH_SUFFIXES include include/${_triplet} targets/x86_64-linux/include
                        targets/aarch64-linux/include targets/sbsa-linux/include)
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 libcudnn.so.8
             PATHS ${_cudnn_fallback} /usr/lib/${_triplet}
             PATH_SUFFIXES lib lib64 lib/${_triplet} targets/x86_64-linux/lib
                           targets/aarch64-linux/lib targets/sbsa-linux/lib)

if(CUDNN_INCLUDE_DIR AND EXISTS ${CUDNN_INCLUDE_DIR}/cudnn_version.h)
  file(STRINGS ${CUDNN_INCLUDE_DIR}/cudnn_version.h _v REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  string(REGEX REPLACE ".*CUDNN_MAJOR +([0-9]+).*" "\\1" _maj "${_v}")
  string(REGEX REPLACE ".*CUDNN_MINOR +([0-9]+).*" "\\1" _min "${_v}")
  string(REGEX REPLACE ".*CUDNN_PATCHLEVEL +([0-9]+).*" "\\1" _pat "${_v}")
  set(CUDNN_VERSION ${_maj}.${_min}.${_pat})
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR
                                  VERSION_VAR CUDNN_VERSION)
if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES IMPORTED_LOCATION ${CUDNN_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
