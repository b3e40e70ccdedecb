/// \file tree_phase.cu
/// \brief The tree phase (tree_phase.h): checks, upload, bounds and root cube, keys, sort, mass check, topology,
/// node keys, gather, density contrast, the sums' arrays, and the moments. Each step follows cpu_backend.cpp.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/validate.h"
#include "cuda/blocks_phase.h"
#include "cuda/device_state.h"
#include "cuda/memory_plan.h"
#include "cuda/tree_phase.h"
#include "ewald/walk_setup.h"
#include "tree/keys.h"

namespace amrgrav {
namespace cuda {

double powerOfTwoScale(double v) {
  if (!(v > 0) || !std::isfinite(v)) return 1.0;
  const double e = std::round(std::log2(v));
  if (!(std::fabs(e) < 1000)) return 1.0;
  return std::exp2(-e);
}

Status checkOptions(const SolveOptions& opt, std::size_t n, bool direct) {
  Status st = validateOptions(opt);
  if (!st.ok()) return st;
  if (direct && !(st = validateDirectOptions(opt)).ok()) return st;
  if (!direct && opt.groupSize > 64)  // (0, automatic, is at most 64)
    return Status::error(ErrorCode::InvalidOption,
                         "groupSize must be at most 64 on the CUDA backend (one warp per group, at most two cells "
                         "per lane), got " + std::to_string(opt.groupSize));
  if (n > kMaxCudaCells)
    return Status::error(ErrorCode::InvalidInput, "the CUDA backend handles at most " + std::to_string(kMaxCudaCells) +
                                                      " cells per solve (2^32 - 2^26 - 1), got " + std::to_string(n));
  return Status::success();
}

Status flaggedCell(DeviceState& ds, unsigned bad, const CellsView& cells, const SolveOptions& opt) {
  if (ds.blk.view) return blockFlagged(ds, bad, opt);  // a block solve: no host cells, the blocks' words
  const Status st = validateCells(cells, opt);
  if (!st.ok()) return st;
  if (ds.copt.validateOnDevice)
    return Status::error(ErrorCode::Internal, "CUDA backend: the device flagged cell " + std::to_string(bad) +
                                                  " as invalid but validateCells accepts it");
  return Status::success();
}

CellChecks cellChecks(DeviceState& ds, const SolveOptions& opt) {
  CellChecks checks;
  checks.hasBox = opt.hasBox;
  checks.signedMasses = opt.signedSources();
  for (int d = 0; d < 3; ++d) {
    checks.boxLo[d] = opt.boxLo[d];
    checks.boxHi[d] = opt.boxHi[d];
  }
  checks.firstBad = ds.walkCounters.get();
  return checks;
}

Status uploadAndBound(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, bool direct) {
  const unsigned n = unsigned(cells.n);
  ds.n = n;
  cudaStream_t s = ds.stream;
  AG_CUDA_TRY(cudaEventRecord(ds.events[0], s));

  // ---- the solve's device block: BlockLayout says which phase owns which piece
  std::size_t tailBytes = std::size_t(n) * sizeof(double);  // the direct path's tail: phi
  if (!direct) AG_TRY(tailForTree(ds, n, opt, &tailBytes));
  ds.layout = layoutFor(n, tailBytes, ds.blk.view != nullptr);  // a block solve stores no positions
  const BlockLayout& L = ds.layout;
  AG_TRY(ds.block.reserve((L.total + sizeof(double) - 1) / sizeof(double), "the solve's device block"));
  char* const base = reinterpret_cast<char*>(ds.block.get());
  double* const* slot = ds.slot;
  for (int k = 0; k < 6; ++k)
    ds.slot[k] = L.slot[k] == kNoSlot ? nullptr : reinterpret_cast<double*>(base + L.slot[k]);

  // ---- upload x, y, z, size into slots 0-3 (the mass follows the sort: with all five arrays here the sort's
  //      halves would not fit in the block); a block solve's cells are made from the blocks' geometry where read
  DeviceCells unsorted{slot[0], slot[1], slot[2], nullptr};
  if (ds.blk.view) {
    unsorted = blockCells(ds, nullptr, 1.0, nullptr);
  } else {
    const double* host[4] = {cells.x, cells.y, cells.z, cells.size};
    Transfer t[4];
    const int count = ds.pointSources ? 3 : 4;  // point sources: sizes 0, made here
    for (int k = 0; k < count; ++k) t[k] = Transfer{const_cast<double*>(host[k]), slot[k], std::size_t(n) * 8};
    AG_TRY(copyIn(ds, t, count));
    if (ds.pointSources) AG_CUDA_TRY(cudaMemsetAsync(slot[3], 0, std::size_t(n) * 8, s));
  }
  AG_CUDA_TRY(cudaEventRecord(ds.events[1], s));

  // ---- checks and root cube (chooseRootCube)
  // + a rank's group half-widths
  AG_TRY(ds.bounds.reserve(kBoundsStride * kBoundsBlocks + 11, "the bounds reduction"));
  AG_TRY(ds.walkCounters.reserve(kWalkCounterCount, "counters"));
  const CellChecks checks = cellChecks(ds, opt);
  AG_CUDA_TRY(cudaMemsetAsync(checks.firstBad, 0xff, sizeof(unsigned), s));
  // point sources: the bounds of the centres, no size check (chooseRootCube with sizes 0)
  AG_TRY(launchBounds(unsorted, nullptr, ds.pointSources || ds.blk.view ? nullptr : slot[3], n, checks,
                      ds.bounds.get(), ds.bounds.get() + kBoundsStride * kBoundsBlocks, s));
  double* hb = static_cast<double*>(ds.small.get());
  unsigned* hbad = reinterpret_cast<unsigned*>(hb + 8);
  AG_CUDA_TRY(cudaMemcpyAsync(hb, ds.bounds.get() + kBoundsStride * kBoundsBlocks, 8 * sizeof(double),
                              cudaMemcpyDeviceToHost, s));
  AG_CUDA_TRY(cudaMemcpyAsync(hbad, checks.firstBad, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
  AG_CUDA_TRY(cudaStreamSynchronize(s));
  if (*hbad != 0xffffffffu) AG_TRY(flaggedCell(ds, *hbad, cells, opt));
  for (int d = 0; d < 3; ++d) {
    ds.extentLo[d] = hb[d];
    ds.extentHi[d] = hb[3 + d];
  }
  ds.minSize = hb[7];
  // chooseRootCube's rule on the device's reduction (min and max are exact, so any order gives its values)
  const double* blo = opt.hasBox ? opt.boxLo : hb;
  const double* bhi = opt.hasBox ? opt.boxHi : hb + 3;
  const RootCube root = rootCubeFor(blo, bhi, ds.pointSources ? 0.0 : hb[7], opt);
  ds.root = root;  // caller's units until sortAndBuild scales it
  return Status::success();
}

Status queueMassCheck(DeviceState& ds, const CellChecks& checks, const double* mass, unsigned n, double** total,
                      unsigned** firstBad) {
  cudaStream_t s = ds.stream;
  AG_CUDA_TRY(cudaMemsetAsync(checks.firstBad, 0xff, sizeof(unsigned), s));
  AG_TRY(launchBounds(DeviceCells{nullptr, nullptr, nullptr, nullptr}, mass, nullptr, n, checks, ds.bounds.get(),
                      ds.bounds.get() + kBoundsStride * kBoundsBlocks, s));
  return queueMassReadback(ds, checks, total, firstBad);
}

Status queueMassReadback(DeviceState& ds, const CellChecks& checks, double** total, unsigned** firstBad) {
  cudaStream_t s = ds.stream;
  double* hb = static_cast<double*>(ds.small.get());
  *total = hb + 16;
  *firstBad = reinterpret_cast<unsigned*>(hb + 17);
  AG_CUDA_TRY(cudaMemcpyAsync(*total, ds.bounds.get() + kBoundsStride * kBoundsBlocks + 6, sizeof(double),
                              cudaMemcpyDeviceToHost, s));
  AG_CUDA_TRY(cudaMemcpyAsync(*firstBad, checks.firstBad, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
  return Status::success();
}

Status sortAndBuild(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, bool direct, double givenScale,
                    bool massAside, const SortDownload* down) {
  const unsigned n = ds.n;
  cudaStream_t s = ds.stream;
  const BlockLayout& L = ds.layout;
  char* const base = reinterpret_cast<char*>(ds.block.get());
  double* const* slot = ds.slot;
  double* hb = static_cast<double*>(ds.small.get());
  const CellChecks checks = cellChecks(ds, opt);
  RootCube root = ds.root;
  AG_CUDA_TRY(cudaEventRecord(ds.events[8], s));
  // ---- length scale, keys, sort (as sortCellsByKey)
  const double scale = givenScale > 0 ? givenScale : lengthScaleFor(root.side);
  const double inv = double(kKeyCells) / root.side;
  // keys in slots 4 and 5, indices in the two index halves (CUB's double buffer)
  std::uint64_t* keyHalf[2] = {reinterpret_cast<std::uint64_t*>(slot[4]), reinterpret_cast<std::uint64_t*>(slot[5])};
  std::uint32_t* idxHalf[2] = {reinterpret_cast<std::uint32_t*>(base + L.idx[0]),
                               reinterpret_cast<std::uint32_t*>(base + L.idx[1])};
  const DeviceCells unsorted = ds.blk.view ? blockCells(ds, nullptr, 1.0, nullptr)
                                           : DeviceCells{slot[0], slot[1], slot[2], nullptr};
  AG_TRY(launchKeys(unsorted, n, root.lo[0], root.lo[1], root.lo[2], inv, keyHalf[0], idxHalf[0], s));
  double* massAt = slot[5];
  if (massAside) {
    AG_TRY(ds.massAside.reserve(n, "the cells' masses"));
    massAt = ds.massAside.get();
  }
  std::size_t tempBytes = 0;
  int sel = 0;
  AG_TRY(sortPairs(nullptr, tempBytes, keyHalf, idxHalf, n, &sel, s));
  AG_TRY(reserveCubTemp(ds, tempBytes));
  tempBytes = ds.cubTemp.bytes();
  AG_TRY(sortPairs(ds.cubTemp.get(), tempBytes, keyHalf, idxHalf, n, &sel, s));
  // the sorted keys belong in slot 4, so that slot 5 (the tail's start) is the one the gather leaves free
  if (sel != 0)
    AG_CUDA_TRY(cudaMemcpyAsync(keyHalf[0], keyHalf[1], std::size_t(n) * sizeof(std::uint64_t),
                                cudaMemcpyDeviceToDevice, s));
  ds.sortedKeys = keyHalf[0];
  ds.order = idxHalf[sel];
  ds.idxSpare = Carve(idxHalf[1 - sel], std::size_t(n) * sizeof(std::uint32_t));
  // coincident cells (checkCoincidentCells), while slots 0-2 still hold the caller's centres; the walk's overflow
  // counter is free until the walk resets it
  unsigned* coincident = ds.walkCounters.get() + kOverflowNeed;
  unsigned* hcoincident = reinterpret_cast<unsigned*>(hb + 18);
  AG_CUDA_TRY(cudaMemsetAsync(coincident, 0xff, sizeof(unsigned), s));
  if (!ds.pointSources)  // coincident particles are allowed (their softened pair is finite)
    AG_TRY(launchCoincident(unsorted, ds.sortedKeys, ds.order, n, coincident, s));
  AG_CUDA_TRY(cudaMemcpyAsync(hcoincident, coincident, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
  AG_CUDA_TRY(cudaEventRecord(ds.events[2], s));

  // ---- the mass into slot 5 (or aside, already while the sort runs), checked and summed by the bounds kernel (the
  //      same order of additions as before); read back after the build's synchronisations
  double* hmass = nullptr;
  unsigned* hmassBad = nullptr;
  if (ds.blk.view) {  // a block solve: the masses are made after the build (blockMassesInto below), from the
                      // densities on their way up since the bounds (host entry) or the caller's device array
    AG_CUDA_TRY(cudaEventRecord(ds.events[6], s));
  } else {
    Transfer t{const_cast<double*>(cells.mass), massAt, std::size_t(n) * 8};
    if (massAside) {
      AG_TRY(copyIn(ds, &t, 1, ds.copyStream));
      AG_CUDA_TRY(cudaEventRecord(ds.events[6], ds.copyStream));
      AG_CUDA_TRY(cudaStreamWaitEvent(s, ds.events[6], 0));
    } else {
      AG_TRY(copyIn(ds, &t, 1));
      AG_CUDA_TRY(cudaEventRecord(ds.events[6], s));
    }
    AG_TRY(queueMassCheck(ds, checks, massAt, n, &hmass, &hmassBad));
  }

  // ---- octree topology and the nodes' first keys (in the spare index half), then the keys are dead
  ds.tail = Carve(base + L.tail, ds.block.bytes() - L.tail);
  ds.extra = Carve(base + L.extra, ds.block.bytes() - L.extra);
  ds.nodes = 0;
  ds.depth = 0;
  if (!direct) {
    AG_TRY(buildTree(ds, n, opt.leafSize, &ds.nodes, &ds.depth));
    AG_TRY(computeNodeKeys(ds, ds.nodes));
    AG_TRY(countGroups(ds, unsigned(ds.pointSources ? opt.pointGroupSize() : opt.cellGroupSize())));
  } else if (down && down->treeLeafSize > 0) {  // method 'fmm''s device tree: the topology alone
    AG_TRY(buildTree(ds, n, down->treeLeafSize, &ds.nodes, &ds.depth));
    AG_TRY(computeNodeKeys(ds, ds.nodes));
  }
  // a block solve's masses from its densities, checked and summed in one pass, into slot 5 (free since the sort)
  if (ds.blk.view) AG_TRY(blockMassesInto(ds, massAt, ds.slot[3], opt, checks, &hmass, &hmassBad));
  AG_CUDA_TRY(cudaEventRecord(ds.events[7], s));
  AG_CUDA_TRY(cudaStreamSynchronize(s));
  if (*hmassBad != 0xffffffffu) AG_TRY(flaggedCell(ds, *hmassBad, cells, opt));
  const double massTotal = *hmass;
  if (*hcoincident != 0xffffffffu) {  // the caller's index of that sorted cell, then the host names the pair
    std::uint32_t b = 0;
    AG_CUDA_TRY(cudaMemcpy(&b, ds.order + *hcoincident, sizeof b, cudaMemcpyDeviceToHost));
    if (ds.blk.view) return blockCoincident(ds, b);
    return coincidentCellsError(cells, b);
  }
  // root: still in the caller's units; point sources: checked on the host with their softening
  if (!ds.pointSources) AG_TRY(checkMassRange(massTotal, ds.minSize, root.side, opt));
  if (!direct) AG_TRY(writeGroups(ds));  // queued before the moments take the extra bytes (the starts' masks)
  if (down && (down->keys || down->order)) {  // the keys and order down for the host, while the keys are in slot 4
    Transfer t[2];
    int count = 0;
    if (down->keys) t[count++] = Transfer{down->keys, ds.sortedKeys, std::size_t(n) * sizeof(std::uint64_t)};
    if (down->order) t[count++] = Transfer{down->order, ds.order, std::size_t(n) * sizeof(std::uint32_t)};
    AG_TRY(copyOut(ds, t, count, s));
  }

  // ---- gather in place, rotating through slot 4 (the keys' slot): each array lands in the slot the previous one
  //      left; the mass's unsorted copy in slot 5 is read last, so slot 5 ends free. A block solve gathers the
  //      masses into slot 3 (which held the densities) and makes the sorted sizes from the blocks' geometry into
  //      slot 2 (which held the masses: memory_plan.h's compact layout); its positions are made where read.
  ds.scale = scale;
  if (ds.blk.view) {
    AG_TRY(blockSortedCellsInto(ds, massAt));
  } else {
    const double* from[5] = {slot[0], slot[1], slot[2], slot[3], massAt};
    double* to[5] = {slot[4], slot[0], slot[1], slot[2], slot[3]};
    const double by[5] = {scale, scale, scale, scale, 1.0};  // masses unscaled (times 1: exact)
    for (int k = 0; k < 5; ++k) AG_TRY(launchGather(from[k], ds.order, n, by[k], to[k], s));
    ds.sortedCells = DeviceCells{slot[4], slot[0], slot[1], slot[3]};
    ds.sortedSize = slot[2];
  }
  ds.hostSize = cells.size;
  for (int d = 0; d < 3; ++d) root.lo[d] *= scale;
  root.side *= scale;
  ds.root = root;
  return finishCells(ds, opt, direct, massTotal);
}

Status finishCells(DeviceState& ds, const SolveOptions& opt, bool direct, double massTotal) {
  const unsigned n = ds.n;
  cudaStream_t s = ds.stream;
  double* const* slot = ds.slot;
  const double scale = ds.scale;
  ds.massScale = powerOfTwoScale(massTotal);
  ds.massTotal = massTotal;
  // fully periodic boxes: the density contrast, as the CPU (tree/tree.h applyDensityContrast; the total from
  // core/fixed_sum.h, so both subtract the same mean)
  ds.contrastApplied = !direct && opt.fullyPeriodic() && opt.densityContrast;
  ds.meanDensity = 0;
  if (ds.contrastApplied) {
    const ContrastDensity cd = contrastDensity(opt, scale, ds.contrastTotal);
    AG_TRY(launchDensityContrast(slot[3], ds.sortedSize, n, cd.rhoScaled, s));  // slot 3: the sorted masses
    ds.meanDensity = cd.rho;
  }
  AG_CUDA_TRY(cudaEventRecord(ds.events[3], s));

  // ---- sums in sorted order: the walk's phi in the sizes' slot (after the moments, the walk turns the sizes into
  //      self terms and each group's smallest size, and writes each cell's phi over its self term as it adds it);
  //      the direct path's phi in the tail; the acceleration sums in buffers of their own
  ds.sums[0] = direct ? ds.tail.take<double>(n) : ds.sortedSize;
  ds.sums[1] = ds.sums[2] = ds.sums[3] = nullptr;
  if (!ds.sums[0]) return Status::error(ErrorCode::Internal, "CUDA backend: no room for the potential sums");
  const int nsum = opt.accelerations ? 4 : 1;
  for (int k = 1; k < nsum; ++k) {
    AG_TRY(ds.accSum[k - 1].reserve(n, "the walk's acceleration sums"));
    ds.sums[k] = ds.accSum[k - 1].get();
  }
  if (ds.copt.poisonDevice)
    for (int k = 0; k < nsum; ++k)
      if (ds.sums[k] != ds.sortedSize) AG_TRY(launchPoison(ds.sums[k], n, s));
  return Status::success();
}

Status prepareCells(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, bool direct, double givenScale) {
  AG_TRY(uploadAndBound(ds, cells, opt, direct));
  return sortAndBuild(ds, cells, opt, direct, givenScale);
}

Status reserveTopo(DeviceState& ds, std::size_t need, std::size_t used) {
  if (used == 0) {
    ds.topoPtr = reinterpret_cast<uint4*>(ds.idxSpare.base);
    ds.topoCap = ds.idxSpare.bytes / sizeof(uint4);
  }
  if (need <= ds.topoCap) return Status::success();
  if (ds.topoPtr == ds.topo.get()) {
    AG_TRY(ds.topo.reservePreserve(need, used, ds.stream, "tree nodes"));
  } else {
    AG_TRY(ds.topo.reserve(std::max<std::size_t>(need, 1024), "tree nodes"));
    if (used > 0)
      AG_CUDA_TRY(
          cudaMemcpyAsync(ds.topo.get(), ds.topoPtr, used * sizeof(uint4), cudaMemcpyDeviceToDevice, ds.stream));
  }
  ds.topoPtr = ds.topo.get();
  ds.topoCap = ds.topo.capacity();
  return Status::success();
}

Status buildTree(DeviceState& ds, unsigned n, int leafSize, unsigned* nodesOut, int* depthOut) {
  cudaStream_t s = ds.stream;
  AG_TRY(reserveTopo(ds, 1, 0));
  AG_TRY(ds.tally.reserve(4, "counters"));
  AG_CUDA_TRY(cudaMemsetAsync(ds.tally.get(), 0, 4 * sizeof(unsigned long long), s));
  AG_TRY(launchSetRoot(ds.topoPtr, n, s));
  ds.levelStart.assign(1, 0u);
  unsigned levelBegin = 0, levelEnd = 1;
  int level = 0;
  unsigned* total = static_cast<unsigned*>(ds.small.get());
  for (;;) {
    const unsigned width = levelEnd - levelBegin;
    // the level's counts and offsets in the block's extra bytes (free during the build), else in buffers
    Carve scratch = ds.extra;
    unsigned* count = scratch.take<unsigned>(width + 1);
    unsigned* offset = scratch.take<unsigned>(width + 1);
    if (!count || !offset) {
      AG_TRY(ds.levelCount.reserve(width + 1, "level scratch"));
      AG_TRY(ds.levelOffset.reserve(width + 1, "level scratch"));
      count = ds.levelCount.get();
      offset = ds.levelOffset.get();
    }
    AG_TRY(launchCountChildren(ds.topoPtr, ds.sortedKeys, levelBegin, width, level, leafSize,
                               count, ds.tally.get() + 2, s));
    std::size_t tempBytes = 0;
    AG_TRY(scanExclusive(nullptr, tempBytes, count, offset, width + 1, s));
    AG_TRY(reserveCubTemp(ds, tempBytes));
    tempBytes = ds.cubTemp.bytes();
    AG_TRY(scanExclusive(ds.cubTemp.get(), tempBytes, count, offset, width + 1, s));
    AG_CUDA_TRY(cudaMemcpyAsync(total, offset + width, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    const unsigned children = *total;
    if (children == 0) break;
    if (std::uint64_t(levelEnd) + children > 0xffffffffull)
      return Status::error(ErrorCode::InvalidInput, "CUDA backend: the octree would have more than 2^32 - 1 nodes");
    AG_TRY(reserveTopo(ds, std::size_t(levelEnd) + children, levelEnd));
    AG_TRY(launchEmitChildren(ds.topoPtr, ds.sortedKeys, levelBegin, width, level, leafSize,
                              offset, levelEnd, s));
    ds.levelStart.push_back(levelEnd);
    levelBegin = levelEnd;
    levelEnd += children;
    ++level;
  }
  ds.levelStart.push_back(levelEnd);
  *nodesOut = levelEnd;
  *depthOut = level;
  return Status::success();
}

Status computeNodeKeys(DeviceState& ds, unsigned nodes) {
  Carve room = ds.idxSpare;
  if (reinterpret_cast<char*>(ds.topoPtr) == ds.idxSpare.base) (void)room.take<uint4>(nodes);
  AG_TRY(carveOrReserve(room, ds.nodeKeys, nodes, "node keys", ds.nodeKeysPtr));
  ds.nodeKeysLive = true;
  return launchNodeKeys(ds.topoPtr, ds.sortedKeys, nodes, ds.nodeKeysPtr, ds.stream);
}

Status countGroups(DeviceState& ds, unsigned groupSize) {
  const unsigned n = ds.n, tiles = groupTiles(n);
  AG_TRY(ds.groupTiles.reserve(2 * (std::size_t(tiles) + 1), "the walk groups' tile counts"));
  unsigned* count = ds.groupTiles.get();
  unsigned* offset = count + tiles + 1;
  Carve room = ds.extra;  // the build's level scratch is done with it
  AG_TRY(carveOrReserve(room, ds.groupMask, groupStartMasks(n), "the walk groups' starts", ds.groupMaskPtr));
  AG_TRY(launchCountGroups(ds.sortedKeys, n, groupSize, count, ds.groupMaskPtr, ds.stream));
  std::size_t tempBytes = 0;
  AG_TRY(scanExclusive(nullptr, tempBytes, count, offset, tiles + 1, ds.stream));
  AG_TRY(reserveCubTemp(ds, tempBytes));
  tempBytes = ds.cubTemp.bytes();
  AG_TRY(scanExclusive(ds.cubTemp.get(), tempBytes, count, offset, tiles + 1, ds.stream));
  unsigned* total = reinterpret_cast<unsigned*>(static_cast<double*>(ds.small.get()) + kGroupCountSlot);
  AG_CUDA_TRY(cudaMemcpyAsync(total, offset + tiles, sizeof(unsigned), cudaMemcpyDeviceToHost, ds.stream));
  return Status::success();
}

Status writeGroups(DeviceState& ds) {
  const unsigned n = ds.n, tiles = groupTiles(n);
  ds.numGroups = *reinterpret_cast<const unsigned*>(static_cast<const double*>(ds.small.get()) + kGroupCountSlot);
  AG_TRY(ds.groupBegin.reserve(std::size_t(ds.numGroups) + 1, "the walk groups"));
  return launchWriteGroups(ds.groupMaskPtr, n, ds.groupTiles.get() + tiles + 1, ds.groupBegin.get(), ds.stream);
}

Status computeMoments(DeviceState& ds, unsigned n, unsigned nodes, int depth, const RootCube& root,
                      const SolveOptions& opt, double massScale) {
  (void)n;
  // in the block's tail when they fit, else own buffers: the MAC records and multipoles first (the walk keeps
  // them), then the moments of the nodes above the deepest level (the walk's queues reuse their room); the
  // deepest level's go to their parents in shared memory (kernel_moments.cu)
  AG_TRY(carveOrReserve(ds.tail, ds.nodeMac, nodes, "node MAC records", ds.nodeMacPtr));
  AG_TRY(carveOrReserve(ds.tail, ds.nodeMQ, 2 * std::size_t(nodes), "node multipoles", ds.nodeMQPtr));
  ds.nodeDipPtr = nullptr;
  if (opt.signedSources()) AG_TRY(carveOrReserve(ds.tail, ds.nodeDip, nodes, "node dipoles", ds.nodeDipPtr));
  ds.walkRoom = ds.tail;
  const unsigned stored = ds.levelStart[depth];
  NodeMoments* moments = nullptr;
  AG_TRY(carveOrReserve(ds.tail, ds.moments, stored, "node moments", moments));
  MomentsParams p;
  p.topo = ds.topoPtr;
  p.nodeKeys = ds.nodeKeysPtr;
  p.cells = ds.sortedCells;
  p.size = ds.sortedSize;
  p.moments = moments;
  p.stored = stored;
  p.nodeMac = ds.nodeMacPtr;
  p.nodeMQ = ds.nodeMQPtr;
  for (int d = 0; d < 3; ++d) p.rootLo[d] = root.lo[d];
  p.rootSide = root.side;
  p.theta = opt.theta;
  p.mac = int(opt.mac);
  p.massScale = massScale;
  p.signedSources = opt.signedSources();
  p.nodeDip = ds.nodeDipPtr;
  return launchMoments(p, ds.levelStart.data(), depth, ds.stream);
}

}  // namespace cuda
}  // namespace amrgrav
