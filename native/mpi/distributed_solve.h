/// \file distributed_solve.h
/// \brief The distributed tree solve, CPU or GPU ranks: every rank passes its own cells and gets the potential
/// (and accelerations) of the whole distribution at them, through locally essential trees exchanged with
/// non-blocking MPI while the local walk runs. The driver only: each rank's own work is a RankEngine
/// (core/rank_engine.h) that the caller makes (api/ picks cpu/cpu_rank_engine.h or cuda/cuda_rank_engine.h).
#pragma once
#include <functional>
#include <memory>

#include "core/rank_engine.h"
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {

/// Makes this rank's engine for one solve; a failure (e.g. a build without the backend asked for) is agreed on, so
/// that every rank returns it.
using RankEngineFactory = std::function<Status(std::unique_ptr<RankEngine>& engine)>;

/// The driver is one sequence over a RankEngine, the CPU's or the GPU's: agreeToProceed, the engine's key sort
/// with the global length scale, build and moments, the summaries' allgather, then the LETs chosen with
/// essentialNodesFor and packed with packLet (the GPU: the same on the device), LetExchange while its local walk
/// runs, and the received LETs, viewed with viewPackedLet, merged in rank order and walked with the accumulate
/// semantics of walkGroups (WalkPass{true, false}). The same LETs on the wire whatever the engine, so CPU and GPU
/// ranks can be mixed, in isolated and in periodic boxes.
///
/// Collective over amrgrav's communicator: every rank calls it, in the same order, with the same options; a rank
/// may pass no cells. Bad input on any rank (or an engine that cannot be made or opened, e.g. no usable device) makes
/// every rank return that rank's error. Only for a world of more than one rank (mpiWorld().size > 1; Internal
/// otherwise, and in a build without MPI): one process solves on its backend instead.
Status solveDistributed(const RankEngineFactory& makeEngine, const CellsView& cells, const SolveOptions& opt,
                        SolveResult& out);

/// solveDistributed over a system (core/system.h): each rank passes its own cells, probes and subset of targets (any
/// of them empty); a LET goes from every rank with cells to every rank with targets or probes, chosen for the box of
/// its cell and probe groups (RankSummary). Engines that do not walk probes or targets refuse them
/// (RankEngine::openSystem), on every rank.
Status solveDistributedSystem(const RankEngineFactory& makeEngine, const SystemView& system, const SolveOptions& opt,
                              SystemResult& out);

/// The matching call for a rank that failed before it could call solveDistributed (e.g. input rejected in
/// TypeScript): takes part in the agreement with `why`, so that every rank returns the error.
Status failDistributedSolve(const Status& why);

}  // namespace amrgrav
