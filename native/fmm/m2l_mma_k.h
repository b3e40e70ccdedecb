/// \file m2l_mma_k.h
/// \brief The M2L of same-level nodes on a lattice as products on the FP64 tensor cores (issue #20's study: the
/// M2L is 30-41 ms of the GPU FMM's 256^3 solve, FP64-bound at ~2450 operations a pair in the per-pair kernels).
///
/// With expansion centres on a lattice (geometric centres, as signed sources and periodic boxes use), a target A and
/// a source B at a lattice offset o see the same derivatives D(o) as every other pair at that offset, and the
/// one-sided M2L (fmm/m2l_kernels.h: L_A[k] += sum_n (-1)^|n| M_B[n] D[n + k], |n| + |k| <= p) is the product of
/// one matrix per offset, H_o[k][n] = (-1)^|n| D_o[k + n] (a Hankel matrix in the multi-indices, zero where
/// |n| + |k| > p), with the sources' multipoles as columns. A tile of 8 targets takes, offset by offset, the 8
/// sources at that offset (a missing one: a zero column) as B (terms x 8) and adds H_o B to its 8 locals:
/// mma.sync.m8n8k4.f64 pieces, 8 rows of L by 4 terms of M each (fmm/p2p_mma_k.h's lane layout). Pieces wholly
/// beyond |n| + |k| <= p are skipped: at p 7, 77 of the 15 x 30 pieces (1716 products a pair at 70% of the pieces'
/// 2464). H_o's pieces are made once per offset (every lane's element, in the order the kernel reads them), so the
/// kernel reads them as whole coalesced rows and computes no derivatives.
///
/// The pieces run step outer (4 terms of M: one load of B per column tile), row tile inner; row tile r takes the
/// steps s < m2lMmaSteps(p, r) (its lowest degree leaves room for M's terms up to p - that degree). Shared by the
/// kernel (cuda/kernel_m2l_mma.cu), the host that makes the pieces, and the host emulation (native/tests/
/// fmm_m2l_mma.cpp).
#pragma once
#include "core/hostdevice.h"
#include "fmm/p2p_mma_k.h"  // the lanes' elements of one m8n8k4 product

namespace amrgrav {
namespace fmm {

/// Terms of degree below d (the first index of degree d in fmm/multi_index.h's order).
AG_HD constexpr int m2lMmaTermsBelow(int d) { return d * (d + 1) * (d + 2) / 6; }
/// The degree of term q.
AG_HD constexpr int m2lMmaDegree(int q) {
  int d = 0;
  while (m2lMmaTermsBelow(d + 1) <= q) ++d;
  return d;
}
/// Order p's terms, its L row tiles of 8 and its M steps of 4.
AG_HD constexpr int m2lMmaTerms(int p) { return m2lMmaTermsBelow(p + 1); }
AG_HD constexpr int m2lMmaRowTiles(int p) { return (m2lMmaTerms(p) + 7) / 8; }
AG_HD constexpr int m2lMmaStepCount(int p) { return (m2lMmaTerms(p) + 3) / 4; }
/// The steps row tile r takes: M's terms up to degree p - (the tile's lowest degree).
AG_HD constexpr int m2lMmaSteps(int p, int r) {
  return (m2lMmaTermsBelow(p - m2lMmaDegree(8 * r) + 1) + 3) / 4;
}
/// The row tiles step s feeds (the steps fall with r, so these are r < m2lMmaRows(p, s)).
AG_HD constexpr int m2lMmaRows(int p, int s) {
  int n = 0;
  for (int r = 0; r < m2lMmaRowTiles(p); ++r) n += s < m2lMmaSteps(p, r) ? 1 : 0;
  return n;
}
/// Where piece (step s, row tile r) lies among an offset's pieces (step outer, row tile inner), and their count.
AG_HD constexpr int m2lMmaPiece(int p, int s, int r) {
  int at = 0;
  for (int t = 0; t < s; ++t) at += m2lMmaRows(p, t);
  return at + r;
}
AG_HD constexpr int m2lMmaPieces(int p) { return m2lMmaPiece(p, m2lMmaStepCount(p), 0); }

/// The L term (row) and M term (column) of lane `lane`'s element of piece (s, r).
AG_HD constexpr int m2lMmaRow(int r, int lane) { return 8 * r + dmmaARow(lane); }
AG_HD constexpr int m2lMmaCol(int s, int lane) { return 4 * s + dmmaACol(lane); }

/// The sign of lane `lane`'s element of piece (s, r) of an offset's matrix, 0 where it is outside the order: the
/// element is sign x D[k + n] (D: order p's derivatives at R = target - source, fmm/m2l_kernels.h) for row k and
/// column n with |k| + |n| <= p, the sign (-1)^|n|.
AG_HD int m2lMmaSign(int p, int s, int r, int lane) {
  const int k = m2lMmaRow(r, lane), n = m2lMmaCol(s, lane), T = m2lMmaTerms(p);
  if (k >= T || n >= T) return 0;
  const int dk = m2lMmaDegree(k), dn = m2lMmaDegree(n);
  if (dk + dn > p) return 0;
  return dn % 2 ? -1 : 1;
}

/// The tiles' targets: tile t's column c (target) is targets[8 t + c], -1 where the tile has fewer targets. A tile's
/// offsets tileStart[t] .. tileStart[t + 1]: offset id offset[q] and the column's source source[8 q + c] (-1: none).
constexpr int kM2lMmaTileTargets = 8;

}  // namespace fmm
}  // namespace amrgrav
