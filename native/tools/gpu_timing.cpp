/// \file gpu_timing.cpp
/// \brief amrgrav_gpu_timing: CUDA timings, standalone (no Node); benchmarks, not checks (the checks are
/// amrgrav_gpu_parity, native/tools/parity/, run by CTest). One JSON object per line on stdout.
///
///   amrgrav_gpu_timing [--perf 128,256 | --no-perf] [--reps R] [--direct-n CELLS] [--cpu-perf] [--sweep]
///                      [--fmm 64,128,256 [--fmm-host-lists] [--fmm-host-sort] [--fmm-host-tiles] [--fmm-host-tree]
///                      [--fmm-settings P:TOL,..] [--fmm-periodic [--fmm-host-periodic-tiles]
///                      [--fmm-host-periodic-finish] [--fmm-host-periodic]]] [--split N]
///                      [--copy-threads T]
///                      [--plummer 1000000,16000000 [--thetas 0.5,0.4] [--check-points K]]
///
///   --perf LIST       uniform grids timed on the GPU (default 128,256), each over the variants below (the order is
///                     fixed: bench/gpu/device-check.sh's ncu steps count kernel launches into it), then the direct
///                     kernel's rate
///   --no-perf         no grids and no direct-kernel rate (with --split: the split emulation alone)
///   --reps R          timed repetitions after one warm-up (median reported; default 5)
///   --direct-n CELLS  cells for the direct-kernel rate (default 131072)
///   --cpu-perf        also time the CPU backend (all threads, potential only, order 2 and 1) on every perf grid
///   --sweep           also time group sizes 32/64 x leaf sizes 8/16/32, order 2 and 1, with and without accelerations
///   --copy-threads T  host threads of the staged copies (--split; default: the backend's, min(8, cores / 2))
///   --plummer LIST    issue #18: Plummer spheres of these many points (tools/plummer.h: G = M = a = 1, truncated at
///                     r = 20, cells of size 1e-6, self term off; order 2, accelerations), box and vote walks at each
///                     theta of --thetas (default 0.5,0.42,0.4): best of --reps of the device work (keys, sort, build,
///                     moments, walk: the points already uploaded) and end to end (upload to results in the caller's
///                     reused arrays), groups, interactions, device bytes per cell, and the median, 99th percentile
///                     and largest relative acceleration error against float64 direct sums (all CPU threads) at
///                     --check-points random points (default 4096); one "plummer" JSON line each
///   --group-size G    cells (points) per walk group of the --plummer and --plummer-particles runs (default: the
///                     options' default)
///   --plummer-particles LIST  the same spheres as softened particles (a system solve of particles alone,
///                     physics/softening_k.h) with softening --softening-length (default 0.01) and each kernel of
///                     --kernels (default spline,plummer), box walk at each theta: best of --reps of the device
///                     work (device_s = tree_s + walk_s, the points already uploaded: tree_s the particles' keys,
///                     sort, build, moments, softening ranges and extents; walk_s their walk with its finish, all
///                     passes) and end to end (wall_s), and the errors against float64 softened direct sums; one
///                     "plummer-particles" JSON line each
///   --fmm LIST        method 'fmm' on the GPU (issue #20, GPU stage 1) on uniform grids of these sides (e.g.
///                     64,128,256; smooth density, isolated, order 7, potential and then with accelerations): medians of
///                     --reps of each phase (keys_sort_s: root cube and sort, on the device by default: the cells up,
///                     checked, keys, sort, the order and keys down, the host's gather; moments: tree and upward pass,
///                     build: the interaction lists, on the host; upload; walk: the device's P2P, M2L, L2L and L2P, and each
///                     kernel alone from device events, p2p_s, m2l_s, l2l_s (all levels), l2p_s; download: the sums
///                     down and finished on the host), M2L and P2P per cell, the tiles' table and computed steps
///                     (p2p_table_steps, p2p_computed_steps: how full the table steps are), the device bytes a cell
///                     by part (device_bytes_per_cell_by_part: CudaStats::fmmMemoryParts), one "fmm" JSON line each; then
///                     the tree (method 'tree', the default options) on the same grid in the same run, one "perf" line
///   --fmm-host-lists  with --fmm: each FMM timing twice, the lists built on the host and then on the device (the
///                     default, CudaOptions::fmmDeviceLists, cuda/fmm_lists_phase.h); "device_lists" says which,
///                     "lists_s" is the lists' part of build_s (device: the tree's arrays up, the walk, the P2P pairs
///                     down), "list_rounds" and "list_max_frontier" the device walk's shape
///   --fmm-host-sort   with --fmm: each FMM timing also with the root cube and sort on the host
///                     (CudaOptions::fmmDeviceSort off, the cells uploaded after the sort); "device_sort" says which
///   --fmm-host-tiles  with --fmm: each FMM timing once more with the near lists and P2P tiles made on the host (the
///                     P2P pairs down, the tiles up: CudaOptions::fmmDeviceTiles off); "device_tiles" says which.
///                     With the device's tiles (the default) "tiles_s" is their build's time and "tile_steps_s" its
///                     steps' (device events, medians; CudaStats::fmmTileStepSeconds, kFmmTileStepNames: size_up,
///                     leaves, near_lists, regular, slots, tables, order, tiles, irregular), 0 / {} without them
///   --fmm-host-tree   with --fmm: each FMM timing once more with the tree, its upward pass and the tiles on the host
///                     (CudaOptions::fmmDeviceTree and fmmDeviceTiles off: the default until 2026-11-26's sixth
///                     session; the order and keys down, the host's gather, the tree's arrays up); "device_tree" says
///                     which. With the device's tree moments_s is its topology conversion and upward pass, keys_sort_s
///                     the upload, checks, sort and topology (nothing comes down with the device's tiles)
///   --fmm-settings LIST  with --fmm: potential-only timings at these expansion orders and tolerances instead of the
///                     defaults' runs, each "P:TOL" (e.g. 6:1e-4,7:2e-4), the sort, lists and tiles as by default: how
///                     the M2L's cost per pair and the pair counts move with the order (docs/fmm-design.md section 3)
///   --fmm-cells F,..  method 'fmm' (potential, defaults) and then the tree's walk on the meshes of these files (written
///                     by bench/dumpCells.ts: e.g. MacLaurin levels 7), one "fmm" line (mesh: the file) and one "perf"
///                     line each: the FMM's phases and kernels on AMR meshes
///   --fmm-m2l V       with --fmm: the FMM's M2L kernel (CudaOptions::fmmM2L, cuda/m2l_variants.h: 0 plain;
///                     1 staged; 2 staged-lowregs; 3 direct; 4 direct-lowregs; 5 harmonic, the default); "m2l" in each
///                     FMM line says which
///   --fmm-accel-fma   with --fmm: the accelerations' near-field table steps on FMAs (CudaOptions::fmmAccelTablesMma
///                     off) instead of the tensor cores; "accel_tables_mma" in each FMM line says which
///   --fmm-near-double with --fmm or --fmm-cells: the near field's computed pairs in double (CudaOptions::fmmNearSingle
///                     off; the default is single)
///   --fmm-periodic    with --fmm: each grid's FMM once more in a fully periodic box (cuda/fmm_periodic_phase.cu)
///                     by the device's periodic path (CudaOptions::fmmDevicePeriodic: the sort with the density
///                     contrast, the tree with its upward pass and the lists with image shifts on the device; the
///                     host's signed scale, tiles and far images; the device's evaluation): "periodic" true,
///                     "device_periodic" true, moments_s the device tree with its topology and MAC quantities down,
///                     the host's scale and the norms, lists_s the lists' part of build_s (the walk, the P2P pairs
///                     down), build_s also the tiles and the far images' pass (the frontier's multipoles down);
///                     the near lists and tiles with their shifts built on the device from its pairs
///                     (CudaOptions::fmmDevicePeriodicTiles, "device_periodic_tiles" true: no pairs down, no tiles up;
///                     tiles_s and tile_steps_s their build)
///                     With all of those, no host copy of the sorted cells (CudaOptions::fmmDevicePeriodicFinish:
///                     the scale from the device's cells, its candidate leaves down, the finish on the device;
///                     "device_periodic_finish" true, "host_cells" false, "scale_candidates" and
///                     "scale_candidate_cells" what came down for the scale)
///   --fmm-host-periodic-finish  with --fmm-periodic: each periodic timing once more gathering the host's sorted
///                     cells (fmmDevicePeriodicFinish off: the order down and the host's gather and contrast, the
///                     host's scale, the sums down and the host's finish; "device_periodic_finish" false)
///   --fmm-host-periodic-tiles  with --fmm-periodic: each periodic timing once more with the host's near lists and
///                     tiles (fmmDevicePeriodicTiles off: the pairs down, the tiles made on the host and up)
///   --fmm-host-periodic  with --fmm-periodic: each periodic timing once more by the host's periodic path
///                     (fmmDevicePeriodic off: the host's sort, contrast and lists too), "device_periodic" false
///   --split N         a two-rank solve of the uniform N^3 grid emulated in one process on this one GPU (two backend
///                     objects, halves in z, each rank's device work timed alone, the LETs handed over in memory)
///                     against the one-rank solve: what each rank of a two-GPU run has to do
///
/// Exit status: 0 every timing ran; 1 a solve failed (an "error" line says which); 2 no usable CUDA device;
/// 64 a bad command line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <utility>
#include <string>
#include <vector>

#include "core/fixed_sum.h"
#include "core/thread_pool.h"
#include "cuda/m2l_variants.h"
#include "let/let.h"
#include "tools/parity/harness.h"
#include "physics/softening_k.h"
#include "core/system.h"
#include "tools/plummer.h"
#include "tree/tree.h"

using namespace amrgrav;
using namespace amrgrav::parity;

namespace {

struct TimingArgs {
  bool perf = true, cpuPerf = false, sweep = false;
  int split = 0;
  int copyThreads = 0;
  std::size_t directN = 131072;
  std::vector<int> perfGrids = {128, 256};
  int reps = 5;
  std::vector<double> plummer;  ///< point counts (--plummer)
  std::vector<double> thetas = {0.5, 0.42, 0.4};
  std::vector<double> plummerParticles;  ///< point counts (--plummer-particles)
  double softeningLength = 0.01;
  std::vector<std::string> kernels = {"spline", "plummer"};
  std::size_t checkPoints = 4096;
  int groupSize = 0;  ///< --group-size for the Plummer runs (0: the default)
  std::vector<double> fmmGrids;  ///< --fmm: uniform grid sides
  bool fmmHostLists = false;   ///< --fmm-host-lists: each FMM timing with the host's lists too
  bool fmmHostSort = false;    ///< --fmm-host-sort: each FMM timing also with the host's sort
  bool fmmHostTiles = false;   ///< --fmm-host-tiles: and once more with the host's tiles
  std::vector<std::pair<int, double>> fmmSettings;  ///< --fmm-settings: (order, tolerance) pairs
  bool fmmHostTree = false;    ///< --fmm-host-tree: and once more with the host's tree and tiles
  bool fmmPeriodic = false;     ///< --fmm-periodic: and once more in a fully periodic box
  bool fmmHostPeriodic = false; ///< --fmm-host-periodic: the periodic box by the host's periodic path too
  bool fmmHostPeriodicTiles = false;  ///< --fmm-host-periodic-tiles: and by the device's path with the host's tiles
  bool fmmHostPeriodicFinish = false;  ///< --fmm-host-periodic-finish: and gathering the host's sorted cells
  int fmmM2L = CudaOptions{}.fmmM2L;  ///< --fmm-m2l: the M2L kernel (CudaOptions::fmmM2L)
  bool fmmAccelFma = false;           ///< --fmm-accel-fma: CudaOptions::fmmAccelTablesMma off
  bool fmmNearDouble = false;         ///< --fmm-near-double: CudaOptions::fmmNearSingle off
  std::vector<std::string> fmmCellFiles;  ///< --fmm-cells: meshes from files (bench/dumpCells.ts)
};

std::vector<double> numberList(const std::string& v) {
  std::vector<double> out;
  for (std::size_t p = 0; p < v.size();) {
    std::size_t q = v.find(',', p);
    if (q == std::string::npos) q = v.size();
    out.push_back(std::atof(v.substr(p, q - p).c_str()));
    p = q + 1;
  }
  return out;
}

int gErrors = 0;  // timings that could not run

TimingArgs parseArgs(int argc, char** argv) {
  TimingArgs a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "missing value after %s\n", k.c_str()); std::exit(kExitUsage); }
      return argv[++i];
    };
    if (k == "--no-perf") a.perf = false;
    else if (k == "--cpu-perf") a.cpuPerf = true;
    else if (k == "--sweep") a.sweep = true;
    else if (k == "--split") a.split = std::atoi(next().c_str());
    else if (k == "--copy-threads") a.copyThreads = std::atoi(next().c_str());
    else if (k == "--direct-n") a.directN = std::strtoull(next().c_str(), nullptr, 10);
    else if (k == "--group-size") a.groupSize = std::atoi(next().c_str());
    else if (k == "--reps") a.reps = std::max(1, std::atoi(next().c_str()));
    else if (k == "--plummer") a.plummer = numberList(next());
    else if (k == "--fmm") a.fmmGrids = numberList(next());
    else if (k == "--fmm-host-lists") a.fmmHostLists = true;
    else if (k == "--fmm-host-sort") a.fmmHostSort = true;
    else if (k == "--fmm-host-tiles") a.fmmHostTiles = true;
    else if (k == "--fmm-settings") {
      std::stringstream ss(next());
      std::string item;
      while (std::getline(ss, item, ',')) {
        const auto colon = item.find(':');
        if (colon == std::string::npos) {
          std::fprintf(stderr, "--fmm-settings: '%s' is not ORDER:TOLERANCE\n", item.c_str());
          std::exit(kExitUsage);
        }
        a.fmmSettings.emplace_back(std::atoi(item.substr(0, colon).c_str()),
                                   std::strtod(item.c_str() + colon + 1, nullptr));
      }
    }
    else if (k == "--fmm-host-tree") a.fmmHostTree = true;
    else if (k == "--fmm-periodic") a.fmmPeriodic = true;
    else if (k == "--fmm-host-periodic") a.fmmHostPeriodic = true;
    else if (k == "--fmm-host-periodic-tiles") a.fmmHostPeriodicTiles = true;
    else if (k == "--fmm-host-periodic-finish") a.fmmHostPeriodicFinish = true;
    else if (k == "--fmm-m2l") a.fmmM2L = std::atoi(next().c_str());
    else if (k == "--fmm-accel-fma") a.fmmAccelFma = true;
    else if (k == "--fmm-near-double") a.fmmNearDouble = true;
    else if (k == "--fmm-cells") {
      std::stringstream ss(next());
      std::string item;
      while (std::getline(ss, item, ',')) a.fmmCellFiles.push_back(item);
    }
    else if (k == "--thetas") a.thetas = numberList(next());
    else if (k == "--plummer-particles") a.plummerParticles = numberList(next());
    else if (k == "--softening-length") a.softeningLength = std::strtod(next().c_str(), nullptr);
    else if (k == "--kernels") {
      a.kernels.clear();
      std::string list = next();
      for (std::size_t b = 0; b <= list.size();) {
        const std::size_t e = std::min(list.find(',', b), list.size());
        a.kernels.push_back(list.substr(b, e - b));
        b = e + 1;
      }
    }
    else if (k == "--check-points") a.checkPoints = std::strtoull(next().c_str(), nullptr, 10);
    else if (k == "--perf") {
      a.perf = true;
      a.perfGrids.clear();
      std::string v = next();
      for (std::size_t p = 0; p < v.size();) {
        std::size_t q = v.find(',', p);
        if (q == std::string::npos) q = v.size();
        a.perfGrids.push_back(std::atoi(v.substr(p, q - p).c_str()));
        p = q + 1;
      }
    } else if (k == "-h" || k == "--help") {
      std::printf("see the comment at the top of native/tools/gpu_timing.cpp\n");
      std::exit(kExitPass);
    } else {
      std::fprintf(stderr, "unknown argument %s%s\n", k.c_str(),
                   k == "--no-parity" || k == "--quick" ? " (the checks are amrgrav_gpu_parity; this program only times)"
                                                        : "");
      std::exit(kExitUsage);
    }
  }
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Times one configuration (one warm-up, then a.reps solves; medians) and prints one "perf" JSON line.
void timeVariant(const TimingArgs& a, CudaBackend& gpu, const Cells& cells, int grid, const SolveOptions& o,
                 const CudaOptions& co) {
  setDeviceOptions(gpu, co);
  SolveResult r;
  Status st = gpu.solve(cells.view(), o, r);  // warm-up (allocations, module load)
  std::vector<double> wall, val, up, keys, build, mom, walk, down;
  for (int rep = 0; rep < a.reps && st.ok(); ++rep) {
    const auto t = Clock::now();
    st = gpu.solve(cells.view(), o, r);
    wall.push_back(since(t));
    const CudaStats cs = deviceStats(gpu);
    val.push_back(cs.secondsValidate);
    up.push_back(cs.secondsUpload); keys.push_back(cs.secondsKeys); build.push_back(cs.secondsBuild);
    mom.push_back(cs.secondsMoments); walk.push_back(cs.secondsWalk); down.push_back(cs.secondsDownload);
  }
  if (!st.ok()) {
    std::printf("{\"kind\":\"perf\",\"grid\":%d,\"error\":\"%s\"}\n", grid, jsonEscape(st.message).c_str());
    ++gErrors;
    return;
  }
  const CudaStats cs = deviceStats(gpu);
  const double n = double(cells.size());
  const double inter = double(r.stats.approxInteractions + r.stats.directInteractions);
  const double w = median(wall), wk = median(walk);
  std::printf("{\"kind\":\"perf\",\"grid\":%d,\"cells\":%zu,\"order\":%d,\"accelerations\":%s,\"walk\":\"%s\","
              "\"groupSize\":%d,\"leafSize\":%d,\"periodic\":%s,"
              "\"staging\":\"%s\",\"copyThreads\":%d,\"theta\":%s,\"reps\":%d,\"wall_s\":%s,\"validate_s\":%s,"
              "\"upload_s\":%s,\"keys_sort_s\":%s,"
              "\"build_s\":%s,\"moments_s\":%s,\"walk_s\":%s,\"download_s\":%s,\"cells_per_s\":%s,"
              "\"interactions_per_cell\":%s,\"approx_per_cell\":%s,\"direct_per_cell\":%s,"
              "\"walk_interactions_per_s\":%s,\"nodes\":%llu,\"depth\":%d,\"device_bytes_per_cell\":%s,"
              "\"queue_peak\":%u,\"walk_warps\":%d,\"walk_pass_s\":[%s,%s,%s],\"paired\":%s,\"paired_groups\":%u,"
              "\"device\":\"%s\"}\n",
              grid, cells.size(), o.order, o.accelerations ? "true" : "false", o.walk == WalkKind::Vote ? "vote" : "box",
              o.groupSize, o.leafSize, o.anyPeriodic() ? "true" : "false", co.pinnedStaging ? "pinned" : "pageable", co.copyThreads, num(o.theta).c_str(),
              a.reps, num(w).c_str(), num(median(val)).c_str(), num(median(up)).c_str(),
              num(median(keys)).c_str(), num(median(build)).c_str(), num(median(mom)).c_str(), num(wk).c_str(),
              num(median(down)).c_str(), num(n / w).c_str(), num(inter / n).c_str(),
              num(double(r.stats.approxInteractions) / n).c_str(),
              num(double(r.stats.directInteractions) / n).c_str(), num(inter / wk).c_str(),
              (unsigned long long)r.stats.nodes, r.stats.treeDepth, num(cs.deviceBytesPerCell).c_str(),
              cs.queuePeak, cs.walkWarps, num(cs.walkPassSeconds[0]).c_str(), num(cs.walkPassSeconds[1]).c_str(),
              num(cs.walkPassSeconds[2]).c_str(), co.pairedCells ? "true" : "false", cs.pairedGroups,
              jsonEscape(cs.device).c_str());
  std::fflush(stdout);
}

/// Method 'fmm' on the GPU on one grid (see --fmm above): one warm-up, then a.reps solves; medians per phase.
void timeFmm(const TimingArgs& a, CudaBackend& gpu, const Cells& cells, int grid, bool accel, bool deviceLists,
             bool deviceSort, bool deviceTiles = false, bool deviceTree = false, int order = 0,
             double tolerance = -1, bool periodic = false, bool devicePeriodic = false,
             bool devicePeriodicTiles = false, const std::string& mesh = "uniform",
             bool devicePeriodicFinish = true) {
  CudaOptions co = gpu.cudaOptions();
  co.fmmDeviceLists = deviceLists;
  co.fmmDeviceSort = deviceSort;
  co.fmmDeviceTiles = deviceTiles;
  co.fmmDeviceTree = deviceTree;
  co.fmmDevicePeriodic = devicePeriodic;
  co.fmmDevicePeriodicTiles = devicePeriodicTiles;
  co.fmmDevicePeriodicFinish = devicePeriodicFinish;
  co.fmmM2L = a.fmmM2L;
  co.fmmAccelTablesMma = !a.fmmAccelFma;
  co.fmmNearSingle = !a.fmmNearDouble;
  setDeviceOptions(gpu, co);
  SolveOptions o;
  o.method = SolveMethod::Fmm;
  o.accelerations = accel;
  if (order > 0) o.fmmOrder = order;
  if (tolerance >= 0) o.fmmTolerance = tolerance;
  if (periodic) o = periodicBox(o, true, true, true);
  SolveResult r;
  Status st = gpu.solve(cells.view(), o, r);  // warm-up (allocations, module load)
  std::vector<double> wall, up, keys, build, mom, walk, down, kernel[4], lists, tileSteps[9];
  for (int rep = 0; rep < a.reps && st.ok(); ++rep) {
    const auto t = Clock::now();
    st = gpu.solve(cells.view(), o, r);
    wall.push_back(since(t));
    const CudaStats cs = deviceStats(gpu);
    up.push_back(cs.secondsUpload); keys.push_back(cs.secondsKeys); build.push_back(cs.secondsBuild);
    mom.push_back(cs.secondsMoments); walk.push_back(cs.secondsWalk); down.push_back(cs.secondsDownload);
    for (int k = 0; k < 4; ++k) kernel[k].push_back(cs.fmmKernelSeconds[k]);
    lists.push_back(cs.fmmListSeconds);
    for (int k = 0; k < 9; ++k) tileSteps[k].push_back(cs.fmmTileStepSeconds[k]);
  }
  if (!st.ok()) {
    std::printf("{\"kind\":\"fmm\",\"mesh\":\"%s\",\"grid\":%d,\"error\":\"%s\"}\n", jsonEscape(mesh).c_str(), grid,
                jsonEscape(st.message).c_str());
    ++gErrors;
    return;
  }
  const CudaStats cs = deviceStats(gpu);
  const double n = double(cells.size()), w = median(wall), wk = median(walk);
  std::string memory;  // the device bytes a cell by part (CudaStats::fmmMemoryParts)
  for (int k = 0; k < 8; ++k)
    memory += std::string(k ? "," : "") + "\"" + kFmmMemoryPartNames[k] + "\":" + num(double(cs.fmmMemoryParts[k]) / n);
  std::string steps;  // the device tiles' build, step by step (medians; their sum is tiles_s)
  double tilesTotal = 0;
  const bool tilesOnDevice = periodic ? devicePeriodic && devicePeriodicTiles && deviceLists : deviceTiles;
  for (int k = 0; k < 9 && tilesOnDevice; ++k) {
    steps += std::string(k ? "," : "") + "\"" + kFmmTileStepNames[k] + "\":" + num(median(tileSteps[k]));
    tilesTotal += median(tileSteps[k]);
  }
  std::printf("{\"kind\":\"fmm\",\"mesh\":\"%s\",\"grid\":%d,\"cells\":%zu,\"fmmOrder\":%d,\"fmmTheta\":%s,\"fmmTolerance\":%s,"
              "\"accelerations\":%s,\"periodic\":%s,\"device_sort\":%s,\"device_lists\":%s,\"device_tiles\":%s,"
              "\"device_tree\":%s,\"device_periodic\":%s,\"device_periodic_tiles\":%s,"
              "\"device_periodic_finish\":%s,\"host_cells\":%s,\"scale_candidates\":%llu,"
              "\"scale_candidate_cells\":%llu,\"scale_s\":%s,\"tree_steps_s\":[%s,%s,%s],"
              "\"finish_steps_s\":[%s,%s,%s],\"m2l\":\"%s\",\"accel_tables_mma\":%s,\"near_single\":%s,"
              "\"lists_s\":%s,"
              "\"list_rounds\":%d,"
              "\"list_max_frontier\":%llu,\"reps\":%d,\"wall_s\":%s,\"keys_sort_s\":%s,\"moments_s\":%s,\"build_s\":%s,"
              "\"upload_s\":%s,\"walk_s\":%s,\"p2p_s\":%s,\"m2l_s\":%s,\"l2l_s\":%s,\"l2p_s\":%s,"
              "\"download_s\":%s,\"cells_per_s\":%s,\"walk_cells_per_s\":%s,"
              "\"m2l_per_cell\":%s,\"p2p_per_cell\":%s,\"nodes\":%llu,\"leaves\":%llu,\"depth\":%d,"
              "\"p2p_tiles\":%llu,\"p2p_tile_targets\":%llu,\"p2p_tables\":%llu,\"p2p_table_pairs\":%llu,"
              "\"p2p_computed_pairs\":%llu,\"p2p_irregular_leaves\":%llu,\"p2p_table_steps\":%llu,"
              "\"p2p_computed_steps\":%llu,"
              "\"device_bytes_per_cell\":%s,\"device_bytes_per_cell_by_part\":{%s},\"tiles_s\":%s,"
              "\"tile_steps_s\":{%s},\"device\":\"%s\"}\n",
              jsonEscape(mesh).c_str(), grid, cells.size(), o.fmmOrder, num(o.fmmTheta).c_str(),
              num(o.fmmTolerance).c_str(),
              accel ? "true" : "false", periodic ? "true" : "false", deviceSort ? "true" : "false",
              deviceLists ? "true" : "false", deviceTiles ? "true" : "false", deviceTree ? "true" : "false",
              periodic && devicePeriodic ? "true" : "false",
              periodic && devicePeriodic && devicePeriodicTiles ? "true" : "false",
              periodic && devicePeriodic && devicePeriodicTiles && devicePeriodicFinish ? "true" : "false",
              periodic && cs.fmmPeriodicHostCells ? "true" : "false", (unsigned long long)cs.fmmScaleCandidates,
              (unsigned long long)cs.fmmScaleCandidateCells, num(cs.fmmScaleSeconds).c_str(),
              num(cs.fmmTreeStepSeconds[0]).c_str(), num(cs.fmmTreeStepSeconds[1]).c_str(),
              num(cs.fmmTreeStepSeconds[2]).c_str(), num(cs.fmmFinishStepSeconds[0]).c_str(),
              num(cs.fmmFinishStepSeconds[1]).c_str(), num(cs.fmmFinishStepSeconds[2]).c_str(), cuda::fmmM2LVariantName(co.fmmM2L),
              accel && co.fmmAccelTablesMma ? "true" : "false", co.fmmNearSingle ? "true" : "false",
              num(median(lists)).c_str(), cs.fmmListRounds,
              (unsigned long long)cs.fmmListMaxFrontier, a.reps, num(w).c_str(), num(median(keys)).c_str(),
              num(median(mom)).c_str(),
              num(median(build)).c_str(), num(median(up)).c_str(), num(wk).c_str(), num(median(kernel[0])).c_str(),
              num(median(kernel[1])).c_str(), num(median(kernel[2])).c_str(), num(median(kernel[3])).c_str(),
              num(median(down)).c_str(),
              num(n / w).c_str(), num(n / wk).c_str(), num(double(r.stats.approxInteractions) / n).c_str(),
              num(double(r.stats.directInteractions) / n).c_str(), (unsigned long long)r.stats.nodes,
              (unsigned long long)r.stats.leaves, r.stats.treeDepth, (unsigned long long)cs.fmmTiles,
              (unsigned long long)cs.fmmTileTargets, (unsigned long long)cs.fmmTables,
              (unsigned long long)cs.fmmTableEntries, (unsigned long long)cs.fmmComputedEntries,
              (unsigned long long)cs.fmmIrregularLeaves, (unsigned long long)cs.fmmTableSteps,
              (unsigned long long)cs.fmmComputedSteps, num(cs.deviceBytesPerCell).c_str(), memory.c_str(),
              num(tilesTotal).c_str(),
              steps.c_str(), jsonEscape(cs.device).c_str());
  std::fflush(stdout);
}

/// Cells from a file of bench/dumpCells.ts: n (int64), then x, y, z, mass and size (n float64 each), little-endian.
bool readCellFile(const std::string& path, Cells& c) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  std::int64_t n = 0;
  bool ok = std::fread(&n, sizeof n, 1, f) == 1 && n > 0;
  std::vector<double>* arrays[5] = {&c.x, &c.y, &c.z, &c.m, &c.h};
  for (auto* v : arrays) {
    if (!ok) break;
    v->resize(std::size_t(n));
    ok = std::fread(v->data(), sizeof(double), std::size_t(n), f) == std::size_t(n);
  }
  std::fclose(f);
  return ok;
}

/// --fmm-cells: each file's mesh, the FMM at its defaults (potential), then the tree's walk on it for comparison.
void runFmmCellFiles(const TimingArgs& a, CudaBackend& gpu) {
  const CudaOptions defaults;
  for (const std::string& path : a.fmmCellFiles) {
    Cells cells;
    if (!readCellFile(path, cells)) {
      std::printf("{\"kind\":\"fmm\",\"mesh\":\"%s\",\"error\":\"cannot read the cell file\"}\n", jsonEscape(path).c_str());
      ++gErrors;
      continue;
    }
    timeFmm(a, gpu, cells, 0, false, true, true, defaults.fmmDeviceTiles, defaults.fmmDeviceTree, 0, -1, false, false,
            false, path);
    timeVariant(a, gpu, cells, 0, SolveOptions{}, CudaOptions{});
  }
}

/// --fmm: each grid's FMM (potential, then with accelerations), then the tree on it for comparison.
void runFmmTimings(const TimingArgs& a) {
  auto gpu = makeCudaBackend(CudaOptions{});
  const CudaOptions defaults;
  const bool tiles = defaults.fmmDeviceTiles, tree = defaults.fmmDeviceTree;
  runFmmCellFiles(a, *gpu);
  for (double side : a.fmmGrids) {
    const int grid = int(side);
    const Cells cells = uniformGrid(grid, kKpc, 1e-24);
    if (!a.fmmSettings.empty()) {
      for (const auto& [order, tol] : a.fmmSettings)
        timeFmm(a, *gpu, cells, grid, false, true, true, tiles, tree, order, tol);
      continue;
    }
    for (const bool accel : {false, true}) {  // the defaults: the sort, lists, tree and tiles on the device
      timeFmm(a, *gpu, cells, grid, accel, true, true, tiles, tree);
      if (a.fmmHostTiles) timeFmm(a, *gpu, cells, grid, accel, true, true, false, tree);
      if (a.fmmHostTree) timeFmm(a, *gpu, cells, grid, accel, true, true, false, false);
      if (a.fmmHostLists) timeFmm(a, *gpu, cells, grid, accel, false, true);  // the host's lists, tree and tiles
      if (a.fmmHostSort) timeFmm(a, *gpu, cells, grid, accel, true, false);   // the host's sort, tree and tiles
    }
    if (a.fmmPeriodic)  // fully periodic: the device's sort, tree, lists and near tiles with shifts (the host's far
                        // images), with --fmm-host-periodic-tiles the host's tiles, with --fmm-host-periodic the
                        // host's periodic path
      for (const bool accel : {false, true}) {
        timeFmm(a, *gpu, cells, grid, accel, true, true, false, true, 0, -1, true, true, true);
        if (a.fmmHostPeriodicFinish)
          timeFmm(a, *gpu, cells, grid, accel, true, true, false, true, 0, -1, true, true, true, "uniform", false);
        if (a.fmmHostPeriodicTiles) timeFmm(a, *gpu, cells, grid, accel, true, true, false, true, 0, -1, true, true);
        if (a.fmmHostPeriodic) timeFmm(a, *gpu, cells, grid, accel, false, false, false, false, 0, -1, true, false);
      }
    timeVariant(a, *gpu, cells, grid, SolveOptions{}, CudaOptions{});
  }
}

/// The CPU backend's time on the same cells (all hardware threads), for the GPU/CPU ratio.
void timeCpu(const Cells& cells, int grid, int order, bool accel) {
  auto cpu = makeCpuBackend();
  SolveOptions o;
  o.order = order;
  o.accelerations = accel;
  SolveResult r;
  const auto t = Clock::now();
  const Status st = cpu->solve(cells.view(), o, r);
  const double w = since(t);
  std::printf("{\"kind\":\"perf_cpu\",\"grid\":%d,\"cells\":%zu,\"order\":%d,\"accelerations\":%s,\"ok\":%s,"
              "\"wall_s\":%s,\"walk_s\":%s,\"threads\":%d,\"cells_per_s\":%s,\"walk_interactions_per_s\":%s}\n",
              grid, cells.size(), order, accel ? "true" : "false", st.ok() ? "true" : "false", num(w).c_str(),
              num(r.stats.secondsWalk).c_str(), r.stats.threads, num(double(cells.size()) / w).c_str(),
              num(double(r.stats.approxInteractions + r.stats.directInteractions) / r.stats.secondsWalk).c_str());
  std::fflush(stdout);
}

/// |a - a_ref| / |a_ref| at the check points (out[1..3]: ax, ay, az of every point; ref: 3 per check point), sorted.
std::vector<double> sortedAccelerationErrors(const std::vector<double>* out, const std::vector<std::size_t>& targets,
                                             const std::vector<double>& ref) {
  std::vector<double> err(targets.size());
  for (std::size_t k = 0; k < targets.size(); ++k) {
    const std::size_t t = targets[k];
    const double* q = &ref[3 * k];
    const double dx = out[1][t] - q[0], dy = out[2][t] - q[1], dz = out[3][t] - q[2];
    err[k] = std::sqrt(dx * dx + dy * dy + dz * dz) / std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
  }
  std::sort(err.begin(), err.end());
  return err;
}

/// Issue #18: a Plummer sphere of n points, box and vote walks at each theta (see --plummer above).
void runPlummer(const TimingArgs& a, std::size_t n) {
  const auto tg = Clock::now();
  const tools::PlummerPoints pts = tools::plummerPoints(n, 18);
  const CellsView view{pts.x.data(), pts.y.data(), pts.z.data(), pts.m.data(), pts.h.data(), n};
  // float64 direct sums (G = 1) at checkPoints random points, every CPU thread
  std::mt19937_64 pick(4096);
  std::vector<std::size_t> targets(std::min(a.checkPoints, n));
  for (auto& t : targets) t = std::size_t(pick() % n);
  std::vector<double> ref(3 * targets.size(), 0.0);
  parallelFor(targets.size(), 1, resolveThreadCount(0), [&](std::size_t b, std::size_t e, int) {
    for (std::size_t k = b; k < e; ++k) {
      const std::size_t t = targets[k];
      const double tx = pts.x[t], ty = pts.y[t], tz = pts.z[t];
      double ax = 0, ay = 0, az = 0;
      for (std::size_t j = 0; j < n; ++j) {
        const double dx = pts.x[j] - tx, dy = pts.y[j] - ty, dz = pts.z[j] - tz;
        const double r2 = dx * dx + dy * dy + dz * dz;
        const double f = j == t ? 0.0 : pts.m[j] / (r2 * std::sqrt(r2));
        ax += f * dx;
        ay += f * dy;
        az += f * dz;
      }
      ref[3 * k] = ax;
      ref[3 * k + 1] = ay;
      ref[3 * k + 2] = az;
    }
  });
  std::fprintf(stderr, "plummer %zu points and %zu direct sums in %.2f s\n", n, targets.size(), since(tg));
  auto gpu = makeCudaBackend(CudaOptions{});
  std::vector<double> out[4];
  for (auto& v : out) v.assign(n, 0.0);
  for (double theta : a.thetas)
    for (WalkKind walk : {WalkKind::Box, WalkKind::Vote}) {
      SolveOptions o;
      o.G = 1;
      o.theta = theta;
      if (a.groupSize > 0) o.groupSize = a.groupSize;
      o.order = 2;
      o.accelerations = true;
      o.selfPotential = SelfPotential::None;
      o.walk = walk;
      SolveResult r;
      r.into = ResultTargets{out[0].data(), out[1].data(), out[2].data(), out[3].data()};
      Status st = gpu->solve(view, o, r);  // warm-up
      double wall = INFINITY, device = INFINITY, walkS = INFINITY;
      for (int rep = 0; rep < a.reps && st.ok(); ++rep) {
        const auto t = Clock::now();
        st = gpu->solve(view, o, r);
        wall = std::min(wall, since(t));
        const CudaStats cs = deviceStats(*gpu);
        device = std::min(device, cs.secondsKeys + cs.secondsBuild + cs.secondsMoments + cs.secondsWalk);
        walkS = std::min(walkS, cs.secondsWalk);
      }
      const char* wname = walk == WalkKind::Vote ? "vote" : "box";
      if (!st.ok()) {
        std::printf("{\"kind\":\"plummer\",\"points\":%zu,\"walk\":\"%s\",\"error\":\"%s\"}\n", n, wname,
                    jsonEscape(st.message).c_str());
        ++gErrors;
        continue;
      }
      const std::vector<double> err = sortedAccelerationErrors(out, targets, ref);
      const std::size_t m = err.size();
      auto at = [&](std::size_t k) { return m == 0 ? NAN : err[std::min(m - 1, k)]; };  // num(NaN) is null
      const CudaStats cs = deviceStats(*gpu);
      std::printf("{\"kind\":\"plummer\",\"points\":%zu,\"walk\":\"%s\",\"theta\":%s,\"reps\":%d,"
                  "\"device_s\":%s,\"walk_s\":%s,\"wall_s\":%s,\"groups\":%llu,\"interactions_per_cell\":%s,"
                  "\"err_median\":%s,\"err_p99\":%s,\"err_max\":%s,\"check_points\":%zu,"
                  "\"device_bytes_per_cell\":%s,\"queue_peak\":%u,\"device\":\"%s\"}\n",
                  n, wname, num(theta).c_str(), a.reps, num(device).c_str(), num(walkS).c_str(), num(wall).c_str(),
                  (unsigned long long)r.stats.groups,
                  num(double(r.stats.approxInteractions + r.stats.directInteractions) / double(n)).c_str(),
                  num(at(m / 2)).c_str(), num(at(m * 99 / 100)).c_str(), num(at(m - 1)).c_str(), m,
                  num(cs.deviceBytesPerCell).c_str(), cs.queuePeak, jsonEscape(cs.device).c_str());
      std::fflush(stdout);
    }
}

/// Issue #18: the Plummer sphere as softened particles (see --plummer-particles above).
void runPlummerParticles(const TimingArgs& a, std::size_t n) {
  const tools::PlummerPoints pts = tools::plummerPoints(n, 18);
  const double eps = a.softeningLength;
  ParticlesView parts{pts.x.data(), pts.y.data(), pts.z.data(), pts.m.data(), nullptr, eps, n};
  SystemView sys;
  sys.particles = parts;
  std::mt19937_64 pick(4096);
  std::vector<std::size_t> targets(std::min(a.checkPoints, n));
  for (auto& t : targets) t = std::size_t(pick() % n);
  auto gpu = makeCudaBackend(CudaOptions{});
  std::vector<double> out[4];
  for (auto& v : out) v.assign(n, 0.0);
  for (const std::string& kname : a.kernels) {
    const SofteningKernel kernel = kname == "plummer" ? SofteningKernel::Plummer : SofteningKernel::Spline;
    const auto tg = Clock::now();
    const std::vector<double> ref = tools::softenedAccelerations(pts, targets, eps, kernel, 0);
    std::fprintf(stderr, "plummer particles %zu, %s: %zu direct sums in %.2f s\n", n, kname.c_str(), targets.size(),
                 since(tg));
    for (double theta : a.thetas) {
      SolveOptions o;
      o.G = 1;
      o.theta = theta;
      if (a.groupSize > 0) o.groupSize = a.groupSize;
      o.order = 2;
      o.accelerations = true;
      o.softening = kernel;
      SystemResult r;
      r.particles.into = ResultTargets{out[0].data(), out[1].data(), out[2].data(), out[3].data()};
      Status st = gpu->solveSystem(sys, o, false, r);  // warm-up
      double wall = INFINITY, device = INFINITY, treeS = INFINITY, walkS = INFINITY, treeParts[4] = {0, 0, 0, 0};
      int treeDepth = 0;
      for (int rep = 0; rep < a.reps && st.ok(); ++rep) {
        const auto t = Clock::now();
        st = gpu->solveSystem(sys, o, false, r);
        wall = std::min(wall, since(t));
        const CudaStats cs = deviceStats(*gpu);
        device = std::min(device, cs.secondsParticleTree + cs.secondsParticleWalk);
        if (cs.secondsParticleTree < treeS)
          for (int k = 0; k < 4; ++k) treeParts[k] = cs.particleTreeParts[k];
        treeDepth = cs.particleTreeDepth;
        treeS = std::min(treeS, cs.secondsParticleTree);
        walkS = std::min(walkS, cs.secondsParticleWalk);
      }
      if (!st.ok()) {
        std::printf("{\"kind\":\"plummer-particles\",\"points\":%zu,\"kernel\":\"%s\",\"error\":\"%s\"}\n", n,
                    kname.c_str(), jsonEscape(st.message).c_str());
        ++gErrors;
        continue;
      }
      const std::vector<double> err = sortedAccelerationErrors(out, targets, ref);
      const std::size_t m = err.size();
      auto at = [&](std::size_t k) { return m == 0 ? NAN : err[std::min(m - 1, k)]; };
      std::printf("{\"kind\":\"plummer-particles\",\"points\":%zu,\"kernel\":\"%s\",\"softening\":%s,"
                  "\"theta\":%s,\"group_size\":%d,\"reps\":%d,\"device_s\":%s,\"tree_s\":%s,\"walk_s\":%s,\"wall_s\":%s,"
                  "\"tree_parts_s\":[%s,%s,%s,%s],\"tree_depth\":%d,\"groups\":%zu,\"nodes\":%zu,"
                  "\"interactions_per_particle\":%s,\"err_median\":%s,\"err_p99\":%s,\"err_max\":%s,"
                  "\"check_points\":%zu,\"device\":\"%s\"}\n",
                  n, kname.c_str(), num(eps).c_str(), num(theta).c_str(), o.groupSize, a.reps, num(device).c_str(),
                  num(treeS).c_str(), num(walkS).c_str(), num(wall).c_str(), num(treeParts[0]).c_str(),
                  num(treeParts[1]).c_str(), num(treeParts[2]).c_str(), num(treeParts[3]).c_str(), treeDepth,
                  r.system.particleGroups,
                  r.system.particleNodes,
                  num(double(r.system.particleApprox + r.system.particleDirect) / double(n)).c_str(),
                  num(at(m / 2)).c_str(), num(at(m * 99 / 100)).c_str(), num(at(m - 1)).c_str(), m,
                  jsonEscape(deviceStats(*gpu).device).c_str());
      std::fflush(stdout);
    }
  }
}

void runPerf(const TimingArgs& a) {
  auto gpu = makeCudaBackend(CudaOptions{});
  for (int grid : a.perfGrids) {
    const auto tg = Clock::now();
    const Cells cells = uniformGrid(grid, kKpc, 1e-24);
    std::fprintf(stderr, "grid %d^3 generated in %.2f s\n", grid, since(tg));
    struct Variant {
      int order; bool accel; WalkKind walk; bool pinned; int copyThreads; int group; int leaf; bool periodic = false;
      bool paired = true;  // CudaOptions::pairedCells
    };
    std::vector<Variant> variants = {{2, true, WalkKind::Box, true, 0, 32, 16},  {2, false, WalkKind::Box, true, 0, 32, 16},
                                     {1, true, WalkKind::Box, true, 0, 32, 16},  {1, false, WalkKind::Box, true, 0, 32, 16},
                                     {2, true, WalkKind::Vote, true, 0, 32, 16}, {2, true, WalkKind::Box, false, 0, 32, 16},
                                     {2, true, WalkKind::Box, true, 1, 32, 16},
                                     // issue #6: the periodic solve of the same cells, against the isolated one
                                     {2, false, WalkKind::Box, true, 0, 32, 16, true},
                                     {2, true, WalkKind::Box, true, 0, 32, 16, true},
                                     {1, false, WalkKind::Box, true, 0, 32, 16, true},
                                     // the default groups of 64 (types.h cellGroupSize), isolated and periodic
                                     {2, false, WalkKind::Box, true, 0, 64, 16},
                                     {2, false, WalkKind::Box, true, 0, 64, 16, true},
                                     {2, true, WalkKind::Box, true, 0, 64, 16, true},
                                     // groups of 64 with accelerations; each of them without the paired evaluators
                                     {2, true, WalkKind::Box, true, 0, 64, 16},
                                     {2, false, WalkKind::Box, true, 0, 64, 16, false, false},
                                     {2, true, WalkKind::Box, true, 0, 64, 16, false, false},
                                     {2, false, WalkKind::Box, true, 0, 64, 16, true, false},
                                     {2, true, WalkKind::Box, true, 0, 64, 16, true, false}};
    if (a.sweep)  // group and leaf sizes, potential only and with accelerations
      for (int order : {2, 1})
        for (bool accel : {false, true})
          for (int group : {32, 64})
            for (int leaf : {8, 16, 32})
              if (!(group == 32 && leaf == 16)) variants.push_back({order, accel, WalkKind::Box, true, 0, group, leaf});
    for (const Variant& v : variants) {
      SolveOptions o;
      o.walk = v.walk;
      o.theta = 0.5;
      o.order = v.order;
      o.accelerations = v.accel;
      o.groupSize = v.group;
      o.leafSize = v.leaf;
      if (v.periodic) o = periodicBox(o, true, true, true);
      CudaOptions co = cudaOpts(v.pinned, 4096, false, v.copyThreads);
      co.pairedCells = v.paired;
      timeVariant(a, *gpu, cells, grid, o, co);
    }
    if (a.cpuPerf)
      for (int order : {2, 1}) timeCpu(cells, grid, order, false);
  }
  setDeviceOptions(*gpu, CudaOptions{});
  // the direct-summation kernel's rate on a uniform subset
  {
    int side = 1;
    while (std::size_t(side + 1) * (side + 1) * (side + 1) <= a.directN) ++side;
    const Cells full = uniformGrid(side + 1, kKpc, 1e-24);
    const Cells cells = subset(full, a.directN);
    for (bool accel : {false, true}) {
      SolveOptions o;
      o.accelerations = accel;
      SolveResult r;
      Status st = gpu->direct(cells.view(), o, r);
      std::vector<double> k;
      for (int rep = 0; rep < a.reps && st.ok(); ++rep) {
        st = gpu->direct(cells.view(), o, r);
        k.push_back(deviceStats(*gpu).secondsWalk);
      }
      if (!st.ok()) {
        std::printf("{\"kind\":\"perf_direct\",\"error\":\"%s\"}\n", jsonEscape(st.message).c_str());
        ++gErrors;
        continue;
      }
      const double n = double(cells.size()), t = median(k);
      std::printf("{\"kind\":\"perf_direct\",\"cells\":%zu,\"accelerations\":%s,\"kernel_s\":%s,"
                  "\"interactions_per_s\":%s}\n",
                  cells.size(), accel ? "true" : "false", num(t).c_str(), num(n * (n - 1) / t).c_str());
      std::fflush(stdout);
    }
  }
}

/// --split: see the comment at the top. Per repetition, rank r's serial path is open (upload, bounds) + build and
/// summary + choosing and packing its LET + its local walk with the other's LET put up beside it + the walk of
/// that LET + finish; on two GPUs the ranks run theirs at the same time, so the emulated two-rank time is the
/// larger of the two. Left out of the path (timed, reported): the LET's download, and its MPI transfer (not timed),
/// which the solve runs beside the local walk; on two GPUs they must end before it does (17 ms at 256^3).
void runSplitBench(const TimingArgs& a) {
  const int n = a.split;
  const Cells all = uniformGrid(n, kKpc, 1e-24);
  const std::size_t cut = all.size() / 2;  // uniformGrid's z is the outer loop: the halves z < L/2 and z >= L/2
  Cells half[2];
  for (std::size_t i = 0; i < all.size(); ++i)
    half[i < cut ? 0 : 1].push(all.x[i], all.y[i], all.z[i], all.m[i], all.h[i]);
  SolveOptions o;
  // --copy-threads: the staged copies' host threads (all three backends; 0: the backend's default)
  auto one = makeCudaBackend(cudaOpts(true, 4096, false, a.copyThreads));
  std::unique_ptr<CudaBackend> rank[2] = {makeCudaBackend(cudaOpts(true, 4096, false, a.copyThreads)),
                                          makeCudaBackend(cudaOpts(true, 4096, false, a.copyThreads))};
  SolveResult ref;
  double best1 = INFINITY;
  for (int rep = 0; rep <= a.reps; ++rep) {
    const auto t = Clock::now();
    const Status st = one->solve(all.view(), o, ref);
    if (!st.ok()) {
      std::printf("{\"kind\":\"split\",\"error\":\"%s\"}\n", jsonEscape(st.message).c_str());
      ++gErrors;
      return;
    }
    if (rep > 0) best1 = std::min(best1, since(t));
  }
  enum { kOpen, kBuild, kLet, kLocal, kRemote, kFinish, kDownload, kPhases };
  const char* names[kPhases] = {"open",    "buildAndSummary", "letChoose", "localWalkAndLetUpload",
                                "letWalk", "finish",          "letDownloadBeside"};
  double bestPhase[2][kPhases] = {}, best2 = INFINITY, err = 0, pairsPerCell[2][2] = {};
  std::size_t letBytes[2] = {0, 0};
  SolveResult res[2];  // reused, as a hydro code's arrays (and the one-rank solve's `ref`), and the LET buffers
  PackedLet let[2];
  for (int rep = 0; rep <= a.reps; ++rep) {
    double ph[2][kPhases] = {};
    auto timed = [&](int r, int p, const std::function<Status()>& f) {
      const auto t = Clock::now();
      const Status st = f();
      ph[r][p] += since(t);
      if (!st.ok()) { std::printf("{\"kind\":\"split\",\"error\":\"%s\"}\n", jsonEscape(st.message).c_str()); std::exit(1); }
    };
    double lo[2][3], hi[2][3], side = 0;
    for (int r = 0; r < 2; ++r) timed(r, kOpen, [&] { return rank[r]->rankOpen(half[r].view(), o, lo[r], hi[r]); });
    for (int d = 0; d < 3; ++d) side = std::max(side, std::max(hi[0][d], hi[1][d]) - std::min(lo[0][d], lo[1][d]));
    RankSummary sm[2];
    SolveStats stats[2];
    for (int r = 0; r < 2; ++r)
      timed(r, kBuild, [&] {
        const double total = fixedOrderSum(half[0].view().mass, half[0].view().n, 0) +
                             fixedOrderSum(half[1].view().mass, half[1].view().n, 0);  // the driver's allreduce
        AG_TRY(rank[r]->rankBuild(half[r].view(), o, lengthScaleFor(side), total, stats[r]));
        return rank[r]->rankSummary(sm[r]);
      });
    for (int r = 0; r < 2; ++r)
      timed(r, kLet, [&] {
        RemoteBox b;
        for (int d = 0; d < 3; ++d) { b.lo[d] = sm[1 - r].centreLo[d]; b.hi[d] = sm[1 - r].centreHi[d]; }
        std::size_t nodes = 0, cells = 0;
        return rank[r]->rankChooseLets(&b, 1, &nodes, &cells);
      });
    // the LETs' downloads, which the solve runs beside the local walk (as the MPI transfer), timed on their own
    for (int r = 0; r < 2; ++r) timed(r, kDownload, [&] { return rank[r]->rankDownloadLet(0, let[r]); });
    // as the solve on two GPUs: the walk queued, the other's LET (arrived during the walk) put up beside it
    ReceivedLet in[2];
    for (int r = 0; r < 2; ++r)
      timed(r, kLocal, [&] {
        AG_TRY(rank[r]->rankStartLocalWalk(o));
        in[r].words = let[1 - r].words.data();
        in[r].bytes = let[1 - r].bytes();
        AG_TRY(viewPackedLet(in[r].words, in[r].bytes, in[r].view));
        AG_TRY(rank[r]->rankPrepareReceived(&in[r], 1));
        return rank[r]->rankFinishLocalWalk(o, stats[r]);
      });
    unsigned long long localPairs[2];
    for (int r = 0; r < 2; ++r) localPairs[r] = stats[r].approxInteractions + stats[r].directInteractions;
    for (int r = 0; r < 2; ++r) {
      timed(r, kRemote, [&] { return rank[r]->rankWalkReceived(&in[r], 1, o, stats[r]); });
      timed(r, kFinish, [&] { return rank[r]->rankFinish(o, res[r]); });
      letBytes[r] = let[r].bytes();
    }
    double total[2] = {0, 0};
    for (int r = 0; r < 2; ++r)
      for (int p = 0; p < kPhases; ++p) total[r] += p == kDownload ? 0.0 : ph[r][p];
    const double t2 = std::max(total[0], total[1]);
    if (rep > 0 && t2 < best2) {
      best2 = t2;
      std::memcpy(bestPhase, ph, sizeof ph);
      for (int r = 0; r < 2; ++r) {
        pairsPerCell[r][0] = double(localPairs[r]) / double(half[r].size());
        pairsPerCell[r][1] =
            double(stats[r].approxInteractions + stats[r].directInteractions - localPairs[r]) / double(half[r].size());
      }
    }
    err = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const double got = i < cut ? res[0].potential[i] : res[1].potential[i - cut];
      err = std::max(err, std::fabs(got - ref.potential[i]) / std::fabs(ref.potential[i]));
    }
  }
  std::string phases;
  for (int r = 0; r < 2; ++r) {
    phases += std::string(r ? "," : "") + "{\"rank\":" + std::to_string(r) + ",\"letBytesSent\":" +
              std::to_string(letBytes[r]);
    for (int p = 0; p < kPhases; ++p) phases += std::string(",\"") + names[p] + "\":" + num(bestPhase[r][p]);
    phases += ",\"localPairsPerCell\":" + num(pairsPerCell[r][0]) + ",\"letPairsPerCell\":" + num(pairsPerCell[r][1]);
    const CudaStats cs = deviceStats(*rank[r]);  // the last repetition's device phases
    phases += ",\"device\":{\"upload\":" + num(cs.secondsUpload) + ",\"keys\":" + num(cs.secondsKeys) +
              ",\"build\":" + num(cs.secondsBuild) + ",\"moments\":" + num(cs.secondsMoments) +
              ",\"download\":" + num(cs.secondsDownload) + "}";
    phases += "}";
  }
  std::printf("{\"kind\":\"split\",\"grid\":%d,\"copyThreads\":%d,\"cells\":%zu,\"oneRankSeconds\":%s,\"twoRankSeconds\":%s,"
              "\"speedup\":%s,\"maxRelDiffVsOneRank\":%s,\"ranks\":[%s]}\n",
              n, a.copyThreads, all.size(), num(best1).c_str(), num(best2).c_str(), num(best1 / best2).c_str(), num(err).c_str(),
              phases.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const TimingArgs a = parseArgs(argc, argv);
  std::string why;
  if (!cudaDeviceAvailable(&why)) {
    std::printf("{\"kind\":\"no_device\",\"reason\":\"%s\"}\n", jsonEscape(why).c_str());
    return kExitNoDevice;
  }
  if (a.perf) runPerf(a);
  if (a.split > 0) runSplitBench(a);
  if (!a.fmmGrids.empty() || !a.fmmCellFiles.empty()) runFmmTimings(a);
  for (double points : a.plummer) runPlummer(a, std::size_t(points));
  for (double points : a.plummerParticles) runPlummerParticles(a, std::size_t(points));
  return gErrors == 0 ? kExitPass : kExitFail;
}
