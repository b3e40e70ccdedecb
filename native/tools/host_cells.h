/// \file host_cells.h
/// \brief Cells as five host arrays (x, y, z, mass, size), built one cell at a time, with the core's view of them:
/// the problems of the C++ checks, tests and timings.
#pragma once
#include <cstddef>
#include <vector>

#include "core/types.h"

namespace amrgrav::tools {

struct HostCells {
  std::vector<double> x, y, z, m, h;
  std::size_t size() const { return x.size(); }
  CellsView view() const { return CellsView{x.data(), y.data(), z.data(), m.data(), h.data(), x.size()}; }
  void push(double px, double py, double pz, double pm, double ph) {
    x.push_back(px); y.push_back(py); z.push_back(pz); m.push_back(pm); h.push_back(ph);
  }
};

}  // namespace amrgrav::tools
