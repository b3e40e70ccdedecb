/// \file evaluate.h
/// \brief The FMM's evaluation of its lists (interaction_lists.h) over its tree (fmm_tree.h): M2L into the local
/// coefficients and P2P between near leaves (L2L and L2P: expansions.h). Results in sorted order and scaled lengths,
/// as the tree walk's (cpu/cpu_walk.h): phi = sum m/r, g = sum m d/r^3 with d = target - source, each cell's own pair
/// left out. Deterministic: every sum has a fixed order whatever the thread count.
#pragma once
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"

namespace amrgrav {
namespace fmm {

struct FmmOutput {
  double* phi = nullptr;
  double *gx = nullptr, *gy = nullptr, *gz = nullptr;  ///< null unless accelerations are wanted
};

/// L[A] += the M2L of every source in A's list, sources in lanes (one target per task).
void evaluateM2L(const FmmLists& lists, int threads, FmmTree& tree);

/// L[0 .. termCount(order)) += the M2L (dipole terms kept) of `count` sources with multipoles M[q] through the kernel
/// derivatives D[q] (multi_index.h's terms, each array padded with zeros to a multiple of 8): the far images' pass
/// (far_images.h), sources in lanes.
void m2lWithKernels(int order, std::size_t count, const double* const* D, const double* const* M, double* L);

/// Sources outside the tree (a received LET, fmm/fmm_let.h) and this tree's lists of them, CSR by target node:
/// M2L sources (LET nodes, multipoles of the tree's mStride and centres in M and centre) and P2P sources (LET
/// leaves, their cells [cellBegin, + cellCount) of x, y, z, mass), each with an image shift (geo's periods).
struct ExternalSources {
  std::vector<std::uint32_t> m2lStart, m2lSource, p2pStart, p2pSource;
  std::vector<std::uint8_t> m2lShift, p2pShift;
  FmmLists geo;  ///< only its periods (shiftVector)
  const double *M = nullptr, *centre = nullptr;
  const std::uint32_t *cellBegin = nullptr, *cellCount = nullptr;
  const double *x = nullptr, *y = nullptr, *z = nullptr, *mass = nullptr;
};

/// L[A] += the M2L of A's external sources (one-sided), as evaluateM2L.
void evaluateM2LFrom(const ExternalSources& src, int threads, FmmTree& tree);

/// out += the near field of each leaf's external source leaves (one-sided; accumulated, after evaluateP2P), leaf
/// by leaf in list order.
void evaluateP2PFrom(const ExternalSources& src, const FmmTree& tree, const SortedCells& cells, int threads,
                     FmmOutput out);

/// Overwrites `out` with the near field: each leaf with itself, then the mutual leaf pairs in list order (each pair's
/// two sides computed together, summed into the cells in the list's order).
void evaluateP2P(const FmmLists& lists, const FmmTree& tree, const SortedCells& cells, int threads, FmmOutput out);

}  // namespace fmm
}  // namespace amrgrav
