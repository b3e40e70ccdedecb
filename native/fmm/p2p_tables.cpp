/// \file p2p_tables.cpp
/// \brief The regular leaves' near field by table (see p2p_tables.h). Built with contraction and for several
/// instruction sets, as evaluate.cpp.
#include "fmm/p2p_tables.h"

#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "core/thread_pool.h"
#include "fmm/p2p_tiles_k.h"
#include "fmm/simd.h"

namespace amrgrav {
namespace fmm {
namespace {

// The lattice position of a leaf's k-th cell (x in the lowest bit, as tree/keys.h) and the slot of a leaf offset
// (-1 out of range): the device's rules (p2p_tiles_k.h), one definition for both.
void latticeOf(int k, int p[3]) { latticeOfK(k, p); }
int slotOf(int a, int b, int c) { return slotOfK(a, b, c); }

void fillTable(int a, int b, int c, P2pTable& t) {
  const int delta[3] = {4 * a, 4 * b, 4 * c};
  for (int d = 0; d < 3; ++d) t.delta[d] = delta[d];
  for (int s = 0; s < kTableCells; ++s) {
    int ps[3];
    latticeOf(s, ps);
    for (int u = 0; u < kTableCells; ++u) {
      int pt[3];
      latticeOf(u, pt);
      const int d[3] = {pt[0] - ps[0] - delta[0], pt[1] - ps[1] - delta[1], pt[2] - ps[2] - delta[2]};
      const double r2 = double(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);  // exact
      t.k[s * kTableCells + u] = r2 > 0 ? 1.0 / std::sqrt(r2) : 0.0;  // a cell with itself: no term
    }
  }
}

/// The process's tables: made once, never changed (solves on other threads may be reading them).
struct TableCache {
  std::mutex mu;
  std::unique_ptr<P2pTable> tables[kOffsetSlots];
};
TableCache& cache() {
  static TableCache c;
  return c;
}

/// The slot of the whole-leaf offset of `source` from `target` (both regular, same h) and of its opposite, or -1.
int leafOffsetSlot(const RegularLeaves& reg, std::uint32_t target, std::uint32_t source, const double shift[3],
                   int* opposite = nullptr) {
  if (!reg.regular[target] || !reg.regular[source] || reg.h[target] != reg.h[source]) return -1;
  const double h = reg.h[target];
  int a[3];
  for (int d = 0; d < 3; ++d) {
    const double cells = ((reg.origin[3 * source + d] + shift[d]) - reg.origin[3 * target + d]) / h;
    const double leaves = std::nearbyint(cells / 4);
    if (!(std::fabs(cells - 4 * leaves) <= 1e-9 * std::fmax(1.0, std::fabs(cells))) || std::fabs(leaves) > kMaxLeafOffset)
      return -1;
    a[d] = int(leaves);
  }
  if (opposite) *opposite = slotOf(-a[0], -a[1], -a[2]);
  return slotOf(a[0], a[1], a[2]);
}

}  // namespace

RegularLeaves findRegularLeaves(const FmmTree& t, const SortedCells& c, int threads) {
  const Octree& o = t.topo;
  const std::size_t n = o.nodeCount();
  RegularLeaves r;
  r.regular.assign(n, 0);
  r.origin.assign(3 * n, 0.0);
  r.h.assign(n, 0.0);
  // the device's rule (p2p_tiles_k.h regularLeaf: 64 cells of one size at their Morton lattice positions)
  TileBuildView v;
  v.nodes = std::uint32_t(n);
  v.childCount = o.childCount.data();
  v.cellBegin = o.cellBegin.data();
  v.cellCount = o.cellCount.data();
  v.x = c.x.data();
  v.y = c.y.data();
  v.z = c.z.data();
  v.size = c.size.data();
  v.regular = r.regular.data();
  v.origin = r.origin.data();
  v.h = r.h.data();
  parallelFor(n, 64, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) regularLeaf(v, std::uint32_t(i));
  });
  return r;
}

void P2pTables::prepare(const RegularLeaves& reg, const FmmLists& lists, int threads) {
  bool need[kOffsetSlots] = {};
  for (std::size_t i = 0; i < reg.regular.size(); ++i)
    if (reg.regular[i]) need[slotOf(0, 0, 0)] = true;
  for (std::size_t q = 0; q < lists.p2pA.size(); ++q) {
    int opposite = -1;
    double v[3];
    lists.shiftVector(lists.p2pShift[q], v);
    const int slot = leafOffsetSlot(reg, lists.p2pA[q], lists.p2pB[q], v, &opposite);
    if (slot < 0 || opposite < 0) continue;
    need[slot] = need[opposite] = true;
  }
  prepareNeeded(need, threads);
}

void P2pTables::prepareSlots(const std::vector<int>& slots, int threads) {
  bool need[kOffsetSlots] = {};
  for (const int s : slots)
    if (s >= 0 && s < kOffsetSlots) need[s] = true;
  prepareNeeded(need, threads);
}

void P2pTables::prepareNeeded(const bool need[kOffsetSlots], int threads) {
  TableCache& tc = cache();
  std::lock_guard<std::mutex> lock(tc.mu);
  auto& tables = tc.tables;
  std::vector<int> missing;
  for (int s = 0; s < kOffsetSlots; ++s)
    if (need[s] && !tables[s]) missing.push_back(s);
  std::vector<std::unique_ptr<P2pTable>> made(missing.size());
  parallelFor(missing.size(), 1, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t k = b; k < e; ++k) {
      made[k] = std::make_unique<P2pTable>();
      int a[3];
      slotOffset(missing[k], a);
      fillTable(a[0], a[1], a[2], *made[k]);
    }
  });
  for (std::size_t k = 0; k < missing.size(); ++k) tables[missing[k]] = std::move(made[k]);
  for (int s = 0; s < kOffsetSlots; ++s) byOffset_[s] = need[s] ? tables[s].get() : nullptr;
}

int P2pTables::findSlot(const RegularLeaves& reg, std::uint32_t target, std::uint32_t source,
                        const double shift[3]) const {
  int slot = -1;
  if (target == source && shift[0] == 0 && shift[1] == 0 && shift[2] == 0)
    slot = reg.regular[target] ? slotOf(0, 0, 0) : -1;
  else
    slot = leafOffsetSlot(reg, target, source, shift);
  return slot >= 0 && byOffset_[slot] ? slot : -1;
}

const P2pTable* P2pTables::find(const RegularLeaves& reg, std::uint32_t target, std::uint32_t source,
                                const double shift[3]) const {
  return bySlot(findSlot(reg, target, source, shift));
}

/// The lattice coordinates of the 64 cells, 8 per vector: lattice[axis][v] holds cells 8v .. 8v + 7.
struct LatticeVectors {
  Vd p[3][kTableCells / kLanes];
  LatticeVectors() {
    for (int k = 0; k < kTableCells; ++k) {
      int q[3];
      latticeOf(k, q);
      for (int d = 0; d < 3; ++d) p[d][k / kLanes][k % kLanes] = q[d];
    }
  }
};
const LatticeVectors& latticeVectors() {
  static const LatticeVectors v;
  return v;
}

AG_FMM_CLONES void tableP2P(const P2pTable& t, const double* m, double h, double* p, double* gx, double* gy,
                            double* gz) {
  constexpr int V = kTableCells / kLanes;
  Vd ap[V] = {}, ax[V] = {}, ay[V] = {}, az[V] = {};
  const LatticeVectors& lat = latticeVectors();
  const bool accel = gx != nullptr;
  for (int s = 0; s < kTableCells; ++s) {
    const double ms = m[s];
    const double* k = &t.k[s * kTableCells];
    int ps[3];
    latticeOf(s, ps);
    // d = p_t - (p_s + delta): small integers, exact
    const double sx = ps[0] + t.delta[0], sy = ps[1] + t.delta[1], sz = ps[2] + t.delta[2];
    for (int v = 0; v < V; ++v) {
      Vd row;
      std::memcpy(&row, k + v * kLanes, sizeof row);
      ap[v] += row * ms;
      if (!accel) continue;
      const Vd w = row * row * row * ms;
      ax[v] += (lat.p[0][v] - sx) * w;
      ay[v] += (lat.p[1][v] - sy) * w;
      az[v] += (lat.p[2][v] - sz) * w;
    }
  }
  const double ih = 1.0 / h, ih2 = ih * ih;
  for (int v = 0; v < V; ++v) {
    const Vd pv = ap[v] * ih;
    std::memcpy(p + v * kLanes, &pv, sizeof pv);
    if (!accel) continue;
    const Vd x = ax[v] * ih2, y = ay[v] * ih2, z = az[v] * ih2;
    std::memcpy(gx + v * kLanes, &x, sizeof x);
    std::memcpy(gy + v * kLanes, &y, sizeof y);
    std::memcpy(gz + v * kLanes, &z, sizeof z);
  }
}

AG_FMM_CLONES void tableP2PTwo(const P2pTable& t, const double* m0, double h0, double* p0, const double* m1, double h1,
                               double* p1) {
  constexpr int V = kTableCells / kLanes;
  Vd a0[V] = {}, a1[V] = {};
  for (int s = 0; s < kTableCells; ++s) {  // tableP2P's loop for two sources: each row read once for both
    const double ms0 = m0[s], ms1 = m1[s];
    const double* k = &t.k[s * kTableCells];
    for (int v = 0; v < V; ++v) {
      Vd row;
      std::memcpy(&row, k + v * kLanes, sizeof row);
      a0[v] += row * ms0;
      a1[v] += row * ms1;
    }
  }
  const double ih0 = 1.0 / h0, ih1 = 1.0 / h1;
  for (int v = 0; v < V; ++v) {
    const Vd q0 = a0[v] * ih0, q1 = a1[v] * ih1;
    std::memcpy(p0 + v * kLanes, &q0, sizeof q0);
    std::memcpy(p1 + v * kLanes, &q1, sizeof q1);
  }
}

}  // namespace fmm
}  // namespace amrgrav
