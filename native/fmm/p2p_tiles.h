/// \file p2p_tiles.h
/// \brief The near field's work as the CUDA backend's P2P kernels take it (cuda/kernel_fmm.cu), made on the host from
/// the CPU's lists and tables, so both backends compute the same pairs the same way (a table where the CPU takes one,
/// p2p_tables.h, the computed P2P elsewhere).
///
/// Each leaf's near sources are listed in the CPU's order (evaluate.cpp evaluateP2P: the leaf itself, then the other
/// leaf of each P2P pair it is in, pairs in list order; the pairs are sorted, so: itself, then its sources by
/// ascending node). A table product (1/h) K_delta^T m_S read for one target leaf feeds one multiply-add per table
/// element, so the device takes many targets at once: regular targets whose sources lie at the same offsets are put
/// next to each other and cut into tiles of kTileTargets. A tile's steps are the union of its targets' tables
/// (ascending), then as many computed steps as its targets have computed pairs (sources of another size, irregular,
/// or too far for a table); step k is one table (or computed pairs) for all the tile's targets at once, each target
/// with its own source, or none (it adds zeros). Each cell adds its pairs' sums to its total in the tile's step
/// order; the CPU adds them in list order, so the two differ by the order of those additions (each table pair's sum
/// itself is tableP2P's, operation for operation). On a uniform grid the leaves in the same place of their
/// ancestors have the same tables, and the tiles are full (97% of the steps' slots used at 64^3, 99% at 128^3);
/// targets that are not regular take the computed kernel over their near lists.
///
/// Periodic boxes (the CUDA backend's periodic FMM, cuda/fmm_periodic_phase.cu): the near lists, the tiles' steps and
/// the irregular lists carry each source's image shift (interaction_lists.h's numbering); a table step needs none (its
/// table is that of the shifted offset, as the CPU's), a computed one moves the source's cells by the shift's vector.
/// In isolated boxes these shift arrays are empty.
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
  /// Periodic boxes: each source's image shift (by source: kNoShift for the leaf itself); empty when the lists have
  /// no periodic axis
  std::vector<std::uint8_t> shift;
  double period[3] = {0, 0, 0};               ///< the lists' periods (FmmLists::period)
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
  /// Periodic boxes: kTileTargets per step, each target's source's image shift (kNoShift for none; a table step's
  /// are in its table); empty when the near lists have no shifts
  std::vector<std::uint8_t> stepShift;
  std::vector<std::uint32_t> irregular;   ///< the leaves (indices into NearLists::leaves) that are not regular
  std::uint64_t tableSteps = 0, computedSteps = 0;      ///< over all tiles (each kTileTargets wide)
  std::uint64_t tableEntries = 0, computedEntries = 0;  ///< the (target, source) leaf pairs in them
  std::size_t tiles() const { return stepStart.empty() ? 0 : stepStart.size() - 1; }
};

/// The tiles from the CPU's regular leaves and tables (prepared for these lists): the regular targets ordered by
/// their number of computed pairs, then their first tables (ascending, the first p2p_tiles_k.h kRunKeyTables
/// compared lexicographically), then their order, and cut into tiles of kTileTargets (the last one padded). The same
/// tiles for any thread count.
P2pTiles buildP2pTiles(const NearLists& near, const RegularLeaves& reg, const P2pTables& tables, int threads);

/// The near lists of the irregular leaves alone (tiles.irregular, in that order), as a CSR over them: what the
/// CUDA backend's computed P2P kernel reads.
struct IrregularLists {
  std::vector<std::uint32_t> leaf;            ///< the leaves' nodes
  std::vector<std::uint32_t> start, source;   ///< leaf j's sources: source[start[j] .. start[j + 1])
  std::vector<std::uint8_t> shift;            ///< periodic boxes: each source's image shift (else empty)
};
IrregularLists buildIrregularLists(const NearLists& near, const P2pTiles& tiles);

/// The CUDA backend's near field as the host builds it for these lists: the near lists, the regular leaves, their
/// tables prepared, the tiles and the irregular leaves' lists (the path the device's tiles are checked against).
struct HostNearField {
  NearLists near;
  RegularLeaves reg;
  P2pTables tables;
  P2pTiles tiles;
  IrregularLists irr;
};
HostNearField buildHostNearField(const FmmTree& tree, const FmmLists& lists, const SortedCells& cells, int threads);

}  // namespace fmm
}  // namespace amrgrav
