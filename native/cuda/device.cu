/// \file device.cu
/// \brief The CUDA device (device.h): driver and device checks with the driver's own words, whether this build has
/// code the device runs, and a backend's device set-up (context, stream, events, small read-backs).
#include <algorithm>
#include <string>

#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/device_state.h"

namespace amrgrav {
namespace cuda {
namespace {

/// An empty kernel whose attributes tell whether this build has code the device can run.
__global__ void probeKernel() {}

/// Lowest compute capability (e.g. 90) this build has code for; 0 when unknown.
int lowestBuiltArch() {
#if defined(__CUDA_ARCH_LIST__)
  const int archs[] = {__CUDA_ARCH_LIST__};
  int lo = archs[0];
  for (int a : archs) lo = std::min(lo, a);
  return lo / 10;
#else
  return 0;
#endif
}

}  // namespace

/// Checks driver, device count, the device index and that this build's code runs on it; no context is created.
Status checkDevice(int device, int* ccOut) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::error(ErrorCode::NoDevice, std::string("CUDA backend: no usable CUDA driver or device (") +
                                                  cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")");
  }
  if (count <= 0) return Status::error(ErrorCode::NoDevice, "CUDA backend: no CUDA device found");
  if (device < 0 || device >= count)
    return Status::error(ErrorCode::NoDevice, "CUDA backend: device " + std::to_string(device) + " requested, but " +
                                                  std::to_string(count) + " device(s) present");
  int major = 0, minor = 0;
  AG_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  AG_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const int cc = major * 10 + minor, need = lowestBuiltArch();
  if (need > 0 && cc < need)
    return Status::error(ErrorCode::NoDevice, "CUDA backend: device " + std::to_string(device) +
                                                  " has compute capability " + std::to_string(major) + "." +
                                                  std::to_string(minor) + ", this build needs " +
                                                  std::to_string(need / 10) + "." + std::to_string(need % 10) +
                                                  " or newer (CMAKE_CUDA_ARCHITECTURES)");
  if (ccOut) *ccOut = cc;
  return Status::success();
}

Status ensureDevice(DeviceState& ds) {
  if (ds.ready) {
    AG_CUDA_TRY(cudaSetDevice(ds.device));
    return Status::success();
  }
  int cc = 0;
  AG_TRY(checkDevice(ds.copt.device, &cc));
  AG_CUDA_TRY(cudaSetDevice(ds.copt.device));
  cudaFuncAttributes fa;
  const cudaError_t pe = cudaFuncGetAttributes(&fa, probeKernel);
  if (pe != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::error(ErrorCode::NoDevice, std::string("CUDA backend: this build has no code for device ") +
                                                  std::to_string(ds.copt.device) + " (compute capability " +
                                                  std::to_string(cc / 10) + "." + std::to_string(cc % 10) +
                                                  "): " + cudaGetErrorString(pe));
  }
  cudaDeviceProp prop;
  AG_CUDA_TRY(cudaGetDeviceProperties(&prop, ds.copt.device));
  ds.smCount = prop.multiProcessorCount;
  ds.deviceName = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                  std::to_string(prop.multiProcessorCount) + " SMs)";
  AG_CUDA_TRY(cudaStreamCreateWithFlags(&ds.stream, cudaStreamNonBlocking));
  for (auto& e : ds.events) AG_CUDA_TRY(cudaEventCreate(&e));
  AG_TRY(ds.small.reserve(4096, "small read-backs"));
  ds.device = ds.copt.device;
  ds.ready = true;
  return Status::success();
}

}  // namespace cuda

int cudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

bool cudaDeviceAvailable(std::string* why) {
  const Status st = cuda::checkDevice(0, nullptr);
  if (!st.ok() && why) *why = st.message;
  return st.ok();
}

}  // namespace amrgrav
