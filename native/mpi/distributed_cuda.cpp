/// \file distributed_cuda.cpp
/// \brief The GPU rank of a distributed solve (rank_engine.h): the CUDA backend's tree on this rank's device, the
/// LETs chosen and packed on the device (cuda/kernel_let.cu) before the local walk is queued, downloaded on a
/// second stream and sent while it runs, and the received LETs walked on the device as one forest into the same
/// sums. Compiled only with both CUDA and MPI.
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "cuda/cuda_backend.h"
#include "mpi/mpi_world.h"
#include "core/rank_engine.h"

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

  Status build(const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
               SolveStats& st) override {
    n_ = cells.n;
    st.threads = 1;
    if (n_ == 0) return Status::success();
    return gpu_->rankBuild(cells, opt, scale, totalMass, st);
  }

  Status summary(RankSummary& out) override {
    if (n_ == 0) {
      out = summariseCells(SortedCells{});
      return Status::success();
    }
    return gpu_->rankSummary(out);
  }

  Status chooseLets(const std::vector<RemoteBox>& boxes) override {
    letNodes_.assign(boxes.size(), 0);
    letCells_.assign(boxes.size(), 0);
    if (n_ == 0 || boxes.empty()) return Status::success();
    return gpu_->rankChooseLets(boxes.data(), boxes.size(), letNodes_.data(), letCells_.data());
  }

  Status startLocalWalk(const SolveOptions& opt) override {
    return n_ > 0 ? gpu_->rankStartLocalWalk(opt) : Status::success();
  }
  bool walksAlongside() const override { return true; }

  Status takeLet(std::size_t k, PackedLet& out, std::size_t& nodes, std::size_t& cells) override {
    nodes = letNodes_.at(k);
    cells = letCells_.at(k);
    return gpu_->rankDownloadLet(k, out);
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

  Status prepareReceived(const std::vector<ReceivedLet>& lets) override {
    if (n_ == 0 || lets.empty()) return Status::success();
    return gpu_->rankPrepareReceived(lets.data(), lets.size());
  }

  Status walkReceived(const std::vector<ReceivedLet>& lets, const SolveOptions& opt, SolveStats& st) override {
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
  std::vector<std::size_t> letNodes_, letCells_;
};

}  // namespace

std::unique_ptr<RankEngine> makeCudaRankEngine() { return std::make_unique<CudaRankEngine>(); }

}  // namespace amrgrav
