/// \file fmm_phase.cu
/// \brief Method 'fmm' on the CUDA backend (fmm_phase.h): the CPU backend's FMM path (cpu/cpu_backend.cpp,
/// fmm/fmm_solve.cpp) with its evaluation moved to the device, from cells or from blocks (the block entry).
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/blocks.h"
#include "core/thread_pool.h"
#include "core/validate.h"
#include "cuda/blocks_phase.h"
#include "cuda/device.h"
#include "cuda/device_state.h"
#include "cuda/fmm_phase.h"
#include "cuda/fmm_phase_parts.h"
#include "cuda/fmm_tiles_phase.h"
#include "cuda/kernels.h"
#include "cuda/kernels_fmm.h"
#include "cuda/m2l_variants.h"
#include "cuda/memory_plan.h"
#include "cuda/solve.h"
#include "cuda/tree_phase.h"
#include "cuda/walk_phase.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/multi_index.h"
#include "fmm/p2p_tables.h"
#include "fmm/p2p_tiles.h"
#include "fmm/p2p_tiles_emulate.h"
#include "fmm/terms_k.h"
#include "tree/finish.h"

namespace amrgrav {
namespace cuda {
namespace fmmparts {

Status putTree(DeviceState& ds, const fmm::FmmTree& tree, std::vector<std::uint32_t>& topo) {
  FmmBuffers& b = ds.fmm;
  const Octree& o = tree.topo;
  const std::size_t nodes = tree.nodeCount();
  topo.resize(3 * nodes);
  std::copy(o.cellBegin.begin(), o.cellBegin.end(), topo.begin());
  std::copy(o.cellCount.begin(), o.cellCount.end(), topo.begin() + nodes);
  std::copy(o.childBegin.begin(), o.childBegin.end(), topo.begin() + 2 * nodes);
  AG_TRY(put(ds, b.topo, topo, "the FMM's topology"));
  AG_TRY(put(ds, b.childCount, o.childCount, "the FMM's topology"));
  AG_TRY(put(ds, b.centre, tree.centre, "the FMM's centres"));
  return Status::success();
}

Status deviceLists(DeviceState& ds, std::size_t nodes, int order, const fmm::FmmTree* hostMac, double tolerance,
                   double accelLimit, DeviceFmmLists& out, const double* period) {
  FmmBuffers& b = ds.fmm;
  if (hostMac) AG_TRY(uploadWalkInputs(*hostMac, b.lists, ds.stream));
  FmmListInputs in;
  in.nodes = std::uint32_t(nodes);
  in.childBegin = b.topo.get() + 2 * nodes;
  in.cellCount = b.topo.get() + nodes;
  in.childCount = b.childCount.get();
  in.centre = b.centre.get();
  in.order = order;
  in.tolerance = tolerance;
  in.accelLimit = accelLimit;
  if (period) {
    in.periodic = true;
    for (int d = 0; d < 3; ++d) in.period[d] = period[d];
  }
  return buildFmmListsOnDevice(in, b.lists, b.m2lStart, b.m2lSource, ds.stream, out);
}

}  // namespace fmmparts

namespace {
using fmmparts::deviceLists;
using fmmparts::deviceNearField;
using fmmparts::down;
using fmmparts::foldSelfOnDevice;
using fmmparts::sortOnDevice;
using fmmparts::tileInputs;
using fmmparts::put;
using fmmparts::putCells;
using fmmparts::putTables;
using fmmparts::putTree;

}  // namespace

namespace fmmparts {

/// sortCellsByKey on the device, by method 'tree''s own steps (tree_phase.h uploadAndBound, sortAndBuild) without
/// its tree: the cells up (x, y, z, size, then the mass) and checked as validateCells checks them, the root cube by
/// chooseRootCube's rule from the device's bounds (min and max: exact in any order), the keys by tree/keys.h's code,
/// CUB's stable radix sort (equal keys keep the caller's order: the host's permutation), coincident cells refused;
/// the sorted keys and order copied down and the cells gathered on the host by sortCellsByKey's own gather, so the
/// host's tree gets the bits that sortCellsByKey gives. root: scaled as sortCellsByKey scales it. The block is laid
/// out as for a direct solve (no tree room): the sorted, scaled cells stay there for the evaluation (x, y, z, mass in
/// ds.sortedCells) and ds.sums holds its sums (phi, then gx, gy, gz with accelerations). deviceTree: the FMM's
/// topology is built there too (in the spare index half, for fmm_tree_phase.h) and the keys stay on the device
/// (the order alone comes down, for the host's gather: finishSolve reads the sorted cells); gather false: nothing
/// comes down (the parity check of the tree).
Status sortOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, int threads, RootCube& root,
                    SortedCells& sorted, std::vector<std::uint64_t>& keys, bool deviceTree, bool gather) {
  const std::size_t n = cells.n;
  AG_TRY(uploadAndBound(ds, cells, opt, true));
  std::vector<std::uint32_t> order(gather ? n : 0);
  keys.resize(deviceTree ? 0 : n);
  SortDownload down{deviceTree ? nullptr : keys.data(), gather ? order.data() : nullptr};
  if (deviceTree) down.treeLeafSize = fmm::kFmmLeafSize;
  AG_TRY(sortAndBuild(ds, cells, opt, true, 0.0, false, &down));
  if (gather) gatherSortedCells(cells, std::move(order), ds.scale, threads, sorted);
  else sorted.scale = ds.scale;  // the cells stay on the device; the scale is the solve's all the same
  root = ds.root;  // scaled by sortAndBuild as sortCellsByKey scales it
  return Status::success();
}

Status putCells(DeviceState& ds, const SortedCells& sorted, std::vector<double>& c) {
  const std::size_t n = sorted.x.size();
  c.resize(4 * n);
  std::copy(sorted.x.begin(), sorted.x.end(), c.begin());
  std::copy(sorted.y.begin(), sorted.y.end(), c.begin() + n);
  std::copy(sorted.z.begin(), sorted.z.end(), c.begin() + 2 * n);
  std::copy(sorted.mass.begin(), sorted.mass.end(), c.begin() + 3 * n);
  return put(ds, ds.fmm.cells, c, "the FMM's cells");
}

FmmTileInputs tileInputs(DeviceState& ds, std::size_t nodes, std::size_t n, const SortedCells& sorted,
                         bool deviceSort) {
  FmmBuffers& b = ds.fmm;
  FmmTileInputs in;
  in.nodes = std::uint32_t(nodes);
  in.cells = n;
  in.childCount = b.childCount.get();
  in.cellBegin = b.topo.get();
  in.cellCount = b.topo.get() + nodes;
  if (deviceSort) {
    in.x = ds.sortedCells.x;
    in.y = ds.sortedCells.y;
    in.z = ds.sortedCells.z;
    in.deviceSize = ds.sortedSize;
  } else {
    in.x = b.cells.get();
    in.y = in.x + n;
    in.z = in.x + 2 * n;
    in.size = sorted.size.data();
  }
  return in;
}

Status putTables(DeviceState& ds, const fmm::P2pTables& tables, const std::vector<int>& slots) {
  FmmBuffers& b = ds.fmm;
  if (slots == b.p2pKSlots) return Status::success();
  b.p2pKSlots.clear();
  if (slots.empty()) return Status::success();
  constexpr std::size_t per = std::size_t(fmm::kTableCells) * fmm::kTableCells;
  std::vector<double> k(slots.size() * per);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const fmm::P2pTable* t = tables.bySlot(slots[i]);
    if (!t) return Status::error(ErrorCode::Internal, "CUDA backend: the FMM's P2P table of a tile was not made");
    std::copy(t->k, t->k + per, k.begin() + i * per);
  }
  AG_TRY(put(ds, b.p2pK, k, "the FMM's P2P tables"));
  AG_TRY(put(ds, b.p2pSlot, slots, "the FMM's P2P tables"));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // k dies here
  b.p2pKSlots = slots;
  return Status::success();
}

Status putHostTiles(DeviceState& ds, const fmm::NearLists& near, const fmm::P2pTiles& tiles,
                    const fmm::IrregularLists& irr, std::vector<std::uint32_t>& staging, std::size_t tileOff[6]) {
  FmmBuffers& b = ds.fmm;
  AG_TRY(put(ds, b.leaves, near.leaves, "the FMM's leaves"));
  const std::vector<std::uint32_t>* parts[6] = {&tiles.target, &tiles.stepStart, &tiles.stepSource,
                                                &irr.leaf,     &irr.start,       &irr.source};
  staging.clear();
  for (int q = 0; q < 6; ++q) {
    tileOff[q] = staging.size();
    staging.insert(staging.end(), parts[q]->begin(), parts[q]->end());
  }
  AG_TRY(put(ds, b.tiles, staging, "the FMM's P2P tiles"));
  AG_TRY(put(ds, b.tileStepTable, tiles.stepTable, "the FMM's P2P tiles"));
  return put(ds, b.tileInvH, tiles.invH, "the FMM's P2P tiles");
}

Status putHostShifts(DeviceState& ds, const std::vector<std::uint8_t>& m2lShift, const fmm::P2pTiles& tiles,
                     const fmm::IrregularLists& irr, std::vector<std::uint8_t>& staging, std::size_t shiftOff[3]) {
  const std::vector<std::uint8_t>* sp[3] = {&m2lShift, &tiles.stepShift, &irr.shift};
  staging.clear();
  for (int q = 0; q < 3; ++q) {
    shiftOff[q] = staging.size();
    staging.insert(staging.end(), sp[q]->begin(), sp[q]->end());
  }
  staging.push_back(fmm::kNoShift);  // never empty (a box of one leaf has no lists)
  return put(ds, ds.fmm.periodic.shifts, staging, "the FMM's image shifts");
}

void viewHostShifts(const DeviceState& ds, const fmm::P2pTiles& tiles, const fmm::IrregularLists& irr,
                    const std::size_t shiftOff[3], bool m2lElsewhere, FmmDeviceView& v) {
  const std::uint8_t* shifts = ds.fmm.periodic.shifts.get();
  if (!m2lElsewhere) v.m2lShift = shifts + shiftOff[0];
  v.tileStepShift = tiles.stepShift.empty() ? nullptr : shifts + shiftOff[1];
  v.nearShift = irr.shift.empty() ? nullptr : shifts + shiftOff[2];
}

void viewDeviceSorted(const DeviceState& ds, bool accel, FmmDeviceView& v) {
  v.x = ds.sortedCells.x;
  v.y = ds.sortedCells.y;
  v.z = ds.sortedCells.z;
  v.mass = ds.sortedCells.mass;
  v.phi = ds.sums[0];
  if (accel) {
    v.gx = ds.sums[1];
    v.gy = ds.sums[2];
    v.gz = ds.sums[3];
  }
}

Status deviceNearField(DeviceState& ds, const FmmTileInputs& in, const DeviceFmmLists& dl, int threads,
                       DeviceFmmTiles& dt, fmm::HostNearField& hn) {
  AG_TRY(buildFmmTilesOnDevice(in, dl, ds.fmm.tileBuild, ds.stream, dt));
  hn = fmm::HostNearField{};
  hn.tables.prepareSlots(dt.slots, threads);
  hn.tiles.slots = dt.slots;
  return Status::success();
}

NearFieldCounts nearFieldCounts(bool deviceTiles, const DeviceFmmTiles& dt, const fmm::HostNearField& hn) {
  NearFieldCounts c;
  c.leaves = deviceTiles ? dt.leafCount : hn.near.leaves.size();
  c.tiles = deviceTiles ? dt.tiles : hn.tiles.tiles();
  c.irregular = deviceTiles ? dt.irregularCount : hn.tiles.irregular.size();
  c.tables = hn.tiles.slots.size();  // the device's build's slots are copied there too
  c.tableEntries = deviceTiles ? dt.total.tableEntries : hn.tiles.tableEntries;
  c.computedEntries = deviceTiles ? dt.total.computedEntries : hn.tiles.computedEntries;
  c.tableSteps = deviceTiles ? dt.total.tableSteps : hn.tiles.tableSteps;
  c.computedSteps = deviceTiles ? dt.total.computedSteps : hn.tiles.computedSteps;
  return c;
}

void viewNearFieldCounts(const NearFieldCounts& c, FmmDeviceView& v) {
  v.leafCount = unsigned(c.leaves);
  v.tileCount = unsigned(c.tiles);
  v.irregularCount = unsigned(c.irregular);
  v.tileComputedSteps = c.computedEntries > 0;
}

void reportNearFieldCounts(const NearFieldCounts& c, CudaStats& s) {
  s.fmmTiles = c.tiles;
  s.fmmTileTargets = c.leaves - c.irregular;
  s.fmmTables = c.tables;
  s.fmmTableEntries = c.tableEntries;
  s.fmmComputedEntries = c.computedEntries;
  s.fmmIrregularLeaves = c.irregular;
  s.fmmTableSteps = c.tableSteps;
  s.fmmComputedSteps = c.computedSteps;
}

void viewDeviceTiles(const DeviceFmmTiles& dt, FmmDeviceView& v) {
  v.leaves = dt.leaves;
  v.tileTarget = dt.target;
  v.tileStepStart = dt.stepStart;
  v.tileStepSource = dt.stepSource;
  v.tileStepTable = dt.stepTable;
  v.tileInvH = dt.invH;
  v.irregularLeaf = dt.irrLeaf;
  v.nearStart = dt.irrStart;
  v.nearSource = dt.irrSource;
  v.tileStepShift = dt.stepShift;
  v.nearShift = dt.irrShift;
}

FmmDeviceView bufferView(DeviceState& ds, const fmm::FmmTree& tree, std::size_t nodes, std::size_t n, bool accel,
                         const std::size_t tileOff[6]) {
  FmmBuffers& b = ds.fmm;
  FmmDeviceView v;
  v.order = tree.order;
  v.terms = tree.terms;
  v.mStride = tree.mStride;
  v.nodes = unsigned(nodes);
  v.x = b.cells.get();
  v.y = v.x + n;
  v.z = v.x + 2 * n;
  v.mass = v.x + 3 * n;
  v.centre = b.centre.get();
  v.M = b.M.get();
  v.L = b.L.get();
  v.cellBegin = b.topo.get();
  v.cellCount = v.cellBegin + nodes;
  v.childBegin = v.cellBegin + 2 * nodes;
  v.childCount = b.childCount.get();
  v.m2lStart = b.m2lStart.get();
  v.m2lSource = b.m2lSource.get();
  v.leaves = b.leaves.get();
  v.tileTarget = b.tiles.get() + tileOff[0];
  v.tileStepStart = b.tiles.get() + tileOff[1];
  v.tileStepSource = b.tiles.get() + tileOff[2];
  v.tileStepTable = b.tileStepTable.get();
  v.tileInvH = b.tileInvH.get();
  v.p2pK = b.p2pK.get();
  v.p2pSlot = b.p2pSlot.get();
  v.irregularLeaf = b.tiles.get() + tileOff[3];
  v.nearStart = b.tiles.get() + tileOff[4];
  v.nearSource = b.tiles.get() + tileOff[5];
  v.phi = b.sums.get();
  v.m2lVariant = ds.copt.fmmM2L;
  v.accelTablesMma = ds.copt.fmmAccelTablesMma;
  v.nearSingle = ds.copt.fmmNearSingle;
  if (accel) {
    v.gx = v.phi + n;
    v.gy = v.phi + 2 * n;
    v.gz = v.phi + 3 * n;
  }
  return v;
}

Status reserveSums(DeviceState& ds, std::size_t n, bool accel) {
  const std::size_t sums = (accel ? 4 : 1) * n;
  AG_TRY(ds.fmm.sums.reserve(sums, "the FMM's sums"));
  if (ds.copt.poisonDevice) AG_CUDA_TRY(cudaMemsetAsync(ds.fmm.sums.get(), 0xff, sums * sizeof(double), ds.stream));
  return Status::success();
}

Status evaluateOnDevice(DeviceState& ds, const FmmDeviceView& v, const std::vector<std::uint32_t>& levelBegin) {
  AG_TRY(queueNearOnDevice(ds, v));
  return evaluateFarOnDevice(ds, v, levelBegin);
}

Status queueNearOnDevice(DeviceState& ds, const FmmDeviceView& v) {
  AG_CUDA_TRY(cudaEventRecord(ds.events[4], ds.stream));
  AG_TRY(launchFmmP2P(v, ds.stream));
  AG_CUDA_TRY(cudaEventRecord(ds.events[0], ds.stream));
  return Status::success();
}

Status evaluateFarOnDevice(DeviceState& ds, const FmmDeviceView& v, const std::vector<std::uint32_t>& levelBegin) {
  FmmDeviceView m2l = v;
  if (v.m2lVariant == kFmmM2LHarmonic) {  // the folded multipoles' room
    AG_TRY(ds.fmm.Mh.reserve(std::size_t(v.nodes) * fmm::harmonicStrideOf(v.order), "the FMM's folded multipoles"));
    m2l.Mh = ds.fmm.Mh.get();
  }
  AG_TRY(launchFmmM2L(m2l, ds.stream));
  AG_CUDA_TRY(cudaEventRecord(ds.events[1], ds.stream));
  for (std::size_t lev = 0; lev + 1 < levelBegin.size(); ++lev)
    AG_TRY(launchFmmL2L(v, levelBegin[lev], levelBegin[lev + 1], ds.stream));
  AG_CUDA_TRY(cudaEventRecord(ds.events[2], ds.stream));
  AG_TRY(launchFmmL2P(v, ds.stream));
  AG_CUDA_TRY(cudaEventRecord(ds.events[5], ds.stream));
  AG_CUDA_TRY(cudaEventSynchronize(ds.events[5]));
  ds.stats.secondsWalk = elapsed(ds, 4, 5);
  ds.stats.fmmKernelSeconds[0] = elapsed(ds, 4, 0);
  ds.stats.fmmKernelSeconds[1] = elapsed(ds, 0, 1);
  ds.stats.fmmKernelSeconds[2] = elapsed(ds, 1, 2);
  ds.stats.fmmKernelSeconds[3] = elapsed(ds, 2, 5);
  ds.stats.walkLaunches = 1;
  return Status::success();
}

Status downloadSums(DeviceState& ds, const FmmDeviceView& v, std::size_t n, bool accel, std::vector<double>& phi,
                    std::vector<double> g[3]) {
  phi.resize(n);
  Transfer d[4] = {{phi.data(), v.phi, n * sizeof(double)}};
  int count = 1;
  if (accel) {
    double* const from[3] = {v.gx, v.gy, v.gz};
    for (int c = 0; c < 3; ++c) {
      g[c].resize(n);
      d[count++] = Transfer{g[c].data(), from[c], n * sizeof(double)};
    }
  }
  return copyOut(ds, d, count, ds.stream);
}

Status foldSelfOnDevice(DeviceState& ds, const FmmDeviceView& v, std::size_t n, const SolveOptions& opt) {
  ds.massScale = 1.0;
  return launchFoldSelf(v.phi, ds.sortedCells.mass, ds.sortedSize, unsigned(n), 1.0,
                        selfCoefficient(opt.selfPotential), ds.stream);
}

void reportFmmStats(DeviceState& ds, Clock::time_point t0, std::size_t n, std::size_t nodes, std::size_t leaves,
                    int depth, std::uint64_t directedM2L, std::uint64_t directedP2P, SolveStats& st) {
  ds.stats.secondsTotal = since(t0);
  ds.stats.deviceBytes = deviceBytes(ds);
  ds.stats.deviceBytesPerCell = double(ds.stats.deviceBytes) / double(n);
  fmmMemoryParts(ds.fmm, ds.stats.deviceBytes, ds.stats.fmmMemoryParts);
  st.secondsKeys = ds.stats.secondsKeys;
  st.secondsBuild = ds.stats.secondsBuild;
  st.secondsMoments = ds.stats.secondsMoments;
  st.secondsWalk = ds.stats.secondsWalk;
  st.secondsUpload = ds.stats.secondsUpload;
  st.secondsDownload = ds.stats.secondsDownload;
  st.deviceBytesPerCell = ds.stats.deviceBytesPerCell;
  st.nodes = nodes;
  st.leaves = leaves;
  st.treeDepth = depth;
  st.approxInteractions = directedM2L;
  st.directInteractions = directedP2P;
}

}  // namespace fmmparts

void FmmBuffers::release() {
  for (auto* b : {&cells, &sums, &centre, &M, &Mh, &L, &tileInvH, &p2pK}) b->release();
  lists.release();
  tileBuild.release();
  treeBuild.release();
  periodic.release();
  for (auto* b : {&topo, &m2lStart, &m2lSource, &leaves, &tiles}) b->release();
  childCount.release();
  tileStepTable.release();
  p2pSlot.release();
  p2pKSlots.clear();
}

std::size_t FmmBuffers::bytes() const {
  return cells.bytes() + sums.bytes() + centre.bytes() + M.bytes() + Mh.bytes() + L.bytes() + topo.bytes() +
         childCount.bytes() + m2lStart.bytes() + m2lSource.bytes() + leaves.bytes() + tiles.bytes() +
         tileStepTable.bytes() + tileInvH.bytes() + p2pK.bytes() + p2pSlot.bytes() + lists.bytes() +
         tileBuild.bytes() + treeBuild.bytes() +
         periodic.bytes();
}

void fmmMemoryParts(const FmmBuffers& b, std::size_t deviceBytes, std::size_t parts[8]) {
  parts[1] = b.cells.bytes() + b.sums.bytes();
  parts[2] = b.centre.bytes() + b.M.bytes() + b.Mh.bytes() + b.L.bytes();
  parts[3] = b.topo.bytes() + b.childCount.bytes() + b.leaves.bytes();
  parts[4] = b.m2lStart.bytes() + b.m2lSource.bytes();
  parts[5] = b.lists.bytes();
  parts[6] = b.tiles.bytes() + b.tileStepTable.bytes() + b.tileInvH.bytes() + b.p2pK.bytes() + b.p2pSlot.bytes() +
             b.tileBuild.bytes();
  parts[7] = b.treeBuild.bytes() + b.periodic.bytes();
  parts[0] = deviceBytes - b.bytes();  // the rest: the sort's and the tree method's state
}

Status checkFmmOnDevice(const SolveOptions&) {
  // isolated boxes here, periodic ones (fully, sheets, lines) in fmm_periodic_phase.cu: every box the CPU's FMM takes
  return Status::success();
}

Status fmmListsForCheck(DeviceState& ds, const fmm::FmmTree& tree, double tolerance, fmm::FmmLists& out,
                        double* seconds, const double* period) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    if (tree.dipoles != (period != nullptr))
      return Status::error(ErrorCode::InvalidOption,
                           "the device's FMM lists take an isolated box's tree, or a periodic box's (dipole terms) "
                           "with its periods");
    AG_TRY(ensureDevice(ds));
    std::vector<std::uint32_t> topo;
    AG_TRY(putTree(ds, tree, topo));
    AG_CUDA_TRY(cudaEventRecord(ds.events[0], ds.stream));
    DeviceFmmLists dl;
    // synchronises: topo may go
    AG_TRY(deviceLists(ds, tree.nodeCount(), tree.order, &tree, tolerance, tree.accelLimit, dl, period));
    AG_CUDA_TRY(cudaEventRecord(ds.events[1], ds.stream));
    AG_TRY(downloadFmmLists(dl, true, ds.stream, out, period));
    if (seconds) *seconds = elapsed(ds, 0, 1);
    return Status::success();
  });
}

Status fmmSortForCheck(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, RootCube& root,
                       SortedCells& sorted, std::vector<std::uint64_t>& keys, double* seconds) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    AG_TRY(checkOptions(opt, cells.n, false));
    AG_TRY(checkFmmOnDevice(opt));
    if (cells.n == 0) return Status::error(ErrorCode::InvalidInput, "the device's FMM sort takes at least one cell");
    AG_TRY(ensureDevice(ds));
    ds.blk.key.valid = false;  // the block is laid out anew: a block solve's kept tree is gone
    const auto t = Clock::now();
    AG_TRY(sortOnDevice(ds, cells, opt, resolveThreadCount(opt.threads), root, sorted, keys));
    if (seconds) *seconds = since(t);
    return Status::success();
  });
}

Status fmmTilesForCheck(DeviceState& ds, const fmm::FmmTree& tree, const SortedCells& sorted, double tolerance,
                        fmm::DeviceTiles& out, double* seconds, const double* period) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    if (tree.dipoles != (period != nullptr))
      return Status::error(ErrorCode::InvalidOption,
                           "the device's FMM tiles: a periodic box's tree (dipole terms) with its period, or an "
                           "isolated one's without");
    AG_TRY(ensureDevice(ds));
    std::vector<std::uint32_t> topo;
    std::vector<double> c;
    AG_TRY(putTree(ds, tree, topo));
    AG_TRY(putCells(ds, sorted, c));
    DeviceFmmLists dl;
    // synchronises: topo, c may go
    AG_TRY(deviceLists(ds, tree.nodeCount(), tree.order, &tree, tolerance, tree.accelLimit, dl, period));
    AG_CUDA_TRY(cudaEventRecord(ds.events[0], ds.stream));
    DeviceFmmTiles dt;
    FmmTileInputs in = tileInputs(ds, tree.nodeCount(), sorted.order.size(), sorted, false);
    in.period = period;
    AG_TRY(buildFmmTilesOnDevice(in, dl, ds.fmm.tileBuild, ds.stream, dt));
    AG_CUDA_TRY(cudaEventRecord(ds.events[1], ds.stream));
    AG_CUDA_TRY(cudaEventSynchronize(ds.events[1]));
    if (seconds) *seconds = elapsed(ds, 0, 1);
    const std::size_t nodes = tree.nodeCount();
    out = fmm::DeviceTiles{};
    AG_TRY(down(dt.leaves, dt.leafCount, out.near.leaves));
    AG_TRY(down(dt.nearStart, std::size_t(dt.leafCount) + 1, out.near.start));
    AG_TRY(down(dt.nearSource, out.near.start.back(), out.near.source));
    if (period) {  // the shifts: each near entry's, each step column's, each irregular entry's
      AG_TRY(down(dt.nearShift, out.near.start.back(), out.near.shift));
      for (int d = 0; d < 3; ++d) out.near.period[d] = period[d];
    }
    AG_TRY(down(dt.regular, nodes, out.reg.regular));
    AG_TRY(down(ds.fmm.tileBuild.origin.get(), 3 * nodes, out.reg.origin));
    AG_TRY(down(ds.fmm.tileBuild.h.get(), nodes, out.reg.h));
    fmm::P2pTiles& t = out.tiles;
    const std::size_t w = fmm::kTileTargets;
    AG_TRY(down(dt.target, dt.tiles * w, t.target));
    AG_TRY(down(dt.invH, dt.tiles * w, t.invH));
    AG_TRY(down(dt.stepStart, std::size_t(dt.tiles) + 1, t.stepStart));
    AG_TRY(down(dt.stepTable, dt.steps, t.stepTable));
    AG_TRY(down(dt.stepSource, dt.steps * w, t.stepSource));
    if (period) AG_TRY(down(dt.stepShift, dt.steps * w, t.stepShift));
    t.slots = dt.slots;
    AG_TRY(down(dt.irregular, dt.irregularCount, t.irregular));
    t.tableSteps = dt.total.tableSteps;
    t.computedSteps = dt.total.computedSteps;
    t.tableEntries = dt.total.tableEntries;
    t.computedEntries = dt.total.computedEntries;
    AG_TRY(down(dt.irrLeaf, dt.irregularCount, out.irregular.leaf));
    AG_TRY(down(dt.irrStart, std::size_t(dt.irregularCount) + 1, out.irregular.start));
    AG_TRY(down(dt.irrSource, dt.irregularEntries, out.irregular.source));
    if (period) AG_TRY(down(dt.irrShift, dt.irregularEntries, out.irregular.shift));
    return Status::success();
  });
}

Status fmmTreeForCheck(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, fmm::FmmTree& tree,
                       double* seconds) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    AG_TRY(checkOptions(opt, cells.n, false));
    AG_TRY(checkFmmOnDevice(opt));
    if (cells.n == 0) return Status::error(ErrorCode::InvalidInput, "the device's FMM tree takes at least one cell");
    AG_TRY(ensureDevice(ds));
    ds.blk.key.valid = false;  // the block is laid out anew: a block solve's kept tree is gone
    RootCube root;
    SortedCells sorted;
    std::vector<std::uint64_t> keys;
    const int threads = resolveThreadCount(opt.threads);
    if (opt.anyPeriodic()) {  // fmm_periodic_phase.cu's steps: the contrast, the tree, the scale, the norms; the
                              // scale from the device's cells with CudaOptions::fmmDevicePeriodicFinish (no gather),
                              // else the host's from its gathered cells
      AG_TRY(sortOnDevice(ds, cells, opt, threads, root, sorted, keys, true, !ds.copt.fmmDevicePeriodicFinish));
      SolveStats st;
      AG_TRY(periodicContrast(ds, cells, opt, threads, true, sorted, st));
      AG_CUDA_TRY(cudaEventRecord(ds.events[0], ds.stream));
      DeviceFmmTree dt;
      AG_TRY(periodicTreeOnDevice(ds, cells, opt, sorted, threads, dt, tree));
      AG_CUDA_TRY(cudaEventRecord(ds.events[1], ds.stream));
      AG_CUDA_TRY(cudaEventSynchronize(ds.events[1]));
      if (seconds) *seconds = elapsed(ds, 0, 1);
      AG_TRY(down(ds.fmm.M.get(), dt.nodes * std::size_t(tree.mStride), tree.M));
      return down(ds.fmm.lists.norms.get(), dt.nodes * std::size_t(tree.order + 1), tree.norms);
    }
    AG_TRY(sortOnDevice(ds, cells, opt, threads, root, sorted, keys, true, false));
    AG_CUDA_TRY(cudaEventRecord(ds.events[0], ds.stream));
    DeviceFmmTree dt;
    AG_TRY(buildFmmTreeOnDevice(ds, opt, dt, tree));
    AG_CUDA_TRY(cudaEventRecord(ds.events[1], ds.stream));
    AG_CUDA_TRY(cudaEventSynchronize(ds.events[1]));
    if (seconds) *seconds = elapsed(ds, 0, 1);
    return downloadFmmTree(ds, dt, true, tree);
  });
}

namespace {

/// Which of the FMM's steps run on the device (CudaOptions), and what follows from them.
struct FmmSteps {
  bool deviceSort = false, deviceWalk = false, deviceTree = false, deviceTiles = false, deviceFinish = false;
};

FmmSteps fmmSteps(const CudaOptions& c) {
  FmmSteps f;
  f.deviceTiles = c.fmmDeviceLists && c.fmmDeviceTiles;
  f.deviceSort = c.fmmDeviceSort;
  f.deviceWalk = c.fmmDeviceLists;
  // the tree and its upward pass on the device (fmm_tree_phase.h) from the device sort's topology, for its lists
  f.deviceTree = c.fmmDeviceTree && f.deviceSort && f.deviceWalk;
  // with the tiles there too nothing on the host reads the sorted cells: no gather, the finish on the device
  f.deviceFinish = f.deviceTree && f.deviceTiles;
  return f;
}

/// What the evaluation leaves for the finish and the stats.
struct FmmEvaluated {
  fmm::FmmTree tree;  ///< with the device's tree its shape alone (order, terms, levels, depth, root)
  FmmDeviceView v;    ///< the sums: v.phi (v.gx, v.gy, v.gz with accelerations)
  std::size_t nodes = 0, leafCount = 0;
  std::uint64_t directedM2L = 0, directedP2P = 0;
};

/// The FMM from the sorted cells on (isolated boxes): the tree with its multipoles, the lists, the near field's tiles,
/// the uploads and the device's evaluation, on the device or the host as `f` says. The sorted cells are where the
/// device sort left them (f.deviceSort: ds.sortedCells, ds.sortedSize; ds.sums) or in `sorted` (the host's sort,
/// with its keys and scaled root); with the device's tree neither `sorted` nor `keys` nor `root` is read.
Status evaluateSorted(DeviceState& ds, const SolveOptions& opt, const FmmSteps& f, std::size_t n, int threads,
                      const SortedCells& sorted, const std::vector<std::uint64_t>& keys, const RootCube& root,
                      FmmEvaluated& e) {
  const bool deviceSort = f.deviceSort, deviceWalk = f.deviceWalk, deviceTree = f.deviceTree,
             deviceTiles = f.deviceTiles;
  // the tree with its multipoles: the CPU backend's on the host, or the device's by the same rules (the same bits);
  // the host's tiles then read its topology and centres, copied down
  auto t = Clock::now();
  fmm::FmmTree& tree = e.tree;
  DeviceFmmTree dtree;
  if (deviceTree) {
    AG_TRY(buildFmmTreeOnDevice(ds, opt, dtree, tree));
    if (deviceTiles) AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // for the phase's time
    else AG_TRY(downloadFmmTree(ds, dtree, false, tree));
  } else {
    AG_TRY(fmm::buildFmmTree(keys, root, sorted, opt, threads, tree));
  }
  ds.stats.secondsMoments = since(t);
  if (tree.dipoles)
    return Status::error(ErrorCode::Internal, "CUDA backend: the FMM's device kernels take no dipole terms");
  t = Clock::now();
  const std::size_t nodes = deviceTree ? dtree.nodes : tree.nodeCount();
  FmmBuffers& b = ds.fmm;
  fmm::FmmLists lists;
  std::vector<std::uint32_t> topo;  // the topology's staging (alive until the upload's synchronisation)
  DeviceFmmLists dl;
  std::vector<double> cellStaging;  // the cells' staging (alive until the upload's synchronisation)
  if (deviceWalk) {  // the tree's arrays up now (the evaluation reads them too; made there with deviceTree), the
                     // lists there, the P2P pairs down
    if (!deviceTree) AG_TRY(putTree(ds, tree, topo));
    if (deviceTiles && !deviceSort) AG_TRY(putCells(ds, sorted, cellStaging));  // the tiles' regular leaves read them
    AG_TRY(deviceLists(ds, nodes, tree.order, deviceTree ? nullptr : &tree, opt.fmmTolerance, tree.accelLimit,
                       dl));
    if (deviceTiles) {  // the pairs stay on the device: the counts alone
      lists.directedM2L = dl.directedM2L;
      lists.directedP2P = dl.directedP2P;
    } else {
      AG_TRY(downloadFmmLists(dl, false, ds.stream, lists));
    }
    ds.stats.fmmListRounds = dl.rounds;
    ds.stats.fmmListMaxFrontier = dl.maxFrontier;
  } else {
    fmm::buildInteractionLists(tree, opt.fmmTolerance, threads, lists);
  }
  ds.stats.fmmListSeconds = since(t);
  // the near field's work: regular leaves by the CPU's tables in tiles, the others computed (fmm/p2p_tiles.h), on
  // the host or (fmmDeviceTiles) on the device from its P2P pairs (fmm_tiles_phase.h), the same arrays either way
  fmm::HostNearField hn;  // the device's tiles: their tables' slots alone
  fmm::NearLists& near = hn.near;
  fmm::P2pTables& p2pTables = hn.tables;
  fmm::P2pTiles& tiles = hn.tiles;
  fmm::IrregularLists& irr = hn.irr;
  DeviceFmmTiles dt;
  if (deviceTiles) {
    AG_TRY(deviceNearField(ds, tileInputs(ds, nodes, n, sorted, deviceSort), dl, threads, dt, hn));
  } else {
    hn = fmm::buildHostNearField(tree, lists, sorted, threads);
  }
  const fmmparts::NearFieldCounts counts = fmmparts::nearFieldCounts(deviceTiles, dt, hn);
  ds.stats.secondsBuild = since(t);

  // upload
  t = Clock::now();
  const bool accel = opt.accelerations;
  std::size_t tileOff[6] = {};  // in b.tiles (putHostTiles); unused with the device's tiles
  {
    if (!deviceSort && !deviceTiles) AG_TRY(putCells(ds, sorted, cellStaging));  // else up already or there
    if (!deviceWalk) {  // else up already, and the M2L lists made there
      AG_TRY(putTree(ds, tree, topo));
      AG_TRY(put(ds, b.m2lStart, lists.m2lStart, "the FMM's M2L lists"));
      AG_TRY(put(ds, b.m2lSource, lists.m2lSource, "the FMM's M2L lists"));
    }
    if (!deviceTree) AG_TRY(put(ds, b.M, tree.M, "the FMM's multipoles"));  // else made there
    std::vector<std::uint32_t> u;
    if (!deviceTiles) AG_TRY(fmmparts::putHostTiles(ds, near, tiles, irr, u, tileOff));  // else made there
    AG_TRY(b.L.reserve(nodes * std::size_t(tree.terms), "the FMM's local coefficients"));
    AG_CUDA_TRY(cudaMemsetAsync(b.L.get(), 0, nodes * std::size_t(tree.terms) * sizeof(double), ds.stream));
    // else ds.sums, made (and with poisonDevice poisoned) by the sort (tree_phase.h finishCells)
    if (!deviceSort) AG_TRY(fmmparts::reserveSums(ds, n, accel));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // the host vectors die here
  }
  AG_TRY(putTables(ds, p2pTables, tiles.slots));
  ds.stats.secondsUpload = since(t);

  // the evaluation's view: the buffers the host fed, then what the device's sort and tiles keep where they made it
  FmmDeviceView& v = e.v;
  v = fmmparts::bufferView(ds, tree, nodes, n, accel, tileOff);
  fmmparts::viewNearFieldCounts(counts, v);
  if (deviceSort) fmmparts::viewDeviceSorted(ds, accel, v);
  if (deviceTiles) fmmparts::viewDeviceTiles(dt, v);

  AG_TRY(fmmparts::evaluateOnDevice(ds, v, tree.levelBegin));
  fmmparts::reportNearFieldCounts(counts, ds.stats);
  e.nodes = nodes;
  e.leafCount = counts.leaves;
  e.directedM2L = lists.directedM2L;
  e.directedP2P = lists.directedP2P;
  return Status::success();
}

/// Whether the block entry runs on the device (solveFmmBlocks): an isolated box, every step the device's.
bool blocksOnDevice(const DeviceState& ds, const SolveOptions& opt) {
  return !opt.anyPeriodic() && fmmSteps(ds.copt).deviceFinish;
}

/// The block solve on the device (the state's lock held): the tree path's block machinery up to the gather
/// (blocks_phase.h: the densities up packed in the caller's dtype beside the keys and sort, or read from the caller's
/// device array; the masses made, checked and summed by blockMassesInto; the keys, sort and the FMM's topology from
/// the cells made from the blocks' geometry; the sorted masses and sizes), in the compact layout of a direct solve
/// (memory_plan.h: slot 3 the sorted masses, slot 2 the sorted sizes, slot 4 the sorted keys and then phi), the
/// sorted centres made as arrays into ds.fmm.cells for the FMM's kernels, then the cell path's own evaluation
/// (evaluateSorted with every step on the device) and fold, and the results finished into the caller's layout
/// (deliverBlockSums; the host entry's packed results in the centres' and masses' room, dead by then).
Status runFmmBlocks(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt,
                    SolveResult& out) {
  const std::size_t cells = v.cells();
  Clock::time_point t0;
  bool empty = false;
  AG_TRY(beginBlockSolve(ds, v, o, opt, out, t0, empty));
  if (empty) return Status::success();
  const std::size_t n = cells;
  AG_TRY(orderAfterCaller(ds, v, o, opt));
  const BlockSolveScope active(ds, v);
  // the block is laid out anew and the FMM leaves no tree to keep: a tree block solve's kept tree is gone
  ds.blk.key.valid = false;
  ds.blk.hostOrderValid = false;
  ds.blk.pinnedDensity = nullptr;
  AG_TRY(putBlockGeometry(ds, v, true));

  // the sort with the FMM's topology (sortOnDevice's steps on the blocks' cells), the densities going up meanwhile
  auto t = Clock::now();
  const CellsView none{nullptr, nullptr, nullptr, nullptr, nullptr, n};
  AG_TRY(uploadAndBound(ds, none, opt, true));
  if (!v.deviceData) AG_TRY(startDensityUpload(ds, ds.slot[3]));
  SortDownload down;
  down.treeLeafSize = fmm::kFmmLeafSize;
  AG_TRY(sortAndBuild(ds, none, opt, true, 0.0, false, &down));
  // the sorted centres as arrays (the FMM's kernels read arrays); ds.sortedCells then reads them, the sorted masses
  // and sizes staying in slots 3 and 2
  FmmBuffers& b = ds.fmm;
  AG_TRY(b.cells.reserve(3 * n, "the FMM's sorted centres"));
  double* const x = b.cells.get();
  AG_TRY(blockSortedCentres(ds, x, x + n, x + 2 * n));
  ds.sortedCells = DeviceCells{x, x + n, x + 2 * n, ds.sortedCells.mass};
  ds.stats.secondsKeys = since(t);

  const FmmSteps f = fmmSteps(ds.copt);
  const int threads = resolveThreadCount(opt.threads);
  SolveStats& st = out.stats;
  st.threads = threads;
  const SortedCells unused;
  const std::vector<std::uint64_t> noKeys;
  FmmEvaluated e;
  AG_TRY(evaluateSorted(ds, opt, f, n, threads, unused, noKeys, ds.root, e));
  if (!v.deviceData)  // the densities' upload beside the keys and sort (wall time)
    ds.stats.secondsUpload += elapsed(ds, kEventDensityUpStart, kEventDensityUpEnd);

  // the finish (G, scaling, self term) into the caller's layout; the host entry's packed results where the centres
  // (read by the evaluation alone) and the masses (read by the fold, queued before) were
  AG_TRY(foldSelfOnDevice(ds, e.v, n, opt));
  double* const packed[4] = {x, x + n, x + 2 * n, ds.slot[3]};
  AG_TRY(deliverBlockSums(ds, v, o, opt, packed));

  fmmparts::reportFmmStats(ds, t0, n, e.nodes, e.leafCount, e.tree.topo.depth, e.directedM2L, e.directedP2P, st);
  AG_TRY(fmmTileStepSeconds(ds.fmm.tileBuild, ds.stats.fmmTileStepSeconds));
  st.secondsUpload = ds.stats.secondsUpload;
  st.secondsTotal = ds.stats.secondsTotal = since(t0);
  st.treeReused = false;
  ds.stats.fmmBlocksOnDevice = true;
  return Status::success();
}

}  // namespace

Status solveFmmBlocks(DeviceState& ds, const BlocksView& v, const BlockOutputs& out, const SolveOptions& opt,
                      SolveResult& result) {
  AG_TRY(checkFmmOnDevice(opt));
  if (blocksOnDevice(ds, opt)) {
    std::lock_guard<std::mutex> lock(ds.mu);
    return guarded([&] { return runFmmBlocks(ds, v, out, opt, result); });
  }
  // periodic boxes, or a step on the host (CudaOptions): the blocks' cells made on the host, the cell solve
  if (v.deviceData)
    return Status::error(ErrorCode::InvalidOption,
                         "method 'fmm''s device block entry (device pointers) takes isolated boxes with the FMM's "
                         "sort, tree, lists and tiles on the device (the defaults); periodic boxes need the host block "
                         "entry or method 'tree'");
  return solveBlocksViaCells(v, out, opt, result, [&](const CellsView& c, SolveResult& r) {
    return solveOnDevice(ds, c, opt, r, false);
  });
}

Status solveFmmOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
  AG_TRY(checkFmmOnDevice(opt));
  if (opt.anyPeriodic()) return solvePeriodicFmmOnDevice(ds, cells, opt, out);
  const FmmSteps f = fmmSteps(ds.copt);
  // the solve skipped validateCells: the host's sort checks the cells here, the device's sort in its first passes
  if (ds.copt.validateOnDevice && !f.deviceSort) AG_TRY(validateCells(cells, opt));
  const auto t0 = Clock::now();
  const int threads = resolveThreadCount(opt.threads);
  SolveStats& st = out.stats;
  st.threads = threads;  // the host's part: (sort), tree, multipoles, lists

  // the root cube and the key sort: on the device (the sorted cells stay there for the evaluation; the order and keys
  // come down) or the CPU backend's on the host; the same bits either way (sortOnDevice)
  auto t = Clock::now();
  SortedCells sorted;
  std::vector<std::uint64_t> keys;
  RootCube root;
  if (f.deviceSort) {
    AG_TRY(sortOnDevice(ds, cells, opt, threads, root, sorted, keys, f.deviceTree, !f.deviceFinish));
  } else {
    root = chooseRootCube(cells, opt);
    AG_TRY(sortCellsByKey(cells, root, sorted, keys, 0, false, threads));  // root rescaled in place, as on the CPU
  }
  ds.stats.secondsKeys = since(t);
  const std::size_t n = cells.n;
  FmmEvaluated e;
  AG_TRY(evaluateSorted(ds, opt, f, n, threads, sorted, keys, root, e));

  // download, then the CPU backend's finish (G, scaling, self term, the caller's order); or that finish on the
  // device (kernel_finish.cu: the same operations, rounded alike) and the results down in the caller's order
  t = Clock::now();
  const bool accel = opt.accelerations;
  if (f.deviceFinish) {
    AG_TRY(foldSelfOnDevice(ds, e.v, n, opt));
    AG_TRY(finishAndDownload(ds, opt, out.targets(n, accel)));
  }
  std::vector<double> phi(f.deviceFinish ? 0 : n), g[3];
  if (!f.deviceFinish) {
    AG_TRY(fmmparts::downloadSums(ds, e.v, n, accel, phi, g));
    finishSolve(sorted, opt, phi, accel ? g : nullptr, out, copyThreads(ds));
  }
  ds.stats.secondsDownload = since(t);

  fmmparts::reportFmmStats(ds, t0, n, e.nodes, e.leafCount, e.tree.topo.depth, e.directedM2L, e.directedP2P, st);
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
