/// \file fmm_phase.h
/// \brief Method 'fmm' on the CUDA backend, GPU stage 1 (issue #20; docs/fmm-design.md, "GPU stage 1"): the root
/// cube and the key sort on the device by method 'tree''s steps (CudaOptions::fmmDeviceSort; the sorted order and
/// keys come down, the cells are gathered by sortCellsByKey's own gather: the host sort's bits), then the FMM's tree
/// with its multipoles (the upward pass) and its interaction lists built on the host by the CPU backend's own code
/// (fmm/fmm_tree.h, fmm/interaction_lists.h; the lists on the device with CudaOptions::fmmDeviceLists, the same
/// arrays), so both backends have the same lists and multipoles; the device evaluates them (cuda/kernels_fmm.h: P2P,
/// M2L, L2L, L2P) over the sorted cells left there by its sort; the sums come down and are finished on the host by
/// the CPU backend's own finish (tree/finish.h finishSolve). With CudaOptions::fmmDeviceTree the tree and its upward
/// pass are made on the device too (fmm_tree_phase.h, the host's bits), and with fmmDeviceTiles as well nothing per
/// cell comes down before the results: no host gather, the finish on the device (kernel_finish.cu).
/// Periodic boxes go their own way (fmm_periodic_phase.h: the host's sort, tree, lists and tiles with image shifts,
/// the far images on the host, the device's evaluation). Internal to native/cuda.
#pragma once
#include <cstdint>
#include <vector>

#include "core/blocks.h"
#include "core/status.h"
#include "core/types.h"
#include "cuda/device_buffers.h"
#include "cuda/fmm_lists_phase.h"
#include "cuda/fmm_periodic_phase.h"
#include "cuda/fmm_tiles_phase.h"
#include "cuda/fmm_tree_phase.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/p2p_tiles_emulate.h"
#include "tree/tree.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;

/// The FMM's device arrays (grow-only, kept between solves).
struct FmmBuffers {
  /// The host sort's (CudaOptions::fmmDeviceSort off) sorted cells, x, y, z, mass (n each), and sums, phi, gx, gy, gz
  /// (n each; phi alone without accelerations); the device sort leaves its cells in the solve's block and its sums
  /// in DeviceState::sums. A block solve (solveFmmBlocks): the sorted centres x, y, z made from the blocks (n each;
  /// then the host entry's packed results)
  DeviceBuffer<double> cells;
  DeviceBuffer<double> sums;
  DeviceBuffer<double> centre, M, L;
  DeviceBuffer<double> Mh;  ///< the harmonic M2L's folded multipoles (FmmDeviceView::Mh)
  DeviceBuffer<std::uint32_t> topo;  ///< cellBegin, cellCount, childBegin (nodes each)
  DeviceBuffer<std::uint8_t> childCount;
  DeviceBuffer<std::uint32_t> m2lStart, m2lSource, leaves;
  /// P2P (fmm/p2p_tiles.h): the tiles' targets, step starts and step sources, then the irregular leaves, their near
  /// lists' starts and sources
  DeviceBuffer<std::uint32_t> tiles;
  DeviceBuffer<std::int32_t> tileStepTable;
  DeviceBuffer<double> tileInvH;
  DeviceBuffer<double> p2pK;          ///< the unit tables of p2pKSlots (64 x 64 each), uploaded when that set changes
  DeviceBuffer<int> p2pSlot;          ///< = p2pKSlots on the device
  std::vector<int> p2pKSlots;         ///< the slots whose tables p2pK holds (empty: none)
  FmmListBuffers lists;               ///< the lists' walk on the device (CudaOptions::fmmDeviceLists)
  FmmTileBuffers tileBuild;           ///< the near lists and tiles built on the device (CudaOptions::fmmDeviceTiles)
  FmmTreeBuffers treeBuild;           ///< the tree's upward pass on the device (CudaOptions::fmmDeviceTree)
  FmmPeriodicBuffers periodic;        ///< periodic boxes' image shifts (fmm_periodic_phase.h)
  std::size_t bytes() const;
  void release();  ///< every buffer (memory_plan.h releaseAll)
};

/// InvalidOption when the CUDA backend's FMM is not built for these options (none so far: isolated and periodic
/// boxes both run; the block entry's device pointers in periodic boxes are refused by solveFmmBlocks).
/// The device memory held, deviceBytes (memory_plan.h deviceBytes of the state that holds b), in the parts of
/// CudaStats::fmmMemoryParts (kFmmMemoryPartNames).
void fmmMemoryParts(const FmmBuffers& b, std::size_t deviceBytes, std::size_t parts[8]);

Status checkFmmOnDevice(const SolveOptions& opt);

/// The solve of cells.n > 0 cells with opt.method == SolveMethod::Fmm, called by the backend's solve once the
/// options are checked and the device is ready: results into out.targets(), the phases' times into out.stats and
/// ds.stats (keys: root cube and sort, on the device by default: the cells' upload and checks, keys, sort, the order
/// and keys down and the host's gather; moments: the tree and its upward pass; build: the interaction lists and the
/// near field's tiles, on the host, or with CudaOptions::fmmDeviceLists the lists on the device (fmm_lists_phase.h:
/// the tree's arrays up first, the P2P pairs down for the tiles) and the tiles on the host, or with
/// CudaOptions::fmmDeviceTiles too the tiles on the device from its pairs (fmm_tiles_phase.h: only the tables' slots
/// come down); moments with CudaOptions::fmmDeviceTree: the device's topology conversion and upward pass (with the
/// host's tiles, the topology and centres down for them); upload; walk: the device's evaluation; download: the sums
/// down and finished on the host, or finished on the device and the results down).
Status solveFmmOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SolveResult& out);

/// The parity tool's check of the device's lists (cuda/testing.h): the tree's arrays up into the state's FMM
/// buffers, the lists built there as the solve builds them, and copied down whole (M2L CSR, P2P pairs, counts);
/// seconds: the device timeline (events) from the MAC quantities' upload through the walk, its sorts and the CSR.
/// period: a periodic box's tree (dipole terms), walked with the image shifts as fmm_periodic_phase.cu walks it.
Status fmmListsForCheck(DeviceState& ds, const fmm::FmmTree& tree, double tolerance, fmm::FmmLists& out,
                        double* seconds, const double* period = nullptr);

/// The parity tool's check of the device's sort (cuda/testing.h): the root cube, sorted cells and keys that the solve
/// with CudaOptions::fmmDeviceSort hands the host's tree (root scaled as sortCellsByKey scales it); seconds: host
/// clock of it all. Errors as the solve's (bad or coincident cells, options; n = 0: InvalidInput).
Status fmmSortForCheck(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, RootCube& root,
                       SortedCells& sorted, std::vector<std::uint64_t>& keys, double* seconds);
/// The parity tool's check of the device's near lists and tiles (cuda/testing.h): the tree's arrays and cells up,
/// the lists and then the tiles built as the solve builds them with CudaOptions::fmmDeviceTiles, every array copied
/// down; seconds: the device timeline of the tiles' build alone (events). period: a periodic box's tree (dipole
/// terms), its lists walked with the image shifts and the tiles built with them (CudaOptions::fmmDevicePeriodicTiles).
Status fmmTilesForCheck(DeviceState& ds, const fmm::FmmTree& tree, const SortedCells& sorted, double tolerance,
                        fmm::DeviceTiles& out, double* seconds, const double* period = nullptr);

/// The parity tool's check of the device's tree (cuda/testing.h): the device sort with the topology, then the tree
/// and upward pass as the solve with CudaOptions::fmmDeviceTree makes them, every array copied down (multipoles
/// included); seconds: the device timeline of the tree phase (events). Errors as the solve's. Periodic boxes: as the
/// periodic path with CudaOptions::fmmDevicePeriodic makes it (the contrast, dipole terms, the host's signed scale in
/// lowBound, the norms), its seconds including the scale's host time.
Status fmmTreeForCheck(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, fmm::FmmTree& tree,
                       double* seconds);

/// The block entry with method 'fmm' (host or device data; issues #17 and #20). In an isolated box with the FMM's
/// sort, tree, lists and tiles on the device (the defaults) one number per cell crosses the bus, or none (device
/// entry): the block path's machinery (blocks_phase.h) uploads the densities packed in the caller's dtype beside the
/// keys and sort (or reads the caller's device array), makes the masses, keys, sorted masses and sizes from the blocks'
/// geometry on the device, and the sorted centres as arrays (ds.fmm.cells); the cell entry's own evaluation follows
/// (the same tree, lists, tiles, kernels and finish, so the results are bitwise the cell entry's on the cells that
/// core/blocks.h makes), and the results are finished into the caller's layout (deliverBlockSums). Nothing is kept
/// for the next call (no tree reuse: stats.treeReused false). Otherwise (periodic boxes, a step on the host) the
/// host entry makes the cells on the host and runs the cell solve (core/backend.h solveBlocksViaCells) and the device
/// entry is an InvalidOption. Takes the state's lock.
Status solveFmmBlocks(DeviceState& ds, const BlocksView& v, const BlockOutputs& out, const SolveOptions& opt,
                      SolveResult& result);

}  // namespace cuda
}  // namespace amrgrav
