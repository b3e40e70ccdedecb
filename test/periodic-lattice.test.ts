/**
 * The CPU walk's per-pair periodic interactions read at lattice separations (native/cpu/ewald_lattice.h, issue
 * #21): on a mesh, cell-cell separations are whole multiples of the finest cell size and the centres of signed
 * sources' nodes lie half a cell off, so psi = 1/r + C and its derivatives come from arrays made once per walk
 * instead of a 1/r kernel plus the table's cubic per pair. Shown against the independent Ewald sum and analytic
 * potentials; potentials alone (nodes in batches, integer separations) against the potentials of a solve with
 * accelerations (each pair on its own) and against the per-pair kernels of the same mesh moved off the lattice.
 */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { ewaldPotential3 } from '../validation/ewaldReference.js';
import { rng, type Cells } from './helpers.js';

const unitBox = { box: { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] } };

/** n^3 cells of the unit box with random densities in [0.5, 1.5); `jitter` moves each centre by up to that much. */
function randomGrid(n: number, seed: number, jitter = 0): Cells {
  const h = 1 / n, N = n ** 3, r = rng(seed);
  const c: Cells = { x: new Float64Array(N), y: new Float64Array(N), z: new Float64Array(N), mass: new Float64Array(N),
    size: new Float64Array(N).fill(h) };
  const j = () => jitter * (2 * r() - 1);
  let i = 0;
  for (let k = 0; k < n; k++)
    for (let q = 0; q < n; q++)
      for (let p = 0; p < n; p++, i++) {
        c.mass[i] = (0.5 + r()) * h ** 3;
        c.x[i] = (p + 0.5) * h + j(); c.y[i] = (q + 0.5) * h + j(); c.z[i] = (k + 0.5) * h + j();
      }
  return c;
}

const maxAbs = (a: ArrayLike<number>) => { let m = 0; for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i])); return m; };
const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

/** A unit box of n^3 cells of density 1 + A sin(2 pi (x + y + z)) at the cell centres (mass = rho h^3). */
function diagonalSine(n: number, A: number): Cells {
  const h = 1 / n, N = n ** 3, kk = 2 * Math.PI;
  const c: Cells = { x: new Float64Array(N), y: new Float64Array(N), z: new Float64Array(N),
    mass: new Float64Array(N), size: new Float64Array(N).fill(h) };
  let i = 0;
  for (let k = 0; k < n; k++)
    for (let q = 0; q < n; q++)
      for (let p = 0; p < n; p++, i++) {
        c.x[i] = (p + 0.5) * h; c.y[i] = (q + 0.5) * h; c.z[i] = (k + 0.5) * h;
        c.mass[i] = (1 + A * Math.sin(kk * (c.x[i] + c.y[i] + c.z[i]))) * h ** 3;
      }
  return c;
}

describe('per-pair Ewald corrections at lattice separations (CPU)', () => {
  it('by rows of a lattice block equal the per-pair reads (groups of 64, 32 and 16; a sheet; masses as given)', async () => {
    // potentials alone: a group that fills a block of lattice points 4 wide along x reads each source cell's values
    // a row at a time and takes the nodes it sees in one octant by rows (native/cpu/cpu_walk.cpp); with
    // accelerations every pair reads on its own. The same lists, so rounding only.
    const c = diagonalSine(16, 1e-3);
    // measured 9.1e-16, 1.2e-15, 9.1e-16, 4.5e-16; masses as given 3.0e-12 (the same before the rows: the sums of the
    // uniform background's large terms in another order)
    const cases = [
      { extra: { groupSize: 64 }, bar: 1e-12 }, { extra: { groupSize: 32 }, bar: 1e-12 },
      { extra: { groupSize: 16 }, bar: 1e-12 },
      { extra: { boundary: { x: 'periodic', y: 'periodic', z: 'isolated' } as const }, bar: 1e-12 },
      { extra: { densityContrast: false }, bar: 2e-11 },
    ];
    for (const { extra, bar } of cases) {
      const opts = { G: 1, theta: 0.5, boundary: 'periodic' as const, backend: 'cpu' as const, ...extra };
      const pot = await new GravitySolver(opts).solveCells(c, unitBox);
      const acc = await new GravitySolver({ ...opts, accelerations: true }).solveCells(c, unitBox);
      expect(pot.stats.interactionsPerCell).toBe(acc.stats.interactionsPerCell);
      expect(maxDiff(pot.potential, acc.potential) / maxAbs(acc.potential)).toBeLessThan(bar);
    }
  });

  it('of cells converge to the independent Ewald sum of the density contrast (6^3, theta 0.3, groups too large to expand)', async () => {
    const c = randomGrid(6, 3);
    const r = await new GravitySolver({ G: 1, theta: 0.3, boundary: 'periodic', backend: 'cpu', selfPotential: false })
      .solveCells(c, unitBox);
    expect(r.stats.densityContrast).toBe(true);
    let mean = 0;
    for (let i = 0; i < c.mass.length; i++) mean += c.mass[i];
    mean /= c.mass.length;
    const contrast = { x: c.x, y: c.y, z: c.z, mass: Array.from(c.mass, (m) => m - mean) };
    const ref = ewaldPotential3({ L: [1, 1, 1], periodic: [true, true, true] }, contrast, 1);
    expect(r.stats.approxInteractionsPerCell).toBe(0);  // cells only: every pair through the cell lattice
    expect(maxDiff(r.potential, ref) / maxAbs(ref)).toBeLessThan(1e-6);  // 8.0e-8 measured
  });

  it('of cells and nodes give the potential and accelerations of a diagonal sine (16^3, 32^3, groups too large to expand)', async () => {
    // rho = 1 + A sin(k.x), k = 2 pi (1, 1, 1): phi = -4 pi G A sin(k.x) / k^2, g = -grad phi
    const errs: number[] = [];
    for (const n of [16, 32]) {
      const N = n ** 3, A = 1e-3, kk = 2 * Math.PI, k2 = 3 * kk * kk;
      const c = diagonalSine(n, A);
      const r = await new GravitySolver({ G: 1, theta: 0.5, boundary: 'periodic', backend: 'cpu', accelerations: true })
        .solveCells(c, unitBox);
      expect(r.stats.approxInteractionsPerCell).toBeGreaterThan(100);  // nodes, about their cube centres
      const amp = (4 * Math.PI * A * kk) / k2;  // |g| along each axis
      const pamp = (4 * Math.PI * A) / k2;
      let err = 0, perr = 0;
      for (let j = 0; j < N; j++) {
        perr = Math.max(perr, Math.abs(r.potential[j] + pamp * Math.sin(kk * (c.x[j] + c.y[j] + c.z[j]))));
        const gx = amp * Math.cos(kk * (c.x[j] + c.y[j] + c.z[j]));  // -d(phi)/dx, the same on every axis
        const a = r.accelerations!;
        err = Math.max(err, Math.abs(a.x[j] - gx), Math.abs(a.y[j] - gx), Math.abs(a.z[j] - gx));
      }
      errs.push(err / amp);
      expect(perr / pamp).toBeLessThan(3e-3);  // the bar for the potential
    }
    // cells acting as points on their neighbours: second order in the cell size (3.3e-2 and 8.5e-3 measured)
    expect(errs[0]).toBeLessThan(0.05);
    expect(errs[1]).toBeLessThan(0.0125);
    expect(errs[0] / errs[1]).toBeGreaterThan(3);
  });

  it('with accelerations, by rows equal the per-pair kernels of the mesh moved off the lattice (groups of 64, 32; a sheet)', async () => {
    // a lattice block's source cells and the nodes on one side of it in x go by rows with accelerations too
    // (native/cpu/lattice_eval.h latticeRowsAccel, latticeNodeForceRows: x the separation itself with the gradient's
    // nearest-image sign, y and z folded with their signs); every cell moved by 1e-9 of its size leaves the lattice,
    // where each pair takes the table's kernels: the table's error apart, the same potential and accelerations
    const n = 16, h = 1 / n, c = randomGrid(n, 7);
    const off: Cells = { ...c, x: c.x.map((v, j) => v + 1e-9 * h * ((j % 3) - 1)), y: c.y.map((v) => v + 1e-9 * h) };
    const cases = [
      { groupSize: 64 }, { groupSize: 32 }, { boundary: { x: 'periodic', y: 'periodic', z: 'isolated' } as const },
    ];
    for (const extra of cases) {
      const opts = { G: 1, theta: 0.5, boundary: 'periodic' as const, backend: 'cpu' as const, accelerations: true,
        ...extra };
      const on = await new GravitySolver(opts).solveCells(c, unitBox);
      const per = await new GravitySolver(opts).solveCells(off, unitBox);
      expect(on.stats.approxInteractionsPerCell).toBe(per.stats.approxInteractionsPerCell);  // the same lists
      // measured 5.4e-10 (potential), 2.1e-9 (accelerations); the sheet 4.3e-12, 1.1e-10: as before the rows
      expect(maxDiff(on.potential, per.potential) / maxAbs(per.potential)).toBeLessThan(1e-7);
      const a = on.accelerations!, b = per.accelerations!;
      const amax = Math.max(maxAbs(b.x), maxAbs(b.y), maxAbs(b.z));
      for (const k of ['x', 'y', 'z'] as const) expect(maxDiff(a[k], b[k]) / amax).toBeLessThan(1e-7);
    }
  });

  it('potentials alone equal those of a solve with accelerations and the analytic sine (16^3, 24^3 with inexact coordinates)', async () => {
    for (const n of [16, 24]) {
      const h = 1 / n, N = n ** 3, A = 1e-3, kk = 2 * Math.PI, k2 = 3 * kk * kk;
      const c = diagonalSine(n, A);
      const opts = { G: 1, theta: 0.5, boundary: 'periodic' as const, backend: 'cpu' as const };
      const pot = await new GravitySolver(opts).solveCells(c, unitBox);
      const acc = await new GravitySolver({ ...opts, accelerations: true }).solveCells(c, unitBox);
      expect(pot.stats.approxInteractionsPerCell).toBeGreaterThan(100);
      expect(pot.stats.approxInteractionsPerCell).toBe(acc.stats.approxInteractionsPerCell);  // the same lists
      // the same sums in another order and another arrangement of the same terms: rounding only
      expect(maxDiff(pot.potential, acc.potential) / maxAbs(acc.potential)).toBeLessThan(1e-12);  // 1.3e-15, 4.0e-15
      // every cell moved by 1e-9 of its size: off the lattice, each pair by the per-pair kernels (4.2e-10 and
      // 1.8e-7 measured: at 24^3 some k dx lie half-way between two table points, where the neighbouring
      // polynomial is taken, the table's own error)
      const off: Cells = { ...c, x: c.x.map((v, j) => v + 1e-9 * h * ((j % 3) - 1)), y: c.y.map((v) => v + 1e-9 * h) };
      const per = await new GravitySolver(opts).solveCells(off, unitBox);
      expect(maxDiff(pot.potential, per.potential) / maxAbs(per.potential)).toBeLessThan(1e-6);
      const pamp = (4 * Math.PI * A) / k2;
      let perr = 0;
      for (let j = 0; j < N; j++)
        perr = Math.max(perr, Math.abs(pot.potential[j] + pamp * Math.sin(kk * (c.x[j] + c.y[j] + c.z[j]))));
      expect(perr / pamp).toBeLessThan(3e-3);
    }
  });
});
