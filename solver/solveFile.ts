/**
 * \file solveFile.ts
 * \brief Solves a FLASH HDF5 file: read it, rebuild its mesh, solve for the potential (and accelerations), and
 * write a copy with 'gpot' (and 'gacx', 'gacy', 'gacz') added or replaced. The input file is only read.
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { extractCells } from '../mesh/cells.js';
import { MeshError } from '../mesh/errors.js';
import { flashToMesh, meshVariableToFlash } from '../mesh/flashMesh.js';
import { readFlashFile } from '../mesh/flashRead.js';
import { writeFlashFile } from '../mesh/flashWrite.js';
import { restrictToParents } from '../mesh/restrict.js';
import { GravitySolver, type SolveStats } from './gravitySolver.js';
import type { SolverOptions } from './options.js';
import type { Progress } from './progress.js';

export interface SolveFileOptions {
  /** Density variable, g cm^-3. Default 'dens'. */
  densityVar?: string;
  /** Solver options (theta, order, backend, G, accelerations, ...); see {@link SolverOptions}. */
  solver?: SolverOptions;
  /** Progress display; default none. */
  progress?: Progress;
}

export interface SolveFileReport {
  input: string;
  output: string;
  blocks: number;
  leafBlocks: number;
  cells: number;
  /** Lowest and highest refinement level of the leaf blocks. */
  levels: [number, number];
  /** Gravitational energy W = 1/2 sum m phi over leaf cells, erg. */
  energy: number;
  /** Variables written by the solve. */
  written: string[];
  /** Seconds per phase: read, mesh (rebuild the octree of blocks), solve (the solver's total), write. */
  seconds: { read: number; mesh: number; solve: number; write: number; total: number };
  solve: SolveStats;
}

function samePath(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return resolve(p);
    }
  };
  return real(a) === real(b);
}

/**
 * Solves `input` (a 3-D FLASH checkpoint or plot file) and writes `output`: a copy of every dataset of the
 * input plus 'gpot' (erg/g; parent blocks hold the mean of their children) and, with accelerations, 'gacx', 'gacy', 'gacz' (cm s^-2), in the input's precision.
 * @throws MeshError 'INVALID_OPTION' when output is the input; the errors of readFlashFile, flashToMesh,
 *   GravitySolver and writeFlashFile.
 * @example
 * const r = await solveFlashFile('maclaurin.h5', 'maclaurin_gpot.h5', { solver: { theta: 0.5 } });
 */
export async function solveFlashFile(input: string, output: string, opts: SolveFileOptions = {}): Promise<SolveFileReport> {
  if (samePath(input, output)) {
    throw new MeshError('INVALID_OPTION', `the output file must differ from the input ${input}: the input is never modified`);
  }
  const progress = opts.progress;
  const densityVar = opts.densityVar ?? 'dens';
  const solver = new GravitySolver(opts.solver ?? {});
  const t0 = performance.now();
  const data = await readFlashFile(input, { onProgress: (i, n, name) => progress?.update(`reading ${name}`, i, n) });
  if (!data.variables.has(densityVar)) {
    throw new MeshError('UNKNOWN_VARIABLE', `${input}: no variable '${densityVar}' (the file's variables: ${data.unknownNames.join(', ')})`);
  }
  const t1 = performance.now();
  progress?.phase('building the mesh');
  const fm = flashToMesh(data);
  const t2 = performance.now();
  progress?.phase(`solving (tree build and walk) on ${fm.mesh.leafBlocks().length * fm.mesh.cellsPerBlock} cells`);
  const r = await solver.solve(fm.mesh, { densityVar });
  const t3 = performance.now();
  const written = r.accelerations ? ['gpot', 'gacx', 'gacy', 'gacz'] : ['gpot'];
  for (const v of written) {
    restrictToParents(fm.mesh, v);
    meshVariableToFlash(fm, data, v);
  }
  await writeFlashFile(output, data, { onProgress: (i, n, name) => progress?.update(`writing ${name}`, i, n) });
  const t4 = performance.now();
  progress?.end();

  const cells = extractCells(fm.mesh, densityVar);
  let energy = 0;
  for (let i = 0; i < cells.count; i++) energy += 0.5 * cells.mass[i] * r.potential[i];
  const leaves = fm.mesh.leafBlocks();
  const levels = leaves.reduce((mm, b) => [Math.min(mm[0], fm.mesh.block(b).level), Math.max(mm[1], fm.mesh.block(b).level)], [Infinity, 0]);
  return {
    input,
    output,
    blocks: data.blockCount,
    leafBlocks: leaves.length,
    cells: cells.count,
    levels: [levels[0], levels[1]],
    energy,
    written,
    seconds: { read: (t1 - t0) / 1e3, mesh: (t2 - t1) / 1e3, solve: (t3 - t2) / 1e3, write: (t4 - t3) / 1e3, total: (t4 - t0) / 1e3 },
    solve: r.stats,
  };
}
