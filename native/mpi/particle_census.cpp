/// \file particle_census.cpp
/// \brief The particles' census of a distributed system solve (particle_census.h).
#include "mpi/particle_census.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/validate.h"
#include "mpi/mpi_check.h"

namespace amrgrav {

Status takeParticleCensus(const ParticlesView& mine, bool takesParticles, const SolveOptions& opt,
                          ParticleCensus& out) {
  out = ParticleCensus{};
  MPI_Comm comm = amrgravComm();
  int size = 1;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  // per rank: count, takes, mass, smallest softening, lo[3], hi[3]
  constexpr int kWords = 10;
  double me[kWords] = {double(mine.n), takesParticles ? 1.0 : 0.0, 0.0, INFINITY,
                       INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
  const double* p[3] = {mine.x, mine.y, mine.z};
  for (std::size_t i = 0; i < mine.n; ++i) {
    me[2] += mine.mass[i];
    me[3] = std::min(me[3], mine.softeningOf(i));
    for (int d = 0; d < 3; ++d) {
      me[4 + d] = std::min(me[4 + d], p[d][i]);
      me[7 + d] = std::max(me[7 + d], p[d][i]);
    }
  }
  std::vector<double> table(kWords * std::size_t(size));
  MPI_CHECK(MPI_Allgather(me, kWords, MPI_DOUBLE, table.data(), kWords, MPI_DOUBLE, comm));
  // every rank reduces the same table in rank order: the same numbers, the same decision
  int refusing = -1;
  double mass = 0, epsMin = INFINITY;
  for (int d = 0; d < 3; ++d) { out.lo[d] = INFINITY; out.hi[d] = -INFINITY; }
  out.counts.resize(size);
  for (int r = 0; r < size; ++r) {
    const double* t = &table[kWords * std::size_t(r)];
    out.counts[r] = t[0];
    out.total += t[0];
    if (t[1] == 0.0 && t[0] >= 0 && refusing < 0) refusing = r;
    mass += t[2];
    epsMin = std::min(epsMin, t[3]);
    for (int d = 0; d < 3; ++d) {
      out.lo[d] = std::min(out.lo[d], t[4 + d]);
      out.hi[d] = std::max(out.hi[d], t[7 + d]);
    }
  }
  if (out.total == 0) return Status::success();
  if (refusing >= 0)
    return Status::error(ErrorCode::InvalidOption, "particles in a distributed solve: rank " +
                                                       std::to_string(refusing) + "'s engine does not take them");
  // validateParticles' whole-set check, as one process holding every rank's particles makes it
  double side = 0;
  for (int d = 0; d < 3; ++d) side = std::max(side, opt.hasBox ? opt.boxHi[d] - opt.boxLo[d] : out.hi[d] - out.lo[d]);
  return checkMassRange(mass, epsMin, side > 0 ? side : epsMin, opt);
}

}  // namespace amrgrav
