/**
 * The MacLaurin-spheroid test problem on an AMR mesh: a homogeneous oblate spheroid centred in the unit box,
 * blocks cut by its surface refined to the finest level (then 2:1 balanced), surface cells given their volume
 * fraction by sub-sampling, and a tiny density floor outside.
 */
import { AmrMesh, extractCells, fillVariable, refineMesh, uniformMesh, type CellArrays } from '../mesh/index.js';
import { maclaurinPotential } from './analytic/index.js';
import { checkCells } from '../solver/memory.js';

/** Host bytes per leaf cell while a MacLaurin problem is built and held (mesh, cell arrays, analytic potential). */
const MACLAURIN_BYTES_PER_CELL = 160;

/**
 * The leaf cells of a MacLaurin mesh, estimated before building it: the blocks cut by the surface dominate, about
 * 5 S / h^2 of them for surface area S and finest block side h (measured: within 20% at levels 4 to 7).
 */
export function estimateMaclaurinCells(opts: MaclaurinSetupOptions = {}): number {
  const levels = opts.levels ?? 5;
  const e = opts.e ?? 0.9;
  const a1 = opts.a1 ?? 0.25;
  const nxb = opts.nxb ?? 8;
  const area = e < 1e-6 ? 4 * Math.PI * a1 * a1 : 2 * Math.PI * a1 * a1 * (1 + ((1 - e * e) / e) * Math.atanh(e));
  const blocks = Math.max(8 ** Math.min(levels - 1, 2), 5 * area * 4 ** (levels - 1));
  return blocks * nxb ** 3;
}

export interface MaclaurinSetupOptions {
  /** Finest refinement level (level 1 = one block of 8^3 cells over the unit box). Default 5. */
  levels?: number;
  /** Eccentricity in [0, 1). Default 0.9. */
  e?: number;
  /** Equatorial semi-axis a1 = a2, cm. Default 0.25. */
  a1?: number;
  /** Density inside, g cm^-3. Default 1. */
  rho?: number;
  /** Density outside, as a fraction of rho. Default 1e-10. */
  floor?: number;
  /** Sub-samples per cell and axis for surface volume fractions. Default 4. */
  subsample?: number;
  /** Cells per block and axis. Default 8. */
  nxb?: number;
  /** G for the analytic potential, cgs. Default 6.674e-8. */
  G?: number;
}

export interface MaclaurinProblem {
  mesh: AmrMesh;
  cells: CellArrays;
  /** Analytic potential of the spheroid at every extracted cell centre (erg/g); the floor's mass is < 1e-9 of it. */
  analytic: Float64Array;
  params: Required<MaclaurinSetupOptions> & { a3: number; centre: [number, number, number] };
}

/** Range of f(x) = (x - c)^2 / a^2 over [lo, hi]: convex, so the minimum is at the clamped centre. */
function quadRange(lo: number, hi: number, c: number, a: number): [number, number] {
  const m = Math.min(Math.max(c, lo), hi);
  const fmin = ((m - c) * (m - c)) / (a * a);
  const fmax = Math.max((lo - c) * (lo - c), (hi - c) * (hi - c)) / (a * a);
  return [fmin, fmax];
}

export function maclaurinProblem(opts: MaclaurinSetupOptions = {}): MaclaurinProblem {
  const p = {
    levels: opts.levels ?? 5,
    e: opts.e ?? 0.9,
    a1: opts.a1 ?? 0.25,
    rho: opts.rho ?? 1,
    floor: opts.floor ?? 1e-10,
    subsample: opts.subsample ?? 4,
    nxb: opts.nxb ?? 8,
    G: opts.G ?? 6.674e-8,
  };
  const estimate = estimateMaclaurinCells(p);
  checkCells(estimate, MACLAURIN_BYTES_PER_CELL, `a MacLaurin mesh of ${p.levels} levels (estimated before building)`);
  const a3 = p.a1 * Math.sqrt(1 - p.e * p.e);
  const centre: [number, number, number] = [0.5, 0.5, 0.5];
  const axes = [p.a1, p.a1, a3];
  const mesh = uniformMesh({ lrefineMax: p.levels, nxb: p.nxb, nyb: p.nxb, nzb: p.nxb });
  // a block is cut by the surface when the spheroid's quadratic form takes values on both sides of 1 in it
  refineMesh(mesh, (m, b) => {
    const { lo, hi } = m.block(b);
    let fmin = 0;
    let fmax = 0;
    for (let d = 0; d < 3; d++) {
      const [a, bb] = quadRange(lo[d], hi[d], centre[d], axes[d]);
      fmin += a;
      fmax += bb;
    }
    return fmin < 1 && fmax > 1;
  });
  const inside = (x: number, y: number, z: number) =>
    ((x - 0.5) ** 2 + (y - 0.5) ** 2) / (p.a1 * p.a1) + ((z - 0.5) ** 2) / (a3 * a3) <= 1 ? 1 : 0;
  fillVariable(mesh, 'dens', (x, y, z) => p.rho * (p.floor + (1 - p.floor) * inside(x, y, z)), {
    subsample: p.subsample,
  });
  const cells = extractCells(mesh, 'dens');
  const analytic = new Float64Array(cells.count);
  const sp = { a1: p.a1, e: p.e, rho: p.rho, G: p.G, centre };
  for (let i = 0; i < cells.count; i++) analytic[i] = maclaurinPotential(sp, cells.x[i], cells.y[i], cells.z[i]);
  return { mesh, cells, analytic, params: { ...p, a3, centre } };
}

/** Only the cells (for benchmarks). */
export function maclaurinCells(opts: MaclaurinSetupOptions = {}): { cells: CellArrays; cellsPerBlock: number } {
  const p = maclaurinProblem(opts);
  return { cells: p.cells, cellsPerBlock: p.mesh.cellsPerBlock };
}
