/**
 * method 'fmm' in tall sheets (issue #20): boxes periodic in x and y whose isolated side z is long, where the far
 * pass (native/fmm/far_images.h) has many cubes of a quarter period. Uniform grids of random densities in
 * [0.5, 1.5), CPU backend, G = 1: the sheet's solve and the isolated FMM of the same grid, each the best of
 * --repeat after a first solve (the sheet's first pays its far kernel), wall ms.
 *
 *   node dist/bench/fmmTallBench.js [--repeat 2] [--json]
 */
import { GravitySolver } from '../solver/gravitySolver.js';
import { rng } from '../validation/random.js';
import { boxGridCells } from '../validation/gridCells.js';

const repeat = Number(process.argv.includes('--repeat') ? process.argv[process.argv.indexOf('--repeat') + 1] : '2');
const json = process.argv.includes('--json');

type Vec3 = [number, number, number];
/** n cubic cells of side L[0] / n[0] over [0, L), random masses. */
function grid(n: Vec3, L: Vec3) {
  const random = rng(n[2]);
  return boxGridCells(n, L, () => 0.5 + random());
}

const cases: [Vec3, Vec3][] = [[[16, 16, 256], [1, 1, 16]], [[16, 16, 64], [1, 1, 4]], [[32, 32, 128], [1, 1, 4]]];
const rows = [];
for (const [n, L] of cases) {
  const cells = grid(n, L);
  const box = { box: { lo: [0, 0, 0] as Vec3, hi: L } };
  const ms: Record<string, number> = {};
  for (const [name, boundary] of [['sheet', { x: 'periodic', y: 'periodic', z: 'isolated' }], ['isolated', 'isolated']] as const) {
    const s = new GravitySolver({ G: 1, backend: 'cpu', method: 'fmm', boundary });
    await s.solveCells(cells, box);
    let best = Infinity;
    for (let r = 0; r < repeat; r++) best = Math.min(best, (await s.solveCells(cells, box)).stats.seconds.total);
    ms[name] = 1e3 * best;
  }
  rows.push({ cells: n.join(' x '), box: L.join(' x '), sheetMs: ms.sheet, isolatedMs: ms.isolated });
}
if (json) console.log(JSON.stringify(rows, null, 1));
else for (const r of rows) console.log(`${r.cells.padEnd(16)} box ${r.box.padEnd(10)} sheet ${r.sheetMs.toFixed(1).padStart(8)} ms  isolated fmm ${r.isolatedMs.toFixed(1).padStart(8)} ms`);
