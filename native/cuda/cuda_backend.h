/// \file cuda_backend.h
/// \brief The CUDA backend: the same solve as the CPU backend (same validation, root cube, keys, tree, moments,
/// groups and MAC decisions, hence identical interaction counts), run on one GPU. Plain C++: the binding and the
/// tools include this without CUDA headers; cudart is linked statically, and every entry point reports a missing
/// driver or device as a Status (ErrorCode::NoDevice) rather than failing to load or aborting.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "let/let.h"
#include "tree/source_tree.h"

namespace amrgrav {

/// Settings of the CUDA backend that SolveOptions does not (yet) carry.
struct CudaOptions {
  int device = 0;                          ///< CUDA device index
  bool pinnedStaging = true;               ///< copy through pinned chunks (false: plain pageable cudaMemcpy)
  std::size_t stagingChunkBytes = 4u << 20; ///< bytes per pinned chunk (2 per copy thread)
  int copyThreads = 0;                     ///< host threads of the staged copies; 0: min(8, hardware threads / 2)
  unsigned initialQueueCapacity = 4096;    ///< per-warp walk queue entries (power of two; grows on overflow)
  bool poisonDevice = false;               ///< fill device result buffers with NaN before each solve (tests)
  /// Check the cells in the device's first pass over them (the bounds kernel) instead of core/validate.h's
  /// validateCells on one host thread (90 ms of a 180 ms solve at 256^3). When a cell fails, validateCells runs on
  /// the host and its Status is returned, so error codes and messages are exactly the CPU backend's.
  bool validateOnDevice = true;
};

/// Per-solve measurements of the CUDA backend (device phases from cudaEvents on the backend's stream).
struct CudaStats {
  double secondsValidate = 0;  ///< host: validateOptions (+ validateCells unless validateOnDevice)
  double secondsUpload = 0;    ///< host -> device copies (staging included; the masses go up after the sort)
  double secondsKeys = 0;      ///< bounds, keys, sort, gather
  double secondsBuild = 0;     ///< mass check, octree topology, the nodes' first keys
  double secondsMoments = 0;
  double secondsWalk = 0;      ///< walk (all reruns) or direct kernel, plus the final scaling/scatter
  double secondsDownload = 0;  ///< device -> host copies into the result vectors (host clock)
  double secondsTotal = 0;     ///< host clock from after validation to return
  std::size_t deviceBytes = 0;      ///< device memory held by the backend after the solve
  double deviceBytesPerCell = 0;    ///< deviceBytes / cells
  std::size_t pinnedBytes = 0;      ///< pinned host staging held
  unsigned queueCapacity = 0;       ///< walk queue entries per warp in the final walk launch
  unsigned queuePeak = 0;           ///< most entries any warp needed
  int walkLaunches = 0;             ///< kernel launches: 1 (periodic: up to 3, kernels.h WalkConfig) + reruns
  double walkPassSeconds[3] = {0, 0, 0};  ///< host clock per launch of the last run: walk, per-pair walk, corrections
  int walkBlocks = 0, walkWarps = 0;
  std::string device;               ///< name, compute capability, multiprocessors
};

/// The local tree copied down from the device, in SourceTree's layout (tree/source_tree.h), as the host-side LET
/// selection and packing (let/let.h) read it. Multipoles are the device's (float, times massScale) divided back.
/// The cells are the sorted ones, scaled; second moments only in a periodic box.
using HostTree = SourceTreeArrays;

class CudaBackend : public Backend {
 public:
  virtual void setCudaOptions(const CudaOptions& options) = 0;
  virtual CudaOptions cudaOptions() const = 0;
  /// The last solve()'s or direct()'s measurements.
  virtual CudaStats lastCudaStats() const = 0;
  /// Frees every device and pinned buffer now (they are otherwise kept, grow-only, for the next solve).
  virtual void releaseDeviceMemory() = 0;

  // ---- One rank's share of a distributed solve (mpi/distributed_cuda.cpp calls these in this order). The same
  //      semantics as the CPU rank's: root cube of this rank's cells, the caller's (global) length scale, the same
  //      MAC (periodic boxes: the same Ewald table, LETs chosen by essentialNodesForPeriodic's test); received LETs
  //      are walked into sums of their own, then added (the CPU's accumulate), with no self pair and, in a periodic
  //      box, no hoisted corrections.
  /// Before the ranks' agreement: the options, the backend's limits, the device (NoDevice without one), and the
  /// cells: uploaded and checked as validateCells does (its message on a failure), lo/hi = their extents' bounds
  /// (the box when given; empty without cells or box).
  virtual Status rankOpen(const CellsView& cells, const SolveOptions& opt, double lo[3], double hi[3]) = 0;
  /// Keys with length scale `scale`, sort, masses, build, moments (the cells of rankOpen, cells.n > 0).
  virtual Status rankBuild(const CellsView& cells, const SolveOptions& opt, double scale, double totalMass,
                           SolveStats& st) = 0;
  /// The summary of the cells the ranks share (let/let.h; scaled): the box of the centres from a pass over the
  /// sorted cells, the extents' box from rankOpen's, the root's centre of mass, the device's mass sum.
  virtual Status rankSummary(RankSummary& out) = 0;
  /// Chooses and packs on the device the LETs for these remote boxes of cell centres (let/let.h essentialNodesFor
  /// and packLet: the same nodes, the same bytes); their node and cell counts into letNodes/letCells[count]. Call
  /// before rankStartLocalWalk: the packing then runs before the walk, and the downloads beside it.
  virtual Status rankChooseLets(const RemoteBox* boxes, std::size_t count, std::size_t* letNodes,
                                std::size_t* letCells) = 0;
  /// Queues the walk of the local tree and returns at once.
  virtual Status rankStartLocalWalk(const SolveOptions& opt) = 0;
  /// Downloads the k-th LET of rankChooseLets on a second stream (beside the local walk); blocks until done.
  virtual Status rankDownloadLet(std::size_t k, PackedLet& out) = 0;
  /// The whole tree and the sorted cells copied down (on the second stream; blocks until done), in the layout the
  /// host's LET selection reads, and the extents' box (scaled). Not used by the solve: the parity tool checks the
  /// device's LETs against the host's choice over this copy.
  virtual Status rankExportTree(HostTree& out, double extentLo[3], double extentHi[3]) = 0;
  /// Whether the local walk's launch has finished (never blocks).
  virtual Status rankLocalWalkDone(bool* done) = 0;
  /// Waits for the local walk, reruns it after a queue overflow, counts its interactions into `st`.
  virtual Status rankFinishLocalWalk(const SolveOptions& opt, SolveStats& st) = 0;
  /// The received LETs, all here before the local walk is done: uploaded and merged on the second stream, beside
  /// the walk. The same LETs (their buffers untouched) must then be passed to rankWalkReceived.
  virtual Status rankPrepareReceived(const ReceivedLet* lets, std::size_t count) = 0;
  /// Uploads the received LETs as they are packed (unless rankPrepareReceived did), merges them on the device into
  /// one forest (let/let.h mergeLets' layout) and walks it into the local sums (count 0: nothing).
  virtual Status rankWalkReceived(const ReceivedLet* lets, std::size_t count, const SolveOptions& opt,
                                  SolveStats& st) = 0;
  /// Scale, scatter, download into out (its targets), device times into out.stats.
  virtual Status rankFinish(const SolveOptions& opt, SolveResult& out) = 0;
};

/// The number of CUDA devices (0 without a driver or device; never aborts).
int cudaDeviceCount();

/// name() == "cuda". Creating one touches no GPU; the first solve initialises the device. Calls are serialised
/// (one solve at a time per backend object); keep one object alive across solves to reuse its device memory.
std::unique_ptr<Backend> makeCudaBackend();
std::unique_ptr<CudaBackend> makeCudaBackend(const CudaOptions& options);

/// True when a CUDA driver and a device this build can run on are present; otherwise false, with the reason in
/// *why (if given). Never aborts, also without any NVIDIA driver installed.
bool cudaDeviceAvailable(std::string* why);

}  // namespace amrgrav
