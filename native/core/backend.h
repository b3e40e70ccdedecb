/// \file backend.h
/// \brief The one interface every backend (CPU threads, CUDA) implements with the same semantics.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "core/blocks.h"
#include "core/status.h"
#include "core/system.h"
#include "core/types.h"

namespace amrgrav {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  /// Tree solve: potential (and accelerations) of all cells, in the caller's order.
  virtual Status solve(const CellsView& cells, const SolveOptions& opt, SolveResult& out) = 0;
  /// O(N^2) direct summation with the same self term: the reference the tree is measured against.
  virtual Status direct(const CellsView& cells, const SolveOptions& opt, SolveResult& out) = 0;
  /// Block solve (core/blocks.h): the potential (and accelerations) of the blocks' cells written into `out` in the
  /// density's layout and dtype; result.stats says how it went (its vectors stay empty). Bitwise the result of
  /// solve() on the cells generateBlockCells makes of the same blocks. The default generates those cells on the host,
  /// calls solve() and scatters (host data only); the CPU and CUDA backends override it and keep the tree between
  /// calls on an unchanged mesh (stats.treeReused).
  virtual Status solveBlocks(const BlocksView& blocks, const BlockOutputs& out, const SolveOptions& opt,
                             SolveResult& result);
  /// A system solve (core/system.h): the cells, probes and an optional subset of target cells in one solve, each kind's
  /// results in its own order. The cells' results equal solve()'s (bitwise; at the targets when a subset is given).
  /// direct: O(N^2) sums over the cells at every target (isolated boxes), the reference for the tree.
  virtual Status solveSystem(const SystemView& system, const SolveOptions& opt, bool direct, SystemResult& out) = 0;
};

/// The default solveBlocks over any cell solve (`solve`: a backend's solve, or a distributed one): checks, the
/// cells generated on the host (opt.threads), solve, the results scattered into `out`, errors in the blocks' words.
Status solveBlocksViaCells(const BlocksView& blocks, const BlockOutputs& out, const SolveOptions& opt,
                           SolveResult& result,
                           const std::function<Status(const CellsView&, SolveResult&)>& solve);

std::unique_ptr<Backend> makeCpuBackend();

}  // namespace amrgrav
