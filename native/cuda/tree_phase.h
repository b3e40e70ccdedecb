/// \file tree_phase.h
/// \brief The CUDA backend's tree phase, step by step as cpu_backend.cpp does it: the options' and cells' checks,
/// upload and root-cube bounds, Morton keys, stable sort, mass upload and check, octree topology level by level,
/// the nodes' first keys, the gather into sorted scaled cells, and the moments bottom-up. The kernels are
/// kernel_keys.cu, kernel_build.cu and kernel_moments.cu; the pieces of the device block are memory_plan.h's.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "core/types.h"
#include "cuda/kernels.h"
#include "tree/tree.h"

namespace amrgrav {
namespace cuda {

/// The most cells one solve takes: sorted positions and cell ranges are 32-bit unsigned, and every grid-stride loop
/// (at most 4 x 65535 blocks of 256 threads: < 2^26) must step past the last cell without wrapping.
constexpr std::size_t kMaxCudaCells = (std::size_t(1) << 32) - (std::size_t(1) << 26) - 1;

struct DeviceState;

/// The checks every solve makes before touching the cells on the device: options, the CUDA backend's limits.
Status checkOptions(const SolveOptions& opt, std::size_t n, bool direct);

/// The device flagged cell `bad`: the host validator names the first bad cell exactly as the CPU backend does.
Status flaggedCell(DeviceState& ds, unsigned bad, const CellsView& cells, const SolveOptions& opt);

/// The cells' checks every solve makes on the device (CellChecks; the first bad cell's message from the host's
/// validateCells): positions and sizes in uploadAndBound, the masses in sortAndBuild.
CellChecks cellChecks(DeviceState& ds, const SolveOptions& opt);

/// The solve's device block, x, y, z, size uploaded, checked, and their extents' bounds (extentLo, extentHi)
/// and this process's root cube (root: chooseRootCube, caller's units). n > 0.
Status uploadAndBound(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, bool direct);

/// The masses' check and total (the bounds kernel over `mass`, the same order of additions in every solve), queued on
/// ds.stream with their read-back into the pinned small buffer: *total and *firstBad (0xffffffff: none) point there;
/// read them after a synchronisation of ds.stream.
Status queueMassCheck(DeviceState& ds, const CellChecks& checks, const double* mass, unsigned n, double** total,
                      unsigned** firstBad);

/// queueMassCheck's read-back alone, after a mass check queued otherwise (a block solve's launchBlockMassBounds).
Status queueMassReadback(DeviceState& ds, const CellChecks& checks, double** total, unsigned** firstBad);

/// What method 'fmm' (fmm_phase.cu) takes of sortAndBuild's direct layout before its gather overwrites the keys:
/// host arrays (n each, or null: not copied) for the sorted keys and the order (sorted position -> caller's index),
/// and with treeLeafSize > 0 the octree topology with leaves of that size (buildTree: ds.topoPtr, ds.levelStart,
/// ds.nodes, ds.depth) and the nodes' first keys (computeNodeKeys), in the spare index half: the FMM's device tree.
struct SortDownload {
  std::uint64_t* keys = nullptr;
  std::uint32_t* order = nullptr;
  int treeLeafSize = 0;
};

/// Keys with the length scale `givenScale` (0: the root cube's own, lengthScaleFor(side); a distributed solve
/// gives the global one), sort, mass upload and check, octree topology (unless direct), gather into sorted
/// scaled cells, and the sums' arrays. Leaves the solve's state in the DeviceState (slot, root scaled, scale,
/// massScale, nodes, depth, sums).
/// massAside (a distributed solve's rank): the masses go up into a buffer of their own on the second stream while
/// the keys are sorted (8 more bytes per cell; slot 5 is the sort's until it ends), instead of into slot 5 after it.
/// down (method 'fmm'): the sorted keys and order copied into the host's arrays once the checks have passed.
Status sortAndBuild(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, bool direct, double givenScale,
                    bool massAside = false, const SortDownload* down = nullptr);

/// The end of sortAndBuild after the gather (the cells sorted and scaled in their slots, ds.scale and ds.root set):
/// the mass scale from the cells' total mass, the density contrast, and the sums' arrays. A block solve that kept
/// its tree calls it too (blocks_phase.cu).
Status finishCells(DeviceState& ds, const SolveOptions& opt, bool direct, double massTotal);

/// 2^-round(log2(v)) for v > 0 (exact scaling: the masses' scale from their total), 1 when v is zero or out of
/// range.
double powerOfTwoScale(double v);

/// uploadAndBound, then sortAndBuild (n > 0).
Status prepareCells(DeviceState& ds, const CellsView& cells, const SolveOptions& opt, bool direct, double givenScale);

/// Room for `need` nodes of topology, keeping the first `used`: in the spare index half while they fit (n/4
/// nodes), else in a buffer of its own.
Status reserveTopo(DeviceState& ds, std::size_t need, std::size_t used);

/// Octree topology, one level per pass (see kernel_build.cu). levelStart[L] = first node of level L, with a
/// final entry = node count.
Status buildTree(DeviceState& ds, unsigned n, int leafSize, unsigned* nodesOut, int* depthOut);

/// nodeKeysPtr[i] = key of node i's first cell, after the topology in the spare index half (n/6 nodes fit
/// with it), else in a buffer of its own.
Status computeNodeKeys(DeviceState& ds, unsigned nodes);

/// The small read-back slot (in doubles from the start of ds.small) of countGroups' total.
constexpr int kGroupCountSlot = 19;

/// The walk groups (tree/groups_k.h) from the sorted keys, in two steps around the build's synchronisation: queue
/// the group starts (one bit per cell, in the block's extra bytes when they fit), the per-tile counts, their scan
/// and the total's read-back; then, with the total read (ds.numGroups), each group's first cell into
/// ds.groupBegin, queued before the moments take the extra bytes.
Status countGroups(DeviceState& ds, unsigned groupSize);
Status writeGroups(DeviceState& ds);

/// The MAC records, multipoles (and, for signed sources, dipoles) of every node, level by level from the deepest:
/// in the block's tail when they fit, else in buffers of their own.
Status computeMoments(DeviceState& ds, unsigned n, unsigned nodes, int depth, const RootCube& root,
                      const SolveOptions& opt, double massScale);

}  // namespace cuda
}  // namespace amrgrav
