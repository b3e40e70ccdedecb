/// \file groups.cpp
/// \brief Walk groups: runs of groupSize consecutive key-sorted cells, i.e. spatially compact sets of cells.
#include <algorithm>
#include <cmath>

#include "tree/tree.h"

namespace amrgrav {

Groups makeGroups(const SortedCells& c, int groupSize) {
  Groups g;
  const std::size_t n = c.order.size();
  const std::size_t ng = (n + groupSize - 1) / groupSize;
  g.begin.resize(ng); g.count.resize(ng); g.lo.resize(3 * ng); g.hi.resize(3 * ng);
  for (std::size_t i = 0; i < ng; ++i) {
    const std::size_t b = i * groupSize, e = std::min(n, b + groupSize);
    g.begin[i] = std::uint32_t(b);
    g.count[i] = std::uint32_t(e - b);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (std::size_t j = b; j < e; ++j) {
      lo[0] = std::min(lo[0], c.x[j]); hi[0] = std::max(hi[0], c.x[j]);
      lo[1] = std::min(lo[1], c.y[j]); hi[1] = std::max(hi[1], c.y[j]);
      lo[2] = std::min(lo[2], c.z[j]); hi[2] = std::max(hi[2], c.z[j]);
    }
    for (int d = 0; d < 3; ++d) { g.lo[3 * i + d] = lo[d]; g.hi[3 * i + d] = hi[d]; }
  }
  return g;
}

void groupHalfWidths(const Groups& g, double out[3]) {
  for (int d = 0; d < 3; ++d) out[d] = 0.0;
  for (std::size_t i = 0; i < g.size(); ++i)
    for (int d = 0; d < 3; ++d) out[d] = std::max(out[d], 0.5 * (g.hi[3 * i + d] - g.lo[3 * i + d]));
}

}  // namespace amrgrav
