/**
 * FLASH's tree-solver tests at CI size (validation/periodicProblems.ts): the harmonic density wave (fully
 * periodic, FLASH passes at 2e-3), the sech^2 layer (periodic in x, y; 2e-3) and the Ostriker cylinder (periodic
 * along z; 5e-3), plus a multi-mode density against its FFT solution. bench/RESULTS.md has the larger runs.
 */
import { describe, expect, it } from 'vitest';
import { runCylinder, runMultiMode, runSechLayer, runSineWave } from '../validation/periodicRun.js';

describe('FLASH periodic tests', () => {
  it('sine wave along x: below 2e-3 at 32 cells per wavelength, second-order convergence', async () => {
    // theta 0.25: at 0.5 the tree's error on the uniform background is comparable to the grid's at 32 cells
    const coarse = await runSineWave(16, 'axis', { theta: 0.25 });
    const fine = await runSineWave(32, 'axis', { theta: 0.25 });
    expect(fine.maxError).toBeLessThan(2e-3); // absolute: the lattice self term meets the zero mean
    expect(fine.l2Error).toBeLessThan(2e-3);
    const order = Math.log2(coarse.maxDiffError / fine.maxDiffError);
    expect(order).toBeGreaterThan(1.8);
    expect(order).toBeLessThan(2.3);
  });

  it('sine wave along the diagonal converges at second order too', async () => {
    const coarse = await runSineWave(8, 'diagonal');
    const fine = await runSineWave(16, 'diagonal');
    const order = Math.log2(coarse.maxDiffError / fine.maxDiffError);
    expect(order).toBeGreaterThan(1.7);
    expect(fine.maxDiffError).toBeLessThan(2e-2);
  });

  it('sech^2 layer periodic in x and y: absolute potential (sheet convention) within 2e-3', async () => {
    const r = await runSechLayer(32);
    expect(r.maxError).toBeLessThan(2e-3);
    expect(r.flashTolerance).toBe(2e-3);
  });

  it('Ostriker cylinder periodic along z: absolute potential (line convention) within 5e-3', async () => {
    const r = await runCylinder(32);
    expect(r.maxError).toBeLessThan(5e-3);
  });

  it('multi-mode density agrees with the FFT solution of the same grid', async () => {
    // the density is sampled at cell centres: with the lattice self term the error falls at fourth order
    const r = await runMultiMode(16, { theta: 0.25 });
    expect(r.maxDiffError).toBeLessThan(3e-2);
    const finer = await runMultiMode(32, { theta: 0.25 });
    expect(finer.maxDiffError).toBeLessThan(r.maxDiffError / 8);
  });
});
