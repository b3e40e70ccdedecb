/// \file block_elements.cpp
/// \brief amrgrav_block_elements: core/blocks.h BlockElements (each cell's element in the caller's layout from two
/// tables and a division by a product: how the CUDA host block entry scatters its sorted results) against
/// BlocksView::element, the layout's definition, for every cell of small layouts (cells per block not a power of
/// two, guard cells, several variables, an explicit block stride, permuted slots) and, in a layout of 2^21 blocks of
/// 10^3 cells, at the cells around every 97th block boundary and the last ones (cell indices up to 2^31: the
/// division's correction). Prints one line per case and a summary; exits 1 on any failure. CTest (label cpu).
#include <cstdio>
#include <string>
#include <vector>

#include "core/blocks.h"
#include "tests/check_report.h"

using namespace amrgrav;
using namespace amrgrav::tests;

namespace {

struct Layout {
  std::string name;
  int nxb, nyb, nzb, guard, vars;
  std::size_t nBlocks, blockStride;
  bool permuted;
};

BlocksView viewOf(const Layout& l, std::vector<std::int32_t>& slots) {
  BlocksView v;
  v.nBlocks = l.nBlocks;
  v.nxb = l.nxb;
  v.nyb = l.nyb;
  v.nzb = l.nzb;
  for (int d = 0; d < 3; ++d) v.guard[d] = l.guard;
  v.varStride = std::size_t(l.vars);
  v.blockStride = l.blockStride;
  slots.resize(l.nBlocks);
  for (std::size_t b = 0; b < l.nBlocks; ++b) slots[b] = std::int32_t(l.permuted ? l.nBlocks - 1 - b : b);
  v.blockIndex = slots.data();
  return v;
}

/// The element of cell p by the layout's definition (core/blocks.h): block p / cells, then i fastest.
std::size_t reference(const BlocksView& v, std::size_t p) {
  const std::size_t cpb = v.cellsPerBlock(), b = p / cpb;
  std::size_t c = p % cpb;
  const int i = int(c % std::size_t(v.nxb));
  c /= std::size_t(v.nxb);
  const int j = int(c % std::size_t(v.nyb)), k = int(c / std::size_t(v.nyb));
  return v.element(v.slotOf(b), i, j, k);
}

void checkAll(const Layout& l) {
  std::vector<std::int32_t> slots;
  const BlocksView v = viewOf(l, slots);
  BlockElements e;
  e.assign(v);
  std::size_t bad = 0, first = 0;
  for (std::size_t p = 0; p < v.cells(); ++p)
    if (e.of(p) != reference(v, p) && bad++ == 0) first = p;
  check("every-cell-" + l.name, bad == 0,
        bad == 0 ? std::to_string(v.cells()) + " cells" : std::to_string(bad) + " wrong, first cell " + std::to_string(first));
}

}  // namespace

int main() {
  const Layout small[] = {
      {"6x4x5-guard2-vars2-permuted", 6, 4, 5, 2, 2, 37, 0, true},
      {"8x8x8-plain", 8, 8, 8, 0, 1, 20, 0, false},
      {"1x1x1", 1, 1, 1, 0, 1, 50, 0, false},
      {"3x7x5-guard1-stride", 3, 7, 5, 1, 3, 11, 3 * 5 * 9 * 7 + 13, true},
      {"16x1x3-guard4-vars8", 16, 1, 3, 4, 8, 9, 0, true},
  };
  for (const Layout& l : small) checkAll(l);

  // cell indices up to 2^31: the quotient's correction at every block boundary sampled
  const Layout big{"10x10x10-2^21-blocks", 10, 10, 10, 0, 1, std::size_t(1) << 21, 0, true};
  std::vector<std::int32_t> slots;
  const BlocksView v = viewOf(big, slots);
  BlockElements e;
  e.assign(v);
  std::size_t bad = 0, tried = 0, first = 0;
  const std::size_t cpb = v.cellsPerBlock(), n = v.cells();
  auto probe = [&](std::size_t p) {
    if (p >= n) return;
    ++tried;
    if (e.of(p) != reference(v, p) && bad++ == 0) first = p;
  };
  for (std::size_t b = 1; b < big.nBlocks; b += 97)
    for (std::size_t d = 0; d < 3; ++d) probe(b * cpb - 1 + d);
  for (std::size_t p = n - 3 * cpb; p < n; ++p) probe(p);
  check("block-boundaries-" + big.name, bad == 0,
        bad == 0 ? std::to_string(tried) + " cells up to " + std::to_string(n - 1)
                 : std::to_string(bad) + " wrong, first cell " + std::to_string(first));

  std::printf("%d checks, %d failed\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
