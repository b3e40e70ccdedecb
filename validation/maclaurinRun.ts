/**
 * MacLaurin validation runs: solve the spheroid mesh with the tree (or direct summation) and compare with the
 * analytic potential cell by cell (the FLASH4 GPU tree-code paper's Fig. 9 test).
 */
import type { Progress } from '../solver/progress.js';
import { GravitySolver, type SolveResult } from '../solver/gravitySolver.js';
import { selfPotentialModel, type SolverOptions } from '../solver/options.js';
import { relativeErrorStats } from './errorMetrics.js';
import { maclaurinProblem, type MaclaurinProblem, type MaclaurinSetupOptions } from './maclaurinSetup.js';
import { solveWholeProblem } from '../solver/mpi/wholeProblem.js';
import { mpiWorld } from '../solver/mpi/world.js';

export interface MaclaurinRunOptions extends MaclaurinSetupOptions {
  solver?: SolverOptions;
  /** Direct summation instead of the tree. Default false. */
  direct?: boolean;
  /** Progress display (the CLI's, on a terminal); default none. */
  progress?: Progress;
}

export interface MaclaurinReport {
  maxRelError: number;
  meanRelError: number;
  cells: number;
  blocks: number;
  levels: number;
  /** null for direct summation */
  theta: number | null;
  order: number;
  mac: string;
  /** The self-term model (solver/options.ts SelfPotentialChoice). */
  selfPotential: 'none' | 'cube' | 'lattice';
  method: 'tree' | 'fmm' | 'direct';
  /** method 'fmm': its expansion order (solver option fmmOrder). */
  fmmOrder?: number;
  backend: string;
  seconds: number;
  interactionsPerCell: number;
  e: number;
  a1: number;
  /** MPI ranks of the solve (the errors are over all cells, on rank 0). */
  ranks: number;
  /** Where the worst cell is, as (x, y, z) in cm. */
  worstCell: [number, number, number];
  /** In a sweep: the tree's own error, max |phi_tree - phi_direct| / |phi_direct| on the same mesh. */
  treeVsDirectMaxRelError?: number;
  treeVsDirectMeanRelError?: number;
}

/** `potential` covers cells [begin, begin + potential.length) of the problem (all of them on rank 0). */
function report(problem: MaclaurinProblem, solver: GravitySolver, r: SolveResult, potential: Float64Array, begin: number): MaclaurinReport {
  const err = relativeErrorStats(potential, problem.analytic.subarray(begin, begin + potential.length));
  err.worstCell += begin;
  const c = problem.cells;
  const direct = r.stats.method === 'direct';
  return {
    maxRelError: err.maxRelError,
    meanRelError: err.meanRelError,
    cells: c.count,
    blocks: problem.mesh.leafBlocks().length,
    levels: problem.params.levels,
    theta: direct ? null : solver.options.theta,
    order: solver.options.order,
    mac: solver.options.mac,
    selfPotential: selfPotentialModel(solver.options.selfPotential),
    method: r.stats.method,
    ...(r.stats.method === 'fmm' ? { fmmOrder: solver.options.fmmOrder } : {}),
    backend: r.stats.backend,
    seconds: r.stats.seconds.total,
    interactionsPerCell: r.stats.interactionsPerCell,
    ranks: r.stats.ranks,
    e: problem.params.e,
    a1: problem.params.a1,
    worstCell: [c.x[err.worstCell], c.y[err.worstCell], c.z[err.worstCell]],
  };
}

function domainBox(problem: MaclaurinProblem) {
  const o = problem.mesh.options;
  return { lo: [...o.domainLo] as [number, number, number], hi: [...o.domainHi] as [number, number, number] };
}

async function solveOne(
  problem: MaclaurinProblem,
  options: SolverOptions,
  direct: boolean,
): Promise<{ report: MaclaurinReport; potential: Float64Array }> {
  const solver = new GravitySolver({ ...options, G: problem.params.G });
  const box = domainBox(problem);
  if (direct) {
    if (mpiWorld().size > 1) throw new RangeError('direct summation is not distributed: run it on one rank');
    const r = await solver.directCells(problem.cells, { box });
    return { report: report(problem, solver, r, r.potential, 0), potential: r.potential };
  }
  // under mpirun each rank solves its chunk of the leaf blocks; rank 0 gets every cell's potential
  const s = await solveWholeProblem(solver, problem.cells, problem.mesh.cellsPerBlock, { box });
  const begin = mpiWorld().rank === 0 ? 0 : s.begin;
  return { report: report(problem, solver, s.result, s.potential, begin), potential: s.potential };
}

/** One run: the tree at the given options, or direct summation. */
export async function runMaclaurin(opts: MaclaurinRunOptions = {}): Promise<MaclaurinReport> {
  const problem = maclaurinProblem(opts);
  return (await solveOne(problem, opts.solver ?? {}, opts.direct ?? false)).report;
}

/**
 * theta in {1, 0.75, 0.5, 0.25, 0.1} and direct summation on one mesh; each tree run also reports its error
 * against the direct sum, which separates the tree's error from the mesh's discretisation floor.
 */
export async function sweepMaclaurin(
  opts: MaclaurinRunOptions = {},
  thetas: readonly number[] = [1, 0.75, 0.5, 0.25, 0.1],
): Promise<MaclaurinReport[]> {
  const progress = opts.progress;
  progress?.phase('building the MacLaurin mesh');
  const problem = maclaurinProblem(opts);
  const n = problem.cells.count;
  progress?.phase(`direct summation of ${n} cells (${n} x ${n} = ${(n * n).toExponential(2)} pairs; one native call)`);
  const direct = await solveOne(problem, opts.solver ?? {}, true);
  const out: MaclaurinReport[] = [];
  for (const [i, theta] of thetas.entries()) {
    progress?.update(`tree solve theta=${theta} (${i + 1} of ${thetas.length}) after direct summation`, i, thetas.length);
    const tree = await solveOne(problem, { ...opts.solver, theta }, false);
    const vs = relativeErrorStats(tree.potential, direct.potential);
    out.push({ ...tree.report, treeVsDirectMaxRelError: vs.maxRelError, treeVsDirectMeanRelError: vs.meanRelError });
  }
  out.push(direct.report);
  progress?.end();
  return out;
}
