/// \file fmm_ranks.cpp
/// \brief Subject `fmm-ranks`: the distributed FMM (cpu/fmm_ranks.h) with each rank's own lists evaluated on the GPU
/// (cuda/fmm_rank_phase.cu: the host's tree, lists and near tiles put on the device; the received LETs' M2L and the
/// far images in the host's L, which goes up as the device's initial L; the received LETs' near field added to the
/// device's sums), ranks as threads of this process (tools/thread_ranks.h), each with a device state of its own on
/// this device. Against the same split on CPU ranks (the same pairs: potentials within 1e-12 of max |phi|,
/// accelerations within 1e-11 of their rms), against the GPU's one-process FMM (likewise), every rank's share on
/// the GPU, two runs bitwise equal. Cases: random densities on a uniform grid (--uniform) and the clustered AMR set
/// (a subset of 40000 cells), isolated and fully periodic, in slabs of the cells' order (2 ranks), scattered at
/// random (3 ranks), and with a rank without cells (3 ranks). What mpirun adds (the MPI exchange, several processes
/// on one GPU) is device-check.sh step fmmmpi's.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tools/parity/harness.h"
#include "tools/thread_ranks.h"

namespace amrgrav::parity {
namespace {

constexpr double kPotTol = 1e-12;  // of max |phi| (periodic potentials cross zero)
constexpr double kAccTol = 1e-11;  // of the rms acceleration

SolveOptions rankOptions(bool periodic) {
  SolveOptions o;
  o.method = SolveMethod::Fmm;
  o.accelerations = true;
  o.threads = 1;  // per rank (thread)
  return periodicBox(o, periodic, periodic, periodic);  // the box [0, 1 kpc)^3, isolated or fully periodic
}

std::vector<int> split(std::size_t n, int ranks, const std::string& how) {
  std::vector<int> owner(n);
  std::mt19937_64 rng(23);
  for (std::size_t i = 0; i < n; ++i) {
    if (how == "scattered") owner[i] = int(rng() % std::uint64_t(ranks));
    else if (how == "empty-rank") owner[i] = i < n / 2 ? 0 : 2;  // rank 1 of 3 without cells
    else owner[i] = int(i * std::size_t(ranks) / n);
  }
  return owner;
}

void rankCase(Context& cx, const std::string& name, const Cells& cells, bool periodic, int ranks,
              const std::string& how) {
  const std::string label = "fmm-ranks-" + name + (periodic ? "-periodic-" : "-isolated-") + how + "-" +
                            std::to_string(ranks);
  const SolveOptions opt = rankOptions(periodic);
  const std::vector<int> owner = split(cells.size(), ranks, how);
  const int device = cx.gpu->cudaOptions().device;
  SolveResult gpu, again, cpu, one;
  std::vector<SolveStats> gs, gs2, cs;
  const auto onGpu = [&](int) { return gpuRankLocal(device); };
  const auto t = Clock::now();
  const Status s1 = tools::solveOnThreadRanks(cells, owner, ranks, opt, onGpu, gpu, gs);
  const double seconds = since(t);
  const Status s2 = tools::solveOnThreadRanks(cells, owner, ranks, opt, onGpu, again, gs2);
  const Status s3 = tools::solveOnThreadRanks(cells, owner, ranks, opt, [](int) { return makeCpuFmmRankLocal(); },
                                              cpu, cs);
  SolveOptions single = opt;
  single.threads = 0;
  const Status s4 = cx.gpu->solve(cells.view(), single, one);
  const Status* bad = !s1.ok() ? &s1 : !s2.ok() ? &s2 : !s3.ok() ? &s3 : !s4.ok() ? &s4 : nullptr;
  if (bad) {
    check(cx, label, false, "solve failed: " + bad->message);
    return;
  }
  const Diff vsCpu = compare(cpu, gpu, true), vsOne = compare(one, gpu, true);
  bool onDevice = true;
  std::uint64_t bytes = 0;
  for (int r = 0; r < ranks; ++r) {
    const DistributedStats& d = gs[std::size_t(r)].distributed;
    const bool hasCells = std::count(owner.begin(), owner.end(), r) > 0;
    onDevice = onDevice && std::string(d.backend) == "cuda";
    // the same LETs as the CPU ranks send (chosen on the host from the same tree)
    onDevice = onDevice && d.bytesSent == cs[std::size_t(r)].distributed.bytesSent && (hasCells || d.letsSent == 0);
    bytes += d.bytesSent;
  }
  const bool ok = vsCpu.finite && vsOne.finite && vsCpu.potOfMax <= kPotTol && vsCpu.accRms <= kAccTol &&
                  vsOne.potOfMax <= kPotTol && vsOne.accRms <= kAccTol && onDevice && bitwiseEqual(gpu, again);
  check(cx, label, ok,
        std::to_string(cells.size()) + " cells on " + std::to_string(ranks) + " GPU ranks (threads): vs CPU ranks pot " +
            num(vsCpu.potOfMax) + " of max, acc " + num(vsCpu.accRms) + " of rms; vs one GPU process pot " +
            num(vsOne.potOfMax) + ", acc " + num(vsOne.accRms) + "; " + (onDevice ? "every rank on the GPU, " : "NOT every rank on the GPU or LET bytes differ from the CPU ranks', ") +
            std::to_string(bytes) + " LET bytes sent; two runs " + (bitwiseEqual(gpu, again) ? "bitwise equal" : "DIFFER") +
            "; " + ms(seconds));
}

}  // namespace

void runFmmRanks(Context& cx) {
  const Cells random = randomDensityGrid(cx.args.uniform, cx.args.seed);
  const Cells amr = subset(cx.amr(), 40000);
  const std::string g = "grid" + std::to_string(cx.args.uniform);
  for (bool periodic : {false, true}) {
    rankCase(cx, g, random, periodic, 2, "slabs");
    rankCase(cx, g, random, periodic, 3, "scattered");
    rankCase(cx, "amr", amr, periodic, 3, "scattered");
    rankCase(cx, "amr", amr, periodic, 3, "empty-rank");
  }
}

}  // namespace amrgrav::parity
