/// \file harness.cpp
/// \brief The checks' shared harness (harness.h): problems, comparisons, the report, the shared context.
#include "tools/parity/harness.h"
#include "core/thread_pool.h"
#include "tools/fmm_host_tree.h"
#include "tools/plummer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

namespace amrgrav::parity {

namespace {

struct Cluster {
  double x, y, z, a, mass;
};

double clusterDensity(const std::vector<Cluster>& cl, double bg, double px, double py, double pz) {
  double rho = bg;
  for (const Cluster& c : cl) {
    const double r2 = ((px - c.x) * (px - c.x) + (py - c.y) * (py - c.y) + (pz - c.z) * (pz - c.z)) / (c.a * c.a);
    rho += c.mass * 3 / (4 * M_PI * c.a * c.a * c.a) * std::pow(1 + r2, -2.5);  // Plummer
  }
  return rho;
}

/// Leaves of an octree-refined mesh on [0, L)^3 (base 8^3, up to `maxLevel` refinements): a cell is refined while
/// its estimated mass exceeds `threshold`. Returns the cell count only when out is null.
std::size_t refineMesh(const std::vector<Cluster>& cl, double bg, double L, int maxLevel, double threshold,
                       Cells* out, std::mt19937_64* rng, double masslessBelowX) {
  struct Item { int level; std::uint32_t ix, iy, iz; };
  std::vector<Item> stack;
  const int base = 8;
  for (std::uint32_t iz = 0; iz < base; ++iz)
    for (std::uint32_t iy = 0; iy < base; ++iy)
      for (std::uint32_t ix = 0; ix < base; ++ix) stack.push_back({0, ix, iy, iz});
  std::size_t count = 0;
  std::uniform_real_distribution<double> u(0.9, 1.1);
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const double h = L / (base * double(1u << it.level));
    const double px = (it.ix + 0.5) * h, py = (it.iy + 0.5) * h, pz = (it.iz + 0.5) * h;
    const double rho = clusterDensity(cl, bg, px, py, pz);
    if (it.level < maxLevel && rho * h * h * h > threshold) {
      for (std::uint32_t o = 0; o < 8; ++o)
        stack.push_back({it.level + 1, 2 * it.ix + (o & 1), 2 * it.iy + ((o >> 1) & 1), 2 * it.iz + (o >> 2)});
      continue;
    }
    ++count;
    if (out) out->push(px, py, pz, px < masslessBelowX ? 0.0 : rho * h * h * h * u(*rng), h);
  }
  return count;
}

const char* macName(MacKind m) { return m == MacKind::Bonsai ? "bonsai" : "barnes"; }

const char* selfName(SelfPotential s) {
  return s == SelfPotential::Cube ? "cube" : s == SelfPotential::Lattice ? "lattice" : "none";
}

}  // namespace

/// Uniform n^3 grid on [0, L)^3 with a smooth density (a sinusoidal mode plus an off-centre Gaussian clump).
Cells uniformGrid(int n, double L, double rho0) {
  Cells c;
  const double h = L / n;
  const std::size_t total = std::size_t(n) * n * n;
  c.x.reserve(total); c.y.reserve(total); c.z.reserve(total); c.m.reserve(total); c.h.reserve(total);
  const double k = 2 * M_PI / L;
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < n; ++ix) {
        const double px = (ix + 0.5) * h, py = (iy + 0.5) * h, pz = (iz + 0.5) * h;
        const double dx = px - 0.62 * L, dy = py - 0.41 * L, dz = pz - 0.55 * L;
        const double rho = rho0 * (1 + 0.5 * std::sin(k * px) * std::sin(k * py) * std::sin(k * pz) +
                                   8 * std::exp(-(dx * dx + dy * dy + dz * dz) / (0.01 * L * L)));
        c.push(px, py, pz, rho * h * h * h, h);
      }
  return c;
}

Cells randomDensityGrid(int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> f(0.5, 1.5);
  const double h = kKpc / n;
  Cells c;
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < n; ++ix)
        c.push((ix + 0.5) * h, (iy + 0.5) * h, (iz + 0.5) * h, 1e-24 * h * h * h * f(rng), h);
  return c;
}

/// Uniform n^3 grid on [0, L)^3 of density rho0 (1 + A sin(k.x) along the diagonal): a small perturbation that
/// only the density contrast resolves (issue #21).
Cells perturbedGrid(int n, double L, double rho0, double A) {
  Cells c;
  const double h = L / n, k = 2 * M_PI / L;
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < n; ++ix) {
        const double px = (ix + 0.5) * h, py = (iy + 0.5) * h, pz = (iz + 0.5) * h;
        c.push(px, py, pz, rho0 * (1 + A * std::sin(k * (px + py + pz))) * h * h * h, h);
      }
  return c;
}

/// Nested refinement around a point from level `coarsest` (cell side 2^-coarsest of the unit box) to `finest`: at
/// each level a cube of 6^3 cells less the 3^3 cells the next level refines (offset 1 or 2 cells inward, whichever
/// keeps the point nearer the middle, so no leaf touches one two levels finer), the finest level filled. A 2:1
/// balanced, non-overlapping mesh refined on a collapsing core; density ~ 1/r^2, so the deep cells matter.
Cells deepNest(int coarsest, int finest) {
  Cells c;
  const double p[3] = {0.45, 0.55, 0.6};
  long a[3];
  for (int d = 0; d < 3; ++d) a[d] = std::lround(std::ldexp(p[d], coarsest) - 3);
  for (int L = coarsest; L <= finest; ++L) {
    const double h = std::ldexp(1.0, -L);
    int o[3];
    for (int d = 0; d < 3; ++d) o[d] = std::fabs((a[d] + 2.5) * h - p[d]) <= std::fabs((a[d] + 3.5) * h - p[d]) ? 1 : 2;
    for (int k = 0; k < 6; ++k)
      for (int j = 0; j < 6; ++j)
        for (int i = 0; i < 6; ++i) {
          const bool inner = i >= o[0] && i < o[0] + 3 && j >= o[1] && j < o[1] + 3 && k >= o[2] && k < o[2] + 3;
          if (inner && L < finest) continue;  // refined: the next level covers it
          const double x = (a[0] + i + 0.5) * h, y = (a[1] + j + 0.5) * h, z = (a[2] + k + 0.5) * h;
          const double r2 = (x - p[0]) * (x - p[0]) + (y - p[1]) * (y - p[1]) + (z - p[2]) * (z - p[2]);
          c.push(x, y, z, h * h * h / (r2 + h * h), h);
        }
    for (int d = 0; d < 3; ++d) a[d] = 2 * (a[d] + o[d]);
  }
  return c;
}

/// A clustered AMR-like set of about `target` cells: Plummer clusters refined by mass, a massless slab at low x.
Cells plummerSphere(std::size_t n, std::uint32_t seed) { return tools::plummerPoints(n, seed); }

Cells amrClustered(std::size_t target, double L, double massUnit, std::uint64_t seed, int maxLevel) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> pos(0.2 * L, 0.8 * L), logA(std::log(0.004 * L), std::log(0.05 * L)),
      logM(std::log(0.2), std::log(5.0));
  std::vector<Cluster> cl;
  for (int k = 0; k < 6; ++k) cl.push_back({pos(rng), pos(rng), pos(rng), std::exp(logA(rng)), std::exp(logM(rng)) * massUnit});
  const double bg = 1e-3 * massUnit / (L * L * L);
  // bisection on log(threshold) for the cell count
  double lo = std::log(1e-12 * massUnit), hi = std::log(massUnit);
  for (int it = 0; it < 40; ++it) {
    const double mid = 0.5 * (lo + hi);
    const std::size_t c = refineMesh(cl, bg, L, maxLevel, std::exp(mid), nullptr, nullptr, 0);
    if (c > target) lo = mid;
    else hi = mid;
    if (c > 0.97 * target && c < 1.03 * target) { lo = hi = mid; break; }
  }
  Cells c;
  refineMesh(cl, bg, L, maxLevel, std::exp(hi), &c, &rng, 0.08 * L);
  // shuffle the order: the backends must not depend on the caller's order
  std::vector<std::size_t> perm(c.size());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  Cells s;
  for (std::size_t i : perm) s.push(c.x[i], c.y[i], c.z[i], c.m[i], c.h[i]);
  return s;
}

Cells subset(const Cells& c, std::size_t n) {
  Cells s;
  for (std::size_t i = 0; i < std::min(n, c.size()); ++i) s.push(c.x[i], c.y[i], c.z[i], c.m[i], c.h[i]);
  return s;
}

/// The options with the box [0, kKpc)^3 and the given periodic axes.
SolveOptions periodicBox(SolveOptions o, bool x, bool y, bool z) {
  o.periodic[0] = x;
  o.periodic[1] = y;
  o.periodic[2] = z;
  o.hasBox = true;
  for (int d = 0; d < 3; ++d) { o.boxLo[d] = 0; o.boxHi[d] = kKpc; }
  return o;
}

void poison(SolveResult& r, std::size_t n, bool accel) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r = SolveResult{};
  r.potential.assign(n, nan);
  if (accel) { r.ax.assign(n, nan); r.ay.assign(n, nan); r.az.assign(n, nan); }
}

Diff compare(const SolveResult& ref, const SolveResult& got, bool accel) {
  Diff d;
  const std::size_t n = ref.potential.size();
  if (got.potential.size() != n) { d.finite = false; return d; }
  double rms = 0, maxPot = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got.potential[i])) d.finite = false;
    const double den = std::fabs(ref.potential[i]);
    maxPot = std::max(maxPot, den);
    d.potOfMax = std::max(d.potOfMax, std::fabs(got.potential[i] - ref.potential[i]));
    if (den > 0) d.pot = std::max(d.pot, std::fabs(got.potential[i] - ref.potential[i]) / den);
    if (accel) rms += ref.ax[i] * ref.ax[i] + ref.ay[i] * ref.ay[i] + ref.az[i] * ref.az[i];
  }
  if (accel) {
    if (got.ax.size() != n) { d.finite = false; return d; }
    rms = std::sqrt(rms / std::max<std::size_t>(n, 1));
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(got.ax[i]) || !std::isfinite(got.ay[i]) || !std::isfinite(got.az[i])) d.finite = false;
      const double ex = got.ax[i] - ref.ax[i], ey = got.ay[i] - ref.ay[i], ez = got.az[i] - ref.az[i];
      const double e = std::sqrt(ex * ex + ey * ey + ez * ez);
      const double a = std::sqrt(ref.ax[i] * ref.ax[i] + ref.ay[i] * ref.ay[i] + ref.az[i] * ref.az[i]);
      if (rms > 0) d.accRms = std::max(d.accRms, e / rms);
      if (a > 0) d.accCell = std::max(d.accCell, e / a);
    }
  }
  d.potOfMax = maxPot > 0 ? d.potOfMax / maxPot : 0;
  if (!d.finite) d.pot = d.potOfMax = d.accRms = d.accCell = INFINITY;
  return d;
}

SolveResult asSolve(const PointResults& p) {
  SolveResult r;
  static_cast<PointResults&>(r) = p;
  return r;
}

bool bitwiseEqual(const SolveResult& a, const SolveResult& b) {
  auto eq = [](const std::vector<double>& u, const std::vector<double>& v) {
    return u.size() == v.size() && (u.empty() || std::memcmp(u.data(), v.data(), u.size() * sizeof(double)) == 0);
  };
  return eq(a.potential, b.potential) && eq(a.ax, b.ax) && eq(a.ay, b.ay) && eq(a.az, b.az);
}

std::string jsonEscape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') { o += '\\'; o += ch; }
    else if (ch == '\n') o += "\\n";
    else if (static_cast<unsigned char>(ch) < 0x20) o += ' ';
    else o += ch;
  }
  return o;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string ms(double seconds) { return std::to_string(seconds * 1e3).substr(0, 7) + " ms"; }

Status hostFmmTree(const Cells& cells, int order, bool points, fmm::FmmTree& tree, SortedCells* sorted) {
  SolveOptions opt;
  opt.method = SolveMethod::Fmm;
  opt.fmmOrder = order;
  if (points) opt.selfPotential = SelfPotential::None;
  tools::HostFmmTree t = tools::hostFmmTree(cells, opt, points, resolveThreadCount(0));
  tree = std::move(t.tree);
  if (sorted) *sorted = std::move(t.sorted);
  return t.status;
}

std::string optionsJson(const SolveOptions& o) {
  return std::string("\"theta\":") + num(o.theta) + ",\"order\":" + std::to_string(o.order) + ",\"mac\":\"" +
         macName(o.mac) + "\",\"leafSize\":" + std::to_string(o.leafSize) + ",\"groupSize\":" +
         std::to_string(o.groupSize) + ",\"accelerations\":" + (o.accelerations ? "true" : "false") +
         ",\"selfPotential\":\"" + selfName(o.selfPotential) + "\",\"hasBox\":" + (o.hasBox ? "true" : "false");
}


// ---- the report

void Report::line(bool pass, const std::string& jsonLine, const std::string& text) {
  ++checks;
  if (!pass) {
    ++failed;
    failures.push_back(text);
  }
  std::printf("%s\n", json ? jsonLine.c_str() : text.c_str());
  std::fflush(stdout);
}

void Report::note(const std::string& jsonLine, const std::string& text) const {
  std::printf("%s\n", json ? jsonLine.c_str() : text.c_str());
  std::fflush(stdout);
}

// ---- the shared context

Context::Context(const Args& a) : args(a) {
  report.json = a.json;
  gpu = makeCudaBackend(cudaOpts(true, 4096, true));  // results poisoned before every solve
  cpu = makeCpuBackend();
}

SolveOptions Context::base() {
  SolveOptions o;
  o.theta = 0.5;
  o.order = 2;
  o.accelerations = true;
  return o;
}

const Cells& Context::uniform() {
  if (!uniform_) uniform_ = uniformGrid(args.uniform, kKpc, 1e-24);
  return *uniform_;
}

const Cells& Context::plummer() {
  if (!plummer_) {
    plummer_ = plummerSphere(args.amr / 2, std::uint32_t(args.seed));
    report.note("{\"kind\":\"input\",\"name\":\"plummer\",\"cells\":" + std::to_string(plummer_->size()) + "}",
                "# input plummer: " + std::to_string(plummer_->size()) + " points (seed " + std::to_string(args.seed) +
                    ")");
  }
  return *plummer_;
}

const Cells& Context::amr() {
  if (!amr_) {
    amr_ = amrClustered(args.amr, kKpc, 1e10 * kMsun, args.seed);
    report.note("{\"kind\":\"input\",\"name\":\"amr\",\"cells\":" + std::to_string(amr_->size()) + "}",
                "# input amr: " + std::to_string(amr_->size()) + " cells (seed " + std::to_string(args.seed) + ")");
  }
  return *amr_;
}

const Cells& Context::periodicGrid() {
  // groups of a 64^3 grid up to 64 cells expand their Ewald correction (at most 2.3 table spacings)
  if (!periodicGrid_) periodicGrid_ = uniformGrid(args.uniform >= 32 ? 64 : args.uniform, kKpc, 1e-24);
  return *periodicGrid_;
}

// ---- one case

void parityCase(Context& cx, const std::string& name, const Cells& cells, const SolveOptions& opt, CudaBackend& gpu,
                double tol, bool direct, bool expectSameCounts, double accTol) {
  Backend& cpu = *cx.cpu;
  SolveResult ref, got;
  poison(ref, cells.size(), opt.accelerations);
  poison(got, cells.size(), opt.accelerations);
  const auto tc = Clock::now();
  Status sc = direct ? cpu.direct(cells.view(), opt, ref) : cpu.solve(cells.view(), opt, ref);
  const double cpuSeconds = since(tc);
  const auto tg = Clock::now();
  Status sg = direct ? gpu.direct(cells.view(), opt, got) : gpu.solve(cells.view(), opt, got);
  const double gpuSeconds = since(tg);
  if (!sc.ok() || !sg.ok()) {
    const std::string why = !sc.ok() ? "cpu: " + sc.message : "cuda: " + sg.message;
    cx.report.line(false,
                   "{\"kind\":\"parity\",\"case\":\"" + name + "\",\"pass\":false,\"error\":\"" + jsonEscape(why) + "\"}",
                   "FAIL  " + name + "  error: " + why);
    return;
  }
  const Diff d = compare(ref, got, opt.accelerations);
  const bool sameCounts = ref.stats.approxInteractions == got.stats.approxInteractions &&
                          ref.stats.directInteractions == got.stats.directInteractions &&
                          ref.stats.nodes == got.stats.nodes && ref.stats.leaves == got.stats.leaves &&
                          ref.stats.groups == got.stats.groups && ref.stats.treeDepth == got.stats.treeDepth;
  const bool accOk = !opt.accelerations || d.accRms <= (accTol >= 0 ? accTol : tol);
  // periodic potentials (zero mean) cross zero: judged relative to their largest magnitude
  const double potErr = opt.anyPeriodic() ? d.potOfMax : d.pot;
  const bool pass = d.finite && potErr <= tol && accOk && (sameCounts || !expectSameCounts);
  const CudaStats cs = deviceStats(gpu);
  char js[2048];
  std::snprintf(js, sizeof js,
                "{\"kind\":\"parity\",\"case\":\"%s\",\"pass\":%s,\"cells\":%zu,%s,\"direct\":%s,"
                "\"maxRelPot\":%s,\"maxPotErrOverMax\":%s,\"maxAccErrOverRms\":%s,\"maxRelAccPerCell\":%s,\"allFinite\":%s,"
                "\"countsIdentical\":%s,\"cpuApprox\":%llu,\"gpuApprox\":%llu,\"cpuDirect\":%llu,\"gpuDirect\":%llu,"
                "\"cpuNodes\":%llu,\"gpuNodes\":%llu,\"cpuLeaves\":%llu,\"gpuLeaves\":%llu,\"depth\":%d,"
                "\"cpuSeconds\":%s,\"gpuSeconds\":%s,\"walkLaunches\":%d,\"queuePeak\":%u,\"deviceBytesPerCell\":%s}",
                name.c_str(), pass ? "true" : "false", cells.size(), optionsJson(opt).c_str(), direct ? "true" : "false",
                num(d.pot).c_str(), num(d.potOfMax).c_str(), num(d.accRms).c_str(), num(d.accCell).c_str(),
                d.finite ? "true" : "false",
                sameCounts ? "true" : "false", (unsigned long long)ref.stats.approxInteractions,
                (unsigned long long)got.stats.approxInteractions, (unsigned long long)ref.stats.directInteractions,
                (unsigned long long)got.stats.directInteractions, (unsigned long long)ref.stats.nodes,
                (unsigned long long)got.stats.nodes, (unsigned long long)ref.stats.leaves,
                (unsigned long long)got.stats.leaves, got.stats.treeDepth, num(cpuSeconds).c_str(),
                num(gpuSeconds).c_str(), cs.walkLaunches, cs.queuePeak, num(cs.deviceBytesPerCell).c_str());
  char text[512];
  std::snprintf(text, sizeof text, "%s  %-34s n=%-8zu pot %.2e  acc/rms %.2e  counts %s", pass ? "ok  " : "FAIL",
                name.c_str(), cells.size(), potErr, d.accRms,
                sameCounts ? "identical" : (expectSameCounts ? "DIFFER" : "differ (expected)"));
  std::string t = text;
  if (!sameCounts) {
    char more[256];
    std::snprintf(more, sizeof more, " (approx %llu/%llu, direct %llu/%llu, nodes %llu/%llu: cpu/cuda)",
                  (unsigned long long)ref.stats.approxInteractions, (unsigned long long)got.stats.approxInteractions,
                  (unsigned long long)ref.stats.directInteractions, (unsigned long long)got.stats.directInteractions,
                  (unsigned long long)ref.stats.nodes, (unsigned long long)got.stats.nodes);
    t += more;
  }
  if (!d.finite) t += "  NOT FINITE";
  cx.report.line(pass, js, t);
}

void check(Context& cx, const std::string& name, bool ok, const std::string& detail) {
  cx.report.line(ok,
                 "{\"kind\":\"check\",\"case\":\"" + name + "\",\"pass\":" + (ok ? "true" : "false") +
                     ",\"detail\":\"" + jsonEscape(detail) + "\"}",
                 std::string(ok ? "ok    " : "FAIL  ") + name + "  " + detail);
}

}  // namespace amrgrav::parity
