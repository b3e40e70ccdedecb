/**
 * A self-gravitating hydro code around amrgrav (validation/hydro/jeans.cpp, linked through the C API): the Jeans
 * instability in a periodic box. Above the Jeans length a density wave grows at sigma = sqrt(4 pi G rho0 -
 * cs^2 k^2); below it oscillates at omega = sqrt(cs^2 k^2 - 4 pi G rho0). The rates measured from the run must
 * match within a few percent (here 32 cells per wavelength).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const libDir = join(root, 'build', 'Release');
let exe = '';

interface JeansRun {
  unstable: boolean;
  theory: number;
  measured: number;
  relError: number;
  amplitudeRatio: number;
  massDrift: number;
  gravityFraction: number;
}

const run = (...args: string[]): JeansRun => JSON.parse(execFileSync(exe, args, { encoding: 'utf8', timeout: 120_000 }).trim());

describe('Jeans instability with the gravity module in a hydro loop (C API)', () => {
  beforeAll(() => {
    exe = join(mkdtempSync(join(tmpdir(), 'amrgrav-jeans-')), 'jeans');
    execFileSync('c++', [
      '-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror',
      `-I${join(root, 'native', 'include')}`,
      join(root, 'validation', 'hydro', 'jeans.cpp'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`,
      '-o', exe,
    ]);
  });

  it('a wavelength above the Jeans length grows at the analytic rate', () => {
    const r = run('--nx', '32'); // cs k = 1/2 of sqrt(4 pi G rho0): sigma = 0.866
    expect(r.unstable).toBe(true);
    expect(r.amplitudeRatio).toBeGreaterThan(15); // grown by cosh(sigma t) = 20
    expect(r.relError).toBeLessThan(0.02);
    expect(r.massDrift).toBeLessThan(1e-12); // the finite-volume update conserves mass
  });

  it('a wavelength below the Jeans length oscillates at the analytic frequency', () => {
    const r = run('--nx', '32', '--cs', String(2 / (2 * Math.PI))); // cs k = 2: omega = sqrt(3)
    expect(r.unstable).toBe(false);
    expect(Math.abs(r.amplitudeRatio)).toBeLessThan(0.05); // a quarter period: near the zero of cos(omega t)
    expect(r.relError).toBeLessThan(0.01);
  });
});
