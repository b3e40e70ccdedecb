#!/usr/bin/env node
/**
 * The `amrgrav` command line: `validate maclaurin`, `bench`. Tables for people, `--json` for scripts.
 */
import { parseArgs } from 'node:util';
import { AmrgravError } from './errors.js';
import { UsageError, choiceArg, intArg, numberArg } from './args.js';
import type { SolverOptions } from './options.js';
import { abortAllRanks, mpiWorld } from './mpiWorld.js';

const HELP: Record<string, string> = {
  main: `amrgrav: self-gravity Poisson solver for AMR meshes (Barnes-Hut tree, CPU/CUDA)

Usage:
  amrgrav validate maclaurin [options]   MacLaurin-spheroid validation against the analytic potential
  amrgrav bench [options]                time solves on a uniform grid or the MacLaurin mesh
  amrgrav <command> --help               options of a command

Units are cgs throughout (G = 6.674e-8 cm^3 g^-1 s^-2 unless --G is given).
Under mpirun (mpirun -np N amrgrav validate|bench ...) the cells are split over the ranks in Morton order and
solved with locally essential trees; rank 0 prints, and the JSON carries "ranks".`,
  solver: `Solver options (all commands):
  --theta T        opening angle of the MAC d > l/T + delta, in (0, 1]           [0.5]
  --order 1|2      1 = monopole, 2 = monopole + quadrupole                         [2]
  --mac M          barnes | bonsai                                                 [barnes]
  --walk W         box | vote (group acceptance: bounding box or per-cell warp vote) [box]
  --backend B      auto | cpu | cuda                                               [auto]
  --threads N      CPU threads, 0 = all                                            [0]
  --G VALUE        gravitational constant                                          [6.674e-8]
  --json           print JSON only`,
  validate: `amrgrav validate maclaurin [options]

Homogeneous oblate MacLaurin spheroid (semi-axes a1 = a2, a3 = a1 sqrt(1 - e^2)) centred in the unit box,
density rho inside and a floor of 1e-10 rho outside, blocks cut by the surface refined to the max level.
Reports the max and mean of |phi - phi_analytic| / |phi_analytic| over all leaf cells.

  --levels L       max refinement level (level 1 = one block of 8^3 cells)         [5]
  --e E            eccentricity, in [0, 1)                                         [0.9]
  --a1 A           equatorial semi-axis, cm                                        [0.25]
  --rho R          density inside, g/cm^3                                          [1]
  --subsample K    K^3 sub-samples per cell for surface volume fractions           [4]
  --direct         direct summation instead of the tree
  --sweep          theta in {1, 0.75, 0.5, 0.25, 0.1} and direct summation (JSON: an array)
`,
  bench: `amrgrav bench [options]

  --problem P      uniform | maclaurin                                             [uniform]
  --grid N         uniform grid of N^3 cells                                       [100]
  --cells N        uniform grid of about N cells (overrides --grid)
  --levels L       MacLaurin levels for --problem maclaurin                        [6]
  --repeat R       timed repetitions (best and mean reported)                      [3]
`,
};

function solverOptions(v: Record<string, string | boolean | undefined>): SolverOptions {
  const s = (k: string) => (typeof v[k] === 'string' ? (v[k] as string) : undefined);
  return {
    theta: numberArg('theta', s('theta'), 0.5),
    order: choiceArg('order', s('order'), '2', ['1', '2'] as const) === '1' ? 1 : 2,
    mac: choiceArg('mac', s('mac'), 'barnes', ['barnes', 'bonsai'] as const),
    walk: choiceArg('walk', s('walk'), 'box', ['box', 'vote'] as const),
    backend: choiceArg('backend', s('backend'), 'auto', ['auto', 'cpu', 'cuda'] as const),
    threads: intArg('threads', s('threads'), 0, 0, 4096),
    G: numberArg('G', s('G'), 6.674e-8, (x) => x > 0),
  };
}

const solverArgs = {
  theta: { type: 'string' },
  order: { type: 'string' },
  mac: { type: 'string' },
  walk: { type: 'string' },
  backend: { type: 'string' },
  threads: { type: 'string' },
  G: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

function fmt(x: number, digits = 3): string {
  return Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-2 && x !== 0) ? x.toExponential(digits - 1) : x.toPrecision(digits);
}

function table(rows: Record<string, string | number>[]): string {
  const keys = Object.keys(rows[0] ?? {});
  const cells = rows.map((r) => keys.map((k) => (typeof r[k] === 'number' ? fmt(r[k] as number) : String(r[k]))));
  const widths = keys.map((k, i) => Math.max(k.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((s, i) => s.padStart(widths[i])).join('  ');
  return [line(keys), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

async function validate(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...solverArgs,
      levels: { type: 'string' },
      e: { type: 'string' },
      a1: { type: 'string' },
      rho: { type: 'string' },
      subsample: { type: 'string' },
      direct: { type: 'boolean' },
      sweep: { type: 'boolean' },
    },
  });
  if (values.help) return void console.log(`${HELP.validate}\n${HELP.solver}`);
  const problem = positionals[0] ?? 'maclaurin';
  if (problem !== 'maclaurin') throw new UsageError(`unknown validation problem '${problem}' (known: maclaurin)`);
  const { runMaclaurin, sweepMaclaurin } = await import('../validation/maclaurinRun.js');
  const setup = {
    levels: intArg('levels', values.levels, 5, 1, 12),
    e: numberArg('e', values.e, 0.9, (x) => x >= 0 && x < 1),
    a1: numberArg('a1', values.a1, 0.25, (x) => x > 0 && x < 0.5),
    rho: numberArg('rho', values.rho, 1, (x) => x > 0),
    subsample: intArg('subsample', values.subsample, 4, 1, 16),
  };
  const solver = solverOptions(values);
  if ((values.sweep || values.direct) && mpiWorld().size > 1)
    throw new UsageError('--direct and --sweep use direct summation, which is not distributed: run them on one rank');
  if (values.sweep) {
    const reports = await sweepMaclaurin({ ...setup, solver });
    if (values.json) return void console.log(JSON.stringify(reports));
    console.log(`MacLaurin spheroid e=${setup.e}, a1=${setup.a1}, levels=${setup.levels}, ${reports[0].cells} cells`);
    console.log(
      table(
        reports.map((r) => ({
          theta: r.method === 'direct' ? 'direct' : String(r.theta),
          order: String(r.order),
          maxRelError: r.maxRelError,
          meanRelError: r.meanRelError,
          'tree-vs-direct max': r.treeVsDirectMaxRelError ?? '-',
          interactionsPerCell: Math.round(r.interactionsPerCell),
          seconds: r.seconds,
        })),
      ),
    );
    return;
  }
  const r = await runMaclaurin({ ...setup, solver, direct: !!values.direct });
  if (values.json) return void console.log(JSON.stringify(r));
  console.log(
    `MacLaurin spheroid e=${r.e}, a1=${r.a1}: ${r.cells} leaf cells in ${r.blocks} blocks, levels ${r.levels}, ` +
      `${r.method === 'direct' ? 'direct summation' : `tree theta=${r.theta} order=${r.order}`} on ${r.backend}` +
      (r.ranks > 1 ? `, ${r.ranks} MPI ranks` : ''),
  );
  console.log(`  max relative error   ${fmt(r.maxRelError)}`);
  console.log(`  mean relative error  ${fmt(r.meanRelError)}`);
  console.log(`  interactions/cell    ${Math.round(r.interactionsPerCell)}`);
  console.log(`  solve time           ${fmt(r.seconds)} s`);
}

async function bench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...solverArgs,
      problem: { type: 'string' },
      grid: { type: 'string' },
      cells: { type: 'string' },
      levels: { type: 'string' },
      repeat: { type: 'string' },
    },
  });
  if (values.help) return void console.log(`${HELP.bench}\n${HELP.solver}`);
  const { runBench } = await import('../bench/runBench.js');
  const r = await runBench({
    problem: choiceArg('problem', values.problem, 'uniform', ['uniform', 'maclaurin'] as const),
    grid: intArg('grid', values.grid, 100, 1, 2048),
    cells: values.cells === undefined ? undefined : intArg('cells', values.cells, 0, 1, 2 ** 32 - 1),
    levels: intArg('levels', values.levels, 6, 1, 12),
    repeat: intArg('repeat', values.repeat, 3, 1, 1000),
    solver: solverOptions(values),
  });
  if (values.json) return void console.log(JSON.stringify(r));
  console.log(
    `${r.problem}: ${r.cells} cells, ${r.backend} (${r.threads} threads${r.ranks > 1 ? ` x ${r.ranks} MPI ranks` : ''}), ` +
      `theta ${r.theta}, order ${r.order}`,
  );
  console.log(`  seconds (best of ${r.repeat})   ${fmt(r.seconds)}   (mean ${fmt(r.secondsMean)})`);
  console.log(`  cells/s                 ${fmt(r.cellsPerSecond)}`);
  console.log(`  interactions/cell       ${Math.round(r.interactionsPerCell)} (${Math.round(r.approxInteractionsPerCell)} node, ${Math.round(r.directInteractionsPerCell)} cell)`);
  console.log(`  walk interactions/s     ${fmt(r.interactionsPerSecond)}`);
  const p = r.phases;
  console.log(
    `  phases (s): upload ${fmt(p.upload)}, keys+sort ${fmt(p.keysAndSort)}, build ${fmt(p.build)}, ` +
      `moments ${fmt(p.moments)}, walk ${fmt(p.walk)}, download ${fmt(p.download)}`,
  );
  if (r.deviceBytesPerCell > 0) console.log(`  device memory           ${fmt(r.deviceBytesPerCell)} bytes/cell`);
  if (r.perRank) {
    console.log('  per rank (best repetition; seconds, LET bytes):');
    console.log(
      table(
        r.perRank.map((p, rank) => ({
          rank: String(rank),
          ...p,
          // the part of the exchange that ran during the local walk, and the part nobody waited for
          overlapFraction: p.exchange > 0 ? p.overlap / p.exchange : 0,
          hiddenFraction: p.exchange > 0 ? 1 - p.exchangeWait / p.exchange : 1,
        })),
      )
        .split('\n')
        .map((l) => `    ${l}`)
        .join('\n'),
    );
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  let rank = 0;
  let ranks = 1;
  try {
    if (process.env.OMPI_COMM_WORLD_SIZE || process.env.PMIX_RANK || process.env.PMI_RANK || process.env.AMRGRAV_MPI === '1') {
      ({ rank, size: ranks } = mpiWorld()); // initialises MPI
      if (rank !== 0) console.log = () => {}; // only rank 0 prints tables and JSON
    }
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      console.log(HELP.main);
      return command === undefined ? 1 : 0;
    }
    if (command === 'validate') await validate(rest);
    else if (command === 'bench') await bench(rest);
    else throw new UsageError(`unknown command '${command}' (try amrgrav --help)`);
    return 0;
  } catch (err) {
    // every rank meets the same usage errors, and a solve's errors are agreed by all ranks: rank 0 reports them
    if (err instanceof UsageError || String((err as { code?: string }).code).startsWith('ERR_PARSE_ARGS')) {
      if (rank === 0) console.error(`amrgrav: ${(err as Error).message}`);
      return 2;
    }
    if (err instanceof AmrgravError) {
      if (rank === 0) console.error(`amrgrav: ${err.name} [${err.code}]: ${err.message}`);
      return 1;
    }
    if (ranks > 1) abortAllRanks(`unexpected error: ${(err as Error).stack ?? String(err)}`); // the others would wait
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2));
