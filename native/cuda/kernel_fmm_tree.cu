/// \file kernel_fmm_tree.cu
/// \brief The FMM's tree and upward pass on the device (kernels_fmm_tree.h). Every rounding is explicit
/// (fmm/upward_k.h over physics/rounding.h's RoundNearest); built with -fmad=false all the same (cmake/cuda.cmake).
#include "cuda/check.h"
#include "cuda/grid_stride.h"
#include "cuda/kernels_fmm_tree.h"
#include "physics/fmm_mac_k.h"
#include "physics/moments_k.h"
#include "tree/keys.h"

namespace amrgrav {
namespace cuda {
namespace {

/// Threads of a node's block in the upward pass: one per multipole term (120 at order 7).
constexpr int kTermThreads = 128;

/// The level of node i (levelStart ascending; its last entry the node count).
__device__ __forceinline__ int levelOf(const FmmTreeView& v, unsigned i) {
  int l = 0;
  while (l + 1 < v.levels && v.levelStart[l + 1] <= i) ++l;
  return l;
}

__global__ void __launch_bounds__(kGridThreads) topologyKernel(FmmTreeView v, const uint4* __restrict__ topo,
                                                               const std::uint64_t* __restrict__ nodeKeys) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < v.nodes; i += gridDim.x * blockDim.x) {
    const uint4 t = topo[i];
    v.cellBegin[i] = t.x;
    v.cellCount[i] = t.y;
    v.childBegin[i] = t.z;
    v.childCount[i] = std::uint8_t(t.w);
    const int level = levelOf(v, i);
    const double side = nodeCubeSide(v.rootSide, level);  // tree/build.cpp's cube centres
    for (int d = 0; d < 3; ++d)
      v.cube[3 * i + d] = nodeCubeCentre(v.rootLo[d], nodeCubeCoordinate(nodeKeys[i], level, d), side);
  }
}

__global__ void __launch_bounds__(kTermThreads) upwardLevelKernel(FmmTreeView v, unsigned levelBegin) {
  const unsigned i = levelBegin + blockIdx.x;
  __shared__ double ctr[3];
  __shared__ double h[fmm::kUpwardLanes][3];
  __shared__ const double* Mc[fmm::kUpwardLanes];
  const int nc = v.childCount[i];
  const std::uint32_t b = v.cellBegin[i], e = b + v.cellCount[i];
  if (threadIdx.x == 0) {  // the node's sums: a leaf's cells in order, else its children's sums in child order
    fmm::FmmSums a;
    if (nc == 0) {
      for (std::uint32_t j = b; j < e; ++j) fmm::fmmAddCell(a, v.mass[j], v.x[j], v.y[j], v.z[j]);
    } else {
      for (int k = 0; k < nc; ++k) {
        const double* s = v.sums + 5 * std::size_t(v.childBegin[i] + unsigned(k));
        fmm::FmmSums c;
        c.m = s[0];
        c.am = s[1];
        for (int d = 0; d < 3; ++d) c.s[d] = s[2 + d];
        fmm::fmmAddSums(a, c);
      }
    }
    double* s = v.sums + 5 * std::size_t(i);
    s[0] = a.m;
    s[1] = a.am;
    for (int d = 0; d < 3; ++d) {
      s[2 + d] = a.s[d];
      ctr[d] = fmm::fmmCentreOf(a, d, v.cube[3 * std::size_t(i) + d], false);
      v.centre[3 * std::size_t(i) + d] = ctr[d];
    }
  }
  __syncthreads();
  if (int(threadIdx.x) < nc) {  // the children's lanes: their multipoles and offsets
    const std::size_t ch = v.childBegin[i] + threadIdx.x;
    Mc[threadIdx.x] = v.M + ch * std::size_t(v.mStride);
    for (int d = 0; d < 3; ++d) h[threadIdx.x][d] = RoundNearest::sub(v.centre[3 * ch + d], ctr[d]);
  }
  __syncthreads();
  double* M = v.M + std::size_t(i) * std::size_t(v.mStride);
  for (int q = threadIdx.x; q < v.terms; q += blockDim.x)
    M[q] = nc == 0 ? fmm::fmmP2MTerm(v.mono, q, v.x, v.y, v.z, v.mass, b, e, ctr)
                   : fmm::fmmM2MTerm(v.mono, v.m2mJ, v.m2mNJ, v.m2mStart[q], v.m2mStart[q + 1], Mc, h, nc);
}

/// A thread per cell, every level: the cell's squared distance to its node's centre at that level; lanes of one node
/// (contiguous: a level's nodes hold ascending cell ranges) reduced by a segmented maximum, the first lane's value
/// into the node's by an integer atomicMax on the bits (non-negative doubles order as their bits).
__global__ void __launch_bounds__(kGridThreads) radiusKernel(FmmTreeView v) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned stride = gridDim.x * blockDim.x;
  for (unsigned base = blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < v.cells; base += stride) {
    const unsigned j = base + lane;
    const bool in = j < v.cells;
    for (int l = 0; l < v.levels; ++l) {
      const unsigned node =
          in ? fmm::fmmNodeAtLevel(v.cellBegin, v.cellCount, v.levelStart[l], v.levelStart[l + 1], j) : 0xffffffffu;
      double r2 = node != 0xffffffffu ? fmm::fmmCellDistance2(v.x[j], v.y[j], v.z[j], v.centre + 3 * std::size_t(node))
                                      : 0.0;
      for (unsigned off = 1; off < 32; off <<= 1) {
        const double o = __shfl_down_sync(0xffffffffu, r2, off);
        const unsigned on = __shfl_down_sync(0xffffffffu, node, off);
        if (lane + off < 32 && on == node) r2 = stdMax(r2, o);
      }
      const unsigned prev = __shfl_up_sync(0xffffffffu, node, 1);
      if (node != 0xffffffffu && (lane == 0 || prev != node))
        atomicMax(v.r2 + node, static_cast<unsigned long long>(__double_as_longlong(r2)));
    }
  }
}

__global__ void __launch_bounds__(kGridThreads) macKernel(FmmTreeView v) {
  const double rootAbsMass = v.sums[1];
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < v.nodes; i += gridDim.x * blockDim.x) {
    const double r = RoundNearest::sqrt(__longlong_as_double(static_cast<long long>(v.r2[i])));
    v.mac[i] = r;
    v.mac[v.nodes + i] = fmmCriticalRadius(r, v.theta);
    v.mac[2 * std::size_t(v.nodes) + i] = v.sums[5 * std::size_t(i) + 1];
    v.mac[3 * std::size_t(v.nodes) + i] =
        fmmPotentialLowerBound(v.centre + 3 * std::size_t(i), r, v.rootLo, v.rootSide, rootAbsMass);
  }
}

}  // namespace

Status launchFmmTopology(const FmmTreeView& v, const uint4* topo, const std::uint64_t* nodeKeys, cudaStream_t s) {
  if (v.nodes == 0) return Status::success();
  topologyKernel<<<gridFor(v.nodes), kGridThreads, 0, s>>>(v, topo, nodeKeys);
  AG_CUDA_LAUNCHED("topologyKernel");
  return Status::success();
}

Status launchFmmUpwardLevel(const FmmTreeView& v, int level, cudaStream_t s) {
  const unsigned width = v.levelStart[level + 1] - v.levelStart[level];
  if (width == 0) return Status::success();
  upwardLevelKernel<<<width, kTermThreads, 0, s>>>(v, v.levelStart[level]);
  AG_CUDA_LAUNCHED("upwardLevelKernel");
  return Status::success();
}

Status launchFmmRadius(const FmmTreeView& v, cudaStream_t s) {
  if (v.cells == 0) return Status::success();
  radiusKernel<<<gridFor(v.cells), kGridThreads, 0, s>>>(v);
  AG_CUDA_LAUNCHED("radiusKernel");
  return Status::success();
}

Status launchFmmMac(const FmmTreeView& v, cudaStream_t s) {
  if (v.nodes == 0) return Status::success();
  macKernel<<<gridFor(v.nodes), kGridThreads, 0, s>>>(v);
  AG_CUDA_LAUNCHED("macKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
