/// \file kernel_build.cu
/// \brief Breadth-first octree topology on the GPU, one level per pass: per node, the 8 octant boundaries of its
/// sorted key range by binary search (eight lanes per node, one search each); an exclusive scan of the child
/// counts over the level places the children.
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

/// The start of octant o among a node's sorted keys [b, e): the first index whose octant digit at childLevel is >= o
/// (b for o = 0). Keys in a node share the prefix above childLevel, so the digit is non-decreasing over the range.
__device__ __forceinline__ unsigned octantStart(const std::uint64_t* __restrict__ keys, unsigned b, unsigned e,
                                                int childLevel, unsigned o) {
  unsigned lo = b, hi = o == 0 ? b : e;
  while (lo < hi) {
    const unsigned mid = lo + (hi - lo) / 2;
    if (octantAt(keys[mid], childLevel) < o) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/// Eight lanes per node, lane o searching for octant o's start: the seven searches side by side rather than one
/// after the other. A node high in the tree holds millions of keys, and its searches are chains of dependent loads
/// (seven of ~20 steps each took ~50 us per level, whatever the level's width). Each node's lanes are one aligned
/// eighth of a warp. Returns in `bits` the node's non-empty octants (bit o), 0 for a leaf or no node.
struct NodeLanes {
  unsigned long long node;  ///< index within the level
  unsigned octant;          ///< this lane's octant
  uint4 t;                  ///< the node's (begin, count, ...)
  bool splits;              ///< the node has children
  unsigned start, end;      ///< this octant's keys [start, end)
  unsigned bits;            ///< the node's non-empty octants
};
__device__ __forceinline__ NodeLanes nodeLanes(const uint4* __restrict__ topo, const std::uint64_t* __restrict__ keys,
                                               unsigned levelBegin, unsigned width, int level, int leafSize) {
  NodeLanes L;
  const unsigned long long g = static_cast<unsigned long long>(blockIdx.x) * kThreads + threadIdx.x;
  L.node = g >> 3;
  L.octant = unsigned(g & 7u);
  const bool node = L.node < width;
  L.t = node ? topo[levelBegin + L.node] : make_uint4(0u, 0u, 0u, 0u);
  L.splits = node && nodeSplits(L.t.y, level, leafSize);  // tree/keys.h, as tree/build.cpp
  const unsigned e = L.t.x + L.t.y;
  L.start = L.splits ? octantStart(keys, L.t.x, e, level + 1, L.octant) : 0u;
  // octant o ends where o + 1 starts (the node's end for o = 7: a lane beyond its eighth reads its own value)
  const unsigned next = __shfl_down_sync(0xffffffffu, L.start, 1, 8);
  L.end = L.octant == 7 ? e : next;
  const bool nonEmpty = L.splits && L.end > L.start;
  const unsigned ballot = __ballot_sync(0xffffffffu, nonEmpty);
  L.bits = (ballot >> (threadIdx.x & 24u)) & 0xffu;
  return L;
}

__global__ void __launch_bounds__(kThreads) setRootKernel(uint4* topo, unsigned n) { topo[0] = make_uint4(0u, n, 0u, 0u); }

__global__ void __launch_bounds__(kThreads) countChildrenKernel(const uint4* __restrict__ topo,
                                                                const std::uint64_t* __restrict__ keys,
                                                                unsigned levelBegin, unsigned width, int level,
                                                                int leafSize, unsigned* __restrict__ count,
                                                                unsigned long long* __restrict__ splitNodes) {
  const NodeLanes L = nodeLanes(topo, keys, levelBegin, width, level, leafSize);
  if (L.octant != 0 || L.node > width) return;
  count[L.node] = unsigned(__popc(L.bits));  // 0 for a leaf, and for the scan's extra entry (node == width)
  if (L.splits) atomicAdd(splitNodes, 1ull);
}

__global__ void __launch_bounds__(kThreads) emitChildrenKernel(uint4* __restrict__ topo,
                                                               const std::uint64_t* __restrict__ keys,
                                                               unsigned levelBegin, unsigned width, int level,
                                                               int leafSize, const unsigned* __restrict__ offset,
                                                               unsigned levelEnd) {
  const NodeLanes L = nodeLanes(topo, keys, levelBegin, width, level, leafSize);
  __syncwarp();  // every lane has read the node before lane 0 rewrites it
  if (!L.splits) return;  // a leaf: its child range was written as (0, 0) when it was emitted
  const unsigned first = levelEnd + offset[L.node];
  if ((L.bits >> L.octant) & 1u) {
    const unsigned k = unsigned(__popc(L.bits & ((1u << L.octant) - 1u)));  // children before it, in octant order
    topo[first + k] = make_uint4(L.start, L.end - L.start, 0u, 0u);
  }
  if (L.octant == 0) topo[levelBegin + L.node] = make_uint4(L.t.x, L.t.y, first, unsigned(__popc(L.bits)));
}

/// Blocks for eight lanes per node over `nodes` nodes.
unsigned blocksForLanes(unsigned long long nodes) { return unsigned((8 * nodes + kThreads - 1) / kThreads); }

}  // namespace

Status launchSetRoot(uint4* topo, unsigned n, cudaStream_t s) {
  setRootKernel<<<1, 1, 0, s>>>(topo, n);
  AG_CUDA_LAUNCHED("setRootKernel");
  return Status::success();
}

Status launchCountChildren(const uint4* topo, const std::uint64_t* keys, unsigned levelBegin, unsigned width,
                           int level, int leafSize, unsigned* count, unsigned long long* splitNodes, cudaStream_t s) {
  countChildrenKernel<<<blocksForLanes(width + 1ull), kThreads, 0, s>>>(topo, keys, levelBegin, width, level, leafSize, count,
                                                                 splitNodes);
  AG_CUDA_LAUNCHED("countChildrenKernel");
  return Status::success();
}

Status scanExclusive(void* temp, std::size_t& tempBytes, const unsigned* in, unsigned* out, unsigned n,
                     cudaStream_t s) {
  AG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, tempBytes, in, out, n, s));
  if (temp) AG_CUDA_LAUNCHED("cub::DeviceScan::ExclusiveSum");
  return Status::success();
}

Status launchEmitChildren(uint4* topo, const std::uint64_t* keys, unsigned levelBegin, unsigned width, int level,
                          int leafSize, const unsigned* offset, unsigned levelEnd, cudaStream_t s) {
  emitChildrenKernel<<<blocksForLanes(width), kThreads, 0, s>>>(topo, keys, levelBegin, width, level, leafSize, offset,
                                                            levelEnd);
  AG_CUDA_LAUNCHED("emitChildrenKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
