/**
 * Potential of a homogeneous rectangular prism (closed form; MacMillan 1930, Nagy 1966): an isolated reference
 * whose faces can coincide with cell faces, so a grid holds it exactly (no surface volume fractions), and a
 * refined part of the grid has the same density as the rest (AMR without a density jump).
 */
import { G_CGS } from './constants.js';

/** The antiderivative F(x, y, z) of 1/r over the octant from a corner; 0 * log 0 and 0 * atan(./0) count as 0. */
function corner(x: number, y: number, z: number): number {
  const r = Math.hypot(x, y, z);
  const xlog = (a: number, b: number, c: number) => (a === 0 || b === 0 || c + r === 0 ? 0 : a * b * Math.log(c + r));
  const sqAtan = (a: number, b: number, c: number) => (a === 0 ? 0 : ((a * a) / 2) * Math.atan((b * c) / (a * r)));
  return xlog(x, y, z) + xlog(y, z, x) + xlog(z, x, y) - sqAtan(x, y, z) - sqAtan(y, z, x) - sqAtan(z, x, y);
}

/**
 * Potential (erg/g, negative) at (x, y, z) of density rho filling [lo, hi]: -G rho integral dV / |r - r'|,
 * the eight corners' F with alternating signs.
 */
export function prismPotential(
  lo: readonly number[],
  hi: readonly number[],
  rho: number,
  x: number,
  y: number,
  z: number,
  G: number = G_CGS,
): number {
  const p = [x, y, z];
  let s = 0;
  for (let c = 0; c < 8; c++) {
    const d = [0, 1, 2].map((k) => ((c >> k) & 1 ? hi[k] : lo[k]) - p[k]);
    const sign = (c & 1 ? 1 : -1) * (c & 2 ? 1 : -1) * (c & 4 ? 1 : -1);
    s += sign * corner(d[0], d[1], d[2]);
  }
  return -G * rho * s;
}
