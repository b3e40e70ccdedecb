# amrgrav CUDA backend. Include from the top-level CMakeLists.txt AFTER amrgrav_core is defined and BEFORE the
# addon:
#   include(cmake/cuda.cmake)
# Defines (when the backend is built):
#   amrgrav_cuda         static library (CUDA code, cudart linked statically; links amrgrav_core): the backend, split
#                        by phase, and the GPU rank of a distributed solve (no MPI in it: api/ hands it to mpi/)
#   amrgrav_cuda_testing the tools' view of the backend (native/cuda/testing.h); never linked into the addon or libamrgrav
#   amrgrav_gpu_parity   the CPU-vs-CUDA checks, one subject per argument (native/tools/parity/)
#   amrgrav_gpu_timing   CUDA timings: benchmarks, not tests (native/tools/gpu_timing.cpp)
#   CTest tests gpu.<subject> and gpu.sequence-quick, label gpu: `ctest -L gpu --output-on-failure` in the build
#   directory runs every GPU check (needs enable_testing() in the top-level CMakeLists.txt)
# Sets AMRGRAV_HAVE_CUDA to ON or OFF.
#
# Option AMRGRAV_GPU_BACKEND: AUTO (CUDA when a CUDA compiler is found), NONE, or CUDA (error without a compiler).

set(AMRGRAV_GPU_BACKEND "AUTO" CACHE STRING "GPU backend to build: AUTO, NONE or CUDA")
set_property(CACHE AMRGRAV_GPU_BACKEND PROPERTY STRINGS AUTO NONE CUDA)
string(TOUPPER "${AMRGRAV_GPU_BACKEND}" _amrgrav_gpu)
if(NOT _amrgrav_gpu MATCHES "^(AUTO|NONE|CUDA)$")
  message(FATAL_ERROR "AMRGRAV_GPU_BACKEND must be AUTO, NONE or CUDA (got '${AMRGRAV_GPU_BACKEND}')")
endif()

set(AMRGRAV_HAVE_CUDA OFF)
if(NOT _amrgrav_gpu STREQUAL "NONE")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(AMRGRAV_HAVE_CUDA ON)
  elseif(_amrgrav_gpu STREQUAL "CUDA")
    message(FATAL_ERROR "AMRGRAV_GPU_BACKEND=CUDA but no CUDA compiler was found "
                        "(put nvcc on PATH or set CMAKE_CUDA_COMPILER)")
  endif()
endif()

if(AMRGRAV_HAVE_CUDA)
  # Hopper (H100) by default; override with -DCMAKE_CUDA_ARCHITECTURES=... (e.g. "80;90").
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)

  add_library(amrgrav_cuda STATIC
    native/cuda/cuda_backend.cu
    native/cuda/device.cu
    native/cuda/memory_plan.cu
    native/cuda/tree_phase.cu
    native/cuda/ewald_phase.cu
    native/cuda/walk_phase.cu
    native/cuda/rank_phase.cu
    native/cuda/cuda_rank_engine.cu
    native/cuda/kernel_keys.cu
    native/cuda/kernel_build.cu
    native/cuda/kernel_groups.cu
    native/cuda/kernel_moments.cu
    native/cuda/kernel_walk.cu
    native/cuda/kernel_direct.cu
    native/cuda/kernel_finish.cu
    native/cuda/kernel_let.cu
    native/cuda/blocks_phase.cu
    native/cuda/kernel_blocks.cu
    native/cuda/system_phase.cu
    native/cuda/subset_phase.cu
    native/cuda/kernel_system.cu
    native/cuda/kernel_particles.cu
    native/cuda/particles_phase.cu
    native/cuda/probes_phase.cu
    native/cuda/rank_system.cu
    native/cuda/fmm_phase.cu
    native/cuda/fmm_periodic_phase.cu
    native/cuda/fmm_rank_phase.cu
    native/cuda/kernel_fmm.cu
    native/cuda/fmm_lists_phase.cu
    native/cuda/kernel_fmm_lists.cu
    native/cuda/fmm_tiles_phase.cu
    native/cuda/fmm_tree_phase.cu
    native/cuda/kernel_fmm_tree.cu
    native/cuda/fmm_scale_phase.cu
    native/cuda/kernel_fmm_scale.cu
    native/cuda/kernel_m2l_mma.cu
  )
  set_target_properties(amrgrav_cuda PROPERTIES
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON
    CUDA_SEPARABLE_COMPILATION OFF
    POSITION_INDEPENDENT_CODE ON)
  target_include_directories(amrgrav_cuda PUBLIC ${PROJECT_SOURCE_DIR}/native)
  # cudart statically: the addon then loads on machines without any NVIDIA driver (cudaDeviceAvailable says why).
  target_link_libraries(amrgrav_cuda PUBLIC amrgrav_core CUDA::cudart_static)
  target_compile_options(amrgrav_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo --Werror=all-warnings -Xcompiler=-Wall,-Wextra>)
  # Floating-point contraction and the interaction lists: the rules that decide them (native/physics/: the MAC, the
  # periodic image test, which groups expand, the node moments and MAC radii, the LET choice) are the CPU core's
  # own headers, written with physics/rounding.h's RoundNearest, which is __dadd_rn/__dsub_rn/__dmul_rn/__ddiv_rn/
  # __dsqrt_rn on the device: never fused, whatever the flags below, so they round as the host (built with
  # -ffp-contract=off, CMakeLists.txt) and both backends build the same lists.
  # Interactions: float with FMA, hardware reciprocal square root and flush-to-zero (accuracy ~1e-7 per term).
  # The double-precision rules in these files are unaffected by these flags (explicit rounding, see above; fast
  # math flushes and approximates float only).
  set_source_files_properties(
    native/cuda/kernel_walk.cu native/cuda/kernel_direct.cu
    PROPERTIES COMPILE_OPTIONS "--use_fast_math")
  # Keys, tree, moments, the LET choice and the FMM lists' walk must round exactly as the CPU core does: their rules
  # round explicitly, and the rest of these files (key coordinates, the gather's scaling, sums) is kept unfused by -fmad=false too.
  set_source_files_properties(
    native/cuda/kernel_keys.cu native/cuda/kernel_build.cu native/cuda/kernel_moments.cu native/cuda/kernel_let.cu
    native/cuda/kernel_blocks.cu native/cuda/kernel_fmm_lists.cu native/cuda/fmm_tiles_phase.cu
    native/cuda/kernel_fmm_tree.cu native/cuda/kernel_fmm_scale.cu
    PROPERTIES COMPILE_OPTIONS "-fmad=false")

  add_library(amrgrav_cuda_testing STATIC native/cuda/testing.cu)
  set_target_properties(amrgrav_cuda_testing PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                        POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(amrgrav_cuda_testing PUBLIC amrgrav_cuda)
  target_compile_options(amrgrav_cuda_testing PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo --Werror=all-warnings -Xcompiler=-Wall,-Wextra>)

  # The checks' shared harness (problems, comparisons, the report), the checks and the timings.
  add_library(amrgrav_gpu_harness STATIC native/tools/parity/harness.cpp)
  target_link_libraries(amrgrav_gpu_harness PUBLIC amrgrav_cuda_testing amrgrav_cuda amrgrav_core)
  target_compile_options(amrgrav_gpu_harness PRIVATE -O2 -Wall -Wextra)
  add_executable(amrgrav_gpu_parity
    native/tools/parity/main.cpp
    native/tools/parity/isolated.cpp
    native/tools/parity/direct.cpp
    native/tools/parity/errors.cpp
    native/tools/parity/memory.cpp
    native/tools/parity/periodic.cpp
    native/tools/parity/contrast.cpp
    native/tools/parity/let.cpp
    native/tools/parity/vote.cpp
    native/tools/parity/paired.cpp
    native/tools/parity/system.cpp
    native/tools/parity/particles.cpp
    native/tools/parity/clustered.cpp
    native/tools/parity/hostblocks.cpp
    native/tools/parity/fmm.cpp
    native/tools/parity/fmm_lists.cpp
    native/tools/parity/fmm_tiles.cpp
    native/tools/parity/fmm_tree.cpp
    native/tools/parity/fmm_periodic.cpp
    native/tools/parity/fmm_blocks.cpp
    native/tools/parity/fmm_ranks.cpp)
  target_link_libraries(amrgrav_gpu_parity PRIVATE amrgrav_gpu_harness)
  target_compile_options(amrgrav_gpu_parity PRIVATE -O2 -Wall -Wextra)
  add_executable(amrgrav_gpu_timing native/tools/gpu_timing.cpp)
  target_link_libraries(amrgrav_gpu_timing PRIVATE amrgrav_gpu_harness)
  target_compile_options(amrgrav_gpu_timing PRIVATE -O2 -Wall -Wextra)
  # The M2L kernels' benchmark (native/tools/m2l_bench.cpp; cuda/m2l_variants.h): each variant timed on a synthetic
  # uniform level and its L compared with the plain kernel's. A benchmark, not a test.
  add_executable(amrgrav_m2l_bench native/tools/m2l_bench.cpp)
  target_link_libraries(amrgrav_m2l_bench PRIVATE amrgrav_gpu_harness)
  target_compile_options(amrgrav_m2l_bench PRIVATE -O2 -Wall -Wextra)

  # CTest: one test per subject (native/tools/parity/main.cpp kSubjects), and every subject at small sizes on one
  # backend object in one process (device buffers reused across all of them). Exit 2 = no usable device: skipped,
  # unless AMRGRAV_REQUIRE_GPU=1 is in the environment (bench/gpu/device-check.sh sets it), then a failure. One at
  # a time on the GPU, whatever ctest -j says. Timings (amrgrav_gpu_timing) are not tests.
  set(_amrgrav_gpu_tests "")
  foreach(_subject isolated direct errors memory periodic contrast let vote paired system clustered particles hostblocks fmm
                   fmm-lists fmm-tiles fmm-tree
                   fmm-periodic fmm-blocks fmm-ranks)
    add_test(NAME gpu.${_subject} COMMAND amrgrav_gpu_parity ${_subject})
    list(APPEND _amrgrav_gpu_tests gpu.${_subject})
  endforeach()
  add_test(NAME gpu.sequence-quick COMMAND amrgrav_gpu_parity all --quick)
  set_tests_properties(${_amrgrav_gpu_tests} gpu.sequence-quick PROPERTIES
    LABELS gpu SKIP_RETURN_CODE 2 RESOURCE_LOCK amrgrav_gpu TIMEOUT 600)
  # the CPU reference over 24 cases of up to 200k cells: the longest
  set_tests_properties(gpu.isolated PROPERTIES TIMEOUT 900)

  message(STATUS "amrgrav: GPU backend CUDA (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "amrgrav: GPU backend none (AMRGRAV_GPU_BACKEND=${AMRGRAV_GPU_BACKEND})")
endif()
