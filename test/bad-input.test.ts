/** Bad input is refused with a typed error that names the problem; empty input is valid. */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { InvalidInputError, InvalidOptionError, NoDeviceError, AmrgravError } from '../solver/errors.js';
import { randomCells } from './helpers.js';
import { nativeFeatures } from '../solver/native.js';

function withValue(field: 'x' | 'y' | 'z' | 'mass' | 'size', index: number, value: number) {
  const c = randomCells(100, 11);
  c[field][index] = value;
  return c;
}

describe('bad cell data', () => {
  const solver = new GravitySolver();
  it.each([
    ['NaN mass', withValue('mass', 7, NaN), /cell 7: mass is not finite/],
    ['infinite mass', withValue('mass', 3, Infinity), /cell 3: mass is not finite/],
    ['negative mass', withValue('mass', 42, -1), /cell 42: mass is negative \(got -1\)/],
    ['NaN position', withValue('y', 5, NaN), /cell 5: y is not finite/],
    ['zero size', withValue('size', 9, 0), /cell 9: size must be finite and positive/],
    ['negative size', withValue('size', 9, -2), /cell 9: size must be finite and positive/],
  ])('%s', async (_name, cells, message) => {
    for (const run of [() => solver.solveCells(cells), () => solver.directCells(cells)]) {
      const err = await run().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidInputError);
      expect((err as AmrgravError).code).toBe('INVALID_INPUT');
      expect((err as Error).message).toMatch(message);
      // the stack points at the caller, not at the addon
      expect((err as Error).stack).toContain('bad-input.test');
    }
  });

  // issue 15 item 8: two cells at one centre used to skip each other silently (each took the other for itself)
  it.each([
    ['distant in the input', 10, 90],
    ['adjacent in the input', 30, 31],
  ])('coincident cells (%s) are named, tree and direct summation', async (_name, a, b) => {
    const c = randomCells(100, 11);
    c.x[b] = c.x[a];
    c.y[b] = c.y[a];
    c.z[b] = c.z[a];
    c.mass[b] = 3; // the masses and sizes may differ: the centre alone makes them coincide
    // the GPU (where there is one: the lead's device run) checks on the device after its own sort, same message
    const gpu = nativeFeatures().cuda ? new GravitySolver({ backend: 'cuda' }) : solver;
    for (const run of [
      () => solver.solveCells(c),
      () => solver.directCells(c),
      () => solver.solveCells(c, { box: { lo: [0, 0, 0], hi: [1, 1, 1] } }),
      () => gpu.solveCells(c),
      () => gpu.directCells(c),
    ]) {
      const err = await run().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidInputError);
      expect((err as Error).message).toMatch(new RegExp(`cells ${a} and ${b} have the same centre \\(`));
    }
    // the same centres one ulp apart are distinct cells and solve
    c.x[b] = c.x[a] + Number.EPSILON * Math.max(1, c.x[a]);
    await expect(solver.solveCells(c)).resolves.toBeDefined();
  });

  it('many cells sharing a Morton key but not a centre are accepted; one coincident pair among them is found', async () => {
    const c = randomCells(300, 12);
    for (let i = 0; i < 200; i++) c.x[i] = 0.5 + i * 1e-12; // all 200 in one key cell (2^-21 of the root)
    for (let i = 0; i < 200; i++) c.y[i] = c.z[i] = 0.5;
    await expect(solver.solveCells(c)).resolves.toBeDefined();
    const gpu = nativeFeatures().cuda ? new GravitySolver({ backend: 'cuda' }) : solver;
    await expect(gpu.solveCells(c)).resolves.toBeDefined();
    c.x[150] = c.x[20];
    await expect(solver.solveCells(c)).rejects.toThrow(/cells 20 and 150 have the same centre/);
    await expect(gpu.solveCells(c)).rejects.toThrow(/cells 20 and 150 have the same centre/);
  });

  // masses >= ~1e306 used to give -Inf potentials with status OK
  it.each([
    ['one cell of 1e306 g', (c: ReturnType<typeof randomCells>) => void (c.mass[4] = 1e306), {}],
    ['a total that overflows', (c: ReturnType<typeof randomCells>) => void c.mass.fill(1e307), {}],
    ['accelerations of 1e300 g in 1e-6 cm cells', (c: ReturnType<typeof randomCells>) => void (c.mass.fill(1e300), c.size.fill(1e-6)), { accelerations: true }],
  ] as const)('%s is refused instead of an infinite potential', async (_name, spoil, options) => {
    const c = randomCells(100, 11);
    spoil(c);
    const s = new GravitySolver(options);
    const gpu = nativeFeatures().cuda ? new GravitySolver({ ...options, backend: 'cuda' }) : s;
    for (const run of [() => s.solveCells(c), () => s.directCells(c), () => gpu.solveCells(c), () => gpu.directCells(c)])
      await expect(run()).rejects.toThrow(/the masses are too large for double precision/);
  });

  it('large but representable masses solve to finite potentials', async () => {
    const c = randomCells(100, 11);
    c.mass.fill(1e290);
    for (const backend of nativeFeatures().cuda ? (['cpu', 'cuda'] as const) : (['cpu'] as const)) {
      const r = await new GravitySolver({ accelerations: true, backend }).solveCells(c);
      expect(r.potential.every((p) => Number.isFinite(p) && p < 0), backend).toBe(true);
      expect(r.accelerations!.x.every(Number.isFinite), backend).toBe(true);
    }
  });

  it('cells outside the box', async () => {
    const c = withValue('z', 12, 1.5);
    await expect(solver.solveCells(c, { box: { lo: [0, 0, 0], hi: [1, 1, 1] } })).rejects.toThrow(
      /cell 12: z is outside the box \[0, 1\]/,
    );
  });

  it('mismatched array lengths', async () => {
    const c = randomCells(10, 1);
    await expect(solver.solveCells({ ...c, mass: c.mass.subarray(0, 9) })).rejects.toThrow(
      /mismatched array lengths: x=10, y=10, z=10, mass=9, size=10/,
    );
    await expect(solver.solveCells({ ...c, mass: c.mass.subarray(0, 9) })).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('a missing array', async () => {
    const c = randomCells(10, 1) as unknown as Record<string, unknown>;
    delete c.z;
    await expect(solver.solveCells(c as never)).rejects.toThrow(/cells.z must be a Float64Array/);
  });

  it('does not modify the input arrays', async () => {
    const c = randomCells(500, 2);
    const copy = { x: c.x.slice(), mass: c.mass.slice(), size: c.size.slice() };
    await solver.solveCells(c);
    expect(c.x).toEqual(copy.x);
    expect(c.mass).toEqual(copy.mass);
    expect(c.size).toEqual(copy.size);
  });
});

describe('empty and degenerate input', () => {
  it('zero cells returns empty arrays', async () => {
    const s = new GravitySolver({ accelerations: true });
    const r = await s.solveCells({ x: [], y: [], z: [], mass: [], size: [] });
    expect(r.potential.length).toBe(0);
    expect(r.accelerations!.x.length).toBe(0);
    expect(r.stats.cells).toBe(0);
    expect((await s.directCells({ x: [], y: [], z: [], mass: [], size: [] })).potential.length).toBe(0);
  });

  it('one cell: only its own cube potential', async () => {
    const r = await new GravitySolver({ G: 1, selfPotential: 'cube' }).solveCells({ x: [0.5], y: [0.5], z: [0.5], mass: [2], size: [0.5] });
    expect(r.potential[0]).toBeCloseTo((-2.380077363979554 * 2) / 0.5, 14);
  });

  it('massless cells feel the others and have zero self term', async () => {
    const c = randomCells(200, 3);
    c.mass.fill(0, 0, 100);
    const r = await new GravitySolver({ G: 1, theta: 0.1 }).solveCells(c);
    const d = await new GravitySolver({ G: 1 }).directCells(c);
    for (let i = 0; i < 200; i++) expect(Math.abs(r.potential[i] - d.potential[i])).toBeLessThan(1e-6 * Math.abs(d.potential[i]));
  });
});

describe('bad options', () => {
  it.each([
    [{ theta: 0 }, /option 'theta': expected a number in \(0, 1\], got 0/],
    [{ theta: 1.5 }, /option 'theta'/],
    [{ theta: NaN }, /option 'theta'/],
    [{ order: 3 }, /option 'order': expected 1 or 2, got 3/],
    [{ G: -1 }, /option 'G'/],
    [{ mac: 'fancy' }, /option 'mac': expected 'barnes' or 'bonsai', got "fancy"/],
    [{ leafSize: 0 }, /option 'leafSize'/],
    [{ groupSize: 1000 }, /option 'groupSize'/],
    [{ groupSize: 0 }, /option 'groupSize': expected 'auto' or an integer in \[1, 256\], got 0/],
    [{ threads: 1.5 }, /option 'threads'/],
    [{ boundary: 'toroidal' }, /option 'boundary'/],
    [{ boundary: { x: 'periodic', y: 'periodic' } }, /option 'boundary.z': expected 'periodic' or 'isolated'/],
    [{ boundary: { x: 'periodic', y: 'periodic', z: 'isolated', w: 'periodic' } }, /option 'boundary'/],
    [{ ewaldResolution: 2 }, /option 'ewaldResolution'/],
    [{ backend: 'opencl' }, /option 'backend'/],
    [{ thetta: 0.5 }, /option 'thetta': expected one of the known options/],
    [{ softening: 'gaussian' }, /option 'softening': expected 'spline' or 'plummer', got "gaussian"/],
  ])('%j', (options, message) => {
    expect(() => new GravitySolver(options as never)).toThrow(InvalidOptionError);
    expect(() => new GravitySolver(options as never)).toThrow(message);
  });

  it.runIf(!nativeFeatures().cuda)(
    "backend 'cuda' without a usable GPU is a NoDeviceError; 'auto' falls back to the CPU and says why",
    async () => {
      expect(() => new GravitySolver({ backend: 'cuda' })).toThrow(NoDeviceError);
      expect(() => new GravitySolver({ backend: 'cuda' })).toThrow(/backend 'cuda' was requested but .*(no CUDA|device|driver)/);
      const r = await new GravitySolver({ backend: 'auto' }).solveCells(randomCells(10, 1));
      expect(r.stats.backend).toBe('cpu');
      expect(r.stats.backendReason).toMatch(/^auto: /);
    },
  );
});

describe('bad particles (system solves)', () => {
  const base = () => {
    const c = randomCells(50, 4);
    return { x: c.x, y: c.y, z: c.z, mass: c.mass, softening: new Float64Array(50).fill(0.01) as Float64Array | number };
  };
  const solver = new GravitySolver({ backend: 'cpu' });
  const withP = (field: 'x' | 'y' | 'z' | 'mass' | 'softening', i: number, v: number) => {
    const p = base();
    (p[field] as Float64Array)[i] = v;
    return p;
  };

  it.each([
    ['negative mass', withP('mass', 8, -1), /particle 8: mass is negative/],
    ['NaN mass', withP('mass', 2, NaN), /particle 2: mass is not finite/],
    ['NaN position', withP('z', 5, NaN), /particle 5: z is not finite/],
    ['zero softening', withP('softening', 3, 0), /particle 3: softening length must be finite and positive/],
    ['negative softening', withP('softening', 4, -0.1), /particle 4: softening length must be finite and positive/],
    ['one softening of 0', { ...base(), softening: 0 }, /softening length must be finite and positive/],
    ['one NaN softening', { ...base(), softening: NaN }, /softening length must be finite and positive/],
  ])('%s: natively, a typed error naming the particle (tree and direct)', async (_name, particles, message) => {
    for (const method of ['tree', 'direct'] as const) {
      const err = await solver.solveSystem({ particles }, { method }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidInputError);
      expect((err as AmrgravError).code).toBe('INVALID_INPUT');
      expect((err as Error).message).toMatch(message);
      expect((err as Error).stack).toContain('bad-input.test');
    }
  });

  it.each([
    ['mismatched lengths', { ...base(), mass: new Float64Array(49) }, /mismatched array lengths: particles.x has 50 elements but particles.mass has 49/],
    ['mismatched softening', { ...base(), softening: new Float64Array(3) }, /particles.softening has 3/],
    ['a string array', { ...base(), y: 'abc' }, /particles.y must be a Float64Array, Float32Array or number\[\]/],
    ['no softening', { ...base(), softening: undefined }, /particles.softening is missing/],
    ['not an object', 42, /particles must be an object/],
  ])('%s: in TypeScript, a typed error', async (_name, particles, message) => {
    const err = await solver.solveSystem({ particles: particles as never }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as Error).message).toMatch(message);
  });

  it('a particle outside the box is named', async () => {
    const err = await solver
      .solveSystem({ particles: withP('x', 6, 1.5) }, { box: { lo: [0, 0, 0], hi: [1, 1, 1] } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as Error).message).toMatch(/particle 6: x is outside the box/);
  });

  it('particles in a periodic box: the native typed error says it is not supported', async () => {
    const periodic = new GravitySolver({ backend: 'cpu', boundary: 'periodic' });
    const c = randomCells(64, 2);
    const err = await periodic
      .solveSystem({ cells: c, particles: base() }, { box: { lo: [0, 0, 0], hi: [1, 1, 1] } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidOptionError);
    expect((err as Error).message).toMatch(/particles with periodic boundaries are not supported/);
  });
});
