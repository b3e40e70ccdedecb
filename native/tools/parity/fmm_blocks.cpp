/// \file fmm_blocks.cpp
/// \brief Subject `fmm-blocks`: method 'fmm' through the CUDA backend's block entry (issues #17 and #20;
/// cuda/fmm_phase.h solveFmmBlocks): the cells made on the device from the blocks (the densities up packed in the
/// caller's dtype, or read from the caller's device array), then the cell entry's own FMM, the results finished into
/// the caller's layout. Two meshes: a uniform grid of 8^3 blocks (64^3 cells; 16^3 with --quick) and a random AMR block
/// set (8^3 blocks on three levels of refinement below 2^3 root blocks; two with --quick), both in a FLASH-like unk of
/// six variables (density, potential, three accelerations and one the solve must not touch) with guard cells, the
/// blocks at permuted slots of a larger array. For float64 and float32, the potential alone and with accelerations:
///   - host entry: bitwise the cell entry's results on the cells core/blocks.h makes (converted to the caller's
///     dtype), guard cells and the other variables untouched, the cells made on the device
///     (CudaStats::fmmBlocksOnDevice);
///   - device entry (the unk in device memory, the caller's stream): bitwise the same, the same untouched;
/// then: a second call with new densities on the same backend and mesh (no tree kept: treeReused false) bitwise a
/// fresh backend's; a tree block solve after it builds its own tree (treeReused false) and equals a fresh one's, and
/// an FMM block solve after that tree solve equals a fresh backend's too; a bad density is refused with the tree
/// block entry's code and message; the device entry in a periodic box is an InvalidOption. Notes: the device bytes
/// per cell of the block solve and of the cell entry.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/blocks.h"
#include "tools/parity/harness.h"

namespace amrgrav::parity {
namespace {

constexpr int kB = 8;                  // cells per block axis
constexpr int kVars = 6;               // dens, gpot, gacx, gacy, gacz, other
constexpr int kDens = 0, kPot = 1;     // the accelerations at kPot + 1 .. kPot + 3
constexpr double kSentinel = -12345.0;

/// Leaf blocks (lo, dx per block), the slots they sit at, and the density of every interior cell in block order.
struct Mesh {
  std::string name;
  std::vector<double> lo, dx;
  std::vector<std::int32_t> slot;
  std::size_t nBlocks = 0, maxBlocks = 0;
  int guard = 4;
  std::vector<double> rho;  // block order, i fastest
};

void addBlock(Mesh& m, const double lo[3], double side) {
  for (int d = 0; d < 3; ++d) {
    m.lo.push_back(lo[d]);
    m.dx.push_back(side / kB);
  }
}

/// n^3 cells in (n/8)^3 blocks on [0, 1)^3.
Mesh uniformBlocks(int n) {
  Mesh m;
  m.name = "uniform" + std::to_string(n);
  const int nb = n / kB;
  const double side = 1.0 / nb;
  for (int k = 0; k < nb; ++k)
    for (int j = 0; j < nb; ++j)
      for (int i = 0; i < nb; ++i) {
        const double lo[3] = {i * side, j * side, k * side};
        addBlock(m, lo, side);
      }
  return m;
}

/// 2^3 root blocks on [0, 1)^3, each block refined into its 8 octants with probability 0.45 down to `levels` levels
/// below the roots (so up to four cell sizes, not 2:1 balanced): the leaves in depth-first order.
Mesh amrBlocks(int levels, std::uint64_t seed) {
  Mesh m;
  m.name = "amr" + std::to_string(levels + 1) + "levels";
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  struct Node {
    double lo[3];
    double side;
    int level;
  };
  std::vector<Node> stack;
  for (int c = 7; c >= 0; --c) stack.push_back(Node{{0.5 * (c & 1), 0.5 * (c >> 1 & 1), 0.5 * (c >> 2)}, 0.5, 0});
  while (!stack.empty()) {
    const Node nd = stack.back();
    stack.pop_back();
    // the first root is always refined to the bottom: every level occurs
    const bool split = nd.level < levels && (u(rng) < 0.45 || (nd.lo[0] == 0 && nd.lo[1] == 0 && nd.lo[2] == 0));
    if (split) {
      const double h = nd.side / 2;
      for (int c = 7; c >= 0; --c)
        stack.push_back(Node{{nd.lo[0] + h * (c & 1), nd.lo[1] + h * (c >> 1 & 1), nd.lo[2] + h * (c >> 2)}, h,
                             nd.level + 1});
    } else {
      addBlock(m, nd.lo, nd.side);
    }
  }
  return m;
}

/// Slots (a permutation into nBlocks + 3 slots), guard cells and random densities (white noise in [0.5, 1.5) times
/// 4^level, so the refined regions are the heavy ones).
void finishMesh(Mesh& m, int guard, std::uint64_t seed) {
  m.nBlocks = m.lo.size() / 3;
  m.maxBlocks = m.nBlocks + 3;
  m.guard = guard;
  m.slot.resize(m.nBlocks);
  std::vector<std::int32_t> perm(m.maxBlocks);
  for (std::size_t s = 0; s < m.maxBlocks; ++s) perm[s] = std::int32_t(s);
  std::mt19937_64 rng(seed);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (std::size_t b = 0; b < m.nBlocks; ++b) m.slot[b] = perm[b];
  std::uniform_real_distribution<double> f(0.5, 1.5);
  const std::size_t cpb = std::size_t(kB) * kB * kB;
  m.rho.resize(m.nBlocks * cpb);
  for (std::size_t b = 0; b < m.nBlocks; ++b) {
    const double level = std::log2(0.5 / (m.dx[3 * b] * kB));
    for (std::size_t c = 0; c < cpb; ++c) m.rho[b * cpb + c] = f(rng) * std::pow(4.0, level);
  }
}

/// The unk of one solve: nvar x NX^3 x maxBlocks elements of T, kSentinel everywhere but the densities.
template <class T>
struct Unk {
  std::vector<T> a;
};

BlocksView viewOf(const Mesh& m, const void* unk, bool f32) {
  BlocksView v;
  v.nBlocks = m.nBlocks;
  v.nxb = v.nyb = v.nzb = kB;
  for (int d = 0; d < 3; ++d) v.guard[d] = m.guard;
  v.lo = m.lo.data();
  v.dx = m.dx.data();
  v.blockIndex = m.slot.data();
  const std::size_t es = f32 ? 4 : 8;
  v.density = static_cast<const char*>(unk) + kDens * es;
  v.dtype = f32 ? DType::Float32 : DType::Float64;
  v.varStride = kVars;
  return v;
}

std::size_t unkElements(const Mesh& m) {
  const std::size_t nx = std::size_t(kB + 2 * m.guard);
  return m.maxBlocks * kVars * nx * nx * nx;
}

/// The unk's bytes (float64 or float32) with the densities (block order) at their elements.
std::vector<char> makeUnk(const Mesh& m, const std::vector<double>& rho, bool f32) {
  const std::size_t es = f32 ? 4 : 8, ne = unkElements(m);
  std::vector<char> bytes(ne * es);
  for (std::size_t e = 0; e < ne; ++e) {
    if (f32) reinterpret_cast<float*>(bytes.data())[e] = float(kSentinel);
    else reinterpret_cast<double*>(bytes.data())[e] = kSentinel;
  }
  const BlocksView v = viewOf(m, nullptr, f32);
  std::size_t p = 0;
  for (std::size_t b = 0; b < m.nBlocks; ++b)
    for (int k = 0; k < kB; ++k)
      for (int j = 0; j < kB; ++j)
        for (int i = 0; i < kB; ++i, ++p) {
          const std::size_t e = v.element(v.slotOf(b), i, j, k) + kDens;
          if (f32) reinterpret_cast<float*>(bytes.data())[e] = float(rho[p]);
          else reinterpret_cast<double*>(bytes.data())[e] = rho[p];
        }
  return bytes;
}

BlockOutputs outputsOf(void* unk, bool f32, bool accel) {
  const std::size_t es = f32 ? 4 : 8;
  char* base = static_cast<char*>(unk);
  BlockOutputs o;
  o.potential = base + kPot * es;
  if (accel) {
    o.ax = base + (kPot + 1) * es;
    o.ay = base + (kPot + 2) * es;
    o.az = base + (kPot + 3) * es;
  }
  return o;
}

/// The interior results in block order (as doubles, a SolveResult for bitwiseEqual), and whether every element that
/// is not a result is what `before` had (the densities, guard cells, the sixth variable, unasked accelerations).
SolveResult readResults(const Mesh& m, const std::vector<char>& unk, const std::vector<char>& before, bool f32,
                        bool accel, bool* untouched) {
  const BlocksView v = viewOf(m, nullptr, f32);
  const std::size_t es = f32 ? 4 : 8, ne = unkElements(m);
  auto at = [&](const std::vector<char>& u, std::size_t e) {
    return f32 ? double(reinterpret_cast<const float*>(u.data())[e]) : reinterpret_cast<const double*>(u.data())[e];
  };
  std::vector<char> result(ne, 0);
  SolveResult r;
  std::vector<double>* dst[4] = {&r.potential, &r.ax, &r.ay, &r.az};
  const int nout = accel ? 4 : 1;
  for (std::size_t b = 0; b < m.nBlocks; ++b)
    for (int k = 0; k < kB; ++k)
      for (int j = 0; j < kB; ++j)
        for (int i = 0; i < kB; ++i) {
          const std::size_t e = v.element(v.slotOf(b), i, j, k);
          for (int q = 0; q < nout; ++q) {
            result[e + kPot + q] = 1;
            dst[q]->push_back(at(unk, e + kPot + q));
          }
        }
  *untouched = true;
  for (std::size_t e = 0; e < ne; ++e)
    if (!result[e] && std::memcmp(unk.data() + e * es, before.data() + e * es, es) != 0) *untouched = false;
  return r;
}

/// The cell entry's results on the cells the blocks make (core/blocks.h), in the caller's dtype.
Status cellEntry(CudaBackend& gpu, const Mesh& m, const std::vector<char>& unk, bool f32, const SolveOptions& o,
                 SolveResult& r, CudaStats* stats) {
  GeneratedCells gc;
  generateBlockCells(viewOf(m, unk.data(), f32), 1, gc);
  poison(r, gc.x.size(), o.accelerations);
  const Status st = gpu.solve(gc.view(), o, r);
  if (stats) *stats = deviceStats(gpu);
  if (f32)
    for (auto* f : {&r.potential, &r.ax, &r.ay, &r.az})
      for (double& x : *f) x = double(float(x));
  return st;
}

/// One host block solve of `unk` (a copy): its status, results and whether the rest stayed.
struct HostSolve {
  Status status;
  SolveResult result, values;
  bool untouched = false;
  CudaStats stats;
};

HostSolve hostEntry(CudaBackend& gpu, const Mesh& m, const std::vector<char>& unk, bool f32, const SolveOptions& o) {
  HostSolve h;
  std::vector<char> u = unk;
  h.status = gpu.solveBlocks(viewOf(m, u.data(), f32), outputsOf(u.data(), f32, o.accelerations), o, h.result);
  h.stats = deviceStats(gpu);
  if (h.status.ok()) h.values = readResults(m, u, unk, f32, o.accelerations, &h.untouched);
  return h;
}

/// The device entry: the unk copied to device memory, solved there on the caller's stream, copied back.
HostSolve deviceEntry(CudaBackend& gpu, const Mesh& m, const std::vector<char>& unk, bool f32, const SolveOptions& o) {
  HostSolve h;
  void* d = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&d, unk.size()) != cudaSuccess ||
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    h.status = Status::error(ErrorCode::Internal, "parity: cudaMalloc or cudaStreamCreate failed");
    if (d) cudaFree(d);
    return h;
  }
  cudaMemcpyAsync(d, unk.data(), unk.size(), cudaMemcpyHostToDevice, stream);  // ordered before the solve by its stream
  BlocksView v = viewOf(m, d, f32);
  v.deviceData = true;
  v.stream = stream;
  h.status = gpu.solveBlocks(v, outputsOf(d, f32, o.accelerations), o, h.result);
  h.stats = deviceStats(gpu);
  std::vector<char> u(unk.size());
  const bool copied = cudaMemcpyAsync(u.data(), d, u.size(), cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
                      cudaStreamSynchronize(stream) == cudaSuccess;
  cudaFree(d);
  cudaStreamDestroy(stream);
  if (h.status.ok() && !copied) h.status = Status::error(ErrorCode::Internal, "parity: the device unk's copy failed");
  if (h.status.ok()) h.values = readResults(m, u, unk, f32, o.accelerations, &h.untouched);
  return h;
}

std::string why(const HostSolve& h, const SolveResult& want, const std::string& what) {
  if (!h.status.ok()) return std::string(errorCodeName(h.status.code)) + ": " + h.status.message;
  if (!h.untouched) return "a guard cell, the density or another variable was written";
  if (!h.stats.fmmBlocksOnDevice) return "the cells were made on the host (the block path did not run)";
  if (!bitwiseEqual(want, h.values)) return "results differ from " + what;
  return "bitwise " + what + " (" + std::to_string(h.values.potential.size()) + " cells, " +
         num(h.stats.deviceBytesPerCell) + " device bytes per cell)";
}

bool passes(const HostSolve& h, const SolveResult& want) {
  return h.status.ok() && h.untouched && h.stats.fmmBlocksOnDevice && bitwiseEqual(want, h.values);
}

SolveOptions fmmOpts(bool accel) {
  SolveOptions o;
  o.method = SolveMethod::Fmm;
  o.accelerations = accel;
  o.G = 1;
  return o;
}

void meshCases(Context& cx, const Mesh& m) {
  CudaBackend& gpu = *cx.gpu;
  const std::string g = "fmm-blocks-" + m.name;
  cx.report.note("{\"kind\":\"note\",\"mesh\":\"" + m.name + "\",\"blocks\":" + std::to_string(m.nBlocks) +
                     ",\"cells\":" + std::to_string(m.rho.size()) + "}",
                 "# " + m.name + ": " + std::to_string(m.nBlocks) + " blocks of 8^3, " + std::to_string(m.rho.size()) +
                     " cells, guard " + std::to_string(m.guard) + ", 6 variables, permuted slots");
  for (int f32 = 0; f32 < 2; ++f32)
    for (int accel = 0; accel < 2; ++accel) {
      const SolveOptions o = fmmOpts(accel != 0);
      const std::string tag = g + (accel ? "-acc" : "-pot") + (f32 ? "-f32" : "-f64");
      const std::vector<char> unk = makeUnk(m, m.rho, f32 != 0);
      SolveResult cells;
      CudaStats cellStats;
      const Status sc = cellEntry(gpu, m, unk, f32 != 0, o, cells, &cellStats);
      if (!sc.ok()) {
        check(cx, tag + "-cells", false, "the cell entry failed: " + sc.message);
        continue;
      }
      const HostSolve host = hostEntry(gpu, m, unk, f32 != 0, o);
      check(cx, tag + "-host", passes(host, cells),
            why(host, cells, "the cell entry on the same cells") + "; the cell entry: " +
                num(cellStats.deviceBytesPerCell) + " bytes per cell");
      const HostSolve dev = deviceEntry(gpu, m, unk, f32 != 0, o);
      check(cx, tag + "-device", passes(dev, cells), why(dev, cells, "the cell entry (and the host entry)"));
    }

  // no tree is kept: new densities on the same mesh and backend = a fresh backend's; then a tree block solve on that
  // backend builds its own tree (backends of their own: the tree walk's order follows its queue's capacity, which
  // grows with the solves a backend has run)
  {
    const SolveOptions o = fmmOpts(true);
    auto used = makeCudaBackend(gpu.cudaOptions());
    (void)hostEntry(*used, m, makeUnk(m, m.rho, false), false, o);
    std::vector<double> rho2 = m.rho;
    for (std::size_t p = 0; p < rho2.size(); ++p) rho2[p] *= 1.0 + 0.25 * std::sin(double(p));
    const std::vector<char> unk2 = makeUnk(m, rho2, false);
    const HostSolve again = hostEntry(*used, m, unk2, false, o);
    auto fresh = makeCudaBackend(gpu.cudaOptions());
    const HostSolve ref = hostEntry(*fresh, m, unk2, false, o);
    check(cx, g + "-new-densities", passes(again, ref.values) && ref.status.ok() && !again.result.stats.treeReused,
          again.result.stats.treeReused ? "a tree was kept" : why(again, ref.values, "a fresh backend's"));
    SolveOptions t;
    t.accelerations = true;
    t.G = 1;
    auto untouched = makeCudaBackend(gpu.cudaOptions());
    HostSolve tree = hostEntry(*used, m, unk2, false, t), treeRef = hostEntry(*untouched, m, unk2, false, t);
    tree.stats.fmmBlocksOnDevice = treeRef.stats.fmmBlocksOnDevice = true;  // method 'tree': not the FMM's flag
    check(cx, g + "-then-tree", passes(tree, treeRef.values) && !tree.result.stats.treeReused,
          tree.result.stats.treeReused ? "the tree solve reused a tree after the FMM's"
                                       : why(tree, treeRef.values, "a fresh backend's tree block solve"));
    // and the FMM after a tree block solve that kept its tree for this mesh: the block laid out anew
    const HostSolve after = hostEntry(*untouched, m, unk2, false, o);
    check(cx, g + "-after-tree", passes(after, ref.values) && !after.result.stats.treeReused,
          why(after, ref.values, "a fresh backend's"));
  }
}

}  // namespace

void runFmmBlocks(Context& cx) {
  const bool quick = cx.args.uniform < 32;
  Mesh uni = uniformBlocks(quick ? 16 : 64);
  finishMesh(uni, quick ? 2 : 4, cx.args.seed);
  meshCases(cx, uni);
  Mesh amr = amrBlocks(quick ? 2 : 3, cx.args.seed + 1);
  finishMesh(amr, 2, cx.args.seed + 2);
  meshCases(cx, amr);

  // a bad density: the tree block entry's code and message (the same checks, blockFlagged's words)
  {
    std::vector<double> rho = uni.rho;
    rho[rho.size() / 3] = std::nan("");
    const std::vector<char> unk = makeUnk(uni, rho, false);
    SolveOptions tree;
    tree.G = 1;
    const HostSolve a = hostEntry(*cx.gpu, uni, unk, false, fmmOpts(false));
    const HostSolve b = hostEntry(*cx.gpu, uni, unk, false, tree);
    check(cx, "fmm-blocks-bad-density", !a.status.ok() && a.status.code == b.status.code &&
                                            a.status.message == b.status.message,
          "fmm: " + std::string(errorCodeName(a.status.code)) + ": " + a.status.message + "; tree: " +
              errorCodeName(b.status.code) + ": " + b.status.message);
  }
  // the device entry in a periodic box: refused (the periodic FMM takes the host's cells)
  {
    SolveOptions o = periodicBox(fmmOpts(false), true, true, true);
    for (int d = 0; d < 3; ++d) o.boxHi[d] = 1;
    const std::vector<char> unk = makeUnk(uni, uni.rho, false);
    const HostSolve h = deviceEntry(*cx.gpu, uni, unk, false, o);
    check(cx, "fmm-blocks-device-periodic-refused", h.status.code == ErrorCode::InvalidOption,
          std::string(errorCodeName(h.status.code)) + ": " + h.status.message);
  }
}

}  // namespace amrgrav::parity
