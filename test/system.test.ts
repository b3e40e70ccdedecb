/**
 * System solves (issue #18): probes (targets only) against direct summation written here, probes on cell centres,
 * linearity, wrapping in periodic boxes, target subsets bitwise equal to the full solve, and bad input. On the CPU
 * backend, the reference (its direct sums are double; the GPU's are float): the GPU is checked against it by
 * native/tools/parity/system.cpp (CTest gpu.system).
 */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { InvalidInputError, InvalidOptionError } from '../solver/errors.js';
import { clusteredCells, gridCells, relErrors, rng, type Cells } from './helpers.js';

const G = 1;

/** Potential of the cells (point masses) at (px, py, pz), summed here in double: the reference for the probes. */
function directAt(c: Cells, px: number, py: number, pz: number): number {
  let s = 0;
  for (let i = 0; i < c.x.length; i++) {
    const dx = px - c.x[i], dy = py - c.y[i], dz = pz - c.z[i];
    const r = Math.sqrt(dx * dx + dy * dy + dz * dz);
    if (r > 0) s += c.mass[i] / r;
  }
  return -G * s;
}

/** 64 probes: 48 among the cells, 12 around them (outside the unit cube), 4 far away. */
function probes64(seed: number): { x: Float64Array; y: Float64Array; z: Float64Array } {
  const r = rng(seed);
  const x = new Float64Array(64), y = new Float64Array(64), z = new Float64Array(64);
  for (let i = 0; i < 64; i++) {
    const spread = i < 48 ? 1 : i < 60 ? 1.6 : 40;
    const off = i < 48 ? 0 : 0.5 - spread / 2;
    x[i] = off + spread * r();
    y[i] = off + spread * r();
    z[i] = off + spread * r();
  }
  return { x, y, z };
}

describe('probes', () => {
  const cells = clusteredCells(6000, 11);
  const probes = probes64(5);
  const ref = Array.from(probes.x, (_, i) => directAt(cells, probes.x[i], probes.y[i], probes.z[i]));

  it('64 probes: the tree at the probes is within 2x of the cells own tree error against direct summation', async () => {
    const solver = new GravitySolver({ backend: 'cpu', G, selfPotential: 'none' });
    const r = await solver.solveSystem({ cells, probes });
    const cellsRef = await solver.directCells(cells);
    const cellErr = relErrors(r.cells!.potential, cellsRef.potential);
    const probeErr = relErrors(r.probes!.potential, ref);
    expect(cellErr.max).toBeGreaterThan(0); // the tree approximates (else the comparison proves nothing)
    expect(probeErr.max).toBeLessThan(2 * cellErr.max);
    expect(probeErr.mean).toBeLessThan(2 * cellErr.mean);
    expect(r.stats.system.probes).toBe(64);
    // octree leaves of at most groupSize (32) probes each: compact, so sparse probes still accept nodes
    expect(r.stats.system.probeGroups).toBeGreaterThanOrEqual(2);
    expect(r.stats.system.probeApproxInteractions).toBeGreaterThan(0);
    // the cells' results are solveCells'
    const plain = await solver.solveCells(cells);
    expect(Array.from(r.cells!.potential)).toEqual(Array.from(plain.potential));
  });

  it("method 'direct' at the probes is the sum over the cells, and accelerations are -grad phi", async () => {
    const solver = new GravitySolver({ backend: 'cpu', G, selfPotential: 'none', accelerations: true });
    const r = await solver.solveSystem({ cells, probes }, { method: 'direct' });
    expect(relErrors(r.probes!.potential, ref).max).toBeLessThan(1e-12);
    // central difference of the reference potential at a few probes
    for (const i of [0, 17, 50, 62]) {
      const h = 1e-5 * (i >= 60 ? 40 : 1);
      const gx = -(directAt(cells, probes.x[i] + h, probes.y[i], probes.z[i]) - directAt(cells, probes.x[i] - h, probes.y[i], probes.z[i])) / (2 * h);
      expect(Math.abs(r.probes!.accelerations!.x[i] - gx)).toBeLessThan(1e-4 * Math.abs(gx) + 1e-9);
    }
  });

  it('error falls with theta and the quadrupole beats the monopole at the probes', async () => {
    const errs: number[] = [];
    for (const theta of [1, 0.5, 0.25]) {
      const r = await new GravitySolver({ backend: 'cpu', G, theta }).solveSystem({ cells, probes });
      errs.push(relErrors(r.probes!.potential, ref).max);
    }
    expect(errs[1]).toBeLessThan(errs[0]);
    expect(errs[2]).toBeLessThan(errs[1]);
    const mono = await new GravitySolver({ backend: 'cpu', G, order: 1 }).solveSystem({ cells, probes });
    expect(errs[1]).toBeLessThan(relErrors(mono.probes!.potential, ref).max);
  });

  it('linearity: the probes of masses a + b are those of a plus those of b', async () => {
    const r = rng(3);
    const a = { ...cells, mass: Float64Array.from(cells.mass, () => r()) };
    const b = { ...cells, mass: Float64Array.from(cells.mass, (m, i) => m - 0.5 * a.mass[i] + 0.5) };
    const ab = { ...cells, mass: Float64Array.from(a.mass, (m, i) => m + b.mass[i]) };
    const solver = new GravitySolver({ backend: 'cpu', G, theta: 0.3 });
    const [pa, pb, pab] = await Promise.all([a, b, ab].map((c) => solver.solveSystem({ cells: c, probes })));
    const sum = pa.probes!.potential.map((v, i) => v + pb.probes!.potential[i]);
    const refAb = Array.from(probes.x, (_, i) => directAt(ab, probes.x[i], probes.y[i], probes.z[i]));
    const treeErr = relErrors(pab.probes!.potential, refAb).max;
    expect(relErrors(sum, pab.probes!.potential).max).toBeLessThan(2 * treeErr);
    // doubling every mass doubles the potential exactly (powers of two scale the moments exactly)
    const twice = await solver.solveSystem({ cells: { ...a, mass: a.mass.map((m) => 2 * m) }, probes });
    expect(Array.from(twice.probes!.potential)).toEqual(Array.from(pa.probes!.potential, (v) => 2 * v));
  });

  it('probes without cells feel nothing; a missing part is absent from the result', async () => {
    const solver = new GravitySolver({ backend: 'cpu', G });
    const r = await solver.solveSystem({ probes: { x: [0.1, 0.2], y: [0, 0], z: [0, 0] } });
    expect(Array.from(r.probes!.potential, Math.abs)).toEqual([0, 0]);
    expect(r.cells).toBeUndefined();
    const c = await solver.solveSystem({ cells });
    expect(c.probes).toBeUndefined();
    expect(c.cells!.potential.length).toBe(cells.x.length);
  });
});

describe('probes on cell centres', () => {
  const grid = gridCells(16, (x, y, z) => 1 + Math.sin(2 * Math.PI * x) * Math.cos(2 * Math.PI * y) + z);
  const picks = [0, 1, 100, 777, 2048, 4095];
  const onCentres = { x: picks.map((i) => grid.x[i]), y: picks.map((i) => grid.y[i]), z: picks.map((i) => grid.z[i]) };

  it("direct: a probe at a cell centre is the cell's potential without its self term", async () => {
    for (const selfPotential of ['none', 'lattice'] as const) {
      const solver = new GravitySolver({ backend: 'cpu', G, selfPotential });
      const r = await solver.solveSystem({ cells: grid, probes: onCentres }, { method: 'direct' });
      const c = 2.83729747948062; // kLatticeSelf
      picks.forEach((cell, k) => {
        const self = selfPotential === 'none' ? 0 : -c * G * grid.mass[cell] / grid.size[cell];
        const expected = r.cells!.potential[cell] - self;
        expect(Math.abs(r.probes!.potential[k] - expected)).toBeLessThanOrEqual(1e-14 * Math.abs(expected));
      });
    }
  });

  it('tree at theta 0.5: within the tree error; at small theta to rounding', async () => {
    const direct = await new GravitySolver({ backend: 'cpu', G, selfPotential: 'none' }).directCells(grid);
    for (const theta of [0.5, 0.05]) {
      const solver = new GravitySolver({ backend: 'cpu', G, theta, selfPotential: 'none' });
      const r = await solver.solveSystem({ cells: grid, probes: onCentres });
      const treeErr = relErrors(r.cells!.potential, direct.potential).max;
      const cellAt = picks.map((i) => r.cells!.potential[i]);
      const gap = relErrors(r.probes!.potential, cellAt).max;
      if (theta === 0.5) expect(gap).toBeLessThanOrEqual(2 * treeErr);
      else expect(gap).toBeLessThan(1e-12);
    }
  });

  it('a periodic box: probes wrap (x + L is x), and on cell centres are the cells within the tree error', async () => {
    const solver = new GravitySolver({ backend: 'cpu', G, selfPotential: 'none', boundary: 'periodic' });
    const box = { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] };
    const r = await solver.solveSystem({ cells: grid, probes: onCentres }, { box });
    const fine = await new GravitySolver({ backend: 'cpu', G, theta: 0.2, selfPotential: 'none', boundary: 'periodic' }).solveCells(grid, { box });
    const cellAt = picks.map((i) => r.cells!.potential[i]);
    // the contrast's potential has zero mean: measure against the spread of the potential
    const spread = Math.max(...fine.potential) - Math.min(...fine.potential);
    const treeErr = Math.max(...Array.from(r.cells!.potential, (v, i) => Math.abs(v - fine.potential[i])));
    picks.forEach((_, k) => expect(Math.abs(r.probes!.potential[k] - cellAt[k])).toBeLessThanOrEqual(2 * treeErr + 1e-12 * spread));
    const shifted = { x: onCentres.x.map((v) => v + 1), y: onCentres.y.map((v) => v - 3), z: onCentres.z };
    const w = await solver.solveSystem({ cells: grid, probes: shifted }, { box });
    picks.forEach((_, k) => expect(Math.abs(w.probes!.potential[k] - r.probes!.potential[k])).toBeLessThan(1e-9 * spread));
  });
});

describe('targets: a subset of the cells', () => {
  const cells = clusteredCells(8000, 7);
  const r = rng(9);
  const targets = Array.from({ length: 300 }, () => Math.floor(r() * 8000)).filter((v, i, a) => a.indexOf(v) === i);

  it.each([
    ['isolated, potential', { G }],
    ['isolated, accelerations, vote', { G, accelerations: true, walk: 'vote' as const }],
    ['periodic, accelerations', { G, accelerations: true, boundary: 'periodic' as const }],
  ])('%s: bitwise the full solve at the targets, fewer groups walked', async (_n, options) => {
    const solver = new GravitySolver({ backend: 'cpu', ...options });
    const box = { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] };
    const full = await solver.solveCells(cells, { box });
    const sub = await solver.solveSystem({ cells }, { box, targets });
    expect(sub.cells!.potential.length).toBe(targets.length);
    targets.forEach((t, k) => expect(Object.is(sub.cells!.potential[k], full.potential[t])).toBe(true));
    if (full.accelerations) {
      for (const a of ['x', 'y', 'z'] as const)
        targets.forEach((t, k) => expect(Object.is(sub.cells!.accelerations![a][k], full.accelerations![a][t])).toBe(true));
    }
    expect(sub.stats.system.targets).toBe(targets.length);
    expect(sub.stats.system.targetGroups).toBeLessThan(full.stats.groups);
    expect(sub.stats.groups).toBe(full.stats.groups); // stats.groups: all the cells' groups, walked or not
    expect(sub.stats.approxInteractionsPerCell * targets.length).toBeLessThan(full.stats.approxInteractionsPerCell * 8000);
  });

  it('an empty subset computes nothing; direct summation takes targets too', async () => {
    const solver = new GravitySolver({ backend: 'cpu', G });
    const none = await solver.solveSystem({ cells }, { targets: [] });
    expect(none.cells!.potential.length).toBe(0);
    expect(none.stats.system.targetGroups).toBe(0);
    const d = await solver.solveSystem({ cells }, { targets: [5, 3], method: 'direct' });
    const all = await solver.directCells(cells);
    expect(Array.from(d.cells!.potential)).toEqual([all.potential[5], all.potential[3]]);
  });
});

describe('bad probes and targets are typed errors', () => {
  const cells = clusteredCells(100, 1);
  const solver = new GravitySolver({ backend: 'cpu', G });
  it.each([
    [{ probes: { x: [0, 1], y: [0, NaN], z: [0, 0] } }, {}, /probe 1: y is not finite/],
    [{ probes: { x: [0, 1], y: [0], z: [0, 0] } }, {}, /mismatched array lengths: probes/],
    [{}, { targets: [0, 100] }, /targets\[1\] = 100 is not a cell index/],
    [{}, { targets: [3, -1] }, /targets\[1\] = -1 is not a cell index/],
    [{}, { targets: [1.5] }, /targets\[0\] = 1.5 is not a cell index/],
    [{}, { targets: [4, 2, 4] }, /targets\[2\] = 4 repeats targets\[0\]/],
    [{}, { targets: new Uint32Array([7, 7]) }, /repeats/],
  ])('%o %o', async (parts, opts, message) => {
    await expect(solver.solveSystem({ cells, ...parts }, opts as object)).rejects.toThrow(InvalidInputError);
    await expect(solver.solveSystem({ cells, ...parts }, opts as object)).rejects.toThrow(message);
  });

  it('a probe outside the box along an isolated axis of a periodic box (native check); direct in a periodic box', async () => {
    const s = new GravitySolver({ backend: 'cpu', G, boundary: { x: 'periodic', y: 'periodic', z: 'isolated' } });
    const box = { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] };
    const bad = s.solveSystem({ cells, probes: { x: [5], y: [-3], z: [1.5] } }, { box });
    await expect(bad).rejects.toThrow(InvalidInputError);
    await expect(s.solveSystem({ cells, probes: { x: [5], y: [-3], z: [1.5] } }, { box })).rejects.toThrow(/probe 0: z is outside the box/);
    // x and y wrap: accepted
    await expect(s.solveSystem({ cells, probes: { x: [5], y: [-3], z: [0.5] } }, { box })).resolves.toBeDefined();
    await expect(s.solveSystem({ cells }, { box, method: 'direct' })).rejects.toThrow(InvalidOptionError);
    await expect(solver.solveSystem({ cells }, { method: 'fast' as 'tree' })).rejects.toThrow(InvalidOptionError);
  });
});
