/// \file soft_lists.h
/// \brief The softened walk's interaction lists (internal to cpu/): for a group of targets with softening range
/// [groupEpsMin, groupEpsMax], the nodes of a source tree that the box MAC (physics/mac_k.h) and the softening rule
/// (physics/softening_k.h softeningAccepts) both accept, and the sources of the leaves opened. Compiled without
/// floating-point contraction like every rule of the host (CMakeLists.txt), so the lists are the CUDA walk's.
#pragma once
#include <cstdint>
#include <vector>

#include "core/types.h"
#include "tree/source_tree.h"

namespace amrgrav {

/// Per-thread lists, as structs of arrays.
struct SoftLists {
  std::vector<std::uint32_t> stack;
  std::vector<double> nx, ny, nz, nm, q0, q1, q2, q3, q4, q5;  ///< accepted nodes, plain quadrupoles
  std::vector<double> ns, ne;  ///< accepted nodes' second moments and largest softening (Plummer only)
  std::vector<double> cx, cy, cz, cm, ce;  ///< sources of opened leaves and their softening (0: a cell)
  void clear() {
    for (auto* v : {&nx, &ny, &nz, &nm, &q0, &q1, &q2, &q3, &q4, &q5, &ns, &ne, &cx, &cy, &cz, &cm, &ce}) v->clear();
  }
};

/// The lists of a group whose targets lie in [lo, hi] with softenings in [epsMin, epsMax] (0, 0 for cells and
/// probes) against `t` (its nodeEpsMin/Max and sourceEps null: unsoftened cells). Always the box MAC (the vote
/// does not apply to softened walks). With `plummer` the nodes' second moments are needed (t.secondMoment).
void buildSoftLists(const SourceTree& t, const double* lo, const double* hi, double epsMin, double epsMax,
                    SofteningKernel kernel, SoftLists& L);

}  // namespace amrgrav
