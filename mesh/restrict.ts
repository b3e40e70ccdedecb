/**
 * \file restrict.ts
 * \brief Restriction: parent blocks take the mean of the 8 child cells under each of their cells, finest level
 * first, so every block of a written file holds meaningful values (as FLASH's own restriction leaves them).
 */
import type { AmrMesh } from './amrMesh.js';

/** Fills variable `name` on every non-leaf block from its children (volume mean: children are equal cubes). */
export function restrictToParents(mesh: AmrMesh, name: string): void {
  const v = mesh.variable(name);
  const { nxb, nyb, nzb } = mesh.options;
  const cpb = mesh.cellsPerBlock;
  const parents = mesh.blocks.map((_, b) => b).filter((b) => !mesh.isLeaf(b));
  parents.sort((a, b) => mesh.block(b).level - mesh.block(a).level);
  for (const p of parents) {
    const base = p * cpb;
    for (let c = 0; c < cpb; c++) v[base + c] = 0;
    mesh.block(p).children.forEach((child, octant) => {
      const ox = (octant & 1) * nxb;
      const oy = ((octant >> 1) & 1) * nyb;
      const oz = (octant >> 2) * nzb;
      let s = child * cpb;
      for (let k = 0; k < nzb; k++)
        for (let j = 0; j < nyb; j++) {
          const row = base + (((oz + k) >> 1) * nyb + ((oy + j) >> 1)) * nxb;
          for (let i = 0; i < nxb; i++) v[row + ((ox + i) >> 1)] += 0.125 * v[s++];
        }
    });
  }
}
