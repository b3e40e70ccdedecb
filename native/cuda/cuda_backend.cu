/// \file cuda_backend.cu
/// \brief The CUDA backend's solve: validateOptions on the host, then on the device: upload, root-cube bounds
/// (which also checks every cell as validateCells does; on a failure validateCells itself runs on the host and
/// its Status is returned), Morton keys, stable sort, octree topology level by level, the gather in place into
/// sorted scaled cells, moments bottom-up, the group walk (or the direct kernel), scaling and scatter, download.
/// Each step follows cpu_backend.cpp; the kernels live in kernel_*.cu. All per-cell data shares one device block
/// (BlockLayout: about 60 bytes per cell for a potential solve).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "ewald/walk_setup.h"
#include "tree/keys.h"
#include "let/let.h"
#include "tree/tree.h"
#include "core/validate.h"
#include "core/fixed_sum.h"
#include "core/thread_pool.h"
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

// start, uploaded, sorted, gathered, moments, walked, mass uploaded, built, keys started (a distributed solve's ranks
// agree between uploaded and keys started)
constexpr int kEvents = 9;

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

  // ---------------------------------------------------------------- one rank of a distributed solve
  Status rankOpen(const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      AG_TRY(checkOptions(opt, cells.n, false));
      rankPeriodic_ = opt.anyPeriodic();
      // the masses are checked on the host (one array, on the copy threads): on the device they go up only after
      // the agreement
      std::atomic<bool> badMass{false};
      parallelFor(cells.n, std::size_t(1) << 18, copyThreads(), [&](std::size_t b, std::size_t e, int) {
        bool bad = false;
        const bool signedOk = opt.signedSources();
        for (std::size_t i = b; i < e; ++i)
          bad = bad || !(std::isfinite(cells.mass[i]) && (signedOk || cells.mass[i] >= 0.0));
        if (bad) badMass = true;
      });
      if (badMass) {
        const Status v = validateCells(cells, opt);
        return v.ok() ? Status::error(ErrorCode::Internal, "CUDA backend: mass check and validateCells disagree") : v;
      }
      stats_ = CudaStats{};
      rankT0_ = Clock::now();
      lentCount_ = 0;
      AG_TRY(ensureDevice());
      stats_.device = deviceName_;
      if (!copyStream_) AG_CUDA_TRY(cudaStreamCreateWithFlags(&copyStream_, cudaStreamNonBlocking));
      for (int d = 0; d < 3; ++d) {
        lo[d] = opt.hasBox ? opt.boxLo[d] : INFINITY;
        hi[d] = opt.hasBox ? opt.boxHi[d] : -INFINITY;
      }
      if (cells.n == 0) return Status::success();
      // positions and sizes up and checked now, so that a bad cell is agreed on, not an abort later
      AG_TRY(uploadAndBound(cells, opt, false));
      if (!opt.hasBox)
        for (int d = 0; d < 3; ++d) {
          lo[d] = extentLo_[d];
          hi[d] = extentHi_[d];
        }
      return Status::success();
    });
  }

  Status rankBuild(const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
                   SolveStats& st) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      AG_TRY(ensureDevice());
      rankGroupSize_ = unsigned(opt.groupSize);
      contrastTotal_ = totalMass;  // every rank's (the driver's fixed-order sums, reduced)
      AG_TRY(sortAndBuild(cells, opt, false, scale, true));
      st.densityContrast = contrastApplied_;
      st.meanDensity = meanDensity_;
      AG_TRY(computeMoments(n_, nodes_, depth_, root_, opt, massScale_));
      if (rankPeriodic_) AG_TRY(prepareEwald(opt, scale_, st));  // every rank the same table: same box and scale
      AG_CUDA_TRY(cudaEventRecord(events_[4], stream_));  // the tree is complete: the export may copy it
      st.nodes = nodes_;
      st.treeDepth = depth_;
      st.threads = 1;
      return Status::success();
    });
  }

  Status rankSummary(RankSummary& out) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      // the box of the sorted, scaled centres (min/max: exact in any order) and the centre of mass (the root's)
      cudaStream_t s = stream_;
      const CellChecks none;
      AG_TRY(launchBounds(sortedCells_.x, sortedCells_.y, sortedCells_.z, nullptr, nullptr, n_, none, bounds_.get(),
                          bounds_.get() + kBoundsStride * kBoundsBlocks, s));
      double* hb = static_cast<double*>(small_.get());
      AG_CUDA_TRY(cudaMemcpyAsync(hb, bounds_.get() + kBoundsStride * kBoundsBlocks, 6 * sizeof(double), cudaMemcpyDeviceToHost, s));
      AG_CUDA_TRY(cudaMemcpyAsync(hb + 8, nodeMacPtr_, sizeof(D4), cudaMemcpyDeviceToHost, s));
      unsigned long long* widths = reinterpret_cast<unsigned long long*>(bounds_.get() + kBoundsStride * kBoundsBlocks + 8);
      AG_TRY(launchGroupHalfWidths(sortedCells_, n_, rankGroupSize_, widths, s));
      AG_CUDA_TRY(cudaMemcpyAsync(hb + 12, widths, 3 * sizeof(double), cudaMemcpyDeviceToHost, s));
      AG_CUDA_TRY(cudaStreamSynchronize(s));
      out = RankSummary{};
      for (int d = 0; d < 3; ++d) {
        out.centreLo[d] = hb[d];
        out.centreHi[d] = hb[3 + d];
        out.extentLo[d] = extentLo_[d] * scale_;
        out.extentHi[d] = extentHi_[d] * scale_;
        out.com[d] = hb[8 + d];
        out.groupHalfWidth[d] = hb[12 + d];  // the bits of a double
      }
      out.mass = massTotal_;
      out.cellCount = double(n_);
      return Status::success();
    });
  }

  Status rankChooseLets(const RemoteBox* boxes, std::size_t count, std::size_t* letNodes,
                        std::size_t* letCells) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      cudaStream_t s = stream_;
      const std::size_t nodes = nodes_, stride = alignUp(nodes + 1);
      while (letPacks_.size() < count) letPacks_.push_back(std::make_unique<DeviceBuffer<std::uint64_t>>());
      letPackBytes_.assign(count, 0);
      if (count == 0) return Status::success();
      AG_TRY(letState_.reserve(count * stride, "the LET selection"));
      AG_TRY(letCount_.reserve(nodes + 1, "the LET selection"));
      AG_TRY(letOffset_.reserve(count * (nodes + 1), "the LET selection"));
      std::size_t tempBytes = 0;
      AG_TRY(scanLetCounts(nullptr, tempBytes, letCount_.get(), letOffset_.get(), unsigned(nodes + 1), s));
      AG_TRY(reserveCubTemp(tempBytes));
      const LetTreeView tree = letTreeView();
      // every box's selection and scan, then one wait for all their totals
      AG_TRY(letTotals_.reserve(count * sizeof(unsigned long long), "the LETs' sizes"));
      unsigned long long* totals = static_cast<unsigned long long*>(letTotals_.get());
      for (std::size_t k = 0; k < count; ++k) {
        unsigned long long* offset = letOffset_.get() + k * (nodes + 1);
        AG_TRY(launchLetSelect(tree, levelStart_.data(), depth_ + 1, boxes[k], rankPeriodic_ ? &ewaldView_ : nullptr,
                               letState_.get() + k * stride, letCount_.get(), s));
        tempBytes = cubTemp_.bytes();
        AG_TRY(scanLetCounts(cubTemp_.get(), tempBytes, letCount_.get(), offset, unsigned(nodes + 1), s));
        AG_CUDA_TRY(cudaMemcpyAsync(totals + k, offset + nodes, sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
      }
      AG_CUDA_TRY(cudaStreamSynchronize(s));
      for (std::size_t k = 0; k < count; ++k) {
        letNodes[k] = std::size_t(totals[k] >> 32);
        letCells[k] = std::size_t(totals[k] & 0xffffffffu);
        letPackBytes_[k] = packedLetBytes(letNodes[k], letCells[k], tree.dip != nullptr);
        DeviceBuffer<std::uint64_t>& pack = *letPacks_[k];
        AG_TRY(pack.reserve(letPackBytes_[k] / sizeof(std::uint64_t), "a packed LET"));
        AG_TRY(launchLetPack(tree, letState_.get() + k * stride, letOffset_.get() + k * (nodes + 1), letNodes[k],
                             letCells[k], rankPeriodic_, pack.get(), s));
      }
      // the downloads (rankDownloadLet, on the second stream) wait for the packing, not for the walk queued next
      AG_CUDA_TRY(cudaEventRecord(events_[4], s));
      return Status::success();
    });
  }

  Status rankStartLocalWalk(const SolveOptions& opt) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      AG_TRY(prepareWalk(n_, opt, massScale_, sums_[0], sums_ + 1, &rankCfg_, &rankBlocks_, rankWalk_));
      WalkConfig first = rankCfg_;  // periodic: the image walk, or the per-pair one without the expansion
      first.perCellEwald = rankCfg_.periodic && !opt.ewaldExpansion;
      return launchPass(first, rankBlocks_, rankWalk_);
    });
  }

  Status rankExportTree(HostTree& out, double extentLo[3], double extentHi[3]) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      const std::size_t nodes = nodes_, n = n_;
      std::vector<uint4>& topo = hostTopo_;  // kept between solves (no zero-fill, no page faults after the first)
      std::vector<D4>& mac = hostMac_;
      std::vector<float4>& mq = hostMQ_;
      std::vector<float4> dip(nodeDipPtr_ ? nodes : 0);
      topo.resize(nodes);
      mac.resize(nodes);
      mq.resize(2 * nodes);
      out.x.resize(n);
      out.y.resize(n);
      out.z.resize(n);
      out.cellMass.resize(n);
      // on the second stream, after the moments (the walk reads these arrays and writes none of them), through
      // the pinned staging ring as the results' download
      AG_CUDA_TRY(cudaStreamWaitEvent(copyStream_, events_[4], 0));
      Transfer t[7] = {{topo.data(), topoPtr_, nodes * sizeof(uint4)},
                       {mac.data(), nodeMacPtr_, nodes * sizeof(D4)},
                       {mq.data(), nodeMQPtr_, 2 * nodes * sizeof(float4)},
                       {out.x.data(), const_cast<double*>(sortedCells_.x), n * sizeof(double)},
                       {out.y.data(), const_cast<double*>(sortedCells_.y), n * sizeof(double)},
                       {out.z.data(), const_cast<double*>(sortedCells_.z), n * sizeof(double)},
                       {out.cellMass.data(), const_cast<double*>(sortedCells_.mass), n * sizeof(double)}};
      AG_TRY(copyOut(t, 7, copyStream_));
      if (nodeDipPtr_) {
        Transfer td{dip.data(), nodeDipPtr_, nodes * sizeof(float4)};
        AG_TRY(copyOut(&td, 1, copyStream_));
      }
      out.cellBegin.resize(nodes);
      out.cellCount.resize(nodes);
      out.childBegin.resize(nodes);
      out.childCount.resize(nodes);
      out.mass.resize(nodes);
      out.com.resize(3 * nodes);
      out.quad.resize(6 * nodes);
      out.macRadius.resize(nodes);
      out.secondMoment.resize(rankPeriodic_ ? nodes : 0);  // periodic: the walk's S (times massScale on the device)
      out.hasDipole = nodeDipPtr_ != nullptr;
      out.dipole.resize(out.hasDipole ? 3 * nodes : 0);
      const double inv = 1.0 / massScale_;  // a power of two: exact
      for (std::size_t i = 0; i < nodes; ++i) {
        out.cellBegin[i] = topo[i].x;
        out.cellCount[i] = topo[i].y;
        out.childBegin[i] = topo[i].z;
        out.childCount[i] = std::uint8_t(topo[i].w);
        const bool live = mac[i].w >= 0.0;  // kernel_moments.cu: -1 for an empty node
        out.mass[i] = live ? double(mq[2 * i].x) * inv : 0.0;
        if (out.hasDipole) {
          out.dipole[3 * i] = double(dip[i].x) * inv;
          out.dipole[3 * i + 1] = double(dip[i].y) * inv;
          out.dipole[3 * i + 2] = double(dip[i].z) * inv;
        }
        out.com[3 * i] = mac[i].x;
        out.com[3 * i + 1] = mac[i].y;
        out.com[3 * i + 2] = mac[i].z;
        const float q[6] = {mq[2 * i].y, mq[2 * i].z, mq[2 * i].w, mq[2 * i + 1].x, mq[2 * i + 1].y, mq[2 * i + 1].z};
        for (int k = 0; k < 6; ++k) out.quad[6 * i + k] = double(q[k]) * inv;
        out.macRadius[i] = mac[i].w;  // -1 for an empty node, as the CPU's tree
        if (rankPeriodic_) out.secondMoment[i] = double(mq[2 * i + 1].w) * inv;
      }
      for (int d = 0; d < 3; ++d) {
        extentLo[d] = extentLo_[d] * scale_;
        extentHi[d] = extentHi_[d] * scale_;
      }
      return Status::success();
    });
  }

  Status rankDownloadLet(std::size_t k, PackedLet& out) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      if (k >= letPackBytes_.size())
        return Status::error(ErrorCode::Internal, "CUDA backend: LET " + std::to_string(k) + " was not chosen");
      out.words.resize(letPackBytes_[k] / sizeof(std::uint64_t));
      AG_CUDA_TRY(cudaStreamWaitEvent(copyStream_, events_[4], 0));
      Transfer t{out.words.data(), letPacks_[k]->get(), letPackBytes_[k]};
      return copyOut(&t, 1, copyStream_);
    });
  }

  Status rankPrepareReceived(const ReceivedLet* lets, std::size_t count) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      lentCount_ = 0;
      if (count == 0) return Status::success();
      if (!letsReady_) AG_CUDA_TRY(cudaEventCreateWithFlags(&letsReady_, cudaEventDisableTiming));
      AG_TRY(uploadForest(lets, count, copyStream_));
      AG_CUDA_TRY(cudaEventRecord(letsReady_, copyStream_));
      lentCount_ = count;
      return Status::success();
    });
  }

  Status rankLocalWalkDone(bool* done) override {
    std::lock_guard<std::mutex> lock(mu_);
    const cudaError_t e = cudaStreamQuery(stream_);
    *done = e != cudaErrorNotReady;
    if (e == cudaErrorNotReady) (void)cudaGetLastError();  // "not ready" is not an error
    else AG_CUDA_TRY(e);
    return Status::success();
  }

  Status rankFinishLocalWalk(const SolveOptions& opt, SolveStats& st) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      WalkTally total;
      unsigned need = 0;
      AG_TRY(collectPass(total, &need));
      // periodic: the other passes now (their number depends on the first's counts)
      if (need == 0 && rankCfg_.periodic) AG_TRY(walkPasses(rankCfg_, rankBlocks_, opt, rankWalk_, total, &need, true));
      if (need > 0) {  // a queue overflowed: the whole walk again with a larger queue (as walkUntilDone)
        AG_TRY(growQueue(need));
        AG_TRY(restoreSizes(n_));
        AG_TRY(launchWalkPrep(sums_[0], sortedCells_.mass, n_, rankWalk_.groupSize, selfCoefficient(opt.selfPotential),
                              const_cast<double*>(rankWalk_.groupHmin), stream_));
        AG_TRY(walkUntilDone(rankCfg_, rankBlocks_, opt, rankWalk_, total));
      }
      st.approxInteractions = total.approx;
      st.directInteractions = total.direct;
      st.groups = rankWalk_.numGroups;
      st.leaves = nodes_ - splitNodes_;
      return Status::success();
    });
  }

  Status rankWalkReceived(const ReceivedLet* lets, std::size_t count, const SolveOptions& opt,
                          SolveStats& st) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      if (count == 0) return Status::success();
      if (lentCount_ == count) {
        AG_CUDA_TRY(cudaStreamWaitEvent(stream_, letsReady_, 0));  // uploaded beside the local walk
      } else {
        AG_TRY(uploadForest(lets, count, stream_));
      }
      lentCount_ = 0;
      WalkParams p = rankWalk_;
      p.topo = letTopo_.get();
      p.nodeMac = letMac_.get();
      p.nodeMQ = letMQ_.get();
      p.nodeDip = lets[0].view.dipole ? letDip_.get() : nullptr;
      p.sources = DeviceCells{letCells_[0].get(), letCells_[1].get(), letCells_[2].get(), letCells_[3].get()};
      p.selfPairs = 0;
      // the LETs' sums into arrays of their own (phi = sum / massScale, no self term), then added to the local
      // walk's: a queue overflow simply reruns into them
      const int nsum = opt.accelerations ? 4 : 1;
      const std::size_t n = n_;
      AG_TRY(letSums_.reserve(nsum * n, "the received LETs' sums"));
      double* sum[4] = {letSums_.get(), nullptr, nullptr, nullptr};
      for (int k = 1; k < nsum; ++k) sum[k] = letSums_.get() + k * n;
      p.phi = sum[0];
      p.selfTerm = sum[0];
      p.selfPotential = false;
      p.gx = sum[1];
      p.gy = sum[2];
      p.gz = sum[3];
      // periodic: no hoisted corrections (the LETs were pruned for each node's own nearest image, cpu_walk.h
      // WalkPass); the passes write phi before the corrections add to it, so a rerun needs no reset
      p.hoistCorrection = false;
      WalkTally total;
      for (;;) {
        total = WalkTally{};
        unsigned need = 0;
        AG_TRY(walkPasses(rankCfg_, rankBlocks_, opt, p, total, &need, false));
        if (need == 0) break;
        AG_TRY(growQueue(need));
      }
      for (int k = 0; k < nsum; ++k) AG_TRY(launchAddInto(sums_[k], sum[k], n, stream_));
      st.approxInteractions += total.approx;
      st.directInteractions += total.direct;
      return Status::success();
    });
  }

  Status rankFinish(const SolveOptions& opt, SolveResult& out) override {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded([&]() -> Status {
      const ResultTargets dest = out.targets(n_, opt.accelerations);
      AG_TRY(finishAndDownload(opt, dest));
      SolveStats device;
      fillStats(false, rankT0_, device);
      out.stats.secondsKeys = device.secondsKeys;
      out.stats.secondsBuild = device.secondsBuild;
      out.stats.secondsMoments = device.secondsMoments;
      out.stats.secondsUpload = device.secondsUpload;
      out.stats.secondsDownload = device.secondsDownload;
      out.stats.deviceBytesPerCell = device.deviceBytesPerCell;
      if (opt.fullyPeriodic()) out.stats.meanPotential = meanPotentialOf(dest.potential, hostSize_, n_);
      return Status::success();
    });
  }

  /// The local tree as the LET kernels read it.
  LetTreeView letTreeView() const {
    LetTreeView v;
    v.topo = topoPtr_;
    v.mac = nodeMacPtr_;
    v.mq = nodeMQPtr_;
    v.dip = nodeDipPtr_;
    v.cells = sortedCells_;
    v.nodes = nodes_;
    v.invMassScale = 1.0 / massScale_;  // a power of two: exact
    return v;
  }

  /// The received LETs as one tree (let/let.h mergeLets' layout: virtual nodes with an infinite MAC radius on top,
  /// which every walk opens) in the walk's device layout, masses and quadrupoles times this solve's massScale. The
  /// packed LETs go up as they arrived and are merged and converted on the device; only the few virtual nodes are
  /// made on the host.
  Status uploadForest(const ReceivedLet* lets, std::size_t count, cudaStream_t s) {
    std::vector<SourceTree> views(count);
    std::size_t words = 0;
    for (std::size_t r = 0; r < count; ++r) {
      views[r] = lets[r].view;
      words += lets[r].bytes / sizeof(std::uint64_t);
    }
    LetForestLayout L;
    AG_TRY(letForestLayout(views.data(), count, L));
    fillVirtualNodes(L, views.data(), forestTop_);
    const std::size_t top = L.rootsAt, nodes = L.nodes, cells = L.cells;
    forestTopo_.resize(top);
    forestMac_.resize(top);
    forestMQ_.resize(2 * top);
    const double ms = massScale_;
    for (std::size_t i = 0; i < top; ++i) {
      const double m = forestTop_.mass[i];
      forestTopo_[i] = make_uint4(0u, 0u, forestTop_.childBegin[i], forestTop_.childCount[i]);
      forestMac_[i] = D4{0.0, 0.0, 0.0, forestTop_.macRadius[i]};  // infinite: every walk opens a virtual node
      forestMQ_[2 * i] = make_float4(float(m * ms), 0.f, 0.f, 0.f);
      forestMQ_[2 * i + 1] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    AG_TRY(letTopo_.reserve(nodes, "the received LETs"));
    AG_TRY(letMac_.reserve(nodes, "the received LETs"));
    AG_TRY(letMQ_.reserve(2 * nodes, "the received LETs"));
    const bool dipoles = count > 0 && lets[0].view.dipole != nullptr;  // every rank's LETs are of one kind
    if (dipoles) {
      AG_TRY(letDip_.reserve(nodes, "the received LETs"));
      AG_CUDA_TRY(cudaMemsetAsync(letDip_.get(), 0, top * sizeof(float4), s));  // the virtual nodes: none
    }
    for (int k = 0; k < 4; ++k) AG_TRY(letCells_[k].reserve(std::max<std::size_t>(cells, 1), "the received LETs' cells"));
    AG_TRY(letRaw_.reserve(std::max<std::size_t>(words, 1), "the received LETs"));
    // the packed LETs through the pinned staging ring (copy threads), the virtual nodes as three small copies
    std::vector<Transfer> t;
    std::size_t at = 0;
    for (std::size_t r = 0; r < count; ++r) {
      t.push_back(Transfer{const_cast<std::uint64_t*>(lets[r].words), letRaw_.get() + at, lets[r].bytes});
      at += lets[r].bytes / sizeof(std::uint64_t);
    }
    AG_TRY(copyIn(t.data(), int(t.size()), s));
    AG_CUDA_TRY(cudaMemcpyAsync(letTopo_.get(), forestTopo_.data(), top * sizeof(uint4), cudaMemcpyHostToDevice, s));
    AG_CUDA_TRY(cudaMemcpyAsync(letMac_.get(), forestMac_.data(), top * sizeof(D4), cudaMemcpyHostToDevice, s));
    AG_CUDA_TRY(cudaMemcpyAsync(letMQ_.get(), forestMQ_.data(), 2 * top * sizeof(float4), cudaMemcpyHostToDevice, s));
    double* const cellArrays[4] = {letCells_[0].get(), letCells_[1].get(), letCells_[2].get(), letCells_[3].get()};
    at = 0;
    for (std::size_t r = 0; r < count; ++r) {
      LetIntoForest p;
      p.raw = reinterpret_cast<const unsigned char*>(letRaw_.get() + at);
      p.nodes = views[r].nodeCount;
      p.cells = views[r].cellTotal;
      p.rootAt = unsigned(L.rootsAt + r);
      p.nodeBase = unsigned(L.nodeBase[r]);
      p.cellBase = unsigned(L.cellBase[r]);
      p.massScale = ms;
      p.dipole = views[r].dipole != nullptr;
      AG_TRY(launchLetToForest(p, letTopo_.get(), letMac_.get(), letMQ_.get(), dipoles ? letDip_.get() : nullptr,
                               cellArrays, s));
      at += lets[r].bytes / sizeof(std::uint64_t);
    }
    return Status::success();
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
    std::vector<uint4>().swap(hostTopo_);
    std::vector<D4>().swap(hostMac_);
    std::vector<float4>().swap(hostMQ_);
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
    letTopo_.release(); letMac_.release(); letMQ_.release(); letDip_.release(); letSums_.release(); letRaw_.release();
    nodeDip_.release();
    for (auto& b : letCells_) b.release();
    massAside_.release();
    letState_.release(); letCount_.release(); letOffset_.release(); letTotals_.release();
    letPacks_.clear();
    letPackBytes_.clear();
    if (letsReady_) (void)cudaEventDestroy(letsReady_);
    letsReady_ = nullptr;
    lentCount_ = 0;
    if (copyStream_) (void)cudaStreamDestroy(copyStream_);
    copyStream_ = nullptr;
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
    b += letTopo_.bytes() + letMac_.bytes() + letMQ_.bytes() + letDip_.bytes() + letSums_.bytes() + nodeDip_.bytes();
    for (const auto& c : letCells_) b += c.bytes();
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
    cfg->dipole = opt.signedSources();
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
  /// The checks every solve makes before touching the cells on the device: options, the CUDA backend's limits.
  Status checkOptions(const SolveOptions& opt, std::size_t n, bool direct) const {
    Status st = validateOptions(opt);
    if (!st.ok()) return st;
    if (direct && !(st = validateDirectOptions(opt)).ok()) return st;
    if (!direct && opt.groupSize > 64)
      return Status::error(ErrorCode::InvalidOption,
                           "groupSize must be at most 64 on the CUDA backend (one warp per group, at most two cells "
                           "per lane), got " + std::to_string(opt.groupSize));
    if (n > 0x7fffffffull)
      return Status::error(ErrorCode::InvalidInput, "the CUDA backend handles at most 2^31 - 1 cells per solve, got " +
                                                        std::to_string(n));
    return Status::success();
  }

  Status run(const CellsView& cells, const SolveOptions& opt, SolveResult& out, bool direct) {
    Status st = checkOptions(opt, cells.n, direct);
    if (!st.ok()) return st;
    const auto tv = Clock::now();
    if (!copt_.validateOnDevice) {
      st = validateCells(cells, opt);
      if (!st.ok()) return st;
    }
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
    if (!direct && opt.signedSources()) contrastTotal_ = fixedOrderSum(cells.mass, n, copyThreads());
    AG_TRY(prepareCells(cells, opt, direct, 0.0));
    double* const phi = sums_[0];
    double* g[3] = {sums_[1], sums_[2], sums_[3]};
    if (direct) {
      AG_CUDA_TRY(cudaEventRecord(events_[4], stream_));
      AG_TRY(launchDirect(sortedCells_, n, massScale_, opt.accelerations, phi, g[0], g[1], g[2], stream_));
      AG_TRY(launchFoldSelf(phi, sortedCells_.mass, sortedSize_, n, 1.0 / massScale_,
                            selfCoefficient(opt.selfPotential), stream_));
      out.stats.directInteractions = std::uint64_t(n) * (n - 1);
    } else {
      AG_TRY(computeMoments(n, nodes_, depth_, root_, opt, massScale_));
      if (opt.anyPeriodic()) AG_TRY(prepareEwald(opt, scale_, out.stats));  // host table work overlaps the moments
      AG_CUDA_TRY(cudaEventRecord(events_[4], stream_));
      AG_TRY(walk(n, opt, massScale_, phi, g, out.stats));
      out.stats.nodes = nodes_;
      out.stats.leaves = nodes_ - splitNodes_;
      out.stats.treeDepth = depth_;
    }
    AG_TRY(finishAndDownload(opt, dest));
    fillStats(direct, t0, out.stats);
    out.stats.densityContrast = contrastApplied_;
    out.stats.meanDensity = meanDensity_;
    if (opt.fullyPeriodic()) out.stats.meanPotential = meanPotentialOf(dest.potential, cells.size, n);
    return Status::success();
  }

  /// uploadAndBound, then sortAndBuild (n > 0).
  Status prepareCells(const CellsView& cells, const SolveOptions& opt, bool direct, double givenScale) {
    AG_TRY(uploadAndBound(cells, opt, direct));
    return sortAndBuild(cells, opt, direct, givenScale);
  }

  /// The cells' checks every solve makes on the device (CellChecks; the first bad cell's message from the host's
  /// validateCells): positions and sizes here, the masses in sortAndBuild.
  CellChecks cellChecks(const SolveOptions& opt) {
    CellChecks checks;
    checks.hasBox = opt.hasBox;
    checks.signedMasses = opt.signedSources();
    for (int d = 0; d < 3; ++d) {
      checks.boxLo[d] = opt.boxLo[d];
      checks.boxHi[d] = opt.boxHi[d];
    }
    checks.firstBad = walkCounters_.get();
    return checks;
  }

  /// The solve's device block, x, y, z, size uploaded, checked, and their extents' bounds (extentLo_, extentHi_)
  /// and this process's root cube (root_: chooseRootCube, caller's units). n > 0.
  Status uploadAndBound(const CellsView& cells, const SolveOptions& opt, bool direct) {
    const unsigned n = unsigned(cells.n);
    n_ = n;
    cudaStream_t s = stream_;
    AG_CUDA_TRY(cudaEventRecord(events_[0], s));

    // ---- the solve's device block: BlockLayout says which phase owns which piece
    std::size_t tailBytes = std::size_t(n) * sizeof(double);  // the direct path's tail: phi
    if (!direct) AG_TRY(tailForTree(n, opt, &tailBytes));
    layout_ = layoutFor(n, tailBytes);
    const BlockLayout& L = layout_;
    AG_TRY(block_.reserve((L.total + sizeof(double) - 1) / sizeof(double), "the solve's device block"));
    char* const base = reinterpret_cast<char*>(block_.get());
    double* const* slot = slot_;
    for (int k = 0; k < 6; ++k) slot_[k] = reinterpret_cast<double*>(base + L.slot[k]);

    // ---- upload x, y, z, size into slots 0-3 (the mass follows the sort: with all five arrays here the sort's
    //      halves would not fit in the block)
    {
      const double* host[4] = {cells.x, cells.y, cells.z, cells.size};
      Transfer t[4];
      for (int k = 0; k < 4; ++k) t[k] = Transfer{const_cast<double*>(host[k]), slot[k], std::size_t(n) * 8};
      AG_TRY(copyIn(t, 4));
    }
    AG_CUDA_TRY(cudaEventRecord(events_[1], s));

    // ---- checks and root cube (chooseRootCube)
    AG_TRY(bounds_.reserve(kBoundsStride * kBoundsBlocks + 11, "the bounds reduction"));  // + a rank's group half-widths
    AG_TRY(walkCounters_.reserve(kWalkCounterCount, "counters"));
    const CellChecks checks = cellChecks(opt);
    AG_CUDA_TRY(cudaMemsetAsync(checks.firstBad, 0xff, sizeof(unsigned), s));
    AG_TRY(launchBounds(slot[0], slot[1], slot[2], nullptr, slot[3], n, checks,
                        bounds_.get(), bounds_.get() + kBoundsStride * kBoundsBlocks, s));
    double* hb = static_cast<double*>(small_.get());
    unsigned* hbad = reinterpret_cast<unsigned*>(hb + 8);
    AG_CUDA_TRY(cudaMemcpyAsync(hb, bounds_.get() + kBoundsStride * kBoundsBlocks, 8 * sizeof(double), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaMemcpyAsync(hbad, checks.firstBad, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    if (*hbad != 0xffffffffu) AG_TRY(flaggedCell(*hbad, cells, opt));
    for (int d = 0; d < 3; ++d) {
      extentLo_[d] = hb[d];
      extentHi_[d] = hb[3 + d];
    }
    minSize_ = hb[7];
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
    root_ = root;  // caller's units until sortAndBuild scales it
    return Status::success();
  }

  /// Keys with the length scale `givenScale` (0: the root cube's own, lengthScaleFor(side); a distributed solve
  /// gives the global one), sort, mass upload and check, octree topology (unless direct), gather into sorted
  /// scaled cells, and the sums' arrays. Leaves the solve's state in the members (slot_, root_ scaled, scale_,
  /// massScale_, nodes_, depth_, sums_).
  /// massAside (a distributed solve's rank): the masses go up into a buffer of their own on the second stream while
  /// the keys are sorted (8 more bytes per cell; slot 5 is the sort's until it ends), instead of into slot 5 after it.
  Status sortAndBuild(const CellsView& cells, const SolveOptions& opt, bool direct, double givenScale,
                      bool massAside = false) {
    const unsigned n = n_;
    cudaStream_t s = stream_;
    const BlockLayout& L = layout_;
    char* const base = reinterpret_cast<char*>(block_.get());
    double* const* slot = slot_;
    double* hb = static_cast<double*>(small_.get());
    const CellChecks checks = cellChecks(opt);
    RootCube root = root_;
    AG_CUDA_TRY(cudaEventRecord(events_[8], s));
    // ---- length scale, keys, sort (as sortCellsByKey)
    const double scale = givenScale > 0 ? givenScale : lengthScaleFor(root.side);
    const double inv = double(kKeyCells) / root.side;
    // keys in slots 4 and 5, indices in the two index halves (CUB's double buffer)
    std::uint64_t* keyHalf[2] = {reinterpret_cast<std::uint64_t*>(slot[4]), reinterpret_cast<std::uint64_t*>(slot[5])};
    std::uint32_t* idxHalf[2] = {reinterpret_cast<std::uint32_t*>(base + L.idx[0]),
                                 reinterpret_cast<std::uint32_t*>(base + L.idx[1])};
    AG_TRY(launchKeys(slot[0], slot[1], slot[2], n, root.lo[0], root.lo[1], root.lo[2], inv, keyHalf[0], idxHalf[0],
                      s));
    double* massAt = slot[5];
    if (massAside) {
      AG_TRY(massAside_.reserve(n, "the cells' masses"));
      massAt = massAside_.get();
    }
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
    // coincident cells (checkCoincidentCells), while slots 0-2 still hold the caller's centres; the walk's overflow
    // counter is free until the walk resets it
    unsigned* coincident = walkCounters_.get() + kOverflowNeed;
    unsigned* hcoincident = reinterpret_cast<unsigned*>(hb + 18);
    AG_CUDA_TRY(cudaMemsetAsync(coincident, 0xff, sizeof(unsigned), s));
    AG_TRY(launchCoincident(slot[0], slot[1], slot[2], sortedKeys_, order_, n, coincident, s));
    AG_CUDA_TRY(cudaMemcpyAsync(hcoincident, coincident, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaEventRecord(events_[2], s));

    // ---- the mass into slot 5 (or aside, already while the sort runs), checked and summed by the bounds kernel (the
    //      same order of additions as before); read back after the build's synchronisations
    {
      Transfer t{const_cast<double*>(cells.mass), massAt, std::size_t(n) * 8};
      if (massAside) {
        AG_TRY(copyIn(&t, 1, copyStream_));
        AG_CUDA_TRY(cudaEventRecord(events_[6], copyStream_));
        AG_CUDA_TRY(cudaStreamWaitEvent(s, events_[6], 0));
      } else {
        AG_TRY(copyIn(&t, 1));
        AG_CUDA_TRY(cudaEventRecord(events_[6], s));
      }
    }
    double* hmass = hb + 16;
    unsigned* hmassBad = reinterpret_cast<unsigned*>(hb + 17);
    AG_CUDA_TRY(cudaMemsetAsync(checks.firstBad, 0xff, sizeof(unsigned), s));
    AG_TRY(launchBounds(nullptr, nullptr, nullptr, massAt, nullptr, n, checks, bounds_.get(),
                        bounds_.get() + kBoundsStride * kBoundsBlocks, s));
    AG_CUDA_TRY(cudaMemcpyAsync(hmass, bounds_.get() + kBoundsStride * kBoundsBlocks + 6, sizeof(double), cudaMemcpyDeviceToHost,
                                s));
    AG_CUDA_TRY(cudaMemcpyAsync(hmassBad, checks.firstBad, sizeof(unsigned), cudaMemcpyDeviceToHost, s));

    // ---- octree topology and the nodes' first keys (in the spare index half), then the keys are dead
    tail_ = Carve(base + L.slot[5], block_.bytes() - L.slot[5]);
    extra_ = Carve(base + L.extra, block_.bytes() - L.extra);
    nodes_ = 0;
    depth_ = 0;
    if (!direct) {
      AG_TRY(buildTree(n, opt.leafSize, &nodes_, &depth_));
      AG_TRY(computeNodeKeys(nodes_));
    }
    AG_CUDA_TRY(cudaEventRecord(events_[7], s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    if (*hmassBad != 0xffffffffu) AG_TRY(flaggedCell(*hmassBad, cells, opt));
    const double massTotal = *hmass;
    if (*hcoincident != 0xffffffffu) {  // the caller's index of that sorted cell, then the host names the pair
      std::uint32_t b = 0;
      AG_CUDA_TRY(cudaMemcpy(&b, order_ + *hcoincident, sizeof b, cudaMemcpyDeviceToHost));
      return coincidentCellsError(cells, b);
    }
    AG_TRY(checkMassRange(massTotal, minSize_, root.side, opt));  // root: still in the caller's units

    // ---- gather in place, rotating through slot 4 (the keys' slot): each array lands in the slot the previous one
    //      left; the mass's unsorted copy in slot 5 is read last, so slot 5 ends free
    {
      const double* from[5] = {slot[0], slot[1], slot[2], slot[3], massAt};
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
    root_ = root;
    massScale_ = powerOfTwoScale(massTotal);
    massTotal_ = massTotal;
    // fully periodic boxes: the density contrast, as the CPU (tree/tree.h applyDensityContrast; the total from
    // core/fixed_sum.h, so both subtract the same mean)
    contrastApplied_ = !direct && opt.fullyPeriodic() && opt.densityContrast;
    meanDensity_ = 0;
    if (contrastApplied_) {
      const ContrastDensity cd = contrastDensity(opt, scale, contrastTotal_);
      AG_TRY(launchDensityContrast(slot[3], sortedSize_, n, cd.rhoScaled, s));  // slot 3: the sorted masses
      meanDensity_ = cd.rho;
    }
    AG_CUDA_TRY(cudaEventRecord(events_[3], s));

    // ---- sums in sorted order: the walk's phi in the sizes' slot (after the moments, the walk turns the sizes into
    //      self terms and each group's smallest size, and writes each cell's phi over its self term as it adds it);
    //      the direct path's phi in the tail; the acceleration sums in buffers of their own
    sums_[0] = direct ? tail_.take<double>(n) : sortedSize_;
    sums_[1] = sums_[2] = sums_[3] = nullptr;
    if (!sums_[0]) return Status::error(ErrorCode::Internal, "CUDA backend: no room for the potential sums");
    const int nsum = opt.accelerations ? 4 : 1;
    for (int k = 1; k < nsum; ++k) {
      AG_TRY(accSum_[k - 1].reserve(n, "the walk's acceleration sums"));
      sums_[k] = accSum_[k - 1].get();
    }
    if (copt_.poisonDevice)
      for (int k = 0; k < nsum; ++k)
        if (sums_[k] != sortedSize_) AG_TRY(launchPoison(sums_[k], n, s));
    return Status::success();
  }

  /// Scale, scatter to the caller's order, into slots nothing reads any more (pot over x, ax over y, ay over z, az
  /// over the mass), and download into `dest`.
  Status finishAndDownload(const SolveOptions& opt, const ResultTargets& dest) {
    cudaStream_t s = stream_;
    const unsigned n = n_;
    double* res[4] = {slot_[4], slot_[0], slot_[1], slot_[3]};
    const int nout = opt.accelerations ? 4 : 1;
    if (copt_.poisonDevice)
      for (int k = 0; k < nout; ++k) AG_TRY(launchPoison(res[k], n, s));
    FinishParams fp;
    fp.order = order_;
    fp.phi = sums_[0];
    fp.gx = sums_[1];
    fp.gy = sums_[2];
    fp.gz = sums_[3];
    fp.pot = res[0];
    fp.ax = res[1];
    fp.ay = res[2];
    fp.az = res[3];
    fp.n = n;
    fp.invMassScale = 1.0 / massScale_;
    fp.scale = scale_;
    fp.G = opt.G;
    AG_TRY(launchFinish(fp, opt.accelerations, s));
    AG_CUDA_TRY(cudaEventRecord(events_[5], s));

    // ---- download
    const auto td = Clock::now();
    {
      double* host[4] = {dest.potential, dest.ax, dest.ay, dest.az};
      Transfer t[4];
      for (int k = 0; k < nout; ++k) t[k] = Transfer{host[k], res[k], std::size_t(n) * 8};
      AG_TRY(copyOut(t, nout, stream_));
    }
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    stats_.secondsDownload = since(td);
    return Status::success();
  }

  /// The phases' times from the events (after finishAndDownload) into stats_ and `st`.
  void fillStats(bool direct, Clock::time_point t0, SolveStats& st) {
    stats_.secondsUpload = elapsed(0, 1) + std::max(0.0, elapsed(2, 6));  // a rank's masses may go up during the sort
    stats_.secondsKeys = elapsed(8, 2) + elapsed(7, 3);
    stats_.secondsBuild = direct ? 0 : elapsed(6, 7);
    stats_.secondsMoments = direct ? 0 : elapsed(3, 4);
    stats_.secondsWalk = elapsed(4, 5);
    stats_.secondsTotal = since(t0);
    stats_.deviceBytes = deviceBytes();
    stats_.deviceBytesPerCell = double(stats_.deviceBytes) / double(n_);
    stats_.pinnedBytes = staging_->pinnedBytes() + small_.bytes();
    st.secondsKeys = stats_.secondsKeys;
    st.secondsBuild = stats_.secondsBuild;
    st.secondsMoments = stats_.secondsMoments;
    st.secondsWalk = stats_.secondsWalk;
    st.secondsTotal = stats_.secondsTotal;
    st.secondsUpload = stats_.secondsUpload;
    st.secondsDownload = stats_.secondsDownload;
    st.deviceBytesPerCell = stats_.deviceBytesPerCell;
  }

  /// cpu/finish.cpp's volume-weighted mean potential over the caller's arrays (on the copy threads: a serial pass
  /// would cost a tenth of a 16M-cell solve).
  double meanPotentialOf(const double* phi, const double* size, std::size_t n) const {
    const std::size_t chunk = std::size_t(1) << 16, chunks = (n + chunk - 1) / chunk;
    std::vector<double> vp(chunks, 0.0), vv(chunks, 0.0);
    parallelFor(chunks, 1, copyThreads(), [&](std::size_t b, std::size_t e, int) {
      for (std::size_t c = b; c < e; ++c)
        for (std::size_t i = c * chunk; i < std::min(n, (c + 1) * chunk); ++i) {
          const double v = size[i] * size[i] * size[i];
          vp[c] += v * phi[i];
          vv[c] += v;
        }
    });
    double p = 0, v = 0;
    for (std::size_t c = 0; c < chunks; ++c) {
      p += vp[c];
      v += vv[c];
    }
    return v > 0 ? p / v : 0.0;
  }

  int copyThreads() const {
    if (copt_.copyThreads > 0) return std::min(copt_.copyThreads, 64);
    return std::max(1, std::min(8, resolveThreadCount(0) / 2));
  }

  /// Host -> device copies queued on `stream` (the backend's unless given).
  Status copyIn(const Transfer* t, int count, cudaStream_t stream = nullptr) {
    if (!stream) stream = stream_;
    if (copt_.pinnedStaging) {
      AG_TRY(staging_->prepare(copt_.stagingChunkBytes, copyThreads(), device_));
      return staging_->upload(t, count, stream);
    }
    for (int k = 0; k < count; ++k)
      AG_CUDA_TRY(cudaMemcpyAsync(t[k].device, t[k].host, t[k].bytes, cudaMemcpyHostToDevice, stream));
    return Status::success();
  }

  /// Device -> host copies on `stream` (the backend's, or the tree export's), complete on return.
  Status copyOut(const Transfer* t, int count, cudaStream_t stream) {
    if (copt_.pinnedStaging) {
      AG_TRY(staging_->prepare(copt_.stagingChunkBytes, copyThreads(), device_));
      return staging_->download(t, count, stream);
    }
    for (int k = 0; k < count; ++k)
      AG_CUDA_TRY(cudaMemcpyAsync(t[k].host, t[k].device, t[k].bytes, cudaMemcpyDeviceToHost, stream));
    AG_CUDA_TRY(cudaStreamSynchronize(stream));
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
    nodeDipPtr_ = nullptr;
    if (opt.signedSources()) AG_TRY(carveOrReserve(tail_, nodeDip_, nodes, "node dipoles", nodeDipPtr_));
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
    p.signedSources = opt.signedSources();
    p.nodeDip = nodeDipPtr_;
    for (int level = depth; level >= 0; --level)
      AG_TRY(launchMomentsLevel(p, levelStart_[level], levelStart_[level + 1], level, stream_));
    return Status::success();
  }

  /// The Ewald table for this box (ewald/walk_setup.h: memory, disk cache or build) and its float copy on the
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

  struct WalkTally {
    unsigned long long approx = 0, direct = 0;
    unsigned skipped = 0;
  };

  /// The walk over the local tree: its launch shape and parameters, each group's smallest size, and the sizes turned
  /// into self terms (which phi overwrites: its array is the sizes', see prepareCells).
  Status prepareWalk(unsigned n, const SolveOptions& opt, double massScale, double* phi, double* const* g,
                     WalkConfig* cfg, int* blocks, WalkParams& p) {
    AG_TRY(walkShape(n, opt, cfg, blocks));
    const unsigned groupSize = unsigned(opt.groupSize);
    const unsigned numGroups = (n + groupSize - 1) / groupSize;
    AG_TRY(walkCounters_.reserve(kWalkCounterCount, "walk counters"));

    // each group's smallest size after the topology in the spare index half (the node keys are dead), else in a
    // buffer
    Carve spare = idxSpare_;
    if (reinterpret_cast<char*>(topoPtr_) == idxSpare_.base) (void)spare.take<uint4>(levelStart_.back());
    double* groupHmin = nullptr;
    AG_TRY(carveOrReserve(spare, groupHmin_, numGroups, "group sizes", groupHmin));
    const double selfCoef = selfCoefficient(opt.selfPotential);
    AG_TRY(launchWalkPrep(phi, sortedCells_.mass, n, groupSize, selfCoef, groupHmin, stream_));

    p = WalkParams{};
    p.cells = sortedCells_;
    p.sources = sortedCells_;  // the local tree's leaves hold the targets themselves
    p.groupHmin = groupHmin;
    p.selfTerm = phi;
    p.nodeMac = nodeMacPtr_;
    p.nodeMQ = nodeMQPtr_;
    p.nodeDip = nodeDipPtr_;
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
    if (cfg->periodic) p.ewald = ewaldView_;
    p.ewaldExpansion = opt.ewaldExpansion;
    stats_.walkLaunches = 0;
    for (double& t : stats_.walkPassSeconds) t = 0;
    stats_.walkBlocks = *blocks;
    stats_.walkWarps = int(unsigned(*blocks) * kWalkWarpsPerBlock);
    return Status::success();
  }

  Status walk(unsigned n, const SolveOptions& opt, double massScale, double* phi, double* const* g, SolveStats& st) {
    WalkConfig cfg;
    int blocks = 1;
    WalkParams p;
    AG_TRY(prepareWalk(n, opt, massScale, phi, g, &cfg, &blocks, p));
    WalkTally total;
    AG_TRY(walkUntilDone(cfg, blocks, opt, p, total));
    st.approxInteractions = total.approx;
    st.directInteractions = total.direct;
    st.groups = p.numGroups;
    return Status::success();
  }

  /// Periodic: the walk of the groups that expand the Ewald correction, then (if any are left) the others, then the
  /// expanding groups' corrections (kernels.h WalkConfig). A queue overflow in any pass reruns them all: groups that
  /// finished wrote phi over their self terms, which come back.
  Status walkUntilDone(const WalkConfig& cfg, int blocks, const SolveOptions& opt, WalkParams& p, WalkTally& total) {
    for (;;) {
      total = WalkTally{};
      unsigned need = 0;
      AG_TRY(walkPasses(cfg, blocks, opt, p, total, &need, false));
      if (need == 0) return Status::success();
      AG_TRY(growQueue(need));
      AG_TRY(restoreSizes(p.n));
      AG_TRY(launchWalkPrep(p.phi, sortedCells_.mass, p.n, p.groupSize, selfCoefficient(opt.selfPotential),
                            const_cast<double*>(p.groupHmin), stream_));
    }
  }

  /// One try of the walk's passes (periodic: up to three, kernels.h WalkConfig), into `total`; stops at the first
  /// pass that overflowed its queue (*need > 0). firstDone: the first pass was launched (launchPass) and collected
  /// already (a GPU rank's local walk), its counts in `total`.
  Status walkPasses(const WalkConfig& cfg, int blocks, const SolveOptions& opt, WalkParams& p, WalkTally& total,
                    unsigned* need, bool firstDone) {
    WalkConfig c = cfg;
    const bool imagePass = !c.periodic || opt.ewaldExpansion;  // the first pass: the walk (periodic: the images)
    if (imagePass && !firstDone) AG_TRY(walkPass(c, blocks, p, total, need));
    if (*need == 0 && c.periodic && (!opt.ewaldExpansion || total.skipped > 0) && (imagePass || !firstDone)) {
      c.perCellEwald = true;
      AG_TRY(walkPass(c, blocks, p, total, need));
    }
    if (*need == 0 && c.periodic && opt.ewaldExpansion) {  // the expanding groups' corrections, added to phi
      WalkConfig e = cfg;
      e.ewaldCorrection = true;
      const unsigned skipped = total.skipped;
      AG_TRY(walkPass(e, blocks, p, total, need));
      total.skipped = skipped;
    }
    return Status::success();
  }

  /// A larger walk queue after an overflow that needed `need` entries per warp.
  Status growQueue(unsigned need) {
    if (queueCap_ >= (1u << 24))
      return Status::error(ErrorCode::Internal, "CUDA backend: the walk queue would need more than 2^24 entries "
                                                "per warp (" + std::to_string(need) + ")");
    queueCap_ = std::max(2 * queueCap_, nextPow2(need));
    return Status::success();
  }

  /// One launch of a walk kernel over the groups it owns; *need > 0 when a queue overflowed (rerun with a larger one).
  Status walkPass(const WalkConfig& cfg, int maxBlocks, WalkParams& p, WalkTally& total, unsigned* need) {
    AG_TRY(launchPass(cfg, maxBlocks, p));
    return collectPass(total, need);
  }

  /// walkPass's launch and the copies of its counters, not waited for. The periodic kernels have their own
  /// occupancy: fewer blocks than walkShape's (sized for the queues) is fine.
  Status launchPass(const WalkConfig& cfg, int maxBlocks, WalkParams& p) {
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
    passStart_ = Clock::now();
    passIndex_ = cfg.ewaldCorrection ? 2 : cfg.perCellEwald ? 1 : 0;
    AG_TRY(launchWalk(cfg, p, blocks, s));
    AG_CUDA_TRY(cudaMemcpyAsync(hc, walkCounters_.get(), kWalkCounterCount * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaMemcpyAsync(ht, tally_.get(), 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
    return Status::success();
  }

  /// Waits for the pass launchPass queued and reads its counters.
  Status collectPass(WalkTally& total, unsigned* need) {
    const unsigned* hc = static_cast<const unsigned*>(small_.get());
    const unsigned long long* ht =
        reinterpret_cast<const unsigned long long*>(static_cast<const char*>(small_.get()) + 64);
    AG_CUDA_TRY(cudaStreamSynchronize(stream_));
    stats_.walkPassSeconds[passIndex_] = since(passStart_);
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

  // The current solve between its phases (prepareCells onwards; a distributed solve's rank* calls)
  unsigned n_ = 0, nodes_ = 0;
  int depth_ = 0;
  BlockLayout layout_;
  double* slot_[6] = {};
  double* sums_[4] = {};     ///< phi (the sizes' slot, or the tail for the direct path), gx, gy, gz sums
  RootCube root_;            ///< scaled
  double massScale_ = 1;
  double massTotal_ = 0;     ///< of the cells (the device's sum)
  double contrastTotal_ = 0; ///< the density contrast's total mass (core/fixed_sum.h; every rank's in a distributed solve)
  bool contrastApplied_ = false;  ///< this solve's sources are the density contrast
  double meanDensity_ = 0;   ///< ... the mean density removed (caller's units)
  bool rankPeriodic_ = false;  ///< a distributed solve's rank in a periodic box
  unsigned rankGroupSize_ = 32;
  double extentLo_[3] = {}, extentHi_[3] = {};  ///< the cells' extents (caller's units) from the bounds pass
  double minSize_ = 0;                            ///< the smallest cell size (caller's units) from the bounds pass
  // A distributed solve's local walk and the received LETs
  Clock::time_point rankT0_;
  WalkConfig rankCfg_;
  int rankBlocks_ = 1;
  WalkParams rankWalk_ = {};
  cudaStream_t copyStream_ = nullptr;  ///< the tree's export while the local walk runs
  DeviceBuffer<uint4> letTopo_;
  DeviceBuffer<D4> letMac_;
  DeviceBuffer<float4> letMQ_;
  DeviceBuffer<float4> letDip_;      ///< the received LETs' dipoles (signed sources)
  DeviceBuffer<double> letCells_[4];  ///< x, y, z (scaled), mass
  DeviceBuffer<double> letSums_;      ///< the received LETs' walk's sums (phi, gx, gy, gz), added to sums_
  DeviceBuffer<double> massAside_;    ///< a rank's masses as they went up (sortAndBuild's massAside)
  DeviceBuffer<std::uint64_t> letRaw_;  ///< the received LETs as they arrived (packed), one after the other
  cudaEvent_t letsReady_ = nullptr;   ///< rankPrepareReceived's upload and merge are done (on copyStream_)
  std::size_t lentCount_ = 0;         ///< LETs rankPrepareReceived put up for the next rankWalkReceived (0: none)
  SourceTreeArrays forestTop_;        ///< uploadForest's virtual nodes on the host, and their device layout:
  std::vector<uint4> forestTopo_;
  std::vector<D4> forestMac_;
  std::vector<float4> forestMQ_;
  // The LETs this rank sends, chosen and packed on the device (rankChooseLets)
  DeviceBuffer<unsigned char> letState_;              ///< per LET: each node's LetSelection::Kind (or 0xff)
  DeviceBuffer<unsigned long long> letCount_;         ///< (node, cells) counts of the LET being chosen
  DeviceBuffer<unsigned long long> letOffset_;        ///< per LET: their exclusive scan
  std::vector<std::unique_ptr<DeviceBuffer<std::uint64_t>>> letPacks_;  ///< per LET: packed (let/let_layout.h)
  std::vector<std::size_t> letPackBytes_;
  PinnedBuffer letTotals_;                            ///< per LET: its (nodes, cells) read back

  mutable std::mutex mu_;
  CudaOptions copt_;
  CudaStats stats_;
  bool ready_ = false;
  int device_ = -1, smCount_ = 0;
  std::string deviceName_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t events_[kEvents] = {};
  unsigned queueCap_ = 0;
  std::vector<uint4> hostTopo_;   ///< rankExportTree's downloads of the node arrays
  std::vector<D4> hostMac_;
  std::vector<float4> hostMQ_;
  Clock::time_point passStart_;  ///< the last walk pass's launch (CudaStats::walkPassSeconds)
  int passIndex_ = 0;
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
  float4* nodeDipPtr_ = nullptr;         ///< signed sources: node dipoles (tail, or nodeDip_); else null
  DeviceBuffer<unsigned char> cubTemp_;
  DeviceBuffer<uint4> topo_;  ///< (*)
  DeviceBuffer<unsigned> levelCount_, levelOffset_;  ///< (*)
  DeviceBuffer<std::uint64_t> nodeKeys_;             ///< (*)
  DeviceBuffer<double> groupHmin_;                   ///< (*)
  DeviceBuffer<NodeMoments> moments_;  ///< (*)
  DeviceBuffer<D4> nodeMac_;            ///< (*)
  DeviceBuffer<float4> nodeMQ_;         ///< (*)
  DeviceBuffer<float4> nodeDip_;        ///< (*) signed sources
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

int cudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

bool cudaDeviceAvailable(std::string* why) {
  const Status st = cuda::checkDevice(0, nullptr);
  if (!st.ok() && why) *why = st.message;
  return st.ok();
}

}  // namespace amrgrav
