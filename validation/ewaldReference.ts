/**
 * An independent periodic Green's function in plain TypeScript, the reference the native table and the periodic
 * tree walk are measured against. It shares no code or method with native/core/ewald_sums.cpp:
 *  - 3 periodic axes: the classic Ewald sum (real + reciprocal, structure factors for point sets), with its own
 *    splitting parameter;
 *  - 2 periodic axes: Parry's sheet sum (real + reciprocal with the erfc profile), its own splitting parameter;
 *  - 1 periodic axis: the Fourier-Bessel series -(2/L) ln(rho/L) + (4/L) sum K0(k rho) cos(k z) far from the
 *    axis, and near it the image sum with the continuum subtracted exactly (asinh), extrapolated in the cut-off.
 * Conventions (the solver's, see solver/options.ts BoundaryChoice): psi is the potential of a unit mass and its
 * images without -G; zero mean for 3 periodic axes, plane average -2 pi |w| / A for 2, line average
 * -(2/L) ln(rho/L) for 1.
 */

export interface PeriodicBox {
  /** Side lengths. */
  L: [number, number, number];
  /** Periodic axes (1 to 3). */
  periodic: [boolean, boolean, boolean];
}

const SQRT_PI = Math.sqrt(Math.PI);

/** erfc with relative accuracy ~1e-15 (continued fraction for large x, series for small). */
export function erfc(x: number): number {
  if (x < 0) return 2 - erfc(-x);
  if (x < 2.5) {
    // erf series: (2/sqrt pi) sum (-1)^n x^{2n+1} / (n! (2n+1))
    let term = x;
    let sum = x;
    for (let n = 1; n < 200; n++) {
      term *= (-x * x) / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return 1 - (2 / SQRT_PI) * sum;
  }
  // Lentz continued fraction: erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + 1/2/(x + 1/(x + 3/2/(x + ...))))
  let f = x;
  let C = x;
  let D = 0;
  for (let n = 1; n < 500; n++) {
    const a = n / 2;
    D = x + a * D;
    D = D === 0 ? 1e-300 : 1 / D;
    C = x + a / C;
    const delta = C * D;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(-x * x) / SQRT_PI / f;
}

/** K0(x) = integral_0^inf exp(-x cosh t) dt by the trapezoid rule (exponentially convergent), x > 0. */
export function besselK0(x: number): number {
  const h = 0.02;
  let sum = 0.5 * Math.exp(-x);
  for (let k = 1; ; k++) {
    const v = Math.exp(-x * Math.cosh(k * h));
    sum += v;
    if (v < 1e-18 * sum) break;
  }
  return sum * h;
}

function periodicAxesOf(box: PeriodicBox): number[] {
  return [0, 1, 2].filter((d) => box.periodic[d]);
}

/** Separation folded to the nearest image on the periodic axes. */
export function nearestImage(box: PeriodicBox, r: [number, number, number]): [number, number, number] {
  return r.map((v, d) => (box.periodic[d] ? v - box.L[d] * Math.round(v / box.L[d]) : v)) as [number, number, number];
}

/** Green's function psi(r) of the box (r != 0 on the periodic lattice). */
export function periodicGreen(box: PeriodicBox, r: [number, number, number]): number {
  const per = periodicAxesOf(box);
  if (per.length === 3) return green3(box, r);
  if (per.length === 2) return green2(box, r, per);
  if (per.length === 1) return green1(box, r, per[0]);
  throw new RangeError('periodicGreen: no periodic axis');
}

/** The correction C(r) = psi(r) - 1/|r| at the nearest image, with C(0) as the limit. */
export function ewaldCorrection(box: PeriodicBox, r: [number, number, number]): number {
  const d = nearestImage(box, r);
  const n = Math.hypot(d[0], d[1], d[2]);
  if (n === 0) {
    // C(0) = lim psi(e) - 1/e: symmetric difference of two small displacements cancels the linear term
    // along the diagonal, so that a single periodic axis never puts the probe on the line itself
    const e = 1e-3 * Math.min(...periodicAxesOf(box).map((a) => box.L[a]));
    const u = 1 / Math.sqrt(3);
    const f = (s: number) => periodicGreen(box, [s * u, s * u, s * u]) - 1 / s;
    return (4 * f(e / 2) - f(e)) / 3; // Richardson on the e^2 term (lap C is finite)
  }
  return periodicGreen(box, d) - 1 / n;
}

/** 3 periodic axes: Ewald with alpha = 2.4 / V^(1/3) (the native table uses sqrt(pi) / V^(1/3)). */
function green3(box: PeriodicBox, r: [number, number, number]): number {
  const [Lx, Ly, Lz] = box.L;
  const V = Lx * Ly * Lz;
  const alpha = 2.4 / Math.cbrt(V);
  const rc = 6.5 / alpha;
  const kc = 13 * alpha;
  let real = 0;
  const n = [0, 1, 2].map((d) => Math.ceil(rc / box.L[d]) + 1);
  for (let i = -n[0]; i <= n[0]; i++)
    for (let j = -n[1]; j <= n[1]; j++)
      for (let k = -n[2]; k <= n[2]; k++) {
        const s = Math.hypot(r[0] + i * Lx, r[1] + j * Ly, r[2] + k * Lz);
        if (s < rc && s > 0) real += erfc(alpha * s) / s;
      }
  let recip = 0;
  const m = [0, 1, 2].map((d) => Math.ceil((kc * box.L[d]) / (2 * Math.PI)));
  for (let i = -m[0]; i <= m[0]; i++)
    for (let j = -m[1]; j <= m[1]; j++)
      for (let l = -m[2]; l <= m[2]; l++) {
        if (i === 0 && j === 0 && l === 0) continue;
        const kx = (2 * Math.PI * i) / Lx;
        const ky = (2 * Math.PI * j) / Ly;
        const kz = (2 * Math.PI * l) / Lz;
        const k2 = kx * kx + ky * ky + kz * kz;
        if (k2 > kc * kc) continue;
        recip += (Math.exp(-k2 / (4 * alpha * alpha)) / k2) * Math.cos(kx * r[0] + ky * r[1] + kz * r[2]);
      }
  return real + ((4 * Math.PI) / V) * recip - Math.PI / (alpha * alpha * V);
}

/** 2 periodic axes: Parry's sum with alpha = 2.2 / sqrt(A). */
function green2(box: PeriodicBox, r: [number, number, number], per: number[]): number {
  const [p, q] = per;
  const w = [0, 1, 2].find((d) => !box.periodic[d])!;
  const A = box.L[p] * box.L[q];
  const alpha = 2.2 / Math.sqrt(A);
  const z = Math.abs(r[w]);
  const rc = 6.5 / alpha;
  let real = 0;
  const np = Math.ceil(rc / box.L[p]) + 1;
  const nq = Math.ceil(rc / box.L[q]) + 1;
  for (let i = -np; i <= np; i++)
    for (let j = -nq; j <= nq; j++) {
      const s = Math.hypot(r[p] + i * box.L[p], r[q] + j * box.L[q], z);
      if (s < rc && s > 0) real += erfc(alpha * s) / s;
    }
  let recip = 0;
  const kc = 2 * alpha * (7 + alpha * z);
  const mp = Math.ceil((kc * box.L[p]) / (2 * Math.PI));
  const mq = Math.ceil((kc * box.L[q]) / (2 * Math.PI));
  for (let i = -mp; i <= mp; i++)
    for (let j = -mq; j <= mq; j++) {
      if (i === 0 && j === 0) continue;
      const kp = (2 * Math.PI * i) / box.L[p];
      const kq = (2 * Math.PI * j) / box.L[q];
      const k = Math.hypot(kp, kq);
      if (k > kc) continue;
      const b = k / (2 * alpha);
      const up = b + alpha * z;
      const plus = up > 26 ? 0 : Math.exp(k * z) * erfc(up);
      const minus = Math.exp(-k * z) * erfc(b - alpha * z);
      recip += (Math.cos(kp * r[p] + kq * r[q]) / k) * (plus + minus);
    }
  const zero = z * (1 - erfc(alpha * z)) + Math.exp(-alpha * alpha * z * z) / (alpha * SQRT_PI);
  return real + (Math.PI / A) * recip - ((2 * Math.PI) / A) * zero;
}

/** 1 periodic axis p of period L. */
function green1(box: PeriodicBox, r: [number, number, number], p: number): number {
  const L = box.L[p];
  const rho = Math.hypot(...[0, 1, 2].filter((d) => d !== p).map((d) => r[d]));
  const z = r[p] - L * Math.round(r[p] / L);
  if (rho > 0.15 * L) {
    let s = -(2 / L) * Math.log(rho / L);
    for (let m = 1; ; m++) {
      const k = (2 * Math.PI * m) / L;
      const t = besselK0(k * rho);
      s += (4 / L) * t * Math.cos(k * z);
      if (t < 1e-18) break;
    }
    return s;
  }
  return lineImageSum(box, r, 4000);
}

/**
 * Brute-force image sum for 1 periodic axis: sum_{|n| <= N} 1/|r + nL| minus the continuum over [-Z, Z],
 * Z = (N + 1/2) L, plus the continuum's regular part -(2/L) ln(rho/L) (the line convention); the remainder falls
 * as 1/N^2, removed by Richardson extrapolation from N and 2N. rho > 0.
 */
export function lineImageSum(box: PeriodicBox, r: [number, number, number], N = 4000): number {
  const p = periodicAxesOf(box)[0];
  const L = box.L[p];
  const rho = Math.hypot(...[0, 1, 2].filter((d) => d !== p).map((d) => r[d]));
  const z = r[p] - L * Math.round(r[p] / L);
  const truncated = (N: number) => {
    let s = 0;
    for (let n = -N; n <= N; n++) s += 1 / Math.hypot(rho, z + n * L);
    const Z = (N + 0.5) * L;
    return s - (Math.asinh((Z - z) / rho) + Math.asinh((Z + z) / rho)) / L - (2 / L) * Math.log(rho / L);
  };
  const a = truncated(N);
  const b = truncated(2 * N);
  return (4 * b - a) / 3;
}

/** Point masses (plain arrays) for the periodic references below. */
export interface PointMasses {
  x: ArrayLike<number>;
  y: ArrayLike<number>;
  z: ArrayLike<number>;
  mass: ArrayLike<number>;
}

/**
 * Potential at every point of a fully periodic set of point masses, -G sum_j m_j psi(r_i - r_j), with the
 * self pair contributing its images m_i C(0) (no cube self term): Ewald with structure factors, O(N^2) real
 * space and O(N K) reciprocal space.
 */
export function ewaldPotential3(box: PeriodicBox, p: PointMasses, G: number): Float64Array {
  const n = p.mass.length;
  const [Lx, Ly, Lz] = box.L;
  const V = Lx * Ly * Lz;
  const alpha = 2.4 / Math.cbrt(V);
  const rc = 6.5 / alpha;
  const kc = 13 * alpha;
  const phi = new Float64Array(n);
  const ni = [0, 1, 2].map((d) => Math.ceil(rc / box.L[d]) + 1);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < n; j++) {
      const d = nearestImage(box, [p.x[i] - p.x[j], p.y[i] - p.y[j], p.z[i] - p.z[j]]);
      for (let a = -ni[0]; a <= ni[0]; a++)
        for (let b = -ni[1]; b <= ni[1]; b++)
          for (let c = -ni[2]; c <= ni[2]; c++) {
            const r = Math.hypot(d[0] + a * Lx, d[1] + b * Ly, d[2] + c * Lz);
            if (r < rc && r > 0) s += (p.mass[j] * erfc(alpha * r)) / r;
          }
    }
    phi[i] = s - p.mass[i] * ((2 * alpha) / SQRT_PI); // the self pair's erfc(ar)/r - 1/r at r -> 0
  }
  const m = [0, 1, 2].map((d) => Math.ceil((kc * box.L[d]) / (2 * Math.PI)));
  let total = 0;
  for (let j = 0; j < n; j++) total += p.mass[j];
  for (let a = -m[0]; a <= m[0]; a++)
    for (let b = -m[1]; b <= m[1]; b++)
      for (let c = -m[2]; c <= m[2]; c++) {
        if (a === 0 && b === 0 && c === 0) continue;
        const k = [(2 * Math.PI * a) / Lx, (2 * Math.PI * b) / Ly, (2 * Math.PI * c) / Lz];
        const k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (k2 > kc * kc) continue;
        const f = (((4 * Math.PI) / V) * Math.exp(-k2 / (4 * alpha * alpha))) / k2;
        let re = 0;
        let im = 0;
        for (let j = 0; j < n; j++) {
          const ph = k[0] * p.x[j] + k[1] * p.y[j] + k[2] * p.z[j];
          re += p.mass[j] * Math.cos(ph);
          im += p.mass[j] * Math.sin(ph);
        }
        for (let i = 0; i < n; i++) {
          const ph = k[0] * p.x[i] + k[1] * p.y[i] + k[2] * p.z[i];
          phi[i] += f * (re * Math.cos(ph) + im * Math.sin(ph));
        }
      }
  for (let i = 0; i < n; i++) phi[i] = -G * (phi[i] - (Math.PI / (alpha * alpha * V)) * total);
  return phi;
}

/** Potential of point masses in a box periodic along any axes, pair by pair (slower; any geometry). */
export function periodicPotential(box: PeriodicBox, p: PointMasses, G: number): Float64Array {
  const n = p.mass.length;
  const phi = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < n; j++) {
      const d: [number, number, number] = [p.x[i] - p.x[j], p.y[i] - p.y[j], p.z[i] - p.z[j]];
      s += p.mass[j] * (i === j ? ewaldCorrection(box, d) : periodicGreen(box, nearestImage(box, d)));
    }
    phi[i] = -G * s;
  }
  return phi;
}

/**
 * Brute-force image sum for 2 periodic axes (p, q), no splitting at all: the images within |i|, |j| <= N, minus
 * the same region's continuum (exact: the potential of a uniform rectangle, x ln(y + R) + y ln(x + R) -
 * w atan(x y / (w R))), plus the continuum's regular part -2 pi |w| / A (the sheet convention); the remainder
 * falls as 1/N + 1/N^2 and is extrapolated away from N, 2N and 4N. A check of Parry's sum and of the sheet
 * convention.
 */
export function sheetImageSum(box: PeriodicBox, r: [number, number, number], N = 100): number {
  const per = periodicAxesOf(box);
  if (per.length !== 2) throw new RangeError('sheetImageSum: needs exactly two periodic axes');
  const [p, q] = per;
  const w = [0, 1, 2].find((d) => !box.periodic[d])!;
  const Lp = box.L[p];
  const Lq = box.L[q];
  const z = Math.abs(r[w]);
  const F = (x: number, y: number) => {
    const R = Math.hypot(x, y, z);
    return x * Math.log(y + R) + y * Math.log(x + R) - (z > 0 ? z * Math.atan((x * y) / (z * R)) : 0);
  };
  const truncated = (n: number) => {
    let s = 0;
    for (let i = -n; i <= n; i++)
      for (let j = -n; j <= n; j++) s += 1 / Math.hypot(r[p] + i * Lp, r[q] + j * Lq, z);
    // continuum over the images' cells: x' in [-(n + 1/2) Lp, (n + 1/2) Lp] around the target's offset
    const x1 = r[p] - (n + 0.5) * Lp, x2 = r[p] + (n + 0.5) * Lp;
    const y1 = r[q] - (n + 0.5) * Lq, y2 = r[q] + (n + 0.5) * Lq;
    const cont = (F(x2, y2) - F(x1, y2) - F(x2, y1) + F(x1, y1)) / (Lp * Lq);
    return s - cont - ((2 * Math.PI) / (Lp * Lq)) * z;
  };
  const [a, b, c] = [truncated(N), truncated(2 * N), truncated(4 * N)];
  return (4 * (2 * c - b) - (2 * b - a)) / 3;
}
