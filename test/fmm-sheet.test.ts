/**
 * method 'fmm' in partly periodic boxes (issue #20): sheets (2 periodic axes) and lines (1), against physics:
 *  - an independent direct sum over the partly periodic Green's function (validation/ewaldReference.ts: Parry's
 *    sheet sum, the line's Fourier-Bessel series and image sum; no code shared with native/) at a few target cells;
 *  - the tree's solve of the same box at theta 0.2 (the same convention: masses as given, psi's plane average
 *    -2 pi |w| / A, its line average -(2/L) ln(rho / L)) at every cell, potential and accelerations, on cubic and
 *    non-cubic boxes, an AMR mesh and a grid small enough that its leaves lie above the far pass's cubes;
 *  - momentum, the box's symmetries, the same bits for any thread count, negative masses refused as by the tree.
 * The far kernel itself (2 and 1 periodic axes) is checked by native/tests/fmm_far_kernel.cpp, which
 * test/fmm-periodic.test.ts runs. G = 1 and no self term unless said.
 */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { InvalidInputError } from '../solver/errors.js';
import type { BoundaryChoice, SolverOptions } from '../solver/options.js';
import type { SolveResult } from '../solver/gravitySolver.js';
import { ewaldCorrection, nearestImage, periodicGreen, type PeriodicBox } from '../validation/ewaldReference.js';
import { boxGridCells } from '../validation/gridCells.js';
import { refinedBlob, rng, type Cells } from './helpers.js';

type Vec3 = [number, number, number];
const boxOf = (hi: Vec3) => ({ box: { lo: [0, 0, 0] as Vec3, hi } });
const sheetXY: BoundaryChoice = { x: 'periodic', y: 'periodic', z: 'isolated' };
const lineZ: BoundaryChoice = { x: 'isolated', y: 'isolated', z: 'periodic' };
/** |sum m a|, sum |m a|, max |phi| and max |a| of a solve with accelerations. */
function momentumAndScales(c: Cells, r: SolveResult) {
  const a = r.accelerations!;
  let px = 0, py = 0, pz = 0, total = 0, scale = 0, aScale = 0;
  for (let i = 0; i < c.x.length; i++) {
    px += c.mass[i] * a.x[i]; py += c.mass[i] * a.y[i]; pz += c.mass[i] * a.z[i];
    total += Math.abs(c.mass[i]) * Math.hypot(a.x[i], a.y[i], a.z[i]);
    scale = Math.max(scale, Math.abs(r.potential[i]));
    aScale = Math.max(aScale, Math.hypot(a.x[i], a.y[i], a.z[i]));
  }
  return { momentum: Math.hypot(px, py, pz), total, scale, aScale };
}

const base: SolverOptions = { G: 1, selfPotential: 'none', backend: 'cpu', method: 'fmm', accelerations: true };

/** nx x ny x nz cubic cells of side h = L[0] / n[0] over [0, L) with density rho at the centres. */
const grid = (n: Vec3, L: Vec3, rho: (x: number, y: number, z: number, i: number) => number): Cells => boxGridCells(n, L, rho);

/** Random densities in [0.5, 1.5) plus a Gaussian blob (3x the mean at its centre) off the box's centre. */
function blobbyGrid(n: Vec3, L: Vec3, seed: number): Cells {
  const random = rng(seed);
  return grid(n, L, (x, y, z) => 0.5 + random() + 2 * Math.exp(-((x - 0.5) ** 2 + (y - 0.4) ** 2 + (z - 0.6) ** 2) / 0.02));
}

/** max |a - b| / max |b| of the potential and of the acceleration vectors. */
function against(a: SolveResult, b: SolveResult) {
  let s = 0, d = 0, as = 0, ad = 0;
  const A = a.accelerations!, B = b.accelerations!;
  for (let i = 0; i < b.potential.length; i++) {
    s = Math.max(s, Math.abs(b.potential[i]));
    d = Math.max(d, Math.abs(a.potential[i] - b.potential[i]));
    as = Math.max(as, Math.hypot(B.x[i], B.y[i], B.z[i]));
    ad = Math.max(ad, Math.hypot(A.x[i] - B.x[i], A.y[i] - B.y[i], A.z[i] - B.z[i]));
  }
  return { phi: d / s, acc: ad / as };
}

/**
 * -sum_j m_j psi(r_i - r_j) at the cells `targets` by validation/ewaldReference.ts (the target's own pair: its
 * images, m C(0)), G = 1. Pairs on a line's axis (rho = 0, where the reference's line sum takes ln rho) are taken a
 * 1e-7 period off it: psi is even in rho, so that moves it by ~1e-14.
 */
function greenAtTargets(c: Cells, pb: PeriodicBox, targets: number[]): number[] {
  const per = [0, 1, 2].filter((d) => pb.periodic[d]);
  const off = 1e-7 * Math.min(...per.map((d) => pb.L[d]));
  return targets.map((i) => {
    let p = 0;
    for (let j = 0; j < c.x.length; j++) {
      const r: Vec3 = [c.x[i] - c.x[j], c.y[i] - c.y[j], c.z[i] - c.z[j]];
      if (i === j) {
        p += c.mass[j] * ewaldCorrection(pb, r);
        continue;
      }
      const d = nearestImage(pb, r);
      if (per.length === 1 && [0, 1, 2].every((a) => a === per[0] || d[a] === 0)) d[(per[0] + 1) % 3] = off;
      p += c.mass[j] * periodicGreen(pb, d);
    }
    return -p;
  });
}

async function againstGreen(c: Cells, L: Vec3, boundary: BoundaryChoice, periodic: [boolean, boolean, boolean], targets: number[]) {
  const ref = greenAtTargets(c, { L, periodic }, targets);
  const r = await new GravitySolver({ ...base, boundary }).solveCells(c, boxOf(L));
  let s = 0, d = 0;
  targets.forEach((i, k) => {
    s = Math.max(s, Math.abs(ref[k]));
    d = Math.max(d, Math.abs(r.potential[i] - ref[k]));
  });
  return { phi: d / s, result: r };
}

async function againstTree(c: Cells, L: Vec3, boundary: BoundaryChoice, opts: SolverOptions = {}) {
  const fmm = await new GravitySolver({ ...base, boundary, ...opts }).solveCells(c, boxOf(L));
  const tree = await new GravitySolver({ ...base, boundary, ...opts, method: 'tree', theta: 0.2 }).solveCells(c, boxOf(L));
  return { ...against(fmm, tree), fmm, tree };
}

describe('method fmm, a sheet (x, y periodic; z isolated)', () => {
  const cells = blobbyGrid([16, 16, 16], [1, 1, 1], 7);

  it('16^3: potential within 1e-5 of max |phi| of a direct sum over Parry\'s sheet Green\'s function', async () => {
    const N = cells.x.length;
    const e = await againstGreen(cells, [1, 1, 1], sheetXY, [true, true, false], [0, 1000, 2047, 3001, N - 1, N / 2 + 7]);
    expect(e.result.stats.method).toBe('fmm');
    expect(e.result.stats.densityContrast).toBe(false); // the masses as given, as the tree takes them in a sheet
    expect(e.phi).toBeLessThan(1e-5);
    expect(e.phi).toBeGreaterThan(1e-9); // the FMM approximates: the comparison can fail
  });

  it('a tall box 1 x 1 x 4 (8 x 8 x 32 cells: the far pass merges cubes far apart along z): within 1e-6 of the direct sum', async () => {
    const random = rng(19);
    const tall = grid([8, 8, 32], [1, 1, 4], (_x, _y, z) => 0.5 + random() + 3 * Math.exp(-((z - 1.3) ** 2) / 0.1));
    const N = tall.x.length;
    const e = await againstGreen(tall, [1, 1, 4], sheetXY, [true, true, false], [0, 700, N / 2 + 3, N - 1]);
    expect(e.phi).toBeLessThan(1e-6); // measured 2.6e-8: the far field's linear part dominates max |phi| here
  });

  it("16^3: the tree's sheet solve at theta 0.2 (G, lattice self term): potential within 1e-5, accelerations 1e-4", async () => {
    const e = await againstTree(cells, [1, 1, 1], sheetXY, { G: 6.674e-8, selfPotential: 'lattice' });
    expect(e.phi).toBeLessThan(1e-5);
    expect(e.acc).toBeLessThan(1e-4);
    // and the error falls with the tolerance (the comparison sees the method, not the reference's floor)
    const tight = await againstTree(cells, [1, 1, 1], sheetXY, { G: 6.674e-8, selfPotential: 'lattice', fmmTolerance: 0, fmmTheta: 0.3 });
    expect(tight.phi).toBeLessThan(e.phi / 4);
  });

  it('a box 1 x 0.75 x 1.5, its isolated side the longest (16 x 12 x 24 cells): the tree at theta 0.2 to 1e-5 and 1e-4', async () => {
    const e = await againstTree(blobbyGrid([16, 12, 24], [1, 0.75, 1.5], 3), [1, 0.75, 1.5], sheetXY);
    expect(e.phi).toBeLessThan(1e-5);
    expect(e.acc).toBeLessThan(1e-4);
  });

  it('an AMR mesh (a refined blob: two cell sizes, 51x peak) and an 8^3 grid (leaves above the far pass\'s cubes, x, z periodic): the tree at theta 0.2 to 1e-5 and 2e-4', async () => {
    const blob = await againstTree(refinedBlob((x, y, z) => 1 + 50 * Math.exp(-((x - 0.5) ** 2 + (y - 0.48) ** 2 + (z - 0.52) ** 2) / 0.004)), [1, 1, 1], sheetXY);
    expect(blob.phi).toBeLessThan(1e-5);
    expect(blob.acc).toBeLessThan(2e-4);
    const random = rng(21);
    const small = await againstTree(grid([8, 8, 8], [1, 1, 1], () => 0.5 + random()), [1, 1, 1], { x: 'periodic', y: 'isolated', z: 'periodic' });
    expect(small.phi).toBeLessThan(1e-5);
    expect(small.acc).toBeLessThan(2e-4);
  });

  it('conserves momentum to rounding and keeps the sheet\'s symmetries (z -> 1 - z and x <-> y to the truncation error)', async () => {
    // a density symmetric under both maps: random values averaged over the four images of each cell
    const n = 16, random = rng(5), v = Array.from({ length: n ** 3 }, () => random());
    const at = (q: number, j: number, k: number) => v[q + n * (j + n * k)];
    const c = grid([n, n, n], [1, 1, 1], (_x, _y, _z, i) => {
      const q = i % n, j = Math.floor(i / n) % n, k = Math.floor(i / (n * n));
      return 0.5 + (at(q, j, k) + at(j, q, k) + at(q, j, n - 1 - k) + at(j, q, n - 1 - k)) / 4;
    });
    const r = await new GravitySolver({ ...base, boundary: sheetXY }).solveCells(c, boxOf([1, 1, 1]));
    const a = r.accelerations!;
    const { momentum, total, scale, aScale } = momentumAndScales(c, r);
    expect(momentum).toBeLessThan(1e-10 * total);
    let dz = 0, dxy = 0, adz = 0, adxy = 0;
    for (let i = 0; i < c.x.length; i++) {
      const q = i % n, j = Math.floor(i / n) % n, k = Math.floor(i / (n * n));
      const m = q + n * (j + n * (n - 1 - k)), s = j + n * (q + n * k);
      dz = Math.max(dz, Math.abs(r.potential[i] - r.potential[m]));
      adz = Math.max(adz, Math.abs(a.x[i] - a.x[m]), Math.abs(a.z[i] + a.z[m]));
      dxy = Math.max(dxy, Math.abs(r.potential[i] - r.potential[s]));
      adxy = Math.max(adxy, Math.abs(a.x[i] - a.y[s]), Math.abs(a.z[i] - a.z[s]));
    }
    // Both agree to the truncation error, not to rounding: x <-> y turns the shift (-1, 1, 0) into (1, -1, 0), its
    // opposite, and the walk starts from the root's images of one half space (measured 3.7e-7 and 3.9e-6); z -> 1 - z
    // keeps every shift, but the walk opens a pair of equal radii by their centres' order (physics/fmm_mac_k.h
    // fmmOpensFirst: what lets a distributed FMM form the one-process pairs), which a mirror reverses (measured
    // 4.8e-7; 4e-15 with the order of the walk's hold instead)
    expect(dz / scale).toBeLessThan(2e-6);
    expect(adz / aScale).toBeLessThan(2e-5);
    expect(dxy / scale).toBeLessThan(2e-6);
    expect(adxy / aScale).toBeLessThan(2e-5);
  });

  it('gives the same bits for any thread count', async () => {
    const runs = await Promise.all([1, 2, 3].map((threads) => new GravitySolver({ ...base, boundary: sheetXY, threads }).solveCells(cells, boxOf([1, 1, 1]))));
    for (const r of runs.slice(1)) {
      expect(Buffer.from(r.potential.buffer).equals(Buffer.from(runs[0].potential.buffer))).toBe(true);
      expect(Buffer.from(r.accelerations!.z.buffer).equals(Buffer.from(runs[0].accelerations!.z.buffer))).toBe(true);
    }
  });

  it('refuses negative masses with a typed error, as the tree does (no density contrast is defined in a sheet)', async () => {
    const signed = { ...cells, mass: cells.mass.map((m, i) => (i === 5 ? -m : m)) };
    for (const method of ['fmm', 'tree'] as const)
      await expect(new GravitySolver({ ...base, boundary: sheetXY, method }).solveCells(signed, boxOf([1, 1, 1]))).rejects.toThrow(InvalidInputError);
  });
});

describe('method fmm, a line (z periodic; x, y isolated)', () => {
  it('16^3: potential within 1e-5 of max |phi| of a direct sum over the line\'s Green\'s function', async () => {
    const c = blobbyGrid([16, 16, 16], [1, 1, 1], 11);
    const N = c.x.length;
    const e = await againstGreen(c, [1, 1, 1], lineZ, [false, false, true], [0, 1000, N / 2 + 8, N - 1]);
    expect(e.phi).toBeLessThan(1e-5);
    expect(e.phi).toBeGreaterThan(1e-9);
  });

  it("16^3 and a box 1.5 x 1 x 0.75 periodic in x (24 x 16 x 12 cells): the tree's line solve at theta 0.2 to 1e-5 and 2e-4", async () => {
    const cube = await againstTree(blobbyGrid([16, 16, 16], [1, 1, 1], 13), [1, 1, 1], lineZ);
    expect(cube.phi).toBeLessThan(1e-5);
    expect(cube.acc).toBeLessThan(2e-4);
    const box = await againstTree(blobbyGrid([24, 16, 12], [1.5, 1, 0.75], 17), [1.5, 1, 0.75], { x: 'periodic', y: 'isolated', z: 'isolated' });
    expect(box.phi).toBeLessThan(1e-5);
    expect(box.acc).toBeLessThan(2e-4);
  });

  it('conserves momentum to rounding and keeps the line\'s quarter-turn symmetry about its axis (to the truncation error)', async () => {
    // (x, y) -> (1 - y, x) about the axis through the box's centre: random values averaged over the four turns
    const n = 16, random = rng(9), v = Array.from({ length: n ** 3 }, () => random());
    const at = (q: number, j: number, k: number) => v[q + n * (j + n * k)];
    const c = grid([n, n, n], [1, 1, 1], (_x, _y, _z, i) => {
      const q = i % n, j = Math.floor(i / n) % n, k = Math.floor(i / (n * n));
      return 0.5 + (at(q, j, k) + at(n - 1 - j, q, k) + at(n - 1 - q, n - 1 - j, k) + at(j, n - 1 - q, k)) / 4;
    });
    const r = await new GravitySolver({ ...base, boundary: lineZ }).solveCells(c, boxOf([1, 1, 1]));
    const a = r.accelerations!;
    const { momentum, total, scale, aScale } = momentumAndScales(c, r);
    expect(momentum).toBeLessThan(1e-10 * total);
    let d = 0, ad = 0;
    for (let i = 0; i < c.x.length; i++) {
      const q = i % n, j = Math.floor(i / n) % n, k = Math.floor(i / (n * n));
      const t = n - 1 - j + n * (q + n * k); // the cell (q, j) turns into: (n - 1 - j, q)
      d = Math.max(d, Math.abs(r.potential[i] - r.potential[t]));
      // a turns with the cell: (ax, ay) -> (-ay, ax)
      ad = Math.max(ad, Math.abs(-a.y[i] - a.x[t]), Math.abs(a.x[i] - a.y[t]), Math.abs(a.z[i] - a.z[t]));
    }
    // the turn keeps the shifts (along z), but the walk opens a pair of equal radii by their centres' order
    // (fmmOpensFirst), which the turn changes: the truncation error (measured 5.7e-7; 1.5e-15 before that rule)
    expect(d / scale).toBeLessThan(2e-6);
    expect(ad / aScale).toBeLessThan(2e-5);
  });
});
