// The block entry on the GPU (issue #17), through the C API only (libamrgrav), for the lead to run on a GPU host:
//   amrgrav_device_blocks_check [--grid N] [--block B] [--guard G] [--nvar V] [--float32] [--reps R]
//                               [--no-check] [--no-cells] [--no-time] [--theta T] [--order O] [--only host|device]
//                               [--chunks K] [--direct K] [--pinned] [--method tree|fmm]
// A uniform N^3 grid cut into (N/B)^3 blocks of B^3 cells (Morton-free raster order, stored at reversed slots of a
// FLASH-like unk(V, NX, NY, NZ, slots) array with G guard cells), a density made ON THE DEVICE by a kernel.
// Checks (one JSON line each, "kind":"check"):
//   device     amrgrav_compute_blocks_device (density and results in device memory, the caller's stream) against
//              amrgrav_compute_blocks on the same densities copied down: bitwise count and max |diff|
//   cells      amrgrav_compute_blocks against amrgrav_compute_potential on the cells made on the host with the
//              documented formula (the per-cell path): bitwise count and max |diff| (float64 input only)
//   reuse      new densities (a device kernel) on the same mesh through the device entry: the tree is kept
//              (amrgrav_tree_reused 1) and the result equals a fresh solver's host block entry bitwise
//   kept-*     one solver called device, host, device, device, host on the same mesh with new densities each time,
//              potential alone (kept-pot-STEP-ENTRY) and with accelerations (kept-acc-...): the tree is kept from the
//              second call on, and every result (all four fields) equals a fresh solver's host block entry bitwise
// Timings (best of R, "kind":"time", ms from the host clock around the call, and the solver's stats):
//   host-new, host-unchanged, device-new, device-unchanged, cells (the per-cell entry on the same cells)
// The stats are each phase's wall time; the host entry's overlap (upload beside keys/sort/build on a new mesh,
// download beside the walk: its results come down chunk by chunk of the walk, CudaOptions::resultChunks, 3 launches
// from 64^3 by default, so the checks above cover that path against the device entry and the cells).
// --chunks K: the host entry's walk in K launches, each one's results downloaded while the next walks (1: one
// launch, then the download; 0: the backend's choice by size, the default), through AMRGRAV_CUDA_RESULT_CHUNKS.
// --only host: the host entry's timings alone (the density is made on the device, copied down, and the device
// arrays freed: for the largest grids); --only device: the device entry's alone.
// --direct K: the host entry's potential at K cells spread over the grid against direct summation over every cell
//   (float64, host threads; no self term in either), max relative difference at most 1e-3 ("check direct": what a
//   lost, doubled or misplaced share of the cells would break, on grids too large for the per-cell comparison).
// --pinned: the host entry with the density page-locked by cudaHostRegister (as a caller may do with its unk), which
//   the mass kernel reads in place over PCIe when it is one variable without guard cells (no staged copy):
//   "check pinned-new" and "check pinned-unchanged" (new densities, the tree kept) against a fresh solver on a
//   pageable copy, bitwise; with timings, "pinned-new" and "pinned-unchanged".
// --method fmm: method 'fmm' (order 7, the FMM's defaults; --theta and --order are the tree's) through the block entry
//   (cuda/fmm_phase.h solveFmmBlocks: the cells made on the device, one number per cell up or none): the same checks,
//   except that the FMM keeps no tree (reuse and kept-* want tree_reused 0, and still a fresh solver's bits), and the
//   same timings ("unchanged" re-solves the whole FMM).
// Exit status 0 when every check passed, 1 otherwise; 2 when no usable GPU is present (CTest skips: gpu.blocks),
// unless AMRGRAV_REQUIRE_GPU=1 (then 1), or on another setup failure.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "amrgrav.h"

namespace {

#define CK(expr)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (expr);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::printf("{\"kind\":\"error\",\"what\":\"%s: %s\"}\n", #expr, cudaGetErrorString(e_)); \
      std::exit(2);                                                                              \
    }                                                                                            \
  } while (0)

struct Args {
  int grid = 64, block = 8, guard = 4, nvar = 1, reps = 5, order = 2, chunks = -1, group = 0;  // group 0: the default
  int direct = 0;  ///< --direct K
  double theta = 0.5;
  bool f32 = false, check = true, cells = true, time = true, pinned = false, fmm = false;
  std::string only = "all";
};

struct Layout {
  int nb1 = 0;  // blocks per axis
  std::size_t nBlocks = 0, slots = 0;
  int B = 8, G = 0, V = 1, NX = 0;
  __host__ __device__ std::size_t blockElems() const { return std::size_t(V) * NX * NX * NX; }
  std::size_t total() const { return slots * blockElems(); }
};

// the element of interior cell (i, j, k) of slot s (variable 0)
__host__ __device__ inline std::size_t elementOf(const Layout& L, std::size_t s, int i, int j, int k) {
  return s * L.blockElems() + std::size_t(L.V) * ((std::size_t(k + L.G) * L.NX + (j + L.G)) * L.NX + (i + L.G));
}

// block b's slot: reversed
__host__ __device__ inline std::size_t slotOf(const Layout& L, std::size_t b) { return L.nBlocks - 1 - b; }

template <class T>
__global__ void densityKernel(Layout L, T* rho, int step) {
  const std::size_t cpb = std::size_t(L.B) * L.B * L.B, n = L.nBlocks * cpb;
  for (std::size_t p = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; p < n; p += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t b = p / cpb;
    std::size_t c = p % cpb;
    const int i = int(c % L.B), j = int((c / L.B) % L.B), k = int(c / (std::size_t(L.B) * L.B));
    const int bx = int(b % L.nb1), by = int((b / L.nb1) % L.nb1), bz = int(b / (std::size_t(L.nb1) * L.nb1));
    const double N = double(L.nb1) * L.B;
    const double x = (bx * L.B + i + 0.5) / N, y = (by * L.B + j + 0.5) / N, z = (bz * L.B + k + 0.5) / N;
    const double cx = 0.45 + 0.05 * step, r2 = (x - cx) * (x - cx) + (y - 0.5) * (y - 0.5) + (z - 0.55) * (z - 0.55);
    const double r3 = (x - 0.2) * (x - 0.2) + (y - 0.7) * (y - 0.7) + (z - 0.3) * (z - 0.3);
    rho[elementOf(L, slotOf(L, b), i, j, k)] = T(1.0 + 100.0 * exp(-r2 / 0.005) + 30.0 * exp(-r3 / 0.002) + 0.1 * x);
  }
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Mesh {
  std::vector<double> lo, dx;
  std::vector<int> slot;
};

Mesh makeMesh(const Layout& L) {
  Mesh m;
  m.lo.resize(3 * L.nBlocks);
  m.dx.resize(3 * L.nBlocks);
  m.slot.resize(L.nBlocks);
  const double h = 1.0 / (double(L.nb1) * L.B);
  for (std::size_t b = 0; b < L.nBlocks; ++b) {
    const std::size_t c[3] = {b % L.nb1, (b / L.nb1) % L.nb1, b / (std::size_t(L.nb1) * L.nb1)};
    for (int d = 0; d < 3; ++d) {
      m.lo[3 * b + d] = double(c[d]) / L.nb1;  // as a mesh makes a block's corner: coord / blocks per axis
      m.dx[3 * b + d] = h;
    }
    m.slot[b] = int(slotOf(L, b));
  }
  return m;
}

amrgrav_blocks blocksOf(const Layout& L, const Mesh& m, const void* density, bool f32) {
  amrgrav_blocks B;
  amrgrav_default_blocks(&B);
  B.n_blocks = L.nBlocks;
  B.nxb = B.nyb = B.nzb = L.B;
  B.guard[0] = B.guard[1] = B.guard[2] = L.G;
  B.lo = m.lo.data();
  B.dx = m.dx.data();
  B.block_index = m.slot.data();
  B.density = density;
  B.dtype = f32 ? AMRGRAV_FLOAT32 : AMRGRAV_FLOAT64;
  B.var_stride = std::size_t(L.V);
  return B;
}

/// packed results (block order) of a field in the layout
template <class T>
std::vector<double> packed(const Layout& L, const T* field) {
  const std::size_t cpb = std::size_t(L.B) * L.B * L.B;
  std::vector<double> out(L.nBlocks * cpb);
  std::size_t p = 0;
  for (std::size_t b = 0; b < L.nBlocks; ++b)
    for (int k = 0; k < L.B; ++k)
      for (int j = 0; j < L.B; ++j)
        for (int i = 0; i < L.B; ++i) out[p++] = double(field[elementOf(L, slotOf(L, b), i, j, k)]);
  return out;
}

struct Compare {
  std::size_t bitwise = 0, n = 0;
  double maxAbs = 0, maxRel = 0;
};

Compare compare(const std::vector<double>& a, const std::vector<double>& b) {
  Compare c;
  c.n = a.size();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(double)) == 0) ++c.bitwise;
    const double d = std::fabs(a[i] - b[i]);
    c.maxAbs = std::max(c.maxAbs, d);
    if (b[i] != 0) c.maxRel = std::max(c.maxRel, d / std::fabs(b[i]));
  }
  return c;
}

bool report(const char* what, const Compare& c, const char* extra = "") {
  const bool ok = c.bitwise == c.n;
  std::printf("{\"kind\":\"check\",\"check\":\"%s\",\"cells\":%zu,\"bitwise\":%zu,\"maxAbsDiff\":%.3g,"
              "\"maxRelDiff\":%.3g,\"pass\":%s%s}\n",
              what, c.n, c.bitwise, c.maxAbs, c.maxRel, ok ? "true" : "false", extra);
  std::fflush(stdout);
  return ok;
}

void timeLine(const char* what, amrgrav_solver* s, double bestMs, std::size_t cells) {
  amrgrav_stats st;
  amrgrav_get_stats(s, &st);
  std::printf("{\"kind\":\"time\",\"what\":\"%s\",\"cells\":%zu,\"best_ms\":%.3f,\"backend\":%d,\"tree_reused\":%d,"
              "\"stats_ms\":{\"total\":%.3f,\"upload\":%.3f,\"keys\":%.3f,\"build\":%.3f,\"moments\":%.3f,"
              "\"walk\":%.3f,\"download\":%.3f},\"device_bytes_per_cell\":%.2f,\"interactions_per_cell\":%.1f}\n",
              what, cells, bestMs, st.backend, amrgrav_tree_reused(s), st.seconds_total * 1e3, st.seconds_upload * 1e3,
              st.seconds_keys * 1e3, st.seconds_build * 1e3, st.seconds_moments * 1e3, st.seconds_walk * 1e3,
              st.seconds_download * 1e3, st.device_bytes_per_cell, st.interactions_per_cell);
  std::fflush(stdout);
}

/// The potential at k cells spread over the grid against direct summation over every cell (float64, the host's
/// threads, no self term): -G sum_j m_j / r_ij with m_j = rho_j h^3, the cells' centres as the mesh makes them.
bool directCheck(const Layout& L, const Mesh& mesh, const std::vector<char>& rho, const std::vector<char>& pot,
                 bool f32, int k, double G) {
  const std::size_t cpb = std::size_t(L.B) * L.B * L.B, n = L.nBlocks * cpb;
  auto value = [&](const std::vector<char>& f, std::size_t b, int i, int j, int kk) {
    const std::size_t e = elementOf(L, slotOf(L, b), i, j, kk);
    return f32 ? double(reinterpret_cast<const float*>(f.data())[e]) : reinterpret_cast<const double*>(f.data())[e];
  };
  auto centre = [&](std::size_t p, double* x, std::size_t* b, int* ijk) {
    *b = p / cpb;
    const std::size_t c = p % cpb;
    ijk[0] = int(c % L.B);
    ijk[1] = int((c / L.B) % L.B);
    ijk[2] = int(c / (std::size_t(L.B) * L.B));
    for (int d = 0; d < 3; ++d) x[d] = mesh.lo[3 * *b + d] + (ijk[d] + 0.5) * mesh.dx[3 * *b + d];
  };
  std::vector<std::size_t> targets(k);
  for (int t = 0; t < k; ++t) targets[t] = std::size_t((t + 0.37) / k * double(n)) % n;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::vector<double>> part(threads, std::vector<double>(k, 0.0));
  std::vector<std::thread> pool;
  const double t0 = now();
  for (unsigned w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      double tx[64][3];
      for (int t = 0; t < k && t < 64; ++t) {
        std::size_t b;
        int ijk[3];
        centre(targets[t], tx[t], &b, ijk);
      }
      for (std::size_t p = n * w / threads; p < n * (w + 1) / threads; ++p) {
        double x[3];
        std::size_t b;
        int ijk[3];
        centre(p, x, &b, ijk);
        const double* h = &mesh.dx[3 * b];
        const double m = value(rho, b, ijk[0], ijk[1], ijk[2]) * (h[0] * h[1] * h[2]);
        for (int t = 0; t < k && t < 64; ++t) {
          if (p == targets[t]) continue;
          const double dx = x[0] - tx[t][0], dy = x[1] - tx[t][1], dz = x[2] - tx[t][2];
          part[w][t] += m / std::sqrt(dx * dx + dy * dy + dz * dz);
        }
      }
    });
  for (auto& th : pool) th.join();
  double worst = 0;
  for (int t = 0; t < k && t < 64; ++t) {
    double sum = 0;
    for (unsigned w = 0; w < threads; ++w) sum += part[w][t];
    const double ref = -G * sum;
    std::size_t b;
    int ijk[3];
    double x[3];
    centre(targets[t], x, &b, ijk);
    worst = std::max(worst, std::fabs(value(pot, b, ijk[0], ijk[1], ijk[2]) - ref) / std::fabs(ref));
  }
  const bool ok = worst <= 1e-3;
  std::printf("{\"kind\":\"check\",\"check\":\"direct\",\"cells\":%zu,\"targets\":%d,\"maxRelDiff\":%.3g,\"bound\":1e-3,"
              "\"seconds\":%.1f,\"pass\":%s}\n",
              n, std::min(k, 64), worst, now() - t0, ok ? "true" : "false");
  std::fflush(stdout);
  return ok;
}

#define API(call, s)                                                                                          \
  do {                                                                                                        \
    if ((call) != AMRGRAV_OK) {                                                                               \
      std::printf("{\"kind\":\"error\",\"what\":\"%s\",\"message\":\"%s\"}\n", #call, amrgrav_last_error(s)); \
      std::exit(2);                                                                                           \
    }                                                                                                         \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&]() { return i + 1 < argc ? argv[++i] : "0"; };
    if (s == "--grid") a.grid = std::atoi(next());
    else if (s == "--block") a.block = std::atoi(next());
    else if (s == "--guard") a.guard = std::atoi(next());
    else if (s == "--nvar") a.nvar = std::atoi(next());
    else if (s == "--reps") a.reps = std::atoi(next());
    else if (s == "--order") a.order = std::atoi(next());
    else if (s == "--theta") a.theta = std::atof(next());
    else if (s == "--group-size") a.group = std::atoi(next());
    else if (s == "--float32") a.f32 = true;
    else if (s == "--no-check") a.check = false;
    else if (s == "--no-cells") a.cells = false;
    else if (s == "--no-time") a.time = false;
    else if (s == "--only") a.only = next();
    else if (s == "--chunks") a.chunks = std::atoi(next());
    else if (s == "--direct") a.direct = std::atoi(next());
    else if (s == "--pinned") a.pinned = true;
    else if (s == "--method") a.fmm = std::string(next()) == "fmm";
    else {
      std::fprintf(stderr, "unknown argument %s\n", s.c_str());
      return 2;
    }
  }
  if (a.chunks >= 0) setenv("AMRGRAV_CUDA_RESULT_CHUNKS", std::to_string(a.chunks).c_str(), 1);  // before the solvers
  Layout L;
  L.B = a.block;
  L.G = a.guard;
  L.V = a.nvar;
  L.NX = L.B + 2 * L.G;
  L.nb1 = a.grid / a.block;
  L.nBlocks = std::size_t(L.nb1) * L.nb1 * L.nb1;
  L.slots = L.nBlocks;
  const std::size_t n = L.nBlocks * std::size_t(L.B) * L.B * L.B, es = a.f32 ? 4 : 8;
  const Mesh mesh = makeMesh(L);
  std::printf("{\"kind\":\"setup\",\"grid\":%d,\"block\":%d,\"guard\":%d,\"nvar\":%d,\"dtype\":\"%s\",\"cells\":%zu,"
              "\"field_bytes\":%zu,\"theta\":%g,\"order\":%d,\"chunks\":%d,\"group_size\":%d,\"method\":\"%s\"}\n",
              a.grid, a.block, a.guard, a.nvar, a.f32 ? "float32" : "float64", n, L.total() * es, a.theta, a.order,
              a.chunks < 0 ? 0 : a.chunks, a.group, a.fmm ? "fmm" : "tree");
  std::fflush(stdout);

  amrgrav_options o;
  amrgrav_default_options(&o);
  o.backend = AMRGRAV_BACKEND_CUDA;
  o.theta = a.theta;
  o.order = a.order;
  if (a.group > 0) o.group_size = a.group;
  if (a.fmm) o.method = 1;  // the FMM's own defaults (order 7, theta 0.65, tolerances)
  const int keptTree = a.fmm ? 0 : 1;  // what a call on an unchanged mesh reports: the FMM keeps no tree
  o.has_box = 1;
  for (int d = 0; d < 3; ++d) {
    o.box_lo[d] = 0;
    o.box_hi[d] = 1;
  }
  if (a.direct > 0) o.self_potential = 0;  // the direct sums leave each cell's own term out
  const bool wantHost = a.only != "device", wantDevice = a.only != "host";
  if (a.only != "all") a.check = false;
  amrgrav_solver *dev = nullptr, *host = nullptr;
  if (!(amrgrav_features() & 4)) {
    const char* req = std::getenv("AMRGRAV_REQUIRE_GPU");
    const bool required = req && std::strcmp(req, "1") == 0;
    std::printf("{\"kind\":\"error\",\"what\":\"no usable CUDA device (amrgrav_features bit 2)%s\"}\n",
                required ? ": AMRGRAV_REQUIRE_GPU=1, so this fails" : ": skipped");
    return required ? 1 : 2;
  }
  API(amrgrav_create(&o, &dev), nullptr);
  API(amrgrav_create(&o, &host), nullptr);

  // the caller's arrays on the device: density and potential in the same layout; the density made by a kernel
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void *dRho = nullptr, *dPot = nullptr;
  CK(cudaMalloc(&dRho, L.total() * es));
  CK(cudaMalloc(&dPot, L.total() * es));
  CK(cudaMemsetAsync(dRho, 0, L.total() * es, stream));
  CK(cudaMemsetAsync(dPot, 0, L.total() * es, stream));
  auto makeDensity = [&](int step) {
    if (a.f32) densityKernel<float><<<1024, 256, 0, stream>>>(L, static_cast<float*>(dRho), step);
    else densityKernel<double><<<1024, 256, 0, stream>>>(L, static_cast<double*>(dRho), step);
    CK(cudaGetLastError());
  };
  makeDensity(0);  // no synchronisation: the device entry orders itself after the stream's work

  const bool hostArrays = a.check || wantHost;
  std::vector<char> hRho(hostArrays ? L.total() * es : 0), hPot(hostArrays ? L.total() * es : 0, 0),
      dPotHost(a.check ? L.total() * es : 0);
  auto download = [&](std::vector<char>& dst, const void* src) {
    CK(cudaMemcpyAsync(dst.data(), src, dst.size(), cudaMemcpyDeviceToHost, stream));
    CK(cudaStreamSynchronize(stream));
  };
  auto packedOf = [&](const std::vector<char>& f) {
    return a.f32 ? packed(L, reinterpret_cast<const float*>(f.data())) : packed(L, reinterpret_cast<const double*>(f.data()));
  };
  bool allOk = true;
  amrgrav_blocks Bd = blocksOf(L, mesh, dRho, a.f32);
  // best of a.reps calls, ms: the host entry (results into host memory) or the device entry (device memory, stream)
  auto bestMs = [&](amrgrav_solver* s, const amrgrav_blocks& base, bool device, void* pot, bool changed) {
    double b = 1e30;
    for (int r = 0; r < a.reps; ++r) {
      amrgrav_blocks B = base;
      B.mesh_changed = changed ? 1 : 0;
      const double t = now();
      if (device) API(amrgrav_compute_blocks_device(s, &B, pot, nullptr, nullptr, nullptr, stream), s);
      else API(amrgrav_compute_blocks(s, &B, pot, nullptr, nullptr, nullptr), s);
      b = std::min(b, now() - t);
    }
    return b * 1e3;
  };

  if (a.check) {
    // ---- device entry vs host entry on the same densities
    API(amrgrav_compute_blocks_device(dev, &Bd, dPot, nullptr, nullptr, nullptr, stream), dev);
    download(dPotHost, dPot);  // on the caller's stream: after the call's writes
    download(hRho, dRho);
    amrgrav_blocks Bh = blocksOf(L, mesh, hRho.data(), a.f32);
    API(amrgrav_compute_blocks(host, &Bh, hPot.data(), nullptr, nullptr, nullptr), host);
    const std::vector<double> hostRes = packedOf(hPot);
    allOk &= report("device", compare(packedOf(dPotHost), hostRes));
    // ---- host block entry vs the per-cell entry on the same cells (the documented formula), float64 only
    if (a.cells && !a.f32) {
      std::vector<double> x(n), y(n), z(n), m(n), s(n), pot(n);
      const std::vector<double> rho = packed(L, reinterpret_cast<const double*>(hRho.data()));
      const std::size_t cpb = std::size_t(L.B) * L.B * L.B;
      for (std::size_t p = 0; p < n; ++p) {
        const std::size_t b = p / cpb, c = p % cpb;
        const int i = int(c % L.B), j = int((c / L.B) % L.B), k = int(c / (std::size_t(L.B) * L.B));
        const double* lo = &mesh.lo[3 * b];
        const double* h = &mesh.dx[3 * b];
        volatile double t0 = (i + 0.5) * h[0], t1 = (j + 0.5) * h[1], t2 = (k + 0.5) * h[2];
        x[p] = lo[0] + t0;
        y[p] = lo[1] + t1;
        z[p] = lo[2] + t2;
        m[p] = rho[p] * (h[0] * h[1] * h[2]);
        s[p] = h[0];
      }
      amrgrav_solver* cellSolver = nullptr;
      API(amrgrav_create(&o, &cellSolver), nullptr);
      API(amrgrav_compute_potential(cellSolver, n, x.data(), y.data(), z.data(), m.data(), s.data(), pot.data(),
                                    nullptr, nullptr, nullptr),
          cellSolver);
      allOk &= report("cells", compare(hostRes, pot));
      if (a.time) {
        double best = 1e30;
        for (int r = 0; r < a.reps; ++r) {
          const double t = now();
          API(amrgrav_compute_potential(cellSolver, n, x.data(), y.data(), z.data(), m.data(), s.data(), pot.data(),
                                        nullptr, nullptr, nullptr),
              cellSolver);
          best = std::min(best, now() - t);
        }
        timeLine("cells", cellSolver, best * 1e3, n);
      }
      amrgrav_destroy(cellSolver);
    }
    // ---- reuse: new densities on the device, same mesh
    makeDensity(1);
    API(amrgrav_compute_blocks_device(dev, &Bd, dPot, nullptr, nullptr, nullptr, stream), dev);
    const int reused = amrgrav_tree_reused(dev);
    download(dPotHost, dPot);
    download(hRho, dRho);
    amrgrav_solver* fresh = nullptr;
    API(amrgrav_create(&o, &fresh), nullptr);
    amrgrav_blocks Bf = blocksOf(L, mesh, hRho.data(), a.f32);
    API(amrgrav_compute_blocks(fresh, &Bf, hPot.data(), nullptr, nullptr, nullptr), fresh);
    char extra[64];
    std::snprintf(extra, sizeof extra, ",\"tree_reused\":%d", reused);
    allOk &= report("reuse", compare(packedOf(dPotHost), packedOf(hPot)), extra) && reused == keptTree;
    amrgrav_destroy(fresh);

    // ---- the kept tree across both entries on one solver, potential alone and with accelerations: a kept tree
    //      makes again only the sorted positions the last call's finish wrote over (host entry: the results'
    //      slots; device entry: none, its results go straight into the caller's arrays), so every order of calls
    //      must give a fresh solver's host block entry bitwise (new densities each call)
    for (int acc = 0; acc < 2; ++acc) {
      amrgrav_options oa = o;
      oa.accelerations = acc;
      const int nout = acc ? 4 : 1;
      void* dOut[4] = {dPot, nullptr, nullptr, nullptr};
      for (int k = 1; k < nout; ++k) CK(cudaMalloc(&dOut[k], L.total() * es));
      std::vector<std::vector<char>> got(nout, std::vector<char>(L.total() * es, 0)),
          want(nout, std::vector<char>(L.total() * es, 0));
      auto hostPtrs = [&](std::vector<std::vector<char>>& v, void* p[4]) {
        for (int k = 0; k < 4; ++k) p[k] = k < nout ? v[k].data() : nullptr;
      };
      amrgrav_solver* s = nullptr;
      API(amrgrav_create(&oa, &s), nullptr);
      const char* entries[5] = {"device", "host", "device", "device", "host"};
      for (int step = 0; step < 5; ++step) {
        makeDensity(2 + step);
        download(hRho, dRho);
        amrgrav_blocks Bh = blocksOf(L, mesh, hRho.data(), a.f32);
        void* hp[4];
        if (entries[step][0] == 'd') {
          API(amrgrav_compute_blocks_device(s, &Bd, dOut[0], dOut[1], dOut[2], dOut[3], stream), s);
          for (int k = 0; k < nout; ++k) download(got[k], dOut[k]);
        } else {
          hostPtrs(got, hp);
          API(amrgrav_compute_blocks(s, &Bh, hp[0], hp[1], hp[2], hp[3]), s);
        }
        const int kept = amrgrav_tree_reused(s);
        amrgrav_solver* f = nullptr;
        API(amrgrav_create(&oa, &f), nullptr);
        hostPtrs(want, hp);
        API(amrgrav_compute_blocks(f, &Bh, hp[0], hp[1], hp[2], hp[3]), f);
        amrgrav_destroy(f);
        std::vector<double> g, w;
        for (int k = 0; k < nout; ++k) {
          const std::vector<double> gk = packedOf(got[k]), wk = packedOf(want[k]);
          g.insert(g.end(), gk.begin(), gk.end());
          w.insert(w.end(), wk.begin(), wk.end());
        }
        char name[64], more[64];
        std::snprintf(name, sizeof name, "kept-%s-%d-%s", acc ? "acc" : "pot", step, entries[step]);
        std::snprintf(more, sizeof more, ",\"tree_reused\":%d", kept);
        allOk &= report(name, compare(g, w), more) && kept == (step > 0 ? keptTree : 0);
      }
      amrgrav_destroy(s);
      for (int k = 1; k < nout; ++k) CK(cudaFree(dOut[k]));
    }
  }

  if (a.time) {
    if (hostArrays) download(hRho, dRho);
    if (!wantDevice) {  // the host entry alone: the device's memory for the solver
      CK(cudaFree(dRho));
      CK(cudaFree(dPot));
      dRho = dPot = nullptr;
    }
    amrgrav_blocks Bh = blocksOf(L, mesh, hRho.data(), a.f32);
    auto best = [&](amrgrav_solver* s, bool device, bool changed) {
      return bestMs(s, device ? Bd : Bh, device, device ? dPot : static_cast<void*>(hPot.data()), changed);
    };
    if (wantHost) {
      timeLine("host-new", host, best(host, false, true), n);
      timeLine("host-unchanged", host, best(host, false, false), n);
      if (a.direct > 0) allOk &= directCheck(L, mesh, hRho, hPot, a.f32, a.direct, o.G);
      amrgrav_destroy(host);  // its device memory back before the device entry's solver grows
      host = nullptr;
    }
    if (wantDevice) {
      timeLine("device-new", dev, best(dev, true, true), n);
      timeLine("device-unchanged", dev, best(dev, true, false), n);
    }
  }
  if (a.pinned && wantHost) {
    // the caller's density page-locked in place; references from fresh solvers on a pageable copy
    if (hRho.empty()) {
      hRho.resize(L.total() * es);
      hPot.assign(L.total() * es, 0);
    }
    if (dRho) download(hRho, dRho);
    std::vector<char> pageRho(hRho), pinPot(hPot.size(), 0);
    CK(cudaHostRegister(hRho.data(), hRho.size(), cudaHostRegisterDefault));
    amrgrav_blocks Bp = blocksOf(L, mesh, hRho.data(), a.f32), Bq = blocksOf(L, mesh, pageRho.data(), a.f32);
    amrgrav_solver* ps = nullptr;
    API(amrgrav_create(&o, &ps), nullptr);
    auto against = [&](const char* name, int wantKept) {
      API(amrgrav_compute_blocks(ps, &Bp, pinPot.data(), nullptr, nullptr, nullptr), ps);
      const int kept = amrgrav_tree_reused(ps);
      amrgrav_solver* f = nullptr;
      API(amrgrav_create(&o, &f), nullptr);
      API(amrgrav_compute_blocks(f, &Bq, hPot.data(), nullptr, nullptr, nullptr), f);
      amrgrav_destroy(f);
      char more[64];
      std::snprintf(more, sizeof more, ",\"tree_reused\":%d", kept);
      allOk &= report(name, compare(packedOf(pinPot), packedOf(hPot)), more) && kept == wantKept;
    };
    against("pinned-new", 0);
    // new densities in both copies (x 1.5 + 0.25), the same mesh: the kept tree reads the page-locked array
    const std::size_t total = L.total();
    for (std::size_t e = 0; e < total; ++e) {
      if (a.f32) {
        float* r = reinterpret_cast<float*>(hRho.data());
        r[e] = r[e] * 1.5f + 0.25f;
      } else {
        double* r = reinterpret_cast<double*>(hRho.data());
        r[e] = r[e] * 1.5 + 0.25;
      }
    }
    std::memcpy(pageRho.data(), hRho.data(), hRho.size());
    against("pinned-unchanged", keptTree);
    if (a.time) {
      timeLine("pinned-new", ps, bestMs(ps, Bp, false, pinPot.data(), true), n);
      timeLine("pinned-unchanged", ps, bestMs(ps, Bp, false, pinPot.data(), false), n);
    }
    amrgrav_destroy(ps);
    CK(cudaHostUnregister(hRho.data()));
  }
  amrgrav_destroy(dev);
  amrgrav_destroy(host);
  if (dRho) CK(cudaFree(dRho));
  if (dPot) CK(cudaFree(dPot));
  CK(cudaStreamDestroy(stream));
  std::printf("{\"kind\":\"summary\",\"pass\":%s}\n", allOk ? "true" : "false");
  return allOk ? 0 : 1;
}
