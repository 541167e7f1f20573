# Detects the CUDA Toolkit and NCCL for the GPU path.
#   COLLECTIVE_WITH_NCCL=AUTO  build it when both are found (the default)
#   COLLECTIVE_WITH_NCCL=ON    require it
#   COLLECTIVE_WITH_NCCL=OFF   never build it
# NCCL is searched in NCCL_HOME (cache variable or environment), then beside
# the CUDA Toolkit (CUDA's usual prefix holds lib/libnccl.so and include/nccl.h).
set(COLLECTIVE_HAVE_NCCL OFF)
if(NOT COLLECTIVE_WITH_NCCL STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  set(NCCL_HOME "$ENV{NCCL_HOME}" CACHE PATH "Prefix where NCCL is installed")
  set(_nccl_hints ${NCCL_HOME})
  if(CUDAToolkit_FOUND)
    get_filename_component(_cuda_root "${CUDAToolkit_BIN_DIR}" DIRECTORY)
    list(APPEND _nccl_hints ${_cuda_root} ${CUDAToolkit_LIBRARY_ROOT})
  endif()
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
  if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(COLLECTIVE_HAVE_NCCL ON)
    # NCCL ships no CMake package; this target carries its header and library.
    if(NOT TARGET NCCL::nccl)
      add_library(NCCL::nccl UNKNOWN IMPORTED)
      set_target_properties(NCCL::nccl PROPERTIES
        IMPORTED_LOCATION "${NCCL_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    endif()
    message(STATUS "libcollective: NCCL path ON (CUDA ${CUDAToolkit_VERSION}, ${NCCL_LIBRARY})")
  elseif(COLLECTIVE_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "COLLECTIVE_WITH_NCCL=ON but CUDA (${CUDAToolkit_FOUND}) or NCCL "
                        "(${NCCL_INCLUDE_DIR}, ${NCCL_LIBRARY}) was not found; set NCCL_HOME")
  else()
    message(STATUS "libcollective: NCCL path OFF (CUDA or NCCL not found)")
  endif()
else()
  message(STATUS "libcollective: NCCL path OFF (COLLECTIVE_WITH_NCCL=OFF)")
endif()
