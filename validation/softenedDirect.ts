/**
 * The float64 reference of softened gravity (issue #18): the potential of cells (point masses, unsoftened) and
 * particles (softened) at any point, summed pair by pair in double. The kernels are written here from their
 * definitions, independently of the solver's (native/physics/softening_k.h): Plummer, -G m / sqrt(r^2 + eps^2), and
 * the cubic spline of Monaghan & Lattanzio (1985) in Gadget's form, radius h = 2.8 eps, exactly Newtonian beyond h.
 * A pair is softened by max(eps_target, eps_source); a coincident unsoftened pair adds nothing (the cells' rule).
 */

export type SofteningKernelName = 'spline' | 'plummer';

/** Point sources: positions (cm), masses (g), softening lengths (cm; 0 for cells). */
export interface SoftSources {
  x: ArrayLike<number>;
  y: ArrayLike<number>;
  z: ArrayLike<number>;
  mass: ArrayLike<number>;
  eps: ArrayLike<number>;
}

/** 1/r softened: the potential of a unit mass at distance r with pair softening eps is -G times this. */
export function softenedInverse(kind: SofteningKernelName, r: number, eps: number): number {
  if (eps > 0 && kind === 'plummer') return 1 / Math.sqrt(r * r + eps * eps);
  const h = 2.8 * eps;
  if (r >= h) return r > 0 ? 1 / r : 0;
  const u = r / h;
  if (u < 0.5) return (2.8 - (16 / 3) * u ** 2 + 9.6 * u ** 4 - 6.4 * u ** 5) / h;
  return (3.2 - 1 / (15 * u) - (32 / 3) * u ** 2 + 16 * u ** 3 - 9.6 * u ** 4 + (32 / 15) * u ** 5) / h;
}

/** -G sum_j m_j K(|p - x_j|, max(te, eps_j)) over the sources, leaving out index `skip` (a target's own pair). */
export function softenedPotentialAt(
  kind: SofteningKernelName,
  s: SoftSources,
  G: number,
  px: number,
  py: number,
  pz: number,
  te = 0,
  skip = -1,
): number {
  let sum = 0;
  for (let j = 0; j < s.x.length; j++) {
    if (j === skip) continue;
    const dx = px - s.x[j], dy = py - s.y[j], dz = pz - s.z[j];
    sum += s.mass[j] * softenedInverse(kind, Math.sqrt(dx * dx + dy * dy + dz * dz), Math.max(te, s.eps[j]));
  }
  return -G * sum;
}
