/**
 * The fully periodic potential (and acceleration) of every cell of a set, as point masses, at a few target cells:
 * the classic Ewald sum in float64 with structure factors (O(N K) once, then O(K) per target) and real space per
 * target over every source's images (O(N) per target). The reference for method 'fmm' in periodic boxes
 * (test/fmm-periodic.test.ts, bench/fmmPeriodicBench.ts); independent of native/ewald/ and of the FMM's far-image
 * kernel (its own splitting parameter, no tables). Convention as ewaldPotential3: psi with zero mean, the target's
 * own pair contributing its images m C(0), no cube self term; phi = -G sum m psi, a = -grad phi.
 */
import { erfc, type PointMasses } from './ewaldReference.js';

export interface EwaldTargetsResult {
  potential: Float64Array;
  ax: Float64Array;
  ay: Float64Array;
  az: Float64Array;
}

/**
 * Potential and acceleration at the cells `targets` (indices into p) of the point masses p in the fully periodic
 * box [lo, lo + L) (sides L), gravitational constant G.
 */
export function ewaldAtTargets(L: [number, number, number], p: PointMasses, targets: number[], G: number): EwaldTargetsResult {
  const n = p.mass.length;
  const V = L[0] * L[1] * L[2];
  const lmin = Math.min(...L);
  const alpha = 4.5 / lmin;
  const rc = 6.5 / alpha;
  const kc = 13 * alpha;
  const nt = targets.length;
  const phi = new Float64Array(nt), ax = new Float64Array(nt), ay = new Float64Array(nt), az = new Float64Array(nt);
  const ni = [0, 1, 2].map((d) => Math.ceil(rc / L[d]) + 1);
  const twoOverSqrtPi = 2 / Math.sqrt(Math.PI);
  // real space: every source's images within rc (the target's own pair: its images and erfc(ar)/r - 1/r at 0)
  for (let t = 0; t < nt; t++) {
    const i = targets[t];
    let s = 0, gx = 0, gy = 0, gz = 0;
    for (let j = 0; j < n; j++) {
      const d0 = [p.x[i] - p.x[j], p.y[i] - p.y[j], p.z[i] - p.z[j]].map((v, d) => v - L[d] * Math.round(v / L[d]));
      for (let a = -ni[0]; a <= ni[0]; a++)
        for (let b = -ni[1]; b <= ni[1]; b++)
          for (let c = -ni[2]; c <= ni[2]; c++) {
            const dx = d0[0] + a * L[0], dy = d0[1] + b * L[1], dz = d0[2] + c * L[2];
            const r = Math.sqrt(dx * dx + dy * dy + dz * dz);
            if (!(r < rc && r > 0)) continue;
            const ec = erfc(alpha * r);
            s += (p.mass[j] * ec) / r;
            // d/dr (erfc(ar)/r) = -(erfc(ar)/r^2 + 2a/sqrt(pi) e^(-a^2 r^2)/r); grad = that * d/r
            const dr = -(ec / (r * r) + (twoOverSqrtPi * alpha * Math.exp(-alpha * alpha * r * r)) / r);
            const f = (p.mass[j] * dr) / r;
            gx += f * dx;
            gy += f * dy;
            gz += f * dz;
          }
    }
    phi[t] = s - p.mass[i] * alpha * twoOverSqrtPi;
    ax[t] = gx;
    ay[t] = gy;
    az[t] = gz;
  }
  // reciprocal space: S(k) = sum m e^(i k.s) by per-axis phase powers
  const M = [0, 1, 2].map((d) => Math.ceil((kc * L[d]) / (2 * Math.PI)));
  const axisPhases = (coord: ArrayLike<number>, d: number) => {
    const w = 2 * M[d] + 1;
    const re = new Float64Array(n * w), im = new Float64Array(n * w);
    for (let j = 0; j < n; j++)
      for (let m = -M[d]; m <= M[d]; m++) {
        const ph = (2 * Math.PI * m * coord[j]) / L[d];
        re[j * w + m + M[d]] = Math.cos(ph);
        im[j * w + m + M[d]] = Math.sin(ph);
      }
    return { re, im, w };
  };
  const ex = axisPhases(p.x, 0), ey = axisPhases(p.y, 1), ez = axisPhases(p.z, 2);
  let total = 0;
  for (let j = 0; j < n; j++) total += p.mass[j];
  for (let a = -M[0]; a <= M[0]; a++)
    for (let b = -M[1]; b <= M[1]; b++)
      for (let c = -M[2]; c <= M[2]; c++) {
        if (a === 0 && b === 0 && c === 0) continue;
        const k = [(2 * Math.PI * a) / L[0], (2 * Math.PI * b) / L[1], (2 * Math.PI * c) / L[2]];
        const k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (k2 > kc * kc) continue;
        const f = ((4 * Math.PI) / V) * Math.exp(-k2 / (4 * alpha * alpha)) / k2;
        let sr = 0, si = 0;
        const ia = a + M[0], ib = b + M[1], ic = c + M[2];
        const phase = (j: number) => {
          const xr = ex.re[j * ex.w + ia], xi = ex.im[j * ex.w + ia];
          const yr = ey.re[j * ey.w + ib], yi = ey.im[j * ey.w + ib];
          const zr = ez.re[j * ez.w + ic], zi = ez.im[j * ez.w + ic];
          const pr = xr * yr - xi * yi, pi = xr * yi + xi * yr;
          return [pr * zr - pi * zi, pr * zi + pi * zr];
        };
        for (let j = 0; j < n; j++) {
          const [re, im] = phase(j);
          sr += p.mass[j] * re;
          si += p.mass[j] * im;
        }
        for (let t = 0; t < nt; t++) {
          const [re, im] = phase(targets[t]);
          // sum m cos(k.(t - s)) = Re(e^(ik.t) conj S); its gradient in t: -k Im(e^(ik.t) conj S)
          const cre = re * sr + im * si, cim = im * sr - re * si;
          phi[t] += f * cre;
          ax[t] -= f * cim * k[0];
          ay[t] -= f * cim * k[1];
          az[t] -= f * cim * k[2];
        }
      }
  for (let t = 0; t < nt; t++) {
    phi[t] = -G * (phi[t] - (Math.PI / (alpha * alpha * V)) * total);
    // a = -grad phi = G grad(sum m psi)
    ax[t] *= G;
    ay[t] *= G;
    az[t] *= G;
  }
  return { potential: phi, ax, ay, az };
}
