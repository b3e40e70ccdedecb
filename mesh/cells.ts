/**
 * The bridge between the mesh and the cell-array solver: leaf cells out as plain arrays (centres, masses, sides),
 * per-cell results back into block variables, and analytic fields onto the mesh.
 */
import type { AmrMesh } from './amrMesh.js';
import { MeshError } from './errors.js';

/** Leaf cells as structs of arrays, in {@link AmrMesh.leafBlocks} order with i fastest inside each block. */
export interface CellArrays {
  /** Cell centres, cm. */
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  /** Density x cell volume, g. */
  mass: Float64Array;
  /** Cell side, cm (cells are cubic). */
  size: Float64Array;
  /** Block index of each cell. */
  block: Int32Array;
  /** Cell index inside its block, (k * nyb + j) * nxb + i. */
  cell: Int32Array;
  count: number;
}

const CUBIC_TOLERANCE = 1e-12;

/** The tree treats cells as cubes of one side, so the root-level cell must be (nearly) a cube. */
function assertCubicCells(mesh: AmrMesh): void {
  const { domainLo, domainHi, rootBlocks, nxb, nyb, nzb } = mesh.options;
  const n = [nxb, nyb, nzb];
  const h = [0, 1, 2].map((d) => (domainHi[d] - domainLo[d]) / rootBlocks[d] / n[d]);
  if (Math.abs(h[1] - h[0]) > CUBIC_TOLERANCE * h[0] || Math.abs(h[2] - h[0]) > CUBIC_TOLERANCE * h[0]) {
    throw new MeshError(
      'NON_CUBIC_CELLS',
      `the tree solver needs cubic cells, but cells are ${h.join(' x ')} cm: choose domain extents, rootBlocks ` +
        `and nxb/nyb/nzb so that (domainHi - domainLo) / rootBlocks / n?b is the same on every axis`,
    );
  }
}

/**
 * Leaf cells of the mesh with mass = density x volume.
 * @throws MeshError 'NON_CUBIC_CELLS' if cells are not cubes, 'UNKNOWN_VARIABLE' if `densityVar` is missing.
 */
export function extractCells(mesh: AmrMesh, densityVar = 'dens'): CellArrays {
  assertCubicCells(mesh);
  const dens = mesh.variable(densityVar);
  const cpb = mesh.cellsPerBlock;
  const leaves = mesh.leafBlocks();
  const count = leaves.length * cpb;
  const out: CellArrays = {
    x: new Float64Array(count),
    y: new Float64Array(count),
    z: new Float64Array(count),
    mass: new Float64Array(count),
    size: new Float64Array(count),
    block: new Int32Array(count),
    cell: new Int32Array(count),
    count,
  };
  let p = 0;
  for (const b of leaves) {
    writeBlockCells(mesh, b, dens, b * cpb, out, p);
    for (let c = 0; c < cpb; c++, p++) {
      out.block[p] = b;
      out.cell[p] = c;
    }
  }
  return out;
}

/**
 * The cells of block b written at position `at` of `out` (centres, sides, masses = density x volume, i fastest),
 * with the block's densities read from `density` starting at `densityAt`: the one place that turns a block into
 * cells, for whole meshes (extractCells) and for a rank's slice of a file (solveFlashFile under MPI).
 */
export function writeBlockCells(
  mesh: AmrMesh,
  b: number,
  density: ArrayLike<number>,
  densityAt: number,
  out: Pick<CellArrays, 'x' | 'y' | 'z' | 'mass' | 'size'>,
  at: number,
): void {
  const { nxb, nyb, nzb } = mesh.options;
  const { lo } = mesh.block(b);
  const [dx, dy, dz] = mesh.blockCellSize(b);
  const volume = dx * dy * dz;
  for (let k = 0, c = 0, p = at; k < nzb; k++)
    for (let j = 0; j < nyb; j++)
      for (let i = 0; i < nxb; i++, c++, p++) {
        out.x[p] = lo[0] + (i + 0.5) * dx;
        out.y[p] = lo[1] + (j + 0.5) * dy;
        out.z[p] = lo[2] + (k + 0.5) * dz;
        out.mass[p] = density[densityAt + c] * volume;
        out.size[p] = dx;
      }
}

/**
 * The leaf blocks of a mesh as the block entry takes them (GravitySolver.solveBlocks, native/core/blocks.h): in
 * {@link AmrMesh.leafBlocks} order, each leaf's lower corner and cell widths, and its block number, which is its
 * storage slot in the mesh's variables (index ((b * nzb + k) * nyb + j) * nxb + i). The block entry makes the same
 * cells as {@link extractCells}, in the same order.
 */
export interface MeshBlocks {
  leaves: number[];
  /** 3 per leaf: lower corner, cm. */
  lo: Float64Array;
  /** 3 per leaf: cell widths, cm (as blockCellSize). */
  dx: Float64Array;
  /** Each leaf's block number. */
  blockIndex: Int32Array;
}

/**
 * The leaf blocks of the mesh for the block entry.
 * @throws MeshError 'NON_CUBIC_CELLS' if cells are not cubes.
 */
export function meshBlocks(mesh: AmrMesh): MeshBlocks {
  assertCubicCells(mesh);
  const leaves = mesh.leafBlocks();
  const lo = new Float64Array(3 * leaves.length);
  const dx = new Float64Array(3 * leaves.length);
  const blockIndex = new Int32Array(leaves.length);
  leaves.forEach((b, k) => {
    const l = mesh.block(b).lo;
    const h = mesh.blockCellSize(b);
    for (let d = 0; d < 3; d++) {
      lo[3 * k + d] = l[d];
      dx[3 * k + d] = h[d];
    }
    blockIndex[k] = b;
  });
  return { leaves, lo, dx, blockIndex };
}

/**
 * The values of a per-cell variable array (mesh layout) at the leaf cells, in the order {@link extractCells}
 * gives them (leaves in order, i fastest), into `out` (new if not given).
 */
export function leafValues(mesh: AmrMesh, values: Float64Array, leaves: readonly number[], out?: Float64Array): Float64Array {
  const cpb = mesh.cellsPerBlock;
  const r = out ?? new Float64Array(leaves.length * cpb);
  leaves.forEach((b, k) => r.set(values.subarray(b * cpb, (b + 1) * cpb), k * cpb));
  return r;
}

/**
 * Writes one value per extracted cell into variable `varName` (created if missing).
 * @throws MeshError 'LENGTH_MISMATCH' if values and cells differ in length, 'STALE_CELLS' if the mesh was refined
 *   since the cells were extracted.
 */
export function writeBack(mesh: AmrMesh, varName: string, cells: CellArrays, values: Float64Array): void {
  if (values.length !== cells.count) {
    throw new MeshError('LENGTH_MISMATCH', `writeBack '${varName}': ${values.length} values for ${cells.count} cells`);
  }
  const cpb = mesh.cellsPerBlock;
  for (let p = 0; p < cells.count; p += cpb) {
    const b = cells.block[p];
    if (b >= mesh.blockCount || mesh.block(b).children.length > 0) {
      throw new MeshError('STALE_CELLS', `writeBack '${varName}': block ${b} is no longer a leaf; extract the cells again`);
    }
  }
  mesh.addVariable(varName);
  const v = mesh.variable(varName);
  for (let p = 0; p < cells.count; p++) v[cells.block[p] * cpb + cells.cell[p]] = values[p];
}

/**
 * Sets variable `name` (created if missing) on every leaf cell to the mean of f(x, y, z) over subsample^3 evenly
 * spaced points of the cell (default 1: the centre value). Subsampling gives volume fractions of cells cut by a
 * surface. Non-leaf blocks are left as they are.
 */
export function fillVariable(
  mesh: AmrMesh,
  name: string,
  f: (x: number, y: number, z: number) => number,
  opts: { subsample?: number } = {},
): void {
  const s = opts.subsample ?? 1;
  if (!Number.isInteger(s) || s < 1) {
    throw new MeshError('INVALID_OPTION', `fillVariable option 'subsample': expected an integer >= 1, got ${s}`);
  }
  mesh.addVariable(name);
  const v = mesh.variable(name);
  const { nxb, nyb, nzb } = mesh.options;
  const cpb = mesh.cellsPerBlock;
  const weight = 1 / (s * s * s);
  for (const b of mesh.leafBlocks()) {
    const { lo } = mesh.block(b);
    const [dx, dy, dz] = mesh.blockCellSize(b);
    let p = b * cpb;
    for (let k = 0; k < nzb; k++)
      for (let j = 0; j < nyb; j++)
        for (let i = 0; i < nxb; i++, p++) {
          let sum = 0;
          for (let c = 0; c < s; c++) {
            const z = lo[2] + (k + (c + 0.5) / s) * dz;
            for (let bb = 0; bb < s; bb++) {
              const y = lo[1] + (j + (bb + 0.5) / s) * dy;
              for (let a = 0; a < s; a++) sum += f(lo[0] + (i + (a + 0.5) / s) * dx, y, z);
            }
          }
          v[p] = sum * weight;
        }
  }
}
