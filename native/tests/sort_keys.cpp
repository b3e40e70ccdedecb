/// \file sort_keys.cpp
/// \brief amrgrav_sort_keys: the Morton sort (tree/sort_keys.cpp) with several threads gives the one-thread
/// permutation, bit for bit: random 63-bit keys, keys with few distinct values (long runs of equal keys: stability),
/// keys in one digit per pass (skipped passes), and a mesh's cells through sortCellsByKey (keys, order and gathered
/// cells). The one-thread sort is also checked against std::stable_sort. CTest (label cpu).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "tests/check_report.h"
#include "tests/test_random.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::tests;

namespace {

void sorted(std::vector<std::uint64_t> k, int threads, std::vector<std::uint64_t>& keys, std::vector<std::uint32_t>& idx) {
  idx.resize(k.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::vector<std::uint64_t> kt;
  std::vector<std::uint32_t> it;
  stableSortByKey(k, idx, kt, it, threads);
  keys = std::move(k);
}

void keysCase(const std::string& name, const std::vector<std::uint64_t>& k) {
  std::vector<std::uint64_t> k1;
  std::vector<std::uint32_t> i1;
  sorted(k, 1, k1, i1);
  // the reference: std::stable_sort of the indices by key
  std::vector<std::uint32_t> ref(k.size());
  std::iota(ref.begin(), ref.end(), 0u);
  std::stable_sort(ref.begin(), ref.end(), [&](std::uint32_t a, std::uint32_t b) { return k[a] < k[b]; });
  check(name + "-1-thread", i1 == ref, "one thread against std::stable_sort, " + std::to_string(k.size()) + " keys");
  for (int t : {2, 3, 7, 16}) {
    std::vector<std::uint64_t> kt;
    std::vector<std::uint32_t> it;
    sorted(k, t, kt, it);
    check(name + "-" + std::to_string(t) + "-threads", kt == k1 && it == i1, "the one-thread permutation");
  }
}

}  // namespace

int main() {
  std::uint64_t s = 12345;
  const std::size_t n = 600000;  // several chunks of 2^16 keys per thread count
  std::vector<std::uint64_t> random(n), few(n), oneDigit(n);
  for (std::size_t i = 0; i < n; ++i) {
    random[i] = nextRandom(s);
    few[i] = nextRandom(s) % 37 * 0x0001000100010001ULL;  // 37 distinct keys in every digit: long equal runs
    oneDigit[i] = (nextRandom(s) & 0xffff) << 32;        // three passes of one digit each: skipped
  }
  keysCase("random", random);
  keysCase("few-distinct", few);
  keysCase("one-digit-passes", oneDigit);

  // a uniform 72^3 grid through sortCellsByKey: keys, order and the gathered cells equal for 1 and 4 threads
  const int g = 72;
  const std::size_t nc = std::size_t(g) * g * g;
  std::vector<double> x(nc), y(nc), z(nc), m(nc), h(nc, 1.0 / g);
  for (std::size_t i = 0; i < nc; ++i) {
    x[i] = (i % g + 0.5) / g;
    y[i] = (i / g % g + 0.5) / g;
    z[i] = (i / (std::size_t(g) * g) + 0.5) / g;
    m[i] = 1.0 + double(nextRandom(s) % 1000) / 1000.0;
  }
  const CellsView view{x.data(), y.data(), z.data(), m.data(), h.data(), nc};
  SolveOptions opt;
  SortedCells a, b;
  std::vector<std::uint64_t> ka, kb;
  RootCube ra = chooseRootCube(view, opt), rb = ra;
  const bool ok = sortCellsByKey(view, ra, a, ka, 0, false, 1).ok() && sortCellsByKey(view, rb, b, kb, 0, false, 4).ok();
  check("cells-72^3", ok && ka == kb && a.order == b.order && a.x == b.x && a.y == b.y && a.z == b.z &&
                          a.mass == b.mass && a.size == b.size,
        "sortCellsByKey with 4 threads: the one-thread keys, order and sorted cells");
  std::printf("== sort keys: %d checks, %d failed ==\n", gChecks, gFailed);
  return gFailed == 0 ? 0 : 1;
}
