/**
 * The self-term models (solver/options.ts SelfPotentialChoice) against physics: the constants against an
 * independent Ewald sum and the cube integral, a uniform periodic grid (the lattice term must give the uniform
 * density's potential, zero), the convergence orders it implies for smooth fields, and the isolated uniform
 * cube (closed-form prism potential), where a sharp surface on cell faces adds a constant offset inside.
 */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { InvalidOptionError } from '../solver/errors.js';
import { cubeSelfPotentialCoefficient, prismPotential } from '../validation/analytic/index.js';
import { ewaldCorrection, periodicGreen } from '../validation/ewaldReference.js';
import { boxGrid } from '../validation/periodicProblems.js';
import { runSineWave } from '../validation/periodicRun.js';

const kLattice = -ewaldCorrection({ L: [1, 1, 1], periodic: [true, true, true] }, [0, 0, 0]); // 2.8372975

/** One cell of mass m and side h, isolated: its potential is the self term alone. */
async function selfTermOf(selfPotential: 'cube' | 'lattice' | 'none' | boolean, m = 3, h = 0.5): Promise<number> {
  const s = new GravitySolver({ G: 1, selfPotential, backend: 'cpu' });
  const r = await s.solveCells({ x: [0], y: [0], z: [0], mass: [m], size: [h] });
  return -r.potential[0] * (h / m); // the coefficient c of -c G m / h
}

describe('self term', () => {
  it("'cube' is the uniform cube's centre potential, 'lattice' minus the cubic lattice's C(0) (independent Ewald sum)", async () => {
    expect(kLattice).toBeGreaterThan(2.83);
    expect(Math.abs((await selfTermOf('cube')) - cubeSelfPotentialCoefficient)).toBeLessThan(1e-14);
    expect(Math.abs((await selfTermOf(true)) - cubeSelfPotentialCoefficient)).toBeLessThan(1e-14);
    expect(Math.abs((await selfTermOf('lattice')) - kLattice)).toBeLessThan(1e-11);
    expect(await selfTermOf('none')).toBe(0);
    expect(await selfTermOf(false)).toBe(0);
  });

  it('the identity behind it: on a 3 x 3 x 3 grid of the unit box, sum_j psi(r_j) + C(0) = -kL / h (Ewald, 1e-12)', () => {
    // the 27 images of the box's Green's function sum to the Green's function of the lattice of spacing h = 1/3
    const box = { L: [1, 1, 1] as [number, number, number], periodic: [true, true, true] as [boolean, boolean, boolean] };
    let sum = ewaldCorrection(box, [0, 0, 0]);
    for (let j = 1; j < 27; j++) sum += periodicGreen(box, [(j % 3) / 3, (Math.floor(j / 3) % 3) / 3, Math.floor(j / 9) / 3]);
    expect(Math.abs(sum + 3 * kLattice)).toBeLessThan(1e-11);
  });

  it('a uniform periodic grid: the lattice term gives the uniform density its potential (zero), the cube term is (kL - kC) G rho h^2 off', async () => {
    const h = 0.1;
    const rho = 2;
    const box = { lo: [0, 0, 0] as [number, number, number], hi: [0.4, 0.3, 0.5] as [number, number, number] };
    const cells = boxGrid(box, h, () => rho * h * h * h); // 4 x 3 x 5 cells, a rectangular box
    const unit = rho * h * h; // G = 1
    // the masses as given (densityContrast false): the self term's own physics
    for (const [self, want] of [['lattice', 0], ['cube', kLattice - cubeSelfPotentialCoefficient]] as const) {
      const r = await new GravitySolver({ G: 1, theta: 0.3, selfPotential: self, boundary: 'periodic', backend: 'cpu',
        densityContrast: false }).solveCells(cells, { box });
      // the Ewald table interpolates C to ~1e-8 / L: that, not the self term, sets the residual
      for (const v of r.potential) expect(Math.abs(v / unit - want)).toBeLessThan(1e-6);
    }
    // as a density contrast (the default) a uniform density has no sources at all: zero whatever the self term
    for (const self of ['lattice', 'cube'] as const) {
      const r = await new GravitySolver({ G: 1, theta: 0.3, selfPotential: self, boundary: 'periodic', backend: 'cpu' })
        .solveCells(cells, { box });
      expect(r.stats.densityContrast).toBe(true);
      expect(r.stats.meanDensity).toBeCloseTo(rho, 12);
      for (const v of r.potential) expect(Math.abs(v / unit)).toBeLessThan(1e-12);
    }
  });

  it('smooth field sampled at cell centres: the lattice term converges at fourth order, the cube term at second', async () => {
    const err = async (n: number, selfPotential: 'cube' | 'lattice') =>
      (await runSineWave(n, 'axis', { G: 1, theta: 0.25, selfPotential }, 'centre')).maxDiffError;
    const lattice = [await err(8, 'lattice'), await err(16, 'lattice')];
    const cube = [await err(8, 'cube'), await err(16, 'cube')];
    expect(Math.log2(lattice[0] / lattice[1])).toBeGreaterThan(3.7);
    expect(Math.log2(cube[0] / cube[1])).toBeGreaterThan(1.8);
    expect(Math.log2(cube[0] / cube[1])).toBeLessThan(2.3);
    expect(lattice[1]).toBeLessThan(cube[1] / 20);
  });

  it('cell-averaged masses: with the lattice term the error is the averaging alone, 1 - sinc(k h / 2)', async () => {
    const n = 16;
    const r = await runSineWave(n, 'axis', { G: 1, theta: 0.25, selfPotential: 'lattice' }, 'average');
    const a = Math.PI / n; // k h / 2
    const averaging = 1 - Math.sin(a) / a; // the cell average of sin over its centre value
    expect(Math.abs(r.maxError / averaging - 1)).toBeLessThan(0.03); // the rest is fourth order
  });

  it('isolated uniform cube (faces on cell faces): the sharp surface adds a constant -(pi/6) G rho h^2 inside', async () => {
    // a grid sums 1/r over the body by the midpoint rule, which at faces on cell faces gains (h^2/24) times the
    // flux of grad(1/r) through the surface, -4 pi inside: a uniform double-layer offset (no force)
    const n = 17;
    const h = 1 / n;
    const box = { lo: [0, 0, 0], hi: [1, 1, 1] };
    const cells = boxGrid(box, h, () => h * h * h);
    const r = await new GravitySolver({ G: 1, selfPotential: 'lattice', backend: 'cpu' }).directCells(cells);
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < cells.x.length; i++) {
      const p = [cells.x[i], cells.y[i], cells.z[i]];
      if (Math.min(...p, ...p.map((v) => 1 - v)) < h) continue; // the surface layer's own cells: within 0.03
      const e = (r.potential[i] - prismPotential(box.lo, box.hi, 1, p[0], p[1], p[2], 1)) / (h * h);
      lo = Math.min(lo, e);
      hi = Math.max(hi, e);
    }
    expect(Math.abs(lo + Math.PI / 6)).toBeLessThan(2e-3);
    expect(Math.abs(hi + Math.PI / 6)).toBeLessThan(2e-3);
  });

  it('rejects an unknown model with a typed error naming the option', () => {
    expect(() => new GravitySolver({ selfPotential: 'sphere' as never })).toThrow(InvalidOptionError);
    expect(() => new GravitySolver({ selfPotential: 1 as never })).toThrow(/selfPotential/);
  });
});
