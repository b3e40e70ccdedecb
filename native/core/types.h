/// \file types.h
/// \brief Plain structs of arrays and options at the boundary between the binding and the backends.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace amrgrav {

/// Borrowed view of the caller's cells (centres in cm, masses in g, cube sides in cm).
struct CellsView {
  const double* x = nullptr;
  const double* y = nullptr;
  const double* z = nullptr;
  const double* mass = nullptr;
  const double* size = nullptr;
  std::size_t n = 0;
};

/// Multipole acceptance criterion. Both accept a node for a group of cells when the minimum distance d from the
/// node's centre of mass to the group's bounding box exceeds l/theta + delta.
enum class MacKind {
  /// Barnes (1994), the FLASH4 GPU solver's: l = side of the node's octree cube, delta = |com - cube centre|.
  Barnes = 0,
  /// Bonsai (Bedorf et al. 2012): l = longest side of the tight box around the node's cells (with their extents),
  /// delta = |com - centre of that box|.
  Bonsai = 1,
};

/// The softening kernel of particles (system solves, core/system.h; the kernels: physics/softening_k.h).
enum class SofteningKernel : int {
  /// The compact cubic spline (Monaghan & Lattanzio 1985; SPH, Gadget) of radius 2.8 eps: exactly Newtonian beyond.
  Spline = 0,
  /// -G m / sqrt(r^2 + eps^2): never exactly Newtonian, so nodes act through the softened kernel's expansion.
  Plummer = 1,
};

/// How a group decides that a node is acceptable for all of its cells.
enum class WalkKind {
  /// The group's bounding box against the node (physics/mac_k.h): conservative, one test per node.
  Box = 0,
  /// The FLASH4 GPU solver's literal warp vote: every cell tests the node against its own centre and the node is
  /// accepted only if all agree (__all_sync). Accepts a superset of Box's nodes, so fewer interactions.
  Vote = 1,
};

/// Each cell's own contribution to its potential (the pair i = i that the sums leave out), -coefficient G m / h.
enum class SelfPotential {
  None = 0,  ///< point masses: no self term
  /// The potential at the centre of a uniform cube of mass m and side h: -kCubeSelf G m / h.
  Cube = 1,
  /// The term that makes a uniform lattice of point masses (spacing h) reproduce the potential of the uniform
  /// density it samples: -kLatticeSelf G m / h. The cube's self term leaves the neighbours' point-mass-vs-cube
  /// difference, -(kLatticeSelf - kCubeSelf) G rho h^2 in uniform density; this adds it (validation in RESULTS.md).
  Lattice = 2,
};

/// How the far field is computed (the option `method`).
enum class SolveMethod {
  /// The Barnes-Hut group walk (cpu/, cuda/): node-cell and cell-cell interactions, MAC theta (the reference).
  Tree = 0,
  /// The fast multipole method (fmm/): node-node M2L with local expansions passed down the tree, and P2P between
  /// near leaves; fmmOrder, fmmTheta and fmmTolerance set its accuracy. CPU backend: one process in any box (isolated,
  /// fully or partly periodic: fmm/far_images.h), or CPU ranks under MPI (cpu/fmm_ranks.h) in isolated and fully
  /// periodic boxes.
  Fmm = 1,
};

struct SolveOptions {
  SolveMethod method = SolveMethod::Tree;
  /// FMM expansion order p, [3, 7] (multipoles and local coefficients to degree p).
  int fmmOrder = 7;
  /// FMM opening angle: a node pair interacts by M2L only when r_A + r_B < fmmTheta R; (0, 1).
  double fmmTheta = 0.65;
  /// FMM error tolerance: each M2L's error bound must be at most this times a lower bound of the target's potential,
  /// and a leaf's target-side truncation at most 2x this of the source's potential there (physics/fmm_mac_k.h, tests
  /// 2 and 2b); [0, 1), 0 = the opening angle alone.
  double fmmTolerance = 2e-4;
  /// FMM error tolerance of the accelerations, applied when they are computed (isolated boxes): each M2L's bound of
  /// its error in the gradient must also be at most this times G |M_root| / side^2 of the root cube
  /// (physics/fmm_mac_k.h, test 3); [0, 1), 0 = the potential's rules alone (the potential's lists, so asking for
  /// accelerations then leaves the potential's bits unchanged).
  double fmmAccelTolerance = 5e-5;
  double theta = 0.5;      ///< opening angle, (0, 1]
  int order = 2;           ///< 1: monopole, 2: monopole + traceless quadrupole
  MacKind mac = MacKind::Barnes;
  WalkKind walk = WalkKind::Box;
  double G = 6.674e-8;     ///< gravitational constant (cgs by default)
  int leafSize = 16;       ///< max cells in a tree leaf
  /// Points per walk group, [1, 256] (CUDA: at most 64, two per lane above 32); 0 (the default) = automatic, see
  /// cellGroupSize() and pointGroupSize().
  int groupSize = 0;
  SelfPotential selfPotential = SelfPotential::Lattice;  ///< each cell's own term (solver/options.ts says why)
  bool accelerations = false; ///< also compute -grad(phi)
  SofteningKernel softening = SofteningKernel::Spline;  ///< particles' kernel (system solves with particles)
  int threads = 0;         ///< CPU threads, 0 = all hardware threads
  bool hasBox = false;     ///< when true, cells must lie in [boxLo, boxHi] and the tree's root cube starts at boxLo
  double boxLo[3] = {0, 0, 0};
  double boxHi[3] = {0, 0, 0};
  /// Periodic axes (x, y, z). Any periodic axis needs the box, whose sides are the periods; the walk then adds
  /// the Ewald correction of the images (ewald/lookup_k.h), with the mean density removed when all three are.
  bool periodic[3] = {false, false, false};
  int ewaldResolution = 28;  ///< Ewald table points per half period of the shortest periodic side, [4, 512]
  /// Small groups take the Ewald correction as one expansion about their centre (ewald/expansion_k.h);
  /// false: a table lookup per (cell, source) pair, the reference for the expansion's error.
  bool ewaldExpansion = true;
  /// Fully periodic boxes: the sources are the density contrast, each cell's mass minus the mean density times its
  /// volume, m_i - (M / V_box) size_i^3 (M summed over all cells, every rank's). The zero-mean Green's function
  /// gives a uniform density no potential, so this changes the result only by what the tree's error on the
  /// background was, and makes the error scale with the perturbation instead of the whole mass. false: the masses
  /// as given (point-mass sets that do not tile the box; none may be negative). Ignored unless all three axes are
  /// periodic.
  bool densityContrast = true;
  /// Backend 'auto' on a GPU: solves of fewer cells than this run on the CPU, where the GPU's fixed costs (device
  /// set-up, transfers, the walk's launch) outweigh its speed (api/session.h; the reason says so). 0: off.
  /// Default 1000: on an H100 with 16 host cores the GPU solve took as long as the CPU's at 512 cells and half
  /// of it at 1728 (bench/RESULTS.md, 'auto' break-even). Not applied to distributed solves nor to device data.
  std::size_t autoGpuMinCells = 1000;
  bool anyPeriodic() const { return periodic[0] || periodic[1] || periodic[2]; }
  /// The cells' walk groups: groupSize, else 64 (two cells per GPU lane: each node the warp loads serves two cells,
  /// so the isolated 256^3 walk takes 13% less time for 18% more, more accurate, interactions). Periodic boxes too,
  /// since their groups of 64 take the Ewald expansion (physics/image_k.h kEwaldExpansionSpacings) from 64^3 up.
  /// Not chosen by `accelerations`, so that asking for them never changes the potential (with them 64 costs 6%
  /// more at 256^3: set 32). bench/RESULTS.md "Walk groups of 64" and "Periodic groups of 64".
  int cellGroupSize() const { return groupSize > 0 ? groupSize : 64; }
  /// Particles' and probes' walk groups: groupSize, else 32 (clustered points: a larger group's box opens more
  /// nodes than the second cell per lane saves; 1M Plummer particles walk 24% slower in groups of 64).
  int pointGroupSize() const { return groupSize > 0 ? groupSize : 32; }
  bool fullyPeriodic() const { return periodic[0] && periodic[1] && periodic[2]; }
  /// The sources are signed (the density contrast of a fully periodic box): nodes are then expanded about the
  /// MAC's centre with a dipole term (tree/moments.cpp), since a centre of mass is undefined when a node's masses
  /// sum to ~0; negative masses are accepted.
  bool signedSources() const { return fullyPeriodic() && densityContrast; }
};

/// The distributed part of a solve (zeros in a single-process solve).
struct DistributedStats {
  int ranks = 1, rank = 0;
  const char* backend = "cpu";    ///< the backend that did this rank's share ("cpu" or "cuda")
  int device = -1;                ///< a GPU rank's CUDA device (its node-local rank modulo the devices); -1 on the CPU
  std::uint64_t bytesSent = 0, bytesReceived = 0;  ///< LET messages, this rank
  std::uint64_t letNodesSent = 0, letCellsSent = 0, letsSent = 0, letsReceived = 0;
  /// Particle LETs (a system solve with particles, issue #18): messages of their own, this rank
  std::uint64_t particleBytesSent = 0, particleBytesReceived = 0;
  std::uint64_t particleLetNodesSent = 0, particleLetParticlesSent = 0, particleLetsSent = 0, particleLetsReceived = 0;
  double secondsAgree = 0;        ///< status + bounds agreement and the summary allgather (collectives)
  double secondsLetSelect = 0;    ///< choosing and packing the LETs for the other ranks (GPU: on the device, + their downloads)
  double secondsLocalWalk = 0;    ///< walk of the local tree (messages in flight meanwhile)
  double secondsExchange = 0;     ///< first send to last LET here
  double secondsExchangeWait = 0; ///< blocked waiting for LETs after the local walk (the exchange not hidden)
  double secondsOverlap = 0;      ///< part of the exchange that ran during the local walk
  double secondsRemoteWalk = 0;   ///< walks of the received LETs
};

struct SolveStats {
  double secondsKeys = 0, secondsBuild = 0, secondsMoments = 0, secondsWalk = 0, secondsTotal = 0;
  /// host <-> device copies (GPU backends only), each its own wall time: the CUDA host block entry's overlap the
  /// keys, sort and build (a new mesh's densities) and the walk (the results, chunk by chunk)
  double secondsUpload = 0, secondsDownload = 0;
  double deviceBytesPerCell = 0;                  ///< device memory held per cell after the solve (GPU only)
  std::uint64_t approxInteractions = 0;  ///< node-cell (multipole) interactions, summed over cells
  std::uint64_t directInteractions = 0;  ///< cell-cell interactions, summed over cells
  std::uint64_t nodes = 0, leaves = 0, groups = 0;
  int threads = 1;
  int treeDepth = 0;
  double secondsEwaldTable = 0;  ///< getting the Ewald table (memory, disk or build); 0 for isolated solves
  int ewaldTableSource = 0;      ///< 0 none, 1 this process's memory, 2 disk cache, 3 built
  /// Set when this solve built the Ewald table and could not cache it on disk (no cache directory, or it cannot be
  /// written): every new process then builds it again. Why, and what to do; empty otherwise.
  std::string ewaldCacheWarning;
  bool densityContrast = false;  ///< the sources were the density contrast (SolveOptions::densityContrast)
  double meanDensity = 0;        ///< the mean density removed (g/cm^3, caller's units); 0 without the contrast
  /// Fully periodic boxes: the volume-weighted mean of the potential over the cells, sum size^3 phi / sum size^3
  /// (erg/g; every rank's cells in a distributed solve); zero to rounding on uniform grids with the contrast. 0 for
  /// other boxes.
  double meanPotential = 0;
  /// A block solve (core/blocks.h) kept the keys, order, tree topology and groups of the previous call (the mesh
  /// was unchanged) and recomputed only what depends on the masses.
  bool treeReused = false;
  DistributedStats distributed;
};

/// Caller-owned result arrays of n doubles each (ax, ay, az only with accelerations).
struct ResultTargets {
  double* potential = nullptr;
  double *ax = nullptr, *ay = nullptr, *az = nullptr;
};

/// The results of one kind of points in the caller's order (a solve's cells, a system solve's probes).
struct PointResults {
  std::vector<double> potential;           ///< erg/g, negative
  std::vector<double> ax, ay, az;          ///< cm/s^2, empty unless accelerations were asked for
  /// When into.potential is set, the backend writes the results there and leaves the vectors empty: no allocation
  /// and no copy between the solve and the caller (a hydro code reuses its arrays every step).
  ResultTargets into;

  /// Where a backend writes n results: `into`, or the vectors resized (not re-filled: a poisoned vector stays
  /// poisoned wherever a backend fails to write) to n.
  ResultTargets targets(std::size_t n, bool accelerations) {
    std::vector<double>* v[4] = {&potential, &ax, &ay, &az};
    if (into.potential) {
      for (auto* e : v) e->clear();
      return into;
    }
    potential.resize(n);
    for (int k = 1; k < 4; ++k) {
      if (accelerations) v[k]->resize(n);
      else v[k]->clear();
    }
    return ResultTargets{potential.data(), accelerations ? ax.data() : nullptr, accelerations ? ay.data() : nullptr,
                         accelerations ? az.data() : nullptr};
  }
};

/// Results in the caller's cell order, and what the solve cost.
struct SolveResult : PointResults {
  SolveStats stats;
};

/// Potential of a uniform cube of side h and mass m at its centre is -kCubeSelf * G m / h.
/// kCubeSelf = integral over the unit cube of 1/r from its centre = 3 ln((sqrt3+1)/(sqrt3-1)) - pi/2.
constexpr double kCubeSelf = 2.380077363979554;

/// The zero-mean Green's function of the simple cubic lattice of unit spacing, psi(r) = 1/r - kLatticeSelf + O(r^2):
/// minus its regular part at a lattice point (the lattice sum over images of 1/r with the uniform background
/// removed; Nijboer & De Wette 1957). Checked against the independent Ewald sum in test/self-potential.test.ts.
constexpr double kLatticeSelf = 2.837297479480620;

/// The coefficient c of the self term -c G m / h.
inline double selfCoefficient(SelfPotential s) {
  return s == SelfPotential::Cube ? kCubeSelf : s == SelfPotential::Lattice ? kLatticeSelf : 0.0;
}

}  // namespace amrgrav
