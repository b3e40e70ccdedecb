/// \file particle_tree.cpp
/// \brief The particles' checks and source tree (particle_tree.h). Built with the core's flags (no contraction):
/// the moments, MAC radii and softening ranges decide the interaction lists, on both backends.
#include "tree/particle_tree.h"

#include <algorithm>
#include <cmath>

#include "core/validate.h"
#include "ewald/walk_setup.h"
#include "physics/softening_k.h"

namespace amrgrav {
namespace {

Status badParticle(std::size_t i, const std::string& what, double v) {
  return Status::error(ErrorCode::InvalidInput,
                       "particle " + std::to_string(i) + ": " + what + " (got " + exactNumber(v) + ")");
}

}  // namespace

Status validateParticles(const ParticlesView& p, const SolveOptions& opt) {
  if (p.n == 0) return Status::success();
  if (opt.softening != SofteningKernel::Spline && opt.softening != SofteningKernel::Plummer)
    return Status::error(ErrorCode::InvalidOption, "softening must be 'spline' or 'plummer' (got " +
                                                       std::to_string(int(opt.softening)) + ")");
  if (opt.anyPeriodic())
    return Status::error(ErrorCode::InvalidOption,
                         "particles with periodic boundaries are not supported yet (issue #18): the softened walk has "
                         "no Ewald correction; pass the particles in an isolated box");
  if (!p.x || !p.y || !p.z || !p.mass)
    return Status::error(ErrorCode::InvalidInput, "particles: x, y, z and mass are needed for each of the " +
                                                      std::to_string(p.n) + " particles");
  if (p.n >= 0xffffffffull)
    return Status::error(ErrorCode::InvalidInput, "particles: at most 2^32 - 2 per solve (got " +
                                                      std::to_string(p.n) + ")");
  if (!p.softening && !(std::isfinite(p.softeningValue) && p.softeningValue > 0.0))
    return Status::error(ErrorCode::InvalidInput, "particles: the softening length must be finite and positive "
                                                  "(got " + exactNumber(p.softeningValue) + " cm for every particle)");
  static const char* axis[3] = {"x", "y", "z"};
  double total = 0, epsMin = INFINITY, lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (std::size_t i = 0; i < p.n; ++i) {
    const double v[3] = {p.x[i], p.y[i], p.z[i]};
    for (int d = 0; d < 3; ++d) {
      if (!std::isfinite(v[d])) return badParticle(i, std::string(axis[d]) + " is not finite", v[d]);
      if (opt.hasBox && (v[d] < opt.boxLo[d] || v[d] > opt.boxHi[d]))
        return badParticle(i, std::string(axis[d]) + " is outside the box [" + exactNumber(opt.boxLo[d]) + ", " +
                                  exactNumber(opt.boxHi[d]) + "]", v[d]);
      lo[d] = std::min(lo[d], v[d]);
      hi[d] = std::max(hi[d], v[d]);
    }
    const double m = p.mass[i];
    if (!std::isfinite(m)) return badParticle(i, "mass is not finite", m);
    if (m < 0.0) return badParticle(i, "mass is negative", m);
    const double eps = p.softeningOf(i);
    if (!(std::isfinite(eps) && eps > 0.0))
      return badParticle(i, "softening length must be finite and positive (cm)", eps);
    total += m;
    epsMin = std::min(epsMin, eps);
  }
  double side = 0;
  for (int d = 0; d < 3; ++d) side = std::max(side, opt.hasBox ? opt.boxHi[d] - opt.boxLo[d] : hi[d] - lo[d]);
  // the softened kernels are bounded by m / eps: the smallest softening plays the smallest cell's part
  return checkMassRange(total, epsMin, side > 0 ? side : epsMin, opt);
}

Status buildParticleTree(const ParticlesView& p, const SolveOptions& opt, double scale, ParticleTree& out) {
  out = ParticleTree{};
  const std::size_t n = p.n;
  // the root cube: chooseRootCube with sizes 0 (the box, else the bounding cube of the positions; a single
  // particle or coincident ones: side 1, whatever the units, as for a single point mass among cells)
  const std::vector<double> zeros(n, 0.0);
  CellsView asCells;
  asCells.x = p.x;
  asCells.y = p.y;
  asCells.z = p.z;
  asCells.mass = p.mass;
  asCells.size = zeros.data();
  asCells.n = n;
  RootCube root = chooseRootCube(asCells, opt);
  // the cells' key sort, coincident particles allowed (their softened pair is finite); root scaled in place
  AG_TRY(sortCellsByKey(asCells, root, out.sorted, out.keys, scale, true));
  const SortedCells& s = out.sorted;
  out.eps.resize(n);
  for (std::size_t i = 0; i < n; ++i) out.eps[i] = p.softeningOf(s.order[i]) * s.scale;
  out.root = root;

  AG_TRY(buildOctree(out.keys, root, opt.leafSize, out.tree));
  computeMoments(s, opt, out.tree);  // sizes 0: extent boxes are the positions' (the Bonsai MAC's box)
  out.secondMoment = nodeSecondMoments(s, out.tree);
  // each node's softening range and source extent (physics/softening_k.h), bottom-up (children follow their
  // parent), as cuda/kernel_particles.cu nodeEpsKernel
  const Octree& t = out.tree;
  const std::size_t m = t.nodeCount();
  out.epsMin.assign(m, INFINITY);
  out.epsMax.assign(m, 0.0);
  out.extent.assign(m, 0.0);
  for (std::size_t i = m; i-- > 0;) {
    double lo = INFINITY, hi = 0, b = 0;
    const double* com = &t.com[3 * i];
    if (t.isLeaf(i)) {
      double d2 = 0;
      for (std::uint32_t j = t.cellBegin[i]; j < t.cellBegin[i] + t.cellCount[i]; ++j) {
        lo = std::min(lo, out.eps[j]);
        hi = std::max(hi, out.eps[j]);
        d2 = stdMax(d2, extentDistance2(s.x[j], s.y[j], s.z[j], com));
      }
      b = leafExtent(d2);
    } else {
      for (std::uint32_t c = t.childBegin[i]; c < t.childBegin[i] + t.childCount[i]; ++c) {
        lo = std::min(lo, out.epsMin[c]);
        hi = std::max(hi, out.epsMax[c]);
        b = stdMax(b, childExtent(&t.com[3 * c], out.extent[c], com));
      }
    }
    out.epsMin[i] = lo;
    out.epsMax[i] = hi;
    out.extent[i] = b;
  }
  // the particles as targets: the cells' group rule over their keys, and each group's softening range
  out.groups = makeGroups(s, out.keys, opt.pointGroupSize());
  const std::size_t ng = out.groups.size();
  out.groupEpsMin.assign(ng, INFINITY);
  out.groupEpsMax.assign(ng, 0.0);
  for (std::size_t g = 0; g < ng; ++g)
    for (std::uint32_t j = out.groups.begin[g]; j < out.groups.begin[g] + out.groups.count[g]; ++j) {
      out.groupEpsMin[g] = std::min(out.groupEpsMin[g], out.eps[j]);
      out.groupEpsMax[g] = std::max(out.groupEpsMax[g], out.eps[j]);
    }
  return Status::success();
}

SourceTree ParticleTree::source() const {
  SourceTree s = sourceTreeOf(tree, sorted);
  s.secondMoment = secondMoment.empty() ? nullptr : secondMoment.data();
  s.nodeEpsMin = epsMin.empty() ? nullptr : epsMin.data();
  s.nodeEpsMax = epsMax.empty() ? nullptr : epsMax.data();
  s.nodeExtent = extent.empty() ? nullptr : extent.data();
  s.sourceEps = eps.empty() ? nullptr : eps.data();
  return s;
}

}  // namespace amrgrav
