/// \file memory_plan.h
/// \brief The CUDA backend's memory plan: one grow-only device block per solve whose pieces change owner phase by
/// phase (BlockLayout), pieces carved from regions a phase leaves dead (Carve), buffers of their own where a piece
/// does not fit (carveOrReserve), the host <-> device copies through the pinned staging ring, and the release of it
/// all. Buffers are kept between solves (a hydro code calls every step) until releaseAll.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "core/types.h"
#include "cuda/device_buffers.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;

/// Hands out aligned pieces of a device region that is dead during the current phase (owns nothing).
struct Carve {
  char* base = nullptr;
  std::size_t bytes = 0, used = 0;
  Carve() = default;
  Carve(void* b, std::size_t n) : base(static_cast<char*>(b)), bytes(n) {}
  template <class T>
  T* take(std::size_t count) {
    const std::size_t off = (used + 255) & ~std::size_t(255);
    if (!base || off + count * sizeof(T) > bytes) return nullptr;
    used = off + count * sizeof(T);
    return reinterpret_cast<T*>(base + off);
  }
};

inline std::size_t alignUp(std::size_t bytes) { return (bytes + 255) & ~std::size_t(255); }

/// `count` elements carved from `room` when it has them, else from the buffer `own` (DeviceState's (*) buffers).
template <class T>
Status carveOrReserve(Carve& room, DeviceBuffer<T>& own, std::size_t count, const char* what, T*& out) {
  out = room.take<T>(count);
  if (out) return Status::success();
  AG_TRY(own.reserve(std::max<std::size_t>(count, 1), what));
  out = own.get();
  return Status::success();
}

/// The solve's one device block, as byte offsets: two index halves of n uint32, six slots of n doubles, then extra
/// bytes; the tail is slot 5 and the extra bytes. Who owns what, phase by phase (I = the index half not holding
/// the sort's result, "order" the one holding it):
///
///   phase                     slots 0-3            slot 4      index halves        slot 5       extra bytes
///   upload, keys, sort        x, y, z, size (b)    keys        indices             keys         -
///   mass upload, build        x, y, z, size (b)    sorted keys order; I: topology  mass         level scratch
///   node keys                 x, y, z, size (b)    sorted keys order; I: + node keys
///   gather (rotating)         y, z, size, mass     x           (as above)          free         free
///   moments                   y, z, size, mass     x           (as above)          MAC records, multipoles, the
///                                                                                  moments above the deepest level
///   walk                      y, z, self term ->   x           order; I: topology, MAC records, multipoles, queues
///                             phi, mass                        (node keys,) group
///                                                              sizes
///   direct                    y, z, size, mass     x           order               phi
///   finish (scatter)          ax, ay, phi, az      pot         order               (phi of the direct path)
///
/// (A block solve's device entry finishes straight into the caller's arrays: x, y, z stay for a kept tree.)
/// (b) A block solve: the sizes in slot 3 serve the bounds only (uploadAndBound waits for them). From there to the
/// gather slot 3 holds the packed densities (host entry on a new mesh: going up on the copy stream while the keys,
/// sort and build run on the solve's stream, none of which touches slot 3), the masses are made from them into
/// slot 5 after the build, and the gather makes the sorted x, y, z, size from the blocks' geometry and gathers the
/// masses from slot 5 into slot 3, in one pass. The host entry's walk in chunks (CudaOptions::resultChunks) finishes
/// the results on the host from phi and the sums as each chunk comes down: the finish row does not apply, and x, y,
/// z stay for a kept tree.
///
/// The sums of the accelerations are buffers of their own. With the extra bytes sized for 1/7 node per cell (a
/// uniform grid's octree) and this device's walk queues, a potential solve of cells needs about 61-65 bytes per
/// cell.
///
/// A block solve stores no positions: every kernel makes a cell's centre from the sorted order and the blocks'
/// geometry where it reads it (cuda/kernels.h BlockCells). Its layout (compact) has no slots 0 and 1, slot 5 is
/// slot 2, and the tail starts at slot 4:
///
///   phase                     slot 3               slot 2 (= 5)          slot 4, then the tail
///   keys, sort                densities (a)        keys (sort's other)   keys
///   build                     densities (a)        masses (b)            sorted keys; level scratch, group starts
///   gather                    masses, sorted       sizes, sorted         (as above)
///   moments, walk             masses               self terms -> phi     MAC records, multipoles, queues
///   finish (not in chunks)    (masses)             (phi)                 pot; the accelerations' own buffers
///
/// (a) the host entry's packed densities on a new mesh (on the copy stream); (b) made from them (or from the
/// caller's device array, or packed into slot 2 itself), before the gather moves them into slot 3. About 8 + 8 +
/// 8 + 9.6 bytes per cell and the queues (or the moments above the deepest level): 37-40 bytes per cell.
/// Method 'fmm''s block solve (fmm_phase.h solveFmmBlocks) takes the compact layout of a direct solve (no tail beyond
/// slot 4): the same rows to the gather, then slot 4 (the sorted keys, dead once the FMM's topology and node keys are
/// made) holds phi, and the sorted centres the FMM's kernels read are a buffer of their own (FmmBuffers::cells).
struct BlockLayout {
  std::size_t idx[2] = {0, 0};
  std::size_t slot[6] = {0, 0, 0, 0, 0, 0};  ///< compact: slots 0 and 1 absent (kNoSlot)
  std::size_t tail = 0;                      ///< where the tail starts: slot 5, or compact: slot 4
  std::size_t extra = 0, total = 0;
  bool compact = false;
};

constexpr std::size_t kNoSlot = ~std::size_t(0);

/// The layout for n cells with a tail of at least tailBytes; compact: a block solve's (no positions stored).
BlockLayout layoutFor(unsigned n, std::size_t tailBytes, bool compact);

/// Bytes the block's tail (slot 5 onwards) should have for a tree solve: the MAC records and multipoles of about
/// n/7 nodes (a uniform grid's octree over 8-cell leaves; the margin covers the blocks' tree of an AMR mesh), then
/// the larger of the moments stored above the deepest level (n/56 nodes) and the walk's queues; at least slot 5
/// and the build's level scratch. Pieces that do not fit get buffers of their own (correct, but more memory).
Status tailForTree(DeviceState& ds, unsigned n, const SolveOptions& opt, std::size_t* bytes);

/// CUB's scratch, at least `bytes` (grow-only).
Status reserveCubTemp(DeviceState& ds, std::size_t bytes);

/// Frees every device and pinned buffer, the events and the streams (they are otherwise kept, grow-only, for the next
/// solve); the next solve sets the device up again.
void releaseAll(DeviceState& ds);

/// Device memory held by the state's buffers.
std::size_t deviceBytes(DeviceState& ds);

/// Host threads of the staged copies (CudaOptions::copyThreads; 0: min(8, hardware threads / 2)).
int copyThreads(DeviceState& ds);

/// Host -> device copies queued on `stream` (the backend's unless given). With `fill` the bytes are made by it
/// (StagingRing::Fill; a block solve's packed densities) instead of read from Transfer::host. A transfer of 0 bytes
/// is skipped, its pointers unread (here and in copyOut, staged or not).
Status copyIn(DeviceState& ds, const Transfer* t, int count, cudaStream_t stream = nullptr,
              const StagingRing::Fill* fill = nullptr);

/// Device -> host copies on `stream` (the backend's, or the tree export's), complete on return. With `drain` the
/// bytes go to it (StagingRing::Drain; a block solve's results into the caller's layout). With `gate` (pinned
/// staging only) each chunk's copy waits for its event (StagingRing::Gate; the block solve's results chunk by chunk
/// of the walk), in chunks of at most chunkBytes (0: CudaOptions::stagingChunkBytes).
Status copyOut(DeviceState& ds, const Transfer* t, int count, cudaStream_t stream,
               const StagingRing::Drain* drain = nullptr, const StagingRing::Gate* gate = nullptr,
               std::size_t chunkBytes = 0);

}  // namespace cuda
}  // namespace amrgrav
