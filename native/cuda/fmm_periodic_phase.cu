/// \file fmm_periodic_phase.cu
/// \brief Method 'fmm' on the CUDA backend in periodic boxes (fmm_periodic_phase.h): the CPU backend's FMM path
/// (cpu/cpu_backend.cpp, fmm/fmm_solve.cpp) for a box with periodic axes, with its evaluation on the device.
#include <algorithm>
#include <vector>

#include "core/fixed_sum.h"
#include "core/thread_pool.h"
#include "core/validate.h"
#include "cuda/device_state.h"
#include "cuda/fmm_periodic_phase.h"
#include "cuda/fmm_phase.h"
#include "cuda/fmm_phase_parts.h"
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

using fmmparts::indexTables;
using fmmparts::put;
using fmmparts::putCells;
using fmmparts::putTables;
using fmmparts::putTree;

Status solvePeriodicFmmOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
  // the solve skipped validateCells when the device was to check the cells: the host's sort checks them here
  if (ds.copt.validateOnDevice) AG_TRY(validateCells(cells, opt));
  const auto t0 = Clock::now();
  const int threads = resolveThreadCount(opt.threads);
  SolveStats& st = out.stats;
  st.threads = threads;  // the host's part: sort, tree, multipoles, lists, tiles, far images

  // the CPU backend's steps (cpu_backend.cpp solveImpl): root cube, key sort, the density contrast of a fully
  // periodic box (the total of the caller's masses in its order, as there)
  auto t = Clock::now();
  RootCube root = chooseRootCube(cells, opt);
  SortedCells sorted;
  std::vector<std::uint64_t> keys;
  AG_TRY(sortCellsByKey(cells, root, sorted, keys, 0, false, threads));
  if (opt.fullyPeriodic() && opt.densityContrast) {
    st.meanDensity = applyDensityContrast(sorted, opt, fixedOrderSum(cells.mass, cells.n, threads));
    st.densityContrast = true;
  }
  ds.stats.secondsKeys = since(t);
  // fmm_solve.cpp's steps: the tree (dipole terms: geometric centres), the lists with the near images' shifts
  t = Clock::now();
  fmm::FmmTree tree;
  AG_TRY(fmm::buildFmmTree(keys, root, sorted, opt, threads, tree));
  ds.stats.secondsMoments = since(t);
  t = Clock::now();
  double period[3];
  for (int d = 0; d < 3; ++d) period[d] = opt.periodic[d] ? (opt.boxHi[d] - opt.boxLo[d]) * sorted.scale : 0.0;
  fmm::FmmLists lists;
  fmm::buildInteractionLists(tree, opt.fmmTolerance, threads, lists, period);
  ds.stats.fmmListSeconds = since(t);
  // the near field's work with the shifts (fmm/p2p_tiles.h): a shifted pair at a whole number of leaves by its
  // table, the others computed with the shift
  const std::size_t n = sorted.order.size(), nodes = tree.nodeCount();
  const fmm::NearLists near = fmm::buildNearLists(tree, lists);
  const fmm::RegularLeaves reg = fmm::findRegularLeaves(tree, sorted, threads);
  fmm::P2pTables p2pTables;
  p2pTables.prepare(reg, lists, threads);
  const fmm::P2pTiles tiles = fmm::buildP2pTiles(near, reg, p2pTables, threads);
  const fmm::IrregularLists irr = fmm::buildIrregularLists(near, tiles);
  // the far images (fmm/far_images.h) on the host: their local coefficients into the frontier nodes' L (zero until
  // now: the device's M2L and L2L add to it), and for the cells of shallower leaves their L2P into `far` (added to
  // the device's sums once down)
  const bool accel = opt.accelerations;
  std::vector<double> far[4];
  for (int c = 0; c < (accel ? 4 : 1); ++c) far[c].assign(n, 0.0);
  AG_TRY(fmm::addFarImages(sorted, period, threads, tree,
                           fmm::FmmOutput{far[0].data(), accel ? far[1].data() : nullptr,
                                          accel ? far[2].data() : nullptr, accel ? far[3].data() : nullptr}));
  const fmm::MultiIndex mi(tree.order);
  std::size_t off[3];
  const std::vector<int> tables = indexTables(mi, off);
  ds.stats.secondsBuild = since(t);

  // upload: the isolated path's arrays (FmmBuffers), L from the far pass, the shifts in one buffer
  t = Clock::now();
  FmmBuffers& b = ds.fmm;
  std::size_t tileOff[6], shiftOff[3];  // b.tiles: target, stepStart, stepSource; irregular leaf, start, source
  {
    std::vector<double> cellStaging;
    std::vector<std::uint32_t> topo, u;
    std::vector<std::uint8_t> shifts;
    AG_TRY(putCells(ds, sorted, cellStaging));
    AG_TRY(putTree(ds, tree, topo));
    AG_TRY(put(ds, b.m2lStart, lists.m2lStart, "the FMM's M2L lists"));
    AG_TRY(put(ds, b.m2lSource, lists.m2lSource, "the FMM's M2L lists"));
    AG_TRY(put(ds, b.M, tree.M, "the FMM's multipoles"));
    AG_TRY(put(ds, b.L, tree.L, "the FMM's local coefficients"));
    AG_TRY(fmmparts::putHostTiles(ds, near, tiles, irr, u, tileOff));
    const std::vector<std::uint8_t>* sp[3] = {&lists.m2lShift, &tiles.stepShift, &irr.shift};
    for (int q = 0; q < 3; ++q) {
      shiftOff[q] = shifts.size();
      shifts.insert(shifts.end(), sp[q]->begin(), sp[q]->end());
    }
    shifts.push_back(fmm::kNoShift);  // never empty (a box of one leaf has no lists)
    AG_TRY(put(ds, b.periodic.shifts, shifts, "the FMM's image shifts"));
    AG_TRY(put(ds, b.tables, tables, "the FMM's index tables"));
    AG_TRY(fmmparts::reserveSums(ds, n, accel));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // the host vectors die here
  }
  AG_TRY(putTables(ds, p2pTables, tiles.slots));
  ds.stats.secondsUpload = since(t);

  FmmDeviceView v = fmmparts::bufferView(ds, tree, nodes, n, accel, tileOff, off);
  v.leafCount = unsigned(near.leaves.size());
  v.tileCount = unsigned(tiles.tiles());
  v.irregularCount = unsigned(tiles.irregular.size());
  const std::uint8_t* shifts = b.periodic.shifts.get();
  v.m2lShift = shifts + shiftOff[0];
  v.tileStepShift = tiles.stepShift.empty() ? nullptr : shifts + shiftOff[1];
  v.nearShift = irr.shift.empty() ? nullptr : shifts + shiftOff[2];
  for (int d = 0; d < 3; ++d) v.period[d] = lists.period[d];
  v.dipoles = tree.dipoles;

  // the device's evaluation (the far images' L already in)
  AG_TRY(fmmparts::evaluateOnDevice(ds, v, tree.levelBegin));
  ds.stats.fmmTiles = tiles.tiles();
  ds.stats.fmmTileTargets = near.leaves.size() - tiles.irregular.size();
  ds.stats.fmmTables = tiles.slots.size();
  ds.stats.fmmTableEntries = tiles.tableEntries;
  ds.stats.fmmComputedEntries = tiles.computedEntries;
  ds.stats.fmmIrregularLeaves = tiles.irregular.size();

  // download, the far images of the shallower leaves' cells added, then the CPU backend's finish (G, scaling, the
  // periodic self term, the mean potential, the caller's order)
  t = Clock::now();
  std::vector<double> phi, g[3];
  AG_TRY(fmmparts::downloadSums(ds, v, n, accel, phi, g));
  parallelFor(n, std::size_t(1) << 15, threads, [&](std::size_t lo, std::size_t hi, int) {
    for (std::size_t i = lo; i < hi; ++i) {
      phi[i] += far[0][i];
      if (accel)
        for (int c = 0; c < 3; ++c) g[c][i] += far[c + 1][i];
    }
  });
  finishSolve(sorted, opt, phi, accel ? g : nullptr, out, copyThreads(ds));
  ds.stats.secondsDownload = since(t);

  fmmparts::reportFmmStats(ds, t0, n, nodes, near.leaves.size(), tree.topo.depth, lists.directedM2L,
                           lists.directedP2P, st);
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
