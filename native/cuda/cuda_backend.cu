/// \file cuda_backend.cu
/// \brief The CUDA backend's solve: validateOptions on the host, then on the device: upload, root-cube bounds
/// (which also checks every cell as validateCells does; on a failure validateCells itself runs on the host and
/// its Status is returned), Morton keys, stable sort, gather into sorted scaled cells, octree topology level by
/// level, moments bottom-up, the group walk (or the direct kernel), scaling and scatter, download. Each step
/// follows cpu_backend.cpp; the kernels live in kernel_*.cu.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "core/keys.h"
#include "core/tree.h"
#include "core/validate.h"
#include "cpu/thread_pool.h"
#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_buffers.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// An empty kernel whose attributes tell whether this build has code the device can run.
__global__ void probeKernel() {}

/// Lowest compute capability (e.g. 90) this build has code for; 0 when unknown.
int lowestBuiltArch() {
#if defined(__CUDA_ARCH_LIST__)
  const int archs[] = {__CUDA_ARCH_LIST__};
  int lo = archs[0];
  for (int a : archs) lo = std::min(lo, a);
  return lo / 10;
#else
  return 0;
#endif
}

/// Checks driver, device count, the device index and that this build's code runs on it; no context is created.
Status checkDevice(int device, int* ccOut) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::error(ErrorCode::NoDevice, std::string("CUDA backend: no usable CUDA driver or device (") +
                                                  cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")");
  }
  if (count <= 0) return Status::error(ErrorCode::NoDevice, "CUDA backend: no CUDA device found");
  if (device < 0 || device >= count)
    return Status::error(ErrorCode::NoDevice, "CUDA backend: device " + std::to_string(device) + " requested, but " +
                                                  std::to_string(count) + " device(s) present");
  int major = 0, minor = 0;
  AG_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  AG_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const int cc = major * 10 + minor, need = lowestBuiltArch();
  if (need > 0 && cc < need)
    return Status::error(ErrorCode::NoDevice, "CUDA backend: device " + std::to_string(device) +
                                                  " has compute capability " + std::to_string(major) + "." +
                                                  std::to_string(minor) + ", this build needs " +
                                                  std::to_string(need / 10) + "." + std::to_string(need % 10) +
                                                  " or newer (CMAKE_CUDA_ARCHITECTURES)");
  if (ccOut) *ccOut = cc;
  return Status::success();
}

unsigned nextPow2(unsigned long long v) {
  unsigned p = 1;
  while (p < v && p < (1u << 31)) p <<= 1;
  return p;
}

/// 2^-round(log2(v)) for v > 0 (exact scaling), 1 when v is zero or out of range.
double powerOfTwoScale(double v) {
  if (!(v > 0) || !std::isfinite(v)) return 1.0;
  const double e = std::round(std::log2(v));
  if (!(std::fabs(e) < 1000)) return 1.0;
  return std::exp2(-e);
}

constexpr int kEvents = 6;  // start, uploaded, sorted, built, moments, walked

class CudaBackendImpl final : public CudaBackend {
 public:
  explicit CudaBackendImpl(const CudaOptions& o) : copt_(o) {}
  ~CudaBackendImpl() override { releaseAll(); }

  const char* name() const override { return "cuda"; }

  Status solve(const CellsView& cells, const SolveOptions& opt, SolveResult& out) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&] { return run(cells, opt, out, false); });
  }
  Status direct(const CellsView& cells, const SolveOptions& opt, SolveResult& out) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&] { return run(cells, opt, out, true); });
  }

  void setCudaOptions(const CudaOptions& o) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (ready_ && o.device != copt_.device) releaseAll();
    copt_ = o;
  }
  CudaOptions cudaOptions() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return copt_;
  }
  CudaStats lastCudaStats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void releaseDeviceMemory() override {
    std::lock_guard<std::mutex> lock(mu_);
    releaseAll();
  }

 private:
  template <class F>
  static Status guarded(F&& f) {
    try {
      return f();
    } catch (const std::bad_alloc&) {
      return Status::error(ErrorCode::OutOfMemory, "host memory exhausted during the CUDA solve");
    } catch (const std::exception& e) {
      return Status::error(ErrorCode::Internal, std::string("CUDA backend: ") + e.what());
    }
  }

  Status ensureDevice() {
    if (ready_) {
      AG_CUDA_TRY(cudaSetDevice(device_));
      return Status::success();
    }
    int cc = 0;
    AG_TRY(checkDevice(copt_.device, &cc));
    AG_CUDA_TRY(cudaSetDevice(copt_.device));
    cudaFuncAttributes fa;
    const cudaError_t pe = cudaFuncGetAttributes(&fa, probeKernel);
    if (pe != cudaSuccess) {
      (void)cudaGetLastError();
      return Status::error(ErrorCode::NoDevice, std::string("CUDA backend: this build has no code for device ") +
                                                    std::to_string(copt_.device) + " (compute capability " +
                                                    std::to_string(cc / 10) + "." + std::to_string(cc % 10) +
                                                    "): " + cudaGetErrorString(pe));
    }
    cudaDeviceProp prop;
    AG_CUDA_TRY(cudaGetDeviceProperties(&prop, copt_.device));
    smCount_ = prop.multiProcessorCount;
    deviceName_ = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                  std::to_string(prop.multiProcessorCount) + " SMs)";
    AG_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for (auto& e : events_) AG_CUDA_TRY(cudaEventCreate(&e));
    AG_TRY(small_.reserve(4096, "small read-backs"));
    device_ = copt_.device;
    ready_ = true;
    return Status::success();
  }

  void releaseAll() {
    if (!ready_) return;
    (void)cudaSetDevice(device_);
    (void)cudaStreamSynchronize(stream_);
    for (auto* b : {&in_[0], &in_[1], &in_[2], &in_[3], &in_[4], &sum_[0], &sum_[1], &sum_[2], &sum_[3], &size_,
                    &bounds_})
      b->release();
    keys_.release(); keysSorted_.release(); idx_.release(); order_.release();
    cells_.release(); cubTemp_.release(); topo_.release(); levelCount_.release(); levelOffset_.release();
    moments_.release(); nodeMac_.release(); nodeMQ_.release(); queue_.release(); walkCounters_.release();
    tally_.release();
    staging_ = std::make_unique<StagingRing>();
    small_.release();
    for (auto& e : events_) {
      if (e) (void)cudaEventDestroy(e);
      e = nullptr;
    }
    if (stream_) (void)cudaStreamDestroy(stream_);
    stream_ = nullptr;
    ready_ = false;
  }

  std::size_t deviceBytes() const {
    std::size_t b = 0;
    for (int k = 0; k < 5; ++k) b += in_[k].bytes();
    for (int k = 0; k < 4; ++k) b += sum_[k].bytes();
    b += size_.bytes() + bounds_.bytes() + keys_.bytes() + keysSorted_.bytes() + idx_.bytes() + order_.bytes();
    b += cells_.bytes() + cubTemp_.bytes() + topo_.bytes() + levelCount_.bytes() + levelOffset_.bytes();
    b += moments_.bytes() + nodeMac_.bytes() + nodeMQ_.bytes() + queue_.bytes() + walkCounters_.bytes() +
         tally_.bytes();
    return b;
  }

  double elapsed(int a, int b) const {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, events_[a], events_[b]) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return double(ms) * 1e-3;
  }

  Status reserveCubTemp(std::size_t bytes) { return cubTemp_.reserve(std::max<std::size_t>(bytes, 1), "CUB scratch"); }

  // ---------------------------------------------------------------- the solve
  Status run(const CellsView& cells, const SolveOptions& opt, SolveResult& out, bool direct) {
    Status st = validateOptions(opt);
    if (!st.ok()) return st;
    if (!direct && opt.groupSize > 64)
      return Status::error(ErrorCode::InvalidOption,
                           "groupSize must be at most 64 on the CUDA backend (one warp per group, at most two cells "
                           "per lane), got " + std::to_string(opt.groupSize));
    const auto tv = Clock::now();
    if (!copt_.validateOnDevice) {
      st = validateCells(cells, opt);
      if (!st.ok()) return st;
    }
    if (cells.n > 0x7fffffffull)
      return Status::error(ErrorCode::InvalidInput, "the CUDA backend handles at most 2^31 - 1 cells per solve, got " +
                                                        std::to_string(cells.n));
    stats_ = CudaStats{};
    stats_.secondsValidate = since(tv);
    st = ensureDevice();
    if (!st.ok()) {
      // bad cells are reported as such (as by the CPU backend) even where there is no device to check them on
      if (copt_.validateOnDevice) {
        const Status sc = validateCells(cells, opt);
        if (!sc.ok()) return sc;
      }
      return st;
    }
    stats_.device = deviceName_;
    const auto t0 = Clock::now();

    out.stats = SolveStats{};
    out.stats.threads = 1;
    const unsigned n = unsigned(cells.n);
    // resize (not assign): a poisoned vector stays poisoned wherever the backend fails to write
    out.potential.resize(n);
    if (opt.accelerations) {
      out.ax.resize(n); out.ay.resize(n); out.az.resize(n);
    } else {
      out.ax.clear(); out.ay.clear(); out.az.clear();
    }
    if (n == 0) {
      stats_.secondsTotal = out.stats.secondsTotal = since(t0);
      return Status::success();
    }
    cudaStream_t s = stream_;
    AG_CUDA_TRY(cudaEventRecord(events_[0], s));

    // ---- upload the caller's arrays (x, y, z, mass, size); x..mass are reused for the results later
    for (int k = 0; k < 5; ++k) AG_TRY(in_[k].reserve(n, "the input cells"));
    {
      const double* host[5] = {cells.x, cells.y, cells.z, cells.mass, cells.size};
      Transfer t[5];
      for (int k = 0; k < 5; ++k) t[k] = Transfer{const_cast<double*>(host[k]), in_[k].get(), std::size_t(n) * 8};
      AG_TRY(copyIn(t, 5));
    }
    AG_CUDA_TRY(cudaEventRecord(events_[1], s));

    // ---- root cube (chooseRootCube), length scale, keys, sort, gather
    AG_TRY(bounds_.reserve(7 * kBoundsBlocks + 7, "the bounds reduction"));
    AG_TRY(walkCounters_.reserve(kWalkCounterCount, "counters"));
    CellChecks checks;
    checks.hasBox = opt.hasBox;
    for (int d = 0; d < 3; ++d) {
      checks.boxLo[d] = opt.boxLo[d];
      checks.boxHi[d] = opt.boxHi[d];
    }
    checks.firstBad = walkCounters_.get();
    AG_CUDA_TRY(cudaMemsetAsync(checks.firstBad, 0xff, sizeof(unsigned), s));
    AG_TRY(launchBounds(in_[0].get(), in_[1].get(), in_[2].get(), in_[3].get(), in_[4].get(), n, checks,
                        bounds_.get(), bounds_.get() + 7 * kBoundsBlocks, s));
    double* hb = static_cast<double*>(small_.get());
    unsigned* hbad = reinterpret_cast<unsigned*>(hb + 8);
    AG_CUDA_TRY(cudaMemcpyAsync(hb, bounds_.get() + 7 * kBoundsBlocks, 7 * sizeof(double), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaMemcpyAsync(hbad, checks.firstBad, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    if (*hbad != 0xffffffffu) {
      // the host validator names the first bad cell exactly as the CPU backend does
      st = validateCells(cells, opt);
      if (!st.ok()) return st;
      if (copt_.validateOnDevice)
        return Status::error(ErrorCode::Internal, "CUDA backend: the device flagged cell " + std::to_string(*hbad) +
                                                      " as invalid but validateCells accepts it");
    }
    RootCube root;
    if (opt.hasBox) {
      root = chooseRootCube(cells, opt);  // the box: no pass over the cells
    } else {
      // chooseRootCube's reduction was done on the device (min/max are exact, so any order gives its values)
      double side = 0;
      for (int d = 0; d < 3; ++d) side = std::max(side, hb[3 + d] - hb[d]);
      if (!(side > 0)) side = 1;  // a single point mass
      for (int d = 0; d < 3; ++d) root.lo[d] = hb[d];
      root.side = side;
    }
    const double massTotal = hb[6];
    // as sortCellsByKey
    const double scale = std::exp2(-std::round(std::log2(root.side)));
    const double inv = double(kKeyCells) / root.side;
    for (auto* b : {&keys_, &keysSorted_}) AG_TRY(b->reserve(n, "Morton keys"));
    AG_TRY(idx_.reserve(n, "sort indices"));
    AG_TRY(order_.reserve(n, "sort indices"));
    AG_TRY(launchKeys(in_[0].get(), in_[1].get(), in_[2].get(), n, root.lo[0], root.lo[1], root.lo[2], inv,
                      keys_.get(), idx_.get(), s));
    std::size_t tempBytes = 0;
    AG_TRY(sortPairs(nullptr, tempBytes, keys_.get(), keysSorted_.get(), idx_.get(), order_.get(), n, s));
    AG_TRY(reserveCubTemp(tempBytes));
    tempBytes = cubTemp_.bytes();
    AG_TRY(sortPairs(cubTemp_.get(), tempBytes, keys_.get(), keysSorted_.get(), idx_.get(), order_.get(), n, s));
    AG_TRY(cells_.reserve(n, "sorted cells"));
    AG_TRY(size_.reserve(n, "sorted cell sizes"));
    AG_TRY(launchGather(in_[0].get(), in_[1].get(), in_[2].get(), in_[3].get(), in_[4].get(), order_.get(), n, scale,
                        cells_.get(), size_.get(), s));
    for (int d = 0; d < 3; ++d) root.lo[d] *= scale;
    root.side *= scale;
    const double massScale = powerOfTwoScale(massTotal);
    AG_CUDA_TRY(cudaEventRecord(events_[2], s));

    // ---- sums in sorted order
    const int nsum = opt.accelerations ? 4 : 1;
    for (int k = 0; k < nsum; ++k) AG_TRY(sum_[k].reserve(n, "the walk's sums"));
    double* g[3] = {nullptr, nullptr, nullptr};
    if (opt.accelerations)
      for (int d = 0; d < 3; ++d) g[d] = sum_[1 + d].get();
    if (copt_.poisonDevice)
      for (int k = 0; k < nsum; ++k) AG_TRY(launchPoison(sum_[k].get(), n, s));

    if (direct) {
      AG_CUDA_TRY(cudaEventRecord(events_[3], s));
      AG_CUDA_TRY(cudaEventRecord(events_[4], s));
      AG_TRY(launchDirect(cells_.get(), n, massScale, opt.accelerations, sum_[0].get(), g[0], g[1], g[2], s));
      out.stats.directInteractions = std::uint64_t(n) * (n - 1);
    } else {
      unsigned nodes = 0;
      int depth = 0;
      AG_TRY(buildTree(n, opt.leafSize, &nodes, &depth));
      AG_CUDA_TRY(cudaEventRecord(events_[3], s));
      AG_TRY(computeMoments(nodes, depth, root, opt, massScale));
      AG_CUDA_TRY(cudaEventRecord(events_[4], s));
      AG_TRY(walk(n, opt, massScale, g, out.stats));
      out.stats.nodes = nodes;
      out.stats.leaves = nodes - splitNodes_;
      out.stats.treeDepth = depth;
    }

    // ---- scale, self term, scatter to the caller's order (into the input buffers x, y, z, mass)
    const int nout = opt.accelerations ? 4 : 1;
    if (copt_.poisonDevice)
      for (int k = 0; k < nout; ++k) AG_TRY(launchPoison(in_[k].get(), n, s));
    FinishParams fp;
    fp.order = order_.get();
    fp.cells = cells_.get();
    fp.size = size_.get();
    fp.phi = sum_[0].get();
    fp.gx = g[0];
    fp.gy = g[1];
    fp.gz = g[2];
    fp.pot = in_[0].get();
    fp.ax = in_[1].get();
    fp.ay = in_[2].get();
    fp.az = in_[3].get();
    fp.n = n;
    fp.invMassScale = 1.0 / massScale;
    fp.scale = scale;
    fp.G = opt.G;
    fp.selfPotential = opt.selfPotential;
    AG_TRY(launchFinish(fp, opt.accelerations, s));
    AG_CUDA_TRY(cudaEventRecord(events_[5], s));

    // ---- download
    const auto td = Clock::now();
    {
      double* host[4] = {out.potential.data(), opt.accelerations ? out.ax.data() : nullptr,
                         opt.accelerations ? out.ay.data() : nullptr, opt.accelerations ? out.az.data() : nullptr};
      Transfer t[4];
      for (int k = 0; k < nout; ++k) t[k] = Transfer{host[k], in_[k].get(), std::size_t(n) * 8};
      AG_TRY(copyOut(t, nout));
    }
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    stats_.secondsDownload = since(td);

    stats_.secondsUpload = elapsed(0, 1);
    stats_.secondsKeys = elapsed(1, 2);
    stats_.secondsBuild = direct ? 0 : elapsed(2, 3);
    stats_.secondsMoments = direct ? 0 : elapsed(3, 4);
    stats_.secondsWalk = elapsed(4, 5);
    stats_.secondsTotal = since(t0);
    stats_.deviceBytes = deviceBytes();
    stats_.deviceBytesPerCell = double(stats_.deviceBytes) / double(n);
    stats_.pinnedBytes = staging_->pinnedBytes() + small_.bytes();
    out.stats.secondsKeys = stats_.secondsKeys;
    out.stats.secondsBuild = stats_.secondsBuild;
    out.stats.secondsMoments = stats_.secondsMoments;
    out.stats.secondsWalk = stats_.secondsWalk;
    out.stats.secondsTotal = stats_.secondsTotal;
    out.stats.secondsUpload = stats_.secondsUpload;
    out.stats.secondsDownload = stats_.secondsDownload;
    out.stats.deviceBytesPerCell = stats_.deviceBytesPerCell;
    return Status::success();
  }

  int copyThreads() const {
    if (copt_.copyThreads > 0) return std::min(copt_.copyThreads, 64);
    return std::max(1, std::min(8, resolveThreadCount(0) / 2));
  }

  Status copyIn(const Transfer* t, int count) {
    if (copt_.pinnedStaging) {
      AG_TRY(staging_->prepare(copt_.stagingChunkBytes, copyThreads(), device_));
      return staging_->upload(t, count, stream_);
    }
    for (int k = 0; k < count; ++k)
      AG_CUDA_TRY(cudaMemcpyAsync(t[k].device, t[k].host, t[k].bytes, cudaMemcpyHostToDevice, stream_));
    return Status::success();
  }

  Status copyOut(const Transfer* t, int count) {
    if (copt_.pinnedStaging) {
      AG_TRY(staging_->prepare(copt_.stagingChunkBytes, copyThreads(), device_));
      return staging_->download(t, count, stream_);
    }
    for (int k = 0; k < count; ++k)
      AG_CUDA_TRY(cudaMemcpyAsync(t[k].host, t[k].device, t[k].bytes, cudaMemcpyDeviceToHost, stream_));
    AG_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::success();
  }

  /// Octree topology, one level per pass (see kernel_build.cu). levelStart_[L] = first node of level L, with a
  /// final entry = node count.
  Status buildTree(unsigned n, int leafSize, unsigned* nodesOut, int* depthOut) {
    cudaStream_t s = stream_;
    AG_TRY(topo_.reserve(std::max<std::size_t>(1024, n / 2), "tree nodes"));
    AG_TRY(tally_.reserve(4, "counters"));
    AG_CUDA_TRY(cudaMemsetAsync(tally_.get(), 0, 4 * sizeof(unsigned long long), s));
    AG_TRY(launchSetRoot(topo_.get(), n, s));
    levelStart_.assign(1, 0u);
    unsigned levelBegin = 0, levelEnd = 1;
    int level = 0;
    unsigned* total = static_cast<unsigned*>(small_.get());
    for (;;) {
      const unsigned width = levelEnd - levelBegin;
      AG_TRY(levelCount_.reserve(width + 1, "level scratch"));
      AG_TRY(levelOffset_.reserve(width + 1, "level scratch"));
      AG_TRY(launchCountChildren(topo_.get(), keysSorted_.get(), levelBegin, width, level, leafSize,
                                 levelCount_.get(), tally_.get() + 2, s));
      std::size_t tempBytes = 0;
      AG_TRY(scanExclusive(nullptr, tempBytes, levelCount_.get(), levelOffset_.get(), width + 1, s));
      AG_TRY(reserveCubTemp(tempBytes));
      tempBytes = cubTemp_.bytes();
      AG_TRY(scanExclusive(cubTemp_.get(), tempBytes, levelCount_.get(), levelOffset_.get(), width + 1, s));
      AG_CUDA_TRY(cudaMemcpyAsync(total, levelOffset_.get() + width, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
      AG_CUDA_TRY(cudaStreamSynchronize(s));
      const unsigned children = *total;
      if (children == 0) break;
      if (std::uint64_t(levelEnd) + children > 0xffffffffull)
        return Status::error(ErrorCode::InvalidInput, "CUDA backend: the octree would have more than 2^32 - 1 nodes");
      AG_TRY(topo_.reservePreserve(std::size_t(levelEnd) + children, levelEnd, s, "tree nodes"));
      AG_TRY(launchEmitChildren(topo_.get(), keysSorted_.get(), levelBegin, width, level, leafSize,
                                levelOffset_.get(), levelEnd, s));
      levelStart_.push_back(levelEnd);
      levelBegin = levelEnd;
      levelEnd += children;
      ++level;
    }
    levelStart_.push_back(levelEnd);
    *nodesOut = levelEnd;
    *depthOut = level;
    return Status::success();
  }

  Status computeMoments(unsigned nodes, int depth, const RootCube& root, const SolveOptions& opt, double massScale) {
    AG_TRY(moments_.reserve(nodes, "node moments"));
    AG_TRY(nodeMac_.reserve(nodes, "node MAC records"));
    AG_TRY(nodeMQ_.reserve(2 * std::size_t(nodes), "node multipoles"));
    MomentsParams p;
    p.topo = topo_.get();
    p.keys = keysSorted_.get();
    p.cells = cells_.get();
    p.size = size_.get();
    p.moments = moments_.get();
    p.nodeMac = nodeMac_.get();
    p.nodeMQ = nodeMQ_.get();
    for (int d = 0; d < 3; ++d) p.rootLo[d] = root.lo[d];
    p.rootSide = root.side;
    p.theta = opt.theta;
    p.mac = int(opt.mac);
    p.massScale = massScale;
    for (int level = depth; level >= 0; --level)
      AG_TRY(launchMomentsLevel(p, levelStart_[level], levelStart_[level + 1], level, stream_));
    return Status::success();
  }

  Status walk(unsigned n, const SolveOptions& opt, double massScale, double* const* g, SolveStats& st) {
    cudaStream_t s = stream_;
    WalkConfig cfg;
    cfg.order = opt.order;
    cfg.accelerations = opt.accelerations;
    cfg.cellsPerLane = opt.groupSize > 32 ? 2 : 1;
    cfg.vote = opt.walk == WalkKind::Vote;
    const unsigned groupSize = unsigned(opt.groupSize);
    const unsigned numGroups = (n + groupSize - 1) / groupSize;
    int perSm = 1;
    AG_TRY(walkBlocksPerSm(cfg, &perSm));
    const unsigned long long wanted = (numGroups + kWalkWarpsPerBlock - 1) / kWalkWarpsPerBlock;
    const int blocks = int(std::max<unsigned long long>(1, std::min<unsigned long long>(wanted, 1ull * smCount_ * perSm)));
    const unsigned warps = unsigned(blocks) * kWalkWarpsPerBlock;
    if (queueCap_ == 0) queueCap_ = nextPow2(std::max(64u, copt_.initialQueueCapacity));
    AG_TRY(walkCounters_.reserve(kWalkCounterCount, "walk counters"));

    WalkParams p;
    p.cells = cells_.get();
    p.size = size_.get();
    p.nodeMac = nodeMac_.get();
    p.nodeMQ = nodeMQ_.get();
    p.topo = topo_.get();
    p.n = n;
    p.groupSize = groupSize;
    p.numGroups = numGroups;
    p.massScale = massScale;
    p.counters = walkCounters_.get();
    p.interactions = tally_.get();
    p.phi = sum_[0].get();
    p.gx = g[0];
    p.gy = g[1];
    p.gz = g[2];

    unsigned* hc = static_cast<unsigned*>(small_.get());
    unsigned long long* ht = reinterpret_cast<unsigned long long*>(static_cast<char*>(small_.get()) + 64);
    for (int launch = 1;; ++launch) {
      AG_TRY(queue_.reserve(std::size_t(warps) * queueCap_, "the walk queues"));
      p.queue = queue_.get();
      p.queueCap = queueCap_;
      AG_CUDA_TRY(cudaMemsetAsync(walkCounters_.get(), 0, kWalkCounterCount * sizeof(unsigned), s));
      AG_CUDA_TRY(cudaMemsetAsync(tally_.get(), 0, 2 * sizeof(unsigned long long), s));  // keeps [2]: split nodes
      AG_TRY(launchWalk(cfg, p, blocks, s));
      AG_CUDA_TRY(cudaMemcpyAsync(hc, walkCounters_.get(), kWalkCounterCount * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
      AG_CUDA_TRY(cudaMemcpyAsync(ht, tally_.get(), 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
      AG_CUDA_TRY(cudaStreamSynchronize(s));
      stats_.walkLaunches = launch;
      stats_.queueCapacity = queueCap_;
      stats_.queuePeak = hc[kQueuePeak];
      if (hc[kOverflowNeed] == 0) break;
      if (queueCap_ >= (1u << 24))
        return Status::error(ErrorCode::Internal, "CUDA backend: the walk queue would need more than 2^24 entries "
                                                  "per warp (" + std::to_string(hc[kOverflowNeed]) + ")");
      queueCap_ = std::max(2 * queueCap_, nextPow2(hc[kOverflowNeed]));
    }
    stats_.walkBlocks = blocks;
    stats_.walkWarps = int(warps);
    st.approxInteractions = ht[0];
    st.directInteractions = ht[1];
    st.groups = numGroups;
    splitNodes_ = ht[2];  // counted by the build; leaves = nodes - split nodes
    return Status::success();
  }

  mutable std::mutex mu_;
  CudaOptions copt_;
  CudaStats stats_;
  bool ready_ = false;
  int device_ = -1, smCount_ = 0;
  std::string deviceName_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t events_[kEvents] = {};
  unsigned queueCap_ = 0;
  unsigned long long splitNodes_ = 0;
  std::vector<unsigned> levelStart_;

  DeviceBuffer<double> in_[5];   ///< caller's x, y, z, mass, size; then the results pot, ax, ay, az
  DeviceBuffer<double> sum_[4];  ///< phi, gx, gy, gz in sorted order
  DeviceBuffer<double> size_, bounds_;
  DeviceBuffer<std::uint64_t> keys_, keysSorted_;
  DeviceBuffer<std::uint32_t> idx_, order_;
  DeviceBuffer<D4> cells_;
  DeviceBuffer<unsigned char> cubTemp_;
  DeviceBuffer<uint4> topo_;
  DeviceBuffer<unsigned> levelCount_, levelOffset_;
  DeviceBuffer<NodeMoments> moments_;
  DeviceBuffer<D4> nodeMac_;
  DeviceBuffer<float4> nodeMQ_;
  DeviceBuffer<unsigned> queue_, walkCounters_;
  DeviceBuffer<unsigned long long> tally_;  ///< [0] approx, [1] direct interactions, [2] split nodes
  std::unique_ptr<StagingRing> staging_ = std::make_unique<StagingRing>();
  PinnedBuffer small_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Backend> makeCudaBackend() { return std::make_unique<cuda::CudaBackendImpl>(CudaOptions{}); }

std::unique_ptr<CudaBackend> makeCudaBackend(const CudaOptions& options) {
  return std::make_unique<cuda::CudaBackendImpl>(options);
}

bool cudaDeviceAvailable(std::string* why) {
  const Status st = cuda::checkDevice(0, nullptr);
  if (!st.ok() && why) *why = st.message;
  return st.ok();
}

}  // namespace amrgrav
