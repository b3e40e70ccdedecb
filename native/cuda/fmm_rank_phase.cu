/// \file fmm_rank_phase.cu
/// \brief A GPU rank's evaluation of its own FMM lists (fmm_rank_phase.h) over the one-process FMM's device steps
/// (fmm_phase_parts.h), as the periodic phase evaluates a host-made tree (fmm_periodic_phase.cu).
#include "cuda/fmm_rank_phase.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "cuda/cuda_backend.h"
#include "cuda/device.h"
#include "cuda/device_state.h"
#include "cuda/fmm_phase.h"
#include "cuda/fmm_phase_parts.h"
#include "cuda/fmm_tiles_phase.h"
#include "cuda/memory_plan.h"
#include "cuda/rank_phase.h"
#include "fmm/multi_index.h"
#include "fmm/p2p_tiles.h"

namespace amrgrav {
namespace {

bool anyPeriod(const fmm::FmmLists& lists) { return lists.period[0] > 0 || lists.period[1] > 0 || lists.period[2] > 0; }

class CudaRankLocal final : public fmm::RankLocal {
 public:
  CudaRankLocal(std::function<int(int)> deviceFor, bool ownState, const CudaOptions& ownOptions = CudaOptions{})
      : deviceFor_(std::move(deviceFor)), ownState_(ownState), ownOptions_(ownOptions) {}
  const char* name() const override { return "cuda"; }
  int device() const override { return gpu_ ? gpu_->copt.device : -1; }

  Status open(const SolveOptions& opt) override {
    const int devices = cudaDeviceCount();
    if (devices <= 0) {  // the agreement prefixes the rank: "rank r of N: CUDA backend: ..."
      std::string why = "CUDA backend: no CUDA device found";
      (void)cudaDeviceAvailable(&why);
      return Status::error(ErrorCode::NoDevice, why);
    }
    const int device = deviceFor_(devices);
    if (ownState_ && !own_) {
      CudaOptions o = ownOptions_;
      o.device = device;
      own_ = std::make_unique<cuda::DeviceState>(o);
    }
    gpu_ = ownState_ ? own_.get() : &cuda::rankDeviceState(device);
    cuda::DeviceState& ds = *gpu_;
    std::lock_guard<std::mutex> lock(ds.mu);
    return cuda::guarded([&]() -> Status {
      AG_TRY(cuda::checkFmmOnDevice(opt));
      ds.stats = CudaStats{};
      t0_ = cuda::Clock::now();
      AG_TRY(cuda::ensureDevice(ds));
      ds.stats.device = ds.deviceName;
      return Status::success();
    });
  }

  /// Whether local() walks the lists on the device (CudaOptions::fmmDeviceLists and fmmDeviceTiles; in periodic
  /// boxes fmmDevicePeriodic and fmmDevicePeriodicTiles too, as the one-process paths take them).
  bool makesLists(const SolveOptions& opt) const override {
    if (!gpu_) return false;
    const CudaOptions& c = gpu_->copt;
    return c.fmmDeviceLists && c.fmmDeviceTiles && (!opt.anyPeriodic() || (c.fmmDevicePeriodic &&
                                                                            c.fmmDevicePeriodicTiles));
  }

  /// Everything but L up: the cells, the tree, M, the index and P2P tables; the lists and the near field's tiles
  /// either walked and built on the device from the host's tree (makesLists: the one-process FMM's device phases,
  /// fmm_lists_phase.h and fmm_tiles_phase.h, the host's lists and tiles array for array, with a periodic box's image
  /// shifts) or the host's lists with tiles made on the host (fmm/p2p_tiles.h) and put up; L's room made; the P2P
  /// queued (it reads no L), so that it runs while the host takes the received LETs.
  Status local(fmm::FmmTree& tree, fmm::FmmLists& lists, const SortedCells& sorted, const SolveOptions& opt,
               int threads, fmm::FmmOutput, const std::function<Status()>& progress) override {
    cuda::DeviceState& ds = *gpu_;
    const bool onDevice = makesLists(opt);
    n_ = sorted.x.size();
    accel_ = opt.accelerations;
    periodic_ = anyPeriod(lists);
    auto t = cuda::Clock::now();
    if (!onDevice) {
      hn_ = fmm::buildHostNearField(tree, lists, sorted, threads);
      counts_ = cuda::fmmparts::nearFieldCounts(false, cuda::DeviceFmmTiles{}, hn_);
      ds.stats.secondsBuild = cuda::since(t);
      AG_TRY(progress());
    }
    std::lock_guard<std::mutex> lock(ds.mu);
    return cuda::guarded([&]() -> Status {
      using cuda::fmmparts::put;
      t = cuda::Clock::now();
      cuda::FmmBuffers& b = ds.fmm;
      const std::size_t nodes = tree.nodeCount();
      std::vector<double> cells;
      std::vector<std::uint32_t> topo, tiles;
      std::vector<std::uint8_t> shifts;
      AG_TRY(cuda::fmmparts::putCells(ds, sorted, cells));
      AG_TRY(cuda::fmmparts::putTree(ds, tree, topo));
      cuda::DeviceFmmLists dl;
      cuda::DeviceFmmTiles dt;
      if (onDevice) {  // the walk (synchronised per round: the staging above may go after it) and the tiles
        const double* period = periodic_ ? lists.period : nullptr;
        AG_TRY(cuda::fmmparts::deviceLists(ds, nodes, tree.order, &tree, opt.fmmTolerance, tree.accelLimit, dl,
                                           period));
        lists.directedM2L = dl.directedM2L;
        lists.directedP2P = dl.directedP2P;
        ds.stats.fmmListRounds = dl.rounds;
        ds.stats.fmmListMaxFrontier = dl.maxFrontier;
        cuda::FmmTileInputs in = cuda::fmmparts::tileInputs(ds, nodes, n_, sorted, false);
        in.period = period;
        AG_TRY(cuda::fmmparts::deviceNearField(ds, in, dl, threads, dt, hn_));
        counts_ = cuda::fmmparts::nearFieldCounts(true, dt, hn_);
        ds.stats.secondsBuild = cuda::since(t);
        AG_TRY(progress());
        t = cuda::Clock::now();
      } else {
        AG_TRY(put(ds, b.m2lStart, lists.m2lStart, "the FMM's M2L lists"));
        AG_TRY(put(ds, b.m2lSource, lists.m2lSource, "the FMM's M2L lists"));
        AG_TRY(cuda::fmmparts::putHostTiles(ds, hn_.near, hn_.tiles, hn_.irr, tiles, tileOff_));
        if (periodic_)
          AG_TRY(cuda::fmmparts::putHostShifts(ds, lists.m2lShift, hn_.tiles, hn_.irr, shifts, shiftOff_));
      }
      AG_TRY(put(ds, b.M, tree.M, "the FMM's multipoles"));
      AG_TRY(cuda::fmmparts::reserveSums(ds, n_, accel_));
      AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // the staging vectors die here
      AG_TRY(cuda::fmmparts::putTables(ds, hn_.tables, hn_.tiles.slots));
      AG_TRY(b.L.reserve(std::max<std::size_t>(nodes * std::size_t(tree.terms), 1), "the FMM's local coefficients"));
      ds.stats.secondsUpload = cuda::since(t);

      // the evaluation's view (L's pointer final: nothing reserves on this state until finish)
      v_ = cuda::fmmparts::bufferView(ds, tree, nodes, n_, accel_, tileOff_);
      cuda::fmmparts::viewNearFieldCounts(counts_, v_);
      if (onDevice) {  // the near field where the device made it, with its shifts (the M2L's: the walk's)
        cuda::fmmparts::viewDeviceTiles(dt, v_);
        if (periodic_) v_.m2lShift = dl.m2lShift;
      } else if (periodic_) {
        cuda::fmmparts::viewHostShifts(ds, hn_.tiles, hn_.irr, shiftOff_, false, v_);
      }
      for (int d = 0; d < 3; ++d) v_.period[d] = lists.period[d];
      v_.dipoles = tree.dipoles;
      AG_TRY(cuda::fmmparts::queueNearOnDevice(ds, v_));
      return progress();
    });
  }

  /// The host's L (the received LETs' M2L, the far images) up as the device's initial L, the device's evaluation,
  /// the sums down and the host's direct sums added.
  Status finish(fmm::FmmTree& tree, const SortedCells& sorted, int threads, fmm::FmmOutput out,
                SolveStats& st) override {
    (void)sorted;
    cuda::DeviceState& ds = *gpu_;
    std::lock_guard<std::mutex> lock(ds.mu);
    return cuda::guarded([&]() -> Status {
      auto t = cuda::Clock::now();
      const std::size_t nodes = tree.nodeCount(), nt = std::size_t(tree.terms);
      if (tree.L.size() < nodes * nt)
        return Status::error(ErrorCode::Internal, "CUDA backend: the rank's local coefficients are missing");
      if (v_.L != ds.fmm.L.get() || v_.nodes != nodes)
        return Status::error(ErrorCode::Internal, "CUDA backend: the rank's device view is stale");
      // queued after the P2P on the stream (a pageable copy: the host may wait for it), before M2L adds to L
      if (nodes > 0)
        AG_CUDA_TRY(cudaMemcpyAsync(v_.L, tree.L.data(), nodes * nt * sizeof(double), cudaMemcpyHostToDevice,
                                    ds.stream));
      ds.stats.secondsUpload += cuda::since(t);
      AG_TRY(cuda::fmmparts::evaluateFarOnDevice(ds, v_, tree.levelBegin));  // synchronous: L's copy is done
      cuda::fmmparts::reportNearFieldCounts(counts_, ds.stats);
      const cuda::FmmDeviceView& v = v_;

      t = cuda::Clock::now();
      std::vector<double> phi, g[3];
      AG_TRY(cuda::fmmparts::downloadSums(ds, v, n_, accel_, phi, g));
      double* const to[4] = {out.phi, out.gx, out.gy, out.gz};
      parallelFor(n_, std::size_t(1) << 15, threads, [&](std::size_t lo, std::size_t hi, int) {
        for (std::size_t i = lo; i < hi; ++i) {
          to[0][i] += phi[i];
          if (accel_)
            for (int c = 0; c < 3; ++c) to[c + 1][i] += g[c][i];
        }
      });
      ds.stats.secondsDownload = cuda::since(t);
      ds.stats.secondsTotal = cuda::since(t0_);
      ds.stats.deviceBytes = cuda::deviceBytes(ds);
      ds.stats.deviceBytesPerCell = double(ds.stats.deviceBytes) / double(n_);
      st.secondsUpload = ds.stats.secondsUpload;
      st.secondsDownload = ds.stats.secondsDownload;
      st.deviceBytesPerCell = ds.stats.deviceBytesPerCell;
      hn_ = fmm::HostNearField{};  // the host's tiles are not needed past the solve
      return Status::success();
    });
  }

 private:
  std::function<int(int)> deviceFor_;
  bool ownState_ = false;
  CudaOptions ownOptions_;                  ///< with ownState_: its state's options (the device set at open)
  std::unique_ptr<cuda::DeviceState> own_;  ///< with ownState_
  cuda::DeviceState* gpu_ = nullptr;
  cuda::Clock::time_point t0_;
  fmm::HostNearField hn_;  ///< local()'s near field (its tables' slots and counts read again by finish())
  cuda::fmmparts::NearFieldCounts counts_;
  std::size_t n_ = 0, tileOff_[6] = {}, shiftOff_[3] = {};
  cuda::FmmDeviceView v_;  ///< local()'s view of the uploads, the P2P queued on it; finish() completes it
  bool accel_ = false, periodic_ = false;
};

}  // namespace

std::unique_ptr<fmm::RankLocal> makeCudaFmmRankLocal(std::function<int(int deviceCount)> deviceFor) {
  return std::make_unique<CudaRankLocal>(std::move(deviceFor), false);
}

std::unique_ptr<fmm::RankLocal> makeCudaFmmRankLocalOwnState(int device, const CudaOptions& options) {
  return std::make_unique<CudaRankLocal>([device](int) { return device; }, true, options);
}

}  // namespace amrgrav
