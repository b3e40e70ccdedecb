/// \file device_state.h
/// \brief The CUDA backend's state as one plain struct: the device and its streams, the memory plan's buffers, and
/// the current solve between its phases. The phase functions (device.h, memory_plan.h, tree_phase.h, ewald_phase.h,
/// walk_phase.h, rank_phase.h) take it; the backend (cuda_backend.cu), the GPU rank (cuda_rank_engine.cu) and the
/// tools' adapter (testing.cu) each own one. Internal to native/cuda (CUDA types).
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "core/blocks.h"
#include "core/status.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_buffers.h"
#include "cuda/fmm_phase.h"
#include "cuda/kernels.h"
#include "cuda/memory_plan.h"
#include "ewald/table.h"
#include "tree/source_tree.h"
#include "tree/tree.h"

namespace amrgrav {
namespace cuda {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// start, uploaded, sorted, gathered, moments, walked, mass uploaded, built, keys started (a distributed solve's ranks
// agree between uploaded and keys started), then a system solve's particles' walks started and finished (on the
// cells' state's stream: CudaStats::secondsParticleWalk). A particles' state (particleState) records its tree's
// phases in the same slots, 5 after its softening lengths' upload and 4 after its moments, softening ranges and
// extents (CudaStats::secondsParticleTree). Then a block solve's densities going up on the copy stream while the
// keys, sort and build run (a new mesh, host entry): their start and end.
constexpr int kEvents = 13;
constexpr int kEventParticleWalkStart = 9, kEventParticleWalkEnd = 10;
constexpr int kEventDensityUpStart = 11, kEventDensityUpEnd = 12;

/// The host block entry's walk in at most this many launches (CudaOptions::resultChunks).
constexpr int kMaxResultChunks = 16;

/// Interactions counted by the walk's passes, and the groups the first periodic pass left to the per-pair walk.
struct WalkTally {
  unsigned long long approx = 0, direct = 0;
  unsigned skipped = 0;
};

/// `f()`, with host exceptions as a Status (no exception leaves the CUDA backend).
template <class F>
Status guarded(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Status::error(ErrorCode::OutOfMemory, "host memory exhausted during the CUDA solve");
  } catch (const std::exception& e) {
    return Status::error(ErrorCode::Internal, std::string("CUDA backend: ") + e.what());
  }
}

/// A block solve's part of the state (blocks_phase.h): the running solve's blocks (the tree phase makes the cells
/// from them instead of copying them up), their geometry on the device, and what a block solve keeps for the next
/// one on an unchanged mesh (the order, topology and levels stay where the build left them in the device block).
struct BlockState {
  const BlocksView* view = nullptr;  ///< the running block solve's blocks; null during a cell solve
  DeviceBuffer<double> geo;          ///< 6 per block: lo[3], dx[3]
  DeviceBuffer<std::int32_t> slots;  ///< the device entry's block index (BlocksView::blockIndex)
  DeviceBuffer<double> chunkSums;    ///< fixed-order chunk sums (the density contrast's total, the mean potential)
  BlockTreeKey key;                  ///< the kept tree's geometry and options; valid: it may serve again
  RootCube rootUnscaled;             ///< its root cube in the caller's units (the keys are made on it)
  RootCube rootScaled;               ///< ... scaled (the moments')
  const void* blockBase = nullptr;   ///< the device block it lives in (a reallocated block loses it)
  std::size_t blockBytes = 0;
  cudaEvent_t callerEvent = nullptr; ///< the device entry's ordering with the caller's stream
  /// The host entry on a new mesh: the densities going up (packed, the caller's dtype) into densityAt on the copy
  /// stream, from a thread of their own (blockMassesInto waits for it; the solve joins it whatever happens).
  std::future<Status> densityUpload;
  void* densityAt = nullptr;
  /// The host entry on an unchanged mesh with a page-locked density in one variable without guard cells
  /// (cudaMallocHost or cudaHostRegister by the caller): its device-visible address, which the mass kernel reads over
  /// PCIe (no staged copy, whose host memcpy is bound by the host's memory bandwidth); null otherwise.
  const void* pinnedDensity = nullptr;
  /// The host entry's results in chunks (blocks_phase.cu): the sorted order on the host (valid for the kept tree
  /// once downloaded), each cell's element in the caller's layout, and each walk launch's end.
  std::vector<std::uint32_t> hostOrder;
  bool hostOrderValid = false;
  BlockElements elements;
  /// Each sorted cell's element in the caller's layout, made by the first unchanged mesh's download and kept while
  /// the sorted order and the layout are (elements below 2^32): later solves' copy threads then scatter with one
  /// read per cell instead of BlockElements::of (256^3 float64, unchanged mesh: the download 10.6-11.6 -> 8.8 ms)
  std::vector<std::uint32_t> hostElement;
  BlockElements hostElementLayout;  ///< the layout hostElement was made for
  bool hostElementValid = false;
  cudaEvent_t chunkDone[kMaxResultChunks] = {};
};

/// A system solve's buffers (system_phase.h): the probes sorted on the host (tree/system_points.h) and their sums and
/// results, and a subset of targets' groups and gathered results. Grow-only, kept between solves.
struct SystemBuffers {
  DeviceBuffer<double> probes;          ///< x, y, z (scaled), mass 0; phi, gx, gy, gz; pot, ax, ay, az; group hmin 0
  DeviceBuffer<std::uint32_t> probeOrder;
  DeviceBuffer<uint2> probeRange;       ///< per probe group: first probe, count
  DeviceBuffer<std::uint32_t> targets;  ///< the caller's subset
  DeviceBuffer<unsigned char> flags;    ///< per cell: a target
  DeviceBuffer<unsigned> groupFlag, groupOffset, groupList;
  DeviceBuffer<uint2> subsetRange;      ///< the walk's view of the groups holding targets
  DeviceBuffer<double> subsetHmin;
  DeviceBuffer<double> targetOut;       ///< pot, ax, ay, az at the targets
  // particles (cuda/particles_phase.h), in a particle state (DeviceState::particleState): per particle its softening
  // as given, sorted and scaled, pot, ax, ay, az in the caller's order, then each walk group's smallest size (0)
  DeviceBuffer<double> particles;
  DeviceBuffer<double2> particleGroupEps, particleNodeEps;
  DeviceBuffer<double> particleNodeExtent;  ///< per node its source extent (physics/softening_k.h)
  DeviceBuffer<double> softSums;        ///< a softened walk's sums before they are added (4 per target)
};

struct DeviceState {
  explicit DeviceState(const CudaOptions& o) : copt(o) {}
  ~DeviceState();  ///< releaseAll
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  // The current solve between its phases (prepareCells onwards; a distributed solve's rank* calls)
  unsigned n = 0, nodes = 0;
  int depth = 0;
  BlockLayout layout;
  double* slot[6] = {};
  double* sums[4] = {};     ///< phi (the sizes' slot, or the tail for the direct path), gx, gy, gz sums
  RootCube root;            ///< scaled
  double massScale = 1;
  double massTotal = 0;     ///< of the cells (the device's sum)
  double contrastTotal = 0; ///< the density contrast's total mass (core/fixed_sum.h; every rank's, distributed)
  bool contrastApplied = false;  ///< this solve's sources are the density contrast
  double meanDensity = 0;   ///< ... the mean density removed (caller's units)
  bool rankPeriodic = false;  ///< a distributed solve's rank in a periodic box
  unsigned numGroups = 0;     ///< the walk groups of the last tree built (groupBegin)
  double extentLo[3] = {}, extentHi[3] = {};  ///< the cells' extents (caller's units) from the bounds pass
  double minSize = 0;                            ///< the smallest cell size (caller's units) from the bounds pass
  // A distributed solve's local walk and the received LETs
  Clock::time_point rankT0;
  WalkConfig rankCfg;
  int rankBlocks = 1;
  WalkParams rankWalk = {};
  /// A rank's subset of target cells (core/system.h; null: every cell): its local walk, the received LETs' walk
  /// and the particles' walk of its cells take the groups holding them (subset_phase.h), the finish their values.
  const std::uint32_t* rankTargets = nullptr;
  std::size_t rankTargetCount = 0;
  double* rankFullHmin = nullptr;  ///< then every group's smallest size (prepareWalk's), for a rerun's self terms
  /// The second stream: the tree's export while the local walk runs; the host block entry's densities while the
  /// keys, sort and build run and its results while the walk runs (blocks_phase.cu)
  cudaStream_t copyStream = nullptr;
  DeviceBuffer<uint4> letTopo;
  DeviceBuffer<D4> letMac;
  DeviceBuffer<float4> letMQ;
  DeviceBuffer<float4> letDip;      ///< the received LETs' dipoles (signed sources)
  DeviceBuffer<double> letCells[4];  ///< x, y, z (scaled), mass
  DeviceBuffer<double> letSums;      ///< the received LETs' walk's sums (phi, gx, gy, gz), added to sums
  DeviceBuffer<double> massAside;    ///< a rank's masses as they went up (sortAndBuild's massAside)
  DeviceBuffer<std::uint64_t> letRaw;  ///< the received LETs as they arrived (packed), one after the other
  cudaEvent_t letsReady = nullptr;   ///< rankPrepareReceived's upload and merge are done (on copyStream)
  std::size_t lentCount = 0;         ///< LETs rankPrepareReceived put up for the next rankWalkReceived (0: none)
  SourceTreeArrays forestTop;        ///< uploadForest's virtual nodes on the host, and their device layout:
  std::vector<uint4> forestTopo;
  std::vector<D4> forestMac;
  std::vector<float4> forestMQ;
  // The LETs this rank sends, chosen and packed on the device (rankChooseLets)
  DeviceBuffer<unsigned char> letState;              ///< per LET: each node's LetSelection::Kind (or 0xff)
  DeviceBuffer<unsigned long long> letCount;         ///< (node, cells) counts of the LET being chosen
  DeviceBuffer<unsigned long long> letOffset;        ///< per LET: their exclusive scan
  std::vector<std::unique_ptr<DeviceBuffer<std::uint64_t>>> letPacks;  ///< per LET: packed (let/let_layout.h)
  std::vector<std::size_t> letPackBytes;
  PinnedBuffer letTotals;                            ///< per LET: its (nodes, cells) read back

  mutable std::mutex mu;  ///< serialises the calls on this state (one solve at a time)
  /// The state is a system solve's particles (cuda/particles_phase.h): point sources of size 0, checked on the host
  /// (tree/particle_tree.h validateParticles), coincident ones allowed: the tree phase uploads no sizes, checks none
  /// and skips the coincident-cell and mass-range checks.
  bool pointSources = false;
  /// A GPU rank's LETs carry their nodes' second moments also when isolated (particles under the Plummer kernel:
  /// the receiver's softened expansion needs them; rank_system.h).
  bool letSecondMoment = false;
  /// The particles' states (their tree beside the cells', cuda/particles_phase.h: [0] the particles' tree, [1] a
  /// distributed solve's own particles as targets), made on first use; the same device.
  std::unique_ptr<DeviceState> particleState[2];
  CudaOptions copt;
  CudaStats stats;
  bool ready = false;
  int device = -1, smCount = 0;
  std::string deviceName;
  cudaStream_t stream = nullptr;
  cudaEvent_t events[kEvents] = {};
  unsigned queueCap = 0;
  std::vector<uint4> hostTopo;   ///< rankExportTree's downloads of the node arrays
  std::vector<D4> hostMac;
  std::vector<float4> hostMQ;
  Clock::time_point passStart;  ///< the last walk pass's launch (CudaStats::walkPassSeconds)
  int passIndex = 0;
  unsigned long long splitNodes = 0;
  std::vector<unsigned> levelStart;

  // Device memory. Buffers marked (*) are used only when the block's pieces have no room for them.
  DeviceBuffer<double> block;      ///< the solve's block (BlockLayout): cells, keys, order, node data, phi, results
  DeviceBuffer<double> accSum[3];  ///< gx, gy, gz sums in sorted order (phi is in the block)
  DeviceBuffer<double> finishedAside[2];  ///< a block solve's ay, az finished on the device (no room in its block)
  DeviceBuffer<double> bounds;
  std::uint64_t* sortedKeys = nullptr;  ///< slot 4 until the gather
  std::uint32_t* order = nullptr;       ///< the index half holding sorted position -> caller's index
  Carve idxSpare;                       ///< the other half: topology, node keys
  Carve tail, extra;                   ///< slot 5 onwards; the extra bytes after slot 5
  Carve walkRoom;                       ///< the tail after the MAC records and multipoles: the walk queues
  DeviceCells sortedCells = {};         ///< in slots 4, 0, 1, 3 after the gather
  double* sortedSize = nullptr;         ///< slot 2: sorted, scaled sizes (self terms in the walk, then phi)
  const double* hostSize = nullptr;     ///< the caller's sizes (restoreSizes)
  double scale = 1;                     ///< the length scale of this solve
  uint4* topoPtr = nullptr;             ///< node topology (spare index half, or topo)
  std::size_t topoCap = 0;
  std::uint64_t* nodeKeysPtr = nullptr; ///< first key of each node (spare index half, or nodeKeys)
  bool nodeKeysLive = false;            ///< the node keys outlived the walk (a block solve's kept tree reuses them)
  D4* nodeMacPtr = nullptr;             ///< node MAC records (tail, or nodeMac)
  float4* nodeMQPtr = nullptr;          ///< node multipoles (tail, or nodeMQ)
  float4* nodeDipPtr = nullptr;         ///< signed sources: node dipoles (tail, or nodeDip); else null
  DeviceBuffer<unsigned char> cubTemp;
  DeviceBuffer<uint4> topo;  ///< (*)
  DeviceBuffer<unsigned> levelCount, levelOffset;  ///< (*)
  DeviceBuffer<std::uint64_t> nodeKeys;             ///< (*)
  DeviceBuffer<double> groupHmin;                   ///< (*)
  /// The walk groups (tree/groups_k.h): numGroups + 1 first cells, made from the sorted keys with the tree and
  /// kept with it (a block solve's kept tree walks the same groups); 4 bytes per group, so about 0.15 per cell.
  DeviceBuffer<unsigned> groupBegin;
  DeviceBuffer<unsigned> groupTiles;  ///< the group kernels' per-tile counts and their scan (2 x (tiles + 1))
  DeviceBuffer<StartMask> groupMask;  ///< (*) the group starts between the group kernels' passes (n / 8 bytes)
  StartMask* groupMaskPtr = nullptr;  ///< ... in the block's extra bytes (free after the build), or groupMask
  DeviceBuffer<NodeMoments> moments;  ///< (*)
  DeviceBuffer<D4> nodeMac;            ///< (*)
  DeviceBuffer<float4> nodeMQ;         ///< (*)
  DeviceBuffer<float4> nodeDip;        ///< (*) signed sources
  DeviceBuffer<unsigned> queue;        ///< (*)
  DeviceBuffer<unsigned char> queueTag;  ///< (*) periodic expansion walks
  DeviceBuffer<unsigned> walkCounters;
  DeviceBuffer<unsigned long long> tally;  ///< [0] approx, [1] direct interactions, [2] split nodes
  DeviceBuffer<float> ewaldCoef;           ///< periodic solves: the Ewald table's coefficients as float
  std::shared_ptr<const EwaldTable> ewaldTable;  ///< the table ewaldCoef holds (uploaded once)
  EwaldDeviceView ewaldView;
  std::unique_ptr<StagingRing> staging = std::make_unique<StagingRing>();
  PinnedBuffer small;
  BlockState blk;  ///< the block entry (blocks_phase.h)
  SystemBuffers sys;  ///< system solves (system_phase.h)
  FmmBuffers fmm;     ///< method 'fmm' (fmm_phase.h)
};

}  // namespace cuda
}  // namespace amrgrav
