/// \file walk_phase.h
/// \brief The CUDA backend's walk phase and its results: the walk's launch shape, its parameters over the local
/// tree, the passes (periodic: up to three, kernels.h WalkConfig), the queue's growth and the rerun after an
/// overflow, then scaling, scatter and download, and the phases' times. The kernels are kernel_walk.cu and
/// kernel_finish.cu.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "cuda/device_state.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {

/// Smallest power of two >= v (at most 2^31).
unsigned nextPow2(unsigned long long v);

/// The cells' walk configuration for these options (order, accelerations, cells per lane, vote, periodic, dipole).
/// Cells per lane of a walk over groups of at most groupSize targets: 1 (<= 32), else 2.
int cellsPerLaneFor(int groupSize);
WalkConfig walkConfigFor(const SolveOptions& opt);

/// The walk's launch: its configuration and block count (every block resident); sets the initial queue capacity.
Status walkShape(DeviceState& ds, unsigned n, const SolveOptions& opt, WalkConfig* cfg, int* blocks);

/// The walk over the local tree: its launch shape and parameters, each group's smallest size, and the sizes turned
/// into self terms (which phi overwrites: its array is the sizes', see prepareCells).
Status prepareWalk(DeviceState& ds, unsigned n, const SolveOptions& opt, double massScale, double* phi,
                   double* const* g, WalkConfig* cfg, int* blocks, WalkParams& p);

/// prepareWalk and walkUntilDone; the interaction counts and groups into `st`.
Status walk(DeviceState& ds, unsigned n, const SolveOptions& opt, double massScale, double* phi, double* const* g,
            SolveStats& st);

/// walkPasses until no queue overflows, with a larger queue each time; `total`: the complete try's counts. Every
/// walked target is written again by a rerun, so sums in arrays of their own need no reset; `beforeRerun` (when
/// given) restores what a try wrote over (walkUntilDone's self terms).
Status walkPassesUntilDone(DeviceState& ds, const WalkConfig& cfg, int blocks, const SolveOptions& opt, WalkParams& p,
                           WalkTally& total, const std::function<Status()>& beforeRerun = nullptr);

/// The local tree's walk (periodic: the walk of the groups that expand the Ewald correction, then, if any are left,
/// the others, then the expanding groups' corrections; kernels.h WalkConfig). A queue overflow in any pass reruns
/// them all: groups that finished wrote phi over their self terms, which come back (launchWalkPrep over p's groups
/// into p.groupHmin; a walk of a subset of the groups passes `fullHmin`, prepareWalk's smallest sizes of all of
/// ds's groups, and every cell's comes back).
Status walkUntilDone(DeviceState& ds, const WalkConfig& cfg, int blocks, const SolveOptions& opt, WalkParams& p,
                     WalkTally& total, double* fullHmin = nullptr);

/// One try of the walk's passes (periodic: up to three, kernels.h WalkConfig), into `total`; stops at the first
/// pass that overflowed its queue (*need > 0). firstDone: the first pass was launched (launchPass) and collected
/// already (a GPU rank's local walk), its counts in `total`.
Status walkPasses(DeviceState& ds, const WalkConfig& cfg, int blocks, const SolveOptions& opt, WalkParams& p,
                  WalkTally& total, unsigned* need, bool firstDone);

/// A larger walk queue after an overflow that needed `need` entries per warp.
Status growQueue(DeviceState& ds, unsigned need);

/// One launch of a walk kernel over the groups it owns; *need > 0 when a queue overflowed (rerun with a larger one).
Status walkPass(DeviceState& ds, const WalkConfig& cfg, int maxBlocks, WalkParams& p, WalkTally& total,
                unsigned* need);

/// walkPass's launch and the copies of its counters, not waited for. The periodic kernels have their own
/// occupancy: fewer blocks than walkShape's (sized for the queues) is fine.
Status launchPass(DeviceState& ds, const WalkConfig& cfg, int maxBlocks, WalkParams& p);

/// The first group of each of `chunks` launches over numGroups walk groups, and numGroups at the end (chunks + 1
/// entries): each launch takes 4 times the next one's groups (3 launches: 76%, 19%, 5%), so the last launch, whose
/// results are all that waits for the walk's end, is small, and each earlier one's results come down while the
/// later ones walk.
std::vector<unsigned> walkChunkGroups(unsigned numGroups, int chunks);

/// launchPass in launches over the groups [groupFirst[k], groupFirst[k + 1]) one after the other (a cell walk, not
/// periodic: one pass), done[k] recorded on the stream after launch k: its groups' sums are then final, bitwise
/// those of one launch. Not waited for; collectPass reads the counters of all of them.
Status launchChunkedPass(DeviceState& ds, const WalkConfig& cfg, int maxBlocks, WalkParams& p,
                         const std::vector<unsigned>& groupFirst, const cudaEvent_t* done);

/// Waits for the pass launchPass queued and reads its counters.
Status collectPass(DeviceState& ds, WalkTally& total, unsigned* need);

/// The sorted sizes again (the walk's overflow path: the groups that finished before it wrote phi over their self
/// terms), from the caller's array through a buffer that lives only for this.
Status restoreSizes(DeviceState& ds, unsigned n);

/// Scale, scatter to the caller's order, into slots nothing reads any more (pot over x, ax over y, ay over z, az
/// over the mass), and download into `dest`.
Status finishAndDownload(DeviceState& ds, const SolveOptions& opt, const ResultTargets& dest);

/// finishAndDownload's device part: the results in the caller's order in res[0..3] (pot, ax, ay, az: slots 4, 0, 1,
/// 3; a block solve's compact layout: slots 4, 3 and two buffers aside), queued on the backend's stream (events[5]
/// after them).
Status finishOnDevice(DeviceState& ds, const SolveOptions& opt, double* res[4]);
/// finishAndDownload's copy: finishOnDevice's results into the caller's arrays (ds.stats.secondsDownload: its time).
Status downloadFinished(DeviceState& ds, const SolveOptions& opt, double* const res[4], const ResultTargets& dest);

/// The seconds between two of the state's events (0 when they cannot be read).
double elapsed(DeviceState& ds, int a, int b);

/// The phases' times from the events (after finishAndDownload) into the state's stats and `st`.
void fillStats(DeviceState& ds, bool direct, Clock::time_point t0, SolveStats& st);

/// tree/finish.cpp's volume-weighted mean potential over the caller's arrays (on the copy threads: a serial pass
/// would cost a tenth of a 16M-cell solve).
double meanPotentialOf(DeviceState& ds, const double* phi, const double* size, std::size_t n);

}  // namespace cuda
}  // namespace amrgrav
