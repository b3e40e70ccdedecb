/// \file keys.h
/// \brief Morton (Z-order) keys: 21 bits per axis interleaved into 63 bits, x in the lowest bit of each triple.
#pragma once
#include <cstdint>
#include "core/hostdevice.h"

namespace amrgrav {

constexpr int kKeyBits = 21;                       ///< bits per axis
constexpr std::uint32_t kKeyCells = 1u << kKeyBits; ///< grid cells per axis at the finest key level

/// Spreads the low 21 bits of v so that bit i lands on bit 3i.
AG_HD std::uint64_t spreadBits3(std::uint64_t v) {
  v &= 0x1fffffULL;
  v = (v | (v << 32)) & 0x1f00000000ffffULL;
  v = (v | (v << 16)) & 0x1f0000ff0000ffULL;
  v = (v | (v << 8)) & 0x100f00f00f00f00fULL;
  v = (v | (v << 4)) & 0x10c30c30c30c30c3ULL;
  v = (v | (v << 2)) & 0x1249249249249249ULL;
  return v;
}

/// Inverse of spreadBits3: bits 0, 3, 6, ... of v to bits 0, 1, 2, ...
AG_HD std::uint32_t compactBits3(std::uint64_t v) {
  v &= 0x1249249249249249ULL;
  v = (v ^ (v >> 2)) & 0x10c30c30c30c30c3ULL;
  v = (v ^ (v >> 4)) & 0x100f00f00f00f00fULL;
  v = (v ^ (v >> 8)) & 0x1f0000ff0000ffULL;
  v = (v ^ (v >> 16)) & 0x1f00000000ffffULL;
  v = (v ^ (v >> 32)) & 0x1fffffULL;
  return std::uint32_t(v);
}

/// A node's integer cube coordinate along axis d (0 = x) at `level` from any key under it (its first cell's).
AG_HD std::uint32_t nodeCubeCoordinate(std::uint64_t key, int level, int d) {
  return compactBits3((key >> (3 * (kKeyBits - level))) >> d);
}

AG_HD std::uint64_t mortonKey(std::uint32_t ix, std::uint32_t iy, std::uint32_t iz) {
  return spreadBits3(ix) | (spreadBits3(iy) << 1) | (spreadBits3(iz) << 2);
}

/// Integer coordinate of x on the key grid of a cube [lo, lo + side), clamped to the grid.
AG_HD std::uint32_t keyCoordinate(double x, double lo, double invCellSide) {
  double q = (x - lo) * invCellSide;
  if (!(q > 0.0)) return 0u;  // also catches NaN, which validation rejects earlier
  if (q >= double(kKeyCells - 1)) return kKeyCells - 1;
  return std::uint32_t(q);
}

/// Is a node of `count` cells at tree level `level` split into children? More than leafSize cells and a level
/// above the keys' finest (tree/build.cpp on the host, cuda/kernel_build.cu on the device).
AG_HD bool nodeSplits(std::uint32_t count, int level, int leafSize) {
  return count > std::uint32_t(leafSize) && level < kKeyBits;
}

/// The octant digit (0..7) of a key at tree level `level` (children of the root are level 1).
AG_HD unsigned octantAt(std::uint64_t key, int level) {
  return unsigned(key >> (3 * (kKeyBits - level))) & 7u;
}

}  // namespace amrgrav
