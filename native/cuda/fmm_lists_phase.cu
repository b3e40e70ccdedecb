/// \file fmm_lists_phase.cu
/// \brief The device's FMM interaction lists (fmm_lists_phase.h): the rounds of the breadth-first walk, then the
/// canonical M2L CSR and P2P keys, as fmm/dual_walk.cpp emulates them.
#include "cuda/fmm_lists_phase.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "cuda/kernels_fmm_lists.h"
#include "fmm/multi_index.h"

namespace amrgrav {
namespace cuda {

void FmmListBuffers::release() {
  mac.release();
  norms.release();
  normWeights.release();
  normDegree.release();
  normOrder = -1;
  for (auto* v : {&frontier[0], &frontier[1], &m2lPairs, &keys[0], &keys[1], &p2p[0], &p2p[1]}) v->release();
  for (auto* v : {&frontierShift[0], &frontierShift[1], &m2lPairShift, &m2lShift}) v->release();
  pairStart.release();
  steps.release();
  counts.release();
  at.release();
  temp.release();
  cellPairs.release();
}

std::size_t FmmListBuffers::bytes() const {
  std::size_t s = mac.bytes() + norms.bytes() + normWeights.bytes() + normDegree.bytes() + steps.bytes() + counts.bytes() + at.bytes() + temp.bytes() +
                  cellPairs.bytes() + pairStart.bytes();
  for (auto* v : {&frontier[0], &frontier[1], &m2lPairs, &keys[0], &keys[1], &p2p[0], &p2p[1]}) s += v->bytes();
  for (auto* v : {&frontierShift[0], &frontierShift[1], &m2lPairShift, &m2lShift}) s += v->bytes();
  return s;
}

Status uploadWalkInputs(const fmm::FmmTree& t, FmmListBuffers& b, cudaStream_t s) {
  const std::size_t n = t.nodeCount();
  if (n == 0) return Status::success();
  AG_TRY(b.mac.reserve(4 * n, "the FMM's MAC quantities"));
  const std::vector<double>* parts[4] = {&t.radius, &t.critical, &t.absMass, &t.lowBound};
  for (int k = 0; k < 4; ++k)
    AG_CUDA_TRY(cudaMemcpyAsync(b.mac.get() + k * n, parts[k]->data(), n * sizeof(double), cudaMemcpyHostToDevice, s));
  if (t.dipoles) {  // the signed sources' test reads the multipole norms
    if (t.norms.size() != n * (std::size_t(t.order) + 1))
      return Status::error(ErrorCode::Internal, "CUDA backend: the FMM tree's multipole norms are missing");
    AG_TRY(b.norms.reserve(t.norms.size(), "the FMM's multipole norms"));
    AG_CUDA_TRY(cudaMemcpyAsync(b.norms.get(), t.norms.data(), t.norms.size() * sizeof(double),
                                cudaMemcpyHostToDevice, s));
  }
  return Status::success();
}

Status deviceMultipoleNorms(const double* M, std::size_t nodes, int mStride, int order, FmmListBuffers& b,
                            cudaStream_t s) {
  const fmm::MultiIndex& mi = fmm::MultiIndex::of(order);
  if (b.normOrder != order) {
    const std::vector<double> w = fmm::multipoleNormWeights(mi);
    AG_TRY(b.normWeights.reserve(w.size(), "the FMM's norm tables"));
    AG_TRY(b.normDegree.reserve(mi.degree.size(), "the FMM's norm tables"));
    AG_CUDA_TRY(cudaMemcpyAsync(b.normWeights.get(), w.data(), w.size() * sizeof(double), cudaMemcpyHostToDevice, s));
    AG_CUDA_TRY(cudaMemcpyAsync(b.normDegree.get(), mi.degree.data(), mi.degree.size() * sizeof(int),
                                cudaMemcpyHostToDevice, s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));  // w dies here
    b.normOrder = order;
  }
  AG_TRY(b.norms.reserve(std::max<std::size_t>(nodes * std::size_t(order + 1), 1), "the FMM's multipole norms"));
  return launchFmmNorms(M, nodes, mStride, mi.terms, order, b.normWeights.get(), b.normDegree.get(), b.norms.get(), s);
}

namespace {

/// Grows CUB's scratch to `bytes` (its contents are never kept).
Status reserveTemp(FmmListBuffers& b, std::size_t bytes) {
  return b.temp.reserve(std::max<std::size_t>(bytes, 1), "the FMM lists' scratch");
}

}  // namespace

Status buildFmmListsOnDevice(const FmmListInputs& in, FmmListBuffers& b, DeviceBuffer<std::uint32_t>& m2lStart,
                             DeviceBuffer<std::uint32_t>& m2lSource, cudaStream_t s, DeviceFmmLists& out) {
  out = DeviceFmmLists{};
  const std::uint32_t nodes = in.nodes;
  out.nodes = nodes;
  out.bits = fmm::keyBits(nodes);
  const int sbits = in.periodic ? fmm::kShiftBits : 0;
  out.sbits = sbits;
  if (2 * out.bits + sbits > 64)
    return Status::error(ErrorCode::OutOfMemory, "CUDA backend: the FMM's " + std::to_string(nodes) +
                                                     " nodes do not fit the lists' 64-bit keys");
  AG_TRY(m2lStart.reserve(std::size_t(nodes) + 1, "the FMM's M2L lists"));
  out.m2lStart = m2lStart.get();
  if (nodes == 0) {
    AG_CUDA_TRY(cudaMemsetAsync(m2lStart.get(), 0, sizeof(std::uint32_t), s));
    return Status::success();
  }
  const int bits = out.bits;
  fmm::DualWalkTree t;
  t.childBegin = in.childBegin;
  t.childCount = in.childCount;
  t.centre = in.centre;
  t.radius = b.mac.get();
  t.critical = t.radius + nodes;
  t.absMass = t.radius + 2 * std::size_t(nodes);
  t.lowBound = t.radius + 3 * std::size_t(nodes);
  t.order = in.order;
  t.tolerance = in.tolerance;
  t.accelLimit = in.accelLimit;
  if (in.periodic) {
    t.dipoles = true;
    t.norms = b.norms.get();
    for (int d = 0; d < 3; ++d) t.period[d] = in.period[d];
  }

  // the rounds: the root with itself first (periodic: then with its images of one half-space, with their shifts)
  std::uint64_t start[14];
  std::uint8_t startShift[14];
  const int starts = fmm::walkStartPairs(in.periodic ? in.period : nullptr, start, startShift);
  AG_TRY(b.frontier[0].reserve(std::size_t(starts), "the FMM walk's frontier"));
  AG_CUDA_TRY(cudaMemcpyAsync(b.frontier[0].get(), start, starts * sizeof(std::uint64_t), cudaMemcpyHostToDevice, s));
  if (sbits) {
    AG_TRY(b.frontierShift[0].reserve(std::size_t(starts), "the FMM walk's frontier"));
    AG_CUDA_TRY(cudaMemcpyAsync(b.frontierShift[0].get(), startShift, std::size_t(starts), cudaMemcpyHostToDevice, s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));  // start and startShift die here
  }
  std::size_t n = std::size_t(starts), m2l = 0, p2p = 0;
  int cur = 0;
  while (n > 0) {
    // the counts of one round are 32-bit: a round's child pairs must fit
    if (n > std::numeric_limits<std::uint32_t>::max() / fmm::kMaxChildPairs)
      return Status::error(ErrorCode::OutOfMemory, "CUDA backend: the FMM walk's frontier of " + std::to_string(n) +
                                                       " pairs is too large for its 32-bit counts");
    ++out.rounds;
    out.maxFrontier = std::max(out.maxFrontier, n);
    AG_TRY(b.steps.reserve(n, "the FMM walk's decisions"));
    AG_TRY(b.counts.reserve(n + 1, "the FMM walk's decisions"));
    AG_TRY(b.at.reserve(n + 1, "the FMM walk's decisions"));
    std::size_t tempBytes = 0;
    AG_TRY(scanWalkCounts(nullptr, tempBytes, b.counts.get(), b.at.get(), n, s));
    AG_TRY(reserveTemp(b, tempBytes));
    AG_TRY(launchWalkDecide(t, b.frontier[cur].get(), sbits ? b.frontierShift[cur].get() : nullptr, n,
                            b.steps.get(), b.counts.get(), s));
    AG_TRY(scanWalkCounts(b.temp.get(), tempBytes, b.counts.get(), b.at.get(), n, s));
    fmm::PairCounts total;
    AG_CUDA_TRY(cudaMemcpyAsync(&total, b.at.get() + n, sizeof total, cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    // room for the next frontier and the lists' new entries (the entries so far kept)
    AG_TRY(b.frontier[1 - cur].reserve(std::max<std::size_t>(total.pairs, 1), "the FMM walk's frontier"));
    AG_TRY(b.m2lPairs.reservePreserve(std::max<std::size_t>(m2l + total.m2l, 1), m2l, s, "the FMM's M2L pairs"));
    AG_TRY(b.p2p[0].reservePreserve(std::max<std::size_t>(p2p + total.p2p, 1), p2p, s, "the FMM's P2P pairs"));
    if (sbits) {
      AG_TRY(b.frontierShift[1 - cur].reserve(std::max<std::size_t>(total.pairs, 1), "the FMM walk's frontier"));
      AG_TRY(b.m2lPairShift.reservePreserve(std::max<std::size_t>(m2l + total.m2l, 1), m2l, s,
                                            "the FMM's M2L pairs"));
    }
    AG_TRY(launchWalkEmit(b.steps.get(), b.frontier[cur].get(), b.at.get(), n, bits, b.frontier[1 - cur].get(),
                          b.m2lPairs.get() + m2l, b.p2p[0].get() + p2p, sbits,
                          sbits ? b.frontierShift[1 - cur].get() : nullptr,
                          sbits ? b.m2lPairShift.get() + m2l : nullptr, s));
    m2l += total.m2l;
    p2p += total.p2p;
    n = total.pairs;
    cur = 1 - cur;
  }

  // M2L: isolated boxes the CSR from the accepted pairs' undirected keys, sorted and a copy stably sorted by their
  // second node (fmm/dual_walk_k.h m2lPairEntries: half the keys of the directed entries, three buffers of them
  // instead of two of twice as many); periodic boxes the directed entries (with their shifts) sorted by (target,
  // source, shift), the CSR from them
  const std::size_t directed = 2 * m2l, keyed = sbits ? directed : m2l;
  AG_TRY(b.keys[0].reserve(std::max<std::size_t>(keyed, 1), "the FMM's M2L keys"));
  AG_TRY(b.keys[1].reserve(std::max<std::size_t>(keyed, 1), "the FMM's M2L keys"));
  AG_TRY(m2lSource.reserve(std::max<std::size_t>(directed, 1), "the FMM's M2L lists"));
  AG_TRY(b.p2p[1].reserve(std::max<std::size_t>(p2p, 1), "the FMM's P2P pairs"));
  std::size_t tempBytes = 0, t2 = 0;
  if (sbits) AG_TRY(b.m2lShift.reserve(std::max<std::size_t>(directed, 1), "the FMM's M2L lists"));
  AG_TRY(sortListKeys(nullptr, tempBytes, b.keys[0].get(), b.keys[1].get(), keyed, bits, nullptr, s, sbits));
  AG_TRY(sortListKeys(nullptr, t2, b.p2p[0].get(), b.p2p[1].get(), p2p, bits, nullptr, s, sbits));
  AG_TRY(reserveTemp(b, std::max(tempBytes, t2)));
  tempBytes = t2 = b.temp.capacity();
  if (sbits) {
    AG_TRY(launchDirectedEntries(b.m2lPairs.get(), m2l, bits, b.keys[0].get(), sbits, b.m2lPairShift.get(), s));
    std::uint64_t* sorted = b.keys[0].get();
    if (directed > 0)
      AG_TRY(sortListKeys(b.temp.get(), tempBytes, b.keys[0].get(), b.keys[1].get(), directed, bits, &sorted, s,
                          sbits));
    AG_TRY(launchCsrFromKeys(sorted, directed, nodes, bits, m2lStart.get(), m2lSource.get(), sbits,
                             b.m2lShift.get(), s));
  } else {
    AG_TRY(b.pairStart.reserve(2 * (std::size_t(nodes) + 1), "the FMM's M2L lists"));
    std::uint64_t *byA = b.m2lPairs.get(), *byB = b.keys[1].get();
    if (m2l > 0) {
      AG_TRY(launchUndirectedKeys(b.m2lPairs.get(), m2l, bits, s));
      AG_TRY(sortListKeys(b.temp.get(), tempBytes, b.m2lPairs.get(), b.keys[0].get(), m2l, bits, &byA, s));
      std::uint64_t* spare = byA == b.keys[0].get() ? b.m2lPairs.get() : b.keys[0].get();
      AG_CUDA_TRY(cudaMemcpyAsync(byB, byA, m2l * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice, s));
      AG_TRY(sortKeyBits(b.temp.get(), tempBytes, byB, spare, m2l, 0, bits, &byB, s));
    }
    AG_TRY(launchM2LFromPairs(byA, byB, m2l, nodes, bits, b.pairStart.get(), b.pairStart.get() + nodes + 1,
                              m2lStart.get(), m2lSource.get(), s));
  }
  out.m2lSource = m2lSource.get();
  out.m2lShift = sbits ? b.m2lShift.get() : nullptr;
  out.directedM2L = directed;

  // P2P: the (min, max[, shift]) keys sorted; the directed cell pairs
  std::uint64_t* p2pSorted = b.p2p[0].get();
  if (p2p > 0)
    AG_TRY(sortListKeys(b.temp.get(), t2, b.p2p[0].get(), b.p2p[1].get(), p2p, bits, &p2pSorted, s, sbits));
  out.p2p = p2pSorted;
  out.p2pPairs = p2p;
  AG_TRY(b.cellPairs.reserve(1, "the FMM's P2P count"));
  AG_TRY(launchDirectedCellPairs(p2pSorted, p2p, bits, sbits, in.cellCount, in.childCount, nodes, b.cellPairs.get(),
                                 s));
  unsigned long long cellPairs = 0;
  AG_CUDA_TRY(cudaMemcpyAsync(&cellPairs, b.cellPairs.get(), sizeof cellPairs, cudaMemcpyDeviceToHost, s));
  AG_CUDA_TRY(cudaStreamSynchronize(s));
  out.directedP2P = cellPairs;
  return Status::success();
}

Status downloadFmmLists(const DeviceFmmLists& d, bool withM2L, cudaStream_t s, fmm::FmmLists& out,
                        const double* period) {
  out = fmm::FmmLists{};
  if (period)
    for (int k = 0; k < 3; ++k) out.period[k] = period[k];
  std::vector<std::uint64_t> keys(d.p2pPairs);
  if (d.p2pPairs > 0)
    AG_CUDA_TRY(cudaMemcpyAsync(keys.data(), d.p2p, d.p2pPairs * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, s));
  if (withM2L) {
    out.m2lStart.resize(std::size_t(d.nodes) + 1);
    out.m2lSource.resize(d.directedM2L);
    AG_CUDA_TRY(cudaMemcpyAsync(out.m2lStart.data(), d.m2lStart, out.m2lStart.size() * sizeof(std::uint32_t),
                                cudaMemcpyDeviceToHost, s));
    if (d.directedM2L > 0)
      AG_CUDA_TRY(cudaMemcpyAsync(out.m2lSource.data(), d.m2lSource, d.directedM2L * sizeof(std::uint32_t),
                                  cudaMemcpyDeviceToHost, s));
    out.m2lShift.assign(d.directedM2L, fmm::kNoShift);
    if (d.m2lShift && d.directedM2L > 0)
      AG_CUDA_TRY(cudaMemcpyAsync(out.m2lShift.data(), d.m2lShift, d.directedM2L, cudaMemcpyDeviceToHost, s));
  }
  AG_CUDA_TRY(cudaStreamSynchronize(s));
  out.p2pA.resize(d.p2pPairs);
  out.p2pB.resize(d.p2pPairs);
  out.p2pShift.resize(d.p2pPairs);
  for (std::size_t q = 0; q < d.p2pPairs; ++q) {
    const std::uint64_t k = fmm::keyPairPart(keys[q], d.sbits);
    out.p2pA[q] = fmm::keyFirst(k, d.bits);
    out.p2pB[q] = fmm::keySecond(k, d.bits);
    out.p2pShift[q] = fmm::keyShift(keys[q], d.sbits);
  }
  out.directedM2L = d.directedM2L;
  out.directedP2P = d.directedP2P;
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
