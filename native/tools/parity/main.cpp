/// \file main.cpp
/// \brief amrgrav_gpu_parity: the CPU-vs-CUDA checks, standalone (no Node), one subject or several per run. One
/// line per case ("ok" or "FAIL", the case's name and its figures; --json: one JSON object per case instead), then
/// a summary. Timings are another program (native/tools/gpu_timing.cpp, amrgrav_gpu_timing). CTest runs each
/// subject as the test gpu.SUBJECT (label gpu, cmake/cuda.cmake): `ctest -L gpu --output-on-failure`.
///
///   amrgrav_gpu_parity [SUBJECT...] [--quick] [--json] [--uniform N] [--amr CELLS] [--direct-parity CELLS]
///                      [--tol T] [--seed S]
///   amrgrav_gpu_parity --list
///
///   SUBJECT           isolated, direct, errors, memory, periodic, contrast, let, vote, paired, system, clustered,
///                     particles, hostblocks, fmm, fmm-lists, fmm-tiles, fmm-tree, fmm-periodic, fmm-blocks, fmm-ranks
///                     (--list says what each checks), or all (the default): every subject in that order, on one
///                     backend object
///   --quick           small sizes (for compute-sanitizer): --uniform 12 --amr 6000 --direct-parity 3000
///   --uniform N       the uniform grid's side (default 32; the periodic cases use 64 unless N < 32)
///   --amr CELLS       cells of the clustered AMR-like set (default 200000)
///   --direct-parity   cells of the direct-summation cases (default 20000)
///   --tol T           the parity tolerance (default 1e-5)
///   --seed S          the AMR-like set's seed (default 12345)
///
/// Exit status: 0 every check passed; 1 a check failed; 2 no usable CUDA device, which the backend reported as a
/// Status (CTest counts this as skipped; with AMRGRAV_REQUIRE_GPU=1 in the environment it is 1, a failure);
/// 64 a bad command line.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/parity/harness.h"

using namespace amrgrav;
using namespace amrgrav::parity;

namespace {

struct Subject {
  const char* name;
  void (*run)(Context&);
  const char* what;
};

// `all` runs them in this order (cmake/cuda.cmake registers one CTest test per name)
const Subject kSubjects[] = {
    {"isolated", runIsolated, "tree solves in an open domain: uniform and AMR, every option, deep nests, tiny inputs"},
    {"direct", runDirect, "direct summation (the direct kernel)"},
    {"errors", runErrors, "refused inputs and options: the CPU's error code and message; empty input"},
    {"memory", runMemory, "walk queue regrowth, device buffers reused across sizes, determinism, pageable copies"},
    {"periodic", runPeriodic, "Ewald walks, expansion and per pair, 3, 2 and 1 periodic axes, box and vote walks"},
    {"contrast", runContrast, "signed sources: the density contrast of a 1e-6 perturbation, masses as given"},
    {"let", runLet, "LETs chosen and packed on the device vs the host's, byte for byte; the rank's summary"},
    {"vote", runVote, "the vote walk vs direct summation and vs the CPU's vote walk"},
    {"paired", runPaired, "the walk's paired evaluators (two cells of a lane sharing x, y): bitwise unpaired, used"},
    {"system", runSystem, "system solves: probes and target subsets, CPU vs CUDA lists and values, subsets bitwise"},
    {"clustered", runClustered, "a Plummer sphere of points: the walk groups cut at home nodes, box and vote walks"},
    {"particles", runParticles, "softened particles with gas and probes, both kernels: CPU vs CUDA lists and values"},
    {"hostblocks", runHostBlocks, "the host block entry: the walk in chunks, results downloaded meanwhile, bitwise"},
    {"fmm", runFmm, "method 'fmm': the GPU's evaluation of the CPU's lists vs the CPU's FMM, momentum, determinism"},
    {"fmm-lists", runFmmLists, "the FMM's lists built on the device vs the host's, array for array; solves with them"},
    {"fmm-tiles", runFmmTiles, "the FMM's near lists and P2P tiles built on the device vs the host's; solves bitwise"},
    {"fmm-tree", runFmmTree, "the FMM tree and upward pass built on the device vs the host's, by bits; solves bitwise"},
    {"fmm-periodic", runFmmPeriodic,
     "method 'fmm' in periodic boxes (fully, sheet, line): the GPU's evaluation with image shifts vs the CPU's FMM"},
    {"fmm-blocks", runFmmBlocks,
     "method 'fmm' through the block entry (host and device data, unk with guards): bitwise the cell entry"},
    {"fmm-ranks", runFmmRanks,
     "method 'fmm' over ranks as threads, each rank's own lists on the GPU: vs CPU ranks and one GPU process"},
};

const Subject* findSubject(const std::string& name) {
  for (const Subject& s : kSubjects)
    if (name == s.name) return &s;
  return nullptr;
}

[[noreturn]] void usage(const char* fmt, const std::string& arg) {
  std::fprintf(stderr, fmt, arg.c_str());
  std::fprintf(stderr, "\nusage: amrgrav_gpu_parity [SUBJECT...|all] [--quick] [--json] [--uniform N] [--amr CELLS] "
                       "[--direct-parity CELLS] [--tol T] [--seed S] | --list\n");
  std::exit(kExitUsage);
}

Args parseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after %s", k);
      return argv[++i];
    };
    if (k == "--quick") { a.uniform = 12; a.amr = 6000; a.directParity = 3000; }
    else if (k == "--json") a.json = true;
    else if (k == "--uniform") a.uniform = std::atoi(next().c_str());
    else if (k == "--amr") a.amr = std::strtoull(next().c_str(), nullptr, 10);
    else if (k == "--direct-parity") a.directParity = std::strtoull(next().c_str(), nullptr, 10);
    else if (k == "--tol") a.tol = std::atof(next().c_str());
    else if (k == "--seed") a.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (k == "--list") {
      for (const Subject& s : kSubjects) std::printf("%-9s %s\n", s.name, s.what);
      std::exit(kExitPass);
    } else if (k == "-h" || k == "--help") {
      std::printf("see the comment at the top of native/tools/parity/main.cpp; subjects: --list\n");
      std::exit(kExitPass);
    } else if (k == "--perf" || k == "--no-parity" || k == "--no-perf" || k == "--sweep" || k == "--cpu-perf" ||
               k == "--split" || k == "--reps" || k == "--direct-n" || k == "--copy-threads") {
      usage("%s: the timings are amrgrav_gpu_timing now (native/tools/gpu_timing.cpp); this program only checks", k);
    } else if (k == "all") {
      for (const Subject& s : kSubjects) a.subjects.push_back(s.name);
    } else if (!k.empty() && k[0] != '-' && findSubject(k)) {
      a.subjects.push_back(k);
    } else {
      usage("unknown argument or subject %s (subjects: --list)", k);
    }
  }
  if (a.subjects.empty())
    for (const Subject& s : kSubjects) a.subjects.push_back(s.name);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parseArgs(argc, argv);
  std::string names;
  for (const std::string& s : a.subjects) names += (names.empty() ? "" : " ") + s;
  std::string why;
  if (!cudaDeviceAvailable(&why)) {
    // the backend must report the same, as a Status, without crashing
    auto gpu = makeCudaBackend();
    Cells one;
    one.push(0, 0, 0, 1, 1);
    SolveResult r;
    const Status st = gpu->solve(one.view(), SolveOptions{}, r);
    const bool reported = st.code == ErrorCode::NoDevice;
    if (a.json) {
      std::printf("{\"kind\":\"no_device\",\"reason\":\"%s\"}\n", jsonEscape(why).c_str());
      std::printf("{\"kind\":\"no_device_solve\",\"code\":\"%s\",\"message\":\"%s\"}\n", errorCodeName(st.code),
                  jsonEscape(st.message).c_str());
    } else {
      std::printf("no usable CUDA device: %s\n", why.c_str());
      std::printf("%sno-device-solve  %s: %s\n", reported ? "ok    " : "FAIL  ", errorCodeName(st.code),
                  st.message.c_str());
    }
    if (!reported) return kExitFail;
    const char* require = std::getenv("AMRGRAV_REQUIRE_GPU");
    if (require && *require && std::strcmp(require, "0") != 0) {
      std::printf("FAIL  %s not run: no device, and AMRGRAV_REQUIRE_GPU is set\n", names.c_str());
      return kExitFail;
    }
    std::printf("skipped: %s (no device)\n", names.c_str());
    return kExitNoDevice;
  }
  Context cx(a);
  for (const std::string& s : a.subjects) {
    if (!a.json) std::printf("# subject %s\n", s.c_str());
    std::fflush(stdout);
    const int before = cx.report.checks;
    findSubject(s)->run(cx);
    if (cx.report.checks == before) check(cx, s + "-ran-no-checks", false, "the subject ran no checks");
  }
  std::printf("\n== parity summary (%s): %d checks, %d failed ==\n", names.c_str(), cx.report.checks,
              cx.report.failed);
  for (const std::string& l : cx.report.failures) std::printf("%s\n", l.c_str());
  return cx.report.failed == 0 ? kExitPass : kExitFail;
}
