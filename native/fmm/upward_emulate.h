/// \file upward_emulate.h
/// \brief The host emulation of the CUDA backend's FMM upward pass (cuda/fmm_tree_phase.h): the same per-node and
/// per-term rules (fmm/upward_k.h) in the device's organisation (a level at a time from the deepest: each node's sums
/// and centre, then each of its terms by P2M or M2M; then each cell's squared distance to each of its ancestors'
/// centres, maximised per node; then each node's radius and MAC quantities), one thread. Its arrays must equal
/// buildFmmTree's (fmm/fmm_tree.h) bit for bit: native/tests/fmm_upward.cpp checks it without a GPU, and the GPU
/// parity tool checks the device's against the host's (native/tools/parity/fmm_tree.cpp). Isolated boxes, and periodic
/// ones (`dipoles`: cube centres, the host's signedSourceScale in lowBound, the norms by fmm/norms_k.h), as the CUDA
/// backend's periodic path makes them.
#pragma once
#include <string>
#include <vector>

#include "fmm/fmm_tree.h"
#include "fmm/multi_index.h"
#include "fmm/upward_k.h"

namespace amrgrav {
namespace fmm {

/// The tables the upward pass reads (uploaded as they are to the device): the monomials' (MonoTables: prev, axis,
/// scale per term) and M2M's entries grouped by target term, each group in the host's table order (m2mStart: terms
/// + 1 offsets into m2mJ, m2mNJ).
struct UpwardTables {
  std::vector<int> prev, axis, m2mStart, m2mJ, m2mNJ;
  std::vector<double> scale;
};
UpwardTables upwardTables(const MultiIndex& mi);

/// The device's upward pass on the host: `tree` holds the topology (topo with its cube centres, levelBegin, order,
/// terms, mStride, dipoles); fills centre, radius, critical, absMass, lowBound, M and with dipoles norms from the
/// sorted cells. `mutate` (tests only): sums a leaf's cells from its last, to show that the check sees an order.
void emulateDeviceUpward(const SortedCells& cells, double theta, FmmTree& tree, bool mutate = false);

/// "" when the FMM trees a and b are the same (topology, level starts and every per-node array, by bits), else each
/// differing array's first difference, for the checks' reports.
std::string fmmTreeDifference(const FmmTree& a, const FmmTree& b);

}  // namespace fmm
}  // namespace amrgrav
