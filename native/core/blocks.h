/// \file blocks.h
/// \brief The block entry's input (issue #17): the leaf blocks of a block-structured AMR mesh (FLASH/PARAMESH
/// style) as a plain struct of arrays, the one formula that turns a block's cell into a tree cell, and the host
/// helpers every backend's block solve shares (checks, cell generation, results back into the caller's layout).
///
/// Layout of a per-cell field over the blocks (the density, and the results in the same layout): block b of the
/// view is stored at slot s = blockIndex ? blockIndex[b] : b; interior cell (i, j, k) of it (0-based, i fastest) is
/// element
///     s * blockStride + varStride * (((k + gz) * NY + (j + gy)) * NX + (i + gx)),   N? = n?b + 2 g?
/// of the field's pointer, in its dtype (float64 or float32). A plain array of interior cells is varStride 1, no
/// guard cells; FLASH's unk(nvar, NX, NY, NZ, maxblocks) is varStride = nvar, the pointer &unk(VAR, 1, 1, 1, 1),
/// blockIndex the leaf list (0-based). Guard cells are never read nor written.
///
/// Cell (i, j, k) of block b: centre x = lo + (i + 0.5) dx (likewise y, z), size = dx, mass = rho (dx dy dz):
/// blockCell*() below, used by the CPU backend, the CUDA kernels (kernel_blocks.cu) and the tests' reference. The
/// tree's cells are cubes: dy and dz must equal dx within 1e-12 relative (the size is dx).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/hostdevice.h"
#include "core/status.h"
#include "core/types.h"

namespace amrgrav {

/// The caller's number type of a block field (density and results alike).
enum class DType : int { Float64 = 0, Float32 = 1 };

inline std::size_t dtypeBytes(DType t) { return t == DType::Float32 ? 4 : 8; }

/// Relative tolerance of the cubic-cell check (|dy - dx| and |dz - dx| at most this times dx).
constexpr double kCubicTolerance = 1e-12;

/// Borrowed view of the caller's leaf blocks and their density (see the file's comment for the layout).
struct BlocksView {
  std::size_t nBlocks = 0;
  int nxb = 0, nyb = 0, nzb = 0;   ///< interior cells per block along x, y, z
  int guard[3] = {0, 0, 0};        ///< guard cells per side along x, y, z (0 allowed)
  const double* lo = nullptr;      ///< 3 per block: the lower corner of the block's interior (cm)
  const double* dx = nullptr;      ///< 3 per block: the cell widths dx, dy, dz (cm)
  const std::int32_t* blockIndex = nullptr;  ///< optional: the storage slot of block b (null: b)
  const void* density = nullptr;   ///< g/cm^3, caller's layout; a device pointer when deviceData
  DType dtype = DType::Float64;
  std::size_t varStride = 1;       ///< elements between neighbouring cells (unk: nvar)
  std::size_t blockStride = 0;     ///< elements between block slots; 0: varStride * NX * NY * NZ
  /// density and results are device pointers (CUDA backend only; lo, dx and blockIndex stay host arrays).
  bool deviceData = false;
  void* stream = nullptr;          ///< deviceData: the caller's cudaStream_t (null: the legacy default stream)
  /// The caller says the mesh changed since the last call: rebuild the tree without comparing the geometry.
  /// (false: the geometry is compared with the last call's, and the tree is kept only when it is equal.)
  bool meshChanged = false;

  std::size_t cellsPerBlock() const { return std::size_t(nxb) * std::size_t(nyb) * std::size_t(nzb); }
  std::size_t cells() const { return nBlocks * cellsPerBlock(); }
  int nx() const { return nxb + 2 * guard[0]; }
  int ny() const { return nyb + 2 * guard[1]; }
  int nz() const { return nzb + 2 * guard[2]; }
  std::size_t strideOfBlock() const {
    return blockStride ? blockStride : varStride * std::size_t(nx()) * std::size_t(ny()) * std::size_t(nz());
  }
  std::size_t slotOf(std::size_t b) const { return blockIndex ? std::size_t(blockIndex[b]) : b; }
  /// The element of interior cell (i, j, k) of the block stored at slot s.
  std::size_t element(std::size_t s, int i, int j, int k) const {
    return s * strideOfBlock() +
           varStride * ((std::size_t(k + guard[2]) * std::size_t(ny()) + std::size_t(j + guard[1])) * std::size_t(nx()) +
                        std::size_t(i + guard[0]));
  }
};

/// Where a block solve writes its results: the density's layout and dtype (guard cells untouched), each a pointer
/// like BlocksView::density (device pointers with deviceData). ax, ay, az only with accelerations.
struct BlockOutputs {
  void* potential = nullptr;
  void* ax = nullptr;
  void* ay = nullptr;
  void* az = nullptr;
};

// ---- the one formula (host and device)

/// Centre of cell i of a block along one axis: lo + (i + 0.5) dx, each operation rounded on its own (no FMA: the
/// CUDA kernel and the host give the same bits, and the same as the TypeScript mesh's cells).
AG_HD double blockCellCentre(double lo, int i, double dx) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(lo, __dmul_rn(__dadd_rn(double(i), 0.5), dx));
#else
  const volatile double h = (double(i) + 0.5) * dx;  // volatile: no contraction into an FMA whatever the flags
  return lo + h;
#endif
}

/// Mass of a cell of density rho: rho (dx dy dz), the volume as (dx dy) dz.
AG_HD double blockCellMass(double rho, double dx, double dy, double dz) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(rho, __dmul_rn(__dmul_rn(dx, dy), dz));
#else
  return rho * (dx * dy * dz);
#endif
}

// ---- host helpers (core/blocks.cpp)

/// The view's shape, pointers and geometry: InvalidInput naming the block (NULL pointers, zero sizes, NaN or
/// infinite corners and widths, non-positive widths, non-cubic cells, cells outside the box, a negative block
/// index), InvalidOption for strides that make blocks overlap. The densities are checked with the generated cells
/// (validateCells' rules; blockCellError names the block and cell). Also checks `out` (NULL potential; ax, ay, az
/// with accelerations).
Status validateBlocks(const BlocksView& v, const BlockOutputs& out, const SolveOptions& opt);

/// The fewest elements a field array of this layout must have: the last interior element of the highest slot the
/// view names, plus one (0 without blocks). Front ends whose arrays carry their length check it (call after
/// validateBlocks: negative slots are refused there).
std::size_t blockFieldElements(const BlocksView& v);

/// Reads the density of cell p of the view (blocks in order, i fastest) from host memory.
double blockDensity(const BlocksView& v, std::size_t p);

/// "block b (slot s), cell (i, j, k)" for cell p (blocks in order, i fastest inside a block).
std::string blockCellName(const BlocksView& v, std::size_t p);

/// A cell-path Status about cell p (or cells a and b) rewritten in the blocks' words ("cell 17: mass ..." ->
/// "block 0 (slot 0), cell (1, 2, 0): density ..."); other messages are returned as they are. rho: cell p's density
/// when the caller knows it (device data), else it is read from the host density.
Status blocksStatus(const BlocksView& v, const Status& cellStatus, const double* rho = nullptr);

/// The cells of the view into host arrays (x, y, z, mass, size; n = v.cells()), on `threads` threads.
/// The density is read from host memory (not deviceData).
struct GeneratedCells {
  std::vector<double> x, y, z, mass, size;
  CellsView view() const { return CellsView{x.data(), y.data(), z.data(), mass.data(), size.data(), x.size()}; }
};
void generateBlockCells(const BlocksView& v, int threads, GeneratedCells& out, bool geometry = true,
                        bool masses = true);

/// Packed results (cells in order, i fastest) into the caller's layout and dtype, on `threads` threads.
void scatterToBlocks(const BlocksView& v, const double* packed, void* dst, int threads);
/// Cells [begin, end) of the packed results into the caller's layout (a chunk of scatterToBlocks); `packed` points
/// at cell `begin`'s result.
void scatterRange(const BlocksView& v, const double* packed, std::size_t begin, std::size_t end, void* dst);
/// Densities of cells [begin, end) packed into `dst` (contiguous, the view's dtype).
void packRange(const BlocksView& v, std::size_t begin, std::size_t end, void* dst);

/// Every cell's element in the caller's layout as two tables, for results that come in another order than the
/// blocks' (the CUDA backend's host entry scatters the walk's sorted results with it, cuda/blocks_phase.cu): the
/// element of cell p (blocks in order) is blockBase[p / cells per block] + cellOffset[p % cells per block].
struct BlockElements {
  std::vector<std::size_t> blockBase;   ///< per block: its slot times the block stride
  std::vector<std::size_t> cellOffset;  ///< per cell of a block: varStride (((k + gz) NY + j + gy) NX + i + gx)
  std::size_t cellsPerBlock = 1;
  double inverse = 1;  ///< 1 / cellsPerBlock: the block of a cell by a product, corrected to the exact quotient

  void assign(const BlocksView& v);
  /// The same elements for every cell (the same layout)?
  bool sameAs(const BlockElements& o) const {
    return cellsPerBlock == o.cellsPerBlock && blockBase == o.blockBase && cellOffset == o.cellOffset;
  }
  /// One past the largest element.
  std::size_t end() const;
  std::size_t of(std::size_t p) const {
    std::size_t b = std::size_t(double(p) * inverse);  // within one of p / cellsPerBlock (p < 2^53)
    if (b * cellsPerBlock > p) --b;
    else if ((b + 1) * cellsPerBlock <= p) ++b;
    return blockBase[b] + cellOffset[p - b * cellsPerBlock];
  }
};

/// What decides the tree of a block solve: the geometry and the options the keys, the tree and the groups depend
/// on. Two calls with equal keys have the same cells in the same order, hence the same sort, tree and groups.
struct BlockTreeKey {
  std::size_t nBlocks = 0;
  int nxb = 0, nyb = 0, nzb = 0;
  std::vector<double> lo, dx;
  int leafSize = 0, groupSize = 0;  ///< groupSize: the cells' groups as solved (SolveOptions::cellGroupSize)
  bool hasBox = false;
  bool periodic[3] = {false, false, false};  ///< the root cube and the groups follow the boundaries
  double boxLo[3] = {0, 0, 0}, boxHi[3] = {0, 0, 0};
  bool valid = false;

  /// True when the view and options give the tree this key was taken from (bitwise equal geometry).
  bool matches(const BlocksView& v, const SolveOptions& opt) const;
  void assign(const BlocksView& v, const SolveOptions& opt);
};

}  // namespace amrgrav
