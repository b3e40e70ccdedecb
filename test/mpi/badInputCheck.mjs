// Run under mpirun by test/mpi.test.ts: one rank passes bad input (a NaN mass caught natively, mismatched array
// lengths caught in TypeScript, a result array of the wrong length); every rank must get that rank's error instead of waiting for ever. Each
// rank prints one JSON line per case.
import { GravitySolver, mpiWorld } from '../../dist/solver/index.js';

const { rank, size } = mpiWorld();
const bad = size - 1;
const n = 200;
function cells(seed) {
  const c = { x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n), mass: new Float64Array(n).fill(1), size: new Float64Array(n).fill(0.01) };
  for (let i = 0; i < n; i++) {
    c.x[i] = ((i * 37 + seed) % 101) / 101;
    c.y[i] = ((i * 53 + seed) % 103) / 103;
    c.z[i] = ((i * 71 + seed) % 107) / 107;
  }
  return c;
}

const cases = {
  'nan-mass': (c) => {
    c.mass[17] = NaN;
    return c;
  },
  'mismatched-lengths': (c) => ({ ...c, y: c.y.subarray(0, n - 1) }),
  'short-output': (c) => c, // with a result array one element short (below)
};
const solver = new GravitySolver({ G: 1, threads: 1 });
for (const [name, spoil] of Object.entries(cases)) {
  let c = cells(rank);
  if (rank === bad) c = spoil(c);
  try {
    const out = { potential: new Float64Array(rank === bad && name === 'short-output' ? n - 1 : n) };
    await solver.solveCells(c, { out });
    console.log(JSON.stringify({ rank, case: name, ok: true }));
  } catch (err) {
    console.log(JSON.stringify({ rank, case: name, ok: false, name: err.name, code: err.code, message: err.message }));
  }
}
// the solver is still usable afterwards on every rank
const r = await solver.solveCells(cells(rank));
console.log(JSON.stringify({ rank, case: 'after', ok: r.potential.length === n && r.stats.ranks === size }));
