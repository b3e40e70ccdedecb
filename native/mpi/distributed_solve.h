/// \file distributed_solve.h
/// \brief The distributed tree solve, CPU or GPU ranks: every rank passes its own cells and gets the potential
/// (and accelerations) of the whole distribution at them, through locally essential trees exchanged with
/// non-blocking MPI while the local walk runs.
#pragma once
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {

/// The driver is one sequence over a RankEngine (rank_engine.h), the CPU's or the GPU's: agreeToProceed, the
/// engine's key sort with the global length scale, build and moments, the summaries' allgather, then the LETs
/// chosen with essentialNodesFor and packed with packLet (the GPU: the same on the device), LetExchange while its
/// local walk runs, and the received LETs, viewed with viewPackedLet, merged in rank order and walked with the
/// accumulate semantics of walkGroups (WalkPass{true, false}).
///
/// Collective over amrgrav's communicator: every rank calls it, in the same order, with the same options; a rank
/// may pass no cells. Bad input on any rank makes every rank return that rank's error. Without MPI in the build
/// (or a world of one rank) this is the single-process CPU solve.
Status solveDistributedCpu(const CellsView& cells, const SolveOptions& opt, SolveResult& out);

/// solveDistributedCpu with each rank's tree, local walk and LET walks on its GPU (rank_engine.h; the device is
/// deviceForLocalRank(nodeLocalRank(), devices)). The same LETs on the wire, so CPU and GPU ranks can be mixed,
/// in isolated and in periodic boxes. A rank without a usable
/// device (or a build without CUDA) makes every rank return NoDevice. In a world of one rank: the plain CUDA solve.
Status solveDistributedCuda(const CellsView& cells, const SolveOptions& opt, SolveResult& out);

/// The matching call for a rank that failed before it could call solveDistributedCpu (e.g. input rejected in
/// TypeScript): takes part in the agreement with `why`, so that every rank returns the error.
Status failDistributedSolve(const Status& why);

}  // namespace amrgrav
