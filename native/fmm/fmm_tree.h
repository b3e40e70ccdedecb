/// \file fmm_tree.h
/// \brief The FMM's tree: the octree topology of tree/ (tree/build.cpp, leaves of up to kFmmLeafSize cells) with
/// what the FMM keeps per node: expansion centre, radius and the MAC's quantities (physics/fmm_mac_k.h), multipoles
/// M and local coefficients L (fmm/multi_index.h's conventions), all in the solve's scaled lengths.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "fmm/shared_top.h"
#include "tree/tree.h"

namespace amrgrav {
namespace fmm {

struct MultiIndex;
struct P2pTable;

/// Cells per leaf: 64 (a 4^3 sub-block of an 8^3 block) moves the work from M2L to the cheap, regular P2P;
/// 8-cell leaves made the prototype 2-4x slower (docs/fmm-design.md, section 4).
constexpr int kFmmLeafSize = 64;

struct FmmTree {
  Octree topo;                              ///< topology (its moment arrays stay empty)
  int order = 0;                            ///< expansion order p
  int terms = 0;                            ///< coefficients per node
  int mStride = 0;                          ///< M's doubles per node: terms rounded up to 8, zero-padded (M2L's lanes)
  /// Expansion centres are the nodes' cube centres, so multipoles have dipole terms: boxes with a periodic axis,
  /// where the far images' kernel is tabulated at whole offsets of cube centres (far_images.h) and the potential
  /// crosses zero (fully periodic: the sources are the signed density contrast, whose centre of mass is undefined
  /// when a node's masses sum to ~0; sheets and lines: psi falls as -|w| or -ln rho away from the masses).
  bool dipoles = false;
  std::vector<std::uint32_t> levelBegin;    ///< nodes of level l: [levelBegin[l], levelBegin[l + 1])
  std::vector<double> centre;               ///< expansion centre, 3 per node: the centre of mass (cube centre if
                                            ///< massless), or the cube centre when `dipoles`
  std::vector<double> radius;               ///< largest distance from the centre to one of the node's cell centres
  std::vector<double> critical;             ///< radius / theta (fmmCriticalRadius)
  std::vector<double> absMass;              ///< sum |m|
  std::vector<double> lowBound;             ///< fmmPotentialLowerBound (with `dipoles`: the scale of |phi|)
  /// The MAC's test 3 (physics/fmm_mac_k.h fmmAccelLimit): with accelerations and opt.fmmAccelTolerance > 0 in an
  /// isolated box, that times |M_root| / side^2 of the root cube (every rank's cells in a distributed solve); else
  /// 0, and the lists are those of the potential alone.
  double accelLimit = 0;
  /// With `dipoles`: each node's multipole norms Q_n = |M^(n)|, n = 0..order (order + 1 per node), for
  /// fmmSignedPairAccepts (physics/fmm_mac_k.h).
  std::vector<double> norms;
  std::vector<double> M;                    ///< mStride per node
  std::vector<double> L;                    ///< terms per node
  std::size_t nodeCount() const { return topo.nodeCount(); }
  bool isLeaf(std::size_t i) const { return topo.isLeaf(i); }
};

/// What the MAC's per-node scales are made of (fmmPotentialLowerBound, or the signed sources' scale of |phi|), as
/// sums and maxima over the cells. A distributed solve (fmm/fmm_let.h) reduces them over its ranks before they are
/// applied, so that every rank's scales are those of all the cells, as in one process.
struct MacScaleParts {
  /// Isolated boxes: the total |mass| and the cube the lower bounds are measured to (one process: the tree's root).
  double absMass = 0;
  RootCube cube;
  /// Fully periodic boxes: the largest near field of one leaf with itself, and the net mass and cell count of each
  /// cube of a quarter of the root's side (kScaleCubes, Morton order of the cube's position).
  double nearMax = 0;
  std::vector<double> net, count;
};
constexpr int kScaleCubes = 64;

/// Reduces the parts over every rank (collective; called once by buildFmmTree, on every rank, cells or none).
using MacScaleReduce = std::function<Status(MacScaleParts& parts)>;

/// A distributed solve's nodes shared with other ranks (fmm/shared_top.h; this rank's tree splits them where one
/// process does). Their centres, radii, |mass| and multipoles are those of every rank's cells: the per-node sums
/// (mass, |mass|, mass moments, multipoles about the global centre) summed over the ranks, the radii's maxima taken.
struct SharedNodes {
  const SharedTop* top = nullptr;   ///< the shared nodes (the same on every rank)
  std::vector<std::int32_t> index;  ///< filled by buildFmmTree: per node of this rank's tree, its index in top or -1
  /// Collective, in place over every rank, per shared node (arrays of count x k values, zeros where this rank has
  /// none of the node's cells).
  std::function<Status(double* v, std::size_t n)> sum, max;
  /// Periodic boxes: the largest near field of a shared leaf with itself (all its cells), which no rank has alone.
  double sharedLeafNearMax = 0;
};

/// The topology over the key-sorted cells, then bottom-up (level by level, nodes of a level in parallel: the same
/// bits for any thread count) the centres, radii and MAC quantities (opt.fmmTheta) and the multipoles (P2M at the
/// leaves, M2M above). L is zeroed. `reduce` (a distributed solve): the MAC's scales from the parts of every rank;
/// periodic boxes then measure the coarse field on the root's 4^3 cubes on every rank alike. `shared` (a
/// distributed solve): the shared nodes, split by their global counts and completed over the ranks
/// before the MAC's quantities that read them (shared->index filled here).
/// The weights n! k! of each term's square in the multipole norms (fmm/norms_k.h fmmMultipoleNorms), term by term.
std::vector<double> multipoleNormWeights(const MultiIndex& mi);

/// One process's scale of |phi| for signed sources (periodic boxes, `dipoles`), which buildFmmTree puts in every
/// node's lowBound: a share of the larger of the largest near field of a leaf with itself and the coarse field of
/// the net masses of the root's 4^3 cubes (the rule of a distributed solve too, so that one process and N ranks
/// choose the same pairs), from the topology (topo, levelBegin), the expansion centres and the sorted cells
/// alone (the CUDA backend's periodic path takes it so for the device's tree).
double signedSourceScale(const SortedCells& cells, int threads, const FmmTree& tree);

/// signedSourceScale's parts, for the CUDA backend's periodic path, which finds them with the sorted cells on the
/// device (cuda/fmm_scale_phase.h, fmm/signed_scale_k.h): the same functions, so the same bits.
/// One leaf's near field at its cells, max over its cells of |sum over its other cells of m / r|: by `self` (the
/// regular leaf's self table, p2p_tables.h, `count` 64 of size h) or pair by pair (self null). The leaf's `count`
/// cells at x, y, z with masses m (sorted order, scaled lengths).
double leafNearOf(const double* x, const double* y, const double* z, const double* m, std::uint32_t count,
                  const P2pTable* self, double h);
/// The level whose nodes' net masses make the coarse field (2, or the deepest of a shallower tree); -1 for none.
int signedScaleLevel(const FmmTree& tree);
/// The level-2 nodes' net masses (net: one per node of level 2, in node order, each summed over its cells in their
/// order: fmm/signed_scale_k.h netMassOf) added into the root's 4^3 cubes (cubeNet, cubeCount: kScaleCubes each),
/// each node into the cube of its centre. With no leaf above level 2 those are every cube's net mass and count.
void placeLevelNets(const FmmTree& tree, const std::vector<double>& net, std::vector<double>& cubeNet,
                    std::vector<double>& cubeCount);
/// The coarse field of the cubes' net masses at each other's centres, from the level-2 nodes' (placeLevelNets): the
/// one-process rule's for a tree without leaves above level 2 (signedSourceScale's; the CUDA backend's device path
/// takes no other tree).
double coarseFieldOfNets(const FmmTree& tree, const std::vector<double>& net);
/// The scale from its parts (the share of the larger).
double signedScaleOf(double leafNearMax, double coarseField);

Status buildFmmTree(const std::vector<std::uint64_t>& sortedKeys, const RootCube& root, const SortedCells& cells,
                    const SolveOptions& opt, int threads, FmmTree& tree, const MacScaleReduce& reduce = {},
                    SharedNodes* shared = nullptr);

}  // namespace fmm
}  // namespace amrgrav
