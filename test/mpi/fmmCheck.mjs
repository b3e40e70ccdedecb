// Run under mpirun by test/mpi.test.ts: method 'fmm' over MPI ranks (issue #20; cpu/fmm_ranks.h). Every rank builds
// the same problems, solves its share of each mesh's cells as a collective (argument 'blocks', the default: a
// contiguous chunk of the leaf blocks in Morton order; 'cells': runs of cells cut anywhere, or cells scattered at
// random, so that the one-process tree's nodes and leaves lie on several ranks); rank 0
// gathers the potential and accelerations and prints one JSON line comparing them with the one-process FMM of all
// cells and with physics: direct summation (isolated boxes) or an independent Ewald sum of the contrast masses at 40
// cells (fully periodic boxes, validation/ewaldAtTargets.ts), for both the distributed and the one-process answer.
// --backend cpu|cuda|auto|mixed (default cpu; common.mjs backendFromArgs): every solve of the check, the one-process
// reference included, runs on it ('mixed': even ranks on the GPU, odd ranks on the CPU; the reference on rank 0's);
// off the CPU each scenario is also solved on CPU ranks with the same split and by the CPU in one process, and the
// rows say how far the GPU's answer is from both (the same lists: rounding alone). bench/gpu/device-check.sh step
// fmmmpi runs it with cuda and mixed.
import { GravitySolver, extractCells, fillVariable, gatherToRoot, mpiWorld, refineMesh, uniformMesh } from '../../dist/solver/index.js';
import { ewaldAtTargets } from '../../dist/validation/ewaldAtTargets.js';
import { backendFromArgs, rng } from './common.mjs';

const { rank, size } = mpiWorld();
const { choice: backendChoice, backend } = process.argv.includes('--backend') ? backendFromArgs(rank) : { choice: 'cpu', backend: 'cpu' };
const base = { G: 1, threads: 1, method: 'fmm', backend, selfPotential: 'none', accelerations: true };
const unitBox = { box: { lo: [0, 0, 0], hi: [1, 1, 1] } };

/** 32^3 cells in 8^3 blocks of random densities (the same on every rank: one seed, one order). */
function uniform32() {
  const m = uniformMesh({ lrefineMax: 3, level: 3 });
  const r = rng(11);
  fillVariable(m, 'dens', () => 0.5 + r());
  return m;
}

/** A randomly refined mesh (4^3 blocks, levels 2-4) with a lumpy density. */
function randomAmr() {
  const r = rng(42);
  const m = uniformMesh({ lrefineMax: 4, level: 2, nxb: 4, nyb: 4, nzb: 4 });
  refineMesh(m, () => r() < 0.5);
  const h = rng(7);
  const lumps = Array.from({ length: 6 }, () => [h(), h(), h(), 0.05 + 0.1 * h()]);
  fillVariable(m, 'dens', (x, y, z) => 0.01 + lumps.reduce((s, [a, b, c, w]) => s + Math.exp(-((x - a) ** 2 + (y - b) ** 2 + (z - c) ** 2) / (w * w)), 0));
  return m;
}

function slice(c, b, e) {
  return { x: c.x.subarray(b, e), y: c.y.subarray(b, e), z: c.z.subarray(b, e), mass: c.mass.subarray(b, e), size: c.size.subarray(b, e) };
}
function pick(c, idx) {
  const at = (v) => Float64Array.from(idx, (i) => v[i]);
  return { x: at(c.x), y: at(c.y), z: at(c.z), mass: at(c.mass), size: at(c.size) };
}
/** values gathered in rank order at the cells `idx` (also gathered) back into the cells' order */
function unscatter(values, idx, n) {
  const out = new Float64Array(n);
  for (let k = 0; k < idx.length; k++) out[idx[k]] = values[k];
  return out;
}

/** max |a - b| / max |b| over scalars, and over vectors (components in arrays) */
function scalarDiff(a, b) {
  let d = 0, s = 0;
  for (let i = 0; i < b.length; i++) { d = Math.max(d, Math.abs(a[i] - b[i])); s = Math.max(s, Math.abs(b[i])); }
  return d / s;
}
function vectorDiff(a, b) {
  let d = 0, s = 0;
  for (let i = 0; i < b[0].length; i++) {
    d = Math.max(d, Math.hypot(a[0][i] - b[0][i], a[1][i] - b[1][i], a[2][i] - b[2][i]));
    s = Math.max(s, Math.hypot(b[0][i], b[1][i], b[2][i]));
  }
  return d / s;
}

// the set of splits: 'blocks' (default; whole blocks per rank) or 'cells' (cuts anywhere: inside blocks and the
// one-process tree's leaves, and cells scattered over the ranks at random)
const set = process.argv[2] !== undefined && !process.argv[2].startsWith('--') ? process.argv[2] : 'blocks';
const report = { ranks: size, set, backend: backendChoice, scenarios: [] };
// name, mesh, boundary, extra options, split: rank weights of whole blocks (null: equal shares), or { cells: weights }
// (contiguous runs of cells cut anywhere), or { scatter: seed } (every cell to a random rank)
const problems = set === 'cells' ? [
  ['uniform32-isolated-cut-cells', uniform32, 'isolated', {}, { cells: [1, 1.37, 0.71, 1.13].slice(0, size) }],
  ['random-amr-periodic-cut-cells', randomAmr, 'periodic', {}, { cells: [0.83, 1.29, 1.02, 0.67].slice(0, size) }],
  ['random-amr-isolated-scattered', randomAmr, 'isolated', {}, { scatter: 5 }],
  ['uniform32-periodic-scattered', uniform32, 'periodic', {}, { scatter: 9 }],
] : [
  ['uniform32-isolated', uniform32, 'isolated', {}],
  ['random-amr-isolated', randomAmr, 'isolated', {}],
  ['uniform32-periodic', uniform32, 'periodic', {}],
  ['random-amr-periodic', randomAmr, 'periodic', {}],
  // a tighter tolerance (the one-process error itself below 1e-6 of max |phi|)
  ['uniform32-periodic-tight', uniform32, 'periodic', { fmmTolerance: 2e-6 }],
  ['random-amr-periodic-tight', randomAmr, 'periodic', { fmmTolerance: 2e-6 }],
];
// rank 1 without cells (it still takes part in every reduction: the MAC's scales, the far images' cubes)
if (size > 1 && set !== 'cells') problems.push(['random-amr-periodic-empty-rank', randomAmr, 'periodic', {}, Array.from({ length: size }, (_, r) => (r === 1 ? 0 : 1))]);
/** this rank's cells (indices into the extracted cells, ascending) */
function cellsOf(split, count, cpb) {
  if (split?.scatter !== undefined) {
    const r = rng(split.scatter);
    const idx = [];
    for (let i = 0; i < count; i++) if (Math.floor(r() * size) === rank) idx.push(i);
    return idx;
  }
  const cells = split?.cells !== undefined;
  const w = (cells ? split.cells : split) ?? Array(size).fill(1), total = w.reduce((a, v) => a + v, 0);
  const unit = cells ? 1 : cpb, units = count / unit;
  const upTo = (q) => Math.floor((units * w.slice(0, q).reduce((a, v) => a + v, 0)) / total) * unit;
  return Array.from({ length: upTo(rank + 1) - upTo(rank) }, (_, k) => upTo(rank) + k);
}
for (const [name, make, boundary, extra, split] of problems) {
  const mesh = make();
  const cells = extractCells(mesh, 'dens');
  const idx = cellsOf(split, cells.count, mesh.cellsPerBlock);
  const mine = pick(cells, idx);
  const opts = { ...base, boundary, ...extra };
  const r = await new GravitySolver(opts).solveCells(mine, unitBox);
  const again = await new GravitySolver(opts).solveCells(mine, unitBox);
  const same = again.potential.every((v, i) => Object.is(v, r.potential[i]));
  const where = await gatherToRoot(Float64Array.from(idx));
  const back = async (v) => unscatter(await gatherToRoot(v), where, cells.count);
  const phi = await back(r.potential);
  const acc = [await back(r.accelerations.x), await back(r.accelerations.y), await back(r.accelerations.z)];
  const d = r.stats.distributed;
  // off the CPU: the same split on CPU ranks (collective, so on every rank), gathered like the GPU's
  const onCpu = backend === 'cpu' && backendChoice === 'cpu' ? null : await new GravitySolver({ ...opts, backend: 'cpu' }).solveCells(mine, unitBox);
  const cpuPhi = onCpu && (await back(onCpu.potential));
  const cpuAcc = onCpu && [await back(onCpu.accelerations.x), await back(onCpu.accelerations.y), await back(onCpu.accelerations.z)];
  const perRank = await gatherToRoot(Float64Array.from([idx.length, d?.letNodesSent ?? 0, d?.letCellsSent ?? 0, d?.bytesSent ?? 0,
    d?.bytesReceived ?? 0, d?.letsSent ?? 0, d?.letsReceived ?? 0, same ? 1 : 0, r.stats.method === 'fmm' ? 1 : 0,
    (d?.backend ?? (size === 1 ? backend : 'cpu')) === 'cuda' ? 1 : 0, r.stats.seconds.total]));
  if (rank !== 0) continue;
  const single = await new GravitySolver({ ...opts, threads: 0, distributed: false }).solveCells(cells, unitBox);
  const sAcc = [single.accelerations.x, single.accelerations.y, single.accelerations.z];
  const row = { name, boundary, tight: extra.fmmTolerance !== undefined, cells: cells.count, potentialVsSingle: scalarDiff(phi, single.potential), accelerationsVsSingle: vectorDiff(acc, sAcc), perRank: [] };
  if (onCpu) {
    const cpuSingle = await new GravitySolver({ ...opts, backend: 'cpu', threads: 0, distributed: false }).solveCells(cells, unitBox);
    const csAcc = [cpuSingle.accelerations.x, cpuSingle.accelerations.y, cpuSingle.accelerations.z];
    row.vsCpuRanks = { potential: scalarDiff(phi, cpuPhi), accelerations: vectorDiff(acc, cpuAcc) };
    row.vsCpuSingle = { potential: scalarDiff(phi, cpuSingle.potential), accelerations: vectorDiff(acc, csAcc) };
  }
  const k = 11;
  for (let p = 0; p < perRank.length; p += k)
    row.perRank.push({ cells: perRank[p], letNodesSent: perRank[p + 1], letCellsSent: perRank[p + 2], bytesSent: perRank[p + 3],
      bytesReceived: perRank[p + 4], letsSent: perRank[p + 5], letsReceived: perRank[p + 6], repeatable: perRank[p + 7] === 1, fmm: perRank[p + 8] === 1,
      gpu: perRank[p + 9] === 1, seconds: perRank[p + 10] });
  if (boundary === 'isolated') {
    const direct = await new GravitySolver({ ...opts, method: 'tree', threads: 0, distributed: false }).directCells(cells, unitBox);
    const dAcc = [direct.accelerations.x, direct.accelerations.y, direct.accelerations.z];
    row.distributedVsPhysics = { potential: scalarDiff(phi, direct.potential), accelerations: vectorDiff(acc, dAcc) };
    row.singleVsPhysics = { potential: scalarDiff(single.potential, direct.potential), accelerations: vectorDiff(sAcc, dAcc) };
  } else {
    // the contrast masses the solver uses: m - (M / V) h^3
    let total = 0;
    for (let i = 0; i < cells.count; i++) total += cells.mass[i];
    const mass = cells.mass.map((m, i) => m - total * cells.size[i] ** 3);
    const targets = Array.from({ length: 40 }, (_, i) => Math.floor(((i + 0.5) * cells.count) / 40));
    const ref = ewaldAtTargets([1, 1, 1], { x: cells.x, y: cells.y, z: cells.z, mass }, targets, 1);
    const at = (v) => Float64Array.from(targets, (i) => v[i]);
    const rAcc = [ref.ax, ref.ay, ref.az];
    row.distributedVsPhysics = { potential: scalarDiff(at(phi), ref.potential), accelerations: vectorDiff(acc.map(at), rAcc) };
    row.singleVsPhysics = { potential: scalarDiff(at(single.potential), ref.potential), accelerations: vectorDiff(sAcc.map(at), rAcc) };
  }
  report.scenarios.push(row);
}
// a sheet (x, y periodic): method 'fmm' over ranks is a typed error on every rank, not a silent solve
if (set !== 'cells') {
  const cells = extractCells(uniform32(), 'dens');
  const per = Math.floor(cells.count / size);
  try {
    await new GravitySolver({ ...base, boundary: { x: 'periodic', y: 'periodic', z: 'isolated' } })
      .solveCells(slice(cells, rank * per, (rank + 1) * per), unitBox);
    report.sheet = 'solved';
  } catch (e) {
    report.sheet = `${e.name}: ${e.message}`;
  }
  const refused = await gatherToRoot(Float64Array.from([report.sheet.startsWith('InvalidOptionError') ? 1 : 0]));
  report.sheetRefusedOnEveryRank = refused.every((v) => v === 1);
}
if (rank === 0) console.log(JSON.stringify(report));
