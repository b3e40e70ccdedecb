/** The tree converges to direct summation: error falls with theta, small theta matches, quadrupoles help. */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { clusteredCells, randomCells, relErrors, relVectorError } from './helpers.js';

const thetas = [1, 0.75, 0.5, 0.25, 0.1];

describe.each([
  ['random', randomCells(6000, 1)],
  ['clustered', clusteredCells(6000, 2)],
])('tree vs direct summation on %s cells', (_name, cells) => {
  it('error falls monotonically with theta and vanishes for small theta', async () => {
    const ref = await new GravitySolver({ G: 1 }).directCells(cells);
    const errs: number[] = [];
    for (const theta of thetas) {
      const r = await new GravitySolver({ G: 1, theta }).solveCells(cells);
      errs.push(relErrors(r.potential, ref.potential).max);
    }
    for (let i = 1; i < errs.length; i++) expect(errs[i]).toBeLessThan(errs[i - 1]);
    expect(errs[0]).toBeLessThan(1e-2); // theta = 1 is still a usable answer
    const fine = await new GravitySolver({ G: 1, theta: 0.1 }).solveCells(cells);
    expect(relErrors(fine.potential, ref.potential).max).toBeLessThan(1e-6);
  });

  it('quadrupole beats monopole at every theta', async () => {
    const ref = await new GravitySolver({ G: 1 }).directCells(cells);
    for (const theta of [1, 0.5, 0.25]) {
      const q = relErrors((await new GravitySolver({ G: 1, theta, order: 2 }).solveCells(cells)).potential, ref.potential);
      const m = relErrors((await new GravitySolver({ G: 1, theta, order: 1 }).solveCells(cells)).potential, ref.potential);
      expect(q.max).toBeLessThan(m.max);
      expect(q.mean).toBeLessThan(m.mean);
    }
  });

  it('accelerations from the walk converge to direct accelerations', async () => {
    const ref = await new GravitySolver({ G: 1, accelerations: true }).directCells(cells);
    let prev = Infinity;
    for (const theta of [1, 0.5, 0.25, 0.1]) {
      const r = await new GravitySolver({ G: 1, theta, accelerations: true }).solveCells(cells);
      const e = relVectorError(r.accelerations!, ref.accelerations!);
      expect(e).toBeLessThan(prev);
      prev = e;
    }
    expect(prev).toBeLessThan(1e-5);
  });

  it('both MAC variants converge', async () => {
    const ref = await new GravitySolver({ G: 1 }).directCells(cells);
    for (const mac of ['barnes', 'bonsai'] as const) {
      const coarse = relErrors((await new GravitySolver({ G: 1, mac, theta: 0.75 }).solveCells(cells)).potential, ref.potential);
      const fine = relErrors((await new GravitySolver({ G: 1, mac, theta: 0.1 }).solveCells(cells)).potential, ref.potential);
      expect(fine.max).toBeLessThan(coarse.max);
      expect(fine.max).toBeLessThan(1e-6);
    }
  });
});

describe('direct summation itself', () => {
  it('matches a plain double loop with the cube self term', async () => {
    const c = randomCells(300, 7, 0.01);
    const G = 6.674e-8;
    const r = await new GravitySolver({ G, selfPotential: 'cube' }).directCells(c);
    for (const i of [0, 17, 299]) {
      let phi = (-2.380077363979554 * G * c.mass[i]) / c.size[i];
      for (let j = 0; j < c.x.length; j++) {
        if (j === i) continue;
        phi -= (G * c.mass[j]) / Math.hypot(c.x[i] - c.x[j], c.y[i] - c.y[j], c.z[i] - c.z[j]);
      }
      expect(r.potential[i]).toBeCloseTo(phi, 12 - Math.round(Math.log10(Math.abs(phi))));
      expect(Math.abs(r.potential[i] - phi) / Math.abs(phi)).toBeLessThan(1e-13);
    }
  });

  it('two cells: each feels -G m/r from the other plus its own cube term; accelerations attract', async () => {
    const G = 2;
    const c = { x: [0.25, 0.75], y: [0.5, 0.5], z: [0.5, 0.5], mass: [3, 5], size: [0.1, 0.2] };
    for (const s of [new GravitySolver({ G, accelerations: true, selfPotential: 'cube' })]) {
      for (const r of [await s.solveCells(c), await s.directCells(c)]) {
        expect(r.potential[0]).toBeCloseTo(-G * 5 / 0.5 - (2.380077363979554 * G * 3) / 0.1, 12);
        expect(r.potential[1]).toBeCloseTo(-G * 3 / 0.5 - (2.380077363979554 * G * 5) / 0.2, 12);
        expect(r.accelerations!.x[0]).toBeCloseTo(G * 5 / 0.25, 12);
        expect(r.accelerations!.x[1]).toBeCloseTo(-G * 3 / 0.25, 12);
        expect(Math.abs(r.accelerations!.y[0])).toBe(0);
      }
    }
  });
});
