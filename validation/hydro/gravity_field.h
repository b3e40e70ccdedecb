/// \file gravity_field.h
/// \brief amrgrav as the hydro test bed's gravity module, through its C API: one call per step gives the potential
/// and the accelerations on the whole grid. Built with AMRGRAV_TESTBED_MPI and run under mpirun, each rank hands
/// amrgrav its own slab of z-planes (options.distributed: a collective) and the ranks share the results, so the
/// (replicated) hydro sees the same field as on one rank.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "amrgrav.h"
#include "isothermal.h"
#if defined(AMRGRAV_TESTBED_MPI)
#include <mpi.h>
#endif

namespace hydro {

/// This process's MPI rank and rank count (0 of 1 without MPI).
inline void worldOf(int& rank, int& ranks) {
  rank = 0;
  ranks = 1;
#if defined(AMRGRAV_TESTBED_MPI)
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
#endif
}

class GravityField {
 public:
  std::vector<double> pot, acc[3];
  double seconds = 0;  ///< spent in gravity, this rank

  /// A solver with `o` (box, boundaries, theta, G...; accelerations and the distribution are set here).
  GravityField(const Grid& g, amrgrav_options o) : g_(g) {
    worldOf(rank_, ranks_);
    const std::size_t n = g.size();
    x_.resize(n); y_.resize(n); z_.resize(n); mass_.resize(n); size_.assign(n, g.h); pot.resize(n);
    for (auto& v : acc) v.resize(n);
    for (int k = 0; k < g.n[2]; ++k)
      for (int j = 0; j < g.n[1]; ++j)
        for (int i = 0; i < g.n[0]; ++i) {
          const std::size_t c = g.at(i, j, k);
          x_[c] = (i + 0.5) * g.h; y_[c] = (j + 0.5) * g.h; z_[c] = (k + 0.5) * g.h;
        }
    const int plane = g.n[0] * g.n[1];
    counts_.resize(ranks_);
    offsets_.resize(ranks_);
    for (int r = 0; r < ranks_; ++r) {
      offsets_[r] = int(std::size_t(g.n[2]) * r / ranks_) * plane;
      counts_[r] = int(std::size_t(g.n[2]) * (r + 1) / ranks_) * plane - offsets_[r];
    }
    o.accelerations = 1;
    o.distributed = ranks_ > 1;
    if (amrgrav_create(&o, &solver_) != AMRGRAV_OK) error_ = amrgrav_last_error(nullptr);
  }
  ~GravityField() { amrgrav_destroy(solver_); }
  GravityField(const GravityField&) = delete;
  GravityField& operator=(const GravityField&) = delete;

  bool ok() const { return solver_ != nullptr && error_.empty(); }
  const std::string& error() const { return error_; }
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

  /// The field of the density in `s`; false (error() says why) on failure.
  bool compute(const State& s) {
    const auto t = Clock::now();
    const std::size_t n = g_.size(), at = std::size_t(offsets_[rank_]), count = std::size_t(counts_[rank_]);
    for (std::size_t c = 0; c < n; ++c) mass_[c] = s.rho[c] * g_.h * g_.h * g_.h;
    const bool ok = amrgrav_compute_potential(solver_, count, x_.data() + at, y_.data() + at, z_.data() + at,
                                              mass_.data() + at, size_.data() + at, pot.data() + at,
                                              acc[0].data() + at, acc[1].data() + at, acc[2].data() + at) == AMRGRAV_OK;
    if (!ok) error_ = amrgrav_last_error(solver_);
#if defined(AMRGRAV_TESTBED_MPI)
    if (ok && ranks_ > 1)  // every rank's hydro needs the whole field
      for (std::vector<double>* v : {&pot, &acc[0], &acc[1], &acc[2]})
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, v->data(), counts_.data(), offsets_.data(), MPI_DOUBLE,
                       MPI_COMM_WORLD);
#endif
    seconds += since(t);
    return ok;
  }

 private:
  Grid g_;
  int rank_ = 0, ranks_ = 1;
  std::vector<double> x_, y_, z_, mass_, size_;
  std::vector<int> counts_, offsets_;
  amrgrav_solver* solver_ = nullptr;
  std::string error_;
};

}  // namespace hydro
