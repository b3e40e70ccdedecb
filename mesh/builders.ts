/**
 * Building meshes: uniform meshes, predicate-driven refinement, and 2:1 balance between touching leaf blocks.
 */
import { AmrMesh } from './amrMesh.js';
import { MeshError } from './errors.js';
import type { MeshOptions, Vec3 } from './types.js';

/**
 * A mesh whose leaves all sit at `level` (default 1): every root block refined level - 1 times.
 * @throws MeshError('INVALID_OPTION') for a level outside [1, lrefineMax] or a bad mesh option.
 */
export function uniformMesh(opts: MeshOptions & { level?: number } = {}): AmrMesh {
  const { level = 1, ...meshOptions } = opts;
  const mesh = new AmrMesh(meshOptions);
  if (!Number.isInteger(level) || level < 1 || level > mesh.options.lrefineMax) {
    throw new MeshError(
      'INVALID_OPTION',
      `mesh option 'level': expected an integer in [1, lrefineMax = ${mesh.options.lrefineMax}], got ${level}`,
    );
  }
  for (let l = 1; l < level; l++) for (const b of mesh.leafBlocks()) mesh.refineBlock(b);
  return mesh;
}

/**
 * Refines leaf blocks (and their children, recursively) while `predicate(mesh, block)` is true and the block is
 * below lrefineMax, then restores 2:1 balance with {@link balanceMesh}. The predicate sees the children's
 * variables as injected from their parent.
 */
export function refineMesh(mesh: AmrMesh, predicate: (mesh: AmrMesh, blockIndex: number) => boolean): AmrMesh {
  const lmax = mesh.options.lrefineMax;
  const todo = mesh.leafBlocks();
  while (todo.length > 0) {
    const b = todo.pop()!;
    if (mesh.block(b).level < lmax && predicate(mesh, b)) todo.push(...mesh.refineBlock(b));
  }
  return balanceMesh(mesh);
}

/** The 26 face, edge and corner neighbour offsets. */
const NEIGHBOUR_OFFSETS: readonly Vec3[] = (() => {
  const out: Vec3[] = [];
  for (let k = -1; k <= 1; k++) for (let j = -1; j <= 1; j++) for (let i = -1; i <= 1; i++) if (i || j || k) out.push([i, j, k]);
  return out;
})();

/**
 * The leaf covering the same-level neighbour position `coord` of a block at `level`, when that leaf is coarser;
 * -1 when the position is outside the domain or covered by a block at `level` (which is a leaf or has finer
 * leaves: those check the pair from their side).
 */
function coarserLeafAt(mesh: AmrMesh, level: number, coord: Vec3): number {
  const n = mesh.blocksPerAxis(level);
  for (let d = 0; d < 3; d++) if (coord[d] < 0 || coord[d] >= n[d]) return -1;
  if (mesh.findBlock(level, coord) >= 0) return -1;
  // Walk up: the first ancestor position that exists is a leaf, since children come in complete sets of 8.
  for (let l = level - 1, s = 1; l >= 1; l--, s++) {
    const b = mesh.findBlock(l, [coord[0] >> s, coord[1] >> s, coord[2] >> s]);
    if (b >= 0) return b;
  }
  return -1;
}

/**
 * Refines leaves until no two leaf blocks that touch, across a face, an edge or only a corner, differ by more than
 * one level (the domain is not periodic). Only coarser blocks are refined, so no leaf exceeds lrefineMax.
 * Cost: O(leaves x 26) hash look-ups, plus the work of each refinement.
 */
export function balanceMesh(mesh: AmrMesh): AmrMesh {
  const todo = mesh.leafBlocks();
  while (todo.length > 0) {
    const b = todo.pop()!;
    const { level, coord, children } = mesh.block(b);
    // A block refined since it was queued is checked through its children; no leaf is coarser than level 1.
    if (children.length > 0 || level <= 2) continue;
    for (const [di, dj, dk] of NEIGHBOUR_OFFSETS) {
      const at: Vec3 = [coord[0] + di, coord[1] + dj, coord[2] + dk];
      // Refining the coarse neighbour may leave a child still two levels coarser: repeat until the gap is <= 1.
      for (let c = coarserLeafAt(mesh, level, at); c >= 0 && mesh.block(c).level < level - 1; c = coarserLeafAt(mesh, level, at)) {
        todo.push(...mesh.refineBlock(c));
      }
    }
  }
  return mesh;
}
