/**
 * Uniform sphere (Binney & Tremaine 2008, Table 2.1 / sect. 2.2: -2 pi G rho (a^2 - r^2/3) inside, -GM/r outside) and
 * the centre potential of a uniform cube, the self-term of a cell in a cell-based solver.
 */
import { G_CGS } from './constants.js';

export interface UniformSphereParams {
  /** Radius (cm). */
  a: number;
  /** Density (g cm^-3). */
  rho: number;
  /** Gravitational constant; default 6.674e-8 (cgs). */
  G?: number;
  /** Centre; default the origin. */
  centre?: readonly [number, number, number];
}

/** Mass (4/3) pi rho a^3 (g). */
export function uniformSphereMass(a: number, rho: number): number {
  return ((4 * Math.PI) / 3) * rho * a * a * a;
}

/** Potential (erg g^-1, negative) of the uniform sphere at (x, y, z). */
export function uniformSpherePotential(p: UniformSphereParams, x: number, y: number, z: number): number {
  if (!(p.a > 0) || !Number.isFinite(p.a)) throw new RangeError(`sphere radius must be finite and > 0, got ${p.a}`);
  const G = p.G ?? G_CGS;
  const c = p.centre ?? [0, 0, 0];
  const r2 = (x - c[0]) ** 2 + (y - c[1]) ** 2 + (z - c[2]) ** 2;
  if (r2 <= p.a * p.a) return -2 * Math.PI * G * p.rho * (p.a * p.a - r2 / 3);
  return (-G * uniformSphereMass(p.a, p.rho)) / Math.sqrt(r2);
}

/**
 * C = Int_{[-1/2,1/2]^3} dV / r = 3 ln(2 + sqrt 3) - pi/2 = 2.38007738...: a uniform cube of side h and mass m has
 * potential -C G m / h at its centre. (Split the cube into six pyramids with apex at the centre; in each, y = x u,
 * z = x v gives Int_0^{1/2} x dx Int_{[-1,1]^2} du dv / sqrt(1+u^2+v^2) = (1/8) * 4 (ln(2+sqrt 3) - pi/6).)
 */
export const cubeSelfPotentialCoefficient = 3 * Math.log(2 + Math.sqrt(3)) - Math.PI / 2;

/** Potential at the centre of a uniform cube of side h (cm) and mass m (g): -C G m / h. */
export function cubeCentrePotential(m: number, h: number, G: number = G_CGS): number {
  return (-cubeSelfPotentialCoefficient * G * m) / h;
}
