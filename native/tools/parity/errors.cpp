/// \file errors.cpp
/// \brief Subject `errors`: inputs and options the backends refuse, and edge inputs. Duplicate and coincident cells,
/// non-finite or negative values, cells outside the box (checked on the device and on the host) must give the CUDA
/// backend the CPU backend's error code and message; bad options and direct summation in a periodic box are
/// refused; an empty input gives an empty result.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tools/parity/harness.h"

namespace amrgrav::parity {

void runErrors(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  Backend& cpu = *cx.cpu;
  const SolveOptions base = Context::base();
  const Cells& amr = cx.amr();

  // coincident cells (duplicates) would ignore each other: both backends refuse them with the same message
  auto sameRefusal = [&](const std::string& name, const Cells& cells) {
    SolveResult rc, rg;
    const Status sc = cpu.solve(cells.view(), base, rc), sg = gpu.solve(cells.view(), base, rg);
    check(cx, name, !sc.ok() && !sg.ok() && sc.code == ErrorCode::InvalidInput && sg.message == sc.message,
          "cpu: " + (sc.ok() ? std::string("accepted") : sc.message) + " | cuda: " +
              (sg.ok() ? std::string("accepted") : sg.message));
  };
  {
    Cells dup = subset(amr, std::min<std::size_t>(amr.size(), 20000));
    const std::size_t k = dup.size();
    for (std::size_t i = 0; i < k; i += 7) dup.push(dup.x[i], dup.y[i], dup.z[i], dup.m[i] * 0.5, dup.h[i]);
    sameRefusal("duplicates-refused", dup);
  }
  // all cells in one key (same position): a level-21 leaf with more than leafSize cells
  {
    Cells same;
    for (int i = 0; i < 50; ++i) same.push(1.0, 2.0, 3.0, 1.0 + i, 0.1);
    same.push(5.0, 2.0, 3.0, 1.0, 0.1);
    sameRefusal("coincident-50-refused", same);
  }
  // empty input
  {
    Cells none;
    SolveResult r;
    const Status st = gpu.solve(none.view(), base, r);
    check(cx, "empty-input", st.ok() && r.potential.empty(), st.ok() ? "ok" : st.message);
  }
  // invalid cells: the same error code and message as the CPU backend (device-side checks, host messages)
  {
    struct Bad { const char* name; int field; std::size_t cell; double value; };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const Bad bads[] = {{"nan-x", 0, 5, nan},        {"inf-z", 2, 7, INFINITY},     {"negative-mass", 3, 3, -1.0},
                        {"nan-mass", 3, 9, nan},     {"zero-size", 4, 2, 0.0},      {"negative-size", 4, 8, -1.0},
                        {"two-bad-cells", 3, 1, -2.0}};
    for (const Bad& b : bads) {
      Cells c = subset(amr, 1000);
      std::vector<double>* f[5] = {&c.x, &c.y, &c.z, &c.m, &c.h};
      (*f[b.field])[b.cell] = b.value;
      if (std::string(b.name) == "two-bad-cells") c.h[600] = -3.0;
      SolveResult r1, r2;
      const Status sc = cpu.solve(c.view(), base, r1), sg = gpu.solve(c.view(), base, r2);
      check(cx, std::string("invalid-") + b.name, !sc.ok() && sc.code == sg.code && sc.message == sg.message,
            "cpu: " + sc.message + " | cuda: " + sg.message);
    }
    SolveOptions o = base;
    o.hasBox = true;
    for (int d = 0; d < 3; ++d) { o.boxLo[d] = 0.1 * kKpc; o.boxHi[d] = 0.9 * kKpc; }
    SolveResult r1, r2;
    const Status sc = cpu.solve(amr.view(), o, r1), sg = gpu.solve(amr.view(), o, r2);
    check(cx, "invalid-outside-box", !sc.ok() && sc.code == sg.code && sc.message == sg.message,
          "cpu: " + sc.message + " | cuda: " + sg.message);
    // the cells checked on the host (validateOnDevice off) instead of in the bounds kernel
    auto hostCheck = makeCudaBackend(cudaOpts(true, 4096, false, 0, false));
    Cells c = subset(amr, 1000);
    c.m[4] = -1;
    const Status sh = hostCheck->solve(c.view(), base, r2), sc2 = cpu.solve(c.view(), base, r1);
    check(cx, "invalid-host-validation", !sh.ok() && sh.message == sc2.message, sh.message);
  }
  // bad options
  {
    SolveOptions o = base;
    o.groupSize = 65;
    SolveResult r;
    const Status st = gpu.solve(amr.view(), o, r);
    check(cx, "groupSize-65-rejected", st.code == ErrorCode::InvalidOption, st.message);
    o = base;
    o.theta = 0;
    const Status st2 = gpu.solve(amr.view(), o, r);
    check(cx, "theta-0-rejected", st2.code == ErrorCode::InvalidOption, st2.message);
    Cells bad = subset(amr, 10);
    bad.m[3] = -1;
    const Status st3 = gpu.solve(bad.view(), base, r);
    check(cx, "negative-mass-rejected", st3.code == ErrorCode::InvalidInput, st3.message);
    SolveResult rp;
    const Status st4 = gpu.direct(cx.uniform().view(), periodicBox(base, true, true, true), rp);
    check(cx, "direct-periodic-refused", st4.code == ErrorCode::InvalidOption, st4.message);
  }
}

}  // namespace amrgrav::parity
