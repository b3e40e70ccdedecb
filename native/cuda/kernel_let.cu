/// \file kernel_let.cu
/// \brief A GPU rank's LETs chosen and packed on the device (let/let.h's essentialNodesFor and packLet, same
/// decisions, same bytes): the selection top-down one tree level per launch (a node is reached when its parent
/// was opened), an exclusive scan of (node, cells) counts that numbers the LET's nodes and places the opened
/// leaves' cells, then one pass writing the packed buffer (let/let_layout.h). The tree is level-ordered
/// (kernel_build.cu), so the LET's nodes in tree order are in the host's breadth-first order. The choice is the
/// host's own code (physics/let_accept_k.h, physics/mac_k.h), every operation rounded on its own
/// (physics/rounding.h); the file is compiled with -fmad=false as well.
#include <cub/device/device_scan.cuh>

#include "let/let.h"
#include "physics/let_accept_k.h"
#include "let/let_layout.h"
#include "physics/mac_k.h"
#include "physics/moments_k.h"
#include "cuda/check.h"
#include "cuda/kernels.h"

namespace amrgrav {
namespace cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocksFor(std::size_t n) { return unsigned((n + kThreads - 1) / kThreads); }

/// The node's mass as the host's copy of the tree holds it (cuda_backend.cu rankExportTree): 0 when massless.
__device__ __forceinline__ double hostMass(const D4& mac, const float4& mq, double invMassScale) {
  return mac.w >= 0.0 ? double(mq.x) * invMassScale : 0.0;
}

/// Periodic: essentialNodesForPeriodic's test over the Ewald table's periods and reach.
template <bool Periodic>
__global__ void __launch_bounds__(kThreads) letLevelKernel(const uint4* __restrict__ topo, const D4* __restrict__ mac,
                                                           unsigned begin, unsigned end, const RemoteBox box,
                                                           const EwaldDeviceView ewald,
                                                           unsigned char* __restrict__ state,
                                                           unsigned long long* __restrict__ count) {
  const unsigned i = begin + blockIdx.x * kThreads + threadIdx.x;
  if (i >= end) return;
  if (state[i] != kLetReached) {  // not in this LET
    count[i] = 0;
    return;
  }
  const D4 r = mac[i];
  const uint4 t = topo[i];
  unsigned char kind;
  unsigned cells = 0;
  // the order of essentialNodesFor's tests
  const double com[3] = {r.x, r.y, r.z};
  const bool accepts = Periodic ? periodicBoxAccepts(ewald, com, r.w, box.lo, box.hi, box.groupHalfWidth)
                                : macAccepts(r.x, r.y, r.z, r.w, box.lo, box.hi);
  if (nodeIsEmpty(r.w) || accepts) {  // an empty node (physics/moments_k.h) travels childless, as the host's
    kind = LetSelection::Accepted;
  } else if (t.w == 0) {
    kind = LetSelection::OpenedLeaf;
    cells = t.y;
  } else {
    kind = LetSelection::Opened;
    for (unsigned j = 0; j < t.w; ++j) state[t.z + j] = kLetReached;
  }
  state[i] = kind;
  count[i] = (1ull << 32) | cells;  // nodes in the high word, cells in the low (fewer than 2^32 of each)
}

struct PackParams {
  LetTreeView tree;
  const unsigned char* state;
  const unsigned long long* offset;  ///< exclusive scan of the counts: (LET node index, first cell)
  unsigned long long letNodes, letCells;
  bool secondMoment;   ///< periodic: the nodes' second moments travel (else 0)
  unsigned char* out;  ///< the packed LET, zeroed
};

__global__ void __launch_bounds__(kThreads) letPackKernel(const PackParams p) {
  const unsigned i = blockIdx.x * kThreads + threadIdx.x;
  const LetLayout L(p.letNodes, p.letCells, p.tree.dip != nullptr);
  if (i == 0) {
    unsigned long long* w = reinterpret_cast<unsigned long long*>(p.out);
    w[0] = p.tree.dip ? kLetMagicDipole : kLetMagic;
    w[1] = p.letNodes;
    w[2] = p.letCells;
  }
  if (i >= p.tree.nodes) return;
  const unsigned char kind = p.state[i];
  if (kind > LetSelection::Opened) return;
  const unsigned long long o = p.offset[i];
  const unsigned k = unsigned(o >> 32), c = unsigned(o & 0xffffffffu);
  const D4 r = p.tree.mac[i];
  const float4 a = p.tree.mq[2 * i], b = p.tree.mq[2 * i + 1];
  const uint4 t = p.tree.topo[i];
  double* f64 = reinterpret_cast<double*>(p.out);  // offsets in bytes, all multiples of 8 for the doubles
  f64[L.mass / 8 + k] = hostMass(r, a, p.tree.invMassScale);
  f64[L.com / 8 + 3 * k] = r.x;
  f64[L.com / 8 + 3 * k + 1] = r.y;
  f64[L.com / 8 + 3 * k + 2] = r.z;
  const float q[6] = {a.y, a.z, a.w, b.x, b.y, b.z};
  for (int j = 0; j < 6; ++j) f64[L.quad / 8 + 6 * k + j] = double(q[j]) * p.tree.invMassScale;
  f64[L.macRadius / 8 + k] = r.w;  // -1 for an empty node: the receiver's walk skips it
  f64[L.secondMoment / 8 + k] = p.secondMoment ? double(b.w) * p.tree.invMassScale : 0.0;
  if (p.tree.dip) {
    const float4 d = p.tree.dip[i];
    f64[L.dipole / 8 + 3 * k] = double(d.x) * p.tree.invMassScale;
    f64[L.dipole / 8 + 3 * k + 1] = double(d.y) * p.tree.invMassScale;
    f64[L.dipole / 8 + 3 * k + 2] = double(d.z) * p.tree.invMassScale;
  }
  std::uint32_t* cellBegin = reinterpret_cast<std::uint32_t*>(p.out + L.cellBegin);
  std::uint32_t* cellCount = reinterpret_cast<std::uint32_t*>(p.out + L.cellCount);
  std::uint32_t* childBegin = reinterpret_cast<std::uint32_t*>(p.out + L.childBegin);
  unsigned char* childCount = p.out + L.childCount;
  cellBegin[k] = 0;
  cellCount[k] = 0;
  childBegin[k] = 0;
  childCount[k] = 0;
  if (kind == LetSelection::OpenedLeaf) {
    cellBegin[k] = c;
    cellCount[k] = t.y;
    for (unsigned j = 0; j < t.y; ++j) {
      const unsigned from = t.x + j, to = c + j;
      const D4 cell = p.tree.cells[from];
      f64[L.x / 8 + to] = cell.x;
      f64[L.y / 8 + to] = cell.y;
      f64[L.z / 8 + to] = cell.z;
      f64[L.cellMass / 8 + to] = cell.w;
    }
  } else if (kind == LetSelection::Opened) {
    childBegin[k] = unsigned(p.offset[t.z] >> 32);  // the children are all in the LET, contiguous as in the tree
    childCount[k] = static_cast<unsigned char>(t.w);
  }
}

/// Node k of one received LET (packed, on the device) into the forest's device arrays, as the host's mergeLets
/// followed by the walk's layout would place and convert it.
__global__ void __launch_bounds__(kThreads) letToForestKernel(const LetIntoForest p, uint4* __restrict__ topo,
                                                              D4* __restrict__ mac, float4* __restrict__ mq,
                                                              float4* __restrict__ dip) {
  const unsigned k = blockIdx.x * kThreads + threadIdx.x;
  if (k >= p.nodes) return;
  const LetLayout L(p.nodes, p.cells, p.dipole);
  const double* f64 = reinterpret_cast<const double*>(p.raw);
  const std::uint32_t* cellBegin = reinterpret_cast<const std::uint32_t*>(p.raw + L.cellBegin);
  const std::uint32_t* cellCount = reinterpret_cast<const std::uint32_t*>(p.raw + L.cellCount);
  const std::uint32_t* childBegin = reinterpret_cast<const std::uint32_t*>(p.raw + L.childBegin);
  const unsigned char* childCount = p.raw + L.childCount;
  auto at = [&](unsigned j) { return j == 0 ? p.rootAt : p.nodeBase + j - 1; };
  const unsigned i = at(k), kids = childCount[k];
  const double ms = p.massScale;
  forestNodeRecord(p.cellBase + cellBegin[k], cellCount[k], kids > 0 ? at(childBegin[k]) : 0u, kids,
                   f64 + L.com / 8 + 3 * k, f64[L.macRadius / 8 + k], f64[L.mass / 8 + k], f64 + L.quad / 8 + 6 * k,
                   f64[L.secondMoment / 8 + k], ms, topo[i], mac[i], mq + 2 * i);
  if (dip) {
    const double* d = f64 + L.dipole / 8 + 3 * k;
    dip[i] = p.dipole ? make_float4(float(d[0] * ms), float(d[1] * ms), float(d[2] * ms), 0.f)
                      : make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

/// The largest half-extent per axis of the walk groups' boxes (tree/groups_k.h's groups, as the walk's loadGroup
/// and tree/groups.cpp take them); non-negative doubles order as their bits, so an integer atomicMax.
__global__ void __launch_bounds__(kThreads) groupHalfWidthKernel(const DeviceCells cells,
                                                                 const unsigned* __restrict__ groupBegin,
                                                                 unsigned numGroups,
                                                                 unsigned long long* __restrict__ out) {
  const unsigned g = blockIdx.x * kThreads + threadIdx.x;
  double w[3] = {0.0, 0.0, 0.0};
  if (g < numGroups) {
    const unsigned b = groupBegin[g], e = groupBegin[g + 1];
    double lo[3], hi[3];
    cells.centre(b, lo[0], lo[1], lo[2]);
    for (int d = 0; d < 3; ++d) hi[d] = lo[d];
    for (unsigned j = b + 1; j < e; ++j) {
      double c[3];
      cells.centre(j, c[0], c[1], c[2]);
      for (int d = 0; d < 3; ++d) {
        lo[d] = fmin(lo[d], c[d]);
        hi[d] = fmax(hi[d], c[d]);
      }
    }
    for (int d = 0; d < 3; ++d) w[d] = 0.5 * (hi[d] - lo[d]);
  }
  for (int d = 0; d < 3; ++d) {
    unsigned long long v = __double_as_longlong(w[d]);
    for (int off = 16; off > 0; off >>= 1) {
      const unsigned long long o = __shfl_down_sync(0xffffffffu, v, off);
      v = o > v ? o : v;
    }
    if ((threadIdx.x & 31) == 0) atomicMax(out + d, v);
  }
}

}  // namespace

Status launchGroupHalfWidths(const DeviceCells& cells, const unsigned* groupBegin, unsigned numGroups,
                             unsigned long long* out, cudaStream_t s) {
  AG_CUDA_TRY(cudaMemsetAsync(out, 0, 3 * sizeof(unsigned long long), s));
  if (numGroups > 0) {
    groupHalfWidthKernel<<<blocksFor(numGroups), kThreads, 0, s>>>(cells, groupBegin, numGroups, out);
    AG_CUDA_LAUNCHED("groupHalfWidthKernel");
  }
  return Status::success();
}

Status launchLetToForest(const LetIntoForest& p, uint4* topo, D4* mac, float4* mq, float4* dip,
                         double* const cells[4], cudaStream_t s) {
  if (p.nodes > 0) {
    letToForestKernel<<<blocksFor(p.nodes), kThreads, 0, s>>>(p, topo, mac, mq, dip);
    AG_CUDA_LAUNCHED("letToForestKernel");
  }
  const LetLayout L(p.nodes, p.cells, p.dipole);
  const std::size_t from[4] = {L.x, L.y, L.z, L.cellMass};
  for (int d = 0; d < 4 && p.cells > 0; ++d)
    AG_CUDA_TRY(cudaMemcpyAsync(cells[d] + p.cellBase, p.raw + from[d], p.cells * sizeof(double),
                                cudaMemcpyDeviceToDevice, s));
  return Status::success();
}

Status launchLetSelect(const LetTreeView& tree, const unsigned* levelStart, int levels, const RemoteBox& box,
                       const EwaldDeviceView* periodic, unsigned char* state, unsigned long long* count,
                       cudaStream_t s) {
  const EwaldDeviceView ewald = periodic ? *periodic : EwaldDeviceView{};
  AG_CUDA_TRY(cudaMemsetAsync(state, 0xff, tree.nodes, s));
  AG_CUDA_TRY(cudaMemsetAsync(state, kLetReached, 1, s));  // the root
  AG_CUDA_TRY(cudaMemsetAsync(count + tree.nodes, 0, sizeof(unsigned long long), s));
  for (int L = 0; L < levels; ++L) {
    const unsigned b = levelStart[L], e = levelStart[L + 1];
    if (e <= b) continue;
    if (periodic)
      letLevelKernel<true><<<blocksFor(e - b), kThreads, 0, s>>>(tree.topo, tree.mac, b, e, box, ewald, state, count);
    else
      letLevelKernel<false><<<blocksFor(e - b), kThreads, 0, s>>>(tree.topo, tree.mac, b, e, box, ewald, state, count);
    AG_CUDA_LAUNCHED("letLevelKernel");
  }
  return Status::success();
}

Status scanLetCounts(void* temp, std::size_t& tempBytes, const unsigned long long* count, unsigned long long* offset,
                     unsigned n, cudaStream_t s) {
  AG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, tempBytes, count, offset, n, s));
  if (temp) AG_CUDA_LAUNCHED("cub::DeviceScan::ExclusiveSum (LET counts)");
  return Status::success();
}

Status launchLetPack(const LetTreeView& tree, const unsigned char* state, const unsigned long long* offset,
                     unsigned long long letNodes, unsigned long long letCells, bool secondMoment, void* out,
                     cudaStream_t s) {
  AG_CUDA_TRY(cudaMemsetAsync(out, 0, LetLayout(letNodes, letCells, tree.dip != nullptr).end, s));
  PackParams p;
  p.tree = tree;
  p.state = state;
  p.offset = offset;
  p.letNodes = letNodes;
  p.letCells = letCells;
  p.secondMoment = secondMoment;
  p.out = static_cast<unsigned char*>(out);
  letPackKernel<<<blocksFor(tree.nodes), kThreads, 0, s>>>(p);
  AG_CUDA_LAUNCHED("letPackKernel");
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
