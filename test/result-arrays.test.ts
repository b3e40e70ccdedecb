/**
 * Caller-owned result arrays (`out`): the solve writes into them, with the same values as a solve that allocates
 * its own, and refuses arrays of the wrong kind or length with a typed error naming the array.
 */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { InvalidInputError } from '../solver/errors.js';
import { randomCells } from './helpers.js';

describe('results into caller arrays', () => {
  const cells = randomCells(3000, 5);
  const n = cells.x.length;

  it('fills the given arrays (potential and accelerations) with the values of an allocating solve', async () => {
    const solver = new GravitySolver({ accelerations: true, G: 1, backend: 'cpu' });
    const fresh = await solver.solveCells(cells);
    const out = {
      potential: new Float64Array(n).fill(NaN),
      accelerations: { x: new Float64Array(n).fill(NaN), y: new Float64Array(n).fill(NaN), z: new Float64Array(n).fill(NaN) },
    };
    const r = await solver.solveCells(cells, { out });
    expect(r.potential).toBe(out.potential);
    expect(r.accelerations!.x).toBe(out.accelerations.x);
    expect(Array.from(out.potential)).toEqual(Array.from(fresh.potential));
    expect(Array.from(out.accelerations.z)).toEqual(Array.from(fresh.accelerations!.z));
    // reuse: a second solve into the same arrays overwrites every element
    out.potential.fill(NaN);
    await solver.solveCells(cells, { out });
    expect(out.potential.every((v) => Number.isFinite(v) && v < 0)).toBe(true);
  });

  it('direct summation writes there too', async () => {
    const solver = new GravitySolver({ G: 1, backend: 'cpu' });
    const small = randomCells(200, 9);
    const out = { potential: new Float64Array(200).fill(NaN) };
    const r = await solver.directCells(small, { out });
    expect(r.potential).toBe(out.potential);
    expect(out.potential.every((v) => Number.isFinite(v) && v < 0)).toBe(true);
  });

  it('refuses a wrong length, a wrong type and missing acceleration arrays', async () => {
    const pot = new GravitySolver({ backend: 'cpu' });
    await expect(pot.solveCells(cells, { out: { potential: new Float64Array(n - 1) } })).rejects.toThrow(
      new RegExp(`out.potential has ${n - 1} elements, expected ${n}`),
    );
    await expect(
      pot.solveCells(cells, { out: { potential: new Float32Array(n) as unknown as Float64Array } }),
    ).rejects.toBeInstanceOf(InvalidInputError);
    const acc = new GravitySolver({ backend: 'cpu', accelerations: true });
    await expect(acc.solveCells(cells, { out: { potential: new Float64Array(n) } })).rejects.toThrow(
      /out.accelerations must be/,
    );
  });
});
