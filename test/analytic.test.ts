/**
 * The analytic reference potentials check each other: MacLaurin closed form vs Chandrasekhar quadrature vs Carlson
 * elliptic integrals, the sphere limit, surface continuity, far field, Poisson/Laplace, and the cube constant.
 */
import { describe, expect, it } from 'vitest';
import {
  carlsonRD,
  carlsonRF,
  cubeSelfPotentialCoefficient,
  ellipsoidIndexSymbols,
  ellipsoidPotential,
  gaussLegendreRule,
  G_CGS,
  insideSpheroid,
  maclaurinExteriorPotential,
  maclaurinIndexSymbols,
  maclaurinInteriorPotential,
  maclaurinMass,
  maclaurinPotential,
  maclaurinSemiAxes,
  uniformSphereMass,
  uniformSpherePotential,
  type EllipsoidParams,
  type MaclaurinParams,
} from '../validation/analytic/index.js';

const rel = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);
const A1 = 7e10; // cm, about a solar radius: cgs magnitudes throughout
const RHO = 1.4;
const CENTRE = [1e9, -2e9, 3e9] as const;

/** Points (relative to the centre, in units of a1) inside and outside an e = 0.99 spheroid too. */
const INTERIOR = [[0, 0, 0], [0.3, 0.2, 0.05], [-0.5, 0.6, -0.1], [0.05, 0, 0.1]] as const;
const EXTERIOR = [[1.2, 0, 0], [0.3, 0.4, 0.9], [0, 0, 1.5], [-2, 1, -3], [0.9, 0.5, 0.2]] as const;

/** Potential of the spheroid via the triaxial quadrature with a1 = a2. */
function quadratureSpheroid(p: MaclaurinParams, x: number, y: number, z: number): number {
  const { a1, a2, a3 } = maclaurinSemiAxes(p.a1, p.e);
  const c = p.centre ?? [0, 0, 0];
  return ellipsoidPotential({ a1, a2, a3, rho: p.rho, G: p.G }, x - c[0], y - c[1], z - c[2]);
}

/** Triaxial potential from Carlson's R_F, R_D (independent of the quadrature). */
function carlsonPotential(p: EllipsoidParams, x: number, y: number, z: number): number {
  const a = [p.a1, p.a2, p.a3];
  const X = [x, y, z];
  const s0 = a.map((ai) => ai * ai);
  const inside = X.reduce((acc, xi, i) => acc + (xi * xi) / s0[i], 0) <= 1;
  let lam = 0;
  if (!inside) {
    // bisection on the (monotone) defining equation: independent of confocalLambda
    let lo = 0, hi = X.reduce((acc, xi) => acc + xi * xi, 0);
    for (let it = 0; it < 200; it++) {
      const mid = 0.5 * (lo + hi);
      if (X.reduce((acc, xi, i) => acc + (xi * xi) / (s0[i] + mid), 0) > 1) lo = mid;
      else hi = mid;
    }
    lam = 0.5 * (lo + hi);
  }
  const s = s0.map((si) => si + lam) as [number, number, number];
  const abc = p.a1 * p.a2 * p.a3;
  const Ai = [0, 1, 2].map((i) => (2 / 3) * abc * carlsonRD(s[(i + 1) % 3], s[(i + 2) % 3], s[i]));
  const I = 2 * carlsonRF(s[0], s[1], s[2]);
  return -Math.PI * (p.G ?? G_CGS) * p.rho * (abc * I - Ai.reduce((acc, A, i) => acc + A * X[i] * X[i], 0));
}

/** Second-order one-sided derivative at t = 0 of f along t >= 0. */
const oneSided = (f: (t: number) => number, d: number) => (-3 * f(0) + 4 * f(d) - f(2 * d)) / (2 * d);

describe('uniform sphere', () => {
  it('is -2 pi G rho (a^2 - r^2/3) inside and -GM/r outside, continuous at r = a', () => {
    const p = { a: A1, rho: RHO, centre: CENTRE };
    const M = uniformSphereMass(A1, RHO);
    expect(rel(uniformSpherePotential(p, ...CENTRE), -2 * Math.PI * G_CGS * RHO * A1 * A1)).toBeLessThan(1e-15);
    expect(rel(uniformSpherePotential(p, CENTRE[0] + 3 * A1, CENTRE[1], CENTRE[2]), (-G_CGS * M) / (3 * A1))).toBeLessThan(1e-15);
    const inner = uniformSpherePotential(p, CENTRE[0] + A1 * (1 - 1e-15), CENTRE[1], CENTRE[2]);
    expect(rel(inner, (-G_CGS * M) / A1)).toBeLessThan(1e-14);
  });
});

describe('MacLaurin spheroid: sphere limit', () => {
  it('e = 0 is exactly the uniform sphere inside and -GM/r outside', () => {
    const p = { a1: A1, e: 0, rho: RHO, centre: CENTRE };
    const s = { a: A1, rho: RHO, centre: CENTRE };
    const M = maclaurinMass(p);
    expect(rel(M, uniformSphereMass(A1, RHO))).toBeLessThan(1e-15);
    for (const q of [...INTERIOR, ...EXTERIOR]) {
      const [x, y, z] = q.map((v, i) => CENTRE[i] + v * A1);
      expect(rel(maclaurinPotential(p, x, y, z), uniformSpherePotential(s, x, y, z))).toBeLessThan(1e-14);
    }
    const r = 5 * A1;
    expect(rel(maclaurinPotential(p, CENTRE[0], CENTRE[1] + r, CENTRE[2]), (-G_CGS * M) / r)).toBeLessThan(1e-14);
  });

  it('e = 1e-4 differs from the sphere only at O(e^2), and matches the quadrature to 1e-12 (small-e series)', () => {
    const p = { a1: A1, e: 1e-4, rho: RHO, centre: CENTRE };
    const s = { a: A1, rho: RHO, centre: CENTRE };
    for (const q of [...INTERIOR, ...EXTERIOR]) {
      const [x, y, z] = q.map((v, i) => CENTRE[i] + v * A1);
      const phi = maclaurinPotential(p, x, y, z);
      expect(rel(phi, uniformSpherePotential(s, x, y, z))).toBeLessThan(1e-7);
      expect(rel(phi, quadratureSpheroid(p, x, y, z))).toBeLessThan(1e-12);
    }
    // far outside: -GM/r with the spheroid's own mass, to O(e^2 a^2 / r^2)
    const r = 4 * A1;
    const far = maclaurinPotential(p, CENTRE[0] + r, CENTRE[1], CENTRE[2]);
    expect(rel(far, (-G_CGS * maclaurinMass(p)) / r)).toBeLessThan(1e-9);
  });

  it('interior index symbols: series (e < 0.3) and closed form agree with the quadrature, sum to 2', () => {
    for (const e of [0, 1e-6, 1e-3, 0.1, 0.2999, 0.3, 0.5, 0.9, 0.99, 0.999999]) {
      const { A1: a, A3: c } = maclaurinIndexSymbols(e);
      const { a3 } = maclaurinSemiAxes(1, e);
      const q = ellipsoidIndexSymbols(1, 1, a3, 0);
      expect(rel(a, q.A1)).toBeLessThan(1e-13);
      expect(rel(c, q.A3)).toBeLessThan(1e-13);
      expect(Math.abs(2 * a + c - 2)).toBeLessThan(1e-14);
    }
    const sphere = maclaurinIndexSymbols(0);
    expect(rel(sphere.A1, 2 / 3) + rel(sphere.A3, 2 / 3)).toBeLessThan(1e-15);
  });
});

describe('MacLaurin spheroid: closed form vs quadrature', () => {
  for (const e of [0.5, 0.9, 0.99]) {
    it(`e = ${e}: interior and exterior points agree to 1e-10 (Carlson to 1e-12)`, () => {
      const p = { a1: A1, e, rho: RHO, centre: CENTRE };
      const { a3 } = maclaurinSemiAxes(A1, e);
      for (const [inside, pts] of [[true, INTERIOR], [false, EXTERIOR]] as const)
        for (const q of pts) {
          // interior points are scaled into the flattened body
          const d = [q[0] * A1, q[1] * A1, inside ? q[2] * a3 : q[2] * A1];
          const [x, y, z] = d.map((v, i) => CENTRE[i] + v);
          expect(insideSpheroid(p, x, y, z)).toBe(inside);
          const phi = maclaurinPotential(p, x, y, z);
          expect(phi).toBeLessThan(0);
          expect(rel(phi, quadratureSpheroid(p, x, y, z))).toBeLessThan(1e-10);
          expect(rel(phi, carlsonPotential({ a1: A1, a2: A1, a3, rho: RHO }, d[0], d[1], d[2]))).toBeLessThan(1e-12);
        }
    });
  }
});

describe('MacLaurin spheroid: surface continuity', () => {
  for (const e of [0.3, 0.8, 0.99]) {
    it(`e = ${e}: interior and exterior formulas and their normal derivatives agree on the surface`, () => {
      const p = { a1: A1, e, rho: RHO, centre: CENTRE };
      const { a3 } = maclaurinSemiAxes(A1, e);
      const { A1: I1, A3: I3 } = maclaurinIndexSymbols(e);
      for (const latDeg of [0, 10, 30, 45, 60, 80, 90]) {
        const beta = (latDeg * Math.PI) / 180;
        const phiAz = 0.7;
        const s = [A1 * Math.cos(beta) * Math.cos(phiAz), A1 * Math.cos(beta) * Math.sin(phiAz), a3 * Math.sin(beta)];
        const [x, y, z] = s.map((v, i) => CENTRE[i] + v);
        const pin = maclaurinInteriorPotential(p, x, y, z);
        expect(rel(maclaurinExteriorPotential(p, x, y, z), pin)).toBeLessThan(1e-12);
        expect(rel(quadratureSpheroid(p, x, y, z), pin)).toBeLessThan(1e-12);

        // outward normal; one-sided second-order differences on each side of the surface
        const g = [s[0] / (A1 * A1), s[1] / (A1 * A1), s[2] / (a3 * a3)];
        const gn = Math.hypot(...g);
        const n = g.map((v) => v / gn);
        const along = (t: number) => maclaurinPotential(p, x + t * n[0], y + t * n[1], z + t * n[2]);
        const d = (1e-4 * a3 * a3) / A1; // well below the rim's radius of curvature a3^2/a1
        const dOut = oneSided(along, d);
        const dIn = -oneSided((t) => along(-t), d);
        const analytic = 2 * Math.PI * G_CGS * RHO * (I1 * (s[0] * n[0] + s[1] * n[1]) + I3 * s[2] * n[2]);
        expect(rel(dOut, analytic)).toBeLessThan(1e-6);
        expect(rel(dIn, analytic)).toBeLessThan(1e-6);
      }
    });
  }
});

describe('MacLaurin spheroid: far field', () => {
  it('tends to -GM/r with a 1/r^2 quadrupole correction of the MacCullagh size', () => {
    const e = 0.8;
    const p = { a1: A1, e, rho: RHO, centre: CENTRE };
    const M = maclaurinMass(p);
    // MacCullagh: Phi = -GM/r - G (C - A)(1 - 3 sin^2 b)/(2 r^3), C - A = M a1^2 e^2 / 5
    const expected = { equator: (e * e) / 10, pole: (-e * e) / 5 };
    for (const [where, dir] of [['equator', [0.6, 0.8, 0]], ['pole', [0, 0, 1]]] as const) {
      const k: number[] = [];
      for (const r of [10, 100, 1000]) {
        const phi = maclaurinPotential(p, ...(dir.map((v, i) => CENTRE[i] + v * r * A1) as [number, number, number]));
        const relDiff = phi / ((-G_CGS * M) / (r * A1)) - 1;
        k.push(relDiff * r * r);
      }
      // relative difference falls like 1/r^2: the scaled coefficient settles to its analytic value
      expect(Math.abs(k[0] / expected[where] - 1)).toBeLessThan(0.05);
      expect(Math.abs(k[1] / expected[where] - 1)).toBeLessThan(5e-4);
      expect(Math.abs(k[2] / expected[where] - 1)).toBeLessThan(1e-5);
    }
  });
});

describe('triaxial ellipsoid quadrature', () => {
  const p: EllipsoidParams = { a1: 3e9, a2: 2.1e9, a3: 1.2e9, rho: 2.5 };
  const laplacian = (x: number, y: number, z: number, h: number) => {
    const f = (dx: number, dy: number, dz: number) => ellipsoidPotential(p, x + dx, y + dy, z + dz);
    const c = f(0, 0, 0);
    return (f(h, 0, 0) + f(-h, 0, 0) + f(0, h, 0) + f(0, -h, 0) + f(0, 0, h) + f(0, 0, -h) - 6 * c) / (h * h);
  };
  const fourPiGRho = 4 * Math.PI * G_CGS * p.rho;

  it("satisfies Poisson's equation inside (FD Laplacian = 4 pi G rho)", () => {
    for (const [u, v, w] of [[0, 0, 0], [0.4, -0.3, 0.2], [-0.2, 0.5, -0.6], [0.8, 0.1, 0.1]])
      expect(rel(laplacian(u * p.a1, v * p.a2, w * p.a3, 1e-3 * p.a1), fourPiGRho)).toBeLessThan(1e-5);
  });

  it("satisfies Laplace's equation outside", () => {
    for (const [u, v, w] of [[1.3, 0.2, 0.1], [0.5, 0.9, 0.6], [-1, -1, 1], [0, 0, 1.4], [4, 3, -2]])
      expect(Math.abs(laplacian(u * p.a1, v * p.a1, w * p.a1, 1e-3 * p.a1)) / fourPiGRho).toBeLessThan(1e-5);
  });

  it("agrees with Carlson's elliptic integrals to 1e-12 inside and outside, for mild and extreme shapes", () => {
    const shapes: EllipsoidParams[] = [p, { a1: 1, a2: 3, a3: 2, rho: 1, G: 1 }, { a1: 1, a2: 0.05, a3: 0.01, rho: 1, G: 1 }];
    for (const s of shapes)
      for (const [u, v, w] of [[0, 0, 0], [0.3, -0.2, 0.5], [0.9, 0.3, 0.2], [1.1, 0, 0], [0.5, 2, -1], [30, -20, 10]]) {
        const [x, y, z] = [u * s.a1, v * s.a2, w * s.a3];
        const phi = ellipsoidPotential(s, x, y, z);
        expect(rel(phi, carlsonPotential(s, x, y, z))).toBeLessThan(1e-12);
      }
  });

  it('index symbols sum to 2 at lambda = 0 and match Carlson R_D at lambda > 0', () => {
    for (const [a, b, c] of [[1, 1, 1], [3, 2, 1], [1, 2, 3], [1, 0.05, 0.01], [5e10, 4e10, 1e9]]) {
      const S = ellipsoidIndexSymbols(a, b, c, 0);
      expect(Math.abs(S.A1 + S.A2 + S.A3 - 2)).toBeLessThan(1e-13);
      const lam = 0.7 * a * a;
      const L = ellipsoidIndexSymbols(a, b, c, lam);
      const s = [a * a + lam, b * b + lam, c * c + lam];
      const want = [0, 1, 2].map((i) => (2 / 3) * a * b * c * carlsonRD(s[(i + 1) % 3], s[(i + 2) % 3], s[i]));
      expect(rel(L.A1, want[0])).toBeLessThan(1e-12);
      expect(rel(L.A2, want[1])).toBeLessThan(1e-12);
      expect(rel(L.A3, want[2])).toBeLessThan(1e-12);
    }
    const sphere = ellipsoidIndexSymbols(2, 2, 2, 0);
    for (const A of [sphere.A1, sphere.A2, sphere.A3]) expect(rel(A, 2 / 3)).toBeLessThan(1e-14);
  });

  it("Carlson R_F, R_D reproduce Carlson's (1995) published test values", () => {
    expect(rel(carlsonRF(1, 2, 0), 1.3110287771461)).toBeLessThan(1e-13);
    expect(rel(carlsonRF(2, 3, 4), 0.58408284167715)).toBeLessThan(1e-13);
    expect(rel(carlsonRD(0, 2, 1), 1.7972103521034)).toBeLessThan(1e-13);
    expect(rel(carlsonRD(2, 3, 4), 0.16510527294261)).toBeLessThan(1e-13);
  });
});

describe('uniform cube centre potential', () => {
  it('C = Int_{[-1/2,1/2]^3} dV/r = 2.3800774 (numerical triple integral over the six pyramids)', () => {
    // pyramid under face x = 1/2: y = x u, z = x v, dV = x^2 dx du dv, r = x sqrt(1 + u^2 + v^2)
    const { nodes, weights } = gaussLegendreRule(24);
    const n = nodes.length;
    let pyramid = 0;
    for (let i = 0; i < n; i++) {
      const x = 0.25 * (1 + nodes[i]); // [0, 1/2]
      for (let j = 0; j < n; j++)
        for (let k = 0; k < n; k++) {
          const u = nodes[j], v = nodes[k]; // [-1, 1]
          pyramid += 0.25 * weights[i] * weights[j] * weights[k] * ((x * x) / (x * Math.sqrt(1 + u * u + v * v)));
        }
    }
    const C = 6 * pyramid;
    expect(C.toFixed(7)).toBe('2.3800774');
    expect(rel(C, cubeSelfPotentialCoefficient)).toBeLessThan(1e-10);
    expect(cubeSelfPotentialCoefficient.toFixed(7)).toBe('2.3800774');
  });
});

describe('bad input', () => {
  it('refuses e outside [0, 1), non-positive axes', () => {
    for (const e of [1, 1.5, -0.1, NaN]) {
      expect(() => maclaurinPotential({ a1: 1, e, rho: 1 }, 0, 0, 0)).toThrow(/eccentricity/);
      expect(() => maclaurinSemiAxes(1, e)).toThrow(RangeError);
    }
    expect(() => maclaurinMass({ a1: 0, e: 0.5, rho: 1 })).toThrow(/a1/);
    expect(() => ellipsoidPotential({ a1: 1, a2: -1, a3: 1, rho: 1 }, 0, 0, 0)).toThrow(/a2/);
    expect(() => ellipsoidIndexSymbols(1, 1, 1, -1)).toThrow(/lambda/);
    expect(() => uniformSpherePotential({ a: 0, rho: 1 }, 0, 0, 0)).toThrow(/radius/);
  });
});
