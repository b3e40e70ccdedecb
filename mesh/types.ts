/**
 * Shared mesh types: the options of a block-structured AMR mesh (PARAMESH/FLASH style) and the block record.
 * Lengths are in cm.
 */

/** A point or vector [x, y, z]; positions and lengths in cm. */
export type Vec3 = [number, number, number];

/** Options of an {@link AmrMesh}. Every field is optional; defaults below. */
export interface MeshOptions {
  /** Lower corner of the domain, cm. Default [0, 0, 0]. */
  domainLo?: Vec3;
  /** Upper corner of the domain, cm; must exceed `domainLo` on every axis. Default [1, 1, 1]. */
  domainHi?: Vec3;
  /** Number of level-1 (root) blocks along each axis; positive integers. Default [1, 1, 1]. */
  rootBlocks?: Vec3;
  /** Cells per block along x; even integer >= 2. Default 8. */
  nxb?: number;
  /** Cells per block along y; even integer >= 2. Default 8. */
  nyb?: number;
  /** Cells per block along z; even integer >= 2. Default 8. */
  nzb?: number;
  /** Finest refinement level (level 1 = root blocks); integer >= 1. Default 4. */
  lrefineMax?: number;
}

/** Options with every default filled in and checked. */
export type ResolvedMeshOptions = { readonly [K in keyof MeshOptions]-?: NonNullable<MeshOptions[K]> };

/** One block of the octree. Children are Morton-ordered: child index = i + 2j + 4k for offsets i, j, k in {0, 1}. */
export interface Block {
  /** Refinement level; 1 for root blocks. */
  readonly level: number;
  /** Lower corner, cm. */
  readonly lo: Readonly<Vec3>;
  /** Upper corner, cm. */
  readonly hi: Readonly<Vec3>;
  /** Index of the parent block, -1 for a root block. */
  readonly parent: number;
  /** Indices of the 8 children in Morton order, or empty for a leaf. */
  readonly children: readonly number[];
  /** Integer block index along each axis at this level (0 .. rootBlocks * 2^(level-1) - 1). */
  readonly coord: Readonly<Vec3>;
}
