/// \file m2l_stage_k.h
/// \brief The staged M2L's layout (cuda/kernel_fmm.cu fmmM2LStaged, CudaOptions::fmmM2L 1): a warp per target node
/// takes its sources 32 at a time (a batch); the batch's multipoles are first copied into shared memory, each
/// source's terms read by consecutive lanes (whole 32-byte sectors, each once), and written transposed, term q of
/// the batch's source i at Ms[q * kM2LStageStride + i], so that lane i then reads its source's terms down its column
/// (conflict-free: consecutive lanes, consecutive words). Shared by the kernel and its host emulation
/// (native/tests/fmm_m2l_staged.cpp).
///
/// Why: the plain kernel's lanes read their own sources' terms where they lie, 32 cache lines per load instruction
/// and 4 terms of each 32-byte sector used per fetch; with 56 KB of shared memory a block the L1 keeps few of them
/// (8 warps x 30 KB of multipoles in flight), so each M2L pair pulls ~4 KB through L2 instead of 960 bytes (p 7).
#pragma once
#include "core/hostdevice.h"

namespace amrgrav {
namespace fmm {

constexpr int kM2LStageLanes = 32;   ///< sources per batch: one per lane
constexpr int kM2LStageStride = 33;  ///< a term's row of the batch (32 sources + 1: a lane's writes hit 16 banks)

/// Where term q of the batch's source i is staged: Ms[q * kM2LStageStride + i]. The warp copies source i's terms
/// q = lane, lane + 32, ... (coalesced reads; the writes' words q + i mod 16 differ within each half warp), then lane
/// i reads its own source's terms at stride kM2LStageStride (consecutive words across the lanes).
AG_HD constexpr unsigned m2lStageAt(unsigned q, unsigned i) { return q * unsigned(kM2LStageStride) + i; }

/// The doubles of one warp's staged multipoles (order p's terms).
AG_HD constexpr int m2lStageDoubles(int terms) { return terms * kM2LStageStride; }

/// The L terms the staged kernel keeps in registers at order p (the first ones in term order; the others in the
/// lane's shared column). lowRegs (variant 2): the plain kernel's (cuda/m2l_device.h kM2LRegTerms: degree <= 2 at
/// p 7). Otherwise as many as compile without spilling where the plain kernel did not (ptxas -v, sm_90: p 6 spills
/// 104 bytes at 35) and, at p 7, the terms of degree <= 3, which leave 120 x 33 + 100 x 32 doubles (57,280 bytes) a
/// one-warp block: 4 blocks per SM on an H100 (3 with 10 in registers).
AG_HD constexpr int m2lStagedRegTerms(int p, bool lowRegs) {
  return p == 3 ? 20 : p == 4 ? 35 : p == 5 ? (lowRegs ? 20 : 35) : p == 6 ? 20 : lowRegs ? 10 : 20;
}

}  // namespace fmm
}  // namespace amrgrav
