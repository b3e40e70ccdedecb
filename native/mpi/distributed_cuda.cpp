/// \file distributed_cuda.cpp
/// \brief The GPU rank of a distributed solve (rank_engine.h): the CUDA backend's tree on this rank's device, the
/// local walk queued before the LETs are chosen (so the selection, the packing and the exchange run beside it),
/// the tree copied down on a second stream for that selection, and the received LETs walked on the device as one
/// forest into the same sums. Compiled only with both CUDA and MPI.
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "cuda/cuda_backend.h"
#include "mpi/mpi_world.h"
#include "mpi/rank_engine.h"

namespace amrgrav {
namespace {

/// One backend object per process and device, kept between solves (its device buffers are reused every step).
CudaBackend& backendFor(int device) {
  static std::unique_ptr<CudaBackend> backend;
  static int onDevice = -1;
  if (!backend || onDevice != device) {
    CudaOptions o;
    o.device = device;
    backend = makeCudaBackend(o);
    onDevice = device;
  }
  return *backend;
}

/// The host copy of the rank's tree, kept between solves like the backend: a hydro code solves every step with
/// about the same cells, and fresh vectors of ~40 bytes per cell would be zero-filled and page-faulted each time.
HostTree& persistentHostTree() {
  static HostTree tree;
  return tree;
}

class CudaRankEngine final : public RankEngine {
 public:
  const char* name() const override { return "cuda"; }

  Status open(const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) override {
    const int devices = cudaDeviceCount();
    if (devices <= 0) {  // the agreement prefixes the rank: "rank r of N: CUDA backend: ..."
      std::string why = "CUDA backend: no CUDA device found";
      (void)cudaDeviceAvailable(&why);
      return Status::error(ErrorCode::NoDevice, why);
    }
    gpu_ = &backendFor(deviceForLocalRank(nodeLocalRank(), devices));
    return gpu_->rankOpen(cells, opt, lo, hi);  // the cells are checked and bounded on the device
  }

  Status build(const CellsView& cells, const SolveOptions& opt, double scale, SolveStats& st) override {
    n_ = cells.n;
    st.threads = 1;
    if (n_ == 0) return Status::success();
    return gpu_->rankBuild(cells, opt, scale, st);
  }

  Status startLocalWalk(const SolveOptions& opt) override {
    return n_ > 0 ? gpu_->rankStartLocalWalk(opt) : Status::success();
  }
  bool walksAlongside() const override { return true; }

  Status localSource(SourceTree& tree, RankSummary& summary) override {
    if (n_ == 0) {
      tree = SourceTree{};
      summary = summariseCells(SortedCells{});
      return Status::success();
    }
    double lo[3], hi[3];
    AG_TRY(gpu_->rankExportTree(host_, lo, hi));
    tree = host_.view();
    summary = summariseCells(host_.x.data(), host_.y.data(), host_.z.data(), host_.cellMass.data(), nullptr, n_);
    for (int d = 0; d < 3; ++d) {
      summary.extentLo[d] = lo[d];
      summary.extentHi[d] = hi[d];
    }
    return Status::success();
  }

  /// Polls the device between message progress; a short sleep leaves the host's cores to the other ranks.
  Status completeLocalWalk(const SolveOptions& opt, const std::function<Status()>& progress, SolveStats& st) override {
    if (n_ == 0) return Status::success();
    for (;;) {
      bool done = false;
      AG_TRY(gpu_->rankLocalWalkDone(&done));
      AG_TRY(progress());
      if (done) break;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return gpu_->rankFinishLocalWalk(opt, st);
  }

  Status walkReceived(const std::vector<SourceTree>& lets, const SolveOptions& opt, SolveStats& st) override {
    if (n_ == 0) return Status::success();
    return gpu_->rankWalkReceived(lets.data(), lets.size(), opt, st);
  }

  Status finish(const SolveOptions& opt, SolveResult& out) override {
    if (n_ == 0) {
      (void)out.targets(0, opt.accelerations);
      return Status::success();
    }
    return gpu_->rankFinish(opt, out);
  }

 private:
  CudaBackend* gpu_ = nullptr;
  std::size_t n_ = 0;
  HostTree& host_ = persistentHostTree();
};

}  // namespace

std::unique_ptr<RankEngine> makeCudaRankEngine() { return std::make_unique<CudaRankEngine>(); }

}  // namespace amrgrav
