/// \file p2p_tables.h
/// \brief The near field of regular leaves as table products (docs/fmm-design.md, section 4): a leaf whose 64 cells
/// form a 4^3 lattice of one cell size h (a 4^3 sub-block of an AMR block) has its cells at fixed positions, so the
/// P2P between two such leaves of the same h depends only on their offset delta (in cells): phi_T[t] += (1/h)
/// sum_s K_delta[s][t] m_S[s], and g likewise with (1/h^2) G_delta. The unit tables K_delta[s][t] = 1/|d| and
/// G_delta[s][t] = d/|d|^3, d = p_t - p_s - delta (p: a cell's lattice position), are the same for every solve and
/// are kept for the process. G_{-delta}[t][s] = -G_delta[s][t] exactly, so a pair's two sides still cancel to
/// rounding (momentum). Other leaves and pairs take the computed P2P (evaluate.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "fmm/fmm_tree.h"

namespace amrgrav {
namespace fmm {

constexpr int kTableCells = 64;  ///< a 4^3 leaf

/// The unit tables of one offset: K, and with accelerations Gx, Gy, Gz; row s = source cell, column t = target cell
/// (cells in the leaf's sorted order, which is the Morton order of their lattice positions).
struct P2pTable {
  double k[kTableCells * kTableCells];
  double g[3][kTableCells * kTableCells];
  bool hasG = false;
};

/// Which leaves are regular, with their first cell's centre and cell size (scaled lengths).
struct RegularLeaves {
  std::vector<std::uint8_t> regular;  ///< per node (0 for internal nodes)
  std::vector<double> origin;         ///< 3 per node: the centre of the leaf's first cell
  std::vector<double> h;              ///< per node
};

RegularLeaves findRegularLeaves(const FmmTree& tree, const SortedCells& cells, int threads);

/// Offsets with a table: whole leaves (4 cells) apart, at most kMaxLeafOffset leaves per axis (the near field of
/// leaves of one size is one to two leaves away): at most 7^3 tables, 32 KB each (128 KB with accelerations).
constexpr int kMaxLeafOffset = 3;
constexpr int kOffsetSlots = (2 * kMaxLeafOffset + 1) * (2 * kMaxLeafOffset + 1) * (2 * kMaxLeafOffset + 1);

/// The tables a solve reads, found or made in the process's cache before the evaluation.
class P2pTables {
 public:
  /// Offsets of the pairs (T, S) and (S, T) of `pairs` and of each regular leaf with itself: their tables are made
  /// (or found in the process's cache) now, so the evaluation only reads.
  void prepare(const FmmTree& tree, const RegularLeaves& reg, const std::vector<std::uint32_t>& pairA,
               const std::vector<std::uint32_t>& pairB, bool accelerations, int threads);
  /// The table of source leaf S's offset from target leaf T when both are regular with the same h and the offset is
  /// a whole number of leaves (at most kMaxLeafOffset per axis); null otherwise.
  const P2pTable* find(const RegularLeaves& reg, std::uint32_t target, std::uint32_t source) const;

 private:
  const P2pTable* byOffset_[kOffsetSlots] = {};
};

/// Cells of the target leaf T (n = 64) get sum over the source leaf's cells through `table`, overwritten into
/// p (and gx, gy, gz with accelerations): (1/h) K m and (1/h^2) G m.
void tableP2P(const P2pTable& table, const double* sourceMass, double h, double* p, double* gx, double* gy, double* gz);

}  // namespace fmm
}  // namespace amrgrav
