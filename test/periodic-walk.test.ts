/** The periodic tree walk against an independent Ewald sum, and the symmetries a periodic potential must have. */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { InvalidInputError, InvalidOptionError } from '../solver/errors.js';
import type { BoundaryChoice } from '../solver/options.js';
import { runPointMasses } from '../validation/periodicRun.js';
import { ewaldPotential3, type PeriodicBox } from '../validation/ewaldReference.js';
import { randomCells, rng } from './helpers.js';

const fine = { leafSize: 1, groupSize: 1 }; // few masses: every MAC decision counts

describe.each([
  [{ L: [1, 1, 1], periodic: [true, true, true] }, 150],
  [{ L: [1, 0.75, 1.25], periodic: [true, true, true] }, 120],
  [{ L: [1, 0.75, 1], periodic: [true, true, false] }, 80],
  [{ L: [1, 1, 0.75], periodic: [false, false, true] }, 80],
] as [PeriodicBox, number][])('tree vs independent Ewald sum, %j', (box, n) => {
  it('the error falls with theta and is below 1e-6 at theta 0.1', async () => {
    const r = await runPointMasses(n, box, [0.75, 0.5, 0.25, 0.1], fine);
    const e = r.errors.map((x) => x.maxError);
    for (let i = 1; i < e.length; i++) expect(e[i]).toBeLessThan(e[i - 1]);
    expect(e[0]).toBeGreaterThan(1e-5); // the tree approximates at large theta: the comparison can fail
    expect(e[e.length - 1]).toBeLessThan(1e-6);
  });
});

/** Cells in [0,1]^3 as a plain-array problem. */
function cellsIn(n: number, seed: number) {
  const c = randomCells(n, seed, 1e-3);
  return c;
}

const unit = { box: { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] } };

describe('periodic symmetries', () => {
  it('translating every cell (wrapped into the box) leaves the potentials unchanged', async () => {
    const c = cellsIn(3000, 3);
    const s = new GravitySolver({ G: 1, theta: 0.2, boundary: 'periodic' });
    const a = await s.solveCells(c, unit);
    const t = [0.37, 0.81, 0.13];
    const moved = { ...c, x: c.x.map((v) => (v + t[0]) % 1), y: c.y.map((v) => (v + t[1]) % 1), z: c.z.map((v) => (v + t[2]) % 1) };
    const b = await s.solveCells(moved, unit);
    expect(b.stats.ewaldTable.source).toBe('memory'); // one table per shape and process
    let scale = 0;
    for (const v of a.potential) scale = Math.max(scale, Math.abs(v));
    for (let i = 0; i < c.x.length; i++) expect(Math.abs(a.potential[i] - b.potential[i])).toBeLessThan(2e-4 * scale);
  });

  it('two clumps at opposite faces attract through the face (no node accepted across the box)', async () => {
    // clumps at x ~ 0.02 and x ~ 0.98 are 0.04 apart through the periodic face, 0.96 apart inside the box
    const r = rng(9);
    const n = 200;
    const x = new Float64Array(n), y = new Float64Array(n), z = new Float64Array(n), mass = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      x[i] = (i % 2 ? 0.98 : 0.02) + 0.015 * (r() - 0.5);
      y[i] = 0.5 + 0.03 * (r() - 0.5);
      z[i] = 0.5 + 0.03 * (r() - 0.5);
      mass[i] = 1;
    }
    const ref = ewaldPotential3({ L: [1, 1, 1], periodic: [true, true, true] }, { x, y, z, mass }, 1);
    const tree = await new GravitySolver({ G: 1, theta: 0.5, selfPotential: false, boundary: 'periodic' }).solveCells(
      { x, y, z, mass, size: 1e-4 }, unit);
    let maxRef = 0, maxErr = 0;
    for (let i = 0; i < n; i++) {
      maxRef = Math.max(maxRef, Math.abs(ref[i]));
      maxErr = Math.max(maxErr, Math.abs(tree.potential[i] - ref[i]));
    }
    // a node of one clump accepted at its in-box distance 0.96 instead of 0.04 would be off by tens of percent
    expect(maxErr / maxRef).toBeLessThan(1e-3);
  });

  it.each<[string, BoundaryChoice]>([
    ['periodic', 'periodic'],
    ['sheet', { x: 'periodic', y: 'periodic', z: 'isolated' }],
    ['line', { x: 'isolated', y: 'isolated', z: 'periodic' }],
  ])('accelerations are -grad phi (%s)', async (_name, boundary) => {
    const c = cellsIn(1500, 4);
    // massless probes around p: their potentials give -grad phi by central differences
    const p = [0.97, 0.51, 0.04];
    const eps = 1e-4;
    const probes = [[0, 0, 0], [eps, 0, 0], [-eps, 0, 0], [0, eps, 0], [0, -eps, 0], [0, 0, eps], [0, 0, -eps]];
    const all = {
      x: Float64Array.from([...c.x, ...probes.map((d) => p[0] + d[0])]),
      y: Float64Array.from([...c.y, ...probes.map((d) => p[1] + d[1])]),
      z: Float64Array.from([...c.z, ...probes.map((d) => p[2] + d[2])]),
      mass: Float64Array.from([...c.mass, ...probes.map(() => 0)]),
      size: 1e-3,
    };
    const r = await new GravitySolver({ G: 1, theta: 0.1, boundary, accelerations: true }).solveCells(all, unit);
    const k = c.x.length;
    const phi = r.potential;
    const fd = [-(phi[k + 1] - phi[k + 2]) / (2 * eps), -(phi[k + 3] - phi[k + 4]) / (2 * eps), -(phi[k + 5] - phi[k + 6]) / (2 * eps)];
    const a = [r.accelerations!.x[k], r.accelerations!.y[k], r.accelerations!.z[k]];
    const norm = Math.hypot(...fd);
    for (let d = 0; d < 3; d++) expect(Math.abs(a[d] - fd[d])).toBeLessThan(2e-4 * norm);
  });

  it('fully periodic forces sum to zero (no net self-force)', async () => {
    const c = cellsIn(2000, 6);
    const r = await new GravitySolver({ G: 1, theta: 0.2, boundary: 'periodic', accelerations: true }).solveCells(c, unit);
    let fx = 0, fy = 0, fz = 0, scale = 0;
    for (let i = 0; i < c.x.length; i++) {
      fx += c.mass[i] * r.accelerations!.x[i];
      fy += c.mass[i] * r.accelerations!.y[i];
      fz += c.mass[i] * r.accelerations!.z[i];
      scale += c.mass[i] * Math.hypot(r.accelerations!.x[i], r.accelerations!.y[i], r.accelerations!.z[i]);
    }
    expect(Math.hypot(fx, fy, fz)).toBeLessThan(1e-4 * scale);
  });

  it("'isolated' per axis is the isolated solver, bit for bit", async () => {
    const c = cellsIn(2000, 8);
    const a = await new GravitySolver({ G: 1 }).solveCells(c, unit);
    const b = await new GravitySolver({ G: 1, boundary: { x: 'isolated', y: 'isolated', z: 'isolated' } }).solveCells(c, unit);
    expect(b.potential).toEqual(a.potential);
    expect(a.stats.ewaldTable.source).toBe('none');
  });
});

describe('bad periodic input', () => {
  it('periodic without a box is an InvalidOptionError naming the box', async () => {
    const s = new GravitySolver({ boundary: 'periodic' });
    await expect(s.solveCells(cellsIn(10, 1))).rejects.toThrow(InvalidOptionError);
    await expect(s.solveCells(cellsIn(10, 1))).rejects.toThrow(/periodic boundaries need the box/);
  });

  it('cells outside the periodic box are an InvalidInputError naming the cell', async () => {
    const c = cellsIn(10, 1);
    c.x[7] = 1.5;
    await expect(new GravitySolver({ boundary: 'periodic' }).solveCells(c, unit)).rejects.toThrow(InvalidInputError);
    await expect(new GravitySolver({ boundary: 'periodic' }).solveCells(c, unit)).rejects.toThrow(/cell 7: x is outside the box/);
  });

  it('direct summation refuses periodic boundaries with a reason', async () => {
    await expect(new GravitySolver({ boundary: 'periodic' }).directCells(cellsIn(10, 1), unit)).rejects.toThrow(/direct summation is for isolated/);
  });

  it('a box too elongated for the table is an InvalidOptionError', async () => {
    const c = { x: [0.5], y: [0.5], z: [0.5], mass: [1], size: [0.01] };
    await expect(
      new GravitySolver({ boundary: 'periodic' }).solveCells(c, { box: { lo: [0, 0, 0], hi: [1, 1, 40] } }),
    ).rejects.toThrow(/aspect ratio/);
  });
});

describe('periodic solve on an AMR mesh', () => {
  it('uses the mesh domain as the box: a refined sine wave matches the analytic potential', async () => {
    const { uniformMesh, refineMesh, fillVariable, extractCells } = await import('../mesh/index.js');
    const mesh = uniformMesh({ lrefineMax: 3, level: 2 }); // 16^3 cells, one corner octant refined to 32^3
    refineMesh(mesh, (m, b) => m.block(b).hi[0] <= 0.5 && m.block(b).hi[1] <= 0.5 && m.block(b).hi[2] <= 0.5);
    const k = 2 * Math.PI;
    fillVariable(mesh, 'dens', (x) => 1 + 0.5 * Math.sin(k * x), { subsample: 4 });
    await new GravitySolver({ G: 1, boundary: 'periodic' }).solve(mesh);
    const cells = extractCells(mesh, 'gpot'); // 'mass' = gpot x volume: divided back below
    const gpot = cells.mass;
    let mean = 0, meanRef = 0, vol = 0;
    const ref = new Float64Array(cells.x.length);
    const phi = new Float64Array(cells.x.length);
    for (let i = 0; i < ref.length; i++) {
      const v = cells.size[i] ** 3;
      phi[i] = gpot[i] / v;
      ref[i] = -((4 * Math.PI * 0.5) / (k * k)) * Math.sin(k * cells.x[i]);
      mean += phi[i] * v; meanRef += ref[i] * v; vol += v;
    }
    let maxErr = 0, maxRef = 0;
    for (let i = 0; i < ref.length; i++) {
      maxErr = Math.max(maxErr, Math.abs(phi[i] - mean / vol - (ref[i] - meanRef / vol)));
      maxRef = Math.max(maxRef, Math.abs(ref[i]));
    }
    expect(cells.x.length).toBeGreaterThan(16 ** 3);
    // O(h^2) at 16 cells per wavelength on the coarse part (7e-3 on a uniform 16^3 grid), plus the step of the
    // local O(rho h^2) discretisation error at the refinement boundary
    expect(maxErr / maxRef).toBeLessThan(2e-2);
  });
});
