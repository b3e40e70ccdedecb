/**
 * Periodic and partly periodic validation problems with analytic potentials: uniform grids of cubic cells over a
 * box, cell masses from exact cell averages of the density (what a finite-volume code holds), and the reference
 * potential at the cell centres in the solver's constant convention (solver/options.ts BoundaryChoice).
 */
import type { Box } from '../solver/cells.js';
import type { BoundaryChoice } from '../solver/options.js';

export interface GridProblem {
  name: string;
  box: Box;
  boundary: BoundaryChoice;
  cells: { x: Float64Array; y: Float64Array; z: Float64Array; mass: Float64Array; size: Float64Array };
  /** Analytic potential at each cell centre (G included), erg/g. */
  reference: Float64Array;
  /** How the reference's constant is fixed. */
  constant: string;
}

/**
 * How cell masses sample the density: 'average', the exact cell average (what a finite-volume code holds), or
 * 'centre', the density at the cell centre times the volume (FLASH's unit tests initialise their cells so). The
 * potential is compared at cell centres in both; with 'average' the masses already differ from the centre
 * values by (h^2/24) lap(rho) h^3, a second-order difference no solver of cell masses can undo.
 */
export type CellSampling = 'average' | 'centre';

/** Cells of side h over the box (an integer number per axis), x fastest; mass(lo, hi) gives each cell's mass. */
export function boxGrid(
  box: Box,
  h: number,
  mass: (lo: number[], hi: number[]) => number,
): GridProblem['cells'] {
  const n = [0, 1, 2].map((d) => Math.round((box.hi[d] - box.lo[d]) / h));
  n.forEach((k, d) => {
    if (Math.abs(k * h - (box.hi[d] - box.lo[d])) > 1e-9 * h) throw new RangeError(`box side ${d} is not a multiple of h`);
  });
  const N = n[0] * n[1] * n[2];
  const c = {
    x: new Float64Array(N),
    y: new Float64Array(N),
    z: new Float64Array(N),
    mass: new Float64Array(N),
    size: new Float64Array(N).fill(h),
  };
  let p = 0;
  for (let k = 0; k < n[2]; k++)
    for (let j = 0; j < n[1]; j++)
      for (let i = 0; i < n[0]; i++) {
        const lo = [box.lo[0] + i * h, box.lo[1] + j * h, box.lo[2] + k * h];
        c.x[p] = lo[0] + h / 2;
        c.y[p] = lo[1] + h / 2;
        c.z[p] = lo[2] + h / 2;
        c.mass[p] = mass(lo, [lo[0] + h, lo[1] + h, lo[2] + h]);
        p++;
      }
  return c;
}

/** Cell average of sin(k.x + phase) over [lo, hi]: sin at the centre times the sinc of each half-width. */
function cellAverageSin(k: number[], phase: number, lo: number[], hi: number[]): number {
  let f = 1;
  let arg = phase;
  for (let d = 0; d < 3; d++) {
    const a = (k[d] * (hi[d] - lo[d])) / 2;
    f *= a === 0 ? 1 : Math.sin(a) / a;
    arg += (k[d] * (lo[d] + hi[d])) / 2;
  }
  return f * Math.sin(arg);
}

export interface SineWaveOptions {
  /** Cells per box side (= per wavelength along each axis the wave varies on). */
  n: number;
  /** 'axis': k = 2 pi x/L; 'diagonal': k = 2 pi (1, 1, 1)/L. */
  direction: 'axis' | 'diagonal';
  rho0?: number;
  amplitude?: number;
  G?: number;
  /** Default 'average'. */
  sampling?: CellSampling;
}

/**
 * rho0 (1 + A sin(k.x)) in the unit periodic box: Phi = -(4 pi G rho0 A / k^2) sin(k.x) (the mean density is
 * removed, and the potential has zero mean: the fully periodic convention). FLASH's harmonic density wave test.
 */
export function sineWaveProblem(o: SineWaveOptions): GridProblem {
  const rho0 = o.rho0 ?? 1;
  const A = o.amplitude ?? 0.5;
  const G = o.G ?? 6.674e-8;
  const k = o.direction === 'axis' ? [2 * Math.PI, 0, 0] : [2 * Math.PI, 2 * Math.PI, 2 * Math.PI];
  const box: Box = { lo: [0, 0, 0], hi: [1, 1, 1] };
  const h = 1 / o.n;
  const centre = o.sampling === 'centre';
  const cells = boxGrid(box, h, (lo, hi) => {
    const s = centre ? Math.sin(k[0] * (lo[0] + h / 2) + k[1] * (lo[1] + h / 2) + k[2] * (lo[2] + h / 2)) : cellAverageSin(k, 0, lo, hi);
    return rho0 * (1 + A * s) * h * h * h;
  });
  const k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
  const reference = new Float64Array(cells.x.length);
  for (let i = 0; i < reference.length; i++)
    reference[i] = -((4 * Math.PI * G * rho0 * A) / k2) * Math.sin(k[0] * cells.x[i] + k[1] * cells.y[i] + k[2] * cells.z[i]);
  return { name: `sine-${o.direction}-${o.n}${o.sampling === 'centre' ? '-centre' : ''}`, box, boundary: 'periodic', cells, reference, constant: 'zero mean over the box' };
}

export interface LayerOptions {
  /** Cells across the box height (z). */
  nz: number;
  /** Scale height H as a fraction of the box height Lz = 1. Default 0.1. */
  H?: number;
  /** Width of the (periodic) x and y sides as a fraction of the height. Default 0.25. */
  width?: number;
  rho0?: number;
  G?: number;
  /** Default 'average'. */
  sampling?: CellSampling;
}

/**
 * Self-gravitating isothermal layer rho0 sech^2(z/H), periodic in x and y, isolated in z, truncated at the box's
 * z faces (|z| <= a H). Phi = 4 pi G rho0 H^2 [ln cosh(z/H) + a tanh a - ln cosh a]: the infinite layer's
 * ln cosh plus the constant that the sheet convention (plane average of psi = -2 pi |z| / A) and the truncation
 * give (the missing mass beyond |z| = aH adds a constant inside). FLASH's tree-solver test (passes at 2e-3).
 */
export function sechLayerProblem(o: LayerOptions): GridProblem {
  const H = o.H ?? 0.1;
  const w = o.width ?? 0.5;
  const rho0 = o.rho0 ?? 1;
  const G = o.G ?? 6.674e-8;
  const box: Box = { lo: [0, 0, -0.5], hi: [w, w, 0.5] };
  const h = 1 / o.nz;
  // exact cell mass: integral of sech^2 is H tanh
  const cells = boxGrid(box, h, (lo, hi) =>
    o.sampling === 'centre'
      ? (rho0 / Math.cosh((lo[2] + h / 2) / H) ** 2) * h * h * h
      : rho0 * H * (Math.tanh(hi[2] / H) - Math.tanh(lo[2] / H)) * h * h,
  );
  const a = 0.5 / H;
  const c = a * Math.tanh(a) - Math.log(Math.cosh(a));
  const reference = new Float64Array(cells.x.length);
  for (let i = 0; i < reference.length; i++)
    reference[i] = 4 * Math.PI * G * rho0 * H * H * (Math.log(Math.cosh(cells.z[i] / H)) + c);
  return {
    name: `sech2-layer-${o.nz}${o.sampling === 'centre' ? '-centre' : ''}`,
    box,
    boundary: { x: 'periodic', y: 'periodic', z: 'isolated' },
    cells,
    reference,
    constant: 'plane-averaged Green function -2 pi |z| / A (absolute, no fitted constant)',
  };
}

export interface CylinderOptions {
  /** Cells across the box's x and y sides (the box is 1 x 1 x length). */
  n: number;
  /** Core radius R0 (density rho0 / (1 + R^2/R0^2)^2). Default 0.125. */
  R0?: number;
  /** Truncation radius (density 0 beyond). Default 0.45. */
  Rt?: number;
  /** Periodic length along z as a fraction of the side. Default 1. */
  length?: number;
  /** Sub-samples per cell and axis (x, y) for the masses of cells cut by the truncation. Default 8. */
  subsample?: number;
  rho0?: number;
  G?: number;
  /** Default 'average' (of `subsample`^2 samples; exact enough for the smooth part); 'centre' ignores subsample. */
  sampling?: CellSampling;
}

/**
 * Ostriker's isothermal cylinder rho0 / (1 + R^2/R0^2)^2 along z, periodic in z, isolated in x and y, truncated at
 * Rt. Inside, Phi = pi G rho0 R0^2 ln(1 + R^2/R0^2) + Phi(0); outside, Phi(Rt) + 2 G mu ln(R/Rt), mu the mass per
 * unit length. Phi(0) = -2 G integral_0^Rt 2 pi R rho ln(R/Lz) dR follows from the line convention (the
 * z-averaged psi is -(2/Lz) ln(rho/Lz)). FLASH's tree-solver test (passes at 5e-3).
 */
export function cylinderProblem(o: CylinderOptions): GridProblem {
  const R0 = o.R0 ?? 0.125;
  const Rt = o.Rt ?? 0.45;
  const Lz = o.length ?? 1;
  const K = o.sampling === 'centre' ? 1 : (o.subsample ?? 8);
  const rho0 = o.rho0 ?? 1;
  const G = o.G ?? 6.674e-8;
  const box: Box = { lo: [-0.5, -0.5, 0], hi: [0.5, 0.5, Lz] };
  const h = 1 / o.n;
  const rho = (R2: number) => (R2 <= Rt * Rt ? rho0 / ((1 + R2 / (R0 * R0)) * (1 + R2 / (R0 * R0))) : 0);
  const cells = boxGrid(box, h, (lo) => {
    let s = 0;
    for (let a = 0; a < K; a++)
      for (let b = 0; b < K; b++) {
        const x = lo[0] + ((a + 0.5) * h) / K;
        const y = lo[1] + ((b + 0.5) * h) / K;
        s += rho(x * x + y * y);
      }
    return (s / (K * K)) * h * h * h;
  });
  const mu = (R: number) => (Math.PI * rho0 * R0 * R0 * R * R) / (R0 * R0 + R * R);
  // Phi(0) by Gauss-Legendre-free midpoint quadrature on a fine grid of ln-weighted shells (smooth integrand)
  const M = 200000;
  let phi0 = 0;
  for (let i = 0; i < M; i++) {
    const R = ((i + 0.5) * Rt) / M;
    phi0 += 2 * Math.PI * R * rho(R * R) * Math.log(R / Lz) * (Rt / M);
  }
  phi0 *= 2 * G; // a line of mass per length lambda has potential 2 G lambda ln(rho / Lz) in this convention
  const inner = (R: number) => Math.PI * G * rho0 * R0 * R0 * Math.log(1 + (R * R) / (R0 * R0)) + phi0;
  const reference = new Float64Array(cells.x.length);
  for (let i = 0; i < reference.length; i++) {
    const R = Math.hypot(cells.x[i], cells.y[i]);
    reference[i] = R <= Rt ? inner(R) : inner(Rt) + 2 * G * mu(Rt) * Math.log(R / Rt);
  }
  return {
    name: `ostriker-cylinder-${o.n}${o.sampling === 'centre' ? '-centre' : ''}`,
    box,
    boundary: { x: 'isolated', y: 'isolated', z: 'periodic' },
    cells,
    reference,
    constant: 'line-averaged Green function -(2/Lz) ln(rho/Lz) (absolute, no fitted constant)',
  };
}
