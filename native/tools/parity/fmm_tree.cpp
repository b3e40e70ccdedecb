/// \file fmm_tree.cpp
/// \brief Subject `fmm-tree`: the FMM tree and upward pass built on the device from its own sort
/// (cuda/fmm_tree_phase.h, CudaOptions::fmmDeviceTree) against the host's buildFmmTree over the host's sort: every
/// array equal by bits (the topology with its levels and cube centres, the level starts, the centres, radii, critical
/// radii, |mass|, lower bounds and multipoles), on the uniform grid (--uniform) and the clustered AMR-like set
/// (--amr), orders 3, 5 and 7, then a grid four times finer whose device and host times are noted. Then method 'fmm'
/// with the device's tree against the host's (the device's sort and lists both times; with the host's tiles and with
/// the device's, which then read the device sort's cells): the same bits, with and without accelerations, and the
/// same counts; and the device tree's solve within the fmm subject's tolerances of the CPU backend.
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "fmm/fmm_tree.h"
#include "fmm/upward_emulate.h"
#include "tools/parity/harness.h"
#include "tree/tree.h"

namespace amrgrav::parity {
namespace {

SolveOptions fmmOptions(int order, bool accelerations) {
  SolveOptions o;
  o.method = SolveMethod::Fmm;
  o.fmmOrder = order;
  o.accelerations = accelerations;
  return o;
}

/// The device's tree vs the host's on one set (noteTimes: both builds' times noted beside the check).
void treeCase(Context& cx, CudaBackend& gpu, const std::string& name, const Cells& cells, int order, bool noteTimes) {
  fmm::FmmTree host, dev;
  const auto th = Clock::now();
  const Status sh = hostFmmTree(cells, order, false, host);
  const double hostSeconds = since(th);
  double devSeconds = 0;
  const Status sd = gpu.fmmDeviceTree(cells.view(), fmmOptions(order, false), dev, &devSeconds);
  if (!sh.ok() || !sd.ok()) {
    check(cx, name, false, "tree failed: " + (sh.ok() ? sd.message : sh.message));
    return;
  }
  const std::string diff = fmm::fmmTreeDifference(host, dev);
  check(cx, name, diff.empty(),
        (diff.empty() ? std::string("device tree = host tree, every array by bits: ") : diff) +
            std::to_string(host.nodeCount()) + " nodes, depth " + std::to_string(host.topo.depth) + ", " +
            std::to_string(host.M.size()) + " multipole doubles");
  if (noteTimes)
    cx.report.note("{\"kind\":\"fmm_tree_time\",\"case\":\"" + name + "\",\"nodes\":" +
                       std::to_string(host.nodeCount()) + ",\"host_s\":" + num(hostSeconds) + ",\"device_s\":" +
                       num(devSeconds) + "}",
                   "# " + name + ": host sort + tree + upward pass " + ms(hostSeconds) + " (all threads), device " +
                       ms(devSeconds) + " (events: the topology's conversion and the upward pass)");
}

/// One solve with the given device options (restored after).
Status solveWith(CudaBackend& gpu, const CudaOptions& co, const Cells& cells, const SolveOptions& o, SolveResult& r,
                 CudaStats& cs) {
  const CudaOptions before = gpu.cudaOptions();
  setDeviceOptions(gpu, co);
  poison(r, cells.size(), o.accelerations);
  const Status st = gpu.solve(cells.view(), o, r);
  cs = deviceStats(gpu);
  setDeviceOptions(gpu, before);
  return st;
}

}  // namespace

void runFmmTree(Context& cx) {
  CudaBackend& gpu = *cx.gpu;
  const int n = cx.args.uniform;
  for (const int p : {3, 5, 7}) {
    treeCase(cx, gpu, "fmm-tree-grid" + std::to_string(n) + "-p" + std::to_string(p), cx.uniform(), p, false);
    treeCase(cx, gpu, "fmm-tree-amr-p" + std::to_string(p), cx.amr(), p, false);
  }
  {
    const int fine = 4 * n;
    treeCase(cx, gpu, "fmm-tree-grid" + std::to_string(fine) + "-p7", uniformGrid(fine, kKpc, 1e-24), 7, true);
  }

  // method 'fmm': the device's tree vs the host's (the device's sort and lists both times), host tiles and device
  // tiles; the same bits and counts
  const CudaOptions before = gpu.cudaOptions();
  for (const bool amr : {false, true}) {
    const Cells& cells = amr ? cx.amr() : cx.uniform();
    for (const bool deviceTiles : {false, true})
      for (const bool accel : {true, false}) {
        const std::string name = std::string("fmm-tree-solve-") + (amr ? "amr" : "grid" + std::to_string(n)) +
                                 (deviceTiles ? "-device-tiles" : "") + (accel ? "" : "-pot");
        const SolveOptions o = fmmOptions(7, accel);
        CudaOptions co = before;
        co.fmmDeviceSort = true;
        co.fmmDeviceLists = true;
        co.fmmDeviceTiles = deviceTiles;
        co.fmmDeviceTree = false;
        SolveResult rh, rd;
        CudaStats ch, cd;
        const Status sh = solveWith(gpu, co, cells, o, rh, ch);
        co.fmmDeviceTree = true;
        const Status sd = solveWith(gpu, co, cells, o, rd, cd);
        const bool counts = rh.stats.nodes == rd.stats.nodes && rh.stats.leaves == rd.stats.leaves &&
                            rh.stats.treeDepth == rd.stats.treeDepth &&
                            rh.stats.approxInteractions == rd.stats.approxInteractions &&
                            rh.stats.directInteractions == rd.stats.directInteractions &&
                            ch.fmmTiles == cd.fmmTiles && ch.fmmTableEntries == cd.fmmTableEntries;
        check(cx, name + "-bitwise", sh.ok() && sd.ok() && counts && bitwiseEqual(rh, rd),
              sh.ok() && sd.ok()
                  ? std::string("method 'fmm' with the device's tree (moments ") + ms(cd.secondsMoments) + " vs " +
                        ms(ch.secondsMoments) + " on the host; end to end " + ms(cd.secondsTotal) + " vs " +
                        ms(ch.secondsTotal) + ") vs the host's: " + (counts ? "the same counts" : "counts differ") +
                        ", bits " + (bitwiseEqual(rh, rd) ? "equal" : "differ")
                  : "solve failed: " + (sh.ok() ? sd.message : sh.message));
      }
    CudaOptions on = before;
    on.fmmDeviceSort = on.fmmDeviceLists = on.fmmDeviceTree = true;
    setDeviceOptions(gpu, on);  // the CPU comparison with the device's tree
    parityCase(cx, std::string("fmm-tree-solve-") + (amr ? "amr" : "grid" + std::to_string(n)) + "-vs-cpu", cells,
               fmmOptions(7, true), gpu, 1e-12, false, true, 1e-11);
  }
  setDeviceOptions(gpu, before);
}

}  // namespace amrgrav::parity
