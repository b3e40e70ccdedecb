/// \file cuda_backend.cu
/// \brief The CUDA backend's solve: validateOptions on the host, then on the device: upload, root-cube bounds
/// (which also checks every cell as validateCells does; on a failure validateCells itself runs on the host and
/// its Status is returned), Morton keys, stable sort, octree topology level by level, the gather in place into
/// sorted scaled cells, moments bottom-up, the group walk (or the direct kernel), scaling and scatter, download.
/// Each step follows cpu_backend.cpp; the kernels live in kernel_*.cu. All per-cell data shares one device block
/// (BlockLayout: about 60 bytes per cell for a potential solve).
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

/// Hands out aligned pieces of a device region that is dead during the current phase (owns nothing).
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

std::size_t alignUp(std::size_t bytes) { return (bytes + 255) & ~std::size_t(255); }

/// `count` elements carved from `room` when it has them, else from the buffer `own` (the (*) buffers below).
template <class T>
Status carveOrReserve(Carve& room, DeviceBuffer<T>& own, std::size_t count, const char* what, T*& out) {
  out = room.take<T>(count);
  if (out) return Status::success();
  AG_TRY(own.reserve(std::max<std::size_t>(count, 1), what));
  out = own.get();
  return Status::success();
}

/// The solve's one device block, as byte offsets: two index halves of n uint32, six slots of n doubles, then extra
/// bytes; the tail is slot 5 and the extra bytes. Who owns what, phase by phase (I = the index half not holding
/// the sort's result, "order" the one holding it):
///
///   phase                     slots 0-3            slot 4      index halves        slot 5       extra bytes
///   upload, keys, sort        x, y, z, size        keys        indices             keys         -
///   mass upload, build        x, y, z, size        sorted keys order; I: topology  mass         level scratch
///   node keys                 x, y, z, size        sorted keys order; I: + node keys
///   gather (rotating)         y, z, size, mass     x           (as above)          free         free
///   moments                   y, z, size, mass     x           (as above)          MAC records, multipoles, the
///                                                                                  moments above the deepest level
///   walk                      y, z, self term ->   x           order; I: topology, MAC records, multipoles, queues
///                             phi, mass                        group sizes
///   direct                    y, z, size, mass     x           order               phi
///   finish (scatter)          ax, ay, phi, az      pot         order               (phi of the direct path)
///
/// The sums of the accelerations are buffers of their own. With the extra bytes sized for 1/7 node per cell (a
/// uniform grid's octree) and this device's walk queues, a potential solve needs about 60 bytes per cell.
struct BlockLayout {
  std::size_t idx[2] = {0, 0};
  std::size_t slot[6] = {0, 0, 0, 0, 0, 0};
  std::size_t extra = 0, total = 0;
};

/// The layout for n cells with a tail (slot 5 onwards) of at least tailBytes.
BlockLayout layoutFor(unsigned n, std::size_t tailBytes) {
  BlockLayout L;
  std::size_t off = 0;
  for (int h = 0; h < 2; ++h) {
    L.idx[h] = off;
    off = alignUp(off + std::size_t(n) * sizeof(std::uint32_t));
  }
  for (int k = 0; k < 6; ++k) {
    L.slot[k] = off;
    off = alignUp(off + std::size_t(n) * sizeof(double));
  }
  L.extra = off;
  L.total = L.slot[5] + std::max(off - L.slot[5], alignUp(tailBytes));
  return L;
}

constexpr int kEvents = 8;  // start, uploaded, sorted, gathered, moments, walked, mass uploaded, built

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
    for (auto* b : {&block_, &accSum_[0], &accSum_[1], &accSum_[2], &bounds_}) b->release();
    cubTemp_.release(); topo_.release(); levelCount_.release(); levelOffset_.release(); nodeKeys_.release();
    groupHmin_.release();
    moments_.release(); nodeMac_.release(); nodeMQ_.release(); queue_.release(); queueTag_.release();
    walkCounters_.release();
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
    b += block_.bytes();
    for (int k = 0; k < 3; ++k) b += accSum_[k].bytes();
    b += bounds_.bytes() + nodeKeys_.bytes() + groupHmin_.bytes();
    b += cubTemp_.bytes() + topo_.bytes() + levelCount_.bytes() + levelOffset_.bytes();
    b += moments_.bytes() + nodeMac_.bytes() + nodeMQ_.bytes() + queue_.bytes() + queueTag_.bytes() +
         walkCounters_.bytes() +
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

  /// The device flagged cell `bad`: the host validator names the first bad cell exactly as the CPU backend does.
  Status flaggedCell(unsigned bad, const CellsView& cells, const SolveOptions& opt) const {
    const Status st = validateCells(cells, opt);
    if (!st.ok()) return st;
    if (copt_.validateOnDevice)
      return Status::error(ErrorCode::Internal, "CUDA backend: the device flagged cell " + std::to_string(bad) +
                                                    " as invalid but validateCells accepts it");
    return Status::success();
  }

  /// The walk's launch: its configuration and block count (every block resident); sets the initial queue capacity.
  Status walkShape(unsigned n, const SolveOptions& opt, WalkConfig* cfg, int* blocks) {
    cfg->order = opt.order;
    cfg->accelerations = opt.accelerations;
    cfg->cellsPerLane = opt.groupSize > 32 ? 2 : 1;
    cfg->vote = opt.walk == WalkKind::Vote;
    cfg->periodic = opt.anyPeriodic();
    const unsigned groupSize = unsigned(opt.groupSize);
    const unsigned numGroups = (n + groupSize - 1) / groupSize;
    int perSm = 1;
    AG_TRY(walkBlocksPerSm(*cfg, &perSm));
    const unsigned long long wanted = (numGroups + kWalkWarpsPerBlock - 1) / kWalkWarpsPerBlock;
    *blocks = int(std::max<unsigned long long>(1, std::min<unsigned long long>(wanted, 1ull * smCount_ * perSm)));
    if (queueCap_ == 0) queueCap_ = nextPow2(std::max(64u, copt_.initialQueueCapacity));
    return Status::success();
  }

  /// Bytes the block's tail (slot 5 onwards) should have for a tree solve: the MAC records and multipoles of about
  /// n/7 nodes (a uniform grid's octree over 8-cell leaves; the margin covers the blocks' tree of an AMR mesh), then
  /// the larger of the moments stored above the deepest level (n/56 nodes) and the walk's queues; at least slot 5
  /// and the build's level scratch. Pieces that do not fit get buffers of their own (correct, but more memory).
  Status tailForTree(unsigned n, const SolveOptions& opt, std::size_t* bytes) {
    WalkConfig cfg;
    int blocks = 1;
    AG_TRY(walkShape(n, opt, &cfg, &blocks));
    const std::size_t nodes = n / 7 + n / 128 + 64, stored = n / 56 + n / 1024 + 64;
    const std::size_t queue = std::size_t(blocks) * kWalkWarpsPerBlock * queueCap_ * sizeof(unsigned);
    const std::size_t nodeArrays = alignUp(nodes * sizeof(D4)) + alignUp(2 * nodes * sizeof(float4));
    const std::size_t walkOrMoments = nodeArrays + std::max(alignUp(stored * sizeof(NodeMoments)), alignUp(queue));
    const std::size_t build = alignUp(std::size_t(n) * sizeof(double)) + 2 * alignUp((n / 8 + 64) * sizeof(unsigned));
    *bytes = std::max(walkOrMoments, build);
    return Status::success();
  }

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

    // ---- the solve's device block: BlockLayout says which phase owns which piece
    std::size_t tailBytes = std::size_t(n) * sizeof(double);  // the direct path's tail: phi
    if (!direct) AG_TRY(tailForTree(n, opt, &tailBytes));
    const BlockLayout L = layoutFor(n, tailBytes);
    AG_TRY(block_.reserve((L.total + sizeof(double) - 1) / sizeof(double), "the solve's device block"));
    char* const base = reinterpret_cast<char*>(block_.get());
    double* slot[6];
    for (int k = 0; k < 6; ++k) slot[k] = reinterpret_cast<double*>(base + L.slot[k]);

    // ---- upload x, y, z, size into slots 0-3 (the mass follows the sort: with all five arrays here the sort's
    //      halves would not fit in the block)
    {
      const double* host[4] = {cells.x, cells.y, cells.z, cells.size};
      Transfer t[4];
      for (int k = 0; k < 4; ++k) t[k] = Transfer{const_cast<double*>(host[k]), slot[k], std::size_t(n) * 8};
      AG_TRY(copyIn(t, 4));
    }
    AG_CUDA_TRY(cudaEventRecord(events_[1], s));

    // ---- root cube (chooseRootCube), length scale, keys, sort
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
    AG_TRY(launchBounds(slot[0], slot[1], slot[2], nullptr, slot[3], n, checks,
                        bounds_.get(), bounds_.get() + 7 * kBoundsBlocks, s));
    double* hb = static_cast<double*>(small_.get());
    unsigned* hbad = reinterpret_cast<unsigned*>(hb + 8);
    AG_CUDA_TRY(cudaMemcpyAsync(hb, bounds_.get() + 7 * kBoundsBlocks, 7 * sizeof(double), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaMemcpyAsync(hbad, checks.firstBad, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    if (*hbad != 0xffffffffu) AG_TRY(flaggedCell(*hbad, cells, opt));
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
    // as sortCellsByKey
    const double scale = std::exp2(-std::round(std::log2(root.side)));
    const double inv = double(kKeyCells) / root.side;
    // keys in slots 4 and 5, indices in the two index halves (CUB's double buffer)
    std::uint64_t* keyHalf[2] = {reinterpret_cast<std::uint64_t*>(slot[4]), reinterpret_cast<std::uint64_t*>(slot[5])};
    std::uint32_t* idxHalf[2] = {reinterpret_cast<std::uint32_t*>(base + L.idx[0]),
                                 reinterpret_cast<std::uint32_t*>(base + L.idx[1])};
    AG_TRY(launchKeys(slot[0], slot[1], slot[2], n, root.lo[0], root.lo[1], root.lo[2], inv, keyHalf[0], idxHalf[0],
                      s));
    std::size_t tempBytes = 0;
    int sel = 0;
    AG_TRY(sortPairs(nullptr, tempBytes, keyHalf, idxHalf, n, &sel, s));
    AG_TRY(reserveCubTemp(tempBytes));
    tempBytes = cubTemp_.bytes();
    AG_TRY(sortPairs(cubTemp_.get(), tempBytes, keyHalf, idxHalf, n, &sel, s));
    // the sorted keys belong in slot 4, so that slot 5 (the tail's start) is the one the gather leaves free
    if (sel != 0)
      AG_CUDA_TRY(cudaMemcpyAsync(keyHalf[0], keyHalf[1], std::size_t(n) * sizeof(std::uint64_t),
                                  cudaMemcpyDeviceToDevice, s));
    sortedKeys_ = keyHalf[0];
    order_ = idxHalf[sel];
    idxSpare_ = Carve(idxHalf[1 - sel], std::size_t(n) * sizeof(std::uint32_t));
    AG_CUDA_TRY(cudaEventRecord(events_[2], s));

    // ---- the mass into slot 5, checked and summed by the bounds kernel (the same order of additions as before);
    //      read back after the build's synchronisations
    {
      Transfer t{const_cast<double*>(cells.mass), slot[5], std::size_t(n) * 8};
      AG_TRY(copyIn(&t, 1));
    }
    AG_CUDA_TRY(cudaEventRecord(events_[6], s));
    double* hmass = hb + 16;
    unsigned* hmassBad = reinterpret_cast<unsigned*>(hb + 17);
    AG_CUDA_TRY(cudaMemsetAsync(checks.firstBad, 0xff, sizeof(unsigned), s));
    AG_TRY(launchBounds(nullptr, nullptr, nullptr, slot[5], nullptr, n, checks, bounds_.get(),
                        bounds_.get() + 7 * kBoundsBlocks, s));
    AG_CUDA_TRY(cudaMemcpyAsync(hmass, bounds_.get() + 7 * kBoundsBlocks + 6, sizeof(double), cudaMemcpyDeviceToHost,
                                s));
    AG_CUDA_TRY(cudaMemcpyAsync(hmassBad, checks.firstBad, sizeof(unsigned), cudaMemcpyDeviceToHost, s));

    // ---- octree topology and the nodes' first keys (in the spare index half), then the keys are dead
    tail_ = Carve(base + L.slot[5], block_.bytes() - L.slot[5]);
    extra_ = Carve(base + L.extra, block_.bytes() - L.extra);
    unsigned nodes = 0;
    int depth = 0;
    if (!direct) {
      AG_TRY(buildTree(n, opt.leafSize, &nodes, &depth));
      AG_TRY(computeNodeKeys(nodes));
    }
    AG_CUDA_TRY(cudaEventRecord(events_[7], s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    if (*hmassBad != 0xffffffffu) AG_TRY(flaggedCell(*hmassBad, cells, opt));
    const double massTotal = *hmass;

    // ---- gather in place, rotating through slot 4 (the keys' slot): each array lands in the slot the previous one
    //      left; the mass's unsorted copy in slot 5 is read last, so slot 5 ends free
    {
      const double* from[5] = {slot[0], slot[1], slot[2], slot[3], slot[5]};
      double* to[5] = {slot[4], slot[0], slot[1], slot[2], slot[3]};
      const double by[5] = {scale, scale, scale, scale, 1.0};  // masses unscaled (times 1: exact)
      for (int k = 0; k < 5; ++k) AG_TRY(launchGather(from[k], order_, n, by[k], to[k], s));
    }
    sortedCells_.x = slot[4];
    sortedCells_.y = slot[0];
    sortedCells_.z = slot[1];
    sortedCells_.mass = slot[3];
    sortedSize_ = slot[2];
    hostSize_ = cells.size;
    scale_ = scale;
    for (int d = 0; d < 3; ++d) root.lo[d] *= scale;
    root.side *= scale;
    const double massScale = powerOfTwoScale(massTotal);
    AG_CUDA_TRY(cudaEventRecord(events_[3], s));

    // ---- sums in sorted order: the walk's phi in the sizes' slot (after the moments, the walk turns the sizes into
    //      self terms and each group's smallest size, and writes each cell's phi over its self term as it adds it);
    //      the direct path's phi in the tail; the acceleration sums in buffers of their own
    double* sums[4] = {direct ? tail_.take<double>(n) : sortedSize_, nullptr, nullptr, nullptr};
    if (!sums[0]) return Status::error(ErrorCode::Internal, "CUDA backend: no room for the potential sums");
    const int nsum = opt.accelerations ? 4 : 1;
    for (int k = 1; k < nsum; ++k) {
      AG_TRY(accSum_[k - 1].reserve(n, "the walk's acceleration sums"));
      sums[k] = accSum_[k - 1].get();
    }
    double* g[3] = {sums[1], sums[2], sums[3]};
    if (copt_.poisonDevice)
      for (int k = 0; k < nsum; ++k)
        if (sums[k] != sortedSize_) AG_TRY(launchPoison(sums[k], n, s));

    if (direct) {
      AG_CUDA_TRY(cudaEventRecord(events_[4], s));
      AG_TRY(launchDirect(sortedCells_, n, massScale, opt.accelerations, sums[0], g[0], g[1], g[2], s));
      AG_TRY(launchFoldSelf(sums[0], sortedCells_.mass, sortedSize_, n, 1.0 / massScale,
                            selfCoefficient(opt.selfPotential), s));
      out.stats.directInteractions = std::uint64_t(n) * (n - 1);
    } else {
      AG_TRY(computeMoments(n, nodes, depth, root, opt, massScale));
      if (opt.anyPeriodic()) AG_TRY(prepareEwald(opt, scale, out.stats));  // host table work overlaps the moments
      AG_CUDA_TRY(cudaEventRecord(events_[4], s));
      AG_TRY(walk(n, opt, massScale, sums[0], g, out.stats));
      out.stats.nodes = nodes;
      out.stats.leaves = nodes - splitNodes_;
      out.stats.treeDepth = depth;
    }

    // ---- scale, scatter to the caller's order, into slots nothing reads any more: pot over x, ax over y, ay over
    //      z, az over the mass
    double* res[4] = {slot[4], slot[0], slot[1], slot[3]};
    const int nout = opt.accelerations ? 4 : 1;
    if (copt_.poisonDevice)
      for (int k = 0; k < nout; ++k) AG_TRY(launchPoison(res[k], n, s));
    FinishParams fp;
    fp.order = order_;
    fp.phi = sums[0];
    fp.gx = g[0];
    fp.gy = g[1];
    fp.gz = g[2];
    fp.pot = res[0];
    fp.ax = res[1];
    fp.ay = res[2];
    fp.az = res[3];
    fp.n = n;
    fp.invMassScale = 1.0 / massScale;
    fp.scale = scale;
    fp.G = opt.G;
    AG_TRY(launchFinish(fp, opt.accelerations, s));
    AG_CUDA_TRY(cudaEventRecord(events_[5], s));

    // ---- download
    const auto td = Clock::now();
    {
      double* host[4] = {dest.potential, dest.ax, dest.ay, dest.az};
      Transfer t[4];
      for (int k = 0; k < nout; ++k) t[k] = Transfer{host[k], res[k], std::size_t(n) * 8};
      AG_TRY(copyOut(t, nout));
    }
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    stats_.secondsDownload = since(td);

    stats_.secondsUpload = elapsed(0, 1) + elapsed(2, 6);
    stats_.secondsKeys = elapsed(1, 2) + elapsed(7, 3);
    stats_.secondsBuild = direct ? 0 : elapsed(6, 7);
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
  /// Room for `need` nodes of topology, keeping the first `used`: in the spare index half while they fit (n/4
  /// nodes), else in a buffer of its own.
  Status reserveTopo(std::size_t need, std::size_t used) {
    if (used == 0) {
      topoPtr_ = reinterpret_cast<uint4*>(idxSpare_.base);
      topoCap_ = idxSpare_.bytes / sizeof(uint4);
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
    AG_TRY(reserveTopo(1, 0));
    AG_TRY(tally_.reserve(4, "counters"));
    AG_CUDA_TRY(cudaMemsetAsync(tally_.get(), 0, 4 * sizeof(unsigned long long), s));
    AG_TRY(launchSetRoot(topoPtr_, n, s));
    levelStart_.assign(1, 0u);
    unsigned levelBegin = 0, levelEnd = 1;
    int level = 0;
    unsigned* total = static_cast<unsigned*>(small_.get());
    for (;;) {
      const unsigned width = levelEnd - levelBegin;
      // the level's counts and offsets in the block's extra bytes (free during the build), else in buffers
      Carve scratch = extra_;
      unsigned* count = scratch.take<unsigned>(width + 1);
      unsigned* offset = scratch.take<unsigned>(width + 1);
      if (!count || !offset) {
        AG_TRY(levelCount_.reserve(width + 1, "level scratch"));
        AG_TRY(levelOffset_.reserve(width + 1, "level scratch"));
        count = levelCount_.get();
        offset = levelOffset_.get();
      }
      AG_TRY(launchCountChildren(topoPtr_, sortedKeys_, levelBegin, width, level, leafSize,
                                 count, tally_.get() + 2, s));
      std::size_t tempBytes = 0;
      AG_TRY(scanExclusive(nullptr, tempBytes, count, offset, width + 1, s));
      AG_TRY(reserveCubTemp(tempBytes));
      tempBytes = cubTemp_.bytes();
      AG_TRY(scanExclusive(cubTemp_.get(), tempBytes, count, offset, width + 1, s));
      AG_CUDA_TRY(cudaMemcpyAsync(total, offset + width, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
      AG_CUDA_TRY(cudaStreamSynchronize(s));
      const unsigned children = *total;
      if (children == 0) break;
      if (std::uint64_t(levelEnd) + children > 0xffffffffull)
        return Status::error(ErrorCode::InvalidInput, "CUDA backend: the octree would have more than 2^32 - 1 nodes");
      AG_TRY(reserveTopo(std::size_t(levelEnd) + children, levelEnd));
      AG_TRY(launchEmitChildren(topoPtr_, sortedKeys_, levelBegin, width, level, leafSize,
                                offset, levelEnd, s));
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

  /// nodeKeysPtr_[i] = key of node i's first cell, after the topology in the spare index half (n/6 nodes fit
  /// with it), else in a buffer of its own.
  Status computeNodeKeys(unsigned nodes) {
    Carve room = idxSpare_;
    if (reinterpret_cast<char*>(topoPtr_) == idxSpare_.base) (void)room.take<uint4>(nodes);
    AG_TRY(carveOrReserve(room, nodeKeys_, nodes, "node keys", nodeKeysPtr_));
    return launchNodeKeys(topoPtr_, sortedKeys_, nodes, nodeKeysPtr_, stream_);
  }

  Status computeMoments(unsigned n, unsigned nodes, int depth, const RootCube& root, const SolveOptions& opt,
                        double massScale) {
    (void)n;
    // in the block's tail when they fit, else own buffers: the MAC records and multipoles first (the walk keeps
    // them), then the moments of the nodes above the deepest level (the walk's queues reuse their room); the
    // deepest level's are recomputed by their parents
    AG_TRY(carveOrReserve(tail_, nodeMac_, nodes, "node MAC records", nodeMacPtr_));
    AG_TRY(carveOrReserve(tail_, nodeMQ_, 2 * std::size_t(nodes), "node multipoles", nodeMQPtr_));
    walkRoom_ = tail_;
    const unsigned stored = levelStart_[depth];
    NodeMoments* moments = nullptr;
    AG_TRY(carveOrReserve(tail_, moments_, stored, "node moments", moments));
    MomentsParams p;
    p.topo = topoPtr_;
    p.nodeKeys = nodeKeysPtr_;
    p.cells = sortedCells_;
    p.size = sortedSize_;
    p.moments = moments;
    p.stored = stored;
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
    ewaldView_ = ew.view.over<float>(ewaldCoef_.get());
    return Status::success();
  }

  Status walk(unsigned n, const SolveOptions& opt, double massScale, double* phi, double* const* g, SolveStats& st) {
    cudaStream_t s = stream_;
    WalkConfig cfg;
    int blocks = 1;
    AG_TRY(walkShape(n, opt, &cfg, &blocks));
    const unsigned groupSize = unsigned(opt.groupSize);
    const unsigned numGroups = (n + groupSize - 1) / groupSize;
    AG_TRY(walkCounters_.reserve(kWalkCounterCount, "walk counters"));

    // each group's smallest size after the topology in the spare index half (the node keys are dead), else in a
    // buffer; then the sizes become the self terms, which phi overwrites (its array is the sizes', see run())
    Carve spare = idxSpare_;
    if (reinterpret_cast<char*>(topoPtr_) == idxSpare_.base) (void)spare.take<uint4>(levelStart_.back());
    double* groupHmin = nullptr;
    AG_TRY(carveOrReserve(spare, groupHmin_, numGroups, "group sizes", groupHmin));
    const double selfCoef = selfCoefficient(opt.selfPotential);
    AG_TRY(launchWalkPrep(phi, sortedCells_.mass, n, groupSize, selfCoef, groupHmin, s));

    WalkParams p;
    p.cells = sortedCells_;
    p.groupHmin = groupHmin;
    p.selfTerm = phi;
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
    p.invMassScale = 1.0 / massScale;
    p.selfPotential = selfCoef != 0.0;
    if (cfg.periodic) p.ewald = ewaldView_;
    p.ewaldExpansion = opt.ewaldExpansion;

    // Periodic: the walk of the groups that expand the Ewald correction, then (if any are left) the others, then
    // the expanding groups' corrections (kernels.h WalkConfig). A queue overflow in any pass reruns them all: groups
    // that finished wrote phi over their self terms, which come back.
    WalkTally total;
    stats_.walkLaunches = 0;
    for (double& t : stats_.walkPassSeconds) t = 0;
    for (;;) {
      total = WalkTally{};
      unsigned need = 0;
      WalkConfig c = cfg;
      if (!c.periodic || opt.ewaldExpansion) AG_TRY(walkPass(c, blocks, p, total, &need));
      if (need == 0 && c.periodic && (!opt.ewaldExpansion || total.skipped > 0)) {
        c.perCellEwald = true;
        AG_TRY(walkPass(c, blocks, p, total, &need));
      }
      if (need == 0 && c.periodic && opt.ewaldExpansion) {  // the expanding groups' corrections, added to phi
        WalkConfig e = cfg;
        e.ewaldCorrection = true;
        const unsigned skipped = total.skipped;
        AG_TRY(walkPass(e, blocks, p, total, &need));
        total.skipped = skipped;
      }
      if (need == 0) break;
      if (queueCap_ >= (1u << 24))
        return Status::error(ErrorCode::Internal, "CUDA backend: the walk queue would need more than 2^24 entries "
                                                  "per warp (" + std::to_string(need) + ")");
      queueCap_ = std::max(2 * queueCap_, nextPow2(need));
      AG_TRY(restoreSizes(n));
      AG_TRY(launchWalkPrep(phi, sortedCells_.mass, n, groupSize, selfCoef, groupHmin, s));
    }
    stats_.walkBlocks = blocks;
    stats_.walkWarps = int(unsigned(blocks) * kWalkWarpsPerBlock);
    st.approxInteractions = total.approx;
    st.directInteractions = total.direct;
    st.groups = numGroups;
    return Status::success();
  }

  struct WalkTally {
    unsigned long long approx = 0, direct = 0;
    unsigned skipped = 0;
  };

  /// One launch of a walk kernel over the groups it owns; *need > 0 when a queue overflowed (rerun with a larger one).
  /// The periodic kernels have their own occupancy: fewer blocks than walkShape's (sized for the queues) is fine.
  Status walkPass(const WalkConfig& cfg, int maxBlocks, WalkParams& p, WalkTally& total, unsigned* need) {
    cudaStream_t s = stream_;
    int perSm = 1;
    AG_TRY(walkBlocksPerSm(cfg, &perSm));
    const int blocks = std::max(1, std::min(maxBlocks, smCount_ * perSm));
    const unsigned warps = unsigned(blocks) * kWalkWarpsPerBlock;
    unsigned* hc = static_cast<unsigned*>(small_.get());
    unsigned long long* ht = reinterpret_cast<unsigned long long*>(static_cast<char*>(small_.get()) + 64);
    // the queues in the block's tail after the node arrays when they fit, else a buffer of their own
    const std::size_t queueEntries = std::size_t(warps) * queueCap_;
    Carve room = walkRoom_;
    AG_TRY(carveOrReserve(room, queue_, queueEntries, "the walk queues", p.queue));
    p.queueTag = nullptr;
    if (cfg.periodic && !cfg.perCellEwald && !cfg.ewaldCorrection)
      AG_TRY(carveOrReserve(room, queueTag_, queueEntries, "the walk queues' image tags", p.queueTag));
    p.queueCap = queueCap_;
    AG_CUDA_TRY(cudaMemsetAsync(walkCounters_.get(), 0, kWalkCounterCount * sizeof(unsigned), s));
    AG_CUDA_TRY(cudaMemsetAsync(tally_.get(), 0, 2 * sizeof(unsigned long long), s));  // keeps [2]: split nodes
    const auto t0 = Clock::now();
    AG_TRY(launchWalk(cfg, p, blocks, s));
    AG_CUDA_TRY(cudaMemcpyAsync(hc, walkCounters_.get(), kWalkCounterCount * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaMemcpyAsync(ht, tally_.get(), 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    stats_.walkPassSeconds[cfg.ewaldCorrection ? 2 : cfg.perCellEwald ? 1 : 0] = since(t0);
    ++stats_.walkLaunches;
    stats_.queueCapacity = queueCap_;
    stats_.queuePeak = std::max(stats_.queuePeak, hc[kQueuePeak]);
    *need = hc[kOverflowNeed];
    total.approx += ht[0];
    total.direct += ht[1];
    total.skipped = hc[kSkippedGroups];
    splitNodes_ = ht[2];  // counted by the build; leaves = nodes - split nodes
    return Status::success();
  }

  /// The sorted sizes again (the walk's overflow path: the groups that finished before it wrote phi over their self
  /// terms), from the caller's array through a buffer that lives only for this.
  Status restoreSizes(unsigned n) {
    DeviceBuffer<double> unsorted;
    AG_TRY(unsorted.reserve(n, "the cell sizes (walk rerun)"));
    Transfer t{const_cast<double*>(hostSize_), unsorted.get(), std::size_t(n) * sizeof(double)};
    AG_TRY(copyIn(&t, 1));
    AG_TRY(launchGather(unsorted.get(), order_, n, scale_, sortedSize_, stream_));
    AG_CUDA_TRY(cudaStreamSynchronize(stream_));
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

  // Device memory. Buffers marked (*) are used only when the block's pieces have no room for them.
  DeviceBuffer<double> block_;      ///< the solve's block (BlockLayout): cells, keys, order, node data, phi, results
  DeviceBuffer<double> accSum_[3];  ///< gx, gy, gz sums in sorted order (phi is in the block)
  DeviceBuffer<double> bounds_;
  std::uint64_t* sortedKeys_ = nullptr;  ///< slot 4 until the gather
  std::uint32_t* order_ = nullptr;       ///< the index half holding sorted position -> caller's index
  Carve idxSpare_;                       ///< the other half: topology, node keys
  Carve tail_, extra_;                   ///< slot 5 onwards; the extra bytes after slot 5
  Carve walkRoom_;                       ///< the tail after the MAC records and multipoles: the walk queues
  DeviceCells sortedCells_ = {};         ///< in slots 4, 0, 1, 3 after the gather
  double* sortedSize_ = nullptr;         ///< slot 2: sorted, scaled sizes (self terms in the walk, then phi)
  const double* hostSize_ = nullptr;     ///< the caller's sizes (restoreSizes)
  double scale_ = 1;                     ///< the length scale of this solve
  uint4* topoPtr_ = nullptr;             ///< node topology (spare index half, or topo_)
  std::size_t topoCap_ = 0;
  std::uint64_t* nodeKeysPtr_ = nullptr; ///< first key of each node (spare index half, or nodeKeys_)
  D4* nodeMacPtr_ = nullptr;             ///< node MAC records (tail, or nodeMac_)
  float4* nodeMQPtr_ = nullptr;          ///< node multipoles (tail, or nodeMQ_)
  DeviceBuffer<unsigned char> cubTemp_;
  DeviceBuffer<uint4> topo_;  ///< (*)
  DeviceBuffer<unsigned> levelCount_, levelOffset_;  ///< (*)
  DeviceBuffer<std::uint64_t> nodeKeys_;             ///< (*)
  DeviceBuffer<double> groupHmin_;                   ///< (*)
  DeviceBuffer<NodeMoments> moments_;  ///< (*)
  DeviceBuffer<D4> nodeMac_;            ///< (*)
  DeviceBuffer<float4> nodeMQ_;         ///< (*)
  DeviceBuffer<unsigned> queue_;        ///< (*)
  DeviceBuffer<unsigned char> queueTag_;  ///< (*) periodic expansion walks
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
