/// \file testing.cu
/// \brief The tools' CUDA backend (testing.h): a DeviceState of its own, solved on as the backend does
/// (solve.h), set and measured directly, stepped through a distributed solve's rank steps (rank_phase.h), and
/// its tree copied down for the parity tool.
#include "cuda/testing.h"

#include <memory>
#include <mutex>
#include <vector>

#include "cuda/blocks_phase.h"
#include "cuda/device_state.h"
#include "cuda/fmm_phase.h"
#include "cuda/memory_plan.h"
#include "cuda/rank_phase.h"
#include "cuda/solve.h"
#include "cuda/system_phase.h"

namespace amrgrav {
namespace cuda {
namespace {

Status exportTree(DeviceState& ds, HostTree& out, double extentLo[3], double extentHi[3]) {
  std::lock_guard<std::mutex> lock(ds.mu);
  return guarded([&]() -> Status {
    const std::size_t nodes = ds.nodes, n = ds.n;
    std::vector<uint4>& topo = ds.hostTopo;  // kept between solves (no zero-fill, no page faults after the first)
    std::vector<D4>& mac = ds.hostMac;
    std::vector<float4>& mq = ds.hostMQ;
    std::vector<float4> dip(ds.nodeDipPtr ? nodes : 0);
    topo.resize(nodes);
    mac.resize(nodes);
    mq.resize(2 * nodes);
    if (!ds.sortedCells.x)  // a block solve's cells store no positions: its tree is not exported
      return Status::error(ErrorCode::Internal, "CUDA backend: the tree export needs a cell solve's stored positions");
    out.x.resize(n);
    out.y.resize(n);
    out.z.resize(n);
    out.cellMass.resize(n);
    // on the second stream, after the moments (the walk reads these arrays and writes none of them), through
    // the pinned staging ring as the results' download
    AG_CUDA_TRY(cudaStreamWaitEvent(ds.copyStream, ds.events[4], 0));
    Transfer t[7] = {{topo.data(), ds.topoPtr, nodes * sizeof(uint4)},
                     {mac.data(), ds.nodeMacPtr, nodes * sizeof(D4)},
                     {mq.data(), ds.nodeMQPtr, 2 * nodes * sizeof(float4)},
                     {out.x.data(), const_cast<double*>(ds.sortedCells.x), n * sizeof(double)},
                     {out.y.data(), const_cast<double*>(ds.sortedCells.y), n * sizeof(double)},
                     {out.z.data(), const_cast<double*>(ds.sortedCells.z), n * sizeof(double)},
                     {out.cellMass.data(), const_cast<double*>(ds.sortedCells.mass), n * sizeof(double)}};
    AG_TRY(copyOut(ds, t, 7, ds.copyStream));
    if (ds.nodeDipPtr) {
      Transfer td{dip.data(), ds.nodeDipPtr, nodes * sizeof(float4)};
      AG_TRY(copyOut(ds, &td, 1, ds.copyStream));
    }
    out.cellBegin.resize(nodes);
    out.cellCount.resize(nodes);
    out.childBegin.resize(nodes);
    out.childCount.resize(nodes);
    out.mass.resize(nodes);
    out.com.resize(3 * nodes);
    out.quad.resize(6 * nodes);
    out.macRadius.resize(nodes);
    out.secondMoment.resize(ds.rankPeriodic ? nodes : 0);  // periodic: the walk's S (times massScale on the device)
    out.hasDipole = ds.nodeDipPtr != nullptr;
    out.dipole.resize(out.hasDipole ? 3 * nodes : 0);
    const double inv = 1.0 / ds.massScale;  // a power of two: exact
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
      if (ds.rankPeriodic) out.secondMoment[i] = double(mq[2 * i + 1].w) * inv;
    }
    for (int d = 0; d < 3; ++d) {
      extentLo[d] = ds.extentLo[d] * ds.scale;
      extentHi[d] = ds.extentHi[d] * ds.scale;
    }
    return Status::success();
  });
}

class TestingCudaBackend final : public CudaBackend {
 public:
  explicit TestingCudaBackend(const CudaOptions& o) : ds_(o) {}

  const char* name() const override { return "cuda"; }
  Status solve(const CellsView& cells, const SolveOptions& opt, SolveResult& out) override {
    return solveOnDevice(ds_, cells, opt, out, false);
  }
  Status direct(const CellsView& cells, const SolveOptions& opt, SolveResult& out) override {
    return solveOnDevice(ds_, cells, opt, out, true);
  }
  Status solveSystem(const SystemView& system, const SolveOptions& opt, bool direct, SystemResult& out) override {
    return cuda::solveSystemOnDevice(ds_, system, opt, direct, out);
  }
  Status solveBlocks(const BlocksView& blocks, const BlockOutputs& out, const SolveOptions& opt,
                     SolveResult& result) override {
    return cuda::solveBlocksOnDevice(ds_, blocks, out, opt, result);
  }

  void setCudaOptions(const CudaOptions& o) override {
    std::lock_guard<std::mutex> lock(ds_.mu);
    if (ds_.ready && o.device != ds_.copt.device) releaseAll(ds_);
    ds_.copt = o;
  }
  CudaOptions cudaOptions() const override {
    std::lock_guard<std::mutex> lock(ds_.mu);
    return ds_.copt;
  }
  CudaStats lastCudaStats() const override {
    std::lock_guard<std::mutex> lock(ds_.mu);
    return ds_.stats;
  }
  void releaseDeviceMemory() override {
    std::lock_guard<std::mutex> lock(ds_.mu);
    releaseAll(ds_);
  }

  Status fmmDeviceLists(const fmm::FmmTree& tree, double tolerance, fmm::FmmLists& out, double* seconds,
                        const double* period = nullptr) override {
    return cuda::fmmListsForCheck(ds_, tree, tolerance, out, seconds, period);
  }
  Status fmmDeviceSort(const CellsView& cells, const SolveOptions& opt, RootCube& root, SortedCells& sorted,
                       std::vector<std::uint64_t>& keys, double* seconds) override {
    return cuda::fmmSortForCheck(ds_, cells, opt, root, sorted, keys, seconds);
  }
  Status fmmDeviceTiles(const fmm::FmmTree& tree, const SortedCells& sorted, double tolerance, fmm::DeviceTiles& out,
                        double* seconds, const double* period) override {
    return cuda::fmmTilesForCheck(ds_, tree, sorted, tolerance, out, seconds, period);
  }
  Status fmmDeviceTree(const CellsView& cells, const SolveOptions& opt, fmm::FmmTree& tree, double* seconds) override {
    return cuda::fmmTreeForCheck(ds_, cells, opt, tree, seconds);
  }
  Status rankOpen(const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) override {
    return cuda::rankOpen(ds_, cells, opt, lo, hi);
  }
  Status rankBuild(const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
                   SolveStats& st) override {
    return cuda::rankBuild(ds_, cells, opt, scale, totalMass, st);
  }
  Status rankSummary(RankSummary& out) override { return cuda::rankSummary(ds_, out); }
  Status rankChooseLets(const RemoteBox* boxes, std::size_t count, std::size_t* letNodes,
                        std::size_t* letCells) override {
    return cuda::rankChooseLets(ds_, boxes, count, letNodes, letCells);
  }
  Status rankStartLocalWalk(const SolveOptions& opt, const std::uint32_t* targets,
                            std::size_t targetCount) override {
    return cuda::rankStartLocalWalk(ds_, opt, targets, targetCount);
  }
  Status rankDownloadLet(std::size_t k, PackedLet& out) override { return cuda::rankDownloadLet(ds_, k, out); }
  Status rankExportTree(HostTree& out, double extentLo[3], double extentHi[3]) override {
    return exportTree(ds_, out, extentLo, extentHi);
  }
  Status rankLocalWalkDone(bool* done) override { return cuda::rankLocalWalkDone(ds_, done); }
  Status rankFinishLocalWalk(const SolveOptions& opt, SolveStats& st) override {
    return cuda::rankFinishLocalWalk(ds_, opt, st);
  }
  Status rankPrepareReceived(const ReceivedLet* lets, std::size_t count) override {
    return cuda::rankPrepareReceived(ds_, lets, count);
  }
  Status rankWalkReceived(const ReceivedLet* lets, std::size_t count, const SolveOptions& opt,
                          SolveStats& st) override {
    return cuda::rankWalkReceived(ds_, lets, count, opt, st);
  }
  Status rankFinish(const SolveOptions& opt, SolveResult& out) override { return cuda::rankFinish(ds_, opt, out); }

 private:
  DeviceState ds_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<CudaBackend> makeCudaBackend(const CudaOptions& options) {
  return std::make_unique<cuda::TestingCudaBackend>(options);
}

}  // namespace amrgrav
