/// \file vote.cpp
/// \brief Subject `vote`: the vote walk. Against direct summation (its lists differ from the box walk's, its
/// accuracy must be of the same order) and against the CPU's vote walk (the same lists: identical counts).
#include <algorithm>
#include <cstdio>
#include <string>

#include "tools/parity/harness.h"

namespace amrgrav::parity {

void runVote(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  Backend& cpu = *cx.cpu;
  const SolveOptions base = Context::base();
  const Cells& amr = cx.amr();
  auto vote = makeCudaBackend(cudaOpts(true, 4096, true));
  SolveOptions vbase = base;
  vbase.walk = WalkKind::Vote;
  const Cells d = subset(amr, std::min<std::size_t>(amr.size(), 60000));
  SolveResult ref, box, vt;
  const Status s0 = cpu.direct(d.view(), base, ref);
  const Status s1 = gpu.solve(d.view(), base, box);
  const Status s2 = vote->solve(d.view(), vbase, vt);
  if (s0.ok() && s1.ok() && s2.ok()) {
    const Diff eb = compare(ref, box, true), ev = compare(ref, vt, true);
    char js[1024];
    std::snprintf(js, sizeof js,
                  "{\"kind\":\"vote\",\"cells\":%zu,\"boxErrPot\":%s,\"voteErrPot\":%s,\"boxErrAccRms\":%s,"
                  "\"voteErrAccRms\":%s,\"boxApprox\":%llu,\"voteApprox\":%llu,\"boxDirect\":%llu,\"voteDirect\":%llu}",
                  d.size(), num(eb.pot).c_str(), num(ev.pot).c_str(), num(eb.accRms).c_str(), num(ev.accRms).c_str(),
                  (unsigned long long)box.stats.approxInteractions, (unsigned long long)vt.stats.approxInteractions,
                  (unsigned long long)box.stats.directInteractions, (unsigned long long)vt.stats.directInteractions);
    cx.report.note(js, "# vote vs box walk, " + std::to_string(d.size()) + " cells: approx " +
                           std::to_string(vt.stats.approxInteractions) + " vs " +
                           std::to_string(box.stats.approxInteractions) + ", direct " +
                           std::to_string(vt.stats.directInteractions) + " vs " +
                           std::to_string(box.stats.directInteractions));
    // vote accepts at least what the box accepts (each cell is inside the box), so its error is at most comparable
    check(cx, "vote-walk-accuracy", ev.finite && ev.pot < 1e-2 && ev.accRms < 1e-1,
          "vs direct: pot " + num(ev.pot) + " (box " + num(eb.pot) + "), acc/rms " + num(ev.accRms) + " (box " +
              num(eb.accRms) + ")");
  } else {
    check(cx, "vote-walk-accuracy", false, !s0.ok() ? s0.message : (!s1.ok() ? s1.message : s2.message));
  }
  // the CPU walk implements the same vote: identical lists, so counts must match
  parityCase(cx, "vote-vs-cpu-vote", d, vbase, *vote, 1e-5, false, true);
}

}  // namespace amrgrav::parity
