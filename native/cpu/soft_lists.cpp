/// \file soft_lists.cpp
/// \brief The softened walk's lists (soft_lists.h). Built with -ffp-contract=off: the MAC and the softening rule
/// round here exactly as on the device.
#include "cpu/soft_lists.h"

#include "physics/mac_k.h"
#include "physics/moments_k.h"
#include "physics/softening_k.h"

namespace amrgrav {

void buildSoftLists(const SourceTree& t, const double* lo, const double* hi, double epsMin, double epsMax,
                    SofteningKernel kernel, SoftLists& L) {
  L.clear();
  L.stack.clear();
  if (t.nodeCount == 0) return;
  const bool plummer = kernel == SofteningKernel::Plummer;
  L.stack.push_back(0);
  while (!L.stack.empty()) {
    const std::uint32_t i = L.stack.back();
    L.stack.pop_back();
    if (nodeIsEmpty(t.macRadius[i])) continue;  // no mass at all
    const double* com = &t.com[3 * i];
    const double nodeMin = t.nodeEpsMin ? t.nodeEpsMin[i] : 0.0, nodeMax = t.nodeEpsMax ? t.nodeEpsMax[i] : 0.0;
    if (macAccepts(com[0], com[1], com[2], t.macRadius[i], lo, hi) &&
        softeningAccepts(kernel, distanceSquaredToBox(com[0], com[1], com[2], lo, hi),
                         t.nodeExtent ? t.nodeExtent[i] : t.macRadius[i], epsMin, epsMax, nodeMin, nodeMax)) {
      L.nx.push_back(com[0]); L.ny.push_back(com[1]); L.nz.push_back(com[2]);
      L.nm.push_back(t.mass[i]);
      const double* q = &t.quad[6 * i];
      L.q0.push_back(q[0]); L.q1.push_back(q[1]); L.q2.push_back(q[2]);
      L.q3.push_back(q[3]); L.q4.push_back(q[4]); L.q5.push_back(q[5]);
      if (plummer) {
        L.ns.push_back(t.secondMoment[i]);
        L.ne.push_back(nodeMax);
      }
      continue;
    }
    if (t.isLeaf(i)) {
      const std::uint32_t b = t.cellBegin[i], e = b + t.cellCount[i];
      L.cx.insert(L.cx.end(), t.x + b, t.x + e);
      L.cy.insert(L.cy.end(), t.y + b, t.y + e);
      L.cz.insert(L.cz.end(), t.z + b, t.z + e);
      L.cm.insert(L.cm.end(), t.cellMass + b, t.cellMass + e);
      if (t.sourceEps) L.ce.insert(L.ce.end(), t.sourceEps + b, t.sourceEps + e);
      else L.ce.insert(L.ce.end(), e - b, 0.0);
    } else {
      for (int k = int(t.childCount[i]) - 1; k >= 0; --k) L.stack.push_back(t.childBegin[i] + std::uint32_t(k));
    }
  }
}

}  // namespace amrgrav
