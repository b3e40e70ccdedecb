/// \file kernels_fmm.h
/// \brief The FMM's evaluation on the device (kernel_fmm.cu; GPU stage 1, docs/fmm-design.md): the interaction lists,
/// the tree and its multipoles are the CPU's (fmm/fmm_tree.h, fmm/interaction_lists.h, built on the host), the
/// device evaluates them: P2P per target leaf, M2L per target node, L2L a level at a time, L2P at the leaves. All in
/// double, every sum in a fixed order (no atomics): the results are the same bits run to run. Isolated boxes
/// (multipoles about the centres of mass: no dipole terms).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"

namespace amrgrav {
namespace cuda {

/// What the kernels read and write, all device pointers (sorted cells and scaled lengths, fmm/fmm_tree.h's layout).
struct FmmDeviceView {
  int order = 0, terms = 0, mStride = 0;
  unsigned nodes = 0, leafCount = 0;
  const double *x = nullptr, *y = nullptr, *z = nullptr, *mass = nullptr;  ///< sorted cells
  const double* centre = nullptr;        ///< 3 per node: the expansion centres
  const double* M = nullptr;             ///< mStride per node
  double* L = nullptr;                   ///< terms per node, zeroed before the M2L
  const std::uint32_t *cellBegin = nullptr, *cellCount = nullptr, *childBegin = nullptr;
  const std::uint8_t* childCount = nullptr;
  const std::uint32_t *m2lStart = nullptr, *m2lSource = nullptr;  ///< FmmLists' CSR by target node
  const std::uint32_t* leaves = nullptr;      ///< the leaf nodes, ascending
  /// Per leaf (its index in `leaves`): the source leaves of its near field in the CPU's order (itself, then the
  /// other leaf of each P2P pair it is in, pairs in list order).
  const std::uint32_t *nearStart = nullptr, *nearSource = nullptr;
  // fmm/multi_index.h's tables
  const int *monoPrev = nullptr, *monoAxis = nullptr;
  const double* monoScale = nullptr;
  const int *l2lStart = nullptr, *l2lJ = nullptr, *l2lKJ = nullptr;  ///< L2L's entries grouped by target term k
  const int* plusAxis = nullptr;  ///< 3 x terms
  double *phi = nullptr, *gx = nullptr, *gy = nullptr, *gz = nullptr;  ///< sorted sums; g null without accelerations
};

/// The near field, overwriting phi (and g): one block per target leaf, its cells one per thread against its near
/// leaves' cells in the list's order (a leaf's own cell pairs left out).
Status launchFmmP2P(const FmmDeviceView& v, cudaStream_t s);
/// L[A] += the M2L of every source in A's list: one warp per target node, lanes over its sources (in strides of
/// 32), then the lanes' sums added in a fixed butterfly order.
Status launchFmmM2L(const FmmDeviceView& v, cudaStream_t s);
/// L2L from the internal nodes [b, e) (one level) into their children: one thread per (node, child).
Status launchFmmL2L(const FmmDeviceView& v, unsigned b, unsigned e, cudaStream_t s);
/// L2P at every leaf, added to phi (g gets minus the expansion's gradient): one block per leaf, a thread per cell.
Status launchFmmL2P(const FmmDeviceView& v, cudaStream_t s);

}  // namespace cuda
}  // namespace amrgrav
