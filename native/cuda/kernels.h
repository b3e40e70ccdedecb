/// \file kernels.h
/// \brief Device data layouts and the host-side launchers of the CUDA backend's kernels (one .cu per family:
/// keys, build, moments, walk, direct, finish). Internal: only .cu files include this.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/block_index.h"
#include "ewald/lookup_k.h"
#include "let/let.h"
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {
namespace cuda {

/// Four doubles, 32-byte aligned (CUDA 13 deprecates double4): a cell (x, y, z scaled; w = mass, unscaled) or a
/// node's MAC record (com scaled; w = macRadius, or -1 for a massless node, which the walk skips).
struct alignas(32) D4 {
  double x, y, z, w;
};

/// One node of a received LET forest in the walk's layout: topology (first cell, its cells if a leaf, first child,
/// children), MAC record (com, macRadius), mass and quadrupole with S (the second moment's trace: the periodic
/// walk's and the Plummer expansion's term) times massScale ms. The one conversion of cuda/kernel_let.cu
/// letToForestKernel (the cells' LETs, on the device) and of the particle LETs merged on the host (rank_system.cu).
__host__ __device__ inline void forestNodeRecord(unsigned cellBegin, unsigned cellCount, unsigned childBegin,
                                                 unsigned kids, const double* com, double macRadius, double m,
                                                 const double* q, double S, double ms, uint4& topo, D4& mac,
                                                 float4* mq) {
  topo = make_uint4(cellBegin, kids == 0 ? cellCount : 0u, kids > 0 ? childBegin : 0u, kids);
  mac = D4{com[0], com[1], com[2], macRadius};  // macRadius -1: an empty node, which the walk skips
  mq[0] = make_float4(float(m * ms), float(q[0] * ms), float(q[1] * ms), float(q[2] * ms));
  mq[1] = make_float4(float(q[3] * ms), float(q[4] * ms), float(q[5] * ms), float(S * ms));
}

/// A block solve's cells as the blocks' geometry makes them (cuda/block_index.h blockCellAt: the bits a stored,
/// gathered copy would have): cell i is the caller's cell order[i] (order null: i), its centre and size times
/// scale. A block solve stores no positions (memory_plan.h), so every kernel that reads them makes them.
struct BlockCells {
  BlockGeometry g;  ///< g.geo null: not a block solve's cells
  const std::uint32_t* order = nullptr;
  double scale = 1;
};

/// The cells as the kernels read them: separate arrays (gathered in place in the solve's device block): x, y, z
/// scaled, mass unscaled; or, in a block solve, the centres made from `blocks` and the masses stored. cells[i]
/// reads cell i as a D4, so the kernels index them as they did an array of D4.
struct DeviceCells {
  const double *x, *y, *z, *mass;
  BlockCells blocks = {};
  __device__ __forceinline__ bool made() const { return blocks.g.geo != nullptr; }
  /// Whether the cells have centres (a bounds pass may take the masses alone).
  __host__ __device__ bool hasCentres() const { return x != nullptr || blocks.g.geo != nullptr; }
  __device__ __forceinline__ void centre(std::size_t i, double& cx, double& cy, double& cz) const {
    if (made()) {
      blockCellAt(blocks.g, blocks.order ? __ldg(blocks.order + i) : unsigned(i), blocks.scale, cx, cy, cz);
    } else {
      cx = x[i];
      cy = y[i];
      cz = z[i];
    }
  }
  /// A block solve's cell size (scaled as the centres); only for made() cells.
  __device__ __forceinline__ double blockSize(std::size_t i) const {
    return blockCellSize(blocks.g, blocks.order ? blocks.order[i] : unsigned(i), blocks.scale);
  }
  __device__ __forceinline__ D4 operator[](std::size_t i) const {
    D4 c;
    centre(i, c.x, c.y, c.z);
    c.w = mass[i];
    return c;
  }
};

/// A cell's own term of cpu finish(), coef m / size (scaled size; coef = selfCoefficient(opt.selfPotential)).
__device__ __forceinline__ double selfTerm(double coef, double m, double size) {
  return __ddiv_rn(__dmul_rn(coef, m), size);
}

/// A cell's potential sum as the finish step wants it (cpu_backend.cpp finish()): phi / massScale, plus its self
/// term when add is set; each operation rounded on its own, so the walk (a fast-math file) and the direct path's
/// kernel give the bits the finish step gave.
__device__ __forceinline__ double foldSelfTerm(double phi, double invMassScale, double self, bool add) {
  const double v = __dmul_rn(phi, invMassScale);  // a power of two: exact
  return add ? __dadd_rn(v, self) : v;
}

/// Double-precision moments of a node as its parent reads them in the bottom-up sweep.
struct NodeMoments {
  double m, cx, cy, cz;
  double q[6];          ///< traceless quadrupole about (cx, cy, cz): xx, xy, xz, yy, yz, zz
  double s;             ///< second-moment trace sum m |x - com|^2 (the periodic walk's correction needs it)
  double lo[3], hi[3];  ///< tight box around the cells' extents
  double d[3];          ///< signed sources: the dipole about (cx, cy, cz) (tree/moments.cpp), else 0
  double a;             ///< signed sources: sum |m|, else the mass
};

// ---------------------------------------------------------------- keys, sort, gather (kernel_keys.cu)

constexpr int kBoundsBlocks = 256;  ///< partial results of the bounds reduction
constexpr int kBoundsStride = 8;    ///< doubles per partial result (and in the result): lo[3], hi[3], mass, min size

/// What the bounds kernel checks of every cell: the conditions of core/validate.cpp validateCells.
struct CellChecks {
  bool hasBox = false;
  bool signedMasses = false;  ///< negative masses are allowed (SolveOptions::signedSources)
  double boxLo[3] = {0, 0, 0}, boxHi[3] = {0, 0, 0};
  unsigned* firstBad = nullptr;  ///< atomicMin of the index of a cell that fails (initialise to 0xffffffff)
};

/// lo/hi of (x -+ size/2) over all cells, the total mass and the smallest size: result[0..2] = lo, [3..5] = hi,
/// [6] = mass sum, [7] = smallest size (infinite without sizes). partials: kBoundsStride * kBoundsBlocks doubles.
/// Also flags invalid cells (see CellChecks). Either part may be skipped: cells without centres (then lo/hi stay
/// infinite; cells.mass is never read) or mass null (then the sum is 0); the mass sum is taken in the same order
/// either way. The sizes: `size`, or a block solve's made cells' own; with neither, the bounds of the centres
/// (sizes unchecked).
Status launchBounds(const DeviceCells& cells, const double* mass, const double* size, unsigned n,
                    const CellChecks& checks, double* partials, double* result, cudaStream_t s);

/// Coincident cells after the key sort (core/validate.h checkCoincidentCells): *firstSorted = min of its value and
/// the first sorted position whose cell has an earlier one at the same centre in its run of equal keys (initialise
/// it to 0xffffffff). cells: the caller's centres, unsorted; order: sorted position -> caller's index.
Status launchCoincident(const DeviceCells& cells, const std::uint64_t* sortedKeys, const std::uint32_t* order,
                        unsigned n, unsigned* firstSorted, cudaStream_t s);

/// Morton keys of the caller's (unscaled) positions on the root cube [lo, lo + side), and idx[i] = i.
Status launchKeys(const DeviceCells& cells, unsigned n, double lo0, double lo1, double lo2, double invCellSide,
                  std::uint64_t* keys, std::uint32_t* idx, cudaStream_t s);

/// Stable sort of (key, index) pairs over the 63 key bits, ping-ponging between the two halves of each pair of
/// buffers (CUB's double buffer: no n-sized scratch). The input is in keys[0], idx[0]; the result ends in
/// keys[*selector], idx[*selector]. With temp == nullptr only sets tempBytes (and *selector).
Status sortPairs(void* temp, std::size_t& tempBytes, std::uint64_t* const keys[2], std::uint32_t* const idx[2],
                 unsigned n, int* selector, cudaStream_t s);

/// out[i] = in[order[i]] * scale (scale 1 for masses: exact). out must not overlap in.
Status launchGather(const double* in, const std::uint32_t* order, unsigned n, double scale, double* out,
                    cudaStream_t s);

/// out[i] = keys[topo[i].x] for the nodes i < nodes: the key of each node's first cell, whose prefix gives the
/// node's cube, so that the moments need not keep the n sorted keys.
Status launchNodeKeys(const uint4* topo, const std::uint64_t* keys, unsigned nodes, std::uint64_t* out,
                      cudaStream_t s);

// ---------------------------------------------------------------- tree topology (kernel_build.cu)
// Node topology as uint4: x = first sorted cell, y = cell count, z = first child, w = child count (0: leaf).

/// topo[0] = root over all n cells.
Status launchSetRoot(uint4* topo, unsigned n, cudaStream_t s);

/// count[i] = number of non-empty octants of level node levelBegin + i if it is split, else 0, for i < width;
/// count[width] = 0 (so an exclusive scan over width + 1 entries ends with the level's total). Adds the number of
/// split nodes to *splitNodes.
Status launchCountChildren(const uint4* topo, const std::uint64_t* keys, unsigned levelBegin, unsigned width,
                           int level, int leafSize, unsigned* count, unsigned long long* splitNodes, cudaStream_t s);

/// Exclusive prefix sum of n unsigned values. With temp == nullptr only sets tempBytes.
Status scanExclusive(void* temp, std::size_t& tempBytes, const unsigned* in, unsigned* out, unsigned n,
                     cudaStream_t s);

/// Writes the children of every split node of the level at levelEnd + offset[i], in octant order, and the
/// parents' child ranges.
Status launchEmitChildren(uint4* topo, const std::uint64_t* keys, unsigned levelBegin, unsigned width, int level,
                          int leafSize, const unsigned* offset, unsigned levelEnd, cudaStream_t s);

// ---------------------------------------------------------------- moments (kernel_moments.cu)

struct MomentsParams {
  const uint4* topo;
  const std::uint64_t* nodeKeys;  ///< key of each node's first cell: its prefix gives the node's cube coordinates
  DeviceCells cells;
  const double* size;
  NodeMoments* moments;  ///< nodes < stored only (the deepest level's leaves go to their parents in shared memory)
  unsigned stored;
  D4* nodeMac;        ///< com, macRadius (or -1 when massless)
  float4* nodeMQ;     ///< 2 per node: (m, q0, q1, q2), (q3, q4, q5, S), times massScale
  double rootLo[3];   ///< scaled
  double rootSide;    ///< scaled
  double theta;
  int mac;            ///< MacKind
  double massScale;   ///< power of two applied to masses (and quadrupoles) stored as float
  bool signedSources; ///< expand about the MAC's centre with a dipole (tree/moments.cpp)
  float4* nodeDip;    ///< signed sources: per node the dipole (x, y, z, 0) times massScale, else null
};

/// The density contrast (tree/tree.h applyDensityContrast): mass[i] -= rho size[i]^3 over the sorted, scaled cells.
Status launchDensityContrast(double* mass, const double* size, unsigned n, double rho, cudaStream_t s);

/// Moments of every node, bottom-up: the deepest level (its moments are not stored: p.stored = levelStart[depth])
/// with the level above it in one launch, then one launch per level. levelStart: depth + 2 entries (host memory).
Status launchMoments(const MomentsParams& p, const unsigned* levelStart, int depth, cudaStream_t s);

// ---------------------------------------------------------------- walk groups (kernel_groups.cu)

constexpr unsigned kGroupTile = 4096;  ///< sorted cells per block of the group kernels

/// Tiles of kGroupTile cells over n cells (the group kernels' blocks; tileCount and tileOffset hold tiles + 1).
unsigned groupTiles(unsigned n);

/// One bit per sorted cell, set where a walk group starts: kGroupStartsPerMask consecutive cells per mask.
using StartMask = std::uint16_t;
constexpr unsigned kGroupStartsPerMask = 16;
/// Masks the group kernels use for n cells (every tile's, whole).
inline std::size_t groupStartMasks(unsigned n) {
  return std::size_t((n + kGroupTile - 1) / kGroupTile) * (kGroupTile / kGroupStartsPerMask);
}

/// tileCount[t] = the walk groups (tree/groups_k.h) starting in tile t of the sorted keys, tileCount[tiles] = 0,
/// and the starts themselves in startMask (groupStartMasks(n)).
Status launchCountGroups(const std::uint64_t* keys, unsigned n, unsigned groupSize, unsigned* tileCount,
                         StartMask* startMask, cudaStream_t s);

/// After tileOffset = the exclusive scan of tileCount (scanExclusive over tiles + 1): groupBegin[g] = the first
/// sorted cell of group g, in cell order, and groupBegin[numGroups] = n (numGroups = tileOffset[tiles]), from the
/// counting pass's startMask.
Status launchWriteGroups(const StartMask* startMask, unsigned n, const unsigned* tileOffset, unsigned* groupBegin,
                         cudaStream_t s);

// ---------------------------------------------------------------- walk (kernel_walk.cu)

constexpr int kWalkWarpsPerBlock = 4;

/// counters (unsigned) of one walk launch
enum WalkCounter {
  kNextGroup = 0,
  kOverflowNeed = 1,
  kQueuePeak = 2,
  kSkippedGroups = 3,
  kPairedGroups = 4,  ///< groups walked with the paired evaluators (kernel_walk.cu)
  kWalkCounterCount = 5
};

/// The Ewald table as the walk reads it: the CPU's view over the device's float copy of the coefficients.
using EwaldDeviceView = EwaldTableViewOf<float>;

struct WalkParams {
  DeviceCells cells;
  const double* groupHmin;  ///< smallest (scaled) cell size of each group: picks the split-precision path
  const double* selfTerm;   ///< sorted self terms (launchWalkPrep); phi is the same array
  const D4* nodeMac;
  const float4* nodeMQ;
  const float4* nodeDip;  ///< signed sources: per node the dipole (times massScale); null: none (about the com, 0)
  const uint4* topo;
  const unsigned* groupBegin;  ///< numGroups + 1: group g is the sorted cells [groupBegin[g], groupBegin[g + 1])
  unsigned n, numGroups;
  double massScale;
  unsigned* queue;       ///< queueCap entries per warp of the grid
  unsigned char* queueTag;  ///< the periodic expansion kernel: each queue entry's image tag (ewald/expansion_k.h)
  unsigned queueCap;     ///< power of two
  unsigned* counters;    ///< WalkCounter
  unsigned long long* interactions;  ///< [0] approx, [1] direct
  double *phi, *gx, *gy, *gz;        ///< sorted order, unscaled sums (times massScale); g null without accelerations
  double invMassScale;               ///< phi is written as foldSelfTerm(sum, invMassScale, selfTerm, selfPotential)
  bool selfPotential;                ///< a self term is added (its coefficient is not 0)
  EwaldDeviceView ewald;             ///< periodic walks (WalkConfig::periodic)
  bool ewaldExpansion = true;        ///< SolveOptions::ewaldExpansion
  bool hoistCorrection = true;       ///< expanding groups take corrections at hoisted nodes (cpu_walk.h WalkPass)
  bool pairedCells = true;           ///< paired evaluators where a group allows (CudaOptions::pairedCells)
  /// The cells of the source tree's leaves: `cells` itself for the local tree (each cell meets itself once, not
  /// counted); a received LET's own cells (mpi/distributed_cuda.cpp), where no pair is a self pair. Read straight
  /// from the kernel's parameters, as `cells` is: no registers for the choice. (A LET walk writes its sums into
  /// arrays of their own, selfPotential false, then launchAddInto adds them: the kernel has no accumulate mode.)
  DeviceCells sources = {nullptr, nullptr, nullptr, nullptr};
  unsigned selfPairs = 1;  ///< 1: the sources are the targets (each cell meets itself once, not counted); 0: a LET
  /// A system solve's walks (WalkConfig::ranges): per group (numGroups of them) its first target and count, the
  /// groups holding a subset of targets (launchSubsetGroups) or the probes' octree-leaf groups
  /// (tree/system_points.h). Unused by a cell walk (groupBegin).
  const uint2* groupRange = nullptr;
  /// Softened walks (WalkConfig::softening; particles, physics/softening_k.h), each null for eps 0: per node of the
  /// source tree its (smallest, largest) softening, per source its softening, per target its softening, per group
  /// the (smallest, largest) of its targets'. All scaled like the positions.
  const double2* nodeEps = nullptr;
  /// Per node of the source tree its source extent (physics/softening_k.h); null: the node's MAC radius bounds it
  /// (the cells' tree).
  const double* nodeExtent = nullptr;
  const double* sourceEps = nullptr;
  const double* targetEps = nullptr;
  const double2* groupEps = nullptr;
};

/// Before the walk (kernel_finish.cu): groupHmin[g] = smallest size of group g (groupBegin: numGroups + 1 starts),
/// then (selfCoef != 0) size[i] = selfTerm(selfCoef, mass[i], size[i]): the walk needs no sizes but each group's
/// smallest, and writes phi over the self terms as it adds them.
Status launchWalkPrep(double* size, const double* mass, const unsigned* groupBegin, unsigned numGroups,
                      double selfCoef, double* groupHmin, cudaStream_t s);


struct WalkConfig {
  int order = 2;          ///< 1 or 2
  bool accelerations = false;
  int cellsPerLane = 1;   ///< 1 (groupSize <= 32) or 2 (groupSize <= 64)
  bool vote = false;      ///< per-cell __all_sync vote instead of the group-box MAC
  bool periodic = false;  ///< nearest images plus the Ewald correction (WalkParams::ewald)
  /// Periodic walks run in up to three launches: the walk of the groups that take the Ewald expansion (sources at
  /// their images, no table code), then, if it counted any others (kSkippedGroups), their walk with per-pair
  /// corrections (perCellEwald), then the expanding groups' corrections (ewaldCorrection), added to phi.
  bool perCellEwald = false;
  bool ewaldCorrection = false;
  bool dipole = false;    ///< signed sources (SolveOptions::signedSources): the periodic lists carry node dipoles
  /// The groups are WalkParams::groupRange's (a system solve's probes or subset of targets): kernels of their own,
  /// so the cell walks' kernels are unchanged.
  bool ranges = false;
  /// 0: the cells' walk. 1 + SofteningKernel: a softened walk (particles as sources or targets; isolated, box MAC):
  /// kernels of their own, WalkParams' softening fields.
  int softening = 0;
};

/// Resident blocks per multiprocessor of the walk kernel for this configuration.
Status walkBlocksPerSm(const WalkConfig& c, int* blocks);
Status launchWalk(const WalkConfig& c, const WalkParams& p, int blocks, cudaStream_t s);

// ---------------------------------------------------------------- LETs on the device (kernel_let.cu)

/// The local tree as the LET kernels read it (the walk's arrays) and the factor back to unscaled masses.
struct LetTreeView {
  const uint4* topo;
  const D4* mac;
  const float4* mq;
  const float4* dip;  ///< signed sources: the nodes' dipoles (times massScale), packed as AMRGLET2; else null
  DeviceCells cells;
  unsigned nodes;
  double invMassScale;
};

/// A node's selection state before its level is decided: its parent was opened (else 0xff: not in the LET).
/// Decided nodes hold their LetSelection::Kind.
constexpr unsigned char kLetReached = 0xfe;

/// essentialNodesFor (periodic non-null: essentialNodesForPeriodic over its periods and reach) on the device:
/// state[i] = the LetSelection::Kind of node i, or 0xff when not in the LET; count[i] = (1 << 32 | opened leaf's
/// cells) for nodes in it, else 0; count[nodes] = 0. levelStart: levels + 1 node offsets (host memory). state: nodes
/// bytes, count: nodes + 1.
Status launchLetSelect(const LetTreeView& tree, const unsigned* levelStart, int levels, const RemoteBox& box,
                       const EwaldDeviceView* periodic, unsigned char* state, unsigned long long* count,
                       cudaStream_t s);

/// Exclusive prefix sum of n counts (offset[nodes] = the LET's (nodes, cells)). With temp == nullptr only sets
/// tempBytes.
Status scanLetCounts(void* temp, std::size_t& tempBytes, const unsigned long long* count, unsigned long long* offset,
                     unsigned n, cudaStream_t s);

/// packLet on the device into `out` (LetLayout(letNodes, letCells).end bytes): the same bytes as the host's
/// packLet of the same selection over the tree rankExportTree downloads. secondMoment: the nodes' second moments
/// travel (periodic), else zeros.
Status launchLetPack(const LetTreeView& tree, const unsigned char* state, const unsigned long long* offset,
                     unsigned long long letNodes, unsigned long long letCells, bool secondMoment, void* out,
                     cudaStream_t s);

/// The largest half-extent per axis of the walk groups' boxes (groupBegin: numGroups + 1 starts) into out[0..2],
/// as the bits of non-negative doubles (tree/groups.cpp groupHalfWidths).
Status launchGroupHalfWidths(const DeviceCells& cells, const unsigned* groupBegin, unsigned numGroups,
                             unsigned long long* out, cudaStream_t s);

/// One received LET, packed (let/let_layout.h) in device memory, and where the forest puts it (let/let.h
/// LetForestLayout: its root at rootAt, its node k > 0 at nodeBase + k - 1, its cells from cellBase on).
struct LetIntoForest {
  const unsigned char* raw;
  unsigned long long nodes, cells;
  unsigned rootAt, nodeBase, cellBase;
  double massScale;  ///< the walk's masses and quadrupoles are stored times this (as float)
  bool dipole;       ///< the LET carries dipoles (AMRGLET2, let/let_layout.h)
};

/// The LET's nodes into the forest's topology, MAC records and multipoles (the walk's layout, as the host would
/// convert mergeLets' forest; the second moments into the multipoles' last slot), its dipoles into `dip` (an
/// AMRGLET2 LET; `dip` may be null otherwise), its cells into cells[0..3] (x, y, z, mass).
Status launchLetToForest(const LetIntoForest& p, uint4* topo, D4* mac, float4* mq, float4* dip,
                         double* const cells[4], cudaStream_t s);

// ---------------------------------------------------------------- direct summation (kernel_direct.cu)

constexpr int kDirectThreads = 256;

/// All-pairs sums over the sorted cells (the self pair adds 0): phi (and g) unscaled, times massScale.
/// Positions relative to each block's first cell, as float pairs hi + lo.
Status launchDirect(const DeviceCells& cells, unsigned n, double massScale, bool accelerations, double* phi, double* gx,
                    double* gy, double* gz, cudaStream_t s);

/// launchDirect at other targets: sums over the n sources `cells` at the nt points `targets` (times massScale; a
/// source at a target's position adds 0): a system solve's probes.
Status launchDirectAt(const DeviceCells& targets, unsigned nt, const DeviceCells& cells, unsigned n, double massScale,
                      bool accelerations, double* phi, double* gx, double* gy, double* gz, cudaStream_t s);

// ---------------------------------------------------------------- system solves (kernel_system.cu)

/// The walk groups (groupBegin: numGroups + 1 first cells, tree/groups_k.h) that hold a target: flags (n bytes,
/// zeroed here) marks the targets' caller indices, groupFlag (numGroups + 1, zeroed here) their groups through
/// `order`, offset their exclusive scan (offset[numGroups] = how many), list the groups ascending. temp:
/// scanExclusive's scratch.
Status launchTargetGroups(const std::uint32_t* targets, unsigned count, const std::uint32_t* order, unsigned n,
                          const unsigned* groupBegin, unsigned numGroups, unsigned char* flags, unsigned* groupFlag,
                          unsigned* offset, unsigned* list, void* temp, std::size_t tempBytes, cudaStream_t s);

/// The walk's view of the listed groups: range[k] = the range of group list[k], hmin[k] = groupHmin[list[k]], for
/// k < count (count: on the device, offset[numGroups] of launchTargetGroups; numGroups bounds the launch).
Status launchSubsetGroups(const unsigned* list, const unsigned* count, unsigned numGroups, const unsigned* groupBegin,
                          const double* groupHmin, uint2* range, double* hmin, cudaStream_t s);

// ---------------------------------------------------------------- particles (kernel_particles.cu)

/// Softened direct sums (physics/softening_k.h) at nt targets (their softening per target, null: 0) over n sources
/// (per source, null: 0), in double, added: phi += sum m K (unscaled masses, as a folded phi), g += massScale sum m
/// d F (the walk's convention). A particle meets itself (its own pair adds m / eps: launchRemoveOwnPair).
Status launchDirectSoft(const DeviceCells& targets, const double* targetEps, unsigned nt, const DeviceCells& sources,
                        const double* sourceEps, unsigned n, SofteningKernel kernel, double massScale,
                        bool accelerations, double* phi, double* gx, double* gy, double* gz, cudaStream_t s);

/// The particles' softening ranges (scaled): per node (levelStart: levels + 1 node offsets, host memory) the
/// (smallest, largest) over its particles and its source extent (physics/softening_k.h, about the com of nodeMac,
/// over the sorted positions `cells`), bottom-up; per walk group (groupBegin: numGroups + 1) over its particles.
/// The host's tree/particle_tree.cpp ranges and extents, exactly (min and max round nothing; the extents' rules
/// round each operation on its own).
Status launchSofteningRanges(const uint4* topo, const D4* nodeMac, const DeviceCells& cells, const unsigned* levelStart,
                             int levels, const unsigned* groupBegin, unsigned numGroups, const double* eps,
                             double2* nodeRange, double* nodeExtent, double2* groupRange, cudaStream_t s);

/// phi[i] -= mass[i] / eps[i]: each particle's own pair, which the particles' own tree walk (or direct sum) added.
Status launchRemoveOwnPair(double* phi, const double* mass, const double* eps, unsigned n, cudaStream_t s);

// ---------------------------------------------------------------- finish (kernel_finish.cu)

struct FinishParams {
  const std::uint32_t* order;
  const double *phi, *gx, *gy, *gz;  ///< sorted order; phi as foldSelfTerm gives it
  double *pot, *ax, *ay, *az;  ///< caller's order
  unsigned n;
  double invMassScale, scale, G;
};

/// pot = -G scale phi, a = -G scale^2 g / massScale, scattered to the caller's order.
Status launchFinish(const FinishParams& p, bool accelerations, cudaStream_t s);

/// phi[i] = foldSelfTerm(phi[i], invMassScale, selfTerm(selfCoef, mass[i], size[i]), ..) (the direct path; the
/// walk folds as it writes).
Status launchFoldSelf(double* phi, const double* mass, const double* size, unsigned n, double invMassScale,
                      double selfCoef, cudaStream_t s);

/// dst[i] += src[i] for i < n (a received LET walk's sums into the local walk's).
Status launchAddInto(double* dst, const double* src, std::size_t n, cudaStream_t s);

/// Fills n doubles with a quiet NaN (poisoning outputs in tests).
Status launchPoison(double* p, std::size_t n, cudaStream_t s);

}  // namespace cuda
}  // namespace amrgrav
