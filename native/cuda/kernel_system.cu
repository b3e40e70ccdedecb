/// \file kernel_system.cu
/// \brief A system solve's subset of targets on the device (core/system.h): which walk groups hold a target, from the
/// targets' caller indices and the sorted order, compacted into a list, and that list as a ranged walk's groups
/// (launchSubsetGroups: their ranges and smallest sizes, WalkParams::groupRange). The same groups as the host's
/// tree/system_points.cpp groupsHoldingTargets.
#include "cuda/check.h"
#include "cuda/grid_stride.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = kGridThreads;

__global__ void __launch_bounds__(kThreads) flagTargetsKernel(const std::uint32_t* __restrict__ targets,
                                                              unsigned count, unsigned char* __restrict__ flags) {
  for (unsigned k = blockIdx.x * kThreads + threadIdx.x; k < count; k += gridDim.x * kThreads) flags[targets[k]] = 1;
}

/// groupFlag[g] = 1 for every group holding a flagged cell (several threads may write the same 1); a cell's group by
/// binary search over the groups' first cells (groupBegin, numGroups + 1 of them).
__global__ void __launch_bounds__(kThreads) markGroupsKernel(const std::uint32_t* __restrict__ order, unsigned n,
                                                             const unsigned char* __restrict__ flags,
                                                             const unsigned* __restrict__ groupBegin,
                                                             unsigned numGroups, unsigned* __restrict__ groupFlag) {
  for (unsigned i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
    if (!flags[order[i]]) continue;
    unsigned lo = 0, hi = numGroups - 1;  // the last group whose first cell is <= i
    while (lo < hi) {
      const unsigned mid = hi - (hi - lo) / 2;
      if (groupBegin[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    groupFlag[lo] = 1u;
  }
}

__global__ void __launch_bounds__(kThreads) compactGroupsKernel(const unsigned* __restrict__ groupFlag,
                                                                const unsigned* __restrict__ offset,
                                                                unsigned numGroups, unsigned* __restrict__ list) {
  for (unsigned g = blockIdx.x * kThreads + threadIdx.x; g < numGroups; g += gridDim.x * kThreads)
    if (groupFlag[g]) list[offset[g]] = g;
}

__global__ void __launch_bounds__(kThreads) subsetGroupsKernel(const unsigned* __restrict__ list,
                                                               const unsigned* __restrict__ count,
                                                               const unsigned* __restrict__ groupBegin,
                                                               const double* __restrict__ groupHmin,
                                                               uint2* __restrict__ range, double* __restrict__ hmin) {
  const unsigned c = *count;
  for (unsigned k = blockIdx.x * kThreads + threadIdx.x; k < c; k += gridDim.x * kThreads) {
    const unsigned g = list[k];
    range[k] = make_uint2(groupBegin[g], groupBegin[g + 1] - groupBegin[g]);
    hmin[k] = groupHmin[g];
  }
}

}  // namespace

Status launchSubsetGroups(const unsigned* list, const unsigned* count, unsigned numGroups, const unsigned* groupBegin,
                          const double* groupHmin, uint2* range, double* hmin, cudaStream_t s) {
  if (numGroups == 0) return Status::success();
  subsetGroupsKernel<<<gridFor(numGroups), kThreads, 0, s>>>(list, count, groupBegin, groupHmin, range, hmin);
  AG_CUDA_LAUNCHED("subsetGroupsKernel");
  return Status::success();
}

Status launchTargetGroups(const std::uint32_t* targets, unsigned count, const std::uint32_t* order, unsigned n,
                          const unsigned* groupBegin, unsigned numGroups, unsigned char* flags, unsigned* groupFlag,
                          unsigned* offset, unsigned* list, void* temp, std::size_t tempBytes, cudaStream_t s) {
  AG_CUDA_TRY(cudaMemsetAsync(flags, 0, n, s));
  AG_CUDA_TRY(cudaMemsetAsync(groupFlag, 0, (numGroups + 1) * sizeof(unsigned), s));
  if (count > 0) {
    flagTargetsKernel<<<gridFor(count), kThreads, 0, s>>>(targets, count, flags);
    AG_CUDA_LAUNCHED("flagTargetsKernel");
  }
  if (n > 0 && numGroups > 0) {
    markGroupsKernel<<<gridFor(n), kThreads, 0, s>>>(order, n, flags, groupBegin, numGroups, groupFlag);
    AG_CUDA_LAUNCHED("markGroupsKernel");
  }
  AG_TRY(scanExclusive(temp, tempBytes, groupFlag, offset, numGroups + 1, s));
  if (numGroups > 0) {
    compactGroupsKernel<<<gridFor(numGroups), kThreads, 0, s>>>(groupFlag, offset, numGroups, list);
    AG_CUDA_LAUNCHED("compactGroupsKernel");
  }
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
