/// \file harness.h
/// \brief What the CPU-vs-CUDA checks share (native/tools/parity/): the problems (uniform grids, a clustered
/// AMR-like set, a deep nest), the comparison of two results, one line of report per case, and the subjects' entry
/// points. The timings (gpu_timing.cpp) use the problems and the number formatting.
///
/// Exit codes of amrgrav_gpu_parity (main.cpp): kExitPass, kExitFail, kExitNoDevice, kExitUsage.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/types.h"
#include "fmm/fmm_tree.h"
#include "tools/host_cells.h"
#include "tools/parity/device.h"

namespace amrgrav::parity {

constexpr int kExitPass = 0;      ///< every check of the subjects asked for agreed
constexpr int kExitFail = 1;      ///< a check disagreed (or no device while AMRGRAV_REQUIRE_GPU=1)
constexpr int kExitNoDevice = 2;  ///< no usable CUDA device, and the backend said so as a Status (CTest: skipped)
constexpr int kExitUsage = 64;    ///< bad command line

constexpr double kKpc = 3.0856775814913673e21;  // cm
constexpr double kMsun = 1.98847e33;              // g

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

using Cells = tools::HostCells;

// ---- problems

/// Uniform n^3 grid on [0, L)^3 with a smooth density (a sinusoidal mode plus an off-centre Gaussian clump).
Cells uniformGrid(int n, double L, double rho0);
/// Uniform n^3 grid on [0, kKpc)^3 with densities 1e-24 g/cm^3 times a random factor in [0.5, 1.5) (the FMM's
/// subjects: white noise, the hardest case for an expansion's truncation).
Cells randomDensityGrid(int n, std::uint64_t seed);
/// Uniform n^3 grid on [0, L)^3 of density rho0 (1 + A sin(k.x) along the diagonal): a small perturbation that
/// only the density contrast resolves (issue #21).
Cells perturbedGrid(int n, double L, double rho0, double A);
/// Nested refinement around a point from level `coarsest` (cell side 2^-coarsest of the unit box) to `finest`: a
/// 2:1 balanced, non-overlapping mesh refined on a collapsing core; density ~ 1/r^2, so the deep cells matter.
Cells deepNest(int coarsest, int finest);
/// A clustered AMR-like set of about `target` cells: Plummer clusters refined by mass, a massless slab at low x,
/// in shuffled order.
Cells amrClustered(std::size_t target, double L, double massUnit, std::uint64_t seed, int maxLevel = 11);
/// A Plummer sphere of n equal point masses (tools/plummer.h: G = M = a = 1, truncated at r = 20, cells of size
/// 1e-6; solve with SelfPotential::None): issue #18's clustered set.
Cells plummerSphere(std::size_t n, std::uint32_t seed);
/// The first n cells (all of them when n >= size).
Cells subset(const Cells& c, std::size_t n);

/// The options with the box [0, kKpc)^3 and the given periodic axes.
SolveOptions periodicBox(SolveOptions o, bool x, bool y, bool z);

// ---- comparing results

/// A result of n cells filled with NaN (the backends must overwrite every value).
void poison(SolveResult& r, std::size_t n, bool accel);

struct Diff {
  double pot = 0, potOfMax = 0, accRms = 0, accCell = 0;
  bool finite = true;
};

/// pot: max |dphi| / |phi|; potOfMax: max |dphi| / max |phi| (periodic potentials have zeros); accRms:
/// max |da| / rms|a|; accCell: max |da| / |a|.
Diff compare(const SolveResult& ref, const SolveResult& got, bool accel);
bool bitwiseEqual(const SolveResult& a, const SolveResult& b);
/// A system solve's results of one kind (core/system.h PointResults) as a SolveResult, for compare().
SolveResult asSolve(const PointResults& p);

// ---- formatting

std::string jsonEscape(const std::string& s);
/// %.6g, or null when not finite (JSON).
std::string num(double v);
/// Seconds as "12.345 ms" (the notes beside a check).
std::string ms(double seconds);
/// The host's FMM tree of `cells` at order p (points: sorted as point sources, no self term), on every hardware
/// thread (tools/fmm_host_tree.h): what the device's FMM phases are compared against.
Status hostFmmTree(const Cells& cells, int order, bool points, fmm::FmmTree& tree, SortedCells* sorted = nullptr);
std::string optionsJson(const SolveOptions& o);

// ---- the run: arguments, shared inputs and backends, the report

struct Args {
  std::vector<std::string> subjects;  ///< in the order asked; "all" expanded
  bool json = false;                  ///< one JSON object per case instead of one line of text
  int uniform = 32;                   ///< uniform grid side
  std::size_t amr = 200000;           ///< cells of the clustered AMR-like set
  std::size_t directParity = 20000;   ///< cells of the direct-summation cases
  double tol = 1e-5;
  std::uint64_t seed = 12345;
};

/// The checks' tally; each case prints its line as it ends (stdout, flushed).
struct Report {
  bool json = false;
  int checks = 0, failed = 0;
  std::vector<std::string> failures;  ///< the failing cases' lines, repeated after the summary
  void line(bool pass, const std::string& jsonLine, const std::string& text);
  /// A line that is not a check (an input's size, measurements beside a check).
  void note(const std::string& jsonLine, const std::string& text) const;
};

/// One process's state: the arguments, the report, one CUDA backend (result buffers poisoned) and one CPU backend
/// shared by every subject run (so `all` reuses one backend's device buffers across every case, as the single
/// tool did), and the inputs several subjects read, built on first use.
class Context {
 public:
  explicit Context(const Args& a);
  const Args args;
  Report report;
  std::unique_ptr<CudaBackend> gpu;
  std::unique_ptr<Backend> cpu;
  /// theta 0.5, order 2, accelerations: the cases' starting point
  static SolveOptions base();
  /// uniformGrid(args.uniform)
  const Cells& uniform();
  /// amrClustered(args.amr, seed): 1 kpc box, 1e10 Msun clusters
  const Cells& amr();
  /// the periodic cases' grid: 64^3 (args.uniform below 32: args.uniform^3)
  const Cells& periodicGrid();
  /// plummerSphere(args.amr / 2, seed): points, clustered (issue #18)
  const Cells& plummer();

 private:
  std::optional<Cells> uniform_, amr_, periodicGrid_, plummer_;
};

/// One CPU-vs-CUDA tree (or direct) comparison on `gpu` against cx.cpu: potentials within tol (periodic: of the
/// largest), accelerations within tol (accTol when >= 0) of their rms, all finite; expectSameCounts: the same
/// interaction, node, leaf and group counts and depth (the same lists).
void parityCase(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& opt, CudaBackend& gpu,
                double tol, bool direct = false, bool expectSameCounts = true, double accTol = -1);
/// A named pass/fail check (determinism, reuse, an error's message, ...).
void check(Context& cx, const std::string& name, bool ok, const std::string& detail);

// ---- the subjects (one source each)

void runIsolated(Context& cx);  ///< isolated.cpp: tree solves, uniform and AMR, every option; deep nests; tiny inputs
void runDirect(Context& cx);    ///< direct.cpp: direct summation
void runErrors(Context& cx);    ///< errors.cpp: refused inputs and options, the same code and message as the CPU
void runMemory(Context& cx);    ///< memory.cpp: queue regrowth, buffer reuse, determinism, pinned vs pageable
void runPeriodic(Context& cx);  ///< periodic.cpp: Ewald walks (expansion and per pair), 1-3 periodic axes
void runContrast(Context& cx);  ///< contrast.cpp: signed sources (density contrast) and masses as given
void runLet(Context& cx);       ///< let.cpp: LETs chosen and packed on the device vs the host's, byte for byte
void runVote(Context& cx);      ///< vote.cpp: the vote walk against direct summation and the CPU's vote walk
void runPaired(Context& cx);    ///< paired.cpp: the walk's paired evaluators, bitwise the unpaired ones, and used
void runSystem(Context& cx);    ///< system.cpp: probes and target subsets (system solves), CPU vs CUDA
void runClustered(Context& cx); ///< clustered.cpp: a Plummer sphere of points: the groups of tree/groups_k.h
void runParticles(Context& cx); ///< particles.cpp: softened particles with gas and probes, both kernels
void runHostBlocks(Context& cx);  ///< hostblocks.cpp: the host block entry in chunks, bitwise one launch
void runFmm(Context& cx);       ///< fmm.cpp: method 'fmm' on the GPU vs the CPU's (same lists), momentum, determinism
void runFmmTiles(Context& cx);  ///< fmm_tiles.cpp: the FMM's P2P tiles built on the device vs the host's, array for array
void runFmmLists(Context& cx);  ///< fmm_lists.cpp: the FMM's lists built on the device vs the host's, array for array
void runFmmTree(Context& cx);   ///< fmm_tree.cpp: the FMM tree and upward pass built on the device vs the host's, by bits
void runFmmPeriodic(Context& cx);  ///< fmm_periodic.cpp: method 'fmm' in periodic boxes on the GPU vs the CPU's
void runFmmBlocks(Context& cx);    ///< fmm_blocks.cpp: method 'fmm' through the block entry, bitwise the cell entry
void runFmmRanks(Context& cx);     ///< fmm_ranks.cpp: method 'fmm' over ranks as threads, own lists on the GPU

}  // namespace amrgrav::parity
