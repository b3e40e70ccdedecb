/**
 * Distributed solves under mpirun (Open MPI; CI installs it): N ranks agree with one process and with direct
 * summation, whatever the decomposition (equal Morton chunks, uneven, a rank with no cells, a rank far from the
 * others), and a failure on one rank ends every rank instead of hanging. The scripts in test/mpi/ run in the
 * ranks and import the compiled package from dist/ (built by `npm ci` / `npm run build`).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadNative, nativeFeatures } from '../solver/native.js';
import { mpirun } from './helpers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const script = (name: string) => join(root, 'test', 'mpi', name);

function lastJson<T>(stdout: string): T {
  const line = stdout.trim().split('\n').filter((l) => l.startsWith('{')).pop();
  if (!line) throw new Error(`no JSON from rank 0; stdout:\n${stdout}`);
  return JSON.parse(line) as T;
}

interface Scenario {
  name: string;
  cells: number;
  /** max |phi_N - phi_1| / |phi_1| per theta */
  vsSingle: Record<string, number>;
  /** max |phi_N - phi_direct| / |phi_direct| per theta */
  vsDirect: Record<string, number>;
  singleVsDirect: Record<string, number>;
  accelerationsVsSingle: number;
  repeatable: boolean;
  backend: 'cpu' | 'cuda';
  perRank: { cells: number; letNodesSent: number; letCellsSent: number; bytesSent: number; letsSent: number; letsReceived: number; device: number }[];
}

describe('MPI build', () => {
  it('this build has MPI and mpirun is installed', () => {
    expect(nativeFeatures().mpi, nativeFeatures().mpiReason).toBe(true);
    expect(existsSync(join(root, 'dist', 'solver', 'index.js')), 'run npm run build first').toBe(true);
  });

  it('a GPU rank takes its node-local rank modulo the device count', () => {
    const deviceFor = loadNative().mpiDeviceFor;
    expect([0, 1, 2, 3, 4, 5].map((r) => deviceFor(r, 4))).toEqual([0, 1, 2, 3, 0, 1]);
    expect([0, 1, 2, 3].map((r) => deviceFor(r, 1))).toEqual([0, 0, 0, 0]); // several ranks share one GPU
    expect([0, 1, 2].map((r) => deviceFor(r, 2))).toEqual([0, 1, 0]);
    expect(deviceFor(3, 0)).toBe(0); // no device: 0, and the solve reports NoDevice
  });
});

describe.each([1, 2, 3, 4])('distributed solve on %i rank(s)', (np) => {
  it('matches the one-process tree and direct summation on MacLaurin and random AMR meshes', async () => {
    const run = await mpirun(np, script('distributedCheck.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const report = lastJson<{ ranks: number; scenarios: Scenario[] }>(run.stdout);
    expect(report.ranks).toBe(np);
    const names = report.scenarios.map((s) => s.name);
    expect(names).toEqual(np > 1 ? ['maclaurin-sfc', 'random-amr-sfc', 'random-amr-uneven', 'random-amr-empty-rank', 'far-rank'] : ['maclaurin-sfc', 'random-amr-sfc']);
    for (const s of report.scenarios) {
      const where = `${s.name} on ${np} ranks`;
      expect(s.perRank.reduce((n, r) => n + r.cells, 0), where).toBe(s.cells);
      // a CPU rank reports no CUDA device (a GPU rank its node-local rank modulo the devices: device-check.sh mpi)
      if (np > 1 && s.backend === 'cpu') expect(s.perRank.map((r) => r.device), where).toEqual(Array(np).fill(-1));
      expect(s.repeatable, where).toBe(true);
      if (np === 1) expect(s.vsSingle['0.5'], where).toBe(0); // one rank is the single-process solve, bitwise
      if (s.name !== 'far-rank') {
        // the bar: N ranks within 1e-4 of one process at theta 0.5
        expect(s.vsSingle['0.5'], where).toBeLessThan(1e-4);
        expect(s.accelerationsVsSingle, where).toBeLessThan(2e-4);
      }
      // Both are approximations of the direct sum; N ranks must be no less accurate than one process. (With a
      // rank 100 box lengths away the one-process tree itself errs by 2e-4 at theta 0.5, so that scenario is held
      // to this bound rather than to 1e-4 of the one-process answer.)
      expect(s.vsDirect['0.5'], where).toBeLessThan(1.05 * s.singleVsDirect['0.5'] + 1e-12);
      // and converge to direct summation as theta falls
      expect(s.vsDirect['0.25'], where).toBeLessThan(s.vsDirect['0.5']);
      expect(s.vsDirect['0.1'], where).toBeLessThan(s.vsDirect['0.25']);
      expect(s.vsDirect['0.1'], where).toBeLessThan(1e-6);
    }
    // GravitySolver.solve(mesh): each rank solves and writes back its chunk of the leaf blocks
    const meshApi = (report as unknown as { meshApi: { cells: number; vsSingle: number; writeBackOk: boolean; cellsPerRank: number[] } }).meshApi;
    expect(meshApi.writeBackOk).toBe(true);
    expect(meshApi.cellsPerRank).toHaveLength(np);
    expect(meshApi.cellsPerRank.reduce((a, b) => a + b, 0)).toBe(meshApi.cells);
    expect(meshApi.vsSingle).toBeLessThan(1e-4);
    if (np === 1) expect(meshApi.vsSingle).toBe(0);
    if (np > 1) {
      const empty = report.scenarios.find((s) => s.name === 'random-amr-empty-rank')!;
      expect(empty.perRank[1]).toMatchObject({ cells: 0, letsSent: 0, letsReceived: 0, bytesSent: 0 });
      const far = report.scenarios.find((s) => s.name === 'far-rank')!;
      // the far rank's LET for each other rank is its root alone: one node, no cells
      expect(far.perRank[np - 1]).toMatchObject({ cells: 64, letNodesSent: np - 1, letCellsSent: 0 });
      const uneven = report.scenarios.find((s) => s.name === 'random-amr-uneven')!;
      expect(uneven.perRank[np - 1].cells).toBeGreaterThan(uneven.perRank[0].cells);
    }
  });
});

describe('distributed solve on 10 ranks', () => {
  // nine LETs per rank: the received trees are merged under two levels of virtual nodes (let/let.h mergeLets,
  // fan-out 8), the layout the GPU rank walks too; a LET lost or misplaced there would miss a tenth of the mass
  it('agrees with one process and converges to direct summation', async () => {
    const np = 10;
    const run = await mpirun(np, script('distributedCheck.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const report = lastJson<{ ranks: number; scenarios: Scenario[] }>(run.stdout);
    expect(report.ranks).toBe(np);
    for (const s of report.scenarios) {
      const where = `${s.name} on ${np} ranks`;
      expect(s.repeatable, where).toBe(true);
      // ten root cubes instead of one make different (not worse) MAC choices at theta 0.5: 3e-4 at most here
      expect(s.vsSingle['0.5'], where).toBeLessThan(5e-4);
      expect(s.vsSingle['0.1'], where).toBeLessThan(1e-6);
      expect(s.vsDirect['0.25'], where).toBeLessThan(s.vsDirect['0.5']);
      expect(s.vsDirect['0.1'], where).toBeLessThan(1e-6);
    }
    const sfc = report.scenarios.find((s) => s.name === 'random-amr-sfc')!;
    expect(sfc.perRank.map((r) => r.letsReceived)).toEqual(Array(np).fill(np - 1));
  });
});

describe('GravityModule under mpirun', () => {
  it('each rank solves and writes its chunk of the mesh, matching one process within 1e-4, over steps', async () => {
    const run = await mpirun(3, script('gravityModuleCheck.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    const total = lines.reduce((n: number, l: { cellsThisRank: number }) => n + l.cellsThisRank, 0);
    for (const l of lines) {
      expect(l.cellsThisRank).toBeGreaterThan(0);
      expect(l.cellsThisRank).toBeLessThan(total); // a chunk, not the whole mesh on every rank
      expect(l.maxRelDiff).toBeLessThan(1e-4);
    }
  });
});

describe('ten ranks: nine LETs per rank, two levels of virtual nodes above them', () => {
  it('isolated and periodic: the gathered potential matches one process (and, isolated, direct summation)', async () => {
    const run = await mpirun(10, script('manyRanksCheck.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const r = lastJson<{ ranks: number } & Record<'isolated' | 'periodic', { vsSingle: number; singleError: number; distributedError: number; vsDirect: number | null; letsReceived: number[] }>>(run.stdout);
    expect(r.ranks).toBe(10);
    for (const name of ['isolated', 'periodic'] as const) {
      expect(r[name].letsReceived, name).toEqual(Array(10).fill(9));
      // relative to the largest |phi|: theta 0.5, every rank's cells spread over the whole box. The one-process solve
      // is a tree too: its own error (periodic 1.2e-4 against theta 0.15 since #18's compact groups; 8.8e-5 with the
      // runs of 32 before) may come on top of the bar
      expect(r[name].singleError, name).toBeLessThan(2e-4);
      expect(r[name].vsSingle, name).toBeLessThan(1e-4 + r[name].singleError);
      // and the ten-rank solve itself stays within the bar of the converged answer
      expect(r[name].distributedError, name).toBeLessThan(1e-4);
    }
    expect(r.isolated.vsDirect).toBeLessThan(1e-3);
  });
});

describe('system solves under mpirun (issue #18)', () => {
  it('each rank its own probes and targets (a rank with probes only, probes outside their rank\'s cells): one process\'s values', async () => {
    const run = await mpirun(3, script('systemCheck.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    type Part = {
      probes: number; targets: number; vsSingle: number; targetsVsSingle: number; vsDirect: number;
      letsReceived: number[]; notBitwise: number[];
      perRank: { results: number; statsTargets: number; targetGroups: number; fullGroups: number }[];
    };
    type Bad = { error: { name: string; message: string } | null; failedOn: number[]; usableAfter: number[] };
    const r = lastJson<{ ranks: number; badTargets: Record<'outOfRange' | 'repeated', Bad> } & Record<'isolated' | 'periodic', Part>>(run.stdout);
    expect(r.ranks).toBe(3);
    for (const name of ['isolated', 'periodic'] as const) {
      expect(r[name].probes, name).toBe(90);
      expect(r[name].targets, name).toBe(80);
      // ranks 0 and 1 receive each other's LET, rank 2 (probes only, no cells: it sends none) both
      expect(r[name].letsReceived, name).toEqual([1, 1, 2]);
      // each rank's subset (and probes; potential and accelerations) bitwise the same distributed system in full
      expect(r[name].notBitwise, name).toEqual([0, 0, 0]);
      // 40 targets on each rank with cells: only the groups holding them walked (fewer than all); none on rank 2
      expect(r[name].perRank.map((q) => [q.results, q.statsTargets]), name).toEqual([[40, 40], [40, 40], [0, 0]]);
      for (const q of r[name].perRank.slice(0, 2)) {
        expect(q.targetGroups, name).toBeGreaterThan(0);
        expect(q.targetGroups, name).toBeLessThan(q.fullGroups);
      }
      expect(r[name].perRank[2].targetGroups, name).toBe(0);
      // relative to the largest |phi|: the LETs were chosen for boxes that cover every rank's probes
      expect(r[name].vsSingle, name).toBeLessThan(1e-4);
    }
    // the cells: as the distributed cell solve on this split (periodic: 3.9e-4 of the largest |phi| against one
    // process, the same with solveCells on main: the received LETs' walk takes no hoisted corrections)
    expect(r.isolated.targetsVsSingle).toBeLessThan(1e-4);
    expect(r.periodic.targetsVsSingle).toBeLessThan(1e-3);
    expect(r.isolated.vsDirect).toBeLessThan(2e-3);
    // bad subsets: the failing rank's typed error on every rank (none waits), the solver usable after
    expect(r.badTargets.outOfRange.error?.name).toBe('InvalidInputError');
    expect(r.badTargets.outOfRange.error?.message).toContain('rank 1 of 3: targets[1] = 1500 is not a cell index');
    expect(r.badTargets.repeated.error?.name).toBe('InvalidInputError');
    expect(r.badTargets.repeated.error?.message).toContain('rank 0 of 3: targets[2] = 4 repeats targets[0]');
    for (const bad of Object.values(r.badTargets)) {
      expect(bad.failedOn).toEqual([1, 1, 1]);
      expect(bad.usableAfter).toEqual([1, 1, 1]);
    }
  });
});

describe.each([1, 2, 3, 4])('particles under mpirun on %i rank(s) (issue #18)', (np) => {
  // test/mpi/particlesCheck.mjs: a gas sphere on 16^3 cells with a compact Plummer cluster of 600 softened particles
  // inside it and probes; ranks 0..N-2 hold the cells, ranks 1..N-1 the particles, every rank probes
  it('each rank its own cells, particles and probes: one process\'s values, direct summation within the tree\'s error, and a bad particle fails every rank', async () => {
    const run = await mpirun(np, script('particlesCheck.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    type Part = { count: number; vsSingle: number; vsDirect: number; singleVsDirect: number };
    type Kernel = {
      repeatable: boolean;
      cells: Part;
      particles: Part & { accVsSingle: number; accVsDirect: number; singleAccVsDirect: number };
      probes: Part;
      perRank: { cells: number; particles: number; statsParticles: number; letsReceived: number; particleLetsReceived: number; particleBytesSent: number; particleBytesReceived: number }[];
    };
    type Points = { count: number; vsDirect: number; singleVsDirect: number; accVsDirect: number; singleAccVsDirect: number };
    type Boundary = { particles: Points; probes: Points; perRank: { particles: number; letsReceived: number; bytesSent: number; bytesReceived: number }[] };
    // rank 0's report (the only line a rank prints)
    const report = run.stdout.split('\n').filter((l) => l.startsWith('{"ranks"')).join('\n');
    type Subset = {
      count: number; vsSingle: number; notBitwise: number[];
      perRank: { targets: number; results: number; statsTargets: number; targetGroups: number; fullGroups: number }[];
    };
    const r = lastJson<{ ranks: number; spline: Kernel & { subset: Subset }; plummer: Kernel & { subset: Subset }; boundary: Record<string, Boundary>; badParticle: { error: { name: string; message: string } | null; failedOn: number[]; usableAfter: number[]; messages: string[] } }>(report);
    expect(r.ranks).toBe(np);
    for (const kernel of ['spline', 'plummer'] as const) {
      const k = r[kernel];
      expect(k.repeatable, kernel).toBe(true);
      expect([k.cells.count, k.particles.count, k.probes.count], kernel).toEqual([4096, 600, 200 * np]);
      for (const part of ['cells', 'particles', 'probes'] as const) {
        const where = `${kernel} ${part} on ${np} ranks`;
        // one rank is the single-process solve, bit for bit
        if (np === 1) expect(k[part].vsSingle, where).toBe(0);
        // two ranks: rank 0 holds every cell, rank 1 every particle, so each rank's trees and groups are one
        // process's, and the particles' walk of rank 0's LET and the cells' walk of rank 1's particle LET (each node
        // it sends childless accepted by every group) make one process's lists and sums, bit for bit
        if (np === 2 && part !== 'probes') expect(k[part].vsSingle, where).toBe(0);
        // the bar: within 1e-4 of one process (of the largest |phi|) at theta 0.5
        expect(k[part].vsSingle, where).toBeLessThan(1e-4);
        // against direct summation: the tree's error, as one process's (other trees and groups, not worse)
        expect(k[part].vsDirect, where).toBeLessThan(3 * k[part].singleVsDirect + 1e-12);
      }
      // the particles' accelerations (relative per particle): the tree's error of one process (spline 1.4e-5,
      // plummer 2.3e-4), within 4 times it on other trees and groups
      expect(k.particles.accVsDirect, kernel).toBeLessThan(4 * k.particles.singleAccVsDirect);
      expect(k.particles.accVsSingle, kernel).toBeLessThan(kernel === 'spline' ? 1e-4 : 1e-3);
      if (np > 1) {
        // rank 0 has no particles, the last rank no cells; each rank's stats count its own particles
        expect(k.perRank[0].particles).toBe(0);
        expect(k.perRank[np - 1].cells).toBe(0);
        for (const q of k.perRank) expect(q.statsParticles).toBe(q.particles);
        // the particle-only rank receives every other rank's LET
        expect(k.perRank[np - 1].letsReceived).toBe(np - 1);
        // particle LETs: each rank keeps its own particles and sends every other rank a LET of them (bytes > 0),
        // receiving one from every other rank with particles (ranks 1..N-1); rank 0 has none to send
        k.perRank.forEach((q, at) => {
          expect(q.particleLetsReceived, `rank ${at}`).toBe(at === 0 ? np - 1 : np - 2);
          expect(q.particleBytesSent > 0, `rank ${at}`).toBe(at > 0);
          expect(q.particleBytesReceived > 0, `rank ${at}`).toBe(np > 2 || at === 0);
        });
      }
      // the subsets: each rank's bitwise its full solve (cells; particles and probes unchanged), one process's values
      // at those cells as the full solve's are; compact, so fewer groups walked than all
      const s = k.subset;
      expect(s.notBitwise, kernel).toEqual(Array(np).fill(0));
      expect(s.count, kernel).toBe(s.perRank.reduce((a, q) => a + q.targets, 0));
      expect(s.count, kernel).toBeGreaterThan(4096 / 5 - np);
      if (np <= 2) expect(s.vsSingle, kernel).toBe(0); // one process, or rank 0 holding every cell: bit for bit
      expect(s.vsSingle, kernel).toBeLessThan(1e-4);
      for (const q of s.perRank) {
        expect([q.results, q.statsTargets], kernel).toEqual([q.targets, q.targets]);
        if (q.targets > 0) expect(q.targetGroups, kernel).toBeLessThan(q.fullGroups);
      }
    }
    // particles only, across a rank boundary (particlesCheck.mjs 'boundary'): each kind of point against the softened
    // direct sum within 3 times one process's tree error (a LET that misses the receiver's softened pairs is off by
    // 0.1 to 0.5 of the potential here); 'split': clumps on ranks 0 and 1 (ranks from 2 on without particles),
    // 'one': every particle on the last rank
    for (const layout of ['split', 'one'])
      for (const kernel of ['spline', 'plummer']) {
        const b = r.boundary[`${layout} ${kernel}`];
        for (const part of ['particles', 'probes'] as const) {
          const where = `${layout} ${kernel} ${part} on ${np} ranks`;
          expect(b[part].count, where).toBe(part === 'particles' ? 600 : 100 * np);
          expect(b[part].vsDirect, where).toBeLessThan(3 * b[part].singleVsDirect + 1e-12);
          expect(b[part].accVsDirect, where).toBeLessThan(3 * b[part].singleAccVsDirect + 1e-12);
        }
        const lets = b.perRank.map((q) => q.letsReceived);
        const holders = layout === 'one' || np === 1 ? 1 : 2; // ranks with particles
        expect(lets, `${layout} ${kernel}`).toEqual(b.perRank.map((q) => holders - (q.particles > 0 ? 1 : 0)));
      }
    // a NaN particle on the last rank: its typed error on every rank (none waits), the solver usable afterwards
    const bad = r.badParticle;
    expect(bad.error?.name).toBe('InvalidInputError');
    expect(bad.error?.message).toContain(np > 1 ? `rank ${np - 1} of ${np}: particle 3: x is not finite` : 'particle 3: x is not finite');
    expect(bad.failedOn).toEqual(Array(np).fill(1));
    expect(bad.usableAfter).toEqual(Array(np).fill(1));
    const others = bad.messages.slice(1); // the other ranks' (gathered: a line of theirs could split rank 0's)
    expect(others).toEqual(Array(np - 1).fill(bad.error?.message));
  });
});

describe('periodic boxes under mpirun', () => {
  it('a refined blob in a periodic box (3 and 2 periodic axes, and on a background 1e4 times its mean) and a uniform grid cut in slabs, on 3 ranks, match one process', async () => {
    const run = await mpirun(3, script('periodicCheck.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    for (const l of lines)
      for (const name of ['periodic', 'layer', 'slabs', 'background']) {
        expect(l[name].ranks, name).toBe(3);
        expect(l[name].bytesSent, name).toBeGreaterThan(0);
        // relative to the largest |phi| (|g|): periodic potentials have zero mean, so per-cell ratios mean little
        expect(l[name].potentialDiff, name).toBeLessThan(1e-4);
        expect(l[name].accelerationDiff, name).toBeLessThan(1e-4);
      }
    // every rank removed the same mean density, of every rank's cells: the background plus the blob's mean
    const rho = lines.map((l) => l.background.meanDensity);
    expect(new Set(rho).size).toBe(1);
    expect(rho[0]).toBeGreaterThan(1.2e4 + 1);
    expect(lines[0].layer.meanDensity).toBe(0); // no contrast where the box is not fully periodic
  });
});

describe('failures under mpirun', () => {
  it('bad input on one rank raises that rank\'s error on every rank, and the solver stays usable', async () => {
    const np = 3;
    const run = await mpirun(np, script('badInputCheck.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    for (const name of ['nan-mass', 'mismatched-lengths', 'short-output', 'nan-probe', 'repeated-target', 'probe-outside-slab']) {
      const got = lines.filter((l) => l.case === name);
      expect(got.map((l) => l.rank).sort()).toEqual([0, 1, 2]);
      for (const l of got) {
        expect(l.ok).toBe(false);
        expect(l.name).toBe('InvalidInputError');
        expect(l.message).toContain(`rank ${np - 1} of ${np}`);
      }
    }
    expect(lines.filter((l) => l.case === 'nan-mass')[0].message).toMatch(/cell 17: mass is not finite/);
    expect(lines.filter((l) => l.case === 'mismatched-lengths')[0].message).toMatch(/mismatched array lengths/);
    expect(lines.filter((l) => l.case === 'short-output')[0].message).toMatch(/out.potential has 199 elements, expected 200/);
    expect(lines.filter((l) => l.case === 'nan-probe')[0].message).toMatch(/probe 1: x is not finite/);
    expect(lines.filter((l) => l.case === 'repeated-target')[0].message).toMatch(/targets\[2\] = 3 repeats targets\[0\]/);
    expect(lines.filter((l) => l.case === 'probe-outside-slab')[0].message).toMatch(/probe 0: z is outside the box/);
    expect(lines.filter((l) => l.case === 'after' && l.ok)).toHaveLength(np);
  });

  it("GPU ranks: node-local rank -> device, and backend 'cuda' without a GPU fails on every rank with NoDevice (tree and FMM)", async () => {
    const np = 3;
    const run = await mpirun(np, script('gpuRankCheck.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    expect(lines.map((l) => l.rank).sort()).toEqual([0, 1, 2]);
    for (const l of lines) {
      expect(l.localRank, 'one node: the local rank is the rank').toBe(l.rank);
      expect(l.deviceOfTwo).toBe(l.rank % 2);
      expect(l.after).toBe(true);
      if (nativeFeatures().cuda) continue; // a machine with a GPU: the device check (bench/gpu/device-check.sh mpi)
      // the tree's GPU ranks, and the FMM's (every rank on 'cuda', or rank 0 alone with CPU ranks beside it)
      for (const key of ['cuda', 'fmmCuda', 'fmmMixed']) {
        expect(l[key].ok, key).toBe(false);
        expect(l[key].name, key).toBe('NoDeviceError');
        expect(l[key].message, key).toContain(`rank 0 of ${np}`);
      }
    }
  });

  it('a rank that aborts ends the whole job with its message instead of leaving the others waiting', async () => {
    const run = await mpirun(2, script('abortCheck.mjs'));
    expect(run.timedOut).toBe(false);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('rank 1 of 2: rank 1 could not read its part of the mesh');
    expect(run.stdout).not.toContain('not reached');
  });

  // Without the handlers mpiWorld() installs, rank 1's exit runs MPI_Finalize and waits for rank 0, which waits in
  // its solve for rank 1: the job hangs until the helper kills it. Time to end: 1-3 s on an idle machine.
  it.each([
    ['throw', 'uncaught Error: rank 1 failed before its first solve'],
    ['reject', 'uncaught Error: rank 1 rejected before its first solve'],
    ['exit', 'exited with code 3'],
    ['exitCode', 'exited with code 4'],
  ])('a rank that ends outside a solve (%s) ends the whole job with its message', async (what, message) => {
    const run = await mpirun(2, script('exitCheck.mjs'), { args: [what] });
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(`amrgrav: rank 1 of 2: ${message}`);
    expect(run.stdout).not.toContain('not reached');
  });

  it('a rank killed with SIGKILL before its first solve still ends the job', async () => {
    const run = await mpirun(2, script('exitCheck.mjs'), { args: ['kill'] });
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/signal 9|Killed/);
    expect(run.stdout).not.toContain('not reached');
  });

  it('ranks passing different options (G, boundary, theta, softening) or coincident cells get an error naming them on every rank', async () => {
    const np = 3;
    const run = await mpirun(np, script('optionsCheck.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    for (const [name, pattern] of [
      ['G', /different solve options: G \(from 1 to 2\)/],
      ['boundary', /different solve options: boundary \(from 0 to 1\)/],
      ['theta', /different solve options: theta \(from 0.4 to 0.5\)/],
      ['softening', /different solve options: softening \(from 'spline' to 'plummer'\)/],
    ] as const) {
      const got = lines.filter((l) => l.case === name);
      expect(got.map((l) => l.rank).sort(), name).toEqual([0, 1, 2]);
      for (const l of got) {
        expect(l.ok, name).toBe(false);
        expect(l.name, name).toBe('InvalidOptionError');
        expect(l.message, name).toMatch(pattern);
      }
    }
    const coincident = lines.filter((l) => l.case === 'coincident');
    expect(coincident).toHaveLength(np);
    for (const l of coincident) {
      expect(l.name).toBe('InvalidInputError');
      expect(l.message).toMatch(new RegExp(`rank ${np - 1} of ${np}: cells 40 and 150 have the same centre`));
    }
    expect(lines.filter((l) => l.case === 'same' && l.ok && l.ranks === np)).toHaveLength(np);
  });

  it('the CLI prints once, on rank 0, with the rank count in the JSON', async () => {
    const run = await mpirun(2, join(root, 'dist', 'app', 'cli.js'), { args: ['validate', 'maclaurin', '--levels', '3', '--threads', '1', '--json'] });
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n').filter((l) => l.startsWith('{'));
    expect(lines).toHaveLength(1);
    const r = JSON.parse(lines[0]);
    expect(r.ranks).toBe(2);
    expect(r.cells).toBe(32768);
    expect(r.maxRelError).toBeLessThan(0.01); // against the analytic MacLaurin potential
  });
});

interface FmmScenario {
  name: string;
  boundary: 'isolated' | 'periodic';
  tight: boolean;
  cells: number;
  potentialVsSingle: number;
  accelerationsVsSingle: number;
  distributedVsPhysics: { potential: number; accelerations: number };
  singleVsPhysics: { potential: number; accelerations: number };
  perRank: { cells: number; letNodesSent: number; letCellsSent: number; bytesSent: number; bytesReceived: number; letsSent: number; letsReceived: number; repeatable: boolean; fmm: boolean; seconds: number | null }[];
}

/**
 * fmmCheck.mjs's limit: seven scenarios with their one-process references; 1-4 minutes on the 2-core machine while
 * other builds ran (the 240 s default killed a 4-rank run that would have passed), below vitest's 600 s.
 */
const kFmmCheckMs = 540_000;

/** The checks every scenario of fmmCheck.mjs passes, whatever the split. */
function checkFmmScenario(s: FmmScenario, np: number): void {
  const where = `${s.name} on ${np} ranks`;
  expect(s.perRank.reduce((n, r) => n + r.cells, 0), where).toBe(s.cells);
  for (const r of s.perRank) {
    expect(r.repeatable, where).toBe(true); // bitwise, run to run: LETs evaluated in rank order
    expect(r.fmm, where).toBe(true);
    expect(r.seconds, where).toBeGreaterThan(0); // each rank's solve time reported (device-check's summary reads it)
    // a LET to and from every other rank with cells, its bytes reported
    const others = s.perRank.filter((q) => q !== r && q.cells > 0).length;
    expect(r.letsSent, where).toBe(r.cells > 0 ? others : 0);
    expect(r.letsReceived, where).toBe(r.cells > 0 ? others : 0);
    if (r.letsSent > 0) expect(r.bytesSent, where).toBeGreaterThan(1000);
    if (r.letsSent === 0) expect(r.bytesSent, where).toBe(0);
  }
  // as accurate as one process against physics (direct summation; periodic: an independent Ewald sum)
  expect(s.distributedVsPhysics.potential, where).toBeLessThan(1.001 * s.singleVsPhysics.potential + 1e-12);
  expect(s.distributedVsPhysics.accelerations, where).toBeLessThan(1.001 * s.singleVsPhysics.accelerations + 1e-12);
  expect(s.singleVsPhysics.potential, where).toBeGreaterThan(1e-9); // the FMM approximates: the comparisons can fail
  // N ranks = 1 rank up to the order of the sums: every rank's tree holds the one-process tree's nodes (shared nodes
  // split and completed over the ranks), so the distributed pairs are the one-process pairs at any cut (docs/fmm-design.md
  // section 8); before, cuts through the one-process tree's nodes differed by up to the method's error (1e-7 to 1.5e-5)
  expect(s.potentialVsSingle, where).toBeLessThan(1e-12);
  expect(s.accelerationsVsSingle, where).toBeLessThan(1e-12);
}

describe.each([2, 3, 4])("method 'fmm' on %i ranks (issue #20)", (np) => {
  it('equals the one-process FMM to rounding and is as close to direct summation or an Ewald sum: isolated and periodic, 32^3 and random AMR in whole blocks per rank', async () => {
    const run = await mpirun(np, script('fmmCheck.mjs'), { timeoutMs: kFmmCheckMs });
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const report = lastJson<{ ranks: number; scenarios: FmmScenario[]; sheet: string; sheetRefusedOnEveryRank: boolean }>(run.stdout);
    expect(report.ranks).toBe(np);
    expect(report.scenarios.map((s) => s.name)).toEqual(['uniform32-isolated', 'random-amr-isolated', 'uniform32-periodic',
      'random-amr-periodic', 'uniform32-periodic-tight', 'random-amr-periodic-tight', 'random-amr-periodic-empty-rank']);
    for (const s of report.scenarios) checkFmmScenario(s, np);
    const empty = report.scenarios.find((s) => s.name === 'random-amr-periodic-empty-rank')!;
    expect(empty.perRank[1]).toMatchObject({ cells: 0, letsSent: 0, letsReceived: 0, bytesSent: 0 });
    // a sheet over ranks is not built for the FMM: a typed error naming it, on every rank
    expect(report.sheet).toMatch(/^InvalidOptionError: .*method 'fmm' over MPI ranks takes isolated and fully periodic/);
    expect(report.sheetRefusedOnEveryRank).toBe(true);
  });

  it('equals the one-process FMM to rounding wherever the cuts fall: inside blocks and leaves, and cells scattered over the ranks', async () => {
    const run = await mpirun(np, script('fmmCheck.mjs'), { args: ['cells'], timeoutMs: kFmmCheckMs });
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    const report = lastJson<{ ranks: number; set: string; scenarios: FmmScenario[] }>(run.stdout);
    expect(report.ranks).toBe(np);
    expect(report.set).toBe('cells');
    expect(report.scenarios.map((s) => s.name)).toEqual(['uniform32-isolated-cut-cells', 'random-amr-periodic-cut-cells',
      'random-amr-isolated-scattered', 'uniform32-periodic-scattered']);
    for (const s of report.scenarios) {
      checkFmmScenario(s, np);
      expect(s.perRank.every((r) => r.cells > 0), s.name).toBe(true);
    }
  });
});
