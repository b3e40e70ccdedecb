// Run under mpirun -np 3 by test/mpi.test.ts (issue #18): a system solve where each rank passes its own cells,
// probes and subset of targets. Rank 2 has no cells, only probes (it must still receive every LET); rank 0's probes
// lie outside its cells' box (the LETs it receives must cover them). The gathered probe and target results against
// one process solving everything, the probes against direct summation, and each rank's subset and probes bitwise the
// same distributed system without the subset. Isolated and periodic boxes; rank 0
// prints one JSON line.
import { GravitySolver, gatherToRoot, mpiWorld } from '../../dist/solver/index.js';
import { rng } from './common.mjs';

const { rank, size } = mpiWorld();
const n = 3000, h = 1 / 64, r = rng(11);
const all = { x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n), mass: new Float64Array(n), size: new Float64Array(n) };
for (let i = 0; i < n; i++) {
  // rank 0's cells in the lower half of x, rank 1's in the upper half; none on rank 2
  const upper = i >= n / 2;
  all.x[i] = (upper ? 0.5 : 0) + 0.5 * r();
  all.y[i] = r();
  all.z[i] = r();
  all.mass[i] = 0.5 + r();
  all.size[i] = h;
}
const cellsOf = (k) => (k === 2 ? [0, 0] : [(k * n) / 2, ((k + 1) * n) / 2]);
const [b, e] = cellsOf(rank);
const sub = (a) => a.subarray(b, e);
const mine = { x: sub(all.x), y: sub(all.y), z: sub(all.z), mass: sub(all.mass), size: sub(all.size) };
// 30 probes per rank: rank 0's in the upper half (the other rank's cells) and outside the box, the others anywhere
const np = 30, pr = rng(100);
const probesOf = (k) => {
  const p = { x: new Float64Array(np), y: new Float64Array(np), z: new Float64Array(np) };
  for (let i = 0; i < np; i++) {
    p.x[i] = k === 0 ? 0.5 + 0.6 * pr() : pr();
    p.y[i] = pr();
    p.z[i] = pr();
  }
  return p;
};
const allProbes = [0, 1, 2].map(probesOf);
const targetsOf = (k) => (k === 2 ? [] : Array.from({ length: 40 }, (_, j) => (j * 37 + 5 * k) % (n / 2)));
const box = { lo: [0, 0, 0], hi: [1, 1, 1] };
const out = { ranks: size };
for (const boundary of ['isolated', 'periodic']) {
  const opts = { G: 1, theta: 0.5, threads: 1, boundary, backend: 'cpu' };
  const solver = new GravitySolver(opts);
  const res = await solver.solveSystem({ cells: mine, probes: allProbes[rank] }, { box, targets: targetsOf(rank) });
  // the same system without the subset: the same LETs, so the subset must be its values bit for bit
  const full = await solver.solveSystem({ cells: mine, probes: allProbes[rank] }, { box });
  let differ = 0;
  targetsOf(rank).forEach((j, k) => { if (!Object.is(res.cells.potential[k], full.cells.potential[j])) differ++; });
  for (let i = 0; i < np; i++) if (!Object.is(res.probes.potential[i], full.probes.potential[i])) differ++;
  const differs = await gatherToRoot(Float64Array.from([differ]));
  const probes = await gatherToRoot(res.probes.potential);
  const targets = await gatherToRoot(res.cells.potential);
  const lets = await gatherToRoot(Float64Array.from([res.stats.distributed?.letsReceived ?? 0]));
  if (rank === 0) {
    const one = new GravitySolver({ ...opts, threads: 0, distributed: false });
    const cat = (k) => Float64Array.from([0, 1, 2].flatMap((q) => Array.from(allProbes[q][k])));
    const single = await one.solveSystem({ cells: all, probes: { x: cat('x'), y: cat('y'), z: cat('z') } }, { box });
    let scale = 0, vsSingle = 0, targetsVsSingle = 0, vsDirect = 0;
    for (const v of single.cells.potential) scale = Math.max(scale, Math.abs(v));
    for (let i = 0; i < probes.length; i++) vsSingle = Math.max(vsSingle, Math.abs(probes[i] - single.probes.potential[i]) / scale);
    let t = 0;
    for (const k of [0, 1, 2])
      for (const j of targetsOf(k)) {
        const g = cellsOf(k)[0] + j;
        targetsVsSingle = Math.max(targetsVsSingle, Math.abs(targets[t++] - single.cells.potential[g]) / scale);
      }
    if (boundary === 'isolated') {
      const direct = await one.solveSystem({ cells: all, probes: { x: cat('x'), y: cat('y'), z: cat('z') } }, { method: 'direct' });
      for (let i = 0; i < probes.length; i++)
        vsDirect = Math.max(vsDirect, Math.abs(probes[i] - direct.probes.potential[i]) / Math.abs(direct.probes.potential[i]));
    }
    out[boundary] = {
      probes: probes.length, targets: targets.length, vsSingle, targetsVsSingle, vsDirect,
      letsReceived: Array.from(lets), notBitwise: Array.from(differs),
    };
  }
}
if (rank === 0) console.log(JSON.stringify(out));
