/// \file sort_keys.cpp
/// \brief Root cube choice and the Morton sort of the cells (LSD radix sort: stable, hence deterministic).
#include <algorithm>
#include <cmath>

#include "physics/moments_k.h"
#include "tree/keys.h"
#include "tree/tree.h"
#include "core/thread_pool.h"
#include "core/validate.h"

namespace amrgrav {

RootCube rootCubeFor(const double lo[3], const double hi[3], double minSize, const SolveOptions& opt) {
  RootCube r;
  double side = 0;
  for (int d = 0; d < 3; ++d) side = std::max(side, hi[d] - lo[d]);
  if (!(side > 0)) side = 1;  // a single point mass
  // Isolated meshes: the side a power-of-two multiple of the finest cell, so that every node's faces lie on cell
  // faces. A bounding cube of, say, 72 cells cuts cells at every level (72 / 2^k is not whole): nodes then reach
  // half a cell beyond their cube, their MAC radius grows, and the walk opens far more of them (bench/RESULTS.md).
  // Only where the keys resolve the finest cells (side <= kKeyCells of them); points (size 0) keep the tight cube,
  // and periodic boxes keep the box (its sides are the periods).
  if (!opt.anyPeriodic() && minSize > 0 && std::isfinite(minSize) && side <= minSize * double(kKeyCells)) {
    double aligned = minSize;
    while (aligned < side) aligned *= 2;  // exact: doublings
    side = aligned;
  }
  for (int d = 0; d < 3; ++d) r.lo[d] = lo[d];
  r.side = side;
  return r;
}

RootCube chooseRootCube(const CellsView& c, const SolveOptions& opt) {
  double lo[3], hi[3];
  double minSize = INFINITY;
  if (opt.hasBox) {
    for (int d = 0; d < 3; ++d) { lo[d] = opt.boxLo[d]; hi[d] = opt.boxHi[d]; }
    if (c.size)
      for (std::size_t i = 0; i < c.n; ++i) minSize = std::min(minSize, c.size[i]);
  } else {
    for (int d = 0; d < 3; ++d) { lo[d] = INFINITY; hi[d] = -INFINITY; }
    const double* p[3] = {c.x, c.y, c.z};
    for (std::size_t i = 0; i < c.n; ++i) {  // physics/moments_k.h, as cuda/kernel_keys.cu boundsKernel
      const double h = cellHalfSize(c.size[i]);
      for (int d = 0; d < 3; ++d) growByCell(lo[d], hi[d], p[d][i], h);
      minSize = std::min(minSize, c.size[i]);
    }
    if (c.n == 0) for (int d = 0; d < 3; ++d) { lo[d] = 0; hi[d] = 1; }
  }
  return rootCubeFor(lo, hi, minSize, opt);
}

void stableSortByKey(std::vector<std::uint64_t>& k, std::vector<std::uint32_t>& idx, std::vector<std::uint64_t>& ktmp,
                     std::vector<std::uint32_t>& itmp, int threads) {
  const std::size_t n = k.size();
  ktmp.resize(n);
  itmp.resize(n);
  // 63-bit keys, 4 passes of 16 bits; each pass is a stable counting sort. Chunk t of T counts its digits, the
  // offsets run over (digit, chunk), and each chunk scatters its keys in order: stable whatever T is.
  constexpr std::size_t kDigits = std::size_t(1) << 16;
  const std::size_t T = std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(std::max(threads, 1)),
                                                                         n / (std::size_t(1) << 16)));
  std::vector<std::size_t> count(T * kDigits);
  auto chunk = [&](std::size_t t, std::size_t* b, std::size_t* e) {
    *b = n * t / T;
    *e = n * (t + 1) / T;
  };
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 16 * pass;
    parallelFor(T, 1, int(T), [&](std::size_t t0, std::size_t t1, int) {
      for (std::size_t t = t0; t < t1; ++t) {
        std::size_t* c = &count[t * kDigits];
        std::fill(c, c + kDigits, 0);
        std::size_t b, e;
        chunk(t, &b, &e);
        for (std::size_t i = b; i < e; ++i) ++c[(k[i] >> shift) & 0xffff];
      }
    });
    if (n > 0) {  // all in one digit: the pass is a no-op
      const std::size_t d0 = (k[0] >> shift) & 0xffff;
      std::size_t same = 0;
      for (std::size_t t = 0; t < T; ++t) same += count[t * kDigits + d0];
      if (same == n) continue;
    }
    std::size_t sum = 0;
    for (std::size_t d = 0; d < kDigits; ++d)
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t v = count[t * kDigits + d];
        count[t * kDigits + d] = sum;
        sum += v;
      }
    parallelFor(T, 1, int(T), [&](std::size_t t0, std::size_t t1, int) {
      for (std::size_t t = t0; t < t1; ++t) {
        std::size_t* c = &count[t * kDigits];
        std::size_t b, e;
        chunk(t, &b, &e);
        for (std::size_t i = b; i < e; ++i) {
          const std::size_t dst = c[(k[i] >> shift) & 0xffff]++;
          ktmp[dst] = k[i];
          itmp[dst] = idx[i];
        }
      }
    });
    k.swap(ktmp);
    idx.swap(itmp);
  }
}

double lengthScaleFor(double side) { return std::exp2(-std::round(std::log2(side))); }

Status sortCellsByKey(const CellsView& c, RootCube& root, SortedCells& out, std::vector<std::uint64_t>& keys,
                      double scale, bool pointSources, int threads) {
  const std::size_t n = c.n;
  if (!(scale > 0)) scale = lengthScaleFor(root.side);
  std::vector<std::uint64_t> k(n), ktmp(n);
  std::vector<std::uint32_t> idx(n), itmp(n);
  const double inv = double(kKeyCells) / root.side;
  constexpr std::size_t kGrain = std::size_t(1) << 15;
  parallelFor(n, kGrain, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      k[i] = mortonKey(keyCoordinate(c.x[i], root.lo[0], inv), keyCoordinate(c.y[i], root.lo[1], inv),
                       keyCoordinate(c.z[i], root.lo[2], inv));
      idx[i] = std::uint32_t(i);
    }
  });
  stableSortByKey(k, idx, ktmp, itmp, threads);
  // Two cells at one centre would each skip the other as "itself" in the walk: refuse them. Equal centres have
  // equal keys, so after the sort they sit in one run of equal keys.
  if (!pointSources) AG_TRY(checkCoincidentCells(c, k.data(), idx.data()));
  gatherSortedCells(c, std::move(idx), scale, threads, out);
  for (int d = 0; d < 3; ++d) root.lo[d] *= scale;
  root.side *= scale;
  keys = std::move(k);
  return Status::success();
}

void gatherSortedCells(const CellsView& c, std::vector<std::uint32_t>&& order, double scale, int threads,
                       SortedCells& out) {
  const std::size_t n = order.size();
  constexpr std::size_t kGrain = std::size_t(1) << 15;
  out.order = std::move(order);
  out.scale = scale;
  out.x.resize(n); out.y.resize(n); out.z.resize(n); out.mass.resize(n); out.size.resize(n);
  parallelFor(n, kGrain, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      const std::uint32_t j = out.order[i];
      out.x[i] = c.x[j] * scale; out.y[i] = c.y[j] * scale; out.z[i] = c.z[j] * scale;
      out.mass[i] = c.mass[j]; out.size[i] = c.size[j] * scale;
    }
  });
}

}  // namespace amrgrav
