/** The mesh module: block-structured AMR (PARAMESH/FLASH style) and its bridge to cell arrays. */
export { AmrMesh } from './amrMesh.js';
export { uniformMesh, refineMesh, balanceMesh } from './builders.js';
export { extractCells, writeBack, fillVariable, type CellArrays } from './cells.js';
export { MeshError, type MeshErrorCode } from './errors.js';
export { compareMorton } from './morton.js';
export { defaultMeshOptions, resolveMeshOptions } from './options.js';
export type { Block, MeshOptions, ResolvedMeshOptions, Vec3 } from './types.js';
