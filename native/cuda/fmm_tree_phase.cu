/// \file fmm_tree_phase.cu
/// \brief The FMM's tree and upward pass on the device (fmm_tree_phase.h).
#include <algorithm>
#include <vector>

#include "cuda/check.h"
#include "cuda/device_state.h"
#include "cuda/fmm_phase.h"
#include "cuda/fmm_phase_parts.h"
#include "cuda/fmm_tree_phase.h"
#include "cuda/kernels_fmm_tree.h"
#include "cuda/memory_plan.h"
#include "fmm/multi_index.h"
#include "fmm/upward_emulate.h"
#include "physics/fmm_mac_k.h"

namespace amrgrav {
namespace cuda {
namespace {

/// The upward pass's M2M tables of `order` up (when another order's are there; its monomials' tables are compile-time
/// constants, fmm::MonoTablesOf).
Status putTables(FmmTreeBuffers& tb, int order, cudaStream_t s) {
  if (tb.tablesOrder == order) return Status::success();
  const fmm::UpwardTables t = fmm::upwardTables(fmm::MultiIndex::of(order));
  std::vector<int> ints;
  for (const std::vector<int>* v : {&t.m2mStart, &t.m2mJ, &t.m2mNJ}) ints.insert(ints.end(), v->begin(), v->end());
  AG_TRY(tb.ints.reserve(ints.size(), "the FMM upward pass's tables"));
  AG_CUDA_TRY(cudaMemcpyAsync(tb.ints.get(), ints.data(), ints.size() * sizeof(int), cudaMemcpyHostToDevice, s));
  AG_CUDA_TRY(cudaStreamSynchronize(s));  // the host vector dies here
  tb.tablesOrder = order;
  return Status::success();
}

using fmmparts::down;

}  // namespace

std::size_t FmmTreeBuffers::bytes() const {
  return cube.bytes() + sums.bytes() + r2.bytes() + ints.bytes();
}

void FmmTreeBuffers::release() {
  cube.release();
  sums.release();
  r2.release();
  ints.release();
  tablesOrder = -1;
}

Status buildFmmTreeOnDevice(DeviceState& ds, const SolveOptions& opt, DeviceFmmTree& out, fmm::FmmTree& tree) {
  FmmBuffers& b = ds.fmm;
  FmmTreeBuffers& tb = b.treeBuild;
  cudaStream_t s = ds.stream;
  const std::size_t nodes = ds.nodes;
  const fmm::MultiIndex& mi = fmm::MultiIndex::of(opt.fmmOrder);
  tree = fmm::FmmTree{};
  tree.order = opt.fmmOrder;
  tree.terms = mi.terms;
  tree.mStride = (mi.terms + 7) / 8 * 8;  // buildFmmTree's stride
  tree.topo.root = ds.root;
  tree.topo.depth = ds.depth;
  tree.levelBegin.assign(ds.levelStart.begin(), ds.levelStart.end());
  out.nodes = nodes;
  out.depth = ds.depth;
  out.levelBegin = tree.levelBegin;
  const int levels = int(tree.levelBegin.size()) - 1;
  if (nodes == 0 || levels < 1 || tree.levelBegin.back() != nodes || levels > kFmmTreeMaxLevels)
    return Status::error(ErrorCode::Internal, "CUDA backend: the FMM's device tree has no topology to work on");

  AG_TRY(b.topo.reserve(3 * nodes, "the FMM's topology"));
  AG_TRY(b.childCount.reserve(nodes, "the FMM's topology"));
  AG_TRY(b.centre.reserve(3 * nodes, "the FMM's centres"));
  AG_TRY(b.M.reserve(nodes * std::size_t(tree.mStride), "the FMM's multipoles"));
  AG_TRY(b.lists.mac.reserve(4 * nodes, "the FMM's MAC quantities"));
  AG_TRY(tb.cube.reserve(3 * nodes, "the FMM's cube centres"));
  AG_TRY(tb.sums.reserve(5 * nodes, "the FMM's node sums"));
  AG_TRY(tb.r2.reserve(nodes, "the FMM's radii"));
  AG_TRY(putTables(tb, tree.order, s));

  FmmTreeView v;
  v.nodes = unsigned(nodes);
  v.cells = ds.n;
  v.levels = levels;
  std::copy(tree.levelBegin.begin(), tree.levelBegin.end(), v.levelStart);
  v.cellBegin = b.topo.get();
  v.cellCount = v.cellBegin + nodes;
  v.childBegin = v.cellBegin + 2 * nodes;
  v.childCount = b.childCount.get();
  v.cube = tb.cube.get();
  v.x = ds.sortedCells.x;
  v.y = ds.sortedCells.y;
  v.z = ds.sortedCells.z;
  v.mass = ds.sortedCells.mass;
  v.sums = tb.sums.get();
  v.centre = b.centre.get();
  v.M = b.M.get();
  v.terms = tree.terms;
  v.mStride = tree.mStride;
  v.m2mStart = tb.ints.get();
  v.m2mJ = v.m2mStart + mi.terms + 1;
  v.m2mNJ = v.m2mJ + mi.m2mN.size();
  v.r2 = tb.r2.get();
  v.mac = b.lists.mac.get();
  v.theta = opt.fmmTheta;
  for (int d = 0; d < 3; ++d) v.rootLo[d] = ds.root.lo[d];
  v.rootSide = ds.root.side;
  // periodic boxes: cube centres (buildFmmTree's dipole terms); their lowBound and norms are the caller's
  v.dipoles = opt.anyPeriodic();
  tree.dipoles = v.dipoles;

  AG_CUDA_TRY(cudaMemsetAsync(v.M, 0, nodes * std::size_t(tree.mStride) * sizeof(double), s));  // the padding
  AG_CUDA_TRY(cudaMemsetAsync(v.r2, 0, nodes * sizeof(unsigned long long), s));                 // +0.0
  AG_TRY(launchFmmTopology(v, ds.topoPtr, ds.nodeKeysPtr, s));
  for (int lev = levels - 1; lev >= 0; --lev) AG_TRY(launchFmmUpwardLevel(v, lev, s));
  AG_TRY(launchFmmRadius(v, s));
  AG_TRY(launchFmmMac(v, s));
  tree.accelLimit = 0;
  if (opt.accelerations && !v.dipoles) {  // the MAC's test 3 (isolated boxes, as buildFmmTree) from the root's |mass| (buildFmmTree's fmmAccelLimit): 8 bytes down
    double rootAbsMass = 0;
    AG_CUDA_TRY(cudaMemcpyAsync(&rootAbsMass, v.mac + 2 * nodes, sizeof(double), cudaMemcpyDeviceToHost, s));
    AG_CUDA_TRY(cudaStreamSynchronize(s));
    tree.accelLimit = fmmAccelLimit(opt.fmmAccelTolerance, rootAbsMass, ds.root.side);
  }
  return Status::success();
}

Status downloadFmmTree(DeviceState& ds, const DeviceFmmTree& dt, bool withM, fmm::FmmTree& tree,
                       std::size_t lNodes, std::size_t topNodes) {
  FmmBuffers& b = ds.fmm;
  const std::size_t n = dt.nodes, top = std::min(n, topNodes);
  AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));
  Octree& o = tree.topo;
  // every node's leaf test and cell count (nodeCount, isLeaf); the rest of the records for the first `top` nodes
  o.cellCount.resize(n);
  o.childCount.resize(n);
  o.cellBegin.resize(top);
  o.childBegin.resize(top);
  o.centre.resize(3 * top);
  tree.centre.resize(3 * top);
  std::vector<double>* parts[4] = {&tree.radius, &tree.critical, &tree.absMass, &tree.lowBound};
  for (std::vector<double>* p : parts) p->resize(top);
  if (withM) tree.M.resize(n * std::size_t(tree.mStride));
  // one batch through the pinned staging: pageable copies one by one took 22 ms for a 256^3 grid's 300k nodes
  std::uint32_t* topo = b.topo.get();
  double* mac = b.lists.mac.get();
  std::vector<Transfer> t = {{o.cellBegin.data(), topo, top * sizeof(std::uint32_t)},
                             {o.cellCount.data(), topo + n, n * sizeof(std::uint32_t)},
                             {o.childBegin.data(), topo + 2 * n, top * sizeof(std::uint32_t)},
                             {o.childCount.data(), b.childCount.get(), n * sizeof(std::uint8_t)},
                             {o.centre.data(), b.treeBuild.cube.get(), 3 * top * sizeof(double)},
                             {tree.centre.data(), b.centre.get(), 3 * top * sizeof(double)}};
  for (int k = 0; k < 4; ++k) t.push_back({parts[k]->data(), mac + k * n, top * sizeof(double)});
  if (withM) t.push_back({tree.M.data(), b.M.get(), tree.M.size() * sizeof(double)});
  AG_TRY(copyOut(ds, t.data(), int(t.size()), ds.stream));
  o.level.assign(n, 0);
  for (std::size_t l = 0; l + 1 < dt.levelBegin.size(); ++l)
    std::fill(o.level.begin() + dt.levelBegin[l], o.level.begin() + dt.levelBegin[l + 1], std::uint8_t(l));
  tree.L.assign(std::min(n, lNodes) * std::size_t(tree.terms), 0.0);
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
