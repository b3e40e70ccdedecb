/// \file let.cpp
/// \brief Selection, packing and viewing of locally essential trees (see let.h).
#include "let/let.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ewald/lookup_k.h"
#include "physics/let_accept_k.h"
#include "let/let_layout.h"
#include "physics/mac_k.h"
#include "physics/moments_k.h"

namespace amrgrav {

RankSummary summariseCells(const SortedCells& c) {
  return summariseCells(c.x.data(), c.y.data(), c.z.data(), c.mass.data(), c.size.data(), c.x.size());
}

RankSummary summariseCells(const double* x, const double* y, const double* z, const double* mass,
                           const double* size, std::size_t n) {
  RankSummary s{};
  for (int d = 0; d < 3; ++d) {
    s.centreLo[d] = s.extentLo[d] = INFINITY;
    s.centreHi[d] = s.extentHi[d] = -INFINITY;
  }
  const double* p[3] = {x, y, z};
  double m = 0, mx[3] = {0, 0, 0};
  for (std::size_t i = 0; i < n; ++i) {
    const double h = size ? 0.5 * size[i] : 0.0;
    for (int d = 0; d < 3; ++d) {
      const double v = p[d][i];
      s.centreLo[d] = std::min(s.centreLo[d], v);
      s.centreHi[d] = std::max(s.centreHi[d], v);
      s.extentLo[d] = std::min(s.extentLo[d], v - h);
      s.extentHi[d] = std::max(s.extentHi[d], v + h);
      mx[d] += mass[i] * v;
    }
    m += mass[i];
  }
  s.mass = m;
  for (int d = 0; d < 3; ++d) s.com[d] = m > 0 ? mx[d] / m : 0.0;
  s.cellCount = double(n);
  return s;
}

RemoteBox remoteBoxFor(const RankSummary& s) {
  RemoteBox b;
  double grow = 0;
  if (s.softReach > 0) {
    // the rounding of the grown box's bounds and of the two distance tests is far below this margin (without it,
    // nodes at the grown box's edge can fail the receiver's test: native/tests/physics_rules.cpp checkSoftLet)
    double big = s.softReach;
    for (int d = 0; d < 3; ++d)
      for (const double v : {s.centreLo[d], s.centreHi[d]})
        if (std::isfinite(v)) big = std::max(big, std::fabs(v));
    grow = s.softReach + 1e-9 * big;
  }
  for (int d = 0; d < 3; ++d) {
    b.lo[d] = s.centreLo[d] - grow;
    b.hi[d] = s.centreHi[d] + grow;
    b.groupHalfWidth[d] = s.groupHalfWidth[d];
  }
  b.softMin = s.softMin;
  return b;
}

namespace {

/// The LET's breadth-first selection: a node that `accepts` (by its index; or a massless one) travels childless, an opened leaf
/// with its cells, an opened internal node with its children. The selection list doubles as the queue: a node's
/// position in it is its index in the LET.
template <class Accepts>
void selectNodes(const SourceTree& t, Accepts accepts, LetSelection& out) {
  out.node.clear();
  out.kind.clear();
  out.cellCount = 0;
  if (t.nodeCount == 0) return;
  out.node.push_back(0);
  for (std::size_t k = 0; k < out.node.size(); ++k) {
    const std::uint32_t i = out.node[k];
    if (nodeIsEmpty(t.macRadius[i]) || accepts(i)) {
      out.kind.push_back(LetSelection::Accepted);
    } else if (t.isLeaf(i)) {
      out.kind.push_back(LetSelection::OpenedLeaf);
      out.cellCount += t.cellCount[i];
    } else {
      out.kind.push_back(LetSelection::Opened);
      for (std::uint32_t j = 0; j < t.childCount[i]; ++j) out.node.push_back(t.childBegin[i] + j);
    }
  }
}

}  // namespace

void essentialNodesFor(const SourceTree& t, const double lo[3], const double hi[3], LetSelection& out) {
  selectNodes(t, [&](std::uint32_t i) {
    const double* c = &t.com[3 * i];
    return macAccepts(c[0], c[1], c[2], t.macRadius[i], lo, hi);
  }, out);
}

void essentialParticlesFor(const SourceTree& t, const RemoteBox& b, SofteningKernel kernel, LetSelection& out) {
  selectNodes(t, [&](std::uint32_t i) {
    return particleBoxAccepts(kernel, &t.com[3 * i], t.macRadius[i], t.nodeExtent[i], t.nodeEpsMin[i],
                              t.nodeEpsMax[i], b.softMin, b.lo, b.hi);
  }, out);
}


void essentialNodesForPeriodic(const SourceTree& t, const double lo[3], const double hi[3], const double W[3],
                               const EwaldTableView& v, LetSelection& out) {
  selectNodes(t, [&](std::uint32_t i) { return periodicBoxAccepts(v, &t.com[3 * i], t.macRadius[i], lo, hi, W); },
              out);
}

std::size_t packedLetBytes(std::size_t nodes, std::size_t cells, bool withDipole, bool softened) {
  return LetLayout(nodes, cells, withDipole, softened).end;
}

void packLet(const SourceTree& t, const LetSelection& sel, PackedLet& out) {
  const std::size_t n = sel.node.size(), nc = sel.cellCount;
  const bool withDipole = t.dipole != nullptr;
  const bool softened = t.sourceEps != nullptr;  // a particles' tree: with its ranges and extents too
  const LetLayout L(n, nc, withDipole, softened);
  out.words.assign(L.end / 8, 0);
  unsigned char* base = reinterpret_cast<unsigned char*>(out.words.data());
  out.words[0] = softened ? kLetMagicParticles : withDipole ? kLetMagicDipole : kLetMagic;
  out.words[1] = n;
  out.words[2] = nc;
  auto f64 = [&](std::size_t off) { return reinterpret_cast<double*>(base + off); };
  auto u32 = [&](std::size_t off) { return reinterpret_cast<std::uint32_t*>(base + off); };
  double *mass = f64(L.mass), *com = f64(L.com), *quad = f64(L.quad), *mac = f64(L.macRadius);
  double* sm = f64(L.secondMoment);
  double* dp = f64(L.dipole);
  double *x = f64(L.x), *y = f64(L.y), *z = f64(L.z), *cm = f64(L.cellMass);
  double *e0 = f64(L.epsMin), *e1 = f64(L.epsMax), *ext = f64(L.extent), *eps = f64(L.eps);
  std::uint32_t *cb = u32(L.cellBegin), *cc = u32(L.cellCount), *kb = u32(L.childBegin);
  std::uint8_t* kc = base + L.childCount;
  std::uint32_t nextChild = 1;  // children of LET node k sit right after those of nodes < k (breadth-first)
  std::uint32_t nextCell = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint32_t i = sel.node[k];
    mass[k] = t.mass[i];
    std::memcpy(com + 3 * k, t.com + 3 * i, 3 * sizeof(double));
    std::memcpy(quad + 6 * k, t.quad + 6 * i, 6 * sizeof(double));
    mac[k] = t.macRadius[i];
    sm[k] = t.secondMoment ? t.secondMoment[i] : 0.0;
    if (withDipole) std::memcpy(dp + 3 * k, t.dipole + 3 * i, 3 * sizeof(double));
    if (softened) {
      e0[k] = t.nodeEpsMin[i];
      e1[k] = t.nodeEpsMax[i];
      ext[k] = t.nodeExtent[i];
    }
    cb[k] = 0; cc[k] = 0; kb[k] = 0; kc[k] = 0;
    if (sel.kind[k] == LetSelection::OpenedLeaf) {
      const std::uint32_t b = t.cellBegin[i], m = t.cellCount[i];
      std::memcpy(x + nextCell, t.x + b, m * sizeof(double));
      std::memcpy(y + nextCell, t.y + b, m * sizeof(double));
      std::memcpy(z + nextCell, t.z + b, m * sizeof(double));
      std::memcpy(cm + nextCell, t.cellMass + b, m * sizeof(double));
      if (softened) std::memcpy(eps + nextCell, t.sourceEps + b, m * sizeof(double));
      cb[k] = nextCell;
      cc[k] = m;
      nextCell += m;
    } else if (sel.kind[k] == LetSelection::Opened) {
      kb[k] = nextChild;
      kc[k] = t.childCount[i];
      nextChild += t.childCount[i];
    }
  }
}

Status viewPackedLet(const std::uint64_t* w, std::size_t bytes, SourceTree& out) {
  out = SourceTree{};
  if (bytes < kLetHeaderWords * 8 || (w[0] != kLetMagic && w[0] != kLetMagicDipole && w[0] != kLetMagicParticles))
    return Status::error(ErrorCode::Internal, "received LET has no valid header (" + std::to_string(bytes) + " bytes)");
  const std::size_t n = w[1], nc = w[2];
  const bool withDipole = w[0] == kLetMagicDipole;
  const bool softened = w[0] == kLetMagicParticles;
  if (n > bytes || nc > bytes)  // the layout's sizes below must not wrap
    return Status::error(ErrorCode::Internal, "received LET announces " + std::to_string(n) + " nodes and " +
                                                  std::to_string(nc) + " cells in " + std::to_string(bytes) + " bytes");
  const LetLayout L(n, nc, withDipole, softened);
  if (L.end != bytes)
    return Status::error(ErrorCode::Internal, "received LET of " + std::to_string(bytes) + " bytes, expected " +
                                                  std::to_string(L.end) + " for its header");
  const unsigned char* base = reinterpret_cast<const unsigned char*>(w);
  auto f64 = [&](std::size_t off) { return reinterpret_cast<const double*>(base + off); };
  auto u32 = [&](std::size_t off) { return reinterpret_cast<const std::uint32_t*>(base + off); };
  out.nodeCount = n;
  out.mass = f64(L.mass); out.com = f64(L.com); out.quad = f64(L.quad); out.macRadius = f64(L.macRadius);
  out.secondMoment = f64(L.secondMoment);
  out.dipole = withDipole ? f64(L.dipole) : nullptr;
  out.cellTotal = nc;
  out.x = f64(L.x); out.y = f64(L.y); out.z = f64(L.z); out.cellMass = f64(L.cellMass);
  if (softened) {
    out.nodeEpsMin = f64(L.epsMin); out.nodeEpsMax = f64(L.epsMax); out.nodeExtent = f64(L.extent);
    out.sourceEps = f64(L.eps);
  }
  out.cellBegin = u32(L.cellBegin); out.cellCount = u32(L.cellCount); out.childBegin = u32(L.childBegin);
  out.childCount = base + L.childCount;
  // links must stay inside the buffer: a corrupt message must not send the walk out of bounds
  for (std::size_t k = 0; k < n; ++k) {
    if (out.childCount[k] > 0 && (out.childBegin[k] <= k || out.childBegin[k] + out.childCount[k] > n))
      return Status::error(ErrorCode::Internal, "received LET has a child link out of range at node " + std::to_string(k));
    if (out.cellBegin[k] + std::uint64_t(out.cellCount[k]) > nc)
      return Status::error(ErrorCode::Internal, "received LET has a cell range out of bounds at node " + std::to_string(k));
  }
  return Status::success();
}

Status letForestLayout(const SourceTree* lets, std::size_t count, LetForestLayout& out) {
  out = LetForestLayout{};
  if (count == 0) return Status::success();
  // levels of virtual nodes above the `count` roots, fan-out 8: width[0] = 1, ..., width[depth] = count
  out.width.assign(1, count);
  while (out.width.front() > 1) out.width.insert(out.width.begin(), (out.width.front() + 7) / 8);
  if (out.width.size() == 1) out.width.insert(out.width.begin(), 1);  // one LET: still under a virtual root
  out.levelStart.assign(out.width.size() + 1, 0);
  for (std::size_t d = 0; d < out.width.size(); ++d) out.levelStart[d + 1] = out.levelStart[d] + out.width[d];
  out.rootsAt = out.levelStart[out.width.size() - 1];
  out.nodes = out.levelStart.back();
  for (std::size_t r = 0; r < count; ++r) {
    out.nodeBase.push_back(out.nodes);
    out.cellBase.push_back(out.cells);
    out.nodes += lets[r].nodeCount > 0 ? lets[r].nodeCount - 1 : 0;
    out.cells += lets[r].cellTotal;
  }
  if (out.nodes > 0xffffffffull || out.cells > 0xffffffffull)
    return Status::error(ErrorCode::Internal, "the received LETs have more than 2^32 - 1 nodes or cells together");
  return Status::success();
}

void fillVirtualNodes(const LetForestLayout& L, const SourceTree* lets, SourceTreeArrays& out) {
  out.resizeNodes(0);  // the vectors keep their memory
  out.resizeNodes(L.rootsAt);
  if (L.width.empty()) return;  // no LETs
  // bottom-up: node j of level d has the children [8j, 8j + 8) of level d + 1; the last level is the LETs' roots
  const std::size_t last = L.width.size() - 1;
  std::vector<double> below(L.width[last]);
  for (std::size_t r = 0; r < below.size(); ++r) below[r] = lets[r].nodeCount > 0 ? lets[r].mass[0] : 0.0;
  for (std::size_t d = last; d-- > 0;) {
    for (std::size_t j = 0; j < L.width[d]; ++j) {
      const std::size_t i = L.levelStart[d] + j, first = 8 * j;
      const std::size_t end = std::min(first + 8, L.width[d + 1]);
      out.childBegin[i] = std::uint32_t(L.levelStart[d + 1] + first);
      out.childCount[i] = std::uint8_t(end - first);
      for (std::size_t c = first; c < end; ++c) out.mass[i] += below[c];
    }
    below.assign(out.mass.begin() + std::ptrdiff_t(L.levelStart[d]),
                 out.mass.begin() + std::ptrdiff_t(L.levelStart[d] + L.width[d]));
  }
}

Status mergeLets(const SourceTree* lets, std::size_t count, LetForest& out) {
  LetForestLayout L;
  AG_TRY(letForestLayout(lets, count, L));
  // refilled in place: a rank merges every step, and the vectors keep their memory
  fillVirtualNodes(L, lets, out);
  out.virtualNodes = L.rootsAt;
  out.hasDipole = count > 0 && lets[0].dipole != nullptr;  // every rank's tree is of the same kind
  out.hasSoftening = count > 0 && lets[0].sourceEps != nullptr;  // particle LETs (all of them)
  const std::size_t cells = L.cells;
  out.resizeNodes(L.nodes);
  out.sourceEps.resize(out.hasSoftening ? cells : 0);
  out.x.resize(cells);
  out.y.resize(cells);
  out.z.resize(cells);
  out.cellMass.resize(cells);
  for (std::size_t r = 0; r < count; ++r) {
    const SourceTree& t = lets[r];
    const std::size_t cellBase = L.cellBase[r];
    auto at = [&](std::size_t k) { return L.forestIndex(r, k); };
    for (std::size_t k = 0; k < t.nodeCount; ++k) {
      const std::size_t i = at(k);
      out.cellBegin[i] = std::uint32_t(cellBase + t.cellBegin[k]);
      out.cellCount[i] = t.cellCount[k];
      out.childCount[i] = t.childCount[k];
      out.childBegin[i] = t.childCount[k] > 0 ? std::uint32_t(at(t.childBegin[k])) : 0u;
      out.mass[i] = t.mass[k];
      std::memcpy(&out.com[3 * i], t.com + 3 * k, 3 * sizeof(double));
      std::memcpy(&out.quad[6 * i], t.quad + 6 * k, 6 * sizeof(double));
      out.macRadius[i] = t.macRadius[k];
      out.secondMoment[i] = t.secondMoment ? t.secondMoment[k] : 0.0;
      for (int d = 0; d < 3; ++d) out.dipole[3 * i + d] = t.dipole ? t.dipole[3 * k + d] : 0.0;
      if (out.hasSoftening) {
        out.nodeEpsMin[i] = t.nodeEpsMin[k];
        out.nodeEpsMax[i] = t.nodeEpsMax[k];
        out.nodeExtent[i] = t.nodeExtent[k];
      }
    }
    if (out.hasSoftening) std::copy(t.sourceEps, t.sourceEps + t.cellTotal, out.sourceEps.begin() + cellBase);
    std::copy(t.x, t.x + t.cellTotal, out.x.begin() + cellBase);
    std::copy(t.y, t.y + t.cellTotal, out.y.begin() + cellBase);
    std::copy(t.z, t.z + t.cellTotal, out.z.begin() + cellBase);
    std::copy(t.cellMass, t.cellMass + t.cellTotal, out.cellMass.begin() + cellBase);
  }
  return Status::success();
}

}  // namespace amrgrav
