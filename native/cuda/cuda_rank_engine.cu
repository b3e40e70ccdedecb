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
#include "cuda/rank_system.h"
#include "tree/particle_tree.h"
#include "core/validate.h"

namespace amrgrav {
namespace {

class CudaRankEngine final : public RankEngine {
 public:
  explicit CudaRankEngine(std::function<int(int)> deviceFor) : deviceFor_(std::move(deviceFor)) {}
  const char* name() const override { return "cuda"; }
  int device() const override { return gpu_ ? gpu_->copt.device : -1; }

  Status open(const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) override {
    const int devices = cudaDeviceCount();
    if (devices <= 0) {  // the agreement prefixes the rank: "rank r of N: CUDA backend: ..."
      std::string why = "CUDA backend: no CUDA device found";
      (void)cudaDeviceAvailable(&why);
      return Status::error(ErrorCode::NoDevice, why);
    }
    gpu_ = &cuda::rankDeviceState(deviceFor_(devices));
    system_ = false;
    return cuda::rankOpen(*gpu_, cells, opt, lo, hi);  // the cells are checked and bounded on the device
  }

  /// Probes, targets and particles (rank_system.h; the subset: rankStartLocalWalk): checked now, as the CPU rank.
  Status openSystem(const SystemView& system, const SolveOptions& opt) override {
    AG_TRY(validateProbes(system.probes, opt));
    if (system.hasTargets()) AG_TRY(validateTargets(system.targets, system.targetCount, system.cells.n));
    AG_TRY(validateParticles(system.particles, opt));
    sys_.sys = system;
    system_ = true;
    return Status::success();
  }

  bool takesParticles() const override { return true; }

  Status buildParticles(const SolveOptions& opt, double scale) override {
    return cuda::rankSystemParticles(*gpu_, sys_, opt, scale);
  }

  Status takeParticleLet(const RemoteBox& box, const SolveOptions& opt, PackedLet& out, std::size_t& nodes,
                         std::size_t& particles) override {
    return cuda::rankSystemParticleLet(sys_, box, opt, out, nodes, particles);
  }

  Status walkReceivedParticles(const std::vector<ReceivedLet>& lets, const SolveOptions& opt) override {
    return cuda::rankSystemReceivedParticles(*gpu_, sys_, lets.data(), lets.size(), opt);
  }

  Status build(const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
               SolveStats& st) override {
    n_ = cells.n;
    st.threads = 1;
    if (n_ > 0) AG_TRY(cuda::rankBuild(*gpu_, cells, opt, scale, totalMass, st));
    if (!system_) return Status::success();
    sys_.hasCells = n_ > 0;
    return cuda::rankSystemBuild(*gpu_, sys_, opt, scale, totalMass);
  }

  Status summary(RankSummary& out) override {
    if (n_ == 0) out = summariseCells(SortedCells{});
    else AG_TRY(cuda::rankSummary(*gpu_, out));
    return system_ ? cuda::rankSystemSummary(*gpu_, sys_, out) : Status::success();
  }

  Status chooseLets(const std::vector<RemoteBox>& boxes) override {
    letNodes_.assign(boxes.size(), 0);
    letCells_.assign(boxes.size(), 0);
    if (n_ == 0 || boxes.empty()) return Status::success();
    return cuda::rankChooseLets(*gpu_, boxes.data(), boxes.size(), letNodes_.data(), letCells_.data());
  }

  Status startLocalWalk(const SolveOptions& opt) override {
    if (n_ == 0) return Status::success();
    const bool subset = system_ && sys_.sys.hasTargets();  // only the groups holding targets, in every cell walk
    return cuda::rankStartLocalWalk(*gpu_, opt, subset ? sys_.sys.targets : nullptr,
                                    subset ? sys_.sys.targetCount : 0);
  }
  bool walksAlongside() const override { return true; }

  Status takeLet(std::size_t k, PackedLet& out, std::size_t& nodes, std::size_t& cells) override {
    nodes = letNodes_.at(k);
    cells = letCells_.at(k);
    return cuda::rankDownloadLet(*gpu_, k, out);
  }

  /// Polls the device between message progress; a short sleep leaves the host's cores to the other ranks.
  Status completeLocalWalk(const SolveOptions& opt, const std::function<Status()>& progress, SolveStats& st) override {
    if (n_ > 0) {
      for (;;) {
        bool done = false;
        AG_TRY(cuda::rankLocalWalkDone(*gpu_, &done));
        AG_TRY(progress());
        if (done) break;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      AG_TRY(cuda::rankFinishLocalWalk(*gpu_, opt, st));
    }
    if (!system_) return Status::success();
    AG_TRY(cuda::rankSystemLocal(*gpu_, sys_, opt));
    return progress();
  }

  Status prepareReceived(const std::vector<ReceivedLet>& lets) override {
    if (n_ == 0 || lets.empty()) return Status::success();
    return cuda::rankPrepareReceived(*gpu_, lets.data(), lets.size());
  }

  Status walkReceived(const std::vector<ReceivedLet>& lets, const SolveOptions& opt, SolveStats& st) override {
    if (n_ > 0) AG_TRY(cuda::rankWalkReceived(*gpu_, lets.data(), lets.size(), opt, st));
    return system_ ? cuda::rankSystemReceived(*gpu_, sys_, lets.data(), lets.size(), opt) : Status::success();
  }

  Status finish(const SolveOptions& opt, SolveResult& out) override {
    if (n_ == 0) {
      (void)out.targets(0, opt.accelerations);
      return Status::success();
    }
    return cuda::rankFinish(*gpu_, opt, out);
  }

  /// The cells' results as a cell solve's (RankEngine's default), then the probes' and the own particles'.
  Status finishSystem(const SolveOptions& opt, SolveResult& cells, SystemResult& out) override {
    AG_TRY(RankEngine::finishSystem(opt, cells, out));
    return cuda::rankSystemFinish(*gpu_, sys_, opt, out);
  }

 private:
  std::function<int(int)> deviceFor_;
  cuda::DeviceState* gpu_ = nullptr;
  std::size_t n_ = 0;
  std::vector<std::size_t> letNodes_, letCells_;
  bool system_ = false;   ///< a system solve (openSystem)
  cuda::RankSystem sys_;  ///< its probes and particles
};

}  // namespace

std::unique_ptr<RankEngine> makeCudaRankEngine(std::function<int(int deviceCount)> deviceFor) {
  return std::make_unique<CudaRankEngine>(std::move(deviceFor));
}

}  // namespace amrgrav
