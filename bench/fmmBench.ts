/**
 * method 'fmm' against the tree on the same cells, in one process: each configuration solved in turn, `repeat`
 * rounds (the machine is shared: best of the rounds, and the ratio to the FMM's best is the figure to read), with
 * max relative errors against direct summation at 1000 target cells plus the 8 corner cells
 * (validation/directAtTargets.ts) and |sum m a| / sum |m a| with accelerations.
 * Problems: uniform N^3 grid with random masses (the prototype's), the MacLaurin mesh (validation/), random AMR
 * (validation/randomAmr.ts). G = 1, no self term, backend cpu.
 * Run: `node dist/bench/fmmBench.js --problem uniform --grid 64 --thetas 0.5,0.3 --repeat 3 [--accel]
 * [--threads N] [--fmm-order 7 --fmm-theta 0.65 --fmm-tol 2e-4 --fmm-acc-tol 5e-5]` (--problem maclaurin --levels 5;
 * --problem amr --levels 4). Prints a table, or JSON with --json.
 */
import { parseArgs } from 'node:util';
import { GravitySolver } from '../solver/gravitySolver.js';
import type { SolverOptions } from '../solver/options.js';
import type { SolveStats } from '../solver/gravitySolver.js';
import { directAtTargets, targetErrors } from '../validation/directAtTargets.js';
import { maclaurinProblem } from '../validation/maclaurinSetup.js';
import { randomAmrCells } from '../validation/randomAmr.js';
import { rng } from '../validation/random.js';

interface Cells {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  mass: Float64Array;
  size: Float64Array;
}

function uniformRandom(n: number): Cells {
  const u = rng(5);
  const N = n ** 3, h = 1 / n;
  const c: Cells = { x: new Float64Array(N), y: new Float64Array(N), z: new Float64Array(N), mass: new Float64Array(N), size: new Float64Array(N).fill(h) };
  let k = 0;
  for (let a = 0; a < n; a++)
    for (let b = 0; b < n; b++)
      for (let i = 0; i < n; i++, k++) {
        c.x[k] = (i + 0.5) * h;
        c.y[k] = (b + 0.5) * h;
        c.z[k] = (a + 0.5) * h;
        c.mass[k] = u() * h ** 3;
      }
  return c;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      problem: { type: 'string', default: 'uniform' },
      grid: { type: 'string', default: '64' },
      levels: { type: 'string', default: '5' },
      thetas: { type: 'string', default: '0.5,0.3' },
      repeat: { type: 'string', default: '3' },
      threads: { type: 'string', default: '0' },
      accel: { type: 'boolean', default: false },
      'fmm-order': { type: 'string' },
      'fmm-theta': { type: 'string' },
      'fmm-tol': { type: 'string' },
      'fmm-acc-tol': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const problem = values.problem!;
  const cells: Cells =
    problem === 'maclaurin'
      ? maclaurinProblem({ levels: Number(values.levels) }).cells
      : problem === 'amr'
        ? randomAmrCells({ levels: Number(values.levels), seed: 3 })
        : uniformRandom(Number(values.grid));
  const common: SolverOptions = {
    G: 1,
    selfPotential: 'none',
    backend: 'cpu',
    accelerations: values.accel,
    threads: Number(values.threads),
  };
  const fmm: SolverOptions = {
    method: 'fmm',
    ...(values['fmm-order'] ? { fmmOrder: Number(values['fmm-order']) } : {}),
    ...(values['fmm-theta'] ? { fmmTheta: Number(values['fmm-theta']) } : {}),
    ...(values['fmm-tol'] ? { fmmTolerance: Number(values['fmm-tol']) } : {}),
    ...(values['fmm-acc-tol'] ? { fmmAccelTolerance: Number(values['fmm-acc-tol']) } : {}),
  };
  const configs: { name: string; options: SolverOptions }[] = [
    { name: 'fmm', options: fmm },
    ...values.thetas!.split(',').map((t) => ({ name: `tree theta ${t}`, options: { method: 'tree' as const, theta: Number(t) } })),
  ];
  const ref = directAtTargets(cells);
  const best = configs.map(() => ({ seconds: Infinity, stats: undefined as SolveStats | undefined, errors: { potential: 0, acceleration: 0, accelerationOfMax: 0 }, momentum: 0 }));
  for (let round = 0; round < Number(values.repeat); round++) {
    for (const [i, c] of configs.entries()) {
      const r = await new GravitySolver({ ...common, ...c.options }).solveCells(cells);
      if (r.stats.seconds.total >= best[i].seconds) continue;
      let momentum = 0;
      if (r.accelerations) {
        const a = r.accelerations;
        let px = 0, py = 0, pz = 0, total = 0;
        for (let k = 0; k < cells.x.length; k++) {
          px += cells.mass[k] * a.x[k];
          py += cells.mass[k] * a.y[k];
          pz += cells.mass[k] * a.z[k];
          total += cells.mass[k] * Math.hypot(a.x[k], a.y[k], a.z[k]);
        }
        momentum = Math.hypot(px, py, pz) / total;
      }
      best[i] = { seconds: r.stats.seconds.total, stats: r.stats, errors: targetErrors(ref, r.potential, r.accelerations), momentum };
    }
  }
  const rows = configs.map((c, i) => {
    const b = best[i];
    const s = b.stats!;
    return {
      config: c.name,
      seconds: b.seconds,
      cellsPerSecond: cells.x.length / b.seconds,
      speedOfFmm: b.seconds / best[0].seconds,
      phiMaxRelError: b.errors.potential,
      ...(values.accel ? { accMaxRelError: b.errors.acceleration, accErrorOfMax: b.errors.accelerationOfMax, momentum: b.momentum } : {}),
      approxPerCell: s.approxInteractionsPerCell,
      directPerCell: s.directInteractionsPerCell,
      threads: s.threads,
    };
  });
  if (values.json) {
    console.log(JSON.stringify({ problem, cells: cells.x.length, repeat: Number(values.repeat), rows }));
    return;
  }
  console.log(`${problem}: ${cells.x.length} cells, best of ${values.repeat} interleaved rounds, ${rows[0].threads} threads`);
  for (const r of rows)
    console.log(
      `  ${r.config.padEnd(16)} ${r.seconds.toFixed(3)} s  ${r.cellsPerSecond.toExponential(2)} cells/s  fmm speed-up ${r.speedOfFmm.toFixed(2)}x  ` +
        `phi max ${r.phiMaxRelError.toExponential(2)}` +
        (values.accel ? `  acc max ${r.accMaxRelError!.toExponential(2)} (of max |a| ${r.accErrorOfMax!.toExponential(2)}), momentum ${r.momentum!.toExponential(1)}` : '') +
        `  per cell: ${r.approxPerCell.toFixed(1)} approx + ${r.directPerCell.toFixed(0)} direct`,
    );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
