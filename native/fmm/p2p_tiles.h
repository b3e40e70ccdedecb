/// \file p2p_tiles.h
/// \brief The near field's work as the CUDA backend's P2P kernels take it (cuda/kernel_fmm.cu), made on the host from
/// the CPU's lists and tables, so both backends compute the same pairs the same way (a table where the CPU takes one,
/// p2p_tables.h, the computed P2P elsewhere).
///
/// Each leaf's near sources are listed in the CPU's order (evaluate.cpp evaluateP2P: the leaf itself, then the other
/// leaf of each P2P pair it is in, pairs in list order; the pairs are sorted, so: itself, then its sources by
/// ascending node). A regular target leaf's sums are, in that order, the tables' products (1/h) K_delta^T m_S and
/// the computed pairs' sums, each added to the cell's running total as the CPU adds its pairs. The table products
/// want many targets at once (a 64 x 64 table read for one leaf feeds 4096 multiply-adds, one per element), so
/// regular targets whose sources have the same sequence of tables (offsets; computed pairs marked -1), the
/// "signature", are grouped into tiles of up to kTileTargets: a tile's step k is one table (or computed) for all its
/// targets at once, each target with its own source, and each target still adds its pairs in its own list's order.
/// On a uniform grid leaves in the same place of their ancestors share a signature, so tiles are full; on AMR meshes
/// the leaves along refinement boundaries make smaller groups. Targets that are not regular take the computed
/// kernel over their near lists.
///
/// Isolated boxes: the near lists carry no image shifts (the CUDA backend's FMM refuses periodic boxes).
#pragma once
#include <cstdint>
#include <vector>

#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/p2p_tables.h"

namespace amrgrav {
namespace fmm {

/// Each leaf's near sources in the CPU's order, as a CSR over the leaves' indices.
struct NearLists {
  std::vector<std::uint32_t> leaves;          ///< the leaf nodes, ascending
  std::vector<std::uint32_t> start, source;   ///< leaf k's sources: source[start[k] .. start[k + 1]) (node ids)
};
NearLists buildNearLists(const FmmTree& tree, const FmmLists& lists);

constexpr int kTileTargets = 32;              ///< target leaves per tile
constexpr std::uint32_t kNoLeaf = 0xffffffffu;

/// The tiles of the regular targets and the list of the others.
struct P2pTiles {
  std::vector<std::uint32_t> target;      ///< kTileTargets per tile: the target leaves (nodes), kNoLeaf past its end
  std::vector<double> invH;               ///< kTileTargets per tile: 1 / h of each target (as tableP2P), 0 for none
  std::vector<std::uint32_t> stepStart;   ///< per tile, its steps: stepStart[i] .. stepStart[i + 1]
  std::vector<std::int32_t> stepTable;    ///< per step: the table (an index into `slots`), or -1: computed pairs
  std::vector<std::uint32_t> stepSource;  ///< kTileTargets per step: each target's source leaf (kNoLeaf for none)
  std::vector<int> slots;                 ///< the tables' slots (p2p_tables.h), ascending: table k has slot slots[k]
  std::vector<std::uint32_t> irregular;   ///< the leaves (indices into NearLists::leaves) that are not regular
  std::uint64_t tableSteps = 0, computedSteps = 0;      ///< over all tiles
  std::uint64_t tableEntries = 0, computedEntries = 0;  ///< (target, source) pairs: those of the steps that are used
  std::size_t tiles() const { return stepStart.empty() ? 0 : stepStart.size() - 1; }
};

/// The tiles from the CPU's regular leaves and tables (prepared for these lists): groups by signature in the order
/// of their first leaf, each group's leaves ascending, cut into tiles of kTileTargets (the last one padded).
P2pTiles buildP2pTiles(const NearLists& near, const RegularLeaves& reg, const P2pTables& tables);

}  // namespace fmm
}  // namespace amrgrav
