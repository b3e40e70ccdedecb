/** Physical invariances of the solve: linearity in mass, translation invariance, mirror symmetry, determinism. */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { clusteredCells, gridCells, randomCells, relErrors } from './helpers.js';

describe('linearity in mass', () => {
  it('scaling every mass by k scales the potential by k (exactly, for k a power of two)', async () => {
    const c = clusteredCells(5000, 3);
    const s = new GravitySolver({ G: 1 });
    const a = await s.solveCells(c);
    const b = await s.solveCells({ ...c, mass: c.mass.map((m) => 4 * m) });
    for (let i = 0; i < a.potential.length; i++) expect(b.potential[i]).toBe(4 * a.potential[i]);
    const c3 = await s.solveCells({ ...c, mass: c.mass.map((m) => 3 * m) });
    expect(relErrors(c3.potential, a.potential.map((p) => 3 * p)).max).toBeLessThan(1e-12);
  });

  it('superposition: the potential of two mass sets is the sum of their potentials', async () => {
    const c = randomCells(4000, 4);
    const r = (seed: number) => {
      let a = seed;
      return () => ((a = (a * 1103515245 + 12345) % 2147483648) / 2147483648);
    };
    const u = r(9);
    const m1 = c.mass.map((m) => m * u());
    const m2 = c.mass.map((m, i) => m - m1[i]);
    const direct = new GravitySolver({ G: 1 });
    const d = await direct.directCells(c);
    const d1 = await direct.directCells({ ...c, mass: m1 });
    const d2 = await direct.directCells({ ...c, mass: m2 });
    expect(relErrors(d1.potential.map((p, i) => p + d2.potential[i]), d.potential).max).toBeLessThan(1e-12);
    // the tree's multipoles change with the mass split, so superposition holds to the tree's own accuracy
    const tree = new GravitySolver({ G: 1, theta: 0.25 });
    const t1 = await tree.solveCells({ ...c, mass: m1 });
    const t2 = await tree.solveCells({ ...c, mass: m2 });
    expect(relErrors(t1.potential.map((p, i) => p + t2.potential[i]), d.potential).max).toBeLessThan(1e-4);
  });
});

describe('translation invariance', () => {
  it('shifting the cells and the box together leaves the potential unchanged', async () => {
    const c = clusteredCells(5000, 5);
    const s = new GravitySolver({ G: 1, theta: 0.5 });
    const box = { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] };
    const a = await s.solveCells(c, { box });
    const shift = [3.25, -7.5, 12];
    const moved = { ...c, x: c.x.map((v) => v + shift[0]), y: c.y.map((v) => v + shift[1]), z: c.z.map((v) => v + shift[2]) };
    const movedBox = {
      lo: box.lo.map((v, d) => v + shift[d]) as [number, number, number],
      hi: box.hi.map((v, d) => v + shift[d]) as [number, number, number],
    };
    const b = await s.solveCells(moved, { box: movedBox });
    // clustered cells sit ~1e-6 apart, so rounding the shifted coordinates (~1e1) moves separations by ~1e-9
    expect(relErrors(b.potential, a.potential).max).toBeLessThan(1e-8);
    expect(b.stats.interactionsPerCell).toBe(a.stats.interactionsPerCell);
  });

  it('the answer does not depend on the length unit (cm vs pc-sized boxes)', async () => {
    const c = randomCells(3000, 6);
    const L = 3.086e18; // 1 pc in cm: squared distances would overflow single precision without the internal scaling
    const s = new GravitySolver({ G: 1, theta: 0.5 });
    const a = await s.solveCells(c);
    const big = await s.solveCells({
      x: c.x.map((v) => v * L),
      y: c.y.map((v) => v * L),
      z: c.z.map((v) => v * L),
      mass: c.mass,
      size: c.size.map((v) => v * L),
    });
    expect(relErrors(big.potential.map((p) => p * L), a.potential).max).toBeLessThan(1e-12);
  });
});

describe('mirror symmetry', () => {
  it('a mass distribution symmetric under x -> 1 - x gives a symmetric potential', async () => {
    const n = 16;
    const c = gridCells(n, (x, y, z) => 7 + Math.cos(2 * Math.PI * (x - 0.5)) * (1 + y) * (2 + Math.sin(3 * z)));
    const r = await new GravitySolver({ G: 1, theta: 0.5 }).solveCells(c);
    const idx = (i: number, j: number, k: number) => (k * n + j) * n + i;
    let worst = 0;
    for (let k = 0; k < n; k++)
      for (let j = 0; j < n; j++)
        for (let i = 0; i < n; i++) {
          const a = r.potential[idx(i, j, k)];
          const b = r.potential[idx(n - 1 - i, j, k)];
          worst = Math.max(worst, Math.abs(a - b) / Math.abs(a));
        }
    expect(worst).toBeLessThan(1e-12);
  });
});

describe('determinism', () => {
  it('gives bitwise the same output for 1, 2 and 3 threads and on repeat', async () => {
    const c = clusteredCells(20000, 8);
    const runs = [];
    for (const threads of [1, 2, 3, 2]) {
      runs.push(await new GravitySolver({ G: 1, threads, accelerations: true }).solveCells(c));
    }
    for (const r of runs.slice(1)) {
      expect(Buffer.compare(Buffer.from(r.potential.buffer), Buffer.from(runs[0].potential.buffer))).toBe(0);
      expect(Buffer.compare(Buffer.from(r.accelerations!.z.buffer), Buffer.from(runs[0].accelerations!.z.buffer))).toBe(0);
    }
  });
});
