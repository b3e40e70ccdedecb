/**
 * Solving on an AMR mesh: a uniform sphere on a refined mesh against its analytic potential and acceleration,
 * and the write-back of gpot / gacx, gacy, gacz into block variables.
 */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { extractCells } from '../mesh/index.js';
import { sphereMesh } from './helpers.js';
import { uniformSpherePotential } from '../validation/analytic/index.js';

describe('uniform sphere on an AMR mesh', () => {
  it('potential within 0.1% and accelerations within 2% of the analytic sphere; values land in gpot/gac*', async () => {
    const { mesh, a } = sphereMesh();
    const G = 6.674e-8;
    const solver = new GravitySolver({ accelerations: true });
    const r = await solver.solve(mesh);
    const cells = extractCells(mesh, 'dens');
    const gpot = mesh.variable('gpot');
    const gacx = mesh.variable('gacx');
    const ncell = mesh.cellsPerBlock;
    let maxErr = 0;
    let maxAccErr = 0;
    const gSurface = (4 / 3) * Math.PI * G * a; // |g| at the surface for rho = 1
    for (let i = 0; i < cells.count; i++) {
      const [x, y, z] = [cells.x[i], cells.y[i], cells.z[i]];
      const exact = uniformSpherePotential({ a, rho: 1, G, centre: [0.5, 0.5, 0.5] }, x, y, z);
      maxErr = Math.max(maxErr, Math.abs(r.potential[i] - exact) / Math.abs(exact));
      const rr = Math.hypot(x - 0.5, y - 0.5, z - 0.5);
      // analytic g_x: -(4/3) pi G rho dx inside, -G M dx / r^3 outside
      const M = (4 / 3) * Math.PI * a ** 3;
      const gx = rr <= a ? -(4 / 3) * Math.PI * G * (x - 0.5) : (-G * M * (x - 0.5)) / rr ** 3;
      // cells cut by the surface carry partial mass; judge accelerations away from the surface
      if (Math.abs(rr - a) > 2 * cells.size[i]) maxAccErr = Math.max(maxAccErr, Math.abs(r.accelerations!.x[i] - gx) / gSurface);
      // write-back: the block variable holds exactly what the solve returned
      const slot = cells.block[i] * ncell + cells.cell[i];
      expect(gpot[slot]).toBe(r.potential[i]);
      expect(gacx[slot]).toBe(r.accelerations!.x[i]);
    }
    expect(maxErr).toBeLessThan(1e-3);
    expect(maxAccErr).toBeLessThan(0.02);
    expect(mesh.hasVariable('gacy') && mesh.hasVariable('gacz')).toBe(true);
  });

  it('leaves the density untouched and rejects an unknown density variable', async () => {
    const { mesh } = sphereMesh();
    const before = mesh.variable('dens').slice();
    await new GravitySolver().solve(mesh);
    expect(mesh.variable('dens')).toEqual(before);
    await expect(new GravitySolver().solve(mesh, { densityVar: 'rho' })).rejects.toThrow(/rho/);
  });
});
