/// \file kernel_groups.cu
/// \brief The walk groups on the device (tree/groups_k.h's rule, as tree/groups.cpp applies it on the host): each
/// group's first sorted cell, in cell order, from the sorted keys. Two passes over tiles of kGroupTile cells, the
/// first counting each tile's group starts, the second (after an exclusive scan of the counts) writing them.
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

/// The home-node starts of cells [windowStart, windowStart + 32 kWords) as bits (cell 0 always starts one), then
/// the number of group starts among this thread's cells [first, first + kPerThread) (and their indices in `at`).
template <bool Write>
__device__ __forceinline__ unsigned tileStarts(const std::uint64_t* __restrict__ keys, unsigned n,
                                               unsigned groupSize, unsigned cap, unsigned* bits, unsigned* at) {
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
  unsigned count = 0;
  const unsigned first = tileStart + threadIdx.x * kPerThread;
  for (unsigned k = 0; k < kPerThread; ++k) {
    const unsigned i = first + k;
    if (i >= n) break;
    const unsigned home = homeStartFromMarks(bits, windowStart, keys, i, cap);
    if (groupStartsAt(i, home, groupSize)) {
      if (Write) at[count] = i;
      ++count;
    }
  }
  return count;
}

__global__ void __launch_bounds__(kThreads) countGroupsKernel(const std::uint64_t* __restrict__ keys, unsigned n,
                                                              unsigned groupSize, unsigned cap,
                                                              unsigned* __restrict__ tileCount) {
  __shared__ unsigned bits[kWords];
  __shared__ unsigned total;
  if (threadIdx.x == 0) total = 0;
  const unsigned c = tileStarts<false>(keys, n, groupSize, cap, bits, nullptr);
  // order-free: a sum
  unsigned v = c;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(&total, v);
  __syncthreads();
  if (threadIdx.x == 0) tileCount[blockIdx.x] = total;
}

__global__ void __launch_bounds__(kThreads) writeGroupsKernel(const std::uint64_t* __restrict__ keys, unsigned n,
                                                              unsigned groupSize, unsigned cap,
                                                              const unsigned* __restrict__ tileOffset, unsigned tiles,
                                                              unsigned* __restrict__ groupBegin) {
  using Scan = cub::BlockScan<unsigned, kThreads>;
  __shared__ unsigned bits[kWords];
  __shared__ typename Scan::TempStorage scan;
  unsigned at[kPerThread];
  const unsigned c = tileStarts<true>(keys, n, groupSize, cap, bits, at);
  unsigned before = 0;
  Scan(scan).ExclusiveSum(c, before);  // threads hold consecutive cells: the starts stay in cell order
  const unsigned base = tileOffset[blockIdx.x] + before;
  for (unsigned k = 0; k < c; ++k) groupBegin[base + k] = at[k];
  if (blockIdx.x == 0 && threadIdx.x == 0) groupBegin[tileOffset[tiles]] = n;  // the end of the last group
}

}  // namespace

unsigned groupTiles(unsigned n) { return (n + kGroupTile - 1) / kGroupTile; }

Status launchCountGroups(const std::uint64_t* keys, unsigned n, unsigned groupSize, unsigned* tileCount,
                         cudaStream_t s) {
  if (groupNodeCap(groupSize) > kMaxCap)
    return Status::error(ErrorCode::InvalidOption, "CUDA backend: groupSize must be at most 64 for the walk groups");
  const unsigned tiles = groupTiles(n);
  AG_CUDA_TRY(cudaMemsetAsync(tileCount + tiles, 0, sizeof(unsigned), s));
  if (tiles == 0) return Status::success();
  countGroupsKernel<<<tiles, kThreads, 0, s>>>(keys, n, groupSize, groupNodeCap(groupSize), tileCount);
  AG_CUDA_LAUNCHED("countGroupsKernel");
  return Status::success();
}

Status launchWriteGroups(const std::uint64_t* keys, unsigned n, unsigned groupSize, const unsigned* tileOffset,
                         unsigned* groupBegin, cudaStream_t s) {
  const unsigned tiles = groupTiles(n);
  if (tiles == 0) return Status::success();
  writeGroupsKernel<<<tiles, kThreads, 0, s>>>(keys, n, groupSize, groupNodeCap(groupSize), tileOffset, tiles,
                                               groupBegin);
  AG_CUDA_LAUNCHED("writeGroupsKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
