/// \file walk_lists.cpp
/// \brief The CPU walk's lists (see walk_lists.h). Built with -ffp-contract=off: the MAC, the image test and the
/// expansion choice round here exactly as on the device.
#include "cpu/walk_lists.h"

#include <cassert>

#include "ewald/expansion_k.h"
#include "physics/image_k.h"
#include "physics/interact_k.h"
#include "physics/mac_k.h"
#include "physics/moments_k.h"

namespace amrgrav {
namespace {

/// The warp vote (WalkKind::Vote): every cell of the group tests the node (centre of mass com) against its own centre.
bool everyCellAccepts(const SourceTree& t, const double* com, std::uint32_t i, const SortedCells& c, std::uint32_t b,
                      std::uint32_t n) {
  for (std::uint32_t j = b; j < b + n; ++j) {
    const double p[3] = {c.x[j], c.y[j], c.z[j]};
    if (!macAccepts(com[0], com[1], com[2], t.macRadius[i], p, p)) return false;
  }
  return true;
}

/// Appends node i's dipole (3 values) where the tree has dipoles (signed sources; about a centre of mass it is 0).
/// Three push_backs: a range insert of 3 is an out-of-line call and a memmove per accepted node.
template <class Vec>
inline void pushDipole(const SourceTree& t, std::uint32_t i, Vec& out) {
  if (t.dipole) {
    out.push_back(t.dipole[3 * i]);
    out.push_back(t.dipole[3 * i + 1]);
    out.push_back(t.dipole[3 * i + 2]);
  }
}

/// A walk entry's tests, made when its parent is opened (a node's children in one pass: independent chains the
/// processor overlaps, instead of one long chain per node ending in an unpredictable branch).
template <bool Periodic>
inline __attribute__((always_inline)) void classifyNode(const SourceTree& t, const EwaldTableView* v,
                                                        const double* glo, const double* ghi, std::uint32_t i,
                                                        unsigned tag, ListEntry& e) {
  e.node = i;
  e.tag = std::uint8_t(tag);
  const double R = t.macRadius[i];
  double com[3] = {t.com[3 * i], t.com[3 * i + 1], t.com[3 * i + 2]};
  int image[3] = {0, 0, 0};
  // periodic: the node's image nearest the group, or must it be opened (its images too close, off the table)?
  // Below a hoisted node: the image of that node, no test (its correction is taken).
  bool usable = true, hoistable = false;
  if (Periodic) {
    if (tag) {
      for (int d = 0; d < 3; ++d) com[d] = taggedImage(com[d], tag, d, v->period[d]);
    } else {
      usable = periodicNodeImage(*v, glo, ghi, &t.com[3 * i], R, com, image, &hoistable);
    }
  }
  const bool accepts = macAccepts(com[0], com[1], com[2], R, glo, ghi);
  for (int d = 0; d < 3; ++d) {
    e.com[d] = com[d];
    e.image[d] = image[d];
  }
  e.state = std::uint8_t((nodeIsEmpty(R) ? ListEntry::kEmpty : 0) | (usable ? ListEntry::kUsable : 0) |
                         (hoistable ? ListEntry::kHoistable : 0) | (accepts ? ListEntry::kAccepts : 0));
}

/// classifyNode<true>'s tests for a node's children (at most 8) in a periodic walk, lane by lane: each test a loop over
/// the children, which vectorises (the same operations, each rounded on its own: the same bits). `tag` is the
/// children's image tag (below a hoisted node), the same for all; the entries go to out[nc - 1 - k] (pushed in
/// reverse, visited in key order). Isolated walks test children one by one (in lanes they were no faster).
inline __attribute__((always_inline)) void classifyChildren(const SourceTree& t, const EwaldTableView* v,
                                                            const double* glo, const double* ghi, std::uint32_t cb,
                                                            int nc, unsigned tag, ListEntry* out) {
  constexpr int W = 8;
  assert(nc <= W);
  alignas(64) double c[3][W], R[W], k[3][W];
  alignas(64) std::int64_t usable[W], hoistable[W], accepts[W];
  for (int j = 0; j < W; ++j) {  // lanes past the children: a zero node, never written out
    const bool in = j < nc;
    const std::size_t i = cb + std::uint32_t(in ? j : 0);
    R[j] = in ? t.macRadius[i] : 0.0;
    for (int d = 0; d < 3; ++d) {
      c[d][j] = in ? t.com[3 * i + d] : 0.0;
      k[d][j] = 0;
    }
    usable[j] = 1;
    hoistable[j] = !tag;
  }
  if (tag) {  // below a hoisted node: that node's image, no test
    for (int d = 0; d < 3; ++d)
      for (int j = 0; j < W; ++j) c[d][j] = taggedImage(c[d][j], tag, d, v->period[d]);
  } else {
    for (int d = 0; d < 3; ++d) {
      const double P = v->period[d];
      if (P <= 0) continue;
      const double invP = v->invPeriod[d], reach = v->reach[d], lo = glo[d], hi = ghi[d];
#pragma GCC unroll 1
#pragma GCC ivdep
      for (int j = 0; j < W; ++j) {
        double sh, kk;
        bool u, h;
        periodicAxisImage(P, invP, reach, lo, hi, c[d][j], R[j], sh, kk, u, h);
        c[d][j] = sh;
        k[d][j] = kk;
        usable[j] &= std::int64_t(u);
        hoistable[j] &= std::int64_t(h);
      }
    }
  }
#pragma GCC unroll 1
#pragma GCC ivdep
  for (int j = 0; j < W; ++j) accepts[j] = macAccepts(c[0][j], c[1][j], c[2][j], R[j], glo, ghi);
  for (int j = 0; j < nc; ++j) {
    ListEntry& e = out[nc - 1 - j];
    e.node = cb + std::uint32_t(j);
    e.tag = std::uint8_t(tag);
    for (int d = 0; d < 3; ++d) {
      e.com[d] = c[d][j];
      e.image[d] = int(k[d][j]);
    }
    const bool ok = usable[j];
    e.state = std::uint8_t((nodeIsEmpty(R[j]) ? ListEntry::kEmpty : 0) | (ok ? ListEntry::kUsable : 0) |
                           (ok && hoistable[j] ? ListEntry::kHoistable : 0) | (accepts[j] ? ListEntry::kAccepts : 0));
  }
}

/// The accepted nodes' arrays, in the order the walk accepted them: com at the image the group sees, mass,
/// quadrupole (half-upper for the potential-only kernel), and periodic: S, whether it adds its own correction (not
/// below a hoisted node) and the dipole (signed sources).
template <bool Periodic>
inline __attribute__((always_inline)) void fillNodes(const SourceTree& t, bool halfUpper, WalkLists& L) {
  const std::size_t n = L.accepted.size();
  for (auto* v : {&L.nx, &L.ny, &L.nz, &L.nm, &L.q0, &L.q1, &L.q2, &L.q3, &L.q4, &L.q5}) v->resize(n);
  if (Periodic) {
    L.ns.resize(n);
    L.nCorrect.resize(n);
    if (t.dipole) L.nd.resize(3 * n);
  }
  const ListHit* a = L.accepted.data();
  double *nx = L.nx.data(), *ny = L.ny.data(), *nz = L.nz.data(), *nm = L.nm.data();
  double *q0 = L.q0.data(), *q1 = L.q1.data(), *q2 = L.q2.data(), *q3 = L.q3.data(), *q4 = L.q4.data(),
         *q5 = L.q5.data();
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint32_t i = a[k].node;
    nx[k] = a[k].com[0]; ny[k] = a[k].com[1]; nz[k] = a[k].com[2];
    nm[k] = t.mass[i];
    double h[6];
    const double* q = &t.quad[6 * i];
    if (halfUpper) {
      halfUpperQuadrupole(q, h);
      q = h;
    }
    q0[k] = q[0]; q1[k] = q[1]; q2[k] = q[2]; q3[k] = q[3]; q4[k] = q[4]; q5[k] = q[5];
  }
  if (Periodic) {
    double* ns = L.ns.data();
    std::uint8_t* nc = L.nCorrect.data();
    for (std::size_t k = 0; k < n; ++k) {
      ns[k] = t.secondMoment[a[k].node];
      nc[k] = a[k].tag ? 0 : 1;
    }
    if (t.dipole) {
      double* nd = L.nd.data();
      for (std::size_t k = 0; k < n; ++k)
        for (int d = 0; d < 3; ++d) nd[3 * k + d] = t.dipole[3 * a[k].node + d];
    }
  }
}

/// The opened leaves' cells, in the order the walk opened them; below a hoisted node (periodic) at its image:
/// taggedImage per cell, x + k P, with k P (exact) made once per axis.
template <bool Periodic>
inline __attribute__((always_inline)) void fillCells(const SourceTree& t, const EwaldTableView* view, WalkLists& L) {
  std::size_t n = 0;
  for (const ListHit& h : L.leaves) n += t.cellCount[h.node];
  for (auto* v : {&L.cx, &L.cy, &L.cz, &L.cm}) v->resize(n);
  // the cells' places in the source tree only where lattice rows read them (cpu_walk.cpp latticeRows)
  const bool sources = Periodic && L.sourceLattice;
  if (Periodic) L.cCorrect.resize(n);
  if (sources) L.cSource.resize(n);
  double *px = L.cx.data(), *py = L.cy.data(), *pz = L.cz.data(), *pm = L.cm.data();
  std::size_t o = 0;
  for (const ListHit& h : L.leaves) {
    const std::uint32_t b = t.cellBegin[h.node], m = t.cellCount[h.node];
    if (Periodic && h.tag) {
      double shift[3];
      for (int d = 0; d < 3; ++d) shift[d] = taggedImage(0.0, h.tag, d, view->period[d]);
      for (std::uint32_t j = 0; j < m; ++j) {
        px[o + j] = t.x[b + j] + shift[0];
        py[o + j] = t.y[b + j] + shift[1];
        pz[o + j] = t.z[b + j] + shift[2];
      }
    } else {
      for (std::uint32_t j = 0; j < m; ++j) {
        px[o + j] = t.x[b + j];
        py[o + j] = t.y[b + j];
        pz[o + j] = t.z[b + j];
      }
    }
    for (std::uint32_t j = 0; j < m; ++j) pm[o + j] = t.cellMass[b + j];
    if (Periodic) for (std::uint32_t j = 0; j < m; ++j) L.cCorrect[o + j] = h.tag ? 0 : 1;
    if (sources) for (std::uint32_t j = 0; j < m; ++j) L.cSource[o + j] = b + j;
    o += m;
  }
}

template <bool Periodic>
inline __attribute__((always_inline)) void buildListsImpl(const SourceTree& t, const SortedCells& c, const Groups& g,
                                                          std::size_t gi, bool vote, bool halfUpper, bool hoist,
                                                          WalkLists& L) {
  const double* glo = &g.lo[3 * gi];
  const double* ghi = &g.hi[3 * gi];
  const EwaldTableView* view = Periodic ? &L.ewald->view : nullptr;
  L.clear();
  L.accepted.clear();
  L.leaves.clear();
  ListVector<ListEntry>& stack = L.entries;
  stack.clear();
  stack.emplace_back();
  classifyNode<Periodic>(t, view, glo, ghi, 0, 0, stack.back());
  while (!stack.empty()) {
    // the entry's fields one by one (a copy of the whole entry goes through memory and stalls on the loads)
    const ListEntry& top = stack.back();
    const std::uint32_t i = top.node;
    const unsigned tag = top.tag, state = top.state;
    const double com[3] = {top.com[0], top.com[1], top.com[2]};
    const int image[3] = {top.image[0], top.image[1], top.image[2]};
    stack.pop_back();
    if (state & ListEntry::kEmpty) continue;  // no mass at all (physics/moments_k.h): nothing to add
    const bool usable = state & ListEntry::kUsable;
    // what the box accepts every cell accepts (each cell is in the box), so the vote only revisits box rejections
    if (usable && ((state & ListEntry::kAccepts) ||
                   (vote && everyCellAccepts(t, com, i, c, g.begin[gi], g.count[gi])))) {
      ListHit& h = L.accepted.emplace_back();
      h.com[0] = com[0]; h.com[1] = com[1]; h.com[2] = com[2];
      h.node = i;
      h.tag = tag;
      continue;
    }
    unsigned childTag = tag;
    if (Periodic && hoist && !tag && (state & ListEntry::kHoistable)) {
      childTag = hoistedImageTag(image);
      if (childTag) {  // this node takes its subtree's correction
        L.hx.push_back(com[0]); L.hy.push_back(com[1]); L.hz.push_back(com[2]);
        L.hm.push_back(t.mass[i]);
        L.hs.push_back(t.secondMoment[i]);
        L.hq.insert(L.hq.end(), &t.quad[6 * i], &t.quad[6 * i] + 6);
        pushDipole(t, i, L.hd);
      }
    }
    if (t.isLeaf(i)) {
      ListHit& h = L.leaves.emplace_back();
      h.node = i;
      h.tag = childTag;
    } else {
      // the children's tests in one pass, then pushed in reverse so they are visited in key order
      const std::uint32_t cb = t.childBegin[i];
      const int nc = int(t.childCount[i]);
      const std::size_t top = stack.size();
      stack.resize(top + std::size_t(nc));
      ListEntry* out = stack.data() + top;
      if (Periodic) {
        classifyChildren(t, view, glo, ghi, cb, nc, childTag, out);
      } else {  // the MAC alone: as fast per child (isolated 32^3 to 128^3 were 0.5-2% slower in lanes)
        for (int k = 0; k < nc; ++k)
          classifyNode<Periodic>(t, view, glo, ghi, cb + std::uint32_t(k), childTag, out[nc - 1 - k]);
      }
    }
  }
  fillNodes<Periodic>(t, halfUpper, L);
  fillCells<Periodic>(t, view, L);
}

// The periodic walk's lists in clones for AVX2 and the baseline, picked at load time (ifunc): the children's tests
// run four lanes at a time, and with SSE4.1 the image test's rint is one instruction instead of a branchy sequence.
// Contraction stays off in every clone (this file's flags), so each clone rounds every operation on its own, as the
// device's rules do: the same lists.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define AG_LIST_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AG_LIST_CLONES
#endif
AG_LIST_CLONES void buildPeriodicLists(const SourceTree& t, const SortedCells& c, const Groups& g, std::size_t gi,
                                       bool vote, bool halfUpper, bool hoist, WalkLists& L) {
  buildListsImpl<true>(t, c, g, gi, vote, halfUpper, hoist, L);
}

}  // namespace

template <bool Periodic>
void buildLists(const SourceTree& t, const SortedCells& c, const Groups& g, std::size_t gi, bool vote, bool halfUpper,
                bool hoist, WalkLists& L) {
  if (Periodic) buildPeriodicLists(t, c, g, gi, vote, halfUpper, hoist, L);
  else buildListsImpl<false>(t, c, g, gi, vote, halfUpper, hoist, L);
}

template void buildLists<false>(const SourceTree&, const SortedCells&, const Groups&, std::size_t, bool, bool, bool,
                                WalkLists&);
template void buildLists<true>(const SourceTree&, const SortedCells&, const Groups&, std::size_t, bool, bool, bool,
                               WalkLists&);

bool groupExpands(const EwaldTableView& v, const Groups& g, std::size_t gi) {
  return ewaldGroupExpands(v, &g.lo[3 * gi], &g.hi[3 * gi]);
}

}  // namespace amrgrav
