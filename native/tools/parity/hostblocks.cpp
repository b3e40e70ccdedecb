/// \file hostblocks.cpp
/// \brief Subject `hostblocks`: the CUDA backend's host block entry (core/blocks.h, cuda/blocks_phase.h): its densities
/// going up beside the keys, sort and build on a new mesh, and its walk in chunks (CudaOptions::resultChunks), each
/// chunk's results downloaded, finished and scattered on the host while the next ones walk. The blocks have 6 x 4 x 5
/// cells (cells per block not a power of two), 2 guard cells, 2 variables, and sit at permuted slots; float64 and
/// float32, the potential alone and with accelerations. Every chunk count (up to 16, some of them with no groups), a
/// walk queue that overflows (the chunks walked again), an unchanged mesh (the kept tree and sorted order) and
/// pageable copies give the one-launch result bitwise, with the same interaction counts, guard cells and other
/// variables untouched; the one-launch result is the cell entry's on the same cells bitwise, and the CPU backend's
/// block entry within tol.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/blocks.h"
#include "tools/parity/harness.h"

namespace amrgrav::parity {
namespace {

constexpr int kCells[3] = {6, 4, 5};  // cells per block axis
constexpr int kGuard = 2, kVars = 2;
constexpr double kSentinel = -12345.0;  // in every element a solve must not write

/// The mesh: geometry, the slots, and a field layout (guard cells, two variables) filled with the density at
/// variable 0 of every interior cell and kSentinel everywhere else.
struct BlockMesh {
  int nb[3] = {0, 0, 0};  // blocks per axis
  std::vector<double> lo, dx;
  std::vector<std::int32_t> slot;
  std::vector<double> rho64;
  std::vector<float> rho32;
  std::size_t nBlocks = 0, elements = 0;

  BlocksView view(bool f32) const {
    BlocksView v;
    v.nBlocks = nBlocks;
    v.nxb = kCells[0];
    v.nyb = kCells[1];
    v.nzb = kCells[2];
    for (int d = 0; d < 3; ++d) v.guard[d] = kGuard;
    v.lo = lo.data();
    v.dx = dx.data();
    v.blockIndex = slot.data();
    v.density = f32 ? static_cast<const void*>(rho32.data()) : static_cast<const void*>(rho64.data());
    v.dtype = f32 ? DType::Float32 : DType::Float64;
    v.varStride = kVars;
    return v;
  }
};

/// 8 x 12 x 10 blocks (115200 cells, 48 x 48 x 50), or 3 x 4 x 2 (--quick).
BlockMesh makeMesh(bool quick) {
  BlockMesh m;
  const int nb[3] = {quick ? 3 : 8, quick ? 4 : 12, quick ? 2 : 10};
  for (int d = 0; d < 3; ++d) m.nb[d] = nb[d];
  m.nBlocks = std::size_t(nb[0]) * nb[1] * nb[2];
  const double h = kKpc / 48.0;
  m.lo.resize(3 * m.nBlocks);
  m.dx.assign(3 * m.nBlocks, h);
  m.slot.resize(m.nBlocks);
  for (std::size_t b = 0; b < m.nBlocks; ++b) {
    const std::size_t c[3] = {b % nb[0], (b / nb[0]) % nb[1], b / (std::size_t(nb[0]) * nb[1])};
    for (int d = 0; d < 3; ++d) m.lo[3 * b + d] = double(c[d]) * kCells[d] * h;
    m.slot[b] = std::int32_t((b * 7 + 3) % m.nBlocks);  // 7 is prime to 960 and 24: a permutation
  }
  BlocksView v = m.view(false);
  m.elements = m.nBlocks * v.strideOfBlock();
  m.rho64.assign(m.elements, kSentinel);
  for (std::size_t b = 0; b < m.nBlocks; ++b)
    for (int k = 0; k < kCells[2]; ++k)
      for (int j = 0; j < kCells[1]; ++j)
        for (int i = 0; i < kCells[0]; ++i) {
          const double x = m.lo[3 * b] + (i + 0.5) * h, y = m.lo[3 * b + 1] + (j + 0.5) * h,
                       z = m.lo[3 * b + 2] + (k + 0.5) * h;
          const double r2 = (std::pow(x - 0.4 * kKpc, 2) + std::pow(y - 0.55 * kKpc, 2) + std::pow(z - 0.6 * kKpc, 2)) /
                            (kKpc * kKpc);
          m.rho64[v.element(std::size_t(m.slot[b]), i, j, k)] =
              1e-24 * (1.0 + 200.0 * std::exp(-r2 / 0.004) + 0.3 * x / kKpc);
        }
  m.rho32.resize(m.elements);
  for (std::size_t e = 0; e < m.elements; ++e) m.rho32[e] = float(m.rho64[e]);
  return m;
}

/// One block solve's fields (the density's layout and dtype, every element kSentinel before the solve).
struct Fields {
  std::vector<double> f64[4];
  std::vector<float> f32[4];
  SolveResult result;
  Status status;
};

Fields solveOn(Backend& b, const BlockMesh& m, bool f32, const SolveOptions& opt, bool meshChanged) {
  Fields f;
  BlockOutputs out;
  void** ptr[4] = {&out.potential, &out.ax, &out.ay, &out.az};
  const int nout = opt.accelerations ? 4 : 1;
  for (int k = 0; k < nout; ++k) {
    if (f32) {
      f.f32[k].assign(m.elements, float(kSentinel));
      *ptr[k] = f.f32[k].data();
    } else {
      f.f64[k].assign(m.elements, kSentinel);
      *ptr[k] = f.f64[k].data();
    }
  }
  BlocksView v = m.view(f32);
  v.meshChanged = meshChanged;
  f.status = b.solveBlocks(v, out, opt, f.result);
  return f;
}

/// The interior results of field k in block order (as doubles), and whether every other element kept kSentinel.
std::vector<double> interior(const BlockMesh& m, const Fields& f, bool f32, int k, bool* untouched) {
  const BlocksView v = m.view(f32);
  std::vector<char> mine(m.elements, 0);
  std::vector<double> out;
  out.reserve(v.cells());
  for (std::size_t b = 0; b < m.nBlocks; ++b)
    for (int kk = 0; kk < kCells[2]; ++kk)
      for (int j = 0; j < kCells[1]; ++j)
        for (int i = 0; i < kCells[0]; ++i) {
          const std::size_t e = v.element(v.slotOf(b), i, j, kk);
          mine[e] = 1;
          out.push_back(f32 ? double(f.f32[k][e]) : f.f64[k][e]);
        }
  *untouched = true;
  for (std::size_t e = 0; e < m.elements; ++e)
    if (!mine[e] && (f32 ? double(f.f32[k][e]) : f.f64[k][e]) != kSentinel) *untouched = false;
  return out;
}

/// The fields as a SolveResult (block order), for compare() and bitwiseEqual(); untouched: guard cells and the
/// other variable kept kSentinel in every field.
SolveResult asResult(const BlockMesh& m, const Fields& f, bool f32, bool accel, bool* untouched) {
  SolveResult r;
  std::vector<double>* dst[4] = {&r.potential, &r.ax, &r.ay, &r.az};
  *untouched = true;
  for (int k = 0; k < (accel ? 4 : 1); ++k) {
    bool u = true;
    *dst[k] = interior(m, f, f32, k, &u);
    *untouched = *untouched && u;
  }
  return r;
}

CudaOptions withChunks(CudaOptions o, int chunks) {
  o.resultChunks = chunks;
  return o;
}

}  // namespace

void runHostBlocks(Context& cx) {
  const BlockMesh mesh = makeMesh(cx.args.uniform < 32);
  const std::size_t cells = mesh.view(false).cells();
  for (int accel = 0; accel < 2; ++accel)
    for (int f32 = 0; f32 < 2; ++f32) {
      SolveOptions opt = Context::base();
      opt.accelerations = accel != 0;
      const std::string tag = std::string(accel ? "acc" : "pot") + (f32 ? "-f32" : "-f64");
      // the reference: one walk launch, the results finished on the device and downloaded after it
      auto one = makeCudaBackend(withChunks(cudaOpts(true, 4096, true), 1));
      const Fields ref = solveOn(*one, mesh, f32, opt, true);
      bool untouched = false;
      const SolveResult refR = asResult(mesh, ref, f32, opt.accelerations, &untouched);
      check(cx, "blocks-" + tag + "-one-launch", ref.status.ok() && untouched,
            ref.status.ok() ? (untouched ? std::to_string(cells) + " cells, guard cells untouched"
                                         : "a guard cell or another variable was written")
                            : ref.status.message);
      if (!ref.status.ok()) continue;
      {  // the cell entry on the cells the blocks make (core/blocks.h): bitwise (in the caller's dtype)
        GeneratedCells gc;
        generateBlockCells(mesh.view(f32), 1, gc);
        auto cellsGpu = makeCudaBackend(cudaOpts(true, 4096, true));
        SolveResult r;
        const Status st = cellsGpu->solve(gc.view(), opt, r);
        std::vector<double>* field[4] = {&r.potential, &r.ax, &r.ay, &r.az};
        if (f32)
          for (auto* f : field)
            for (double& x : *f) x = double(float(x));
        const bool ok = st.ok() && bitwiseEqual(refR, r);
        check(cx, "blocks-" + tag + "-cells", ok,
              !st.ok() ? st.message : ok ? "bitwise the cell entry on the same cells" : "results differ");
      }
      if (!f32) {  // the CPU backend's block entry on the same blocks
        const Fields cpu = solveOn(*cx.cpu, mesh, false, opt, true);
        bool u = false;
        const SolveResult cpuR = asResult(mesh, cpu, false, opt.accelerations, &u);
        const Diff d = compare(cpuR, refR, opt.accelerations);
        const bool ok = cpu.status.ok() && d.finite && d.pot <= cx.args.tol &&
                        (!opt.accelerations || d.accRms <= cx.args.tol) &&
                        cpu.result.stats.approxInteractions == ref.result.stats.approxInteractions &&
                        cpu.result.stats.directInteractions == ref.result.stats.directInteractions;
        check(cx, "blocks-" + tag + "-cpu", ok,
              cpu.status.ok() ? "pot " + num(d.pot) + (opt.accelerations ? " acc " + num(d.accRms) : "") +
                                    " interactions " + std::to_string(cpu.result.stats.approxInteractions) + "/" +
                                    std::to_string(ref.result.stats.approxInteractions)
                              : cpu.status.message);
      }
      // every chunk count, new mesh then unchanged mesh (the kept tree and sorted order): bitwise the reference
      auto sameAs = [&](const Fields& want, const std::string& name, const Fields& got, bool wantReused) {
        bool u = false, refU = false;
        const SolveResult refR = asResult(mesh, want, f32, opt.accelerations, &refU);
        const Fields& ref = want;
        const SolveResult r = asResult(mesh, got, f32, opt.accelerations, &u);
        const bool ok = got.status.ok() && u && bitwiseEqual(refR, r) &&
                        got.result.stats.approxInteractions == ref.result.stats.approxInteractions &&
                        got.result.stats.directInteractions == ref.result.stats.directInteractions &&
                        got.result.stats.treeReused == wantReused;
        check(cx, "blocks-" + tag + "-" + name, ok,
              !got.status.ok() ? got.status.message
              : !u              ? "a guard cell or another variable was written"
              : !bitwiseEqual(refR, r) ? "results differ from one launch"
              : got.result.stats.treeReused != wantReused ? "tree reuse not as expected"
                                                          : "bitwise the one launch, same interactions");
      };
      auto same = [&](const std::string& name, const Fields& got, bool wantReused) {
        sameAs(ref, name, got, wantReused);
      };
      for (int chunks : {2, 3, 5, 16}) {
        auto b = makeCudaBackend(withChunks(cudaOpts(true, 4096, true), chunks));
        same("chunks" + std::to_string(chunks) + "-new", solveOn(*b, mesh, f32, opt, true), false);
        same("chunks" + std::to_string(chunks) + "-unchanged", solveOn(*b, mesh, f32, opt, false), true);
        const CudaStats cs = deviceStats(*b);
        // each launch takes 4x the next one's groups (walkChunkGroups) and empty launches are dropped (the last ones
        // of 5 or 16 on a small mesh): the walk ran in several launches, at most as many as asked
        const bool launchesOk = chunks == 2 ? cs.walkLaunches == 2 : cs.walkLaunches > 1 && cs.walkLaunches <= chunks;
        check(cx, "blocks-" + tag + "-chunks" + std::to_string(chunks) + "-launches", launchesOk,
              "walk launches " + std::to_string(cs.walkLaunches) + " of " + std::to_string(chunks) + " asked");
      }
      // a queue that overflows: the chunked walk runs again with a larger one
      {
        auto b = makeCudaBackend(withChunks(cudaOpts(true, 64, true), 5));
        const Fields got = solveOn(*b, mesh, f32, opt, true);
        const CudaStats cs = deviceStats(*b);
        check(cx, "blocks-" + tag + "-chunks5-regrow-happened", cs.walkLaunches > 5,
              "walk launches " + std::to_string(cs.walkLaunches) + ", final capacity " +
                  std::to_string(cs.queueCapacity));
        // a warp's traversal order follows its ring's capacity (cuda/kernel_walk.cu popBatch turns LIFO past half
        // full), so the reference is one launch with the capacity the reruns ended with
        auto oneAt = makeCudaBackend(withChunks(cudaOpts(true, cs.queueCapacity, true), 1));
        sameAs(solveOn(*oneAt, mesh, f32, opt, true), "chunks5-queue-regrow", got, false);
      }
      // pageable copies: one launch, the same bits; a chunked backend then a one-launch call on its kept tree
      {
        auto b = makeCudaBackend(withChunks(cudaOpts(false, 4096, true), 5));
        same("pageable-new", solveOn(*b, mesh, f32, opt, true), false);
        auto c = makeCudaBackend(withChunks(cudaOpts(true, 4096, true), 3));
        same("chunks3-then-one-new", solveOn(*c, mesh, f32, opt, true), false);
        c->setCudaOptions(withChunks(cudaOpts(true, 4096, true), 1));
        same("chunks3-then-one-unchanged", solveOn(*c, mesh, f32, opt, false), true);
        c->setCudaOptions(withChunks(cudaOpts(true, 4096, true), 3));
        same("chunks3-then-one-then-chunks3-unchanged", solveOn(*c, mesh, f32, opt, false), true);
      }
    }
}

}  // namespace amrgrav::parity
