/// \file tree.h
/// \brief Sparse octree over key-sorted cells, stored as plain arrays (one entry per node).
/// Nodes are in breadth-first order, so the children of a node are contiguous and always follow their parent;
/// moments can then be accumulated by one reverse sweep.
#pragma once
#include <cstdint>
#include <vector>
#include "core/status.h"
#include "core/types.h"

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
  std::vector<double> centre;                       ///< geometric cube centre, 3 per node
  // moments (double: single-precision moments cost up to 1% error in Bonsai's tests)
  std::vector<double> mass;
  std::vector<double> com;       ///< centre of mass, 3 per node
  std::vector<double> quad;      ///< traceless quadrupole about com: xx, xy, xz, yy, yz, zz (6 per node)
  std::vector<double> extentLo, extentHi;  ///< tight box around the cells' extents (3 per node)
  std::vector<double> macRadius; ///< l/theta + delta: accept when dist(com, group box) > macRadius
  int depth = 0;

  std::size_t nodeCount() const { return cellCount.size(); }
  bool isLeaf(std::size_t i) const { return childCount[i] == 0; }
  double side(std::size_t i) const { return root.side / double(1u << level[i]); }
};

/// Choose the root cube: the caller's box when given, else the bounding cube of the cells' extents.
RootCube chooseRootCube(const CellsView& cells, const SolveOptions& opt);

/// The power of two that brings a length `side` near 1 (SortedCells::scale).
double lengthScaleFor(double side);

/// Morton-sort the cells (a stable radix sort, so equal keys keep the caller's order: deterministic), and scale
/// lengths by a power of two (see SortedCells). `root` is rescaled in place to the same units. `scale` 0 means
/// lengthScaleFor(root.side); a distributed solve passes the scale of the global bounds so that every rank's
/// scaled lengths are the same numbers.
Status sortCellsByKey(const CellsView& cells, RootCube& root, SortedCells& out, std::vector<std::uint64_t>& keys,
                      double scale = 0);

/// Build the octree topology over key-sorted cells; a node with more than leafSize cells is split.
Status buildOctree(const std::vector<std::uint64_t>& sortedKeys, const RootCube& root, int leafSize, Octree& tree);

/// Mass, centre of mass, quadrupole, cell-extent box and MAC radius of every node, bottom-up.
void computeMoments(const SortedCells& cells, const SolveOptions& opt, Octree& tree);

/// Groups of consecutive sorted cells (the walk's unit of work) with the bounding box of their centres.
struct Groups {
  std::vector<std::uint32_t> begin, count;
  std::vector<double> lo, hi;  ///< 3 per group
  std::size_t size() const { return begin.size(); }
};
Groups makeGroups(const SortedCells& cells, int groupSize);

/// The largest half-extent of the groups' boxes per axis (0 without groups).
void groupHalfWidths(const Groups& groups, double out[3]);

}  // namespace amrgrav
