/// \file interaction_lists.h
/// \brief The FMM's interaction lists from one symmetric dual tree walk (Dehnen 2002): a node's children interact
/// with each other and each child with itself; a pair accepted by the MAC (physics/fmm_mac_k.h) is one M2L each
/// way, a pair of leaves that is not is one P2P, otherwise the node with the larger radius is opened. Every pair is
/// mutual and its truncation symmetric, so the forces of A on B and of B on A cancel to rounding (momentum).
///
/// The lists are canonical, whatever order the walk found them in or how many threads walked: P2P pairs (A < B)
/// sorted, each node's M2L sources sorted, so a GPU walk that finds the same pairs gets the same lists.
#pragma once
#include <cstdint>
#include <vector>

#include "fmm/fmm_tree.h"

namespace amrgrav {
namespace fmm {

struct FmmLists {
  /// M2L by target node (CSR): the sources of node A are m2lSource[m2lStart[A] .. m2lStart[A + 1]), ascending.
  std::vector<std::uint32_t> m2lStart, m2lSource;
  /// Mutual leaf pairs A < B, sorted; every leaf also meets itself (not listed).
  std::vector<std::uint32_t> p2pA, p2pB;
  std::uint64_t directedM2L = 0;   ///< = m2lSource.size()
  std::uint64_t directedP2P = 0;   ///< cell pairs, both directions, a cell with itself excluded
};

/// The dual walk from the root, split into a fixed set of tasks (independent of `threads`) that run in parallel.
void buildInteractionLists(const FmmTree& tree, double tolerance, int threads, FmmLists& lists);

}  // namespace fmm
}  // namespace amrgrav
