/**
 * method 'fmm' (issue #20) against physics: direct summation of the same cells on the MacLaurin mesh and a random
 * AMR mesh (potential and accelerations), momentum conservation of the symmetric interactions, the same bits for
 * any thread count, the block entry, and typed errors for bad parameters (periodic boxes: test/fmm-periodic.test.ts
 * and test/fmm-sheet.test.ts; MPI ranks: test/mpi.test.ts). The GPU's FMM against the CPU's: native/tools/parity/
 * fmm.cpp and fmm_periodic.cpp (ctest gpu.fmm, gpu.fmm-periodic).
 *
 * The direct sums (validation/directAtTargets.ts: float64, each cell's own pair left out, G = 1, no self term) are
 * taken at 1000 target cells spread over the input plus the cell nearest each corner of the box (whose potential is
 * all far field: the hardest cells for a relative error), over every source cell.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { InvalidInputError, InvalidOptionError, NoDeviceError } from '../solver/errors.js';
import { features } from '../solver/native.js';
import { maclaurinProblem } from '../validation/maclaurinSetup.js';
import { randomAmrCells } from '../validation/randomAmr.js';
import { extractCells, fillVariable, uniformMesh } from '../mesh/index.js';
import type { SolverOptions } from '../solver/options.js';
import { directAtTargets, targetErrors, type DirectReference } from '../validation/directAtTargets.js';
import { clusteredCells, randomCells, relErrors, relVectorError } from './helpers.js';

interface Cells {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  mass: Float64Array;
  size: Float64Array;
}

type Reference = DirectReference;
const reference = directAtTargets;
/** Max relative errors at the reference's targets: potential, acceleration per cell (|da| / |a|) and of max |a|. */
function errors(ref: Reference, r: { potential: Float64Array; accelerations?: { x: Float64Array; y: Float64Array; z: Float64Array } }) {
  const e = targetErrors(ref, r.potential, r.accelerations);
  return { phi: e.potential, acc: e.acceleration, accOfMax: e.accelerationOfMax };
}

const base: SolverOptions = { G: 1, selfPotential: 'none', backend: 'cpu', method: 'fmm', accelerations: true };

describe.each([
  ['random AMR mesh (3 levels)', () => randomAmrCells({ levels: 3, seed: 3 })],
  ['MacLaurin mesh, level 4', () => maclaurinProblem({ levels: 4 }).cells],
])('method fmm on the %s', (_name, make) => {
  let cells: Cells;
  let ref: Reference;
  beforeAll(() => {
    cells = make();
    ref = reference(cells);
  });

  it('potential within 2e-5 of direct summation at the default accuracy, 10x better than the tree at theta 0.5', async () => {
    const fmm = await new GravitySolver(base).solveCells(cells);
    expect(fmm.stats.method).toBe('fmm');
    const e = errors(ref, fmm);
    expect(e.phi).toBeLessThan(2e-5);
    const tree = errors(ref, await new GravitySolver({ ...base, method: 'tree' }).solveCells(cells));
    expect(e.phi).toBeLessThan(tree.phi / 10);
    expect(e.acc).toBeLessThan(tree.acc); // accelerations: better than the tree's
  });

  it('accelerations within 2e-5 of max |a| at the defaults (the acceleration rule), 10x better than without it', async () => {
    const on = errors(ref, await new GravitySolver(base).solveCells(cells));
    expect(on.accOfMax).toBeLessThan(2e-5);
    const off = errors(ref, await new GravitySolver({ ...base, fmmAccelTolerance: 0 }).solveCells(cells));
    expect(on.accOfMax).toBeLessThan(off.accOfMax / 10);
    expect(on.phi).toBeLessThan(off.phi); // the lists only grow: the potential gains too
  });

  it('accelerations within 2e-5 of direct summation, per cell, with fmmTheta 0.3', async () => {
    const opts = { ...base, fmmOrder: 7, fmmTheta: 0.3, fmmTolerance: 0, fmmAccelTolerance: 0 };
    const r = await new GravitySolver(opts).solveCells(cells);
    const e = errors(ref, r);
    expect(e.acc).toBeLessThan(2e-5);
    expect(e.phi).toBeLessThan(2e-6);
  });

  it('conserves momentum to rounding: |sum m a| <= 1e-10 sum |m a|', async () => {
    const r = await new GravitySolver(base).solveCells(cells);
    const a = r.accelerations!;
    let px = 0, py = 0, pz = 0, total = 0;
    for (let i = 0; i < cells.x.length; i++) {
      const m = cells.mass[i];
      px += m * a.x[i];
      py += m * a.y[i];
      pz += m * a.z[i];
      total += m * Math.hypot(a.x[i], a.y[i], a.z[i]);
    }
    expect(Math.hypot(px, py, pz)).toBeLessThan(1e-10 * total);
  });
});

describe('method fmm at every cell of a random AMR mesh', () => {
  // Coarse 4^3 leaves (cells of 1/16) beside regions up to 64x denser: such a leaf cannot be opened and takes the
  // M2L of hundreds of small sources, whose target-side truncation errors share their sign (docs/fmm-design.md,
  // section 3, "Every cell of random AMR meshes"); before the MAC's test 2b this mesh had 3.3e-5 at its worst cells,
  // which 1000 sampled targets miss. Potential only: the acceleration rule's extra pairs would hide it.
  it('potential within 2e-5 of direct summation at every cell at the defaults', async () => {
    const cells = randomAmrCells({ levels: 3, seed: 10 });
    const opts: SolverOptions = { G: 1, selfPotential: 'none', backend: 'cpu', threads: 2 };
    const fmm = await new GravitySolver({ ...opts, method: 'fmm' }).solveCells(cells);
    const direct = await new GravitySolver(opts).directCells(cells);
    expect(relErrors(fmm.potential, direct.potential).max).toBeLessThan(2e-5);
  });
});

describe('method fmm: determinism, parameters, entries', () => {
  const cells = randomAmrCells({ levels: 2, seed: 11 });

  it('gives the same bits for any thread count', async () => {
    const runs = await Promise.all([1, 2, 3].map((threads) => new GravitySolver({ ...base, threads }).solveCells(cells)));
    for (const r of runs.slice(1)) {
      expect(Buffer.from(r.potential.buffer).equals(Buffer.from(runs[0].potential.buffer))).toBe(true);
      for (const k of ['x', 'y', 'z'] as const)
        expect(Buffer.from(r.accelerations![k].buffer).equals(Buffer.from(runs[0].accelerations![k].buffer))).toBe(true);
    }
  });

  it('point cells (no 4^3 leaves: every P2P computed): random within 2e-5; clustered within 2e-5 at fmmTheta 0.3', async () => {
    const opts: SolverOptions = { G: 1, selfPotential: 'none', backend: 'cpu', accelerations: true };
    const random = randomCells(8000, 4);
    const fmm = await new GravitySolver({ ...opts, method: 'fmm' }).solveCells(random);
    const direct = await new GravitySolver(opts).directCells(random);
    expect(relErrors(fmm.potential, direct.potential).max).toBeLessThan(2e-5);
    expect(relVectorError(fmm.accelerations!, direct.accelerations!)).toBeLessThan(2e-5);
    // two Plummer-like clusters of points, 13 tree levels: the defaults, tuned on meshes, gave ~1e-4 here (about the
    // tree's error at theta 0.5; README) before the MAC's test 2b (a leaf's target side: physics/fmm_mac_k.h), 1.7e-5
    // with it; a smaller opening angle gains another ~7x
    const clustered = clusteredCells(8000, 5);
    const ref = await new GravitySolver(opts).directCells(clustered);
    const err = async (o: SolverOptions) =>
      relErrors((await new GravitySolver({ ...opts, method: 'fmm', fmmAccelTolerance: 0, ...o }).solveCells(clustered)).potential, ref.potential).max;
    const coarse = await err({});
    expect(coarse).toBeLessThan(2e-4);
    const fine = await err({ fmmTheta: 0.3 });
    expect(fine).toBeLessThan(2e-5);
    expect(fine).toBeLessThan(coarse / 4);
  });

  it('accelerations with fmmAccelTolerance 0 leave the potential\'s lists and bits; the rule (default) adds near pairs', async () => {
    const plain = await new GravitySolver({ ...base, accelerations: false }).solveCells(cells);
    const off = await new GravitySolver({ ...base, fmmAccelTolerance: 0 }).solveCells(cells);
    expect(Buffer.from(off.potential.buffer).equals(Buffer.from(plain.potential.buffer))).toBe(true);
    expect(off.stats.directInteractionsPerCell).toBe(plain.stats.directInteractionsPerCell);
    expect(off.stats.approxInteractionsPerCell).toBe(plain.stats.approxInteractionsPerCell);
    const on = await new GravitySolver(base).solveCells(cells);
    expect(on.stats.directInteractionsPerCell).toBeGreaterThan(plain.stats.directInteractionsPerCell);
    // without accelerations the option has no effect
    const ignored = await new GravitySolver({ ...base, accelerations: false, fmmAccelTolerance: 1e-6 }).solveCells(cells);
    expect(Buffer.from(ignored.potential.buffer).equals(Buffer.from(plain.potential.buffer))).toBe(true);
  });

  it('error falls with the expansion order and the tolerance', async () => {
    const ref = reference(cells, 300);
    // the potential's rules alone (the acceleration rule would decide these lists)
    const err = async (o: SolverOptions) =>
      errors(ref, await new GravitySolver({ ...base, fmmAccelTolerance: 0, ...o }).solveCells(cells)).phi;
    const p3 = await err({ fmmOrder: 3, fmmTolerance: 0 });
    const p5 = await err({ fmmOrder: 5, fmmTolerance: 0 });
    const p7 = await err({ fmmOrder: 7, fmmTolerance: 0 });
    expect(p5).toBeLessThan(p3);
    expect(p7).toBeLessThan(p5);
    expect(await err({ fmmTolerance: 1e-6 })).toBeLessThan(await err({ fmmTolerance: 1e-3 }));
  });

  it('applies G and the self term as the tree does', async () => {
    const G = 6.674e-8;
    const opts: SolverOptions = { G, selfPotential: 'lattice', backend: 'cpu' };
    const fmm = await new GravitySolver({ ...opts, method: 'fmm' }).solveCells(cells);
    const direct = await new GravitySolver(opts).directCells(cells);
    for (let i = 0; i < cells.x.length; i += 97)
      expect(Math.abs(fmm.potential[i] - direct.potential[i]) / Math.abs(direct.potential[i])).toBeLessThan(2e-5);
  });

  it('the block entry (a mesh) gives the cell entry\'s bits', async () => {
    const mesh = uniformMesh({ lrefineMax: 3, level: 2 });
    fillVariable(mesh, 'dens', (x, y, z) => 1 + Math.sin(6 * x) * Math.cos(5 * y) * z);
    const solver = new GravitySolver({ G: 1, backend: 'cpu', method: 'fmm' });
    const viaBlocks = await solver.solve(mesh);
    expect(viaBlocks.stats.method).toBe('fmm');
    expect(viaBlocks.stats.treeReused).toBe(false);
    const viaCells = await solver.solveCells(extractCells(mesh, 'dens'));
    expect(Buffer.from(viaBlocks.potential.buffer).equals(Buffer.from(viaCells.potential.buffer))).toBe(true);
    // a tree solve after it on the same (unchanged) mesh still builds its own tree: the FMM left none to reuse
    const tree = await new GravitySolver({ G: 1, backend: 'cpu' }).solve(mesh);
    expect(tree.stats.treeReused).toBe(false);
  });

  it("backend 'auto' runs an isolated FMM on the GPU where one is usable (GPU stage 1), else on the CPU", async () => {
    const r = await new GravitySolver({ ...base, backend: 'auto', autoGpuMinCells: 0 }).solveCells(cells);
    expect(r.stats.backend).toBe(features().gpu ? 'cuda' : 'cpu');
    expect(r.stats.method).toBe('fmm');
  });

  it("names the FMM in its solve's errors (a negative mass in an isolated box)", async () => {
    const bad = { ...cells, mass: Float64Array.from(cells.mass, (m, i) => (i === 3 ? -m : m)) };
    const fmm = new GravitySolver({ ...base, method: 'fmm' }).solveCells(bad);
    await expect(fmm).rejects.toThrow(InvalidInputError);
    await expect(new GravitySolver({ ...base, method: 'fmm' }).solveCells(bad)).rejects.toThrow(/^FMM solve: .*mass/);
    await expect(new GravitySolver({ ...base, method: 'tree' }).solveCells(bad)).rejects.toThrow(/^tree solve: .*mass/);
  });

  it('refuses a system solve (probes, target subsets) with a typed error instead of walking the tree', async () => {
    const solver = new GravitySolver({ ...base, method: 'fmm' });
    const probes = { x: new Float64Array([0.5]), y: new Float64Array([0.5]), z: new Float64Array([0.5]) };
    await expect(solver.solveSystem({ cells, probes })).rejects.toThrow(InvalidOptionError);
    await expect(solver.solveSystem({ cells }, { targets: [0, 1] })).rejects.toThrow(/method 'fmm' does not take probes/);
  });

  it("backend 'auto' and 'cuda' take periodic boxes (fully, sheets): the GPU where one is usable, else the CPU or a NoDevice error", async () => {
    const box = { box: { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] } };
    for (const boundary of ['periodic', { x: 'periodic', y: 'periodic', z: 'isolated' }] as const) {
      const auto = await new GravitySolver({ ...base, backend: 'auto', autoGpuMinCells: 0, boundary }).solveCells(cells, box);
      expect(auto.stats.backend).toBe(features().gpu ? 'cuda' : 'cpu');
      expect(auto.stats.method).toBe('fmm');
      const cuda: SolverOptions = { ...base, backend: 'cuda', boundary };
      if (features().gpu) expect((await new GravitySolver(cuda).solveCells(cells, box)).stats.backend).toBe('cuda');
      else expect(() => new GravitySolver(cuda)).toThrow(NoDeviceError); // not an InvalidOptionError any more
    }
  });

  it('rejects bad parameters with typed errors naming them', () => {
    const bad: [SolverOptions, RegExp][] = [
      [{ method: 'fmm', fmmOrder: 8 }, /fmmOrder/],
      [{ method: 'fmm', fmmOrder: 2.5 }, /fmmOrder/],
      [{ method: 'fmm', fmmTheta: 1 }, /fmmTheta/],
      [{ method: 'fmm', fmmTolerance: -1 }, /fmmTolerance/],
      [{ method: 'fmm', fmmAccelTolerance: -1 }, /fmmAccelTolerance/],
      [{ method: 'fmm', fmmAccelTolerance: 1 }, /fmmAccelTolerance/],
      [{ method: 'bh' as 'tree' }, /'method'/],
    ];
    for (const [o, re] of bad) {
      expect(() => new GravitySolver(o)).toThrow(InvalidOptionError);
      expect(() => new GravitySolver(o)).toThrow(re);
    }
  });
});
