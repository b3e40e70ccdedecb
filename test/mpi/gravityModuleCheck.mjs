// Run under mpirun by test/mpi.test.ts: every rank holds the same mesh; a GravityModule made for it solves with
// the ranks together (each its chunk of the leaf blocks) for two steps. Each rank compares the gpot it wrote (its
// chunk) with a single-process solve of the whole mesh that it makes itself (distributed: false) and prints one
// JSON line.
import { GravityModule, GravitySolver, fillVariable, mpiWorld, refineMesh, uniformMesh } from '../../dist/solver/index.js';

const { rank, size } = mpiWorld();
function mesh() {
  const m = uniformMesh({ lrefineMax: 3, level: 2 });
  refineMesh(m, (mm, b) => mm.block(b).lo[0] < 0.4 && mm.block(b).lo[1] < 0.4);
  fillVariable(m, 'dens', (x, y, z) => 1 + 5 * Math.exp(-((x - 0.3) ** 2 + (y - 0.3) ** 2 + (z - 0.5) ** 2) / 0.02));
  return m;
}
const m = mesh();
const gravity = GravityModule.init(m, { G: 1, threads: 1, accelerations: true });
const reference = mesh();
const single = new GravitySolver({ G: 1, threads: 1, accelerations: true, distributed: false });
let worst = 0;
let written = 0;
for (let step = 0; step < 2; step++) {
  if (step === 1) for (const mm of [m, reference]) for (const [i, v] of mm.variable('dens').entries()) mm.variable('dens')[i] = 2 * v;
  const r = await gravity.computePotential(m);
  await single.solve(reference);
  written = r.stats.cells;
  // compare the cells this rank wrote: its chunk of the leaf blocks
  const leaves = m.leafBlocks();
  const cpb = m.cellsPerBlock;
  const begin = Math.floor((leaves.length * rank) / size), end = Math.floor((leaves.length * (rank + 1)) / size);
  for (const b of leaves.slice(begin, end))
    for (let q = 0; q < cpb; q++) {
      const i = b * cpb + q;
      worst = Math.max(worst, Math.abs(m.variable('gpot')[i] - reference.variable('gpot')[i]) / Math.abs(reference.variable('gpot')[i]));
    }
}
gravity.finalize();
console.log(JSON.stringify({ rank, size, cellsThisRank: written, maxRelDiff: worst }));
