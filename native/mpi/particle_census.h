/// \file particle_census.h
/// \brief Particles in a distributed system solve (issue #18): what every rank must know of every rank's particles
/// before the trees are built, agreed in one small allgather: their counts (who sends particle LETs), their global
/// bounds (the length scale of a solve without cells) and their mass range (the check a single process makes over
/// all of them). The particles themselves stay on their rank: each builds the tree of its own and sends the other
/// ranks particle LETs (let/let.h essentialParticlesFor). Include only in files compiled with MPI.
#pragma once
#include <cstddef>
#include <vector>

#include "core/status.h"
#include "core/system.h"
#include "core/types.h"

namespace amrgrav {

/// Every rank's particles in numbers (the same on every rank).
struct ParticleCensus {
  double total = 0;                 ///< particles over all ranks
  std::vector<double> counts;       ///< per rank
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};  ///< bounds of every rank's particles (when total > 0)
};

/// After the ranks agreed to proceed (each rank's particles checked: tree/particle_tree.h validateParticles): the
/// census of `mine`. `takesParticles`: whether this rank's engine walks particles. When some rank has particles and
/// some rank's engine does not take them, or every rank's particles together fail the mass-range check
/// (core/validate.h checkMassRange, as one process holding them all), every rank returns the same InvalidOption /
/// InvalidInput (nothing is left waiting); an MPI failure is Internal.
Status takeParticleCensus(const ParticlesView& mine, bool takesParticles, const SolveOptions& opt,
                          ParticleCensus& out);

}  // namespace amrgrav
