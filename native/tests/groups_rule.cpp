/// \file groups_rule.cpp
/// \brief amrgrav_groups_rule: the walk groups' rule (tree/groups_k.h, tree/groups.cpp), checked on the host.
///   1. Meshes keep the groups of before: on uniform 2^k grids and on block-structured meshes of 8^3 blocks
///      (PARAMESH style: 1, 8 and 4x2x2 root blocks, blocks refined at random to three levels, cells in shuffled
///      order) the groups are exactly [g G, (g + 1) G) for every power-of-two groupSize G from 1 to 256; and the
///      CPU walk over them gives bitwise the potentials and interaction counts of a walk over those runs built by
///      hand.
///   2. On clustered point sets (a Plummer sphere, random points, points sharing keys) the groups are the rule's,
///      re-derived by brute force: every cell's home node found by counting each of its key prefixes over the whole
///      sorted key array (std::equal_range), groups restarting at home-node starts, at most G cells each.
///   3. The CUDA backend's way to them (cuda/kernel_groups.cu: tiles, marks, homeStartFromMarks) emulated on the
///      host gives the same group starts.
/// Prints one line per case and a summary; exits 1 on any failure. CTest runs it (label cpu), and so does
/// test/groups.test.ts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_walk.h"
#include "tests/check_report.h"
#include "tools/host_cells.h"
#include "tools/plummer.h"
#include "tree/groups_k.h"
#include "tree/keys.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::tests;

namespace {

using Cells = tools::HostCells;

double density(double x, double y, double z) { return 1 + 0.5 * std::sin(6 * x) * std::cos(5 * y) + 0.3 * z; }

Cells uniformGrid(int n) {
  Cells c;
  const double h = 1.0 / n;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const double x = (i + 0.5) * h, y = (j + 0.5) * h, z = (k + 0.5) * h;
        c.push(x, y, z, density(x, y, z) * h * h * h, h);
      }
  return c;
}

/// 8^3-cell blocks: rx x ry x rz root blocks of side 1, each leaf block refined (into 8) with probability `p` per
/// level down to `levels`; cells shuffled.
Cells blockMesh(int rx, int ry, int rz, int levels, double p, std::uint32_t seed) {
  struct Block { double lo[3], side; int level; };
  std::vector<Block> todo, leaves;
  for (int k = 0; k < rz; ++k)
    for (int j = 0; j < ry; ++j)
      for (int i = 0; i < rx; ++i) todo.push_back({{double(i), double(j), double(k)}, 1.0, 0});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  while (!todo.empty()) {
    const Block b = todo.back();
    todo.pop_back();
    if (b.level < levels && u(rng) < p) {
      const double s = 0.5 * b.side;
      for (int c = 0; c < 8; ++c)
        todo.push_back({{b.lo[0] + s * (c & 1), b.lo[1] + s * ((c >> 1) & 1), b.lo[2] + s * (c >> 2)}, s, b.level + 1});
    } else {
      leaves.push_back(b);
    }
  }
  Cells c;
  for (const Block& b : leaves) {
    const double h = b.side / 8;
    for (int k = 0; k < 8; ++k)
      for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 8; ++i) {
          const double x = b.lo[0] + (i + 0.5) * h, y = b.lo[1] + (j + 0.5) * h, z = b.lo[2] + (k + 0.5) * h;
          c.push(x, y, z, density(x / rx, y / ry, z / rz) * h * h * h, h);
        }
  }
  std::vector<std::size_t> perm(c.x.size());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  Cells s;
  for (std::size_t i : perm) s.push(c.x[i], c.y[i], c.z[i], c.m[i], c.h[i]);
  return s;
}

Cells fromPlummer(std::size_t n, std::uint32_t seed) {
  const tools::PlummerPoints p = tools::plummerPoints(n, seed);
  Cells c;
  c.x = p.x; c.y = p.y; c.z = p.z; c.m = p.m; c.h = p.h;
  return c;
}

/// Uniform random points in a cube, plus clumps of points closer than one key cell (equal keys, different centres).
Cells randomWithSharedKeys(std::size_t n, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Cells c;
  for (std::size_t i = 0; i < n; ++i) c.push(u(rng), u(rng), u(rng), 1.0, 1e-9);
  // 3 clumps of 1500 points within 1e-9 of a point (a key cell is 2^-21 of the root side: ~5e-7 here), more
  // than the cap of groupSize 32
  for (int k = 0; k < 3; ++k) {
    const double cx = u(rng), cy = u(rng), cz = u(rng);
    for (int i = 0; i < 1500; ++i) c.push(cx + 1e-9 * u(rng), cy + 1e-9 * u(rng), cz + 1e-9 * u(rng), 1.0, 1e-12);
  }
  return c;
}

struct Sorted {
  SortedCells cells;
  std::vector<std::uint64_t> keys;
  RootCube root;
};

Sorted sortOf(const Cells& c, const SolveOptions& o) {
  Sorted s;
  s.root = chooseRootCube(c.view(), o);
  const Status st = sortCellsByKey(c.view(), s.root, s.cells, s.keys);
  if (!st.ok()) std::printf("FAIL sort: %s\n", st.message.c_str());
  return s;
}

/// 1. the runs of before on a mesh, for every power-of-two groupSize
void meshKeepsRuns(const std::string& name, const Cells& c) {
  const SolveOptions o;
  const Sorted s = sortOf(c, o);
  const std::size_t n = c.x.size();
  for (int G = 1; G <= 256; G *= 2) {
    const Groups g = makeGroups(s.cells, s.keys, G);
    bool same = g.size() == (n + G - 1) / G;
    for (std::size_t k = 0; same && k < g.size(); ++k)
      same = g.begin[k] == k * std::size_t(G) && g.count[k] == std::min<std::size_t>(G, n - k * G);
    check(name + "-runs-G" + std::to_string(G), same,
          std::to_string(n) + " cells: " + std::to_string(g.size()) + " groups, " +
              (same ? "exactly [g G, (g + 1) G)" : "NOT the runs of before"));
  }
}

/// 1b. the CPU walk over the rule's groups and over hand-made runs of 32: bitwise the same
void meshWalkSame(const std::string& name, const Cells& c) {
  SolveOptions o;
  o.accelerations = true;
  const Sorted s = sortOf(c, o);
  const std::size_t n = c.x.size();
  Octree tree;
  buildOctree(s.keys, s.root, o.leafSize, tree);
  computeMoments(s.cells, o, tree);
  Groups runs;  // [g 32, (g + 1) 32): the groups until issue #18
  for (std::size_t b = 0; b < n; b += 32) {
    runs.begin.push_back(std::uint32_t(b));
    runs.count.push_back(std::uint32_t(std::min<std::size_t>(32, n - b)));
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (std::size_t j = b; j < b + runs.count.back(); ++j) {
      const double p[3] = {s.cells.x[j], s.cells.y[j], s.cells.z[j]};
      for (int d = 0; d < 3; ++d) { lo[d] = std::min(lo[d], p[d]); hi[d] = std::max(hi[d], p[d]); }
    }
    for (int d = 0; d < 3; ++d) { runs.lo.push_back(lo[d]); runs.hi.push_back(hi[d]); }
  }
  const Groups rule = makeGroups(s.cells, s.keys, 32);
  std::vector<double> out[2][4];
  WalkOutput wo[2];
  const Groups* gs[2] = {&runs, &rule};
  for (int k = 0; k < 2; ++k) {
    for (auto& v : out[k]) v.assign(n, 0.0);
    wo[k] = WalkOutput{out[k][0].data(), out[k][1].data(), out[k][2].data(), out[k][3].data()};
    walkAllGroups(tree, s.cells, *gs[k], o, 2, wo[k], nullptr);
  }
  bool bitwise = true;
  for (int a = 0; a < 4; ++a)
    for (std::size_t i = 0; i < n; ++i)
      bitwise = bitwise && std::memcmp(&out[0][a][i], &out[1][a][i], sizeof(double)) == 0;
  const bool counts = wo[0].approx == wo[1].approx && wo[0].direct == wo[1].direct;
  check(name + "-walk-bitwise", bitwise && counts,
        std::string(bitwise ? "phi and g bitwise equal" : "phi or g DIFFER") + ", interactions " +
            std::to_string(wo[1].approx) + "+" + std::to_string(wo[1].direct) + " vs " + std::to_string(wo[0].approx) +
            "+" + std::to_string(wo[0].direct));
}

/// 2. the rule re-derived by brute force
void ruleByBruteForce(const std::string& name, const Cells& c, int G) {
  const SolveOptions o;
  const Sorted s = sortOf(c, o);
  const std::vector<std::uint64_t>& keys = s.keys;
  const std::size_t n = keys.size();
  const std::size_t cap = groupNodeCap(std::uint32_t(G));
  // every cell's home node start: the coarsest prefix holding at most cap cells (or the full key)
  std::vector<std::uint32_t> home(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (int level = 0; level <= kKeyBits; ++level) {
      const int shift = 3 * (kKeyBits - level);
      const std::uint64_t p = shift >= 64 ? 0 : keys[i] >> shift;
      auto lessPrefix = [shift](std::uint64_t k, std::uint64_t v) { return (k >> shift) < v; };
      auto prefixLess = [shift](std::uint64_t v, std::uint64_t k) { return v < (k >> shift); };
      const auto lo = std::lower_bound(keys.begin(), keys.end(), p, lessPrefix);
      const auto hi = std::upper_bound(keys.begin(), keys.end(), p, prefixLess);
      if (std::size_t(hi - lo) <= cap || level == kKeyBits) {
        home[i] = std::uint32_t(lo - keys.begin());
        break;
      }
    }
  }
  std::vector<std::uint32_t> starts;
  for (std::size_t i = 0; i < n; ++i)
    if ((i - home[i]) % std::size_t(G) == 0) starts.push_back(std::uint32_t(i));
  const Groups g = makeGroups(s.cells, keys, G);
  bool ok = g.begin == starts;
  std::size_t largest = 0, cut = 0, bigHomes = 0;  // home nodes of one key holding more than cap cells
  for (std::size_t i = 0; i < n; ++i)
    if (home[i] == i && i + cap < n && keys[i + cap] == keys[i]) ++bigHomes;
  for (std::size_t k = 0; k < g.size(); ++k) {
    largest = std::max<std::size_t>(largest, g.count[k]);
    ok = ok && g.count[k] >= 1 && g.count[k] <= std::size_t(G) && home[g.begin[k]] == home[g.begin[k] + g.count[k] - 1];
    cut += g.count[k] < std::size_t(G) ? 1 : 0;
  }
  check(name + "-rule-G" + std::to_string(G), ok,
        std::to_string(n) + " cells: " + std::to_string(g.size()) + " groups (" + std::to_string((n + G - 1) / G) +
            " runs of " + std::to_string(G) + " before), " + std::to_string(cut) + " shorter, largest " +
            std::to_string(largest) + ", " + std::to_string(bigHomes) + " home nodes of one key above the cap" +
            (ok ? ", the brute-force rule's" : ", NOT the brute-force rule's"));
}

/// 3. the device's way to the same groups (cuda/kernel_groups.cu), emulated: tiles of `tile` cells, each marking
///    the home-node starts of its cells and of the cap cells before it, each cell's home start from those marks
///    (tree/groups_k.h homeStartFromMarks, the kernel's own code); the group starts must be makeGroups'.
void deviceTilesEmulated(const std::string& name, const Cells& c, int G, std::uint32_t tile) {
  const SolveOptions o;
  const Sorted s = sortOf(c, o);
  const std::uint64_t* keys = s.keys.data();
  const std::uint32_t n = std::uint32_t(s.keys.size()), cap = groupNodeCap(std::uint32_t(G));
  const std::uint32_t pad = (cap + 31) / 32 * 32, words = (pad + tile) / 32;
  std::vector<std::uint32_t> starts, marks(words);
  for (std::uint32_t t0 = 0; t0 < n; t0 += tile) {
    const long long windowStart = (long long)t0 - pad;
    for (std::uint32_t w = 0; w < words; ++w) {
      marks[w] = 0;
      for (int b = 0; b < 32; ++b) {
        const long long cell = windowStart + 32ll * w + b;
        const bool start = cell == 0 || (cell > 0 && cell < n && homeNodeStartsAt(keys, n, std::uint32_t(cell), cap));
        if (start) marks[w] |= 1u << b;
      }
    }
    for (std::uint32_t i = t0; i < std::min(n, t0 + tile); ++i)
      if (groupStartsAt(i, homeStartFromMarks(marks.data(), windowStart, keys, i, cap), std::uint32_t(G)))
        starts.push_back(i);
  }
  const Groups g = makeGroups(s.cells, s.keys, G);
  check(name + "-device-tiles" + std::to_string(tile) + "-G" + std::to_string(G), g.begin == starts,
        std::to_string(starts.size()) + " group starts from tiles of " + std::to_string(tile) + " cells, " +
            (g.begin == starts ? "makeGroups' own" : "NOT makeGroups'"));
}

}  // namespace

int main() {
  for (int n : {16, 32, 64}) {
    const Cells c = uniformGrid(n);
    meshKeepsRuns("uniform" + std::to_string(n), c);
  }
  const Cells one = blockMesh(1, 1, 1, 3, 0.7, 5);
  const Cells eight = blockMesh(2, 2, 2, 3, 0.3, 2);
  const Cells slab = blockMesh(4, 2, 2, 2, 0.3, 3);
  meshKeepsRuns("blocks-1root", one);
  meshKeepsRuns("blocks-8root", eight);
  meshKeepsRuns("blocks-4x2x2root", slab);
  meshWalkSame("uniform32", uniformGrid(32));
  meshWalkSame("blocks-8root", eight);
  const Cells plummer = fromPlummer(40000, 18);
  const Cells shared = randomWithSharedKeys(20000, 7);
  for (int G : {32, 16, 7, 64}) ruleByBruteForce("plummer", plummer, G);
  for (int G : {32, 1}) ruleByBruteForce("random-shared-keys", shared, G);
  for (std::uint32_t tile : {4096u, 64u}) {  // the kernel's tile (cuda/kernels.h kGroupTile), and a small one
    for (int G : {32, 7, 64}) deviceTilesEmulated("plummer", plummer, G, tile);
    deviceTilesEmulated("random-shared-keys", shared, 32, tile);
    deviceTilesEmulated("blocks-8root", eight, 32, tile);
  }
  std::printf("groups rule: %d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
