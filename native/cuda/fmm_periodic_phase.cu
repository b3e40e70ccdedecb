/// \file fmm_periodic_phase.cu
/// \brief Method 'fmm' on the CUDA backend in periodic boxes (fmm_periodic_phase.h): the CPU backend's FMM path
/// (cpu/cpu_backend.cpp, fmm/fmm_solve.cpp) for a box with periodic axes, with its evaluation on the device; with
/// CudaOptions::fmmDevicePeriodic the sort (and contrast), the tree and the lists with their image shifts on the device
/// too, with fmmDevicePeriodicTiles the near lists and tiles with their shifts, and with fmmDevicePeriodicFinish no
/// host copy of the sorted cells at all (the signed scale from the device's cells, fmm_scale_phase.h; the finish on
/// the device, the isolated path's), unless leaves lie above the far images' frontier.
#include <algorithm>
#include <vector>

#include "core/fixed_sum.h"
#include "core/thread_pool.h"
#include "core/validate.h"
#include "cuda/device_state.h"
#include "cuda/fmm_lists_phase.h"
#include "cuda/fmm_periodic_phase.h"
#include "cuda/fmm_phase.h"
#include "cuda/fmm_phase_parts.h"
#include "cuda/fmm_tiles_phase.h"
#include "cuda/fmm_tree_phase.h"
#include "cuda/kernels.h"
#include "cuda/kernels_fmm.h"
#include "cuda/memory_plan.h"
#include "cuda/walk_phase.h"
#include "fmm/far_images.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "fmm/multi_index.h"
#include "fmm/p2p_tables.h"
#include "fmm/p2p_tiles.h"
#include "tree/finish.h"
#include "tree/tree.h"

namespace amrgrav {
namespace cuda {

using fmmparts::put;
using fmmparts::putCells;
using fmmparts::putTables;
using fmmparts::putTree;
using fmmparts::viewDeviceSorted;
using fmmparts::viewDeviceTiles;

namespace {

/// The far images' frontier level (fmm/far_images.h: cubes of side at most a quarter of the shortest period).
int farFrontier(const double period[3], double rootSide) {
  int frontier = 0;
  while ((1 << frontier) < fmm::farCubesPerAxis(period, rootSide)) ++frontier;
  return frontier;
}

/// The nodes down to the frontier's level (levels are contiguous): the far pass reads their multipoles and writes
/// the frontier nodes' local coefficients.
std::size_t nodesToFrontier(const fmm::FmmTree& tree, int frontier) {
  const std::size_t levels = tree.levelBegin.size() - 1;
  return tree.levelBegin[std::min<std::size_t>(std::size_t(frontier) + 1, levels)];
}

/// Whether a leaf lies above the frontier's level (the nodes before toFrontier): the far pass then reads its cells.
bool shallowLeaves(const fmm::FmmTree& tree, int frontier) {
  const std::size_t end = std::min<std::size_t>(nodesToFrontier(tree, frontier), tree.nodeCount());
  for (std::size_t i = 0; i < end; ++i)
    if (tree.topo.isLeaf(i) && tree.topo.level[i] < frontier) return true;
  return false;
}

/// The host's sorted cells after a sort that gathered none: the device sort's order down (ds.order: sorted position
/// -> the caller's index, kept there until the finish) and gathered by sortCellsByKey's gather, the density contrast
/// of a fully periodic box applied as periodicContrast applies it: what the gathering sort and periodicContrast give.
Status gatherAfterSort(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, int threads,
                       SortedCells& sorted) {
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  std::vector<std::uint32_t> order;
  AG_TRY(fmmparts::down(static_cast<const std::uint32_t*>(ds.order), cells.n, order));
  gatherSortedCells(cells, std::move(order), ds.scale, threads, sorted);
  if (opt.fullyPeriodic() && opt.densityContrast)
    applyDensityContrast(sorted, opt, fixedOrderSum(cells.mass, cells.n, threads), threads);
  return Status::success();
}

}  // namespace

Status periodicContrast(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, int threads,
                        bool deviceSort, SortedCells& sorted, SolveStats& st) {
  if (!(opt.fullyPeriodic() && opt.densityContrast)) return Status::success();
  const double total = fixedOrderSum(cells.mass, cells.n, threads);
  // the host's sorted cells when the sort gathered them (else the device's alone: the same mean density)
  st.meanDensity = sorted.mass.empty() ? contrastDensity(opt, sorted.scale, total).rho
                                       : applyDensityContrast(sorted, opt, total, threads);
  st.densityContrast = true;
  if (!deviceSort) return Status::success();
  // the sorted masses in slot 3, as tree_phase.cu finishCells contrasts them
  if (ds.sortedCells.mass != ds.slot[3])
    return Status::error(ErrorCode::Internal, "CUDA backend: the device sort's masses are not where expected");
  return launchDensityContrast(ds.slot[3], ds.sortedSize, unsigned(cells.n),
                               contrastDensity(opt, sorted.scale, total).rhoScaled, ds.stream);
}

Status periodicTreeOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SortedCells& sorted,
                            int threads, DeviceFmmTree& dtree, fmm::FmmTree& tree, bool topOnly) {
  FmmBuffers& b = ds.fmm;
  auto t = Clock::now();
  AG_TRY(buildFmmTreeOnDevice(ds, opt, dtree, tree));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // (the download waits here anyway) the build's time apart
  ds.stats.fmmTreeStepSeconds[0] = since(t);
  t = Clock::now();
  double period[3];  // the solve's (solvePeriodicFmmOnDevice): L down to the far frontier's level alone on the host
  for (int d = 0; d < 3; ++d) period[d] = opt.periodic[d] ? (opt.boxHi[d] - opt.boxLo[d]) * sorted.scale : 0.0;
  const int frontier = farFrontier(period, tree.topo.root.side);
  const std::size_t toFrontier = nodesToFrontier(tree, frontier);
  const bool top = topOnly && sorted.mass.empty();  // no host cells: the host's steps read no node past the frontier
  AG_TRY(downloadFmmTree(ds, dtree, false, tree, toFrontier, top ? toFrontier : ~std::size_t(0)));
  // the far pass reads the cells of leaves above its frontier: the host's sorted cells then, after all (and the
  // whole tree, which the host's scale and tiles read)
  if (sorted.mass.empty() && shallowLeaves(tree, frontier)) {
    if (top) AG_TRY(downloadFmmTree(ds, dtree, false, tree, toFrontier));
    AG_TRY(gatherAfterSort(ds, cells, opt, threads, sorted));
  }
  ds.stats.fmmTreeStepSeconds[1] = since(t);
  double scale = 0;
  ds.stats.fmmScaleCandidates = ds.stats.fmmScaleCandidateCells = 0;
  const auto ts = Clock::now();
  if (sorted.mass.empty()) {
    SignedScaleCounts sc;
    AG_TRY(signedScaleOnDevice(ds, tree, threads, scale, &sc));
    ds.stats.fmmScaleCandidates = sc.candidates;
    ds.stats.fmmScaleCandidateCells = sc.candidateCells;
  } else {
    scale = fmm::signedSourceScale(sorted, threads, tree);
  }
  ds.stats.fmmScaleSeconds = since(ts);
  t = Clock::now();
  tree.lowBound.assign(dtree.nodes, scale);  // every node's (the download may have stopped at the frontier)
  AG_CUDA_TRY(cudaMemcpyAsync(b.lists.mac.get() + 3 * dtree.nodes, tree.lowBound.data(), dtree.nodes * sizeof(double),
                              cudaMemcpyHostToDevice, ds.stream));
  AG_TRY(deviceMultipoleNorms(b.M.get(), dtree.nodes, tree.mStride, tree.order, b.lists, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // tree.lowBound's copy
  ds.stats.fmmTreeStepSeconds[2] = since(t);
  return Status::success();
}

Status solvePeriodicFmmOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
  // the sort (its root cube, keys, order and gather: the same bits as the host's) and the lists with their shifts
  // on the device (CudaOptions::fmmDevicePeriodic); the far images on the host
  const bool deviceSort = ds.copt.fmmDevicePeriodic && ds.copt.fmmDeviceSort;
  const bool deviceWalk = ds.copt.fmmDevicePeriodic && ds.copt.fmmDeviceLists;
  // the tree and its upward pass there too (fmmDeviceTree, with both): cube centres, the signed masses' multipoles;
  // the signed scale (lowBound) from the host's cells and the tree's topology, the norms there
  const bool deviceTree = deviceSort && deviceWalk && ds.copt.fmmDeviceTree;
  // the near lists and tiles with their shifts there too (fmmDevicePeriodicTiles, with the device's lists): built
  // from its pairs with their shifts (fmm_tiles_phase.h), so the pairs stay there and no tile goes up
  const bool deviceTiles = deviceWalk && ds.copt.fmmDevicePeriodicTiles;
  // with all of them, no host copy of the sorted cells (fmmDevicePeriodicFinish): the sort gathers nothing, the
  // contrast on the device alone, the signed scale from the device's cells (fmm_scale_phase.h), the finish there;
  // unless the tree has leaves shallower than the far frontier (periodicTreeOnDevice gathers them after all)
  const bool noHostCells = deviceTree && deviceTiles && ds.copt.fmmDevicePeriodicFinish;
  // the solve skipped validateCells when the device was to check the cells: the host's sort checks them here, the
  // device's sort in its first passes
  if (ds.copt.validateOnDevice && !deviceSort) AG_TRY(validateCells(cells, opt));
  const auto t0 = Clock::now();
  const int threads = resolveThreadCount(opt.threads);
  SolveStats& st = out.stats;
  st.threads = threads;  // the host's part: the gather, the contrast, the signed scale, far images (and the paths off)

  // the CPU backend's steps (cpu_backend.cpp solveImpl): root cube, key sort, the density contrast of a fully
  // periodic box (the total of the caller's masses in its order, as there: core/fixed_sum.h's chunks in the
  // caller's order, so on the host from the caller's array), on the host's gathered cells and, after the device's
  // sort, on the device's sorted masses too (the same rule, physics/moments_k.h contrastMass: the same bits)
  auto t = Clock::now();
  RootCube root;
  SortedCells sorted;
  std::vector<std::uint64_t> keys;
  if (deviceSort) {
    AG_TRY(fmmparts::sortOnDevice(ds, cells, opt, threads, root, sorted, keys, deviceTree, !noHostCells));
  } else {
    root = chooseRootCube(cells, opt);
    AG_TRY(sortCellsByKey(cells, root, sorted, keys, 0, false, threads));
  }
  AG_TRY(periodicContrast(ds, cells, opt, threads, deviceSort, sorted, st));
  ds.stats.secondsKeys = since(t);
  // fmm_solve.cpp's steps: the tree (dipole terms: geometric centres), the lists with the near images' shifts
  t = Clock::now();
  fmm::FmmTree tree;
  DeviceFmmTree dtree;
  FmmBuffers& b = ds.fmm;
  if (deviceTree) {  // the device's tree from its sort's topology and its contrasted masses (the same bits as
                     // buildFmmTree: fmm/upward_k.h with dipoles); topology, centres and MAC quantities down (the host's
                     // tiles and far pass read them), the scale up into every lowBound, the norms made there
    AG_TRY(periodicTreeOnDevice(ds, cells, opt, sorted, threads, dtree, tree, noHostCells));
  } else {
    AG_TRY(fmm::buildFmmTree(keys, root, sorted, opt, threads, tree));
  }
  ds.stats.secondsMoments = since(t);
  t = Clock::now();
  double period[3];
  for (int d = 0; d < 3; ++d) period[d] = opt.periodic[d] ? (opt.boxHi[d] - opt.boxLo[d]) * sorted.scale : 0.0;
  fmm::FmmLists lists;
  DeviceFmmLists dl;
  std::vector<std::uint32_t> topo;  // the topology's staging (alive until the upload's synchronisation)
  std::vector<double> cellStaging;  // the cells' staging (likewise)
  if (deviceWalk) {  // the tree's arrays up now (the evaluation reads them too) with its MAC quantities and
                     // multipole norms, the walk with the shifts (the M2L CSR and its shifts stay there), the P2P
                     // pairs with their shifts down for the host's near tiles (with the device's tiles: they stay)
    if (!deviceTree) AG_TRY(putTree(ds, tree, topo));  // else made there, with the MAC quantities and norms
    if (deviceTiles && !deviceSort) AG_TRY(putCells(ds, sorted, cellStaging));  // the tiles' regular leaves read them
    AG_TRY(fmmparts::deviceLists(ds, tree.nodeCount(), tree.order, deviceTree ? nullptr : &tree, opt.fmmTolerance,
                                 tree.accelLimit, dl, period));
    if (deviceTiles) {  // the counts alone
      lists.directedM2L = dl.directedM2L;
      lists.directedP2P = dl.directedP2P;
      for (int d = 0; d < 3; ++d) lists.period[d] = period[d];
    } else {
      AG_TRY(downloadFmmLists(dl, false, ds.stream, lists, period));
    }
    ds.stats.fmmListRounds = dl.rounds;
    ds.stats.fmmListMaxFrontier = dl.maxFrontier;
  } else {
    fmm::buildInteractionLists(tree, opt.fmmTolerance, threads, lists, period);
    ds.stats.fmmListRounds = 0;  // no device walk
    ds.stats.fmmListMaxFrontier = 0;
  }
  ds.stats.fmmListSeconds = since(t);
  // the near field's work with the shifts (fmm/p2p_tiles.h): a shifted pair at a whole number of leaves by its
  // table, the others computed with the shift; on the host, or on the device from its pairs (the same arrays)
  const std::size_t n = cells.n, nodes = tree.nodeCount();
  // the finish on the device: no host copy of the sorted cells came (and none was needed after all)
  const bool deviceFinish = noHostCells && sorted.mass.empty();
  ds.stats.fmmPeriodicHostCells = !deviceFinish;
  if (!deviceTree) {  // the scale inside buildFmmTree then
    ds.stats.fmmScaleCandidates = ds.stats.fmmScaleCandidateCells = 0;
    ds.stats.fmmScaleSeconds = 0;
    for (double& s : ds.stats.fmmTreeStepSeconds) s = 0;
  }
  for (double& s : ds.stats.fmmFinishStepSeconds) s = 0;
  fmm::HostNearField hn;  // the device's tiles: their tables' slots alone
  DeviceFmmTiles dt;
  if (deviceTiles) {
    FmmTileInputs in = fmmparts::tileInputs(ds, nodes, n, sorted, deviceSort);
    in.period = period;
    AG_TRY(fmmparts::deviceNearField(ds, in, dl, threads, dt, hn));
  } else {
    hn = fmm::buildHostNearField(tree, lists, sorted, threads);
  }
  const fmm::NearLists& near = hn.near;
  const fmm::P2pTables& p2pTables = hn.tables;
  const fmm::P2pTiles& tiles = hn.tiles;
  const fmm::IrregularLists& irr = hn.irr;
  const fmmparts::NearFieldCounts counts = fmmparts::nearFieldCounts(deviceTiles, dt, hn);
  // the far images (fmm/far_images.h) on the host: their local coefficients into the frontier nodes' L (zero until
  // now: the device's M2L and L2L add to it), and for the cells of leaves shallower than the frontier (none on a
  // uniform grid) their L2P into `far` (added to the device's sums once down)
  const bool accel = opt.accelerations;
  const int frontier = farFrontier(period, tree.topo.root.side);
  const std::size_t toFrontier = nodesToFrontier(tree, frontier);
  const bool shallow = shallowLeaves(tree, frontier);  // a leaf above the frontier's level (the nodes before it)
  if (shallow && sorted.mass.empty())
    return Status::error(ErrorCode::Internal, "CUDA backend: the far pass's shallow leaves have no host cells");
  std::vector<double> far[4];
  if (shallow)
    for (int c = 0; c < (accel ? 4 : 1); ++c) far[c].assign(n, 0.0);
  if (deviceTree)  // the far pass reads the frontier nodes' multipoles: the levels down to the frontier's come down
    AG_TRY(fmmparts::down(static_cast<const double*>(b.M.get()), toFrontier * std::size_t(tree.mStride), tree.M));
  AG_TRY(fmm::addFarImages(sorted, period, threads, tree,  // `far` unread without shallow leaves
                           fmm::FmmOutput{far[0].data(), accel ? far[1].data() : nullptr,
                                          accel ? far[2].data() : nullptr, accel ? far[3].data() : nullptr}));
  ds.stats.secondsBuild = since(t);

  // upload: the isolated path's arrays (FmmBuffers), L from the far pass, the shifts in one buffer
  t = Clock::now();
  // b.tiles: target, stepStart, stepSource; irregular leaf, start, source (unused with the device's tiles)
  std::size_t tileOff[6] = {}, shiftOff[3] = {};
  {
    std::vector<std::uint32_t> u;
    std::vector<std::uint8_t> shifts;
    if (!deviceSort && !deviceTiles) AG_TRY(putCells(ds, sorted, cellStaging));  // else there, or up already
    if (!deviceWalk) {  // else up already, and the M2L lists with their shifts made there
      AG_TRY(putTree(ds, tree, topo));
      AG_TRY(put(ds, b.m2lStart, lists.m2lStart, "the FMM's M2L lists"));
      AG_TRY(put(ds, b.m2lSource, lists.m2lSource, "the FMM's M2L lists"));
    }
    if (!deviceTree) AG_TRY(put(ds, b.M, tree.M, "the FMM's multipoles"));  // else made there
    {  // L: zeros but the frontier level's nodes, the far pass's (the levels are contiguous; the host's L may stop
       // there, as the device tree's download leaves it)
      const std::size_t nt = std::size_t(tree.terms);
      AG_TRY(b.L.reserve(std::max<std::size_t>(nodes * nt, 1), "the FMM's local coefficients"));
      AG_CUDA_TRY(cudaMemsetAsync(b.L.get(), 0, nodes * nt * sizeof(double), ds.stream));
      const std::size_t levels = tree.levelBegin.size() - 1;  // no node at a frontier below the deepest level
      const std::size_t f0 = std::size_t(frontier) < levels ? tree.levelBegin[frontier] : toFrontier;
      if (toFrontier > f0) {
        if (tree.L.size() < toFrontier * nt)
          return Status::error(ErrorCode::Internal, "CUDA backend: the far pass's local coefficients are missing");
        AG_CUDA_TRY(cudaMemcpyAsync(b.L.get() + f0 * nt, tree.L.data() + f0 * nt,
                                    (toFrontier - f0) * nt * sizeof(double), cudaMemcpyHostToDevice, ds.stream));
      }
    }
    if (!deviceTiles) {  // else made there, with their shifts (and the M2L lists' shifts made by the walk)
      AG_TRY(fmmparts::putHostTiles(ds, near, tiles, irr, u, tileOff));
      AG_TRY(fmmparts::putHostShifts(ds, lists.m2lShift, tiles, irr, shifts, shiftOff));
    }
    if (!deviceSort) AG_TRY(fmmparts::reserveSums(ds, n, accel));  // else ds.sums, made by the sort
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // the host vectors die here
  }
  AG_TRY(putTables(ds, p2pTables, tiles.slots));
  ds.stats.secondsUpload = since(t);

  FmmDeviceView v = fmmparts::bufferView(ds, tree, nodes, n, accel, tileOff);
  fmmparts::viewNearFieldCounts(counts, v);
  if (deviceSort) viewDeviceSorted(ds, accel, v);  // the sorted cells where the device's sort left them
  if (deviceTiles) {  // the near field where the device made it, with its shifts (the M2L's: the walk's)
    viewDeviceTiles(dt, v);
    v.m2lShift = dl.m2lShift;
  } else {
    if (deviceWalk) v.m2lShift = dl.m2lShift;
    fmmparts::viewHostShifts(ds, tiles, irr, shiftOff, deviceWalk, v);
  }
  for (int d = 0; d < 3; ++d) v.period[d] = period[d];
  v.dipoles = tree.dipoles;

  // the device's evaluation (the far images' L already in)
  AG_TRY(fmmparts::evaluateOnDevice(ds, v, tree.levelBegin));
  fmmparts::reportNearFieldCounts(counts, ds.stats);

  // download, the far images of the shallower leaves' cells added, then the CPU backend's finish (G, scaling, the
  // self term, the mean potential, the caller's order); or that finish on the device (the isolated path's: the self
  // term folded by finishSolve's rule, kernel_finish.cu's G and scaling, the results down in the caller's order) and
  // the mean potential of a fully periodic box from the results and the caller's sizes (cuda_backend.cu's, the tree's:
  // finishSolve's sum of size^3 phi over size^3, in the caller's order and units, so equal to rounding)
  t = Clock::now();
  if (deviceFinish) {
    const ResultTargets dest = out.targets(n, accel);
    AG_TRY(fmmparts::foldSelfOnDevice(ds, v, n, opt));
    double* res[4];
    AG_TRY(finishOnDevice(ds, opt, res));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // the kernels' time apart from the copy's (fmmFinishStepSeconds)
    ds.stats.fmmFinishStepSeconds[0] = since(t);
    AG_TRY(downloadFinished(ds, opt, res, dest));
    ds.stats.fmmFinishStepSeconds[1] = ds.stats.secondsDownload;
    const auto tm = Clock::now();
    st.meanPotential = opt.fullyPeriodic() ? meanPotentialOf(ds, dest.potential, cells.size, n) : 0.0;
    ds.stats.fmmFinishStepSeconds[2] = since(tm);
    ds.stats.secondsDownload = since(t);
    fmmparts::reportFmmStats(ds, t0, n, nodes, counts.leaves, tree.topo.depth, lists.directedM2L,
                             lists.directedP2P, st);
    return Status::success();
  }
  std::vector<double> phi, g[3];
  AG_TRY(fmmparts::downloadSums(ds, v, n, accel, phi, g));
  if (shallow)
    parallelFor(n, std::size_t(1) << 15, threads, [&](std::size_t lo, std::size_t hi, int) {
      for (std::size_t i = lo; i < hi; ++i) {
        phi[i] += far[0][i];
        if (accel)
          for (int c = 0; c < 3; ++c) g[c][i] += far[c + 1][i];
      }
    });
  finishSolve(sorted, opt, phi, accel ? g : nullptr, out, copyThreads(ds));
  ds.stats.secondsDownload = since(t);

  fmmparts::reportFmmStats(ds, t0, n, nodes, counts.leaves, tree.topo.depth, lists.directedM2L,
                           lists.directedP2P, st);
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
