/**
 * The gravity module a hydro driver calls every step: the same potential as a one-off solve, linear in the masses
 * from step to step, the mesh's refinement followed, its arrays reused, and misuse refused with a typed error.
 */
import { describe, expect, it } from 'vitest';
import { GravityModule } from '../solver/gravityModule.js';
import { GravitySolver } from '../solver/gravitySolver.js';
import { InvalidInputError } from '../solver/errors.js';
import { extractCells, fillVariable, finiteDifferenceAccelerations, refineMesh, uniformMesh, type AmrMesh } from '../mesh/index.js';
import { randomCells, sphereMesh } from './helpers.js';

describe('GravityModule on a cell layout', () => {
  const c = randomCells(4000, 21);
  const layout = { x: c.x, y: c.y, z: c.z, size: c.size, box: { lo: [0, 0, 0], hi: [1, 1, 1] } as const };

  it('matches a one-off solve, is linear in the masses between steps, and reuses its arrays', async () => {
    const opts = { G: 1, backend: 'cpu' as const, accelerations: true };
    const gravity = GravityModule.init({ ...layout, box: { lo: [0, 0, 0], hi: [1, 1, 1] } }, opts);
    const once = await new GravitySolver(opts).solveCells(c, { box: { lo: [0, 0, 0], hi: [1, 1, 1] } });
    const s1 = await gravity.computePotential({ mass: c.mass });
    expect(Array.from(s1.potential)).toEqual(Array.from(once.potential));
    expect(Array.from(s1.accelerations!.y)).toEqual(Array.from(once.accelerations!.y));
    const first = Float64Array.from(s1.potential);
    // the next step: every mass tripled (a power of two would be too kind to rounding)
    const s2 = await gravity.computePotential({ mass: c.mass.map((m) => 3 * m) });
    expect(s2.potential).toBe(s1.potential); // the module's array, reused
    let worst = 0;
    for (let i = 0; i < first.length; i++) worst = Math.max(worst, Math.abs(s2.potential[i] - 3 * first[i]) / Math.abs(3 * first[i]));
    expect(worst).toBeLessThan(1e-12);
    expect(gravity.totals.calls).toBe(2);
    expect(gravity.totals.cells).toBe(8000);
    expect(gravity.lastStats!.cells).toBe(4000);
    gravity.finalize();
    await expect(gravity.computePotential({ mass: c.mass })).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('refuses masses of the wrong length, a mesh for a layout module, and a mismatched layout', async () => {
    const gravity = GravityModule.init(layout, { backend: 'cpu' });
    await expect(gravity.computePotential({ mass: new Float64Array(10) })).rejects.toThrow(
      /state.mass must be a Float64Array of 4000 cell masses \(got 10\)/,
    );
    await expect(gravity.computePotential(uniformMesh({ lrefineMax: 1 }))).rejects.toThrow(/made for a cell layout/);
    expect(() => GravityModule.init({ ...layout, y: new Float64Array(3) })).toThrow(InvalidInputError);
  });
});

/** Indices of the leaf cells in a mesh variable. */
function leafCellIndices(mesh: AmrMesh): number[] {
  const out: number[] = [];
  for (const b of mesh.leafBlocks()) for (let q = 0; q < mesh.cellsPerBlock; q++) out.push(b * mesh.cellsPerBlock + q);
  return out;
}

describe('GravityModule on a mesh', () => {
  it('writes gpot as GravitySolver.solve does, follows refinement, and only refreshes masses otherwise', async () => {
    const mesh = uniformMesh({ lrefineMax: 4, level: 2 });
    const rho = (x: number, y: number, z: number) => 1 + 10 * Math.exp(-((x - 0.4) ** 2 + (y - 0.5) ** 2 + (z - 0.6) ** 2) / 0.01);
    fillVariable(mesh, 'dens', rho);
    const opts = { backend: 'cpu' as const, accelerations: true };
    const gravity = GravityModule.init(mesh, opts);
    const step1 = await gravity.computePotential(mesh);

    const twin = uniformMesh({ lrefineMax: 4, level: 2 });
    fillVariable(twin, 'dens', rho);
    await new GravitySolver(opts).solve(twin);
    expect(Array.from(mesh.variable('gpot'))).toEqual(Array.from(twin.variable('gpot')));
    expect(Array.from(mesh.variable('gacz'))).toEqual(Array.from(twin.variable('gacz')));

    // the density doubles: the potential doubles (masses refreshed in place, same cells)
    const before = Float64Array.from(mesh.variable('gpot'));
    const d = mesh.variable('dens');
    for (let i = 0; i < d.length; i++) d[i] *= 2;
    const step2 = await gravity.computePotential(mesh);
    expect(step2.potential).toBe(step1.potential);
    const after = mesh.variable('gpot');
    let worst = 0;
    for (const i of leafCellIndices(mesh)) worst = Math.max(worst, Math.abs(after[i] - 2 * before[i]) / Math.abs(2 * before[i]));
    expect(worst).toBeLessThan(1e-12);

    // the hydro code refines around the clump: the module extracts the new leaves
    refineMesh(mesh, (m, b) => {
      const { lo, hi } = m.block(b);
      return lo[0] <= 0.4 && 0.4 <= hi[0] && lo[1] <= 0.5 && 0.5 <= hi[1] && lo[2] <= 0.6 && 0.6 <= hi[2];
    });
    fillVariable(mesh, 'dens', rho);
    const step3 = await gravity.computePotential(mesh);
    expect(step3.stats.cells).toBe(mesh.leafBlocks().length * mesh.cellsPerBlock);
    expect(step3.stats.cells).toBeGreaterThan(step1.stats.cells);
    const again = uniformMesh({ lrefineMax: 4, level: 2 });
    refineMesh(again, (m, b) => {
      const { lo, hi } = m.block(b);
      return lo[0] <= 0.4 && 0.4 <= hi[0] && lo[1] <= 0.5 && 0.5 <= hi[1] && lo[2] <= 0.6 && 0.6 <= hi[2];
    });
    fillVariable(again, 'dens', rho);
    await new GravitySolver(opts).solve(again);
    // leaf cells only: parents keep the values of the steps before they were refined
    const leaves = leafCellIndices(mesh);
    expect(leaves).toEqual(leafCellIndices(again));
    expect(leaves.map((i) => mesh.variable('gpot')[i])).toEqual(leaves.map((i) => again.variable('gpot')[i]));
    gravity.finalize();
  });
});

describe('GravityModule options', () => {
  it('passes the solver options through and keeps the mesh variable names to itself', async () => {
    const mesh = uniformMesh({ lrefineMax: 2, level: 2 });
    fillVariable(mesh, 'rho', () => 1);
    const gravity = GravityModule.init(mesh, {
      backend: 'cpu',
      theta: 0.7,
      densityVar: 'rho',
      potentialVar: 'phi',
      accelerations: true,
      accelerationVars: ['ax', 'ay', 'az'],
    });
    expect(gravity.options.theta).toBe(0.7);
    await gravity.computePotential(mesh);
    expect(mesh.hasVariable('phi') && mesh.hasVariable('ax') && !mesh.hasVariable('gpot')).toBe(true);
    expect(leafCellIndices(mesh).every((i) => mesh.variable('phi')[i] < 0)).toBe(true);
  });
});

describe('finite-difference accelerations', () => {
  it('are exact for a linear potential on a uniform mesh, boundaries included', () => {
    const mesh = uniformMesh({ lrefineMax: 2, level: 2 });
    fillVariable(mesh, 'gpot', (x, y, z) => 3 * x - 2 * y + 0.5 * z);
    finiteDifferenceAccelerations(mesh);
    for (const [name, want] of [['gfdx', -3], ['gfdy', 2], ['gfdz', -0.5]] as const) {
      const v = mesh.variable(name);
      for (const i of leafCellIndices(mesh)) expect(v[i]).toBeCloseTo(want, 10);
    }
  });

  it('are exact for a linear potential across refinement jumps (restriction and linear prolongation)', () => {
    const mesh = uniformMesh({ lrefineMax: 4, level: 2 });
    refineMesh(mesh, (m, b) => m.block(b).lo[0] < 0.3 && m.block(b).lo[1] < 0.3);
    fillVariable(mesh, 'gpot', (x, y, z) => 3 * x - 2 * y + 0.5 * z);
    finiteDifferenceAccelerations(mesh);
    expect(new Set(mesh.leafBlocks().map((b) => mesh.block(b).level)).size).toBeGreaterThan(1);
    let worst = 0;
    for (const i of leafCellIndices(mesh)) worst = Math.max(worst, Math.abs(mesh.variable('gfdx')[i] + 3), Math.abs(mesh.variable('gfdy')[i] - 2));
    expect(worst).toBeLessThan(1e-9);
  });

  it('agree with the walk and the analytic field of a sphere on a refined mesh (module option)', async () => {
    const { mesh, a } = sphereMesh();
    const G = 6.674e-8, M = (4 / 3) * Math.PI * a ** 3;
    const gravity = GravityModule.init(mesh, { accelerations: true, backend: 'cpu', finiteDifferenceVars: ['gfdx', 'gfdy', 'gfdz'] });
    await gravity.computePotential(mesh);
    const gSurface = (4 / 3) * Math.PI * G * a;
    let walkErr = 0, fdErr = 0, fdVsWalk = 0;
    const { nxb, nyb } = mesh.options;
    for (const b of mesh.leafBlocks()) {
      const h = mesh.blockCellSize(b)[0];
      for (let q = 0; q < mesh.cellsPerBlock; q++) {
        const [x, y, z] = mesh.cellCentre(b, q % nxb, Math.floor(q / nxb) % nyb, Math.floor(q / (nxb * nyb)));
        const r = Math.hypot(x - 0.5, y - 0.5, z - 0.5);
        if (Math.abs(r - a) < 2 * h) continue; // cells cut by the surface carry partial mass
        const gy = r <= a ? -(4 / 3) * Math.PI * G * (y - 0.5) : (-G * M * (y - 0.5)) / r ** 3;
        const i = b * mesh.cellsPerBlock + q;
        walkErr = Math.max(walkErr, Math.abs(mesh.variable('gacy')[i] - gy) / gSurface);
        fdErr = Math.max(fdErr, Math.abs(mesh.variable('gfdy')[i] - gy) / gSurface);
        fdVsWalk = Math.max(fdVsWalk, Math.abs(mesh.variable('gfdy')[i] - mesh.variable('gacy')[i]) / gSurface);
      }
    }
    expect(walkErr).toBeLessThan(0.02);
    expect(fdErr).toBeLessThan(0.03);
    expect(fdVsWalk).toBeLessThan(0.03);
    expect(fdVsWalk).toBeGreaterThan(0); // two different estimates
    gravity.finalize();
  });
});

describe('GravityModule.fieldAt: the field at probes (issue #18)', () => {
  it('a sphere on a mesh: outside it the potential and pull of a point mass, inside the uniform sphere\'s', async () => {
    const { mesh, a } = sphereMesh(0.3, 4);
    const gravity = GravityModule.init(mesh, { G: 1, accelerations: true, backend: 'cpu' });
    let M = 0;
    const cells = extractCells(mesh, 'dens');
    for (let i = 0; i < cells.count; i++) M += cells.mass[i];
    // outside (also beyond the domain), and at the centre: -G M / r and -3 G M / (2 a) for a uniform sphere
    const probes = { x: [0.5, 0.5, 2.5, 0.5], y: [0.5, 0.5, 0.5, -1.5], z: [1.0, 0.5, 0.5, 0.5] };
    const r = await gravity.fieldAt(mesh, probes);
    const expected = [-M / 0.5, (-3 * M) / (2 * a), -M / 2, -M / 2];
    expected.forEach((v, i) => expect(Math.abs(r.potential[i] - v) / Math.abs(v)).toBeLessThan(5e-3));
    // the pull points at the centre with G M / r^2 outside
    expect(Math.abs(r.accelerations!.z[0] + M / 0.25) / (M / 0.25)).toBeLessThan(5e-3);
    expect(Math.abs(r.accelerations!.x[2] + M / 4) / (M / 4)).toBeLessThan(5e-3);
    expect(r.stats.system.probes).toBe(4);
    // nothing is written into the mesh
    expect(mesh.hasVariable('gpot')).toBe(false);
  });

  it('a layout: the same values as GravitySolver.solveSystem; bad probes are typed errors', async () => {
    const c = randomCells(2000, 5);
    const layout = { x: c.x, y: c.y, z: c.z, size: c.size, box: { lo: [0, 0, 0], hi: [1, 1, 1] } as const };
    const gravity = GravityModule.init(layout, { G: 1, backend: 'cpu' });
    const probes = { x: [0.1, 0.9, 3], y: [0.2, 0.5, 0], z: [0.3, 0.5, -1] };
    const r = await gravity.fieldAt({ mass: c.mass }, probes);
    const s = await new GravitySolver({ G: 1, backend: 'cpu' }).solveSystem({ cells: c, probes }, { box: layout.box });
    expect(Array.from(r.potential)).toEqual(Array.from(s.probes!.potential));
    await expect(gravity.fieldAt({ mass: c.mass }, { x: [NaN], y: [0], z: [0] })).rejects.toThrow(InvalidInputError);
    await expect(gravity.fieldAt({ mass: c.mass.subarray(1) }, probes)).rejects.toThrow(InvalidInputError);
  });
});
