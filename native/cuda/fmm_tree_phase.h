/// \file fmm_tree_phase.h
/// \brief The FMM's tree and upward pass on the device (CudaOptions::fmmDeviceTree; docs/fmm-design.md, "The tree
/// and upward pass on the device"): method 'tree''s topology, built by the device sort before its gather
/// (tree_phase.h SortDownload::treeLeafSize, fmm::kFmmLeafSize leaves: tree/build.cpp's layout), into the FMM's
/// buffers, then the centres, radii, MAC quantities and multipoles bottom-up by fmm/upward_k.h's rules
/// (kernels_fmm_tree.h), the same bits as the host's buildFmmTree (checked on the host by its emulation,
/// fmm/upward_emulate.h, and on a GPU by the parity subject fmm-tree). Nothing per cell or per node crosses the bus:
/// the level starts come from the build's own read-backs. Isolated boxes, and periodic ones (FmmTree::dipoles: cube
/// centres; the caller then replaces lowBound by the signed sources' scale and makes the multipole norms,
/// cuda/fmm_periodic_phase.cu). Internal to native/cuda.
#pragma once
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "cuda/device_buffers.h"
#include "fmm/fmm_tree.h"

namespace amrgrav {
namespace cuda {

struct DeviceState;

/// The upward pass's scratch and tables (grow-only, kept between solves).
struct FmmTreeBuffers {
  DeviceBuffer<double> cube;               ///< the nodes' cube centres, 3 per node
  DeviceBuffer<double> sums;               ///< 5 per node (fmm::FmmSums)
  DeviceBuffer<unsigned long long> r2;     ///< per node: its largest squared distance's bits
  DeviceBuffer<int> ints;                  ///< fmm::UpwardTables: m2mStart, m2mJ, m2mNJ
  int tablesOrder = -1;                    ///< the order whose tables are up (-1: none)
  std::size_t bytes() const;
  void release();
};

/// The device tree's shape on the host.
struct DeviceFmmTree {
  std::size_t nodes = 0;
  int depth = 0;
  std::vector<std::uint32_t> levelBegin;   ///< fmm::FmmTree::levelBegin
};

/// After the device sort with SortDownload::treeLeafSize = fmm::kFmmLeafSize (the topology and node keys in the
/// spare index half, the sorted cells in ds.sortedCells, ds.root scaled): the topology into ds.fmm.topo and
/// ds.fmm.childCount, the expansion centres into ds.fmm.centre, the multipoles into ds.fmm.M (zero-padded to the
/// stride) and radius, critical, absMass, lowBound into ds.fmm.lists.mac, queued on ds.stream. opt.fmmTheta,
/// opt.fmmOrder as buildFmmTree reads them. `tree` gets the shape (order, terms, mStride, levelBegin, depth, root).
Status buildFmmTreeOnDevice(DeviceState& ds, const SolveOptions& opt, DeviceFmmTree& out, fmm::FmmTree& tree);

/// The device tree's arrays down into `tree` (whose shape buildFmmTreeOnDevice set): topology with levels and cube
/// centres, centres, radius, critical, absMass, lowBound and (withM) the multipoles; L zeroed for the first lNodes
/// nodes (all by default; the periodic path's far pass writes those up to its frontier level alone). With topNodes
/// below the node count, the nodes past it get their levels, child and cell counts alone (nodeCount and isLeaf
/// hold; cellBegin, childBegin, the centres and the MAC quantities stop at topNodes): for the periodic path without
/// host cells, whose host steps read no further. Synchronous.
Status downloadFmmTree(DeviceState& ds, const DeviceFmmTree& dt, bool withM, fmm::FmmTree& tree,
                       std::size_t lNodes = ~std::size_t(0), std::size_t topNodes = ~std::size_t(0));

}  // namespace cuda
}  // namespace amrgrav
