/// \file root_cube.cpp
/// \brief amrgrav_root_cube: the root cube's rule (tree/tree.h rootCubeFor, chooseRootCube), checked on the host.
///   1. The rule itself: in isolated boxes the side is the smallest cell times the smallest power of two that covers
///      the bounds, exactly; periodic boxes, points (size 0) and meshes finer than the keys resolve keep the bounds'
///      largest side; lo is the bounds' (or the box's) corner.
///   2. What it is for: on uniform grids whose size is not a power of two (24^3, 40^3, 72 x 40 x 24) and on a
///      block mesh of 3 x 1 x 1 root blocks refined once, every node's cells lie inside the node's cube (node faces
///      on cell faces: a node's extent box never leaves its cube), where the bounding cube cut cells at every level.
///   3. The walk over such a grid opens fewer nodes than over the same grid on the bounding cube (the walk given the
///      unaligned root by hand), at no loss of accuracy against direct summation.
/// Prints one line per case and a summary; exits 1 on any failure. CTest runs it (label cpu).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cpu/cpu_walk.h"
#include "tests/check_report.h"
#include "tools/host_cells.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::tests;

namespace {

using Cells = tools::HostCells;

/// nx x ny x nz cells of side dx from the origin, masses 0.5 .. 1.5 (a fixed pseudo-random sequence).
Cells grid(int nx, int ny, int nz, double dx) {
  Cells c;
  unsigned s = 12345;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i) {
        s = s * 1103515245u + 12345u;
        const double rho = 0.5 + double(s >> 8) / double(1u << 24);
        c.push((i + 0.5) * dx, (j + 0.5) * dx, (k + 0.5) * dx, rho * dx * dx * dx, dx);
      }
  return c;
}

/// 3 x 1 x 1 root blocks of 8^3 cells (side 1 each), the middle one refined once into 8 blocks of 8^3.
Cells blockMesh() {
  Cells c;
  for (int b = 0; b < 3; ++b) {
    const bool refined = b == 1;
    const int n = refined ? 16 : 8;
    const double dx = 1.0 / n;
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
          c.push(b + (i + 0.5) * dx, (j + 0.5) * dx, (k + 0.5) * dx, dx * dx * dx, dx);
  }
  return c;
}

struct Built {
  SortedCells sorted;
  Octree tree;
  std::vector<std::uint64_t> keys;
};

Built build(const Cells& c, const SolveOptions& opt, RootCube root) {
  Built b;
  if (!sortCellsByKey(c.view(), root, b.sorted, b.keys).ok() ||
      !buildOctree(b.keys, root, opt.leafSize, b.tree).ok())
    std::printf("build failed\n");
  computeMoments(b.sorted, opt, b.tree);
  return b;
}

/// Does every node's extent box (its cells' own extents) lie inside its cube, to rounding?
bool nodesInsideCubes(const Octree& t, int* worst) {
  bool ok = true;
  for (std::size_t i = 0; i < t.nodeCount(); ++i) {
    const double half = 0.5 * t.side(i);
    for (int d = 0; d < 3; ++d) {
      const double lo = t.centre[3 * i + d] - half, hi = t.centre[3 * i + d] + half, tol = 1e-12 * t.root.side;
      if (t.extentLo[3 * i + d] < lo - tol || t.extentHi[3 * i + d] > hi + tol) {
        ok = false;
        *worst = std::max(*worst, int(t.level[i]));
      }
    }
  }
  return ok;
}

/// Interactions per cell and the largest relative error against direct summation of the walk over `root`.
void walkOver(const Cells& c, const SolveOptions& opt, RootCube root, double* perCell, double* maxErr) {
  Built b = build(c, opt, root);
  const Groups g = makeGroups(b.sorted, b.keys, opt.cellGroupSize());
  const std::size_t n = c.x.size();
  std::vector<double> phi(n, 0), ref(n, 0);
  WalkOutput out{phi.data(), nullptr, nullptr, nullptr};
  walkAllGroups(b.tree, b.sorted, g, opt, 1, out, nullptr);
  WalkOutput dir{ref.data(), nullptr, nullptr, nullptr};
  directAll(b.sorted, false, 1, dir);
  *perCell = double(out.approx + out.direct) / double(n);
  double e = 0;
  for (std::size_t i = 0; i < n; ++i) e = std::max(e, std::fabs(phi[i] / ref[i] - 1));
  *maxErr = e;
}

}  // namespace

int main() {
  SolveOptions iso;
  SolveOptions per = iso;
  per.periodic[0] = per.periodic[1] = per.periodic[2] = true;
  const double lo[3] = {0, 0, 0};

  // 1. the rule
  {
    const double dx = 1.0 / 72, hi[3] = {72 * dx, 40 * dx, 24 * dx};
    const RootCube r = rootCubeFor(lo, hi, dx, iso);
    check("rule-isolated", r.side == 128 * dx && r.lo[0] == 0,
          "72 x 40 x 24 cells: side " + std::to_string(r.side / dx) + " dx");
    const double hp[3] = {64 * dx, 64 * dx, 64 * dx};
    check("rule-power-of-two", rootCubeFor(lo, hp, dx, iso).side == 64 * dx, "64 cells: the bounds' side kept");
    check("rule-periodic", rootCubeFor(lo, hi, dx, per).side == hi[0], "a periodic box keeps its period");
    check("rule-points",
          rootCubeFor(lo, hi, 0.0, iso).side == hi[0] && rootCubeFor(lo, hi, INFINITY, iso).side == hi[0],
          "points (size 0) and no cells keep the bounds' side");
    const double tiny = hi[0] / double(1u << 22);
    check("rule-beyond-keys", rootCubeFor(lo, hi, tiny, iso).side == hi[0],
          "cells finer than the keys resolve: unchanged");
    const Cells c = grid(24, 24, 24, 1.0 / 24);
    const RootCube cr = chooseRootCube(c.view(), iso);
    check("choose-root", cr.side == 32 * (1.0 / 24) && cr.lo[0] == 0 && cr.lo[1] == 0 && cr.lo[2] == 0,
          "24^3 cells of [0, 1]^3: side " + std::to_string(cr.side * 24) + " cells");
  }

  // 2. node faces on cell faces
  {
    struct Case {
      std::string name;
      Cells c;
    };
    std::vector<Case> cases = {{"24^3", grid(24, 24, 24, 1.0 / 24)},
                               {"40^3", grid(40, 40, 40, 1.0 / 40)},
                               {"72x40x24", grid(72, 40, 24, 1.0 / 72)},
                               {"3x1x1-blocks", blockMesh()}};
    for (const Case& k : cases) {
      int worstNew = -1, worstOld = -1;
      const Built aligned = build(k.c, iso, chooseRootCube(k.c.view(), iso));
      const bool inside = nodesInsideCubes(aligned.tree, &worstNew);
      // the bounding cube, as before the rule (the periodic choice keeps it)
      const Built bounding = build(k.c, iso, chooseRootCube(k.c.view(), per));
      const bool before = nodesInsideCubes(bounding.tree, &worstOld);
      check("cells-inside-nodes-" + k.name, inside && !before,
            std::string(inside ? "every node" : "a node") + " inside its cube on the aligned root" +
                (before ? "; also on the bounding cube (no test of the rule)"
                        : "; on the bounding cube nodes leave theirs (down to level " +
                                  std::to_string(worstOld) + ")"));
    }
  }

  // 3. the walk: fewer interactions, no loss of accuracy
  {
    SolveOptions o = iso;
    o.theta = 0.5;
    o.order = 2;
    o.selfPotential = SelfPotential::None;
    const Cells c = grid(40, 40, 40, 1.0 / 40);
    double pa = 0, ea = 0, pb = 0, eb = 0;
    walkOver(c, o, chooseRootCube(c.view(), o), &pa, &ea);
    walkOver(c, o, chooseRootCube(c.view(), per), &pb, &eb);
    char buf[200];
    std::snprintf(buf, sizeof buf, "40^3: %.0f interactions per cell (bounding cube %.0f), max error %.2e (%.2e)", pa,
                  pb, ea, eb);
    check("walk-40^3", pa < 0.85 * pb && ea <= 1.1 * eb && ea < 2e-4, buf);
  }
  std::printf("== root cube: %d checks, %d failed ==\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
