/**
 * method 'fmm' in fully periodic boxes (issues #20, #21) against physics: an independent float64 Ewald sum of the
 * same cells (validation/ewaldAtTargets.ts) on a uniform grid of random densities, a refined blob and a rectangular
 * box; the tree's periodic solve at a small opening angle; the background's irrelevance, the potential's zero mean,
 * momentum, a sine perturbation's analytic potential for any amplitude; the far-image kernel against ewald/sums.h
 * (native/tests/fmm_far_kernel.cpp); determinism. Partly periodic boxes (sheets, lines): test/fmm-sheet.test.ts.
 *
 * Sources are the density contrast (each cell's mass minus the mean density times its volume), so the references
 * are taken of the contrast masses; G = 1 and no self term unless said.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import type { SolverOptions } from '../solver/options.js';
import { ewaldAtTargets } from '../validation/ewaldAtTargets.js';
import { boxGridCells } from '../validation/gridCells.js';
import { changeOfSolve, refinedBlob, type Cells } from './helpers.js';
import { rng } from './helpers.js';

type Vec3 = [number, number, number];
const boxOf = (hi: Vec3) => ({ box: { lo: [0, 0, 0] as Vec3, hi } });
const unitBox = boxOf([1, 1, 1]);
const base: SolverOptions = { G: 1, selfPotential: 'none', backend: 'cpu', method: 'fmm', boundary: 'periodic' };

/** nx x ny x nz cells of the box [0, L) with density rho(x, y, z) at the centres. */
const grid = (n: Vec3, L: Vec3, rho: (x: number, y: number, z: number) => number): Cells => boxGridCells(n, L, rho);

const blobDensity = (x: number, y: number, z: number) =>
  1 + 50 * Math.exp(-((x - 0.5) ** 2 + (y - 0.48) ** 2 + (z - 0.52) ** 2) / 0.004);

/** The contrast masses the solver uses: m - (M / V) h^3. */
function contrast(c: Cells, V: number): Float64Array {
  let total = 0;
  for (let i = 0; i < c.mass.length; i++) total += c.mass[i];
  return c.mass.map((m, i) => m - (total / V) * c.size[i] ** 3);
}

/** Max |phi - ref| / max |ref| and max |a - ref| / max |ref a| at `count` targets spread over the cells. */
async function againstEwald(c: Cells, L: Vec3, opts: SolverOptions = {}, count = 40) {
  const targets: number[] = [];
  for (let i = 0; i < count; i++) targets.push(Math.floor(((i + 0.5) * c.x.length) / count));
  const ref = ewaldAtTargets(L, { x: c.x, y: c.y, z: c.z, mass: contrast(c, L[0] * L[1] * L[2]) }, targets, 1);
  const r = await new GravitySolver({ ...base, accelerations: true, ...opts }).solveCells(c, boxOf(L));
  let scale = 0, err = 0, aScale = 0, aErr = 0;
  targets.forEach((i, k) => {
    scale = Math.max(scale, Math.abs(ref.potential[k]));
    err = Math.max(err, Math.abs(r.potential[i] - ref.potential[k]));
    const a = r.accelerations!;
    aScale = Math.max(aScale, Math.hypot(ref.ax[k], ref.ay[k], ref.az[k]));
    aErr = Math.max(aErr, Math.hypot(a.x[i] - ref.ax[k], a.y[i] - ref.ay[k], a.z[i] - ref.az[k]));
  });
  return { phi: err / scale, acc: aErr / aScale, result: r };
}

describe('method fmm, fully periodic: against an independent Ewald sum of the same cells', () => {
  it('uniform 16^3 of random densities: potential within 2e-5 of max |phi|, accelerations within 1e-4', async () => {
    const random = rng(7);
    const c = grid([16, 16, 16], [1, 1, 1], () => 0.5 + random());
    const e = await againstEwald(c, [1, 1, 1]);
    expect(e.result.stats.method).toBe('fmm');
    expect(e.result.stats.densityContrast).toBe(true);
    expect(e.phi).toBeLessThan(2e-5);
    expect(e.acc).toBeLessThan(1e-4);
    expect(e.phi).toBeGreaterThan(1e-9); // the FMM approximates: the comparison can fail
    // and the error falls with the tolerance (the comparison sees the method, not the reference's floor)
    const tight = await againstEwald(c, [1, 1, 1], { fmmTolerance: 0, fmmTheta: 0.3 });
    expect(tight.phi).toBeLessThan(e.phi / 4);
  });

  it('a refined blob (two cell sizes, 51x density contrast): potential within 2e-5, accelerations within 2e-5', async () => {
    const e = await againstEwald(refinedBlob(blobDensity), [1, 1, 1]);
    expect(e.phi).toBeLessThan(2e-5);
    expect(e.acc).toBeLessThan(2e-5);
  });

  it('a rectangular box 1 x 0.5 x 0.75 (16 x 8 x 12 cells): potential within 2e-5', async () => {
    const random = rng(3);
    const c = grid([16, 8, 12], [1, 0.5, 0.75], (x, y, z) => 1 + 0.5 * Math.sin(2 * Math.PI * x) * Math.cos(4 * Math.PI * y) + 0.2 * random() + z);
    const e = await againstEwald(c, [1, 0.5, 0.75]);
    expect(e.phi).toBeLessThan(2e-5);
  });
});

describe('method fmm, fully periodic: physics', () => {
  const random = rng(11);
  const cells = grid([16, 16, 16], [1, 1, 1], (x, y, z) => 1 + 0.3 * Math.sin(2 * Math.PI * (x + 2 * y)) + 0.2 * random() + 3 * z * z);

  it("agrees with the tree's periodic solve at theta 0.2 (same contrast, self term, G) to 2e-5 of max |phi|", async () => {
    const opts: SolverOptions = { G: 6.674e-8, backend: 'cpu', boundary: 'periodic', accelerations: true };
    const fmm = await new GravitySolver({ ...opts, method: 'fmm' }).solveCells(cells, unitBox);
    const tree = await new GravitySolver({ ...opts, theta: 0.2 }).solveCells(cells, unitBox);
    let scale = 0, diff = 0;
    for (let i = 0; i < cells.x.length; i++) {
      scale = Math.max(scale, Math.abs(tree.potential[i]));
      diff = Math.max(diff, Math.abs(fmm.potential[i] - tree.potential[i]));
    }
    expect(diff / scale).toBeLessThan(2e-5);
    expect(fmm.stats.meanDensity).toBeCloseTo(tree.stats.meanDensity, 12);
  });

  it('a uniform background 1e4 times the mean changes the potential by rounding only', async () => {
    let mean = 0;
    for (let i = 0; i < cells.x.length; i++) mean += cells.mass[i];
    const heavy = { ...cells, mass: cells.mass.map((m, i) => m + 1e4 * mean * cells.size[i] ** 3) };
    const a = await new GravitySolver({ ...base, accelerations: true }).solveCells(cells, unitBox);
    const b = await new GravitySolver({ ...base, accelerations: true }).solveCells(heavy, unitBox);
    const change = changeOfSolve(a, b);
    expect(change.potential).toBeLessThan(1e-9);
    expect(change.accelerationX).toBeLessThan(1e-9);
  });

  it('conserves momentum to rounding: |sum m a| <= 1e-10 sum |m a| (contrast masses)', async () => {
    const r = await new GravitySolver({ ...base, accelerations: true }).solveCells(cells, unitBox);
    const dm = contrast(cells, 1);
    const a = r.accelerations!;
    let px = 0, py = 0, pz = 0, total = 0;
    for (let i = 0; i < dm.length; i++) {
      px += dm[i] * a.x[i]; py += dm[i] * a.y[i]; pz += dm[i] * a.z[i];
      total += Math.abs(dm[i]) * Math.hypot(a.x[i], a.y[i], a.z[i]);
    }
    expect(Math.hypot(px, py, pz)).toBeLessThan(1e-10 * total);
  });

  it('gives the same bits for any thread count', async () => {
    const runs = await Promise.all([1, 2, 3].map((threads) => new GravitySolver({ ...base, threads, accelerations: true }).solveCells(cells, unitBox)));
    for (const r of runs.slice(1)) {
      expect(Buffer.from(r.potential.buffer).equals(Buffer.from(runs[0].potential.buffer))).toBe(true);
      expect(Buffer.from(r.accelerations!.x.buffer).equals(Buffer.from(runs[0].accelerations!.x.buffer))).toBe(true);
    }
  });

  it('accepts signed masses (the contrast passed by the caller) and gives the same potential', async () => {
    const dm = contrast(cells, 1);
    const a = await new GravitySolver(base).solveCells(cells, unitBox);
    const b = await new GravitySolver(base).solveCells({ ...cells, mass: dm }, unitBox);
    let scale = 0, diff = 0;
    for (let i = 0; i < dm.length; i++) {
      scale = Math.max(scale, Math.abs(a.potential[i]));
      diff = Math.max(diff, Math.abs(a.potential[i] - b.potential[i]));
    }
    expect(diff / scale).toBeLessThan(1e-9);
  });
});

describe('method fmm, fully periodic: a sine perturbation on a uniform background', () => {
  const G = 6.674e-8;
  /** rho0 (1 + A sin(k.x)) on n^3: error relative to the analytic -4 pi G A sin(k.x) / k^2, and the mean. */
  async function sine(n: number, A: number, diagonal: boolean) {
    const k = diagonal ? [2 * Math.PI, 2 * Math.PI, 2 * Math.PI] : [2 * Math.PI, 0, 0];
    const k2 = k[0] ** 2 + k[1] ** 2 + k[2] ** 2;
    const c = grid([n, n, n], [1, 1, 1], (x, y, z) => 1 + A * Math.sin(k[0] * x + k[1] * y + k[2] * z));
    const r = await new GravitySolver({ boundary: 'periodic', backend: 'cpu', method: 'fmm', G }).solveCells(c, unitBox);
    const amp = (4 * Math.PI * G * A) / k2;
    let err = 0;
    for (let i = 0; i < c.x.length; i++)
      err = Math.max(err, Math.abs(r.potential[i] + amp * Math.sin(k[0] * c.x[i] + k[1] * c.y[i] + k[2] * c.z[i])));
    return { error: err / amp, mean: r.stats.meanPotential / amp };
  }

  for (const diagonal of [false, true])
    it(`along ${diagonal ? 'the diagonal' : 'x'} (32^3): the same relative error for A = 1e-8 .. 1, below 3e-3, mean 0`, async () => {
      const runs = [await sine(32, 1e-8, diagonal), await sine(32, 1e-4, diagonal), await sine(32, 1, diagonal)];
      for (const r of runs) {
        expect(r.error).toBeLessThan(3e-3);
        expect(Math.abs(r.mean)).toBeLessThan(1e-6);
      }
      const e = runs.map((r) => r.error);
      expect(Math.max(...e) / Math.min(...e)).toBeLessThan(2);
    });
});

describe('method fmm, fully periodic: the far-image kernel', () => {
  it('native/tests/fmm_far_kernel.cpp: the kernel against ewald/sums.h and Poisson\'s equation', () => {
    const root = join(dirname(fileURLToPath(import.meta.url)), '..');
    const candidates = [join(root, 'build', 'amrgrav_fmm_far_kernel'), join(root, 'build', 'Release', 'amrgrav_fmm_far_kernel')];
    const exe = candidates.find((p) => existsSync(p));
    expect(exe, `amrgrav_fmm_far_kernel is not built (looked for ${candidates.join(', ')}): 'npm run build:native' builds it`).toBeDefined();
    const r = spawnSync(exe as string, [], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stdout).toMatch(/checks, 0 failed/);
    expect(r.stdout).toMatch(/PASS cube, r = \(0\.3, -0\.1, 0\.45\): orders 0-3 vs ewaldCorrectionExact/);
    expect(r.status).toBe(0);
  });
});
