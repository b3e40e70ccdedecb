/// \file device.h
/// \brief The one file under native/tools that reaches into the CUDA backend (cuda/cuda_backend.h): its class, and
/// the parts only the checks and timings use, each behind one function here: the options (result buffers poisoned
/// with NaN, a small initial walk queue, validation on the host, staging), the per-solve device statistics, and the
/// device tree copied down. When those move (say to a cuda/testing.h), re-point this file; the checks
/// (parity/*.cpp) and the timings (gpu_timing.cpp) include only this, through parity/harness.h.
#pragma once
#include <string>

#include "cuda/fmm_rank_phase.h"
#include "cuda/m2l_variants.h"
#include "cuda/testing.h"

namespace amrgrav::parity {

/// The backend's options for a check or a timing. poison: NaN in the device's result buffers before every solve;
/// queueCapacity: the walk queue's first size per warp (a small one forces reruns); validateOnDevice false: the
/// cells checked on the host (core/validate.h) instead of in the bounds kernel. The FMM's computed near pairs in
/// double (CudaOptions::fmmNearSingle off), so that its solves match the CPU's to rounding; the single-precision
/// default has cases of its own (subjects fmm, fmm-periodic: near-single).
inline CudaOptions cudaOpts(bool pinned, unsigned queueCapacity, bool poison, int copyThreads = 0,
                            bool validateOnDevice = true) {
  CudaOptions o;
  o.fmmNearSingle = false;
  o.pinnedStaging = pinned;
  o.initialQueueCapacity = queueCapacity;
  o.poisonDevice = poison;
  o.copyThreads = copyThreads;
  o.validateOnDevice = validateOnDevice;
  return o;
}

/// The last solve()'s or direct()'s device measurements (phases, queue, launches, memory held).
inline CudaStats deviceStats(const CudaBackend& gpu) { return gpu.lastCudaStats(); }

/// The options for the next solves (the timings switch staging and copy threads on one backend object).
inline void setDeviceOptions(CudaBackend& gpu, const CudaOptions& options) { gpu.setCudaOptions(options); }

/// f(variant, tag) with each M2L kernel but the backend's current one set (CudaOptions::fmmM2L, cuda/m2l_variants.h;
/// tag "-m2l-NAME"), the options restored after.
template <class F>
void forOtherM2LKernels(CudaBackend& gpu, F&& f) {
  const CudaOptions before = gpu.cudaOptions();
  for (int var = 0; var < cuda::kFmmM2LVariants; ++var) {
    if (var == before.fmmM2L) continue;
    CudaOptions co = before;
    co.fmmM2L = var;
    setDeviceOptions(gpu, co);
    f(var, std::string("-m2l-") + cuda::fmmM2LVariantName(var));
  }
  setDeviceOptions(gpu, before);
}

/// The rank's tree and sorted cells as the device holds them, copied down (after rankChooseLets), for the host's
/// LET choice over the same tree.
inline Status exportDeviceTree(CudaBackend& gpu, HostTree& out, double extentLo[3], double extentHi[3]) {
  return gpu.rankExportTree(out, extentLo, extentHi);
}

/// A distributed FMM rank's GPU evaluation of its own lists on a device state of its own (ranks as threads of one
/// process, tools/thread_ranks.h).
inline std::unique_ptr<fmm::RankLocal> gpuRankLocal(int device) {
  return makeCudaFmmRankLocalOwnState(device, cudaOpts(true, 4096, false));
}

}  // namespace amrgrav::parity
