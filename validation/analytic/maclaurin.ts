/**
 * Closed-form potential of a homogeneous oblate (MacLaurin) spheroid, a1 = a2 > a3 = a1 sqrt(1 - e^2), the
 * axisymmetric case of Chandrasekhar 1969 ("Ellipsoidal Figures of Equilibrium", ch. 3 sect. 22 and ch. 5;
 * Binney & Tremaine 2008, Table 2.1 and sect. 2.5). Potentials are negative (Phi -> -GM/r far away).
 *
 * Interior (R^2 = x^2 + y^2):
 *   Phi = -pi G rho [2 A1 a1^2 + A3 a3^2 - A1 R^2 - A3 z^2],
 *   A1 = sqrt(1-e^2) asin(e)/e^3 - (1-e^2)/e^2,   A3 = 2/e^2 - 2 sqrt(1-e^2) asin(e)/e^3.
 *
 * Exterior, derived from the general integral with w = sqrt(a3^2+u), a1^2+u = w^2 + a1^2 e^2, which gives
 * I(lambda) = Int du/Delta = (2/(a1 e)) atan(h), A1(lambda) = (a3/(a1 e^3)) (atan h - h/(1+h^2)),
 * A3(lambda) = (2 a3/(a1 e^3)) (h - atan h), with h = a1 e / sqrt(a3^2 + lambda):
 *   Phi = -(2 a3/(a1 e^3)) pi G rho [ a1^2 e^2 atan(h) - (1/2) (R^2 (atan h - h/(1+h^2)) + 2 z^2 (h - atan h)) ].
 * (The form sometimes printed with prefactor 2 a3/(a1 e^2) and first term a1 e atan h, e.g. after Lukat & Banerjee
 * 2016 eqs. 6 and 10, is dimensionally inconsistent as transcribed; their sign convention is also Phi > 0.)
 * It is evaluated here as -pi G rho [2 a1^2 a3 T(h)/w - m P(h) R^2 - 2 m Q(h) z^2], w = sqrt(a3^2+lambda),
 * m = a1^2 a3 / w^3, T = atan(h)/h, P = (atan h - h/(1+h^2))/h^3, Q = (h - atan h)/h^3, which has no 1/e^3
 * and so stays accurate as e -> 0 (series for small h) and reduces exactly to the sphere at e = 0.
 */
import { G_CGS } from './constants.js';

export interface MaclaurinParams {
  /** Equatorial semi-axis a1 = a2 (cm). */
  a1: number;
  /** Meridional eccentricity, 0 <= e < 1 (e = 0: sphere). */
  e: number;
  /** Density (g cm^-3). */
  rho: number;
  /** Gravitational constant; default 6.674e-8 (cgs). */
  G?: number;
  /** Centre of the spheroid; default the origin. The symmetry axis is z. */
  centre?: readonly [number, number, number];
}

type Shape = Pick<MaclaurinParams, 'a1' | 'e' | 'centre'>;

function check(a1: number, e: number): void {
  if (!(a1 > 0) || !Number.isFinite(a1)) throw new RangeError(`MacLaurin spheroid a1 must be finite and > 0, got ${a1}`);
  if (!(e >= 0 && e < 1)) throw new RangeError(`MacLaurin spheroid eccentricity must satisfy 0 <= e < 1, got ${e}`);
}

/** Semi-axes (a1, a2 = a1, a3 = a1 sqrt(1 - e^2)); (1-e)(1+e) keeps a3 accurate as e -> 1. */
export function maclaurinSemiAxes(a1: number, e: number): { a1: number; a2: number; a3: number } {
  check(a1, e);
  return { a1, a2: a1, a3: a1 * Math.sqrt((1 - e) * (1 + e)) };
}

/** Mass (4/3) pi rho a1^2 a3 (g). */
export function maclaurinMass(p: Pick<MaclaurinParams, 'a1' | 'e' | 'rho'>): number {
  const { a3 } = maclaurinSemiAxes(p.a1, p.e);
  return ((4 * Math.PI) / 3) * p.rho * p.a1 * p.a1 * a3;
}

/** R^2/a1^2 + z^2/a3^2 - 1 relative to the centre: <= 0 inside or on the surface. */
function surfaceFunction(p: Shape, x: number, y: number, z: number) {
  const { a1, a3 } = maclaurinSemiAxes(p.a1, p.e);
  const c = p.centre ?? [0, 0, 0];
  const dx = x - c[0], dy = y - c[1], dz = z - c[2];
  const R2 = dx * dx + dy * dy;
  const z2 = dz * dz;
  return { a1, a3, R2, z2, F0: R2 / (a1 * a1) + z2 / (a3 * a3) - 1 };
}

/** True for points inside or on the spheroid's surface. */
export function insideSpheroid(p: Shape, x: number, y: number, z: number): boolean {
  return surfaceFunction(p, x, y, z).F0 <= 0;
}

/**
 * Confocal coordinate lambda >= 0 of a point: the positive root of R^2/(a1^2+l) + z^2/(a3^2+l) = 1 (0 inside).
 * The quadratic l^2 + b l - a1^2 a3^2 F0 = 0, b = a1^2 + a3^2 - R^2 - z^2, solved without cancellation.
 */
export function maclaurinLambda(p: Shape, x: number, y: number, z: number): number {
  const { a1, a3, R2, z2, F0 } = surfaceFunction(p, x, y, z);
  if (F0 <= 0) return 0;
  const b = a1 * a1 + a3 * a3 - R2 - z2;
  const k = a1 * a1 * a3 * a3 * F0;
  const s = Math.sqrt(b * b + 4 * k);
  return b >= 0 ? (2 * k) / (b + s) : 0.5 * (s - b);
}

// Taylor coefficients of A1(e) = sqrt(1-e^2) asin(e)/e^3 - (1-e^2)/e^2 = sum_j D[j] e^(2j), for small e where the
// closed form cancels: D[j] = d_{j+1} (+1 for j = 0), d = (series of sqrt(1-x)) * (series of asin(e)/e) in x = e^2.
const A1_SERIES: number[] = (() => {
  const n = 40;
  const b = [1], c = [1];
  for (let k = 1; k <= n; k++) {
    b.push((b[k - 1] * (k - 1.5)) / k);
    c.push((c[k - 1] * (2 * k - 1) ** 2) / (2 * k * (2 * k + 1)));
  }
  const D: number[] = [];
  for (let j = 1; j < n; j++) {
    let d = 0;
    for (let k = 0; k <= j; k++) d += b[k] * c[j - k];
    D.push(j === 1 ? d + 1 : d);
  }
  return D;
})();

const SMALL_E = 0.3;

/**
 * Interior index symbols (A1 = A2, A3) of the MacLaurin spheroid, Chandrasekhar 1969 ch. 3 eq. 36 (closed form; a
 * Taylor series in e^2 below e = 0.3, where 1/e^3 cancellation would cost digits). A1 = A3 = 2/3 at e = 0.
 */
export function maclaurinIndexSymbols(e: number): { A1: number; A3: number } {
  check(1, e);
  if (e < SMALL_E) {
    const x = e * e;
    let A1 = 0;
    for (let j = A1_SERIES.length - 1; j >= 0; j--) A1 = A1 * x + A1_SERIES[j];
    return { A1, A3: 2 - 2 * A1 }; // A1 + A2 + A3 = 2
  }
  const c = Math.sqrt((1 - e) * (1 + e));
  const as = Math.asin(e);
  return { A1: (c * as) / e ** 3 - (c * c) / (e * e), A3: 2 / (e * e) - (2 * c * as) / e ** 3 };
}

/** Interior potential (valid for points inside or on the surface; the quadratic form is evaluated anywhere). */
export function maclaurinInteriorPotential(p: MaclaurinParams, x: number, y: number, z: number): number {
  const { a1, a3, R2, z2 } = surfaceFunction(p, x, y, z);
  const G = p.G ?? G_CGS;
  const { A1, A3 } = maclaurinIndexSymbols(p.e);
  return -Math.PI * G * p.rho * (2 * A1 * a1 * a1 + A3 * a3 * a3 - A1 * R2 - A3 * z2);
}

/** Alternating series sum_{n>=0} (-1)^n coef(n) x^n until terms drop below rounding. */
function alternating(x: number, coef: (n: number) => number): number {
  let s = 0, xn = 1;
  for (let n = 0; n < 80; n++) {
    const t = coef(n) * xn;
    s += n % 2 === 0 ? t : -t;
    if (Math.abs(t) < 1e-18 * Math.abs(s)) break;
    xn *= x;
  }
  return s;
}

// P(h) = (atan h - h/(1+h^2))/h^3 = 2/3 - 4/5 h^2 + ..., Q(h) = (h - atan h)/h^3 = 1/3 - h^2/5 + ...
function P(h: number): number {
  if (h < 0.5) return alternating(h * h, (n) => (2 * n + 2) / (2 * n + 3));
  return (Math.atan(h) - h / (1 + h * h)) / (h * h * h);
}
function Q(h: number): number {
  if (h < 0.5) return alternating(h * h, (n) => 1 / (2 * n + 3));
  return (h - Math.atan(h)) / (h * h * h);
}

/**
 * Exterior potential: the closed form at the point's own lambda (so on and inside the surface, where lambda = 0,
 * it coincides with the interior formula; evaluated independently of it, which the tests exploit).
 */
export function maclaurinExteriorPotential(p: MaclaurinParams, x: number, y: number, z: number): number {
  const { a1, a3, R2, z2 } = surfaceFunction(p, x, y, z);
  const G = p.G ?? G_CGS;
  const lambda = maclaurinLambda(p, x, y, z);
  const w = Math.sqrt(a3 * a3 + lambda);
  const h = (a1 * p.e) / w;
  const T = h > 0 ? Math.atan(h) / h : 1;
  const m = (a1 * a1 * a3) / (w * w * w);
  return -Math.PI * G * p.rho * ((2 * a1 * a1 * a3 * T) / w - m * P(h) * R2 - 2 * m * Q(h) * z2);
}

/** Potential (erg g^-1, negative) of the homogeneous MacLaurin spheroid at (x, y, z), inside or outside. */
export function maclaurinPotential(p: MaclaurinParams, x: number, y: number, z: number): number {
  return insideSpheroid(p, x, y, z) ? maclaurinInteriorPotential(p, x, y, z) : maclaurinExteriorPotential(p, x, y, z);
}
