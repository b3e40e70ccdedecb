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

/// `points`: sorted as point sources (clustered points; the caller's options should then drop the self term).
inline HostFmmTree hostFmmTree(const HostCells& cells, const SolveOptions& opt, bool points, int threads) {
  HostFmmTree t;
  RootCube root = chooseRootCube(cells.view(), opt);
  std::vector<std::uint64_t> keys;
  t.status = sortCellsByKey(cells.view(), root, t.sorted, keys, 0, points, threads);
  if (t.status.ok()) t.status = fmm::buildFmmTree(keys, root, t.sorted, opt, threads, t.tree);
  return t;
}

}  // namespace amrgrav::tools
