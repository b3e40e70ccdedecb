/// \file agreement.cpp
/// \brief Status agreement, global bounds and the gather to rank 0 (see agreement.h).
#include "mpi/agreement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mpi/mpi_world.h"

#if defined(AMRGRAV_HAVE_MPI)
#include "mpi/mpi_check.h"
#endif

namespace amrgrav {

#if defined(AMRGRAV_HAVE_MPI)
namespace {
constexpr int kMessageBytes = 1024;

/// The options every rank must share, as numbers, with the name the user knows them by (several numbers may carry
/// one name: the box's six bounds, the three periodic axes). `threads` is each rank's own business.
struct OptionValues {
  static constexpr int kCount = 22;
  double v[kCount] = {};
  static const char* name(int k) {
    static const char* names[kCount] = {"theta", "order", "mac", "walk", "G", "leafSize", "groupSize",
                                        "selfPotential", "accelerations", "box", "box", "box", "box", "box",
                                        "box", "box", "boundary", "boundary", "boundary", "ewaldResolution",
                                        "densityContrast", "softening"};
    return names[k];
  }
  explicit OptionValues(const SolveOptions* o) {
    if (!o) return;
    const double f[kCount] = {o->theta, double(o->order), double(int(o->mac)), double(int(o->walk)), o->G,
                              double(o->leafSize), double(o->groupSize), double(int(o->selfPotential)),
                              o->accelerations ? 1.0 : 0.0, o->hasBox ? 1.0 : 0.0,
                              o->hasBox ? o->boxLo[0] : 0.0, o->hasBox ? o->boxLo[1] : 0.0, o->hasBox ? o->boxLo[2] : 0.0,
                              o->hasBox ? o->boxHi[0] : 0.0, o->hasBox ? o->boxHi[1] : 0.0, o->hasBox ? o->boxHi[2] : 0.0,
                              o->periodic[0] ? 1.0 : 0.0, o->periodic[1] ? 1.0 : 0.0, o->periodic[2] ? 1.0 : 0.0,
                              // the expansion flag rides on the resolution's sign: both choose the Ewald sums
                              double(o->ewaldResolution) * (o->ewaldExpansion ? 1.0 : -1.0),
                              o->densityContrast ? 1.0 : 0.0, double(int(o->softening))};
    for (int k = 0; k < kCount; ++k) v[k] = f[k];
  }
};

std::string fmtOption(const char* name, double v) {
  char b[64];
  if (std::string(name) == "softening")
    std::snprintf(b, sizeof b, "%s", v == 0 ? "'spline'" : "'plummer'");
  else if (std::string(name) == "ewaldResolution")  // the sign is ewaldExpansion
    std::snprintf(b, sizeof b, "%d%s", int(std::fabs(v)), v < 0 ? " (ewaldExpansion false)" : "");
  else {
    std::snprintf(b, sizeof b, "%.15g", v);  // 0.4, not 0.40000000000000002, unless that loses the difference
    if (std::strtod(b, nullptr) != v) std::snprintf(b, sizeof b, "%.17g", v);
  }
  return b;
}
}  // namespace

Status agreeToProceed(const Status& local, double lo[3], double hi[3], const SolveOptions* opt) {
  MPI_Comm comm = amrgravComm();
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  // One MIN reduction carries the bounds (hi negated), the lowest failing rank (size when none fails) and the
  // options' smallest and (negated) largest values: an option whose two differ is not the same on every rank.
  constexpr int K = OptionValues::kCount;
  const OptionValues mine(opt);
  double v[7 + 2 * K] = {lo[0], lo[1], lo[2], -hi[0], -hi[1], -hi[2], local.ok() ? double(size) : double(rank)};
  for (int k = 0; k < K; ++k) {
    v[7 + k] = mine.v[k];
    v[7 + K + k] = -mine.v[k];
  }
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, 7 + 2 * K, MPI_DOUBLE, MPI_MIN, comm));
  for (int d = 0; d < 3; ++d) { lo[d] = v[d]; hi[d] = -v[3 + d]; }
  const int failed = int(v[6]);
  if (failed >= size) {
    std::string differ;
    for (int k = 0; k < K; ++k) {
      const double least = v[7 + k], most = -v[7 + K + k];
      if (least == most) continue;
      const char* name = OptionValues::name(k);
      if (differ.find(std::string(name) + " ") != std::string::npos) continue;  // the box once, not per bound
      if (!differ.empty()) differ += "; ";
      differ += std::string(name) + " (from " + fmtOption(name, least) + " to " + fmtOption(name, most) + ")";
    }
    if (differ.empty()) return Status::success();
    return Status::error(ErrorCode::InvalidOption,
                         "the ranks passed different solve options: " + differ +
                             "; every rank of a distributed solve must pass the same options (all but threads)");
  }
  char msg[kMessageBytes] = {0};
  if (rank == failed) {
    msg[0] = char(int(local.code));
    std::strncpy(msg + 1, local.message.c_str(), kMessageBytes - 2);
  }
  MPI_CHECK(MPI_Bcast(msg, kMessageBytes, MPI_CHAR, failed, comm));
  msg[kMessageBytes - 1] = 0;
  return Status::error(ErrorCode(int(msg[0])), "rank " + std::to_string(failed) + " of " + std::to_string(size) +
                                                   ": " + std::string(msg + 1));
}

Status gatherToRoot(const double* local, std::size_t n, std::vector<double>& out) {
  MPI_Comm comm = amrgravComm();
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  if (n > std::size_t(INT32_MAX)) abortMpiWorld("gather of more than 2^31 values from one rank");
  int mine = int(n);
  std::vector<int> counts(rank == 0 ? size : 0), displs(rank == 0 ? size : 0);
  MPI_CHECK(MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm));
  out.clear();
  if (rank == 0) {
    long long total = 0;
    for (int r = 0; r < size; ++r) { displs[r] = int(total); total += counts[r]; }
    if (total > INT32_MAX) abortMpiWorld("gather of more than 2^31 values to rank 0");  // the others are in Gatherv
    out.resize(std::size_t(total));
  }
  MPI_CHECK(MPI_Gatherv(local, mine, MPI_DOUBLE, out.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm));
  return Status::success();
}

#else  // a build without MPI is a world of one rank

Status agreeToProceed(const Status& local, double*, double*, const SolveOptions*) { return local; }

Status gatherToRoot(const double* local, std::size_t n, std::vector<double>& out) {
  out.assign(local, local + n);
  return Status::success();
}

#endif

}  // namespace amrgrav
