/// \file cpu_walk.cpp
/// \brief Group walk of the CPU backend. Loops run sources outer, the group's cells inner: the inner loop
/// vectorises without reassociating any sum, so each cell's sum has a fixed order (bitwise deterministic for any
/// thread count) and matches the scalar definition.
#include <algorithm>
#include <atomic>
#include <cassert>
#include <vector>

#include "ewald/expansion_k.h"
#include "ewald/walk_setup.h"
#include "physics/interact_k.h"
#include "physics/mac_k.h"
#include "cpu/cpu_walk.h"
#include "core/thread_pool.h"

namespace amrgrav {
namespace {

constexpr int kMaxGroup = 256;

/// Per-thread interaction lists, as structs of arrays.
struct Lists {
  std::vector<std::uint32_t> stack;
  std::vector<std::uint8_t> stackTag;     // periodic: the image tag of each stack entry (ewald/expansion_k.h)
  std::vector<double> nx, ny, nz, nm, q0, q1, q2, q3, q4, q5;  // accepted nodes
  std::vector<double> cx, cy, cz, cm;                          // cells of opened leaves
  std::vector<double> ns;                 // accepted nodes' second moments (periodic walks only)
  std::vector<double> nd;                 // accepted nodes' dipoles, 3 each (signed sources only)
  // periodic walks: does accepted node / cell k add its own correction? (not below a hoisted node)
  std::vector<std::uint8_t> nCorrect, cCorrect;
  // periodic walks: opened nodes that take the correction of their whole subtree (hoisted), plain quadrupoles
  std::vector<double> hx, hy, hz, hm, hs, hq, hd;
  const EwaldWalk* ewald = nullptr;       // periodic walks: table and moments; null when isolated
  bool expandEwald = true;                // periodic walks: small groups expand the correction (SolveOptions)
  void clear() {
    for (auto* v : {&nx, &ny, &nz, &nm, &q0, &q1, &q2, &q3, &q4, &q5, &cx, &cy, &cz, &cm, &ns, &nd, &hx, &hy, &hz, &hm,
                    &hs, &hq, &hd})
      v->clear();
    nCorrect.clear();
    cCorrect.clear();
  }
};

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
inline void pushDipole(const SourceTree& t, std::uint32_t i, std::vector<double>& out) {
  if (t.dipole) out.insert(out.end(), t.dipole + 3 * i, t.dipole + 3 * i + 3);
}

/// Interaction lists of group gi (cells of `c`) against the sources of `t`; accepted nodes carry their quadrupole
/// as is (forces) or, for the potential-only kernel, as half-upper coefficients (physics/interact_k.h).
/// Periodic: a node is seen through its image nearest the group (the MAC uses that distance), and a node whose
/// other images are too close, or whose separations leave the table (ewald/lookup_k.h periodicNodeImage), is
/// opened whatever the MAC. With `hoist` (an expanding group walking its own tree) the first usable node on each
/// path takes the correction of its subtree, and its subtree is seen through its image (ewald/expansion_k.h).
template <bool Periodic>
void buildLists(const SourceTree& t, const SortedCells& c, const Groups& g, std::size_t gi, bool vote, bool halfUpper,
                bool hoist, Lists& L) {
  const double* glo = &g.lo[3 * gi];
  const double* ghi = &g.hi[3 * gi];
  L.clear();
  L.stack.clear();
  L.stackTag.clear();
  L.stack.push_back(0);
  L.stackTag.push_back(0);
  while (!L.stack.empty()) {
    const std::uint32_t i = L.stack.back();
    const unsigned tag = L.stackTag.back();
    L.stack.pop_back();
    L.stackTag.pop_back();
    if (t.macRadius[i] < 0.0) continue;  // no mass at all (tree/moments.cpp): nothing to add
    double com[3] = {t.com[3 * i], t.com[3 * i + 1], t.com[3 * i + 2]};
    int image[3] = {0, 0, 0};
    // periodic: the node's image nearest the group, or must it be opened (its images too close, off the table)?
    // Below a hoisted node: the image of that node, no test (its correction is taken).
    bool usable = true, hoistable = false;
    if (Periodic) {
      const EwaldTableView& v = L.ewald->view;
      if (tag) {
        for (int d = 0; d < 3; ++d) com[d] = taggedImage(com[d], tag, d, v.period[d]);
      } else {
        usable = periodicNodeImage(v, glo, ghi, &t.com[3 * i], t.macRadius[i], com, image, &hoistable);
      }
    }
    // what the box accepts every cell accepts (each cell is in the box), so the vote only revisits box rejections
    if (usable && (macAccepts(com[0], com[1], com[2], t.macRadius[i], glo, ghi) ||
                   (vote && everyCellAccepts(t, com, i, c, g.begin[gi], g.count[gi])))) {
      L.nx.push_back(com[0]); L.ny.push_back(com[1]); L.nz.push_back(com[2]);
      L.nm.push_back(t.mass[i]);
      if (Periodic) {
        L.ns.push_back(t.secondMoment[i]);
        L.nCorrect.push_back(tag ? 0 : 1);
        pushDipole(t, i, L.nd);
      }
      double h[6];
      const double* q = &t.quad[6 * i];
      if (halfUpper) {
        halfUpperQuadrupole(q, h);
        q = h;
      }
      L.q0.push_back(q[0]); L.q1.push_back(q[1]); L.q2.push_back(q[2]);
      L.q3.push_back(q[3]); L.q4.push_back(q[4]); L.q5.push_back(q[5]);
      continue;
    }
    unsigned childTag = tag;
    if (Periodic && hoist && !tag && hoistable) {
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
      const std::uint32_t b = t.cellBegin[i], e = b + t.cellCount[i];
      if (Periodic && childTag) {
        const EwaldTableView& v = L.ewald->view;
        for (std::uint32_t j = b; j < e; ++j) {
          L.cx.push_back(taggedImage(t.x[j], childTag, 0, v.period[0]));
          L.cy.push_back(taggedImage(t.y[j], childTag, 1, v.period[1]));
          L.cz.push_back(taggedImage(t.z[j], childTag, 2, v.period[2]));
        }
      } else {
        L.cx.insert(L.cx.end(), t.x + b, t.x + e);
        L.cy.insert(L.cy.end(), t.y + b, t.y + e);
        L.cz.insert(L.cz.end(), t.z + b, t.z + e);
      }
      L.cm.insert(L.cm.end(), t.cellMass + b, t.cellMass + e);
      if (Periodic) L.cCorrect.insert(L.cCorrect.end(), e - b, childTag ? 0 : 1);
    } else {
      // push in reverse so children are visited in key order
      for (int k = int(t.childCount[i]) - 1; k >= 0; --k) {
        L.stack.push_back(t.childBegin[i] + std::uint32_t(k));
        L.stackTag.push_back(std::uint8_t(childTag));
      }
    }
  }
}

/// The expansion's coefficients a (ewald/expansion_k.h) of a group's lists: accepted nodes that add their
/// own correction, hoisted nodes, and cells that add their own (seen through their image nearest the centre).
/// One table lookup per entry that adds a correction, kLanes such entries at a time (the loop over lanes
/// vectorises: gathered table loads, contiguous partial sums). The partial
/// sums are added in lane order at the end: a fixed order, so the result is the same for any thread count.
constexpr int kLanes = 8;
struct LaneSums {
  double* p;
  int lane;
  double& operator[](int e) const { return p[e * kLanes + lane]; }
};
template <int Order, bool Accel, bool Dipole>
inline __attribute__((always_inline)) void ewaldExpansionTerms(const Lists& L, const double* centre,
                                                               double* a) {
  alignas(64) double part[kEwaldLocalCoefs * kLanes] = {};
  const EwaldTableView v = L.ewald->view;  // a local copy: provably not aliased by the sums
  const double cx = centre[0], cy = centre[1], cz = centre[2];
  std::uint32_t idx[kLanes];
  // accepted nodes that add their own correction (their com already at the image nearest the group)
  const std::size_t nn = L.nm.size();
  for (std::size_t k0 = 0; k0 < nn;) {
    int lanes = 0;
    for (; k0 < nn && lanes < kLanes; ++k0) if (L.nCorrect[k0]) idx[lanes++] = std::uint32_t(k0);
#pragma GCC ivdep
    for (int l = 0; l < lanes; ++l) {
      const std::size_t k = idx[l];
      // the correction takes the plain quadrupole; the potential-only list holds half-upper coefficients (exact x2)
      const double qf[6] = {Accel ? L.q0[k] : 2 * L.q0[k], L.q1[k], L.q2[k], Accel ? L.q3[k] : 2 * L.q3[k], L.q4[k],
                            Accel ? L.q5[k] : 2 * L.q5[k]};
      ewaldLocalAddNode<Order>(v, cx - L.nx[k], cy - L.ny[k], cz - L.nz[k], L.nm[k], qf, L.ns[k], LaneSums{part, l},
                               Dipole ? &L.nd[3 * k] : nullptr);
    }
  }
  // hoisted nodes: the correction of their subtrees
  const std::size_t nh = L.hm.size();
  for (std::size_t k0 = 0; k0 < nh; k0 += kLanes) {
    const int lanes = int(std::min<std::size_t>(kLanes, nh - k0));
#pragma GCC ivdep
    for (int l = 0; l < lanes; ++l) {
      const std::size_t k = k0 + l;
      ewaldLocalAddNode<Order>(v, cx - L.hx[k], cy - L.hy[k], cz - L.hz[k], L.hm[k], &L.hq[6 * k], L.hs[k],
                               LaneSums{part, l}, Dipole ? &L.hd[3 * k] : nullptr);
    }
  }
  // cells that add their own correction, through their image nearest the centre (a whole number of periods; none
  // for the group's own cells)
  const std::size_t nc = L.cm.size();
  for (std::size_t k0 = 0; k0 < nc;) {
    int lanes = 0;
    for (; k0 < nc && lanes < kLanes; ++k0) if (L.cCorrect[k0]) idx[lanes++] = std::uint32_t(k0);
#pragma GCC ivdep
    for (int l = 0; l < lanes; ++l) {
      const std::size_t k = idx[l];
      const double sx = L.cx[k] - v.period[0] * std::rint((L.cx[k] - cx) * v.invPeriod[0]);
      const double sy = L.cy[k] - v.period[1] * std::rint((L.cy[k] - cy) * v.invPeriod[1]);
      const double sz = L.cz[k] - v.period[2] * std::rint((L.cz[k] - cz) * v.invPeriod[2]);
      ewaldLocalAddCell(v, cx - sx, cy - sy, cz - sz, L.cm[k], LaneSums{part, l});
    }
  }
  for (int e = 0; e < kEwaldLocalCoefs; ++e) {
    double t = 0;
    for (int l = 0; l < kLanes; ++l) t += part[e * kLanes + l];
    a[e] = t;
  }
}

/// Periodic walks: with `centre` (the group's, ewald/expansion_k.h) the correction is one expansion about it,
/// summed once per source and evaluated once per cell, and source cells are seen through their image nearest the
/// centre; without, every (cell, source) pair looks the table up through its own nearest image. Dipole: the nodes
/// carry dipoles (signed sources, periodic walks only).
template <int Order, bool Accel, bool Periodic, bool Dipole>
inline __attribute__((always_inline)) void evaluateLists(const Lists& L, const double* tx, const double* ty,
                                                         const double* tz, int nt, const double* centre, double* phi,
                                                         double* gx, double* gy, double* gz) {
  double p[kMaxGroup], fx[kMaxGroup], fy[kMaxGroup], fz[kMaxGroup], qx[kMaxGroup], qy[kMaxGroup], qz[kMaxGroup];
  for (int i = 0; i < nt; ++i) { p[i] = 0; fx[i] = 0; fy[i] = 0; fz[i] = 0; qx[i] = 0; qy[i] = 0; qz[i] = 0; }
  const bool expand = Periodic && centre;
  double a[kEwaldLocalCoefs] = {};  // the expansion's coefficients (expand only)
  const std::size_t nn = L.nm.size();
  for (std::size_t k = 0; k < nn; ++k) {
    const double sx = L.nx[k], sy = L.ny[k], sz = L.nz[k], sm = L.nm[k];
    const double q[6] = {L.q0[k], L.q1[k], L.q2[k], L.q3[k], L.q4[k], L.q5[k]};
    // signed sources are expanded about the MAC centre with a dipole (tree/moments.cpp)
    const double pd[3] = {Dipole ? L.nd[3 * k] : 0.0, Dipole ? L.nd[3 * k + 1] : 0.0, Dipole ? L.nd[3 * k + 2] : 0.0};
#pragma GCC ivdep
    for (int i = 0; i < nt; ++i) {
      if (Accel)
        nodeCellForce<double, Order, Dipole>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, q, p[i], fx[i], fy[i], fz[i],
                                             qx[i], qy[i], qz[i], pd);
      else nodeCellPotential<double, Order, Dipole>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, q, p[i], pd);
    }
    if (Periodic) {  // the node's other images; its com is already the image nearest the group
      const EwaldTableView v = L.ewald->view;  // a local copy: provably not aliased by the outputs
      // the correction takes the plain quadrupole; the potential-only list holds half-upper coefficients (exact x2)
      const double qf[6] = {Accel ? q[0] : 2 * q[0], q[1], q[2], Accel ? q[3] : 2 * q[3], q[4], Accel ? q[5] : 2 * q[5]};
      if (expand) continue;  // the expansion's terms: ewaldExpansionTerms, after the lists
#pragma GCC ivdep
      for (int i = 0; i < nt; ++i)
        ewaldNodeCorrection<Order, Accel, Dipole>(v, tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, qf, L.ns[k], p[i],
                                                  fx[i], fy[i], fz[i], pd);
    }
  }
  const std::size_t nc = L.cm.size();
  for (std::size_t k = 0; k < nc; ++k) {
    double sx = L.cx[k], sy = L.cy[k], sz = L.cz[k];
    const double sm = L.cm[k];
    if (Periodic && !expand) {  // each pair through its nearest image, plus the other images (C(0) for the cell)
      const EwaldTableView v = L.ewald->view;  // a local copy: provably not aliased by the outputs
#pragma GCC ivdep
      for (int i = 0; i < nt; ++i) {
        const double dx = nearestImage(tx[i] - sx, v.period[0], v.invPeriod[0]);
        const double dy = nearestImage(ty[i] - sy, v.period[1], v.invPeriod[1]);
        const double dz = nearestImage(tz[i] - sz, v.period[2], v.invPeriod[2]);
        if (Accel) cellCellForce<double>(dx, dy, dz, sm, p[i], fx[i], fy[i], fz[i]);
        else cellCellPotential<double>(dx, dy, dz, sm, p[i]);
        ewaldCellCorrection<Accel>(v, dx, dy, dz, sm, p[i], fx[i], fy[i], fz[i]);
      }
      continue;
    }
    const bool correct = expand && L.cCorrect[k];  // else seen through a hoisted node's image, already corrected
    if (correct) {  // the image nearest the centre: a whole number of periods (none for the group's own cells)
      const EwaldTableView& v = L.ewald->view;
      sx -= v.period[0] * std::rint((sx - centre[0]) * v.invPeriod[0]);
      sy -= v.period[1] * std::rint((sy - centre[1]) * v.invPeriod[1]);
      sz -= v.period[2] * std::rint((sz - centre[2]) * v.invPeriod[2]);
    }
#pragma GCC ivdep
    for (int i = 0; i < nt; ++i) {
      if (Accel) cellCellForce<double>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, p[i], fx[i], fy[i], fz[i]);
      else cellCellPotential<double>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, p[i]);
    }
  }
  if (expand) ewaldExpansionTerms<Order, Accel, Dipole>(L, centre, a);
  for (int i = 0; i < nt; ++i) {
    double ex = 0, ey = 0, ez = 0;
    if (expand) ewaldLocalEval<Accel>(a, tx[i] - centre[0], ty[i] - centre[1], tz[i] - centre[2], p[i], ex, ey, ez);
    phi[i] = p[i];
    if (Accel) { gx[i] = fx[i] - qx[i] + ex; gy[i] = fy[i] - qy[i] + ey; gz[i] = fz[i] - qz[i] + ez; }
  }
}

// The evaluation loops are compiled for several instruction sets and picked at load time (ifunc), so one binary
// runs everywhere and uses AVX-512 or AVX2 where the processor has them.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define AG_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define AG_MULTIVERSION
#endif

using EvalFn = void (*)(const Lists&, const double*, const double*, const double*, int, const double*, double*,
                        double*, double*, double*);
#define AG_EVAL(NAME, ORDER, ACCEL, PERIODIC, DIPOLE)                                                             \
  AG_MULTIVERSION void NAME(const Lists& L, const double* x, const double* y, const double* z, int n,             \
                            const double* centre, double* p, double* gx, double* gy, double* gz) {                \
    evaluateLists<ORDER, ACCEL, PERIODIC, DIPOLE>(L, x, y, z, n, centre, p, gx, gy, gz);                          \
  }
AG_EVAL(evalPot1, 1, false, false, false)
AG_EVAL(evalPot2, 2, false, false, false)
AG_EVAL(evalForce1, 1, true, false, false)
AG_EVAL(evalForce2, 2, true, false, false)
AG_EVAL(evalPerPot1, 1, false, true, false)
AG_EVAL(evalPerPot2, 2, false, true, false)
AG_EVAL(evalPerForce1, 1, true, true, false)
AG_EVAL(evalPerForce2, 2, true, true, false)
AG_EVAL(evalSignedPot1, 1, false, true, true)
AG_EVAL(evalSignedPot2, 2, false, true, true)
AG_EVAL(evalSignedForce1, 1, true, true, true)
AG_EVAL(evalSignedForce2, 2, true, true, true)
#undef AG_EVAL

/// The evaluator of a walk: isolated, periodic, or periodic with the dipoles of signed sources.
EvalFn pickEval(int order, bool accel, bool periodic, bool dipole) {
  static constexpr EvalFn fns[3][2][2] = {{{evalPot1, evalForce1}, {evalPot2, evalForce2}},
                                          {{evalPerPot1, evalPerForce1}, {evalPerPot2, evalPerForce2}},
                                          {{evalSignedPot1, evalSignedForce1}, {evalSignedPot2, evalSignedForce2}}};
  return fns[periodic ? (dipole ? 2 : 1) : 0][order == 1 ? 0 : 1][accel ? 1 : 0];
}

template <bool Accel, bool Periodic>
void walkRange(const SourceTree& t, const SortedCells& c, const Groups& g, std::size_t gb, std::size_t ge, bool vote,
               WalkPass pass, EvalFn eval, Lists& L, WalkOutput& out, std::uint64_t& approx, std::uint64_t& direct) {
  for (std::size_t gi = gb; gi < ge; ++gi) {
    // periodic: small groups take the correction as one expansion about their centre
    const bool expand = Periodic && L.expandEwald && ewaldGroupExpands(L.ewald->view, &g.lo[3 * gi], &g.hi[3 * gi]);
    buildLists<Periodic>(t, c, g, gi, vote, !Accel, expand && pass.hoistCorrection, L);
    const std::uint32_t b = g.begin[gi];
    const int nt = int(g.count[gi]);
    double centre[3];
    for (int d = 0; d < 3; ++d) centre[d] = 0.5 * (g.lo[3 * gi + d] + g.hi[3 * gi + d]);
    const double* ctr = expand ? centre : nullptr;
    if (pass.accumulate) {
      // a further source tree (a LET): its sums are added to the local tree's, tree by tree in a fixed order
      double p[kMaxGroup], fx[kMaxGroup], fy[kMaxGroup], fz[kMaxGroup];
      eval(L, &c.x[b], &c.y[b], &c.z[b], nt, ctr, p, fx, fy, fz);
      for (int i = 0; i < nt; ++i) {
        out.phi[b + i] += p[i];
        if (Accel) { out.gx[b + i] += fx[i]; out.gy[b + i] += fy[i]; out.gz[b + i] += fz[i]; }
      }
    } else {
      eval(L, &c.x[b], &c.y[b], &c.z[b], nt, ctr, out.phi + b, Accel ? out.gx + b : nullptr,
                                  Accel ? out.gy + b : nullptr, Accel ? out.gz + b : nullptr);
    }
    approx += std::uint64_t(nt) * L.nm.size();
    // in its own tree every cell of the group meets itself in the opened leaves; that pair is not an interaction
    const std::size_t self = pass.sourcesAreTargets ? std::min<std::size_t>(L.cm.size(), 1) : 0;
    direct += std::uint64_t(nt) * (L.cm.size() - self);
  }
}

}  // namespace

void walkGroups(const SourceTree& t, const SortedCells& c, const Groups& g, std::size_t gb, std::size_t ge,
                const SolveOptions& opt, int threads, WalkPass pass, WalkOutput& out, const EwaldWalk* ewald) {
  if (t.nodeCount == 0 || ge <= gb) return;
  assert(!ewald || t.secondMoment);  // every periodic source tree carries its nodes' second moments
  assert(!t.dipole || ewald);        // signed sources only in (fully) periodic boxes
  std::vector<Lists> lists(std::max(1, threads));
  for (auto& l : lists) {
    l.ewald = ewald;
    l.expandEwald = opt.ewaldExpansion;
  }
  std::atomic<std::uint64_t> approx{0}, direct{0};
  const bool accel = out.gx != nullptr;
  const bool vote = opt.walk == WalkKind::Vote;
  const EvalFn eval = pickEval(opt.order, accel, ewald != nullptr, t.dipole != nullptr);
  parallelFor(ge - gb, 8, threads, [&](std::size_t b, std::size_t e, int tid) {
    std::uint64_t a = 0, d = 0;
    b += gb;
    e += gb;
    Lists& L = lists[tid];
    if (ewald) {
      if (accel) walkRange<true, true>(t, c, g, b, e, vote, pass, eval, L, out, a, d);
      else walkRange<false, true>(t, c, g, b, e, vote, pass, eval, L, out, a, d);
    } else {
      if (accel) walkRange<true, false>(t, c, g, b, e, vote, pass, eval, L, out, a, d);
      else walkRange<false, false>(t, c, g, b, e, vote, pass, eval, L, out, a, d);
    }
    approx += a;
    direct += d;
  });
  out.approx += approx;
  out.direct += direct;
}

void walkAllGroups(const Octree& t, const SortedCells& c, const Groups& g, const SolveOptions& opt, int threads,
                   WalkOutput& out, const EwaldWalk* ewald) {
  SourceTree src = sourceTreeOf(t, c);
  if (ewald) src.secondMoment = ewald->nodeS.data();
  walkGroups(src, c, g, 0, g.size(), opt, threads, WalkPass{false, true}, out, ewald);
}

namespace {

/// Direct sums for one block of targets against all sources, sources outer (see the file comment).
template <bool Accel>
inline __attribute__((always_inline)) void directBlock(const SortedCells& c, std::size_t b, int nt, double* p,
                                                      double* fx, double* fy, double* fz) {
  const std::size_t n = c.order.size();
  const double *tx = &c.x[b], *ty = &c.y[b], *tz = &c.z[b];
  for (int i = 0; i < nt; ++i) { p[i] = 0; fx[i] = 0; fy[i] = 0; fz[i] = 0; }
  for (std::size_t k = 0; k < n; ++k) {
    const double sx = c.x[k], sy = c.y[k], sz = c.z[k], sm = c.mass[k];
#pragma GCC ivdep
    for (int i = 0; i < nt; ++i) {
      if (Accel) cellCellForce<double>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, p[i], fx[i], fy[i], fz[i]);
      else cellCellPotential<double>(tx[i] - sx, ty[i] - sy, tz[i] - sz, sm, p[i]);
    }
  }
}
AG_MULTIVERSION void directBlockPot(const SortedCells& c, std::size_t b, int nt, double* p, double* fx, double* fy,
                                    double* fz) { directBlock<false>(c, b, nt, p, fx, fy, fz); }
AG_MULTIVERSION void directBlockForce(const SortedCells& c, std::size_t b, int nt, double* p, double* fx, double* fy,
                                      double* fz) { directBlock<true>(c, b, nt, p, fx, fy, fz); }

}  // namespace

void directAll(const SortedCells& c, bool accel, int threads, WalkOutput& out) {
  const std::size_t n = c.order.size();
  constexpr std::size_t kBlock = 64;
  parallelFor((n + kBlock - 1) / kBlock, 4, threads, [&](std::size_t bb, std::size_t be, int) {
    double p[kBlock], fx[kBlock], fy[kBlock], fz[kBlock];
    for (std::size_t blk = bb; blk < be; ++blk) {
      const std::size_t b = blk * kBlock;
      const int nt = int(std::min(n, b + kBlock) - b);
      (accel ? directBlockForce : directBlockPot)(c, b, nt, p, fx, fy, fz);
      for (int i = 0; i < nt; ++i) {
        out.phi[b + i] = p[i];
        if (accel) { out.gx[b + i] = fx[i]; out.gy[b + i] = fy[i]; out.gz[b + i] = fz[i]; }
      }
    }
  });
  out.direct = n > 0 ? std::uint64_t(n) * (n - 1) : 0;
}

}  // namespace amrgrav
