/// \file cpu_particles.cpp
/// \brief amrgrav_cpu_particles: the CPU backend on issue #18's Plummer sphere as softened particles (the sphere of
/// amrgrav_gpu_timing --plummer-particles: tools/plummer.h, G = M = a = 1, truncated at r = 20, equal masses, order
/// 2, accelerations, a system solve of particles alone), for the interaction counts and errors a walk rule gives
/// without a GPU. A benchmark, not a check. One JSON object per line on stdout.
///
///   amrgrav_cpu_particles [--points 1000000] [--thetas 0.42,0.4] [--softening-length 0.01]
///                         [--kernels spline,plummer] [--check-points 2048] [--threads 0]
///
///   seconds: the whole solve (host clock, one run); interactions_per_particle: node and pair interactions of the
///   particles' walk per particle; err_median / err_p99 / err_max: relative acceleration errors against float64
///   softened direct sums (physics/softening_k.h softPairForce, the particle's own pair 0) at --check-points random
///   particles (the same choice as amrgrav_gpu_timing's).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/system.h"
#include "core/thread_pool.h"
#include "cpu/cpu_system.h"
#include "physics/softening_k.h"
#include "tools/plummer.h"

using namespace amrgrav;

namespace {

std::vector<std::string> split(const std::string& v) {
  std::vector<std::string> out;
  for (std::size_t p = 0; p <= v.size();) {
    const std::size_t q = std::min(v.find(',', p), v.size());
    out.push_back(v.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 1000000, checkPoints = 2048;
  std::vector<double> thetas = {0.42, 0.4};
  std::vector<std::string> kernels = {"spline"};
  double eps = 0.01;
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "missing value after %s (see native/tools/cpu_particles.cpp)\n", k.c_str());
      return 64;
    }
    const std::string v = argv[++i];
    if (k == "--points") n = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--thetas") {
      thetas.clear();
      for (const std::string& t : split(v)) thetas.push_back(std::atof(t.c_str()));
    } else if (k == "--softening-length") eps = std::atof(v.c_str());
    else if (k == "--kernels") kernels = split(v);
    else if (k == "--check-points") checkPoints = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--threads") threads = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "unknown option %s (see native/tools/cpu_particles.cpp)\n", k.c_str());
      return 64;
    }
  }
  const tools::PlummerPoints pts = tools::plummerPoints(n, 18);
  ParticlesView parts{pts.x.data(), pts.y.data(), pts.z.data(), pts.m.data(), nullptr, eps, n};
  SystemView sys;
  sys.particles = parts;
  std::mt19937_64 pick(4096);  // amrgrav_gpu_timing's choice of check points
  std::vector<std::size_t> targets(std::min(checkPoints, n));
  for (auto& t : targets) t = std::size_t(pick() % n);
  for (const std::string& kname : kernels) {
    const SofteningKernel kernel = kname == "plummer" ? SofteningKernel::Plummer : SofteningKernel::Spline;
    const auto tr = std::chrono::steady_clock::now();
    const std::vector<double> ref = tools::softenedAccelerations(pts, targets, eps, kernel, threads);
    std::fprintf(stderr, "cpu particles %zu, %s: %zu direct sums in %.2f s\n", n, kname.c_str(), targets.size(),
                 seconds(tr));
    for (const double theta : thetas) {
      SolveOptions o;
      o.G = 1;
      o.theta = theta;
      o.order = 2;
      o.accelerations = true;
      o.softening = kernel;
      o.threads = threads;
      SystemResult r;
      const auto t0 = std::chrono::steady_clock::now();
      const Status st = cpuSolveSystem(sys, o, false, r);
      const double wall = seconds(t0);
      if (!st.ok()) {
        std::printf("{\"kind\":\"cpu-particles\",\"points\":%zu,\"error\":\"%s\"}\n", n, st.message.c_str());
        return 1;
      }
      std::vector<double> err;
      for (std::size_t k = 0; k < targets.size(); ++k) {
        const std::size_t t = targets[k];
        const double dx = r.particles.ax[t] - ref[3 * k], dy = r.particles.ay[t] - ref[3 * k + 1],
                     dz = r.particles.az[t] - ref[3 * k + 2];
        const double a = std::sqrt(ref[3 * k] * ref[3 * k] + ref[3 * k + 1] * ref[3 * k + 1] +
                                   ref[3 * k + 2] * ref[3 * k + 2]);
        err.push_back(std::sqrt(dx * dx + dy * dy + dz * dz) / a);
      }
      std::sort(err.begin(), err.end());
      const std::size_t m = err.size();
      std::printf("{\"kind\":\"cpu-particles\",\"points\":%zu,\"kernel\":\"%s\",\"softening\":%g,\"theta\":%g,"
                  "\"threads\":%d,\"seconds\":%.3f,\"approx_per_particle\":%.1f,\"direct_per_particle\":%.1f,"
                  "\"interactions_per_particle\":%.1f,\"err_median\":%.3g,\"err_p99\":%.3g,\"err_max\":%.3g,"
                  "\"check_points\":%zu}\n",
                  n, kname.c_str(), eps, theta, resolveThreadCount(threads), wall,
                  double(r.system.particleApprox) / double(n), double(r.system.particleDirect) / double(n),
                  double(r.system.particleApprox + r.system.particleDirect) / double(n), err[m / 2],
                  err[std::min(m - 1, m * 99 / 100)], err[m - 1], m);
      std::fflush(stdout);
    }
  }
  return 0;
}
