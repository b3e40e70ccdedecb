/**
 * `amrgrav bench`: time solves on a uniform grid or the MacLaurin mesh and report cells/s, interactions per cell
 * and per-phase times. Timings live here, never in tests.
 */
import { GravitySolver, type SolveStats } from '../solver/gravitySolver.js';
import type { SolverOptions } from '../solver/options.js';
import { benchDensity, gridCells } from '../validation/gridCells.js';

export interface BenchOptions {
  /** 'uniform' (an n^3 grid) or 'maclaurin' (the validation mesh). Default 'uniform'. */
  problem?: 'uniform' | 'maclaurin';
  /** Grid cells per axis for 'uniform'. Default 100 (1M cells). */
  grid?: number;
  /** Approximate cell count for 'uniform' (rounded to a cube); overrides grid. */
  cells?: number;
  /** MacLaurin refinement levels for 'maclaurin'. Default 6. */
  levels?: number;
  /** Timed repetitions (the best and the mean are reported). Default 3. */
  repeat?: number;
  solver?: SolverOptions;
}

export interface BenchReport {
  problem: string;
  cells: number;
  backend: string;
  theta: number;
  order: number;
  repeat: number;
  /** Best native solve time (validation to results in the caller's arrays). */
  seconds: number;
  /** Best time of the whole solveCells call as JavaScript sees it (argument checks, worker hand-off included). */
  wallSeconds: number;
  secondsMean: number;
  cellsPerSecond: number;
  interactionsPerCell: number;
  approxInteractionsPerCell: number;
  directInteractionsPerCell: number;
  interactionsPerSecond: number;
  phases: SolveStats['seconds'];
  threads: number;
  deviceBytesPerCell: number;
}

export async function runBench(opts: BenchOptions = {}): Promise<BenchReport> {
  const problem = opts.problem ?? 'uniform';
  const repeat = opts.repeat ?? 3;
  const solver = new GravitySolver(opts.solver);
  let cells;
  if (problem === 'uniform') {
    const n = opts.cells !== undefined ? Math.max(1, Math.round(Math.cbrt(opts.cells))) : (opts.grid ?? 100);
    cells = gridCells(n, benchDensity);
  } else {
    const { maclaurinCells } = await import('../validation/maclaurinSetup.js');
    cells = maclaurinCells({ levels: opts.levels ?? 6 }).cells;
  }
  // Results go into arrays allocated once, as a hydro code calling every step would pass them (a fresh 134 MB
  // array per solve costs its page faults inside the solve at 16.7M cells).
  const n = cells.x.length;
  const out = {
    potential: new Float64Array(n),
    accelerations: { x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n) },
  };
  await solver.solveCells(cells, { out }); // warm-up: page in the arrays, the thread stacks, device buffers
  let best: SolveStats | undefined;
  let sum = 0;
  let bestWall = Infinity;
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    const { stats } = await solver.solveCells(cells, { out });
    bestWall = Math.min(bestWall, (performance.now() - t0) / 1e3);
    sum += stats.seconds.total;
    if (!best || stats.seconds.total < best.seconds.total) best = stats;
  }
  const s = best!;
  return {
    problem,
    cells: s.cells,
    backend: s.backend,
    theta: solver.options.theta,
    order: solver.options.order,
    repeat,
    seconds: s.seconds.total,
    wallSeconds: bestWall,
    secondsMean: sum / repeat,
    cellsPerSecond: s.cellsPerSecond,
    interactionsPerCell: s.interactionsPerCell,
    approxInteractionsPerCell: s.approxInteractionsPerCell,
    directInteractionsPerCell: s.directInteractionsPerCell,
    interactionsPerSecond: (s.interactionsPerCell * s.cells) / s.seconds.walk,
    phases: s.seconds,
    threads: s.threads,
    deviceBytesPerCell: s.deviceBytesPerCell,
  };
}
