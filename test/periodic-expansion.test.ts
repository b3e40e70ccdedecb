/**
 * The Ewald correction expanded about each group's centre (native/core/ewald_expansion_k.h) against per-pair table
 * lookups (ewaldExpansion: false) and against the independent Ewald sum: groups smaller than a table spacing take
 * the expansion, and it must not cost accuracy.
 */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import type { BoundaryChoice } from '../solver/options.js';
import { ewaldPotential3, periodicPotential, type PeriodicBox } from '../validation/ewaldReference.js';
import { rng } from './helpers.js';

/** Tight clusters (radius 0.004 of the box, well under the table spacing of 1/56): each group of 16 is one cluster. */
function clusters(box: PeriodicBox, count: number, per: number, seed: number) {
  const r = rng(seed);
  const n = count * per;
  const x = new Float64Array(n), y = new Float64Array(n), z = new Float64Array(n), mass = new Float64Array(n);
  for (let c = 0; c < count; c++) {
    const cx = r() * box.L[0], cy = r() * box.L[1], cz = r() * box.L[2];
    for (let k = 0; k < per; k++) {
      const i = c * per + k;
      // wrapped into the box: some clusters straddle a periodic face
      const wrap = (v: number, L: number) => ((v % L) + L) % L;
      x[i] = wrap(cx + 0.008 * (r() - 0.5), box.L[0]);
      y[i] = wrap(cy + 0.008 * (r() - 0.5), box.L[1]);
      z[i] = wrap(cz + 0.008 * (r() - 0.5), box.L[2]);
      mass[i] = 0.5 + r();
    }
  }
  return { x, y, z, mass };
}

const maxAbs = (a: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]));
  return m;
};
const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

describe.each([
  [{ L: [1, 1, 1], periodic: [true, true, true] }, 'periodic'],
  [{ L: [1, 0.75, 1], periodic: [true, true, false] }, { x: 'periodic', y: 'periodic', z: 'isolated' }],
] as [PeriodicBox, BoundaryChoice][])('expansion about group centres, %j', (box, boundary) => {
  const p = clusters(box, 12, 16, 21);
  const cells = { ...p, size: 1e-4 };
  const at = { box: { lo: [0, 0, 0] as [number, number, number], hi: box.L } };
  const solve = (theta: number, ewaldExpansion: boolean) =>
    new GravitySolver({ G: 1, theta, boundary, selfPotential: false, backend: 'cpu', leafSize: 1, groupSize: 16,
      accelerations: true, ewaldExpansion }).solveCells(cells, at);

  it('matches per-pair lookups (potential and accelerations)', async () => {
    const [e, f] = [await solve(0.5, true), await solve(0.5, false)];
    expect(e.stats.interactionsPerCell).toBe(f.stats.interactionsPerCell); // same lists: only the correction differs
    // the table's own interpolation error is 3.5e-7 of 1/L; the issue asks for the correction to 1e-6
    const gap = maxDiff(e.potential, f.potential) / maxAbs(f.potential);
    expect(gap).toBeLessThan(1e-6);
    expect(gap).toBeGreaterThan(0); // the two paths did differ: these groups took the expansion
    const g = (r: typeof e) => [...r.accelerations!.x, ...r.accelerations!.y, ...r.accelerations!.z];
    expect(maxDiff(g(e), g(f)) / maxAbs(g(f))).toBeLessThan(1e-6);
    // and it is not the isolated answer: the images matter at this level
    const iso = await new GravitySolver({ G: 1, theta: 0.5, selfPotential: false, backend: 'cpu', leafSize: 1,
      groupSize: 16 }).solveCells(cells, at);
    expect(maxDiff(iso.potential, f.potential) / maxAbs(f.potential)).toBeGreaterThan(1e-2);
  });

  it('converges to the independent Ewald sum at small theta', async () => {
    const ref = box.periodic.every((v) => v) ? ewaldPotential3(box, p, 1) : periodicPotential(box, p, 1);
    const r = await solve(0.1, true);
    expect(maxDiff(r.potential, ref) / maxAbs(ref)).toBeLessThan(1e-6);
  });
});
