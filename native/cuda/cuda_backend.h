/// \file cuda_backend.h
/// \brief The CUDA backend: the same solve as the CPU backend (same validation, root cube, keys, tree, moments,
/// groups and MAC decisions, hence identical interaction counts), run on one GPU. Plain C++: api/ includes this
/// without CUDA headers; cudart is linked statically, and every entry point reports a missing driver or device as a
/// Status (ErrorCode::NoDevice) rather than failing to load or aborting. The device checks are cuda/device.h's, the
/// distributed solve's GPU rank is cuda/cuda_rank_engine.h, and the tools' view of the backend (its settings, its
/// device statistics, its rank steps one by one) is cuda/testing.h.
///
/// The implementation is split by phase over one plain state (cuda/device_state.h): device set-up (device.cu), the
/// memory plan (memory_plan.cu), the tree (tree_phase.cu), the Ewald table (ewald_phase.cu), the walk and the
/// results (walk_phase.cu), a distributed solve's rank steps (rank_phase.cu); cuda_backend.cu orchestrates a solve.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/backend.h"
#include "cuda/device.h"

namespace amrgrav {

/// Settings of the CUDA backend that SolveOptions does not (yet) carry.
struct CudaOptions {
  int device = 0;                          ///< CUDA device index
  bool pinnedStaging = true;               ///< copy through pinned chunks (false: plain pageable cudaMemcpy)
  /// bytes per pinned chunk (2 per copy thread; AMRGRAV_CUDA_STAGING_MIB): 2 MiB measured 0.3-0.4 ms faster than 4
  /// for the 256^3 block upload, equal to 1 MiB (bench/RESULTS.md, 2026-11-26)
  std::size_t stagingChunkBytes = 2u << 20;
  int copyThreads = 0;  ///< host threads of the staged copies; 0: min(8, hardware threads / 2) (AMRGRAV_CUDA_COPY_THREADS)
  unsigned initialQueueCapacity = 4096;    ///< per-warp walk queue entries (power of two; grows on overflow)
  /// The walk's groups of 64 whose lanes' two cells share x and y (cubes of one level) take each list entry's x-y
  /// terms once for both cells (kernel_walk.cu, paired evaluators: the same bits as unpaired). The API's backends
  /// take AMRGRAV_WALK_PAIRED=0 to turn it off (a measurement knob).
  bool pairedCells = true;
  /// The host block entry's walk in this many launches over consecutive groups, each launch's results downloaded,
  /// finished and scattered into the caller's arrays while the next ones walk (pinned staging, not periodic; at
  /// most 16). 0: by size (1 below 4096 walk groups, else 3); 1: one launch, then the download.
  /// The API's backends take it from the environment variable AMRGRAV_CUDA_RESULT_CHUNKS when set (measurements).
  int resultChunks = 0;
  bool poisonDevice = false;               ///< fill device result buffers with NaN before each solve (tests)
  /// Check the cells in the device's first pass over them (the bounds kernel) instead of core/validate.h's
  /// validateCells on one host thread (90 ms of a 180 ms solve at 256^3). When a cell fails, validateCells runs on
  /// the host and its Status is returned, so error codes and messages are exactly the CPU backend's.
  bool validateOnDevice = true;
  /// Method 'fmm': build the interaction lists on the device (cuda/fmm_lists_phase.h: the same lists as the host's,
  /// array for array) instead of on the host; the near field's tiles are still made on the host from the P2P pairs
  /// copied down. On by default since measured on an H100 (256^3: 45-55 ms with the transfers against 1.2 s on the
  /// host's 16 cores; the same lists and bitwise the same results); the API's backends take
  /// AMRGRAV_FMM_DEVICE_LISTS=0 to build them on the host.
  bool fmmDeviceLists = true;
  /// Method 'fmm': the root cube and the key sort on the device (method 'tree''s steps, cuda/tree_phase.h; the sorted
  /// order and keys copied down, the cells gathered by sortCellsByKey's gather) instead of on the host: the same root,
  /// order, keys and sorted cells, bit for bit (GPU parity subject fmm, fmm-device-sort cases), and the sorted cells
  /// stay on the device for the evaluation. The API's backends take it from AMRGRAV_FMM_DEVICE_SORT (0: the host's).
  bool fmmDeviceSort = true;
  /// Method 'fmm' with fmmDeviceLists: the near lists and P2P tiles built on the device from its P2P pairs
  /// (cuda/fmm_tiles_phase.h: the same arrays as the host's fmm/p2p_tiles.h, so the same bits) instead of the pairs
  /// copied down and the tiles made on the host and uploaded; no effect without fmmDeviceLists; they read the sorted
  /// cells where the sort left them (the device's block, or the FMM's own buffer after the host's sort). On by
  /// default since measured on an H100 (256^3: a warp per leaf, target and tile builds them in 2.8 ms, 12 ms with
  /// the acceleration rule's pairs, against ~0.5 s on the host; gpu.fmm-tiles: every array equal, solves bitwise).
  /// AMRGRAV_FMM_DEVICE_TILES=0 in the API's backends makes them on the host.
  bool fmmDeviceTiles = true;
  /// Method 'fmm' with fmmDeviceSort and fmmDeviceLists: the FMM tree's topology and its upward pass (centres,
  /// radii, MAC quantities, multipoles) on the device (cuda/fmm_tree_phase.h: the host's buildFmmTree bit for bit,
  /// by the same rules, fmm/upward_k.h) instead of on the host and uploaded; the lists then read them there and the
  /// multipoles never cross the bus (with the host's tiles the topology and centres come down for them). No effect
  /// without both. On by default since measured on an H100 (ctest gpu.fmm-tree: the arrays and solves bitwise the
  /// host tree's; 256^3: 33 ms against 0.63 s, and with the device's tiles nothing per cell comes down but the
  /// results: 109 ms end to end against 1.96 s); the API's backends take AMRGRAV_FMM_DEVICE_TREE=0 for the host's.
  bool fmmDeviceTree = true;
  /// Method 'fmm' in periodic boxes (cuda/fmm_periodic_phase.cu): the key sort on the device (with fmmDeviceSort;
  /// the density contrast of a fully periodic box applied there to the sorted masses, the total the CPU's
  /// fixed-order sum) and the interaction lists with their image shifts walked on the device (with fmmDeviceLists;
  /// fmm/dual_walk_k.h, the same lists as the host's buildInteractionLists(..., period), array for array: the M2L
  /// CSR and its shifts stay there, the P2P pairs with their shifts come down for the host's near tiles), and with
  /// fmmDeviceTree as well the tree and its upward pass with dipole terms (cube centres; the signed scale from the
  /// host's gathered cells over the topology that comes down, the multipole norms there: buildFmmTree's bits). The
  /// near tiles and the far images' pass stay on the host. On by default since measured on an H100 (ctest
  /// gpu.fmm-periodic: the device path bitwise the host path, both within 1e-12 of the CPU; 256^3 fully periodic
  /// 1.27 s end to end against 4.95 s); the API's backends take AMRGRAV_FMM_DEVICE_PERIODIC=0 for the host's path.
  bool fmmDevicePeriodic = true;
  /// Method 'fmm' in periodic boxes with fmmDevicePeriodic and fmmDeviceLists: the near lists and P2P tiles with
  /// their image shifts built on the device from its P2P pairs with their shifts (cuda/fmm_tiles_phase.h with
  /// FmmTileInputs::period: buildHostNearField's arrays with shifts, element for element, so the same bits), so the
  /// pairs no longer come down and the tiles no longer go up (the subject fmm-periodic's fmm-devperiodic-tiles cases:
  /// every array equal, solves bitwise the host tiles', H100 2026-11-26; 256^3: 1.52 -> 1.01 s); the API's backends
  /// take AMRGRAV_FMM_DEVICE_PERIODIC_TILES (0: the host's tiles).
  bool fmmDevicePeriodicTiles = true;
  /// Method 'fmm' in periodic boxes with fmmDevicePeriodic, fmmDeviceSort, fmmDeviceLists, fmmDeviceTree and
  /// fmmDevicePeriodicTiles: no host copy of the sorted cells (the sort gathers nothing down; the density contrast on
  /// the device alone), the signed scale from the device's cells (cuda/fmm_scale_phase.h: the host's
  /// signedSourceScale bit for bit, the few leaves that may hold its maximum down and recomputed by the host's own
  /// function), and the finish on the device (the self term folded, G and scaling, the caller's order:
  /// kernel_finish.cu, the isolated path's; the mean potential of a fully periodic box from the results and the
  /// caller's sizes), as the isolated path's device finish. A tree with leaves shallower than the far images'
  /// frontier (none on uniform grids) gathers the host's sorted cells after all and finishes on the host. The
  /// subject fmm-periodic's fmm-devperiodic cases check it bitwise against the gathering path (this off); the API's
  /// backends take AMRGRAV_FMM_DEVICE_PERIODIC_FINISH (0: the host's gathered cells, scale and finish).
  bool fmmDevicePeriodicFinish = true;
  /// Method 'fmm': the M2L kernel (cuda/m2l_variants.h FmmM2LVariant: 0 plain, 1 staged, 2 staged-lowregs, 3 direct,
  /// 4 direct-lowregs, 5 harmonic), isolated and periodic boxes alike; 0-4 make the same products and sums in the same
  /// order (the direct ones round the derivatives otherwise), 5 folds the multipoles onto their harmonic terms first
  /// (about half the products). 5 (harmonic) since measured on an H100 (native/tools/m2l_bench.cpp, p 7: 0.228 ns a
  /// pair against direct's 0.635 and plain's 0.695; 256^3: M2L 10.7 ms against 30.0; ctest gpu.fmm runs every variant
  /// against the CPU); the API's backends take AMRGRAV_FMM_M2L; a number past them fails the solve.
  int fmmM2L = 5;
  /// Method 'fmm' with accelerations: the near field's table steps on the FP64 tensor cores, four products per step
  /// (kernel_fmm.cu fmmP2PTilesMma<true>), instead of FMAs in the CPU's order (fmmP2PTiles<true>); both differ from the
  /// CPU by rounding only. The API's backends take AMRGRAV_FMM_ACCEL_MMA=0 to turn it off (a measurement knob).
  bool fmmAccelTablesMma = true;
  /// Method 'fmm': the near field's computed pairs of regular target leaves (leaves of another size, or too far for
  /// a table: most of an AMR mesh's near-field time) in single precision (kernel_fmm.cu fmmP2PComputedSingle,
  /// fmm/near_single_k.h: float positions relative to the target, masses scaled per batch, sums into double), instead
  /// of double (fmmP2PComputed: the CPU's pairs to rounding). They move a cell's potential by ~1e-7 of itself, far
  /// below the FMM's accuracy (GPU parity subject fmm, its near-single cases). The API's backends take
  /// AMRGRAV_FMM_NEAR_SINGLE=0 for double; the GPU parity tool runs double, to compare with the CPU to rounding.
  bool fmmNearSingle = true;
};

/// Per-solve measurements of the CUDA backend (device phases from cudaEvents on the backend's stream).
struct CudaStats {
  double secondsValidate = 0;  ///< host: validateOptions (+ validateCells unless validateOnDevice)
  /// host -> device copies (staging included). Wall time: a block solve's densities on a new mesh go up on a
  /// stream of their own while the keys, sort and build run (host entry), so this overlaps secondsKeys and
  /// secondsBuild there
  double secondsUpload = 0;
  double secondsKeys = 0;      ///< bounds, keys, sort, gather
  double secondsBuild = 0;     ///< mass check, octree topology, the nodes' first keys
  double secondsMoments = 0;
  double secondsWalk = 0;      ///< walk (all reruns) or direct kernel, plus the final scaling/scatter
  /// device -> host copies into the result arrays (host clock). The host block entry in chunks
  /// (CudaOptions::resultChunks): the wall time from the first chunk's results being final to the last in the
  /// caller's arrays (plus the sorted order's download on a new mesh), overlapping the walk of the later chunks
  double secondsDownload = 0;
  /// A system solve's particles (device events): their tree (keys, sort, build, moments, softening ranges and
  /// extents; the positions and softening lengths already uploaded) and their walks (the particles as targets of
  /// both trees, with the own pairs' removal, scaling and scatter). 0 without particles or with 'direct'.
  double secondsParticleTree = 0;
  /// secondsParticleTree's parts: keys and sort, the build (topology, node keys, groups), the gather, the moments
  /// with the softening ranges; and the tree's depth (levels below the root).
  double particleTreeParts[4] = {0, 0, 0, 0};
  int particleTreeDepth = 0;
  double secondsParticleWalk = 0;
  double secondsTotal = 0;     ///< host clock from after validation to return
  std::size_t deviceBytes = 0;      ///< device memory held by the backend after the solve
  double deviceBytesPerCell = 0;    ///< deviceBytes / cells
  std::size_t pinnedBytes = 0;      ///< pinned host staging held
  unsigned queueCapacity = 0;       ///< walk queue entries per warp in the final walk launch
  unsigned queuePeak = 0;           ///< most entries any warp needed
  /// walk launches: 1 (periodic: up to 3, kernels.h WalkConfig; the host block entry in chunks: one per chunk,
  /// CudaOptions::resultChunks) + reruns
  int walkLaunches = 0;
  double walkPassSeconds[3] = {0, 0, 0};  ///< host clock per launch of the last run: walk, per-pair walk, corrections
  int walkBlocks = 0, walkWarps = 0;
  /// Walk groups evaluated in pairs (CudaOptions::pairedCells: each lane's two cells share x and y), all launches
  unsigned pairedGroups = 0;
  /// Method 'fmm' (device events of the last solve): the evaluation's kernels, P2P, M2L, L2L (all levels) and L2P;
  /// together secondsWalk. 0 for method 'tree'.
  double fmmKernelSeconds[4] = {0, 0, 0, 0};
  /// Method 'fmm': the interaction lists (host clock; part of secondsBuild): the CPU's walk, or with
  /// CudaOptions::fmmDeviceLists the device's (the tree's arrays and MAC quantities up, the walk and its sorts, the
  /// P2P pairs down); that walk's rounds and largest frontier (0 for the CPU's).
  double fmmListSeconds = 0;
  int fmmListRounds = 0;
  std::uint64_t fmmListMaxFrontier = 0;
  /// Method 'fmm', the near field's work (fmm/p2p_tiles.h): tiles, the regular targets in them, the tables
  /// uploaded, the (target, source) pairs by table and computed in the tiles, and the irregular (computed) leaves;
  /// the tiles' steps, by table and computed (a tile's union of its targets' tables: how well the order groups them).
  std::uint64_t fmmTiles = 0, fmmTileTargets = 0, fmmTables = 0, fmmTableEntries = 0, fmmComputedEntries = 0,
                fmmIrregularLeaves = 0, fmmTableSteps = 0, fmmComputedSteps = 0;
  /// Method 'fmm' with CudaOptions::fmmDeviceTiles: the device's build of the near lists and tiles
  /// (cuda/fmm_tiles_phase.h), each step's device time (events), named by kFmmTileStepNames; zeros otherwise.
  double fmmTileStepSeconds[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  /// Method 'fmm': deviceBytes by part, named by kFmmMemoryPartNames (their sum is deviceBytes): where #20's bytes a
  /// cell go.
  std::size_t fmmMemoryParts[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  /// Method 'fmm''s block entry (fmm_phase.h solveFmmBlocks): the cells were made on the device from the blocks (one
  /// number per cell up, none with device data); false when the host made them for the cell solve (periodic boxes,
  /// a step of the FMM on the host) and for every other solve.
  bool fmmBlocksOnDevice = false;
  /// Method 'fmm' in periodic boxes: whether the host had a copy of the sorted cells (the gathering path: any of
  /// CudaOptions::fmmDevicePeriodic's steps off or fmmDevicePeriodicFinish off, or leaves shallower than the far
  /// frontier), and with the device's signed scale (fmm_scale_phase.h) its candidate leaves and their cells, which
  /// came down.
  bool fmmPeriodicHostCells = false;
  std::uint64_t fmmScaleCandidates = 0, fmmScaleCandidateCells = 0;
  /// Its wall times: the signed scale (either way), and the device finish's steps: the self term and finish kernels
  /// (waited for), the results' copy into the caller's arrays, the mean potential on the host (zeros on the
  /// gathering path).
  double fmmScaleSeconds = 0, fmmFinishStepSeconds[3] = {0, 0, 0};
  /// Method 'fmm' in periodic boxes with the device's tree: the wall times of its steps beside the scale (parts of
  /// secondsMoments): the tree and upward pass (waited for), the tree's host copy down to the far frontier (and the
  /// fallback's gather), the scale into every lowBound and the norms (waited for). Zeros otherwise.
  double fmmTreeStepSeconds[3] = {0, 0, 0};
  std::string device;               ///< name, compute capability, multiprocessors
};

/// CudaStats::fmmTileStepSeconds' steps: the cells' sizes up; the leaves numbered; the directed P2P pairs sorted into
/// a CSR and the near lists; the regular leaves; the entries' slots and the tables' indices (and the slots down); each
/// target's sorted tables and hash; the targets' order (sorts, runs, placement); the tiles (counts, scan, steps and
/// columns); the irregular leaves' lists.
inline constexpr const char* kFmmTileStepNames[9] = {"size_up", "leaves", "near_lists", "regular", "slots",
                                                     "tables", "order",   "tiles",      "irregular"};

/// CudaOptions' defaults with the measurement knobs of the environment applied (AMRGRAV_FMM_M2L,
/// AMRGRAV_FMM_NEAR_SINGLE, AMRGRAV_WALK_PAIRED, ...; each documented at its option): what makeCudaBackend() and the
/// GPU ranks' device state (rank_phase.h rankDeviceState) run with.
CudaOptions cudaOptionsFromEnvironment();

/// The parts of CudaStats::fmmMemoryParts: the sort's and tree method's state (the index block with the sorted cells,
/// CUB's scratch, ...), the FMM's cells and sums, its expansions (centres, M, folded M, L), topology (with the leaves and
/// L2L's tables), M2L lists, the lists' build (its keys, frontiers and scratch), the near field (tiles, unit tables and
/// their build), the tree's build and the periodic path's.
inline constexpr const char* kFmmMemoryPartNames[8] = {"sort_state", "cells_sums", "expansions", "topology",
                                                       "m2l_lists",  "list_build", "near_field", "tree_periodic"};

/// name() == "cuda". Creating one touches no GPU; the first solve initialises the device. Calls are serialised
/// (one solve at a time per backend object); keep one object alive across solves to reuse its device memory. Its
/// options: cudaOptionsFromEnvironment().
std::unique_ptr<Backend> makeCudaBackend();

}  // namespace amrgrav
