/// \file subset_phase.cu
/// \brief A subset of the cells as targets on the device (subset_phase.h): the groups holding one (kernel_system.cu
/// makes the list) and the gather of their results.
#include "cuda/subset_phase.h"

#include <algorithm>

#include "cuda/device.h"
#include "cuda/memory_plan.h"
#include "cuda/tree_phase.h"
#include "cuda/walk_phase.h"

namespace amrgrav {
namespace cuda {

Status subsetGroups(DeviceState& ds, const std::uint32_t* targets, std::size_t count, unsigned n, WalkParams& p) {
  SystemBuffers& b = ds.sys;
  const unsigned numGroups = ds.numGroups;  // every group of the cells (prepareWalk's p.numGroups)
  const unsigned k = unsigned(count);
  AG_TRY(b.targets.reserve(std::max(1u, k), "the targets"));
  AG_TRY(b.flags.reserve(n, "the targets' flags"));
  AG_TRY(b.groupFlag.reserve(numGroups + 1, "the targets' groups"));
  AG_TRY(b.groupOffset.reserve(numGroups + 1, "the targets' groups"));
  AG_TRY(b.groupList.reserve(std::max(1u, numGroups), "the targets' groups"));
  Transfer t{const_cast<std::uint32_t*>(targets), b.targets.get(), std::size_t(k) * 4};
  AG_TRY(copyIn(ds, &t, 1, ds.stream));
  std::size_t tempBytes = 0;
  AG_TRY(scanExclusive(nullptr, tempBytes, b.groupFlag.get(), b.groupOffset.get(), numGroups + 1, ds.stream));
  AG_TRY(reserveCubTemp(ds, tempBytes));
  tempBytes = ds.cubTemp.bytes();
  AG_TRY(launchTargetGroups(b.targets.get(), k, ds.order, n, ds.groupBegin.get(), numGroups, b.flags.get(),
                            b.groupFlag.get(), b.groupOffset.get(), b.groupList.get(), ds.cubTemp.get(), tempBytes,
                            ds.stream));
  AG_TRY(b.subsetRange.reserve(std::max(1u, numGroups), "the targets' groups"));
  AG_TRY(b.subsetHmin.reserve(std::max(1u, numGroups), "the targets' groups"));
  AG_TRY(launchSubsetGroups(b.groupList.get(), b.groupOffset.get() + numGroups, numGroups, ds.groupBegin.get(),
                            p.groupHmin, b.subsetRange.get(), b.subsetHmin.get(), ds.stream));
  unsigned* hc = static_cast<unsigned*>(ds.small.get());
  AG_CUDA_TRY(
      cudaMemcpyAsync(hc, b.groupOffset.get() + numGroups, sizeof(unsigned), cudaMemcpyDeviceToHost, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  p.numGroups = *hc;
  p.groupRange = b.subsetRange.get();
  p.groupHmin = b.subsetHmin.get();
  return Status::success();
}

Status downloadSubset(DeviceState& ds, const SolveOptions& opt, double* const res[4], std::size_t count,
                      const ResultTargets& dest) {
  const int nout = opt.accelerations ? 4 : 1;
  AG_TRY(ds.sys.targetOut.reserve(std::max<std::size_t>(1, 4 * count), "the targets' results"));
  double* host[4] = {dest.potential, dest.ax, dest.ay, dest.az};
  Transfer t[4];
  for (int q = 0; q < nout; ++q) {
    double* out = ds.sys.targetOut.get() + q * count;
    // out[j] = res[q][targets[j]] * 1 (exact): the full solve's values at the targets
    AG_TRY(launchGather(res[q], ds.sys.targets.get(), unsigned(count), 1.0, out, ds.stream));
    t[q] = Transfer{host[q], out, count * 8};
  }
  const auto td = Clock::now();
  AG_TRY(copyOut(ds, t, nout, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  ds.stats.secondsDownload = since(td);
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
