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
  std::size_t centre, radius, critical, absMass, lowBound, norms, M, x, y, z, mass, code, cellBegin, cellCount,
      childBegin, childCount, kind, flags, end;
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
    code = o; o += 8 * n;
    cellBegin = o; o += 4 * n;
    cellCount = o; o += 4 * n;
    childBegin = o; o += 4 * n;
    childCount = o; o += n;
    kind = o; o += n;
    flags = o; o += n;
    end = (o + 7) / 8 * 8;
  }
};

/// The shifts a pair is formed with: every image within one period (periodic), or none.
int shiftCount(const double* period) { return period ? 27 : 1; }
std::uint8_t shiftAt(const double* period, int k) { return period ? std::uint8_t(k) : kNoShift; }

}  // namespace

int reachClassOf(double r) {
  if (!(r > 0)) return 0;
  int e = 0;
  const double f = std::frexp(r, &e);  // r = f 2^e, f in [0.5, 1)
  const int k = 8 * (e + 26) + std::min(7, int((f - 0.5) * 16));
  return std::max(0, std::min(kReachClasses - 1, k));
}

namespace {

void emptyReach(FmmReach& r) {
  r = FmmReach{};
  for (int d = 0; d < 3; ++d) { r.lo[d] = INFINITY; r.hi[d] = -INFINITY; }
  r.lowBound = INFINITY;
}

void addToReach(const FmmTree& t, std::size_t i, FmmReach& r) {
  const std::size_t np = std::size_t(t.order) + 1;
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
  r.nodes += 1;
}

}  // namespace

FmmReachSet reachOf(const FmmTree& t) {
  FmmReachSet r;
  emptyReach(r.leaves);
  for (FmmReach& c : r.byRadius) emptyReach(c);
  for (std::size_t i = 0; i < t.nodeCount(); ++i) {
    if (t.isLeaf(i)) addToReach(t, i, r.leaves);
    addToReach(t, i, r.byRadius[reachClassOf(t.radius[i])]);
  }
  return r;
}

void nodeCodes(const FmmTree& t, const std::vector<std::uint64_t>& keys, std::vector<std::uint64_t>& out) {
  const Octree& o = t.topo;
  out.resize(o.nodeCount());
  for (std::size_t i = 0; i < o.nodeCount(); ++i) out[i] = nodeCode(keys[o.cellBegin[i]], o.level[i]);
}

void selectFmmLet(const FmmTree& t, const LetNodes& ln, const FmmReachSet& reach, int receiver, double tolerance,
                  const double* period, FmmLetSelection& out) {
  out.node.clear();
  out.kind.clear();
  out.flags.clear();
  out.cellCount = 0;
  if (t.nodeCount() == 0 || reach.leaves.nodes == 0) return;
  FmmLists geo;
  if (period)
    for (int d = 0; d < 3; ++d) geo.period[d] = period[d];
  const std::size_t np = std::size_t(t.order) + 1;
  const Octree& o = t.topo;
  // every image of b passes the pair test against every node of `to` (physics/fmm_let_k.h)
  auto passes = [&](std::uint32_t b, const FmmReach& to) {
    for (int k = 0; k < shiftCount(period); ++k) {
      double v[3];
      geo.shiftVector(shiftAt(period, k), v);
      const double* cb = &t.centre[3 * b];
      const double c[3] = {cb[0] + v[0], cb[1] + v[1], cb[2] + v[2]};  // as the receiver moves it
      const bool ok = t.dipoles ? fmmSignedBoxAccepts(to.lo, to.hi, to.radius, to.critical, to.norms, c, t.radius[b],
                                                      t.critical[b], &t.norms[b * np], to.lowBound, t.order, tolerance)
                                : fmmBoxAccepts(to.lo, to.hi, to.radius, to.critical, to.absMass, to.lowBound, c,
                                                t.radius[b], t.critical[b], t.absMass[b], t.lowBound[b], t.order,
                                                tolerance, t.accelLimit, o.isLeaf(b));
      if (!ok) return false;
    }
    return true;
  };
  // the receiver opens b only at a failing pair with one of its leaves or (b internal) with a node of radius <= r_b
  // (physics/fmm_mac_k.h fmmOpensFirst): b may travel childless when all of those pairs pass
  auto childless = [&](std::uint32_t b) {
    if (!passes(b, reach.leaves)) return false;
    if (o.isLeaf(b)) return true;
    const int top = reachClassOf(t.radius[b]);
    for (int k = 0; k <= top; ++k)
      if (reach.byRadius[k].nodes > 0 && !passes(b, reach.byRadius[k])) return false;
    return true;
  };
  out.node.push_back(0);
  for (std::size_t i = 0; i < out.node.size(); ++i) {  // breadth-first: a node's children are contiguous
    const std::uint32_t b = out.node[i];
    const std::int32_t sh = (*ln.sharedIndex)[b];
    const bool receiverHolds = sh >= 0 && ln.top->sharedWith(std::size_t(sh), receiver);
    std::uint8_t flags = o.isLeaf(b) ? FmmLetSelection::Leaf : 0;
    if (!receiverHolds && (sh < 0 || ln.top->owner(std::size_t(sh)) == ln.rank)) flags |= FmmLetSelection::CountsM;
    out.flags.push_back(flags);
    if (!receiverHolds && childless(b)) {
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

void packFmmLet(const FmmTree& t, const std::vector<std::uint64_t>& code, const SortedCells& c,
                const FmmLetSelection& sel, PackedLet& out) {
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
    b8(L.flags)[k] = sel.flags[k];
    reinterpret_cast<std::uint64_t*>(base + L.code)[k] = code[i];
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
  v.flags = b8(L.flags);
  v.code = reinterpret_cast<const std::uint64_t*>(base + L.code);
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

/// The receiver's traversal (fmm_let.h): the one-process walk's decisions, one-sided. A pair of the same node (the
/// same code, no shift) opens both, as the one-process walk pairs a node's children with each other; any other pair
/// is accepted, a pair of leaves, or opens the node interaction_lists.cpp opens (fmmOpensFirst; a node and its own
/// image: the copy the one-process walk's task holds first, see step).
struct LetWalker {
  const FmmTree& t;
  const std::vector<std::uint64_t>& code;
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
                          let.critical[B], let.absMass[B], let.lowBound[B], t.order, tolerance, t.accelLimit,
                          t.topo.isLeaf(A), (let.flags[B] & FmmLetSelection::Leaf) != 0);
  }

  template <class Push>
  void pushOwnChildren(Task k, Push&& push) {
    const Octree& o = t.topo;
    for (std::uint32_t c = 0; c < o.childCount[k.a]; ++c) push(Task{o.childBegin[k.a] + c, k.b, k.shift});
  }

  template <class Push>
  void pushLetChildren(Task k, Push&& push) {
    if (let.kind[k.b] != FmmLetSelection::Opened) {  // cannot happen (physics/fmm_let_k.h); reported, never skipped
      stuck = true;
      return;
    }
    for (std::uint32_t c = 0; c < let.childCount[k.b]; ++c) push(Task{k.a, let.childBegin[k.b] + c, k.shift});
  }

  template <class Push>
  void step(Task k, Push&& push) {
    const Octree& o = t.topo;
    const bool la = o.isLeaf(k.a), lb = (let.flags[k.b] & FmmLetSelection::Leaf) != 0;
    const bool same = code[k.a] == let.code[k.b];
    if (same && k.shift == kNoShift) {  // the same node: its leaves' cells meet, its children pair up
      if (la && lb) {
        if (let.kind[k.b] != FmmLetSelection::OpenedLeaf) stuck = true;
        else p2p.emplace_back(k.a, k.b, k.shift);
        return;
      }
      if (la || lb) {  // the same node is a leaf on one side only: the shared splits differ (a bug)
        stuck = true;
        return;
      }
      pushLetChildren(k, [&](Task c) { pushOwnChildren(c, push); });
      return;
    }
    if (accepts(k.a, k.b, k.shift)) {
      if (let.flags[k.b] & FmmLetSelection::CountsM) m2l.emplace_back(k.a, k.b, k.shift);
      return;
    }
    if (la && lb) {
      if (let.kind[k.b] != FmmLetSelection::OpenedLeaf) stuck = true;
      else p2p.emplace_back(k.a, k.b, k.shift);
      return;
    }
    // one process opens a's side when b is a leaf, else by fmmOpensFirst. A node x and its own image: the walk's
    // task (x, x, s) opens its first x, which sees the other + s. Such tasks come from the root's (s in the upper
    // half-space), and one level down from (child, x, s) opening x, which makes (child, child, 26 - s): the task's
    // shift is in the upper half-space at even levels, and its first x is a here when the task's shift is ours
    const bool openA = !la && (lb || (same ? (k.shift > kNoShift) == (o.level[k.a] % 2 == 0)
                                           : fmmOpensFirst(t.radius[k.a], &t.centre[3 * k.a], let.radius[k.b],
                                                           &let.centre[3 * k.b])));
    if (openA) pushOwnChildren(k, push);
    else pushLetChildren(k, push);
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

Status fmmLetLists(const FmmTree& t, const std::vector<std::uint64_t>& code, const FmmLetView& let,
                   double tolerance, const double* period, int threads, ExternalSources& out) {
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
  LetWalker head{t, code, let, tolerance, out.geo, {}, {}, false};
  std::vector<Task> tasks;
  for (int k = 0; k < shiftCount(period); ++k) tasks.push_back(Task{0, 0, shiftAt(period, k)});
  for (int r = 0; r < kSplitRounds; ++r) {
    std::vector<Task> next;
    for (const Task& k : tasks) head.step(k, [&](Task c) { next.push_back(c); });
    tasks.swap(next);
  }
  std::vector<LetWalker> parts(tasks.size(), LetWalker{t, code, let, tolerance, out.geo, {}, {}, false});
  parallelFor(tasks.size(), 1, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) parts[i].run(tasks[i]);
  });
  parts.push_back(std::move(head));
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint8_t>> m2l, p2p;
  for (const LetWalker& w : parts) {
    if (w.stuck)
      return Status::error(ErrorCode::Internal, "FMM LET: a node sent childless would have to be opened (the LET rule "
                                                "of physics/fmm_let_k.h was broken) or a shared node differs");
    m2l.insert(m2l.end(), w.m2l.begin(), w.m2l.end());
    p2p.insert(p2p.end(), w.p2p.begin(), w.p2p.end());
  }
  toCsr(m2l, n, out.m2lStart, out.m2lSource, out.m2lShift);
  toCsr(p2p, n, out.p2pStart, out.p2pSource, out.p2pShift);
  return Status::success();
}

}  // namespace fmm
}  // namespace amrgrav
