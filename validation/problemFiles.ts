/**
 * \file problemFiles.ts
 * \brief Test problems as FLASH checkpoint files (`amrgrav make`): the MacLaurin spheroid, a uniform sphere and a
 * uniform box. Each file records its problem in runtime parameters (FLASH's MacLaurin setup names where they
 * exist) so `amrgrav plot --var relerr` can recompute the analytic potential from the file alone.
 */
import { fillVariable, uniformMesh, type AmrMesh } from '../mesh/index.js';
import { emptyParameters, type FlashData, type FlashParameters } from '../mesh/flashFormat.js';
import { meshToFlash } from '../mesh/flashMesh.js';
import { writeFlashFile, defaultSimInfo, type FlashWriteOptions } from '../mesh/flashWrite.js';
import { maclaurinPotential } from './analytic/index.js';
import { checkCells } from '../solver/memory.js';
import { estimateMaclaurinCells, maclaurinProblem } from './maclaurinSetup.js';

export type ProblemKind = 'maclaurin' | 'sphere' | 'uniform';

export interface ProblemFileOptions {
  /** Finest refinement level (level 1 = one block of 8^3 cells over the unit box). Default 5 (uniform: 3). */
  levels?: number;
  /** MacLaurin eccentricity in [0, 1). Default 0.9. */
  e?: number;
  /** MacLaurin equatorial semi-axis or sphere radius, cm. Default 0.25. */
  a1?: number;
  /** Density inside (the whole box for 'uniform'), g cm^-3. Default 1. */
  rho?: number;
  /** Sub-samples per cell and axis for surface volume fractions. Default 4. */
  subsample?: number;
  /** G recorded with the problem, cgs. Default 6.674e-8. */
  G?: number;
}

/** Runtime-parameter names of the problem record (real unless noted). */
const P = { problem: 'amrgrav_problem', e: 'eccentricity', a1: 'equatorial_semimajor_axis', rho: 'density', floor: 'density_floor', G: 'newton' } as const;

/** The mesh of a problem and the parameters that describe it. */
export function problemMesh(kind: ProblemKind, opts: ProblemFileOptions = {}): { mesh: AmrMesh; params: Partial<FlashParameters> } {
  const params = emptyParameters();
  const G = opts.G ?? 6.674e-8;
  const rho = opts.rho ?? 1;
  params.stringRuntime.set(P.problem, kind);
  params.realRuntime.set(P.rho, rho).set(P.G, G);
  if (kind === 'uniform') {
    const levels = opts.levels ?? 3;
    checkCells(8 ** (levels - 1) * 512, PROBLEM_BYTES_PER_CELL, `a uniform mesh of ${levels} levels`);
    const mesh = uniformMesh({ lrefineMax: levels, level: levels });
    fillVariable(mesh, 'dens', () => rho);
    return { mesh, params };
  }
  // a sphere is the e = 0 spheroid: same refinement of surface blocks, same analytic potential
  const e = kind === 'sphere' ? 0 : (opts.e ?? 0.9);
  const a1 = opts.a1 ?? 0.25;
  const p = maclaurinProblem({ levels: opts.levels ?? 5, e, a1, rho, subsample: opts.subsample ?? 4, G });
  params.realRuntime.set(P.e, e).set(P.a1, a1).set(P.floor, p.params.floor);
  params.realRuntime.set('xctr', p.params.centre[0]).set('yctr', p.params.centre[1]).set('zctr', p.params.centre[2]);
  params.integerRuntime.set('nsubzones', p.params.subsample);
  return { mesh: p.mesh, params };
}

/**
 * Leaf cells, host memory and seconds (at about a microsecond per cell, measured on a 2-core machine) a problem
 * file will take, estimated before building it.
 * @throws OutOfMemoryError when it cannot fit in host memory (naming the size and the limit).
 */
export function estimateProblemCells(kind: ProblemKind, opts: ProblemFileOptions = {}): { cells: number; bytes: number; seconds: number } {
  const cells =
    kind === 'uniform'
      ? 8 ** ((opts.levels ?? 3) - 1) * 512
      : estimateMaclaurinCells({ levels: opts.levels ?? 5, e: kind === 'sphere' ? 0 : (opts.e ?? 0.9), a1: opts.a1 ?? 0.25 });
  checkCells(cells, PROBLEM_BYTES_PER_CELL, `'make ${kind}' at ${opts.levels ?? (kind === 'uniform' ? 3 : 5)} levels (estimated before building)`);
  return { cells, bytes: cells * PROBLEM_BYTES_PER_CELL, seconds: cells * 1e-6 * ((opts.subsample ?? 4) / 4) ** 3 };
}

/** Host bytes per leaf cell while a problem file is built and written (measured ~70; margin for the writer). */
const PROBLEM_BYTES_PER_CELL = 160;

/** A problem as FLASH checkpoint data (float64), with only 'dens'. */
export function problemData(kind: ProblemKind, opts: ProblemFileOptions = {}): FlashData {
  const { mesh, params } = problemMesh(kind, opts);
  const d = meshToFlash(mesh, { variables: ['dens'], params });
  d.extra.unshift(defaultSimInfo(`amrgrav make ${kind}`));
  return d;
}

/** Writes a problem file; returns its data. */
export async function writeProblemFile(path: string, kind: ProblemKind, opts: ProblemFileOptions = {}, w: FlashWriteOptions = {}): Promise<FlashData> {
  const d = problemData(kind, opts);
  await writeFlashFile(path, d, w);
  return d;
}

/**
 * The analytic potential (erg/g) of the problem a file records, or null when it records none ('uniform' or a
 * file not made by amrgrav).
 */
export function analyticPotentialOf(params: FlashParameters): ((x: number, y: number, z: number) => number) | null {
  const kind = params.stringRuntime.get(P.problem);
  if (kind !== 'maclaurin' && kind !== 'sphere') return null;
  const r = params.realRuntime;
  const get = (k: string) => {
    const v = r.get(k);
    if (v === undefined) throw new RangeError(`the file records problem '${kind}' but not its real runtime parameter '${k}'`);
    return v;
  };
  const sp = { a1: get(P.a1), e: get(P.e), rho: get(P.rho), G: get(P.G), centre: [get('xctr'), get('yctr'), get('zctr')] as [number, number, number] };
  return (x, y, z) => maclaurinPotential(sp, x, y, z);
}
