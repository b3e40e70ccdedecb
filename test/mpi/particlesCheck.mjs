// Run under mpirun by test/mpi.test.ts (issue #18): a system solve with cells AND particles spread over the ranks.
// A gas sphere on a 16^3 grid and a compact Plummer cluster of softened particles inside it, plus probes. Ranks 0..N-2 hold
// the cells (rank N-1 none), ranks 1..N-1 the particles (rank 0 none), every rank some probes (one process: all of
// it). Every rank passes its own parts (its particles stay on it: the others get particle LETs of them); the
// gathered results against one process solving everything (tree, same options) and against one process's direct
// summation, for the spline kernel (a softening per particle, up to a reach of 0.14 of the box: the LETs for the
// particle ranks must cover it) and the Plummer kernel (one value). Then particles only across a rank boundary
// ('boundary', below: what a too permissive particle LET gets wrong) against the softened direct sum. Then
// a NaN particle on the last rank: the same typed error on every rank, and the solver usable afterwards. And a
// subset of each rank's cells (issue #18 `targets`: a compact run of them backwards and a scattered few) in the same
// system: bitwise the same ranks' full solve at those cells (potential and accelerations; the particles' and probes'
// results unchanged, bitwise), and one process's values at those cells. Rank 0 prints one JSON line. --backend cuda
// or mixed (a GPU host: bench/gpu/device-check.sh step 'mpi'): the same on GPU ranks, or on GPU and CPU ranks mixed
// (the one-process references on rank 0's backend).
import { GravitySolver, gatherToRoot, mpiWorld } from '../../dist/solver/index.js';
import { backendFromArgs, rng } from './common.mjs';

const { rank, size } = mpiWorld();
const G = 1;

// ---- the gas: a 16^3 grid of cells of side 1/16, density 1 / (1 + (r / 0.3)^2) about the centre
const k = 16, h = 1 / k, nc = k * k * k;
const cellsAll = { x: new Float64Array(nc), y: new Float64Array(nc), z: new Float64Array(nc), mass: new Float64Array(nc), size: new Float64Array(nc).fill(h) };
for (let i = 0; i < nc; i++) {
  const ix = Math.floor(i / (k * k)), iy = Math.floor(i / k) % k, iz = i % k;
  const x = (ix + 0.5) * h, y = (iy + 0.5) * h, z = (iz + 0.5) * h;
  const r2 = (x - 0.5) ** 2 + (y - 0.5) ** 2 + (z - 0.5) ** 2;
  cellsAll.x[i] = x;
  cellsAll.y[i] = y;
  cellsAll.z[i] = z;
  cellsAll.mass[i] = (h * h * h) / (1 + r2 / 0.09);
}
// ---- the particles: a Plummer cluster (scale 0.05) about (0.55, 0.5, 0.45), clipped to r < 0.2, 30% of the gas mass
const npart = 600, pr = rng(7);
const gasMass = cellsAll.mass.reduce((a, b) => a + b, 0);
const partAll = { x: new Float64Array(npart), y: new Float64Array(npart), z: new Float64Array(npart), mass: new Float64Array(npart).fill((0.3 * gasMass) / npart), softening: new Float64Array(npart) };
for (let i = 0; i < npart; i++) {
  let r;
  do r = 0.05 / Math.sqrt(Math.pow(pr(), -2 / 3) - 1); while (!(r < 0.2));
  const c = 2 * pr() - 1, phi = 2 * Math.PI * pr(), s = Math.sqrt(1 - c * c);
  partAll.x[i] = 0.55 + r * s * Math.cos(phi);
  partAll.y[i] = 0.5 + r * s * Math.sin(phi);
  partAll.z[i] = 0.45 + r * c;
  partAll.softening[i] = 0.002 + 0.048 * pr() ** 3; // 0.002 to 0.05: spline radii up to 0.14
}
// ---- the probes: 200 per rank, anywhere around the box, but the particle-only rank's inside the cluster (so that
// its box of targets is the particles' and the LETs it receives are chosen for it)
const nprobe = 200;
const probesOf = (q) => {
  const g = rng(100 + q), p = { x: new Float64Array(nprobe), y: new Float64Array(nprobe), z: new Float64Array(nprobe) };
  const [lo, w] = size > 1 && q === size - 1 ? [0.45, 0.15] : [-0.2, 1.4];
  for (let i = 0; i < nprobe; i++) { p.x[i] = lo + w * g(); p.y[i] = lo + w * g(); p.z[i] = lo + w * g(); }
  return p;
};

// ---- who holds what: contiguous chunks (the cells in x slabs, the particles in random order: overlapping boxes)
const chunk = (n, owners, q) => {
  const at = owners.indexOf(q);
  return at < 0 ? [0, 0] : [Math.floor((at * n) / owners.length), Math.floor(((at + 1) * n) / owners.length)];
};
const ranks = Array.from({ length: size }, (_, q) => q);
const cellOwners = size === 1 ? [0] : ranks.slice(0, size - 1);
const partOwners = size === 1 ? [0] : ranks.slice(1);
const slice = (o, [b, e]) => Object.fromEntries(Object.entries(o).map(([key, v]) => [key, v.subarray(b, e)]));
const myCells = slice(cellsAll, chunk(nc, cellOwners, rank));
const myPart = slice(partAll, chunk(npart, partOwners, rank));
const myProbes = probesOf(rank);
const allProbes = (() => {
  const ps = ranks.map(probesOf), cat = (key) => Float64Array.from(ps.flatMap((p) => Array.from(p[key])));
  return { x: cat('x'), y: cat('y'), z: cat('z') };
})();

const maxAbs = (a) => a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
/** max |a - b| / max |b| (the systemCheck's measure) */
const relToMax = (a, b) => {
  const s = maxAbs(b);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]) / s);
  return m;
};
/** max |a - b| / |b| per point */
const relPointwise = (a, b) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]) / Math.abs(b[i]));
  return m;
};
/** max |a - b| / |b| over 3-vectors */
const relVector = (a, b) => {
  let m = 0;
  for (let i = 0; i < a.x.length; i++) {
    const d = Math.hypot(a.x[i] - b.x[i], a.y[i] - b.y[i], a.z[i] - b.z[i]), n = Math.hypot(b.x[i], b.y[i], b.z[i]);
    m = Math.max(m, d / n);
  }
  return m;
};
const gatherVec = async (acc) => ({ x: await gatherToRoot(acc.x), y: await gatherToRoot(acc.y), z: await gatherToRoot(acc.z) });

// the ranks' backend: 'cpu' unless --backend cuda (GPU ranks) or mixed (GPU and CPU ranks) asks otherwise
const { choice, backend: chosen } = backendFromArgs(rank);
const backend = choice === 'auto' ? 'cpu' : chosen;

const out = { ranks: size, backend: choice };
for (const kernel of ['spline', 'plummer']) {
  const opts = { G, theta: 0.5, threads: 1, backend, softening: kernel, accelerations: true };
  const solver = new GravitySolver(opts);
  const particles = kernel === 'spline' ? myPart : { ...myPart, softening: 0.01 };
  const res = await solver.solveSystem({ cells: myCells, particles, probes: myProbes });
  const again = await solver.solveSystem({ cells: myCells, particles, probes: myProbes });
  let differ = 0;
  for (const part of ['cells', 'particles', 'probes'])
    res[part].potential.forEach((v, i) => { if (!Object.is(v, again[part].potential[i])) differ++; });
  // a subset of this rank's cells: the first fifth backwards, then every 331st of the rest (the particle-only rank: none;
  // sparse against groups of 64, so a subset walks fewer groups than the full solve)
  const mc = myCells.x.length, fifth = Math.floor(mc / 5);
  const targets = Uint32Array.from([...Array.from({ length: fifth }, (_, j) => fifth - 1 - j),
    ...Array.from({ length: Math.floor((mc - fifth) / 331) }, (_, j) => fifth + 331 * j + 13)].filter((c) => c < mc));
  const subset = await solver.solveSystem({ cells: myCells, particles, probes: myProbes }, { targets });
  let subsetDiffer = 0;
  const xyz = ['x', 'y', 'z'];
  targets.forEach((c, j) => {
    if (!Object.is(subset.cells.potential[j], res.cells.potential[c])) subsetDiffer++;
    for (const d of xyz) if (!Object.is(subset.cells.accelerations[d][j], res.cells.accelerations[d][c])) subsetDiffer++;
  });
  for (const part of ['particles', 'probes'])
    res[part].potential.forEach((v, i) => {
      if (!Object.is(v, subset[part].potential[i])) subsetDiffer++;
      for (const d of xyz) if (!Object.is(res[part].accelerations[d][i], subset[part].accelerations[d][i])) subsetDiffer++;
    });
  const cellBase = chunk(nc, cellOwners, rank)[0];
  const g = {
    subset: await gatherToRoot(subset.cells.potential),
    subsetAt: await gatherToRoot(Float64Array.from(targets, (c) => cellBase + c)),
    subsetStats: await gatherToRoot(Float64Array.from([targets.length, subset.cells.potential.length,
      subset.stats.system.targets, subset.stats.system.targetGroups, res.stats.system.targetGroups, subsetDiffer])),
    cells: await gatherToRoot(res.cells.potential),
    particles: await gatherToRoot(res.particles.potential),
    probes: await gatherToRoot(res.probes.potential),
    particleAcc: await gatherVec(res.particles.accelerations),
    cellAcc: await gatherVec(res.cells.accelerations),
    differ: await gatherToRoot(Float64Array.from([differ])),
    perRank: await gatherToRoot(Float64Array.from([myCells.x.length, particles.x.length, res.stats.system.particles,
      res.stats.distributed?.letsReceived ?? 0, res.stats.distributed?.letNodesSent ?? 0,
      res.stats.distributed?.particleLetsReceived ?? 0, res.stats.distributed?.particleBytesSent ?? 0,
      res.stats.distributed?.particleBytesReceived ?? 0])),
  };
  if (rank === 0) {
    const one = new GravitySolver({ ...opts, threads: 0, distributed: false });
    const all = { cells: cellsAll, particles: kernel === 'spline' ? partAll : { ...partAll, softening: 0.01 }, probes: allProbes };
    const single = await one.solveSystem(all);
    const direct = await one.solveSystem(all, { method: 'direct' });
    const r = { repeatable: Array.from(g.differ).every((d) => d === 0) };
    for (const part of ['cells', 'particles', 'probes']) {
      r[part] = {
        count: g[part].length,
        vsSingle: relToMax(g[part], single[part].potential),
        vsDirect: relPointwise(g[part], direct[part].potential),
        singleVsDirect: relPointwise(single[part].potential, direct[part].potential),
      };
    }
    r.particles.accVsSingle = relVector(g.particleAcc, single.particles.accelerations);
    r.particles.accVsDirect = relVector(g.particleAcc, direct.particles.accelerations);
    r.particles.singleAccVsDirect = relVector(single.particles.accelerations, direct.particles.accelerations);
    // per owner: the particle-only rank takes every cell through LETs
    const sub3 = (a, [b, e]) => ({ x: a.x.subarray(b, e), y: a.y.subarray(b, e), z: a.z.subarray(b, e) });
    r.particles.accVsDirectByRank = ranks.map((q) => relVector(sub3(g.particleAcc, chunk(npart, partOwners, q)), sub3(direct.particles.accelerations, chunk(npart, partOwners, q))));
    r.particles.singleAccVsDirectByRank = ranks.map((q) => relVector(sub3(single.particles.accelerations, chunk(npart, partOwners, q)), sub3(direct.particles.accelerations, chunk(npart, partOwners, q))));
    r.cells.accVsSingle = relVector(g.cellAcc, single.cells.accelerations);
    // the subsets: bitwise the ranks' full solves, and one process's values at those cells
    const ss = Array.from(g.subsetStats);
    const at = Array.from(g.subsetAt);
    r.subset = {
      count: g.subset.length,
      vsSingle: relToMax(g.subset, Float64Array.from(at, (c) => single.cells.potential[c])),
      notBitwise: ranks.map((q) => ss[6 * q + 5]),
      perRank: ranks.map((q) => ({ targets: ss[6 * q], results: ss[6 * q + 1], statsTargets: ss[6 * q + 2], targetGroups: ss[6 * q + 3], fullGroups: ss[6 * q + 4] })),
    };
    const pr = Array.from(g.perRank), w = 8;
    r.perRank = ranks.map((q) => ({ cells: pr[w * q], particles: pr[w * q + 1], statsParticles: pr[w * q + 2], letsReceived: pr[w * q + 3], letNodesSent: pr[w * q + 4],
      particleLetsReceived: pr[w * q + 5], particleBytesSent: pr[w * q + 6], particleBytesReceived: pr[w * q + 7] }));
    out[kernel] = r;
  }
}

// ---- particles only, across a rank boundary (no cells anywhere): a compact clump A of 300 (side 0.02 about x = 0.4,
// softenings 0.002 to 0.01) on rank 0 and a clump B of 300 (x in [0.5, 0.6], softenings 0.03 to 0.08: spline radii up
// to 0.22) on rank 1, probes about each clump (ranks from 2 on: probes about B, and no particles). A's nodes lie
// beyond the MAC and A's own spline reach from B's ranks, but within B's: a particle LET that prunes A for rank 1
// with the sender's softenings only (not grown by the receiver's reach), or one that sends A's nodes of mixed
// softenings childless to ranks with probes (the Plummer kernel's rule), misses softened pairs, and B's particles
// and probes are then off the softened direct sum by far more than the tree's error. So each kind of point against
// float64 direct summation, beside one process's tree. 'split' as said; 'one' every particle on the last rank (a
// rank with all of them, the others none).
const clumps = (() => {
  const g = rng(31), n = 300, mk = () => ({ x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n), mass: new Float64Array(n), softening: new Float64Array(n) });
  const a = mk(), b = mk();
  for (let i = 0; i < n; i++) {
    for (const [c, cx, w, e0, e1] of [[a, 0.4, 0.02, 0.002, 0.01], [b, 0.55, 0.1, 0.03, 0.08]]) {
      c.x[i] = cx + w * (g() - 0.5);
      c.y[i] = 0.5 + w * (g() - 0.5);
      c.z[i] = 0.5 + w * (g() - 0.5);
      c.mass[i] = (0.5 + g()) / n;
      c.softening[i] = e0 + (e1 - e0) * g();
    }
  }
  return { a, b };
})();
const boundaryProbes = (q) => {
  const g = rng(300 + q), m = 100, p = { x: new Float64Array(m), y: new Float64Array(m), z: new Float64Array(m) };
  const [cx, w] = q === 0 && size > 1 ? [0.4, 0.03] : [0.55, 0.1];
  for (let i = 0; i < m; i++) { p.x[i] = cx + w * (g() - 0.5); p.y[i] = 0.5 + w * (g() - 0.5); p.z[i] = 0.5 + w * (g() - 0.5); }
  return p;
};
const concat = (list) => Object.fromEntries(Object.keys(list[0]).map((key) => [key, Float64Array.from(list.flatMap((o) => Array.from(o[key])))]));
const none = { x: new Float64Array(0), y: new Float64Array(0), z: new Float64Array(0), mass: new Float64Array(0), softening: new Float64Array(0) };
out.boundary = {};
for (const layout of ['split', 'one']) {
  const holder = (q) => layout === 'one' ? (q === size - 1 ? [clumps.a, clumps.b] : [])
    : size === 1 ? [clumps.a, clumps.b] : q === 0 ? [clumps.a] : q === 1 ? [clumps.b] : [];
  const partsOf = (q) => (holder(q).length ? concat(holder(q)) : none);
  for (const kernel of ['spline', 'plummer']) {
    const opts = { G, theta: 0.5, threads: 1, backend, softening: kernel, accelerations: true };
    const solver = new GravitySolver(opts);
    const res = await solver.solveSystem({ particles: partsOf(rank), probes: boundaryProbes(rank) });
    const g = {
      particles: await gatherToRoot(res.particles.potential),
      probes: await gatherToRoot(res.probes.potential),
      particleAcc: await gatherVec(res.particles.accelerations),
      probeAcc: await gatherVec(res.probes.accelerations),
      lets: await gatherToRoot(Float64Array.from([res.stats.distributed?.particleLetsReceived ?? 0,
        res.stats.distributed?.particleBytesSent ?? 0, res.stats.distributed?.particleBytesReceived ?? 0])),
    };
    if (rank === 0) {
      const one = new GravitySolver({ ...opts, threads: 0, distributed: false });
      const all = { particles: concat(ranks.flatMap(holder)), probes: concat(ranks.map(boundaryProbes)) };
      const single = await one.solveSystem(all);
      const direct = await one.solveSystem(all, { method: 'direct' });
      const r = {};
      for (const part of ['particles', 'probes']) {
        const acc = part === 'particles' ? 'particleAcc' : 'probeAcc';
        r[part] = {
          count: g[part].length,
          vsDirect: relPointwise(g[part], direct[part].potential),
          singleVsDirect: relPointwise(single[part].potential, direct[part].potential),
          accVsDirect: relVector(g[acc], direct[part].accelerations),
          singleAccVsDirect: relVector(single[part].accelerations, direct[part].accelerations),
        };
      }
      // per rank (gathered in rank order): where a wrong LET would show
      const spans = (counts) => counts.map((c, q) => [counts.slice(0, q).reduce((x, y) => x + y, 0), counts.slice(0, q + 1).reduce((x, y) => x + y, 0)]);
      const pSpans = spans(ranks.map((q) => holder(q).length * 300)), qSpans = spans(ranks.map(() => 100));
      r.particles.vsDirectByRank = pSpans.map(([b, e]) => relPointwise(g.particles.subarray(b, e), direct.particles.potential.subarray(b, e)));
      r.probes.vsDirectByRank = qSpans.map(([b, e]) => relPointwise(g.probes.subarray(b, e), direct.probes.potential.subarray(b, e)));
      const l = Array.from(g.lets);
      r.perRank = ranks.map((q) => ({ particles: holder(q).length * 300, letsReceived: l[3 * q], bytesSent: l[3 * q + 1], bytesReceived: l[3 * q + 2] }));
      out.boundary[`${layout} ${kernel}`] = r;
    }
  }
}

// ---- a NaN particle on the last rank: that rank's typed error on every rank, nobody waits; then a good solve
{
  const solver = new GravitySolver({ G, theta: 0.5, threads: 1, backend });
  const bad = size - 1;
  const spoilt = rank === bad ? { ...myPart, x: Float64Array.from(myPart.x, (v, i) => (i === 3 ? NaN : v)) } : myPart;
  let error = null;
  try {
    await solver.solveSystem({ cells: myCells, particles: spoilt, probes: myProbes });
  } catch (err) {
    error = { name: err.name, code: err.code, message: err.message };
  }
  const ok = await solver.solveSystem({ cells: myCells, particles: myPart, probes: myProbes });
  const errors = await gatherToRoot(Float64Array.from([error ? 1 : 0]));
  const after = await gatherToRoot(Float64Array.from([ok.particles.potential.length === myPart.x.length ? 1 : 0]));
  // every rank's message, gathered as code points (a line printed by another rank could land inside rank 0's)
  const codes = Array.from(error ? error.message : '', (ch) => ch.codePointAt(0));
  const lengths = Array.from(await gatherToRoot(Float64Array.from([codes.length])));
  const text = Array.from(await gatherToRoot(Float64Array.from(codes)));
  if (rank === 0) {
    const messages = lengths.map((n, q) => {
      const at = lengths.slice(0, q).reduce((a, b) => a + b, 0);
      return String.fromCodePoint(...text.slice(at, at + n));
    });
    out.badParticle = { error, failedOn: Array.from(errors), usableAfter: Array.from(after), messages };
  }
}
if (rank === 0) console.log(JSON.stringify(out));
