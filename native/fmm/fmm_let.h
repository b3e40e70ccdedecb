/// \file fmm_let.h
/// \brief The FMM's locally essential trees (a distributed FMM, docs/fmm-design.md section 8). Each rank builds its
/// FMM tree over its own cells (fmm_tree.h); for every other rank it sends the part of that tree the rank needs, and
/// each rank adds the received parts' field to its own cells with a one-sided traversal that applies the
/// one-process pair test (physics/fmm_mac_k.h) to every pair it forms: M2L into its own nodes' local expansions,
/// P2P from the LET's cells. Nodes travel childless only when physics/fmm_let_k.h proves that the receiver never
/// needs to open them; opened leaves travel as cells. No MPI here (mpi/distributed_fmm.h sends the words).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "fmm/evaluate.h"
#include "fmm/fmm_tree.h"
#include "let/let.h"

namespace amrgrav {
namespace fmm {

/// What a receiving rank tells the others about its tree's leaves (the bounds of physics/fmm_let_k.h), one fixed
/// array of doubles for an allgather. No leaves: lo > hi, and no LET is sent to it.
struct FmmReach {
  double lo[3], hi[3];       ///< the box of the leaves' expansion centres
  double radius = 0;         ///< the largest leaf radius
  double critical = 0;       ///< the largest leaf critical radius
  double absMass = 0;        ///< the largest leaf |mass|
  double lowBound = 0;       ///< the smallest leaf potential lower bound (isolated) or the scale of |phi| (periodic)
  double norms[8] = {};      ///< periodic: the largest leaf multipole norm of each order 0..p
  double leaves = 0;
};
constexpr int kFmmReachDoubles = int(sizeof(FmmReach) / sizeof(double));

FmmReach reachOf(const FmmTree& tree);

/// Shift numbering and vectors as interaction_lists.h (kNoShift alone without `period`).
struct FmmLetSelection {
  enum Kind : std::uint8_t { Accepted = 0, OpenedLeaf = 1, Opened = 2 };
  std::vector<std::uint32_t> node;  ///< local node index, in the LET's breadth-first order
  std::vector<std::uint8_t> kind;
  std::size_t cellCount = 0;
};

/// The nodes of `tree` the rank of `reach` needs: from the root, a node whose every image (`period`: the box's sides
/// in scaled lengths, null for an isolated box) passes fmmBoxAccepts / fmmSignedBoxAccepts travels childless, a leaf
/// that does not travels with its cells, an internal node with its children.
void selectFmmLet(const FmmTree& tree, const FmmReach& reach, double tolerance, const double* period,
                  FmmLetSelection& out);

/// Bytes of a packed FMM LET (a multiple of 8).
std::size_t packedFmmLetBytes(std::size_t nodes, std::size_t cells, int order, bool dipoles);

/// The selected nodes (links renumbered to the LET's order) with their centres, radii, MAC quantities, norms
/// (periodic) and multipoles, and the opened leaves' cells, into one buffer (magic kFmmLetMagic).
void packFmmLet(const FmmTree& tree, const SortedCells& cells, const FmmLetSelection& sel, PackedLet& out);

/// A packed FMM LET viewed in place.
struct FmmLetView {
  std::size_t nodes = 0, cells = 0;
  const double *centre = nullptr, *radius = nullptr, *critical = nullptr, *absMass = nullptr, *lowBound = nullptr,
               *norms = nullptr, *M = nullptr, *x = nullptr, *y = nullptr, *z = nullptr, *mass = nullptr;
  const std::uint32_t *cellBegin = nullptr, *cellCount = nullptr, *childBegin = nullptr;
  const std::uint8_t *childCount = nullptr, *kind = nullptr;
};

/// Views `words`; an error unless it is a well-formed FMM LET of this tree's order and kind (dipoles).
Status viewFmmLet(const std::uint64_t* words, std::size_t bytes, const FmmTree& tree, FmmLetView& out);

/// The one-sided traversal of `tree` against the LET (see the file comment) into `lists` (its pointers into `let`);
/// `period` as selectFmmLet. An Internal error if a childless node would have to be opened (the LET rule broken).
Status fmmLetLists(const FmmTree& tree, const FmmLetView& let, double tolerance, const double* period, int threads,
                   ExternalSources& lists);

}  // namespace fmm
}  // namespace amrgrav
