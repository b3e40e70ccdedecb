/// \file fmm_let.cpp
/// \brief The FMM's LETs: the reach of a tree's leaves, the choice of a LET, its packing and view, and the receiver's
/// one-sided traversal (see fmm_let.h). Compiled without contraction: the rules decide what travels and the lists.
#include "fmm/fmm_let.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "core/thread_pool.h"
#include "fmm/interaction_lists.h"
#include "let/let_layout.h"
#include "physics/fmm_let_k.h"
#include "physics/fmm_mac_k.h"

namespace amrgrav {
namespace fmm {
namespace {

constexpr std::size_t kHeaderWords = 5;  // magic, nodes, cells, order, dipoles

/// Byte offsets of a packed FMM LET's arrays (see packFmmLet).
struct FmmLetLayout {
  std::size_t centre, radius, critical, absMass, lowBound, norms, M, x, y, z, mass, cellBegin, cellCount, childBegin,
      childCount, kind, end;
  FmmLetLayout(std::size_t n, std::size_t c, int order, bool dipoles) {
    const std::size_t terms = std::size_t((order + 1) * (order + 2) * (order + 3) / 6), stride = (terms + 7) / 8 * 8;
    std::size_t o = kHeaderWords * 8;
    centre = o; o += 24 * n;
    radius = o; o += 8 * n;
    critical = o; o += 8 * n;
    absMass = o; o += 8 * n;
    lowBound = o; o += 8 * n;
    norms = o; o += dipoles ? 8 * std::size_t(order + 1) * n : 0;
    M = o; o += 8 * stride * n;
    x = o; o += 8 * c;
    y = o; o += 8 * c;
    z = o; o += 8 * c;
    mass = o; o += 8 * c;
    cellBegin = o; o += 4 * n;
    cellCount = o; o += 4 * n;
    childBegin = o; o += 4 * n;
    childCount = o; o += n;
    kind = o; o += n;
    end = (o + 7) / 8 * 8;
  }
};

/// The shifts a pair is formed with: every image within one period (periodic), or none.
int shiftCount(const double* period) { return period ? 27 : 1; }
std::uint8_t shiftAt(const double* period, int k) { return period ? std::uint8_t(k) : kNoShift; }

}  // namespace

FmmReach reachOf(const FmmTree& t) {
  FmmReach r;
  for (int d = 0; d < 3; ++d) { r.lo[d] = INFINITY; r.hi[d] = -INFINITY; }
  r.lowBound = INFINITY;
  const std::size_t np = std::size_t(t.order) + 1;
  for (std::size_t i = 0; i < t.nodeCount(); ++i) {
    if (!t.isLeaf(i)) continue;
    for (int d = 0; d < 3; ++d) {
      r.lo[d] = std::min(r.lo[d], t.centre[3 * i + d]);
      r.hi[d] = std::max(r.hi[d], t.centre[3 * i + d]);
    }
    r.radius = std::max(r.radius, t.radius[i]);
    r.critical = std::max(r.critical, t.critical[i]);
    r.absMass = std::max(r.absMass, t.absMass[i]);
    r.lowBound = std::min(r.lowBound, t.lowBound[i]);
    if (t.dipoles)
      for (std::size_t n = 0; n < np && n < 8; ++n) r.norms[n] = std::max(r.norms[n], t.norms[i * np + n]);
    r.leaves += 1;
  }
  if (r.leaves == 0) r.lowBound = 0;
  return r;
}

void selectFmmLet(const FmmTree& t, const FmmReach& reach, double tolerance, const double* period,
                  FmmLetSelection& out) {
  out.node.clear();
  out.kind.clear();
  out.cellCount = 0;
  if (t.nodeCount() == 0) return;
  FmmLists geo;
  if (period)
    for (int d = 0; d < 3; ++d) geo.period[d] = period[d];
  const std::size_t np = std::size_t(t.order) + 1;
  auto childless = [&](std::uint32_t b) {
    for (int k = 0; k < shiftCount(period); ++k) {
      double v[3];
      geo.shiftVector(shiftAt(period, k), v);
      const double* cb = &t.centre[3 * b];
      const double c[3] = {cb[0] + v[0], cb[1] + v[1], cb[2] + v[2]};  // as the receiver moves it
      const bool ok = t.dipoles ? fmmSignedBoxAccepts(reach.lo, reach.hi, reach.radius, reach.critical, reach.norms, c,
                                                      t.radius[b], t.critical[b], &t.norms[b * np], reach.lowBound,
                                                      t.order, tolerance)
                                : fmmBoxAccepts(reach.lo, reach.hi, reach.radius, reach.critical, reach.absMass,
                                                reach.lowBound, c, t.radius[b], t.critical[b], t.absMass[b],
                                                t.lowBound[b], t.order, tolerance);
      if (!ok) return false;
    }
    return true;
  };
  const Octree& o = t.topo;
  out.node.push_back(0);
  for (std::size_t i = 0; i < out.node.size(); ++i) {  // breadth-first: a node's children are contiguous
    const std::uint32_t b = out.node[i];
    if (childless(b)) {
      out.kind.push_back(FmmLetSelection::Accepted);
    } else if (o.isLeaf(b)) {
      out.kind.push_back(FmmLetSelection::OpenedLeaf);
      out.cellCount += o.cellCount[b];
    } else {
      out.kind.push_back(FmmLetSelection::Opened);
      for (std::uint32_t c = 0; c < o.childCount[b]; ++c) out.node.push_back(o.childBegin[b] + c);
    }
  }
}

std::size_t packedFmmLetBytes(std::size_t nodes, std::size_t cells, int order, bool dipoles) {
  return FmmLetLayout(nodes, cells, order, dipoles).end;
}

void packFmmLet(const FmmTree& t, const SortedCells& c, const FmmLetSelection& sel, PackedLet& out) {
  const std::size_t n = sel.node.size(), nc = sel.cellCount, np = std::size_t(t.order) + 1;
  const FmmLetLayout L(n, nc, t.order, t.dipoles);
  out.words.assign(L.end / 8, 0);
  std::uint64_t* w = out.words.data();
  w[0] = kFmmLetMagic;
  w[1] = n;
  w[2] = nc;
  w[3] = std::uint64_t(t.order);
  w[4] = t.dipoles ? 1 : 0;
  char* base = reinterpret_cast<char*>(w);
  auto d = [&](std::size_t off) { return reinterpret_cast<double*>(base + off); };
  auto u = [&](std::size_t off) { return reinterpret_cast<std::uint32_t*>(base + off); };
  auto b8 = [&](std::size_t off) { return reinterpret_cast<std::uint8_t*>(base + off); };
  const Octree& o = t.topo;
  std::uint32_t nextChild = 1, nextCell = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint32_t i = sel.node[k];
    for (int q = 0; q < 3; ++q) d(L.centre)[3 * k + q] = t.centre[3 * i + q];
    d(L.radius)[k] = t.radius[i];
    d(L.critical)[k] = t.critical[i];
    d(L.absMass)[k] = t.absMass[i];
    d(L.lowBound)[k] = t.lowBound[i];
    if (t.dipoles) std::memcpy(d(L.norms) + k * np, &t.norms[i * np], np * sizeof(double));
    std::memcpy(d(L.M) + k * t.mStride, &t.M[std::size_t(i) * t.mStride], t.mStride * sizeof(double));
    b8(L.kind)[k] = sel.kind[k];
    if (sel.kind[k] == FmmLetSelection::Opened) {
      u(L.childBegin)[k] = nextChild;
      b8(L.childCount)[k] = o.childCount[i];
      nextChild += o.childCount[i];
    } else if (sel.kind[k] == FmmLetSelection::OpenedLeaf) {
      u(L.cellBegin)[k] = nextCell;
      u(L.cellCount)[k] = o.cellCount[i];
      for (std::uint32_t j = 0; j < o.cellCount[i]; ++j) {
        const std::uint32_t s = o.cellBegin[i] + j;
        d(L.x)[nextCell + j] = c.x[s];
        d(L.y)[nextCell + j] = c.y[s];
        d(L.z)[nextCell + j] = c.z[s];
        d(L.mass)[nextCell + j] = c.mass[s];
      }
      nextCell += o.cellCount[i];
    }
  }
}

Status viewFmmLet(const std::uint64_t* w, std::size_t bytes, const FmmTree& t, FmmLetView& v) {
  auto bad = [](const std::string& why) { return Status::error(ErrorCode::Internal, "received FMM LET: " + why); };
  if (bytes < kHeaderWords * 8 || w[0] != kFmmLetMagic) return bad("not an FMM LET");
  if (w[3] != std::uint64_t(t.order) || w[4] != (t.dipoles ? 1u : 0u))
    return bad("expansion order or kind differs from this rank's");
  if (w[1] > (1ull << 32) || w[2] > (1ull << 32)) return bad("too many nodes or cells");
  const std::size_t n = w[1], nc = w[2];
  const FmmLetLayout L(n, nc, t.order, t.dipoles);
  if (L.end != bytes) return bad("size does not match its header");
  const char* base = reinterpret_cast<const char*>(w);
  auto d = [&](std::size_t off) { return reinterpret_cast<const double*>(base + off); };
  auto u = [&](std::size_t off) { return reinterpret_cast<const std::uint32_t*>(base + off); };
  auto b8 = [&](std::size_t off) { return reinterpret_cast<const std::uint8_t*>(base + off); };
  v.nodes = n;
  v.cells = nc;
  v.centre = d(L.centre);
  v.radius = d(L.radius);
  v.critical = d(L.critical);
  v.absMass = d(L.absMass);
  v.lowBound = d(L.lowBound);
  v.norms = t.dipoles ? d(L.norms) : nullptr;
  v.M = d(L.M);
  v.x = d(L.x);
  v.y = d(L.y);
  v.z = d(L.z);
  v.mass = d(L.mass);
  v.cellBegin = u(L.cellBegin);
  v.cellCount = u(L.cellCount);
  v.childBegin = u(L.childBegin);
  v.childCount = b8(L.childCount);
  v.kind = b8(L.kind);
  // links inside the buffer: children after their parent, cells within the LET's
  for (std::size_t k = 0; k < n; ++k) {
    if (v.kind[k] > FmmLetSelection::Opened) return bad("unknown node kind");
    if (v.kind[k] == FmmLetSelection::Opened &&
        (v.childCount[k] == 0 || v.childCount[k] > 8 || v.childBegin[k] <= k ||
         std::size_t(v.childBegin[k]) + v.childCount[k] > n))
      return bad("child link out of range");
    if (v.kind[k] == FmmLetSelection::OpenedLeaf && std::size_t(v.cellBegin[k]) + v.cellCount[k] > nc)
      return bad("cell range out of range");
  }
  return Status::success();
}

namespace {

struct Task {
  std::uint32_t a, b;
  std::uint8_t shift;
};

/// The receiver's traversal (fmm_let.h): the one-process pair test, one-sided; a failing pair opens the LET's node
/// when it has children and is at least as large as the target (or the target is a leaf), else the target.
struct LetWalker {
  const FmmTree& t;
  const FmmLetView& let;
  double tolerance;
  const FmmLists& geo;
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint8_t>> m2l, p2p;
  bool stuck = false;

  bool accepts(std::uint32_t A, std::uint32_t B, std::uint8_t shift) const {
    const double* cb = &let.centre[3 * B];
    double v[3];
    geo.shiftVector(shift, v);
    const double c[3] = {cb[0] + v[0], cb[1] + v[1], cb[2] + v[2]};
    if (t.dipoles) {
      const std::size_t np = std::size_t(t.order) + 1;
      return fmmSignedPairAccepts(&t.centre[3 * A], t.radius[A], t.critical[A], &t.norms[A * np], c, let.radius[B],
                                  let.critical[B], &let.norms[B * np], t.lowBound[A], t.order, tolerance);
    }
    return fmmPairAccepts(&t.centre[3 * A], t.radius[A], t.critical[A], t.absMass[A], t.lowBound[A], c, let.radius[B],
                          let.critical[B], let.absMass[B], let.lowBound[B], t.order, tolerance);
  }

  template <class Push>
  void step(Task k, Push&& push) {
    if (accepts(k.a, k.b, k.shift)) {
      m2l.emplace_back(k.a, k.b, k.shift);
      return;
    }
    const Octree& o = t.topo;
    const bool la = o.isLeaf(k.a);
    const std::uint8_t kb = let.kind[k.b];
    if (kb == FmmLetSelection::Accepted && la) {  // cannot happen (physics/fmm_let_k.h); reported, never skipped
      stuck = true;
      return;
    }
    const bool lb = kb != FmmLetSelection::Opened;
    if (la && lb) {
      p2p.emplace_back(k.a, k.b, k.shift);
      return;
    }
    const bool openA =
        !la && (lb || fmmOpensFirst(t.radius[k.a], &t.centre[3 * k.a], let.radius[k.b], &let.centre[3 * k.b]));
    if (openA) {
      for (std::uint32_t c = 0; c < o.childCount[k.a]; ++c) push(Task{o.childBegin[k.a] + c, k.b, k.shift});
    } else {
      for (std::uint32_t c = 0; c < let.childCount[k.b]; ++c) push(Task{k.a, let.childBegin[k.b] + c, k.shift});
    }
  }

  void run(Task k) {
    step(k, [&](Task c) { run(c); });
  }
};

/// CSR by target of sorted (target, source, shift) entries.
void toCsr(std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint8_t>>& e, std::size_t targets,
           std::vector<std::uint32_t>& start, std::vector<std::uint32_t>& source, std::vector<std::uint8_t>& shift) {
  std::sort(e.begin(), e.end());
  start.assign(targets + 1, 0);
  source.resize(e.size());
  shift.resize(e.size());
  for (std::size_t q = 0; q < e.size(); ++q) {
    ++start[std::get<0>(e[q]) + 1];
    source[q] = std::get<1>(e[q]);
    shift[q] = std::get<2>(e[q]);
  }
  for (std::size_t i = 0; i < targets; ++i) start[i + 1] += start[i];
}

constexpr int kSplitRounds = 3;

}  // namespace

Status fmmLetLists(const FmmTree& t, const FmmLetView& let, double tolerance, const double* period, int threads,
                   ExternalSources& out) {
  out = ExternalSources{};
  const std::size_t n = t.nodeCount();
  out.m2lStart.assign(n + 1, 0);
  out.p2pStart.assign(n + 1, 0);
  if (period)
    for (int d = 0; d < 3; ++d) out.geo.period[d] = period[d];
  out.M = let.M;
  out.centre = let.centre;
  out.cellBegin = let.cellBegin;
  out.cellCount = let.cellCount;
  out.x = let.x;
  out.y = let.y;
  out.z = let.z;
  out.mass = let.mass;
  if (n == 0 || let.nodes == 0) return Status::success();
  LetWalker head{t, let, tolerance, out.geo, {}, {}, false};
  std::vector<Task> tasks;
  for (int k = 0; k < shiftCount(period); ++k) tasks.push_back(Task{0, 0, shiftAt(period, k)});
  for (int r = 0; r < kSplitRounds; ++r) {
    std::vector<Task> next;
    for (const Task& k : tasks) head.step(k, [&](Task c) { next.push_back(c); });
    tasks.swap(next);
  }
  std::vector<LetWalker> parts(tasks.size(), LetWalker{t, let, tolerance, out.geo, {}, {}, false});
  parallelFor(tasks.size(), 1, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) parts[i].run(tasks[i]);
  });
  parts.push_back(std::move(head));
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint8_t>> m2l, p2p;
  for (const LetWalker& w : parts) {
    if (w.stuck)
      return Status::error(ErrorCode::Internal, "FMM LET: a node sent childless failed the pair test at a leaf (the "
                                                "LET rule of physics/fmm_let_k.h was broken)");
    m2l.insert(m2l.end(), w.m2l.begin(), w.m2l.end());
    p2p.insert(p2p.end(), w.p2p.begin(), w.p2p.end());
  }
  toCsr(m2l, n, out.m2lStart, out.m2lSource, out.m2lShift);
  toCsr(p2p, n, out.p2pStart, out.p2pSource, out.p2pShift);
  return Status::success();
}

}  // namespace fmm
}  // namespace amrgrav
