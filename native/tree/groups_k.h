/// \file groups_k.h
/// \brief The walk groups' rule, written once for the CPU (tree/groups.cpp) and the GPU (cuda/kernel_groups.cu):
/// integer arithmetic on the sorted Morton keys only, so both backends cut the cells into the same groups.
///
/// Rule. A cell's "home node" is the largest node of the key octree that contains it and holds at most
/// groupNodeCap(groupSize) = 32 groupSize cells (a node of the finest key level counts as one node, whatever it
/// holds). Home nodes partition the sorted cells into contiguous runs; each run is cut into groups of groupSize
/// consecutive cells from its start (the last one shorter). So a group's box stays inside a region that holds at
/// most 32 groupSize cells, in any distribution. Until issue #18 group g was [g groupSize, (g + 1) groupSize): in
/// the sparse outskirts of a clustered point set such a run of 32 Morton keys can jump across most of the root
/// cube, and its warp then opens most of the tree (a Plummer sphere's box walk was 8x slower than the vote).
/// Measured on the CPU (bench/RESULTS.md, issue #18): on a 200k-point Plummer sphere the largest group's lists fell
/// from 195k entries to 7-11k; caps of 8 and 32 groupSize need 40 and 37 million list entries in all for a median
/// acceleration error of 6e-5 (a larger box is more accurate at the same theta); restarting runs at home nodes
/// instead of only cutting the old runs there saves a fifth of them.
///
/// Meshes keep the runs of before: on a uniform 2^k grid or a block-structured mesh whose 8^3 blocks are nodes of
/// the key octree (a cubic domain of 2^k blocks per axis, the root cube being the domain), every node holds a
/// power of 8 cells, so a home node holds the largest power of 8 <= 32 groupSize cells, a multiple of groupSize
/// for any power-of-two groupSize, and starts at a multiple of groupSize. The groups are then
/// [g groupSize, (g + 1) groupSize) as before: the same lists, bitwise the same results (test/groups.test.ts).
///
/// Cost: one test per cell on its key and its predecessor's (two galloping searches over at most cap + 1 keys when
/// their smallest common node must be counted); no tree and no scratch per cell.
#pragma once
#include <cstdint>

#include "core/hostdevice.h"
#include "tree/keys.h"

namespace amrgrav {

/// The most cells a home node holds (see the file comment).
AG_HD std::uint32_t groupNodeCap(std::uint32_t groupSize) { return 32u * groupSize; }

/// The level of the smallest key-octree node holding both keys (0: the root; kKeyBits: a == b).
AG_HD int commonKeyLevel(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t x = a ^ b;
  if (x == 0) return kKeyBits;
#ifdef __CUDA_ARCH__
  const int top = 63 - __clzll(static_cast<long long>(x));
#else
  const int top = 63 - __builtin_clzll(x);
#endif
  return kKeyBits - 1 - top / 3;  // bit `top` lies in the octal digit of level kKeyBits - top / 3
}

/// Does a home node start at sorted cell i (0 < i < n)? Cells i - 1 and i have different home nodes exactly when
/// their smallest common node holds more than `cap` cells. Its cells are a run of the sorted keys around i - 1 and
/// i, counted inside windows of cap + 1 keys on each side: enough to tell "more than cap".
AG_HD bool homeNodeStartsAt(const std::uint64_t* keys, std::uint32_t n, std::uint32_t i, std::uint32_t cap) {
  const std::uint64_t a = keys[i - 1], b = keys[i];
  if (a == b) return false;  // one node of the finest level: never cut
  const int shift = 3 * (kKeyBits - commonKeyLevel(a, b));
  const std::uint64_t prefix = b >> shift;
  // the first index in [i - 1 - cap, i - 1] (clamped at 0) whose key has the prefix (keys[i - 1] has it): steps of
  // 1, 2, 4, ... away from i - 1 until a key falls below the prefix, then a binary search in the last step (most
  // runs are short: a few probes in the cache lines around i instead of a search over the whole window)
  const std::uint32_t left = i - 1 >= cap ? i - 1 - cap : 0u;
  std::uint32_t lo = left, hi = i - 1;  // hi has the prefix
  for (std::uint32_t step = 1; hi - left >= step; step <<= 1) {
    const std::uint32_t probe = hi - step;
    if ((keys[probe] >> shift) < prefix) {
      lo = probe + 1;
      break;
    }
    hi = probe;
  }
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if ((keys[mid] >> shift) < prefix) lo = mid + 1;
    else hi = mid;
  }
  const std::uint32_t first = lo;
  // the last index in [i, i + cap] (clamped at n - 1) whose key has the prefix (keys[i] has it), likewise
  const std::uint32_t right = n - 1 - i > cap ? i + cap : n - 1;
  lo = i;  // lo has the prefix
  hi = right;
  for (std::uint32_t step = 1; right - lo >= step; step <<= 1) {
    const std::uint32_t probe = lo + step;
    if ((keys[probe] >> shift) > prefix) {
      hi = probe - 1;
      break;
    }
    lo = probe;
  }
  while (lo < hi) {
    const std::uint32_t mid = hi - (hi - lo) / 2;
    if ((keys[mid] >> shift) > prefix) hi = mid - 1;
    else lo = mid;
  }
  return lo - first + 1 > cap;
}

/// The first sorted cell with key keys[i] (a home node of the finest level that holds more than cap cells has no
/// other start to find; a binary search over [0, i]).
AG_HD std::uint32_t firstEqualKey(const std::uint64_t* keys, std::uint32_t i) {
  std::uint32_t lo = 0, hi = i;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < keys[i]) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/// Where cell i's home node starts, from marks of the home-node starts (cuda/kernel_groups.cu's tile: bit b of
/// marks[w] marks cell windowStart + 32 w + b, for every cell of the window up to i; the window must begin at most
/// cap - 1 cells before max(i + 1 - cap, 0)). A home node of at most cap cells starts at the last mark in
/// [i + 1 - cap, i]; without one, it is a node of the finest level holding more (firstEqualKey).
AG_HD std::uint32_t homeStartFromMarks(const std::uint32_t* marks, long long windowStart, const std::uint64_t* keys,
                                       std::uint32_t i, std::uint32_t cap) {
  const std::uint32_t off = std::uint32_t(i - windowStart);
  const std::uint32_t lowest = i + 1 >= cap ? i + 1 - cap : 0u;
  const std::uint32_t wLowest = std::uint32_t(lowest - windowStart) / 32;
  std::uint32_t w = off / 32;
  const std::uint32_t b = off % 32;
  std::uint32_t m = marks[w] & (b == 31 ? 0xffffffffu : ((2u << b) - 1u));
  while (m == 0 && w > wLowest) m = marks[--w];
  if (m != 0) {
#ifdef __CUDA_ARCH__
    const int top = 31 - __clz(static_cast<int>(m));
#else
    const int top = 31 - __builtin_clz(m);
#endif
    const std::uint32_t home = std::uint32_t(windowStart + 32ll * w + top);
    if (home >= lowest) return home;
  }
  return firstEqualKey(keys, i);
}

/// Does a group start at sorted cell i, whose home node starts at `home`?
AG_HD bool groupStartsAt(std::uint32_t i, std::uint32_t home, std::uint32_t groupSize) {
  return (i - home) % groupSize == 0;
}

}  // namespace amrgrav
