/// \file p2p_tiles_emulate.h
/// \brief The host emulation of the CUDA backend's build of the near lists and P2P tiles from its P2P pairs
/// (cuda/fmm_tiles_phase.h): the same per-item rules (fmm/p2p_tiles_k.h) in the same steps, the device's prefix
/// sums and sorts written as plain loops and std::sort (the orders are total, so any sort gives the same arrays),
/// one thread. Its arrays must equal buildNearLists', findRegularLeaves', buildP2pTiles' and buildIrregularLists'
/// (fmm/p2p_tiles.h): native/tests/fmm_device_tiles.cpp checks it without a GPU, the GPU parity subject fmm-tiles
/// the device's against the host's (fmm-periodic in periodic boxes). Isolated and periodic boxes (lists with a
/// period: the near lists, tiles and irregular lists with their image shifts, buildHostNearField's).
#pragma once
#include <string>
#include <vector>

#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/p2p_tables.h"
#include "fmm/p2p_tiles.h"
#include "tree/tree.h"

namespace amrgrav {
namespace fmm {

/// What the device's build makes: the near lists, the regular leaves (per node), the tiles (with their slots and
/// counts) and the irregular leaves' lists.
struct DeviceTiles {
  NearLists near;
  RegularLeaves reg;
  P2pTiles tiles;
  IrregularLists irregular;
};

/// The device's build emulated from the P2P pairs of `lists` (p2pA < p2pB, or p2pA = p2pB with an image shift,
/// sorted, as the device's walk leaves them; the shifts with lists.period's periodic axes) over the tree and its
/// sorted cells.
void emulateDeviceTiles(const FmmTree& tree, const SortedCells& cells, const FmmLists& lists, DeviceTiles& out);

/// "" when a and b hold the same arrays (near lists with their shifts and period, tiles' targets, invH bits, step
/// starts, tables, sources and shifts, slots, irregular leaves and lists with their shifts, the counts), else each
/// differing array's first difference, for the reports.
std::string tilesDifference(const NearLists& na, const P2pTiles& a, const IrregularLists& ia, const NearLists& nb,
                            const P2pTiles& b, const IrregularLists& ib);

}  // namespace fmm
}  // namespace amrgrav
