/// \file finish_k.h
/// \brief The results from the walk's sums (sorted order, unscaled, times the mass scale): the potential
/// -G (phi s) and the accelerations -G ((g / massScale) s^2) for the length scale s. The one definition for the
/// CUDA finish kernel (cuda/kernel_finish.cu) and the CUDA block entry's host-side finish of the sums it downloads
/// chunk by chunk of the walk (cuda/blocks_phase.cu): products only, so no contraction into an FMA can make the
/// host's bits differ from the device's.
#pragma once
#include "core/hostdevice.h"

namespace amrgrav {

/// The potential of a cell from its walk sum phi (the self term folded in).
AG_HD double finishedPotential(double phi, double G, double scale) { return -G * (phi * scale); }

/// An acceleration component from its walk sum g; scale2 = scale * scale.
AG_HD double finishedAcceleration(double g, double G, double invMassScale, double scale2) {
  return -G * ((g * invMassScale) * scale2);
}

}  // namespace amrgrav
