/// \file kernels_fmm.h
/// \brief The FMM's evaluation on the device (kernel_fmm.cu; GPU stage 1, docs/fmm-design.md): the interaction lists,
/// the tree and its multipoles are the CPU's (fmm/fmm_tree.h, fmm/interaction_lists.h, built on the host), the
/// device evaluates them: P2P per target leaf, M2L per target node, L2L a level at a time, L2P at the leaves. All in
/// double, every sum in a fixed order (no atomics): the results are the same bits run to run. Isolated boxes
/// (multipoles about the centres of mass: no dipole terms) and, with the view's image shifts and dipoles, periodic
/// boxes (cuda/fmm_periodic_phase.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"
#include "cuda/m2l_variants.h"

namespace amrgrav {
namespace cuda {

/// What the kernels read and write, all device pointers (sorted cells and scaled lengths, fmm/fmm_tree.h's layout).
struct FmmDeviceView {
  int order = 0, terms = 0, mStride = 0;
  unsigned nodes = 0, leafCount = 0;
  const double *x = nullptr, *y = nullptr, *z = nullptr, *mass = nullptr;  ///< sorted cells
  const double* centre = nullptr;        ///< 3 per node: the expansion centres
  const double* M = nullptr;             ///< mStride per node
  /// The harmonic M2L's folded multipoles (fmm::harmonicStrideOf(order) per node; kFmmM2LHarmonic: made by the
  /// launch from M; the caller's scratch, null for the other variants)
  double* Mh = nullptr;
  double* L = nullptr;                   ///< terms per node, zeroed before the M2L
  const std::uint32_t *cellBegin = nullptr, *cellCount = nullptr, *childBegin = nullptr;
  const std::uint8_t* childCount = nullptr;
  const std::uint32_t *m2lStart = nullptr, *m2lSource = nullptr;  ///< FmmLists' CSR by target node
  const std::uint32_t* leaves = nullptr;      ///< the leaf nodes, ascending
  /// P2P of the regular target leaves (fmm/p2p_tiles.h): tileCount tiles of 32 targets (tileTarget, 1/h in tileInvH;
  /// fmm::kNoLeaf past a tile's end), tile i's steps tileStepStart[i] .. tileStepStart[i + 1], each a table
  /// (tileStepTable: an index into p2pK and p2pSlot) or -1 (computed pairs), with each target's source leaf
  /// (tileStepSource, 32 per step; kNoLeaf for none).
  unsigned tileCount = 0;
  /// Whether a tile may hold computed steps (fmmP2PComputed's launch); false only where the tiles' builder counted none
  bool tileComputedSteps = true;
  const std::uint32_t *tileTarget = nullptr, *tileStepStart = nullptr, *tileStepSource = nullptr;
  const std::int32_t* tileStepTable = nullptr;
  const double* tileInvH = nullptr;
  const double* p2pK = nullptr;  ///< the unit tables (fmm/p2p_tables.h P2pTable::k), 64 x 64 each
  const int* p2pSlot = nullptr;  ///< each table's offset slot (fmm/p2p_tables.h slotOffset)
  /// P2P of the other leaves (computed): irregularCount leaves (irregularLeaf: nodes), irregular leaf k's near
  /// sources nearSource[nearStart[k] .. nearStart[k + 1]) in the CPU's order (itself, then its sources by node).
  unsigned irregularCount = 0;
  const std::uint32_t *irregularLeaf = nullptr, *nearStart = nullptr, *nearSource = nullptr;
  /// fmm/multi_index.h's L2L entries grouped by target term k (each group in the CPU's order)
  double *phi = nullptr, *gx = nullptr, *gy = nullptr, *gz = nullptr;  ///< sorted sums; g null without accelerations
  /// Periodic boxes: the image shift (fmm/interaction_lists.h's numbering) of each M2L source (by m2lSource), of
  /// each tile step's sources (by tileStepSource; a table step's is in its table) and of each irregular leaf's near
  /// sources (by nearSource): the source seen at its position + imageShiftVector(period, shift), the CPU's arithmetic
  /// (the shifted source position first, then target minus source). Null in isolated boxes (no shifts).
  const std::uint8_t *m2lShift = nullptr, *tileStepShift = nullptr, *nearShift = nullptr;
  double period[3] = {0, 0, 0};  ///< the box's sides along its periodic axes (scaled lengths), 0 along isolated ones
  bool dipoles = false;          ///< multipoles about geometric centres: M2L with the dipole terms (fmm/fmm_tree.h)
  int m2lVariant = 0;            ///< the M2L kernel (FmmM2LVariant; CudaOptions::fmmM2L)
  bool accelTablesMma = true;    ///< accelerations' table steps on the tensor cores (CudaOptions::fmmAccelTablesMma)
  bool nearSingle = false;       ///< the tiles' computed pairs in single precision (CudaOptions::fmmNearSingle)
};


/// The near field, overwriting phi (and g). Regular targets by tile: one block of 128 threads per tile; each step's
/// table product (1/h) K^T m_S added to each cell's total in the tile's step order, then the computed pairs' sums
/// (one block per target, a thread per cell: fmmP2PComputed, or fmmP2PComputedSingle in single precision with
/// v.nearSingle), in that order too. The table products on the FP64
/// tensor cores (fmm/p2p_mma_k.h; sums in groups of 4 sources); with accelerations four products per step, summed
/// over the steps and scaled once (with accelTablesMma off, or built with AMRGRAV_FMM_P2P_DMMA=0: a thread per 4 cells
/// x 4 targets, the products s ascending, fused, as the CPU's tableP2P). The other leaves: one block per leaf, its
/// cells one per thread against its near leaves' cells in the list's order (a leaf's own cell pairs left out).
Status launchFmmP2P(const FmmDeviceView& v, cudaStream_t s);
/// L[A] += the M2L of every source in A's list: one warp per target node, lanes over its sources (in strides of
/// 32), then the lanes' sums added in a fixed butterfly order. With v.dipoles the kernel with the dipole terms
/// (cuda/m2l_device.h m2lFusedDip).
Status launchFmmM2L(const FmmDeviceView& v, cudaStream_t s);
/// L2L from the internal nodes [b, e) (one level) into their children: one thread per (node, child), the nodes' L
/// and each thread's monomials in shared memory.
Status launchFmmL2L(const FmmDeviceView& v, unsigned b, unsigned e, cudaStream_t s);
/// L2P at every leaf, added to phi (g gets minus the expansion's gradient): one block per leaf, a thread per cell,
/// the leaf's L in shared memory, the monomials in registers (unrolled over the terms at compile time).
Status launchFmmL2P(const FmmDeviceView& v, cudaStream_t s);

}  // namespace cuda
}  // namespace amrgrav
