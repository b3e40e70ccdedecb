/// \file sort_keys.cpp
/// \brief Root cube choice and the Morton sort of the cells (LSD radix sort: stable, hence deterministic).
#include <algorithm>
#include <cmath>

#include "physics/moments_k.h"
#include "tree/keys.h"
#include "tree/tree.h"
#include "core/validate.h"

namespace amrgrav {

RootCube rootCubeFor(const double lo[3], const double hi[3], double minSize, const SolveOptions& opt) {
  RootCube r;
  double side = 0;
  for (int d = 0; d < 3; ++d) side = std::max(side, hi[d] - lo[d]);
  if (!(side > 0)) side = 1;  // a single point mass
  // Isolated meshes: the side a power-of-two multiple of the finest cell, so that every node's faces lie on cell
  // faces. A bounding cube of, say, 72 cells cuts cells at every level (72 / 2^k is not whole): nodes then reach
  // half a cell beyond their cube, their MAC radius grows, and the walk opens far more of them (bench/RESULTS.md).
  // Only where the keys resolve the finest cells (side <= kKeyCells of them); points (size 0) keep the tight cube,
  // and periodic boxes keep the box (its sides are the periods).
  if (!opt.anyPeriodic() && minSize > 0 && std::isfinite(minSize) && side <= minSize * double(kKeyCells)) {
    double aligned = minSize;
    while (aligned < side) aligned *= 2;  // exact: doublings
    side = aligned;
  }
  for (int d = 0; d < 3; ++d) r.lo[d] = lo[d];
  r.side = side;
  return r;
}

RootCube chooseRootCube(const CellsView& c, const SolveOptions& opt) {
  double lo[3], hi[3];
  double minSize = INFINITY;
  if (opt.hasBox) {
    for (int d = 0; d < 3; ++d) { lo[d] = opt.boxLo[d]; hi[d] = opt.boxHi[d]; }
    if (c.size)
      for (std::size_t i = 0; i < c.n; ++i) minSize = std::min(minSize, c.size[i]);
  } else {
    for (int d = 0; d < 3; ++d) { lo[d] = INFINITY; hi[d] = -INFINITY; }
    const double* p[3] = {c.x, c.y, c.z};
    for (std::size_t i = 0; i < c.n; ++i) {  // physics/moments_k.h, as cuda/kernel_keys.cu boundsKernel
      const double h = cellHalfSize(c.size[i]);
      for (int d = 0; d < 3; ++d) growByCell(lo[d], hi[d], p[d][i], h);
      minSize = std::min(minSize, c.size[i]);
    }
    if (c.n == 0) for (int d = 0; d < 3; ++d) { lo[d] = 0; hi[d] = 1; }
  }
  return rootCubeFor(lo, hi, minSize, opt);
}

void stableSortByKey(std::vector<std::uint64_t>& k, std::vector<std::uint32_t>& idx, std::vector<std::uint64_t>& ktmp,
                     std::vector<std::uint32_t>& itmp) {
  const std::size_t n = k.size();
  ktmp.resize(n);
  itmp.resize(n);
  // 63-bit keys, 4 passes of 16 bits; each pass is a stable counting sort.
  std::vector<std::size_t> count(1u << 16);
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 16 * pass;
    std::fill(count.begin(), count.end(), 0);
    for (std::size_t i = 0; i < n; ++i) ++count[(k[i] >> shift) & 0xffff];
    if (count[(n ? (k[0] >> shift) & 0xffff : 0)] == n) continue;  // all in one bucket: pass is a no-op
    std::size_t sum = 0;
    for (auto& v : count) { std::size_t t = v; v = sum; sum += t; }
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t dst = count[(k[i] >> shift) & 0xffff]++;
      ktmp[dst] = k[i];
      itmp[dst] = idx[i];
    }
    k.swap(ktmp);
    idx.swap(itmp);
  }
}

double lengthScaleFor(double side) { return std::exp2(-std::round(std::log2(side))); }

Status sortCellsByKey(const CellsView& c, RootCube& root, SortedCells& out, std::vector<std::uint64_t>& keys,
                      double scale, bool pointSources) {
  const std::size_t n = c.n;
  if (!(scale > 0)) scale = lengthScaleFor(root.side);
  std::vector<std::uint64_t> k(n), ktmp(n);
  std::vector<std::uint32_t> idx(n), itmp(n);
  const double inv = double(kKeyCells) / root.side;
  for (std::size_t i = 0; i < n; ++i) {
    k[i] = mortonKey(keyCoordinate(c.x[i], root.lo[0], inv), keyCoordinate(c.y[i], root.lo[1], inv),
                     keyCoordinate(c.z[i], root.lo[2], inv));
    idx[i] = std::uint32_t(i);
  }
  stableSortByKey(k, idx, ktmp, itmp);
  // Two cells at one centre would each skip the other as "itself" in the walk: refuse them. Equal centres have
  // equal keys, so after the sort they sit in one run of equal keys.
  if (!pointSources) AG_TRY(checkCoincidentCells(c, k.data(), idx.data()));
  out.order = std::move(idx);
  out.scale = scale;
  out.x.resize(n); out.y.resize(n); out.z.resize(n); out.mass.resize(n); out.size.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t j = out.order[i];
    out.x[i] = c.x[j] * scale; out.y[i] = c.y[j] * scale; out.z[i] = c.z[j] * scale;
    out.mass[i] = c.mass[j]; out.size[i] = c.size[j] * scale;
  }
  for (int d = 0; d < 3; ++d) root.lo[d] *= scale;
  root.side *= scale;
  keys = std::move(k);
  return Status::success();
}

}  // namespace amrgrav
