/**
 * GPU-vs-CPU parity through the public API, on the MacLaurin mesh (the "levels 6" check) and on a
 * random AMR mesh: max relative potential difference, acceleration difference relative to the
 * largest acceleration, and whether the interaction counts are identical. Run on a GPU machine:
 *   node dist/bench/gpuParity.js [--levels 6]
 * Prints one JSON line per case and exits non-zero if any case misses 1e-5 or the counts differ.
 */
import { parseArgs } from 'node:util';
import { GravitySolver, type SolveResult } from '../solver/gravitySolver.js';
import type { SolverOptions } from '../solver/options.js';
import type { CellInput, Box } from '../solver/cells.js';
import { maclaurinProblem } from '../validation/maclaurinSetup.js';
import { relativeErrorStats } from '../validation/errorMetrics.js';
import { extractCells, fillVariable, refineMesh, uniformMesh } from '../mesh/index.js';

/**
 * A random AMR mesh: a few Plummer clumps at seeded random places; blocks refine to lrefineMax where they hold a
 * clump's core (or a density jump across the block), then the mesh is 2:1 balanced. Cells never overlap, as in a
 * hydro code's mesh (a cloud of overlapping point cells is not an input a mesh solver gets).
 */
function randomAmrMesh(seed: number, lrefineMax: number): { cells: CellInput; box: Box } {
  let a = seed >>> 0;
  const rnd = () => {
    a = (a * 1664525 + 1013904223) >>> 0;
    return a / 4294967296;
  };
  const clumps = Array.from({ length: 5 }, () => ({
    c: [0.15 + 0.7 * rnd(), 0.15 + 0.7 * rnd(), 0.15 + 0.7 * rnd()],
    r: 0.01 + 0.04 * rnd(),
    m: 0.5 + rnd(),
  }));
  const rho = (x: number, y: number, z: number) => {
    let v = 1e-3;
    for (const k of clumps) {
      const d2 = ((x - k.c[0]) ** 2 + (y - k.c[1]) ** 2 + (z - k.c[2]) ** 2) / (k.r * k.r);
      v += (k.m / k.r ** 3) * (1 + d2) ** -2.5;
    }
    return v;
  };
  const mesh = uniformMesh({ lrefineMax, level: 2 });
  refineMesh(mesh, (m, b) => {
    const { lo, hi } = m.block(b);
    const w = hi[0] - lo[0];
    // refine while a clump's core (a few radii) reaches into the block and the block is coarser than the core
    return clumps.some((k) => {
      let d2 = 0;
      for (let d = 0; d < 3; d++) d2 += Math.max(lo[d] - k.c[d], 0, k.c[d] - hi[d]) ** 2;
      return Math.sqrt(d2) < 3 * k.r && w > k.r;
    });
  });
  fillVariable(mesh, 'dens', rho);
  const cells = extractCells(mesh, 'dens');
  const o = mesh.options;
  return { cells, box: { lo: [...o.domainLo], hi: [...o.domainHi] } };
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
for (const seed of [1, 2]) {
  const amr = randomAmrMesh(seed, 7);
  const name = `random-amr-seed${seed}-${amr.cells.x.length}`;
  for (const opts of [{ order: 2 as const, accelerations: true }, { order: 1 as const, theta: 0.75 }])
    ok = (await compare(name, amr.cells, amr.box, { G: 6.674e-8, ...opts })) && ok;
}
process.exitCode = ok ? 0 : 1;
