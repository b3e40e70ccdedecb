/// \file dual_walk.h
/// \brief The host emulation of the CUDA backend's breadth-first dual walk (cuda/fmm_lists_phase.h): the same
/// per-pair rules (fmm/dual_walk_k.h) over the same frontiers, the device's prefix sums, sorts and CSR written as
/// plain loops, one thread. Its lists must equal buildInteractionLists's (fmm/interaction_lists.h) array for array:
/// native/tests/fmm_dual_walk.cpp checks it without a GPU, and the GPU parity tool checks the device's against the
/// host's (native/tools/parity/fmm_lists.cpp). Isolated and periodic boxes (image shifts, dipole terms).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "fmm/dual_walk_k.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"

namespace amrgrav {
namespace fmm {

/// The walk's shape: rounds (frontiers walked), the largest frontier, the pairs decided in all.
struct DualWalkStats {
  int rounds = 0;
  std::size_t maxFrontier = 0, pairs = 0;
};

/// The tree's arrays as the walk reads them (host pointers into `tree`, which must outlive the view).
DualWalkTree dualWalkView(const FmmTree& tree, double tolerance);

/// The lists of a tree by the breadth-first walk, emulated on the host: an isolated box's (period null, tree.dipoles
/// false), or a periodic box's (`period` as buildInteractionLists takes it, tree.dipoles true: the pairs with their
/// image shifts).
void emulateDeviceLists(const FmmTree& tree, double tolerance, FmmLists& lists, DualWalkStats* stats = nullptr,
                        const double* period = nullptr);

/// "" when a and b are the same lists (every array and both counts equal), else each differing array's first
/// difference (or lengths), for the checks' reports.
std::string listsDifference(const FmmLists& a, const FmmLists& b);

}  // namespace fmm
}  // namespace amrgrav
