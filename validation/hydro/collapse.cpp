// The cold collapse of a uniform sphere with amrgrav as the gravity module (C API, isolated boundaries) inside the
// test bed's isothermal hydro code (validation/hydro/isothermal.h), kick-drift-kick, one gravity solve per step.
// Pressureless theory: every shell falls homologously, r = r0 cos^2(b) at t = t_ff (2/pi)(b + sin b cos b),
// t_ff = sqrt(3 pi / (32 G rho0)), so the interior stays uniform at rho0 / cos^6(b). The run follows the density
// at the centre and the energy K + W (W = 1/2 sum m phi from amrgrav's potential; the sound speed is 1e-2 of the
// free-fall speed, so pressure is negligible) until the central density has grown eightfold (r = r0 / 2,
// t = 0.818 t_ff), and prints one JSON object.
//
//   collapse [--nx 32] [--theta 0.5]
//
// Built with -DAMRGRAV_TESTBED_MPI (mpicxx, with -DOMPI_SKIP_MPICXX=1) and run under mpirun, the hydro stays replicated on every rank while
// gravity is distributed: each rank passes amrgrav its own slab of cells (options.distributed) and the ranks
// share the accelerations (MPI_Allgatherv); the result must match one rank's to the tree's accuracy.
//
// Units: G = 1, rho0 = 1, sphere radius 0.25 centred in the unit box, background 1e-3.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "amrgrav.h"
#include "isothermal.h"
#if defined(AMRGRAV_TESTBED_MPI)
#include <mpi.h>
#endif

namespace {

/// Free-fall time at which a homologously collapsing sphere has shrunk to `ratio` of its radius.
double timeAtRadiusRatio(double ratio, double tff) {
  const double b = std::acos(std::sqrt(ratio));
  return tff * (2 / M_PI) * (b + std::sin(b) * std::cos(b));
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, ranks = 1;
#if defined(AMRGRAV_TESTBED_MPI)
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
#endif
  int nx = 32;
  double theta = 0.5;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a];
    if (k == "--nx") nx = std::atoi(argv[a + 1]);
    else if (k == "--theta") theta = std::atof(argv[a + 1]);
  }
  const double G = 1, rho0 = 1, R = 0.25, bg = 1e-3;
  const double tff = std::sqrt(3 * M_PI / (32 * G * rho0));
  const double vff = std::sqrt(2 * G * (4.0 / 3.0) * M_PI * R * R * R * rho0 / R);
  const double cs = 1e-2 * vff;
  hydro::Grid g{{nx, nx, nx}, 1.0 / nx, false};
  const std::size_t n = g.size();
  hydro::State s(n);
  std::vector<double> x(n), y(n), z(n), mass(n), size(n, g.h), pot(n), acc[3];
  for (auto& v : acc) v.resize(n);
  const int sub = 4;  // sub-samples per axis for the volume fraction of cells cut by the surface
  for (int k = 0; k < nx; ++k)
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nx; ++i) {
        const std::size_t c = g.at(i, j, k);
        x[c] = (i + 0.5) * g.h; y[c] = (j + 0.5) * g.h; z[c] = (k + 0.5) * g.h;
        int in = 0;
        for (int a = 0; a < sub; ++a)
          for (int b = 0; b < sub; ++b)
            for (int d = 0; d < sub; ++d) {
              const double px = (i + (a + 0.5) / sub) * g.h - 0.5, py = (j + (b + 0.5) / sub) * g.h - 0.5,
                           pz = (k + (d + 0.5) / sub) * g.h - 0.5;
              in += px * px + py * py + pz * pz <= R * R;
            }
        s.rho[c] = bg + rho0 * in / double(sub * sub * sub);
      }

  amrgrav_options o;
  amrgrav_default_options(&o);
  o.G = G;
  o.theta = theta;
  o.accelerations = 1;
  o.has_box = 1;
  o.box_lo[0] = o.box_lo[1] = o.box_lo[2] = 0;
  o.box_hi[0] = o.box_hi[1] = o.box_hi[2] = 1;
  o.distributed = ranks > 1;
  // this rank's cells: a slab of z-planes (contiguous in the grid's order)
  std::vector<int> first(ranks + 1), counts(ranks), offsets(ranks);
  for (int r = 0; r <= ranks; ++r) first[r] = int(std::size_t(nx) * r / ranks) * nx * nx;
  for (int r = 0; r < ranks; ++r) { offsets[r] = first[r]; counts[r] = first[r + 1] - first[r]; }
  const std::size_t mine = std::size_t(first[rank]), myCount = std::size_t(counts[rank]);
  amrgrav_solver* solver = nullptr;
  if (amrgrav_create(&o, &solver) != AMRGRAV_OK) {
    std::printf("{\"error\":\"%s\"}\n", amrgrav_last_error(nullptr));
    return 1;
  }
  double tGravity = 0;
  auto gravity = [&]() -> bool {
    for (std::size_t c = 0; c < n; ++c) mass[c] = s.rho[c] * g.h * g.h * g.h;
    const auto tg = hydro::Clock::now();
    const bool ok = amrgrav_compute_potential(solver, myCount, x.data() + mine, y.data() + mine, z.data() + mine,
                                              mass.data() + mine, size.data() + mine, pot.data() + mine,
                                              acc[0].data() + mine, acc[1].data() + mine,
                                              acc[2].data() + mine) == AMRGRAV_OK;
#if defined(AMRGRAV_TESTBED_MPI)
    if (ranks > 1)  // every rank's hydro needs the whole field
      for (std::vector<double>* v : {&pot, &acc[0], &acc[1], &acc[2]})
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, v->data(), counts.data(), offsets.data(), MPI_DOUBLE,
                       MPI_COMM_WORLD);
#endif
    tGravity += hydro::since(tg);
    if (!ok) std::printf("{\"error\":\"%s\"}\n", amrgrav_last_error(solver));
    return ok;
  };
  auto kick = [&](double tau) { hydro::kick(s, acc, tau); };
  auto energy = [&](double& K, double& W) {
    K = W = 0;
    const double v = g.h * g.h * g.h;
    for (std::size_t c = 0; c < n; ++c) {
      K += 0.5 * v * (s.mx[c] * s.mx[c] + s.my[c] * s.my[c] + s.mz[c] * s.mz[c]) / s.rho[c];
      W += 0.5 * v * s.rho[c] * pot[c];
    }
  };
  /// mean density of the cells within 2 cell sides of the centre
  auto centralDensity = [&]() {
    double sum = 0;
    int cnt = 0;
    for (std::size_t c = 0; c < n; ++c) {
      const double dx = x[c] - 0.5, dy = y[c] - 0.5, dz = z[c] - 0.5;
      if (dx * dx + dy * dy + dz * dz <= 4 * g.h * g.h) { sum += s.rho[c]; ++cnt; }
    }
    return sum / cnt;
  };

  const auto tAll = hydro::Clock::now();
  if (!gravity()) return 1;
  double K0, W0;
  energy(K0, W0);
  const double target = 8 * rho0;  // r = r0 / 2
  const double tTheory = timeAtRadiusRatio(0.5, tff);
  double t = 0, tPrev = 0, rhoPrev = centralDensity(), maxEnergyDrift = 0, tCross = -1;
  int steps = 0;
  const double density0 = rhoPrev;
  while (t < 1.2 * tTheory && steps < 10000) {
    double vmax = 0;
    for (std::size_t c = 0; c < n; ++c)
      vmax = std::fmax(vmax, std::sqrt(s.mx[c] * s.mx[c] + s.my[c] * s.my[c] + s.mz[c] * s.mz[c]) / s.rho[c]);
    const double dt = std::fmin(0.3 * g.h / (vmax + cs), 0.02 * tff);
    kick(0.5 * dt);
    hydro::hydroStep(g, cs, dt, s);
    if (!gravity()) return 1;
    kick(0.5 * dt);
    t += dt;
    ++steps;
    double K, W;
    energy(K, W);
    const double rhoC = centralDensity();
    if (tCross < 0) maxEnergyDrift = std::fmax(maxEnergyDrift, std::fabs((K + W) - (K0 + W0)) / std::fabs(W0));
    if (tCross < 0 && rhoC >= target) tCross = tPrev + (t - tPrev) * (target - rhoPrev) / (rhoC - rhoPrev);
    tPrev = t;
    rhoPrev = rhoC;
    if (tCross >= 0) break;
  }
  const double total = hydro::since(tAll);
  amrgrav_stats st;
  amrgrav_get_stats(solver, &st);
  amrgrav_destroy(solver);
  if (rank == 0)
    std::printf("{\"ranks\":%d,\"cells\":%zu,\"nx\":%d,\"tff\":%.6g,\"tTheory\":%.6g,\"tMeasured\":%.6g,\"relError\":%.3e,"
              "\"centralDensity0\":%.6g,\"maxEnergyDrift\":%.3e,\"W0\":%.6g,\"steps\":%d,\"gravityFraction\":%.3f,"
              "\"seconds\":%.3f,\"backend\":%d}\n",
              ranks, n, nx, tff, tTheory, tCross, tCross > 0 ? std::fabs(tCross - tTheory) / tTheory : 1.0, density0,
              maxEnergyDrift, W0, steps, tGravity / total, total, st.backend);
#if defined(AMRGRAV_TESTBED_MPI)
  MPI_Finalize();
#endif
  return tCross > 0 ? 0 : 1;
}
