/**
 * Potential of a homogeneous triaxial ellipsoid by direct quadrature of Chandrasekhar's integral
 * (Chandrasekhar 1969, "Ellipsoidal Figures of Equilibrium", ch. 3, eqs. 39-40; also Binney & Tremaine 2008, sect. 2.5):
 *
 *   Phi(x) = -pi G rho a1 a2 a3 * Int_lambda^inf (1 - sum_i x_i^2/(a_i^2+u)) du / Delta(u),
 *   Delta(u) = sqrt((a1^2+u)(a2^2+u)(a3^2+u)),
 *
 * with lambda = 0 inside and the confocal coordinate of the point outside. Used as the reference against which the
 * closed-form MacLaurin expressions and the solver are checked, so it is built for accuracy (~1e-14), not speed.
 *
 * Quadrature: with c a scale and u = lambda + c tan^2(theta), theta in [0, pi/2], and q_i = (a_i^2+lambda) cos^2 +
 * c sin^2, the integrand becomes (1 - cos^2 sum x_i^2/q_i) * 2c sin(theta) / sqrt(q1 q2 q3): smooth and bounded on the
 * closed interval (the u^{-3/2} tail maps to a finite value at pi/2), so adaptive Gauss-Legendre converges fast.
 */
import { confocalLambda } from './confocalLambda.js';
import { G_CGS } from './constants.js';
import { integrateAdaptive } from './quadrature.js';

export interface EllipsoidParams {
  /** Semi-axes along x, y, z (cm), any order, all > 0. */
  a1: number;
  a2: number;
  a3: number;
  /** Density (g cm^-3). */
  rho: number;
  /** Gravitational constant; default 6.674e-8 (cgs). */
  G?: number;
}

export interface IndexSymbols {
  A1: number;
  A2: number;
  A3: number;
}

function checkAxes(a1: number, a2: number, a3: number): void {
  for (const [n, v] of [['a1', a1], ['a2', a2], ['a3', a3]] as const)
    if (!(v > 0) || !Number.isFinite(v)) throw new RangeError(`ellipsoid semi-axis ${n} must be finite and > 0, got ${v}`);
}

/** Maps u in [lambda, inf) to theta in [0, pi/2]; s_i = a_i^2 + lambda (dimensionless). */
function thetaMap(s: readonly [number, number, number]) {
  const c = Math.cbrt(s[0] * s[1] * s[2]); // puts the integrand's features near theta = pi/4
  return (theta: number) => {
    const sn = Math.sin(theta);
    const cs2 = Math.cos(theta) ** 2;
    const sn2 = sn * sn;
    const q = [s[0] * cs2 + c * sn2, s[1] * cs2 + c * sn2, s[2] * cs2 + c * sn2] as const;
    return { q, cs2, jac: (2 * c * sn) / (Math.sqrt(q[0]) * Math.sqrt(q[1]) * Math.sqrt(q[2])) };
  };
}

/**
 * Index symbols A_i(lambda) = a1 a2 a3 Int_lambda^inf du / ((a_i^2+u) Delta(u)) (Chandrasekhar 1969, ch. 3, eq. 22;
 * dimensionless). At lambda = 0, A1 + A2 + A3 = 2 and the interior potential is
 * -pi G rho (sum_i A_i a_i^2 - sum_i A_i x_i^2).
 */
export function ellipsoidIndexSymbols(a1: number, a2: number, a3: number, lambda: number): IndexSymbols {
  checkAxes(a1, a2, a3);
  if (!(lambda >= 0) || !Number.isFinite(lambda)) throw new RangeError(`lambda must be finite and >= 0, got ${lambda}`);
  const L = Math.max(a1, a2, a3); // scale out the units
  const b = [a1 / L, a2 / L, a3 / L];
  const l = lambda / (L * L);
  const map = thetaMap([b[0] * b[0] + l, b[1] * b[1] + l, b[2] * b[2] + l]);
  const abc = b[0] * b[1] * b[2];
  const A = (i: 0 | 1 | 2) =>
    abc *
    integrateAdaptive(
      (t) => {
        const m = map(t);
        return (m.cs2 / m.q[i]) * m.jac;
      },
      0,
      Math.PI / 2,
    );
  return { A1: A(0), A2: A(1), A3: A(2) };
}

/** Gravitational potential (erg g^-1, negative) of the homogeneous ellipsoid centred at the origin, at (x, y, z). */
export function ellipsoidPotential(p: EllipsoidParams, x: number, y: number, z: number): number {
  const { a1, a2, a3, rho } = p;
  const G = p.G ?? G_CGS;
  checkAxes(a1, a2, a3);
  const L = Math.max(a1, a2, a3);
  const b = [a1 / L, a2 / L, a3 / L];
  const X = [x / L, y / L, z / L];
  const l = confocalLambda(b[0], b[1], b[2], X[0], X[1], X[2]);
  const X2 = [X[0] * X[0], X[1] * X[1], X[2] * X[2]];
  const map = thetaMap([b[0] * b[0] + l, b[1] * b[1] + l, b[2] * b[2] + l]);
  const I = integrateAdaptive(
    (t) => {
      const m = map(t);
      const w = 1 - m.cs2 * (X2[0] / m.q[0] + X2[1] / m.q[1] + X2[2] / m.q[2]);
      return Math.max(w, 0) * m.jac; // w >= 0 for u >= lambda; clamp rounding at theta = 0 outside
    },
    0,
    Math.PI / 2,
  );
  return -Math.PI * G * rho * L * L * b[0] * b[1] * b[2] * I;
}
