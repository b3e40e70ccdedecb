/**
 * The block entry (issue #17) through the Node API on the CPU backend: GravitySolver.solve(mesh) and GravityModule
 * now pass the leaf blocks natively (the density read and the potential written in place), bitwise the cell path
 * on extractCells' cells; solveBlocks with a FLASH-like layout (variables interleaved, guard cells, blocks at
 * scattered slots) and float32; the tree kept on an unchanged mesh; errors that name the block.
 */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { GravityModule } from '../solver/gravityModule.js';
import { InvalidInputError } from '../solver/errors.js';
import { extractCells, fillVariable, meshBlocks, uniformMesh, type AmrMesh } from '../mesh/index.js';
import { sphereMesh } from './helpers.js';

/** Bitwise equality of two float arrays (as bytes). */
function sameBits(a: Float64Array | Float32Array, b: Float64Array | Float32Array): boolean {
  if (a.length !== b.length) return false;
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  return x.every((v, i) => v === y[i]);
}

function boxOf(mesh: AmrMesh) {
  return { lo: [...mesh.options.domainLo] as [number, number, number], hi: [...mesh.options.domainHi] as [number, number, number] };
}

describe('block entry (Node API, CPU backend)', () => {
  it('solve(mesh) goes through the blocks and is bitwise the cell path, potential and accelerations', async () => {
    const { mesh } = sphereMesh(0.3, 4);
    const solver = new GravitySolver({ backend: 'cpu', accelerations: true });
    const viaBlocks = await solver.solve(mesh);
    const cells = extractCells(mesh, 'dens');
    const viaCells = await new GravitySolver({ backend: 'cpu', accelerations: true }).solveCells(cells, { box: boxOf(mesh) });
    expect(viaBlocks.stats.cells).toBe(cells.count);
    expect(sameBits(viaBlocks.potential, viaCells.potential)).toBe(true);
    expect(sameBits(viaBlocks.accelerations!.x, viaCells.accelerations!.x)).toBe(true);
    expect(sameBits(viaBlocks.accelerations!.z, viaCells.accelerations!.z)).toBe(true);
    // the variables hold the results at the leaf cells
    const gpot = mesh.variable('gpot');
    for (let i = 0; i < cells.count; i += 97) expect(gpot[cells.block[i] * mesh.cellsPerBlock + cells.cell[i]]).toBe(viaCells.potential[i]);
  });

  it('reads a FLASH-like unk in place (3 variables, 2 guard cells, scattered slots), float64 and float32', async () => {
    const mesh = uniformMesh({ lrefineMax: 3, level: 2 });
    fillVariable(mesh, 'dens', (x, y, z) => 1 + 20 * Math.exp(-((x - 0.3) ** 2 + (y - 0.6) ** 2 + (z - 0.5) ** 2) / 0.02));
    const mb = meshBlocks(mesh);
    const { nxb, nyb, nzb } = mesh.options;
    const g = 2, V = 3, NX = nxb + 2 * g, NY = nyb + 2 * g, NZ = nzb + 2 * g;
    const nb = mb.leaves.length, slots = 2 * nb + 3;
    const slot = Int32Array.from(mb.leaves, (_, k) => slots - 1 - 2 * k);
    const el = (s: number, v: number, i: number, j: number, k: number) => v + V * (i + g + NX * (j + g + NY * (k + g + NZ * s)));
    const dens = mesh.variable('dens');
    const cpb = mesh.cellsPerBlock;
    for (const [T, name] of [[Float64Array, 'float64'], [Float32Array, 'float32']] as const) {
      const unk = new T(V * NX * NY * NZ * slots).fill(-777);
      mb.leaves.forEach((b, k) => {
        for (let kk = 0; kk < nzb; kk++)
          for (let j = 0; j < nyb; j++)
            for (let i = 0; i < nxb; i++) unk[el(slot[k], 1, i, j, kk)] = dens[b * cpb + (kk * nyb + j) * nxb + i];
      });
      const before = unk.slice();
      const solver = new GravitySolver({ backend: 'cpu' });
      const { stats } = await solver.solveBlocks(
        { nxb, nyb, nzb, lo: mb.lo, dx: mb.dx, blockIndex: slot, guard: g, varStride: V, density: unk.subarray(1) },
        { box: boxOf(mesh), out: { potential: unk.subarray(2) } },
      );
      expect(stats.cells, name).toBe(nb * cpb);
      // the same cells through the cell entry (float32: the densities as the float32 array holds them)
      const cells = extractCells(mesh, 'dens');
      if (name === 'float32') for (let p = 0; p < cells.count; p++) {
        const b = cells.block[p];
        const [dx, dy, dz] = mesh.blockCellSize(b);
        cells.mass[p] = Math.fround(dens[b * cpb + cells.cell[p]]) * (dx * dy * dz);
      }
      const ref = await new GravitySolver({ backend: 'cpu' }).solveCells(cells, { box: boxOf(mesh) });
      const got = new Float64Array(cells.count);
      let changedElsewhere = 0;
      mb.leaves.forEach((b, k) => {
        for (let kk = 0; kk < nzb; kk++)
          for (let j = 0; j < nyb; j++)
            for (let i = 0; i < nxb; i++) got[k * cpb + (kk * nyb + j) * nxb + i] = unk[el(slot[k], 2, i, j, kk)];
      });
      const expected = name === 'float32' ? Float64Array.from(ref.potential, Math.fround) : ref.potential;
      expect(sameBits(got, expected), name).toBe(true);
      // only the potential's interior elements changed
      for (let e = 0; e < unk.length; e++) if (unk[e] !== before[e] && e % V !== 2) changedElsewhere++;
      expect(changedElsewhere, name).toBe(0);
    }
  });

  it('keeps the tree on an unchanged mesh (GravityModule), bitwise a fresh solve, and rebuilds after refinement', async () => {
    const mesh = uniformMesh({ lrefineMax: 4, level: 2 });
    const rho = (s: number) => (x: number, y: number, z: number) => 1 + 10 * Math.exp(-((x - 0.4 - 0.05 * s) ** 2 + (y - 0.5) ** 2 + (z - 0.6) ** 2) / 0.01);
    fillVariable(mesh, 'dens', rho(0));
    const opts = { backend: 'cpu' as const, accelerations: true };
    const gravity = GravityModule.init(mesh, opts);
    const s1 = await gravity.computePotential(mesh);
    expect(s1.stats.treeReused).toBe(false);
    fillVariable(mesh, 'dens', rho(1));
    const s2 = await gravity.computePotential(mesh);
    expect(s2.stats.treeReused).toBe(true);
    const fresh = await new GravitySolver(opts).solveCells(extractCells(mesh, 'dens'), { box: boxOf(mesh) });
    expect(sameBits(s2.potential, fresh.potential)).toBe(true);
    expect(sameBits(s2.accelerations!.y, fresh.accelerations!.y)).toBe(true);
    mesh.refineBlock(mesh.leafBlocks()[5]);
    fillVariable(mesh, 'dens', rho(1));
    const s3 = await gravity.computePotential(mesh);
    expect(s3.stats.treeReused).toBe(false);
    const fresh3 = await new GravitySolver(opts).solveCells(extractCells(mesh, 'dens'), { box: boxOf(mesh) });
    expect(sameBits(s3.potential, fresh3.potential)).toBe(true);
    gravity.finalize();
  });

  it('names the block in errors, and refuses arrays too short for the layout', async () => {
    const mesh = uniformMesh({ lrefineMax: 2, level: 2 });
    fillVariable(mesh, 'dens', () => 1);
    const mb = meshBlocks(mesh);
    const { nxb, nyb, nzb } = mesh.options;
    const solver = new GravitySolver({ backend: 'cpu' });
    const dens = mesh.variable('dens').slice();
    const pot = new Float64Array(dens.length);
    const base = { nxb, nyb, nzb, lo: mb.lo, dx: mb.dx, blockIndex: mb.blockIndex };
    dens[mb.blockIndex[0] * mesh.cellsPerBlock + 3] = -1;
    await expect(solver.solveBlocks({ ...base, density: dens }, { out: { potential: pot } })).rejects.toThrow(
      /block 0 \(slot \d+\), cell \(3, 0, 0\): density is negative \(got -1\)/,
    );
    dens.fill(1);
    const bent = mb.dx.slice();
    bent[3 * 1 + 2] *= 1.01;
    await expect(solver.solveBlocks({ ...base, dx: bent, density: dens }, { out: { potential: pot } })).rejects.toThrow(/block 1: cells must be cubes/);
    await expect(solver.solveBlocks({ ...base, density: dens.subarray(0, 10) }, { out: { potential: pot } })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    await expect(solver.solveBlocks({ ...base, density: dens }, { out: { potential: new Float32Array(pot.length) } })).rejects.toThrow(
      /out.potential must be a Float64Array \(the density's type\)/,
    );
  });
});
