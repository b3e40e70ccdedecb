/** Shared test helpers: seeded random inputs and error metrics. */
import { execFile } from 'node:child_process';

import type { CellInput } from '../solver/cells.js';
import { fillVariable, refineMesh, uniformMesh } from '../mesh/index.js';

import { rng } from '../validation/random.js';

/** Mulberry32 (validation/random.ts): a seeded PRNG so every test input is reproducible (the mpirun scripts' too). */
export { rng };

export interface Cells {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  mass: Float64Array;
  size: Float64Array;
}

export function emptyCells(n: number): Cells {
  return {
    x: new Float64Array(n),
    y: new Float64Array(n),
    z: new Float64Array(n),
    mass: new Float64Array(n),
    size: new Float64Array(n),
  };
}

/** n cells uniformly at random in the unit cube with masses in [0.5, 1.5) and a common size h. */
export function randomCells(n: number, seed: number, h = 1e-3): Cells {
  const r = rng(seed);
  const c = emptyCells(n);
  for (let i = 0; i < n; i++) {
    c.x[i] = r();
    c.y[i] = r();
    c.z[i] = r();
    c.mass[i] = 0.5 + r();
    c.size[i] = h;
  }
  return c;
}

/** n cells clustered (a Plummer-like concentration around two centres), all inside the unit cube. */
export function clusteredCells(n: number, seed: number): Cells {
  const r = rng(seed);
  const c = emptyCells(n);
  const centres = [
    [0.3, 0.4, 0.5],
    [0.7, 0.6, 0.45],
  ];
  for (let i = 0; i < n; i++) {
    const k = centres[i % 2];
    const rad = 0.15 * Math.pow(r(), 2);
    const u = 2 * r() - 1;
    const ph = 2 * Math.PI * r();
    const s = Math.sqrt(1 - u * u);
    c.x[i] = k[0] + rad * s * Math.cos(ph);
    c.y[i] = k[1] + rad * s * Math.sin(ph);
    c.z[i] = k[2] + rad * u;
    c.mass[i] = 0.2 + r();
    c.size[i] = 1e-4;
  }
  return c;
}

export { gridCells } from '../validation/gridCells.js';

/** A 16^3 grid of the unit box whose central 4^3 cells are each split into 2^3 (a refined region), density rho. */
export function refinedBlob(rho: (x: number, y: number, z: number) => number): Cells {
  const xs: number[] = [], ys: number[] = [], zs: number[] = [], ms: number[] = [], hs: number[] = [];
  const n = 16, h = 1 / n;
  const push = (x: number, y: number, z: number, s: number) => {
    xs.push(x); ys.push(y); zs.push(z); hs.push(s); ms.push(rho(x, y, z) * s ** 3);
  };
  for (let k = 0; k < n; k++)
    for (let j = 0; j < n; j++)
      for (let q = 0; q < n; q++) {
        const inner = [q, j, k].every((v) => v >= 6 && v < 10);
        if (!inner) { push((q + 0.5) * h, (j + 0.5) * h, (k + 0.5) * h, h); continue; }
        for (let c = 0; c < 8; c++)
          push((q + 0.25 + 0.5 * (c & 1)) * h, (j + 0.25 + 0.5 * ((c >> 1) & 1)) * h, (k + 0.25 + 0.5 * (c >> 2)) * h, h / 2);
      }
  const f = (a: number[]) => Float64Array.from(a);
  return { x: f(xs), y: f(ys), z: f(zs), mass: f(ms), size: f(hs) };
}

/**
 * How far solve b moved from solve a: max |a - b| of the potentials relative to max |a|, and of the x accelerations
 * relative to max |a.x| (both solves with accelerations).
 */
export function changeOfSolve(
  a: { potential: ArrayLike<number>; accelerations?: { x: ArrayLike<number> } },
  b: { potential: ArrayLike<number>; accelerations?: { x: ArrayLike<number> } },
): { potential: number; accelerationX: number; potentialScale: number } {
  let scale = 0, diff = 0, accScale = 0, accDiff = 0;
  for (let i = 0; i < a.potential.length; i++) {
    scale = Math.max(scale, Math.abs(a.potential[i]));
    diff = Math.max(diff, Math.abs(a.potential[i] - b.potential[i]));
    accScale = Math.max(accScale, Math.abs(a.accelerations!.x[i]));
    accDiff = Math.max(accDiff, Math.abs(a.accelerations!.x[i] - b.accelerations!.x[i]));
  }
  return { potential: diff / scale, accelerationX: accDiff / accScale, potentialScale: scale };
}

/** Max and mean of |a - b| / |b|. */
export function relErrors(a: ArrayLike<number>, b: ArrayLike<number>): { max: number; mean: number } {
  let max = 0;
  let sum = 0;
  for (let i = 0; i < b.length; i++) {
    const e = Math.abs(a[i] - b[i]) / Math.abs(b[i]);
    max = Math.max(max, e);
    sum += e;
  }
  return { max, mean: b.length ? sum / b.length : 0 };
}

/** Max |a - b| / max |b| over vectors given as three arrays each: the error of a field relative to its scale. */
export function relVectorError(
  a: { x: ArrayLike<number>; y: ArrayLike<number>; z: ArrayLike<number> },
  b: { x: ArrayLike<number>; y: ArrayLike<number>; z: ArrayLike<number> },
): number {
  let maxDiff = 0;
  let maxRef = 0;
  for (let i = 0; i < b.x.length; i++) {
    const d = Math.hypot(a.x[i] - b.x[i], a.y[i] - b.y[i], a.z[i] - b.z[i]);
    maxDiff = Math.max(maxDiff, d);
    maxRef = Math.max(maxRef, Math.hypot(b.x[i], b.y[i], b.z[i]));
  }
  return maxDiff / maxRef;
}

export function asInput(c: Cells): CellInput {
  return c;
}

/**
 * A uniform sphere (radius a, density 1, centred in the unit box, a 1e-10 floor outside) on an AMR mesh whose
 * blocks cut by the surface are refined to lrefineMax, with 4^3 sub-samples for the cut cells' volume fractions.
 */
export function sphereMesh(a = 0.3, lrefineMax = 4) {
  const mesh = uniformMesh({ lrefineMax, level: 2 });
  refineMesh(mesh, (m, b) => {
    const { lo, hi } = m.block(b);
    let dmin = 0;
    let dmax = 0;
    for (let d = 0; d < 3; d++) {
      const near = Math.min(Math.max(0.5, lo[d]), hi[d]) - 0.5;
      dmin += near * near;
      dmax += Math.max((lo[d] - 0.5) ** 2, (hi[d] - 0.5) ** 2);
    }
    return dmin < a * a && dmax > a * a;
  });
  const inside = (x: number, y: number, z: number) => ((x - 0.5) ** 2 + (y - 0.5) ** 2 + (z - 0.5) ** 2 <= a * a ? 1 : 0);
  fillVariable(mesh, 'dens', (x, y, z) => 1e-10 + inside(x, y, z), { subsample: 4 });
  return { mesh, a };
}

/**
 * Factor for every time limit of the suite (AMRGRAV_TEST_TIMEOUT_SCALE, default 1; vitest.config.ts reads it
 * too): a slow or busy machine raises it instead of failing right results.
 */
export function timeoutScale(): number {
  const s = Number(process.env.AMRGRAV_TEST_TIMEOUT_SCALE);
  return Number.isFinite(s) && s > 0 ? s : 1;
}

/** `ms` times timeoutScale(). */
export function scaledTimeout(ms: number): number {
  return Math.round(ms * timeoutScale());
}

export interface MpiRun {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  seconds: number;
}

/**
 * mpirun -np N node <file> [args], killed after `timeoutMs` (scaled; a hang is a failure, never a stuck suite).
 * The default, 240 s, is generous: the jobs take 5-40 s on an idle machine, and vitest's own limit
 * (vitest.config.ts, 600 s scaled) stays above it so that a killed job reports its output.
 */
export function mpirun(np: number, file: string, opts: { args?: string[]; timeoutMs?: number } = {}): Promise<MpiRun> {
  const args = ['--allow-run-as-root', '--oversubscribe', '-np', String(np), 'node', file, ...(opts.args ?? [])];
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const child = execFile('mpirun', args, { timeout: scaledTimeout(opts.timeoutMs ?? 240_000), killSignal: 'SIGKILL', maxBuffer: 1 << 24 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { killed?: boolean }) | null;
      if (e && e.code === 'ENOENT') {
        reject(new Error('mpirun not found: install Open MPI (apt-get install openmpi-bin libopenmpi-dev), as .ci/run does'));
        return;
      }
      resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr, timedOut: !!e?.killed, seconds: (Date.now() - t0) / 1000 });
    });
  });
}
