/**
 * `amrgrav bench`: time solves on a uniform grid, the MacLaurin mesh or a Plummer sphere of points and report
 * cells/s, interactions per cell and per-phase times (the sphere also its accuracy against float64 direct sums).
 * Timings live here, never in tests.
 */
import { GravitySolver, type SolveStats } from '../solver/gravitySolver.js';
import type { SolverOptions } from '../solver/options.js';
import { benchDensity, gridCells } from '../validation/gridCells.js';
import { rankChunk } from '../solver/mpi/decomposition.js';
import { checkCells } from '../solver/memory.js';
import { accelerationErrors, directAccelerations, plummerCells } from '../validation/plummer.js';
import { rng } from '../validation/random.js';
import type { Progress } from '../solver/progress.js';

/**
 * Host bytes per cell of a bench run: the cells and results in JavaScript (9 float64 arrays) and the native
 * solver's sorted copies, keys, tree and interaction buffers.
 */
const BENCH_BYTES_PER_CELL = 256;
import { gatherToRoot, mpiWorld } from '../solver/mpi/world.js';

export interface BenchOptions {
  /**
   * 'uniform' (an n^3 grid), 'maclaurin' (the validation mesh) or 'plummer' (issue #18's clustered set: a Plummer
   * sphere of points, validation/plummer.ts, solved with G = 1, selfPotential 'none' and accelerations, whatever
   * `solver` says). Default 'uniform'.
   */
  problem?: 'uniform' | 'maclaurin' | 'plummer';
  /** Points of the Plummer sphere. Default 1e6. */
  points?: number;
  /** 'plummer': relative acceleration errors against float64 direct sums at this many random points (one rank
   * only; JavaScript, single-threaded: 4096 points at 1M take about a minute). Default 0: none. */
  checkPoints?: number;
  /** Grid cells per axis for 'uniform'. Default 100 (1M cells). */
  grid?: number;
  /** Approximate cell count for 'uniform' (rounded to a cube); overrides grid. */
  cells?: number;
  /** MacLaurin refinement levels for 'maclaurin'. Default 6. */
  levels?: number;
  /** Timed repetitions (the best and the mean are reported). Default 3. */
  repeat?: number;
  /**
   * 'uniform' only: solve through the block entry (GravitySolver.solveBlocks) with the grid cut into blocks of this
   * many cells per axis (it must divide the grid), density in `blockDtype`. The timed repetitions are on an
   * unchanged mesh (the tree kept), and as many again with meshChanged (a new mesh every call). One rank only.
   */
  blocks?: number;
  blockDtype?: 'float64' | 'float32';
  /** Progress display (the CLI's, on a terminal); default none. */
  progress?: Progress;
  solver?: SolverOptions;
}

/** The far-field settings a report states (the solver's resolved options). */
function solverSettings(solver: GravitySolver): Pick<BenchReport, 'method' | 'fmmOrder' | 'fmmTheta' | 'fmmTolerance' | 'theta' | 'order'> {
  const o = solver.options;
  return { method: o.method, fmmOrder: o.fmmOrder, fmmTheta: o.fmmTheta, fmmTolerance: o.fmmTolerance, theta: o.theta, order: o.order };
}

export interface BenchReport {
  problem: string;
  cells: number;
  backend: string;
  /** Far-field method (solver option `method`); with 'fmm', theta and order are the tree's unused options. */
  method: 'tree' | 'fmm';
  fmmOrder: number;
  fmmTheta: number;
  fmmTolerance: number;
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
  /** Walk groups of the best repetition. */
  groups: number;
  /** 'plummer' with checkPoints: median, 99th percentile and largest |a - a_direct| / |a_direct|. */
  accuracy?: { checkPoints: number; median: number; p99: number; max: number };
  /** MPI ranks. With several, `seconds` is the slowest rank's time and `perRank` has each rank's share. */
  ranks: number;
  perRank?: RankBench[];
  /** With `blocks`: the block entry's figures (seconds and wallSeconds above are the unchanged mesh's). */
  blocks?: {
    blockSize: number;
    dtype: 'float64' | 'float32';
    /** Best native time and JS wall time with a new mesh every call (meshChanged). */
    secondsNewMesh: number;
    wallSecondsNewMesh: number;
    phasesNewMesh: SolveStats['seconds'];
    /** The timed unchanged-mesh solves kept the tree. */
    treeReused: boolean;
  };
}

/** One rank's part of the best distributed repetition. Seconds; bytes of LET messages. */
export interface RankBench {
  cells: number;
  seconds: number;
  localWalk: number;
  remoteWalk: number;
  letSelect: number;
  exchange: number;
  exchangeWait: number;
  overlap: number;
  bytesSent: number;
  bytesReceived: number;
}

const RANK_FIELDS = ['cells', 'seconds', 'localWalk', 'remoteWalk', 'letSelect', 'exchange', 'exchangeWait', 'overlap', 'bytesSent', 'bytesReceived'] as const;

function rankBench(s: SolveStats): Float64Array {
  const d = s.distributed;
  const r: RankBench = {
    cells: s.cells,
    seconds: s.seconds.total,
    localWalk: d?.secondsLocalWalk ?? s.seconds.walk,
    remoteWalk: d?.secondsRemoteWalk ?? 0,
    letSelect: d?.secondsLetSelect ?? 0,
    exchange: d?.secondsExchange ?? 0,
    exchangeWait: d?.secondsExchangeWait ?? 0,
    overlap: d?.secondsOverlap ?? 0,
    bytesSent: d?.bytesSent ?? 0,
    bytesReceived: d?.bytesReceived ?? 0,
  };
  return Float64Array.from(RANK_FIELDS.map((k) => r[k]));
}

/** Every rank's figures of one repetition, on rank 0 (an empty list elsewhere). Collective. */
async function gatherRankBench(s: SolveStats): Promise<RankBench[]> {
  const all = await gatherToRoot(rankBench(s));
  const out: RankBench[] = [];
  for (let p = 0; p < all.length; p += RANK_FIELDS.length)
    out.push(Object.fromEntries(RANK_FIELDS.map((k, i) => [k, all[p + i]])) as unknown as RankBench);
  return out;
}

/** `runBench` through the block entry: an n^3 grid in blocks of b^3 cells, block order, density at the centres. */
async function runBlocksBench(opts: BenchOptions): Promise<BenchReport> {
  const n = opts.cells !== undefined ? Math.max(1, Math.round(Math.cbrt(opts.cells))) : (opts.grid ?? 100);
  const b = opts.blocks!;
  if (!Number.isInteger(b) || b < 1 || n % b !== 0) throw new Error(`bench --blocks ${b}: the block size must divide the grid (${n})`);
  if (mpiWorld().size > 1) throw new Error('bench --blocks runs on one rank');
  const dtype = opts.blockDtype ?? 'float64';
  const repeat = opts.repeat ?? 3;
  const solver = new GravitySolver(opts.solver);
  checkCells(n ** 3, BENCH_BYTES_PER_CELL / 2, `bench: a ${n}^3 grid in blocks`);
  opts.progress?.phase(`building the ${n}^3 grid in blocks of ${b}^3`);
  const nb = n / b, blocks = nb ** 3, cpb = b ** 3, h = 1 / n;
  const lo = new Float64Array(3 * blocks);
  const dx = new Float64Array(3 * blocks).fill(h);
  const density = dtype === 'float32' ? new Float32Array(blocks * cpb) : new Float64Array(blocks * cpb);
  for (let q = 0, p = 0; q < blocks; q++) {
    const c = [q % nb, Math.floor(q / nb) % nb, Math.floor(q / (nb * nb))];
    for (let d = 0; d < 3; d++) lo[3 * q + d] = c[d] / nb;
    for (let k = 0; k < b; k++)
      for (let j = 0; j < b; j++)
        for (let i = 0; i < b; i++, p++)
          density[p] = benchDensity(lo[3 * q] + (i + 0.5) * h, lo[3 * q + 1] + (j + 0.5) * h, lo[3 * q + 2] + (k + 0.5) * h);
  }
  const potential = dtype === 'float32' ? new Float32Array(blocks * cpb) : new Float64Array(blocks * cpb);
  const box = { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] };
  const input = { nxb: b, nyb: b, nzb: b, lo, dx, density };
  const out = { potential };
  opts.progress?.phase(`warm-up solve of ${n ** 3} cells`);
  await solver.solveBlocks({ ...input, meshChanged: true }, { box, out });
  const timed = async (meshChanged: boolean) => {
    let best: SolveStats | undefined;
    let wall = Infinity;
    let sum = 0;
    let reused = true;
    for (let i = 0; i < repeat; i++) {
      const t0 = performance.now();
      const { stats } = await solver.solveBlocks({ ...input, meshChanged }, { box, out });
      wall = Math.min(wall, (performance.now() - t0) / 1e3);
      sum += stats.seconds.total;
      reused &&= stats.treeReused;
      if (!best || stats.seconds.total < best.seconds.total) best = stats;
    }
    return { best: best!, wall, mean: sum / repeat, reused };
  };
  const fresh = await timed(true);
  await solver.solveBlocks({ ...input, meshChanged: true }, { box, out }); // this mesh's tree, then unchanged
  const kept = await timed(false);
  opts.progress?.end();
  const s = kept.best;
  const total = n ** 3;
  return {
    ranks: 1,
    problem: `uniform-blocks${b}`,
    cells: total,
    backend: s.backend,
    ...solverSettings(solver),
    repeat,
    seconds: s.seconds.total,
    wallSeconds: kept.wall,
    secondsMean: kept.mean,
    cellsPerSecond: total / s.seconds.total,
    interactionsPerCell: s.interactionsPerCell,
    approxInteractionsPerCell: s.approxInteractionsPerCell,
    directInteractionsPerCell: s.directInteractionsPerCell,
    interactionsPerSecond: (s.interactionsPerCell * s.cells) / s.seconds.walk,
    phases: s.seconds,
    threads: s.threads,
    deviceBytesPerCell: s.deviceBytesPerCell,
    groups: s.groups,
    blocks: {
      blockSize: b,
      dtype,
      secondsNewMesh: fresh.best.seconds.total,
      wallSecondsNewMesh: fresh.wall,
      phasesNewMesh: fresh.best.seconds,
      treeReused: kept.reused,
    },
  };
}

export async function runBench(opts: BenchOptions = {}): Promise<BenchReport> {
  if (opts.blocks !== undefined && (opts.problem ?? 'uniform') === 'uniform') return runBlocksBench(opts);
  const problem = opts.problem ?? 'uniform';
  const repeat = opts.repeat ?? 3;
  const plummer = problem === 'plummer';
  // the Plummer sphere is defined with G = 1, points (no self term) and accelerations (issue #18's measurement)
  const solver = new GravitySolver(
    plummer ? { ...opts.solver, G: 1, selfPotential: 'none', accelerations: true } : opts.solver,
  );
  let cells;
  let unitCells: number; // decomposition unit under mpirun: a z-plane of the grid, a block of the mesh
  opts.progress?.phase(`building the ${problem} cells`);
  if (problem === 'uniform') {
    const n = opts.cells !== undefined ? Math.max(1, Math.round(Math.cbrt(opts.cells))) : (opts.grid ?? 100);
    checkCells(n ** 3, BENCH_BYTES_PER_CELL, `bench: a ${n}^3 grid`);
    cells = gridCells(n, benchDensity);
    unitCells = n * n;
  } else if (plummer) {
    const points = opts.points ?? 1_000_000;
    checkCells(points, BENCH_BYTES_PER_CELL, `bench: a Plummer sphere of ${points} points`);
    cells = plummerCells({ points });
    unitCells = 1;
  } else {
    const { maclaurinCells } = await import('../validation/maclaurinSetup.js');
    const m = maclaurinCells({ levels: opts.levels ?? 6 });
    cells = m.cells;
    unitCells = m.cellsPerBlock;
  }
  const { rank, size } = mpiWorld();
  const total = cells.x.length;
  if (size > 1) cells = rankChunk({ ...cells }, total, unitCells, rank, size);
  // Results go into arrays allocated once, as a hydro code calling every step would pass them (a fresh 134 MB
  // array per solve costs its page faults inside the solve at 16.7M cells).
  const n = cells.x.length;
  const out = {
    potential: new Float64Array(n),
    accelerations: { x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n) },
  };
  // the unit box for the grid and the mesh; the sphere's points choose their own root cube
  const box = plummer ? undefined : { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] };
  const progress = opts.progress;
  progress?.phase(`warm-up solve of ${total} cells`);
  await solver.solveCells(cells, { box, out }); // warm-up: page in the arrays, the thread stacks, device buffers
  let best: SolveStats | undefined;
  let bestRanks: RankBench[] = [];
  let bestSeconds = Infinity;
  let sum = 0;
  let bestWall = Infinity;
  for (let i = 0; i < repeat; i++) {
    progress?.update(`timed solve ${i + 1} of ${repeat} (${total} cells)`, i, repeat);
    const t0 = performance.now();
    const { stats } = await solver.solveCells(cells, { box, out });
    bestWall = Math.min(bestWall, (performance.now() - t0) / 1e3);
    // with several ranks a repetition takes as long as its slowest rank
    const ranks = size > 1 ? await gatherRankBench(stats) : [];
    const seconds = size > 1 ? Math.max(...ranks.map((r) => r.seconds), stats.seconds.total) : stats.seconds.total;
    sum += seconds;
    if (seconds < bestSeconds) {
      bestSeconds = seconds;
      best = stats;
      bestRanks = ranks;
    }
  }
  progress?.end();
  const s = best!;
  let accuracy: BenchReport['accuracy'];
  const checkPoints = Math.min(opts.checkPoints ?? 0, n);
  if (plummer && checkPoints > 0 && size === 1) {
    progress?.phase(`float64 direct sums at ${checkPoints} points`);
    const pick = rng(4096);
    const targets = Array.from({ length: checkPoints }, () => Math.floor(pick() * n));
    const ref = directAccelerations(cells, targets);
    const a = new Float64Array(3 * checkPoints);
    targets.forEach((t, k) => {
      a[3 * k] = out.accelerations.x[t];
      a[3 * k + 1] = out.accelerations.y[t];
      a[3 * k + 2] = out.accelerations.z[t];
    });
    accuracy = { checkPoints, ...accelerationErrors(a, ref) };
  }
  return {
    ranks: size,
    ...(size > 1 ? { perRank: bestRanks } : {}),
    problem,
    cells: total,
    backend: s.backend,
    ...solverSettings(solver),
    repeat,
    seconds: bestSeconds,
    wallSeconds: bestWall,
    secondsMean: sum / repeat,
    cellsPerSecond: total / bestSeconds,
    interactionsPerCell: s.interactionsPerCell,
    approxInteractionsPerCell: s.approxInteractionsPerCell,
    directInteractionsPerCell: s.directInteractionsPerCell,
    interactionsPerSecond: (s.interactionsPerCell * s.cells) / s.seconds.walk,
    phases: s.seconds,
    threads: s.threads,
    deviceBytesPerCell: s.deviceBytesPerCell,
    groups: s.groups,
    ...(accuracy ? { accuracy } : {}),
  };
}
