/// \file walk_lists.h
/// \brief The CPU walk's interaction lists and the rules that fill them (internal to cpu/): for each group, which
/// nodes it accepts (physics/mac_k.h), which it opens, through which periodic image it sees them and which take
/// their subtree's Ewald correction (physics/image_k.h). Compiled on their own (cpu/walk_lists.cpp) without
/// floating-point contraction, like every rule of the host (CMakeLists.txt), so that the lists are the CUDA walk's;
/// cpu/cpu_walk.cpp evaluates them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "cpu/ewald_lattice.h"
#include "ewald/walk_setup.h"
#include "tree/source_tree.h"
#include "tree/tree.h"

namespace amrgrav {

/// An entry of the list builder's stack: a node, its image tag (periodic: physics/image_k.h) and its tests, made
/// when it was pushed (cpu/walk_lists.cpp): its com at the image the group sees, the periods added (image) and
/// whether it is empty, usable there, hoistable and accepted by the group's box.
struct ListEntry {
  static constexpr std::uint8_t kEmpty = 1, kUsable = 2, kHoistable = 4, kAccepts = 8;
  double com[3];
  int image[3];
  std::uint32_t node;
  std::uint8_t tag, state;
};

/// A vector's allocator that leaves new elements uninitialised on resize (the lists are resized, then written).
template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};
template <class T>
using ListVector = std::vector<T, UninitAllocator<T>>;

/// An accepted node (its com at the image the group sees; tag: below a hoisted node) or an opened leaf (node ~0u
/// marks none: `tag` then its cells' image tag), in the order the walk met them; the lists' arrays are filled from
/// these after the walk, in one tight pass each.
struct ListHit {
  double com[3];
  std::uint32_t node;
  std::uint32_t tag;
};

/// Per-thread interaction lists, as structs of arrays.
struct WalkLists {
  ListVector<ListEntry> entries;          // the list builder's stack
  ListVector<ListHit> accepted, leaves;  // the list builder's record (cpu/walk_lists.cpp)
  ListVector<double> nx, ny, nz, nm, q0, q1, q2, q3, q4, q5;  // accepted nodes
  ListVector<double> cx, cy, cz, cm;                          // cells of opened leaves
  ListVector<std::uint32_t> cSource;      // with sourceLattice: each of those cells' index in the source tree
  ListVector<double> ns;                  // accepted nodes' second moments (periodic walks only)
  ListVector<double> nd;                  // accepted nodes' dipoles, 3 each (signed sources only)
  // periodic walks: does accepted node / cell k add its own correction? (not below a hoisted node)
  ListVector<std::uint8_t> nCorrect, cCorrect;
  // periodic walks: opened nodes that take the correction of their whole subtree (hoisted), plain quadrupoles
  ListVector<double> hx, hy, hz, hm, hs, hq, hd;
  const EwaldWalk* ewald = nullptr;       // periodic walks: table and moments; null when isolated
  const EwaldCellLattice* lattice = nullptr;  // periodic walks: C at lattice separations (cpu/ewald_lattice.h)
  const EwaldNodeLattice* nodeLattice = nullptr;  // periodic walks: node corrections at lattice separations
  bool latticeTargets = false;            // the current group's cells all lie on `lattice`
  /// periodic walks with lattice rows: each source cell's lattice indices (3 per cell of the source tree),
  /// kOffLattice for a cell off the lattice
  const std::int32_t* sourceLattice = nullptr;
  bool expandEwald = true;                // periodic walks: small groups expand the correction (SolveOptions)
  // the evaluation's scratch (cpu/lattice_eval.h): nodes on the node lattice, their weights per octant (split 8 + 2
  // as the lattice's coefficients) and each pair's lattice point and weights
  mutable std::vector<std::uint32_t> latNodes;
  mutable std::vector<LatticeCoef8> latW8;
  mutable std::vector<double> latW2;
  mutable std::vector<LatticeCoef8> latW2x4;  ///< latW2's pairs four times over (a row's four cells)
  mutable std::vector<LatticeCoef8> latWF;  ///< accelerations: four outputs' weights per node octant, 3 lines each
  mutable std::vector<std::int32_t> latCode;
  void clear() {
    for (auto* v : {&nx, &ny, &nz, &nm, &q0, &q1, &q2, &q3, &q4, &q5, &cx, &cy, &cz, &cm, &ns, &nd, &hx, &hy, &hz, &hm,
                    &hs, &hq, &hd})
      v->clear();
    nCorrect.clear();
    cCorrect.clear();
    cSource.clear();
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
