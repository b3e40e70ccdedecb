/// \file particle_tree.h
/// \brief The particles of a system solve (core/system.h) as a source tree and as walk targets, built on the host
/// by the same code for both backends (the CUDA backend uploads it: its interaction lists are then the CPU's).
/// The tree has its own root cube (the box when given, else the particles' bounding cube) but the cells' length
/// scale, so that cells and particles meet in the same scaled units; its moments are the cells' (tree/moments.cpp,
/// particles as cells of size 0) plus what softening needs: each node's range of softening lengths and its second
/// moment (the Plummer expansion's trace term, physics/softening_k.h) and its source extent (the largest distance of
/// its particles from its centre of mass, bounded from above: the spline kernel's acceptance rule).
#pragma once
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/system.h"
#include "tree/source_tree.h"
#include "tree/tree.h"

namespace amrgrav {

struct ParticleTree {
  RootCube root;                       ///< scaled
  SortedCells sorted;                  ///< scaled positions, masses, sizes 0, order: sorted -> caller's index
  std::vector<double> eps;             ///< softening per sorted particle, scaled
  std::vector<std::uint64_t> keys;     ///< sorted Morton keys on `root`
  Octree tree;                         ///< topology and moments (opt.mac, theta, order)
  std::vector<double> secondMoment;    ///< per node sum m |x - com|^2
  std::vector<double> epsMin, epsMax;  ///< per node, over its particles (scaled)
  std::vector<double> extent;          ///< per node, its source extent b (physics/softening_k.h; scaled)
  Groups groups;                       ///< the particles as walk targets: tree/groups_k.h's groups, with boxes
  std::vector<double> groupEpsMin, groupEpsMax;  ///< per group (scaled)

  /// The tree as the walks read it (valid while this lives): with second moments, softening ranges and extents.
  SourceTree source() const;
};

/// InvalidInput naming the first bad particle: coordinates and masses finite, mass >= 0, softening finite and > 0,
/// inside the box when the solve has one (hasBox), and supported options (isolated boundaries).
Status validateParticles(const ParticlesView& p, const SolveOptions& opt);

/// Sorts the particles on their own root cube, scales lengths by `scale` (the cells' SortedCells::scale, or
/// lengthScaleFor of the particles' root cube when `scale` is 0), builds the octree (opt.leafSize), its moments
/// and softening ranges, and the target groups. Validate first.
Status buildParticleTree(const ParticlesView& p, const SolveOptions& opt, double scale, ParticleTree& out);

}  // namespace amrgrav
