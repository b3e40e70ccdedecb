/// \file walk_lists.h
/// \brief The CPU walk's interaction lists and the rules that fill them (internal to cpu/): for each group, which
/// nodes it accepts (physics/mac_k.h), which it opens, through which periodic image it sees them and which take
/// their subtree's Ewald correction (physics/image_k.h). Compiled on their own (cpu/walk_lists.cpp) without
/// floating-point contraction, like every rule of the host (CMakeLists.txt), so that the lists are the CUDA walk's;
/// cpu/cpu_walk.cpp evaluates them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpu/ewald_lattice.h"
#include "ewald/walk_setup.h"
#include "tree/source_tree.h"
#include "tree/tree.h"

namespace amrgrav {

/// Per-thread interaction lists, as structs of arrays.
struct WalkLists {
  std::vector<std::uint32_t> stack;
  std::vector<std::uint8_t> stackTag;     // periodic: the image tag of each stack entry (physics/image_k.h)
  std::vector<double> nx, ny, nz, nm, q0, q1, q2, q3, q4, q5;  // accepted nodes
  std::vector<double> cx, cy, cz, cm;                          // cells of opened leaves
  std::vector<double> ns;                 // accepted nodes' second moments (periodic walks only)
  std::vector<double> nd;                 // accepted nodes' dipoles, 3 each (signed sources only)
  // periodic walks: does accepted node / cell k add its own correction? (not below a hoisted node)
  std::vector<std::uint8_t> nCorrect, cCorrect;
  // periodic walks: opened nodes that take the correction of their whole subtree (hoisted), plain quadrupoles
  std::vector<double> hx, hy, hz, hm, hs, hq, hd;
  const EwaldWalk* ewald = nullptr;       // periodic walks: table and moments; null when isolated
  const EwaldCellLattice* lattice = nullptr;  // periodic walks: C at lattice separations (cpu/ewald_lattice.h)
  const EwaldNodeLattice* nodeLattice = nullptr;  // periodic walks: node corrections at lattice separations
  bool latticeTargets = false;            // the current group's cells all lie on `lattice`
  bool expandEwald = true;                // periodic walks: small groups expand the correction (SolveOptions)
  // the evaluation's scratch (cpu/cpu_walk.cpp): nodes on the node lattice, their weights and the cells' offsets
  mutable std::vector<std::uint32_t> latNodes;
  mutable std::vector<double> latW;
  mutable std::vector<std::int32_t> latCode;
  void clear() {
    for (auto* v : {&nx, &ny, &nz, &nm, &q0, &q1, &q2, &q3, &q4, &q5, &cx, &cy, &cz, &cm, &ns, &nd, &hx, &hy, &hz, &hm,
                    &hs, &hq, &hd})
      v->clear();
    nCorrect.clear();
    cCorrect.clear();
  }
};

/// Interaction lists of group gi (cells of `c`) against the sources of `t`; accepted nodes carry their quadrupole
/// as is (forces) or, for the potential-only kernel, as half-upper coefficients (physics/interact_k.h).
/// Periodic: a node is seen through its image nearest the group (the MAC uses that distance), and a node whose
/// other images are too close, or whose separations leave the table (physics/image_k.h periodicNodeImage), is
/// opened whatever the MAC. With `hoist` (an expanding group walking its own tree) the first usable node on each
/// path takes the correction of its subtree, and its subtree is seen through its image (ewald/expansion_k.h).
template <bool Periodic>
void buildLists(const SourceTree& t, const SortedCells& c, const Groups& g, std::size_t gi, bool vote, bool halfUpper,
                bool hoist, WalkLists& L);
extern template void buildLists<false>(const SourceTree&, const SortedCells&, const Groups&, std::size_t, bool, bool,
                                       bool, WalkLists&);
extern template void buildLists<true>(const SourceTree&, const SortedCells&, const Groups&, std::size_t, bool, bool,
                                      bool, WalkLists&);

/// Does group gi take its Ewald correction as one expansion about its centre (physics/image_k.h
/// ewaldGroupExpands)?
bool groupExpands(const EwaldTableView& v, const Groups& g, std::size_t gi);

}  // namespace amrgrav
