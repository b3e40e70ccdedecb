/**
 * GPU-vs-CPU parity through the public API, on the MacLaurin mesh (the "levels 6" check) and on a
 * clustered random AMR-like input: max relative potential difference, acceleration difference relative to the
 * largest acceleration, and whether the interaction counts are identical. Run on a GPU machine:
 *   node dist/bench/gpuParity.js [--levels 6] [--mesh-levels 7]
 * Prints one JSON line per case and exits non-zero if any case misses 1e-5 or the counts differ.
 */
import { parseArgs } from 'node:util';
import { GravitySolver, type SolveResult } from '../solver/gravitySolver.js';
import type { SolverOptions } from '../solver/options.js';
import type { CellInput, Box } from '../solver/cells.js';
import { maclaurinProblem } from '../validation/maclaurinSetup.js';
import { relativeErrorStats } from '../validation/errorMetrics.js';

function clustered(n: number): CellInput {
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const x = new Float64Array(n), y = new Float64Array(n), z = new Float64Array(n), mass = new Float64Array(n), size = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const r = 0.2 * rnd() ** 3;
    const u = 2 * rnd() - 1, ph = 2 * Math.PI * rnd(), s = Math.sqrt(1 - u * u);
    x[i] = 0.5 + r * s * Math.cos(ph);
    y[i] = 0.5 + r * s * Math.sin(ph);
    z[i] = 0.5 + r * u;
    mass[i] = 0.1 + rnd();
    size[i] = 1e-5 * (1 + Math.floor(4 * rnd()));
  }
  return { x, y, z, mass, size };
}

function accDiff(a: SolveResult, b: SolveResult): number {
  if (!a.accelerations || !b.accelerations) return 0;
  let d = 0, m = 0;
  for (let i = 0; i < a.potential.length; i++) {
    d = Math.max(d, Math.hypot(a.accelerations.x[i] - b.accelerations.x[i], a.accelerations.y[i] - b.accelerations.y[i], a.accelerations.z[i] - b.accelerations.z[i]));
    m = Math.max(m, Math.hypot(b.accelerations.x[i], b.accelerations.y[i], b.accelerations.z[i]));
  }
  return d / m;
}

async function compare(name: string, cells: CellInput, box: Box | undefined, opts: SolverOptions): Promise<boolean> {
  const cpu = await new GravitySolver({ ...opts, backend: 'cpu' }).solveCells(cells, { box });
  const gpu = await new GravitySolver({ ...opts, backend: 'cuda' }).solveCells(cells, { box });
  const pot = relativeErrorStats(gpu.potential, cpu.potential).maxRelError;
  const acc = accDiff(gpu, cpu);
  const sameCounts =
    gpu.stats.approxInteractionsPerCell === cpu.stats.approxInteractionsPerCell &&
    gpu.stats.directInteractionsPerCell === cpu.stats.directInteractionsPerCell;
  const ok = pot <= 1e-5 && acc <= 1e-5 && sameCounts;
  console.log(JSON.stringify({ case: name, cells: cpu.stats.cells, ...opts, maxRelPotentialDiff: pot, accelerationDiff: acc, sameCounts,
    interactionsPerCell: gpu.stats.interactionsPerCell, cpuSeconds: cpu.stats.seconds.total, gpuSeconds: gpu.stats.seconds.total, ok }));
  return ok;
}

const { values } = parseArgs({ options: { levels: { type: 'string' } } });
const levels = Number(values.levels ?? 6);
let ok = true;
const mac = maclaurinProblem({ levels });
const o = mac.mesh.options;
const box: Box = { lo: [...o.domainLo], hi: [...o.domainHi] };
for (const opts of [{ order: 2 as const, accelerations: true }, { order: 1 as const }, { order: 2 as const, walk: 'vote' as const }, { order: 2 as const, mac: 'bonsai' as const, theta: 0.3 }])
  ok = (await compare(`maclaurin-levels-${levels}`, mac.cells, box, { G: 6.674e-8, ...opts })) && ok;
const amr = clustered(400_000);
for (const opts of [{ order: 2 as const, accelerations: true }, { order: 1 as const, theta: 0.75 }])
  ok = (await compare('clustered-400k', amr, undefined, { G: 1, ...opts })) && ok;
process.exitCode = ok ? 0 : 1;
