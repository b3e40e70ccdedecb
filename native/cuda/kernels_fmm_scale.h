/// \file kernels_fmm_scale.h
/// \brief The signed sources' scale's device parts (kernel_fmm_scale.cu; driven by cuda/fmm_scale_phase.h, rules in
/// fmm/signed_scale_k.h): each leaf's near field estimate and margin, the level-2 nodes' net masses, and the
/// candidate leaves' cells gathered for the host.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace amrgrav {
namespace cuda {

/// The tree and the sorted cells as the kernels read them (device pointers; scaled lengths, contrasted masses).
struct ScaleTreeView {
  unsigned nodes = 0;
  const std::uint32_t *cellBegin = nullptr, *cellCount = nullptr;
  const std::uint8_t* childCount = nullptr;
  const double *x = nullptr, *y = nullptr, *z = nullptr, *size = nullptr, *mass = nullptr;
};

/// A warp per node: estimate[i] the leaf's largest |near field| at its cells (leafNearCellEstimate, a regular leaf
/// by its lattice as regularLeaf decides), margin[i] its leafNearMargin, h[i] a regular leaf's cell size (else 0),
/// hash[i] a regular leaf's leafMassHash (else 0); zeros for internal nodes. perNode: estimate, margin, h (nodes
/// each).
Status launchLeafNearEstimates(const ScaleTreeView& v, double* perNode, std::uint64_t* hash, cudaStream_t s);

/// A warp per pair k: same[k] 1 when leaf member[k]'s 64 masses are leaf rep[k]'s bit for bit, else 0.
Status launchSameLeafMasses(const ScaleTreeView& v, const std::uint32_t* member, const std::uint32_t* rep,
                            unsigned pairs, std::uint8_t* same, cudaStream_t s);

/// A warp per node of [first, first + count): net[k] node first + k's net mass, its cells' masses added in their
/// order one rounded add at a time (netMassStep: the host's chain), the warp loading them 32 at a time.
Status launchLevelNetMasses(const ScaleTreeView& v, unsigned first, unsigned count, double* net, cudaStream_t s);

/// A warp per candidate leaf k (leaf[k]): its cells' x, y, z, size and mass to out + q * total + offset[k] for
/// q = 0..4 (total: the candidates' cells).
Status launchGatherLeafCells(const ScaleTreeView& v, const std::uint32_t* leaf, const std::uint32_t* offset,
                             unsigned candidates, std::size_t total, double* out, cudaStream_t s);

}  // namespace cuda
}  // namespace amrgrav
