/// \file fmm_host_tree.h
/// \brief The host's FMM tree over a set of cells, as the CPU backend makes it (root cube, key sort, buildFmmTree):
/// the reference the FMM's host tests and GPU parity checks compare the device's phases against.
#pragma once
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "fmm/fmm_tree.h"
#include "tools/host_cells.h"
#include "tree/tree.h"

namespace amrgrav::tools {

struct HostFmmTree {
  Status status;
  SortedCells sorted;
  fmm::FmmTree tree;
};

/// `points`: sorted as point sources (clustered points; the caller's options should then drop the self term). A fully
/// periodic box's sorted masses become the density contrast first (the total summed in the caller's order).
inline HostFmmTree hostFmmTree(const HostCells& cells, const SolveOptions& opt, bool points, int threads) {
  HostFmmTree t;
  RootCube root = chooseRootCube(cells.view(), opt);
  std::vector<std::uint64_t> keys;
  t.status = sortCellsByKey(cells.view(), root, t.sorted, keys, 0, points, threads);
  if (t.status.ok() && opt.fullyPeriodic() && opt.densityContrast) {
    double total = 0;
    for (double m : cells.m) total += m;
    applyDensityContrast(t.sorted, opt, total);
  }
  if (t.status.ok()) t.status = fmm::buildFmmTree(keys, root, t.sorted, opt, threads, t.tree);
  return t;
}

/// The tests' periodic boxes: method 'fmm' at `order` in the unit box, periodic along the axes asked for.
inline SolveOptions periodicFmmBox(bool px, bool py, bool pz, int order) {
  SolveOptions opt;
  opt.method = SolveMethod::Fmm;
  opt.fmmOrder = order;
  opt.hasBox = true;
  for (int d = 0; d < 3; ++d) {
    opt.boxLo[d] = 0;
    opt.boxHi[d] = 1;
  }
  opt.periodic[0] = px;
  opt.periodic[1] = py;
  opt.periodic[2] = pz;
  return opt;
}

/// The period along each axis in the sorted cells' scaled lengths (0 where not periodic).
inline void scaledPeriod(const SolveOptions& opt, const SortedCells& sorted, double period[3]) {
  for (int d = 0; d < 3; ++d) period[d] = opt.periodic[d] ? (opt.boxHi[d] - opt.boxLo[d]) * sorted.scale : 0.0;
}

}  // namespace amrgrav::tools
