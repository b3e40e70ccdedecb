/// \file let.h
/// \brief Locally essential trees (LET; Salmon & Warren 1994, as exchanged in Bonsai, Bedorf et al. 2012, and in
/// the FLASH4 GPU tree solver): the part of a rank's tree another rank needs, chosen with the walk's own MAC
/// against the other rank's box of cell centres, packed as a small SourceTree in one contiguous buffer.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tree/source_tree.h"
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {

/// What every rank tells every other rank about its cells before the exchange (scaled units).
struct RankSummary {
  double centreLo[3], centreHi[3];  ///< bounding box of the cell centres (what group boxes are made of)
  double extentLo[3], extentHi[3];  ///< bounding box of the cells with their extents
  double com[3];
  double mass;
  double cellCount;                 ///< a double so the summary is one MPI_DOUBLE array
  double groupHalfWidth[3];         ///< largest half-extent of a walk group's box per axis (periodic LETs' choice)
  /// Points this rank computes the field at (its cells, or its subset of them, plus its probes and its own
  /// particles: core/system.h); a rank with none needs no LET. centreLo/Hi and groupHalfWidth cover the probes' and
  /// the particles' groups too.
  double targetCount;
  /// How far this rank's softened targets (its own particles) reach: the spline kernel's radius of its largest
  /// softening (kSplineRadius eps_max, scaled); 0 without particles or with the Plummer kernel. The LETs for this
  /// rank are chosen for its box of centres grown by it (remoteBoxFor), so that every node they prune is exact for
  /// its particles too (physics/softening_k.h softeningAccepts).
  double softReach;
  /// The smallest softening of this rank's targets (scaled): 0 with cells or probes among them, else its own
  /// particles' smallest. The Plummer kernel's rule for the particle LETs chosen for it (particleBoxAccepts).
  double softMin;
  /// This rank's own particles (a double, as cellCount): a particle LET comes from every rank that has some.
  double particleCount;
};
constexpr int kRankSummaryDoubles = int(sizeof(RankSummary) / sizeof(double));

/// Summary of the local cells (scaled lengths); a rank with no cells has cellCount 0 and an empty box. The group
/// half-widths are left 0 (the caller's, from its groups: groupHalfWidths).
RankSummary summariseCells(const SortedCells& cells);

/// The same over plain arrays of n scaled cells; without sizes (null) the extent box is the box of the centres
/// (the parity tool's reference for a GPU rank's summary, which the device makes).
RankSummary summariseCells(const double* x, const double* y, const double* z, const double* mass,
                           const double* size, std::size_t n);

/// The box of a remote rank's cell centres (RankSummary::centreLo/Hi) that a LET is chosen for, and the largest
/// half-width of its walk groups per axis (RankSummary::groupHalfWidth; periodic boxes only).
struct RemoteBox {
  double lo[3], hi[3];
  double groupHalfWidth[3] = {INFINITY, INFINITY, INFINITY};
  double softMin = 0;  ///< RankSummary::softMin (the particle LETs' Plummer rule)
};

/// The box a LET for the rank of summary `s` is chosen for: its box of centres and group half-widths, grown on
/// every side by s.softReach (with a margin for rounding). A node the sender accepts for the grown box travels
/// childless and the receiver takes it untested; its distance to any group box inside the real box is at least its
/// distance to the grown box plus the growth, so it also passes the spline kernel's softening rule for the
/// receiver's particles (distance > kSplineRadius eps + macRadius). The Plummer kernel needs no growth: the cells'
/// nodes have softening 0, one for all their pairs.
RemoteBox remoteBoxFor(const RankSummary& s);

/// The local nodes a remote rank needs, in the breadth-first order of the LET it becomes.
struct LetSelection {
  enum Kind : std::uint8_t { Accepted = 0, OpenedLeaf = 1, Opened = 2 };
  std::vector<std::uint32_t> node;  ///< index in the local tree
  std::vector<std::uint8_t> kind;
  std::size_t cellCount = 0;        ///< cells of the opened leaves
};

/// Walks the local tree against the remote box of cell centres [lo, hi] with the walk's MAC (physics/mac_k.h):
/// an accepted node travels as a childless node with its multipoles, an opened internal node with its multipoles
/// and its children, an opened leaf with its cells. A massless node travels childless (the walk skips it).
/// Accepting a node for the whole box accepts it for every group box inside it, so the remote walk over the LET
/// opens exactly the nodes (and leaves) it would open in the local tree, with the same box walk.
void essentialNodesFor(const SourceTree& local, const double lo[3], const double hi[3], LetSelection& out);

/// The particle LET for a remote box (remoteBoxFor) from a particles' tree (tree/particle_tree.h source(): with
/// softening ranges, extents and second moments): a node travels childless when the receiver's softened walk would
/// accept it for every group of the box (physics/let_accept_k.h particleBoxAccepts: the MAC and the softening rule
/// of `kernel`), an opened leaf with its particles and their softenings, an opened internal node with its children.
/// Isolated boxes only (particles refuse periodic boundaries).
void essentialParticlesFor(const SourceTree& particles, const RemoteBox& box, SofteningKernel kernel,
                           LetSelection& out);

template <class Coef>
struct EwaldTableViewOf;
using EwaldTableView = EwaldTableViewOf<double>;

/// essentialNodesFor for periodic boxes: a node travels childless only if every group of the remote box would
/// accept it at the image it picks (physics/let_accept_k.h periodicBoxAccepts): groups of half-width at most
/// groupHalfWidth (the remote rank's largest per axis; infinite: any group inside the box).
void essentialNodesForPeriodic(const SourceTree& local, const double lo[3], const double hi[3],
                               const double groupHalfWidth[3], const EwaldTableView& view, LetSelection& out);

/// A LET in one buffer of 8-byte words: a header, then mass, com, quad, macRadius, second moment (0 when the
/// source has none), the dipole when the source has one (signed sources; let/let_layout.h), the softening ranges
/// and extents when the source is a particles' tree (a particle LET), cell x, y, z, mass (doubles), the sources'
/// softenings (a particle LET), then cellBegin, cellCount, childBegin (uint32), childCount (uint8). Sent as bytes;
/// viewed in place.
struct PackedLet {
  std::vector<std::uint64_t> words;
  std::size_t bytes() const { return words.size() * sizeof(std::uint64_t); }
};

/// Bytes a LET of `nodes` nodes and `cells` cells takes (a multiple of 8).
std::size_t packedLetBytes(std::size_t nodes, std::size_t cells, bool withDipole = false, bool softened = false);

/// Copies the selected nodes (with links renumbered to the LET's breadth-first order) and cells into `out`; a source
/// with softenings (local.sourceEps) makes a particle LET.
void packLet(const SourceTree& local, const LetSelection& sel, PackedLet& out);

/// A SourceTree pointing into a packed LET (no copy); an error if the buffer is not a well-formed LET.
Status viewPackedLet(const std::uint64_t* words, std::size_t bytes, SourceTree& out);

/// The LETs a rank received, as one tree for a single walk (CPU or GPU): on top, virtual nodes that every walk
/// opens (infinite MAC radius, so that no walk skips them as empty; mass the total below them; fan-out at most 8),
/// down to the LETs' roots; below those, each LET's other nodes in its own breadth-first order, links and cell
/// ranges offset; the cells one LET after the other. Walking it adds exactly what walking each LET would.
struct LetForest : SourceTreeArrays {
  std::size_t virtualNodes = 0;  ///< nodes [0, virtualNodes) are the virtual ones
};

/// Where mergeLets puts what: the virtual levels (widths and first indices; the last level is the LETs' roots,
/// at rootsAt + r), LET r's other nodes from nodeBase[r] on (its node k > 0 at nodeBase[r] + k - 1), its cells from
/// cellBase[r] on.
struct LetForestLayout {
  std::vector<std::size_t> width, levelStart;
  std::size_t rootsAt = 0, nodes = 0, cells = 0;
  std::vector<std::size_t> nodeBase, cellBase;
  std::size_t forestIndex(std::size_t r, std::size_t k) const { return k == 0 ? rootsAt + r : nodeBase[r] + k - 1; }
};

/// The layout of the forest of `count` LETs; an error if it would have 2^32 nodes or cells.
Status letForestLayout(const SourceTree* lets, std::size_t count, LetForestLayout& out);

/// The forest's virtual nodes [0, L.rootsAt) into `out` (resized to them): links, masses (the LET roots' below),
/// zero com and quadrupole, infinite MAC radius.
void fillVirtualNodes(const LetForestLayout& L, const SourceTree* lets, SourceTreeArrays& out);

/// Merges `count` LETs into `out` (reusing its memory); an error if the forest would have 2^32 nodes or cells.
Status mergeLets(const SourceTree* lets, std::size_t count, LetForest& out);

/// A received LET: the packed words as they arrived (a GPU uploads them as they are) and the view of them.
struct ReceivedLet {
  const std::uint64_t* words = nullptr;
  std::size_t bytes = 0;
  SourceTree view;
};

}  // namespace amrgrav
