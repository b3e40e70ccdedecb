/// \file backend.h
/// \brief The one interface every backend (CPU threads, CUDA) implements with the same semantics.
#pragma once
#include <memory>
#include <string>

#include "core/status.h"
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
};

std::unique_ptr<Backend> makeCpuBackend();

}  // namespace amrgrav
