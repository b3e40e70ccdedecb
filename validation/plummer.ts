/**
 * A seeded Plummer sphere of equal point masses (issue #18's clustered benchmark): G = M = a = 1, truncated at
 * radius rMax (default 20), the points as cells of a tiny size so that the tree treats them as points (solve them
 * with selfPotential 'none'). native/tools/plummer.h draws the same recipe for the C++ checks and timings.
 */
import type { GridCells } from './gridCells.js';
import { rng } from './random.js';

export interface PlummerOptions {
  /** Number of points. */
  points: number;
  /** Seed of the generator (validation/random.ts). Default 18. */
  seed?: number;
  /** Truncation radius in units of the scale radius a. Default 20. */
  rMax?: number;
  /** Each point's cell size (a tiny cube; the self term must be off). Default 1e-6. */
  size?: number;
}

/**
 * Radii by inverting the enclosed mass M(r) = r^3 / (1 + r^2)^{3/2} at a uniform fraction of M(rMax), directions
 * uniform on the sphere; each point's mass is 1 / points (total 1).
 */
export function plummerCells(o: PlummerOptions): GridCells {
  const n = o.points;
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`plummer: points must be a positive integer, got ${n}`);
  const rMax = o.rMax ?? 20;
  const next = rng(o.seed ?? 18);
  const mMax = rMax ** 3 / (1 + rMax * rMax) ** 1.5;
  const c: GridCells = {
    x: new Float64Array(n),
    y: new Float64Array(n),
    z: new Float64Array(n),
    mass: new Float64Array(n).fill(1 / n),
    size: new Float64Array(n).fill(o.size ?? 1e-6),
  };
  for (let i = 0; i < n; i++) {
    // (0, mMax]: 1 - u avoids the radius 0 of u = 0
    const m = (1 - next()) * mMax;
    const r = 1 / Math.sqrt(m ** (-2 / 3) - 1);
    const cz = 2 * next() - 1;
    const phi = 2 * Math.PI * next();
    const s = Math.sqrt(Math.max(0, 1 - cz * cz));
    c.x[i] = r * s * Math.cos(phi);
    c.y[i] = r * s * Math.sin(phi);
    c.z[i] = r * cz;
  }
  return c;
}

/** Float64 direct sums of the accelerations (G = 1, point masses, self pair left out) at the given targets. */
export function directAccelerations(c: GridCells, targets: number[]): Float64Array {
  const out = new Float64Array(3 * targets.length);
  const n = c.x.length;
  targets.forEach((t, k) => {
    const tx = c.x[t], ty = c.y[t], tz = c.z[t];
    let ax = 0, ay = 0, az = 0;
    for (let j = 0; j < n; j++) {
      if (j === t) continue;
      const dx = c.x[j] - tx, dy = c.y[j] - ty, dz = c.z[j] - tz;
      const r2 = dx * dx + dy * dy + dz * dz;
      const f = c.mass[j] / (r2 * Math.sqrt(r2));
      ax += f * dx;
      ay += f * dy;
      az += f * dz;
    }
    out[3 * k] = ax;
    out[3 * k + 1] = ay;
    out[3 * k + 2] = az;
  });
  return out;
}

/** Median and 99th percentile of |a - a_ref| / |a_ref| over the targets (a: the solver's, 3 per target). */
export function accelerationErrors(a: Float64Array, ref: Float64Array): { median: number; p99: number; max: number } {
  const m = ref.length / 3;
  const e: number[] = [];
  for (let k = 0; k < m; k++) {
    const rx = ref[3 * k], ry = ref[3 * k + 1], rz = ref[3 * k + 2];
    const dx = a[3 * k] - rx, dy = a[3 * k + 1] - ry, dz = a[3 * k + 2] - rz;
    e.push(Math.hypot(dx, dy, dz) / Math.hypot(rx, ry, rz));
  }
  e.sort((p, q) => p - q);
  const at = (f: number) => e[Math.min(m - 1, Math.floor(f * m))];
  return { median: at(0.5), p99: at(0.99), max: e[m - 1] };
}
