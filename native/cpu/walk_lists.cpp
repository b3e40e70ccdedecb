/// \file walk_lists.cpp
/// \brief The CPU walk's lists (see walk_lists.h). Built with -ffp-contract=off: the MAC, the image test and the
/// expansion choice round here exactly as on the device.
#include "cpu/walk_lists.h"

#include "ewald/expansion_k.h"
#include "physics/image_k.h"
#include "physics/interact_k.h"
#include "physics/mac_k.h"
#include "physics/moments_k.h"

namespace amrgrav {
namespace {

/// The warp vote (WalkKind::Vote): every cell of the group tests the node (centre of mass com) against its own centre.
bool everyCellAccepts(const SourceTree& t, const double* com, std::uint32_t i, const SortedCells& c, std::uint32_t b,
                      std::uint32_t n) {
  for (std::uint32_t j = b; j < b + n; ++j) {
    const double p[3] = {c.x[j], c.y[j], c.z[j]};
    if (!macAccepts(com[0], com[1], com[2], t.macRadius[i], p, p)) return false;
  }
  return true;
}

/// Appends node i's dipole (3 values) where the tree has dipoles (signed sources; about a centre of mass it is 0).
inline void pushDipole(const SourceTree& t, std::uint32_t i, std::vector<double>& out) {
  if (t.dipole) out.insert(out.end(), t.dipole + 3 * i, t.dipole + 3 * i + 3);
}

}  // namespace

template <bool Periodic>
void buildLists(const SourceTree& t, const SortedCells& c, const Groups& g, std::size_t gi, bool vote, bool halfUpper,
                bool hoist, WalkLists& L) {
  const double* glo = &g.lo[3 * gi];
  const double* ghi = &g.hi[3 * gi];
  L.clear();
  L.stack.clear();
  L.stackTag.clear();
  L.stack.push_back(0);
  L.stackTag.push_back(0);
  while (!L.stack.empty()) {
    const std::uint32_t i = L.stack.back();
    const unsigned tag = L.stackTag.back();
    L.stack.pop_back();
    L.stackTag.pop_back();
    if (nodeIsEmpty(t.macRadius[i])) continue;  // no mass at all (physics/moments_k.h): nothing to add
    double com[3] = {t.com[3 * i], t.com[3 * i + 1], t.com[3 * i + 2]};
    int image[3] = {0, 0, 0};
    // periodic: the node's image nearest the group, or must it be opened (its images too close, off the table)?
    // Below a hoisted node: the image of that node, no test (its correction is taken).
    bool usable = true, hoistable = false;
    if (Periodic) {
      const EwaldTableView& v = L.ewald->view;
      if (tag) {
        for (int d = 0; d < 3; ++d) com[d] = taggedImage(com[d], tag, d, v.period[d]);
      } else {
        usable = periodicNodeImage(v, glo, ghi, &t.com[3 * i], t.macRadius[i], com, image, &hoistable);
      }
    }
    // what the box accepts every cell accepts (each cell is in the box), so the vote only revisits box rejections
    if (usable && (macAccepts(com[0], com[1], com[2], t.macRadius[i], glo, ghi) ||
                   (vote && everyCellAccepts(t, com, i, c, g.begin[gi], g.count[gi])))) {
      L.nx.push_back(com[0]); L.ny.push_back(com[1]); L.nz.push_back(com[2]);
      L.nm.push_back(t.mass[i]);
      if (Periodic) {
        L.ns.push_back(t.secondMoment[i]);
        L.nCorrect.push_back(tag ? 0 : 1);
        pushDipole(t, i, L.nd);
      }
      double h[6];
      const double* q = &t.quad[6 * i];
      if (halfUpper) {
        halfUpperQuadrupole(q, h);
        q = h;
      }
      L.q0.push_back(q[0]); L.q1.push_back(q[1]); L.q2.push_back(q[2]);
      L.q3.push_back(q[3]); L.q4.push_back(q[4]); L.q5.push_back(q[5]);
      continue;
    }
    unsigned childTag = tag;
    if (Periodic && hoist && !tag && hoistable) {
      childTag = hoistedImageTag(image);
      if (childTag) {  // this node takes its subtree's correction
        L.hx.push_back(com[0]); L.hy.push_back(com[1]); L.hz.push_back(com[2]);
        L.hm.push_back(t.mass[i]);
        L.hs.push_back(t.secondMoment[i]);
        L.hq.insert(L.hq.end(), &t.quad[6 * i], &t.quad[6 * i] + 6);
        pushDipole(t, i, L.hd);
      }
    }
    if (t.isLeaf(i)) {
      const std::uint32_t b = t.cellBegin[i], e = b + t.cellCount[i];
      if (Periodic && childTag) {
        // taggedImage per cell: x + k P, with k P (exact) made once per axis
        const EwaldTableView& v = L.ewald->view;
        double shift[3];
        for (int d = 0; d < 3; ++d) shift[d] = taggedImage(0.0, childTag, d, v.period[d]);
        const std::size_t o = L.cx.size(), n = e - b;
        L.cx.resize(o + n);
        L.cy.resize(o + n);
        L.cz.resize(o + n);
        double *px = L.cx.data() + o, *py = L.cy.data() + o, *pz = L.cz.data() + o;
        for (std::size_t j = 0; j < n; ++j) {
          px[j] = t.x[b + j] + shift[0];
          py[j] = t.y[b + j] + shift[1];
          pz[j] = t.z[b + j] + shift[2];
        }
      } else {
        L.cx.insert(L.cx.end(), t.x + b, t.x + e);
        L.cy.insert(L.cy.end(), t.y + b, t.y + e);
        L.cz.insert(L.cz.end(), t.z + b, t.z + e);
      }
      L.cm.insert(L.cm.end(), t.cellMass + b, t.cellMass + e);
      if (Periodic) L.cCorrect.insert(L.cCorrect.end(), e - b, childTag ? 0 : 1);
    } else {
      // push in reverse so children are visited in key order
      for (int k = int(t.childCount[i]) - 1; k >= 0; --k) {
        L.stack.push_back(t.childBegin[i] + std::uint32_t(k));
        L.stackTag.push_back(std::uint8_t(childTag));
      }
    }
  }
}


template void buildLists<false>(const SourceTree&, const SortedCells&, const Groups&, std::size_t, bool, bool, bool,
                                WalkLists&);
template void buildLists<true>(const SourceTree&, const SortedCells&, const Groups&, std::size_t, bool, bool, bool,
                               WalkLists&);

bool groupExpands(const EwaldTableView& v, const Groups& g, std::size_t gi) {
  return ewaldGroupExpands(v, &g.lo[3 * gi], &g.hi[3 * gi]);
}

}  // namespace amrgrav
