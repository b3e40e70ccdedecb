/**
 * Periodic vs isolated CPU solve cost (issue #21), in ONE process: uniform grids 16^3..128^3 with a small
 * perturbation (rho = 1 + 1e-3 sin 2 pi x), theta 0.5, order 2, default options, backend 'cpu'.
 * For each size: the isolated solve (best of --repeat after a warm-up), the FIRST periodic solve of the process
 * (it pays for the Ewald table: memory, disk cache or build, see stats.ewaldTable) and the steady-state periodic
 * solve (best of --repeat), in wall time and in the process's CPU time (all threads). The table is taken from a fresh, empty cache directory unless --cache-dir is given
 * (so "first" includes the build; run twice with the same --cache-dir to see a disk-cache load instead).
 *
 * With --accelerations both solvers also compute accelerations. --method fmm measures the fast multipole method
 * (its defaults; the periodic solve's first call makes its far-image kernel, kept for the process) instead of the
 * tree; --method both measures the tree and the FMM in turn on the same grids in the one process (rows of each).
 *
 * --threads T runs both solvers on T threads (default 0: every hardware thread); with 1 the CPU-time ratio is the
 * cost on one core, free of how two threads share a machine.
 *
 *   node dist/bench/periodicCostBench.js [--sizes 16,32,64,128] [--repeat 5] [--cache-dir DIR] [--accelerations]
 *                                        [--method tree|fmm|both] [--threads T] [--json]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GravitySolver } from '../solver/gravitySolver.js';
import { gridCells } from '../validation/gridCells.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
}

const sizes = arg('--sizes', '16,32,64,128').split(',').map(Number);
const repeat = Number(arg('--repeat', '5'));
const given = arg('--cache-dir', '');
const json = process.argv.includes('--json');
const accelerations = process.argv.includes('--accelerations');
const threads = Number(arg('--threads', '0'));
if (!Number.isInteger(threads) || threads < 0) throw new Error(`--threads: a whole number >= 0, got ${arg('--threads', '0')}`);
const methodArg = arg('--method', 'tree');
if (!['tree', 'fmm', 'both'].includes(methodArg)) throw new Error(`--method: tree, fmm or both, got ${methodArg}`);
const methods = (methodArg === 'both' ? ['tree', 'fmm'] : [methodArg]) as ('tree' | 'fmm')[];
const dir = given || mkdtempSync(join(tmpdir(), 'amrgrav-pcost-'));
process.env.AMRGRAV_CACHE_DIR = dir;

const box = { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] };
const rho = (x: number) => 1 + 1e-3 * Math.sin(2 * Math.PI * x);
const rows = [];
const firstPeriodicDone = { tree: false, fmm: false };
try {
  for (const n of sizes) {
    const cells = gridCells(n, rho);
    const reps = n >= 128 ? Math.max(2, Math.min(repeat, 3)) : repeat;
    for (const method of methods) {
    const iso = new GravitySolver({ boundary: 'isolated', backend: 'cpu', accelerations, method, threads });
    const per = new GravitySolver({ boundary: 'periodic', backend: 'cpu', accelerations, method, threads });
    // wall seconds (stats) and the process's CPU seconds (all threads; less sensitive to a shared machine's load)
    const cpuOf = async (s: GravitySolver) => {
      const c0 = process.cpuUsage();
      const res = await s.solveCells(cells, { box });
      const c = process.cpuUsage(c0);
      return { res, cpu: (c.user + c.system) / 1e6 };
    };
    const best = async (s: GravitySolver) => {
      let b = Infinity, bc = Infinity;
      let st;
      for (let r = 0; r < reps; r++) {
        const { res, cpu } = await cpuOf(s);
        if (res.stats.seconds.total < b) { b = res.stats.seconds.total; st = res.stats; }
        bc = Math.min(bc, cpu);
      }
      return { seconds: b, cpu: bc, stats: st! };
    };
    await iso.solveCells(cells, { box }); // warm-up (pages, threads)
    const isoBest = await best(iso);
    // the first periodic solve on a new solver; the table's source says what it paid (built / disk only once per
    // process: later sizes find it in memory, as every later solve of one hydro run does)
    const t0 = performance.now();
    const { res: first, cpu: firstCpu } = await cpuOf(per);
    const firstWall = (performance.now() - t0) / 1000;
    const perBest = await best(per);
    const isoInt = isoBest.stats.interactionsPerCell, perInt = perBest.stats.interactionsPerCell;
    rows.push({
      n, method, cells: cells.x.length, threads: isoBest.stats.threads, accelerations,
      isolatedMs: 1e3 * isoBest.seconds,
      periodicFirstMs: 1e3 * first.stats.seconds.total, periodicFirstWallMs: 1e3 * firstWall,
      tableSource: first.stats.ewaldTable.source, tableMs: 1e3 * first.stats.ewaldTable.seconds,
      periodicSteadyMs: 1e3 * perBest.seconds,
      ratioFirst: first.stats.seconds.total / isoBest.seconds,
      ratioSteady: perBest.seconds / isoBest.seconds,
      interactionsRatio: perInt / isoInt,
      isolatedCpuMs: 1e3 * isoBest.cpu, periodicFirstCpuMs: 1e3 * firstCpu, periodicSteadyCpuMs: 1e3 * perBest.cpu,
      cpuRatioFirst: firstCpu / isoBest.cpu, cpuRatioSteady: perBest.cpu / isoBest.cpu,
      isolatedWalkMs: 1e3 * isoBest.stats.seconds.walk, periodicWalkMs: 1e3 * perBest.stats.seconds.walk,
      isolatedInteractionsPerCell: isoInt, periodicInteractionsPerCell: perInt,
      firstPeriodicOfProcess: !firstPeriodicDone[method],
    });
    firstPeriodicDone[method] = true;
    }
  }
} finally {
  if (!given) rmSync(dir, { recursive: true, force: true });
}
if (json) console.log(JSON.stringify(rows, null, 1));
else {
  console.log('size  method  isolated ms  periodic first ms (table)  periodic steady ms  ratio first  ratio steady  interactions ratio  CPU-time ratio first / steady');
  for (const r of rows) {
    console.log(`${r.n}^3`.padEnd(6) + r.method.padEnd(6) + r.isolatedMs.toFixed(1).padStart(11) +
      `${r.periodicFirstMs.toFixed(1)} (${r.tableSource} ${r.tableMs.toFixed(1)})`.padStart(27) +
      r.periodicSteadyMs.toFixed(1).padStart(20) + r.ratioFirst.toFixed(2).padStart(13) +
      r.ratioSteady.toFixed(2).padStart(14) + r.interactionsRatio.toFixed(2).padStart(20) +
      `${r.cpuRatioFirst.toFixed(2)} / ${r.cpuRatioSteady.toFixed(2)}`.padStart(31));
  }
}
