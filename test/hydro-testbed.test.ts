/**
 * The hydro test bed around amrgrav (validation/hydro/*.cpp, linked through the C API as a C++ hydro code would):
 * - the Jeans instability in a periodic box: above the Jeans length a density wave grows at sigma =
 *   sqrt(4 pi G rho0 - cs^2 k^2), below it oscillates at omega = sqrt(cs^2 k^2 - 4 pi G rho0);
 * - the cold collapse of a uniform sphere (isolated): the centre reaches 8 rho0 (r = r0/2) at 0.818 t_ff,
 *   t_ff = sqrt(3 pi / (32 G rho0)), with K + W conserved to the scheme's accuracy.
 * The rates and times measured from the runs must match within a few percent at 32 cells.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { scaledTimeout } from './helpers.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const libDir = join(root, 'build', 'Release');
let exe = '';
let collapseExe = '';

interface JeansRun {
  unstable: boolean;
  theory: number;
  measured: number;
  relError: number;
  amplitudeRatio: number;
  massDrift: number;
  gravityFraction: number;
}

/** Runs a test-bed program (under mpirun with `ranks` > 0) and parses the JSON object it prints. */
function runJson(program: string, args: string[], ranks = 0) {
  const [cmd, argv] = ranks > 0
    ? ['mpirun', ['--allow-run-as-root', '--oversubscribe', '-np', String(ranks), program, ...args]]
    : [program, args];
  return JSON.parse(execFileSync(cmd as string, argv as string[], { encoding: 'utf8', timeout: scaledTimeout(240_000) }).trim());
}
const run = (...args: string[]): JeansRun => runJson(exe, args);

/** Compiles validation/hydro/NAME.cpp against libamrgrav (with MPI through mpicxx); returns the executable. */
function build(name: string, mpi = false): string {
  const out = join(mkdtempSync(join(tmpdir(), `amrgrav-${name}-`)), name);
  execFileSync(mpi ? 'mpicxx' : 'c++', [
    '-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror',
    ...(mpi ? ['-DAMRGRAV_TESTBED_MPI', '-DOMPI_SKIP_MPICXX=1'] : []),
    `-I${join(root, 'native', 'include')}`,
    join(root, 'validation', 'hydro', `${name}.cpp`),
    `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`,
    '-o', out,
  ]);
  return out;
}

describe('Jeans instability with the gravity module in a hydro loop (C API)', () => {
  beforeAll(() => {
    exe = build('jeans');
  });

  it('a wavelength above the Jeans length grows at the analytic rate', () => {
    const r = run('--nx', '32'); // cs k = 1/2 of sqrt(4 pi G rho0): sigma = 0.866
    expect(r.unstable).toBe(true);
    expect(r.amplitudeRatio).toBeGreaterThan(15); // grown by cosh(sigma t) = 20
    expect(r.relError).toBeLessThan(0.02);
    expect(r.massDrift).toBeLessThan(1e-12); // the finite-volume update conserves mass
  });

  it('gives the same growth rate with gravity distributed over 2 MPI ranks (periodic LET exchange)', () => {
    const one = run('--nx', '32');
    const mpiExe = build('jeans', true);
    const two = runJson(mpiExe, ['--nx', '32'], 2);
    expect(two.ranks).toBe(2);
    expect(Math.abs(two.measured - one.measured) / one.measured).toBeLessThan(1e-3);
    expect(two.relError).toBeLessThan(0.02);
  });

  it('a wavelength below the Jeans length oscillates at the analytic frequency', () => {
    const r = run('--nx', '32', '--cs', String(2 / (2 * Math.PI))); // cs k = 2: omega = sqrt(3)
    expect(r.unstable).toBe(false);
    expect(Math.abs(r.amplitudeRatio)).toBeLessThan(0.05); // a quarter period: near the zero of cos(omega t)
    expect(r.relError).toBeLessThan(0.01);
  });
});

describe('cold collapse of a uniform sphere with the gravity module in a hydro loop (C API)', () => {
  beforeAll(() => {
    collapseExe = build('collapse');
  });

  it('reaches eight times its density (half its radius) at the free-fall time of the analytic solution', () => {
    const r = runJson(collapseExe, ['--nx', '32']);
    expect(r.tMeasured).toBeGreaterThan(0);
    expect(r.relError).toBeLessThan(0.03); // 0.818 t_ff, t_ff = sqrt(3 pi / (32 G rho0))
    expect(r.maxEnergyDrift).toBeLessThan(0.05); // K + W, relative to |W| at the start
    expect(r.gravityFraction).toBeGreaterThan(0);
  });

  it('gives the same collapse with gravity distributed over 3 MPI ranks (each rank passes its slab)', () => {
    const one = runJson(collapseExe, ['--nx', '24']);
    const mpiExe = build('collapse', true);
    const three = runJson(mpiExe, ['--nx', '24'], 3);
    expect(three.ranks).toBe(3);
    expect(three.steps).toBe(one.steps);
    expect(Math.abs(three.tMeasured - one.tMeasured) / one.tMeasured).toBeLessThan(1e-3);
    expect(Math.abs(three.W0 - one.W0) / Math.abs(one.W0)).toBeLessThan(1e-4);
  });
});
