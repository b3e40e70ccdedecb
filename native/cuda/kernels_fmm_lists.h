/// \file kernels_fmm_lists.h
/// \brief The FMM's interaction lists built on the device (kernel_fmm_lists.cu; driven by cuda/fmm_lists_phase.h):
/// the breadth-first dual walk's rounds (fmm/dual_walk_k.h: one thread per frontier pair decides it, a prefix sum
/// of the decisions' counts, one thread per pair writes its child pairs and list entries), then the canonical lists
/// (the directed M2L entries radix-sorted by (target, source) into a CSR, the P2P keys radix-sorted). CUB's scans
/// and sorts take caller-owned scratch: each wrapper called with temp null reports the bytes it needs (tempBytes).
/// No atomics but the directed cell pairs' integer sum: the lists and counts are the same run to run. Periodic boxes
/// (sbits = fmm::kShiftBits): each frontier pair's image shift in an array beside it, the accepted pairs' likewise,
/// the list keys with the shift in their low bits; isolated boxes pass sbits 0 and null shift arrays.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "fmm/dual_walk_k.h"

namespace amrgrav {
namespace cuda {

/// steps[i] = decidePair(t, frontier[i], shift[i] or kNoShift when shift is null), counts[i] = its pairCounts for
/// i < n, counts[n] = zero (so the scan's last offset is the round's total).
Status launchWalkDecide(const fmm::DualWalkTree& t, const std::uint64_t* frontier, const std::uint8_t* shift,
                        std::size_t n, fmm::PairStep* steps, fmm::PairCounts* counts, cudaStream_t s);
/// at = the exclusive prefix sums of counts[0 .. n] (n + 1 items).
Status scanWalkCounts(void* temp, std::size_t& tempBytes, const fmm::PairCounts* counts, fmm::PairCounts* at,
                      std::size_t n, cudaStream_t s);
/// emitPair for each of the n pairs: child pairs into next, accepted pairs into m2l, P2P keys into p2p (each at
/// the round's offsets `at`, the lists' ends already added by the caller); with sbits the child pairs' shifts into
/// nextShift and the accepted pairs' into m2lShift (at the same offsets).
Status launchWalkEmit(const fmm::PairStep* steps, const std::uint64_t* frontier, const fmm::PairCounts* at,
                      std::size_t n, int bits, std::uint64_t* next, std::uint64_t* m2l, std::uint64_t* p2p,
                      int sbits, std::uint8_t* nextShift, std::uint8_t* m2lShift, cudaStream_t s);
/// keys[2q], keys[2q + 1] = the directed entries of accepted pair q (q < pairs; with sbits through m2lShift[q]).
Status launchDirectedEntries(const std::uint64_t* m2l, std::size_t pairs, int bits, std::uint64_t* keys, int sbits,
                             const std::uint8_t* m2lShift, cudaStream_t s);
/// Sorts count keys by their bits [beginBit, endBit), ascending (stable LSD radix sort; in and alt are both
/// overwritten): *sorted is whichever of the two holds the result.
Status sortKeyBits(void* temp, std::size_t& tempBytes, std::uint64_t* in, std::uint64_t* alt, std::size_t count,
                   int beginBit, int endBit, std::uint64_t** sorted, cudaStream_t s);
/// sortKeyBits over a list key's 2 bits + sbits bits.
Status sortListKeys(void* temp, std::size_t& tempBytes, std::uint64_t* in, std::uint64_t* alt, std::size_t count,
                    int bits, std::uint64_t** sorted, cudaStream_t s, int sbits = 0);
/// m2l[q] = fmm::undirectedKey(m2l[q]) for q < pairs (isolated boxes' accepted pairs, in place).
Status launchUndirectedKeys(std::uint64_t* m2l, std::size_t pairs, int bits, cudaStream_t s);
/// Isolated boxes' M2L CSR from the count accepted pairs' undirected keys sorted (byA) and stably sorted by their
/// second node (byB): aStart, bStart (nodes + 1 each, csrStartsAtBy), start[0 .. nodes] (m2lStartAt) and the
/// 2 count sources (m2lPairEntries).
Status launchM2LFromPairs(const std::uint64_t* byA, const std::uint64_t* byB, std::size_t count, std::uint32_t nodes,
                          int bits, std::uint32_t* aStart, std::uint32_t* bStart, std::uint32_t* start,
                          std::uint32_t* source, cudaStream_t s);
/// The CSR from count directed keys sorted by target: start[0 .. nodes] (csrStartsAt), source[i] = the keys'
/// sources and (shift non-null, periodic) shift[i] their shifts.
Status launchCsrFromKeys(const std::uint64_t* keys, std::size_t count, std::uint32_t nodes, int bits,
                         std::uint32_t* start, std::uint32_t* source, int sbits, std::uint8_t* shift,
                         cudaStream_t s);
/// norms[i * (order + 1) ..] = fmm/norms_k.h fmmMultipoleNorms of node i's multipoles M[i * mStride ..] (terms of
/// them; w, degree: the weights and degrees, terms each), for i < nodes.
Status launchFmmNorms(const double* M, std::size_t nodes, int mStride, int terms, int order, const double* w,
                      const int* degree, double* norms, cudaStream_t s);
/// *sum (zeroed here) = the directed cell pairs of the p2p keys (p2pCellPairs) plus every leaf's with itself
/// (leafSelfCellPairs).
Status launchDirectedCellPairs(const std::uint64_t* p2p, std::size_t pairs, int bits, int sbits,
                               const std::uint32_t* cellCount, const std::uint8_t* childCount, std::uint32_t nodes,
                               unsigned long long* sum, cudaStream_t s);

}  // namespace cuda
}  // namespace amrgrav
