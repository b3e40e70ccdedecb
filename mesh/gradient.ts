/**
 * Finite-difference accelerations from a cell-centred potential on the AMR mesh: -grad(phi) by central differences,
 * as FLASH turns gpot into the hydro source term, for comparison with the accelerations the tree walk computes.
 *
 * The neighbour one cell side away is read as a guard cell would be filled: from a same-level leaf directly; from
 * refined blocks by restriction (the mean of the 8 finer cells covering it); from a coarser leaf by linear
 * prolongation (the coarse value plus the coarse cell's central-difference gradient times the offset). At the
 * domain boundary the difference is one-sided.
 *
 * Which to use: the walk's accelerations are the gradient of the tree's own potential, as accurate as it
 * everywhere (across refinement jumps too) and free with the solve. The finite difference is the discrete
 * gradient of gpot itself: second order in h on uniform patches, lower at coarse-fine faces; a scheme that
 * conserves energy with gpot at cell centres (as FLASH's) uses it.
 */
import type { AmrMesh } from './amrMesh.js';
import { MeshError } from './errors.js';
import type { Vec3 } from './types.js';

/** Block coordinate at `level` of the block containing point p (may be outside the grid). */
function blockCoordAt(mesh: AmrMesh, level: number, p: Readonly<Vec3>): Vec3 {
  const o = mesh.options;
  const n = mesh.blocksPerAxis(level);
  return [0, 1, 2].map((d) => Math.floor(((p[d] - o.domainLo[d]) / (o.domainHi[d] - o.domainLo[d])) * n[d])) as Vec3;
}

/** Index (within block b) of the cell containing p, clamped to the block. */
function cellIndex(mesh: AmrMesh, b: number, p: Readonly<Vec3>): Vec3 {
  const { lo } = mesh.block(b);
  const h = mesh.blockCellSize(b);
  const o = mesh.options;
  const n = [o.nxb, o.nyb, o.nzb];
  return [0, 1, 2].map((d) => Math.min(n[d] - 1, Math.max(0, Math.floor((p[d] - lo[d]) / h[d])))) as Vec3;
}

function at(mesh: AmrMesh, field: Float64Array, b: number, idx: Readonly<Vec3>): number {
  const { nxb, nyb } = mesh.options;
  return field[b * mesh.cellsPerBlock + (idx[2] * nyb + idx[1]) * nxb + idx[0]];
}

/** The leaf of `level` containing p, or a MeshError (the mesh is not 2:1 balanced there). */
function leafOfLevel(mesh: AmrMesh, level: number, p: Readonly<Vec3>): number {
  const b = mesh.findBlock(level, blockCoordAt(mesh, level, p));
  if (b < 0 || !mesh.isLeaf(b))
    throw new MeshError('BAD_MESH', `finite differences: no level-${level} leaf at (${p.join(', ')}); is the mesh 2:1 balanced?`);
  return b;
}

/** The field at point p, a cell centre of level `level` next to a level-`level` leaf (see the file comment). */
function guardValue(mesh: AmrMesh, field: Float64Array, level: number, p: Readonly<Vec3>): number {
  const coord = blockCoordAt(mesh, level, p);
  const b = mesh.findBlock(level, coord);
  if (b >= 0 && mesh.isLeaf(b)) return at(mesh, field, b, cellIndex(mesh, b, p));
  if (b >= 0) {
    // refined: restriction of the 8 finer cells around p (their centres are p +- h/4)
    const h = mesh.blockCellSize(b)[0];
    let sum = 0;
    for (let k = 0; k < 8; k++) {
      const q: Vec3 = [p[0] + (k & 1 ? 0.25 : -0.25) * h, p[1] + (k & 2 ? 0.25 : -0.25) * h, p[2] + (k & 4 ? 0.25 : -0.25) * h];
      const fb = leafOfLevel(mesh, level + 1, q);
      sum += at(mesh, field, fb, cellIndex(mesh, fb, q));
    }
    return sum / 8;
  }
  // coarser: linear prolongation from the coarse cell, its gradient by differences inside the coarse block
  const cb = leafOfLevel(mesh, level - 1, p);
  const idx = cellIndex(mesh, cb, p);
  const H = mesh.blockCellSize(cb);
  const { lo } = mesh.block(cb);
  const o = mesh.options;
  const n = [o.nxb, o.nyb, o.nzb];
  let v = at(mesh, field, cb, idx);
  const base = v;
  for (let d = 0; d < 3; d++) {
    const up = [...idx] as Vec3, down = [...idx] as Vec3;
    up[d] = Math.min(n[d] - 1, idx[d] + 1);
    down[d] = Math.max(0, idx[d] - 1);
    const span = (up[d] - down[d]) * H[d];
    const slope = span > 0 ? (at(mesh, field, cb, up) - at(mesh, field, cb, down)) / span : 0;
    v += slope * (p[d] - (lo[d] + (idx[d] + 0.5) * H[d]));
  }
  return Number.isFinite(v) ? v : base;
}

/**
 * Writes -grad(field) on every leaf cell into variables `out` (created if missing): cm s^-2 for gpot in erg/g.
 * @throws MeshError 'UNKNOWN_VARIABLE' if `field` is missing, 'BAD_MESH' if the mesh is not 2:1 balanced.
 */
export function finiteDifferenceAccelerations(
  mesh: AmrMesh,
  field = 'gpot',
  out: [string, string, string] = ['gfdx', 'gfdy', 'gfdz'],
): void {
  const phi = mesh.variable(field);
  for (const name of out) mesh.addVariable(name);
  const g = out.map((name) => mesh.variable(name));
  const o = mesh.options;
  const { nxb, nyb, nzb } = o;
  const cpb = mesh.cellsPerBlock;
  for (const b of mesh.leafBlocks()) {
    const { level } = mesh.block(b);
    const h = mesh.blockCellSize(b);
    for (let k = 0, c = 0; k < nzb; k++)
      for (let j = 0; j < nyb; j++)
        for (let i = 0; i < nxb; i++, c++) {
          const centre = mesh.cellCentre(b, i, j, k);
          const own = phi[b * cpb + c];
          for (let d = 0; d < 3; d++) {
            const sample = (s: number): number | undefined => {
              const p: Vec3 = [centre[0], centre[1], centre[2]];
              p[d] += s * h[d];
              if (p[d] < o.domainLo[d] || p[d] > o.domainHi[d]) return undefined;
              return guardValue(mesh, phi, level, p);
            };
            const plus = sample(1), minus = sample(-1);
            const diff =
              plus !== undefined && minus !== undefined ? (plus - minus) / (2 * h[d])
              : plus !== undefined ? (plus - own) / h[d]
              : minus !== undefined ? (own - minus) / h[d]
              : 0;
            g[d][b * cpb + c] = -diff;
          }
        }
  }
}
