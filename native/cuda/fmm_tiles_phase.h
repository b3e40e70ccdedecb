/// \file fmm_tiles_phase.h
/// \brief The FMM's near lists and P2P tiles built on the device from the device's P2P pairs (issue #20, after the
/// lists: cuda/fmm_lists_phase.h), so no pair goes down and no tile comes up: the steps of fmm/p2p_tiles_k.h, each
/// rule in a grid-stride kernel, CUB's scans and sorts between them (radix sorts: the pairs by their second node, and
/// the targets' and runs' orders as stable passes over their integer keys). The arrays are buildNearLists',
/// findRegularLeaves' and buildP2pTiles' element for element (fmm/p2p_tiles_emulate.h emulates this phase,
/// native/tests/fmm_device_tiles.cpp checks the emulation, the GPU parity subject fmm-tiles the device), so the
/// evaluation reads the same input and the solve is bitwise the host-tiles one. The tables' slots come down (at most
/// 729 ints) for the host's table cache (fmm/p2p_tables.h prepareSlots). Isolated and periodic boxes (the periodic
/// FMM with CudaOptions::fmmDevicePeriodicTiles: the pairs' keys with their image shifts, FmmTileInputs::period; the
/// near lists, tiles' steps and irregular lists with each source's shift, as buildHostNearField's with shifts; the
/// subject fmm-periodic checks them). Internal to native/cuda.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_buffers.h"
#include "cuda/fmm_lists_phase.h"
#include "fmm/p2p_tiles_k.h"

namespace amrgrav {
namespace cuda {

/// The build's steps (CudaStats::fmmTileStepSeconds, kFmmTileStepNames), each ended by a device event.
constexpr int kFmmTileSteps = 9;

/// The events that time the build's steps (created on the first build; destroyed with the buffers).
struct TileStepEvents {
  cudaEvent_t at[kFmmTileSteps + 1] = {};
  bool recorded = false;  ///< a build ran to the end since the last read
  TileStepEvents() = default;
  TileStepEvents(const TileStepEvents&) = delete;
  TileStepEvents& operator=(const TileStepEvents&) = delete;
  ~TileStepEvents() { release(); }
  void release();
};

/// The build's device arrays (grow-only, kept between solves).
struct FmmTileBuffers {
  DeviceBuffer<double> size;  ///< the sorted cells' sizes (the regular leaves' test)
  DeviceBuffer<std::uint32_t> leafAt, leaves, aStart, bStart, nearStart, nearSource, ntab, computed,
      regularAt, sorted, flags, runAt, runStart, runOrder, pos, placeStart, ordered, target, stepStart, stepSource,
      irregular, irrLeaf, irrStart, irrSource, usedBits, tileBits;
  DeviceBuffer<std::uint32_t> orderAlt;  ///< the orders' radix passes: the values' other half
  DeviceBuffer<std::uint64_t> byB, hash;
  DeviceBuffer<std::uint64_t> orderKey;  ///< the orders' radix passes: the keys' two halves
  DeviceBuffer<std::int32_t> slot, tab, indexOf, slots, stepTable;
  DeviceBuffer<std::uint8_t> regular;
  DeviceBuffer<std::uint8_t> nearShift, stepShift, irrShift;  ///< periodic: the entries', steps' and irregular ones'
  DeviceBuffer<double> origin, h, invH;
  DeviceBuffer<fmm::TileCounts> counts, at;
  DeviceBuffer<unsigned char> temp;
  TileStepEvents events;
  std::size_t bytes() const;
  void release();
};

/// The tree's arrays on the device that the build reads (FmmBuffers' topology, the sorted cells) and the sizes.
struct FmmTileInputs {
  std::uint32_t nodes = 0;
  std::size_t cells = 0;
  const std::uint8_t* childCount = nullptr;
  const std::uint32_t *cellBegin = nullptr, *cellCount = nullptr;
  const double *x = nullptr, *y = nullptr, *z = nullptr;
  const double* size = nullptr;  ///< host: the sorted cells' sizes, uploaded into FmmTileBuffers::size
  const double* deviceSize = nullptr;  ///< device: the sorted cells' sizes already there (the device sort's), or null
  /// Periodic boxes: the lists' periods (3, scaled, 0 along isolated axes; host memory, read at the call), with
  /// lists whose keys carry shifts (DeviceFmmLists::sbits); null for an isolated box
  const double* period = nullptr;
};

/// What the build leaves on the device (pointers into FmmTileBuffers) and the host's part of it.
struct DeviceFmmTiles {
  std::uint32_t leafCount = 0, tiles = 0, irregularCount = 0;
  std::size_t steps = 0, irregularEntries = 0;
  const std::uint32_t *leaves = nullptr, *target = nullptr, *stepStart = nullptr, *stepSource = nullptr;
  const std::int32_t* stepTable = nullptr;
  const double* invH = nullptr;
  const std::uint32_t *irrLeaf = nullptr, *irrStart = nullptr, *irrSource = nullptr;
  const std::uint32_t* irregular = nullptr;  ///< the irregular leaves' indices into leaves
  const std::uint32_t *nearStart = nullptr, *nearSource = nullptr;
  const std::uint8_t* regular = nullptr;     ///< per node
  /// periodic boxes: each near entry's, each step column's (kNoShift where none) and each irregular entry's image
  /// shift (null in isolated boxes)
  const std::uint8_t *nearShift = nullptr, *stepShift = nullptr, *irrShift = nullptr;
  std::vector<int> slots;                    ///< the tables' slots, ascending (on the host)
  fmm::TileCounts total;                     ///< table / computed steps and entries over all tiles
};

/// The build from the device's lists (their P2P keys) on stream s (synchronised a few times to size the arrays).
/// Each step ends with an event (FmmTileBuffers::events) for fmmTileStepSeconds.
Status buildFmmTilesOnDevice(const FmmTileInputs& in, const DeviceFmmLists& lists, FmmTileBuffers& b, cudaStream_t s,
                             DeviceFmmTiles& out);

/// The last build's step times in seconds (waits for its last event), zeros where no build ran to its end since
/// the last call.
Status fmmTileStepSeconds(FmmTileBuffers& b, double seconds[kFmmTileSteps]);

}  // namespace cuda
}  // namespace amrgrav
