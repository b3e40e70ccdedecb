/// \file device.h
/// \brief The CUDA device: whether a driver and a device this build can run on are present (and, if not, the
/// driver's own words why), and the set-up of a backend's device (context, streams, events). Plain C++: nothing
/// here needs CUDA headers, and nothing aborts, also without any NVIDIA driver installed.
#pragma once
#include <string>

#include "core/status.h"

namespace amrgrav {

/// The number of CUDA devices (0 without a driver or device; never aborts).
int cudaDeviceCount();

/// True when a CUDA driver and a device this build can run on are present; otherwise false, with the reason in
/// *why (if given). Never aborts, also without any NVIDIA driver installed.
bool cudaDeviceAvailable(std::string* why);

namespace cuda {

struct DeviceState;

/// Checks driver, device count, the device index and that this build's code runs on it (its compute capability
/// into *ccOut); no context is created. NoDevice, with the driver's words, otherwise.
Status checkDevice(int device, int* ccOut);

/// The state's device made current; the first time (or after releaseAll) also checked, its name and multiprocessors
/// read, and the backend's stream, events and small read-back buffer made.
Status ensureDevice(DeviceState& ds);

}  // namespace cuda
}  // namespace amrgrav
