/// \file moments.cpp
/// \brief Bottom-up multipole moments (double precision) and the per-node MAC radius.
#include "core/thread_pool.h"
#include "physics/moments_k.h"
#include "tree/tree.h"

namespace amrgrav {

// The rules are physics/moments_k.h's, shared with cuda/kernel_moments.cu; this is the host's loop over them.
void computeMoments(const SortedCells& c, const SolveOptions& opt, Octree& t) {
  const std::size_t m = t.nodeCount();
  const bool signedSources = opt.signedSources();
  const bool bonsai = opt.mac == MacKind::Bonsai;
  t.mass.assign(m, 0.0);
  t.com.assign(3 * m, 0.0);
  t.quad.assign(6 * m, 0.0);
  t.extentLo.assign(3 * m, 0.0);
  t.extentHi.assign(3 * m, 0.0);
  t.macRadius.assign(m, 0.0);
  t.dipole.assign(signedSources ? 3 * m : 0, 0.0);
  std::vector<double> absMass(signedSources ? m : 0, 0.0);  // sum |m|: a signed node is empty only when it is 0
  // Children always follow their parent, so a reverse sweep sees every child before its parent.
  for (std::size_t ii = m; ii-- > 0;) {
    // first pass: mass, weight (sum |m| for signed sources), first moments, extent box
    NodeSums sums = emptyNodeSums();
    if (t.isLeaf(ii)) {
      const std::uint32_t b = t.cellBegin[ii], e = b + t.cellCount[ii];
      for (std::uint32_t j = b; j < e; ++j)
        addCellToSums(sums, c.x[j], c.y[j], c.z[j], c.mass[j], c.size[j], signedSources);
    } else {
      const std::uint32_t b = t.childBegin[ii], e = b + t.childCount[ii];
      for (std::uint32_t k = b; k < e; ++k)
        addChildToSums(sums, t.mass[k], signedSources ? absMass[k] : 0.0, &t.com[3 * k], &t.extentLo[3 * k],
                       &t.extentHi[3 * k], signedSources);
    }
    const double W = nodeWeight(sums, signedSources);
    // the MAC's length and centre, then the expansion centre
    double l, ctr[3], cm[3];
    macFrame(bonsai, sums, t.side(ii), &t.centre[3 * ii], l, ctr);
    expansionCentre(sums, signedSources, ctr, &t.centre[3 * ii], cm);
    // second pass: quadrupole (and dipole) about the expansion centre
    double* q = &t.quad[6 * ii];
    double* D = signedSources ? &t.dipole[3 * ii] : nullptr;
    if (t.isLeaf(ii)) {
      const std::uint32_t b = t.cellBegin[ii], e = b + t.cellCount[ii];
      for (std::uint32_t j = b; j < e; ++j) {
        const double p[3] = {c.x[j], c.y[j], c.z[j]};
        double d[3];
        offsetFrom(p, cm, d);
        addQuadrupole(q, c.mass[j], d[0], d[1], d[2]);
        if (D) addCellDipole(D, c.mass[j], d);
      }
    } else {
      const std::uint32_t b = t.childBegin[ii], e = b + t.childCount[ii];
      for (std::uint32_t k = b; k < e; ++k) {  // parallel-axis theorem (with the child's dipole when signed)
        double s[3];
        offsetFrom(&t.com[3 * k], cm, s);
        addChildQuadrupole(q, &t.quad[6 * k], t.mass[k], s);
        if (D) {
          const double* Dk = &t.dipole[3 * k];
          addDipoleShift(q, Dk, s, dipoleDot(Dk, s));
          addChildDipole(D, Dk, t.mass[k], s);
        }
      }
    }
    t.mass[ii] = sums.M;
    if (signedSources) absMass[ii] = W;
    for (int d = 0; d < 3; ++d) {
      t.com[3 * ii + d] = cm[d];
      t.extentLo[3 * ii + d] = sums.lo[d];
      t.extentHi[3 * ii + d] = sums.hi[d];
    }
    t.macRadius[ii] = nodeMacRadius(l, opt.theta, sums.M, W, signedSources, D, cm, ctr);
  }
}

ContrastDensity contrastDensity(const SolveOptions& opt, double scale, double totalMass) {
  double volume = 1, volumeScaled = 1;
  for (int d = 0; d < 3; ++d) {
    volume *= opt.boxHi[d] - opt.boxLo[d];
    volumeScaled *= (opt.boxHi[d] - opt.boxLo[d]) * scale;
  }
  return ContrastDensity{totalMass / volume, totalMass / volumeScaled};  // sizes scaled, masses not
}

double applyDensityContrast(SortedCells& c, const SolveOptions& opt, double totalMass, int threads) {
  if (!(opt.fullyPeriodic() && opt.densityContrast)) return 0.0;
  const ContrastDensity cd = contrastDensity(opt, c.scale, totalMass);
  const double rho = cd.rhoScaled;
  // physics/moments_k.h, as kernel_moments.cu densityContrastKernel on the device; each cell its own: any threads
  parallelFor(c.mass.size(), std::size_t(1) << 16, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t j = b; j < e; ++j) c.mass[j] = contrastMass(c.mass[j], rho, c.size[j]);
  });
  return cd.rho;
}

}  // namespace amrgrav
