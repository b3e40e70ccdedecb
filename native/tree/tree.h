/// \file tree.h
/// \brief Sparse octree over key-sorted cells, stored as plain arrays (one entry per node).
/// Nodes are in breadth-first order, so the children of a node are contiguous and always follow their parent;
/// moments can then be accumulated by one reverse sweep.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>
#include "core/status.h"
#include "core/types.h"
#include "physics/moments_k.h"

namespace amrgrav {

/// Cells in key order: the walk reads these, results are scattered back through `order`.
/// Lengths are multiplied by `scale`, a power of two that brings the root cube's side near 1: exact, and it keeps
/// squared distances inside single-precision range whatever the caller's units (1e20 cm boxes included).
struct SortedCells {
  std::vector<std::uint32_t> order;  ///< sorted position -> caller's index
  std::vector<double> x, y, z, mass, size;
  double scale = 1;                  ///< scaled length = caller's length * scale
};

/// The root cube of the tree: [lo, lo + side)^3.
struct RootCube {
  double lo[3] = {0, 0, 0};
  double side = 1;
};

struct Octree {
  RootCube root;
  // topology
  std::vector<std::uint32_t> cellBegin, cellCount;  ///< range of sorted cells under the node
  std::vector<std::uint32_t> childBegin;            ///< index of the first child (children are contiguous)
  std::vector<std::uint8_t> childCount;             ///< 0 for a leaf
  std::vector<std::uint8_t> level;                  ///< 0 = root
  std::vector<double> centre;                       ///< geometric cube centre, 3 per node (nodeCubeCentre)
  // moments (double: single-precision moments cost up to 1% error in Bonsai's tests)
  std::vector<double> mass;
  std::vector<double> com;       ///< centre of mass, 3 per node
  std::vector<double> quad;      ///< traceless quadrupole about com: xx, xy, xz, yy, yz, zz (6 per node)
  /// Signed sources (SolveOptions::signedSources): com is the MAC's centre, not the centre of mass, and this is
  /// the dipole sum m (x - com) about it (3 per node). Empty otherwise (about the centre of mass it is 0).
  std::vector<double> dipole;
  std::vector<double> extentLo, extentHi;  ///< tight box around the cells' extents (3 per node)
  std::vector<double> macRadius; ///< l/theta + delta: accept when dist(com, group box) > macRadius; -1: no mass at all
  int depth = 0;

  std::size_t nodeCount() const { return cellCount.size(); }
  bool isLeaf(std::size_t i) const { return childCount[i] == 0; }
  double side(std::size_t i) const { return nodeCubeSide(root.side, level[i]); }  ///< cube side (physics/moments_k.h)
};

/// Choose the root cube: the caller's box when given, else the bounding cube of the cells' extents; in isolated
/// boxes its side grown to a power-of-two multiple of the smallest cell (rootCubeFor).
RootCube chooseRootCube(const CellsView& cells, const SolveOptions& opt);

/// The root cube of the bounds [lo, hi] (the box or the cells' extents) and the smallest cell size `minSize`
/// (0 or infinite: points, or none): lo and the largest side; in isolated boxes, where the keys resolve the
/// smallest cell, the side is grown to minSize 2^k so that node faces lie on cell faces. The one rule of the CPU,
/// the GPU (its bounds reduced on the device) and every rank.
RootCube rootCubeFor(const double lo[3], const double hi[3], double minSize, const SolveOptions& opt);

/// The power of two that brings a length `side` near 1 (SortedCells::scale).
double lengthScaleFor(double side);

/// Morton-sort the cells (a stable radix sort, so equal keys keep the caller's order: deterministic), and scale
/// lengths by a power of two (see SortedCells). `root` is rescaled in place to the same units. `scale` 0 means
/// lengthScaleFor(root.side); a distributed solve passes the scale of the global bounds so that every rank's
/// scaled lengths are the same numbers. Coincident cells are refused, unless `pointSources` (softened particles,
/// tree/particle_tree.h: their coincident pairs are finite).
/// `threads` (resolveThreadCount's) share the keys, the sort and the gather: the same result for any count.
Status sortCellsByKey(const CellsView& cells, RootCube& root, SortedCells& out, std::vector<std::uint64_t>& keys,
                      double scale = 0, bool pointSources = false, int threads = 1);

/// sortCellsByKey's gather, also for an order sorted elsewhere (the CUDA backend's FMM sorts on the device and gathers
/// here, cuda/fmm_phase.cu): out gets `order` (sorted position -> index in c), the scale, and c's cells in that order
/// with lengths times `scale` (masses as given). The one code for both, so the same bits; any thread count.
void gatherSortedCells(const CellsView& cells, std::vector<std::uint32_t>&& order, double scale, int threads,
                       SortedCells& out);

/// The Morton sort itself: (key, index) pairs sorted by key, stably (an LSD radix sort; equal keys keep their
/// order). ktmp, itmp: scratch of the same length (resized). With several threads each pass counts and scatters
/// contiguous chunks, placed in (digit, chunk) order: still stable, so the same permutation for any thread count.
void stableSortByKey(std::vector<std::uint64_t>& keys, std::vector<std::uint32_t>& idx,
                     std::vector<std::uint64_t>& ktmp, std::vector<std::uint32_t>& itmp, int threads = 1);

/// The cell count that decides whether a node splits (a distributed FMM: a shared node's count over every rank,
/// fmm/shared_top.h), from its level, the key of its first cell and its own count.
using SplitCount = std::function<std::uint32_t(int level, std::uint64_t firstKey, std::uint32_t count)>;

/// Build the octree topology over key-sorted cells; a node with more than leafSize cells is split (`splitCount`:
/// the count it reports instead of the node's own).
Status buildOctree(const std::vector<std::uint64_t>& sortedKeys, const RootCube& root, int leafSize, Octree& tree,
                   const SplitCount& splitCount = {});

/// Mass, centre of mass, quadrupole, cell-extent box and MAC radius of every node, bottom-up. With signed sources
/// (opt.signedSources()) the expansion centre is the MAC's centre (a centre of mass is undefined when the masses
/// sum to ~0), the dipole about it is kept, and the MAC's delta is |D| / sum |m| (Barnes' |com - centre| when no
/// mass is negative). A node whose cells are all massless gets macRadius -1:
/// every walk skips it.
void computeMoments(const SortedCells& cells, const SolveOptions& opt, Octree& tree);

/// Fully periodic solves with opt.densityContrast: replaces each sorted cell's mass by m - rho size^3, rho =
/// totalMass / (box volume), in the scaled units of `cells`; returns rho in the caller's units (g/cm^3 for cgs).
/// totalMass is the sum of every rank's masses (this rank's alone in a single-process solve; core/fixed_sum.h, so
/// that both backends subtract the same mean). No-op (0) otherwise.
double applyDensityContrast(SortedCells& cells, const SolveOptions& opt, double totalMass, int threads = 1);

/// The mean density that applyDensityContrast removes: in the caller's units and in the scaled units of a solve
/// whose lengths are multiplied by `scale` (masses unscaled); the GPU backend subtracts rhoScaled h^3 itself.
struct ContrastDensity {
  double rho, rhoScaled;
};
ContrastDensity contrastDensity(const SolveOptions& opt, double scale, double totalMass);

/// Groups of consecutive sorted cells (the walk's unit of work) with the bounding box of their centres: runs of at
/// most groupSize cells, cut where tree/groups_k.h's rule says (the CUDA backend cuts the same runs).
struct Groups {
  std::vector<std::uint32_t> begin, count;
  std::vector<double> lo, hi;  ///< 3 per group
  std::size_t size() const { return begin.size(); }
};
Groups makeGroups(const SortedCells& cells, const std::vector<std::uint64_t>& sortedKeys, int groupSize);

/// The largest half-extent of the groups' boxes per axis (0 without groups).
void groupHalfWidths(const Groups& groups, double out[3]);

}  // namespace amrgrav
