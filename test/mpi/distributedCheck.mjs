// Run under mpirun by test/mpi.test.ts (after `npm run build`): every rank builds the same problems, takes its part
// of each decomposition, and solves it as a collective; rank 0 gathers the potential and prints one JSON line
// comparing it with the single-process tree solve and with direct summation of all cells.
import {
  GravitySolver,
  extractCells,
  fillVariable,
  gatherToRoot,
  mpiWorld,
  refineMesh,
  uniformMesh,
} from '../../dist/solver/index.js';
import { maclaurinProblem } from '../../dist/validation/index.js';
import { backendFromArgs, rng } from './common.mjs';

const { rank, size } = mpiWorld();
const G = 1;
const threads = 1; // ranks share the CI machine's two cores
// --backend cpu|cuda|auto (default auto: the CPU on CI): every solve of the check, the one-process reference
// included, runs on it (bench/gpu/device-check.sh step mpi runs it with cuda); 'mixed': even ranks on the GPU, odd
// ranks on the CPU (the same LETs on the wire), rank 0's references on the GPU
const { choice: backendChoice, backend } = backendFromArgs(rank);

function concatCells(parts) {
  const out = {};
  for (const k of ['x', 'y', 'z', 'mass', 'size']) {
    out[k] = new Float64Array(parts.reduce((n, p) => n + p.x.length, 0));
    let o = 0;
    for (const p of parts) {
      out[k].set(p[k], o);
      o += p.x.length;
    }
  }
  return out;
}

function slice(cells, b, e) {
  return { x: cells.x.subarray(b, e), y: cells.y.subarray(b, e), z: cells.z.subarray(b, e), mass: cells.mass.subarray(b, e), size: cells.size.subarray(b, e) };
}

/** MacLaurin spheroid at levels 3: Morton-ordered blocks. */
function maclaurin() {
  const p = maclaurinProblem({ levels: 3, subsample: 2 });
  return { cells: p.cells, unit: p.mesh.cellsPerBlock };
}

/** A randomly refined mesh (seeded) with a lumpy random density. */
function randomAmrMesh() {
  const r = rng(42);
  const mesh = uniformMesh({ lrefineMax: 4, level: 2, nxb: 4, nyb: 4, nzb: 4 });
  refineMesh(mesh, () => r() < 0.5);
  const h = rng(7);
  const lumps = Array.from({ length: 6 }, () => [h(), h(), h(), 0.05 + 0.1 * h()]);
  fillVariable(mesh, 'dens', (x, y, z) => 0.01 + lumps.reduce((s, [a, b, c, w]) => s + Math.exp(-((x - a) ** 2 + (y - b) ** 2 + (z - c) ** 2) / (w * w)), 0));
  return mesh;
}

function randomAmr() {
  const mesh = randomAmrMesh();
  return { cells: extractCells(mesh, 'dens'), unit: mesh.cellsPerBlock };
}

/** Cell boundaries [bounds[r], bounds[r + 1]) of each rank, whole units, weights per rank. */
function cut(count, unit, weights) {
  const units = count / unit;
  const total = weights.reduce((a, b) => a + b, 0);
  const bounds = [0];
  let acc = 0;
  for (const w of weights) {
    acc += w;
    bounds.push(Math.round((units * acc) / total) * unit);
  }
  return bounds;
}

/** The scenarios: all cells of a problem and each rank's contiguous part of them. */
function scenarios() {
  const out = [];
  const m = maclaurin();
  out.push({ name: 'maclaurin-sfc', cells: m.cells, bounds: cut(m.cells.count, m.unit, Array(size).fill(1)), box: { lo: [0, 0, 0], hi: [1, 1, 1] } });
  const a = randomAmr();
  out.push({ name: 'random-amr-sfc', cells: a.cells, bounds: cut(a.cells.count, a.unit, Array(size).fill(1)) });
  if (size > 1) {
    out.push({ name: 'random-amr-uneven', cells: a.cells, bounds: cut(a.cells.count, a.unit, Array.from({ length: size }, (_, r) => (r + 1) ** 2)) });
    out.push({ name: 'random-amr-empty-rank', cells: a.cells, bounds: cut(a.cells.count, a.unit, Array.from({ length: size }, (_, r) => (r === 1 ? 0 : 1))) });
    // the last rank owns only a small clump 100 box lengths away
    const far = slice(a.cells, 0, 64);
    const clump = { x: far.x.map((v) => 100 + 0.1 * v), y: far.y.map((v) => 0.1 * v), z: far.z.map((v) => 0.1 * v), mass: far.mass.slice(), size: far.size.map((v) => 0.1 * v) };
    const all = concatCells([a.cells, clump]);
    const bounds = [...cut(a.cells.count, a.unit, Array(size - 1).fill(1)), a.cells.count + 64];
    out.push({ name: 'far-rank', cells: all, bounds });
  }
  return out;
}

function maxRel(a, b) {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]) / Math.abs(b[i]));
  return m;
}

function vecRel(a, b) {
  let d = 0;
  let s = 0;
  for (let i = 0; i < b[0].length; i++) {
    d = Math.max(d, Math.hypot(a[0][i] - b[0][i], a[1][i] - b[1][i], a[2][i] - b[2][i]));
    s = Math.max(s, Math.hypot(b[0][i], b[1][i], b[2][i]));
  }
  return d / s;
}

const thetas = [0.5, 0.25, 0.1];
const report = { ranks: size, backend: backendChoice, scenarios: [] };
for (const sc of scenarios()) {
  const mine = slice(sc.cells, sc.bounds[rank], sc.bounds[rank + 1]);
  const opts = sc.box ? { box: sc.box } : {};
  const row = { name: sc.name, cells: sc.bounds[size], vsSingle: {}, vsDirect: {}, singleVsDirect: {} };
  let stats;
  for (const theta of thetas) {
    const accelerations = theta === 0.5;
    const r = await new GravitySolver({ G, theta, threads, accelerations, backend }).solveCells(mine, opts);
    if (theta === 0.5) {
      stats = r.stats;
      // a rerun on the same decomposition is bitwise identical (received LETs are summed in rank order)
      const again = await new GravitySolver({ G, theta, threads, accelerations, backend }).solveCells(mine, opts);
      const same = again.potential.every((v, i) => Object.is(v, r.potential[i]));
      row.repeatable = (await gatherToRoot(Float64Array.from([same ? 1 : 0]))).every((v) => v === 1);
    }
    const phi = await gatherToRoot(r.potential);
    const acc = accelerations ? [await gatherToRoot(r.accelerations.x), await gatherToRoot(r.accelerations.y), await gatherToRoot(r.accelerations.z)] : null;
    if (rank === 0) {
      const single = await new GravitySolver({ G, theta, threads: 0, accelerations, backend, distributed: false }).solveCells(sc.cells, opts);
      row.vsSingle[theta] = maxRel(phi, single.potential);
      if (acc) row.accelerationsVsSingle = vecRel(acc, [single.accelerations.x, single.accelerations.y, single.accelerations.z]);
      row.vsDirect[theta] = phi;
      row.singleVsDirect[theta] = single.potential;
    }
  }
  const d = stats.distributed;
  const perRank = await gatherToRoot(Float64Array.from([mine.x.length, d?.letNodesSent ?? 0, d?.letCellsSent ?? 0, d?.bytesSent ?? 0, d?.letsSent ?? 0, d?.letsReceived ?? 0, d?.device ?? -1]));
  if (rank === 0) {
    const direct = await new GravitySolver({ G, threads: 0, backend, distributed: false }).directCells(sc.cells, opts);
    for (const theta of thetas) {
      row.vsDirect[theta] = maxRel(row.vsDirect[theta], direct.potential);
      row.singleVsDirect[theta] = maxRel(row.singleVsDirect[theta], direct.potential);
    }
    row.backend = stats.backend;  // rank 0's: 'cuda' for a GPU rank
    row.perRank = [];
    for (let p = 0; p < perRank.length; p += 7)
      row.perRank.push({ cells: perRank[p], letNodesSent: perRank[p + 1], letCellsSent: perRank[p + 2], bytesSent: perRank[p + 3], letsSent: perRank[p + 4], letsReceived: perRank[p + 5], device: perRank[p + 6] });
    report.scenarios.push(row);
  }
}
// The mesh API: every rank holds the whole mesh, solves its chunk of the leaf blocks (Morton order, equal cell
// counts) and writes back the blocks of that chunk only.
{
  const mesh = randomAmrMesh();
  const r = await new GravitySolver({ G, threads, backend }).solve(mesh);
  const cpb = mesh.cellsPerBlock;
  const leaves = mesh.leafBlocks();
  const gpot = mesh.variable('gpot');
  const firstBlock = Math.floor((leaves.length * rank) / size);
  let writeBackOk = r.potential.length === (Math.floor((leaves.length * (rank + 1)) / size) - firstBlock) * cpb;
  for (let i = 0; writeBackOk && i < r.potential.length; i++)
    writeBackOk = gpot[leaves[firstBlock + Math.floor(i / cpb)] * cpb + (i % cpb)] === r.potential[i];
  const phi = await gatherToRoot(r.potential);
  const oks = await gatherToRoot(Float64Array.from([writeBackOk ? 1 : 0, r.stats.cells]));
  if (rank === 0) {
    const all = extractCells(mesh, 'dens');
    const single = await new GravitySolver({ G, threads: 0, backend, distributed: false }).solveCells(all, { box: { lo: [0, 0, 0], hi: [1, 1, 1] } });
    report.meshApi = {
      cells: all.count,
      vsSingle: maxRel(phi, single.potential),
      writeBackOk: oks.filter((_, i) => i % 2 === 0).every((v) => v === 1),
      cellsPerRank: Array.from(oks.filter((_, i) => i % 2 === 1)),
    };
  }
}
if (rank === 0) console.log(JSON.stringify(report));
