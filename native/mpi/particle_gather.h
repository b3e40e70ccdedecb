/// \file particle_gather.h
/// \brief Particles in a distributed system solve (issue #18): every rank's particles gathered on every rank, in
/// rank order, so that every rank builds the same particle tree (tree/particle_tree.h). Limit of this design: the
/// particles are replicated on every rank (memory and tree build grow with the global count, not the rank's share):
/// fine for sinks and star clusters; a particle LET, like the cells', is the scalable next step.
/// Include only in files compiled with MPI.
#pragma once
#include <cstddef>
#include <vector>

#include "core/status.h"
#include "core/system.h"

namespace amrgrav {

/// Every rank's particles in rank order: positions, masses and per-particle softening (a single value expanded).
struct GatheredParticles {
  std::vector<double> x, y, z, mass, softening;
  std::size_t ownBegin = 0, ownCount = 0;  ///< this rank's particles within them
  ParticlesView view() const;
};

/// After the ranks agreed to proceed: gathers `mine` (checked) on every rank. `takesParticles`: whether this rank's
/// engine walks particles. When some rank has particles and some rank's engine does not take them, or there are too
/// many for one MPI gather, every rank returns the same InvalidOption / InvalidInput (nothing is left waiting).
/// No particles anywhere: `out` stays empty.
Status gatherParticles(const ParticlesView& mine, bool takesParticles, GatheredParticles& out);

}  // namespace amrgrav
