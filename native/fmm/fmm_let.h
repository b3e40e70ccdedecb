/// \file fmm_let.h
/// \brief The FMM's locally essential trees (a distributed FMM, docs/fmm-design.md section 8). Every rank's FMM tree
/// holds the one-process tree's nodes restricted to its cells (fmm/shared_top.h: shared nodes split as one process
/// splits them, their quantities and multipoles completed over the ranks, fmm_tree.h SharedNodes); for every other
/// rank it sends the part of that tree the rank needs, and each rank adds the received parts' field to its own cells
/// by a one-sided traversal that forms exactly the pairs the one-process walk forms (the same pair test,
/// physics/fmm_mac_k.h, and the same choice of the node to open, on the same nodes): M2L into its own nodes' local
/// expansions from the nodes it does not hold (each shared node counted once, from its lowest rank), P2P from the
/// LET's cells of each leaf. A node travels childless only where physics/fmm_let_k.h proves that the receiver never
/// opens it; nodes the receiver shares travel opened. No MPI here (mpi/distributed_fmm.h sends the words).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "fmm/evaluate.h"
#include "fmm/fmm_tree.h"
#include "fmm/shared_top.h"
#include "let/let.h"

namespace amrgrav {
namespace fmm {

/// What a receiving rank tells the others about a set of its tree's nodes (the bounds of physics/fmm_let_k.h), one
/// fixed array of doubles for an allgather. No nodes: lo > hi.
struct FmmReach {
  double lo[3], hi[3];       ///< the box of the nodes' expansion centres
  double radius = 0;         ///< the largest radius
  double critical = 0;       ///< the largest critical radius
  double absMass = 0;        ///< the largest |mass|
  double lowBound = 0;       ///< the smallest potential lower bound (isolated) or the scale of |phi| (periodic)
  double norms[8] = {};      ///< periodic: the largest multipole norm of each order 0..p
  double nodes = 0;
};

/// Radius classes of the receiver's nodes: an eighth of an octave each (class of r: 8 (e + 26) + the eighth of the
/// mantissa, r = f 2^e, clamped), so that a node of radius r_B is tested against every class that may hold a node
/// of radius <= r_B (the nodes a failing pair would open B for). At 64^3 on 3 ranks a quarter octave sent 3.7 / 6.3 /
/// 3.4 MB, an eighth 3.3 / 6.1 / 3.4 MB, a sixteenth 3.3 / 6.0 / 3.4 MB (for twice the reach's 41 KB per rank).
constexpr int kReachClasses = 256;
int reachClassOf(double radius);

/// A receiver's leaves (any radius: a failing pair with a leaf opens the other node) and all its nodes by radius class.
struct FmmReachSet {
  FmmReach leaves;
  FmmReach byRadius[kReachClasses];
};
constexpr int kFmmReachDoubles = int(sizeof(FmmReachSet) / sizeof(double));

FmmReachSet reachOf(const FmmTree& tree);

/// This rank's side of the shared top (fmm/shared_top.h): each node's code and shared index (SharedNodes::index).
struct LetNodes {
  const std::vector<std::uint64_t>* code = nullptr;
  const std::vector<std::int32_t>* sharedIndex = nullptr;
  const SharedTop* top = nullptr;
  int rank = 0;
};

/// Every node's code (shared_top.h nodeCode) from its first cell's key.
void nodeCodes(const FmmTree& tree, const std::vector<std::uint64_t>& sortedKeys, std::vector<std::uint64_t>& out);

/// Shift numbering and vectors as interaction_lists.h (kNoShift alone without `period`).
struct FmmLetSelection {
  enum Kind : std::uint8_t { Accepted = 0, OpenedLeaf = 1, Opened = 2 };
  /// flags: the node is a leaf of the one-process tree; its multipoles are the receiver's M2L source (it holds none
  /// of the node's cells and this rank is the node's lowest).
  enum Flag : std::uint8_t { Leaf = 1, CountsM = 2 };
  std::vector<std::uint32_t> node;  ///< local node index, in the LET's breadth-first order
  std::vector<std::uint8_t> kind, flags;
  std::size_t cellCount = 0;
};

/// The nodes of `tree` the rank `receiver` (its reach) needs: from the root, a node the receiver shares travels
/// opened (a leaf with this rank's cells of it); another node travels childless when every image of it (`period`:
/// the box's sides in scaled lengths, null for an isolated box) passes fmmBoxAccepts / fmmSignedBoxAccepts against
/// the receiver's leaves and, unless it is a leaf, against every radius class up to its own; otherwise a leaf travels
/// with its cells, an internal node with its children.
void selectFmmLet(const FmmTree& tree, const LetNodes& nodes, const FmmReachSet& reach, int receiver,
                  double tolerance, const double* period, FmmLetSelection& out);

/// Bytes of a packed FMM LET (a multiple of 8).
std::size_t packedFmmLetBytes(std::size_t nodes, std::size_t cells, int order, bool dipoles);

/// The selected nodes (links renumbered to the LET's order) with their codes, flags, centres, radii, MAC quantities, norms
/// (periodic) and multipoles, and the opened leaves' cells, into one buffer (magic kFmmLetMagic).
void packFmmLet(const FmmTree& tree, const std::vector<std::uint64_t>& code, const SortedCells& cells,
                const FmmLetSelection& sel, PackedLet& out);

/// A packed FMM LET viewed in place.
struct FmmLetView {
  std::size_t nodes = 0, cells = 0;
  const double *centre = nullptr, *radius = nullptr, *critical = nullptr, *absMass = nullptr, *lowBound = nullptr,
               *norms = nullptr, *M = nullptr, *x = nullptr, *y = nullptr, *z = nullptr, *mass = nullptr;
  const std::uint32_t *cellBegin = nullptr, *cellCount = nullptr, *childBegin = nullptr;
  const std::uint64_t* code = nullptr;
  const std::uint8_t *childCount = nullptr, *kind = nullptr, *flags = nullptr;
};

/// Views `words`; an error unless it is a well-formed FMM LET of this tree's order and kind (dipoles).
Status viewFmmLet(const std::uint64_t* words, std::size_t bytes, const FmmTree& tree, FmmLetView& out);

/// The one-sided traversal of `tree` (its nodes' codes) against the LET (see the file comment) into `lists` (its
/// pointers into `let`); `period` as selectFmmLet. A pair of the same node (the same code, no shift) opens both; an
/// Internal error if a node sent childless would have to be opened (the LET rule broken).
Status fmmLetLists(const FmmTree& tree, const std::vector<std::uint64_t>& code, const FmmLetView& let,
                   double tolerance, const double* period, int threads, ExternalSources& lists);

}  // namespace fmm
}  // namespace amrgrav
