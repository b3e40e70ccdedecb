/// \file cuda_backend.cu
/// \brief The CUDA backend (cuda_backend.h): a solve's orchestration over the phases. validateOptions on the host,
/// then on the device: upload, root-cube bounds (which also checks every cell as validateCells does; on a failure
/// validateCells itself runs on the host and its Status is returned), Morton keys, stable sort, octree topology level
/// by level, the gather in place into sorted scaled cells, moments bottom-up, the group walk (or the direct kernel),
/// scaling and scatter, download. Each step follows cpu_backend.cpp; the steps are tree_phase.cu, ewald_phase.cu
/// and walk_phase.cu, the kernels kernel_*.cu. All per-cell data shares one device block (memory_plan.h
/// BlockLayout: about 60 bytes per cell for a potential solve). Method 'fmm' goes its own way after the checks
/// (fmm_phase.h: the device's sort, the host's tree and lists, the device's evaluation).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "core/fixed_sum.h"
#include "core/validate.h"
#include "cuda/blocks_phase.h"
#include "cuda/cuda_backend.h"
#include "cuda/device.h"
#include "cuda/device_state.h"
#include "cuda/ewald_phase.h"
#include "cuda/fmm_phase.h"
#include "cuda/memory_plan.h"
#include "cuda/solve.h"
#include "cuda/system_phase.h"
#include "cuda/tree_phase.h"
#include "cuda/walk_phase.h"
#include "ewald/walk_setup.h"

namespace amrgrav {
namespace cuda {
namespace {

Status run(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SolveResult& out, bool direct) {
  ds.blk.key.valid = false;  // this solve reuses the device block: a block solve's kept tree is gone
  Status st = checkOptions(opt, cells.n, direct);
  if (!st.ok()) return st;
  const bool fmm = !direct && opt.method == SolveMethod::Fmm;
  if (fmm) AG_TRY(checkFmmOnDevice(opt));
  const auto tv = Clock::now();
  if (!ds.copt.validateOnDevice) {
    st = validateCells(cells, opt);
    if (!st.ok()) return st;
  }
  ds.stats = CudaStats{};
  ds.stats.secondsValidate = since(tv);
  st = ensureDevice(ds);
  if (!st.ok()) {
    // bad cells are reported as such (as by the CPU backend) even where there is no device to check them on
    if (ds.copt.validateOnDevice) {
      const Status sc = validateCells(cells, opt);
      if (!sc.ok()) return sc;
    }
    return st;
  }
  ds.stats.device = ds.deviceName;
  const auto t0 = Clock::now();

  out.stats = SolveStats{};
  out.stats.threads = 1;
  const unsigned n = unsigned(cells.n);
  const ResultTargets dest = out.targets(n, opt.accelerations);
  if (n == 0) {
    ds.stats.secondsTotal = out.stats.secondsTotal = since(t0);
    return Status::success();
  }
  if (fmm) {  // the device sorts, the host builds the tree and lists, the device evaluates them (fmm_phase.h)
    AG_TRY(solveFmmOnDevice(ds, cells, opt, out));
    // the tiles built on the device (isolated, or periodic with fmmDevicePeriodicTiles): their steps' times
    if (ds.copt.fmmDeviceLists && (ds.copt.fmmDeviceTiles || ds.copt.fmmDevicePeriodicTiles))
      AG_TRY(fmmTileStepSeconds(ds.fmm.tileBuild, ds.stats.fmmTileStepSeconds));
    out.stats.secondsTotal = ds.stats.secondsTotal = since(t0);
    return Status::success();
  }
  if (!direct && opt.signedSources()) ds.contrastTotal = fixedOrderSum(cells.mass, n, copyThreads(ds));
  AG_TRY(prepareCells(ds, cells, opt, direct, 0.0));
  double* const phi = ds.sums[0];
  double* g[3] = {ds.sums[1], ds.sums[2], ds.sums[3]};
  if (direct) {
    AG_CUDA_TRY(cudaEventRecord(ds.events[4], ds.stream));
    AG_TRY(launchDirect(ds.sortedCells, n, ds.massScale, opt.accelerations, phi, g[0], g[1], g[2], ds.stream));
    AG_TRY(launchFoldSelf(phi, ds.sortedCells.mass, ds.sortedSize, n, 1.0 / ds.massScale,
                          selfCoefficient(opt.selfPotential), ds.stream));
    out.stats.directInteractions = std::uint64_t(n) * (n - 1);
  } else {
    AG_TRY(computeMoments(ds, n, ds.nodes, ds.depth, ds.root, opt, ds.massScale));
    if (opt.anyPeriodic()) AG_TRY(prepareEwald(ds, opt, ds.scale, out.stats));  // host table work overlaps the moments
    AG_CUDA_TRY(cudaEventRecord(ds.events[4], ds.stream));
    AG_TRY(walk(ds, n, opt, ds.massScale, phi, g, out.stats));
    out.stats.nodes = ds.nodes;
    out.stats.leaves = ds.nodes - ds.splitNodes;
    out.stats.treeDepth = ds.depth;
  }
  AG_TRY(finishAndDownload(ds, opt, dest));
  fillStats(ds, direct, t0, out.stats);
  out.stats.densityContrast = ds.contrastApplied;
  out.stats.meanDensity = ds.meanDensity;
  if (opt.fullyPeriodic()) out.stats.meanPotential = meanPotentialOf(ds, dest.potential, cells.size, n);
  return Status::success();
}

/// A Backend over a DeviceState of its own (kept between solves: its device buffers are reused).
class CudaBackendImpl final : public Backend {
 public:
  explicit CudaBackendImpl(const CudaOptions& o) : ds_(o) {}

  const char* name() const override { return "cuda"; }
  Status solve(const CellsView& cells, const SolveOptions& opt, SolveResult& out) override {
    return solveOnDevice(ds_, cells, opt, out, false);
  }
  Status direct(const CellsView& cells, const SolveOptions& opt, SolveResult& out) override {
    return solveOnDevice(ds_, cells, opt, out, true);
  }
  Status solveBlocks(const BlocksView& blocks, const BlockOutputs& out, const SolveOptions& opt,
                     SolveResult& result) override {
    return solveBlocksOnDevice(ds_, blocks, out, opt, result);
  }
  Status solveSystem(const SystemView& system, const SolveOptions& opt, bool direct, SystemResult& out) override {
    return solveSystemOnDevice(ds_, system, opt, direct, out);
  }

 private:
  DeviceState ds_;
};

}  // namespace

Status solveOnDevice(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, SolveResult& out, bool direct) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&] { return run(ds, cells, opt, out, direct); });
}

}  // namespace cuda

CudaOptions cudaOptionsFromEnvironment() {
  CudaOptions o;
  // measurement knobs (bench/gpu/blocks-check.sh chunks256, copies256): the host block entry's walk launches, the
  // staged copies' host threads and pinned chunk size (MiB); the FMM's lists, sort, tiles and tree on the device
  if (const char* e = std::getenv("AMRGRAV_CUDA_RESULT_CHUNKS"))
    o.resultChunks = std::max(0, std::min(std::atoi(e), cuda::kMaxResultChunks));
  if (const char* e = std::getenv("AMRGRAV_CUDA_COPY_THREADS")) o.copyThreads = std::max(0, std::min(std::atoi(e), 64));
  if (const char* e = std::getenv("AMRGRAV_FMM_DEVICE_LISTS")) o.fmmDeviceLists = std::atoi(e) != 0;
  if (const char* e = std::getenv("AMRGRAV_FMM_DEVICE_SORT")) o.fmmDeviceSort = std::atoi(e) != 0;
  if (const char* e = std::getenv("AMRGRAV_FMM_DEVICE_TILES")) o.fmmDeviceTiles = std::atoi(e) != 0;
  if (const char* e = std::getenv("AMRGRAV_FMM_DEVICE_TREE")) o.fmmDeviceTree = std::atoi(e) != 0;
  if (const char* e = std::getenv("AMRGRAV_FMM_DEVICE_PERIODIC")) o.fmmDevicePeriodic = std::atoi(e) != 0;
  if (const char* e = std::getenv("AMRGRAV_FMM_DEVICE_PERIODIC_TILES")) o.fmmDevicePeriodicTiles = std::atoi(e) != 0;
  if (const char* e = std::getenv("AMRGRAV_FMM_DEVICE_PERIODIC_FINISH"))
    o.fmmDevicePeriodicFinish = std::atoi(e) != 0;
  if (const char* e = std::getenv("AMRGRAV_FMM_M2L")) o.fmmM2L = std::atoi(e);
  if (const char* e = std::getenv("AMRGRAV_FMM_ACCEL_MMA")) o.fmmAccelTablesMma = std::atoi(e) != 0;
  if (const char* e = std::getenv("AMRGRAV_FMM_NEAR_SINGLE")) o.fmmNearSingle = std::atoi(e) != 0;
  if (const char* e = std::getenv("AMRGRAV_WALK_PAIRED")) o.pairedCells = std::atoi(e) != 0;
  if (const char* e = std::getenv("AMRGRAV_CUDA_STAGING_MIB"))
    if (const int mib = std::atoi(e); mib > 0) o.stagingChunkBytes = std::size_t(std::min(mib, 256)) << 20;
  return o;
}

std::unique_ptr<Backend> makeCudaBackend() {
  return std::make_unique<cuda::CudaBackendImpl>(cudaOptionsFromEnvironment());
}

}  // namespace amrgrav
