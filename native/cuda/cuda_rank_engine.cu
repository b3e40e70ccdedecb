/// \file cuda_rank_engine.cu
/// \brief The GPU rank of a distributed solve (cuda_rank_engine.h) over the device's rank steps (rank_phase.h).
#include "cuda/cuda_rank_engine.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/device.h"
#include "cuda/device_state.h"
#include "cuda/rank_phase.h"

namespace amrgrav {
namespace {

/// One device state per process and device, kept between solves (its device buffers are reused every step).
cuda::DeviceState& stateFor(int device) {
  static std::unique_ptr<cuda::DeviceState> state;
  static int onDevice = -1;
  if (!state || onDevice != device) {
    CudaOptions o;
    o.device = device;
    state = std::make_unique<cuda::DeviceState>(o);
    onDevice = device;
  }
  return *state;
}

class CudaRankEngine final : public RankEngine {
 public:
  explicit CudaRankEngine(std::function<int(int)> deviceFor) : deviceFor_(std::move(deviceFor)) {}
  const char* name() const override { return "cuda"; }

  Status open(const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) override {
    const int devices = cudaDeviceCount();
    if (devices <= 0) {  // the agreement prefixes the rank: "rank r of N: CUDA backend: ..."
      std::string why = "CUDA backend: no CUDA device found";
      (void)cudaDeviceAvailable(&why);
      return Status::error(ErrorCode::NoDevice, why);
    }
    gpu_ = &stateFor(deviceFor_(devices));
    return cuda::rankOpen(*gpu_, cells, opt, lo, hi);  // the cells are checked and bounded on the device
  }

  Status build(const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
               SolveStats& st) override {
    n_ = cells.n;
    st.threads = 1;
    if (n_ == 0) return Status::success();
    return cuda::rankBuild(*gpu_, cells, opt, scale, totalMass, st);
  }

  Status summary(RankSummary& out) override {
    if (n_ == 0) {
      out = summariseCells(SortedCells{});
      return Status::success();
    }
    return cuda::rankSummary(*gpu_, out);
  }

  Status chooseLets(const std::vector<RemoteBox>& boxes) override {
    letNodes_.assign(boxes.size(), 0);
    letCells_.assign(boxes.size(), 0);
    if (n_ == 0 || boxes.empty()) return Status::success();
    return cuda::rankChooseLets(*gpu_, boxes.data(), boxes.size(), letNodes_.data(), letCells_.data());
  }

  Status startLocalWalk(const SolveOptions& opt) override {
    return n_ > 0 ? cuda::rankStartLocalWalk(*gpu_, opt) : Status::success();
  }
  bool walksAlongside() const override { return true; }

  Status takeLet(std::size_t k, PackedLet& out, std::size_t& nodes, std::size_t& cells) override {
    nodes = letNodes_.at(k);
    cells = letCells_.at(k);
    return cuda::rankDownloadLet(*gpu_, k, out);
  }

  /// Polls the device between message progress; a short sleep leaves the host's cores to the other ranks.
  Status completeLocalWalk(const SolveOptions& opt, const std::function<Status()>& progress, SolveStats& st) override {
    if (n_ == 0) return Status::success();
    for (;;) {
      bool done = false;
      AG_TRY(cuda::rankLocalWalkDone(*gpu_, &done));
      AG_TRY(progress());
      if (done) break;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return cuda::rankFinishLocalWalk(*gpu_, opt, st);
  }

  Status prepareReceived(const std::vector<ReceivedLet>& lets) override {
    if (n_ == 0 || lets.empty()) return Status::success();
    return cuda::rankPrepareReceived(*gpu_, lets.data(), lets.size());
  }

  Status walkReceived(const std::vector<ReceivedLet>& lets, const SolveOptions& opt, SolveStats& st) override {
    if (n_ == 0) return Status::success();
    return cuda::rankWalkReceived(*gpu_, lets.data(), lets.size(), opt, st);
  }

  Status finish(const SolveOptions& opt, SolveResult& out) override {
    if (n_ == 0) {
      (void)out.targets(0, opt.accelerations);
      return Status::success();
    }
    return cuda::rankFinish(*gpu_, opt, out);
  }

 private:
  std::function<int(int)> deviceFor_;
  cuda::DeviceState* gpu_ = nullptr;
  std::size_t n_ = 0;
  std::vector<std::size_t> letNodes_, letCells_;
};

}  // namespace

std::unique_ptr<RankEngine> makeCudaRankEngine(std::function<int(int deviceCount)> deviceFor) {
  return std::make_unique<CudaRankEngine>(std::move(deviceFor));
}

}  // namespace amrgrav
