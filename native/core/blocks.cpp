/// \file blocks.cpp
/// \brief The block entry's host helpers (blocks.h): checks, cell generation, packing and scatter.
#include "core/blocks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <regex>
#include <sstream>

#include "core/backend.h"
#include "core/thread_pool.h"
#include "core/validate.h"

namespace amrgrav {
namespace {

Status badBlock(std::size_t b, const std::string& what) {
  return Status::error(ErrorCode::InvalidInput, "block " + std::to_string(b) + ": " + what);
}

/// (i, j, k) and the block of cell p.
void cellOf(const BlocksView& v, std::size_t p, std::size_t& b, int& i, int& j, int& k) {
  const std::size_t cpb = v.cellsPerBlock();
  b = p / cpb;
  std::size_t c = p % cpb;
  i = int(c % std::size_t(v.nxb));
  c /= std::size_t(v.nxb);
  j = int(c % std::size_t(v.nyb));
  k = int(c / std::size_t(v.nyb));
}

/// After a run of `run` cells along x from (i, j, k) of block b, to the next row's first cell (or the next block's).
void nextRun(const BlocksView& v, int run, std::size_t& b, int& i, int& j, int& k) {
  i += run;
  if (i < v.nxb) return;
  i = 0;
  if (++j < v.nyb) return;
  j = 0;
  if (++k < v.nzb) return;
  k = 0;
  ++b;
}

constexpr std::size_t kChunk = std::size_t(1) << 15;  // cells per parallelFor chunk

}  // namespace

Status validateBlocks(const BlocksView& v, const BlockOutputs& out, const SolveOptions& opt) {
  auto bad = [](const std::string& m) { return Status::error(ErrorCode::InvalidInput, m); };
  if (v.nBlocks == 0) return Status::success();
  if (v.nxb < 1 || v.nyb < 1 || v.nzb < 1)
    return bad("nxb, nyb and nzb must be at least 1 (got " + std::to_string(v.nxb) + ", " + std::to_string(v.nyb) +
               ", " + std::to_string(v.nzb) + ")");
  for (int d = 0; d < 3; ++d)
    if (v.guard[d] < 0 || v.guard[d] > 64)
      return bad("guard cells must be in [0, 64] per side (axis " + std::to_string(d) + ": " +
                 std::to_string(v.guard[d]) + ")");
  if (!v.lo || !v.dx) return bad("the blocks' lower corners (lo) and cell widths (dx) must not be NULL");
  if (!v.density) return bad("the density must not be NULL");
  if (!out.potential) return bad("the potential's array must not be NULL");
  if (opt.accelerations && (!out.ax || !out.ay || !out.az))
    return bad("ax, ay and az must not be NULL when accelerations are computed");
  if (v.dtype != DType::Float64 && v.dtype != DType::Float32)
    return Status::error(ErrorCode::InvalidOption, "dtype must be float64 (0) or float32 (1)");
  if (v.varStride < 1) return Status::error(ErrorCode::InvalidOption, "varStride must be at least 1");
  const std::size_t blockElems = v.varStride * std::size_t(v.nx()) * std::size_t(v.ny()) * std::size_t(v.nz());
  if (v.blockStride != 0 && v.blockStride < blockElems)
    return Status::error(ErrorCode::InvalidOption,
                         "blockStride " + std::to_string(v.blockStride) + " is smaller than a block's " +
                             std::to_string(blockElems) + " elements (varStride x NX x NY x NZ): blocks would overlap");
  if (v.cellsPerBlock() > 0 && v.nBlocks > (std::size_t(1) << 40) / v.cellsPerBlock())
    return bad("too many cells: " + std::to_string(v.nBlocks) + " blocks of " + std::to_string(v.cellsPerBlock()));
  static const char* axis[3] = {"x", "y", "z"};
  const int nb[3] = {v.nxb, v.nyb, v.nzb};
  for (std::size_t b = 0; b < v.nBlocks; ++b) {
    if (v.blockIndex && v.blockIndex[b] < 0)
      return badBlock(b, "blockIndex is negative (got " + std::to_string(v.blockIndex[b]) + ")");
    const double* lo = v.lo + 3 * b;
    const double* h = v.dx + 3 * b;
    for (int d = 0; d < 3; ++d) {
      if (!std::isfinite(lo[d])) return badBlock(b, std::string("lower corner ") + axis[d] + " is not finite (got " + exactNumber(lo[d]) + ")");
      if (!(std::isfinite(h[d]) && h[d] > 0))
        return badBlock(b, std::string("cell width d") + axis[d] + " must be finite and positive (got " + exactNumber(h[d]) + ")");
    }
    if (std::fabs(h[1] - h[0]) > kCubicTolerance * h[0] || std::fabs(h[2] - h[0]) > kCubicTolerance * h[0])
      return badBlock(b, "cells must be cubes (the tree's cells have one size): dx, dy, dz = " + exactNumber(h[0]) + ", " +
                             exactNumber(h[1]) + ", " + exactNumber(h[2]) + " differ by more than 1e-12 relative");
    for (int d = 0; d < 3; ++d) {
      // centres grow with i (each rounding is monotone): the first and last cells bound the block's
      const double c0 = blockCellCentre(lo[d], 0, h[d]), c1 = blockCellCentre(lo[d], nb[d] - 1, h[d]);
      if (!std::isfinite(c0) || !std::isfinite(c1))
        return badBlock(b, std::string("cell centres along ") + axis[d] + " are not finite");
      if (opt.hasBox && (c0 < opt.boxLo[d] || c1 > opt.boxHi[d]))
        return badBlock(b, std::string("cell centres along ") + axis[d] + " span [" + exactNumber(c0) + ", " + exactNumber(c1) +
                               "], outside the box [" + exactNumber(opt.boxLo[d]) + ", " + exactNumber(opt.boxHi[d]) + "]");
    }
  }
  return Status::success();
}

std::size_t blockFieldElements(const BlocksView& v) {
  if (v.nBlocks == 0 || v.cellsPerBlock() == 0) return 0;
  std::size_t top = 0;
  for (std::size_t b = 0; b < v.nBlocks; ++b) top = std::max(top, v.slotOf(b));
  return v.element(top, v.nxb - 1, v.nyb - 1, v.nzb - 1) + 1;
}

double blockDensity(const BlocksView& v, std::size_t p) {
  std::size_t b;
  int i, j, k;
  cellOf(v, p, b, i, j, k);
  const std::size_t e = v.element(v.slotOf(b), i, j, k);
  return v.dtype == DType::Float32 ? double(static_cast<const float*>(v.density)[e])
                                   : static_cast<const double*>(v.density)[e];
}

std::string blockCellName(const BlocksView& v, std::size_t p) {
  std::size_t b;
  int i, j, k;
  cellOf(v, p, b, i, j, k);
  return "block " + std::to_string(b) + " (slot " + std::to_string(v.slotOf(b)) + "), cell (" + std::to_string(i) +
         ", " + std::to_string(j) + ", " + std::to_string(k) + ")";
}

Status blocksStatus(const BlocksView& v, const Status& st, const double* rhoKnown) {
  if (st.ok()) return st;
  std::smatch m;
  const std::size_t n = v.cells();
  static const std::regex one("^cell ([0-9]+): (.*)$"), two("^cells ([0-9]+) and ([0-9]+) (.*)$");
  if (std::regex_match(st.message, m, two)) {
    const std::size_t a = std::stoull(m[1].str()), b = std::stoull(m[2].str());
    if (a < n && b < n)
      return Status::error(st.code, blockCellName(v, a) + " and " + blockCellName(v, b) + " " + m[3].str() +
                                        " (blocks overlap?)");
  } else if (std::regex_match(st.message, m, one)) {
    const std::size_t p = std::stoull(m[1].str());
    if (p < n) {
      std::string what = m[2].str();
      // the mass is the density times the volume: speak of the density the caller gave
      const bool known = rhoKnown || !v.deviceData;
      const double rho = rhoKnown ? *rhoKnown : v.deviceData ? NAN : blockDensity(v, p);
      const std::string tail = what.find(';') != std::string::npos ? what.substr(what.find(';')) : "";
      if (what.rfind("mass is not finite", 0) == 0 && known && std::isfinite(rho))
        what = "the mass (density x cell volume) is not finite (density " + exactNumber(rho) + ")";
      else if (what.rfind("mass ", 0) == 0 && known)
        what = "density " + what.substr(5, what.find(" (got") - 5) + " (got " + exactNumber(rho) + ")" + tail;
      return Status::error(st.code, blockCellName(v, p) + ": " + what);
    }
  }
  return st;
}

void generateBlockCells(const BlocksView& v, int threads, GeneratedCells& out, bool geometry, bool masses) {
  const std::size_t n = v.cells(), cpb = v.cellsPerBlock();
  if (geometry) {
    out.x.resize(n);
    out.y.resize(n);
    out.z.resize(n);
    out.size.resize(n);
  }
  if (masses) out.mass.resize(n);
  parallelFor(v.nBlocks, std::max<std::size_t>(1, kChunk / std::max<std::size_t>(cpb, 1)), threads,
              [&](std::size_t b0, std::size_t b1, int) {
                for (std::size_t b = b0; b < b1; ++b) {
                  const double* lo = v.lo + 3 * b;
                  const double* h = v.dx + 3 * b;
                  const std::size_t s = v.slotOf(b);
                  std::size_t p = b * cpb;
                  for (int k = 0; k < v.nzb; ++k)
                    for (int j = 0; j < v.nyb; ++j) {
                      const std::size_t e0 = v.element(s, 0, j, k);
                      const double cy = blockCellCentre(lo[1], j, h[1]), cz = blockCellCentre(lo[2], k, h[2]);
                      for (int i = 0; i < v.nxb; ++i, ++p) {
                        if (geometry) {
                          out.x[p] = blockCellCentre(lo[0], i, h[0]);
                          out.y[p] = cy;
                          out.z[p] = cz;
                          out.size[p] = h[0];
                        }
                        if (masses) {
                          const std::size_t e = e0 + std::size_t(i) * v.varStride;
                          const double rho = v.dtype == DType::Float32 ? double(static_cast<const float*>(v.density)[e])
                                                                       : static_cast<const double*>(v.density)[e];
                          out.mass[p] = blockCellMass(rho, h[0], h[1], h[2]);
                        }
                      }
                    }
                }
              });
}

namespace {

/// Interior cells of a block are contiguous in the field (no guard cells, no variable stride): whole blocks can
/// be copied at once.
bool blocksContiguous(const BlocksView& v) {
  return v.varStride == 1 && v.guard[0] == 0 && v.guard[1] == 0 && v.guard[2] == 0;
}

}  // namespace

void scatterRange(const BlocksView& v, const double* packed, std::size_t begin, std::size_t end, void* dst) {
  if (begin >= end) return;
  if (blocksContiguous(v)) {  // block by block (the identity layout: one run)
    const std::size_t cpb = v.cellsPerBlock();
    for (std::size_t p = begin; p < end;) {
      const std::size_t b = p / cpb, c = p % cpb, run = std::min(cpb - c, end - p);
      const std::size_t e0 = v.slotOf(b) * v.strideOfBlock() + c;
      if (v.dtype == DType::Float32) {
        float* d = static_cast<float*>(dst) + e0;
        for (std::size_t t = 0; t < run; ++t) d[t] = float(packed[p - begin + t]);
      } else {
        std::memcpy(static_cast<double*>(dst) + e0, packed + (p - begin), run * sizeof(double));
      }
      p += run;
    }
    return;
  }
  std::size_t b;
  int i, j, k;
  cellOf(v, begin, b, i, j, k);
  std::size_t p = begin;
  while (p < end) {
    const std::size_t s = v.slotOf(b);
    // the rest of this row
    const std::size_t e0 = v.element(s, i, j, k);
    const int run = int(std::min<std::size_t>(std::size_t(v.nxb - i), end - p));
    const double* src = packed + (p - begin);  // packed points at cell `begin`
    if (v.dtype == DType::Float32) {
      float* d = static_cast<float*>(dst) + e0;
      for (int t = 0; t < run; ++t) d[std::size_t(t) * v.varStride] = float(src[t]);
    } else if (v.varStride == 1) {
      std::memcpy(static_cast<double*>(dst) + e0, src, std::size_t(run) * sizeof(double));
    } else {
      double* d = static_cast<double*>(dst) + e0;
      for (int t = 0; t < run; ++t) d[std::size_t(t) * v.varStride] = src[t];
    }
    p += std::size_t(run);
    nextRun(v, run, b, i, j, k);
  }
}

void packRange(const BlocksView& v, std::size_t begin, std::size_t end, void* dst) {
  if (begin >= end) return;
  if (blocksContiguous(v)) {  // block by block (the identity layout: one run)
    const std::size_t cpb = v.cellsPerBlock(), es = dtypeBytes(v.dtype);
    for (std::size_t p = begin; p < end;) {
      const std::size_t b = p / cpb, c = p % cpb, run = std::min(cpb - c, end - p);
      std::memcpy(static_cast<char*>(dst) + (p - begin) * es,
                  static_cast<const char*>(v.density) + (v.slotOf(b) * v.strideOfBlock() + c) * es, run * es);
      p += run;
    }
    return;
  }
  std::size_t b;
  int i, j, k;
  cellOf(v, begin, b, i, j, k);
  std::size_t p = begin;
  const std::size_t es = dtypeBytes(v.dtype);
  char* out = static_cast<char*>(dst);
  while (p < end) {
    const std::size_t e0 = v.element(v.slotOf(b), i, j, k);
    const int run = int(std::min<std::size_t>(std::size_t(v.nxb - i), end - p));
    const char* src = static_cast<const char*>(v.density) + e0 * es;
    char* o = out + (p - begin) * es;
    if (v.varStride == 1) {
      std::memcpy(o, src, std::size_t(run) * es);
    } else if (es == 8) {
      for (int t = 0; t < run; ++t)
        reinterpret_cast<double*>(o)[t] = reinterpret_cast<const double*>(src)[std::size_t(t) * v.varStride];
    } else {
      for (int t = 0; t < run; ++t)
        reinterpret_cast<float*>(o)[t] = reinterpret_cast<const float*>(src)[std::size_t(t) * v.varStride];
    }
    p += std::size_t(run);
    nextRun(v, run, b, i, j, k);
  }
}

void scatterToBlocks(const BlocksView& v, const double* packed, void* dst, int threads) {
  const std::size_t n = v.cells();
  parallelFor(n, kChunk, threads, [&](std::size_t b, std::size_t e, int) { scatterRange(v, packed + b, b, e, dst); });
}

void BlockElements::assign(const BlocksView& v) {
  cellsPerBlock = std::max<std::size_t>(v.cellsPerBlock(), 1);
  inverse = 1.0 / double(cellsPerBlock);
  blockBase.resize(v.nBlocks);
  for (std::size_t b = 0; b < v.nBlocks; ++b) blockBase[b] = v.slotOf(b) * v.strideOfBlock();
  cellOffset.resize(cellsPerBlock);
  std::size_t c = 0;
  for (int k = 0; k < v.nzb; ++k)
    for (int j = 0; j < v.nyb; ++j)
      for (int i = 0; i < v.nxb; ++i) cellOffset[c++] = v.element(0, i, j, k);
}

std::size_t BlockElements::end() const {
  std::size_t base = 0, cell = 0;
  for (std::size_t b : blockBase) base = std::max(base, b);
  for (std::size_t c : cellOffset) cell = std::max(cell, c);
  return blockBase.empty() ? 0 : base + cell + 1;
}

bool BlockTreeKey::matches(const BlocksView& v, const SolveOptions& opt) const {
  if (!valid || v.meshChanged) return false;
  if (nBlocks != v.nBlocks || nxb != v.nxb || nyb != v.nyb || nzb != v.nzb) return false;
  if (leafSize != opt.leafSize || groupSize != opt.cellGroupSize() || hasBox != opt.hasBox) return false;
  for (int d = 0; d < 3; ++d)
    if (periodic[d] != opt.periodic[d]) return false;
  for (int d = 0; d < 3; ++d)
    if (hasBox && (std::memcmp(&boxLo[d], &opt.boxLo[d], sizeof(double)) != 0 ||
                   std::memcmp(&boxHi[d], &opt.boxHi[d], sizeof(double)) != 0))
      return false;
  const std::size_t bytes = 3 * v.nBlocks * sizeof(double);
  return std::memcmp(lo.data(), v.lo, bytes) == 0 && std::memcmp(dx.data(), v.dx, bytes) == 0;
}

void BlockTreeKey::assign(const BlocksView& v, const SolveOptions& opt) {
  nBlocks = v.nBlocks;
  nxb = v.nxb;
  nyb = v.nyb;
  nzb = v.nzb;
  lo.assign(v.lo, v.lo + 3 * v.nBlocks);
  dx.assign(v.dx, v.dx + 3 * v.nBlocks);
  leafSize = opt.leafSize;
  groupSize = opt.cellGroupSize();
  hasBox = opt.hasBox;
  for (int d = 0; d < 3; ++d) {
    periodic[d] = opt.periodic[d];
    boxLo[d] = opt.boxLo[d];
    boxHi[d] = opt.boxHi[d];
  }
  valid = true;
}

/// True when the caller's layout of a field is the packed one (float64, no guards, no strides, no block list): the
/// results can be written straight into it.
static bool packedLayout(const BlocksView& v) {
  return v.dtype == DType::Float64 && v.varStride == 1 && !v.blockIndex && v.guard[0] == 0 && v.guard[1] == 0 &&
         v.guard[2] == 0 && v.strideOfBlock() == v.cellsPerBlock();
}

Status solveBlocksViaCells(const BlocksView& v, const BlockOutputs& out, const SolveOptions& opt, SolveResult& result,
                           const std::function<Status(const CellsView&, SolveResult&)>& solve) {
  if (v.deviceData)
    return Status::error(ErrorCode::InvalidInput,
                         "the density and results are device pointers: the device entry needs the CUDA backend");
  const auto t0 = std::chrono::steady_clock::now();
  AG_TRY(validateOptions(opt));
  AG_TRY(validateBlocks(v, out, opt));
  const int threads = resolveThreadCount(opt.threads);
  GeneratedCells cells;
  generateBlockCells(v, threads, cells);
  const CellsView view = cells.view();
  const bool direct = packedLayout(v);
  SolveResult r;
  if (direct)
    r.into = ResultTargets{static_cast<double*>(out.potential), static_cast<double*>(opt.accelerations ? out.ax : nullptr),
                           static_cast<double*>(opt.accelerations ? out.ay : nullptr),
                           static_cast<double*>(opt.accelerations ? out.az : nullptr)};
  const Status st = solve(view, r);
  if (!st.ok()) return blocksStatus(v, st);
  if (!direct) {
    scatterToBlocks(v, r.potential.data(), out.potential, threads);
    if (opt.accelerations && !r.ax.empty()) {
      scatterToBlocks(v, r.ax.data(), out.ax, threads);
      scatterToBlocks(v, r.ay.data(), out.ay, threads);
      scatterToBlocks(v, r.az.data(), out.az, threads);
    }
  }
  result = SolveResult{};
  result.stats = r.stats;
  // the whole call: the cells made and the results scattered too
  result.stats.secondsTotal = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::success();
}

Status Backend::solveBlocks(const BlocksView& v, const BlockOutputs& out, const SolveOptions& opt,
                            SolveResult& result) {
  return solveBlocksViaCells(v, out, opt, result,
                             [&](const CellsView& c, SolveResult& r) { return solve(c, opt, r); });
}

}  // namespace amrgrav
