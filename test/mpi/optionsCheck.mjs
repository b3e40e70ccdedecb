// Run under mpirun by test/mpi.test.ts: the last rank passes a different option (G, the boundary, theta, softening),
// then coincident cells (found only after the key sort); every rank must get an error naming the difference
// instead of a silently wrong potential. Each rank prints one JSON line per case.
import { GravitySolver, mpiWorld } from '../../dist/solver/index.js';
import { scatteredCells } from './common.mjs';

const { rank, size } = mpiWorld();
const odd = rank === size - 1;
const n = 200;
const cells = (seed) => scatteredCells(n, seed);
const box = { lo: [0, 0, 0], hi: [1, 1, 1] };
const cases = [
  ['G', { G: 1 }, { G: 2 }],
  ['boundary', { G: 1, boundary: 'isolated' }, { G: 1, boundary: 'periodic' }],
  ['theta', { G: 1, theta: 0.5 }, { G: 1, theta: 0.4 }],
  ['softening', { G: 1, softening: 'spline' }, { G: 1, softening: 'plummer' }],
  ['coincident', { G: 1 }, { G: 1 }],
  ['same', { G: 1 }, { G: 1 }],
];
for (const [name, common, different] of cases) {
  const solver = new GravitySolver({ threads: 1, ...(odd ? different : common) });
  const c = cells(rank);
  if (name === 'coincident' && odd) {
    c.x[150] = c.x[40];
    c.y[150] = c.y[40];
    c.z[150] = c.z[40];
  }
  try {
    const r = await solver.solveCells(c, { box });
    console.log(JSON.stringify({ rank, case: name, ok: true, ranks: r.stats.ranks }));
  } catch (err) {
    console.log(JSON.stringify({ rank, case: name, ok: false, name: err.name, message: err.message }));
  }
}
