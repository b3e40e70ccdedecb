/** Leaf cells out as arrays and values back: masses, ordering, round trips, subsampled fills, cubic-cell check. */
import { describe, expect, it } from 'vitest';
import {
  AmrMesh,
  MeshError,
  extractCells,
  fillVariable,
  refineMesh,
  uniformMesh,
  writeBack,
  type Vec3,
} from '../mesh/index.js';

/** A mesh refined towards a point to lrefineMax (leaves at three or more levels). */
function adaptiveMesh(opts: ConstructorParameters<typeof AmrMesh>[0], p: Vec3): AmrMesh {
  const mesh = new AmrMesh(opts);
  return refineMesh(mesh, (m, b) => [0, 1, 2].every((d) => m.block(b).lo[d] <= p[d] && p[d] <= m.block(b).hi[d]));
}

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MeshError);
    return `${(e as MeshError).code}: ${(e as MeshError).message}`;
  }
  return 'nothing thrown';
}

describe('extractCells', () => {
  it('total mass of a constant density equals rho x domain volume exactly on a refined mesh', () => {
    const mesh = adaptiveMesh({ lrefineMax: 4, nxb: 4, nyb: 4, nzb: 4 }, [0.3, 0.7, 0.1]);
    expect(new Set(mesh.leafBlocks().map((b) => mesh.block(b).level)).size).toBeGreaterThanOrEqual(3);
    fillVariable(mesh, 'dens', () => 2.5);
    const cells = extractCells(mesh);
    let mass = 0;
    for (let p = 0; p < cells.count; p++) mass += cells.mass[p];
    expect(mass).toBe(2.5);
  });

  it('cells follow leafBlocks order, i fastest, with centres inside their block and size = cell side', () => {
    const mesh = adaptiveMesh({ lrefineMax: 3, nxb: 2, nyb: 4, nzb: 2, domainHi: [1, 2, 1] }, [0.5, 0.5, 0.5]);
    mesh.addVariable('dens');
    const cells = extractCells(mesh);
    const leaves = mesh.leafBlocks();
    expect(cells.count).toBe(leaves.length * 16);
    expect([cells.x, cells.y, cells.z, cells.mass, cells.size, cells.block, cells.cell].map((a) => a.length)).toEqual(
      Array(7).fill(cells.count),
    );
    for (let p = 0; p < cells.count; p++) {
      const b = leaves[Math.floor(p / 16)];
      const c = p % 16;
      expect(cells.block[p]).toBe(b);
      expect(cells.cell[p]).toBe(c);
      const [i, j, k] = [c % 2, Math.floor(c / 2) % 4, Math.floor(c / 8)];
      expect([cells.x[p], cells.y[p], cells.z[p]]).toEqual(mesh.cellCentre(b, i, j, k));
      expect(cells.size[p]).toBe(mesh.blockCellSize(b)[0]);
    }
  });

  it('rootBlocks [2, 1, 1] on [0,2] x [0,1] x [0,1] has cubic cells and tiles the domain', () => {
    const mesh = uniformMesh({ domainHi: [2, 1, 1], rootBlocks: [2, 1, 1], lrefineMax: 2, level: 2 });
    expect(mesh.blockCellSize(mesh.leafBlocks()[0])).toEqual([1 / 16, 1 / 16, 1 / 16]);
    fillVariable(mesh, 'dens', (x) => (x < 1 ? 1 : 3));
    const cells = extractCells(mesh);
    expect(cells.count).toBe(2 * 16 * 16 * 16);
    expect(Math.max(...cells.x)).toBe(2 - 1 / 32);
    let mass = 0;
    for (let p = 0; p < cells.count; p++) mass += cells.mass[p];
    expect(mass).toBe(1 * 1 + 3 * 1);
  });

  it('rejects non-cubic cells, explaining why', () => {
    const mesh = uniformMesh({ domainHi: [2, 1, 1] });
    mesh.addVariable('dens');
    expect(codeOf(() => extractCells(mesh))).toMatch(/^NON_CUBIC_CELLS: the tree solver needs cubic cells, but cells are 0.25 x 0.125 x 0.125 cm/);
    const unequalCounts = uniformMesh({ nxb: 4, nyb: 8, nzb: 8 });
    unequalCounts.addVariable('dens');
    expect(codeOf(() => extractCells(unequalCounts))).toMatch(/^NON_CUBIC_CELLS/);
  });

  it('a density variable that does not exist is an UNKNOWN_VARIABLE error', () => {
    expect(codeOf(() => extractCells(uniformMesh(), 'rho'))).toMatch(/^UNKNOWN_VARIABLE: unknown mesh variable 'rho'/);
  });
});

describe('writeBack', () => {
  it('round trip: values written per cell come back through extractCells of that variable', () => {
    const mesh = adaptiveMesh({ lrefineMax: 3, nxb: 4, nyb: 4, nzb: 4 }, [0.9, 0.2, 0.4]);
    fillVariable(mesh, 'dens', () => 1);
    const cells = extractCells(mesh);
    const values = Float64Array.from(cells.x, (x, p) => x + 10 * cells.y[p] + 100 * cells.z[p]);
    writeBack(mesh, 'gpot', cells, values);
    expect(mesh.hasVariable('gpot')).toBe(true);
    // read it back as a "density": mass / volume recovers the value
    const again = extractCells(mesh, 'gpot');
    for (let p = 0; p < cells.count; p++) {
      expect(again.mass[p] / cells.size[p] ** 3).toBeCloseTo(values[p], 12);
    }
    // and it landed in the FLASH unk layout
    const v = mesh.variable('gpot');
    const b = cells.block[5];
    expect(v[b * 64 + cells.cell[5]]).toBe(values[5]);
  });

  it('checks the length and refuses cells of a mesh refined since', () => {
    const mesh = uniformMesh({ lrefineMax: 2 });
    mesh.addVariable('dens');
    const cells = extractCells(mesh);
    expect(codeOf(() => writeBack(mesh, 'gpot', cells, new Float64Array(cells.count - 1)))).toMatch(
      /^LENGTH_MISMATCH: writeBack 'gpot': 511 values for 512 cells/,
    );
    mesh.refineBlock(0);
    expect(codeOf(() => writeBack(mesh, 'gpot', cells, new Float64Array(cells.count)))).toMatch(/^STALE_CELLS/);
  });
});

describe('fillVariable', () => {
  it('subsample 1 is the centre value; leaves only', () => {
    const mesh = uniformMesh({ lrefineMax: 2, level: 2, nxb: 2, nyb: 2, nzb: 2 });
    fillVariable(mesh, 'f', (x, y, z) => x + 2 * y + 4 * z);
    const v = mesh.variable('f');
    for (const b of mesh.leafBlocks()) {
      const [x, y, z] = mesh.cellCentre(b, 1, 0, 1);
      expect(v[b * 8 + 5]).toBe(x + 2 * y + 4 * z);
    }
    expect(Array.from(v.subarray(0, 8))).toEqual(Array(8).fill(0)); // block 0 is a parent
  });

  it('subsampling gives volume fractions of cells cut by a plane', () => {
    const mesh = uniformMesh({ nxb: 2, nyb: 2, nzb: 2 });
    // the plane x = 0.3 cuts the x-cells [0, 0.5] at 60 %; 5 samples per axis hit it exactly
    fillVariable(mesh, 'frac', (x) => (x < 0.3 ? 1 : 0), { subsample: 5 });
    const v = mesh.variable('frac');
    for (let c = 0; c < 8; c++) expect(v[c]).toBeCloseTo(c % 2 === 0 ? 0.6 : 0, 14);
    expect(codeOf(() => fillVariable(mesh, 'frac', () => 0, { subsample: 0 }))).toMatch(/^INVALID_OPTION/);
  });
});
