// Run under mpirun -np 10 by test/mpi.test.ts: each rank receives 9 LETs, more than one virtual node's fan-out (8), so the
// received forest has two levels of virtual nodes above the LETs' roots (let/let.h LetForestLayout). Random clumped
// cells, a chunk per rank in the caller's order (so the chunks overlap in space); the gathered potential against the
// one-process solve and against direct summation. Isolated and periodic boxes. Rank 0 prints one JSON line.
import { GravitySolver, gatherToRoot, mpiWorld } from '../../dist/solver/index.js';
import { rng } from './common.mjs';

const { rank, size } = mpiWorld();
const n = 2700, h = 1 / 64, r = rng(7);
const all = { x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n), mass: new Float64Array(n), size: new Float64Array(n) };
for (let i = 0; i < n; i++) {
  // a third in a clump, the rest spread over the unit box; a chunk of ranks sees both
  const c = i % 3 === 0;
  all.x[i] = c ? 0.3 + 0.1 * r() : r();
  all.y[i] = c ? 0.6 + 0.1 * r() : r();
  all.z[i] = c ? 0.4 + 0.1 * r() : r();
  all.mass[i] = 0.5 + r();
  all.size[i] = h;
}
const b = Math.floor((n * rank) / size), e = Math.floor((n * (rank + 1)) / size);
const mine = { x: all.x.subarray(b, e), y: all.y.subarray(b, e), z: all.z.subarray(b, e), mass: all.mass.subarray(b, e), size: all.size.subarray(b, e) };
const box = { box: { lo: [0, 0, 0], hi: [1, 1, 1] } };
const out = { ranks: size };
for (const boundary of ['isolated', 'periodic']) {
  const opts = { G: 1, theta: 0.5, threads: 1, boundary };
  const res = await new GravitySolver(opts).solveCells(mine, box);
  const phi = await gatherToRoot(res.potential);
  const lets = await gatherToRoot(Float64Array.from([res.stats.distributed?.letsReceived ?? 0]));
  if (rank === 0) {
    const one = await new GravitySolver({ ...opts, threads: 0, distributed: false }).solveCells(all, box);
    const direct = boundary === 'isolated' ? await new GravitySolver({ G: 1, threads: 0, distributed: false }).directCells(all, box) : null;
    // the one-process tree's own error: against direct summation, or (periodic) a converged walk at theta 0.15
    const exact = direct ?? (await new GravitySolver({ ...opts, theta: 0.15, threads: 0, distributed: false }).solveCells(all, box));
    let vs1 = 0, vsDirect = 0, oneErr = 0, distErr = 0, scale = 0;
    for (let i = 0; i < n; i++) scale = Math.max(scale, Math.abs(one.potential[i]));
    for (let i = 0; i < n; i++) {
      vs1 = Math.max(vs1, Math.abs(phi[i] - one.potential[i]) / scale);
      oneErr = Math.max(oneErr, Math.abs(one.potential[i] - exact.potential[i]) / scale);
      distErr = Math.max(distErr, Math.abs(phi[i] - exact.potential[i]) / scale);
      if (direct) vsDirect = Math.max(vsDirect, Math.abs(phi[i] - direct.potential[i]) / Math.abs(direct.potential[i]));
    }
    out[boundary] = { vsSingle: vs1, singleError: oneErr, distributedError: distErr, vsDirect: direct ? vsDirect : null, letsReceived: Array.from(lets) };
  }
}
if (rank === 0) console.log(JSON.stringify(out));
