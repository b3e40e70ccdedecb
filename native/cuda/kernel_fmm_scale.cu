/// \file kernel_fmm_scale.cu
/// \brief The signed sources' scale's device parts (kernels_fmm_scale.h). The net masses' adds are explicit
/// (fmm/signed_scale_k.h netMassStep: __dadd_rn); built with -fmad=false all the same (cmake/cuda.cmake). The leaf
/// estimates need no particular rounding: their margin covers it.
#include "cuda/check.h"
#include "cuda/grid_stride.h"
#include "cuda/kernels_fmm_scale.h"
#include "fmm/p2p_tiles_k.h"
#include "fmm/signed_scale_k.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kWarpsPerBlock = kGridThreads / 32;

__device__ __forceinline__ double warpMax(double v) {
  for (int off = 16; off > 0; off >>= 1) v = fmax(v, __shfl_xor_sync(kFull, v, off));
  return v;
}

__global__ void __launch_bounds__(kGridThreads) leafNearKernel(const ScaleTreeView v, double* __restrict__ perNode,
                                                               std::uint64_t* __restrict__ hash) {
  double* const estimate = perNode;
  double* const margin = perNode + v.nodes;
  double* const hOut = perNode + 2 * std::size_t(v.nodes);
  __shared__ double invR[fmm::kLatticeR2];
  for (int r2 = int(threadIdx.x); r2 < fmm::kLatticeR2; r2 += kGridThreads) invR[r2] = fmm::latticeInverseDistance(r2);
  __syncthreads();
  const unsigned lane = threadIdx.x & 31, warps = gridDim.x * kWarpsPerBlock;
  fmm::TileBuildView tv;  // regularLeaf's inputs
  tv.nodes = v.nodes;
  tv.childCount = v.childCount;
  tv.cellBegin = v.cellBegin;
  tv.cellCount = v.cellCount;
  tv.x = v.x;
  tv.y = v.y;
  tv.z = v.z;
  tv.size = v.size;
  for (unsigned i = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5); i < v.nodes; i += warps) {
    if (v.childCount[i] != 0) {
      if (lane == 0) {
        estimate[i] = margin[i] = hOut[i] = 0.0;
        hash[i] = 0;
      }
      continue;
    }
    const std::uint32_t cb = v.cellBegin[i], count = v.cellCount[i];
    bool ok = fmm::regularCandidate(tv, i);  // the same for every lane
    if (ok) {
      bool mine = true;
      for (int k = int(lane); k < fmm::kTileCellsK; k += 32) mine = mine && fmm::regularCell(tv, cb, k);
      ok = __all_sync(kFull, mine);
    }
    const double h = ok ? v.size[cb] : 0.0;
    double vmax = 0, amax = 0;
    for (std::uint32_t t = lane; t < count; t += 32) {
      double q = 0, a = 0;
      fmm::leafNearCellEstimate(v.x + cb, v.y + cb, v.z + cb, v.mass + cb, count, ok, h, invR, t, q, a);
      vmax = fmax(vmax, fabs(q));
      amax = fmax(amax, a);
    }
    vmax = warpMax(vmax);
    amax = warpMax(amax);
    if (lane == 0) {
      estimate[i] = vmax;
      margin[i] = fmm::leafNearMargin(amax, count);
      hOut[i] = h;
      hash[i] = ok ? fmm::leafMassHash(v.mass + cb) : 0;
    }
  }
}

__global__ void __launch_bounds__(kGridThreads) levelNetKernel(const ScaleTreeView v, unsigned first, unsigned count,
                                                               double* __restrict__ net) {
  constexpr int kLoads = 4;  // 128 masses in flight per warp
  const unsigned lane = threadIdx.x & 31, warps = gridDim.x * kWarpsPerBlock;
  for (unsigned k = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5); k < count; k += warps) {
    const std::uint32_t cb = v.cellBegin[first + k], ce = cb + v.cellCount[first + k];
    double m = 0;  // every lane runs the same chain
    for (std::uint32_t base = cb; base < ce; base += 32 * kLoads) {
      double val[kLoads];
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const std::uint32_t j = base + 32 * u + lane;
        val[u] = j < ce ? v.mass[j] : 0.0;
      }
#pragma unroll
      for (int u = 0; u < kLoads; ++u)
        for (int l = 0; l < 32; ++l) {
          const double x = __shfl_sync(kFull, val[u], l);
          if (base + 32 * u + l < ce) m = fmm::netMassStep(m, x);  // uniform over the warp
        }
    }
    if (lane == 0) net[k] = m;
  }
}

__global__ void __launch_bounds__(kGridThreads) gatherLeafKernel(const ScaleTreeView v,
                                                                 const std::uint32_t* __restrict__ leaf,
                                                                 const std::uint32_t* __restrict__ offset,
                                                                 unsigned candidates, std::size_t total,
                                                                 double* __restrict__ out) {
  const unsigned lane = threadIdx.x & 31, warps = gridDim.x * kWarpsPerBlock;
  const double* from[5] = {v.x, v.y, v.z, v.size, v.mass};
  for (unsigned k = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5); k < candidates; k += warps) {
    const std::uint32_t cb = v.cellBegin[leaf[k]], count = v.cellCount[leaf[k]];
    for (std::uint32_t j = lane; j < count; j += 32)
      for (int q = 0; q < 5; ++q) out[std::size_t(q) * total + offset[k] + j] = from[q][cb + j];
  }
}

__global__ void __launch_bounds__(kGridThreads) sameMassesKernel(const ScaleTreeView v,
                                                                 const std::uint32_t* __restrict__ member,
                                                                 const std::uint32_t* __restrict__ rep, unsigned pairs,
                                                                 std::uint8_t* __restrict__ same) {
  const unsigned lane = threadIdx.x & 31, warps = gridDim.x * kWarpsPerBlock;
  for (unsigned k = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5); k < pairs; k += warps) {
    const double *a = v.mass + v.cellBegin[member[k]], *b = v.mass + v.cellBegin[rep[k]];
    bool eq = true;
    for (int j = int(lane); j < fmm::kTileCellsK; j += 32) eq = eq && fmm::doubleBits(a[j]) == fmm::doubleBits(b[j]);
    eq = __all_sync(kFull, eq);
    if (lane == 0) same[k] = eq ? 1 : 0;
  }
}

unsigned warpGrid(std::size_t items) { return gridFor(items * 32); }

}  // namespace

Status launchLeafNearEstimates(const ScaleTreeView& v, double* perNode, std::uint64_t* hash, cudaStream_t s) {
  if (v.nodes == 0) return Status::success();
  leafNearKernel<<<warpGrid(v.nodes), kGridThreads, 0, s>>>(v, perNode, hash);
  AG_CUDA_LAUNCHED("leafNearKernel");
  return Status::success();
}

Status launchSameLeafMasses(const ScaleTreeView& v, const std::uint32_t* member, const std::uint32_t* rep,
                            unsigned pairs, std::uint8_t* same, cudaStream_t s) {
  if (pairs == 0) return Status::success();
  sameMassesKernel<<<warpGrid(pairs), kGridThreads, 0, s>>>(v, member, rep, pairs, same);
  AG_CUDA_LAUNCHED("sameMassesKernel");
  return Status::success();
}

Status launchLevelNetMasses(const ScaleTreeView& v, unsigned first, unsigned count, double* net, cudaStream_t s) {
  if (count == 0) return Status::success();
  levelNetKernel<<<warpGrid(count), kGridThreads, 0, s>>>(v, first, count, net);
  AG_CUDA_LAUNCHED("levelNetKernel");
  return Status::success();
}

Status launchGatherLeafCells(const ScaleTreeView& v, const std::uint32_t* leaf, const std::uint32_t* offset,
                             unsigned candidates, std::size_t total, double* out, cudaStream_t s) {
  if (candidates == 0) return Status::success();
  gatherLeafKernel<<<warpGrid(candidates), kGridThreads, 0, s>>>(v, leaf, offset, candidates, total, out);
  AG_CUDA_LAUNCHED("gatherLeafKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
