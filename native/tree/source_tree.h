/// \file source_tree.h
/// \brief A read-only view of a tree the group walk can take sources from: the local Octree with its sorted
/// cells, or a locally essential tree (LET) received from another rank. Plain pointers and counts, so a GPU walk
/// can read the same layout from device memory.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tree/tree.h"

namespace amrgrav {

/// Nodes in breadth-first order (children contiguous, after their parent; node 0 is the root) and the cells their
/// leaves point into. Lengths are in the solve's scaled units (SortedCells::scale), the same on every rank.
/// A childless node with cellCount 0 stands for a subtree pruned by the sender: the receiver's walk always
/// accepts it (it was accepted for the receiver's whole box of cell centres, hence for every group inside it).
struct SourceTree {
  std::size_t nodeCount = 0;
  const std::uint32_t* cellBegin = nullptr;  ///< first cell of a leaf
  const std::uint32_t* cellCount = nullptr;  ///< cells of a leaf (0 for an internal or pruned node)
  const std::uint32_t* childBegin = nullptr; ///< index of the first child
  const std::uint8_t* childCount = nullptr;  ///< 0 for a leaf or a pruned node
  const double* mass = nullptr;
  const double* com = nullptr;        ///< 3 per node
  const double* quad = nullptr;       ///< 6 per node: traceless quadrupole xx, xy, xz, yy, yz, zz about com
  const double* macRadius = nullptr;  ///< l/theta + delta
  /// Per node sum m |x - com|^2 (the trace the traceless quadrupole drops): the periodic walk's node correction
  /// needs it (ewald/walk_setup.h); null for isolated walks.
  const double* secondMoment = nullptr;
  /// Per node the dipole about com (3 per node; signed sources, whose com is the MAC's centre: tree/moments.cpp);
  /// null when the nodes are centred on their centre of mass (the dipole is then 0).
  const double* dipole = nullptr;
  std::size_t cellTotal = 0;
  const double *x = nullptr, *y = nullptr, *z = nullptr, *cellMass = nullptr;
  /// Softened sources (a particle tree, tree/particle_tree.h): per node the smallest and largest softening of its
  /// sources, per source its softening (scaled). Null: every source is an unsoftened cell (eps 0).
  const double* nodeEpsMin = nullptr;
  const double* nodeEpsMax = nullptr;
  const double* sourceEps = nullptr;
  /// Per node the largest distance of its sources from its centre of mass, bounded from above (physics/softening_k.h
  /// leafExtent, childExtent): the spline kernel's acceptance rule. Null: macRadius bounds it (the cells' tree, LETs).
  const double* nodeExtent = nullptr;

  bool isLeaf(std::size_t i) const { return childCount[i] == 0; }
};

/// A SourceTree that owns its arrays (a received LETs' forest, let/let.h; a GPU rank's host copy of its tree).
/// secondMoment may stay empty: the view then has none (isolated walks).
struct SourceTreeArrays {
  std::vector<std::uint32_t> cellBegin, cellCount, childBegin;
  std::vector<std::uint8_t> childCount;
  std::vector<double> mass, com, quad, macRadius, secondMoment;
  std::vector<double> dipole;  ///< 3 per node; in the view only when hasDipole
  bool hasDipole = false;
  std::vector<double> x, y, z, cellMass;
  /// Softened sources (merged particle LETs, let/let.h): per node the softening range and source extent, per
  /// source its softening; in the view only when hasSoftening (sourceEps then holds one per source).
  std::vector<double> nodeEpsMin, nodeEpsMax, nodeExtent, sourceEps;
  bool hasSoftening = false;

  /// n nodes, the first ones kept; new ones childless, massless, with an infinite MAC radius (a forest's virtual
  /// nodes start so: every walk opens them before it asks the softening rule) and no second moment, dipole,
  /// softening or extent.
  void resizeNodes(std::size_t n) {
    cellBegin.resize(n, 0);
    cellCount.resize(n, 0);
    childBegin.resize(n, 0);
    childCount.resize(n, 0);
    mass.resize(n, 0.0);
    com.resize(3 * n, 0.0);
    quad.resize(6 * n, 0.0);
    macRadius.resize(n, INFINITY);
    secondMoment.resize(n, 0.0);
    dipole.resize(3 * n, 0.0);
    nodeEpsMin.resize(n, 0.0);
    nodeEpsMax.resize(n, 0.0);
    nodeExtent.resize(n, 0.0);
  }

  SourceTree view() const {
    SourceTree s;
    s.nodeCount = cellCount.size();
    s.cellBegin = cellBegin.data();
    s.cellCount = cellCount.data();
    s.childBegin = childBegin.data();
    s.childCount = childCount.data();
    s.mass = mass.data();
    s.com = com.data();
    s.quad = quad.data();
    s.macRadius = macRadius.data();
    s.secondMoment = secondMoment.empty() ? nullptr : secondMoment.data();
    s.dipole = hasDipole ? dipole.data() : nullptr;
    s.cellTotal = x.size();
    s.x = x.data();
    s.y = y.data();
    s.z = z.data();
    s.cellMass = cellMass.data();
    if (hasSoftening) {
      s.nodeEpsMin = nodeEpsMin.data();
      s.nodeEpsMax = nodeEpsMax.data();
      s.nodeExtent = nodeExtent.data();
      s.sourceEps = sourceEps.data();
    }
    return s;
  }
};

/// The local tree as a source: no copy, valid while `tree` and `cells` live.
inline SourceTree sourceTreeOf(const Octree& tree, const SortedCells& cells) {
  SourceTree s;
  s.nodeCount = tree.nodeCount();
  s.cellBegin = tree.cellBegin.data();
  s.cellCount = tree.cellCount.data();
  s.childBegin = tree.childBegin.data();
  s.childCount = tree.childCount.data();
  s.mass = tree.mass.data();
  s.com = tree.com.data();
  s.quad = tree.quad.data();
  s.macRadius = tree.macRadius.data();
  s.dipole = tree.dipole.empty() ? nullptr : tree.dipole.data();
  s.cellTotal = cells.x.size();
  s.x = cells.x.data();
  s.y = cells.y.data();
  s.z = cells.z.data();
  s.cellMass = cells.mass.data();
  return s;
}

}  // namespace amrgrav
