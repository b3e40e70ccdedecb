/// \file build.cpp
/// \brief Breadth-first octree construction over Morton-sorted keys.
#include <algorithm>

#include "physics/moments_k.h"
#include "tree/keys.h"
#include "tree/tree.h"

namespace amrgrav {

Status buildOctree(const std::vector<std::uint64_t>& keys, const RootCube& root, int leafSize, Octree& t,
                   const SplitCount& splitCount) {
  t = Octree{};
  t.root = root;
  const std::uint32_t n = std::uint32_t(keys.size());
  if (n == 0) return Status::success();
  struct Pending { std::uint32_t ix, iy, iz; };  // integer cube coordinates at the node's level
  std::vector<Pending> coords;
  auto push = [&](std::uint32_t b, std::uint32_t c, std::uint8_t lev, Pending p) {
    t.cellBegin.push_back(b); t.cellCount.push_back(c); t.childBegin.push_back(0); t.childCount.push_back(0);
    t.level.push_back(lev); coords.push_back(p);
  };
  push(0, n, 0, {0, 0, 0});
  // Breadth-first: children are appended after every node of the current level, hence contiguous.
  for (std::size_t i = 0; i < t.cellBegin.size(); ++i) {
    const std::uint32_t b = t.cellBegin[i], c = t.cellCount[i];
    const int lev = t.level[i];
    t.depth = std::max(t.depth, lev);
    if (!nodeSplits(splitCount ? splitCount(lev, keys[b], c) : c, lev, leafSize)) continue;
    const std::uint32_t first = std::uint32_t(t.cellBegin.size());
    std::uint32_t s = b, e = b + c;
    std::uint8_t nchild = 0;
    const Pending pc = coords[i];
    while (s < e) {
      const unsigned oct = octantAt(keys[s], lev + 1);
      // cells are sorted, so the octant's cells are a contiguous run
      std::uint32_t f = s + 1;
      while (f < e && octantAt(keys[f], lev + 1) == oct) ++f;
      push(s, f - s, std::uint8_t(lev + 1), {2 * pc.ix + (oct & 1), 2 * pc.iy + ((oct >> 1) & 1), 2 * pc.iz + (oct >> 2)});
      ++nchild;
      s = f;
    }
    t.childBegin[i] = first;
    t.childCount[i] = nchild;
  }
  const std::size_t m = t.cellBegin.size();
  t.centre.resize(3 * m);
  for (std::size_t i = 0; i < m; ++i) {  // physics/moments_k.h, as cuda/kernel_moments.cu finds them on the device
    const double side = nodeCubeSide(root.side, t.level[i]);
    t.centre[3 * i + 0] = nodeCubeCentre(root.lo[0], coords[i].ix, side);
    t.centre[3 * i + 1] = nodeCubeCentre(root.lo[1], coords[i].iy, side);
    t.centre[3 * i + 2] = nodeCubeCentre(root.lo[2], coords[i].iz, side);
  }
  return Status::success();
}

}  // namespace amrgrav
