/**
 * Direct summation at a few target cells (float64, each target's own pair left out, G = 1, no self term): the
 * reference for far-field accuracy checks on meshes too large for a full O(N^2) sum. Targets: `count` cells spread
 * evenly over the input order plus the cell nearest each corner of the cells' box, whose potential is all far field
 * (the hardest cells for a relative error).
 */
export interface PointCells {
  x: ArrayLike<number>;
  y: ArrayLike<number>;
  z: ArrayLike<number>;
  mass: ArrayLike<number>;
}

export interface DirectReference {
  targets: number[];
  /** -sum m/r at each target. */
  potential: number[];
  /** -grad of that potential, i.e. sum m (x_j - x_i) / r^3. */
  acceleration: [number, number, number][];
}

export function directAtTargets(c: PointCells, count = 1000): DirectReference {
  const n = c.x.length;
  const targets = Array.from({ length: Math.min(count, n) }, (_, k) => Math.floor(((k + 0.5) * n) / Math.min(count, n)));
  for (let corner = 0; corner < 8; corner++) {
    let best = 0;
    let bv = -Infinity;
    for (let i = 0; i < n; i++) {
      const v = (corner & 1 ? 1 : -1) * c.x[i] + (corner & 2 ? 1 : -1) * c.y[i] + (corner & 4 ? 1 : -1) * c.z[i];
      if (v > bv) [bv, best] = [v, i];
    }
    targets.push(best);
  }
  const potential: number[] = [];
  const acceleration: [number, number, number][] = [];
  for (const i of targets) {
    let p = 0, ax = 0, ay = 0, az = 0;
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      const dx = c.x[i] - c.x[j], dy = c.y[i] - c.y[j], dz = c.z[i] - c.z[j];
      const rinv = 1 / Math.sqrt(dx * dx + dy * dy + dz * dz);
      const m3 = c.mass[j] * rinv * rinv * rinv;
      p += c.mass[j] * rinv;
      ax -= m3 * dx;
      ay -= m3 * dy;
      az -= m3 * dz;
    }
    potential.push(-p);
    acceleration.push([ax, ay, az]);
  }
  return { targets, potential, acceleration };
}

/**
 * Max relative errors of a solve (G = 1, no self term) at the reference's targets: potential |dphi| / |phi|,
 * acceleration per cell |da| / |a| and relative to the largest |a| among the targets.
 */
export function targetErrors(
  ref: DirectReference,
  potential: ArrayLike<number>,
  acc?: { x: ArrayLike<number>; y: ArrayLike<number>; z: ArrayLike<number> },
): { potential: number; acceleration: number; accelerationOfMax: number } {
  let phi = 0, a = 0, d = 0, amax = 0;
  for (const r of ref.acceleration) amax = Math.max(amax, Math.hypot(...r));
  ref.targets.forEach((i, q) => {
    phi = Math.max(phi, Math.abs(potential[i] - ref.potential[q]) / Math.abs(ref.potential[q]));
    if (!acc) return;
    const [rx, ry, rz] = ref.acceleration[q];
    const e = Math.hypot(acc.x[i] - rx, acc.y[i] - ry, acc.z[i] - rz);
    a = Math.max(a, e / Math.hypot(rx, ry, rz));
    d = Math.max(d, e / amax);
  });
  return { potential: phi, acceleration: a, accelerationOfMax: d };
}
