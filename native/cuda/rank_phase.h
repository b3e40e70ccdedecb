/// \file rank_phase.h
/// \brief One rank's share of a distributed solve on the device, step by step over a DeviceState (the GPU rank,
/// cuda_rank_engine.h, calls these in this order; the tools' adapter, testing.h, too). The same semantics as the CPU
/// rank's: root cube of this rank's cells, the caller's (global) length scale, the same MAC (periodic boxes: the
/// same Ewald table, LETs chosen by essentialNodesForPeriodic's test); received LETs are walked into sums of their
/// own, then added (the CPU's accumulate), with no self pair and, in a periodic box, no hoisted corrections. Each
/// step takes the state's lock; host exceptions come back as a Status.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "core/types.h"
#include "let/let.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;

/// This process's state on `device` (cuda_backend.h cudaOptionsFromEnvironment: the defaults and the knobs a
/// one-process solve takes), kept between solves (its device buffers are reused every step) and made anew when a
/// solve asks for another device: the tree's GPU rank (cuda_rank_engine.h) and the FMM's (fmm_rank_phase.h) share it,
/// so ranks of one process use one state whichever method runs.
DeviceState& rankDeviceState(int device);

/// The received LETs as one tree (let/let.h mergeLets' layout: virtual nodes with an infinite MAC radius on top,
/// which every walk opens) in the walk's device layout (ds.letTopo, letMac, letMQ, letDip, letCells), masses and
/// quadrupoles times ds.massScale; queued on `s`.
Status uploadForest(DeviceState& ds, const ReceivedLet* lets, std::size_t count, cudaStream_t s);

/// Before the ranks' agreement: the options, the backend's limits, the device (NoDevice without one), and the
/// cells: uploaded and checked as validateCells does (its message on a failure), lo/hi = their extents' bounds
/// (the box when given; empty without cells or box).
Status rankOpen(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]);

/// Keys with length scale `scale`, sort, masses, build, moments (the cells of rankOpen, cells.n > 0).
Status rankBuild(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
                 SolveStats& st);

/// The summary of the cells the ranks share (let/let.h; scaled): the box of the centres from a pass over the
/// sorted cells, the extents' box from rankOpen's, the root's centre of mass, the device's mass sum.
Status rankSummary(DeviceState& ds, RankSummary& out);

/// Chooses and packs on the device the LETs for these remote boxes of cell centres (let/let.h essentialNodesFor
/// and packLet: the same nodes, the same bytes); their node and cell counts into letNodes/letCells[count]. Call
/// before rankStartLocalWalk: the packing then runs before the walk, and the downloads beside it.
Status rankChooseLets(DeviceState& ds, const RemoteBox* boxes, std::size_t count, std::size_t* letNodes,
                      std::size_t* letCells);

/// Queues the walk of the local tree and returns at once. targets[targetCount]: a subset of this rank's cells (core/
/// system.h, checked: validateTargets; null: every cell): this walk, rankWalkReceived's and the particles' walks of
/// the cells (rank_system.h) take only the groups holding one (subset_phase.h), and rankFinish returns their values,
/// bitwise those of the same rank's solve of every cell. The array must live until rankFinish.
Status rankStartLocalWalk(DeviceState& ds, const SolveOptions& opt, const std::uint32_t* targets = nullptr,
                          std::size_t targetCount = 0);

/// Downloads the k-th LET of rankChooseLets on a second stream (beside the local walk); blocks until done.
Status rankDownloadLet(DeviceState& ds, std::size_t k, PackedLet& out);

/// Whether the local walk's launch has finished (never blocks).
Status rankLocalWalkDone(DeviceState& ds, bool* done);

/// Waits for the local walk, reruns it after a queue overflow, counts its interactions into `st`.
Status rankFinishLocalWalk(DeviceState& ds, const SolveOptions& opt, SolveStats& st);

/// The received LETs, all here before the local walk is done: uploaded and merged on the second stream, beside
/// the walk. The same LETs (their buffers untouched) must then be passed to rankWalkReceived.
Status rankPrepareReceived(DeviceState& ds, const ReceivedLet* lets, std::size_t count);

/// Uploads the received LETs as they are packed (unless rankPrepareReceived did), merges them on the device into
/// one forest (let/let.h mergeLets' layout) and walks it into the local sums (count 0: nothing).
Status rankWalkReceived(DeviceState& ds, const ReceivedLet* lets, std::size_t count, const SolveOptions& opt,
                        SolveStats& st);

/// Scale, scatter, download into out (its targets: every cell, or rankStartLocalWalk's subset in its order), device
/// times into out.stats (fully periodic: meanPotential over the cells returned).
Status rankFinish(DeviceState& ds, const SolveOptions& opt, SolveResult& out);

}  // namespace cuda
}  // namespace amrgrav
