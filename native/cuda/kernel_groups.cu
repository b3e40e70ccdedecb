/// \file kernel_groups.cu
/// \brief The walk groups on the device (tree/groups_k.h's rule, as tree/groups.cpp applies it on the host): each
/// group's first sorted cell, in cell order, from the sorted keys. Two passes over tiles of kGroupTile cells, the
/// first finding and counting each tile's group starts (kept as one bit per cell), the second (after an exclusive
/// scan of the counts) writing them.
/// A tile first marks the home-node starts of its cells and of the cap cells before it (a home node holds at most
/// cap cells, except one of the finest key level: then firstEqualKey), one bit per cell in shared memory; each
/// cell's home node then starts at the last mark at or before it.
#include <cub/block/block_scan.cuh>

#include "cuda/check.h"
#include "cuda/kernels.h"
#include "tree/groups_k.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kPerThread = kGroupTile / kThreads;  ///< consecutive cells per thread
constexpr unsigned kMaxCap = 32u * 64u;                 ///< groupNodeCap of the largest CUDA groupSize (64)
constexpr unsigned kWords = (kMaxCap + kGroupTile) / 32;
static_assert(kGroupTile % kThreads == 0 && kGroupTile % 32 == 0, "whole words per tile");
static_assert(kPerThread == kGroupStartsPerMask, "one mask per thread");

/// The home-node starts of cells [windowStart, windowStart + 32 kWords) as bits (cell 0 always starts one), then
/// which of this thread's cells [first, first + kPerThread) start a group: bit k for cell first + k.
__device__ __forceinline__ unsigned tileStarts(const std::uint64_t* __restrict__ keys, unsigned n, unsigned groupSize,
                                               unsigned cap, unsigned* bits) {
  const unsigned tileStart = blockIdx.x * kGroupTile;
  const unsigned pad = (cap + 31) / 32 * 32;  // the cap cells before the tile, whole words
  const long long windowStart = (long long)tileStart - pad;
  const unsigned words = (pad + kGroupTile) / 32;
  const int lane = threadIdx.x & 31;
  for (unsigned w = threadIdx.x >> 5; w < words; w += kThreads / 32) {
    const long long c = windowStart + 32ll * w + lane;
    const bool start = c == 0 || (c > 0 && c < n && homeNodeStartsAt(keys, n, unsigned(c), cap));
    const unsigned word = __ballot_sync(0xffffffffu, start);
    if (lane == 0) bits[w] = word;
  }
  __syncthreads();
  unsigned mask = 0;
  const unsigned first = tileStart + threadIdx.x * kPerThread;
  for (unsigned k = 0; k < kPerThread; ++k) {
    const unsigned i = first + k;
    if (i >= n) break;
    const unsigned home = homeStartFromMarks(bits, windowStart, keys, i, cap);
    if (groupStartsAt(i, home, groupSize)) mask |= 1u << k;
  }
  return mask;
}

/// Each tile's group starts: their count, and per thread a mask of its cells' starts (startMask, one per thread of
/// every tile) for the writing pass.
__global__ void __launch_bounds__(kThreads) countGroupsKernel(const std::uint64_t* __restrict__ keys, unsigned n,
                                                              unsigned groupSize, unsigned cap,
                                                              unsigned* __restrict__ tileCount,
                                                              StartMask* __restrict__ startMask) {
  __shared__ unsigned bits[kWords];
  __shared__ unsigned total;
  if (threadIdx.x == 0) total = 0;
  const unsigned mask = tileStarts(keys, n, groupSize, cap, bits);
  startMask[blockIdx.x * kThreads + threadIdx.x] = StartMask(mask);
  // order-free: a sum
  unsigned v = __popc(mask);
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(&total, v);
  __syncthreads();
  if (threadIdx.x == 0) tileCount[blockIdx.x] = total;
}

/// The starts the counting pass marked, written in cell order after the tile's offset.
__global__ void __launch_bounds__(kThreads) writeGroupsKernel(const StartMask* __restrict__ startMask, unsigned n,
                                                              const unsigned* __restrict__ tileOffset, unsigned tiles,
                                                              unsigned* __restrict__ groupBegin) {
  using Scan = cub::BlockScan<unsigned, kThreads>;
  __shared__ typename Scan::TempStorage scan;
  unsigned mask = startMask[blockIdx.x * kThreads + threadIdx.x];
  unsigned before = 0;
  Scan(scan).ExclusiveSum(unsigned(__popc(mask)), before);  // threads hold consecutive cells: cell order kept
  unsigned at = tileOffset[blockIdx.x] + before;
  const unsigned first = blockIdx.x * kGroupTile + threadIdx.x * kPerThread;
  while (mask != 0) {
    const int k = __ffs(mask) - 1;
    groupBegin[at++] = first + unsigned(k);
    mask &= mask - 1;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) groupBegin[tileOffset[tiles]] = n;  // the end of the last group
}

}  // namespace

unsigned groupTiles(unsigned n) { return (n + kGroupTile - 1) / kGroupTile; }

Status launchCountGroups(const std::uint64_t* keys, unsigned n, unsigned groupSize, unsigned* tileCount,
                         StartMask* startMask, cudaStream_t s) {
  if (groupNodeCap(groupSize) > kMaxCap)
    return Status::error(ErrorCode::InvalidOption, "CUDA backend: groupSize must be at most 64 for the walk groups");
  const unsigned tiles = groupTiles(n);
  AG_CUDA_TRY(cudaMemsetAsync(tileCount + tiles, 0, sizeof(unsigned), s));
  if (tiles == 0) return Status::success();
  countGroupsKernel<<<tiles, kThreads, 0, s>>>(keys, n, groupSize, groupNodeCap(groupSize), tileCount, startMask);
  AG_CUDA_LAUNCHED("countGroupsKernel");
  return Status::success();
}

Status launchWriteGroups(const StartMask* startMask, unsigned n, const unsigned* tileOffset, unsigned* groupBegin,
                         cudaStream_t s) {
  const unsigned tiles = groupTiles(n);
  if (tiles == 0) return Status::success();
  writeGroupsKernel<<<tiles, kThreads, 0, s>>>(startMask, n, tileOffset, tiles, groupBegin);
  AG_CUDA_LAUNCHED("writeGroupsKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
