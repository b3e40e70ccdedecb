/// \file session.cpp
/// \brief The front ends' entry (session.h): features, the backend policy, the session's backends and solves, and
/// the distributed solve's rank engine. The only place that knows which backends this build has.
#include "api/session.h"

#include <memory>
#include <mutex>
#include <regex>
#include <string>

#include "cpu/cpu_rank_engine.h"
#include "cpu/fmm_ranks.h"
#include "mpi/distributed_fmm.h"
#include "mpi/distributed_solve.h"
#include "mpi/mpi_world.h"
#if defined(AMRGRAV_HAVE_CUDA)
#include "cuda/cuda_backend.h"
#include "cuda/cuda_rank_engine.h"
#include "cuda/device.h"
#include "cuda/fmm_rank_phase.h"
#endif

namespace amrgrav {
namespace api {

const char* const kNoCudaBuild = "this build of amrgrav has no CUDA backend (nvcc was not found at build time)";

namespace {

/// The CUDA part of Features, probed once per process (probing initialises the driver).
struct CudaProbe {
  bool built = false, usable = false;
  std::string reason;
  int devices = 0;
};

const CudaProbe& cudaProbe() {
  static CudaProbe probe;
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(AMRGRAV_HAVE_CUDA)
    std::string why;
    probe.built = true;
    probe.usable = cudaDeviceAvailable(&why);
    probe.reason = probe.usable ? std::string("CUDA device present") : why;
    probe.devices = cudaDeviceCount();
#else
    probe.reason = kNoCudaBuild;
#endif
  });
  return probe;
}

}  // namespace

const char* backendName(BackendKind kind) { return kind == BackendKind::Cuda ? "cuda" : "cpu"; }

bool parseBackendRequest(const std::string& name, BackendRequest& out) {
  if (name == "auto") out = BackendRequest::Auto;
  else if (name == "cpu") out = BackendRequest::Cpu;
  else if (name == "cuda") out = BackendRequest::Cuda;
  else return false;
  return true;
}

Features features() {
  const CudaProbe& c = cudaProbe();
  Features f;
  f.cudaBuilt = c.built;
  f.cudaUsable = c.usable;
  f.cudaReason = c.reason;
  f.cudaDevices = c.devices;
  const MpiWorld world = mpiWorld();
  f.mpiBuilt = world.built;
  f.mpiReason = world.reason;
  return f;
}

std::string gpuReasonInWords(const std::string& cudaReason) {
  const auto icase = std::regex::ECMAScript | std::regex::icase;
  if (std::regex_search(cudaReason, std::regex("InsufficientDriver|NoDriver|driver version is insufficient", icase)))
    return "no GPU driver found";
  if (std::regex_search(cudaReason, std::regex("NoDevice|no CUDA device", icase))) return "no GPU found";
  return "no usable GPU (" + std::regex_replace(cudaReason, std::regex("^CUDA backend: "), "") + ")";
}

Status chooseBackend(BackendRequest requested, bool distributed, const char* cudaSpelling, BackendChoice& out) {
  const Features f = features();
  out = BackendChoice{};
  out.requested = requested;
  out.distributed = distributed;
  if (distributed) {
    // each rank's share on its GPU ('cuda', or 'auto' where this rank sees one); a rank without a usable device is
    // not rejected here, where the others could not know: the collective solve makes every rank fail with NoDevice
    const bool gpu = requested == BackendRequest::Cuda || (requested == BackendRequest::Auto && f.cudaUsable);
    out.backend = gpu ? BackendKind::Cuda : BackendKind::Cpu;
    const std::string why = requested == BackendRequest::Cpu ? std::string("requested") : "auto: " + f.cudaReason;
    out.reason = gpu ? std::string("distributed: each rank's tree and walks on its GPU (") +
                           (requested == BackendRequest::Cuda ? "requested" : "auto") + ")"
                     : "distributed: the LET solve on the CPU (" + why + ")";
    return Status::success();
  }
  switch (requested) {
    case BackendRequest::Cuda:
      if (!f.cudaUsable)
        return Status::error(ErrorCode::NoDevice,
                             std::string("backend ") + cudaSpelling + " was requested but " + f.cudaReason);
      out.backend = BackendKind::Cuda;
      out.reason = "requested";
      break;
    case BackendRequest::Cpu:
      out.backend = BackendKind::Cpu;
      out.reason = "requested";
      break;
    case BackendRequest::Auto:
      out.backend = f.cudaUsable ? BackendKind::Cuda : BackendKind::Cpu;
      out.reason = "auto: " + f.cudaReason;
      if (!f.cudaUsable && f.cudaBuilt)
        out.notice = "amrgrav: " + gpuReasonInWords(f.cudaReason) + ": using the CPU backend";
      break;
  }
  return Status::success();
}

Status fitMethod(const SolveOptions& opt, BackendChoice& choice) {
  if (opt.method != SolveMethod::Fmm) return Status::success();
  if (choice.backend != BackendKind::Cuda) return Status::success();
  // the GPU's FMM takes every box in one process (cuda/fmm_phase.h, cuda/fmm_periodic_phase.h) and, over MPI ranks,
  // the boxes the CPU ranks take (isolated, fully periodic: cuda/fmm_rank_phase.h evaluates each rank's own lists;
  // the LETs, the received LETs and the far images stay on the host); solveDistributed refuses the others alike
  if (choice.distributed)
    choice.reason = std::string("distributed: each rank's FMM lists and downward pass on its GPU, the LETs on the "
                                "host (") + (choice.requested == BackendRequest::Cuda ? "requested" : "auto") + ")";
  return Status::success();
}

namespace {

/// 'auto' on the GPU with a problem below the break-even (SolveOptions::autoGpuMinCells): the CPU runs it.
bool belowBreakEven(const BackendChoice& c, std::size_t cells, const SolveOptions& opt, SolveReport& report) {
  if (c.requested != BackendRequest::Auto || c.backend != BackendKind::Cuda || c.distributed ||
      opt.autoGpuMinCells == 0 || cells >= opt.autoGpuMinCells)
    return false;
  report.ran = BackendKind::Cpu;
  report.reason = "auto: " + std::to_string(cells) + " cells below the GPU's break-even (" +
                  std::to_string(opt.autoGpuMinCells) + ")";
  return true;
}

}  // namespace

Session::Session() = default;
Session::~Session() = default;

Backend* Session::backendFor(BackendKind kind, Status& st) {
  std::lock_guard<std::mutex> lock(make_);
  st = Status::success();
  if (kind == BackendKind::Cpu) {
    if (!cpu_) cpu_ = makeCpuBackend();
    return cpu_.get();
  }
#if defined(AMRGRAV_HAVE_CUDA)
  if (!cuda_) cuda_ = makeCudaBackend();
  return cuda_.get();
#else
  st = Status::error(ErrorCode::NoDevice, kNoCudaBuild);
  return nullptr;
#endif
}

Status Session::run(Method method, BackendKind kind, const CellsView& cells, const SolveOptions& opt,
                    SolveResult& out) {
  Status made;
  Backend* backend = backendFor(kind, made);
  if (!backend) return made;
  std::unique_lock<std::mutex> turn;
  if (kind == BackendKind::Cuda) turn = std::unique_lock<std::mutex>(cudaTurn_);
  return method == Method::Tree ? backend->solve(cells, opt, out) : backend->direct(cells, opt, out);
}

Status Session::solve(Method method, const BackendChoice& requested, const CellsView& cells, const SolveOptions& opt,
                      SolveResult& out, SolveReport& report) {
  BackendChoice choice = requested;
  if (method == Method::Tree) {
    const Status fit = fitMethod(opt, choice);
    if (!fit.ok()) return fit;
  }
  report = SolveReport{};
  report.ran = choice.backend;
  report.reason = choice.reason;
  if (choice.distributed && method == Method::Tree) {
    const Status st = solveDistributed(choice.backend, cells, opt, out);
    if (st.ok() && out.stats.distributed.ranks > 1) {  // this rank's engine says which backend ran its share
      report.ran = std::string(out.stats.distributed.backend) == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
      if (report.ran != choice.backend)
        report.reason = std::string("distributed: this rank's share ran on the ") +
                        (report.ran == BackendKind::Cuda ? "GPU" : "CPU");
    }
    return st;
  }
  if (belowBreakEven(choice, cells.n, opt, report)) return run(method, BackendKind::Cpu, cells, opt, out);
  Status st = run(method, choice.backend, cells, opt, out);
  if (st.code == ErrorCode::OutOfMemory && choice.requested == BackendRequest::Auto &&
      choice.backend == BackendKind::Cuda) {
    // 'auto': too little GPU memory for this input; the CPU solves it (the GPU is tried again next call)
    report.warning = "amrgrav: the GPU has too little memory for " + std::to_string(cells.n) +
                     " cells; solving on the CPU (" + st.message + ")";
    report.ran = BackendKind::Cpu;
    report.reason = "auto: the GPU had too little memory for this input";
    st = run(method, BackendKind::Cpu, cells, opt, out);
  }
  return st;
}

Status Session::runSystem(Method method, BackendKind kind, const SystemView& system, const SolveOptions& opt,
                          SystemResult& out) {
  Status made;
  Backend* backend = backendFor(kind, made);
  if (!backend) return made;
  std::unique_lock<std::mutex> turn;
  if (kind == BackendKind::Cuda) turn = std::unique_lock<std::mutex>(cudaTurn_);
  return backend->solveSystem(system, opt, method == Method::Direct, out);
}

Status Session::solveSystem(Method method, const BackendChoice& choice, const SystemView& system,
                            const SolveOptions& opt, SystemResult& out, SolveReport& report) {
  if (opt.method == SolveMethod::Fmm && method == Method::Tree)
    return Status::error(ErrorCode::InvalidOption, "method 'fmm' does not take probes, particles or target subsets "
                                                   "yet (issue #20): a system solve needs method 'tree'");
  report = SolveReport{};
  report.ran = choice.backend;
  report.reason = choice.reason;
  if (choice.distributed && method == Method::Tree) {
    const Status st = solveDistributedSystem(choice.backend, system, opt, out);
    if (st.ok() && out.stats.distributed.ranks > 1) {
      report.ran = std::string(out.stats.distributed.backend) == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
      if (report.ran != choice.backend)
        report.reason = std::string("distributed: this rank's share ran on the ") +
                        (report.ran == BackendKind::Cuda ? "GPU" : "CPU");
    }
    return st;
  }
  if (belowBreakEven(choice, system.cells.n, opt, report)) return runSystem(method, BackendKind::Cpu, system, opt, out);
  Status st = runSystem(method, choice.backend, system, opt, out);
  if (st.code == ErrorCode::OutOfMemory && choice.requested == BackendRequest::Auto &&
      choice.backend == BackendKind::Cuda) {
    report.warning = "amrgrav: the GPU has too little memory for " + std::to_string(system.cells.n) +
                     " cells; solving on the CPU (" + st.message + ")";
    report.ran = BackendKind::Cpu;
    report.reason = "auto: the GPU had too little memory for this input";
    st = runSystem(method, BackendKind::Cpu, system, opt, out);
  }
  return st;
}

Status Session::solveBlocks(const BackendChoice& requested, const BlocksView& blocks, const BlockOutputs& out,
                            const SolveOptions& opt, SolveResult& result, SolveReport& report) {
  BackendChoice choice = requested;
  const Status fit = fitMethod(opt, choice);
  if (!fit.ok()) return fit;
  report = SolveReport{};
  report.ran = choice.backend;
  report.reason = choice.reason;
  if (blocks.deviceData) {
    if (choice.distributed)
      return Status::error(ErrorCode::InvalidOption, "the device entry (device pointers) is not distributed: use the "
                                                     "host block entry or the cell entry for a distributed solve");
    if (choice.backend != BackendKind::Cuda)
      return Status::error(ErrorCode::NoDevice, "the device entry (device pointers) needs the CUDA backend, but this "
                                                "solver runs on the CPU (" + choice.reason + ")");
  }
  if (choice.distributed) {
    const Status st = solveBlocksViaCells(blocks, out, opt, result, [&](const CellsView& c, SolveResult& r) {
      return solveDistributed(choice.backend, c, opt, r);
    });
    if (st.ok() && result.stats.distributed.ranks > 1) {
      report.ran = std::string(result.stats.distributed.backend) == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
      if (report.ran != choice.backend)
        report.reason = std::string("distributed: this rank's share ran on the ") +
                        (report.ran == BackendKind::Cuda ? "GPU" : "CPU");
    }
    return st;
  }
  auto runOn = [&](BackendKind kind) -> Status {
    Status made;
    Backend* backend = backendFor(kind, made);
    if (!backend) return made;
    std::unique_lock<std::mutex> turn;
    if (kind == BackendKind::Cuda) turn = std::unique_lock<std::mutex>(cudaTurn_);
    return backend->solveBlocks(blocks, out, opt, result);
  };
  if (!blocks.deviceData && belowBreakEven(choice, blocks.cells(), opt, report)) return runOn(BackendKind::Cpu);
  Status st = runOn(choice.backend);
  if (st.code == ErrorCode::OutOfMemory && !blocks.deviceData && choice.requested == BackendRequest::Auto &&
      choice.backend == BackendKind::Cuda) {
    report.warning = "amrgrav: the GPU has too little memory for " + std::to_string(blocks.cells()) +
                     " cells; solving on the CPU (" + st.message + ")";
    report.ran = BackendKind::Cpu;
    report.reason = "auto: the GPU had too little memory for this input";
    st = runOn(BackendKind::Cpu);
  }
  return st;
}

namespace {

/// The rank engines of a distributed solve on `kind`: the CPU's, or this rank's GPU (its node-local rank modulo the
/// node's devices, asked when the solve opens).
RankEngineFactory rankEnginesOn(BackendKind kind) {
  return [kind](std::unique_ptr<RankEngine>& engine) -> Status {
    if (kind == BackendKind::Cpu) {
      engine = makeCpuRankEngine();
      return Status::success();
    }
#if defined(AMRGRAV_HAVE_CUDA)
    engine = makeCudaRankEngine([](int devices) { return deviceForLocalRank(nodeLocalRank(), devices); });
    return Status::success();
#else
    return Status::error(ErrorCode::NoDevice, kNoCudaBuild);
#endif
  };
}

/// A world of one rank: the plain backend of `kind`, handed to `solve`.
template <class Solve>
Status solveAlone(BackendKind kind, Solve&& solve) {
  if (kind == BackendKind::Cpu) return solve(*makeCpuBackend());
#if defined(AMRGRAV_HAVE_CUDA)
  return solve(*makeCudaBackend());
#else
  return Status::error(ErrorCode::NoDevice, kNoCudaBuild);
#endif
}

}  // namespace

namespace {

/// Where a distributed FMM rank evaluates its own lists (fmm/rank_local.h): the CPU's, or this rank's GPU (its
/// node-local rank modulo the node's devices, asked when the solve opens, as the tree's GPU ranks).
Status fmmRankLocalOn(BackendKind kind, std::unique_ptr<fmm::RankLocal>& local) {
  if (kind == BackendKind::Cpu) {
    local = makeCpuFmmRankLocal();
    return Status::success();
  }
#if defined(AMRGRAV_HAVE_CUDA)
  local = makeCudaFmmRankLocal([](int devices) { return deviceForLocalRank(nodeLocalRank(), devices); });
  return Status::success();
#else
  return Status::error(ErrorCode::NoDevice, kNoCudaBuild);
#endif
}

}  // namespace

Status solveDistributed(BackendKind kind, const CellsView& cells, const SolveOptions& opt, SolveResult& out) {
  // method 'fmm': the FMM's own LETs (cpu/fmm_ranks.h), each rank's own lists evaluated on its backend
  if (mpiWorld().size > 1 && opt.method == SolveMethod::Fmm) {
    if (opt.anyPeriodic() && !opt.fullyPeriodic())
      return ::amrgrav::failDistributedSolve(
          Status::error(ErrorCode::InvalidOption, "method 'fmm' over MPI ranks takes isolated and fully periodic boxes "
                                                  "so far (issue #20), on the CPU and GPU backends: a box periodic "
                                                  "along 1 or 2 axes needs method 'tree' or one rank"));
    std::unique_ptr<fmm::RankLocal> local;
    const Status made = fmmRankLocalOn(kind, local);
    if (!made.ok()) return ::amrgrav::failDistributedSolve(made);
    return solveDistributedFmm([&](RankComm& comm, const CellsView& c, const SolveOptions& o, SolveResult& r) {
      return solveFmmRanks(comm, *local, c, o, r);
    }, cells, opt, out);
  }
  if (mpiWorld().size > 1) return ::amrgrav::solveDistributed(rankEnginesOn(kind), cells, opt, out);
  return solveAlone(kind, [&](Backend& b) { return b.solve(cells, opt, out); });
}

Status solveDistributedSystem(BackendKind kind, const SystemView& system, const SolveOptions& opt, SystemResult& out) {
  if (mpiWorld().size > 1) return ::amrgrav::solveDistributedSystem(rankEnginesOn(kind), system, opt, out);
  return solveAlone(kind, [&](Backend& b) { return b.solveSystem(system, opt, false, out); });
}

}  // namespace api
}  // namespace amrgrav
