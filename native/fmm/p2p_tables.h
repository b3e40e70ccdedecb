/// \file p2p_tables.h
/// \brief The near field of regular leaves as table products (docs/fmm-design.md, section 4): a leaf whose 64 cells
/// form a 4^3 lattice of one cell size h (a 4^3 sub-block of an AMR block) has its cells at fixed positions, so the
/// P2P between two such leaves of the same h depends only on their offset delta (in cells): phi_T[t] += (1/h)
/// sum_s K_delta[s][t] m_S[s], and g_T[t] += (1/h^2) sum_s d K_delta[s][t]^3 m_S[s]. The unit table
/// K_delta[s][t] = 1/|d|, d = p_t - p_s - delta (p: a cell's lattice position; d is a vector of small integers,
/// made exactly in the loop), is the same for every solve and is kept for the process. The opposite offset's d and K
/// are the exact negation and the same value, so a pair's two sides still cancel to rounding (momentum). Other leaves
/// and pairs take the computed P2P (evaluate.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "core/hostdevice.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"

namespace amrgrav {
namespace fmm {

constexpr int kTableCells = 64;  ///< a 4^3 leaf

/// The unit table of one offset: row s = source cell, column t = target cell (cells in the leaf's sorted order,
/// which is the Morton order of their lattice positions), and the offset itself in cells.
struct P2pTable {
  double k[kTableCells * kTableCells];
  double delta[3];
};

/// Which leaves are regular, with their first cell's centre and cell size (scaled lengths).
struct RegularLeaves {
  std::vector<std::uint8_t> regular;  ///< per node (0 for internal nodes)
  std::vector<double> origin;         ///< 3 per node: the centre of the leaf's first cell
  std::vector<double> h;              ///< per node
};

RegularLeaves findRegularLeaves(const FmmTree& tree, const SortedCells& cells, int threads);

/// Offsets with a table: whole leaves (4 cells) apart, at most kMaxLeafOffset leaves per axis (the near field of
/// leaves of one size is one to four leaves away): at most 9^3 tables of 32 KB.
constexpr int kMaxLeafOffset = 4;
constexpr int kOffsetSlots = (2 * kMaxLeafOffset + 1) * (2 * kMaxLeafOffset + 1) * (2 * kMaxLeafOffset + 1);
/// The offset of a slot in leaves per axis (each in -kMaxLeafOffset .. kMaxLeafOffset): slot =
/// ((a + r) w + (b + r)) w + (c + r), r = kMaxLeafOffset, w = 2 r + 1 (the host's tables and the device's tile
/// kernels alike).
AG_HD void slotOffset(int slot, int a[3]) {
  constexpr int r = kMaxLeafOffset, w = 2 * r + 1;
  a[0] = slot / (w * w) - r;
  a[1] = slot / w % w - r;
  a[2] = slot % w - r;
}

/// The slot's offset in cells per axis (a leaf is 4 cells a side): the table's delta, as the tile kernels read it.
AG_HD void slotOffsetCells(int slot, int off[3]) {
  slotOffset(slot, off);
  for (int d = 0; d < 3; ++d) off[d] *= 4;
}

/// The tables a solve reads, found or made in the process's cache before the evaluation.
class P2pTables {
 public:
  /// Offsets of the P2P pairs (T, S + shift) and (S, T - shift) of `lists` and of each regular leaf with itself:
  /// their tables are made (or found in the process's cache) now, so the evaluation only reads.
  void prepare(const RegularLeaves& reg, const FmmLists& lists, int threads);
  /// The tables of these slots (each 0 .. kOffsetSlots - 1) made or found, the others left out: the CUDA backend's
  /// choice of slots made on the device (fmm/p2p_tiles_k.h), the tables from the same cache.
  void prepareSlots(const std::vector<int>& slots, int threads);
  /// The table of source leaf S's offset from target leaf T, S moved by `shift` (an image shift's vector, scaled
  /// lengths; zeros for none), when both are regular with the same h and the offset is a whole number of leaves (at
  /// most kMaxLeafOffset per axis); null otherwise.
  const P2pTable* find(const RegularLeaves& reg, std::uint32_t target, std::uint32_t source, const double shift[3]) const;
  /// The same choice as a slot (an offset's index, 0 .. kOffsetSlots - 1), or -1 where find gives null: the CUDA
  /// backend uploads the tables by slot (p2p_tiles.h).
  int findSlot(const RegularLeaves& reg, std::uint32_t target, std::uint32_t source, const double shift[3]) const;
  /// The table of a slot that prepare made (null for the others).
  const P2pTable* bySlot(int slot) const { return slot >= 0 && slot < kOffsetSlots ? byOffset_[slot] : nullptr; }

 private:
  void prepareNeeded(const bool need[kOffsetSlots], int threads);
  const P2pTable* byOffset_[kOffsetSlots] = {};
};

/// Cells of the target leaf T (n = 64) get the sums over the source leaf's cells through `table`, overwritten into
/// p (and gx, gy, gz unless null): (1/h) K m and (1/h^2) d K^3 m.
void tableP2P(const P2pTable& table, const double* sourceMass, double h, double* p, double* gx, double* gy, double* gz);

/// tableP2P's potentials for two sources of one table at once (each row of the table read once for both): each
/// result the bits tableP2P gives it alone (the same operations per lane).
void tableP2PTwo(const P2pTable& table, const double* m0, double h0, double* p0, const double* m1, double h1,
                 double* p1);

}  // namespace fmm
}  // namespace amrgrav
