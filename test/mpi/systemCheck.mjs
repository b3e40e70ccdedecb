// Run under mpirun -np 3 by test/mpi.test.ts (issue #18): a system solve where each rank passes its own cells,
// probes and subset of targets. Rank 2 has no cells, only probes (it must still receive every LET); rank 0's probes
// lie outside its cells' box (the LETs it receives must cover them). The gathered probe and target results against
// one process solving everything, the probes against direct summation, and each rank's subset and probes bitwise the
// same distributed system without the subset (potential and accelerations). Isolated and periodic boxes. Then bad
// subsets (an index past the rank's cells on rank 1, a repeated index on rank 0): that rank's typed error on every
// rank, nobody waits, the solver usable after. Rank 0 prints one JSON line. --backend cuda or mixed (a GPU host:
// bench/gpu/device-check.sh step 'mpi'): the same on GPU ranks, or GPU and CPU ranks mixed (the one-process
// references on rank 0's backend).
import { GravitySolver, gatherToRoot, mpiWorld } from '../../dist/solver/index.js';
import { backendFromArgs, rng } from './common.mjs';

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
// the ranks' backend: 'cpu' unless --backend cuda (GPU ranks) or mixed (GPU and CPU ranks) asks otherwise
const { choice, backend: chosen } = backendFromArgs(rank);
const backend = choice === 'auto' ? 'cpu' : chosen;
const out = { ranks: size, backend: choice };
const same = (a, b) => Object.is(a, b);
for (const boundary of ['isolated', 'periodic']) {
  const opts = { G: 1, theta: 0.5, threads: 1, boundary, backend, accelerations: true };
  const solver = new GravitySolver(opts);
  const res = await solver.solveSystem({ cells: mine, probes: allProbes[rank] }, { box, targets: targetsOf(rank) });
  // the same system without the subset: the same LETs, so the subset must be its values bit for bit
  const full = await solver.solveSystem({ cells: mine, probes: allProbes[rank] }, { box });
  let differ = 0;
  targetsOf(rank).forEach((j, k) => {
    if (!same(res.cells.potential[k], full.cells.potential[j])) differ++;
    for (const d of ['x', 'y', 'z']) if (!same(res.cells.accelerations[d][k], full.cells.accelerations[d][j])) differ++;
  });
  for (let i = 0; i < np; i++) {
    if (!same(res.probes.potential[i], full.probes.potential[i])) differ++;
    for (const d of ['x', 'y', 'z']) if (!same(res.probes.accelerations[d][i], full.probes.accelerations[d][i])) differ++;
  }
  const differs = await gatherToRoot(Float64Array.from([differ]));
  // the cells computed and the groups walked: the subset's (fewer groups) against the full solve's
  const counts = await gatherToRoot(Float64Array.from([res.cells.potential.length, res.stats.system.targets,
    res.stats.system.targetGroups, full.stats.system.targetGroups]));
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
    const c = Array.from(counts);
    out[boundary] = {
      probes: probes.length, targets: targets.length, vsSingle, targetsVsSingle, vsDirect,
      letsReceived: Array.from(lets), notBitwise: Array.from(differs),
      perRank: [0, 1, 2].map((q) => ({ results: c[4 * q], statsTargets: c[4 * q + 1], targetGroups: c[4 * q + 2], fullGroups: c[4 * q + 3] })),
    };
  }
}

// ---- bad subsets: an index past the rank's cells (rank 1), a repeated index (rank 0): that rank's typed error on
// every rank, nobody waits; then a good solve
out.badTargets = {};
for (const [name, badRank, bad] of [['outOfRange', 1, [3, e - b]], ['repeated', 0, [4, 9, 4]]]) {
  const solver = new GravitySolver({ G: 1, theta: 0.5, threads: 1, backend });
  let error = null;
  try {
    await solver.solveSystem({ cells: mine, probes: allProbes[rank] }, { targets: rank === badRank ? bad : targetsOf(rank) });
  } catch (err) {
    error = { name: err.name, code: err.code, message: err.message };
  }
  const ok = await solver.solveSystem({ cells: mine, probes: allProbes[rank] }, { targets: targetsOf(rank) });
  const failed = await gatherToRoot(Float64Array.from([error ? 1 : 0]));
  const after = await gatherToRoot(Float64Array.from([ok.cells.potential.length === targetsOf(rank).length ? 1 : 0]));
  if (rank === 0) out.badTargets[name] = { error, failedOn: Array.from(failed), usableAfter: Array.from(after) };
}
if (rank === 0) console.log(JSON.stringify(out));
