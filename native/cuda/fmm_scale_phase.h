/// \file fmm_scale_phase.h
/// \brief The signed sources' scale of a periodic box's FMM (fmm::signedSourceScale, which buildFmmTree puts in
/// every lowBound) from the sorted, contrasted cells where the device's sort left them, with no host copy of them:
/// the same bits as signedSourceScale over the host's gathered cells (fmm/signed_scale_k.h: the leaves' estimates
/// and margins on the device, the candidate leaves' cells down and the host's own leafNearOf over them; the level-2
/// nodes' net masses summed on the device in the host's order, their field on the host by coarseFieldOfNets).
/// Internal to native/cuda.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "cuda/device_buffers.h"
#include "fmm/fmm_tree.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;

/// The scale's device arrays (grow-only, kept between solves; part of FmmPeriodicBuffers).
struct SignedScaleBuffers {
  DeviceBuffer<double> perNode;         ///< each node's estimate, then its margin, then its h
  DeviceBuffer<std::uint64_t> hash;     ///< each regular leaf's mass hash
  DeviceBuffer<double> net;             ///< the level's net masses
  DeviceBuffer<std::uint32_t> pairs;    ///< the tied candidates, then the leaves standing for them
  DeviceBuffer<std::uint8_t> same;      ///< each pair's masses equal
  DeviceBuffer<std::uint32_t> leaves;   ///< the candidate leaves, then their cells' offsets
  DeviceBuffer<double> cells;           ///< the candidates' cells: x, y, z, size, mass
  std::size_t bytes() const {
    return perNode.bytes() + hash.bytes() + net.bytes() + pairs.bytes() + same.bytes() + leaves.bytes() +
           cells.bytes();
  }
  void release() {
    perNode.release();
    hash.release();
    net.release();
    pairs.release();
    same.release();
    leaves.release();
    cells.release();
  }
};

/// What the last scale took (for stats and checks).
struct SignedScaleCounts {
  std::size_t candidates = 0, candidateCells = 0;  ///< the candidate leaves that came down, and their cells
  std::size_t tied = 0;                            ///< the candidates another stood for (masses found equal)
};

/// fmm::signedSourceScale over the device's sorted cells (ds.sortedCells: scaled, the density contrast applied;
/// ds.sortedSize) and the device tree's topology (ds.fmm.topo, childCount), `tree` its host copy (topology, levels,
/// centres: fmm_tree_phase.h downloadFmmTree). Synchronous.
Status signedScaleOnDevice(DeviceState& ds, const fmm::FmmTree& tree, int threads, double& scale,
                           SignedScaleCounts* counts = nullptr);

}  // namespace cuda
}  // namespace amrgrav
