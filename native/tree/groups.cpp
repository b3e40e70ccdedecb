/// \file groups.cpp
/// \brief Walk groups: runs of at most groupSize consecutive key-sorted cells, cut where tree/groups_k.h says.
#include <algorithm>
#include <cmath>

#include "tree/groups_k.h"
#include "tree/tree.h"

namespace amrgrav {

Groups makeGroups(const SortedCells& c, const std::vector<std::uint64_t>& keys, int groupSize) {
  Groups g;
  const std::uint32_t n = std::uint32_t(c.order.size());
  const std::uint32_t gs = std::uint32_t(groupSize);
  const std::uint32_t cap = groupNodeCap(gs);
  std::uint32_t home = 0;  // where the current cell's home node starts
  for (std::uint32_t i = 0; i < n; ++i) {
    if (i > 0 && homeNodeStartsAt(keys.data(), n, i, cap)) home = i;
    if (groupStartsAt(i, home, gs)) g.begin.push_back(i);
  }
  const std::size_t ng = g.begin.size();
  g.count.resize(ng); g.lo.resize(3 * ng); g.hi.resize(3 * ng);
  for (std::size_t k = 0; k < ng; ++k) {
    const std::uint32_t b = g.begin[k], e = k + 1 < ng ? g.begin[k + 1] : n;
    g.count[k] = e - b;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (std::uint32_t j = b; j < e; ++j) {
      lo[0] = std::min(lo[0], c.x[j]); hi[0] = std::max(hi[0], c.x[j]);
      lo[1] = std::min(lo[1], c.y[j]); hi[1] = std::max(hi[1], c.y[j]);
      lo[2] = std::min(lo[2], c.z[j]); hi[2] = std::max(hi[2], c.z[j]);
    }
    for (int d = 0; d < 3; ++d) { g.lo[3 * k + d] = lo[d]; g.hi[3 * k + d] = hi[d]; }
  }
  return g;
}

void groupHalfWidths(const Groups& g, double out[3]) {
  for (int d = 0; d < 3; ++d) out[d] = 0.0;
  for (std::size_t i = 0; i < g.size(); ++i)
    for (int d = 0; d < 3; ++d) out[d] = std::max(out[d], 0.5 * (g.hi[3 * i + d] - g.lo[3 * i + d]));
}

}  // namespace amrgrav
