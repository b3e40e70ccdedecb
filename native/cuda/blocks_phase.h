/// \file blocks_phase.h
/// \brief The CUDA backend's block entry (issue #17; core/blocks.h). A block solve is the cell solve with four
/// differences:
///   - no positions are stored: every kernel that reads a cell's centre or size makes it from the blocks'
///     geometry and the sorted order (cuda/kernels.h BlockCells; core/blocks.h's formula: the host's bits), so the
///     block holds 36-38 bytes per cell (memory_plan.h's compact layout); the masses from the densities, which go
///     up packed in the caller's dtype (one number per cell, packed on the copy threads straight into the pinned
///     staging; on a new mesh into slot 3 on the copy stream while the keys, sort and build run), or are read in
///     place from the caller's device array (the device entry);
///   - the results are scattered into the caller's layout: on the host from the download's pinned chunks (by
///     default the walk runs in launches over consecutive groups and each launch's sums come down, are finished on
///     the copy threads with the finish kernel's formula, physics/finish_k.h, and scattered through the sorted
///     order while the next launches walk: CudaOptions::resultChunks), or on the device into the caller's device
///     arrays;
///   - on an unchanged mesh (core/blocks.h BlockTreeKey) the order, tree topology, levels, walk groups and (when
///     the walk's group sizes fit after them) the nodes' first keys left in the device block by the previous block
///     solve serve again: the masses are made and checked in one pass, and gathered with the sorted sizes made
///     from the kept order; then the moments;
///   - the device entry's finish writes the results straight into the caller's arrays (unless fully periodic: the
///     mean potential is taken over the packed results first).
/// Everything else (bounds, keys, sort, checks, build, moments, walk, finish) is the cell solve's own code, so the
/// results are bitwise those of the cell solve on the same cells.
#pragma once
#include <chrono>
#include <cstdint>

#include "core/blocks.h"
#include "core/status.h"
#include "core/types.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;
struct CellChecks;

/// The block solve (host or device data, BlocksView::deviceData); takes the state's lock, host exceptions come back
/// as a Status. stats.treeReused says whether the kept tree served. Method 'fmm' goes to solveFmmBlocks (fmm_phase.h).
Status solveBlocksOnDevice(DeviceState& ds, const BlocksView& blocks, const BlockOutputs& out,
                           const SolveOptions& opt, SolveResult& result);

// ---- the steps every block solve shares (the tree's run() in blocks_phase.cu, method 'fmm''s solveFmmBlocks in
//      fmm_phase.cu)

/// The running block solve: sets ds.blk.view; on leaving, whatever happened, joins the densities' upload (no copy
/// into the block outlives the solve) and clears the view and the page-locked density.
struct BlockSolveScope {
  BlockSolveScope(DeviceState& ds, const BlocksView& v);
  ~BlockSolveScope();
  BlockSolveScope(const BlockSolveScope&) = delete;
  BlockSolveScope& operator=(const BlockSolveScope&) = delete;
  DeviceState& ds;
};

/// The device entry (v.deviceData; else nothing): the density and results checked as device memory of the solver's
/// device, and the solve's stream ordered after the work the caller queued on v.stream (the density it wrote),
/// without blocking the host.
Status orderAfterCaller(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt);

/// The start of a block solve (method 'tree''s and 'fmm''s): the options and blocks checked, the device ready, the
/// stats and the result reset, t0 the solve's clock; `empty` when there are no cells (the solve then done).
Status beginBlockSolve(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt,
                       SolveResult& out, std::chrono::steady_clock::time_point& t0, bool& empty);

/// The blocks' geometry up into ds.blk.geo (geometry false: the last solve's, kept), and the block index into
/// ds.blk.slots where the kernels read the caller's layout (device data, or ds.blk.pinnedDensity).
Status putBlockGeometry(DeviceState& ds, const BlocksView& v, bool geometry);

/// The host entry's densities on a new mesh: packed (the caller's dtype) by the copy threads into the pinned chunks
/// and up into `at` on the copy stream, from a thread of its own, so that the keys, sort and build run meanwhile
/// (blockMassesInto waits for them, on the stream). `at` is slot 3, free from the bounds (which read the sizes
/// there) until the gather (memory_plan.h's table). kEventDensityUp* time it (its wall time: CudaStats::secondsUpload).
Status startDensityUpload(DeviceState& ds, void* at);

/// After the gather (ds.order, ds.scale): the sorted cells' centres as arrays, x, y, z (n each, scaled: launchGather's
/// values of the host's cells, core/blocks.h's formula), for kernels that read arrays (method 'fmm').
Status blockSortedCentres(DeviceState& ds, double* x, double* y, double* z);

/// Sums in sorted order (ds.sums, ds.order, ds.massScale, ds.scale; isolated boxes: no mean potential) finished
/// (launchFinish's bits, kernel_blocks.cu launchBlockFinish) into the caller's layout: the device entry straight into
/// the caller's arrays (the caller's stream then waits for them); the host entry into packed float64 arrays at
/// packed[0..3] (n doubles each, 1 without accelerations: device memory the caller has no more use for), which come
/// down through the pinned chunks and are scattered into the caller's layout and dtype on the copy threads.
/// ds.stats.secondsDownload: from the finish's end to the results in place.
Status deliverBlockSums(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt,
                        double* const packed[4]);

// ---- the tree phase's hooks while a block solve runs (ds.blk.view set)

/// The block solve's cells as the kernels read them (no positions stored: made from the blocks' geometry): cell i
/// is the caller's cell order[i] (order null: i), centres and sizes times scale, masses from `mass`.
DeviceCells blockCells(const DeviceState& ds, const std::uint32_t* order, double scale, const double* mass);

/// The masses (unsorted) into massAt: from the caller's device array; from the densities already on their way up
/// (host entry, new mesh: startDensityUpload; waited for here, on the stream); or uploaded packed now (float64:
/// into massAt itself; float32: into scratch32, n * 4 bytes free until the gather) and made there. Checked and
/// summed in the same pass as queueMassCheck checks and sums them (its bits), with its read-back queued (*total,
/// *firstBad). Fully periodic solves with the density contrast: also its total (ds.contrastTotal,
/// core/fixed_sum.h's order).
Status blockMassesInto(DeviceState& ds, double* massAt, void* scratch32, const SolveOptions& opt,
                       const CellChecks& checks, double** total, unsigned** firstBad);

/// The sorted cells (sortAndBuild's gather, and a kept tree's): the masses gathered from massAt (slot 2) into slot
/// 3, then the sizes made from the blocks' geometry times ds.scale into slot 2 (launchGather's values of the
/// unsorted ones); ds.sortedCells made from the blocks (ds.order, ds.scale) with the masses in slot 3.
Status blockSortedCellsInto(DeviceState& ds, const double* massAt);

/// The device flagged cell `bad` (block order): the message names the block and cell (validateCells' words about
/// the density).
Status blockFlagged(DeviceState& ds, unsigned bad, const SolveOptions& opt);

/// Cell b shares its centre with an earlier one (blocks overlap): coincidentCellsError in the blocks' words.
Status blockCoincident(DeviceState& ds, std::uint32_t b);

/// The sorted, scaled sizes made again (the walk's rerun after a queue overflow; restoreSizes).
Status blockSortedSizes(DeviceState& ds);

}  // namespace cuda
}  // namespace amrgrav
