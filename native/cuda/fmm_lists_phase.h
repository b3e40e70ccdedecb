/// \file fmm_lists_phase.h
/// \brief The FMM's interaction lists built on the device (issue #20, the first of the host phases moved): the
/// breadth-first dual walk of fmm/dual_walk_k.h over the tree's arrays on the device, rounds of decide / scan / emit
/// (kernels_fmm_lists.h) until the frontier is empty, then the canonical lists: the M2L CSR (m2lStart, m2lSource,
/// as FmmDeviceView reads them) left on the device for the evaluation, the P2P pairs as sorted keys. The same lists
/// as the CPU's buildInteractionLists (fmm/interaction_lists.h), array for array: fmm/dual_walk.h emulates this
/// phase on the host (native/tests/fmm_dual_walk.cpp), the GPU parity tool's subject fmm-lists checks the device's
/// against the host's. Isolated boxes and periodic ones (FmmListInputs::period: the pairs with their image shifts,
/// the signed sources' test from the multipole norms; the M2L CSR's shifts beside it, the P2P keys with their shift
/// in the low fmm::kShiftBits bits), as buildInteractionLists(..., period). Internal to native/cuda.
///
/// Inputs on the device: the topology (childBegin, childCount, cellCount) and centres, which the evaluation
/// uploads anyway, and the MAC's per-node quantities (radius, critical, absMass, lowBound: 32 bytes a node,
/// uploadWalkInputs) while the tree is built on the host.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "cuda/device_buffers.h"
#include "fmm/dual_walk_k.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"

namespace amrgrav {
namespace cuda {

/// The walk's device arrays (grow-only, kept between solves): the MAC's inputs, two frontiers, the decisions and
/// their counts and offsets, the accepted pairs, the list keys (two, for the radix sorts), CUB's scratch.
struct FmmListBuffers {
  DeviceBuffer<double> mac;  ///< radius, critical, absMass, lowBound (nodes each)
  DeviceBuffer<double> norms;  ///< periodic boxes: the multipole norms (order + 1 per node, fmm::FmmTree::norms)
  DeviceBuffer<double> normWeights;  ///< the norms' weights per term (fmm::multipoleNormWeights), of normOrder
  DeviceBuffer<int> normDegree;      ///< the terms' degrees (fmm::MultiIndex::degree), of normOrder
  int normOrder = -1;                ///< the order whose norm tables are up (-1: none)
  DeviceBuffer<std::uint64_t> frontier[2];
  /// periodic boxes: the frontiers' shifts, the accepted pairs' shifts, the M2L CSR's shifts (m2lSource's)
  DeviceBuffer<std::uint8_t> frontierShift[2], m2lPairShift, m2lShift;
  DeviceBuffer<fmm::PairStep> steps;
  DeviceBuffer<fmm::PairCounts> counts, at;
  DeviceBuffer<std::uint64_t> m2lPairs, keys[2], p2p[2];
  DeviceBuffer<std::uint32_t> pairStart;  ///< isolated boxes: the M2L pairs' CSRs by first and by second node
  DeviceBuffer<unsigned char> temp;
  DeviceBuffer<unsigned long long> cellPairs;
  std::size_t bytes() const;
  void release();
};

/// The tree's arrays on the device that the walk reads (FmmBuffers' topology and centres, and FmmListBuffers::mac).
struct FmmListInputs {
  std::uint32_t nodes = 0;
  const std::uint32_t *childBegin = nullptr, *cellCount = nullptr;
  const std::uint8_t* childCount = nullptr;
  const double* centre = nullptr;
  int order = 0;
  double tolerance = 0;
  double accelLimit = 0;  ///< the MAC's test 3 (fmm::FmmTree::accelLimit; 0: the potential's lists)
  /// Periodic boxes: the image shifts walked (buildInteractionLists's `period`: scaled sides along periodic axes, 0
  /// along isolated ones) and the signed sources' test (dipole terms: the norms in FmmListBuffers::norms).
  bool periodic = false;
  double period[3] = {0, 0, 0};
};

/// The lists as the device holds them after buildFmmListsOnDevice.
struct DeviceFmmLists {
  std::uint32_t nodes = 0;
  int bits = 0;                                  ///< the keys' node bits (fmm/dual_walk_k.h keyBits)
  int sbits = 0;                                 ///< the keys' shift bits (periodic: fmm::kShiftBits, else 0)
  const std::uint32_t* m2lStart = nullptr;       ///< nodes + 1
  const std::uint32_t* m2lSource = nullptr;      ///< directedM2L
  const std::uint8_t* m2lShift = nullptr;        ///< directedM2L (periodic; null in isolated boxes)
  const std::uint64_t* p2p = nullptr;            ///< p2pPairs keys (A, B[, shift]), A < B (or A = B shifted),
                                                 ///< ascending (shiftedKey)
  std::size_t directedM2L = 0, p2pPairs = 0;
  std::uint64_t directedP2P = 0;
  int rounds = 0;                                ///< frontiers walked
  std::size_t maxFrontier = 0;
};

/// radius, critical, absMass and lowBound of the tree into b.mac, and with dipole terms (periodic) its multipole
/// norms into b.norms (asynchronous on s: the tree must live until s is synchronised).
Status uploadWalkInputs(const fmm::FmmTree& tree, FmmListBuffers& b, cudaStream_t s);

/// Periodic boxes with the device's tree: the multipole norms of its `nodes` nodes (M on the device, mStride per
/// node, fmm/norms_k.h's rule, buildFmmTree's bits) into b.norms, queued on s (the tables up when the order changed).
Status deviceMultipoleNorms(const double* M, std::size_t nodes, int mStride, int order, FmmListBuffers& b,
                            cudaStream_t s);

/// The walk and the canonical lists, on stream s (synchronised once per round to size the next frontier). m2lStart
/// and m2lSource are grown to fit and filled; out points into them and into b.
Status buildFmmListsOnDevice(const FmmListInputs& in, FmmListBuffers& b, DeviceBuffer<std::uint32_t>& m2lStart,
                             DeviceBuffer<std::uint32_t>& m2lSource, cudaStream_t s, DeviceFmmLists& out);

/// The device's lists into FmmLists (isolated: shifts all kNoShift; periodic: the shifts, and `period` as the walk
/// took it): the P2P pairs and the counts always, the M2L CSR when withM2L (the evaluation reads it on the device;
/// the host's near lists need the P2P pairs alone).
Status downloadFmmLists(const DeviceFmmLists& d, bool withM2L, cudaStream_t s, fmm::FmmLists& out,
                        const double* period = nullptr);

}  // namespace cuda
}  // namespace amrgrav
