/// \file testing.h
/// \brief The CUDA backend as the tools drive it (native/tools/gpu_parity.cpp; not a production interface: the
/// addon and libamrgrav reach the backend through api/ and never link this). Besides Backend: the CUDA settings,
/// the last solve's device measurements, the release of the device memory, the FMM's lists and sort made on the device, a distributed solve's rank steps one by
/// one (cuda/rank_phase.h, on the backend's own device state) and a copy of the device's tree, which the parity tool
/// checks the device's LETs against. Plain C++ (no CUDA headers). Linked from the amrgrav_cuda_testing library.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "cuda/cuda_backend.h"
#include "cuda/device.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/p2p_tiles_emulate.h"
#include "let/let.h"
#include "tree/source_tree.h"
#include "tree/tree.h"

namespace amrgrav {

/// The local tree copied down from the device, in SourceTree's layout (tree/source_tree.h), as the host-side LET
/// selection and packing (let/let.h) read it. Multipoles are the device's (float, times massScale) divided back.
/// The cells are the sorted ones, scaled; second moments only in a periodic box.
using HostTree = SourceTreeArrays;

class CudaBackend : public Backend {
 public:
  virtual void setCudaOptions(const CudaOptions& options) = 0;
  virtual CudaOptions cudaOptions() const = 0;
  /// The last solve()'s or direct()'s measurements.
  virtual CudaStats lastCudaStats() const = 0;
  /// Frees every device and pinned buffer now (they are otherwise kept, grow-only, for the next solve).
  virtual void releaseDeviceMemory() = 0;
  /// The FMM's interaction lists of an isolated box's tree (built on the host) made on the device as method 'fmm'
  /// makes them with CudaOptions::fmmDeviceLists (cuda/fmm_lists_phase.h) and copied down whole; seconds: the
  /// device's time of the walk, its sorts and CSR (the MAC quantities' upload included). `period` (a periodic box's
  /// tree, with dipole terms): the walk with the image shifts, as with CudaOptions::fmmDevicePeriodic, for
  /// comparison with buildInteractionLists(..., period).
  virtual Status fmmDeviceLists(const fmm::FmmTree& tree, double tolerance, fmm::FmmLists& out, double* seconds,
                                const double* period = nullptr) = 0;
  /// The root cube (scaled), sorted cells and keys that method 'fmm' with CudaOptions::fmmDeviceSort hands the
  /// host's tree (cuda/fmm_phase.h fmmSortForCheck), for comparison with chooseRootCube and sortCellsByKey;
  /// seconds: its host clock (upload, checks, keys, sort, the order and keys down, the host's gather).
  virtual Status fmmDeviceSort(const CellsView& cells, const SolveOptions& opt, RootCube& root, SortedCells& sorted,
                               std::vector<std::uint64_t>& keys, double* seconds) = 0;

  /// The FMM's near lists and P2P tiles of an isolated box's tree and its sorted cells (both built on the host) made
  /// on the device as method 'fmm' makes them with CudaOptions::fmmDeviceTiles (cuda/fmm_tiles_phase.h; the lists
  /// on the device first) and copied down whole; seconds: the device's time of the tiles' build. `period` (a periodic
  /// box's tree, with dipole terms): the lists walked with the image shifts and the tiles built with them, as with
  /// CudaOptions::fmmDevicePeriodicTiles, for comparison with buildHostNearField over buildInteractionLists(...,
  /// period).
  virtual Status fmmDeviceTiles(const fmm::FmmTree& tree, const SortedCells& sorted, double tolerance,
                                fmm::DeviceTiles& out, double* seconds, const double* period = nullptr) = 0;
  /// The FMM tree (topology, centres, radii, MAC quantities, multipoles) that method 'fmm' with
  /// CudaOptions::fmmDeviceTree builds on the device from its own sort (cuda/fmm_tree_phase.h), copied down whole, for
  /// comparison with the host's buildFmmTree by bits; seconds: the device's time of the topology's conversion and
  /// the upward pass (events). Periodic boxes (opt's periodic axes): as CudaOptions::fmmDevicePeriodic makes it
  /// (the density contrast of a fully periodic box, dipole terms, the signed scale, the norms; the scale from the
  /// device's cells with CudaOptions::fmmDevicePeriodicFinish, cuda/fmm_scale_phase.h, else the host's gathered ones).
  virtual Status fmmDeviceTree(const CellsView& cells, const SolveOptions& opt, fmm::FmmTree& tree,
                               double* seconds) = 0;

  // ---- One rank's share of a distributed solve, step by step as the GPU rank (cuda_rank_engine.h) takes them;
  //      see cuda/rank_phase.h for each step.
  virtual Status rankOpen(const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) = 0;
  virtual Status rankBuild(const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
                           SolveStats& st) = 0;
  virtual Status rankSummary(RankSummary& out) = 0;
  virtual Status rankChooseLets(const RemoteBox* boxes, std::size_t count, std::size_t* letNodes,
                                std::size_t* letCells) = 0;
  /// targets[targetCount]: a subset of the rank's cells (null: every cell), as rank_phase.h takes it.
  virtual Status rankStartLocalWalk(const SolveOptions& opt, const std::uint32_t* targets = nullptr,
                                    std::size_t targetCount = 0) = 0;
  virtual Status rankDownloadLet(std::size_t k, PackedLet& out) = 0;
  /// The whole tree and the sorted cells copied down (on the second stream; blocks until done), in the layout the
  /// host's LET selection reads, and the extents' box (scaled). Not used by the solve: the parity tool checks the
  /// device's LETs against the host's choice over this copy. Call after rankBuild (any time until rankFinish).
  virtual Status rankExportTree(HostTree& out, double extentLo[3], double extentHi[3]) = 0;
  virtual Status rankLocalWalkDone(bool* done) = 0;
  virtual Status rankFinishLocalWalk(const SolveOptions& opt, SolveStats& st) = 0;
  virtual Status rankPrepareReceived(const ReceivedLet* lets, std::size_t count) = 0;
  virtual Status rankWalkReceived(const ReceivedLet* lets, std::size_t count, const SolveOptions& opt,
                                  SolveStats& st) = 0;
  virtual Status rankFinish(const SolveOptions& opt, SolveResult& out) = 0;
};

/// A CUDA backend with these settings (name() == "cuda"; creating one touches no GPU).
std::unique_ptr<CudaBackend> makeCudaBackend(const CudaOptions& options);

}  // namespace amrgrav
