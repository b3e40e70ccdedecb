/** AmrMesh basics: options, uniform meshes, refinement, variables and the errors a caller can hit. */
import { describe, expect, it } from 'vitest';
import { AmrMesh, MeshError, uniformMesh, type MeshOptions } from '../mesh/index.js';

function thrown(f: () => unknown): MeshError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MeshError);
    return e as MeshError;
  }
  throw new Error('expected a MeshError, nothing was thrown');
}

describe('uniform meshes', () => {
  it('defaults: one 8^3 root block on the unit cube, lrefineMax 4', () => {
    const mesh = new AmrMesh();
    expect(mesh.options).toEqual({
      domainLo: [0, 0, 0],
      domainHi: [1, 1, 1],
      rootBlocks: [1, 1, 1],
      nxb: 8,
      nyb: 8,
      nzb: 8,
      lrefineMax: 4,
    });
    expect(mesh.blockCount).toBe(1);
    expect(mesh.leafBlocks()).toEqual([0]);
    expect(mesh.block(0)).toMatchObject({ level: 1, lo: [0, 0, 0], hi: [1, 1, 1], parent: -1, children: [], coord: [0, 0, 0] });
  });

  it.each([1, 2, 3])('level %i: 8^(L-1) leaves, (8 * 2^(L-1))^3 cells of side 1 / (8 * 2^(L-1))', (level) => {
    const mesh = uniformMesh({ level, lrefineMax: 3 });
    const leaves = mesh.leafBlocks();
    expect(leaves).toHaveLength(8 ** (level - 1));
    expect(leaves.length * mesh.cellsPerBlock).toBe((8 * 2 ** (level - 1)) ** 3);
    // blocks: 1 + 8 + ... + 8^(L-1), parents included
    expect(mesh.blockCount).toBe((8 ** level - 1) / 7);
    const h = 1 / (8 * 2 ** (level - 1));
    for (const b of leaves) {
      expect(mesh.block(b).level).toBe(level);
      expect(mesh.blockCellSize(b)).toEqual([h, h, h]);
    }
  });

  it('non-cubic blocks and cell counts per axis', () => {
    const mesh = uniformMesh({ domainLo: [-1, 0, 2], domainHi: [1, 3, 6], nxb: 4, nyb: 6, nzb: 2, level: 2 });
    expect(mesh.cellsPerBlock).toBe(48);
    const b = mesh.leafBlocks()[0];
    expect(mesh.block(b)).toMatchObject({ lo: [-1, 0, 2], hi: [0, 1.5, 4] });
    expect(mesh.blockCellSize(b)).toEqual([0.25, 0.25, 1]);
    expect(mesh.cellCentre(b, 0, 0, 0)).toEqual([-0.875, 0.125, 2.5]);
    expect(mesh.cellCentre(b, 3, 5, 1)).toEqual([-0.125, 1.375, 3.5]);
  });
});

describe('refinement', () => {
  it('children halve the parent in Morton order i + 2j + 4k and point back to it', () => {
    const mesh = new AmrMesh({ domainHi: [2, 2, 2] });
    const children = mesh.refineBlock(0);
    expect(mesh.block(0).children).toEqual(children);
    children.forEach((c, octant) => {
      const o = [octant & 1, (octant >> 1) & 1, octant >> 2];
      expect(mesh.block(c)).toMatchObject({ level: 2, parent: 0, coord: o, lo: o, hi: o.map((x) => x + 1), children: [] });
    });
    expect(mesh.isLeaf(0)).toBe(false);
  });

  it('prolongs every variable by injection: each child cell takes the parent cell it lies in', () => {
    const mesh = new AmrMesh({ nxb: 4, nyb: 2, nzb: 6 });
    mesh.addVariable('dens');
    mesh.addVariable('temp');
    const parentCells = mesh.cellsPerBlock;
    const dens = mesh.variable('dens');
    const temp = mesh.variable('temp');
    for (let c = 0; c < parentCells; c++) {
      dens[c] = 1000 + c;
      temp[c] = -c;
    }
    const children = mesh.refineBlock(0);
    const dens2 = mesh.variable('dens');
    const temp2 = mesh.variable('temp');
    expect(dens2).toHaveLength(9 * parentCells);
    const { nxb, nyb, nzb } = mesh.options;
    for (const b of children) {
      for (let k = 0; k < nzb; k++)
        for (let j = 0; j < nyb; j++)
          for (let i = 0; i < nxb; i++) {
            // the parent cell containing this child cell's centre, found geometrically
            const [x, y, z] = mesh.cellCentre(b, i, j, k);
            const pc = (Math.floor(z * nzb) * nyb + Math.floor(y * nyb)) * nxb + Math.floor(x * nxb);
            const idx = ((b * nzb + k) * nyb + j) * nxb + i;
            expect(dens2[idx]).toBe(1000 + pc);
            expect(temp2[idx]).toBe(-pc);
          }
    }
    // the parent keeps its values
    expect(Array.from(dens2.subarray(0, parentCells))).toEqual(Array.from(dens.subarray(0, parentCells)));
  });

  it('refuses to go past lrefineMax or to refine a parent again', () => {
    const mesh = uniformMesh({ lrefineMax: 2, level: 2 });
    const leaf = mesh.leafBlocks()[3];
    const e = thrown(() => mesh.refineBlock(leaf));
    expect(e.code).toBe('MAX_LEVEL');
    expect(e.message).toMatch(/level 2 and lrefineMax is 2/);
    expect(thrown(() => mesh.refineBlock(0)).code).toBe('NOT_A_LEAF');
    expect(thrown(() => mesh.refineBlock(99)).code).toBe('INVALID_BLOCK');
  });
});

describe('variables', () => {
  it('grow with the mesh and keep values; names are listed; addVariable is idempotent', () => {
    const mesh = new AmrMesh();
    mesh.addVariable('dens');
    mesh.variable('dens').fill(3);
    mesh.addVariable('dens');
    expect(mesh.variable('dens')[0]).toBe(3);
    mesh.addVariable('gpot');
    expect(mesh.variableNames()).toEqual(['dens', 'gpot']);
    expect(mesh.hasVariable('gpot')).toBe(true);
    expect(mesh.hasVariable('pres')).toBe(false);
    for (let i = 0; i < 3; i++) for (const b of mesh.leafBlocks().slice(0, 2)) mesh.refineBlock(b);
    expect(mesh.variable('gpot')).toHaveLength(mesh.blockCount * 512);
    expect(mesh.variable('dens').every((v) => v === 3)).toBe(true);
  });

  it('unknown names throw UNKNOWN_VARIABLE naming the known ones', () => {
    const mesh = new AmrMesh();
    mesh.addVariable('dens');
    const e = thrown(() => mesh.variable('denz'));
    expect(e.code).toBe('UNKNOWN_VARIABLE');
    expect(e.message).toMatch(/unknown mesh variable 'denz' \(variables: 'dens'\)/);
  });
});

describe('invalid options', () => {
  it.each<[string, MeshOptions & { level?: number }, RegExp]>([
    ['odd nxb', { nxb: 7 }, /'nxb': expected an even integer >= 2.*got 7/],
    ['nyb of 0', { nyb: 0 }, /'nyb': expected an even integer >= 2.*got 0/],
    ['fractional nzb', { nzb: 4.5 }, /'nzb'.*got 4.5/],
    ['lrefineMax 0', { lrefineMax: 0 }, /'lrefineMax': expected an integer >= 1, got 0/],
    ['domainHi == domainLo on y', { domainLo: [0, 1, 0], domainHi: [1, 1, 1] }, /'domainHi': expected domainHi > domainLo/],
    ['NaN domain', { domainHi: [1, NaN, 1] }, /'domainHi': expected three finite numbers/],
    ['non-integer rootBlocks', { rootBlocks: [1, 1.5, 1] }, /'rootBlocks': expected three positive integers, got \[1, 1.5, 1\]/],
    ['zero rootBlocks', { rootBlocks: [0, 1, 1] }, /'rootBlocks'/],
    ['absurd lrefineMax', { lrefineMax: 40 }, /'lrefineMax': expected a level with at most 2\^30 blocks per axis/],
    ['level beyond lrefineMax', { lrefineMax: 2, level: 3 }, /'level': expected an integer in \[1, lrefineMax = 2\], got 3/],
  ])('%s', (_name, opts, message) => {
    const e = thrown(() => uniformMesh(opts));
    expect(e.code).toBe('INVALID_OPTION');
    expect(e.name).toBe('MeshError');
    expect(e.message).toMatch(message);
  });
});
