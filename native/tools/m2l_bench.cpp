/// \file m2l_bench.cpp
/// \brief amrgrav_m2l_bench: the FMM's M2L kernels on the device (cuda/m2l_variants.h, CudaOptions::fmmM2L) on a
/// synthetic workload like a uniform grid's leaf level: target nodes on an n^3 lattice (spacing 1, centres jittered
/// by up to 0.2 as centres of mass are), numbered in Morton order as the tree numbers a level, each with the lattice
/// nodes at squared offsets 7..14 as sources (170 inside, fewer at the faces: ~150 a node at n 64, 2.6-3.7 spacings
/// away, as theta 0.65 accepts leaf pairs), random multipoles (M_0 in [0.5, 1.5], |M_q| < 0.3^|q|; no dipole terms
/// unless --dip, which also runs the kernels with the dipole terms). Each variant is launched through the library's
/// launchFmmM2L (cuda/kernels_fmm.h), timed with cudaEvents (best of --reps), and its L compared with the plain
/// kernel's: per term, max |dL| / max |L| over the nodes, the largest over the terms, and whether every bit agrees.
/// --tree N: instead, the CPU backend's FMM tree and M2L lists of a uniform N^3 grid of random densities (p 7 unless
/// --orders; the lists method 'fmm' evaluates, built on the host's threads: 256^3 takes a few seconds).
/// --mma: instead, the tensor-core M2L of lattice nodes (cuda/kernels_m2l_mma.h; issue #20's study) against the
/// plain and direct kernels on the same pairs: the lattice with centres on it (no jitter) and dipole terms, or with
/// --tree N the CPU backend's tree with geometric centres and its same-level M2L pairs, level by level (tiles of 8 and
/// 16 targets in node order and in fmm::m2lMmaChildOrder, each with the offsets' pieces read whole and gathered from
/// their derivatives; the slots a pair and the offsets printed). Its L is compared with the plain kernel's.
/// A benchmark, not a test. Usage: amrgrav_m2l_bench [--n 64 | --tree N] [--orders 7,6,5,4,3] [--reps 7] [--dip]
/// [--mma] [--seed 1]
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "cuda/kernels_fmm.h"
#include "cuda/kernels_m2l_mma.h"
#include "fmm/interaction_lists.h"
#include "fmm/m2l_mma.h"
#include "fmm/terms_k.h"
#include "fmm/simd.h"  // before m2l_kernels.h: its templates name bc and vsqrt
#include "fmm/m2l_kernels.h"
#include "tools/fmm_host_tree.h"
#include "tools/parity/harness.h"

namespace {

using amrgrav::Status;
using amrgrav::cuda::FmmDeviceView;

#define BENCH_CUDA(call)                                                                           \
  do {                                                                                             \
    const cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

int termsOf(int p) { return (p + 1) * (p + 2) * (p + 3) / 6; }

std::uint64_t spread3(std::uint64_t v) {  // bits of v at every third place
  std::uint64_t r = 0;
  for (int b = 0; b < 21; ++b) r |= ((v >> b) & 1u) << (3 * b);
  return r;
}

struct Workload {
  int n = 0;
  std::vector<double> centre;  // 3 per node, Morton order
  std::vector<int> lattice;    // 3 per node: its integer coordinates
  std::vector<std::uint32_t> start, source;
};

/// jitter: the centres' largest displacement from the lattice (0.2: as centres of mass; 0: geometric centres).
Workload makeWorkload(int n, std::uint64_t seed, double jitterMax = 0.2) {
  Workload w;
  w.n = n;
  const std::size_t nodes = std::size_t(n) * n * n;
  std::vector<std::uint32_t> rank(nodes);  // lattice index -> node (Morton rank)
  {
    std::vector<std::pair<std::uint64_t, std::uint32_t>> keys(nodes);
    for (std::size_t i = 0; i < nodes; ++i) {
      const std::uint64_t x = i % n, y = i / n % n, z = i / (std::size_t(n) * n);
      keys[i] = {spread3(x) | spread3(y) << 1 | spread3(z) << 2, std::uint32_t(i)};
    }
    std::sort(keys.begin(), keys.end());
    for (std::size_t r = 0; r < nodes; ++r) rank[keys[r].second] = std::uint32_t(r);
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(-jitterMax, jitterMax);
  w.centre.resize(3 * nodes);
  std::vector<int> lat(3 * nodes);
  for (std::size_t i = 0; i < nodes; ++i) {
    const int c[3] = {int(i % n), int(i / n % n), int(i / (std::size_t(n) * n))};
    for (int d = 0; d < 3; ++d) {
      w.centre[3 * rank[i] + d] = c[d] + (jitterMax > 0 ? jitter(rng) : 0.0);
      lat[3 * rank[i] + d] = c[d];
    }
  }
  std::vector<std::array<int, 3>> offsets;
  for (int a = -4; a <= 4; ++a)
    for (int b = -4; b <= 4; ++b)
      for (int c = -4; c <= 4; ++c) {
        const int r2 = a * a + b * b + c * c;
        if (r2 >= 7 && r2 <= 14) offsets.push_back({a, b, c});
      }
  w.lattice = lat;
  w.start.assign(nodes + 1, 0);
  w.source.reserve(nodes * offsets.size());
  for (std::size_t A = 0; A < nodes; ++A) {
    for (const auto& o : offsets) {
      const int x = lat[3 * A] + o[0], y = lat[3 * A + 1] + o[1], z = lat[3 * A + 2] + o[2];
      if (x < 0 || y < 0 || z < 0 || x >= n || y >= n || z >= n) continue;
      w.source.push_back(rank[std::size_t(x) + std::size_t(n) * (std::size_t(y) + std::size_t(n) * z)]);
    }
    std::sort(w.source.begin() + w.start[A], w.source.end());  // the lists' canonical order
    w.start[A + 1] = std::uint32_t(w.source.size());
  }
  return w;
}

/// Random multipoles of order p (stride: terms rounded up to 8, as fmm/fmm_tree.h), dipoles zero unless dip.
std::vector<double> makeMultipoles(std::size_t nodes, int p, int stride, bool dip, std::uint64_t seed) {
  std::vector<int> degree;
  for (int d = 0; d <= p; ++d)
    for (int k = 0; k < (d + 1) * (d + 2) / 2; ++k) degree.push_back(d);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> M(nodes * stride, 0.0);
  for (std::size_t i = 0; i < nodes; ++i)
    for (int q = 0; q < termsOf(p); ++q) {
      const int d = degree[q];
      M[i * stride + q] = d == 0 ? 1.0 + 0.5 * u(rng) : (d == 1 && !dip) ? 0.0 : u(rng) * std::pow(0.3, d);
    }
  return M;
}

template <class T> T* upload(const std::vector<T>& h) {
  T* d = nullptr;
  BENCH_CUDA(cudaMalloc(&d, h.size() * sizeof(T)));
  BENCH_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

struct Run {
  double bestMs = 0;
  std::vector<double> L;
};

Run runVariant(FmmDeviceView v, int variant, int reps, cudaStream_t s) {
  v.m2lVariant = variant;
  const std::size_t bytes = std::size_t(v.nodes) * v.terms * sizeof(double);
  cudaEvent_t e0, e1;
  BENCH_CUDA(cudaEventCreate(&e0));
  BENCH_CUDA(cudaEventCreate(&e1));
  Run r;
  r.bestMs = 1e30;
  for (int i = 0; i <= reps; ++i) {  // the first launch warms up (attributes, caches) and is not timed
    BENCH_CUDA(cudaMemsetAsync(v.L, 0, bytes, s));
    BENCH_CUDA(cudaEventRecord(e0, s));
    const Status st = amrgrav::cuda::launchFmmM2L(v, s);
    BENCH_CUDA(cudaEventRecord(e1, s));
    if (!st.ok()) {
      std::fprintf(stderr, "launchFmmM2L (%s): %s\n", amrgrav::cuda::fmmM2LVariantName(variant), st.message.c_str());
      std::exit(1);
    }
    BENCH_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    if (i > 0) r.bestMs = std::min(r.bestMs, double(ms));
  }
  BENCH_CUDA(cudaGetLastError());
  r.L.resize(std::size_t(v.nodes) * v.terms);
  BENCH_CUDA(cudaMemcpy(r.L.data(), v.L, bytes, cudaMemcpyDeviceToHost));
  BENCH_CUDA(cudaEventDestroy(e0));
  BENCH_CUDA(cudaEventDestroy(e1));
  return r;
}

/// Per term k: max_A |got - ref| / max_A |ref|; the largest over k. bitwise: every value the same bits.
double maxRelDiff(const std::vector<double>& ref, const std::vector<double>& got, int terms, bool& bitwise) {
  bitwise = std::memcmp(ref.data(), got.data(), ref.size() * sizeof(double)) == 0;
  double worst = 0;
  const std::size_t nodes = ref.size() / terms;
  for (int k = 0; k < terms; ++k) {
    double d = 0, m = 0;
    for (std::size_t A = 0; A < nodes; ++A) {
      const double a = ref[A * terms + k], b = got[A * terms + k];
      if (!std::isfinite(b)) return INFINITY;
      d = std::max(d, std::fabs(a - b));
      m = std::max(m, std::fabs(a));
    }
    if (m > 0) worst = std::max(worst, d / m);
    else if (d > 0) return INFINITY;
  }
  return worst;
}

/// One order's workload on the host: centres (3 per node), the M2L lists (CSR by target), multipoles.
struct Problem {
  int order = 0, terms = 0, stride = 0;
  bool dipoles = false;
  std::vector<double> centre, M;
  std::vector<std::uint32_t> start, source;
  // --mma: each node's integer coordinates on its level's lattice, and the levels (node ranges, spacing)
  std::vector<int> lattice;
  struct Level {
    std::size_t begin = 0, end = 0;
    double h = 1;
  };
  std::vector<Level> levels;
};

/// The real thing: the CPU backend's FMM tree and lists of a uniform n^3 grid of random densities (the GPU parity's
/// randomDensityGrid) at order p with the library's defaults (theta 0.65, tolerance 2e-4, potentials: the lists
/// method 'fmm' evaluates at 256^3 without accelerations), built on every host thread.
Problem treeProblem(int n, int p, std::uint64_t seed, bool geometric = false) {
  const amrgrav::parity::Cells cells = amrgrav::parity::randomDensityGrid(n, seed);
  amrgrav::SolveOptions o;
  o.method = amrgrav::SolveMethod::Fmm;
  o.fmmOrder = p;
  o.accelerations = false;
  const int threads = amrgrav::resolveThreadCount(0);
  amrgrav::tools::HostFmmTree t = amrgrav::tools::hostFmmTree(cells, o, false, threads);
  if (!t.status.ok()) {
    std::fprintf(stderr, "the host's FMM tree: %s\n", t.status.message.c_str());
    std::exit(1);
  }
  amrgrav::fmm::FmmLists lists;
  amrgrav::fmm::buildInteractionLists(t.tree, o.fmmTolerance, threads, lists);
  Problem pr;
  pr.order = t.tree.order;
  pr.terms = t.tree.terms;
  pr.stride = t.tree.mStride;
  pr.dipoles = t.tree.dipoles;
  pr.centre = std::move(t.tree.centre);
  pr.M = std::move(t.tree.M);
  pr.start = std::move(lists.m2lStart);
  pr.source = std::move(lists.m2lSource);
  if (geometric) {  // --mma: the cube centres, and only the pairs of one level (the lattice's pairs)
    const amrgrav::Octree& topo = t.tree.topo;
    const std::size_t nodes = topo.nodeCount();
    pr.centre = topo.centre;
    pr.dipoles = true;
    pr.lattice.resize(3 * nodes);
    for (std::size_t i = 0; i < nodes; ++i) {  // from the root node's corner, in the tree's lengths
      const double h = topo.side(i);
      for (int d = 0; d < 3; ++d) {
        const double corner = topo.centre[d] - 0.5 * topo.side(0);
        pr.lattice[3 * i + d] = int(std::llround((topo.centre[3 * i + d] - corner) / h - 0.5));
      }
    }
    std::vector<std::uint32_t> start(nodes + 1, 0), source;
    std::size_t dropped = 0;
    for (std::size_t A = 0; A < nodes; ++A) {
      for (std::uint32_t q = pr.start[A]; q < pr.start[A + 1]; ++q)
        if (topo.level[pr.source[q]] == topo.level[A]) source.push_back(pr.source[q]);
        else ++dropped;
      start[A + 1] = std::uint32_t(source.size());
    }
    std::printf("the tree's M2L pairs: %zu, of one level %zu (%.2f%%)\n", pr.source.size(), source.size(),
                100.0 * double(source.size()) / double(std::max<std::size_t>(pr.source.size(), 1)));
    pr.start = std::move(start);
    pr.source = std::move(source);
    for (std::size_t l = 0; l + 1 < t.tree.levelBegin.size(); ++l)
      if (t.tree.levelBegin[l + 1] > t.tree.levelBegin[l])
        pr.levels.push_back({t.tree.levelBegin[l], t.tree.levelBegin[l + 1], topo.side(t.tree.levelBegin[l])});
  }
  return pr;
}

void derivativesOf(int p, double x, double y, double z, double* D) {
  switch (p) {
    case 3: amrgrav::fmm::derivatives3(x, y, z, D); break;
    case 4: amrgrav::fmm::derivatives4(x, y, z, D); break;
    case 5: amrgrav::fmm::derivatives5(x, y, z, D); break;
    case 6: amrgrav::fmm::derivatives6(x, y, z, D); break;
    default: amrgrav::fmm::derivatives7(x, y, z, D); break;
  }
}

std::vector<int> parseOrders(const char* s) {
  std::vector<int> out;
  for (const char* c = s; *c; ++c)
    if (*c >= '3' && *c <= '7') out.push_back(*c - '0');
  return out;
}

}  // namespace

/// The tensor-core M2L (tiles of 8 x columnTiles targets, level by level) on the problem's device arrays: best of
/// reps (all levels' launches timed together), its L compared with `plain`'s; one line.
bool benchMma(const Problem& pr, FmmDeviceView v, int columnTiles, bool childOrder, bool gather, const Run& plain,
              int reps, cudaStream_t s) {
  struct LevelTiles {
    amrgrav::cuda::M2lMmaView view;
    std::vector<void*> owned;
  };
  std::vector<LevelTiles> levels;
  std::size_t slots = 0, pairs = 0, offsets = 0;
  for (const Problem::Level& lv : pr.levels) {
    std::vector<std::uint32_t> targets;
    if (childOrder) targets = amrgrav::fmm::m2lMmaChildOrder(lv.begin, lv.end);
    else
      for (std::size_t i = lv.begin; i < lv.end; ++i) targets.push_back(std::uint32_t(i));
    const amrgrav::fmm::M2lMmaTiles t = amrgrav::fmm::buildM2lMmaTiles(
        targets.data(), targets.size(), pr.start.data(), pr.source.data(), pr.lattice.data(), columnTiles);
    if (t.offset.empty()) continue;
    slots += t.slots();
    pairs += t.pairs;
    offsets += t.offsets.size();
    std::vector<double> D(t.offsets.size() * pr.terms);
    for (std::size_t o = 0; o < t.offsets.size(); ++o)  // R = target - source = -h o
      derivativesOf(pr.order, -lv.h * t.offsets[o][0], -lv.h * t.offsets[o][1], -lv.h * t.offsets[o][2],
                    &D[o * pr.terms]);
    LevelTiles lt;
    amrgrav::cuda::M2lMmaView& m = lt.view;
    m.order = pr.order;
    m.terms = pr.terms;
    m.mStride = pr.stride;
    m.columnTiles = columnTiles;
    m.tiles = unsigned(t.start.size() - 1);
    m.start = upload(t.start);
    m.offset = upload(t.offset);
    m.source = upload(t.source);
    m.target = upload(t.target);
    if (gather) {
      m.D = upload(D);
      m.index = upload(amrgrav::fmm::m2lMmaIndexOf(pr.order));
    } else {
      m.pieces = upload(amrgrav::fmm::m2lMmaPiecesOf(pr.order, D.data(), t.offsets.size()));
    }
    m.M = v.M;
    m.L = v.L;
    lt.owned = {(void*)m.start, (void*)m.offset, (void*)m.source, (void*)m.target, (void*)m.pieces, (void*)m.D,
                (void*)m.index};
    levels.push_back(std::move(lt));
  }
  const std::size_t bytes = std::size_t(v.nodes) * v.terms * sizeof(double);
  cudaEvent_t e0, e1;
  BENCH_CUDA(cudaEventCreate(&e0));
  BENCH_CUDA(cudaEventCreate(&e1));
  double best = 1e30;
  for (int i = 0; i <= reps; ++i) {
    BENCH_CUDA(cudaMemsetAsync(v.L, 0, bytes, s));
    BENCH_CUDA(cudaEventRecord(e0, s));
    for (const LevelTiles& lt : levels) {
      const Status st = amrgrav::cuda::launchM2lMma(lt.view, s);
      if (!st.ok()) {
        std::fprintf(stderr, "launchM2lMma: %s\n", st.message.c_str());
        std::exit(1);
      }
    }
    BENCH_CUDA(cudaEventRecord(e1, s));
    BENCH_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    if (i > 0) best = std::min(best, double(ms));
  }
  BENCH_CUDA(cudaGetLastError());
  std::vector<double> L(std::size_t(v.nodes) * v.terms);
  BENCH_CUDA(cudaMemcpy(L.data(), v.L, bytes, cudaMemcpyDeviceToHost));
  bool bitwise = false;
  const double diff = maxRelDiff(plain.L, L, pr.terms, bitwise);
  const bool ok = diff <= 1e-13 && pairs == pr.source.size();
  const std::string name = std::string(columnTiles == 1 ? "mma-tiles8" : "mma-tiles16") + (childOrder ? "-child" : "") +
                           (gather ? "-gather" : "");
  std::printf("  %-24s %2d %4s %10.3f %9.4f %8.2f %12.2e %8s  (tiles of %d: %.2f slots a pair, %zu offsets%s)\n",
              name.c_str(), pr.order, "yes", best,
              best * 1e6 / double(pr.source.size()), plain.bestMs / best, diff, bitwise ? "yes" : "no", 8 * columnTiles,
              double(slots) / double(std::max<std::size_t>(pairs, 1)), offsets,
              pairs == pr.source.size() ? "" : ", PAIRS MISSING");
  std::fflush(stdout);
  for (LevelTiles& lt : levels)
    for (void* p : lt.owned)
      if (p) BENCH_CUDA(cudaFree(p));
  BENCH_CUDA(cudaEventDestroy(e0));
  BENCH_CUDA(cudaEventDestroy(e1));
  return ok;
}

/// Times every variant on one problem and prints a line each; false if one differs from the plain kernel's L. With
/// mma: the tensor-core M2L too, in tiles of 8 and 16.
bool benchProblem(const Problem& pr, const char* what, int reps, cudaStream_t s, bool mma = false) {
  const std::size_t nodes = pr.start.size() - 1, pairs = pr.source.size();
  double* centre = upload(pr.centre);
  std::uint32_t* start = upload(pr.start);
  std::uint32_t* source = upload(pr.source);
  double* M = upload(pr.M);
  double *L = nullptr, *Mh = nullptr;
  BENCH_CUDA(cudaMalloc(&L, nodes * pr.terms * sizeof(double)));
  BENCH_CUDA(cudaMalloc(&Mh, nodes * amrgrav::fmm::harmonicStrideOf(pr.order) * sizeof(double)));
  FmmDeviceView v;
  v.order = pr.order;
  v.terms = pr.terms;
  v.mStride = pr.stride;
  v.nodes = unsigned(nodes);
  v.centre = centre;
  v.M = M;
  v.Mh = Mh;  // the harmonic variant's fold room
  v.L = L;
  v.m2lStart = start;
  v.m2lSource = source;
  v.dipoles = pr.dipoles;
  std::printf("%s, p %d%s: %zu target nodes, %zu M2L pairs (%.1f a node)\n", what, pr.order,
              pr.dipoles ? " with dipole terms" : "", nodes, pairs, double(pairs) / double(nodes));
  bool ok = true;
  const Run plain = runVariant(v, amrgrav::cuda::kFmmM2LPlain, reps, s);
  for (int var = 0; var < amrgrav::cuda::kFmmM2LVariants; ++var) {
    const Run r = var == 0 ? plain : runVariant(v, var, reps, s);
    bool bitwise = false;
    const double diff = maxRelDiff(plain.L, r.L, pr.terms, bitwise);
    ok = ok && diff <= 1e-13;
    std::printf("  %-24s %2d %4s %10.3f %9.4f %8.2f %12.2e %8s\n", amrgrav::cuda::fmmM2LVariantName(var), pr.order,
                pr.dipoles ? "yes" : "no", r.bestMs, r.bestMs * 1e6 / double(pairs), plain.bestMs / r.bestMs, diff,
                bitwise ? "yes" : "no");
    std::fflush(stdout);
  }
  if (mma)
    for (const bool gather : {false, true})
      for (const bool childOrder : {false, true})
        for (const int columnTiles : {1, 2})
          ok = benchMma(pr, v, columnTiles, childOrder, gather, plain, reps, s) && ok;
  BENCH_CUDA(cudaFree(centre));
  BENCH_CUDA(cudaFree(start));
  BENCH_CUDA(cudaFree(source));
  BENCH_CUDA(cudaFree(M));
  BENCH_CUDA(cudaFree(L));
  BENCH_CUDA(cudaFree(Mh));
  return ok;
}

int main(int argc, char** argv) {
  int n = 64, reps = 7, tree = 0;
  bool dip = false, ordersGiven = false, mma = false;
  std::uint64_t seed = 1;
  std::vector<int> orders = {7, 6, 5, 4, 3};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) n = std::atoi(argv[++i]);
    else if (a == "--tree" && i + 1 < argc) tree = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--orders" && i + 1 < argc) orders = parseOrders(argv[++i]), ordersGiven = true;
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--dip") dip = true;
    else if (a == "--mma") mma = true;
    else {
      std::fprintf(stderr, "usage: %s [--n 64 | --tree N] [--orders 7,6,5,4,3] [--reps 7] [--dip] [--mma] [--seed 1]\n",
                   argv[0]);
      return 2;
    }
  }
  if (tree > 0 && !ordersGiven) orders = {7};
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 2;
  }
  cudaDeviceProp prop;
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s; best of %d launches; per variant: ms, ns a pair, speedup over plain, max |dL| / max |L| "
              "per term against plain, bitwise equal\n", prop.name, reps);
  cudaStream_t s;
  BENCH_CUDA(cudaStreamCreate(&s));
  bool ok = true;
  if (tree > 0) {
    for (const int p : orders) {
      const Problem pr = treeProblem(tree, p, seed, mma);
      ok = benchProblem(pr, ("the FMM tree of a random " + std::to_string(tree) + "^3 grid" +
                             (mma ? " (geometric centres, one level's pairs)" : "")).c_str(), reps, s, mma) && ok;
    }
  } else {
    const Workload w = makeWorkload(n, seed, mma ? 0.0 : 0.2);
    const std::vector<bool> dips = mma ? std::vector<bool>{true} : dip ? std::vector<bool>{false, true}
                                                                     : std::vector<bool>{false};
    for (const bool withDip : dips) {
      for (const int p : orders) {
        Problem pr;
        pr.order = p;
        pr.terms = termsOf(p);
        pr.stride = (pr.terms + 7) / 8 * 8;
        pr.dipoles = withDip;
        pr.centre = w.centre;
        pr.start = w.start;
        pr.source = w.source;
        pr.M = makeMultipoles(pr.start.size() - 1, p, pr.stride, withDip, seed + 7 * p);
        if (mma) {
          pr.lattice = w.lattice;
          pr.levels = {{0, pr.start.size() - 1, 1.0}};
        }
        const std::string what = "a " + std::to_string(n) + "^3 lattice of nodes" + (mma ? " on the lattice" : "");
        ok = benchProblem(pr, what.c_str(), reps, s, mma) && ok;
      }
    }
  }
  BENCH_CUDA(cudaStreamDestroy(s));
  std::printf(ok ? "every variant = the plain kernel's L within 1e-13 per term\n"
                 : "FAIL: a variant's L differs from the plain kernel's by more than 1e-13 per term\n");
  return ok ? 0 : 1;
}
