/// \file fmm_lists.cpp
/// \brief Subject `fmm-lists`: the FMM's interaction lists built on the device (cuda/fmm_lists_phase.h, issue #20's
/// first host phase moved) against the CPU's buildInteractionLists (fmm/interaction_lists.h) on the same host-built
/// tree: every array equal (the M2L CSR's starts and sources, the P2P pairs) and the same directed counts. Trees: a
/// uniform grid (--uniform), the clustered AMR-like set (--amr) and a Plummer sphere of points, each at orders 3..7
/// and tolerance 0 and 2e-4 (the default), and with accelerations (the MAC's acceleration rule, physics/fmm_mac_k.h
/// test 3: trees built for accelerations at the default fmmAccelTolerance, orders 5 and 7), then a grid four times
/// finer (128^3 by default) whose device and host times are noted. Then method 'fmm' with CudaOptions::fmmDeviceLists: the results bitwise those of the host's
/// lists (the same lists, the same deterministic evaluation) and within the fmm subject's tolerances of the CPU
/// backend, with the same counts.
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "fmm/dual_walk.h"
#include "fmm/fmm_tree.h"
#include "fmm/interaction_lists.h"
#include "tools/fmm_host_tree.h"
#include "tools/parity/harness.h"

namespace amrgrav::parity {
namespace {

/// The device's lists vs the host's on one tree (noteTimes: both walks' times noted beside the check).
void listsCase(Context& cx, CudaBackend& gpu, const std::string& name, const fmm::FmmTree& tree, double tolerance,
               bool noteTimes) {
  fmm::FmmLists host, dev;
  const auto th = Clock::now();
  fmm::buildInteractionLists(tree, tolerance, resolveThreadCount(0), host);
  const double hostSeconds = since(th);
  double devSeconds = 0;
  const auto tw = Clock::now();
  const Status st = gpu.fmmDeviceLists(tree, tolerance, dev, &devSeconds);
  const double wallSeconds = since(tw);
  if (!st.ok()) {
    check(cx, name, false, "device lists failed: " + st.message);
    return;
  }
  const std::string diff = fmm::listsDifference(host, dev);
  // (--quick's small trees may have no M2L at all: then only the P2P pairs are compared, which the detail says)
  check(cx, name, diff.empty(),
        (diff.empty() ? std::string("device lists = host lists, every array: ") : diff) +
            std::to_string(tree.nodeCount()) + " nodes, " + std::to_string(host.directedM2L) + " directed M2L, " +
            std::to_string(host.p2pA.size()) + " P2P pairs, " + std::to_string(host.directedP2P) +
            " directed cell pairs");
  if (noteTimes)
    cx.report.note("{\"kind\":\"fmm_lists_time\",\"case\":\"" + name + "\",\"nodes\":" +
                       std::to_string(tree.nodeCount()) + ",\"host_s\":" + num(hostSeconds) + ",\"device_s\":" +
                       num(devSeconds) + ",\"device_wall_s\":" + num(wallSeconds) + "}",
                   "# " + name + ": host walk " + ms(hostSeconds) + " (all threads), device " + ms(devSeconds) +
                       " (events: MAC up, walk, sorts, CSR), " + ms(wallSeconds) +
                       " with the tree's upload and the whole lists' download");
}

void meshCases(Context& cx, CudaBackend& gpu, const std::string& mesh, const Cells& cells, bool points) {
  for (int p = 3; p <= 7; ++p) {
    fmm::FmmTree tree;
    const Status st = hostFmmTree(cells, p, points, tree);
    if (!st.ok()) {
      check(cx, "fmm-lists-" + mesh + "-p" + std::to_string(p), false, "host tree failed: " + st.message);
      continue;
    }
    for (const double tol : {0.0, 2e-4})
      listsCase(cx, gpu, "fmm-lists-" + mesh + "-p" + std::to_string(p) + (tol > 0 ? "-tol2e-4" : "-tol0"), tree,
                tol, false);
  }
}

/// The acceleration rule: a tree built for accelerations (FmmTree::accelLimit > 0), the device's lists against the
/// host's, with and without the potential's error test.
void accelCases(Context& cx, CudaBackend& gpu, const std::string& mesh, const Cells& cells, bool points) {
  SolveOptions opt;
  opt.method = SolveMethod::Fmm;
  opt.accelerations = true;
  if (points) opt.selfPotential = SelfPotential::None;
  for (const int p : {5, 7}) {
    opt.fmmOrder = p;
    const tools::HostFmmTree t = tools::hostFmmTree(cells, opt, points, resolveThreadCount(0));
    const std::string name = "fmm-lists-" + mesh + "-accel-p" + std::to_string(p);
    if (!t.status.ok() || !(t.tree.accelLimit > 0)) {
      check(cx, name, false, t.status.ok() ? "the tree has no acceleration limit" : "host tree failed: " + t.status.message);
      continue;
    }
    for (const double tol : {0.0, 2e-4}) listsCase(cx, gpu, name + (tol > 0 ? "-tol2e-4" : "-tol0"), t.tree, tol, false);
  }
}

}  // namespace

void runFmmLists(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const int n = cx.args.uniform;
  meshCases(cx, gpu, "grid" + std::to_string(n), cx.uniform(), false);
  meshCases(cx, gpu, "amr", cx.amr(), false);
  meshCases(cx, gpu, "plummer", cx.plummer(), true);
  accelCases(cx, gpu, "grid" + std::to_string(n), cx.uniform(), false);
  accelCases(cx, gpu, "amr", cx.amr(), false);
  accelCases(cx, gpu, "plummer", cx.plummer(), true);
  {  // a finer grid, its times noted (the device's walk against the host's, the default order and tolerance)
    const int fine = 4 * n;
    const Cells grid = uniformGrid(fine, kKpc, 1e-24);
    fmm::FmmTree tree;
    const Status st = hostFmmTree(grid, 7, false, tree);
    if (st.ok())
      listsCase(cx, gpu, "fmm-lists-grid" + std::to_string(fine) + "-p7-tol2e-4", tree, 2e-4, true);
    else
      check(cx, "fmm-lists-grid" + std::to_string(fine), false, "host tree failed: " + st.message);
  }

  // method 'fmm' with the device's lists: the host lists' bits, the CPU's values and counts
  const CudaOptions before = gpu.cudaOptions();
  for (const bool amr : {false, true}) {
    const Cells& cells = amr ? cx.amr() : cx.uniform();
    const std::string name = std::string("fmm-lists-solve-") + (amr ? "amr" : "grid" + std::to_string(n));
    SolveOptions o;
    o.method = SolveMethod::Fmm;
    o.accelerations = true;
    SolveResult hostLists, devLists;
    poison(hostLists, cells.size(), true);
    poison(devLists, cells.size(), true);
    CudaOptions on = before;
    on.fmmDeviceLists = false;
    setDeviceOptions(gpu, on);
    const Status sh = gpu.solve(cells.view(), o, hostLists);
    on.fmmDeviceLists = true;
    setDeviceOptions(gpu, on);
    const Status sd = gpu.solve(cells.view(), o, devLists);
    const CudaStats cs = deviceStats(gpu);
    check(cx, name + "-bitwise", sh.ok() && sd.ok() && bitwiseEqual(hostLists, devLists),
          sh.ok() && sd.ok() ? "method 'fmm' with the device's lists (" + std::to_string(cs.fmmListRounds) +
                                   " rounds, largest frontier " + std::to_string(cs.fmmListMaxFrontier) + ", " +
                                   ms(cs.fmmListSeconds) + ") vs the host's: the same bits"
                             : "solve failed: " + (sh.ok() ? sd.message : sh.message));
    // against the CPU backend, as the fmm subject: potentials 1e-12 per cell, accelerations 1e-11 of the rms
    parityCase(cx, name + "-vs-cpu", cells, o, gpu, 1e-12, false, true, 1e-11);
  }
  setDeviceOptions(gpu, before);
}

}  // namespace amrgrav::parity
