/// \file fmm_phase.cu
/// \brief Method 'fmm' on the CUDA backend (fmm_phase.h): the CPU backend's FMM path (cpu/cpu_backend.cpp,
/// fmm/fmm_solve.cpp) with its evaluation moved to the device.
#include <algorithm>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/thread_pool.h"
#include "core/validate.h"
#include "cuda/device_state.h"
#include "cuda/fmm_phase.h"
#include "cuda/kernels_fmm.h"
#include "cuda/memory_plan.h"
#include "cuda/solve.h"
#include "cuda/walk_phase.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/multi_index.h"
#include "tree/finish.h"

namespace amrgrav {
namespace cuda {
namespace {

/// v up into b (grown to fit) on the state's stream; nothing for an empty v.
template <class T>
Status put(DeviceState& ds, DeviceBuffer<T>& b, const std::vector<T>& v, const char* what) {
  if (v.empty()) return Status::success();
  AG_TRY(b.reserve(v.size(), what));
  AG_CUDA_TRY(cudaMemcpyAsync(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, ds.stream));
  return Status::success();
}

/// Each leaf's near sources in the CPU's order (evaluate.cpp evaluateP2P: the leaf itself, then its pairs' other
/// leaves in list order), as a CSR over the leaves' indices.
void nearLists(const fmm::FmmTree& t, const fmm::FmmLists& l, std::vector<std::uint32_t>& leaves,
               std::vector<std::uint32_t>& start, std::vector<std::uint32_t>& source) {
  const Octree& o = t.topo;
  std::vector<std::uint32_t> leafOf(o.nodeCount(), 0);
  leaves.clear();
  for (std::size_t i = 0; i < o.nodeCount(); ++i)
    if (o.isLeaf(i)) {
      leafOf[i] = std::uint32_t(leaves.size());
      leaves.push_back(std::uint32_t(i));
    }
  start.assign(leaves.size() + 1, 0);
  for (std::size_t k = 0; k < leaves.size(); ++k) start[k + 1] = 1;  // itself
  for (std::size_t q = 0; q < l.p2pA.size(); ++q) {
    ++start[leafOf[l.p2pA[q]] + 1];
    ++start[leafOf[l.p2pB[q]] + 1];
  }
  for (std::size_t k = 0; k < leaves.size(); ++k) start[k + 1] += start[k];
  source.assign(start.back(), 0);
  std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
  for (std::size_t k = 0; k < leaves.size(); ++k) source[fill[k]++] = leaves[k];
  for (std::size_t q = 0; q < l.p2pA.size(); ++q) {
    source[fill[leafOf[l.p2pA[q]]]++] = l.p2pB[q];
    source[fill[leafOf[l.p2pB[q]]]++] = l.p2pA[q];
  }
}

/// fmm/multi_index.h's tables as the kernels read them: monoPrev, monoAxis, l2lStart (terms + 1), l2lJ, l2lKJ
/// (the L2L entries grouped by target term, each group in the CPU's order), plusAxis (3 x terms).
std::vector<int> indexTables(const fmm::MultiIndex& mi, std::size_t offsets[6]) {
  const int nt = mi.terms;
  const std::size_t ne = mi.l2lK.size();
  std::vector<int> start(nt + 1, 0), j(ne), kj(ne);
  for (std::size_t q = 0; q < ne; ++q) ++start[mi.l2lK[q] + 1];
  for (int k = 0; k < nt; ++k) start[k + 1] += start[k];
  std::vector<int> fill(start.begin(), start.end() - 1);
  for (std::size_t q = 0; q < ne; ++q) {
    const int at = fill[mi.l2lK[q]]++;
    j[at] = mi.l2lJ[q];
    kj[at] = mi.l2lKJ[q];
  }
  std::vector<int> all;
  auto add = [&](const std::vector<int>& v, int slot) {
    offsets[slot] = all.size();
    all.insert(all.end(), v.begin(), v.end());
  };
  add(mi.monoPrev, 0);
  add(mi.monoAxis, 1);
  add(start, 2);
  add(j, 3);
  add(kj, 4);
  offsets[5] = all.size();
  for (int d = 0; d < 3; ++d) all.insert(all.end(), mi.plusAxis[d].begin(), mi.plusAxis[d].end());
  return all;
}

}  // namespace

void FmmBuffers::release() {
  for (auto* b : {&cells, &sums, &centre, &M, &L, &monoScale}) b->release();
  for (auto* b : {&topo, &m2lStart, &m2lSource, &leaves, &nearStart, &nearSource}) b->release();
  childCount.release();
  tables.release();
}

std::size_t FmmBuffers::bytes() const {
  return cells.bytes() + sums.bytes() + centre.bytes() + M.bytes() + L.bytes() + topo.bytes() + childCount.bytes() +
         m2lStart.bytes() + m2lSource.bytes() + leaves.bytes() + nearStart.bytes() + nearSource.bytes() +
         tables.bytes() + monoScale.bytes();
}

Status checkFmmOnDevice(const SolveOptions& opt) {
  if (opt.anyPeriodic())
    return Status::error(ErrorCode::InvalidOption,
                         "method 'fmm' runs on the CUDA backend in isolated boxes only so far (issue #20): periodic "
                         "boundaries need backend 'cpu' or method 'tree'");
  return Status::success();
}

Status solveFmmBlocks(DeviceState& ds, const BlocksView& v, const BlockOutputs& out, const SolveOptions& opt,
                      SolveResult& result) {
  AG_TRY(checkFmmOnDevice(opt));
  if (v.deviceData)
    return Status::error(ErrorCode::InvalidOption,
                         "method 'fmm' takes the host block entry and the cell entry on the CUDA backend so far (issue "
                         "#20): the device entry (device pointers) needs method 'tree'");
  return solveBlocksViaCells(v, out, opt, result, [&](const CellsView& c, SolveResult& r) {
    return solveOnDevice(ds, c, opt, r, false);
  });
}

Status solveFmmOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
  AG_TRY(checkFmmOnDevice(opt));
  if (ds.copt.validateOnDevice) AG_TRY(validateCells(cells, opt));  // the solve skipped it: the cells are sorted here
  const auto t0 = Clock::now();
  const int threads = resolveThreadCount(opt.threads);
  SolveStats& st = out.stats;
  st.threads = threads;  // the host's part: sort, tree, multipoles, lists

  // host: the CPU backend's root cube, sort, tree with multipoles, lists (the same code, so the same bits)
  auto t = Clock::now();
  SortedCells sorted;
  std::vector<std::uint64_t> keys;
  RootCube root = chooseRootCube(cells, opt);
  AG_TRY(sortCellsByKey(cells, root, sorted, keys, 0, false, threads));  // root rescaled in place, as on the CPU
  ds.stats.secondsKeys = since(t);
  t = Clock::now();
  fmm::FmmTree tree;
  AG_TRY(fmm::buildFmmTree(keys, root, sorted, opt, threads, tree));
  ds.stats.secondsMoments = since(t);
  if (tree.dipoles)
    return Status::error(ErrorCode::Internal, "CUDA backend: the FMM's device kernels take no dipole terms");
  t = Clock::now();
  fmm::FmmLists lists;
  fmm::buildInteractionLists(tree, opt.fmmTolerance, threads, lists);
  std::vector<std::uint32_t> leaves, nearStart, nearSource;
  nearLists(tree, lists, leaves, nearStart, nearSource);
  const fmm::MultiIndex mi(tree.order);
  std::size_t off[6];
  const std::vector<int> tables = indexTables(mi, off);
  ds.stats.secondsBuild = since(t);

  // upload
  t = Clock::now();
  const std::size_t n = sorted.order.size(), nodes = tree.nodeCount();
  const bool accel = opt.accelerations;
  FmmBuffers& b = ds.fmm;
  {
    std::vector<double> c(4 * n);
    std::copy(sorted.x.begin(), sorted.x.end(), c.begin());
    std::copy(sorted.y.begin(), sorted.y.end(), c.begin() + n);
    std::copy(sorted.z.begin(), sorted.z.end(), c.begin() + 2 * n);
    std::copy(sorted.mass.begin(), sorted.mass.end(), c.begin() + 3 * n);
    AG_TRY(put(ds, b.cells, c, "the FMM's cells"));
    std::vector<std::uint32_t> topo(3 * nodes);
    const Octree& o = tree.topo;
    std::copy(o.cellBegin.begin(), o.cellBegin.end(), topo.begin());
    std::copy(o.cellCount.begin(), o.cellCount.end(), topo.begin() + nodes);
    std::copy(o.childBegin.begin(), o.childBegin.end(), topo.begin() + 2 * nodes);
    AG_TRY(put(ds, b.topo, topo, "the FMM's topology"));
    AG_TRY(put(ds, b.childCount, o.childCount, "the FMM's topology"));
    AG_TRY(put(ds, b.centre, tree.centre, "the FMM's centres"));
    AG_TRY(put(ds, b.M, tree.M, "the FMM's multipoles"));
    AG_TRY(put(ds, b.m2lStart, lists.m2lStart, "the FMM's M2L lists"));
    AG_TRY(put(ds, b.m2lSource, lists.m2lSource, "the FMM's M2L lists"));
    AG_TRY(put(ds, b.leaves, leaves, "the FMM's P2P lists"));
    AG_TRY(put(ds, b.nearStart, nearStart, "the FMM's P2P lists"));
    AG_TRY(put(ds, b.nearSource, nearSource, "the FMM's P2P lists"));
    AG_TRY(put(ds, b.tables, tables, "the FMM's index tables"));
    AG_TRY(put(ds, b.monoScale, mi.monoScale, "the FMM's index tables"));
    AG_TRY(b.L.reserve(nodes * std::size_t(tree.terms), "the FMM's local coefficients"));
    AG_CUDA_TRY(cudaMemsetAsync(b.L.get(), 0, nodes * std::size_t(tree.terms) * sizeof(double), ds.stream));
    const std::size_t sums = (accel ? 4 : 1) * n;
    AG_TRY(b.sums.reserve(sums, "the FMM's sums"));
    // tests: NaN first, so a cell the kernels miss shows
    if (ds.copt.poisonDevice) AG_CUDA_TRY(cudaMemsetAsync(b.sums.get(), 0xff, sums * sizeof(double), ds.stream));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // the host vectors die here
  }
  ds.stats.secondsUpload = since(t);

  FmmDeviceView v;
  v.order = tree.order;
  v.terms = tree.terms;
  v.mStride = tree.mStride;
  v.nodes = unsigned(nodes);
  v.leafCount = unsigned(leaves.size());
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
  v.nearStart = b.nearStart.get();
  v.nearSource = b.nearSource.get();
  v.monoPrev = b.tables.get() + off[0];
  v.monoAxis = b.tables.get() + off[1];
  v.l2lStart = b.tables.get() + off[2];
  v.l2lJ = b.tables.get() + off[3];
  v.l2lKJ = b.tables.get() + off[4];
  v.plusAxis = b.tables.get() + off[5];
  v.monoScale = b.monoScale.get();
  v.phi = b.sums.get();
  if (accel) {
    v.gx = v.phi + n;
    v.gy = v.phi + 2 * n;
    v.gz = v.phi + 3 * n;
  }

  // the device's evaluation, in the CPU's order of phases: P2P (overwrites the sums), M2L, L2L level by level, L2P;
  // an event between kernels (slots 0-3 are free here: the keys, sort and build ran on the host) for their times
  AG_CUDA_TRY(cudaEventRecord(ds.events[4], ds.stream));
  AG_TRY(launchFmmP2P(v, ds.stream));
  AG_CUDA_TRY(cudaEventRecord(ds.events[0], ds.stream));
  AG_TRY(launchFmmM2L(v, ds.stream));
  AG_CUDA_TRY(cudaEventRecord(ds.events[1], ds.stream));
  for (std::size_t lev = 0; lev + 1 < tree.levelBegin.size(); ++lev)
    AG_TRY(launchFmmL2L(v, tree.levelBegin[lev], tree.levelBegin[lev + 1], ds.stream));
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

  // download, then the CPU backend's finish (G, scaling, self term, the caller's order)
  t = Clock::now();
  std::vector<double> phi(n), g[3];
  AG_CUDA_TRY(cudaMemcpy(phi.data(), v.phi, n * sizeof(double), cudaMemcpyDeviceToHost));
  if (accel)
    for (int d = 0; d < 3; ++d) {
      g[d].resize(n);
      AG_CUDA_TRY(cudaMemcpy(g[d].data(), v.phi + (d + 1) * n, n * sizeof(double), cudaMemcpyDeviceToHost));
    }
  finishSolve(sorted, opt, phi, accel ? g : nullptr, out, copyThreads(ds));
  ds.stats.secondsDownload = since(t);

  ds.stats.secondsTotal = since(t0);
  ds.stats.deviceBytes = deviceBytes(ds);
  ds.stats.deviceBytesPerCell = double(ds.stats.deviceBytes) / double(n);
  st.secondsKeys = ds.stats.secondsKeys;
  st.secondsBuild = ds.stats.secondsBuild;
  st.secondsMoments = ds.stats.secondsMoments;
  st.secondsWalk = ds.stats.secondsWalk;
  st.secondsUpload = ds.stats.secondsUpload;
  st.secondsDownload = ds.stats.secondsDownload;
  st.deviceBytesPerCell = ds.stats.deviceBytesPerCell;
  st.nodes = nodes;
  st.leaves = leaves.size();
  st.treeDepth = tree.topo.depth;
  st.approxInteractions = lists.directedM2L;
  st.directInteractions = lists.directedP2P;
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
