// Run under mpirun by test/mpi.test.ts: one rank passes bad input (a NaN mass caught natively, mismatched array
// lengths caught in TypeScript, a result array of the wrong length); every rank must get that rank's error instead of waiting for ever. Each
// rank prints one JSON line per case.
import { GravitySolver, mpiWorld } from '../../dist/solver/index.js';
import { scatteredCells } from './common.mjs';

const { rank, size } = mpiWorld();
const bad = size - 1;
const n = 200;
const cells = (seed) => scatteredCells(n, seed);

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
// system solves (issue #18): a NaN probe, a repeated target on one rank (TypeScript's checks), and a probe outside the
// box along the isolated axis of a slab (the native check, inside the ranks' agreement)
const slab = new GravitySolver({ G: 1, threads: 1, backend: 'cpu', boundary: { x: 'periodic', y: 'periodic', z: 'isolated' } });
const systemCases = {
  'nan-probe': [solver, { probes: { x: [0.5, NaN], y: [0.5, 0.5], z: [0.5, 0.5] } }, {}],
  'repeated-target': [solver, {}, { targets: [3, 4, 3] }],
  'probe-outside-slab': [slab, { probes: { x: [0.5], y: [0.5], z: [1.5] } }, { box: { lo: [0, 0, 0], hi: [1, 1, 1] } }],
};
for (const [name, [s, parts, opts]] of Object.entries(systemCases)) {
  const good = name === 'probe-outside-slab' ? { box: opts.box } : {};
  try {
    await s.solveSystem({ cells: cells(rank), ...(rank === bad ? parts : {}) }, rank === bad ? opts : good);
    console.log(JSON.stringify({ rank, case: name, ok: true }));
  } catch (err) {
    console.log(JSON.stringify({ rank, case: name, ok: false, name: err.name, code: err.code, message: err.message }));
  }
}
// the solver is still usable afterwards on every rank
const r = await solver.solveCells(cells(rank));
console.log(JSON.stringify({ rank, case: 'after', ok: r.potential.length === n && r.stats.ranks === size }));
