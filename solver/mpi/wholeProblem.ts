/**
 * Standalone distributed runs (validate, bench): every rank holds the whole problem, solves its chunk of it
 * (decomposition.ts) as a collective, and rank 0 gathers the potential of all cells in the input order.
 */
import type { CellSolveOptions, GravitySolver, SolveResult } from '../gravitySolver.js';
import type { NativeCells } from '../native.js';
import { chunkOf, rankChunk } from './decomposition.js';
import { gatherToRoot, mpiWorld } from './world.js';

export interface WholeProblemSolve {
  /** This rank's solve (of its chunk). */
  result: SolveResult;
  /** Rank 0: the potential of every cell in the input order. Other ranks: their chunk's potential. */
  potential: Float64Array;
  /** This rank's cells [begin, end) of the input. */
  begin: number;
  end: number;
  ranks: number;
}

/**
 * Tree solve of `cells` split over the ranks in contiguous chunks of whole `unitCells` units (cells per block for
 * a mesh in Morton block order). In a single process: the plain solve of all cells. Collective under mpirun.
 */
export async function solveWholeProblem(
  solver: GravitySolver,
  cells: NativeCells,
  unitCells: number,
  opts: CellSolveOptions = {},
): Promise<WholeProblemSolve> {
  const { rank, size } = mpiWorld();
  const count = cells.x.length;
  if (size === 1) {
    const result = await solver.solveCells(cells, opts);
    return { result, potential: result.potential, begin: 0, end: count, ranks: 1 };
  }
  const mine = rankChunk({ ...cells }, count, unitCells, rank, size);
  const result = await solver.solveCells(mine, opts);
  const gathered = await gatherToRoot(result.potential);
  const { begin, end } = chunkOf(count / unitCells, rank, size);
  return {
    result,
    potential: rank === 0 ? gathered : result.potential,
    begin: begin * unitCells,
    end: end * unitCells,
    ranks: size,
  };
}
