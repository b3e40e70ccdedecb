/// \file p2p_mma_k.h
/// \brief The table step of the GPU's near field (cuda/kernel_fmm.cu fmmP2PTilesMma) on the FP64
/// tensor cores: which elements each lane holds. A tile's table step is the product acc[t][b] = sum_s K[s][t] m_b[s]
/// (64 target cells t, 64 source cells s, 32 target leaves b), taken as D = A B with A[t][s] = K[s][t] (64 x 64),
/// B[s][b] = m_b[s] (64 x 32, the masses staged in shared memory, row s kMassRowStride doubles apart) in pieces of
/// mma.sync.aligned.m8n8k4.row.col.f64 (D 8 x 8 += A 8 x 4 times B 4 x 8). native/tests/fmm_p2p_mma.cpp emulates
/// one block's warps over these functions against a plain triple loop.
///
/// The lanes' elements of one m8n8k4 f64 product (PTX ISA, "Matrix Fragments for mma.m8n8k4 with .f64 floating
/// point type": groupID = lane >> 2, threadID_in_group = lane % 4): A (row-major 8 x 4) one double, row groupID,
/// column threadID_in_group; B (column-major 4 x 8) one double, row threadID_in_group, column groupID; C and D
/// (8 x 8) two doubles, row groupID, columns 2 threadID_in_group + i (i = 0, 1).
///
/// The block's 4 warps split the 64 target cells: warp w takes 16, as two 8-row M tiles m = 0, 1 whose row r is
/// cell 16 w + 2 r + m (so a lane's two A elements, one per M tile, are adjacent in K's row: one 16-byte load), all
/// 32 targets as four 8-column N tiles j (column c is target 8 j + c) and the 64 sources in 16 K steps of 4 (step
/// k's row q is source 4 k + q). A lane holds 2 x 4 x 2 sums: (m, j, i) is cell mmaCell(w, row, m) and target
/// mmaTarget(j, dmmaCCol(lane, i)).
#pragma once
#include "core/hostdevice.h"

namespace amrgrav {
namespace fmm {

// One m8n8k4 f64 product's elements per lane (lane 0 .. 31), and the lane holding a given A or B element.
AG_HD constexpr int dmmaARow(int lane) { return lane >> 2; }
AG_HD constexpr int dmmaACol(int lane) { return lane & 3; }
AG_HD constexpr int dmmaBRow(int lane) { return lane & 3; }
AG_HD constexpr int dmmaBCol(int lane) { return lane >> 2; }
AG_HD constexpr int dmmaCRow(int lane) { return lane >> 2; }
AG_HD constexpr int dmmaCCol(int lane, int i) { return 2 * (lane & 3) + i; }
AG_HD constexpr int dmmaALane(int row, int k) { return 4 * row + k; }
AG_HD constexpr int dmmaBLane(int k, int col) { return 4 * col + k; }

// The table step's pieces (the block: kMmaWarps warps of 32 lanes).
constexpr int kMmaWarps = 4;
constexpr int kMmaMTiles = 2;         ///< per warp: 16 target cells
constexpr int kMmaNTiles = 4;         ///< 32 targets
constexpr int kMmaKSteps = 16;        ///< 64 sources
constexpr int kMmaTableCells = 64;    ///< K's rows are 64 doubles apart (fmm/p2p_tables.h kTableCells)
constexpr int kMassRowStride = 36;    ///< staged masses: source s's 32 targets at s * 36 (16-byte rows; B's loads
                                      ///< by 16 lanes fall in 32 distinct banks)

/// The target cell of row `row` of M tile m of warp w.
AG_HD constexpr int mmaCell(int warp, int row, int m) { return 16 * warp + 2 * row + m; }
/// The target (the tile's leaf) of column `col` of N tile j.
AG_HD constexpr int mmaTarget(int j, int col) { return 8 * j + col; }
/// The source cell of row q of K step k.
AG_HD constexpr int mmaSource(int k, int q) { return 4 * k + q; }
/// Where lane `lane` of warp w reads its A elements of K step k in the table (K[s][t] at s * 64 + t): M tile 0's
/// here, M tile 1's in the next double (even: one aligned 16-byte load).
AG_HD constexpr int mmaAOffset(int warp, int lane, int k) {
  return mmaSource(k, dmmaACol(lane)) * kMmaTableCells + mmaCell(warp, dmmaARow(lane), 0);
}
/// Where lane `lane` reads its B element of K step k, N tile j in the staged masses (source s's target b at
/// s * kMassRowStride + b).
AG_HD constexpr int mmaBOffset(int lane, int k, int j) {
  return mmaSource(k, dmmaBRow(lane)) * kMassRowStride + mmaTarget(j, dmmaBCol(lane));
}

/// A cell's lattice position along `axis` in its 4^3 leaf (the sorted order is the Morton order: bit `axis`, then
/// bit axis + 3).
AG_HD constexpr int leafLatticeAxis(int cell, int axis) { return (cell >> axis & 1) | (cell >> (axis + 3) & 1) << 1; }

/// With accelerations, the A element beside K's (k = K[s][t]) for gradient component `axis`: d K^3 with d = p_t - p_s
/// - delta along that axis (small integers: exact), t the lane's cell of M tile m, s its source of K step kstep and
/// off = delta in cells (the table's leaf offset times 4): the table step's sums are then fmmP2PTiles<true>'s d K^3 m.
AG_HD double mmaAccelElement(double k, int warp, int lane, int kstep, int m, int axis, const int off[3]) {
  const int d = leafLatticeAxis(mmaCell(warp, dmmaARow(lane), m), axis) -
                leafLatticeAxis(mmaSource(kstep, dmmaACol(lane)), axis) - off[axis];
  return double(d) * (k * k * k);
}

}  // namespace fmm
}  // namespace amrgrav
