/** The Ewald table against the independent TypeScript sums, its symmetries, its physics, and its disk cache. */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ewaldTable } from '../solver/ewaldTable.js';
import { InvalidOptionError } from '../solver/errors.js';
import { ewaldCorrection, lineImageSum, periodicGreen, sheetImageSum, type PeriodicBox } from '../validation/ewaldReference.js';
import { GravitySolver } from '../solver/gravitySolver.js';
import { randomCells, rng } from './helpers.js';

const boxes: PeriodicBox[] = [
  { L: [1, 1, 1], periodic: [true, true, true] },
  { L: [1, 0.6, 1.7], periodic: [true, true, true] },
  { L: [1, 1, 1], periodic: [true, true, false] },
  { L: [0.8, 1.3, 1], periodic: [false, true, true] },
  { L: [1, 1, 1], periodic: [false, false, true] },
  { L: [1.5, 0.7, 1], periodic: [true, false, false] },
];

/** Random separations in the table's domain: half a period on periodic axes, the full side on isolated ones. */
function separations(box: PeriodicBox, n: number, seed: number): Float64Array {
  const r = rng(seed);
  const p = new Float64Array(3 * n);
  for (let i = 0; i < n; i++) for (let d = 0; d < 3; d++) p[3 * i + d] = (r() - 0.5) * box.L[d] * (box.periodic[d] ? 1 : 2);
  return p;
}

describe.each(boxes)('Ewald table of %j', (box) => {
  const at = separations(box, 24, 11);
  const t = ewaldTable({ L: box.L, periodic: box.periodic, at, exact: true });
  const scale = 1 / Math.max(...box.L); // C ~ 1/L: errors are relative to the potential of a unit mass at L

  it('exact sums agree with the independent TypeScript sums to 1e-10, the table to 1e-6', () => {
    for (let i = 0; i < 24; i++) {
      const ref = ewaldCorrection(box, [at[3 * i], at[3 * i + 1], at[3 * i + 2]]);
      expect(Math.abs(t.exact![20 * i] - ref)).toBeLessThan(1e-10 * scale);
      expect(Math.abs(t.lookup![4 * i] - ref)).toBeLessThan(1e-6 * scale);
    }
  });

  it('C(0), the images of a mass acting on itself, matches the independent sums', () => {
    const c0 = ewaldTable({ L: box.L, periodic: box.periodic, at: new Float64Array(3) }).lookup![0];
    expect(Math.abs(c0 - ewaldCorrection(box, [0, 0, 0]))).toBeLessThan(1e-8 * scale);
  });

  it('is even in every coordinate and periodic along the periodic axes', () => {
    const flips: number[] = [];
    for (let i = 0; i < 8; i++) for (const s of [[-1, 1, 1], [1, -1, 1], [1, 1, -1]]) flips.push(...s.map((v, d) => v * at[3 * i + d]));
    const f = ewaldTable({ L: box.L, periodic: box.periodic, at: new Float64Array(flips) }).lookup!;
    for (let i = 0; i < 8; i++)
      for (let k = 0; k < 3; k++) {
        expect(f[4 * (3 * i + k)]).toBeCloseTo(t.lookup![4 * i], 12);
        expect(f[4 * (3 * i + k) + 1 + k]).toBeCloseTo(-t.lookup![4 * i + 1 + k], 10); // the gradient is odd
      }
    const shifted = Float64Array.from(at.slice(0, 24), (v, j) => v + (box.periodic[j % 3] ? box.L[j % 3] : 0));
    const g = ewaldTable({ L: box.L, periodic: box.periodic, at: shifted }).lookup!;
    for (let i = 0; i < 8; i++) expect(g[4 * i]).toBeCloseTo(t.lookup![4 * i], 12);
  });

  it('lap C is 4 pi / V with the mean density removed (3 axes) and 0 otherwise', () => {
    const nper = box.periodic.filter((p) => p).length;
    const lap = nper === 3 ? (4 * Math.PI) / (box.L[0] * box.L[1] * box.L[2]) : 0;
    for (let i = 0; i < 24; i++) {
      const e = t.exact!.subarray(20 * i, 20 * i + 20);
      expect(Math.abs(e[4] + e[7] + e[9] - lap)).toBeLessThan(1e-8 * scale ** 3);
    }
  });

  it('its gradient is the derivative of the independent C (accelerations)', () => {
    const eps = 1e-5;
    for (let i = 0; i < 6; i++) {
      const p: [number, number, number] = [at[3 * i], at[3 * i + 1], at[3 * i + 2]];
      for (let d = 0; d < 3; d++) {
        const hi = [...p] as [number, number, number];
        const lo = [...p] as [number, number, number];
        hi[d] += eps;
        lo[d] -= eps;
        const fd = (ewaldCorrection(box, hi) - ewaldCorrection(box, lo)) / (2 * eps);
        expect(Math.abs(t.lookup![4 * i + 1 + d] - fd)).toBeLessThan(3e-4 * scale * scale);
      }
    }
  });
});

describe('brute-force image sums (no splitting) against the Ewald-type sums and the table', () => {
  it('sheet: Parry\'s sum, the plane-average convention and the table agree with the plain image sum', () => {
    const box: PeriodicBox = { L: [1, 0.7, 1], periodic: [true, true, false] };
    const pts: [number, number, number][] = [[0.1, 0.2, 0.3], [0.4, -0.3, 0.05], [0.2, 0.1, 0.9]];
    const t = ewaldTable({ L: box.L, periodic: box.periodic, at: new Float64Array(pts.flat()) });
    pts.forEach((r, i) => {
      const brute = sheetImageSum(box, r);
      expect(Math.abs(periodicGreen(box, r) - brute)).toBeLessThan(5e-8); // the extrapolated image sum's own error
      expect(Math.abs(t.lookup![4 * i] + 1 / Math.hypot(...r) - brute)).toBeLessThan(1e-6);
    });
  });

  it('line: the K0 series, the line-average convention and the table agree with the plain image sum', () => {
    const box: PeriodicBox = { L: [1, 1, 0.8], periodic: [false, false, true] };
    const pts: [number, number, number][] = [[0.2, 0.25, 0.1], [0.5, -0.1, 0.35], [0.9, 0.6, -0.2]];
    const t = ewaldTable({ L: box.L, periodic: box.periodic, at: new Float64Array(pts.flat()) });
    pts.forEach((r, i) => {
      const brute = lineImageSum(box, r);
      expect(Math.abs(periodicGreen(box, r) - brute)).toBeLessThan(1e-9);
      expect(Math.abs(t.lookup![4 * i] + 1 / Math.hypot(...r) - brute)).toBeLessThan(1e-6);
    });
  });
});

describe('the fully periodic table build (one grid at once, separable reciprocal sum)', () => {
  // the fast build must give the point-by-point exact sums' coefficients (all 20: C to third derivatives) at every
  // grid point, out to the table's reach, to rounding; a wrong splitting, a lost image or a lost k-vector shows here
  it.each([
    { L: [1, 1, 1], resolution: 28 },
    { L: [1, 0.6, 1.7], resolution: 12 },
    { L: [0.5, 1, 1], resolution: 10 },
  ] as { L: [number, number, number]; resolution: number }[])('equals the exact sums at every grid point: %j', ({ L, resolution }) => {
    const t = ewaldTable({ L, periodic: [true, true, true], resolution, memoryCache: false, gridCheck: 4000 });
    for (let e = 0; e < 20; e++) expect(t.gridMaxDiff![e]).toBeLessThan(1e-11 * Math.max(1, t.gridMaxAbs![e]));
  });
});

describe('Ewald table cache', () => {
  const dir = mkdtempSync(join(tmpdir(), 'amrgrav-ewald-'));
  const saved = process.env.AMRGRAV_CACHE_DIR;
  afterAll(() => {
    if (saved === undefined) delete process.env.AMRGRAV_CACHE_DIR;
    else process.env.AMRGRAV_CACHE_DIR = saved;
    rmSync(dir, { recursive: true, force: true });
  });
  const request = { L: [1, 0.5, 0.75] as [number, number, number], periodic: [true, true, true] as [boolean, boolean, boolean],
    resolution: 8, memoryCache: false, at: new Float64Array([0.1, 0.2, 0.3]) };

  it('is built when missing, read back when present, and rebuilt when corrupt or truncated', () => {
    process.env.AMRGRAV_CACHE_DIR = dir;
    const built = ewaldTable(request);
    expect(built.source).toBe('built');
    expect(built.cachePath.startsWith(dir)).toBe(true);
    expect(readdirSync(dir)).toHaveLength(1);
    const read = ewaldTable(request);
    expect(read.source).toBe('disk');
    expect(read.lookup![0]).toBe(built.lookup![0]);

    const bytes = readFileSync(built.cachePath);
    bytes[bytes.length - 100] ^= 0x40; // one flipped bit in the coefficients: the checksum catches it
    writeFileSync(built.cachePath, bytes);
    const rebuilt = ewaldTable(request);
    expect(rebuilt.source).toBe('built');
    expect(rebuilt.cacheNote).toMatch(/corrupt/);
    expect(rebuilt.lookup![0]).toBe(built.lookup![0]);

    writeFileSync(built.cachePath, readFileSync(built.cachePath).subarray(0, 1000)); // truncated
    expect(ewaldTable(request).source).toBe('built');
    expect(ewaldTable(request).source).toBe('disk');
  });

  it('an unusable cache directory costs a rebuild, never a failure', () => {
    const file = join(dir, 'not-a-directory');
    writeFileSync(file, 'x');
    process.env.AMRGRAV_CACHE_DIR = join(file, 'sub');
    const t = ewaldTable(request);
    expect(t.source).toBe('built');
    expect(t.cacheNote).toMatch(/cannot/);
    expect(Number.isFinite(t.lookup![0])).toBe(true);
  });

  it('a solve that builds the table and cannot cache it says so in its stats, once (issue #19)', async () => {
    const file = join(dir, 'not-a-directory-either');
    writeFileSync(file, 'x');
    process.env.AMRGRAV_CACHE_DIR = join(file, 'sub');
    const cells = randomCells(200, 19, 1e-3);
    for (const k of ['y', 'z'] as const) for (let i = 0; i < 200; i++) cells[k][i] *= 0.55; // a box shape of its own
    const solver = new GravitySolver({ boundary: 'periodic', threads: 1 });
    const box = { lo: [0, 0, 0] as [number, number, number], hi: [1, 0.55, 0.55] as [number, number, number] };
    const first = await solver.solveCells(cells, { box });
    expect(first.stats.ewaldTable.source).toBe('built');
    expect(first.stats.ewaldTable.cacheWarning).toMatch(/could not be cached on disk: cannot create the cache directory/);
    const again = await solver.solveCells(cells, { box });
    expect(again.stats.ewaldTable.source).toBe('memory');
    expect(again.stats.ewaldTable.cacheWarning).toBeUndefined();
  });

  it('keys files by shape, periodic axes and resolution', () => {
    process.env.AMRGRAV_CACHE_DIR = dir;
    const before = readdirSync(dir).length;
    ewaldTable({ ...request, L: [2, 1, 1.5] }); // same shape: same file
    expect(readdirSync(dir).length).toBe(before);
    ewaldTable({ ...request, periodic: [true, true, false] });
    ewaldTable({ ...request, resolution: 9 });
    expect(readdirSync(dir).length).toBe(before + 2);
  });
});

describe('bad Ewald geometries', () => {
  it.each([
    [{ L: [1, 1, 1], periodic: [false, false, false] }, /no axis is periodic/],
    [{ L: [1, 1, 20], periodic: [true, true, true] }, /aspect ratio/],
    [{ L: [1, -1, 1], periodic: [true, true, true] }, /finite and positive/],
    [{ L: [1, 1, 1], periodic: [true, true, true], resolution: 1000 }, /resolution/],
  ])('%j', (request, message) => {
    expect(() => ewaldTable(request as never)).toThrow(InvalidOptionError);
    expect(() => ewaldTable(request as never)).toThrow(message);
  });
});
