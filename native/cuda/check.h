/// \file check.h
/// \brief Error handling of the CUDA backend: every CUDA runtime call goes through AG_CUDA_TRY, which turns a
/// failure into a Status naming the call, the file and line, and cudaGetErrorName/String. Nothing here aborts.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "core/status.h"

namespace amrgrav {
namespace cuda {

/// "native/cuda/x.cu" rather than the build machine's absolute path.
inline const char* shortFile(const char* f) {
  const char* p = std::strstr(f, "native/");
  return p ? p : f;
}

/// The error code a CUDA failure maps to: allocation failures are OutOfMemory, a missing driver or device (or a
/// device this build has no code for) is NoDevice, everything else Internal.
inline ErrorCode classify(cudaError_t e) {
  switch (e) {
    case cudaErrorMemoryAllocation: return ErrorCode::OutOfMemory;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice: return ErrorCode::NoDevice;
    default: return ErrorCode::Internal;
  }
}

inline Status cudaFailure(cudaError_t e, const char* expr, const char* file, int line) {
  // Clear the error if it is not sticky, so that the next solve on this backend starts clean. A sticky error
  // (an illegal address, say) stays: every later call then fails with it, and says so.
  (void)cudaGetLastError();
  return Status::error(classify(e), std::string("CUDA backend: ") + expr + " failed at " + shortFile(file) + ":" +
                                        std::to_string(line) + ": " + cudaGetErrorName(e) + " (" +
                                        cudaGetErrorString(e) + ")");
}

}  // namespace cuda
}  // namespace amrgrav

/// Evaluates a cudaError_t expression; on failure returns the Status from the enclosing function.
#define AG_CUDA_TRY(expr)                                                                 \
  do {                                                                                    \
    const cudaError_t ag_cuda_err_ = (expr);                                              \
    if (ag_cuda_err_ != cudaSuccess)                                                      \
      return ::amrgrav::cuda::cudaFailure(ag_cuda_err_, #expr, __FILE__, __LINE__);       \
  } while (0)

/// After a kernel launch (name: a string literal): a launch-configuration error becomes a Status.
#define AG_CUDA_LAUNCHED(name)                                                                          \
  do {                                                                                                  \
    const cudaError_t ag_cuda_err_ = cudaGetLastError();                                                \
    if (ag_cuda_err_ != cudaSuccess)                                                                    \
      return ::amrgrav::cuda::cudaFailure(ag_cuda_err_, "launch of " name, __FILE__, __LINE__);         \
  } while (0)

// AG_TRY (propagates a non-ok Status) is core/status.h's.
