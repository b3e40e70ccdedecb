/// \file fmm_phase_parts.h
/// \brief The steps that the CUDA backend's isolated FMM (fmm_phase.cu) and its periodic FMM (fmm_periodic_phase.cu)
/// share: host arrays up into the FMM's device buffers, the tree's and cells' uploads and the P2P tables. Defined in fmm_phase.cu (the templates here). Internal to native/cuda.
#pragma once
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "cuda/check.h"
#include "cuda/device_buffers.h"
#include "cuda/device_state.h"
#include "cuda/fmm_lists_phase.h"
#include "cuda/fmm_tiles_phase.h"
#include "cuda/kernels_fmm.h"
#include "cuda/memory_plan.h"
#include "fmm/fmm_tree.h"
#include "fmm/multi_index.h"
#include "fmm/p2p_tables.h"
#include "fmm/p2p_tiles.h"
#include "tree/tree.h"

namespace amrgrav {
namespace cuda {
namespace fmmparts {

/// Arrays from this size up go through the pinned staging (memory_plan.h copyIn: several threads, ~20 GB/s against
/// ~2-5 GB/s for a pageable cudaMemcpy; the cells and multipoles at 256^3 are ~0.8 GB).
constexpr std::size_t kStagedBytes = std::size_t(1) << 20;

/// v up into b (grown to fit) on the state's stream; nothing for an empty v.
template <class T>
Status put(DeviceState& ds, DeviceBuffer<T>& b, const std::vector<T>& v, const char* what) {
  if (v.empty()) return Status::success();
  AG_TRY(b.reserve(v.size(), what));
  const std::size_t bytes = v.size() * sizeof(T);
  if (bytes >= kStagedBytes) {
    const Transfer t{const_cast<T*>(v.data()), b.get(), bytes};
    return copyIn(ds, &t, 1, ds.stream);
  }
  AG_CUDA_TRY(cudaMemcpyAsync(b.get(), v.data(), bytes, cudaMemcpyHostToDevice, ds.stream));
  return Status::success();
}

/// n elements of device array d down into v (synchronous).
template <class T>
Status down(const T* d, std::size_t n, std::vector<T>& v) {
  v.resize(n);
  if (n > 0) AG_CUDA_TRY(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return Status::success();
}

/// The lists' walk on the device over the tree of `nodes` nodes put there by putTree (and its MAC quantities,
/// uploaded here from hostMac) or made there (fmm_tree_phase.h; hostMac null): the M2L CSR into ds.fmm's m2lStart
/// and m2lSource, the rest described by `out`. accelLimit: the MAC's test 3 (fmm::FmmTree::accelLimit). period (a
/// periodic box's host tree, its multipole norms uploaded with hostMac): the walk with the image shifts, the M2L
/// CSR's shifts in out.m2lShift.
Status deviceLists(DeviceState& ds, std::size_t nodes, int order, const fmm::FmmTree* hostMac, double tolerance,
                   double accelLimit, DeviceFmmLists& out, const double* period = nullptr);

/// sortCellsByKey on the device (fmm_phase.cu: method 'tree''s steps, the same root, order, keys and sorted cells,
/// bit for bit): the sorted, scaled cells stay in ds.sortedCells (the caller's masses; no density contrast: the
/// block is laid out as for a direct solve) and ds.sums gets the sums' arrays; the keys and order come down and the
/// host gathers `sorted` (gather), or with deviceTree the FMM's topology is built there and the order alone comes
/// down (gather false: nothing). root: scaled as sortCellsByKey scales it.
Status sortOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, int threads, RootCube& root,
                    SortedCells& sorted, std::vector<std::uint64_t>& keys, bool deviceTree = false,
                    bool gather = true);

/// The tree's arrays that the lists' walk and the evaluation both read up into ds.fmm: topology (cellBegin,
/// cellCount, childBegin), childCount and the centres (asynchronous: `tree` must live until the stream is
/// synchronised; topo is the caller's staging vector, kept alive likewise).
Status putTree(DeviceState& ds, const fmm::FmmTree& tree, std::vector<std::uint32_t>& topo);

/// The sorted cells' x, y, z, mass up into ds.fmm.cells (asynchronous: c is the caller's staging, alive until the
/// stream is synchronised).
Status putCells(DeviceState& ds, const SortedCells& sorted, std::vector<double>& c);

/// The tile build's inputs (fmm_tiles_phase.h): the tree's arrays put by putTree or made by fmm_tree_phase.h; the
/// cells where the device sort left them (deviceSort: ds.sortedCells and ds.sortedSize, the same bits as the host
/// sort's) or put by putCells (the sizes then uploaded from the host's sorted cells). An isolated box's (period null).
FmmTileInputs tileInputs(DeviceState& ds, std::size_t nodes, std::size_t n, const SortedCells& sorted,
                         bool deviceSort);

/// The near field's tiles built on the device from the walk's P2P pairs (fmm_tiles_phase.h), and the host's side of
/// them, `hn` made anew: its table cache prepared for the tiles' slots and those slots (their other arrays stay on the
/// device).
Status deviceNearField(DeviceState& ds, const FmmTileInputs& in, const DeviceFmmLists& dl, int threads,
                       DeviceFmmTiles& dt, fmm::HostNearField& hn);

/// The tiles' tables on the device: uploaded when the set of slots differs from the one there (the tables of a slot
/// never change: p2p_tables.h's process cache).
Status putTables(DeviceState& ds, const fmm::P2pTables& tables, const std::vector<int>& slots);

/// The host-made near field up into ds.fmm: the leaves, the tiles' and the irregular leaves' uint32 arrays in one
/// buffer (tileOff[0..5]: target, stepStart, stepSource, irregular leaf, start, source), the step tables and 1/h
/// (asynchronous: staging is the caller's, alive until the stream is synchronised).
Status putHostTiles(DeviceState& ds, const fmm::NearLists& near, const fmm::P2pTiles& tiles,
                    const fmm::IrregularLists& irr, std::vector<std::uint32_t>& staging, std::size_t tileOff[6]);

/// A periodic box's host-made image shifts (the M2L lists', the tiles' steps' and the irregular leaves' near
/// sources', fmm/interaction_lists.h and fmm/p2p_tiles.h) up into ds.fmm.periodic.shifts in one buffer, shiftOff[0..2]
/// where each begins (asynchronous: staging is the caller's, alive until the stream is synchronised).
Status putHostShifts(DeviceState& ds, const std::vector<std::uint8_t>& m2lShift, const fmm::P2pTiles& tiles,
                     const fmm::IrregularLists& irr, std::vector<std::uint8_t>& staging, std::size_t shiftOff[3]);

/// Those shifts in the evaluation's view (the tiles' and irregular leaves' null when they have none); the M2L
/// lists' too unless m2lElsewhere (the device's walk keeps them).
void viewHostShifts(const DeviceState& ds, const fmm::P2pTiles& tiles, const fmm::IrregularLists& irr,
                    const std::size_t shiftOff[3], bool m2lElsewhere, FmmDeviceView& v);

/// The evaluation's view of ds.fmm as the host-fed steps fill it: the cells (putCells), the tree (putTree), M, L,
/// the M2L lists, the host tiles at tileOff (putHostTiles), the P2P tables (putTables) and the sums
/// (reserveSums). The counts of leaves, tiles and irregular leaves, and what a path keeps
/// elsewhere (the device's sort, tiles, image shifts), are the caller's to set.
FmmDeviceView bufferView(DeviceState& ds, const fmm::FmmTree& tree, std::size_t nodes, std::size_t n, bool accel,
                         const std::size_t tileOff[6]);

/// The evaluation's sums in ds.fmm.sums for n cells (4 n with accelerations), queued on ds.stream; with
/// CudaOptions::poisonDevice filled with NaN first, so that a cell the kernels miss shows (tests).
Status reserveSums(DeviceState& ds, std::size_t n, bool accel);

/// The evaluation's cells and sums where the device's sort left them (ds.sortedCells, ds.sums).
void viewDeviceSorted(const DeviceState& ds, bool accel, FmmDeviceView& v);

/// The near field's counts, from the device's tiles' build (dt) or the host's (hn): the same numbers either way.
struct NearFieldCounts {
  std::size_t leaves = 0, tiles = 0, irregular = 0, tables = 0;
  std::uint64_t tableEntries = 0, computedEntries = 0, tableSteps = 0, computedSteps = 0;
};
NearFieldCounts nearFieldCounts(bool deviceTiles, const DeviceFmmTiles& dt, const fmm::HostNearField& hn);
/// The counts the evaluation launches by (the computed pairs' kernel only where a tile holds some).
void viewNearFieldCounts(const NearFieldCounts& c, FmmDeviceView& v);
/// The counts into the solve's device stats (fmmTiles, fmmTileTargets, fmmTables, the entries, fmmIrregularLeaves).
void reportNearFieldCounts(const NearFieldCounts& c, CudaStats& s);

/// The evaluation's near field where the device's tiles' build left it (and the image shifts, null in isolated
/// boxes).
void viewDeviceTiles(const DeviceFmmTiles& dt, FmmDeviceView& v);

/// The device's evaluation of v, in the CPU's order of phases: P2P (overwrites the sums), M2L, L2L level by level
/// (levelBegin: fmm::FmmTree::levelBegin), L2P; events between the kernels (slots 0-2, 4, 5) for their times
/// (ds.stats.secondsWalk, fmmKernelSeconds, walkLaunches). Synchronous.
Status evaluateOnDevice(DeviceState& ds, const FmmDeviceView& v, const std::vector<std::uint32_t>& levelBegin);
/// evaluateOnDevice in two parts, for a caller with host work between them (a GPU rank of the distributed FMM,
/// fmm_rank_phase.cu, whose L is complete only after the LET exchange): the near field queued (P2P, overwriting the
/// sums; slots 4 and 0), then, once L is up (queued on ds.stream after it), M2L, L2L, L2P and the times as above
/// (ds.stats.secondsWalk then spans the host's work between the two too). Synchronous at its end.
Status queueNearOnDevice(DeviceState& ds, const FmmDeviceView& v);
Status evaluateFarOnDevice(DeviceState& ds, const FmmDeviceView& v, const std::vector<std::uint32_t>& levelBegin);

/// The evaluation's sums (v.phi; v.gx, v.gy, v.gz with accelerations) down into phi and g through the pinned
/// staging (the kernels' work on ds.stream first).
Status downloadSums(DeviceState& ds, const FmmDeviceView& v, std::size_t n, bool accel, std::vector<double>& phi,
                    std::vector<double> g[3]);

/// The self term folded into the device sort's potential sums (the direct path's launchFoldSelf over the sorted
/// masses and sizes: finishSolve's self term, the same bits), the mass scale 1: the FMM's sums are in the caller's
/// masses (the sort gathers them unscaled; a periodic box's contrast applied to them there).
Status foldSelfOnDevice(DeviceState& ds, const FmmDeviceView& v, std::size_t n, const SolveOptions& opt);
/// ds.stats' totals (total time, device bytes) and the solve's stats from them and the lists' shape.
void reportFmmStats(DeviceState& ds, Clock::time_point t0, std::size_t n, std::size_t nodes,
                    std::size_t leaves, int depth, std::uint64_t directedM2L, std::uint64_t directedP2P,
                    SolveStats& st);

}  // namespace fmmparts
}  // namespace cuda
}  // namespace amrgrav
