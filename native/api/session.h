/// \file session.h
/// \brief The one entry the front ends (binding/, capi/) go through: what this build and machine have, the single
/// backend policy ('auto' | 'cpu' | 'cuda': what runs and why), and a Session that owns the backends and runs
/// solves on them, distributed ones too (it picks the rank engine for mpi/'s driver). Plain C++: no CUDA, MPI or
/// Node headers.
///
/// The policy (chooseBackend):
///   - 'cpu': the CPU, "requested".
///   - 'cuda': the GPU, "requested", when a usable device is present; otherwise NoDevice, "backend 'cuda' was
///     requested but <why>" (the front end spells the request: 'cuda' in JS, CUDA in C).
///   - 'auto': the GPU when a usable device is present, else the CPU; the reason is "auto: <why>" (why: "CUDA
///     device present", or the CUDA runtime's own words, or that this build has no CUDA backend). When CUDA was
///     built but cannot be used, a notice for the user: "amrgrav: <why in plain words>: using the CPU backend".
///   - distributed (a collective over several MPI ranks): the GPU for 'cuda', and for 'auto' where this rank sees a
///     usable device, else the CPU. Nothing is rejected here, where the other ranks could not know: a rank without a
///     usable device fails inside the collective solve, and every rank returns its error.
///   - while solving (Session::solve): 'auto' on the GPU that runs out of device memory solves on the CPU instead,
///     with a warning (never in a distributed solve: the other ranks would not follow).
///   - small problems (Session::solve, solveBlocks): 'auto' on the GPU runs a solve of fewer cells than
///     SolveOptions::autoGpuMinCells on the CPU, reason "auto: N cells below the GPU's break-even (M)" (default 1000,
///     the measured break-even; not for distributed solves nor device data).
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "core/backend.h"
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {
namespace api {

/// What a front end asks for.
enum class BackendRequest { Auto, Cpu, Cuda };
/// What runs.
enum class BackendKind { Cpu, Cuda };

/// "cpu" or "cuda".
const char* backendName(BackendKind kind);
/// 'auto', 'cpu' or 'cuda' into `out`; false for anything else.
bool parseBackendRequest(const std::string& name, BackendRequest& out);

/// Why the CUDA backend cannot run in a build without it.
extern const char* const kNoCudaBuild;

/// What this build contains and what this machine offers (the CUDA probe runs once per process).
struct Features {
  bool cpu = true;
  bool cudaBuilt = false;    ///< the CUDA backend was compiled in
  bool cudaUsable = false;   ///< ... and a device this build runs on is present
  std::string cudaReason;    ///< "CUDA device present", or why not (the CUDA runtime's words, or kNoCudaBuild)
  int cudaDevices = 0;       ///< CUDA devices present (0 without a driver or without the CUDA backend)
  bool mpiBuilt = false;     ///< the MPI layer was compiled in
  std::string mpiReason;     ///< why MPI is (not) active
};
Features features();

/// The CUDA probe's reason in a user's words. CUDA's runtime says "CUDA driver version is insufficient" both when
/// no NVIDIA driver is installed and when it is too old for the runtime; on a machine without a GPU that reads as a
/// broken install, so it is said plainly: "no GPU driver found", "no GPU found", else "no usable GPU (<reason>)".
std::string gpuReasonInWords(const std::string& cudaReason);

/// The policy's decision for a solver (see the file's comment).
struct BackendChoice {
  BackendRequest requested = BackendRequest::Auto;
  BackendKind backend = BackendKind::Cpu;
  bool distributed = false;  ///< tree solves are collectives over the MPI world (the caller saw several ranks)
  std::string reason;        ///< why (SolveStats' backendReason)
  std::string notice;        ///< a line for the user when 'auto' falls back to the CPU though CUDA was built
};

/// The backend policy. `distributed`: the solver's tree solves are collectives over several MPI ranks.
/// `cudaSpelling`: how the front end names the request in an error ("'cuda'" in JS, "CUDA" in C).
Status chooseBackend(BackendRequest requested, bool distributed, const char* cudaSpelling, BackendChoice& out);

/// Method 'fmm' (SolveOptions::method, issue #20) runs on both backends in every box in one process (the GPU's:
/// cuda/fmm_phase.h, cuda/fmm_periodic_phase.h) and over MPI ranks in isolated and fully periodic boxes (the LETs on
/// the host, cpu/fmm_ranks.h; each rank's own lists on its backend: cuda/fmm_rank_phase.h on a GPU, CPU and GPU
/// ranks mixed at will). Over ranks the choice keeps its backend and says so in its reason; the boxes the ranks do
/// not take (periodic along 1 or 2 axes) are refused by solveDistributed on every rank, whatever the backend.
/// Nothing changes for method 'tree'.
Status fitMethod(const SolveOptions& opt, BackendChoice& choice);

enum class Method { Tree, Direct };

/// What a solve ran on and why.
struct SolveReport {
  BackendKind ran = BackendKind::Cpu;
  std::string reason;   ///< the choice's reason, or why another backend took over
  std::string warning;  ///< 'auto': the GPU had too little memory and the CPU solved (empty otherwise)
};

/// Owns the backends: the CPU's, and the GPU's (made at its first use; it keeps its device buffers between solves,
/// so keep the session alive across a hydro code's steps). Solves on the GPU take turns; CPU solves run side by
/// side. The Node binding keeps one session per process, the C API one per solver.
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// A tree solve or direct summation on the chosen backend; a distributed choice makes tree solves collective
  /// (solveDistributed). Results into out (its targets), what ran into report.
  Status solve(Method method, const BackendChoice& choice, const CellsView& cells, const SolveOptions& opt,
               SolveResult& out, SolveReport& report);

  /// A system solve (core/system.h; Backend::solveSystem): cells, probes and an optional subset of target cells, on
  /// the chosen backend with solve()'s policy ('auto' leaves a GPU with too little memory for the CPU; below the
  /// break-even the CPU runs it). A distributed choice makes a tree solve collective: each rank passes its own cells
  /// and probes (solveDistributedSystem).
  Status solveSystem(Method method, const BackendChoice& choice, const SystemView& system, const SolveOptions& opt,
                     SystemResult& out, SolveReport& report);

  /// A block solve (core/blocks.h; Backend::solveBlocks) on the chosen backend: the results into `out` in the
  /// density's layout, the statistics into result.stats. Host data: as solve() ('auto' leaves a GPU with too little
  /// memory for the CPU; a distributed choice generates the cells and solves collectively). Device data
  /// (blocks.deviceData): the CUDA backend only (NoDevice otherwise), never distributed. The backend keeps the tree
  /// between calls on an unchanged mesh (stats.treeReused); a cell solve on the same backend in between forgets it.
  Status solveBlocks(const BackendChoice& choice, const BlocksView& blocks, const BlockOutputs& out,
                     const SolveOptions& opt, SolveResult& result, SolveReport& report);

 private:
  Backend* backendFor(BackendKind kind, Status& st);
  Status run(Method method, BackendKind kind, const CellsView& cells, const SolveOptions& opt, SolveResult& out);
  Status runSystem(Method method, BackendKind kind, const SystemView& system, const SolveOptions& opt,
                   SystemResult& out);

  std::mutex make_;                 ///< guards making the backends
  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<Backend> cuda_;
  std::mutex cudaTurn_;             ///< one GPU solve at a time
};

/// The distributed tree solve with this rank's share on `kind`'s rank engine (cpu/cpu_rank_engine.h or
/// cuda/cuda_rank_engine.h, on the GPU deviceForLocalRank(nodeLocalRank(), devices)) over mpi/'s driver. Collective
/// over amrgrav's communicator in a world of several ranks; a rank that cannot run `kind` (no CUDA in the build, no
/// usable device) makes every rank fail with NoDevice. In a world of one rank: the plain solve on `kind`.
Status solveDistributed(BackendKind kind, const CellsView& cells, const SolveOptions& opt, SolveResult& out);

/// solveDistributed for a system (core/system.h): each rank's cells, probes and targets; the LETs a rank receives
/// are chosen for the box of its cells and probes together.
Status solveDistributedSystem(BackendKind kind, const SystemView& system, const SolveOptions& opt, SystemResult& out);

}  // namespace api
}  // namespace amrgrav
