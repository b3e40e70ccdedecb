// Run under mpirun by test/mpi.test.ts: a refined dense blob in a periodic box (fully periodic, and periodic in x
// and y only), solved on every rank's chunk of the mesh with the others (distributed), against a single-process
// solve of the whole mesh that each rank makes itself. Prints one JSON line per rank.
// --backend cpu|cuda|mixed (default auto: the CPU on CI): the distributed solve and the reference run on it
// ('mixed': even ranks on the GPU, odd ranks on the CPU, the reference on the CPU); bench/gpu/device-check.sh step mpi
// runs it with cuda and mixed.
import { GravitySolver, fillVariable, mpiWorld, refineMesh, uniformMesh } from '../../dist/solver/index.js';
import { backendFromArgs } from './common.mjs';

const { rank, size } = mpiWorld();
const { choice: backendChoice, backend } = backendFromArgs(rank);
const refBackend = backendChoice === 'mixed' ? 'cpu' : backendChoice;
function mesh(background = 0) {
  const m = uniformMesh({ lrefineMax: 4, level: 2 });
  const c = [0.62, 0.41, 0.55];
  refineMesh(m, (mm, b) => {
    const { lo, hi } = mm.block(b);
    let d2 = 0;
    for (let d = 0; d < 3; d++) d2 += Math.max(lo[d] - c[d], 0, c[d] - hi[d]) ** 2;
    return d2 < 0.1 * 0.1;
  });
  fillVariable(m, 'dens', (x, y, z) => background + 1 + 50 * Math.exp(-((x - c[0]) ** 2 + (y - c[1]) ** 2 + (z - c[2]) ** 2) / 0.003));
  return m;
}
const out = { rank, size };
// 'background': the blob on a uniform density 1.2e4, about 1e4 times the mesh's mean of 1.05 (the density contrast,
// issue #21): the ranks must share the mean density they remove
for (const [name, boundary, bg] of [['periodic', 'periodic', 0], ['layer', { x: 'periodic', y: 'periodic', z: 'isolated' }, 0],
  ['background', 'periodic', 1e4 * 1.2]]) {
  const m = mesh(bg);
  const ref = mesh(bg);
  const opts = { G: 1, threads: 1, accelerations: true, boundary };
  const r = await new GravitySolver({ ...opts, backend }).solve(m);
  await new GravitySolver({ ...opts, backend: refBackend, distributed: false }).solve(ref);
  const leaves = m.leafBlocks();
  const cpb = m.cellsPerBlock;
  const begin = Math.floor((leaves.length * rank) / size), end = Math.floor((leaves.length * (rank + 1)) / size);
  let worst = 0, scale = 0, accWorst = 0, accScale = 0;
  for (const b of leaves) for (let q = 0; q < cpb; q++) {
    scale = Math.max(scale, Math.abs(ref.variable('gpot')[b * cpb + q]));
    accScale = Math.max(accScale, Math.abs(ref.variable('gacx')[b * cpb + q]));
  }
  for (const b of leaves.slice(begin, end))
    for (let q = 0; q < cpb; q++) {
      const i = b * cpb + q;
      worst = Math.max(worst, Math.abs(m.variable('gpot')[i] - ref.variable('gpot')[i]));
      accWorst = Math.max(accWorst, Math.abs(m.variable('gacx')[i] - ref.variable('gacx')[i]));
    }
  out[name] = { cells: r.stats.cells, ranks: r.stats.ranks, backend: r.stats.distributed?.backend ?? r.stats.backend,
    potentialDiff: worst / scale, accelerationDiff: accWorst / accScale, bytesSent: r.stats.distributed?.bytesSent ?? 0,
    meanDensity: r.stats.meanDensity, meanPotential: r.stats.meanPotential / scale };
}
// A uniform 24^3 grid with a density wave and a clump, cut into slabs in z (one per rank): with few ranks every slab
// borders the others through a periodic face, the case where whole trees used to travel.
{
  const n = 24, h = 1 / n, total = n * n * n;
  const all = { x: new Float64Array(total), y: new Float64Array(total), z: new Float64Array(total), mass: new Float64Array(total), size: new Float64Array(total) };
  for (let k = 0, i = 0; k < n; k++)
    for (let j = 0; j < n; j++)
      for (let q = 0; q < n; q++, i++) {
        const x = (q + 0.5) * h, y = (j + 0.5) * h, z = (k + 0.5) * h;
        const rho = 1 + 0.5 * Math.sin(2 * Math.PI * (x + 2 * z)) + 20 * Math.exp(-((x - 0.3) ** 2 + (y - 0.7) ** 2 + (z - 0.45) ** 2) / 0.004);
        all.x[i] = x; all.y[i] = y; all.z[i] = z; all.mass[i] = rho * h ** 3; all.size[i] = h;
      }
  const b = Math.floor((n * rank) / size) * n * n, e = Math.floor((n * (rank + 1)) / size) * n * n;
  const part = (c) => ({ x: c.x.subarray(b, e), y: c.y.subarray(b, e), z: c.z.subarray(b, e), mass: c.mass.subarray(b, e), size: c.size.subarray(b, e) });
  // theta 0.25: slabs that do not follow the octree's cuts (3 ranks) give trees that differ from the one-process
  // tree, and at theta 0.5 the two answers differ by their approximation errors (1.5e-4 of max |phi| here)
  const opts = { G: 1, threads: 1, theta: 0.25, accelerations: true, boundary: 'periodic' };
  const box = { box: { lo: [0, 0, 0], hi: [1, 1, 1] } };
  const r = await new GravitySolver({ ...opts, backend }).solveCells(part(all), box);
  const ref = await new GravitySolver({ ...opts, backend: refBackend, distributed: false }).solveCells(all, box);
  let worst = 0, scale = 0, accWorst = 0, accScale = 0;
  for (let i = 0; i < total; i++) {
    scale = Math.max(scale, Math.abs(ref.potential[i]));
    accScale = Math.max(accScale, Math.abs(ref.accelerations.z[i]));
  }
  for (let i = b; i < e; i++) {
    worst = Math.max(worst, Math.abs(r.potential[i - b] - ref.potential[i]));
    accWorst = Math.max(accWorst, Math.abs(r.accelerations.z[i - b] - ref.accelerations.z[i]));
  }
  out.slabs = { cells: total, ranks: r.stats.ranks, backend: r.stats.distributed?.backend ?? r.stats.backend,
    potentialDiff: worst / scale, accelerationDiff: accWorst / accScale, bytesSent: r.stats.distributed?.bytesSent ?? 0,
  };
}
console.log(JSON.stringify(out));
