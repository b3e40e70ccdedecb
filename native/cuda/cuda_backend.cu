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

#include "core/ewald_walk.h"
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

/// Hands out aligned pieces of a device region that is dead during the current phase (owns nothing): the input
/// buffers after the gather and the sort's spare halves hold the node data, sums and walk queues, so a solve
/// needs about half the device memory it would with a buffer per array.
struct Carve {
  char* base = nullptr;
  std::size_t bytes = 0, used = 0;
  Carve() = default;
  Carve(void* b, std::size_t n) : base(static_cast<char*>(b)), bytes(n) {}
  template <class T>
  T* take(std::size_t count) {
    const std::size_t off = (used + 255) & ~std::size_t(255);
    if (!base || off + count * sizeof(T) > bytes) return nullptr;
    used = off + count * sizeof(T);
    return reinterpret_cast<T*>(base + off);
  }
};

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
    for (auto* b : {&inputs_, &accSum_[0], &accSum_[1], &accSum_[2], &size_, &bounds_}) b->release();
    keys_.release(); idx_.release();
    cells_.release(); cubTemp_.release(); topo_.release(); levelCount_.release(); levelOffset_.release();
    moments_.release(); nodeMac_.release(); nodeMQ_.release(); queue_.release(); walkCounters_.release();
    tally_.release();
    ewaldCoef_.release();
    ewaldTable_.reset();
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
    b += inputs_.bytes();
    for (int k = 0; k < 3; ++k) b += accSum_[k].bytes();
    b += size_.bytes() + bounds_.bytes() + keys_.bytes() + idx_.bytes();
    b += cells_.bytes() + cubTemp_.bytes() + topo_.bytes() + levelCount_.bytes() + levelOffset_.bytes();
    b += moments_.bytes() + nodeMac_.bytes() + nodeMQ_.bytes() + queue_.bytes() + walkCounters_.bytes() +
         tally_.bytes() + ewaldCoef_.bytes();
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
    if (direct && !(st = validateDirectOptions(opt)).ok()) return st;
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
    const ResultTargets dest = out.targets(n, opt.accelerations);
    if (n == 0) {
      stats_.secondsTotal = out.stats.secondsTotal = since(t0);
      return Status::success();
    }
    cudaStream_t s = stream_;
    AG_CUDA_TRY(cudaEventRecord(events_[0], s));

    // ---- upload the caller's arrays (x, y, z, mass, size) into one block; after the gather it is scratch (node
    //      data), and the results are written to its start
    AG_TRY(inputs_.reserve(5 * std::size_t(n), "the input cells"));
    double* in[5];
    for (int k = 0; k < 5; ++k) in[k] = inputs_.get() + std::size_t(k) * n;
    {
      const double* host[5] = {cells.x, cells.y, cells.z, cells.mass, cells.size};
      Transfer t[5];
      for (int k = 0; k < 5; ++k) t[k] = Transfer{const_cast<double*>(host[k]), in[k], std::size_t(n) * 8};
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
    AG_TRY(launchBounds(in[0], in[1], in[2], in[3], in[4], n, checks,
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
    // keys and indices live in two halves each (CUB's double buffer); the halves not holding the sorted result
    // are scratch afterwards (the sums, the walk queues)
    AG_TRY(keys_.reserve(2 * std::size_t(n), "Morton keys"));
    AG_TRY(idx_.reserve(2 * std::size_t(n), "sort indices"));
    std::uint64_t* keyHalf[2] = {keys_.get(), keys_.get() + n};
    std::uint32_t* idxHalf[2] = {idx_.get(), idx_.get() + n};
    AG_TRY(launchKeys(in[0], in[1], in[2], n, root.lo[0], root.lo[1], root.lo[2], inv, keyHalf[0], idxHalf[0], s));
    std::size_t tempBytes = 0;
    int sel = 0;
    AG_TRY(sortPairs(nullptr, tempBytes, keyHalf, idxHalf, n, &sel, s));
    AG_TRY(reserveCubTemp(tempBytes));
    tempBytes = cubTemp_.bytes();
    AG_TRY(sortPairs(cubTemp_.get(), tempBytes, keyHalf, idxHalf, n, &sel, s));
    sortedKeys_ = keyHalf[sel];
    order_ = idxHalf[sel];
    keySpare_ = Carve(keyHalf[1 - sel], std::size_t(n) * sizeof(std::uint64_t));
    idxSpare_ = Carve(idxHalf[1 - sel], std::size_t(n) * sizeof(std::uint32_t));
    AG_TRY(cells_.reserve(n, "sorted cells"));
    AG_TRY(size_.reserve(n, "sorted cell sizes"));
    AG_TRY(launchGather(in[0], in[1], in[2], in[3], in[4], order_, n, scale, cells_.get(), size_.get(), s));
    // from here on the input block is scratch: node data in its first four fifths (where the results go last),
    // the tree topology in its last fifth (read by the walk, which ends before the results are written)
    for (int d = 0; d < 3; ++d) root.lo[d] *= scale;
    root.side *= scale;
    const double massScale = powerOfTwoScale(massTotal);
    AG_CUDA_TRY(cudaEventRecord(events_[2], s));

    // ---- sums in sorted order
    // phi in the sort's spare key half; the acceleration sums in buffers of their own (the results overwrite the
    // input block, so sums cannot live there)
    double* sums[4] = {keySpare_.take<double>(n), nullptr, nullptr, nullptr};
    if (!sums[0]) return Status::error(ErrorCode::Internal, "CUDA backend: no room for the potential sums");
    const int nsum = opt.accelerations ? 4 : 1;
    for (int k = 1; k < nsum; ++k) {
      AG_TRY(accSum_[k - 1].reserve(n, "the walk's acceleration sums"));
      sums[k] = accSum_[k - 1].get();
    }
    double* g[3] = {sums[1], sums[2], sums[3]};
    if (copt_.poisonDevice)
      for (int k = 0; k < nsum; ++k) AG_TRY(launchPoison(sums[k], n, s));

    if (direct) {
      AG_CUDA_TRY(cudaEventRecord(events_[3], s));
      AG_CUDA_TRY(cudaEventRecord(events_[4], s));
      AG_TRY(launchDirect(cells_.get(), n, massScale, opt.accelerations, sums[0], g[0], g[1], g[2], s));
      out.stats.directInteractions = std::uint64_t(n) * (n - 1);
    } else {
      unsigned nodes = 0;
      int depth = 0;
      AG_TRY(buildTree(n, opt.leafSize, &nodes, &depth));
      AG_CUDA_TRY(cudaEventRecord(events_[3], s));
      AG_TRY(computeMoments(n, nodes, depth, root, opt, massScale));
      if (opt.anyPeriodic()) AG_TRY(prepareEwald(opt, scale, out.stats));  // host table work overlaps the moments
      AG_CUDA_TRY(cudaEventRecord(events_[4], s));
      AG_TRY(walk(n, opt, massScale, sums[0], g, out.stats));
      out.stats.nodes = nodes;
      out.stats.leaves = nodes - splitNodes_;
      out.stats.treeDepth = depth;
    }

    // ---- scale, self term, scatter to the caller's order (into the input buffers x, y, z, mass)
    const int nout = opt.accelerations ? 4 : 1;
    if (copt_.poisonDevice)
      for (int k = 0; k < nout; ++k) AG_TRY(launchPoison(in[k], n, s));
    FinishParams fp;
    fp.order = order_;
    fp.cells = cells_.get();
    fp.size = size_.get();
    fp.phi = sums[0];
    fp.gx = g[0];
    fp.gy = g[1];
    fp.gz = g[2];
    fp.pot = in[0];
    fp.ax = in[1];
    fp.ay = in[2];
    fp.az = in[3];
    fp.n = n;
    fp.invMassScale = 1.0 / massScale;
    fp.scale = scale;
    fp.G = opt.G;
    fp.selfCoefficient = selfCoefficient(opt.selfPotential);
    AG_TRY(launchFinish(fp, opt.accelerations, s));
    AG_CUDA_TRY(cudaEventRecord(events_[5], s));

    // ---- download
    const auto td = Clock::now();
    {
      double* host[4] = {dest.potential, dest.ax, dest.ay, dest.az};
      Transfer t[4];
      for (int k = 0; k < nout; ++k) t[k] = Transfer{host[k], in[k], std::size_t(n) * 8};
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
  /// Room for `need` nodes of topology, keeping the first `used`: in the input block's last fifth while they fit
  /// (n/2 nodes), else in a buffer of its own.
  Status reserveTopo(std::size_t need, std::size_t used, unsigned n) {
    if (used == 0) {
      topoPtr_ = reinterpret_cast<uint4*>(inputs_.get() + 4 * std::size_t(n));
      topoCap_ = std::size_t(n) * sizeof(double) / sizeof(uint4);
    }
    if (need <= topoCap_) return Status::success();
    if (topoPtr_ == topo_.get()) {
      AG_TRY(topo_.reservePreserve(need, used, stream_, "tree nodes"));
    } else {
      AG_TRY(topo_.reserve(std::max<std::size_t>(need, 1024), "tree nodes"));
      if (used > 0)
        AG_CUDA_TRY(cudaMemcpyAsync(topo_.get(), topoPtr_, used * sizeof(uint4), cudaMemcpyDeviceToDevice, stream_));
    }
    topoPtr_ = topo_.get();
    topoCap_ = topo_.capacity();
    return Status::success();
  }

  Status buildTree(unsigned n, int leafSize, unsigned* nodesOut, int* depthOut) {
    cudaStream_t s = stream_;
    AG_TRY(reserveTopo(1, 0, n));
    AG_TRY(tally_.reserve(4, "counters"));
    AG_CUDA_TRY(cudaMemsetAsync(tally_.get(), 0, 4 * sizeof(unsigned long long), s));
    AG_TRY(launchSetRoot(topoPtr_, n, s));
    levelStart_.assign(1, 0u);
    unsigned levelBegin = 0, levelEnd = 1;
    int level = 0;
    unsigned* total = static_cast<unsigned*>(small_.get());
    for (;;) {
      const unsigned width = levelEnd - levelBegin;
      AG_TRY(levelCount_.reserve(width + 1, "level scratch"));
      AG_TRY(levelOffset_.reserve(width + 1, "level scratch"));
      AG_TRY(launchCountChildren(topoPtr_, sortedKeys_, levelBegin, width, level, leafSize,
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
      AG_TRY(reserveTopo(std::size_t(levelEnd) + children, levelEnd, n));
      AG_TRY(launchEmitChildren(topoPtr_, sortedKeys_, levelBegin, width, level, leafSize,
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

  Status computeMoments(unsigned n, unsigned nodes, int depth, const RootCube& root, const SolveOptions& opt,
                        double massScale) {
    // in the input block's first four fifths when they fit (uniform grids: 0.14 nodes per cell), else own buffers
    Carve room(inputs_.get(), 4 * std::size_t(n) * sizeof(double));
    NodeMoments* moments = room.take<NodeMoments>(nodes);
    if (!moments) {
      AG_TRY(moments_.reserve(nodes, "node moments"));
      moments = moments_.get();
    }
    nodeMacPtr_ = room.take<D4>(nodes);
    if (!nodeMacPtr_) {
      AG_TRY(nodeMac_.reserve(nodes, "node MAC records"));
      nodeMacPtr_ = nodeMac_.get();
    }
    nodeMQPtr_ = room.take<float4>(2 * std::size_t(nodes));
    if (!nodeMQPtr_) {
      AG_TRY(nodeMQ_.reserve(2 * std::size_t(nodes), "node multipoles"));
      nodeMQPtr_ = nodeMQ_.get();
    }
    MomentsParams p;
    p.topo = topoPtr_;
    p.keys = sortedKeys_;
    p.cells = cells_.get();
    p.size = size_.get();
    p.moments = moments;
    p.nodeMac = nodeMacPtr_;
    p.nodeMQ = nodeMQPtr_;
    for (int d = 0; d < 3; ++d) p.rootLo[d] = root.lo[d];
    p.rootSide = root.side;
    p.theta = opt.theta;
    p.mac = int(opt.mac);
    p.massScale = massScale;
    for (int level = depth; level >= 0; --level)
      AG_TRY(launchMomentsLevel(p, levelStart_[level], levelStart_[level + 1], level, stream_));
    return Status::success();
  }

  /// The Ewald table for this box (core/ewald_walk.h: memory, disk cache or build) and its float copy on the
  /// device, uploaded once per table; fills ewaldView_ in the walk's scaled lengths.
  Status prepareEwald(const SolveOptions& opt, double scale, SolveStats& st) {
    EwaldWalk ew;
    AG_TRY(prepareEwaldTable(opt, scale, resolveThreadCount(opt.threads), ew, st));
    if (ew.table.get() != ewaldTable_.get()) {
      const std::vector<double>& c = ew.table->coef;
      std::vector<float> f(c.begin(), c.end());
      AG_TRY(ewaldCoef_.reserve(f.size(), "the Ewald table"));
      AG_CUDA_TRY(cudaMemcpyAsync(ewaldCoef_.get(), f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice,
                                  stream_));
      AG_CUDA_TRY(cudaStreamSynchronize(stream_));  // f is freed on return
      ewaldTable_ = ew.table;
    }
    EwaldDeviceView& v = ewaldView_;
    v.coef = ewaldCoef_.get();
    v.invUnit = ew.view.invUnit;
    for (int d = 0; d < 3; ++d) {
      v.n[d] = ew.view.n[d];
      v.h[d] = ew.view.h[d];
      v.invH[d] = ew.view.invH[d];
      v.period[d] = ew.view.period[d];
      v.invPeriod[d] = ew.view.invPeriod[d];
      v.reach[d] = ew.view.reach[d];
    }
    return Status::success();
  }

  Status walk(unsigned n, const SolveOptions& opt, double massScale, double* phi, double* const* g, SolveStats& st) {
    WalkConfig cfg;
    cfg.order = opt.order;
    cfg.accelerations = opt.accelerations;
    cfg.cellsPerLane = opt.groupSize > 32 ? 2 : 1;
    cfg.vote = opt.walk == WalkKind::Vote;
    cfg.periodic = opt.anyPeriodic();
    const unsigned groupSize = unsigned(opt.groupSize);
    const unsigned numGroups = (n + groupSize - 1) / groupSize;
    if (queueCap_ == 0) queueCap_ = nextPow2(std::max(64u, copt_.initialQueueCapacity));
    AG_TRY(walkCounters_.reserve(kWalkCounterCount, "walk counters"));

    WalkParams p;
    p.cells = cells_.get();
    p.size = size_.get();
    p.nodeMac = nodeMacPtr_;
    p.nodeMQ = nodeMQPtr_;
    p.topo = topoPtr_;
    p.n = n;
    p.groupSize = groupSize;
    p.numGroups = numGroups;
    p.massScale = massScale;
    p.counters = walkCounters_.get();
    p.interactions = tally_.get();
    p.phi = phi;
    p.gx = g[0];
    p.gy = g[1];
    p.gz = g[2];
    if (cfg.periodic) p.ewald = ewaldView_;
    p.ewaldExpansion = opt.ewaldExpansion;

    // periodic: the groups that expand the Ewald correction, then (if any are left) the others (kernels.h)
    WalkTally total;
    stats_.walkLaunches = 0;
    if (!cfg.periodic || opt.ewaldExpansion) AG_TRY(walkPass(cfg, p, total));
    if (cfg.periodic && (!opt.ewaldExpansion || total.skipped > 0)) {
      cfg.perCellEwald = true;
      AG_TRY(walkPass(cfg, p, total));
    }
    st.approxInteractions = total.approx;
    st.directInteractions = total.direct;
    st.groups = numGroups;
    return Status::success();
  }

  struct WalkTally {
    unsigned long long approx = 0, direct = 0;
    unsigned skipped = 0;
  };

  /// One walk kernel over all groups (the ones it owns), rerun with larger queues until none overflows.
  Status walkPass(const WalkConfig& cfg, WalkParams& p, WalkTally& total) {
    cudaStream_t s = stream_;
    int perSm = 1;
    AG_TRY(walkBlocksPerSm(cfg, &perSm));
    const unsigned long long wanted = (p.numGroups + kWalkWarpsPerBlock - 1) / kWalkWarpsPerBlock;
    const int blocks = int(std::max<unsigned long long>(1, std::min<unsigned long long>(wanted, 1ull * smCount_ * perSm)));
    const unsigned warps = unsigned(blocks) * kWalkWarpsPerBlock;
    unsigned* hc = static_cast<unsigned*>(small_.get());
    unsigned long long* ht = reinterpret_cast<unsigned long long*>(static_cast<char*>(small_.get()) + 64);
    for (;;) {
      // the queues in the sort's spare index half when they fit, else a buffer of their own
      const std::size_t queueEntries = std::size_t(warps) * queueCap_;
      if (queueEntries <= idxSpare_.bytes / sizeof(unsigned)) {
        p.queue = reinterpret_cast<unsigned*>(idxSpare_.base);
      } else {
        AG_TRY(queue_.reserve(queueEntries, "the walk queues"));
        p.queue = queue_.get();
      }
      p.queueCap = queueCap_;
      AG_CUDA_TRY(cudaMemsetAsync(walkCounters_.get(), 0, kWalkCounterCount * sizeof(unsigned), s));
      AG_CUDA_TRY(cudaMemsetAsync(tally_.get(), 0, 2 * sizeof(unsigned long long), s));  // keeps [2]: split nodes
      AG_TRY(launchWalk(cfg, p, blocks, s));
      AG_CUDA_TRY(cudaMemcpyAsync(hc, walkCounters_.get(), kWalkCounterCount * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
      AG_CUDA_TRY(cudaMemcpyAsync(ht, tally_.get(), 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
      AG_CUDA_TRY(cudaStreamSynchronize(s));
      ++stats_.walkLaunches;
      stats_.queueCapacity = queueCap_;
      stats_.queuePeak = std::max(stats_.queuePeak, hc[kQueuePeak]);
      if (hc[kOverflowNeed] == 0) break;
      if (queueCap_ >= (1u << 24))
        return Status::error(ErrorCode::Internal, "CUDA backend: the walk queue would need more than 2^24 entries "
                                                  "per warp (" + std::to_string(hc[kOverflowNeed]) + ")");
      queueCap_ = std::max(2 * queueCap_, nextPow2(hc[kOverflowNeed]));
    }
    stats_.walkBlocks = blocks;
    stats_.walkWarps = int(warps);
    total.approx += ht[0];
    total.direct += ht[1];
    total.skipped = hc[kSkippedGroups];
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

  // Device memory. Buffers marked (*) are used only when the scratch regions have no room for them.
  DeviceBuffer<double> inputs_;  ///< caller's x, y, z, mass, size (5 n); then scratch; last the results pot, ax, ay, az
  DeviceBuffer<double> accSum_[3];  ///< gx, gy, gz sums in sorted order (phi is in keySpare_)
  DeviceBuffer<double> size_, bounds_;
  DeviceBuffer<std::uint64_t> keys_;  ///< 2 n: the sort's double buffer
  DeviceBuffer<std::uint32_t> idx_;   ///< 2 n: likewise
  std::uint64_t* sortedKeys_ = nullptr;  ///< the half of keys_ holding the sorted keys
  std::uint32_t* order_ = nullptr;       ///< the half of idx_ holding sorted position -> caller's index
  Carve keySpare_, idxSpare_;            ///< the other halves: phi, the walk queues
  uint4* topoPtr_ = nullptr;             ///< node topology (input block's last fifth, or topo_)
  std::size_t topoCap_ = 0;
  D4* nodeMacPtr_ = nullptr;             ///< node MAC records (input block, or nodeMac_)
  float4* nodeMQPtr_ = nullptr;          ///< node multipoles (input block, or nodeMQ_)
  DeviceBuffer<D4> cells_;
  DeviceBuffer<unsigned char> cubTemp_;
  DeviceBuffer<uint4> topo_;  ///< (*)
  DeviceBuffer<unsigned> levelCount_, levelOffset_;
  DeviceBuffer<NodeMoments> moments_;  ///< (*)
  DeviceBuffer<D4> nodeMac_;            ///< (*)
  DeviceBuffer<float4> nodeMQ_;         ///< (*)
  DeviceBuffer<unsigned> queue_;        ///< (*)
  DeviceBuffer<unsigned> walkCounters_;
  DeviceBuffer<unsigned long long> tally_;  ///< [0] approx, [1] direct interactions, [2] split nodes
  DeviceBuffer<float> ewaldCoef_;           ///< periodic solves: the Ewald table's coefficients as float
  std::shared_ptr<const EwaldTable> ewaldTable_;  ///< the table ewaldCoef_ holds (uploaded once)
  EwaldDeviceView ewaldView_;
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
