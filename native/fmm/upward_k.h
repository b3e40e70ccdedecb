/// \file upward_k.h
/// \brief The FMM's upward pass one node (or one node's term) at a time, written once for the host
/// (fmm/fmm_tree.cpp, fmm/multipoles.cpp, the emulation fmm/upward_emulate.cpp) and the device
/// (cuda/kernel_fmm_tree.cu), so that both give every node of the FMM tree the same bits: its centre, radius,
/// critical radius, |mass| and lower bound decide the interaction lists, which must be the same on both backends.
/// Isolated boxes (centres of mass) and, on the host, the periodic boxes' cube centres (`dipoles`).
///
/// The order of every sum is fixed by the tree, not by the cells under a node: a leaf sums its cells in sorted order;
/// an internal node sums its children's sums in child order (so a node costs its children's count, and a GPU does a
/// level in one pass). The radius is a maximum over the node's cells (exact in any order). The multipoles are P2M at
/// a leaf and M2M from the children in the host's lane layout (fmm/expansions.h: kLanes = 8 lanes, cell j of a leaf
/// in lane (j - begin) mod 8, child k in lane k; the lanes summed in lane order), one term at a time here.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/hostdevice.h"
#include "physics/rounding.h"

namespace amrgrav {
namespace fmm {

/// The lanes of the host's P2M and M2M (fmm/simd.h kLanes).
constexpr int kUpwardLanes = 8;
/// The highest expansion order (fmm/multi_index.h MultiIndex::of).
constexpr int kUpwardMaxOrder = 7;

/// A node's sums: mass, |mass| and the mass-weighted position sums (scaled lengths).
struct FmmSums {
  double m = 0, am = 0, s[3] = {0, 0, 0};
};

/// One cell into a leaf's sums (cells in sorted order).
template <class Rn = RoundNearest>
AG_HD void fmmAddCell(FmmSums& a, double m, double x, double y, double z) {
  a.m = Rn::add(a.m, m);
  a.am = Rn::add(a.am, Rn::abs(m));
  a.s[0] = Rn::add(a.s[0], Rn::mul(m, x));
  a.s[1] = Rn::add(a.s[1], Rn::mul(m, y));
  a.s[2] = Rn::add(a.s[2], Rn::mul(m, z));
}

/// One child's sums into its parent's (children in child order).
template <class Rn = RoundNearest>
AG_HD void fmmAddSums(FmmSums& a, const FmmSums& b) {
  a.m = Rn::add(a.m, b.m);
  a.am = Rn::add(a.am, b.am);
  AG_RULE_UNROLL
  for (int d = 0; d < 3; ++d) a.s[d] = Rn::add(a.s[d], b.s[d]);
}

/// The expansion centre along axis d: the centre of mass, or the cube centre when massless or with `dipoles`.
template <class Rn = RoundNearest>
AG_HD double fmmCentreOf(const FmmSums& a, int d, double cubeCentre, bool dipoles) {
  return a.m > 0 && !dipoles ? Rn::div(a.s[d], a.m) : cubeCentre;
}

/// The monomial tables (fmm/multi_index.h): term t = term prev[t] times h[axis[t]] times scale[t].
struct MonoTables {
  const int* prev = nullptr;
  const int* axis = nullptr;
  const double* scale = nullptr;
};

/// h^n / n! of term q by its chain of products from term 0, each (value * h) * scale as the host's monomials() makes
/// term after term: every term's value is the same product chain there.
/// The step's arithmetic: (prevValue * hAxis) * scale.
template <class Rn = RoundNearest>
AG_HD double fmmMonomialStepOf(double prevValue, double hAxis, double scale) {
  return Rn::mul(Rn::mul(prevValue, hAxis), scale);
}

/// The chain's last step: term q's monomial from its previous term's (prev[q]) value. A row made in term order with
/// this step (fmmMonomialRow; the device's rows with the compile-time tables, MonoTablesOf) holds fmmMonomial's
/// bits, each term's chain being its previous term's chain and one step more.
template <class Rn = RoundNearest>
AG_HD double fmmMonomialStep(const MonoTables& t, int q, double prevValue, const double* h) {
  return fmmMonomialStepOf<Rn>(prevValue, h[t.axis[q]], t.scale[q]);
}

/// fmm/multi_index.h's monomial tables of order P at compile time (MultiIndex's term order and rule; upwardTables'
/// term 0: prev 0, axis 0, scale 1), so that a device row of P's monomials unrolls into registers.
template <int P>
struct MonoTablesOf {
  static constexpr int kTerms = (P + 1) * (P + 2) * (P + 3) / 6;
  int prev[kTerms], axis[kTerms];
  double scale[kTerms];
  static constexpr int at(int a, int b, int c) {
    const int d = a + b + c;
    return (d == 0 ? 0 : d * (d + 1) * (d + 2) / 6) + (d - a) * (d - a + 1) / 2 + (d - a - b);
  }
  constexpr MonoTablesOf() : prev(), axis(), scale() {
    for (int d = 0; d <= P; ++d)
      for (int a = d; a >= 0; --a)
        for (int b = d - a; b >= 0; --b) {
          const int n[3] = {a, b, d - a - b}, t = at(a, b, d - a - b);
          prev[t] = 0;
          axis[t] = 0;
          scale[t] = 1.0;
          for (int i = 0; i < 3; ++i)
            if (n[i] > 0) {
              int m[3] = {n[0], n[1], n[2]};
              m[i] -= 1;
              prev[t] = at(m[0], m[1], m[2]);
              axis[t] = i;
              scale[t] = 1.0 / n[i];
              break;
            }
        }
  }
};

template <class Rn = RoundNearest>
AG_HD double fmmMonomial(const MonoTables& t, int q, const double* h) {
  int chain[kUpwardMaxOrder + 1];
  int k = 0;
  for (int s = q; s != 0; s = t.prev[s]) chain[k++] = s;
  double v = 1.0;
  while (k > 0) v = fmmMonomialStep<Rn>(t, chain[--k], v, h);
  return v;
}

/// Every term's monomial h^n / n! of offset h into row[0 .. terms), in term order (terms of lower degree first).
template <class Rn = RoundNearest>
AG_HD void fmmMonomialRow(const MonoTables& t, int terms, const double* h, double* row) {
  row[0] = 1.0;
  for (int q = 1; q < terms; ++q) row[q] = fmmMonomialStep<Rn>(t, q, row[t.prev[q]], h);
}

/// P2M's lane of a leaf's cell j (cells [b, e)): the host's lanes (fmm/expansions.h) take cell j in lane
/// (j - b) mod 8.
AG_HD int fmmP2MLaneOf(std::uint32_t j, std::uint32_t b) { return int((j - b) % std::uint32_t(kUpwardLanes)); }

/// One cell's product into its lane's sum of P2M term q: m times the cell's monomial of q (fmmP2MTerm's step).
template <class Rn = RoundNearest>
AG_HD double fmmP2MLaneAdd(double lane, double m, double monomial) {
  return Rn::add(lane, Rn::mul(m, monomial));
}

/// A term's lanes summed in lane order (fmmP2MTerm's and fmmM2MTerm's totals). Lanes without a cell (or a child)
/// hold +0.0, as fmmP2MTerm's padded lanes do: adding 0 times a monomial to a sum that starts at +0.0 leaves it,
/// since round-to-nearest gives -0.0 only from two -0.0 operands.
template <class Rn = RoundNearest>
AG_HD double fmmLaneTotal(const double* lanes) {
  double total = lanes[0];
  AG_RULE_UNROLL
  for (int l = 1; l < kUpwardLanes; ++l) total = Rn::add(total, lanes[l]);
  return total;
}

/// P2M's term q of a leaf whose cells are [b, e) about centre c: lane l sums m h^q/q! over cells b + l, b + l + 8, ...
/// (a lane past e adds 0 times the monomial of offset 0, as the host's padded lanes), the lanes then summed in order.
template <class Rn = RoundNearest>
AG_HD double fmmP2MTerm(const MonoTables& t, int q, const double* x, const double* y, const double* z,
                        const double* mass, std::uint32_t b, std::uint32_t e, const double* c) {
  double total = 0;
  for (int l = 0; l < kUpwardLanes; ++l) {
    double acc = 0;
    for (std::uint32_t j = b; j < e; j += kUpwardLanes) {
      const std::uint32_t jl = j + std::uint32_t(l);
      const bool in = jl < e;
      const double h[3] = {in ? Rn::sub(x[jl], c[0]) : 0.0, in ? Rn::sub(y[jl], c[1]) : 0.0,
                           in ? Rn::sub(z[jl], c[2]) : 0.0};
      const double m = in ? mass[jl] : 0.0;
      acc = Rn::add(acc, Rn::mul(m, fmmMonomial<Rn>(t, q, h)));
    }
    total = l == 0 ? acc : Rn::add(total, acc);
  }
  return total;
}

/// M2M's term n of a node: child l (l < children; the others are zero lanes) with multipoles Mc[l] (its M row) at
/// offset h[l] = child centre - node centre; the entries (j, n - j) of term n in the host's table order
/// ([first, last) of the by-target tables: m2mJ, m2mNJ), each lane's products summed, the lanes in order.
template <class Rn = RoundNearest>
AG_HD double fmmM2MTerm(const MonoTables& t, const int* entryJ, const int* entryNJ, int first, int last,
                        const double* const* Mc, const double (*h)[3], int children) {
  double total = 0;
  for (int l = 0; l < kUpwardLanes; ++l) {
    const bool in = l < children;
    const double zero[3] = {0.0, 0.0, 0.0};
    const double* hl = in ? h[l] : zero;
    double acc = 0;
    for (int q = first; q < last; ++q)
      acc = Rn::add(acc, Rn::mul(in ? Mc[l][entryJ[q]] : 0.0, fmmMonomial<Rn>(t, entryNJ[q], hl)));
    total = l == 0 ? acc : Rn::add(total, acc);
  }
  return total;
}

/// fmmM2MTerm from the children's monomial rows (child l's monomial of term t at monoRows[l * rowStride +
/// t * termStride]) and multipoles (child l's term j at Mc[l * mRowStride + j * mTermStride]): lanes of absent
/// children hold +0.0 (fmmLaneTotal), so only the children's lanes are summed.
template <class Rn = RoundNearest>
AG_HD double fmmM2MTermOfRows(const int* entryJ, const int* entryNJ, int first, int last, const double* Mc,
                              std::size_t mRowStride, int mTermStride, const double* monoRows, int rowStride,
                              int termStride, int children) {
  // each lane's products in entry order, the lanes side by side (independent sums: one entry's indices serve all)
  double lanes[kUpwardLanes];
  AG_RULE_UNROLL
  for (int l = 0; l < kUpwardLanes; ++l) lanes[l] = 0;
  for (int q = first; q < last; ++q) {
    const int j = entryJ[q], nj = entryNJ[q];
    AG_RULE_UNROLL
    for (int l = 0; l < kUpwardLanes; ++l)
      if (l < children)
        lanes[l] = Rn::add(lanes[l], Rn::mul(Mc[std::size_t(l) * mRowStride + std::size_t(j * mTermStride)],
                                             monoRows[l * rowStride + nj * termStride]));
  }
  return fmmLaneTotal<Rn>(lanes);
}

/// The squared distance of a cell from a node's centre (the radius is the square root of its maximum over the
/// node's cells).
template <class Rn = RoundNearest>
AG_HD double fmmCellDistance2(double x, double y, double z, const double* c) {
  return squaredNorm<Rn>(Rn::sub(x, c[0]), Rn::sub(y, c[1]), Rn::sub(z, c[2]));
}

/// The child of node i whose cells hold sorted cell j (a cell of i), or 0xffffffff when i is a leaf: the children
/// split i's cells into ascending ranges, so the last child starting at or before j (the radii's descent from the
/// root: a few loads a level instead of a search of the whole level).
AG_HD std::uint32_t fmmChildHolding(const std::uint32_t* cellBegin, const std::uint32_t* childBegin,
                                    const std::uint8_t* childCount, std::uint32_t i, std::uint32_t j) {
  const int nc = childCount[i];
  if (nc == 0) return 0xffffffffu;
  std::uint32_t c = childBegin[i];
  for (int k = 1; k < nc && cellBegin[childBegin[i] + std::uint32_t(k)] <= j; ++k) c = childBegin[i] + std::uint32_t(k);
  return c;
}

}  // namespace fmm
}  // namespace amrgrav
