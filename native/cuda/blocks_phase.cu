/// \file blocks_phase.cu
/// \brief The block entry on the CUDA backend (blocks_phase.h): the block solve's orchestration, the kept tree's
/// reuse, and the tree phase's hooks.
#include <algorithm>
#include <cmath>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "core/blocks.h"
#include "core/fixed_sum.h"
#include "core/validate.h"
#include "cuda/blocks_phase.h"
#include "cuda/device.h"
#include "cuda/device_state.h"
#include "cuda/fmm_phase.h"
#include "cuda/ewald_phase.h"
#include "cuda/kernels_blocks.h"
#include "cuda/memory_plan.h"
#include "cuda/tree_phase.h"
#include "cuda/walk_phase.h"
#include "ewald/walk_setup.h"
#include "physics/finish_k.h"
#include "tree/keys.h"

namespace amrgrav {
namespace cuda {
namespace {

BlockGeometry geometryOf(const DeviceState& ds) {
  const BlocksView& v = *ds.blk.view;
  BlockGeometry g;
  g.geo = ds.blk.geo.get();
  g.nxb = unsigned(v.nxb);
  g.nyb = unsigned(v.nyb);
  g.nzb = unsigned(v.nzb);
  g.n = unsigned(v.cells());
  return withShifts(g);
}

/// The caller's field (device memory) as the kernels read it.
BlockField callerField(const DeviceState& ds, const void* data) {
  const BlocksView& v = *ds.blk.view;
  BlockField f;
  f.data = const_cast<void*>(data);
  f.dtype = v.dtype == DType::Float32 ? 1 : 0;
  f.varStride = v.varStride;
  f.blockStride = v.strideOfBlock();
  f.nx = v.nx();
  f.ny = v.ny();
  f.gx = v.guard[0];
  f.gy = v.guard[1];
  f.gz = v.guard[2];
  f.slots = v.blockIndex ? ds.blk.slots.get() : nullptr;
  return f;
}

/// Densities packed in block order (the upload's form).
BlockField packedField(const BlocksView& v, void* data) {
  BlockField f;
  f.data = data;
  f.dtype = v.dtype == DType::Float32 ? 1 : 0;
  f.varStride = 1;
  f.blockStride = v.cellsPerBlock();
  f.nx = v.nxb;
  f.ny = v.nyb;
  return f;
}

/// The device-visible address of the host entry's density when the mass kernel may read it in place: page-locked
/// host memory (the caller's cudaMallocHost or cudaHostRegister) mapped for this device, in one variable without
/// guard cells (strided layouts would carry their other variables and guard cells over PCIe too); else null.
const void* pinnedDensityOf(const DeviceState& ds, const BlocksView& v) {
  if (v.deviceData || v.varStride != 1 || v.guard[0] || v.guard[1] || v.guard[2] || !v.density) return nullptr;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, v.density) != cudaSuccess) {
    (void)cudaGetLastError();  // not a pointer CUDA knows: pageable
    return nullptr;
  }
  if (a.type != cudaMemoryTypeHost || !a.devicePointer) return nullptr;
  // registered with another device's context only: not mapped here
  return a.device == ds.device || a.device < 0 ? a.devicePointer : nullptr;
}

/// The density, the results (and their device) must be device memory of the solver's device.
Status checkDevicePointers(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt) {
  const void* ptr[5] = {v.density, o.potential, o.ax, o.ay, o.az};
  const char* name[5] = {"the density", "the potential", "ax", "ay", "az"};
  const int count = opt.accelerations ? 5 : 2;
  for (int k = 0; k < count; ++k) {
    cudaPointerAttributes a{};
    const cudaError_t e = cudaPointerGetAttributes(&a, ptr[k]);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return Status::error(ErrorCode::InvalidInput, std::string(name[k]) + " is not a pointer CUDA knows (" +
                                                        cudaGetErrorString(e) + "): the device entry takes device memory");
    }
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
      return Status::error(ErrorCode::InvalidInput, std::string(name[k]) + " is host memory: the device entry takes "
                                                    "device memory (cudaMalloc or managed); use the host block entry");
    if (a.type == cudaMemoryTypeDevice && a.device != ds.device)
      return Status::error(ErrorCode::InvalidInput, std::string(name[k]) + " is on device " + std::to_string(a.device) +
                                                        ", the solver runs on device " + std::to_string(ds.device));
  }
  return Status::success();
}

/// Chunk sums (core/fixed_sum.h) of the device array v (n values), added in order on the host.
Status fixedOrderSumOnDevice(DeviceState& ds, const double* v, unsigned n, double* total) {
  const unsigned chunks = unsigned((std::size_t(n) + kFixedSumChunk - 1) / kFixedSumChunk);
  AG_TRY(ds.blk.chunkSums.reserve(2 * std::size_t(chunks) + 2, "chunk sums"));
  AG_TRY(launchChunkSums(v, n, unsigned(kFixedSumChunk), ds.blk.chunkSums.get(), ds.stream));
  std::vector<double> part(chunks);
  AG_CUDA_TRY(cudaMemcpyAsync(part.data(), ds.blk.chunkSums.get(), chunks * sizeof(double), cudaMemcpyDeviceToHost,
                              ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  double t = 0;
  for (double s : part) t += s;
  *total = t;
  return Status::success();
}

/// The mean potential of a fully periodic solve over the packed results (walk_phase.h meanPotentialOf's sums).
Status meanPotentialOnDevice(DeviceState& ds, const double* pot, double* mean) {
  const BlockGeometry g = geometryOf(ds);
  const unsigned chunks = unsigned((std::size_t(g.n) + kFixedSumChunk - 1) / kFixedSumChunk);
  AG_TRY(ds.blk.chunkSums.reserve(2 * std::size_t(chunks) + 2, "chunk sums"));
  double* vp = ds.blk.chunkSums.get();
  AG_TRY(launchChunkVolumePhi(g, pot, unsigned(kFixedSumChunk), vp, vp + chunks, ds.stream));
  std::vector<double> part(2 * std::size_t(chunks));
  AG_CUDA_TRY(cudaMemcpyAsync(part.data(), vp, part.size() * sizeof(double), cudaMemcpyDeviceToHost, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  double p = 0, w = 0;
  for (unsigned c = 0; c < chunks; ++c) {
    p += part[c];
    w += part[chunks + c];
  }
  *mean = w > 0 ? p / w : 0.0;
  return Status::success();
}

/// finishKernel's values (kernel_finish.cu) of this solve.
BlockFinishValues blockFinishValues(const DeviceState& ds, const SolveOptions& opt) {
  BlockFinishValues f;
  f.phi = ds.sums[0];
  f.gx = ds.sums[1];
  f.gy = ds.sums[2];
  f.gz = ds.sums[3];
  f.accelerations = opt.accelerations;
  f.invMassScale = 1.0 / ds.massScale;
  f.scale = ds.scale;
  f.G = opt.G;
  return f;
}

/// The walk's launches for the host entry's results in chunks (CudaOptions::resultChunks): 1 where they cannot
/// come in chunks (the device entry; periodic walks, whose sums are final only after their last pass; pageable
/// copies, which cannot wait per chunk).
int resultChunks(const DeviceState& ds, const BlocksView& v, const SolveOptions& opt) {
  if (v.deviceData || opt.anyPeriodic() || !ds.copt.pinnedStaging) return 1;
  if (ds.copt.resultChunks > 0) return std::min(ds.copt.resultChunks, kMaxResultChunks);
  return ds.numGroups < 4096 ? 1 : 3;
}

/// Bytes of the results' staged pieces: small enough that the last launch's results spread over every copy thread.
constexpr std::size_t kResultPieceBytes = std::size_t(1) << 20;
/// Where each launch's first sorted cell is read back (bytes into the small pinned buffer, past the others' slots).
constexpr std::size_t kChunkCellsOffset = 2048;

/// The host entry's walk in `chunks` launches over consecutive groups (launchChunkedPass), and its results into the
/// caller's arrays while the later launches walk: each range of sorted cells comes down (the walk's sums, through
/// the pinned chunks on the copy stream) once the launch that walked it has ended, and the copy threads finish it
/// (physics/finish_k.h: finishKernel's bits) and scatter it into the caller's layout through the sorted order
/// (downloaded once per tree, kept with it). A queue overflow in any launch walks everything again with a larger
/// queue, and the results come down again.
Status walkAndDownload(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt,
                       int chunks, SolveStats& st) {
  const unsigned n = ds.n;
  cudaStream_t s = ds.stream;
  double* g[3] = {ds.sums[1], ds.sums[2], ds.sums[3]};
  WalkConfig cfg;
  int blocks = 1;
  WalkParams p;
  AG_TRY(prepareWalk(ds, n, opt, ds.massScale, ds.sums[0], g, &cfg, &blocks, p));
  if (!ds.copyStream) AG_CUDA_TRY(cudaStreamCreateWithFlags(&ds.copyStream, cudaStreamNonBlocking));
  for (int k = 0; k < chunks; ++k)
    if (!ds.blk.chunkDone[k]) AG_CUDA_TRY(cudaEventCreateWithFlags(&ds.blk.chunkDone[k], cudaEventDisableTiming));
  const std::vector<unsigned> groupFirst = walkChunkGroups(ds.numGroups, chunks);
  chunks = int(groupFirst.size()) - 1;
  // each launch's first sorted cell, read back before the first launch (so final once chunkDone[0] is)
  unsigned* cellFirst = reinterpret_cast<unsigned*>(static_cast<char*>(ds.small.get()) + kChunkCellsOffset);
  for (int k = 0; k <= chunks; ++k)
    AG_CUDA_TRY(cudaMemcpyAsync(cellFirst + k, ds.groupBegin.get() + groupFirst[k], sizeof(unsigned),
                                cudaMemcpyDeviceToHost, s));
  ds.blk.elements.assign(v);
  const int nout = opt.accelerations ? 4 : 1;
  void* dst[4] = {o.potential, o.ax, o.ay, o.az};
  const bool f32 = v.dtype == DType::Float32;
  const double G = opt.G, scale = ds.scale, s2 = ds.scale * ds.scale, invMass = 1.0 / ds.massScale;
  // range [off, off + len) of a sum's bytes is final once the launch holding its last cell has ended
  const StagingRing::Gate gate = [&](int, std::size_t off, std::size_t len) -> cudaEvent_t {
    const std::size_t last = (off + len) / sizeof(double) - 1;
    int c = 0;
    while (c + 1 < chunks && cellFirst[c + 1] <= last) ++c;
    return ds.blk.chunkDone[c];
  };
  // the walk's sums finished (physics/finish_k.h) and scattered into the caller's layout, each sorted cell's element
  // made through the sorted order (BlockElements::of)
  const StagingRing::Drain drain = [&](const void* src, int k, std::size_t off, std::size_t len) {
    const double* sum = static_cast<const double*>(src);
    const std::uint32_t* order = ds.blk.hostOrder.data() + off / sizeof(double);
    const BlockElements& el = ds.blk.elements;
    const std::size_t count = len / sizeof(double);
    for (std::size_t t = 0; t < count; ++t) {
      const double r = k == 0 ? finishedPotential(sum[t], G, scale) : finishedAcceleration(sum[t], G, invMass, s2);
      const std::size_t e = el.of(order[t]);
      if (f32) static_cast<float*>(dst[k])[e] = float(r);
      else static_cast<double*>(dst[k])[e] = r;
    }
  };
  // the same, the potential's elements also kept (ds.blk.hostElement) for the next solves
  const StagingRing::Drain drainKeeping = [&](const void* src, int k, std::size_t off, std::size_t len) {
    if (k != 0) return drain(src, k, off, len);
    const double* sum = static_cast<const double*>(src);
    const std::uint32_t* order = ds.blk.hostOrder.data() + off / sizeof(double);
    std::uint32_t* made = ds.blk.hostElement.data() + off / sizeof(double);
    const BlockElements& el = ds.blk.elements;
    const std::size_t count = len / sizeof(double);
    for (std::size_t t = 0; t < count; ++t) {
      const double r = finishedPotential(sum[t], G, scale);
      const std::size_t e = el.of(order[t]);
      made[t] = std::uint32_t(e);
      if (f32) static_cast<float*>(dst[k])[e] = float(r);
      else static_cast<double*>(dst[k])[e] = r;
    }
  };
  // the same with the kept elements: one read per cell
  const StagingRing::Drain drainKept = [&](const void* src, int k, std::size_t off, std::size_t len) {
    const double* sum = static_cast<const double*>(src);
    const std::uint32_t* element = ds.blk.hostElement.data() + off / sizeof(double);
    const std::size_t count = len / sizeof(double);
    for (std::size_t t = 0; t < count; ++t) {
      const double r = k == 0 ? finishedPotential(sum[t], G, scale) : finishedAcceleration(sum[t], G, invMass, s2);
      if (f32) static_cast<float*>(dst[k])[element[t]] = float(r);
      else static_cast<double*>(dst[k])[element[t]] = r;
    }
  };
  for (;;) {
    AG_TRY(launchChunkedPass(ds, cfg, blocks, p, groupFirst, ds.blk.chunkDone));
    AG_CUDA_TRY(cudaEventRecord(ds.events[5], s));
    double seconds = 0;
    const bool orderKept = ds.blk.hostOrderValid;  // an unchanged mesh's
    if (!ds.blk.hostOrderValid) {  // the sorted order, on the copy stream while the walk runs (once per tree)
      const auto to = Clock::now();
      ds.blk.hostOrder.resize(n);
      AG_CUDA_TRY(cudaStreamWaitEvent(ds.copyStream, ds.events[2], 0));  // after the sort (or the kept tree's masses)
      const Transfer t{ds.blk.hostOrder.data(), ds.order, std::size_t(n) * sizeof(std::uint32_t)};
      AG_TRY(copyOut(ds, &t, 1, ds.copyStream));
      ds.blk.hostOrderValid = true;
      ds.blk.hostElementValid = false;  // made from this order by this download
      seconds += since(to);
    }
    // the elements kept by an unchanged mesh's solve (a new mesh's drain, beside its walk, would pay the stores for
    // nothing if the mesh changed again) while the sorted order and the layout are, for the next solves
    const bool kept = ds.blk.hostElementValid && ds.blk.hostElementLayout.sameAs(ds.blk.elements);
    const bool keep = !kept && orderKept && ds.blk.elements.end() <= (std::size_t(1) << 32);
    if (keep) {
      ds.blk.hostElementValid = false;
      ds.blk.hostElement.resize(n);
    }
    AG_CUDA_TRY(cudaEventSynchronize(ds.blk.chunkDone[0]));  // the first results, and cellFirst
    const auto td = Clock::now();
    Transfer t[4];
    for (int k = 0; k < nout; ++k) t[k] = Transfer{nullptr, ds.sums[k], std::size_t(n) * sizeof(double)};
    AG_TRY(copyOut(ds, t, nout, ds.copyStream, kept ? &drainKept : keep ? &drainKeeping : &drain, &gate,
                   kResultPieceBytes));
    if (keep) {
      ds.blk.hostElementLayout = ds.blk.elements;
      ds.blk.hostElementValid = true;
    }
    ds.stats.secondsDownload = seconds + since(td);
    WalkTally total;
    unsigned need = 0;
    AG_TRY(collectPass(ds, total, &need));
    ds.stats.walkLaunches += chunks - 1;
    if (need == 0) {
      st.approxInteractions = total.approx;
      st.directInteractions = total.direct;
      st.groups = ds.numGroups;
      return Status::success();
    }
    // walkUntilDone's rerun: a larger queue, the self terms back (finished groups wrote phi over them)
    AG_TRY(growQueue(ds, need));
    AG_TRY(restoreSizes(ds, n));
    AG_TRY(launchWalkPrep(p.phi, ds.sortedCells.mass, p.groupBegin, p.numGroups, selfCoefficient(opt.selfPotential),
                          const_cast<double*>(p.groupHmin), s));
  }
}

/// The walk's sums (one launch) finished and delivered into the caller's layout: on the device (device entry:
/// straight into the caller's arrays, or scattered from the packed results of a fully periodic solve), or scattered
/// from the download's pinned chunks (host entry); a fully periodic solve's mean potential.
Status deliverResults(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt,
                      bool finishIntoCaller, cudaStream_t caller, SolveStats& st) {
  const unsigned n = ds.n;
  double* res[4] = {nullptr, nullptr, nullptr, nullptr};
  const int nout = opt.accelerations ? 4 : 1;
  void* dst[4] = {o.potential, o.ax, o.ay, o.az};
  if (finishIntoCaller) {
    BlockField f[4];
    for (int k = 0; k < nout; ++k) f[k] = callerField(ds, dst[k]);
    AG_TRY(launchBlockFinish(geometryOf(ds), ds.order, blockFinishValues(ds, opt), f, ds.stream));
    AG_CUDA_TRY(cudaEventRecord(ds.events[5], ds.stream));
  } else {
    AG_TRY(finishOnDevice(ds, opt, res));
  }
  const auto td = Clock::now();
  if (v.deviceData) {
    const BlockGeometry geo = geometryOf(ds);
    if (!finishIntoCaller)
      for (int k = 0; k < nout; ++k) AG_TRY(launchBlockScatter(geo, res[k], callerField(ds, dst[k]), ds.stream));
    // the caller's later work on its stream follows these writes
    AG_CUDA_TRY(cudaEventRecord(ds.blk.callerEvent, ds.stream));
    AG_CUDA_TRY(cudaStreamWaitEvent(caller, ds.blk.callerEvent, 0));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  } else {
    Transfer t[4];
    for (int k = 0; k < nout; ++k) t[k] = Transfer{nullptr, res[k], std::size_t(n) * sizeof(double)};
    const StagingRing::Drain drain = [&](const void* src, int k, std::size_t off, std::size_t len) {
      scatterRange(v, static_cast<const double*>(src), off / sizeof(double), (off + len) / sizeof(double), dst[k]);
    };
    AG_TRY(copyOut(ds, t, nout, ds.stream, &drain));
  }
  ds.stats.secondsDownload = since(td);
  if (opt.fullyPeriodic()) AG_TRY(meanPotentialOnDevice(ds, res[0], &st.meanPotential));
  return Status::success();
}

/// An unchanged mesh: the masses made and checked, the sorted masses and sizes made with the kept order (the node
/// keys too if the walk took their room), then sortAndBuild's end (finishCells). The events are those sortAndBuild
/// records, so that fillStats reads this path's phases (upload: the densities; keys: the keys and cells made again;
/// build: 0).
Status reuseTree(DeviceState& ds, const SolveOptions& opt) {
  cudaStream_t s = ds.stream;
  const BlockLayout& L = ds.layout;
  char* const base = reinterpret_cast<char*>(ds.block.get());
  double* const* slot = ds.slot;
  const BlockGeometry g = geometryOf(ds);
  const CellChecks checks = cellChecks(ds, opt);
  AG_CUDA_TRY(cudaEventRecord(ds.events[0], s));
  // the masses (unsorted) into slot 5 (= slot 2: the last solve's phi), free until the gather below (packed
  // float32: slot 3, free until the gather), checked and summed by the bounds kernel as sortAndBuild does
  double* const massAt = slot[5];
  double* hmass = nullptr;
  unsigned* hmassBad = nullptr;
  AG_TRY(blockMassesInto(ds, massAt, slot[3], opt, checks, &hmass, &hmassBad));
  AG_CUDA_TRY(cudaEventRecord(ds.events[1], s));
  AG_CUDA_TRY(cudaEventRecord(ds.events[8], s));
  // the nodes' first keys: kept with the topology unless the walk's group sizes took their room (then the sorted
  // keys into the sort's slot, slot 4, and the node keys from them); the walk groups (ds.groupBegin) are kept
  const RootCube& r = ds.blk.rootUnscaled;
  if (!ds.nodeKeysLive) {
    AG_TRY(launchBlockSortedKeys(g, ds.order, r.lo[0], r.lo[1], r.lo[2], double(kKeyCells) / r.side, ds.sortedKeys,
                                 s));
    AG_TRY(computeNodeKeys(ds, ds.nodes));
  }
  AG_CUDA_TRY(cudaEventRecord(ds.events[2], s));
  AG_CUDA_TRY(cudaEventRecord(ds.events[6], s));
  AG_CUDA_TRY(cudaEventRecord(ds.events[7], s));
  AG_CUDA_TRY(cudaStreamSynchronize(s));
  if (*hmassBad != 0xffffffffu) return blockFlagged(ds, *hmassBad, opt);
  const double massTotal = *hmass;
  AG_TRY(checkMassRange(massTotal, ds.minSize, r.side, opt));
  // the sorted cells: the masses gathered from slot 5 (= 2), the sizes made again (the walk's phi took their slot)
  AG_TRY(blockSortedCellsInto(ds, massAt));
  ds.hostSize = nullptr;
  ds.tail = Carve(base + L.tail, ds.block.bytes() - L.tail);
  ds.extra = Carve(base + L.extra, ds.block.bytes() - L.extra);
  ds.root = ds.blk.rootScaled;
  return finishCells(ds, opt, false, massTotal);
}

}  // namespace

Status beginBlockSolve(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt,
                       SolveResult& out, Clock::time_point& t0, bool& empty) {
  const std::size_t cells = v.cells();
  AG_TRY(checkOptions(opt, cells, false));
  const auto tv = Clock::now();
  AG_TRY(validateBlocks(v, o, opt));
  ds.stats = CudaStats{};
  AG_TRY(ensureDevice(ds));
  ds.stats.secondsValidate = since(tv);
  ds.stats.device = ds.deviceName;
  t0 = Clock::now();
  out = SolveResult{};
  out.stats.threads = 1;
  empty = cells == 0;
  if (empty) ds.stats.secondsTotal = out.stats.secondsTotal = since(t0);
  return Status::success();
}

namespace {

Status run(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt, SolveResult& out) {
  const std::size_t cells = v.cells();
  Clock::time_point t0;
  bool empty = false;
  AG_TRY(beginBlockSolve(ds, v, o, opt, out, t0, empty));
  if (empty) return Status::success();
  const unsigned n = unsigned(cells);
  cudaStream_t caller = static_cast<cudaStream_t>(v.stream);
  AG_TRY(orderAfterCaller(ds, v, o, opt));
  const BlockSolveScope active(ds, v);
  const bool reuse = ds.blk.key.matches(v, opt) && ds.n == n && ds.block.get() == ds.blk.blockBase &&
                     ds.block.bytes() == ds.blk.blockBytes;
  // a page-locked density is read in place on an unchanged mesh, where its upload is on the critical path; a new
  // mesh's staged upload runs beside the keys, sort and build, which the read in place would not (H100, 256^3:
  // 43.7 ms in place against 42.8 staged; unchanged 39.9 against 41.1)
  ds.blk.pinnedDensity = reuse ? pinnedDensityOf(ds, v) : nullptr;
  ds.blk.key.valid = false;  // until this solve succeeds
  if (!reuse) ds.blk.hostOrderValid = false;  // the sorted order on the host belongs to the kept tree
  // the device entry's finish writes into the caller's arrays (a fully periodic solve's mean potential wants the
  // packed results first)
  const bool finishIntoCaller = v.deviceData && !opt.fullyPeriodic();

  // the blocks' geometry (unchanged when the tree is kept), the device entry's block index
  AG_TRY(putBlockGeometry(ds, v, !reuse));

  const CellsView none{nullptr, nullptr, nullptr, nullptr, nullptr, cells};
  // the host entry on a new mesh: the densities go up while the keys, sort and build run
  const bool densitiesAside = !reuse && !v.deviceData;
  if (!reuse) {
    AG_TRY(uploadAndBound(ds, none, opt, false));
    if (densitiesAside) AG_TRY(startDensityUpload(ds, ds.slot[3]));
    ds.blk.rootUnscaled = ds.root;
    AG_TRY(sortAndBuild(ds, none, opt, false, 0.0));
    ds.blk.rootScaled = ds.root;
  } else {
    AG_TRY(reuseTree(ds, opt));
  }
  AG_TRY(computeMoments(ds, n, ds.nodes, ds.depth, ds.root, opt, ds.massScale));
  if (opt.anyPeriodic()) AG_TRY(prepareEwald(ds, opt, ds.scale, out.stats));
  AG_CUDA_TRY(cudaEventRecord(ds.events[4], ds.stream));
  const int chunks = resultChunks(ds, v, opt);
  if (chunks > 1) {
    // the walk in launches, each one's results into the caller's arrays while the next ones walk
    AG_TRY(walkAndDownload(ds, v, o, opt, chunks, out.stats));
  } else {
    double* g[3] = {ds.sums[1], ds.sums[2], ds.sums[3]};
    AG_TRY(walk(ds, n, opt, ds.massScale, ds.sums[0], g, out.stats));
    AG_TRY(deliverResults(ds, v, o, opt, finishIntoCaller, caller, out.stats));
  }
  out.stats.nodes = ds.nodes;
  out.stats.leaves = ds.nodes - ds.splitNodes;
  out.stats.treeDepth = ds.depth;
  fillStats(ds, false, t0, out.stats);
  if (densitiesAside) {  // the cells made, then the densities' upload beside the keys, sort and build (wall time)
    ds.stats.secondsUpload = elapsed(ds, 0, 1) + elapsed(ds, kEventDensityUpStart, kEventDensityUpEnd);
    out.stats.secondsUpload = ds.stats.secondsUpload;
  }
  out.stats.densityContrast = ds.contrastApplied;
  out.stats.meanDensity = ds.meanDensity;
  out.stats.treeReused = reuse;
  // kept for the next block solve on this mesh
  ds.blk.key.assign(v, opt);
  ds.blk.blockBase = ds.block.get();
  ds.blk.blockBytes = ds.block.bytes();
  return Status::success();
}

}  // namespace

BlockSolveScope::BlockSolveScope(DeviceState& d, const BlocksView& v) : ds(d) { ds.blk.view = &v; }

BlockSolveScope::~BlockSolveScope() {
  // the densities' upload, whatever happened: no copy into the block outlives the solve (an early error)
  if (ds.blk.densityUpload.valid()) ds.blk.densityUpload.wait();
  ds.blk.densityUpload = std::future<Status>();
  if (ds.blk.densityAt) (void)cudaStreamSynchronize(ds.copyStream);
  ds.blk.densityAt = nullptr;
  ds.blk.pinnedDensity = nullptr;
  ds.blk.view = nullptr;
}

Status orderAfterCaller(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt) {
  if (!v.deviceData) return Status::success();
  AG_TRY(checkDevicePointers(ds, v, o, opt));
  // after the work the caller queued on its stream (the density it wrote), without blocking the host
  if (!ds.blk.callerEvent) AG_CUDA_TRY(cudaEventCreateWithFlags(&ds.blk.callerEvent, cudaEventDisableTiming));
  AG_CUDA_TRY(cudaEventRecord(ds.blk.callerEvent, static_cast<cudaStream_t>(v.stream)));
  AG_CUDA_TRY(cudaStreamWaitEvent(ds.stream, ds.blk.callerEvent, 0));
  return Status::success();
}

Status putBlockGeometry(DeviceState& ds, const BlocksView& v, bool geometry) {
  if (geometry) {  // 6 doubles per block
    std::vector<double> geo(6 * v.nBlocks);
    for (std::size_t b = 0; b < v.nBlocks; ++b)
      for (int d = 0; d < 3; ++d) {
        geo[6 * b + d] = v.lo[3 * b + d];
        geo[6 * b + 3 + d] = v.dx[3 * b + d];
      }
    AG_TRY(ds.blk.geo.reserve(geo.size(), "the blocks' geometry"));
    AG_CUDA_TRY(cudaMemcpyAsync(ds.blk.geo.get(), geo.data(), geo.size() * sizeof(double), cudaMemcpyHostToDevice,
                                ds.stream));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // geo dies here
  }
  if ((v.deviceData || ds.blk.pinnedDensity) && v.blockIndex) {  // the kernels read the caller's layout
    AG_TRY(ds.blk.slots.reserve(v.nBlocks, "the block index"));
    AG_CUDA_TRY(cudaMemcpyAsync(ds.blk.slots.get(), v.blockIndex, v.nBlocks * sizeof(std::int32_t),
                                cudaMemcpyHostToDevice, ds.stream));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  }
  return Status::success();
}

Status startDensityUpload(DeviceState& ds, void* at) {
  if (!ds.copyStream) AG_CUDA_TRY(cudaStreamCreateWithFlags(&ds.copyStream, cudaStreamNonBlocking));
  const BlocksView* v = ds.blk.view;
  ds.blk.densityAt = at;
  ds.blk.densityUpload = std::async(std::launch::async, [&ds, v, at]() -> Status {
    return guarded([&]() -> Status {
      AG_CUDA_TRY(cudaSetDevice(ds.device));  // a new thread starts on device 0
      const std::size_t es = dtypeBytes(v->dtype);
      const Transfer t{nullptr, at, v->cells() * es};
      const StagingRing::Fill fill = [v, es](void* dst, int, std::size_t off, std::size_t len) {
        packRange(*v, off / es, (off + len) / es, dst);
      };
      AG_CUDA_TRY(cudaEventRecord(ds.events[kEventDensityUpStart], ds.copyStream));
      AG_TRY(copyIn(ds, &t, 1, ds.copyStream, &fill));
      AG_CUDA_TRY(cudaEventRecord(ds.events[kEventDensityUpEnd], ds.copyStream));
      return Status::success();
    });
  });
  return Status::success();
}

Status blockSortedCentres(DeviceState& ds, double* x, double* y, double* z) {
  return launchBlockSortedCells(geometryOf(ds), ds.order, ds.scale, x, y, z, nullptr, nullptr, nullptr, ds.stream);
}

Status deliverBlockSums(DeviceState& ds, const BlocksView& v, const BlockOutputs& o, const SolveOptions& opt,
                        double* const packed[4]) {
  const unsigned n = ds.n;
  const int nout = opt.accelerations ? 4 : 1;
  void* dst[4] = {o.potential, o.ax, o.ay, o.az};
  const BlockGeometry geo = geometryOf(ds);
  BlockField f[4];
  for (int k = 0; k < nout; ++k) {
    if (v.deviceData) {
      f[k] = callerField(ds, dst[k]);
    } else {  // packed float64, cells in block order (launchFinish's results in the caller's order)
      f[k] = packedField(v, packed[k]);
      f[k].dtype = 0;
    }
  }
  AG_TRY(launchBlockFinish(geo, ds.order, blockFinishValues(ds, opt), f, ds.stream));
  AG_CUDA_TRY(cudaEventRecord(ds.events[5], ds.stream));
  const auto td = Clock::now();
  if (v.deviceData) {
    // the caller's later work on its stream follows these writes
    AG_CUDA_TRY(cudaEventRecord(ds.blk.callerEvent, ds.stream));
    AG_CUDA_TRY(cudaStreamWaitEvent(static_cast<cudaStream_t>(v.stream), ds.blk.callerEvent, 0));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  } else {  // down through the pinned chunks, scattered into the caller's layout and dtype on the copy threads
    Transfer t[4];
    for (int k = 0; k < nout; ++k) t[k] = Transfer{nullptr, packed[k], std::size_t(n) * sizeof(double)};
    const StagingRing::Drain drain = [&](const void* src, int k, std::size_t off, std::size_t len) {
      scatterRange(v, static_cast<const double*>(src), off / sizeof(double), (off + len) / sizeof(double), dst[k]);
    };
    AG_TRY(copyOut(ds, t, nout, ds.stream, &drain));
  }
  ds.stats.secondsDownload = since(td);
  return Status::success();
}

Status solveBlocksOnDevice(DeviceState& ds, const BlocksView& v, const BlockOutputs& out, const SolveOptions& opt,
                           SolveResult& result) {
  // method 'fmm': its own block solve (fmm_phase.h; it takes the lock)
  if (opt.method == SolveMethod::Fmm) return guarded([&] { return solveFmmBlocks(ds, v, out, opt, result); });
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&] { return run(ds, v, out, opt, result); });
}

DeviceCells blockCells(const DeviceState& ds, const std::uint32_t* order, double scale, const double* mass) {
  DeviceCells c{nullptr, nullptr, nullptr, mass};
  c.blocks.g = geometryOf(ds);
  c.blocks.order = order;
  c.blocks.scale = scale;
  return c;
}

Status blockMassesInto(DeviceState& ds, double* massAt, void* scratch32, const SolveOptions& opt,
                       const CellChecks& checks, double** total, unsigned** firstBad) {
  const BlocksView& v = *ds.blk.view;
  const BlockGeometry g = geometryOf(ds);
  double* const partials = ds.bounds.get();
  double* const result = partials + kBoundsStride * kBoundsBlocks;
  AG_CUDA_TRY(cudaMemsetAsync(checks.firstBad, 0xff, sizeof(unsigned), ds.stream));
  if (v.deviceData) {
    AG_TRY(launchBlockMassBounds(g, callerField(ds, v.density), massAt, checks, partials, result, ds.stream));
  } else if (ds.blk.pinnedDensity) {  // page-locked: read in place over PCIe, in the caller's layout
    AG_TRY(launchBlockMassBounds(g, callerField(ds, ds.blk.pinnedDensity), massAt, checks, partials, result,
                                 ds.stream));
  } else if (ds.blk.densityUpload.valid()) {  // on their way since the bounds (startDensityUpload): wait on the stream
    AG_TRY(ds.blk.densityUpload.get());
    AG_CUDA_TRY(cudaStreamWaitEvent(ds.stream, ds.events[kEventDensityUpEnd], 0));
    AG_TRY(launchBlockMassBounds(g, packedField(v, ds.blk.densityAt), massAt, checks, partials, result, ds.stream));
  } else {
    // one number per cell, in the caller's dtype, packed by the copy threads straight into the pinned chunks
    const std::size_t es = dtypeBytes(v.dtype);
    void* packed = v.dtype == DType::Float32 ? scratch32 : static_cast<void*>(massAt);
    Transfer t{nullptr, packed, std::size_t(g.n) * es};
    const StagingRing::Fill fill = [&v, es](void* dst, int, std::size_t off, std::size_t len) {
      packRange(v, off / es, (off + len) / es, dst);
    };
    AG_TRY(copyIn(ds, &t, 1, ds.stream, &fill));
    AG_TRY(launchBlockMassBounds(g, packedField(v, packed), massAt, checks, partials, result, ds.stream));
  }
  AG_TRY(queueMassReadback(ds, checks, total, firstBad));
  if (opt.signedSources()) AG_TRY(fixedOrderSumOnDevice(ds, massAt, g.n, &ds.contrastTotal));
  return Status::success();
}

Status blockFlagged(DeviceState& ds, unsigned bad, const SolveOptions& opt) {
  const BlocksView& v = *ds.blk.view;
  if (std::size_t(bad) >= v.cells())
    return Status::error(ErrorCode::Internal, "CUDA backend: the device flagged cell " + std::to_string(bad) +
                                                  " of " + std::to_string(v.cells()));
  // the cell as the host makes it, its density read where it lives, checked as validateCells checks a cell
  const std::size_t cpb = v.cellsPerBlock(), b = bad / cpb;
  std::size_t c = bad % cpb;
  const int i = int(c % std::size_t(v.nxb));
  c /= std::size_t(v.nxb);
  const int j = int(c % std::size_t(v.nyb)), k = int(c / std::size_t(v.nyb));
  const double* lo = v.lo + 3 * b;
  const double* h = v.dx + 3 * b;
  double rho = 0;
  if (v.deviceData) {
    const std::size_t es = dtypeBytes(v.dtype), e = v.element(v.slotOf(b), i, j, k);
    float f = 0;
    double d = 0;
    AG_CUDA_TRY(cudaMemcpy(es == 4 ? static_cast<void*>(&f) : static_cast<void*>(&d),
                           static_cast<const char*>(v.density) + e * es, es, cudaMemcpyDeviceToHost));
    rho = es == 4 ? double(f) : d;
  } else {
    rho = blockDensity(v, bad);
  }
  double x = blockCellCentre(lo[0], i, h[0]), y = blockCellCentre(lo[1], j, h[1]), z = blockCellCentre(lo[2], k, h[2]);
  double m = blockCellMass(rho, h[0], h[1], h[2]), size = h[0];
  const Status st = validateCells(CellsView{&x, &y, &z, &m, &size, 1}, opt);
  if (st.ok())
    return Status::error(ErrorCode::Internal, "CUDA backend: the device flagged " + blockCellName(v, bad) +
                                                  " as invalid but the host accepts it");
  const std::string prefix = "cell 0";
  const std::string msg = st.message.rfind(prefix, 0) == 0 ? "cell " + std::to_string(bad) + st.message.substr(prefix.size())
                                                           : st.message;
  return blocksStatus(v, Status::error(st.code, msg), &rho);
}

Status blockCoincident(DeviceState& ds, std::uint32_t b) {
  const BlocksView& v = *ds.blk.view;
  GeneratedCells cells;
  generateBlockCells(v, copyThreads(ds), cells, true, false);
  return blocksStatus(v, coincidentCellsError(cells.view(), b));
}

Status blockSortedCellsInto(DeviceState& ds, const double* massAt) {
  double* const* slot = ds.slot;
  const BlockGeometry g = geometryOf(ds);
  // two passes: the masses leave slot 2 before the sizes take it
  AG_TRY(launchBlockSortedCells(g, ds.order, ds.scale, nullptr, nullptr, nullptr, nullptr, massAt, slot[3], ds.stream));
  AG_TRY(launchBlockSortedCells(g, ds.order, ds.scale, nullptr, nullptr, nullptr, slot[2], nullptr, nullptr,
                                ds.stream));
  ds.sortedCells = blockCells(ds, ds.order, ds.scale, slot[3]);
  ds.sortedSize = slot[2];
  return Status::success();
}

Status blockSortedSizes(DeviceState& ds) {
  AG_TRY(launchBlockSortedCells(geometryOf(ds), ds.order, ds.scale, nullptr, nullptr, nullptr, ds.sortedSize,
                                nullptr, nullptr, ds.stream));
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
