/// \file blocks_phase.h
/// \brief The CUDA backend's block entry (issue #17; core/blocks.h). A block solve is the cell solve with three
/// differences:
///   - the cells are made on the device (kernel_blocks.cu, core/blocks.h's formula: the host's bits) into the slots
///     the cell solve uploads them to; the masses from the densities, which go up packed in the caller's dtype (one
///     number per cell, packed on the copy threads straight into the pinned staging), or are read in place from
///     the caller's device array (the device entry);
///   - the results are scattered into the caller's layout: on the host from the download's pinned chunks, or on
///     the device into the caller's device arrays;
///   - on an unchanged mesh (core/blocks.h BlockTreeKey) the order, tree topology, levels, walk groups and (when
///     the walk's group sizes fit after them) the nodes' first keys left in the device block by the previous block
///     solve serve again: the masses are made and checked in one pass, and gathered with the sorted sizes made
///     from the kept order; the sorted positions are made again only where the last solve's results were written
///     over them (ds.blk.xLive, yzLive); then the moments;
///   - the device entry's finish writes the results straight into the caller's arrays (unless fully periodic: the
///     mean potential is taken over the packed results first).
/// Everything else (bounds, keys, sort, checks, build, moments, walk, finish) is the cell solve's own code, so the
/// results are bitwise those of the cell solve on the same cells.
#pragma once
#include <cstdint>

#include "core/blocks.h"
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;
struct CellChecks;

/// The block solve (host or device data, BlocksView::deviceData); takes the state's lock, host exceptions come back
/// as a Status. stats.treeReused says whether the kept tree served.
Status solveBlocksOnDevice(DeviceState& ds, const BlocksView& blocks, const BlockOutputs& out,
                           const SolveOptions& opt, SolveResult& result);

// ---- the tree phase's hooks while a block solve runs (ds.blk.view set)

/// x, y, z, size (unscaled) into slots 0-3 (uploadAndBound).
Status blockCellsIntoSlots(DeviceState& ds);

/// The masses (unsorted) into massAt: from the caller's device array, or uploaded packed (float64: into massAt
/// itself; float32: into scratch32, n * 4 bytes free until the build) and made there, checked and summed in the
/// same pass as queueMassCheck checks and sums them (its bits), with its read-back queued (*total, *firstBad). Fully
/// periodic solves with the density contrast: also its total (ds.contrastTotal, core/fixed_sum.h's order).
Status blockMassesInto(DeviceState& ds, double* massAt, void* scratch32, const SolveOptions& opt,
                       const CellChecks& checks, double** total, unsigned** firstBad);

/// The device flagged cell `bad` (block order): the message names the block and cell (validateCells' words about
/// the density).
Status blockFlagged(DeviceState& ds, unsigned bad, const SolveOptions& opt);

/// Cell b shares its centre with an earlier one (blocks overlap): coincidentCellsError in the blocks' words.
Status blockCoincident(DeviceState& ds, std::uint32_t b);

/// The sorted, scaled sizes made again (the walk's rerun after a queue overflow; restoreSizes).
Status blockSortedSizes(DeviceState& ds);

}  // namespace cuda
}  // namespace amrgrav
