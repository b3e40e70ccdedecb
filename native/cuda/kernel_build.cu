/// \file kernel_build.cu
/// \brief Breadth-first octree topology on the GPU, one level per pass: per node, the 8 octant boundaries of its
/// sorted key range by binary search; an exclusive scan of the child counts over the level places the children.
/// Nodes of a level are a contiguous index range, children of one node are contiguous and in octant order, and
/// the levels follow each other: exactly the order of tree/build.cpp's queue (level by level, parent order
/// within a level), so node indices agree with the CPU tree.
#include <cub/device/device_scan.cuh>

#include "tree/keys.h"
#include "cuda/check.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = 256;

/// s[o] = first index in [b, e) whose octant digit at childLevel is >= o (s[0] = b, s[8] = e). Keys in a node
/// share the prefix above childLevel, so the digit is non-decreasing over the range.
__device__ __forceinline__ void octantBounds(const std::uint64_t* __restrict__ keys, unsigned b, unsigned e,
                                             int childLevel, unsigned s[9]) {
  s[0] = b;
  s[8] = e;
#pragma unroll
  for (unsigned o = 1; o < 8; ++o) {
    unsigned lo = s[o - 1], hi = e;
    while (lo < hi) {
      const unsigned mid = lo + (hi - lo) / 2;
      if (octantAt(keys[mid], childLevel) < o) lo = mid + 1;
      else hi = mid;
    }
    s[o] = lo;
  }
}

__global__ void __launch_bounds__(kThreads) setRootKernel(uint4* topo, unsigned n) { topo[0] = make_uint4(0u, n, 0u, 0u); }

__global__ void __launch_bounds__(kThreads) countChildrenKernel(const uint4* __restrict__ topo,
                                                                const std::uint64_t* __restrict__ keys,
                                                                unsigned levelBegin, unsigned width, int level,
                                                                int leafSize, unsigned* __restrict__ count,
                                                                unsigned long long* __restrict__ splitNodes) {
  const unsigned i = blockIdx.x * kThreads + threadIdx.x;
  if (i > width) return;
  if (i == width) {
    count[width] = 0;
    return;
  }
  const uint4 t = topo[levelBegin + i];
  unsigned nchild = 0;
  if (nodeSplits(t.y, level, leafSize)) {  // tree/keys.h, as tree/build.cpp
    unsigned s[9];
    octantBounds(keys, t.x, t.x + t.y, level + 1, s);
#pragma unroll
    for (int o = 0; o < 8; ++o) nchild += s[o + 1] > s[o] ? 1u : 0u;
    atomicAdd(splitNodes, 1ull);
  }
  count[i] = nchild;
}

__global__ void __launch_bounds__(kThreads) emitChildrenKernel(uint4* __restrict__ topo,
                                                               const std::uint64_t* __restrict__ keys,
                                                               unsigned levelBegin, unsigned width, int level,
                                                               int leafSize, const unsigned* __restrict__ offset,
                                                               unsigned levelEnd) {
  const unsigned i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= width) return;
  const uint4 t = topo[levelBegin + i];
  if (!nodeSplits(t.y, level, leafSize)) return;  // a leaf: its child range was written as (0, 0) when it was emitted
  unsigned s[9];
  octantBounds(keys, t.x, t.x + t.y, level + 1, s);
  const unsigned first = levelEnd + offset[i];
  unsigned k = 0;
#pragma unroll
  for (int o = 0; o < 8; ++o) {
    if (s[o + 1] > s[o]) {
      topo[first + k] = make_uint4(s[o], s[o + 1] - s[o], 0u, 0u);
      ++k;
    }
  }
  topo[levelBegin + i] = make_uint4(t.x, t.y, first, k);
}

unsigned blocksFor(unsigned n) { return (n + kThreads - 1) / kThreads; }

}  // namespace

Status launchSetRoot(uint4* topo, unsigned n, cudaStream_t s) {
  setRootKernel<<<1, 1, 0, s>>>(topo, n);
  AG_CUDA_LAUNCHED("setRootKernel");
  return Status::success();
}

Status launchCountChildren(const uint4* topo, const std::uint64_t* keys, unsigned levelBegin, unsigned width,
                           int level, int leafSize, unsigned* count, unsigned long long* splitNodes, cudaStream_t s) {
  countChildrenKernel<<<blocksFor(width + 1), kThreads, 0, s>>>(topo, keys, levelBegin, width, level, leafSize, count,
                                                                 splitNodes);
  AG_CUDA_LAUNCHED("countChildrenKernel");
  return Status::success();
}

Status scanExclusive(void* temp, std::size_t& tempBytes, const unsigned* in, unsigned* out, unsigned n,
                     cudaStream_t s) {
  AG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, tempBytes, in, out, int(n), s));
  if (temp) AG_CUDA_LAUNCHED("cub::DeviceScan::ExclusiveSum");
  return Status::success();
}

Status launchEmitChildren(uint4* topo, const std::uint64_t* keys, unsigned levelBegin, unsigned width, int level,
                          int leafSize, const unsigned* offset, unsigned levelEnd, cudaStream_t s) {
  emitChildrenKernel<<<blocksFor(width), kThreads, 0, s>>>(topo, keys, levelBegin, width, level, leafSize, offset,
                                                            levelEnd);
  AG_CUDA_LAUNCHED("emitChildrenKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
